/* SPDX-License-Identifier: Apache-2.0 */
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "basic/fs.h"
#include "basic/digest.h"
#include "basic/warn.h"
#include "image/extract.h"
#include "image/layer-stream.h"
#include "tar-builder.h"

/* Each test works in a scratch directory holding the target tree and, beside
 * it, "outside/sentinel": the host data a hostile layer must never reach. */
static char scratch[] = "/tmp/test-extract-XXXXXX";
static int scratch_fd = -1;

static int fresh_tree(void) {
        ASSERT(rm_rf_at(scratch_fd, "tree") == 0);
        ASSERT(mkdirat(scratch_fd, "tree", 0755) == 0);
        int fd = openat(scratch_fd, "tree", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        ASSERT(fd >= 0);
        return fd;
}

static void assert_outside_untouched(void) {
        /* The scratch dir holds only tree/ and outside/, outside/ only the sentinel. */
        DIR *d = opendir(scratch);
        ASSERT(d);
        struct dirent *de;
        while ((de = readdir(d)))
                if (!streq(de->d_name, ".") && !streq(de->d_name, "..") && !streq(de->d_name, "tree") &&
                    !streq(de->d_name, "outside")) {
                        fprintf(stderr, "unexpected %s/%s\n", scratch, de->d_name);
                        ASSERT(!"a layer created something beside the tree");
                }
        closedir(d);
        char path[PATH_MAX];
        snprintf(path, sizeof(path), "%s/outside", scratch);
        d = opendir(path);
        ASSERT(d);
        int n = 0;
        while ((de = readdir(d)))
                if (!streq(de->d_name, ".") && !streq(de->d_name, ".."))
                        ASSERT(streq(de->d_name, "sentinel") && ++n == 1);
        closedir(d);
        ASSERT_EQ_INT(n, 1);
        struct stat st;
        snprintf(path, sizeof(path), "%s/outside/sentinel", scratch);
        ASSERT(lstat(path, &st) == 0);
        ASSERT(S_ISREG(st.st_mode));
        ASSERT_EQ_INT(st.st_nlink, 1);          /* no hard link was made to it */
        ASSERT_EQ_INT(st.st_mode & 07777, 0600);
        char buf[64] = "";
        FILE *f = fopen(path, "re");
        ASSERT(f && fgets(buf, sizeof(buf), f));
        fclose(f);
        ASSERT_STREQ(buf, "precious\n");
}

#ifdef EXTRACT_VIA_STREAM
/* The stream names the layer by its digest too: "layer test sha256:...: why". */
#define ASSERT_MSG(msg, what, rest)                                  \
        do {                                                         \
                ASSERT(strncmp((msg), what " sha256:", strlen(what " sha256:")) == 0); \
                ASSERT_STREQ((msg) + strlen(what " sha256:") + 64, rest); \
        } while (0)
/* Built a second time as test-extract-stream: every case goes through
 * layer-stream (hashing, its threads, a tar fed in pieces of odd sizes),
 * which must keep every rule layer_apply() keeps. */
static int apply(int rootfd, int layer_fd, const LayerOptions *opts, Error **err) {
        char *data = NULL;
        size_t size = 0;
        ASSERT(lseek(layer_fd, 0, SEEK_SET) == 0);
        ASSERT(read_fd(layer_fd, "layer", 64 << 20, &data, &size, NULL) >= 0);
        close(layer_fd);
        char hex[SHA256_HEX_SIZE], digest[DIGEST_STRING_SIZE];
        sha256_hex_of(data, size, hex);
        digest_from_hex(hex, digest);
        LayerStreamSpec spec = {
                .what = "layer test", .digest = digest, .size = (int64_t) size, .blob_fd = -1, .rootfd = rootfd,
                .layer = opts,
        };
        LayerStream *s = NULL;
        int r = layer_stream_start(&spec, &s, err);
        static const size_t steps[] = { 7, 4096, 100003, 1, 65536 };
        for (size_t off = 0, i = 0; r >= 0 && off < size; i++) {
                size_t n = steps[i % ELEMENTSOF(steps)] < size - off ? steps[i % ELEMENTSOF(steps)] : size - off;
                r = layer_stream_feed(s, data + off, n, err);
                off += n;
        }
        if (r >= 0)
                r = layer_stream_end(s, NULL, err);
        else
                layer_stream_abort(s);
        free(data);
        return r;
}
#else
#define ASSERT_MSG(msg, what, rest) ASSERT_STREQ((msg), what rest)
static int apply(int rootfd, int layer_fd, const LayerOptions *opts, Error **err) {
        int r = layer_apply(rootfd, layer_fd, opts, "layer test", err);
        close(layer_fd);
        return r;
}
#endif

static const LayerOptions oci = { .whiteouts = true };

static char *read_at(int dirfd, const char *path) {
        char *data = NULL;
        return read_file_at(dirfd, path, 1 << 20, &data, NULL, NULL) < 0 ? NULL : data;
}

static void test_dotdot_refused(void) {
        int root = fresh_tree();
        TarBuilder t;
        tar_begin(&t, ARCHIVE_FILTER_NONE);
        tar_file(&t, "ok", "fine");
        tar_file(&t, "../outside/sentinel", "overwritten");
        Error *err = NULL;
        ASSERT_EQ_INT(apply(root, tar_end(&t), &oci, &err), -EBADMSG);
        ASSERT_CONTAINS(err->msg, "layer test");
        ASSERT_CONTAINS(err->msg, "../outside/sentinel");
        ASSERT_CONTAINS(err->msg, "leaves the image");
        error_free(err);
        assert_outside_untouched();
        close(root);
}

static void test_absolute_neutralised(void) {
        int root = fresh_tree();
        char abs[PATH_MAX];
        snprintf(abs, sizeof(abs), "%s/outside/sentinel", scratch);
        TarBuilder t;
        tar_begin(&t, ARCHIVE_FILTER_NONE);
        tar_file(&t, abs, "overwritten");
        ASSERT_EQ_INT(apply(root, tar_end(&t), &oci, NULL), 0);
        assert_outside_untouched();
        /* It landed inside the tree, at the same path made relative. */
        _cleanup_free_ char *in = read_at(root, abs + 1);
        ASSERT_STREQ(in, "overwritten");
        close(root);
}

static void test_symlinked_parent_contained(void) {
        char outside[PATH_MAX];
        snprintf(outside, sizeof(outside), "%s/outside", scratch);
        const char *targets[] = { outside, "../../../../../../..", "../outside", "/" };
        for (size_t i = 0; i < ELEMENTSOF(targets); i++) {
                int root = fresh_tree();
                TarBuilder t;
                tar_begin(&t, ARCHIVE_FILTER_NONE);
                tar_symlink(&t, "evil", targets[i]);
                tar_file(&t, "evil/sentinel", "overwritten");
                tar_file(&t, "evil/pwned", "pwned");
                Error *err = NULL;
                int r = apply(root, tar_end(&t), &oci, &err);
                /* Resolved with the tree as root: either it fails (the target
                 * does not exist in the tree) or it lands inside the tree. */
                if (r == 0) {
                        _cleanup_free_ char *p = read_at(root, "pwned");
                        _cleanup_free_ char *q = read_at(root, "outside/pwned");
                        ASSERT(p || q);
                } else
                        ASSERT_CONTAINS(err->msg, "evil/sentinel");
                error_free(err);
                assert_outside_untouched();
                close(root);
        }
}

static void test_symlinked_parent_in_tree(void) {
        /* The honest use: /lib -> usr/lib in one layer, files through it later. */
        int root = fresh_tree();
        TarBuilder t;
        tar_begin(&t, ARCHIVE_FILTER_NONE);
        tar_dir(&t, "usr");
        tar_dir(&t, "usr/lib");
        tar_symlink(&t, "lib", "usr/lib");
        tar_symlink(&t, "lib64", "/usr/lib");
        tar_file(&t, "lib/libc.so", "libc");
        tar_file(&t, "lib64/ld.so", "ld");
        ASSERT_EQ_INT(apply(root, tar_end(&t), &oci, NULL), 0);
        _cleanup_free_ char *a = read_at(root, "usr/lib/libc.so");
        _cleanup_free_ char *b = read_at(root, "usr/lib/ld.so");
        ASSERT_STREQ(a, "libc");
        ASSERT_STREQ(b, "ld");
        char target[64] = "";
        ASSERT(readlinkat(root, "lib64", target, sizeof(target) - 1) > 0);
        ASSERT_STREQ(target, "/usr/lib");
        assert_outside_untouched();
        close(root);
}

static void test_file_replaces_symlink(void) {
        /* A file entry at a name that is a symlink must not write through it. */
        int root = fresh_tree();
        char sentinel[PATH_MAX];
        snprintf(sentinel, sizeof(sentinel), "%s/outside/sentinel", scratch);
        TarBuilder t;
        tar_begin(&t, ARCHIVE_FILTER_NONE);
        tar_symlink(&t, "link", sentinel);
        tar_file(&t, "link", "replaced");
        tar_symlink(&t, "dirlink", sentinel);
        tar_dir(&t, "dirlink");
        ASSERT_EQ_INT(apply(root, tar_end(&t), &oci, NULL), 0);
        struct stat st;
        ASSERT(fstatat(root, "link", &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode));
        ASSERT(fstatat(root, "dirlink", &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode));
        _cleanup_free_ char *c = read_at(root, "link");
        ASSERT_STREQ(c, "replaced");
        assert_outside_untouched();
        close(root);
}

static void test_hardlinks(void) {
        char sentinel[PATH_MAX], linkdir[PATH_MAX];
        snprintf(sentinel, sizeof(sentinel), "%s/outside/sentinel", scratch);
        snprintf(linkdir, sizeof(linkdir), "%s/outside", scratch);
        struct {
                const char *target;
                int expect;
        } cases[] = {
                { "../outside/sentinel", -EBADMSG },    /* ".." refused */
                { sentinel, -ENOENT },                  /* absolute: looked up in the tree */
                { "d/sentinel", -ENOENT },              /* through a symlink to the outside */
        };
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                int root = fresh_tree();
                TarBuilder t;
                tar_begin(&t, ARCHIVE_FILTER_NONE);
                tar_symlink(&t, "d", linkdir);
                tar_hardlink(&t, "hl", cases[i].target);
                Error *err = NULL;
                ASSERT_EQ_INT(apply(root, tar_end(&t), &oci, &err), cases[i].expect);
                ASSERT_CONTAINS(err->msg, "hard link");
                error_free(err);
                assert_outside_untouched();
                close(root);
        }

        /* Inside the tree hard links work and share the inode. */
        int root = fresh_tree();
        TarBuilder t;
        tar_begin(&t, ARCHIVE_FILTER_NONE);
        tar_file(&t, "bin/busybox", "bb");
        tar_hardlink(&t, "bin/sh", "bin/busybox");
        tar_hardlink(&t, "sbin/init", "/bin/busybox");
        ASSERT_EQ_INT(apply(root, tar_end(&t), &oci, NULL), 0);
        struct stat a, b, c;
        ASSERT(fstatat(root, "bin/busybox", &a, 0) == 0);
        ASSERT(fstatat(root, "bin/sh", &b, 0) == 0);
        ASSERT(fstatat(root, "sbin/init", &c, 0) == 0);
        ASSERT(a.st_ino == b.st_ino && a.st_ino == c.st_ino);
        ASSERT_EQ_INT(a.st_nlink, 3);
        close(root);
}

