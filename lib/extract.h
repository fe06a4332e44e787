/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

#include <stdbool.h>

#include "error.h"

typedef struct LayerOptions {
        /* Only entries below this directory are extracted, relative to it
         * (ACI images keep their tree under "rootfs"); NULL for all. */
        const char *subdir;
        /* Apply OCI whiteouts (".wh.NAME", ".wh..wh..opq") to lower layers. */
        bool whiteouts;
} LayerOptions;

/* Applies one layer (a possibly compressed tar read from layer_fd) on top of
 * the tree at rootfd. Nothing outside the tree is ever created, modified or
 * followed: names with ".." are refused, absolute names are made relative,
 * every parent directory and hard link target is resolved with the tree as
 * root, and an entry replaces whatever was at its name (never writing through
 * a symlink). "what" names the layer in errors. */
int layer_apply(int rootfd, int layer_fd, const LayerOptions *opts, const char *what, Error **err);
