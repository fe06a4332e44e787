/* SPDX-License-Identifier: Apache-2.0 */
#include <dirent.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "basic/fs.h"
#include "basic/lock.h"
#include "manifest/app-args.h"
#include "pod/pod-info.h"
#include "pod/pod-ref.h"

bool pod_state_holds_name(PodState s) {
        return s == POD_STATE_PREPARING || s == POD_STATE_PREPARED || s == POD_STATE_RUNNING;
}

typedef struct NameScan {
        const char *name;
        PodNamed *found;
        size_t n;
} NameScan;

static int collect_named(PodStore *s, Pod *p, void *userdata) {
        NameScan *c = userdata;
        PodInfo info;
        int r = pod_info_read(p, false, &info);
        if (r < 0)
                return r;
        bool match = streq_ptr(pod_info_name(&info), c->name);
        uint64_t created = info.created_usec;
        pod_info_done(&info);
        if (!match)
                return 0;
        PodNamed *l = reallocarray(c->found, c->n + 1, sizeof(PodNamed));
        if (!l)
                return -ENOMEM;
        c->found = l;
        l = &c->found[c->n++];
        snprintf(l->uuid, sizeof(l->uuid), "%s", p->uuid);
        l->state = p->state;
        l->created_usec = created;
        return 0;
}

int pod_find_named(PodStore *s, const char *name, PodNamed **ret, size_t *ret_n, Error **err) {
        NameScan c = { .name = name };
        int r = pod_foreach(s, collect_named, &c, err);
        if (r < 0) {
                free(c.found);
                return r == -ENOMEM ? error_sys(err, r, "pods named %s", name) : r;
        }
        *ret = c.found;
        *ret_n = c.n;
        return 0;
}

/* The live pod of the name, else the newest. */
static const PodNamed *pick_named(const PodNamed *found, size_t n) {
        const PodNamed *best = NULL;
        for (size_t i = 0; i < n; i++) {
                if (pod_state_holds_name(found[i].state))
                        return &found[i];
                if (!best || found[i].created_usec > best->created_usec)
                        best = &found[i];
        }
        return best;
}

/* The name index: DATA/pods/names/NAME is a symbolic link whose target is
 * the UUID of the last pod that was given the name (read with readlinkat,
 * never followed). A name is given under names.lock, only when no live pod
 * has it, so the last pod given a name is its live pod when there is one,
 * else its newest: what a name resolves to. The index makes that one
 * readlinkat instead of reading every pod's manifest; it is a cache, and
 * an entry whose pod is gone (removed since) or does not have the name is
 * checked by reading the manifests, as a store without an index is. */
#define NAMES_DIR "names"
#define NAMES_LOCK "names.lock"

static int index_get(int dirfd, const char *name, char uuid[static UUID_STRING_MAX]) {
        char buf[UUID_STRING_MAX + 1];
        ssize_t n = readlinkat(dirfd, name, buf, sizeof(buf));
        if (n < 0)
                return -errno;
        if (n >= (ssize_t) sizeof(buf))
                return -EBADMSG;
        buf[n] = 0;
        if (!uuid_is_valid(buf))
                return -EBADMSG;
        memcpy(uuid, buf, UUID_STRING_MAX);
        return 0;
}

static int index_set(int dirfd, const char *name, const char *uuid) {
        /* Names never start with '.': the temporary link cannot be one. */
        char tmp[80];
        snprintf(tmp, sizeof(tmp), ".tmp-%s", name);
        (void) unlinkat(dirfd, tmp, 0);
        if (symlinkat(uuid, dirfd, tmp) < 0)
                return -errno;
        if (renameat(dirfd, tmp, dirfd, name) < 0) {
                int r = -errno;
                (void) unlinkat(dirfd, tmp, 0);
                return r;
        }
        return 0;
}

typedef struct IndexBuild {
        int dirfd;
        char **names;   /* names seen, each with the pod it resolves to so far */
        PodNamed *best;
        size_t n;
} IndexBuild;

