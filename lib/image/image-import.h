/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

#include <stdint.h>

#include "basic/error.h"
#include "image/image-store.h"

typedef enum ImportStage {
        IMPORT_READING,         /* the source: unpacking an archive, copying blobs */
        IMPORT_RENDERING,       /* applying the layers to the tree */
} ImportStage;

typedef struct ImportProgress {
        ImportStage stage;
        uint64_t bytes;         /* READING: of the source read so far; RENDERING: of the layer's blob */
        uint64_t total;         /* the size of the source file or of the layer blob; 0: not known */
        size_t layer, n_layers; /* RENDERING: 1-based */
} ImportProgress;

typedef struct ImportOptions {
        const char *name;       /* an extra name for the image, "name[:tag]" */
        const char *platform;   /* "os/arch[/variant]"; NULL: linux and the host's arch */
        const char *ref;        /* which image of a multi-image layout or archive */
        uint64_t max_entries;   /* of the rendered tree, all layers together; 0: no limit */
        uint64_t max_bytes;     /* of its regular files, as their headers say; 0: no limit */
        /* NULL, or called often (each block read, unpacked or written). A
         * negative return stops the import with that error, -ECANCELED for
         * an interruption, and it frees what it staged; once its tree is in
         * place the import is committing and completes. */
        int (*progress)(const ImportProgress *p, void *userdata);
        void *userdata;
        /* NULL, or where a failed import adds the disk space of what it had
         * staged and removed again (bytes). */
        uint64_t *ret_freed;
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
