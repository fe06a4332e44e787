/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <linux/sched.h>
#include <seccomp.h>
#include <string.h>
#include <sys/socket.h>

#include "basic/strv.h"
#include "fly/fly-seccomp.h"
#include "fly/syscall-groups.h"

#ifndef CLONE_NEWTIME
#define CLONE_NEWTIME 0x00000080
#endif
#define CLONE_NEW_ALL                                                                                  \
        (CLONE_NEWNS | CLONE_NEWCGROUP | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWUSER | CLONE_NEWPID | \
         CLONE_NEWNET | CLONE_NEWTIME)

static const SyscallGroup *group_find(const char *name) {
        for (size_t i = 0; i < SYSCALL_GROUPS_COUNT; i++)
                if (streq(SYSCALL_GROUPS[i].name, name))
                        return &SYSCALL_GROUPS[i];
        return NULL;
}

bool syscall_group_exists(const char *name) {
        char n[64];
        snprintf(n, sizeof(n), "@%s", name);
        return group_find(n) != NULL;
}

/* depth bounds a group that (by a generator's mistake) names itself. */
static int expand_one(const char *name, char ***set, unsigned depth, Error **err) {
        if (name[0] != '@')
                return strv_contains(*set, name) || strv_push(set, name) >= 0 ? 0 : error_sys(err, -ENOMEM, "seccomp");
        const SyscallGroup *g = group_find(name);
        if (!g || depth > 8)
                return error_set(err, -EINVAL, "system call group %s is not one of this systemd's", name);
        for (const char *m = g->members; *m; m += strlen(m) + 1) {
                int r = expand_one(m, set, depth + 1, err);
                if (r < 0)
                        return r;
        }
        return 0;
}

int syscall_names_expand(char *const *names, char ***ret, Error **err) {
        _cleanup_strv_free_ char **set = NULL;
        for (char *const *n = names; n && *n; n++) {
                int r = expand_one(*n, &set, 0, err);
                if (r < 0)
                        return r;
        }
        if (!set && !(set = calloc(1, sizeof(char *))))
                return error_sys(err, -ENOMEM, "seccomp");
        *ret = TAKE_PTR(set);
        return 0;
}

static void seccomp_releasep(scmp_filter_ctx *ctx) {
        if (*ctx)
                seccomp_release(*ctx);
}

static int errno_of_name(const char *name) {
        for (int i = 1; i < 4096; i++) {
                const char *n = strerrorname_np(i);
                if (n && streq(n, name))
                        return i;
        }
        return -EINVAL;
}

/* Adds rule for the call name, when this architecture has it. */
static int add(scmp_filter_ctx ctx, uint32_t action, const char *name, unsigned n_args, const struct scmp_arg_cmp *args,
               Error **err) {
        int nr = seccomp_syscall_resolve_name(name);
        if (nr == __NR_SCMP_ERROR)
                return 0;
        int r = seccomp_rule_add_array(ctx, action, nr, n_args, args);
        return r < 0 && r != -EEXIST ? error_sys(err, r, "seccomp: rule for %s", name) : 0;
}

int seccomp_default_load(const AppIsolation *iso, Error **err) {
        if (!iso->syscalls_allowed && !iso->syscalls_denied && !iso->deny_vsock && !iso->restrict_namespaces)
                return 0;
        int e = iso->syscall_errno ? errno_of_name(iso->syscall_errno) : 0;
        if (e < 0)
                return error_set(err, -EINVAL, "seccomp: %s is not an errno name", iso->syscall_errno);
        uint32_t refuse = iso->syscall_errno ? SCMP_ACT_ERRNO(e) : SCMP_ACT_KILL_PROCESS;
        _cleanup_strv_free_ char **allowed = NULL, **denied = NULL;
        int r;
        if ((iso->syscalls_allowed && (r = syscall_names_expand(iso->syscalls_allowed, &allowed, err)) < 0) ||
            (r = syscall_names_expand(iso->syscalls_denied, &denied, err)) < 0)
                return r;
        /* With an allow-list, what is not on it is refused; else allowed. */
        _cleanup_(seccomp_releasep) scmp_filter_ctx ctx = seccomp_init(allowed ? refuse : SCMP_ACT_ALLOW);
        if (!ctx)
                return error_sys(err, -ENOMEM, "seccomp");
        /* The calls with argument rules below are left out of the plain
         * lists: libseccomp lets an unconditional rule override them. */
        bool ns = iso->restrict_namespaces;
        for (char **n = allowed; n && *n; n++) {
                if (strv_contains(denied, *n) || (iso->deny_vsock && streq(*n, "socket")) ||
                    (ns && (streq(*n, "clone") || streq(*n, "unshare") || streq(*n, "clone3") || streq(*n, "setns"))))
                        continue;
                if ((r = add(ctx, SCMP_ACT_ALLOW, *n, 0, NULL, err)) < 0)
                        return r;
        }
        if (!allowed)
                for (char **n = denied; n && *n; n++)
                        if ((r = add(ctx, refuse, *n, 0, NULL, err)) < 0)
                                return r;
        bool socket_ok = allowed ? strv_contains(allowed, "socket") && !strv_contains(denied, "socket")
                                 : !strv_contains(denied, "socket");
        if (iso->deny_vsock && socket_ok) {
                struct scmp_arg_cmp not_vsock = SCMP_A0(SCMP_CMP_NE, AF_VSOCK), vsock = SCMP_A0(SCMP_CMP_EQ, AF_VSOCK);
                if ((allowed && (r = add(ctx, SCMP_ACT_ALLOW, "socket", 1, &not_vsock, err)) < 0) ||
                    (r = add(ctx, SCMP_ACT_ERRNO(EAFNOSUPPORT), "socket", 1, &vsock, err)) < 0)
                        return r;
        }
        if (ns) {
                static const char *const calls[] = { "clone", "unshare" };
                for (size_t i = 0; i < ELEMENTSOF(calls); i++) {
                        bool ok = allowed ? strv_contains(allowed, calls[i]) && !strv_contains(denied, calls[i])
                                          : !strv_contains(denied, calls[i]);
                        if (!ok)
                                continue;
                        if (allowed) {
                                struct scmp_arg_cmp none = SCMP_A0(SCMP_CMP_MASKED_EQ, CLONE_NEW_ALL, 0);
                                if ((r = add(ctx, SCMP_ACT_ALLOW, calls[i], 1, &none, err)) < 0)
                                        return r;
                                continue;
                        }
                        /* Allowed by default: refused with any of the flags. */
                        for (unsigned b = 0; b < 64; b++) {
                                uint64_t f = UINT64_C(1) << b;
                                if (!(CLONE_NEW_ALL & f))
                                        continue;
                                struct scmp_arg_cmp has = SCMP_A0(SCMP_CMP_MASKED_EQ, f, f);
                                if ((r = add(ctx, SCMP_ACT_ERRNO(EPERM), calls[i], 1, &has, err)) < 0)
                                        return r;
                        }
                }
                if ((!allowed && (r = add(ctx, SCMP_ACT_ERRNO(EPERM), "setns", 0, NULL, err)) < 0) ||
                    (r = add(ctx, SCMP_ACT_ERRNO(ENOSYS), "clone3", 0, NULL, err)) < 0)
                        return r;
        }
        /* The native ABI only (SystemCallArchitectures=native, what every
         * app gets): the context holds no other, and a call through
         * another kills (SCMP_FLTATR_ACT_BADARCH's default). */
        r = seccomp_load(ctx);
        return r < 0 ? error_sys(err, r, "seccomp: cannot load the filter") : 0;
}
