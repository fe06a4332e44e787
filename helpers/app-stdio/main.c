/* SPDX-License-Identifier: Apache-2.0 */
/* app-stdio: the first program of an app's unit (sdpod-stage1(7)), run by
 * the pod's systemd in the app's root, as the app, with all of its
 * confinement:
 *
 *   app-stdio PATH ARGV0 [ARG...]
 *
 * An app's stdout and stderr are journald's stream socket
 * (StandardOutput=journal+console), and a socket cannot be opened by path:
 * open("/dev/stdout"), "/dev/stderr" or "/proc/self/fd/1" fail with ENXIO,
 * and the many images that link their log files there (nginx, httpd) die
 * at start. This gives the app pipes in place of the sockets, as podman's
 * conmon does, and then execs PATH itself, so that the app stays the
 * unit's main process (its PID, exit status, signals, sd_notify and
 * watchdog pings are the app's, as before).
 *
 * The other end is copied by a relay, the app's sibling (a child of the
 * pod's PID 1), in the app's cgroup and confinement, to the very sockets the
 * pod's systemd connected: the journal sees the same streams as before,
 * with the app's SyslogIdentifier, unit, priority, level prefixes and
 * console forwarding. Stdout and stderr that were one socket stay one
 * pipe, so their lines keep their order.
 *
 * The relay ends when every writer has closed the pipes (the app and
 * whatever it started), so that nothing the app wrote is lost when it
 * exits; it ignores SIGTERM, so the app's last words after a stop are
 * relayed too, and the unit's SIGKILL at the end of TimeoutStopSec bounds
 * it. A journal that takes nothing for STALL_SEC does not hold the app for
 * ever: the relay keeps reading and drops what it cannot write, and says
 * how much once the journal reads again. Streams that are not sockets (the
 * files and FIFOs of --stdout/--stderr, a terminal) are left alone, and
 * then nothing is forked.
 *
 * Static, and only libc: the app's root has none of the stage1's
 * libraries. */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define STALL_SEC 30
#define BUF_SIZE (64 * 1024)

typedef struct {
        int in, out;         /* the pipe's read end, the socket */
        bool out_dead;       /* the socket failed: what comes is dropped */
        unsigned long long dropped;
        struct timespec stalled_since; /* 0: not stalled */
} Stream;

static void warn(const char *what, int e) {
        dprintf(STDERR_FILENO, "app-stdio: %s: %s\n", what, strerror(e));
}

static long long now_ms(void) {
        struct timespec t;
        clock_gettime(CLOCK_MONOTONIC, &t);
        return t.tv_sec * 1000LL + t.tv_nsec / 1000000;
}

static ssize_t send_some(Stream *s, const char *p, size_t n) {
        ssize_t w;
        do
                w = send(s->out, p, n, MSG_DONTWAIT | MSG_NOSIGNAL);
        while (w < 0 && errno == EINTR);
        return w;
}

/* Writes all of p to the stream's socket, waiting while it is full but no
 * longer than STALL_SEC in all since it last took anything; then drops. */
static void forward(Stream *s, const char *p, size_t n) {
        if (s->out_dead) {
                s->dropped += n;
                return;
        }
        if (s->dropped > 0 && !s->stalled_since.tv_sec) {
                char note[128];
                int k = snprintf(note, sizeof(note),
                                 "\nsdpod: %llu bytes of this app's output were dropped: the journal did not read them in %d s\n",
                                 s->dropped, STALL_SEC);
                if (send_some(s, note, k) == k)
                        s->dropped = 0;
        }
        long long since = 0;
        while (n > 0) {
                ssize_t w = send_some(s, p, n);
                if (w > 0) {
                        p += w;
                        n -= w;
                        since = 0;
                        s->stalled_since.tv_sec = 0;
                        continue;
                }
                if (w < 0 && errno != EAGAIN) {
                        s->out_dead = true;
                        break;
                }
                if (s->stalled_since.tv_sec)
                        break; /* still stalled from before: drop at once */
                if (!since)
                        since = now_ms();
                long long left = STALL_SEC * 1000LL - (now_ms() - since);
                if (left <= 0) {
                        clock_gettime(CLOCK_MONOTONIC, &s->stalled_since);
                        break;
                }
                struct pollfd pf = { .fd = s->out, .events = POLLOUT };
                (void) poll(&pf, 1, (int) left);
        }
        s->dropped += n;
}

static int cmp_int(const void *a, const void *b) {
        return *(const int *) a - *(const int *) b;
}

/* Closes every descriptor but the n in keep: the relay holds no stdin (a
 * FIFO's writer would never see it gone) and none of the app's others. */
static void close_all_but(int *keep, size_t n) {
        qsort(keep, n, sizeof(*keep), cmp_int);
        int from = 0;
        for (size_t i = 0; i < n; i++) {
                if (keep[i] > from)
                        close_range(from, keep[i] - 1, 0);
                from = keep[i] + 1;
        }
        close_range(from, ~0U, 0);
}

/* The signals the relay ignores: a stop's SIGTERM reaches it with the
 * app's, and it must outlive the app to relay its last words. */
static const int ignored[] = { SIGTERM, SIGINT, SIGHUP, SIGPIPE };
#define N_IGNORED (sizeof(ignored) / sizeof(ignored[0]))

