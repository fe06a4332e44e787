/* SPDX-License-Identifier: Apache-2.0 */
/* Readers of OCI image layouts and docker archives. */
#include <fcntl.h>

#include "basic/fs.h"
#include "basic/json-util.h"
#include "basic/strv.h"
#include "image/import-internal.h"

#define MT_OCI_INDEX "application/vnd.oci.image.index.v1+json"
#define MT_OCI_MANIFEST "application/vnd.oci.image.manifest.v1+json"
#define MT_DOCKER_LIST "application/vnd.docker.distribution.manifest.list.v2+json"
#define MT_DOCKER_MANIFEST "application/vnd.docker.distribution.manifest.v2+json"
#define MT_DOCKER_CONFIG "application/vnd.docker.container.image.v1+json"
#define MT_DOCKER_LAYER "application/vnd.docker.image.rootfs.diff.tar"
#define ANNOTATION_REF_NAME "org.opencontainers.image.ref.name"

static int read_source_json(Import *imp, const char *path, struct json_object **ret, Error **err) {
        _cleanup_free_ char *data = NULL;
        size_t size;
        int r = read_file_in_root(imp->src_fd, path, JSON_MAX, &data, &size, err);
        if (r < 0)
                return error_prefix(err, "%s", imp->source);
        return json_parse(data, size, path, ret, err);
}

static int parse_blob_json(Import *imp, const char *digest, const char *what, struct json_object **ret, Error **err) {
        _cleanup_free_ char *data = NULL;
        size_t size;
        int r = import_read_blob(imp, digest, &data, &size, err);
        return r < 0 ? r : json_parse(data, size, what, ret, err);
}

static bool layer_media_type_is_supported(const char *mt) {
        static const char *const ok[] = {
                "application/vnd.oci.image.layer.v1.tar",
                "application/vnd.oci.image.layer.v1.tar+gzip",
                "application/vnd.oci.image.layer.v1.tar+zstd",
                "application/vnd.oci.image.layer.nondistributable.v1.tar",
                "application/vnd.oci.image.layer.nondistributable.v1.tar+gzip",
                "application/vnd.oci.image.layer.nondistributable.v1.tar+zstd",
                "application/vnd.docker.image.rootfs.diff.tar",
                "application/vnd.docker.image.rootfs.diff.tar.gzip",
                "application/vnd.docker.image.rootfs.foreign.diff.tar.gzip",
        };
        for (size_t i = 0; i < ELEMENTSOF(ok); i++)
                if (streq(mt, ok[i]))
                        return true;
        return false;
}

typedef struct Descriptor {
        const char *media_type, *digest, *ref_name;
        const char *os, *arch, *variant;
        int64_t size;
} Descriptor;

static int parse_descriptor(struct json_object *o, const char *what, Descriptor *d, Error **err) {
        struct json_object *platform = NULL, *annotations = NULL;
        *d = (Descriptor) { .size = -1 };
        int r;
        if ((r = json_get_string(o, "mediaType", false, &d->media_type, what, err)) < 0 ||
            (r = json_get_string(o, "digest", true, &d->digest, what, err)) < 0 ||
            (r = json_get_int64(o, "size", true, &d->size, what, err)) < 0 ||
            (r = json_get_object(o, "platform", false, &platform, what, err)) < 0 ||
            (r = json_get_object(o, "annotations", false, &annotations, what, err)) < 0)
                return r;
        if (!digest_is_valid(d->digest))
                return error_set(err, -EBADMSG, "%s: field \"digest\": \"%s\" is not a sha256 digest", what, d->digest);
        if (d->size < 0)
                return error_set(err, -EBADMSG, "%s: field \"size\": negative", what);
        if (platform &&
            ((r = json_get_string(platform, "os", false, &d->os, what, err)) < 0 ||
             (r = json_get_string(platform, "architecture", false, &d->arch, what, err)) < 0 ||
             (r = json_get_string(platform, "variant", false, &d->variant, what, err)) < 0))
                return r;
        if (annotations && (r = json_get_string(annotations, ANNOTATION_REF_NAME, false, &d->ref_name, what, err)) < 0)
                return r;
        return 0;
}

