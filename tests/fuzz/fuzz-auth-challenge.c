/* SPDX-License-Identifier: Apache-2.0 */
/* auth_challenge_parse(): the WWW-Authenticate header of a registry's 401,
 * which any registry (or whoever sits between us and a plain-http one)
 * writes. What it accepts must be consistent: a Bearer challenge has a
 * realm, and no value is longer than the header. */
#include "fuzz.h"
#include "image/auth-challenge.h"

static void check_value(const char *v, size_t size) {
        if (v && strlen(v) > size)
                fuzz_fail("a value longer than the header");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        char *header = strndup((const char *) data, size);
        if (!header)
                return 0;
        AuthChallenge c = {};
        Error *err = NULL;
        int r = auth_challenge_parse(header, &c, &err);
        if (r >= 0) {
                if (c.scheme != AUTH_SCHEME_BASIC && c.scheme != AUTH_SCHEME_BEARER)
                        fuzz_fail("unknown scheme %d", (int) c.scheme);
                if (c.scheme == AUTH_SCHEME_BEARER && !c.realm)
                        fuzz_fail("a Bearer challenge without a realm accepted");
                check_value(c.realm, size);
                check_value(c.service, size);
                check_value(c.scope, size);
                if (FUZZ_VERBOSE)
                        printf("%s realm=%s service=%s scope=%s\n", c.scheme == AUTH_SCHEME_BEARER ? "bearer" : "basic",
                               strempty(c.realm), strempty(c.service), strempty(c.scope));
                auth_challenge_done(&c);
        } else {
                if (r != -EBADMSG && r != -ENOMEM)
                        fuzz_fail("unexpected error %d", r);
                if (c.realm || c.service || c.scope)
                        fuzz_fail("ret touched on failure");
        }
        fuzz_error_done("auth_challenge_parse", err);
        free(header);
        return 0;
}
