/* SPDX-License-Identifier: Apache-2.0 */
#include <fcntl.h>
#include <stdint.h>
#include <time.h>
#include <linux/openat2.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include "fs.h"

static int openat2_resolve(int dirfd, const char *path, int flags, mode_t mode, uint64_t resolve) {
        struct open_how how = {
                .flags = (uint64_t) (flags | O_CLOEXEC),
                .mode = (flags & (O_CREAT | O_TMPFILE)) ? mode : 0,
                .resolve = resolve | RESOLVE_NO_MAGICLINKS,
        };
        int fd = (int) syscall(SYS_openat2, dirfd, *path ? path : ".", &how, sizeof(how));
        return fd < 0 ? -errno : fd;
}

int open_in_root(int rootfd, const char *path, int flags, mode_t mode) {
        while (*path == '/')
                path++;
        return openat2_resolve(rootfd, path, flags, mode, RESOLVE_IN_ROOT);
}

int open_beneath_no_symlinks(int dirfd, const char *path, int flags, mode_t mode) {
        return openat2_resolve(dirfd, path, flags, mode, RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS);
}

static int open_dir_below(int rootfd, const char *path, bool follow_symlinks) {
        return follow_symlinks ? open_in_root(rootfd, path, O_PATH | O_DIRECTORY, 0)
                               : open_beneath_no_symlinks(rootfd, path, O_PATH | O_DIRECTORY, 0);
}

int mkdir_p_in_root(int rootfd, const char *path, mode_t mode, bool follow_symlinks) {
        /* Fast path: it exists already (the common case while extracting). */
        int fd = open_dir_below(rootfd, path, follow_symlinks);
        if (fd != -ENOENT)
                return fd;

        _cleanup_free_ char *prefix = strdup(path);
        if (!prefix)
                return -ENOMEM;
        _cleanup_close_ int cur = open_dir_below(rootfd, "", follow_symlinks);
        if (cur < 0)
                return cur;
        /* Walk one component at a time; each step reopens the prefix from the
         * root, so a symlink met on the way cannot lead out of the tree. */
        for (char *c = prefix; *c;) {
                while (*c == '/')
                        c++;
                if (!*c)
                        break;
                char *end = strchrnul(c, '/');
                char saved = *end;
                *end = 0;
                if (streq(c, ".."))
                        return -EINVAL; /* callers pass normalised paths */
                if (mkdirat(cur, c, mode) < 0 && errno != EEXIST)
                        return -errno;
                int next = open_dir_below(rootfd, prefix, follow_symlinks);
                if (next < 0)
                        return next;
                closep(&cur);
                cur = next;
                *end = saved;
                c = end;
        }
        return TAKE_FD(cur);
}

int mkdir_p(const char *path, mode_t mode) {
        _cleanup_free_ char *p = strdup(path);
        if (!p)
                return -ENOMEM;
        for (char *s = p + 1; *s; s++) {
                if (*s != '/')
                        continue;
                *s = 0;
                if (mkdir(p, mode) < 0 && errno != EEXIST)
                        return -errno;
                *s = '/';
        }
        if (mkdir(p, mode) < 0 && errno != EEXIST)
                return -errno;
        return 0;
}

/* The mount id tells a mount point from a plain directory, even for a bind
 * mount of the same file system, where st_dev is equal. */
static int mount_id_at(int dirfd, const char *name, uint64_t *ret_id, mode_t *ret_mode) {
        struct statx sx;
        if (statx(dirfd, name, AT_SYMLINK_NOFOLLOW | AT_NO_AUTOMOUNT | (*name ? 0 : AT_EMPTY_PATH),
                  STATX_TYPE | STATX_MNT_ID, &sx) < 0)
                return -errno;
        *ret_id = (sx.stx_mask & STATX_MNT_ID) ? sx.stx_mnt_id : sx.stx_dev_major * 65536ULL + sx.stx_dev_minor;
        *ret_mode = sx.stx_mode;
        return 0;
}

