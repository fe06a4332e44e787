/* SPDX-License-Identifier: Apache-2.0 */
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "basic/time-util.h"
#include "cli/progress.h"

#define REDRAW_USEC (100 * 1000)

void progress_line_init(ProgressLine *p) {
        /* A "dumb" terminal (an editor's shell buffer) cannot erase a line:
         * it would show every redraw. */
        const char *term = getenv("TERM");
        *p = (ProgressLine) { .enabled = isatty(STDERR_FILENO) == 1 && !(term && streq(term, "dumb")) };
}

void progress_line_show(ProgressLine *p, bool force, const char *fmt, ...) {
        if (!p->enabled)
                return;
        uint64_t now = monotonic_usec();
        if (!force && p->shown && now - p->last_usec < REDRAW_USEC)
                return;
        char line[256];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(line, sizeof(line), fmt, ap);
        va_end(ap);
        /* Back to the start of the line, the text, erase the rest of the
         * line (a shorter text than the last one leaves nothing behind). */
        fprintf(stderr, "\r%s\033[K", line);
        fflush(stderr);
        p->shown = true;
        p->last_usec = now;
}

/* Back to the first line of what was shown. */
static void progress_home(ProgressLine *p) {
        if (p->shown && p->lines > 1)
                fprintf(stderr, "\033[%uA", p->lines - 1);
        fputc('\r', stderr);
}

void progress_lines_show(ProgressLine *p, bool force, const char *text) {
        if (!p->enabled)
                return;
        uint64_t now = monotonic_usec();
        if (!force && p->shown && now - p->last_usec < REDRAW_USEC)
                return;
        progress_home(p);
        unsigned n = 1;
        for (const char *c = text; *c; c++) {
                if (*c == '\n') {
                        /* Erase the rest of each line before the next. */
                        fputs("\033[K\n", stderr);
                        n++;
                } else
                        fputc(*c, stderr);
        }
        /* Fewer lines than last time: erase what is below. */
        fputs("\033[J", stderr);
        fflush(stderr);
        p->shown = true;
        p->lines = n;
        p->last_usec = now;
}

void progress_line_clear(ProgressLine *p) {
        if (!p->enabled || !p->shown)
                return;
        progress_home(p);
        /* One line: erase it; a block: erase to the end of the screen. */
        fputs(p->lines > 1 ? "\r\033[J" : "\r\033[K", stderr);
        p->lines = 0;
        fflush(stderr);
        p->shown = false;
}

static volatile sig_atomic_t interrupted = 0;

static void on_interrupt(int sig) {
        interrupted = sig;
}

void cli_catch_interrupts(void) {
        /* SA_RESETHAND: the second Ctrl-C of someone who will not wait
         * ends the process as usual (gc frees what it leaves). SA_RESTART:
         * no system call fails with EINTR; the operation notices the flag
         * at its next check. */
        struct sigaction sa = { .sa_handler = on_interrupt, .sa_flags = SA_RESETHAND | SA_RESTART };
        sigemptyset(&sa.sa_mask);
        (void) sigaction(SIGINT, &sa, NULL);
        (void) sigaction(SIGTERM, &sa, NULL);
}

int cli_interrupted(void) {
        return interrupted;
}
