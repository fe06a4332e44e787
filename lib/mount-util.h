/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

#include <stdbool.h>

#include "error.h"

typedef struct UmountStats {
        unsigned unmounted;     /* cleanly unmounted */
        unsigned detached;      /* busy: detached lazily (MNT_DETACH), with a warning */
} UmountStats;

/* Unmounts every mount of this mount namespace whose target is path or lies
 * below it, deepest first, so that the tree can then be deleted without
 * ever reaching through a mount into data that is not ours. path must be
 * absolute and canonical (no symlinks, no "." or ".."), as /proc/self/mountinfo
 * shows targets. A busy mount is detached lazily (MNT_DETACH) as a last resort
 * and reported through warn(). Mounts that vanish meanwhile (another process
 * unmounted them) are fine. Returns 0 when nothing is mounted there any more.
 * ret may be NULL. */
int umount_below(const char *path, UmountStats *ret, Error **err);

/* Whether anything is mounted at or below path (canonical, absolute). */
int has_mounts_below(const char *path, Error **err);

/* Mounts an overlay at target: lower read-only, changes in upper, work as
 * overlayfs's scratch directory (on upper's file system). Paths may contain
 * any character; they are escaped for overlayfs's option parser. */
int mount_overlay(const char *lower, const char *upper, const char *work, const char *target, Error **err);

/* The same overlay, made with the new mount API and not attached anywhere:
 * *ret_fd is the mount, for move_mount(2) into another mount namespace (a
 * running pod's: a mount made on the host after the pod started does not
 * propagate into it). */
int mount_overlay_detached(const char *lower, const char *upper, const char *work, int *ret_fd, Error **err);

/* Binds source (a directory or file) at target, not recursively: mounts
 * below source are not carried along. read_only makes the bind read-only. */
int mount_bind(const char *source, const char *target, bool read_only, Error **err);
