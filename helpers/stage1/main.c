/* SPDX-License-Identifier: Apache-2.0 */
/* stage1-host: the stage1 entrypoints that run on the host, one program
 * called by the names the stage1 manifest gives it (sdpod-stage1(7)):
 *
 *   run UUID                   $SDPOD_LOCK_FD: boot the pod (never returns)
 *   stop UUID [--force]        ask the pod to halt, or kill it
 *   enter UUID [--app=NAME] [--as-app] [-- CMD...]
 *                              run CMD (default /bin/sh) in an app; as root
 *                              in "/", or with --as-app as the app's user and
 *                              group in its working directory
 *   gc UUID                    kill what a pod whose nspawn was killed
 *                              left running
 *
 * The working directory is the pod directory. */
#include <fcntl.h>
#include <libgen.h>
#include <signal.h>
#include <sys/syscall.h>

#include "app-unit.h"
#include "macro.h"
#include "pod-manifest.h"
#include "pod-process.h"
#include "pod-run.h"
#include "strv.h"

static int fail(Error *e) {
        fprintf(stderr, "%s: %s\n", program_invocation_short_name, e ? e->msg : strerror(ENOMEM));
        error_free(e);
        return 1;
}

static int run(const char *uuid) {
        Error *err = NULL;
        const char *e = getenv("SDPOD_LOCK_FD");
        int fd = e ? atoi(e) : -1;
        if (fd < 3 || fcntl(fd, F_GETFD) < 0) {
                fprintf(stderr, "run: SDPOD_LOCK_FD must name the open fd of the pod lock\n");
                return 1;
        }
        unsetenv("SDPOD_LOCK_FD");
        pod_run_exec(uuid, fd, &err);
        return fail(err);
}

static int stop(const char *uuid, bool force) {
        Error *err = NULL;
        PodProcess p;
        _cleanup_close_ int pod_fd = open(".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (pod_fd < 0 || pod_process_find(pod_fd, uuid, &p, &err) < 0)
                return fail(err);
        int r = 0;
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

static int enter(const char *uuid, const char *app_name, bool as_app, char **cmd) {
        Error *err = NULL;
        _cleanup_close_ int pod_fd = open(".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        _cleanup_pod_manifest_ PodManifest *m = NULL;
        PodProcess p = { .nspawn_pidfd = -1 };
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
        if (pod_process_find(pod_fd, uuid, &p, &err) < 0)
                return fail(err);
        char unit[256];
        snprintf(unit, sizeof(unit), APP_UNIT_FORMAT, app->name);
        pid_t target;
        if (pod_unit_pid(&p, unit, &target) < 0) {
                pod_process_done(&p);
                fprintf(stderr, "enter: pod %s: app %s is not running\n", uuid, app->name);
                return 3;
        }
        pod_process_done(&p);
        /* The environment the app's unit gives it (the manifest's, with
         * PATH and HOME when it has none), and the caller's TERM. */
        char root[64];
        snprintf(root, sizeof(root), "/proc/%d/root", (int) target);
        _cleanup_close_ int root_fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (root_fd < 0) {
                error_sys(&err, -errno, "app %s: %s", app->name, root);
                return fail(err);
        }
        _cleanup_app_unit_ AppUnit *u = NULL;
        if (app_unit_resolve(m, app - m->apps, root_fd, &u, &err) < 0)
                return fail(err);
        _cleanup_strv_free_ char **env = strv_copy(u->environment);
        const char *term = getenv("TERM");
        char *term_kv = NULL;
        if (!env || (term && !strv_find_prefix(env, "TERM=") &&
                     (asprintf(&term_kv, "TERM=%s", term) < 0 || strv_push(&env, term_kv) < 0)))
                return fail(NULL);
        free(term_kv);
        char *shell[] = { "/bin/sh", NULL };
        int status = 0;
        EnterIdentity id = { u->uid, u->gid, u->app->working_directory };
        if (pod_enter_process(target, cmd && cmd[0] ? cmd : shell, env, as_app ? &id : NULL, &status, &err) < 0)
                return fail(err);
        return status;
}

static int gc(const char *uuid) {
        Error *err = NULL;
        int n = pod_kill_leftovers(uuid, &err);
        if (n < 0)
                return fail(err);
        if (n > 0)
                fprintf(stderr, "gc: pod %s: killed its PID 1, left running after systemd-nspawn died\n", uuid);
        return 0;
}

int main(int argc, char **argv) {
        const char *verb = basename(argv[0]);
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
                bool as_app = false;
                int i = 2;
                for (; i < argc && !streq(argv[i], "--"); i++)
                        if (startswith(argv[i], "--app="))
                                app = argv[i] + strlen("--app=");
                        else if (streq(argv[i], "--as-app"))
                                as_app = true;
                        else
                                break;
                if (i < argc && streq(argv[i], "--"))
                        i++;
                return enter(argv[1], app, as_app, argv + i);
        }
        fprintf(stderr, "%s: unknown entrypoint or arguments; see sdpod-stage1(7)\n", verb);
        return 2;
}
