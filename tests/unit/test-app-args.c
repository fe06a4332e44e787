/* SPDX-License-Identifier: Apache-2.0 */
/* The command-line grammar of pods and apps (rkt's "IMAGE [flags] [-- ARGS]
 * [--- IMAGE ...]"), and the durations gc and status take. */
#include <stdarg.h>

#include "basic/strv.h"
#include "basic/time-util.h"
#include "manifest/app-args.h"
#include "manifest/app-lifecycle.h"
#include "tests.h"

static int parse(PodArgs *ret, bool pod_options, char **error, ...) {
        char *argv[64];
        int argc = 0;
        va_list ap;
        va_start(ap, error);
        for (char *a; (a = va_arg(ap, char *));)
                argv[argc++] = a;
        va_end(ap);
        Error *e = NULL;
        int r = pod_args_parse(argc, argv, pod_options, ret, &e);
        if (error)
                *error = e ? strdup(e->msg) : NULL;
        error_free(e);
        return r;
}

static void assert_strv(char **l, const char *const *expected) {
        size_t n = 0;
        for (; expected[n]; n++) {
                ASSERT(l && l[n]);
                ASSERT_STREQ(l[n], expected[n]);
        }
        ASSERT(!l || !l[n]);
}

static void test_sections(void) {
        PodArgs a;
        ASSERT_EQ_INT(parse(&a, true, NULL, "--name=web", "img", "--exec=/bin/sh", "--", "-c", "echo hi", "---",
                            "img2", "--app=second", "--set-env=A=1", "--set-env", "B=2=3", "--user", "0", "--group=1",
                            "--working-dir=/tmp", "--volume=data,kind=host,source=/srv,readOnly=true",
                            "--mount=volume=data,target=/data", NULL), 0);
        ASSERT_STREQ(a.name, "web");
        ASSERT_EQ_INT(a.n_apps, 2);
        ASSERT_STREQ(a.apps[0].image, "img");
        ASSERT_STREQ(a.apps[0].exec, "/bin/sh");
        ASSERT(a.apps[0].have_args);
        assert_strv(a.apps[0].args, (const char *[]) { "-c", "echo hi", NULL });
        ASSERT_STREQ(a.apps[1].image, "img2");
        ASSERT_STREQ(a.apps[1].name, "second");
        ASSERT(!a.apps[1].have_args && !a.apps[1].exec);
        assert_strv(a.apps[1].environment, (const char *[]) { "A=1", "B=2=3", NULL });
        ASSERT_STREQ(a.apps[1].user, "0");
        ASSERT_STREQ(a.apps[1].group, "1");
        ASSERT_STREQ(a.apps[1].working_dir, "/tmp");
        ASSERT_EQ_INT(a.n_volumes, 1);
        ASSERT_STREQ(a.volumes[0].name, "data");
        ASSERT_EQ_INT(a.volumes[0].kind, POD_VOLUME_HOST);
        ASSERT_STREQ(a.volumes[0].source, "/srv");
        ASSERT(a.volumes[0].read_only);
        ASSERT_EQ_INT(a.apps[1].n_mounts, 1);
        ASSERT_STREQ(a.apps[1].mounts[0].volume, "data");
        ASSERT_STREQ(a.apps[1].mounts[0].target, "/data");
        pod_args_done(&a);

        /* "--" with nothing after it: the image's arguments are replaced by none. */
        ASSERT_EQ_INT(parse(&a, true, NULL, "img", "--", NULL), 0);
        ASSERT(a.apps[0].have_args && !a.apps[0].args);
        pod_args_done(&a);

        /* After "--", options are the app's arguments, up to "---". */
        ASSERT_EQ_INT(parse(&a, true, NULL, "img", "--", "--app=x", "--", "-", "---", "img2", NULL), 0);
        assert_strv(a.apps[0].args, (const char *[]) { "--app=x", "--", "-", NULL });
        ASSERT(!a.apps[0].name);
        ASSERT_EQ_INT(a.n_apps, 2);
        pod_args_done(&a);

        /* App options before the first image are the first app's (podapp add). */
        ASSERT_EQ_INT(parse(&a, false, NULL, "--app=web", "img", "--", "x", NULL), 0);
        ASSERT_STREQ(a.apps[0].name, "web");
        ASSERT_STREQ(a.apps[0].image, "img");
        pod_args_done(&a);

        ASSERT_EQ_INT(parse(&a, true, NULL, "--volume", "scratch,kind=empty", "img", NULL), 0);
        ASSERT_EQ_INT(a.volumes[0].kind, POD_VOLUME_EMPTY);
        ASSERT(!a.volumes[0].source);
        pod_args_done(&a);
}

