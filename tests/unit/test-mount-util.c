/* SPDX-License-Identifier: Apache-2.0 */
/* Needs root: it mounts tmpfs and bind mounts in the host's mount namespace,
 * all below a private scratch mount, and removes every one of them even when
 * an assertion fails. Without the privilege it skips (exit 77), except under
 * CI=true, where a skip is a failure. */
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <libmount.h>

#include "basic/fs.h"
#include "basic/mount-util.h"
#include "basic/warn.h"
#include "tests.h"

/* The space makes mountinfo show every target below as "...\040...". */
static char scratch[] = "/tmp/test mount-util-XXXXXX";
static char host[] = "/tmp/test-mount-util-host-XXXXXX";
static bool scratch_made, host_made;
static pid_t child = -1;

static char *warnings[16];
static size_t n_warnings;

static void record_warning(const char *message) {
        if (n_warnings < ELEMENTSOF(warnings))
                warnings[n_warnings] = strdup(message);
        n_warnings++;
}

static void forget_warnings(void) {
        for (size_t i = 0; i < n_warnings && i < ELEMENTSOF(warnings); i++)
                free(warnings[i]);
        n_warnings = 0;
}

/* scratch + "/" + rel, in one of a few static buffers so that several can be
 * used in one expression. */
static const char *at(const char *rel) {
        static char buf[8][PATH_MAX];
        static unsigned next;
        char *p = buf[next++ % ELEMENTSOF(buf)];
        snprintf(p, PATH_MAX, "%s/%s", scratch, rel);
        return p;
}

/* Counts mounts whose target is path (or lies below it, with below), read
 * from mountinfo here rather than through the code under test. */
static int count_mounts(const char *path, bool below) {
        struct libmnt_table *t = mnt_new_table_from_file("/proc/self/mountinfo");
        ASSERT(t);
        struct libmnt_iter *it = mnt_new_iter(MNT_ITER_FORWARD);
        ASSERT(it);
        struct libmnt_fs *fs;
        int n = 0;
        while (mnt_table_next_fs(t, it, &fs) == 0) {
                const char *rest = startswith(strempty(mnt_fs_get_target(fs)), path);
                if (rest && (*rest == '\0' || (below && *rest == '/')))
                        n++;
        }
        mnt_free_iter(it);
        mnt_unref_table(t);
        return n;
}

/* Independent of the code under test, so that a bug in it cannot leave
 * mounts behind: detach (MNT_DETACH, which never fails for being busy)
 * everything at or below dir, last mounted first, until nothing is left. */
static void detach_all_below(const char *dir) {
        for (int round = 0; round < 16; round++) {
                struct libmnt_table *t = mnt_new_table_from_file("/proc/self/mountinfo");
                struct libmnt_iter *it = mnt_new_iter(MNT_ITER_BACKWARD);
                struct libmnt_fs *fs;
                bool found = false;
                while (t && it && mnt_table_next_fs(t, it, &fs) == 0) {
                        const char *target = strempty(mnt_fs_get_target(fs));
                        const char *rest = startswith(target, dir);
                        if (!rest || (*rest != '\0' && *rest != '/'))
                                continue;
                        found = true;
                        (void) umount2(target, MNT_DETACH | UMOUNT_NOFOLLOW);
                }
                mnt_free_iter(it);
                mnt_unref_table(t);
                if (!found)
                        return;
        }
        fprintf(stderr, "test-mount-util: could not detach everything below %s\n", dir);
}

static void cleanup(void) {
        if (child > 0) {
                (void) kill(child, SIGKILL);
                (void) waitpid(child, NULL, 0);
                child = -1;
        }
        if (scratch_made) {
                detach_all_below(scratch);
                /* rm_rf_at() never crosses a mount: should a mount have survived,
                 * the host directory bound into the tree stays safe. */
                (void) rm_rf(scratch);
                scratch_made = false;
        }
        if (host_made) {
                (void) rm_rf(host);
                host_made = false;
        }
        forget_warnings();
}

static void skip(const char *reason) {
        const char *ci = getenv("CI");
        cleanup();
        if (ci && streq(ci, "true")) {
                fprintf(stderr, "test-mount-util: cannot run: %s (CI=true: not skipping)\n", reason);
                exit(1);
        }
        fprintf(stderr, "test-mount-util: skipped: %s\n", reason);
        exit(77);
}

static void mount_tmpfs(const char *rel) {
        ASSERT_EQ_INT(mkdir_p(at(rel), 0755), 0);
        if (mount("test-mount-util", at(rel), "tmpfs", 0, "size=1m,mode=0755") < 0) {
                fprintf(stderr, "mount tmpfs on %s: %m\n", at(rel));
                test_fail();
        }
}

static void write_text(const char *path, const char *text) {
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        ASSERT(fd >= 0);
        ASSERT(write(fd, text, strlen(text)) == (ssize_t) strlen(text));
        close(fd);
}

