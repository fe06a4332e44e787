/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* Registry credentials in the containers auth file format, the one podman,
 * skopeo and buildah share:
 *
 *     {"auths": {"REGISTRY": {"auth": "<base64 of USER:PASSWORD>"}}}
 *
 * Files, when auth_file is NULL (sdpod-registries(5)):
 *   reading: $REGISTRY_AUTH_FILE alone when set; else
 *            $XDG_RUNTIME_DIR/containers/auth.json, then
 *            $HOME/.config/containers/auth.json, then
 *            $HOME/.docker/config.json (read only); the first entry wins;
 *   writing: $REGISTRY_AUTH_FILE when set; else the first of the two
 *            containers files that exists; else $HOME/.config/containers/auth.json.
 * A rewrite keeps every key it does not know (other registries, docker's
 * "credsStore", ...). Files are written atomically, mode 0600, in a directory
 * made 0700. Credential helpers and identity tokens are not supported: such
 * entries are ignored. Every file is read bounded (REGISTRY_AUTH_FILE_MAX). */

#include <stdbool.h>
#include <stddef.h>

#include "basic/error.h"

#define REGISTRY_AUTH_FILE_MAX (1U << 20)

/* 1 and the credentials when found for registry, 0 when none (the ret_* are
 * then untouched). An unreadable or malformed file is an error naming it. */
int registry_auth_lookup(const char *auth_file, const char *registry, char **ret_user, char **ret_password, Error **err);
/* Stores the credentials of registry; ret_path (optional): the file written. */
int registry_auth_store(const char *auth_file, const char *registry, const char *user, const char *password,
                        char **ret_path, Error **err);
/* Removes the credentials of registry (NULL: of every registry) from the
 * file login writes (or auth_file). 1 when something was removed, 0 when
 * there was nothing; ret_path (optional): the file. */
int registry_auth_remove(const char *auth_file, const char *registry, char **ret_path, Error **err);

/* The credentials of one file's content (for tests and the fuzzer): the
 * same rules as registry_auth_lookup(), what names the file in errors. */
int registry_auth_parse(const char *data, size_t size, const char *what, const char *registry, char **ret_user,
                        char **ret_password, Error **err);


