/* SPDX-License-Identifier: Apache-2.0 */
#include <fcntl.h>
#include <inttypes.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>

#include <sys/random.h>

#include "basic/fs.h"
#include "basic/path.h"
#include "basic/warn.h"
#include "image/archive-util.h"
#include "image/extract.h"

/* The paths one layer has created so far. Whiteouts apply only to lower
 * layers (OCI image spec), so an entry of this layer must survive a whiteout
 * or an opaque marker of the same layer whatever their order in the tar. A
 * layer may have millions of entries: the set keeps a 64-bit hash of each
 * path, keyed by a random seed, not the path. Two paths with one hash (one
 * chance in 2^64 per pair; and the seed is unknown to an image's author)
 * would keep a lower file of the image that a whiteout of this layer named
 * visible: the image's own content, nothing of the host's. */
typedef struct PathSet {
        uint64_t *slots;        /* 0: empty */
        size_t n, cap;
        uint64_t seed;
} PathSet;

static uint64_t path_hash(const PathSet *s, const char *path) {
        uint64_t h = 1469598103934665603ULL ^ s->seed; /* FNV-1a, then a finalizer that mixes every bit */
        for (const char *c = path; *c; c++)
                h = (h ^ (uint8_t) *c) * 1099511628211ULL;
        h ^= h >> 33;
        h *= 0xff51afd7ed558ccdULL;
        h ^= h >> 33;
        h *= 0xc4ceb9fe1a85ec53ULL;
        h ^= h >> 33;
        return h ?: 1;
}

static void path_set_clear(PathSet *s) {
        free(s->slots);
        *s = (PathSet) {};
}

static bool path_set_contains(const PathSet *s, const char *path) {
        if (s->cap == 0)
                return false;
        uint64_t h = path_hash(s, path);
        for (size_t i = h & (s->cap - 1);; i = (i + 1) & (s->cap - 1)) {
                if (!s->slots[i])
                        return false;
                if (s->slots[i] == h)
                        return true;
        }
}

static void path_set_insert(uint64_t *slots, size_t cap, uint64_t h) {
        size_t i = h & (cap - 1);
        while (slots[i] && slots[i] != h)
                i = (i + 1) & (cap - 1);
        slots[i] = h;
}

static int path_set_add(PathSet *s, const char *path) {
        if (path_set_contains(s, path))
                return 0;
        if ((s->n + 1) * 2 > s->cap) {
                size_t cap = s->cap ? s->cap * 2 : 1024;
                uint64_t *slots = calloc(cap, sizeof(uint64_t));
                if (!slots)
                        return -ENOMEM;
                for (size_t i = 0; i < s->cap; i++)
                        if (s->slots[i])
                                path_set_insert(slots, cap, s->slots[i]);
                free(s->slots);
                s->slots = slots;
                s->cap = cap;
        }
        path_set_insert(s->slots, s->cap, path_hash(s, path));
        s->n++;
        return 0;
}

typedef struct Extract {
        int rootfd;
        bool privileged;        /* may chown and mknod */
        const LayerOptions *opts;
        const char *what;
        PathSet layer_paths;
        /* Entries of a tar mostly share their parent: keep the last one open. */
        char *parent_path;
        int parent_fd;
        bool parent_setgid;     /* new files in it get its group */
        /* What a new file gets without a chown or chmod: who we are and
         * the umask (-1: not known); then both calls are skipped when they
         * would change nothing, as they do for most files of an image. */
        uid_t uid;
        gid_t gid;
        int umask;
        uint64_t devices_skipped;       /* of this layer */
        PathSet devices;                /* their paths: a hard link to one is left out too */
} Extract;

static void extract_forget_parent(Extract *x) {
        free(x->parent_path);
        x->parent_path = NULL;
        closep(&x->parent_fd);
        x->parent_fd = -1;
}

