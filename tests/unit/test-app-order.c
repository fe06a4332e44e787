/* SPDX-License-Identifier: Apache-2.0 */
/* The order between the apps of a pod (app-lifecycle.h): the values of
 * sdpod/after, sdpod/requires and sdpod/wait-healthy, the order as a whole
 * (cycles, unknown names, an app waiting for itself or for an app without
 * a health check), through the command line and through a manifest as
 * the generator reads it. */
#include "basic/strv.h"
#include "manifest/app-args.h"
#include "manifest/app-lifecycle.h"
#include "manifest/pod-manifest.h"
#include "tests.h"

static void test_values(void) {
        ASSERT_EQ_INT(app_lifecycle_check(APP_ANNOTATION_AFTER, "redis", NULL), 0);
        ASSERT_EQ_INT(app_lifecycle_check(APP_ANNOTATION_AFTER, "redis,db-2", NULL), 0);
        /* Anything but app names would reach a unit file. */
        static const char *const bad[] = {
                "", ",", "redis,", ",redis", "redis,,db", "Redis", "redis.service", "a b", "a\nExecStart=/x",
                "a%i", "a$x", "a/b", "a\\x", "redis,redis", "-a", "a-",
        };
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                Error *e = NULL;
                ASSERT_EQ_INT(app_lifecycle_check(APP_ANNOTATION_REQUIRES, bad[i], &e), -EINVAL);
                ASSERT_CONTAINS(e->msg, "app names");
                error_free(e);
        }
        /* Bounded. */
        size_t n = 0;
        char buf[APP_ORDER_NAMES_MAX * 8 + 16] = "";
        for (int i = 0; i <= APP_ORDER_NAMES_MAX; i++)
                n += (size_t) snprintf(buf + n, sizeof(buf) - n, "%sa%d", i ? "," : "", i);
        Error *e = NULL;
        ASSERT_EQ_INT(app_lifecycle_check(APP_ANNOTATION_WAIT_HEALTHY, buf, &e), -EINVAL);
        ASSERT_CONTAINS(e->msg, "more than");
        error_free(e);
        /* The options are the table's. */
        ASSERT_STREQ(app_lifecycle_annotation_of_option("after"), APP_ANNOTATION_AFTER);
        ASSERT_STREQ(app_lifecycle_annotation_of_option("requires"), APP_ANNOTATION_REQUIRES);
        ASSERT_STREQ(app_lifecycle_annotation_of_option("wait-healthy"), APP_ANNOTATION_WAIT_HEALTHY);
}

static PodApp app(const char *name, PodNameValue *annotations, size_t n) {
        return (PodApp) { .name = name, .annotations = annotations, .n_annotations = n };
}

static char *order_error(const PodApp *apps, size_t n, bool complete) {
        Error *e = NULL;
        int r = app_order_check(apps, n, complete, &e);
        char *msg = r < 0 ? strdup(e ? e->msg : "?") : NULL;
        error_free(e);
        return msg;
}

static void test_whole(void) {
        PodNameValue health[] = { { APP_ANNOTATION_HEALTH_CMD, "[\"/bin/true\"]" } };
        PodNameValue after_b[] = { { APP_ANNOTATION_AFTER, "b" } };
        PodNameValue after_c[] = { { APP_ANNOTATION_AFTER, "c" } };
        PodNameValue requires_a[] = { { APP_ANNOTATION_REQUIRES, "a" } };
        PodNameValue wait_b[] = { { APP_ANNOTATION_WAIT_HEALTHY, "b" } };
        PodNameValue after_self[] = { { APP_ANNOTATION_AFTER, "a" } };
        PodNameValue after_ghost[] = { { APP_ANNOTATION_AFTER, "b,ghost" } };
        char *msg;

        /* A chain is fine, in any order of the apps. */
        PodApp chain[] = { app("a", after_b, 1), app("b", after_c, 1), app("c", NULL, 0) };
        ASSERT(!(msg = order_error(chain, 3, true)));
        /* A cycle, named from where it closes. */
        PodApp cycle[] = { app("a", after_b, 1), app("b", after_c, 1), app("c", requires_a, 1) };
        ASSERT((msg = order_error(cycle, 3, false)));
        ASSERT_CONTAINS(msg, "has a cycle: a -> b -> c -> a");
        free(msg);
        /* --wait-healthy is an edge too, and needs the other's check. */
        PodApp wait_cycle[] = { app("a", wait_b, 1), app("b", requires_a, 1) };
        ASSERT((msg = order_error(wait_cycle, 2, false)));
        ASSERT_CONTAINS(msg, "app a: --wait-healthy=b: app b has no health check");
        free(msg);
        PodNameValue b_both[] = { { APP_ANNOTATION_HEALTH_CMD, "[\"/bin/true\"]" }, { APP_ANNOTATION_REQUIRES, "a" } };
        PodApp wait_cycle2[] = { app("a", wait_b, 1), app("b", b_both, 2) };
        ASSERT((msg = order_error(wait_cycle2, 2, false)));
        ASSERT_CONTAINS(msg, "cycle: a -> b -> a");
        free(msg);
        PodApp no_health[] = { app("a", wait_b, 1), app("b", NULL, 0) };
        ASSERT((msg = order_error(no_health, 2, true)));
        ASSERT_CONTAINS(msg, "app a: --wait-healthy=b: app b has no health check (--health-cmd)");
        free(msg);
        PodApp healthy[] = { app("a", wait_b, 1), app("b", health, 1) };
        ASSERT(!(msg = order_error(healthy, 2, true)));
        /* Itself. */
        PodApp self[] = { app("a", after_self, 1) };
        ASSERT((msg = order_error(self, 1, false)));
        ASSERT_CONTAINS(msg, "app a: --after=a: an app cannot wait for itself");
        free(msg);
        /* An unknown app: refused when the apps are all there, let
         * through while a manifest is built and in a mutable pod. */
        PodApp ghost[] = { app("a", after_ghost, 1), app("b", NULL, 0) };
        ASSERT((msg = order_error(ghost, 2, true)));
        ASSERT_CONTAINS(msg, "app a: --after=b,ghost: the pod has no app ghost");
        free(msg);
        ASSERT(!(msg = order_error(ghost, 2, false)));
        Error *e = NULL;
        ASSERT_EQ_INT(app_order_check_names(ghost, 2, 0, &e), -EINVAL);
        ASSERT_CONTAINS(e->msg, "no app ghost");
        error_free(e);
        ASSERT_EQ_INT(app_order_check_names(ghost, 2, 1, NULL), 0);
        /* A long chain: no deep recursion issue, no false cycle. */
        enum { N = 500 };
        PodApp many[N];
        PodNameValue edges[N];
        char names[N][8];
        for (int i = 0; i < N; i++) {
                snprintf(names[i], sizeof(names[i]), "a%d", i);
                edges[i] = (PodNameValue) { APP_ANNOTATION_AFTER, NULL };
        }
        for (int i = 0; i < N; i++) {
                edges[i].value = i + 1 < N ? names[i + 1] : NULL;
                many[i] = app(names[i], &edges[i], i + 1 < N ? 1 : 0);
        }
        ASSERT(!(msg = order_error(many, N, true)));
        edges[N - 1].value = names[0];
        many[N - 1].n_annotations = 1;
        ASSERT((msg = order_error(many, N, true)));
        ASSERT_CONTAINS(msg, "has a cycle: a0 -> a1 -> a2");
        free(msg);
}

