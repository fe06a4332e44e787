/* SPDX-License-Identifier: Apache-2.0 */
#include <fcntl.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <unistd.h>
#include <time.h>

#include "basic/relay.h"
#include "basic/error.h"
#include "basic/fs.h"
#include "basic/macro.h"

int relay_add(Relay *r, int src, int dst, bool close_dst_at_eof, int eof_char) {
        if (r->n >= RELAY_CHANNELS_MAX)
                return -E2BIG;
        RelayChannel *c = &r->ch[r->n];
        *c = (RelayChannel) { .src = src, .dst = dst, .close_dst_at_eof = close_dst_at_eof, .eof_char = eof_char };
        if (!(c->buf = malloc(RELAY_BUFFER_SIZE)))
                return -ENOMEM;
        c->src_flags = fcntl(src, F_GETFL);
        c->dst_flags = fcntl(dst, F_GETFL);
        if (c->src_flags < 0 || c->dst_flags < 0 || fcntl(src, F_SETFL, c->src_flags | O_NONBLOCK) < 0 ||
            fcntl(dst, F_SETFL, c->dst_flags | O_NONBLOCK) < 0) {
                int e = -errno;
                free(c->buf);
                return e;
        }
        r->n++;
        return 0;
}

void relay_done(Relay *r) {
        /* Backwards: a fd in two channels gets the flags it had first. */
        for (size_t i = r->n; i-- > 0;) {
                RelayChannel *c = &r->ch[i];
                if (c->close_dst_at_eof) {
                        if (c->dst >= 0)
                                close(c->dst);
                } else
                        (void) fcntl(c->dst, F_SETFL, c->dst_flags);
                (void) fcntl(c->src, F_SETFL, c->src_flags);
                free(c->buf);
        }
        r->n = 0;
}

size_t relay_pollfds(const Relay *r, struct pollfd *p) {
        size_t k = 0;
        for (size_t i = 0; i < r->n; i++) {
                const RelayChannel *c = &r->ch[i];
                if (!c->src_done && c->len < RELAY_BUFFER_SIZE)
                        p[k++] = (struct pollfd) { .fd = c->src, .events = POLLIN };
                if (c->len > 0 && !c->dst_done && c->dst >= 0)
                        p[k++] = (struct pollfd) { .fd = c->dst, .events = POLLOUT };
        }
        return k;
}

/* Writes what the buffer holds; the rest waits for POLLOUT. */
static void channel_flush(RelayChannel *c) {
        while (c->len > 0 && !c->dst_done && c->dst >= 0) {
                ssize_t w = write(c->dst, c->buf + c->off, c->len);
                if (w < 0 && errno == EINTR)
                        continue;
                if (w < 0 && errno == EAGAIN)
                        return;
                if (w <= 0) {
                        /* The reader went away: what still comes is dropped,
                         * but the source is still read, so the pod's side
                         * never stalls on a full buffer. */
                        c->dst_done = true;
                        break;
                }
                c->off += (size_t) w;
                c->len -= (size_t) w;
        }
        if (c->len == 0 || c->dst_done)
                c->len = c->off = 0;
}

static void channel_eof(RelayChannel *c) {
        c->src_done = true;
        if (c->eof_char >= 0 && c->len < RELAY_BUFFER_SIZE) {
                /* Moved to the front so the byte lands after what is left. */
                memmove(c->buf, c->buf + c->off, c->len);
                c->off = 0;
                c->buf[c->len++] = (char) c->eof_char;
                c->eof_char = -1;
        }
}

/* One read at most: a source that never stops cannot starve the others. */
static void channel_fill(RelayChannel *c) {
        if (c->src_done || c->len >= RELAY_BUFFER_SIZE)
                return;
        if (c->off > 0) {
                memmove(c->buf, c->buf + c->off, c->len);
                c->off = 0;
        }
        ssize_t n = read(c->src, c->buf + c->off + c->len, RELAY_BUFFER_SIZE - c->off - c->len);
        if (n < 0 && (errno == EAGAIN || errno == EINTR))
                return;
        if (n <= 0) {
                /* EOF; or EIO, which a pty master reads once every slave fd
                 * has closed. */
                channel_eof(c);
                return;
        }
        c->len += (size_t) n;
}

static void channel_maybe_close(RelayChannel *c) {
        if (c->src_done && c->len == 0 && c->close_dst_at_eof && c->dst >= 0) {
                close(c->dst);
                c->dst = -1;
        }
}

void relay_process(Relay *r) {
        /* Trying them all is simpler than mapping poll's answers back,
         * and costs an EAGAIN at most. */
        for (size_t i = 0; i < r->n; i++) {
                RelayChannel *c = &r->ch[i];
                channel_flush(c);
                channel_fill(c);
                channel_flush(c);
                channel_maybe_close(c);
        }
}