static void test_tree(void) {
        mount_tmpfs("pod/a");
        mount_tmpfs("pod/a/b/c");               /* inside the tmpfs on pod/a */
        ASSERT_EQ_INT(mkdir_p(at("pod/vol"), 0755), 0);
        ASSERT(mount(host, at("pod/vol"), NULL, MS_BIND, NULL) == 0);
        ASSERT(mount(NULL, at("pod/vol"), NULL, MS_PRIVATE, NULL) == 0);
        mount_tmpfs("pod/stack");
        mount_tmpfs("pod/stack");               /* stacked on the first */
        mount_tmpfs("podX");                    /* same prefix, not below pod */
        ASSERT_EQ_INT(count_mounts(at("pod/stack"), false), 2);
        ASSERT_EQ_INT(count_mounts(at("pod"), true), 5);
        ASSERT_EQ_INT(has_mounts_below(at("pod"), NULL), 1);
        ASSERT_EQ_INT(has_mounts_below(at("pod/a/b"), NULL), 1);
        ASSERT_EQ_INT(has_mounts_below(at("pod/a/b/c/d"), NULL), 0);

        UmountStats stats = { 99, 99 };
        Error *err = NULL;
        int r = umount_below(at("pod"), &stats, &err);
        if (r < 0)
                fprintf(stderr, "umount_below: %s\n", err ? err->msg : "(no message)");
        ASSERT_EQ_INT(r, 0);
        ASSERT(!err);
        ASSERT_EQ_INT(stats.unmounted, 5);
        ASSERT_EQ_INT(stats.detached, 0);
        ASSERT_EQ_INT(n_warnings, 0);
        ASSERT_EQ_INT(has_mounts_below(at("pod"), NULL), 0);
        ASSERT_EQ_INT(count_mounts(at("pod"), true), 0);

        /* The sibling with the same prefix is untouched, and so is the host
         * directory that was bound into the tree. */
        ASSERT_EQ_INT(count_mounts(at("podX"), false), 1);
        ASSERT_EQ_INT(has_mounts_below(at("podX"), NULL), 1);
        char sentinel[PATH_MAX];
        snprintf(sentinel, sizeof(sentinel), "%s/sentinel", host);
        char *content = NULL;
        ASSERT_EQ_INT(read_file(sentinel, 4096, &content, NULL, NULL), 0);
        ASSERT_STREQ(content, "keep me\n");
        free(content);
        ASSERT(access(at("pod/vol/sentinel"), F_OK) < 0 && errno == ENOENT);

        /* Nothing is mounted any more: the tree deletes like any other. */
        ASSERT_EQ_INT(rm_rf(at("pod")), 0);

        /* A mount on path itself counts ("at or below"). */
        ASSERT_EQ_INT(umount_below(at("podX"), &stats, NULL), 0);
        ASSERT_EQ_INT(stats.unmounted, 1);
        ASSERT_EQ_INT(stats.detached, 0);
        ASSERT_EQ_INT(count_mounts(at("podX"), true), 0);
        ASSERT_EQ_INT(rm_rf(at("podX")), 0);
}

static void test_busy(void) {
        mount_tmpfs("pod/busy");
        mount_tmpfs("pod/busy/inner");

        /* A process whose working directory is in pod/busy: umount2() says
         * EBUSY, as it would for a pod's leftover process. */
        int p[2];
        ASSERT(pipe2(p, O_CLOEXEC) == 0);
        child = fork();
        ASSERT(child >= 0);
        if (child == 0) {
                (void) prctl(PR_SET_PDEATHSIG, SIGKILL);
                if (chdir(at("pod/busy")) < 0 || write(p[1], "x", 1) != 1)
                        _exit(1);
                for (;;)
                        pause();
        }
        close(p[1]);
        char c;
        ASSERT(read(p[0], &c, 1) == 1);
        close(p[0]);

        UmountStats stats = {};
        Error *err = NULL;
        int r = umount_below(at("pod"), &stats, &err);
        if (r < 0)
                fprintf(stderr, "umount_below: %s\n", err ? err->msg : "(no message)");
        ASSERT_EQ_INT(r, 0);
        ASSERT_EQ_INT(stats.unmounted, 1);      /* inner */
        ASSERT_EQ_INT(stats.detached, 1);       /* busy */
        ASSERT_EQ_INT(n_warnings, 1);
        ASSERT_CONTAINS(warnings[0], at("pod/busy"));
        ASSERT_CONTAINS(warnings[0], "busy");
        ASSERT_CONTAINS(warnings[0], "lazily");
        ASSERT_EQ_INT(has_mounts_below(at("pod"), NULL), 0);

        ASSERT(kill(child, SIGKILL) == 0);
        ASSERT(waitpid(child, NULL, 0) == child);
        child = -1;
        forget_warnings();
        ASSERT_EQ_INT(rm_rf(at("pod")), 0);
}

/* A mount on a directory that hides a deeper mount: the deeper target cannot
 * be reached until the one on top is gone. Unmounting the lower mount first
 * would fail with EBUSY for its child and detach it lazily: it must not. */
