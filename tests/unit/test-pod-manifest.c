/* SPDX-License-Identifier: Apache-2.0 */
#include <fcntl.h>
#include <sys/stat.h>

#include "basic/fs.h"
#include "basic/json-util.h"
#include "basic/strv.h"
#include "manifest/pod-manifest.h"
#include "tests.h"

#define ID1 "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
#define ID2 "sha256:fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210"
#define WHAT "pod manifest of T"

/* Every field of the schema, and unknown ones at every level. */
static const char full_manifest[] =
        "{\n"
        "  \"acKind\": \"PodManifest\",\n"
        "  \"acVersion\": \"0.8.11\",\n"
        "  \"x-top\": {\"k\": [1, 2.50, null]},\n"
        "  \"apps\": [\n"
        "    {\n"
        "      \"name\": \"web\",\n"
        "      \"x-entry\": \"kept\",\n"
        "      \"image\": {\"name\": \"docker.io/library/nginx:1\", \"id\": \"" ID1 "\",\n"
        "                \"labels\": [{\"name\": \"arch\", \"value\": \"amd64\"}]},\n"
        "      \"app\": {\n"
        "        \"exec\": [\"/usr/sbin/nginx\", \"-g\", \"daemon off;\"],\n"
        "        \"user\": \"www-data\",\n"
        "        \"group\": \"1000\",\n"
        "        \"workingDirectory\": \"/srv/www\",\n"
        "        \"environment\": [{\"name\": \"PATH\", \"value\": \"/usr/bin:/bin\"},\n"
        "                        {\"name\": \"EMPTY\", \"value\": \"\"}],\n"
        "        \"mountPoints\": [{\"name\": \"data\", \"path\": \"/data\", \"readOnly\": false}],\n"
        "        \"isolators\": [{\"name\": \"resource/memory\", \"value\": {\"limit\": \"1G\"}},\n"
        "                      {\"name\": \"os/linux/no-new-privileges\", \"value\": true}],\n"
        "        \"eventHandlers\": [{\"name\": \"pre-start\", \"exec\": [\"/bin/true\"]}],\n"
        "        \"ports\": [{\"name\": \"http\", \"protocol\": \"tcp\", \"port\": 80}],\n"
        "        \"x-app\": 42\n"
        "      },\n"
        "      \"readOnlyRootFS\": true,\n"
        "      \"mounts\": [{\"volume\": \"data\", \"path\": \"/srv/www/data\"},\n"
        "                 {\"volume\": \"scratch\", \"path\": \"/tmp\", \"x-mount\": 1}],\n"
        "      \"annotations\": [{\"name\": \"sdpod/restart\", \"value\": \"always\"}]\n"
        "    },\n"
        "    {\n"
        "      \"name\": \"sidecar-2\",\n"
        "      \"image\": {\"id\": \"" ID2 "\"},\n"
        "      \"app\": {\"exec\": [\"/bin/sh\"]}\n"
        "    }\n"
        "  ],\n"
        "  \"volumes\": [\n"
        "    {\"name\": \"data\", \"kind\": \"host\", \"source\": \"/var/data\", \"readOnly\": true,\n"
        "     \"recursive\": true, \"x-vol\": \"kept\"},\n"
        "    {\"name\": \"scratch\", \"kind\": \"empty\", \"mode\": \"0700\", \"uid\": 1000, \"gid\": 4294967294}\n"
        "  ],\n"
        "  \"isolators\": [{\"name\": \"resource/cpu\", \"value\": {\"limit\": \"500m\"}}],\n"
        "  \"annotations\": [{\"name\": \"sdpod/name\", \"value\": \"my-pod\"},\n"
        "                   {\"name\": \"example.com/owner\", \"value\": \"ops\"}],\n"
        "  \"ports\": [{\"name\": \"http\", \"hostPort\": 8080, \"hostIP\": \"127.0.0.1\"}]\n"
        "}\n";

static PodManifest *parse_ok(const char *text) {
        PodManifest *m = NULL;
        Error *err = NULL;
        int r = pod_manifest_parse(text, strlen(text), WHAT, &m, &err);
        if (r < 0)
                fprintf(stderr, "unexpected error: %s\n", err && err->msg ? err->msg : "?");
        ASSERT_EQ_INT(r, 0);
        ASSERT(!err);
        ASSERT(m);
        return m;
}

/* A node of a JSON document by a path such as "apps[0].image.labels". */
static struct json_object *jget(struct json_object *o, const char *path) {
        char buf[256];
        snprintf(buf, sizeof(buf), "%s", path);
        for (char *p = buf; o && *p;) {
                if (*p == '.')
                        p++;
                if (*p == '[') {
                        char *end;
                        size_t i = strtoul(p + 1, &end, 10);
                        ASSERT(*end == ']');
                        if (!json_object_is_type(o, json_type_array) || i >= json_object_array_length(o))
                                return NULL;
                        o = json_object_array_get_idx(o, i);
                        p = end + 1;
                        continue;
                }
                size_t n = strcspn(p, ".[");
                char save = p[n];
                p[n] = 0;
                struct json_object *v = NULL;
                if (!json_object_object_get_ex(o, p, &v))
                        return NULL;
                o = v;
                p[n] = save;
                p += n;
        }
        return o;
}

static struct json_object *doc_of_text(const char *text) {
        struct json_object *o = NULL;
        ASSERT_EQ_INT(json_parse(text, strlen(text), "text", &o, NULL), 0);
        return o;
}

/* The contents of full_manifest; later apps (added by a test) are not looked at. */
static void check_full_apps(const PodManifest *m, size_t n_apps) {
        ASSERT_EQ_INT(m->n_apps, n_apps);
        const PodApp *web = pod_manifest_find_app(m, "web");
        ASSERT(web == &m->apps[0]);
        ASSERT_STREQ(web->name, "web");
        ASSERT_STREQ(web->image_name, "docker.io/library/nginx:1");
        ASSERT_STREQ(web->image_id, ID1);
        ASSERT_EQ_INT(strv_length(web->exec), 3);
        ASSERT_STREQ(web->exec[0], "/usr/sbin/nginx");
        ASSERT_STREQ(web->exec[1], "-g");
        ASSERT_STREQ(web->exec[2], "daemon off;");
        ASSERT_STREQ(web->user, "www-data");
        ASSERT_STREQ(web->group, "1000");
        ASSERT_STREQ(web->working_directory, "/srv/www");
        ASSERT_EQ_INT(web->n_environment, 2);
        ASSERT_STREQ(web->environment[0].name, "PATH");
        ASSERT_STREQ(web->environment[0].value, "/usr/bin:/bin");
        ASSERT_STREQ(web->environment[1].name, "EMPTY");
        ASSERT_STREQ(web->environment[1].value, "");
        ASSERT_EQ_INT(web->n_mounts, 2);
        ASSERT_STREQ(web->mounts[0].volume, "data");
        ASSERT_STREQ(web->mounts[0].path, "/srv/www/data");
        ASSERT_STREQ(web->mounts[1].volume, "scratch");
        ASSERT_STREQ(web->mounts[1].path, "/tmp");
        ASSERT_EQ_INT(web->n_isolators, 2);
        ASSERT_STREQ(web->isolators[0].name, "resource/memory");
        ASSERT_STREQ(json_object_get_string(jget(web->isolators[0].value, "limit")), "1G");
        ASSERT_STREQ(web->isolators[1].name, "os/linux/no-new-privileges");
        ASSERT(json_object_get_boolean(web->isolators[1].value));
        ASSERT_EQ_INT(web->n_annotations, 1);
        ASSERT_STREQ(web->annotations[0].name, "sdpod/restart");
        ASSERT_STREQ(web->annotations[0].value, "always");
        ASSERT(web->read_only_rootfs);

        const PodApp *side = pod_manifest_find_app(m, "sidecar-2");
        ASSERT(side == &m->apps[1]);
        ASSERT(!side->image_name);
        ASSERT_STREQ(side->image_id, ID2);
        ASSERT_EQ_INT(strv_length(side->exec), 1);
        ASSERT_STREQ(side->exec[0], "/bin/sh");
        ASSERT(!pod_manifest_find_app(m, "nope"));
        ASSERT(!pod_manifest_find_app(m, NULL));

        ASSERT_EQ_INT(m->n_volumes, 2);
        const PodVolume *data = pod_manifest_find_volume(m, "data");
        ASSERT(data == &m->volumes[0]);
        ASSERT_EQ_INT(data->kind, POD_VOLUME_HOST);
        ASSERT_STREQ(data->source, "/var/data");
        ASSERT(data->read_only);
        const PodVolume *scratch = pod_manifest_find_volume(m, "scratch");
        ASSERT(scratch == &m->volumes[1]);
        ASSERT_EQ_INT(scratch->kind, POD_VOLUME_EMPTY);
        ASSERT(!scratch->source);
        ASSERT(!scratch->read_only);
        ASSERT_EQ_INT(scratch->mode, 0700);
        ASSERT_EQ_INT(scratch->uid, 1000);
        ASSERT_EQ_INT(scratch->gid, 4294967294U);
        ASSERT(!pod_manifest_find_volume(m, "nope"));

        ASSERT_EQ_INT(m->n_isolators, 1);
        ASSERT_STREQ(m->isolators[0].name, "resource/cpu");
        ASSERT_STREQ(json_object_get_string(jget(m->isolators[0].value, "limit")), "500m");
        ASSERT_EQ_INT(m->n_annotations, 2);
        ASSERT_STREQ(m->annotations[0].name, POD_ANNOTATION_NAME);
        ASSERT_STREQ(pod_manifest_get_annotation(m, POD_ANNOTATION_NAME), "my-pod");
        ASSERT_STREQ(pod_manifest_get_annotation(m, "example.com/owner"), "ops");
        ASSERT(!pod_manifest_get_annotation(m, "sdpod/none"));
}

