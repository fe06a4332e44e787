/* SPDX-License-Identifier: Apache-2.0 */
#include <ctype.h>

#include "basic/fs.h"
#include "basic/json-util.h"
#include "basic/strv.h"
#include "manifest/app-args.h"
#include "manifest/app-lifecycle.h"

bool pod_name_is_valid(const char *name) {
        size_t n = strlen(name);
        if (n == 0 || n > 64 || name[0] == '-' || name[0] == '.')
                return false;
        for (const char *c = name; *c; c++)
                if (!isalnum((unsigned char) *c) && !strchr(".-", *c))
                        return false;
        return true;
}

void app_args_done(AppArgs *a) {
        free(a->image);
        free(a->name);
        free(a->exec);
        strv_free(a->args);
        strv_free(a->environment);
        free(a->user);
        free(a->group);
        free(a->working_dir);
        for (size_t i = 0; i < a->n_mounts; i++) {
                free(a->mounts[i].volume);
                free(a->mounts[i].target);
        }
        free(a->mounts);
        for (size_t i = 0; i < a->n_lifecycle; i++)
                free((char *) a->lifecycle[i].value);
        free(a->lifecycle);
        for (size_t i = 0; i < a->n_hooks; i++)
                strv_free(a->hooks[i].exec);
        free(a->hooks);
        free(a->memory);
        free(a->cpus);
        free(a->pids_limit);
        strv_free(a->cap_add);
        strv_free(a->cap_drop);
        strv_free(a->tmpfs);
        strv_free(a->devices);
        free(a->rootfs);
        free(a->stdin_path);
        free(a->stdout_path);
        free(a->stderr_path);
        for (size_t i = 0; i < a->n_host_binds; i++) {
                free(a->host_binds[i].source);
                free(a->host_binds[i].destination);
        }
        free(a->host_binds);
        strv_free(a->supplementary_groups);
        strv_free(a->rlimits);
        free(a->seccomp_profile);
        strv_free(a->masked_paths);
        strv_free(a->readonly_paths);
        *a = (AppArgs) {};
}

void pod_args_done(PodArgs *a) {
        free(a->name);
        free(a->stage1);
        for (size_t i = 0; i < a->n_lifecycle; i++)
                free((char *) a->lifecycle[i].value);
        free(a->lifecycle);
        for (size_t i = 0; i < a->n_volumes; i++) {
                free(a->volumes[i].name);
                free(a->volumes[i].source);
        }
        free(a->volumes);
        for (size_t i = 0; i < a->n_apps; i++)
                app_args_done(&a->apps[i]);
        free(a->apps);
        pod_net_args_done(&a->net);
        free(a->pull);
        for (size_t i = 0; i < a->n_pull_options; i++) {
                free((char *) a->pull_options[i].name);
                free((char *) a->pull_options[i].value);
        }
        free(a->pull_options);
        *a = (PodArgs) {};
}

/* Splits "key=value" at the first '='; the key must be one of keys. */
static const char *key_value(const char *item, const char *key) {
        const char *v = startswith(item, key);
        return v && *v == '=' ? v + 1 : NULL;
}

static bool parse_bool(const char *s, bool *ret) {
        if (streq(s, "true") || streq(s, "yes") || streq(s, "1"))
                *ret = true;
        else if (streq(s, "false") || streq(s, "no") || streq(s, "0"))
                *ret = false;
        else
                return false;
        return true;
}

