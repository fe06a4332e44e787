/* SPDX-License-Identifier: Apache-2.0 */
/* sdpod-generator: runs inside a pod, under the pod's systemd, and writes
 * the units of the pod's apps (sdpod-generator(8)). What it writes is
 * decided by pod_units_build(); this only logs and writes the files. */
#include <fcntl.h>
#include <stdarg.h>
#include <sys/stat.h>

#include "basic/fs.h"
#include "basic/macro.h"
#include "unit/pod-units.h"
#include "unit/pod-userdb.h"

#define LOG_PREFIX "sdpod-generator: "

/* The kernel log when it can be written (on a host, or in a container that
 * has one); else stderr, which the pod's systemd sends to its console. A
 * generator may not talk to journald: it runs before it. */
static int kmsg_fd = -1;

static void log_open(bool test_root) {
        /* A test run (SDPOD_GENERATOR_ROOT) never writes to the host's
         * kernel log. */
        if (!test_root)
                kmsg_fd = open("/dev/kmsg", O_WRONLY | O_NOCTTY | O_CLOEXEC);
}

static void log_msg(int priority, const char *fmt, ...) _printf_(2, 3);
static void log_msg(int priority, const char *fmt, ...) {
        _cleanup_free_ char *msg = NULL;
        va_list ap;
        va_start(ap, fmt);
        if (vasprintf(&msg, fmt, ap) < 0)
                msg = NULL;
        va_end(ap);
        if (!msg)
                return;
        if (kmsg_fd >= 0 && dprintf(kmsg_fd, "<%d>" LOG_PREFIX "%s\n", priority, msg) > 0)
                return;
        fprintf(stderr, LOG_PREFIX "%s\n", msg);
}
#define log_error(...) log_msg(3, __VA_ARGS__)

static int write_unit_file(int outfd, const UnitFile *f) {
        /* A path with directories (default.target.wants/NAME,
         * default.target.d/NAME.conf) gets them made as needed, never
         * through a symlink. */
        _cleanup_close_ int subfd = -1;
        const char *name = f->path, *slash = strrchr(f->path, '/');
        if (slash) {
                _cleanup_free_ char *dir = strndup(f->path, (size_t) (slash - f->path));
                if (!dir)
                        return -ENOMEM;
                if ((subfd = mkdir_p_in_root(outfd, dir, 0755, false)) < 0)
                        return subfd;
                name = slash + 1;
        }
        int dirfd = slash ? subfd : outfd;
        if (f->link_target)
                return RET_NERRNO(symlinkat(f->link_target, dirfd, name));

        /* Exclusively: a file that exists was written by another generator
         * or an earlier run, and is not overwritten. */
        _cleanup_close_ int fd = openat(dirfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
        if (fd < 0)
                return -errno;
        int r = write_all(fd, f->content, strlen(f->content));
        if (r < 0)
                return r;
        return RET_NERRNO(close(TAKE_FD(fd)));
}

int main(int argc, char *argv[]) {
        const char *test_root = getenv("SDPOD_GENERATOR_ROOT");
        log_open(test_root && *test_root);

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
                if ((r = write_unit_file(outfd, &units.files[i])) < 0)
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
