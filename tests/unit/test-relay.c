/* SPDX-License-Identifier: Apache-2.0 */
/* The relay between a caller and a command in a pod (basic/relay.h), on
 * pipes and ptys: bytes copied in order, EOF passed on, the buffers
 * bounded when the destination does not drain, the drain after the end
 * bounded against a source that never stops, and the terminal modes. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pty.h>
#include <signal.h>
#include <stdint.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <time.h>

#include "basic/relay.h"
#include "tests.h"

/* Runs the relay until it has nothing left to do or msec passed. */
static void pump(Relay *r, int msec) {
        for (int i = 0; i < msec / 10; i++) {
                struct pollfd p[2 * RELAY_CHANNELS_MAX];
                size_t n = relay_pollfds(r, p);
                if (n == 0)
                        return;
                if (poll(p, n, 10) > 0)
                        relay_process(r);
        }
}

static void test_copy_and_eof(void) {
        int in[2], out[2];
        ASSERT(pipe(in) == 0 && pipe(out) == 0);
        Relay r = {};
        /* out[1] is the relay's: closed at EOF, which the reader sees. */
        ASSERT_EQ_INT(relay_add(&r, in[0], out[1], true, -1), 0);
        ASSERT_EQ_INT(write(in[1], "hello ", 6), 6);
        ASSERT_EQ_INT(write(in[1], "world", 5), 5);
        close(in[1]);
        pump(&r, 1000);
        char buf[64];
        ssize_t n = read(out[0], buf, sizeof(buf));
        ASSERT_EQ_INT(n, 11);
        ASSERT(memcmp(buf, "hello world", 11) == 0);
        ASSERT_EQ_INT(read(out[0], buf, sizeof(buf)), 0);
        relay_done(&r);
        close(in[0]);
        close(out[0]);
}

static void test_eof_char(void) {
        int in[2], out[2];
        ASSERT(pipe(in) == 0 && pipe(out) == 0);
        Relay r = {};
        ASSERT_EQ_INT(relay_add(&r, in[0], out[1], false, 4), 0);
        ASSERT_EQ_INT(write(in[1], "ls\n", 3), 3);
        close(in[1]);
        pump(&r, 300);
        char buf[64];
        ASSERT_EQ_INT(read(out[0], buf, sizeof(buf)), 4);
        ASSERT(memcmp(buf, "ls\n\4", 4) == 0);
        relay_done(&r);
        /* Not the relay's: still open, and blocking again. */
        ASSERT_EQ_INT(fcntl(out[1], F_GETFL) & O_NONBLOCK, 0);
        close(in[0]);
        close(out[0]);
        close(out[1]);
}

/* A destination that never drains: the relay reads no more than its
 * buffer (and the pipe) holds, whatever the source offers. */
static void test_bounded(void) {
        int in[2], out[2];
        ASSERT(pipe(in) == 0 && pipe(out) == 0);
        ASSERT(fcntl(in[1], F_SETFL, O_NONBLOCK) == 0);
        Relay r = {};
        ASSERT_EQ_INT(relay_add(&r, in[0], out[1], false, -1), 0);
        static char junk[65536];
        size_t written = 0;
        for (int round = 0; round < 40; round++) {
                ssize_t w = write(in[1], junk, sizeof(junk));
                if (w > 0)
                        written += (size_t) w;
                pump(&r, 20);
        }
        int queued_out = 0, queued_in = 0;
        ASSERT(ioctl(out[0], FIONREAD, &queued_out) == 0 && ioctl(in[0], FIONREAD, &queued_in) == 0);
        /* What was written is in the source pipe, the buffer or the
         * destination pipe: the relay holds at most its buffer. */
        ASSERT(written - (size_t) queued_out - (size_t) queued_in <= RELAY_BUFFER_SIZE);
        ASSERT(queued_in > 0);  /* it stopped reading */
        relay_done(&r);
        close(in[0]);
        close(in[1]);
        close(out[0]);
        close(out[1]);
}

