/* SPDX-License-Identifier: Apache-2.0 */
#include <string.h>

#include "basic/json-util.h"
#include "basic/utf8.h"

static void json_tokener_freep(struct json_tokener **t) {
        if (*t)
                json_tokener_free(*t);
}

/* RFC 8259, checked on the bytes before json-c sees them. json-c's tokener,
 * even with JSON_TOKENER_STRICT, takes what is not JSON ("1.", "-01", NaN,
 * Infinity, raw control characters in strings, unpaired surrogates, which it
 * turns into U+FFFD) and keeps the raw text of numbers, so a document could
 * read one way here and another way in the next program, or change on its
 * way through us (a fuzzer found "09e" written back as "09"). Untrusted
 * input is JSON exactly, or refused. Two more refusals of our own: a NUL
 * anywhere (as a byte or as \u0000: our strings are C strings, and a name
 * cut at a NUL would differ from the name another reader sees), and nesting
 * deeper than json-c's own limit. */
#define JSON_DEPTH_MAX 32

typedef struct JsonCheck {
        const unsigned char *p, *end, *start;
        const char *why;
} JsonCheck;

static bool json_fail(JsonCheck *c, const char *why) {
        c->why = why;
        return false;
}

static void json_skip_space(JsonCheck *c) {
        while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' || *c->p == '\n' || *c->p == '\r'))
                c->p++;
}

static bool json_digits(JsonCheck *c) {
        const unsigned char *s = c->p;
        while (c->p < c->end && *c->p >= '0' && *c->p <= '9')
                c->p++;
        return c->p > s;
}

static bool json_check_number(JsonCheck *c) {
        if (c->p < c->end && *c->p == '-')
                c->p++;
        if (c->p < c->end && *c->p == '0') {
                c->p++;
                if (c->p < c->end && *c->p >= '0' && *c->p <= '9')
                        return json_fail(c, "a number with a leading zero");
        } else if (!json_digits(c))
                return json_fail(c, "not a number");
        if (c->p < c->end && *c->p == '.') {
                c->p++;
                if (!json_digits(c))
                        return json_fail(c, "no digit after a decimal point");
        }
        if (c->p < c->end && (*c->p == 'e' || *c->p == 'E')) {
                c->p++;
                if (c->p < c->end && (*c->p == '+' || *c->p == '-'))
                        c->p++;
                if (!json_digits(c))
                        return json_fail(c, "no digit in an exponent");
        }
        return true;
}

static int json_hex4(const unsigned char *s) {
        int v = 0;
        for (int i = 0; i < 4; i++) {
                int d = s[i] >= '0' && s[i] <= '9'   ? s[i] - '0'
                        : s[i] >= 'a' && s[i] <= 'f' ? s[i] - 'a' + 10
                        : s[i] >= 'A' && s[i] <= 'F' ? s[i] - 'A' + 10
                                                     : -1;
                if (d < 0)
                        return -1;
                v = v * 16 + d;
        }
        return v;
}

static bool json_check_string(JsonCheck *c) {
        c->p++; /* the opening quote */
        while (c->p < c->end && *c->p != '"') {
                if (*c->p < 0x20)
                        return json_fail(c, *c->p == 0 ? "a NUL" : "a control character in a string");
                if (*c->p >= 0x80) {
                        size_t n = utf8_char_length((const char *) c->p, (size_t) (c->end - c->p));
                        if (n == 0)
                                return json_fail(c, "not UTF-8");
                        c->p += n;
                        continue;
                }
                if (*c->p++ != '\\')
                        continue;
                if (c->p >= c->end)
                        break;
                if (strchr("\"\\/bfnrt", *c->p) && *c->p) {
                        c->p++;
                        continue;
                }
                if (*c->p != 'u' || c->end - c->p < 5)
                        return json_fail(c, "an invalid escape in a string");
                int u = json_hex4(c->p + 1);
                if (u < 0)
                        return json_fail(c, "an invalid \\u escape");
                if (u == 0)
                        return json_fail(c, "a NUL (\\u0000) in a string");
                c->p += 5;
                if (u >= 0xDC00 && u <= 0xDFFF)
                        return json_fail(c, "an unpaired surrogate in a string");
                if (u >= 0xD800 && u <= 0xDBFF) {
                        int l = c->end - c->p >= 6 && c->p[0] == '\\' && c->p[1] == 'u' ? json_hex4(c->p + 2) : -1;
                        if (l < 0xDC00 || l > 0xDFFF)
                                return json_fail(c, "an unpaired surrogate in a string");
                        c->p += 6;
                }
        }
        if (c->p >= c->end)
                return json_fail(c, "an unterminated string");
        c->p++;
        return true;
}

