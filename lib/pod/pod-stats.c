/* SPDX-License-Identifier: Apache-2.0 */
#include <fcntl.h>
#include <inttypes.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include "basic/fs.h"
#include "basic/time-util.h"
#include "pod/pod-cgroup.h"
#include "pod/pod-info.h"
#include "pod/pod-process.h"
#include "pod/pod-stats.h"
#include "unit/app-unit.h"

#define CGROUP_ROOT "/sys/fs/cgroup"
/* Control files are a line or a few (io.stat: one per device). */
#define CGROUP_FILE_MAX (64 * 1024)
/* A list of tasks read to count them: beyond this, the count is unknown. */
#define CGROUP_TASKS_BYTES_MAX (4 * 1024 * 1024)

/* The name of each hierarchy in /proc/PID/cgroup ("" is cgroup2's), and
 * where it may be mounted below /sys/fs/cgroup (the cpu and cpuacct
 * controllers are often mounted together). */
static const struct {
        const char *controller;
        const char *dirs[4];
} hierarchy_table[_CGROUP_HIERARCHY_MAX] = {
        [CGROUP_UNIFIED] = { "", { "", "unified" } },
        [CGROUP_NAMED_SYSTEMD] = { "name=systemd", { "systemd" } },
        [CGROUP_V1_CPUACCT] = { "cpuacct", { "cpuacct", "cpu,cpuacct", "cpuacct,cpu" } },
        [CGROUP_V1_MEMORY] = { "memory", { "memory" } },
        [CGROUP_V1_PIDS] = { "pids", { "pids" } },
        [CGROUP_V1_BLKIO] = { "blkio", { "blkio" } },
};

static void cgroup_set_init(CgroupSet *s) {
        for (size_t h = 0; h < _CGROUP_HIERARCHY_MAX; h++)
                s->fd[h] = -1;
}

void cgroup_set_done(CgroupSet *s) {
        for (size_t h = 0; h < _CGROUP_HIERARCHY_MAX; h++)
                closep(&s->fd[h]);
}

/* Opens the root of each hierarchy mounted on this host (a host path: ours
 * to follow). statfs() tells a cgroup2 from a v1 hierarchy: on a cgroup v1
 * or hybrid host /sys/fs/cgroup itself is a tmpfs. */
static void hierarchy_roots(CgroupSet *ret) {
        cgroup_set_init(ret);
        for (size_t h = 0; h < _CGROUP_HIERARCHY_MAX; h++)
                for (const char *const *d = hierarchy_table[h].dirs; *d && ret->fd[h] < 0; d++) {
                        char path[64];
                        struct statfs fs;
                        snprintf(path, sizeof(path), CGROUP_ROOT "%s%s", **d ? "/" : "", *d);
                        long magic = h == CGROUP_UNIFIED ? CGROUP2_SUPER_MAGIC : CGROUP_SUPER_MAGIC;
                        if (statfs(path, &fs) == 0 && fs.f_type == magic)
                                ret->fd[h] = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                }
}

const char *cgroup_line_path(const char *line, CgroupHierarchy h) {
        const char *controllers = strchr(line, ':');
        const char *path = controllers ? strchr(controllers + 1, ':') : NULL;
        if (!path)
                return NULL;
        controllers++;
        const char *want = hierarchy_table[h].controller;
        size_t l = strlen(want);
        if (!*want)
                return path == controllers ? path + 1 : NULL;
        /* One of the comma-separated names of a v1 hierarchy. */
        for (const char *c = controllers; c < path;) {
                const char *end = memchr(c, ',', (size_t) (path - c)) ?: path;
                if ((size_t) (end - c) == l && strncmp(c, want, l) == 0)
                        return path + 1;
                c = end + 1;
        }
        return NULL;
}

