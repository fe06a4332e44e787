/* SPDX-License-Identifier: Apache-2.0 */
/* Untrusted JSON is JSON exactly (json_check_syntax()): each parser of it
 * refuses a number, an escape or a literal that is not JSON, a trailing
 * comma, a comment, a NUL and an unpaired surrogate, which json-c alone
 * takes. And no parser reaches json-c but through json_parse(). */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "basic/fs.h"
#include "basic/json-util.h"
#include "image/oci-manifest.h"
#include "image/policy.h"
#include "image/registry-auth.h"
#include "image/signature.h"
#include "manifest/pod-manifest.h"
#include "shim/oci-spec.h"
#include "tests.h"

/* Each a whole document that must be refused, with what the check says. */
static const struct {
        const char *text;
        size_t size; /* 0: strlen */
        const char *why;
} bad[] = {
        { "[0199]", 0, "a number with a leading zero" },
        { "[09e]", 0, "a number with a leading zero" },
        { "[-01]", 0, "a number with a leading zero" },
        { "[1.]", 0, "no digit after a decimal point" },
        { "[1e]", 0, "no digit in an exponent" },
        { "[1.5e+]", 0, "no digit in an exponent" },
        { "[.5]", 0, "not a JSON value" },
        { "[+1]", 0, "not a JSON value" },
        { "[-]", 0, "not a number" },
        { "[0x10]", 0, "',' or ']' expected" },
        { "[NaN]", 0, "not a JSON value" },
        { "[Infinity]", 0, "not a JSON value" },
        { "[-Infinity]", 0, "not a number" },
        { "[tru]", 0, "not a JSON value" },
        { "[1,]", 0, "a trailing comma" },
        { "{\"a\":1,}", 0, "a trailing comma" },
        { "[,1]", 0, "not a JSON value" },
        { "{\"a\":1 \"b\":2}", 0, "',' or '}' expected" },
        { "{\"a\" 1}", 0, "':' expected" },
        { "{a:1}", 0, "a field name expected" },
        { "{'a':1}", 0, "a field name expected" },
        { "/* c */{}", 0, "not a JSON value" },
        { "{}// c", 0, "trailing data" },
        { "{} {}", 0, "trailing data" },
        { "{}\0", 3, "a NUL" },
        { "{\"a\":\0}", 7, "a NUL" },
        { "[\"a\\u0000b\"]", 0, "a NUL (\\u0000) in a string" },
        { "[\"a\tb\"]", 0, "a control character in a string" },
        { "[\"a\nb\"]", 0, "a control character in a string" },
        { "[\"\\ud800\"]", 0, "an unpaired surrogate in a string" },
        { "[\"\\ud800x\"]", 0, "an unpaired surrogate in a string" },
        { "[\"\\ud800\\u0041\"]", 0, "an unpaired surrogate in a string" },
        { "[\"\\udc00\\ud800\"]", 0, "an unpaired surrogate in a string" },
        { "[\"\\x41\"]", 0, "an invalid escape in a string" },
        { "[\"\\u12G4\"]", 0, "an invalid \\u escape" },
        { "[\"\\'\"]", 0, "an invalid escape in a string" },
        { "[\"\xff\"]", 0, "not UTF-8" },
        { "[\"\xc0\xaf\"]", 0, "not UTF-8" },             /* overlong "/" */
        { "[\"\xed\xa0\x80\"]", 0, "not UTF-8" },         /* a surrogate in UTF-8 */
        { "[\"\xf4\x90\x80\x80\"]", 0, "not UTF-8" },     /* beyond U+10FFFF */
        { "[\"\xe2\x82\"]", 0, "not UTF-8" },             /* cut short */
        { "[\"abc", 0, "an unterminated string" },
        { "[1", 0, "',' or ']' expected" },
        { "", 0, "unexpected end of input" },
        { "   ", 0, "unexpected end of input" },
        { "\xef\xbb\xbf{}", 0, "not a JSON value" },       /* a byte order mark */
        { "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]", 0, "nesting too deep" },
};

static const char *const good[] = {
        "{}", "[]", " \t\r\n{ \"a\" : [ 1 , -0 , 0.5 , -1.25e-3 , 1E+2 , 2e9 , true , false , null ] } \n",
        "[\"\\\"\\\\\\/\\b\\f\\n\\r\\t\\u0041\\u00e9\\ud83d\\ude00\"]", "[\"ünï€😀\"]", "[0]", "[-0.0e0]",
        "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]", /* 32 levels */
};

