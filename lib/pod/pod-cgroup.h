/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* A pod's cgroup on a host without systemd, where nobody else gives it
 * one: CGROUP/sdpod/UUID in each hierarchy systemd-nspawn needs (the
 * cgroup2 one, and the name=systemd one of a hybrid or legacy layout).
 * nspawn hands it to the pod (to its user namespace, when it has one).
 * Under a host systemd, a pod gets a scope or pod@.service's cgroup
 * instead, and none of this is used. */

#include "basic/error.h"
#include "manifest/pod-manifest.h"

/* What the host holds every pod to, in cgroups the pod cannot change
 * (not delegated to it: only the unified and name=systemd hierarchies
 * are, and neither carries these controllers on a v1 or hybrid host). */

typedef struct PodCgroupLimits {
        uint64_t pids_max;
        /* The device rule: cgroup v1 devices.allow entries ("c 1:3 rwm"),
         * the standard pseudo-devices and the nodes the apps' --device
         * name; everything else is denied. NULL-terminated. */
        char **devices;
} PodCgroupLimits;

/* The limits of the pod: POD_ANNOTATION_PIDS_LIMIT (default
 * POD_PIDS_LIMIT_DEFAULT), the standard devices, and, for each app's
 * sdpod/devices entry, the host node of the volume bound at its path
 * (type and numbers read from the host, never from the pod). */
int pod_cgroup_limits_from_manifest(const PodManifest *m, PodCgroupLimits *ret, Error **err);
void pod_cgroup_limits_done(PodCgroupLimits *l);

/* Creates the pod's cgroups, sets the limits where the host has the
 * controllers (v1 devices, pids and freezer; the pids controller of a
 * cgroup v2 host), and moves this process into them. */
int pod_cgroup_enter(const char *uuid, const PodCgroupLimits *limits, Error **err);

/* Kills every process of the pod's cgroups (cgroup.kill of its cgroup2
 * tree, which the pod cannot leave; on a host without one, the v1 freezer
 * cgroup frozen, its processes killed, thawed) and waits up to 5 s for
 * them to be gone. Returns how many processes there were (0: nothing
 * ran), or -EBUSY with a message when some are still there: the pod must
 * then keep everything it holds. */
int pod_cgroup_kill(const char *uuid, Error **err);

/* In the pod directory of a pod that gc could not delete because its
 * processes outlived a kill: why (sdpod status shows it). */
#define POD_GC_BLOCKED_FILE "gc-blocked"

/* Whether anything still runs in any of the pod's cgroups. */
bool pod_cgroup_busy(const char *uuid);

/* Removes them, and everything the pod made below them (its processes
 * must be gone). Missing is fine; a cgroup that still has processes is
 * -EBUSY. */
int pod_cgroup_remove(const char *uuid, Error **err);

/* Removes the cgroups of pods deleted without their gc entrypoint (a data
 * directory removed by hand): those of CGROUP/sdpod/ without a process,
 * older than a minute (a pod being started has made its cgroup and is
 * about to move in). Returns how many. */
int pod_cgroup_remove_stale(void);

/* The cgroup pod_cgroup_enter() makes, as /proc/PID/cgroup shows it in each
 * of those hierarchies: "/sdpod/UUID" (sdpod stats finds the pod there).
 * NULL on allocation failure. */
char *pod_cgroup_path(const char *uuid);
