/* SPDX-License-Identifier: Apache-2.0 */
#include <ctype.h>
#include <fcntl.h>
#include <inttypes.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/syscall.h>
#include <linux/mount.h>

#include "basic/fs.h"
#include "basic/json-util.h"
#include "basic/strv.h"
#include "basic/time-util.h"
#include "pod/pod.h"
#include "pod/pod-volume.h"

#ifndef STATX_ATTR_MOUNT_ROOT
#define STATX_ATTR_MOUNT_ROOT 0x00002000
#endif

bool volume_name_is_valid(const char *name) {
        size_t n = strlen(name);
        if (n == 0 || n > POD_VOLUME_NAME_MAX || !isalnum((unsigned char) name[0]))
                return false;
        for (const char *c = name; *c; c++)
                if (!isascii((unsigned char) *c) || (!isalnum((unsigned char) *c) && !strchr("_.-", *c)))
                        return false;
        return true;
}

/* An object's members, each one of keys: the strict shape of our records. */
static int only_keys(struct json_object *o, const char *const *keys, size_t n, const char *what, Error **err) {
        if (!json_object_is_type(o, json_type_object))
                return error_set(err, -EBADMSG, "%s: not a JSON object", what);
        json_object_object_foreach(o, key, val) {
                (void) val;
                bool known = false;
                for (size_t i = 0; i < n && !known; i++)
                        known = streq(key, keys[i]);
                if (!known) {
                        char q[VALUE_QUOTED_MAX];
                        return error_set(err, -EBADMSG, "%s: unexpected member %s", what, value_quote(key, q));
                }
        }
        return 0;
}

static int get_bool(struct json_object *o, const char *key, bool *ret, const char *what, Error **err) {
        struct json_object *v;
        if (!json_object_object_get_ex(o, key, &v))
                return 0;
        if (!json_object_is_type(v, json_type_boolean))
                return error_set(err, -EBADMSG, "%s: %s is not true or false", what, key);
        *ret = json_object_get_boolean(v);
        return 0;
}

static int get_id(struct json_object *o, const char *key, uint32_t max, uint32_t *ret, const char *what, Error **err) {
        int64_t v = 0;
        int r = json_get_int64(o, key, false, &v, what, err);
        if (r < 0)
                return r;
        if (v < 0 || v > max)
                return error_set(err, -EBADMSG, "%s: %s %" PRId64 " is out of range (0 to %" PRIu32 ")", what, key, v, max);
        *ret = (uint32_t) v;
        return 0;
}

int volume_record_parse(const char *text, size_t size, const char *what, VolumeRecord *ret, Error **err) {
        static const char *const keys[] = { "name", "created", "base" };
        if (size > POD_VOLUME_RECORD_MAX)
                return error_set(err, -EBADMSG, "%s: larger than %u bytes", what, POD_VOLUME_RECORD_MAX);
        _cleanup_json_ struct json_object *o = NULL;
        const char *name, *created;
        int r = json_parse(text, size, what, &o, err);
        if (r < 0 || (r = only_keys(o, keys, ELEMENTSOF(keys), what, err)) < 0 ||
            (r = json_get_string(o, "name", true, &name, what, err)) < 0 ||
            (r = json_get_string(o, "created", true, &created, what, err)) < 0)
                return r;
        VolumeRecord v = {};
        uint64_t usec;
        if (!volume_name_is_valid(name))
                return error_set(err, -EBADMSG, "%s: name is not a volume name", what);
        if (strlen(created) >= sizeof(v.created) || parse_timestamp(created, &usec) < 0)
                return error_set(err, -EBADMSG, "%s: created is not a timestamp", what);
        if (json_object_object_get_ex(o, "base", NULL)) {
                if ((r = get_id(o, "base", POD_USERNS_BASE_MAX, &v.base, what, err)) < 0)
                        return r;
                if (v.base != 0 && (v.base < POD_USERNS_BASE_MIN || v.base % POD_USERNS_SIZE != 0))
                        return error_set(err, -EBADMSG, "%s: base %" PRIu32 " is not 0 or a range's", what, v.base);
                v.has_base = true;
        }
        snprintf(v.name, sizeof(v.name), "%s", name);
        snprintf(v.created, sizeof(v.created), "%s", created);
        *ret = v;
        return 0;
}

