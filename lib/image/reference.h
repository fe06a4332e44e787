/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* References to images in a registry, as the distribution spec writes them:
 * "[docker://]REGISTRY/REPOSITORY[:TAG|@sha256:HEX]". The registry is never
 * guessed: a reference whose first component is not a host (it contains a
 * '.' or a ':', or is "localhost") is refused, so "busybox" cannot silently
 * mean an image of some default registry. */

#include <stdbool.h>

#include "basic/error.h"

typedef struct ImageReference {
        char *registry;   /* "host[:port]" (an IPv6 host in brackets) */
        char *repository; /* "library/busybox": lower case, [a-z0-9._/-] per the distribution spec */
        char *tag;        /* NULL when digest is set */
        char *digest;     /* "sha256:..." or NULL */
} ImageReference;

/* Docker Hub: references name it docker.io (index.docker.io is taken for
 * it), a one-component repository there is library/NAME, and its API is
 * served by registry-1.docker.io. */
#define DOCKER_HUB "docker.io"
#define DOCKER_HUB_ENDPOINT "registry-1.docker.io"

#define IMAGE_REFERENCE_NAME_MAX 255 /* REGISTRY/REPOSITORY, as the distribution spec bounds it */
#define IMAGE_REFERENCE_TAG_MAX 128

/* Parses s. No tag and no digest: tag "latest". A tag and a digest
 * ("NAME:TAG@sha256:HEX"): the digest wins and the tag is dropped, as it
 * only named what the digest pins. Docker Hub names are normalized:
 * "index.docker.io/busybox" is "docker.io/library/busybox". No registry: -EINVAL, "S: name the
 * registry, e.g. REGISTRY/S". ret is untouched on failure. */
int image_reference_parse(const char *s, ImageReference *ret, Error **err);
void image_reference_done(ImageReference *r);
static inline void image_reference_donep(ImageReference *r) { image_reference_done(r); }
#define _cleanup_image_reference_ _cleanup_(image_reference_donep)

/* "REGISTRY/REPOSITORY:TAG" or "REGISTRY/REPOSITORY@DIGEST"; NULL on ENOMEM. */
char *image_reference_format(const ImageReference *r);

/* Whether s is meant for a registry: "docker://..." or a first component
 * (before a '/') that is a host. Says nothing about s being valid. */
bool image_reference_is_remote(const char *s);

/* Whether s is a registry as a reference names it: "host", "host:port",
 * "[v6]:port". For login/logout's argument. */
bool image_registry_is_valid(const char *s);
/* A repository ("library/busybox") and a tag, as the distribution spec
 * allows them. */
bool image_repository_is_valid(const char *s);
bool image_tag_is_valid(const char *s);
