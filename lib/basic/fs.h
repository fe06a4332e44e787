/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

#include <dirent.h>
#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>
#include <sys/types.h>

#include "basic/error.h"

/* Opens path below rootfd, resolving every symlink and ".." as if rootfd were
 * "/" (openat2 RESOLVE_IN_ROOT): nothing outside the root is ever reached,
 * whatever the tree contains. Returns an fd or a negative errno. */
int open_in_root(int rootfd, const char *path, int flags, mode_t mode);

/* Opens path below dirfd without following any symlink on the way
 * (openat2 RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS): -ELOOP if one is met. */
int open_beneath_no_symlinks(int dirfd, const char *path, int flags, mode_t mode);

/* The one resolver of a path in a pod's tree (tests/unit/test-pod-paths.sh
 * keeps it the only way): everything there is the pod's to change while
 * the host works in it, as the host's root. path is resolved below rootfd
 * as if rootfd were "/" (RESOLVE_IN_ROOT: no ".." or absolute path leads
 * out) and no symlink or magic link is followed anywhere on the way
 * (RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS): -ELOOP when one is met. A
 * symlink as the last component is -ELOOP too, but with O_PATH|O_NOFOLLOW
 * the link itself is opened (so it can be told apart, and removed). */
int pod_path_open(int rootfd, const char *path, int flags, mode_t mode);

/* Makes the caller a process that can name nothing of a pod's tree but
 * through pod_path_open(): its root and working directory become procfd,
 * a procfs of its own pid namespace (checked), opened before it entered
 * the pod's mount namespace. Then pod_path_umount() reaches the mount it
 * was given by the fd's magic link of that trusted procfs, never the
 * pod's /proc. For a helper child only (chroot(2) is the process's). */
int pod_tree_enter(int procfd);

/* Unmounts (detached) each mount stacked at name below dirfd (a
 * directory of a pod's tree from pod_path_open()): the mount is opened by
 * the resolver, checked to be a mount's root, and unmounted by its fd
 * ("self/fd/N" of the procfs pod_tree_enter() made the caller's root), so
 * a link the pod swaps in is never followed, and nothing but what is
 * mounted there is unmounted. At most 16; missing is success. */
int pod_path_umount(int dirfd, const char *name);

/* Whether path exists below dirfd, reached without any symlink (the last
 * component may be one). */
bool exists_beneath(int dirfd, const char *path);

/* Unlinks path (flags: 0 or AT_REMOVEDIR) below dirfd, its directory
 * reached without any symlink; missing is success. */
int unlink_beneath(int dirfd, const char *path, int flags);

/* rm_rf_at() of path below dirfd, its directory reached without any
 * symlink. */
int rm_rf_beneath(int dirfd, const char *path);

/* Creates every missing directory of path below rootfd and returns an
 * O_PATH|O_DIRECTORY fd of the last one. With follow_symlinks, symlinks on the
 * way are resolved with rootfd as root (as a layer's /lib -> usr/lib must
 * be); without, meeting one is an error (-ELOOP). */
int mkdir_p_in_root(int rootfd, const char *path, mode_t mode, bool follow_symlinks);

/* mkdir_p_in_root() without following symlinks, then the last directory
 * (existing or new) is given to uid:gid, with mode. */
int mkdir_owned_beneath(int dirfd, const char *path, mode_t mode, uid_t uid, gid_t gid);

/* mkdir -p on an ordinary path; existing directories are fine. */
int mkdir_p(const char *path, mode_t mode);

/* Removes name, one entry of the directory dirfd, recursively. Never
 * descends into another file system (a mount point is left alone and
 * reported as -EBUSY), so it cannot delete through a mount into data that is
 * not ours, and never follows a symlink. However deep the tree (a pod may
 * build one 10,000 directories deep), it keeps at most RM_RF_OPEN_DIRS
 * directories open: deeper levels are left and re-entered through "..",
 * checked to be the directory it came from. Missing is success; a name with
 * a "/" is -EINVAL. */
#define RM_RF_OPEN_DIRS 32
int rm_rf_at(int dirfd, const char *name);
/* The same, adding to *freed the disk space it freed (the blocks of each
 * file, directory and symlink whose last link it removed). */
int rm_rf_at_counting(int dirfd, const char *name, uint64_t *freed);
/* The same for a path given by the operator (or a test): its parent is
 * resolved as any path is, symlinks included. */
int rm_rf(const char *path);

/* A DIR of the directory path below dirfd ("." for dirfd itself, read from
 * its start, whatever was read of dirfd before); a symlink as its last
 * component is not followed. NULL with errno set. */
DIR *opendir_at(int dirfd, const char *path);

/* fsync(2) of a directory, so a rename or create in it is durable. */
int fsync_dir_at(int dirfd, const char *path);

/* Writes a random name "<prefix>XXXXXXXXXXXXXXXX" (16 hex digits) into buf. */
void random_name(char *buf, size_t size, const char *prefix);

/* Opening a regular file for reading without ever opening anything else:
 * the path is looked up O_PATH first, its type checked, and only a regular
 * file is reopened for reading. A FIFO would block the open (and hang the
 * caller while it holds a lock), a device would run its driver's open.
 * Returns the fd; -EBADMSG for anything but a regular file, -EFBIG when it
 * is larger than max bytes. */
int open_regular_beneath(int dirfd, const char *path, size_t max);  /* open_beneath_no_symlinks() */
int open_regular_in_root(int rootfd, const char *path, size_t max); /* open_in_root() */
/* The message of their failure r, what naming the file. */
int open_regular_error(Error **err, int r, const char *what, size_t max);

/* Reads all of the regular file fd, at most max bytes (a file that grows
 * past it while being read is -EFBIG too); the result is NUL-terminated.
 * what names the file in errors. */
int read_fd(int fd, const char *what, size_t max, char **ret, size_t *ret_size, Error **err);
/* Reads a whole regular file of at most max bytes below dirfd, resolved
 * without following any symlink (open_regular_beneath()): the way to read a
 * file a pod or an image could have planted. */
int read_file_at(int dirfd, const char *path, size_t max, char **ret, size_t *ret_size, Error **err);
/* The same inside a root (open_regular_in_root()): symlinks resolve with
 * rootfd as "/", as the root's own programs would see them. */
int read_file_in_root(int rootfd, const char *path, size_t max, char **ret, size_t *ret_size, Error **err);
/* The same for a path the operator gave (symlinks followed): still only a
 * regular file, never more than max bytes. */
int read_file(const char *path, size_t max, char **ret, size_t *ret_size, Error **err);

/* Replaces path atomically: temporary file in the same directory, write,
 * fsync, rename(2), fsync of the directory. Readers see the old or the new
 * content, never a torn file. */
int write_file_atomic_at(int dirfd, const char *path, const void *data, size_t size, mode_t mode, Error **err);

/* Writes all of buf to fd, retrying short writes. */
int write_all(int fd, const void *buf, size_t size);
