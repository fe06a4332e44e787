/* SPDX-License-Identifier: Apache-2.0 */
/* pod-helper: the stage1's programs that run inside the pod, started by its
 * units (sdpod-stage1(7)):
 *
 *   reap NAME          ExecStop of reaper@NAME.service: records the exit
 *                      status of app@NAME.service in /sdpod/status/NAME and,
 *                      when the app failed and no stop of it was asked for
 *                      (/sdpod/apps/NAME/stop-requested), makes it the pod's
 *                      exit code; first waits (5 s at most) for the
 *                      app's output relay (app-stdio) to end
 *   halt NAME          app-failed@NAME.service of a mutable pod: the app
 *                      failed, the pod halts (halt.target)
 *   exit               ExecStop of shutdown.service: ends the pod (in a
 *                      VM of the kvm flavor: reports the apps' exit
 *                      statuses and the pod's exit code to the host, then
 *                      powers off)
 *   ready              supervisor-ready.service (in a VM: reported)
 *   restarting NAME    app-restarting@NAME.service, before each start of
 *                      an app with a restart policy: on a restart, records
 *                      it (/sdpod/status/NAME.restarts) and waits out the
 *                      backoff
 *   watchdog NAME      app-watchdog@NAME.service: the file watchdog of
 *                      an app (sdpod/watchdog-file): SIGABRT to the app
 *                      when it has not touched the file in time
 *   health NAME ok|fail
 *                      app-healthy@ and app-unhealthy@NAME.service: records
 *                      the app's health (/sdpod/status/NAME.health) and acts
 *                      on sdpod/health-on-failure
 *   wait-healthy NAME  app-wait-healthy@NAME.service, before each start of
 *                      an app with --wait-healthy=NAME: returns once NAME's
 *                      health check has passed in its current run; fails
 *                      when NAME is unhealthy or has stopped
 *   lifeline           sdpod-lifeline.service: powers the pod off when its
 *                      supervisor on the host is gone (pod-supervise.h);
 *                      in a VM: exits the pod when the host says "stop"
 *                      (kvm/kvm-run.h)
 *   wait-network       sdpod-network.service: returns once the host has
 *                      attached the pod's network (/sdpod/net/ready)
 *   fail CODE MESSAGE  an app or manifest the generator could not turn into
 *                      a runnable unit: says why and exits with CODE */
#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/inotify.h>
#include <sys/syscall.h>
#include <sys/reboot.h>
#include <sys/stat.h>

#include "basic/fs.h"
#include "basic/macro.h"
#include "basic/time-util.h"
#include "bus/bus-util.h"
#include "bus/journal-sync.h"
#include "kvm/kvm-run.h"
#include "net/net-files.h"
#include "net/pod-network.h"
#include "pod/pod-info.h"
#include "pod/pod-supervise.h"
#include "unit/app-unit.h"

/* The pod directory as the pod sees it; tests point it elsewhere. */
static const char *pod_dir(void) {
        const char *e = getenv("SDPOD_POD_DIR");
        return e && *e ? e : "/sdpod";
}

static int fail(Error *e) {
        fprintf(stderr, "pod-helper: %s\n", e ? e->msg : strerror(ENOMEM));
        error_free(e);
        return 1;
}

/* /sdpod/status: the apps' records (pod-info.h). */
static int open_status_dir(Error **err) {
        char path[PATH_MAX];
        snprintf(path, sizeof(path), "%s/status", pod_dir());
        int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        return fd < 0 ? error_sys(err, -errno, "%s", path) : fd;
}

/* In a pod of the kvm flavor (kvm/kvm-run.h) the host hears the guest
 * through two virtio-serial ports, which kvm-init links here. */
#define KVM_REPORT_PORT "/dev/virtio-ports/sdpod.report"
#define KVM_COMMAND_PORT "/dev/virtio-ports/sdpod.command"

static bool in_vm(void) {
        return access(KVM_REPORT_PORT, F_OK) == 0;
}

/* The pod's exit code: its systemd's in a container (what it exits
 * with); in a VM, where systemd refuses SetExitCode(), a file beside the
 * apps' records (the guest's tmpfs, which the reapers write; "." is in no
 * app's name) that pod-helper exit reports to the host. */
