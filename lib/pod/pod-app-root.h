/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* An app's root file system: an overlay of its image's tree (shared by every
 * pod, read-only) with the pod's own apps/NAME/upper and apps/NAME/work,
 * seen in the pod at /opt/stage2/NAME/rootfs. The run entrypoint mounts the
 * roots of the apps a pod starts with (pod-run.h); these functions give a
 * running pod one more root (podapp add) or take one away (podapp rm), in
 * the mount namespace of the pod's PID 1, where the app's units will find
 * it: a mount made on the host after the pod started would never reach the
 * pod, so the overlay is made detached on the host, where its layers' paths
 * mean something, and moved into the pod (move_mount(2)). In a pod with a
 * user namespace (pod-userns.h), the image's tree is seen through an
 * idmapped mount of the pod's own user namespace. */

#include <stdbool.h>
#include <sys/types.h>

#include "basic/error.h"
#include "manifest/pod-manifest.h"
#include "pod/pod-process.h"

typedef struct AppRootLayers {
        char *lower;            /* the image's tree: DATA/tree/HEX/rootfs */
        char *upper;            /* POD/apps/NAME/upper */
        char *work;             /* POD/apps/NAME/work */
        char *lower_mountpoint; /* POD/apps/NAME/lower: the idmapped tree's place while the overlay is made */
} AppRootLayers;

/* pod is the pod directory's path, data the data directory's. */
int app_root_layers(const char *pod, const char *data, const PodApp *app, AppRootLayers *ret, Error **err);
void app_root_layers_done(AppRootLayers *l);

/* The overlay of the layers, made detached (OverlayLayers): userns_fd < 0
 * for a pod without a user namespace. With one, the caller must be in a
 * mount namespace of its own. */
int app_root_make(const AppRootLayers *l, int userns_fd, int *ret_fd, Error **err);

/* Mounts the app's root at /opt/stage2/NAME/rootfs in the running pod. The
 * calling process moves to a mount namespace of its own for that (a slave
 * of the host's). root_uid: the owner on the host of the pod's root (0
 * without a user namespace), given an output file (--stdout, --stderr)
 * made for the app. */
int pod_app_root_mount(const PodProcess *p, const char *pod, const char *data, const PodApp *app, bool userns,
                       uid_t root_uid,
                       Error **err);

/* Unmounts it again, in the pod and in systemd-nspawn's own mount namespace
 * (where the roots of the apps the pod started with were mounted), and
 * removes the mount point. Nothing mounted is fine. */
int pod_app_root_unmount(const PodProcess *p, const char *pod, const char *app, Error **err);
