/* SPDX-License-Identifier: Apache-2.0 */
#include <json-c/json.h>
#include <seccomp.h>
#include <fcntl.h>
#include <stdarg.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "basic/fs.h"
#include "basic/quantity.h"
#include "basic/strv.h"
#include "manifest/app-args.h"
#include "seccomp/seccomp-oci.h"
#include "unit/app-isolators.h"

static const char *const capability_names[CAPABILITY_LAST + 1] = {
        "CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_DAC_READ_SEARCH", "CAP_FOWNER", "CAP_FSETID", "CAP_KILL",
        "CAP_SETGID", "CAP_SETUID", "CAP_SETPCAP", "CAP_LINUX_IMMUTABLE", "CAP_NET_BIND_SERVICE",
        "CAP_NET_BROADCAST", "CAP_NET_ADMIN", "CAP_NET_RAW", "CAP_IPC_LOCK", "CAP_IPC_OWNER",
        "CAP_SYS_MODULE", "CAP_SYS_RAWIO", "CAP_SYS_CHROOT", "CAP_SYS_PTRACE", "CAP_SYS_PACCT",
        "CAP_SYS_ADMIN", "CAP_SYS_BOOT", "CAP_SYS_NICE", "CAP_SYS_RESOURCE", "CAP_SYS_TIME",
        "CAP_SYS_TTY_CONFIG", "CAP_MKNOD", "CAP_LEASE", "CAP_AUDIT_WRITE", "CAP_AUDIT_CONTROL",
        "CAP_SETFCAP", "CAP_MAC_OVERRIDE", "CAP_MAC_ADMIN", "CAP_SYSLOG", "CAP_WAKE_ALARM",
        "CAP_BLOCK_SUSPEND", "CAP_AUDIT_READ", "CAP_PERFMON", "CAP_BPF", "CAP_CHECKPOINT_RESTORE",
};

/* The groups "systemd-analyze syscall-filter" of systemd 252 lists. A newer
 * group (such as @sandbox) would make the pod's systemd ignore the filter
 * line with a warning: the app would run unfiltered. */
static const char *const syscall_groups[] = {
        "@default", "@aio", "@basic-io", "@chown", "@clock", "@cpu-emulation", "@debug", "@file-system",
        "@io-event", "@ipc", "@keyring", "@memlock", "@module", "@mount", "@network-io", "@obsolete",
        "@pkey", "@privileged", "@process", "@raw-io", "@reboot", "@resources", "@setuid", "@signal",
        "@swap", "@sync", "@system-service", "@timer", "@known",
};

const char *const APP_SYSCALLS_DEFAULT[] = { "@system-service", "chroot", "ptrace", NULL };
const char *const APP_SYSCALLS_DEFAULT_DENIED[] = {
        "@keyring", "io_uring_enter", "io_uring_register", "io_uring_setup", "userfaultfd", NULL,
};

int capability_from_name(const char *name) {
        for (int i = 0; name && i <= CAPABILITY_LAST; i++)
                if (streq(capability_names[i], name))
                        return i;
        return -EINVAL;
}

const char *capability_to_name(int cap) {
        return cap >= 0 && cap <= CAPABILITY_LAST ? capability_names[cap] : NULL;
}

bool syscall_name_is_valid(const char *name) {
        if (!name || !*name)
                return false;
        if (name[0] == '@') {
                for (size_t i = 0; i < ELEMENTSOF(syscall_groups); i++)
                        if (streq(syscall_groups[i], name))
                                return true;
                return false;
        }
        /* Checked first so nothing but a plain name reaches the unit file. */
        if (strspn(name, "abcdefghijklmnopqrstuvwxyz0123456789_") != strlen(name))
                return false;
        return seccomp_syscall_resolve_name(name) != __NR_SCMP_ERROR;
}

bool errno_name_is_valid(const char *name) {
        if (!name || name[0] != 'E')
                return false;
        for (int i = 1; i < 4096; i++) {
                const char *n = strerrorname_np(i);
                if (n && streq(n, name))
                        return true;
        }
        return false;
}

void app_isolation_done(AppIsolation *i) {
        if (!i)
                return;
        strv_free(i->syscalls_allowed);
        strv_free(i->syscalls_denied);
        free(i->syscall_errno);
        for (size_t k = 0; k < i->n_tmpfs; k++) {
                free(i->tmpfs[k].path);
                free(i->tmpfs[k].options);
        }
        free(i->tmpfs);
        for (size_t k = 0; k < i->n_devices; k++) {
                free(i->devices[k].path);
                free(i->devices[k].rule);
        }
        free(i->devices);
        strv_free(i->rlimits);
        free(i->seccomp_program);
        strv_free(i->masked_paths);
        strv_free(i->readonly_paths);
        *i = (AppIsolation) {};
}