static bool ref_matches(const char *want, const char *ref_name) {
        if (!want)
                return true;
        if (!ref_name)
                return false;
        if (streq(want, ref_name))
                return true;
        /* "busybox" matches "busybox:latest"; a bare tag matches a full name's tag. */
        _cleanup_free_ char *a = NULL, *b = NULL;
        if (image_name_normalize(want, &a) >= 0 && image_name_normalize(ref_name, &b) >= 0 && streq(a, b))
                return true;
        const char *colon = strrchr(ref_name, ':');
        return colon && !strchr(colon, '/') && streq(colon + 1, want);
}

static void blob_path(const char *digest, char ret[DIGEST_STRING_SIZE + 16]) {
        snprintf(ret, DIGEST_STRING_SIZE + 16, "blobs/sha256/%s", digest_hex(digest));
}

/* Picks the one image manifest of an index that fits the platform and ref,
 * going into nested indexes. The strings of *ret are borrowed from index or
 * from a nested index that *ret_keep then holds. */
static int select_manifest(Import *imp, struct json_object *index, const char *what, const char *ref, int depth,
                           Descriptor *ret, struct json_object **ret_keep, Error **err) {
        if (depth > 3)
                return error_set(err, -EBADMSG, "%s: image indexes nested too deeply", what);
        struct json_object *manifests;
        int r = json_get_array(index, "manifests", true, &manifests, what, err);
        if (r < 0)
                return r;

        size_t n = json_object_array_length(manifests), matches = 0;
        Descriptor chosen = {};
        _cleanup_strv_free_ char **seen = NULL;
        for (size_t i = 0; i < n; i++) {
                char w[256];
                snprintf(w, sizeof(w), "%s: manifests[%zu]", what, i);
                Descriptor d;
                r = parse_descriptor(json_object_array_get_idx(manifests, i), w, &d, err);
                if (r < 0)
                        return r;
                _cleanup_free_ char *desc = NULL;
                if (asprintf(&desc, "%s/%s%s%s", d.os ?: "any", d.arch ?: "any",
                             d.ref_name ? " " : "", strempty(d.ref_name)) < 0 || strv_push(&seen, desc) < 0)
                        return error_sys(err, -ENOMEM, "%s", what);
                if ((d.os && !streq(d.os, imp->platform_os)) ||
                    (d.arch && !streq(d.arch, imp->platform_arch)) ||
                    (*imp->platform_variant && d.variant && !streq(d.variant, imp->platform_variant)) ||
                    !ref_matches(ref, d.ref_name))
                        continue;
                chosen = d;
                matches++;
        }
        _cleanup_free_ char *list = NULL;
        for (char **i = seen; i && *i; i++) {
                char *l = NULL;
                if (asprintf(&l, "%s%s%s", strempty(list), list ? ", " : "", *i) < 0)
                        return error_sys(err, -ENOMEM, "%s", what);
                free(list);
                list = l;
        }
        if (matches == 0)
                return error_set(err, -ENOENT, "%s: no image for %s/%s%s%s (it has: %s)", what, imp->platform_os,
                                 imp->platform_arch, ref ? " named " : "", strempty(ref), list ?: "nothing");
        if (matches > 1)
                return error_set(err, -ENOTUNIQ, "%s: %zu images match (%s); choose one with --ref", what, matches, list);

        if (chosen.media_type && (streq(chosen.media_type, MT_OCI_INDEX) || streq(chosen.media_type, MT_DOCKER_LIST))) {
                char path[DIGEST_STRING_SIZE + 16], digest[DIGEST_STRING_SIZE];
                blob_path(chosen.digest, path);
                r = import_blob(imp, path, chosen.digest, chosen.size, "image index", digest, NULL, err);
                _cleanup_json_ struct json_object *nested = NULL;
                if (r >= 0)
                        r = parse_blob_json(imp, digest, chosen.digest, &nested, err);
                if (r >= 0)
                        r = select_manifest(imp, nested, chosen.digest, NULL, depth + 1, ret, ret_keep, err);
                if (r >= 0 && !*ret_keep)
                        *ret_keep = TAKE_PTR(nested);
                if (r >= 0 && !ret->ref_name)
                        ret->ref_name = chosen.ref_name; /* index still alive: the caller holds it */
                return r;
        }
        *ret = chosen;
        *ret_keep = NULL;
        return 0;
}

