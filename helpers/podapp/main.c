/* SPDX-License-Identifier: Apache-2.0 */
/* podapp: the apps of running pods, one at a time (seed 002; podapp(1)).
 * The logic is lib/app/pod-app.c's; this file is the command line. */
#include <getopt.h>

#include "app/pod-app.h"
#include "basic/json-util.h"
#include "basic/macro.h"
#include "basic/time-util.h"
#include "cli/cli.h"
#include "cli/pull-view.h"
#include "config.h"
#include "manifest/app-args.h"
#include "pod/pod-launch.h"
#include "pod/pod-prepare.h"
#include "pod/stage1.h"

static const char usage[] =
        "Usage: podapp [--dir=PATH] [--debug] COMMAND [ARGS...]\n"
        "\n"
        "Adds, starts, stops and removes the apps of a running pod.\n"
        "\n"
        "Commands:\n"
        "  sandbox  start an empty mutable pod; prints its UUID\n"
        "  add      add an app to a running pod\n"
        "  start    start an app\n"
        "  stop     stop an app (it stays in the pod)\n"
        "  rm       stop an app and remove it from the pod\n"
        "  list     list a pod's apps and their states\n"
        "  status   show one app's state, times and exit code\n"
        "  exec     run a command in a running app, as the app\n"
        "\n"
        "Global options:\n"
        "  --dir=PATH  data directory (default: $SDPOD_DIR, or " SDPOD_DEFAULT_DIR ")\n"
        "  --debug     print more detail on errors\n"
        "  --help      show this help\n"
        "  --version   show the version\n"
        "\n"
        "Run 'podapp COMMAND --help' for a command's options. See podapp(1).\n";

static int usage_error_from(const char *command, Error *err) {
        int status = cli_usage_error(command, "%s", err ? err->msg : strerror(ENOMEM));
        error_free(err);
        return status;
}

static const char sandbox_usage[] =
        "Usage: podapp sandbox [--name=NAME] [--volume=SPEC]... [--keep-on-app-failure]\n"
        "                      [--private-users=yes|no] [--pod-stop-timeout=DURATION]\n"
        "                      [--pod-watchdog=DURATION] [--pod-pids-limit=N]\n"
        "                      [--pod-memory=QUANTITY] [--pod-cpus=CPUS]\n"
        "                      [NETWORK OPTIONS]\n"
        "\n"
        "Prepares a mutable pod with no apps, starts it (as pod@UUID.service when\n"
        "the host runs systemd with sdpod installed, otherwise as a detached\n"
        "process), waits until it is ready and prints its UUID. Apps are then added\n"
        "with 'podapp add'. An app that fails halts the pod, unless\n"
        "--keep-on-app-failure is given.\n"
        "\n"
        "  --name=NAME            the pod's machine name (default sdpod-UUID)\n"
        "  --volume=SPEC          a volume the apps can mount, as for 'sdpod prepare':\n"
        "                         NAME,kind=host,source=PATH[,readOnly=true] or\n"
        "                         NAME,kind=empty\n"
        "  --keep-on-app-failure  a failed app does not halt the pod\n"
        "  --private-users=no     no user namespace: root in the pod is root on the\n"
        "                         host (see sdpod-security(7))\n"
        "  --pod-stop-timeout=DURATION\n"
        "                         every app's stop timeout unless it has its own\n"
        "  --pod-watchdog=DURATION\n"
        "                         kill the pod when its systemd has not answered\n"
        "                         for that long\n"
        "  --pod-pids-limit=N     at most N tasks in the whole pod (default 4096)\n"
        "  --pod-memory=QUANTITY  the memory of the whole pod (\"512Mi\"; default none)\n"
        "  --pod-cpus=CPUS        the CPU time of the whole pod (\"1.5\"; default none)\n"
        "  --stage1=nspawn|PATH   the stage1 image (sdpod-stage1(7)); the fly and kvm\n"
        "                         flavors are refused here\n"
        "\n"
        "Network options, as for 'sdpod prepare' (sdpod(1) NETWORKING); every app\n"
        "added later joins the pod's network:\n"
        "  --net=default|none|host|ns:PATH|NAME[:KEY=VALUE;...][,NAME...]\n"
        "  --port=[HOSTIP:]HOSTPORT:PODPORT[/tcp|/udp]\n"
        "  --dns=IP|host\n"
        "  --dns-search=DOMAIN\n"
        "  --dns-option=OPTION\n"
        "  --hostname=NAME\n"
        "  --hosts-entry=IP=NAME\n"
        "  --conntrack-limit=N\n";

