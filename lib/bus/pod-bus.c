/* SPDX-License-Identifier: Apache-2.0 */
#include <fcntl.h>
#include <grp.h>
#include <linux/capability.h>
#include <linux/close_range.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>

#include "basic/fs.h"
#include "basic/time-util.h"
#include "bus/bus-util.h"
#include "bus/pod-bus.h"

static int cmp_int(const void *a, const void *b) {
        return *(const int *) a - *(const int *) b;
}

/* Closes every fd from 3 up but those of keep (n of them). */
static int close_all_but(int *keep, size_t n) {
        qsort(keep, n, sizeof(int), cmp_int);
        int from = 3;
        for (size_t i = 0; i < n; i++) {
                if (keep[i] < from)
                        continue;
                if (keep[i] > from && close_range((unsigned) from, (unsigned) keep[i] - 1, 0) < 0)
                        return -errno;
                from = keep[i] + 1;
        }
        return close_range((unsigned) from, ~0U, 0) < 0 ? -errno : 0;
}

/* In the child (not in the pod's pid namespace, so the pod never sees
 * it): enters every namespace of the pod's PID 1 (pidfd) at once, its
 * user namespace too when it has one of its own (userns), and only then
 * makes the one process the pod can see, which connects to the socket
 * target_fd (an O_PATH fd of it) and sends the connection over sock. The
 * pod's systemd takes private connections from its own root only. */
static int connect_and_send(int sock, int target_fd, int pidfd, bool userns) {
        /* Nothing of ours may be reachable from the pod through the
         * process it will see (issue 24): it is not dumpable (inherited
         * by the fork below), holds nothing but the fds it needs (stdio,
         * maybe the user's terminal, on /dev/null), and has the pod's
         * root for its root (setns of the mount namespace), so no
         * /proc/PID/root, cwd or fd of it leads to the host. */
        int null = open("/dev/null", O_RDWR | O_CLOEXEC);
        if (prctl(PR_SET_DUMPABLE, 0) < 0 || null < 0 || dup2(null, 0) < 0 || dup2(null, 1) < 0 || dup2(null, 2) < 0)
                return -errno;
        if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0)
                return -errno;
        int keep[] = { sock, target_fd, pidfd }, r = close_all_but(keep, ELEMENTSOF(keep));
        if (r < 0)
                return r;
        int types = CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS | CLONE_NEWCGROUP |
                    (userns ? CLONE_NEWUSER : 0);
        if (setns(pidfd, types) < 0)
                return -errno;
        close(pidfd);
        if (userns) {
                /* Root of the pod's user namespace: the host's root is
                 * nobody there, and no capability of the host's is left. */
                if (setgroups(0, NULL) < 0 || setresgid(0, 0, 0) < 0 || setresuid(0, 0, 0) < 0)
                        return -errno;
        } else {
                /* A pod without one has a root that may ptrace what it
                 * sees: what it sees has no capability at all. */
                struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
                struct __user_cap_data_struct d[2] = {};
                if (syscall(SYS_capset, &h, d) < 0)
                        return -errno;
        }
        pid_t child = fork();
        if (child < 0)
                return -errno;
        if (child == 0) {
                /* It ends with us: a caller that gives up on a pod that
                 * does not answer (and kills us) leaves nothing behind.
                 * We are outside its pid namespace: while we live, its
                 * parent is 0 to it (the pod's PID 1 once we are gone). */
                if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != 0)
                        _exit(EIO);
                /* In the pod's pid namespace: connect(2) to the inode
                 * itself, through the fd's magic link of the pod's /proc
                 * (a /proc the pod faked leads to a socket of its own:
                 * nothing else is reachable from here). */
                struct sockaddr_un sa = { .sun_family = AF_UNIX };
                snprintf(sa.sun_path, sizeof(sa.sun_path), "/proc/self/fd/%d", target_fd);
                /* Non-blocking: a socket the pod planted with a full
                 * backlog (listening, never accepting) blocks a connect(2)
                 * for ever. EAGAIN is that full backlog (a unix socket
                 * never answers EINPROGRESS): tried again until the
                 * caller's deadline kills our parent, and us with it. */
                int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
                if (fd < 0)
                        _exit(errno & 0xff);
                while (connect(fd, (struct sockaddr *) &sa, sizeof(sa)) < 0)
                        if (errno == EAGAIN || errno == EINTR)
                                (void) usleep(20 * 1000);
                        else
                                _exit(errno & 0xff);
                union { struct cmsghdr h; char buf[CMSG_SPACE(sizeof(int))]; } control = {};
                char byte = 0;
                struct iovec iov = { &byte, 1 };
                struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = &control,
                                     .msg_controllen = sizeof(control) };
                struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
                *c = (struct cmsghdr) { .cmsg_len = CMSG_LEN(sizeof(int)), .cmsg_level = SOL_SOCKET, .cmsg_type = SCM_RIGHTS };
                memcpy(CMSG_DATA(c), &fd, sizeof(int));
                _exit(sendmsg(sock, &mh, MSG_NOSIGNAL) < 0 ? errno & 0xff : 0);
        }
        int st;
        while (waitpid(child, &st, 0) < 0)
                if (errno != EINTR)
                        return -errno;
        return WIFEXITED(st) ? -WEXITSTATUS(st) : -EIO;
}

