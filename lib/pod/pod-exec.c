/* SPDX-License-Identifier: Apache-2.0 */
#include <fcntl.h>
#include <linux/magic.h>
#include <linux/openat2.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>

#include "basic/fs.h"
#include "basic/relay.h"
#include "basic/time-util.h"
#include "bus/bus-util.h"
#include "pod/pod-exec.h"

/* The signals a caller at a terminal sends the command it waits for. */
static const int forwarded_signals[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT };

/* The pod's systemd answers; a hostile one may not. How long its jobs may
 * take, and how many interrupts pass to the command before we stop waiting
 * for it (a SIGHUP, the caller's terminal gone, stops at once). */
#define EXEC_START_TIMEOUT_USEC (30 * USEC_PER_SEC)
#define EXEC_STOP_TIMEOUT_USEC (10 * USEC_PER_SEC)
#define EXEC_INTERRUPTS_MAX 3

/* What the command's standard input, output and error are (pod-exec.h):
 * the fds passed over the bus, or the path of its pty in the pod; and the
 * relay that copies between the caller's side and the pod's. */
typedef struct ExecStdio {
        int fd[3];                      /* passed over the bus (tty_path NULL) */
        int own[3];                     /* the fds of fd[] that are ours to close */
        int pipe_src[3];                /* the read ends of stdout and stderr's pipes */
        char tty_path[32];              /* "/dev/pts/N" in the pod, or "" */
        int master;                     /* its master, ours */
        int slave;                      /* and a slave fd we hold (pod_pty_open()) */
        Relay relay;
        bool from_pod[RELAY_CHANNELS_MAX];
        int term_fd;                    /* the caller's terminal put in raw mode, or -1 */
        struct termios term_saved;
        int size_fd;                    /* the caller's terminal whose size the pty follows, or -1 */
} ExecStdio;

/* A new pty in the pod's own devpts, the one of its PID 1's /dev/pts,
 * where the pod's systemd will open it by name. Everything on the way is
 * the pod's: the path is resolved in the pod's root; it must be a devpts,
 * whose own "ptmx" (no symlink, nothing mounted over it) is the only
 * thing opened, and what was opened must be a pty master. The slave is
 * handed to the pod's root: the pod may do with it what it likes, it is
 * its own; the caller's terminal never comes near it. */
static int pod_pty_open(pid_t leader, uid_t owner, char path[static 32], int *ret_slave, Error **err) {
        char root[64];
        snprintf(root, sizeof(root), "/proc/%d/root", (int) leader);
        _cleanup_close_ int root_fd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (root_fd < 0)
                return error_sys(err, -errno, "the pod's root");
        _cleanup_close_ int pts = pod_path_open(root_fd, "/dev/pts", O_PATH | O_DIRECTORY, 0);
        if (pts < 0)
                return error_sys(err, pts, "the pod's /dev/pts");
        struct statfs sfs;
        if (fstatfs(pts, &sfs) < 0)
                return error_sys(err, -errno, "the pod's /dev/pts");
        if (sfs.f_type != DEVPTS_SUPER_MAGIC)
                return error_set(err, -EMEDIUMTYPE, "the pod's /dev/pts is not a devpts file system");
        struct open_how how = {
                .flags = O_RDWR | O_NOCTTY | O_CLOEXEC | O_NONBLOCK,
                .resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV,
        };
        _cleanup_close_ int master = (int) syscall(SYS_openat2, pts, "ptmx", &how, sizeof(how));
        if (master < 0)
                return error_sys(err, -errno, "the pod's /dev/pts/ptmx");
        struct stat st;
        if (fstat(master, &st) < 0 || fstatfs(master, &sfs) < 0)
                return error_sys(err, -errno, "the pod's /dev/pts/ptmx");
        int unlock = 0, n = -1;
        if (!S_ISCHR(st.st_mode) || st.st_rdev != makedev(5, 2) || sfs.f_type != DEVPTS_SUPER_MAGIC ||
            ioctl(master, TIOCSPTLCK, &unlock) < 0 || ioctl(master, TIOCGPTN, &n) < 0 || n < 0)
                return error_set(err, -EMEDIUMTYPE, "the pod's /dev/pts/ptmx is not a pty multiplexer");
        /* The slave from the master itself, not by a name the pod could
         * swap: owned by the pod's root, so its systemd can open it and
         * give it to the command's user (devpts gave it our ids, which the
         * pod's user namespace does not map). Its group is devpts's gid=,
         * the pod's tty group. */
        _cleanup_close_ int slave = ioctl(master, TIOCGPTPEER, O_RDWR | O_NOCTTY | O_CLOEXEC);
        if (slave < 0 || fchown(slave, owner, (gid_t) -1) < 0)
                return error_sys(err, -errno, "the pod's pty %d", n);
        snprintf(path, 32, "/dev/pts/%d", n);
        /* Kept open by us (never read, never the pod's): with no slave
         * open, the master reads EIO, which would end the relay before the
         * pod's systemd has opened the pty, or between two openers. The
         * command's end is the unit's, not the pty's. */
        *ret_slave = TAKE_FD(slave);
        return TAKE_FD(master);
}

