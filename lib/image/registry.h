/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* A client of the OCI distribution API (the /v2/ HTTP API of every image
 * registry), with libcurl. Everything a registry answers is untrusted: bodies
 * are read bounded (or streamed to a sink that checks them), manifests are
 * checked against their digest, headers are parsed within bounds, and
 * credentials go to the registry's own origin only: a redirect to another
 * host (blob storage) gets none, a redirect to another protocol than http(s)
 * is refused, and so is one from https to http unless the registry is
 * insecure.
 *
 * Authentication follows the registry's 401 challenge (auth-challenge.h):
 * Basic credentials, or a Bearer token asked of the challenge's realm for
 * scope "repository:NAME:pull" (with the Basic credentials when there are
 * some). The token is shared by every call on one Registry.
 *
 * TLS is verified with the system's CAs plus the certs.d ones
 * (registry-config.h). An insecure registry (registries.json, or
 * tls_verify 0) is tried over https without verification first and over
 * plain http when the TLS handshake fails, as the containers tools do; the
 * first answer fixes the scheme for the Registry's life.
 *
 * Transfers fail when no byte arrived for 30 s, or a connection (TLS
 * handshake included) took more than 30 s to open; $SDPOD_REGISTRY_STALL_TIMEOUT
 * seconds instead of 30, for tests. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "basic/digest.h"
#include "basic/error.h"
#include "image/reference.h"

typedef struct RegistryOptions {
        const char *auth_file;     /* NULL: the search order of registry-auth.h */
        const char *cert_dir;      /* NULL: the certs.d search */
        int tls_verify;            /* -1: from registries.json (default verify), 0, 1 */
        const char *username, *password; /* explicit; NULL: from the auth file */
        /* NULL, or checked often; nonzero stops any transfer with -ECANCELED */
        int (*interrupted)(void);
} RegistryOptions;

/* One registry and one repository of it (ref's tag and digest are not
 * used; ref->repository may be NULL for registry_ping() alone). Nothing is
 * sent before the first call. Thread-safe for registry_get_blob() and
 * registry_get_url(); the other calls may run concurrently with them too. */
typedef struct Registry Registry;
int registry_open(const ImageReference *ref, const RegistryOptions *opts, Registry **ret, Error **err);
void registry_free(Registry *r);
static inline void registry_freep(Registry **r) { registry_free(*r); }
#define _cleanup_registry_ _cleanup_(registry_freep)

/* GET /v2/ with authentication: whether the registry answers and takes the
 * credentials (login's check). */
int registry_ping(Registry *r, Error **err);

#define REGISTRY_MANIFEST_MAX (4U << 20)
/* GET (head=false) or HEAD manifests/REFERENCE (a tag or a digest) with Accept
 * for OCI manifest+index and docker schema2 manifest+list. GET: the body
 * (NUL-terminated, at most REGISTRY_MANIFEST_MAX), its sha256 checked against a
 * digest reference and against Docker-Content-Digest when given; ret_digest
 * is the body's. HEAD: only the digest (Docker-Content-Digest, or the
 * reference when it is a digest; -EPROTO when neither) and the media type;
 * ret_body and ret_size may be NULL. The media type is Content-Type's (without
 * parameters), else the body's "mediaType". -ENOENT: unknown repository,
 * tag or digest (the message names it). */
int registry_get_manifest(Registry *r, const char *reference, bool head, char **ret_body, size_t *ret_size,
                          char **ret_media_type, char ret_digest[DIGEST_STRING_SIZE], Error **err);

/* Streams blob DIGEST from byte offset (Range when offset > 0) into sink,
 * following redirects (credentials never sent to another host). Returns >= 0:
 * the offset the data starts at, which is always offset: a server that
 * ignores Range sends the whole blob, and its first offset bytes are dropped
 * here, so the sink never has to restart. A sink's negative return stops the
 * transfer with that error (the message then only says which blob; a sink
 * with a message of its own keeps it in userdata). The blob's digest and size
 * are the caller's to check. Safe to call from several threads at once on
 * one Registry. */
typedef int (*RegistrySink)(const void *data, size_t size, void *userdata);
int64_t registry_get_blob(Registry *r, const char *digest, uint64_t offset, RegistrySink sink, void *userdata,
                          Error **err);

/* A small GET of any URL (http, https, file) with this registry's TLS
 * settings and without its credentials (signature lookaside); at most max
 * bytes (-EFBIG beyond). -ENOENT on 404 or a missing file. */
int registry_get_url(Registry *r, const char *url, size_t max, char **ret, size_t *ret_size, Error **err);

/* Errors: -ENOENT unknown, -EACCES unauthorized (the message says how to log
 * in), -EHOSTUNREACH (no such host, or TLS failed) / -ECONNREFUSED /
 * -ETIMEDOUT (nothing for 30 s) unreachable, with the address and curl's
 * reason; -ECONNRESET the connection broke during the transfer; -EBADMSG
 * bad content (digest mismatch, oversized manifest); -EPROTO a bad answer
 * (malformed headers, refused or looping redirects, a junk token answer);
 * -EIO another HTTP status (its code and the registry's message);
 * -ECANCELED interrupted. */

/* The media types asked for, in the Accept header. */
#define MEDIA_TYPE_OCI_MANIFEST "application/vnd.oci.image.manifest.v1+json"
#define MEDIA_TYPE_OCI_INDEX "application/vnd.oci.image.index.v1+json"
#define MEDIA_TYPE_DOCKER_MANIFEST "application/vnd.docker.distribution.manifest.v2+json"
#define MEDIA_TYPE_DOCKER_MANIFEST_LIST "application/vnd.docker.distribution.manifest.list.v2+json"
