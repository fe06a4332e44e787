/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* A pod's journal lives in its own directory, not in the host's: the pod's
 * journald writes to /var/log/journal/MACHINE-ID, which the run entrypoint
 * binds from POD/journal. So the apps' logs stay readable after the pod has
 * exited, with or without a host systemd, and go away with the pod at gc. */

#include "basic/error.h"
#include "pod/pod.h"

#define POD_JOURNAL_DIR "journal"
/* What journalctl is given at most: a pod's journald keeps a handful. */
#define POD_JOURNAL_FILES_MAX 256

/* Executes journalctl on the pod's journal: only app@APP.service's entries
 * when app is set, with args (NULL-terminated) appended. Only returns on
 * failure: a pod that never ran has no journal, and app must be one of the
 * pod's apps. */
int pod_journal_exec(const PodStore *ps, const Pod *p, const char *app, char **args, Error **err);

/* sdpod journal: pod_journal_exec() in a child, its output copied to
 * standard output (or to the operator's pager, $SYSTEMD_PAGER, $PAGER or
 * less, when that is a terminal and args have no --no-pager or --follow)
 * escaped as text_escape() shows it, unless raw or the output mode is
 * json* or export. journalctl's exit status, or a negative errno with err
 * set when it could not be started. */
int pod_journal_show(const PodStore *ps, const Pod *p, const char *app, char **args, bool raw, Error **err);

/* The same for sdpod journal --follow, which journalctl follows for ever:
 * with until_exit, journalctl is ended once the pod has exited (at once
 * for a pod that is not running) and POD_JOURNAL_FOLLOW_GRACE_USEC has
 * passed for its last entries to show, as podman's logs -f ends. A
 * follow (args have --follow) of a running pod that has no journal yet
 * waits for it, POD_JOURNAL_FOLLOW_WAIT_USEC at most. */
#define POD_JOURNAL_FOLLOW_GRACE_USEC (500 * 1000ULL)
/* ... and not before it has run this long (its start, on a busy machine). */
#define POD_JOURNAL_FOLLOW_MIN_USEC (2 * 1000 * 1000ULL)
/* How long a follow of a running pod waits for its first journal file. */
#define POD_JOURNAL_FOLLOW_WAIT_USEC (20 * 1000 * 1000ULL)
int pod_journal_follow(PodStore *ps, Pod *p, const char *app, char **args, bool raw, bool until_exit, Error **err);

/* The cursor of the oldest of the last lines entries that journalctl shows
 * with args (its filters, --since): for --since=TIME --lines=N, which
 * journalctl 252 takes as the first N from TIME, where sdpod(1) promises
 * the last N: journalctl is then given --cursor=CURSOR instead. *ret is
 * NULL when there is no such entry. */
int pod_journal_cursor_of_last(const PodStore *ps, const Pod *p, const char *app, char **args, uint64_t lines,
                               char **ret, Error **err);

/* The time of sdpod journal --since=TIME, in realtime usec, now being now_usec:
 * "2026-11-25 10:00[:00]" or "2026-11-25" (local time, as journalctl reads
 * it), RFC 3339 in UTC ("2026-11-25T10:00:00Z"), "today", "yesterday",
 * "now", a duration before now ("-1h", "10m ago"), or "@SECONDS" since the
 * epoch. sdpod checks it itself, so a bad one is named with the pod's
 * other usage errors, and hands journalctl the result as @SECONDS.
 * -EINVAL when it is none of those. */
int journal_since_parse(const char *s, uint64_t now_usec, uint64_t *ret);

/* The number of sdpod journal --lines=N: a decimal number, or "all"
 * (*ret = UINT64_MAX). -EINVAL otherwise. */
int journal_lines_parse(const char *s, uint64_t *ret);

/* The last lines of the pod's journal (app's only, when app is set), as
 * journalctl --output=cat shows them, for a message to a user: at most 1
 * KiB a line, control characters shown as '?'. Empty when there are none. */
int pod_journal_tail(const PodStore *ps, const Pod *p, const char *app, unsigned lines, char **ret, Error **err);