static void test_replaced_parent_is_not_reused(void) {
        /* After a directory is replaced by a symlink, entries below the name
         * must go through the symlink resolved in the tree, not into a
         * directory fd kept from before. */
        int root = fresh_tree();
        char outside[PATH_MAX];
        snprintf(outside, sizeof(outside), "%s/outside", scratch);
        TarBuilder t;
        tar_begin(&t, ARCHIVE_FILTER_NONE);
        tar_dir(&t, "q");
        tar_file(&t, "q/a", "a");
        tar_symlink(&t, "q", "/");
        tar_file(&t, "q/b", "b");
        tar_dir(&t, "p");
        tar_file(&t, "p/a", "a");
        tar_file(&t, "p", "now a file");
        tar_file(&t, "p2/b", "b");
        ASSERT_EQ_INT(apply(root, tar_end(&t), &oci, NULL), 0);
        _cleanup_free_ char *b = read_at(root, "b");
        ASSERT_STREQ(b, "b");                    /* q/b went to the tree's root */
        _cleanup_free_ char *p = read_at(root, "p");
        ASSERT_STREQ(p, "now a file");
        ASSERT(faccessat(root, "q/a", F_OK, AT_SYMLINK_NOFOLLOW) < 0);
        assert_outside_untouched();
        close(root);
}

