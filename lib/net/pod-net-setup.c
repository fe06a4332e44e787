/* SPDX-License-Identifier: Apache-2.0 */
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>

#include "basic/json-util.h"
#include "net/net-files.h"
#include "net/netns.h"
#include "net/pod-net-setup.h"
#include "net/pod-network.h"
#include "net/ports.h"

/* The name files (and with them net/ready) of a pod whose network is
 * there. */
static int write_name_files(const PodNetSetup *s, Error **err) {
        _cleanup_json_ struct json_object *description = NULL;
        int r = pod_network_describe(s->pod_fd, &description, err);
        if (r < 0)
                return r;
        _cleanup_free_ char *address = pod_network_first_address(description);
        return pod_net_files_write(s->pod_fd, s->net, s->hostname, address, err);
}

int pod_net_prepare(PodNetSetup *s, Error **err) {
        int r;
        switch (s->net->mode) {
        case POD_NET_HOST:
                break;
        case POD_NET_NONE:
                if (!(s->nspawn_option = strdup("--private-network")))
                        return error_sys(err, -ENOMEM, "network");
                break;
        case POD_NET_NS:
                if ((r = netns_check(s->net->ns_path, err)) < 0)
                        return error_prefix(err, "--net=ns:%s", s->net->ns_path);
                if (!(s->netns = strdup(s->net->ns_path)))
                        return error_sys(err, -ENOMEM, "network");
                /* nspawn runs in the namespace either way (pod-supervise.h),
                 * and drops CAP_NET_ADMIN from the pod's bounding set unless
                 * the network is private: this one is the pod's own (the
                 * CRI's, made for the sandbox), so the pod keeps it, for an
                 * app granted NET_ADMIN to configure the namespace (apps
                 * keep only what they are granted). nspawn is told the
                 * path too (it then joins it itself, and counts it as the
                 * pod's). Only without a user namespace: one the host's
                 * root made belongs to the host's user namespace, over which
                 * the pod's has no capability (nspawn's join fails with
                 * EPERM), so there NET_ADMIN gives nothing (sdpod-security(7)). */
                if (!s->userns) {
                        if (asprintf(&s->nspawn_option, "--network-namespace-path=%s", s->net->ns_path) < 0) {
                                s->nspawn_option = NULL;
                                return error_sys(err, -ENOMEM, "network");
                        }
                        s->net_admin = true;
                }
                break;
        case POD_NET_CNI:
                if (mkdirat(s->pod_fd, POD_NET_DIR, 0755) < 0 && errno != EEXIST)
                        return error_sys(err, -errno, "cannot create %s/", POD_NET_DIR);
                if (asprintf(&s->netns, "%s/%s", s->pod, POD_NETNS_FILE) < 0) {
                        s->netns = NULL;
                        return error_sys(err, -ENOMEM, "network");
                }
                if ((r = pod_network_load(s->manifest, s->net, &s->configs, err)) < 0 ||
                    (r = ports_reserve(s->manifest, &s->port_fds, err)) < 0)
                        return r;
                if ((r = netns_new_at(s->netns, err)) < 0)
                        return r;
                return netns_keep(s->netns, s->host_mnt_fd, s->uuid, err);
        }
        return write_name_files(s, err);
}

int pod_net_attach(void *setup, Error **err) {
        PodNetSetup *s = setup;
        if (s->net->mode != POD_NET_CNI)
                return 0;
        int r = pod_network_up(s->pod_fd, s->uuid, s->manifest, s->net, s->configs, s->netns, err);
        return r < 0 ? r : write_name_files(s, err);
}

void pod_net_release(PodNetSetup *s) {
        if (s->net && s->net->mode == POD_NET_CNI && s->netns) {
                Error *err = NULL;
                if (pod_network_down(s->pod_fd, s->uuid, s->netns, &err) < 0 ||
                    netns_unkeep(s->host_mnt_fd, s->uuid, &err) < 0)
                        fprintf(stderr, "pod %s: %s (sdpod gc tries again)\n", s->uuid, err ? err->msg : "out of memory");
                error_free(err);
        }
        ports_release(s->port_fds, s->manifest ? s->manifest->n_ports : 0);
        free(s->nspawn_option);
        free(s->netns);
        json_object_put(s->configs);
        *s = (PodNetSetup) {};
}
