/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* Whether an image may be pulled: the signature policy (policy.h) applied
 * to the image, with the "simple signing" signatures found in the lookaside
 * (lookaside.h), verified with gpgme in a keyring of the policy's keys only.
 *
 * A simple signing signature is an OpenPGP signed message (not detached)
 * whose content is the JSON
 *
 *     {"critical": {"type": "atomic container signature",
 *                   "image": {"docker-manifest-digest": "sha256:..."},
 *                   "identity": {"docker-reference": "HOST/REPO:TAG"}},
 *      "optional": {"creator": "...", "timestamp": N}}
 *
 * as skopeo copy --sign-by and skopeo standalone-sign write it. Signatures
 * and lookaside answers are untrusted: at most SIGNATURE_COUNT_MAX are read,
 * each at most SIGNATURE_SIZE_MAX bytes, its content too; the JSON is parsed
 * strictly (an unknown field of "critical" refuses the signature). */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "basic/error.h"

#define SIGNATURE_COUNT_MAX 64U
#define SIGNATURE_SIZE_MAX (64U << 10)
#define SIGNATURE_TYPE "atomic container signature"

typedef struct SignaturePolicy SignaturePolicy;

/* path NULL: /etc/containers/policy.json, and when that is missing the
 * built-in policy {"default":[{"type":"insecureAcceptAnything"}]}. A named
 * file that is missing is an error (-EINVAL, see below); a malformed one
 * -EBADMSG, the message naming the file and the field.
 *
 * Here and in signature_policy_check(), a file or directory the operator
 * names that does not exist (the policy file, the registries.d directory) is
 * -EINVAL, and a key file the policy names that does not exist is a broken
 * policy, -EBADMSG: never -ENOENT, which callers take for an unknown image. */
int signature_policy_load(const char *path, SignaturePolicy **ret, Error **err);
void signature_policy_free(SignaturePolicy *p);
static inline void signature_policy_freep(SignaturePolicy **p) { signature_policy_free(*p); }

/* Fetches a URL: 0 and the body, -ENOENT when there is none (404/missing
 * file). max bounds the body: a larger one is -EFBIG. */
typedef int (*SignatureFetch)(const char *url, size_t max, char **ret, size_t *ret_size, void *userdata, Error **err);

/* A SignatureFetch for file:// URLs only (any other is -EPROTONOSUPPORT),
 * the one signature_policy_check() uses when given none. */
int signature_fetch_file(const char *url, size_t max, char **ret, size_t *ret_size, void *userdata, Error **err);

/* 0: the policy accepts the image REGISTRY/REPOSITORY[:TAG] whose manifest has
 * manifest_digest (the digest of the manifest the reference names: of the
 * index when it is one, as containers check it; skopeo copy --all --sign-by
 * signs the index and each image under it); tag NULL means the image
 * is named by that digest. -EPERM: refused, the message says which
 * requirement failed (rejected scope, no signature, bad signature, wrong key,
 * wrong digest or identity). Other errors: the policy's key files or the
 * registries.d could not be used (see above), or fetch failed (its error,
 * as it came).
 * Signatures come from the lookaside that registries_d (NULL: the default
 * directory) configures for the reference:
 * BASE/REPOSITORY@sha256=HEX/signature-N, N = 1, 2, ... until -ENOENT.
 * Nothing is fetched when no requirement of the applying scope needs a
 * signature. fetch NULL: signature_fetch_file(). */
int signature_policy_check(const SignaturePolicy *p, const char *registries_d, const char *registry,
                           const char *repository, const char *tag_or_null, const char *manifest_digest,
                           SignatureFetch fetch, void *userdata, Error **err);

/* The policy's file ("built-in default policy ..." when none was read). */
const char *signature_policy_path(const SignaturePolicy *p);

/* The content of a simple signing signature, as signed (untrusted text). */
typedef struct SignaturePayload {
        char *manifest_digest;  /* critical.image.docker-manifest-digest */
        char *docker_reference; /* critical.identity.docker-reference */
        char *creator;          /* optional.creator, or NULL */
        int64_t timestamp;      /* optional.timestamp, or 0 */
} SignaturePayload;

/* Parses and checks the JSON content of a signature: -EBADMSG, the message
 * beginning with what, for anything but the format above. */
int signature_payload_parse(const char *data, size_t size, const char *what, SignaturePayload *ret, Error **err);
void signature_payload_done(SignaturePayload *p);