static int verb_sandbox(int argc, char **argv) {
        static const struct option options[] = {
                { "help", no_argument, NULL, 'h' },
                { "name", required_argument, NULL, 'n' },
                { "volume", required_argument, NULL, 'v' },
                { "keep-on-app-failure", no_argument, NULL, 'k' },
                { "private-users", required_argument, NULL, 'u' },
                { "pod-stop-timeout", required_argument, NULL, 't' },
                { "pod-watchdog", required_argument, NULL, 't' },
                { "pod-pids-limit", required_argument, NULL, 't' },
                { "pod-memory", required_argument, NULL, 't' },
                { "pod-cpus", required_argument, NULL, 't' },
                { "stage1", required_argument, NULL, 'S' },
                { "net", required_argument, NULL, 'N' },
                { "port", required_argument, NULL, 'N' },
                { "dns", required_argument, NULL, 'N' },
                { "dns-search", required_argument, NULL, 'N' },
                { "dns-option", required_argument, NULL, 'N' },
                { "hostname", required_argument, NULL, 'N' },
                { "hosts-entry", required_argument, NULL, 'N' },
                { "conntrack-limit", required_argument, NULL, 'N' },
                {},
        };
        /* Declared before the first goto: their cleanup runs at "out". */
        _cleanup_pod_store_ PodStore *ps = NULL;
        _cleanup_image_store_ ImageStore *is = NULL;
        _cleanup_pod_ Pod *p = NULL;
        PodArgs args = { .mutable_pod = true };
        Error *err = NULL;
        int c, index = 0, status = EXIT_OK;
        while ((c = getopt_long(argc, argv, "h", options, &index)) >= 0) {
                switch (c) {
                case 'h':
                        fputs(sandbox_usage, stdout);
                        goto out;
                case 'N':
                        if (pod_net_args_add(&args.net, options[index].name, optarg, &err) < 0) {
                                status = usage_error_from(argv[0], err);
                                goto out;
                        }
                        break;
                case 'n':
                        free(args.name);
                        args.name = strdup(optarg);
                        break;
                case 'v': {
                        VolumeArg v;
                        VolumeArg *vs = reallocarray(args.volumes, args.n_volumes + 1, sizeof(VolumeArg));
                        if (!vs) {
                                status = cli_fail(NULL);
                                goto out;
                        }
                        args.volumes = vs;
                        if (volume_arg_parse(optarg, &v, &err) < 0) {
                                status = usage_error_from(argv[0], err);
                                goto out;
                        }
                        args.volumes[args.n_volumes++] = v;
                        break;
                }
                case 'k':
                        args.keep_on_app_failure = true;
                        break;
                case 'u':
                        if (private_users_arg_parse(optarg, &args, &err) < 0) {
                                status = usage_error_from(argv[0], err);
                                goto out;
                        }
                        break;
                case 'S':
                        /* Checked by pod_prepare() (pod/stage1.h). */
                        free(args.stage1);
                        args.stage1 = strdup(optarg);
                        break;
                case 't':
                        if (pod_lifecycle_arg_parse(options[index].name, optarg, &args, &err) < 0) {
                                status = usage_error_from(argv[0], err);
                                goto out;
                        }
                        break;
                default:
                        status = cli_option_error(argv[0], "h", argc, argv);
                        goto out;
                }
        }
        if (optind < argc) {
                status = cli_usage_error(argv[0], "unexpected argument \"%s\" (apps come with 'podapp add')", argv[optind]);
                goto out;
        }

        if (cli_open_pods(&ps, &err) < 0 ||
            image_store_open(cli.dir, cli.dir_is_default, STORE_SHARED, &is, &err) < 0 ||
            pod_prepare(ps, is, &args, POD_DIR_PREPARED, &p, &err) < 0) {
                status = cli_fail(err);
                goto out;
        }
        char uuid[UUID_STRING_MAX];
        if (pod_launch_prepared(ps, &p, uuid, NULL, &err) < 0) {
                status = cli_fail(err);
                goto out;
        }
        puts(uuid);
out:
        pod_args_done(&args);
        return status;
}

