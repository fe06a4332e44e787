/* SPDX-License-Identifier: Apache-2.0 */
/* Volumes that keep data: --volume's kinds and options, the -v short form,
 * named volume names, and the strict records (pod/pod-volume.h,
 * pod/pod-userns.h). */
#include <stdarg.h>

#include "basic/strv.h"
#include "manifest/app-args.h"
#include "pod/pod-userns.h"
#include "pod/pod-volume.h"
#include "tests.h"

static int parse(PodArgs *ret, char **error, ...) {
        char *argv[64];
        int argc = 0;
        va_list ap;
        va_start(ap, error);
        for (char *a; (a = va_arg(ap, char *));)
                argv[argc++] = a;
        va_end(ap);
        Error *e = NULL;
        int r = pod_args_parse(argc, argv, true, ret, &e);
        if (error)
                *error = e ? strdup(e->msg) : NULL;
        error_free(e);
        return r;
}

static int volume(const char *s, VolumeArg *v, char **error) {
        Error *e = NULL;
        int r = volume_arg_parse(s, v, &e);
        if (error)
                *error = e ? strdup(e->msg) : NULL;
        error_free(e);
        return r;
}

static void test_volume_kinds(void) {
        VolumeArg v;
        char *msg = NULL;
        ASSERT_EQ_INT(volume("db,kind=named", &v, NULL), 0);
        ASSERT(v.named && v.kind == POD_VOLUME_HOST && !v.chown && !v.idmap);
        ASSERT_STREQ(v.source, "db"); /* the named volume is the volume's name */
        free(v.name);
        free(v.source);
        ASSERT_EQ_INT(volume("db,kind=named,source=pg_data.1,readOnly=true", &v, NULL), 0);
        ASSERT_STREQ(v.source, "pg_data.1");
        ASSERT(v.read_only);
        free(v.name);
        free(v.source);
        ASSERT_EQ_INT(volume("d,kind=host,source=/srv,chown=true", &v, NULL), 0);
        ASSERT(v.chown && !v.idmap && !v.named);
        free(v.name);
        free(v.source);
        ASSERT_EQ_INT(volume("d,source=/srv,idmap=yes", &v, NULL), 0);
        ASSERT(v.idmap && !v.chown);
        free(v.name);
        free(v.source);
        /* Refused: a path as a named volume, options of host volumes on
         * others, both ownership options, a bad boolean. */
        ASSERT_EQ_INT(volume("d,kind=named,source=../etc", &v, &msg), -EINVAL);
        ASSERT(strstr(msg, "not a path"));
        free(msg);
        ASSERT_EQ_INT(volume("d,kind=named,source=a/b", &v, NULL), -EINVAL);
        ASSERT_EQ_INT(volume("d,kind=named,chown=true", &v, NULL), -EINVAL);
        ASSERT_EQ_INT(volume("d,kind=empty,idmap=true", &v, NULL), -EINVAL);
        ASSERT_EQ_INT(volume("d,source=/srv,chown=true,idmap=true", &v, &msg), -EINVAL);
        ASSERT(strstr(msg, "exclude"));
        free(msg);
        ASSERT_EQ_INT(volume("d,source=/srv,chown=maybe", &v, NULL), -EINVAL);
        ASSERT_EQ_INT(volume("d,kind=other", &v, &msg), -EINVAL);
        ASSERT(strstr(msg, "named"));
        free(msg);
}

