/* SPDX-License-Identifier: Apache-2.0 */
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <systemd/sd-daemon.h>

#include "basic/crash-point.h"
#include "basic/fs.h"
#include "basic/time-util.h"
#include "pod/pod-launch.h"
#include "pod/pod-liveness.h"
#include "pod/pod-process.h"
#include "pod/pod-supervise.h"

#define RELAY_DIR "/run/sdpod/notify"

/* Makes the process group pgrp the foreground job of the terminal on
 * stdin; from a background group, which tcsetpgrp() would stop with
 * SIGTTOU. */
static void terminal_give(pid_t pgrp) {
        struct sigaction ign = { .sa_handler = SIG_IGN }, old;
        sigaction(SIGTTOU, &ign, &old);
        (void) tcsetpgrp(STDIN_FILENO, pgrp);
        sigaction(SIGTTOU, &old, NULL);
}

static _noreturn_ void exec_child(int lock_fd, int go[2], pid_t supervisor, const char *netns, const char *notify,
                                  bool foreground, const char *program, char *const *argv) {
        sigset_t none;
        sigemptyset(&none);
        char c;
        /* Our copy of the writing end would keep the read below from ever
         * seeing the end of the pipe when the supervisor dies before it
         * says go: nspawn would wait for ever, holding the pod's lock. */
        close(go[1]);
        /* The supervisor's death, however it dies, kills nspawn: without it
         * the pod's network is never attached (the pod would wait for it)
         * nor released. Not SIGTERM: a pod still booting loses the halt
         * request nspawn passes on (its PID 1 has no handler yet). Checked
         * after, since it may have died before. */
        if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != supervisor)
                _exit(125);
        _cleanup_close_ int ns = netns ? open(netns, O_RDONLY | O_CLOEXEC) : -1;
        /* Wait until the pid file names us: stop must find us. nspawn then
         * runs in the pod's network namespace, which the pod inherits, and
         * in a process group of its own: a Ctrl-C, or a signal to the
         * caller's group, reaches the supervisor alone, which passes it on
         * once. (nspawn takes a second SIGINT or SIGTERM for "terminate
         * now": the apps' exit statuses would be lost.) */
        if (read(go[0], &c, 1) != 1 || (netns && (ns < 0 || setns(ns, CLONE_NEWNET) < 0)) || setpgid(0, 0) < 0 ||
            sigprocmask(SIG_SETMASK, &none, NULL) < 0 ||
            (notify && setenv("NOTIFY_SOCKET", notify, 1) < 0) || pod_lock_keep_alone_on_exec(lock_fd) < 0)
                _exit(125);
        /* Its own group is then the one that reads the terminal: keys
         * are bytes for the pod's console (nspawn makes the terminal raw),
         * not signals for the supervisor. */
        if (foreground)
                terminal_give(getpgrp());
        execv(program, argv);
        _exit(errno == ENOENT ? 127 : 126);
}

/* A notify socket for nspawn. nspawn runs in the pod's network namespace,
 * where the abstract addresses of the host's are not seen: the socket has a
 * path, in a tmpfs of this mount namespace, so nothing of it stays. */
static int relay_socket(char address[static 108], Error **err) {
        int r = mkdir_p(RELAY_DIR, 0755);
        if (r < 0)
                return error_sys(err, r, "cannot create %s", RELAY_DIR);
        if (mount("tmpfs", RELAY_DIR, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, "mode=0700,size=64k") < 0)
                return error_sys(err, -errno, "cannot mount a tmpfs on %s", RELAY_DIR);
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        snprintf(sa.sun_path, sizeof(sa.sun_path), RELAY_DIR "/%d", (int) getpid());
        int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0), one = 1;
        if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_PASSCRED, &one, sizeof(one)) < 0 ||
            bind(fd, (struct sockaddr *) &sa, sizeof(sa)) < 0) {
                r = -errno;
                if (fd >= 0)
                        close(fd);
                return error_sys(err, r, "cannot make a notify socket");
        }
        memcpy(address, sa.sun_path, sizeof(sa.sun_path));
        return fd;
}

/* What nspawn tells of the pod, said on: READY=1, STOPPING=1 and STATUS=
 * ("Container running: Ready."), for systemctl status. Nothing else: the
 * message is nspawn's, but only those lines are the service's business. */
static void relay(const char *msg, bool *ready) {
        char out[NOTIFY_MESSAGE_MAX];
        size_t n = 0;
        for (const char *l = msg; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
                size_t len = strcspn(l, "\n");
                bool is_ready = len == 7 && startswith(l, "READY=1");
                bool wanted = is_ready || (len == 10 && startswith(l, "STOPPING=1")) || startswith(l, "STATUS=");
                *ready |= is_ready;
                if (wanted && n + len + 2 <= sizeof(out)) {
                        memcpy(out + n, l, len);
                        n += len;
                        out[n++] = '\n';
                }
        }
        if (n > 0) {
                out[n - 1] = 0;
                (void) sd_notify(0, out);
        }
}

