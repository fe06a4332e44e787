/* SPDX-License-Identifier: Apache-2.0 */
#include <fcntl.h>
#include <sys/stat.h>

#include "basic/fs.h"
#include "tests.h"
#include "unit/rootfs-lookup.h"

/* scratch/: outside/ holds files an app must never reach, root/ is the
 * app's root. */
static char scratch[] = "/tmp/test-rootfs-lookup.XXXXXX";
static int rootfd = -1;

static void remove_scratch(void) {
        rm_rf(scratch);
}

static void put(const char *path, const char *content, mode_t mode) {
        char full[512], dir[512];
        snprintf(full, sizeof(full), "%s/%s", scratch, path);
        snprintf(dir, sizeof(dir), "%s", full);
        *strrchr(dir, '/') = 0;
        ASSERT(mkdir_p(dir, 0755) == 0);
        int fd = open(full, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
        ASSERT(fd >= 0);
        ASSERT(write_all(fd, content, strlen(content)) == 0);
        ASSERT(fchmod(fd, mode) == 0);
        close(fd);
}

static void link_to(const char *path, const char *target) {
        char full[512], dir[512];
        snprintf(full, sizeof(full), "%s/%s", scratch, path);
        snprintf(dir, sizeof(dir), "%s", full);
        *strrchr(dir, '/') = 0;
        ASSERT(mkdir_p(dir, 0755) == 0);
        ASSERT(symlink(target, full) == 0);
}

static void setup(void) {
        ASSERT(mkdtemp(scratch));
        test_cleanup = remove_scratch;
        put("outside/etc/passwd", "evil:x:666:666::/evil:/bin/sh\n", 0644);
        put("outside/usr/bin/tool", "#!/bin/sh\n", 0755);
        put("outside/host-only", "#!/bin/sh\n", 0755);
        char root[512];
        snprintf(root, sizeof(root), "%s/root", scratch);
        ASSERT(mkdir(root, 0755) == 0);
        rootfd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
        ASSERT(rootfd >= 0);
}

static void test_parse_id(void) {
        uint32_t id = 1;
        ASSERT_EQ_INT(parse_id("0", &id), 0);
        ASSERT_EQ_INT(id, 0);
        ASSERT_EQ_INT(parse_id("4294967294", &id), 0);
        ASSERT_EQ_INT(id, 4294967294U);
        ASSERT_EQ_INT(parse_id("007", &id), 0);
        ASSERT_EQ_INT(id, 7);
        ASSERT_EQ_INT(parse_id("4294967295", &id), -ERANGE);
        ASSERT_EQ_INT(parse_id("65535", &id), -ERANGE);
        ASSERT_EQ_INT(parse_id("99999999999999999999", &id), -ERANGE);
        ASSERT_EQ_INT(parse_id("", &id), -EINVAL);
        ASSERT_EQ_INT(parse_id("-1", &id), -EINVAL);
        ASSERT_EQ_INT(parse_id("+1", &id), -EINVAL);
        ASSERT_EQ_INT(parse_id(" 1", &id), -EINVAL);
        ASSERT_EQ_INT(parse_id("1a", &id), -EINVAL);
        ASSERT_EQ_INT(parse_id("www", &id), -EINVAL);
}

static void test_users(void) {
        RootfsUser u = {};
        Error *err = NULL;

        /* No /etc/passwd: numbers are fine, names are not. */
        ASSERT_EQ_INT(rootfs_lookup_user(rootfd, "1000", &u, &err), 0);
        ASSERT(!u.found && u.uid == 1000 && u.gid == 0 && !u.home);
        ASSERT_EQ_INT(rootfs_lookup_user(rootfd, "www", &u, &err), -ESRCH);
        ASSERT_STREQ(err->msg, "no user \"www\": the app's root has no /etc/passwd");
        error_free(TAKE_PTR(err));

        put("root/etc/passwd",
            "# comment\n"
            "\n"
            "+nis-compat\n"
            "root:x:0:0:root:/root:/bin/sh\n"
            "broken:x:abc:1::/b:/bin/sh\n"
            "short:x:5\n"
            "www:x:33:34:web:/var/www:/usr/sbin/nologin\n"
            "www:x:44:44:second entry loses::\n"
            "nohome:x:50:51:::\n"
            "fewfields:x:60:61\n"
            "last:x:70:71::/home/last:/bin/sh", /* no final newline */
            0644);
        ASSERT_EQ_INT(rootfs_lookup_user(rootfd, "www", &u, &err), 0);
        ASSERT(u.found && u.uid == 33 && u.gid == 34);
        ASSERT_STREQ(u.home, "/var/www");
        rootfs_user_done(&u);
        /* by number: the entry gives home and group */
        ASSERT_EQ_INT(rootfs_lookup_user(rootfd, "33", &u, &err), 0);
        ASSERT(u.found && u.uid == 33 && u.gid == 34);
        ASSERT_STREQ(u.home, "/var/www");
        rootfs_user_done(&u);
        ASSERT_EQ_INT(rootfs_lookup_user(rootfd, "nohome", &u, &err), 0);
        ASSERT(u.found && u.uid == 50 && u.gid == 51 && !u.home);
        rootfs_user_done(&u);
        ASSERT_EQ_INT(rootfs_lookup_user(rootfd, "fewfields", &u, &err), 0);
        ASSERT(u.found && u.uid == 60 && !u.home);
        rootfs_user_done(&u);
        ASSERT_EQ_INT(rootfs_lookup_user(rootfd, "last", &u, &err), 0);
        ASSERT_STREQ(u.home, "/home/last");
        rootfs_user_done(&u);
        /* malformed lines are no entries */
        ASSERT_EQ_INT(rootfs_lookup_user(rootfd, "broken", &u, &err), -ESRCH);
        ASSERT_STREQ(err->msg, "no user \"broken\" in /etc/passwd of the app's root");
        error_free(TAKE_PTR(err));
        ASSERT_EQ_INT(rootfs_lookup_user(rootfd, "short", &u, &err), -ESRCH);
        error_free(TAKE_PTR(err));
        ASSERT_EQ_INT(rootfs_lookup_user(rootfd, "+nis-compat", &u, &err), -ESRCH);
        error_free(TAKE_PTR(err));
        ASSERT_EQ_INT(rootfs_lookup_user(rootfd, "4294967295", &u, &err), -ESRCH);
        ASSERT_STREQ(err->msg, "\"4294967295\" is not a valid user id");
        error_free(TAKE_PTR(err));
        /* a hostile name is quoted in the message */
        ASSERT_EQ_INT(rootfs_lookup_user(rootfd, "a\nb\033[0m", &u, &err), -ESRCH);
        ASSERT_STREQ(err->msg, "no user \"a\\x0ab\\x1b[0m\" in /etc/passwd of the app's root");
        error_free(TAKE_PTR(err));

        /* /etc/passwd as a symlink out of the root is resolved in the root:
         * the outside file with "evil" is never read. */
        char p[512];
        snprintf(p, sizeof(p), "%s/root/etc/passwd", scratch);
        ASSERT(unlink(p) == 0);
        link_to("root/etc/passwd", "../../../../../../outside/etc/passwd");
        ASSERT_EQ_INT(rootfs_lookup_user(rootfd, "evil", &u, &err), -ESRCH);
        ASSERT_CONTAINS(err->msg, "has no /etc/passwd");
        error_free(TAKE_PTR(err));
        ASSERT(unlink(p) == 0);
        link_to("root/etc/passwd", "/outside/etc/passwd");
        ASSERT_EQ_INT(rootfs_lookup_user(rootfd, "evil", &u, &err), -ESRCH);
        error_free(TAKE_PTR(err));
        /* ...and one that stays inside is followed */
        ASSERT(unlink(p) == 0);
        put("root/usr/share/passwd", "app:x:1234:1235::/app:/bin/sh\n", 0644);
        link_to("root/etc/passwd", "/usr/share/passwd");
        ASSERT_EQ_INT(rootfs_lookup_user(rootfd, "app", &u, &err), 0);
        ASSERT(u.uid == 1234 && u.gid == 1235);
        rootfs_user_done(&u);
        /* a directory is not a database */
        ASSERT(unlink(p) == 0);
        ASSERT(mkdir(p, 0755) == 0);
        ASSERT_EQ_INT(rootfs_lookup_user(rootfd, "app", &u, &err), -EBADMSG);
        ASSERT_CONTAINS(err->msg, "not a regular file");
        error_free(TAKE_PTR(err));
        ASSERT(rmdir(p) == 0);

        /* A FIFO as /etc/passwd: an error at once, not a read that waits
         * for a writer for ever. */
        ASSERT(mkfifo(p, 0644) == 0);
        ASSERT_EQ_INT(rootfs_lookup_user(rootfd, "app", &u, &err), -EBADMSG);
        ASSERT_CONTAINS(err->msg, "/etc/passwd: not a regular file");
        error_free(TAKE_PTR(err));
        ASSERT(unlink(p) == 0);

        /* A 2 GiB sparse /etc/passwd is refused by its size, unread. */
        int fd = open(p, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
        ASSERT(fd >= 0 && ftruncate(fd, (off_t) 2 << 30) == 0);
        close(fd);
        ASSERT_EQ_INT(rootfs_lookup_user(rootfd, "1000", &u, &err), -EFBIG);
        ASSERT_CONTAINS(err->msg, "/etc/passwd: larger than 4194304 bytes");
        error_free(TAKE_PTR(err));
        ASSERT(unlink(p) == 0);
}

static void test_groups(void) {
        gid_t gid = 1;
        Error *err = NULL;
        ASSERT_EQ_INT(rootfs_lookup_group(rootfd, "100", &gid, &err), 0);
        ASSERT_EQ_INT(gid, 100);
        ASSERT_EQ_INT(rootfs_lookup_group(rootfd, "staff", &gid, &err), -ESRCH);
        ASSERT_STREQ(err->msg, "no group \"staff\": the app's root has no /etc/group");
        error_free(TAKE_PTR(err));
        put("root/etc/group", "root:x:0:\nbad:x:zz:\nstaff:x:50:www,app\nshort:x\nnomembers:x:60\n", 0644);
        ASSERT_EQ_INT(rootfs_lookup_group(rootfd, "staff", &gid, &err), 0);
        ASSERT_EQ_INT(gid, 50);
        ASSERT_EQ_INT(rootfs_lookup_group(rootfd, "nomembers", &gid, &err), 0);
        ASSERT_EQ_INT(gid, 60);
        ASSERT_EQ_INT(rootfs_lookup_group(rootfd, "bad", &gid, &err), -ESRCH);
        error_free(TAKE_PTR(err));
        ASSERT_EQ_INT(rootfs_lookup_group(rootfd, "short", &gid, &err), -ESRCH);
        error_free(TAKE_PTR(err));
        ASSERT_EQ_INT(rootfs_lookup_group(rootfd, "", &gid, &err), -ESRCH);
        error_free(TAKE_PTR(err));
}

static void expect_found(const char *name, const char *path, const char *cwd, const char *expected) {
        char *found = NULL;
        Error *err = NULL;
        int r = rootfs_find_executable(rootfd, name, path, cwd, &found, &err);
        if (r < 0)
                fprintf(stderr, "%s: %s\n", name, err ? err->msg : "?");
        ASSERT_EQ_INT(r, 0);
        ASSERT_STREQ(found, expected);
        free(found);
}

static void expect_not_found(const char *name, const char *path, const char *cwd, int code, const char *msg) {
        char *found = NULL;
        Error *err = NULL;
        ASSERT_EQ_INT(rootfs_find_executable(rootfd, name, path, cwd, &found, &err), code);
        ASSERT(!found);
        ASSERT_STREQ(err->msg, msg);
        error_free(err);
}

static void test_executables(void) {
        /* a merged /usr, as in most images */
        link_to("root/bin", "usr/bin");
        link_to("root/sbin", "/usr/sbin");
        put("root/usr/bin/busybox", "#!/bin/sh\n", 0755);
        link_to("root/usr/bin/sh", "busybox");
        link_to("root/usr/sbin/init", "/bin/busybox");
        put("root/usr/local/bin/data", "not a program\n", 0644);
        put("root/usr/bin/data", "#!/bin/sh\n", 0700);
        put("root/opt/only-data/thing", "x\n", 0644);
        char d[512];
        snprintf(d, sizeof(d), "%s/root/usr/local/bin/adir", scratch);
        ASSERT(mkdir(d, 0755) == 0);
        put("root/work/run.sh", "#!/bin/sh\n", 0755);
        put("root/work/bin/tool", "#!/bin/sh\n", 0755);

        /* absolute, through symlinks that stay in the root */
        expect_found("/bin/sh", NULL, "/", "/bin/sh");
        expect_found("/sbin/init", NULL, "/", "/sbin/init");
        expect_found("//usr/./bin//sh", NULL, "/", "/usr/bin/sh");
        /* searched in the default PATH: /usr/bin comes before /bin */
        expect_found("sh", NULL, "/", "/usr/bin/sh");
        expect_found("sh", "/bin:/usr/bin", "/", "/bin/sh");
        /* execvp goes on past a file it cannot run */
        expect_found("data", "/usr/local/bin:/usr/bin", "/", "/usr/bin/data");
        expect_not_found("data", "/usr/local/bin", "/", -EACCES,
                         "\"/usr/local/bin/data\" is not an executable file in the app's root");
        expect_not_found("adir", "/usr/local/bin", "/", -EACCES,
                         "\"/usr/local/bin/adir\" is not an executable file in the app's root");
        expect_not_found("/usr/local/bin/adir", NULL, "/", -EACCES,
                         "\"/usr/local/bin/adir\" is not an executable file in the app's root");
        /* relative names and PATH entries are taken from the working directory */
        expect_found("./run.sh", NULL, "/work", "/work/run.sh");
        expect_found("bin/tool", NULL, "/work", "/work/bin/tool");
        expect_found("tool", "bin", "/work", "/work/bin/tool");
        expect_found("run.sh", ":/bin", "/work", "/work/run.sh");
        expect_not_found("../work/run.sh", NULL, "/work", -EINVAL,
                         "\"../work/run.sh\" must not contain a \"..\" component");
        expect_not_found("nothing", "/bin:/usr/bin", "/", -ENOENT,
                         "\"nothing\" not found in the app's root (searched PATH=\"/bin:/usr/bin\")");
        expect_not_found("/bin/sh/x", NULL, "/", -ENOENT, "\"/bin/sh/x\" not found in the app's root");
        expect_not_found("", NULL, "/", -ENOENT, "empty program name");

        /* Symlinks that would lead out of the root lead to the root's own
         * files instead: outside/ has usr/bin/tool and host-only, the root
         * has neither. */
        link_to("root/usr/bin/escape", "../../../../../outside/host-only");
        link_to("root/usr/bin/abs-escape", "/../outside/usr/bin/tool");
        link_to("root/outdir", "../outside/usr/bin");
        expect_not_found("/usr/bin/escape", NULL, "/", -ENOENT, "\"/usr/bin/escape\" not found in the app's root");
        expect_not_found("abs-escape", NULL, "/", -ENOENT,
                         "\"abs-escape\" not found in the app's root (searched PATH="
                         "\"/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin\")");
        expect_not_found("tool", "/outdir", "/", -ENOENT,
                         "\"tool\" not found in the app's root (searched PATH=\"/outdir\")");
        /* a symlink loop is "not found", not a hang */
        link_to("root/usr/bin/loop1", "loop2");
        link_to("root/usr/bin/loop2", "loop1");
        char *found = NULL;
        Error *err = NULL;
        ASSERT(rootfs_find_executable(rootfd, "/usr/bin/loop1", NULL, "/", &found, &err) < 0);
        error_free(err);
}

int main(void) {
        setup();
        RUN(test_parse_id);
        RUN(test_users);
        RUN(test_groups);
        RUN(test_executables);
        close(rootfd);
        remove_scratch();
        return 0;
}
