/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The network of a kvm pod (kvm-run.h): CNI makes the pod's network
 * namespace and its eth0 exactly as for the other flavors; the guest's
 * NIC joins it through a tap in that namespace, tied to eth0 both ways
 * with tc (an ingress qdisc on each, a mirred redirect of every packet to
 * the other), as Kata Containers does. The guest takes eth0's MAC address
 * and its IPv4 address, and routes through its gateway: kvm-init sets them
 * from the kernel's command line (sdpod.net=ADDRESS/PREFIX,GATEWAY), and
 * what reaches eth0 from the host (ports, other pods, NAT) reaches the
 * guest. QEMU gets the tap's fd; it stays in a network namespace of its
 * own with nothing in it. */

#include "basic/error.h"

typedef struct KvmNic {
        int tap_fd;             /* QEMU's -netdev tap,fd= */
        char mac[18];           /* eth0's, "aa:bb:cc:dd:ee:ff" */
        char address[64];       /* "10.77.0.5/16" */
        char gateway[64];       /* "10.77.0.1" */
} KvmNic;

/* Makes the tap in the pod's network namespace at netns and ties it to
 * eth0, whose addresses are in the pod's network record (pod_fd's,
 * pod-network.h). */
int kvm_nic_make(int pod_fd, const char *netns, KvmNic *ret, Error **err);
void kvm_nic_done(KvmNic *n);
