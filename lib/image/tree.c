/* SPDX-License-Identifier: Apache-2.0 */
#include <fcntl.h>
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

static int render_layers(ImageStore *s, const Image *image, int staged_blobs_fd, LayerBudget *budget, int rootfd,
                         Error **err) {
        LayerOptions opts = {
                .subdir = image->format == IMAGE_FORMAT_ACI ? "rootfs" : NULL,
                .whiteouts = image->format != IMAGE_FORMAT_ACI,
                .budget = budget,
        };
        for (size_t i = 0; i < image->n_layers; i++) {
                const char *digest = image->layers[i].digest;
                _cleanup_close_ int fd = open_layer_blob(s, staged_blobs_fd, digest);
                if (fd < 0)
                        return error_sys(err, fd, "layer %s", digest);
                char what[DIGEST_STRING_SIZE + 16];
                snprintf(what, sizeof(what), "layer %s", digest);
                int r = layer_apply(rootfd, fd, &opts, what, err);
                if (r < 0)
                        return r;
        }
        /* Durable before it becomes visible: pods will trust this tree. */
        return syncfs(rootfd) < 0 ? error_sys(err, -errno, "syncing the rendered tree") : 0;
}

int tree_render(ImageStore *s, const Image *image, int staged_blobs_fd, LayerBudget *budget, Error **err) {
        if (image_store_has_tree(s, image->id))
                return 0;

        char staging[32];
        random_name(staging, sizeof(staging), "render-");
        if (mkdirat(s->tmp_fd, staging, 0755) < 0)
                return error_sys(err, -errno, "image %s: creating render directory", image->id);

        int r;
        {
                _cleanup_close_ int dirfd = openat(s->tmp_fd, staging, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                _cleanup_close_ int rootfd = -1;
                if (dirfd < 0 || mkdirat(dirfd, "rootfs", 0755) < 0 ||
                    (rootfd = openat(dirfd, "rootfs", O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
                        r = error_sys(err, -errno, "image %s: creating render directory", image->id);
                else
                        r = render_layers(s, image, staged_blobs_fd, budget, rootfd, err);
        }
        if (r >= 0 && renameat(s->tmp_fd, staging, s->tree_fd, digest_hex(image->id)) < 0) {
                /* A concurrent import of the same image rendered it first:
                 * trees are keyed by content, so theirs is as good as ours. */
                if (errno != EEXIST && errno != ENOTEMPTY)
                        r = error_sys(err, -errno, "image %s: moving the rendered tree into place", image->id);
        }
        (void) rm_rf_at(s->tmp_fd, staging);
        if (r < 0)
                return error_prefix(err, "image %s: rendering", image->id);
        r = fsync_dir_at(s->tree_fd, ".");
        return r < 0 ? error_sys(err, r, "image %s: syncing the tree store", image->id) : 0;
}
