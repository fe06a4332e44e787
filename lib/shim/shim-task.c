/* SPDX-License-Identifier: Apache-2.0 */
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "app/pod-app.h"
#include "basic/fs.h"
#include "basic/mount-util.h"
#include "bus/bus-util.h"
#include "bus/pod-bus.h"
#include "pod/pod-info.h"
#include "pod/pod-exec.h"
#include "pod/pod-launch.h"
#include "pod/pod-prepare.h"
#include "pod/pod-process.h"
#include "pod/pod-stats.h"
#include "pod/stage1.h"
#include "shim/shim-task.h"
#include "unit/app-unit.h"

/* For what is fine after all ("already gone"). */
static void forget_error(Error **err) {
        if (err) {
                error_free(*err);
                *err = NULL;
        }
}

void shim_target_done(ShimTarget *t) {
        free(t->app);
        *t = (ShimTarget) {};
}

int shim_target_write(int bundle_fd, const ShimTarget *t, Error **err) {
        _cleanup_free_ char *text = NULL;
        int n = asprintf(&text, "%s\n%s\n", t->uuid, t->app ? t->app : "");
        if (n < 0)
                return error_sys(err, -ENOMEM, "task record");
        return write_file_atomic_at(bundle_fd, SHIM_TASK_RECORD, text, (size_t) n, 0600, err);
}

int shim_target_read(int bundle_fd, ShimTarget *ret, Error **err) {
        /* The bundle is containerd's, not the pod's: nothing in a pod can
         * write it. Still read with a bound and checked. */
        _cleanup_free_ char *text = NULL;
        size_t size;
        int r = read_file_at(bundle_fd, SHIM_TASK_RECORD, 512, &text, &size, err);
        if (r < 0)
                return r;
        char *nl = memchr(text, '\n', size);
        if (!nl || nl - text != UUID_STRING_MAX - 1)
                return error_set(err, -EBADMSG, "%s: not a task record", SHIM_TASK_RECORD);
        *nl = 0;
        char *app = nl + 1;
        app[strcspn(app, "\n")] = 0;
        ShimTarget t = {};
        memcpy(t.uuid, text, UUID_STRING_MAX);
        if (*app && !(t.app = strdup(app)))
                return error_sys(err, -ENOMEM, "task record");
        *ret = t;
        return 0;
}

/* fstab options: those that are mount flags, and the rest for the file
 * system (overlay's lowerdir=, upperdir=, workdir=). */
static const struct {
        const char *name;
        unsigned long set, clear;
} mount_flags[] = {
        { "ro", MS_RDONLY, 0 },         { "rw", 0, MS_RDONLY },
        { "nosuid", MS_NOSUID, 0 },     { "suid", 0, MS_NOSUID },
        { "nodev", MS_NODEV, 0 },       { "dev", 0, MS_NODEV },
        { "noexec", MS_NOEXEC, 0 },     { "exec", 0, MS_NOEXEC },
        { "bind", MS_BIND, 0 },         { "rbind", MS_BIND | MS_REC, 0 },
        { "noatime", MS_NOATIME, 0 },   { "relatime", MS_RELATIME, 0 },
        { "strictatime", MS_STRICTATIME, 0 }, { "nodiratime", MS_NODIRATIME, 0 },
        { "sync", MS_SYNCHRONOUS, 0 },  { "async", 0, MS_SYNCHRONOUS },
};