/* Where the isolator under inspection is, for messages. */
typedef struct Where {
        const char *field;
        size_t index;
        const char *name;
        Error **err;
} Where;

static int bad(const Where *w, const char *sub, const char *fmt, ...) _printf_(3, 4);
static int bad(const Where *w, const char *sub, const char *fmt, ...) {
        _cleanup_free_ char *msg = NULL;
        va_list ap;
        va_start(ap, fmt);
        if (vasprintf(&msg, fmt, ap) < 0)
                msg = NULL;
        va_end(ap);
        return error_set(w->err, -EINVAL, "%s[%zu].value%s (%s): %s", w->field, w->index, sub, w->name,
                         msg ?: "invalid");
}

/* A value that must be an object with only the given keys. */
static int check_object_keys(const Where *w, struct json_object *v, const char *const *keys) {
        if (!json_object_is_type(v, json_type_object))
                return bad(w, "", "expected an object");
        json_object_object_foreach(v, key, val) {
                (void) val;
                bool known = false;
                for (const char *const *k = keys; *k && !known; k++)
                        known = streq(*k, key);
                char q[VALUE_QUOTED_MAX];
                if (!known)
                        return bad(w, "", "unknown field %s", value_quote(key, q));
        }
        return 0;
}

/* "set": a non-empty array of strings, each checked by valid(). */
static int get_set(const Where *w, struct json_object *v, bool (*valid)(const char *), const char *what,
                   char ***ret) {
        struct json_object *set = NULL;
        if (!json_object_object_get_ex(v, "set", &set) || !set)
                return bad(w, ".set", "missing");
        if (!json_object_is_type(set, json_type_array))
                return bad(w, ".set", "expected an array");
        size_t n = json_object_array_length(set);
        if (n == 0)
                return bad(w, ".set", "must not be empty");
        _cleanup_strv_free_ char **l = calloc(n + 1, sizeof(char *));
        if (!l)
                return error_sys(w->err, -ENOMEM, "%s", w->field);
        for (size_t i = 0; i < n; i++) {
                struct json_object *e = json_object_array_get_idx(set, i);
                char sub[64];
                snprintf(sub, sizeof(sub), ".set[%zu]", i);
                if (!json_object_is_type(e, json_type_string))
                        return bad(w, sub, "expected a string");
                const char *s = json_object_get_string(e);
                char q[VALUE_QUOTED_MAX];
                if (!valid(s) || strlen(s) != (size_t) json_object_get_string_len(e))
                        return bad(w, sub, "%s is not %s", value_quote(s, q), what);
                if (!(l[i] = strdup(s)))
                        return error_sys(w->err, -ENOMEM, "%s", w->field);
        }
        *ret = TAKE_PTR(l);
        return 0;
}

static bool capability_name_is_valid(const char *name) {
        return capability_from_name(name) >= 0;
}

static int parse_capabilities(const Where *w, struct json_object *v, bool retain, AppIsolation *iso) {
        static const char *const keys[] = { "set", NULL };
        _cleanup_strv_free_ char **set = NULL;
        int r;
        if ((r = check_object_keys(w, v, keys)) < 0 ||
            (r = get_set(w, v, capability_name_is_valid, "a capability systemd 252 knows (CAP_...)", &set)) < 0)
                return r;
        uint64_t caps = 0;
        for (char **c = set; *c; c++)
                caps |= CAP_BIT(capability_from_name(*c));
        iso->capabilities = retain ? caps : APP_CAPABILITIES_DEFAULT & ~caps;
        return 0;
}

static int parse_seccomp(const Where *w, struct json_object *v, bool retain, AppIsolation *iso) {
        static const char *const keys[] = { "set", "errno", NULL };
        _cleanup_strv_free_ char **set = NULL;
        int r;
        if ((r = check_object_keys(w, v, keys)) < 0 ||
            (r = get_set(w, v, syscall_name_is_valid, "a system call or a group of systemd 252", &set)) < 0)
                return r;
        struct json_object *e = NULL;
        free(TAKE_PTR(iso->syscall_errno));
        if (json_object_object_get_ex(v, "errno", &e) && e) {
                const char *s = json_object_get_string(e);
                if (!json_object_is_type(e, json_type_string) || !errno_name_is_valid(s))
                        return bad(w, ".errno", "expected an errno name such as \"EPERM\"");
                if (!(iso->syscall_errno = strdup(s)))
                        return error_sys(w->err, -ENOMEM, "%s", w->field);
        }
        /* The default filter is replaced as a whole. */
        strv_free(iso->syscalls_allowed);
        strv_free(iso->syscalls_denied);
        iso->syscalls_allowed = retain ? TAKE_PTR(set) : NULL;
        iso->syscalls_denied = retain ? NULL : TAKE_PTR(set);
        iso->syscalls_native_only = false;
        iso->deny_vsock = false;
        return 0;
}

