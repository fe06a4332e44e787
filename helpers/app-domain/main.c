/* SPDX-License-Identifier: Apache-2.0 */
/* app-domain PROGRAM ARGV0 [ARG...]: runs PROGRAM (a path in the app's
 * root) with the arguments ARGV0 ARG..., in a Landlock domain of its own.
 *
 * Every command of an app's units (its main process, its hooks, its health
 * check) and every command of podapp exec and sdpod enter starts through it
 * (app-unit.h), so each is a domain of its own, and Landlock lets a process
 * trace (ptrace(2), process_vm_readv(2), /proc/PID/mem, root, cwd, fd,
 * environ: every ptrace access check) only processes of its own domain or
 * of domains nested in it: its descendants. Apps of one pod share a pid
 * namespace, a user namespace and often a uid; without it, one app read and
 * wrote another's memory, and an app given CAP_SYS_PTRACE traced the pod's
 * PID 1, the stage1's root with none of an app's confinement
 * (sdpod-security(7)).
 *
 * The domain restricts nothing else: the ruleset handles only
 * LANDLOCK_ACCESS_FS_REFER (which every domain denies by default: renames
 * and links between directories) and gives it back beneath the app's "/".
 * Landlock ABI 2 (Linux 5.19) is needed for that; restrict_self() needs
 * NoNewPrivileges or CAP_SYS_ADMIN, and the app's system call filter gives
 * the first (systemd sets it with a filter, unless CAP_SYS_ADMIN).
 *
 * Without a domain (an older kernel, Landlock not in lsm=): a program of an
 * app with CAP_SYS_PTRACE in its bounding set is not run (it would reach
 * PID 1); any other runs, with a warning, as it did before.
 *
 * Two more steps, each asked for by the unit's environment (which it
 * removes before the program runs):
 *
 *   SDPOD_APP_IDENTITY=UID:GID:CAPS[:GID,GID...]  it was started as root,
 *      with CAP_SYS_ADMIN, CAP_SETPCAP, CAP_SETUID and CAP_SETGID added to
 *      the app's bounding set CAPS (hexadecimal), so that systemd set no
 *      NoNewPrivileges: it changes to the app's user and groups, keeping
 *      CAP_SYS_ADMIN and CAP_SETPCAP only for the next two steps, takes
 *      the bounding set down to CAPS and runs the program, which has no
 *      capabilities then; a set-user-ID program of it gains what CAPS
 *      allows, as under runc with allowPrivilegeEscalation=true.
 *   SDPOD_APP_SECCOMP=FLAGS:HEX  a compiled seccomp program (an OCI
 *      profile, seccomp/seccomp-oci.h), loaded last: it does not filter
 *      the steps before it. Without NoNewPrivileges the kernel needs
 *      CAP_SYS_ADMIN for it (the step above keeps it until then).
 *
 * A step that fails is never skipped: the program does not run.
 *
 * Statically linked: it runs in any app's root, bound in by the app's unit
 * read-only. It must not depend on the app's root; it reads nothing of it. */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/landlock.h>
#include <linux/seccomp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#define IDENTITY_ENV "SDPOD_APP_IDENTITY"
#define SECCOMP_ENV "SDPOD_APP_SECCOMP"
#define GROUPS_MAX 256
#define CAP_LAST_KNOWN 63

typedef struct Identity {
        uid_t uid;
        gid_t gid;
        uint64_t caps;
        gid_t groups[GROUPS_MAX];
        size_t n_groups;
} Identity;

static int parse_u64(const char **p, int base, uint64_t max, uint64_t *ret) {
        char *end;
        errno = 0;
        if (**p < '0' || **p > 'f')
                return -EINVAL;
        unsigned long long v = strtoull(*p, &end, base);
        if (errno != 0 || end == *p || v > max)
                return -EINVAL;
        *p = end;
        *ret = v;
        return 0;
}

static int parse_identity(const char *s, Identity *id) {
        uint64_t v;
        const char *p = s;
        if (parse_u64(&p, 10, UINT32_MAX - 1, &v) < 0 || *p++ != ':')
                return -EINVAL;
        id->uid = (uid_t) v;
        if (parse_u64(&p, 10, UINT32_MAX - 1, &v) < 0 || *p++ != ':')
                return -EINVAL;
        id->gid = (gid_t) v;
        if (parse_u64(&p, 16, UINT64_MAX, &id->caps) < 0)
                return -EINVAL;
        id->n_groups = 0;
        if (*p == ':')
                for (p++; *p;) {
                        if (id->n_groups >= GROUPS_MAX || parse_u64(&p, 10, UINT32_MAX - 1, &v) < 0)
                                return -EINVAL;
                        id->groups[id->n_groups++] = (gid_t) v;
                        if (*p == ',')
                                p++;
                        else if (*p)
                                return -EINVAL;
                }
        return *p ? -EINVAL : 0;
}

