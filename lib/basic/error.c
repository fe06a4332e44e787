/* SPDX-License-Identifier: Apache-2.0 */
#include <stdarg.h>

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

const char *value_quote(const char *s, char buf[static VALUE_QUOTED_MAX]) {
        size_t n = 0, i = 0;
        buf[n++] = '"';
        for (; s[i] && i < 64; i++) {
                unsigned char c = (unsigned char) s[i];
                if (c == '"' || c == '\\') {
                        buf[n++] = '\\';
                        buf[n++] = (char) c;
                } else if (c < 0x20 || c == 0x7f)
                        n += (size_t) snprintf(buf + n, VALUE_QUOTED_MAX - n, "\\x%02x", c);
                else
                        buf[n++] = (char) c;
        }
        buf[n++] = '"';
        if (s[i]) {
                memcpy(buf + n, "...", 3);
                n += 3;
        }
        buf[n] = 0;
        return buf;
}
