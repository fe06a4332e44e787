/* SPDX-License-Identifier: Apache-2.0 */
#include <ctype.h>
#include <fcntl.h>
#include <sys/stat.h>

#include "basic/crash-point.h"
#include "basic/digest.h"
#include "basic/fs.h"
#include "basic/json-util.h"
#include "basic/strv.h"
#include "basic/time-util.h"
#include "image/tree.h"
#include "manifest/app-lifecycle.h"
#include "pod/flavor-check.h"
#include "pod/pod-prepare.h"
#include "pod/pod-ref.h"
#include "pod/pod-userns.h"
#include "pod/pod-volume.h"
#include "pod/stage1.h"
#include "unit/app-options.h"
#include "unit/app-unit.h"
#include "unit/rootfs-lookup.h"

/* "docker.io/library/busybox:1.36" -> "busybox": the last path component
 * without its tag, made an ACName. */
static int default_app_name(const char *image_name, char **ret) {
        const char *base = image_name ? strrchr(image_name, '/') : NULL;
        base = base ? base + 1 : strempty(image_name);
        size_t n = strcspn(base, ":@");
        _cleanup_free_ char *name = malloc(n + 1);
        if (!name)
                return -ENOMEM;
        size_t k = 0;
        for (size_t i = 0; i < n; i++) {
                char c = (char) tolower((unsigned char) base[i]);
                if (!isalnum((unsigned char) c) || !isascii(c))
                        c = '-';
                if (c == '-' && (k == 0 || name[k - 1] == '-'))
                        continue;
                name[k++] = c;
        }
        if (k > 64)
                k = 64;
        while (k > 0 && name[k - 1] == '-')
                k--;
        name[k] = 0;
        if (k == 0)
                return (*ret = strdup("app")) ? 0 : -ENOMEM;
        *ret = TAKE_PTR(name);
        return 0;
}

/* entrypoint + command, as docker combines them: --exec replaces the
 * entrypoint (and, as docker's --entrypoint does, the image's command);
 * arguments after "--" replace the command. */
static int compose_exec(const AppArgs *a, const Image *im, char ***ret) {
        _cleanup_strv_free_ char **exec = NULL;
        char *const *entry = im->app.entrypoint, *const *cmd = im->app.cmd;
        char *const exec_only[] = { a->exec, NULL };
        if (a->exec) {
                entry = exec_only;
                cmd = NULL;
        }
        if (a->have_args)
                cmd = a->args;
        for (char *const *i = entry; i && *i; i++)
                if (strv_push(&exec, *i) < 0)
                        return -ENOMEM;
        for (char *const *i = cmd; i && *i; i++)
                if (strv_push(&exec, *i) < 0)
                        return -ENOMEM;
        *ret = TAKE_PTR(exec);
        return 0;
}

/* What the manifest refuses while it is built from a command line came
 * from that command line: a usage error, not corrupt input. */
static int as_usage_error(Error **err, int r) {
        if (r != -EBADMSG && r != -EEXIST)
                return r;
        if (err && *err)
                (*err)->code = -EINVAL;
        return -EINVAL;
}

static int add_volumes(PodManifest *m, const char *data, const PodArgs *args, Error **err) {
        for (size_t i = 0; i < args->n_volumes; i++) {
                const VolumeArg *v = &args->volumes[i];
                _cleanup_free_ char *named_source = NULL;
                if (v->idmap && args->no_private_users)
                        return error_set(err, -EINVAL, "--volume=%s: idmap=true needs the pod's user namespace (not "
                                         "--private-users=no)", v->name);
                if (v->named) {
                        /* sdpod's own directory, made on first use. */
                        int r = named_volume_ensure(data, v->source, &named_source, err);
                        if (r < 0)
                                return error_prefix(err, "--volume=%s", v->name);
                } else if (v->kind == POD_VOLUME_HOST) {
                        if (v->source[0] != '/')
                                return error_set(err, -EINVAL, "volume %s: source \"%s\" is not an absolute path", v->name, v->source);
                        if (access(v->source, F_OK) < 0)
                                return error_sys(err, errno == ENOENT ? -ENOENT : -errno, "volume %s: source %s", v->name, v->source);
                }
                PodVolume pv = { .name = v->name, .kind = v->kind, .source = named_source ?: v->source,
                                 .read_only = v->read_only, .mode = 0755 };
                int r = pod_manifest_add_volume(m, &pv, err);
                if (r < 0)
                        return as_usage_error(err, error_prefix(err, "--volume=%s", v->name));
        }
        return 0;
}

