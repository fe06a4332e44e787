/* SPDX-License-Identifier: Apache-2.0 */
/* image_reference_parse(): references come from the command line, from pod
 * manifests and from scripts. What it accepts must format to a reference
 * that parses to the same parts (a fixed point after the first format). */
#include "fuzz.h"
#include "image/reference.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        char *s = strndup((const char *) data, size);
        if (!s)
                return 0;
        ImageReference r = {}, again = {};
        Error *err = NULL;
        (void) image_reference_is_remote(s);
        if (image_reference_parse(s, &r, &err) >= 0) {
                if (!image_reference_is_remote(s))
                        fuzz_fail("parsed, but not remote: %s", s);
                if (!r.registry || !r.repository || !!r.tag == !!r.digest)
                        fuzz_fail("incomplete reference from %s", s);
                char *f = image_reference_format(&r);
                if (!f)
                        fuzz_fail("format failed");
                if (image_reference_parse(f, &again, NULL) < 0)
                        fuzz_fail("the formatted %s does not parse", f);
                if (!streq(r.registry, again.registry) || !streq(r.repository, again.repository) ||
                    !streq_ptr(r.tag, again.tag) || !streq_ptr(r.digest, again.digest))
                        fuzz_fail("%s -> %s changed", s, f);
                if (FUZZ_VERBOSE)
                        printf("%s\n", f);
                free(f);
                image_reference_done(&again);
                image_reference_done(&r);
        }
        fuzz_error_done("image_reference_parse", err);
        free(s);
        return 0;
}
