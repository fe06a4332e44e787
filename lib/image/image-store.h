/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "basic/error.h"
#include "image/image.h"

/* The image store under the data directory:
 *
 *   images/blobs/sha256/HEX   content-addressed blobs, verified on the way in
 *   images/db/HEX.json        one record per image (Image), replaced atomically
 *   images/tmp/               staging of imports and renders in progress
 *   images/partial/HEX        downloads of pulls in progress or interrupted
 *   images/lock               the store lock (flock)
 *   images/db.lock            serialises record updates (names move between images)
 *   tree/HEX/rootfs           an image rendered once, shared read-only by pods
 *
 * Locking: imports and rm hold images/lock shared, so they run in parallel;
 * gc holds it exclusively, so it never sees an import's staged blobs or
 * tree before their record exists. Everything an import makes becomes
 * visible only by rename(2) after it was written and synced; a crash leaves
 * only staging directories and unreferenced blobs, which gc removes.
 *
 * Each staging directory is locked (flock) by the process that writes it,
 * for as long as it does: one that can be locked belongs to nobody alive.
 * So gc can free the staging of dead imports while others run, without the
 * exclusive lock (STORE_GC). */
typedef struct ImageStore {
        char *root;             /* the data directory */
        int root_fd;
        int images_fd;
        int blobs_fd;
        int db_fd;
        int tmp_fd;
        int tree_fd;
        int lock_fd;
        bool exclusive;         /* the store lock is held exclusively */
} ImageStore;

typedef enum StoreAccess {
        STORE_READ,             /* no lock: records are replaced atomically */
        STORE_SHARED,           /* import, rm */
        STORE_EXCLUSIVE,        /* gc */
        /* gc that does not wait: exclusive when the lock is free at once,
         * else shared (imports, rm or prepare are running), in which case
         * gc frees only the staging of dead writers. */
        STORE_GC,
} StoreAccess;

/* Opens the store below root, creating its directories. A root that does not
 * exist is an error unless create_root is set. */
int image_store_open(const char *root, bool create_root, StoreAccess access, ImageStore **ret, Error **err);
void image_store_free(ImageStore *s);
static inline void image_store_freep(ImageStore **s) { image_store_free(*s); }
#define _cleanup_image_store_ _cleanup_(image_store_freep)

/* All images, sorted by import time (oldest first). */
int image_store_list(ImageStore *s, Image ***ret, size_t *ret_n, Error **err);
void image_list_free(Image **l, size_t n);

/* Finds an image by name ("name" means "name:latest"), by id
 * ("sha256:HEX") or by a unique prefix of at least 4 hex digits of its id.
 * Not found: -ENOENT. Ambiguous prefix: -ENOTUNIQ. */
int image_store_resolve(ImageStore *s, const char *ref, Image **ret, Error **err);

/* Loads one record by the hex of its id; -ENOENT when absent. */
int image_store_load(ImageStore *s, const char *hex, Image **ret, Error **err);

/* Writes image's record and gives it the names in add_names, taking them
 * away from any other image that had them (a name names one image). */
int image_store_commit(ImageStore *s, Image *image, char *const *add_names, Error **err);

/* What image_store_remove() did. */
typedef struct ImageRemoval {
        char *id;               /* the image ref named */
        char *name;             /* the name ref matched by, NULL when by id */
        bool image_removed;     /* false: only the name went */
        char **names_left;      /* when only the name went: the image's other names */
} ImageRemoval;
void image_removal_done(ImageRemoval *r);

/* Removes what ref names, as docker rmi does: a name only, while the image
 * has other names (the image stays); the image with its record when ref is
 * its last name, or its id (or an id prefix) and it has at most one name.
 * An id of an image with several names is refused (-EBUSY) unless force;
 * force removes the image whatever names it has. A record that cannot be
 * read is removed by its full id (its names are unknown). Blobs and tree go with the next gc;
 * pods that use the image keep its tree (see image_store_gc()). */
int image_store_remove(ImageStore *s, const char *ref, bool force, ImageRemoval *ret, Error **err);

typedef struct ImageTagged {
        char *id;               /* the image that has the name now */
        char *name;             /* normalised: "name:tag" */
        bool already;           /* it had it: nothing changed */
        char *previous;         /* the image that had the name before, or NULL */
        size_t previous_names_left;
} ImageTagged;
void image_tagged_done(ImageTagged *t);

/* Gives the image ref names another name. A name names one image: an image
 * that had it loses it (and stays, maybe without names). A name that is not
 * a valid NAME[:TAG], or that the resolver would read as an id
 * ("sha256:..."), is refused with -EINVAL. */
int image_store_tag(ImageStore *s, const char *ref, const char *name, ImageTagged *ret, Error **err);

/* Takes a name away from the image that has it; the image stays, also
 * without names. -ENOENT when no image has the name. */
int image_store_untag(ImageStore *s, const char *name, char **ret_id, char **ret_name, Error **err);

typedef struct ImageGcStats {
        unsigned blobs, trees;
        unsigned leftovers;     /* staging directories and temporary files of interrupted writers */
        uint64_t bytes;         /* disk space freed: of blobs, trees and leftovers */
        bool partial;           /* writers were running: only dead staging was freed */
        unsigned busy;          /* staging directories of writers alive, kept */
} ImageGcStats;

/* Removes blobs and trees that no record references, and staging left by
 * imports that crashed. The trees of the images in in_use (ids) are kept
 * even when their record was removed: pods still use them. With the store
 * lock held only shared (STORE_GC while writers run), it removes only the
 * staging directories no live writer has locked, and sets partial. */
int image_store_gc(ImageStore *s, char *const *in_use, ImageGcStats *ret, Error **err);

/* Makes a staging directory images/tmp/PREFIX-RANDOM (its name in
 * ret_name), locked by the fd returned (>= 0): gc leaves it alone until that
 * fd is closed. -errno on failure. */
int image_store_make_staging(ImageStore *s, const char *prefix, char ret_name[32]);

/* Writes data into the store as the blob digest (synced, then renamed into
 * place); -EBADMSG when data does not hash to digest. */
int image_store_write_blob(ImageStore *s, const void *data, size_t size, const char *digest);
/* Opens images/partial (creating it): the partial downloads of pulls,
 * images/partial/HEX, each locked (flock) by the pull that writes it.
 * gc removes those no pull holds. */
int image_store_open_partial(ImageStore *s, int *ret_fd);

/* Opens a blob of the store for reading; -ENOENT when absent. */
int image_store_open_blob(ImageStore *s, const char *digest);
bool image_store_has_blob(ImageStore *s, const char *digest);
bool image_store_has_tree(ImageStore *s, const char *id);

/* DATA/tree/HEX/rootfs for image id ("sha256:HEX") in the store at root:
 * the lower layer of every app root made from the image. NULL on ENOMEM. */
char *image_tree_rootfs_path(const char *root, const char *id);
