/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* What a containerd task is in sdpod's terms (containerd-shim-sdpod-v1(8)).
 *
 * A task is either a pod or an app of one:
 *   - the CRI's sandbox task, and a task with no CRI annotations (plain
 *     `ctr run`), are a mutable pod (a sandbox, podapp(1));
 *   - a CRI container is an app of its sandbox's pod, and a plain task is
 *     also the one app of its own pod, whose root is the bundle's rootfs.
 *
 * These are the operations the task service needs, on the pod store, each
 * a short synchronous step; the service (task-service.h) keeps the tasks'
 * states, answers containerd and publishes the events. Everything here
 * goes through the same functions as sdpod and podapp, so a task's pod and
 * apps are what `sdpod list`, `podapp list`, `machinectl` and `journalctl
 * -M` show, and the pod's apps get the confinement every app gets. */

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "basic/error.h"
#include "basic/uuid.h"
#include "image/image-store.h"
#include "manifest/app-args.h"
#include "pod/pod-stats.h"
#include "pod/pod.h"

/* In the bundle: which pod and app a task is, for `delete` once the shim
 * that made it is gone. */
#define SHIM_TASK_RECORD "sdpod-task"

typedef struct ShimTarget {
        char uuid[UUID_STRING_MAX];     /* the pod */
        char *app;                      /* the app; NULL: the pod itself */
} ShimTarget;

void shim_target_done(ShimTarget *t);

int shim_target_write(int bundle_fd, const ShimTarget *t, Error **err);
/* -ENOENT: the bundle has none (the task was never made). */
int shim_target_read(int bundle_fd, ShimTarget *ret, Error **err);

/* One mount of a task's root file system, as containerd hands it over
 * (CreateTaskRequest.rootfs): the snapshot. */
typedef struct ShimMount {
        const char *type, *source;
        char *const *options;           /* fstab style */
        size_t n_options;
} ShimMount;

/* Mounts the snapshot at BUNDLE/rootfs, in order (the shim's duty in
 * runtime v2). No mounts: the bundle's rootfs is used as it is. */
int shim_rootfs_mount(const char *bundle, const ShimMount *mounts, size_t n, Error **err);
/* Unmounts whatever is mounted at BUNDLE/rootfs and below; nothing is
 * fine. The directory's content is never touched. */
int shim_rootfs_unmount(const char *bundle, Error **err);

/* Prepares and launches a mutable pod from a (sandbox's) arguments and
 * waits until it is ready. */
int shim_pod_start(PodStore *ps, ImageStore *is, const PodArgs *a, char ret_uuid[static UUID_STRING_MAX], Error **err);

/* The pod's PID 1 on the host; -ESRCH when it does not run. */
int shim_pod_leader(PodStore *ps, const char *uuid, pid_t *ret, Error **err);

/* Whether the pod has ended, and its exit status (0 when every app ended
 * with 0, else the first app's that did not). -ENOENT: it is gone. */
typedef struct ShimExit {
        bool exited;
        int status;             /* 128+N for signal N */
        uint64_t exited_usec;   /* realtime; 0: unknown */
} ShimExit;
int shim_pod_exit(PodStore *ps, const char *uuid, ShimExit *ret, Error **err);

/* Stops the pod: in order for SIGTERM (and any signal but SIGKILL), by
 * force for SIGKILL; returns once it has exited. Blocks: the service runs
 * it in a child of its own. */
int shim_pod_stop(PodStore *ps, const char *uuid, int sig, Error **err);

/* Stops (by force) the pod if it runs, and removes it. A pod already gone
 * is fine. */
int shim_pod_remove(PodStore *ps, const char *uuid, Error **err);

/* The app a of the running pod: added (podapp add), started. */
int shim_app_add(PodStore *ps, ImageStore *is, const char *uuid, const AppArgs *a, Error **err);
/* Starts the app and returns its main process's PID on the host (0 when it
 * has exited already). */
int shim_app_start(PodStore *ps, const char *uuid, const char *app, pid_t *ret_pid, Error **err);
/* Sends sig to the app's main process, or to all of its processes. An app
 * that does not run: -ESRCH. */
int shim_app_kill(PodStore *ps, const char *uuid, const char *app, int sig, bool all, Error **err);
/* Whether the app has exited, with its recorded status. */
int shim_app_exit(PodStore *ps, const char *uuid, const char *app, ShimExit *ret, Error **err);
/* Stops the app at once and removes it with its resources; gone is fine. */
int shim_app_remove(PodStore *ps, const char *uuid, const char *app, Error **err);

/* The host PIDs of the pod's processes (app NULL) or of one app's: its
 * service's cgroup in the pod. At most max. */
int shim_pids(PodStore *ps, const char *uuid, const char *app, pid_t *ret, size_t max, size_t *ret_n, Error **err);

/* An exec's terminal (shim-tty.h). */
typedef struct ShimExecTty {
        int size_fd;            /* the slave of the shim's window-size carrier */
        const char *term;       /* the command's TERM, or NULL: none */
} ShimExecTty;

/* Runs argv (argv[0] the program, absolute or looked up in the app's
 * PATH by the stage1) in the app as podapp exec does, in a child of ours
 * whose standard input, output and error are the paths given (NULL:
 * /dev/null): the child's exit status is the command's. With tty, the
 * command runs on a new pty of the pod's that the child relays as
 * `sdpod enter -t` does: stdin (when given) into it, with the
 * terminal's EOF character at its end, and its output to stdout. */
int shim_exec_spawn(PodStore *ps, const char *uuid, const char *app, char *const *argv,
                    const char *const stdio[3], const char *instance, const ShimExecTty *tty, pid_t *ret_pid,
                    Error **err);
/* The command's unit in the pod is APP_EXEC_UNIT_FORMAT of app and
 * instance (pod-exec.h: the child names it so). Sends sig to every
 * process of it; with end, then waits (bounded) until it has ended and
 * has the pod's systemd let go of it, and of the stdio (containerd's
 * FIFOs) it holds for it, which a unit that remains after its exit keeps
 * open. A unit the pod's systemd does not have (not started yet, or gone):
 * -ESRCH. Blocks on the pod's systemd (each call within its deadline): the
 * service runs it in a child of its own. */
int shim_exec_kill(PodStore *ps, const char *uuid, const char *app, const char *instance, int sig, bool end,
                   Error **err);

/* The pod's (app NULL) or the app's cgroup figures now (pod-stats.h); a
 * figure the host does not give is POD_STATS_UNKNOWN. */
int shim_figures(PodStore *ps, const char *uuid, const char *app, CgroupFigures *ret, Error **err);
