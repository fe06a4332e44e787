/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <linux/seccomp.h>
#include <seccomp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "basic/fs.h"
#include "basic/json-util.h"
#include "seccomp/seccomp-oci.h"

void seccomp_program_done(SeccompProgram *p) {
        if (!p)
                return;
        free(p->insns);
        *p = (SeccompProgram) {};
}

static void seccomp_ctx_releasep(scmp_filter_ctx *ctx) {
        if (*ctx)
                seccomp_release(*ctx);
}

/* "SCMP_ACT_ERRNO" -> the action, with errno_ret for ERRNO and TRACE
 * (EPERM when the profile gives none, as runc). */
static int parse_action(const char *s, int64_t errno_ret, uint32_t *ret) {
        uint16_t e = errno_ret >= 0 ? (uint16_t) errno_ret : EPERM;
        if (streq(s, "SCMP_ACT_ALLOW"))
                *ret = SCMP_ACT_ALLOW;
        else if (streq(s, "SCMP_ACT_ERRNO"))
                *ret = SCMP_ACT_ERRNO(e);
        else if (streq(s, "SCMP_ACT_KILL") || streq(s, "SCMP_ACT_KILL_THREAD"))
                *ret = SCMP_ACT_KILL_THREAD;
        else if (streq(s, "SCMP_ACT_KILL_PROCESS"))
                *ret = SCMP_ACT_KILL_PROCESS;
        else if (streq(s, "SCMP_ACT_TRAP"))
                *ret = SCMP_ACT_TRAP;
        else if (streq(s, "SCMP_ACT_TRACE"))
                *ret = SCMP_ACT_TRACE(e);
        else if (streq(s, "SCMP_ACT_LOG"))
                *ret = SCMP_ACT_LOG;
        else
                return -EINVAL;
        return 0;
}

static int parse_op(const char *s, enum scmp_compare *ret) {
        static const struct {
                const char *name;
                enum scmp_compare op;
        } ops[] = {
                { "SCMP_CMP_NE", SCMP_CMP_NE }, { "SCMP_CMP_LT", SCMP_CMP_LT }, { "SCMP_CMP_LE", SCMP_CMP_LE },
                { "SCMP_CMP_EQ", SCMP_CMP_EQ }, { "SCMP_CMP_GE", SCMP_CMP_GE }, { "SCMP_CMP_GT", SCMP_CMP_GT },
                { "SCMP_CMP_MASKED_EQ", SCMP_CMP_MASKED_EQ },
        };
        for (size_t i = 0; i < ELEMENTSOF(ops); i++)
                if (streq(ops[i].name, s)) {
                        *ret = ops[i].op;
                        return 0;
                }
        return -EINVAL;
}

/* Only the keys given; what names the object. */
static int check_keys(struct json_object *o, const char *const *keys, const char *what, Error **err) {
        json_object_object_foreach(o, key, v) {
                (void) v;
                bool known = false;
                for (const char *const *k = keys; *k && !known; k++)
                        known = streq(*k, key);
                char q[VALUE_QUOTED_MAX];
                if (!known)
                        return error_set(err, -EINVAL, "%s: field %s is not supported", what, value_quote(key, q));
        }
        return 0;
}

static int get_string(struct json_object *o, const char *key, bool required, const char **ret, const char *what,
                      Error **err) {
        int r = json_get_string(o, key, required, ret, what, err);
        if (r > 0 && strlen(*ret) != (size_t) json_object_get_string_len(json_object_object_get(o, key)))
                return error_set(err, -EINVAL, "%s: field \"%s\": contains a NUL byte", what, key);
        return r;
}

/* An unsigned integer in [0, max]; json-c keeps those above INT64_MAX as
 * uint64. */
static int get_unsigned(struct json_object *v, uint64_t max, uint64_t *ret) {
        if (!v || !json_object_is_type(v, json_type_int))
                return -EINVAL;
        if (json_object_get_int64(v) < 0)
                return -ERANGE;
        uint64_t u = json_object_get_uint64(v);
        if (u > max)
                return -ERANGE;
        *ret = u;
        return 0;
}

static int get_errno_ret(struct json_object *o, const char *key, const char *what, int64_t *ret, Error **err) {
        struct json_object *v = NULL;
        *ret = -1;
        if (!json_object_object_get_ex(o, key, &v) || json_object_is_type(v, json_type_null))
                return 0;
        uint64_t u;
        /* What SECCOMP_RET_DATA holds for an errno: the kernel caps it at
         * MAX_ERRNO. */
        if (get_unsigned(v, 4095, &u) < 0)
                return error_set(err, -EINVAL, "%s: field \"%s\": expected an errno number from 0 to 4095", what, key);
        *ret = (int64_t) u;
        return 0;
}

