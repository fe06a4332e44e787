/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* Every unit file sdpod-generator writes for a pod, decided in one place:
 * from the pod's root (the stage1 root: its manifest at /sdpod/pod, its apps
 * at /opt/stage2/NAME/rootfs) to a list of files and links relative to the
 * generator's output directory. Nothing here fails because of the pod: a
 * manifest that cannot be used becomes sdpod-manifest-error.service, an app
 * that cannot run becomes an app@NAME.service that fails with the reason,
 * and each such reason is also returned for the log. */

#include <stddef.h>
#include <sys/types.h>

#include "basic/macro.h"

typedef struct UnitFile {
        char *path;             /* relative to the output directory: NAME or DIR/NAME (.wants/, .d/) */
        char *content;          /* a regular file's text, or NULL for a link */
        char *link_target;      /* a relative symlink's target */
} UnitFile;

/* A user and group an app runs as: the pod's /etc needs them
 * (pod-userdb.h). */
typedef struct UnitIds {
        uid_t uid;
        gid_t gid;
} UnitIds;

typedef struct PodUnits {
        UnitFile *files;
        size_t n_files;
        UnitIds *ids;           /* one per app that can run */
        size_t n_ids;
        char **errors;          /* what went wrong, one message each, for the log */
} PodUnits;

/* Fails only for lack of memory (-ENOMEM). */
int pod_units_build(int pod_rootfd, PodUnits *ret);
void pod_units_done(PodUnits *u);