static int mount_one(const ShimMount *m, const char *target, Error **err) {
        unsigned long flags = 0;
        _cleanup_free_ char *data = NULL;
        size_t data_len = 0;
        for (size_t i = 0; i < m->n_options; i++) {
                const char *o = m->options[i];
                bool known = false;
                for (size_t j = 0; j < ELEMENTSOF(mount_flags); j++)
                        if (streq(o, mount_flags[j].name)) {
                                flags = (flags | mount_flags[j].set) & ~mount_flags[j].clear;
                                known = true;
                        }
                if (known)
                        continue;
                size_t l = strlen(o);
                char *d = realloc(data, data_len + l + 2);
                if (!d)
                        return error_sys(err, -ENOMEM, "rootfs mount");
                data = d;
                if (data_len)
                        data[data_len++] = ',';
                memcpy(data + data_len, o, l + 1);
                data_len += l;
        }
        /* Always nodev, whatever the options say: the rootfs (a snapshot
         * of an image) is the container's, and no device node of it may
         * open, here on the host or in the pod (whose bind of it keeps
         * the flag). */
        flags |= MS_NODEV;
        const char *type = m->type && *m->type ? m->type : "none";
        if (streq(type, "bind"))
                flags |= MS_BIND;
        if (flags & MS_BIND) {
                if (mount(m->source, target, NULL, flags & (MS_BIND | MS_REC), NULL) < 0)
                        return error_sys(err, -errno, "cannot bind %s to %s", m->source, target);
                /* A bind takes its other flags only from a remount. */
                unsigned long rest = flags & ~(MS_BIND | MS_REC);
                if (rest && mount(NULL, target, NULL, MS_REMOUNT | MS_BIND | rest, NULL) < 0)
                        return error_sys(err, -errno, "cannot remount %s with its options", target);
                return 0;
        }
        if (mount(m->source, target, type, flags, data) < 0)
                return error_sys(err, -errno, "cannot mount %s (%s) at %s", m->source ? m->source : "", type, target);
        return 0;
}

int shim_rootfs_mount(const char *bundle, const ShimMount *mounts, size_t n, Error **err) {
        _cleanup_free_ char *rootfs = NULL;
        if (asprintf(&rootfs, "%s/rootfs", bundle) < 0)
                return error_sys(err, -ENOMEM, "rootfs");
        if (n == 0)
                return 0;
        if (mkdir(rootfs, 0711) < 0 && errno != EEXIST)
                return error_sys(err, -errno, "cannot make %s", rootfs);
        for (size_t i = 0; i < n; i++) {
                int r = mount_one(&mounts[i], rootfs, err);
                if (r < 0) {
                        _cleanup_error_ Error *ignored = NULL;
                        (void) shim_rootfs_unmount(bundle, &ignored);
                        return r;
                }
        }
        return 0;
}

int shim_rootfs_unmount(const char *bundle, Error **err) {
        _cleanup_free_ char *rootfs = NULL, *canonical = NULL;
        if (asprintf(&rootfs, "%s/rootfs", bundle) < 0)
                return error_sys(err, -ENOMEM, "rootfs");
        if (!(canonical = realpath(rootfs, NULL)))
                return errno == ENOENT ? 0 : error_sys(err, -errno, "%s", rootfs);
        return umount_below(canonical, NULL, err);
}

int shim_pod_start(PodStore *ps, ImageStore *is, const PodArgs *a, char ret_uuid[static UUID_STRING_MAX], Error **err) {
        _cleanup_pod_ Pod *p = NULL;
        int r = pod_prepare(ps, is, a, POD_DIR_PREPARED, &p, err);
        if (r < 0)
                return r;
        return pod_launch_prepared(ps, &p, ret_uuid, NULL, err);
}

static int find_running(PodStore *ps, const char *uuid, Pod **ret_pod, PodProcess *ret_proc, Error **err) {
        _cleanup_pod_ Pod *p = NULL;
        int r = pod_lookup(ps, uuid, &p, err);
        if (r < 0)
                return r;
        if (p->state != POD_STATE_RUNNING)
                return error_set(err, -ESRCH, "pod %s is not running", uuid);
        if ((r = pod_process_find(p->fd, uuid, ret_proc, err)) < 0)
                return r;
        if (ret_pod)
                *ret_pod = TAKE_PTR(p);
        return 0;
}

int shim_pod_leader(PodStore *ps, const char *uuid, pid_t *ret, Error **err) {
        _cleanup_(pod_process_done) PodProcess proc = { .nspawn_pidfd = -1 };
        int r = find_running(ps, uuid, NULL, &proc, err);
        if (r < 0)
                return r;
        *ret = proc.leader;
        return 0;
}

int shim_pod_exit(PodStore *ps, const char *uuid, ShimExit *ret, Error **err) {
        _cleanup_pod_ Pod *p = NULL;
        int r = pod_lookup(ps, uuid, &p, err);
        if (r < 0)
                return r;
        if (p->state == POD_STATE_EMBRYO || p->state == POD_STATE_PREPARING || p->state == POD_STATE_PREPARED ||
            p->state == POD_STATE_RUNNING) {
                *ret = (ShimExit) {};
                return 0;
        }
        _cleanup_(pod_info_done) PodInfo info = {};
        if (pod_info_read(p, true, &info) < 0)
                return error_sys(err, -ENOMEM, "pod %s", uuid);
        ShimExit e = { .exited = true, .exited_usec = info.exited_usec };
        for (size_t i = 0; i < info.n_apps; i++)
                if (info.apps[i].exited && info.apps[i].exit_status != 0) {
                        e.status = info.apps[i].exit_status;
                        break;
                }
        *ret = e;
        return 0;
}

