/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* A task's process with a terminal (containerd's terminal=true: ctr
 * -t, the CRI's tty). The command runs on a new pty of the pod's own
 * devpts, as `sdpod enter -t` does (pod-exec.h): the exec's relay, a
 * child of the shim, holds its master and copies containerd's stdin FIFO
 * into it (the terminal's EOF character at the end) and what comes out of
 * it to containerd's stdout FIFO, as bytes; nothing of the pod's is read
 * by the shim itself.
 *
 * ResizePty reaches the relay through a window-size carrier: a pty of the
 * host's, whose master the shim keeps and whose slave the relay gets as
 * POD_EXEC_SIZE_FD_ENV. No byte passes through it: the shim sets its size
 * and sends the relay SIGWINCH, and the relay copies the size to the
 * pod's pty (whose foreground job then gets its own SIGWINCH). State, not
 * a message: a resize never waits on the relay, and of several that come
 * before it looks, the last one counts. Neither end reaches the pod. */

#include <stdbool.h>

#include "basic/error.h"

/* The size a terminal has until ResizePty says (the one `sdpod enter -t`
 * gives when nothing says either). */
#define SHIM_TTY_ROWS 24
#define SHIM_TTY_COLS 80

/* A new carrier: its master (the shim's), O_CLOEXEC. */
int shim_tty_open(int *ret_master, Error **err);
/* A new fd of its slave (the relay's), O_CLOEXEC. */
int shim_tty_slave(int master, Error **err);
/* Sets the carrier's size; more than 0xffff rows or columns is refused. */
int shim_tty_resize(int master, unsigned rows, unsigned cols, Error **err);

/* Whether s is a value we pass on as the command's TERM (the spec's
 * env): a terminfo name, 1-64 letters, digits and ".+-_". Anything else
 * is left out, and the command has no TERM. */
bool shim_term_is_valid(const char *s);
