/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* A command run in an app of a running pod (sdpod enter, podapp exec). It
 * is never run by the host tool: the pod's own systemd starts it, as a
 * transient instance of the app's exec template (app-unit.h), so it gets
 * what the app gets (root, user and working directory, the pod's user
 * namespace, the app's capability bounding set, system call filter,
 * NoNewPrivileges, protections and limits) and nothing of the caller's but
 * its standard input, output and error, passed over the bus. Every other
 * fd is closed by systemd, as for any service. */

#include <stdbool.h>
#include <sys/types.h>
#include <systemd/sd-bus.h>

#include "basic/error.h"
#include "unit/app-unit.h"

typedef struct PodExec {
        const char *app;
        AppExecMode mode;
        const char *path;               /* the program, absolute in the app's root */
        char *const *argv;              /* its arguments, argv[0] included */
        char *const *environment;       /* NAME=VALUE beside the app's (the caller's TERM) */
        bool tty;                       /* a new pty in the pod for the command (-t) */
        bool interactive;               /* the caller's input reaches it even when a terminal (-i) */
        pid_t leader;                   /* the pod's PID 1 (its /dev/pts), for tty */
        uid_t root_uid;                 /* the host's id of the pod's root: the pty's owner */
} PodExec;

/* What the command gets as standard input, output and error. Never an fd
 * of a terminal of the caller's: with one, the pod could inject input into
 * the caller's shell (TIOCSTI), change its settings, read what is typed
 * next, or keep it once the command has ended. Instead:
 *
 *   tty: a new pty of the pod's own devpts (its /dev/pts/N, opened by the
 *        pod's systemd as the command's controlling terminal, like a
 *        login); the host relays between its master and the caller's
 *        stdin (with interactive) and stdout, the caller's terminal in raw
 *        mode meanwhile, and passes the window size on, at start and on
 *        each SIGWINCH. Ctrl-C and Ctrl-Z are bytes for the pod's pty,
 *        whose line discipline signals its foreground job.
 *   else: stdin that is a terminal is relayed through a pipe with
 *        interactive, and is /dev/null without; stdout and stderr that are
 *        terminals are relayed through pipes. What is not a terminal (a
 *        pipe, a file) is passed as it is.
 *
 * The relay ends with the command: what is left in the pod's side is
 * copied for a moment (bounded in time and bytes), so that nothing in the
 * pod that still holds the pty or a pipe keeps the caller waiting. */

/* Runs x in the pod whose systemd is bus and waits until it has ended,
 * passing SIGINT, SIGTERM, SIGHUP and SIGQUIT on to it meanwhile.
 * *ret_status: its exit status, 128 + N when killed by signal N. A command
 * whose program systemd could not run (a step of its own before it
 * failed, 200-245 in systemd.exec(5)): -EPROTO, with the reason. */
int pod_exec(sd_bus *bus, const PodExec *x, int *ret_status, Error **err);

/* The instance of the command's unit (APP_EXEC_UNIT_FORMAT's second %s):
 * random, or, when the environment has POD_EXEC_INSTANCE_ENV set to 1-31
 * lowercase letters and digits, that. The containerd shim names it so, to
 * signal every process of the command (not only its relay, this process)
 * and to end the unit if this process dies first. */
#define POD_EXEC_INSTANCE_ENV "SDPOD_EXEC_INSTANCE"
bool pod_exec_instance_is_valid(const char *s);

/* With tty: the fd (3 or more, a terminal of the host's) whose window
 * size the pod's pty follows, at start and on each SIGWINCH, in place of
 * the caller's own terminal. The containerd shim passes the slave of a
 * pty of its own this way, whose size ResizePty sets (shim-tty.h); the
 * fd never reaches the pod. */
#define POD_EXEC_SIZE_FD_ENV "SDPOD_EXEC_SIZE_FD"

