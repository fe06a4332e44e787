/* SPDX-License-Identifier: Apache-2.0 */
#include "basic/json-util.h"
#include "basic/strv.h"
#include "basic/time-util.h"
#include "cli/cli.h"
#include "pod/pod-volume.h"
#include "sdpod.h"

static const char list_usage[] =
        "Usage: sdpod volume list [--format=table|json] [--no-legend]\n"
        "\n"
        "Lists the named volumes (kind=named, or -v NAME:PATH).\n";

static const char inspect_usage[] =
        "Usage: sdpod volume inspect NAME...\n"
        "\n"
        "Shows named volumes as JSON: name, created, the directory pods see,\n"
        "the user id range that owns it (null until a pod has started with it)\n"
        "and the pods that use it.\n";

static const char rm_usage[] =
        "Usage: sdpod volume rm NAME...\n"
        "\n"
        "Removes named volumes and their data. A volume that a prepared, running\n"
        "or exited pod uses is refused, naming the pod: remove the pod first.\n";

static const char prune_usage[] =
        "Usage: sdpod volume prune\n"
        "\n"
        "Removes every named volume that no pod uses; prints their names.\n";

static int volume_json(PodStore *ps, const char *name, struct json_object **ret, Error **err) {
        VolumeRecord rec;
        _cleanup_strv_free_ char **users = NULL;
        int r = volume_inspect(ps->root, name, &rec, err);
        if (r < 0 || (r = volume_users(ps, name, &users, err)) < 0)
                return r;
        _cleanup_free_ char *path = NULL;
        if (asprintf(&path, "%s/%s/%s/%s", ps->root, POD_NAMED_VOLUMES_DIR, name, POD_VOLUME_DATA) < 0)
                return error_sys(err, -ENOMEM, "volume %s", name);
        _cleanup_json_ struct json_object *o = json_object_new_object(), *pods = json_object_new_array();
        if (!o || !pods || json_add_string(o, "name", rec.name) < 0 || json_add_string(o, "created", rec.created) < 0 ||
            json_add_string(o, "directory", path) < 0 ||
            json_object_object_add(o, "base", rec.has_base ? json_object_new_int64(rec.base) : NULL) < 0)
                return error_sys(err, -ENOMEM, "volume %s", name);
        for (char **u = users; u && *u; u++) {
                struct json_object *p = json_object_new_object();
                char *space = strchr(*u, ' ');
                *space = 0;
                if (!p || json_add_string(p, "uuid", *u) < 0 || json_add_string(p, "state", space + 1) < 0 ||
                    json_object_array_add(pods, p) < 0) {
                        json_object_put(p);
                        return error_sys(err, -ENOMEM, "volume %s", name);
                }
        }
        if (json_object_object_add(o, "pods", TAKE_PTR(pods)) < 0)
                return error_sys(err, -ENOMEM, "volume %s", name);
        *ret = TAKE_PTR(o);
        return 0;
}

static int volume_list_verb(int argc, char **argv) {
        OutputFormat format = FORMAT_TABLE;
        bool legend = true;
        int status, first = cli_parse_verb_options(argc, argv, list_usage, &format, &legend, &status);
        if (first < 0)
                return status;
        if (first != argc)
                return cli_usage_error("sdpod volume list", "takes no arguments");
        Error *err = NULL;
        _cleanup_pod_store_ PodStore *ps = NULL;
        _cleanup_strv_free_ char **names = NULL;
        if (cli_open_pods_to_read(&ps, &err) < 0 || volume_list(ps->root, &names, &err) < 0)
                return cli_fail(err);
        _cleanup_json_ struct json_object *a = format == FORMAT_JSON ? json_object_new_array() : NULL;
        _cleanup_(table_freep) Table *t = format == FORMAT_TABLE ? table_new(4, "NAME", "CREATED", "RANGE", "PODS") : NULL;
        for (char **n = names; n && *n; n++) {
                _cleanup_json_ struct json_object *o = NULL;
                if (volume_json(ps, *n, &o, &err) < 0) {
                        /* One bad volume does not hide the others. */
                        (void) cli_fail(TAKE_PTR(err));
                        continue;
                }
                if (a) {
                        if (json_object_array_add(a, o) >= 0)
                                o = NULL;
                        continue;
                }
                struct json_object *v;
                char base[16] = "-", pods[16];
                if (json_object_object_get_ex(o, "base", &v) && v)
                        snprintf(base, sizeof(base), "%" PRId64, json_object_get_int64(v));
                json_object_object_get_ex(o, "pods", &v);
                snprintf(pods, sizeof(pods), "%zu", json_object_array_length(v));
                json_object_object_get_ex(o, "created", &v);
                if (t)
                        (void) table_add_row(t, *n, json_object_get_string(v), base, pods);
        }
        if (a)
                return cli_print_json(a);
        if (t)
                table_print(t, legend);
        return EXIT_OK;
}