static void relay(Stream *st, size_t n) {
        static char buf[BUF_SIZE];
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);

        struct pollfd pf[2];
        size_t open_n = n;
        for (size_t i = 0; i < n; i++)
                pf[i] = (struct pollfd) { .fd = st[i].in, .events = POLLIN };
        while (open_n > 0) {
                if (poll(pf, n, -1) < 0) {
                        if (errno == EINTR)
                                continue;
                        break;
                }
                for (size_t i = 0; i < n; i++) {
                        if (pf[i].fd < 0 || !pf[i].revents)
                                continue;
                        ssize_t r = read(st[i].in, buf, sizeof(buf));
                        if (r < 0 && (errno == EINTR || errno == EAGAIN))
                                continue;
                        if (r <= 0) {
                                /* Every writer is gone: all was read. What
                                 * was dropped is said if the journal reads
                                 * again by now. */
                                st[i].stalled_since.tv_sec = 0;
                                forward(&st[i], "", 0);
                                close(st[i].in);
                                pf[i].fd = -1;
                                open_n--;
                                continue;
                        }
                        forward(&st[i], buf, r);
                }
        }
}

int main(int argc, char **argv) {
        if (argc < 3) {
                dprintf(STDERR_FILENO, "usage: app-stdio PATH ARGV0 [ARG...]\n");
                return 127;
        }
        /* Which of stdout and stderr are sockets, and whether they are one. */
        struct stat s[2];
        bool sock[2];
        for (int i = 0; i < 2; i++)
                sock[i] = fstat(i + 1, &s[i]) == 0 && S_ISSOCK(s[i].st_mode);
        bool same = sock[0] && sock[1] && s[0].st_dev == s[1].st_dev && s[0].st_ino == s[1].st_ino;

        Stream st[2];
        int wr[2] = { -1, -1 }; /* the pipe each of fd 1 and 2 becomes */
        size_t n = 0;
        for (int i = 0; i < 2; i++) {
                if (!sock[i] || (i == 1 && same))
                        continue;
                int p[2];
                if (pipe2(p, O_CLOEXEC) < 0) {
                        /* Run the app as before rather than not at all. */
                        warn("pipe", errno);
                        for (size_t k = 0; k < n; k++)
                                close(st[k].in);
                        for (int k = 0; k < 2; k++)
                                if (wr[k] >= 0)
                                        close(wr[k]);
                        wr[0] = wr[1] = -1;
                        n = 0;
                        same = false;
                        break;
                }
                st[n] = (Stream) { .in = p[0], .out = i + 1 };
                wr[i] = p[1];
                n++;
        }
        if (same)
                wr[1] = wr[0];

        if (n > 0) {
                /* A sibling, not a child, of the app (CLONE_PARENT): the
                 * pod's systemd reaps it, and the app, which would not
                 * expect a child, never sees one; and one fork, not two. */
                /* Ignored before the relay exists: the app may exit and
                 * its unit send SIGTERM before the relay ran at all. The
                 * app gets its own dispositions back. */
                struct sigaction ign = { .sa_handler = SIG_IGN }, old[N_IGNORED];
                for (size_t i = 0; i < N_IGNORED; i++)
                        sigaction(ignored[i], &ign, &old[i]);
                pid_t pid = (pid_t) syscall(SYS_clone, CLONE_PARENT | SIGCHLD, 0, NULL, NULL, 0);
                if (pid != 0)
                        for (size_t i = 0; i < N_IGNORED; i++)
                                sigaction(ignored[i], &old[i], NULL);
                if (pid < 0) {
                        /* No task left (a --pids-limit of 1): the app
                         * runs as before, on the sockets, rather than
                         * not at all. */
                        warn("no relay for the app's output, /dev/stdout will not open: clone", errno);
                        n = 0;
                        wr[0] = wr[1] = -1;
                }
                if (pid == 0) {
                        int keep[4];
                        size_t k = 0;
                        for (size_t i = 0; i < n; i++) {
                                keep[k++] = st[i].in;
                                keep[k++] = st[i].out;
                        }
                        close_all_but(keep, k);
                        /* Named as what it is in ps and top, not as a
                         * second copy of the app's command line (its
                         * arguments are one block of memory). */
                        char *end = argv[argc - 1] + strlen(argv[argc - 1]);
                        memset(argv[0], 0, (size_t) (end - argv[0]));
                        strncpy(argv[0], "app-stdio (relay)", (size_t) (end - argv[0]));
                        (void) prctl(PR_SET_NAME, "app-stdio");
                        relay(st, n);
                        _exit(0);
                }
                for (int i = 0; i < 2; i++)
                        if (wr[i] >= 0 && dup2(wr[i], i + 1) < 0) {
                                warn("dup2", errno);
                                return 127;
                        }
                for (size_t i = 0; i < n; i++)
                        close(st[i].in);
                /* The pipes' originals are O_CLOEXEC: only fd 1 and 2 pass. */
        }
        execv(argv[1], argv + 2);
        int e = errno;
        dprintf(STDERR_FILENO, "app-stdio: %s: %s\n", argv[1], strerror(e));
        return e == ENOENT ? 127 : 126;
}
