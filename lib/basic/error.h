/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The one error convention of libsdpod: every function that can fail returns a
 * negative errno and, when it was handed an Error **, fills it with a message
 * that says what failed on which object. Callers going up add context with
 * error_prefix(). Library code never prints; the binaries print once, at the
 * top. Passing NULL for the Error ** is allowed where only the code matters. */

#include "basic/macro.h"

typedef struct Error {
        int code;   /* negative errno */
        char *msg;
} Error;

/* Sets *err (if err and *err is unset) and returns code, which must be < 0. */
int error_set(Error **err, int code, const char *fmt, ...) _printf_(3, 4);
/* As error_set(), and appends ": <strerror(-code)>". */
int error_sys(Error **err, int code, const char *fmt, ...) _printf_(3, 4);
/* Prepends "<context>: " to an existing message; returns its code (or -EIO). */
int error_prefix(Error **err, const char *fmt, ...) _printf_(2, 3);
void error_free(Error *e);
static inline void error_freep(Error **e) { error_free(*e); }
#define _cleanup_error_ _cleanup_(error_freep)

/* A value from a manifest or an image, quoted for a message: at most 64 bytes of it,
 * '"' and '\\' escaped and control characters as \xNN, so a hostile
 * manifest cannot write to a terminal or a log through an error. */
#define VALUE_QUOTED_MAX 300
const char *value_quote(const char *s, char buf[static VALUE_QUOTED_MAX]);

/* Makes the n bytes at s safe to show on a terminal, in place: every byte
 * that is not part of a printable character (well-formed UTF-8, no C0 or C1
 * control, no DEL) becomes '?'; newlines and tabs stay when keep_newlines.
 * For text a pod wrote: its log lines, what its systemd answered. */
void text_make_printable(char *s, size_t n, bool keep_newlines);

/* Escapes the n bytes at in for a terminal into out (room for 4 * n
 * bytes): what text_make_printable() would replace becomes "\xNN" (an
 * OSC 52 clipboard write shows as "\x1b]52;..."), newlines, tabs and
 * carriage returns before a newline stay.
 * For a stream read in pieces: unless final, a character cut at the end
 * is left for the next piece. Returns how many bytes of in were used;
 * *ret_n is what out holds. */
size_t text_escape(const char *in, size_t n, bool final, char *out, size_t *ret_n);