static int extract_parent(Extract *x, const char *parent) {
        if (x->parent_path && streq(x->parent_path, parent))
                return x->parent_fd;
        extract_forget_parent(x);
        int fd = mkdir_p_in_root(x->rootfd, parent, 0755, true);
        if (fd < 0)
                return fd;
        struct stat st;
        if (fstat(fd, &st) < 0) {
                int r = -errno;
                close(fd);
                return r;
        }
        x->parent_setgid = st.st_mode & S_ISGID;
        if (!(x->parent_path = strdup(parent))) {
                close(fd);
                return -ENOMEM;
        }
        return x->parent_fd = fd;
}

/* Maps a name from the archive to a path in the tree, or NULL to skip it. */
static int extract_tree_path(Extract *x, const char *name, char **ret) {
        _cleanup_free_ char *n = NULL;
        int r = path_normalize_archive_name(name, &n);
        if (r < 0)
                return r;
        const char *p = n;
        if (x->opts->subdir) {
                const char *rest = startswith(n, x->opts->subdir);
                if (!rest || (*rest && *rest != '/')) {
                        *ret = NULL;
                        return 0;
                }
                p = *rest ? rest + 1 : rest;
        }
        if (!(*ret = strdup(p)))
                return -ENOMEM;
        return 0;
}

/* Only extended attributes that are safe in a tree shared by every pod: user
 * data and file capabilities. trusted.* (overlayfs keeps its own state there)
 * and other security.* labels are dropped. */
static bool xattr_is_allowed(const char *name) {
        return startswith(name, "user.") || streq(name, "security.capability");
}

/* The mode a new regular file can be created with so that no fchmod is
 * needed, or -1. Set-id bits always need one: a chown clears them. */
static int extract_mode_at_create(const Extract *x, struct archive_entry *e) {
        mode_t mode = archive_entry_perm(e) & 07777;
        if (x->umask < 0 || (mode & 07000) || (mode & (mode_t) x->umask))
                return -1;
        return (int) mode;
}

/* Whether a new regular file in the cached parent is owned as the entry
 * says already. */
static bool extract_owner_at_create(const Extract *x, struct archive_entry *e) {
        return !x->parent_setgid && (uid_t) archive_entry_uid(e) == x->uid && (gid_t) archive_entry_gid(e) == x->gid;
}

/* created: a regular file just made with extract_mode_at_create()'s mode
 * (>= 0) in the cached parent: owner and mode are skipped when right. */
static int extract_metadata(Extract *x, int fd, struct archive_entry *e, bool is_dir, int created_mode) {
        if (x->privileged && !(created_mode >= 0 && extract_owner_at_create(x, e)) &&
            fchown(fd, archive_entry_uid(e), archive_entry_gid(e)) < 0)
                return -errno;
        mode_t mode = archive_entry_perm(e) & 07777;
        if (is_dir && !x->privileged)
                mode |= 0700; /* unprivileged: the owner must still be able to fill it */
        if (created_mode < 0 && fchmod(fd, mode) < 0)
                return -errno;

        const char *name;
        const void *value;
        size_t size;
        archive_entry_xattr_reset(e);
        while (archive_entry_xattr_next(e, &name, &value, &size) == ARCHIVE_OK)
                if (xattr_is_allowed(name) && fsetxattr(fd, name, value, size, 0) < 0 &&
                    errno != EOPNOTSUPP && errno != EPERM)
                        return -errno;

        if (!is_dir) {
                struct timespec ts[2] = {
                        { archive_entry_mtime(e), archive_entry_mtime_nsec(e) },
                        { archive_entry_mtime(e), archive_entry_mtime_nsec(e) },
                };
                if (futimens(fd, ts) < 0)
                        return -errno;
        }
        return 0;
}

