/* SPDX-License-Identifier: Apache-2.0 */
#include <sys/utsname.h>

#include "basic/json-util.h"
#include "basic/strv.h"
#include "image/image.h"
#include "image/oci-manifest.h"

void oci_descriptor_done(OciDescriptor *d) {
        if (!d)
                return;
        free(d->media_type);
        free(d->ref_name);
        free(d->os);
        free(d->architecture);
        free(d->variant);
        *d = (OciDescriptor) {};
}

/* The architecture of this machine, as OCI names it. */
static const char *host_arch(void) {
        static struct utsname u;
        if (uname(&u) < 0)
                return "amd64";
        if (streq(u.machine, "x86_64"))
                return "amd64";
        if (streq(u.machine, "aarch64"))
                return "arm64";
        if (startswith(u.machine, "arm"))
                return "arm";
        if (streq(u.machine, "i686") || streq(u.machine, "i386"))
                return "386";
        return u.machine;
}

int oci_platform_parse(const char *s, char os[OCI_PLATFORM_PART_MAX], char architecture[OCI_PLATFORM_PART_MAX],
                       char variant[OCI_PLATFORM_PART_MAX], Error **err) {
        *os = *architecture = *variant = 0;
        if (!s) {
                snprintf(os, OCI_PLATFORM_PART_MAX, "linux");
                snprintf(architecture, OCI_PLATFORM_PART_MAX, "%.31s", host_arch());
                return 0;
        }
        int n = sscanf(s, "%31[^/]/%31[^/]/%31s", os, architecture, variant);
        if (n < 2 || !*os || !*architecture)
                return error_set(err, -EINVAL, "platform \"%s\": expected OS/ARCH[/VARIANT]", s);
        return 0;
}

bool oci_media_type_is_index(const char *mt) {
        return mt && (streq(mt, OCI_MT_INDEX) || streq(mt, DOCKER_MT_LIST));
}

bool oci_media_type_is_manifest(const char *mt) {
        return mt && (streq(mt, OCI_MT_MANIFEST) || streq(mt, DOCKER_MT_MANIFEST));
}

static const struct {
        const char *media_type;
        OciCompression compression;
} layer_types[] = {
        { "application/vnd.oci.image.layer.v1.tar", OCI_COMPRESSION_NONE },
        { "application/vnd.oci.image.layer.v1.tar+gzip", OCI_COMPRESSION_GZIP },
        { "application/vnd.oci.image.layer.v1.tar+zstd", OCI_COMPRESSION_ZSTD },
        { "application/vnd.oci.image.layer.nondistributable.v1.tar", OCI_COMPRESSION_NONE },
        { "application/vnd.oci.image.layer.nondistributable.v1.tar+gzip", OCI_COMPRESSION_GZIP },
        { "application/vnd.oci.image.layer.nondistributable.v1.tar+zstd", OCI_COMPRESSION_ZSTD },
        { DOCKER_MT_LAYER, OCI_COMPRESSION_NONE },
        /* docker's name says gzip, but tools have long written plain tars
         * under it too: look at the bytes. */
        { "application/vnd.docker.image.rootfs.diff.tar.gzip", OCI_COMPRESSION_UNKNOWN },
        { "application/vnd.docker.image.rootfs.foreign.diff.tar.gzip", OCI_COMPRESSION_UNKNOWN },
};

bool oci_layer_media_type_is_supported(const char *mt) {
        for (size_t i = 0; mt && i < ELEMENTSOF(layer_types); i++)
                if (streq(mt, layer_types[i].media_type))
                        return true;
        return false;
}

OciCompression oci_layer_media_type_compression(const char *mt) {
        for (size_t i = 0; mt && i < ELEMENTSOF(layer_types); i++)
                if (streq(mt, layer_types[i].media_type))
                        return layer_types[i].compression;
        return OCI_COMPRESSION_UNKNOWN;
}

static int strdup_or_null(const char *s, char **ret) {
        if (!s) {
                *ret = NULL;
                return 0;
        }
        return (*ret = strdup(s)) ? 0 : -ENOMEM;
}

