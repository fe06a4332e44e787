/* SPDX-License-Identifier: Apache-2.0 */
#include <stdio.h>
#include <sys/random.h>

#include "basic/macro.h"
#include "basic/uuid.h"

int uuid_v4_generate(char ret[UUID_STRING_MAX]) {
        uint8_t b[16];
        if (getrandom(b, sizeof(b), 0) != sizeof(b))
                return -errno;
        b[6] = (uint8_t) (0x40 | (b[6] & 0x0f)); /* version 4 */
        b[8] = (uint8_t) (0x80 | (b[8] & 0x3f)); /* variant 10 */
        snprintf(ret, UUID_STRING_MAX,
                 "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
                 b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7],
                 b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
        return 0;
}

static bool uuid_char_is_valid(size_t i, char c) {
        if (i == 8 || i == 13 || i == 18 || i == 23)
                return c == '-';
        return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
}

bool uuid_prefix_is_valid(const char *s) {
        size_t i = 0;
        for (; s[i]; i++)
                if (i >= 36 || !uuid_char_is_valid(i, s[i]))
                        return false;
        return i > 0;
}

bool uuid_is_valid(const char *s) {
        return uuid_prefix_is_valid(s) && strlen(s) == 36;
}