static int index_collect(PodStore *s, Pod *p, void *userdata) {
        IndexBuild *b = userdata;
        PodInfo info;
        int r = pod_info_read(p, false, &info);
        if (r < 0)
                return r;
        const char *name = pod_info_name(&info);
        PodNamed here = { .state = p->state, .created_usec = info.created_usec };
        snprintf(here.uuid, sizeof(here.uuid), "%s", p->uuid);
        size_t i = 0;
        while (name && i < b->n && !streq(b->names[i], name))
                i++;
        if (name && i == b->n) {
                char **l = reallocarray(b->names, b->n + 1, sizeof(char *));
                PodNamed *k = l ? reallocarray(b->best, b->n + 1, sizeof(PodNamed)) : NULL;
                if (l)
                        b->names = l;
                if (k)
                        b->best = k;
                if (!l || !k || !(b->names[b->n] = strdup(name)))
                        r = -ENOMEM;
                else
                        b->best[b->n++] = here;
        } else if (name) {
                PodNamed two[2] = { b->best[i], here };
                b->best[i] = *pick_named(two, 2);
        }
        pod_info_done(&info);
        return r;
}

/* Makes DATA/pods/names from every pod's manifest: once for a store made
 * by an sdpod without the index, and after gc (its entries of removed
 * pods). The caller holds names.lock. */