int volume_arg_parse(const char *s, VolumeArg *ret, Error **err) {
        _cleanup_free_ char *copy = strdup(s);
        if (!copy)
                return error_sys(err, -ENOMEM, "--volume");
        VolumeArg v = { .kind = POD_VOLUME_HOST };
        bool have_kind = false;
        int r = 0;
        char *save = NULL;
        for (char *item = strtok_r(copy, ",", &save); item && r >= 0; item = strtok_r(NULL, ",", &save)) {
                const char *val;
                bool *flag = NULL;
                if (!v.name && !strchr(item, '='))
                        r = (v.name = strdup(item)) ? 0 : -ENOMEM;
                else if ((val = key_value(item, "name")) && !v.name)
                        r = (v.name = strdup(val)) ? 0 : -ENOMEM;
                else if ((val = key_value(item, "kind"))) {
                        v.named = false;
                        if (streq(val, "host"))
                                v.kind = POD_VOLUME_HOST;
                        else if (streq(val, "empty"))
                                v.kind = POD_VOLUME_EMPTY;
                        else if (streq(val, "named")) {
                                v.kind = POD_VOLUME_HOST;
                                v.named = true;
                        } else
                                r = error_set(err, -EINVAL, "--volume=%s: kind \"%s\" is not one of host, empty, named", s, val);
                        have_kind = true;
                } else if ((val = key_value(item, "source")) && !v.source)
                        r = (v.source = strdup(val)) ? 0 : -ENOMEM;
                else if ((val = key_value(item, "readOnly")) || (val = key_value(item, "chown")) ||
                         (val = key_value(item, "idmap"))) {
                        flag = startswith(item, "readOnly") ? &v.read_only : startswith(item, "chown") ? &v.chown : &v.idmap;
                        if (!parse_bool(val, flag))
                                r = error_set(err, -EINVAL, "--volume=%s: %.*s \"%s\" is not true or false", s,
                                              (int) (val - 1 - item), item, val);
                } else
                        r = error_set(err, -EINVAL, "--volume=%s: unexpected \"%s\" (expected NAME,kind=host|empty|named,"
                                      "source=PATH,readOnly=true|false,chown=true|false,idmap=true|false)", s, item);
        }
        if (r >= 0 && !v.name)
                r = error_set(err, -EINVAL, "--volume=%s: missing the volume name", s);
        else if (r >= 0 && v.named && !v.source && !(v.source = strdup(v.name)))
                r = -ENOMEM;
        if (r < 0)
                ;
        else if (v.kind == POD_VOLUME_HOST && !v.source)
                r = error_set(err, -EINVAL, "--volume=%s: a %s volume needs source=PATH", s, have_kind ? "host" : "host (the default kind)");
        else if (v.kind == POD_VOLUME_EMPTY && v.source)
                r = error_set(err, -EINVAL, "--volume=%s: an empty volume has no source", s);
        else if (v.named && (strchr(v.source, '/') || streq(v.source, ".") || streq(v.source, "..") || !*v.source))
                r = error_set(err, -EINVAL, "--volume=%s: a named volume's source is its name, not a path", s);
        else if ((v.chown || v.idmap) && (v.kind != POD_VOLUME_HOST || v.named))
                r = error_set(err, -EINVAL, "--volume=%s: chown and idmap are for volumes of kind host", s);
        else if (v.chown && v.idmap)
                r = error_set(err, -EINVAL, "--volume=%s: chown=true and idmap=true exclude each other", s);
        if (r == -ENOMEM)
                r = error_sys(err, r, "--volume");
        if (r < 0) {
                free(v.name);
                free(v.source);
                return r;
        }
        *ret = v;
        return 0;
}

int short_volume_arg_parse(PodArgs *pod, AppArgs *app, const char *s, Error **err) {
        _cleanup_free_ char *copy = strdup(s);
        if (!copy)
                return error_sys(err, -ENOMEM, "-v");
        char *dst = strchr(copy, ':'), *opts = NULL;
        if (!dst || dst == copy)
                return error_set(err, -EINVAL, "-v %s: expected SOURCE:DESTINATION[:OPTIONS]", s);
        *dst++ = 0;
        if ((opts = strchr(dst, ':')))
                *opts++ = 0;
        const char *problem = absolute_path_problem(dst);
        if (problem || streq(dst, "/"))
                return error_set(err, -EINVAL, "-v %s: destination %s: %s", s, dst, problem ?: "not on the app's root");
        VolumeArg v = { .kind = POD_VOLUME_HOST, .named = copy[0] != '/' };
        char *save = NULL;
        for (char *o = opts ? strtok_r(opts, ",", &save) : NULL; o; o = strtok_r(NULL, ",", &save)) {
                if (streq(o, "ro") || streq(o, "rw"))
                        v.read_only = streq(o, "ro");
                else if (streq(o, "U"))
                        v.chown = true;
                else if (streq(o, "idmap"))
                        v.idmap = true;
                else
                        return error_set(err, -EINVAL, "-v %s: option \"%s\" is not one of ro, rw, U, idmap", s, o);
        }
        if (v.named && (v.chown || v.idmap))
                return error_set(err, -EINVAL, "-v %s: U and idmap are for host directories (a named volume is "
                                 "owned by its pod's range already)", s);
        if (v.chown && v.idmap)
                return error_set(err, -EINVAL, "-v %s: U and idmap exclude each other", s);
        if ((problem = v.named ? NULL : absolute_path_problem(copy)))
                return error_set(err, -EINVAL, "-v %s: source %s: %s", s, copy, problem);
        /* The pod's name of it: v1, v2, ... (an ACName), the first free. */
        char name[32];
        for (size_t k = pod->n_volumes + 1;; k++) {
                snprintf(name, sizeof(name), "v%zu", k);
                bool taken = false;
                for (size_t i = 0; i < pod->n_volumes && !taken; i++)
                        taken = streq(pod->volumes[i].name, name);
                if (!taken)
                        break;
        }
        VolumeArg *l = reallocarray(pod->volumes, pod->n_volumes + 1, sizeof(VolumeArg));
        if (!l)
                return error_sys(err, -ENOMEM, "-v");
        pod->volumes = l;
        MountArg *ml = reallocarray(app->mounts, app->n_mounts + 1, sizeof(MountArg));
        if (!ml)
                return error_sys(err, -ENOMEM, "-v");
        app->mounts = ml;
        v.name = strdup(name);
        v.source = strdup(copy);
        MountArg m = { .volume = strdup(name), .target = strdup(dst) };
        if (!v.name || !v.source || !m.volume || !m.target) {
                free(v.name);
                free(v.source);
                free(m.volume);
                free(m.target);
                return error_sys(err, -ENOMEM, "-v");
        }
        l[pod->n_volumes++] = v;
        ml[app->n_mounts++] = m;
        return 0;
}

