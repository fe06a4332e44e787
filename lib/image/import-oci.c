/* SPDX-License-Identifier: Apache-2.0 */
/* Readers of OCI image layouts and docker archives. */
#include <fcntl.h>

#include "basic/fs.h"
#include "basic/json-util.h"
#include "basic/strv.h"
#include "image/import-internal.h"
#include "image/oci-manifest.h"

static int read_source_json(Import *imp, const char *path, struct json_object **ret, Error **err) {
        _cleanup_free_ char *data = NULL;
        size_t size;
        int r = read_file_in_root(imp->src_fd, path, JSON_MAX, &data, &size, err);
        if (r < 0)
                return error_prefix(err, "%s", imp->source);
        return json_parse(data, size, path, ret, err);
}

static void blob_path(const char *digest, char ret[DIGEST_STRING_SIZE + 16]) {
        snprintf(ret, DIGEST_STRING_SIZE + 16, "blobs/sha256/%s", digest_hex(digest));
}

/* Picks the one image manifest of an index that fits the platform and ref,
 * going into nested indexes. ret_ref_name: the ref name of the outermost
 * entry chosen that has one. */
static int select_manifest(Import *imp, const char *data, size_t size, const char *what, const char *ref, int depth,
                           OciDescriptor *ret, char **ret_ref_name, Error **err) {
        if (depth > 3)
                return error_set(err, -EBADMSG, "%s: image indexes nested too deeply", what);
        OciPlatform p = { imp->platform_os, imp->platform_arch, imp->platform_variant };
        OciDescriptor chosen;
        int r = oci_index_select(data, size, what, &p, ref, &chosen, err);
        if (r < 0)
                return r;
        if (!*ret_ref_name && chosen.ref_name)
                *ret_ref_name = TAKE_PTR(chosen.ref_name);
        if (!oci_media_type_is_index(chosen.media_type)) {
                *ret = chosen;
                return 0;
        }

        char path[DIGEST_STRING_SIZE + 16], digest[DIGEST_STRING_SIZE];
        _cleanup_free_ char *nested = NULL;
        size_t nested_size;
        blob_path(chosen.digest, path);
        r = import_blob(imp, path, chosen.digest, (int64_t) chosen.size, "image index", digest, NULL, err);
        if (r >= 0)
                r = import_read_blob(imp, digest, &nested, &nested_size, err);
        if (r >= 0)
                r = select_manifest(imp, nested, nested_size, chosen.digest, NULL, depth + 1, ret, ret_ref_name, err);
        oci_descriptor_done(&chosen);
        return r;
}

/* Config: platform check and the app defaults; ret_config (NULL: not wanted)
 * gets what oci_config_parse() finds. */
static int import_config(Import *imp, const char *digest, const char *what, OciConfig *ret_config, Error **err) {
        _cleanup_free_ char *data = NULL;
        size_t size;
        _cleanup_json_ struct json_object *json = NULL;
        OciConfig c = {};
        int r = import_read_blob(imp, digest, &data, &size, err);
        if (r < 0 || (r = oci_config_parse(data, size, what, &c, err)) < 0)
                return r;
        Image *im = imp->image;
        if ((r = import_check_platform(imp, c.os, c.architecture, what, err)) < 0)
                goto finish;
        if ((c.os && !(im->os = strdup(c.os))) || (c.architecture && !(im->architecture = strdup(c.architecture)))) {
                r = error_sys(err, -ENOMEM, "%s", what);
                goto finish;
        }
        if ((r = json_parse(data, size, what, &json, err)) < 0 ||
            (r = image_app_from_oci_config(json, what, &im->app, err)) < 0)
                goto finish;
        if (ret_config) {
                *ret_config = c;
                return 0;
        }
finish:
        oci_config_done(&c);
        return r;
}

