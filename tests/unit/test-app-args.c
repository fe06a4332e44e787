/* SPDX-License-Identifier: Apache-2.0 */
/* The command-line grammar of pods and apps (rkt's "IMAGE [flags] [-- ARGS]
 * [--- IMAGE ...]"), and the durations gc and status take. */
#include <stdarg.h>
#include <sys/stat.h>

#include "basic/strv.h"
#include "basic/time-util.h"
#include "manifest/app-args.h"
#include "manifest/app-lifecycle.h"
#include "unit/app-options.h"
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
                { { "--pull=sometimes", "img", NULL }, "--pull=sometimes: expected missing, always or never" },
                { { "--pull=never", "img", "--pull=always", NULL }, "--pull given twice" },
                { { "--tls-verify=false", "img", "--tls-verify=true", NULL }, "--tls-verify given twice" },
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

        /* The pod's limits: the pod's, wherever they stand, kept as given. */
        ASSERT_EQ_INT(parse(&a, true, &msg, "--pod-memory=512Mi", "img", "--pod-cpus=250m", NULL), 0);
        ASSERT_EQ_INT(a.n_lifecycle, 2);
        ASSERT_STREQ(a.lifecycle[0].name, POD_ANNOTATION_MEMORY);
        ASSERT_STREQ(a.lifecycle[0].value, "512Mi");
        ASSERT_STREQ(a.lifecycle[1].name, POD_ANNOTATION_CPUS);
        ASSERT_STREQ(a.lifecycle[1].value, "250m");
        ASSERT_EQ_INT(a.apps[0].n_lifecycle, 0);
        pod_args_done(&a);
        static const struct {
                const char *arg, *message;
        } bad[] = {
                { "--pod-memory=5Mi", "less than a pod needs" },
                { "--pod-memory=512m", "not a quantity" },
                { "--pod-memory=99999999E", "too large" },
                { "--pod-cpus=9m", "not a number of CPUs" },
                { "--pod-cpus=1000001", "not a number of CPUs" },
                { "--pod-cpus=-1", "not a number of CPUs" },
        };
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                ASSERT_EQ_INT(parse(&a, true, &msg, bad[i].arg, "img", NULL), -EINVAL);
                ASSERT_CONTAINS(msg, bad[i].message);
                free(msg);
        }
        ASSERT_EQ_INT(parse(&a, false, &msg, "img", "--pod-memory=1Gi", NULL), -EINVAL);
        ASSERT_CONTAINS(msg, "--pod-memory is an option of the pod");
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

static char *write_temp(const char *content) {
        char *path = strdup("/tmp/test-env-file-XXXXXX");
        int fd = mkstemp(path);
        ASSERT(fd >= 0);
        ASSERT_EQ_INT(write(fd, content, strlen(content)), (int) strlen(content));
        close(fd);
        return path;
}