static const char add_usage[] =
        "Usage: podapp add POD --app=NAME IMAGE|--rootfs=DIR [APP OPTIONS] [-- ARGS...]\n"
        "\n"
        "Adds an app to a running mutable pod (made with 'podapp sandbox' or\n"
        "'sdpod run --mutable'): renders\n"
        "its root from IMAGE (or binds the host directory DIR), makes it visible in\n"
        "the pod and has the pod's systemd load its units. The app is then prepared;\n"
        "'podapp start' runs it.\n"
        "\n"
        "  --app=NAME              the app's name (lowercase letters, digits, '-'); required\n"
        "  --rootfs=DIR            the app's root is the host directory DIR, as it is\n"
        "                          (no image; its changes land in DIR; with a user\n"
        "                          namespace DIR must belong to the pod's root)\n"
        "  --stdin=PATH            the app's standard input, output and error: host\n"
        "  --stdout=PATH           files or FIFOs (default: no input, and the pod's\n"
        "  --stderr=PATH           journal)\n"
        "  --bind=SOURCE:DESTINATION[:ro]\n"
        "                          bind the host's SOURCE at DESTINATION in the app\n"
        "                          (all of these as host volumes: host owners kept,\n"
        "                          never idmapped, nodev; nosuid but --rootfs)\n"
        "  --supplementary-groups=GID[,GID...]\n"
        "                          more groups of the app, by number\n"
        "  --rlimit=NAME=SOFT[:HARD]\n"
        "                          a resource limit (nofile, nproc, core...; a number\n"
        "                          or infinity)\n"
        "  --no-new-privileges=no  let set-user-id programs raise the app's privileges\n"
        "\n"
        CLI_PULL_OPTIONS_HELP
        "App options, as for 'sdpod prepare':\n" CLI_APP_OPTIONS_HELP
        "  -- ARGS...              the app's arguments (replace the image's command)\n";

static int verb_add(int argc, char **argv) {
        if (cli_wants_help(argc, argv)) {
                fputs(add_usage, stdout);
                return EXIT_OK;
        }
        if (argc < 2 || startswith(argv[1], "-"))
                return cli_usage_error(argv[0], "the pod's UUID comes first");
        _cleanup_pod_store_ PodStore *ps = NULL;
        _cleanup_image_store_ ImageStore *is = NULL;
        _cleanup_pod_ Pod *p = NULL;
        Error *err = NULL;
        PodArgs args = {};
        if (pod_args_parse(argc - 2, argv + 2, false, &args, &err) < 0)
                return usage_error_from(argv[0], err);
        int status = EXIT_OK;
        if (args.n_apps != 1) {
                status = cli_usage_error(argv[0], "adds one app at a time");
                goto out;
        }
        if (!args.apps[0].name) {
                status = cli_usage_error(argv[0], "the app needs a name: --app=NAME");
                goto out;
        }
        if (cli_open_pod(argv[1], &ps, &p, &err) < 0 ||
            image_store_open(cli.dir, cli.dir_is_default, STORE_SHARED, &is, &err) < 0 ||
            cli_pull_images(is, &args, &err) < 0 || pod_app_add(ps, p, is, &args.apps[0], &err) < 0)
                status = cli_fail(err);
out:
        pod_args_done(&args);
        return status;
}

/* The command line of start, stop, rm, list and status: UUID and options. */
typedef struct AppVerbArgs {
        const char *uuid;
        const char *app;
        uint64_t grace_usec;
        OutputFormat format;
        bool legend;
} AppVerbArgs;

enum {
        WANT_APP = 1 << 0,
        WANT_GRACE = 1 << 1,
        WANT_FORMAT = 1 << 2,
};

