/* SPDX-License-Identifier: Apache-2.0 */
#include <getopt.h>

#include "basic/fs.h"
#include "basic/json-util.h"
#include "basic/strv.h"
#include "basic/time-util.h"
#include "cli/cli.h"
#include "cli/pull-view.h"
#include "manifest/app-args.h"
#include "manifest/pod-net.h"
#include "net/pod-network.h"
#include "pod/pod-cgroup.h"
#include "pod/pod-info.h"
#include "pod/pod-journal.h"
#include "pod/pod-prepare.h"
#include "pod/pod-ref.h"
#include "pod/pod-userns.h"
#include "pod/stage1.h"
#include "sdpod.h"

/* Joins one field of every app: "web,db". */
static char *join_apps(const PodManifest *m, bool images) {
        char *s = NULL;
        for (size_t i = 0; m && i < m->n_apps; i++) {
                const char *v = images ? (m->apps[i].image_name ? m->apps[i].image_name : m->apps[i].image_id)
                                       : m->apps[i].name;
                char *n = NULL;
                if (asprintf(&n, "%s%s%s", strempty(s), s ? "," : "", v) < 0) {
                        free(s);
                        return NULL;
                }
                free(s);
                s = n;
        }
        return s;
}

static const char prepare_usage[] =
        "Usage: sdpod prepare [POD OPTIONS] IMAGE [APP OPTIONS] [-- ARGS...]\n"
        "                     [--- IMAGE [APP OPTIONS] [-- ARGS...]]...\n"
        "\n"
        "Prepares a pod of one app per IMAGE and prints its UUID; start it with\n"
        "'sdpod run-prepared UUID' or 'systemctl start pod@UUID'. IMAGE is a\n"
        "name, an id or an id prefix of an image in the store (sdpod image list),\n"
        "or a registry's image, pulled when the store does not have it.\n"
        "Arguments after \"--\" replace the image's command; \"---\" starts the next app.\n"
        "\n"
        "Pod options:\n"
        "  --name=NAME             the pod's name (and machine name)\n"
        "  --volume=NAME,kind=host,source=PATH[,readOnly=true][,chown=true|,idmap=true]\n"
        "  --volume=NAME,kind=named[,source=VOLUME][,readOnly=true]\n"
        "  --volume=NAME,kind=empty\n"
        "                          a volume apps can mount: a host path (chown: given\n"
        "                          to the pod's range at each start; idmap: its owners\n"
        "                          seen as they are), a named volume sdpod keeps\n"
        "                          (sdpod volume), or an empty directory\n"
        "  -v SOURCE:DEST[:ro|:U|:idmap]\n"
        "                          a volume mounted at DEST in the app it precedes or\n"
        "                          follows: SOURCE an absolute path (a host volume; U:\n"
        "                          chown=true) or a named volume's name\n"
        "  --private-users=no      no user namespace: root in the pod is root on the host\n"
        "                          (default yes: its own range of ids; sdpod-security(7))\n"
        "  --net=default|none|host|ns:PATH|NAME[:KEY=VALUE;...][,NAME...]\n"
        "                          the pod's network (default: a namespace of its own on\n"
        "                          the built-in CNI network; sdpod(1) NETWORKING)\n"
        "  --port=[HOSTIP:]HOSTPORT:PODPORT[/tcp|/udp]\n"
        "                          publish a port of the pod on the host (repeatable)\n"
        "  --dns=IP|host           a nameserver for the pod (repeatable), or the host's\n"
        "                          resolv.conf\n"
        "  --dns-search=DOMAIN     a search domain (repeatable)\n"
        "  --dns-option=OPTION     a resolv.conf option, as ndots:2 (repeatable)\n"
        "  --hostname=NAME         the pod's host name (default: its machine name)\n"
        "  --hosts-entry=IP=NAME   a line of the pod's /etc/hosts (repeatable)\n"
        "  --conntrack-limit=N     the host conntrack entries the pod may hold, per\n"
        "                          address (default 8192; 0: no bound; sdpod-security(7))\n"
        "  --pod-stop-timeout=DURATION\n"
        "                          every app's stop timeout unless it has its own\n"
        "  --pod-watchdog=DURATION kill the pod when its systemd has not answered for\n"
        "                          that long\n"
        "  --pod-pids-limit=N      at most N tasks (processes and threads) in the whole\n"
        "                          pod (default 4096)\n"
        "  --pod-memory=QUANTITY   the memory of the whole pod, its systemd and apps\n"
        "                          together (\"512Mi\", \"2G\"; default: no limit)\n"
        "  --pod-cpus=CPUS         the CPU time of the whole pod (\"1.5\", \"250m\";\n"
        "                          default: no limit)\n"
        "  --stage1=nspawn|fly|kvm|PATH\n"
        "                          the stage1 flavor (default nspawn: a systemd in the\n"
        "                          pod; fly: its one app run directly, quicker, fewer\n"
        "                          features; kvm: a virtual machine) or a\n"
        "                          stage1 image's path (sdpod-stage1(7))\n"
        "  --mutable               apps can be added and removed later (podapp add,\n"
        "                          podapp rm); the apps given start with the pod\n"
        CLI_PULL_OPTIONS_HELP
        "App options (after its IMAGE, or before the first IMAGE for the first app):\n"
        "  --app=NAME              the app's name (default: from the image name)\n" CLI_APP_OPTIONS_HELP;

