/* SPDX-License-Identifier: Apache-2.0 */
#include <fcntl.h>
#include <limits.h>
#include <linux/bpf.h>
#include <linux/magic.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/vfs.h>
#include <systemd/sd-bus.h>
#include <systemd/sd-daemon.h>
#include <systemd/sd-id128.h>
#include <systemd/sd-login.h>
#include <time.h>

#include "basic/fs.h"
#include "basic/strv.h"
#include "basic/quantity.h"
#include "basic/uuid.h"
#include "pod/pod-cgroup.h"
#include "unit/app-isolators.h"

#define CGROUP_ROOT "/sys/fs/cgroup"
/* A pod makes the cgroups below its own (its systemd, one per unit):
 * deeper than this, they are left for the kernel (and reported). */
#define CGROUP_DEPTH_MAX 64

/* The hierarchies nspawn places a container in: the unified one and, on a
 * hybrid or legacy host, systemd's named one. NULL-terminated in ret. */
static void hierarchies(const char *ret[static 3]) {
        struct statfs fs;
        size_t n = 0;
        if (statfs(CGROUP_ROOT, &fs) == 0 && fs.f_type == CGROUP2_SUPER_MAGIC)
                ret[n++] = CGROUP_ROOT;
        else {
                if (statfs(CGROUP_ROOT "/unified", &fs) == 0 && fs.f_type == CGROUP2_SUPER_MAGIC)
                        ret[n++] = CGROUP_ROOT "/unified";
                if (statfs(CGROUP_ROOT "/systemd", &fs) == 0 && fs.f_type == CGROUP_SUPER_MAGIC)
                        ret[n++] = CGROUP_ROOT "/systemd";
        }
        ret[n] = NULL;
}

void pod_cgroup_limits_done(PodCgroupLimits *l) {
        strv_free(l->devices);
        *l = (PodCgroupLimits) {};
}

/* The host node an app's --device names: the source of the volume bound at
 * the device's path (pod-prepare.c makes one per --device). Its type and
 * numbers come from the host's file the operator named, not from the pod. */
static int app_device_rule(const PodManifest *m, const PodApp *app, const AppDevice *d, char **ret) {
        *ret = NULL;
        for (size_t i = 0; i < app->n_mounts; i++) {
                if (!streq(app->mounts[i].path, d->path))
                        continue;
                const PodVolume *v = pod_manifest_find_volume(m, app->mounts[i].volume);
                struct stat st;
                if (!v || v->kind != POD_VOLUME_HOST || !v->source || stat(v->source, &st) < 0 ||
                    (!S_ISCHR(st.st_mode) && !S_ISBLK(st.st_mode)))
                        return 0;
                return asprintf(ret, "%c %u:%u %s", S_ISCHR(st.st_mode) ? 'c' : 'b', major(st.st_rdev),
                                minor(st.st_rdev), d->access) < 0 ? -ENOMEM : 0;
        }
        return 0;
}

int pod_cgroup_limits_from_manifest(const PodManifest *m, PodCgroupLimits *ret, Error **err) {
        _cleanup_(pod_cgroup_limits_done) PodCgroupLimits l = { .pids_max = POD_PIDS_LIMIT_DEFAULT };
        const char *v = pod_manifest_get_annotation(m, POD_ANNOTATION_PIDS_LIMIT);
        if (v) {
                char *end = NULL;
                errno = 0;
                unsigned long long n = strtoull(v, &end, 10);
                if (!*v || *end || errno || v[0] == '-' || n < 1 || n > POD_PIDS_LIMIT_MAX)
                        return error_set(err, -EINVAL, "annotation %s: \"%s\" is not a number from 1 to %u",
                                         POD_ANNOTATION_PIDS_LIMIT, v, POD_PIDS_LIMIT_MAX);
                l.pids_max = n;
        }
        /* Checked when the manifest was read (app-lifecycle.c): a value
         * that does not parse here is a manifest changed behind sdpod. */
        if ((v = pod_manifest_get_annotation(m, POD_ANNOTATION_MEMORY)) &&
            (parse_quantity_bytes(v, &l.memory_max) < 0 || l.memory_max < POD_MEMORY_MIN))
                return error_set(err, -EINVAL, "annotation %s: \"%s\" is not a quantity of bytes of at least 6Mi",
                                 POD_ANNOTATION_MEMORY, v);
        if ((v = pod_manifest_get_annotation(m, POD_ANNOTATION_CPUS)) &&
            (parse_cpu_millis(v, &l.cpu_millis) < 0 || l.cpu_millis < POD_CPU_MILLIS_MIN ||
             l.cpu_millis > POD_CPU_MILLIS_MAX))
                return error_set(err, -EINVAL, "annotation %s: \"%s\" is not a number of CPUs from 0.01 to %u",
                                 POD_ANNOTATION_CPUS, v, POD_CPU_MILLIS_MAX / 1000);
        for (const PodStandardDevice *d = pod_standard_devices; d->v1_rule; d++)
                if (strv_push(&l.devices, d->v1_rule) < 0)
                        return error_sys(err, -ENOMEM, "device rule");
        /* The host's device nodes the operator gave the pod as volumes:
         * what --device binds, and what podapp add --device needs the
         * sandbox to have (an app added later gets no new rule). */
        for (size_t i = 0; i < m->n_volumes; i++) {
                const PodVolume *vol = &m->volumes[i];
                struct stat st;
                _cleanup_free_ char *rule = NULL;
                if (vol->kind != POD_VOLUME_HOST || !vol->source || stat(vol->source, &st) < 0 ||
                    (!S_ISCHR(st.st_mode) && !S_ISBLK(st.st_mode)))
                        continue;
                if (asprintf(&rule, "%c %u:%u rw", S_ISCHR(st.st_mode) ? 'c' : 'b', major(st.st_rdev),
                             minor(st.st_rdev)) < 0 ||
                    (!strv_contains(l.devices, rule) && strv_push(&l.devices, rule) < 0))
                        return error_sys(err, -ENOMEM, "device rule");
        }
        for (size_t a = 0; a < m->n_apps; a++) {
                AppIsolation iso = {};
                /* An app whose isolators do not parse does not start: it
                 * gets no device. */
                if (app_isolation_parse(m->apps[a].isolators, m->apps[a].n_isolators, "app.isolators", &iso, NULL) < 0)
                        continue;
                int r = 0;
                for (size_t i = 0; r >= 0 && i < iso.n_devices; i++) {
                        _cleanup_free_ char *rule = NULL;
                        if ((r = app_device_rule(m, &m->apps[a], &iso.devices[i], &rule)) >= 0 && rule &&
                            !strv_contains(l.devices, rule))
                                r = strv_push(&l.devices, rule);
                }
                app_isolation_done(&iso);
                if (r < 0)
                        return error_sys(err, r, "app %s: device rule", m->apps[a].name);
        }
        *ret = l;
        l = (PodCgroupLimits) {};
        return 0;
}

