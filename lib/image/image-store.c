/* SPDX-License-Identifier: Apache-2.0 */
#include <fcntl.h>
#include <stdio.h>
#include <sys/file.h>
#include <sys/stat.h>

#include "basic/digest.h"
#include "basic/fs.h"
#include "basic/json-util.h"
#include "basic/lock.h"
#include "basic/strv.h"
#include "image/image-store.h"

#define RECORD_MAX (4U << 20)

void image_store_free(ImageStore *s) {
        if (!s)
                return;
        closep(&s->root_fd);
        closep(&s->images_fd);
        closep(&s->blobs_fd);
        closep(&s->db_fd);
        closep(&s->tmp_fd);
        closep(&s->tree_fd);
        closep(&s->lock_fd); /* releases the store lock */
        free(s->root);
        free(s);
}

static int open_subdir(int dirfd, const char *path, int *ret) {
        if (mkdirat(dirfd, path, 0700) < 0 && errno != EEXIST)
                return -errno;
        *ret = openat(dirfd, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        return *ret < 0 ? -errno : 0;
}

int image_store_open(const char *root, bool create_root, StoreAccess access, ImageStore **ret, Error **err) {
        _cleanup_image_store_ ImageStore *s = calloc(1, sizeof(ImageStore));
        if (!s || !(s->root = strdup(root)))
                return error_sys(err, -ENOMEM, "data directory %s", root);
        s->root_fd = s->images_fd = s->blobs_fd = s->db_fd = s->tmp_fd = s->tree_fd = s->lock_fd = -1;

        int r = 0;
        if (create_root)
                r = mkdir_p(root, 0755);
        if (r < 0)
                return error_sys(err, r, "data directory %s", root);
        s->root_fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (s->root_fd < 0)
                return error_sys(err, -errno, "data directory %s", root);

        _cleanup_close_ int blobs_parent = -1;
        if ((r = open_subdir(s->root_fd, "images", &s->images_fd)) < 0 ||
            (r = open_subdir(s->images_fd, "blobs", &blobs_parent)) < 0 ||
            (r = open_subdir(blobs_parent, "sha256", &s->blobs_fd)) < 0 ||
            (r = open_subdir(s->images_fd, "db", &s->db_fd)) < 0 ||
            (r = open_subdir(s->images_fd, "tmp", &s->tmp_fd)) < 0 ||
            (r = open_subdir(s->root_fd, "tree", &s->tree_fd)) < 0)
                return error_sys(err, r, "data directory %s: creating the image store", root);

        if (access == STORE_GC) {
                s->lock_fd = lock_file_at(s->images_fd, "lock", LOCK_EX | LOCK_NB);
                if (s->lock_fd >= 0)
                        s->exclusive = true;
                else if (s->lock_fd == -EWOULDBLOCK)
                        s->lock_fd = lock_file_at(s->images_fd, "lock", LOCK_SH);
        } else if (access != STORE_READ) {
                s->lock_fd = lock_file_at(s->images_fd, "lock", access == STORE_EXCLUSIVE ? LOCK_EX : LOCK_SH);
                s->exclusive = access == STORE_EXCLUSIVE;
        }
        if (access != STORE_READ && s->lock_fd < 0)
                return error_sys(err, s->lock_fd, "data directory %s: locking the image store", root);
        *ret = TAKE_PTR(s);
        return 0;
}

int image_store_load(ImageStore *s, const char *hex, Image **ret, Error **err) {
        char name[SHA256_HEX_SIZE + 8];
        snprintf(name, sizeof(name), "%s.json", hex);
        _cleanup_free_ char *data = NULL;
        size_t size;
        Error *e = NULL;
        int r = read_file_at(s->db_fd, name, RECORD_MAX, &data, &size, &e);
        if (r == -ENOENT) {
                error_free(e);
                return r;
        }
        if (r < 0) {
                if (err && !*err)
                        *err = e;
                else
                        error_free(e);
                return error_prefix(err, "image record");
        }

        char what[SHA256_HEX_SIZE + 128];
        snprintf(what, sizeof(what), "image record %s (remove it with 'sdpod image rm sha256:%s')", name, hex);
        _cleanup_json_ struct json_object *o = NULL;
        r = json_parse(data, size, what, &o, err);
        if (r < 0)
                return r;
        _cleanup_image_ Image *image = NULL;
        r = image_from_json(o, what, &image, err);
        if (r < 0)
                return r;
        if (!streq(digest_hex(image->id), hex))
                return error_set(err, -EBADMSG, "%s: field \"id\" does not match the file name", what);
        *ret = TAKE_PTR(image);
        return 0;
}

void image_list_free(Image **l, size_t n) {
        for (size_t i = 0; i < n; i++)
                image_free(l[i]);
        free(l);
}

static int image_compare(const void *a, const void *b) {
        const Image *x = *(Image *const *) a, *y = *(Image *const *) b;
        if (x->imported_at != y->imported_at)
                return x->imported_at < y->imported_at ? -1 : 1;
        return strcmp(x->id, y->id);
}

int image_store_list(ImageStore *s, Image ***ret, size_t *ret_n, Error **err) {
        _cleanup_closedir_ DIR *d = opendir_at(s->db_fd, ".");
        if (!d)
                return error_sys(err, -errno, "image store");

        Image **l = NULL;
        size_t n = 0;
        struct dirent *de;
        int r = 0;
        while ((de = readdir(d))) {
                const char *dot = strrchr(de->d_name, '.');
                if (!dot || !streq(dot, ".json") || dot - de->d_name != SHA256_HEX_SIZE - 1)
                        continue; /* temporary files of writers in progress */
                _cleanup_free_ char *hex = strndup(de->d_name, SHA256_HEX_SIZE - 1);
                if (!hex || !hex_digest_is_valid(hex))
                        continue;
                Image *image;
                r = image_store_load(s, hex, &image, err);
                if (r == -ENOENT)
                        continue; /* removed meanwhile */
                if (r < 0)
                        break;
                Image **nl = realloc(l, (n + 1) * sizeof(Image *));
                if (!nl) {
                        image_free(image);
                        r = error_sys(err, -ENOMEM, "image store");
                        break;
                }
                l = nl;
                l[n++] = image;
        }
        if (r < 0) {
                image_list_free(l, n);
                return r;
        }
        if (n > 1)
                qsort(l, n, sizeof(Image *), image_compare);
        *ret = l;
        *ret_n = n;
        return 0;
}

static bool is_hex_prefix(const char *s) {
        size_t n = strlen(s);
        if (n < 4 || n > SHA256_HEX_SIZE - 1)
                return false;
        for (; *s; s++)
                if (!((*s >= '0' && *s <= '9') || (*s >= 'a' && *s <= 'f')))
                        return false;
        return true;
}

/* The one resolver of image references. ret_name gets the (normalised)
 * name when ref matched by name, NULL when it matched by id or prefix. */
static int resolve(ImageStore *s, const char *ref, Image **ret, char **ret_name, Error **err) {
        if (ret_name)
                *ret_name = NULL;
        if (digest_is_valid(ref)) {
                int r = image_store_load(s, digest_hex(ref), ret, err);
                if (r == -ENOENT)
                        return error_set(err, r, "image %s: not found", ref);
                return r;
        }

        Image **l = NULL;
        size_t n = 0;
        int r = image_store_list(s, &l, &n, err);
        if (r < 0)
                return r;

        _cleanup_free_ char *name = NULL;
        (void) image_name_normalize(ref, &name);
        const char *hex = startswith(ref, DIGEST_PREFIX) ?: ref;
        Image *by_name = NULL, *by_prefix = NULL;
        size_t n_prefix = 0;
        for (size_t i = 0; i < n; i++) {
                if (name && strv_contains(l[i]->names, name))
                        by_name = l[i];
                if (is_hex_prefix(hex) && startswith(digest_hex(l[i]->id), hex)) {
                        by_prefix = l[i];
                        n_prefix++;
                }
        }
        /* A name wins over an id prefix, as with docker. */
        Image *found = by_name ?: (n_prefix == 1 ? by_prefix : NULL);
        if (found) {
                for (size_t i = 0; i < n; i++)
                        if (l[i] == found)
                                l[i] = NULL;
                *ret = found;
                if (by_name && ret_name)
                        *ret_name = TAKE_PTR(name);
                r = 0;
        } else if (n_prefix > 1)
                r = error_set(err, -ENOTUNIQ, "image %s: ambiguous, %zu image ids start with it", ref, n_prefix);
        else
                r = error_set(err, -ENOENT, "image %s: not found", ref);
        image_list_free(l, n);
        return r;
}

int image_store_resolve(ImageStore *s, const char *ref, Image **ret, Error **err) {
        return resolve(s, ref, ret, NULL, err);
}

static int image_store_write(ImageStore *s, const Image *image, Error **err) {
        _cleanup_json_ struct json_object *o = image_to_json(image);
        if (!o)
                return error_sys(err, -ENOMEM, "image %s", image->id);
        const char *text = json_to_text(o, true);
        char name[SHA256_HEX_SIZE + 8];
        snprintf(name, sizeof(name), "%s.json", digest_hex(image->id));
        /* A re-import that changes nothing writes nothing. */
        _cleanup_free_ char *old = NULL;
        if (read_file_at(s->db_fd, name, RECORD_MAX, &old, NULL, NULL) >= 0 && streq(old, text))
                return 0;
        int r = write_file_atomic_at(s->db_fd, name, text, strlen(text), 0644, err);
        return r < 0 ? error_prefix(err, "image record") : 0;
}

/* Takes name away from the names of image; false when it had not. */
static bool drop_name(Image *image, const char *name) {
        char **names = image->names;
        for (size_t j = 0; names && names[j]; j++)
                if (streq(names[j], name)) {
                        free(names[j]);
                        memmove(names + j, names + j + 1, (strv_length(names + j + 1) + 1) * sizeof(char *));
                        return true;
                }
        return false;
}

int image_store_commit(ImageStore *s, Image *image, char *const *add_names, Error **err) {
        _cleanup_close_ int db_lock = lock_file_at(s->images_fd, "db.lock", LOCK_EX);
        if (db_lock < 0)
                return error_sys(err, db_lock, "image store: locking records");

        Image **l = NULL;
        size_t n = 0;
        int r = image_store_list(s, &l, &n, err);
        if (r < 0)
                return r;
        for (size_t i = 0; r >= 0 && i < n; i++) {
                if (streq(l[i]->id, image->id)) {
                        /* Re-import: keep the names it already had. */
                        for (char **k = l[i]->names; k && *k; k++)
                                if (!strv_contains(image->names, *k) && strv_push(&image->names, *k) < 0)
                                        r = error_sys(err, -ENOMEM, "image %s", image->id);
                        if (l[i]->imported_at)
                                image->imported_at = l[i]->imported_at;
                        continue;
                }
                bool changed = false;
                for (char *const *k = add_names; k && *k; k++)
                        changed = drop_name(l[i], *k) || changed;
                if (changed)
                        r = image_store_write(s, l[i], err);
        }
        image_list_free(l, n);
        if (r < 0)
                return r;
        for (char *const *k = add_names; k && *k; k++)
                if (!strv_contains(image->names, *k) && strv_push(&image->names, *k) < 0)
                        return error_sys(err, -ENOMEM, "image %s", image->id);
        return image_store_write(s, image, err);
}

static char *names_joined(char *const *names) {
        char *s = NULL;
        for (char *const *k = names; k && *k; k++) {
                char *m = NULL;
                if (asprintf(&m, "%s%s%s", strempty(s), s ? ", " : "", *k) < 0) {
                        free(s);
                        return NULL;
                }
                free(s);
                s = m;
        }
        return s ?: strdup("");
}

/* A name the user gives an image: what image_name_normalize() accepts, and
 * nothing the resolver would read as something else: an id
 * ("sha256:HEX" is an id, never a name) or a digest reference. */
static int normalize_new_name(const char *name, char **ret, Error **err) {
        if (digest_is_valid(name) || startswith(name, DIGEST_PREFIX))
                return error_set(err, -EINVAL, "image name \"%s\": an image id, not a name", name);
        if (strchr(name, '@') || image_name_normalize(name, ret) < 0)
                return error_set(err, -EINVAL, "image name \"%s\": not a valid NAME[:TAG] (no spaces, control "
                                 "characters, '@', empty parts, or more than 255 characters)", name);
        return 0;
}

void image_removal_done(ImageRemoval *r) {
        free(r->id);
        free(r->name);
        strv_free(r->names_left);
        *r = (ImageRemoval) {};
}

static int remove_record(ImageStore *s, const char *id, Error **err) {
        char file[SHA256_HEX_SIZE + 8];
        snprintf(file, sizeof(file), "%s.json", digest_hex(id));
        if (unlinkat(s->db_fd, file, 0) < 0) {
                if (errno == ENOENT)
                        return error_set(err, -ENOENT, "image %s: not found", id);
                return error_sys(err, -errno, "image %s: removing its record", id);
        }
        int r = fsync_dir_at(s->db_fd, ".");
        return r < 0 ? error_sys(err, r, "image %s: syncing the image store", id) : 0;
}

int image_store_remove(ImageStore *s, const char *ref, bool force, ImageRemoval *ret, Error **err) {
        /* Resolved under the records lock: nothing renames between the
         * lookup and the change. */
        _cleanup_close_ int db_lock = lock_file_at(s->images_fd, "db.lock", LOCK_EX);
        if (db_lock < 0)
                return error_sys(err, db_lock, "image store: locking records");
        _cleanup_image_ Image *image = NULL;
        _cleanup_free_ char *name = NULL;
        int r;
        if (digest_is_valid(ref)) {
                Error *e = NULL;
                r = image_store_load(s, digest_hex(ref), &image, &e);
                error_free(e);
                if (r < 0 && r != -ENOENT) {
                        /* A record that cannot be read can still be removed by
                         * its full id (its load error says so): which names it
                         * has is unknown, and the user named it by id. */
                        if ((r = remove_record(s, ref, err)) < 0)
                                return r;
                        ImageRemoval out = { .id = strdup(ref), .image_removed = true };
                        if (!out.id)
                                return error_sys(err, -ENOMEM, "image %s", ref);
                        if (ret)
                                *ret = out;
                        else
                                image_removal_done(&out);
                        return 0;
                }
                if (r == -ENOENT)
                        return error_set(err, r, "image %s: not found", ref);
        } else if ((r = resolve(s, ref, &image, &name, err)) < 0)
                return r;

        size_t n_names = strv_length(image->names);
        ImageRemoval out = {};
        if (!force && name && n_names > 1) {
                /* By one of its names: that name goes, the image stays. */
                drop_name(image, name);
                r = image_store_write(s, image, err);
                if (r < 0)
                        return r;
                out.names_left = TAKE_PTR(image->names);
        } else if (!force && !name && n_names > 1) {
                _cleanup_free_ char *list = names_joined(image->names);
                return error_set(err, -EBUSY, "image %s: it has %zu names (%s); remove one with 'sdpod image rm NAME', "
                                 "or the image and all its names with --force", image->id, n_names, strempty(list));
        } else {
                r = remove_record(s, image->id, err);
                if (r < 0)
                        return r;
                out.image_removed = true;
        }
        out.id = TAKE_PTR(image->id);
        out.name = TAKE_PTR(name);
        if (ret)
                *ret = out;
        else
                image_removal_done(&out);
        return 0;
}

int image_store_tag(ImageStore *s, const char *ref, const char *name, ImageTagged *ret, Error **err) {
        _cleanup_free_ char *norm = NULL;
        int r = normalize_new_name(name, &norm, err);
        if (r < 0)
                return r;
        _cleanup_close_ int db_lock = lock_file_at(s->images_fd, "db.lock", LOCK_EX);
        if (db_lock < 0)
                return error_sys(err, db_lock, "image store: locking records");
        _cleanup_image_ Image *image = NULL;
        if ((r = resolve(s, ref, &image, NULL, err)) < 0)
                return r;

        ImageTagged out = {};
        if (!strv_contains(image->names, norm)) {
                /* The image that has the name now loses it: a name names one
                 * image. It stays in the store, with the names it has left
                 * (maybe none: then only its id names it). */
                Image **l = NULL;
                size_t n = 0;
                if ((r = image_store_list(s, &l, &n, err)) < 0)
                        return r;
                for (size_t i = 0; r >= 0 && i < n; i++)
                        if (!streq(l[i]->id, image->id) && drop_name(l[i], norm)) {
                                r = image_store_write(s, l[i], err);
                                if (r >= 0 && !(out.previous = strdup(l[i]->id)))
                                        r = error_sys(err, -ENOMEM, "image %s", l[i]->id);
                                out.previous_names_left = strv_length(l[i]->names);
                        }
                image_list_free(l, n);
                if (r >= 0 && strv_push(&image->names, norm) < 0)
                        r = error_sys(err, -ENOMEM, "image %s", image->id);
                if (r >= 0)
                        r = image_store_write(s, image, err);
                if (r < 0) {
                        free(out.previous);
                        return r;
                }
        } else
                out.already = true;
        out.id = TAKE_PTR(image->id);
        out.name = TAKE_PTR(norm);
        if (ret)
                *ret = out;
        else
                image_tagged_done(&out);
        return 0;
}

void image_tagged_done(ImageTagged *t) {
        free(t->id);
        free(t->name);
        free(t->previous);
        *t = (ImageTagged) {};
}

int image_store_untag(ImageStore *s, const char *name, char **ret_id, char **ret_name, Error **err) {
        _cleanup_free_ char *norm = NULL;
        int r = normalize_new_name(name, &norm, err);
        if (r < 0)
                return r;
        _cleanup_close_ int db_lock = lock_file_at(s->images_fd, "db.lock", LOCK_EX);
        if (db_lock < 0)
                return error_sys(err, db_lock, "image store: locking records");
        Image **l = NULL;
        size_t n = 0;
        if ((r = image_store_list(s, &l, &n, err)) < 0)
                return r;
        Image *found = NULL;
        for (size_t i = 0; !found && i < n; i++)
                if (drop_name(l[i], norm))
                        found = l[i];
        if (!found)
                r = error_set(err, -ENOENT, "image name %s: no image has it", norm);
        else
                r = image_store_write(s, found, err);
        _cleanup_free_ char *id = r >= 0 ? strdup(found->id) : NULL;
        image_list_free(l, n);
        if (r < 0)
                return r;
        if (!id)
                return error_sys(err, -ENOMEM, "image name %s", norm);
        if (ret_id)
                *ret_id = TAKE_PTR(id);
        if (ret_name)
                *ret_name = TAKE_PTR(norm);
        return 0;
}

static int add_ref(char ***refs, const char *digest) {
        return digest && digest_is_valid(digest) ? strv_push(refs, digest_hex(digest)) : 0;
}

/* Removes every entry of dirfd whose name is not in keep (with only_tmp,
 * only the temporary files of writers, ".tmp-*"). */
static int sweep_dir(int dirfd, char *const *keep, bool only_tmp, unsigned *count, uint64_t *bytes, const char *what, Error **err) {
        _cleanup_closedir_ DIR *d = opendir_at(dirfd, ".");
        if (!d)
                return error_sys(err, -errno, "image gc: %s", what);
        struct dirent *de;
        while ((de = readdir(d))) {
                if (streq(de->d_name, ".") || streq(de->d_name, ".."))
                        continue;
                if (keep && strv_contains(keep, de->d_name))
                        continue;
                if (only_tmp && !startswith(de->d_name, ".tmp-"))
                        continue;
                int r = rm_rf_at_counting(dirfd, de->d_name, bytes);
                if (r < 0)
                        return error_sys(err, r, "image gc: removing %s %s", what, de->d_name);
                (*count)++;
        }
        return 0;
}

/* Removes the staging directories of images/tmp that no live writer holds
 * locked (see image_store_make_staging()), while writers run. Entries
 * being made (".new-*") and anything but directories are left for a gc
 * with the store to itself. */
/* Removes the partial downloads of images/partial that no pull holds
 * locked (image-pull.h). A later pull of those blobs starts over. */
static int sweep_dead_partials(ImageStore *s, ImageGcStats *st, Error **err) {
        _cleanup_close_ int dirfd = openat(s->images_fd, "partial", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (dirfd < 0)
                return errno == ENOENT ? 0 : error_sys(err, -errno, "image gc: partial downloads");
        _cleanup_closedir_ DIR *d = opendir_at(dirfd, ".");
        if (!d)
                return error_sys(err, -errno, "image gc: partial downloads");
        struct dirent *de;
        while ((de = readdir(d))) {
                if (streq(de->d_name, ".") || streq(de->d_name, ".."))
                        continue;
                _cleanup_close_ int fd = openat(dirfd, de->d_name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
                if (fd >= 0 && flock(fd, LOCK_EX | LOCK_NB) < 0) {
                        if (errno != EWOULDBLOCK)
                                return error_sys(err, -errno, "image gc: locking partial download %s", de->d_name);
                        st->busy++;
                        continue;
                }
                int r = rm_rf_at_counting(dirfd, de->d_name, &st->bytes);
                if (r < 0)
                        return error_sys(err, r, "image gc: removing partial download %s", de->d_name);
                st->leftovers++;
        }
        return 0;
}

static int sweep_dead_staging(ImageStore *s, ImageGcStats *st, Error **err) {
        _cleanup_closedir_ DIR *d = opendir_at(s->tmp_fd, ".");
        if (!d)
                return error_sys(err, -errno, "image gc: staging directory");
        struct dirent *de;
        while ((de = readdir(d))) {
                if (de->d_name[0] == '.')
                        continue;
                _cleanup_close_ int fd = openat(s->tmp_fd, de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (fd < 0)
                        continue; /* gone meanwhile, or not a directory */
                if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
                        if (errno != EWOULDBLOCK)
                                return error_sys(err, -errno, "image gc: locking staging directory %s", de->d_name);
                        st->busy++;
                        continue;
                }
                /* Ours now: its writer is dead, and no other gc takes it. */
                int r = rm_rf_at_counting(s->tmp_fd, de->d_name, &st->bytes);
                if (r < 0)
                        return error_sys(err, r, "image gc: removing staging directory %s", de->d_name);
                st->leftovers++;
        }
        return 0;
}

int image_store_gc(ImageStore *s, char *const *in_use, ImageGcStats *ret, Error **err) {
        if (s->lock_fd < 0)
                return error_set(err, -EPERM, "image gc: needs the store locked");
        if (!s->exclusive) {
                ImageGcStats st = { .partial = true };
                int r = sweep_dead_staging(s, &st, err);
                if (r >= 0)
                        r = sweep_dead_partials(s, &st, err);
                if (r < 0)
                        return r;
                if (ret)
                        *ret = st;
                return 0;
        }

        Image **l = NULL;
        size_t n = 0;
        /* An unreadable record aborts gc: its blobs must not look unreferenced. */
        int r = image_store_list(s, &l, &n, err);
        if (r < 0)
                return error_prefix(err, "image gc");

        _cleanup_strv_free_ char **blobs = NULL, **trees = NULL;
        for (size_t i = 0; r >= 0 && i < n; i++) {
                r = add_ref(&blobs, l[i]->manifest);
                r = r ?: add_ref(&blobs, l[i]->config);
                for (size_t j = 0; r >= 0 && j < l[i]->n_layers; j++)
                        r = add_ref(&blobs, l[i]->layers[j].digest);
                r = r ?: add_ref(&trees, l[i]->id);
        }
        for (char *const *i = in_use; r >= 0 && i && *i; i++)
                r = add_ref(&trees, *i);
        image_list_free(l, n);
        if (r < 0)
                return error_sys(err, r, "image gc");

        ImageGcStats st = {};
        /* Under the exclusive lock no import or record write runs: all
         * staging and every temporary record file is left from a crash. */
        if ((r = sweep_dir(s->tmp_fd, NULL, false, &st.leftovers, &st.bytes, "staging directory", err)) < 0 ||
            (r = sweep_dir(s->db_fd, NULL, true, &st.leftovers, &st.bytes, "temporary record", err)) < 0 ||
            (r = sweep_dead_partials(s, &st, err)) < 0 ||
            (r = sweep_dir(s->tree_fd, trees, false, &st.trees, &st.bytes, "tree", err)) < 0 ||
            (r = sweep_dir(s->blobs_fd, blobs, false, &st.blobs, &st.bytes, "blob", err)) < 0)
                return r;
        r = fsync_dir_at(s->blobs_fd, ".");
        if (r < 0)
                return error_sys(err, r, "image gc: syncing the blob store");
        if (ret)
                *ret = st;
        return 0;
}

int image_store_make_staging(ImageStore *s, const char *prefix, char ret_name[32]) {
        /* Made under a name gc skips while writers run, locked, and only
         * then renamed: there is no moment when gc could take it for the
         * unlocked staging of a dead writer. */
        char tmp[32];
        random_name(tmp, sizeof(tmp), ".new-");
        if (mkdirat(s->tmp_fd, tmp, 0700) < 0)
                return -errno;
        _cleanup_close_ int fd = openat(s->tmp_fd, tmp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        int r = fd < 0 ? -errno : 0;
        if (r >= 0 && flock(fd, LOCK_EX | LOCK_NB) < 0)
                r = -errno;
        char name[32];
        random_name(name, sizeof(name), prefix);
        if (r >= 0 && renameat2(s->tmp_fd, tmp, s->tmp_fd, name, RENAME_NOREPLACE) < 0)
                r = -errno;
        if (r < 0) {
                (void) unlinkat(s->tmp_fd, tmp, AT_REMOVEDIR);
                return r;
        }
        memcpy(ret_name, name, sizeof(name));
        return TAKE_FD(fd);
}

int image_store_open_blob(ImageStore *s, const char *digest) {
        if (!digest_is_valid(digest))
                return -EINVAL;
        int fd = openat(s->blobs_fd, digest_hex(digest), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        return fd < 0 ? -errno : fd;
}

int image_store_write_blob(ImageStore *s, const void *data, size_t size, const char *digest) {
        char hex[SHA256_HEX_SIZE];
        sha256_hex_of(data, size, hex);
        if (!digest_is_valid(digest) || !streq(hex, digest_hex(digest)))
                return -EBADMSG;
        /* A name gc's sweep of dead staging skips; only a gc with the store
         * to itself removes it, after a crash. */
        char tmp[32];
        random_name(tmp, sizeof(tmp), ".tmp-");
        _cleanup_close_ int fd = openat(s->tmp_fd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
        if (fd < 0)
                return -errno;
        int r = write_all(fd, data, size);
        if (r >= 0 && fsync(fd) < 0)
                r = -errno;
        if (r >= 0 && renameat(s->tmp_fd, tmp, s->blobs_fd, hex) < 0)
                r = -errno;
        if (r < 0)
                (void) unlinkat(s->tmp_fd, tmp, 0);
        return r;
}

int image_store_open_partial(ImageStore *s, int *ret_fd) {
        if (mkdirat(s->images_fd, "partial", 0700) < 0 && errno != EEXIST)
                return -errno;
        int fd = openat(s->images_fd, "partial", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        *ret_fd = fd;
        return 0;
}

bool image_store_has_blob(ImageStore *s, const char *digest) {
        return digest_is_valid(digest) && faccessat(s->blobs_fd, digest_hex(digest), F_OK, AT_SYMLINK_NOFOLLOW) >= 0;
}

bool image_store_has_tree(ImageStore *s, const char *id) {
        return digest_is_valid(id) && faccessat(s->tree_fd, digest_hex(id), F_OK, AT_SYMLINK_NOFOLLOW) >= 0;
}

char *image_tree_rootfs_path(const char *root, const char *id) {
        char *s = NULL;
        return asprintf(&s, "%s/tree/%s/rootfs", root, digest_hex(id)) < 0 ? NULL : s;
}