int volume_record_format(const VolumeRecord *v, char **ret) {
        _cleanup_json_ struct json_object *o = json_object_new_object();
        if (!o || json_add_string(o, "name", v->name) < 0 || json_add_string(o, "created", v->created) < 0 ||
            (v->has_base && json_object_object_add(o, "base", json_object_new_int64(v->base)) < 0))
                return -ENOMEM;
        return (*ret = strdup(json_to_text(o, false))) ? 0 : -ENOMEM;
}

static int volume_record_write(int dir, const VolumeRecord *v, const char *what, Error **err) {
        _cleanup_free_ char *text = NULL;
        if (volume_record_format(v, &text) < 0)
                return error_sys(err, -ENOMEM, "%s", what);
        int r = write_file_atomic_at(dir, POD_VOLUME_RECORD, text, strlen(text), 0644, err);
        return r < 0 ? error_prefix(err, "%s", what) : 0;
}

int pod_volume_options_parse(const char *annotation, const char *volume, PodVolumeOptions *ret, Error **err) {
        static const char *const keys[] = { "named", "chown", "idmap", "uid", "gid" };
        *ret = (PodVolumeOptions) {};
        if (!annotation)
                return 0;
        _cleanup_json_ struct json_object *all = NULL;
        struct json_object *o;
        const char *what = "annotation " POD_ANNOTATION_VOLUMES, *named = NULL;
        int r = json_parse(annotation, strlen(annotation), what, &all, err);
        if (r < 0)
                return r;
        if (!json_object_is_type(all, json_type_object))
                return error_set(err, -EBADMSG, "%s: not a JSON object", what);
        if (!json_object_object_get_ex(all, volume, &o))
                return 0;
        PodVolumeOptions v = {};
        if ((r = only_keys(o, keys, ELEMENTSOF(keys), what, err)) < 0 ||
            (r = json_get_string(o, "named", false, &named, what, err)) < 0 ||
            (r = get_bool(o, "chown", &v.chown, what, err)) < 0 || (r = get_bool(o, "idmap", &v.idmap, what, err)) < 0 ||
            (r = get_id(o, "uid", POD_USERNS_SIZE - 1, &v.uid, what, err)) < 0 ||
            (r = get_id(o, "gid", POD_USERNS_SIZE - 1, &v.gid, what, err)) < 0)
                return r;
        if (named && !volume_name_is_valid(named))
                return error_set(err, -EBADMSG, "%s: volume %s: named is not a volume name", what, volume);
        if ((named != NULL) + v.chown + v.idmap > 1)
                return error_set(err, -EBADMSG, "%s: volume %s: named, chown and idmap exclude each other", what, volume);
        snprintf(v.named, sizeof(v.named), "%s", strempty(named));
        *ret = v;
        return 0;
}