static int extract_regular(Extract *x, struct archive *a, struct archive_entry *e, int pfd, const char *base) {
        /* O_EXCL: an existing name, even a symlink, fails (the caller
         * removes it and tries again); nothing is followed. */
        int created_mode = extract_mode_at_create(x, e);
        _cleanup_close_ int fd = openat(pfd, base, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                                        created_mode >= 0 ? (mode_t) created_mode : 0600);
        if (fd < 0)
                return -errno;

        const void *buf;
        size_t size;
        la_int64_t offset, pos = 0;
        int r;
        while ((r = archive_read_data_block(a, &buf, &size, &offset)) == ARCHIVE_OK) {
                if (offset != pos && lseek(fd, offset, SEEK_SET) < 0) /* sparse */
                        return -errno;
                int k = write_all(fd, buf, size);
                if (k < 0)
                        return k;
                pos = offset + (la_int64_t) size;
                if (x->opts->progress && (k = x->opts->progress(x->opts->userdata)) < 0)
                        return k;
        }
        if (r != ARCHIVE_EOF)
                return -EBADMSG;
        if (archive_entry_size_is_set(e) && archive_entry_size(e) > pos &&
            ftruncate(fd, archive_entry_size(e)) < 0)
                return -errno;
        return extract_metadata(x, fd, e, false, created_mode);
}