static void test_env_file(void) {
        char *ok = write_temp("# a comment\n\nA=1\n  B=two words \nC=x=y\r\n\t# indented comment\nA=again\nEMPTY=");
        char **env = NULL;
        Error *e = NULL;
        ASSERT_EQ_INT(env_file_parse(ok, &env, &e), 0);
        assert_strv(env, (const char *[]) { "A=1", "B=two words ", "C=x=y", "A=again", "EMPTY=", NULL });
        strv_free(env);
        env = NULL;

        static const struct {
                const char *content;
                const char *message;
        } bad[] = {
                { "A=1\nB C=2\n", ":2: \"B C\" is not a variable name" },
                { "A=1\n\n1A=2\n", ":3: \"1A\" is not a variable name" },
                { "JUSTANAME\n", ":1: expected NAME=VALUE" },
                { "=x\n", ":1: \"\" is not a variable name" },
                { "A=1\nB=\xc3\n", NULL },      /* not UTF-8: the manifest's check names it */
        };
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                char *path = write_temp(bad[i].content);
                int r = env_file_parse(path, &env, &e);
                if (bad[i].message) {
                        ASSERT_EQ_INT(r, -EINVAL);
                        ASSERT_CONTAINS(e->msg, path);
                        ASSERT_CONTAINS(e->msg, bad[i].message);
                } else
                        ASSERT_EQ_INT(r, 0);
                error_free(e);
                e = NULL;
                strv_free(env);
                env = NULL;
                unlink(path);
                free(path);
        }
        /* A NUL byte, a FIFO, a missing file: refused, the file named. */
        char *nul = write_temp("A=1\n");
        FILE *f = fopen(nul, "a");
        fputs("B=x", f);
        fputc(0, f);
        fputs("y\n", f);
        fclose(f);
        ASSERT_EQ_INT(env_file_parse(nul, &env, &e), -EINVAL);
        ASSERT_CONTAINS(e->msg, ":2: contains a NUL byte");
        ASSERT(!env);   /* line 1 was good, but a bad file adds nothing */
        error_free(e);
        e = NULL;
        unlink(nul);
        ASSERT(mkfifo(nul, 0600) == 0);
        ASSERT(env_file_parse(nul, &env, &e) < 0);
        ASSERT_CONTAINS(e->msg, nul);
        error_free(e);
        e = NULL;
        unlink(nul);
        ASSERT_EQ_INT(env_file_parse(nul, &env, &e), -ENOENT);
        error_free(e);
        free(nul);
        unlink(ok);
        free(ok);
}