static bool json_check_value(JsonCheck *c, unsigned depth);

/* An object's or an array's members, after its opening bracket. */
static bool json_check_members(JsonCheck *c, unsigned depth, bool object) {
        char close = object ? '}' : ']';
        c->p++;
        json_skip_space(c);
        if (c->p < c->end && *c->p == close) {
                c->p++;
                return true;
        }
        for (;;) {
                if (object) {
                        if (c->p >= c->end || *c->p != '"')
                                return json_fail(c, "a field name expected");
                        if (!json_check_string(c))
                                return false;
                        json_skip_space(c);
                        if (c->p >= c->end || *c->p != ':')
                                return json_fail(c, "':' expected");
                        c->p++;
                }
                if (!json_check_value(c, depth + 1))
                        return false;
                if (c->p < c->end && *c->p == close) {
                        c->p++;
                        return true;
                }
                if (c->p >= c->end || *c->p != ',')
                        return json_fail(c, object ? "',' or '}' expected" : "',' or ']' expected");
                c->p++;
                json_skip_space(c);
                if (c->p < c->end && *c->p == close)
                        return json_fail(c, "a trailing comma");
        }
}

static bool json_check_literal(JsonCheck *c, const char *word) {
        size_t n = strlen(word);
        if ((size_t) (c->end - c->p) < n || memcmp(c->p, word, n) != 0)
                return json_fail(c, "not a JSON value");
        c->p += n;
        return true;
}

/* A value with the white space around it. */
static bool json_check_value(JsonCheck *c, unsigned depth) {
        if (depth > JSON_DEPTH_MAX)
                return json_fail(c, "nesting too deep");
        json_skip_space(c);
        if (c->p >= c->end)
                return json_fail(c, "unexpected end of input");
        bool ok;
        switch (*c->p) {
        case '{':
        case '[':
                ok = json_check_members(c, depth, *c->p == '{');
                break;
        case '"':
                ok = json_check_string(c);
                break;
        case 't':
                ok = json_check_literal(c, "true");
                break;
        case 'f':
                ok = json_check_literal(c, "false");
                break;
        case 'n':
                ok = json_check_literal(c, "null");
                break;
        case 0:
                ok = json_fail(c, "a NUL");
                break;
        default:
                ok = (*c->p == '-' || (*c->p >= '0' && *c->p <= '9')) ? json_check_number(c)
                                                                       : json_fail(c, "not a JSON value");
        }
        if (ok)
                json_skip_space(c);
        return ok;
}

int json_check_syntax(const char *data, size_t size, const char *what, Error **err) {
        JsonCheck c = { .p = (const unsigned char *) data, .end = (const unsigned char *) data + size,
                        .start = (const unsigned char *) data };
        if (json_check_value(&c, 1) && c.p < c.end)
                json_fail(&c, *c.p ? "trailing data" : "a NUL");
        if (!c.why)
                return 0;
        return error_set(err, -EBADMSG, "%s: not valid JSON: %s (at byte %zu)", what, c.why, (size_t) (c.p - c.start));
}

int json_parse(const char *data, size_t size, const char *what, struct json_object **ret, Error **err) {
        if (size > INT32_MAX)
                return error_set(err, -EFBIG, "%s: too large", what);
        int r = json_check_syntax(data, size, what, err);
        if (r < 0)
                return r;
        _cleanup_(json_tokener_freep) struct json_tokener *tok = json_tokener_new_ex(JSON_DEPTH_MAX + 1);
        if (!tok)
                return error_sys(err, -ENOMEM, "%s", what);
        json_tokener_set_flags(tok, JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8);
        struct json_object *o = json_tokener_parse_ex(tok, data, (int) size);
        enum json_tokener_error e = json_tokener_get_error(tok);
        /* What the check above passed, json-c takes: anything else is a
         * disagreement between the two, refused all the same. */
        size_t end = json_tokener_get_parse_end(tok);
        while (end < size && strchr(" \t\r\n", data[end]))
                end++;
        if (!o || e != json_tokener_success || end != size) {
                json_object_put(o);
                return error_set(err, -EBADMSG, "%s: not valid JSON: %s (at byte %zu)", what,
                                 !o && e == json_tokener_success ? "null document"
                                 : e == json_tokener_continue    ? "unexpected end of input"
                                                                 : json_tokener_error_desc(e),
                                 json_tokener_get_parse_end(tok));
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
