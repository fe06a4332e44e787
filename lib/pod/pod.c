/* SPDX-License-Identifier: Apache-2.0 */
#include <fcntl.h>
#include <sys/file.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <poll.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <time.h>

#include "basic/crash-point.h"
#include "basic/fs.h"
#include "basic/mount-util.h"
#include "basic/time-util.h"
#include "basic/warn.h"
#include "manifest/pod-manifest.h"
#include "pod/pod-cgroup.h"
#include "pod/pod-info.h"
#include "pod/pod-ref.h"
#include "pod/pod-userns.h"
#include "pod/pod.h"
#include "pod/stage1.h"

static const char *const pod_dir_names[_POD_DIR_MAX] = {
        [POD_DIR_EMBRYO] = "embryo",
        [POD_DIR_PREPARE] = "prepare",
        [POD_DIR_PREPARED] = "prepared",
        [POD_DIR_RUN] = "run",
        [POD_DIR_EXITED_GARBAGE] = "exited-garbage",
        [POD_DIR_GARBAGE] = "garbage",
};

static const char *const pod_state_names[_POD_STATE_MAX] = {
        [POD_STATE_EMBRYO] = "embryo",
        [POD_STATE_PREPARING] = "preparing",
        [POD_STATE_PREPARE_FAILED] = "prepare-failed",
        [POD_STATE_PREPARED] = "prepared",
        [POD_STATE_RUNNING] = "running",
        [POD_STATE_EXITED] = "exited",
        [POD_STATE_EXITED_DELETING] = "exited+deleting",
        [POD_STATE_EXITED_GC_MARKED] = "exited+gc-marked",
        [POD_STATE_PREPARE_FAILED_DELETING] = "prepare-failed+deleting",
        [POD_STATE_PREPARE_FAILED_GC_MARKED] = "prepare-failed+gc-marked",
};

const char *pod_dir_to_string(PodDir d) {
        return d >= 0 && d < _POD_DIR_MAX ? pod_dir_names[d] : NULL;
}

const char *pod_state_to_string(PodState s) {
        return s >= 0 && s < _POD_STATE_MAX ? pod_state_names[s] : NULL;
}

/* Seed 000's two tables in one function. */
static PodState pod_state_of(PodDir d, bool locked) {
        switch (d) {
        case POD_DIR_EMBRYO:
                return POD_STATE_EMBRYO;
        case POD_DIR_PREPARE:
                return locked ? POD_STATE_PREPARING : POD_STATE_PREPARE_FAILED;
        case POD_DIR_PREPARED:
                return POD_STATE_PREPARED;
        case POD_DIR_RUN:
                return locked ? POD_STATE_RUNNING : POD_STATE_EXITED;
        case POD_DIR_EXITED_GARBAGE:
                return locked ? POD_STATE_EXITED_DELETING : POD_STATE_EXITED_GC_MARKED;
        case POD_DIR_GARBAGE:
        default:
                return locked ? POD_STATE_PREPARE_FAILED_DELETING : POD_STATE_PREPARE_FAILED_GC_MARKED;
        }
}

/* Directories where a lock means nothing: no process is bound to the state. */
static bool pod_dir_has_lock_meaning(PodDir d) {
        return d != POD_DIR_EMBRYO && d != POD_DIR_PREPARED;
}

void pod_store_free(PodStore *s) {
        if (!s)
                return;
        for (size_t i = 0; i < _POD_DIR_MAX; i++)
                closep(&s->dir_fds[i]);
        closep(&s->pods_fd);
        free(s->root);
        free(s);
}

