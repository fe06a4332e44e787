/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* A pod in a network namespace made for it (CNI) or given (ns:PATH). nspawn
 * must run in that namespace itself: with a user namespace, the pod's side
 * cannot join a namespace the host's root owns (nspawn's
 * --network-namespace-path= fails with EPERM), but inherits it. And a pod
 * on CNI networks holds what the host must release when it ends
 * (attachments, addresses, port rules). So the run entrypoint does not
 * become systemd-nspawn: it starts nspawn as its child, in the namespace,
 * and stays, holding the pod's lock too, until nspawn has exited; the pod
 * reads as exited only once the network is released. Meanwhile it
 *
 *   - writes the pid file for nspawn (stop and enter find nspawn there);
 *   - relays nspawn's READY=1, STOPPING=1 and STATUS= to its own
 *     $NOTIFY_SOCKET: it is the main process of pod@.service and the
 *     process sdpod's launcher waits on;
 *   - passes SIGTERM, SIGINT and SIGHUP on to nspawn, which halts the pod
 *     in order (pod@.service's stop, a signal to sdpod run, Ctrl-C): nspawn
 *     is in a process group of its own, so that each reaches it once.
 *
 * The child gets the lock fd and nothing else of the supervisor's. When
 * the supervisor dies (SIGKILL, a crash), nspawn is killed too: nothing
 * would attach or release the pod's network any more. The pod then reads
 * as exited, and gc releases its network and kills what is left of it. */

#include "basic/error.h"

/* Called once the child runs, while the pod boots: attaches what the pod
 * waits for. A failure ends the child (SIGTERM twice: nspawn's "terminate
 * now"). */
typedef int (*PodAttachFunc)(void *userdata, Error **err);

/* Runs argv (program's) as a child in the network namespace netns, calls
 * attach (when not NULL), and waits until the child has exited. Returns
 * what the supervisor must exit with: the child's exit status, or 128 + N
 * when signal N killed it; a failed attach is its error, once the child
 * has exited. */
int pod_supervise(int pod_fd, int lock_fd, const char *netns, const char *program, char *const *argv,
                  PodAttachFunc attach, void *userdata, Error **err);