/* The annotation of named, chown=true and idmap=true volumes (pod-volume.h),
 * with the ids of the first app that mounts each (uids[i], gids[i] of app
 * i). */
static int volumes_annotation(PodManifest *m, const PodArgs *args, const uid_t *uids, const gid_t *gids, Error **err) {
        _cleanup_json_ struct json_object *all = json_object_new_object();
        if (!all)
                return error_sys(err, -ENOMEM, "volumes");
        bool any = false;
        for (size_t i = 0; i < args->n_volumes; i++) {
                const VolumeArg *v = &args->volumes[i];
                if (!v->named && !v->chown && !v->idmap)
                        continue;
                uint32_t uid = 0, gid = 0;
                bool found = false;
                for (size_t a = 0; a < m->n_apps && !found; a++)
                        for (size_t k = 0; k < m->apps[a].n_mounts && !found; k++)
                                if (streq(m->apps[a].mounts[k].volume, v->name)) {
                                        uid = uids[a];
                                        gid = gids[a];
                                        found = true;
                                }
                struct json_object *o = json_object_new_object();
                if (!o || json_object_object_add(all, v->name, o) < 0) {
                        json_object_put(o);
                        return error_sys(err, -ENOMEM, "volumes");
                }
                int r = v->named ? json_add_string(o, "named", v->source)
                                 : json_object_object_add(o, v->chown ? "chown" : "idmap", json_object_new_boolean(1));
                if (r >= 0 && !v->idmap)
                        r = json_object_object_add(o, "uid", json_object_new_int64(uid)) ?:
                            json_object_object_add(o, "gid", json_object_new_int64(gid));
                if (r < 0)
                        return error_sys(err, -ENOMEM, "volumes");
                any = true;
        }
        return any ? pod_manifest_set_annotation(m, POD_ANNOTATION_VOLUMES, json_to_text(all, false), err) : 0;
}

/* The volume of a --device: the host's node PATH, bound read-only into the
 * pod (a read-only mount does not stop writes to a device, only changes to
 * its node); an existing volume of that node when the pod has one (the only
 * way for podapp add: a running pod gets no new volume). */
static int device_volume(PodManifest *m, const char *device_arg, bool can_add, char **ret_volume, char **ret_path,
                         Error **err) {
        _cleanup_free_ char *path = NULL, *node = NULL, *access = NULL;
        int r = device_arg_parse(device_arg, &path, &node, &access, err);
        if (r < 0)
                return r;
        for (size_t i = 0; i < m->n_volumes; i++)
                if (m->volumes[i].kind == POD_VOLUME_HOST &&
                    (streq(m->volumes[i].source, node) || streq(m->volumes[i].source, path))) {
                        if (!(*ret_volume = strdup(m->volumes[i].name)))
                                return error_sys(err, -ENOMEM, "--device");
                        *ret_path = TAKE_PTR(path);
                        return 0;
                }
        if (!can_add)
                return error_set(err, -EINVAL, "--device=%s: the pod has no volume of %s, and a running pod gets no new "
                                 "one: make the sandbox with --volume=NAME,kind=host,source=%s", device_arg, node, node);
        /* "dev-" and the rest of the path as an ACName: /dev/net/tun is dev-net-tun. */
        char name[80] = "dev";
        size_t k = 3;
        for (const char *c = path + strlen("/dev"); *c && k < 60; c++) {
                char ch = (char) tolower((unsigned char) *c);
                if (!isalnum((unsigned char) ch))
                        ch = '-';
                if (ch == '-' && name[k - 1] == '-')
                        continue;
                name[k++] = ch;
        }
        while (name[k - 1] == '-')
                k--;
        name[k] = 0;
        for (unsigned n = 2; pod_manifest_find_volume(m, name); n++)
                snprintf(name + k, sizeof(name) - k, "-%u", n);
        PodVolume v = { .name = name, .kind = POD_VOLUME_HOST, .source = node, .read_only = true, .mode = 0755 };
        if ((r = pod_manifest_add_volume(m, &v, err)) < 0)
                return error_prefix(err, "--device=%s", device_arg);
        if (!(*ret_volume = strdup(name)))
                return error_sys(err, -ENOMEM, "--device");
        *ret_path = TAKE_PTR(path);
        return 0;
}

