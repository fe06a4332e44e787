/* SPDX-License-Identifier: Apache-2.0 */
#include <fcntl.h>
#include <string.h>
#include <sys/vfs.h>
#include <time.h>
#include <unistd.h>

#include <linux/magic.h>

#include "basic/fs.h"
#include "basic/macro.h"
#include "basic/time-util.h"
#include "pod/pod-stats.h"
#include "shim/shim-resources.h"

/* cgroup.events and cgroup.freeze are a few dozen bytes. */
#define CGROUP_CONTROL_MAX 4096

/* The app's cgroup in the cgroup2 hierarchy (pod-stats.h), duplicated. */
static int app_cgroup2_open(PodStore *ps, const char *uuid, const char *app, Error **err) {
        _cleanup_pod_ Pod *p = NULL;
        _cleanup_(pod_stats_done) PodStats st = {};
        int r = pod_lookup(ps, uuid, &p, err);
        if (r < 0 || (r = pod_stats_open(p, &st, err)) < 0)
                return r;
        for (size_t i = 0; i < st.n_apps; i++) {
                if (!streq(st.apps[i].name, app))
                        continue;
                if (!st.apps[i].running)
                        return error_set(err, -ESRCH, "app %s of pod %s does not run", app, uuid);
                int fd = st.apps[i].cgroup.fd[CGROUP_UNIFIED];
                if (fd < 0)
                        return error_set(err, -EOPNOTSUPP,
                                         "app %s of pod %s has no cgroup2 cgroup, whose freezer pauses it (the host "
                                         "has no cgroup2 hierarchy; cgroup v1's freezer is not the pod's)",
                                         app, uuid);
                fd = fcntl(fd, F_DUPFD_CLOEXEC, 3);
                return fd < 0 ? error_sys(err, -errno, "app %s of pod %s", app, uuid) : fd;
        }
        return error_set(err, -ENOENT, "pod %s has no app %s", uuid, app);
}

/* Writes a cgroup2 control file of dir: the kernel's file, never a link,
 * nor anything but cgroup2's. */
static int control_write(int dir, const char *name, const char *value, Error **err) {
        _cleanup_close_ int fd = openat(dir, name, O_WRONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
        if (fd < 0)
                return error_sys(err, -errno, "%s", name);
        struct statfs sfs;
        if (fstatfs(fd, &sfs) < 0)
                return error_sys(err, -errno, "%s", name);
        if (sfs.f_type != CGROUP2_SUPER_MAGIC)
                return error_set(err, -EBADF, "%s is not a cgroup2 file", name);
        size_t n = strlen(value);
        ssize_t w = write(fd, value, n);
        if (w < 0)
                return error_sys(err, -errno, "cannot write \"%s\" to %s", value, name);
        return (size_t) w == n ? 0 : error_set(err, -EIO, "short write to %s", name);
}

/* Whether cgroup.events says "frozen 1"; < 0 when it cannot be read. */
static int frozen(int dir) {
        _cleanup_free_ char *data = NULL;
        size_t size;
        _cleanup_error_ Error *ignored = NULL;
        if (read_file_at(dir, "cgroup.events", CGROUP_CONTROL_MAX, &data, &size, &ignored) < 0)
                return -EIO;
        for (const char *line = data; line && *line;) {
                if (strncmp(line, "frozen ", 7) == 0)
                        return line[7] == '1';
                line = strchr(line, '\n');
                if (line)
                        line++;
        }
        return -EIO;
}

int shim_app_freeze(PodStore *ps, const char *uuid, const char *app, bool freeze, Error **err) {
        _cleanup_close_ int dir = app_cgroup2_open(ps, uuid, app, err);
        if (dir < 0)
                return dir;
        int r = control_write(dir, "cgroup.freeze", freeze ? "1" : "0", err);
        if (r < 0)
                return error_prefix(err, "app %s of pod %s", app, uuid);
        if (!freeze)
                return 0;
        /* Frozen once every process of the cgroup has stopped; bounded, and
         * each look a small read. */
        uint64_t deadline = monotonic_usec() + SHIM_FREEZE_TIMEOUT_USEC;
        for (;;) {
                r = frozen(dir);
                if (r > 0)
                        return 0;
                if (monotonic_usec() >= deadline)
                        break;
                nanosleep(&(struct timespec) { .tv_nsec = 5 * 1000 * 1000 }, NULL);
        }
        _cleanup_error_ Error *ignored = NULL;
        (void) control_write(dir, "cgroup.freeze", "0", &ignored);
        return error_set(err, -ETIMEDOUT, "app %s of pod %s did not freeze within %llu s (a process of it in an "
                         "uninterruptible sleep?); it was thawed again", app, uuid,
                         (unsigned long long) (SHIM_FREEZE_TIMEOUT_USEC / 1000000));
}
