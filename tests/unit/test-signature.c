/* SPDX-License-Identifier: Apache-2.0 */
/* The signature policy (policy.c), registries.d (lookaside.c) and the
 * verification of "simple signing" signatures (signature.c). The keys and
 * signatures are made by real tools in signature-fixtures.sh: the good ones
 * by skopeo standalone-sign, the broken ones by gpg. */
#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "basic/fs.h"
#include "basic/strv.h"
#include "image/lookaside.h"
#include "image/policy.h"
#include "image/signature.h"
#include "tests.h"

#define REGISTRY "registry.test:5000"

static char scratch[] = "/tmp/test-signature.XXXXXX";
static char fx[PATH_MAX];       /* the fixtures */
static char tmpdir[PATH_MAX];   /* TMPDIR of the library: its GnuPG homes */
static char digest[80], other_digest[80];
static bool have_fixtures;

static void remove_scratch(void) {
        (void) rm_rf(scratch);
}

static char *path_in(const char *dir, const char *name) {
        char *p = NULL;
        ASSERT(asprintf(&p, "%s/%s", dir, name) >= 0);
        return p;
}

static void write_text(const char *path, const char *text) {
        FILE *f = fopen(path, "we");
        ASSERT(f);
        ASSERT(fputs(text, f) >= 0);
        ASSERT(fclose(f) == 0);
}

static void read_line(const char *path, char *buf, size_t size) {
        FILE *f = fopen(path, "re");
        ASSERT(f);
        ASSERT(fgets(buf, (int) size, f));
        fclose(f);
        buf[strcspn(buf, "\n")] = 0;
}

/* A policy file in the scratch directory; returns its path. */
static char *policy_file(const char *name, const char *text) {
        char *p = path_in(scratch, name);
        write_text(p, text);
        return p;
}

static Policy *parse_ok(const char *text) {
        Policy *p = NULL;
        Error *err = NULL;
        int r = policy_parse(text, strlen(text), "p.json", "/etc/keys", &p, &err);
        if (r < 0)
                fprintf(stderr, "unexpected: %s\n", err ? err->msg : "?");
        ASSERT_EQ_INT(r, 0);
        error_free(err);
        return p;
}

static void parse_fails(const char *text, const char *message) {
        Policy *p = NULL;
        Error *err = NULL;
        ASSERT_EQ_INT(policy_parse(text, strlen(text), "p.json", NULL, &p, &err), -EBADMSG);
        ASSERT(err);
        ASSERT_CONTAINS(err->msg, "p.json");
        ASSERT_CONTAINS(err->msg, message);
        error_free(err);
}

static void test_references(void) {
        static const struct {
                const char *in, *name, *tag, *digest;
        } ok[] = {
                { "busybox", "docker.io/library/busybox", NULL, NULL },
                { "busybox:1.36", "docker.io/library/busybox", "1.36", NULL },
                { "library/busybox", "docker.io/library/busybox", NULL, NULL },
                { "index.docker.io/x/y:z", "docker.io/x/y", "z", NULL },
                { "docker.io/busybox", "docker.io/library/busybox", NULL, NULL },
                { "localhost/a", "localhost/a", NULL, NULL },
                { "localhost:5000/a/b_c/d__e/f-g--h.i:T_1.x-y", "localhost:5000/a/b_c/d__e/f-g--h.i", "T_1.x-y", NULL },
                { "127.0.0.1:5000/x@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
                  "127.0.0.1:5000/x", NULL, "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef" },
                { "[::1]:5000/x:y", "[::1]:5000/x", "y", NULL },
                { "Registry/x", "Registry/x", NULL, NULL },
        };
        for (size_t i = 0; i < ELEMENTSOF(ok); i++) {
                DockerReference r = {};
                ASSERT_EQ_INT(docker_reference_parse(ok[i].in, &r), 0);
                ASSERT_STREQ(r.name, ok[i].name);
                ASSERT(streq_ptr(r.tag, ok[i].tag));
                ASSERT(streq_ptr(r.digest, ok[i].digest));
                docker_reference_done(&r);
        }
        static const char *const bad[] = {
                "", "a//b", "-a/b", "a/b:", "a/b:t:t", "a/B", "UPPER", "a/b@sha256:00", "a/b@md5:00",
                "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", "host:port/x", "a/b/",
                "a/.b", "a/b..c", "a/b_-c", "ho_st.com/x", "x:-tag",
        };
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                DockerReference r = {};
                if (docker_reference_parse(bad[i], &r) != -EINVAL) {
                        fprintf(stderr, "accepted: \"%s\"\n", bad[i]);
                        ASSERT(false);
                }
        }

        DockerReference r = {};
        ASSERT_EQ_INT(docker_reference_parse("a.b.example.com:5000/ns/sub/repo:tag", &r), 0);
        char **s = docker_reference_scopes(&r);
        const char *want[] = {
                "a.b.example.com:5000/ns/sub/repo:tag", "a.b.example.com:5000/ns/sub/repo",
                "a.b.example.com:5000/ns/sub", "a.b.example.com:5000/ns", "a.b.example.com:5000",
                "*.b.example.com", "*.example.com", "*.com", NULL,
        };
        for (size_t i = 0; want[i]; i++)
                ASSERT_STREQ(s[i], want[i]);
        ASSERT_EQ_INT(strv_length(s), ELEMENTSOF(want) - 1);
        strv_free(s);
        docker_reference_done(&r);
}