/* Through the command line and the manifest's validation. */
static void test_manifest(void) {
        static const char *const doc =
                "{ \"acKind\": \"PodManifest\", \"acVersion\": \"0.8.11\", \"apps\": ["
                "{ \"name\": \"a\", \"image\": { \"id\": \"sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\" },"
                "  \"app\": { \"exec\": [ \"/x\" ] }, \"annotations\": [ { \"name\": \"sdpod/after\", \"value\": \"b\" } ] },"
                "{ \"name\": \"b\", \"image\": { \"id\": \"sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\" },"
                "  \"app\": { \"exec\": [ \"/x\" ] }, \"annotations\": [ { \"name\": \"sdpod/after\", \"value\": \"%s\" } ] } ] }";
        char text[2048];
        PodManifest *m = NULL;
        Error *e = NULL;
        snprintf(text, sizeof(text), doc, "a");
        ASSERT_EQ_INT(pod_manifest_parse(text, strlen(text), "test", &m, &e), -EBADMSG);
        ASSERT_CONTAINS(e->msg, "cycle: a -> b -> a");
        error_free(e);
        e = NULL;
        snprintf(text, sizeof(text), doc, "ghost");
        ASSERT_EQ_INT(pod_manifest_parse(text, strlen(text), "test", &m, &e), 0);
        pod_manifest_free(m);
        /* An order annotation is an app's, not the pod's. */
        static const char *const pod_level =
                "{ \"acKind\": \"PodManifest\", \"acVersion\": \"0.8.11\", \"apps\": [],"
                "  \"annotations\": [ { \"name\": \"sdpod/after\", \"value\": \"a\" } ] }";
        m = NULL;
        ASSERT_EQ_INT(pod_manifest_parse(pod_level, strlen(pod_level), "test", &m, &e), -EBADMSG);
        ASSERT_CONTAINS(e->msg, "an app's annotation");
        error_free(e);

        /* The command line: each option once per app, --mutable a flag. */
        char *argv[] = { "--mutable", "busybox", "--after=x", "--after=y", NULL };
        PodArgs a = {};
        e = NULL;
        ASSERT_EQ_INT(pod_args_parse(4, argv, true, &a, &e), -EINVAL);
        ASSERT_CONTAINS(e->msg, "--after given twice");
        error_free(e);
        char *argv2[] = { "--mutable", "busybox", "--requires=x,y", NULL };
        ASSERT_EQ_INT(pod_args_parse(3, argv2, true, &a, NULL), 0);
        ASSERT(a.mutable_pod);
        ASSERT_EQ_INT((int) a.n_lifecycle, 1);
        ASSERT_STREQ(a.lifecycle[0].name, POD_ANNOTATION_START_APPS);
        ASSERT_STREQ(a.apps[0].image, "busybox");
        pod_args_done(&a);
        char *argv3[] = { "--mutable=no", "busybox", NULL };
        ASSERT_EQ_INT(pod_args_parse(2, argv3, true, &a, NULL), 0);
        ASSERT(!a.mutable_pod);
        pod_args_done(&a);
        char *argv4[] = { "busybox", "--mutable", NULL };
        e = NULL;
        ASSERT_EQ_INT(pod_args_parse(2, argv4, false, &a, &e), -EINVAL);
        ASSERT_CONTAINS(e->msg, "--mutable is an option of the pod");
        error_free(e);
}

int main(void) {
        RUN(test_values);
        RUN(test_whole);
        RUN(test_manifest);
        return 0;
}