static long long now_msec(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (long long) ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void relay_drain(Relay *r, const bool *from_pod, int quiet_msec, int max_msec, size_t max_bytes) {
        long long start = now_msec(), last = start;
        size_t total = 0;
        for (;;) {
                struct pollfd p[2 * RELAY_CHANNELS_MAX];
                size_t k = 0;
                bool pending = false;
                for (size_t i = 0; i < r->n; i++) {
                        RelayChannel *c = &r->ch[i];
                        if (!from_pod[i])
                                continue;
                        if (!c->src_done && c->len < RELAY_BUFFER_SIZE)
                                p[k++] = (struct pollfd) { .fd = c->src, .events = POLLIN };
                        if (c->len > 0 && !c->dst_done && c->dst >= 0)
                                p[k++] = (struct pollfd) { .fd = c->dst, .events = POLLOUT };
                        if (!c->src_done || (c->len > 0 && !c->dst_done))
                                pending = true;
                }
                long long t = now_msec();
                if (!pending || k == 0 || total >= max_bytes || t - start >= max_msec || t - last >= quiet_msec)
                        return;
                long long wait = quiet_msec - (t - last);
                if (wait > max_msec - (t - start))
                        wait = max_msec - (t - start);
                int q = poll(p, k, (int) wait);
                if (q < 0 && errno != EINTR)
                        return;
                if (q <= 0)
                        continue;
                for (size_t i = 0; i < r->n; i++) {
                        RelayChannel *c = &r->ch[i];
                        if (!from_pod[i])
                                continue;
                        size_t before = c->len;
                        channel_flush(c);
                        channel_fill(c);
                        if (c->len > before)
                                total += c->len - before;
                        channel_flush(c);
                }
                last = now_msec();
        }
}

int printable_copy(int in, int out, bool raw) {
        /* A character cut by a read waits in buf for the rest. */
        char buf[4096], esc[4 * sizeof(buf)];
        size_t have = 0;
        for (;;) {
                ssize_t n = read(in, buf + have, sizeof(buf) - have);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return -errno;
                have += (size_t) n;
                size_t out_n = 0, used = raw ? have : text_escape(buf, have, n == 0, esc, &out_n);
                int r = raw ? write_all(out, buf, have) : write_all(out, esc, out_n);
                if (r < 0)
                        return r;
                memmove(buf, buf + used, have - used);
                have -= used;
                if (n == 0)
                        return 0;
        }
}

/* systemd-nspawn's noise on a pod's console: lines it prints on every
 * start where the host's cgroup v1 controllers are joined ("cpu,cpuacct"
 * mounted once, linked as cpu and cpuacct), which say nothing a user can
 * act on. Only whole lines of exactly this form are dropped: its real
 * errors (any other text) pass. */
#define NSPAWN_NOISE_PREFIX "Failed to create symlink /sys/fs/cgroup/"
#define NSPAWN_NOISE_SUFFIX ": File exists"
#define NOISE_LINE_MAX 160

static bool is_nspawn_noise(const char *l, size_t n) {
        const size_t p = strlen(NSPAWN_NOISE_PREFIX), q = strlen(NSPAWN_NOISE_SUFFIX);
        while (n > 0 && (l[n - 1] == '\n' || l[n - 1] == '\r'))
                n--;
        if (n <= p + q || memcmp(l, NSPAWN_NOISE_PREFIX, p) != 0 || memcmp(l + n - q, NSPAWN_NOISE_SUFFIX, q) != 0)
                return false;
        for (size_t i = p; i < n - q; i++)
                if (!strchr("abcdefghijklmnopqrstuvwxyz0123456789_,", l[i]) || !l[i])
                        return false;
        return true;
}

typedef struct NoiseFilter {
        char hold[NOISE_LINE_MAX];      /* a line that may still be noise */
        size_t held;
        bool holding, mid_line;
} NoiseFilter;

/* Moves what is not noise from in to out (room for n + NOISE_LINE_MAX):
 * a line is held back only while it may still be noise, any other text
 * goes on at once (a prompt without a newline is not kept waiting). At the
 * end (final), what is held goes. Returns the bytes in out. */
static size_t noise_filter(NoiseFilter *f, const char *in, size_t n, bool final, char *out) {
        size_t o = 0, p = strlen(NSPAWN_NOISE_PREFIX);
        for (size_t i = 0; i < n; i++) {
                char c = in[i];
                if (!f->holding && !f->mid_line && c == NSPAWN_NOISE_PREFIX[0]) {
                        f->holding = true;
                        f->held = 0;
                }
                if (!f->holding) {
                        out[o++] = c;
                        f->mid_line = c != '\n';
                        continue;
                }
                f->hold[f->held++] = c;
                bool maybe = f->held < NOISE_LINE_MAX &&
                             memcmp(f->hold, NSPAWN_NOISE_PREFIX, f->held < p ? f->held : p) == 0;
                if (c == '\n' || !maybe) {
                        if (c != '\n' || !is_nspawn_noise(f->hold, f->held)) {
                                memcpy(out + o, f->hold, f->held);
                                o += f->held;
                        }
                        f->holding = false;
                        f->mid_line = c != '\n';
                }
        }
        if (final && f->holding) {
                memcpy(out + o, f->hold, f->held);
                o += f->held;
                f->holding = false;
        }
        return o;
}

/* printable_copy() of a pod's console: nspawn's noise left out. */
static int console_copy(int in, int out) {
        char buf[4096], kept[sizeof(buf) + NOISE_LINE_MAX], esc[4 * sizeof(kept)];
        NoiseFilter f = {};
        size_t have = 0;
        for (;;) {
                ssize_t n = read(in, buf, sizeof(buf) - NOISE_LINE_MAX);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return -errno;
                /* kept: a character cut by the last read first, then this
                 * read's text that is not noise. */
                have += noise_filter(&f, buf, (size_t) n, n == 0, kept + have);
                size_t out_n = 0, used = text_escape(kept, have, n == 0, esc, &out_n);
                int r = write_all(out, esc, out_n);
                if (r < 0)
                        return r;
                memmove(kept, kept + used, have - used);
                have -= used;
                if (n == 0)
                        return 0;
        }
}

int printable_filter_start(int out, int *ret_done) {
        int p[2], d[2];
        if (pipe2(p, O_CLOEXEC) < 0)
                return -errno;
        if (pipe2(d, O_CLOEXEC) < 0) {
                int r = -errno;
                close(p[0]);
                close(p[1]);
                return r;
        }
        pid_t pid = fork();
        if (pid == 0) {
                /* A grandchild, not a child: a caller that reaps or halts
                 * its children (a subreaper's orphans) must not take it for
                 * one of theirs. */
                pid_t g = fork();
                if (g != 0)
                        _exit(g < 0);
                /* Nothing else of the caller's: no lock, no pod fd. */
                if (dup2(p[0], 0) < 0 || (out != 1 && dup2(out, 1) < 0) || dup2(d[1], 3) < 0)
                        _exit(1);
                (void) close_range(4, ~0U, 0);
                struct sigaction ign = { .sa_handler = SIG_IGN };
                sigaction(SIGINT, &ign, NULL); /* the caller decides when output ends */
                sigaction(SIGTERM, &ign, NULL);
                sigaction(SIGHUP, &ign, NULL);
                pid_t self = getpid();
                (void) write(3, &self, sizeof(self));
                _exit(console_copy(0, 1) < 0); /* fd 3 closes: done */
        }
        int r = pid < 0 ? -errno : 0;
        close(p[0]);
        close(d[1]);
        while (pid > 0 && waitpid(pid, NULL, 0) < 0 && errno == EINTR)
                ;
        if (r < 0) {
                close(p[1]);
                close(d[0]);
                return r;
        }
        *ret_done = d[0];
        return p[1];
}

void printable_filter_finish(int *wfd, int *done) {
        if (*wfd >= 0)
                close(*wfd);
        *wfd = -1;
        if (*done < 0)
                return;
        /* The filter says its pid, then closes the pipe when it ends. A
         * writer that outlives the caller's (an orphan holding a copy)
         * would keep it waiting: 5 s, then it is killed. */
        pid_t pid = 0;
        ssize_t n;
        while ((n = read(*done, &pid, sizeof(pid))) < 0 && errno == EINTR)
                ;
        struct pollfd pfd = { *done, POLLIN, 0 };
        int q;
        while ((q = poll(&pfd, 1, 5000)) < 0 && errno == EINTR)
                ;
        if (q == 0 && n == sizeof(pid) && pid > 0)
                (void) kill(pid, SIGKILL);
        close(*done);
        *done = -1;
}

int term_make_raw(int fd, struct termios *ret_saved) {
        struct termios raw;
        if (tcgetattr(fd, ret_saved) < 0)
                return -errno;
        raw = *ret_saved;
        cfmakeraw(&raw);
        /* The pod's pty does its own output processing; the user's keeps
         * its own, so a stray "\n" still returns the cursor. */
        raw.c_oflag = ret_saved->c_oflag;
        return tcsetattr(fd, TCSANOW, &raw) < 0 ? -errno : 0;
}

void term_restore(int fd, const struct termios *saved) {
        /* tcsetattr from a background process group stops it with
         * SIGTTOU; this one is on the way out. */
        struct sigaction ign = { .sa_handler = SIG_IGN }, old;
        sigaction(SIGTTOU, &ign, &old);
        while (tcsetattr(fd, TCSANOW, saved) < 0 && errno == EINTR)
                ;
        sigaction(SIGTTOU, &old, NULL);
}

int term_copy_size(int from, int to) {
        struct winsize ws;
        if (ioctl(from, TIOCGWINSZ, &ws) < 0)
                return -errno;
        return ioctl(to, TIOCSWINSZ, &ws) < 0 ? -errno : 0;
}