/* A system call's name: lowercase letters, digits and '_'. */
static bool syscall_name_is_wellformed(const char *s) {
        size_t n = strlen(s);
        return n > 0 && n <= 64 && strspn(s, "abcdefghijklmnopqrstuvwxyz0123456789_") == n;
}

static int parse_architectures(scmp_filter_ctx ctx, struct json_object *a, const char *what, Error **err) {
        size_t n = json_object_array_length(a);
        if (n > 32)
                return error_set(err, -EINVAL, "%s.architectures: more than 32 entries", what);
        for (size_t i = 0; i < n; i++) {
                struct json_object *e = json_object_array_get_idx(a, i);
                char q[VALUE_QUOTED_MAX];
                const char *s = json_object_is_type(e, json_type_string) ? json_object_get_string(e) : NULL;
                const char *name = s ? startswith(s, "SCMP_ARCH_") : NULL;
                char lower[32];
                size_t k = 0;
                for (; name && name[k] && k + 1 < sizeof(lower); k++)
                        lower[k] = (char) (name[k] >= 'A' && name[k] <= 'Z' ? name[k] - 'A' + 'a' : name[k]);
                lower[k] = 0;
                uint32_t arch = name && !name[k] && k > 0 ? seccomp_arch_resolve_name(lower) : 0;
                if (arch == 0)
                        return error_set(err, -EINVAL, "%s.architectures[%zu]: %s is not an architecture libseccomp "
                                         "knows (SCMP_ARCH_X86_64...)", what, i, s ? value_quote(s, q) : "(not a string)");
                int r = seccomp_arch_add(ctx, arch);
                if (r < 0 && r != -EEXIST)
                        return error_sys(err, r, "%s.architectures[%zu]: %s", what, i, s);
        }
        return 0;
}

static int parse_flags(struct json_object *a, const char *what, unsigned *ret, Error **err) {
        size_t n = json_object_array_length(a);
        if (n > 16)
                return error_set(err, -EINVAL, "%s.flags: more than 16 entries", what);
        for (size_t i = 0; i < n; i++) {
                struct json_object *e = json_object_array_get_idx(a, i);
                const char *s = json_object_is_type(e, json_type_string) ? json_object_get_string(e) : "";
                char q[VALUE_QUOTED_MAX];
                if (streq(s, "SECCOMP_FILTER_FLAG_LOG"))
                        *ret |= SECCOMP_FILTER_FLAG_LOG;
                else if (streq(s, "SECCOMP_FILTER_FLAG_SPEC_ALLOW"))
                        *ret |= SECCOMP_FILTER_FLAG_SPEC_ALLOW;
                else if (streq(s, "SECCOMP_FILTER_FLAG_TSYNC"))
                        continue; /* the program is loaded before the app has threads */
                else
                        return error_set(err, -EINVAL, "%s.flags[%zu]: %s is not supported (SECCOMP_FILTER_FLAG_LOG, "
                                         "_SPEC_ALLOW, _TSYNC are)", what, i, value_quote(s, q));
        }
        return 0;
}

static int parse_arg(struct json_object *e, const char *what, struct scmp_arg_cmp *ret, Error **err) {
        static const char *const keys[] = { "index", "value", "valueTwo", "op", NULL };
        if (!json_object_is_type(e, json_type_object))
                return error_set(err, -EINVAL, "%s: expected an object", what);
        int r = check_keys(e, keys, what, err);
        if (r < 0)
                return r;
        uint64_t index, value, two = 0;
        const char *op = NULL;
        enum scmp_compare cmp;
        char q[VALUE_QUOTED_MAX];
        if (get_unsigned(json_object_object_get(e, "index"), SECCOMP_OCI_ARGS_MAX - 1, &index) < 0)
                return error_set(err, -EINVAL, "%s.index: expected an argument index from 0 to 5", what);
        if (get_unsigned(json_object_object_get(e, "value"), UINT64_MAX, &value) < 0)
                return error_set(err, -EINVAL, "%s.value: expected an unsigned integer", what);
        struct json_object *t = json_object_object_get(e, "valueTwo");
        if (t && !json_object_is_type(t, json_type_null) && get_unsigned(t, UINT64_MAX, &two) < 0)
                return error_set(err, -EINVAL, "%s.valueTwo: expected an unsigned integer", what);
        if ((r = get_string(e, "op", true, &op, what, err)) < 0)
                return r;
        if (parse_op(op, &cmp) < 0)
                return error_set(err, -EINVAL, "%s.op: %s is not a comparison (SCMP_CMP_EQ, _NE, _LT, _LE, _GE, _GT, "
                                 "_MASKED_EQ)", what, value_quote(op, q));
        *ret = (struct scmp_arg_cmp) { .arg = (unsigned) index, .op = cmp, .datum_a = value, .datum_b = two };
        return 0;
}

