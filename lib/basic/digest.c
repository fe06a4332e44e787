/* SPDX-License-Identifier: Apache-2.0 */
#include <stdio.h>
#include <string.h>

#include "basic/digest.h"
#include "basic/macro.h"

bool hex_digest_is_valid(const char *hex) {
        if (!hex || strlen(hex) != SHA256_HEX_SIZE - 1)
                return false;
        for (const char *p = hex; *p; p++)
                if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f')))
                        return false;
        return true;
}

bool digest_is_valid(const char *digest) {
        const char *hex = digest ? startswith(digest, DIGEST_PREFIX) : NULL;
        return hex && hex_digest_is_valid(hex);
}

const char *digest_hex(const char *digest) {
        return digest + strlen(DIGEST_PREFIX);
}

void digest_from_hex(const char *hex, char ret[DIGEST_STRING_SIZE]) {
        snprintf(ret, DIGEST_STRING_SIZE, DIGEST_PREFIX "%s", hex);
}
