/* SPDX-License-Identifier: Apache-2.0 */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include "basic/macro.h"
#include "shim/shim-tty.h"

int shim_tty_open(int *ret_master, Error **err) {
        /* The host's own ptmx: the carrier is the shim's, never the pod's. */
        _cleanup_close_ int master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
        int unlock = 0;
        struct winsize ws = { .ws_row = SHIM_TTY_ROWS, .ws_col = SHIM_TTY_COLS };
        if (master < 0 || ioctl(master, TIOCSPTLCK, &unlock) < 0 || ioctl(master, TIOCSWINSZ, &ws) < 0)
                return error_sys(err, -errno, "a pty for the terminal's size");
        *ret_master = TAKE_FD(master);
        return 0;
}

int shim_tty_slave(int master, Error **err) {
        /* From the master itself, not by its name under /dev/pts. The
         * size stays with the pty while no slave is open. */
        int slave = ioctl(master, TIOCGPTPEER, O_RDWR | O_NOCTTY | O_CLOEXEC);
        return slave < 0 ? error_sys(err, -errno, "a pty for the terminal's size") : slave;
}

int shim_tty_resize(int master, unsigned rows, unsigned cols, Error **err) {
        /* 0 is what a client says when it does not know, as runc's
         * shim takes it; past 16 bits the kernel's field would wrap. */
        if (rows > 0xffff || cols > 0xffff)
                return error_set(err, -EINVAL, "a terminal of %u rows and %u columns", rows, cols);
        struct winsize ws = { .ws_row = (unsigned short) rows, .ws_col = (unsigned short) cols };
        if (ioctl(master, TIOCSWINSZ, &ws) < 0)
                return error_sys(err, -errno, "the terminal's size");
        return 0;
}

bool shim_term_is_valid(const char *s) {
        size_t n = s ? strlen(s) : 0;
        return n > 0 && n <= 64 &&
               strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.+-_") == n;
}