static void check_full(const PodManifest *m) {
        check_full_apps(m, 2);
}

/* The fields sdpod does not know, wherever they were put, are still there. */
static void check_unknown_kept(const char *text) {
        _cleanup_json_ struct json_object *o = doc_of_text(text);
        ASSERT_EQ_INT(json_object_array_length(jget(o, "x-top.k")), 3);
        ASSERT_STREQ(json_object_to_json_string_ext(jget(o, "x-top.k[1]"), 0), "2.50");
        ASSERT_STREQ(json_object_get_string(jget(o, "apps[0].x-entry")), "kept");
        ASSERT_EQ_INT(json_object_get_int(jget(o, "apps[0].app.x-app")), 42);
        ASSERT_STREQ(json_object_get_string(jget(o, "apps[0].image.labels[0].value")), "amd64");
        ASSERT_STREQ(json_object_get_string(jget(o, "apps[0].app.mountPoints[0].name")), "data");
        ASSERT_STREQ(json_object_get_string(jget(o, "apps[0].app.eventHandlers[0].name")), "pre-start");
        ASSERT_EQ_INT(json_object_get_int(jget(o, "apps[0].app.ports[0].port")), 80);
        ASSERT_EQ_INT(json_object_get_int(jget(o, "apps[0].mounts[1].x-mount")), 1);
        ASSERT_STREQ(json_object_get_string(jget(o, "volumes[0].x-vol")), "kept");
        ASSERT(json_object_get_boolean(jget(o, "volumes[0].recursive")));
        ASSERT_STREQ(json_object_get_string(jget(o, "ports[0].hostIP")), "127.0.0.1");
}

static void test_full_roundtrip(void) {
        _cleanup_pod_manifest_ PodManifest *m = parse_ok(full_manifest);
        check_full(m);
        check_unknown_kept(pod_manifest_to_text(m));

        _cleanup_free_ char *text = strdup(pod_manifest_to_text(m));
        _cleanup_pod_manifest_ PodManifest *m2 = parse_ok(text);
        check_full(m2);
        ASSERT_STREQ(pod_manifest_to_text(m2), text);

        /* The typed view is the document's: its strings are the document's. */
        ASSERT(m->apps[0].name == json_object_get_string(jget(m->json, "apps[0].name")));
}

static void test_defaults(void) {
        _cleanup_pod_manifest_ PodManifest *empty = NULL;
        ASSERT_EQ_INT(pod_manifest_new(&empty), 0);
        ASSERT_EQ_INT(empty->n_apps, 0);
        ASSERT_EQ_INT(empty->n_volumes, 0);
        ASSERT_EQ_INT(empty->n_annotations, 0);
        ASSERT_STREQ(json_object_get_string(jget(empty->json, "acKind")), POD_MANIFEST_KIND);
        ASSERT_STREQ(json_object_get_string(jget(empty->json, "acVersion")), POD_MANIFEST_VERSION);
        ASSERT_EQ_INT(json_object_array_length(jget(empty->json, "apps")), 0);
        _cleanup_pod_manifest_ PodManifest *again = parse_ok(pod_manifest_to_text(empty));
        ASSERT_STREQ(pod_manifest_to_text(again), pod_manifest_to_text(empty));

        _cleanup_pod_manifest_ PodManifest *m = parse_ok(
                "{\"acKind\":\"PodManifest\",\"acVersion\":\"0.8.0-rc.1+build.5\","
                "\"apps\":[{\"name\":\"a\",\"image\":{\"id\":\"" ID1 "\"},\"app\":{\"exec\":[\"x\"],"
                "\"workingDirectory\":\"/a/..b/c..\",\"environment\":null}}],"
                "\"volumes\":[{\"name\":\"e\",\"kind\":\"empty\"},{\"name\":\"h\",\"kind\":\"host\",\"source\":\"/\"}]}");
        const PodApp *a = pod_manifest_find_app(m, "a");
        ASSERT(a);
        ASSERT_STREQ(a->user, "0");
        ASSERT_STREQ(a->group, "0");
        ASSERT_STREQ(a->working_directory, "/a/..b/c..");
        ASSERT(!a->image_name);
        ASSERT(!a->read_only_rootfs);
        ASSERT_EQ_INT(a->n_environment, 0);
        ASSERT_EQ_INT(a->n_mounts, 0);
        ASSERT_EQ_INT(a->n_isolators, 0);
        ASSERT_EQ_INT(a->n_annotations, 0);
        const PodVolume *e = pod_manifest_find_volume(m, "e");
        ASSERT_EQ_INT(e->mode, 0755);
        ASSERT_EQ_INT(e->uid, 0);
        ASSERT_EQ_INT(e->gid, 0);
        ASSERT(!e->read_only);
        const PodVolume *h = pod_manifest_find_volume(m, "h");
        ASSERT_EQ_INT(h->kind, POD_VOLUME_HOST);
        ASSERT(!h->read_only);

        _cleanup_pod_manifest_ PodManifest *wd = parse_ok(
                "{\"acKind\":\"PodManifest\",\"acVersion\":\"1.0.0\","
                "\"apps\":[{\"name\":\"a\",\"image\":{\"id\":\"" ID1 "\"},\"app\":{\"exec\":[\"x\"]}}]}");
        ASSERT_STREQ(wd->apps[0].working_directory, "/");
}

static void test_names(void) {
        ASSERT(pod_app_name_is_valid("a"));
        ASSERT(pod_app_name_is_valid("web-1"));
        ASSERT(pod_app_name_is_valid("0"));
        ASSERT(!pod_app_name_is_valid(""));
        ASSERT(!pod_app_name_is_valid(NULL));
        ASSERT(!pod_app_name_is_valid("Web"));
        ASSERT(!pod_app_name_is_valid("-web"));
        ASSERT(!pod_app_name_is_valid("web-"));
        ASSERT(!pod_app_name_is_valid("we--b"));
        ASSERT(!pod_app_name_is_valid("we_b"));
        ASSERT(!pod_app_name_is_valid("a.b"));
        char name[80];
        memset(name, 'a', 64);
        name[64] = 0;
        ASSERT(pod_app_name_is_valid(name));
        name[64] = 'a';
        name[65] = 0;
        ASSERT(!pod_app_name_is_valid(name));

        ASSERT(pod_identifier_is_valid("sdpod/name"));
        ASSERT(pod_identifier_is_valid("a.b_c~d/e-f"));
        ASSERT(pod_identifier_is_valid(name)); /* no length limit */
        ASSERT(!pod_identifier_is_valid("sdpod//name"));
        ASSERT(!pod_identifier_is_valid("/name"));
        ASSERT(!pod_identifier_is_valid("name/"));
        ASSERT(!pod_identifier_is_valid("Name"));
        ASSERT(!pod_identifier_is_valid("a b"));
        ASSERT(!pod_identifier_is_valid(""));
        ASSERT(!pod_identifier_is_valid(NULL));
}

