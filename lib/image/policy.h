/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The signature policy: a file with the format and the semantics of
 * containers' policy.json (containers-policy.json(5)), of which sdpod knows
 * the "docker" transport and the requirements insecureAcceptAnything, reject
 * and signedBy (GPG keys, "simple signing"). The file is the operator's:
 * it is trusted, but parsed strictly, and every error names the file and the
 * field ("transports.docker[\"SCOPE\"][0].keyPath"). Anything it does not
 * know (a requirement type, a key type, a field) is refused, never taken for
 * "accept". signature.c applies what this finds. */

#include <stdbool.h>
#include <stddef.h>

#include "basic/error.h"

/* Where the policy is read from when no file is named. */
#define POLICY_DEFAULT_PATH "/etc/containers/policy.json"
/* A missing POLICY_DEFAULT_PATH means this policy (documented in sdpod(1)
 * and sdpod-registries(5)): every image is accepted, as containers' own
 * shipped default does. */
#define POLICY_BUILTIN_DEFAULT "{\"default\":[{\"type\":\"insecureAcceptAnything\"}]}"

#define POLICY_FILE_MAX (4U << 20)
#define POLICY_KEY_FILE_MAX (1U << 20)

typedef enum PolicyRequirementType {
        POLICY_INSECURE_ACCEPT_ANYTHING,
        POLICY_REJECT,
        POLICY_SIGNED_BY,
        /* a type containers know that sdpod does not implement
         * (sigstoreSigned): refuses every image of its scope */
        POLICY_UNSUPPORTED,
} PolicyRequirementType;

/* signedBy's signedIdentity: which identity a signature must claim. */
typedef enum PolicyIdentity {
        POLICY_IDENTITY_MATCH_REPO_DIGEST_OR_EXACT, /* the default */
        POLICY_IDENTITY_MATCH_EXACT,
        POLICY_IDENTITY_MATCH_REPOSITORY,
        POLICY_IDENTITY_EXACT_REFERENCE,
        POLICY_IDENTITY_EXACT_REPOSITORY,
} PolicyIdentity;

typedef struct PolicyRequirement {
        PolicyRequirementType type;
        /* "FILE: transports.docker[\"SCOPE\"][0]", for messages */
        char *where;
        /* signedBy: the key files (absolute; a relative keyPath is taken
         * relative to the policy file's directory), or the decoded keyData */
        char **key_paths;
        char *key_data;
        size_t key_data_size;
        PolicyIdentity identity;
        /* exactReference/exactRepository: the normalized reference or
         * repository the signature must name */
        char *identity_reference;
        /* POLICY_UNSUPPORTED: why */
        char *unsupported;
} PolicyRequirement;

typedef struct PolicyScope {
        /* "default", "docker \"\"" or the docker scope as the file writes it */
        char *name;
        PolicyRequirement *requirements;
        size_t n_requirements;
} PolicyScope;

typedef struct Policy {
        char *path; /* the file, or "built-in default policy" */
        PolicyScope fallback; /* "default" */
        PolicyScope *docker;  /* transports.docker, "" included */
        size_t n_docker;
} Policy;

/* Parses a policy document; what names it in errors (the file). -EBADMSG
 * for anything refused. A relative keyPath is resolved against base_dir
 * (NULL: the current directory). */
int policy_parse(const char *text, size_t size, const char *what, const char *base_dir, Policy **ret, Error **err);
/* Reads path; NULL reads POLICY_DEFAULT_PATH, and when that does not exist
 * uses POLICY_BUILTIN_DEFAULT. A named file that is missing is an error
 * (-ENOENT). */
int policy_load(const char *path, Policy **ret, Error **err);
void policy_free(Policy *p);
static inline void policy_freep(Policy **p) { policy_free(*p); }

/* The requirements for the image REGISTRY/REPOSITORY[:TAG] (by digest when
 * tag is NULL): the most specific docker scope, else the docker "" scope,
 * else "default". Never NULL. */
const PolicyScope *policy_lookup(const Policy *p, const char *registry, const char *repository,
                                 const char *tag, const char *digest);

/* A docker reference, normalized as docker and containers do: "busybox"
 * is docker.io/library/busybox, index.docker.io is docker.io. */
typedef struct DockerReference {
        char *name;   /* "DOMAIN/PATH" */
        char *tag;    /* or NULL */
        char *digest; /* "sha256:HEX" or NULL */
} DockerReference;

/* -EINVAL when s is not a valid reference (the distribution's grammar;
 * only sha256 digests). */
int docker_reference_parse(const char *s, DockerReference *ret);
void docker_reference_done(DockerReference *r);
/* "NAME[:TAG][@DIGEST]"; NULL on ENOMEM. */
char *docker_reference_to_string(const DockerReference *r);

/* The scopes a reference matches, most specific first: "NAME:TAG" (or
 * "NAME@DIGEST"), "NAME", each parent namespace up to "HOST[:PORT]", then
 * "*.DOMAIN" for each parent domain of HOST (its port dropped). The same
 * order serves registries.d's "docker:" entries. NULL on ENOMEM. */
char **docker_reference_scopes(const DockerReference *r);

/* Whether the identity a signature claims (signed_reference, untrusted
 * text) is one that req accepts for the image intended (with its tag or
 * digest). */
bool policy_identity_matches(const PolicyRequirement *req, const DockerReference *intended,
                             const char *signed_reference);
const char *policy_identity_to_string(PolicyIdentity i);