/* "limit" and "request" of a resource isolator: strings or integers. */
static int get_quantity(const Where *w, struct json_object *v, const char *key, bool required, bool cpu,
                        uint64_t *ret) {
        char sub[16];
        snprintf(sub, sizeof(sub), ".%s", key);
        struct json_object *q = NULL;
        if (!json_object_object_get_ex(v, key, &q) || !q) {
                if (required)
                        return bad(w, sub, "missing");
                return 0;
        }
        uint64_t value;
        if (json_object_is_type(q, json_type_int)) {
                int64_t i = json_object_get_int64(q);
                if (i <= 0 || i == INT64_MAX || (cpu && (uint64_t) i > UINT64_MAX / 1000))
                        return bad(w, sub, "must be a positive number");
                value = cpu ? (uint64_t) i * 1000 : (uint64_t) i;
        } else if (json_object_is_type(q, json_type_string)) {
                const char *s = json_object_get_string(q);
                char qs[VALUE_QUOTED_MAX];
                int r = cpu ? parse_cpu_millis(s, &value) : parse_quantity_bytes(s, &value);
                if (r == -ERANGE)
                        return bad(w, sub, "%s is too large", value_quote(s, qs));
                if (r < 0)
                        return bad(w, sub, cpu ? "%s is not a number of CPUs (\"2\", \"0.5\", \"500m\")"
                                               : "%s is not a quantity (\"512M\", \"1Gi\", \"1048576\")",
                                   value_quote(s, qs));
                if (value == 0)
                        return bad(w, sub, "must be greater than zero");
        } else
                return bad(w, sub, "expected a string");
        *ret = value;
        return 0;
}

static int parse_resource(const Where *w, struct json_object *v, bool cpu, AppIsolation *iso) {
        static const char *const keys[] = { "limit", "request", NULL };
        uint64_t limit = 0, request = 0;
        int r;
        if ((r = check_object_keys(w, v, keys)) < 0 ||
            (r = get_quantity(w, v, "limit", true, cpu, &limit)) < 0 ||
            (r = get_quantity(w, v, "request", false, cpu, &request)) < 0)
                return r;
        if (cpu)
                iso->cpu_millis = limit;
        else
                iso->memory_max = limit;
        return 0;
}

static int parse_no_new_privileges(const Where *w, struct json_object *v, bool unused, AppIsolation *iso) {
        if (!json_object_is_type(v, json_type_boolean))
                return bad(w, "", "expected true or false");
        iso->no_new_privileges = json_object_get_boolean(v);
        return 0;
}

static int parse_oom_score_adj(const Where *w, struct json_object *v, bool unused, AppIsolation *iso) {
        if (!json_object_is_type(v, json_type_int))
                return bad(w, "", "expected an integer");
        int64_t i = json_object_get_int64(v);
        if (i < -1000 || i > 1000)
                return bad(w, "", "must be between -1000 and 1000");
        iso->have_oom_score_adjust = true;
        iso->oom_score_adjust = (int) i;
        return 0;
}

static int parse_pids_limit(const Where *w, struct json_object *v, bool unused, AppIsolation *iso) {
        static const char *const keys[] = { "limit", NULL };
        int r = check_object_keys(w, v, keys);
        if (r < 0)
                return r;
        struct json_object *l = NULL;
        if (!json_object_object_get_ex(v, "limit", &l) || !l)
                return bad(w, ".limit", "missing");
        if (!json_object_is_type(l, json_type_int))
                return bad(w, ".limit", "expected a number of tasks");
        int64_t i = json_object_get_int64(l);
        /* Above a billion is no limit, and INT64_MAX is what json-c makes
         * of anything larger. */
        if (i <= 0 || i > 1000000000)
                return bad(w, ".limit", "must be between 1 and 1000000000");
        iso->tasks_max = (uint64_t) i;
        return 0;
}

