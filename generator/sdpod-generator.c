/* SPDX-License-Identifier: Apache-2.0 */
/* sdpod-generator: runs inside a pod, under the pod's systemd, and writes
 * the units of the pod's apps (sdpod-generator(8)). What it writes is
 * decided by pod_units_build(); this only logs and writes the files. */
#include <fcntl.h>

#include "basic/macro.h"
#include "unit/generator.h"
#include "unit/pod-units.h"
#include "unit/pod-userdb.h"

#define log_error(...) generator_log(3, __VA_ARGS__)

int main(int argc, char *argv[]) {
        const char *test_root = getenv("SDPOD_GENERATOR_ROOT");
        /* A test run (SDPOD_GENERATOR_ROOT) never writes to the host's
         * kernel log. In a pod, the kernel log is often not there: the
         * pod's systemd sends stderr to its console. */
        generator_log_open("sdpod-generator", test_root && *test_root);

        /* systemd.generator(7): no arguments (a manual run, into /tmp as
         * systemd's own generators do) or normal, early and late. */
        if (argc != 1 && argc != 4) {
                log_error("expected no arguments or three directories (normal early late), got %d", argc - 1);
                return 1;
        }
        const char *normal = argc > 1 ? argv[1] : "/tmp";
        const char *root = test_root && *test_root ? test_root : "/";

        _cleanup_close_ int outfd = open(normal, O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (outfd < 0) {
                log_error("%s: %s", normal, strerror(errno));
                return 1;
        }
        /* A root that cannot be opened leaves -1: pod_units_build() then
         * reports the manifest as unreadable, in a unit, as any other
         * manifest error. */
        _cleanup_close_ int rootfd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (rootfd < 0)
                log_error("%s: %s", root, strerror(errno));

        _cleanup_(pod_units_done) PodUnits units = {};
        int r = pod_units_build(rootfd, &units);
        if (r < 0) {
                log_error("%s", strerror(-r));
                return 1;
        }
        for (char **e = units.errors; e && *e; e++)
                log_error("%s", *e);

        /* Whatever could not be written is logged and the rest still is:
         * exiting non-zero would only hide what was written. */
        for (size_t i = 0; i < units.n_files; i++)
                if ((r = unit_file_write(outfd, &units.files[i])) < 0)
                        log_error("%s/%s: %s", normal, units.files[i].path, strerror(-r));
        /* Each id an app runs as, in the pod's own /etc (pod-userdb.h):
         * written here, inside the pod, by its root, never by the host. */
        for (size_t i = 0; rootfd >= 0 && i < units.n_ids; i++) {
                _cleanup_error_ Error *err = NULL;
                if (pod_userdb_add(rootfd, units.ids[i].uid, units.ids[i].gid, &err) < 0)
                        log_error("%s", err ? err->msg : strerror(ENOMEM));
        }
        return 0;
}
