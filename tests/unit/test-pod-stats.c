/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

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

int main(void) {
        test_host_unit();
        test_line_path();
        test_cpu_percent();
        test_since();
        test_lines();
        return 0;
}