/* Building blocks of the invalid manifests below. */
#define HEAD "{\"acKind\":\"PodManifest\",\"acVersion\":\"0.8.11\","
#define IMG "\"image\":{\"id\":\"" ID1 "\"}"
#define APP_WITH(app, rest) "{\"name\":\"a\"," IMG ",\"app\":{\"exec\":[\"/x\"]" app "}" rest "}"
#define ONE_APP(app, rest) HEAD "\"apps\":[" APP_WITH(app, rest) "]"
#define VOLS(v) HEAD "\"apps\":[],\"volumes\":[" v "]}"
#define POD(rest) HEAD "\"apps\":[]," rest "}"

static const struct {
        const char *json;
        int code;
        const char *message;
} bad_cases[] = {
        /* the document */
        { "{", -EBADMSG, WHAT ": not valid JSON" },
        { "{} x", -EBADMSG, WHAT ": not valid JSON: trailing data" },
        { "[]", -EBADMSG, WHAT ": expected a JSON object" },
        { "{\"acVersion\":\"0.8.11\",\"apps\":[]}", -EBADMSG, WHAT ": field \"acKind\": missing" },
        { "{\"acKind\":\"ImageManifest\",\"acVersion\":\"0.8.11\",\"apps\":[]}", -EBADMSG,
          WHAT ": field \"acKind\": expected \"PodManifest\", got \"ImageManifest\"" },
        { "{\"acKind\":1,\"acVersion\":\"0.8.11\",\"apps\":[]}", -EBADMSG, WHAT ": field \"acKind\": expected a string" },
        { "{\"acKind\":\"PodManifest\",\"apps\":[]}", -EBADMSG, WHAT ": field \"acVersion\": missing" },
        { "{\"acKind\":\"PodManifest\",\"acVersion\":\"0.8\",\"apps\":[]}", -EBADMSG,
          WHAT ": field \"acVersion\": \"0.8\" is not a version" },
        { "{\"acKind\":\"PodManifest\",\"acVersion\":\"01.8.11\",\"apps\":[]}", -EBADMSG, "field \"acVersion\"" },
        { "{\"acKind\":\"PodManifest\",\"acVersion\":\"0.8.11-\",\"apps\":[]}", -EBADMSG, "field \"acVersion\"" },
        { HEAD "\"x\":1}", -EBADMSG, WHAT ": field \"apps\": missing" },
        { HEAD "\"apps\":{}}", -EBADMSG, WHAT ": field \"apps\": expected an array" },
        { HEAD "\"apps\":[1]}", -EBADMSG, WHAT ": apps[0]: expected an object" },
        /* apps[] */
        { HEAD "\"apps\":[{" IMG ",\"app\":{\"exec\":[\"/x\"]}}]}", -EBADMSG, WHAT ": apps[0].name: missing" },
        { HEAD "\"apps\":[{\"name\":\"Web\"," IMG ",\"app\":{\"exec\":[\"/x\"]}}]}", -EBADMSG,
          WHAT ": apps[0].name: \"Web\" is not a valid name" },
        { HEAD "\"apps\":[{\"name\":\"a\\n\\u001b[2J\"," IMG ",\"app\":{\"exec\":[\"/x\"]}}]}", -EBADMSG,
          "apps[0].name: \"a\\x0a\\x1b[2J\" is not a valid name" },
        { HEAD "\"apps\":[" APP_WITH("", "") ",{\"name\":\"b\"," IMG ",\"app\":{\"exec\":[\"/x\"]}},"
          APP_WITH("", "") "]}", -EBADMSG, WHAT ": apps[2].name: duplicate app name \"a\"" },
        { HEAD "\"apps\":[{\"name\":\"a\",\"app\":{\"exec\":[\"/x\"]}}]}", -EBADMSG, WHAT ": app a: image: missing" },
        { HEAD "\"apps\":[{\"name\":\"a\",\"image\":\"x\",\"app\":{\"exec\":[\"/x\"]}}]}", -EBADMSG,
          WHAT ": app a: image: expected an object" },
        { HEAD "\"apps\":[{\"name\":\"a\",\"image\":{\"name\":\"x\"},\"app\":{\"exec\":[\"/x\"]}}]}", -EBADMSG,
          WHAT ": app a: image.id: missing" },
        { HEAD "\"apps\":[{\"name\":\"a\",\"image\":{\"id\":\"sha512-0123\"},\"app\":{\"exec\":[\"/x\"]}}]}", -EBADMSG,
          WHAT ": app a: image.id: \"sha512-0123\" is not a sha256 digest" },
        { HEAD "\"apps\":[{\"name\":\"a\",\"image\":{\"id\":\"" ID1 "\",\"name\":7},\"app\":{\"exec\":[\"/x\"]}}]}",
          -EBADMSG, WHAT ": app a: image.name: expected a string" },
        { HEAD "\"apps\":[{\"name\":\"a\"," IMG "}]}", -EBADMSG, WHAT ": app a: app: missing" },
        { HEAD "\"apps\":[{\"name\":\"a\"," IMG ",\"app\":[]}]}", -EBADMSG, WHAT ": app a: app: expected an object" },
        { HEAD "\"apps\":[{\"name\":\"a\"," IMG ",\"app\":{}}]}", -EBADMSG, WHAT ": app a: app.exec: missing" },
        { HEAD "\"apps\":[{\"name\":\"a\"," IMG ",\"app\":{\"exec\":[]}}]}", -EBADMSG,
          WHAT ": app a: app.exec: must not be empty" },
        { HEAD "\"apps\":[{\"name\":\"a\"," IMG ",\"app\":{\"exec\":[\"/x\",\"\"]}}]}", -EBADMSG,
          WHAT ": app a: app.exec[1]: must not be empty" },
        { HEAD "\"apps\":[{\"name\":\"a\"," IMG ",\"app\":{\"exec\":[\"/x\",2]}}]}", -EBADMSG,
          WHAT ": app a: app.exec[1]: expected a string" },
        { HEAD "\"apps\":[{\"name\":\"a\"," IMG ",\"app\":{\"exec\":[\"/x\\u0000y\"]}}]}", -EBADMSG,
          WHAT ": not valid JSON: a NUL (\\u0000) in a string" },
        { ONE_APP(",\"user\":5", "") "}", -EBADMSG, WHAT ": app a: app.user: expected a string" },
        { ONE_APP(",\"group\":\"\"", "") "}", -EBADMSG, WHAT ": app a: app.group: must not be empty" },
        { ONE_APP(",\"workingDirectory\":\"srv\"", "") "}", -EBADMSG,
          WHAT ": app a: app.workingDirectory: \"srv\": must be an absolute path" },
        { ONE_APP(",\"workingDirectory\":\"/srv/../etc\"", "") "}", -EBADMSG,
          WHAT ": app a: app.workingDirectory: \"/srv/../etc\": must not contain a \"..\" component" },
        { ONE_APP(",\"workingDirectory\":\"/..\"", "") "}", -EBADMSG, "app a: app.workingDirectory" },
        { ONE_APP(",\"environment\":{}", "") "}", -EBADMSG, WHAT ": app a: app.environment: expected an array" },
        { ONE_APP(",\"environment\":[\"A=B\"]", "") "}", -EBADMSG,
          WHAT ": app a: app.environment[0]: expected an object" },
        { HEAD "\"apps\":[" APP_WITH("", "") ",{\"name\":\"b\"," IMG ",\"app\":{\"exec\":[\"/x\"],"
          "\"environment\":[{\"name\":\"A=B\",\"value\":\"x\"}]}}]}", -EBADMSG,
          WHAT ": app b: app.environment[0].name: must not contain '='" },
        { ONE_APP(",\"environment\":[{\"name\":\"\",\"value\":\"x\"}]", "") "}", -EBADMSG,
          WHAT ": app a: app.environment[0].name: must not be empty" },
        { ONE_APP(",\"environment\":[{\"value\":\"x\"}]", "") "}", -EBADMSG,
          WHAT ": app a: app.environment[0].name: missing" },
        { ONE_APP(",\"environment\":[{\"name\":\"A\"}]", "") "}", -EBADMSG,
          WHAT ": app a: app.environment[0].value: missing" },
        { ONE_APP(",\"environment\":[{\"name\":\"A\",\"value\":1}]", "") "}", -EBADMSG,
          WHAT ": app a: app.environment[0].value: expected a string" },
        { ONE_APP(",\"environment\":[{\"name\":\"A\",\"value\":\"1\"},{\"name\":\"B\",\"value\":\"\"},"
                  "{\"name\":\"A\",\"value\":\"2\"}]", "") "}", -EBADMSG,
          WHAT ": app a: app.environment[2].name: duplicate variable \"A\"" },
        { ONE_APP(",\"mountPoints\":{}", "") "}", -EBADMSG, WHAT ": app a: app.mountPoints: expected an array" },
        { ONE_APP(",\"eventHandlers\":1", "") "}", -EBADMSG, WHAT ": app a: app.eventHandlers: expected an array" },
        { ONE_APP(",\"ports\":\"80\"", "") "}", -EBADMSG, WHAT ": app a: app.ports: expected an array" },
        { ONE_APP(",\"isolators\":[{\"name\":\"Resource/cpu\",\"value\":1}]", "") "}", -EBADMSG,
          WHAT ": app a: app.isolators[0].name: \"Resource/cpu\" is not a valid identifier" },
        { ONE_APP(",\"isolators\":[{\"name\":\"resource/cpu\"}]", "") "}", -EBADMSG,
          WHAT ": app a: app.isolators[0].value: missing" },
        { ONE_APP("", ",\"readOnlyRootFS\":\"yes\"") "}", -EBADMSG,
          WHAT ": app a: readOnlyRootFS: expected true or false" },
        { ONE_APP("", ",\"mounts\":[{\"volume\":\"data\",\"path\":\"/d\"}]") "}", -EBADMSG,
          WHAT ": app a: mounts[0].volume: no volume \"data\" in the pod" },
        { ONE_APP("", ",\"mounts\":[{\"path\":\"/d\"}]") "}", -EBADMSG, WHAT ": app a: mounts[0].volume: missing" },
        { ONE_APP("", ",\"mounts\":[{\"volume\":\"v\",\"path\":\"/d\"},{\"volume\":\"v\",\"path\":\"d\"}]")
          ",\"volumes\":[{\"name\":\"v\",\"kind\":\"empty\"}]}", -EBADMSG,
          WHAT ": app a: mounts[1].path: \"d\": must be an absolute path" },
        { ONE_APP("", ",\"mounts\":[{\"volume\":\"v\",\"path\":\"/d\"},{\"volume\":\"w\",\"path\":\"/d\"}]")
          ",\"volumes\":[{\"name\":\"v\",\"kind\":\"empty\"},{\"name\":\"w\",\"kind\":\"empty\"}]}", -EBADMSG,
          WHAT ": app a: mounts[1].path: \"/d\" is already the path of mounts[0]" },
        { ONE_APP("", ",\"mounts\":[{\"volume\":\"v\"}]") ",\"volumes\":[{\"name\":\"v\",\"kind\":\"empty\"}]}",
          -EBADMSG, WHAT ": app a: mounts[0].path: missing" },
        { ONE_APP("", ",\"annotations\":[{\"name\":\"a\",\"value\":\"1\"},{\"name\":\"a\",\"value\":\"2\"}]") "}",
          -EBADMSG, WHAT ": app a: annotations[1].name: duplicate annotation \"a\"" },
        { ONE_APP("", ",\"annotations\":[{\"name\":\"a b\",\"value\":\"1\"}]") "}", -EBADMSG,
          WHAT ": app a: annotations[0].name: \"a b\" is not a valid identifier" },
        { ONE_APP("", ",\"annotations\":[{\"name\":\"a\",\"value\":true}]") "}", -EBADMSG,
          WHAT ": app a: annotations[0].value: expected a string" },
        /* volumes[] */
        { HEAD "\"apps\":[],\"volumes\":{}}", -EBADMSG, WHAT ": field \"volumes\": expected an array" },
        { VOLS("{\"name\":\"data\",\"kind\":\"empty\"},{\"name\":\"data\",\"kind\":\"empty\"}"), -EBADMSG,
          WHAT ": volumes[1].name: duplicate volume name \"data\"" },
        { VOLS("{\"name\":\"Data\",\"kind\":\"empty\"}"), -EBADMSG, WHAT ": volumes[0].name: \"Data\" is not a valid name" },
        { VOLS("{\"kind\":\"empty\"}"), -EBADMSG, WHAT ": volumes[0].name: missing" },
        { VOLS("{\"name\":\"d\"}"), -EBADMSG, WHAT ": volumes[0].kind: missing" },
        { VOLS("{\"name\":\"d\",\"kind\":\"tmpfs\"}"), -EBADMSG,
          WHAT ": volumes[0].kind: expected \"host\" or \"empty\", got \"tmpfs\"" },
        { VOLS("{\"name\":\"d\",\"kind\":\"host\"}"), -EBADMSG, WHAT ": volumes[0].source: missing" },
        { VOLS("{\"name\":\"d\",\"kind\":\"host\",\"source\":\"var/d\"}"), -EBADMSG,
          WHAT ": volumes[0].source: \"var/d\": must be an absolute path" },
        { VOLS("{\"name\":\"d\",\"kind\":\"host\",\"source\":\"/var/../etc\"}"), -EBADMSG,
          WHAT ": volumes[0].source: \"/var/../etc\": must not contain a \"..\" component" },
        { VOLS("{\"name\":\"d\",\"kind\":\"host\",\"source\":\"/v\",\"mode\":\"0755\"}"), -EBADMSG,
          WHAT ": volumes[0].mode: only for volumes of kind \"empty\"" },
        { VOLS("{\"name\":\"d\",\"kind\":\"host\",\"source\":\"/v\",\"uid\":0}"), -EBADMSG,
          WHAT ": volumes[0].uid: only for volumes of kind \"empty\"" },
        { VOLS("{\"name\":\"d\",\"kind\":\"empty\",\"source\":\"/v\"}"), -EBADMSG,
          WHAT ": volumes[0].source: not allowed for volumes of kind \"empty\"" },
        { VOLS("{\"name\":\"d\",\"kind\":\"empty\",\"mode\":\"0985\"}"), -EBADMSG,
          WHAT ": volumes[0].mode: \"0985\" is not an octal mode" },
        { VOLS("{\"name\":\"d\",\"kind\":\"empty\",\"mode\":\"00755\"}"), -EBADMSG, WHAT ": volumes[0].mode:" },
        { VOLS("{\"name\":\"d\",\"kind\":\"empty\",\"mode\":\"\"}"), -EBADMSG, WHAT ": volumes[0].mode:" },
        { VOLS("{\"name\":\"d\",\"kind\":\"empty\",\"mode\":493}"), -EBADMSG, WHAT ": volumes[0].mode: expected a string" },
        { VOLS("{\"name\":\"d\",\"kind\":\"empty\",\"uid\":-1}"), -EBADMSG,
          WHAT ": volumes[0].uid: -1 is out of range" },
        { VOLS("{\"name\":\"d\",\"kind\":\"empty\",\"gid\":4294967295}"), -EBADMSG,
          WHAT ": volumes[0].gid: 4294967295 is out of range" },
        { VOLS("{\"name\":\"d\",\"kind\":\"empty\",\"gid\":99999999999999999999}"), -EBADMSG,
          WHAT ": volumes[0].gid:" },
        { VOLS("{\"name\":\"d\",\"kind\":\"empty\",\"uid\":\"0\"}"), -EBADMSG, WHAT ": volumes[0].uid: expected an integer" },
        { VOLS("{\"name\":\"d\",\"kind\":\"empty\",\"uid\":1.5}"), -EBADMSG, WHAT ": volumes[0].uid: expected an integer" },
        { VOLS("{\"name\":\"d\",\"kind\":\"empty\",\"readOnly\":\"true\"}"), -EBADMSG,
          WHAT ": volumes[0].readOnly: expected true or false" },
        { VOLS("{\"name\":\"d\",\"kind\":\"host\",\"source\":\"/v\",\"recursive\":1}"), -EBADMSG,
          WHAT ": volumes[0].recursive: expected true or false" },
        /* pod-level isolators, annotations, ports */
        { POD("\"isolators\":{}"), -EBADMSG, WHAT ": field \"isolators\": expected an array" },
        { POD("\"isolators\":[{\"name\":\"x/\",\"value\":1}]"), -EBADMSG, WHAT ": isolators[0].name:" },
        { POD("\"isolators\":[{\"value\":1}]"), -EBADMSG, WHAT ": isolators[0].name: missing" },
        { POD("\"isolators\":[{\"name\":\"x\"}]"), -EBADMSG, WHAT ": isolators[0].value: missing" },
        { POD("\"annotations\":[{\"name\":\"sdpod/name\",\"value\":\"a\"},{\"name\":\"sdpod/name\",\"value\":\"b\"}]"),
          -EBADMSG, WHAT ": annotations[1].name: duplicate annotation \"sdpod/name\"" },
        { POD("\"annotations\":[{\"name\":\"Sdpod/name\",\"value\":\"a\"}]"), -EBADMSG,
          WHAT ": annotations[0].name: \"Sdpod/name\" is not a valid identifier" },
        { POD("\"annotations\":[{\"name\":\"sdpod/name\"}]"), -EBADMSG, WHAT ": annotations[0].value: missing" },
        { POD("\"annotations\":[{\"name\":\"x\",\"value\":\"a\\u0000b\"}]"), -EBADMSG,
          WHAT ": not valid JSON: a NUL (\\u0000) in a string" },
        { POD("\"ports\":[{\"name\":\"http\",\"hostPort\":0}]"), -EBADMSG, WHAT ": ports[0].hostPort: 0 is out of range" },
        { POD("\"ports\":[{\"name\":\"http\",\"hostPort\":65536}]"), -EBADMSG, WHAT ": ports[0].hostPort: 65536 is out of range" },
        { POD("\"ports\":[{\"name\":\"http\",\"hostPort\":\"80\"}]"), -EBADMSG, WHAT ": ports[0].hostPort: expected an integer" },
        { POD("\"ports\":[{\"name\":\"http\"}]"), -EBADMSG, WHAT ": ports[0].hostPort: missing" },
        { POD("\"ports\":[{\"name\":\"HTTP\",\"hostPort\":80}]"), -EBADMSG, WHAT ": ports[0].name: \"HTTP\" is not a valid name" },
        { POD("\"ports\":[3]"), -EBADMSG, WHAT ": ports[0]: expected an object" },
};

