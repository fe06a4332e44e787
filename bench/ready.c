/* SPDX-License-Identifier: Apache-2.0 */
/* sdpod-bench-ready [OPTIONS] [--] COMMAND [ARG...]
 *
 * Runs COMMAND and times it from the fork, for bench/pod-run. Two modes:
 *
 *   default   time to COMMAND's exit
 *   --ready   COMMAND gets NOTIFY_SOCKET, a datagram socket of ours (what
 *             systemd-nspawn --notify-ready=yes reports READY=1 to); time to
 *             READY=1, then COMMAND is sent a signal (SIGTERM) and the time
 *             from the signal to its exit is measured too
 *
 * Results go to stdout as "KEY VALUE" lines (ready_us is printed and flushed
 * as soon as READY=1 arrives, the rest at the end):
 *
 *   ready_us N   fork to READY=1
 *   stop_us N    the stop signal to COMMAND's exit
 *   exit_us N    fork to COMMAND's exit
 *   status N     COMMAND's exit status, or 128 + the signal that killed it
 *   strays N     descendants still running when COMMAND exited (a container
 *                runtime's monitor, say), waited for and reaped
 *   killed N     processes that had to be killed with SIGKILL
 *   failed WHY   when something went wrong: ready-timeout, exited-before-ready,
 *                exited-before-stop, timeout, stop-timeout, strays-killed,
 *                interrupted or error (the message is on stderr)
 *
 * The helper is a child subreaper, so every process COMMAND leaves behind
 * becomes its child: none outlives it. Whatever goes wrong (a timeout,
 * COMMAND exiting before READY=1, SIGINT or SIGTERM to the helper), COMMAND
 * is sent the stop signal (once more if it already had it), given the grace
 * period, and then it and every other descendant are killed and reaped.
 *
 * COMMAND's stdin is /dev/null, its stdout and stderr the helper's stderr
 * (or --log=FILE), so stdout holds only the figures.
 *
 * Exit status: 0 when everything asked for was measured, whatever COMMAND's
 * own status (read "status"); 1 when not; 2 on a usage error; 130 when
 * interrupted. */

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "basic/macro.h"
#include "basic/time-util.h"

#define PROG "sdpod-bench-ready"

static uint64_t mono_usec(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * USEC_PER_SEC + (uint64_t) ts.tv_nsec / 1000;
}

/* t + d, saturating: --timeout=1000000d means "no timeout". */
static uint64_t after(uint64_t t, uint64_t d) {
        return d > UINT64_MAX - t ? UINT64_MAX : t + d;
}

_printf_(1, 2) static void warnx_(const char *fmt, ...) {
        va_list ap;
        int saved = errno; /* for %m */
        fputs(PROG ": ", stderr);
        errno = saved;
        va_start(ap, fmt);
        vfprintf(stderr, fmt, ap);
        va_end(ap);
        fputc('\n', stderr);
}

enum stop_mode { STOP_AT_ONCE, STOP_ON_STDIN };

static struct {
        bool ready;
        enum stop_mode stop;
        int signal;
        uint64_t timeout_usec;
        uint64_t stop_timeout_usec; /* UINT64_MAX: timeout_usec */
        uint64_t grace_usec;
        const char *log;
        char **argv;
} arg = {
        .signal = SIGTERM,
        .timeout_usec = 60 * USEC_PER_SEC,
        .stop_timeout_usec = UINT64_MAX,
        .grace_usec = 10 * USEC_PER_SEC,
};

/* Everything the event loop and the clean-up need. */
static struct {
        int sigfd;              /* SIGCHLD, SIGINT, SIGTERM, SIGHUP */
        int notify_fd;          /* -1 unless --ready */
        char notify_dir[128];   /* holds the socket "notify"; "" if none */
        char notify_path[160];
        pid_t main_pid;         /* 0 once reaped */
        uint64_t t_fork, t_ready, t_signal, t_exit;
        int status;             /* of COMMAND, as for the shell */
        unsigned strays, killed;
        int interrupted;        /* the signal the helper itself got, or 0 */
        bool broken;            /* waiting failed (poll) */
} st = { .sigfd = -1, .notify_fd = -1 };