static int receive_fd(int sock, int *ret) {
        union { struct cmsghdr h; char buf[CMSG_SPACE(sizeof(int))]; } control = {};
        char byte;
        struct iovec iov = { &byte, 1 };
        struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = &control, .msg_controllen = sizeof(control) };
        ssize_t n;
        /* The child has exited: its message is there, or never will be. */
        while ((n = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC | MSG_DONTWAIT)) < 0 && errno == EINTR)
                ;
        if (n < 0)
                return -errno;
        struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
        if (n == 0 || !c || c->cmsg_type != SCM_RIGHTS || c->cmsg_len != CMSG_LEN(sizeof(int)))
                return -EPROTO;
        memcpy(ret, CMSG_DATA(c), sizeof(int));
        return 0;
}

/* The inode of a namespace of pid ("self" for ours). */
static int ns_ino(const char *pid, const char *type, ino_t *ret) {
        char path[64];
        struct stat st;
        snprintf(path, sizeof(path), "/proc/%s/ns/%s", pid, type);
        if (stat(path, &st) < 0)
                return -errno;
        *ret = st.st_ino;
        return 0;
}

/* Waits for child until deadline (monotonic), then kills it: it is in the
 * pod's namespaces, and what it waits for is the pod's. Reaps it either
 * way; -ETIMEDOUT when it had to be killed. */
static int wait_child_until(pid_t child, uint64_t deadline, int *ret_status) {
        _cleanup_close_ int pidfd = (int) syscall(SYS_pidfd_open, child, 0);
        int r = pidfd < 0 ? -errno : 0;
        while (pidfd >= 0) {
                uint64_t now = monotonic_usec();
                struct pollfd p = { pidfd, POLLIN, 0 };
                int k = now >= deadline ? 0 : poll(&p, 1, (int) ((deadline - now + 999) / 1000));
                if (k < 0 && errno == EINTR)
                        continue;
                if (k > 0)
                        break;
                (void) syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, NULL, 0);
                r = -ETIMEDOUT;
                break;
        }
        if (pidfd < 0)
                (void) kill(child, SIGKILL); /* our unreaped child: its number is still ours */
        while (waitpid(child, ret_status, 0) < 0)
                if (errno != EINTR)
                        return -errno;
        return r;
}

/* The connected socket, made by a grandchild in every namespace of
 * leader (user namespace included, when it has one of its own), by
 * deadline (monotonic): killing the child ends the grandchild too. */
static int connect_in_pid_namespace(pid_t leader, int target_fd, uint64_t deadline, int *ret) {
        char leader_s[16];
        snprintf(leader_s, sizeof(leader_s), "%d", (int) leader);
        _cleanup_close_ int pidfd = (int) syscall(SYS_pidfd_open, leader, 0);
        if (pidfd < 0)
                return -errno;
        ino_t own_userns = 0, pod_userns = 0;
        int r = ns_ino("self", "user", &own_userns);
        if (r < 0 || (r = ns_ino(leader_s, "user", &pod_userns)) < 0)
                return r;
        int pair[2];
        if (socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, pair) < 0)
                return -errno;
        _cleanup_close_ int ours = pair[0], theirs = pair[1];
        pid_t child = fork();
        if (child < 0)
                return -errno;
        if (child == 0)
                _exit(-connect_and_send(theirs, target_fd, pidfd, own_userns != pod_userns) & 0xff);
        close(theirs);
        theirs = -1;
        int st;
        if ((r = wait_child_until(child, deadline, &st)) < 0)
                return r;
        if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
                return WIFEXITED(st) ? -WEXITSTATUS(st) : -EIO;
        return receive_fd(ours, ret);
}

