/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* One pass over a layer blob while its bytes arrive (from a registry or
 * from the file of an image layout), never reading it back:
 *
 *   feed() ── sha256 + size of the blob ── write to blob_fd
 *      │
 *      └─▶ [decompress thread: gzip, zstd, xz, bzip2; sha256 = diff_id] ─▶ [extract thread: layer_apply's rules into rootfd]
 *
 * The compression is told by the first bytes (the media type is not
 * trusted for it: tools write plain tars under docker's ".tar.gzip" name).
 * An uncompressed layer goes straight to the extract thread; its diff_id
 * is the blob's digest. The caller's thread only hashes, writes and copies:
 * decompression and file creation each run on a thread of their own.
 *
 * Nothing is trusted until layer_stream_end() said so: the caller writes
 * blob_fd and rootfd in staging places and removes them on any failure. */

#include <stdbool.h>
#include <stdint.h>

#include "basic/digest.h"
#include "basic/error.h"
#include "image/extract.h"

typedef struct LayerStreamSpec {
        const char *what;               /* the kind in messages: "layer" (NULL: "layer") */
        const char *digest;             /* the blob's digest, required */
        int64_t size;                   /* the blob's size; -1: not known */
        const char *diff_id;            /* the uncompressed tar's digest; NULL: not checked */
        /* Where the blob's bytes go; -1: nowhere (the store has it). The
         * first resume_size bytes are in it already: start() reads them
         * back (pread from 0) through the same pass, and feed() appends
         * after them. */
        int blob_fd;
        uint64_t resume_size;
        /* The caller makes the blob durable itself (a syncfs of its file
         * system, which it does for the tree anyway): end() does not fsync
         * it. One flush of the disk instead of two. */
        bool blob_synced_by_caller;
        /* The tree the layer is applied to; -1: the blob is only stored
         * and checked. */
        int rootfd;
        /* How (subdir, whiteouts, budget); its progress callback is not
         * called (it would run on another thread): the caller reports
         * progress as it feeds. NULL: whiteouts, no budget. */
        const LayerOptions *layer;
} LayerStreamSpec;

typedef struct LayerStream LayerStream;

int layer_stream_start(const LayerStreamSpec *spec, LayerStream **ret, Error **err);

/* The next bytes of the blob. Fails at once on more bytes than spec->size,
 * or when a thread stopped for a reason that is not the content (no space,
 * the budget, an interruption); a layer that does not unpack is reported
 * by end(), after the digest, which is what a corrupt blob fails. */
int layer_stream_feed(LayerStream *s, const void *data, size_t size, Error **err);

/* All bytes were fed: waits for the threads, then checks in this order the
 * size, the digest, the extraction, the diff_id; the first failure is the
 * error and names spec->digest. fsyncs blob_fd (see blob_synced_by_caller).
 * Frees s in any case.
 * ret_size (NULL: not wanted): the blob's size. */
int layer_stream_end(LayerStream *s, uint64_t *ret_size, Error **err);

/* Stops the threads and frees s (NULL is fine); what was written stays for
 * the caller to remove. */
void layer_stream_abort(LayerStream *s);