static void help(void) {
        printf("Usage: " PROG " [OPTIONS] [--] COMMAND [ARG...]\n"
               "\n"
               "Runs COMMAND and prints, as KEY VALUE lines, the microseconds from the fork\n"
               "to its exit (exit_us), its status and what it left running (strays, killed).\n"
               "\n"
               "  --ready           set NOTIFY_SOCKET for COMMAND, time the fork to READY=1\n"
               "                    (ready_us), then send it the stop signal and time its\n"
               "                    exit (stop_us)\n"
               "  --stop=now|stdin  after READY=1, signal at once (default) or when a line\n"
               "                    or end of file arrives on stdin\n"
               "  --signal=NUMBER   the stop signal (default 15, SIGTERM)\n"
               "  --timeout=TIME    longest wait for READY=1 and for the exit (default 60s)\n"
               "  --stop-timeout=TIME\n"
               "                    longest wait for the exit after the stop signal\n"
               "                    (default: --timeout)\n"
               "  --grace=TIME      how long what COMMAND leaves running, or COMMAND after\n"
               "                    a stop on error, may take to exit before SIGKILL (10s)\n"
               "  --log=FILE        append COMMAND's stdout and stderr to FILE (default:\n"
               "                    this program's stderr)\n"
               "\n"
               "TIME is a number of seconds or a duration such as 500ms or 2s.\n");
}

static int parse_args(int argc, char **argv) {
        enum { OPT_READY = 0x100, OPT_STOP, OPT_SIGNAL, OPT_TIMEOUT, OPT_STOP_TIMEOUT, OPT_GRACE, OPT_LOG, OPT_HELP };
        static const struct option options[] = {
                { "ready", no_argument, NULL, OPT_READY },
                { "stop", required_argument, NULL, OPT_STOP },
                { "signal", required_argument, NULL, OPT_SIGNAL },
                { "timeout", required_argument, NULL, OPT_TIMEOUT },
                { "stop-timeout", required_argument, NULL, OPT_STOP_TIMEOUT },
                { "grace", required_argument, NULL, OPT_GRACE },
                { "log", required_argument, NULL, OPT_LOG },
                { "help", no_argument, NULL, OPT_HELP },
                {}
        };
        int c;
        /* "+": options end at COMMAND, whose own options are its business. */
        while ((c = getopt_long(argc, argv, "+", options, NULL)) >= 0) {
                switch (c) {
                case OPT_READY:
                        arg.ready = true;
                        break;
                case OPT_STOP:
                        if (streq(optarg, "now"))
                                arg.stop = STOP_AT_ONCE;
                        else if (streq(optarg, "stdin"))
                                arg.stop = STOP_ON_STDIN;
                        else {
                                warnx_("--stop=%s: expected now or stdin", optarg);
                                return -EINVAL;
                        }
                        break;
                case OPT_SIGNAL: {
                        char *end;
                        errno = 0;
                        long v = strtol(optarg, &end, 10);
                        if (errno || end == optarg || *end || v < 1 || v > SIGRTMAX || v == SIGKILL) {
                                warnx_("--signal=%s: expected a signal number other than 9", optarg);
                                return -EINVAL;
                        }
                        arg.signal = (int) v;
                        break;
                }
                case OPT_TIMEOUT:
                case OPT_STOP_TIMEOUT:
                case OPT_GRACE: {
                        uint64_t *v = c == OPT_TIMEOUT ? &arg.timeout_usec :
                                      c == OPT_STOP_TIMEOUT ? &arg.stop_timeout_usec : &arg.grace_usec;
                        if (parse_duration(optarg, v) < 0 || *v == UINT64_MAX) {
                                warnx_("--%s=%s: expected a duration",
                                       c == OPT_TIMEOUT ? "timeout" : c == OPT_STOP_TIMEOUT ? "stop-timeout" : "grace",
                                       optarg);
                                return -EINVAL;
                        }
                        break;
                }
                case OPT_LOG:
                        arg.log = optarg;
                        break;
                case OPT_HELP:
                        help();
                        exit(EXIT_SUCCESS);
                default:
                        return -EINVAL;
                }
        }
        if (optind >= argc) {
                warnx_("no command given (try --help)");
                return -EINVAL;
        }
        if (arg.stop == STOP_ON_STDIN && !arg.ready) {
                warnx_("--stop=stdin needs --ready");
                return -EINVAL;
        }
        if (arg.stop_timeout_usec == UINT64_MAX)
                arg.stop_timeout_usec = arg.timeout_usec;
        arg.argv = argv + optind;
        return 0;
}

