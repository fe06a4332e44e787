/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "basic/crash-point.h"

#if SDPOD_CRASH_POINTS
static const struct {
        const char *name, *operation, *what;
} crash_points[_CRASH_POINT_MAX] = {
#define CRASH_POINT_ENTRY(id, n, op, w) [CRASH_##id] = { n, op, w },
        CRASH_POINTS(CRASH_POINT_ENTRY)
#undef CRASH_POINT_ENTRY
};

void crash_point(CrashPoint p) {
        /* Passes of each step in this process, for "NAME:N". */
        static unsigned passes[_CRASH_POINT_MAX];
        const char *at = getenv("SDPOD_CRASH_AT");
        if (!at || p < 0 || p >= _CRASH_POINT_MAX)
                return;
        const char *name = crash_points[p].name;
        size_t n = strlen(name);
        if (strncmp(at, name, n) != 0 || (at[n] != 0 && at[n] != ':'))
                return;
        unsigned want = at[n] == ':' ? (unsigned) strtoul(at + n + 1, NULL, 10) : 1;
        if (++passes[p] != want)
                return;
        /* One write(2), so that it is whole even when other processes
         * share the stream; the test reads which process died. */
        char line[160];
        int k = snprintf(line, sizeof(line), "sdpod: crash point %s: SIGKILL to pid %d\n", name, (int) getpid());
        if (k > 0)
                (void) !write(STDERR_FILENO, line, (size_t) k < sizeof(line) ? (size_t) k : sizeof(line) - 1);
        kill(getpid(), SIGKILL);
        /* SIGKILL cannot be blocked or caught; nothing goes on past it. */
        for (;;)
                pause();
}

int crash_points_print(void) {
        for (size_t i = 0; i < _CRASH_POINT_MAX; i++)
                printf("%s\t%s\t%s\n", crash_points[i].name, crash_points[i].operation, crash_points[i].what);
        return 0;
}
#else
int crash_points_print(void) {
        return -EOPNOTSUPP;
}
#endif
