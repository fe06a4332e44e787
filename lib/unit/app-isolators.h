/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The appc isolators of an app, checked and turned into what systemd's
 * directives take. Every isolator whose name begins with "os/linux/" or
 * "resource/" must be one sdpod implements: an isolator that was asked for
 * and is not applied would leave the app less isolated than its manifest
 * says, so anything else there is an error, never ignored. Isolators of
 * other name spaces (another runtime's) are not sdpod's and are ignored.
 *
 *   resource/memory                  {"limit": QUANTITY[, "request": QUANTITY]}  MemoryMax=
 *   resource/cpu                     {"limit": CPU[, "request": CPU]}            CPUQuota=
 *   os/linux/capabilities-retain-set {"set": [CAP_...]}     CapabilityBoundingSet=
 *   os/linux/capabilities-remove-set {"set": [CAP_...]}     CapabilityBoundingSet=
 *   os/linux/no-new-privileges       true | false           NoNewPrivileges=
 *   os/linux/seccomp-retain-set      {"set": [...], "errno": "E..."}  SystemCallFilter=
 *   os/linux/seccomp-remove-set      {"set": [...], "errno": "E..."}  SystemCallFilter=~
 *   os/linux/oom-score-adj           -1000..1000            OOMScoreAdjust=
 *   sdpod/pids-limit                 {"limit": N}           TasksMax=
 *   sdpod/tmpfs                      {"mounts": [{"path": P[, "options": "size=..,mode=..,noexec"]}]}
 *                                                           TemporaryFileSystem=P:...,nosuid,nodev
 *   sdpod/devices                    {"allow": [{"path": "/dev/X"[, "access": "rwm"]}]}
 *                                                           DeviceAllow= (the node itself comes
 *                                                           in as a volume and a mount)
 *   sdpod/rlimits                    {"limits": ["nofile=1024:4096", ...]}  LimitNOFILE=...
 *                                    (the names of podapp add --rlimit)
 *   sdpod/seccomp-oci                {"profile": OCI linux.seccomp} | {"unconfined": true}
 *                                    the profile compiled (seccomp/seccomp-oci.h) and
 *                                    loaded by app-domain in place of SystemCallFilter=;
 *                                    or no filter at all
 *   sdpod/masked-paths               {"masked": [P...], "readonly": [P...]}
 *                                    InaccessiblePaths=, ReadOnlyPaths= (missing ones skipped)
 *
 * The sdpod/ isolators are sdpod's own (appc has none for them), and are
 * checked as strictly as appc's: an unknown sdpod/ isolator is an error.
 *
 * A limit of a cgroup controller (memory, cpu, pids, devices) holds only
 * where the pod's systemd can apply it: app_isolation_check_cgroups() says
 * whether it can, and an app whose limits it cannot apply does not run.
 *
 * A "request" is checked but not applied: it guarantees nothing to limit.
 *
 * Without an isolator, an app gets the confinement of the common container
 * default (Docker's): the capabilities of APP_CAPABILITIES_DEFAULT,
 * NoNewPrivileges=yes, and the system call filter APP_SYSCALLS_DEFAULT less
 * APP_SYSCALLS_DEFAULT_DENIED, with EPERM for anything else, for the
 * machine's own system call ABI only (SystemCallArchitectures=native: the
 * i386 and x32 entry points of an x86-64 kernel are closed, and the filter
 * is compiled once rather than three times: 11 ms of each app's start,
 * measured). A seccomp
 * isolator replaces that filter as a whole: a retain-set allows only its
 * set, a remove-set refuses only its set (the way to widen it); without
 * "errno", a refused call kills the process. The app annotation
 * sdpod/restrict-namespaces "false" lets the app make namespaces
 * (RestrictNamespaces=). sdpod-security(7) says what each protects. */

#include <stdbool.h>
#include <stdint.h>

#include "basic/error.h"
#include "manifest/pod-manifest.h"
#include "unit/rootfs-lookup.h"

#define CAPABILITY_LAST 40      /* CAP_CHECKPOINT_RESTORE, the last systemd 252 knows */

/* The bounding set of an app without a capabilities isolator: the classic
 * container default (Docker's, rkt's) without CAP_NET_RAW, which on the
 * host's network (every pod's today) would let root in an app capture and
 * forge the host's traffic (AF_PACKET), and without CAP_MKNOD: in a pod
 * without a user namespace it makes a node of any host device (a disk),
 * and an app that needs a device is given it (--device), not its numbers.
 * A retain-set (--cap-add) gives either back. */
#define CAP_BIT(n) (UINT64_C(1) << (n))
#define APP_CAPABILITIES_DEFAULT                                                                        \
        (CAP_BIT(29) /* AUDIT_WRITE */ | CAP_BIT(0) /* CHOWN */ | CAP_BIT(1) /* DAC_OVERRIDE */ |      \
         CAP_BIT(3) /* FOWNER */ | CAP_BIT(4) /* FSETID */ | CAP_BIT(5) /* KILL */ |                    \
         CAP_BIT(10) /* NET_BIND_SERVICE */ |                                                          \
         CAP_BIT(31) /* SETFCAP */ | CAP_BIT(6) /* SETGID */ | CAP_BIT(8) /* SETPCAP */ |               \
         CAP_BIT(7) /* SETUID */ | CAP_BIT(18) /* SYS_CHROOT */)

/* The default system call filter: what a service needs (systemd's
 * @system-service: file, process, network, IPC, time, signal calls) and
 * chroot and ptrace, as Docker allows them, less the kernel's keyring
 * (shared by every container of a user), io_uring (a large attack surface
 * that seccomp cannot see into) and userfaultfd (a tool of kernel exploits;
 * Docker allows it only with CAP_SYS_PTRACE). Everything else (mount,
 * module, reboot, swap, clock, bpf, perf, raw I/O, kexec, ...) fails with
 * EPERM. NULL-terminated. */
extern const char *const APP_SYSCALLS_DEFAULT[];
extern const char *const APP_SYSCALLS_DEFAULT_DENIED[];
#define APP_SYSCALLS_DEFAULT_ERRNO "EPERM"

typedef struct AppTmpfs {
        char *path;
        char *options;          /* checked, without nosuid,nodev (always added); never NULL */
} AppTmpfs;

typedef struct AppDevice {
        char *path;
        char access[4];         /* of "rwm" */
        /* What DeviceAllow= names, when not path: "/dev/char/MAJ:MIN" of
         * the node bound in (app_isolation_resolve_devices()). */
        char *rule;
} AppDevice;

typedef struct AppIsolation {
        uint64_t capabilities;          /* bounding set: bit n is capability n */
        bool no_new_privileges;
        uint64_t memory_max;            /* bytes; 0: no limit */
        uint64_t cpu_millis;            /* thousandths of a CPU; 0: no limit */
        bool have_oom_score_adjust;
        int oom_score_adjust;
        /* The system call filter: names and @groups. With syscalls_allowed,
         * only those, less syscalls_denied; without, all but
         * syscalls_denied. Both NULL: no filter. */
        char **syscalls_allowed;
        char **syscalls_denied;
        char *syscall_errno;            /* "EPERM"...; NULL: the process is killed */
        bool syscalls_native_only;      /* SystemCallArchitectures=native */
        /* RestrictAddressFamilies=~AF_VSOCK: part of the default filter, as
         * in Docker's profile (a channel to the hypervisor and other
         * guests that no network namespace confines); a seccomp isolator
         * replaces it with the rest. */
        bool deny_vsock;
        bool restrict_namespaces;       /* RestrictNamespaces=yes (an app annotation) */
        uint64_t tasks_max;             /* TasksMax=; 0: systemd's default */
        AppTmpfs *tmpfs;
        size_t n_tmpfs;
        AppDevice *devices;
        size_t n_devices;
        char **rlimits;                 /* "nofile=SOFT:HARD" (SOFT alone: both); NULL: the pod's */
        /* sdpod/seccomp-oci: the profile compiled, as app-domain takes it
         * (seccomp_program_to_text()); it replaces the systemd filter
         * above, which is then NULL, as with {"unconfined": true}. */
        char *seccomp_program;
        /* sdpod/masked-paths: paths in the app made inaccessible, and made
         * read-only, beyond sdpod's own (a spec's maskedPaths and
         * readonlyPaths) */
        char **masked_paths, **readonly_paths;
} AppIsolation;

/* Checks isolators (field names them in errors: "apps[0].app.isolators")
 * and fills *ret, defaults included. Errors are -EINVAL with the
 * isolator's path. */
int app_isolation_parse(const PodIsolator *isolators, size_t n, const char *field, AppIsolation *ret, Error **err);
void app_isolation_done(AppIsolation *i);

/* Whether the pod whose root is pod_rootfd (its /sys/fs/cgroup, its
 * /proc/self/uid_map) lets its systemd apply the cgroup limits of iso:
 * 0, or -EOPNOTSUPP with a message naming the isolator and the reason. */
int app_isolation_check_cgroups(const AppIsolation *iso, int pod_rootfd, Error **err);

/* The pod's systemd looks a DeviceAllow= path up in its own /dev, not in
 * the app's root, where a device of a volume is bound: for each device
 * that binds brings in (destination == its path), the rule names the
 * node's numbers (/dev/char/MAJ:MIN), read from the bind's source below
 * pod_rootfd. A node that is not there keeps its path. */
void app_isolation_resolve_devices(AppIsolation *iso, const char *const *bind_sources,
                                   const char *const *bind_destinations, size_t n_binds, int pod_rootfd);

/* Checks tmpfs mount options ("size=64m,mode=1777,noexec"): only size=,
 * mode= and noexec, each once (nosuid and nodev are always added). 0, or
 * -EINVAL with the bad option named (without a prefix). */
int tmpfs_options_check(const char *options, Error **err);
/* What is wrong with path as the place of a tmpfs or a device in an app,
 * or NULL: absolute, no "..", not "/" and not under /proc or /sys (or, for
 * a tmpfs, /dev: the API file systems systemd mounts), no whitespace,
 * quotes, backslashes, ':' or control characters. */
const char *app_mount_path_problem(const char *path, bool device);
/* Device access: a non-empty combination of r, w and m, each once. */
bool device_access_is_valid(const char *s);

/* "CAP_CHOWN" -> 0; -EINVAL for a name systemd 252 does not know. */
int capability_from_name(const char *name);
/* 0 -> "CAP_CHOWN"; NULL beyond CAPABILITY_LAST. */
const char *capability_to_name(int cap);

/* A system call name libseccomp knows on this architecture, or an @group of
 * systemd 252. */
bool syscall_name_is_valid(const char *name);
/* An errno name the C library knows ("EPERM"). */
bool errno_name_is_valid(const char *name);
