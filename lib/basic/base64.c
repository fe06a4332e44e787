/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "basic/base64.h"
#include "basic/macro.h"

static const char b64_alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

char *base64_encode(const void *data, size_t size) {
        const unsigned char *p = data;
        if (size > (SIZE_MAX - 1) / 4 * 3 - 3)
                return NULL;
        char *s = malloc((size + 2) / 3 * 4 + 1), *o = s;
        if (!s)
                return NULL;
        for (size_t i = 0; i < size; i += 3) {
                uint32_t v = (uint32_t) p[i] << 16;
                if (i + 1 < size)
                        v |= (uint32_t) p[i + 1] << 8;
                if (i + 2 < size)
                        v |= p[i + 2];
                *o++ = b64_alphabet[(v >> 18) & 63];
                *o++ = b64_alphabet[(v >> 12) & 63];
                *o++ = i + 1 < size ? b64_alphabet[(v >> 6) & 63] : '=';
                *o++ = i + 2 < size ? b64_alphabet[v & 63] : '=';
        }
        *o = '\0';
        return s;
}

static int b64_value(char c) {
        const char *p = c ? strchr(b64_alphabet, c) : NULL;
        return p ? (int) (p - b64_alphabet) : -1;
}

int base64_decode(const char *s, size_t n, char **ret, size_t *ret_size) {
        if (n % 4 != 0)
                return -EINVAL;
        _cleanup_free_ char *out = malloc(n / 4 * 3 + 1);
        if (!out)
                return -ENOMEM;
        size_t k = 0;
        for (size_t i = 0; i < n; i += 4) {
                int v[4];
                size_t pad = 0;
                for (size_t j = 0; j < 4; j++) {
                        if (s[i + j] == '=' && i + 4 == n && j >= 2) {
                                v[j] = 0;
                                pad++;
                                continue;
                        }
                        if (pad > 0) /* '=' only at the very end */
                                return -EINVAL;
                        v[j] = b64_value(s[i + j]);
                        if (v[j] < 0)
                                return -EINVAL;
                }
                uint32_t w = (uint32_t) v[0] << 18 | (uint32_t) v[1] << 12 | (uint32_t) v[2] << 6 | (uint32_t) v[3];
                out[k++] = (char) (w >> 16);
                if (pad < 2)
                        out[k++] = (char) (w >> 8);
                if (pad < 1)
                        out[k++] = (char) w;
        }
        out[k] = '\0';
        *ret = TAKE_PTR(out);
        if (ret_size)
                *ret_size = k;
        return 0;
}
