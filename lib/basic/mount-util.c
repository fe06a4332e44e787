/* SPDX-License-Identifier: Apache-2.0 */
#include <fcntl.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/mount.h>
#include <libmount.h>

#include "basic/mount-util.h"
#include "basic/warn.h"

#define MOUNTINFO "/proc/self/mountinfo"

/* Each pass unmounts every mount it can reach; another pass is needed only for
 * mounts that were covered by a mount on top of a shallower directory, or that
 * appeared meanwhile. Eight is far more than any honest tree needs, and keeps
 * a process that keeps mounting things from holding us forever. */
#define UMOUNT_MAX_PASSES 8

typedef struct MountEntry {
        const char *target;     /* decoded by libmount ("\040" is a space again) */
        int id, parent_id;
        unsigned order;         /* position in mountinfo */
        unsigned depth;         /* number of "/" in target */
        unsigned children;      /* mounts of this list still mounted on this one */
} MountEntry;

typedef struct MountList {
        struct libmnt_table *table;     /* owns the strings the entries point to */
        MountEntry *entries;
        size_t n;
} MountList;

static void mount_list_done(MountList *l) {
        free(l->entries);
        mnt_unref_table(l->table);
        *l = (MountList) {};
}

static void mnt_free_iterp(struct libmnt_iter **i) {
        mnt_free_iter(*i);
}

/* Targets in mountinfo are absolute and canonical. A path spelled any other way
 * ("..", "//", a trailing "/") would silently match nothing, and the caller
 * would go on to delete a tree it believes free of mounts: refuse it. Symlinks
 * cannot be seen lexically and are not looked for: that would mean touching
 * the tree (possibly a hung file system) before unmounting it; a path through
 * a symlink matches no target, and rm_rf_at() never crosses a mount anyway. */
static int validate_path(const char *path, Error **err) {
        if (!path || path[0] != '/')
                return error_set(err, -EINVAL, "\"%s\": not an absolute path", strempty(path));
        if (streq(path, "/"))
                return 0;
        for (const char *c = path + 1;; ) {
                const char *end = strchrnul(c, '/');
                size_t n = (size_t) (end - c);
                if (n == 0 || (n == 1 && c[0] == '.') || (n == 2 && c[0] == '.' && c[1] == '.'))
                        return error_set(err, -EINVAL,
                                         "\"%s\": not a canonical path (empty, \".\" or \"..\" component, or trailing \"/\")",
                                         path);
                if (!*end)
                        return 0;
                c = end + 1;
        }
}

/* "/a/b" is at or below "/a/b" and "/a", never below "/a/bc". */
static bool path_is_at_or_below(const char *target, const char *path) {
        if (streq(path, "/"))
                return target[0] == '/';
        const char *rest = startswith(target, path);
        return rest && (*rest == '\0' || *rest == '/');
}

static int mountinfo_parse_error(struct libmnt_table *tb, const char *filename, int line) {
        int *bad_line = mnt_table_get_userdata(tb);
        if (bad_line && *bad_line == 0)
                *bad_line = line > 0 ? line : -1;
        return -EBADMSG;
}

static int compare_deepest_first(const void *a, const void *b) {
        const MountEntry *x = a, *y = b;
        if (x->depth != y->depth)
                return x->depth > y->depth ? -1 : 1;
        /* A mount stacked on the same directory comes later in mountinfo. */
        return x->order > y->order ? -1 : x->order < y->order ? 1 : 0;
}

static MountEntry *mount_list_find_id(MountList *l, int id) {
        for (size_t i = 0; i < l->n; i++)
                if (l->entries[i].id == id)
                        return &l->entries[i];
        return NULL;
}

/* The mounts at or below path, deepest first, each knowing how many others
 * of the list sit on it. */