/* Halts what nspawn left: once nspawn is gone (killed, crashed), the pod's
 * PID 1, which it does not take with it, is our child (we are a subreaper:
 * the kernel reparents it to us, and the pod cannot prevent that). It is
 * asked to halt in order (SIGRTMIN+3, what nspawn sends on a stop: the
 * apps stop and their reapers record their exit statuses), and killed when
 * it has not exited within POD_ORPHAN_GRACE_USEC: SIGKILL to the init of a
 * pid namespace ends every process in it. A pod whose nspawn exited
 * normally has no PID 1 left: nothing to do. */
/* As a subreaper we adopt what dies beneath us, the liveness pings' helpers
 * among them: the one each makes in the pod's pid namespace is ours once
 * the helper that made it is gone (killed at its deadline). A zombie of the
 * pod's pid namespace that nobody reaps keeps that namespace's PID 1 from
 * ever finishing its exit, and nspawn from ending: reaped here, all but
 * nspawn (keep), whose end the loop waits for itself. */
static void reap_orphans(pid_t keep) {
        for (;;) {
                siginfo_t si = {};
                if (waitid(P_ALL, 0, &si, WEXITED | WNOHANG | WNOWAIT) < 0 || si.si_pid <= 0 || si.si_pid == keep)
                        return;
                (void) waitpid(si.si_pid, NULL, WNOHANG);
        }
}

static void halt_orphans(const char *program) {
        for (unsigned round = 0; round < 16; round++) {
                pid_t child = pod_first_child(getpid());
                if (child <= 0)
                        return;
                /* Our child: its number is ours until we reap it. */
                _cleanup_close_ int pidfd = (int) syscall(SYS_pidfd_open, child, 0);
                fprintf(stderr, "%s died, leaving the pod's processes: halting them\n", program);
                if (pidfd >= 0) {
                        (void) syscall(SYS_pidfd_send_signal, pidfd, SIGRTMIN + 3, NULL, 0);
                        struct pollfd p = { pidfd, POLLIN, 0 };
                        if (poll(&p, 1, POD_ORPHAN_GRACE_USEC / 1000) <= 0)
                                (void) syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, NULL, 0);
                } else
                        (void) kill(child, SIGKILL);
                while (waitpid(child, NULL, 0) < 0 && errno == EINTR)
                        ;
        }
}

/* The pod's lifeline (pod-supervise.h): a FIFO in the pod directory, made
 * anew, of which we hold the only writing end (O_RDWR, which does not wait
 * for a reader), close-on-exec: nspawn does not get it. Mode 0644: the
 * pod's root, an "other" to the host, may open it to read, not to write. */
