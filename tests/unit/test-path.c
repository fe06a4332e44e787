/* SPDX-License-Identifier: Apache-2.0 */
#include "basic/digest.h"
#include "basic/macro.h"
#include "basic/path.h"
#include "tests.h"

static void check(const char *in, const char *want) {
        char *out = NULL;
        int r = path_normalize_archive_name(in, &out);
        if (!want) {
                ASSERT_EQ_INT(r, -EINVAL);
                return;
        }
        ASSERT_EQ_INT(r, 0);
        ASSERT_STREQ(out, want);
        free(out);
}

static void test_normalize(void) {
        check("a/b/c", "a/b/c");
        check("./a/b", "a/b");
        check("/etc/passwd", "etc/passwd");      /* absolute: made relative */
        check("//a//b/./c/", "a/b/c");
        check(".", "");
        check("./", "");
        check("/", "");
        check("", "");
        check("..", NULL);                        /* ".." is refused */
        check("../x", NULL);
        check("a/../../x", NULL);
        check("a/..", NULL);
        check("a/..b/c..", "a/..b/c..");          /* not a ".." component */
        check("...", "...");
}

static void test_split(void) {
        char *parent, *base;
        ASSERT_EQ_INT(path_split("a/b/c", &parent, &base), 0);
        ASSERT_STREQ(parent, "a/b");
        ASSERT_STREQ(base, "c");
        free(parent);
        free(base);
        ASSERT_EQ_INT(path_split("c", &parent, &base), 0);
        ASSERT_STREQ(parent, "");
        ASSERT_STREQ(base, "c");
        free(parent);
        free(base);
}

static void test_filename(void) {
        ASSERT(filename_is_valid("a"));
        ASSERT(filename_is_valid(".wh.x"));
        ASSERT(!filename_is_valid(""));
        ASSERT(!filename_is_valid("."));
        ASSERT(!filename_is_valid(".."));
        ASSERT(!filename_is_valid("a/b"));
        ASSERT(!filename_is_valid(NULL));
}

static void test_digest(void) {
        const char *good = "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
        ASSERT(digest_is_valid(good));
        ASSERT_STREQ(digest_hex(good), good + 7);
        ASSERT(!digest_is_valid("sha256:E3B0C44298FC1C149AFBF4C8996FB92427AE41E4649B934CA495991B7852B855"));
        ASSERT(!digest_is_valid("sha512:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"));
        ASSERT(!digest_is_valid("sha256:e3b0"));
        ASSERT(!digest_is_valid("sha256:../../../../etc/passwd/aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"));
        ASSERT(!digest_is_valid(NULL));
        char d[DIGEST_STRING_SIZE];
        digest_from_hex(good + 7, d);
        ASSERT_STREQ(d, good);
}

int main(void) {
        RUN(test_normalize);
        RUN(test_split);
        RUN(test_filename);
        RUN(test_digest);
        return 0;
}
