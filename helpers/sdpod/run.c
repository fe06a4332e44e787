/* SPDX-License-Identifier: Apache-2.0 */
/* The verbs that hand a pod to its stage1: run-prepared, run, stop, enter. */
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <sys/wait.h>

#include "basic/fs.h"
#include "basic/strv.h"
#include "basic/time-util.h"
#include "cli/cli.h"
#include "cli/pull-view.h"
#include "manifest/app-args.h"
#include "pod/pod-info.h"
#include "pod/pod-journal.h"
#include "pod/pod-launch.h"
#include "pod/pod-prepare.h"
#include "pod/pod-replace.h"
#include "pod/stage1.h"
#include "sdpod.h"

static int exec_run_entrypoint(Pod *p) {
        Error *err = NULL;
        stage1_exec_run(p->fd, p->uuid, &err);
        return cli_fail(err);
}

static pid_t run_child;

static void forward_signal(int sig) {
        if (run_child > 0)
                kill(run_child, sig);
}

/* --rm: the pod runs in a child (the run entrypoint, as without --rm),
 * and once it has exited, it is removed. Ctrl-C reaches the child from the
 * terminal; SIGTERM and SIGHUP sent to sdpod are passed on, so that the pod
 * stops in order and is still removed. Exits with the pod's status. */
static int run_and_remove(PodStore *ps, Pod **p) {
        char uuid[UUID_STRING_MAX];
        snprintf(uuid, sizeof(uuid), "%s", (*p)->uuid);
        fflush(NULL);
        pid_t pid = fork();
        if (pid < 0) {
                Error *err = NULL;
                error_sys(&err, -errno, "pod %s: cannot fork", uuid);
                return cli_fail(err);
        }
        if (pid == 0)
                _exit(exec_run_entrypoint(*p));
        /* The pod's lock is the child's now: ours closed with the pod. */
        pod_free(TAKE_PTR(*p));
        run_child = pid;
        struct sigaction fwd = { .sa_handler = forward_signal, .sa_flags = SA_RESTART }, ign = { .sa_handler = SIG_IGN };
        sigaction(SIGTERM, &fwd, NULL);
        sigaction(SIGHUP, &fwd, NULL);
        sigaction(SIGINT, &ign, NULL);
        sigaction(SIGQUIT, &ign, NULL);
        int st = 0;
        while (waitpid(pid, &st, 0) < 0)
                if (errno != EINTR)
                        break;
        int status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
        Error *err = NULL;
        _cleanup_pod_ Pod *done = NULL;
        if (pod_lookup(ps, uuid, &done, &err) < 0 || pod_remove(ps, done, &err) < 0) {
                error_prefix(&err, "--rm");
                int s = cli_fail(err);
                return status ?: s;
        }
        return status;
}

/* The lines of an app's log that a detached pod which ended before it was
 * ready shows: enough for the usual last words of a program. */
#define EARLY_EXIT_LOG_LINES 10

/* A detached pod that ran and exited before it was ready is kept: say how
 * each app ended and show the last lines of the log of the one that gave
 * the pod its exit code (or of the whole pod), then its UUID, as for a pod
 * that started, and exit with its exit code. */
static int report_early_exit(PodStore *ps, const char *uuid, int exit_code, Error *err) {
        int status = cli_fail(err);
        _cleanup_pod_ Pod *p = NULL;
        PodInfo info = {};
        if (pod_lookup(ps, uuid, &p, NULL) < 0 || pod_info_read(p, true, &info) < 0)
                return status;
        const PodAppExit *culprit = NULL;
        for (size_t i = 0; i < info.n_apps; i++) {
                const PodAppExit *a = &info.apps[i];
                if (!a->exited)
                        continue;
                fprintf(stderr, "  app %s exited with status %d\n", a->name, a->exit_status);
                if (a->exit_status == exit_code && exit_code != 0 &&
                    (!culprit || a->exited_usec < culprit->exited_usec))
                        culprit = a;
        }
        _cleanup_free_ char *log = NULL;
        Error *e = NULL;
        if (pod_journal_tail(ps, p, culprit ? culprit->name : NULL, EARLY_EXIT_LOG_LINES, &log, &e) < 0)
                cli_fail(e);
        else if (*log && culprit)
                fprintf(stderr, "The last lines of the log of app %s ('sdpod journal --app=%s %s'):\n%s", culprit->name,
                        culprit->name, uuid, log);
        else if (*log)
                fprintf(stderr, "The last lines of the pod's journal ('sdpod journal %s'):\n%s", uuid, log);
        fprintf(stderr, "The pod is kept for 'sdpod status' and 'sdpod journal' until 'sdpod rm %s' or 'sdpod gc'.\n",
                uuid);
        pod_info_done(&info);
        puts(uuid);
        return exit_code > 0 ? exit_code : status;
}