/* Config: platform check and the app defaults. */
static int import_config(Import *imp, const char *digest, const char *what, Error **err) {
        _cleanup_json_ struct json_object *config = NULL;
        int r = parse_blob_json(imp, digest, what, &config, err);
        if (r < 0)
                return r;
        const char *os = NULL, *arch = NULL;
        if ((r = json_get_string(config, "os", false, &os, what, err)) < 0 ||
            (r = json_get_string(config, "architecture", false, &arch, what, err)) < 0 ||
            (r = import_check_platform(imp, os, arch, what, err)) < 0)
                return r;
        Image *im = imp->image;
        if ((os && !(im->os = strdup(os))) || (arch && !(im->architecture = strdup(arch))))
                return error_sys(err, -ENOMEM, "%s", what);
        return image_app_from_oci_config(config, what, &im->app, err);
}

int import_oci_layout(Import *imp, Error **err) {
        _cleanup_json_ struct json_object *layout = NULL, *index = NULL, *nested = NULL, *manifest = NULL;
        const char *version = NULL;
        int r = read_source_json(imp, "oci-layout", &layout, err);
        if (r < 0)
                return error_prefix(err, "not an OCI image layout");
        if ((r = json_get_string(layout, "imageLayoutVersion", true, &version, "oci-layout", err)) < 0)
                return r;
        if (!startswith(version, "1."))
                return error_set(err, -EBADMSG, "oci-layout: imageLayoutVersion %s is not supported", version);
        if ((r = read_source_json(imp, "index.json", &index, err)) < 0)
                return r;

        Descriptor d;
        if ((r = select_manifest(imp, index, "index.json", imp->opts->ref, 0, &d, &nested, err)) < 0)
                return r;
        if (d.ref_name && (strchr(d.ref_name, ':') || strchr(d.ref_name, '/')))
                import_add_source_name(imp, d.ref_name); /* a bare tag names nothing */
        if ((r = import_check_existing(imp, d.digest, err)) != 0)
                return r;

        char path[DIGEST_STRING_SIZE + 16], manifest_digest[DIGEST_STRING_SIZE];
        uint64_t manifest_size;
        blob_path(d.digest, path);
        if ((r = import_blob(imp, path, d.digest, d.size, "manifest", manifest_digest, &manifest_size, err)) < 0 ||
            (r = parse_blob_json(imp, manifest_digest, manifest_digest, &manifest, err)) < 0)
                return r;

        const char *what = manifest_digest, *mt = NULL;
        struct json_object *config_o, *layers;
        int64_t schema = 0;
        if ((r = json_get_int64(manifest, "schemaVersion", true, &schema, what, err)) < 0 ||
            (r = json_get_string(manifest, "mediaType", false, &mt, what, err)) < 0 ||
            (r = json_get_object(manifest, "config", true, &config_o, what, err)) < 0 ||
            (r = json_get_array(manifest, "layers", true, &layers, what, err)) < 0)
                return r;
        if (schema != 2)
                return error_set(err, -EBADMSG, "manifest %s: field \"schemaVersion\": %lld is not supported", what, (long long) schema);
        if (mt && !streq(mt, MT_OCI_MANIFEST) && !streq(mt, MT_DOCKER_MANIFEST))
                return error_set(err, -EBADMSG, "manifest %s: field \"mediaType\": \"%s\" is not an image manifest", what, mt);

        Image *im = imp->image;
        if (!(im->id = strdup(manifest_digest)) || !(im->manifest = strdup(manifest_digest)))
                return error_sys(err, -ENOMEM, "%s", what);
        im->format = IMAGE_FORMAT_OCI;
        im->size = manifest_size;

        Descriptor c;
        char config_digest[DIGEST_STRING_SIZE];
        uint64_t config_size;
        if ((r = parse_descriptor(config_o, "manifest: config", &c, err)) < 0)
                return error_prefix(err, "manifest %s", what);
        blob_path(c.digest, path);
        if ((r = import_blob(imp, path, c.digest, c.size, "config", config_digest, &config_size, err)) < 0 ||
            (r = import_config(imp, config_digest, config_digest, err)) < 0)
                return r;
        if (!(im->config = strdup(config_digest)))
                return error_sys(err, -ENOMEM, "%s", what);
        im->size += config_size;

        for (size_t i = 0; i < json_object_array_length(layers); i++) {
                char w[DIGEST_STRING_SIZE + 64], digest[DIGEST_STRING_SIZE];
                uint64_t size;
                snprintf(w, sizeof(w), "manifest %s: layers[%zu]", what, i);
                Descriptor l;
                if ((r = parse_descriptor(json_object_array_get_idx(layers, i), w, &l, err)) < 0)
                        return r;
                if (!l.media_type || !layer_media_type_is_supported(l.media_type))
                        return error_set(err, -EBADMSG, "%s: media type \"%s\" is not supported", w, strempty(l.media_type));
                blob_path(l.digest, path);
                if ((r = import_blob(imp, path, l.digest, l.size, "layer", digest, &size, err)) < 0 ||
                    (r = import_add_layer(imp, digest, l.media_type, size)) < 0)
                        return r < 0 && err && *err ? r : error_sys(err, r, "%s", w);
        }
        return 0;
}

