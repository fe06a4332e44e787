/* SPDX-License-Identifier: Apache-2.0 */
#include <fcntl.h>
#include <stdint.h>
#include <time.h>
#include <linux/openat2.h>
#include <linux/magic.h>
#include <sys/mount.h>
#include <sys/random.h>
#include <sys/statfs.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include "basic/fs.h"
#include "basic/strv.h"

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

int pod_path_open(int rootfd, const char *path, int flags, mode_t mode) {
        while (*path == '/')
                path++;
        return openat2_resolve(rootfd, path, flags, mode, RESOLVE_IN_ROOT | RESOLVE_NO_SYMLINKS);
}

int pod_tree_enter(int procfd) {
        struct statfs sfs;
        if (fstatfs(procfd, &sfs) < 0)
                return -errno;
        if (sfs.f_type != PROC_SUPER_MAGIC)
                return -EMEDIUMTYPE;
        if (fchdir(procfd) < 0 || chroot(".") < 0)
                return -errno;
        /* Our own pid, as this procfs names it: it is of our namespace. */
        char self[32];
        ssize_t n = readlink("self", self, sizeof(self) - 1);
        if (n <= 0)
                return n < 0 ? -errno : -EIO;
        self[n] = 0;
        char mine[32];
        snprintf(mine, sizeof(mine), "%d", (int) getpid());
        return streq(self, mine) ? 0 : -EXDEV;
}

int pod_path_umount(int dirfd, const char *name) {
        for (unsigned i = 0; i < 16; i++) {
                _cleanup_close_ int fd = pod_path_open(dirfd, name, O_PATH | O_NOFOLLOW, 0);
                if (fd < 0)
                        return fd == -ENOENT ? 0 : fd;
                struct statx sx;
                if (statx(fd, "", AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW, STATX_TYPE, &sx) < 0)
                        return -errno;
                if (!(sx.stx_attributes_mask & STATX_ATTR_MOUNT_ROOT))
                        return -EOPNOTSUPP;
                if (!(sx.stx_attributes & STATX_ATTR_MOUNT_ROOT))
                        return 0;
                /* Relative to our root, the trusted procfs: the magic link
                 * is the one thing followed, and leads to this very mount.
                 * (UMOUNT_NOFOLLOW would stop at the link itself.) */
                char path[32];
                snprintf(path, sizeof(path), "self/fd/%d", fd);
                if (umount2(path, MNT_DETACH) < 0)
                        return -errno;
        }
        return -EBUSY;
}

bool exists_beneath(int dirfd, const char *path) {
        _cleanup_close_ int fd = open_beneath_no_symlinks(dirfd, path, O_PATH | O_NOFOLLOW, 0);
        return fd >= 0;
}

/* The directory of path below dirfd and its last component. */
static int open_parent_beneath(int dirfd, const char *path, const char **ret_base) {
        const char *slash = strrchr(path, '/');
        *ret_base = slash ? slash + 1 : path;
        if (!slash)
                return RET_NERRNO(fcntl(dirfd, F_DUPFD_CLOEXEC, 3));
        _cleanup_free_ char *dir = strndup(path, (size_t) (slash - path));
        if (!dir)
                return -ENOMEM;
        return open_beneath_no_symlinks(dirfd, dir, O_RDONLY | O_DIRECTORY, 0);
}

int unlink_beneath(int dirfd, const char *path, int flags) {
        const char *base;
        _cleanup_close_ int fd = open_parent_beneath(dirfd, path, &base);
        if (fd < 0)
                return fd == -ENOENT ? 0 : fd;
        return unlinkat(fd, base, flags) < 0 && errno != ENOENT ? -errno : 0;
}

