/* SPDX-License-Identifier: Apache-2.0 */
#include <sys/stat.h>
#include <sys/wait.h>

#include "basic/digest.h"
#include "basic/fs.h"
#include "basic/sha256.h"
#include "basic/strv.h"
#include "image/image-import.h"
#include "image/image-store.h"
#include "tar-builder.h"

static char scratch[] = "/tmp/test-image-store-XXXXXX";
static int scratch_fd = -1;

static void write_blob(int layout, const void *data, size_t size, char ret_digest[80]) {
        char hex[SHA256_HEX_SIZE], path[128];
        sha256_hex_of(data, size, hex);
        snprintf(ret_digest, 80, "sha256:%s", hex);
        snprintf(path, sizeof(path), "blobs/sha256/%s", hex);
        int fd = openat(layout, path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        ASSERT(fd >= 0);
        ASSERT(write(fd, data, size) == (ssize_t) size);
        close(fd);
}

static void write_text(int dirfd, const char *path, const char *text) {
        int fd = openat(dirfd, path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        ASSERT(fd >= 0);
        ASSERT(write(fd, text, strlen(text)) == (ssize_t) strlen(text));
        close(fd);
}

typedef struct Layout {
        char path[PATH_MAX];
        char manifest[80], config[80], layer[80];
        size_t layer_size;
} Layout;

/* An OCI image layout with one gzip layer holding "hello" with the given
 * content, made by hand so every byte and digest is under the test's control. */
static void make_layout(const char *name, const char *content, Layout *ret) {
        snprintf(ret->path, sizeof(ret->path), "%s/%s", scratch, name);
        ASSERT(mkdir_p(ret->path, 0755) == 0);
        int layout = open(ret->path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        ASSERT(layout >= 0);
        ASSERT(mkdirat(layout, "blobs", 0755) == 0 && mkdirat(layout, "blobs/sha256", 0755) == 0);

        TarBuilder t;
        tar_begin(&t, ARCHIVE_FILTER_GZIP);
        tar_dir(&t, "etc");
        tar_file(&t, "etc/hello", content);
        int fd = tar_end(&t);
        struct stat st;
        ASSERT(fstat(fd, &st) == 0);
        char *buf = malloc((size_t) st.st_size);
        ASSERT(buf && read(fd, buf, (size_t) st.st_size) == st.st_size);
        close(fd);
        ret->layer_size = (size_t) st.st_size;
        write_blob(layout, buf, ret->layer_size, ret->layer);
        free(buf);

        char *config = NULL;
        ASSERT(asprintf(&config,
                        "{\"architecture\":\"amd64\",\"os\":\"linux\",\"config\":{\"Entrypoint\":[\"/bin/sh\"],"
                        "\"Cmd\":[\"-c\",\"cat /etc/hello\"],\"Env\":[\"A=b\"],\"WorkingDir\":\"/etc\","
                        "\"User\":\"app:staff\",\"ExposedPorts\":{\"80/tcp\":{}}},"
                        "\"rootfs\":{\"type\":\"layers\",\"diff_ids\":[]},\"x-content\":\"%.*s\"}",
                        (int) strcspn(content, "\n"), content) > 0);
        write_blob(layout, config, strlen(config), ret->config);

        char *manifest = NULL;
        ASSERT(asprintf(&manifest,
                        "{\"schemaVersion\":2,\"mediaType\":\"application/vnd.oci.image.manifest.v1+json\","
                        "\"config\":{\"mediaType\":\"application/vnd.oci.image.config.v1+json\",\"digest\":\"%s\",\"size\":%zu},"
                        "\"layers\":[{\"mediaType\":\"application/vnd.oci.image.layer.v1.tar+gzip\",\"digest\":\"%s\",\"size\":%zu}]}",
                        ret->config, strlen(config), ret->layer, ret->layer_size) > 0);
        write_blob(layout, manifest, strlen(manifest), ret->manifest);

        char *index = NULL;
        ASSERT(asprintf(&index,
                        "{\"schemaVersion\":2,\"manifests\":[{\"mediaType\":\"application/vnd.oci.image.manifest.v1+json\","
                        "\"digest\":\"%s\",\"size\":%zu,\"annotations\":{\"org.opencontainers.image.ref.name\":\"example.com/%s:1\"}}]}",
                        ret->manifest, strlen(manifest), name) > 0);
        write_text(layout, "index.json", index);
        write_text(layout, "oci-layout", "{\"imageLayoutVersion\":\"1.0.0\"}");
        free(config);
        free(manifest);
        free(index);
        close(layout);
}

static ImageStore *open_store(const char *name, StoreAccess access) {
        char path[PATH_MAX];
        snprintf(path, sizeof(path), "%s/%s", scratch, name);
        ImageStore *s = NULL;
        Error *err = NULL;
        int r = image_store_open(path, true, access, &s, &err);
        if (r < 0)
                fprintf(stderr, "%s\n", err->msg);
        ASSERT(r == 0);
        return s;
}

static int count_entries(int dirfd) {
        int fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        DIR *d = fdopendir(fd);
        ASSERT(d);
        int n = 0;
        struct dirent *de;
        while ((de = readdir(d)))
                n += !streq(de->d_name, ".") && !streq(de->d_name, "..");
        closedir(d);
        return n;
}

static void assert_store_empty(ImageStore *s) {
        ASSERT_EQ_INT(count_entries(s->db_fd), 0);
        ASSERT_EQ_INT(count_entries(s->blobs_fd), 0);
        ASSERT_EQ_INT(count_entries(s->tree_fd), 0);
        ASSERT_EQ_INT(count_entries(s->tmp_fd), 0);
}

static Image *import_ok(ImageStore *s, const char *path, const char *name) {
        ImportOptions o = { .name = name };
        Image *im = NULL;
        Error *err = NULL;
        int r = image_import(s, path, &o, &im, &err);
        if (r < 0)
                fprintf(stderr, "import %s: %s\n", path, err->msg);
        ASSERT(r == 0);
        return im;
}

static void test_import(void) {
        Layout l;
        make_layout("one", "hello one\n", &l);
        ImageStore *s = open_store("store-import", STORE_SHARED);
        Image *im = import_ok(s, l.path, NULL);
        ASSERT_STREQ(im->id, l.manifest);
        ASSERT_STREQ(im->config, l.config);
        ASSERT_EQ_INT(im->n_layers, 1);
        ASSERT_STREQ(im->layers[0].digest, l.layer);
        ASSERT(strv_contains(im->names, "example.com/one:1"));
        ASSERT_STREQ(im->app.exec[0], "/bin/sh");
        ASSERT_STREQ(im->app.exec[2], "cat /etc/hello");
        ASSERT_STREQ(im->app.user, "app");
        ASSERT_STREQ(im->app.group, "staff");
        ASSERT_STREQ(im->app.working_dir, "/etc");
        ASSERT_STREQ(im->app.ports[0], "80/tcp");

        char path[256];
        snprintf(path, sizeof(path), "%s/rootfs/etc/hello", digest_hex(im->id));
        char *content = NULL;
        ASSERT(read_file_at(s->tree_fd, path, 1024, &content, NULL, NULL) == 0);
        ASSERT_STREQ(content, "hello one\n");
        free(content);
        ASSERT_EQ_INT(count_entries(s->blobs_fd), 3);
        ASSERT_EQ_INT(count_entries(s->tmp_fd), 0);

        /* The same image again: same id, same record, nothing new. */
        char *before = NULL, *after = NULL, rec[128];
        snprintf(rec, sizeof(rec), "%s.json", digest_hex(im->id));
        ASSERT(read_file_at(s->db_fd, rec, 1 << 20, &before, NULL, NULL) == 0);
        Image *again = import_ok(s, l.path, NULL);
        ASSERT_STREQ(again->id, im->id);
        ASSERT(read_file_at(s->db_fd, rec, 1 << 20, &after, NULL, NULL) == 0);
        ASSERT_STREQ(after, before);
        ASSERT_EQ_INT(count_entries(s->blobs_fd), 3);
        ASSERT_EQ_INT(count_entries(s->tree_fd), 1);
        ASSERT_EQ_INT(count_entries(s->tmp_fd), 0);
        free(before);
        free(after);
        image_free(again);
        image_free(im);
        image_store_free(s);
}

static void flip_byte(const char *layout, const char *digest, off_t offset) {
        char path[PATH_MAX + 128];
        snprintf(path, sizeof(path), "%s/blobs/sha256/%s", layout, digest + 7);
        int fd = open(path, O_RDWR | O_CLOEXEC);
        ASSERT(fd >= 0);
        char c;
        ASSERT(pread(fd, &c, 1, offset) == 1);
        c ^= 0x20;
        ASSERT(pwrite(fd, &c, 1, offset) == 1);
        close(fd);
}

static void test_corrupt_and_truncated(void) {
        Layout l;
        make_layout("corrupt", "corrupt me\n", &l);
        flip_byte(l.path, l.layer, 100);
        ImageStore *s = open_store("store-corrupt", STORE_SHARED);
        Error *err = NULL;
        ASSERT_EQ_INT(image_import(s, l.path, NULL, NULL, &err), -EBADMSG);
        ASSERT_CONTAINS(err->msg, l.layer);
        ASSERT_CONTAINS(err->msg, "does not match its digest");
        error_free(err);
        assert_store_empty(s); /* nothing half-imported is visible */

        Layout t;
        make_layout("truncated", "truncate me\n", &t);
        char path[PATH_MAX + 128];
        snprintf(path, sizeof(path), "%s/blobs/sha256/%s", t.path, t.layer + 7);
        ASSERT(truncate(path, (off_t) t.layer_size / 2) == 0);
        err = NULL;
        ASSERT_EQ_INT(image_import(s, t.path, NULL, NULL, &err), -EBADMSG);
        ASSERT_CONTAINS(err->msg, t.layer);
        ASSERT_CONTAINS(err->msg, "truncated");
        error_free(err);
        assert_store_empty(s);

        /* A manifest with a field of the wrong type names the field. */
        Layout m;
        make_layout("badfield", "x\n", &m);
        snprintf(path, sizeof(path), "%s/index.json", m.path);
        int fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC);
        ASSERT(fd >= 0);
        const char *bad = "{\"schemaVersion\":2,\"manifests\":[{\"digest\":42,\"size\":1}]}";
        ASSERT(write(fd, bad, strlen(bad)) == (ssize_t) strlen(bad));
        close(fd);
        err = NULL;
        ASSERT_EQ_INT(image_import(s, m.path, NULL, NULL, &err), -EBADMSG);
        ASSERT_CONTAINS(err->msg, "manifests[0]");
        ASSERT_CONTAINS(err->msg, "\"digest\"");
        error_free(err);
        assert_store_empty(s);
        image_store_free(s);
}

static void test_names_resolve_rm_gc(void) {
        Layout a, b;
        make_layout("name-a", "a\n", &a);
        make_layout("name-b", "b\n", &b);
        ImageStore *s = open_store("store-names", STORE_SHARED);
        Image *ia = import_ok(s, a.path, "shared");
        Image *ib = import_ok(s, b.path, "shared:latest"); /* the name moves to b */

        Image *r = NULL;
        Error *err = NULL;
        ASSERT_EQ_INT(image_store_resolve(s, "shared", &r, NULL), 0);
        ASSERT_STREQ(r->id, ib->id);
        image_free(r);
        ASSERT_EQ_INT(image_store_resolve(s, "example.com/name-a:1", &r, NULL), 0);
        ASSERT_STREQ(r->id, ia->id);
        ASSERT(!strv_contains(r->names, "shared:latest"));
        image_free(r);
        char prefix[16];
        snprintf(prefix, sizeof(prefix), "%.10s", digest_hex(ia->id));
        ASSERT_EQ_INT(image_store_resolve(s, prefix, &r, NULL), 0);
        ASSERT_STREQ(r->id, ia->id);
        image_free(r);
        ASSERT_EQ_INT(image_store_resolve(s, ia->id, &r, NULL), 0);
        image_free(r);
        ASSERT_EQ_INT(image_store_resolve(s, "nope", &r, &err), -ENOENT);
        ASSERT_CONTAINS(err->msg, "nope");
        error_free(err);

        ImageRemoval rm = {};
        ASSERT_EQ_INT(image_store_remove(s, "example.com/name-a:1", false, &rm, NULL), 0);
        ASSERT_STREQ(rm.id, ia->id);
        ASSERT(rm.image_removed);
        image_removal_done(&rm);
        ASSERT_EQ_INT(image_store_resolve(s, ia->id, &r, NULL), -ENOENT);
        image_store_free(s);

        /* gc frees a's layer, config and tree, keeps b's, and removes stale staging. */
        s = open_store("store-names", STORE_EXCLUSIVE);
        ASSERT(mkdirat(s->tmp_fd, "import-crashed", 0700) == 0);
        ImageGcStats st;
        ASSERT_EQ_INT(image_store_gc(s, NULL, &st, NULL), 0);
        ASSERT_EQ_INT(st.blobs, 3);
        ASSERT_EQ_INT(st.trees, 1);
        ASSERT_EQ_INT(st.leftovers, 1);
        ASSERT(image_store_has_blob(s, b.layer));
        ASSERT(image_store_has_blob(s, b.config));
        ASSERT(image_store_has_blob(s, b.manifest));
        ASSERT(!image_store_has_blob(s, a.layer));
        ASSERT(image_store_has_tree(s, ib->id));
        ASSERT(!image_store_has_tree(s, ia->id));
        ASSERT_EQ_INT(image_store_gc(s, NULL, &st, NULL), 0);
        ASSERT_EQ_INT(st.blobs + st.trees + st.leftovers, 0);
        image_free(ia);
        image_free(ib);
        image_store_free(s);
}

static void test_concurrent_imports_and_gc(void) {
        Layout l[3];
        make_layout("race-0", "zero\n", &l[0]);
        make_layout("race-1", "one\n", &l[1]);
        make_layout("race-2", "two\n", &l[2]);
        char data[PATH_MAX];
        snprintf(data, sizeof(data), "%s/store-race", scratch);

        for (int round = 0; round < 5; round++) {
                pid_t pids[8];
                int n = 0;
                for (int i = 0; i < 6; i++) {
                        pid_t pid = fork();
                        ASSERT(pid >= 0);
                        if (pid == 0) {
                                ImageStore *s = NULL;
                                if (image_store_open(data, true, STORE_SHARED, &s, NULL) < 0 ||
                                    image_import(s, l[i % 3].path, NULL, NULL, NULL) < 0)
                                        _exit(1);
                                image_store_free(s);
                                _exit(0);
                        }
                        pids[n++] = pid;
                }
                pid_t pid = fork();
                ASSERT(pid >= 0);
                if (pid == 0) {
                        /* gc and rm racing the imports */
                        for (int k = 0; k < 3; k++) {
                                ImageStore *s = NULL;
                                if (image_store_open(data, true, STORE_EXCLUSIVE, &s, NULL) < 0 ||
                                    image_store_gc(s, NULL, NULL, NULL) < 0)
                                        _exit(1);
                                image_store_free(s);
                                if (image_store_open(data, true, STORE_SHARED, &s, NULL) < 0)
                                        _exit(1);
                                (void) image_store_remove(s, "example.com/race-1:1", false, NULL, NULL);
                                image_store_free(s);
                        }
                        _exit(0);
                }
                pids[n++] = pid;
                for (int i = 0; i < n; i++) {
                        int status;
                        ASSERT(waitpid(pids[i], &status, 0) == pids[i]);
                        ASSERT(WIFEXITED(status) && WEXITSTATUS(status) == 0);
                }

                /* Every image still listed is whole: its blobs and tree exist. */
                ImageStore *s = open_store("store-race", STORE_EXCLUSIVE);
                Image **list;
                size_t count;
                ASSERT_EQ_INT(image_store_list(s, &list, &count, NULL), 0);
                ASSERT(count >= 2 && count <= 3);
                for (size_t i = 0; i < count; i++) {
                        ASSERT(image_store_has_tree(s, list[i]->id));
                        ASSERT(image_store_has_blob(s, list[i]->manifest));
                        ASSERT(image_store_has_blob(s, list[i]->config));
                        ASSERT(image_store_has_blob(s, list[i]->layers[0].digest));
                }
                image_list_free(list, count);
                ASSERT_EQ_INT(count_entries(s->tmp_fd), 0);
                image_store_free(s);
        }
}

/* gc while writers run: only the staging of dead writers goes. */
static void test_gc_beside_live_writers(void) {
        ImageStore *writer = open_store("store-live", STORE_SHARED);
        char live[32];
        int live_fd = image_store_make_staging(writer, "import-", live);
        ASSERT(live_fd >= 0);
        ASSERT(mkdirat(live_fd, "blobs", 0700) == 0);
        /* A dead writer's staging: a directory nobody holds locked, with a
         * file of 64 KiB (freed: its blocks and the directory's). */
        ASSERT(mkdirat(writer->tmp_fd, "import-dead", 0700) == 0);
        int fd = openat(writer->tmp_fd, "import-dead/blob", O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
        ASSERT(fd >= 0);
        static const char block[65536] = { 1 };
        ASSERT(write(fd, block, sizeof(block)) == (ssize_t) sizeof(block));
        ASSERT(fsync(fd) == 0);
        close(fd);
        /* One being made (".new-*") is left alone too. */
        ASSERT(mkdirat(writer->tmp_fd, ".new-0000000000000000", 0700) == 0);

        ImageStore *gc = open_store("store-live", STORE_GC);
        ASSERT(!gc->exclusive);
        ImageGcStats st;
        ASSERT_EQ_INT(image_store_gc(gc, NULL, &st, NULL), 0);
        ASSERT(st.partial);
        ASSERT_EQ_INT(st.leftovers, 1);
        ASSERT_EQ_INT(st.busy, 1);
        ASSERT(st.bytes >= sizeof(block));
        ASSERT(faccessat(writer->tmp_fd, "import-dead", F_OK, AT_SYMLINK_NOFOLLOW) < 0 && errno == ENOENT);
        ASSERT(faccessat(writer->tmp_fd, live, F_OK, AT_SYMLINK_NOFOLLOW) == 0);
        ASSERT(faccessat(writer->tmp_fd, ".new-0000000000000000", F_OK, AT_SYMLINK_NOFOLLOW) == 0);
        image_store_free(gc);

        /* The writer dies (its lock goes with its fd): its staging is a
         * leftover, even while the store is still shared. */
        close(live_fd);
        gc = open_store("store-live", STORE_GC);
        ASSERT(!gc->exclusive);
        ASSERT_EQ_INT(image_store_gc(gc, NULL, &st, NULL), 0);
        ASSERT_EQ_INT(st.leftovers, 1);
        ASSERT_EQ_INT(st.busy, 0);
        image_store_free(gc);
        image_store_free(writer);

        /* Nobody else: gc has the store to itself and takes the rest. */
        gc = open_store("store-live", STORE_GC);
        ASSERT(gc->exclusive);
        ASSERT_EQ_INT(image_store_gc(gc, NULL, &st, NULL), 0);
        ASSERT(!st.partial);
        ASSERT_EQ_INT(st.leftovers, 1);
        ASSERT_EQ_INT(count_entries(gc->tmp_fd), 0);
        image_store_free(gc);
}

static void remove_scratch(void) {
        (void) rm_rf(scratch);
}

int main(void) {
        ASSERT(mkdtemp(scratch));
        test_cleanup = remove_scratch;
        scratch_fd = open(scratch, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        ASSERT(scratch_fd >= 0);
        RUN(test_import);
        RUN(test_corrupt_and_truncated);
        RUN(test_names_resolve_rm_gc);
        RUN(test_concurrent_imports_and_gc);
        RUN(test_gc_beside_live_writers);
        close(scratch_fd);
        ASSERT(rm_rf(scratch) == 0);
        return 0;
}
