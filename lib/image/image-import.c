/* SPDX-License-Identifier: Apache-2.0 */
#include <fcntl.h>
#include <sys/stat.h>

#include "basic/fs.h"
#include "basic/path.h"
#include "basic/strv.h"
#include "basic/time-util.h"
#include "image/archive-util.h"
#include "image/import-internal.h"
#include "image/oci-manifest.h"
#include "image/tree.h"

static int parse_platform(Import *imp, const char *platform, Error **err) {
        return oci_platform_parse(platform, imp->platform_os, imp->platform_arch, imp->platform_variant, err);
}

/* Unpacks an oci-archive or docker archive into staging/archive, hashing
 * every regular file on the way so its blob need not be read twice. Stops at
 * the first entry that shows the file is an ACI and says so. */
static int unpack_archive(Import *imp, int fd, bool *ret_is_aci, Error **err) {
        *ret_is_aci = false;
        if (mkdirat(imp->staging_fd, "archive", 0700) < 0)
                return error_sys(err, -errno, "%s: unpacking", imp->source);
        imp->src_fd = openat(imp->staging_fd, "archive", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (imp->src_fd < 0)
                return error_sys(err, -errno, "%s: unpacking", imp->source);

        struct stat fst;
        uint64_t total = fstat(fd, &fst) >= 0 ? (uint64_t) fst.st_size : 0;
        _cleanup_archive_read_ struct archive *a = NULL;
        int r = archive_open_tar_fd(fd, imp->source, &a, err);
        if (r < 0)
                return r;
        struct archive_entry *e;
        for (;;) {
                int k = archive_read_next_header(a, &e);
                if (k == ARCHIVE_EOF)
                        return 0;
                if (k != ARCHIVE_OK && k != ARCHIVE_WARN)
                        return error_set(err, -EBADMSG, "%s: %s", imp->source, archive_error_string(a));
                _cleanup_free_ char *path = NULL, *parent = NULL, *base = NULL;
                const char *name = archive_entry_pathname(e);
                if (!name || path_normalize_archive_name(name, &path) < 0)
                        return error_set(err, -EBADMSG, "%s: entry \"%s\": path leaves the archive (\"..\")",
                                         imp->source, strempty(name));
                if (streq(path, "manifest") || streq(path, "rootfs") || startswith(path, "rootfs/")) {
                        *ret_is_aci = true;
                        return 0;
                }
                if (!*path)
                        continue;
                if (path_split(path, &parent, &base) < 0)
                        return error_sys(err, -ENOMEM, "%s", imp->source);

                mode_t type = archive_entry_filetype(e);
                /* Unpacked without ever passing through a symlink, and with no
                 * member twice: then each staged file holds exactly the bytes
                 * hashed below, and no rename can be redirected. Honest image
                 * archives have neither. */
                if (type != AE_IFDIR && type != AE_IFREG && type != AE_IFLNK)
                        continue; /* image archives hold files and, for shared layers, symlinks */
                /* A directory member is made itself; for the others, their parent. */
                _cleanup_close_ int pfd = mkdir_p_in_root(imp->src_fd, type == AE_IFDIR ? path : parent, 0700, false);
                if (pfd == -ELOOP || pfd == -ENOTDIR)
                        return error_set(err, -EBADMSG, "%s: member \"%s\" passes through a symlink or a file",
                                         imp->source, path);
                if (pfd < 0)
                        return error_sys(err, pfd, "%s: %s", imp->source, path);
                if (type == AE_IFDIR)
                        continue;
                struct stat st;
                if (fstatat(pfd, base, &st, AT_SYMLINK_NOFOLLOW) >= 0)
                        return error_set(err, -EBADMSG, "%s: member \"%s\" appears twice", imp->source, path);
                if (type == AE_IFLNK || archive_entry_hardlink(e)) {
                        /* Kept as a symlink, which open_in_root() resolves inside
                         * the archive; a hard link becomes one to its target. */
                        const char *target = archive_entry_symlink(e);
                        _cleanup_free_ char *abs = NULL;
                        if (!target) {
                                if (asprintf(&abs, "/%s", archive_entry_hardlink(e)) < 0)
                                        return error_sys(err, -ENOMEM, "%s", imp->source);
                                target = abs;
                        }
                        if (symlinkat(target, pfd, base) < 0)
                                return error_sys(err, -errno, "%s: %s", imp->source, path);
                        continue;
                }

                _cleanup_close_ int out = openat(pfd, base, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
                if (out < 0)
                        return error_sys(err, -errno, "%s: %s", imp->source, path);
                Sha256 h;
                sha256_init(&h);
                const void *block;
                size_t size;
                la_int64_t offset, pos = 0;
                while ((k = archive_read_data_block(a, &block, &size, &offset)) == ARCHIVE_OK) {
                        if (offset != pos) {
                                /* Sparse member: the hole hashes as zeros. */
                                static const uint8_t zeros[4096];
                                for (la_int64_t z = pos; z < offset; z += (la_int64_t) sizeof(zeros))
                                        sha256_update(&h, zeros, (size_t) (offset - z < (la_int64_t) sizeof(zeros) ? offset - z : (la_int64_t) sizeof(zeros)));
                                if (lseek(out, offset, SEEK_SET) < 0)
                                        return error_sys(err, -errno, "%s: %s", imp->source, path);
                        }
                        sha256_update(&h, block, size);
                        r = write_all(out, block, size);
                        if (r < 0)
                                return error_sys(err, r, "%s: %s", imp->source, path);
                        (void) sync_file_range(out, offset, (off64_t) size, SYNC_FILE_RANGE_WRITE);
                        pos = offset + (la_int64_t) size;
                        /* How far into the archive libarchive has read. */
                        off_t at = lseek(fd, 0, SEEK_CUR);
                        r = import_report_reading(imp, at > 0 ? (uint64_t) at : 0, total, imp->source, err);
                        if (r < 0)
                                return r;
                }
                if (k != ARCHIVE_EOF)
                        return error_set(err, -EBADMSG, "%s: %s: %s", imp->source, path, archive_error_string(a));
                if (archive_entry_size(e) != pos)
                        return error_set(err, -EBADMSG, "%s: %s: truncated", imp->source, path);

                StagedFile *files = realloc(imp->files, (imp->n_files + 1) * sizeof(StagedFile));
                if (!files)
                        return error_sys(err, -ENOMEM, "%s", imp->source);
                imp->files = files;
                StagedFile *f = &files[imp->n_files++];
                *f = (StagedFile) { .path = TAKE_PTR(path), .size = (uint64_t) pos };
                uint8_t md[SHA256_DIGEST_SIZE];
                sha256_final(&h, md);
                sha256_to_hex(md, f->hex);
        }
}

static int import_from_directory(Import *imp, Error **err) {
        if (faccessat(imp->src_fd, "index.json", F_OK, 0) >= 0)
                return import_oci_layout(imp, err);
        if (faccessat(imp->src_fd, "manifest.json", F_OK, 0) >= 0)
                return import_docker_archive(imp, err);
        return error_set(err, -EBADMSG, "%s: not an image: no index.json (OCI image layout) or manifest.json (docker archive)",
                         imp->source);
}

static int render_progress(void *userdata, size_t layer, size_t n_layers, uint64_t bytes, uint64_t total) {
        const Import *imp = userdata;
        ImportProgress p = {
                .stage = IMPORT_RENDERING, .bytes = bytes, .total = total, .layer = layer, .n_layers = n_layers,
        };
        return imp->opts->progress(&p, imp->opts->userdata);
}

static int import_finish(Import *imp, Error **err) {
        Image *im = imp->image;
        im->imported_at = now_usec();
        int r;
        if (imp->tree.rootfd >= 0) {
                /* The layers were applied while they were read. The last
                 * chance to stop: once in place, the tree is the store's. */
                if (imp->opts->progress) {
                        uint64_t last = im->n_layers > 0 ? im->layers[im->n_layers - 1].size : 0;
                        ImportProgress p = {
                                .stage = IMPORT_RENDERING, .bytes = last, .total = last,
                                .layer = im->n_layers, .n_layers = im->n_layers,
                        };
                        r = imp->opts->progress(&p, imp->opts->userdata);
                        if (r < 0)
                                return r == -ECANCELED ? error_set(err, r, "%s: interrupted", imp->source)
                                                       : error_sys(err, r, "%s", imp->source);
                }
                /* The staged blobs were not fsynced one by one: the syncfs
                 * of the tree's commit covers them when they share its
                 * file system, else they get one of their own. */
                struct stat a, b;
                if (fstat(imp->blobs_fd, &a) < 0 || fstat(imp->tree.rootfd, &b) < 0)
                        return error_sys(err, -errno, "image %s: staging", im->id);
                if (a.st_dev != b.st_dev && syncfs(imp->blobs_fd) < 0)
                        return error_sys(err, -errno, "image %s: syncing the staged blobs", im->id);
                r = tree_staging_commit(imp->store, &imp->tree, im->id, err);
        } else {
                RenderProgress progress = {
                        .fn = imp->opts->progress ? render_progress : NULL,
                        .userdata = imp,
                        .freed = imp->opts->ret_freed,
                };
                r = tree_render(imp->store, im, imp->blobs_fd, &imp->budget, &progress, err);
        }
        if (r < 0)
                return r;

        /* The blobs join the store only now that all were verified. */
        _cleanup_closedir_ DIR *d = opendir_at(imp->blobs_fd, ".");
        if (!d)
                return error_sys(err, -errno, "image %s: committing blobs", im->id);
        struct dirent *de;
        while ((de = readdir(d)))
                if (hex_digest_is_valid(de->d_name) &&
                    renameat(imp->blobs_fd, de->d_name, imp->store->blobs_fd, de->d_name) < 0)
                        return error_sys(err, -errno, "image %s: committing blob %s", im->id, de->d_name);
        r = fsync_dir_at(imp->store->blobs_fd, ".");
        if (r < 0)
                return error_sys(err, r, "image %s: syncing the blob store", im->id);
        return 0;
}

static void import_done(Import *imp, bool failed) {
        tree_staging_abort(imp->store, &imp->tree, failed ? imp->opts->ret_freed : NULL);
        closep(&imp->src_fd);
        closep(&imp->blobs_fd);
        /* After a success only what was unpacked and not kept is left; a
         * failed import says what it had staged. Removed while still
         * locked (staging_fd), so that no gc removes it at the same time. */
        if (*imp->staging)
                (void) rm_rf_at_counting(imp->store->tmp_fd, imp->staging, failed ? imp->opts->ret_freed : NULL);
        closep(&imp->staging_fd);
        for (size_t i = 0; i < imp->n_files; i++)
                free(imp->files[i].path);
        free(imp->files);
        image_free(imp->image);
        strv_free(imp->names);
}

static int import_run(Import *imp, const char *path, Error **err) {
        _cleanup_free_ char *user_name = NULL;
        if (imp->opts->name && image_name_normalize(imp->opts->name, &user_name) < 0)
                return error_set(err, -EINVAL, "image name \"%s\": not a valid name[:tag]", imp->opts->name);
        int r = parse_platform(imp, imp->opts->platform, err);
        if (r < 0)
                return r;
        if (!(imp->image = calloc(1, sizeof(Image))))
                return error_sys(err, -ENOMEM, "%s", path);

        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return error_sys(err, -errno, "%s", path);
        struct stat st;
        if (fstat(fd, &st) < 0)
                return error_sys(err, -errno, "%s", path);
        if (!S_ISDIR(st.st_mode) && !S_ISREG(st.st_mode))
                return error_set(err, -EBADMSG, "%s: not a file or directory", path);

        /* Locked while staging_fd is open: gc keeps off it while we live. */
        imp->staging_fd = image_store_make_staging(imp->store, "import-", imp->staging);
        if (imp->staging_fd < 0)
                return error_sys(err, imp->staging_fd, "%s: creating staging directory", path);
        if (mkdirat(imp->staging_fd, "blobs", 0700) < 0 ||
            (imp->blobs_fd = openat(imp->staging_fd, "blobs", O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
                return error_sys(err, -errno, "%s: creating staging directory", path);

        /* Each reader returns 1 when the store has the image already. */
        if (S_ISDIR(st.st_mode)) {
                imp->src_fd = TAKE_FD(fd);
                r = import_from_directory(imp, err);
        } else {
                bool is_aci;
                r = unpack_archive(imp, fd, &is_aci, err);
                if (r >= 0 && is_aci)
                        r = lseek(fd, 0, SEEK_SET) < 0 ? error_sys(err, -errno, "%s", path) : import_aci(imp, fd, err);
                else if (r >= 0)
                        r = import_from_directory(imp, err);
        }
        if (r == 0)
                r = import_finish(imp, err);
        if (r < 0)
                return r;

        if (user_name && strv_push(&imp->names, user_name) < 0)
                return error_sys(err, -ENOMEM, "%s", path);
        return image_store_commit(imp->store, imp->image, imp->names, err);
}

int image_import(ImageStore *s, const char *path, const ImportOptions *opts, Image **ret, Error **err) {
        static const ImportOptions no_options = {};
        Import imp = {
                .store = s,
                .opts = opts ?: &no_options,
                .source = path,
                .staging_fd = -1,
                .blobs_fd = -1,
                .src_fd = -1,
                .tree = TREE_STAGING_INIT,
                .budget = { .max_entries = opts ? opts->max_entries : 0, .max_bytes = opts ? opts->max_bytes : 0 },
        };
        int r = import_run(&imp, path, err);
        if (r >= 0 && ret)
                *ret = TAKE_PTR(imp.image);
        import_done(&imp, r < 0);
        return r < 0 ? r : 0;
}