char *cgroup_path_host_unit(const char *path) {
        /* Slices first ("/system.slice", "/machine.slice"), then the unit:
         * systemd places every unit so, and only below the unit it
         * delegated (pod@.service or nspawn's scope) does the pod begin. */
        const char *p = path;
        while (*p == '/') {
                const char *end = strchrnul(p + 1, '/');
                size_t l = (size_t) (end - p - 1);
                bool slice = l > 6 && strncmp(end - 6, ".slice", 6) == 0;
                bool unit = (l > 8 && strncmp(end - 8, ".service", 8) == 0) || (l > 6 && strncmp(end - 6, ".scope", 6) == 0);
                if (unit) {
                        char *s = strndup(path, (size_t) (end - path));
                        return s;
                }
                if (!slice)
                        break;
                p = end;
        }
        errno = ENOENT;
        return NULL;
}

/* Whether path is base or below it. */
static bool path_below(const char *path, const char *base) {
        const char *rest = startswith(path, base);
        return rest && (*rest == 0 || *rest == '/' || streq(base, "/"));
}

/* The pod's cgroup path and, for each hierarchy where it has that cgroup,
 * an fd of it. The leader's line in a hierarchy tells whether the pod is
 * there: a pod that has no cgroup of its own in a v1 controller (no host
 * systemd made one) sits in whatever cgroup its starter was in, and that
 * is not the pod's. */
static int find_pod_cgroups(const char *uuid, pid_t leader, char **ret_path, CgroupSet *ret, Error **err) {
        char path[64];
        snprintf(path, sizeof(path), "/proc/%d/cgroup", (int) leader);
        _cleanup_free_ char *data = NULL;
        size_t size;
        /* A path is at most PATH_MAX: the kernel fails the read otherwise. */
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0 || read_fd(fd, path, 32 * 4096, &data, &size, NULL) < 0)
                return error_set(err, -ESRCH, "pod %s is not running (its PID 1 has gone)", uuid);

        CgroupSet roots;
        hierarchy_roots(&roots);
        const char *lines[_CGROUP_HIERARCHY_MAX] = {};
        for (char *line = data, *next; line && *line; line = next) {
                next = strchr(line, '\n');
                if (next)
                        *next++ = 0;
                for (size_t h = 0; h < _CGROUP_HIERARCHY_MAX; h++)
                        if (!lines[h])
                                lines[h] = cgroup_line_path(line, (CgroupHierarchy) h);
        }
        CgroupHierarchy primary = roots.fd[CGROUP_UNIFIED] >= 0 && lines[CGROUP_UNIFIED] ? CGROUP_UNIFIED : CGROUP_NAMED_SYSTEMD;
        _cleanup_free_ char *pod_path = NULL;
        if (!lines[primary] || roots.fd[primary] < 0) {
                cgroup_set_done(&roots);
                return error_set(err, -ENOENT, "pod %s: its cgroup is not found (no cgroup2 nor name=systemd hierarchy)", uuid);
        }
        if (sd_booted() <= 0) {
                /* No host systemd: the run entrypoint made it. */
                pod_path = pod_cgroup_path(uuid);
                errno = ENOMEM;
        } else
                pod_path = cgroup_path_host_unit(lines[primary]);
        if (!pod_path || !path_below(lines[primary], pod_path)) {
                cgroup_set_done(&roots);
                if (!pod_path && errno == ENOMEM)
                        return error_sys(err, -ENOMEM, "pod %s", uuid);
                return error_set(err, -ENOENT, "pod %s: its PID 1 is not in the pod's cgroup", uuid);
        }
        cgroup_set_init(ret);
        for (size_t h = 0; h < _CGROUP_HIERARCHY_MAX; h++) {
                if (roots.fd[h] < 0 || !lines[h] || !path_below(lines[h], pod_path))
                        continue;
                ret->fd[h] = streq(pod_path, "/") ? -1
                                                  : open_beneath_no_symlinks(roots.fd[h], pod_path + 1,
                                                                             O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
        }
        cgroup_set_done(&roots);
        if (ret->fd[primary] < 0) {
                cgroup_set_done(ret);
                return error_set(err, -ENOENT, "pod %s: cannot open its cgroup %s", uuid, pod_path);
        }
        *ret_path = TAKE_PTR(pod_path);
        return 0;
}