/* One entry of "syscalls". *names: the running count of names. */
static int parse_rule(scmp_filter_ctx ctx, uint32_t default_action, struct json_object *e, const char *what,
                      size_t *names, Error **err) {
        static const char *const keys[] = { "names", "action", "errnoRet", "args", NULL };
        if (!json_object_is_type(e, json_type_object))
                return error_set(err, -EINVAL, "%s: expected an object", what);
        int r = check_keys(e, keys, what, err);
        if (r < 0)
                return r;
        struct json_object *list = NULL, *args = NULL;
        const char *action_name = NULL;
        int64_t errno_ret;
        uint32_t action;
        char q[VALUE_QUOTED_MAX];
        if ((r = json_get_array(e, "names", true, &list, what, err)) < 0 ||
            (r = get_string(e, "action", true, &action_name, what, err)) < 0 ||
            (r = get_errno_ret(e, "errnoRet", what, &errno_ret, err)) < 0 ||
            (r = json_get_array(e, "args", false, &args, what, err)) < 0)
                return r;
        if (parse_action(action_name, errno_ret, &action) < 0)
                return error_set(err, streq(action_name, "SCMP_ACT_NOTIFY") ? -EOPNOTSUPP : -EINVAL,
                                 "%s.action: %s is not supported (SCMP_ACT_ALLOW, _ERRNO, _KILL, _KILL_PROCESS, "
                                 "_KILL_THREAD, _TRAP, _TRACE, _LOG are)", what, value_quote(action_name, q));
        size_t n = json_object_array_length(list), n_args = args ? json_object_array_length(args) : 0;
        if (n == 0)
                return error_set(err, -EINVAL, "%s.names: empty", what);
        if (n > SECCOMP_OCI_NAMES_MAX - *names)
                return error_set(err, -EINVAL, "%s.names: more than %d names in the profile", what, SECCOMP_OCI_NAMES_MAX);
        *names += n;
        if (n_args > SECCOMP_OCI_ARGS_MAX * 4)
                return error_set(err, -EINVAL, "%s.args: more than %d comparisons", what, SECCOMP_OCI_ARGS_MAX * 4);
        struct scmp_arg_cmp cmps[SECCOMP_OCI_ARGS_MAX * 4];
        bool repeated = false;
        unsigned seen = 0;
        for (size_t i = 0; i < n_args; i++) {
                char awhat[96];
                snprintf(awhat, sizeof(awhat), "%s.args[%zu]", what, i);
                if ((r = parse_arg(json_object_array_get_idx(args, i), awhat, &cmps[i], err)) < 0)
                        return r;
                repeated = repeated || (seen & (1U << cmps[i].arg));
                seen |= 1U << cmps[i].arg;
        }
        for (size_t i = 0; i < n; i++) {
                struct json_object *x = json_object_array_get_idx(list, i);
                const char *name = json_object_is_type(x, json_type_string) ? json_object_get_string(x) : NULL;
                if (!name || strlen(name) != (size_t) json_object_get_string_len(x) || !syscall_name_is_wellformed(name))
                        return error_set(err, -EINVAL, "%s.names[%zu]: %s is not a system call name", what, i,
                                         name ? value_quote(name, q) : "(not a string)");
                int nr = seccomp_syscall_resolve_name(name);
                /* Newer than this libseccomp, or of no architecture here:
                 * the default action covers it (as in runc). The default
                 * action again is no rule (libseccomp refuses one). */
                if (nr == __NR_SCMP_ERROR || action == default_action)
                        continue;
                if (!repeated)
                        r = seccomp_rule_add_array(ctx, action, nr, (unsigned) n_args, n_args ? cmps : NULL);
                else
                        for (size_t k = 0; k < n_args && r >= 0; k++)
                                r = seccomp_rule_add_array(ctx, action, nr, 1, &cmps[k]);
                if (r < 0)
                        return error_sys(err, r, "%s: the rule for %s", what, name);
        }
        return 0;
}

/* The compiled program, read back from a memory file (libseccomp 2.5
 * exports to a file descriptor only). */
static int export_program(scmp_filter_ctx ctx, const char *what, SeccompProgram *p, Error **err) {
        _cleanup_close_ int fd = memfd_create("seccomp-bpf", MFD_CLOEXEC);
        if (fd < 0)
                return error_sys(err, -errno, "%s: memfd_create", what);
        int r = seccomp_export_bpf(ctx, fd);
        if (r < 0)
                return error_sys(err, r, "%s: compiling the profile", what);
        struct stat st;
        if (fstat(fd, &st) < 0)
                return error_sys(err, -errno, "%s", what);
        size_t size = (size_t) st.st_size;
        if (size == 0 || size % sizeof(struct sock_filter) != 0)
                return error_set(err, -EINVAL, "%s: libseccomp made a program of %zu bytes", what, size);
        if (size / sizeof(struct sock_filter) > BPF_MAXINSNS)
                return error_set(err, -E2BIG, "%s: the profile compiles to %zu instructions, more than the kernel's %d",
                                 what, size / sizeof(struct sock_filter), BPF_MAXINSNS);
        p->insns = malloc(size);
        if (!p->insns)
                return error_sys(err, -ENOMEM, "%s", what);
        ssize_t k = pread(fd, p->insns, size, 0);
        if (k != (ssize_t) size)
                return error_sys(err, k < 0 ? -errno : -EIO, "%s: reading the program back", what);
        p->n_insns = size / sizeof(struct sock_filter);
        return 0;
}

