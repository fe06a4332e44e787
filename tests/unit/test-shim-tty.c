/* SPDX-License-Identifier: Apache-2.0 */
/* The window-size carrier of an exec's terminal (shim/shim-tty.h): its
 * ends are ttys, never inherited, and carry ResizePty's size, also across
 * a slave closed and made again (an exec's Start); and which TERM values
 * the shim passes on. */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include "shim/shim-tty.h"
#include "tests.h"

static void size_of(int fd, unsigned *rows, unsigned *cols) {
        struct winsize ws = {};
        ASSERT(ioctl(fd, TIOCGWINSZ, &ws) == 0);
        *rows = ws.ws_row;
        *cols = ws.ws_col;
}

static void test_carrier(void) {
        int master = -1;
        Error *e = NULL;
        ASSERT_EQ_INT(shim_tty_open(&master, &e), 0);
        ASSERT(master >= 0 && (fcntl(master, F_GETFD) & FD_CLOEXEC));
        int slave = shim_tty_slave(master, &e);
        ASSERT(slave >= 0 && isatty(slave) && (fcntl(slave, F_GETFD) & FD_CLOEXEC));
        unsigned rows, cols;
        size_of(slave, &rows, &cols);
        ASSERT_EQ_INT(rows, SHIM_TTY_ROWS);
        ASSERT_EQ_INT(cols, SHIM_TTY_COLS);

        ASSERT_EQ_INT(shim_tty_resize(master, 40, 120, &e), 0);
        size_of(slave, &rows, &cols);
        ASSERT_EQ_INT(rows, 40);
        ASSERT_EQ_INT(cols, 120);
        /* A size the kernel's 16 bits cannot hold: refused, nothing changed. */
        ASSERT_EQ_INT(shim_tty_resize(master, 70000, 10, &e), -EINVAL);
        ASSERT(e && strstr(e->msg, "70000"));
        error_free(e);
        e = NULL;
        size_of(slave, &rows, &cols);
        ASSERT_EQ_INT(rows, 40);
        /* 0: what a client says when it does not know. */
        ASSERT_EQ_INT(shim_tty_resize(master, 0, 0, &e), 0);

        /* No slave open (before an exec's Start): the size stays with the
         * pty, and the next slave has it. */
        close(slave);
        ASSERT_EQ_INT(shim_tty_resize(master, 33, 99, &e), 0);
        slave = shim_tty_slave(master, &e);
        ASSERT(slave >= 0);
        size_of(slave, &rows, &cols);
        ASSERT_EQ_INT(rows, 33);
        ASSERT_EQ_INT(cols, 99);
        close(slave);
        close(master);
}

static void test_term(void) {
        ASSERT(shim_term_is_valid("xterm"));
        ASSERT(shim_term_is_valid("xterm-256color"));
        ASSERT(shim_term_is_valid("screen.linux"));
        ASSERT(shim_term_is_valid("vt100+fnkeys_x"));
        ASSERT(!shim_term_is_valid(NULL));
        ASSERT(!shim_term_is_valid(""));
        ASSERT(!shim_term_is_valid("xterm color"));
        ASSERT(!shim_term_is_valid("xterm\n"));
        ASSERT(!shim_term_is_valid("x\x1b]0;title\x07"));
        ASSERT(!shim_term_is_valid("../../x"));
        char name[66];
        memset(name, 'a', 64);
        name[64] = 0;
        ASSERT(shim_term_is_valid(name));
        name[64] = 'a';
        name[65] = 0;
        ASSERT(!shim_term_is_valid(name));
}

int main(void) {
        RUN(test_carrier);
        RUN(test_term);
        return 0;
}
