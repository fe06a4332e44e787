/* SPDX-License-Identifier: Apache-2.0 */
/* layer-stream beyond what test-extract-stream covers: the checks of
 * digest, size and diff_id, the blob it writes, a resumed blob, store-only
 * streams and an abort in the middle. */
#include <fcntl.h>
#include <sys/mman.h>

#include "basic/digest.h"
#include "basic/fs.h"
#include "image/layer-stream.h"
#include "tar-builder.h"

static char scratch[] = "/tmp/test-layer-stream.XXXXXX";

typedef struct Layer {
        char *data;
        size_t size;
        char digest[DIGEST_STRING_SIZE];        /* of data */
        char diff_id[DIGEST_STRING_SIZE];       /* of the tar inside */
} Layer;

static void digest_of(const void *data, size_t size, char ret[DIGEST_STRING_SIZE]) {
        char hex[SHA256_HEX_SIZE];
        sha256_hex_of(data, size, hex);
        digest_from_hex(hex, ret);
}

static void read_all(int fd, char **ret, size_t *ret_size) {
        ASSERT(lseek(fd, 0, SEEK_SET) == 0);
        ASSERT(read_fd(fd, "fd", 64 << 20, ret, ret_size, NULL) >= 0);
}

/* A layer with a few files and one of 3 MiB (several pipe slots), in filter. */
static void make_layer(int filter, Layer *ret) {
        TarBuilder t;
        for (int pass = 0; pass < 2; pass++) {
                tar_begin(&t, pass == 0 ? ARCHIVE_FILTER_NONE : filter);
                tar_dir(&t, "etc");
                tar_file(&t, "etc/hello", "hello\n");
                size_t big = 3 << 20;
                char *b = malloc(big);
                ASSERT(b);
                for (size_t i = 0; i < big; i++)
                        b[i] = (char) ((i * 7919) >> 5);
                tar_write(&t, tar_entry("big", AE_IFREG, 0644), b, big);
                free(b);
                int fd = tar_end(&t);
                char *data;
                size_t size;
                read_all(fd, &data, &size);
                close(fd);
                if (pass == 0) {
                        digest_of(data, size, ret->diff_id);
                        free(data);
                } else {
                        ret->data = data;
                        ret->size = size;
                        digest_of(data, size, ret->digest);
                }
        }
}

