/* SPDX-License-Identifier: Apache-2.0 */
#include "image/reference.h"
#include "tests.h"

static void check(const char *s, const char *registry, const char *repository, const char *tag, const char *digest,
                  const char *formatted) {
        ImageReference r = {};
        Error *err = NULL;
        if (image_reference_parse(s, &r, &err) < 0) {
                fprintf(stderr, "%s: %s\n", s, err->msg);
                abort();
        }
        ASSERT_STREQ(r.registry, registry);
        ASSERT_STREQ(r.repository, repository);
        ASSERT(streq_ptr(r.tag, tag));
        ASSERT(streq_ptr(r.digest, digest));
        char *f = image_reference_format(&r);
        ASSERT_STREQ(f, formatted);
        free(f);
        image_reference_done(&r);
}

static void refuse(const char *s, const char *message) {
        ImageReference r = {};
        Error *err = NULL;
        ASSERT_EQ_INT(image_reference_parse(s, &r, &err), -EINVAL);
        ASSERT(err);
        ASSERT_CONTAINS(err->msg, message);
        ASSERT(!r.registry);
        error_free(err);
}

#define D "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

int main(void) {
        check("localhost/busybox", "localhost", "busybox", "latest", NULL, "localhost/busybox:latest");
        check("docker://127.0.0.1:5000/library/busybox:1.36", "127.0.0.1:5000", "library/busybox", "1.36", NULL,
              "127.0.0.1:5000/library/busybox:1.36");
        check("quay.io/a/b/c@" D, "quay.io", "a/b/c", NULL, D, "quay.io/a/b/c@" D);
        check("reg.example:443/x:t@" D, "reg.example:443", "x", NULL, D, "reg.example:443/x@" D);
        check("[::1]:5000/a-b__c.d:v1.0_rc-2", "[::1]:5000", "a-b__c.d", "v1.0_rc-2", NULL, "[::1]:5000/a-b__c.d:v1.0_rc-2");
        check("host.example/a--b", "host.example", "a--b", "latest", NULL, "host.example/a--b:latest");
        check("docker.io/busybox", "docker.io", "library/busybox", "latest", NULL, "docker.io/library/busybox:latest");
        check("index.docker.io/busybox:1.36", "docker.io", "library/busybox", "1.36", NULL,
              "docker.io/library/busybox:1.36");
        check("docker://docker.io/grafana/grafana", "docker.io", "grafana/grafana", "latest", NULL,
              "docker.io/grafana/grafana:latest");
        check("Example.COM/x", "Example.COM", "x", "latest", NULL, "Example.COM/x:latest");

        /* no registry: never guessed */
        refuse("busybox", "busybox: name the registry, e.g. REGISTRY/busybox");
        refuse("library/busybox", "library/busybox: name the registry, e.g. REGISTRY/library/busybox");
        refuse("busybox:latest", "name the registry");
        refuse("docker://busybox", "busybox: name the registry");
        refuse("bad\033[31m", "\"bad\\x1b[31m\": name the registry");

        refuse("localhost/Busybox", "lower case");
        refuse("localhost/a__b_", "invalid repository");
        refuse("localhost/a___b", "invalid repository");
        refuse("localhost/a..b", "invalid repository");
        refuse("localhost/a//b", "invalid repository");
        refuse("localhost/", "invalid repository");
        refuse("localhost/-a", "invalid repository");
        refuse("localhost:0/a", "invalid registry");
        refuse("localhost:99999/a", "invalid registry");
        refuse("-bad.example/a", "invalid registry");
        refuse("a..b.example/a", "invalid registry");
        refuse("[zz]:5/a", "invalid registry");
        refuse("localhost/a:", "invalid tag");
        refuse("localhost/a:.x", "invalid tag");
        refuse("localhost/a:x/y", "invalid repository");
        refuse("x:1@sha256:a/b", "x:1@sha256:a/b: name the registry");
        refuse("localhost/a@sha256:abc", "invalid digest");
        refuse("localhost/a@sha512:" "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", "invalid digest");
        char tag[200] = "localhost/a:";
        memset(tag + strlen(tag), 'x', 129);
        refuse(tag, "invalid tag");
        char name[300] = "localhost/";
        memset(name + strlen(name), 'a', 250);
        refuse(name, "longer than 255");

        ASSERT(image_reference_is_remote("docker://busybox"));
        ASSERT(image_reference_is_remote("localhost/busybox"));
        ASSERT(image_reference_is_remote("127.0.0.1:5000/busybox"));
        ASSERT(image_reference_is_remote("quay.io/x"));
        ASSERT(!image_reference_is_remote("busybox"));
        ASSERT(!image_reference_is_remote("library/busybox"));
        ASSERT(!image_reference_is_remote("busybox:1.36"));
        ASSERT(!image_reference_is_remote("sha256:abcd"));

        ASSERT(image_registry_is_valid("localhost:5000"));
        ASSERT(image_registry_is_valid("[fe80::1]"));
        ASSERT(!image_registry_is_valid("a/b"));
        ASSERT(!image_registry_is_valid(""));
        ASSERT(!image_registry_is_valid("host:"));
        puts("test-reference: ok");
        return 0;
}
