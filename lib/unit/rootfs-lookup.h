/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* Lookups inside an app's root file system, as the app itself will see it:
 * every path is resolved with the root as "/" (open_in_root), so a symlink in
 * an image can never make sdpod read or judge a file of the host or of the
 * pod. Users and groups come from the root's own /etc/passwd and /etc/group,
 * parsed as plain files: NSS modules of the host have nothing to say about
 * an image. */

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "basic/error.h"

/* The largest /etc/passwd or /etc/group read: a few MiB is tens of
 * thousands of users; anything larger is refused, never read. */
#define ROOTFS_DB_MAX (4U << 20)

/* The search path of an app whose environment has no PATH (Docker's). */
#define ROOTFS_DEFAULT_PATH "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

/* A decimal user or group id as systemd accepts it: 0..4294967294 without
 * 65535 (the 16-bit -1). -EINVAL when s is not all digits, -ERANGE when the
 * number is not a valid id. */
int parse_id(const char *s, uint32_t *ret);

typedef struct RootfsUser {
        uid_t uid;
        gid_t gid;      /* the primary group of the passwd entry; 0 without one */
        char *home;     /* the entry's home directory; NULL without an entry or when empty */
        bool found;     /* the user has an entry in /etc/passwd */
} RootfsUser;

void rootfs_user_done(RootfsUser *u);

/* Resolves user, a name or a number, in ROOT/etc/passwd. A number needs no
 * entry (the app may run as any id); its entry, when there is one, gives the
 * home directory and primary group. A name must have one: -ESRCH when it
 * has not (a missing /etc/passwd included). Malformed lines are skipped, as
 * the C library's "files" module skips them. A file that is not regular or
 * is larger than ROOTFS_DB_MAX is an error (-EBADMSG, -EFBIG). */
int rootfs_lookup_user(int rootfd, const char *user, RootfsUser *ret, Error **err);

/* Resolves group, a name or a number, in ROOT/etc/group; -ESRCH for a name
 * without an entry. */
int rootfs_lookup_group(int rootfd, const char *group, gid_t *ret, Error **err);

/* Finds the program that execvp(3) would run for name inside the root:
 *  - a name with a "/" is taken as it is, relative names from working_directory;
 *  - a name without is searched in each directory of path_env (empty and
 *    relative entries are taken from working_directory, as execvp does).
 * Returns the absolute, normalised path (without "." or empty components) in
 * *ret. -ENOENT: nothing of that name; -EACCES: found, but not a regular file
 * with an execute bit (the search goes on past such a file, as execvp's does,
 * and reports it only when nothing better is found); -EINVAL: the name has a
 * ".." component (it would be resolved differently lexically and in the
 * tree). The messages name the path, not the field: callers add that. */
int rootfs_find_executable(int rootfd, const char *name, const char *path_env, const char *working_directory,
                           char **ret, Error **err);
