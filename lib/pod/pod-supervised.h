/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The stop and gc entrypoints of the flavors whose run entrypoint is the
 * supervisor of one child of its own, holding the pod's lock: fly (the
 * child is the app) and kvm (QEMU). The supervisor's PID is in the pid
 * file (pod-process.h), its child is the pod's leader. The working
 * directory is the pod directory. */

#include <signal.h>
#include <stdbool.h>
#include <sys/types.h>

#include "basic/error.h"
#include "pod/pod-log.h"

/* The supervisor's side of its run entrypoint, shared by both flavors. */

/* Blocks SIGTERM, SIGINT, SIGHUP and SIGCHLD (what was blocked before
 * into *old, for the child to restore) and returns a non-blocking
 * signalfd of them: the supervisor reads them while its child starts.
 * SIGPIPE is ignored: a reader of its output that goes away (sdpod run
 * | head) must not end the supervisor before it has recorded and cleaned
 * up. */
int pod_supervisor_signals(sigset_t *old, Error **err);
/* In a child of the supervisor, before its exec: the signal mask of old
 * and SIGPIPE's default back (an ignored signal stays ignored across
 * execve). */
void pod_supervisor_child_signals(const sigset_t *old);

/* Until its exec, the child writes why it failed to err_fd's other end:
 * reads it (and closes err_fd). A message: the child is reaped, the pod's
 * cgroup emptied and removed, and -EIO says "WHAT did not start: ...". */
int pod_supervisor_child_started(const char *uuid, pid_t pid, int err_fd, const char *what, Error **err);

/* After the child's end, what is still in its output pipe (at most 1 s
 * more: what escaped into the cgroup may hold it open), into the log;
 * closes fd. */
void pod_supervisor_drain(PodLog *log, int fd, bool open);

/* SIGTERM to the supervisor, which stops its child its own way; with
 * force SIGKILL to the child (the supervisor then records its end and
 * cleans up), or to the supervisor when the child is not known yet. */
int pod_supervised_stop(const char *uuid, bool force, Error **err);

/* Kills what is left in the pod's cgroup, releases its networks (in its
 * kept namespace) and removes its cgroup. */
int pod_supervised_gc(const char *uuid, Error **err);