int mount_arg_parse(const char *s, MountArg *ret, Error **err) {
        _cleanup_free_ char *copy = strdup(s);
        if (!copy)
                return error_sys(err, -ENOMEM, "--mount");
        MountArg m = {};
        int r = 0;
        char *save = NULL;
        for (char *item = strtok_r(copy, ",", &save); item && r >= 0; item = strtok_r(NULL, ",", &save)) {
                const char *val;
                if ((val = key_value(item, "volume")) && !m.volume)
                        r = (m.volume = strdup(val)) ? 0 : -ENOMEM;
                else if ((val = key_value(item, "target")) && !m.target)
                        r = (m.target = strdup(val)) ? 0 : -ENOMEM;
                else
                        r = error_set(err, -EINVAL, "--mount=%s: unexpected \"%s\" (expected volume=NAME,target=PATH)", s, item);
        }
        if (r >= 0 && (!m.volume || !m.target))
                r = error_set(err, -EINVAL, "--mount=%s: needs both volume=NAME and target=PATH", s);
        if (r == -ENOMEM)
                r = error_sys(err, r, "--mount");
        if (r < 0) {
                free(m.volume);
                free(m.target);
                return r;
        }
        *ret = m;
        return 0;
}

int private_users_arg_parse(const char *s, PodArgs *pod, Error **err) {
        if (!streq(s, "yes") && !streq(s, "no"))
                return error_set(err, -EINVAL, "--private-users=%s: expected yes or no", s);
        pod->no_private_users = streq(s, "no");
        return 0;
}

/* OPTION_PULL: of the pulls of the command, also for podapp add.
 * OPTION_ADD: an app's, for podapp add only (what is mounted into a
 * running pod, and what the containerd shim needs). */
typedef enum OptionKind { OPTION_POD, OPTION_APP, OPTION_PULL, OPTION_ADD } OptionKind;

static const struct {
        const char *name;
        OptionKind kind;
} known_options[] = {
        { "name", OPTION_POD },
        { "volume", OPTION_POD },
        { "private-users", OPTION_POD },
        { "pod-stop-timeout", OPTION_POD },
        { "pod-watchdog", OPTION_POD },
        { "pod-pids-limit", OPTION_POD },
        { "pod-memory", OPTION_POD },
        { "pod-cpus", OPTION_POD },
        { "stage1", OPTION_POD },
        { "mutable", OPTION_POD },
        /* and the network options, which pod-net.h knows */
        { "app", OPTION_APP },
        { "exec", OPTION_APP },
        { "set-env", OPTION_APP },
        { "user", OPTION_APP },
        { "group", OPTION_APP },
        { "working-dir", OPTION_APP },
        { "mount", OPTION_APP },
        { "pre-start", OPTION_APP },
        { "pre-stop", OPTION_APP },
        { "post-stop", OPTION_APP },
        { "memory", OPTION_APP },
        { "cpus", OPTION_APP },
        { "pids-limit", OPTION_APP },
        { "cap-add", OPTION_APP },
        { "cap-drop", OPTION_APP },
        { "read-only", OPTION_APP },
        { "env-file", OPTION_APP },
        { "tmpfs", OPTION_APP },
        { "device", OPTION_APP },
        { "rootfs", OPTION_ADD },
        { "stdin", OPTION_ADD },
        { "stdout", OPTION_ADD },
        { "stderr", OPTION_ADD },
        { "bind", OPTION_ADD },
        { "supplementary-groups", OPTION_ADD },
        { "rlimit", OPTION_ADD },
        { "no-new-privileges", OPTION_ADD },
        /* and the lifecycle options, which app-lifecycle.h knows */
        { "pull", OPTION_PULL },
        { "tls-verify", OPTION_PULL },
        { "cert-dir", OPTION_PULL },
        { "authfile", OPTION_PULL },
        { "creds", OPTION_PULL },
        { "signature-policy", OPTION_PULL },
        { "registries-d", OPTION_PULL },
};

static int add_pull_option(PodArgs *pod, const char *option, const char *value, Error **err) {
        if (streq(option, "pull")) {
                if (!streq(value, "missing") && !streq(value, "always") && !streq(value, "never"))
                        return error_set(err, -EINVAL, "--pull=%s: expected missing, always or never", value);
                if (pod->pull)
                        return error_set(err, -EINVAL, "--pull given twice");
                return (pod->pull = strdup(value)) ? 0 : error_sys(err, -ENOMEM, "--pull");
        }
        for (size_t i = 0; i < pod->n_pull_options; i++)
                if (streq(pod->pull_options[i].name, option))
                        return error_set(err, -EINVAL, "--%s given twice", option);
        PodNameValue *l = realloc(pod->pull_options, (pod->n_pull_options + 1) * sizeof(PodNameValue));
        if (!l)
                return error_sys(err, -ENOMEM, "--%s", option);
        pod->pull_options = l;
        char *n = strdup(option), *v = strdup(value);
        if (!n || !v) {
                free(n);
                free(v);
                return error_sys(err, -ENOMEM, "--%s", option);
        }
        l[pod->n_pull_options++] = (PodNameValue) { .name = n, .value = v };
        return 0;
}

