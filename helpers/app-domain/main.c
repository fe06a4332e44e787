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
 * Statically linked: it runs in any app's root, bound in by the app's unit
 * read-only. It must not depend on the app's root; it reads nothing of it. */
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <linux/landlock.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

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
        execv(argv[1], argv + 2);
        int e = errno;
        fprintf(stderr, "app-domain: %s: %s\n", argv[1], strerror(e));
        return e == ENOENT ? 127 : 126;
}
