/* SPDX-License-Identifier: Apache-2.0 */
/* Reader of appc ACIs: a tar (maybe compressed) with "manifest" and "rootfs/". */
#include "basic/json-util.h"
#include "basic/path.h"
#include "image/archive-util.h"
#include "image/import-internal.h"

#define MT_ACI "application/vnd.appc.aci"

/* Reads the "manifest" member of the ACI blob. */
static int read_aci_manifest(Import *imp, const char *digest, char **ret, size_t *ret_size, Error **err) {
        _cleanup_close_ int fd = import_open_blob(imp, digest);
        if (fd < 0)
                return error_sys(err, fd, "ACI %s", digest);
        _cleanup_archive_read_ struct archive *a = NULL;
        int r = archive_open_tar_fd(fd, imp->source, &a, err);
        if (r < 0)
                return r;
        struct archive_entry *e;
        for (;;) {
                int k = archive_read_next_header(a, &e);
                if (k == ARCHIVE_EOF)
                        return error_set(err, -EBADMSG, "%s: ACI without a manifest", imp->source);
                if (k != ARCHIVE_OK && k != ARCHIVE_WARN)
                        return error_set(err, -EBADMSG, "%s: %s", imp->source, archive_error_string(a));
                _cleanup_free_ char *path = NULL;
                if (path_normalize_archive_name(archive_entry_pathname(e) ?: "", &path) < 0 || !streq(path, "manifest"))
                        continue;
                if (archive_entry_filetype(e) != AE_IFREG || archive_entry_size(e) > (la_int64_t) JSON_MAX)
                        return error_set(err, -EBADMSG, "%s: ACI manifest is not a regular file of at most %u bytes",
                                         imp->source, JSON_MAX);
                size_t size = (size_t) archive_entry_size(e);
                _cleanup_free_ char *buf = malloc(size + 1);
                if (!buf)
                        return error_sys(err, -ENOMEM, "%s", imp->source);
                la_ssize_t got = archive_read_data(a, buf, size);
                if (got < 0 || (size_t) got != size)
                        return error_set(err, -EBADMSG, "%s: ACI manifest: %s", imp->source,
                                         got < 0 ? archive_error_string(a) : "truncated");
                buf[size] = 0;
                *ret = TAKE_PTR(buf);
                *ret_size = size;
                return 0;
        }
}

static const char *aci_label(struct json_object *labels, const char *name) {
        for (size_t i = 0; labels && i < json_object_array_length(labels); i++) {
                struct json_object *l = json_object_array_get_idx(labels, i), *n, *v;
                if (json_object_object_get_ex(l, "name", &n) && json_object_object_get_ex(l, "value", &v) &&
                    json_object_is_type(n, json_type_string) && json_object_is_type(v, json_type_string) &&
                    streq(json_object_get_string(n), name))
                        return json_object_get_string(v);
        }
        return NULL;
}

int import_aci(Import *imp, int fd, Error **err) {
        char digest[DIGEST_STRING_SIZE];
        uint64_t size;
        int r = import_blob_from_fd(imp, fd, NULL, -1, "ACI", digest, &size, err);
        if (r < 0)
                return r;
        _cleanup_free_ char *data = NULL;
        size_t data_size = 0;
        _cleanup_json_ struct json_object *m = NULL;
        if ((r = read_aci_manifest(imp, digest, &data, &data_size, err)) < 0 ||
            (r = json_parse(data, data_size, "ACI manifest", &m, err)) < 0)
                return r;

        const char *what = "ACI manifest", *kind, *name;
        struct json_object *labels = NULL, *deps = NULL;
        if ((r = json_get_string(m, "acKind", true, &kind, what, err)) < 0 ||
            (r = json_get_string(m, "name", true, &name, what, err)) < 0 ||
            (r = json_get_array(m, "labels", false, &labels, what, err)) < 0 ||
            (r = json_get_array(m, "dependencies", false, &deps, what, err)) < 0)
                return r;
        if (!streq(kind, "ImageManifest"))
                return error_set(err, -EBADMSG, "%s: field \"acKind\": \"%s\", expected \"ImageManifest\"", what, kind);
        if (deps && json_object_array_length(deps) > 0)
                return error_set(err, -EBADMSG, "%s: field \"dependencies\": ACI dependencies are not supported", what);
        const char *os = aci_label(labels, "os"), *arch = aci_label(labels, "arch");
        if ((r = import_check_platform(imp, os, arch, what, err)) < 0)
                return r;
        _cleanup_free_ char *full = NULL;
        const char *version = aci_label(labels, "version");
        if (asprintf(&full, "%s:%s", name, version ?: "latest") < 0)
                return error_sys(err, -ENOMEM, "%s", what);
        import_add_source_name(imp, full); /* also on re-import: it takes its name back */
        if ((r = import_check_existing(imp, digest, err)) != 0)
                return r;

        Image *im = imp->image;
        im->format = IMAGE_FORMAT_ACI;
        char manifest_digest[DIGEST_STRING_SIZE];
        if ((r = import_blob_from_memory(imp, data, data_size, manifest_digest, err)) < 0)
                return r;
        if (!(im->id = strdup(digest)) || !(im->manifest = strdup(manifest_digest)) ||
            (os && !(im->os = strdup(os))) || (arch && !(im->architecture = strdup(arch))))
                return error_sys(err, -ENOMEM, "%s", what);
        im->size = data_size;
        if ((r = import_add_layer(imp, digest, MT_ACI, size)) < 0)
                return error_sys(err, r, "%s", what);

        return image_app_from_aci_manifest(m, what, &im->app, err);
}