/* The annotation of --bind: a JSON array (POD_ANNOTATION_BINDS). */
static int host_binds_annotation(const AppArgs *a, char **ret) {
        _cleanup_json_ struct json_object *l = json_object_new_array();
        if (!l)
                return -ENOMEM;
        for (size_t i = 0; i < a->n_host_binds; i++) {
                struct json_object *e = json_object_new_object();
                if (!e || json_object_array_add(l, e) < 0) {
                        json_object_put(e);
                        return -ENOMEM;
                }
                if (json_add_string(e, "source", a->host_binds[i].source) < 0 ||
                    json_add_string(e, "destination", a->host_binds[i].destination) < 0 ||
                    (a->host_binds[i].read_only && json_object_object_add(e, "readOnly", json_object_new_boolean(1)) < 0))
                        return -ENOMEM;
        }
        return (*ret = strdup(json_object_to_json_string_ext(l, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE)))
                       ? 0
                       : -ENOMEM;
}

/* An image, or for --rootfs the stand-in that names the directory. */
static int resolve_image(ImageStore *is, const AppArgs *a, Image **ret, Error **err) {
        if (!a->rootfs)
                return image_store_resolve(is, a->image, ret, err);
        Image *im = calloc(1, sizeof(Image));
        if (!im || !(im->id = strdup(POD_IMAGE_ID_NONE)) || !(im->names = calloc(2, sizeof(char *))) ||
            !(im->names[0] = strdup(a->rootfs))) {
                image_free(im);
                return error_sys(err, -ENOMEM, "--rootfs");
        }
        *ret = im;
        return 0;
}

/* The group of an app whose user is given (by --user or the image's User)
 * and whose group is not: the user's primary group in the image's own
 * /etc/passwd, as the OCI image spec and podman take it ("User: redis"
 * runs as redis's group, not 0). Looked up in the image's tree, as the app
 * will see it (rootfs-lookup.h: bounded, never out of the tree). Nothing
 * (*ret empty) when the user has no entry: the generator's check says
 * what is wrong with such a user, and a number without one runs as group 0. */
