/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

#include "basic/error.h"
#include "image/extract.h"
#include "image/image-store.h"

/* Renders image into the tree store (tree/HEX/rootfs) unless it is there
 * already: images are immutable and trees are keyed by the image id, so a
 * second render is free. The layers are applied in order into a staging
 * directory, synced, and renamed into place, so a tree is either complete or
 * absent. Blobs are looked up in staged_blobs_fd first (an import in
 * progress; -1 for none), then in the store. budget (NULL: none) bounds
 * what the layers may unpack to, all together (extract.h). */
typedef struct RenderProgress {
        /* Called often while layers are applied: layer (1-based) of
         * n_layers, with bytes of its blob read of total. A negative return
         * stops the render (nothing of it stays); it is asked once more
         * after the tree was synced, and never after the tree is in place. */
        int (*fn)(void *userdata, size_t layer, size_t n_layers, uint64_t bytes, uint64_t total);
        void *userdata;
        /* NULL, or where a failed render adds the disk space it removed. */
        uint64_t *freed;
} RenderProgress;

/* progress: NULL, or as above (fn may be NULL). */
int tree_render(ImageStore *s, const Image *image, int staged_blobs_fd, LayerBudget *budget,
                const RenderProgress *progress, Error **err);

/* A tree being rendered: images/tmp/render-XXX/rootfs, locked against gc
 * while dirfd is open. For renders that apply the layers themselves while
 * they arrive (layer-stream), and for tree_render. */
typedef struct TreeSyncer TreeSyncer;
typedef struct TreeStaging {
        char name[32];          /* in the store's tmp directory */
        int dirfd;              /* render-XXX, locked */
        int rootfd;             /* render-XXX/rootfs, where the layers go */
        /* Writes the tree back while it is made (a thread that syncs its
         * file system over and over), so that the sync before it is used
         * finds little left; NULL when no thread could be started. */
        TreeSyncer *syncer;
} TreeStaging;

#define TREE_STAGING_INIT { .dirfd = -1, .rootfd = -1 }

/* Creates the staging directory for the tree of image_id. */
int tree_staging_begin(ImageStore *s, const char *image_id, TreeStaging *ret, Error **err);
/* Makes the staged tree durable (syncfs) and moves it into place as
 * tree/HEX (a tree a concurrent render put there first is as good), then
 * syncs the tree store. The staging is gone afterwards, also on failure. */
int tree_staging_commit(ImageStore *s, TreeStaging *t, const char *image_id, Error **err);
/* Removes the staging (freed: NULL, or where the bytes removed are added).
 * Does nothing for a staging that was never begun or is gone. */
void tree_staging_abort(ImageStore *s, TreeStaging *t, uint64_t *freed);
