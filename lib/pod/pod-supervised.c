/* SPDX-License-Identifier: Apache-2.0 */
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "basic/time-util.h"

#include "net/pod-network.h"
#include "pod/pod-cgroup.h"
#include "pod/pod-process.h"
#include "pod/pod-supervised.h"

int pod_supervised_stop(const char *uuid, bool force, Error **err) {
        _cleanup_close_ int pod_fd = open(".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        PodProcess p = { .nspawn_pidfd = -1 };
        if (pod_fd < 0)
                return error_sys(err, -errno, "pod %s", uuid);
        int r = pod_process_find(pod_fd, uuid, &p, err);
        if (r < 0)
                return r;
        if (!force) {
                if (syscall(SYS_pidfd_send_signal, p.nspawn_pidfd, SIGTERM, NULL, 0) < 0)
                        r = error_sys(err, -errno, "pod %s: cannot signal its supervisor (%d)", uuid, (int) p.nspawn);
        } else {
                /* The child (fly: the app, PID 1 of its namespace, whose
                 * end is everyone's there; kvm: QEMU): the supervisor then
                 * records its end and cleans up. */
                int fd = p.leader > 0 ? (int) syscall(SYS_pidfd_open, p.leader, 0) : -1;
                if (fd >= 0) {
                        if (syscall(SYS_pidfd_send_signal, fd, SIGKILL, NULL, 0) < 0)
                                r = error_sys(err, -errno, "pod %s: cannot kill its child (%d)", uuid, (int) p.leader);
                        close(fd);
                } else if (syscall(SYS_pidfd_send_signal, p.nspawn_pidfd, SIGKILL, NULL, 0) < 0)
                        r = error_sys(err, -errno, "pod %s: cannot kill its supervisor (%d)", uuid, (int) p.nspawn);
        }
        pod_process_done(&p);
        return r;
}

int pod_supervised_gc(const char *uuid, Error **err) {
        /* The pod's cgroup first: the handle the app cannot leave. */
        int n = pod_cgroup_kill(uuid, err);
        if (n < 0)
                return n;
        if (n > 0)
                fprintf(stderr, "gc: pod %s: killed what was left in its cgroup\n", uuid);
        _cleanup_close_ int pod_fd = open(".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        int r;
        if (pod_fd < 0)
                return error_sys(err, -errno, "pod %s", uuid);
        if ((r = pod_network_down_kept(pod_fd, uuid, err)) < 0 || (r = pod_cgroup_remove(uuid, err)) < 0)
                return r;
        (void) pod_cgroup_remove_stale();
        return 0;
}

int pod_supervisor_signals(sigset_t *old, Error **err) {
        sigset_t mask;
        sigemptyset(&mask);
        sigaddset(&mask, SIGTERM);
        sigaddset(&mask, SIGINT);
        sigaddset(&mask, SIGHUP);
        sigaddset(&mask, SIGCHLD);
        sigprocmask(SIG_BLOCK, &mask, old);
        (void) signal(SIGPIPE, SIG_IGN);
        int fd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
        return fd < 0 ? error_sys(err, -errno, "signalfd") : fd;
}

void pod_supervisor_child_signals(const sigset_t *old) {
        (void) signal(SIGPIPE, SIG_DFL);
        sigprocmask(SIG_SETMASK, old, NULL);
}

int pod_supervisor_child_started(const char *uuid, pid_t pid, int err_fd, const char *what, Error **err) {
        char msg[513];
        ssize_t k = read(err_fd, msg, sizeof(msg) - 1);
        close(err_fd);
        if (k <= 0)
                return 0;
        msg[k] = 0;
        text_make_printable(msg, (size_t) k, false);
        (void) waitpid(pid, NULL, 0);
        (void) pod_cgroup_kill(uuid, NULL);
        (void) pod_cgroup_remove(uuid, NULL);
        return error_set(err, -EIO, "pod %s: %s did not start: %s", uuid, what, msg);
}

void pod_supervisor_drain(PodLog *log, int fd, bool open) {
        uint64_t until = monotonic_usec() + 1000000;
        while (open && monotonic_usec() < until) {
                struct pollfd p = { fd, POLLIN, 0 };
                if (poll(&p, 1, 100) > 0)
                        open = pod_log_drain(log, fd);
        }
        close(fd);
}