/* The elements of the array key of v, each an object with only keys. */
static int get_object_list(const Where *w, struct json_object *v, const char *key, const char *const *keys,
                           struct json_object **ret, size_t *ret_n) {
        static const char *const outer[2][2] = { { "mounts", NULL }, { "allow", NULL } };
        const char *const *top = streq(key, "mounts") ? outer[0] : outer[1];
        int r = check_object_keys(w, v, top);
        if (r < 0)
                return r;
        char sub[32];
        snprintf(sub, sizeof(sub), ".%s", key);
        struct json_object *a = NULL;
        if (!json_object_object_get_ex(v, key, &a) || !a)
                return bad(w, sub, "missing");
        if (!json_object_is_type(a, json_type_array) || json_object_array_length(a) == 0)
                return bad(w, sub, "expected a non-empty array");
        size_t n = json_object_array_length(a);
        for (size_t i = 0; i < n; i++) {
                struct json_object *e = json_object_array_get_idx(a, i);
                snprintf(sub, sizeof(sub), ".%s[%zu]", key, i);
                if (!json_object_is_type(e, json_type_object))
                        return bad(w, sub, "expected an object");
                json_object_object_foreach(e, k, val) {
                        (void) val;
                        bool known = false;
                        for (const char *const *x = keys; *x && !known; x++)
                                known = streq(*x, k);
                        char q[VALUE_QUOTED_MAX];
                        if (!known)
                                return bad(w, sub, "unknown field %s", value_quote(k, q));
                }
        }
        *ret = a;
        *ret_n = n;
        return 0;
}

/* A string member of an element: NULL when absent; -EINVAL when not a
 * string or with a NUL in it. */
static int get_member_string(const Where *w, struct json_object *e, const char *sub, const char *key, bool required,
                             const char **ret) {
        struct json_object *s = NULL;
        char where[64];
        snprintf(where, sizeof(where), "%s.%s", sub, key);
        if (!json_object_object_get_ex(e, key, &s) || !s) {
                *ret = NULL;
                return required ? bad(w, where, "missing") : 0;
        }
        if (!json_object_is_type(s, json_type_string) ||
            strlen(json_object_get_string(s)) != (size_t) json_object_get_string_len(s))
                return bad(w, where, "expected a string");
        *ret = json_object_get_string(s);
        return 0;
}

static int parse_tmpfs(const Where *w, struct json_object *v, bool unused, AppIsolation *iso) {
        static const char *const keys[] = { "path", "options", NULL };
        struct json_object *a;
        size_t n;
        int r = get_object_list(w, v, "mounts", keys, &a, &n);
        if (r < 0)
                return r;
        if (!(iso->tmpfs = calloc(n, sizeof(AppTmpfs))))
                return error_sys(w->err, -ENOMEM, "%s", w->field);
        for (size_t i = 0; i < n; i++) {
                struct json_object *e = json_object_array_get_idx(a, i);
                char sub[32], q[VALUE_QUOTED_MAX];
                snprintf(sub, sizeof(sub), ".mounts[%zu]", i);
                const char *path, *options, *problem;
                if ((r = get_member_string(w, e, sub, "path", true, &path)) < 0 ||
                    (r = get_member_string(w, e, sub, "options", false, &options)) < 0)
                        return r;
                if ((problem = app_mount_path_problem(path, false)))
                        return bad(w, sub, "path %s: %s", value_quote(path, q), problem);
                for (size_t k = 0; k < i; k++)
                        if (streq(iso->tmpfs[k].path, path))
                                return bad(w, sub, "path %s: a second tmpfs there", value_quote(path, q));
                if (options && tmpfs_options_check(options, w->err) < 0)
                        return error_prefix(w->err, "%s[%zu].value%s.options (%s)", w->field, w->index, sub, w->name);
                /* A tmpfs is for scratch files any user of the app may
                 * write, as /tmp is, unless mode= says otherwise. */
                _cleanup_free_ char *opts = NULL;
                bool has_mode = options && (startswith(options, "mode=") || strstr(options, ",mode="));
                if (asprintf(&opts, "%s%s%s", options ? options : "", options && *options && !has_mode ? "," : "",
                             has_mode ? "" : "mode=1777") < 0 ||
                    !(iso->tmpfs[i].path = strdup(path)))
                        return error_sys(w->err, -ENOMEM, "%s", w->field);
                iso->tmpfs[i].options = TAKE_PTR(opts);
                iso->n_tmpfs = i + 1;
        }
        return 0;
}

static int parse_devices(const Where *w, struct json_object *v, bool unused, AppIsolation *iso) {
        static const char *const keys[] = { "path", "access", NULL };
        struct json_object *a;
        size_t n;
        int r = get_object_list(w, v, "allow", keys, &a, &n);
        if (r < 0)
                return r;
        if (!(iso->devices = calloc(n, sizeof(AppDevice))))
                return error_sys(w->err, -ENOMEM, "%s", w->field);
        for (size_t i = 0; i < n; i++) {
                struct json_object *e = json_object_array_get_idx(a, i);
                char sub[32], q[VALUE_QUOTED_MAX];
                snprintf(sub, sizeof(sub), ".allow[%zu]", i);
                const char *path, *access, *problem;
                if ((r = get_member_string(w, e, sub, "path", true, &path)) < 0 ||
                    (r = get_member_string(w, e, sub, "access", false, &access)) < 0)
                        return r;
                if ((problem = app_mount_path_problem(path, true)))
                        return bad(w, sub, "path %s: %s", value_quote(path, q), problem);
                if (access && !device_access_is_valid(access))
                        return bad(w, sub, "access %s: expected r, w and m (at least one, each once)",
                                   value_quote(access, q));
                if (!(iso->devices[i].path = strdup(path)))
                        return error_sys(w->err, -ENOMEM, "%s", w->field);
                snprintf(iso->devices[i].access, sizeof(iso->devices[i].access), "%s", access ? access : "rw");
                iso->n_devices = i + 1;
        }
        return 0;
}

