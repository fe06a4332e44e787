/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* Copying bytes between the caller's terminal (or pipes) and a command in a
 * pod, so that the pod never holds an fd of the caller's: a pod handed the
 * user's terminal could inject keystrokes into the user's shell (TIOCSTI),
 * change its settings, read what the user types next, or keep it after the
 * command has ended. The pod gets its own pty or pipes; this host-side loop
 * copies, through bounded buffers, while the caller waits for the command.
 *
 * Each channel copies one source fd to one destination fd. Sources and
 * destinations are made non-blocking while relayed (and restored after):
 * a destination that does not drain (the pod not reading its input, a
 * stalled terminal) stops reading from its source once the buffer is full,
 * and never blocks the loop. */

#include <poll.h>
#include <stdbool.h>
#include <stddef.h>
#include <termios.h>

#define RELAY_BUFFER_SIZE (64U * 1024U)
#define RELAY_CHANNELS_MAX 3

typedef struct RelayChannel {
        int src, dst;
        int src_flags, dst_flags;       /* their file status flags before, to restore */
        bool src_done;                  /* EOF, or an error: read no more */
        bool dst_done;                  /* an error writing (EPIPE): drop what comes */
        bool close_dst_at_eof;          /* dst is ours (a pipe to the pod): EOF passes on */
        int eof_char;                   /* >= 0: written to dst once at EOF (VEOF into a pty) */
        size_t len, off;
        char *buf;
} RelayChannel;

typedef struct Relay {
        RelayChannel ch[RELAY_CHANNELS_MAX];
        size_t n;
} Relay;

/* Adds a channel; both fds stay the caller's but for close_dst_at_eof. */
int relay_add(Relay *r, int src, int dst, bool close_dst_at_eof, int eof_char);
/* Restores the fds' flags, frees the buffers, closes what is the relay's. */
void relay_done(Relay *r);

/* The pollfds the relay needs now, written to p (room for
 * 2 * RELAY_CHANNELS_MAX); returns how many. */
size_t relay_pollfds(const Relay *r, struct pollfd *p);
/* Reads and writes what is ready, after a poll on relay_pollfds()'s fds:
 * every fd is non-blocking, so each channel is simply tried. EOF, EIO (a
 * pty whose other side closed) and EPIPE end a channel quietly. */
void relay_process(Relay *r);

/* After the command has ended: copies what is left in the channels whose
 * source is the pod's side (from_pod[i]) until they reach EOF, or nothing
 * more came for quiet_msec, or max_msec or max_bytes were spent: whatever
 * in the pod still holds the other side cannot keep the caller waiting, nor
 * flood it for ever. */
void relay_drain(Relay *r, const bool *from_pod, int quiet_msec, int max_msec, size_t max_bytes);

/* The terminal modes of the caller's terminal fd while relaying: raw
 * input (no echo, no line editing, no signals from keys: Ctrl-C, Ctrl-Z
 * reach the pod's pty as bytes), output processing kept. */
/* Copies from in to out until in ends (or out fails: -EPIPE...), as
 * text_escape() shows it unless raw. Both blocking. 0, or -errno of the
 * first failure. For what a pod writes on its way to a user's terminal. */
int printable_copy(int in, int out, bool raw);

/* A process that copies what is written to the returned fd onto out,
 * escaped (printable_copy()), without systemd-nspawn's noise (whole lines
 * "Failed to create symlink /sys/fs/cgroup/NAME: File exists", which it
 * prints on each start on a host with joined cgroup v1 controllers); it holds no other fd of ours and ends when
 * every writer has closed theirs. It is not our child (a grandchild, given
 * to init or the nearest subreaper), so that a supervisor that halts its
 * children's leftovers never takes it for one. printable_filter_finish()
 * closes *wfd (-1s it) and waits, through *done (the fd the start gave),
 * until it has written everything: 5 s at most, when another process
 * still holds a copy of the fd; then it is killed. */
int printable_filter_start(int out, int *ret_done);
void printable_filter_finish(int *wfd, int *done);

int term_make_raw(int fd, struct termios *ret_saved);
/* Restores saved on fd, even when this process is in the background of the
 * terminal (SIGTTOU ignored for the call). */
void term_restore(int fd, const struct termios *saved);
/* Copies the window size of the terminal from to the pty master to (the
 * kernel then sends SIGWINCH to the pty's foreground process group). */
int term_copy_size(int from, int to);
