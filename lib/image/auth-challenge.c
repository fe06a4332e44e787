/* SPDX-License-Identifier: Apache-2.0 */
#include <strings.h>

#include "image/auth-challenge.h"

/* RFC 7230's tchar */
static bool is_tchar(char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || (c && strchr("!#$%&'*+-.^_`|~", c));
}

static bool is_token68_char(char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || (c && strchr("-._~+/", c));
}

static const char *skip_ws(const char *p) {
        while (*p == ' ' || *p == '\t')
                p++;
        return p;
}

/* A quoted-string at p (after the opening '"'), unescaped into a new string;
 * *end is set after the closing quote. NULL: unterminated, or ENOMEM. */
static char *parse_quoted(const char *p, const char **end) {
        size_t n = 0;
        const char *q = p;
        for (; *q && *q != '"'; q++, n++)
                if (*q == '\\' && *++q == '\0')
                        return NULL;
        if (*q != '"')
                return NULL;
        char *v = malloc(n + 1), *o = v;
        if (!v)
                return NULL;
        for (q = p; *q != '"'; q++)
                *o++ = *q == '\\' ? *++q : *q;
        *o = '\0';
        *end = q + 1;
        return v;
}

typedef struct Candidate {
        bool present;
        AuthChallenge c;
} Candidate;

static void set_param(AuthChallenge *c, const char *name, size_t name_len, char **value) {
        char **slot = NULL;
        if (name_len == 5 && strncasecmp(name, "realm", 5) == 0)
                slot = &c->realm;
        else if (name_len == 7 && strncasecmp(name, "service", 7) == 0)
                slot = &c->service;
        else if (name_len == 5 && strncasecmp(name, "scope", 5) == 0)
                slot = &c->scope;
        if (slot && !*slot) /* the first of duplicates wins */
                *slot = TAKE_PTR(*value);
}

int auth_challenge_parse(const char *header, AuthChallenge *ret, Error **err) {
        if (strnlen(header, AUTH_CHALLENGE_MAX + 1) > AUTH_CHALLENGE_MAX)
                return error_set(err, -EBADMSG, "WWW-Authenticate header longer than %d bytes", AUTH_CHALLENGE_MAX);

        Candidate bearer = {}, basic = {};
        Candidate *current = NULL; /* the challenge whose parameters follow; NULL: one we ignore */
        bool in_challenge = false;
        int r = 0;
        const char *p = header;
        for (;;) {
                p = skip_ws(p);
                while (*p == ',')
                        p = skip_ws(p + 1);
                if (!*p)
                        break;
                const char *tok = p;
                while (is_tchar(*p))
                        p++;
                size_t tok_len = (size_t) (p - tok);
                if (tok_len == 0) {
                        r = -EBADMSG;
                        break;
                }
                const char *after = skip_ws(p);
                if (in_challenge && *after == '=' && after[1] != '=' ) {
                        /* name=value, a parameter of the current challenge */
                        p = skip_ws(after + 1);
                        _cleanup_free_ char *value = NULL;
                        if (*p == '"') {
                                value = parse_quoted(p + 1, &p);
                                if (!value) {
                                        r = -EBADMSG;
                                        break;
                                }
                        } else {
                                const char *v = p;
                                while (is_tchar(*p))
                                        p++;
                                value = strndup(v, (size_t) (p - v));
                                if (!value) {
                                        r = -ENOMEM;
                                        break;
                                }
                        }
                        p = skip_ws(p);
                        if (*p && *p != ',') {
                                r = -EBADMSG;
                                break;
                        }
                        if (current)
                                set_param(&current->c, tok, tok_len, &value);
                        continue;
                }
                /* a new challenge: SCHEME, maybe followed by a token68 */
                in_challenge = true;
                current = NULL;
                if (tok_len == 6 && strncasecmp(tok, "bearer", 6) == 0 && !bearer.present)
                        current = &bearer;
                else if (tok_len == 5 && strncasecmp(tok, "basic", 5) == 0 && !basic.present)
                        current = &basic;
                if (current) {
                        current->present = true;
                        current->c.scheme = current == &bearer ? AUTH_SCHEME_BEARER : AUTH_SCHEME_BASIC;
                }
                p = after;
                const char *t = p;
                while (is_token68_char(*t))
                        t++;
                const char *t_end = t;
                while (*t == '=')
                        t++;
                t = skip_ws(t);
                if (t_end > p && (*t == '\0' || *t == ',') && (t > t_end || *skip_ws(t_end) != '=')) {
                        /* a token68 ("Basic dGVzdA=="): nothing a registry sends us needs it */
                        p = t;
                        in_challenge = false;
                }
        }

        AuthChallenge *chosen = NULL;
        if (r == 0) {
                if (bearer.present && bearer.c.realm)
                        chosen = &bearer.c;
                else if (basic.present)
                        chosen = &basic.c;
                else if (bearer.present)
                        r = -EBADMSG;
        }
        if (chosen) {
                *ret = *chosen;
                *chosen = (AuthChallenge) {};
        }
        auth_challenge_done(&bearer.c);
        auth_challenge_done(&basic.c);
        if (r == -ENOMEM)
                return error_set(err, r, "out of memory");
        if (r < 0 || !chosen) {
                char q[VALUE_QUOTED_MAX];
                return error_set(err, -EBADMSG, r < 0 ? "malformed WWW-Authenticate header %s"
                                                      : "WWW-Authenticate header %s: no Basic or Bearer challenge with a realm",
                                 value_quote(header, q));
        }
        return 0;
}

void auth_challenge_done(AuthChallenge *c) {
        if (!c)
                return;
        free(c->realm);
        free(c->service);
        free(c->scope);
        *c = (AuthChallenge) {};
}