static void test_check_syntax(void) {
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                size_t size = bad[i].size ?: strlen(bad[i].text);
                Error *err = NULL;
                struct json_object *o = NULL;
                int r = json_parse(bad[i].text, size, "doc", &o, &err);
                if (r != -EBADMSG)
                        fprintf(stderr, "bad[%zu] %s: accepted\n", i, bad[i].text);
                ASSERT_EQ_INT(r, -EBADMSG);
                ASSERT(!o);
                char want[128];
                snprintf(want, sizeof(want), "doc: not valid JSON: %s (at byte ", bad[i].why);
                ASSERT_CONTAINS(err->msg, want);
                error_free(err);
        }
        for (size_t i = 0; i < ELEMENTSOF(good); i++) {
                Error *err = NULL;
                _cleanup_json_ struct json_object *o = NULL;
                int r = json_parse(good[i], strlen(good[i]), "doc", &o, &err);
                if (r < 0)
                        fprintf(stderr, "good[%zu] %s: %s\n", i, good[i], err->msg);
                ASSERT_EQ_INT(r, 0);
                ASSERT(o);
        }
        /* The fuzzer's finding: read as it was written, or not at all. */
        static const char found[] = "{\"acKind\":\"PodManifest\",\"acVersion\":\"1.0.0--rcu.0------5\",\"apps\":[],"
                                    "\"x\":[0199,09e]}";
        Error *err = NULL;
        struct json_object *o = NULL;
        ASSERT_EQ_INT(json_parse(found, strlen(found), "doc", &o, &err), -EBADMSG);
        ASSERT_CONTAINS(err->msg, "doc: not valid JSON: a number with a leading zero (at byte 74)");
        error_free(err);
}

/* ---- every parser of untrusted JSON ------------------------------------ */

typedef int (*ParseFn)(const char *data, size_t size, const char *what, Error **err);

static int parse_pod_manifest(const char *d, size_t n, const char *what, Error **err) {
        _cleanup_pod_manifest_ PodManifest *m = NULL;
        return pod_manifest_parse(d, n, what, &m, err);
}
static int parse_oci_manifest(const char *d, size_t n, const char *what, Error **err) {
        OciManifest m = {};
        int r = oci_manifest_parse(d, n, what, &m, err);
        oci_manifest_done(&m);
        return r;
}
static int parse_oci_config(const char *d, size_t n, const char *what, Error **err) {
        OciConfig c = {};
        int r = oci_config_parse(d, n, what, &c, err);
        oci_config_done(&c);
        return r;
}
static int parse_oci_index(const char *d, size_t n, const char *what, Error **err) {
        OciPlatform p = { .os = "linux", .architecture = "amd64" };
        OciDescriptor desc = {};
        int r = oci_index_select(d, n, what, &p, NULL, &desc, err);
        oci_descriptor_done(&desc);
        return r;
}
static int parse_policy(const char *d, size_t n, const char *what, Error **err) {
        _cleanup_(policy_freep) Policy *p = NULL;
        return policy_parse(d, n, what, NULL, &p, err);
}
static int parse_registry_auth(const char *d, size_t n, const char *what, Error **err) {
        _cleanup_free_ char *user = NULL, *password = NULL;
        return registry_auth_parse(d, n, what, "r.example", &user, &password, err);
}
static int parse_signature(const char *d, size_t n, const char *what, Error **err) {
        SignaturePayload p = {};
        int r = signature_payload_parse(d, n, what, &p, err);
        signature_payload_done(&p);
        return r;
}
static int parse_oci_spec(const char *d, size_t n, const char *what, Error **err) {
        OciSpec *s = NULL;
        int r = oci_spec_parse(d, n, &s, err);
        oci_spec_free(s);
        return r;
}

#define DIGEST "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

/* Each parser with a document it takes: an object, into which the
 * mutations below put what is not JSON. */
static const struct {
        const char *name;
        ParseFn parse;
        const char *doc;
} parsers[] = {
        { "pod manifest", parse_pod_manifest, "{\"acKind\":\"PodManifest\",\"acVersion\":\"0.8.11\",\"apps\":[]}" },
        { "image manifest", parse_oci_manifest,
          "{\"schemaVersion\":2,\"mediaType\":\"application/vnd.oci.image.manifest.v1+json\",\"config\":"
          "{\"mediaType\":\"application/vnd.oci.image.config.v1+json\",\"digest\":\"" DIGEST "\",\"size\":2},"
          "\"layers\":[]}" },
        { "image config", parse_oci_config,
          "{\"architecture\":\"amd64\",\"os\":\"linux\",\"rootfs\":{\"type\":\"layers\",\"diff_ids\":[]}}" },
        { "image index", parse_oci_index,
          "{\"schemaVersion\":2,\"manifests\":[{\"mediaType\":\"application/vnd.oci.image.manifest.v1+json\","
          "\"digest\":\"" DIGEST "\",\"size\":2}]}" },
        { "policy", parse_policy, "{\"default\":[{\"type\":\"insecureAcceptAnything\"}]}" },
        { "auth file", parse_registry_auth, "{\"auths\":{\"r.example\":{\"auth\":\"dTpw\"}}}" },
        { "signature", parse_signature,
          "{\"critical\":{\"type\":\"atomic container signature\",\"image\":{\"docker-manifest-digest\":\"" DIGEST
          "\"},\"identity\":{\"docker-reference\":\"r.example/x:1\"}},\"optional\":{}}" },
        { "OCI spec", parse_oci_spec,
          "{\"ociVersion\":\"1.0.2\",\"process\":{\"args\":[\"/bin/sh\"],\"cwd\":\"/\"},\"root\":{\"path\":\"rootfs\"}}" },
};

