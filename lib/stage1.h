/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The stage1 of a pod: DATA/pods/STATE/UUID/stage1/, made of
 *
 *   manifest   an appc ImageManifest whose annotations name the entrypoints
 *              ("sdpod/stage1/gc": "/sdpod/gc", ...), as paths inside rootfs
 *   rootfs/    the pod's root file system; apps live at opt/stage2/NAME/rootfs
 *
 * Entrypoints run on the host. Their contract is sdpod-stage1(7). */

#include "error.h"

#define STAGE1_ENTRYPOINT_GC "sdpod/stage1/gc"

/* Renders the stage1 into a pod directory being prepared. Until a stage1
 * image is built (stage1-rootfs/), this is the skeleton the apps need:
 * stage1/rootfs/opt/stage2/. */
int stage1_render(int pod_fd, Error **err);

/* Runs the pod's gc entrypoint, if its stage1 names one, and waits for it:
 * argv[1] is the UUID, the working directory is the pod directory. A pod
 * without a stage1 or without a gc entrypoint has nothing to run (0). A
 * failure is an error that names the entrypoint and the exit status. */
int stage1_run_gc(int pod_fd, const char *uuid, Error **err);
