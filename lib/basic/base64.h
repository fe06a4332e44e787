/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

#include <stddef.h>

/* Base64 of RFC 4648, the standard alphabet with padding (what auth.json
 * entries and Go's encoding of a []byte, as policy.json's keyData, use). */

/* NULL on ENOMEM. */
char *base64_encode(const void *data, size_t size);
/* The n bytes of s decoded into *ret (NUL-terminated, its length in
 * *ret_size, which may be NULL); anything but canonical base64 with padding
 * is -EINVAL, and *ret is left alone. The result may hold NUL bytes. */
int base64_decode(const char *s, size_t n, char **ret, size_t *ret_size);
