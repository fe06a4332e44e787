/* SPDX-License-Identifier: Apache-2.0 */
/* signature_payload_parse(): the content of a "simple signing" signature,
 * which arrives from a lookaside nobody vouches for (its OpenPGP signature
 * is checked first, but the parser must hold whatever a key ever signed).
 * What is accepted has all of its critical fields, and the identity rules
 * of the policy behave on whatever reference it names. */
#include "fuzz.h"
#include "image/policy.h"
#include "image/signature.h"

static void check_identity(const char *signed_reference) {
        DockerReference intended = {}, self = {};
        if (docker_reference_parse("registry.test:5000/ns/app:v1", &intended) < 0)
                fuzz_fail("the fixed reference is refused");
        PolicyRequirement req = { .identity_reference = (char *) "registry.test:5000/ns/app:v1" };
        for (int i = POLICY_IDENTITY_MATCH_REPO_DIGEST_OR_EXACT; i <= POLICY_IDENTITY_EXACT_REPOSITORY; i++) {
                req.identity = (PolicyIdentity) i;
                (void) policy_identity_matches(&req, &intended, signed_reference);
        }
        /* A reference always matches itself by repository, and exactly
         * when it names a tag or digest. */
        if (docker_reference_parse(signed_reference, &self) >= 0) {
                req.identity = POLICY_IDENTITY_MATCH_REPOSITORY;
                if (!policy_identity_matches(&req, &self, signed_reference))
                        fuzz_fail("\"%s\" is not in its own repository", signed_reference);
                req.identity = POLICY_IDENTITY_MATCH_EXACT;
                if (policy_identity_matches(&req, &self, signed_reference) != (self.tag || self.digest))
                        fuzz_fail("\"%s\": matchExact against itself", signed_reference);
        }
        docker_reference_done(&self);
        docker_reference_done(&intended);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        SignaturePayload p = {};
        Error *err = NULL;
        int r = signature_payload_parse((const char *) data, size, "input", &p, &err);
        if (r < 0) {
                if (r != -EBADMSG && r != -ENOMEM && r != -EFBIG)
                        fuzz_fail("signature_payload_parse returned %d", r);
                if (err && !startswith(strempty(err->msg), "input"))
                        fuzz_fail("the message does not name the signature: %s", err->msg);
                fuzz_error_done("signature_payload_parse", err);
                return 0;
        }
        if (!p.manifest_digest || !p.docker_reference)
                fuzz_fail("a payload without its digest or identity accepted");
        check_identity(p.docker_reference);
        if (FUZZ_VERBOSE)
                fprintf(stderr, "  valid: %s for %s\n", p.docker_reference, p.manifest_digest);
        signature_payload_done(&p);
        return 0;
}
