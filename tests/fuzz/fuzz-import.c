/* SPDX-License-Identifier: Apache-2.0 */
/* image_import() of a file: the archive unpacking (oci-archive, docker
 * archive) and the OCI layout, docker archive and ACI readers behind it,
 * down to rendering the tree. Besides the sentinel check (see fuzz.h), the
 * store must stay what it claims to be: every blob hashes to its name, no
 * staging is left behind, no descriptor leaks. */
#include <fcntl.h>
#include <sys/stat.h>

#include "basic/digest.h"
#include "basic/fs.h"
#include "fuzz.h"
#include "image/image-import.h"
#include "image/image-store.h"

/* Content addressing is what lets imports share blobs: a blob whose content
 * is not what its name says poisons every later image that uses the name. */
static void check_blobs(int scratch) {
        int fd = openat(scratch, "data/images/blobs/sha256", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        _cleanup_closedir_ DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
        if (!d)
                fuzz_fail("%s/data/images/blobs/sha256: %m", fuzz_scratch_path());
        struct dirent *de;
        while ((de = readdir(d))) {
                if (streq(de->d_name, ".") || streq(de->d_name, ".."))
                        continue;
                if (!hex_digest_is_valid(de->d_name))
                        fuzz_fail("blob store: stray entry \"%s\"", de->d_name);
                struct stat st;
                if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(st.st_mode))
                        fuzz_fail("blob store: %s is not a regular file", de->d_name);
                _cleanup_free_ char *data = NULL;
                size_t size;
                Error *err = NULL;
                if (read_file_at(dirfd(d), de->d_name, SIZE_MAX / 2, &data, &size, &err) < 0)
                        fuzz_fail("blob store: %s: %s", de->d_name, err && err->msg ? err->msg : "?");
                char hex[SHA256_HEX_SIZE];
                sha256_hex_of(data, size, hex);
                if (!streq(hex, de->d_name))
                        fuzz_fail("blob store: blob %s holds content that hashes to %s", de->d_name, hex);
        }
}

/* Staging of a finished import, failed or not, is gone: it is only meant to
 * survive a crash, for gc to collect. */
static void check_no_staging(int scratch) {
        int fd = openat(scratch, "data/images/tmp", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        _cleanup_closedir_ DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
        if (!d)
                fuzz_fail("%s/data/images/tmp: %m", fuzz_scratch_path());
        struct dirent *de;
        while ((de = readdir(d)))
                if (!streq(de->d_name, ".") && !streq(de->d_name, ".."))
                        fuzz_fail("images/tmp/%s left behind", de->d_name);
}

static int import_once(ImageStore *s, const char *input, const char *what) {
        _cleanup_image_ Image *image = NULL;
        Error *err = NULL;
        int r = image_import(s, input, NULL, &image, &err);
        fuzz_error_done(what, err);
        if (r < 0)
                return r;
        if (!image || !digest_is_valid(image->id))
                fuzz_fail("%s: imported an image without a valid id", what);
        if (FUZZ_VERBOSE)
                fprintf(stderr, "  %s: image %s, %zu layers\n", what, image->id, image->n_layers);

        /* What was committed can be found and read back. */
        _cleanup_image_ Image *loaded = NULL;
        err = NULL;
        if (image_store_resolve(s, image->id, &loaded, &err) < 0)
                fuzz_fail("%s: image %s imported but not found: %s", what, image->id,
                          err && err->msg ? err->msg : "?");
        if (!image_store_has_tree(s, image->id))
                fuzz_fail("%s: image %s imported without a tree", what, image->id);
        return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        int scratch = fuzz_scratch("import");
        _cleanup_free_ char *input = NULL, *root = NULL;
        if (asprintf(&input, "%s/input", fuzz_scratch_path()) < 0 ||
            asprintf(&root, "%s/data", fuzz_scratch_path()) < 0)
                fuzz_fail("out of memory");
        {
                _cleanup_close_ int fd = openat(scratch, "input", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
                if (fd < 0 || write_all(fd, data, size) < 0)
                        fuzz_fail("%s: %m", input);
        }

        unsigned fds = fuzz_count_fds();
        {
                _cleanup_image_store_ ImageStore *s = NULL;
                Error *err = NULL;
                if (image_store_open(root, true, STORE_SHARED, &s, &err) < 0)
                        fuzz_fail("%s: %s", root, err && err->msg ? err->msg : "?");

                /* An image the store has already takes another path (only
                 * its names change): import a good one twice. */
                if (import_once(s, input, "import") >= 0)
                        (void) import_once(s, input, "import again");

                check_no_staging(scratch);
                check_blobs(scratch);
        }
        if (fuzz_count_fds() != fds)
                fuzz_fail("image_import() leaked a file descriptor");

        int r = rm_rf_at(scratch, "data");
        if (r < 0)
                fuzz_fail("%s: removing: %s", root, strerror(-r));
        static const char *const allowed[] = { "input", NULL };
        fuzz_scratch_check(allowed);
        return 0;
}