/* Returns -1 when the verb is done, with its status in *ret_status. */
static int parse_app_verb(int argc, char **argv, const char *verb_usage, unsigned want, AppVerbArgs *ret,
                          int *ret_status) {
        static const struct option options[] = {
                { "help", no_argument, NULL, 'h' },
                { "app", required_argument, NULL, 'a' },
                { "grace", required_argument, NULL, 'g' },
                { "format", required_argument, NULL, 'f' },
                { "no-legend", no_argument, NULL, 'L' },
                {},
        };
        *ret = (AppVerbArgs) { .grace_usec = APP_GRACE_OWN, .legend = true };
        int c;
        while ((c = getopt_long(argc, argv, "h", options, NULL)) >= 0) {
                bool allowed = (c == 'a' && (want & WANT_APP)) || (c == 'g' && (want & WANT_GRACE)) ||
                        ((c == 'f' || c == 'L') && (want & WANT_FORMAT)) || c == 'h';
                if (c == '?') {
                        *ret_status = cli_option_error(argv[0], "h", argc, argv);
                        return -1;
                }
                if (!allowed) {
                        /* Another podapp command's option. */
                        *ret_status = cli_usage_error(argv[0], "unknown option \"%.*s\": it is not one of this command's",
                                                      (int) strcspn(argv[optind - 1], "="), argv[optind - 1]);
                        return -1;
                }
                switch (c) {
                case 'h':
                        fputs(verb_usage, stdout);
                        *ret_status = EXIT_OK;
                        return -1;
                case 'a':
                        ret->app = optarg;
                        break;
                case 'g':
                        if (parse_duration(optarg, &ret->grace_usec) < 0) {
                                *ret_status = cli_usage_error(argv[0], "--grace=%s: not a duration (\"5s\", \"500ms\")", optarg);
                                return -1;
                        }
                        break;
                case 'f':
                        if ((*ret_status = cli_parse_format(argv[0], optarg, &ret->format)) != 0)
                                return -1;
                        break;
                case 'L':
                        ret->legend = false;
                        break;
                }
        }
        if (optind != argc - 1) {
                *ret_status = cli_usage_error(argv[0], optind >= argc ? "missing POD (a pod's name, UUID or UUID prefix)" : "takes one POD");
                return -1;
        }
        ret->uuid = argv[optind];
        if ((want & WANT_APP) && !ret->app) {
                *ret_status = cli_usage_error(argv[0], "which app? --app=NAME");
                return -1;
        }
        return 0;
}

static const char start_usage[] =
        "Usage: podapp start POD --app=NAME\n"
        "\n"
        "Starts an app that was added (or stopped) and returns once it runs. An app\n"
        "that runs already is left alone. An app whose program ran has started, even\n"
        "if it has exited already ('podapp status' shows how); the start fails when\n"
        "systemd could not execute the program.\n";

static const char stop_usage[] =
        "Usage: podapp stop POD --app=NAME [--grace=DURATION]\n"
        "\n"
        "Stops an app: its pre-stop hook and SIGTERM, then SIGKILL when it has not\n"
        "exited after the grace period; returns once its exit status is recorded.\n"
        "The app stays in the pod ('podapp start' runs it again, 'podapp rm' removes\n"
        "it), and the pod runs on.\n"
        "\n"
        "  --grace=DURATION  how long the app has to exit (default and most: the\n"
        "                    app's stop timeout, 10s unless it has one)\n";

static const char rm_usage[] =
        "Usage: podapp rm POD --app=NAME [--grace=DURATION]\n"
        "\n"
        "Stops the app if it runs (as 'podapp stop' does) and removes it from the pod\n"
        "with everything it had: its root and its changes to it, its units and its\n"
        "exit status. The pod runs on.\n"
        "\n"
        "  --grace=DURATION  how long the app has to exit (default and most: the\n"
        "                    app's stop timeout, 10s unless it has one)\n";

static int run_app_op(int argc, char **argv, const char *verb_usage, unsigned want,
                      int (*op)(PodStore *ps, Pod *p, const AppVerbArgs *a, Error **err)) {
        AppVerbArgs a;
        int status;
        if (parse_app_verb(argc, argv, verb_usage, want, &a, &status) < 0)
                return status;
        Error *err = NULL;
        _cleanup_pod_store_ PodStore *ps = NULL;
        _cleanup_pod_ Pod *p = NULL;
        if (cli_open_pod(a.uuid, &ps, &p, &err) < 0 || op(ps, p, &a, &err) < 0)
                return cli_fail(err);
        return EXIT_OK;
}

static int op_start(PodStore *ps, Pod *p, const AppVerbArgs *a, Error **err) {
        return pod_app_start(ps, p, a->app, err);
}

static int op_stop(PodStore *ps, Pod *p, const AppVerbArgs *a, Error **err) {
        return pod_app_stop(ps, p, a->app, a->grace_usec, err);
}

static int op_rm(PodStore *ps, Pod *p, const AppVerbArgs *a, Error **err) {
        return pod_app_rm(ps, p, a->app, a->grace_usec, err);
}

