/* SPDX-License-Identifier: Apache-2.0 */
/* lib/basic/fs.c: reading what a pod or an image may have planted, and removing
 * any tree a pod can build, and the resolver of a pod's tree. No privileges
 * needed (the unmounts in a user namespace of their own). */
#include <fcntl.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include "basic/fs.h"
#include "tests.h"

static char scratch[] = "/tmp/sdpod-test-fs.XXXXXX";
static int dfd = -1;

static void cleanup(void) {
        closep(&dfd);
        (void) rm_rf(scratch);
}

static void write_text(const char *path, const char *text) {
        int fd = openat(dfd, path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        ASSERT(fd >= 0);
        ASSERT(write_all(fd, text, strlen(text)) == 0);
        close(fd);
}

/* Each way a planted file could hang, mislead or exhaust a reader gives a
 * clear error instead, and none is ever opened for reading. */
static void test_read_refuses_what_is_not_a_plain_file(void) {
        char *data = NULL;
        Error *err = NULL;
        write_text("plain", "hello\n");
        ASSERT_EQ_INT(read_file_at(dfd, "plain", 100, &data, NULL, NULL), 0);
        ASSERT_STREQ(data, "hello\n");
        free(data);

        /* A FIFO: opening it for reading would block until a writer came. */
        ASSERT_EQ_INT(mkfifoat(dfd, "fifo", 0644), 0);
        ASSERT_EQ_INT(read_file_at(dfd, "fifo", 100, &data, NULL, &err), -EBADMSG);
        ASSERT_CONTAINS(err->msg, "fifo: not a regular file");
        error_free(TAKE_PTR(err));

        /* A socket. */
        int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/sock", scratch);
        ASSERT(s >= 0 && bind(s, (struct sockaddr *) &sa, sizeof(sa)) == 0);
        ASSERT_EQ_INT(read_file_at(dfd, "sock", 100, &data, NULL, NULL), -EBADMSG);
        close(s);

        /* A symlink, as the file or on the way to it, is not followed,
         * wherever it points. */
        ASSERT_EQ_INT(symlinkat("/etc/passwd", dfd, "link"), 0);
        ASSERT_EQ_INT(read_file_at(dfd, "link", 1 << 20, &data, NULL, &err), -ELOOP);
        ASSERT_CONTAINS(err->msg, "link: a symlink on the way");
        error_free(TAKE_PTR(err));
        ASSERT_EQ_INT(symlinkat("/etc", dfd, "etc"), 0);
        ASSERT_EQ_INT(read_file_at(dfd, "etc/passwd", 1 << 20, &data, NULL, NULL), -ELOOP);
        ASSERT_EQ_INT(read_file_at(dfd, "../../etc/passwd", 1 << 20, &data, NULL, NULL), -EXDEV);

        /* Inside a root, a symlink resolves in the root: "/etc/passwd" there
         * is the root's own, never the host's. */
        ASSERT_EQ_INT(mkdirat(dfd, "root", 0755), 0);
        ASSERT_EQ_INT(mkdirat(dfd, "root/etc", 0755), 0);
        write_text("root/etc/passwd", "root:x:0:0::/:/bin/sh\n");
        ASSERT_EQ_INT(symlinkat("/etc/passwd", dfd, "root/passwd-link"), 0);
        int root = openat(dfd, "root", O_PATH | O_DIRECTORY | O_CLOEXEC);
        ASSERT(root >= 0);
        ASSERT_EQ_INT(read_file_in_root(root, "passwd-link", 100, &data, NULL, NULL), 0);
        ASSERT_STREQ(data, "root:x:0:0::/:/bin/sh\n");
        free(data);
        ASSERT_EQ_INT(read_file_in_root(root, "../../../etc/hostname", 100, &data, NULL, NULL), -ENOENT);
        close(root);

        /* A 2 GiB sparse file costs no memory: its size is refused first. */
        int fd = openat(dfd, "sparse", O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
        ASSERT(fd >= 0 && ftruncate(fd, (off_t) 2 << 30) == 0);
        close(fd);
        ASSERT_EQ_INT(read_file_at(dfd, "sparse", 4 << 20, &data, NULL, &err), -EFBIG);
        ASSERT_CONTAINS(err->msg, "sparse: larger than 4194304 bytes");
        error_free(TAKE_PTR(err));
}

/* read_fd() never reads past its bound, even from a file whose size says
 * nothing (procfs). */
static void test_read_fd_bound(void) {
        char *data = NULL;
        size_t n = 0;
        write_text("big", "0123456789");
        int fd = openat(dfd, "big", O_RDONLY | O_CLOEXEC);
        ASSERT_EQ_INT(read_fd(fd, "big", 9, &data, NULL, NULL), -EFBIG);
        close(fd);
        ASSERT_EQ_INT(read_file("/proc/self/status", 1 << 20, &data, &n, NULL), 0);
        ASSERT(n > 0 && strstr(data, "Name:"));
        free(data);
        ASSERT_EQ_INT(read_file("/proc/self/status", 8, &data, NULL, NULL), -EFBIG);
}

/* A tree 10,000 directories deep, with files on the way, is removed under
 * an open-files limit of 64, well below one fd per level. */
static void test_rm_rf_deep_tree_few_fds(void) {
        ASSERT_EQ_INT(mkdirat(dfd, "deep", 0755), 0);
        int cur = openat(dfd, "deep", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        for (int i = 0; i < 10000; i++) {
                ASSERT_EQ_INT(mkdirat(cur, "d", 0755), 0);
                if (i % 1000 == 0) {
                        int f = openat(cur, "file", O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
                        ASSERT(f >= 0);
                        close(f);
                        ASSERT_EQ_INT(symlinkat("/", cur, "to-root"), 0);
                }
                int next = openat(cur, "d", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                ASSERT(next >= 0);
                close(cur);
                cur = next;
        }
        close(cur);
        /* And a wide level: many siblings each with a subdirectory. */
        ASSERT_EQ_INT(mkdirat(dfd, "deep/wide", 0755), 0);
        for (int i = 0; i < 300; i++) {
                char p[64];
                snprintf(p, sizeof(p), "deep/wide/%d", i);
                ASSERT_EQ_INT(mkdirat(dfd, p, 0755), 0);
                snprintf(p, sizeof(p), "deep/wide/%d/sub", i);
                ASSERT_EQ_INT(mkdirat(dfd, p, 0755), 0);
        }

        struct rlimit old;
        ASSERT_EQ_INT(getrlimit(RLIMIT_NOFILE, &old), 0);
        ASSERT_EQ_INT(setrlimit(RLIMIT_NOFILE, &(struct rlimit) { 64, old.rlim_max }), 0);
        int r = rm_rf_at(dfd, "deep");
        ASSERT_EQ_INT(setrlimit(RLIMIT_NOFILE, &old), 0);
        ASSERT_EQ_INT(r, 0);
        ASSERT(faccessat(dfd, "deep", F_OK, AT_SYMLINK_NOFOLLOW) < 0 && errno == ENOENT);
        /* The symlinks to / were removed, not followed. */
        ASSERT_EQ_INT(access("/etc/hostname", F_OK) == 0 || access("/etc/passwd", F_OK) == 0, 1);
}

static void test_rm_rf_names(void) {
        ASSERT_EQ_INT(rm_rf_at(dfd, "a/b"), -EINVAL);
        ASSERT_EQ_INT(rm_rf_at(dfd, ""), -EINVAL);
        ASSERT_EQ_INT(rm_rf_at(dfd, "missing"), 0);
        write_text("file", "x");
        ASSERT_EQ_INT(rm_rf_at(dfd, "file"), 0);
        ASSERT(faccessat(dfd, "file", F_OK, AT_SYMLINK_NOFOLLOW) < 0);
}

static void write_blocks(const char *path, size_t size) {
        int fd = openat(dfd, path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
        ASSERT(fd >= 0);
        static const char block[4096] = { 1 };
        for (size_t n = 0; n < size; n += sizeof(block))
                ASSERT(write(fd, block, sizeof(block)) == (ssize_t) sizeof(block));
        ASSERT(fsync(fd) == 0);
        close(fd);
}

static uint64_t blocks_of(const char *path) {
        struct stat st;
        ASSERT(fstatat(dfd, path, &st, AT_SYMLINK_NOFOLLOW) == 0);
        return (uint64_t) st.st_blocks * 512;
}

/* What gc and interrupted imports report: the blocks of each file whose
 * last link goes, and of each directory; a file with another link frees
 * nothing. */
static void test_rm_rf_counting(void) {
        ASSERT(mkdirat(dfd, "count", 0755) == 0);
        ASSERT(mkdirat(dfd, "count/sub", 0755) == 0);
        write_blocks("count/sub/a", 256 << 10);
        write_blocks("count/b", 64 << 10);
        ASSERT(linkat(dfd, "count/b", dfd, "kept-link", 0) == 0);
        ASSERT(symlinkat("sub/a", dfd, "count/link") == 0);
        uint64_t want = blocks_of("count") + blocks_of("count/sub") + blocks_of("count/sub/a") + blocks_of("count/link");
        uint64_t freed = 0;
        ASSERT_EQ_INT(rm_rf_at_counting(dfd, "count", &freed), 0);
        ASSERT(faccessat(dfd, "count", F_OK, AT_SYMLINK_NOFOLLOW) < 0);
        ASSERT(freed == want);
        ASSERT(freed >= (256 << 10));
        /* The last link of b goes now: its blocks count. */
        uint64_t b = blocks_of("kept-link");
        freed = 0;
        ASSERT_EQ_INT(rm_rf_at_counting(dfd, "kept-link", &freed), 0);
        ASSERT(freed == b && b >= (64 << 10));
        freed = 0;
        ASSERT_EQ_INT(rm_rf_at_counting(dfd, "missing", &freed), 0);
        ASSERT(freed == 0);
}

/* The resolver of a pod's tree: nothing is followed, nothing leads out. */
static void test_pod_path_open(void) {
        ASSERT_EQ_INT(mkdirat(dfd, "pod", 0755), 0);
        ASSERT_EQ_INT(mkdirat(dfd, "pod/dir", 0755), 0);
        ASSERT_EQ_INT(mkdirat(dfd, "outside", 0755), 0);
        write_text("outside/secret", "host\n");
        ASSERT_EQ_INT(symlinkat("/proc/self/root", dfd, "pod/magic"), 0);
        ASSERT_EQ_INT(symlinkat("dir", dfd, "pod/rel"), 0);
        ASSERT_EQ_INT(symlinkat("../outside", dfd, "pod/up"), 0);
        int root = openat(dfd, "pod", O_PATH | O_DIRECTORY | O_CLOEXEC);
        ASSERT(root >= 0);
        int fd = pod_path_open(root, "/dir", O_PATH | O_DIRECTORY, 0);
        ASSERT(fd >= 0);
        close(fd);
        /* Every kind of link, even one that stays inside, is -ELOOP. */
        ASSERT_EQ_INT(pod_path_open(root, "rel", O_RDONLY | O_DIRECTORY, 0), -ELOOP);
        ASSERT_EQ_INT(pod_path_open(root, "up/secret", O_RDONLY, 0), -ELOOP);
        ASSERT_EQ_INT(pod_path_open(root, "magic/etc", O_RDONLY, 0), -ELOOP);
        /* ".." stops at the root. */
        ASSERT_EQ_INT(pod_path_open(root, "../outside/secret", O_RDONLY, 0), -ENOENT);
        /* The link itself, to be removed. */
        fd = pod_path_open(root, "up", O_PATH | O_NOFOLLOW, 0);
        ASSERT(fd >= 0);
        struct stat st;
        ASSERT(fstat(fd, &st) == 0 && S_ISLNK(st.st_mode));
        close(fd);
        close(root);
}

static int write_string(const char *path, const char *text) {
        int fd = open(path, O_WRONLY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        int r = write_all(fd, text, strlen(text));
        close(fd);
        return r;
}

/* In a user and mount namespace of its own (no privileges needed): what is
 * mounted at a name is unmounted by its fd, a link at the name is never
 * followed, and the helper names paths in procfs only. */
static int pod_path_umount_child(void) {
        uid_t uid = getuid();
        gid_t gid = getgid();
        char map[64];
        if (unshare(CLONE_NEWUSER | CLONE_NEWNS) < 0)
                return 10;
        snprintf(map, sizeof(map), "0 %u 1", (unsigned) uid);
        if (write_string("/proc/self/setgroups", "deny") < 0 || write_string("/proc/self/uid_map", map) < 0)
                return 11;
        snprintf(map, sizeof(map), "0 %u 1", (unsigned) gid);
        if (write_string("/proc/self/gid_map", map) < 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
                return 12;
        char path[PATH_MAX];
        snprintf(path, sizeof(path), "%s/upod", scratch);
        if (mkdir(path, 0755) < 0 || mount("tmpfs", path, "tmpfs", 0, "size=64k") < 0)
                return 13;
        int root = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
        snprintf(path, sizeof(path), "%s/upod/m", scratch);
        if (root < 0 || mkdirat(root, "m", 0755) < 0 || mkdirat(root, "victim", 0755) < 0 ||
            mount("tmpfs", path, "tmpfs", 0, "size=64k") < 0 || mount("tmpfs", path, "tmpfs", 0, "size=64k") < 0 ||
            symlinkat("victim", root, "link") < 0)
                return 14;
        snprintf(path, sizeof(path), "%s/upod/victim", scratch);
        if (mount("tmpfs", path, "tmpfs", 0, "size=64k") < 0)
                return 15;
        int proc = open("/proc", O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (proc < 0 || pod_tree_enter(proc) < 0)
                return 16;
        /* Both mounts stacked at m go; a plain directory is left as it is. */
        if (pod_path_umount(root, "m") != 0 || pod_path_umount(root, "m") != 0)
                return 17;
        struct statx sx;
        if (statx(root, "m", AT_SYMLINK_NOFOLLOW, STATX_TYPE, &sx) < 0 || (sx.stx_attributes & STATX_ATTR_MOUNT_ROOT))
                return 18;
        /* A link to a mount: nothing is mounted at the link itself, and
         * the mount it leads to stays. */
        if (pod_path_umount(root, "link") != 0)
                return 19;
        if (statx(root, "victim", AT_SYMLINK_NOFOLLOW, STATX_TYPE, &sx) < 0 || !(sx.stx_attributes & STATX_ATTR_MOUNT_ROOT))
                return 20;
        if (pod_path_umount(root, "missing") != 0)
                return 21;
        /* Rooted in procfs: an absolute path of the tree names nothing. */
        if (access(scratch, F_OK) == 0)
                return 22;
        return 0;
}

static void test_pod_path_umount(void) {
        pid_t pid = fork();
        ASSERT(pid >= 0);
        if (pid == 0)
                _exit(pod_path_umount_child());
        int st;
        ASSERT(waitpid(pid, &st, 0) == pid);
        ASSERT(WIFEXITED(st));
        ASSERT_EQ_INT(WEXITSTATUS(st), 0);
}

int main(void) {
        ASSERT(mkdtemp(scratch));
        test_cleanup = cleanup;
        dfd = open(scratch, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        ASSERT(dfd >= 0);
        RUN(test_read_refuses_what_is_not_a_plain_file);
        RUN(test_read_fd_bound);
        RUN(test_rm_rf_deep_tree_few_fds);
        RUN(test_rm_rf_names);
        RUN(test_rm_rf_counting);
        RUN(test_pod_path_open);
        RUN(test_pod_path_umount);
        cleanup();
        return 0;
}