/* The socket COMMAND reports to, in a directory of its own so that nobody
 * else's file is in the way and removing it is safe. */
static int notify_socket_open(void) {
        const char *tmp = getenv("TMPDIR");
        if (!tmp || !*tmp)
                tmp = "/tmp";
        if ((size_t) snprintf(st.notify_dir, sizeof(st.notify_dir), "%s/" PROG ".XXXXXX", tmp) >=
            sizeof(st.notify_dir)) {
                st.notify_dir[0] = 0;
                warnx_("TMPDIR=%s: too long for a socket path", tmp);
                return -ENAMETOOLONG;
        }
        if (!mkdtemp(st.notify_dir)) {
                int r = -errno;
                warnx_("cannot create a directory in %s: %s", tmp, strerror(-r));
                st.notify_dir[0] = 0;
                return r;
        }
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        int n = snprintf(st.notify_path, sizeof(st.notify_path), "%s/notify", st.notify_dir);
        if (n < 0 || (size_t) n >= sizeof(sa.sun_path)) {
                warnx_("%s/notify: too long for a socket path", st.notify_dir);
                return -ENAMETOOLONG;
        }
        memcpy(sa.sun_path, st.notify_path, (size_t) n + 1);

        st.notify_fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (st.notify_fd < 0) {
                int r = -errno;
                warnx_("socket(AF_UNIX, SOCK_DGRAM): %s", strerror(-r));
                return r;
        }
        if (bind(st.notify_fd, (struct sockaddr *) &sa, sizeof(sa)) < 0) {
                int r = -errno;
                warnx_("bind %s: %s", st.notify_path, strerror(-r));
                return r;
        }
        return 0;
}

static void notify_socket_remove(void) {
        if (st.notify_fd >= 0)
                close(TAKE_FD(st.notify_fd));
        if (st.notify_dir[0]) {
                if (unlink(st.notify_path) < 0 && errno != ENOENT)
                        warnx_("cannot remove %s: %m", st.notify_path);
                if (rmdir(st.notify_dir) < 0)
                        warnx_("cannot remove %s: %m", st.notify_dir);
                st.notify_dir[0] = 0;
        }
}

/* Reads every pending datagram; true once one held a line "READY=1". File
 * descriptors someone passed along (FDSTORE=1) are closed. */
static bool notify_read_ready(void) {
        bool ready = false;
        for (;;) {
                char buf[4097];
                char control[CMSG_SPACE(sizeof(int) * 253)];
                struct iovec iov = { .iov_base = buf, .iov_len = sizeof(buf) - 1 };
                struct msghdr mh = {
                        .msg_iov = &iov, .msg_iovlen = 1,
                        .msg_control = control, .msg_controllen = sizeof(control),
                };
                ssize_t n = recvmsg(st.notify_fd, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
                if (n < 0) {
                        if (errno != EAGAIN && errno != EINTR)
                                warnx_("reading %s: %m, ignoring", st.notify_path);
                        return ready;
                }
                for (struct cmsghdr *cm = CMSG_FIRSTHDR(&mh); cm; cm = CMSG_NXTHDR(&mh, cm))
                        if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS) {
                                int *fds = (int *) CMSG_DATA(cm);
                                size_t nfds = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
                                for (size_t i = 0; i < nfds; i++)
                                        close(fds[i]);
                        }
                buf[n] = 0;
                for (char *line = buf, *next; line; line = next) {
                        next = strchr(line, '\n');
                        if (next)
                                *next++ = 0;
                        if (streq(line, "READY=1"))
                                ready = true;
                }
        }
}

/* The PIDs of our children (COMMAND, and what was reparented to us), into
 * pids[]; returns how many, at most max, or -errno. */