static bool is_fs(const char *path, long type) {
        struct statfs fs;
        return statfs(path, &fs) == 0 && fs.f_type == type;
}

/* The v1 controllers enter_v1() puts a pod in, each where the host has
 * it: the device rule, the task limit, the freezer gc kills by, the
 * memory and CPU limits, and the accounting of CPU time and block I/O
 * that sdpod stats reads (cpu and cpuacct are one hierarchy where they
 * are mounted together: the same cgroup, made and removed twice). */
static const char *const v1_controllers[] = {
        CGROUP_ROOT "/devices", CGROUP_ROOT "/pids",    CGROUP_ROOT "/freezer", CGROUP_ROOT "/memory",
        CGROUP_ROOT "/cpu",     CGROUP_ROOT "/cpuacct", CGROUP_ROOT "/blkio",
};
#define N_HIERARCHIES_MAX (2 + ELEMENTSOF(v1_controllers) + 1)

/* The hierarchies a pod's process may be in: those of hierarchies() and
 * the v1 controllers. NULL-terminated in ret. */
static void all_hierarchies(const char *ret[static N_HIERARCHIES_MAX]) {
        size_t n = 0;
        hierarchies(ret);
        while (ret[n])
                n++;
        if (!is_fs(CGROUP_ROOT, CGROUP2_SUPER_MAGIC))
                for (size_t i = 0; i < ELEMENTSOF(v1_controllers); i++)
                        if (is_fs(v1_controllers[i], CGROUP_SUPER_MAGIC))
                                ret[n++] = v1_controllers[i];
        ret[n] = NULL;
}

/* Writes s to the control file name of the cgroup dir. */
static int cg_write(int dir, const char *name, const char *s) {
        _cleanup_close_ int fd = openat(dir, name, O_WRONLY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        ssize_t n = write(fd, s, strlen(s));
        return n < 0 ? -errno : (size_t) n != strlen(s) ? -EIO : 0;
}

int pod_unit_leave_root(int *ret_procs_fd, Error **err) {
        *ret_procs_fd = -1;
        if (!is_fs(CGROUP_ROOT, CGROUP2_SUPER_MAGIC))
                return 0; /* v1 controllers: nothing to pass down */
        _cleanup_fclose_ FILE *f = fopen("/proc/self/cgroup", "re");
        if (!f)
                return error_sys(err, -errno, "/proc/self/cgroup");
        char line[PATH_MAX], path[sizeof(CGROUP_ROOT) + PATH_MAX] = "";
        while (fgets(line, sizeof(line), f))
                if (startswith(line, "0::/")) {
                        line[strcspn(line, "\n")] = 0;
                        snprintf(path, sizeof(path), CGROUP_ROOT "%s", line + 3);
                        break;
                }
        if (!*path)
                return error_set(err, -ENOENT, "/proc/self/cgroup names no cgroup2 cgroup");
        _cleanup_close_ int dir = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dir < 0)
                return error_sys(err, -errno, "the unit's cgroup %s", path);
        if (mkdirat(dir, POD_UNIT_HOST_CGROUP, 0755) < 0 && errno != EEXIST)
                return error_sys(err, -errno, "cannot create the cgroup %s/" POD_UNIT_HOST_CGROUP, path);
        _cleanup_close_ int procs = openat(dir, "cgroup.procs", O_WRONLY | O_CLOEXEC);
        if (procs < 0)
                return error_sys(err, -errno, "%s/cgroup.procs", path);
        int r = cg_write(dir, POD_UNIT_HOST_CGROUP "/cgroup.procs", "0");
        if (r < 0)
                return error_sys(err, r, "cannot move into %s/" POD_UNIT_HOST_CGROUP, path);
        *ret_procs_fd = TAKE_FD(procs);
        return 0;
}

