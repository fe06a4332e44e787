/* SPDX-License-Identifier: Apache-2.0 */
/* The fly flavor's filter (fly/fly-seccomp.h): the @groups of
 * unit/app-isolators.h expand to what systemd gives them, and a loaded
 * filter refuses and allows what the nspawn flavor's systemd would. */
#include <errno.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "basic/strv.h"
#include "fly/fly-seccomp.h"
#include "tests.h"

static void test_expand(void) {
        char **set = NULL;
        Error *err = NULL;
        ASSERT_EQ_INT(syscall_names_expand((char **) APP_SYSCALLS_DEFAULT, &set, &err), 0);
        /* @system-service holds @basic-io, @file-system, @process...: */
        ASSERT(strv_contains(set, "read"));
        ASSERT(strv_contains(set, "openat"));
        ASSERT(strv_contains(set, "execve"));
        ASSERT(strv_contains(set, "chroot"));
        /* ...and nothing of @mount, @module, @reboot, @raw-io, @clock: */
        ASSERT(!strv_contains(set, "mount"));
        ASSERT(!strv_contains(set, "init_module"));
        ASSERT(!strv_contains(set, "reboot"));
        ASSERT(!strv_contains(set, "iopl"));
        ASSERT(!strv_contains(set, "settimeofday"));
        for (char **s = set; *s; s++)
                ASSERT((*s)[0] != '@');
        strv_free(set);
        set = NULL;
        ASSERT_EQ_INT(syscall_names_expand((char **) APP_SYSCALLS_DEFAULT_DENIED, &set, &err), 0);
        ASSERT(strv_contains(set, "add_key"));
        ASSERT(strv_contains(set, "io_uring_setup"));
        strv_free(set);
        char *unknown[] = { "@no-such-group", NULL };
        ASSERT_EQ_INT(syscall_names_expand(unknown, &set, &err), -EINVAL);
        ASSERT_CONTAINS(err->msg, "@no-such-group");
        error_free(err);
        ASSERT(syscall_group_exists("system-service"));
}

/* In a child: the default isolation's filter loaded, then what it allows
 * and refuses. */
static void test_load(void) {
        pid_t pid = fork();
        ASSERT(pid >= 0);
        if (pid == 0) {
                AppIsolation iso = {};
                Error *err = NULL;
                if (app_isolation_parse(NULL, 0, "isolators", &iso, &err) < 0 ||
                    prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 || seccomp_default_load(&iso, &err) < 0)
                        _exit(10);
                if (getpid() <= 0)
                        _exit(11);
                if (unshare(CLONE_NEWUSER) == 0 || errno != EPERM)
                        _exit(12);
                if (socket(AF_VSOCK, SOCK_STREAM, 0) >= 0 || errno != EAFNOSUPPORT)
                        _exit(13);
                if (socket(AF_UNIX, SOCK_STREAM, 0) < 0)
                        _exit(14);
                if (syscall(SYS_clone3, NULL, 0) == 0 || errno != ENOSYS)
                        _exit(15);
                pid_t c = fork(); /* clone() without namespace flags */
                if (c < 0)
                        _exit(16);
                if (c == 0)
                        _exit(0);
                waitpid(c, NULL, 0);
                if (syscall(SYS_mount, "none", "/tmp", "tmpfs", 0, NULL) == 0 || errno != EPERM)
                        _exit(17);
                if (syscall(SYS_add_key, "user", "x", "y", 1, -3) >= 0 || errno != EPERM)
                        _exit(18);
                _exit(0);
        }
        int st = 0;
        ASSERT(waitpid(pid, &st, 0) == pid);
        ASSERT(WIFEXITED(st));
        ASSERT_EQ_INT(WEXITSTATUS(st), 0);
}

int main(void) {
        RUN(test_expand);
        RUN(test_load);
        return 0;
}
