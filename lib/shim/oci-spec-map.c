/* SPDX-License-Identifier: Apache-2.0 */
#include <ctype.h>
#include <inttypes.h>

#include "basic/strv.h"
#include "manifest/pod-manifest.h"
#include "manifest/pod-net.h"
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

int oci_spec_pod_args(const OciSpec *s, const char *task_id, PodArgs *ret, Error **err) {
        /* A container that fails is the container's business (Kubernetes
         * restarts it, ctr reports it): it must not halt its pod. */
        PodArgs a = { .mutable_pod = true, .keep_on_app_failure = true, .no_private_users = true };
        int r = 0;
        if (task_id && pod_name_is_valid(task_id) && !(a.name = strdup(task_id)))
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
        if (s->n_sysctl > 0)
                return error_set(err, -EOPNOTSUPP, "linux.sysctl: sysctls (%s) are not supported",
                                 value_quote(s->sysctl[0].key, q));
        for (char **d = s->device_nodes; d && *d; d++)
                if (!device_node_is_standard(*d))
                        return error_set(err, -EOPNOTSUPP, "linux.devices: device %s is not supported", value_quote(*d, q));
        for (char **d = s->device_allow; d && *d; d++)
                if (!device_rule_is_standard(*d))
                        return error_set(err, -EOPNOTSUPP, "linux.resources.devices: access to devices \"%s\" is not "
                                         "supported (a privileged container?)", value_quote(*d, q));
        if (strv_contains(s->ignored, "hooks"))
                return error_set(err, -EOPNOTSUPP, "hooks: OCI hooks are not supported");
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
                return error_set(err, -EOPNOTSUPP, "process.terminal: a terminal is not supported (run without -t)");
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