static void exec_stdio_done(ExecStdio *s) {
        if (s->term_fd >= 0)
                term_restore(s->term_fd, &s->term_saved);
        relay_done(&s->relay);
        for (int i = 0; i < 3; i++)
                if (s->own[i] >= 0)
                        close(s->own[i]);
        for (int i = 0; i < 3; i++)
                if (s->pipe_src[i] >= 0)
                        close(s->pipe_src[i]);
        if (s->master >= 0)
                close(s->master);
        if (s->slave >= 0)
                close(s->slave);
}

/* A pipe whose write end the command gets as fd i (stdout, stderr; the
 * caller's fd is relayed from its read end), or whose read end it gets as
 * stdin. */
static int relay_through_pipe(ExecStdio *s, int i) {
        int p[2];
        if (pipe2(p, O_CLOEXEC) < 0)
                return -errno;
        bool in = i == 0;
        s->fd[i] = s->own[i] = in ? p[0] : p[1];
        s->from_pod[s->relay.n] = !in;
        if (!in) {
                s->pipe_src[i] = p[0];
                return relay_add(&s->relay, p[0], i, false, -1);
        }
        int r = relay_add(&s->relay, 0, p[1], true, -1);
        if (r < 0)
                close(p[1]);    /* the relay's to close once added */
        return r;
}

/* POD_EXEC_SIZE_FD_ENV's fd, or -1: none given, or not a terminal. */
static int given_size_fd(void) {
        const char *v = getenv(POD_EXEC_SIZE_FD_ENV);
        char *end = NULL;
        long fd = v && *v ? strtol(v, &end, 10) : -1;
        if (!end || *end || fd < 3 || fd > 1024 || !isatty((int) fd))
                return -1;
        /* Ours alone: nothing we run after this gets it. */
        (void) fcntl((int) fd, F_SETFD, FD_CLOEXEC);
        return (int) fd;
}

static int exec_stdio_setup(ExecStdio *s, const PodExec *x, Error **err) {
        *s = (ExecStdio) {
                .fd = { 0, 1, 2 }, .own = { -1, -1, -1 }, .pipe_src = { -1, -1, -1 },
                .master = -1, .slave = -1, .term_fd = -1, .size_fd = -1,
        };
        bool term[3];
        for (int i = 0; i < 3; i++)
                term[i] = isatty(i);
        int r;
        if (x->tty) {
                r = pod_pty_open(x->leader, x->root_uid, s->tty_path, &s->slave, err);
                if (r < 0)
                        return error_prefix(err, "app %s", x->app);
                s->master = r;
                int given = given_size_fd();
                s->size_fd = given >= 0 ? given : term[1] ? 1 : term[0] ? 0 : term[2] ? 2 : -1;
                if (s->size_fd < 0 || term_copy_size(s->size_fd, s->master) < 0) {
                        /* No terminal to follow: the size a terminal has
                         * when nobody says. */
                        struct winsize ws = { .ws_row = 24, .ws_col = 80 };
                        (void) ioctl(s->master, TIOCSWINSZ, &ws);
                }
                /* Input: with interactive, at the end of a piped input the
                 * pty's end-of-file character, so the command reads EOF as
                 * from a terminal. */
                if (x->interactive) {
                        struct termios t;
                        int eof = !term[0] && tcgetattr(s->master, &t) >= 0 ? t.c_cc[VEOF] : -1;
                        s->from_pod[s->relay.n] = false;
                        if ((r = relay_add(&s->relay, 0, s->master, false, eof)) < 0)
                                return error_sys(err, r, "app %s: the terminal", x->app);
                }
                s->from_pod[s->relay.n] = true;
                if ((r = relay_add(&s->relay, s->master, 1, false, -1)) < 0)
                        return error_sys(err, r, "app %s: the terminal", x->app);
                if (x->interactive && term[0]) {
                        if ((r = term_make_raw(0, &s->term_saved)) < 0)
                                return error_sys(err, r, "app %s: cannot set the terminal to raw mode", x->app);
                        s->term_fd = 0;
                }
                return 0;
        }
        if (term[0] && !x->interactive) {
                s->fd[0] = s->own[0] = open("/dev/null", O_RDONLY | O_CLOEXEC | O_NOCTTY);
                if (s->fd[0] < 0)
                        return error_sys(err, -errno, "/dev/null");
        }
        for (int i = 0; i < 3; i++)
                if (term[i] && (i > 0 || x->interactive) && (r = relay_through_pipe(s, i)) < 0)
                        return error_sys(err, r, "app %s: a pipe for its fd %d", x->app, i);
        return 0;
}

