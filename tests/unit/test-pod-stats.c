/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "basic/fs.h"
#include "basic/macro.h"
#include "basic/time-util.h"
#include "pod/pod-journal.h"
#include "pod/pod-stats.h"
#include "tests.h"

static void check_unit(const char *path, const char *want) {
        char *got = cgroup_path_host_unit(path);
        if (!want)
                ASSERT(!got);
        else
                ASSERT_STREQ(got, want);
        free(got);
}

/* The host's part of a pod's cgroup path: never what the pod added below. */
static void test_host_unit(void) {
        check_unit("/system.slice/pod@x.service/payload/init.scope", "/system.slice/pod@x.service");
        check_unit("/machine.slice/machine-sdpod\\x2dweb.scope/payload/system.slice/a.service",
                   "/machine.slice/machine-sdpod\\x2dweb.scope");
        check_unit("/user.slice/user-0.slice/session-3.scope", "/user.slice/user-0.slice/session-3.scope");
        /* Not below a unit: no host systemd placed it. */
        check_unit("/sdpod/3f0c2a51/payload/init.scope", NULL);
        check_unit("/", NULL);
        check_unit("", NULL);
        check_unit("/.service/x", NULL);        /* a unit needs a name */
        check_unit("/x.slice", NULL);
}

static void test_line_path(void) {
        ASSERT_STREQ(cgroup_line_path("0::/sdpod/u/payload", CGROUP_UNIFIED), "/sdpod/u/payload");
        ASSERT(!cgroup_line_path("0::/x", CGROUP_V1_MEMORY));
        ASSERT_STREQ(cgroup_line_path("9:name=systemd:/sdpod/u", CGROUP_NAMED_SYSTEMD), "/sdpod/u");
        ASSERT(!cgroup_line_path("9:name=systemd:/sdpod/u", CGROUP_UNIFIED));
        ASSERT_STREQ(cgroup_line_path("4:memory:/a", CGROUP_V1_MEMORY), "/a");
        ASSERT_STREQ(cgroup_line_path("2:cpu,cpuacct:/b", CGROUP_V1_CPUACCT), "/b");
        ASSERT_STREQ(cgroup_line_path("2:cpuacct,cpu:/b", CGROUP_V1_CPUACCT), "/b");
        ASSERT(!cgroup_line_path("1:cpu:/c", CGROUP_V1_CPUACCT));
        ASSERT(!cgroup_line_path("1:cpuacctx:/c", CGROUP_V1_CPUACCT));
        /* A path with colons stays whole: only the first two separate. */
        ASSERT_STREQ(cgroup_line_path("0::/a:b:c", CGROUP_UNIFIED), "/a:b:c");
        ASSERT(!cgroup_line_path("garbage", CGROUP_UNIFIED));
        ASSERT(!cgroup_line_path("0:", CGROUP_UNIFIED));
}

static void test_cpu_percent(void) {
        CgroupFigures a = { .sampled_usec = 1000000, .cpu_usec = 500000 };
        CgroupFigures b = { .sampled_usec = 1500000, .cpu_usec = 750000 };
        ASSERT_EQ_INT((long long) (cgroup_cpu_percent(&a, &b) * 10 + 0.5), 500);
        b.cpu_usec = 1500000; /* two CPUs */
        ASSERT_EQ_INT((long long) (cgroup_cpu_percent(&a, &b) * 10 + 0.5), 2000);
        CgroupFigures never = {};
        ASSERT(cgroup_cpu_percent(&never, &b) < 0);
        b.cpu_usec = POD_STATS_UNKNOWN;
        ASSERT(cgroup_cpu_percent(&a, &b) < 0);
        b.cpu_usec = 1; /* went backwards: not a figure */
        ASSERT(cgroup_cpu_percent(&a, &b) < 0);
}

