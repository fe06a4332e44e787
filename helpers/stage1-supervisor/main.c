/* SPDX-License-Identifier: Apache-2.0 */
/* stage1-supervisor: the host entrypoints of the flavors whose run
 * entrypoint supervises one child (sdpod-stage1(7)): fly (fly/fly-run.h:
 * the child is the pod's one app) and kvm (kvm/kvm-run.h: QEMU). One
 * program, installed in each flavor's stage1 image and called by the names
 * the image's manifest gives it:
 *
 *   run UUID            $SDPOD_LOCK_FD: run the pod (exits with its exit
 *                       status), as the flavor its stage1 manifest names
 *   stop UUID [--force] SIGTERM to the supervisor, or SIGKILL to its child
 *   gc UUID             kill what is left in the pod's cgroup, release its
 *                       networks
 *
 * There is no enter entrypoint: nothing of the host's reaches into these
 * pods. The working directory is the pod directory. */
#include <fcntl.h>
#include <libgen.h>
#include <linux/close_range.h>

#include "basic/fs.h"
#include "fly/fly-run.h"
#include "kvm/kvm-run.h"
#include "pod/pod-run.h"
#include "pod/pod-supervised.h"
#include "pod/stage1.h"

static int fail(const char *verb, Error *e) {
        fprintf(stderr, "%s: %s\n", verb, e ? e->msg : strerror(ENOMEM));
        error_free(e);
        return 1;
}

static int run(const char *uuid) {
        Error *err = NULL;
        /* The flavor the host wrote in the pod's stage1 manifest when it
         * was prepared (the pod cannot write it). */
        char flavor[32];
        _cleanup_close_ int pod_fd = open(".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        bool kvm = pod_fd >= 0 && streq(stage1_flavor_of(pod_fd, flavor), STAGE1_FLAVOR_KVM);
        (void) pod_run_entrypoint(uuid, kvm ? kvm_run_exec : fly_run_exec, &err);
        return fail("run", err);
}

int main(int argc, char **argv) {
        const char *verb = basename(argv[0]);
        /* Nothing this program was handed reaches the pod but what it
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
                return pod_supervised_stop(argv[1], argc == 3, &err) < 0 ? fail(verb, err) : 0;
        if (streq(verb, "gc") && argc == 2)
                return pod_supervised_gc(argv[1], &err) < 0 ? fail(verb, err) : 0;
        fprintf(stderr, "%s: unknown entrypoint or arguments of the fly and kvm flavors; see sdpod-stage1(7)\n", verb);
        return 2;
}