static void test_whiteouts(void) {
        int root = fresh_tree();
        TarBuilder t;
        tar_begin(&t, ARCHIVE_FILTER_GZIP);
        tar_file(&t, "a/1", "1");
        tar_file(&t, "a/2", "2");
        tar_file(&t, "b/dir/old", "old");
        tar_file(&t, "b/dir/sub/deep", "deep");
        tar_file(&t, "c", "c");
        tar_file(&t, "e/lower", "lower");
        ASSERT_EQ_INT(apply(root, tar_end(&t), &oci, NULL), 0);

        tar_begin(&t, ARCHIVE_FILTER_ZSTD);
        tar_file(&t, "a/.wh.1", "");
        tar_file(&t, ".wh.c", "");
        tar_file(&t, "b/dir/new", "new");        /* before the opaque marker */
        tar_file(&t, "b/dir/.wh..wh..opq", "");
        tar_file(&t, "d/x", "x");
        tar_file(&t, "d/.wh.x", "");             /* same layer: does not hide d/x */
        tar_file(&t, "e/.wh.lower", "");
        tar_file(&t, "e/.wh..wh.plnk", "");      /* AUFS metadata: ignored */
        tar_file(&t, "missing/.wh.nothing", ""); /* nothing below to hide */
        tar_file(&t, ".wh...", "");              /* would hide "..": ignored */
        ASSERT_EQ_INT(apply(root, tar_end(&t), &oci, NULL), 0);

        ASSERT(faccessat(root, "a/1", F_OK, AT_SYMLINK_NOFOLLOW) < 0);
        ASSERT(faccessat(root, "a/2", F_OK, AT_SYMLINK_NOFOLLOW) == 0);
        ASSERT(faccessat(root, "c", F_OK, AT_SYMLINK_NOFOLLOW) < 0);
        ASSERT(faccessat(root, "b/dir/old", F_OK, AT_SYMLINK_NOFOLLOW) < 0);
        ASSERT(faccessat(root, "b/dir/sub", F_OK, AT_SYMLINK_NOFOLLOW) < 0);
        ASSERT(faccessat(root, "b/dir/new", F_OK, AT_SYMLINK_NOFOLLOW) == 0);
        ASSERT(faccessat(root, "d/x", F_OK, AT_SYMLINK_NOFOLLOW) == 0);
        ASSERT(faccessat(root, "e/lower", F_OK, AT_SYMLINK_NOFOLLOW) < 0);
        ASSERT(faccessat(root, "e", F_OK, AT_SYMLINK_NOFOLLOW) == 0);
        /* Whiteout files themselves never appear in the tree. */
        ASSERT(faccessat(root, "a/.wh.1", F_OK, AT_SYMLINK_NOFOLLOW) < 0);
        ASSERT(faccessat(root, "b/dir/.wh..wh..opq", F_OK, AT_SYMLINK_NOFOLLOW) < 0);
        ASSERT(faccessat(root, "missing", F_OK, AT_SYMLINK_NOFOLLOW) < 0);
        assert_outside_untouched();
        close(root);
}

