/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The apps of a running mutable pod, one at a time (seed 002; podapp(1)).
 *
 * The manifest stays the truth: an app is in the pod when the manifest
 * names it. add and rm change the manifest (atomically, rename(2)) under an
 * exclusive flock of the pod directory's pod.lck, so they are serialized,
 * and readers never need the lock. start and stop take pod.lck shared: any
 * number of them at once, but never while an app comes or goes. The pod's
 * systemd is reached over its private socket (pod-bus.h); after each
 * change of the manifest it reloads, and sdpod-generator writes the units.
 *
 * An app's resources: its root (an overlay mounted in the pod, and its
 * upper/ and work/ in apps/NAME/), its units (generated), its exit status
 * (status/NAME). Its volumes and /dev are mounts of its service's own mount
 * namespace, which ends with its last process. */

#include <stdbool.h>
#include <stdint.h>

#include "basic/error.h"
#include "image/image-store.h"
#include "manifest/app-args.h"
#include "pod/pod.h"
#include "pod/pod-info.h"

/* Taken by add and rm (exclusive), start and stop (shared). */
#define POD_APPS_LOCK "pod.lck"

/* Seed 002's app states. */
typedef enum AppState {
        APP_STATE_UNKNOWN,      /* the pod exited without a record of the app's end */
        APP_STATE_PREPARING,    /* podapp add is adding it */
        APP_STATE_PREPARED,     /* added (or stopped before it ever ran), not started */
        APP_STATE_RUNNING,
        APP_STATE_STOPPING,
        APP_STATE_EXITED,       /* it ran and ended; its exit status is recorded */
        APP_STATE_DELETING,     /* podapp rm is removing it */
        _APP_STATE_MAX,
} AppState;

const char *app_state_to_string(AppState s);

typedef struct AppStatus {
        char *name;
        AppState state;
        uint64_t created_usec;  /* realtime; 0: unknown */
        uint64_t started_usec;  /* 0: not started (or unknown) */
        uint64_t exited_usec;   /* 0: has not exited (or unknown) */
        int exit_status;        /* valid when exited; the names of sdpod status */
        bool exited;
        unsigned restarts;      /* by its restart policy, since it was last started */
        int restart_exit_status;        /* with restarts: its exit status before the last */
        const char *health;     /* with a health check: "starting", "healthy", "unhealthy"; else NULL */
} AppStatus;

void app_status_done(AppStatus *s);

/* The stage1's default stop timeout (DefaultTimeoutStopSec): an app's
 * grace unless it has one of its own (app-lifecycle.h). */
#define APP_STOP_GRACE_USEC (10 * 1000000ULL)
/* The grace of stop and rm when none is asked for: the app's own. */
#define APP_GRACE_OWN UINT64_MAX

/* Adds the app a (a->name required) to the running mutable pod p: renders
 * its root, mounts it in the pod, adds it to the manifest, reloads the
 * pod's systemd. Returns with the app "prepared". Refused, with the
 * manifest unchanged: an app of that name exists (-EEXIST), the pod is not
 * running (-ESRCH) or not mutable (-EOPNOTSUPP), a bad request (-EINVAL). */
int pod_app_add(PodStore *ps, Pod *p, ImageStore *is, const AppArgs *a, Error **err);

/* start, stop and rm, like add, work on mutable pods only: in an immutable
 * pod, an app's end is the pod's (seed 001), whatever asked for it.
 *
 * Starts the app and waits until systemd has started it; an app that runs
 * already is left alone (returns 1). A job that fails maps as
 * bus_job_wait() says, with the app's exit status in the message. */
int pod_app_start(PodStore *ps, Pod *p, const char *app, Error **err);

/* Stops the app: its pre-stop hook, SIGTERM, then SIGKILL after grace_usec
 * (APP_GRACE_OWN, or more than the app's own stop timeout, which bounds
 * it: that timeout, with a warning for more; 0: at once); returns once its
 * exit status is recorded. Its resources stay (start it again, or rm it). Returns 1 when
 * it was not running. */
int pod_app_stop(PodStore *ps, Pod *p, const char *app, uint64_t grace_usec, Error **err);

/* Stops the app if it runs and removes it and every resource of it; also
 * finishes the removal of an app a crashed rm or add left half done. */
int pod_app_rm(PodStore *ps, Pod *p, const char *app, uint64_t grace_usec, Error **err);

/* The status of one app (-ENOENT: the pod has no such app), or of all, in
 * the manifest's order. The pod may be in any state: a pod that does not
 * run tells what its records say. */
int pod_app_status(PodStore *ps, Pod *p, const char *app, AppStatus *ret, Error **err);

/* Whether the app has ended, from what the host reads without the pod's
 * systemd, which may be stopped or lie (pod_app_status asks it): the exit
 * record its reaper wrote (a regular file, read bounded, never followed)
 * and its unit's cgroup (empty or gone). A running pod's app has ended
 * when both say so; a pod that does not run has no running app: it ended
 * with its record, or, without one, as SIGKILL would have ended it
 * (exit_status 137, exited_usec 0). ret->exited false: still running (or
 * not recorded yet). Never blocks on the pod. */
int pod_app_exit_seen(PodStore *ps, Pod *p, const char *app, PodAppExit *ret, Error **err);
int pod_app_list(PodStore *ps, Pod *p, AppStatus **ret, size_t *ret_n, Error **err);
