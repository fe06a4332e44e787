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
 * frozen app's SIGTERM (task-service.c). */

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
