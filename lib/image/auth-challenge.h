/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The WWW-Authenticate header of a registry's 401 answer (RFC 7235):
 * challenges "SCHEME param=value, param="quoted value", ..." separated by
 * commas. A registry asks for Basic credentials, or for a Bearer token from
 * a token server: realm (its URL), service and scope ("repository:NAME:pull").
 * The header is untrusted: parsed within its length, values bounded. */

#include "basic/error.h"

#define AUTH_CHALLENGE_MAX 8192 /* a longer header is refused */

typedef enum AuthScheme {
        AUTH_SCHEME_BASIC,
        AUTH_SCHEME_BEARER,
} AuthScheme;

typedef struct AuthChallenge {
        AuthScheme scheme;
        char *realm;   /* Bearer: always set; Basic: optional */
        char *service; /* NULL when not given */
        char *scope;   /* NULL when not given */
} AuthChallenge;

/* The first Bearer challenge of header (which must have a realm), else the
 * first Basic one. -EBADMSG for a malformed header or one with neither.
 * ret is untouched on failure. */
int auth_challenge_parse(const char *header, AuthChallenge *ret, Error **err);
void auth_challenge_done(AuthChallenge *c);