static int parse_descriptor(struct json_object *o, const char *what, OciDescriptor *ret, Error **err) {
        struct json_object *platform = NULL, *annotations = NULL;
        const char *mt = NULL, *digest = NULL, *ref_name = NULL, *os = NULL, *arch = NULL, *variant = NULL;
        int64_t size = -1;
        int r;
        if (!json_object_is_type(o, json_type_object))
                return error_set(err, -EBADMSG, "%s: expected an object", what);
        if ((r = json_get_string(o, "mediaType", false, &mt, what, err)) < 0 ||
            (r = json_get_string(o, "digest", true, &digest, what, err)) < 0 ||
            (r = json_get_int64(o, "size", true, &size, what, err)) < 0 ||
            (r = json_get_object(o, "platform", false, &platform, what, err)) < 0 ||
            (r = json_get_object(o, "annotations", false, &annotations, what, err)) < 0)
                return r;
        if (!digest_is_valid(digest))
                return error_set(err, -EBADMSG, "%s: field \"digest\": \"%s\" is not a sha256 digest", what, digest);
        if (size < 0)
                return error_set(err, -EBADMSG, "%s: field \"size\": negative", what);
        if (platform &&
            ((r = json_get_string(platform, "os", false, &os, what, err)) < 0 ||
             (r = json_get_string(platform, "architecture", false, &arch, what, err)) < 0 ||
             (r = json_get_string(platform, "variant", false, &variant, what, err)) < 0))
                return r;
        if (annotations && (r = json_get_string(annotations, OCI_ANNOTATION_REF_NAME, false, &ref_name, what, err)) < 0)
                return r;

        OciDescriptor d = { .size = (uint64_t) size };
        snprintf(d.digest, sizeof(d.digest), "%s", digest);
        if (strdup_or_null(mt, &d.media_type) < 0 || strdup_or_null(ref_name, &d.ref_name) < 0 ||
            strdup_or_null(os, &d.os) < 0 || strdup_or_null(arch, &d.architecture) < 0 ||
            strdup_or_null(variant, &d.variant) < 0) {
                oci_descriptor_done(&d);
                return error_sys(err, -ENOMEM, "%s", what);
        }
        *ret = d;
        return 0;
}

static int parse_object(const void *data, size_t size, const char *what, struct json_object **ret, Error **err) {
        if (size > OCI_JSON_MAX)
                return error_set(err, -EFBIG, "%s: larger than %u bytes", what, OCI_JSON_MAX);
        _cleanup_json_ struct json_object *o = NULL;
        int r = json_parse(data, size, what, &o, err);
        if (r < 0)
                return r;
        if (!json_object_is_type(o, json_type_object))
                return error_set(err, -EBADMSG, "%s: expected a JSON object", what);
        *ret = TAKE_PTR(o);
        return 0;
}

int oci_document_is_index(const void *data, size_t size, const char *media_type, const char *what, Error **err) {
        if (oci_media_type_is_index(media_type))
                return 1;
        if (oci_media_type_is_manifest(media_type))
                return 0;
        _cleanup_json_ struct json_object *o = NULL;
        const char *mt = NULL;
        int r = parse_object(data, size, what, &o, err);
        if (r < 0 || (r = json_get_string(o, "mediaType", false, &mt, what, err)) < 0)
                return r;
        if (oci_media_type_is_index(mt))
                return 1;
        if (oci_media_type_is_manifest(mt))
                return 0;
        if (mt)
                return error_set(err, -EBADMSG, "%s: field \"mediaType\": \"%s\" is not an image manifest or index", what, mt);
        if (json_object_object_get_ex(o, "manifests", NULL))
                return 1;
        if (json_object_object_get_ex(o, "layers", NULL))
                return 0;
        return error_set(err, -EBADMSG, "%s: neither an image manifest nor an image index", what);
}

