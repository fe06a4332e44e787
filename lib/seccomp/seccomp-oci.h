/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* An OCI seccomp profile (runtime-spec linux.seccomp: what containerd
 * sends for a Kubernetes RuntimeDefault or Localhost profile, and what
 * ctr --seccomp sends) compiled with libseccomp into the BPF program the
 * kernel runs, exactly as given: defaultAction (and defaultErrnoRet), the
 * architectures, the flags the kernel takes, and each rule's names,
 * action, errnoRet and argument comparisons (args with distinct indices
 * are one rule, all of them must match; a repeated index makes one rule
 * per comparison, as runc does).
 *
 * The profile is hostile input (whoever asked containerd wrote it): the
 * object is checked field by field, unknown fields refused (a restriction
 * sdpod would not apply must not pass for applied), and bounded
 * (SECCOMP_OCI_RULES_MAX rules, SECCOMP_OCI_NAMES_MAX names in all; a
 * program longer than the kernel's BPF_MAXINSNS is refused). A name that
 * is not a system call name at all is refused; a well-formed name that
 * this libseccomp does not know (a call newer than it) is skipped, as
 * runc skips it: the default action covers it. SCMP_ACT_NOTIFY (a
 * listener on the host) is refused. */

#include <json-c/json.h>
#include <linux/filter.h>
#include <stddef.h>
#include <stdint.h>

#include "basic/error.h"

#define SECCOMP_OCI_RULES_MAX 4096
#define SECCOMP_OCI_NAMES_MAX 8192
#define SECCOMP_OCI_ARGS_MAX 6

typedef struct SeccompProgram {
        struct sock_filter *insns;
        size_t n_insns;
        unsigned flags;         /* SECCOMP_FILTER_FLAG_LOG, _SPEC_ALLOW */
} SeccompProgram;

/* Compiles profile (the linux.seccomp object); what names it in errors
 * ("linux.seccomp"). -EINVAL naming the field for a bad profile. */
int seccomp_oci_compile(struct json_object *profile, const char *what, SeccompProgram *ret, Error **err);
/* The same from JSON text (strict, bounded by size). */
int seccomp_oci_compile_text(const char *data, size_t size, const char *what, SeccompProgram *ret, Error **err);
void seccomp_program_done(SeccompProgram *p);

/* The program as helpers/app-domain takes it (SECCOMP_PROGRAM_ENV):
 * "FLAGS:HEX" with FLAGS in decimal and each instruction's 8 bytes in
 * lowercase hexadecimal, in the machine's byte order. */
#define SECCOMP_PROGRAM_ENV "SDPOD_APP_SECCOMP"
int seccomp_program_to_text(const SeccompProgram *p, char **ret);
