/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* Published ports. The portmap plugin makes the NAT rules; sdpod holds each
 * host port itself, a socket bound to it for the pod's life, so that two
 * pods (or a pod and a program of the host) cannot both have it: the
 * kernel refuses the second bind, and releases the port when the holder
 * dies, however it dies. */

#include <json-c/json.h>
#include <stddef.h>

#include "basic/error.h"
#include "manifest/pod-manifest.h"

/* Binds a socket to each port of m; *ret_fds (n_ports of them) are closed
 * by ports_release(). A port in use: -EADDRINUSE naming it. */
int ports_reserve(const PodManifest *m, int **ret_fds, Error **err);
void ports_release(int *fds, size_t n);

/* The runtime configuration of the portmap plugin's capability:
 * {"portMappings": [{hostPort, containerPort, protocol, hostIP}]}, or NULL
 * when m publishes nothing. */
struct json_object *ports_runtime_config(const PodManifest *m);
