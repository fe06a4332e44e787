/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* What every sdpod binary shares: global options, how errors are printed,
 * exit codes, tables and JSON output. */

#include <json-c/json.h>
#include <stdbool.h>
#include <stdint.h>

#include "basic/error.h"

#include "pod/pod.h"

/* Exit codes (documented in sdpod(1)). */
enum {
        EXIT_OK = 0,
        EXIT_ERROR = 1,         /* anything else: I/O, internal */
        EXIT_USAGE = 2,         /* bad command line, ambiguous reference */
        EXIT_NOT_FOUND = 3,     /* no such image, pod, file */
        EXIT_WRONG_STATE = 4,   /* the object is busy or in the wrong state */
        EXIT_BAD_INPUT = 5,     /* invalid or corrupt input: image, manifest */
};

typedef struct CliGlobals {
        const char *dir;        /* data directory */
        bool dir_is_default;    /* neither --dir nor SDPOD_DIR: may be created */
        bool debug;
        const char *command;    /* "sdpod image rm" once a verb runs: what messages start with */
} CliGlobals;

extern CliGlobals cli;

/* The --help text of the app options after --app (sdpod prepare and run,
 * podapp add), whose grammar is app-args.h's. */
#define CLI_APP_OPTIONS_HELP \
        "  --exec=PATH             run PATH instead of the image's entrypoint and command\n" \
        "  --set-env=NAME=VALUE    set an environment variable (repeatable)\n" \
        "  --user=USER             user (name or number) to run as\n" \
        "  --group=GROUP           group (name or number) to run as\n" \
        "  --working-dir=PATH      working directory\n" \
        "  --mount=volume=NAME,target=PATH\n" \
        "                          mount a pod volume in the app\n" \
        "  --env-file=FILE         set the variables of FILE's NAME=VALUE lines\n" \
        "App confinement and resource options (sdpod(1); a limit the host cannot\n" \
        "enforce fails the app):\n" \
        "  --memory=QUANTITY       memory limit (\"512M\", \"1Gi\")\n" \
        "  --cpus=CPUS             CPU time limit (\"0.5\", \"2\", \"250m\")\n" \
        "  --pids-limit=N          at most N tasks\n" \
        "  --cap-add=CAP[,CAP...]  add capabilities to the default set (or ALL)\n" \
        "  --cap-drop=CAP[,CAP...] remove capabilities (or ALL)\n" \
        "  --read-only             the app's root file system read-only\n" \
        "  --tmpfs=PATH[:OPTIONS]  a tmpfs at PATH (size=, mode=, noexec; always\n" \
        "                          nosuid,nodev; mode 1777 unless given)\n" \
        "  --device=PATH[:ACCESS]  give the app the host's device PATH (ACCESS of\n" \
        "                          r, w, m; default rw)\n" \
        "App lifecycle options (sdpod(1); CMD: a JSON array of strings, or a shell\n" \
        "command line for /bin/sh -c):\n" \
        "  --stop-timeout=DURATION how long the app has to stop before SIGKILL (10s)\n" \
        "  --restart=no|on-failure|always\n" \
        "                          restart the app when it exits (with a backoff)\n" \
        "  --pre-start=CMD         run before the app, in its root and confinement\n" \
        "  --pre-stop=CMD          run on a stop, before SIGTERM (within the timeout)\n" \
        "  --post-stop=CMD         run after the app has exited\n" \
        "  --watchdog=DURATION     kill the app (SIGABRT) when it has not pinged\n" \
        "                          (sd_notify WATCHDOG=1) for that long\n" \
        "  --watchdog-file=PATH    or when it has not touched PATH for that long\n" \
        "  --health-cmd=CMD        a health check, run by a timer in the pod\n" \
        "  --health-interval=DURATION  between checks (30s)\n" \
        "  --health-timeout=DURATION  a check still running then has failed (30s)\n" \
        "  --health-retries=N      failures in a row that make it unhealthy (3)\n" \
        "  --health-start-period=DURATION  failures that do not count at first (0)\n" \
        "  --health-on-failure=none|restart|stop\n" \
        "                          what an unhealthy app gets (none)\n" \
        "App order options (APP: the names of other apps of the pod, comma-separated):\n" \
        "  --after=APP[,APP...]    start after those apps have started\n" \
        "  --requires=APP[,APP...] the same, and start them; not started when one of\n" \
        "                          them fails to start, stopped when one is stopped\n" \
        "  --wait-healthy=APP[,APP...]\n" \
        "                          start once those apps' health checks have passed\n"

/* The options of the pulls prepare, run and podapp add make for an IMAGE
 * that names a registry (cli_pull_images()). */
