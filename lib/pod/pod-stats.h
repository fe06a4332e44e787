/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* What a running pod and each of its apps use, read from the host's
 * cgroups (sdpod stats): CPU time, memory, tasks and block I/O.
 *
 * Where: the pod's cgroup is the host's. On a host without systemd it is
 * CGROUP/sdpod/UUID, which the run entrypoint makes (pod-cgroup.h); under
 * a host systemd it is the unit nspawn runs in (pod@.service, or the scope
 * nspawn was given). The pod's systemd makes a cgroup for each of its
 * units below it; an app's is its app@NAME.service one.
 *
 * Trust: everything below the pod's cgroup is made by the pod's systemd,
 * and by root in an app that can write its cgroup: hostile. So the pod's
 * cgroup is never taken from the pod: its path is the host's part of the
 * leader's cgroup path (the part above the pod's cgroup namespace, which
 * the pod cannot leave). Below it, only the app cgroups the manifest names
 * are opened, beneath the pod's cgroup without symlinks; nothing found
 * there is printed; what is walked (counting tasks where there is no pids
 * controller) is bounded in depth, in number and in bytes read. Per-app
 * figures are what the pod's systemd accounts to the app's unit: a hostile
 * pod can move its use between its own cgroups, never out of the pod's
 * total.
 *
 * A figure that cannot be read (its controller is not there, or not for
 * this cgroup: on a cgroup v1 host without systemd, the pod has no cgroup
 * of its own in the memory, pids and blkio hierarchies) is
 * POD_STATS_UNKNOWN, never a made-up 0. */

#include <stdbool.h>
#include <stdint.h>

#include "basic/error.h"
#include "pod/pod.h"

#define POD_STATS_UNKNOWN UINT64_MAX
/* A limit that is not set ("max"). */
#define POD_STATS_NO_LIMIT (UINT64_MAX - 1)

/* At most this many cgroups, this deep below the one counted, are walked
 * to count tasks without a pids controller; more makes the count unknown. */
#define POD_STATS_WALK_MAX 2048
#define POD_STATS_DEPTH_MAX 32

typedef struct CgroupFigures {
        uint64_t sampled_usec;          /* CLOCK_MONOTONIC when read; 0: never */
        uint64_t cpu_usec;              /* CPU time used since the cgroup was made */
        uint64_t memory_bytes;          /* page cache included, as the kernel counts it */
        uint64_t memory_limit_bytes;
        uint64_t tasks;                 /* processes and threads */
        uint64_t tasks_limit;
        uint64_t io_read_bytes, io_write_bytes;
} CgroupFigures;

/* The hierarchies figures come from: cgroup2 (unified), the v1 controllers
 * of a legacy or hybrid host, and systemd's named v1 one (which holds the
 * tree of units where there is no cgroup2). */
typedef enum CgroupHierarchy {
        CGROUP_UNIFIED,
        CGROUP_NAMED_SYSTEMD,
        CGROUP_V1_CPUACCT,
        CGROUP_V1_MEMORY,
        CGROUP_V1_PIDS,
        CGROUP_V1_BLKIO,
        _CGROUP_HIERARCHY_MAX,
} CgroupHierarchy;

typedef struct CgroupSet {
        int fd[_CGROUP_HIERARCHY_MAX];  /* the cgroup in each hierarchy; -1: none there */
} CgroupSet;
#define CGROUP_SET_NONE { .fd = { [0 ... _CGROUP_HIERARCHY_MAX - 1] = -1 } }

typedef struct PodAppStats {
        char *name;
        bool running;                   /* its unit has a cgroup */
        CgroupSet cgroup;
        CgroupFigures before, now;
} PodAppStats;

typedef struct PodStats {
        char *uuid;
        char *name;                     /* the pod's name, or NULL */
        char *cgroup_path;              /* the pod's cgroup, as /proc/PID/cgroup shows it */
        CgroupSet cgroup;
        CgroupFigures before, now;
        PodAppStats *apps;              /* the manifest's apps, in its order */
        size_t n_apps;
} PodStats;

/* The cgroups of app of the running pod p, in each hierarchy where it has
 * one: -ENOENT when the manifest has no such app, -ESRCH when it does not
 * run (nor the pod). Undone by cgroup_set_done(). */
int pod_app_cgroups_open(Pod *p, const char *app, CgroupSet *ret, Error **err);
void cgroup_set_done(CgroupSet *s);

/* Finds the cgroups of the running pod p and of its apps. -ESRCH (with a
 * message that says so and names the pod's state) when it does not run. */
int pod_stats_open(Pod *p, PodStats *ret, Error **err);
void pod_stats_done(PodStats *s);

/* Reads the figures of the pod and its apps; those read before are kept in
 * before, for pod_stats_cpu_percent(). */
void pod_stats_sample(PodStats *s);

/* Reads the figures of the cgroups of cg now (pod_stats_sample() does it
 * for a pod and its apps; for the unit tests, on any directories). */
void cgroup_figures_read(const CgroupSet *cg, CgroupFigures *ret);

/* CPU used between two samples, in percent of one CPU (two busy CPUs are
 * 200); negative when it is not known. */
double cgroup_cpu_percent(const CgroupFigures *before, const CgroupFigures *now);

/* The host's part of a cgroup path of a process in a pod (as
 * /proc/PID/cgroup shows it) under a host systemd: up to the first unit
 * that is not a slice ("/system.slice/pod@x.service/payload/init.scope"
 * -> "/system.slice/pod@x.service"). NULL when there is none, or on
 * allocation failure (errno says which). For the unit tests. */
char *cgroup_path_host_unit(const char *path);

/* The parts of one line of /proc/PID/cgroup, "ID:CONTROLLERS:PATH": whether
 * it is that of hierarchy h, and where its path starts. For the unit tests. */
const char *cgroup_line_path(const char *line, CgroupHierarchy h);
