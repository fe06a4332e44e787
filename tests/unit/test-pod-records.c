/* SPDX-License-Identifier: Apache-2.0 */
/* The records a pod writes and the host reads back (pod-info.h): what the
 * writer's formats make reads back as written; anything else a hostile pod
 * may leave there is refused, numbers out of their type's range included.
 * tests/fuzz/fuzz-pod-records.c searches the same readers further. */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "basic/fs.h"
#include "pod/pod-info.h"
#include "tests.h"

static char scratch[] = "/tmp/test-pod-records.XXXXXX";
static int dfd = -1;

static void cleanup(void) {
        if (dfd >= 0)
                (void) rm_rf(scratch);
}

static void put(const char *name, const char *text) {
        int fd = openat(dfd, name, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
        ASSERT(fd >= 0);
        ASSERT(write_all(fd, text, strlen(text)) >= 0);
        close(fd);
}

static int exit_of(const char *text, int *ret) {
        put("a", text);
        PodAppExit x = {};
        int r = pod_app_exit_read_at(dfd, "a", &x);
        *ret = x.exit_status;
        return r;
}

static void test_exit(void) {
        char buf[POD_APP_RECORD_SIZE + 1];
        int v;
        for (int s = 0; s <= 255; s += 85) {
                pod_app_exit_format(buf, s);
                ASSERT_EQ_INT(exit_of(buf, &v), 0);
                ASSERT_EQ_INT(v, s);
        }
        put("a", "");
        PodAppExit x = {};
        ASSERT_EQ_INT(pod_app_exit_read_at(dfd, "a", &x), -ENOENT); /* reserved, not yet written */
        const char *const bad[] = { "256\n", "-1\n", "+3\n", " 3\n", "3 \n", "3\n\n", "x\n", "\n", "0x3\n",
                                    "99999999999999999999\n" };
        for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++)
                ASSERT_EQ_INT(exit_of(bad[i], &v), -EBADMSG);
}

static void test_restarts(void) {
        char buf[POD_APP_RECORD_SIZE + 1];
        PodAppExit x = {};
        pod_app_restarts_format(buf, 3, 1);
        put("a" POD_APP_RESTARTS_SUFFIX, buf);
        ASSERT_EQ_INT(pod_app_restarts_read_at(dfd, "a", &x), 0);
        ASSERT_EQ_INT(x.restarts, 3);
        ASSERT_EQ_INT(x.restart_exit_status, 1);
        const char *const bad[] = { "0 1\n", "3\n", "3 256\n", "2147483648 1\n", "3  1\n", "-3 1\n" };
        for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
                put("a" POD_APP_RESTARTS_SUFFIX, bad[i]);
                ASSERT_EQ_INT(pod_app_restarts_read_at(dfd, "a", &x), -EBADMSG);
        }
}

static void test_health(void) {
        char buf[POD_APP_RECORD_SIZE + 1];
        PodAppHealthRecord h = { .state = POD_APP_HEALTH_UNHEALTHY, .failures = 4, .run_usec = 1764000000000000ULL }, g = {};
        pod_app_health_format(buf, &h);
        ASSERT_STREQ(buf, "unhealthy 4 1764000000000000\n");
        put("a" POD_APP_HEALTH_SUFFIX, buf);
        ASSERT_EQ_INT(pod_app_health_read_at(dfd, "a", &g), 0);
        ASSERT(g.state == h.state && g.failures == h.failures && g.run_usec == h.run_usec);
        const char *const bad[] = { "healthy 4294967296 1\n", "healthy 0 18446744073709551616\n", "sick 0 0\n",
                                    "healthy -1 0\n", "healthy 0\n", "healthy  0 0\n", "healthy 0 0 0\n",
                                    "healthyy 0 0\n", "health 0 0\n", " healthy 0 0\n" };
        for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
                put("a" POD_APP_HEALTH_SUFFIX, bad[i]);
                ASSERT_EQ_INT(pod_app_health_read_at(dfd, "a", &g), -EBADMSG);
        }
}

int main(void) {
        ASSERT(mkdtemp(scratch));
        dfd = open(scratch, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        ASSERT(dfd >= 0);
        test_cleanup = cleanup;
        test_exit();
        test_restarts();
        test_health();
        cleanup();
        return 0;
}
