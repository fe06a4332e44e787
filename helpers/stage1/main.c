/* SPDX-License-Identifier: Apache-2.0 */
/* stage1-host: the stage1 entrypoints that run on the host, one program
 * called by the names the stage1 manifest gives it (sdpod-stage1(7)):
 *
 *   run UUID                   $SDPOD_LOCK_FD: boot the pod (never returns)
 *   stop UUID [--force]        ask the pod to halt, or kill it
 *   enter UUID [--app=NAME] [--as-app] [--tty] [--interactive] [-- CMD...]
 *                              run CMD (default /bin/sh) in an app; as root
 *                              in "/", or with --as-app as the app's user and
 *                              group in its working directory; --tty: on a
 *                              new pty of the pod's, relayed; --interactive:
 *                              a terminal's input reaches it (pod-exec.h)
 *   gc UUID                    kill what a pod whose nspawn was killed
 *                              left running, release its networks
 *
 * The working directory is the pod directory. */
#include <fcntl.h>
#include <libgen.h>
#include <signal.h>
#include <linux/close_range.h>
#include <sys/syscall.h>

#include "basic/crash-point.h"
#include "basic/fs.h"
#include "basic/macro.h"
#include "basic/strv.h"
#include "bus/bus-util.h"
#include "bus/pod-bus.h"
#include "manifest/pod-manifest.h"
#include "net/pod-network.h"
#include "pod/pod-cgroup.h"
#include "pod/pod-exec.h"
#include "pod/pod-process.h"
#include "pod/pod-run.h"
#include "pod/pod-userns.h"
#include "unit/app-unit.h"
#include "unit/rootfs-lookup.h"

/* What messages begin with: the user's command that runs us, when it says
 * (SDPOD_COMMAND: "podapp exec"), else our entrypoint's name. */
static const char *who = NULL;

static void set_who(const char *verb) {
        const char *c = getenv("SDPOD_COMMAND");
        who = c && *c && strlen(c) <= 40 && strspn(c, "abcdefghijklmnopqrstuvwxyz -") == strlen(c) ? c : verb;
}

static int fail(Error *e) {
        /* A message may carry what the pod's systemd said. */
        if (e && e->msg)
                text_make_printable(e->msg, strlen(e->msg), false);
        fprintf(stderr, "%s: %s\n", who ?: program_invocation_short_name, e ? e->msg : strerror(ENOMEM));
        error_free(e);
        return 1;
}

static int run(const char *uuid) {
        Error *err = NULL;
        (void) pod_run_entrypoint(uuid, pod_run_exec, &err);
        return fail(err);
}