static void test_since(void) {
        /* 2026-11-25T12:30:00Z, in UTC for the local forms. */
        const uint64_t now = 1795609800ULL * USEC_PER_SEC;
        uint64_t v;
        setenv("TZ", "UTC", 1);
        tzset();
        ASSERT_EQ_INT(journal_since_parse("now", now, &v), 0);
        ASSERT_EQ_INT(v, now);
        ASSERT_EQ_INT(journal_since_parse("today", now, &v), 0);
        ASSERT_EQ_INT(v, 1795564800ULL * USEC_PER_SEC);
        ASSERT_EQ_INT(journal_since_parse("yesterday", now, &v), 0);
        ASSERT_EQ_INT(v, (1795564800ULL - 86400) * USEC_PER_SEC);
        ASSERT_EQ_INT(journal_since_parse("-1h", now, &v), 0);
        ASSERT_EQ_INT(v, now - 3600 * USEC_PER_SEC);
        ASSERT_EQ_INT(journal_since_parse("10m ago", now, &v), 0);
        ASSERT_EQ_INT(v, now - 600 * USEC_PER_SEC);
        ASSERT_EQ_INT(journal_since_parse("@1764000000", now, &v), 0);
        ASSERT_EQ_INT(v, 1764000000ULL * USEC_PER_SEC);
        ASSERT_EQ_INT(journal_since_parse("2026-11-25T10:00:00Z", now, &v), 0);
        ASSERT_EQ_INT(v, 1795600800ULL * USEC_PER_SEC);
        ASSERT_EQ_INT(journal_since_parse("2026-11-25 10:00:00", now, &v), 0);
        ASSERT_EQ_INT(v, 1795600800ULL * USEC_PER_SEC);
        ASSERT_EQ_INT(journal_since_parse("2026-11-25 10:00", now, &v), 0);
        ASSERT_EQ_INT(v, 1795600800ULL * USEC_PER_SEC);
        ASSERT_EQ_INT(journal_since_parse("2026-11-25", now, &v), 0);
        ASSERT_EQ_INT(v, 1795564800ULL * USEC_PER_SEC);
        /* Local time is local. */
        setenv("TZ", "UTC-2", 1);
        tzset();
        ASSERT_EQ_INT(journal_since_parse("2026-11-25 10:00", now, &v), 0);
        ASSERT_EQ_INT(v, (1795600800ULL - 7200) * USEC_PER_SEC);
        setenv("TZ", "UTC", 1);
        tzset();

        static const char *const bad[] = {
                "", "soon", "x", "-", "-x", "ago", " ago", "1 h ago", "10m ago later", "@", "@-1", "@1.5", "@x",
                "@9999999999999", "2026-13-01", "2026-11-25 25:00", "2026-11-25 10", "2026-11-25T10:00:00",
                "1969-12-31", "-100000d", "--1h", "today ", "tomorrow",
        };
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                v = 42;
                if (journal_since_parse(bad[i], now, &v) != -EINVAL) {
                        fprintf(stderr, "\"%s\" was taken as a time\n", bad[i]);
                        ASSERT(false);
                }
                ASSERT_EQ_INT(v, 42);
        }
}

static void test_lines(void) {
        uint64_t v;
        ASSERT_EQ_INT(journal_lines_parse("0", &v), 0);
        ASSERT_EQ_INT(v, 0);
        ASSERT_EQ_INT(journal_lines_parse("25", &v), 0);
        ASSERT_EQ_INT(v, 25);
        ASSERT_EQ_INT(journal_lines_parse("all", &v), 0);
        ASSERT(v == UINT64_MAX);
        static const char *const bad[] = { "", "x", "-1", "+5", "1x", " 1", "1 ", "1234567890", "ALL", "0x10" };
        for (size_t i = 0; i < ELEMENTSOF(bad); i++)
                ASSERT_EQ_INT(journal_lines_parse(bad[i], &v), -EINVAL);
}

static char scratch[] = "/tmp/sdpod-test-pod-stats.XXXXXX";
static int dfd = -1;

static void cleanup(void) {
        closep(&dfd);
        (void) rm_rf(scratch);
}

