/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The pod's own user database. The pod's systemd resolves every User= and
 * Group= against its /etc/passwd and /etc/group, numeric ones included
 * (systemd 252 refuses an id without an entry: 217/USER), while apps run as
 * the ids of their images. So the stage1's /etc gets an entry for each id an
 * app runs as: "sdpod-u1000:x:1000:1000::/:/usr/sbin/nologin" and
 * "sdpod-g1000:x:1000:". The names are sdpod's, since images may give one id
 * different names (the app's own /etc/passwd is untouched).
 *
 * sdpod-generator adds them, inside the pod, as the pod's root: the host
 * never writes into a pod's root file system, which the pod controls. */

#include <sys/types.h>

#include "basic/error.h"

/* Adds the entries that uid and gid lack to ROOT/etc/passwd and
 * ROOT/etc/group, replacing each file atomically; rootfd is the pod's root. */
int pod_userdb_add(int rootfd, uid_t uid, gid_t gid, Error **err);