static void test_invalid(void) {
        for (size_t i = 0; i < ELEMENTSOF(bad_cases); i++) {
                PodManifest *m = NULL;
                _cleanup_error_ Error *err = NULL;
                int r = pod_manifest_parse(bad_cases[i].json, strlen(bad_cases[i].json), WHAT, &m, &err);
                fprintf(stderr, "case %zu: %s\n", i, err ? err->msg : "(accepted)");
                ASSERT_EQ_INT(r, bad_cases[i].code);
                ASSERT(!m);
                ASSERT(err);
                ASSERT_EQ_INT(err->code, bad_cases[i].code);
                ASSERT_CONTAINS(err->msg, bad_cases[i].message);
                /* Also without an Error: only the code. */
                ASSERT_EQ_INT(pod_manifest_parse(bad_cases[i].json, strlen(bad_cases[i].json), WHAT, &m, NULL),
                              bad_cases[i].code);
        }

        /* A long hostile value is cut short in the message. */
        char json[600];
        char kind[300];
        memset(kind, 'X', sizeof(kind) - 1);
        kind[sizeof(kind) - 1] = 0;
        snprintf(json, sizeof(json), "{\"acKind\":\"%s\",\"acVersion\":\"0.8.11\",\"apps\":[]}", kind);
        PodManifest *m = NULL;
        _cleanup_error_ Error *err = NULL;
        ASSERT_EQ_INT(pod_manifest_parse(json, strlen(json), NULL, &m, &err), -EBADMSG);
        ASSERT_CONTAINS(err->msg, "pod manifest: field \"acKind\": expected \"PodManifest\", got \"XXXX");
        ASSERT_CONTAINS(err->msg, "XXX\"...");
        ASSERT(strlen(err->msg) < 200);
}