/* Makes CGROUP/sdpod/UUID of hierarchy h; its fd. */
static int cg_make(const char *h, const char *uuid, Error **err) {
        char path[PATH_MAX];
        snprintf(path, sizeof(path), "%s/sdpod/%s", h, uuid);
        int r = mkdir_p(path, 0755);
        if (r < 0)
                return error_sys(err, r, "cannot create the cgroup %s", path);
        int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        return fd < 0 ? error_sys(err, -errno, "cannot open the cgroup %s", path) : fd;
}

static int cg_move_in(int dir, const char *h, const char *uuid, Error **err) {
        int r = cg_write(dir, "cgroup.procs", "0");
        return r < 0 ? error_sys(err, r, "cannot move into the cgroup %s/sdpod/%s", h, uuid) : 0;
}

/* The limits of v1 controller h on the pod's cgroup dir, before anything
 * of the pod is in it. */
static int set_v1_limits(int dir, const char *h, const char *uuid, const PodCgroupLimits *limits, Error **err) {
        char buf[32];
        int r = 0;
        if (streq(h, CGROUP_ROOT "/devices")) {
                /* Deny everything, then allow the list: a child of this
                 * cgroup can only narrow it. */
                if ((r = cg_write(dir, "devices.deny", "a")) < 0)
                        return error_sys(err, r, "cannot set the device rule of %s/sdpod/%s", h, uuid);
                for (char **d = limits->devices; d && *d; d++)
                        if ((r = cg_write(dir, "devices.allow", *d)) < 0)
                                return error_sys(err, r, "cannot allow the device \"%s\" in %s/sdpod/%s", *d, h, uuid);
        } else if (streq(h, CGROUP_ROOT "/pids")) {
                snprintf(buf, sizeof(buf), "%" PRIu64, limits->pids_max);
                if ((r = cg_write(dir, "pids.max", buf)) < 0)
                        return error_sys(err, r, "cannot set the task limit of %s/sdpod/%s", h, uuid);
        } else if (streq(h, CGROUP_ROOT "/memory") && limits->memory_max > 0) {
                /* Memory and swap together where the kernel counts swap
                 * (memsw: at least the memory limit, set after it): a pod
                 * does not get past its limit by being swapped out. */
                snprintf(buf, sizeof(buf), "%" PRIu64, limits->memory_max);
                if ((r = cg_write(dir, "memory.limit_in_bytes", buf)) < 0 ||
                    ((r = cg_write(dir, "memory.memsw.limit_in_bytes", buf)) < 0 && r != -ENOENT))
                        return error_sys(err, r, "cannot set the memory limit of %s/sdpod/%s", h, uuid);
        } else if (streq(h, CGROUP_ROOT "/cpu") && limits->cpu_millis > 0) {
                /* A thousandth of a CPU is 100 us of every 100 ms. */
                snprintf(buf, sizeof(buf), "%" PRIu64, limits->cpu_millis * 100);
                if ((r = cg_write(dir, "cpu.cfs_period_us", "100000")) < 0 ||
                    (r = cg_write(dir, "cpu.cfs_quota_us", buf)) < 0)
                        return error_sys(err, r, "cannot set the CPU limit of %s/sdpod/%s", h, uuid);
        }
        return 0;
}

/* The v1 controllers the host holds a pod by, set before anything of the
 * pod runs in them. The pod's cgroup namespace roots it at these cgroups
 * and nspawn hands it none of them: their files stay the host root's. A
 * limit in a controller the host does not have fails the pod. */
static int enter_v1(const char *uuid, const PodCgroupLimits *limits, Error **err) {
        int r;
        const char *missing = limits->memory_max > 0 && !is_fs(CGROUP_ROOT "/memory", CGROUP_SUPER_MAGIC) ? "memory"
                              : limits->cpu_millis > 0 && !is_fs(CGROUP_ROOT "/cpu", CGROUP_SUPER_MAGIC)  ? "cpu"
                                                                                                          : NULL;
        if (missing)
                return error_set(err, -EOPNOTSUPP, "pod %s: this host has no %s controller for the pod's %s limit", uuid,
                                 missing, missing);
        for (size_t i = 0; i < ELEMENTSOF(v1_controllers); i++) {
                const char *h = v1_controllers[i];
                if (!is_fs(h, CGROUP_SUPER_MAGIC))
                        continue;
                _cleanup_close_ int dir = cg_make(h, uuid, err);
                if (dir < 0)
                        return dir;
                if ((r = set_v1_limits(dir, h, uuid, limits, err)) < 0 || (r = cg_move_in(dir, h, uuid, err)) < 0)
                        return r;
        }
        return 0;
}

/* A rule of the device list: "c 1:3 rwm", "c 136:* rw" (* = any). */
typedef struct DeviceRule {
        unsigned type;          /* BPF_DEVCG_DEV_CHAR or _BLOCK */
        int64_t major, minor;   /* -1: any */
        unsigned access;        /* BPF_DEVCG_ACC_* */
} DeviceRule;

static int64_t device_number(const char *s) {
        if (streq(s, "*"))
                return -1;
        char *end = NULL;
        errno = 0;
        unsigned long n = strtoul(s, &end, 10);
        return !*s || *end || errno || n > 0xfffff ? -2 : (int64_t) n;
}