int verb_prepare(int argc, char **argv) {
        if (cli_wants_help(argc, argv)) {
                fputs(prepare_usage, stdout);
                return EXIT_OK;
        }
        Error *err = NULL;
        PodArgs args = {};
        if (pod_args_parse(argc - 1, argv + 1, true, &args, &err) < 0) {
                int status = cli_usage_error(argv[0], "%s", err->msg);
                error_free(err);
                return status;
        }
        _cleanup_image_store_ ImageStore *is = NULL;
        _cleanup_pod_store_ PodStore *ps = NULL;
        _cleanup_pod_ Pod *p = NULL;
        int r = image_store_open(cli.dir, cli.dir_is_default, STORE_SHARED, &is, &err);
        r = r < 0 ? r : cli_pull_images(is, &args, &err);
        r = r < 0 ? r : cli_open_pods(&ps, &err);
        r = r < 0 ? r : pod_prepare(ps, is, &args, POD_DIR_PREPARED, &p, &err);
        pod_args_done(&args);
        if (r < 0)
                return cli_fail(err);
        puts(p->uuid);
        return EXIT_OK;
}

/* The pod's --net, as its manifest says. */
static const char *net_of(const PodManifest *m) {
        const char *v = m ? pod_manifest_get_annotation(m, POD_ANNOTATION_NET) : NULL;
        return v ?: POD_NET_DEFAULT;
}

/* Adds net, networks (what the pod is attached to now: empty once it has
 * exited) and ports. */
static int add_network_json(struct json_object *o, const Pod *p, const PodManifest *m) {
        _cleanup_json_ struct json_object *networks = NULL, *ports = json_object_new_array();
        Error *ignored = NULL;
        if (pod_network_describe(p->fd, &networks, &ignored) < 0) {
                error_free(ignored);
                networks = json_object_new_array();
        }
        if (!networks || !ports)
                return -ENOMEM;
        for (size_t i = 0; m && i < m->n_ports; i++) {
                const PodPort *port = &m->ports[i];
                struct json_object *e = json_object_new_object();
                if (!e || json_object_array_add(ports, e) < 0 || json_add_string(e, "name", port->name) < 0 ||
                    json_object_object_add(e, "host_ip", port->host_ip ? json_object_new_string(port->host_ip) : NULL) < 0 ||
                    json_object_object_add(e, "host_port", json_object_new_int(port->host_port)) < 0 ||
                    json_object_object_add(e, "pod_port", json_object_new_int(port->pod_port)) < 0 ||
                    json_add_string(e, "protocol", port->protocol) < 0)
                        return -ENOMEM;
        }
        if (json_add_string(o, "net", net_of(m)) < 0 || json_object_object_add(o, "networks", TAKE_PTR(networks)) < 0 ||
            json_object_object_add(o, "ports", TAKE_PTR(ports)) < 0)
                return -ENOMEM;
        return 0;
}

static struct json_object *pod_summary_json(const Pod *p, const PodInfo *info) {
        _cleanup_json_ struct json_object *o = json_object_new_object(), *apps = json_object_new_array(),
                                          *images = json_object_new_array();
        if (!o || !apps || !images)
                return NULL;
        for (size_t i = 0; info->manifest && i < info->manifest->n_apps; i++) {
                const PodApp *a = &info->manifest->apps[i];
                if (json_object_array_add(apps, json_object_new_string(a->name)) < 0 ||
                    json_object_array_add(images, json_object_new_string(a->image_name ? a->image_name : a->image_id)) < 0)
                        return NULL;
        }
        if (json_add_string(o, "uuid", p->uuid) < 0 ||
            json_object_object_add(o, "name", pod_info_name(info) ? json_object_new_string(pod_info_name(info)) : NULL) < 0 ||
            json_add_string(o, "state", pod_state_to_string(p->state)) < 0 ||
            json_object_object_add(o, "apps", TAKE_PTR(apps)) < 0 ||
            json_object_object_add(o, "images", TAKE_PTR(images)) < 0 ||
            cli_json_add_time(o, "created", info->created_usec) < 0 ||
            cli_json_add_time(o, "started", info->started_usec) < 0 ||
            add_network_json(o, p, info->manifest) < 0)
                return NULL;
        return TAKE_PTR(o);
}

typedef struct ListContext {
        struct json_object *array;      /* --format=json */
        Table *table;
        bool quiet;                     /* ps -q: the UUIDs only */
} ListContext;

