/* SPDX-License-Identifier: Apache-2.0 */
#include <fcntl.h>
#include <poll.h>
#include <stddef.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <systemd/sd-bus.h>
#include <systemd/sd-daemon.h>

#include "basic/crash-point.h"
#include "basic/fs.h"
#include "basic/time-util.h"
#include "basic/warn.h"
#include "bus/bus-util.h"
#include "config.h"
#include "pod/pod-launch.h"
#include "pod/pod-run.h"
#include "pod/stage1.h"

#define LAUNCH_TIMEOUT_USEC (90 * USEC_PER_SEC)

/* Whether the host's systemd has pod@.service (sdpod installed): a template
 * cannot be loaded, its instance can. */
static bool host_has_pod_unit(sd_bus *bus, const char *unit) {
        UnitState st;
        return bus_unit_state(bus, unit, &st, NULL) >= 0 && streq(st.load_state, "loaded");
}

/* Whether the pod has run and exited: it is in run/ and no process holds
 * its lock. A pod that failed before it ran is still prepared. */
static bool pod_has_run(PodStore *ps, const char *uuid) {
        _cleanup_pod_ Pod *p = NULL;
        return pod_lookup(ps, uuid, &p, NULL) >= 0 && p->state == POD_STATE_EXITED;
}

static int launch_unit(PodStore *ps, sd_bus *bus, const char *uuid, const char *unit, uint64_t timeout_usec,
                       int *ret_exit_code, Error **err) {
        /* A broker sends the manager's signals only to subscribers. */
        BusJob job;
        int r = bus_manager_subscribe(bus, err);
        if (r < 0 || (r = bus_job_start(bus, "StartUnit", unit, "replace", &job, err)) < 0)
                return error_prefix(err, "pod %s", uuid);
        _cleanup_error_ Error *failed = NULL;
        r = bus_job_wait(&job, timeout_usec, &failed);
        bus_job_done(&job);
        ServiceExit x;
        if (r < 0 && r != -ETIMEDOUT && pod_has_run(ps, uuid) && bus_service_exit(bus, unit, &x, NULL) >= 0 &&
            x.exited) {
                *ret_exit_code = x.exit_status;
                return error_set(err, -ECHILD, "pod %s exited before it was ready (exit status %d)", uuid,
                                 x.exit_status);
        }
        if (r < 0 && r != -ETIMEDOUT && err && !*err)
                *err = TAKE_PTR(failed);
        if (r == -ETIMEDOUT)
                return error_set(err, r, "pod %s: %s is not ready after %llu s", uuid, unit,
                                 (unsigned long long) (timeout_usec / USEC_PER_SEC));
        return r < 0 ? error_prefix(err, "pod %s (see 'systemctl status %s')", uuid, unit) : 0;
}

int notify_socket_new(const char *name, char ret_address[static 108]) {
        int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd < 0)
                return -errno;
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        int n = snprintf(sa.sun_path + 1, sizeof(sa.sun_path) - 1, "%s", name), one = 1;
        if (setsockopt(fd, SOL_SOCKET, SO_PASSCRED, &one, sizeof(one)) < 0 ||
            bind(fd, (struct sockaddr *) &sa, offsetof(struct sockaddr_un, sun_path) + 1 + n) < 0) {
                int r = -errno;
                close(fd);
                return r;
        }
        snprintf(ret_address, 108, "@%s", sa.sun_path + 1);
        return fd;
}

static bool has_ready(const char *msg) {
        for (const char *l = msg; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL)
                if (startswith(l, "READY=1") && (l[7] == '\n' || l[7] == 0))
                        return true;
        return false;
}

int notify_socket_read_from(int sock, pid_t pid, char msg[static NOTIFY_MESSAGE_MAX]) {
        union {
                struct cmsghdr h;
                char buf[CMSG_SPACE(sizeof(struct ucred)) + CMSG_SPACE(sizeof(int) * 8)];
        } control = {};
        struct iovec iov = { msg, NOTIFY_MESSAGE_MAX - 1 };
        struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = &control, .msg_controllen = sizeof(control) };
        ssize_t k = recvmsg(sock, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
        if (k < 0)
                return errno == EAGAIN || errno == EINTR ? 0 : -errno;
        msg[k] = 0;
        const struct ucred *cred = NULL;
        for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
                if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_CREDENTIALS &&
                    c->cmsg_len == CMSG_LEN(sizeof(struct ucred)))
                        cred = (const struct ucred *) CMSG_DATA(c);
                else if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
                        /* fds nobody asked for: closed, not kept */
                        int *fds = (int *) CMSG_DATA(c);
                        for (size_t i = 0; i < (c->cmsg_len - CMSG_LEN(0)) / sizeof(int); i++)
                                close(fds[i]);
                }
        }
        return cred && cred->pid == pid;
}