int shim_pod_stop(PodStore *ps, const char *uuid, int sig, Error **err) {
        _cleanup_pod_ Pod *p = NULL;
        int r = pod_lookup(ps, uuid, &p, err);
        if (r < 0)
                return r;
        if (p->state != POD_STATE_RUNNING)
                return 0;
        r = pod_stop(ps, p, sig == SIGKILL, 0, err);
        return r < 0 ? r : 0;
}

/* Removals are done when there is nothing to remove: -ENOENT is 0. */
static int gone_is_fine(int r, Error **err) {
        if (r != -ENOENT)
                return r;
        forget_error(err);
        return 0;
}

int shim_pod_remove(PodStore *ps, const char *uuid, Error **err) {
        _cleanup_pod_ Pod *p = NULL;
        int r = gone_is_fine(pod_lookup(ps, uuid, &p, err), err);
        if (r < 0 || !p)
                return r;
        if (p->state == POD_STATE_RUNNING) {
                if ((r = pod_stop(ps, p, true, 0, err)) < 0)
                        return r;
                if ((r = pod_refresh(ps, p, err)) < 0)
                        return r;
        }
        return pod_remove(ps, p, err);
}

int shim_app_add(PodStore *ps, ImageStore *is, const char *uuid, const AppArgs *a, Error **err) {
        _cleanup_pod_ Pod *p = NULL;
        int r = pod_lookup(ps, uuid, &p, err);
        return r < 0 ? r : pod_app_add(ps, p, is, a, err);
}

int shim_app_start(PodStore *ps, const char *uuid, const char *app, pid_t *ret_pid, Error **err) {
        _cleanup_pod_ Pod *p = NULL;
        _cleanup_(pod_process_done) PodProcess proc = { .nspawn_pidfd = -1 };
        int r = pod_lookup(ps, uuid, &p, err);
        if (r < 0 || (r = pod_app_start(ps, p, app, err)) < 0)
                return r;
        *ret_pid = 0;
        char unit[128];
        snprintf(unit, sizeof(unit), APP_UNIT_FORMAT, app);
        /* An app that has exited already (a quick job) has no process. */
        if (pod_process_find(p->fd, uuid, &proc, NULL) >= 0)
                (void) pod_unit_pid(&proc, unit, ret_pid);
        return 0;
}

int shim_app_kill(PodStore *ps, const char *uuid, const char *app, int sig, bool all, Error **err) {
        _cleanup_(pod_process_done) PodProcess proc = { .nspawn_pidfd = -1 };
        _cleanup_bus_ sd_bus *bus = NULL;
        int r = find_running(ps, uuid, NULL, &proc, err);
        if (r < 0)
                return r;
        if ((r = pod_bus_open(proc.leader, &bus, err)) < 0)
                return error_prefix(err, "pod %s", uuid);
        char unit[128];
        snprintf(unit, sizeof(unit), APP_UNIT_FORMAT, app);
        return bus_unit_kill(bus, unit, all ? "all" : "main", sig, err);
}

int shim_app_exit(PodStore *ps, const char *uuid, const char *app, ShimExit *ret, Error **err) {
        _cleanup_pod_ Pod *p = NULL;
        PodAppExit e = {};
        /* Polled on the shim's one event loop: never through the pod's
         * systemd, which may be stopped (pod_app_exit_seen). */
        int r = pod_lookup(ps, uuid, &p, err);
        if (r < 0 || (r = pod_app_exit_seen(ps, p, app, &e, err)) < 0)
                return r;
        *ret = (ShimExit) { .exited = e.exited, .status = e.exit_status, .exited_usec = e.exited_usec };
        return 0;
}

int shim_app_remove(PodStore *ps, const char *uuid, const char *app, Error **err) {
        _cleanup_pod_ Pod *p = NULL;
        int r = gone_is_fine(pod_lookup(ps, uuid, &p, err), err);
        if (r < 0 || !p || p->state != POD_STATE_RUNNING)
                return r;       /* not running: what it had goes with the pod */
        r = gone_is_fine(pod_app_rm(ps, p, app, 0, err), err);
        return r < 0 ? r : 0;
}

