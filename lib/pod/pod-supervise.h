/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The run entrypoint does not become systemd-nspawn: it starts nspawn as
 * its child and stays, holding the pod's lock too, until nspawn has
 * exited, because
 *
 *   - a pod in a network namespace made for it (CNI) or given (ns:PATH)
 *     needs nspawn to run in that namespace itself: with a user namespace,
 *     the pod's side cannot join a namespace the host's root owns (nspawn's
 *     --network-namespace-path= fails with EPERM), but inherits it; and a
 *     pod on CNI networks holds what the host must release when it ends
 *     (attachments, addresses, port rules): the pod reads as exited only
 *     once the network is released;
 *   - no process may outlive its pod (seed 003): nspawn does not take the
 *     pod's PID 1 with it when it is killed. The supervisor is a subreaper,
 *     so that PID 1 becomes its child, and halts it (pod_supervise()).
 *     Its own death kills nspawn (PR_SET_PDEATHSIG), and the pod's PID 1
 *     then ends by the pod's lifeline: a FIFO in the pod directory
 *     (POD_LIFELINE), whose only writer is the supervisor. The stage1's
 *     sdpod-lifeline.service reads it (pod-helper lifeline) and sees its
 *     end the moment the supervisor dies, however it dies: it powers the
 *     pod off at once (reboot(2) after a second of halting in order). A
 *     hostile pod can stop its lifeline; it then runs on until gc kills
 *     it, as before.
 *
 * Meanwhile it
 *
 *   - writes the pid file for nspawn (stop and enter find nspawn there);
 *   - relays nspawn's READY=1, STOPPING=1 and STATUS= to its own
 *     $NOTIFY_SOCKET: it is the main process of pod@.service and the
 *     process sdpod's launcher waits on;
 *   - passes SIGTERM, SIGINT and SIGHUP on to nspawn, which halts the pod
 *     in order (pod@.service's stop, a signal to sdpod run, Ctrl-C): nspawn
 *     is in a process group of its own, so that each reaches it once;
 *   - checks that the pod's systemd answers (pod-liveness.h), and kills a
 *     pod that has not answered within watchdog_usec (0: never).
 *
 * The child gets the lock fd and nothing else of the supervisor's. When
 * the supervisor dies (SIGKILL, a crash), nspawn is killed too: nothing
 * would attach or release the pod's network any more. The pod then reads
 * as exited, and gc releases its network and kills what is left of it. */

#include <stdbool.h>
#include <stdint.h>

#include "basic/error.h"

/* Called once the child runs, while the pod boots: attaches what the pod
 * waits for. A failure ends the child (SIGTERM twice: nspawn's "terminate
 * now"). */
typedef int (*PodAttachFunc)(void *userdata, Error **err);

/* The FIFO in the pod directory, /sdpod/lifeline in the pod. */
#define POD_LIFELINE "lifeline"
/* How long the pod halts in order when its lifeline has ended, before
 * its lifeline powers it off (reboot(2): its PID 1 ends at once). */
#define POD_LIFELINE_GRACE_USEC (500 * 1000ULL)

/* How long the pod's PID 1, left by a nspawn that died, has to halt in
 * order before it is killed: enough for apps that end on SIGTERM and their
 * reapers, short enough that nothing of the pod lingers. */
#define POD_ORPHAN_GRACE_USEC (1000 * 1000ULL)

/* Runs argv (program's) as a child, in the network namespace netns unless
 * NULL, calls attach (when not NULL), and waits until the child has exited;
 * then halts what the child left of the pod (killed, it leaves the pod's
 * PID 1 running), within POD_ORPHAN_GRACE_USEC. Returns
 * what the supervisor must exit with: the child's exit status, or 128 + N
 * when signal N killed it; a failed attach is its error, once the child
 * has exited. With foreground, the child is the foreground job of the
 * terminal on stdin while it runs (sdpod run -t: nspawn reads the keys),
 * and the terminal is taken back when it has exited. With child_procs_fd
 * (a cgroup.procs, or -1), the child is moved into that cgroup before it
 * runs (pod_unit_leave_root()). */
int pod_supervise(int pod_fd, int lock_fd, const char *netns, const char *program, char *const *argv,
                  uint64_t watchdog_usec, bool foreground, int child_procs_fd, PodAttachFunc attach, void *userdata,
                  Error **err);