/* --pre-start=CMD and the like: the app's event handler of that name. */
static int add_hook(AppArgs *app, const char *option, const char *value, Error **err) {
        for (size_t i = 0; i < app->n_hooks; i++)
                if (streq(app->hooks[i].name, option))
                        return error_set(err, -EINVAL, "--%s given twice for image %s", option,
                                         app->image ? app->image : "(the first)");
        PodEventHandler *l = realloc(app->hooks, (app->n_hooks + 1) * sizeof(PodEventHandler));
        if (!l)
                return error_sys(err, -ENOMEM, "--%s", option);
        app->hooks = l;
        /* The option's name is the handler's. */
        const char *name = streq(option, POD_EVENT_PRE_START) ? POD_EVENT_PRE_START
                         : streq(option, POD_EVENT_PRE_STOP)  ? POD_EVENT_PRE_STOP
                                                              : POD_EVENT_POST_STOP;
        l[app->n_hooks] = (PodEventHandler) { .name = name };
        int r = app_command_parse(value, &l[app->n_hooks].exec, err);
        if (r < 0)
                return error_prefix(err, "--%s", option);
        app->n_hooks++;
        return 0;
}

/* --restart=always and the like: an annotation of an app's lifecycle, or
 * of the pod's (whose: NULL). */
static int add_lifecycle(PodNameValue **list, size_t *n, const char *option, const char *annotation, const char *value,
                         const char *whose, Error **err) {
        for (size_t i = 0; i < *n; i++)
                if (streq((*list)[i].name, annotation))
                        return whose ? error_set(err, -EINVAL, "--%s given twice for image %s", option, whose)
                                     : error_set(err, -EINVAL, "--%s given twice", option);
        /* A command is stored as a JSON array. */
        _cleanup_free_ char *stored = NULL;
        if (streq(annotation, APP_ANNOTATION_HEALTH_CMD)) {
                _cleanup_strv_free_ char **cmd = NULL;
                int r = app_command_parse(value, &cmd, err);
                if (r < 0)
                        return error_prefix(err, "--%s", option);
                _cleanup_json_ struct json_object *a = json_strv(cmd);
                if (!a || !(stored = strdup(json_object_to_json_string_ext(a, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE))))
                        return error_sys(err, -ENOMEM, "--%s", option);
        } else if (!(stored = strdup(value)))
                return error_sys(err, -ENOMEM, "--%s", option);
        int r = app_lifecycle_check(annotation, stored, err);
        if (r < 0)
                return error_prefix(err, "--%s", option);
        PodNameValue *l = realloc(*list, (*n + 1) * sizeof(PodNameValue));
        if (!l)
                return error_sys(err, -ENOMEM, "--%s", option);
        *list = l;
        l[(*n)++] = (PodNameValue) { .name = annotation, .value = TAKE_PTR(stored) };
        return 0;
}

/* --pod-stop-timeout (every app's default stop timeout, the app's
 * annotation) and the pod's own (--pod-watchdog, --pod-pids-limit,
 * --pod-memory, --pod-cpus); NULL for any other option. */
static const char *pod_lifecycle_annotation(const char *option) {
        if (streq(option, "pod-stop-timeout"))
                return APP_ANNOTATION_STOP_TIMEOUT;
        const char *a = app_lifecycle_annotation_of_option(option);
        return a && app_lifecycle_annotation_is_pods(a) ? a : NULL;
}

int pod_lifecycle_arg_parse(const char *option, const char *s, PodArgs *pod, Error **err) {
        const char *annotation = pod_lifecycle_annotation(option);
        if (!annotation)
                return error_set(err, -EINVAL, "--%s is not an option of the pod", option);
        return add_lifecycle(&pod->lifecycle, &pod->n_lifecycle, option, annotation, s, NULL, err);
}

/* --stage1=fly|kvm|nspawn|PATH: the flavor's name or a stage1 image's
 * path (with a '/'); pod/stage1.h finds the image. */
static int stage1_arg_parse(const char *s, PodArgs *pod, Error **err) {
        if (pod->stage1)
                return error_set(err, -EINVAL, "--stage1 given twice");
        if (!streq(s, "fly") && !streq(s, "kvm") && !streq(s, "nspawn") && !strchr(s, '/'))
                return error_set(err, -EINVAL, "--stage1=%s: expected fly, kvm, nspawn or the path of a stage1 image", s);
        return (pod->stage1 = strdup(s)) ? 0 : error_sys(err, -ENOMEM, "--stage1");
}

/* -EINVAL when option (without "--") is none of ours. */
static int option_kind(const char *option, OptionKind *ret) {
        if (pod_net_option_is(option)) {
                *ret = OPTION_POD;
                return 0;
        }
        for (size_t k = 0; k < ELEMENTSOF(known_options); k++)
                if (streq(known_options[k].name, option)) {
                        *ret = known_options[k].kind;
                        return 0;
                }
        if (app_lifecycle_annotation_of_option(option)) {
                *ret = OPTION_APP;
                return 0;
        }
        return -EINVAL;
}

static int set_once(char **field, const char *option, const char *value, const AppArgs *app, Error **err) {
        if (*field)
                return error_set(err, -EINVAL, "--%s given twice for image %s", option, app->image ? app->image : "(the first)");
        return (*field = strdup(value)) ? 0 : error_sys(err, -ENOMEM, "--%s", option);
}

