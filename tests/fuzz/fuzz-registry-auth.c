/* SPDX-License-Identifier: Apache-2.0 */
/* registry_auth_parse(): an auth.json or ~/.docker/config.json, which other
 * tools write and a user may have edited; and the base64 of its entries.
 * Found credentials have a user without ':'; base64 decodes what it
 * encodes. */
#include "basic/base64.h"
#include "fuzz.h"
#include "image/registry-auth.h"

static void lookup(const uint8_t *data, size_t size, const char *registry) {
        char *user = NULL, *password = NULL;
        Error *err = NULL;
        int r = registry_auth_parse((const char *) data, size, "fuzz", registry, &user, &password, &err);
        if (r == 1) {
                if (!user || !password || !*user || strchr(user, ':'))
                        fuzz_fail("bad credentials returned for %s", registry);
                if (FUZZ_VERBOSE)
                        printf("%s: user %s\n", registry, user);
        } else if (r == 0) {
                if (user || password)
                        fuzz_fail("credentials set without a match");
        } else if (r != -EBADMSG && r != -ENOMEM)
                fuzz_fail("unexpected error %d", r);
        free(user);
        free(password);
        fuzz_error_done("registry_auth_parse", err);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        lookup(data, size, "r.example");
        lookup(data, size, "127.0.0.1:5000");

        /* base64 both ways on the raw input */
        char *enc = base64_encode(data, size), *dec = NULL;
        size_t n = 0;
        if (!enc)
                return 0;
        int r = base64_decode(enc, strlen(enc), &dec, &n);
        if (r != 0 || n != size || memcmp(dec, data, size) != 0)
                fuzz_fail("base64 does not decode what it encoded");
        free(dec);
        free(enc);
        dec = NULL;
        /* What decodes is bounded by its input, and survives a round trip. */
        if (base64_decode((const char *) data, size, &dec, &n) == 0) {
                if (n > size / 4 * 3)
                        fuzz_fail("decoded base64 is longer than its input allows");
                char *again = base64_encode(dec, n), *back = NULL;
                size_t m = 0;
                if (again && (base64_decode(again, strlen(again), &back, &m) != 0 || m != n || memcmp(back, dec, n) != 0))
                        fuzz_fail("base64 does not decode what it encoded");
                free(back);
                free(again);
                free(dec);
        }
        return 0;
}
