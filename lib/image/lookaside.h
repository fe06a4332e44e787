/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* Where an image's signatures are: the "lookaside" of containers'
 * registries.d (containers-registries.d(5)). A directory of YAML files
 * (*.yaml, read in name order, merged) holding
 *
 *     default-docker:
 *       lookaside: URL              # "sigstore" is the older name
 *     docker:
 *       HOST[:PORT][/PATH][:TAG]:   # a scope, as in policy.json
 *         lookaside: URL
 *
 * The most specific scope that gives a URL wins, then default-docker. The
 * signatures of REGISTRY/REPOSITORY with manifest sha256:HEX are
 * URL/REPOSITORY@sha256=HEX/signature-1, -2, ... (the layout skopeo copy
 * --sign-by writes into a lookaside-staging directory). The files are the
 * operator's: errors name the file and the key. Keys sdpod does not use
 * (lookaside-staging, use-sigstore-attachments, ...) are ignored. */

#include <stddef.h>

#include "basic/error.h"

#define LOOKASIDE_DEFAULT_DIR "/etc/containers/registries.d"
#define LOOKASIDE_FILE_MAX (1U << 20)
#define LOOKASIDE_FILES_MAX 1024U

typedef struct LookasideEntry {
        char *scope;  /* NULL: default-docker */
        char *url;    /* "lookaside", else "sigstore"; NULL when neither */
        char *where;  /* "FILE: docker[\"SCOPE\"]" or "FILE: default-docker" */
} LookasideEntry;

typedef struct Lookaside {
        LookasideEntry *entries;
        size_t n_entries;
} Lookaside;

/* Reads every *.yaml of dir. NULL: LOOKASIDE_DEFAULT_DIR, where a missing
 * directory means no lookaside at all; a named directory must exist. */
int lookaside_load(const char *dir, Lookaside **ret, Error **err);
/* Adds the entries of one file's text (what names it); a scope defined twice
 * (in this or an earlier file) is -EBADMSG. */
int lookaside_parse(Lookaside *l, const char *text, size_t size, const char *what, Error **err);
Lookaside *lookaside_new(void);
void lookaside_free(Lookaside *l);
static inline void lookaside_freep(Lookaside **l) { lookaside_free(*l); }

/* The entry that gives the signature location of REGISTRY/REPOSITORY
 * (with tag, or by digest when tag is NULL): NULL when none does. */
const LookasideEntry *lookaside_find(const Lookaside *l, const char *registry, const char *repository,
                                     const char *tag, const char *digest);

/* "BASE/REPOSITORY@sha256=HEX/signature-INDEX" (INDEX from 1); NULL on
 * ENOMEM or a digest that is not sha256. */
char *lookaside_signature_url(const char *base, const char *repository, const char *manifest_digest, unsigned index);