int shim_pids(PodStore *ps, const char *uuid, const char *app, pid_t *ret, size_t max, size_t *ret_n, Error **err) {
        _cleanup_(pod_process_done) PodProcess proc = { .nspawn_pidfd = -1 };
        int r = find_running(ps, uuid, NULL, &proc, err);
        if (r < 0)
                return r;
        char unit[128];
        if (app)
                snprintf(unit, sizeof(unit), APP_UNIT_FORMAT, app);
        r = pod_unit_pids(&proc, app ? unit : NULL, ret, max, ret_n);
        return r < 0 ? error_sys(err, r, "pod %s: its processes", uuid) : 0;
}

/* A FIFO's open waits for its other end, which containerd may have closed
 * already (its client gone, or stdin closed by CloseIO a moment before):
 * the exec's relay would wait for ever. So never waiting: stdin opens at
 * once (no writer left: end of file, which is what the client said); an
 * output whose reader is not there within EXEC_FIFO_WAIT_MS goes to
 * /dev/null (nobody reads it). */
#define EXEC_FIFO_WAIT_MS 2000

static int open_stdio(const char *path, int flags, int target) {
        int fd = -1;
        for (unsigned waited = 0; path && fd < 0; waited += 10) {
                fd = open(path, flags | O_NOCTTY | O_NONBLOCK);
                if (fd >= 0 || errno != ENXIO || waited >= EXEC_FIFO_WAIT_MS)
                        break;
                (void) poll(NULL, 0, 10);
        }
        if (fd < 0 && (!path || errno == ENXIO))
                fd = open("/dev/null", flags | O_NOCTTY);
        if (fd < 0)
                return -errno;
        int fl = fcntl(fd, F_GETFL);
        if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) < 0)
                return -errno;
        if (fd != target) {
                if (dup2(fd, target) < 0)
                        return -errno;
                close(fd);
        }
        return 0;
}

int shim_exec_spawn(PodStore *ps, const char *uuid, const char *app, char *const *argv,
                    const char *const stdio[3], const char *instance, const ShimExecTty *tty, pid_t *ret_pid,
                    Error **err) {
        _cleanup_pod_ Pod *p = NULL;
        int r = pod_lookup(ps, uuid, &p, err);
        if (r < 0)
                return r;
        pid_t pid = fork();
        if (pid < 0)
                return error_sys(err, -errno, "cannot fork for the exec");
        if (pid == 0) {
                /* The shim blocks the signals its event loop handles: the
                 * command gets a clean mask. stdin's FIFO first: containerd
                 * opens the writing end of it, and the outputs' reading ends. */
                sigset_t none;
                sigemptyset(&none);
                sigprocmask(SIG_SETMASK, &none, NULL);
                /* The carrier's slave first, as fd 3 (the stdio take 0-2,
                 * the lowest free): dup2() clears its O_CLOEXEC for the
                 * exec of the relay, which sets it again. A tty has no
                 * separate error stream: the relay's own messages go
                 * where the output goes, unless containerd gave one. */
                unsigned flags = ENTER_AS_APP;
                const char *err_path = stdio[2];
                if (tty) {
                        if ((tty->size_fd == 3 ? fcntl(3, F_SETFD, 0) : dup2(tty->size_fd, 3)) < 0 ||
                            setenv(POD_EXEC_SIZE_FD_ENV, "3", 1) < 0 ||
                            (tty->term ? setenv("TERM", tty->term, 1) : unsetenv("TERM")) < 0)
                                _exit(126);
                        flags |= ENTER_TTY | (stdio[0] ? ENTER_INTERACTIVE : 0);
                        if (!err_path)
                                err_path = stdio[1];
                } else
                        (void) unsetenv(POD_EXEC_SIZE_FD_ENV);
                if (open_stdio(stdio[0], O_RDONLY, STDIN_FILENO) < 0 || open_stdio(stdio[1], O_WRONLY, STDOUT_FILENO) < 0 ||
                    open_stdio(err_path, O_WRONLY, STDERR_FILENO) < 0)
                        _exit(126);
                Error *e = NULL;
                if (setenv(POD_EXEC_INSTANCE_ENV, instance, 1) < 0)
                        _exit(126);
                pod_enter(p, app, flags, argv, &e);
                fprintf(stderr, "containerd-shim-sdpod-v1 exec: %s\n", e ? e->msg : "cannot run the command");
                _exit(126);
        }
        *ret_pid = pid;
        return 0;
}