static int volume_inspect_verb(int argc, char **argv) {
        int status, first = cli_parse_verb_options(argc, argv, inspect_usage, NULL, NULL, &status);
        if (first < 0)
                return status;
        if (first >= argc)
                return cli_usage_error("sdpod volume inspect", "missing NAME");
        Error *err = NULL;
        _cleanup_pod_store_ PodStore *ps = NULL;
        if (cli_open_pods_to_read(&ps, &err) < 0)
                return cli_fail(err);
        status = EXIT_OK;
        for (int i = first; i < argc; i++) {
                _cleanup_json_ struct json_object *o = NULL;
                if (volume_json(ps, argv[i], &o, &err) < 0) {
                        int k = cli_fail(TAKE_PTR(err));
                        status = status ?: k;
                        continue;
                }
                (void) cli_print_json(o);
        }
        return status;
}

static int volume_rm_verb(int argc, char **argv) {
        int status, first = cli_parse_verb_options(argc, argv, rm_usage, NULL, NULL, &status);
        if (first < 0)
                return status;
        if (first >= argc)
                return cli_usage_error("sdpod volume rm", "missing NAME");
        Error *err = NULL;
        _cleanup_pod_store_ PodStore *ps = NULL;
        if (cli_open_pods(&ps, &err) < 0)
                return cli_fail(err);
        status = EXIT_OK;
        for (int i = first; i < argc; i++) {
                if (volume_remove(ps, argv[i], &err) < 0) {
                        int k = cli_fail(TAKE_PTR(err));
                        status = status ?: k;
                        continue;
                }
                puts(argv[i]);
        }
        return status;
}

static int volume_prune_verb(int argc, char **argv) {
        int status, first = cli_parse_verb_options(argc, argv, prune_usage, NULL, NULL, &status);
        if (first < 0)
                return status;
        if (first != argc)
                return cli_usage_error("sdpod volume prune", "takes no arguments");
        Error *err = NULL;
        _cleanup_pod_store_ PodStore *ps = NULL;
        _cleanup_strv_free_ char **removed = NULL;
        if (cli_open_pods(&ps, &err) < 0 || volume_prune(ps, &removed, &err) < 0)
                return cli_fail(err);
        for (char **n = removed; n && *n; n++)
                puts(*n);
        return EXIT_OK;
}

static const char volume_usage[] =
        "Usage: sdpod volume COMMAND [ARGS...]\n"
        "\n"
        "Named volumes: directories sdpod keeps under the data directory, made by\n"
        "the first pod that names one (a volume of kind=named, or -v NAME:PATH).\n"
        "\n"
        "Commands:\n"
        "  list          list named volumes\n"
        "  inspect NAME  show a named volume as JSON\n"
        "  rm NAME...    remove named volumes no pod uses\n"
        "  prune         remove every named volume no pod uses\n";

int verb_volume(int argc, char **argv) {
        static const Verb verbs[] = {
                { "list", volume_list_verb, NULL },
                { "inspect", volume_inspect_verb, NULL },
                { "rm", volume_rm_verb, NULL },
                { "prune", volume_prune_verb, NULL },
                {},
        };
        return cli_dispatch(verbs, "sdpod volume", volume_usage, argc - 1, argv + 1);
}
