/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* A running task's resources as containerd changes them: Pause and Resume
 * (ctr task pause/resume, nerdctl pause), with the cgroup2 freezer of the
 * app's unit cgroup (containerd-shim-sdpod-v1(8)).
 *
 * The app's cgroup is found as sdpod stats finds it (pod-stats.h): the
 * pod's cgroup from the host's side of its PID 1's, the app's below it by
 * the manifest's name, opened without following anything. Its
 * cgroup.freeze is written by the host, not asked of the pod's systemd:
 * the pod's systemd is the pod's (it may lie), and the kernel freezes
 * whatever the pod does meanwhile. The pod's root may thaw its own app
 * again (it owns the cgroup below the pod's); that only undoes what its
 * own owner asked. How long the shim waits for the kernel to report the
 * cgroup frozen is bounded (SHIM_FREEZE_TIMEOUT_USEC): a pod whose tasks
 * do not freeze in time (uninterruptible sleep) gets an error and is
 * thawed, never waited on.
 *
 * A frozen task still ends: SIGKILL reaches frozen processes (cgroup2),
 * and the task service thaws an app before it signals it and every paused
 * app of a pod before it stops the pod, so that a stop never waits on a
 * frozen app's SIGTERM (task-service.c).
 *
 * Update (the CRI's UpdateContainerResources, ctr task update) changes the
 * limits sdpod gives an app at creation, and only those: memory.limit
 * (MemoryMax=), cpu.quota/period (CPUQuota=) and pids.limit (TasksMax=),
 * set on the app's unit by the pod's systemd (SetUnitProperties, kept
 * across its reloads), as the unit file set them. Where the pod's systemd
 * cannot apply one (the app's cgroup2 cgroup has no such controller: a
 * cgroup v1 or hybrid host, or a controller not delegated to the pod), the
 * update is refused naming the field, as creating such an app is; nothing
 * is half applied. The rest of LinuxResources is what creation ignores
 * (swap, reservation, cpu.shares, cpus, mems) and the device rules, which
 * containerd sends back as they were: an update never widens them. */

#include <stdbool.h>

#include "basic/error.h"
#include "pod/pod.h"

#define SHIM_FREEZE_TIMEOUT_USEC (2 * 1000000ULL)

/* Freezes (freeze true) or thaws the app of the running pod uuid, and for
 * a freeze waits until the kernel reports it frozen. -EOPNOTSUPP when the
 * app has no cgroup2 cgroup (a cgroup v1 host without cgroup2), -ESRCH
 * when it does not run, -ETIMEDOUT (thawed again) when it did not freeze
 * in time. */
int shim_app_freeze(PodStore *ps, const char *uuid, const char *app, bool freeze, Error **err);

/* Applies the LinuxResources (JSON, as containerd sends it) to the app of
 * the running pod uuid. Talks to the pod's systemd (bounded by
 * pod-bus.h's deadlines): to be run away from an event loop. */
int shim_app_update(PodStore *ps, const char *uuid, const char *app, const char *resources_json, Error **err);
