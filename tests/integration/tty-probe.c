/* SPDX-License-Identifier: Apache-2.0 */
/* tty-probe: what a command in a pod tries against the terminal it was
 * given, for tests/integration/test-tty.sh. Statically linked, so it runs
 * in any app's root. For each of fds 0, 1, 2 and /dev/tty it prints one
 * line:
 *
 *   NAME tty=yes|no sti=allowed|EERRNO set=allowed|EERRNO
 *
 * sti: pushing TEXT into the terminal's input (TIOCSTI), as keystrokes a
 * shell reading that terminal would run; set: turning its echo off
 * (TCSETS), a change the user would be left with. On the pod's own pty
 * both may work: they reach only the pod. The caller's terminal must
 * never be one of them. */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

static const char *result(int r) {
        return r >= 0 ? "allowed" : (strerrorname_np(errno) ?: "E?");
}

static void probe(const char *name, int fd, const char *text) {
        struct termios t;
        bool tty = tcgetattr(fd, &t) >= 0;
        int sti = 0;
        for (const char *c = text; *c && sti >= 0; c++)
                sti = ioctl(fd, TIOCSTI, c);
        const char *sti_r = result(sti);
        int set = -1;
        if (tty) {
                t.c_lflag &= ~(tcflag_t) ECHO;
                set = tcsetattr(fd, TCSANOW, &t);
        } else
                errno = ENOTTY;
        printf("%s tty=%s sti=%s set=%s\n", name, tty ? "yes" : "no", sti_r, result(set));
        fflush(stdout);
}

int main(int argc, char **argv) {
        const char *text = argc > 1 ? argv[1] : "echo INJECTED\n";
        probe("fd0", 0, text);
        probe("fd1", 1, text);
        probe("fd2", 2, text);
        int fd = open("/dev/tty", O_RDWR | O_NOCTTY | O_CLOEXEC);
        if (fd < 0)
                printf("devtty open=%s\n", strerrorname_np(errno) ?: "E?");
        else
                probe("devtty", fd, text);
        return 0;
}
