/* SPDX-License-Identifier: Apache-2.0 */
#include "basic/json-util.h"

static void json_tokener_freep(struct json_tokener **t) {
        if (*t)
                json_tokener_free(*t);
}

int json_parse(const char *data, size_t size, const char *what, struct json_object **ret, Error **err) {
        _cleanup_(json_tokener_freep) struct json_tokener *tok = json_tokener_new();
        if (!tok)
                return error_sys(err, -ENOMEM, "%s", what);
        if (size > INT32_MAX)
                return error_set(err, -EFBIG, "%s: too large", what);

        struct json_object *o = json_tokener_parse_ex(tok, data, (int) size);
        enum json_tokener_error e = json_tokener_get_error(tok);
        if (!o && e == json_tokener_continue)
                return error_set(err, -EBADMSG, "%s: not valid JSON: unexpected end of input", what);
        if (!o && e != json_tokener_success)
                return error_set(err, -EBADMSG, "%s: not valid JSON: %s (at byte %zu)", what,
                                 json_tokener_error_desc(e), json_tokener_get_parse_end(tok));
        if (!o)
                return error_set(err, -EBADMSG, "%s: not valid JSON: null document", what);
        /* Trailing garbage after the document is refused too. */
        for (size_t i = json_tokener_get_parse_end(tok); i < size; i++)
                if (!strchr(" \t\r\n", data[i]) && data[i] != 0) {
                        json_object_put(o);
                        return error_set(err, -EBADMSG, "%s: not valid JSON: trailing data at byte %zu", what, i);
                }
        *ret = o;
        return 0;
}

static int json_get_typed(struct json_object *obj, const char *key, bool required, json_type type,
                          const char *type_name, struct json_object **ret, const char *what, Error **err) {
        if (!json_object_is_type(obj, json_type_object))
                return error_set(err, -EBADMSG, "%s: expected a JSON object", what);
        struct json_object *v = NULL;
        if (!json_object_object_get_ex(obj, key, &v) || json_object_is_type(v, json_type_null)) {
                if (required)
                        return error_set(err, -EBADMSG, "%s: field \"%s\": missing", what, key);
                *ret = NULL;
                return 0;
        }
        if (!json_object_is_type(v, type))
                return error_set(err, -EBADMSG, "%s: field \"%s\": expected %s", what, key, type_name);
        *ret = v;
        return 1;
}

int json_get_object(struct json_object *obj, const char *key, bool required, struct json_object **ret, const char *what, Error **err) {
        return json_get_typed(obj, key, required, json_type_object, "an object", ret, what, err);
}

int json_get_array(struct json_object *obj, const char *key, bool required, struct json_object **ret, const char *what, Error **err) {
        return json_get_typed(obj, key, required, json_type_array, "an array", ret, what, err);
}

int json_get_string(struct json_object *obj, const char *key, bool required, const char **ret, const char *what, Error **err) {
        struct json_object *v;
        int r = json_get_typed(obj, key, required, json_type_string, "a string", &v, what, err);
        if (r < 0)
                return r;
        *ret = v ? json_object_get_string(v) : NULL;
        return r;
}

int json_get_int64(struct json_object *obj, const char *key, bool required, int64_t *ret, const char *what, Error **err) {
        struct json_object *v;
        int r = json_get_typed(obj, key, required, json_type_int, "an integer", &v, what, err);
        if (r <= 0)
                return r;
        errno = 0;
        int64_t i = json_object_get_int64(v);
        if (errno != 0)
                return error_set(err, -ERANGE, "%s: field \"%s\": out of range", what, key);
        *ret = i;
        return r;
}

int json_get_strv(struct json_object *obj, const char *key, bool required, char ***ret, const char *what, Error **err) {
        struct json_object *a;
        int r = json_get_array(obj, key, required, &a, what, err);
        if (r < 0)
                return r;
        if (!a) {
                *ret = NULL;
                return 0;
        }
        size_t n = json_object_array_length(a);
        _cleanup_strv_free_ char **l = calloc(n + 1, sizeof(char *));
        if (!l)
                return error_sys(err, -ENOMEM, "%s", what);
        for (size_t i = 0; i < n; i++) {
                struct json_object *s = json_object_array_get_idx(a, i);
                if (!json_object_is_type(s, json_type_string))
                        return error_set(err, -EBADMSG, "%s: field \"%s[%zu]\": expected a string", what, key, i);
                l[i] = strdup(json_object_get_string(s));
                if (!l[i])
                        return error_sys(err, -ENOMEM, "%s", what);
        }
        *ret = TAKE_PTR(l);
        return 1;
}

int json_add_string(struct json_object *obj, const char *key, const char *value) {
        if (!value)
                return 0;
        struct json_object *s = json_object_new_string(value);
        if (!s)
                return -ENOMEM;
        return json_object_object_add(obj, key, s) < 0 ? -ENOMEM : 0;
}

struct json_object *json_strv(char *const *l) {
        struct json_object *a = json_object_new_array();
        if (!a)
                return NULL;
        for (char *const *i = l; i && *i; i++) {
                struct json_object *s = json_object_new_string(*i);
                if (!s || json_object_array_add(a, s) < 0) {
                        json_object_put(s);
                        json_object_put(a);
                        return NULL;
                }
        }
        return a;
}

int json_add_strv(struct json_object *obj, const char *key, char *const *l) {
        struct json_object *a = json_strv(l);
        if (!a)
                return -ENOMEM;
        return json_object_object_add(obj, key, a) < 0 ? -ENOMEM : 0;
}

const char *json_to_text(struct json_object *obj, bool pretty) {
        int flags = JSON_C_TO_STRING_NOSLASHESCAPE |
                    (pretty ? JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED : JSON_C_TO_STRING_PLAIN);
        return json_object_to_json_string_ext(obj, flags);
}
