/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* Shared by the format readers of image-import: an import in progress. */

#include <stdint.h>

#include "basic/digest.h"
#include "image/image-import.h"
#include "image/image.h"
#include "image/tree.h"

typedef struct StagedFile {
        char *path;
        char hex[SHA256_HEX_SIZE];
        uint64_t size;
} StagedFile;

typedef struct Import {
        ImageStore *store;
        const ImportOptions *opts;
        const char *source;     /* the path the user gave, for messages */
        char platform_os[32], platform_arch[32], platform_variant[32];
        char staging[32];       /* images/tmp/import-XXX */
        int staging_fd;
        int blobs_fd;           /* staging/blobs: verified blobs by hex */
        int src_fd;             /* the layout to read: the user's directory or the unpacked archive */
        StagedFile *files;      /* members of an unpacked archive, hashed while unpacking */
        size_t n_files;
        Image *image;           /* the record being built */
        char **names;           /* names the source itself gives the image */
        uint64_t read_bytes;    /* of blobs copied from the source */
        /* The tree, when the layers were applied while they were read
         * (import_layer_stream); rootfd -1 otherwise. */
        TreeStaging tree;
        LayerBudget budget;     /* what the layers may unpack to, all together */
} Import;

/* Tells opts->progress how far reading the source got; its negative return
 * (an interruption) as an error naming what was read. */
int import_report_reading(Import *imp, uint64_t bytes, uint64_t total, const char *what, Error **err);

/* Stores the file src_path of the source as a blob. With expected_digest
 * (and expected_size >= 0) the content must match them; without, its digest
 * is computed. Returns the digest and size. Blobs the store has are not
 * copied again. */
int import_blob(Import *imp, const char *src_path, const char *expected_digest, int64_t expected_size,
                const char *what, char ret_digest[DIGEST_STRING_SIZE], uint64_t *ret_size, Error **err);
/* Stores the content of fd as a blob (its digest computed). */
int import_blob_from_fd(Import *imp, int fd, const char *expected_digest, int64_t expected_size,
                        const char *what, char ret_digest[DIGEST_STRING_SIZE], uint64_t *ret_size, Error **err);
int import_blob_from_memory(Import *imp, const void *data, size_t size, char ret_digest[DIGEST_STRING_SIZE], Error **err);
/* Reads a (small, JSON) blob that import_blob() stored. */
int import_read_blob(Import *imp, const char *digest, char **ret, size_t *ret_size, Error **err);
/* Reads layer number index (0-based, of n) of the image once, from
 * src_path in src_fd (a layout), or from src_fd itself (src_path NULL: a
 * blob staged or stored already): stored as a blob unless the store or the
 * staging has it, checked against digest, size and diff_id (NULL: not
 * checked), and applied to imp->tree (begun here for the first layer,
 * unless the store has the image's tree) in the same pass. Returns its
 * digest and size. */
int import_layer_stream(Import *imp, int src_fd, const char *src_path, const char *digest, int64_t size,
                        const char *diff_id, size_t index, size_t n, char ret_digest[DIGEST_STRING_SIZE],
                        uint64_t *ret_size, Error **err);
/* Opens a blob that import_blob() stored. */
int import_open_blob(Import *imp, const char *digest);

/* Returns 1 (and makes imp->image the stored record) when the store has the
 * image and its tree already: then only names are added. */
int import_check_existing(Import *imp, const char *id, Error **err);

/* Adds a layer to the image being built. */
int import_add_layer(Import *imp, const char *digest, const char *media_type, uint64_t size);
/* Adds a name the source gives the image (tags, RepoTags, ACI name). */
void import_add_source_name(Import *imp, const char *name);
/* Refuses an image made for another platform than the one asked for. */
int import_check_platform(Import *imp, const char *os, const char *arch, const char *what, Error **err);

#define JSON_MAX (4U << 20)

/* The readers fill imp->image; they return 1 when the image was there. */
int import_oci_layout(Import *imp, Error **err);
int import_docker_archive(Import *imp, Error **err);
int import_aci(Import *imp, int fd, Error **err);
