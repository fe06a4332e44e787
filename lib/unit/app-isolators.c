/* SPDX-License-Identifier: Apache-2.0 */
#include <json-c/json.h>
#include <seccomp.h>
#include <stdarg.h>

#include "basic/strv.h"
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

/* DIGITS[.DIGITS] into an integer part and a fraction scaled to 10^9. */
static int parse_decimal(const char *s, const char **end, uint64_t *ret_int, uint64_t *ret_frac_nano,
                         unsigned *ret_frac_digits) {
        const char *p = s;
        uint64_t v = 0, frac = 0;
        unsigned digits = 0;
        if (*p < '0' || *p > '9')
                return -EINVAL;
        for (; *p >= '0' && *p <= '9'; p++) {
                if (v > (UINT64_MAX - 9) / 10)
                        return -ERANGE;
                v = v * 10 + (uint64_t) (*p - '0');
        }
        if (*p == '.') {
                p++;
                if (*p < '0' || *p > '9')
                        return -EINVAL;
                uint64_t scale = 100000000;
                for (; *p >= '0' && *p <= '9'; p++, digits++) {
                        if (digits >= 9)
                                return -EINVAL; /* finer than a billionth: no one means that */
                        frac += (uint64_t) (*p - '0') * scale;
                        scale /= 10;
                }
        }
        *end = p;
        *ret_int = v;
        *ret_frac_nano = frac;
        *ret_frac_digits = digits;
        return 0;
}

int parse_quantity_bytes(const char *s, uint64_t *ret) {
        static const struct {
                const char *suffix;
                uint64_t factor;
        } suffixes[] = {
                { "", 1 },
                { "k", UINT64_C(1000) },
                { "M", UINT64_C(1000) * 1000 },
                { "G", UINT64_C(1000) * 1000 * 1000 },
                { "T", UINT64_C(1000) * 1000 * 1000 * 1000 },
                { "P", UINT64_C(1000) * 1000 * 1000 * 1000 * 1000 },
                { "E", UINT64_C(1000) * 1000 * 1000 * 1000 * 1000 * 1000 },
                { "Ki", UINT64_C(1) << 10 },
                { "Mi", UINT64_C(1) << 20 },
                { "Gi", UINT64_C(1) << 30 },
                { "Ti", UINT64_C(1) << 40 },
                { "Pi", UINT64_C(1) << 50 },
                { "Ei", UINT64_C(1) << 60 },
        };
        const char *end;
        uint64_t v, frac;
        unsigned digits;
        int r = parse_decimal(s, &end, &v, &frac, &digits);
        if (r < 0)
                return r;
        for (size_t i = 0; i < ELEMENTSOF(suffixes); i++) {
                if (!streq(end, suffixes[i].suffix))
                        continue;
                uint64_t f = suffixes[i].factor;
                if (v > UINT64_MAX / f)
                        return -ERANGE;
                uint64_t bytes = v * f;
                /* frac/1e9 * f, rounded up; f / 1000 keeps the product in
                 * range for every factor (and is exact for the decimal ones). */
                if (frac > 0) {
                        unsigned __int128 part = ((unsigned __int128) frac * f + 999999999) / 1000000000;
                        if (part > UINT64_MAX - bytes)
                                return -ERANGE;
                        bytes += (uint64_t) part;
                }
                *ret = bytes;
                return 0;
        }
        return -EINVAL;
}

int parse_cpu_millis(const char *s, uint64_t *ret) {
        const char *end;
        uint64_t v, frac;
        unsigned digits;
        int r = parse_decimal(s, &end, &v, &frac, &digits);
        if (r < 0)
                return r;
        if (streq(end, "m")) {
                if (digits > 0)
                        return -EINVAL; /* a fraction of a millicore */
                *ret = v;
                return 0;
        }
        if (*end || digits > 3)
                return -EINVAL;
        if (v > UINT64_MAX / 1000 - 1)
                return -ERANGE;
        *ret = v * 1000 + frac / 1000000;
        return 0;
}

void app_isolation_done(AppIsolation *i) {
        if (!i)
                return;
        strv_free(i->syscalls_allowed);
        strv_free(i->syscalls_denied);
        free(i->syscall_errno);
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
};

int app_isolation_parse(const PodIsolator *isolators, size_t n, const char *field, AppIsolation *ret, Error **err) {
        _cleanup_(app_isolation_done) AppIsolation iso = {
                .capabilities = APP_CAPABILITIES_DEFAULT,
                .no_new_privileges = true,
                .syscalls_allowed = strv_copy((char **) APP_SYSCALLS_DEFAULT),
                .syscalls_denied = strv_copy((char **) APP_SYSCALLS_DEFAULT_DENIED),
                .syscall_errno = strdup(APP_SYSCALLS_DEFAULT_ERRNO),
                .syscalls_native_only = true,
                .restrict_namespaces = true,
        };
        if (!iso.syscalls_allowed || !iso.syscalls_denied || !iso.syscall_errno)
                return error_sys(err, -ENOMEM, "%s", field);
        size_t seen[6];
        bool have[6] = {};

        for (size_t i = 0; i < n; i++) {
                const PodIsolator *x = &isolators[i];
                const Where w = { .field = field, .index = i, .name = x->name, .err = err };
                const IsolatorType *t = NULL;
                for (size_t k = 0; k < ELEMENTSOF(isolator_types) && !t; k++)
                        if (streq(isolator_types[k].name, x->name))
                                t = &isolator_types[k];
                if (!t) {
                        if (startswith(x->name, "os/linux/") || startswith(x->name, "resource/"))
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