static void test_policy_parse(void) {
        /* What containers ship as the default, and the built-in one. */
        Policy *p = parse_ok("{\"default\":[{\"type\":\"insecureAcceptAnything\"}],"
                             "\"transports\":{\"docker-daemon\":{\"\":[{\"type\":\"insecureAcceptAnything\"}]}}}");
        ASSERT_EQ_INT(p->n_docker, 0);
        ASSERT_EQ_INT(p->fallback.n_requirements, 1);
        policy_free(p);

        p = parse_ok("{\"default\":[{\"type\":\"reject\"}],\"transports\":{\"docker\":{"
                     "\"r.test/a\":[{\"type\":\"signedBy\",\"keyType\":\"GPGKeys\",\"keyPath\":\"k.gpg\"}],"
                     "\"r.test/b\":[{\"type\":\"signedBy\",\"keyType\":\"GPGKeys\",\"keyPaths\":[\"/k1\",\"k2\"],"
                     "\"signedIdentity\":{\"type\":\"exactReference\",\"dockerReference\":\"busybox:1\"}}],"
                     "\"r.test/c\":[{\"type\":\"signedBy\",\"keyType\":\"GPGKeys\",\"keyData\":\"aGVsbG8=\","
                     "\"signedIdentity\":{\"type\":\"exactRepository\",\"dockerRepository\":\"r.test/x\"}}],"
                     "\"r.test/d\":[{\"type\":\"sigstoreSigned\",\"keyPath\":\"/x\"}],"
                     "\"*.example.com\":[{\"type\":\"reject\"}]}}}");
        ASSERT_EQ_INT(p->n_docker, 5);
        const PolicyScope *a = policy_lookup(p, "r.test", "a", "v1", NULL);
        ASSERT_STREQ(a->name, "r.test/a");
        ASSERT_STREQ(a->requirements[0].key_paths[0], "/etc/keys/k.gpg");
        ASSERT_CONTAINS(a->requirements[0].where, "p.json: transports[\"docker\"][\"r.test/a\"][0]");
        ASSERT_EQ_INT(a->requirements[0].identity, POLICY_IDENTITY_MATCH_REPO_DIGEST_OR_EXACT);
        const PolicyScope *b = policy_lookup(p, "r.test", "b", "v1", NULL);
        ASSERT_STREQ(b->requirements[0].key_paths[0], "/k1");
        ASSERT_STREQ(b->requirements[0].key_paths[1], "/etc/keys/k2");
        ASSERT_STREQ(b->requirements[0].identity_reference, "docker.io/library/busybox:1");
        const PolicyScope *c = policy_lookup(p, "r.test", "c", "v1", NULL);
        ASSERT_EQ_INT(c->requirements[0].key_data_size, 5);
        ASSERT(memcmp(c->requirements[0].key_data, "hello", 5) == 0);
        ASSERT_STREQ(c->requirements[0].identity_reference, "r.test/x");
        ASSERT_EQ_INT(policy_lookup(p, "r.test", "d", "v1", NULL)->requirements[0].type, POLICY_UNSUPPORTED);
        ASSERT_STREQ(policy_lookup(p, "x.y.example.com:443", "n/r", "v", NULL)->name, "*.example.com");
        ASSERT_STREQ(policy_lookup(p, "example.com", "n/r", "v", NULL)->name, "default");
        ASSERT_STREQ(policy_lookup(p, "r.test", "e", "v1", NULL)->name, "default");
        policy_free(p);

        /* The most specific scope wins, whatever the order in the file. */
        p = parse_ok("{\"default\":[{\"type\":\"reject\"}],\"transports\":{\"docker\":{"
                     "\"\":[{\"type\":\"reject\"}],"
                     "\"*.test\":[{\"type\":\"reject\"}],"
                     "\"r.test:5000\":[{\"type\":\"reject\"}],"
                     "\"r.test:5000/ns\":[{\"type\":\"reject\"}],"
                     "\"r.test:5000/ns/app\":[{\"type\":\"reject\"}],"
                     "\"r.test:5000/ns/app:v1\":[{\"type\":\"insecureAcceptAnything\"}],"
                     "\"r.test:5000/ns/app@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\":"
                     "[{\"type\":\"insecureAcceptAnything\"}]}}}");
        const char *d = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
        ASSERT_STREQ(policy_lookup(p, "r.test:5000", "ns/app", "v1", NULL)->name, "r.test:5000/ns/app:v1");
        ASSERT_STREQ(policy_lookup(p, "r.test:5000", "ns/app", NULL, d)->name,
                     "r.test:5000/ns/app@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef");
        ASSERT_STREQ(policy_lookup(p, "r.test:5000", "ns/app", "v2", NULL)->name, "r.test:5000/ns/app");
        ASSERT_STREQ(policy_lookup(p, "r.test:5000", "ns/other", "v1", NULL)->name, "r.test:5000/ns");
        ASSERT_STREQ(policy_lookup(p, "r.test:5000", "other", "v1", NULL)->name, "r.test:5000");
        ASSERT_STREQ(policy_lookup(p, "r.test:5001", "other", "v1", NULL)->name, "*.test");
        ASSERT_STREQ(policy_lookup(p, "elsewhere.org", "other", "v1", NULL)->name, "docker \"\"");
        policy_free(p);

        parse_fails("{}", "field \"default\": missing");
        parse_fails("{\"default\":[]}", "default: no requirements");
        parse_fails("{\"default\":[{\"type\":\"acceptEverything\"}]}",
                    "default[0]: unknown requirement type \"acceptEverything\"");
        parse_fails("{\"default\":[{\"type\":\"reject\",\"keyPath\":\"/x\"}]}", "default[0]: unknown field \"keyPath\"");
        parse_fails("{\"default\":[{\"type\":\"reject\"}],\"extra\":1}", "unknown field \"extra\"");
        parse_fails("{\"default\":[{\"type\":\"signedBy\",\"keyType\":\"X509Certificates\",\"keyPath\":\"/k\"}]}",
                    "default[0].keyType: \"X509Certificates\" is not supported");
        parse_fails("{\"default\":[{\"type\":\"signedBy\",\"keyType\":\"GPGKeys\"}]}",
                    "exactly one of \"keyPath\", \"keyPaths\" and \"keyData\"");
        parse_fails("{\"default\":[{\"type\":\"signedBy\",\"keyType\":\"GPGKeys\",\"keyPath\":\"/a\",\"keyData\":\"aGk=\"}]}",
                    "exactly one of");
        parse_fails("{\"default\":[{\"type\":\"signedBy\",\"keyType\":\"GPGKeys\",\"keyData\":\"!!\"}]}",
                    "default[0].keyData: not base64");
        parse_fails("{\"default\":[{\"type\":\"signedBy\",\"keyType\":\"GPGKeys\",\"keyPaths\":[]}]}",
                    "default[0].keyPaths: empty");
        parse_fails("{\"default\":[{\"type\":\"signedBy\",\"keyType\":\"GPGKeys\",\"keyPath\":\"/k\","
                    "\"signedIdentity\":{\"type\":\"remapIdentity\",\"prefix\":\"a\",\"signedPrefix\":\"b\"}}]}",
                    "default[0].signedIdentity: type \"remapIdentity\" is not supported");
        parse_fails("{\"default\":[{\"type\":\"signedBy\",\"keyType\":\"GPGKeys\",\"keyPath\":\"/k\","
                    "\"signedIdentity\":{\"type\":\"exactReference\",\"dockerReference\":\"r.test/x\"}}]}",
                    "dockerReference: \"r.test/x\" names no tag or digest");
        parse_fails("{\"default\":[{\"type\":\"signedBy\",\"keyType\":\"GPGKeys\",\"keyPath\":\"/k\","
                    "\"signedIdentity\":{\"type\":\"matchExact\",\"dockerReference\":\"r.test/x:1\"}}]}",
                    "signedIdentity: unknown field \"dockerReference\"");
        parse_fails("{\"default\":[{\"type\":\"reject\"}],\"transports\":{\"docker\":{\"a*b\":[{\"type\":\"reject\"}]}}}",
                    "transports[\"docker\"][\"a*b\"]: not a docker scope");
        /* Unknown types are refused in any transport, used or not. */
        parse_fails("{\"default\":[{\"type\":\"reject\"}],\"transports\":{\"atomic\":{\"\":[{\"type\":\"signedby\"}]}}}",
                    "transports[\"atomic\"][\"\"][0]: unknown requirement type \"signedby\"");
        parse_fails("{\"default\":[{\"type\":\"reject\"}]", "not valid JSON");

        /* Files: the built-in default is only for the default path. */
        Error *err = NULL;
        p = NULL;
        char *missing = path_in(scratch, "no-such-policy.json");
        ASSERT_EQ_INT(policy_load(missing, &p, &err), -ENOENT);
        ASSERT_CONTAINS(err->msg, missing);
        error_free(err);
        free(missing);

        /* The default: this machine's file, or the built-in policy. */
        err = NULL;
        ASSERT_EQ_INT(policy_load(NULL, &p, &err), 0);
        ASSERT(streq(p->path, POLICY_DEFAULT_PATH) || startswith(p->path, "built-in default policy"));
        policy_free(p);

        char *f = policy_file("rel.json", "{\"default\":[{\"type\":\"signedBy\",\"keyType\":\"GPGKeys\",\"keyPath\":\"keys/a.gpg\"}]}");
        err = NULL;
        ASSERT_EQ_INT(policy_load(f, &p, &err), 0);
        char *want = path_in(scratch, "keys/a.gpg");
        ASSERT_STREQ(p->fallback.requirements[0].key_paths[0], want);
        ASSERT_STREQ(p->path, f);
        policy_free(p);
        free(want);
        free(f);
}