static int parse_rlimits(const Where *w, struct json_object *v, bool unused, AppIsolation *iso) {
        static const char *const keys[] = { "limits", NULL };
        int r = check_object_keys(w, v, keys);
        if (r < 0)
                return r;
        struct json_object *l = NULL;
        if (!json_object_object_get_ex(v, "limits", &l) || !json_object_is_type(l, json_type_array))
                return bad(w, ".limits", "expected an array of \"NAME=SOFT[:HARD]\"");
        size_t n = json_object_array_length(l);
        if (n > 16)
                return bad(w, ".limits", "more than 16 limits");
        for (size_t i = 0; i < n; i++) {
                struct json_object *e = json_object_array_get_idx(l, i);
                char sub[32];
                snprintf(sub, sizeof(sub), ".limits[%zu]", i);
                if (!json_object_is_type(e, json_type_string))
                        return bad(w, sub, "expected \"NAME=SOFT[:HARD]\"");
                const char *s = json_object_get_string(e);
                if (rlimit_arg_check(s, w->err) < 0)
                        return error_prefix(w->err, "%s[%zu].value%s (%s)", w->field, w->index, sub, w->name);
                size_t name_len = strcspn(s, "=");
                for (char **o = iso->rlimits; o && *o; o++)
                        if (strncmp(*o, s, name_len + 1) == 0)
                                return bad(w, sub, "a second limit of %.*s", (int) name_len, s);
                if (strv_push(&iso->rlimits, s) < 0)
                        return error_sys(w->err, -ENOMEM, "%s", w->field);
        }
        return 0;
}

static int parse_seccomp_oci(const Where *w, struct json_object *v, bool unused, AppIsolation *iso) {
        static const char *const keys[] = { "profile", "unconfined", NULL };
        int r = check_object_keys(w, v, keys);
        if (r < 0)
                return r;
        struct json_object *profile = json_object_object_get(v, "profile"), *unconfined = json_object_object_get(v, "unconfined");
        if (!profile == !unconfined)
                return bad(w, "", "expected \"profile\" or \"unconfined\"");
        if (unconfined && !(json_object_is_type(unconfined, json_type_boolean) && json_object_get_boolean(unconfined)))
                return bad(w, ".unconfined", "expected true");
        if (profile) {
                _cleanup_free_ char *what = NULL;
                _cleanup_(seccomp_program_done) SeccompProgram p = {};
                if (asprintf(&what, "%s[%zu].value.profile (%s)", w->field, w->index, w->name) < 0)
                        return error_sys(w->err, -ENOMEM, "%s", w->field);
                if ((r = seccomp_oci_compile(profile, what, &p, w->err)) < 0)
                        return r;
                if (seccomp_program_to_text(&p, &iso->seccomp_program) < 0)
                        return error_sys(w->err, -ENOMEM, "%s", w->field);
        }
        /* Either replaces sdpod's default filter as a whole. */
        strv_free(TAKE_PTR(iso->syscalls_allowed));
        strv_free(TAKE_PTR(iso->syscalls_denied));
        free(TAKE_PTR(iso->syscall_errno));
        iso->syscalls_native_only = false;
        iso->deny_vsock = false;
        return 0;
}

/* A path of a spec's maskedPaths or readonlyPaths: absolute, no "..", and
 * nothing the unit's syntax would read otherwise; /proc and /sys are
 * where most of them are. */
static const char *masked_path_problem(const char *path) {
        const char *problem = absolute_path_problem(path);
        if (problem)
                return problem;
        if (streq(path, "/"))
                return "not the root";
        for (const char *p = path; *p; p++) {
                unsigned char c = (unsigned char) *p;
                if (c <= ' ' || c == 0x7f || c == '"' || c == '\'' || c == '\\' || c == ':' || c == '%' || c >= 0x80)
                        return "whitespace, quotes, backslashes, ':', '%', control and non-ASCII characters are not "
                               "supported";
        }
        return NULL;
}

