#!/usr/bin/python3
# pty-session.py - runs a command on a new pseudo-terminal, as a user at a
# terminal would, for tests/integration/test-tty.sh. The command is the
# session leader with the pty as its controlling terminal; the steps drive
# it from the master side:
#
#   pty-session.py [--rows=R --cols=C] [--timeout=S] STEP... -- CMD [ARGS...]
#
#   expect:TEXT   wait until the output (from the previous expect on)
#                 holds TEXT; a failure if it does not within the timeout
#   send:TEXT     type TEXT (Python escapes: \x03 is Ctrl-C, \r Enter)
#   resize:R:C    set the window size (TIOCSWINSZ on the master: the
#                 kernel sends SIGWINCH to the foreground job)
#   sleep:S       wait S seconds, reading meanwhile
#
# Then it waits for the command to end and prints the whole output, then
# "EXIT=N" (the command's exit status, 128+N when killed by signal N), and
# "LEFTOVER=..." : the bytes still waiting in the terminal's input, which
# nothing of the command read (what a pod that got hold of the user's
# terminal would have injected with TIOCSTI), and "MAXRSS=KiB". Exit status 0, or 3 when an
# expect or the wait timed out (the output so far is printed).
import fcntl
import os
import resource
import select
import struct
import subprocess
import sys
import termios
import time


def set_size(fd, rows, cols):
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))


def main():
    args = sys.argv[1:]
    rows, cols, timeout = 24, 80, 30.0
    steps = []
    while args and args[0] != "--":
        a = args.pop(0)
        if a.startswith("--rows="):
            rows = int(a[7:])
        elif a.startswith("--cols="):
            cols = int(a[7:])
        elif a.startswith("--timeout="):
            timeout = float(a[10:])
        else:
            steps.append(a)
    cmd = args[1:]
    master, slave = os.openpty()
    set_size(master, rows, cols)

    def child_setup():
        os.setsid()
        fcntl.ioctl(0, termios.TIOCSCTTY, 0)

    proc = subprocess.Popen(cmd, stdin=slave, stdout=slave, stderr=slave, preexec_fn=child_setup, close_fds=True)
    out = bytearray()
    mark = 0
    failed = None

    # Reads for secs, or less once the command has ended (then only what
    # it left).
    def pump(secs):
        end = time.monotonic() + secs
        while True:
            left = end - time.monotonic()
            if left <= 0:
                return
            r, _, _ = select.select([master], [], [], min(left, 0.1))
            if not r:
                if proc.poll() is not None:
                    return
                continue
            try:
                data = os.read(master, 65536)
            except OSError:
                return
            if not data:
                return
            out.extend(data)

    for s in steps:
        kind, _, arg = s.partition(":")
        if kind == "expect":
            want = arg.encode()
            end = time.monotonic() + timeout
            while want not in out[mark:] and time.monotonic() < end:
                pump(0.05)
            if want not in out[mark:]:
                failed = "expect %r timed out" % arg
                break
            mark = out.index(want, mark) + len(want)
        elif kind == "send":
            os.write(master, arg.encode().decode("unicode_escape").encode("latin-1"))
        elif kind == "resize":
            r, c = arg.split(":")
            set_size(master, int(r), int(c))
        elif kind == "sleep":
            pump(float(arg))
        else:
            sys.exit("pty-session.py: unknown step " + s)

    end = time.monotonic() + timeout
    while failed is None and proc.poll() is None:
        if time.monotonic() >= end:
            failed = "the command did not end within %s s" % timeout
            break
        pump(0.05)
    if failed is not None and proc.poll() is None:
        proc.kill()
        proc.wait()
    pump(0.2)
    # What is left in the terminal's input: raw, so nothing waits for a
    # line; read without blocking.
    t = termios.tcgetattr(slave)
    t[3] &= ~(termios.ICANON | termios.ECHO)
    t[6][termios.VMIN] = 0
    t[6][termios.VTIME] = 0
    termios.tcsetattr(slave, termios.TCSANOW, t)
    fcntl.fcntl(slave, fcntl.F_SETFL, os.O_NONBLOCK)
    left = b""
    try:
        left = os.read(slave, 4096)
    except OSError:
        pass
    sys.stdout.write(out.decode("utf-8", "replace"))
    rc = proc.returncode
    print("\nEXIT=%d" % (rc if rc >= 0 else 128 - rc))
    print("LEFTOVER=%r" % left)
    # The largest resident set of the command and what it waited for, in KiB.
    print("MAXRSS=%d" % resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
    if failed:
        print("pty-session.py: " + failed, file=sys.stderr)
        sys.exit(3)


main()