static void test_app_options(void) {
        PodArgs a;
        char *msg = NULL;
        /* --read-only is a flag: it takes no value from the next word. */
        ASSERT_EQ_INT(parse(&a, true, &msg, "img", "--read-only", "--memory", "1Gi", "--cpus=0.5", "--pids-limit=7",
                            "--cap-add=net_raw,SYS_TIME", "--cap-drop=CAP_CHOWN", "--tmpfs=/tmp:size=1m",
                            "--tmpfs=/run", "--device=/dev/null:r", NULL), 0);
        AppArgs *app = &a.apps[0];
        ASSERT(app->read_only);
        ASSERT_STREQ(app->memory, "1Gi");
        ASSERT_STREQ(app->cpus, "0.5");
        ASSERT_STREQ(app->pids_limit, "7");
        assert_strv(app->cap_add, (const char *[]) { "net_raw", "SYS_TIME", NULL });
        assert_strv(app->cap_drop, (const char *[]) { "CAP_CHOWN", NULL });
        assert_strv(app->tmpfs, (const char *[]) { "/tmp:size=1m", "/run", NULL });

        struct json_object *isolators = NULL;
        Error *e = NULL;
        ASSERT_EQ_INT(app_options_isolators(app, "x", false, &isolators, &e), 0);
        const char *text = json_object_to_json_string_ext(isolators, JSON_C_TO_STRING_PLAIN);
        ASSERT_CONTAINS(text, "{\"name\":\"resource\\/memory\",\"value\":{\"limit\":\"1Gi\"}}");
        ASSERT_CONTAINS(text, "{\"name\":\"resource\\/cpu\",\"value\":{\"limit\":\"0.5\"}}");
        ASSERT_CONTAINS(text, "{\"name\":\"sdpod\\/pids-limit\",\"value\":{\"limit\":7}}");
        ASSERT_CONTAINS(text, "os\\/linux\\/capabilities-retain-set");
        ASSERT_CONTAINS(text, "\"CAP_NET_RAW\"");
        ASSERT_CONTAINS(text, "\"CAP_SYS_TIME\"");
        ASSERT(!strstr(text, "\"CAP_CHOWN\""));
        ASSERT_CONTAINS(text, "{\"path\":\"\\/tmp\",\"options\":\"size=1m\"},{\"path\":\"\\/run\"}");
        ASSERT_CONTAINS(text, "{\"path\":\"\\/dev\\/null\",\"access\":\"r\"}");
        json_object_put(isolators);
        pod_args_done(&a);

        /* Only dropping: a remove-set. */
        ASSERT_EQ_INT(parse(&a, true, NULL, "img", "--cap-drop=chown", "--read-only=no", NULL), 0);
        ASSERT(!a.apps[0].read_only);
        ASSERT_EQ_INT(app_options_isolators(&a.apps[0], "x", false, &isolators, &e), 0);
        ASSERT_STREQ(json_object_to_json_string_ext(isolators, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE),
                     "[{\"name\":\"os/linux/capabilities-remove-set\",\"value\":{\"set\":[\"CAP_CHOWN\"]}}]");
        json_object_put(isolators);
        pod_args_done(&a);

        /* Drops first, then adds, as podman, docker and runc: dropping all
         * and adding one leaves exactly that one; an add beats a drop of the
         * same; --cap-add=ALL is every capability less the drops. */
        ASSERT_EQ_INT(parse(&a, true, NULL, "img", "--cap-drop=ALL", "--cap-add=NET_BIND_SERVICE", "--read-only=no",
                            NULL), 0);
        ASSERT_EQ_INT(app_options_isolators(&a.apps[0], "x", false, &isolators, &e), 0);
        text = json_object_to_json_string_ext(isolators, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
        ASSERT_CONTAINS(text, "os/linux/capabilities-remove-set");
        ASSERT_CONTAINS(text, "\"CAP_CHOWN\"");
        ASSERT_CONTAINS(text, "\"CAP_KILL\"");
        ASSERT(!strstr(text, "\"CAP_NET_BIND_SERVICE\""));
        json_object_put(isolators);
        pod_args_done(&a);
        ASSERT_EQ_INT(parse(&a, true, NULL, "img", "--cap-add=chown", "--cap-drop=chown", "--read-only=no", NULL), 0);
        ASSERT_EQ_INT(app_options_isolators(&a.apps[0], "x", false, &isolators, &e), 0);
        ASSERT_STREQ(json_object_to_json_string_ext(isolators, JSON_C_TO_STRING_PLAIN), "[]");
        json_object_put(isolators);
        pod_args_done(&a);
        ASSERT_EQ_INT(parse(&a, true, NULL, "img", "--cap-add=ALL", "--cap-drop=NET_RAW,SYS_ADMIN", "--read-only=no",
                            NULL), 0);
        ASSERT_EQ_INT(app_options_isolators(&a.apps[0], "x", false, &isolators, &e), 0);
        text = json_object_to_json_string_ext(isolators, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
        ASSERT_CONTAINS(text, "os/linux/capabilities-retain-set");
        ASSERT_CONTAINS(text, "\"CAP_SYS_TIME\"");
        ASSERT_CONTAINS(text, "\"CAP_CHOWN\"");
        ASSERT(!strstr(text, "\"CAP_NET_RAW\""));
        ASSERT(!strstr(text, "\"CAP_SYS_ADMIN\""));
        json_object_put(isolators);
        pod_args_done(&a);

        static const struct {
                const char *arg;
                const char *message;
        } bad[] = {
                { "--memory=lots", "--memory=lots: not a quantity" },
                { "--memory=0", "--memory=0: must be greater than zero" },
                { "--memory=512m", "--memory=512m: not a quantity" },   /* m is milli in this grammar */
                { "--memory=99999999E", "too large" },
                { "--cpus=-1", "--cpus=-1: not a number of CPUs" },
                { "--cpus=0", "--cpus=0: must be greater than zero" },
                { "--cpus=0.0001", "not a number of CPUs" },
                { "--pids-limit=-5", "--pids-limit=-5: expected a number of tasks" },
                { "--pids-limit=1e3", "expected a number of tasks" },
                { "--pids-limit=99999999999", "expected a number of tasks" },
                { "--cap-add=CAP_FLY", "--cap-add=CAP_FLY: not a capability" },
                { "--cap-drop=", "expected a capability name" },
                { "--tmpfs=relative", "must be an absolute path" },
                { "--tmpfs=/", "not the root" },
                { "--tmpfs=/a/../etc", ".." },
                { "--tmpfs=/proc", "not in /proc, /sys or /dev" },
                { "--tmpfs=/dev/shm", "not in /proc, /sys or /dev" },
                { "--tmpfs=/tmp:exec", "option \"exec\" is not supported" },
                { "--tmpfs=/tmp:suid", "option \"suid\" is not supported" },
                { "--tmpfs=/tmp:size=1m,size=2m", "given twice" },
                { "--tmpfs=/tmp:size=lots", "size=lots" },
                { "--tmpfs=/tmp:mode=999", "mode=999" },
                { "--tmpfs=/tmp:uid=0", "option \"uid=0\" is not supported" },
                { "--tmpfs=/t mp", "whitespace" },
                { "--device=/etc/passwd", "a device goes under /dev" },
                { "--device=/dev/null:rx", "access \"rx\"" },
                { "--device=/dev/null:rr", "access \"rr\"" },
                { "--device=/dev/no-such-device", "No such file" },
                { "--device=/dev/shm", "is not a device node" },
                { "--device=/dev", "a device goes under /dev" },
        };
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                int r = parse(&a, true, &msg, "img", bad[i].arg, NULL);
                if (r == 0) {
                        r = app_options_isolators(&a.apps[0], "x", false, &isolators, &e);
                        free(msg);
                        msg = e ? strdup(e->msg) : NULL;
                        error_free(e);
                        e = NULL;
                        pod_args_done(&a);
                }
                if (r >= 0 || !msg || !strstr(msg, bad[i].message))
                        fprintf(stderr, "%s: got %d, \"%s\"\n", bad[i].arg, r, msg ? msg : "(none)");
                ASSERT(r < 0);
                ASSERT_CONTAINS(msg, bad[i].message);
                free(msg);
                msg = NULL;
        }
        ASSERT_EQ_INT(parse(&a, true, &msg, "img", "--memory=1G", "--memory=2G", NULL), -EINVAL);
        ASSERT_CONTAINS(msg, "--memory given twice");
        free(msg);
        ASSERT_EQ_INT(parse(&a, true, &msg, "img", "--read-only=maybe", NULL), -EINVAL);
        ASSERT_CONTAINS(msg, "--read-only=maybe: expected yes or no");
        free(msg);
}

/* The options of the pulls: of the command, wherever they stand before
 * "--", also for podapp add (no pod options); checked by image-pull. */
static void test_pull_options(void) {
        PodArgs a;
        ASSERT_EQ_INT(parse(&a, false, NULL, "--tls-verify=false", "docker://127.0.0.1:5000/bb", "--app=x",
                            "--pull=always", "--authfile", "/a.json", "--", "--pull=never", NULL), 0);
        ASSERT_STREQ(a.pull, "always");
        ASSERT_EQ_INT(a.n_pull_options, 2);
        ASSERT_STREQ(a.pull_options[0].name, "tls-verify");
        ASSERT_STREQ(a.pull_options[0].value, "false");
        ASSERT_STREQ(a.pull_options[1].name, "authfile");
        ASSERT_STREQ(a.pull_options[1].value, "/a.json");
        /* after "--": the app's argument */
        assert_strv(a.apps[0].args, (const char *[]) { "--pull=never", NULL });
        pod_args_done(&a);
}

/* podapp add's own: a host root instead of an image, host streams and
 * binds, groups, rlimits, no-new-privileges. */
static void test_host_options(void) {
        PodArgs a;
        char *msg = NULL;
        ASSERT_EQ_INT(parse(&a, false, &msg, "--app=c", "--rootfs=/run/b/rootfs", "--stdin=/run/f/in", "--stdout=/run/f/out",
                            "--stderr", "/run/f/err", "--bind=/h/d:/data", "--bind=/h/f:/etc/motd:ro",
                            "--supplementary-groups=10,20,10", "--rlimit=nofile=1024:4096", "--rlimit=core=0",
                            "--no-new-privileges=no", "--", "/bin/sh", "-c", "true", NULL), 0);
        ASSERT_EQ_INT(a.n_apps, 1);
        AppArgs *c = &a.apps[0];
        ASSERT(!c->image);
        ASSERT_STREQ(c->rootfs, "/run/b/rootfs");
        ASSERT_STREQ(c->stdin_path, "/run/f/in");
        ASSERT_STREQ(c->stdout_path, "/run/f/out");
        ASSERT_STREQ(c->stderr_path, "/run/f/err");
        ASSERT_EQ_INT(c->n_host_binds, 2);
        ASSERT_STREQ(c->host_binds[1].source, "/h/f");
        ASSERT_STREQ(c->host_binds[1].destination, "/etc/motd");
        ASSERT(c->host_binds[1].read_only && !c->host_binds[0].read_only);
        assert_strv(c->supplementary_groups, (const char *const[]) { "10", "20", NULL });
        assert_strv(c->rlimits, (const char *const[]) { "nofile=1024:4096", "core=0", NULL });
        ASSERT(c->allow_new_privileges);
        ASSERT(c->have_args && strv_length(c->args) == 3);
        pod_args_done(&a);

        static const struct {
                bool pod_options;
                const char *args[4];
                const char *message;
        } bad[] = {
                { false, { "img", "--rootfs=/r" }, "not both" },
                { false, { "--rootfs=r" }, "absolute" },
                { false, { "--rootfs=/a/../b" }, "--rootfs" },
                { false, { "--rootfs=/r", "--rootfs=/s" }, "twice" },
                { false, { "--rootfs=/r", "--stdout=out" }, "--stdout" },
                { false, { "--rootfs=/r", "--bind=/a" }, "SOURCE:DESTINATION" },
                { false, { "--rootfs=/r", "--bind=/a:/b:rx" }, "ro or rw" },
                { false, { "--rootfs=/r", "--bind=/a:/" }, "root" },
                { false, { "--rootfs=/r", "--supplementary-groups=wheel" }, "group number" },
                { false, { "--rootfs=/r", "--rlimit=nofile" }, "NAME=SOFT" },
                { false, { "--rootfs=/r", "--rlimit=files=1" }, "nofile" },
                { false, { "--rootfs=/r", "--rlimit=nofile=2:1" }, "above the hard" },
                { false, { "--rootfs=/r", "--rlimit=nofile=lots" }, "infinity" },
                { false, { "--rootfs=/r", "--no-new-privileges=maybe" }, "yes or no" },
                { true, { "--rootfs=/r" }, "podapp add" },
                { true, { "img", "--bind=/a:/b" }, "podapp add" },
        };
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                char *argv[5] = {};
                int argc = 0;
                while (argc < 4 && bad[i].args[argc])
                        argv[argc] = (char *) bad[i].args[argc], argc++;
                Error *e = NULL;
                PodArgs b;
                ASSERT_EQ_INT(pod_args_parse(argc, argv, bad[i].pod_options, &b, &e), -EINVAL);
                ASSERT_CONTAINS(e->msg, bad[i].message);
                error_free(e);
        }
        /* The definitions of sdpod-pod-generator: not there either. */
        PodArgs d = {};
        Error *e = NULL;
        ASSERT_EQ_INT(pod_args_add_option(&d, "rootfs", "/r", &e), -EINVAL);
        ASSERT_CONTAINS(e->msg, "podapp add");
        error_free(e);
        pod_args_done(&d);
        ASSERT_EQ_INT(rlimit_arg_check("stack=infinity", NULL), 0);
        ASSERT_EQ_INT(rlimit_arg_check("nofile=1:infinity", NULL), 0);
        ASSERT_EQ_INT(rlimit_arg_check("nofile=infinity:1", NULL), -EINVAL);
        free(msg);
}

int main(void) {
        RUN(test_host_options);
        RUN(test_sections);
        RUN(test_pull_options);
        RUN(test_env_file);
        RUN(test_app_options);
        RUN(test_errors);
        RUN(test_lifecycle);
        RUN(test_durations);
        return 0;
}