#define CLI_PULL_OPTIONS_HELP \
        "Pull options, for an IMAGE that names a registry ([docker://]REGISTRY/REPO[:TAG]):\n" \
        "  --pull=missing|always|never\n" \
        "                          pull it when the store has no image of that name\n" \
        "                          (default), each time, or never\n" \
        "  --tls-verify=BOOL       verify the registry's certificate (default: true)\n" \
        "  --cert-dir=DIR          CA certificates for the registry\n" \
        "  --authfile=FILE         credentials (default: sdpod-registries(5))\n" \
        "  --creds=USER:PASSWORD   credentials for the pulls\n" \
        "  --signature-policy=FILE the signature policy (policy.json)\n" \
        "  --registries-d=DIR      where signatures are looked up (as for 'sdpod image pull')\n"

/* A verb without run is another tool's name for one of ours (podman's
 * "rmi"): summary is what to use instead, which "unknown command" says. */
typedef struct Verb {
        const char *name;
        int (*run)(int argc, char **argv);
        const char *summary;
} Verb;

/* Parses the global options before the verb. Returns the index of the verb
 * in argv (> 0), or -1 when the program should exit now (--help, --version,
 * errors) with the status stored in *ret_status. */
int cli_parse_globals(int argc, char **argv, const char *usage, int *ret_status);

/* Runs argv[0] from verbs; "context" is the command so far ("sdpod image"). */
int cli_dispatch(const Verb *verbs, const char *context, const char *usage, int argc, char **argv);

/* The whole main() of a binary: warnings go to stderr as "PROGRAM:
 * warning: ...", then the global options, then the verb of verbs. */
int cli_main(int argc, char **argv, const char *program, const char *usage, const Verb *verbs);

/* What a verb tells besides its output, on stderr, named as its errors
 * are ("sdpod image gc: ..."). */
void cli_note(const char *fmt, ...) _printf_(1, 2);

/* Prints "PROGRAM: MESSAGE" on stderr and returns the exit status for it. */
int cli_fail(Error *e);
int cli_usage_error(const char *command, const char *fmt, ...) _printf_(2, 3);
/* The message for an option that getopt_long (with opterr 0) returned '?'
 * for: an unknown option, or one that needs a value (shortopts: the
 * verb's optstring), and the exit status 2. */
int cli_option_error(const char *command, const char *shortopts, int argc, char **argv);
int exit_status_from_errno(int code);

/* Options shared by the verbs. Each returns 0, or an exit status. */
typedef enum OutputFormat { FORMAT_TABLE, FORMAT_JSON } OutputFormat;
int cli_parse_format(const char *command, const char *value, OutputFormat *ret);

/* Parses the options of a verb that takes only --help and, when format is
 * given, --format and --no-legend. argv[0] names the command (cli_dispatch
 * sets it). Returns the index of the first operand, or -1 when the verb is
 * done, with its exit status in *ret_status. */
int cli_parse_verb_options(int argc, char **argv, const char *usage, OutputFormat *format, bool *legend, int *ret_status);

/* The options of the verbs that act on one app of a pod, "VERB [--app=NAME]
 * UUID [ARGS...]": --help and --app=NAME. With operands_end_options, the
 * first operand (the UUID) ends them and what follows is the command's,
 * options included; else options may come anywhere before "--". Returns the
 * index of the UUID, or -1 with *ret_status set: help shown, a usage error,
 * or no UUID. */
int cli_parse_app_options(int argc, char **argv, const char *usage, bool operands_end_options, const char **ret_app,
                          int *ret_status);
/* The same for enter and exec, which also take -t/--tty and
 * -i/--interactive: *ret_flags, EnterFlags (pod/stage1.h). */
int cli_parse_enter_options(int argc, char **argv, const char *usage, bool operands_end_options, const char **ret_app,
                            unsigned *ret_flags, int *ret_status);

/* A table printed with aligned columns; NULL cells print as "-". */
typedef struct Table Table;
Table *table_new(size_t n_columns, ...);
int table_add_row(Table *t, ...);
void table_print(Table *t, bool legend);
void table_free(Table *t);
static inline void table_freep(Table **t) { table_free(*t); }

int cli_print_json(struct json_object *o);

void format_bytes(uint64_t bytes, char ret[16]);

/* The pod store of --dir. */
int cli_open_pods(PodStore **ret, Error **err);
/* For the commands that only read: creates nothing, and works on a
 * read-only data directory. */
int cli_open_pods_to_read(PodStore **ret, Error **err);
int cli_open_pod_to_read(const char *ref, PodStore **ret_store, Pod **ret, Error **err);
/* The pod store and the one pod that ref (a UUID, a prefix of one or a
 * pod name: pod-ref.h) names. */
int cli_open_pod(const char *ref, PodStore **ret_store, Pod **ret, Error **err);
/* Whether --help or -h comes before any "--". */
bool cli_wants_help(int argc, char **argv);

/* "2026-11-21 05:44:16" (UTC) for tables; NULL for 0 (unknown). */
const char *cli_table_time(uint64_t usec, char buf[static 32]);
/* key: RFC 3339 time, or null for 0. */
int cli_json_add_time(struct json_object *o, const char *key, uint64_t usec);
