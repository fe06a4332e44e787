/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

#include <stddef.h>
#include <stdint.h>

#define SHA256_DIGEST_SIZE 32
#define SHA256_HEX_SIZE 65 /* 64 hex digits and a NUL */

typedef struct Sha256 {
        uint32_t state[8];
        uint64_t length;      /* bytes hashed so far */
        uint8_t buffer[64];
        size_t buffer_len;
} Sha256;

void sha256_init(Sha256 *c);
void sha256_update(Sha256 *c, const void *data, size_t size);
void sha256_final(Sha256 *c, uint8_t ret[SHA256_DIGEST_SIZE]);
/* Lower-case hex of a digest, NUL-terminated. */
void sha256_to_hex(const uint8_t digest[SHA256_DIGEST_SIZE], char ret[SHA256_HEX_SIZE]);
/* One-shot convenience. */
void sha256_hex_of(const void *data, size_t size, char ret[SHA256_HEX_SIZE]);