static int list_children(pid_t *pids, int max) {
        char path[64];
        snprintf(path, sizeof(path), "/proc/self/task/%d/children", (int) getpid());
        _cleanup_fclose_ FILE *f = fopen(path, "re");
        if (!f)
                return -errno;
        int n = 0, pid;
        while (n < max && fscanf(f, "%d", &pid) == 1)
                pids[n++] = pid;
        return n;
}

static int status_of(const siginfo_t *si) {
        return si->si_code == CLD_EXITED ? si->si_status : 128 + si->si_status;
}

/* Reaps every child that has exited, recording COMMAND's end. Returns true
 * if some child was reaped. */
static bool reap(void) {
        bool any = false;
        for (;;) {
                siginfo_t si = {};
                if (waitid(P_ALL, 0, &si, WEXITED | WNOHANG) < 0 || si.si_pid == 0)
                        return any;
                any = true;
                if (si.si_pid == st.main_pid) {
                        st.t_exit = mono_usec();
                        st.status = status_of(&si);
                        st.main_pid = 0;
                } else if (st.main_pid == 0)
                        st.strays++;
        }
}

/* SIGKILLs and reaps every child until none is left; each one reaped here
 * counts as killed. Killing a child whose
 * descendants then get reparented to us leads to them in the next pass; a
 * PID namespace's init takes its namespace with it. A PID is only killed
 * while it is our unreaped child, so it cannot have been reused. */
static void kill_all(void) {
        for (;;) {
                pid_t pids[256];
                int n = list_children(pids, (int) ELEMENTSOF(pids));
                if (n < 0) {
                        /* Without /proc, COMMAND at least. */
                        if (st.main_pid > 0)
                                (void) kill(st.main_pid, SIGKILL);
                } else
                        for (int i = 0; i < n; i++)
                                (void) kill(pids[i], SIGKILL);
                siginfo_t si = {};
                /* Blocks until one exits: every child was just killed. */
                if (waitid(P_ALL, 0, &si, WEXITED) < 0) {
                        if (errno == EINTR)
                                continue;
                        return; /* ECHILD: nothing left */
                }
                st.killed++;
                if (si.si_pid == st.main_pid) {
                        st.t_exit = mono_usec();
                        st.status = status_of(&si);
                        st.main_pid = 0;
                }
        }
}

static bool have_children(void) {
        siginfo_t si = {};
        /* WNOWAIT: only look. ECHILD means none. */
        return waitid(P_ALL, 0, &si, WEXITED | WNOHANG | WNOWAIT) == 0;
}

enum wake { WAKE_TIMEOUT, WAKE_CHILD, WAKE_READY, WAKE_STDIN, WAKE_INTERRUPT };

/* Waits until deadline for one of: a child exited (always), READY=1 (if
 * want_ready), stdin readable (if want_stdin), or a signal to us. The notify
 * socket is drained all along, so that nothing waits on a message of ours
 * (systemd-notify's barrier waits for its file descriptor to be closed). */
static enum wake wait_for(uint64_t deadline, bool want_ready, bool want_stdin) {
        for (;;) {
                struct pollfd p[3] = {
                        { .fd = st.sigfd, .events = POLLIN },
                        { .fd = st.notify_fd, .events = POLLIN },
                        { .fd = want_stdin ? STDIN_FILENO : -1, .events = POLLIN },
                };
                uint64_t now = mono_usec();
                if (now >= deadline)
                        return WAKE_TIMEOUT;
                uint64_t left_ms = (deadline - now + 999) / 1000;
                int r = poll(p, ELEMENTSOF(p), left_ms > INT32_MAX ? INT32_MAX : (int) left_ms);
                if (r < 0) {
                        if (errno == EINTR)
                                continue;
                        warnx_("poll: %m");
                        st.broken = true;
                        return WAKE_INTERRUPT;
                }
                if (p[1].revents && notify_read_ready() && want_ready) {
                        st.t_ready = mono_usec();
                        return WAKE_READY;
                }
                if (p[0].revents) {
                        struct signalfd_siginfo si;
                        while (read(st.sigfd, &si, sizeof(si)) == sizeof(si))
                                if (si.ssi_signo != SIGCHLD) {
                                        st.interrupted = (int) si.ssi_signo;
                                        return WAKE_INTERRUPT;
                                }
                        if (reap())
                                return WAKE_CHILD;
                }
                if (p[2].revents)
                        return WAKE_STDIN;
        }
}

