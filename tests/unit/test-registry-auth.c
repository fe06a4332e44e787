/* SPDX-License-Identifier: Apache-2.0 */
#include <fcntl.h>
#include <sys/stat.h>

#include "basic/base64.h"
#include "basic/fs.h"
#include "image/auth-challenge.h"
#include "image/registry-auth.h"
#include "image/registry-config.h"
#include "tests.h"

static char tmpdir[] = "/tmp/test-registry-auth-XXXXXX";

static void cleanup(void) {
        rm_rf(tmpdir);
}

static void test_base64(void) {
        static const char *const plain[] = { "", "f", "fo", "foo", "foob", "fooba", "foobar", "user:pa:ss" };
        static const char *const coded[] = { "", "Zg==", "Zm8=", "Zm9v", "Zm9vYg==", "Zm9vYmE=", "Zm9vYmFy", "dXNlcjpwYTpzcw==" };
        for (size_t i = 0; i < ELEMENTSOF(plain); i++) {
                char *e = base64_encode(plain[i], strlen(plain[i]));
                ASSERT_STREQ(e, coded[i]);
                free(e);
                char *d = NULL;
                size_t n;
                ASSERT_EQ_INT(base64_decode(coded[i], strlen(coded[i]), &d, &n), 0);
                ASSERT_STREQ(d, plain[i]);
                ASSERT_EQ_INT(n, strlen(plain[i]));
                free(d);
        }
        static const char *const bad[] = { "Zg=", "Z===", "Zg==Zg==", "Zm9*", "=Zm9" };
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                char *d = NULL;
                ASSERT_EQ_INT(base64_decode(bad[i], strlen(bad[i]), &d, NULL), -EINVAL);
                ASSERT(!d);
        }
}

static void challenge_ok(const char *h, AuthScheme scheme, const char *realm, const char *service, const char *scope) {
        AuthChallenge c = {};
        Error *err = NULL;
        if (auth_challenge_parse(h, &c, &err) < 0) {
                fprintf(stderr, "%s: %s\n", h, err->msg);
                abort();
        }
        ASSERT_EQ_INT(c.scheme, scheme);
        ASSERT(streq_ptr(c.realm, realm));
        ASSERT(streq_ptr(c.service, service));
        ASSERT(streq_ptr(c.scope, scope));
        auth_challenge_done(&c);
}

static void challenge_bad(const char *h) {
        AuthChallenge c = {};
        Error *err = NULL;
        ASSERT_EQ_INT(auth_challenge_parse(h, &c, &err), -EBADMSG);
        ASSERT(err && err->msg);
        ASSERT(!c.realm);
        error_free(err);
}

static void test_challenge(void) {
        challenge_ok("Bearer realm=\"https://auth.example/token\",service=\"registry.example\",scope=\"repository:a/b:pull\"",
                     AUTH_SCHEME_BEARER, "https://auth.example/token", "registry.example", "repository:a/b:pull");
        challenge_ok("bearer  realm = \"http://127.0.0.1:1/t\" , service=reg", AUTH_SCHEME_BEARER, "http://127.0.0.1:1/t",
                     "reg", NULL);
        challenge_ok("Basic realm=\"Registry Realm\"", AUTH_SCHEME_BASIC, "Registry Realm", NULL, NULL);
        challenge_ok("Basic", AUTH_SCHEME_BASIC, NULL, NULL, NULL);
        /* Bearer is preferred, wherever it comes */
        challenge_ok("Basic realm=\"x\", Bearer realm=\"https://t/\",scope=\"a,b\"", AUTH_SCHEME_BEARER, "https://t/", NULL,
                     "a,b");
        challenge_ok("Newauth realm=\"apps\", type=1, title=\"Login to \\\"apps\\\"\", Basic realm=\"simple\"",
                     AUTH_SCHEME_BASIC, "simple", NULL, NULL);
        challenge_ok("Basic dGVzdA==, Bearer realm=\"https://t/\"", AUTH_SCHEME_BEARER, "https://t/", NULL, NULL);
        challenge_ok("Bearer realm=\"https://t/\", realm=\"https://evil/\"", AUTH_SCHEME_BEARER, "https://t/", NULL, NULL);

        challenge_bad("");
        challenge_bad("Bearer service=\"x\"");  /* no realm */
        challenge_bad("Negotiate");
        challenge_bad("Bearer realm=\"unterminated");
        challenge_bad("Bearer realm=\"x\" junk");
        challenge_bad("Bearer realm=\"x\\");
        challenge_bad("\"Bearer\"");
        char *huge = malloc(AUTH_CHALLENGE_MAX + 100);
        strcpy(huge, "Bearer realm=\"");
        memset(huge + strlen(huge), 'a', AUTH_CHALLENGE_MAX);
        strcpy(huge + AUTH_CHALLENGE_MAX + 14, "\"");
        challenge_bad(huge);
        free(huge);
}

