/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* A barrier on the pod's journald: its varlink method
 * io.systemd.Journal.Synchronize, which systemd-journald answers only once
 * it has processed every message already queued to it (the answer is a
 * deferred event of low priority, after the pending stream and datagram
 * reads). An app's last lines sit in journald's stream sockets after the
 * app and its relay have exited; a pod that ends before journald has read
 * them loses them (journald exits on the SIGTERM of the pod's end without
 * reading further). */

#include <stdint.h>

#include "basic/error.h"

#define JOURNAL_VARLINK_SOCKET "/run/systemd/journal/io.systemd.journal"

/* Waits for journald on socket path to have processed what was queued to
 * it and to hold it in its persistent journal (FlushToVar), timeout_usec
 * at most in all: a journald that is stuck or gone must not hold the
 * caller (a pod's end) for ever. */
int journal_sync(const char *path, uint64_t timeout_usec, Error **err);