int rm_rf_beneath(int dirfd, const char *path) {
        const char *base;
        _cleanup_close_ int fd = open_parent_beneath(dirfd, path, &base);
        if (fd < 0)
                return fd == -ENOENT ? 0 : fd;
        return rm_rf_at(fd, base);
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

int mkdir_owned_beneath(int dirfd, const char *path, mode_t mode, uid_t uid, gid_t gid) {
        _cleanup_close_ int pathfd = mkdir_p_in_root(dirfd, path, mode, false);
        if (pathfd < 0)
                return pathfd;
        _cleanup_close_ int fd = openat(pathfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0 || fchown(fd, uid, gid) < 0 || fchmod(fd, mode) < 0)
                return -errno;
        return 0;
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
static int stat_entry(int dirfd, const char *name, uint64_t *ret_mnt_id, struct statx *ret) {
        if (statx(dirfd, name, AT_SYMLINK_NOFOLLOW | AT_NO_AUTOMOUNT | (*name ? 0 : AT_EMPTY_PATH),
                  STATX_TYPE | STATX_INO | STATX_MNT_ID, ret) < 0)
                return -errno;
        *ret_mnt_id = (ret->stx_mask & STATX_MNT_ID) ? ret->stx_mnt_id
                                                     : ret->stx_dev_major * 65536ULL + ret->stx_dev_minor;
        return 0;
}

/* One directory on the way down. Its DIR stays open while few are; deeper,
 * it is closed and reopened through ".." on the way back up. */
typedef struct RmFrame {
        char *name;             /* its entry in the parent; NULL for the top */
        uint64_t ino;           /* to recognise it when it is reopened */
        DIR *dir;               /* NULL: closed, reopen through ".." */
        char **skip;            /* entries that could not be removed: not tried twice */
} RmFrame;

typedef struct RmTree {
        RmFrame *frames;
        size_t n, cap;
        size_t open;            /* frames whose dir is open */
        uint64_t mnt_id;
        int ret;                /* the first error */
        uint64_t *freed;        /* NULL, or the bytes freed so far */
} RmTree;

/* The disk space that unlinking name frees: its blocks, when this is its
 * last link (a directory has only one). */
static void count_freed(int dirfd, const char *name, uint64_t *freed) {
        struct stat st;
        if (freed && fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) >= 0 && (S_ISDIR(st.st_mode) || st.st_nlink <= 1))
                *freed += (uint64_t) st.st_blocks * 512;
}

static void rm_frame_done(RmTree *t, RmFrame *f) {
        if (f->dir) {
                closedir(f->dir);
                t->open--;
        }
        free(f->name);
        strv_free(f->skip);
        *f = (RmFrame) {};
}

/* Remembers that name could not be removed (r), so the walk neither tries
 * it again nor loops on it when it comes back to its directory. */
static int rm_failed(RmTree *t, RmFrame *f, const char *name, int r) {
        if (r == -ENOENT)
                return 0;
        if (t->ret == 0)
                t->ret = r;
        return strv_push(&f->skip, name);
}

/* Opens f's directory, path below dirfd. */
static int rm_frame_open(RmTree *t, RmFrame *f, int dirfd, const char *path) {
        f->dir = opendir_at(dirfd, path);
        if (!f->dir)
                return -errno;
        t->open++;
        return 0;
}

/* Descends into the directory name of the top frame: pushes its frame.
 * Returns 1 when it did, 0 when the entry is not a directory of this file
 * system we may descend into (a mount point is recorded as -EBUSY). */
static int rm_descend(RmTree *t, const char *name) {
        RmFrame *top = &t->frames[t->n - 1];
        uint64_t mnt;
        struct statx sx;
        int r = stat_entry(dirfd(top->dir), name, &mnt, &sx);
        if (r < 0)
                return rm_failed(t, top, name, r) ?: 0;
        if (!S_ISDIR(sx.stx_mode))
                return 0;
        if (mnt != t->mnt_id)
                return rm_failed(t, top, name, -EBUSY) ?: 1; /* a mount point: never descend */
        if (t->n == t->cap) {
                size_t cap = t->cap * 2;
                RmFrame *l = reallocarray(t->frames, cap, sizeof(RmFrame));
                if (!l)
                        return -ENOMEM;
                t->frames = l;
                t->cap = cap;
                top = &t->frames[t->n - 1];
        }
        RmFrame *f = &t->frames[t->n];
        *f = (RmFrame) { .ino = sx.stx_ino };
        if ((r = rm_frame_open(t, f, dirfd(top->dir), name)) < 0)
                return rm_failed(t, top, name, r) ?: 1;
        if (!(f->name = strdup(name))) {
                rm_frame_done(t, f);
                return -ENOMEM;
        }
        t->n++;
        /* Too many open: the parent is closed, and found again through "..". */
        if (t->open > RM_RF_OPEN_DIRS && top->dir) {
                closedir(top->dir);
                top->dir = NULL;
                t->open--;
        }
        return 1;
}

/* The top frame's directory is done: back to its parent, which removes it. */
static int rm_ascend(RmTree *t) {
        RmFrame *f = &t->frames[t->n - 1], *parent = &t->frames[t->n - 2];
        if (!parent->dir) {
                /* Reopened through "..", which must be the directory we came
                 * from: were the tree moved meanwhile, ".." could be any
                 * directory of the host. Nothing is read of it before it
                 * passed. */
                struct statx sx;
                uint64_t mnt;
                int r = rm_frame_open(t, parent, dirfd(f->dir), "..");
                if (r < 0 || (r = stat_entry(dirfd(parent->dir), "", &mnt, &sx)) < 0)
                        return r;
                if (sx.stx_ino != parent->ino || mnt != t->mnt_id)
                        return -ESTALE;
        }
        _cleanup_free_ char *name = TAKE_PTR(f->name);
        rm_frame_done(t, f);
        t->n--;
        count_freed(dirfd(parent->dir), name, t->freed);
        if (unlinkat(dirfd(parent->dir), name, AT_REMOVEDIR) < 0)
                return rm_failed(t, parent, name, -errno);
        return 0;
}

/* Removes everything below the directory d (taken). */
static int rm_rf_children(DIR *d, uint64_t mnt_id, uint64_t *freed) {
        RmTree t = { .cap = 16, .n = 1, .open = 1, .mnt_id = mnt_id, .freed = freed };
        if (!(t.frames = calloc(t.cap, sizeof(RmFrame)))) {
                closedir(d);
                return -ENOMEM;
        }
        t.frames[0].dir = d;
        int r = 0;
        while (r >= 0) {
                RmFrame *top = &t.frames[t.n - 1];
                struct dirent *de;
                bool descended = false;
                errno = 0;
                while (!descended && (de = readdir(top->dir))) {
                        if (streq(de->d_name, ".") || streq(de->d_name, "..") || strv_contains(top->skip, de->d_name))
                                continue;
                        if (de->d_type == DT_DIR || de->d_type == DT_UNKNOWN) {
                                r = rm_descend(&t, de->d_name);
                                if (r < 0)
                                        break;
                                if (r > 0) {
                                        descended = true;
                                        continue;
                                }
                        }
                        count_freed(dirfd(top->dir), de->d_name, t.freed);
                        if (unlinkat(dirfd(top->dir), de->d_name, 0) < 0 &&
                            (r = rm_failed(&t, top, de->d_name, -errno)) < 0)
                                break;
                        errno = 0;
                }
                if (r < 0 || descended)
                        continue;
                if (errno > 0) {
                        r = -errno;
                        break;
                }
                if (t.n == 1)
                        break;
                /* Finished this directory: reading it again from the start
                 * when its parent was closed is right, as every entry that
                 * is still there is one in the skip list. */
                r = rm_ascend(&t);
        }
        while (t.n > 0)
                rm_frame_done(&t, &t.frames[--t.n]);
        free(t.frames);
        return r < 0 ? r : t.ret;
}

int rm_rf_at_counting(int dirfd, const char *name, uint64_t *freed) {
        if (!*name || strchr(name, '/'))
                return -EINVAL;
        uint64_t id;
        struct statx sx;
        int r = stat_entry(dirfd, name, &id, &sx);
        if (r < 0)
                return r == -ENOENT ? 0 : r;
        count_freed(dirfd, name, freed);
        if (!S_ISDIR(sx.stx_mode))
                return unlinkat(dirfd, name, 0) < 0 && errno != ENOENT ? -errno : 0;

        DIR *d = opendir_at(dirfd, name);
        if (!d)
                return errno == ENOENT ? 0 : -errno;
        r = rm_rf_children(d, id, freed);
        if (r < 0)
                return r;
        if (unlinkat(dirfd, name, AT_REMOVEDIR) < 0 && errno != ENOENT)
                return -errno;
        return 0;
}

int rm_rf_at(int dirfd, const char *name) {
        return rm_rf_at_counting(dirfd, name, NULL);
}

int rm_rf(const char *path) {
        _cleanup_free_ char *copy = strdup(path);
        if (!copy)
                return -ENOMEM;
        /* "a/b/" names b */
        size_t n = strlen(copy);
        while (n > 1 && copy[n - 1] == '/')
                copy[--n] = 0;
        char *slash = strrchr(copy, '/');
        const char *base = slash ? slash + 1 : copy;
        if (!*base || streq(base, ".") || streq(base, ".."))
                return -EINVAL;
        _cleanup_close_ int parent = -1;
        if (slash) {
                *slash = 0;
                parent = open(slash == copy ? "/" : copy, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                if (parent < 0)
                        return errno == ENOENT ? 0 : -errno;
        }
        return rm_rf_at(slash ? parent : AT_FDCWD, base);
}

DIR *opendir_at(int dirfd, const char *path) {
        int fd = openat(dirfd, path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return NULL;
        DIR *d = fdopendir(fd);
        if (!d) {
                int saved = errno;
                close(fd);
                errno = saved;
        }
        return d;
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

static int open_regular(int pathfd, size_t max) {
        struct stat st;
        if (fstat(pathfd, &st) < 0)
                return -errno;
        if (!S_ISREG(st.st_mode))
                return -EBADMSG;
        if ((uint64_t) st.st_size > max)
                return -EFBIG;
        /* Reopening through /proc opens this very inode, whatever happened
         * to its name since. */
        char proc[64];
        snprintf(proc, sizeof(proc), "/proc/self/fd/%d", pathfd);
        int fd = open(proc, O_RDONLY | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
        return fd < 0 ? -errno : fd;
}

int open_regular_beneath(int dirfd, const char *path, size_t max) {
        _cleanup_close_ int pathfd = open_beneath_no_symlinks(dirfd, path, O_PATH, 0);
        return pathfd < 0 ? pathfd : open_regular(pathfd, max);
}

int open_regular_in_root(int rootfd, const char *path, size_t max) {
        _cleanup_close_ int pathfd = open_in_root(rootfd, path, O_PATH, 0);
        return pathfd < 0 ? pathfd : open_regular(pathfd, max);
}

int open_regular_error(Error **err, int r, const char *what, size_t max) {
        if (r == -EBADMSG)
                return error_set(err, r, "%s: not a regular file", what);
        if (r == -EFBIG)
                return error_set(err, r, "%s: larger than %zu bytes", what, max);
        if (r == -ELOOP)
                return error_set(err, r, "%s: a symlink on the way, which is not followed", what);
        return error_sys(err, r, "%s", what);
}

int read_fd(int fd, const char *what, size_t max, char **ret, size_t *ret_size, Error **err) {
        struct stat st;
        if (fstat(fd, &st) < 0)
                return error_sys(err, -errno, "%s", what);
        if (!S_ISREG(st.st_mode))
                return error_set(err, -EBADMSG, "%s: not a regular file", what);
        if ((uint64_t) st.st_size > max)
                return error_set(err, -EFBIG, "%s: larger than %zu bytes", what, max);

        /* The size is a hint (files in /proc say 0): read until EOF, never
         * past max. */
        size_t cap = (size_t) st.st_size + 1, n = 0;
        if (cap < 256)
                cap = 256;
        _cleanup_free_ char *buf = malloc(cap);
        if (!buf)
                return error_sys(err, -ENOMEM, "%s", what);
        for (;;) {
                if (n + 1 >= cap) {
                        if (n > max)
                                return error_set(err, -EFBIG, "%s: larger than %zu bytes", what, max);
                        size_t next = cap * 2 > max + 2 ? max + 2 : cap * 2;
                        char *nb = realloc(buf, next);
                        if (!nb)
                                return error_sys(err, -ENOMEM, "%s", what);
                        buf = nb;
                        cap = next;
                }
                ssize_t k = read(fd, buf + n, cap - n - 1);
                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        return error_sys(err, -errno, "%s", what);
                }
                if (k == 0)
                        break;
                n += (size_t) k;
        }
        if (n > max)
                return error_set(err, -EFBIG, "%s: larger than %zu bytes", what, max);
        buf[n] = 0;
        *ret = TAKE_PTR(buf);
        if (ret_size)
                *ret_size = n;
        return 0;
}

int read_file_at(int dirfd, const char *path, size_t max, char **ret, size_t *ret_size, Error **err) {
        _cleanup_close_ int fd = open_regular_beneath(dirfd, path, max);
        if (fd < 0)
                return open_regular_error(err, fd, path, max);
        return read_fd(fd, path, max, ret, ret_size, err);
}

int read_file_in_root(int rootfd, const char *path, size_t max, char **ret, size_t *ret_size, Error **err) {
        _cleanup_close_ int fd = open_regular_in_root(rootfd, path, max);
        if (fd < 0)
                return open_regular_error(err, fd, path, max);
        return read_fd(fd, path, max, ret, ret_size, err);
}

int read_file(const char *path, size_t max, char **ret, size_t *ret_size, Error **err) {
        _cleanup_close_ int pathfd = open(path, O_PATH | O_CLOEXEC);
        if (pathfd < 0)
                return error_sys(err, -errno, "%s", path);
        _cleanup_close_ int fd = open_regular(pathfd, max);
        if (fd < 0)
                return open_regular_error(err, fd, path, max);
        return read_fd(fd, path, max, ret, ret_size, err);
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