static void test_errors(void) {
        static const struct {
                const char *args[6];
                const char *message;
        } cases[] = {
                { { NULL }, "missing IMAGE" },
                { { "--app=x", NULL }, "missing IMAGE" },
                { { "img", "---", NULL }, "missing IMAGE after \"---\"" },
                { { "---", "img", NULL }, "\"---\" must follow an IMAGE" },
                { { "--", "x", NULL }, "\"--\" must follow an IMAGE" },
                { { "img", "other", NULL }, "unexpected \"other\" after image img" },
                { { "img", "--bogus=1", NULL }, "unknown option \"--bogus\"" },
                { { "-d", "img", NULL }, "unknown option \"-d\"" },
                { { "img", "--app", NULL }, "option \"--app\" needs a value" },
                { { "img", "--app=a", "--app=b", NULL }, "--app given twice" },
                { { "--name=a", "img", "--name=b", NULL }, "--name given twice" },
                { { "img", "--set-env=NOVALUE", NULL }, "--set-env=NOVALUE: expected NAME=VALUE" },
                { { "img", "--set-env==x", NULL }, "expected NAME=VALUE" },
                { { "--volume=v", "img", NULL }, "needs source=PATH" },
                { { "--volume=v,kind=nfs,source=/x", "img", NULL }, "kind \"nfs\" is not one of host, empty" },
                { { "--volume=v,kind=empty,source=/x", "img", NULL }, "an empty volume has no source" },
                { { "--volume=v,source=/x,readOnly=maybe", "img", NULL }, "readOnly \"maybe\"" },
                { { "--volume=v,source=/x,color=red", "img", NULL }, "unexpected \"color=red\"" },
                { { "--volume=source=/x", "img", NULL }, "missing the volume name" },
                { { "img", "--mount=volume=v", NULL }, "needs both volume=NAME and target=PATH" },
                { { "img", "--mount=target=/x,size=1", NULL }, "unexpected \"size=1\"" },
                { { "img", "--stop-timeout=soon", NULL }, "--stop-timeout: \"soon\" is not a duration above 0" },
                { { "img", "--restart=maybe", NULL }, "--restart: \"maybe\" is not no, on-failure or always" },
                { { "img", "--restart=no", "--restart=always", NULL }, "--restart given twice" },
                { { "img", "--health-retries=0", NULL }, "--health-retries: \"0\" is not a number from 1 to 100" },
                { { "img", "--health-on-failure=panic", NULL }, "is not none, restart or stop" },
                { { "img", "--watchdog-file=relative", NULL }, "must be an absolute path" },
                { { "img", "--pre-start=", NULL }, "--pre-start: an empty command" },
                { { "img", "--post-stop=[]", NULL }, "not a JSON array of non-empty strings" },
                { { "img", "--pre-stop=x", "--pre-stop=y", NULL }, "--pre-stop given twice" },
                { { "--pod-stop-timeout=0", "img", NULL }, "--pod-stop-timeout" },
        };
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                char *argv[6];
                int argc = 0;
                for (; cases[i].args[argc]; argc++)
                        argv[argc] = (char *) cases[i].args[argc];
                PodArgs a = {};
                Error *e = NULL;
                ASSERT_EQ_INT(pod_args_parse(argc, argv, true, &a, &e), -EINVAL);
                ASSERT_CONTAINS(e->msg, cases[i].message);
                error_free(e);
        }
        /* Pod options are refused where there is no pod to configure. */
        PodArgs a;
        char *msg = NULL;
        ASSERT_EQ_INT(parse(&a, false, &msg, "img", "--name=x", NULL), -EINVAL);
        ASSERT_CONTAINS(msg, "--name is an option of the pod");
        free(msg);
}