/* What is put into a document: after its first '{' (a field of its own),
 * before it, or in place of its last '}'. */
static const struct {
        const char *what;
        const char *after_brace, *before, *last_brace;
        bool nul_at_end;
} mutations[] = {
        { "a number with a leading zero", "\"zz\":0199,", NULL, NULL, false },
        { "a number ending in a point", "\"zz\":1.,", NULL, NULL, false },
        { "NaN", "\"zz\":NaN,", NULL, NULL, false },
        { "a trailing comma", NULL, NULL, ",}", false },
        { "a comment", NULL, "/* c */", NULL, false },
        { "a comment at the end", NULL, NULL, "}// c", false },
        { "a NUL after the document", NULL, NULL, NULL, true },
        { "a NUL in a string", "\"zz\":\"a\\u0000b\",", NULL, NULL, false },
        { "an unpaired surrogate", "\"zz\":\"\\ud800\",", NULL, NULL, false },
        { "a raw tab in a string", "\"zz\":\"a\tb\",", NULL, NULL, false },
        { "bytes that are not UTF-8", "\"zz\":\"\xff\",", NULL, NULL, false },
};

static void test_parsers(void) {
        for (size_t i = 0; i < ELEMENTSOF(parsers); i++) {
                const char *doc = parsers[i].doc;
                Error *err = NULL;
                int r = parsers[i].parse(doc, strlen(doc), parsers[i].name, &err);
                if (r < 0)
                        fprintf(stderr, "%s: the good document: %s\n", parsers[i].name, err->msg);
                ASSERT(r >= 0);
                for (size_t j = 0; j < ELEMENTSOF(mutations); j++) {
                        const char *brace = strchr(doc, '{'), *last = strrchr(doc, '}');
                        char buf[1024];
                        int n;
                        if (mutations[j].after_brace)
                                n = snprintf(buf, sizeof(buf), "%.*s%s%s", (int) (brace + 1 - doc), doc,
                                             mutations[j].after_brace, brace + 1);
                        else if (mutations[j].before)
                                n = snprintf(buf, sizeof(buf), "%s%s", mutations[j].before, doc);
                        else if (mutations[j].last_brace)
                                n = snprintf(buf, sizeof(buf), "%.*s%s", (int) (last - doc), doc,
                                             mutations[j].last_brace);
                        else
                                n = snprintf(buf, sizeof(buf), "%s", doc) + 1; /* its NUL too */
                        ASSERT(n > 0 && (size_t) n < sizeof(buf));
                        err = NULL;
                        r = parsers[i].parse(buf, (size_t) n, parsers[i].name, &err);
                        if (r != -EBADMSG || !strstr(err->msg, "not valid JSON"))
                                fprintf(stderr, "%s with %s: %d %s\n", parsers[i].name, mutations[j].what, r,
                                        err ? err->msg : "accepted");
                        ASSERT_EQ_INT(r, -EBADMSG);
                        ASSERT_CONTAINS(err->msg, parsers[i].name);
                        ASSERT_CONTAINS(err->msg, ": not valid JSON: ");
                        error_free(err);
                }
        }
}

/* json-c's own entry points are json_parse()'s alone: a parser that
 * called them directly would take what is not JSON again. */
static void scan_sources(int dir, const char *rel) {
        _cleanup_closedir_ DIR *d = opendir_at(dir, ".");
        ASSERT(d);
        for (struct dirent *de; (de = readdir(d));) {
                if (de->d_name[0] == '.')
                        continue;
                char path[512];
                snprintf(path, sizeof(path), "%s/%s", rel, de->d_name);
                if (de->d_type == DT_DIR) {
                        int sub = openat(dirfd(d), de->d_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                        ASSERT(sub >= 0);
                        scan_sources(sub, path);
                        close(sub);
                        continue;
                }
                size_t len = strlen(de->d_name);
                if (len < 3 || strcmp(de->d_name + len - 2, ".c") != 0 || streq(path, "lib/basic/json-util.c"))
                        continue;
                _cleanup_free_ char *text = NULL;
                size_t size;
                ASSERT(read_file_at(dirfd(d), de->d_name, 4 << 20, &text, &size, NULL) >= 0);
                for (const char *p = text; (p = strstr(p, "json_tokener_")); p++) {
                        /* signature.c decodes a key of a document json_parse()
                         * took already (json_check_duplicate_keys()). */
                        if (streq(path, "lib/image/signature.c") && startswith(p, "json_tokener_parse(quoted)"))
                                continue;
                        fprintf(stderr, "%s: %.40s: JSON is parsed through json_parse() only\n", path, p);
                        ASSERT(false);
                }
        }
}

static void test_one_way_in(void) {
        const char *root = getenv("SDPOD_SOURCE_ROOT");
        ASSERT(root);
        char lib[4096];
        snprintf(lib, sizeof(lib), "%s/lib", root);
        int fd = open(lib, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        ASSERT(fd >= 0);
        scan_sources(fd, "lib");
        close(fd);
}

int main(void) {
        RUN(test_check_syntax);
        RUN(test_parsers);
        RUN(test_one_way_in);
        return 0;
}
