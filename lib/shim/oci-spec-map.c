/* SPDX-License-Identifier: Apache-2.0 */
#include <ctype.h>
#include <fcntl.h>
#include <inttypes.h>
#include <sched.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "basic/strv.h"
#include "manifest/pod-manifest.h"
#include "manifest/pod-net.h"
#include "seccomp/seccomp-oci.h"
#include "shim/oci-spec-map.h"

OciTaskKind oci_spec_task_kind(const OciSpec *s, const char **ret_sandbox_id) {
        const char *type = oci_spec_annotation(s, OCI_ANNOTATION_CONTAINER_TYPE);
        const char *sandbox = oci_spec_annotation(s, OCI_ANNOTATION_SANDBOX_ID);
        OciTaskKind k = OCI_TASK_PLAIN;
        if (streq_ptr(type, "sandbox"))
                k = OCI_TASK_SANDBOX;
        else if (sandbox && *sandbox)
                k = OCI_TASK_CONTAINER;
        if (ret_sandbox_id)
                *ret_sandbox_id = k == OCI_TASK_CONTAINER ? sandbox : NULL;
        return k;
}

/* The host's PID and IPC namespaces (Kubernetes' hostPID, hostIPC: the
 * spec lists no such namespace), which a pod never shares: its systemd is
 * PID 1 of its own. A "pid" namespace without a path (Kubernetes' default,
 * one per container) or with the sandbox's (shareProcessNamespace) is the
 * pod's, which its apps share (sdpod-security(7): each app is a Landlock
 * domain of its own, so none traces another). */
static int check_namespaces(const OciSpec *s, Error **err) {
        if (!oci_spec_namespace(s, "pid"))
                return error_set(err, -EOPNOTSUPP, "linux.namespaces: no pid namespace (hostPID): the host's PID "
                                 "namespace is not supported, a pod's systemd is PID 1 of its own");
        if (!oci_spec_namespace(s, "ipc"))
                return error_set(err, -EOPNOTSUPP, "linux.namespaces: no ipc namespace (hostIPC): the host's IPC "
                                 "namespace is not supported");
        return 0;
}

/* A sysctl's name as a path below /proc/sys: "net.ipv4.ip_forward" ->
 * "net/ipv4/ip_forward", a '/' in a name (an interface "eth0.100" is
 * written "eth0/100") -> '.'. NULL when it is not a name. */