static int list_one(PodStore *s, Pod *p, void *userdata) {
        ListContext *c = userdata;
        if (c->quiet)
                return puts(p->uuid) < 0 ? -EIO : 0;
        PodInfo info;
        int r = pod_info_read(p, false, &info);
        if (r < 0)
                return r;
        if (c->array) {
                struct json_object *o = pod_summary_json(p, &info);
                r = o && json_object_array_add(c->array, o) >= 0 ? 0 : -ENOMEM;
        } else {
                char short_uuid[9], created[32], started[32];
                snprintf(short_uuid, sizeof(short_uuid), "%.8s", p->uuid);
                _cleanup_free_ char *apps = join_apps(info.manifest, false), *images = join_apps(info.manifest, true);
                r = table_add_row(c->table, short_uuid, pod_info_name(&info), pod_state_to_string(p->state), apps,
                                  images, cli_table_time(info.created_usec, created), cli_table_time(info.started_usec, started));
        }
        pod_info_done(&info);
        return r;
}

static const char list_usage[] =
        "Usage: sdpod list [--format=table|json] [--no-legend]\n"
        "\n"
        "Lists the pods: UUID, name, state, apps, images, creation and start times.\n"
        "A state is sampled: a running pod may exit right after.\n"
        "\n"
        "  --format=json   one JSON array of objects with the keys uuid, name, state,\n"
        "                  apps, images, created and started (RFC 3339, UTC, or null),\n"
        "                  net, networks (name, interface, addresses, gateway: while\n"
        "                  the pod runs) and ports\n"
        "  --no-legend     no header line in the table\n";

static int list_pods(int argc, char **argv, const char *usage, bool quiet) {
        OutputFormat format = FORMAT_TABLE;
        bool legend = true;
        int status, i = cli_parse_verb_options(argc, argv, usage, &format, &legend, &status);
        if (i < 0)
                return status;
        if (i != argc)
                return cli_usage_error(argv[0], "takes no arguments");

        Error *err = NULL;
        _cleanup_pod_store_ PodStore *ps = NULL;
        _cleanup_json_ struct json_object *array = format == FORMAT_JSON ? json_object_new_array() : NULL;
        _cleanup_(table_freep) Table *t = format == FORMAT_TABLE
                ? table_new(7, "UUID", "NAME", "STATE", "APPS", "IMAGES", "CREATED", "STARTED") : NULL;
        if (!array && !t)
                return cli_fail(NULL);
        ListContext c = { .array = quiet ? NULL : array, .table = t, .quiet = quiet };
        if (cli_open_pods_to_read(&ps, &err) < 0 || pod_foreach(ps, list_one, &c, &err) < 0)
                return cli_fail(err);
        if (quiet)
                return fflush(stdout) == 0 ? EXIT_OK : EXIT_ERROR;
        if (array)
                return cli_print_json(array);
        table_print(t, legend);
        return EXIT_OK;
}

int verb_list(int argc, char **argv) {
        return list_pods(argc, argv, list_usage, false);
}

static const char ps_usage[] =
        "Usage: sdpod ps [-a] [-q] [--format=table|json] [--no-legend]\n"
        "\n"
        "podman's name for 'sdpod list': lists every pod, running or not (-a,\n"
        "--all is accepted and changes nothing).\n"
        "\n"
        "  -q, --quiet     only the pods' UUIDs, one a line\n"
        "  --format=json   as 'sdpod list --format=json'\n"
        "  --no-legend     no header line in the table\n";

int verb_ps(int argc, char **argv) {
        /* podman's -a and -q taken out; the rest is list's. */
        bool quiet = false;
        int n = 0;
        for (int i = 0; i < argc; i++)
                if (i > 0 && (streq(argv[i], "-a") || streq(argv[i], "--all")))
                        continue;
                else if (i > 0 && (streq(argv[i], "-q") || streq(argv[i], "--quiet") || streq(argv[i], "-aq") ||
                                   streq(argv[i], "-qa")))
                        quiet = true;
                else
                        argv[n++] = argv[i];
        argv[n] = NULL;
        return list_pods(n, argv, ps_usage, quiet);
}

/* The pod's user namespace: "BASE:65536", or "no". */
static const char *private_users_of(const PodManifest *m) {
        const char *v = m ? pod_manifest_get_annotation(m, POD_ANNOTATION_PRIVATE_USERS) : NULL;
        return v ?: "no";
}