static int fresh_tree(void) {
        static int n;
        char name[64];
        snprintf(name, sizeof(name), "%s/t%d", scratch, n++);
        ASSERT(mkdir(name, 0755) == 0);
        int fd = open(name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        ASSERT(fd >= 0);
        return fd;
}

/* Feeds data in pieces of odd sizes; returns what end() returned. */
static int run(const LayerStreamSpec *spec, const void *data, size_t size, Error **err) {
        LayerStream *s = NULL;
        int r = layer_stream_start(spec, &s, err);
        if (r < 0)
                return r;
        for (size_t off = 0, step = 1; off < size; step = step * 3 + 1) {
                size_t n = (step % 200000) + 1 < size - off ? (step % 200000) + 1 : size - off;
                r = layer_stream_feed(s, (const char *) data + off, n, err);
                if (r < 0) {
                        layer_stream_abort(s);
                        return r;
                }
                off += n;
        }
        return layer_stream_end(s, NULL, err);
}

static void check_tree(int root) {
        char *data = NULL;
        size_t size;
        ASSERT(read_file_at(root, "etc/hello", 100, &data, &size, NULL) >= 0);
        ASSERT_STREQ(data, "hello\n");
        free(data);
        struct stat st;
        ASSERT(fstatat(root, "big", &st, 0) == 0);
        ASSERT_EQ_INT(st.st_size, 3 << 20);
}

static void test_good(int filter) {
        Layer l;
        make_layer(filter, &l);
        int root = fresh_tree();
        /* A file on the scratch's file system: O_DIRECT where it takes it. */
        char blob_path[64];
        snprintf(blob_path, sizeof(blob_path), "%s/blob-%d", scratch, filter);
        int blob = open(blob_path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
        ASSERT(blob >= 0);
        LayerStreamSpec spec = {
                .digest = l.digest, .size = (int64_t) l.size, .diff_id = l.diff_id, .blob_fd = blob, .rootfd = root,
        };
        Error *err = NULL;
        int r = run(&spec, l.data, l.size, &err);
        if (r < 0)
                fprintf(stderr, "%s\n", err->msg);
        ASSERT_EQ_INT(r, 0);
        check_tree(root);
        /* The blob holds the bytes fed, once. */
        char *b;
        size_t bsize;
        read_all(blob, &b, &bsize);
        ASSERT_EQ_INT(bsize, l.size);
        ASSERT(memcmp(b, l.data, l.size) == 0);
        free(b);

        /* Resumed: 1/3 in the blob already, the rest fed. */
        int root2 = fresh_tree();
        ASSERT(ftruncate(blob, (off_t) (l.size / 3)) == 0);
        spec.rootfd = root2;
        spec.resume_size = l.size / 3;
        r = run(&spec, l.data + l.size / 3, l.size - l.size / 3, &err);
        ASSERT_EQ_INT(r, 0);
        check_tree(root2);
        read_all(blob, &b, &bsize);
        ASSERT_EQ_INT(bsize, l.size);
        ASSERT(memcmp(b, l.data, l.size) == 0);
        free(b);

        /* Resumed at an aligned offset: the rest with O_DIRECT again. */
        int root3 = fresh_tree();
        size_t at = 3 * 4096;
        ASSERT(ftruncate(blob, (off_t) at) == 0);
        spec.rootfd = root3;
        spec.resume_size = at;
        ASSERT_EQ_INT(run(&spec, l.data + at, l.size - at, &err), 0);
        check_tree(root3);
        read_all(blob, &b, &bsize);
        ASSERT_EQ_INT(bsize, l.size);
        ASSERT(memcmp(b, l.data, l.size) == 0);
        free(b);
        close(root3);

        /* Stored and checked only. */
        spec = (LayerStreamSpec) { .digest = l.digest, .size = -1, .diff_id = l.diff_id, .blob_fd = -1, .rootfd = -1 };
        ASSERT_EQ_INT(run(&spec, l.data, l.size, NULL), 0);

        /* A wrong diff_id, with and without a tree. */
        for (int with_tree = 0; with_tree < 2; with_tree++) {
                spec.diff_id = l.digest;
                if (filter == ARCHIVE_FILTER_NONE)
                        spec.diff_id = "sha256:0000000000000000000000000000000000000000000000000000000000000000";
                spec.rootfd = with_tree ? fresh_tree() : -1;
                err = NULL;
                ASSERT_EQ_INT(run(&spec, l.data, l.size, &err), -EBADMSG);
                ASSERT_CONTAINS(err->msg, l.digest);
                ASSERT_CONTAINS(err->msg, "diff_id");
                error_free(err);
                if (with_tree)
                        close(spec.rootfd);
        }

        /* A flipped byte: refused naming the digest, before anything the
         * decompressor or the tar reader says of it. */
        spec = (LayerStreamSpec) { .digest = l.digest, .size = (int64_t) l.size, .blob_fd = -1, .rootfd = fresh_tree() };
        l.data[l.size / 2] ^= 0x55;
        err = NULL;
        ASSERT_EQ_INT(run(&spec, l.data, l.size, &err), -EBADMSG);
        ASSERT_CONTAINS(err->msg, l.digest);
        ASSERT_CONTAINS(err->msg, "does not match its digest");
        error_free(err);
        l.data[l.size / 2] ^= 0x55;

        /* Truncated, and one byte too many. */
        err = NULL;
        ASSERT_EQ_INT(run(&spec, l.data, l.size - 100, &err), -EBADMSG);
        ASSERT_CONTAINS(err->msg, "truncated or corrupt");
        error_free(err);
        char *longer = malloc(l.size + 1);
        ASSERT(longer);
        memcpy(longer, l.data, l.size);
        longer[l.size] = 0;
        err = NULL;
        ASSERT_EQ_INT(run(&spec, longer, l.size + 1, &err), -EBADMSG);
        ASSERT_CONTAINS(err->msg, "more than the");
        error_free(err);
        free(longer);
        close(spec.rootfd);

        /* Aborted in the middle: the threads stop, nothing hangs. */
        LayerStream *s = NULL;
        spec = (LayerStreamSpec) { .digest = l.digest, .size = -1, .blob_fd = -1, .rootfd = fresh_tree() };
        ASSERT_EQ_INT(layer_stream_start(&spec, &s, NULL), 0);
        ASSERT_EQ_INT(layer_stream_feed(s, l.data, l.size / 2, NULL), 0);
        layer_stream_abort(s);
        close(spec.rootfd);

        close(blob);
        close(root);
        close(root2);
        free(l.data);
}

static void test_none(void) {
        test_good(ARCHIVE_FILTER_NONE);
}
static void test_gzip(void) {
        test_good(ARCHIVE_FILTER_GZIP);
}
static void test_zstd(void) {
        test_good(ARCHIVE_FILTER_ZSTD);
}

static void test_tiny(void) {
        /* Shorter than the bytes that tell the compression: empty layers. */
        char d[DIGEST_STRING_SIZE];
        digest_of("", 0, d);
        int root = fresh_tree();
        LayerStreamSpec spec = { .digest = d, .size = 0, .diff_id = d, .blob_fd = -1, .rootfd = root };
        ASSERT_EQ_INT(run(&spec, "", 0, NULL), 0);
        digest_of("abc", 3, d);
        Error *err = NULL;
        spec.size = 3;
        spec.diff_id = NULL;
        ASSERT_EQ_INT(run(&spec, "abc", 3, &err), -EBADMSG);
        error_free(err);
        close(root);
}

static void remove_scratch(void) {
        (void) rm_rf(scratch);
}

int main(void) {
        ASSERT(mkdtemp(scratch));
        test_cleanup = remove_scratch;
        RUN(test_none);
        RUN(test_gzip);
        RUN(test_zstd);
        RUN(test_tiny);
        remove_scratch();
        return 0;
}