static void test_identity(void) {
        PolicyRequirement req = {};
        DockerReference by_tag = {}, by_digest = {};
        ASSERT_EQ_INT(docker_reference_parse("r.test/ns/app:v1", &by_tag), 0);
        ASSERT_EQ_INT(docker_reference_parse("r.test/ns/app@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
                                             &by_digest), 0);

        req.identity = POLICY_IDENTITY_MATCH_REPO_DIGEST_OR_EXACT;
        ASSERT(policy_identity_matches(&req, &by_tag, "r.test/ns/app:v1"));
        ASSERT(!policy_identity_matches(&req, &by_tag, "r.test/ns/app:v2"));
        ASSERT(!policy_identity_matches(&req, &by_tag, "r.test/ns/app"));
        ASSERT(!policy_identity_matches(&req, &by_tag, "r.test/ns/other:v1"));
        ASSERT(policy_identity_matches(&req, &by_digest, "r.test/ns/app:anything"));
        ASSERT(!policy_identity_matches(&req, &by_digest, "r.test/ns/other:v1"));
        ASSERT(!policy_identity_matches(&req, &by_tag, "not a reference"));

        req.identity = POLICY_IDENTITY_MATCH_EXACT;
        ASSERT(policy_identity_matches(&req, &by_tag, "r.test/ns/app:v1"));
        ASSERT(!policy_identity_matches(&req, &by_digest, "r.test/ns/app:v1"));
        ASSERT(!policy_identity_matches(&req, &by_tag, "r.test/ns/app"));

        req.identity = POLICY_IDENTITY_MATCH_REPOSITORY;
        ASSERT(policy_identity_matches(&req, &by_tag, "r.test/ns/app:v9"));
        ASSERT(policy_identity_matches(&req, &by_tag, "r.test/ns/app"));
        ASSERT(!policy_identity_matches(&req, &by_tag, "r.test/ns/ap:v1"));

        /* Normalization: docker.io's short names are the long ones. */
        DockerReference hub = {};
        ASSERT_EQ_INT(docker_reference_parse("docker.io/library/busybox:latest", &hub), 0);
        req.identity = POLICY_IDENTITY_MATCH_REPO_DIGEST_OR_EXACT;
        ASSERT(policy_identity_matches(&req, &hub, "busybox:latest"));
        ASSERT(policy_identity_matches(&req, &hub, "index.docker.io/library/busybox:latest"));

        req.identity = POLICY_IDENTITY_EXACT_REFERENCE;
        req.identity_reference = (char *) "r.test/signed/as:this";
        ASSERT(policy_identity_matches(&req, &by_tag, "r.test/signed/as:this"));
        ASSERT(!policy_identity_matches(&req, &by_tag, "r.test/ns/app:v1"));
        req.identity = POLICY_IDENTITY_EXACT_REPOSITORY;
        req.identity_reference = (char *) "r.test/signed/as";
        ASSERT(policy_identity_matches(&req, &by_tag, "r.test/signed/as:whatever"));
        ASSERT(!policy_identity_matches(&req, &by_tag, "r.test/ns/app:v1"));

        docker_reference_done(&hub);
        docker_reference_done(&by_tag);
        docker_reference_done(&by_digest);
}