/* A refused change must leave the manifest exactly as it was. */
#define ASSERT_UNCHANGED(m, before)                                       \
        do {                                                              \
                ASSERT_STREQ(pod_manifest_to_text(m), before);            \
        } while (0)

static void test_add_remove_app(void) {
        _cleanup_pod_manifest_ PodManifest *m = parse_ok(full_manifest);
        _cleanup_free_ char *before = strdup(pod_manifest_to_text(m));
        char *exec[] = { "/bin/db", "--port", "5432", NULL };
        char *env[] = { "A=1", "B=x=y", "A=3", "C=", NULL };
        PodMount mounts[] = { { "scratch", "/var/lib/db" } };
        PodNameValue annotations[] = { { "sdpod/role", "db" } };
        PodAppSpec spec = {
                .name = "db",
                .image_name = "postgres",
                .image_id = ID2,
                .exec = exec,
                .environment = env,
                .mounts = mounts,
                .n_mounts = ELEMENTSOF(mounts),
                .annotations = annotations,
                .n_annotations = ELEMENTSOF(annotations),
                .read_only_rootfs = true,
        };
        _cleanup_error_ Error *err = NULL;
        ASSERT_EQ_INT(pod_manifest_add_app(m, &spec, &err), 0);
        ASSERT(!err);
        ASSERT_EQ_INT(m->n_apps, 3);
        check_unknown_kept(pod_manifest_to_text(m));
        const PodApp *db = pod_manifest_find_app(m, "db");
        ASSERT(db == &m->apps[2]);
        ASSERT_STREQ(db->image_name, "postgres");
        ASSERT_STREQ(db->image_id, ID2);
        ASSERT_EQ_INT(strv_length(db->exec), 3);
        ASSERT_STREQ(db->exec[2], "5432");
        ASSERT(db->exec != exec);
        ASSERT_STREQ(db->user, "0");
        ASSERT_STREQ(db->group, "0");
        ASSERT_STREQ(db->working_directory, "/");
        /* A later A replaced the earlier one where it stood. */
        ASSERT_EQ_INT(db->n_environment, 3);
        ASSERT_STREQ(db->environment[0].name, "A");
        ASSERT_STREQ(db->environment[0].value, "3");
        ASSERT_STREQ(db->environment[1].name, "B");
        ASSERT_STREQ(db->environment[1].value, "x=y");
        ASSERT_STREQ(db->environment[2].name, "C");
        ASSERT_STREQ(db->environment[2].value, "");
        ASSERT_EQ_INT(db->n_mounts, 1);
        ASSERT_STREQ(db->mounts[0].volume, "scratch");
        ASSERT_STREQ(db->mounts[0].path, "/var/lib/db");
        ASSERT_EQ_INT(db->n_annotations, 1);
        ASSERT_STREQ(db->annotations[0].value, "db");
        ASSERT(db->read_only_rootfs);
        /* The entry as written: the fields sdpod always writes are there. */
        struct json_object *entry = jget(m->json, "apps[2]");
        ASSERT_STREQ(json_object_get_string(jget(entry, "app.user")), "0");
        ASSERT_STREQ(json_object_get_string(jget(entry, "app.workingDirectory")), "/");
        ASSERT_EQ_INT(json_object_array_length(jget(entry, "app.isolators")), 0);
        ASSERT(json_object_get_boolean(jget(entry, "readOnlyRootFS")));
        /* The older apps are untouched. */
        check_full_apps(m, 3);

        /* The minimal spec: no readOnlyRootFS, mounts or annotations written. */
        char *exec2[] = { "/bin/true", NULL };
        PodAppSpec minimal = { .name = "min", .image_id = ID1, .exec = exec2, .user = "nobody",
                               .group = "nogroup", .working_directory = "/home" };
        ASSERT_EQ_INT(pod_manifest_add_app(m, &minimal, &err), 0);
        entry = jget(m->json, "apps[3]");
        ASSERT(!jget(entry, "readOnlyRootFS"));
        ASSERT(!jget(entry, "mounts"));
        ASSERT(!jget(entry, "annotations"));
        ASSERT(!jget(entry, "image.name"));
        ASSERT_EQ_INT(json_object_array_length(jget(entry, "app.environment")), 0);
        ASSERT_STREQ(m->apps[3].user, "nobody");
        ASSERT_STREQ(m->apps[3].group, "nogroup");
        ASSERT_STREQ(m->apps[3].working_directory, "/home");

        ASSERT_EQ_INT(pod_manifest_remove_app(m, "min", &err), 0);
        ASSERT_EQ_INT(pod_manifest_remove_app(m, "db", &err), 0);
        ASSERT(!err);
        ASSERT(!pod_manifest_find_app(m, "db"));
        ASSERT_STREQ(pod_manifest_to_text(m), before);

        /* Removing the first app keeps the second and everything unknown. */
        ASSERT_EQ_INT(pod_manifest_remove_app(m, "web", &err), 0);
        ASSERT_EQ_INT(m->n_apps, 1);
        ASSERT_STREQ(m->apps[0].name, "sidecar-2");
        ASSERT_STREQ(json_object_get_string(jget(m->json, "x-top.k[1]")), "2.50");
        ASSERT_STREQ(json_object_get_string(jget(m->json, "volumes[0].x-vol")), "kept");
}