static bool env_name_is_valid(const char *s, size_t n) {
        if (n == 0 || (s[0] >= '0' && s[0] <= '9'))
                return false;
        for (size_t i = 0; i < n; i++)
                if (!isascii((unsigned char) s[i]) || (!isalnum((unsigned char) s[i]) && s[i] != '_'))
                        return false;
        return true;
}

int env_file_parse(const char *path, char ***env, Error **err) {
        _cleanup_free_ char *data = NULL;
        size_t size = 0;
        /* The operator's file, yet read with a bound, and only when it is a
         * regular file (a FIFO would hang the command). */
        int r = read_file(path, ENV_FILE_MAX, &data, &size, err);
        if (r < 0)
                return r;
        /* Appended to *env only once the whole file is good. */
        _cleanup_strv_free_ char **found = NULL;
        unsigned line = 0;
        for (const char *p = data, *end = data + size; p < end;) {
                const char *nl = memchr(p, '\n', (size_t) (end - p));
                size_t n = nl ? (size_t) (nl - p) : (size_t) (end - p);
                const char *next = nl ? nl + 1 : end;
                line++;
                if (memchr(p, 0, n))
                        return error_set(err, -EINVAL, "%s:%u: contains a NUL byte", path, line);
                if (n > 0 && p[n - 1] == '\r')
                        n--;
                while (n > 0 && (*p == ' ' || *p == '\t'))
                        p++, n--;
                if (n == 0 || *p == '#') {
                        p = next;
                        continue;
                }
                const char *eq = memchr(p, '=', n);
                if (!eq)
                        return error_set(err, -EINVAL, "%s:%u: expected NAME=VALUE or a # comment", path, line);
                if (!env_name_is_valid(p, (size_t) (eq - p)))
                        return error_set(err, -EINVAL,
                                         "%s:%u: \"%.*s\" is not a variable name (letters, digits and '_', not "
                                         "starting with a digit)",
                                         path, line, (int) (eq - p) > 64 ? 64 : (int) (eq - p), p);
                _cleanup_free_ char *assignment = strndup(p, n);
                if (!assignment || strv_push(&found, assignment) < 0)
                        return error_sys(err, -ENOMEM, "%s", path);
                p = next;
        }
        for (char **f = found; f && *f; f++)
                if (strv_push(env, *f) < 0)
                        return error_sys(err, -ENOMEM, "%s", path);
        return 0;
}