static void lookaside_fails(const char *text, const char *message) {
        Lookaside *l = lookaside_new();
        Error *err = NULL;
        ASSERT_EQ_INT(lookaside_parse(l, text, strlen(text), "d/x.yaml", &err), -EBADMSG);
        ASSERT_CONTAINS(err->msg, "d/x.yaml");
        ASSERT_CONTAINS(err->msg, message);
        error_free(err);
        lookaside_free(l);
}

static void test_lookaside(void) {
        char *dir = path_in(scratch, "registries.d");
        ASSERT(mkdir(dir, 0755) == 0);
        char *f1 = path_in(dir, "10-default.yaml"), *f2 = path_in(dir, "20-more.yaml");
        char *ignored = path_in(dir, "README");
        write_text(f1, "# comment\ndefault-docker:\n  sigstore: https://sigs.example.com/base/\n"
                       "  sigstore-staging: file:///var/lib/containers/sigstore\n");
        write_text(f2, "docker:\n"
                       "  r.test:5000:\n    lookaside: file:///srv/host\n"
                       "  r.test:5000/ns:\n    lookaside: file:///srv/ns\n    sigstore: file:///srv/old\n"
                       "  r.test:5000/ns/app:v1:\n    lookaside: file:///srv/tag\n"
                       "  r.test:5000/ns/nourl:\n    lookaside-staging: file:///srv/staging\n"
                       "  '*.example.org':\n    lookaside: http://wild.example.org\n"
                       "other-tool-key: [1, 2]\n");
        write_text(ignored, "docker: [not: yaml: at: all\n");

        Lookaside *l = NULL;
        Error *err = NULL;
        ASSERT_EQ_INT(lookaside_load(dir, &l, &err), 0);
        const LookasideEntry *e;
        ASSERT((e = lookaside_find(l, "r.test:5000", "ns/app", "v1", NULL)));
        ASSERT_STREQ(e->url, "file:///srv/tag");
        ASSERT((e = lookaside_find(l, "r.test:5000", "ns/app", "v2", NULL)));
        ASSERT_STREQ(e->url, "file:///srv/ns");
        ASSERT_CONTAINS(e->where, "20-more.yaml: docker[\"r.test:5000/ns\"]");
        /* A scope without a URL does not stop the search. */
        ASSERT((e = lookaside_find(l, "r.test:5000", "ns/nourl", "v1", NULL)));
        ASSERT_STREQ(e->url, "file:///srv/ns");
        ASSERT((e = lookaside_find(l, "r.test:5000", "x", "v1", NULL)));
        ASSERT_STREQ(e->url, "file:///srv/host");
        ASSERT((e = lookaside_find(l, "a.example.org", "x", "v1", NULL)));
        ASSERT_STREQ(e->url, "http://wild.example.org");
        ASSERT((e = lookaside_find(l, "quay.io", "x", "v1", NULL)));
        ASSERT_STREQ(e->url, "https://sigs.example.com/base/");
        ASSERT_CONTAINS(e->where, "10-default.yaml: default-docker");
        lookaside_free(l);

        char *url = lookaside_signature_url("https://sigs.example.com/base/", "ns/app",
                                            "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", 3);
        ASSERT_STREQ(url, "https://sigs.example.com/base/ns/app@sha256=0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef/signature-3");
        free(url);
        url = lookaside_signature_url("file:///", "a", "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", 1);
        ASSERT_STREQ(url, "file:///a@sha256=0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef/signature-1");
        free(url);
        ASSERT(!lookaside_signature_url("file:///", "a", "md5:00", 1));

        /* A scope given in two files is refused, naming both. */
        char *f3 = path_in(dir, "30-dup.yaml");
        write_text(f3, "docker:\n  r.test:5000/ns:\n    lookaside: file:///x\n");
        err = NULL;
        ASSERT_EQ_INT(lookaside_load(dir, &l, &err), -EBADMSG);
        ASSERT_CONTAINS(err->msg, "30-dup.yaml: docker[\"r.test:5000/ns\"]: defined a second time (first in ");
        ASSERT_CONTAINS(err->msg, "20-more.yaml");
        error_free(err);
        ASSERT(unlink(f3) == 0);

        /* Missing directories: the default may be missing, a named one not. */
        char *none = path_in(scratch, "no-registries.d");
        err = NULL;
        ASSERT(lookaside_load(none, &l, &err) == -ENOENT);
        ASSERT_CONTAINS(err->msg, none);
        error_free(err);

        lookaside_fails("docker:\n  a:\n    lookaside: ftp://x\n", "docker[\"a\"].lookaside: \"ftp://x\": only file://");
        lookaside_fails("docker: [1]\n", "docker: expected a mapping of scopes");
        lookaside_fails("- a\n", "expected a mapping");
        lookaside_fails("docker:\n  a: {lookaside: [x]}\n", "docker[\"a\"].lookaside: expected a URL");
        lookaside_fails("default-docker:\n  lookaside: file:///a\ndefault-docker:\n  lookaside: file:///b\n",
                        "default-docker: defined a second time");
        lookaside_fails("docker:\n  a: {lookaside: 'file:///a\n", "not valid YAML");
        /* Empty files and empty sections are nothing. */
        l = lookaside_new();
        ASSERT_EQ_INT(lookaside_parse(l, "", 0, "e.yaml", NULL), 0);
        ASSERT_EQ_INT(lookaside_parse(l, "# nothing\n", 10, "e.yaml", NULL), 0);
        ASSERT_EQ_INT(lookaside_parse(l, "docker:\n", 8, "e.yaml", NULL), 0);
        ASSERT(!lookaside_find(l, "r", "x", "y", NULL));
        lookaside_free(l);

        free(none);
        free(f3);
        free(ignored);
        free(f1);
        free(f2);
        free(dir);
}

