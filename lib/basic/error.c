/* SPDX-License-Identifier: Apache-2.0 */
#include <stdarg.h>
#include <stdint.h>

#include "basic/error.h"

static int error_setv(Error **err, int code, int with_errno, const char *fmt, va_list ap) {
        if (code >= 0)
                code = -EIO;
        if (!err || *err)
                return code; /* the first, innermost message wins */

        Error *e = calloc(1, sizeof(*e));
        if (!e)
                return code;
        e->code = code;
        char *m = NULL;
        if (vasprintf(&m, fmt, ap) < 0)
                m = NULL;
        if (m && with_errno) {
                char *full = NULL;
                if (asprintf(&full, "%s: %s", m, strerror(-code)) >= 0) {
                        free(m);
                        m = full;
                }
        }
        e->msg = m ? m : strdup(strerror(-code));
        *err = e;
        return code;
}

int error_set(Error **err, int code, const char *fmt, ...) {
        va_list ap;
        va_start(ap, fmt);
        int r = error_setv(err, code, 0, fmt, ap);
        va_end(ap);
        return r;
}

int error_sys(Error **err, int code, const char *fmt, ...) {
        va_list ap;
        va_start(ap, fmt);
        int r = error_setv(err, code, 1, fmt, ap);
        va_end(ap);
        return r;
}

int error_prefix(Error **err, const char *fmt, ...) {
        if (!err || !*err)
                return -EIO;
        Error *e = *err;

        char *ctx = NULL, *full = NULL;
        va_list ap;
        va_start(ap, fmt);
        int k = vasprintf(&ctx, fmt, ap);
        va_end(ap);
        if (k >= 0 && asprintf(&full, "%s: %s", ctx, strempty(e->msg)) >= 0) {
                free(e->msg);
                e->msg = full;
        }
        free(ctx);
        return e->code;
}

void error_free(Error *e) {
        if (!e)
                return;
        free(e->msg);
        free(e);
}

/* The length of the character at s (at most n bytes) when it is one a
 * terminal only prints: well-formed, shortest-form UTF-8, neither a C0 or
 * C1 control nor DEL nor a surrogate; 0 otherwise. A terminal that reads
 * 8-bit controls takes a lone 0x9b for CSI, so no byte of a bad sequence
 * passes either. */
static size_t printable_char_len(const unsigned char *s, size_t n) {
        unsigned char c = s[0];
        if (c < 0x80)
                return c >= 0x20 && c != 0x7f ? 1 : 0;
        size_t len;
        uint32_t cp;
        if (c >= 0xc2 && c <= 0xdf)
                len = 2, cp = c & 0x1f;
        else if (c >= 0xe0 && c <= 0xef)
                len = 3, cp = c & 0x0f;
        else if (c >= 0xf0 && c <= 0xf4)
                len = 4, cp = c & 0x07;
        else
                return 0;
        if (len > n)
                return 0;
        for (size_t i = 1; i < len; i++) {
                if ((s[i] & 0xc0) != 0x80)
                        return 0;
                cp = cp << 6 | (s[i] & 0x3f);
        }
        static const uint32_t min[] = { 0, 0, 0x80, 0x800, 0x10000 };
        if (cp < min[len] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff) || (cp >= 0x80 && cp <= 0x9f))
                return 0;
        return len;
}

void text_make_printable(char *s, size_t n, bool keep_newlines) {
        for (size_t i = 0; i < n;) {
                if (keep_newlines && (s[i] == '\n' || s[i] == '\t')) {
                        i++;
                        continue;
                }
                size_t len = printable_char_len((const unsigned char *) s + i, n - i);
                if (len == 0) {
                        s[i++] = '?';
                        continue;
                }
                i += len;
        }
}

/* Whether the n bytes at s (n < the length its first byte announces) are
 * the start of a character that may still be well-formed. */
static bool char_cut_short(const unsigned char *s, size_t n) {
        size_t len = s[0] >= 0xc2 && s[0] <= 0xdf ? 2 : s[0] >= 0xe0 && s[0] <= 0xef ? 3 : s[0] >= 0xf0 && s[0] <= 0xf4 ? 4 : 0;
        if (len == 0 || n >= len)
                return false;
        for (size_t i = 1; i < n; i++)
                if ((s[i] & 0xc0) != 0x80)
                        return false;
        return true;
}

size_t text_escape(const char *in, size_t n, bool final, char *out, size_t *ret_n) {
        static const char hex[] = "0123456789abcdef";
        const unsigned char *s = (const unsigned char *) in;
        size_t i = 0, k = 0;
        while (i < n) {
                if (s[i] == '\n' || s[i] == '\t') {
                        out[k++] = (char) s[i++];
                        continue;
                }
                /* A terminal's line end (a pod's console is one: a line
                 * that ended in "\r\n" already reaches it as "\r\r\n");
                 * a lone carriage return would let a line hide what it
                 * began with. */
                if (s[i] == '\r') {
                        size_t j = i;
                        while (j < n && s[j] == '\r')
                                j++;
                        if (j < n && s[j] == '\n') {
                                out[k++] = '\r';
                                out[k++] = '\n';
                                i = j + 1;
                                continue;
                        }
                        if (j == n && !final)
                                break;
                }
                size_t len = printable_char_len(s + i, n - i);
                if (len > 0) {
                        memcpy(out + k, s + i, len);
                        k += len;
                        i += len;
                        continue;
                }
                if (!final && char_cut_short(s + i, n - i))
                        break;
                out[k++] = '\\';
                out[k++] = 'x';
                out[k++] = hex[s[i] >> 4];
                out[k++] = hex[s[i] & 0xf];
                i++;
        }
        *ret_n = k;
        return i;
}

const char *value_quote(const char *s, char buf[static VALUE_QUOTED_MAX]) {
        size_t n = 0, i = 0, l = strlen(s);
        buf[n++] = '"';
        while (s[i] && i < 64) {
                unsigned char c = (unsigned char) s[i];
                size_t len = printable_char_len((const unsigned char *) s + i, l - i);
                if (c == '"' || c == '\\') {
                        buf[n++] = '\\';
                        buf[n++] = (char) c;
                        i++;
                } else if (len == 0) {
                        n += (size_t) snprintf(buf + n, VALUE_QUOTED_MAX - n, "\\x%02x", c);
                        i++;
                } else {
                        memcpy(buf + n, s + i, len);
                        n += len;
                        i += len;
                }
        }
        buf[n++] = '"';
        if (s[i]) {
                memcpy(buf + n, "...", 3);
                n += 3;
        }
        buf[n] = 0;
        return buf;
}