/* The digest a docker archive's file name promises: "HEX.json", "HEX.tar",
 * "HEX/layer.tar" or "blobs/sha256/HEX". NULL when the name says nothing. */
static const char *digest_from_member_name(const char *path, char ret[DIGEST_STRING_SIZE]) {
        char hex[SHA256_HEX_SIZE] = "";
        const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
        if (startswith(path, "blobs/sha256/"))
                snprintf(hex, sizeof(hex), "%s", base);
        else if (strlen(base) == SHA256_HEX_SIZE - 1 + 5 && (startswith(base + 64, ".json") || startswith(base + 64, ".tar")))
                snprintf(hex, sizeof(hex), "%.64s", base);
        if (!hex_digest_is_valid(hex))
                return NULL;
        digest_from_hex(hex, ret);
        return ret;
}

int import_docker_archive(Import *imp, Error **err) {
        _cleanup_json_ struct json_object *list = NULL, *config = NULL, *manifest = NULL;
        int r = read_source_json(imp, "manifest.json", &list, err);
        if (r < 0)
                return r;
        if (!json_object_is_type(list, json_type_array))
                return error_set(err, -EBADMSG, "manifest.json: expected an array of images");

        struct json_object *entry = NULL;
        size_t n = json_object_array_length(list), matches = 0;
        for (size_t i = 0; i < n; i++) {
                struct json_object *e = json_object_array_get_idx(list, i);
                _cleanup_strv_free_ char **tags = NULL;
                if ((r = json_get_strv(e, "RepoTags", false, &tags, "manifest.json", err)) < 0)
                        return r;
                bool match = !imp->opts->ref;
                for (char **t = tags; !match && t && *t; t++)
                        match = ref_matches(imp->opts->ref, *t);
                if (match) {
                        entry = e;
                        matches++;
                }
        }
        if (matches != 1)
                return error_set(err, matches ? -ENOTUNIQ : -ENOENT, "manifest.json: %s image%s%s%s%s",
                                 matches ? "more than one" : "no", imp->opts->ref ? " named " : "",
                                 strempty(imp->opts->ref), matches ? "; choose one with --ref" : "",
                                 n == 0 ? " (the archive is empty)" : "");

        const char *config_path;
        _cleanup_strv_free_ char **layer_paths = NULL, **tags = NULL;
        if ((r = json_get_string(entry, "Config", true, &config_path, "manifest.json", err)) < 0 ||
            (r = json_get_strv(entry, "Layers", true, &layer_paths, "manifest.json", err)) < 0 ||
            (r = json_get_strv(entry, "RepoTags", false, &tags, "manifest.json", err)) < 0)
                return r;
        for (char **t = tags; t && *t; t++)
                import_add_source_name(imp, *t);

        char expected[DIGEST_STRING_SIZE], config_digest[DIGEST_STRING_SIZE];
        uint64_t config_size;
        if ((r = import_blob(imp, config_path, digest_from_member_name(config_path, expected), -1, "config",
                             config_digest, &config_size, err)) < 0)
                return r;
        /* docker's image id is the digest of the config */
        if ((r = import_check_existing(imp, config_digest, err)) != 0)
                return r;
        if ((r = import_config(imp, config_digest, config_path, err)) < 0 ||
            (r = parse_blob_json(imp, config_digest, config_path, &config, err)) < 0)
                return r;
        struct json_object *rootfs;
        _cleanup_strv_free_ char **diff_ids = NULL;
        if ((r = json_get_object(config, "rootfs", true, &rootfs, config_path, err)) < 0 ||
            (r = json_get_strv(rootfs, "diff_ids", true, &diff_ids, config_path, err)) < 0)
                return r;
        if (strv_length(diff_ids) != strv_length(layer_paths))
                return error_set(err, -EBADMSG, "%s: rootfs.diff_ids lists %zu layers, manifest.json %zu", config_path,
                                 strv_length(diff_ids), strv_length(layer_paths));

        Image *im = imp->image;
        im->format = IMAGE_FORMAT_DOCKER_ARCHIVE;
        if (!(im->id = strdup(config_digest)) || !(im->config = strdup(config_digest)))
                return error_sys(err, -ENOMEM, "%s", config_path);

        /* Layers of a docker archive are uncompressed: each must hash to its diff_id. */
        _cleanup_json_ struct json_object *layers_o = json_object_new_array();
        if (!layers_o)
                return error_sys(err, -ENOMEM, "%s", config_path);
        for (size_t i = 0; layer_paths[i]; i++) {
                char digest[DIGEST_STRING_SIZE];
                uint64_t size;
                if ((r = import_blob(imp, layer_paths[i], diff_ids[i], -1, "layer", digest, &size, err)) < 0)
                        return r;
                if ((r = import_add_layer(imp, digest, MT_DOCKER_LAYER, size)) < 0)
                        return error_sys(err, r, "%s", layer_paths[i]);
                struct json_object *l = json_object_new_object();
                if (!l || json_object_array_add(layers_o, l) < 0 || json_add_string(l, "mediaType", MT_DOCKER_LAYER) < 0 ||
                    json_add_string(l, "digest", digest) < 0 ||
                    json_object_object_add(l, "size", json_object_new_int64((int64_t) size)) < 0)
                        return error_sys(err, -ENOMEM, "%s", config_path);
        }

        /* Keep an OCI manifest of it, so every image in the store has one. */
        manifest = json_object_new_object();
        struct json_object *c = json_object_new_object();
        if (!manifest || !c || json_object_object_add(manifest, "schemaVersion", json_object_new_int(2)) < 0 ||
            json_add_string(manifest, "mediaType", MT_OCI_MANIFEST) < 0 || json_add_string(c, "mediaType", MT_DOCKER_CONFIG) < 0 ||
            json_add_string(c, "digest", config_digest) < 0 ||
            json_object_object_add(c, "size", json_object_new_int64((int64_t) config_size)) < 0 ||
            json_object_object_add(manifest, "config", c) < 0 ||
            json_object_object_add(manifest, "layers", TAKE_PTR(layers_o)) < 0)
                return error_sys(err, -ENOMEM, "%s", config_path);
        const char *text = json_to_text(manifest, false);
        char manifest_digest[DIGEST_STRING_SIZE];
        if ((r = import_blob_from_memory(imp, text, strlen(text), manifest_digest, err)) < 0)
                return r;
        if (!(im->manifest = strdup(manifest_digest)))
                return error_sys(err, -ENOMEM, "%s", config_path);
        im->size += config_size + strlen(text);
        return 0;
}