static void test_payload(void) {
        SignaturePayload p = {};
        Error *err = NULL;
        const char *good = "{\"critical\":{\"identity\":{\"docker-reference\":\"r.test/a:1\"},\"image\":"
                           "{\"docker-manifest-digest\":\"sha256:00\"},\"type\":\"atomic container signature\"},"
                           "\"optional\":{\"creator\":\"me\",\"timestamp\":12,\"anything\":[1]}}";
        ASSERT_EQ_INT(signature_payload_parse(good, strlen(good), "sig", &p, &err), 0);
        ASSERT_STREQ(p.docker_reference, "r.test/a:1");
        ASSERT_STREQ(p.manifest_digest, "sha256:00");
        ASSERT_STREQ(p.creator, "me");
        ASSERT_EQ_INT(p.timestamp, 12);
        signature_payload_done(&p);

        static const struct {
                const char *text, *message;
        } bad[] = {
                { "[]", "sig: expected a JSON object" },
                { "{\"critical\":{}}", "sig: critical: field \"type\": missing" },
                { "{\"critical\":{\"type\":\"atomic container signature\",\"image\":{\"docker-manifest-digest\":\"d\"},"
                  "\"identity\":{\"docker-reference\":\"r\"},\"new\":1}}",
                  "sig: critical: unknown field \"new\"" },
                { "{\"critical\":{\"type\":\"x\",\"image\":{\"docker-manifest-digest\":\"d\"},"
                  "\"identity\":{\"docker-reference\":\"r\"}}}",
                  "critical.type: \"x\", expected" },
                { "{\"critical\":{\"type\":\"atomic container signature\",\"image\":{\"docker-manifest-digest\":1},"
                  "\"identity\":{\"docker-reference\":\"r\"}}}",
                  "critical.image: field \"docker-manifest-digest\": expected a string" },
                { "{\"critical\":{\"type\":\"atomic container signature\",\"image\":{\"docker-manifest-digest\":\"d\",\"x\":1},"
                  "\"identity\":{\"docker-reference\":\"r\"}}}",
                  "critical.image: unknown field \"x\"" },
                { "{\"critical\":{\"type\":\"atomic container signature\",\"image\":{\"docker-manifest-digest\":\"d\"},"
                  "\"identity\":{}}}",
                  "critical.identity: field \"docker-reference\": missing" },
                { "{\"critical\":{\"type\":\"atomic container signature\",\"image\":{\"docker-manifest-digest\":\"d\"},"
                  "\"identity\":{\"docker-reference\":\"r\"}},\"optional\":{\"timestamp\":\"now\"}}",
                  "optional: field \"timestamp\": expected an integer" },
                { "{\"critical\":null}", "field \"critical\": missing" },
                /* Two values for one field: which one a reader keeps differs. */
                { "{\"critical\":{\"type\":\"atomic container signature\",\"image\":{\"docker-manifest-digest\":\"a\","
                  "\"docker-manifest-digest\":\"b\"},\"identity\":{\"docker-reference\":\"r\"}}}",
                  "sig: field \"docker-manifest-digest\" given twice" },
                { "{\"critical\":{\"type\":\"atomic container signature\",\"image\":{\"docker-manifest-digest\":\"a\"},"
                  "\"identity\":{\"docker-reference\":\"r\"}},\"optional\":{},\"crit\\u0069cal\":{}}",
                  "sig: field \"critical\" given twice" },
                /* Strict JSON only. */
                { "{\"critical\":{},}", "sig: not valid JSON" },
                { "{/* c */\"critical\":{}}", "sig: not valid JSON" },
                { "{'critical':{}}", "sig: not valid JSON" },
                { "{\"critical\":{}} x", "sig: not valid JSON" },
                { "{\"critical\":\"\xff\"}", "sig: not valid JSON" },
                { "{\"critical\":{},\"more\":{}}", "unknown field \"more\"" },
        };
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                err = NULL;
                ASSERT_EQ_INT(signature_payload_parse(bad[i].text, strlen(bad[i].text), "sig", &p, &err), -EBADMSG);
                ASSERT_CONTAINS(err->msg, bad[i].message);
                error_free(err);
        }
}

/* ---- verification with the fixtures ---------------------------------- */

static unsigned fetches;

static int counting_fetch(const char *url, size_t max, char **ret, size_t *ret_size, void *userdata, Error **err) {
        fetches++;
        ASSERT(userdata == &fetches);
        ASSERT_EQ_INT(max, SIGNATURE_SIZE_MAX);
        return signature_fetch_file(url, max, ret, ret_size, NULL, err);
}

static char *regd;

/* A lookaside that cannot be reached: once with a message, once without. */
static int failing_fetch(const char *url, size_t max, char **ret, size_t *ret_size, void *userdata, Error **err) {
        if (userdata)
                return error_set(err, -EHOSTUNREACH, "%s: no route to the lookaside", url);
        return -ECONNREFUSED;
}

/* Checks REGISTRY/ns/CASE:tag (by digest when tag is NULL) under the policy
 * file; returns the result and the message in *ret_msg. */
static int check(const char *policy_path, const char *image, const char *tag, const char *dgst, char **ret_msg) {
        SignaturePolicy *p = NULL;
        Error *err = NULL;
        ASSERT_EQ_INT(signature_policy_load(policy_path, &p, &err), 0);
        char repo[128];
        snprintf(repo, sizeof(repo), "ns/%s", image);
        int r = signature_policy_check(p, regd, REGISTRY, repo, tag, dgst ? dgst : digest, counting_fetch, &fetches,
                                       &err);
        if (ret_msg)
                *ret_msg = err && err->msg ? strdup(err->msg) : NULL;
        if (r < 0)
                fprintf(stderr, "  %s/%s: %s\n", REGISTRY, repo, err && err->msg ? err->msg : "?");
        error_free(err);
        signature_policy_free(p);
        return r;
}

static void refused(const char *policy_path, const char *image, const char *tag, const char *message) {
        char *msg = NULL;
        ASSERT_EQ_INT(check(policy_path, image, tag, NULL, &msg), -EPERM);
        ASSERT_CONTAINS(msg, message);
        free(msg);
}

static char *signed_by_policy(const char *name, const char *key_field, const char *identity) {
        char text[3 * PATH_MAX];
        snprintf(text, sizeof(text),
                 "{\"default\":[{\"type\":\"reject\"}],\"transports\":{\"docker\":{"
                 "\"" REGISTRY "\":[{\"type\":\"signedBy\",\"keyType\":\"GPGKeys\",%s%s%s}],"
                 "\"" REGISTRY "/ns/rejected\":[{\"type\":\"reject\"}],"
                 "\"" REGISTRY "/ns/open\":[{\"type\":\"insecureAcceptAnything\"}],"
                 "\"" REGISTRY "/ns/sigstore\":[{\"type\":\"sigstoreSigned\",\"keyPath\":\"/x\"}]}}}",
                 key_field, identity ? ",\"signedIdentity\":" : "", identity ? identity : "");
        return policy_file(name, text);
}

