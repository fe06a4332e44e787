/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

#include <json-c/json.h>
#include <stdint.h>

#include "basic/error.h"

/* What an image says about the app it runs, taken from the OCI/docker image
 * config or the ACI app section. prepare starts from these and applies the
 * user's flags on top. exec is the resolved command (entrypoint + cmd). */
typedef struct ImageApp {
        char **exec;
        char **entrypoint;
        char **cmd;
        char **env;             /* "KEY=VALUE" */
        char *working_dir;
        char *user;             /* as the image says it: a name or a number */
        char *group;
        char **ports;           /* "8080/tcp" */
} ImageApp;

typedef struct ImageLayer {
        char *digest;
        char *media_type;
        uint64_t size;
} ImageLayer;

typedef enum ImageFormat {
        IMAGE_FORMAT_OCI,
        IMAGE_FORMAT_DOCKER_ARCHIVE,
        IMAGE_FORMAT_ACI,
} ImageFormat;

/* The store's record of an imported image. The id is a digest that names the
 * image's content: the OCI manifest digest, docker's image id (the config
 * digest) for docker archives, the digest of the ACI file for ACIs. */
typedef struct Image {
        char *id;
        ImageFormat format;
        char **names;           /* "name:tag" */
        uint64_t size;          /* bytes of all its blobs */
        uint64_t imported_at;   /* usec since the epoch */
        char *manifest;         /* digest of the manifest blob (ACI: its manifest file) */
        char *config;           /* digest of the config blob, NULL for ACI */
        char *os, *architecture;
        ImageLayer *layers;
        size_t n_layers;
        ImageApp app;
} Image;

const char *image_format_to_string(ImageFormat f);
int image_format_from_string(const char *s);

void image_app_done(ImageApp *app);
void image_free(Image *image);
static inline void image_freep(Image **i) { image_free(*i); }
#define _cleanup_image_ _cleanup_(image_freep)

/* The store record <-> JSON. */
struct json_object *image_to_json(const Image *image);
int image_from_json(struct json_object *o, const char *what, Image **ret, Error **err);

/* App defaults from an OCI or docker image config ("config" object inside). */
int image_app_from_oci_config(struct json_object *config, const char *what, ImageApp *ret, Error **err);
/* App defaults from an ACI image manifest ("app" object inside). */
int image_app_from_aci_manifest(struct json_object *manifest, const char *what, ImageApp *ret, Error **err);

/* "busybox" -> "busybox:latest"; refuses names with spaces, control
 * characters or an empty part. */
int image_name_normalize(const char *name, char **ret);