static void expect_refused(int r, Error *err, int code, const char *message) {
        if (r != code)
                fprintf(stderr, "got %d: %s\n", r, err && err->msg ? err->msg : "(no message)");
        ASSERT_EQ_INT(r, code);
        ASSERT(err);
        ASSERT_EQ_INT(err->code, code);
        ASSERT_CONTAINS(err->msg, message);
        error_free(err);
}

/* call names "&err"; the result is taken before err is looked at. */
#define REFUSED(call, code, message)                            \
        do {                                                    \
                Error *err = NULL;                              \
                int _r = (call);                                \
                expect_refused(_r, err, code, message);         \
        } while (0)

static void test_refused_changes(void) {
        _cleanup_pod_manifest_ PodManifest *m = parse_ok(full_manifest);
        _cleanup_free_ char *before = strdup(pod_manifest_to_text(m));
        const PodApp *apps = m->apps;
        char *exec[] = { "/x", NULL };

        PodAppSpec dup = { .name = "web", .image_id = ID1, .exec = exec };
        REFUSED(pod_manifest_add_app(m, &dup, &err), -EEXIST, "app named \"web\" exists already");
        ASSERT_UNCHANGED(m, before);

        char *env[] = { "A=1", "NOEQUALS", NULL };
        PodAppSpec noeq = { .name = "n", .image_id = ID1, .exec = exec, .environment = env };
        REFUSED(pod_manifest_add_app(m, &noeq, &err), -EBADMSG,
                       "pod manifest: apps[2].app.environment: \"NOEQUALS\" is not NAME=VALUE");
        ASSERT_UNCHANGED(m, before);

        char *env_empty_name[] = { "=x", NULL };
        PodAppSpec empty_name = { .name = "n", .image_id = ID1, .exec = exec, .environment = env_empty_name };
        REFUSED(pod_manifest_add_app(m, &empty_name, &err), -EBADMSG,
                       "app n: app.environment[0].name: must not be empty");
        ASSERT_UNCHANGED(m, before);

        PodMount mounts[] = { { "scratch", "/ok" }, { "nope", "/x" } };
        PodAppSpec bad_mount = { .name = "n", .image_id = ID1, .exec = exec, .mounts = mounts, .n_mounts = 2 };
        REFUSED(pod_manifest_add_app(m, &bad_mount, &err), -EBADMSG,
                       "pod manifest: app n: mounts[1].volume: no volume \"nope\" in the pod");
        ASSERT_UNCHANGED(m, before);

        PodMount rel[] = { { "data", "relative" } };
        PodAppSpec bad_path = { .name = "n", .image_id = ID1, .exec = exec, .mounts = rel, .n_mounts = 1 };
        REFUSED(pod_manifest_add_app(m, &bad_path, &err), -EBADMSG, "app n: mounts[0].path");
        ASSERT_UNCHANGED(m, before);

        PodAppSpec bad_name = { .name = "N", .image_id = ID1, .exec = exec };
        REFUSED(pod_manifest_add_app(m, &bad_name, &err), -EBADMSG, "apps[2].name: \"N\" is not a valid name");
        ASSERT_UNCHANGED(m, before);

        PodAppSpec no_name = { .image_id = ID1, .exec = exec };
        REFUSED(pod_manifest_add_app(m, &no_name, &err), -EBADMSG, "apps[2].name: missing");
        ASSERT_UNCHANGED(m, before);

        PodAppSpec bad_id = { .name = "n", .image_id = "sha256:abc", .exec = exec };
        REFUSED(pod_manifest_add_app(m, &bad_id, &err), -EBADMSG, "app n: image.id");
        ASSERT_UNCHANGED(m, before);

        PodAppSpec no_exec = { .name = "n", .image_id = ID1 };
        REFUSED(pod_manifest_add_app(m, &no_exec, &err), -EBADMSG, "app n: app.exec: missing");
        ASSERT_UNCHANGED(m, before);

        char *empty_exec[] = { NULL };
        PodAppSpec exec0 = { .name = "n", .image_id = ID1, .exec = empty_exec };
        REFUSED(pod_manifest_add_app(m, &exec0, &err), -EBADMSG, "app n: app.exec: must not be empty");
        ASSERT_UNCHANGED(m, before);

        PodAppSpec bad_wd = { .name = "n", .image_id = ID1, .exec = exec, .working_directory = "/a/../b" };
        REFUSED(pod_manifest_add_app(m, &bad_wd, &err), -EBADMSG, "app n: app.workingDirectory");
        ASSERT_UNCHANGED(m, before);

        PodNameValue bad_ann[] = { { "ok", "1" }, { "ok", "2" } };
        PodAppSpec dup_ann = { .name = "n", .image_id = ID1, .exec = exec, .annotations = bad_ann, .n_annotations = 2 };
        REFUSED(pod_manifest_add_app(m, &dup_ann, &err), -EBADMSG,
                       "app n: annotations[1].name: duplicate annotation \"ok\"");
        ASSERT_UNCHANGED(m, before);

        REFUSED(pod_manifest_remove_app(m, "nope", &err), -ENOENT, "no app named \"nope\"");
        ASSERT_UNCHANGED(m, before);

        PodVolume dup_volume = { .name = "data", .kind = POD_VOLUME_EMPTY, .mode = 0755 };
        REFUSED(pod_manifest_add_volume(m, &dup_volume, &err), -EEXIST,
                       "volume named \"data\" exists already");
        ASSERT_UNCHANGED(m, before);

        PodVolume rel_volume = { .name = "v", .kind = POD_VOLUME_HOST, .source = "srv" };
        REFUSED(pod_manifest_add_volume(m, &rel_volume, &err), -EBADMSG,
                       "pod manifest: volumes[2].source: \"srv\": must be an absolute path");
        ASSERT_UNCHANGED(m, before);

        PodVolume big_mode = { .name = "v", .kind = POD_VOLUME_EMPTY, .mode = 010000 };
        REFUSED(pod_manifest_add_volume(m, &big_mode, &err), -EBADMSG, "volumes[2].mode");
        ASSERT_UNCHANGED(m, before);

        PodVolume bad_volume_name = { .name = "V", .kind = POD_VOLUME_EMPTY };
        REFUSED(pod_manifest_add_volume(m, &bad_volume_name, &err), -EBADMSG, "volumes[2].name");
        ASSERT_UNCHANGED(m, before);

        REFUSED(pod_manifest_set_annotation(m, "Bad Name", "x", &err), -EBADMSG,
                       "pod manifest: annotations[2].name: \"Bad Name\" is not a valid identifier");
        ASSERT_UNCHANGED(m, before);

        /* Nothing was rebuilt: the view still points where it did. */
        ASSERT(m->apps == apps);
        check_full(m);
}

