/* SPDX-License-Identifier: Apache-2.0 */
#include "image/oci-manifest.h"
#include "tests.h"

#define D1 "sha256:1111111111111111111111111111111111111111111111111111111111111111"
#define D2 "sha256:2222222222222222222222222222222222222222222222222222222222222222"
#define D3 "sha256:3333333333333333333333333333333333333333333333333333333333333333"

static const OciPlatform amd64 = { "linux", "amd64", NULL };

static int select_str(const char *json, const OciPlatform *p, const char *ref, OciDescriptor *ret, char **ret_msg) {
        Error *err = NULL;
        int r = oci_index_select(json, strlen(json), "index.json", p, ref, ret, &err);
        *ret_msg = err && err->msg ? strdup(err->msg) : NULL;
        error_free(err);
        return r;
}

static void test_index_select(void) {
        const char *index =
                "{\"schemaVersion\":2,\"manifests\":["
                "{\"mediaType\":\"" OCI_MT_MANIFEST "\",\"digest\":\"" D1 "\",\"size\":10,"
                " \"platform\":{\"os\":\"linux\",\"architecture\":\"arm64\",\"variant\":\"v8\"}},"
                "{\"mediaType\":\"" OCI_MT_MANIFEST "\",\"digest\":\"" D2 "\",\"size\":20,"
                " \"platform\":{\"os\":\"linux\",\"architecture\":\"amd64\"},"
                " \"annotations\":{\"org.opencontainers.image.ref.name\":\"example.com/app:1\"}}]}";
        OciDescriptor d = {};
        char *msg = NULL;
        ASSERT_EQ_INT(select_str(index, &amd64, NULL, &d, &msg), 0);
        ASSERT_STREQ(d.digest, D2);
        ASSERT_EQ_INT(d.size, 20);
        ASSERT_STREQ(d.ref_name, "example.com/app:1");
        ASSERT_STREQ(d.architecture, "amd64");
        ASSERT(!d.variant);
        oci_descriptor_done(&d);

        /* A bare tag matches the full name's tag. */
        ASSERT_EQ_INT(select_str(index, &amd64, "1", &d, &msg), 0);
        ASSERT_STREQ(d.digest, D2);
        oci_descriptor_done(&d);

        OciPlatform arm = { "linux", "arm64", "v8" };
        ASSERT_EQ_INT(select_str(index, &arm, NULL, &d, &msg), 0);
        ASSERT_STREQ(d.digest, D1);
        ASSERT_STREQ(d.variant, "v8");
        oci_descriptor_done(&d);

        OciPlatform arm7 = { "linux", "arm64", "v7" };
        ASSERT_EQ_INT(select_str(index, &arm7, NULL, &d, &msg), -ENOENT);
        ASSERT_CONTAINS(msg, "no image for linux/arm64");
        ASSERT_CONTAINS(msg, "linux/amd64 example.com/app:1");
        free(msg);

        ASSERT_EQ_INT(select_str(index, &amd64, "other", &d, &msg), -ENOENT);
        ASSERT_CONTAINS(msg, "named other");
        free(msg);

        /* Entries without a platform match any: two do here. */
        const char *two = "{\"manifests\":[{\"digest\":\"" D1 "\",\"size\":1},{\"digest\":\"" D2 "\",\"size\":2}]}";
        ASSERT_EQ_INT(select_str(two, &amd64, NULL, &d, &msg), -ENOTUNIQ);
        ASSERT_CONTAINS(msg, "2 images match");
        free(msg);

        /* A nested index is returned for the caller to follow. */
        const char *nested = "{\"manifests\":[{\"mediaType\":\"" DOCKER_MT_LIST "\",\"digest\":\"" D3 "\",\"size\":3}]}";
        ASSERT_EQ_INT(select_str(nested, &amd64, NULL, &d, &msg), 0);
        ASSERT(oci_media_type_is_index(d.media_type));
        oci_descriptor_done(&d);

        static const char *const bad[] = {
                "[]",
                "{}",
                "{\"manifests\":{}}",
                "{\"manifests\":[1]}",
                "{\"manifests\":[{\"digest\":\"sha256:12\",\"size\":1}]}",
                "{\"manifests\":[{\"digest\":\"" D1 "\",\"size\":-1}]}",
                "{\"manifests\":[{\"digest\":\"" D1 "\"}]}",
                "{\"manifests\":[{\"digest\":\"" D1 "\",\"size\":1,\"platform\":[]}]}",
                "{\"manifests\":[]} x",
        };
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                int r = select_str(bad[i], &amd64, NULL, &d, &msg);
                if (r != -EBADMSG)
                        fprintf(stderr, "bad[%zu] gave %d\n", i, r);
                ASSERT_EQ_INT(r, -EBADMSG);
                free(msg);
        }
}

