/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* What sdpod list and status show about a pod, besides its state: its
 * manifest, its times and the exit statuses of its apps. */

#include <stdint.h>

#include "basic/error.h"
#include "manifest/pod-manifest.h"
#include "pod/pod.h"

typedef struct PodAppExit {
        char *name;
        int exit_status;        /* as the shell shows it: 128+N for signal N */
        uint64_t exited_usec;   /* when it was recorded */
} PodAppExit;

typedef struct PodInfo {
        PodManifest *manifest;  /* NULL: none yet (an embryo, a failed prepare) or unreadable */
        char *manifest_error;   /* why it is unreadable; NULL when it is fine or absent */
        uint64_t created_usec;  /* 0: unknown (no manifest yet) */
        uint64_t started_usec;  /* 0: never started */
        uint64_t exited_usec;   /* 0: unknown; when the last app status was recorded */
        PodAppExit *apps;       /* the apps whose exit status is recorded */
        size_t n_apps;
} PodInfo;

/* Reads what there is. A missing or broken manifest is not an error here
 * (status must still show the pod): it is reported in manifest_error.
 * Fails only on allocation failure. Reads through p->fd, so it works
 * while the pod moves between state directories. */
int pod_info_read(Pod *p, bool with_app_exits, PodInfo *ret);
void pod_info_done(PodInfo *info);

/* The pod's name (sdpod prepare --name), or NULL. */
const char *pod_info_name(const PodInfo *info);

/* Where an app's exit status is recorded, relative to the pod directory;
 * the reaper writes it inside the pod as /sdpod/status/NAME: a decimal
 * number and a newline. */
#define POD_APP_STATUS_DIR "status"

/* Reads the exit status of app name from the status directory status_fd
 * (a regular file, not followed through a symlink) into ret's exit_status
 * and exited_usec (its modification time); ret->name is left alone.
 * -ENOENT: none recorded; -EBADMSG: not an exit status. */
int pod_app_exit_read_at(int status_fd, const char *name, PodAppExit *ret);

/* The image ids every pod refers to, in every state: image gc keeps their
 * trees, which pods use as the lower layer of their apps' roots. */
int pod_store_image_ids(PodStore *s, char ***ret, Error **err);
