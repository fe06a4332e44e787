/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The name files every app of a pod sees (sdpod(1) NETWORKING): the run
 * entrypoint writes them into the pod directory, net/resolv.conf,
 * net/hosts and net/hostname, and the generator binds them read-only over
 * each app's /etc/resolv.conf, /etc/hosts and /etc/hostname. They are the
 * pod's, not the image's: an app added later sees the same.
 *
 * resolv.conf: --dns=host copies the host's file. Otherwise nameservers,
 * search domains and options each come from the flags, else from the CNI
 * result, else from the host's file, whose loopback nameservers (a local
 * resolver, as systemd-resolved's 127.0.0.53) are dropped for a pod with a
 * network namespace of its own, where they would not answer. */

#include <stdbool.h>

#include "basic/error.h"
#include "manifest/pod-net.h"

#define POD_RESOLV_CONF "net/resolv.conf"
#define POD_HOSTS "net/hosts"
#define POD_HOSTNAME "net/hostname"
/* Written last, once the network is attached and the name files are there:
 * the pod's sdpod-network.service waits for it, and its apps with it. */
#define POD_NET_READY "net/ready"

/* address: the pod's first address, NULL for none (then 127.0.1.1 names
 * the host name). Writes POD_NET_READY last. */
int pod_net_files_write(int pod_fd, const PodNet *n, const char *hostname, const char *address, Error **err);