/* The pod's private socket, found inside the pod's root: a path through
 * /proc/PID/root would resolve a symlink the pod planted there against the
 * host's root, and lead us to a socket of the host's. Returns an O_PATH fd
 * of the socket. */
static int open_private_socket(pid_t leader, Error **err) {
        char root[64];
        snprintf(root, sizeof(root), "/proc/%d/root", (int) leader);
        _cleanup_close_ int root_fd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (root_fd < 0)
                return error_sys(err, -errno, "the pod's root %s", root);
        int fd = pod_path_open(root_fd, SYSTEMD_PRIVATE_SOCKET, O_PATH | O_NOFOLLOW, 0);
        struct stat st;
        if (fd >= 0 && (fstat(fd, &st) < 0 || !S_ISSOCK(st.st_mode))) {
                close(fd);
                return error_set(err, -ENOTSOCK, "the pod's %s is not a socket", SYSTEMD_PRIVATE_SOCKET);
        }
        return fd < 0 ? error_sys(err, fd, "the pod's %s", SYSTEMD_PRIVATE_SOCKET) : fd;
}

/* Waits until the pod's systemd has answered the connection's
 * authentication, by deadline: sd-bus itself would wait 90 s for a peer
 * that accepts and never answers (and a method call's timeout does not
 * bound that wait). */
static int wait_ready_until(sd_bus *bus, uint64_t deadline) {
        for (;;) {
                int r = sd_bus_is_ready(bus);
                if (r != 0)
                        return r < 0 ? r : 0;
                uint64_t now = monotonic_usec();
                if (now >= deadline)
                        return -ETIMEDOUT;
                if ((r = sd_bus_process(bus, NULL)) < 0)
                        return r;
                if (r > 0)
                        continue;
                int events = sd_bus_get_events(bus);
                struct pollfd p = { .fd = sd_bus_get_fd(bus), .events = (short) (events < 0 ? POLLIN : events) };
                if (p.fd < 0)
                        return p.fd;
                if (poll(&p, 1, (int) ((deadline - now + 999) / 1000)) < 0 && errno != EINTR)
                        return -errno;
        }
}

int pod_bus_open_within(pid_t leader, uint64_t timeout_usec, sd_bus **ret, Error **err) {
        uint64_t deadline = monotonic_usec() + timeout_usec;
        _cleanup_close_ int sock = open_private_socket(leader, err);
        if (sock < 0)
                return error_prefix(err, "cannot connect to the pod's systemd");
        int fd = -1;
        int r = connect_in_pid_namespace(leader, sock, deadline, &fd);
        if (r == -ETIMEDOUT)
                return error_set(err, r, "the pod's systemd did not take a connection at %s within %llu ms",
                                 SYSTEMD_PRIVATE_SOCKET, (unsigned long long) (timeout_usec / 1000));
        if (r < 0)
                return error_sys(err, r, "cannot connect to the pod's systemd at %s", SYSTEMD_PRIVATE_SOCKET);
        /* Closed without a flush on failure: a flush would wait for the
         * authentication we gave up on, another 90 s. */
        _cleanup_(sd_bus_close_unrefp) sd_bus *bus = NULL;
        if ((r = sd_bus_new(&bus)) < 0 || (r = sd_bus_set_fd(bus, fd, fd)) < 0) {
                close(fd);
                return error_sys(err, r, "bus");
        }
        /* Every call has a deadline, whatever $SYSTEMD_BUS_TIMEOUT says. */
        if ((r = sd_bus_set_method_call_timeout(bus, POD_BUS_CALL_TIMEOUT_USEC)) < 0 || (r = sd_bus_start(bus)) < 0)
                return error_sys(err, r, "cannot talk to the pod's systemd at %s", SYSTEMD_PRIVATE_SOCKET);
        r = wait_ready_until(bus, deadline);
        if (r == -ETIMEDOUT)
                return error_set(err, r, "the pod's systemd did not answer at %s within %llu ms",
                                 SYSTEMD_PRIVATE_SOCKET, (unsigned long long) (timeout_usec / 1000));
        if (r < 0)
                return error_sys(err, r, "cannot talk to the pod's systemd at %s", SYSTEMD_PRIVATE_SOCKET);
        *ret = TAKE_PTR(bus);
        return 0;
}

int pod_bus_open(pid_t leader, sd_bus **ret, Error **err) {
        return pod_bus_open_within(leader, POD_BUS_CONNECT_TIMEOUT_USEC, ret, err);
}