/* DATA/volumes, made when create. */
static int open_volumes(const char *data, bool create, Error **err) {
        _cleanup_close_ int root = open(data, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (root < 0)
                return error_sys(err, -errno, "cannot open %s", data);
        if (create && mkdirat(root, POD_NAMED_VOLUMES_DIR, 0700) < 0 && errno != EEXIST)
                return error_sys(err, -errno, "cannot create %s/%s", data, POD_NAMED_VOLUMES_DIR);
        int fd = open_beneath_no_symlinks(root, POD_NAMED_VOLUMES_DIR, O_RDONLY | O_DIRECTORY, 0);
        return fd < 0 ? error_sys(err, fd, "cannot open %s/%s", data, POD_NAMED_VOLUMES_DIR) : fd;
}

/* DATA/volumes/name (-ENOENT when missing), never through a symlink. */
static int open_volume(const char *data, const char *name, Error **err) {
        if (!volume_name_is_valid(name))
                return error_set(err, -EINVAL, "\"%s\" is not a volume name (1 to %u of letters, digits, '_', '.' "
                                 "and '-', starting with a letter or digit)", name, POD_VOLUME_NAME_MAX);
        _cleanup_close_ int dir = open_volumes(data, false, err);
        if (dir < 0)
                return dir;
        int fd = open_beneath_no_symlinks(dir, name, O_RDONLY | O_DIRECTORY, 0);
        return fd < 0 ? error_sys(err, fd, "volume %s: %s/%s/%s", name, data, POD_NAMED_VOLUMES_DIR, name) : fd;
}

static int read_record(int fd, const char *data, const char *name, VolumeRecord *ret, Error **err) {
        _cleanup_free_ char *text = NULL, *what = NULL;
        size_t size = 0;
        if (asprintf(&what, "%s/%s/%s/%s", data, POD_NAMED_VOLUMES_DIR, name, POD_VOLUME_RECORD) < 0)
                return error_sys(err, -ENOMEM, "volume %s", name);
        int r = read_file_at(fd, POD_VOLUME_RECORD, POD_VOLUME_RECORD_MAX, &text, &size, err);
        if (r < 0 || (r = volume_record_parse(text, size, what, ret, err)) < 0)
                return r;
        if (!streq(ret->name, name))
                return error_set(err, -EBADMSG, "%s: the record of volume %s", what, ret->name);
        return 0;
}

int named_volume_ensure(const char *data, const char *name, char **ret_source, Error **err) {
        if (!volume_name_is_valid(name))
                return error_set(err, -EINVAL, "\"%s\" is not a volume name (1 to %u of letters, digits, '_', '.' "
                                 "and '-', starting with a letter or digit)", name, POD_VOLUME_NAME_MAX);
        _cleanup_close_ int dir = open_volumes(data, true, err);
        if (dir < 0)
                return dir;
        /* One maker at a time: a volume is whole (record and data) or
         * being made under this lock. */
        if (flock(dir, LOCK_EX) < 0)
                return error_sys(err, -errno, "cannot lock %s/%s", data, POD_NAMED_VOLUMES_DIR);
        int made = 0, r;
        if (mkdirat(dir, name, 0700) == 0)
                made = 1;
        else if (errno != EEXIST)
                return error_sys(err, -errno, "volume %s: cannot create %s/%s/%s", name, data, POD_NAMED_VOLUMES_DIR, name);
        _cleanup_close_ int fd = open_beneath_no_symlinks(dir, name, O_RDONLY | O_DIRECTORY, 0);
        if (fd < 0)
                return error_sys(err, fd, "volume %s: %s/%s/%s", name, data, POD_NAMED_VOLUMES_DIR, name);
        VolumeRecord rec = {};
        if (!exists_beneath(fd, POD_VOLUME_RECORD)) {
                if (mkdirat(fd, POD_VOLUME_DATA, 0755) < 0 && errno != EEXIST)
                        return error_sys(err, -errno, "volume %s: cannot create its %s/", name, POD_VOLUME_DATA);
                snprintf(rec.name, sizeof(rec.name), "%s", name);
                format_timestamp(now_usec(), rec.created);
                _cleanup_free_ char *what = NULL;
                if (asprintf(&what, "volume %s", name) < 0 || (r = volume_record_write(fd, &rec, what, err)) < 0)
                        return what ? r : error_sys(err, -ENOMEM, "volume %s", name);
                made = 1;
        } else if ((r = read_record(fd, data, name, &rec, err)) < 0)
                return r;
        if (asprintf(ret_source, "%s/%s/%s/%s", data, POD_NAMED_VOLUMES_DIR, name, POD_VOLUME_DATA) < 0)
                return error_sys(err, -ENOMEM, "volume %s", name);
        return made;
}

/* The walk of a re-own: each entry below dirfd (a directory opened without
 * following links, on mount st_dev) given its new owner by lchown. */
typedef struct Reown {
        uid_t uid, gid;         /* chown: everything to these */
        bool shift;             /* else: ids of [from, from+65536) to base+(id-from) */
        uint32_t from, base;
        dev_t dev;
        const char *what;
} Reown;

static int reown_one(const Reown *o, int dirfd, const char *name, const struct stat *st, Error **err) {
        uid_t uid = o->uid;
        gid_t gid = o->gid;
        if (o->shift) {
                uid = st->st_uid >= o->from && st->st_uid - o->from < POD_USERNS_SIZE ? o->base + (st->st_uid - o->from)
                                                                                      : st->st_uid;
                gid = st->st_gid >= o->from && st->st_gid - o->from < POD_USERNS_SIZE ? o->base + (st->st_gid - o->from)
                                                                                      : st->st_gid;
        }
        if (uid == st->st_uid && gid == st->st_gid)
                return 0;
        /* Never follows: a symlink is changed itself, not what it names. */
        if (fchownat(dirfd, name, uid, gid, AT_SYMLINK_NOFOLLOW | (*name ? 0 : AT_EMPTY_PATH)) < 0)
                return error_sys(err, -errno, "%s: cannot change the owner of %s", o->what, *name ? name : ".");
        /* chown(2) drops set-user-ID and set-group-ID bits of what it
         * re-owns: nothing a pod planted keeps them for another owner. */
        return 0;
}

static int reown_dir(const Reown *o, int fd, unsigned depth, Error **err) {
        if (depth > POD_VOLUME_DEPTH_MAX)
                return error_set(err, -ELOOP, "%s: deeper than %u directories", o->what, POD_VOLUME_DEPTH_MAX);
        int dup = fcntl(fd, F_DUPFD_CLOEXEC, 3);
        if (dup < 0)
                return error_sys(err, -errno, "%s", o->what);
        _cleanup_closedir_ DIR *d = fdopendir(dup);
        if (!d) {
                close(dup);
                return error_sys(err, -errno, "%s", o->what);
        }
        for (struct dirent *de; (errno = 0, de = readdir(d));) {
                if (streq(de->d_name, ".") || streq(de->d_name, ".."))
                        continue;
                struct statx sx;
                if (statx(fd, de->d_name, AT_SYMLINK_NOFOLLOW, STATX_BASIC_STATS, &sx) < 0) {
                        if (errno == ENOENT)
                                continue;
                        return error_sys(err, -errno, "%s: %s", o->what, de->d_name);
                }
                /* Another mount (what a host bound there, or the pod): not the volume's. */
                if (makedev(sx.stx_dev_major, sx.stx_dev_minor) != o->dev ||
                    ((sx.stx_attributes_mask & STATX_ATTR_MOUNT_ROOT) && (sx.stx_attributes & STATX_ATTR_MOUNT_ROOT)))
                        continue;
                struct stat st = { .st_uid = sx.stx_uid, .st_gid = sx.stx_gid, .st_mode = sx.stx_mode };
                int r;
                if (S_ISDIR(st.st_mode)) {
                        /* Opened without following: a directory swapped for a
                         * symlink meanwhile is -ELOOP/-ENOTDIR, not followed. */
                        _cleanup_close_ int sub = openat(fd, de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                        if (sub < 0)
                                return error_sys(err, -errno, "%s: %s", o->what, de->d_name);
                        struct stat sst;
                        if (fstat(sub, &sst) < 0)
                                return error_sys(err, -errno, "%s: %s", o->what, de->d_name);
                        if (sst.st_dev != o->dev)
                                continue;
                        if ((r = reown_one(o, sub, "", &sst, err)) < 0 || (r = reown_dir(o, sub, depth + 1, err)) < 0)
                                return r;
                } else if ((r = reown_one(o, fd, de->d_name, &st, err)) < 0)
                        return r;
        }
        return errno > 0 ? error_sys(err, -errno, "%s", o->what) : 0;
}

/* Re-owns the tree of fd (a directory, opened without following). */
static int reown_tree(Reown *o, int fd, Error **err) {
        struct stat st;
        if (fstat(fd, &st) < 0)
                return error_sys(err, -errno, "%s", o->what);
        o->dev = st.st_dev;
        int r = reown_one(o, fd, "", &st, err);
        return r < 0 ? r : reown_dir(o, fd, 0, err);
}

/* A host volume of chown=true: its directory and all in it the app's. */
static int start_chown(const PodVolume *v, const PodVolumeOptions *o, const PodUserns *u, Error **err) {
        _cleanup_close_ int fd = open(v->source, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return error_sys(err, -errno, "volume %s: chown=true needs a directory: %s", v->name, v->source);
        _cleanup_free_ char *what = NULL;
        if (asprintf(&what, "volume %s (%s)", v->name, v->source) < 0)
                return error_sys(err, -ENOMEM, "volume %s", v->name);
        uid_t root = pod_userns_root(u);
        Reown r = { .uid = root + o->uid, .gid = root + o->gid, .what = what };
        return reown_tree(&r, fd, err);
}

static int start_named(const char *data, const PodVolume *v, const PodVolumeOptions *o, const PodUserns *u,
                       int *ret_hold, int *ret_source, Error **err) {
        _cleanup_close_ int fd = open_volume(data, o->named, err);
        if (fd < 0)
                return error_prefix(err, "volume %s", v->name);
        VolumeRecord rec;
        int r = read_record(fd, data, o->named, &rec, err);
        if (r < 0)
                return error_prefix(err, "volume %s", v->name);
        uint32_t base = pod_userns_root(u);
        /* The same range: shared with the others of it that run. */
        int how = rec.has_base && rec.base == base ? LOCK_SH : LOCK_EX;
        if (flock(fd, how | LOCK_NB) < 0)
                return errno == EWOULDBLOCK
                               ? error_set(err, -EBUSY, "volume %s: named volume %s is in use by a running pod of "
                                           "another user id range (%" PRIu32 "); it is re-owned only when none runs",
                                           v->name, o->named, rec.base)
                               : error_sys(err, -errno, "volume %s: cannot lock named volume %s", v->name, o->named);
        /* The pod sees data/ itself: a symlink there (put by whoever) is
         * refused, never followed. */
        _cleanup_close_ int dfd = open_beneath_no_symlinks(fd, POD_VOLUME_DATA, O_RDONLY | O_DIRECTORY, 0);
        if (dfd < 0)
                return error_sys(err, dfd, "volume %s: named volume %s: %s/%s/%s/%s is not a directory", v->name,
                                 o->named, data, POD_NAMED_VOLUMES_DIR, o->named, POD_VOLUME_DATA);
        if (how == LOCK_EX) {
                _cleanup_free_ char *what = NULL;
                if (asprintf(&what, "volume %s (named volume %s)", v->name, o->named) < 0)
                        return error_sys(err, -ENOMEM, "volume %s", v->name);
                /* New: given to the first app that mounts it. Else each
                 * entry of the old range keeps its id in the pod. */
                Reown ro = rec.has_base ? (Reown) { .shift = true, .from = rec.base, .base = base, .what = what }
                                        : (Reown) { .uid = base + o->uid, .gid = base + o->gid, .what = what };
                if (!rec.has_base) {
                        struct stat st;
                        if (fstat(dfd, &st) < 0)
                                return error_sys(err, -errno, "%s", what);
                        r = reown_one(&ro, dfd, "", &st, err);
                } else
                        r = reown_tree(&ro, dfd, err);
                if (r < 0)
                        return r;
                rec.has_base = true;
                rec.base = base;
                if ((r = volume_record_write(fd, &rec, what, err)) < 0)
                        return r;
                /* Kept for the pod's life, shared from now on. */
                if (flock(fd, LOCK_SH | LOCK_NB) < 0)
                        return error_sys(err, -errno, "volume %s: cannot lock named volume %s", v->name, o->named);
        }
        *ret_hold = TAKE_FD(fd);
        *ret_source = TAKE_FD(dfd);
        return 0;
}

int pod_volume_start(const char *data, const PodVolume *v, const PodVolumeOptions *o, const PodUserns *u,
                     int *ret_hold, int *ret_source, Error **err) {
        *ret_hold = *ret_source = -1;
        if (v->kind != POD_VOLUME_HOST)
                return 0;
        if (o->named[0])
                return start_named(data, v, o, u, ret_hold, ret_source, err);
        if (o->chown && !v->read_only)
                return start_chown(v, o, u, err);
        return 0;
}

int mount_bind_idmapped(const char *source, const char *target, int userns_fd, bool read_only, Error **err) {
        _cleanup_close_ int fd = (int) syscall(SYS_open_tree, AT_FDCWD, source,
                                               OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_SYMLINK_NOFOLLOW);
        if (fd < 0)
                return error_sys(err, -errno, "cannot clone the mount of %s", source);
        struct mount_attr attr = {
                .attr_set = MOUNT_ATTR_IDMAP | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | (read_only ? MOUNT_ATTR_RDONLY : 0),
                .userns_fd = (uint64_t) userns_fd,
        };
        if (syscall(SYS_mount_setattr, fd, "", AT_EMPTY_PATH, &attr, sizeof(attr)) < 0)
                return error_sys(err, -errno, "cannot idmap the mount of %s (its file system must support idmapped "
                                 "mounts)", source);
        if (syscall(SYS_move_mount, fd, "", AT_FDCWD, target, MOVE_MOUNT_F_EMPTY_PATH) < 0)
                return error_sys(err, -errno, "cannot mount %s at %s", source, target);
        return 0;
}

static int cmp_str(const void *a, const void *b) {
        return strcmp(*(char *const *) a, *(char *const *) b);
}

int volume_list(const char *data, char ***ret, Error **err) {
        _cleanup_strv_free_ char **l = NULL;
        _cleanup_close_ int dir = open_volumes(data, false, NULL);
        if (dir == -ENOENT || dir == -ENOTDIR) {
                *ret = NULL;
                return 0;
        }
        _cleanup_closedir_ DIR *d = dir >= 0 ? opendir_at(dir, ".") : NULL;
        if (!d)
                return error_sys(err, dir < 0 ? dir : -errno, "cannot open %s/%s", data, POD_NAMED_VOLUMES_DIR);
        for (struct dirent *de; (de = readdir(d));)
                if (volume_name_is_valid(de->d_name) && strv_push(&l, de->d_name) < 0)
                        return error_sys(err, -ENOMEM, "%s/%s", data, POD_NAMED_VOLUMES_DIR);
        if (l)
                qsort(l, strv_length(l), sizeof(char *), cmp_str);
        *ret = TAKE_PTR(l);
        return 0;
}

int volume_inspect(const char *data, const char *name, VolumeRecord *ret, Error **err) {
        _cleanup_close_ int fd = open_volume(data, name, err);
        return fd < 0 ? fd : read_record(fd, data, name, ret, err);
}

typedef struct UsersWalk {
        const char *name;
        char **users;
} UsersWalk;

static int users_of(PodStore *ps, Pod *p, void *userdata) {
        (void) ps;
        UsersWalk *w = userdata;
        if (p->state != POD_STATE_PREPARING && p->state != POD_STATE_PREPARED && p->state != POD_STATE_RUNNING &&
            p->state != POD_STATE_EXITED)
                return 0;
        _cleanup_pod_manifest_ PodManifest *m = NULL;
        if (pod_manifest_read_at(p->fd, "pod", "pod manifest", &m, NULL) < 0)
                return 0; /* a pod being prepared has none yet */
        const char *a = pod_manifest_get_annotation(m, POD_ANNOTATION_VOLUMES);
        for (size_t i = 0; a && i < m->n_volumes; i++) {
                PodVolumeOptions o;
                if (pod_volume_options_parse(a, m->volumes[i].name, &o, NULL) < 0 || !streq(o.named, w->name))
                        continue;
                _cleanup_free_ char *s = NULL;
                if (asprintf(&s, "%s %s", p->uuid, pod_state_to_string(p->state)) < 0 || strv_push(&w->users, s) < 0)
                        return -ENOMEM;
                break;
        }
        return 0;
}

int volume_users(PodStore *ps, const char *name, char ***ret, Error **err) {
        UsersWalk w = { .name = name };
        int r = pod_foreach(ps, users_of, &w, err);
        if (r < 0) {
                strv_free(w.users);
                return r == -ENOMEM ? error_sys(err, r, "volume %s", name) : r;
        }
        *ret = w.users;
        return 0;
}

int volume_remove(PodStore *ps, const char *name, Error **err) {
        _cleanup_close_ int fd = open_volume(ps->root, name, err);
        if (fd < 0)
                return fd;
        /* Not while a pod of it starts or runs (their lock), nor while one
         * names it. */
        if (flock(fd, LOCK_EX | LOCK_NB) < 0)
                return error_set(err, -EBUSY, "volume %s is in use by a running pod", name);
        _cleanup_strv_free_ char **users = NULL;
        int r = volume_users(ps, name, &users, err);
        if (r < 0)
                return r;
        if (users)
                return error_set(err, -EBUSY, "volume %s is in use by pod %s%s (remove the pod first: sdpod rm)", name,
                                 users[0], users[1] ? " and others" : "");
        _cleanup_close_ int dir = open_volumes(ps->root, false, err);
        if (dir < 0)
                return dir;
        /* Renamed away first: the name is free at once, and what a pod
         * left there is removed without following a link (rm_rf_at). */
        char tmp[64];
        random_name(tmp, sizeof(tmp), ".removing-");
        if (renameat(dir, name, dir, tmp) < 0)
                return error_sys(err, -errno, "volume %s: cannot remove it", name);
        if ((r = rm_rf_at(dir, tmp)) < 0)
                return error_sys(err, r, "volume %s: cannot remove %s/%s/%s", name, ps->root, POD_NAMED_VOLUMES_DIR, tmp);
        return 0;
}

int volume_prune(PodStore *ps, char ***ret, Error **err) {
        _cleanup_strv_free_ char **names = NULL, **removed = NULL;
        int r = volume_list(ps->root, &names, err);
        if (r < 0)
                return r;
        for (char **n = names; n && *n; n++) {
                _cleanup_error_ Error *e = NULL;
                r = volume_remove(ps, *n, &e);
                if (r == -EBUSY)
                        continue;
                if (r < 0) {
                        if (err && !*err)
                                *err = TAKE_PTR(e);
                        return r;
                }
                if (strv_push(&removed, *n) < 0)
                        return error_sys(err, -ENOMEM, "volumes");
        }
        if (ret)
                *ret = TAKE_PTR(removed);
        return 0;
}
