/* SPDX-License-Identifier: Apache-2.0 */
/* The OCI documents a registry or an image layout supplies: image indexes
 * and docker manifest lists (choosing an image), image manifests and image
 * configs (oci-manifest.h). Whatever is accepted must hold what the header
 * promises: valid digests, supported layer media types, diff_ids that are
 * digests. */
#include "fuzz.h"
#include "image/oci-manifest.h"

static void check_descriptor(const OciDescriptor *d, const char *what) {
        if (!digest_is_valid(d->digest))
                fuzz_fail("%s: accepted digest \"%s\"", what, d->digest);
        if (d->size > INT64_MAX)
                fuzz_fail("%s: size %llu", what, (unsigned long long) d->size);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        static const OciPlatform platforms[] = {
                { "linux", "amd64", NULL },
                { "linux", "arm64", "v8" },
        };
        Error *err = NULL;
        for (size_t i = 0; i < ELEMENTSOF(platforms); i++) {
                OciDescriptor d = {};
                err = NULL;
                if (oci_index_select(data, size, "index", &platforms[i], i ? "latest" : NULL, &d, &err) >= 0)
                        check_descriptor(&d, "index");
                fuzz_error_done("index", err);
                oci_descriptor_done(&d);
        }

        OciManifest m = {};
        err = NULL;
        if (oci_manifest_parse(data, size, "manifest", &m, &err) >= 0) {
                check_descriptor(&m.config, "manifest config");
                for (size_t i = 0; i < m.n_layers; i++) {
                        check_descriptor(&m.layers[i], "manifest layer");
                        if (!oci_layer_media_type_is_supported(m.layers[i].media_type))
                                fuzz_fail("manifest: layer media type \"%s\" accepted", m.layers[i].media_type);
                }
        }
        fuzz_error_done("manifest", err);
        oci_manifest_done(&m);

        OciConfig c = {};
        err = NULL;
        if (oci_config_parse(data, size, "config", &c, &err) >= 0)
                for (size_t i = 0; i < c.n_diff_ids; i++)
                        if (!digest_is_valid(c.diff_ids[i]))
                                fuzz_fail("config: diff_id \"%s\" accepted", c.diff_ids[i]);
        fuzz_error_done("config", err);
        oci_config_done(&c);

        err = NULL;
        (void) oci_document_is_index(data, size, NULL, "document", &err);
        fuzz_error_done("document", err);
        return 0;
}