static void test_short_volume(void) {
        PodArgs a;
        char *msg = NULL;
        ASSERT_EQ_INT(parse(&a, NULL, "-v", "/srv/www:/usr/share/nginx/html:ro", "-v", "pgdata:/var/lib/pg",
                            "--volume=v2,kind=empty", "-v", "/srv/up:/up:U", "-v", "/srv/id:/id:idmap,rw", "img",
                            "--mount=volume=v2,target=/e", NULL), 0);
        ASSERT_EQ_INT(a.n_volumes, 5);
        ASSERT_STREQ(a.volumes[0].name, "v1");
        ASSERT_STREQ(a.volumes[0].source, "/srv/www");
        ASSERT(a.volumes[0].read_only && !a.volumes[0].named);
        ASSERT_STREQ(a.volumes[1].name, "v2");
        ASSERT(a.volumes[1].named);
        ASSERT_STREQ(a.volumes[1].source, "pgdata");
        ASSERT_STREQ(a.volumes[2].name, "v2"); /* --volume named it so: the next -v takes another */
        ASSERT_STREQ(a.volumes[3].name, "v4");
        ASSERT(a.volumes[3].chown);
        ASSERT_STREQ(a.volumes[4].name, "v5");
        ASSERT(a.volumes[4].idmap && !a.volumes[4].read_only);
        ASSERT_EQ_INT(a.apps[0].n_mounts, 5);
        ASSERT_STREQ(a.apps[0].mounts[0].volume, "v1");
        ASSERT_STREQ(a.apps[0].mounts[0].target, "/usr/share/nginx/html");
        ASSERT_STREQ(a.apps[0].mounts[1].target, "/var/lib/pg");
        pod_args_done(&a);

        /* -v belongs to the app it follows. */
        ASSERT_EQ_INT(parse(&a, NULL, "a", "---", "b", "-v", "/srv:/srv", NULL), 0);
        ASSERT_EQ_INT(a.apps[0].n_mounts, 0);
        ASSERT_EQ_INT(a.apps[1].n_mounts, 1);
        pod_args_done(&a);

        ASSERT_EQ_INT(parse(&a, &msg, "-v", "/srv", "img", NULL), -EINVAL);
        ASSERT(strstr(msg, "SOURCE:DESTINATION"));
        free(msg);
        ASSERT_EQ_INT(parse(&a, &msg, "-v", "/srv:relative", "img", NULL), -EINVAL);
        free(msg);
        ASSERT_EQ_INT(parse(&a, &msg, "-v", "/srv:/", "img", NULL), -EINVAL);
        free(msg);
        ASSERT_EQ_INT(parse(&a, &msg, "-v", "/srv:/x:z", "img", NULL), -EINVAL);
        ASSERT(strstr(msg, "ro, rw, U, idmap"));
        free(msg);
        ASSERT_EQ_INT(parse(&a, &msg, "-v", "db:/x:U", "img", NULL), -EINVAL);
        free(msg);
        ASSERT_EQ_INT(parse(&a, &msg, "-v", "/a/../b:/x", "img", NULL), -EINVAL);
        free(msg);
        ASSERT_EQ_INT(parse(&a, &msg, "img", "-v", NULL), -EINVAL);
        free(msg);
}

static void test_names(void) {
        ASSERT(volume_name_is_valid("pgdata"));
        ASSERT(volume_name_is_valid("My_Data.1-x"));
        ASSERT(!volume_name_is_valid(""));
        ASSERT(!volume_name_is_valid("."));
        ASSERT(!volume_name_is_valid(".."));
        ASSERT(!volume_name_is_valid("../x"));
        ASSERT(!volume_name_is_valid("a/b"));
        ASSERT(!volume_name_is_valid("-a"));
        ASSERT(!volume_name_is_valid(".hidden"));
        ASSERT(!volume_name_is_valid("a b"));
        char long_name[POD_VOLUME_NAME_MAX + 2];
        memset(long_name, 'a', sizeof(long_name) - 1);
        long_name[sizeof(long_name) - 1] = 0;
        ASSERT(!volume_name_is_valid(long_name));
        long_name[POD_VOLUME_NAME_MAX] = 0;
        ASSERT(volume_name_is_valid(long_name));
}

static int record(const char *s, VolumeRecord *v) {
        Error *e = NULL;
        int r = volume_record_parse(s, strlen(s), "test", v, &e);
        error_free(e);
        return r;
}

static int id_range(const char *s, PodIdRangeRecord *v) {
        Error *e = NULL;
        int r = pod_id_range_record_parse(s, strlen(s), "test", v, &e);
        error_free(e);
        return r;
}