static int verb_start(int argc, char **argv) {
        return run_app_op(argc, argv, start_usage, WANT_APP, op_start);
}

static int verb_stop(int argc, char **argv) {
        return run_app_op(argc, argv, stop_usage, WANT_APP | WANT_GRACE, op_stop);
}

static int verb_rm(int argc, char **argv) {
        return run_app_op(argc, argv, rm_usage, WANT_APP | WANT_GRACE, op_rm);
}

static struct json_object *status_json(const AppStatus *s) {
        struct json_object *o = json_object_new_object();
        if (!o || json_add_string(o, "name", s->name) < 0 ||
            json_add_string(o, "state", app_state_to_string(s->state)) < 0 ||
            cli_json_add_time(o, "created", s->created_usec) < 0 || cli_json_add_time(o, "started", s->started_usec) < 0 ||
            cli_json_add_time(o, "exited", s->exited_usec) < 0 ||
            json_object_object_add(o, "exit_status", s->exited ? json_object_new_int(s->exit_status) : NULL) < 0 ||
            json_object_object_add(o, "restarts", json_object_new_int((int) s->restarts)) < 0 ||
            json_object_object_add(o, "restart_exit_status", s->restarts ? json_object_new_int(s->restart_exit_status) : NULL) < 0 ||
            json_object_object_add(o, "health", s->health ? json_object_new_string(s->health) : NULL) < 0) {
                json_object_put(o);
                return NULL;
        }
        return o;
}

static const char list_usage[] =
        "Usage: podapp list POD [--format=table|json] [--no-legend]\n"
        "\n"
        "Lists the apps of a pod with their states (prepared, running, stopping,\n"
        "exited, deleting; unknown for an app of a pod that ended without a record of\n"
        "it), times and exit codes.\n";

static int verb_list(int argc, char **argv) {
        AppVerbArgs a;
        int status;
        if (parse_app_verb(argc, argv, list_usage, WANT_FORMAT, &a, &status) < 0)
                return status;
        Error *err = NULL;
        _cleanup_pod_store_ PodStore *ps = NULL;
        _cleanup_pod_ Pod *p = NULL;
        AppStatus *apps = NULL;
        size_t n = 0;
        if (cli_open_pod(a.uuid, &ps, &p, &err) < 0 || pod_app_list(ps, p, &apps, &n, &err) < 0)
                return cli_fail(err);
        status = EXIT_OK;
        if (a.format == FORMAT_JSON) {
                struct json_object *arr = json_object_new_array();
                for (size_t i = 0; arr && i < n; i++) {
                        struct json_object *o = status_json(&apps[i]);
                        if (!o || json_object_array_add(arr, o) < 0) {
                                json_object_put(o);
                                json_object_put(arr);
                                arr = NULL;
                        }
                }
                status = arr ? (cli_print_json(arr) < 0 ? EXIT_ERROR : EXIT_OK) : cli_fail(NULL);
                json_object_put(arr);
        } else {
                _cleanup_(table_freep) Table *t = table_new(7, "APP", "STATE", "CREATED", "STARTED", "EXITED", "EXIT",
                                                            "RESTARTS");
                for (size_t i = 0; t && i < n; i++) {
                        char c[32], s[32], f[32], code[16], restarts[16];
                        snprintf(code, sizeof(code), "%d", apps[i].exit_status);
                        snprintf(restarts, sizeof(restarts), "%u", apps[i].restarts);
                        if (table_add_row(t, apps[i].name, app_state_to_string(apps[i].state),
                                          cli_table_time(apps[i].created_usec, c), cli_table_time(apps[i].started_usec, s),
                                          cli_table_time(apps[i].exited_usec, f),
                                          apps[i].exited ? code : NULL, restarts) < 0)
                                status = cli_fail(NULL);
                }
                if (!t)
                        status = cli_fail(NULL);
                else if (status == EXIT_OK)
                        table_print(t, a.legend);
        }
        for (size_t i = 0; i < n; i++)
                app_status_done(&apps[i]);
        free(apps);
        return status;
}

static const char status_usage[] =
        "Usage: podapp status POD --app=NAME [--format=table|json]\n"
        "\n"
        "Shows an app's state (preparing, prepared, running, stopping, exited,\n"
        "deleting, unknown), when it was added, started and finished, and its exit\n"
        "code once it has exited.\n";