/* An image's layers together may not unpack to more entries or bytes
 * than its budget allows; the entry that would pass it is not written. */
static void test_budget(void) {
        int root = fresh_tree();
        LayerBudget budget = { .max_entries = 4 };
        LayerOptions opts = { .whiteouts = true, .budget = &budget };
        TarBuilder t;
        tar_begin(&t, ARCHIVE_FILTER_NONE);
        tar_dir(&t, "d");
        tar_file(&t, "d/1", "1");
        tar_file(&t, "d/2", "2");
        ASSERT_EQ_INT(apply(root, tar_end(&t), &opts, NULL), 0);
        ASSERT_EQ_INT(budget.entries, 3);
        /* The next layer's second entry is the fifth of the image. */
        Error *err = NULL;
        tar_begin(&t, ARCHIVE_FILTER_GZIP);
        tar_file(&t, "d/3", "3");
        tar_file(&t, "d/4", "4");
        ASSERT_EQ_INT(apply(root, tar_end(&t), &opts, &err), -EFBIG);
        ASSERT_MSG(err->msg, "layer test", ": \"d/4\": the image has more than 4 entries (the limit)");
        error_free(TAKE_PTR(err));
        ASSERT(faccessat(root, "d/3", F_OK, AT_SYMLINK_NOFOLLOW) == 0);
        ASSERT(faccessat(root, "d/4", F_OK, AT_SYMLINK_NOFOLLOW) < 0);

        /* Bytes: a file's size as its header says, counted before any of
         * it is written. */
        budget = (LayerBudget) { .max_bytes = 10 };
        tar_begin(&t, ARCHIVE_FILTER_NONE);
        tar_file(&t, "small", "0123456789");
        tar_file(&t, "big", "x");
        ASSERT_EQ_INT(apply(root, tar_end(&t), &opts, &err), -EFBIG);
        ASSERT_MSG(err->msg, "layer test", ": \"big\": the image unpacks to more than 10 bytes (the limit)");
        error_free(TAKE_PTR(err));
        ASSERT(faccessat(root, "small", F_OK, AT_SYMLINK_NOFOLLOW) == 0);
        ASSERT(faccessat(root, "big", F_OK, AT_SYMLINK_NOFOLLOW) < 0);
        close(root);
}

