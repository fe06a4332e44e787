/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* A pod's CNI networks, as the stage1 run entrypoint attaches them and as
 * they are released (sdpod-stage1(7)). What was attached is recorded in
 * the pod directory, net/networks.json, written by the host (the pod sees
 * it read-only): for each network, in order, its name, interface, CNI_ARGS,
 * the configuration list it was attached with and, once ADD finished, the
 * result. DEL uses that record, not /etc, so a network reconfigured or
 * removed meanwhile is still released as it was made, by whoever comes
 * last: the run entrypoint when the pod exits, or gc for a pod that died
 * without it. */

#include <json-c/json.h>

#include "basic/error.h"
#include "manifest/pod-manifest.h"
#include "manifest/pod-net.h"

#define POD_NET_DIR "net"
#define POD_NETWORKS_FILE "net/networks.json"
/* Where the run entrypoint binds the pod's namespace, in its own mount
 * namespace only: on the host the file is empty. */
#define POD_NETNS_FILE "netns"

/* Loads and checks every network's configuration list (an array of them,
 * in the order of n), attaching nothing: what can be refused before the
 * pod starts is. The lists are those pod_network_up() then attaches. */
int pod_network_load(const PodManifest *m, const PodNet *n, struct json_object **ret_configs, Error **err);

/* Brings up lo and runs ADD for each network of n in order (eth0, eth1,
 * ...) with its list of configs, and the ports of m for portmap. A failure
 * releases what was attached before it returns. */
int pod_network_up(int pod_fd, const char *uuid, const PodManifest *m, const PodNet *n, struct json_object *configs,
                   const char *netns, Error **err);

/* Runs DEL for every network the record names, last first, and removes the
 * record. netns "" once the namespace is gone. No record: nothing to do.
 * A DEL that fails keeps the record, so that gc tries again. */
int pod_network_down(int pod_fd, const char *uuid, const char *netns, Error **err);

/* The gc entrypoints' release of the networks of a pod whose run
 * entrypoint died before it could: pod_network_down() in the namespace the
 * run entrypoint kept for it (netns.h), where the plugins that read the
 * pod's address (ptp's masquerade rules) remove everything; without one (a
 * pod that died before making it), with CNI_NETNS empty, so that plugins
 * release what lives outside it (addresses, port rules). Then the kept
 * namespace goes. */
int pod_network_down_kept(int pod_fd, const char *uuid, Error **err);

/* What the record says, for status: an array of {name, interface,
 * addresses: ["10.77.0.5/16", ...], gateway}; an empty array without
 * record. */
int pod_network_describe(int pod_fd, struct json_object **ret, Error **err);

/* The first address the record gives the pod (no prefix length), for
 * /etc/hosts; NULL without one. */
char *pod_network_first_address(struct json_object *description);

/* The nameservers, search domains and options the first network with any
 * gave in its result (the "dns" object, a new reference); NULL when none did. */
struct json_object *pod_network_dns(int pod_fd);