static int print_status(const Pod *p, const PodInfo *info, OutputFormat format) {
        const PodManifest *m = info->manifest;
        char flavor[32];
        /* Why gc keeps the pod (written by the host's gc, not the pod). */
        _cleanup_free_ char *blocked = NULL;
        size_t blocked_size = 0;
        Error *blocked_err = NULL;
        if (read_file_at(p->fd, POD_GC_BLOCKED_FILE, 512, &blocked, &blocked_size, &blocked_err) >= 0)
                text_make_printable(blocked, blocked_size, false);
        else
                error_free(blocked_err);
        if (format == FORMAT_JSON) {
                _cleanup_json_ struct json_object *o = pod_summary_json(p, info);
                _cleanup_json_ struct json_object *apps = json_object_new_array();
                if (!o || !apps)
                        return cli_print_json(NULL);
                for (size_t i = 0; m && i < m->n_apps; i++) {
                        const PodAppExit *e = NULL;
                        for (size_t k = 0; k < info->n_apps; k++)
                                if (streq(info->apps[k].name, m->apps[i].name))
                                        e = &info->apps[k];
                        struct json_object *a = json_object_new_object();
                        if (!a || json_object_array_add(apps, a) < 0 ||
                            json_add_string(a, "name", m->apps[i].name) < 0 ||
                            json_object_object_add(a, "image", m->apps[i].image_name ? json_object_new_string(m->apps[i].image_name) : NULL) < 0 ||
                            json_add_string(a, "image_id", m->apps[i].image_id) < 0 ||
                            json_object_object_add(a, "exit_status", e && e->exited ? json_object_new_int(e->exit_status) : NULL) < 0 ||
                            cli_json_add_time(a, "exited", e && e->exited ? e->exited_usec : 0) < 0 ||
                            json_object_object_add(a, "restarts", json_object_new_int(e ? (int) e->restarts : 0)) < 0 ||
                            json_object_object_add(a, "restart_exit_status",
                                                   e && e->restarts ? json_object_new_int(e->restart_exit_status) : NULL) < 0 ||
                            json_object_object_add(a, "health", e && e->health ? json_object_new_string(e->health) : NULL) < 0)
                                return cli_print_json(NULL);
                }
                if (json_object_object_add(o, "apps", TAKE_PTR(apps)) < 0 ||
                    cli_json_add_time(o, "exited", info->exited_usec) < 0 ||
                    (m && json_add_string(o, "private_users", private_users_of(m)) < 0) ||
                    json_add_string(o, "stage1", stage1_flavor_of(p->fd, flavor)) < 0 ||
                    json_object_object_add(o, "manifest_error", info->manifest_error ? json_object_new_string(info->manifest_error) : NULL) < 0 ||
                    json_object_object_add(o, "gc_blocked", blocked ? json_object_new_string(blocked) : NULL) < 0)
                        return cli_print_json(NULL);
                return cli_print_json(o);
        }

        char ts[32];
        printf("uuid=%s\n", p->uuid);
        if (pod_info_name(info))
                printf("name=%s\n", pod_info_name(info));
        printf("state=%s\n", pod_state_to_string(p->state));
        if (info->created_usec && (format_timestamp(info->created_usec, ts), true))
                printf("created=%s\n", ts);
        if (info->started_usec && (format_timestamp(info->started_usec, ts), true))
                printf("started=%s\n", ts);
        if (info->exited_usec && (format_timestamp(info->exited_usec, ts), true))
                printf("exited=%s\n", ts);
        if (m)
                printf("private-users=%s\nnet=%s\n", private_users_of(m), net_of(m));
        printf("stage1=%s\n", stage1_flavor_of(p->fd, flavor));
        _cleanup_json_ struct json_object *networks = NULL;
        Error *ignored = NULL;
        if (pod_network_describe(p->fd, &networks, &ignored) < 0)
                error_free(ignored);
        for (size_t i = 0; networks && i < json_object_array_length(networks); i++) {
                struct json_object *n = json_object_array_get_idx(networks, i), *a = json_object_object_get(n, "addresses");
                printf("network-%s=%s", json_object_get_string(json_object_object_get(n, "name")),
                       json_object_get_string(json_object_object_get(n, "interface")));
                for (size_t k = 0; k < json_object_array_length(a); k++)
                        printf(" %s", json_object_get_string(json_object_array_get_idx(a, k)));
                putchar('\n');
        }
        for (size_t i = 0; m && i < m->n_ports; i++) {
                const PodPort *port = &m->ports[i];
                bool v6 = port->host_ip && strchr(port->host_ip, ':');
                printf("port-%s=%s%s%s%s%u->%u/%s\n", port->name, v6 ? "[" : "", strempty(port->host_ip), v6 ? "]" : "",
                       port->host_ip ? ":" : "", port->host_port, port->pod_port, port->protocol);
        }
        for (size_t i = 0; i < info->n_apps; i++) {
                const PodAppExit *e = &info->apps[i];
                if (e->exited)
                        printf("app-%s=%d\n", e->name, e->exit_status);
                if (e->restarts)
                        printf("app-%s.restarts=%u\napp-%s.restart-exit-status=%d\n", e->name, e->restarts, e->name,
                               e->restart_exit_status);
                if (e->health)
                        printf("app-%s.health=%s\n", e->name, e->health);
        }
        if (info->manifest_error)
                printf("manifest-error=%s\n", info->manifest_error);
        if (blocked)
                printf("gc-blocked=%s\n", blocked);
        return fflush(stdout) == 0 ? EXIT_OK : EXIT_ERROR;
}