int import_oci_layout(Import *imp, Error **err) {
        _cleanup_json_ struct json_object *layout = NULL;
        const char *version = NULL;
        int r = read_source_json(imp, "oci-layout", &layout, err);
        if (r < 0)
                return error_prefix(err, "not an OCI image layout");
        if ((r = json_get_string(layout, "imageLayoutVersion", true, &version, "oci-layout", err)) < 0)
                return r;
        if (!startswith(version, "1."))
                return error_set(err, -EBADMSG, "oci-layout: imageLayoutVersion %s is not supported", version);
        _cleanup_free_ char *index = NULL, *ref_name = NULL;
        size_t index_size;
        if ((r = read_file_in_root(imp->src_fd, "index.json", JSON_MAX, &index, &index_size, err)) < 0)
                return error_prefix(err, "%s", imp->source);

        _cleanup_(oci_descriptor_done) OciDescriptor d = {};
        if ((r = select_manifest(imp, index, index_size, "index.json", imp->opts->ref, 0, &d, &ref_name, err)) < 0)
                return r;
        if (ref_name && (strchr(ref_name, ':') || strchr(ref_name, '/')))
                import_add_source_name(imp, ref_name); /* a bare tag names nothing */
        if ((r = import_check_existing(imp, d.digest, err)) != 0)
                return r;

        char path[DIGEST_STRING_SIZE + 16], manifest_digest[DIGEST_STRING_SIZE];
        uint64_t manifest_size;
        _cleanup_free_ char *manifest_data = NULL;
        size_t manifest_data_size;
        _cleanup_(oci_manifest_done) OciManifest m = {};
        blob_path(d.digest, path);
        if ((r = import_blob(imp, path, d.digest, (int64_t) d.size, "manifest", manifest_digest, &manifest_size, err)) < 0 ||
            (r = import_read_blob(imp, manifest_digest, &manifest_data, &manifest_data_size, err)) < 0 ||
            (r = oci_manifest_parse(manifest_data, manifest_data_size, manifest_digest, &m, err)) < 0)
                return r;

        Image *im = imp->image;
        if (!(im->id = strdup(manifest_digest)) || !(im->manifest = strdup(manifest_digest)))
                return error_sys(err, -ENOMEM, "%s", manifest_digest);
        im->format = IMAGE_FORMAT_OCI;
        im->size = manifest_size;

        char config_digest[DIGEST_STRING_SIZE];
        uint64_t config_size;
        blob_path(m.config.digest, path);
        _cleanup_(oci_config_done) OciConfig c = {};
        if ((r = import_blob(imp, path, m.config.digest, (int64_t) m.config.size, "config", config_digest, &config_size, err)) < 0 ||
            (r = import_config(imp, config_digest, config_digest, &c, err)) < 0)
                return r;
        /* An empty list is what some hand-made images have: nothing to check. */
        if (c.n_diff_ids > 0 && c.n_diff_ids != m.n_layers)
                return error_set(err, -EBADMSG, "config %s: rootfs.diff_ids lists %zu layers, the manifest %zu",
                                 config_digest, c.n_diff_ids, m.n_layers);
        if (!(im->config = strdup(config_digest)))
                return error_sys(err, -ENOMEM, "%s", manifest_digest);
        im->size += config_size;

        for (size_t i = 0; i < m.n_layers; i++) {
                const OciDescriptor *l = &m.layers[i];
                char w[DIGEST_STRING_SIZE + 64], digest[DIGEST_STRING_SIZE];
                uint64_t size;
                snprintf(w, sizeof(w), "manifest %s: layers[%zu]", manifest_digest, i);
                blob_path(l->digest, path);
                /* A layout's layer is read once, and applied as it is read.
                 * An unpacked archive's files were hashed while unpacked:
                 * they are moved into staging, then applied from there
                 * (decompressed on a thread of their own, diff_id checked). */
                const char *diff_id = c.n_diff_ids > 0 ? c.diff_ids[i] : NULL;
                if (!imp->files)
                        r = import_layer_stream(imp, imp->src_fd, path, l->digest, (int64_t) l->size, diff_id, i,
                                                m.n_layers, digest, &size, err);
                else {
                        r = import_blob(imp, path, l->digest, (int64_t) l->size, "layer", digest, &size, err);
                        _cleanup_close_ int fd = r >= 0 ? import_open_blob(imp, digest) : -1;
                        if (r >= 0 && fd < 0)
                                r = error_sys(err, fd, "%s", w);
                        if (r >= 0)
                                r = import_layer_stream(imp, fd, NULL, digest, (int64_t) size, diff_id, i, m.n_layers,
                                                        digest, &size, err);
                }
                if (r < 0 || (r = import_add_layer(imp, digest, l->media_type, size)) < 0)
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
        _cleanup_json_ struct json_object *list = NULL, *manifest = NULL;
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
                        match = oci_ref_name_matches(imp->opts->ref, *t);
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
        _cleanup_(oci_config_done) OciConfig c = {};
        if ((r = import_config(imp, config_digest, config_path, &c, err)) < 0)
                return r;
        if (!c.diff_ids)
                return error_set(err, -EBADMSG, "%s: field \"rootfs\": missing", config_path);
        char **diff_ids = c.diff_ids;
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
                if ((r = import_add_layer(imp, digest, DOCKER_MT_LAYER, size)) < 0)
                        return error_sys(err, r, "%s", layer_paths[i]);
                struct json_object *l = json_object_new_object();
                if (!l || json_object_array_add(layers_o, l) < 0 || json_add_string(l, "mediaType", DOCKER_MT_LAYER) < 0 ||
                    json_add_string(l, "digest", digest) < 0 ||
                    json_object_object_add(l, "size", json_object_new_int64((int64_t) size)) < 0)
                        return error_sys(err, -ENOMEM, "%s", config_path);
        }

        /* Keep an OCI manifest of it, so every image in the store has one. */
        manifest = json_object_new_object();
        struct json_object *co = json_object_new_object();
        if (!manifest || !co || json_object_object_add(manifest, "schemaVersion", json_object_new_int(2)) < 0 ||
            json_add_string(manifest, "mediaType", OCI_MT_MANIFEST) < 0 || json_add_string(co, "mediaType", DOCKER_MT_CONFIG) < 0 ||
            json_add_string(co, "digest", config_digest) < 0 ||
            json_object_object_add(co, "size", json_object_new_int64((int64_t) config_size)) < 0 ||
            json_object_object_add(manifest, "config", co) < 0 ||
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
