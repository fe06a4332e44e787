/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "basic/error.h"

/* What the layers of one image may unpack to, counted across them: a
 * hostile image is a small compressed file of millions of entries or of a
 * sparse file of a petabyte. 0: no limit. */
typedef struct LayerBudget {
        uint64_t max_entries;
        uint64_t max_bytes;     /* the sizes of its regular files, as their headers say */
        uint64_t entries;       /* so far */
        uint64_t bytes;
} LayerBudget;

typedef struct LayerOptions {
        /* Only entries below this directory are extracted, relative to it
         * (ACI images keep their tree under "rootfs"); NULL for all. */
        const char *subdir;
        /* Apply OCI whiteouts (".wh.NAME", ".wh..wh..opq") to lower layers. */
        bool whiteouts;
        /* NULL: no limits. A layer beyond it fails with -EFBIG, before the
         * entry that would pass it is written. */
        LayerBudget *budget;
        /* NULL, or called before each entry and after each block of data
         * written: a negative return stops the layer with that error
         * (-ECANCELED: an interrupted import). */
        int (*progress)(void *userdata);
        void *userdata;
} LayerOptions;

/* Applies one layer (a possibly compressed tar read from layer_fd) on top of
 * the tree at rootfd. Nothing outside the tree is ever created, modified or
 * followed: names with ".." are refused, absolute names are made relative,
 * every parent directory and hard link target is resolved with the tree as
 * root, and an entry replaces whatever was at its name (never writing through
 * a symlink). Block and character device nodes are left out (but for a
 * whiteout, char 0:0), each named through warn(), as are hard links to
 * them. "what" names the layer in errors. Memory does not grow with the
 * size of what is unpacked, and by 16 bytes per entry of the layer (which
 * a whiteout of the same layer must not hide; 32 for a device node). */
int layer_apply(int rootfd, int layer_fd, const LayerOptions *opts, const char *what, Error **err);

/* The same, reading the tar from an archive opened for reading (its format
 * and filters set, not yet at the first header): layer-stream feeds one
 * from another thread. */
struct archive;
int layer_apply_archive(int rootfd, struct archive *a, const LayerOptions *opts, const char *what, Error **err);
