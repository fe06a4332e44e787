/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The runtime side of the CNI specification (1.0.0, and the 0.3/0.4
 * versions Debian's plugins also speak): a network configuration list is a
 * JSON object {cniVersion, name, plugins: [{type, ...}]}; each plugin is an
 * executable named by its type, found in CNI_PLUGIN_PATH, run with
 *
 *   CNI_COMMAND      ADD or DEL
 *   CNI_CONTAINERID  the pod's UUID
 *   CNI_NETNS        the network namespace's path (empty for a DEL after it
 *                    is gone)
 *   CNI_IFNAME       the interface in it (eth0, eth1, ...)
 *   CNI_ARGS         KEY=VALUE;... the operator gave (--net=NAME:IP=...)
 *   CNI_PATH         where plugins find other plugins (IPAM)
 *
 * and the plugin's configuration on stdin: its object of the list, with the
 * list's name and cniVersion, the previous plugin's result as prevResult,
 * and the runtimeConfig entries its "capabilities" ask for (portMappings).
 * A plugin answers with a result (ADD) or an error object {code, msg,
 * details} on stdout and a non-zero exit status. ADD runs the plugins in
 * order and DEL in reverse, each DEL with the ADD's result as prevResult.
 *
 * Plugins are the host's, run as root on the host with configurations the
 * operator wrote: trusted. What they print is still read within bounds. */

#include <json-c/json.h>
#include <stdbool.h>

#include "basic/error.h"
#include "config.h"

/* Where plugins are looked for, in order: sdpod's own (sdpod-conntrack),
 * Debian's, then the usual place of upstream's release archives.
 * $SDPOD_CNI_PATH replaces it. */
#define CNI_PLUGIN_PATH SDPOD_CNI_DIR ":/usr/lib/cni:/opt/cni/bin"
/* Where named networks are configured: NAME.conflist or NAME.conf.
 * $SDPOD_NET_DIR replaces it (tests). /etc/cni/net.d is not read: the
 * networks of other runtimes are not sdpod's unless the operator links
 * them here. */
#define CNI_CONFIG_DIR "/etc/sdpod/net.d"

/* The CNI version of the built-in list and of what sdpod writes. */
#define CNI_VERSION "1.0.0"

typedef struct CniAttachment {
        const char *container_id;
        const char *netns;              /* "" once the namespace is gone (DEL) */
        const char *ifname;
        const char *args;               /* CNI_ARGS, or NULL */
        struct json_object *runtime_config;     /* {"portMappings": [...]}, or NULL */
} CniAttachment;

/* The configuration list of the network name: the file in the
 * configuration directory, else, for "default", the built-in one. Checked:
 * a list whose name is name, whose plugins each have a type that is a plain
 * file name (with_ports: whether the pod publishes ports, for the
 * built-in list). A single plugin's configuration (.conf) becomes a list of one.
 * Unknown: -ENOENT; invalid: -EBADMSG; both with a message naming the file. */
int cni_config_load(const char *name, bool with_ports, struct json_object **ret, Error **err);

/* The built-in "default" list (sdpod(1) NETWORKING): ptp with host-local
 * addresses from 10.77.0.0/16 and IP masquerade, portmap (only with_ports:
 * a pod that publishes nothing is spared its ADD and DEL, 150 ms here),
 * firewall. */
const char *cni_default_config(bool with_ports);

/* Runs ADD for each plugin of list; returns the last result. When a plugin
 * fails, what was added is deleted again (DEL of the whole list, as the
 * specification asks) before the error returns. */
int cni_add(const CniAttachment *a, struct json_object *list, struct json_object **ret_result, Error **err);

/* Runs DEL for each plugin of list, in reverse, with result (NULL when ADD
 * did not finish) as prevResult. Every plugin is run even when one fails;
 * the first error is returned. */
int cni_del(const CniAttachment *a, struct json_object *list, struct json_object *result, Error **err);