static void write_text(const char *path, const char *text) {
        Error *err = NULL;
        ASSERT_EQ_INT(write_file_atomic_at(AT_FDCWD, path, text, strlen(text), 0600, &err), 0);
}

static void lookup(const char *file, const char *registry, int expect, const char *user, const char *password) {
        char *u = NULL, *p = NULL;
        Error *err = NULL;
        int r = registry_auth_lookup(file, registry, &u, &p, &err);
        if (r != expect)
                fprintf(stderr, "lookup %s in %s: %d %s\n", registry, strempty(file), r, err ? err->msg : "");
        ASSERT_EQ_INT(r, expect);
        if (expect == 1) {
                ASSERT_STREQ(u, user);
                ASSERT_STREQ(p, password);
        }
        free(u);
        free(p);
        error_free(err);
}

static void test_auth_files(void) {
        char path[PATH_MAX], xdg[PATH_MAX], home[PATH_MAX], docker[PATH_MAX], config[PATH_MAX];
        Error *err = NULL;

        /* an explicit file: read, rewritten with its unknown keys kept, mode 0600 */
        snprintf(path, sizeof(path), "%s/explicit/auth.json", tmpdir);
        lookup(path, "r.example", 0, NULL, NULL); /* missing file: nothing */
        ASSERT_EQ_INT(mkdir_p(path, 0755), 0);
        rmdir(path);
        write_text(path, "{\"auths\": {\"other.example\": {\"auth\": \"dTpw\"}, \"https://r.example/v1/\": "
                         "{\"auth\": \"b2xkOnB3\"}}, \"credsStore\": \"secret\", \"extra\": [1, 2]}");
        lookup(path, "r.example", 1, "old", "pw");        /* a key with a scheme and a path */
        lookup(path, "other.example", 1, "u", "p");
        lookup(path, "r.example:5000", 0, NULL, NULL);
        char *written = NULL;
        ASSERT_EQ_INT(registry_auth_store(path, "r.example", "me", "s3cr:et", &written, &err), 0);
        ASSERT_STREQ(written, path);
        free(written);
        lookup(path, "r.example", 1, "me", "s3cr:et");     /* the exact key wins */
        lookup(path, "other.example", 1, "u", "p");
        char *data = NULL;
        size_t size;
        ASSERT_EQ_INT(read_file(path, 1 << 20, &data, &size, &err), 0);
        ASSERT_CONTAINS(data, "\"credsStore\"");
        ASSERT_CONTAINS(data, "\"extra\"");
        ASSERT_CONTAINS(data, "bWU6czNjcjpldA==");
        free(data);
        struct stat st;
        ASSERT_EQ_INT(stat(path, &st), 0);
        ASSERT_EQ_INT(st.st_mode & 07777, 0600);

        /* logout of one registry removes every key naming it */
        ASSERT_EQ_INT(registry_auth_remove(path, "r.example", NULL, &err), 1);
        lookup(path, "r.example", 0, NULL, NULL);
        lookup(path, "other.example", 1, "u", "p");
        ASSERT_EQ_INT(registry_auth_remove(path, "r.example", NULL, &err), 0);
        ASSERT_EQ_INT(registry_auth_remove(path, NULL, NULL, &err), 1);
        lookup(path, "other.example", 0, NULL, NULL);
        ASSERT_EQ_INT(registry_auth_remove(path, NULL, NULL, &err), 0);

        /* malformed files are errors naming them, and are never rewritten */
        static const char *const bad[] = {
                "not json", "[]", "{\"auths\": []}", "{\"auths\": {\"r.example\": []}}",
                "{\"auths\": {\"r.example\": {\"auth\": \"!!!!\"}}}",
                "{\"auths\": {\"r.example\": {\"auth\": \"bm9jb2xvbg==\"}}}", /* "nocolon" */
                "{\"auths\": {\"r.example\": {\"auth\": 5}}}",
        };
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                write_text(path, bad[i]);
                char *u = NULL, *p = NULL;
                ASSERT(registry_auth_lookup(path, "r.example", &u, &p, &err) < 0);
                ASSERT_CONTAINS(err->msg, path);
                ASSERT(!u && !p);
                error_free(err);
                err = NULL;
        }
        write_text(path, "[1]");
        ASSERT(registry_auth_store(path, "r.example", "u", "p", NULL, &err) < 0);
        error_free(err);
        err = NULL;
        ASSERT_EQ_INT(read_file(path, 1 << 20, &data, &size, &err), 0);
        ASSERT_STREQ(data, "[1]");
        free(data);
        ASSERT(registry_auth_store(path, "r.example", "a:b", "p", NULL, &err) < 0);
        error_free(err);
        err = NULL;
        /* docker's key for Docker Hub */
        write_text(path, "{\"auths\": {\"https://index.docker.io/v1/\": {\"auth\": \"aHViOmh1Yg==\"}}}");
        lookup(path, "docker.io", 1, "hub", "hub");
        lookup(path, "index.docker.io", 1, "hub", "hub");
        lookup(path, "io", 0, NULL, NULL);
        /* entries of credential helpers or identity tokens are not ours */
        write_text(path, "{\"auths\": {\"r.example\": {\"identitytoken\": \"x\"}}}");
        lookup(path, "r.example", 0, NULL, NULL);

        /* the default search: XDG_RUNTIME_DIR, ~/.config, ~/.docker */
        snprintf(xdg, sizeof(xdg), "%s/run", tmpdir);
        snprintf(home, sizeof(home), "%s/home", tmpdir);
        snprintf(docker, sizeof(docker), "%s/home/.docker/config.json", tmpdir);
        snprintf(config, sizeof(config), "%s/home/.config/containers/auth.json", tmpdir);
        ASSERT_EQ_INT(mkdir_p(xdg, 0700), 0);
        ASSERT_EQ_INT(mkdir_p(home, 0700), 0);
        unsetenv("REGISTRY_AUTH_FILE");
        setenv("XDG_RUNTIME_DIR", xdg, 1);
        setenv("HOME", home, 1);
        lookup(NULL, "r.example", 0, NULL, NULL);
        ASSERT_EQ_INT(mkdir_p(docker, 0700), 0);
        rmdir(docker);
        write_text(docker, "{\"auths\": {\"r.example\": {\"auth\": \"ZDpk\"}}}");
        lookup(NULL, "r.example", 1, "d", "d");
        /* login writes ~/.config's file when none exists, in a 0700 directory */
        ASSERT_EQ_INT(registry_auth_store(NULL, "r.example", "c", "c", &written, &err), 0);
        ASSERT_STREQ(written, config);
        free(written);
        ASSERT_EQ_INT(stat(config, &st), 0);
        ASSERT_EQ_INT(st.st_mode & 07777, 0600);
        snprintf(path, sizeof(path), "%s/home/.config/containers", tmpdir);
        ASSERT_EQ_INT(stat(path, &st), 0);
        ASSERT_EQ_INT(st.st_mode & 07777, 0700);
        lookup(NULL, "r.example", 1, "c", "c");
        /* the XDG_RUNTIME_DIR file comes first, and login writes it once it exists */
        snprintf(path, sizeof(path), "%s/run/containers/auth.json", tmpdir);
        ASSERT_EQ_INT(mkdir_p(path, 0700), 0);
        rmdir(path);
        write_text(path, "{}");
        lookup(NULL, "r.example", 1, "c", "c");
        ASSERT_EQ_INT(registry_auth_store(NULL, "r.example", "x", "x", &written, &err), 0);
        ASSERT_STREQ(written, path);
        free(written);
        lookup(NULL, "r.example", 1, "x", "x");
        /* $REGISTRY_AUTH_FILE alone */
        snprintf(path, sizeof(path), "%s/env.json", tmpdir);
        setenv("REGISTRY_AUTH_FILE", path, 1);
        lookup(NULL, "r.example", 0, NULL, NULL);
        ASSERT_EQ_INT(registry_auth_store(NULL, "r.example", "e", "e", &written, &err), 0);
        ASSERT_STREQ(written, path);
        free(written);
        lookup(NULL, "r.example", 1, "e", "e");
        unsetenv("REGISTRY_AUTH_FILE");
        /* logout removes it from the file login writes, not from docker's */
        ASSERT_EQ_INT(registry_auth_remove(NULL, "r.example", &written, &err), 1);
        free(written);
        lookup(NULL, "r.example", 1, "c", "c");
}

