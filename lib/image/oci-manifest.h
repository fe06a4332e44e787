/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The JSON documents of an OCI image (and of docker's schema 2, which has the
 * same shape), parsed from memory: an image index or docker manifest list, an
 * image manifest, an image config. Shared by import (blobs of a layout or an
 * archive) and pull (registry answers). The input is untrusted: it is read
 * only up to OCI_JSON_MAX, every digest is checked for form, every size for
 * sign. Results own their strings; the buffer may be freed at once. */

#include <stdbool.h>
#include <stdint.h>

#include "basic/digest.h"
#include "basic/error.h"

#define OCI_JSON_MAX (4U << 20)

#define OCI_MT_INDEX "application/vnd.oci.image.index.v1+json"
#define OCI_MT_MANIFEST "application/vnd.oci.image.manifest.v1+json"
#define OCI_MT_CONFIG "application/vnd.oci.image.config.v1+json"
#define DOCKER_MT_LIST "application/vnd.docker.distribution.manifest.list.v2+json"
#define DOCKER_MT_MANIFEST "application/vnd.docker.distribution.manifest.v2+json"
#define DOCKER_MT_CONFIG "application/vnd.docker.container.image.v1+json"
#define DOCKER_MT_LAYER "application/vnd.docker.image.rootfs.diff.tar"
#define OCI_ANNOTATION_REF_NAME "org.opencontainers.image.ref.name"

/* A content descriptor. Fields the document leaves out are NULL. */
typedef struct OciDescriptor {
        char *media_type;
        char digest[DIGEST_STRING_SIZE];        /* always a valid sha256 digest */
        uint64_t size;
        char *ref_name;                         /* annotation org.opencontainers.image.ref.name */
        char *os, *architecture, *variant;      /* "platform", in index entries */
} OciDescriptor;

void oci_descriptor_done(OciDescriptor *d);

/* Which platform to choose. variant NULL or "": any variant. */
typedef struct OciPlatform {
        const char *os, *architecture, *variant;
} OciPlatform;

/* "OS/ARCH[/VARIANT]" (--platform) into the buffers; NULL: linux and this
 * machine's architecture in OCI's words (amd64, arm64, ...), any variant.
 * -EINVAL with a message for anything else. */
#define OCI_PLATFORM_PART_MAX 32
int oci_platform_parse(const char *s, char os[OCI_PLATFORM_PART_MAX], char architecture[OCI_PLATFORM_PART_MAX],
                       char variant[OCI_PLATFORM_PART_MAX], Error **err);

/* media type of an image index or a docker manifest list */
bool oci_media_type_is_index(const char *media_type);
/* media type of an image manifest (OCI or docker schema 2) */
bool oci_media_type_is_manifest(const char *media_type);
/* a layer media type we can apply (tar, tar+gzip, tar+zstd) */
bool oci_layer_media_type_is_supported(const char *media_type);

typedef enum OciCompression {
        OCI_COMPRESSION_UNKNOWN,        /* NULL media type: look at the bytes */
        OCI_COMPRESSION_NONE,
        OCI_COMPRESSION_GZIP,
        OCI_COMPRESSION_ZSTD,
} OciCompression;
OciCompression oci_layer_media_type_compression(const char *media_type);

/* Whether a manifest-like document is an index (1) or an image manifest (0),
 * from media_type (a Content-Type; NULL: not known) or else from its own
 * "mediaType" or its shape ("manifests" vs "layers"). */
int oci_document_is_index(const void *data, size_t size, const char *media_type, const char *what, Error **err);

/* Whether the ref name an index or archive gives an image matches the one
 * asked for: want NULL matches anything, "busybox" matches "busybox:latest",
 * a bare tag matches a full name's tag. */
bool oci_ref_name_matches(const char *want, const char *ref_name);

/* Chooses, among the entries of an image index or docker manifest list, the
 * one for platform whose ref name matches ref (NULL: any; "busybox" matches
 * "busybox:latest", a bare tag matches a full name's tag). An entry without a
 * platform matches any. -ENOENT when none does (the message lists what the
 * index has), -ENOTUNIQ when more than one does. The entry chosen may itself
 * be an index (oci_media_type_is_index()): then the caller reads it and
 * chooses again, with ref NULL. "what" names the document in errors. */
int oci_index_select(const void *data, size_t size, const char *what, const OciPlatform *platform, const char *ref,
                     OciDescriptor *ret, Error **err);

typedef struct OciManifest {
        char *media_type;               /* as the document says, or NULL */
        OciDescriptor config;
        OciDescriptor *layers;          /* in order, lowest first; media types supported */
        size_t n_layers;
} OciManifest;

/* An image manifest, schemaVersion 2, OCI or docker. */
int oci_manifest_parse(const void *data, size_t size, const char *what, OciManifest *ret, Error **err);
void oci_manifest_done(OciManifest *m);

typedef struct OciConfig {
        char *os, *architecture, *variant;      /* NULL when absent */
        char **diff_ids;        /* rootfs.diff_ids, valid digests; NULL when there is no rootfs */
        size_t n_diff_ids;
} OciConfig;

/* An image config: its platform and layer diff_ids (the rest, the app's
 * defaults, is image_app_from_oci_config()'s). */
int oci_config_parse(const void *data, size_t size, const char *what, OciConfig *ret, Error **err);
void oci_config_done(OciConfig *c);