static void test_covered(void) {
        mount_tmpfs("pod/h");
        mount_tmpfs("pod/h/deep");
        mount_tmpfs("pod/h");                   /* covers pod/h/deep */
        ASSERT_EQ_INT(count_mounts(at("pod"), true), 3);

        UmountStats stats = {};
        Error *err = NULL;
        int r = umount_below(at("pod"), &stats, &err);
        if (r < 0)
                fprintf(stderr, "umount_below: %s\n", err ? err->msg : "(no message)");
        ASSERT_EQ_INT(r, 0);
        ASSERT_EQ_INT(stats.unmounted, 3);
        ASSERT_EQ_INT(stats.detached, 0);
        ASSERT_EQ_INT(n_warnings, 0);
        ASSERT_EQ_INT(count_mounts(at("pod"), true), 0);
        ASSERT_EQ_INT(rm_rf(at("pod")), 0);
}

static void test_nothing_mounted(void) {
        ASSERT_EQ_INT(mkdir_p(at("pod/a"), 0755), 0);
        UmountStats stats = { 99, 99 };
        Error *err = NULL;
        ASSERT_EQ_INT(umount_below(at("pod"), &stats, &err), 0);
        ASSERT(!err);
        ASSERT_EQ_INT(stats.unmounted, 0);
        ASSERT_EQ_INT(stats.detached, 0);
        ASSERT_EQ_INT(umount_below(at("pod"), NULL, NULL), 0);
        ASSERT_EQ_INT(umount_below(at("does-not-exist"), NULL, NULL), 0);
        ASSERT_EQ_INT(has_mounts_below(at("pod"), NULL), 0);
        /* The scratch directory is a mount of its own (see main()). */
        ASSERT_EQ_INT(has_mounts_below(scratch, NULL), 1);
        ASSERT_EQ_INT(has_mounts_below("/", NULL), 1);
        ASSERT_EQ_INT(n_warnings, 0);
        ASSERT_EQ_INT(rm_rf(at("pod")), 0);
}

static void check_invalid(const char *path) {
        UmountStats stats = { 7, 7 };
        Error *err = NULL;
        ASSERT_EQ_INT(umount_below(path, &stats, &err), -EINVAL);
        ASSERT(err);
        ASSERT_CONTAINS(err->msg, path);
        ASSERT_EQ_INT(stats.unmounted, 7);      /* untouched on failure */
        ASSERT_EQ_INT(stats.detached, 7);
        error_free(err);
        err = NULL;
        ASSERT_EQ_INT(has_mounts_below(path, &err), -EINVAL);
        ASSERT(err);
        error_free(err);
}

static void test_invalid_paths(void) {
        mount_tmpfs("pod/a");

        check_invalid("");
        check_invalid("relative/pod");
        check_invalid("./pod");
        check_invalid(at("pod/../pod"));
        check_invalid(at("pod/./a"));
        check_invalid(at("pod/.."));
        check_invalid(at("/pod"));              /* "//" */
        check_invalid(at("pod/"));              /* trailing "/": not how mountinfo spells it */
        ASSERT_EQ_INT(umount_below("/", NULL, NULL), -EINVAL);

        /* Refused means nothing was touched. */
        ASSERT_EQ_INT(count_mounts(at("pod/a"), false), 1);
        ASSERT_EQ_INT(umount_below(at("pod"), NULL, NULL), 0);
        ASSERT_EQ_INT(count_mounts(at("pod"), true), 0);
        ASSERT_EQ_INT(rm_rf(at("pod")), 0);
}

int main(void) {
        if (geteuid() != 0)
                skip("needs root to mount");

        test_cleanup = cleanup;
        ASSERT(mkdtemp(host));
        host_made = true;
        char sentinel[PATH_MAX];
        snprintf(sentinel, sizeof(sentinel), "%s/sentinel", host);
        write_text(sentinel, "keep me\n");
        ASSERT(mkdtemp(scratch));
        scratch_made = true;

        /* The scratch directory becomes a private mount of its own, so that
         * nothing mounted below it propagates into other mount namespaces
         * (the host's "/" is shared under systemd), and nothing comes back. */
        if (mount(scratch, scratch, NULL, MS_BIND, NULL) < 0) {
                if (errno == EPERM)
                        skip("mount(2) is not permitted here (EPERM)");
                fprintf(stderr, "bind mount of %s: %m\n", scratch);
                test_fail();
        }
        ASSERT(mount(NULL, scratch, NULL, MS_PRIVATE, NULL) == 0);

        warn_set_handler(record_warning);
        RUN(test_tree);
        RUN(test_busy);
        RUN(test_covered);
        RUN(test_nothing_mounted);
        RUN(test_invalid_paths);

        ASSERT_EQ_INT(count_mounts(scratch, true), 1);  /* only the scratch mount itself */
        cleanup();
        ASSERT_EQ_INT(count_mounts(scratch, true), 0);
        return 0;
}