int seccomp_oci_compile(struct json_object *profile, const char *what, SeccompProgram *ret, Error **err) {
        static const char *const keys[] = { "defaultAction", "defaultErrnoRet", "architectures", "flags",
                                            "syscalls", "listenerPath", "listenerMetadata", NULL };
        if (!json_object_is_type(profile, json_type_object))
                return error_set(err, -EINVAL, "%s: expected an object", what);
        int r = check_keys(profile, keys, what, err);
        if (r < 0)
                return r;
        const char *default_name = NULL, *listener = NULL;
        struct json_object *arches = NULL, *flags = NULL, *syscalls = NULL;
        int64_t default_errno;
        uint32_t default_action;
        char q[VALUE_QUOTED_MAX];
        if ((r = get_string(profile, "defaultAction", true, &default_name, what, err)) < 0 ||
            (r = get_errno_ret(profile, "defaultErrnoRet", what, &default_errno, err)) < 0 ||
            (r = json_get_array(profile, "architectures", false, &arches, what, err)) < 0 ||
            (r = json_get_array(profile, "flags", false, &flags, what, err)) < 0 ||
            (r = json_get_array(profile, "syscalls", false, &syscalls, what, err)) < 0 ||
            (r = get_string(profile, "listenerPath", false, &listener, what, err)) < 0)
                return r;
        if (listener && *listener)
                return error_set(err, -EOPNOTSUPP, "%s.listenerPath: a seccomp notification listener is not supported",
                                 what);
        if (parse_action(default_name, default_errno, &default_action) < 0)
                return error_set(err, streq(default_name, "SCMP_ACT_NOTIFY") ? -EOPNOTSUPP : -EINVAL,
                                 "%s.defaultAction: %s is not supported", what, value_quote(default_name, q));
        size_t n = syscalls ? json_object_array_length(syscalls) : 0;
        if (n > SECCOMP_OCI_RULES_MAX)
                return error_set(err, -EINVAL, "%s.syscalls: more than %d entries", what, SECCOMP_OCI_RULES_MAX);
        SeccompProgram p = {};
        if (flags && (r = parse_flags(flags, what, &p.flags, err)) < 0)
                return r;
        _cleanup_(seccomp_ctx_releasep) scmp_filter_ctx ctx = seccomp_init(default_action);
        if (!ctx)
                return error_sys(err, -ENOMEM, "%s", what);
        /* Loaded by app-domain, which sets nothing else: the program is
         * exported, never loaded here. */
        if (arches && (r = parse_architectures(ctx, arches, what, err)) < 0)
                return r;
        size_t names = 0;
        for (size_t i = 0; i < n; i++) {
                char rwhat[64];
                snprintf(rwhat, sizeof(rwhat), "%s.syscalls[%zu]", what, i);
                if ((r = parse_rule(ctx, default_action, json_object_array_get_idx(syscalls, i), rwhat, &names, err)) < 0)
                        return r;
        }
        if ((r = export_program(ctx, what, &p, err)) < 0) {
                seccomp_program_done(&p);
                return r;
        }
        *ret = p;
        return 0;
}

int seccomp_oci_compile_text(const char *data, size_t size, const char *what, SeccompProgram *ret, Error **err) {
        if (size > (4U << 20))
                return error_set(err, -EFBIG, "%s: larger than 4 MiB", what);
        _cleanup_json_ struct json_object *o = NULL;
        int r = json_parse(data, size, what, &o, err);
        if (r < 0)
                return r;
        return seccomp_oci_compile(o, what, ret, err);
}

int seccomp_program_to_text(const SeccompProgram *p, char **ret) {
        const unsigned char *b = (const unsigned char *) p->insns;
        size_t size = p->n_insns * sizeof(struct sock_filter);
        char *s = malloc(16 + 2 * size + 1);
        if (!s)
                return -ENOMEM;
        int k = snprintf(s, 16, "%u:", p->flags);
        char *o = s + k;
        for (size_t i = 0; i < size; i++) {
                static const char hex[] = "0123456789abcdef";
                *o++ = hex[b[i] >> 4];
                *o++ = hex[b[i] & 15];
        }
        *o = 0;
        *ret = s;
        return 0;
}