static int hex_value(char c) {
        return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* "FLAGS:HEX" into prog (insns allocated). */
static int parse_program(const char *s, unsigned *flags, struct sock_fprog *prog) {
        uint64_t v;
        const char *p = s;
        if (parse_u64(&p, 10, UINT32_MAX, &v) < 0 || *p++ != ':')
                return -EINVAL;
        *flags = (unsigned) v;
        size_t n = strlen(p);
        if (n == 0 || n % (2 * sizeof(struct sock_filter)) != 0 || n / (2 * sizeof(struct sock_filter)) > BPF_MAXINSNS)
                return -EINVAL;
        unsigned char *b = malloc(n / 2);
        if (!b)
                return -ENOMEM;
        for (size_t i = 0; i < n / 2; i++) {
                int hi = hex_value(p[2 * i]), lo = hex_value(p[2 * i + 1]);
                if (hi < 0 || lo < 0) {
                        free(b);
                        return -EINVAL;
                }
                b[i] = (unsigned char) (hi << 4 | lo);
        }
        prog->filter = (struct sock_filter *) b;
        prog->len = (unsigned short) (n / (2 * sizeof(struct sock_filter)));
        return 0;
}

/* From root to the app's user, CAP_SYS_ADMIN and CAP_SETPCAP kept in the
 * effective set for what follows, the bounding set taken down to the
 * app's. */
static int change_identity(const Identity *id) {
        if (setgroups(id->n_groups, id->groups) < 0 || setresgid(id->gid, id->gid, id->gid) < 0 ||
            prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0) < 0 || setresuid(id->uid, id->uid, id->uid) < 0)
                return -errno;
        uint64_t keep = (UINT64_C(1) << CAP_SYS_ADMIN) | (UINT64_C(1) << CAP_SETPCAP);
        struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
        struct __user_cap_data_struct d[2] = {
                { .effective = (uint32_t) keep, .permitted = (uint32_t) keep },
                { .effective = (uint32_t) (keep >> 32), .permitted = (uint32_t) (keep >> 32) },
        };
        if (syscall(SYS_capset, &h, d) < 0 || prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0)
                return -errno;
        for (int c = 0; c <= CAP_LAST_KNOWN; c++)
                if (!(id->caps & (UINT64_C(1) << c)) && prctl(PR_CAPBSET_DROP, c, 0, 0, 0) < 0 && errno != EINVAL)
                        return -errno;
        return prctl(PR_SET_KEEPCAPS, 0, 0, 0, 0) < 0 ? -errno : 0;
}

static int landlock_domain(void) {
        long abi = syscall(SYS_landlock_create_ruleset, NULL, 0, LANDLOCK_CREATE_RULESET_VERSION);
        if (abi < 0)
                return -errno;
        if (abi < 2)
                return -EOPNOTSUPP; /* ABI 1 denies renames between directories, unhandled */
        struct landlock_ruleset_attr attr = { .handled_access_fs = LANDLOCK_ACCESS_FS_REFER };
        int ruleset = (int) syscall(SYS_landlock_create_ruleset, &attr, sizeof(attr), 0);
        if (ruleset < 0)
                return -errno;
        struct landlock_path_beneath_attr beneath = {
                .allowed_access = LANDLOCK_ACCESS_FS_REFER,
                .parent_fd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC),
        };
        int r = 0;
        if (beneath.parent_fd < 0 ||
            syscall(SYS_landlock_add_rule, ruleset, LANDLOCK_RULE_PATH_BENEATH, &beneath, 0) < 0 ||
            syscall(SYS_landlock_restrict_self, ruleset, 0) < 0)
                r = -errno;
        if (beneath.parent_fd >= 0)
                close(beneath.parent_fd);
        close(ruleset);
        return r;
}

int main(int argc, char **argv) {
        if (argc < 3) {
                fprintf(stderr, "Usage: app-domain PROGRAM ARGV0 [ARG...]\n"
                                "Runs PROGRAM in a Landlock domain of its own; see sdpod-security(7).\n");
                return 2;
        }
        const char *identity_text = getenv(IDENTITY_ENV), *program_text = getenv(SECCOMP_ENV);
        Identity id;
        unsigned flags = 0;
        struct sock_fprog prog = {};
        if (identity_text && parse_identity(identity_text, &id) < 0) {
                fprintf(stderr, "app-domain: %s: " IDENTITY_ENV " is not UID:GID:CAPS[:GIDS]\n", argv[1]);
                return 126;
        }
        if (program_text && parse_program(program_text, &flags, &prog) < 0) {
                fprintf(stderr, "app-domain: %s: " SECCOMP_ENV " is not a seccomp program\n", argv[1]);
                return 126;
        }
        unsetenv(IDENTITY_ENV);
        unsetenv(SECCOMP_ENV);
        int r = landlock_domain();
        if (r < 0) {
                if (prctl(PR_CAPBSET_READ, CAP_SYS_PTRACE, 0, 0, 0) == 1) {
                        fprintf(stderr,
                                "app-domain: %s: no Landlock domain (%s; Linux 5.19 with landlock in lsm= is "
                                "needed): with CAP_SYS_PTRACE it could trace the pod's PID 1, not running it\n",
                                argv[1], strerror(-r));
                        return 126;
                }
                fprintf(stderr,
                        "app-domain: warning: %s: no Landlock domain (%s): it is not kept from the processes of "
                        "the pod's other apps of its user\n",
                        argv[1], strerror(-r));
        }
        if (identity_text && (r = change_identity(&id)) < 0) {
                fprintf(stderr, "app-domain: %s: changing to user %u: %s\n", argv[1], (unsigned) id.uid, strerror(-r));
                return 126;
        }
        /* Without NoNewPrivileges and without CAP_SYS_ADMIN (root with a
         * bounding set without it, had systemd set none) the kernel takes
         * no filter: the program then runs with NoNewPrivileges, which
         * takes nothing from root but set-user-ID programs of other users
         * and file capabilities, rather than unfiltered. */
        if (prog.filter) {
                int e = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, flags, &prog) < 0 ? errno : 0;
                if (e == EACCES && !identity_text && prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0)
                        e = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, flags, &prog) < 0 ? errno : 0;
                if (e != 0) {
                        fprintf(stderr, "app-domain: %s: loading its seccomp profile: %s\n", argv[1], strerror(e));
                        return 126;
                }
        }
        execv(argv[1], argv + 2);
        int e = errno;
        fprintf(stderr, "app-domain: %s: %s\n", argv[1], strerror(e));
        return e == ENOENT ? 127 : 126;
}
