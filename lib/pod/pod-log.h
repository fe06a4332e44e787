/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The console log of a pod whose stage1 has no journal the host can read:
 * the fly flavor's one app's stdout and stderr, the kvm flavor's guest
 * console (which carries the guest journal's lines). The host side (the
 * run entrypoint) writes it into the pod directory, at most POD_LOG_MAX
 * bytes, then counts what it drops; it copies each chunk, escaped, to its
 * own stdout too (the terminal of 'sdpod run', or pod@.service's journal).
 * 'sdpod journal' shows the file, escaped. What the pod writes there is
 * hostile text: it is never shown raw but by --raw. */

#include <stdbool.h>
#include <stdint.h>

#include "basic/error.h"

#define POD_LOG_FILE "console.log"
#define POD_LOG_MAX (8U << 20)

typedef struct PodLog {
        int fd;                 /* the file, or -1 */
        uint64_t size, dropped;
        int console;            /* where a copy goes (our stdout), or -1 */
} PodLog;

/* Creates (empties) the log in the pod directory; the copy goes to our
 * stdout when it is open. */
int pod_log_open(int pod_fd, PodLog *ret, Error **err);
/* Appends n bytes (past POD_LOG_MAX: counted, dropped) and copies them,
 * escaped, to the console. */
void pod_log_write(PodLog *l, const char *buf, size_t n);
/* Reads what the non-blocking fd holds into the log: false at its end. */
bool pod_log_drain(PodLog *l, int fd);
/* Says at the log's end how much was dropped, and closes it. */
void pod_log_finish(PodLog *l);

/* sdpod journal of such a pod: the log, escaped for a terminal (raw: as it
 * is), the last lines lines of it only (0: all). */
int pod_log_show(int pod_fd, const char *uuid, unsigned lines, bool raw, Error **err);
/* The same into *ret, for sdpod run's report of an early exit. */
int pod_log_read(int pod_fd, const char *uuid, unsigned lines, char **ret, Error **err);
