/* SPDX-License-Identifier: Apache-2.0 */
/* stage1-fly: the fly flavor's entrypoints, which run on the host, one
 * program called by the names its stage1 manifest gives it
 * (sdpod-stage1(7), fly/fly-run.h):
 *
 *   run UUID            $SDPOD_LOCK_FD: run the pod's one app (exits with
 *                       its exit status)
 *   stop UUID [--force] SIGTERM to the app through its supervisor, or
 *                       SIGKILL to the app
 *   gc UUID             kill what is left in the pod's cgroup, release its
 *                       networks
 *
 * There is no enter entrypoint: nothing runs in a fly pod but its app.
 * The working directory is the pod directory. */
#include <fcntl.h>
#include <libgen.h>
#include <linux/close_range.h>

#include "basic/fs.h"
#include "fly/fly-run.h"
#include "pod/pod-run.h"

static int fail(const char *verb, Error *e) {
        fprintf(stderr, "%s: %s\n", verb, e ? e->msg : strerror(ENOMEM));
        error_free(e);
        return 1;
}

static int run(const char *uuid) {
        Error *err = NULL;
        (void) pod_run_entrypoint(uuid, fly_run_exec, &err);
        return fail("run", err);
}

int main(int argc, char **argv) {
        const char *verb = basename(argv[0]);
        /* Nothing this program was handed reaches the app but what it
         * passes on itself. */
        if (close_range(3, ~0U, CLOSE_RANGE_CLOEXEC) < 0)
                return 1;
        if (argc < 2) {
                fprintf(stderr, "%s: the pod's UUID is missing; see sdpod-stage1(7)\n", verb);
                return 2;
        }
        Error *err = NULL;
        if (streq(verb, "run") && argc == 2)
                return run(argv[1]);
        if (streq(verb, "stop") && (argc == 2 || (argc == 3 && streq(argv[2], "--force"))))
                return fly_stop(argv[1], argc == 3, &err) < 0 ? fail(verb, err) : 0;
        if (streq(verb, "gc") && argc == 2)
                return fly_gc(argv[1], &err) < 0 ? fail(verb, err) : 0;
        fprintf(stderr, "%s: unknown entrypoint or arguments of the fly flavor; see sdpod-stage1(7)\n", verb);
        return 2;
}
