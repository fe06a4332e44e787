/* SPDX-License-Identifier: Apache-2.0 */
/* signature-check POLICY REGISTRIES_D REGISTRY REPOSITORY TAG|- DIGEST:
 * signature_policy_check() from the command line, with the file:// fetcher,
 * for test-signature-skopeo.sh. Prints the refusal; exit 0 accepted, 5
 * refused (-EPERM), 1 anything else. POLICY "-" is the default policy. */
#include "image/signature.h"

int main(int argc, char **argv) {
        if (argc != 7) {
                fprintf(stderr, "usage: signature-check POLICY REGISTRIES_D REGISTRY REPOSITORY TAG|- DIGEST\n");
                return 2;
        }
        SignaturePolicy *p = NULL;
        Error *err = NULL;
        int r = signature_policy_load(streq(argv[1], "-") ? NULL : argv[1], &p, &err);
        if (r >= 0)
                r = signature_policy_check(p, argv[2], argv[3], argv[4], streq(argv[5], "-") ? NULL : argv[5], argv[6],
                                           NULL, NULL, &err);
        if (r < 0)
                fprintf(stderr, "signature-check: %s\n", err && err->msg ? err->msg : strerror(-r));
        error_free(err);
        signature_policy_free(p);
        return r == 0 ? 0 : r == -EPERM ? 5 : 1;
}
