/* SPDX-License-Identifier: Apache-2.0 */
#include <ctype.h>

#include "basic/digest.h"
#include "basic/json-util.h"
#include "basic/strv.h"
#include "basic/time-util.h"
#include "image/image.h"

static const char *const format_names[] = {
        [IMAGE_FORMAT_OCI] = "oci",
        [IMAGE_FORMAT_DOCKER_ARCHIVE] = "docker-archive",
        [IMAGE_FORMAT_ACI] = "aci",
};

const char *image_format_to_string(ImageFormat f) {
        return (size_t) f < ELEMENTSOF(format_names) ? format_names[f] : NULL;
}

int image_format_from_string(const char *s) {
        for (size_t i = 0; i < ELEMENTSOF(format_names); i++)
                if (streq(format_names[i], s))
                        return (int) i;
        return -EINVAL;
}

void image_app_done(ImageApp *app) {
        strv_free(app->exec);
        strv_free(app->entrypoint);
        strv_free(app->cmd);
        strv_free(app->env);
        free(app->working_dir);
        free(app->user);
        free(app->group);
        strv_free(app->ports);
        *app = (ImageApp) {};
}

void image_free(Image *image) {
        if (!image)
                return;
        free(image->id);
        strv_free(image->names);
        free(image->manifest);
        free(image->config);
        free(image->os);
        free(image->architecture);
        for (size_t i = 0; i < image->n_layers; i++) {
                free(image->layers[i].digest);
                free(image->layers[i].media_type);
        }
        free(image->layers);
        image_app_done(&image->app);
        free(image);
}

static struct json_object *image_app_to_json(const ImageApp *app) {
        struct json_object *o = json_object_new_object();
        if (!o)
                return NULL;
        int r = 0;
        if (app->exec)
                r = r ?: json_add_strv(o, "exec", app->exec);
        if (app->entrypoint)
                r = r ?: json_add_strv(o, "entrypoint", app->entrypoint);
        if (app->cmd)
                r = r ?: json_add_strv(o, "cmd", app->cmd);
        r = r ?: json_add_strv(o, "env", app->env);
        r = r ?: json_add_string(o, "working_dir", app->working_dir);
        r = r ?: json_add_string(o, "user", app->user);
        r = r ?: json_add_string(o, "group", app->group);
        r = r ?: json_add_strv(o, "ports", app->ports);
        if (r < 0) {
                json_object_put(o);
                return NULL;
        }
        return o;
}

struct json_object *image_to_json(const Image *image) {
        _cleanup_json_ struct json_object *o = json_object_new_object();
        _cleanup_json_ struct json_object *layers = json_object_new_array();
        if (!o || !layers)
                return NULL;
        char ts[32];
        format_timestamp(image->imported_at, ts);
        int r = 0;
        r = r ?: json_add_string(o, "id", image->id);
        r = r ?: json_add_string(o, "format", image_format_to_string(image->format));
        r = r ?: json_add_strv(o, "names", image->names);
        r = r ?: json_object_object_add(o, "size", json_object_new_int64((int64_t) image->size));
        r = r ?: json_add_string(o, "imported_at", ts);
        r = r ?: json_add_string(o, "manifest", image->manifest);
        r = r ?: json_add_string(o, "config", image->config);
        r = r ?: json_add_string(o, "os", image->os);
        r = r ?: json_add_string(o, "architecture", image->architecture);
        for (size_t i = 0; r == 0 && i < image->n_layers; i++) {
                struct json_object *l = json_object_new_object();
                if (!l || json_object_array_add(layers, l) < 0) {
                        json_object_put(l);
                        return NULL;
                }
                r = r ?: json_add_string(l, "digest", image->layers[i].digest);
                r = r ?: json_add_string(l, "media_type", image->layers[i].media_type);
                r = r ?: json_object_object_add(l, "size", json_object_new_int64((int64_t) image->layers[i].size));
        }
        r = r ?: json_object_object_add(o, "layers", TAKE_PTR(layers));
        struct json_object *app = image_app_to_json(&image->app);
        r = r ?: (app ? json_object_object_add(o, "app", app) : -ENOMEM);
        return r < 0 ? NULL : TAKE_PTR(o);
}

static int dup_optional(const char *s, char **ret) {
        if (!s) {
                *ret = NULL;
                return 0;
        }
        return (*ret = strdup(s)) ? 0 : -ENOMEM;
}