static int device_rule_parse(const char *s, DeviceRule *ret) {
        char type, maj[16], min[16], access[8];
        if (sscanf(s, "%c %15[0-9*]:%15[0-9*] %7s", &type, maj, min, access) != 4 || (type != 'c' && type != 'b'))
                return -EINVAL;
        *ret = (DeviceRule) { .type = type == 'c' ? BPF_DEVCG_DEV_CHAR : BPF_DEVCG_DEV_BLOCK,
                              .major = device_number(maj), .minor = device_number(min) };
        for (const char *a = access; *a; a++)
                ret->access |= *a == 'r' ? BPF_DEVCG_ACC_READ : *a == 'w' ? BPF_DEVCG_ACC_WRITE
                             : *a == 'm' ? BPF_DEVCG_ACC_MKNOD : 0;
        return ret->major < -1 || ret->minor < -1 ? -EINVAL : 0;
}

#define INSN(c, d, s, o, i) ((struct bpf_insn) { .code = (c), .dst_reg = (d), .src_reg = (s), .off = (o), .imm = (i) })
#define DEVICE_RULES_MAX 256

/* The device rule as cgroup v2 has it: a BPF_PROG_TYPE_CGROUP_DEVICE
 * program attached to the pod's cgroup2 cgroup. It allows a device when
 * a rule matches its type, numbers and every access asked; else denies.
 * Attached with BPF_F_ALLOW_MULTI: the pod's systemd may add programs of
 * its own below (each must allow), and cannot take ours away (that needs
 * CAP_SYS_ADMIN of the host's user namespace). */
static int attach_device_program(int cgroup_fd, char *const *rules) {
        size_t n_rules = strv_length(rules);
        if (n_rules > DEVICE_RULES_MAX)
                return -E2BIG;
        struct bpf_insn insns[7 + 8 * DEVICE_RULES_MAX + 2];
        size_t n = 0;
        /* r2 = access_type; r3 = device type; r4 = access; r5 = major; r6 = minor */
        insns[n++] = INSN(BPF_LDX | BPF_MEM | BPF_W, 2, 1, 0, 0);
        insns[n++] = INSN(BPF_ALU64 | BPF_MOV | BPF_X, 3, 2, 0, 0);
        insns[n++] = INSN(BPF_ALU64 | BPF_AND | BPF_K, 3, 0, 0, 0xffff);
        insns[n++] = INSN(BPF_ALU64 | BPF_MOV | BPF_X, 4, 2, 0, 0);
        insns[n++] = INSN(BPF_ALU64 | BPF_RSH | BPF_K, 4, 0, 0, 16);
        insns[n++] = INSN(BPF_LDX | BPF_MEM | BPF_W, 5, 1, 4, 0);
        insns[n++] = INSN(BPF_LDX | BPF_MEM | BPF_W, 6, 1, 8, 0);
        for (size_t i = 0; i < n_rules; i++) {
                DeviceRule d;
                if (device_rule_parse(rules[i], &d) < 0)
                        return -EINVAL;
                /* Each test jumps past this rule's block when it fails. */
                size_t len = 1 + (d.major >= 0) + (d.minor >= 0) + 3 + 2, start = n;
#define SKIP ((int16_t) (start + len - (n + 1)))
                insns[n] = INSN(BPF_JMP | BPF_JNE | BPF_K, 3, 0, 0, (int32_t) d.type), insns[n].off = SKIP, n++;
                if (d.major >= 0)
                        insns[n] = INSN(BPF_JMP | BPF_JNE | BPF_K, 5, 0, 0, (int32_t) d.major), insns[n].off = SKIP, n++;
                if (d.minor >= 0)
                        insns[n] = INSN(BPF_JMP | BPF_JNE | BPF_K, 6, 0, 0, (int32_t) d.minor), insns[n].off = SKIP, n++;
                /* Any access asked beyond the rule's: not this rule. */
                insns[n++] = INSN(BPF_ALU64 | BPF_MOV | BPF_X, 7, 4, 0, 0);
                insns[n++] = INSN(BPF_ALU64 | BPF_AND | BPF_K, 7, 0, 0, (int32_t) (~d.access & 7));
                insns[n] = INSN(BPF_JMP | BPF_JNE | BPF_K, 7, 0, 0, 0), insns[n].off = SKIP, n++;
#undef SKIP
                insns[n++] = INSN(BPF_ALU64 | BPF_MOV | BPF_K, 0, 0, 0, 1);
                insns[n++] = INSN(BPF_JMP | BPF_EXIT, 0, 0, 0, 0);
        }
        insns[n++] = INSN(BPF_ALU64 | BPF_MOV | BPF_K, 0, 0, 0, 0);
        insns[n++] = INSN(BPF_JMP | BPF_EXIT, 0, 0, 0, 0);

        union bpf_attr load = {
                .prog_type = BPF_PROG_TYPE_CGROUP_DEVICE,
                .insn_cnt = (uint32_t) n,
                .insns = (uint64_t) (uintptr_t) insns,
                .license = (uint64_t) (uintptr_t) "Apache-2.0",
        };
        _cleanup_close_ int prog = (int) syscall(SYS_bpf, BPF_PROG_LOAD, &load, sizeof(load));
        if (prog < 0)
                return -errno;
        union bpf_attr attach = {
                .target_fd = (uint32_t) cgroup_fd,
                .attach_bpf_fd = (uint32_t) prog,
                .attach_type = BPF_CGROUP_DEVICE,
                .attach_flags = BPF_F_ALLOW_MULTI,
        };
        /* The attachment keeps the program: our fd may go. */
        return syscall(SYS_bpf, BPF_PROG_ATTACH, &attach, sizeof(attach)) < 0 ? -errno : 0;
}