static void test_volumes_and_annotations(void) {
        _cleanup_pod_manifest_ PodManifest *m = NULL;
        _cleanup_error_ Error *err = NULL;
        ASSERT_EQ_INT(pod_manifest_new(&m), 0);

        PodVolume host = { .name = "conf", .kind = POD_VOLUME_HOST, .source = "/etc/app", .read_only = true,
                           .mode = 0700 /* ignored for host volumes */ };
        PodVolume empty = { .name = "cache", .kind = POD_VOLUME_EMPTY, .mode = 01777, .uid = 65534, .gid = 100 };
        ASSERT_EQ_INT(pod_manifest_add_volume(m, &host, &err), 0);
        ASSERT_EQ_INT(pod_manifest_add_volume(m, &empty, &err), 0);
        ASSERT(!err);
        ASSERT_EQ_INT(m->n_volumes, 2);
        const PodVolume *v = pod_manifest_find_volume(m, "conf");
        ASSERT_EQ_INT(v->kind, POD_VOLUME_HOST);
        ASSERT_STREQ(v->source, "/etc/app");
        ASSERT(v->read_only);
        ASSERT(!jget(m->json, "volumes[0].mode"));
        v = pod_manifest_find_volume(m, "cache");
        ASSERT_EQ_INT(v->kind, POD_VOLUME_EMPTY);
        ASSERT_EQ_INT(v->mode, 01777);
        ASSERT_EQ_INT(v->uid, 65534);
        ASSERT_EQ_INT(v->gid, 100);
        ASSERT_STREQ(json_object_get_string(jget(m->json, "volumes[1].mode")), "1777");
        ASSERT(!jget(m->json, "volumes[1].source"));

        PodVolume small_mode = { .name = "s", .kind = POD_VOLUME_EMPTY, .mode = 0 };
        ASSERT_EQ_INT(pod_manifest_add_volume(m, &small_mode, &err), 0);
        ASSERT_STREQ(json_object_get_string(jget(m->json, "volumes[2].mode")), "0000");
        ASSERT_EQ_INT(pod_manifest_find_volume(m, "s")->mode, 0);

        ASSERT_EQ_INT(pod_manifest_set_annotation(m, POD_ANNOTATION_NAME, "first", &err), 0);
        ASSERT_EQ_INT(pod_manifest_set_annotation(m, "sdpod/mutable", "true", &err), 0);
        ASSERT_EQ_INT(pod_manifest_set_annotation(m, POD_ANNOTATION_NAME, "second", &err), 0);
        ASSERT(!err);
        ASSERT_EQ_INT(m->n_annotations, 2);
        ASSERT_STREQ(m->annotations[0].name, POD_ANNOTATION_NAME);
        ASSERT_STREQ(m->annotations[0].value, "second");
        ASSERT_STREQ(pod_manifest_get_annotation(m, "sdpod/mutable"), "true");

        /* An app may now mount the volumes. */
        char *exec[] = { "/x", NULL };
        PodMount mounts[] = { { "conf", "/etc/app" }, { "cache", "/var/cache" } };
        PodAppSpec spec = { .name = "a", .image_id = ID1, .exec = exec, .mounts = mounts, .n_mounts = 2 };
        ASSERT_EQ_INT(pod_manifest_add_app(m, &spec, &err), 0);

        _cleanup_pod_manifest_ PodManifest *again = parse_ok(pod_manifest_to_text(m));
        ASSERT_STREQ(pod_manifest_to_text(again), pod_manifest_to_text(m));
}

/* The unknown fields survive every mutation. */
static void test_unknown_fields_survive(void) {
        _cleanup_pod_manifest_ PodManifest *m = parse_ok(full_manifest);
        _cleanup_error_ Error *err = NULL;
        char *exec[] = { "/x", NULL };
        PodAppSpec spec = { .name = "extra", .image_id = ID1, .exec = exec };
        ASSERT_EQ_INT(pod_manifest_add_app(m, &spec, &err), 0);
        check_unknown_kept(pod_manifest_to_text(m));
        ASSERT_EQ_INT(pod_manifest_set_annotation(m, "example.com/owner", "dev", &err), 0);
        check_unknown_kept(pod_manifest_to_text(m));
        ASSERT_EQ_INT(pod_manifest_remove_app(m, "sidecar-2", &err), 0);
        check_unknown_kept(pod_manifest_to_text(m));
        PodVolume v = { .name = "more", .kind = POD_VOLUME_EMPTY, .mode = 0755 };
        ASSERT_EQ_INT(pod_manifest_add_volume(m, &v, &err), 0);
        check_unknown_kept(pod_manifest_to_text(m));
        ASSERT(!err);
        ASSERT_STREQ(pod_manifest_get_annotation(m, "example.com/owner"), "dev");
        ASSERT_STREQ(m->annotations[1].name, "example.com/owner"); /* in place */
}

static char scratch[] = "/tmp/test-pod-manifest-XXXXXX";

static void remove_scratch(void) {
        (void) rm_rf(scratch);
}

static int compare_strings(const void *a, const void *b) {
        return strcmp(*(char *const *) a, *(char *const *) b);
}

