/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The network of a pod as the stage1 run entrypoint makes it around
 * systemd-nspawn (sdpod-stage1(7)), in its private mount namespace:
 *
 *   before nspawn   pod_net_prepare(): every CNI configuration list loaded
 *                   and checked, the published host ports held (ports.h),
 *                   the namespace made at POD/netns and kept for gc
 *                   (netns_keep(), netns.h); for the
 *                   host's network, none and ns:PATH, the name files and
 *                   net/ready at once
 *   while it boots  pod_net_attach(): CNI ADD of each network
 *                   (pod-network.h), then the name files and net/ready,
 *                   for which the pod's apps wait
 *   after it        pod_net_release(): CNI DEL, then the kept namespace
 *                   unbound (kept when DEL failed: gc tries again with
 *                   it), and the ports let go
 *
 * What a failure leaves attached is released before it returns. */

#include <json-c/json.h>
#include <stdbool.h>

#include "basic/error.h"
#include "manifest/pod-manifest.h"
#include "manifest/pod-net.h"

typedef struct PodNetSetup {
        /* given */
        const char *uuid;
        const char *pod;                /* the pod directory's path */
        int pod_fd;
        const PodManifest *manifest;
        const PodNet *net;
        const char *hostname;
        int host_mnt_fd;                /* the mount namespace sdpod started in, where gc finds the kept namespace (netns.h) */
        bool userns;                    /* the pod runs in a user namespace of its own */
        /* made by pod_net_prepare() */
        char *nspawn_option;            /* --net=none: "--private-network"; ns:PATH without a user
                                         * namespace: "--network-namespace-path=PATH" */
        bool net_admin;                 /* nspawn must leave CAP_NET_ADMIN in the pod's bounding set */
        char *netns;                    /* CNI and ns:PATH: where nspawn must run */
        struct json_object *configs;    /* CNI: the lists, loaded once, attached as checked */
        int *port_fds;
} PodNetSetup;

int pod_net_prepare(PodNetSetup *s, Error **err);
/* A PodAttachFunc (pod-supervise.h) of a PodNetSetup; nothing to do but
 * for CNI networks. */
int pod_net_attach(void *setup, Error **err);
/* Releases the CNI networks (a failure is reported on stderr: gc tries
 * again) and the held ports, and frees what prepare made. */
void pod_net_release(PodNetSetup *s);