/* StartTransientUnit(name, "fail", properties, aux): the command, its
 * stdio (fds, which sd-bus duplicates into the message, or its pty in the
 * pod) and extra environment. Everything else comes from the template's
 * drop-in. */
static int append_properties(sd_bus_message *m, const char *unit, const PodExec *x, const ExecStdio *s) {
        int r = sd_bus_message_append(m, "ss", unit, "fail");
        if (r < 0 || (r = sd_bus_message_open_container(m, 'a', "(sv)")) < 0)
                return r;
        if ((r = sd_bus_message_append(m, "(sv)", "Description", "s", "sdpod enter / podapp exec")) < 0 ||
            /* The unit keeps how it ended until we have read it (AddRef=
             * would tie that to our connection, but systemd refuses it on
             * a direct one): active (exited) or failed, until we stop or
             * reset it. */
            (r = sd_bus_message_append(m, "(sv)", "RemainAfterExit", "b", 1)) < 0)
                return r;
        if (s->tty_path[0]) {
                /* Opened by the pod's systemd as the command's controlling
                 * terminal ("tty": it is new, nobody else controls it). */
                if ((r = sd_bus_message_append(m, "(sv)", "TTYPath", "s", s->tty_path)) < 0 ||
                    (r = sd_bus_message_append(m, "(sv)", "StandardInput", "s", "tty")) < 0 ||
                    (r = sd_bus_message_append(m, "(sv)", "StandardOutput", "s", "tty")) < 0 ||
                    (r = sd_bus_message_append(m, "(sv)", "StandardError", "s", "tty")) < 0)
                        return r;
        } else if ((r = sd_bus_message_append(m, "(sv)", "StandardInputFileDescriptor", "h", s->fd[0])) < 0 ||
                   (r = sd_bus_message_append(m, "(sv)", "StandardOutputFileDescriptor", "h", s->fd[1])) < 0 ||
                   (r = sd_bus_message_append(m, "(sv)", "StandardErrorFileDescriptor", "h", s->fd[2])) < 0)
                return r;
        if (x->environment && x->environment[0]) {
                if ((r = sd_bus_message_open_container(m, 'r', "sv")) < 0 ||
                    (r = sd_bus_message_append(m, "s", "Environment")) < 0 ||
                    (r = sd_bus_message_open_container(m, 'v', "as")) < 0 ||
                    (r = sd_bus_message_append_strv(m, (char **) x->environment)) < 0 ||
                    (r = sd_bus_message_close_container(m)) < 0 || (r = sd_bus_message_close_container(m)) < 0)
                        return r;
        }
        /* ExecStartEx: a(sasas), one command: path, argv, flags. The
         * arguments are the caller's, verbatim: systemd would expand $VAR
         * in them but for "no-env-expand". The command is a domain of its
         * own, as each of the app's (app-unit.h): APP_DOMAIN_IN_APP runs
         * it, with its path and argv as arguments. */
        if ((r = sd_bus_message_open_container(m, 'r', "sv")) < 0 ||
            (r = sd_bus_message_append(m, "s", "ExecStartEx")) < 0 ||
            (r = sd_bus_message_open_container(m, 'v', "a(sasas)")) < 0 ||
            (r = sd_bus_message_open_container(m, 'a', "(sasas)")) < 0 ||
            (r = sd_bus_message_open_container(m, 'r', "sasas")) < 0 ||
            (r = sd_bus_message_append(m, "s", APP_DOMAIN_IN_APP)) < 0 ||
            (r = sd_bus_message_open_container(m, 'a', "s")) < 0 ||
            (r = sd_bus_message_append(m, "ss", APP_DOMAIN_IN_APP, x->path)) < 0)
                return r;
        for (char *const *a = x->argv; *a; a++)
                if ((r = sd_bus_message_append(m, "s", *a)) < 0)
                        return r;
        if ((r = sd_bus_message_close_container(m)) < 0 ||
            (r = sd_bus_message_append(m, "as", 1, "no-env-expand")) < 0)
                return r;
        for (int i = 0; i < 5; i++)
                if ((r = sd_bus_message_close_container(m)) < 0)
                        return r;
        return sd_bus_message_append(m, "a(sa(sv))", 0);
}