static char *sysctl_path(const char *name) {
        size_t n = strlen(name);
        if (n == 0 || n > 255 || strspn(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-./") != n ||
            name[0] == '.' || name[n - 1] == '.' || strstr(name, "..") || name[0] == '/')
                return NULL;
        char *p = strdup(name);
        for (char *c = p; p && *c; c++)
                *c = *c == '.' ? '/' : *c == '/' ? '.' : *c;
        /* no component may be "." or ".." once the slashes became dots */
        for (const char *c = p; p && *c;) {
                size_t l = strcspn(c, "/");
                if ((l == 1 && c[0] == '.') || (l == 2 && c[0] == '.' && c[1] == '.')) {
                        free(p);
                        return NULL;
                }
                c += l + (c[l] == '/');
        }
        return p;
}

static bool sysctl_is_ipc(const char *k) {
        return startswith(k, "kernel.shm") || startswith(k, "kernel.msg") || startswith(k, "kernel.sem") ||
                startswith(k, "fs.mqueue.");
}

/* Which sysctls a pod may set: those of its network namespace (the CRI's)
 * and of its IPC namespace (kernel.shm*, kernel.msg*, kernel.sem,
 * fs.mqueue.*), which systemd-nspawn makes for it. Any other is the
 * host's. */
static int check_sysctls(const OciSpec *s, Error **err) {
        char q[VALUE_QUOTED_MAX];
        const OciNamespace *net = oci_spec_namespace(s, "network");
        for (size_t i = 0; i < s->n_sysctl; i++) {
                const char *k = s->sysctl[i].key;
                _cleanup_free_ char *path = sysctl_path(k);
                if (!path)
                        return error_set(err, -EINVAL, "linux.sysctl: %s is not a sysctl name", value_quote(k, q));
                if (!startswith(k, "net.") && !sysctl_is_ipc(k))
                        return error_set(err, -EOPNOTSUPP, "linux.sysctl: %s is not a namespaced sysctl (net.*, "
                                         "kernel.shm*, kernel.msg*, kernel.sem, fs.mqueue.*): it would change the "
                                         "host's", value_quote(k, q));
                if (startswith(k, "net.") && (!net || !net->path))
                        return error_set(err, -EOPNOTSUPP, "linux.sysctl: %s: a network sysctl needs the pod's own "
                                         "network namespace (%s)", value_quote(k, q),
                                         net ? "the spec's has no path" : "hostNetwork is the host's");
                if (strlen(s->sysctl[i].value) > 4096 || strpbrk(s->sysctl[i].value, "\n"))
                        return error_set(err, -EINVAL, "linux.sysctl: the value of %s is not one line of at most "
                                         "4096 bytes", value_quote(k, q));
        }
        return 0;
}

/* Writes the sysctls of one namespace (ipc: the IPC ones, else the
 * network's) in the namespace ns_fd (of type nstype): /proc/sys shows the
 * namespaces of the process that opens a file, so a child enters it,
 * writes each, and says which failed. */
static int write_sysctls(const OciSpec *s, bool ipc, int ns_fd, int nstype, const char *where, Error **err) {
        _cleanup_strv_free_ char **paths = NULL;
        _cleanup_free_ size_t *index = calloc(s->n_sysctl ? s->n_sysctl : 1, sizeof(size_t));
        size_t n = 0;
        if (!index)
                return error_sys(err, -ENOMEM, "linux.sysctl");
        for (size_t i = 0; i < s->n_sysctl; i++) {
                if (sysctl_is_ipc(s->sysctl[i].key) != ipc)
                        continue;
                _cleanup_free_ char *p = sysctl_path(s->sysctl[i].key);
                char *full = NULL;
                if (!p || asprintf(&full, "/proc/sys/%s", p) < 0 || strv_push(&paths, full) < 0) {
                        free(full);
                        return error_sys(err, -ENOMEM, "linux.sysctl");
                }
                free(full);
                index[n++] = i;
        }
        if (n == 0)
                return 0;
        int pipefd[2], r;
        if (pipe2(pipefd, O_CLOEXEC) < 0)
                return error_sys(err, -errno, "linux.sysctl");
        pid_t pid = fork();
        if (pid < 0) {
                r = -errno;
                close(pipefd[0]);
                close(pipefd[1]);
                return error_sys(err, r, "linux.sysctl");
        }
        if (pid == 0) {
                int result[2] = { -1, 0 };
                if (setns(ns_fd, nstype) < 0)
                        result[1] = errno;
                for (size_t k = 0; k < n && result[1] == 0; k++) {
                        int fd = open(paths[k], O_WRONLY | O_NOFOLLOW | O_CLOEXEC);
                        const char *v = s->sysctl[index[k]].value;
                        errno = 0;
                        if (fd < 0 || write(fd, v, strlen(v)) != (ssize_t) strlen(v)) {
                                result[0] = (int) index[k];
                                result[1] = errno ? errno : EIO;
                        }
                        if (fd >= 0)
                                close(fd);
                }
                (void) !write(pipefd[1], result, sizeof(result));
                _exit(0);
        }
        close(pipefd[1]);
        int result[2] = { -1, EPROTO };
        ssize_t k = read(pipefd[0], result, sizeof(result));
        close(pipefd[0]);
        (void) waitpid(pid, NULL, 0);
        if (k != (ssize_t) sizeof(result))
                result[1] = EPROTO;
        if (result[1] == 0)
                return 0;
        char q[VALUE_QUOTED_MAX];
        if (result[0] < 0 || (size_t) result[0] >= s->n_sysctl)
                return error_sys(err, -result[1], "linux.sysctl: entering %s", where);
        return error_sys(err, -result[1], "linux.sysctl: setting %s to %s", s->sysctl[result[0]].key,
                         value_quote(s->sysctl[result[0]].value, q));
}

int oci_spec_apply_sysctls(const OciSpec *s, Error **err) {
        bool any = false;
        for (size_t i = 0; i < s->n_sysctl && !any; i++)
                any = !sysctl_is_ipc(s->sysctl[i].key);
        if (!any)
                return 0;
        int r = check_sysctls(s, err);
        if (r < 0)
                return r;
        const OciNamespace *net = oci_spec_namespace(s, "network");
        _cleanup_close_ int ns = open(net->path, O_RDONLY | O_CLOEXEC);
        if (ns < 0)
                return error_sys(err, -errno, "linux.sysctl: the network namespace %s", net->path);
        return write_sysctls(s, false, ns, CLONE_NEWNET, net->path, err);
}

int oci_spec_apply_ipc_sysctls(const OciSpec *s, pid_t leader, Error **err) {
        bool any = false;
        for (size_t i = 0; i < s->n_sysctl && !any; i++)
                any = sysctl_is_ipc(s->sysctl[i].key);
        if (!any)
                return 0;
        int r = check_sysctls(s, err);
        if (r < 0)
                return r;
        /* The namespace of the pod's PID 1, which the pidfd keeps from
         * being another process's meanwhile; never the shim's own. */
        _cleanup_close_ int pidfd = (int) syscall(SYS_pidfd_open, leader, 0);
        char path[64];
        snprintf(path, sizeof(path), "/proc/%d/ns/ipc", (int) leader);
        _cleanup_close_ int ns = pidfd >= 0 ? open(path, O_RDONLY | O_CLOEXEC) : -1;
        struct stat st, own;
        if (ns < 0 || syscall(SYS_pidfd_send_signal, pidfd, 0, NULL, 0) < 0)
                return error_sys(err, -errno, "linux.sysctl: the IPC namespace of the pod's PID 1 (%d)", (int) leader);
        if (fstat(ns, &st) < 0 || stat("/proc/self/ns/ipc", &own) < 0)
                return error_sys(err, -errno, "linux.sysctl: the IPC namespace of the pod's PID 1");
        if (st.st_ino == own.st_ino && st.st_dev == own.st_dev)
                return error_set(err, -EPERM, "linux.sysctl: the pod's PID 1 is in the host's IPC namespace");
        return write_sysctls(s, true, ns, CLONE_NEWIPC, "the pod's IPC namespace", err);
}

int oci_spec_pod_args(const OciSpec *s, const char *task_id, PodArgs *ret, Error **err) {
        /* A container that fails is the container's business (Kubernetes
         * restarts it, ctr reports it): it must not halt its pod. */
        PodArgs a = { .mutable_pod = true, .keep_on_app_failure = true, .no_private_users = true };
        int r = check_namespaces(s, err);
        if (r >= 0)
                r = check_sysctls(s, err);
        if (r >= 0 && task_id && pod_name_is_valid(task_id) && !(a.name = strdup(task_id)))
                r = error_sys(err, -ENOMEM, "task %s", task_id);
        const OciNamespace *net = oci_spec_namespace(s, "network");
        _cleanup_free_ char *net_arg = NULL;
        if (r >= 0 && net && net->path && asprintf(&net_arg, "ns:%s", net->path) < 0)
                r = error_sys(err, -ENOMEM, "linux.namespaces");
        if (r >= 0)
                r = pod_net_args_add(&a.net, "net", net_arg ? net_arg : net ? "none" : "host", err);
        /* The host's network has the host's name. */
        if (r >= 0 && net && s->hostname && *s->hostname) {
                if (!hostname_is_valid(s->hostname)) {
                        char q[VALUE_QUOTED_MAX];
                        r = error_set(err, -EINVAL, "hostname: %s is not a valid host name", value_quote(s->hostname, q));
                } else
                        r = pod_net_args_add(&a.net, "hostname", s->hostname, err);
        }
        if (r < 0) {
                pod_args_done(&a);
                return r;
        }
        *ret = a;
        return 0;
}

/* The device rules of the default specs of ctr and the CRI: the standard
 * nodes every app has (null, zero, full, random, urandom, tty, console,
 * ptmx, the pseudo terminals, tun), and mknod of anything, which no app
 * gets (it has no CAP_MKNOD in its default set) and which is harmless to
 * deny. */
static bool device_rule_is_standard(const char *rule) {
        static const char *const standard[] = {
                "c 1:3 ", "c 1:5 ", "c 1:7 ", "c 1:8 ", "c 1:9 ", "c 5:0 ", "c 5:1 ", "c 5:2 ", "c 136:* ", "c 10:200 ",
        };
        for (size_t i = 0; i < ELEMENTSOF(standard); i++)
                if (startswith(rule, standard[i]))
                        return true;
        const char *access = strrchr(rule, ' ');
        return access && streq(access, " m");
}

static bool device_node_is_standard(const char *path) {
        static const char *const standard[] = {
                "/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty", "/dev/console", "/dev/ptmx",
        };
        for (size_t i = 0; i < ELEMENTSOF(standard); i++)
                if (streq(path, standard[i]))
                        return true;
        return false;
}

static bool has_option(char *const *options, const char *o) {
        return strv_contains(options, o);
}

/* The mounts every container of ctr's and the CRI's default specs has,
 * which every app has already (its own /proc, /dev, /sys, /dev/shm...). */
static bool mount_is_standard(const OciMount *m) {
        static const struct {
                const char *destination, *type;
        } standard[] = {
                { "/proc", "proc" },       { "/dev", "tmpfs" },        { "/dev/pts", "devpts" },
                { "/dev/shm", "tmpfs" },   { "/dev/mqueue", "mqueue" }, { "/sys", "sysfs" },
                { "/sys/fs/cgroup", "cgroup" }, { "/sys/fs/cgroup", "cgroup2" }, { "/run", "tmpfs" },
        };
        for (size_t i = 0; i < ELEMENTSOF(standard); i++)
                if (streq(m->destination, standard[i].destination) && streq_ptr(m->type, standard[i].type))
                        return true;
        /* The CRI shares the sandbox's /dev/shm by a bind of it: each app
         * has its own. */
        return streq(m->destination, "/dev/shm");
}

/* tmpfs options an app's --tmpfs takes (size=, mode=, noexec); the rest
 * (nosuid, nodev, strictatime...) is what it gets anyway or harmless. */
static int tmpfs_arg(const OciMount *m, char **ret) {
        _cleanup_free_ char *opts = NULL;
        for (char **o = m->options; o && *o; o++) {
                if (!startswith(*o, "size=") && !startswith(*o, "mode=") && !streq(*o, "noexec"))
                        continue;
                char *n = NULL;
                if (asprintf(&n, "%s%s%s", opts ? opts : "", opts ? "," : "", *o) < 0)
                        return -ENOMEM;
                free(opts);
                opts = n;
        }
        return asprintf(ret, "%s%s%s", m->destination, opts ? ":" : "", opts ? opts : "") < 0 ? -ENOMEM : 0;
}

static int map_mounts(const OciSpec *s, AppArgs *a, Error **err) {
        char q[VALUE_QUOTED_MAX];
        for (size_t i = 0; i < s->n_mounts; i++) {
                const OciMount *m = &s->mounts[i];
                if (mount_is_standard(m))
                        continue;
                bool bind = streq_ptr(m->type, "bind") || has_option(m->options, "bind") || has_option(m->options, "rbind");
                if (bind) {
                        if (!m->source || m->source[0] != '/')
                                return error_set(err, -EINVAL, "mounts[%zu]: a bind mount of %s needs an absolute source", i,
                                                 value_quote(m->destination, q));
                        AppHostBind *l = reallocarray(a->host_binds, a->n_host_binds + 1, sizeof(AppHostBind));
                        if (!l)
                                return error_sys(err, -ENOMEM, "mounts");
                        a->host_binds = l;
                        AppHostBind *b = &l[a->n_host_binds];
                        *b = (AppHostBind) { .source = strdup(m->source), .destination = strdup(m->destination),
                                             .read_only = has_option(m->options, "ro") };
                        a->n_host_binds++;
                        if (!b->source || !b->destination)
                                return error_sys(err, -ENOMEM, "mounts");
                        continue;
                }
                if (streq_ptr(m->type, "tmpfs")) {
                        _cleanup_free_ char *t = NULL;
                        if (tmpfs_arg(m, &t) < 0 || strv_push(&a->tmpfs, t) < 0)
                                return error_sys(err, -ENOMEM, "mounts");
                        continue;
                }
                return error_set(err, -EOPNOTSUPP, "mounts[%zu]: a mount of type %s at %s is not supported (binds and "
                                 "tmpfs are)", i, m->type ? m->type : "(none)", value_quote(m->destination, q));
        }
        return 0;
}

/* "RLIMIT_NOFILE" soft hard -> "nofile=SOFT:HARD" */
static int rlimit_arg(const OciRlimit *l, char **ret) {
        const char *name = startswith(l->type, "RLIMIT_");
        if (!name || !*name || strlen(name) > 16)
                return -EINVAL;
        char lower[17];
        size_t k = 0;
        for (; name[k]; k++) {
                if (!isupper((unsigned char) name[k]))
                        return -EINVAL;
                lower[k] = (char) tolower((unsigned char) name[k]);
        }
        lower[k] = 0;
        char soft[24] = "infinity", hard[24] = "infinity";
        if (l->soft != UINT64_MAX)
                snprintf(soft, sizeof(soft), "%" PRIu64, l->soft);
        if (l->hard != UINT64_MAX)
                snprintf(hard, sizeof(hard), "%" PRIu64, l->hard);
        return asprintf(ret, "%s=%s:%s", lower, soft, hard) < 0 ? -ENOMEM : 0;
}

static int map_security(const OciSpec *s, AppArgs *a, Error **err) {
        const OciProcess *p = &s->process;
        char q[VALUE_QUOTED_MAX];
        /* The bounding set is the set: what the app's root has. */
        if (strv_push(&a->cap_drop, "ALL") < 0)
                return error_sys(err, -ENOMEM, "process.capabilities");
        for (char **c = p->cap_bounding; c && *c; c++)
                if (!strv_contains(a->cap_add, *c) && strv_push(&a->cap_add, *c) < 0)
                        return error_sys(err, -ENOMEM, "process.capabilities");
        if (p->cap_ambient && p->cap_ambient[0])
                return error_set(err, -EOPNOTSUPP, "process.capabilities.ambient: ambient capabilities (%s) are not "
                                 "supported", value_quote(p->cap_ambient[0], q));
        for (size_t i = 0; i < p->n_rlimits; i++) {
                _cleanup_free_ char *arg = NULL;
                int r = rlimit_arg(&p->rlimits[i], &arg);
                if (r == -EINVAL)
                        return error_set(err, -EOPNOTSUPP, "process.rlimits[%zu]: %s is not a resource limit", i,
                                         value_quote(p->rlimits[i].type, q));
                if (r < 0 || strv_push(&a->rlimits, arg) < 0)
                        return error_sys(err, -ENOMEM, "process.rlimits");
        }
        /* Unset in the spec is Kubernetes' allowPrivilegeEscalation=true
         * (its default) and ctr's: set-user-id programs work, as in runc. */
        a->allow_new_privileges = !p->no_new_privileges;
        if (s->have_uid_mappings || oci_spec_namespace(s, "user"))
                return error_set(err, -EOPNOTSUPP, "linux.uidMappings: a user namespace of the container's own is not "
                                 "supported (the pod's ids are the host's)");
        /* The sandbox's sysctls hold for the pod (oci_spec_pod_args());
         * a container has none of its own (containerd sends them to the
         * sandbox only). */
        if (s->n_sysctl > 0)
                return error_set(err, -EOPNOTSUPP, "linux.sysctl: sysctls of a container (%s) are not supported, only "
                                 "those of its pod sandbox", value_quote(s->sysctl[0].key, q));
        for (char **d = s->device_nodes; d && *d; d++)
                if (!device_node_is_standard(*d))
                        return error_set(err, -EOPNOTSUPP, "linux.devices: device %s is not supported", value_quote(*d, q));
        for (char **d = s->device_allow; d && *d; d++)
                if (!device_rule_is_standard(*d))
                        return error_set(err, -EOPNOTSUPP, "linux.resources.devices: access to devices \"%s\" is not "
                                         "supported (a privileged container?)", value_quote(*d, q));
        if (strv_contains(s->ignored, "hooks"))
                return error_set(err, -EOPNOTSUPP, "hooks: OCI hooks are not supported");
        int r = check_namespaces(s, err);
        if (r < 0)
                return r;
        /* The profile as given (a Kubernetes RuntimeDefault is containerd's
         * profile, a Localhost one the node's file), compiled now so that a
         * bad one is refused at Create; no profile is no filter
         * (Unconfined), as under runc. */
        if (s->seccomp) {
                _cleanup_(seccomp_program_done) SeccompProgram prog = {};
                if ((r = seccomp_oci_compile_text(s->seccomp, strlen(s->seccomp), "linux.seccomp", &prog, err)) < 0)
                        return r;
                if (!(a->seccomp_profile = strdup(s->seccomp)))
                        return error_sys(err, -ENOMEM, "linux.seccomp");
        } else
                a->seccomp_unconfined = true;
        if ((s->masked_paths && !(a->masked_paths = strv_copy(s->masked_paths))) ||
            (s->readonly_paths && !(a->readonly_paths = strv_copy(s->readonly_paths))))
                return error_sys(err, -ENOMEM, "linux.maskedPaths");
        return 0;
}

static int map_resources(const OciSpec *s, AppArgs *a, Error **err) {
        const OciResources *res = &s->resources;
        if (res->memory_limit > 0 && asprintf(&a->memory, "%" PRIi64, res->memory_limit) < 0)
                return error_sys(err, -ENOMEM, "linux.resources.memory");
        if (res->cpu_quota > 0) {
                uint64_t period = res->cpu_period ? res->cpu_period : 100000;
                /* In thousandths of a CPU, rounded up: never less than asked. */
                uint64_t millis = ((uint64_t) res->cpu_quota * 1000 + period - 1) / period;
                if (millis == 0)
                        millis = 1;
                if (asprintf(&a->cpus, "%" PRIu64 ".%03" PRIu64, millis / 1000, millis % 1000) < 0)
                        return error_sys(err, -ENOMEM, "linux.resources.cpu");
        }
        if (res->pids_limit > 0 && asprintf(&a->pids_limit, "%" PRIi64, res->pids_limit) < 0)
                return error_sys(err, -ENOMEM, "linux.resources.pids");
        return 0;
}

static int set_path(char **field, const char *path, const char *what, Error **err) {
        if (!path || !*path)
                return 0;
        if (path[0] != '/')
                return error_set(err, -EINVAL, "%s %s is not an absolute path", what, path);
        return (*field = strdup(path)) ? 0 : error_sys(err, -ENOMEM, "%s", what);
}

int oci_spec_app_args(const OciSpec *s, const char *app_name, const char *rootfs, const char *stdin_path,
                      const char *stdout_path, const char *stderr_path, AppArgs *ret, Error **err) {
        const OciProcess *p = &s->process;
        if (!s->have_process || !p->args || !p->args[0])
                return error_set(err, -EINVAL, "process: the spec has no process to run");
        if (p->terminal)
                return error_set(err, -EOPNOTSUPP, "process.terminal: a terminal for a container's own process is not "
                                 "supported (run without -t; an exec's is)");
        if (!rootfs || rootfs[0] != '/')
                return error_set(err, -EINVAL, "the task has no root directory");
        AppArgs a = { .have_args = true };
        int r = 0;
        char uid[16], gid[16];
        snprintf(uid, sizeof(uid), "%" PRIu32, p->uid);
        snprintf(gid, sizeof(gid), "%" PRIu32, p->gid);
        if (!(a.name = strdup(app_name)) || !(a.exec = strdup(p->args[0])) || !(a.args = strv_copy(p->args + 1)) ||
            !(a.user = strdup(uid)) || !(a.group = strdup(gid)) || !(a.rootfs = strdup(rootfs)) ||
            (p->cwd && !(a.working_dir = strdup(p->cwd))))
                r = error_sys(err, -ENOMEM, "app %s", app_name);
        for (char **e = p->env; r >= 0 && e && *e; e++) {
                if (!strchr(*e, '=') || (*e)[0] == '=') {
                        char q[VALUE_QUOTED_MAX];
                        r = error_set(err, -EINVAL, "process.env: %s is not NAME=VALUE", value_quote(*e, q));
                } else if (strv_push(&a.environment, *e) < 0)
                        r = error_sys(err, -ENOMEM, "process.env");
        }
        for (size_t i = 0; r >= 0 && i < p->n_additional_gids; i++) {
                snprintf(gid, sizeof(gid), "%" PRIu32, p->additional_gids[i]);
                if (!strv_contains(a.supplementary_groups, gid) && strv_push(&a.supplementary_groups, gid) < 0)
                        r = error_sys(err, -ENOMEM, "process.user.additionalGids");
        }
        a.read_only = s->root_readonly;
        if (r >= 0 && (r = set_path(&a.stdin_path, stdin_path, "stdin", err)) >= 0 &&
            (r = set_path(&a.stdout_path, stdout_path, "stdout", err)) >= 0)
                r = set_path(&a.stderr_path, stderr_path, "stderr", err);
        if (r >= 0 && (r = map_security(s, &a, err)) >= 0 && (r = map_resources(s, &a, err)) >= 0)
                r = map_mounts(s, &a, err);
        if (r < 0) {
                app_args_done(&a);
                return r;
        }
        *ret = a;
        return 0;
}

/* Lowercase letters and digits with single dashes between them, at most
 * max characters: an ACName. */
static void make_acname(const char *s, size_t max, char *ret) {
        size_t k = 0;
        for (; *s && k < max; s++) {
                char c = (char) tolower((unsigned char) *s);
                if (!isascii((unsigned char) c) || !isalnum((unsigned char) c))
                        c = '-';
                if (c == '-' && (k == 0 || ret[k - 1] == '-'))
                        continue;
                ret[k++] = c;
        }
        while (k > 0 && ret[k - 1] == '-')
                k--;
        ret[k] = 0;
}

void oci_spec_app_name(const OciSpec *s, const char *task_id, bool prefer_cri_name, char ret[static OCI_APP_NAME_MAX]) {
        const char *cri = s ? oci_spec_annotation(s, OCI_ANNOTATION_CONTAINER_NAME) : NULL;
        if (prefer_cri_name && cri && pod_app_name_is_valid(cri)) {
                snprintf(ret, OCI_APP_NAME_MAX, "%s", cri);
                return;
        }
        char id[16];
        make_acname(task_id ? task_id : "", 12, id);
        snprintf(ret, OCI_APP_NAME_MAX, "c-%s", *id ? id : "task");
        make_acname(ret, OCI_APP_NAME_MAX - 1, ret);
}
