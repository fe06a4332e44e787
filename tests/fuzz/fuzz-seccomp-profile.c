/* SPDX-License-Identifier: Apache-2.0 */
/* An OCI seccomp profile (seccomp/seccomp-oci.h): a Localhost profile, or
 * whatever a CRI client put in a spec's linux.seccomp. What is accepted
 * must compile to a program the kernel takes (at most BPF_MAXINSNS
 * instructions, a whole number of them), whose text form app-domain
 * decodes back to the same bytes; what is refused says why, names the
 * profile and leaves nothing allocated. */
#include <linux/filter.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "seccomp/seccomp-oci.h"

static int hex(char c) {
        return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        SeccompProgram p = {};
        Error *err = NULL;
        if (seccomp_oci_compile_text((const char *) data, size, "profile", &p, &err) < 0) {
                if (!err || !strstr(err->msg, "profile"))
                        fuzz_fail("an error that does not name the profile: %s", err ? err->msg : "(none)");
                if (p.insns)
                        fuzz_fail("a program left after an error");
                fuzz_error_done("profile", err);
                return 0;
        }
        if (!p.insns || p.n_insns == 0 || p.n_insns > BPF_MAXINSNS)
                fuzz_fail("a program of %zu instructions", p.n_insns);
        char *text = NULL;
        if (seccomp_program_to_text(&p, &text) < 0)
                fuzz_fail("no text");
        const char *colon = strchr(text, ':');
        const unsigned char *b = (const unsigned char *) p.insns;
        if (!colon || strlen(colon + 1) != p.n_insns * sizeof(struct sock_filter) * 2)
                fuzz_fail("text of the wrong length");
        for (size_t i = 0; i < p.n_insns * sizeof(struct sock_filter); i++)
                if (hex(colon[1 + 2 * i]) * 16 + hex(colon[2 + 2 * i]) != b[i])
                        fuzz_fail("text differs from the program at byte %zu", i);
        free(text);
        seccomp_program_done(&p);
        return 0;
}
