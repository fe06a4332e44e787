/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* Starting a prepared pod in the background and waiting until it is ready
 * (its systemd has reached default.target: READY=1). On a host whose PID 1
 * is systemd and which has pod@.service, the pod runs as pod@UUID.service,
 * started over the system bus; elsewhere, as a detached process of its own
 * session (stdin, stdout and stderr /dev/null), whose READY=1 reaches us on
 * a notify socket of ours (systemd-nspawn --notify-ready=yes). */

#include <stdbool.h>

#include "basic/error.h"
#include "basic/uuid.h"
#include "pod/pod.h"

/* Launches the prepared pod *p, which it takes (and unlocks), and puts its
 * UUID in ret_uuid: as pod@UUID.service when the host's systemd has
 * pod@.service and the pod is of the default data directory, which is the
 * only one that unit knows; else detached. Waits until the pod is ready, at
 * most 90 s. A pod whose apps all end well before it is ready (a quick job)
 * is a success. A pod that ran and exited otherwise before it was ready is
 * kept, exited, with its exit statuses and journal: -ECHILD, its exit code
 * in *ret_exit_code (may be NULL). A pod that failed before it ran (its unit
 * or its stage1 failed) is an error that says so, and is removed. */
int pod_launch_prepared(PodStore *ps, Pod **p, char ret_uuid[static UUID_STRING_MAX], int *ret_exit_code,
                        Error **err);

/* How long a stop waits for a pod to halt in order before it kills it:
 * the apps' own grace (10 s) and the rest of the halt, as pod@.service's
 * TimeoutStopSec= allows. A pod that does not halt (its own systemd
 * wedged, or hostile) cannot make the stop wait for ever. */
#define POD_STOP_TIMEOUT_USEC (30 * 1000000ULL)

/* Stops the running pod p and waits until it has exited: asks it to halt
 * (the stage1's stop entrypoint) and, when it has not within timeout_usec
 * (0: POD_STOP_TIMEOUT_USEC), or at once with force, kills it. Returns 1
 * when it had to be killed after the timeout (warned). */
int pod_stop(PodStore *ps, Pod *p, bool force, uint64_t timeout_usec, Error **err);

/* A datagram socket for READY=1, bound to an abstract address (returned
 * "@..."), that receives its senders' credentials. */
int notify_socket_new(const char *name, char ret_address[static 108]);
/* Reads one datagram of sock: 1 when it says READY=1 and comes from the
 * process pid, 0 for anything else, which is dropped. The address is
 * abstract, so any process of the host's network namespace (an app of a
 * pod on the host's network, for one) can send to it: the kernel's word
 * on the sender (SCM_CREDENTIALS), not the message, says who it is. */
int notify_socket_ready_from(int sock, pid_t pid);
/* The same, keeping the message (NUL-terminated) in msg: 1 when it comes
 * from pid. */
#define NOTIFY_MESSAGE_MAX 4096
int notify_socket_read_from(int sock, pid_t pid, char msg[static NOTIFY_MESSAGE_MAX]);