static int index_build(PodStore *s, Error **err) {
        (void) rm_rf_at(s->pods_fd, NAMES_DIR ".new");
        if (mkdirat(s->pods_fd, NAMES_DIR ".new", 0700) < 0)
                return error_sys(err, -errno, "cannot create %s/pods/" NAMES_DIR ".new", s->root);
        _cleanup_close_ int dirfd = openat(s->pods_fd, NAMES_DIR ".new", O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
        if (dirfd < 0)
                return error_sys(err, -errno, "%s/pods/" NAMES_DIR ".new", s->root);
        IndexBuild b = {};
        int r = pod_foreach(s, index_collect, &b, err);
        if (r == -ENOMEM)
                error_sys(err, r, "pod names");
        for (size_t i = 0; r >= 0 && i < b.n; i++)
                if ((r = index_set(dirfd, b.names[i], b.best[i].uuid)) < 0)
                        error_sys(err, r, "%s/pods/" NAMES_DIR ".new/%s", s->root, b.names[i]);
        for (size_t i = 0; i < b.n; i++)
                free(b.names[i]);
        free(b.names);
        free(b.best);
        /* In place of the index there may be: exchanged, then the old one
         * removed; a lookup meanwhile sees one or the other, whole. */
        if (r >= 0 && renameat2(s->pods_fd, NAMES_DIR ".new", s->pods_fd, NAMES_DIR, RENAME_EXCHANGE) < 0) {
                if (errno != ENOENT || renameat(s->pods_fd, NAMES_DIR ".new", s->pods_fd, NAMES_DIR) < 0)
                        r = error_sys(err, -errno, "%s/pods/" NAMES_DIR, s->root);
        } else if (r >= 0)
                (void) rm_rf_at(s->pods_fd, NAMES_DIR ".new");
        return r < 0 ? r : fsync_dir_at(s->pods_fd, ".");
}

int pod_names_index_ensure(PodStore *s, Error **err) {
        if (faccessat(s->pods_fd, NAMES_DIR, F_OK, AT_SYMLINK_NOFOLLOW) == 0)
                return 0;
        _cleanup_close_ int lock = lock_file_at(s->pods_fd, NAMES_LOCK, LOCK_EX);
        if (lock < 0)
                return error_sys(err, lock, "cannot lock %s/pods/" NAMES_LOCK, s->root);
        if (faccessat(s->pods_fd, NAMES_DIR, F_OK, AT_SYMLINK_NOFOLLOW) == 0)
                return 0; /* another process built it meanwhile */
        return index_build(s, err);
}

/* The pod the index says has name, when it is there and has the name:
 * 1; 0 when the index has no entry for it (no pod was ever given it);
 * -ESTALE when the entry cannot be trusted (its pod is gone, or another
 * name), or there is no index: the manifests must tell. */
static int index_lookup(PodStore *s, const char *name, Pod **ret) {
        if (s->pods_fd < 0)
                return 0; /* a read-only store without pods */
        _cleanup_close_ int dirfd = openat(s->pods_fd, NAMES_DIR, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
        if (dirfd < 0)
                return -ESTALE;
        char uuid[UUID_STRING_MAX];
        int r = index_get(dirfd, name, uuid);
        if (r == -ENOENT)
                return 0;
        _cleanup_pod_ Pod *p = NULL;
        if (r < 0 || pod_lookup(s, uuid, &p, NULL) < 0)
                return -ESTALE;
        PodInfo info;
        if (pod_info_read(p, false, &info) < 0)
                return -ESTALE;
        bool match = streq_ptr(pod_info_name(&info), name);
        pod_info_done(&info);
        if (!match)
                return -ESTALE;
        *ret = TAKE_PTR(p);
        return 1;
}

/* By the manifests: the pod name resolves to, or NULL. */
static int scan_named(PodStore *s, const char *name, Pod **ret, Error **err) {
        _cleanup_free_ PodNamed *found = NULL;
        size_t n;
        int r = pod_find_named(s, name, &found, &n, err);
        if (r < 0)
                return r;
        const PodNamed *named = pick_named(found, n);
        if (!named) {
                *ret = NULL;
                return 0;
        }
        /* It may have been removed since the scan: then the name names
         * nothing, which is what a lookup a moment later would have said. */
        r = pod_lookup(s, named->uuid, ret, err);
        return r == -ENOENT ? error_prefix(err, "pod %s", name) : r;
}

int pod_resolve(PodStore *s, const char *ref, Pod **ret, Error **err) {
        if (uuid_is_valid(ref))
                return pod_lookup(s, ref, ret, err);
        if (!pod_name_is_valid(ref)) {
                char q[VALUE_QUOTED_MAX];
                return error_set(err, -EINVAL, "%s is neither a pod name nor a pod UUID (or a prefix of one)",
                                 value_quote(ref, q));
        }
        Pod *named = NULL;
        int r = index_lookup(s, ref, &named);
        if (r == -ESTALE && (r = scan_named(s, ref, &named, err)) < 0)
                return r;
        if (named) {
                *ret = named;
                return 0;
        }
        if (!uuid_prefix_is_valid(ref))
                return error_set(err, -ENOENT, "no pod named %s", ref);
        _cleanup_error_ Error *e = NULL;
        r = pod_lookup(s, ref, ret, &e);
        if (r == -ENOENT)
                return error_set(err, r, "no pod is named %s or has a UUID starting with it", ref);
        if (r < 0 && err && !*err)
                *err = TAKE_PTR(e);
        return r;
}

int pod_name_claim(PodStore *s, const char *name, int *ret_lock, Error **err) {
        _cleanup_close_ int lock = lock_file_at(s->pods_fd, NAMES_LOCK, LOCK_EX);
        if (lock < 0)
                return error_sys(err, lock, "cannot lock %s/pods/" NAMES_LOCK, s->root);
        int r = 0;
        if (faccessat(s->pods_fd, NAMES_DIR, F_OK, AT_SYMLINK_NOFOLLOW) < 0 && (r = index_build(s, err)) < 0)
                return r;
        /* The live pod of a name is the last that was given it: only that
         * one needs a look (the index is complete once built, and kept by
         * every claim under this lock). */
        _cleanup_pod_ Pod *last = NULL;
        r = index_lookup(s, name, &last);
        if (r > 0 && pod_state_holds_name(last->state))
                return error_set(err, -EEXIST, "a pod named %s is %s already: %s (a name names one pod "
                                 "that is prepared or running; stop or remove it, or choose another name)",
                                 name, pod_state_to_string(last->state), last->uuid);
        *ret_lock = TAKE_FD(lock);
        return 0;
}

int pod_names_index_rebuild(PodStore *s, Error **err) {
        _cleanup_close_ int lock = lock_file_at(s->pods_fd, NAMES_LOCK, LOCK_EX);
        if (lock < 0)
                return error_sys(err, lock, "cannot lock %s/pods/" NAMES_LOCK, s->root);
        return index_build(s, err);
}

int pod_name_record(PodStore *s, const char *name, const char *uuid, Error **err) {
        _cleanup_close_ int dirfd = openat(s->pods_fd, NAMES_DIR, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
        int r = dirfd < 0 ? -errno : index_set(dirfd, name, uuid);
        return r < 0 ? error_sys(err, r, "%s/pods/" NAMES_DIR "/%s", s->root, name) : 0;
}

int pod_name_forget(PodStore *s, const char *name, const char *uuid, Error **err) {
        if (s->pods_fd < 0 || !pod_name_is_valid(name))
                return 0;
        _cleanup_close_ int lock = lock_file_at(s->pods_fd, NAMES_LOCK, LOCK_EX);
        if (lock < 0)
                return error_sys(err, lock, "cannot lock %s/pods/" NAMES_LOCK, s->root);
        _cleanup_close_ int dirfd = openat(s->pods_fd, NAMES_DIR, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
        char last[UUID_STRING_MAX];
        if (dirfd < 0 || index_get(dirfd, name, last) < 0 || !streq(last, uuid))
                return 0;
        _cleanup_free_ PodNamed *found = NULL;
        size_t n = 0;
        int r = pod_find_named(s, name, &found, &n, err);
        if (r < 0)
                return r;
        /* The other pods of the name (older runs): the live one, else the
         * newest, is what the name resolves to now. */
        size_t k = 0;
        for (size_t i = 0; i < n; i++)
                if (!streq(found[i].uuid, uuid))
                        found[k++] = found[i];
        const PodNamed *best = pick_named(found, k);
        if (best) {
                r = index_set(dirfd, name, best->uuid);
                return r < 0 ? error_sys(err, r, "%s/pods/" NAMES_DIR "/%s", s->root, name) : 0;
        }
        if (unlinkat(dirfd, name, 0) < 0 && errno != ENOENT)
                return error_sys(err, -errno, "cannot remove %s/pods/" NAMES_DIR "/%s", s->root, name);
        return 0;
}

int pod_names_index_prune(PodStore *s, Error **err) {
        if (s->pods_fd < 0)
                return 0;
        _cleanup_close_ int lock = lock_file_at(s->pods_fd, NAMES_LOCK, LOCK_EX);
        if (lock < 0)
                return error_sys(err, lock, "cannot lock %s/pods/" NAMES_LOCK, s->root);
        int fd = openat(s->pods_fd, NAMES_DIR, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
        if (fd < 0)
                return errno == ENOENT ? 0 : error_sys(err, -errno, "%s/pods/" NAMES_DIR, s->root);
        _cleanup_closedir_ DIR *d = fdopendir(fd);
        if (!d) {
                close(fd);
                return error_sys(err, -ENOMEM, "%s/pods/" NAMES_DIR, s->root);
        }
        bool stale = false;
        for (struct dirent *de; !stale && (de = readdir(d));) {
                if (de->d_name[0] == '.')
                        continue;
                char uuid[UUID_STRING_MAX];
                _cleanup_pod_ Pod *p = NULL;
                stale = index_get(dirfd(d), de->d_name, uuid) < 0 || pod_lookup(s, uuid, &p, NULL) == -ENOENT;
        }
        return stale ? index_build(s, err) : 0;
}