static const char status_usage[] =
        "Usage: sdpod status [--format=table|json] [--wait[=TIMEOUT]] POD\n"
        "\n"
        "Shows a pod's state, its creation, start and exit times, its user namespace\n"
        "(private-users=BASE:65536, or no), its stage1 flavor (stage1=nspawn, fly or kvm),\n"
        "its network (net=, and while it runs\n"
        "network-NAME=INTERFACE ADDRESS...), its published ports\n"
        "(port-NAME=[HOSTIP:]HOSTPORT->PODPORT/PROTOCOL) and the exit status of each\n"
        "app that has stopped, as KEY=VALUE lines (app-NAME=STATUS).\n"
        "UUID may be shortened to a unique prefix.\n"
        "\n"
        "  --format=json     one JSON object (see sdpod(1))\n"
        "  --wait[=TIMEOUT]  first wait until the pod has exited: a preparing or\n"
        "                    prepared pod until it has run and exited (or its\n"
        "                    preparation failed); a pod being deleted until it is\n"
        "                    gone (exit status 3). TIMEOUT is a duration (30s, 5m;\n"
        "                    write --wait=TIMEOUT; 0 waits for ever); when it\n"
        "                    passes, the status is printed and the exit status is 4.\n";

int verb_status(int argc, char **argv) {
        enum { OPT_WAIT = 0x100 };
        static const struct option options[] = {
                { "help", no_argument, NULL, 'h' },
                { "format", required_argument, NULL, 'f' },
                { "wait", optional_argument, NULL, OPT_WAIT },
                {},
        };
        OutputFormat format = FORMAT_TABLE;
        bool wait = false;
        uint64_t timeout = 0;
        int c, r;
        while ((c = getopt_long(argc, argv, "h", options, NULL)) >= 0)
                switch (c) {
                case 'h':
                        fputs(status_usage, stdout);
                        return EXIT_OK;
                case 'f':
                        if ((r = cli_parse_format(argv[0], optarg, &format)) != 0)
                                return r;
                        break;
                case OPT_WAIT:
                        wait = true;
                        if (optarg && parse_duration(optarg, &timeout) < 0)
                                return cli_usage_error(argv[0], "--wait=%s: not a duration (like 30s, 5m, 1h)", optarg);
                        break;
                default:
                        return cli_option_error(argv[0], "h", argc, argv);
                }
        if (optind != argc - 1)
                return cli_usage_error(argv[0], optind >= argc ? "missing POD (a pod's name, UUID or UUID prefix)" : "takes one POD");

        Error *err = NULL;
        _cleanup_pod_store_ PodStore *ps = NULL;
        _cleanup_pod_ Pod *p = NULL;
        if (cli_open_pod_to_read(argv[optind], &ps, &p, &err) < 0)
                return cli_fail(err);
        int status = EXIT_OK;
        if (wait && pod_wait(ps, p, timeout, &err) < 0) {
                if (err->code != -ETIMEDOUT)
                        return cli_fail(err);
                status = cli_fail(err); /* still show where it stands */
        }
        PodInfo info;
        if (pod_info_read(p, true, &info) < 0)
                return cli_fail(NULL);
        int s = print_status(p, &info, format);
        pod_info_done(&info);
        return status ? status : s;
}

static const char cat_manifest_usage[] =
        "Usage: sdpod cat-manifest POD\n"
        "\n"
        "Prints a pod's manifest as stored (see sdpod-manifest(5)).\n";

int verb_cat_manifest(int argc, char **argv) {
        int status, i = cli_parse_verb_options(argc, argv, cat_manifest_usage, NULL, NULL, &status);
        if (i < 0)
                return status;
        if (i != argc - 1)
                return cli_usage_error(argv[0], i >= argc ? "missing POD (a pod's name, UUID or UUID prefix)" : "takes one POD");
        Error *err = NULL;
        _cleanup_pod_store_ PodStore *ps = NULL;
        _cleanup_pod_ Pod *p = NULL;
        _cleanup_free_ char *data = NULL;
        size_t size;
        if (cli_open_pod_to_read(argv[i], &ps, &p, &err) < 0)
                return cli_fail(err);
        int r = read_file_at(p->fd, "pod", 16 << 20, &data, &size, &err);
        if (r == -ENOENT) {
                error_free(err);
                err = NULL;
                error_set(&err, r, "pod %s has no manifest yet (it is %s)", p->uuid, pod_state_to_string(p->state));
        } else if (r < 0)
                error_prefix(&err, "pod %s", p->uuid);
        if (r < 0)
                return cli_fail(err);
        return fwrite(data, 1, size, stdout) == size && fflush(stdout) == 0 ? EXIT_OK : EXIT_ERROR;
}

