/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#define UUID_STRING_MAX 37      /* 36 characters and the NUL */

/* Pods are named by random (version 4) UUIDs, in the canonical lowercase
 * form. Random rather than time-ordered (version 7): users abbreviate a UUID
 * to its first digits, which must differ between pods made in one second. */
int uuid_v4_generate(char ret[UUID_STRING_MAX]);

/* The canonical form: 8-4-4-4-12 lowercase hex digits. */
bool uuid_is_valid(const char *s);

/* Something a user may type for a pod: a non-empty start of the canonical
 * form (lowercase hex, dashes where they belong). */
bool uuid_prefix_is_valid(const char *s);
