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

/* leader is the pod's PID 1 (PodProcess.leader). */
int pod_bus_open(pid_t leader, sd_bus **ret, Error **err);
