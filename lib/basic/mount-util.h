/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

#include <stdbool.h>

#include "basic/error.h"

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

/* The layers of an overlay: lower read-only, changes in upper, work as
 * overlayfs's scratch directory (on upper's file system). */
typedef struct OverlayLayers {
        const char *lower;
        const char *upper;
        const char *work;
        /* >= 0: the lower layer is seen through an idmapped mount of this
         * user namespace (its host id N shown as the namespace's N), which
         * is attached at lower_mountpoint, an empty directory of ours, only
         * while the overlay is made (overlayfs takes layers by path before
         * Linux 6.13): the caller must be in a mount namespace of its own. */
        int userns_fd;
        const char *lower_mountpoint;
} OverlayLayers;

/* Makes the overlay with the new mount API, attached nowhere, nodev (no
 * device node on it opens, whoever made it): *ret_fd is
 * the mount, for move_mount(2) to its place, in this mount namespace or
 * another (a running pod's: a mount made on the host after the pod started
 * does not propagate into it). */
int mount_overlay_detached(const OverlayLayers *l, int *ret_fd, Error **err);

/* Attaches the detached mount fd at target. */
int mount_attach(int fd, const char *target, Error **err);

/* Moves this process to a mount namespace of its own, a slave of the one
 * it was in: the host's mounts still propagate in, its own never out.
 * Directories opened before belong to the old namespace's mounts: paths
 * from them would not see the new ones. */
int mount_namespace_unshare(Error **err);

/* Detaches (MNT_DETACH) from this process's own mount namespace every
 * mount that is neither at or below a path of keep (NULL-terminated,
 * absolute, canonical) nor on the way to one: what the namespace does not
 * need is not held. (A private namespace of a host whose mounts do not
 * propagate otherwise pins every mount it copied, so that the host's
 * unmount does not end it.) */
int mount_namespace_detach_unneeded(char *const *keep, Error **err);

/* Binds source (a directory or file) at target, not recursively: mounts
 * below source are not carried along. flags: MS_RDONLY, MS_NODEV,
 * MS_NOSUID, MS_NOEXEC for the new mount (others are ignored). */
int mount_bind(const char *source, const char *target, unsigned long flags, Error **err);
