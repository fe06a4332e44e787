/* SPDX-License-Identifier: Apache-2.0 */
#include <stdarg.h>

#include "basic/warn.h"

static WarnHandler handler;

void warn_set_handler(WarnHandler h) {
        handler = h;
}

void warn(const char *fmt, ...) {
        if (!handler)
                return;
        int saved = errno;
        _cleanup_free_ char *message = NULL;
        va_list ap;
        va_start(ap, fmt);
        int r = vasprintf(&message, fmt, ap);
        va_end(ap);
        if (r >= 0)
                handler(message);
        errno = saved;
}
