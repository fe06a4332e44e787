/* SPDX-License-Identifier: Apache-2.0 */
/* The records a pod writes and the host reads back (pod-info.h): an app's
 * exit status (NAME), its restarts (NAME.restarts) and its health
 * (NAME.health), rewritten in place by the pod's reaper and pod-helper in
 * files the host reserved. The pod is hostile, so whatever it leaves in
 * them is the input: each reader either refuses it or returns values within
 * their ranges, and what it accepted, written again in the writer's format,
 * reads back as the same values. Longer inputs than a record test the
 * bound: the readers see at most POD_APP_RECORD_SIZE bytes. */
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "basic/fs.h"
#include "fuzz.h"
#include "pod/pod-info.h"

/* Writes text as the record file name (replacing what was there). */
static void put(int dir, const char *name, const void *data, size_t size) {
        _cleanup_close_ int fd = openat(dir, name, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
        if (fd < 0 || write_all(fd, data, size) < 0)
                fuzz_fail("%s/%s: %m", fuzz_scratch_path(), name);
}

static void check_exit(int dir, const void *data, size_t size) {
        put(dir, "app", data, size);
        PodAppExit x = {};
        if (pod_app_exit_read_at(dir, "app", &x) < 0)
                return;
        if (!x.exited || x.exit_status < 0 || x.exit_status > 255)
                fuzz_fail("an exit record read as exited=%d status=%d", x.exited, x.exit_status);
        char buf[POD_APP_RECORD_SIZE + 1];
        pod_app_exit_format(buf, x.exit_status);
        put(dir, "app", buf, strlen(buf));
        PodAppExit y = {};
        if (pod_app_exit_read_at(dir, "app", &y) < 0 || y.exit_status != x.exit_status)
                fuzz_fail("exit status %d, written as \"%s\", does not read back", x.exit_status, buf);
}

static void check_restarts(int dir, const void *data, size_t size) {
        put(dir, "app" POD_APP_RESTARTS_SUFFIX, data, size);
        PodAppExit x = {};
        if (pod_app_restarts_read_at(dir, "app", &x) < 0)
                return;
        if (x.restarts < 1 || x.restarts > INT32_MAX || x.restart_exit_status < 0 || x.restart_exit_status > 255)
                fuzz_fail("a restarts record read as %u restarts, status %d", x.restarts, x.restart_exit_status);
        char buf[POD_APP_RECORD_SIZE + 1];
        pod_app_restarts_format(buf, x.restarts, x.restart_exit_status);
        put(dir, "app" POD_APP_RESTARTS_SUFFIX, buf, strlen(buf));
        PodAppExit y = {};
        if (pod_app_restarts_read_at(dir, "app", &y) < 0 || y.restarts != x.restarts ||
            y.restart_exit_status != x.restart_exit_status)
                fuzz_fail("restarts %u/%d, written as \"%s\", do not read back", x.restarts, x.restart_exit_status, buf);
}

static void check_health(int dir, const void *data, size_t size) {
        put(dir, "app" POD_APP_HEALTH_SUFFIX, data, size);
        PodAppHealthRecord h = {};
        if (pod_app_health_read_at(dir, "app", &h) < 0)
                return;
        if (!pod_app_health_to_string(h.state))
                fuzz_fail("a health record read as state %d", (int) h.state);
        char buf[POD_APP_RECORD_SIZE + 1];
        pod_app_health_format(buf, &h);
        put(dir, "app" POD_APP_HEALTH_SUFFIX, buf, strlen(buf));
        PodAppHealthRecord g = {};
        if (pod_app_health_read_at(dir, "app", &g) < 0 || g.state != h.state || g.failures != h.failures ||
            g.run_usec != h.run_usec)
                fuzz_fail("health \"%s\" does not read back", buf);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        int scratch = fuzz_scratch("pod-records");
        /* Records are small; longer inputs only repeat the bound test. */
        if (size > 4 * POD_APP_RECORD_SIZE)
                return 0;
        unsigned fds = fuzz_count_fds();
        check_exit(scratch, data, size);
        check_restarts(scratch, data, size);
        check_health(scratch, data, size);
        if (fuzz_count_fds() != fds)
                fuzz_fail("a record reader leaked a file descriptor");
        fuzz_scratch_check((const char *const[]) { "outside", "app", "app" POD_APP_RESTARTS_SUFFIX,
                                                   "app" POD_APP_HEALTH_SUFFIX, NULL });
        return 0;
}