static int read_mounts_below(const char *path, MountList *ret, Error **err) {
        _cleanup_(mount_list_done) MountList l = {};
        int bad_line = 0;

        l.table = mnt_new_table();
        if (!l.table)
                return error_sys(err, -ENOMEM, MOUNTINFO);
        /* By default libmount skips a line it cannot parse. A skipped line could
         * be a mount below path, which we would then report as absent: make
         * any parse error fatal. */
        mnt_table_set_userdata(l.table, &bad_line);
        mnt_table_set_parser_errcb(l.table, mountinfo_parse_error);
        int r = mnt_table_parse_file(l.table, MOUNTINFO);
        mnt_table_set_userdata(l.table, NULL);
        if (bad_line != 0)
                return error_set(err, -EBADMSG, MOUNTINFO ": line %d: cannot parse", bad_line);
        if (r < 0)
                return error_sys(err, r, MOUNTINFO);

        _cleanup_(mnt_free_iterp) struct libmnt_iter *iter = mnt_new_iter(MNT_ITER_FORWARD);
        if (!iter)
                return error_sys(err, -ENOMEM, MOUNTINFO);
        struct libmnt_fs *fs;
        size_t allocated = 0;
        for (unsigned order = 0; (r = mnt_table_next_fs(l.table, iter, &fs)) == 0; order++) {
                const char *target = mnt_fs_get_target(fs);
                if (!target || !path_is_at_or_below(target, path))
                        continue;
                if (l.n == allocated) {
                        size_t k = allocated ? allocated * 2 : 16;
                        MountEntry *e = reallocarray(l.entries, k, sizeof(*e));
                        if (!e)
                                return error_sys(err, -ENOMEM, MOUNTINFO);
                        l.entries = e;
                        allocated = k;
                }
                MountEntry *e = &l.entries[l.n++];
                *e = (MountEntry) {
                        .target = target,
                        .id = mnt_fs_get_id(fs),
                        .parent_id = mnt_fs_get_parent_id(fs),
                        .order = order,
                };
                for (const char *c = target + 1; *c; c++)
                        e->depth += *c == '/';
                if (target[1])
                        e->depth++;
        }
        if (r < 0)
                return error_sys(err, r, MOUNTINFO);

        if (l.n > 0)
                qsort(l.entries, l.n, sizeof(*l.entries), compare_deepest_first);
        /* A mount's children always lie below it, so they are all in the list
         * (the quadratic walk is fine: a pod has tens of mounts, not more). */
        for (size_t i = 0; i < l.n; i++) {
                MountEntry *parent = mount_list_find_id(&l, l.entries[i].parent_id);
                if (parent && parent != &l.entries[i])
                        parent->children++;
        }

        *ret = l;
        l = (MountList) {};
        return 0;
}

/* Returns 1 when we removed the mount, 0 when it was not there to remove (it
 * went away meanwhile, or another mount covers it and a later pass will see
 * it), < 0 on error. */
static int umount_one(const char *target, UmountStats *stats, Error **err) {
        /* UMOUNT_NOFOLLOW: a target whose last component is now a symlink
         * (someone swapped it) must not lead us to unmount what it points to. */
        if (umount2(target, UMOUNT_NOFOLLOW) >= 0) {
                stats->unmounted++;
                return 1;
        }
        if (errno == EINVAL || errno == ENOENT)
                return 0;
        if (errno != EBUSY)
                return error_sys(err, -errno, "unmounting %s", target);

        /* Something still uses it (a process's working directory, an open
         * file). Only leaves are unmounted, so this is not a mount on top of
         * it. Detaching takes it out of the tree, which is all the caller needs
         * before deleting the tree; the file system lives on until its last
         * user goes away. */
        if (umount2(target, MNT_DETACH | UMOUNT_NOFOLLOW) < 0) {
                if (errno == EINVAL || errno == ENOENT)
                        return 0;
                return error_sys(err, -errno, "unmounting %s (busy) lazily", target);
        }
        stats->detached++;
        warn("%s: mount was busy, detached it lazily (it goes away when no longer in use)", target);
        return 1;
}