static void test_lifecycle(void) {
        PodArgs a;
        char *msg = NULL;
        ASSERT_EQ_INT(parse(&a, true, &msg, "--pod-stop-timeout=20s", "img", "--restart=on-failure", "--stop-timeout=3s",
                            "--health-cmd=curl -f localhost", "--pre-start=[\"/bin/prep\", \"--quick\"]",
                            "--post-stop", "echo bye", NULL),
                      0);
        ASSERT_EQ_INT(a.n_lifecycle, 1);
        ASSERT_STREQ(a.lifecycle[0].name, APP_ANNOTATION_STOP_TIMEOUT);
        ASSERT_STREQ(a.lifecycle[0].value, "20s");
        const AppArgs *app = &a.apps[0];
        ASSERT_EQ_INT(app->n_lifecycle, 3);
        ASSERT_STREQ(app->lifecycle[0].name, APP_ANNOTATION_RESTART);
        ASSERT_STREQ(app->lifecycle[0].value, "on-failure");
        ASSERT_STREQ(app->lifecycle[1].value, "3s");
        /* A shell command line is run by /bin/sh -c, stored as JSON. */
        ASSERT_STREQ(app->lifecycle[2].name, APP_ANNOTATION_HEALTH_CMD);
        ASSERT_STREQ(app->lifecycle[2].value, "[\"/bin/sh\",\"-c\",\"curl -f localhost\"]");
        ASSERT_EQ_INT(app->n_hooks, 2);
        ASSERT_STREQ(app->hooks[0].name, POD_EVENT_PRE_START);
        ASSERT_STREQ(app->hooks[0].exec[0], "/bin/prep");
        ASSERT_STREQ(app->hooks[0].exec[1], "--quick");
        ASSERT(!app->hooks[0].exec[2]);
        ASSERT_STREQ(app->hooks[1].name, POD_EVENT_POST_STOP);
        ASSERT_STREQ(app->hooks[1].exec[2], "echo bye");
        pod_args_done(&a);
        /* An app's options, not the pod's: podapp add takes them. */
        ASSERT_EQ_INT(parse(&a, false, &msg, "img", "--restart=always", NULL), 0);
        pod_args_done(&a);
        ASSERT_EQ_INT(parse(&a, false, &msg, "--pod-stop-timeout=1s", "img", NULL), -EINVAL);
        ASSERT_CONTAINS(msg, "--pod-stop-timeout is an option of the pod");
        free(msg);
}

static void test_durations(void) {
        static const struct {
                const char *s;
                uint64_t usec;
        } good[] = {
                { "0", 0 },
                { "30", 30 * USEC_PER_SEC },
                { "30s", 30 * USEC_PER_SEC },
                { "30m", 1800 * USEC_PER_SEC },
                { "24h", 86400 * USEC_PER_SEC },
                { "1h30m", 5400 * USEC_PER_SEC },
                { "2d", 172800 * USEC_PER_SEC },
                { "500ms", 500000 },
                { "7us", 7 },
        };
        for (size_t i = 0; i < ELEMENTSOF(good); i++) {
                uint64_t v = 1;
                ASSERT_EQ_INT(parse_duration(good[i].s, &v), 0);
                ASSERT_EQ_INT(v, good[i].usec);
        }
        const char *bad[] = { "", "m", "-1s", "1x", "1h30", "1.5h", "30 m", "99999999999999999999s" };
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                uint64_t v = 1;
                ASSERT(parse_duration(bad[i], &v) < 0);
                ASSERT_EQ_INT(v, 1);
        }
}

int main(void) {
        RUN(test_sections);
        RUN(test_errors);
        RUN(test_lifecycle);
        RUN(test_durations);
        return 0;
}