/* A cgroup v2 host: the controllers of the limits, enabled down to the
 * pod's cgroup dir, whose limit files stay the host's (nspawn hands the
 * pod the cgroup's directory and its cgroup.procs, cgroup.threads,
 * cgroup.subtree_control). */
static int set_v2_limits(int dir, const char *uuid, const PodCgroupLimits *limits, Error **err) {
        static const struct {
                const char *controller, *file, *option;
        } kinds[] = {
                { "+pids", "pids.max", "--pod-pids-limit" },
                { "+memory", "memory.max", "--pod-memory" },
                { "+cpu", "cpu.max", "--pod-cpus" },
        };
        char values[ELEMENTSOF(kinds)][48] = {};
        snprintf(values[0], sizeof(values[0]), "%" PRIu64, limits->pids_max);
        if (limits->memory_max > 0)
                snprintf(values[1], sizeof(values[1]), "%" PRIu64, limits->memory_max);
        if (limits->cpu_millis > 0)
                snprintf(values[2], sizeof(values[2]), "%" PRIu64 " 100000", limits->cpu_millis * 100);
        for (size_t i = 0; i < ELEMENTSOF(kinds); i++) {
                if (!values[i][0])
                        continue;
                int r;
                (void) cg_write(AT_FDCWD, CGROUP_ROOT "/cgroup.subtree_control", kinds[i].controller);
                if ((r = cg_write(AT_FDCWD, CGROUP_ROOT "/sdpod/cgroup.subtree_control", kinds[i].controller)) < 0 ||
                    (r = cg_write(dir, kinds[i].file, values[i])) < 0)
                        return error_sys(err, r, "cannot set %s of %s/sdpod/%s for %s (no %s controller?)", kinds[i].file,
                                         CGROUP_ROOT, uuid, kinds[i].option, kinds[i].controller + 1);
        }
        return 0;
}

int pod_cgroup_enter(const char *uuid, const PodCgroupLimits *limits, Error **err) {
        const char *h[3];
        hierarchies(h);
        bool v2 = is_fs(CGROUP_ROOT, CGROUP2_SUPER_MAGIC);
        int r;
        if (!v2 && (r = enter_v1(uuid, limits, err)) < 0)
                return r;
        for (const char **i = h; *i; i++) {
                _cleanup_close_ int dir = cg_make(*i, uuid, err);
                if (dir < 0)
                        return dir;
                /* The device rule of cgroup v2, before anything of the pod
                 * is in the cgroup. On a hybrid host it doubles the v1 rule
                 * (a failure there leaves that one); on a cgroup v2 host
                 * it is the only one, and a pod does not run without it. */
                if (is_fs(*i, CGROUP2_SUPER_MAGIC) && (r = attach_device_program(dir, limits->devices)) < 0 && v2)
                        return error_sys(err, r, "cannot attach the device rule (a BPF program) to %s/sdpod/%s", *i,
                                         uuid);
                /* A cgroup v2 host: the pids controller, enabled down to
                 * the pod's cgroup, whose pids.max stays the host's (nspawn
                 * hands the pod the cgroup's directory and its
                 * cgroup.procs, cgroup.threads, cgroup.subtree_control). */
                if (v2 && (r = set_v2_limits(dir, uuid, limits, err)) < 0)
                        return r;
                if ((r = cg_move_in(dir, *i, uuid, err)) < 0)
                        return r;
        }
        return 0;
}

/* Removes the cgroup name of dir and its children, deepest first (a cgroup
 * directory goes with rmdir(2), its control files with it). */
static int remove_cgroup(int dir, const char *name, unsigned depth) {
        if (depth > CGROUP_DEPTH_MAX)
                return -ELOOP;
        _cleanup_closedir_ DIR *d = opendir_at(dir, name);
        if (!d)
                return errno == ENOENT ? 0 : -errno;
        int ret = 0;
        for (struct dirent *de; (de = readdir(d));) {
                if (de->d_type != DT_DIR || streq(de->d_name, ".") || streq(de->d_name, ".."))
                        continue;
                int r = remove_cgroup(dirfd(d), de->d_name, depth + 1);
                if (r < 0 && ret == 0)
                        ret = r;
        }
        if (unlinkat(dir, name, AT_REMOVEDIR) < 0 && errno != ENOENT && ret == 0)
                ret = -errno;
        return ret;
}

/* Whether the cgroup tree at dir has a process (its cgroup.procs, or a
 * child's, is not empty); errors count as "yes": keep it. */