static const char journal_usage[] =
        "Usage: sdpod journal [--app=NAME] [--since=TIME] [--lines=N] [--follow] [--raw] POD [JOURNALCTL OPTIONS...]\n"
        "\n"
        "Shows a pod's journal with journalctl(1): what its apps wrote to stdout and\n"
        "stderr, and what its systemd logged. The journal is kept in the pod's\n"
        "directory, so it can be read while the pod runs and after it has exited,\n"
        "until the pod is removed. The options below may also come after the UUID;\n"
        "other options there go to journalctl (for example -o cat, --no-pager), and\n"
        "so does everything after a \"--\" there.\n"
        "\n"
        "  --app=NAME        only the app's own entries (unit app@NAME.service)\n"
        "  --since=TIME      entries from TIME on: \"2026-11-25 10:00[:00]\" (local\n"
        "                    time), 2026-11-25, 2026-11-25T10:00:00Z, today, yesterday,\n"
        "                    -1h or \"1h ago\", @SECONDS since the epoch\n"
        "  -n, --lines=N     only the last N entries (or all); with --since, the\n"
        "                    last N of those from TIME on\n"
        "  -f, --follow      then show new entries as they come, until the pod has\n"
        "                    exited (at once for a pod that is not running), as\n"
        "                    podman's logs -f\n"
        "  --follow=always   until interrupted, as journalctl -f: also the entries\n"
        "                    of a pod that is run again (run-prepared)\n"
        "  --raw             the pod's bytes as they are; by default what is not\n"
        "                    printable text (escape sequences, other control\n"
        "                    characters, bad UTF-8) is shown as \\xNN, so that a pod\n"
        "                    cannot drive the terminal (json and export output is\n"
        "                    always as journalctl writes it)\n";

typedef struct JournalArgs {
        const char *app;
        char *since;            /* journalctl's --since=@SECONDS */
        char *lines;            /* journalctl's --lines=N */
        uint64_t n_lines;       /* --lines=N: N, or UINT64_MAX for all */
        bool follow;
        bool follow_always;     /* --follow=always: not ended by the pod's exit */
        bool raw;
} JournalArgs;

static void journal_args_done(JournalArgs *a) {
        free(a->since);
        free(a->lines);
}

/* One of sdpod journal's own options, with its value: 0, or the usage
 * error's exit status. */
static int journal_option(const char *command, int c, const char *value, JournalArgs *a) {
        uint64_t v;
        switch (c) {
        case 'a':
                a->app = value;
                return 0;
        case 's':
                if (journal_since_parse(value, now_usec(), &v) < 0)
                        return cli_usage_error(command, "--since=%s: not a time (like \"2026-11-25 10:00\", today, yesterday, -1h, "
                                               "\"10m ago\", @1764000000)", value);
                free(a->since);
                a->since = NULL;
                if (asprintf(&a->since, "--since=@%llu", (unsigned long long) (v / USEC_PER_SEC)) < 0)
                        a->since = NULL;
                return a->since ? 0 : cli_fail(NULL);
        case 'n':
                if (journal_lines_parse(value, &v) < 0)
                        return cli_usage_error(command, "--lines=%s: not a number of lines (a number, or all)", value);
                free(a->lines);
                a->lines = NULL;
                a->n_lines = v;
                if (asprintf(&a->lines, "--lines=%s", value) < 0)
                        a->lines = NULL;
                return a->lines ? 0 : cli_fail(NULL);
        case 'f':
                if (value && !streq(value, "always"))
                        return cli_usage_error(command, "--follow=%s: expected --follow (until the pod exits) or "
                                               "--follow=always", value);
                a->follow = true;
                a->follow_always = value != NULL;
                return 0;
        case 'F':
                a->follow = a->follow_always = true;
                return 0;
        case 'r':
                a->raw = true;
                return 0;
        }
        return EXIT_USAGE;
}

/* Which of our options arg is after the UUID ('a', 's', 'n', 'f'), and its value:
 * in arg ("--since=X", "-n5"), or the next argument ("--since X", "-n 5"),
 * which *consumed says. 0: journalctl's. */
static int journal_option_after_uuid(char **argv, int i, int argc, const char **ret_value, int *consumed) {
        static const struct {
                const char *name;
                int c;
                bool has_value;
        } table[] = {
                { "--app", 'a', true }, { "--since", 's', true }, { "--lines", 'n', true }, { "-n", 'n', true },
                { "--follow=always", 'F', false }, { "--follow", 'f', false }, { "-f", 'f', false },
                { "--raw", 'r', false },
        };
        const char *arg = argv[i];
        *consumed = 1;
        for (size_t k = 0; k < ELEMENTSOF(table); k++) {
                const char *rest = startswith(arg, table[k].name);
                if (!rest)
                        continue;
                if (!table[k].has_value) {
                        if (*rest)
                                continue;
                        *ret_value = NULL;
                        return table[k].c;
                }
                if (*rest == '=' && table[k].name[1] == '-')
                        *ret_value = rest + 1;
                else if (*rest && table[k].name[1] != '-')
                        *ret_value = rest; /* -n5 */
                else if (*rest)
                        continue;
                else if (i + 1 < argc) {
                        *ret_value = argv[i + 1];
                        *consumed = 2;
                } else
                        *ret_value = NULL;
                return table[k].c;
        }
        return 0;
}

