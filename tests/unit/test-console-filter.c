/* SPDX-License-Identifier: Apache-2.0 */
/* The filter of a pod's console on its way to the user's terminal
 * (printable_filter_start()): nspawn's noise ("Failed to create symlink
 * /sys/fs/cgroup/cpu: File exists", issue 26 item 11) is left out, however
 * the writes cut it; every other line, nspawn's real errors included, and
 * text without a newline pass, escaped as before. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include "basic/relay.h"
#include "tests.h"

/* What the filter makes of the writes of chunks (NULL-terminated), each
 * cut in pieces of step bytes (0: whole). */
static char *filtered(const char *const *chunks, size_t step) {
        int out[2], done = -1;
        ASSERT(pipe2(out, O_CLOEXEC) == 0);
        int w = printable_filter_start(out[1], &done);
        ASSERT(w >= 0);
        close(out[1]);
        for (const char *const *c = chunks; *c; c++) {
                size_t n = strlen(*c);
                for (size_t i = 0; i < n; i += step ? step : n) {
                        size_t k = step && step < n - i ? step : n - i;
                        ASSERT_EQ_INT(write(w, *c + i, k), (ssize_t) k);
                        if (step)
                                usleep(200);
                }
        }
        printable_filter_finish(&w, &done);
        static char buf[8192];
        size_t have = 0;
        ssize_t r;
        while ((r = read(out[0], buf + have, sizeof(buf) - 1 - have)) > 0)
                have += (size_t) r;
        buf[have] = 0;
        close(out[0]);
        return buf;
}

static void test_noise(size_t step) {
        const char *const in[] = {
                "Failed to create symlink /sys/fs/cgroup/cpuacct: File exists\r\n",
                "Failed to create symlink /sys/fs/cgroup/cpu: File exists\n",
                "Failed to create symlink /sys/fs/cgroup/net_prio: Permission denied\n",
                "Failed to create symlink /sys/fs/cgroup/../../etc: File exists\n",
                "[  1.2] pod ready\n",
                "x Failed to create symlink /sys/fs/cgroup/cpu: File exists\n",
                "Failed to mount cgroup: Invalid argument\n",
                "\033]52;c;AAAA\007\n",
                "Failed to create symlink /sys/fs/cgroup/cpu",
                NULL,
        };
        const char *want =
                "Failed to create symlink /sys/fs/cgroup/net_prio: Permission denied\n"
                "Failed to create symlink /sys/fs/cgroup/../../etc: File exists\n"
                "[  1.2] pod ready\n"
                "x Failed to create symlink /sys/fs/cgroup/cpu: File exists\n"
                "Failed to mount cgroup: Invalid argument\n"
                "\\x1b]52;c;AAAA\\x07\n"
                "Failed to create symlink /sys/fs/cgroup/cpu";
        ASSERT_STREQ(filtered(in, step), want);
}

/* A long line that starts as the noise does is not held for ever. */
static void test_long_line(void) {
        char line[400];
        memset(line, 'a', sizeof(line) - 2);
        memcpy(line, "Failed to create symlink /sys/fs/cgroup/", 40);
        line[sizeof(line) - 2] = '\n';
        line[sizeof(line) - 1] = 0;
        const char *const in[] = { line, NULL };
        ASSERT_STREQ(filtered(in, 0), line);
}

int main(void) {
        signal(SIGPIPE, SIG_IGN);
        test_noise(0);
        test_noise(1);
        test_noise(7);
        test_long_line();
        printf("ok\n");
        return 0;
}