static int parse_masked_paths(const Where *w, struct json_object *v, bool unused, AppIsolation *iso) {
        static const char *const keys[] = { "masked", "readonly", NULL };
        int r = check_object_keys(w, v, keys);
        if (r < 0)
                return r;
        for (size_t k = 0; k < 2; k++) {
                struct json_object *a = json_object_object_get(v, keys[k]);
                char ***l = k == 0 ? &iso->masked_paths : &iso->readonly_paths;
                char sub[64];
                snprintf(sub, sizeof(sub), ".%s", keys[k]);
                if (!a)
                        continue;
                if (!json_object_is_type(a, json_type_array) || json_object_array_length(a) > 256)
                        return bad(w, sub, "expected an array of at most 256 paths");
                for (size_t i = 0; i < json_object_array_length(a); i++) {
                        struct json_object *e = json_object_array_get_idx(a, i);
                        const char *s = json_object_is_type(e, json_type_string) ? json_object_get_string(e) : NULL;
                        const char *problem = !s ? "expected a string"
                                : strlen(s) != (size_t) json_object_get_string_len(e) ? "contains a NUL byte"
                                : masked_path_problem(s);
                        char q[VALUE_QUOTED_MAX];
                        snprintf(sub, sizeof(sub), ".%s[%zu]", keys[k], i);
                        if (problem)
                                return bad(w, sub, "%s: %s", s ? value_quote(s, q) : "", problem);
                        if (strv_push(l, s) < 0)
                                return error_sys(w->err, -ENOMEM, "%s", w->field);
                }
        }
        return 0;
}

typedef struct IsolatorType {
        const char *name;
        int (*parse)(const Where *w, struct json_object *v, bool flag, AppIsolation *iso);
        bool flag;
        int group;      /* isolators of one group exclude each other */
} IsolatorType;

static const IsolatorType isolator_types[] = {
        { "resource/memory", parse_resource, false, 0 },
        { "resource/cpu", parse_resource, true, 1 },
        { "os/linux/capabilities-retain-set", parse_capabilities, true, 2 },
        { "os/linux/capabilities-remove-set", parse_capabilities, false, 2 },
        { "os/linux/no-new-privileges", parse_no_new_privileges, false, 3 },
        { "os/linux/seccomp-retain-set", parse_seccomp, true, 4 },
        { "os/linux/seccomp-remove-set", parse_seccomp, false, 4 },
        { "os/linux/oom-score-adj", parse_oom_score_adj, false, 5 },
        { "sdpod/pids-limit", parse_pids_limit, false, 6 },
        { "sdpod/tmpfs", parse_tmpfs, false, 7 },
        { "sdpod/devices", parse_devices, false, 8 },
        { "sdpod/rlimits", parse_rlimits, false, 9 },
        /* An OCI profile replaces the default filter as the seccomp
         * isolators do: one of them. */
        { "sdpod/seccomp-oci", parse_seccomp_oci, false, 4 },
        { "sdpod/masked-paths", parse_masked_paths, false, 10 },
};

int app_isolation_parse(const PodIsolator *isolators, size_t n, const char *field, AppIsolation *ret, Error **err) {
        _cleanup_(app_isolation_done) AppIsolation iso = {
                .capabilities = APP_CAPABILITIES_DEFAULT,
                .no_new_privileges = true,
                .syscalls_allowed = strv_copy((char **) APP_SYSCALLS_DEFAULT),
                .syscalls_denied = strv_copy((char **) APP_SYSCALLS_DEFAULT_DENIED),
                .syscall_errno = strdup(APP_SYSCALLS_DEFAULT_ERRNO),
                .syscalls_native_only = true,
                .deny_vsock = true,
                .restrict_namespaces = true,
        };
        if (!iso.syscalls_allowed || !iso.syscalls_denied || !iso.syscall_errno)
                return error_sys(err, -ENOMEM, "%s", field);
        size_t seen[11];
        bool have[11] = {};

        for (size_t i = 0; i < n; i++) {
                const PodIsolator *x = &isolators[i];
                const Where w = { .field = field, .index = i, .name = x->name, .err = err };
                const IsolatorType *t = NULL;
                for (size_t k = 0; k < ELEMENTSOF(isolator_types) && !t; k++)
                        if (streq(isolator_types[k].name, x->name))
                                t = &isolator_types[k];
                if (!t) {
                        if (startswith(x->name, "os/linux/") || startswith(x->name, "resource/") ||
                            startswith(x->name, POD_ANNOTATION_PREFIX))
                                return error_set(err, -EINVAL,
                                                 "%s[%zu].name: isolator \"%s\" is not supported by sdpod "
                                                 "(see sdpod-generator(8))",
                                                 field, i, x->name);
                        continue; /* another name space: not ours to judge */
                }
                if (have[t->group])
                        return error_set(err, -EINVAL, "%s[%zu].name: \"%s\" conflicts with %s[%zu] (\"%s\")", field,
                                         i, x->name, field, seen[t->group], isolators[seen[t->group]].name);
                have[t->group] = true;
                seen[t->group] = i;
                int r = t->parse(&w, x->value, t->flag, &iso);
                if (r < 0)
                        return r;
        }
        *ret = iso;
        iso = (AppIsolation) {};
        return 0;
}

