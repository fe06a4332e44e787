/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

/* The length (1 to 4) of the one character encoded at p in UTF-8, reading
 * at most n bytes, or 0 when they do not begin with one: a stray
 * continuation byte, an overlong form, a UTF-16 surrogate, a code point
 * beyond U+10FFFF, or a sequence cut short. An ASCII byte, NUL included,
 * is 1. */
size_t utf8_char_length(const char *p, size_t n);

/* Whether the string s is UTF-8 throughout (systemd refuses other
 * environment values; JSON is UTF-8). */
bool utf8_is_valid(const char *s);
