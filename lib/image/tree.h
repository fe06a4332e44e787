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
int tree_render(ImageStore *s, const Image *image, int staged_blobs_fd, LayerBudget *budget, Error **err);