/* The unit has ended: gone, inactive, failed, or active with its main
 * process exited (it remains after its exit). */
static bool exec_unit_ended(sd_bus *bus, const char *unit) {
        UnitState st;
        _cleanup_error_ Error *ignored = NULL;
        if (bus_unit_state(bus, unit, &st, &ignored) < 0)
                return true;
        return !streq(st.load_state, "loaded") || streq(st.active_state, "inactive") ||
                streq(st.active_state, "failed") ||
                (streq(st.active_state, "active") && streq(st.sub_state, "exited"));
}

#define EXEC_END_TIMEOUT_USEC (5 * USEC_PER_SEC)

int shim_exec_kill(PodStore *ps, const char *uuid, const char *app, const char *instance, int sig, bool end,
                   Error **err) {
        _cleanup_(pod_process_done) PodProcess proc = { .nspawn_pidfd = -1 };
        _cleanup_bus_ sd_bus *bus = NULL;
        if (!pod_exec_instance_is_valid(instance))
                return error_set(err, -EINVAL, "pod %s: app %s: \"%s\" is no exec's unit", uuid, app, instance);
        int r = find_running(ps, uuid, NULL, &proc, err);
        if (r < 0)
                return r;
        if ((r = pod_bus_open(proc.leader, &bus, err)) < 0)
                return error_prefix(err, "pod %s", uuid);
        char unit[256];
        snprintf(unit, sizeof(unit), APP_EXEC_UNIT_FORMAT, app, instance);
        UnitState st;
        if ((r = bus_unit_state(bus, unit, &st, err)) < 0)
                return error_prefix(err, "pod %s", uuid);
        if (!streq(st.load_state, "loaded"))
                return error_set(err, -ESRCH, "pod %s: the exec's unit %s is not there", uuid, unit);
        if (!exec_unit_ended(bus, unit) && (r = bus_unit_kill(bus, unit, "all", sig, err)) < 0)
                return error_prefix(err, "pod %s", uuid);
        if (!end)
                return 0;
        uint64_t deadline = monotonic_usec() + EXEC_END_TIMEOUT_USEC;
        while (!exec_unit_ended(bus, unit)) {
                if (monotonic_usec() >= deadline)
                        return error_set(err, -ETIMEDOUT, "pod %s: %s still runs %llu s after SIGKILL", uuid, unit,
                                         (unsigned long long) (EXEC_END_TIMEOUT_USEC / USEC_PER_SEC));
                (void) poll(NULL, 0, 50);
        }
        /* As the exec's relay does once it has read how it ended: a failed
         * unit is reset, one that remains after its exit is stopped; then
         * systemd forgets it, and closes what it held. */
        if ((r = bus_unit_state(bus, unit, &st, err)) < 0)
                return error_prefix(err, "pod %s", uuid);
        if (streq(st.active_state, "failed"))
                r = bus_unit_reset_failed(bus, unit, err);
        else if (streq(st.active_state, "active")) {
                BusJob job;
                if ((r = bus_job_start(bus, "StopUnit", unit, "replace", &job, err)) >= 0) {
                        r = bus_job_wait(&job, EXEC_END_TIMEOUT_USEC, err);
                        bus_job_done(&job);
                }
        }
        return r < 0 ? error_prefix(err, "pod %s", uuid) : 0;
}

int shim_figures(PodStore *ps, const char *uuid, const char *app, CgroupFigures *ret, Error **err) {
        _cleanup_pod_ Pod *p = NULL;
        int r = pod_lookup(ps, uuid, &p, err);
        if (r < 0)
                return r;
        if (app) {
                _cleanup_(cgroup_set_done) CgroupSet cg = CGROUP_SET_NONE;
                if ((r = pod_app_cgroups_open(p, app, &cg, err)) < 0)
                        return r;
                cgroup_figures_read(&cg, ret);
                return 0;
        }
        _cleanup_(pod_stats_done) PodStats st = {};
        if ((r = pod_stats_open(p, &st, err)) < 0)
                return r;
        pod_stats_sample(&st);
        *ret = st.now;
        return 0;
}