/* After an error: COMMAND gets the stop signal and the grace period, and
 * then, unless it had it before, the signal and the grace period once more:
 * systemd-nspawn takes a second SIGTERM as "terminate the container now" and
 * still cleans up after itself, which it cannot when killed. Then whatever
 * is left is killed. */
static void stop_on_error(void) {
        for (int i = st.t_signal ? 1 : 0; i < 2 && st.main_pid > 0; i++) {
                if (i == 0)
                        st.t_signal = mono_usec();
                else
                        warnx_("sending signal %d to %s again", arg.signal, arg.argv[0]);
                (void) kill(st.main_pid, arg.signal);
                uint64_t deadline = after(mono_usec(), arg.grace_usec);
                enum wake w = WAKE_CHILD;
                while (st.main_pid > 0 && w != WAKE_TIMEOUT && w != WAKE_INTERRUPT)
                        w = wait_for(deadline, false, false);
                if (w == WAKE_INTERRUPT)
                        break;
        }
        kill_all();
}

/* Once COMMAND has exited: what it left running gets the grace period to
 * exit by itself, then is killed. */
static void wait_for_strays(void) {
        uint64_t deadline = after(mono_usec(), arg.grace_usec);
        while (have_children()) {
                enum wake w = wait_for(deadline, false, false);
                if (w == WAKE_TIMEOUT || w == WAKE_INTERRUPT) {
                        pid_t pids[256];
                        int n = list_children(pids, (int) ELEMENTSOF(pids));
                        warnx_("%d process%s left by %s still running after the grace period, killing",
                               n, n == 1 ? "" : "es", arg.argv[0]);
                        kill_all();
                        return;
                }
        }
}

static _Noreturn void exec_child(const sigset_t *saved_mask, pid_t parent, int devnull, int out) {
        if (dup2(devnull, STDIN_FILENO) < 0 || dup2(out, STDOUT_FILENO) < 0 || dup2(out, STDERR_FILENO) < 0)
                _exit(127);
        /* Should the helper die without cleaning up, COMMAND is told (and
         * if that already happened, there is no one to time it). */
        if (prctl(PR_SET_PDEATHSIG, arg.signal) < 0 || getppid() != parent)
                _exit(127);
        if (arg.ready) {
                if (setenv("NOTIFY_SOCKET", st.notify_path, 1) < 0)
                        _exit(127);
        } else
                unsetenv("NOTIFY_SOCKET");
        signal(SIGPIPE, SIG_DFL);
        sigprocmask(SIG_SETMASK, saved_mask, NULL);
        execvp(arg.argv[0], arg.argv);
        fprintf(stderr, PROG ": cannot execute %s: %m\n", arg.argv[0]);
        _exit(127);
}

