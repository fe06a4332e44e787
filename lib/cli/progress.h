/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* Progress of long commands, for people at a terminal, and interruptions
 * that let such commands clean up. */

#include <stdbool.h>
#include <stdint.h>

#include "basic/macro.h"

/* One line on stderr, redrawn in place. It shows only when stderr is a
 * terminal (not TERM=dumb): a script that reads stderr gets nothing. */
typedef struct ProgressLine {
        bool enabled;
        bool shown;
        uint64_t last_usec;     /* monotonic, of the last redraw */
        unsigned lines;         /* shown by progress_lines_show() */
} ProgressLine;

void progress_line_init(ProgressLine *p);
/* Redraws the line, at most 10 times a second unless force. */
void progress_line_show(ProgressLine *p, bool force, const char *fmt, ...) _printf_(3, 4);
/* The same for a block of lines (text: lines separated by '\n', each
 * shorter than the terminal is wide), redrawn in place. */
void progress_lines_show(ProgressLine *p, bool force, const char *text);
/* Erases it (before anything else is printed, and at the end). */
void progress_line_clear(ProgressLine *p);

/* From now on SIGINT and SIGTERM set a flag instead of ending the process:
 * a long operation checks cli_interrupted() where it can stop, and cleans up
 * on its way out. A second signal while the first is being handled ends the
 * process at once, as it would have without this. */
void cli_catch_interrupts(void);
/* The signal caught (SIGINT, SIGTERM), or 0. */
int cli_interrupted(void);
/* The exit status of a command ended by signal sig: 128 + sig, as a shell
 * reports a process killed by it. */
static inline int cli_interrupted_status(int sig) {
        return 128 + sig;
}