static int default_group(ImageStore *is, const AppArgs *a, const Image *im, const char *user, char ret[static 16],
                         Error **err) {
        ret[0] = 0;
        if (!a->rootfs && !image_store_has_tree(is, im->id)) {
                /* image gc may have removed it: the record renders it */
                int r = tree_render(is, im, -1, NULL, NULL, err);
                if (r < 0)
                        return error_prefix(err, "image %s", a->image);
        }
        _cleanup_free_ char *rootfs = a->rootfs ? strdup(a->rootfs) : image_tree_rootfs_path(is->root, im->id);
        _cleanup_close_ int fd = rootfs ? open(rootfs, O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
        if (fd < 0)
                return error_sys(err, rootfs ? -errno : -ENOMEM, "image %s: %s", a->image ? a->image : a->rootfs,
                                 strempty(rootfs));
        _cleanup_(rootfs_user_done) RootfsUser u = {};
        Error *e = NULL;
        if (rootfs_lookup_user(fd, user, &u, &e) < 0) {
                error_free(e);
                return 0;
        }
        if (u.found)
                snprintf(ret, 16, "%u", (unsigned) u.gid);
        return 0;
}

/* Whether name is a registry's reference ("localhost:5000/redis:7",
 * "docker.io/library/nginx"): its first component names a host. */
static bool names_registry(const char *name) {
        size_t n = strcspn(name, "/");
        return name[n] == '/' && (memchr(name, '.', n) || memchr(name, ':', n) || (n == 9 && !strncmp(name, "localhost", 9)));
}

/* The image's name the pod shows (sdpod list, status): the one IMAGE gave
 * when it is one of the image's ("redis", taken as redis:latest), else one
 * of a local name (pull --name, import --name) before a registry's
 * reference, else the first. */
static const char *shown_image_name(const Image *im, const char *given) {
        size_t g = given ? strlen(given) : 0;
        for (char **n = im->names; g && n && *n; n++)
                if (strncmp(*n, given, g) == 0 && ((*n)[g] == 0 || streq(*n + g, ":latest")))
                        return *n;
        for (char **n = im->names; n && *n; n++)
                if (!names_registry(*n))
                        return *n;
        return im->names && im->names[0] ? im->names[0] : NULL;
}

static int add_app(PodManifest *m, ImageStore *is, const AppArgs *a, const char *created, bool userns, bool can_add_volumes,
                   Error **err) {
        _cleanup_image_ Image *im = NULL;
        int r = resolve_image(is, a, &im, err);
        if (r < 0)
                return r;

        const char *image_name = a->rootfs ? im->names[0] : shown_image_name(im, a->image);
        _cleanup_free_ char *name = NULL;
        if (a->name) {
                if (!pod_app_name_is_valid(a->name))
                        return error_set(err, -EINVAL, "--app=%s: an app name is lowercase letters, digits and single dashes "
                                         "between them (at most 64)", a->name);
        } else if (default_app_name(image_name, &name) < 0)
                return error_sys(err, -ENOMEM, "image %s", a->image);
        const char *app_name = a->name ? a->name : name;
        if (pod_manifest_find_app(m, app_name))
                return error_set(err, -EINVAL, "two apps would be called \"%s\": name one of them with --app=NAME", app_name);

        _cleanup_strv_free_ char **exec = NULL, **env = NULL;
        if (compose_exec(a, im, &exec) < 0 || !(env = strv_copy(im->app.env ? im->app.env : (char *[]) { NULL })))
                return error_sys(err, -ENOMEM, "image %s", a->image);
        for (char **i = a->environment; i && *i; i++)
                if (strv_push(&env, *i) < 0)
                        return error_sys(err, -ENOMEM, "image %s", a->image);
        if (!exec || !exec[0])
                return a->rootfs ? error_set(err, -EINVAL, "app %s: an app with --rootfs needs a command: --exec=PATH "
                                             "or after \"--\"", app_name)
                                 : error_set(err, -EINVAL, "image %s has no command: give one with --exec=PATH or after \"--\"", a->image);

        /* When it was added (podapp add), and its lifecycle. */
        PodNameValue annotations[a->n_lifecycle + 7];
        size_t n_annotations = 0;
        _cleanup_free_ char *binds = NULL;
        if (a->rootfs)
                annotations[n_annotations++] = (PodNameValue) { POD_ANNOTATION_ROOTFS, a->rootfs };
        if (a->stdin_path)
                annotations[n_annotations++] = (PodNameValue) { POD_ANNOTATION_STDIN, a->stdin_path };
        if (a->stdout_path)
                annotations[n_annotations++] = (PodNameValue) { POD_ANNOTATION_STDOUT, a->stdout_path };
        if (a->stderr_path)
                annotations[n_annotations++] = (PodNameValue) { POD_ANNOTATION_STDERR, a->stderr_path };
        if (a->n_host_binds > 0) {
                if (host_binds_annotation(a, &binds) < 0)
                        return error_sys(err, -ENOMEM, "app %s", app_name);
                annotations[n_annotations++] = (PodNameValue) { POD_ANNOTATION_BINDS, binds };
        }
        if (created)
                annotations[n_annotations++] = (PodNameValue) { POD_ANNOTATION_CREATED, created };
        if (a->tty)
                annotations[n_annotations++] = (PodNameValue) { POD_ANNOTATION_TTY, "true" };
        for (size_t i = 0; i < a->n_lifecycle; i++)
                annotations[n_annotations++] = a->lifecycle[i];
        _cleanup_json_ struct json_object *isolators = NULL;
        if ((r = app_options_isolators(a, app_name, !userns, &isolators, err)) < 0)
                return error_prefix(err, "app %s", app_name);
        size_t n_devices = strv_length(a->devices);
        _cleanup_strv_free_ char **device_volumes = calloc(n_devices + 1, sizeof(char *)),
                                 **device_paths = calloc(n_devices + 1, sizeof(char *));
        if (!device_volumes || !device_paths)
                return error_sys(err, -ENOMEM, "app %s", app_name);
        for (size_t i = 0; i < n_devices; i++)
                if ((r = device_volume(m, a->devices[i], can_add_volumes, &device_volumes[i], &device_paths[i], err)) < 0)
                        return as_usage_error(err, error_prefix(err, "app %s", app_name));
        size_t n_gids = strv_length(a->supplementary_groups);
        uint32_t gids[n_gids + 1];
        for (size_t i = 0; i < n_gids; i++)
                if ((r = parse_id(a->supplementary_groups[i], &gids[i])) < 0)
                        return error_set(err, -EINVAL, "--supplementary-groups: %s is not a group id", a->supplementary_groups[i]);
        PodMount mounts[a->n_mounts + n_devices + 1];
        for (size_t i = 0; i < a->n_mounts; i++)
                mounts[i] = (PodMount) { .volume = a->mounts[i].volume, .path = a->mounts[i].target };
        for (size_t i = 0; i < n_devices; i++)
                mounts[a->n_mounts + i] = (PodMount) { .volume = device_volumes[i], .path = device_paths[i] };
        const char *user = a->user ? a->user : im->app.user, *group = a->group ? a->group : im->app.group;
        char primary[16];
        if (user && !group) {
                if ((r = default_group(is, a, im, user, primary, err)) < 0)
                        return r;
                group = *primary ? primary : NULL;
        }
        PodAppSpec spec = {
                .name = app_name,
                .image_name = image_name,
                .image_id = im->id,
                .exec = exec,
                .user = user,
                .group = group,
                .working_directory = a->working_dir ? a->working_dir : im->app.working_dir,
                .environment = env,
                .mounts = mounts,
                .n_mounts = a->n_mounts + n_devices,
                .event_handlers = a->hooks,
                .n_event_handlers = a->n_hooks,
                .annotations = n_annotations ? annotations : NULL,
                .n_annotations = n_annotations,
                .read_only_rootfs = a->read_only,
                .isolators = isolators,
                .supplementary_gids = gids,
                .n_supplementary_gids = n_gids,
        };
        r = pod_manifest_add_app(m, &spec, err);
        return r < 0 ? as_usage_error(err, error_prefix(err, "app %s (image %s)", app_name, a->image)) : 0;
}

/* Makes sure the image's tree exists: image gc removes the trees of removed
 * images that no pod names yet, and the record is the recipe to render it
 * again. */
static int ensure_tree(ImageStore *is, const PodApp *app, Error **err) {
        if (app->rootfs || image_store_has_tree(is, app->image_id))
                return 0;
        _cleanup_image_ Image *im = NULL;
        int r = image_store_load(is, digest_hex(app->image_id), &im, err);
        if (r < 0 || (r = tree_render(is, im, -1, NULL, NULL, err)) < 0)
                return error_prefix(err, "app %s", app->name);
        return 0;
}

/* What the generator will check in the pod (the program, the user and
 * group, the isolators), checked now against the image's tree, so that an
 * app that cannot start is refused before a pod exists. In a pod with a
 * user namespace, an app's ids must be of it. */
static int check_app(ImageStore *is, const PodManifest *m, size_t i, bool userns, uid_t *ret_uid, gid_t *ret_gid,
                     Error **err) {
        const PodApp *app = &m->apps[i];
        int r = ensure_tree(is, app, err);
        if (r < 0)
                return r;
        /* A --rootfs directory is the operator's (trusted), its content the
         * app's (not): the lookups below resolve in it as the root. */
        _cleanup_free_ char *rootfs = app->rootfs ? strdup(app->rootfs) : image_tree_rootfs_path(is->root, app->image_id);
        _cleanup_close_ int fd = rootfs ? open(rootfs, O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
        if (fd < 0)
                return error_sys(err, rootfs ? -errno : -ENOMEM, "app %s: %s", app->name, strempty(rootfs));
        _cleanup_app_unit_ AppUnit *u = NULL;
        r = app_unit_resolve(m, i, fd, &u, err);
        if (r >= 0 && userns && (u->uid >= POD_USERNS_SIZE || u->gid >= POD_USERNS_SIZE))
                r = error_set(err, -EINVAL, "it runs as user %u, group %u: outside the pod's user namespace (ids 0 to "
                              "%u; or prepare it with --private-users=no)",
                              (unsigned) u->uid, (unsigned) u->gid, POD_USERNS_SIZE - 1);
        if (r < 0) {
                /* A request that cannot run: the command line's fault. */
                if (err && *err)
                        (*err)->code = -EINVAL;
                return error_prefix(err, "app %s", app->name);
        }
        if (ret_uid)
                *ret_uid = u->uid;
        if (ret_gid)
                *ret_gid = u->gid;
        return 0;
}

int pod_check_prepared(const PodStore *ps, ImageStore *is, Pod *p, Error **err) {
        _cleanup_pod_manifest_ PodManifest *m = NULL;
        int r = pod_manifest_read_at(p->fd, "pod", "pod manifest", &m, err);
        const char *private_users = r >= 0 ? pod_manifest_get_annotation(m, POD_ANNOTATION_PRIVATE_USERS) : NULL;
        for (size_t i = 0; r >= 0 && i < m->n_apps; i++)
                r = check_app(is, m, i, !streq_ptr(private_users, "no"), NULL, NULL, err);
        if (r < 0) {
                /* Not the command line's fault here: the manifest's. */
                if (r == -EINVAL && err && *err)
                        (*err)->code = -EBADMSG;
                _cleanup_free_ char *path = pod_path(ps, p);
                return error_prefix(err, "pod %s is left prepared: %s/pod", p->uuid, strempty(path));
        }
        return 0;
}

int pod_manifest_from_args(ImageStore *is, const PodArgs *args, PodManifest **ret, Error **err) {
        _cleanup_pod_manifest_ PodManifest *m = NULL;
        int r = pod_manifest_new(&m);
        if (r < 0)
                return error_sys(err, r, "pod manifest");
        if (args->name) {
                if (!pod_name_is_valid(args->name))
                        return error_set(err, -EINVAL, "--name=%s: a pod name is 1 to 64 letters, digits, '.' and '-', "
                                         "not starting with '-' or '.'", args->name);
                if ((r = pod_manifest_set_annotation(m, POD_ANNOTATION_NAME, args->name, err)) < 0)
                        return r;
        }
        char created[32];
        format_timestamp(now_usec(), created);
        if ((r = pod_manifest_set_annotation(m, POD_ANNOTATION_CREATED, created, err)) < 0)
                return r;
        if ((r = add_volumes(m, is->root, args, err)) < 0 || (r = pod_net_args_apply(&args->net, m, err)) < 0)
                return r;
        for (size_t i = 0; i < args->n_lifecycle; i++)
                if ((r = pod_manifest_set_annotation(m, args->lifecycle[i].name, args->lifecycle[i].value, err)) < 0)
                        return r;
        if ((args->mutable_pod && (r = pod_manifest_set_annotation(m, POD_ANNOTATION_MUTABLE, "true", err)) < 0) ||
            (args->keep_on_app_failure &&
             (r = pod_manifest_set_annotation(m, POD_ANNOTATION_KEEP_ON_APP_FAILURE, "true", err)) < 0))
                return r;
        for (size_t i = 0; i < args->n_apps; i++) {
                const AppArgs *a = &args->apps[i];
                /* What is bound into a running pod by podapp add. */
                if (a->rootfs || a->stdin_path || a->stdout_path || a->stderr_path || a->n_host_binds > 0)
                        return error_set(err, -EINVAL, "--rootfs, --stdin, --stdout, --stderr and --bind are for 'podapp add'");
                if ((r = add_app(m, is, a, NULL, !args->no_private_users, true, err)) < 0)
                        return r;
        }
        uid_t uids[m->n_apps + 1];
        gid_t gids[m->n_apps + 1];
        for (size_t i = 0; i < m->n_apps; i++)
                if ((r = check_app(is, m, i, !args->no_private_users, &uids[i], &gids[i], err)) < 0)
                        return r;
        if ((r = volumes_annotation(m, args, uids, gids, err)) < 0)
                return r;
        /* --after and the like name apps of this pod (app-lifecycle.h). */
        if ((r = app_order_check(m->apps, m->n_apps, true, err)) < 0)
                return r;
        /* The range itself is claimed once the pod exists (pod_prepare). */
        if (args->no_private_users && (r = pod_manifest_set_annotation(m, POD_ANNOTATION_PRIVATE_USERS, "no", err)) < 0)
                return r;
        *ret = TAKE_PTR(m);
        return 0;
}

int pod_manifest_add_app_from_args(ImageStore *is, PodManifest *m, const AppArgs *a, const char *created, Error **err) {
        PodUserns u;
        int r = pod_userns_from_manifest(m, &u, err);
        if (r < 0 || (r = add_app(m, is, a, created, u.enabled, false, err)) < 0)
                return r;
        /* The new app's --after and the like name apps the pod has. */
        if ((r = check_app(is, m, m->n_apps - 1, u.enabled, NULL, NULL, err)) >= 0 &&
            (r = app_order_check_names(m->apps, m->n_apps, m->n_apps - 1, err)) >= 0)
                return r;
        /* Refused: the manifest must be as it was. */
        _cleanup_error_ Error *ignored = NULL;
        (void) pod_manifest_remove_app(m, m->apps[m->n_apps - 1].name, &ignored);
        return r;
}

int pod_create_app_dirs(int pod_fd, const char *app, uid_t root_uid, Error **err) {
        static const char *const dirs[] = { "upper", "work", "lower" };
        for (size_t i = 0; i < ELEMENTSOF(dirs); i++) {
                char path[128];
                snprintf(path, sizeof(path), POD_APP_DIR "/%s/%s", app, dirs[i]);
                /* The upper layer is the root of the app's tree: its owner
                 * and mode are the root directory's, the pod's root's. */
                uid_t owner = streq(dirs[i], "upper") ? root_uid : 0;
                int r = mkdir_owned_beneath(pod_fd, path, 0755, owner, owner);
                if (r < 0)
                        return error_sys(err, r, "app %s: cannot create %s", app, path);
        }
        return 0;
}

int pod_render_app(int pod_fd, ImageStore *is, const PodApp *app, uid_t root_uid, Error **err) {
        int r = ensure_tree(is, app, err);
        return r < 0 ? r : pod_create_app_dirs(pod_fd, app->name, root_uid, err);
}

int pod_prepare(PodStore *ps, ImageStore *is, const PodArgs *args, PodDir target, Pod **ret, Error **err) {
        _cleanup_pod_manifest_ PodManifest *m = NULL;
        int r = pod_manifest_from_args(is, args, &m, err);
        if (r < 0)
                return r;
        /* The stage1 image (--stage1), and what its flavor cannot run,
         * refused before anything is made. */
        _cleanup_free_ char *stage1 = NULL;
        char flavor[32];
        if ((r = stage1_image_of_arg(args->stage1, &stage1, err)) < 0 ||
            (r = stage1_flavor_check(stage1_image_flavor(stage1, flavor), m, err)) < 0)
                return r;

        /* A name names one live pod: checked under the name lock, which is
         * held until the manifest that carries the name is written. */
        _cleanup_close_ int name_lock = -1;
        if (args->name && (r = pod_name_claim(ps, args->name, &name_lock, err)) < 0)
                return r;
        _cleanup_pod_ Pod *p = NULL;
        if ((r = pod_create(ps, &p, err)) < 0)
                return r;
        PodUserns u = {};
        crash_point(CRASH_PREPARE_CREATED);
        if (!args->no_private_users && (r = pod_userns_claim(ps->root, p->uuid, args->name, m, err)) < 0)
                return error_prefix(err, "pod %s", p->uuid);
        crash_point(CRASH_PREPARE_CLAIMED);
        if ((r = pod_userns_from_manifest(m, &u, err)) < 0 || (r = pod_manifest_write_at(p->fd, "pod", m, err)) < 0)
                return error_prefix(err, "pod %s", p->uuid);
        if (args->name && (r = pod_name_record(ps, args->name, p->uuid, err)) < 0)
                return error_prefix(err, "pod %s", p->uuid);
        crash_point(CRASH_PREPARE_MANIFEST);
        closep(&name_lock);
        name_lock = -1;
        if ((r = stage1_render(p->fd, stage1, pod_userns_root(&u), err)) < 0)
                return error_prefix(err, "pod %s", p->uuid);
        crash_point(CRASH_PREPARE_STAGE1);
        for (size_t i = 0; i < m->n_apps; i++)
                if ((r = pod_render_app(p->fd, is, &m->apps[i], pod_userns_root(&u), err)) < 0)
                        return error_prefix(err, "pod %s", p->uuid);
        crash_point(CRASH_PREPARE_APPS);
        if ((r = pod_finish_prepare(ps, p, target, err)) < 0)
                return r;
        *ret = TAKE_PTR(p);
        return 0;
}