static void test_manifest(void) {
        const char *m =
                "{\"schemaVersion\":2,\"mediaType\":\"" DOCKER_MT_MANIFEST "\","
                "\"config\":{\"mediaType\":\"" DOCKER_MT_CONFIG "\",\"digest\":\"" D1 "\",\"size\":100},"
                "\"layers\":[{\"mediaType\":\"application/vnd.oci.image.layer.v1.tar+gzip\",\"digest\":\"" D2 "\",\"size\":5},"
                "{\"mediaType\":\"application/vnd.oci.image.layer.v1.tar+zstd\",\"digest\":\"" D3 "\",\"size\":6}]}";
        OciManifest man = {};
        Error *err = NULL;
        ASSERT_EQ_INT(oci_manifest_parse(m, strlen(m), "M", &man, &err), 0);
        ASSERT_STREQ(man.media_type, DOCKER_MT_MANIFEST);
        ASSERT_STREQ(man.config.digest, D1);
        ASSERT_EQ_INT(man.config.size, 100);
        ASSERT_EQ_INT(man.n_layers, 2);
        ASSERT_STREQ(man.layers[0].digest, D2);
        ASSERT_EQ_INT(man.layers[1].size, 6);
        ASSERT_EQ_INT(oci_layer_media_type_compression(man.layers[0].media_type), OCI_COMPRESSION_GZIP);
        ASSERT_EQ_INT(oci_layer_media_type_compression(man.layers[1].media_type), OCI_COMPRESSION_ZSTD);
        ASSERT_EQ_INT(oci_layer_media_type_compression(DOCKER_MT_LAYER), OCI_COMPRESSION_NONE);
        oci_manifest_done(&man);

        ASSERT_EQ_INT(oci_document_is_index(m, strlen(m), NULL, "M", &err), 0);
        ASSERT_EQ_INT(oci_document_is_index("{\"manifests\":[]}", 16, NULL, "M", &err), 1);
        ASSERT_EQ_INT(oci_document_is_index("{}", 2, OCI_MT_INDEX, "M", &err), 1);

        static const struct {
                const char *json, *msg;
        } bad[] = {
                { "{\"schemaVersion\":2,\"config\":{},\"layers\":[]}", "config" },
                { "{\"schemaVersion\":1,\"config\":{\"digest\":\"" D1 "\",\"size\":1},\"layers\":[]}", "\"schemaVersion\": 1 is not supported" },
                { "{\"schemaVersion\":2,\"mediaType\":\"" OCI_MT_INDEX "\",\"config\":{\"digest\":\"" D1 "\",\"size\":1},\"layers\":[]}", "is not an image manifest" },
                { "{\"schemaVersion\":2,\"config\":{\"digest\":\"" D1 "\",\"size\":1},\"layers\":[{\"digest\":\"" D2 "\",\"size\":1}]}", "layers[0]: media type \"\" is not supported" },
                { "{\"schemaVersion\":2,\"config\":{\"digest\":\"" D1 "\",\"size\":1},\"layers\":[{\"mediaType\":\"text/plain\",\"digest\":\"" D2 "\",\"size\":1}]}", "\"text/plain\" is not supported" },
                { "{\"schemaVersion\":2,\"config\":{\"digest\":\"" D1 "\",\"size\":1},\"layers\":[{\"mediaType\":\"" DOCKER_MT_LAYER "\",\"digest\":\"md5:00\",\"size\":1}]}", "not a sha256 digest" },
        };
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                err = NULL;
                ASSERT_EQ_INT(oci_manifest_parse(bad[i].json, strlen(bad[i].json), "M", &man, &err), -EBADMSG);
                ASSERT_CONTAINS(err->msg, bad[i].msg);
                error_free(err);
        }
}

static void test_config(void) {
        const char *c = "{\"os\":\"linux\",\"architecture\":\"arm\",\"variant\":\"v7\",\"config\":{},"
                        "\"rootfs\":{\"type\":\"layers\",\"diff_ids\":[\"" D1 "\",\"" D2 "\"]}}";
        OciConfig cfg = {};
        Error *err = NULL;
        ASSERT_EQ_INT(oci_config_parse(c, strlen(c), "C", &cfg, &err), 0);
        ASSERT_STREQ(cfg.os, "linux");
        ASSERT_STREQ(cfg.architecture, "arm");
        ASSERT_STREQ(cfg.variant, "v7");
        ASSERT_EQ_INT(cfg.n_diff_ids, 2);
        ASSERT_STREQ(cfg.diff_ids[1], D2);
        oci_config_done(&cfg);

        ASSERT_EQ_INT(oci_config_parse("{}", 2, "C", &cfg, &err), 0);
        ASSERT(!cfg.diff_ids && !cfg.os);
        oci_config_done(&cfg);

        const char *bad = "{\"rootfs\":{\"diff_ids\":[\"sha256:x\"]}}";
        ASSERT_EQ_INT(oci_config_parse(bad, strlen(bad), "C", &cfg, &err), -EBADMSG);
        ASSERT_CONTAINS(err->msg, "rootfs.diff_ids");
        error_free(err);
        err = NULL;
        const char *bad2 = "{\"rootfs\":{}}";
        ASSERT_EQ_INT(oci_config_parse(bad2, strlen(bad2), "C", &cfg, &err), -EBADMSG);
        error_free(err);
}

int main(void) {
        RUN(test_index_select);
        RUN(test_manifest);
        RUN(test_config);
        return 0;
}