static void put(const char *path, const char *text) {
        int fd = openat(dfd, path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        ASSERT(fd >= 0);
        ASSERT(write_all(fd, text, strlen(text)) == 0);
        close(fd);
}

static CgroupSet set_of(CgroupHierarchy h, const char *dir) {
        CgroupSet s;
        for (size_t i = 0; i < _CGROUP_HIERARCHY_MAX; i++)
                s.fd[i] = -1;
        s.fd[h] = openat(dfd, dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        ASSERT(s.fd[h] >= 0);
        return s;
}

static void set_close(CgroupSet *s) {
        for (size_t i = 0; i < _CGROUP_HIERARCHY_MAX; i++)
                closep(&s->fd[i]);
}

/* The control files of a cgroup2 cgroup with every controller. */
static void test_read_unified(void) {
        ASSERT_EQ_INT(mkdirat(dfd, "u", 0755), 0);
        put("u/cpu.stat", "usage_usec 1234\nuser_usec 1000\nsystem_usec 234\n");
        put("u/memory.current", "4096\n");
        put("u/memory.max", "max\n");
        put("u/pids.current", "3\n");
        put("u/pids.max", "100\n");
        put("u/io.stat", "8:0 rbytes=10 wbytes=20 rios=1 wios=2 dbytes=0 dios=0\n8:16 rbytes=5 wbytes=0 rios=1\n");
        CgroupSet s = set_of(CGROUP_UNIFIED, "u");
        CgroupFigures f;
        cgroup_figures_read(&s, &f);
        ASSERT(f.sampled_usec > 0);
        ASSERT_EQ_INT(f.cpu_usec, 1234);
        ASSERT_EQ_INT(f.memory_bytes, 4096);
        ASSERT(f.memory_limit_bytes == POD_STATS_NO_LIMIT);
        ASSERT_EQ_INT(f.tasks, 3);
        ASSERT_EQ_INT(f.tasks_limit, 100);
        ASSERT_EQ_INT(f.io_read_bytes, 15);
        ASSERT_EQ_INT(f.io_write_bytes, 20);

        /* An empty io.stat: nothing read yet, which is known. */
        put("u/io.stat", "");
        cgroup_figures_read(&s, &f);
        ASSERT_EQ_INT(f.io_read_bytes, 0);
        set_close(&s);
}

/* A cgroup2 cgroup without the memory, pids and io controllers: unknown,
 * never 0; its tasks are counted in its tree. */
static void test_read_unified_bare(void) {
        ASSERT_EQ_INT(mkdirat(dfd, "b", 0755), 0);
        ASSERT_EQ_INT(mkdirat(dfd, "b/x", 0755), 0);
        ASSERT_EQ_INT(mkdirat(dfd, "b/x/y", 0755), 0);
        put("b/cpu.stat", "usage_usec 7\n");
        put("b/cgroup.threads", "1\n2\n");
        put("b/x/cgroup.threads", "3\n");
        put("b/x/y/cgroup.threads", "4\n5\n");
        CgroupSet s = set_of(CGROUP_UNIFIED, "b");
        CgroupFigures f;
        cgroup_figures_read(&s, &f);
        ASSERT_EQ_INT(f.cpu_usec, 7);
        ASSERT(f.memory_bytes == POD_STATS_UNKNOWN);
        ASSERT(f.memory_limit_bytes == POD_STATS_UNKNOWN);
        ASSERT_EQ_INT(f.tasks, 5);
        ASSERT(f.tasks_limit == POD_STATS_UNKNOWN);
        ASSERT(f.io_read_bytes == POD_STATS_UNKNOWN && f.io_write_bytes == POD_STATS_UNKNOWN);

        /* A symlink to a directory is not walked into. */
        ASSERT_EQ_INT(symlinkat("../u", dfd, "b/x/link"), 0);
        cgroup_figures_read(&s, &f);
        ASSERT_EQ_INT(f.tasks, 5);

        /* Deeper than the bound: the count is unknown, not a part of it. */
        char path[4096] = "b/x/y";
        for (int i = 0; i <= POD_STATS_DEPTH_MAX; i++) {
                strcat(path, "/d");
                ASSERT_EQ_INT(mkdirat(dfd, path, 0755), 0);
        }
        cgroup_figures_read(&s, &f);
        ASSERT(f.tasks == POD_STATS_UNKNOWN);
        ASSERT_EQ_INT(f.cpu_usec, 7);
        set_close(&s);
}

/* More cgroups than the bound: unknown. */
static void test_read_many(void) {
        ASSERT_EQ_INT(mkdirat(dfd, "m", 0755), 0);
        put("m/cgroup.threads", "1\n");
        char name[32];
        for (int i = 0; i < POD_STATS_WALK_MAX; i++) {
                snprintf(name, sizeof(name), "m/%d", i);
                ASSERT_EQ_INT(mkdirat(dfd, name, 0755), 0);
        }
        CgroupSet s = set_of(CGROUP_UNIFIED, "m");
        CgroupFigures f;
        cgroup_figures_read(&s, &f);
        ASSERT(f.tasks == POD_STATS_UNKNOWN);
        snprintf(name, sizeof(name), "m/%d", 0);
        ASSERT_EQ_INT(unlinkat(dfd, name, AT_REMOVEDIR), 0);
        cgroup_figures_read(&s, &f);
        ASSERT_EQ_INT(f.tasks, 1); /* exactly the bound: counted */
        set_close(&s);
}

/* Whatever the files hold, a bad one is unknown, and nothing hangs or
 * follows a link. */
static void test_read_bad(void) {
        ASSERT_EQ_INT(mkdirat(dfd, "bad", 0755), 0);
        CgroupSet s = set_of(CGROUP_UNIFIED, "bad");
        CgroupFigures f;
        static const char *const numbers[] = { "", "\n", "abc\n", "12abc\n", "-1\n", " 5\n", "5", "5\n6\n",
                                               "99999999999999999999999\n", "max\n" };
        for (size_t i = 0; i < ELEMENTSOF(numbers); i++) {
                put("bad/memory.current", numbers[i]);
                cgroup_figures_read(&s, &f);
                ASSERT(f.memory_bytes == POD_STATS_UNKNOWN);
        }
        put("bad/cpu.stat", "usage_usec\nusage_usecx 5\nusage_usec 5x\n");
        cgroup_figures_read(&s, &f);
        ASSERT(f.cpu_usec == POD_STATS_UNKNOWN);

        ASSERT_EQ_INT(unlinkat(dfd, "bad/memory.current", 0), 0);
        ASSERT_EQ_INT(mkfifoat(dfd, "bad/memory.current", 0644), 0);
        ASSERT_EQ_INT(symlinkat("../u/cpu.stat", dfd, "bad/cpu.stat.tmp"), 0);
        ASSERT_EQ_INT(renameat(dfd, "bad/cpu.stat.tmp", dfd, "bad/cpu.stat"), 0);
        cgroup_figures_read(&s, &f);
        ASSERT(f.memory_bytes == POD_STATS_UNKNOWN); /* a FIFO: not opened */
        ASSERT(f.cpu_usec == POD_STATS_UNKNOWN);     /* a symlink: not followed */

        /* Larger than a control file can be. */
        char *big = malloc(200 * 1024);
        ASSERT(big);
        memset(big, '1', 200 * 1024 - 1);
        big[200 * 1024 - 1] = 0;
        put("bad/io.stat", big);
        free(big);
        cgroup_figures_read(&s, &f);
        ASSERT(f.io_read_bytes == POD_STATS_UNKNOWN);
        set_close(&s);
}

/* cgroup v1: the controllers' own files. */
static void test_read_v1(void) {
        ASSERT_EQ_INT(mkdirat(dfd, "cpuacct", 0755), 0);
        ASSERT_EQ_INT(mkdirat(dfd, "memory", 0755), 0);
        ASSERT_EQ_INT(mkdirat(dfd, "blkio", 0755), 0);
        ASSERT_EQ_INT(mkdirat(dfd, "systemd", 0755), 0);
        put("cpuacct/cpuacct.usage", "5000000\n");
        put("memory/memory.usage_in_bytes", "100\n");
        put("memory/memory.limit_in_bytes", "9223372036854771712\n");
        put("blkio/blkio.throttle.io_service_bytes_recursive",
            "8:0 Read 100\n8:0 Write 50\n8:0 Sync 150\n8:0 Total 150\n8:16 Read 1\nTotal 151\n");
        put("systemd/tasks", "1\n2\n3\n");
        CgroupSet s = set_of(CGROUP_V1_CPUACCT, "cpuacct");
        CgroupSet m = set_of(CGROUP_V1_MEMORY, "memory"), b = set_of(CGROUP_V1_BLKIO, "blkio"),
                  n = set_of(CGROUP_NAMED_SYSTEMD, "systemd");
        s.fd[CGROUP_V1_MEMORY] = m.fd[CGROUP_V1_MEMORY];
        s.fd[CGROUP_V1_BLKIO] = b.fd[CGROUP_V1_BLKIO];
        s.fd[CGROUP_NAMED_SYSTEMD] = n.fd[CGROUP_NAMED_SYSTEMD];
        CgroupFigures f;
        cgroup_figures_read(&s, &f);
        ASSERT_EQ_INT(f.cpu_usec, 5000);
        ASSERT_EQ_INT(f.memory_bytes, 100);
        ASSERT(f.memory_limit_bytes == POD_STATS_NO_LIMIT);
        ASSERT_EQ_INT(f.io_read_bytes, 101);
        ASSERT_EQ_INT(f.io_write_bytes, 50);
        ASSERT_EQ_INT(f.tasks, 3); /* no pids controller: systemd's tasks */
        put("memory/memory.limit_in_bytes", "1048576\n");
        cgroup_figures_read(&s, &f);
        ASSERT_EQ_INT(f.memory_limit_bytes, 1048576);
        set_close(&s);
}

int main(void) {
        ASSERT(mkdtemp(scratch));
        dfd = open(scratch, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        ASSERT(dfd >= 0);
        test_cleanup = cleanup;
        test_read_unified();
        test_read_unified_bare();
        test_read_many();
        test_read_bad();
        test_read_v1();
        cleanup();

        test_host_unit();
        test_line_path();
        test_cpu_percent();
        test_since();
        test_lines();
        return 0;
}
