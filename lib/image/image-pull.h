/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* sdpod image pull: an image from a registry into the store, each layer in
 * one pass from the network into its blob and the tree (layer-stream.h).
 *
 * The order of a pull: resolve the reference to a manifest (an index picks
 * the platform), check the signature policy against the manifest the
 * reference names (before any layer is fetched), fetch the config, then the
 * layers, up to PULL_PARALLEL at once. The layer whose turn it is streams
 * into the tree as it arrives; layers fetched ahead of their turn are
 * verified and stored, and applied from the store when their turn comes.
 *
 * What becomes visible, and when: a layer blob joins the store once its
 * digest and size were verified (blobs are content-addressed; an image
 * record names them only once all are there). Partial downloads live in
 * images/partial/HEX, locked while a pull writes them: a later pull resumes
 * them with an HTTP Range request, a concurrent pull of the same blob waits
 * for the first and then uses its blob, so each blob is fetched once. The
 * tree is staged and renamed into place, the record written last. */

#include <stdbool.h>
#include <stdint.h>

#include "basic/error.h"
#include "image/image-store.h"
#include "image/registry.h"

#define PULL_PARALLEL 3

typedef enum PullPolicy {
        PULL_MISSING,           /* pull when the store has no image of that name */
        PULL_ALWAYS,            /* ask the registry each time; fetch what changed */
        PULL_NEVER,             /* only the store */
} PullPolicy;

/* "missing", "always", "never"; -EINVAL otherwise. */
int pull_policy_from_string(const char *s);

typedef enum PullLayerState {
        PULL_LAYER_WAITING,
        PULL_LAYER_FETCHING,
        PULL_LAYER_DONE,        /* fetched and verified */
        PULL_LAYER_STORED,      /* the store had it: not fetched */
} PullLayerState;

typedef struct PullLayerProgress {
        char digest[DIGEST_STRING_SIZE];
        uint64_t size;          /* from the manifest */
        uint64_t bytes;         /* received so far (with what a resume found) */
        uint64_t resumed;       /* bytes a partial download already held */
        uint64_t started_usec;  /* monotonic; 0 before it starts */
        uint64_t ended_usec;
        PullLayerState state;
} PullLayerProgress;

typedef struct PullProgress {
        const char *reference;
        const PullLayerProgress *layers;
        size_t n_layers;
        bool rendering;         /* every layer is in: the tree is being synced */
        bool existing;          /* the store had the image: nothing fetched */
} PullProgress;

typedef struct PullOptions {
        const char *name;               /* an extra local name, "name[:tag]" */
        const char *platform;           /* "os/arch[/variant]"; NULL: linux and this machine's */
        RegistryOptions registry;       /* credentials, TLS, interruption */
        const char *signature_policy;   /* policy.json; NULL: the default (signature.h) */
        const char *registries_d;       /* lookaside configuration; NULL: the default */
        uint64_t max_entries, max_bytes; /* of the tree, as image import's */
        /* NULL, or called from the pulling thread, often: a negative return
         * stops the pull (-ECANCELED: interrupted). */
        int (*progress)(const PullProgress *p, void *userdata);
        void *userdata;
} PullOptions;

/* Sets the option of pull (without "--") that image pull, prepare, run and
 * podapp add share: tls-verify, cert-dir, authfile, creds,
 * signature-policy, registries-d, platform. 0 when it is one of them and
 * valid, -ENOENT when it is not one of them, -EINVAL (message) when its
 * value is bad. The strings are kept by reference. */
int pull_options_set(PullOptions *o, const char *option, const char *value, Error **err);
void pull_options_done(PullOptions *o);

/* What a pull did, for its summary line. */
typedef struct PullResult {
        size_t layers, layers_fetched;
        uint64_t bytes_fetched;         /* over the network */
        uint64_t bytes_resumed;         /* found in partial downloads */
        bool existing;                  /* the store had the image */
} PullResult;

/* Pulls reference ("[docker://]REGISTRY/REPOSITORY[:TAG|@DIGEST]") into the
 * store, open STORE_SHARED. The image is named after the reference (and
 * opts->name). Errors: -ENOENT unknown repository, tag or digest, or no
 * image for the platform; -EACCES unauthorized; -EKEYREJECTED refused by
 * the signature policy (-EIO: the policy cannot be read); -EBADMSG bad content (a digest mismatch names the
 * digest, and nothing of that blob stays); -ECANCELED interrupted (partial
 * downloads are kept for a resume; nothing else stays); -EINVAL a bad
 * reference; others: the registry could not be reached. */
int image_pull(ImageStore *s, const char *reference, const PullOptions *opts, Image **ret, PullResult *ret_result,
               Error **err);

/* For the image arguments of prepare, run and podapp add: when arg names a
 * registry image (image_reference_is_remote()), applies policy (pulls when
 * missing, always, or never) and returns 1 with the id of the image to use;
 * 0 when arg is a local reference, left to image_store_resolve(). With
 * PULL_NEVER and no such image: -ENOENT, naming the reference. */
int image_pull_for_use(ImageStore *s, const char *arg, PullPolicy policy, const PullOptions *opts, char **ret_id,
                       Error **err);
