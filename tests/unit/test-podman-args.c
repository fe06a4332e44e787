/* SPDX-License-Identifier: Apache-2.0 */
/* podman's habits in the pod command line (issue 26, item 7): the short
 * options -p, -e, -u, -w (value attached or next), USER:GROUP, and a
 * command's own options (sdpod run's) anywhere before the first IMAGE,
 * refused after it. */
#include <stdarg.h>

#include "basic/strv.h"
#include "manifest/app-args.h"
#include "tests.h"

typedef struct Seen {
        unsigned detach, rm;
        const char *uuid_file;
} Seen;

/* A command with -d, --rm and --uuid-file PATH of its own. */
static int extra(const char *arg, const char *next, void *userdata, Error **err) {
        Seen *s = userdata;
        if (streq(arg, "-d"))
                return s->detach++, 1;
        if (streq(arg, "--rm"))
                return s->rm++, 1;
        if (streq(arg, "--uuid-file")) {
                if (!next)
                        return error_set(err, -EINVAL, "--uuid-file needs a value");
                s->uuid_file = next;
                return 2;
        }
        return 0;
}

static int parse(PodArgs *ret, Seen *seen, char **error, ...) {
        char *argv[64];
        int argc = 0;
        va_list ap;
        va_start(ap, error);
        for (char *a; (a = va_arg(ap, char *));)
                argv[argc++] = a;
        va_end(ap);
        Error *e = NULL;
        *ret = (PodArgs) {};
        int r = pod_args_parse_with(argc, argv, true, seen ? extra : NULL, seen, ret, &e);
        if (error)
                *error = e ? strdup(e->msg) : NULL;
        error_free(e);
        return r;
}

static void test_short_options(void) {
        PodArgs a;
        Seen s = {};
        char *error = NULL;
        ASSERT_EQ_INT(parse(&a, &s, &error, "-p", "8080:80", "-d", "-e", "A=1", "-eB=2", "-u", "redis:7", "-w/srv",
                            "--rm", "--uuid-file", "/run/x", "busybox", "--app=web", "-p9090:90", "--", "-p", NULL),
                      0);
        ASSERT_EQ_INT(s.detach, 1);
        ASSERT_EQ_INT(s.rm, 1);
        ASSERT_STREQ(s.uuid_file, "/run/x");
        ASSERT_EQ_INT(a.n_apps, 1);
        AppArgs *app = &a.apps[0];
        ASSERT_STREQ(app->image, "busybox");
        ASSERT_STREQ(app->name, "web");
        ASSERT_STREQ(app->user, "redis");
        ASSERT_STREQ(app->group, "7");
        ASSERT_STREQ(app->working_dir, "/srv");
        ASSERT(strv_contains(app->environment, "A=1") && strv_contains(app->environment, "B=2"));
        ASSERT_EQ_INT(strv_length(a.net.ports), 2);
        /* after "--": the app's, "-p" included */
        ASSERT(app->args && streq(app->args[0], "-p") && !app->args[1]);
        pod_args_done(&a);
        free(error);
}

static void test_errors(void) {
        PodArgs a;
        Seen s = {};
        char *error = NULL;
        ASSERT(parse(&a, &s, &error, "busybox", "-d", NULL) < 0);
        ASSERT(strstr(error, "put it before the first IMAGE"));
        free(error);
        ASSERT(parse(&a, &s, &error, "-x", "busybox", NULL) < 0);
        ASSERT_STREQ(error, "unknown option \"-x\"");
        free(error);
        ASSERT(parse(&a, NULL, &error, "-d", "busybox", NULL) < 0);
        ASSERT_STREQ(error, "unknown option \"-d\"");
        free(error);
        ASSERT(parse(&a, &s, &error, "--detach=1", "busybox", NULL) < 0);
        ASSERT_STREQ(error, "unknown option \"--detach\"");
        free(error);
        ASSERT(parse(&a, &s, &error, "busybox", "-p", NULL) < 0);
        ASSERT_STREQ(error, "option \"-p\" needs a value");
        free(error);
        ASSERT(parse(&a, &s, &error, "--uuid-file", NULL) < 0);
        ASSERT_STREQ(error, "--uuid-file needs a value");
        free(error);
        ASSERT(parse(&a, &s, &error, "-u", "redis:", "busybox", NULL) < 0);
        ASSERT(strstr(error, "expected USER or USER:GROUP"));
        free(error);
        ASSERT(parse(&a, &s, &error, "-u", "a:b", "--group=c", "busybox", NULL) < 0);
        ASSERT(strstr(error, "--group given twice"));
        free(error);
}

int main(void) {
        test_short_options();
        test_errors();
        printf("ok\n");
        return 0;
}
