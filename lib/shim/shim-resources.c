/* SPDX-License-Identifier: Apache-2.0 */
#include <fcntl.h>
#include <string.h>
#include <sys/vfs.h>
#include <time.h>
#include <unistd.h>

#include <linux/magic.h>

#include "basic/fs.h"
#include "bus/bus-util.h"
#include "bus/pod-bus.h"
#include "basic/macro.h"
#include "basic/time-util.h"
#include "pod/pod-stats.h"
#include "shim/oci-spec.h"
#include "shim/shim-resources.h"
#include "shim/shim-task.h"
#include "unit/app-unit.h"

/* cgroup.events and cgroup.freeze are a few dozen bytes. */
#define CGROUP_CONTROL_MAX 4096

/* The app's cgroup in the cgroup2 hierarchy (pod-stats.h). */
static int app_cgroup2_open(PodStore *ps, const char *uuid, const char *app, Error **err) {
        _cleanup_pod_ Pod *p = NULL;
        _cleanup_(cgroup_set_done) CgroupSet cg = CGROUP_SET_NONE;
        int r = pod_lookup(ps, uuid, &p, err);
        if (r < 0 || (r = pod_app_cgroups_open(p, app, &cg, err)) < 0)
                return r;
        if (cg.fd[CGROUP_UNIFIED] < 0)
                return error_set(err, -EOPNOTSUPP,
                                 "app %s of pod %s has no cgroup2 cgroup, whose freezer pauses it (the host has no "
                                 "cgroup2 hierarchy; cgroup v1's freezer is not the pod's)",
                                 app, uuid);
        return TAKE_FD(cg.fd[CGROUP_UNIFIED]);
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

/* One limit an update may set: its field, the cgroup2 file whose
 * presence says the pod's systemd can apply it, and its unit property. */
typedef struct Limit {
        const char *field, *control, *controller, *property;
        uint64_t value;
} Limit;

int shim_app_update(PodStore *ps, const char *uuid, const char *app, const char *resources_json, Error **err) {
        _cleanup_oci_spec_ OciSpec *spec = NULL;
        int r = oci_resources_parse(resources_json, strlen(resources_json), &spec, err);
        if (r < 0)
                return error_prefix(err, "Update of app %s of pod %s", app, uuid);
        const OciResources *res = &spec->resources;
        Limit limits[3];
        size_t n = 0;
        if (res->memory_limit > 0)
                limits[n++] = (Limit) { "linux.resources.memory.limit", "memory.max", "memory", "MemoryMax",
                                        (uint64_t) res->memory_limit };
        if (res->cpu_quota > 0) {
                /* CPUQuota= as the bus has it: microseconds of CPU per second,
                 * rounded up (never less than asked), as at creation. */
                uint64_t period = res->cpu_period ? res->cpu_period : 100000;
                limits[n++] = (Limit) { "linux.resources.cpu.quota", "cpu.max", "cpu", "CPUQuotaPerSecUSec",
                                        ((uint64_t) res->cpu_quota * 1000000 + period - 1) / period };
        }
        if (res->pids_limit > 0)
                limits[n++] = (Limit) { "linux.resources.pids.limit", "pids.max", "pids", "TasksMax",
                                        (uint64_t) res->pids_limit };
        if (n == 0)
                return 0;       /* nothing sdpod applies (shim-resources.h) */

        /* Refused before anything is set: each controller must be there. */
        _cleanup_close_ int dir = app_cgroup2_open(ps, uuid, app, err);
        if (dir == -EOPNOTSUPP)
                return error_set(err, -EOPNOTSUPP, "Update: %s cannot be applied to app %s of pod %s: the host has no "
                                 "cgroup2 hierarchy, where the pod's systemd applies the app's limits "
                                 "(sdpod-security(7))", limits[0].field, app, uuid);
        if (dir < 0)
                return dir;
        for (size_t i = 0; i < n; i++)
                if (faccessat(dir, limits[i].control, F_OK, AT_SYMLINK_NOFOLLOW) < 0)
                        return error_set(err, -EOPNOTSUPP,
                                         "Update: %s cannot be applied to app %s of pod %s: its cgroup has no %s "
                                         "controller (no %s; a cgroup v1 or hybrid host, or the controller is not "
                                         "delegated to the pod), so the pod's systemd would apply no %s= "
                                         "(sdpod-security(7))", limits[i].field, app, uuid, limits[i].controller,
                                         limits[i].control, limits[i].property);

        pid_t leader;
        _cleanup_bus_ sd_bus *bus = NULL;
        if ((r = shim_pod_leader(ps, uuid, &leader, err)) < 0 || (r = pod_bus_open(leader, &bus, err)) < 0)
                return error_prefix(err, "Update of app %s of pod %s", app, uuid);
        char unit[128];
        snprintf(unit, sizeof(unit), APP_UNIT_FORMAT, app);
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL;
        if ((r = bus_manager_new_call(bus, "SetUnitProperties", &m, err)) < 0)
                return error_prefix(err, "Update of %s of pod %s", unit, uuid);
        /* runtime false: kept across the pod's daemon reloads, as the unit
         * file's were. */
        r = sd_bus_message_append(m, "sb", unit, false);
        if (r >= 0)
                r = sd_bus_message_open_container(m, 'a', "(sv)");
        for (size_t i = 0; r >= 0 && i < n; i++)
                r = sd_bus_message_append(m, "(sv)", limits[i].property, "t", limits[i].value);
        if (r >= 0)
                r = sd_bus_message_close_container(m);
        if (r < 0)
                return error_sys(err, r, "Update of %s of pod %s", unit, uuid);
        sd_bus_error e = SD_BUS_ERROR_NULL;
        if ((r = sd_bus_call(bus, m, POD_BUS_CALL_TIMEOUT_USEC, &e, NULL)) < 0) {
                r = error_set(err, r, "Update of %s of pod %s: %s", unit, uuid, e.message ?: strerror(-r));
                sd_bus_error_free(&e);
                return r;
        }
        return 0;
}
