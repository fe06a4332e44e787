/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

#include <stdbool.h>

#include "basic/sha256.h"

/* A digest as the OCI spec writes it: "sha256:" and 64 lower-case hex digits.
 * Only sha256 is accepted: it is what every image format here uses. */
#define DIGEST_PREFIX "sha256:"
#define DIGEST_STRING_SIZE (sizeof(DIGEST_PREFIX) - 1 + SHA256_HEX_SIZE)

bool digest_is_valid(const char *digest);
bool hex_digest_is_valid(const char *hex);
/* The hex part of a valid digest. */
const char *digest_hex(const char *digest);
/* Formats "sha256:<hex>" into ret. */
void digest_from_hex(const char *hex, char ret[DIGEST_STRING_SIZE]);