static int lifeline_open(int pod_fd, Error **err) {
        if (unlinkat(pod_fd, POD_LIFELINE, 0) < 0 && errno != ENOENT)
                return error_sys(err, -errno, "%s", POD_LIFELINE);
        if (mkfifoat(pod_fd, POD_LIFELINE, 0600) < 0)
                return error_sys(err, -errno, "cannot make %s", POD_LIFELINE);
        int fd = openat(pod_fd, POD_LIFELINE, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
        if (fd < 0 || fchmod(fd, 0644) < 0) {
                int r = -errno;
                if (fd >= 0)
                        close(fd);
                return error_sys(err, r, "%s", POD_LIFELINE);
        }
        return fd;
}

int pod_supervise(int pod_fd, int lock_fd, const char *netns, const char *program, char *const *argv,
                  uint64_t watchdog_usec, bool foreground, int child_procs_fd, PodAttachFunc attach, void *userdata,
                  Error **err) {
        _cleanup_close_ int lifeline = lifeline_open(pod_fd, err);
        if (lifeline < 0)
                return lifeline;
        /* A relay only when someone listens. */
        char address[108] = "";
        _cleanup_close_ int notify = -1;
        if (getenv("NOTIFY_SOCKET") && (notify = relay_socket(address, err)) < 0)
                return notify;
        sigset_t mask;
        sigemptyset(&mask);
        sigaddset(&mask, SIGTERM);
        sigaddset(&mask, SIGHUP);
        sigaddset(&mask, SIGINT);
        sigaddset(&mask, SIGCHLD); /* an orphan to reap (reap_orphans()) */
        if (sigprocmask(SIG_BLOCK, &mask, NULL) < 0)
                return error_sys(err, -errno, "cannot block signals");
        _cleanup_close_ int sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
        int go[2];
        if (sfd < 0 || pipe2(go, O_CLOEXEC) < 0)
                return error_sys(err, -errno, "cannot supervise");
        /* The pod's PID 1 becomes our child if nspawn dies before it. */
        if (prctl(PR_SET_CHILD_SUBREAPER, 1) < 0)
                return error_sys(err, -errno, "cannot become the pod's subreaper");
        fflush(NULL);
        pid_t supervisor = getpid(), pid = fork();
        if (pid < 0)
                return error_sys(err, -errno, "cannot start %s", program);
        if (pid == 0)
                exec_child(lock_fd, go, supervisor, netns, *address ? address : NULL, foreground, program, argv);
        close(go[0]);
        _cleanup_close_ int pidfd = (int) syscall(SYS_pidfd_open, pid, 0);
        int r = pidfd < 0 ? error_sys(err, -errno, "pidfd of %s", program) : pod_pid_file_write(pod_fd, pid, lock_fd, err);
        /* Before it runs (it waits for go). */
        if (r >= 0 && child_procs_fd >= 0 && dprintf(child_procs_fd, "%d\n", (int) pid) < 0)
                r = error_sys(err, -errno, "cannot move %s into its cgroup", program);
        if (r < 0) {
                kill(pid, SIGKILL);
                close(go[1]);
                waitpid(pid, NULL, 0);
                return r;
        }
        crash_point(CRASH_RUN_FORKED);
        (void) write(go[1], "", 1);
        close(go[1]);

        /* The pod boots meanwhile; it waits for what attach makes. */
        int attached = attach ? attach(userdata, err) : 0;
        if (attached >= 0)
                crash_point(CRASH_RUN_ATTACHED);
        /* Without its network the pod cannot go on, and nothing in it
         * needs a halt in order: its apps start only once the network is
         * there. A SIGTERM would be lost while the pod boots (its PID 1 has
         * no handler yet) and leave it waiting for ever; SIGKILL ends
         * nspawn, and halt_orphans() what it leaves. */
        if (attached < 0)
                (void) syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, NULL, 0);

        bool ready = false;
        _cleanup_(pod_liveness_done) PodLiveness live;
        pod_liveness_init(&live, watchdog_usec);
        for (;;) {
                struct pollfd fds[] = { { pidfd, POLLIN, 0 }, { sfd, POLLIN, 0 }, { notify, POLLIN, 0 } };
                if (poll(fds, notify >= 0 ? 3 : 2, pod_liveness_poll_timeout(&live)) < 0) {
                        if (errno == EINTR)
                                continue;
                        /* Cannot supervise: halt the pod and wait for it. */
                        (void) syscall(SYS_pidfd_send_signal, pidfd, SIGTERM, NULL, 0);
                        break;
                }
                if (fds[0].revents)
                        break;
                struct signalfd_siginfo si;
                /* Both halt the pod in order (nspawn asks its systemd to);
                 * a Ctrl-C that reaches nspawn too asks twice, harmlessly. */
                if ((fds[1].revents & POLLIN) && read(sfd, &si, sizeof(si)) == sizeof(si) && si.ssi_signo != SIGCHLD)
                        (void) syscall(SYS_pidfd_send_signal, pidfd, si.ssi_signo, NULL, 0);
                /* Only nspawn, our child, is heard: the kernel's word on
                 * the sender. */
                char msg[NOTIFY_MESSAGE_MAX];
                if (notify >= 0 && (fds[2].revents & POLLIN) && notify_socket_read_from(notify, pid, msg) > 0)
                        relay(msg, &ready);
                reap_orphans(pid);
                if (pod_liveness_check(&live, pid) == -ETIMEDOUT) {
                        /* SIGKILL to its PID 1 ends the pod; nspawn exits. */
                        fprintf(stderr, "the pod's systemd has not answered for %llu ms: killing the pod\n",
                                (unsigned long long) (watchdog_usec / 1000));
                        pid_t leader = pod_first_child(pid);
                        _cleanup_close_ int leader_fd = leader > 0 ? (int) syscall(SYS_pidfd_open, leader, 0) : -1;
                        if (leader_fd < 0 || syscall(SYS_pidfd_send_signal, leader_fd, SIGKILL, NULL, 0) < 0)
                                (void) syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, NULL, 0);
                        live.pod_usec = live.host_usec = 0;
                }
        }
        int status;
        while (waitpid(pid, &status, 0) < 0)
                if (errno != EINTR)
                        return error_sys(err, -errno, "waiting for %s", program);
        if (foreground)
                terminal_give(getpgrp());
        halt_orphans(program);
        if (attached < 0)
                return attached;
        /* A pod whose apps all ended well while it booted (a quick job)
         * exited before it was ready: that is a success, not a service
         * that broke its protocol (pod@.service's Result=protocol) or a
         * launch that failed. */
        if (notify >= 0 && !ready && WIFEXITED(status) && WEXITSTATUS(status) == 0)
                (void) sd_notify(false, "READY=1");
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}
