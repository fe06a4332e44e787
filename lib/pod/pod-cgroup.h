/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* A pod's cgroup on a host without systemd, where nobody else gives it
 * one: CGROUP/sdpod/UUID in each hierarchy systemd-nspawn needs (the
 * cgroup2 one, and the name=systemd one of a hybrid or legacy layout).
 * nspawn hands it to the pod (to its user namespace, when it has one).
 * Under a host systemd, a pod gets a scope or pod@.service's cgroup
 * instead, and none of this is used. */

#include "basic/error.h"

/* Creates the pod's cgroups and moves this process into them. */
int pod_cgroup_enter(const char *uuid, Error **err);

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