/* "A,B" of --cap-add=A,B: each name once in l. */
static int push_list(char ***l, const char *option, const char *value, Error **err) {
        _cleanup_free_ char *copy = strdup(value);
        if (!copy)
                return error_sys(err, -ENOMEM, "--%s", option);
        char *save = NULL;
        bool any = false;
        for (char *item = strtok_r(copy, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
                any = true;
                if (!strv_contains(*l, item) && strv_push(l, item) < 0)
                        return error_sys(err, -ENOMEM, "--%s", option);
        }
        return any ? 0 : error_set(err, -EINVAL, "--%s: expected a capability name, such as NET_ADMIN", option);
}

/* "SOURCE:DESTINATION[:ro|:rw]" */
static int add_host_bind(AppArgs *app, const char *value, Error **err) {
        _cleanup_free_ char *copy = strdup(value);
        if (!copy)
                return error_sys(err, -ENOMEM, "--bind");
        char *dest = strchr(copy, ':');
        if (!dest)
                return error_set(err, -EINVAL, "--bind=%s: expected SOURCE:DESTINATION[:ro]", value);
        *dest++ = 0;
        char *mode = strchr(dest, ':');
        bool ro = false;
        if (mode) {
                *mode++ = 0;
                if (!streq(mode, "ro") && !streq(mode, "rw"))
                        return error_set(err, -EINVAL, "--bind=%s: \"%s\" is not ro or rw", value, mode);
                ro = streq(mode, "ro");
        }
        const char *problem = absolute_path_problem(copy);
        if (!problem)
                problem = absolute_path_problem(dest);
        if (problem)
                return error_set(err, -EINVAL, "--bind=%s: %s", value, problem);
        if (streq(dest, "/"))
                return error_set(err, -EINVAL, "--bind=%s: not on the app's root", value);
        AppHostBind *l = reallocarray(app->host_binds, app->n_host_binds + 1, sizeof(AppHostBind));
        if (!l)
                return error_sys(err, -ENOMEM, "--bind");
        app->host_binds = l;
        AppHostBind b = { .source = strdup(copy), .destination = strdup(dest), .read_only = ro };
        if (!b.source || !b.destination) {
                free(b.source);
                free(b.destination);
                return error_sys(err, -ENOMEM, "--bind");
        }
        l[app->n_host_binds++] = b;
        return 0;
}

static const char *const rlimit_names[] = {
        "as", "core", "cpu", "data", "fsize", "locks", "memlock", "msgqueue",
        "nice", "nofile", "nproc", "rss", "rtprio", "rttime", "sigpending", "stack",
};

static int parse_rlimit_value(const char *s, size_t n) {
        if (n == strlen("infinity") && strncmp(s, "infinity", n) == 0)
                return 0;
        if (n == 0 || n > 20)
                return -EINVAL;
        for (size_t i = 0; i < n; i++)
                if (!isdigit((unsigned char) s[i]))
                        return -EINVAL;
        return 0;
}

int rlimit_arg_check(const char *s, Error **err) {
        const char *eq = strchr(s, '=');
        bool known = false;
        for (size_t i = 0; eq && i < ELEMENTSOF(rlimit_names) && !known; i++)
                known = strlen(rlimit_names[i]) == (size_t) (eq - s) && strncmp(s, rlimit_names[i], (size_t) (eq - s)) == 0;
        if (!known)
                return error_set(err, -EINVAL, "--rlimit=%s: expected NAME=SOFT[:HARD], NAME one of as, core, cpu, data, "
                                 "fsize, locks, memlock, msgqueue, nice, nofile, nproc, rss, rtprio, rttime, "
                                 "sigpending, stack", s);
        const char *v = eq + 1, *colon = strchr(v, ':');
        size_t n = colon ? (size_t) (colon - v) : strlen(v);
        if (parse_rlimit_value(v, n) < 0 || (colon && parse_rlimit_value(colon + 1, strlen(colon + 1)) < 0))
                return error_set(err, -EINVAL, "--rlimit=%s: a limit is a number or \"infinity\"", s);
        if (colon && !streq(colon + 1, "infinity") &&
            (strncmp(v, "infinity", n) == 0 || strtoull(v, NULL, 10) > strtoull(colon + 1, NULL, 10)))
                return error_set(err, -EINVAL, "--rlimit=%s: the soft limit is above the hard limit", s);
        return 0;
}

static int apply_option(PodArgs *pod, AppArgs *app, const char *option, const char *value, Error **err) {
        int r;
        if (streq(option, "name")) {
                if (pod->name)
                        return error_set(err, -EINVAL, "--name given twice");
                return (pod->name = strdup(value)) ? 0 : error_sys(err, -ENOMEM, "--name");
        }
        if (streq(option, "volume")) {
                VolumeArg *l = realloc(pod->volumes, (pod->n_volumes + 1) * sizeof(VolumeArg));
                if (!l)
                        return error_sys(err, -ENOMEM, "--volume");
                pod->volumes = l;
                if ((r = volume_arg_parse(value, &l[pod->n_volumes], err)) < 0)
                        return r;
                pod->n_volumes++;
                return 0;
        }
        if (streq(option, "private-users"))
                return private_users_arg_parse(value, pod, err);
        if (streq(option, "stage1"))
                return stage1_arg_parse(value, pod, err);
        if (streq(option, "mutable")) {
                /* Apps can then be added and removed (podapp), and those
                 * given here start with the pod. */
                bool b;
                if (!parse_bool(value, &b))
                        return error_set(err, -EINVAL, "--mutable=%s: expected yes or no", value);
                if (!b || pod->mutable_pod)
                        return 0;
                PodNameValue *l = realloc(pod->lifecycle, (pod->n_lifecycle + 1) * sizeof(PodNameValue));
                char *v = l ? strdup("true") : NULL;
                if (l)
                        pod->lifecycle = l;
                if (!v)
                        return error_sys(err, -ENOMEM, "--mutable");
                l[pod->n_lifecycle++] = (PodNameValue) { .name = POD_ANNOTATION_START_APPS, .value = v };
                pod->mutable_pod = true;
                return 0;
        }
        OptionKind kind;
        if (option_kind(option, &kind) >= 0 && kind == OPTION_PULL)
                return add_pull_option(pod, option, value, err);
        if (pod_lifecycle_annotation(option))
                return pod_lifecycle_arg_parse(option, value, pod, err);
        const char *annotation = app_lifecycle_annotation_of_option(option);
        if (annotation)
                return add_lifecycle(&app->lifecycle, &app->n_lifecycle, option, annotation, value,
                                     app->image ? app->image : "(the first)", err);
        if (streq(option, "pre-start") || streq(option, "pre-stop") || streq(option, "post-stop"))
                return add_hook(app, option, value, err);
        if (pod_net_option_is(option))
                return pod_net_args_add(&pod->net, option, value, err);
        if (streq(option, "mount")) {
                MountArg *l = realloc(app->mounts, (app->n_mounts + 1) * sizeof(MountArg));
                if (!l)
                        return error_sys(err, -ENOMEM, "--mount");
                app->mounts = l;
                if ((r = mount_arg_parse(value, &l[app->n_mounts], err)) < 0)
                        return r;
                app->n_mounts++;
                return 0;
        }
        if (streq(option, "cap-add") || streq(option, "cap-drop"))
                return push_list(streq(option, "cap-add") ? &app->cap_add : &app->cap_drop, option, value, err);
        if (streq(option, "read-only")) {
                if (!parse_bool(value, &app->read_only))
                        return error_set(err, -EINVAL, "--read-only=%s: expected yes or no", value);
                return 0;
        }
        if (streq(option, "env-file")) {
                r = env_file_parse(value, &app->environment, err);
                return r == -ENOMEM ? r : r < 0 ? error_prefix(err, "--env-file") : 0;
        }
        if (streq(option, "tmpfs") || streq(option, "device")) {
                if (!*value)
                        return error_set(err, -EINVAL, "--%s: expected a path", option);
                return strv_push(streq(option, "tmpfs") ? &app->tmpfs : &app->devices, value) < 0
                               ? error_sys(err, -ENOMEM, "--%s", option)
                               : 0;
        }
        if (streq(option, "rootfs") || streq(option, "stdin") || streq(option, "stdout") || streq(option, "stderr")) {
                const char *problem = absolute_path_problem(value);
                if (problem)
                        return error_set(err, -EINVAL, "--%s=%s: %s", option, value, problem);
                char **f = streq(option, "rootfs") ? &app->rootfs
                         : streq(option, "stdin")  ? &app->stdin_path
                         : streq(option, "stdout") ? &app->stdout_path
                                                   : &app->stderr_path;
                return set_once(f, option, value, app, err);
        }
        if (streq(option, "bind"))
                return add_host_bind(app, value, err);
        if (streq(option, "supplementary-groups")) {
                _cleanup_free_ char *copy = strdup(value);
                if (!copy)
                        return error_sys(err, -ENOMEM, "--%s", option);
                char *save = NULL;
                for (char *g = strtok_r(copy, ",", &save); g; g = strtok_r(NULL, ",", &save)) {
                        if (!*g || strspn(g, "0123456789") != strlen(g) || strlen(g) > 10)
                                return error_set(err, -EINVAL, "--%s=%s: \"%s\" is not a group number", option, value, g);
                        if (!strv_contains(app->supplementary_groups, g) && strv_push(&app->supplementary_groups, g) < 0)
                                return error_sys(err, -ENOMEM, "--%s", option);
                }
                return 0;
        }
        if (streq(option, "rlimit")) {
                r = rlimit_arg_check(value, err);
                if (r < 0)
                        return r;
                return strv_push(&app->rlimits, value) < 0 ? error_sys(err, -ENOMEM, "--%s", option) : 0;
        }
        if (streq(option, "no-new-privileges")) {
                bool b;
                if (!parse_bool(value, &b))
                        return error_set(err, -EINVAL, "--no-new-privileges=%s: expected yes or no", value);
                app->allow_new_privileges = !b;
                return 0;
        }
        if (streq(option, "user") && strchr(value, ':')) {
                /* "USER:GROUP", as podman's -u and an image's User take it */
                const char *colon = strchr(value, ':');
                _cleanup_free_ char *user = strndup(value, (size_t) (colon - value));
                if (!user)
                        return error_sys(err, -ENOMEM, "--user");
                if (!*user || !colon[1])
                        return error_set(err, -EINVAL, "--user=%s: expected USER or USER:GROUP", value);
                return set_once(&app->user, option, user, app, err) ?: set_once(&app->group, "group", colon + 1, app, err);
        }
        if (streq(option, "set-env")) {
                if (!strchr(value, '=') || value[0] == '=')
                        return error_set(err, -EINVAL, "--set-env=%s: expected NAME=VALUE", value);
                return strv_push(&app->environment, value) < 0 ? error_sys(err, -ENOMEM, "--set-env") : 0;
        }
        char **field = streq(option, "app")        ? &app->name
                     : streq(option, "exec")       ? &app->exec
                     : streq(option, "user")       ? &app->user
                     : streq(option, "group")      ? &app->group
                     : streq(option, "memory")     ? &app->memory
                     : streq(option, "cpus")       ? &app->cpus
                     : streq(option, "pids-limit") ? &app->pids_limit
                                                   : &app->working_dir;
        return set_once(field, option, value, app, err);
}

int pod_args_add_app(PodArgs *pod, Error **err) {
        AppArgs *l = realloc(pod->apps, (pod->n_apps + 1) * sizeof(AppArgs));
        if (!l)
                return error_sys(err, -ENOMEM, "arguments");
        pod->apps = l;
        l[pod->n_apps++] = (AppArgs) {};
        return 0;
}

int pod_args_add_option(PodArgs *pod, const char *option, const char *value, Error **err) {
        OptionKind kind;
        if (option_kind(option, &kind) < 0)
                return error_set(err, -EINVAL, "unknown option \"--%s\"", option);
        if (kind == OPTION_ADD)
                return error_set(err, -EINVAL, "--%s is an option of 'podapp add' only", option);
        int r;
        if (pod->n_apps == 0 && (r = pod_args_add_app(pod, err)) < 0)
                return r;
        return apply_option(pod, &pod->apps[pod->n_apps - 1], option, value, err);
}

/* podman's short options, each the long one it stands for. */
static const struct {
        char letter;
        const char *option;
} short_options[] = {
        { 'p', "port" },
        { 'e', "set-env" },
        { 'u', "user" },
        { 'w', "working-dir" },
};

static const char *short_option(char letter) {
        for (size_t k = 0; k < ELEMENTSOF(short_options); k++)
                if (short_options[k].letter == letter)
                        return short_options[k].option;
        return NULL;
}

/* An option that is none of ours, at argv[*i]: the caller's (extra), before
 * the first IMAGE, or an error. */
static int extra_option(const PodArgs *pod, PodArgsExtraOption extra, void *userdata, int argc, char *const *argv,
                        int *i, Error **err) {
        const char *a = argv[*i];
        int n = extra ? extra(a, *i + 1 < argc ? argv[*i + 1] : NULL, userdata, err) : 0;
        if (n < 0)
                return n;
        if (n > 0 && (pod->n_apps > 1 || pod->apps[0].image || pod->apps[0].rootfs))
                return error_set(err, -EINVAL, "\"%s\" is an option of the command: put it before the first IMAGE", a);
        if (n == 0)
                return error_set(err, -EINVAL, "unknown option \"%.*s\"", (int) strcspn(a, "="), a);
        *i += n - 1;
        return 0;
}

int pod_args_parse(int argc, char *const *argv, bool pod_options, PodArgs *ret, Error **err) {
        return pod_args_parse_with(argc, argv, pod_options, NULL, NULL, ret, err);
}

int pod_args_parse_with(int argc, char *const *argv, bool pod_options, PodArgsExtraOption extra, void *userdata,
                        PodArgs *ret, Error **err) {
        PodArgs pod = {};
        bool in_args = false;
        int r = pod_args_add_app(&pod, err);
        for (int i = 0; r >= 0 && i < argc; i++) {
                const char *a = argv[i];
                AppArgs *app = &pod.apps[pod.n_apps - 1];
                if (streq(a, "---")) {
                        if (!app->image && !app->rootfs)
                                r = error_set(err, -EINVAL, "\"---\" must follow an IMAGE");
                        else
                                r = pod_args_add_app(&pod, err);
                        in_args = false;
                        continue;
                }
                if (in_args) {
                        r = strv_push(&app->args, a) < 0 ? error_sys(err, -ENOMEM, "arguments") : 0;
                        continue;
                }
                if (streq(a, "--")) {
                        if (!app->image && !app->rootfs)
                                r = error_set(err, -EINVAL, "\"--\" must follow an IMAGE (or --rootfs): the arguments after it are the app's");
                        in_args = app->have_args = true;
                        continue;
                }
                const char *opt = startswith(a, "--"), *short_long = NULL;
                if (streq(a, "-v") && pod_options) {
                        r = i + 1 < argc ? short_volume_arg_parse(&pod, app, argv[++i], err)
                                         : error_set(err, -EINVAL, "option \"-v\" needs a value");
                        continue;
                }
                if (!opt && a[0] == '-' && a[1]) {
                        /* Not an image: a short option (podman's -p, -e...),
                         * or the caller's own (sdpod run -d), or none. */
                        short_long = short_option(a[1]);
                        if (!short_long) {
                                r = extra_option(&pod, extra, userdata, argc, argv, &i, err);
                                continue;
                        }
                }
                if (!opt && !short_long) {
                        if (app->image)
                                r = error_set(err, -EINVAL, "unexpected \"%s\" after image %s: put the app's arguments after \"--\", "
                                              "or start the next app with \"---\"", a, app->image);
                        else
                                r = (app->image = strdup(a)) ? 0 : error_sys(err, -ENOMEM, "arguments");
                        continue;
                }

                _cleanup_free_ char *option = NULL;
                /* "-p 8080:80" and "-p8080:80" as "--port 8080:80". */
                const char *value = NULL, *eq = short_long ? (a[2] ? a + 1 : NULL) : strchr(opt, '=');
                option = short_long ? strdup(short_long) : eq ? strndup(opt, (size_t) (eq - opt)) : strdup(opt);
                if (!option) {
                        r = error_sys(err, -ENOMEM, "arguments");
                        continue;
                }
                OptionKind kind;
                if (option_kind(option, &kind) < 0) {
                        r = extra_option(&pod, extra, userdata, argc, argv, &i, err);
                        continue;
                }
                if (kind == OPTION_POD && !pod_options) {
                        r = error_set(err, -EINVAL, "--%s is an option of the pod, not of an app", option);
                        continue;
                }
                if (kind == OPTION_ADD && pod_options) {
                        r = error_set(err, -EINVAL, "--%s is an option of 'podapp add' only", option);
                        continue;
                }
                if (eq)
                        value = eq + 1;
                else if (streq(option, "read-only") || streq(option, "mutable"))
                        value = "yes";  /* a flag: "--read-only" alone */
                else if (i + 1 < argc)
                        value = argv[++i];
                else {
                        r = error_set(err, -EINVAL, "option \"%s\" needs a value", a);
                        continue;
                }
                r = apply_option(&pod, app, option, value, err);
        }
        for (size_t i = 0; r >= 0 && i < pod.n_apps; i++)
                if (pod.apps[i].image && pod.apps[i].rootfs)
                        r = error_set(err, -EINVAL, "an app has its root from IMAGE %s or from --rootfs, not both",
                                      pod.apps[i].image);
        if (r >= 0 && !pod.apps[pod.n_apps - 1].image && !pod.apps[pod.n_apps - 1].rootfs)
                r = error_set(err, -EINVAL, pod.n_apps > 1 ? "missing IMAGE after \"---\"" : "missing IMAGE");
        if (r < 0) {
                pod_args_done(&pod);
                return r;
        }
        *ret = pod;
        return 0;
}
