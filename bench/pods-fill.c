/* SPDX-License-Identifier: Apache-2.0 */
/* sdpod-bench-fill DATA_DIR N_EXITED N_PREPARED [IMAGE_ID]
 *
 * Fills a data directory with synthetic pods for bench/pods-scale, made
 * through lib/ the way sdpod prepare and sdpod run make real ones:
 * pod_create(), a manifest written with pod_manifest_write_at(), the stage1
 * skeleton, each app's overlay directories and mount point, then
 * pod_finish_prepare() to prepared/ or to run/. An exited pod is a pod moved
 * to run/ whose lock is then dropped, as when its systemd-nspawn ends; its
 * apps' exit statuses are recorded where the reaper writes them.
 *
 * What is fake: the images. Apps name an image id that need not exist in the
 * store (IMAGE_ID, default a fixed "sha256:" + 64 hex digits), so the apps'
 * directories are made by pod_create_app_dirs() alone, without
 * pod_render_app(), which would render the image's tree. Every fsync lib/ does is done.
 *
 * Progress goes to stderr every 1,000 pods; the last line on stdout is
 * "pods N exited M prepared: S seconds" with a breakdown by step. */

#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "basic/fs.h"
#include "basic/time-util.h"
#include "manifest/pod-manifest.h"
#include "pod/pod-info.h"
#include "pod/pod-prepare.h"
#include "pod/pod.h"
#include "pod/stage1.h"

/* Two images, as if a web server and a database had been imported. */
#define DEFAULT_IMAGE_WEB "sha256:5d0da3dc976460b72c77d94c8a1ad043720b0416bfc16c52c45d4847e53fadb6"
#define DEFAULT_IMAGE_DB "sha256:a1f4b1d2e3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d5e6f708192a3b4c5d6e"

enum { STEP_CREATE, STEP_MANIFEST, STEP_RENDER, STEP_FINISH, STEP_EXIT, _STEP_MAX };
static const char *const step_names[_STEP_MAX] = {
        [STEP_CREATE] = "pod_create",
        [STEP_MANIFEST] = "manifest",
        [STEP_RENDER] = "render",
        [STEP_FINISH] = "finish_prepare",
        [STEP_EXIT] = "exit_statuses",
};
static uint64_t step_usec[_STEP_MAX];

static uint64_t mono_usec(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * USEC_PER_SEC + (uint64_t) ts.tv_nsec / 1000;
}

/* Adds the time since *t to step s and restarts *t. */
static void step_done(int s, uint64_t *t) {
        uint64_t now = mono_usec();
        step_usec[s] += now - *t;
        *t = now;
}

static int parse_count(const char *s, unsigned long *ret) {
        char *end;
        errno = 0;
        unsigned long v = strtoul(s, &end, 10);
        if (errno || end == s || *end || s[0] == '-' || v > 10000000)
                return -EINVAL;
        *ret = v;
        return 0;
}

static bool image_id_is_valid(const char *id) {
        const char *hex = startswith(id, "sha256:");
        if (!hex || strlen(hex) != 64)
                return false;
        return strspn(hex, "0123456789abcdef") == 64;
}

/* The manifest of pod number i, as sdpod prepare builds it: a creation
 * time, a name for every third pod, one app or (every fourth pod) two. */
static int build_manifest(unsigned long i, const char *image_web, const char *image_db, PodManifest **ret, Error **err) {
        _cleanup_pod_manifest_ PodManifest *m = NULL;
        int r = pod_manifest_new(&m);
        if (r < 0)
                return error_sys(err, r, "pod manifest");
        if (i % 3 == 0) {
                char name[32];
                snprintf(name, sizeof(name), "bench-%lu", i);
                if ((r = pod_manifest_set_annotation(m, POD_ANNOTATION_NAME, name, err)) < 0)
                        return r;
        }
        char created[32];
        format_timestamp(now_usec(), created);
        if ((r = pod_manifest_set_annotation(m, POD_ANNOTATION_CREATED, created, err)) < 0)
                return r;

        char *web_exec[] = { "/usr/sbin/httpd", "-f", "-p", "8080", "-h", "/srv/www", NULL };
        char *web_env[] = { "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "LANG=C.UTF-8",
                            "HTTPD_LOG_LEVEL=info", NULL };
        PodAppSpec web = {
                .name = "web",
                .image_name = "localhost/bench-web:latest",
                .image_id = image_web,
                .exec = web_exec,
                .user = "www-data",
                .group = "www-data",
                .working_directory = "/srv/www",
                .environment = web_env,
        };
        if ((r = pod_manifest_add_app(m, &web, err)) < 0)
                return r;
        if (i % 4 == 0) {
                char *db_exec[] = { "/usr/bin/redis-server", "--port", "6379", "--appendonly", "no", NULL };
                char *db_env[] = { "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", NULL };
                PodAppSpec db = {
                        .name = "db",
                        .image_name = "localhost/bench-db:latest",
                        .image_id = image_db,
                        .exec = db_exec,
                        .user = "999",
                        .group = "999",
                        .working_directory = "/data",
                        .environment = db_env,
                };
                if ((r = pod_manifest_add_app(m, &db, err)) < 0)
                        return r;
        }
        *ret = TAKE_PTR(m);
        return 0;
}

/* The reaper's record of an app's end: "STATUS\n" in the pod's
 * stage1/rootfs/sdpod/status/NAME (not synced: neither is the reaper's). */