static int rm_rf_children(int fd, uint64_t mnt_id) {
        _cleanup_closedir_ DIR *d = fdopendir(fd);
        if (!d) {
                close(fd);
                return -errno;
        }
        int ret = 0;
        struct dirent *de;
        while ((de = readdir(d))) {
                if (streq(de->d_name, ".") || streq(de->d_name, ".."))
                        continue;
                int r = 0;
                if (de->d_type == DT_DIR || de->d_type == DT_UNKNOWN) {
                        uint64_t id;
                        mode_t mode;
                        r = mount_id_at(dirfd(d), de->d_name, &id, &mode);
                        if (r >= 0 && S_ISDIR(mode)) {
                                if (id != mnt_id)
                                        r = -EBUSY; /* a mount point: never descend */
                                else {
                                        int cfd = openat(dirfd(d), de->d_name,
                                                         O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                                        r = cfd < 0 ? -errno : rm_rf_children(cfd, mnt_id);
                                        if (r >= 0 && unlinkat(dirfd(d), de->d_name, AT_REMOVEDIR) < 0)
                                                r = -errno;
                                }
                                if (r < 0 && r != -ENOENT && ret == 0)
                                        ret = r;
                                continue;
                        }
                }
                if (r >= 0 && unlinkat(dirfd(d), de->d_name, 0) < 0)
                        r = -errno;
                if (r < 0 && r != -ENOENT && ret == 0)
                        ret = r;
        }
        return ret;
}

int rm_rf_at(int dirfd, const char *name) {
        uint64_t id;
        mode_t mode;
        int r = mount_id_at(dirfd, name, &id, &mode);
        if (r < 0)
                return r == -ENOENT ? 0 : r;
        if (!S_ISDIR(mode))
                return unlinkat(dirfd, name, 0) < 0 && errno != ENOENT ? -errno : 0;

        int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return errno == ENOENT ? 0 : -errno;
        r = rm_rf_children(fd, id);
        if (r < 0)
                return r;
        if (unlinkat(dirfd, name, AT_REMOVEDIR) < 0 && errno != ENOENT)
                return -errno;
        return 0;
}

int fsync_dir_at(int dirfd, const char *path) {
        _cleanup_close_ int fd = openat(dirfd, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        return fsync(fd) < 0 ? -errno : 0;
}

void random_name(char *buf, size_t size, const char *prefix) {
        uint64_t v = 0;
        if (getrandom(&v, sizeof(v), 0) != sizeof(v))
                v = ((uint64_t) getpid() << 32) ^ (uint64_t) (uintptr_t) buf ^ (uint64_t) time(NULL);
        snprintf(buf, size, "%s%016llx", prefix, (unsigned long long) v);
}

int write_all(int fd, const void *buf, size_t size) {
        const char *p = buf;
        while (size > 0) {
                ssize_t k = write(fd, p, size);
                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                p += k;
                size -= (size_t) k;
        }
        return 0;
}

int read_file_at(int dirfd, const char *path, size_t max, char **ret, size_t *ret_size, Error **err) {
        _cleanup_close_ int fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return error_sys(err, -errno, "%s", path);
        struct stat st;
        if (fstat(fd, &st) < 0)
                return error_sys(err, -errno, "%s", path);
        if (!S_ISREG(st.st_mode))
                return error_set(err, -EBADMSG, "%s: not a regular file", path);
        if ((uint64_t) st.st_size > max)
                return error_set(err, -EFBIG, "%s: larger than %zu bytes", path, max);

        size_t cap = (size_t) st.st_size + 1, n = 0;
        _cleanup_free_ char *buf = malloc(cap);
        if (!buf)
                return error_sys(err, -ENOMEM, "%s", path);
        for (;;) {
                if (n + 1 >= cap) {
                        if (cap > max + 1)
                                return error_set(err, -EFBIG, "%s: larger than %zu bytes", path, max);
                        char *nb = realloc(buf, cap * 2);
                        if (!nb)
                                return error_sys(err, -ENOMEM, "%s", path);
                        buf = nb;
                        cap *= 2;
                }
                ssize_t k = read(fd, buf + n, cap - n - 1);
                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        return error_sys(err, -errno, "%s", path);
                }
                if (k == 0)
                        break;
                n += (size_t) k;
        }
        if (n > max)
                return error_set(err, -EFBIG, "%s: larger than %zu bytes", path, max);
        buf[n] = 0;
        *ret = TAKE_PTR(buf);
        if (ret_size)
                *ret_size = n;
        return 0;
}

int write_file_atomic_at(int dirfd, const char *path, const void *data, size_t size, mode_t mode, Error **err) {
        _cleanup_free_ char *dir = NULL;
        const char *slash = strrchr(path, '/');
        dir = slash ? strndup(path, (size_t) (slash - path) + 1) : strdup(".");
        if (!dir)
                return error_sys(err, -ENOMEM, "%s", path);

        char tmp[PATH_MAX];
        char base[32];
        random_name(base, sizeof(base), ".tmp-");
        snprintf(tmp, sizeof(tmp), "%s%s", slash ? dir : "", base);

        _cleanup_close_ int fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
        if (fd < 0)
                return error_sys(err, -errno, "%s: creating temporary file", path);
        int r = write_all(fd, data, size);
        if (r >= 0 && fchmod(fd, mode) < 0)
                r = -errno;
        if (r >= 0 && fsync(fd) < 0)
                r = -errno;
        if (r >= 0 && renameat(dirfd, tmp, dirfd, path) < 0)
                r = -errno;
        if (r < 0) {
                unlinkat(dirfd, tmp, 0);
                return error_sys(err, r, "%s: writing", path);
        }
        r = fsync_dir_at(dirfd, dir);
        if (r < 0)
                return error_sys(err, r, "%s: syncing directory", path);
        return 0;
}