static int on_properties_changed(sd_bus_message *m, void *userdata, sd_bus_error *e) {
        *(bool *) userdata = true;
        return 0;
}

static bool unit_has_ended(const UnitState *st) {
        return streq(st->active_state, "inactive") || streq(st->active_state, "failed") ||
               (streq(st->active_state, "active") && streq(st->sub_state, "exited"));
}

/* Lets the pod's systemd forget the unit, now that we know how it ended. */
static void forget_unit(sd_bus *bus, const char *unit) {
        UnitState st;
        BusJob job;
        if (bus_unit_state(bus, unit, &st, NULL) < 0)
                return;
        if (streq(st.active_state, "failed"))
                (void) bus_unit_reset_failed(bus, unit, NULL);
        else if (streq(st.active_state, "active") && bus_job_start(bus, "StopUnit", unit, "replace", &job, NULL) >= 0) {
                (void) bus_job_wait(&job, EXEC_STOP_TIMEOUT_USEC, NULL);
                bus_job_done(&job);
        }
}

/* Waits until unit has ended, relaying its stdio meanwhile; a signal of
 * forwarded_signals that arrives (on sigfd) goes to its main process, a
 * SIGWINCH passes the caller's window size on to the pty. */
static int wait_for_end(sd_bus *bus, const char *unit, int sigfd, ExecStdio *s, Error **err) {
        _cleanup_free_ char *path = bus_unit_path(unit);
        _cleanup_(sd_bus_slot_unrefp) sd_bus_slot *slot = NULL;
        bool changed = true;
        int r = path ? sd_bus_match_signal(bus, &slot, NULL, path, "org.freedesktop.DBus.Properties",
                                           "PropertiesChanged", on_properties_changed, &changed)
                     : -ENOMEM;
        if (r < 0)
                return error_sys(err, r, "%s", unit);
        unsigned interrupts = 0;
        for (;;) {
                if (changed) {
                        UnitState st;
                        changed = false;
                        if ((r = bus_unit_state(bus, unit, &st, err)) < 0)
                                return r;
                        if (unit_has_ended(&st))
                                return 0;
                }
                if ((r = sd_bus_process(bus, NULL)) < 0)
                        return error_sys(err, r, "%s", unit);
                if (r > 0)
                        continue;
                struct pollfd p[2 + 2 * RELAY_CHANNELS_MAX] = {
                        { sd_bus_get_fd(bus), (short) sd_bus_get_events(bus), 0 },
                        { sigfd, POLLIN, 0 },
                };
                size_t n = 2 + relay_pollfds(&s->relay, p + 2);
                if (poll(p, n, -1) < 0 && errno != EINTR)
                        return error_sys(err, -errno, "%s", unit);
                struct signalfd_siginfo si;
                if ((p[1].revents & POLLIN) && read(sigfd, &si, sizeof(si)) == sizeof(si)) {
                        if (si.ssi_signo == SIGWINCH) {
                                if (s->size_fd >= 0)
                                        (void) term_copy_size(s->size_fd, s->master);
                        } else {
                                (void) bus_unit_kill(bus, unit, "main", (int) si.ssi_signo, NULL);
                                /* A command (or a pod) that ignores them
                                 * does not keep the caller here. */
                                if (si.ssi_signo == SIGHUP || ++interrupts >= EXEC_INTERRUPTS_MAX)
                                        return error_set(err, -ECANCELED, "%s: stopped waiting for it after %s", unit,
                                                         si.ssi_signo == SIGHUP ? "a SIGHUP" : "3 interrupts");
                        }
                }
                relay_process(&s->relay);
        }
}