/* The app's unit cgroup below the pod's in each hierarchy. nspawn puts the
 * pod's systemd in a "payload" cgroup where the host has cgroup2, or
 * directly in the pod's otherwise; its system.slice holds the apps. The
 * name comes from the manifest (an app name: [a-z0-9-]), never from a
 * directory listing, so a cgroup the pod made for an app it does not have
 * is never looked at. */
static void find_app_cgroups(const CgroupSet *pod, const char *app, CgroupSet *ret) {
        cgroup_set_init(ret);
        for (size_t h = 0; h < _CGROUP_HIERARCHY_MAX; h++) {
                if (pod->fd[h] < 0)
                        continue;
                static const char *const prefixes[] = { "payload/", "" };
                for (size_t i = 0; i < ELEMENTSOF(prefixes) && ret->fd[h] < 0; i++) {
                        char path[256];
                        snprintf(path, sizeof(path), "%ssystem.slice/system-app.slice/" APP_UNIT_FORMAT, prefixes[i], app);
                        ret->fd[h] = open_beneath_no_symlinks(pod->fd[h], path, O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
                }
        }
}

/* Reads a control file of a cgroup: kernel text, but looked up without
 * following anything and bounded all the same. NULL when it is not there
 * (its controller is not enabled for this cgroup). */
static char *read_control(int dir, const char *name) {
        if (dir < 0)
                return NULL;
        char *data = NULL;
        size_t size;
        Error *ignored = NULL;
        if (read_file_at(dir, name, CGROUP_FILE_MAX, &data, &size, &ignored) < 0) {
                error_free(ignored);
                return NULL;
        }
        return data;
}

static bool parse_u64(const char *s, const char *end_chars, uint64_t *ret) {
        if (*s < '0' || *s > '9')
                return false;
        char *end;
        errno = 0;
        unsigned long long v = strtoull(s, &end, 10);
        if (errno != 0 || !strchr(end_chars, *end))
                return false;
        *ret = v;
        return true;
}

/* A file of one number ("max" for no limit, with allow_max). */
static uint64_t read_number(int dir, const char *name, bool allow_max) {
        _cleanup_free_ char *s = read_control(dir, name);
        uint64_t v;
        if (!s)
                return POD_STATS_UNKNOWN;
        if (allow_max && streq(s, "max\n"))
                return POD_STATS_NO_LIMIT;
        /* Exactly "N\n": anything else is not this file as the kernel writes it. */
        const char *nl = strchr(s, '\n');
        return parse_u64(s, "\n", &v) && nl && nl[1] == 0 ? v : POD_STATS_UNKNOWN;
}

/* The value of "KEY N" in a flat-keyed file (cpu.stat). */
static uint64_t read_key(int dir, const char *name, const char *key) {
        _cleanup_free_ char *s = read_control(dir, name);
        size_t l = strlen(key);
        uint64_t v;
        for (char *line = s; line && *line; line = strchrnul(line, '\n'), line += *line == '\n')
                if (strncmp(line, key, l) == 0 && line[l] == ' ' && parse_u64(line + l + 1, "\n", &v))
                        return v;
        return POD_STATS_UNKNOWN;
}

/* cgroup2's io.stat: "MAJ:MIN rbytes=N wbytes=N rios=N ...", a line per
 * device. Empty when nothing was read or written: 0, which is known. */
static void read_io_stat(int dir, uint64_t *ret_read, uint64_t *ret_write) {
        _cleanup_free_ char *s = read_control(dir, "io.stat");
        if (!s)
                return;
        uint64_t r = 0, w = 0, v;
        char *save = NULL;
        for (char *t = strtok_r(s, " \n", &save); t; t = strtok_r(NULL, " \n", &save)) {
                const char *x;
                if ((x = startswith(t, "rbytes=")) && parse_u64(x, "", &v))
                        r += v;
                else if ((x = startswith(t, "wbytes=")) && parse_u64(x, "", &v))
                        w += v;
        }
        *ret_read = r;
        *ret_write = w;
}

/* cgroup v1's blkio: "MAJ:MIN Read N", "MAJ:MIN Write N", ..., "Total N". */
static void read_blkio(int dir, uint64_t *ret_read, uint64_t *ret_write) {
        _cleanup_free_ char *s = read_control(dir, "blkio.throttle.io_service_bytes_recursive");
        if (!s)
                s = read_control(dir, "blkio.throttle.io_service_bytes");
        if (!s)
                return;
        uint64_t r = 0, w = 0, v;
        for (char *line = s, *next; line && *line; line = next) {
                next = strchr(line, '\n');
                if (next)
                        *next++ = 0;
                char *op = strchr(line, ' ');
                char *num = op ? strchr(op + 1, ' ') : NULL;
                if (!num || !parse_u64(num + 1, "", &v))
                        continue;
                *num = 0;
                if (streq(op + 1, "Read"))
                        r += v;
                else if (streq(op + 1, "Write"))
                        w += v;
        }
        *ret_read = r;
        *ret_write = w;
}

/* Counts the lines of file below dir, reading at most *budget bytes in all;
 * false when the budget runs out. */
static bool count_lines(int dir, const char *file, size_t *budget, uint64_t *count) {
        _cleanup_close_ int fd = open_regular_beneath(dir, file, SIZE_MAX);
        if (fd < 0)
                return fd == -ENOENT; /* a cgroup removed meanwhile */
        char buf[4096];
        for (;;) {
                ssize_t n = read(fd, buf, sizeof(buf));
                if (n < 0)
                        return errno == ENODEV; /* removed meanwhile */
                if (n == 0)
                        return true;
                if ((size_t) n > *budget)
                        return false;
                *budget -= (size_t) n;
                for (ssize_t i = 0; i < n; i++)
                        *count += buf[i] == '\n';
        }
}

typedef struct Walk {
        unsigned cgroups;
        size_t budget;
        uint64_t tasks;
} Walk;

/* The tasks of dir's cgroup and of every cgroup below it, where there is
 * no pids controller to count them. The tree is the pod's: names are
 * untrusted (used only to open a child directory, never printed), and
 * depth, number and bytes are bounded: false when a bound was hit. */
static bool walk_tasks(int dir, const char *tasks_file, unsigned depth, Walk *w) {
        if (depth > POD_STATS_DEPTH_MAX || ++w->cgroups > POD_STATS_WALK_MAX ||
            !count_lines(dir, tasks_file, &w->budget, &w->tasks))
                return false;
        _cleanup_closedir_ DIR *d = opendir_at(dir, ".");
        if (!d)
                return errno == ENOENT || errno == ENODEV;
        for (struct dirent *de; (de = readdir(d));) {
                if (de->d_type != DT_DIR || streq(de->d_name, ".") || streq(de->d_name, ".."))
                        continue;
                _cleanup_close_ int child = openat(dirfd(d), de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (child < 0) {
                        if (errno == ENOENT)
                                continue;
                        return false;
                }
                if (!walk_tasks(child, tasks_file, depth + 1, w))
                        return false;
        }
        return true;
}

void cgroup_figures_read(const CgroupSet *cg, CgroupFigures *ret) {
        int u = cg->fd[CGROUP_UNIFIED];
        *ret = (CgroupFigures) {
                .sampled_usec = monotonic_usec(),
                .cpu_usec = POD_STATS_UNKNOWN,
                .memory_bytes = POD_STATS_UNKNOWN,
                .memory_limit_bytes = POD_STATS_UNKNOWN,
                .tasks = POD_STATS_UNKNOWN,
                .tasks_limit = POD_STATS_UNKNOWN,
                .io_read_bytes = POD_STATS_UNKNOWN,
                .io_write_bytes = POD_STATS_UNKNOWN,
        };

        /* CPU: cgroup2 keeps cpu.stat's usage in every cgroup, with or
         * without the cpu controller; v1 has cpuacct.usage, in ns. */
        ret->cpu_usec = read_key(u, "cpu.stat", "usage_usec");
        if (ret->cpu_usec == POD_STATS_UNKNOWN) {
                uint64_t ns = read_number(cg->fd[CGROUP_V1_CPUACCT], "cpuacct.usage", false);
                ret->cpu_usec = ns == POD_STATS_UNKNOWN ? ns : ns / 1000;
        }

        ret->memory_bytes = read_number(u, "memory.current", false);
        if (ret->memory_bytes != POD_STATS_UNKNOWN)
                ret->memory_limit_bytes = read_number(u, "memory.max", true);
        else {
                int m = cg->fd[CGROUP_V1_MEMORY];
                ret->memory_bytes = read_number(m, "memory.usage_in_bytes", false);
                ret->memory_limit_bytes = read_number(m, "memory.limit_in_bytes", false);
                /* v1 writes "no limit" as the largest page-aligned number. */
                if (ret->memory_limit_bytes != POD_STATS_UNKNOWN && ret->memory_limit_bytes >= (UINT64_C(1) << 62))
                        ret->memory_limit_bytes = POD_STATS_NO_LIMIT;
        }

        int p = u >= 0 && exists_beneath(u, "pids.current") ? u : cg->fd[CGROUP_V1_PIDS];
        ret->tasks = read_number(p, "pids.current", false);
        if (ret->tasks != POD_STATS_UNKNOWN)
                ret->tasks_limit = read_number(p, "pids.max", true);
        else {
                /* No pids controller: count the tasks, in the cgroup2 tree
                 * or in systemd's named one. No limit is known then. */
                int t = u >= 0 ? u : cg->fd[CGROUP_NAMED_SYSTEMD];
                Walk w = { .budget = CGROUP_TASKS_BYTES_MAX };
                if (t >= 0 && walk_tasks(t, u >= 0 ? "cgroup.threads" : "tasks", 0, &w))
                        ret->tasks = w.tasks;
        }

        read_io_stat(u, &ret->io_read_bytes, &ret->io_write_bytes);
        if (ret->io_read_bytes == POD_STATS_UNKNOWN)
                read_blkio(cg->fd[CGROUP_V1_BLKIO], &ret->io_read_bytes, &ret->io_write_bytes);
}

/* What pod_stats_open() and pod_app_cgroups_open() start from: the running
 * pod p's info (its manifest) and its own cgroups. */
static int pod_cgroups_open(Pod *p, PodInfo *ret_info, char **ret_path, CgroupSet *ret, Error **err) {
        cgroup_set_init(ret);
        if (p->state != POD_STATE_RUNNING)
                return error_set(err, -ESRCH, "pod %s is not running (it is %s)", p->uuid, pod_state_to_string(p->state));
        _cleanup_(pod_process_done) PodProcess proc = { .nspawn_pidfd = -1 };
        int r = pod_process_find(p->fd, p->uuid, &proc, err);
        if (r < 0)
                return r;
        if (proc.leader <= 0)
                return error_set(err, -ESRCH, "pod %s is starting: its PID 1 does not run yet", p->uuid);
        if (pod_info_read(p, false, ret_info) < 0)
                return error_sys(err, -ENOMEM, "pod %s", p->uuid);
        if ((r = find_pod_cgroups(p->uuid, proc.leader, ret_path, ret, err)) < 0)
                pod_info_done(ret_info);
        return r;
}

int pod_stats_open(Pod *p, PodStats *ret, Error **err) {
        *ret = (PodStats) {};
        cgroup_set_init(&ret->cgroup);
        PodInfo info;
        PodStats s = {};
        int r = pod_cgroups_open(p, &info, &s.cgroup_path, &s.cgroup, err);
        if (r < 0)
                return r;
        s.uuid = strdup(p->uuid);
        if (pod_info_name(&info))
                s.name = strdup(pod_info_name(&info));
        size_t n = info.manifest ? info.manifest->n_apps : 0;
        s.apps = calloc(n ?: 1, sizeof(PodAppStats));
        if (!s.uuid || !s.apps || (pod_info_name(&info) && !s.name))
                r = error_sys(err, -ENOMEM, "pod %s", p->uuid);
        for (size_t i = 0; r >= 0 && i < n; i++) {
                PodAppStats *a = &s.apps[s.n_apps++];
                cgroup_set_init(&a->cgroup);
                if (!(a->name = strdup(info.manifest->apps[i].name)))
                        r = error_sys(err, -ENOMEM, "pod %s", p->uuid);
                else
                        find_app_cgroups(&s.cgroup, a->name, &a->cgroup);
                for (size_t h = 0; h < _CGROUP_HIERARCHY_MAX; h++)
                        a->running = a->running || a->cgroup.fd[h] >= 0;
        }
        pod_info_done(&info);
        if (r < 0) {
                pod_stats_done(&s);
                return r;
        }
        *ret = s;
        return 0;
}

int pod_app_cgroups_open(Pod *p, const char *app, CgroupSet *ret, Error **err) {
        cgroup_set_init(ret);
        PodInfo info;
        _cleanup_free_ char *path = NULL;
        _cleanup_(cgroup_set_done) CgroupSet pod = CGROUP_SET_NONE;
        int r = pod_cgroups_open(p, &info, &path, &pod, err);
        if (r < 0)
                return r;
        /* The manifest's app only (find_app_cgroups()). */
        bool known = false;
        for (size_t i = 0; info.manifest && i < info.manifest->n_apps && !known; i++)
                known = streq(info.manifest->apps[i].name, app);
        pod_info_done(&info);
        if (!known)
                return error_set(err, -ENOENT, "pod %s has no app %s", p->uuid, app);
        find_app_cgroups(&pod, app, ret);
        for (size_t h = 0; h < _CGROUP_HIERARCHY_MAX; h++)
                if (ret->fd[h] >= 0)
                        return 0;
        return error_set(err, -ESRCH, "app %s of pod %s does not run", app, p->uuid);
}

void pod_stats_sample(PodStats *s) {
        s->before = s->now;
        cgroup_figures_read(&s->cgroup, &s->now);
        for (size_t i = 0; i < s->n_apps; i++) {
                PodAppStats *a = &s->apps[i];
                a->before = a->now;
                if (a->running)
                        cgroup_figures_read(&a->cgroup, &a->now);
        }
}

double cgroup_cpu_percent(const CgroupFigures *before, const CgroupFigures *now) {
        if (!before->sampled_usec || !now->sampled_usec || now->sampled_usec <= before->sampled_usec ||
            before->cpu_usec == POD_STATS_UNKNOWN || now->cpu_usec == POD_STATS_UNKNOWN || now->cpu_usec < before->cpu_usec)
                return -1;
        return 100.0 * (double) (now->cpu_usec - before->cpu_usec) / (double) (now->sampled_usec - before->sampled_usec);
}

void pod_stats_done(PodStats *s) {
        for (size_t i = 0; i < s->n_apps; i++) {
                free(s->apps[i].name);
                cgroup_set_done(&s->apps[i].cgroup);
        }
        free(s->apps);
        free(s->uuid);
        free(s->name);
        free(s->cgroup_path);
        cgroup_set_done(&s->cgroup);
        *s = (PodStats) {};
        cgroup_set_init(&s->cgroup);
}