int pod_store_open(const char *root, bool create_root, bool read_only, PodStore **ret, Error **err) {
        int r;
        if (create_root && !read_only && (r = mkdir_p(root, 0755)) < 0)
                return error_sys(err, r, "cannot create data directory %s", root);

        _cleanup_(pod_store_freep) PodStore *s = calloc(1, sizeof(PodStore));
        if (!s)
                return error_sys(err, -ENOMEM, "pod store");
        s->pods_fd = -1;
        for (size_t i = 0; i < _POD_DIR_MAX; i++)
                s->dir_fds[i] = -1;

        /* Canonical, because mount targets are compared with it (mountinfo
         * shows resolved paths). */
        if (!(s->root = realpath(root, NULL)))
                return error_sys(err, -errno, "data directory %s", root);
        _cleanup_close_ int root_fd = open(s->root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (root_fd < 0)
                return error_sys(err, -errno, "data directory %s", root);
        if (!read_only && mkdirat(root_fd, "pods", 0700) < 0 && errno != EEXIST)
                return error_sys(err, -errno, "cannot create %s/pods", s->root);
        s->pods_fd = openat(root_fd, "pods", O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
        if (s->pods_fd < 0 && read_only && errno == ENOENT) {
                /* No pod was ever made here: an empty store, whose state
                 * directories are missing (their fds stay -1). */
                *ret = TAKE_PTR(s);
                return 0;
        }
        if (s->pods_fd < 0)
                return error_sys(err, -errno, "%s/pods", s->root);
        for (PodDir d = 0; d < _POD_DIR_MAX; d++) {
                if (!read_only && mkdirat(s->pods_fd, pod_dir_names[d], 0700) < 0 && errno != EEXIST)
                        return error_sys(err, -errno, "cannot create %s/pods/%s", s->root, pod_dir_names[d]);
                s->dir_fds[d] = openat(s->pods_fd, pod_dir_names[d], O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
                if (s->dir_fds[d] < 0)
                        return error_sys(err, -errno, "%s/pods/%s", s->root, pod_dir_names[d]);
        }
        /* Writability is checked here, once, so that a read-only data
         * directory is named as such instead of failing half-way. */
        if (!read_only && faccessat(s->pods_fd, ".", W_OK, AT_EACCESS) < 0)
                return error_sys(err, -errno, "data directory %s is not writable", s->root);
        *ret = TAKE_PTR(s);
        return 0;
}

void pod_free(Pod *p) {
        if (!p)
                return;
        closep(&p->fd); /* releases our lock, if any */
        free(p);
}

char *pod_path(const PodStore *s, const Pod *p) {
        char *path = NULL;
        if (asprintf(&path, "%s/pods/%s/%s", s->root, pod_dir_names[p->dir], p->uuid) < 0)
                return NULL;
        return path;
}

/* Opens the pod directory dir/uuid. A symlink or a file there is not a pod:
 * -ENOTDIR. */
static int pod_open(PodStore *s, PodDir d, const char *uuid, Pod **ret) {
        if (s->dir_fds[d] < 0)
                return -ENOENT; /* a read-only store without pods */
        int fd = openat(s->dir_fds[d], uuid, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
        if (fd < 0)
                return errno == ELOOP ? -ENOTDIR : -errno;
        Pod *p = calloc(1, sizeof(Pod));
        if (!p) {
                close(fd);
                return -ENOMEM;
        }
        snprintf(p->uuid, sizeof(p->uuid), "%s", uuid);
        p->dir = d;
        p->fd = fd;
        *ret = p;
        return 0;
}

static int flock_retry(int fd, int operation) {
        while (flock(fd, operation) < 0)
                if (errno != EINTR)
                        return -errno;
        return 0;
}

/* Samples p's state from its directory and, where a lock has meaning, a
 * shared lock probe that is released at once (so that status never holds
 * up gc). */
static int pod_probe(Pod *p) {
        if (p->lock || !pod_dir_has_lock_meaning(p->dir)) {
                p->state = pod_state_of(p->dir, p->lock == LOCK_EX);
                return 0;
        }
        int r = flock_retry(p->fd, LOCK_SH | LOCK_NB);
        if (r < 0 && r != -EWOULDBLOCK)
                return r;
        if (r == 0)
                (void) flock(p->fd, LOCK_UN);
        p->state = pod_state_of(p->dir, r == -EWOULDBLOCK);
        return 0;
}

static void warn_stray(PodStore *s, PodDir d, const char *name) {
        warn("%s/pods/%s/%s is not a pod directory, ignoring", s->root, pod_dir_names[d], name);
}

/* Finds the pod by its full UUID, scanning the state directories in the
 * order pods move through them, so a pod that moves meanwhile is found. */
static int pod_find_from(PodStore *s, const char *uuid, PodDir from, Pod **ret) {
        for (PodDir d = from; d < _POD_DIR_MAX; d++) {
                Pod *p = NULL;
                int r = pod_open(s, d, uuid, &p);
                if (r == -ENOENT)
                        continue;
                if (r == -ENOTDIR) {
                        warn_stray(s, d, uuid);
                        continue;
                }
                if (r < 0)
                        return r;
                if ((r = pod_probe(p)) < 0) {
                        pod_free(p);
                        return r;
                }
                *ret = p;
                return 0;
        }
        return -ENOENT;
}

static int pod_find(PodStore *s, const char *uuid, Pod **ret) {
        return pod_find_from(s, uuid, 0, ret);
}

typedef int (*EntryFunc)(PodStore *s, PodDir d, const char *name, void *userdata);

/* Calls f for every pod-like entry of state directory d; stray names are
 * warned about. */
static int pod_dir_foreach(PodStore *s, PodDir d, EntryFunc f, void *userdata) {
        if (s->dir_fds[d] < 0)
                return 0; /* a read-only store without pods */
        _cleanup_closedir_ DIR *dir = opendir_at(s->dir_fds[d], ".");
        if (!dir)
                return -errno;
        struct dirent *de;
        while ((errno = 0, de = readdir(dir))) {
                if (streq(de->d_name, ".") || streq(de->d_name, ".."))
                        continue;
                if (!uuid_is_valid(de->d_name) || (de->d_type != DT_DIR && de->d_type != DT_UNKNOWN)) {
                        warn_stray(s, d, de->d_name);
                        continue;
                }
                int r = f(s, d, de->d_name, userdata);
                if (r < 0)
                        return r;
        }
        return errno > 0 ? -errno : 0;
}

typedef struct Matches {
        char **uuids;
        size_t n;
        const char *prefix;
} Matches;

static int collect_match(PodStore *s, PodDir d, const char *name, void *userdata) {
        Matches *m = userdata;
        if (!startswith(name, m->prefix))
                return 0;
        for (size_t i = 0; i < m->n; i++)
                if (streq(m->uuids[i], name))
                        return 0; /* seen in an earlier state directory: it moved */
        char **l = realloc(m->uuids, (m->n + 1) * sizeof(char *));
        if (!l)
                return -ENOMEM;
        m->uuids = l;
        if (!(m->uuids[m->n] = strdup(name)))
                return -ENOMEM;
        m->n++;
        return 0;
}

int pod_lookup(PodStore *s, const char *ref, Pod **ret, Error **err) {
        if (!uuid_prefix_is_valid(ref))
                return error_set(err, -EINVAL, "\"%s\" is not a pod UUID (lowercase hex digits and dashes, as sdpod list shows them)", ref);

        _cleanup_free_ char *full = NULL;
        if (!uuid_is_valid(ref)) {
                Matches m = { .prefix = ref };
                int r = 0;
                for (PodDir d = 0; d < _POD_DIR_MAX && r >= 0; d++)
                        r = pod_dir_foreach(s, d, collect_match, &m);
                if (r >= 0 && m.n == 1)
                        full = TAKE_PTR(m.uuids[0]);
                if (r >= 0 && m.n > 1)
                        r = error_set(err, -ENOTUNIQ, "pod UUID prefix \"%s\" is ambiguous: it matches %s, %s%s",
                                      ref, m.uuids[0], m.uuids[1], m.n > 2 ? " and more" : "");
                for (size_t i = 0; i < m.n; i++)
                        free(m.uuids[i]);
                free(m.uuids);
                if (r < 0)
                        return r == -ENOTUNIQ ? r : error_sys(err, r, "cannot read %s/pods", s->root);
                if (!full)
                        return error_set(err, -ENOENT, "no pod matches \"%s\"", ref);
                ref = full;
        }

        int r = pod_find(s, ref, ret);
        if (r == -ENOENT)
                return error_set(err, r, "no pod %s", ref);
        if (r < 0)
                return error_sys(err, r, "pod %s", ref);
        return 0;
}

int pod_refresh(PodStore *s, Pod *p, Error **err) {
        if (p->lock)
                return pod_probe(p);
        /* It may have moved (forward) since: look from where it was. */
        for (PodDir d = p->dir; d < _POD_DIR_MAX; d++) {
                struct stat a, b;
                if (fstatat(s->dir_fds[d], p->uuid, &a, AT_SYMLINK_NOFOLLOW) < 0) {
                        if (errno == ENOENT)
                                continue;
                        return error_sys(err, -errno, "pod %s", p->uuid);
                }
                if (fstat(p->fd, &b) < 0)
                        return error_sys(err, -errno, "pod %s", p->uuid);
                if (a.st_dev != b.st_dev || a.st_ino != b.st_ino)
                        continue;
                p->dir = d;
                return pod_probe(p);
        }
        return error_set(err, -ENOENT, "pod %s was removed", p->uuid);
}

typedef struct PodName {
        char uuid[UUID_STRING_MAX];
        PodDir dir;
} PodName;

typedef struct PodNames {
        PodName *names;
        size_t n, allocated;
} PodNames;

static int collect_name(PodStore *s, PodDir d, const char *name, void *userdata) {
        PodNames *c = userdata;
        if (c->n == c->allocated) {
                size_t n = c->allocated ? c->allocated * 2 : 256;
                PodName *l = reallocarray(c->names, n, sizeof(PodName));
                if (!l)
                        return -ENOMEM;
                c->names = l;
                c->allocated = n;
        }
        snprintf(c->names[c->n].uuid, UUID_STRING_MAX, "%s", name);
        c->names[c->n++].dir = d;
        return 0;
}

/* By UUID; a pod seen twice (it moved during the scan) sorts its later
 * directory last, which is the one kept. */
static int pod_name_compare(const void *a, const void *b) {
        const PodName *x = a, *y = b;
        int c = strcmp(x->uuid, y->uuid);
        return c ? c : (int) x->dir - (int) y->dir;
}

int pod_foreach(PodStore *s, PodFunc f, void *userdata, Error **err) {
        /* Names first, pods one at a time after: a store of many pods must
         * not need a file descriptor per pod. */
        PodNames c = {};
        int r = 0;
        for (PodDir d = 0; d < _POD_DIR_MAX && r >= 0; d++)
                if ((r = pod_dir_foreach(s, d, collect_name, &c)) < 0)
                        error_sys(err, r, "cannot read %s/pods/%s", s->root, pod_dir_names[d]);
        if (r >= 0 && c.n > 0)
                qsort(c.names, c.n, sizeof(PodName), pod_name_compare);
        for (size_t i = 0; r >= 0 && i < c.n; i++) {
                if (i + 1 < c.n && streq(c.names[i].uuid, c.names[i + 1].uuid))
                        continue;
                Pod *p = NULL;
                /* Where the scan saw it, or further on if it moved since. */
                int k = pod_find_from(s, c.names[i].uuid, c.names[i].dir, &p);
                if (k == -ENOENT)
                        continue; /* deleted meanwhile */
                if (k < 0) {
                        r = error_sys(err, k, "pod %s", c.names[i].uuid);
                        break;
                }
                r = f(s, p, userdata);
                pod_free(p);
        }
        free(c.names);
        return r;
}

/* The one way a pod changes state: rename(2) between state directories.
 * RENAME_NOREPLACE, because rename onto an existing empty directory would
 * silently replace it. -ENOENT means another process moved or deleted the
 * pod first: a lost race, which callers report as such. Without sync, the
 * caller fsyncs both directories itself (gc does once per pass). */
static int pod_move(PodStore *s, Pod *p, PodDir to, bool sync) {
        if (renameat2(s->dir_fds[p->dir], p->uuid, s->dir_fds[to], p->uuid, RENAME_NOREPLACE) < 0)
                return -errno;
        PodDir from = p->dir;
        p->dir = to;
        p->state = pod_state_of(to, p->lock == LOCK_EX);
        if (sync) {
                int r = fsync_dir_at(s->dir_fds[from], ".");
                if (r < 0 || (r = fsync_dir_at(s->dir_fds[to], ".")) < 0)
                        return r;
        }
        return 0;
}

/* Whether fd is still the directory that dir/uuid names: after waiting for a
 * lock, the pod may have been moved or deleted by the process that held it. */
static bool pod_is_at(PodStore *s, Pod *p) {
        struct stat a, b;
        return fstatat(s->dir_fds[p->dir], p->uuid, &a, AT_SYMLINK_NOFOLLOW) == 0 &&
               fstat(p->fd, &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

/* The pod's record of when it entered Run (the manifest, written once at
 * prepare, records its creation). */
static int pod_record_started(Pod *p, Error **err) {
        char ts[32];
        uint64_t now = now_usec();
        format_timestamp(now, ts);
        size_t l = strlen(ts);
        ts[l] = '\n';
        int r = write_file_atomic_at(p->fd, "started", ts, l + 1, 0644, err);
        /* Readers take the mtime: the file system's clock is coarser than
         * now_usec(), and a start must not read as earlier than the
         * creation time recorded in the manifest. */
        struct timespec t[2] = { { now / USEC_PER_SEC, (now % USEC_PER_SEC) * 1000 },
                                 { now / USEC_PER_SEC, (now % USEC_PER_SEC) * 1000 } };
        if (r >= 0 && utimensat(p->fd, "started", t, AT_SYMLINK_NOFOLLOW) < 0)
                return error_sys(err, -errno, "started");
        return r;
}

int pod_create(PodStore *s, Pod **ret, Error **err) {
        char uuid[UUID_STRING_MAX];
        int r = uuid_v4_generate(uuid);
        if (r < 0)
                return error_sys(err, r, "cannot generate a pod UUID");
        /* Between its mkdir and its lock an embryo is not yet bound to
         * its creator: a shared lock on embryo/ says "creating" for that
         * moment, so that gc can tell an embryo whose creator died (not
         * locked while nobody holds embryo/) without waiting for its age. */
        if ((r = flock_retry(s->dir_fds[POD_DIR_EMBRYO], LOCK_SH)) < 0)
                return error_sys(err, r, "cannot lock %s/pods/embryo", s->root);
        _cleanup_pod_ Pod *p = NULL;
        if (mkdirat(s->dir_fds[POD_DIR_EMBRYO], uuid, 0700) < 0)
                r = error_sys(err, -errno, "cannot create pod directory %s/pods/embryo/%s", s->root, uuid);
        else {
                crash_point(CRASH_PREPARE_EMBRYO);
                if ((r = pod_open(s, POD_DIR_EMBRYO, uuid, &p)) < 0)
                        error_sys(err, r, "pod %s", uuid);
        }
        /* Nobody else knows the UUID yet: the lock cannot be taken. It is
         * taken before the pod appears in prepare/, so that it never shows
         * as prepare-failed there while it is being prepared. */
        if (r >= 0 && (r = flock_retry(p->fd, LOCK_EX | LOCK_NB)) < 0)
                error_sys(err, r, "cannot lock pod %s", uuid);
        (void) flock(s->dir_fds[POD_DIR_EMBRYO], LOCK_UN);
        if (r < 0)
                return r;
        p->lock = LOCK_EX;
        crash_point(CRASH_PREPARE_LOCKED);
        if ((r = pod_move(s, p, POD_DIR_PREPARE, true)) < 0)
                return error_sys(err, r, "cannot move pod %s to prepare/", uuid);
        *ret = TAKE_PTR(p);
        return 0;
}

int pod_finish_prepare(PodStore *s, Pod *p, PodDir target, Error **err) {
        if (p->dir != POD_DIR_PREPARE || p->lock != LOCK_EX || (target != POD_DIR_PREPARED && target != POD_DIR_RUN))
                return error_set(err, -EINVAL, "pod %s: not being prepared by this process", p->uuid);
        int r;
        if (target == POD_DIR_RUN && (r = pod_record_started(p, err)) < 0)
                return error_prefix(err, "pod %s", p->uuid);
        if ((r = pod_move(s, p, target, true)) < 0)
                return error_sys(err, r, "cannot move pod %s to %s/", p->uuid, pod_dir_names[target]);
        if (target == POD_DIR_PREPARED)
                crash_point(CRASH_PREPARE_DONE);
        return 0;
}

static int wait_for_move(PodStore *s, Pod *p, int timeout_ms);

/* Says why a pod that is not (or no longer) in prepared/ cannot be started. */
static int explain_not_startable(PodStore *s, const char *uuid, Error **err) {
        _cleanup_pod_ Pod *p = NULL;
        int r = pod_find(s, uuid, &p);
        if (r == -ENOENT)
                return error_set(err, -ENOENT, "no pod %s", uuid);
        if (r < 0)
                return error_sys(err, r, "pod %s", uuid);
        switch (p->dir) {
        case POD_DIR_RUN:
        case POD_DIR_EXITED_GARBAGE:
                return error_set(err, -EALREADY, "pod %s was already started (it is %s)", uuid, pod_state_names[p->state]);
        case POD_DIR_GARBAGE:
                return error_set(err, -ENOENT, "pod %s was garbage-collected (it is %s)", uuid, pod_state_names[p->state]);
        case POD_DIR_PREPARED: /* still there: locked by another process */
                return error_set(err, -EBUSY, "pod %s is being started or removed by another process", uuid);
        default:
                return error_set(err, -EBUSY, "pod %s is not prepared (it is %s)", uuid, pod_state_names[p->state]);
        }
}

int pod_start_prepared(PodStore *s, const char *uuid, Pod **ret, Error **err) {
        _cleanup_pod_ Pod *p = NULL;
        int r = pod_open(s, POD_DIR_PREPARED, uuid, &p);
        if (r == -ENOENT)
                return explain_not_startable(s, uuid, err);
        if (r < 0)
                return error_sys(err, r, "pod %s", uuid);
        /* The lock first: whoever holds it is the one process allowed to
         * rename the pod into run/, and keeps holding it while it runs. */
        r = flock_retry(p->fd, LOCK_EX | LOCK_NB);
        if (r == -EWOULDBLOCK) {
                /* Another starter (or rm, or gc) holds it for the moment of
                 * its rename: wait for that, then say what happened. */
                (void) wait_for_move(s, p, 5000);
                return explain_not_startable(s, uuid, err);
        }
        if (r < 0)
                return error_sys(err, r, "cannot lock pod %s", uuid);
        p->lock = LOCK_EX;
        /* Between our open and our lock, another process may have started
         * the pod and let it exit: then prepared/UUID is gone. */
        if (!pod_is_at(s, p))
                return explain_not_startable(s, uuid, err);
        crash_point(CRASH_RUN_LOCKED);
        if ((r = pod_record_started(p, err)) < 0)
                return error_prefix(err, "pod %s", uuid);
        crash_point(CRASH_RUN_RECORDED);
        r = pod_move(s, p, POD_DIR_RUN, true);
        if (r == -ENOENT)
                return explain_not_startable(s, uuid, err);
        if (r < 0)
                return error_sys(err, r, "cannot move pod %s to run/", uuid);
        crash_point(CRASH_RUN_RENAMED);
        *ret = TAKE_PTR(p);
        return 0;
}

/* Takes the exclusive lock of a pod that no process is bound to (exited,
 * prepare-failed, gc-marked): such a pod can only be held for moments, by
 * readers (status, a gc probe) or by another deleter, so we wait for them,
 * unlike for a lock that means "running". Returns -EBUSY when the lock is
 * held exclusively. Afterwards the pod may be gone (the other holder
 * deleted it): -ENOENT. */
static int pod_lock_unbound(PodStore *s, Pod *p) {
        int r = flock_retry(p->fd, LOCK_EX | LOCK_NB);
        if (r == -EWOULDBLOCK) {
                /* Held. A shared probe tells readers from an exclusive holder. */
                if ((r = flock_retry(p->fd, LOCK_SH | LOCK_NB)) < 0)
                        return r == -EWOULDBLOCK ? -EBUSY : r;
                r = flock_retry(p->fd, LOCK_EX);
        }
        if (r < 0)
                return r;
        p->lock = LOCK_EX;
        return pod_is_at(s, p) ? 0 : -ENOENT;
}

/* Deletes a pod in garbage/ or exited-garbage/ whose lock we hold: the
 * stage1 gc entrypoint first (it may need the pod's files), then every
 * mount below the pod, then the directory. rm_rf_at() never crosses a mount,
 * so even a mount that appeared meanwhile cannot lead the deletion into
 * host data: it fails with -EBUSY instead. */
static int pod_destroy(PodStore *s, Pod *p, Error **err) {
        _cleanup_free_ char *path = pod_path(s, p);
        if (!path)
                return error_sys(err, -ENOMEM, "pod %s", p->uuid);
        /* Its range of ids is given back once the pod is gone. */
        _cleanup_pod_manifest_ PodManifest *m = NULL;
        PodUserns userns = {};
        if (pod_manifest_read_at(p->fd, "pod", "pod manifest", &m, NULL) < 0 ||
            pod_userns_from_manifest(m, &userns, NULL) < 0)
                userns = (PodUserns) {}; /* the claim is stale, gc releases it */
        Error *gc_err = NULL;
        int r = stage1_run(p->fd, p->uuid, STAGE1_ENTRYPOINT_GC, NULL, &gc_err);
        if (r == -EOPNOTSUPP)
                error_free(TAKE_PTR(gc_err)); /* nothing to run */
        else if (r == -EINTR) {
                /* Killed by a signal: it was interrupted, not refused, and
                 * what it had still to release (a network, the pod's
                 * processes) is found only through the pod's directory.
                 * Deleting it now would leak that for good; the next gc
                 * runs the entrypoint again (it may run more than once). */
                if (err && !*err)
                        *err = TAKE_PTR(gc_err);
                error_free(gc_err);
                return -EINTR;
        } else if (r < 0 && !pod_cgroup_busy(p->uuid)) {
                warn("%s; deleting the pod anyway", gc_err->msg);
                error_free(gc_err);
        }
        /* Whatever the entrypoint said, never release a pod while anything
         * of it runs: its directory, ids and address would go to the next
         * pod. Its cgroups say, which the pod cannot leave (pod-cgroup.h);
         * the reason stays beside it for status and the next gc. */
        if (pod_cgroup_busy(p->uuid)) {
                error_free(gc_err);
                Error *ignored = NULL;
                const char *why = "the pod still has processes in its cgroups after a kill";
                if (write_file_atomic_at(p->fd, POD_GC_BLOCKED_FILE, why, strlen(why), 0644, &ignored) < 0)
                        error_free(ignored);
                return error_set(err, -EBUSY, "pod %s still has processes in its cgroups after a kill: it stays in "
                                 "%s/ with its ids, address and directory until they are gone", p->uuid,
                                 pod_dir_names[p->dir]);
        }
        (void) unlinkat(p->fd, POD_GC_BLOCKED_FILE, 0);
        /* The gc entrypoint removes the pod's empty cgroups; when it could
         * not run (its stage1 image gone, as a removed build's), they
         * would stay for good. Nothing of the pod runs in them (above). */
        if (r < 0) {
                Error *ignored = NULL;
                if (pod_cgroup_remove(p->uuid, &ignored) < 0) {
                        warn("%s", ignored->msg);
                        error_free(ignored);
                }
        }
        crash_point(CRASH_GC_ENTRYPOINT);
        r = umount_below(path, NULL, err);
        if (r < 0)
                return error_prefix(err, "pod %s", p->uuid);
        crash_point(CRASH_GC_UNMOUNTED);
        if ((r = rm_rf_at(s->dir_fds[p->dir], p->uuid)) < 0)
                return error_sys(err, r, "cannot delete %s", path);
        crash_point(CRASH_GC_REMOVED);
        pod_userns_release(s->root, p->uuid, &userns);
        return 0;
}

/* One attempt of pod_remove(); -EAGAIN (without a message) when the pod
 * moved while we waited for its lock. */
static int pod_remove_once(PodStore *s, Pod *p, Error **err) {
        int r = pod_refresh(s, p, err);
        if (r < 0)
                return r;
        PodDir to;
        switch (p->state) {
        case POD_STATE_EMBRYO:
                return error_set(err, -EBUSY, "pod %s is being created", p->uuid);
        case POD_STATE_PREPARING:
                return error_set(err, -EBUSY, "pod %s is being prepared", p->uuid);
        case POD_STATE_RUNNING:
                return error_set(err, -EBUSY, "pod %s is running; it must exit before it can be removed", p->uuid);
        case POD_STATE_EXITED_DELETING:
        case POD_STATE_PREPARE_FAILED_DELETING:
                return error_set(err, -EBUSY, "pod %s is being deleted by another process", p->uuid);
        case POD_STATE_PREPARED:
                /* A lock here means "being started": never wait for it. */
                r = flock_retry(p->fd, LOCK_EX | LOCK_NB);
                if (r == 0) {
                        p->lock = LOCK_EX;
                        r = pod_is_at(s, p) ? 0 : -ENOENT;
                }
                if (r == -EWOULDBLOCK)
                        r = -EBUSY;
                to = POD_DIR_GARBAGE;
                break;
        case POD_STATE_PREPARE_FAILED:
                r = pod_lock_unbound(s, p);
                to = POD_DIR_GARBAGE;
                break;
        case POD_STATE_EXITED:
                r = pod_lock_unbound(s, p);
                to = POD_DIR_EXITED_GARBAGE;
                break;
        default: /* marked for gc already */
                r = pod_lock_unbound(s, p);
                to = p->dir;
                break;
        }
        if (r == -EBUSY)
                return error_set(err, r, "pod %s is busy: another process is starting or deleting it", p->uuid);
        if (r == -ENOENT)
                return -EAGAIN;
        if (r < 0)
                return error_sys(err, r, "cannot lock pod %s", p->uuid);
        if (to != p->dir && (r = pod_move(s, p, to, true)) < 0)
                return r == -ENOENT ? error_set(err, r, "pod %s was moved by another process", p->uuid)
                                    : error_sys(err, r, "cannot move pod %s to %s/", p->uuid, pod_dir_names[to]);
        return pod_destroy(s, p, err);
}

int pod_enter(Pod *p, const char *app, unsigned flags, char *const *cmd, Error **err) {
        if (p->state != POD_STATE_RUNNING)
                return error_set(err, -ESRCH, "pod %s is not running (it is %s)", p->uuid, pod_state_to_string(p->state));
        return stage1_exec_enter(p->fd, p->uuid, app, flags, cmd, err);
}

int pod_remove(PodStore *s, Pod *p, Error **err) {
        /* Its name, read while it is there: its entry in the name index
         * goes with it (pod-ref.h). */
        _cleanup_free_ char *name = NULL;
        PodInfo info;
        if (pod_info_read(p, false, &info) >= 0) {
                name = pod_info_name(&info) ? strdup(pod_info_name(&info)) : NULL;
                pod_info_done(&info);
        }
        for (unsigned attempt = 0;; attempt++) {
                int r = pod_remove_once(s, p, err);
                if (r >= 0 && name) {
                        _cleanup_error_ Error *e = NULL;
                        if (pod_name_forget(s, name, p->uuid, &e) < 0)
                                warn("pod %s: its name %s stays in the name index: %s", p->uuid, name, e->msg);
                }
                if (r != -EAGAIN)
                        return r;
                /* gc's mark held a shared lock across its rename, or
                 * another rm deleted it: follow the pod and try again. */
                (void) flock(p->fd, LOCK_UN);
                p->lock = 0;
                if (attempt == 3)
                        return error_set(err, -EBUSY, "pod %s keeps being moved by other processes", p->uuid);
        }
}

/* ---- garbage collection ---- */

typedef struct GcContext {
        const PodGcOptions *options;
        PodGcStats *stats;
        uint64_t now;
        bool moved[_POD_DIR_MAX];       /* directories to fsync after the pass */
        bool embryos_settled;           /* we hold embryo/: no creator is before its lock */
} GcContext;

static uint64_t pod_ctime_usec(Pod *p) {
        struct statx stx;
        if (statx(p->fd, "", AT_EMPTY_PATH, STATX_CTIME, &stx) < 0)
                return UINT64_MAX; /* unknown: treat as new, never as expired */
        return (uint64_t) stx.stx_ctime.tv_sec * USEC_PER_SEC + stx.stx_ctime.tv_nsec / 1000;
}

static bool pod_is_older_than(Pod *p, uint64_t now, uint64_t age) {
        uint64_t t = pod_ctime_usec(p);
        if (t == UINT64_MAX)
                return false;
        if (t > now)
                return age == 0; /* the clock went back: only "no grace" expires it */
        return now - t >= age;
}

/* gc's moves are synced once per pass: losing one to a crash only means the
 * next gc marks that pod again. */
static void gc_move(PodStore *s, GcContext *c, Pod *p, PodDir to, unsigned *counter) {
        PodDir from = p->dir;
        int r = pod_move(s, p, to, false);
        if (r == -ENOENT)
                return; /* another gc or rm was faster: normal */
        if (r < 0) {
                warn("cannot move pod %s from %s/ to %s/: %s, skipping", p->uuid, pod_dir_names[from], pod_dir_names[to], strerror(-r));
                c->stats->failed++;
                return;
        }
        c->moved[from] = c->moved[to] = true;
        (*counter)++;
        crash_point(CRASH_GC_MARKED);
}

/* Opens a pod gc came across; false when there is nothing to do with it:
 * gone meanwhile, not a pod (warned), or unreadable (warned, counted). */
static bool gc_open(PodStore *s, GcContext *c, PodDir d, const char *name, Pod **ret) {
        int r = pod_open(s, d, name, ret);
        if (r == -ENOTDIR)
                warn_stray(s, d, name);
        else if (r < 0 && r != -ENOENT) {
                warn("cannot open pod %s: %s, skipping", name, strerror(-r));
                c->stats->failed++;
        }
        return r >= 0;
}

static int gc_mark_one(PodStore *s, PodDir d, const char *name, void *userdata) {
        GcContext *c = userdata;
        _cleanup_pod_ Pod *p = NULL;
        if (!gc_open(s, c, d, name, &p))
                return 0;
        switch (d) {
        case POD_DIR_RUN:
        case POD_DIR_PREPARE:
                /* Shared lock: fails while the pod runs or is being prepared;
                 * held across the rename, so status may run meanwhile. */
                if (flock_retry(p->fd, LOCK_SH | LOCK_NB) < 0)
                        return 0;
                p->lock = LOCK_SH;
                if (d == POD_DIR_RUN)
                        gc_move(s, c, p, POD_DIR_EXITED_GARBAGE, &c->stats->marked_exited);
                else
                        gc_move(s, c, p, POD_DIR_GARBAGE, &c->stats->marked_failed);
                return 0;
        case POD_DIR_PREPARED:
                if (c->options->expire_prepared_usec == 0 ||
                    !pod_is_older_than(p, c->now, c->options->expire_prepared_usec))
                        return 0;
                /* Locked: being started right now. */
                if (flock_retry(p->fd, LOCK_EX | LOCK_NB) < 0) {
                        c->stats->busy++;
                        return 0;
                }
                p->lock = LOCK_EX;
                gc_move(s, c, p, POD_DIR_GARBAGE, &c->stats->expired_prepared);
                return 0;
        case POD_DIR_EMBRYO:
                /* Not in the seed: an embryo exists for microseconds unless
                 * its creator died before the rename to prepare/. Locked,
                 * its creator lives. Unlocked, it is dead, unless it is
                 * between its mkdir and its lock: no creator is while gc
                 * holds embryo/ itself (pod_create()); otherwise only the
                 * embryo's age tells. */
                if (flock_retry(p->fd, LOCK_SH | LOCK_NB) < 0)
                        return 0;
                p->lock = LOCK_SH;
                if (c->embryos_settled || pod_is_older_than(p, c->now, c->options->embryo_age_usec))
                        gc_move(s, c, p, POD_DIR_GARBAGE, &c->stats->marked_failed);
                return 0;
        default:
                return 0;
        }
}

static int gc_sweep_one(PodStore *s, PodDir d, const char *name, void *userdata) {
        GcContext *c = userdata;
        _cleanup_pod_ Pod *p = NULL;
        if (!gc_open(s, c, d, name, &p))
                return 0;
        /* The grace period starts at the mark: the rename set the ctime. */
        if (d == POD_DIR_EXITED_GARBAGE && !pod_is_older_than(p, c->now, c->options->grace_usec))
                return 0;
        if (flock_retry(p->fd, LOCK_EX | LOCK_NB) < 0) {
                c->stats->busy++; /* status, another gc or rm: next time */
                return 0;
        }
        p->lock = LOCK_EX;
        if (!pod_is_at(s, p))
                return 0; /* deleted by the process that held the lock before */
        crash_point(CRASH_GC_LOCKED);
        Error *e = NULL;
        if (pod_destroy(s, p, &e) < 0) {
                warn("%s, leaving it for the next gc", e->msg);
                error_free(e);
                c->stats->failed++;
                return 0;
        }
        c->stats->removed++;
        return 0;
}

static bool pod_exists(const char *uuid, void *userdata) {
        _cleanup_pod_ Pod *p = NULL;
        return pod_find(userdata, uuid, &p) != -ENOENT;
}

int pod_gc(PodStore *s, const PodGcOptions *o, PodGcStats *ret, Error **err) {
        PodGcStats stats = {};
        GcContext c = { .options = o, .stats = &stats, .now = now_usec() };
        static const PodDir mark_order[] = { POD_DIR_EMBRYO, POD_DIR_PREPARE, POD_DIR_PREPARED, POD_DIR_RUN };
        int r;
        for (size_t i = 0; i < ELEMENTSOF(mark_order); i++) {
                /* Held for the embryos' pass only: creators wait for it. */
                c.embryos_settled = mark_order[i] == POD_DIR_EMBRYO &&
                        flock_retry(s->dir_fds[POD_DIR_EMBRYO], LOCK_EX | LOCK_NB) == 0;
                r = pod_dir_foreach(s, mark_order[i], gc_mark_one, &c);
                if (c.embryos_settled)
                        (void) flock(s->dir_fds[POD_DIR_EMBRYO], LOCK_UN);
                if (r < 0)
                        return error_sys(err, r, "cannot read %s/pods/%s", s->root, pod_dir_names[mark_order[i]]);
        }
        for (PodDir d = 0; d < _POD_DIR_MAX; d++)
                if (c.moved[d] && (r = fsync_dir_at(s->dir_fds[d], ".")) < 0)
                        return error_sys(err, r, "cannot sync %s/pods/%s", s->root, pod_dir_names[d]);
        if (!o->mark_only) {
                static const PodDir sweep_order[] = { POD_DIR_GARBAGE, POD_DIR_EXITED_GARBAGE };
                for (size_t i = 0; i < ELEMENTSOF(sweep_order); i++)
                        if ((r = pod_dir_foreach(s, sweep_order[i], gc_sweep_one, &c)) < 0)
                                return error_sys(err, r, "cannot read %s/pods/%s", s->root, pod_dir_names[sweep_order[i]]);
                _cleanup_error_ Error *e = NULL;
                if (pod_userns_release_stale(s->root, pod_exists, s, &e) < 0)
                        warn("%s, ignoring", e->msg);
        }
        if (ret)
                *ret = stats;
        return 0;
}

/* ---- waiting ---- */

static volatile sig_atomic_t wait_timed_out;

static void on_wait_timeout(int sig) {
        wait_timed_out = 1;
}

/* Waits until dir/uuid is renamed or removed: lock-less states end so.
 * timeout_ms -1 waits until SIGALRM (pod_wait's timer) interrupts. */
static int wait_for_move(PodStore *s, Pod *p, int timeout_ms) {
        char path[PATH_MAX];
        snprintf(path, sizeof(path), "%s/pods/%s", s->root, pod_dir_names[p->dir]);
        _cleanup_close_ int fd = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
        if (fd < 0)
                return -errno;
        if (inotify_add_watch(fd, path, IN_MOVED_FROM | IN_DELETE | IN_ONLYDIR) < 0)
                return -errno;
        /* The watch exists before this check: a move cannot slip between. */
        if (!pod_is_at(s, p))
                return 0;
        for (;;) {
                struct pollfd pfd = { .fd = fd, .events = POLLIN };
                int n = poll(&pfd, 1, timeout_ms);
                if (n == 0)
                        return -ETIMEDOUT;
                if (n < 0) {
                        if (errno == EINTR && !wait_timed_out)
                                continue;
                        return errno == EINTR ? -ETIMEDOUT : -errno;
                }
                union {
                        struct inotify_event ev;
                        char buf[4096];
                } u;
                ssize_t k = read(fd, &u, sizeof(u));
                if (k < 0) {
                        if (errno == EAGAIN || errno == EINTR)
                                continue;
                        return -errno;
                }
                for (char *i = u.buf; i < u.buf + k;) {
                        struct inotify_event *ev = (struct inotify_event *) i;
                        if (ev->len > 0 && streq(ev->name, p->uuid))
                                return 0;
                        if (ev->mask & IN_Q_OVERFLOW && !pod_is_at(s, p))
                                return 0;
                        i += sizeof(struct inotify_event) + ev->len;
                }
        }
}

/* Blocks in flock(2) until the holder of the exclusive lock lets go. */
static int wait_for_unlock(Pod *p) {
        while (flock(p->fd, LOCK_SH) < 0) {
                if (errno != EINTR)
                        return -errno;
                if (wait_timed_out)
                        return -ETIMEDOUT;
        }
        (void) flock(p->fd, LOCK_UN);
        return 0;
}

int pod_wait(PodStore *s, Pod *p, uint64_t timeout_usec, Error **err) {
        if (p->lock)
                return error_set(err, -EDEADLK, "pod %s: waiting for our own lock", p->uuid);

        /* The timeout interrupts the blocking call with SIGALRM (no
         * SA_RESTART). After the deadline the timer keeps firing every
         * millisecond, so a signal that arrives just before the process
         * blocks is not lost. */
        struct sigaction sa = { .sa_handler = on_wait_timeout }, old_sa;
        timer_t timer;
        bool have_timer = false;
        wait_timed_out = 0;
        if (timeout_usec > 0) {
                struct sigevent sev = { .sigev_notify = SIGEV_SIGNAL, .sigev_signo = SIGALRM };
                struct itimerspec its = {
                        .it_value = { .tv_sec = (time_t) (timeout_usec / USEC_PER_SEC),
                                      .tv_nsec = (long) (timeout_usec % USEC_PER_SEC) * 1000 },
                        .it_interval = { .tv_nsec = 1000000 },
                };
                if (sigaction(SIGALRM, &sa, &old_sa) < 0)
                        return error_sys(err, -errno, "cannot wait for pod %s", p->uuid);
                if (timer_create(CLOCK_MONOTONIC, &sev, &timer) < 0 || timer_settime(timer, 0, &its, NULL) < 0) {
                        int r = -errno;
                        sigaction(SIGALRM, &old_sa, NULL);
                        return error_sys(err, r, "cannot wait for pod %s", p->uuid);
                }
                have_timer = true;
        }

        int r;
        for (;;) {
                if ((r = pod_refresh(s, p, err)) < 0)
                        break;
                switch (p->state) {
                case POD_STATE_EMBRYO:
                case POD_STATE_PREPARED:
                        r = wait_for_move(s, p, -1);
                        break;
                case POD_STATE_PREPARING:
                case POD_STATE_RUNNING:
                case POD_STATE_EXITED_DELETING:
                case POD_STATE_PREPARE_FAILED_DELETING:
                        r = wait_for_unlock(p);
                        break;
                default:
                        r = 1; /* nothing holds it: done */
                        break;
                }
                if (r != 0)
                        break;
        }
        if (r == -ETIMEDOUT)
                error_set(err, r, "timed out waiting for pod %s (it is %s)", p->uuid, pod_state_names[p->state]);
        else if (r < 0 && r != -ENOENT)
                error_sys(err, r, "cannot wait for pod %s", p->uuid);

        if (have_timer) {
                timer_delete(timer);
                sigaction(SIGALRM, &old_sa, NULL);
        }
        return r < 0 ? r : 0;
}