static void test_records(void) {
        VolumeRecord v;
        ASSERT_EQ_INT(record("{\"name\":\"db\",\"created\":\"2026-12-05T18:00:00Z\"}", &v), 0);
        ASSERT(!v.has_base);
        ASSERT_EQ_INT(record("{\"name\":\"db\",\"created\":\"2026-12-05T18:00:00Z\",\"base\":524288}", &v), 0);
        ASSERT(v.has_base && v.base == 524288);
        char *text = NULL;
        ASSERT_EQ_INT(volume_record_format(&v, &text), 0);
        VolumeRecord w;
        ASSERT_EQ_INT(record(text, &w), 0);
        ASSERT(w.base == v.base && streq(w.name, v.name) && streq(w.created, v.created));
        free(text);
        /* Not JSON, or not ours. */
        ASSERT_EQ_INT(record("{\"name\":\"db\",\"created\":\"2026-12-05T18:00:00Z\",\"base\":0524288}", &v), -EBADMSG);
        ASSERT_EQ_INT(record("{\"name\":\"db\",\"created\":\"2026-12-05T18:00:00Z\",}", &v), -EBADMSG);
        ASSERT_EQ_INT(record("{\"name\":\"db\",\"created\":\"2026-12-05T18:00:00Z\"/*c*/}", &v), -EBADMSG);
        ASSERT_EQ_INT(record("{\"name\":\"d\\u0000b\",\"created\":\"2026-12-05T18:00:00Z\"}", &v), -EBADMSG);
        ASSERT_EQ_INT(record("{\"name\":\"\\ud800\",\"created\":\"2026-12-05T18:00:00Z\"}", &v), -EBADMSG);
        ASSERT_EQ_INT(record("{\"name\":\"../x\",\"created\":\"2026-12-05T18:00:00Z\"}", &v), -EBADMSG);
        ASSERT_EQ_INT(record("{\"name\":\"db\",\"created\":\"yesterday\"}", &v), -EBADMSG);
        ASSERT_EQ_INT(record("{\"name\":\"db\",\"created\":\"2026-12-05T18:00:00Z\",\"base\":1}", &v), -EBADMSG);
        ASSERT_EQ_INT(record("{\"name\":\"db\",\"created\":\"2026-12-05T18:00:00Z\",\"x\":1}", &v), -EBADMSG);
        ASSERT_EQ_INT(record("[]", &v), -EBADMSG);

        PodIdRangeRecord r;
        ASSERT_EQ_INT(id_range("{\"name\":\"web\",\"base\":524288}", &r), 0);
        ASSERT(r.base == 524288 && streq(r.name, "web"));
        ASSERT_EQ_INT(id_range("{\"name\":\"web\",\"base\":524289}", &r), -EBADMSG);
        ASSERT_EQ_INT(id_range("{\"name\":\"web\",\"base\":0}", &r), -EBADMSG);
        ASSERT_EQ_INT(id_range("{\"name\":\"web\",\"base\":1e6}", &r), -EBADMSG);
        ASSERT_EQ_INT(id_range("{\"name\":\"../x\",\"base\":524288}", &r), -EBADMSG);
        ASSERT_EQ_INT(id_range("{\"name\":\"web\",\"base\":524288,\"x\":1}", &r), -EBADMSG);
        ASSERT_EQ_INT(id_range("{\"name\":\"web\",\"base\":524288", &r), -EBADMSG);
}

static void test_options(void) {
        PodVolumeOptions o;
        const char *a = "{\"data\":{\"named\":\"pgdata\",\"uid\":999,\"gid\":998},\"up\":{\"chown\":true},\"id\":{\"idmap\":true}}";
        ASSERT_EQ_INT(pod_volume_options_parse(a, "data", &o, NULL), 0);
        ASSERT(streq(o.named, "pgdata") && o.uid == 999 && o.gid == 998 && !o.chown);
        ASSERT_EQ_INT(pod_volume_options_parse(a, "up", &o, NULL), 0);
        ASSERT(o.chown && !o.named[0] && o.uid == 0);
        ASSERT_EQ_INT(pod_volume_options_parse(a, "id", &o, NULL), 0);
        ASSERT(o.idmap);
        ASSERT_EQ_INT(pod_volume_options_parse(a, "other", &o, NULL), 0);
        ASSERT(!o.idmap && !o.chown && !o.named[0]);
        ASSERT_EQ_INT(pod_volume_options_parse(NULL, "data", &o, NULL), 0);
        ASSERT_EQ_INT(pod_volume_options_parse("{\"d\":{\"named\":\"../x\"}}", "d", &o, NULL), -EBADMSG);
        ASSERT_EQ_INT(pod_volume_options_parse("{\"d\":{\"chown\":true,\"idmap\":true}}", "d", &o, NULL), -EBADMSG);
        ASSERT_EQ_INT(pod_volume_options_parse("{\"d\":{\"uid\":65536}}", "d", &o, NULL), -EBADMSG);
        ASSERT_EQ_INT(pod_volume_options_parse("{\"d\":{\"x\":1}}", "d", &o, NULL), -EBADMSG);
        ASSERT_EQ_INT(pod_volume_options_parse("{\"d\":{\"chown\":1}}", "d", &o, NULL), -EBADMSG);
}

int main(void) {
        RUN(test_volume_kinds);
        RUN(test_short_volume);
        RUN(test_names);
        RUN(test_records);
        RUN(test_options);
        return 0;
}
