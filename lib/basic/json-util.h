/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

#include <json-c/json.h>
#include <stdbool.h>
#include <stdint.h>

#include "basic/error.h"
#include "basic/strv.h"

static inline void json_object_putp(struct json_object **o) {
        if (*o)
                json_object_put(*o);
}
#define _cleanup_json_ _cleanup_(json_object_putp)

/* Whether data is one JSON document (RFC 8259) exactly: no number, escape
 * or literal that is not JSON, no comment, no trailing comma, valid UTF-8,
 * no unpaired surrogate, no NUL (not even as \u0000), at most 32 levels
 * deep. "what" names it in errors, with the byte where it went wrong. */
int json_check_syntax(const char *data, size_t size, const char *what, Error **err);

/* Parses one JSON document, checked as above first: every parser of
 * untrusted JSON goes through here. "what" names it in errors (a file, a
 * digest). */
int json_parse(const char *data, size_t size, const char *what, struct json_object **ret, Error **err);

/* Typed field access. A missing required field or a field of the wrong type
 * is an error "<what>: field "<key>": <why>". Optional missing fields set *ret
 * to NULL (or leave numbers untouched) and return 0. Returned strings and
 * objects are borrowed from obj. */
int json_get_object(struct json_object *obj, const char *key, bool required, struct json_object **ret, const char *what, Error **err);
int json_get_array(struct json_object *obj, const char *key, bool required, struct json_object **ret, const char *what, Error **err);
int json_get_string(struct json_object *obj, const char *key, bool required, const char **ret, const char *what, Error **err);
int json_get_int64(struct json_object *obj, const char *key, bool required, int64_t *ret, const char *what, Error **err);
/* An array of strings as a NULL-terminated, newly allocated list. */
int json_get_strv(struct json_object *obj, const char *key, bool required, char ***ret, const char *what, Error **err);

/* Builders that abort the program on allocation failure are not used: these
 * return -ENOMEM instead. */
int json_add_string(struct json_object *obj, const char *key, const char *value);
int json_add_strv(struct json_object *obj, const char *key, char *const *l);
struct json_object *json_strv(char *const *l);

/* The document as text: pretty (for people and stored records) or compact. */
const char *json_to_text(struct json_object *obj, bool pretty);
