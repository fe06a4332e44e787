/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The stage1 run entrypoint (sdpod-stage1(7)): turns a pod directory in
 * pods/run/ into a running pod. In a mount namespace of its own, so that
 * every mount below goes away with the pod's last process and nothing leaks
 * onto the host even when the pod is killed, it mounts:
 *
 *   stage1/rootfs                   overlay of the stage1 image's rootfs
 *   stage1/rootfs/opt/stage2/NAME/rootfs
 *                                   overlay of the app's image tree
 *   stage1/rootfs/sdpod             the pod directory itself (not its
 *                                   mounts), read-only: the manifest at
 *                                   /sdpod/pod, seen anew after each atomic
 *                                   rewrite
 *   stage1/rootfs/sdpod/status      writable: the exit statuses, NAME each
 *   stage1/rootfs/sdpod/volumes/NAME
 *                                   each volume: host ones bound in, empty
 *                                   ones the pod directory's volumes/NAME
 *   stage1/rootfs/var/log/journal   the pod directory's journal/
 *
 * With a user namespace (pod-userns.h), the overlays' lower layers are
 * idmapped to the pod's range and what the pod writes is owned by it.
 * Then the pod's network (pod-net.h): none of its own with --net=host, a
 * namespace with only lo for none, the one named for ns:PATH, or a new one
 * at POD/netns on the CNI networks named (net/pod-network.h), and the name
 * files every app sees (net/net-files.h). Then it starts systemd-nspawn
 * --boot on stage1/rootfs as its child, which inherits the pod lock
 * (lock_fd), and supervises it until the pod has exited (pod-supervise.h). */

#include <limits.h>
#include <stdbool.h>

#include "basic/error.h"
#include "manifest/pod-manifest.h"
#include "pod/pod-userns.h"

/* Where the run entrypoint leaves why a pod did not start, in the pod
 * directory, for a launcher whose child's stderr was /dev/null. */
#define POD_RUN_ERROR_FILE "run-error"

/* The working directory is the pod directory; only returns on failure. */
int pod_run_exec(const char *uuid, int lock_fd, Error **err);

/* What the run entrypoint of every flavor starts from, in this order: the
 * pod directory (the working directory) and the data directory (DATA of
 * DATA/pods/run/UUID); the operator's mount namespace, where gc finds the
 * pod's kept network namespace (netns.h) after the run entrypoint is gone;
 * then a mount namespace of its own (mount-util.h), in which the pod
 * directory is opened; the pod's manifest, its user namespace and the
 * hold on its range (pod_userns_hold(), open while the pod runs), and its
 * machine name (its name, or sdpod-UUID). */
typedef struct PodRunStart {
        char pod[PATH_MAX];
        char data[PATH_MAX];
        int host_mnt_fd;
        int pod_fd;
        PodManifest *manifest;
        PodUserns userns;
        int userns_fd;          /* -1 without a user namespace */
        int userns_hold;        /* -1 without a user namespace */
        char *machine;
} PodRunStart;
int pod_run_start(const char *uuid, PodRunStart *ret, Error **err);
void pod_run_start_done(PodRunStart *s);

/* The run entrypoint of a stage1 program (sdpod-stage1(7)): run(uuid,
 * lock_fd) with the pod lock's fd from $SDPOD_LOCK_FD (removed from the
 * environment), which returns only on failure. Why the pod did not start
 * is also left in POD_RUN_ERROR_FILE, for a launcher whose child's stderr
 * was /dev/null. Returns -errno, with err set. */
int pod_run_entrypoint(const char *uuid, int (*run)(const char *uuid, int lock_fd, Error **err), Error **err);

/* How systemd-nspawn must be told to treat the host's systemd. */
typedef struct NspawnHost {
        bool keep_unit;         /* run in the caller's unit (a service) */
        bool register_machine;  /* systemd-machined is reachable */
        bool systemd;           /* the host runs systemd */
} NspawnHost;
void nspawn_host_detect(NspawnHost *ret);