/* The names in directory path below dirfd, sorted, separated by " ". */
static char *list_directory(int dirfd, const char *path) {
        int fd = openat(dirfd, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        ASSERT(fd >= 0);
        DIR *d = fdopendir(fd);
        ASSERT(d);
        char **names = NULL;
        struct dirent *de;
        while ((de = readdir(d)))
                if (!streq(de->d_name, ".") && !streq(de->d_name, ".."))
                        ASSERT_EQ_INT(strv_push(&names, de->d_name), 0);
        closedir(d);
        size_t n = strv_length(names);
        if (n > 0)
                qsort(names, n, sizeof(char *), compare_strings);
        char *s = strdup("");
        ASSERT(s);
        for (size_t i = 0; i < n; i++) {
                char *t = NULL;
                ASSERT(asprintf(&t, "%s%s%s", s, i ? " " : "", names[i]) > 0);
                free(s);
                s = t;
        }
        strv_free(names);
        return s;
}

static void test_write_read(void) {
        ASSERT(mkdtemp(scratch));
        test_cleanup = remove_scratch;
        _cleanup_close_ int dirfd = open(scratch, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        ASSERT(dirfd >= 0);
        ASSERT(mkdirat(dirfd, "pod-dir", 0755) == 0);

        _cleanup_pod_manifest_ PodManifest *m = parse_ok(full_manifest);
        _cleanup_error_ Error *err = NULL;
        ASSERT_EQ_INT(pod_manifest_write_at(dirfd, "pod-dir/pod", m, &err), 0);
        ASSERT(!err);

        struct stat st1, st2;
        ASSERT(fstatat(dirfd, "pod-dir/pod", &st1, 0) == 0);
        ASSERT_EQ_INT(st1.st_mode & 07777, 0644);
        _cleanup_free_ char *content = NULL;
        size_t size = 0;
        ASSERT_EQ_INT(read_file_at(dirfd, "pod-dir/pod", 1 << 20, &content, &size, NULL), 0);
        ASSERT_EQ_INT(size, strlen(pod_manifest_to_text(m)) + 1);
        ASSERT(strncmp(content, pod_manifest_to_text(m), size - 1) == 0);
        ASSERT_EQ_INT(content[size - 1], '\n');

        _cleanup_pod_manifest_ PodManifest *r1 = NULL;
        ASSERT_EQ_INT(pod_manifest_read_at(dirfd, "pod-dir/pod", "pod manifest of X", &r1, &err), 0);
        check_full(r1);
        ASSERT_STREQ(pod_manifest_to_text(r1), pod_manifest_to_text(m));

        /* Change and write again: the file is replaced, not rewritten in place. */
        ASSERT_EQ_INT(pod_manifest_set_annotation(r1, POD_ANNOTATION_NAME, "renamed", &err), 0);
        char *exec[] = { "/x", NULL };
        PodAppSpec spec = { .name = "new", .image_id = ID2, .exec = exec };
        ASSERT_EQ_INT(pod_manifest_add_app(r1, &spec, &err), 0);
        ASSERT_EQ_INT(pod_manifest_remove_app(r1, "web", &err), 0);
        ASSERT_EQ_INT(pod_manifest_write_at(dirfd, "pod-dir/pod", r1, &err), 0);
        ASSERT(fstatat(dirfd, "pod-dir/pod", &st2, 0) == 0);
        ASSERT(st1.st_ino != st2.st_ino);
        ASSERT_EQ_INT(st2.st_mode & 07777, 0644);
        _cleanup_free_ char *names = list_directory(dirfd, "pod-dir");
        ASSERT_STREQ(names, "pod");

        _cleanup_pod_manifest_ PodManifest *r2 = NULL;
        ASSERT_EQ_INT(pod_manifest_read_at(dirfd, "pod-dir/pod", NULL, &r2, &err), 0);
        ASSERT_STREQ(pod_manifest_to_text(r2), pod_manifest_to_text(r1));
        ASSERT_STREQ(pod_manifest_get_annotation(r2, POD_ANNOTATION_NAME), "renamed");
        ASSERT(pod_manifest_find_app(r2, "new"));
        ASSERT(!pod_manifest_find_app(r2, "web"));
        /* Unknown fields, including those of the removed app's neighbours and
         * of the volumes, went through the file. */
        _cleanup_json_ struct json_object *o = doc_of_text(pod_manifest_to_text(r2));
        ASSERT_STREQ(json_object_get_string(jget(o, "x-top.k[1]")), "2.50");
        ASSERT_STREQ(json_object_get_string(jget(o, "volumes[0].x-vol")), "kept");
        ASSERT_STREQ(json_object_get_string(jget(o, "ports[0].hostIP")), "127.0.0.1");

        /* Errors of reading name the file or what the caller calls it. */
        PodManifest *none = NULL;
        error_free(TAKE_PTR(err));
        ASSERT_EQ_INT(pod_manifest_read_at(dirfd, "pod-dir/missing", "pod manifest of X", &none, &err), -ENOENT);
        ASSERT_CONTAINS(err->msg, "pod manifest of X: pod-dir/missing");
        ASSERT(!none);
        error_free(TAKE_PTR(err));

        int fd = openat(dirfd, "pod-dir/broken", O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
        ASSERT(fd >= 0);
        ASSERT(write(fd, "{\"acKind\":\"PodManifest\"}", 24) == 24);
        close(fd);
        ASSERT_EQ_INT(pod_manifest_read_at(dirfd, "pod-dir/broken", NULL, &none, &err), -EBADMSG);
        ASSERT_CONTAINS(err->msg, "pod-dir/broken: field \"acVersion\": missing");
        error_free(TAKE_PTR(err));

        /* 16 MiB is the limit: a sparse file one byte larger is refused. */
        fd = openat(dirfd, "pod-dir/huge", O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
        ASSERT(fd >= 0);
        ASSERT(ftruncate(fd, (16 << 20) + 1) == 0);
        close(fd);
        ASSERT_EQ_INT(pod_manifest_read_at(dirfd, "pod-dir/huge", "pod manifest of X", &none, &err), -EFBIG);
        ASSERT_CONTAINS(err->msg, "pod manifest of X");
        error_free(TAKE_PTR(err));

        /* A write that cannot happen fails naming the file and leaves nothing. */
        ASSERT_EQ_INT(pod_manifest_write_at(dirfd, "no-such-dir/pod", r2, &err), -ENOENT);
        ASSERT_CONTAINS(err->msg, "no-such-dir/pod");
        ASSERT(unlinkat(dirfd, "pod-dir/broken", 0) == 0 && unlinkat(dirfd, "pod-dir/huge", 0) == 0);
        free(names);
        names = list_directory(dirfd, ".");
        ASSERT_STREQ(names, "pod-dir");

        remove_scratch();
        test_cleanup = NULL;
        ASSERT(access(scratch, F_OK) < 0 && errno == ENOENT);
}

/* The example of sdpod-manifest(5), as the page shows it: the first ```
 * block after "# EXAMPLE", which scdoc prints as it is. */
static void test_man_example(void) {
        const char *root = getenv("SDPOD_SOURCE_ROOT");
        ASSERT(root);
        char path[PATH_MAX];
        snprintf(path, sizeof(path), "%s/man/sdpod-manifest.5.scd", root);
        _cleanup_free_ char *page = NULL;
        size_t size;
        ASSERT_EQ_INT(read_file(path, 1 << 20, &page, &size, NULL), 0);
        char *start = strstr(page, "\n# EXAMPLE\n");
        ASSERT(start);
        start = strstr(start, "\n```\n");
        ASSERT(start);
        start += 5;
        char *end = strstr(start, "\n```\n");
        ASSERT(end);
        end[1] = 0;

        _cleanup_pod_manifest_ PodManifest *m = parse_ok(start);
        ASSERT_EQ_INT(m->n_apps, 2);
        const PodApp *web = pod_manifest_find_app(m, "web"), *builder = pod_manifest_find_app(m, "builder");
        ASSERT(web && builder);
        ASSERT_STREQ(web->exec[0], "/bin/httpd");
        ASSERT_EQ_INT(strv_length(web->exec), 6);
        ASSERT_STREQ(web->user, "1000");
        ASSERT(web->read_only_rootfs);
        ASSERT_EQ_INT(web->n_isolators, 1);
        ASSERT_STREQ(web->isolators[0].name, "resource/memory");
        ASSERT_EQ_INT(web->n_mounts, 1);
        ASSERT_STREQ(web->mounts[0].volume, "site");
        ASSERT_STREQ(web->mounts[0].path, "/www");
        ASSERT_STREQ(builder->exec[2], "while :; do date > /out/index.html; sleep 60; done");
        ASSERT_STREQ(builder->working_directory, "/out");
        ASSERT_EQ_INT(builder->n_environment, 0);
        const PodVolume *site = pod_manifest_find_volume(m, "site");
        ASSERT(site);
        ASSERT_EQ_INT(site->kind, POD_VOLUME_HOST);
        ASSERT_STREQ(site->source, "/srv/site");
        ASSERT(!site->read_only);
        ASSERT_EQ_INT(m->n_annotations, 1);
        ASSERT_STREQ(m->annotations[0].name, "sdpod/name");
        ASSERT_STREQ(m->annotations[0].value, "website");
}

int main(void) {
        RUN(test_names);
        RUN(test_full_roundtrip);
        RUN(test_defaults);
        RUN(test_invalid);
        RUN(test_add_remove_app);
        RUN(test_refused_changes);
        RUN(test_volumes_and_annotations);
        RUN(test_unknown_fields_survive);
        RUN(test_write_read);
        RUN(test_man_example);
        return 0;
}
