/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The bound on the host conntrack entries a pod's address may make
 * (sdpod-security(7)): every connection a pod opens through the host (to
 * the host itself, or forwarded) is an entry of the host's conntrack table,
 * which all of the host shares (nf_conntrack_max); a pod that opens them as
 * fast as it can (20,000 a second from an app's uid 1000) would fill it, and
 * the host would then drop every new connection, its own included.
 *
 * The bound is a rule of its own per pod address, made by the CNI plugin
 * sdpod-conntrack (helpers/cni/), which the built-in default network chains
 * last; an operator's own network lists add it the same way:
 *
 *   { "type": "sdpod-conntrack", "capabilities": { "conntrackLimit": true } }
 *
 * ADD makes the chain SDPOD-CT-<hash of the pod's id, network and
 * interface> in the mangle table, holding one rule
 *
 *   -m conntrack --ctstate NEW -m connlimit --connlimit-above N
 *       --connlimit-mask 32 (128) -j DROP
 *
 * and a second, for the entries connlimit does not count (a TCP
 * connection closed, or refused: such entries live on 10 to 120 s),
 *
 *   -m conntrack --ctstate NEW -m hashlimit --hashlimit-above N/30/sec
 *       --hashlimit-burst N --hashlimit-mode srcip -j DROP
 *
 * which bounds the rate of new connections: a burst of N, then N/30 a
 * second (with N 8192: 273 a second, sustained). So live entries stay
 * below N, and those of closed connections below N plus their lifetime
 * times the rate (at most about 5 N, for TIME_WAIT's 120 s).
 *
 * It jumps to the chain first in mangle PREROUTING for each of the pod's
 * addresses (-s ADDRESS). mangle PREROUTING comes after conntrack has seen
 * the packet and before it confirms the entry: a dropped packet leaves no
 * entry, whether it was for the host or to be forwarded. connlimit counts
 * the entries of that source that still live (closed TCP connections do
 * not count). DEL removes the jumps and the chain (found by their names
 * alone: no address needed), CHECK checks they are there.
 *
 * N comes from the runtime (runtimeConfig.conntrackLimit: the pod
 * annotation sdpod/conntrack-limit, default CONNTRACK_LIMIT_DEFAULT), else
 * the plugin's own "limit", else the default; 0 makes no rule. */

#include <stdbool.h>

#include "basic/error.h"

#define CONNTRACK_LIMIT_DEFAULT 8192U
#define CONNTRACK_LIMIT_MAX (1U << 24)
/* New connections a second, sustained: the limit over this. */
#define CONNTRACK_RATE_DIVISOR 30U
#define CONNTRACK_CAPABILITY "conntrackLimit"
#define CONNTRACK_PLUGIN "sdpod-conntrack"
/* "SDPOD-CT-" and 16 hex digits: 25, within iptables' 28. */
#define CONNTRACK_CHAIN_MAX 32

/* The chain of one attachment. */
void conntrack_chain_name(const char *container_id, const char *network, const char *ifname, char ret[static CONNTRACK_CHAIN_MAX]);

/* ADD: the chain with its rule for limit, and a jump for each address
 * ("10.77.0.5" or "fd00::5", no prefix length); idempotent. */
int conntrack_limit_add(const char *chain, unsigned limit, char *const *addresses, Error **err);
/* DEL: every jump to chain, and chain; nothing there is fine. */
int conntrack_limit_del(const char *chain, Error **err);
/* CHECK: the chain and a jump for each address are there. */
int conntrack_limit_check(const char *chain, char *const *addresses, Error **err);