static int stop(const char *uuid, bool force) {
        Error *err = NULL;
        PodProcess p;
        _cleanup_close_ int pod_fd = open(".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (pod_fd < 0 || pod_process_find(pod_fd, uuid, &p, &err) < 0)
                return fail(err);
        int r = 0;
        crash_point(CRASH_STOP_ENTRY);
        if (!force) {
                /* nspawn turns it into the pod's halt.target: the apps stop,
                 * their statuses are recorded, the pod exits. */
                if (syscall(SYS_pidfd_send_signal, p.nspawn_pidfd, SIGTERM, NULL, 0) < 0)
                        r = error_sys(&err, -errno, "pod %s: cannot signal systemd-nspawn (%d)", uuid, (int) p.nspawn);
        } else {
                /* Killing the pod's PID 1 ends its whole pid namespace at
                 * once; nspawn then exits and releases the lock. */
                pid_t leader = p.leader;
                int fd = leader > 0 ? (int) syscall(SYS_pidfd_open, leader, 0) : -1;
                if (fd >= 0 && syscall(SYS_pidfd_send_signal, fd, SIGKILL, NULL, 0) < 0)
                        r = error_sys(&err, -errno, "pod %s: cannot kill its PID 1 (%d)", uuid, (int) leader);
                if (fd >= 0)
                        close(fd);
                else if (syscall(SYS_pidfd_send_signal, p.nspawn_pidfd, SIGKILL, NULL, 0) < 0)
                        r = error_sys(&err, -errno, "pod %s: cannot kill systemd-nspawn (%d)", uuid, (int) p.nspawn);
        }
        pod_process_done(&p);
        return r < 0 ? fail(err) : 0;
}

/* The pod's systemd, and the app's main process (its host PID), which
 * must run. */
static int open_running_app(int pod_fd, const char *uuid, const PodApp *app, sd_bus **ret_bus, pid_t *ret_pid,
                            pid_t *ret_leader, Error **err) {
        PodProcess p = { .nspawn_pidfd = -1 };
        char unit[256];
        snprintf(unit, sizeof(unit), APP_UNIT_FORMAT, app->name);
        int r = pod_process_find(pod_fd, uuid, &p, err);
        if (r >= 0 && pod_unit_pid(&p, unit, ret_pid) < 0)
                r = error_set(err, -ESRCH, "pod %s: app %s is not running", uuid, app->name);
        if (r >= 0 && (r = pod_bus_open(p.leader, ret_bus, err)) < 0)
                error_prefix(err, "pod %s", uuid);
        *ret_leader = p.leader;
        pod_process_done(&p);
        return r;
}

static int enter(const char *uuid, const char *app_name, bool as_app, bool tty, bool interactive, char **cmd) {
        Error *err = NULL;
        _cleanup_close_ int pod_fd = open(".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        _cleanup_pod_manifest_ PodManifest *m = NULL;
        if (pod_fd < 0 || pod_manifest_read_at(pod_fd, "pod", "pod manifest", &m, &err) < 0)
                return fail(err);
        const PodApp *app = app_name ? pod_manifest_find_app(m, app_name) : m->n_apps == 1 ? &m->apps[0] : NULL;
        if (!app) {
                if (app_name) {
                        fprintf(stderr, "enter: pod %s has no app %s\n", uuid, app_name);
                        return 3;
                }
                fprintf(stderr, "enter: pod %s has several apps: choose one with --app=NAME\n", uuid);
                return 2;
        }
        _cleanup_bus_ sd_bus *bus = NULL;
        pid_t main_pid = 0, leader = 0;
        PodUserns userns;
        if (pod_userns_from_manifest(m, &userns, &err) < 0)
                return fail(err);
        int r = open_running_app(pod_fd, uuid, app, &bus, &main_pid, &leader, &err);
        if (r == -ESRCH) {
                fprintf(stderr, "enter: %s\n", err->msg);
                error_free(err);
                return 3;
        }
        if (r < 0)
                return fail(err);

        /* The program as execvp(3) in the app would find it, looked up in
         * the app's root (a lookup of names, nothing of the pod's read),
         * with the app's PATH, from its working directory or "/". */
        char *shell[] = { "/bin/sh", NULL };
        char **argv = cmd && cmd[0] ? cmd : shell;
        const char *search = ROOTFS_DEFAULT_PATH;
        for (size_t i = 0; i < app->n_environment; i++)
                if (streq(app->environment[i].name, "PATH"))
                        search = app->environment[i].value;
        char root[64];
        snprintf(root, sizeof(root), "/proc/%d/root", (int) main_pid);
        _cleanup_close_ int root_fd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
        _cleanup_free_ char *program = NULL;
        if (root_fd < 0)
                return fail((error_sys(&err, -errno, "app %s: its root", app->name), err));
        r = rootfs_find_executable(root_fd, argv[0], search, as_app ? app->working_directory : "/", &program, &err);
        if (r == -ENOENT || r == -EACCES) {
                fprintf(stderr, "enter: app %s: %s\n", app->name, err->msg);
                error_free(err);
                return r == -ENOENT ? 127 : 126;
        }
        if (r < 0)
                return fail(err);

        /* The caller's terminal type, beside the app's environment. */
        const char *term = getenv("TERM");
        _cleanup_free_ char *term_kv = NULL;
        if (term && asprintf(&term_kv, "TERM=%s", term) < 0)
                return fail(NULL);
        char *env[] = { term_kv, NULL };
        PodExec x = {
                .app = app->name,
                .mode = as_app ? APP_EXEC_AS_APP : APP_EXEC_AS_ROOT,
                .path = program,
                .argv = argv,
                .environment = env,
                .tty = tty,
                .interactive = interactive,
                .leader = leader,
                .root_uid = pod_userns_root(&userns),
        };
        int status = 0;
        if (pod_exec(bus, &x, &status, &err) < 0) {
                if (err && err->code == -EPROTO) {
                        fprintf(stderr, "enter: %s\n", err->msg);
                        error_free(err);
                        return 126;
                }
                return fail(err);
        }
        return status;
}

static int gc(const char *uuid) {
        Error *err = NULL;
        /* By the pod's cgroups first: a handle the pod cannot forge (its
         * PID 1's environment is the pod's to rewrite). While anything of
         * the pod runs on, nothing of it is released: the host side keeps
         * the pod in garbage (pod.c) and says why. */
        int n = pod_cgroup_kill(uuid, &err);
        /* Under a host systemd the pod's cgroup is its machine's unit (the
         * scope nspawn had machined make, or its service), known to
         * machined by the UUID nspawn was given. */
        if (n == 0)
                n = pod_machine_kill(uuid, &err);
        /* Last, what nspawn left without registering (no machined): its
         * PID 1, by the container_uuid= nspawn gave it. */
        if (n == 0)
                n = pod_kill_leftovers(uuid, &err);
        if (n < 0)
                return fail(err);
        if (n > 0)
                fprintf(stderr, "gc: pod %s: killed its PID 1 and every process of its cgroups, left running after "
                        "systemd-nspawn died\n", uuid);
        crash_point(CRASH_GC_ENTRY_KILLED);
        /* The networks of a pod whose run entrypoint died before it could
         * release them (the record says which; none: nothing to do). */
        _cleanup_close_ int pod_fd = open(".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (pod_fd < 0)
                return fail((error_sys(&err, -errno, "pod %s", uuid), err));
        if (pod_network_down_kept(pod_fd, uuid, &err) < 0)
                return fail(err);
        crash_point(CRASH_GC_ENTRY_NET);
        /* The cgroup the run entrypoint made on a host without systemd,
         * and those of pods deleted without this entrypoint. */
        if (pod_cgroup_remove(uuid, &err) < 0)
                return fail(err);
        (void) pod_cgroup_remove_stale();
        return 0;
}

int main(int argc, char **argv) {
        const char *verb = basename(argv[0]);
        set_who(verb);
        /* Nothing this program was handed crosses an exec but what it
         * passes on itself: the fd of this very program (a script's
         * interpreter reads it as /dev/fd/N) and anything else stage0 left
         * open. run passes the pod's lock to nspawn explicitly. */
        if (close_range(3, ~0U, CLOSE_RANGE_CLOEXEC) < 0)
                return 1;
        if (argc < 2) {
                fprintf(stderr, "%s: the pod's UUID is missing; see sdpod-stage1(7)\n", verb);
                return 2;
        }
        if (streq(verb, "run") && argc == 2)
                return run(argv[1]);
        if (streq(verb, "stop") && (argc == 2 || (argc == 3 && streq(argv[2], "--force"))))
                return stop(argv[1], argc == 3);
        if (streq(verb, "gc") && argc == 2)
                return gc(argv[1]);
        if (streq(verb, "enter")) {
                const char *app = NULL;
                bool as_app = false, tty = false, interactive = false;
                int i = 2;
                for (; i < argc && !streq(argv[i], "--"); i++)
                        if (startswith(argv[i], "--app="))
                                app = argv[i] + strlen("--app=");
                        else if (streq(argv[i], "--as-app"))
                                as_app = true;
                        else if (streq(argv[i], "--tty"))
                                tty = true;
                        else if (streq(argv[i], "--interactive"))
                                interactive = true;
                        else
                                break;
                if (i < argc && streq(argv[i], "--"))
                        i++;
                return enter(argv[1], app, as_app, tty, interactive, argv + i);
        }
        fprintf(stderr, "%s: unknown entrypoint or arguments; see sdpod-stage1(7)\n", verb);
        return 2;
}