bool pod_exec_instance_is_valid(const char *s) {
        size_t n = s ? strlen(s) : 0;
        return n > 0 && n < 32 && strspn(s, "abcdefghijklmnopqrstuvwxyz0123456789") == n;
}

int pod_exec(sd_bus *bus, const PodExec *x, int *ret_status, Error **err) {
        char id[32], unit[256];
        const char *given = getenv(POD_EXEC_INSTANCE_ENV);
        if (pod_exec_instance_is_valid(given))
                snprintf(id, sizeof(id), "%s", given);
        else
                random_name(id, sizeof(id), "");
        snprintf(unit, sizeof(unit), x->mode == APP_EXEC_AS_ROOT ? APP_ENTER_UNIT_FORMAT : APP_EXEC_UNIT_FORMAT,
                 x->app, id);

        /* The signals are ours to pass on from now: blocked, read from a
         * signalfd while we wait. */
        sigset_t mask, old;
        sigemptyset(&mask);
        for (size_t i = 0; i < ELEMENTSOF(forwarded_signals); i++)
                sigaddset(&mask, forwarded_signals[i]);
        if (x->tty)
                sigaddset(&mask, SIGWINCH);
        if (sigprocmask(SIG_BLOCK, &mask, &old) < 0)
                return error_sys(err, -errno, "app %s", x->app);
        /* A reader of ours that went away is EPIPE for the relay, not the
         * end of this process with the caller's terminal left raw. */
        struct sigaction ign = { .sa_handler = SIG_IGN }, old_pipe;
        sigaction(SIGPIPE, &ign, &old_pipe);
        _cleanup_close_ int sigfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL;
        BusJob job = {};
        ExecStdio s;
        int r = exec_stdio_setup(&s, x, err);
        if (r >= 0 && sigfd < 0)
                r = error_sys(err, -errno, "app %s: signalfd", x->app);
        if (r >= 0 && (r = bus_manager_new_call(bus, "StartTransientUnit", &m, err)) >= 0 &&
            (r = append_properties(m, unit, x, &s)) < 0)
                r = error_sys(err, r, "%s", unit);
        if (r >= 0 && (r = bus_job_start_call(bus, m, unit, &job, err)) >= 0) {
                r = bus_job_wait(&job, EXEC_START_TIMEOUT_USEC, err);
                bus_job_done(&job);
                /* A failed start job still tells how the command ended. */
                if (r == -EIO && err && *err)
                        error_free(TAKE_PTR(*err));
                r = r == -EIO ? 0 : r;
        }
        /* The pod's side of the pipes belongs to the pod's systemd now (the
         * message holds copies until it is freed): ours closed, the
         * relay sees EOF once the command and what it left have closed
         * theirs. */
        m = sd_bus_message_unref(m);
        for (int i = 0; i < 3; i++)
                if (s.own[i] >= 0)
                        s.own[i] = (close(s.own[i]), -1);
        if (r >= 0)
                r = wait_for_end(bus, unit, sigfd, &s, err);
        /* Our slave closed, the master reads EIO once the rest is read,
         * unless something of the pod's still holds the pty. */
        if (s.slave >= 0)
                s.slave = (close(s.slave), -1);
        if (r >= 0)
                relay_drain(&s.relay, s.from_pod, 100, 1000, 4U << 20);
        exec_stdio_done(&s);
        ServiceExit e;
        if (r >= 0 && (r = bus_service_exit(bus, unit, &e, err)) >= 0) {
                forget_unit(bus, unit);
                if (e.not_executed)
                        r = error_set(err, -EPROTO, "app %s: the command could not be run (status %d, %s: a step of "
                                      "systemd before it failed, see the pod's journal)",
                                      x->app, e.exit_status, e.result);
                else if (!e.exited)
                        r = error_set(err, -EPROTO, "app %s: the command did not run (%s)", x->app, e.result);
                else
                        *ret_status = e.exit_status;
        }
        sigaction(SIGPIPE, &old_pipe, NULL);
        sigprocmask(SIG_SETMASK, &old, NULL);
        return r;
}
