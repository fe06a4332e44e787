/* SPDX-License-Identifier: Apache-2.0 */
#include <fcntl.h>
#include <pthread.h>
#include <time.h>
#include <sys/stat.h>

#include "basic/digest.h"
#include "basic/fs.h"
#include "image/extract.h"
#include "image/tree.h"

static int open_layer_blob(ImageStore *s, int staged_blobs_fd, const char *digest) {
        if (staged_blobs_fd >= 0) {
                int fd = openat(staged_blobs_fd, digest_hex(digest), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
                if (fd >= 0 || errno != ENOENT)
                        return fd < 0 ? -errno : fd;
        }
        return image_store_open_blob(s, digest);
}

typedef struct LayerProgressState {
        const RenderProgress *progress;
        int fd;                 /* the layer blob: its offset is how far libarchive read */
        size_t layer, n_layers;
        uint64_t total;
} LayerProgressState;

static int layer_progress(void *userdata) {
        LayerProgressState *p = userdata;
        off_t pos = lseek(p->fd, 0, SEEK_CUR);
        return p->progress->fn(p->progress->userdata, p->layer, p->n_layers, pos > 0 ? (uint64_t) pos : 0, p->total);
}

static int render_layers(ImageStore *s, const Image *image, int staged_blobs_fd, LayerBudget *budget,
                         const RenderProgress *progress, int rootfd, Error **err) {
        LayerProgressState ps = { .progress = progress, .n_layers = image->n_layers };
        LayerOptions opts = {
                .subdir = image->format == IMAGE_FORMAT_ACI ? "rootfs" : NULL,
                .whiteouts = image->format != IMAGE_FORMAT_ACI,
                .budget = budget,
                .progress = progress && progress->fn ? layer_progress : NULL,
                .userdata = &ps,
        };
        for (size_t i = 0; i < image->n_layers; i++) {
                const char *digest = image->layers[i].digest;
                _cleanup_close_ int fd = open_layer_blob(s, staged_blobs_fd, digest);
                if (fd < 0)
                        return error_sys(err, fd, "layer %s", digest);
                struct stat st;
                ps.fd = fd;
                ps.layer = i + 1;
                ps.total = fstat(fd, &st) >= 0 ? (uint64_t) st.st_size : 0;
                char what[DIGEST_STRING_SIZE + 16];
                snprintf(what, sizeof(what), "layer %s", digest);
                int r = layer_apply(rootfd, fd, &opts, what, err);
                if (r < 0)
                        return r;
        }
        /* Durable before it becomes visible: pods will trust this tree. */
        if (syncfs(rootfd) < 0)
                return error_sys(err, -errno, "syncing the rendered tree");
        /* The last chance to stop: once in place, the tree is the store's. */
        int r = progress && progress->fn ? progress->fn(progress->userdata, image->n_layers, image->n_layers, ps.total, ps.total) : 0;
        return r == -ECANCELED ? error_set(err, r, "interrupted") : r < 0 ? error_sys(err, r, "rendering") : 0;
}

/* Nothing of a tree is written back until the syncfs before it becomes
 * visible (the kernel's flusher waits 30 s, or for gigabytes): then that
 * syncfs writes all of it while nothing else runs. This thread syncs the
 * tree's file system while the layers are unpacked instead, so the disk
 * works alongside; the writes are batched as the flusher batches them,
 * which a sync_file_range() per file would not be (each a request of its
 * own, in a VM an exit to the host).
 *
 * But syncfs writes back everyone's dirty data on that file system, not
 * only ours: on a busy machine each call waits for the others' writes, and
 * makes them wait. So it syncs only when this process has dirtied another
 * TREE_SYNC_BYTES since the last one (its write_bytes in /proc/self/io,
 * counted as pages are dirtied), and the durability a pull pays for is in
 * proportion to what it wrote: a 70 MB image about 5 calls, not one every
 * 50 ms (194 for one pull under load, issue 26). */
struct TreeSyncer {
        pthread_t thread;
        pthread_mutex_t lock;
        pthread_cond_t cond;
        bool stop;
        int fd;                 /* our own of the tree */
        int io_fd;              /* /proc/self/io, or -1: then every tick */
        uint64_t synced_at;     /* write_bytes at the last syncfs */
};

#define TREE_SYNC_INTERVAL_NS (50 * 1000 * 1000)
#define TREE_SYNC_BYTES (16ULL << 20)

/* This process's write_bytes; UINT64_MAX when it cannot be read (no task
 * I/O accounting in the kernel): then the syncer syncs at every tick. */
static uint64_t dirtied_bytes(int io_fd) {
        char buf[512];
        ssize_t n = io_fd >= 0 ? pread(io_fd, buf, sizeof(buf) - 1, 0) : -1;
        if (n <= 0)
                return UINT64_MAX;
        buf[n] = 0;
        const char *p = strstr(buf, "\nwrite_bytes: ");
        return p ? strtoull(p + strlen("\nwrite_bytes: "), NULL, 10) : UINT64_MAX;
}

static void *syncer_main(void *userdata) {
        TreeSyncer *y = userdata;
        pthread_mutex_lock(&y->lock);
        while (!y->stop) {
                pthread_mutex_unlock(&y->lock);
                uint64_t now = dirtied_bytes(y->io_fd);
                if (now == UINT64_MAX || now - y->synced_at >= TREE_SYNC_BYTES) {
                        (void) syncfs(y->fd); /* only a head start: the commit's syncfs checks */
                        y->synced_at = now;
                }
                pthread_mutex_lock(&y->lock);
                struct timespec ts;
                clock_gettime(CLOCK_MONOTONIC, &ts);
                ts.tv_nsec += TREE_SYNC_INTERVAL_NS;
                if (ts.tv_nsec >= 1000000000) {
                        ts.tv_sec++;
                        ts.tv_nsec -= 1000000000;
                }
                if (!y->stop)
                        (void) pthread_cond_timedwait(&y->cond, &y->lock, &ts);
        }
        pthread_mutex_unlock(&y->lock);
        return NULL;
}

static TreeSyncer *syncer_start(int rootfd) {
        TreeSyncer *y = calloc(1, sizeof(TreeSyncer));
        if (!y)
                return NULL;
        y->fd = fcntl(rootfd, F_DUPFD_CLOEXEC, 3);
        y->io_fd = open("/proc/self/io", O_RDONLY | O_CLOEXEC);
        y->synced_at = dirtied_bytes(y->io_fd);
        pthread_condattr_t ca;
        pthread_condattr_init(&ca);
        pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
        pthread_cond_init(&y->cond, &ca);
        pthread_condattr_destroy(&ca);
        pthread_mutex_init(&y->lock, NULL);
        if (y->fd < 0 || pthread_create(&y->thread, NULL, syncer_main, y) != 0) {
                if (y->fd >= 0)
                        close(y->fd);
                if (y->io_fd >= 0)
                        close(y->io_fd);
                pthread_cond_destroy(&y->cond);
                pthread_mutex_destroy(&y->lock);
                free(y);
                return NULL; /* the commit's syncfs does it all */
        }
        return y;
}

/* Waits for a syncfs in progress: never longer than what is dirty. */
static void syncer_stop(TreeSyncer **yp) {
        TreeSyncer *y = *yp;
        if (!y)
                return;
        pthread_mutex_lock(&y->lock);
        y->stop = true;
        pthread_cond_signal(&y->cond);
        pthread_mutex_unlock(&y->lock);
        pthread_join(y->thread, NULL);
        close(y->fd);
        if (y->io_fd >= 0)
                close(y->io_fd);
        pthread_cond_destroy(&y->cond);
        pthread_mutex_destroy(&y->lock);
        free(y);
        *yp = NULL;
}

int tree_staging_begin(ImageStore *s, const char *image_id, TreeStaging *ret, Error **err) {
        TreeStaging t = TREE_STAGING_INIT;
        /* Locked while dirfd is open, which it stays until the tree is in
         * place or removed: gc keeps off it while we live. */
        t.dirfd = image_store_make_staging(s, "render-", t.name);
        if (t.dirfd < 0)
                return error_sys(err, t.dirfd, "image %s: creating render directory", image_id);
        (void) fchmod(t.dirfd, 0755);
        if (mkdirat(t.dirfd, "rootfs", 0755) < 0 ||
            (t.rootfd = openat(t.dirfd, "rootfs", O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0) {
                int r = error_sys(err, -errno, "image %s: creating render directory", image_id);
                tree_staging_abort(s, &t, NULL);
                return r;
        }
        t.syncer = syncer_start(t.rootfd);
        *ret = t;
        return 0;
}

void tree_staging_abort(ImageStore *s, TreeStaging *t, uint64_t *freed) {
        syncer_stop(&t->syncer);
        closep(&t->rootfd);
        t->rootfd = -1;
        if (t->dirfd >= 0 && *t->name)
                (void) rm_rf_at_counting(s->tmp_fd, t->name, freed);
        closep(&t->dirfd);
        *t = (TreeStaging) TREE_STAGING_INIT;
}

static int staging_sync(TreeStaging *t, Error **err) {
        syncer_stop(&t->syncer);
        /* Durable before it becomes visible: pods will trust this tree. */
        if (syncfs(t->rootfd) < 0)
                return error_sys(err, -errno, "syncing the rendered tree");
        return 0;
}

static int staging_move(ImageStore *s, TreeStaging *t, const char *image_id, Error **err) {
        int r = 0;
        if (renameat(s->tmp_fd, t->name, s->tree_fd, digest_hex(image_id)) < 0) {
                /* A concurrent import of the same image rendered it first:
                 * trees are keyed by content, so theirs is as good as ours. */
                if (errno != EEXIST && errno != ENOTEMPTY)
                        r = error_sys(err, -errno, "image %s: moving the rendered tree into place", image_id);
        }
        /* Whatever is left (theirs won) goes; the lock goes with dirfd. */
        tree_staging_abort(s, t, NULL);
        if (r < 0)
                return r;
        r = fsync_dir_at(s->tree_fd, ".");
        return r < 0 ? error_sys(err, r, "image %s: syncing the tree store", image_id) : 0;
}

int tree_staging_commit(ImageStore *s, TreeStaging *t, const char *image_id, Error **err) {
        int r = staging_sync(t, err);
        if (r < 0) {
                tree_staging_abort(s, t, NULL);
                return error_prefix(err, "image %s: rendering", image_id);
        }
        return staging_move(s, t, image_id, err);
}

int tree_render(ImageStore *s, const Image *image, int staged_blobs_fd, LayerBudget *budget,
                const RenderProgress *progress, Error **err) {
        if (image_store_has_tree(s, image->id))
                return 0;

        TreeStaging t;
        int r = tree_staging_begin(s, image->id, &t, err);
        if (r < 0)
                return r;
        r = render_layers(s, image, staged_blobs_fd, budget, progress, t.rootfd, err);
        if (r < 0) {
                tree_staging_abort(s, &t, progress ? progress->freed : NULL);
                return error_prefix(err, "image %s: rendering", image->id);
        }
        return staging_move(s, &t, image->id, err);
}