static void test_verify(void) {
        if (!have_fixtures) {
                fprintf(stderr, "  skipped: no fixtures (gpg or skopeo missing)\n");
                return;
        }
        char field[2 * PATH_MAX + 64];
        snprintf(field, sizeof(field), "\"keyPath\":\"%s/a.pub\"", fx);
        char *pa = signed_by_policy("a.json", field, NULL);

        /* Made by skopeo standalone-sign, checked by tag and by digest. */
        ASSERT_EQ_INT(check(pa, "good", "v1", NULL, NULL), 0);
        ASSERT_EQ_INT(check(pa, "good", NULL, NULL, NULL), 0);
        ASSERT_EQ_INT(check(pa, "clearsigned", "v1", NULL, NULL), 0);
        ASSERT_EQ_INT(check(pa, "subkey", "v1", NULL, NULL), -EPERM); /* c is not a's */
        ASSERT_EQ_INT(check(pa, "multi", "v1", NULL, NULL), 0);
        refused(pa, "good", "v2", "identity mismatch: signed (by ");
        refused(pa, "good", "v2", "for \"" REGISTRY "/ns/good:v1\", the image is " REGISTRY "/ns/good:v2 (matchRepoDigestOrExact)");
        refused(pa, "unsigned", "v1", "no signature found at file://");
        refused(pa, "unsigned", "v1", "/ns/unsigned@sha256=");
        refused(pa, "unsigned", "v1", "/signature-1 (lookaside of ");
        refused(pa, "wrongdigest", "v1", "manifest digest mismatch: signed (by ");
        refused(pa, "wrongidentity", "v1", "identity mismatch: signed (by ");
        refused(pa, "wrongkey", "v1", "signature by an unknown key ");
        refused(pa, "tampered", "v1", "bad signature (gpg: Bad signature)");
        refused(pa, "badtype", "v1", "critical.type: \"atomic container signature v2\"");
        refused(pa, "badcritical", "v1", "critical: unknown field \"expires\"");
        refused(pa, "notjson", "v1", "its signed content: not valid JSON");
        refused(pa, "detached", "v1", "bad signature");
        refused(pa, "garbage", "v1", "not an OpenPGP signed message");
        refused(pa, "bomb", "v1", "its signed content is larger than 64 KiB");
        refused(pa, "huge", "v1", "signature 1 (file://");
        refused(pa, "huge", "v1", "larger than 64 KiB");
        fetches = 0;
        refused(pa, "many", "v1", "none of the 64 signatures is accepted: signature 1 (");
        ASSERT_EQ_INT(fetches, SIGNATURE_COUNT_MAX);
        refused(pa, "rejected", "v1", "rejected by the policy for scope " REGISTRY "/ns/rejected (");
        refused(pa, "sigstore", "v1", "\"sigstoreSigned\" is not supported by sdpod");

        /* gpgme would have SIGPIPE ignored in the whole process, and
         * every program sdpod starts would inherit that: it is not. */
        struct sigaction sa;
        ASSERT(sigaction(SIGPIPE, NULL, &sa) == 0);
        ASSERT(sa.sa_handler == SIG_DFL);
        sigset_t mask;
        ASSERT(pthread_sigmask(SIG_SETMASK, NULL, &mask) == 0);
        ASSERT(!sigismember(&mask, SIGPIPE));

        /* The scope's requirements decide before anything is fetched. */
        fetches = 0;
        ASSERT_EQ_INT(check(pa, "open", "v1", NULL, NULL), 0);
        refused(pa, "rejected", "v1", "rejected");
        ASSERT_EQ_INT(fetches, 0);
        free(pa);

        /* The key as armored text, as keyData, and the expired key. */
        snprintf(field, sizeof(field), "\"keyPaths\":[\"%s/b.pub\",\"%s/a.asc\"]", fx, fx);
        char *pab = signed_by_policy("ab.json", field, NULL);
        ASSERT_EQ_INT(check(pab, "good", "v1", NULL, NULL), 0);
        ASSERT_EQ_INT(check(pab, "wrongkey", "v1", NULL, NULL), 0);
        free(pab);

        /* A key whose subkey signs. */
        snprintf(field, sizeof(field), "\"keyPath\":\"%s/c.pub\"", fx);
        char *pc = signed_by_policy("c.json", field, NULL);
        ASSERT_EQ_INT(check(pc, "subkey", "v1", NULL, NULL), 0);
        refused(pc, "good", "v1", "signature by an unknown key ");
        free(pc);

        snprintf(field, sizeof(field), "\"keyPath\":\"%s/x.pub\"", fx);
        char *px = signed_by_policy("x.json", field, NULL);
        refused(px, "expired", "v1", "bad signature (gpg: ");
        free(px);

        /* keyData: base64 of the key file. */
        {
                char *key = NULL;
                size_t size = 0;
                char *kp = path_in(fx, "a.pub");
                ASSERT_EQ_INT(read_file(kp, 1 << 20, &key, &size, NULL), 0);
                static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
                char *enc = malloc((size + 2) / 3 * 4 + 16);
                ASSERT(enc);
                size_t n = 0;
                for (size_t i = 0; i < size; i += 3) {
                        unsigned v = (unsigned char) key[i] << 16;
                        if (i + 1 < size)
                                v |= (unsigned char) key[i + 1] << 8;
                        if (i + 2 < size)
                                v |= (unsigned char) key[i + 2];
                        enc[n++] = b64[v >> 18 & 63];
                        enc[n++] = b64[v >> 12 & 63];
                        enc[n++] = i + 1 < size ? b64[v >> 6 & 63] : '=';
                        enc[n++] = i + 2 < size ? b64[v & 63] : '=';
                }
                enc[n] = 0;
                char *f = NULL;
                ASSERT(asprintf(&f, "\"keyData\":\"%s\"", enc) >= 0);
                char *pd = signed_by_policy("data.json", f, NULL);
                ASSERT_EQ_INT(check(pd, "good", "v1", NULL, NULL), 0);
                refused(pd, "wrongkey", "v1", "unknown key");
                free(pd);
                free(f);
                free(enc);
                free(key);
                free(kp);
        }

        /* signedIdentity. */
        snprintf(field, sizeof(field), "\"keyPath\":\"%s/a.pub\"", fx);
        char *pr = signed_by_policy("repo.json", field, "{\"type\":\"matchRepository\"}");
        ASSERT_EQ_INT(check(pr, "good", "v2", NULL, NULL), 0);
        refused(pr, "wrongidentity", "v1", "(matchRepository)");
        free(pr);
        char *pe = signed_by_policy("exact.json", field, "{\"type\":\"matchExact\"}");
        ASSERT_EQ_INT(check(pe, "good", "v1", NULL, NULL), 0);
        refused(pe, "good", NULL, "(matchExact)");
        free(pe);
        char *pxr = signed_by_policy("exactref.json", field,
                                     "{\"type\":\"exactReference\",\"dockerReference\":\"" REGISTRY "/ns/elsewhere:v1\"}");
        ASSERT_EQ_INT(check(pxr, "wrongidentity", "v1", NULL, NULL), 0);
        ASSERT_EQ_INT(check(pxr, "wrongidentity", "v7", NULL, NULL), 0);
        refused(pxr, "good", "v1", "the policy wants " REGISTRY "/ns/elsewhere:v1 (exactReference)");
        free(pxr);
        char *pxp = signed_by_policy("exactrepo.json", field,
                                     "{\"type\":\"exactRepository\",\"dockerRepository\":\"" REGISTRY "/ns/elsewhere\"}");
        ASSERT_EQ_INT(check(pxp, "wrongidentity", "v3", NULL, NULL), 0);
        refused(pxp, "good", "v1", "(exactRepository)");
        free(pxp);

        /* The digest is the manifest's, whatever the signature says. */
        char *pa2 = signed_by_policy("a2.json", field, NULL);
        char *msg = NULL;
        ASSERT_EQ_INT(check(pa2, "good", "v1", other_digest, &msg), -EPERM);
        ASSERT_CONTAINS(msg, "no signature found");
        free(msg);

        /* Two signedBy requirements: both must accept. */
        char text[3 * PATH_MAX];
        snprintf(text, sizeof(text),
                 "{\"default\":[{\"type\":\"signedBy\",\"keyType\":\"GPGKeys\",\"keyPath\":\"%s/a.pub\"},"
                 "{\"type\":\"signedBy\",\"keyType\":\"GPGKeys\",\"keyPath\":\"%s/b.pub\","
                 "\"signedIdentity\":{\"type\":\"matchRepository\"}}]}",
                 fx, fx);
        char *both = policy_file("both.json", text);
        ASSERT_EQ_INT(check(both, "multi", "v1", NULL, NULL), 0);
        refused(both, "good", "v1", "default[1] (signedBy): signature 1");
        free(both);

        /* A key file that is missing is a broken policy, not a refusal
         * (and not -ENOENT, an unknown image to callers). */
        snprintf(field, sizeof(field), "\"keyPath\":\"%s/missing.pub\"", fx);
        char *pm = signed_by_policy("missing.json", field, NULL);
        msg = NULL;
        ASSERT_EQ_INT(check(pm, "good", "v1", NULL, &msg), -EBADMSG);
        ASSERT_CONTAINS(msg, "missing.pub");
        ASSERT_CONTAINS(msg, "transports[\"docker\"][\"" REGISTRY "\"][0]");
        free(msg);
        free(pm);
        /* A key file that holds no key. */
        snprintf(field, sizeof(field), "\"keyPath\":\"%s/manifest.json\"", fx);
        char *pn = signed_by_policy("nokey.json", field, NULL);
        msg = NULL;
        ASSERT_EQ_INT(check(pn, "good", "v1", NULL, &msg), -EBADMSG);
        ASSERT_CONTAINS(msg, "manifest.json: no OpenPGP public key in it");
        free(msg);
        free(pn);

        /* No lookaside for the registry. */
        snprintf(text, sizeof(text),
                 "{\"default\":[{\"type\":\"signedBy\",\"keyType\":\"GPGKeys\",\"keyPath\":\"%s/a.pub\"}]}", fx);
        char *pdef = policy_file("default-a.json", text);
        SignaturePolicy *p = NULL;
        ASSERT_EQ_INT(signature_policy_load(pdef, &p, NULL), 0);
        free(pdef);
        msg = NULL;
        Error *err = NULL;
        ASSERT_EQ_INT(signature_policy_check(p, regd, "elsewhere.test", "ns/good", "v1", digest, NULL, NULL, &err), -EPERM);
        ASSERT_CONTAINS(err->msg, "no lookaside is configured for it in ");
        error_free(err);
        /* Docker Hub: "busybox" is docker.io/library/busybox, in the
         * lookaside as in the identity skopeo signed ("busybox:1"). */
        char *hub = path_in(scratch, "hub-registries.d");
        ASSERT(mkdir(hub, 0755) == 0);
        char *hub_yaml = path_in(hub, "hub.yaml");
        snprintf(text, sizeof(text), "docker:\n  docker.io:\n    lookaside: file://%s/hub\n", fx);
        write_text(hub_yaml, text);
        ASSERT_EQ_INT(signature_policy_check(p, hub, "docker.io", "busybox", "1", digest, NULL, NULL, NULL), 0);
        ASSERT_EQ_INT(signature_policy_check(p, hub, "index.docker.io", "library/busybox", "1", digest, NULL, NULL, NULL), 0);
        ASSERT_EQ_INT(signature_policy_check(p, hub, "docker.io", "busybox", "2", digest, NULL, NULL, NULL), -EPERM);
        free(hub_yaml);
        free(hub);

        /* A fetch that fails is the fetch's error, not a refusal, and its
         * code survives with and without an Error. */
        err = NULL;
        ASSERT_EQ_INT(signature_policy_check(p, regd, REGISTRY, "ns/good", "v1", digest, failing_fetch, p, &err),
                      -EHOSTUNREACH);
        ASSERT_CONTAINS(err->msg, "fetching signature 1: file://");
        ASSERT_CONTAINS(err->msg, "no route to the lookaside");
        error_free(err);
        err = NULL;
        ASSERT_EQ_INT(signature_policy_check(p, regd, REGISTRY, "ns/good", "v1", digest, failing_fetch, NULL, &err),
                      -ECONNREFUSED);
        ASSERT_CONTAINS(err->msg, "/signature-1): Connection refused");
        error_free(err);
        ASSERT_EQ_INT(signature_policy_check(p, regd, REGISTRY, "ns/good", "v1", digest, failing_fetch, NULL, NULL),
                      -ECONNREFUSED);
        /* The same for a policy file that cannot be read, without an Error. */
        SignaturePolicy *none = NULL;
        ASSERT_EQ_INT(signature_policy_load("/nonexistent/policy.json", &none, NULL), -EINVAL);
        err = NULL;
        ASSERT_EQ_INT(signature_policy_load("/nonexistent/policy.json", &none, &err), -EINVAL);
        ASSERT_EQ_INT(err->code, -EINVAL);
        ASSERT_CONTAINS(err->msg, "signature policy: /nonexistent/policy.json: No such file or directory");
        error_free(err);
        /* A named registries.d that is not there. */
        err = NULL;
        ASSERT_EQ_INT(signature_policy_check(p, "/nonexistent/registries.d", REGISTRY, "ns/good", "v1", digest, NULL,
                                             NULL, &err), -EINVAL);
        ASSERT_CONTAINS(err->msg, "registries.d /nonexistent/registries.d: No such file or directory");
        error_free(err);

        /* The default fetcher, without a callback. */
        ASSERT_EQ_INT(signature_policy_check(p, regd, REGISTRY, "ns/good", "v1", digest, NULL, NULL, NULL), 0);
        signature_policy_free(p);
        free(pa2);

        /* The built-in default policy accepts and fetches nothing: checked
         * on a parsed copy, since the real default file may exist. */
        Policy *builtin = NULL;
        ASSERT_EQ_INT(policy_parse(POLICY_BUILTIN_DEFAULT, strlen(POLICY_BUILTIN_DEFAULT), "b", NULL, &builtin, NULL), 0);
        ASSERT_EQ_INT(policy_lookup(builtin, REGISTRY, "ns/x", "v", NULL)->requirements[0].type,
                      POLICY_INSECURE_ACCEPT_ANYTHING);
        policy_free(builtin);
}