const char *app_mount_path_problem(const char *path, bool device) {
        const char *problem = absolute_path_problem(path);
        if (problem)
                return problem;
        if (streq(path, "/"))
                return "not the root";
        for (const char *p = path; *p; p++) {
                unsigned char c = (unsigned char) *p;
                if (c <= ' ' || c == 0x7f || c == '"' || c == '\'' || c == '\\' || c == ':' || c >= 0x80)
                        return "whitespace, quotes, backslashes, ':', control and non-ASCII characters are not "
                               "supported";
        }
        /* systemd mounts the API file systems there for the app
         * (MountAPIVFS=); a tmpfs over them would hide what it protects. */
        static const char *const api[] = { "/proc", "/sys", "/dev" };
        for (size_t i = 0; i < ELEMENTSOF(api); i++) {
                const char *rest = startswith(path, api[i]);
                if (rest && (!*rest || *rest == '/') && !(device && streq(api[i], "/dev") && *rest))
                        return device ? "a device goes under /dev" : "not in /proc, /sys or /dev";
        }
        if (device && !startswith(path, "/dev/"))
                return "a device goes under /dev";
        return NULL;
}

bool device_access_is_valid(const char *s) {
        if (!*s || strlen(s) > 3)
                return false;
        for (const char *p = s; *p; p++)
                if (!strchr("rwm", *p) || strchr(p + 1, *p))
                        return false;
        return true;
}

/* size=: a number of bytes with an optional k, m or g (powers of 1024), or a
 * percentage of the memory, as tmpfs takes it. */
static bool tmpfs_size_is_valid(const char *s) {
        size_t digits = strspn(s, "0123456789");
        if (digits == 0 || digits > 18)
                return false;
        const char *suffix = s + digits;
        return !*suffix || (strchr("kmgKMG%", *suffix) && !suffix[1]);
}

int tmpfs_options_check(const char *options, Error **err) {
        _cleanup_free_ char *copy = strdup(options);
        if (!copy)
                return error_sys(err, -ENOMEM, "tmpfs options");
        bool size = false, mode = false, noexec = false;
        char *save = NULL;
        for (char *o = strtok_r(copy, ",", &save); o; o = strtok_r(NULL, ",", &save)) {
                const char *v;
                char q[VALUE_QUOTED_MAX];
                bool *seen = NULL;
                if ((v = startswith(o, "size="))) {
                        if (!tmpfs_size_is_valid(v))
                                return error_set(err, -EINVAL, "size=%s: expected bytes, with k, m or g, or a "
                                                 "percentage", v);
                        seen = &size;
                } else if ((v = startswith(o, "mode="))) {
                        size_t n = strspn(v, "01234567");
                        if (n < 3 || n > 4 || v[n])
                                return error_set(err, -EINVAL, "mode=%s: expected an octal mode, such as 1777", v);
                        seen = &mode;
                } else if (streq(o, "noexec"))
                        seen = &noexec;
                else
                        return error_set(err, -EINVAL, "option %s is not supported (only size=, mode= and noexec; "
                                         "nosuid and nodev are always set)", value_quote(o, q));
                if (*seen)
                        return error_set(err, -EINVAL, "option %s given twice", value_quote(o, q));
                *seen = true;
        }
        return 0;
}

/* The controllers the pod's systemd can give its units, from its
 * /sys/fs/cgroup. Measured on a hybrid host (cgroup v1 controllers, with
 * systemd-nspawn outside a host systemd, with and without a user
 * namespace): MemoryMax=, CPUQuota= and TasksMax= were accepted by the
 * pod's systemd and applied nowhere (the app stayed in the host's memory
 * cgroup). So only the unified hierarchy counts: its cgroup.controllers
 * lists what the pod's systemd may enable below it. */
static int read_controllers(int pod_rootfd, char **ret) {
        _cleanup_error_ Error *ignored = NULL;
        size_t size;
        int r = read_file_in_root(pod_rootfd, "/sys/fs/cgroup/cgroup.controllers", 4096, ret, &size, &ignored);
        return r < 0 ? r : 0;
}

/* The words of a cgroup.controllers line, without its newline. */
static char *strip_newline(char *s) {
        s[strcspn(s, "\n")] = 0;
        return s;
}