int image_from_json(struct json_object *o, const char *what, Image **ret, Error **err) {
        _cleanup_image_ Image *image = calloc(1, sizeof(Image));
        if (!image)
                return error_sys(err, -ENOMEM, "%s", what);

        const char *id, *format, *imported_at, *manifest, *config, *os, *arch;
        int64_t size = 0;
        struct json_object *layers, *app;
        int r = 0;
        if ((r = json_get_string(o, "id", true, &id, what, err)) < 0 ||
            (r = json_get_string(o, "format", true, &format, what, err)) < 0 ||
            (r = json_get_strv(o, "names", false, &image->names, what, err)) < 0 ||
            (r = json_get_int64(o, "size", true, &size, what, err)) < 0 ||
            (r = json_get_string(o, "imported_at", true, &imported_at, what, err)) < 0 ||
            (r = json_get_string(o, "manifest", true, &manifest, what, err)) < 0 ||
            (r = json_get_string(o, "config", false, &config, what, err)) < 0 ||
            (r = json_get_string(o, "os", false, &os, what, err)) < 0 ||
            (r = json_get_string(o, "architecture", false, &arch, what, err)) < 0 ||
            (r = json_get_array(o, "layers", true, &layers, what, err)) < 0 ||
            (r = json_get_object(o, "app", false, &app, what, err)) < 0)
                return r;
        if (!digest_is_valid(id))
                return error_set(err, -EBADMSG, "%s: field \"id\": not a sha256 digest", what);
        int f = image_format_from_string(format);
        if (f < 0)
                return error_set(err, -EBADMSG, "%s: field \"format\": unknown format \"%s\"", what, format);
        image->format = (ImageFormat) f;
        if (parse_timestamp(imported_at, &image->imported_at) < 0)
                return error_set(err, -EBADMSG, "%s: field \"imported_at\": not a timestamp", what);
        image->size = (uint64_t) size;
        if (dup_optional(id, &image->id) < 0 || dup_optional(manifest, &image->manifest) < 0 ||
            dup_optional(config, &image->config) < 0 || dup_optional(os, &image->os) < 0 ||
            dup_optional(arch, &image->architecture) < 0)
                return error_sys(err, -ENOMEM, "%s", what);

        size_t n = json_object_array_length(layers);
        image->layers = calloc(n ? n : 1, sizeof(ImageLayer));
        if (!image->layers)
                return error_sys(err, -ENOMEM, "%s", what);
        for (size_t i = 0; i < n; i++) {
                struct json_object *l = json_object_array_get_idx(layers, i);
                const char *digest, *media_type;
                int64_t lsize = 0;
                if ((r = json_get_string(l, "digest", true, &digest, what, err)) < 0 ||
                    (r = json_get_string(l, "media_type", false, &media_type, what, err)) < 0 ||
                    (r = json_get_int64(l, "size", false, &lsize, what, err)) < 0)
                        return r;
                if (!digest_is_valid(digest))
                        return error_set(err, -EBADMSG, "%s: field \"layers[%zu].digest\": not a sha256 digest", what, i);
                ImageLayer *layer = &image->layers[image->n_layers++];
                layer->size = (uint64_t) lsize;
                if (dup_optional(digest, &layer->digest) < 0 || dup_optional(media_type, &layer->media_type) < 0)
                        return error_sys(err, -ENOMEM, "%s", what);
        }

        if (app) {
                ImageApp *a = &image->app;
                const char *wd, *user, *group;
                if ((r = json_get_strv(app, "exec", false, &a->exec, what, err)) < 0 ||
                    (r = json_get_strv(app, "entrypoint", false, &a->entrypoint, what, err)) < 0 ||
                    (r = json_get_strv(app, "cmd", false, &a->cmd, what, err)) < 0 ||
                    (r = json_get_strv(app, "env", false, &a->env, what, err)) < 0 ||
                    (r = json_get_string(app, "working_dir", false, &wd, what, err)) < 0 ||
                    (r = json_get_string(app, "user", false, &user, what, err)) < 0 ||
                    (r = json_get_string(app, "group", false, &group, what, err)) < 0 ||
                    (r = json_get_strv(app, "ports", false, &a->ports, what, err)) < 0)
                        return r;
                if (dup_optional(wd, &a->working_dir) < 0 || dup_optional(user, &a->user) < 0 ||
                    dup_optional(group, &a->group) < 0)
                        return error_sys(err, -ENOMEM, "%s", what);
        }
        *ret = TAKE_PTR(image);
        return 0;
}

/* exec = entrypoint followed by cmd, as docker and OCI runtimes combine them. */
static int image_app_compute_exec(ImageApp *app) {
        char **exec = NULL;
        for (char **i = app->entrypoint; i && *i; i++)
                if (strv_push(&exec, *i) < 0)
                        goto oom;
        for (char **i = app->cmd; i && *i; i++)
                if (strv_push(&exec, *i) < 0)
                        goto oom;
        app->exec = exec;
        return 0;
oom:
        strv_free(exec);
        return -ENOMEM;
}