/* Every private GnuPG home is gone, and no agent was left for one. */
static void test_nothing_left(void) {
        DIR *d = opendir(tmpdir);
        ASSERT(d);
        struct dirent *de;
        while ((de = readdir(d)))
                if (startswith(de->d_name, "sdpod-gpg.")) {
                        fprintf(stderr, "left behind: %s/%s\n", tmpdir, de->d_name);
                        ASSERT(false);
                }
        closedir(d);
        /* A gpg-agent started for one would hold its home's name. */
        d = opendir("/proc");
        ASSERT(d);
        while ((de = readdir(d))) {
                char path[PATH_MAX], cmd[4096];
                snprintf(path, sizeof(path), "/proc/%s/cmdline", de->d_name);
                int fd = open(path, O_RDONLY | O_CLOEXEC);
                if (fd < 0)
                        continue;
                ssize_t n = read(fd, cmd, sizeof(cmd) - 1);
                close(fd);
                if (n <= 0)
                        continue;
                for (ssize_t i = 0; i < n; i++)
                        if (!cmd[i])
                                cmd[i] = ' ';
                cmd[n] = 0;
                if (strstr(cmd, tmpdir)) {
                        fprintf(stderr, "a process of ours is left: %s\n", cmd);
                        ASSERT(false);
                }
        }
        closedir(d);
}

