/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "error.h"

/* Opens path below rootfd, resolving every symlink and ".." as if rootfd were
 * "/" (openat2 RESOLVE_IN_ROOT): nothing outside the root is ever reached,
 * whatever the tree contains. Returns an fd or a negative errno. */
int open_in_root(int rootfd, const char *path, int flags, mode_t mode);

/* Opens path below dirfd without following any symlink on the way
 * (openat2 RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS): -ELOOP if one is met. */
int open_beneath_no_symlinks(int dirfd, const char *path, int flags, mode_t mode);

/* Creates every missing directory of path below rootfd and returns an
 * O_PATH|O_DIRECTORY fd of the last one. With follow_symlinks, symlinks on the
 * way are resolved with rootfd as root (as a layer's /lib -> usr/lib must
 * be); without, meeting one is an error (-ELOOP). */
int mkdir_p_in_root(int rootfd, const char *path, mode_t mode, bool follow_symlinks);

/* mkdir -p on an ordinary path; existing directories are fine. */
int mkdir_p(const char *path, mode_t mode);

/* Removes name below dirfd recursively. Never descends into another file
 * system (a mount point is left alone and reported as -EBUSY), so it cannot
 * delete through a mount into data that is not ours. Missing is success. */
int rm_rf_at(int dirfd, const char *name);

/* fsync(2) of a directory, so a rename or create in it is durable. */
int fsync_dir_at(int dirfd, const char *path);

/* Writes a random name "<prefix>XXXXXXXXXXXXXXXX" (16 hex digits) into buf. */
void random_name(char *buf, size_t size, const char *prefix);

/* Reads a whole regular file of at most max bytes; the result is NUL-terminated. */
int read_file_at(int dirfd, const char *path, size_t max, char **ret, size_t *ret_size, Error **err);

/* Replaces path atomically: temporary file in the same directory, write,
 * fsync, rename(2), fsync of the directory. Readers see the old or the new
 * content, never a torn file. */
int write_file_atomic_at(int dirfd, const char *path, const void *data, size_t size, mode_t mode, Error **err);

/* Writes all of buf to fd, retrying short writes. */
int write_all(int fd, const void *buf, size_t size);
