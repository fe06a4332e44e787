/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* NULL-terminated lists of strings, as execve(2) takes them. */

#include <stdbool.h>
#include <stddef.h>

#include "basic/macro.h"

static inline void strv_free(char **l) {
        for (char **i = l; i && *i; i++)
                free(*i);
        free(l);
}
static inline void strv_freep(char ***l) { strv_free(*l); }
#define _cleanup_strv_free_ _cleanup_(strv_freep)

size_t strv_length(char *const *l);
char **strv_copy(char *const *l);
int strv_push(char ***l, const char *value);
bool strv_contains(char *const *l, const char *value);
/* The first entry that starts with prefix ("TERM="), or NULL. */
const char *strv_find_prefix(char *const *l, const char *prefix);