static int verb_status(int argc, char **argv) {
        AppVerbArgs a;
        int status;
        if (parse_app_verb(argc, argv, status_usage, WANT_APP | WANT_FORMAT, &a, &status) < 0)
                return status;
        Error *err = NULL;
        _cleanup_pod_store_ PodStore *ps = NULL;
        _cleanup_pod_ Pod *p = NULL;
        _cleanup_(app_status_done) AppStatus s = {};
        if (cli_open_pod(a.uuid, &ps, &p, &err) < 0 || pod_app_status(ps, p, a.app, &s, &err) < 0)
                return cli_fail(err);
        if (a.format == FORMAT_JSON) {
                struct json_object *o = status_json(&s);
                status = o ? (cli_print_json(o) < 0 ? EXIT_ERROR : EXIT_OK) : cli_fail(NULL);
                json_object_put(o);
                return status;
        }
        /* The layout of sdpod status: KEY=VALUE lines, a key only when
         * its value is known. */
        char ts[32];
        printf("name=%s\nstate=%s\n", s.name, app_state_to_string(s.state));
        if (s.created_usec && (format_timestamp(s.created_usec, ts), true))
                printf("created=%s\n", ts);
        if (s.started_usec && (format_timestamp(s.started_usec, ts), true))
                printf("started=%s\n", ts);
        if (s.exited_usec && (format_timestamp(s.exited_usec, ts), true))
                printf("exited=%s\n", ts);
        if (s.exited)
                printf("exit-status=%d\n", s.exit_status);
        if (s.restarts)
                printf("restarts=%u\nrestart-exit-status=%d\n", s.restarts, s.restart_exit_status);
        if (s.health)
                printf("health=%s\n", s.health);
        return EXIT_OK;
}

static const char exec_usage[] =
        "Usage: podapp exec POD --app=NAME [-t] [-i] [--] COMMAND [ARGS...]\n"
        "\n"
        "Runs COMMAND in a running app: as its user and group, in its root and\n"
        "working directory, with its environment and confinement: the pod's\n"
        "systemd starts it as a unit with the app's settings (sdpod-security(7)).\n"
        "It gets podapp's standard input, output and error (nothing else of its),\n"
        "but never a terminal of the caller's: a terminal is relayed through a\n"
        "pipe, and input from a terminal is /dev/null without -i. Ctrl-C reaches\n"
        "COMMAND. The exit status is COMMAND's (127: not found, 126: not\n"
        "executable or not run).\n"
        "\n"
        "  --app=NAME         the app\n"
        "  -t, --tty          run COMMAND on a new terminal of the pod's, relayed\n"
        "                     to podapp's: of the caller's size, resized with it;\n"
        "                     stdout and stderr both go to it\n"
        "  -i, --interactive  pass input on when it is a terminal (with -t: typed\n"
        "                     keys, the caller's terminal in raw mode meanwhile,\n"
        "                     so Ctrl-C and Ctrl-Z reach COMMAND's terminal)\n";

static int verb_exec(int argc, char **argv) {
        const char *app;
        unsigned flags;
        int status, i = cli_parse_enter_options(argc, argv, exec_usage, false, &app, &flags, &status);
        if (i < 0)
                return status;
        /* getopt moved the operands after the options: UUID, then the
         * command, which "--" announced. */
        if (!app)
                return cli_usage_error(argv[0], "which app? --app=NAME");
        if (i + 1 >= argc)
                return cli_usage_error(argv[0], "missing the command: -- COMMAND [ARGS...]");
        Error *err = NULL;
        _cleanup_pod_store_ PodStore *ps = NULL;
        _cleanup_pod_ Pod *p = NULL;
        if (cli_open_pod(argv[i], &ps, &p, &err) < 0)
                return cli_fail(err);
        pod_enter(p, app, flags | ENTER_AS_APP, argv + i + 1, &err);
        return cli_fail(err);
}

static const Verb verbs[] = {
        { "sandbox", verb_sandbox, NULL },
        { "add", verb_add, NULL },
        { "start", verb_start, NULL },
        { "stop", verb_stop, NULL },
        { "rm", verb_rm, NULL },
        { "list", verb_list, NULL },
        { "status", verb_status, NULL },
        { "exec", verb_exec, NULL },
        {},
};

int main(int argc, char **argv) {
        return cli_main(argc, argv, "podapp", usage, verbs);
}