static int record_exit(int pod_fd, const char *app, int status, Error **err) {
        _cleanup_close_ int dir = mkdir_p_in_root(pod_fd, POD_APP_STATUS_DIR, 0755, false);
        if (dir < 0)
                return error_sys(err, dir, "cannot create %s", POD_APP_STATUS_DIR);
        _cleanup_close_ int fd = openat(dir, app, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
        if (fd < 0)
                return error_sys(err, -errno, "cannot create %s/%s", POD_APP_STATUS_DIR, app);
        char buf[16];
        int n = snprintf(buf, sizeof(buf), "%d\n", status);
        int r = write_all(fd, buf, (size_t) n);
        return r < 0 ? error_sys(err, r, "cannot write %s/%s", POD_APP_STATUS_DIR, app) : 0;
}

static int make_pod(PodStore *ps, unsigned long i, bool exited, const char *image_web, const char *image_db, Error **err) {
        uint64_t t = mono_usec();
        _cleanup_pod_ Pod *p = NULL;
        int r = pod_create(ps, &p, err);
        if (r < 0)
                return r;
        step_done(STEP_CREATE, &t);

        _cleanup_pod_manifest_ PodManifest *m = NULL;
        if ((r = build_manifest(i, image_web, image_db, &m, err)) < 0 ||
            (r = pod_manifest_write_at(p->fd, "pod", m, err)) < 0)
                return error_prefix(err, "pod %s", p->uuid);
        step_done(STEP_MANIFEST, &t);

        if ((r = stage1_render(p->fd, NULL, 0, err)) < 0)
                return error_prefix(err, "pod %s", p->uuid);
        for (size_t k = 0; k < m->n_apps; k++)
                if ((r = pod_create_app_dirs(p->fd, m->apps[k].name, 0, err)) < 0)
                        return error_prefix(err, "pod %s", p->uuid);
        step_done(STEP_RENDER, &t);

        if ((r = pod_finish_prepare(ps, p, exited ? POD_DIR_RUN : POD_DIR_PREPARED, err)) < 0)
                return r;
        step_done(STEP_FINISH, &t);

        if (exited) {
                /* Most apps end cleanly; some were stopped (SIGTERM: 143). */
                for (size_t k = 0; k < m->n_apps; k++)
                        if ((r = record_exit(p->fd, m->apps[k].name, i % 10 == 0 ? 143 : 0, err)) < 0)
                                return error_prefix(err, "pod %s", p->uuid);
                step_done(STEP_EXIT, &t);
        }
        /* pod_free() closes the directory: the lock goes, as when the pod's
         * process ends. Exited (run/, unlocked) or prepared. */
        return 0;
}

int main(int argc, char **argv) {
        unsigned long n_exited, n_prepared;
        if (argc < 4 || argc > 5 || parse_count(argv[2], &n_exited) < 0 || parse_count(argv[3], &n_prepared) < 0) {
                fprintf(stderr, "Usage: %s DATA_DIR N_EXITED N_PREPARED [IMAGE_ID]\n", argv[0]);
                return 2;
        }
        const char *image_web = DEFAULT_IMAGE_WEB, *image_db = DEFAULT_IMAGE_DB;
        if (argc == 5) {
                if (!image_id_is_valid(argv[4])) {
                        fprintf(stderr, "%s: \"%s\" is not an image id (sha256: and 64 lowercase hex digits)\n", argv[0], argv[4]);
                        return 2;
                }
                image_web = image_db = argv[4];
        }

        Error *err = NULL;
        _cleanup_pod_store_ PodStore *ps = NULL;
        if (pod_store_open(argv[1], true, false, &ps, &err) < 0) {
                fprintf(stderr, "%s: %s\n", argv[0], err->msg);
                error_free(err);
                return 1;
        }

        /* Interleaved (one prepared pod after every n_exited/n_prepared
         * exited ones), so neither kind sits at one end of the directories. */
        unsigned long total = n_exited + n_prepared, made_exited = 0, made_prepared = 0;
        uint64_t start = mono_usec();
        for (unsigned long i = 0; i < total; i++) {
                bool exited = made_prepared >= n_prepared ||
                              (made_exited < n_exited && made_exited * n_prepared <= made_prepared * n_exited);
                if (make_pod(ps, i, exited, image_web, image_db, &err) < 0) {
                        fprintf(stderr, "%s: %s\n", argv[0], err->msg);
                        error_free(err);
                        return 1;
                }
                if (exited)
                        made_exited++;
                else
                        made_prepared++;
                if ((i + 1) % 1000 == 0 && i + 1 < total)
                        fprintf(stderr, "%s: %lu/%lu pods, %.1f s\n", program_invocation_short_name, i + 1, total,
                                (double) (mono_usec() - start) / 1e6);
        }
        uint64_t elapsed = mono_usec() - start;

        printf("pods %lu exited %lu prepared: %.2f s", made_exited, made_prepared, (double) elapsed / 1e6);
        if (total > 0) {
                printf(" (%.2f ms/pod;", (double) elapsed / 1e3 / (double) total);
                for (int s = 0; s < _STEP_MAX; s++)
                        printf(" %s %.2f", step_names[s], (double) step_usec[s] / 1e3 / (double) total);
                printf(" ms/pod)");
        }
        printf("\n");
        return fflush(stdout) == 0 ? 0 : 1;
}
