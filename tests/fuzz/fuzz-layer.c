/* SPDX-License-Identifier: Apache-2.0 */
/* layer_apply(): a tar layer, possibly compressed, straight from an image.
 * It must never create, change or follow anything outside the tree it
 * extracts into, whatever the names, links, whiteouts and entry order. The
 * target checks that with a sentinel directory next to the tree (see
 * fuzz.h), and that no descriptor leaks. */
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include "basic/fs.h"
#include "fuzz.h"
#include "basic/digest.h"
#include "image/extract.h"
#include "image/layer-stream.h"

static int layer_fd = -1;

/* An empty tree/ for the next input. rm_rf_at() never follows symlinks and
 * never leaves the file system, so a hostile tree cannot make the cleanup
 * itself reach outside. */
static int tree_reset(int scratch) {
        int r = rm_rf_at(scratch, "tree");
        if (r < 0)
                fuzz_fail("%s/tree: removing: %s", fuzz_scratch_path(), strerror(-r));
        if (mkdirat(scratch, "tree", 0755) < 0)
                fuzz_fail("%s/tree: %m", fuzz_scratch_path());
        int fd = openat(scratch, "tree", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                fuzz_fail("%s/tree: %m", fuzz_scratch_path());
        return fd;
}

static void apply(int treefd, const LayerOptions *opts, const char *what) {
        if (lseek(layer_fd, 0, SEEK_SET) < 0)
                fuzz_fail("memfd: %m");
        unsigned fds = fuzz_count_fds();
        Error *err = NULL;
        (void) layer_apply(treefd, layer_fd, opts, what, &err);
        fuzz_error_done("layer_apply", err);
        if (fuzz_count_fds() != fds)
                fuzz_fail("%s: layer_apply() leaked a file descriptor", what);

        static const char *const allowed[] = { "tree", NULL };
        fuzz_scratch_check(allowed);
        /* The tree itself is still the directory we gave it. */
        struct stat st;
        if (fstatat(FUZZ_SCRATCH_FD, "tree", &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISDIR(st.st_mode))
                fuzz_fail("%s/tree: replaced", fuzz_scratch_path());
}

/* The same input through layer-stream, as import and pull apply layers:
 * fed in pieces, decompressed and extracted on threads of their own. Its
 * digest is right, so what it does is what the content makes it do. */
static void apply_streamed(int treefd, const uint8_t *data, size_t size) {
        char hex[SHA256_HEX_SIZE], digest[DIGEST_STRING_SIZE];
        sha256_hex_of(data, size, hex);
        digest_from_hex(hex, digest);
        unsigned fds = fuzz_count_fds();
        LayerStreamSpec spec = {
                .digest = digest, .size = (int64_t) size, .blob_fd = -1, .rootfd = treefd,
                .layer = &(const LayerOptions) { .whiteouts = true },
        };
        Error *err = NULL;
        LayerStream *s = NULL;
        int r = layer_stream_start(&spec, &s, &err);
        for (size_t off = 0, step = 1; r >= 0 && off < size; step = step * 5 + 3) {
                size_t n = step % 4093 + 1 < size - off ? step % 4093 + 1 : size - off;
                r = layer_stream_feed(s, data + off, n, &err);
                off += n;
        }
        if (r >= 0)
                (void) layer_stream_end(s, NULL, &err);
        else
                layer_stream_abort(s);
        fuzz_error_done("layer_stream", err);
        if (fuzz_count_fds() != fds)
                fuzz_fail("layer (stream): leaked a file descriptor");
        static const char *const allowed[] = { "tree", NULL };
        fuzz_scratch_check(allowed);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        int scratch = fuzz_scratch("layer");
        if (layer_fd < 0) {
                layer_fd = memfd_create("fuzz-layer", MFD_CLOEXEC);
                if (layer_fd < 0)
                        fuzz_fail("memfd_create: %m");
        }
        if (ftruncate(layer_fd, 0) < 0 || lseek(layer_fd, 0, SEEK_SET) < 0 || write_all(layer_fd, data, size) < 0)
                fuzz_fail("memfd: %m");

        _cleanup_close_ int treefd = tree_reset(scratch);

        /* Both ways images use it: an ACI's tree below "rootfs" first, then
         * the same input as an OCI layer with whiteouts on top of it. The
         * second sees the first as its lower layer, which is where symlinks
         * planted by a lower layer meet the names of an upper one, and where
         * whiteouts and opaque markers have something to remove. */
        apply(treefd, &(const LayerOptions) { .subdir = "rootfs" }, "layer (ACI)");
        apply(treefd, &(const LayerOptions) { .whiteouts = true }, "layer (OCI)");
        apply_streamed(treefd, data, size);
        return 0;
}