int umount_below(const char *path, UmountStats *ret, Error **err) {
        int r = validate_path(path, err);
        if (r < 0)
                return r;
        if (streq(path, "/"))
                return error_set(err, -EINVAL, "/: refusing to unmount every mount");

        UmountStats stats = {};
        for (unsigned pass = 0;; pass++) {
                _cleanup_(mount_list_done) MountList l = {};
                r = read_mounts_below(path, &l, err);
                if (r < 0)
                        return r;
                if (l.n == 0)
                        break;
                if (pass == UMOUNT_MAX_PASSES)
                        return error_set(err, -EBUSY, "%s: still mounted after %u attempts (%zu mount%s at or below %s)",
                                         l.entries[0].target, pass, l.n, l.n == 1 ? "" : "s", path);

                for (size_t i = 0; i < l.n; i++) {
                        MountEntry *e = &l.entries[i];
                        /* Unmounting a mount with another on top of it or inside
                         * it fails with EBUSY, which we would take for "in use"
                         * and detach lazily. Leave it for this pass's later
                         * entries (a stacked mount comes first) or the next. */
                        if (e->children > 0)
                                continue;
                        r = umount_one(e->target, &stats, err);
                        if (r < 0)
                                return r;
                        if (r == 0)
                                continue;
                        MountEntry *parent = mount_list_find_id(&l, e->parent_id);
                        if (parent && parent != e && parent->children > 0)
                                parent->children--;
                }
        }

        if (ret)
                *ret = stats;
        return 0;
}

int has_mounts_below(const char *path, Error **err) {
        int r = validate_path(path, err);
        if (r < 0)
                return r;
        _cleanup_(mount_list_done) MountList l = {};
        r = read_mounts_below(path, &l, err);
        if (r < 0)
                return r;
        return l.n > 0;
}

/* An idmapped, read-only copy of the mount at path, attached at target. */
static int mount_idmapped(const char *path, int userns_fd, const char *target, Error **err) {
        _cleanup_close_ int fd = open_tree(AT_FDCWD, path, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);
        if (fd < 0)
                return error_sys(err, -errno, "cannot clone the mount of %s", path);
        struct mount_attr attr = { .attr_set = MOUNT_ATTR_IDMAP | MOUNT_ATTR_RDONLY, .userns_fd = (uint64_t) userns_fd };
        if (mount_setattr(fd, "", AT_EMPTY_PATH, &attr, sizeof(attr)) < 0)
                return error_sys(err, -errno, "cannot idmap the mount of %s", path);
        return mount_attach(fd, target, err);
}

/* The overlay of l with its lower layer at lower. */
static int overlay_fd(const OverlayLayers *l, const char *lower, int *ret_fd, Error **err) {
        /* One option per fsconfig(2) call: only lowerdir's ':' needs escaping. */
        _cleanup_free_ char *escaped = malloc(strlen(lower) * 2 + 1);
        if (!escaped)
                return error_sys(err, -ENOMEM, "overlay of %s", l->lower);
        char *o = escaped;
        for (const char *i = lower; *i; i++) {
                if (strchr("\\:", *i))
                        *o++ = '\\';
                *o++ = *i;
        }
        *o = 0;
        _cleanup_close_ int fs = fsopen("overlay", FSOPEN_CLOEXEC);
        if (fs < 0)
                return error_sys(err, -errno, "overlay of %s: fsopen", l->lower);
        if (fsconfig(fs, FSCONFIG_SET_STRING, "lowerdir", escaped, 0) < 0 ||
            fsconfig(fs, FSCONFIG_SET_STRING, "upperdir", l->upper, 0) < 0 ||
            fsconfig(fs, FSCONFIG_SET_STRING, "workdir", l->work, 0) < 0 ||
            fsconfig(fs, FSCONFIG_CMD_CREATE, NULL, NULL, 0) < 0)
                return error_sys(err, -errno, "cannot create an overlay of %s (changes in %s)", l->lower, l->upper);
        /* nodev: an overlay here is an image's tree and a pod's changes,
         * both the pod's to fill (an image's node, mknod in a pod with
         * CAP_MKNOD); no device node on it may open, whoever made it. */
        int fd = fsmount(fs, FSMOUNT_CLOEXEC, MOUNT_ATTR_NODEV);
        if (fd < 0)
                return error_sys(err, -errno, "cannot mount an overlay of %s", l->lower);
        *ret_fd = fd;
        return 0;
}