static const char run_prepared_usage[] =
        "Usage: sdpod run-prepared POD\n"
        "\n"
        "Runs a prepared pod in the foreground: boots it with systemd-nspawn and\n"
        "exits when it exits, with the exit status of the app that failed (or 0).\n"
        "It is what pod@UUID.service runs. Stop the pod with 'sdpod stop', SIGTERM\n"
        "or Ctrl-C: its apps are stopped in order and their exit statuses recorded.\n";

int verb_run_prepared(int argc, char **argv) {
        int status, i = cli_parse_verb_options(argc, argv, run_prepared_usage, NULL, NULL, &status);
        if (i < 0)
                return status;
        if (i != argc - 1)
                return cli_usage_error(argv[0], i >= argc ? "missing POD (a pod's name, UUID or UUID prefix)" : "takes one POD");
        Error *err = NULL;
        _cleanup_pod_store_ PodStore *ps = NULL;
        _cleanup_pod_ Pod *found = NULL, *p = NULL;
        if (cli_open_pod(argv[i], &ps, &found, &err) < 0)
                return cli_fail(err);
        if (found->state == POD_STATE_PREPARED) {
                _cleanup_image_store_ ImageStore *is = NULL;
                if (image_store_open(cli.dir, cli.dir_is_default, STORE_SHARED, &is, &err) < 0 ||
                    pod_check_prepared(ps, is, found, &err) < 0)
                        return cli_fail(err);
        }
        if (pod_start_prepared(ps, found->uuid, &p, &err) < 0)
                return cli_fail(err);
        return exec_run_entrypoint(p);
}

static const char run_usage[] =
        "Usage: sdpod run [-d] [--rm] [-t] [--uuid-file=PATH] [--replace] [POD OPTIONS] IMAGE [APP OPTIONS] [-- ARGS...]\n"
        "                 [--- IMAGE [APP OPTIONS] [-- ARGS...]]...\n"
        "\n"
        "Prepares a pod as 'sdpod prepare' does (see 'sdpod prepare --help' for the\n"
        "options) and runs it in the foreground as 'sdpod run-prepared' does: the\n"
        "apps' output goes to the terminal, and sdpod exits with the exit status of\n"
        "the app that failed, or 0. Ctrl-C or SIGTERM stops the pod in order.\n"
        "The options below, the pod's and the first app's may come in any order\n"
        "before the first IMAGE (\"sdpod run -p 8080:80 -d nginx\"); short ones\n"
        "of podman's: -p (--port), -e (--set-env), -u (--user, also USER:GROUP),\n"
        "-w (--working-dir), -v SRC:DST[:ro|:U|:idmap] (a volume, see --volume).\n"
        "\n"
        "  -d, --detach      run it in the background instead: as pod@UUID.service\n"
        "                    when the host runs systemd and has pod@.service, else\n"
        "                    as a process of its own session; print the UUID once\n"
        "                    the pod is ready (its output goes to its journal:\n"
        "                    'sdpod journal UUID')\n"
        "  --rm              remove the pod once it has exited (not with --detach)\n"
        "  --uuid-file=PATH  write the pod's UUID to PATH before it starts\n"
        "  --replace         first remove the pods of the same --name that are not\n"
        "                    running (exited, prepared, failed); refuse if one runs.\n"
        "                    A service that runs a fresh pod on each start uses it\n"
        "                    (sdpod-pod-generator(8))\n"
        "  -t, --tty         run the pod's app (one app) on the pod's console, as its\n"
        "                    controlling terminal, relayed to sdpod's terminal:\n"
        "                    typed keys (Ctrl-C, Ctrl-Z) reach it, the console has\n"
        "                    the terminal's size and follows it; not with --detach\n"
        "  -i, --interactive accepted for podman's -it: with -t typed keys reach the\n"
        "                    app anyway; without it the app's input is not sdpod's\n";

typedef struct RunOptions {
        const char *uuid_file;
        bool detach, replace, tty, rm;
} RunOptions;

/* run's own options, anywhere before the first IMAGE (PodArgsExtraOption):
 * -d, -t and -i also together, as "-dt" and "-it". */