int verb_journal(int argc, char **argv) {
        static const struct option options[] = {
                { "help", no_argument, NULL, 'h' },
                { "app", required_argument, NULL, 'a' },
                { "since", required_argument, NULL, 's' },
                { "lines", required_argument, NULL, 'n' },
                { "follow", optional_argument, NULL, 'f' },
                { "raw", no_argument, NULL, 'r' },
                {},
        };
        _cleanup_(journal_args_done) JournalArgs a = {};
        int c, status;
        /* "+": the UUID ends these; what follows is sorted out below. */
        while ((c = getopt_long(argc, argv, "+hn:f", options, NULL)) >= 0)
                switch (c) {
                case 'h':
                        fputs(journal_usage, stdout);
                        return EXIT_OK;
                case 'a':
                case 's':
                case 'n':
                case 'f':
                case 'r':
                        if ((status = journal_option(argv[0], c, optarg, &a)) != 0)
                                return status;
                        break;
                default:
                        return cli_option_error(argv[0], "+hn:f", argc, argv);
                }
        if (optind >= argc)
                return cli_usage_error(argv[0], "missing POD (a pod's name, UUID or UUID prefix)");
        const char *uuid = argv[optind];

        /* After the UUID: ours are checked and taken out, the rest is
         * journalctl's, as it always was. */
        _cleanup_free_ char **rest = calloc((size_t) argc + 4, sizeof(char *));
        if (!rest)
                return cli_fail(NULL);
        size_t n = 0;
        for (int i = optind + 1; i < argc;) {
                const char *value;
                int consumed;
                if (streq(argv[i], "--")) {
                        while (++i < argc)
                                rest[n++] = argv[i];
                        break;
                }
                c = journal_option_after_uuid(argv, i, argc, &value, &consumed);
                if (c == 0) {
                        rest[n++] = argv[i++];
                        continue;
                }
                if (c != 'f' && c != 'F' && c != 'r' && !value)
                        return cli_usage_error(argv[0], "option \"%s\" needs a value", argv[i]);
                if ((status = journal_option(argv[0], c, value, &a)) != 0)
                        return status;
                i += consumed;
        }
        Error *err = NULL;
        _cleanup_pod_store_ PodStore *ps = NULL;
        _cleanup_pod_ Pod *p = NULL;
        if (cli_open_pod_to_read(uuid, &ps, &p, &err) < 0)
                return cli_fail(err);
        _cleanup_free_ char *cursor = NULL, *cursor_arg = NULL;
        if (a.since)
                rest[n++] = a.since;
        if (a.since && a.lines && a.n_lines != UINT64_MAX) {
                /* journalctl 252 shows the first N from TIME: it starts
                 * at the oldest of the last N instead. */
                if (pod_journal_cursor_of_last(ps, p, a.app, rest, a.n_lines, &cursor, &err) < 0)
                        return cli_fail(err);
                if (cursor && asprintf(&cursor_arg, "--cursor=%s", cursor) < 0)
                        return cli_fail(NULL);
                if (cursor_arg)
                        rest[n - 1] = cursor_arg;
        } else if (a.lines)
                rest[n++] = a.lines;
        if (a.follow)
                rest[n++] = "--follow";
        int r = pod_journal_follow(ps, p, a.app, rest, a.raw, a.follow && !a.follow_always, &err);
        return r < 0 ? cli_fail(err) : r;
}

static const char logs_usage[] =
        "Usage: sdpod logs [-f] [--since=TIME] [--tail=N] [--app=NAME] POD [JOURNALCTL OPTIONS...]\n"
        "\n"
        "podman's name for 'sdpod journal' (see 'sdpod journal --help'), with\n"
        "podman's flags where they map; the others are journal's.\n"
        "\n"
        "  -f, --follow      follow the journal until the pod exits\n"
        "  --since=TIME      entries from TIME on\n"
        "  --tail=N          the last N entries (journal's -n, --lines)\n"
        "  --app=NAME        only the app's entries\n"
        "  -t, --timestamps  accepted: the journal's lines have their times\n";

int verb_logs(int argc, char **argv) {
        if (cli_wants_help(argc, argv)) {
                fputs(logs_usage, stdout);
                return EXIT_OK;
        }
        /* podman's flags rewritten to journal's; argv keeps its strings. */
        _cleanup_free_ char **args = calloc((size_t) argc + 1, sizeof(char *));
        _cleanup_strv_free_ char **made = NULL;
        if (!args)
                return cli_fail(NULL);
        int n = 0;
        for (int i = 0; i < argc; i++) {
                const char *v;
                if (i > 0 && (streq(argv[i], "-t") || streq(argv[i], "--timestamps")))
                        continue;
                if (i > 0 && streq(argv[i], "--"))
                        for (; i < argc; i++)
                                args[n++] = argv[i];
                else if (i > 0 && (v = startswith(argv[i], "--tail="))) {
                        _cleanup_free_ char *l = NULL;
                        if (asprintf(&l, "--lines=%s", v) < 0 || strv_push(&made, l) < 0)
                                return cli_fail(NULL);
                        args[n++] = made[strv_length(made) - 1];
                } else if (i > 0 && streq(argv[i], "--tail"))
                        args[n++] = "--lines";
                else
                        args[n++] = argv[i];
        }
        return verb_journal(n, args);
}