int mount_overlay_detached(const OverlayLayers *l, int *ret_fd, Error **err) {
        if (l->userns_fd < 0)
                return overlay_fd(l, l->lower, ret_fd, err);
        int r = mount_idmapped(l->lower, l->userns_fd, l->lower_mountpoint, err);
        if (r < 0)
                return r;
        r = overlay_fd(l, l->lower_mountpoint, ret_fd, err);
        /* The overlay holds its layers on its own: the idmapped mount's
         * place is needed no longer. */
        (void) umount2(l->lower_mountpoint, MNT_DETACH | UMOUNT_NOFOLLOW);
        return r;
}

int mount_namespace_unshare(Error **err) {
        if (unshare(CLONE_NEWNS) < 0)
                return error_sys(err, -errno, "cannot create a mount namespace");
        if (mount(NULL, "/", NULL, MS_REC | MS_SLAVE, NULL) < 0)
                return error_sys(err, -errno, "cannot make the mount namespace a slave");
        return 0;
}

int mount_namespace_detach_unneeded(char *const *keep, Error **err) {
        _cleanup_(mount_list_done) MountList l = {};
        int r = read_mounts_below("/", &l, err);
        if (r < 0)
                return r;
        /* Deepest first: a mount's own are gone before it. */
        for (size_t i = 0; i < l.n; i++) {
                const char *t = l.entries[i].target;
                bool needed = streq(t, "/");
                for (char *const *k = keep; *k && !needed; k++)
                        needed = path_is_at_or_below(t, *k) || path_is_at_or_below(*k, t);
                /* One that went with a mount above it is fine. */
                if (!needed && umount2(t, MNT_DETACH | UMOUNT_NOFOLLOW) < 0 && errno != EINVAL && errno != ENOENT)
                        return error_sys(err, -errno, "cannot detach %s from the mount namespace", t);
        }
        return 0;
}

int mount_attach(int fd, const char *target, Error **err) {
        if (move_mount(fd, "", AT_FDCWD, target, MOVE_MOUNT_F_EMPTY_PATH) < 0)
                return error_sys(err, -errno, "cannot mount at %s", target);
        return 0;
}

int mount_bind(const char *source, const char *target, unsigned long flags, Error **err) {
        if (mount(source, target, NULL, MS_BIND, NULL) < 0)
                return error_sys(err, -errno, "cannot bind %s to %s", source, target);
        /* A bind takes its flags from the source's mount; its own are added
         * on the new mount only, keeping those it had (a remount would
         * clear a nosuid or noexec of the source's). */
        struct mount_attr attr = {
                .attr_set = (flags & MS_RDONLY ? MOUNT_ATTR_RDONLY : 0) | (flags & MS_NODEV ? MOUNT_ATTR_NODEV : 0) |
                            (flags & MS_NOSUID ? MOUNT_ATTR_NOSUID : 0) | (flags & MS_NOEXEC ? MOUNT_ATTR_NOEXEC : 0),
        };
        if (attr.attr_set && mount_setattr(AT_FDCWD, target, AT_SYMLINK_NOFOLLOW, &attr, sizeof(attr)) < 0)
                return error_sys(err, -errno, "cannot set the flags of %s (read-only, nodev, nosuid)", target);
        return 0;
}
