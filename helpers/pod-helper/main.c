/* SPDX-License-Identifier: Apache-2.0 */
/* pod-helper: the stage1's programs that run inside the pod, started by its
 * units (sdpod-stage1(7)):
 *
 *   reap NAME          ExecStop of reaper@NAME.service: records the exit
 *                      status of app@NAME.service in /sdpod/status/NAME and,
 *                      when the app failed and no stop of it was asked for
 *                      (/sdpod/apps/NAME/stop-requested), makes it the pod's
 *                      exit code
 *   halt NAME          app-failed@NAME.service of a mutable pod: the app
 *                      failed, the pod halts (halt.target)
 *   exit               ExecStop of shutdown.service: ends the pod
 *   ready              supervisor-ready.service
 *   restarting NAME    ExecStartPre=+ of an app with a restart policy: on
 *                      a restart, records it (/sdpod/status/NAME.restarts)
 *                      and waits out the backoff
 *   wait-network       sdpod-network.service: returns once the host has
 *                      attached the pod's network (/sdpod/net/ready)
 *   fail CODE MESSAGE  an app or manifest the generator could not turn into
 *                      a runnable unit: says why and exits with CODE */
#include <fcntl.h>
#include <sys/inotify.h>
#include <sys/stat.h>

#include "basic/fs.h"
#include "basic/macro.h"
#include "bus/bus-util.h"
#include "net/net-files.h"
#include "net/pod-network.h"
#include "pod/pod-info.h"
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

/* Whether podapp stop asked app to stop: its failure is then not the pod's. */
static bool stop_requested(const char *app) {
        char path[PATH_MAX];
        snprintf(path, sizeof(path), "%s/" POD_APP_DIR "/%s/" POD_APP_STOP_REQUESTED, pod_dir(), app);
        return access(path, F_OK) == 0;
}

static int reap(const char *app) {
        Error *err = NULL;
        char unit[256], path[PATH_MAX], buf[16];
        snprintf(unit, sizeof(unit), APP_UNIT_FORMAT, app);
        _cleanup_bus_ sd_bus *bus = NULL;
        ServiceExit x;
        if (bus_open_systemd_private(SYSTEMD_PRIVATE_SOCKET, &bus, &err) < 0 || bus_service_exit(bus, unit, &x, &err) < 0)
                return fail(err);
        if (!x.exited) {
                printf("app %s did not run\n", app);
                return 0;
        }
        snprintf(path, sizeof(path), "%s/status", pod_dir());
        _cleanup_close_ int dir = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        int n = snprintf(buf, sizeof(buf), "%d\n", x.exit_status);
        if (dir < 0)
                return fail((error_sys(&err, -errno, "%s", path), err));
        if (write_file_atomic_at(dir, app, buf, n, 0644, &err) < 0)
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
        if (bus_manager_get_exit_code(bus, &code, &err) < 0 ||
            (code == 0 && bus_manager_set_exit_code(bus, x.exit_status ? x.exit_status : 1, &err) < 0))
                return fail(err);
        return 0;
}

/* Before each start of an app with a restart policy. A manual start has
 * NRestarts 0: nothing to do. A restart is recorded (the count and the
 * status the app exited with, still the unit's until its program runs
 * again: pod-info.h) and waits 100 ms, doubled with each restart up to
 * 10 s, so that an app that fails at once does not spin. */
static int restarting(const char *app) {
        Error *err = NULL;
        char unit[256], path[PATH_MAX], buf[32];
        snprintf(unit, sizeof(unit), APP_UNIT_FORMAT, app);
        _cleanup_bus_ sd_bus *bus = NULL;
        ServiceExit x;
        if (bus_open_systemd_private(SYSTEMD_PRIVATE_SOCKET, &bus, &err) < 0 || bus_service_exit(bus, unit, &x, &err) < 0)
                return fail(err);
        if (x.restarts == 0)
                return 0;
        snprintf(path, sizeof(path), "%s/status", pod_dir());
        _cleanup_close_ int dir = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dir < 0)
                return fail((error_sys(&err, -errno, "%s", path), err));
        char file[128];
        snprintf(file, sizeof(file), "%s" POD_APP_RESTARTS_SUFFIX, app);
        int n = snprintf(buf, sizeof(buf), "%u %d\n", x.restarts, x.exit_status);
        if (write_file_atomic_at(dir, file, buf, n, 0644, &err) < 0)
                return fail(err);
        uint64_t msec = APP_RESTART_SEC_MIN_MSEC;
        for (unsigned i = 1; i < x.restarts && msec < APP_RESTART_BACKOFF_MAX_MSEC; i++)
                msec *= 2;
        if (msec > APP_RESTART_BACKOFF_MAX_MSEC)
                msec = APP_RESTART_BACKOFF_MAX_MSEC;
        printf("app %s exited with status %d: restart %u, after %llu ms\n", app, x.exit_status, x.restarts,
               (unsigned long long) msec);
        fflush(stdout);
        /* RestartSec= has waited the first 100 ms. */
        usleep((useconds_t) ((msec - APP_RESTART_SEC_MIN_MSEC) * 1000));
        return 0;
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

static int pod_exit(void) {
        Error *err = NULL;
        _cleanup_bus_ sd_bus *bus = NULL;
        if (bus_open_systemd_private(SYSTEMD_PRIVATE_SOCKET, &bus, &err) < 0 || bus_manager_exit(bus, &err) < 0)
                return fail(err);
        return 0;
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
        if (argc == 2 && streq(argv[1], "wait-network"))
                return wait_network();
        if (argc == 2 && streq(argv[1], "ready")) {
                puts("pod ready");
                return 0;
        }
        if (argc == 4 && streq(argv[1], "fail")) {
                fprintf(stderr, "%s\n", argv[3]);
                return atoi(argv[2]) ?: 1;
        }
        fprintf(stderr, "Usage: pod-helper reap APP | halt APP | restarting APP | exit | ready | wait-network | fail CODE MESSAGE\n"
                        "The stage1's helper inside a pod; see sdpod-stage1(7).\n");
        return 2;
}
