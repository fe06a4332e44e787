/* SPDX-License-Identifier: Apache-2.0 */
/* lookaside_parse(): one file of registries.d (YAML through libyaml). The
 * files are the operator's, but a YAML parser is a large surface and a
 * malformed file must be refused with its name, never crash or loop. A
 * file read twice defines every scope twice: the second read must refuse
 * it (or define nothing). */
#include "fuzz.h"
#include "image/lookaside.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        Lookaside *l = lookaside_new();
        if (!l)
                return 0;
        Error *err = NULL;
        int r = lookaside_parse(l, (const char *) data, size, "input", &err);
        if (r < 0) {
                if (r != -EBADMSG && r != -ENOMEM)
                        fuzz_fail("lookaside_parse returned %d", r);
                if (err && !startswith(strempty(err->msg), "input"))
                        fuzz_fail("the message does not name the file: %s", err->msg);
                fuzz_error_done("lookaside_parse", err);
                lookaside_free(l);
                return 0;
        }
        for (size_t i = 0; i < l->n_entries; i++) {
                const LookasideEntry *e = &l->entries[i];
                if (!e->where || (e->url && !startswith(e->url, "file://") && !startswith(e->url, "http://") &&
                                  !startswith(e->url, "https://")))
                        fuzz_fail("entry %zu: bad URL or no place", i);
        }
        const LookasideEntry *e = lookaside_find(l, "registry.test:5000", "ns/app", "v1", NULL);
        if (e) {
                _cleanup_free_ char *url = lookaside_signature_url(
                        e->url, "ns/app", "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", 1);
                if (url && !endswith(url, "/ns/app@sha256=0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef/signature-1"))
                        fuzz_fail("a signature URL of the wrong shape: %s", url);
        }
        size_t n = l->n_entries;
        err = NULL;
        r = lookaside_parse(l, (const char *) data, size, "again", &err);
        if (n > 0 && r != -EBADMSG && r != -ENOMEM)
                fuzz_fail("a file read twice did not refuse its own scopes");
        fuzz_error_done("lookaside_parse (again)", err);
        if (FUZZ_VERBOSE)
                fprintf(stderr, "  valid: %zu entries\n", n);
        lookaside_free(l);
        return 0;
}