static void test_whiteouts_and_symlinks(void) {
        /* Lower: a directory d and a symlink l to it. */
        int root = fresh_tree();
        TarBuilder t;
        tar_begin(&t, ARCHIVE_FILTER_NONE);
        tar_dir(&t, "d");
        tar_file(&t, "d/old", "old");
        tar_symlink(&t, "l", "d");
        ASSERT_EQ_INT(apply(root, tar_end(&t), &oci, NULL), 0);

        /* Upper: a file through l (lands in d), then l whited out, then a file
         * below the name l: that must make a real directory l, not reuse d. */
        tar_begin(&t, ARCHIVE_FILTER_NONE);
        tar_file(&t, "l/a", "a");
        tar_file(&t, ".wh.l", "");
        tar_file(&t, "l/b", "b");
        tar_file(&t, "d/new", "new");
        tar_file(&t, "l/.wh..wh..opq", ""); /* through no symlink now: l is ours */
        ASSERT_EQ_INT(apply(root, tar_end(&t), &oci, NULL), 0);
        struct stat st;
        ASSERT(fstatat(root, "l", &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode));
        ASSERT(faccessat(root, "l/b", F_OK, AT_SYMLINK_NOFOLLOW) == 0);
        ASSERT(faccessat(root, "d/b", F_OK, AT_SYMLINK_NOFOLLOW) < 0);
        ASSERT(faccessat(root, "d/a", F_OK, AT_SYMLINK_NOFOLLOW) == 0);
        ASSERT(faccessat(root, "d/new", F_OK, AT_SYMLINK_NOFOLLOW) == 0);
        close(root);

        /* An opaque marker reached through a symlink hides nothing. */
        root = fresh_tree();
        tar_begin(&t, ARCHIVE_FILTER_NONE);
        tar_dir(&t, "d");
        tar_file(&t, "d/old", "old");
        tar_symlink(&t, "l", "d");
        ASSERT_EQ_INT(apply(root, tar_end(&t), &oci, NULL), 0);
        tar_begin(&t, ARCHIVE_FILTER_NONE);
        tar_file(&t, "d/new", "new");
        tar_file(&t, "l/.wh..wh..opq", "");
        tar_file(&t, "l/.wh.old", "");
        ASSERT_EQ_INT(apply(root, tar_end(&t), &oci, NULL), 0);
        ASSERT(faccessat(root, "d/new", F_OK, AT_SYMLINK_NOFOLLOW) == 0);
        ASSERT(faccessat(root, "d/old", F_OK, AT_SYMLINK_NOFOLLOW) == 0);
        close(root);
}

