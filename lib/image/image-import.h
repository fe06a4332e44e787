/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

#include <stdint.h>

#include "basic/error.h"
#include "image/image-store.h"

typedef struct ImportOptions {
        const char *name;       /* an extra name for the image, "name[:tag]" */
        const char *platform;   /* "os/arch[/variant]"; NULL: linux and the host's arch */
        const char *ref;        /* which image of a multi-image layout or archive */
        uint64_t max_entries;   /* of the rendered tree, all layers together; 0: no limit */
        uint64_t max_bytes;     /* of its regular files, as their headers say; 0: no limit */
} ImportOptions;

/* Imports the image at path into the store and renders its tree. path is an
 * OCI image layout (a directory, or a tar of one: oci-archive), a docker
 * archive (docker save / podman save; tar or directory), or an ACI (tar,
 * optionally compressed). Every blob is verified against its digest and
 * size; nothing becomes visible until all of it was verified, written and
 * synced. Importing an image that is already there changes nothing but its
 * names. An image whose layers unpack to more entries or bytes than opts
 * allow is refused (-EFBIG) and nothing of it stays. The store must be open
 * with STORE_SHARED. */
int image_import(ImageStore *s, const char *path, const ImportOptions *opts, Image **ret, Error **err);