static bool cgroup_busy(int dir, unsigned depth) {
        char buf[16];
        _cleanup_close_ int procs = openat(dir, "cgroup.procs", O_RDONLY | O_CLOEXEC);
        if (procs < 0 || read(procs, buf, sizeof(buf)) != 0 || depth > CGROUP_DEPTH_MAX)
                return true;
        _cleanup_closedir_ DIR *d = opendir_at(dir, ".");
        if (!d)
                return true;
        for (struct dirent *de; (de = readdir(d));) {
                if (de->d_type != DT_DIR || de->d_name[0] == '.')
                        continue;
                _cleanup_close_ int child = openat(dir, de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (child < 0 || cgroup_busy(child, depth + 1))
                        return true;
        }
        return false;
}

int pod_cgroup_remove_stale(void) {
        const char *h[N_HIERARCHIES_MAX];
        int removed = 0;
        all_hierarchies(h);
        time_t now = time(NULL);
        for (const char **i = h; *i; i++) {
                char path[PATH_MAX];
                snprintf(path, sizeof(path), "%s/sdpod", *i);
                _cleanup_closedir_ DIR *d = opendir_at(AT_FDCWD, path);
                if (!d)
                        continue;
                for (struct dirent *de; (de = readdir(d));) {
                        struct stat st;
                        if (de->d_type != DT_DIR || !uuid_is_valid(de->d_name) ||
                            fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 || now - st.st_mtime < 60)
                                continue;
                        _cleanup_close_ int c = openat(dirfd(d), de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                        if (c >= 0 && !cgroup_busy(c, 0) && remove_cgroup(dirfd(d), de->d_name, 0) >= 0)
                                removed++;
                }
        }
        return removed;
}

int pod_cgroup_remove(const char *uuid, Error **err) {
        const char *h[N_HIERARCHIES_MAX];
        all_hierarchies(h);
        for (const char **i = h; *i; i++) {
                char path[PATH_MAX];
                snprintf(path, sizeof(path), "%s/sdpod", *i);
                _cleanup_close_ int dir = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                if (dir < 0)
                        continue;
                int r = remove_cgroup(dir, uuid, 0);
                if (r < 0)
                        return error_sys(err, r, "cannot remove the cgroup %s/%s", path, uuid);
        }
        return 0;
}

/* The pod's cgroup in hierarchy h, or -ENOENT. */
static int cg_open(const char *h, const char *uuid) {
        char path[PATH_MAX];
        snprintf(path, sizeof(path), "%s/sdpod/%s", h, uuid);
        int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        return fd < 0 ? -errno : fd;
}

/* Processes in the cgroup at dir itself; first: the first one seen.
 * Unreadable counts as one: keep the pod. */
static size_t procs_count(int dir, pid_t *first) {
        char buf[4096];
        size_t n = 0;
        _cleanup_close_ int procs = openat(dir, "cgroup.procs", O_RDONLY | O_CLOEXEC);
        ssize_t k = procs < 0 ? -1 : read(procs, buf, sizeof(buf) - 1);
        if (k < 0)
                return 1;
        buf[k] = 0;
        if (k > 0 && first && !*first)
                *first = (pid_t) atoi(buf);
        for (char *p = buf; *p; p++)
                n += *p == '\n';
        return n;
}

/* Whether the cgroup2 tree at dir has a process anywhere: its
 * cgroup.events' "populated", which the kernel keeps for the whole tree
 * (the pod makes its part of the tree as deep and wide as it likes: no
 * walk of it would be bounded). Unreadable counts as yes. */
static bool cg2_populated(int dir) {
        char buf[256];
        _cleanup_close_ int fd = openat(dir, "cgroup.events", O_RDONLY | O_CLOEXEC);
        ssize_t k = fd < 0 ? -1 : read(fd, buf, sizeof(buf) - 1);
        if (k < 0)
                return true;
        buf[k] = 0;
        return !strstr(buf, "populated 0");
}

/* Processes of the pod (0: none; a count across hierarchies, not of
 * processes); first: one of them, when a flat cgroup names it. Every
 * process of the pod is in each hierarchy's cgroup of it: the cgroup2
 * tree says for all, and the v1 controllers' cgroups, which the pod
 * cannot make children in, list them. Only the name=systemd tree, the
 * pod's to shape, is not read (every process in it is in the others). */
static size_t pod_cgroup_count(const char *uuid, pid_t *first) {
        const char *h[N_HIERARCHIES_MAX];
        size_t n = 0;
        all_hierarchies(h);
        for (const char **i = h; *i; i++) {
                _cleanup_close_ int dir = cg_open(*i, uuid);
                if (dir < 0)
                        continue;
                if (is_fs(*i, CGROUP2_SUPER_MAGIC)) {
                        size_t top = procs_count(dir, first);
                        n += cg2_populated(dir) ? (top ? top : 1) : 0;
                } else if (!streq(*i, CGROUP_ROOT "/systemd"))
                        n += procs_count(dir, first);
        }
        return n;
}


#define SYSTEMD1 "org.freedesktop.systemd1"

/* The standard devices come first in a PodCgroupLimits' list. */
static size_t n_standard_devices(void) {
        size_t n = 0;
        while (pod_standard_devices[n].v1_rule)
                n++;
        return n;
}

/* The devices beyond the standard ones as DeviceAllow= has them:
 * "/dev/char/MAJ:MIN", access. 0, or -EINVAL for a rule not of that form. */
static int device_allow_of(const char *rule, char path[static 64], char access[static 8]) {
        char type;
        unsigned maj, min;
        if (sscanf(rule, "%c %u:%u %7s", &type, &maj, &min, access) != 4)
                return -EINVAL;
        snprintf(path, 64, "/dev/%s/%u:%u", type == 'b' ? "block" : "char", maj, min);
        return 0;
}

int pod_scope_properties(const PodCgroupLimits *limits, char ***argv) {
        _cleanup_free_ char *tasks = NULL;
        if (asprintf(&tasks, "--property=TasksMax=%" PRIu64, limits->pids_max) < 0 || strv_push(argv, tasks) < 0)
                return -ENOMEM;
        if (limits->memory_max > 0) {
                _cleanup_free_ char *p = NULL;
                if (asprintf(&p, "--property=MemoryMax=%" PRIu64, limits->memory_max) < 0 || strv_push(argv, p) < 0)
                        return -ENOMEM;
        }
        if (limits->cpu_millis > 0) {
                char quota[CPU_QUOTA_MAX];
                _cleanup_free_ char *p = NULL;
                format_cpu_quota(limits->cpu_millis, quota);
                if (asprintf(&p, "--property=CPUQuota=%s", quota) < 0 || strv_push(argv, p) < 0)
                        return -ENOMEM;
        }
        for (size_t i = n_standard_devices(); i < strv_length(limits->devices); i++) {
                char path[64], access[8];
                _cleanup_free_ char *p = NULL;
                if (device_allow_of(limits->devices[i], path, access) < 0)
                        continue;
                if (asprintf(&p, "--property=DeviceAllow=%s %s", path, access) < 0 || strv_push(argv, p) < 0)
                        return -ENOMEM;
        }
        return 0;
}

int pod_unit_set_limits(const char *uuid, const PodCgroupLimits *limits, Error **err) {
        char want[64];
        _cleanup_free_ char *unit = NULL;
        snprintf(want, sizeof(want), "pod@%s.service", uuid);
        if (sd_booted() <= 0 || sd_pid_get_unit(0, &unit) < 0 || !streq(unit, want))
                return 0;
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL;
        int r = sd_bus_open_system(&bus);
        if (r >= 0)
                r = sd_bus_message_new_method_call(bus, &m, SYSTEMD1, "/org/freedesktop/systemd1", SYSTEMD1 ".Manager",
                                                   "SetUnitProperties");
        if (r >= 0)
                r = sd_bus_message_append(m, "sb", unit, true);
        if (r >= 0)
                r = sd_bus_message_open_container(m, 'a', "(sv)");
        if (r >= 0)
                r = sd_bus_message_append(m, "(sv)", "TasksMax", "t", limits->pids_max);
        if (r >= 0 && limits->memory_max > 0)
                r = sd_bus_message_append(m, "(sv)", "MemoryMax", "t", limits->memory_max);
        /* CPUQuota= as the bus has it: microseconds of CPU per second. */
        if (r >= 0 && limits->cpu_millis > 0)
                r = sd_bus_message_append(m, "(sv)", "CPUQuotaPerSecUSec", "t", limits->cpu_millis * 1000);
        /* The standard devices are the unit file's already. */
        for (size_t i = n_standard_devices(); r >= 0 && i < strv_length(limits->devices); i++) {
                char path[64], access[8];
                if (device_allow_of(limits->devices[i], path, access) >= 0)
                        r = sd_bus_message_append(m, "(sv)", "DeviceAllow", "a(ss)", 1, path, access);
        }
        if (r >= 0)
                r = sd_bus_message_close_container(m);
        sd_bus_error e = SD_BUS_ERROR_NULL;
        if (r >= 0 && (r = sd_bus_call(bus, m, 0, &e, NULL)) < 0) {
                r = error_set(err, r, "cannot set the limits and device rule of %s: %s", unit,
                              e.message ?: strerror(-r));
                sd_bus_error_free(&e);
                return r;
        }
        return r < 0 ? error_sys(err, r, "cannot set the limits and device rule of %s", unit) : 0;
}

#define MACHINE1 "org.freedesktop.machine1"

/* The name of machined's machine whose id is the pod's UUID and whose unit
 * is a scope: 1, 0 when there is none, or -errno. Only a scope: nspawn
 * asked for it (CreateMachine) for this pod alone. A machine in a service
 * (pod@.service, a pod's service, --keep-unit) shares its unit with
 * whatever the service runs next (a restart's new pod), and systemd
 * itself kills what is left of it when its main process, the pod's
 * supervisor, is gone. */
static int machine_of(sd_bus *bus, const char *uuid, char **ret) {
        sd_id128_t want;
        if (sd_id128_from_string(uuid, &want) < 0)
                return -EINVAL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        int r = sd_bus_call_method(bus, MACHINE1, "/org/freedesktop/machine1", MACHINE1 ".Manager", "ListMachines",
                                   NULL, &reply, "");
        if (r < 0)
                return r;
        if ((r = sd_bus_message_enter_container(reply, 'a', "(ssso)")) < 0)
                return r;
        const char *name, *class, *service, *path;
        while ((r = sd_bus_message_read(reply, "(ssso)", &name, &class, &service, &path)) > 0) {
                _cleanup_(sd_bus_message_unrefp) sd_bus_message *id = NULL;
                _cleanup_free_ char *unit = NULL;
                const void *bytes = NULL;
                size_t size = 0;
                if (sd_bus_get_property(bus, MACHINE1, path, MACHINE1 ".Machine", "Id", NULL, &id, "ay") < 0 ||
                    sd_bus_message_read_array(id, 'y', &bytes, &size) < 0 || size != sizeof(want.bytes) ||
                    memcmp(bytes, want.bytes, size) != 0 ||
                    sd_bus_get_property_string(bus, MACHINE1, path, MACHINE1 ".Machine", "Unit", NULL, &unit) < 0 ||
                    !endswith(unit, ".scope"))
                        continue;
                return (*ret = strdup(name)) ? 1 : -ENOMEM;
        }
        return r;
}

static bool machine_busy(const char *uuid) {
        if (sd_booted() <= 0)
                return false;
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        _cleanup_free_ char *name = NULL;
        /* No bus or no machined: nothing of the pod is known to them. */
        return sd_bus_open_system(&bus) >= 0 && machine_of(bus, uuid, &name) > 0;
}

int pod_machine_kill(const char *uuid, Error **err) {
        if (sd_booted() <= 0)
                return 0;
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        _cleanup_free_ char *name = NULL;
        if (sd_bus_open_system(&bus) < 0 || machine_of(bus, uuid, &name) <= 0)
                return 0;
        sd_bus_error e = SD_BUS_ERROR_NULL;
        int r = sd_bus_call_method(bus, MACHINE1, "/org/freedesktop/machine1", MACHINE1 ".Manager", "KillMachine", &e,
                                   NULL, "ssi", name, "all", SIGKILL);
        if (r < 0) {
                r = error_set(err, r, "pod %s: cannot kill its machine %s: %s", uuid, name, e.message ?: strerror(-r));
                sd_bus_error_free(&e);
                return r;
        }
        for (unsigned i = 0; i < 500; i++) {
                _cleanup_free_ char *still = NULL;
                if (machine_of(bus, uuid, &still) <= 0)
                        return 1;
                (void) poll(NULL, 0, 10);
        }
        return error_set(err, -EBUSY, "pod %s: its machine %s is still there 5 s after a kill: its ids, address and "
                                      "directory stay claimed until it is gone", uuid, name);
}

bool pod_cgroup_busy(const char *uuid) {
        return pod_cgroup_count(uuid, NULL) > 0 || machine_busy(uuid);
}

/* Without cgroup2: the pod's v1 freezer cgroup, which the pod cannot
 * leave, frozen (no fork, no exit: its PIDs stay the same processes while
 * we read and kill them), each process killed, thawed (the kills land). */
static void kill_v1(const char *uuid) {
        _cleanup_close_ int dir = cg_open(CGROUP_ROOT "/freezer", uuid);
        if (dir < 0)
                return;
        (void) cg_write(dir, "freezer.state", "FROZEN");
        for (unsigned i = 0; i < 100; i++) {
                char state[16] = "";
                _cleanup_close_ int fd = openat(dir, "freezer.state", O_RDONLY | O_CLOEXEC);
                if (fd < 0 || read(fd, state, sizeof(state) - 1) < 0 || startswith(state, "FROZEN"))
                        break;
                (void) poll(NULL, 0, 10);
        }
        _cleanup_fclose_ FILE *f = NULL;
        int fd = openat(dir, "cgroup.procs", O_RDONLY | O_CLOEXEC);
        if (fd >= 0 && !(f = fdopen(fd, "re")))
                close(fd);
        for (int pid; f && fscanf(f, "%d", &pid) == 1;)
                if (pid > 0)
                        (void) kill(pid, SIGKILL);
        (void) cg_write(dir, "freezer.state", "THAWED");
}

int pod_cgroup_kill(const char *uuid, Error **err) {
        pid_t first = 0;
        size_t before = pod_cgroup_count(uuid, NULL);
        if (before == 0)
                return 0;
        /* The pod's cgroup2 tree: nspawn hands the pod this cgroup, never
         * its parent, so nothing of the pod can move out of it, whatever
         * it says it is. */
        const char *h[3];
        hierarchies(h);
        bool killed = false;
        for (const char **i = h; *i; i++) {
                if (!is_fs(*i, CGROUP2_SUPER_MAGIC))
                        continue;
                _cleanup_close_ int dir = cg_open(*i, uuid);
                if (dir >= 0 && cg_write(dir, "cgroup.kill", "1") >= 0)
                        killed = true;
        }
        if (!killed)
                kill_v1(uuid);
        /* SIGKILL is not instant (a process in the kernel finishes its
         * call first; a frozen one waits for its thaw). */
        size_t left = 0;
        for (unsigned i = 0; i < 500; i++) {
                first = 0;
                if ((left = pod_cgroup_count(uuid, &first)) == 0)
                        return before > INT_MAX ? INT_MAX : (int) before;
                (void) poll(NULL, 0, 10);
        }
        return error_set(err, -EBUSY, "pod %s still has processes in its cgroups 5 s after a kill (%zu, process %d "
                                      "among them): its ids, address and directory stay claimed until they are gone",
                         uuid, left, (int) first);
}

char *pod_cgroup_path(const char *uuid) {
        char *s = NULL;
        return asprintf(&s, "/sdpod/%s", uuid) < 0 ? NULL : s;
}