static bool word_in(const char *words, const char *word) {
        size_t n = strlen(word);
        for (const char *p = words; (p = strstr(p, word)); p += n)
                if ((p == words || strchr(" \t\n", p[-1])) && (!p[n] || strchr(" \t\n", p[n])))
                        return true;
        return false;
}

/* Whether the pod is in a user namespace of its own: its /proc/self/uid_map
 * is not the whole identity map. Unreadable counts as yes. */
static bool in_user_namespace(int pod_rootfd) {
        _cleanup_error_ Error *ignored = NULL;
        _cleanup_free_ char *map = NULL;
        size_t size;
        if (read_file_in_root(pod_rootfd, "/proc/self/uid_map", 4096, &map, &size, &ignored) < 0)
                return true;
        unsigned long a, b, n;
        char rest;
        return sscanf(map, " %lu %lu %lu %c", &a, &b, &n, &rest) != 3 || a != 0 || b != 0 || n != 4294967295UL;
}

int app_isolation_check_cgroups(const AppIsolation *iso, int pod_rootfd, Error **err) {
        const struct {
                bool wanted;
                const char *isolator, *directive, *controller;
        } limits[] = {
                { iso->memory_max > 0, "resource/memory", "MemoryMax=", "memory" },
                { iso->cpu_millis > 0, "resource/cpu", "CPUQuota=", "cpu" },
                { iso->tasks_max > 0, "sdpod/pids-limit", "TasksMax=", "pids" },
        };
        _cleanup_free_ char *controllers = NULL;
        bool unified = read_controllers(pod_rootfd, &controllers) >= 0;
        for (size_t i = 0; i < ELEMENTSOF(limits); i++) {
                if (!limits[i].wanted)
                        continue;
                if (!unified)
                        return error_set(err, -EOPNOTSUPP,
                                         "%s (%s) cannot be enforced: the pod's cgroups are cgroup v1 (no "
                                         "/sys/fs/cgroup/cgroup.controllers), where its systemd applies no %s limit; "
                                         "the app does not run less confined than its manifest asks "
                                         "(a cgroup v2 host is needed, sdpod-security(7))",
                                         limits[i].isolator, limits[i].directive, limits[i].controller);
                if (!word_in(controllers, limits[i].controller))
                        return error_set(err, -EOPNOTSUPP,
                                         "%s (%s) cannot be enforced: the pod's cgroup has no %s controller (its "
                                         "cgroup.controllers: \"%s\"); the app does not run less confined than its "
                                         "manifest asks (delegate the controller to the pod, sdpod-security(7))",
                                         limits[i].isolator, limits[i].directive, limits[i].controller,
                                         strip_newline(controllers));
        }
        if (iso->n_devices == 0)
                return 0;
        /* cgroup v1's devices controller is no more the pod's than the
         * others; cgroup v2 filters devices with a BPF program, which only
         * a process with CAP_BPF or CAP_SYS_ADMIN of the host's user
         * namespace may load: the pod's systemd in a user namespace would
         * leave DeviceAllow= unapplied. */
        if (!unified)
                return error_set(err, -EOPNOTSUPP,
                                 "sdpod/devices (DeviceAllow=) cannot be enforced: the pod's cgroups are cgroup v1, "
                                 "where its systemd applies no device rule; the app does not run less confined than "
                                 "its manifest asks (sdpod-security(7))");
        if (in_user_namespace(pod_rootfd))
                return error_set(err, -EOPNOTSUPP,
                                 "sdpod/devices (DeviceAllow=) cannot be enforced: in the pod's user namespace its "
                                 "systemd cannot load the device filter (a BPF program); the app does not run less "
                                 "confined than its manifest asks (sdpod-security(7))");
        return 0;
}

void app_isolation_resolve_devices(AppIsolation *iso, const char *const *bind_sources,
                                   const char *const *bind_destinations, size_t n_binds, int pod_rootfd) {
        for (size_t i = 0; i < iso->n_devices; i++)
                for (size_t b = 0; b < n_binds; b++) {
                        struct stat st;
                        if (!streq(bind_destinations[b], iso->devices[i].path) || bind_sources[b][0] != '/' ||
                            fstatat(pod_rootfd, bind_sources[b] + 1, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
                            (!S_ISCHR(st.st_mode) && !S_ISBLK(st.st_mode)))
                                continue;
                        free(iso->devices[i].rule);
                        if (asprintf(&iso->devices[i].rule, "/dev/%s/%u:%u", S_ISCHR(st.st_mode) ? "char" : "block",
                                     major(st.st_rdev), minor(st.st_rdev)) < 0)
                                iso->devices[i].rule = NULL;
                }
}
