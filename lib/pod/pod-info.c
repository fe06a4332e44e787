/* SPDX-License-Identifier: Apache-2.0 */
#include <fcntl.h>
#include <limits.h>
#include <sys/stat.h>

#include "basic/fs.h"
#include "basic/strv.h"
#include "basic/time-util.h"
#include "basic/warn.h"
#include "manifest/app-lifecycle.h"
#include "pod/pod-info.h"

void pod_info_done(PodInfo *info) {
        pod_manifest_free(info->manifest);
        free(info->manifest_error);
        for (size_t i = 0; i < info->n_apps; i++)
                free(info->apps[i].name);
        free(info->apps);
        *info = (PodInfo) {};
}

const char *pod_info_name(const PodInfo *info) {
        return info->manifest ? pod_manifest_get_annotation(info->manifest, POD_ANNOTATION_NAME) : NULL;
}

static uint64_t timespec_to_usec(const struct timespec *ts) {
        return (uint64_t) ts->tv_sec * USEC_PER_SEC + (uint64_t) ts->tv_nsec / 1000;
}

/* A small record the pod writes: a regular file (never followed through a
 * symlink, never a FIFO that would block), read to at most
 * POD_APP_RECORD_SIZE bytes; its modification time in ret_usec. An empty
 * one is reserved and holds nothing yet: -ENOENT. The writer rewrites it
 * in place, so a read may race a write: it is read until two reads agree
 * (a few times at most). */
static int read_record_at(int dirfd, const char *name, char buf[static POD_APP_RECORD_SIZE + 1], uint64_t *ret_usec) {
        _cleanup_close_ int fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
        if (fd < 0)
                return -errno;
        struct stat st;
        if (fstat(fd, &st) < 0)
                return -errno;
        if (!S_ISREG(st.st_mode))
                return -EBADMSG;
        char again[POD_APP_RECORD_SIZE];
        ssize_t n = -1, m = -1;
        for (int i = 0; i < 4 && (n < 0 || n != m || memcmp(buf, again, (size_t) n) != 0); i++) {
                m = n;
                memcpy(again, buf, n > 0 ? (size_t) n : 0);
                n = pread(fd, buf, POD_APP_RECORD_SIZE, 0);
                if (n < 0)
                        return -errno;
        }
        buf[n] = 0;
        if (n == 0)
                return -ENOENT; /* reserved, nothing recorded yet */
        if (fstat(fd, &st) < 0)
                return -errno;
        *ret_usec = timespec_to_usec(&st.st_mtim);
        return 0;
}

