/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* A connection from the host to a running pod's systemd, on its private
 * socket (/run/systemd/private in the pod), peer to peer, with no bus
 * broker. systemd judges a peer by the credentials of the process that
 * connected, as its pid namespace sees them: a process of the host's pid
 * namespace shows up as PID 0, and every call fails (ENOTCONN). So a child
 * made inside the pod's pid namespace connects and hands the socket back;
 * the calls are then ours. */

#include <systemd/sd-bus.h>
#include <sys/types.h>

#include "basic/error.h"
#include "basic/time-util.h"

/* Everything of the pod's is hostile, its systemd and its socket too: it
 * may listen and never accept (a full backlog), accept and never answer,
 * or stop answering later. Nothing of the host waits on it without a
 * deadline: connecting and authenticating take at most
 * POD_BUS_CONNECT_TIMEOUT_USEC (-ETIMEDOUT, the helper process in the
 * pod's namespaces killed), and each method call on the connection at most
 * POD_BUS_CALL_TIMEOUT_USEC (sd-bus's method call timeout). */
#define POD_BUS_CONNECT_TIMEOUT_USEC (10 * USEC_PER_SEC)
#define POD_BUS_CALL_TIMEOUT_USEC (30 * USEC_PER_SEC)

/* leader is the pod's PID 1 (PodProcess.leader). */
int pod_bus_open(pid_t leader, sd_bus **ret, Error **err);
/* The same, connected and authenticated within timeout_usec. */
int pod_bus_open_within(pid_t leader, uint64_t timeout_usec, sd_bus **ret, Error **err);