static int run(void) {
        sigset_t mask, saved_mask;
        sigemptyset(&mask);
        sigaddset(&mask, SIGCHLD);
        sigaddset(&mask, SIGINT);
        sigaddset(&mask, SIGTERM);
        sigaddset(&mask, SIGHUP);
        /* A background job of a script starts with SIGINT ignored, and an
         * ignored signal never reaches the signalfd: Ctrl-C must stop us too. */
        signal(SIGINT, SIG_DFL);
        signal(SIGTERM, SIG_DFL);
        signal(SIGHUP, SIG_DFL);
        if (sigprocmask(SIG_BLOCK, &mask, &saved_mask) < 0)
                return warnx_("sigprocmask: %m"), 1;
        st.sigfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
        if (st.sigfd < 0)
                return warnx_("signalfd: %m"), 1;
        signal(SIGPIPE, SIG_IGN);
        /* Whatever COMMAND leaves behind becomes ours, to wait for or kill. */
        if (prctl(PR_SET_CHILD_SUBREAPER, 1) < 0)
                return warnx_("PR_SET_CHILD_SUBREAPER: %m"), 1;
        if (arg.ready && notify_socket_open() < 0)
                return 1;

        _cleanup_close_ int devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
        if (devnull < 0)
                return warnx_("/dev/null: %m"), 1;
        _cleanup_close_ int logfd = -1;
        if (arg.log) {
                logfd = open(arg.log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOCTTY, 0644);
                if (logfd < 0)
                        return warnx_("%s: %m", arg.log), 1;
        }
        fflush(NULL);

        pid_t self = getpid();
        st.t_fork = mono_usec();
        pid_t pid = fork();
        if (pid < 0)
                return warnx_("fork: %m"), 1;
        if (pid == 0)
                exec_child(&saved_mask, self, devnull, logfd >= 0 ? logfd : STDERR_FILENO);
        st.main_pid = pid;

        int ret = 0;
        const char *what = NULL, *failed = NULL; /* what failed, in words and as a token */
        if (arg.ready) {
                enum wake w;
                do
                        w = wait_for(after(st.t_fork, arg.timeout_usec), true, false);
                while (w == WAKE_CHILD && st.main_pid > 0);
                if (w == WAKE_READY) {
                        printf("ready_us %" PRIu64 "\n", st.t_ready - st.t_fork);
                        fflush(stdout);
                        if (arg.stop == STOP_ON_STDIN) {
                                /* A line or end of file; the line is not looked at. */
                                do
                                        w = wait_for(UINT64_MAX, false, true);
                                while (w == WAKE_CHILD && st.main_pid > 0);
                                if (w == WAKE_STDIN) {
                                        char line[256];
                                        (void) !read(STDIN_FILENO, line, sizeof(line));
                                }
                        }
                        if (st.main_pid > 0 && w != WAKE_INTERRUPT) {
                                st.t_signal = mono_usec();
                                if (kill(st.main_pid, arg.signal) < 0)
                                        warnx_("kill %d: %m", (int) st.main_pid);
                        } else if (st.main_pid == 0) {
                                what = "exited before it was sent the stop signal";
                                failed = "exited-before-stop";
                        }
                } else if (w == WAKE_TIMEOUT) {
                        what = "sent no READY=1 within the timeout";
                        failed = "ready-timeout";
                } else if (st.main_pid == 0) {
                        what = "exited before READY=1";
                        failed = "exited-before-ready";
                }
        }
        /* Now COMMAND's exit: it was signalled, or it ends by itself. */
        if (!what && !st.interrupted) {
                uint64_t deadline = st.t_signal ? after(st.t_signal, arg.stop_timeout_usec)
                                                : after(st.t_fork, arg.timeout_usec);
                while (st.main_pid > 0) {
                        enum wake w = wait_for(deadline, false, false);
                        if (w == WAKE_TIMEOUT) {
                                what = st.t_signal ? "did not exit within the timeout after the stop signal"
                                                   : "did not exit within the timeout";
                                failed = st.t_signal ? "stop-timeout" : "timeout";
                                break;
                        }
                        if (w == WAKE_INTERRUPT)
                                break;
                }
        }
        if (what || st.interrupted || st.broken) {
                if (what)
                        warnx_("%s %s", arg.argv[0], what);
                if (st.interrupted)
                        warnx_("interrupted by signal %d, stopping %s", st.interrupted, arg.argv[0]);
                ret = st.interrupted ? 130 : 1;
                if (!failed)
                        failed = st.interrupted ? "interrupted" : "error";
                stop_on_error();
        } else {
                if (arg.ready)
                        printf("stop_us %" PRIu64 "\n", st.t_exit - st.t_signal);
                wait_for_strays();
                if (st.killed > 0) {
                        ret = st.interrupted ? 130 : 1;
                        failed = st.interrupted ? "interrupted" : "strays-killed";
                }
        }

        if (st.main_pid == 0) {
                printf("exit_us %" PRIu64 "\n", st.t_exit - st.t_fork);
                printf("status %d\n", st.status);
        }
        printf("strays %u\n", st.strays);
        printf("killed %u\n", st.killed);
        if (failed)
                printf("failed %s\n", failed);
        if (fflush(stdout) != 0) {
                warnx_("writing the results: %m");
                ret = ret ?: 1;
        }
        return ret;
}

int main(int argc, char **argv) {
        if (parse_args(argc, argv) < 0)
                return 2;
        int ret = run();
        notify_socket_remove();
        if (st.sigfd >= 0)
                close(st.sigfd);
        return ret;
}