static void test_metadata(void) {
        int root = fresh_tree();
        TarBuilder t;
        tar_begin(&t, ARCHIVE_FILTER_NONE);
        struct archive_entry *e = tar_entry("bin/tool", AE_IFREG, 0750);
        archive_entry_set_mtime(e, 1234567890, 0);
        tar_write(&t, e, "#!/bin/sh\n", 10);
        tar_symlink(&t, "bin/alias", "tool");
        e = tar_entry("secret", AE_IFDIR, 0700);
        tar_write(&t, e, NULL, 0);
        e = tar_entry("fifo", AE_IFIFO, 0640);
        tar_write(&t, e, NULL, 0);
        e = tar_entry("big-sparse-tail", AE_IFREG, 0644);
        tar_write(&t, e, "x", 1);
        ASSERT_EQ_INT(apply(root, tar_end(&t), &oci, NULL), 0);

        struct stat st;
        ASSERT(fstatat(root, "bin/tool", &st, AT_SYMLINK_NOFOLLOW) == 0);
        ASSERT_EQ_INT(st.st_mode & 07777, 0750);
        ASSERT_EQ_INT(st.st_mtime, 1234567890);
        ASSERT_EQ_INT(st.st_size, 10);
        char target[16] = "";
        ASSERT(readlinkat(root, "bin/alias", target, sizeof(target) - 1) == 4);
        ASSERT_STREQ(target, "tool");
        ASSERT(fstatat(root, "secret", &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode));
        ASSERT(fstatat(root, "fifo", &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISFIFO(st.st_mode));
        ASSERT_EQ_INT(st.st_mode & 07777, 0640);
        /* Implicit parents are made 0755. */
        ASSERT(fstatat(root, "bin", &st, AT_SYMLINK_NOFOLLOW) == 0);
        ASSERT_EQ_INT(st.st_mode & 07777, 0755);
        close(root);

        /* Owner and mode as the entries say, whatever a new file would get
         * by itself: set-id bits, modes the umask would cut, a group other
         * than ours, and the group a setgid directory would hand down. */
        if (geteuid() != 0)
                return;
        root = fresh_tree();
        tar_begin(&t, ARCHIVE_FILTER_NONE);
        e = tar_entry("shared", AE_IFDIR, 02775);
        archive_entry_set_gid(e, 50);
        tar_write(&t, e, NULL, 0);
        tar_write(&t, tar_entry("shared/plain", AE_IFREG, 0644), "p", 1);
        e = tar_entry("suid", AE_IFREG, 04755);
        tar_write(&t, e, "s", 1);
        e = tar_entry("open", AE_IFREG, 0666);
        tar_write(&t, e, "o", 1);
        e = tar_entry("owned", AE_IFREG, 0600);
        archive_entry_set_uid(e, 1000);
        archive_entry_set_gid(e, 100);
        tar_write(&t, e, "x", 1);
        mode_t old = umask(022);
        ASSERT_EQ_INT(apply(root, tar_end(&t), &oci, NULL), 0);
        umask(old);
        static const struct {
                const char *path;
                mode_t mode;
                uid_t uid;
                gid_t gid;
        } want[] = {
                { "shared", 02775, 0, 50 },
                { "shared/plain", 0644, 0, 0 },
                { "suid", 04755, 0, 0 },
                { "open", 0666, 0, 0 },
                { "owned", 0600, 1000, 100 },
        };
        for (size_t i = 0; i < ELEMENTSOF(want); i++) {
                ASSERT(fstatat(root, want[i].path, &st, AT_SYMLINK_NOFOLLOW) == 0);
                ASSERT_EQ_INT(st.st_mode & 07777, want[i].mode);
                ASSERT_EQ_INT(st.st_uid, want[i].uid);
                ASSERT_EQ_INT(st.st_gid, want[i].gid);
        }
        close(root);
}

static unsigned n_warnings;
static char last_warning[512];
static void count_warning(const char *message) {
        n_warnings++;
        snprintf(last_warning, sizeof(last_warning), "%s", message);
}

/* An image's device node is never made (a key to the host device its
 * numbers name): each is named in a warning, a few per layer, then
 * counted. Only a whiteout (char 0:0) is made, without set-id bits. */
static void test_devices(void) {
        int root = fresh_tree();
        TarBuilder t;
        tar_begin(&t, ARCHIVE_FILTER_NONE);
        struct archive_entry *e = tar_entry("dev/disk", AE_IFBLK, 0666);
        archive_entry_set_rdev(e, makedev(7, 0));
        tar_write(&t, e, NULL, 0);
        e = tar_entry("dev/kmsg", AE_IFCHR, 0666);
        archive_entry_set_rdev(e, makedev(1, 11));
        tar_write(&t, e, NULL, 0);
        tar_hardlink(&t, "dev/disk-link", "dev/disk");
        e = tar_entry("gone", AE_IFCHR, 06755);
        archive_entry_set_rdev(e, makedev(0, 0));
        tar_write(&t, e, NULL, 0);
        tar_file(&t, "after", "still here");
        warn_set_handler(count_warning);
        n_warnings = 0;
        ASSERT_EQ_INT(apply(root, tar_end(&t), &oci, NULL), 0);
        ASSERT_EQ_INT(n_warnings, 2);
        ASSERT(strstr(last_warning, "\"dev/kmsg\"") && strstr(last_warning, "character device node (1:11)"));
        ASSERT(faccessat(root, "dev/disk", F_OK, AT_SYMLINK_NOFOLLOW) < 0 && errno == ENOENT);
        ASSERT(faccessat(root, "dev/kmsg", F_OK, AT_SYMLINK_NOFOLLOW) < 0 && errno == ENOENT);
        ASSERT(faccessat(root, "dev/disk-link", F_OK, AT_SYMLINK_NOFOLLOW) < 0 && errno == ENOENT);
        _cleanup_free_ char *after = read_at(root, "after");
        ASSERT_STREQ(after, "still here");
        struct stat st;
        if (geteuid() == 0) {
                ASSERT(fstatat(root, "gone", &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISCHR(st.st_mode));
                ASSERT(st.st_rdev == makedev(0, 0));
                ASSERT_EQ_INT(st.st_mode & 07777, 0755);
        }
        close(root);

        /* A layer of many: 8 named, then one count. */
        root = fresh_tree();
        tar_begin(&t, ARCHIVE_FILTER_NONE);
        for (int i = 0; i < 20; i++) {
                char name[32];
                snprintf(name, sizeof(name), "n%d", i);
                e = tar_entry(name, AE_IFBLK, 0600);
                archive_entry_set_rdev(e, makedev(8, i));
                tar_write(&t, e, NULL, 0);
        }
        n_warnings = 0;
        ASSERT_EQ_INT(apply(root, tar_end(&t), &oci, NULL), 0);
        ASSERT_EQ_INT(n_warnings, 9);
        ASSERT(strstr(last_warning, "12 more device nodes"));
        warn_set_handler(NULL);
        close(root);
}

static void test_subdir(void) {
        /* ACI: only rootfs/ is the tree; the manifest and anything else stay out. */
        int root = fresh_tree();
        TarBuilder t;
        tar_begin(&t, ARCHIVE_FILTER_XZ);
        tar_file(&t, "manifest", "{}");
        tar_dir(&t, "rootfs");
        tar_file(&t, "rootfs/bin/x", "x");
        tar_file(&t, "rootfsnot/y", "y");
        tar_file(&t, "other/z", "z");
        tar_file(&t, "rootfs/.wh.kept", "not a whiteout in an ACI");
        LayerOptions aci = { .subdir = "rootfs" };
        ASSERT_EQ_INT(apply(root, tar_end(&t), &aci, NULL), 0);
        _cleanup_free_ char *x = read_at(root, "bin/x");
        ASSERT_STREQ(x, "x");
        ASSERT(faccessat(root, "manifest", F_OK, 0) < 0);
        ASSERT(faccessat(root, "y", F_OK, 0) < 0);
        ASSERT(faccessat(root, "rootfsnot", F_OK, 0) < 0);
        ASSERT(faccessat(root, "other", F_OK, 0) < 0);
        ASSERT(faccessat(root, ".wh.kept", F_OK, 0) == 0);
        close(root);
}

static void test_garbage(void) {
        int root = fresh_tree();
        int fd = memfd_create("garbage", MFD_CLOEXEC);
        ASSERT(fd >= 0);
        ASSERT(write(fd, "this is not a tar archive at all, not even close\n", 50) == 50);
        ASSERT(lseek(fd, 0, SEEK_SET) == 0);
        Error *err = NULL;
        ASSERT_EQ_INT(apply(root, fd, &oci, &err), -EBADMSG);
        ASSERT_CONTAINS(err->msg, "layer test");
        error_free(err);

        /* A truncated archive fails too, naming the entry. */
        TarBuilder t;
        tar_begin(&t, ARCHIVE_FILTER_NONE);
        char big[8192];
        memset(big, 'x', sizeof(big));
        tar_write(&t, tar_entry("big", AE_IFREG, 0644), big, sizeof(big));
        fd = tar_end(&t);
        ASSERT(ftruncate(fd, 4096) == 0);
        err = NULL;
        ASSERT_EQ_INT(apply(root, fd, &oci, &err), -EBADMSG);
        ASSERT_CONTAINS(err->msg, "big");
        error_free(err);

        /* An empty file is an empty layer. */
        fd = memfd_create("empty", MFD_CLOEXEC);
        ASSERT_EQ_INT(apply(root, fd, &oci, NULL), 0);
        close(root);
}

static void remove_scratch(void) {
        (void) rm_rf(scratch);
}

int main(void) {
        ASSERT(mkdtemp(scratch));
        test_cleanup = remove_scratch;
        scratch_fd = open(scratch, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        ASSERT(scratch_fd >= 0);
        ASSERT(mkdirat(scratch_fd, "outside", 0755) == 0);
        int fd = openat(scratch_fd, "outside/sentinel", O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        ASSERT(fd >= 0 && write(fd, "precious\n", 9) == 9);
        close(fd);

        RUN(test_dotdot_refused);
        RUN(test_absolute_neutralised);
        RUN(test_symlinked_parent_contained);
        RUN(test_symlinked_parent_in_tree);
        RUN(test_file_replaces_symlink);
        RUN(test_hardlinks);
        RUN(test_replaced_parent_is_not_reused);
        RUN(test_whiteouts);
        RUN(test_budget);
        RUN(test_whiteouts_and_symlinks);
        RUN(test_metadata);
        RUN(test_devices);
        RUN(test_subdir);
        RUN(test_garbage);

        close(scratch_fd);
        ASSERT(rm_rf(scratch) == 0);
        return 0;
}