static void test_config(void) {
        char path[PATH_MAX + 64], dir[PATH_MAX];
        Error *err = NULL;
        bool insecure = true;

        snprintf(path, sizeof(path), "%s/registries.json", tmpdir);
        setenv("SDPOD_REGISTRIES_CONFIG", path, 1);
        ASSERT_EQ_INT(registry_config_insecure("r.example", &insecure, &err), 0); /* missing: secure */
        ASSERT(!insecure);
        write_text(path, "{\"registries\": {\"r.example:5000\": {\"insecure\": true}, \"s.example\": {}}, \"x\": 1}");
        ASSERT_EQ_INT(registry_config_insecure("r.example:5000", &insecure, &err), 0);
        ASSERT(insecure);
        ASSERT_EQ_INT(registry_config_insecure("r.example", &insecure, &err), 0);
        ASSERT(!insecure);
        ASSERT_EQ_INT(registry_config_insecure("s.example", &insecure, &err), 0);
        ASSERT(!insecure);
        static const char *const bad[] = { "nope", "[]", "{\"registries\": []}",
                                           "{\"registries\": {\"r.example\": {\"insecure\": \"yes\"}}}",
                                           "{\"registries\": {\"r.example\": true}}" };
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                write_text(path, bad[i]);
                ASSERT(registry_config_insecure("r.example", &insecure, &err) < 0);
                ASSERT_CONTAINS(err->msg, path);
                error_free(err);
                err = NULL;
        }
        unsetenv("SDPOD_REGISTRIES_CONFIG");

        /* a certificate directory: every *.crt in name order, a client pair */
        RegistryCerts c = {};
        snprintf(dir, sizeof(dir), "%s/certs", tmpdir);
        ASSERT(registry_certs_load(dir, "r.example", &c, &err) < 0); /* --cert-dir must exist */
        error_free(err);
        err = NULL;
        ASSERT_EQ_INT(mkdir_p(dir, 0755), 0);
        snprintf(path, sizeof(path), "%s/b.crt", dir);
        write_text(path, "B");
        snprintf(path, sizeof(path), "%s/a.crt", dir);
        write_text(path, "A\n");
        snprintf(path, sizeof(path), "%s/ignored.pem", dir);
        write_text(path, "X");
        ASSERT_EQ_INT(registry_certs_load(dir, "r.example", &c, &err), 0);
        ASSERT_STREQ(c.dir, dir);
        ASSERT_STREQ(c.ca_pem, "A\n\nB\n");
        ASSERT(!c.client_cert && !c.client_key);
        registry_certs_done(&c);
        snprintf(path, sizeof(path), "%s/client.cert", dir);
        write_text(path, "C");
        ASSERT(registry_certs_load(dir, "r.example", &c, &err) < 0); /* client.key missing */
        ASSERT_CONTAINS(err->msg, "client.key");
        error_free(err);
        err = NULL;
        snprintf(path, sizeof(path), "%s/client.key", dir);
        write_text(path, "K");
        ASSERT_EQ_INT(registry_certs_load(dir, "r.example", &c, &err), 0);
        ASSERT(endswith(c.client_cert, "/client.cert") && endswith(c.client_key, "/client.key"));
        registry_certs_done(&c);
}

int main(void) {
        ASSERT(mkdtemp(tmpdir));
        test_cleanup = cleanup;
        test_base64();
        test_challenge();
        test_auth_files();
        test_config();
        cleanup();
        puts("test-registry-auth: ok");
        return 0;
}
