/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* Network namespaces as files: a namespace lives as long as a process is
 * in it or an nsfs file of it is mounted somewhere. */

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