static int extract_directory(Extract *x, struct archive_entry *e, int pfd, const char *base) {
        if (mkdirat(pfd, base, 0700) < 0 && errno != EEXIST)
                return -errno;
        _cleanup_close_ int fd = openat(pfd, base, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        return extract_metadata(x, fd, e, true, -1);
}

static int extract_symlink(Extract *x, struct archive_entry *e, int pfd, const char *base) {
        const char *target = archive_entry_symlink(e);
        if (!target)
                return -EBADMSG;
        /* The target is stored as text and never followed here. */
        if (symlinkat(target, pfd, base) < 0)
                return -errno;
        if (x->privileged &&
            fchownat(pfd, base, archive_entry_uid(e), archive_entry_gid(e), AT_SYMLINK_NOFOLLOW) < 0)
                return -errno;
        struct timespec ts[2] = {
                { archive_entry_mtime(e), archive_entry_mtime_nsec(e) },
                { archive_entry_mtime(e), archive_entry_mtime_nsec(e) },
        };
        return utimensat(pfd, base, ts, AT_SYMLINK_NOFOLLOW) < 0 ? -errno : 0;
}

/* Device nodes of an image are never made: a node is a key to whatever
 * device its numbers name on the host where it is opened (the host's
 * disks, /dev/mem, input), and an image is anyone's. Pods get their devices
 * from their own /dev (nspawn's, systemd's PrivateDevices=) and the
 * operator's --device, never from a tree. Only an overlay whiteout (char
 * 0:0) is kept: no device has those numbers, and it opens nothing. Every
 * importer (import, pull, layer-stream, the renderer) unpacks through here. */
#define EXTRACT_DEVICE_WARNINGS 8       /* a layer of a million nodes says so 8 times, then counts */

static int extract_node(Extract *x, struct archive_entry *e, int pfd, const char *base, const char *path) {
        mode_t type = archive_entry_filetype(e);
        if (type == AE_IFSOCK)
                return 0; /* sockets belong to running processes, not images */
        dev_t rdev = archive_entry_rdev(e);
        if (type == AE_IFBLK || (type == AE_IFCHR && rdev != makedev(0, 0))) {
                int r = path_set_add(&x->devices, path);
                if (r < 0)
                        return r;
                if (x->devices_skipped++ < EXTRACT_DEVICE_WARNINGS)
                        warn("%s: \"%s\": a %s device node (%u:%u) of the image, not created (images carry no "
                             "devices; give a pod one with --device)", x->what, path,
                             type == AE_IFBLK ? "block" : "character", major(rdev), minor(rdev));
                return 0;
        }
        if (mknodat(pfd, base, type | 0600, type == AE_IFIFO ? 0 : rdev) < 0) {
                if (errno == EPERM && !x->privileged)
                        return 0; /* unprivileged renders skip whiteouts */
                return -errno;
        }
        if (x->privileged &&
            fchownat(pfd, base, archive_entry_uid(e), archive_entry_gid(e), AT_SYMLINK_NOFOLLOW) < 0)
                return -errno;
        /* A node we just made in a tree only we write: fchmodat cannot be
         * redirected through a symlink here. A whiteout keeps no set-id
         * or sticky bit of the image's. */
        mode_t perm = archive_entry_perm(e) & (type == AE_IFCHR ? 0777 : 07777);
        return fchmodat(pfd, base, perm, 0) < 0 ? -errno : 0;
}

static int extract_hardlink(Extract *x, const char *link_name, int pfd, const char *base, Error **err) {
        _cleanup_free_ char *target = NULL, *tparent = NULL, *tbase = NULL;
        int r = extract_tree_path(x, link_name, &target);
        if (r == -EINVAL)
                return error_set(err, -EBADMSG, "%s: hard link target \"%s\": path leaves the image (\"..\")", x->what, link_name);
        if (r < 0)
                return error_sys(err, r, "%s", x->what);
        if (!target || !*target)
                return error_set(err, -EBADMSG, "%s: hard link target \"%s\": outside the image tree", x->what, link_name);
        r = path_split(target, &tparent, &tbase);
        if (r < 0)
                return error_sys(err, r, "%s", x->what);
        /* Resolved in the tree: a link can only point at a file of the tree. */
        _cleanup_close_ int tfd = open_in_root(x->rootfd, tparent, O_PATH | O_DIRECTORY, 0);
        if (tfd < 0)
                return error_sys(err, tfd, "%s: hard link to \"%s\"", x->what, link_name);
        if (linkat(tfd, tbase, pfd, base, 0) < 0) {
                if (errno == ENOENT && path_set_contains(&x->devices, target))
                        return 0; /* to a device node left out: left out too */
                return error_sys(err, -errno, "%s: hard link to \"%s\"", x->what, link_name);
        }
        return 0;
}

/* Removes whatever a lower layer left at parent/name. */
static int extract_remove(Extract *x, int pfd, const char *name) {
        struct stat st;
        if (fstatat(pfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                return errno == ENOENT ? 0 : -errno;
        int r = rm_rf_at(pfd, name);
        /* The cached parent may have been below it or reached through it. */
        extract_forget_parent(x);
        return r;
}

static int extract_whiteout(Extract *x, const char *parent, const char *base, Error **err) {
        /* A whiteout names a lower layer's path as it is: its directory is
         * never reached through a symlink, which would let it hide entries
         * of this layer or of another directory. */
        _cleanup_close_ int pfd = open_beneath_no_symlinks(x->rootfd, parent, O_RDONLY | O_DIRECTORY, 0);
        if (pfd == -ENOENT || pfd == -ENOTDIR || pfd == -ELOOP)
                return 0; /* nothing below to hide */
        if (pfd < 0)
                return error_sys(err, pfd, "%s: whiteout in \"%s\"", x->what, parent);

        if (streq(base, ".wh..wh..opq")) {
                /* Opaque directory: hide every lower entry of it. */
                _cleanup_closedir_ DIR *d = opendir_at(pfd, ".");
                if (!d)
                        return error_sys(err, -errno, "%s: opaque directory \"%s\"", x->what, parent);
                struct dirent *de;
                while ((de = readdir(d))) {
                        if (streq(de->d_name, ".") || streq(de->d_name, ".."))
                                continue;
                        _cleanup_free_ char *child = NULL;
                        if (asprintf(&child, "%s%s%s", parent, *parent ? "/" : "", de->d_name) < 0)
                                return error_sys(err, -ENOMEM, "%s", x->what);
                        if (path_set_contains(&x->layer_paths, child))
                                continue;
                        int r = extract_remove(x, dirfd(d), de->d_name);
                        if (r < 0)
                                return error_sys(err, r, "%s: opaque directory \"%s\": removing \"%s\"",
                                                 x->what, parent, de->d_name);
                }
                return 0;
        }

        const char *hidden = base + strlen(".wh.");
        if (startswith(base, ".wh..wh.") || !filename_is_valid(hidden))
                return 0; /* other AUFS metadata: not part of the tree */
        _cleanup_free_ char *path = NULL;
        if (asprintf(&path, "%s%s%s", parent, *parent ? "/" : "", hidden) < 0)
                return error_sys(err, -ENOMEM, "%s", x->what);
        if (path_set_contains(&x->layer_paths, path))
                return 0;
        int r = extract_remove(x, pfd, hidden);
        if (r < 0)
                return error_sys(err, r, "%s: whiteout of \"%s\"", x->what, path);
        return 0;
}

/* Counts the entry against the image's budget, before it is written. */
static int spend_budget(Extract *x, struct archive_entry *e, const char *path, Error **err) {
        LayerBudget *b = x->opts->budget;
        if (!b)
                return 0;
        b->entries++;
        if (archive_entry_filetype(e) == AE_IFREG && !archive_entry_hardlink(e) && archive_entry_size_is_set(e) &&
            archive_entry_size(e) > 0)
                b->bytes += (uint64_t) archive_entry_size(e);
        if (b->max_entries && b->entries > b->max_entries)
                return error_set(err, -EFBIG, "%s: \"%s\": the image has more than %" PRIu64 " entries (the limit)",
                                 x->what, path, b->max_entries);
        if (b->max_bytes && b->bytes > b->max_bytes)
                return error_set(err, -EFBIG, "%s: \"%s\": the image unpacks to more than %" PRIu64 " bytes (the limit)",
                                 x->what, path, b->max_bytes);
        return 0;
}

static int extract_entry(Extract *x, struct archive *a, struct archive_entry *e, const char *path, Error **err) {
        _cleanup_free_ char *parent = NULL, *base = NULL;
        int r = spend_budget(x, e, path, err);
        if (r < 0)
                return r;
        r = path_split(path, &parent, &base);
        if (r < 0)
                return error_sys(err, r, "%s", x->what);

        if (x->opts->whiteouts && startswith(base, ".wh."))
                return extract_whiteout(x, parent, base, err);

        int pfd = extract_parent(x, parent);
        /* A parent that the layer's own symlinks lead nowhere (or to a
         * file) is the layer's fault, not a missing object: bad content
         * (exit 5), not ENOENT's "not found" (exit 3). */
        if (pfd == -ENOENT || pfd == -ENOTDIR || pfd == -ELOOP)
                return error_set(err, -EBADMSG, "%s: \"%s\": its parent is not a directory of the tree (a symlink "
                                 "that leads nowhere in it, or a file)", x->what, path);
        if (pfd < 0)
                return error_sys(err, pfd, "%s: \"%s\": parent directory", x->what, path);
        r = path_set_add(&x->layer_paths, path);
        if (r < 0)
                return error_sys(err, r, "%s", x->what);

        mode_t type = archive_entry_filetype(e);
        const char *link_name = archive_entry_hardlink(e);

        /* Most entries are new regular files: created first (O_EXCL, never
         * through anything at the name), replacing only when that fails. */
        if (type == AE_IFREG && !link_name) {
                r = extract_regular(x, a, e, pfd, base);
                if (r != -EEXIST)
                        goto done;
        }

        /* A later entry replaces an earlier one; only directory onto
         * directory merges. Removing first also means no write ever goes
         * through a symlink that sits at this name. */
        struct stat st;
        if (fstatat(pfd, base, &st, AT_SYMLINK_NOFOLLOW) >= 0) {
                if (!(S_ISDIR(st.st_mode) && type == AE_IFDIR && !link_name)) {
                        r = extract_remove(x, pfd, base);
                        if (r < 0)
                                return error_sys(err, r, "%s: \"%s\": replacing", x->what, path);
                        pfd = extract_parent(x, parent);
                        if (pfd < 0)
                                return error_sys(err, pfd, "%s: \"%s\": parent directory", x->what, path);
                }
        } else if (errno != ENOENT)
                return error_sys(err, -errno, "%s: \"%s\"", x->what, path);

        if (link_name)
                return extract_hardlink(x, link_name, pfd, base, err);

        switch (type) {
        case AE_IFREG:
                r = extract_regular(x, a, e, pfd, base);
                break;
        case AE_IFDIR:
                r = extract_directory(x, e, pfd, base);
                break;
        case AE_IFLNK:
                r = extract_symlink(x, e, pfd, base);
                break;
        case AE_IFCHR:
        case AE_IFBLK:
        case AE_IFIFO:
        case AE_IFSOCK:
                r = extract_node(x, e, pfd, base, path);
                break;
        default:
                return error_set(err, -EBADMSG, "%s: \"%s\": unsupported entry type 0%o", x->what, path, type);
        }
done:
        if (r == -EBADMSG && type == AE_IFREG && !link_name)
                return error_set(err, r, "%s: \"%s\": %s", x->what, path, archive_error_string(a));
        if (r == -ECANCELED)
                return error_set(err, r, "%s: interrupted", x->what);
        if (r < 0)
                return error_sys(err, r, "%s: \"%s\"", x->what, path);
        return 0;
}

/* The umask, without changing it (umask() would, for a moment, under the
 * other threads); -1 when the kernel does not say. */
static int read_umask(void) {
        _cleanup_fclose_ FILE *f = fopen("/proc/self/status", "re");
        char line[256];
        unsigned m;
        while (f && fgets(line, sizeof(line), f))
                if (sscanf(line, "Umask: %o", &m) == 1)
                        return (int) (m & 0777);
        return -1;
}

int layer_apply(int rootfd, int layer_fd, const LayerOptions *opts, const char *what, Error **err) {
        _cleanup_archive_read_ struct archive *a = NULL;
        int r = archive_open_tar_fd(layer_fd, what, &a, err);
        if (r < 0)
                return r;
        return layer_apply_archive(rootfd, a, opts, what, err);
}

int layer_apply_archive(int rootfd, struct archive *a, const LayerOptions *opts, const char *what, Error **err) {
        int r = 0;
        Extract x = {
                .rootfd = rootfd,
                .privileged = geteuid() == 0,
                .uid = geteuid(),
                .gid = getegid(),
                .umask = read_umask(),
                .opts = opts,
                .what = what,
                .parent_fd = -1,
        };
        if (getrandom(&x.layer_paths.seed, sizeof(x.layer_paths.seed), 0) != sizeof(x.layer_paths.seed))
                x.layer_paths.seed = (uint64_t) (uintptr_t) &x ^ (uint64_t) getpid();
        x.devices.seed = x.layer_paths.seed;
        struct archive_entry *e;
        for (;;) {
                if (opts->progress && (r = opts->progress(opts->userdata)) < 0) {
                        r = r == -ECANCELED ? error_set(err, r, "%s: interrupted", what) : error_sys(err, r, "%s", what);
                        break;
                }
                int k = archive_read_next_header(a, &e);
                if (k == ARCHIVE_EOF)
                        break;
                if (k != ARCHIVE_OK && k != ARCHIVE_WARN) {
                        r = error_set(err, -EBADMSG, "%s: %s", what, archive_error_string(a));
                        break;
                }
                const char *name = archive_entry_pathname(e);
                if (!name) {
                        r = error_set(err, -EBADMSG, "%s: entry without a name", what);
                        break;
                }
                _cleanup_free_ char *path = NULL;
                r = extract_tree_path(&x, name, &path);
                if (r == -EINVAL) {
                        r = error_set(err, -EBADMSG, "%s: entry \"%s\": path leaves the image (\"..\")", what, name);
                        break;
                }
                if (r < 0) {
                        r = error_sys(err, r, "%s", what);
                        break;
                }
                if (!path || !*path)
                        continue; /* the root itself, or outside the subdir */
                r = extract_entry(&x, a, e, path, err);
                if (r < 0)
                        break;
        }
        if (r >= 0 && x.devices_skipped > EXTRACT_DEVICE_WARNINGS)
                warn("%s: %" PRIu64 " more device nodes of the image not created", what,
                     x.devices_skipped - EXTRACT_DEVICE_WARNINGS);
        extract_forget_parent(&x);
        path_set_clear(&x.layer_paths);
        path_set_clear(&x.devices);
        return r < 0 ? r : 0;
}
