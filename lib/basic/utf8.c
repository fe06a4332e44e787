/* SPDX-License-Identifier: Apache-2.0 */
#include <stdint.h>
#include <string.h>

#include "basic/utf8.h"

size_t utf8_char_length(const char *p, size_t n) {
        const unsigned char *s = (const unsigned char *) p;
        if (n == 0)
                return 0;
        if (s[0] < 0x80)
                return 1;
        size_t len = s[0] >= 0xc2 && s[0] <= 0xdf ? 2 : s[0] >= 0xe0 && s[0] <= 0xef ? 3 : s[0] >= 0xf0 && s[0] <= 0xf4 ? 4 : 0;
        if (len == 0 || len > n)
                return 0;
        uint32_t cp = s[0] & (0x7f >> len);
        for (size_t i = 1; i < len; i++) {
                if ((s[i] & 0xc0) != 0x80)
                        return 0;
                cp = (cp << 6) | (s[i] & 0x3f);
        }
        /* overlong forms, UTF-16 surrogates, beyond U+10FFFF */
        if ((len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) || (cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff)
                return 0;
        return len;
}

bool utf8_is_valid(const char *s) {
        for (size_t n = strlen(s), k; n > 0; s += k, n -= k)
                if ((k = utf8_char_length(s, n)) == 0)
                        return false;
        return true;
}
