/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* A pod's cgroups on a host without systemd, where nobody else gives it
 * any: CGROUP/sdpod/UUID in each hierarchy systemd-nspawn needs (the
 * cgroup2 one, and the name=systemd one of a hybrid or legacy layout),
 * which nspawn hands to the pod (to its user namespace, when it has one),
 * and, on a v1 or hybrid host, in the devices, pids, freezer, memory,
 * cpu, cpuacct and blkio controllers, which nobody hands it. They are the
 * host's handle on the pod: what it may open, how many tasks, how much
 * memory and CPU time it may have, what gc kills, and what sdpod stats
 * reads.
 * Under a host systemd, a pod gets a scope or its service's cgroup
 * instead (the unit has the same rule and limit), and none of this is
 * used. */

#include "basic/error.h"
#include "manifest/pod-manifest.h"

/* What the host holds every pod to, set before anything of the pod runs:
 * in v1 controllers nspawn does not hand the pod, and on its cgroup2
 * cgroup as a BPF device program (the pod may own the cgroup, but
 * detaching a program takes capabilities of the host's user namespace)
 * and pids.max (a file of the parent's, never handed over). */
typedef struct PodCgroupLimits {
        uint64_t pids_max;
        uint64_t memory_max;    /* bytes; 0: none (--pod-memory) */
        uint64_t cpu_millis;    /* thousandths of a CPU; 0: none (--pod-cpus) */
        /* The device rule: cgroup v1 devices.allow entries ("c 1:3 rwm",
         * "c 136:* rw"), the standard pseudo-devices, the pod's host
         * volumes that are devices and the nodes the apps' --device name;
         * everything else is denied. NULL-terminated. */
        char **devices;
} PodCgroupLimits;

/* The limits of the pod: POD_ANNOTATION_PIDS_LIMIT (default
 * POD_PIDS_LIMIT_DEFAULT), POD_ANNOTATION_MEMORY and _CPUS (default none),
 * the standard devices, its host volumes that
 * are device nodes, and, for each app's sdpod/devices entry, the host
 * node of the volume bound at its path with the entry's access (type and
 * numbers read from the host's node the operator named, never from the
 * pod). */
int pod_cgroup_limits_from_manifest(const PodManifest *m, PodCgroupLimits *ret, Error **err);
void pod_cgroup_limits_done(PodCgroupLimits *l);

/* Creates the pod's cgroups, sets the limits (the v1 controllers where
 * the host has them; the device program on the cgroup2 cgroup, which a
 * cgroup v2 host must take; the pids, memory and cpu controllers of a
 * cgroup v2 host), and moves this process into them. */
int pod_cgroup_enter(const char *uuid, const PodCgroupLimits *limits, Error **err);

/* Under pod@.service: the pod's limits where the unit file cannot know
 * them, set on this process's unit (pod@UUID.service, and only that) as
 * runtime properties before nspawn starts: TasksMax= (--pod-pids-limit),
 * MemoryMax= (--pod-memory), CPUQuota= (--pod-cpus) and a DeviceAllow=
 * for each device beyond the standard ones (the pod's
 * device volumes, its apps' --device). Anything else: nothing to do. */
int pod_unit_set_limits(const char *uuid, const PodCgroupLimits *limits, Error **err);

/* Under pod@.service (Delegate=yes) on a cgroup v2 host: the unit's cgroup
 * is nspawn's to divide. nspawn (--keep-unit) moves itself into a child
 * and enables the controllers for the pod's below it, which the kernel
 * refuses while any process stays in the unit's cgroup (a cgroup with
 * processes gives its children no controllers): the pod would have none,
 * and an app's MemoryMax= would fail. So the run entrypoint moves itself,
 * and with it everything it starts (the console filter, CNI plugins), into
 * the child POD_UNIT_HOST_CGROUP, and puts nspawn back into the unit's
 * cgroup before it runs: *ret_procs_fd is that cgroup's cgroup.procs
 * (pod_supervise()). Elsewhere (v1 or hybrid: the controllers are v1's, and
 * not nspawn's to pass on) nothing is done and *ret_procs_fd is -1. */
#define POD_UNIT_HOST_CGROUP "sdpod-host"
int pod_unit_leave_root(int *ret_procs_fd, Error **err);

/* In a scope nspawn has machined make for the pod: appends to *argv the
 * nspawn options --property=TasksMax=N, MemoryMax= and CPUQuota= when the
 * pod has them, and --property=DeviceAllow= for each device beyond the
 * standard ones (nspawn's scope has those). */
int pod_scope_properties(const PodCgroupLimits *limits, char ***argv);

/* Kills every process of the pod's cgroups (cgroup.kill of its cgroup2
 * tree, which the pod cannot leave; on a host without one, the v1 freezer
 * cgroup frozen, its processes killed, thawed) and waits up to 5 s for
 * them to be gone. Returns 0 when nothing ran, above 0 when something was
 * killed, or -EBUSY with a message when something is still there: the
 * pod must then keep everything it holds. */
int pod_cgroup_kill(const char *uuid, Error **err);

/* Under a host systemd: the machine systemd-nspawn registered for the pod
 * with systemd-machined in a scope of its own, found by its id, the pod's
 * UUID that the host gave nspawn (not by name: a name is free again once
 * its pod is gone), and its scope's processes killed (KillMachine, "all",
 * SIGKILL); waits up to 5 s for the machine to be gone. (A pod in a
 * service is its service's: systemd kills what is left of it.) Returns 0 when there is no such
 * machine (or no machined), above 0 when it was killed, -EBUSY with a
 * message when it is still there. */
int pod_machine_kill(const char *uuid, Error **err);

/* In the pod directory of a pod that gc could not delete because its
 * processes outlived a kill: why (sdpod status shows it). */
#define POD_GC_BLOCKED_FILE "gc-blocked"

/* Whether anything still runs in any of the pod's cgroups, or, under a
 * host systemd, machined still has the pod's machine. */
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