int image_app_from_oci_config(struct json_object *root, const char *what, ImageApp *ret, Error **err) {
        ImageApp app = {};
        struct json_object *config = NULL, *ports = NULL;
        const char *wd = NULL, *user = NULL;
        int r;
        if ((r = json_get_object(root, "config", false, &config, what, err)) < 0)
                return r;
        if (!config) {
                *ret = app;
                return 0;
        }
        if ((r = json_get_strv(config, "Entrypoint", false, &app.entrypoint, what, err)) < 0 ||
            (r = json_get_strv(config, "Cmd", false, &app.cmd, what, err)) < 0 ||
            (r = json_get_strv(config, "Env", false, &app.env, what, err)) < 0 ||
            (r = json_get_string(config, "WorkingDir", false, &wd, what, err)) < 0 ||
            (r = json_get_string(config, "User", false, &user, what, err)) < 0 ||
            (r = json_get_object(config, "ExposedPorts", false, &ports, what, err)) < 0)
                goto fail;
        if (wd && *wd && !(app.working_dir = strdup(wd)))
                goto oom;
        if (user && *user) {
                /* "user[:group]", names or numbers */
                const char *colon = strchr(user, ':');
                if (!(app.user = colon ? strndup(user, (size_t) (colon - user)) : strdup(user)))
                        goto oom;
                if (colon && !(app.group = strdup(colon + 1)))
                        goto oom;
        }
        if (ports) {
                json_object_object_foreach(ports, key, value) {
                        (void) value;
                        if (strv_push(&app.ports, key) < 0)
                                goto oom;
                }
        }
        if (image_app_compute_exec(&app) < 0)
                goto oom;
        *ret = app;
        return 0;
oom:
        r = error_sys(err, -ENOMEM, "%s", what);
fail:
        image_app_done(&app);
        return r;
}

int image_app_from_aci_manifest(struct json_object *manifest, const char *what, ImageApp *ret, Error **err) {
        ImageApp app = {};
        struct json_object *a = NULL, *env = NULL, *ports = NULL;
        const char *wd = NULL, *user = NULL, *group = NULL;
        int r;
        if ((r = json_get_object(manifest, "app", false, &a, what, err)) < 0)
                return r;
        if (!a) {
                *ret = app;
                return 0;
        }
        if ((r = json_get_strv(a, "exec", false, &app.entrypoint, what, err)) < 0 ||
            (r = json_get_string(a, "workingDirectory", false, &wd, what, err)) < 0 ||
            (r = json_get_string(a, "user", false, &user, what, err)) < 0 ||
            (r = json_get_string(a, "group", false, &group, what, err)) < 0 ||
            (r = json_get_array(a, "environment", false, &env, what, err)) < 0 ||
            (r = json_get_array(a, "ports", false, &ports, what, err)) < 0)
                goto fail;
        if ((wd && !(app.working_dir = strdup(wd))) || (user && !(app.user = strdup(user))) ||
            (group && !(app.group = strdup(group))))
                goto oom;
        for (size_t i = 0; env && i < json_object_array_length(env); i++) {
                const char *name, *value;
                struct json_object *e = json_object_array_get_idx(env, i);
                if ((r = json_get_string(e, "name", true, &name, what, err)) < 0 ||
                    (r = json_get_string(e, "value", true, &value, what, err)) < 0)
                        goto fail;
                _cleanup_free_ char *kv = NULL;
                if (asprintf(&kv, "%s=%s", name, value) < 0 || strv_push(&app.env, kv) < 0)
                        goto oom;
        }
        for (size_t i = 0; ports && i < json_object_array_length(ports); i++) {
                const char *protocol;
                int64_t port;
                struct json_object *p = json_object_array_get_idx(ports, i);
                if ((r = json_get_int64(p, "port", true, &port, what, err)) < 0 ||
                    (r = json_get_string(p, "protocol", true, &protocol, what, err)) < 0)
                        goto fail;
                _cleanup_free_ char *s = NULL;
                if (asprintf(&s, "%lld/%s", (long long) port, protocol) < 0 || strv_push(&app.ports, s) < 0)
                        goto oom;
        }
        if (image_app_compute_exec(&app) < 0)
                goto oom;
        *ret = app;
        return 0;
oom:
        r = error_sys(err, -ENOMEM, "%s", what);
fail:
        image_app_done(&app);
        return r;
}

int image_name_normalize(const char *name, char **ret) {
        if (!name || !*name || strlen(name) > 255)
                return -EINVAL;
        for (const char *p = name; *p; p++)
                if (isspace((unsigned char) *p) || iscntrl((unsigned char) *p))
                        return -EINVAL;
        /* docker's default registry is implied, as the docker CLI shows names;
         * strip it until none is left, so normalising twice changes nothing. */
        for (const char *s; (s = startswith(name, "docker.io/library/") ?: startswith(name, "docker.io/"));)
                name = s;
        /* The tag follows the last ':' after the last '/' (a registry host
         * may carry a port: "host:5000/name"). A digest reference is kept. */
        const char *slash = strrchr(name, '/');
        const char *colon = strrchr(slash ? slash : name, ':');
        if (!*name || name[0] == ':' || name[0] == '/' || strstr(name, "//") || (colon && !colon[1]) ||
            (slash && !slash[1]))
                return -EINVAL;
        if (colon || strchr(name, '@'))
                return (*ret = strdup(name)) ? 0 : -ENOMEM;
        return asprintf(ret, "%s:latest", name) < 0 ? -ENOMEM : 0;
}