static const char rm_usage[] =
        "Usage: sdpod rm POD...\n"
        "\n"
        "Removes pods now: exited, prepared and failed ones (a running pod must\n"
        "exit first). Prints the UUID of each pod removed; exits with the status\n"
        "of the first failure.\n";

int verb_rm(int argc, char **argv) {
        int status, i = cli_parse_verb_options(argc, argv, rm_usage, NULL, NULL, &status);
        if (i < 0)
                return status;
        if (i >= argc)
                return cli_usage_error(argv[0], "missing POD (a pod's name, UUID or UUID prefix)");
        Error *err = NULL;
        _cleanup_pod_store_ PodStore *ps = NULL;
        if (cli_open_pods(&ps, &err) < 0)
                return cli_fail(err);
        status = EXIT_OK;
        for (; i < argc; i++) {
                _cleanup_pod_ Pod *p = NULL;
                if (pod_resolve(ps, argv[i], &p, &err) < 0 || pod_remove(ps, p, &err) < 0) {
                        int s = cli_fail(err);
                        status = status ?: s; /* the first failure's, as image rm */
                        err = NULL;
                        continue;
                }
                puts(p->uuid);
        }
        return status;
}

static const char gc_usage[] =
        "Usage: sdpod gc [--grace-period=DURATION] [--expire-prepared=DURATION] [--mark-only]\n"
        "\n"
        "Collects garbage, in two passes. Mark: exited pods move to exited-garbage,\n"
        "failed preparations and expired prepared pods to garbage. Sweep: pods in\n"
        "garbage are deleted, and those in exited-garbage once the grace period\n"
        "since their marking has passed (sdpod status still shows them until then).\n"
        "Each deletion runs the pod's stage1 gc entrypoint and unmounts everything\n"
        "below the pod first. Pods busy in another process are left for next time.\n"
        "\n"
        "  --grace-period=DURATION     (default 30m)\n"
        "  --expire-prepared=DURATION  prepared pods older than this are collected\n"
        "                              (default 24h; 0 never)\n"
        "  --mark-only                 only the mark pass\n";

int verb_gc(int argc, char **argv) {
        enum { OPT_GRACE = 0x100, OPT_EXPIRE, OPT_MARK_ONLY };
        static const struct option options[] = {
                { "help", no_argument, NULL, 'h' },
                { "grace-period", required_argument, NULL, OPT_GRACE },
                { "expire-prepared", required_argument, NULL, OPT_EXPIRE },
                { "mark-only", no_argument, NULL, OPT_MARK_ONLY },
                {},
        };
        PodGcOptions o = {
                .grace_usec = 30 * 60 * USEC_PER_SEC,
                .expire_prepared_usec = 24 * 3600 * USEC_PER_SEC,
                /* An embryo lives for microseconds; one this old lost its creator. */
                .embryo_age_usec = 10 * 60 * USEC_PER_SEC,
        };
        int c;
        while ((c = getopt_long(argc, argv, "h", options, NULL)) >= 0)
                switch (c) {
                case 'h':
                        fputs(gc_usage, stdout);
                        return EXIT_OK;
                case OPT_GRACE:
                case OPT_EXPIRE:
                        if (parse_duration(optarg, c == OPT_GRACE ? &o.grace_usec : &o.expire_prepared_usec) < 0)
                                return cli_usage_error(argv[0], "--%s=%s: not a duration (like 30s, 5m, 24h)",
                                                       c == OPT_GRACE ? "grace-period" : "expire-prepared", optarg);
                        break;
                case OPT_MARK_ONLY:
                        o.mark_only = true;
                        break;
                default:
                        return cli_option_error(argv[0], "h", argc, argv);
                }
        if (optind != argc)
                return cli_usage_error(argv[0], "takes no arguments");

        Error *err = NULL;
        _cleanup_pod_store_ PodStore *ps = NULL;
        PodGcStats st;
        if (cli_open_pods(&ps, &err) < 0 || pod_gc(ps, &o, &st, &err) < 0 ||
            pod_names_index_prune(ps, &err) < 0)
                return cli_fail(err);
        printf("marked %u exited and %u failed pods, expired %u prepared pods, removed %u pods",
               st.marked_exited, st.marked_failed, st.expired_prepared, st.removed);
        if (st.busy)
                printf(", %u busy (left for the next gc)", st.busy);
        if (st.failed)
                printf(", %u could not be removed", st.failed);
        printf("\n");
        return st.failed ? EXIT_ERROR : EXIT_OK;
}
