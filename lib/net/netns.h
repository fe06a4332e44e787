/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* Network namespaces as files: a namespace lives as long as a process is
 * in it or an nsfs file of it is mounted somewhere. */

#include <stdbool.h>

#include "basic/error.h"

/* Makes a new network namespace and binds it at path (a file it creates),
 * in the caller's mount namespace; the caller stays in its own network
 * namespace. Every port of it is open to unprivileged users
 * (ip_unprivileged_port_start 0): the pod's root is one. The caller is in
 * a mount namespace of its own: where /proc/sys is read-only, a procfs is
 * mounted there for a moment. */
int netns_new_at(const char *path, Error **err);

/* Whether path is a network namespace (an nsfs file of one): 0, or
 * -EINVAL with a message naming the path. */
int netns_check(const char *path, Error **err);

/* Whether the namespace at path is the host's: the caller's own or, where
 * the caller may see it, PID 1's (the operator may name either with
 * --net=ns:). True too when path or the caller's own cannot be read, so
 * that a caller granting power over a namespace then grants none. */
bool netns_is_hosts(const char *path);

/* Sets the sysctl net.NAME ("ipv4/conf/tap0/forwarding") of the network
 * namespace the caller is in: it must be in a mount namespace of its own
 * (netns_new_at()'s rule). */
int netns_sysctl_set(const char *name, const char *value, Error **err);

/* Runs fn(userdata, err) in the network namespace at path and comes back:
 * for a single-threaded caller of the host's (the kvm flavor's supervisor
 * making the guest's tap), in a namespace where no process of the pod's
 * runs. What fn opens there (a tap, a socket) stays the namespace's. */
int netns_run(const char *path, int (*fn)(void *userdata, Error **err), void *userdata, Error **err);

/* A pod's network namespace kept where gc finds it after its supervisor
 * died: NETNS_KEPT_DIR/UUID, a bind of the namespace in the mount
 * namespace sdpod was started in (the operator's: where `sdpod gc` runs),
 * as `ip netns` keeps /run/netns/NAME. The supervisor's own bind (POD/netns)
 * lives in its private mount namespace and dies with it; without this one,
 * gc's CNI DEL would run with no namespace, and the plugins that read the
 * pod's address there (ptp's masquerade rules) would leave their rules for
 * an address IPAM hands out again. Root's only (0700): nothing of a pod
 * reaches it. */
#define NETNS_KEPT_DIR "/run/sdpod/netns"
#define NETNS_KEPT_PATH_MAX 128
void netns_kept_path(const char *uuid, char path[static NETNS_KEPT_PATH_MAX]);
/* Binds the namespace at netns to NETNS_KEPT_DIR/uuid in mnt_fd's mount
 * namespace (a child enters it; the caller's stays as it is), replacing
 * what an earlier run left there. mnt_fd -1: the caller's. */
int netns_keep(const char *netns, int mnt_fd, const char *uuid, Error **err);
/* Unmounts and removes it, there; gone already is fine. */
int netns_unkeep(int mnt_fd, const char *uuid, Error **err);
