/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The stage1 of a pod: DATA/pods/STATE/UUID/stage1/, made of
 *
 *   manifest   the stage1 image's appc ImageManifest, whose annotations name
 *              the entrypoints ("sdpod/stage1/run": "/usr/lib/sdpod/run",
 *              ...) as paths inside the image's rootfs, plus the annotation
 *              "sdpod/stage1/image": the image directory the pod was
 *              prepared with
 *   rootfs/    the pod's root: while the pod runs, an overlay of the image's
 *              rootfs with upper/ and work/
 *   upper/     what the pod changed in its root (owned by the pod's root)
 *   work/      overlayfs's scratch directory
 *   lower/     where the image's rootfs is attached, idmapped, while the
 *              overlay is made (pod-userns.h)
 *
 * The stage1 image is a directory holding manifest and rootfs/, built by
 * stage1-rootfs/build-stage1 and shared read-only by every pod. Entrypoints
 * run on the host, so they come from the image, named by the image's own
 * manifest, never from anything the pod can write (its root, its stage1
 * directory); their contract is sdpod-stage1(7). */

#include <stdbool.h>
#include <sys/types.h>

#include "basic/error.h"

#define STAGE1_ENTRYPOINT_RUN "sdpod/stage1/run"
#define STAGE1_ENTRYPOINT_STOP "sdpod/stage1/stop"
#define STAGE1_ENTRYPOINT_ENTER "sdpod/stage1/enter"
#define STAGE1_ENTRYPOINT_GC "sdpod/stage1/gc"
#define STAGE1_ANNOTATION_IMAGE "sdpod/stage1/image"
/* The image's flavor: "nspawn", "fly" or "kvm" (an image without:
 * "nspawn"). */
#define STAGE1_ANNOTATION_FLAVOR "sdpod/stage1/flavor"
#define STAGE1_FLAVOR_NSPAWN "nspawn"
#define STAGE1_FLAVOR_FLY "fly"
#define STAGE1_FLAVOR_KVM "kvm"
/* The fly flavor's image, beside the nspawn flavor's (its directory's
 * sibling of this name). */
#define STAGE1_FLY_DIR_NAME "stage1-fly"
#define STAGE1_KVM_DIR_NAME "stage1-kvm"

/* The stage1 image new pods are prepared with: $SDPOD_STAGE1 when set, else
 * the one installed with sdpod. */
const char *stage1_image_dir(void);

/* The image of --stage1=arg (NULL: the default, stage1_image_dir()):
 * "nspawn" is stage1_image_dir(), "fly" and "kvm" its siblings
 * STAGE1_FLY_DIR_NAME and STAGE1_KVM_DIR_NAME, anything with a '/' the
 * image at that path. */
int stage1_image_of_arg(const char *arg, char **ret, Error **err);

/* Renders the stage1 into a pod directory being prepared: its manifest
 * (the image's, naming the image) and the empty rootfs, upper (owned by
 * root_uid, the host's id of the pod's root), work and lower directories.
 * The image (image, NULL: stage1_image_dir()) must have a manifest and a
 * rootfs directory. */
int stage1_render(int pod_fd, const char *image, uid_t root_uid, Error **err);

/* The flavor of a pod's stage1 (its manifest's STAGE1_ANNOTATION_FLAVOR;
 * "nspawn" without one): a pointer to a static string or to *buf. */
const char *stage1_flavor_of(int pod_fd, char buf[static 32]);
/* The flavor of a stage1 image directory. */
const char *stage1_image_flavor(const char *image, char buf[static 32]);
/* Whether a pod of flavor keeps its output in the host-written console log
 * (pod-log.h) rather than in a journal of its own: fly and kvm. */
bool stage1_flavor_has_log(const char *flavor);

/* The image directory a pod's stage1 manifest names (absolute); -EBADMSG
 * when it names none. */
int stage1_image_of(int pod_fd, char **ret, Error **err);

/* Executes a pod's entrypoint name in place of this process: argv is the
 * entrypoint's path, the pod's UUID and then args; the working directory is
 * the pod directory. Returns only on failure; a pod whose stage1 image has
 * no such entrypoint is -EOPNOTSUPP. */
int stage1_exec(int pod_fd, const char *uuid, const char *name, char *const *args, Error **err);

/* Hands a pod in run/ whose directory pod_fd the caller holds locked to its
 * run entrypoint, which boots it: the lock fd passes through the exec
 * ($SDPOD_LOCK_FD) and is held by systemd-nspawn until the pod has exited.
 * Returns only on failure. */
int stage1_exec_run(int pod_fd, const char *uuid, Error **err);

/* How a command runs in an app: ENTER_AS_APP as the app's user, group and
 * working directory rather than as root in "/"; ENTER_TTY on a new pty of
 * the pod's; ENTER_INTERACTIVE with the caller's input even when it is a
 * terminal (pod-exec.h tells what reaches the pod). ENTER_AS_APP is 1, so
 * "true" still means it. */
typedef enum EnterFlags {
        ENTER_AS_APP = 1 << 0,
        ENTER_TTY = 1 << 1,
        ENTER_INTERACTIVE = 1 << 2,
} EnterFlags;

/* Runs cmd (NULL: the entrypoint's default shell) in an app of a running
 * pod through its enter entrypoint, in place of this process: app NULL
 * means the pod's only app. pod_enter() (pod.h) is the form that checks
 * the pod runs. Returns only on failure. */
int stage1_exec_enter(int pod_fd, const char *uuid, const char *app, unsigned flags, char *const *cmd, Error **err);

/* The same in a child process, waited for. A pod whose stage1 has no such
 * entrypoint: -EOPNOTSUPP, with a message (for gc, nothing to run). A
 * failure is an error that names the entrypoint and the exit status
 * (-EPROTO), or the signal that killed it (-EINTR: interrupted, so that a
 * caller can tell it from a refusal). */
int stage1_run(int pod_fd, const char *uuid, const char *name, char *const *args, Error **err);
