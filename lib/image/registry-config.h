/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* What the operator configures per registry (sdpod-registries(5)):
 *
 *  - /etc/sdpod/registries.json, or the file $SDPOD_REGISTRIES_CONFIG names:
 *        {"registries": {"HOST[:PORT]": {"insecure": true}}}
 *    insecure: TLS not verified, and plain HTTP allowed (tried when HTTPS
 *    fails). A missing file means no registry is insecure.
 *  - certificates: --cert-dir, else the first directory that exists of
 *    /etc/sdpod/certs.d/HOST[:PORT], /etc/containers/certs.d/HOST[:PORT],
 *    /etc/docker/certs.d/HOST[:PORT]: every *.crt is a CA (PEM) trusted
 *    besides the system's, client.cert and client.key a client certificate.
 *
 * Both are operator input (trusted), still read bounded. */

#include <stdbool.h>
#include <stddef.h>

#include "basic/error.h"

#define REGISTRIES_CONFIG_DEFAULT "/etc/sdpod/registries.json"
#define REGISTRIES_CONFIG_MAX (1U << 20)
#define REGISTRY_CA_MAX (4U << 20) /* all *.crt of a directory together */

/* Whether registry is configured insecure; a malformed file is an error. */
int registry_config_insecure(const char *registry, bool *ret, Error **err);

typedef struct RegistryCerts {
        char *dir;          /* the directory used, NULL when none */
        char *ca_pem;       /* the *.crt files concatenated, NULL when none */
        size_t ca_pem_size;
        char *client_cert;  /* path of client.cert, or NULL */
        char *client_key;   /* path of client.key, or NULL */
} RegistryCerts;

/* The certificates for registry: cert_dir (which must exist) when given,
 * else the certs.d search. None found: 0 with everything NULL. */
int registry_certs_load(const char *cert_dir, const char *registry, RegistryCerts *ret, Error **err);
void registry_certs_done(RegistryCerts *c);