static long long now_msec(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (long long) ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* A source that never stops (a process of the pod that floods its pty
 * after the command ended): the drain ends at its time limit. A quiet one
 * that never closes: at its quiet limit. */
static void test_drain_bounded(void) {
        int in[2], out[2];
        ASSERT(pipe(in) == 0 && pipe(out) == 0);
        pid_t pid = fork();
        ASSERT(pid >= 0);
        if (pid == 0) {
                close(in[0]);
                close(out[0]);
                close(out[1]);
                static char junk[4096];
                for (;;)
                        if (write(in[1], junk, sizeof(junk)) < 0)
                                _exit(0);
        }
        pid_t reader = fork();
        ASSERT(reader >= 0);
        if (reader == 0) {
                close(in[0]);
                close(in[1]);
                close(out[1]);
                char buf[65536];
                while (read(out[0], buf, sizeof(buf)) > 0)
                        ;
                _exit(0);
        }
        close(in[1]);
        close(out[0]);
        Relay r = {};
        ASSERT_EQ_INT(relay_add(&r, in[0], out[1], true, -1), 0);
        bool from_pod[] = { true };
        long long t = now_msec();
        relay_drain(&r, from_pod, 100, 500, SIZE_MAX);
        long long spent = now_msec() - t;
        ASSERT(spent >= 450 && spent < 2000);
        t = now_msec();
        relay_drain(&r, from_pod, 100, 60000, 1U << 20);
        ASSERT(now_msec() - t < 5000);   /* the byte limit, long before a minute */
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
        relay_done(&r);
        waitpid(reader, NULL, 0);
        close(in[0]);

        /* Quiet, never closed. */
        ASSERT(pipe(in) == 0 && pipe(out) == 0);
        Relay q = {};
        ASSERT_EQ_INT(relay_add(&q, in[0], out[1], false, -1), 0);
        t = now_msec();
        relay_drain(&q, from_pod, 100, 60000, SIZE_MAX);
        spent = now_msec() - t;
        ASSERT(spent >= 90 && spent < 1000);
        relay_done(&q);
        close(in[0]);
        close(in[1]);
        close(out[0]);
        close(out[1]);
}

/* A pty master whose slave closed reads EIO: the end of that channel. */
static void test_pty_eio(void) {
        int master, slave;
        ASSERT(openpty(&master, &slave, NULL, NULL, NULL) == 0);
        int out[2];
        ASSERT(pipe(out) == 0);
        Relay r = {};
        ASSERT_EQ_INT(relay_add(&r, master, out[1], true, -1), 0);
        ASSERT_EQ_INT(write(slave, "bye\n", 4), 4);
        close(slave);
        pump(&r, 1000);
        char buf[64];
        ssize_t n = read(out[0], buf, sizeof(buf));
        ASSERT(n >= 4);
        ASSERT(memcmp(buf, "bye", 3) == 0);
        ASSERT_EQ_INT(read(out[0], buf, sizeof(buf)), 0);
        relay_done(&r);
        close(master);
        close(out[0]);
}

static void test_terminal(void) {
        int master, slave;
        struct winsize ws = { .ws_row = 33, .ws_col = 101 };
        ASSERT(openpty(&master, &slave, NULL, NULL, &ws) == 0);
        struct termios before, saved, raw, after;
        ASSERT(tcgetattr(slave, &before) == 0);
        ASSERT_EQ_INT(term_make_raw(slave, &saved), 0);
        ASSERT(tcgetattr(slave, &raw) == 0);
        ASSERT_EQ_INT(raw.c_lflag & (ICANON | ECHO | ISIG), 0);
        ASSERT_EQ_INT(raw.c_oflag, before.c_oflag);     /* output processing kept */
        term_restore(slave, &saved);
        ASSERT(tcgetattr(slave, &after) == 0);
        ASSERT(after.c_lflag == before.c_lflag && after.c_iflag == before.c_iflag);

        int m2, s2;
        ASSERT(openpty(&m2, &s2, NULL, NULL, NULL) == 0);
        ASSERT_EQ_INT(term_copy_size(slave, m2), 0);
        struct winsize got;
        ASSERT(ioctl(s2, TIOCGWINSZ, &got) == 0);
        ASSERT_EQ_INT(got.ws_row, 33);
        ASSERT_EQ_INT(got.ws_col, 101);
        int p[2];
        ASSERT(pipe(p) == 0);
        ASSERT_EQ_INT(term_copy_size(p[0], m2), -ENOTTY);
        close(p[0]);
        close(p[1]);
        close(master);
        close(slave);
        close(m2);
        close(s2);
}

int main(void) {
        /* A reader that went away is EPIPE for the relay, as in pod_exec(). */
        signal(SIGPIPE, SIG_IGN);
        RUN(test_copy_and_eof);
        RUN(test_eof_char);
        RUN(test_bounded);
        RUN(test_drain_bounded);
        RUN(test_pty_eio);
        RUN(test_terminal);
        return 0;
}
