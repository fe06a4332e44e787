/* SPDX-License-Identifier: Apache-2.0 */
/* What the format readers share (import-internal.h): blobs staged and
 * verified, the record being built. Kept apart from image-import.c, which
 * drives the readers, so that neither calls back into the other. */
#include <fcntl.h>
#include <sys/stat.h>

#include "basic/fs.h"
#include "basic/path.h"
#include "basic/strv.h"
#include "image/import-internal.h"
#include "image/layer-stream.h"

#define COPY_BUFFER_SIZE (1U << 20)

int import_report_reading(Import *imp, uint64_t bytes, uint64_t total, const char *what, Error **err) {
        if (!imp->opts->progress)
                return 0;
        ImportProgress p = { .stage = IMPORT_READING, .bytes = bytes, .total = total };
        int r = imp->opts->progress(&p, imp->opts->userdata);
        if (r == -ECANCELED)
                return error_set(err, r, "%s: interrupted", what);
        return r < 0 ? error_sys(err, r, "%s", what) : 0;
}

static int copy_hashing(Import *imp, int in, int out, Sha256 *h, uint64_t *ret_size, const char *what, Error **err) {
        _cleanup_free_ uint8_t *buf = malloc(COPY_BUFFER_SIZE);
        if (!buf)
                return error_sys(err, -ENOMEM, "%s: reading", what);
        uint64_t total = 0;
        for (;;) {
                ssize_t k = read(in, buf, COPY_BUFFER_SIZE);
                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        return error_sys(err, -errno, "%s: reading", what);
                }
                if (k == 0)
                        break;
                sha256_update(h, buf, (size_t) k);
                int r = write_all(out, buf, (size_t) k);
                if (r < 0)
                        return error_sys(err, r, "%s: reading", what);
                /* Start writeback now, so the fsync before the rename does
                 * not have to wait for all of it at once. */
                (void) sync_file_range(out, (off64_t) total, k, SYNC_FILE_RANGE_WRITE);
                total += (uint64_t) k;
                imp->read_bytes += (uint64_t) k;
                r = import_report_reading(imp, imp->read_bytes, 0, what, err);
                if (r < 0)
                        return r;
        }
        *ret_size = total;
        return 0;
}

static int verify_blob(const char *hex, uint64_t size, const char *expected_digest, int64_t expected_size,
                       const char *what, Error **err) {
        if (expected_size >= 0 && size != (uint64_t) expected_size)
                return error_set(err, -EBADMSG, "%s %s: size is %llu bytes, its descriptor says %lld (truncated or corrupt)",
                                 what, expected_digest ? expected_digest : "", (unsigned long long) size,
                                 (long long) expected_size);
        if (expected_digest && !streq(digest_hex(expected_digest), hex))
                return error_set(err, -EBADMSG, "%s %s: content does not match its digest (it hashes to " DIGEST_PREFIX "%s): corrupt or truncated",
                                 what, expected_digest, hex);
        return 0;
}

static bool have_blob(Import *imp, const char *hex) {
        char d[DIGEST_STRING_SIZE];
        digest_from_hex(hex, d);
        return faccessat(imp->blobs_fd, hex, F_OK, AT_SYMLINK_NOFOLLOW) >= 0 || image_store_has_blob(imp->store, d);
}