bool oci_ref_name_matches(const char *want, const char *ref_name) {
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

#define INDEX_LIST_MAX 512 /* bytes of the list of an index's images in a message */

static bool platform_matches(const OciPlatform *p, const OciDescriptor *d) {
        return (!d->os || streq(d->os, p->os)) && (!d->architecture || streq(d->architecture, p->architecture)) &&
               (!p->variant || !*p->variant || !d->variant || streq(d->variant, p->variant));
}

int oci_index_select(const void *data, size_t size, const char *what, const OciPlatform *platform, const char *ref,
                     OciDescriptor *ret, Error **err) {
        _cleanup_json_ struct json_object *index = NULL;
        struct json_object *manifests;
        int r = parse_object(data, size, what, &index, err);
        if (r < 0 || (r = json_get_array(index, "manifests", true, &manifests, what, err)) < 0)
                return r;

        size_t n = json_object_array_length(manifests), matches = 0;
        OciDescriptor chosen = {};
        _cleanup_free_ char *list = NULL;
        for (size_t i = 0; i < n; i++) {
                char w[256];
                snprintf(w, sizeof(w), "%s: manifests[%zu]", what, i);
                OciDescriptor d;
                r = parse_descriptor(json_object_array_get_idx(manifests, i), w, &d, err);
                if (r < 0) {
                        oci_descriptor_done(&chosen);
                        return r;
                }
                /* What the index has, for the message when nothing fits:
                 * the first few, each cut at 64 bytes. An index may list
                 * tens of thousands: all of them made a message of
                 * megabytes, built in quadratic time. */
                char *l = NULL;
                int k = 0;
                if (!list || strlen(list) < INDEX_LIST_MAX)
                        k = asprintf(&l, "%s%s%.64s/%.64s%s%.64s", strempty(list), list ? ", " : "", d.os ?: "any",
                                     d.architecture ?: "any", d.ref_name ? " " : "", strempty(d.ref_name));
                else if (!endswith(list, ", ..."))
                        k = asprintf(&l, "%s, ...", list);
                if (k < 0) {
                        oci_descriptor_done(&d);
                        oci_descriptor_done(&chosen);
                        return error_sys(err, -ENOMEM, "%s", what);
                }
                if (l) {
                        free(list);
                        list = l;
                }
                if (!platform_matches(platform, &d) || !oci_ref_name_matches(ref, d.ref_name)) {
                        oci_descriptor_done(&d);
                        continue;
                }
                oci_descriptor_done(&chosen);
                chosen = d;
                matches++;
        }
        if (matches != 1)
                oci_descriptor_done(&chosen);
        if (matches == 0)
                return error_set(err, -ENOENT, "%s: no image for %s/%s%s%s (it has: %s)", what, platform->os,
                                 platform->architecture, ref ? " named " : "", strempty(ref), list ?: "nothing");
        if (matches > 1)
                return error_set(err, -ENOTUNIQ, "%s: %zu images match (%s); choose one with --ref", what, matches, list);
        *ret = chosen;
        return 0;
}

void oci_manifest_done(OciManifest *m) {
        if (!m)
                return;
        free(m->media_type);
        oci_descriptor_done(&m->config);
        for (size_t i = 0; i < m->n_layers; i++)
                oci_descriptor_done(&m->layers[i]);
        free(m->layers);
        *m = (OciManifest) {};
}

int oci_manifest_parse(const void *data, size_t size, const char *what, OciManifest *ret, Error **err) {
        _cleanup_json_ struct json_object *manifest = NULL;
        const char *mt = NULL;
        struct json_object *config, *layers;
        int64_t schema = 0;
        int r = parse_object(data, size, what, &manifest, err);
        if (r < 0)
                return r;
        if ((r = json_get_int64(manifest, "schemaVersion", true, &schema, what, err)) < 0 ||
            (r = json_get_string(manifest, "mediaType", false, &mt, what, err)) < 0 ||
            (r = json_get_object(manifest, "config", true, &config, what, err)) < 0 ||
            (r = json_get_array(manifest, "layers", true, &layers, what, err)) < 0)
                return r;
        if (schema != 2)
                return error_set(err, -EBADMSG, "manifest %s: field \"schemaVersion\": %lld is not supported", what, (long long) schema);
        if (mt && !oci_media_type_is_manifest(mt))
                return error_set(err, -EBADMSG, "manifest %s: field \"mediaType\": \"%s\" is not an image manifest", what, mt);

        OciManifest m = {};
        size_t n = json_object_array_length(layers);
        if ((mt && !(m.media_type = strdup(mt))) || (n > 0 && !(m.layers = calloc(n, sizeof(OciDescriptor))))) {
                oci_manifest_done(&m);
                return error_sys(err, -ENOMEM, "%s", what);
        }
        char w[512];
        snprintf(w, sizeof(w), "manifest %s: config", what);
        r = parse_descriptor(config, w, &m.config, err);
        for (size_t i = 0; r >= 0 && i < n; i++) {
                snprintf(w, sizeof(w), "manifest %s: layers[%zu]", what, i);
                r = parse_descriptor(json_object_array_get_idx(layers, i), w, &m.layers[i], err);
                if (r < 0)
                        break;
                m.n_layers++;
                if (!oci_layer_media_type_is_supported(m.layers[i].media_type))
                        r = error_set(err, -EBADMSG, "%s: media type \"%s\" is not supported", w,
                                      strempty(m.layers[i].media_type));
        }
        if (r < 0) {
                oci_manifest_done(&m);
                return r;
        }
        *ret = m;
        return 0;
}

void oci_config_done(OciConfig *c) {
        if (!c)
                return;
        free(c->os);
        free(c->architecture);
        free(c->variant);
        strv_free(c->diff_ids);
        *c = (OciConfig) {};
}

int oci_config_parse(const void *data, size_t size, const char *what, OciConfig *ret, Error **err) {
        _cleanup_json_ struct json_object *config = NULL;
        struct json_object *rootfs = NULL;
        const char *os = NULL, *arch = NULL, *variant = NULL;
        _cleanup_strv_free_ char **diff_ids = NULL;
        int r = parse_object(data, size, what, &config, err);
        if (r < 0)
                return r;
        if ((r = json_get_string(config, "os", false, &os, what, err)) < 0 ||
            (r = json_get_string(config, "architecture", false, &arch, what, err)) < 0 ||
            (r = json_get_string(config, "variant", false, &variant, what, err)) < 0 ||
            (r = json_get_object(config, "rootfs", false, &rootfs, what, err)) < 0)
                return r;
        if (rootfs && (r = json_get_strv(rootfs, "diff_ids", true, &diff_ids, what, err)) < 0)
                return r;
        for (char **i = diff_ids; i && *i; i++)
                if (!digest_is_valid(*i))
                        return error_set(err, -EBADMSG, "%s: rootfs.diff_ids: \"%s\" is not a sha256 digest", what, *i);

        OciConfig c = { .n_diff_ids = strv_length(diff_ids) };
        if (strdup_or_null(os, &c.os) < 0 || strdup_or_null(arch, &c.architecture) < 0 ||
            strdup_or_null(variant, &c.variant) < 0) {
                oci_config_done(&c);
                return error_sys(err, -ENOMEM, "%s", what);
        }
        c.diff_ids = TAKE_PTR(diff_ids);
        *ret = c;
        return 0;
}