int pod_app_records_reserve_at(int status_fd, const PodManifest *m, const PodApp *app, Error **err) {
        _cleanup_(app_lifecycle_done) AppLifecycle l = {};
        int r = app_lifecycle_of(m, app, &l, err);
        if (r < 0)
                return r;
        /* The exit status always; the others for apps that have them. */
        const char *const suffixes[] = {
                "",
                l.restart != APP_RESTART_NO || (l.health_cmd && l.health_on_failure == APP_HEALTH_RESTART)
                        ? POD_APP_RESTARTS_SUFFIX
                        : NULL,
                pod_app_get_annotation(app, APP_ANNOTATION_HEALTH_CMD) ? POD_APP_HEALTH_SUFFIX : NULL,
        };
        struct stat dir;
        if (fstat(status_fd, &dir) < 0)
                return error_sys(err, -errno, POD_APP_STATUS_DIR);
        for (size_t i = 0; i < ELEMENTSOF(suffixes); i++) {
                if (!suffixes[i])
                        continue;
                char file[128];
                snprintf(file, sizeof(file), "%s%s", app->name, suffixes[i]);
                /* Never opens what is there: O_EXCL does not follow a
                 * symlink, and what the pod made is the pod's business. */
                _cleanup_close_ int fd = openat(status_fd, file, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
                if (fd < 0 && errno == EEXIST)
                        continue;
                r = fd < 0 ? -errno : 0;
                /* Empty (nothing recorded), its block allocated beyond the
                 * end: the writes that fill it take no new block. A file
                 * system without fallocate() gets an empty file, written
                 * as any other (which needs space). */
                if (r == 0 && fallocate(fd, FALLOC_FL_KEEP_SIZE, 0, POD_APP_RECORD_SIZE) < 0 &&
                    errno != EOPNOTSUPP)
                        r = -errno;
                if (r == 0 && fchown(fd, dir.st_uid, dir.st_gid) < 0)
                        r = -errno;
                if (r < 0) {
                        if (fd >= 0)
                                (void) unlinkat(status_fd, file, 0);
                        return error_sys(err, r, "cannot reserve " POD_APP_STATUS_DIR "/%s", file);
                }
        }
        return 0;
}

int pod_app_record_write_at(int status_fd, const char *file, const char *text, Error **err) {
        size_t n = strlen(text);
        if (n == 0 || n > POD_APP_RECORD_SIZE)
                return error_set(err, -EINVAL, POD_APP_STATUS_DIR "/%s: a record of %zu bytes", file, n);
        _cleanup_close_ int fd = openat(status_fd, file, O_WRONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
        struct stat st;
        if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size > POD_APP_RECORD_SIZE)
                /* Not reserved (the pod started before reservations, or
                 * the record was removed): a new file, which needs space. */
                return write_file_atomic_at(status_fd, file, text, n, 0644, err);
        /* In place, in the block it was given: a full file system does not
         * refuse it (not so on one that copies on write, sdpod-security(7)).
         * Shortened first, so that a reader sees the old record, cut after
         * its digits, or the new one; never truncated to where its block
         * would go (a size of 0). */
        if ((off_t) n < st.st_size && ftruncate(fd, (off_t) n) < 0)
                return error_sys(err, -errno, POD_APP_STATUS_DIR "/%s: writing", file);
        ssize_t w = pwrite(fd, text, n, 0);
        if (w != (ssize_t) n)
                return error_sys(err, w < 0 ? -errno : -EIO, POD_APP_STATUS_DIR "/%s: writing", file);
        if (fdatasync(fd) < 0)
                return error_sys(err, -errno, POD_APP_STATUS_DIR "/%s: writing", file);
        return 0;
}

void pod_app_exit_format(char buf[static POD_APP_RECORD_SIZE + 1], int exit_status) {
        snprintf(buf, POD_APP_RECORD_SIZE + 1, "%d\n", exit_status);
}

void pod_app_restarts_format(char buf[static POD_APP_RECORD_SIZE + 1], unsigned restarts, int exit_status) {
        snprintf(buf, POD_APP_RECORD_SIZE + 1, "%u %d\n", restarts, exit_status);
}

void pod_app_health_format(char buf[static POD_APP_RECORD_SIZE + 1], const PodAppHealthRecord *h) {
        snprintf(buf, POD_APP_RECORD_SIZE + 1, "%s %u %llu\n", pod_app_health_to_string(h->state), h->failures,
                 (unsigned long long) h->run_usec);
}

/* A decimal number from min to max (digits only: no sign, no blanks, as
 * the writer writes it), then sep (or the end). */
static const char *parse_number_u64(const char *s, uint64_t min, uint64_t max, char sep, uint64_t *ret) {
        if (*s < '0' || *s > '9')
                return NULL;
        char *end;
        errno = 0;
        unsigned long long v = strtoull(s, &end, 10);
        if (errno || (*end && *end != sep) || v < min || v > max)
                return NULL;
        *ret = v;
        return *end ? end + 1 : end;
}

static const char *parse_number(const char *s, long min, long max, char sep, long *ret) {
        uint64_t v;
        const char *end = parse_number_u64(s, (uint64_t) min, (uint64_t) max, sep, &v);
        if (end)
                *ret = (long) v;
        return end;
}

int pod_app_exit_read_at(int status_fd, const char *name, PodAppExit *ret) {
        char buf[POD_APP_RECORD_SIZE + 1];
        uint64_t usec;
        long v;
        int r = read_record_at(status_fd, name, buf, &usec);
        if (r < 0)
                return r;
        const char *end = parse_number(buf, 0, 255, '\n', &v);
        if (!end || *end)
                return -EBADMSG;
        ret->exited = true;
        ret->exit_status = (int) v;
        ret->exited_usec = usec;
        return 0;
}

int pod_app_restarts_read_at(int status_fd, const char *name, PodAppExit *ret) {
        char buf[POD_APP_RECORD_SIZE + 1], file[128];
        uint64_t usec;
        long n, v;
        snprintf(file, sizeof(file), "%s" POD_APP_RESTARTS_SUFFIX, name);
        int r = read_record_at(status_fd, file, buf, &usec);
        if (r < 0)
                return r;
        const char *p = parse_number(buf, 1, INT32_MAX, ' ', &n);
        const char *end = p ? parse_number(p, 0, 255, '\n', &v) : NULL;
        if (!end || *end)
                return -EBADMSG;
        ret->restarts = (unsigned) n;
        ret->restart_exit_status = (int) v;
        return 0;
}

static const char *const health_names[] = { "starting", "healthy", "unhealthy" };

const char *pod_app_health_to_string(PodAppHealth h) {
        return (unsigned) h < ELEMENTSOF(health_names) ? health_names[h] : NULL;
}

int pod_app_health_read_at(int status_fd, const char *name, PodAppHealthRecord *ret) {
        char buf[POD_APP_RECORD_SIZE + 1], file[128];
        uint64_t usec;
        snprintf(file, sizeof(file), "%s" POD_APP_HEALTH_SUFFIX, name);
        int r = read_record_at(status_fd, file, buf, &usec);
        if (r < 0)
                return r;
        /* "STATE FAILURES RUN_USEC\n", each number in its type's range. */
        size_t n = strcspn(buf, " ");
        uint64_t failures, run;
        const char *p = buf[n] == ' ' ? parse_number_u64(buf + n + 1, 0, UINT_MAX, ' ', &failures) : NULL;
        const char *end = p ? parse_number_u64(p, 0, UINT64_MAX, '\n', &run) : NULL;
        if (!end || *end)
                return -EBADMSG;
        for (size_t i = 0; i < ELEMENTSOF(health_names); i++)
                if (strlen(health_names[i]) == n && strncmp(buf, health_names[i], n) == 0) {
                        *ret = (PodAppHealthRecord) { .state = (PodAppHealth) i, .failures = (unsigned) failures, .run_usec = run };
                        return 0;
                }
        return -EBADMSG;
}

const char *pod_app_health_shown(int status_fd, const char *name, bool pod_running, const PodAppExit *e) {
        PodAppHealthRecord h;
        bool have = pod_app_health_read_at(status_fd, name, &h) >= 0;
        /* The last check's word is of a run that has ended: an exit
         * recorded after that run began, or a pod that runs no more. A
         * restart begins a new run (pod-helper restarting). */
        if (!pod_running || (e && e->exited && (!have || e->exited_usec >= h.run_usec)))
                return POD_APP_HEALTH_EXITED;
        return pod_app_health_to_string(have ? h.state : POD_APP_HEALTH_STARTING);
}

/* Statuses are only read for apps of the manifest: the names come from a
 * validated manifest, never from the directory. */
static int read_app_exits(Pod *p, PodInfo *info) {
        if (!info->manifest || info->manifest->n_apps == 0)
                return 0;
        _cleanup_close_ int fd = open_beneath_no_symlinks(p->fd, POD_APP_STATUS_DIR, O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
        if (fd < 0)
                return 0; /* not started, or no app has stopped yet */
        info->apps = calloc(info->manifest->n_apps, sizeof(PodAppExit));
        if (!info->apps)
                return -ENOMEM;
        for (size_t i = 0; i < info->manifest->n_apps; i++) {
                const char *name = info->manifest->apps[i].name;
                PodAppExit e = {};
                int r = pod_app_exit_read_at(fd, name, &e);
                if (r < 0 && r != -ENOENT)
                        warn("pod %s: %s/%s: %s, ignoring", p->uuid, POD_APP_STATUS_DIR, name,
                             r == -EBADMSG ? "not an exit status" : strerror(-r));
                r = pod_app_restarts_read_at(fd, name, &e);
                if (r < 0 && r != -ENOENT)
                        warn("pod %s: %s/%s" POD_APP_RESTARTS_SUFFIX ": %s, ignoring", p->uuid, POD_APP_STATUS_DIR, name,
                             r == -EBADMSG ? "not a record of restarts" : strerror(-r));
                /* An app with a health check is starting until a check has
                 * said otherwise. */
                if (pod_app_get_annotation(&info->manifest->apps[i], APP_ANNOTATION_HEALTH_CMD))
                        e.health = pod_app_health_shown(fd, name, p->state == POD_STATE_RUNNING, &e);
                if (!e.exited && e.restarts == 0 && !e.health)
                        continue;
                if (!(e.name = strdup(name)))
                        return -ENOMEM;
                info->apps[info->n_apps++] = e;
                if (e.exited_usec > info->exited_usec)
                        info->exited_usec = e.exited_usec;
        }
        return 0;
}

/* The file's modification time: stat is cheaper than reading and parsing
 * its content, which says the same (list reads this for every pod). */
static int read_timestamp_file(int dirfd, const char *name, uint64_t *ret) {
        struct stat st;
        if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(st.st_mode))
                return 0; /* absent: not started */
        *ret = timespec_to_usec(&st.st_mtim);
        return 0;
}

int pod_info_read(Pod *p, bool with_app_exits, PodInfo *ret) {
        PodInfo info = {};
        Error *e = NULL;
        int r = pod_manifest_read_at(p->fd, "pod", "pod manifest", &info.manifest, &e);
        if (r < 0 && r != -ENOENT && !(info.manifest_error = strdup(e->msg)))
                r = -ENOMEM;
        error_free(e);

        const char *created = info.manifest ? pod_manifest_get_annotation(info.manifest, POD_ANNOTATION_CREATED) : NULL;
        if (created && parse_timestamp(created, &info.created_usec) < 0)
                info.created_usec = 0;
        if (r != -ENOMEM)
                r = read_timestamp_file(p->fd, "started", &info.started_usec);
        if (r >= 0 && with_app_exits)
                r = read_app_exits(p, &info);
        if (r < 0) {
                pod_info_done(&info);
                return -ENOMEM;
        }
        *ret = info;
        return 0;
}

typedef struct ImageIds {
        char **ids;
        Error **err;
} ImageIds;

static int collect_image_ids(PodStore *s, Pod *p, void *userdata) {
        ImageIds *c = userdata;
        _cleanup_pod_manifest_ PodManifest *m = NULL;
        Error *e = NULL;
        int r = pod_manifest_read_at(p->fd, "pod", "pod manifest", &m, &e);
        if (r < 0 && r != -ENOENT)
                /* Its apps are unknown: keeping everything is the only
                 * safe answer. */
                r = error_set(c->err, r, "pod %s: %s; cannot tell which image trees it uses", p->uuid, e->msg);
        error_free(e);
        if (r == -ENOENT)
                return 0; /* no manifest yet: prepare holds the image store lock */
        for (size_t j = 0; r >= 0 && j < m->n_apps; j++)
                if (!strv_contains(c->ids, m->apps[j].image_id) && strv_push(&c->ids, m->apps[j].image_id) < 0)
                        r = error_sys(c->err, -ENOMEM, "pods");
        return r;
}

int pod_store_image_ids(PodStore *s, char ***ret, Error **err) {
        ImageIds c = { .err = err };
        int r = pod_foreach(s, collect_image_ids, &c, err);
        if (r < 0) {
                strv_free(c.ids);
                return r;
        }
        *ret = c.ids;
        return 0;
}