int import_blob_from_fd(Import *imp, int fd, const char *expected_digest, int64_t expected_size,
                        const char *what, char ret_digest[DIGEST_STRING_SIZE], uint64_t *ret_size, Error **err) {
        char tmp[32];
        random_name(tmp, sizeof(tmp), ".tmp-");
        _cleanup_close_ int out = openat(imp->blobs_fd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
        if (out < 0)
                return error_sys(err, -errno, "%s: staging", what);

        Sha256 h;
        sha256_init(&h);
        uint64_t size = 0;
        int r = copy_hashing(imp, fd, out, &h, &size, what, err);
        if (r < 0) {
                (void) rm_rf_at_counting(imp->blobs_fd, tmp, imp->opts->ret_freed);
                return r;
        }
        uint8_t md[SHA256_DIGEST_SIZE];
        char hex[SHA256_HEX_SIZE];
        sha256_final(&h, md);
        sha256_to_hex(md, hex);
        r = verify_blob(hex, size, expected_digest, expected_size, what, err);
        if (r >= 0 && fsync(out) < 0)
                r = error_sys(err, -errno, "%s: syncing", what);
        if (r >= 0 && renameat(imp->blobs_fd, tmp, imp->blobs_fd, hex) < 0)
                r = error_sys(err, -errno, "%s: staging", what);
        if (r < 0) {
                (void) rm_rf_at_counting(imp->blobs_fd, tmp, imp->opts->ret_freed);
                return r;
        }
        digest_from_hex(hex, ret_digest);
        if (ret_size)
                *ret_size = size;
        return 0;
}

int import_blob_from_memory(Import *imp, const void *data, size_t size, char ret_digest[DIGEST_STRING_SIZE], Error **err) {
        char hex[SHA256_HEX_SIZE];
        sha256_hex_of(data, size, hex);
        digest_from_hex(hex, ret_digest);
        if (have_blob(imp, hex))
                return 0;
        char tmp[32];
        random_name(tmp, sizeof(tmp), ".tmp-");
        _cleanup_close_ int out = openat(imp->blobs_fd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
        int r = out < 0 ? -errno : write_all(out, data, size);
        if (r >= 0 && fsync(out) < 0)
                r = -errno;
        if (r >= 0 && renameat(imp->blobs_fd, tmp, imp->blobs_fd, hex) < 0)
                r = -errno;
        if (r < 0) {
                (void) rm_rf_at_counting(imp->blobs_fd, tmp, imp->opts->ret_freed);
                return error_sys(err, r, "blob %s: staging", ret_digest);
        }
        return 0;
}

static StagedFile *find_staged_file(Import *imp, const char *path) {
        _cleanup_free_ char *norm = NULL;
        if (path_normalize_archive_name(path, &norm) < 0)
                return NULL;
        for (size_t i = 0; i < imp->n_files; i++)
                if (streq(imp->files[i].path, norm))
                        return &imp->files[i];
        return NULL;
}

int import_blob(Import *imp, const char *src_path, const char *expected_digest, int64_t expected_size,
                const char *what, char ret_digest[DIGEST_STRING_SIZE], uint64_t *ret_size, Error **err) {
        if (expected_digest && !digest_is_valid(expected_digest))
                return error_set(err, -EBADMSG, "%s: \"%s\" is not a sha256 digest", what, expected_digest);

        StagedFile *f = find_staged_file(imp, src_path);
        if (f) {
                /* Hashed while the archive was unpacked: verify, then move. */
                int r = verify_blob(f->hex, f->size, expected_digest, expected_size, what, err);
                if (r < 0)
                        return r;
                digest_from_hex(f->hex, ret_digest);
                if (ret_size)
                        *ret_size = f->size;
                if (have_blob(imp, f->hex))
                        return 0;
                /* Moved by its own name, never through a symlink. */
                _cleanup_free_ char *parent = NULL, *base = NULL;
                if (path_split(f->path, &parent, &base) < 0)
                        return error_sys(err, -ENOMEM, "%s", what);
                _cleanup_close_ int pfd = open_beneath_no_symlinks(imp->src_fd, parent, O_PATH | O_DIRECTORY, 0);
                if (pfd < 0)
                        return error_sys(err, pfd, "%s: %s", what, src_path);
                _cleanup_close_ int fd = openat(pfd, base, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
                if (fd < 0)
                        return error_sys(err, -errno, "%s: %s", what, src_path);
                if (fsync(fd) < 0 || renameat(pfd, base, imp->blobs_fd, f->hex) < 0)
                        return error_sys(err, -errno, "%s: staging", what);
                return 0;
        }

        if (expected_digest && expected_size >= 0) {
                /* Stored already: its content is known, but the descriptor
                 * must still tell the truth about its size. */
                _cleanup_close_ int fd = import_open_blob(imp, expected_digest);
                struct stat st;
                if (fd >= 0 && fstat(fd, &st) >= 0) {
                        int r = verify_blob(digest_hex(expected_digest), (uint64_t) st.st_size, expected_digest,
                                            expected_size, what, err);
                        if (r < 0)
                                return r;
                        snprintf(ret_digest, DIGEST_STRING_SIZE, "%s", expected_digest);
                        if (ret_size)
                                *ret_size = (uint64_t) st.st_size;
                        return 0;
                }
        }
        /* A FIFO in a layout must not hang the import. */
        _cleanup_close_ int fd = open_regular_in_root(imp->src_fd, src_path, SIZE_MAX);
        if (fd == -EBADMSG)
                return error_set(err, fd, "%s: %s: not a regular file", what, src_path);
        if (fd < 0)
                return error_sys(err, fd, "%s: %s", what, src_path);
        return import_blob_from_fd(imp, fd, expected_digest, expected_size, what, ret_digest, ret_size, err);
}

static int report_layer(Import *imp, size_t index, size_t n, uint64_t bytes, uint64_t total, const char *what, Error **err) {
        if (!imp->opts->progress)
                return 0;
        ImportProgress p = {
                .stage = IMPORT_RENDERING, .bytes = bytes, .total = total, .layer = index + 1, .n_layers = n,
        };
        int r = imp->opts->progress(&p, imp->opts->userdata);
        if (r == -ECANCELED)
                return error_set(err, r, "%s: interrupted", what);
        return r < 0 ? error_sys(err, r, "%s", what) : 0;
}

int import_layer_stream(Import *imp, int src_fd, const char *src_path, const char *digest, int64_t size,
                        const char *diff_id, size_t index, size_t n, char ret_digest[DIGEST_STRING_SIZE],
                        uint64_t *ret_size, Error **err) {
        char what[DIGEST_STRING_SIZE + 16];
        snprintf(what, sizeof(what), "layer %s", digest);
        if (!digest_is_valid(digest))
                return error_set(err, -EBADMSG, "layer: \"%s\" is not a sha256 digest", digest);
        /* A tree made before (by an import that died before its record
         * was written) is as good as ours: then the layers are only
         * stored and checked. */
        if (imp->tree.rootfd < 0 && !image_store_has_tree(imp->store, imp->image->id)) {
                int r = tree_staging_begin(imp->store, imp->image->id, &imp->tree, err);
                if (r < 0)
                        return r;
        }

        _cleanup_close_ int fd = -1;
        if (src_path) {
                /* A FIFO in a layout must not hang the import. */
                fd = open_regular_in_root(src_fd, src_path, SIZE_MAX);
                if (fd == -EBADMSG)
                        return error_set(err, fd, "layer: %s: not a regular file", src_path);
                if (fd < 0)
                        return error_sys(err, fd, "layer: %s", src_path);
                src_fd = fd;
        }

        /* The store may have the blob: it is read all the same, as the
         * tree is made of these bytes, but not written again. */
        char tmp[32] = "";
        _cleanup_close_ int out = -1;
        if (!have_blob(imp, digest_hex(digest))) {
                random_name(tmp, sizeof(tmp), ".tmp-");
                out = openat(imp->blobs_fd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
                if (out < 0)
                        return error_sys(err, -errno, "%s: staging", what);
        }

        LayerOptions layer = {
                .whiteouts = true,
                .budget = &imp->budget,
        };
        LayerStreamSpec spec = {
                .digest = digest,
                .size = size,
                .diff_id = diff_id,
                .blob_fd = out,
                /* import_finish() syncs the blobs' file system after the
                 * tree's, before any blob joins the store. */
                .blob_synced_by_caller = true,
                .rootfd = imp->tree.rootfd,
                .layer = &layer,
        };
        LayerStream *ls = NULL;
        _cleanup_free_ uint8_t *buf = malloc(COPY_BUFFER_SIZE);
        int r = buf ? layer_stream_start(&spec, &ls, err) : error_sys(err, -ENOMEM, "%s", what);
        uint64_t done = 0, total = size >= 0 ? (uint64_t) size : 0;
        while (r >= 0) {
                ssize_t k = read(src_fd, buf, COPY_BUFFER_SIZE);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k < 0) {
                        r = error_sys(err, -errno, "%s: reading", what);
                        break;
                }
                if (k == 0)
                        break;
                r = layer_stream_feed(ls, buf, (size_t) k, err);
                if (r < 0)
                        break;
                done += (uint64_t) k;
                if (src_path)
                        imp->read_bytes += (uint64_t) k;
                r = report_layer(imp, index, n, done, total, what, err);
        }
        uint64_t blob_size = 0;
        if (r >= 0) {
                r = layer_stream_end(ls, &blob_size, err);
                ls = NULL;
        }
        layer_stream_abort(ls);
        if (r >= 0 && out >= 0 && renameat(imp->blobs_fd, tmp, imp->blobs_fd, digest_hex(digest)) < 0)
                r = error_sys(err, -errno, "%s: staging", what);
        if (r < 0) {
                if (out >= 0)
                        (void) rm_rf_at_counting(imp->blobs_fd, tmp, imp->opts->ret_freed);
                return r;
        }
        if (ret_digest != digest)
                snprintf(ret_digest, DIGEST_STRING_SIZE, "%s", digest);
        if (ret_size)
                *ret_size = blob_size;
        return 0;
}

int import_open_blob(Import *imp, const char *digest) {
        int fd = openat(imp->blobs_fd, digest_hex(digest), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        if (fd >= 0 || errno != ENOENT)
                return fd < 0 ? -errno : fd;
        return image_store_open_blob(imp->store, digest);
}

int import_read_blob(Import *imp, const char *digest, char **ret, size_t *ret_size, Error **err) {
        _cleanup_close_ int fd = import_open_blob(imp, digest);
        if (fd < 0)
                return error_sys(err, fd, "blob %s", digest);
        return read_fd(fd, digest, JSON_MAX, ret, ret_size, err) < 0 ? error_prefix(err, "blob") : 0;
}

int import_check_existing(Import *imp, const char *id, Error **err) {
        Image *existing = NULL;
        int r = image_store_load(imp->store, digest_hex(id), &existing, err);
        if (r == -ENOENT || (r >= 0 && !image_store_has_tree(imp->store, id))) {
                image_free(existing);
                return 0;
        }
        if (r < 0)
                return r;
        /* Stored already, but it must still be what was asked for. */
        r = import_check_platform(imp, existing->os, existing->architecture, id, err);
        if (r < 0) {
                image_free(existing);
                return r;
        }
        image_free(imp->image);
        imp->image = existing;
        return 1;
}

int import_add_layer(Import *imp, const char *digest, const char *media_type, uint64_t size) {
        Image *im = imp->image;
        ImageLayer *l = realloc(im->layers, (im->n_layers + 1) * sizeof(ImageLayer));
        if (!l)
                return -ENOMEM;
        im->layers = l;
        l[im->n_layers] = (ImageLayer) {
                .digest = strdup(digest),
                .media_type = media_type ? strdup(media_type) : NULL,
                .size = size,
        };
        if (!l[im->n_layers].digest)
                return -ENOMEM;
        im->n_layers++;
        im->size += size;
        return 0;
}

void import_add_source_name(Import *imp, const char *name) {
        char *n = NULL;
        /* A source's name that we cannot use is no reason to refuse the image. */
        if (image_name_normalize(name, &n) >= 0 && !strv_contains(imp->names, n))
                (void) strv_push(&imp->names, n);
        free(n);
}

int import_check_platform(Import *imp, const char *os, const char *arch, const char *what, Error **err) {
        if ((os && !streq(os, imp->platform_os)) || (arch && !streq(arch, imp->platform_arch)))
                return error_set(err, -ENOENT, "%s: the image is for %s/%s, not %s/%s (choose with --platform)",
                                 what, strempty(os), strempty(arch), imp->platform_os, imp->platform_arch);
        return 0;
}