static void make_fixtures(void) {
        const char *root = getenv("SDPOD_SOURCE_ROOT");
        char script[PATH_MAX];
        snprintf(script, sizeof(script), "%s/tests/unit/signature-fixtures.sh", root ? root : ".");
        snprintf(fx, sizeof(fx), "%s/fixtures", scratch);
        pid_t pid = fork();
        ASSERT(pid >= 0);
        if (pid == 0) {
                int null = open("/dev/null", O_WRONLY | O_CLOEXEC);
                if (null >= 0)
                        dup2(null, STDOUT_FILENO);
                execlp("bash", "bash", script, fx, (char *) NULL);
                _exit(127);
        }
        int status = 0;
        ASSERT(waitpid(pid, &status, 0) == pid);
        ASSERT(WIFEXITED(status));
        if (WEXITSTATUS(status) == 77)
                return;
        ASSERT_EQ_INT(WEXITSTATUS(status), 0);
        have_fixtures = true;
        char *p = path_in(fx, "manifest.digest");
        read_line(p, digest, sizeof(digest));
        free(p);
        p = path_in(fx, "other.digest");
        read_line(p, other_digest, sizeof(other_digest));
        free(p);

        regd = path_in(scratch, "fixture-registries.d");
        ASSERT(mkdir(regd, 0755) == 0);
        char *f = path_in(regd, "test.yaml");
        char text[PATH_MAX + 128];
        snprintf(text, sizeof(text), "docker:\n  " REGISTRY ":\n    lookaside: file://%s/lookaside/\n", fx);
        write_text(f, text);
        free(f);
}

int main(void) {
        ASSERT(mkdtemp(scratch));
        test_cleanup = remove_scratch;
        /* The library's GnuPG homes go to TMPDIR: a directory of the test's
         * own, to see that none is left. */
        snprintf(tmpdir, sizeof(tmpdir), "%s/tmp", scratch);
        ASSERT(mkdir(tmpdir, 0700) == 0);
        ASSERT(setenv("TMPDIR", tmpdir, 1) == 0);

        RUN(test_references);
        RUN(test_policy_parse);
        RUN(test_identity);
        RUN(test_lookaside);
        RUN(test_payload);
        make_fixtures();
        RUN(test_verify);
        RUN(test_nothing_left);
        free(regd);
        ASSERT(rm_rf(scratch) == 0);
        return 0;
}