static int run_option(const char *arg, const char *next, void *userdata, Error **err) {
        RunOptions *o = userdata;
        const char *v;
        if ((v = startswith(arg, "--uuid-file="))) {
                o->uuid_file = v;
                return 1;
        }
        if (streq(arg, "--uuid-file")) {
                if (!next)
                        return error_set(err, -EINVAL, "option \"--uuid-file\" needs a value");
                o->uuid_file = next;
                return 2;
        }
        bool *flag = streq(arg, "--detach") ? &o->detach : streq(arg, "--replace") ? &o->replace
                   : streq(arg, "--tty") ? &o->tty : streq(arg, "--rm") ? &o->rm : NULL;
        if (flag) {
                *flag = true;
                return 1;
        }
        if (streq(arg, "--interactive"))
                return 1;
        if (arg[0] != '-' || arg[1] == '-' || !arg[1] || strspn(arg + 1, "dti") != strlen(arg + 1))
                return 0;
        /* -i: with -t typed keys reach the app anyway, and without it the
         * app's input is not sdpod's (podman users type -it). */
        for (const char *c = arg + 1; *c; c++)
                if (*c == 'd')
                        o->detach = true;
                else if (*c == 't')
                        o->tty = true;
        return 1;
}

int verb_run(int argc, char **argv) {
        if (cli_wants_help(argc, argv)) {
                fputs(run_usage, stdout);
                return EXIT_OK;
        }
        Error *err = NULL;
        RunOptions o = {};
        PodArgs args = {};
        if (pod_args_parse_with(argc - 1, argv + 1, true, run_option, &o, &args, &err) < 0) {
                int status = cli_usage_error(argv[0], "%s", err->msg);
                error_free(err);
                return status;
        }
        const char *uuid_file = o.uuid_file;
        bool detach = o.detach, replace = o.replace, tty = o.tty;
        if ((uuid_file && !*uuid_file) || (tty && detach)) {
                pod_args_done(&args);
                return uuid_file && !*uuid_file
                               ? cli_usage_error(argv[0], "--uuid-file= needs a path")
                               : cli_usage_error(argv[0], "-t runs the app on sdpod's terminal: not with --detach");
        }
        if (o.rm && detach) {
                pod_args_done(&args);
                /* The pod outlives this command: nothing of ours would be
                 * there to remove it. */
                return cli_usage_error(argv[0], "--rm removes the pod when 'sdpod run' ends: not with --detach "
                                       "('sdpod gc' collects exited pods)");
        }
        if (replace && !args.name) {
                pod_args_done(&args);
                return cli_usage_error(argv[0], "--replace needs --name: it replaces the pods of that name");
        }
        if (tty && args.n_apps != 1) {
                size_t n = args.n_apps;
                pod_args_done(&args);
                /* The console is one terminal: two apps reading it would
                 * take each other's keys. */
                return cli_usage_error(argv[0], "-t: the pod has %zu apps; only a pod of one app runs on the terminal "
                                       "(reach the others with 'sdpod enter -ti')", n);
        }
        if (tty)
                args.apps[0].tty = true;
        _cleanup_pod_store_ PodStore *ps = NULL;
        _cleanup_pod_ Pod *p = NULL;
        int r;
        if (replace) {
                /* Before the image store is opened: removing runs each
                 * pod's gc entrypoint, which may take a while. */
                _cleanup_strv_free_ char **removed = NULL;
                r = cli_open_pods(&ps, &err);
                r = r < 0 ? r : pod_remove_named(ps, args.name, &removed, &err);
                if (r < 0) {
                        pod_args_done(&args);
                        return cli_fail(err);
                }
                for (char **u = removed; u && *u; u++)
                        fprintf(stderr, "%s: removed the earlier pod %s of name %s\n", argv[0], *u,
                                args.name);
                r = pod_machine_release_stale(args.name, &err);
                if (r < 0) {
                        pod_args_done(&args);
                        return cli_fail(err);
                }
                if (r > 0)
                        fprintf(stderr, "%s: unregistered the machine %s, left by the earlier pod of this unit\n",
                                argv[0], args.name);
        }
        {
                /* The image store is held shared only while preparing. */
                _cleanup_image_store_ ImageStore *is = NULL;
                r = image_store_open(cli.dir, cli.dir_is_default, STORE_SHARED, &is, &err);
                r = r < 0 ? r : cli_pull_images(is, &args, &err);
                r = r < 0 || ps ? r : cli_open_pods(&ps, &err);
                r = r < 0 ? r : pod_prepare(ps, is, &args, detach ? POD_DIR_PREPARED : POD_DIR_RUN, &p, &err);
        }
        pod_args_done(&args);
        if (r < 0)
                return cli_fail(err);
        if (uuid_file) {
                char line[64];
                int n = snprintf(line, sizeof(line), "%s\n", p->uuid);
                if (write_file_atomic_at(AT_FDCWD, uuid_file, line, n, 0644, &err) < 0)
                        return cli_fail(err);
        }
        if (detach) {
                char uuid[UUID_STRING_MAX];
                int exit_code;
                r = pod_launch_prepared(ps, &p, uuid, &exit_code, &err);
                if (r == -ECHILD)
                        return report_early_exit(ps, uuid, exit_code, err);
                if (r < 0)
                        return cli_fail(err);
                puts(uuid);
                return EXIT_OK;
        }
        if (o.rm)
                return run_and_remove(ps, &p);
        return exec_run_entrypoint(p);
}