int notify_socket_ready_from(int sock, pid_t pid) {
        char msg[NOTIFY_MESSAGE_MAX];
        int r = notify_socket_read_from(sock, pid, msg);
        return r > 0 && has_ready(msg);
}

/* The child: a session of its own, no terminal, then the pod's run
 * entrypoint (which supervises systemd-nspawn, holding the pod's lock). */
static _noreturn_ void detached_child(PodStore *ps, const char *uuid, const char *notify) {
        Error *err = NULL;
        _cleanup_pod_ Pod *p = NULL;
        /* The pod must not hold the caller's output open ($(podapp
         * sandbox) waits for its end); a copy of stderr, closed on exec,
         * tells the caller why the pod did not start. */
        int null = open("/dev/null", O_RDWR | O_CLOEXEC);
        int caller_stderr = fcntl(2, F_DUPFD_CLOEXEC, 3);
        if (setsid() < 0 || null < 0 || dup2(null, 0) < 0 || dup2(null, 1) < 0 || dup2(null, 2) < 0 ||
            setenv("NOTIFY_SOCKET", notify, 1) < 0)
                _exit(125);
        if (pod_start_prepared(ps, uuid, &p, &err) >= 0)
                stage1_exec_run(p->fd, p->uuid, &err);
        dprintf(caller_stderr, "%s\n", err ? err->msg : strerror(ENOMEM));
        _exit(err && err->code == -EALREADY ? 124 : 125);
}

static int launch_detached(PodStore *ps, const char *uuid, uint64_t timeout_usec, int *ret_exit_code, Error **err) {
        char address[108], name[96];
        snprintf(name, sizeof(name), "sdpod/launch/%s/%d", uuid, (int) getpid());
        _cleanup_close_ int sock = notify_socket_new(name, address);
        if (sock < 0)
                return error_sys(err, sock, "pod %s: cannot make a notify socket", uuid);
        fflush(NULL);
        pid_t pid = fork();
        if (pid < 0)
                return error_sys(err, -errno, "pod %s: cannot fork", uuid);
        if (pid == 0) {
                closep(&sock);
                detached_child(ps, uuid, address);
        }
        _cleanup_close_ int pidfd = (int) syscall(SYS_pidfd_open, pid, 0);
        if (pidfd < 0)
                return error_sys(err, -errno, "pod %s: pidfd of its process %d", uuid, (int) pid);
        uint64_t deadline = monotonic_usec() + timeout_usec;
        for (;;) {
                struct pollfd fds[] = { { sock, POLLIN, 0 }, { pidfd, POLLIN, 0 } };
                uint64_t now = monotonic_usec();
                if (now >= deadline)
                        return error_set(err, -ETIMEDOUT, "pod %s is not ready after %llu s (its process %d goes on)",
                                         uuid, (unsigned long long) (timeout_usec / USEC_PER_SEC), (int) pid);
                int n = poll(fds, 2, (int) ((deadline - now + 999) / 1000));
                if (n < 0 && errno != EINTR)
                        return error_sys(err, -errno, "pod %s: waiting until it is ready", uuid);
                if (n > 0 && (fds[0].revents & POLLIN)) {
                        /* Only the pod's own nspawn (the child, which
                         * execs it) says when the pod is ready. */
                        if (notify_socket_ready_from(sock, pid) > 0)
                                return 0;
                        continue;
                }
                if (n > 0 && (fds[1].revents & POLLIN)) {
                        int st;
                        while (waitpid(pid, &st, 0) < 0)
                                if (errno != EINTR)
                                        return error_sys(err, -errno, "pod %s", uuid);
                        if (WIFEXITED(st) && WEXITSTATUS(st) == 124)
                                return error_set(err, -EALREADY, "pod %s was started by another process", uuid);
                        if (WIFEXITED(st) && pod_has_run(ps, uuid)) {
                                *ret_exit_code = WEXITSTATUS(st);
                                return error_set(err, -ECHILD, "pod %s exited before it was ready (exit status %d)",
                                                 uuid, WEXITSTATUS(st));
                        }
                        if (WIFEXITED(st))
                                return error_set(err, -EIO, "pod %s exited before it was ready (exit status %d)",
                                                 uuid, WEXITSTATUS(st));
                        return error_set(err, -EIO, "pod %s was killed by signal %d before it was ready", uuid,
                                         WTERMSIG(st));
                }
        }
}