#define VM_EXIT_CODE_FILE ".exit-code"

static int pod_exit_code_get(sd_bus *bus, uint8_t *ret, Error **err) {
        if (!in_vm())
                return bus_manager_get_exit_code(bus, ret, err);
        _cleanup_close_ int dir = open_status_dir(err);
        _cleanup_free_ char *data = NULL;
        size_t n = 0;
        if (dir < 0)
                return dir;
        int r = read_file_at(dir, VM_EXIT_CODE_FILE, 16, &data, &n, err);
        if (r == -ENOENT) {
                error_free(*err);
                *err = NULL;
                *ret = 0;
                return 0;
        }
        if (r < 0)
                return r;
        *ret = (uint8_t) atoi(data);
        return 0;
}

static int pod_exit_code_set(sd_bus *bus, uint8_t code, Error **err) {
        if (!in_vm())
                return bus_manager_set_exit_code(bus, code, err);
        _cleanup_close_ int dir = open_status_dir(err);
        if (dir < 0)
                return dir;
        char buf[8];
        int n = snprintf(buf, sizeof(buf), "%u\n", code);
        return write_file_atomic_at(dir, VM_EXIT_CODE_FILE, buf, (size_t) n, 0644, err);
}

/* Whether podapp stop asked app to stop: its failure is then not the pod's. */
static bool stop_requested(const char *app) {
        char path[PATH_MAX];
        snprintf(path, sizeof(path), "%s/" POD_APP_DIR "/%s/" POD_APP_STOP_REQUESTED, pod_dir(), app);
        return access(path, F_OK) == 0;
}

/* A relay of app's output (helpers/app-stdio) that still runs: a process
 * named so in the app's unit's cgroup; 0 when there is none. */