static const char stop_usage[] =
        "Usage: sdpod stop [--force] [--timeout=DURATION] POD...\n"
        "\n"
        "Stops running pods and waits until they have exited: every app has ended\n"
        "and its exit status is recorded once stop returns. By default the pod\n"
        "halts in order: its apps run their pre-stop hooks and get SIGTERM (and\n"
        "SIGKILL after their stop timeout, 10 s unless set), and their exit\n"
        "statuses are recorded; a pod that has not halted after 30 s is killed\n"
        "(with a warning). Prints the UUID of each pod stopped.\n"
        "\n"
        "  --timeout=DURATION  how long the pod has to halt before it is killed\n"
        "                      (default 30s)\n"
        "  --force             kill the pod at once; exit statuses are not recorded\n";

int verb_stop(int argc, char **argv) {
        static const struct option options[] = {
                { "help", no_argument, NULL, 'h' },
                { "force", no_argument, NULL, 'f' },
                { "timeout", required_argument, NULL, 't' },
                {},
        };
        bool force = false;
        uint64_t timeout_usec = 0;
        int c;
        while ((c = getopt_long(argc, argv, "h", options, NULL)) >= 0)
                switch (c) {
                case 'h':
                        fputs(stop_usage, stdout);
                        return EXIT_OK;
                case 'f':
                        force = true;
                        break;
                case 't':
                        if (parse_duration(optarg, &timeout_usec) < 0 || timeout_usec == 0)
                                return cli_usage_error(argv[0], "--timeout=%s: not a duration above 0 (\"10s\", \"500ms\")",
                                                       optarg);
                        break;
                default:
                        return cli_option_error(argv[0], "h", argc, argv);
                }
        if (optind >= argc)
                return cli_usage_error(argv[0], "missing POD (a pod's name, UUID or UUID prefix)");

        int status = EXIT_OK;
        for (int i = optind; i < argc; i++) {
                Error *err = NULL;
                _cleanup_pod_store_ PodStore *ps = NULL;
                _cleanup_pod_ Pod *p = NULL;
                int r = cli_open_pod(argv[i], &ps, &p, &err);
                if (r >= 0 && p->state != POD_STATE_RUNNING)
                        r = error_set(&err, -EALREADY, "pod %s is not running (%s)", p->uuid, pod_state_to_string(p->state));
                r = r < 0 ? r : pod_stop(ps, p, force, timeout_usec, &err);
                if (r < 0) {
                        int s = cli_fail(err);
                        status = status ?: s;
                        continue;
                }
                puts(p->uuid);
        }
        return status;
}

static const char enter_usage[] =
        "Usage: sdpod enter [--app=NAME] [-t] [-i] POD [CMD [ARGS...]]\n"
        "\n"
        "Runs CMD (default: /bin/sh) inside a running app of a pod, as root of the\n"
        "pod in the app's root \"/\", with the app's environment and confinement:\n"
        "the pod's systemd starts it as a unit with the app's settings\n"
        "(sdpod-security(7)). It gets sdpod's standard input, output and error\n"
        "(nothing else of its), but never a terminal of the caller's: a terminal\n"
        "is relayed through a pipe, and input from a terminal is /dev/null without\n"
        "-i. Ctrl-C reaches CMD. The exit status is CMD's (127: not found, 126:\n"
        "not executable or not run).\n"
        "\n"
        "  --app=NAME         the app (needed when the pod has more than one)\n"
        "  -t, --tty          run CMD on a new terminal of the pod's, relayed to\n"
        "                     sdpod's: CMD sees a terminal of the caller's size,\n"
        "                     resized with it; stdout and stderr both go to it\n"
        "  -i, --interactive  pass input on when it is a terminal (with -t: typed\n"
        "                     keys, the caller's terminal in raw mode meanwhile,\n"
        "                     so Ctrl-C and Ctrl-Z reach CMD's terminal)\n"
        "\n"
        "An interactive shell: sdpod enter -ti UUID\n";

int verb_enter(int argc, char **argv) {
        const char *app;
        unsigned flags;
        int status, i = cli_parse_enter_options(argc, argv, enter_usage, true, &app, &flags, &status);
        if (i < 0)
                return status;
        Error *err = NULL;
        _cleanup_pod_store_ PodStore *ps = NULL;
        _cleanup_pod_ Pod *p = NULL;
        if (cli_open_pod(argv[i], &ps, &p, &err) < 0)
                return cli_fail(err);
        pod_enter(p, app, flags, argv + i + 1, &err);
        return cli_fail(err);
}