/* pod@.service runs 'sdpod run-prepared UUID' without --dir: it can only
 * start pods of the default data directory. */
static bool store_is_default(PodStore *ps) {
        _cleanup_free_ char *def = realpath(SDPOD_DEFAULT_DIR, NULL);
        return def && streq(def, ps->root);
}

static int pod_launch(PodStore *ps, const char *uuid, int *ret_exit_code, Error **err) {
        if (store_is_default(ps) && sd_booted() > 0) {
                char unit[64];
                snprintf(unit, sizeof(unit), "pod@%s.service", uuid);
                _cleanup_bus_ sd_bus *bus = NULL;
                if (sd_bus_open_system(&bus) >= 0 && host_has_pod_unit(bus, unit))
                        return launch_unit(ps, bus, uuid, unit, LAUNCH_TIMEOUT_USEC, ret_exit_code, err);
        }
        return launch_detached(ps, uuid, LAUNCH_TIMEOUT_USEC, ret_exit_code, err);
}

int pod_stop(PodStore *ps, Pod *p, bool force, uint64_t timeout_usec, Error **err) {
        char *force_arg[] = { "--force", NULL };
        int r = stage1_run(p->fd, p->uuid, STAGE1_ENTRYPOINT_STOP, force ? force_arg : NULL, err);
        if (r >= 0)
                crash_point(CRASH_STOP_ASKED);
        if (r < 0 || force)
                return r < 0 ? r : pod_wait(ps, p, 0, err);
        _cleanup_error_ Error *timeout = NULL;
        if (timeout_usec == 0)
                timeout_usec = POD_STOP_TIMEOUT_USEC;
        r = pod_wait(ps, p, timeout_usec, &timeout);
        if (r != -ETIMEDOUT) {
                if (r < 0 && err && timeout)
                        *err = TAKE_PTR(timeout);
                return r;
        }
        if (timeout_usec % USEC_PER_SEC == 0)
                warn("pod %s did not halt within %llu s: killing it", p->uuid,
                     (unsigned long long) (timeout_usec / USEC_PER_SEC));
        else
                warn("pod %s did not halt within %llu ms: killing it", p->uuid,
                     (unsigned long long) (timeout_usec / 1000));
        if ((r = stage1_run(p->fd, p->uuid, STAGE1_ENTRYPOINT_STOP, force_arg, err)) < 0 ||
            (r = pod_wait(ps, p, 0, err)) < 0)
                return r;
        return 1;
}

int pod_launch_prepared(PodStore *ps, Pod **p, char ret_uuid[static UUID_STRING_MAX], int *ret_exit_code,
                        Error **err) {
        snprintf(ret_uuid, UUID_STRING_MAX, "%s", (*p)->uuid);
        pod_free(TAKE_PTR(*p)); /* the lock goes to whoever runs it */
        int exit_code = 0;
        int r = pod_launch(ps, ret_uuid, &exit_code, err);
        if (r >= 0)
                return 0;
        _cleanup_error_ Error *ignored = NULL;
        _cleanup_pod_ Pod *left = NULL;
        if (pod_lookup(ps, ret_uuid, &left, &ignored) < 0)
                return r;
        /* Why the run entrypoint gave up: written by the host, read within
         * bounds all the same. */
        _cleanup_free_ char *why = NULL;
        size_t size;
        bool gave_up = read_file_at(left->fd, POD_RUN_ERROR_FILE, 4096, &why, &size, &ignored) >= 0 && size > 0;
        if (gave_up && r == -ECHILD)
                r = -EIO;
        if (gave_up && err && *err) {
                error_free(TAKE_PTR(*err));
                error_set(err, r, "%.*s", (int) strcspn(why, "\n"), why);
        }
        if (r == -ECHILD) {
                /* It ran and ended on its own: kept, with its exit statuses
                 * and journal, for whoever wants to know why. (When the
                 * stage1 gave up, its reason says it all: the apps never
                 * started.) */
                if (ret_exit_code)
                        *ret_exit_code = exit_code;
                return r;
        }
        (void) pod_remove(ps, left, &ignored);
        return r;
}