static pid_t find_relay(const char *app) {
        char suffix[300];
        snprintf(suffix, sizeof(suffix), "/" APP_UNIT_FORMAT "\n", app);
        _cleanup_closedir_ DIR *d = opendir("/proc");
        if (!d)
                return 0;
        struct dirent *de;
        while ((de = readdir(d))) {
                if (de->d_name[0] < '1' || de->d_name[0] > '9')
                        continue;
                _cleanup_close_ int pfd = openat(dirfd(d), de->d_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                _cleanup_free_ char *comm = NULL, *cg = NULL;
                if (pfd < 0 || read_file_at(pfd, "comm", 64, &comm, NULL, NULL) < 0 || !streq(comm, "app-stdio\n") ||
                    read_file_at(pfd, "cgroup", 64 * 1024, &cg, NULL, NULL) < 0)
                        continue;
                /* The line of the hierarchy that tracks units ends so. */
                if (strstr(cg, suffix))
                        return (pid_t) atoi(de->d_name);
        }
        return 0;
}

/* The app's last output: when the app exits, its relay still copies what
 * it wrote to the journal, and systemd does not wait for a unit's other
 * processes in a container on the legacy cgroup hierarchy. The pod stops
 * its journal only after the reapers: each waits for its app's relays to
 * end (a pidfd, woken at once), 5 s at most in all (an app may name a
 * process of its own so). */
static void wait_relay(const char *app) {
        uint64_t deadline = now_usec() + 5 * USEC_PER_SEC;
        pid_t pid, last = 0;
        while ((pid = find_relay(app)) > 0) {
                uint64_t now = now_usec();
                if (now >= deadline)
                        return;
                /* Ended, but its zombie not reaped by PID 1 yet. */
                if (pid == last)
                        usleep(2 * 1000);
                last = pid;
                int left_ms = (int) ((deadline - now) / 1000) + 1;
                _cleanup_close_ int fd = (int) syscall(SYS_pidfd_open, pid, 0);
                if (fd >= 0) {
                        struct pollfd p = { .fd = fd, .events = POLLIN };
                        (void) poll(&p, 1, left_ms);
                } else if (errno != ESRCH)
                        usleep(10 * 1000);
        }
}

static int reap(const char *app) {
        Error *err = NULL;
        wait_relay(app);
        char unit[256], buf[POD_APP_RECORD_SIZE + 1];
        snprintf(unit, sizeof(unit), APP_UNIT_FORMAT, app);
        _cleanup_bus_ sd_bus *bus = NULL;
        ServiceExit x;
        if (bus_open_systemd_private(SYSTEMD_PRIVATE_SOCKET, &bus, &err) < 0 || bus_service_exit(bus, unit, &x, &err) < 0)
                return fail(err);
        if (!x.exited) {
                printf("app %s did not run\n", app);
                return 0;
        }
        _cleanup_close_ int dir = open_status_dir(&err);
        pod_app_exit_format(buf, x.exit_status);
        if (dir < 0)
                return fail(err);
        if (pod_app_record_write_at(dir, app, buf, &err) < 0)
                return fail(err);
        if (stop_requested(app)) {
                printf("app %s exited with status %d (%s) after a requested stop: not the pod's exit code\n",
                       app, x.exit_status, x.result);
                return 0;
        }
        printf("app %s exited with status %d (%s)\n", app, x.exit_status, x.result);
        if (!x.failed)
                return 0;
        /* The pod exits with the status of the app that failed first. */
        uint8_t code;
        if (pod_exit_code_get(bus, &code, &err) < 0 ||
            (code == 0 && pod_exit_code_set(bus, x.exit_status ? x.exit_status : 1, &err) < 0))
                return fail(err);
        return 0;
}

/* The lifecycle of app, which borrows from the manifest, *ret_m. */
static int load_lifecycle(const char *app, PodManifest **ret_m, AppLifecycle *ret, Error **err) {
        /* The pod's root may search the pod directory, not list it. */
        _cleanup_close_ int dir = open(pod_dir(), O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (dir < 0)
                return error_sys(err, -errno, "%s", pod_dir());
        int r = pod_manifest_read_at(dir, "pod", "pod manifest", ret_m, err);
        if (r < 0)
                return r;
        const PodApp *a = pod_manifest_find_app(*ret_m, app);
        if (!a)
                return error_set(err, -ENOENT, "pod manifest: no app %s", app);
        return app_lifecycle_of(*ret_m, a, ret, err);
}

/* Before each start of an app with a restart policy, or with
 * --health-on-failure=restart. A start is a restart when systemd restarts
 * the app (its Restart=: NRestarts is above 0) or when its health check
 * asked for it (the app's health record says unhealthy, and the restart
 * job of health() does not count in NRestarts). A manual start is neither:
 * nothing to do. A restart is recorded (the count and the status the app
 * exited with, still the unit's until its program runs again: pod-info.h)
 * and waits 100 ms, doubled with each restart up to 10 s, so that an app
 * that fails at once, or fails its checks at once, does not spin. */
static int restarting(const char *app) {
        Error *err = NULL;
        char unit[256], buf[POD_APP_RECORD_SIZE + 1];
        snprintf(unit, sizeof(unit), APP_UNIT_FORMAT, app);
        _cleanup_bus_ sd_bus *bus = NULL;
        ServiceExit x;
        if (bus_open_systemd_private(SYSTEMD_PRIVATE_SOCKET, &bus, &err) < 0 || bus_service_exit(bus, unit, &x, &err) < 0)
                return fail(err);
        _cleanup_close_ int dir = open_status_dir(&err);
        if (dir < 0)
                return fail(err);
        _cleanup_pod_manifest_ PodManifest *m = NULL;
        _cleanup_(app_lifecycle_done) AppLifecycle l = {};
        if (load_lifecycle(app, &m, &l, &err) < 0)
                return fail(err);
        PodAppHealthRecord h;
        bool by_health = l.health_cmd && l.health_on_failure == APP_HEALTH_RESTART &&
                         pod_app_health_read_at(dir, app, &h) >= 0 && h.state == POD_APP_HEALTH_UNHEALTHY;
        if (x.restarts == 0 && !by_health)
                return 0;
        char file[128];
        if (by_health) {
                /* The unhealthy run is over: the next begins now, starting
                 * (and this start is counted once). */
                snprintf(file, sizeof(file), "%s" POD_APP_HEALTH_SUFFIX, app);
                snprintf(buf, sizeof(buf), "%s 0 %llu\n", pod_app_health_to_string(POD_APP_HEALTH_STARTING),
                         (unsigned long long) now_usec());
                if (pod_app_record_write_at(dir, file, buf, &err) < 0)
                        return fail(err);
        }
        /* The count goes on from the record (a manual start removes it). */
        PodAppExit before = {};
        (void) pod_app_restarts_read_at(dir, app, &before);
        unsigned restarts = before.restarts + 1;
        snprintf(file, sizeof(file), "%s" POD_APP_RESTARTS_SUFFIX, app);
        pod_app_restarts_format(buf, restarts, x.exit_status);
        if (pod_app_record_write_at(dir, file, buf, &err) < 0)
                return fail(err);
        uint64_t msec = APP_RESTART_SEC_MIN_MSEC;
        for (unsigned i = 1; i < restarts && msec < APP_RESTART_BACKOFF_MAX_MSEC; i++)
                msec *= 2;
        if (msec > APP_RESTART_BACKOFF_MAX_MSEC)
                msec = APP_RESTART_BACKOFF_MAX_MSEC;
        if (by_health)
                printf("app %s is restarted for its failed health checks: restart %u, after %llu ms\n", app, restarts,
                       (unsigned long long) msec);
        else
                printf("app %s exited with status %d: restart %u, after %llu ms\n", app, x.exit_status, restarts,
                       (unsigned long long) msec);
        fflush(stdout);
        /* RestartSec= has waited the first 100 ms of systemd's restarts;
         * a restart job waits nothing. */
        usleep((useconds_t) ((by_health ? msec : msec - APP_RESTART_SEC_MIN_MSEC) * 1000));
        return 0;
}

/* The file's age is the app's liveness: from the start of the app's run or
 * the file's last change, whichever is later. Polled at most once a
 * second; the app's run is known by its start time, so a restarted app is
 * given its full timeout again, and an app killed for it is killed once. */
static int watchdog(const char *app) {
        Error *err = NULL;
        _cleanup_pod_manifest_ PodManifest *m = NULL;
        _cleanup_(app_lifecycle_done) AppLifecycle l = {};
        _cleanup_bus_ sd_bus *bus = NULL;
        char unit[256], root[PATH_MAX];
        snprintf(unit, sizeof(unit), APP_UNIT_FORMAT, app);
        snprintf(root, sizeof(root), POD_APPS_DIR "/%s/rootfs", app);
        if (load_lifecycle(app, &m, &l, &err) < 0 || bus_open_systemd_private(SYSTEMD_PRIVATE_SOCKET, &bus, &err) < 0)
                return fail(err);
        if (!l.watchdog_file || !l.watchdog_usec)
                return fail((error_set(&err, -EINVAL, "app %s has no file watchdog", app), err));
        _cleanup_close_ int rootfd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (rootfd < 0)
                return fail((error_sys(&err, -errno, "%s", root), err));
        uint64_t killed_run = 0;
        for (;;) {
                UnitState st;
                if (bus_unit_state(bus, unit, &st, &err) < 0)
                        return fail(err);
                uint64_t now = now_usec(), since = st.started_usec, wait = USEC_PER_SEC;
                /* Resolved inside the app's root: the path is the app's. */
                _cleanup_close_ int fd = open_in_root(rootfd, l.watchdog_file, O_PATH, 0);
                struct stat sb;
                if (fd >= 0 && fstat(fd, &sb) >= 0) {
                        uint64_t mtime = (uint64_t) sb.st_mtim.tv_sec * USEC_PER_SEC + (uint64_t) sb.st_mtim.tv_nsec / 1000;
                        if (mtime > since)
                                since = mtime;
                }
                if (st.started_usec && st.started_usec != killed_run) {
                        if (now >= since + l.watchdog_usec) {
                                printf("app %s did not touch %s for %llu ms: killing it (SIGABRT)\n", app, l.watchdog_file,
                                       (unsigned long long) ((now - since) / 1000));
                                fflush(stdout);
                                if (bus_unit_kill(bus, unit, "main", SIGABRT, &err) < 0)
                                        return fail(err);
                                killed_run = st.started_usec;
                        } else if (since + l.watchdog_usec - now < wait)
                                wait = since + l.watchdog_usec - now;
                }
                usleep((useconds_t) wait);
        }
}

/* After each health check: the state (starting, healthy, unhealthy) of the
 * app's current run, and what sdpod/health-on-failure says when it has
 * just become unhealthy. Failures within the start period do not count. */
static int health(const char *app, bool ok) {
        Error *err = NULL;
        _cleanup_pod_manifest_ PodManifest *m = NULL;
        _cleanup_(app_lifecycle_done) AppLifecycle l = {};
        _cleanup_bus_ sd_bus *bus = NULL;
        char unit[256], file[128], buf[POD_APP_RECORD_SIZE + 1];
        snprintf(unit, sizeof(unit), APP_UNIT_FORMAT, app);
        UnitState st;
        if (load_lifecycle(app, &m, &l, &err) < 0 || bus_open_systemd_private(SYSTEMD_PRIVATE_SOCKET, &bus, &err) < 0 ||
            bus_unit_state(bus, unit, &st, &err) < 0)
                return fail(err);
        _cleanup_close_ int dir = open_status_dir(&err);
        if (dir < 0)
                return fail(err);
        PodAppHealthRecord h;
        if (pod_app_health_read_at(dir, app, &h) < 0 || h.run_usec != st.started_usec)
                h = (PodAppHealthRecord) { .state = POD_APP_HEALTH_STARTING, .run_usec = st.started_usec };
        bool became_unhealthy = false;
        if (ok)
                h.state = POD_APP_HEALTH_HEALTHY, h.failures = 0;
        else if (now_usec() >= st.started_usec + l.health_start_period_usec) {
                h.failures++;
                printf("app %s: health check failed (%u in a row; unhealthy at %u)\n", app, h.failures, l.health_retries);
                if (h.failures >= l.health_retries && h.state != POD_APP_HEALTH_UNHEALTHY) {
                        h.state = POD_APP_HEALTH_UNHEALTHY;
                        became_unhealthy = true;
                }
        }
        snprintf(file, sizeof(file), "%s" POD_APP_HEALTH_SUFFIX, app);
        pod_app_health_format(buf, &h);
        if (pod_app_record_write_at(dir, file, buf, &err) < 0)
                return fail(err);
        if (!became_unhealthy || l.health_on_failure == APP_HEALTH_NONE) {
                if (became_unhealthy)
                        printf("app %s is unhealthy\n", app);
                return 0;
        }
        bool restart = l.health_on_failure == APP_HEALTH_RESTART;
        printf("app %s is unhealthy: %s it\n", app, restart ? "restarting" : "stopping");
        fflush(stdout);
        /* Not waited for: the job stops the timer whose check called us. */
        BusJob job;
        if (bus_job_start(bus, restart ? "RestartUnit" : "StopUnit", unit, "replace", &job, &err) < 0)
                return fail(err);
        bus_job_done(&job);
        return 0;
}

/* The health record is the health-check's (one writer, renamed into
 * place); polled, as a check runs at most every few hundred milliseconds
 * and the app's state must be watched as well. */
#define WAIT_HEALTHY_POLL_USEC (200 * 1000)

static int wait_healthy(const char *app) {
        Error *err = NULL;
        _cleanup_bus_ sd_bus *bus = NULL;
        char unit[256];
        snprintf(unit, sizeof(unit), APP_UNIT_FORMAT, app);
        if (bus_open_systemd_private(SYSTEMD_PRIVATE_SOCKET, &bus, &err) < 0)
                return fail(err);
        _cleanup_close_ int dir = open_status_dir(&err);
        if (dir < 0)
                return fail(err);
        printf("waiting for app %s to be healthy\n", app);
        fflush(stdout);
        for (;;) {
                UnitState st;
                PodAppHealthRecord h;
                if (bus_unit_state(bus, unit, &st, &err) < 0)
                        return fail(err);
                bool running = streq(st.active_state, "active") || streq(st.active_state, "activating") ||
                               streq(st.active_state, "reloading");
                if (running && st.started_usec != 0 && pod_app_health_read_at(dir, app, &h) >= 0 &&
                    h.run_usec == st.started_usec) {
                        if (h.state == POD_APP_HEALTH_HEALTHY) {
                                printf("app %s is healthy\n", app);
                                return 0;
                        }
                        if (h.state == POD_APP_HEALTH_UNHEALTHY)
                                return fail((error_set(&err, -EIO, "app %s is unhealthy", app), err));
                }
                if (!running)
                        return fail((error_set(&err, -ESRCH, "app %s is not running (%s): it cannot become healthy", app,
                                               st.active_state), err));
                usleep(WAIT_HEALTHY_POLL_USEC);
        }
}

/* Reads the pod's lifeline until its end: the supervisor on the host, its
 * only writer, is gone, and with it nspawn. Nobody is left to halt the pod
 * or reap it: halt it in order for a second, then power it off (in a pid
 * namespace reboot(2) ends its init at once, and every process with it). */
static int lifeline(void) {
        Error *err = NULL;
        char path[PATH_MAX], buf[64];
        snprintf(path, sizeof(path), "%s/" POD_LIFELINE, pod_dir());
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        struct stat st;
        if (fd < 0 && errno == ENOENT)
                return 0; /* a pod without one: nothing to watch */
        if (fd < 0 || fstat(fd, &st) < 0)
                return fail((error_sys(&err, -errno, "%s", path), err));
        if (!S_ISFIFO(st.st_mode))
                return fail((error_set(&err, -EBADF, "%s is not a FIFO", path), err));
        for (;;) {
                ssize_t n = read(fd, buf, sizeof(buf));
                if (n == 0)
                        break;
                if (n < 0 && errno != EINTR)
                        return fail((error_sys(&err, -errno, "%s", path), err));
        }
        printf("the pod's supervisor on the host is gone: powering the pod off\n");
        fflush(stdout);
        _cleanup_bus_ sd_bus *bus = NULL;
        BusJob job;
        if (bus_open_systemd_private(SYSTEMD_PRIVATE_SOCKET, &bus, &err) >= 0 &&
            bus_job_start(bus, "StartUnit", "poweroff.target", "replace-irreversibly", &job, &err) >= 0)
                bus_job_done(&job);
        error_free(err);
        usleep(POD_LIFELINE_GRACE_USEC);
        reboot(RB_POWER_OFF);
        return fail((error_sys(&err, -errno, "reboot"), err));
}

/* Until the host writes net/ready, which the pod cannot write: woken by
 * inotify on the pod directory's net/ (the host creates it before the pod
 * starts; a pod without it is from before networks: nothing to wait for). */
static int wait_network(void) {
        char dir[PATH_MAX], ready[PATH_MAX];
        snprintf(dir, sizeof(dir), "%s/" POD_NET_DIR, pod_dir());
        snprintf(ready, sizeof(ready), "%s/" POD_NET_READY, pod_dir());
        Error *err = NULL;
        _cleanup_close_ int fd = inotify_init1(IN_CLOEXEC);
        if (fd < 0)
                return fail((error_sys(&err, -errno, "inotify"), err));
        if (inotify_add_watch(fd, dir, IN_CREATE | IN_MOVED_TO | IN_ONLYDIR) < 0)
                return errno == ENOENT ? 0 : fail((error_sys(&err, -errno, "%s", dir), err));
        while (access(ready, F_OK) < 0) {
                char buf[4096];
                if (read(fd, buf, sizeof(buf)) < 0 && errno != EINTR)
                        return fail((error_sys(&err, -errno, "%s", dir), err));
        }
        return 0;
}

static int pod_halt(const char *app) {
        Error *err = NULL;
        _cleanup_bus_ sd_bus *bus = NULL;
        BusJob job;
        printf("app %s failed: halting the pod\n", app);
        fflush(stdout);
        if (bus_open_systemd_private(SYSTEMD_PRIVATE_SOCKET, &bus, &err) < 0 ||
            bus_job_start(bus, "StartUnit", "halt.target", "replace", &job, &err) < 0)
                return fail(err);
        /* Not waited for: halting stops this unit's pod, and soon the
         * manager this would be waiting on. */
        bus_job_done(&job);
        return 0;
}

/* Writes text to the host (the report port): a port opens once at a
 * time, and ready and exit run one after the other, so a busy one is
 * waited for a little. */
static int report(const char *text, Error **err) {
        int fd = -1;
        for (int i = 0; i < 100 && (fd = open(KVM_REPORT_PORT, O_WRONLY | O_CLOEXEC | O_NOCTTY)) < 0 && errno == EBUSY; i++)
                usleep(20000);
        if (fd < 0)
                return error_sys(err, -errno, KVM_REPORT_PORT);
        int r = write_all(fd, text, strlen(text));
        close(fd);
        return r < 0 ? error_sys(err, r, KVM_REPORT_PORT) : 0;
}

/* The apps' exit statuses and the pod's exit code, to the host, which
 * reads nothing of the guest's disks. */
static int report_exit(sd_bus *bus, Error **err) {
        _cleanup_close_ int dir = open(pod_dir(), O_PATH | O_DIRECTORY | O_CLOEXEC);
        _cleanup_pod_manifest_ PodManifest *m = NULL;
        if (dir < 0)
                return error_sys(err, -errno, "%s", pod_dir());
        int r = pod_manifest_read_at(dir, "pod", "pod manifest", &m, err);
        _cleanup_close_ int status = r < 0 ? -1 : open_status_dir(err);
        if (status < 0)
                return r < 0 ? r : status;
        _cleanup_free_ char *text = NULL;
        size_t n = 0;
        _cleanup_fclose_ FILE *f = open_memstream(&text, &n);
        char line[KVM_REPORT_LINE_MAX + 2];
        if (!f)
                return error_sys(err, -ENOMEM, "report");
        for (size_t i = 0; i < m->n_apps; i++) {
                PodAppExit e = {};
                KvmReport rep = { .kind = KVM_REPORT_STATUS };
                if (pod_app_exit_read_at(status, m->apps[i].name, &e) < 0 || e.exit_status < 0 || e.exit_status > 255 ||
                    strlen(m->apps[i].name) >= sizeof(rep.app))
                        continue;
                strcpy(rep.app, m->apps[i].name);
                rep.code = e.exit_status;
                kvm_report_format(&rep, line);
                fputs(line, f);
        }
        uint8_t code = 0;
        if ((r = pod_exit_code_get(bus, &code, err)) < 0)
                return r;
        kvm_report_format(&(KvmReport) { .kind = KVM_REPORT_EXIT, .code = code }, line);
        fputs(line, f);
        if (fflush(f) != 0)
                return error_sys(err, -ENOMEM, "report");
        return report(text, err);
}

/* How long the pod's end waits for its journal to have read the apps'
 * last lines; well within the 10 s its systemd gives this step
 * (DefaultTimeoutStopSec=, system.conf). */
#define JOURNAL_SYNC_TIMEOUT_USEC (5 * USEC_PER_SEC)

static int pod_exit(void) {
        Error *err = NULL;
        _cleanup_bus_ sd_bus *bus = NULL;
        /* The apps and their relays are gone (the reapers stopped before
         * this), but what they wrote last may still wait in journald's
         * sockets: journald reads it before it answers, and its console
         * forwarding shows it (sdpod run). A journal that does not answer
         * in time loses it, as before, and the pod ends regardless. */
        if (journal_sync(JOURNAL_VARLINK_SOCKET, JOURNAL_SYNC_TIMEOUT_USEC, &err) < 0) {
                (void) fail(err);
                err = NULL;
        }
        if (bus_open_systemd_private(SYSTEMD_PRIVATE_SOCKET, &bus, &err) < 0)
                return fail(err);
        /* A VM: its systemd cannot exit, it powers off, after saying how
         * the pod ended. */
        if (in_vm()) {
                /* Powered off all the same: the host then says the VM
                 * ended without its exit code. */
                int r = report_exit(bus, &err) < 0 ? fail(err) : 0;
                err = NULL;
                return bus_manager_power_off(bus, &err) < 0 ? fail(err) : r;
        }
        if (bus_manager_exit(bus, &err) < 0)
                return fail(err);
        return 0;
}

/* The guest's heartbeat (kvm/kvm-run.h): the host ends a pod it has not
 * heard from in its hang timeout. A beat that cannot be written (the port
 * busy for long) is only a beat missed. */
static void heartbeat(void) {
        Error *err = NULL;
        char line[KVM_REPORT_LINE_MAX + 2];
        kvm_report_format(&(KvmReport) { .kind = KVM_REPORT_ALIVE }, line);
        if (report(line, &err) < 0)
                (void) fail(err);
}

/* The lifeline of a VM: the host's commands. "stop": the pod exits (its
 * apps stopped in order, exit.target), as a pod in a container does when
 * stopped; the port's end: the host is gone, and QEMU with it. Between
 * them, and until the guest's systemd ends every process at its power-off
 * (the unit has no stop dependencies), the heartbeat. */
static int vm_lifeline(void) {
        Error *err = NULL;
        _cleanup_close_ int fd = open(KVM_COMMAND_PORT, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return fail((error_sys(&err, -errno, KVM_COMMAND_PORT), err));
        char line[64];
        size_t n = 0;
        uint64_t next_beat = 0;
        for (;;) {
                uint64_t now = monotonic_usec();
                if (now >= next_beat) {
                        heartbeat();
                        next_beat = now + KVM_HEARTBEAT_USEC;
                }
                struct pollfd p = { fd, POLLIN, 0 };
                int w = poll(&p, 1, (int) ((next_beat - now + 999) / 1000));
                if (w == 0 || (w < 0 && errno == EINTR))
                        continue;
                char c;
                ssize_t k = read(fd, &c, 1);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k <= 0)
                        return 0;
                if (c != '\n') {
                        if (n < sizeof(line) - 1)
                                line[n++] = c;
                        continue;
                }
                line[n] = 0;
                n = 0;
                if (!streq(line, "stop"))
                        continue;
                printf("the host stops the pod\n");
                fflush(stdout);
                _cleanup_bus_ sd_bus *bus = NULL;
                BusJob job;
                if (bus_open_systemd_private(SYSTEMD_PRIVATE_SOCKET, &bus, &err) < 0 ||
                    bus_job_start(bus, "StartUnit", "exit.target", "replace-irreversibly", &job, &err) < 0)
                        return fail(err);
                bus_job_done(&job);
        }
}

int main(int argc, char **argv) {
        if (argc == 3 && streq(argv[1], "reap"))
                return reap(argv[2]);
        if (argc == 3 && streq(argv[1], "halt"))
                return pod_halt(argv[2]);
        if (argc == 2 && streq(argv[1], "exit"))
                return pod_exit();
        if (argc == 3 && streq(argv[1], "restarting"))
                return restarting(argv[2]);
        if (argc == 3 && streq(argv[1], "watchdog"))
                return watchdog(argv[2]);
        if (argc == 4 && streq(argv[1], "health") && (streq(argv[3], "ok") || streq(argv[3], "fail")))
                return health(argv[2], streq(argv[3], "ok"));
        if (argc == 3 && streq(argv[1], "wait-healthy"))
                return wait_healthy(argv[2]);
        if (argc == 2 && streq(argv[1], "lifeline"))
                return access(KVM_COMMAND_PORT, F_OK) == 0 ? vm_lifeline() : lifeline();
        if (argc == 2 && streq(argv[1], "wait-network"))
                return wait_network();
        if (argc == 2 && streq(argv[1], "ready")) {
                puts("pod ready");
                Error *err = NULL;
                char line[KVM_REPORT_LINE_MAX + 2];
                kvm_report_format(&(KvmReport) { .kind = KVM_REPORT_READY }, line);
                return in_vm() && report(line, &err) < 0 ? fail(err) : 0;
        }
        if (argc == 4 && streq(argv[1], "fail")) {
                fprintf(stderr, "%s\n", argv[3]);
                return atoi(argv[2]) ?: 1;
        }
        fprintf(stderr, "Usage: pod-helper reap APP | halt APP | restarting APP | watchdog APP | health APP ok|fail | exit |\n"
                        "                  wait-healthy APP |\n"
                        "                  ready | lifeline | wait-network | fail CODE MESSAGE\n"
                        "The stage1's helper inside a pod; see sdpod-stage1(7).\n");
        return 2;
}
