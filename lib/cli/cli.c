/* SPDX-License-Identifier: Apache-2.0 */
#include <fcntl.h>
#include <getopt.h>
#include <stdarg.h>

#include "basic/crash-point.h"
#include "basic/json-util.h"
#include "basic/time-util.h"
#include "basic/warn.h"
#include "cli/cli.h"
#include "pod/stage1.h"
#include "config.h"
#include "pod/pod-ref.h"

CliGlobals cli;

int exit_status_from_errno(int code) {
        switch (-code) {
        case 0:
                return EXIT_OK;
        case EINVAL:
        case ENOTUNIQ:
                return EXIT_USAGE;
        case ENOENT:
        case ENXIO:
                return EXIT_NOT_FOUND;
        case EBUSY:
        case EALREADY:
        case EWOULDBLOCK:
        case EEXIST:
        case ETIMEDOUT:
        case ESRCH:             /* not running */
        case EOPNOTSUPP:        /* not mutable */
                return EXIT_WRONG_STATE;
        case EBADMSG:
        case EFBIG:
        case EKEYREJECTED:      /* an image the signature policy refuses */
                return EXIT_BAD_INPUT;
        default:
                return EXIT_ERROR;
        }
}

int cli_fail(Error *e) {
        const char *who = cli.command ?: program_invocation_short_name;
        if (!e) {
                fprintf(stderr, "%s: unknown error\n", who);
                return EXIT_ERROR;
        }
        /* A message may carry what a pod's systemd said. */
        if (e->msg)
                text_make_printable(e->msg, strlen(e->msg), false);
        fprintf(stderr, "%s: %s\n", who, strempty(e->msg));
        if (cli.debug)
                fprintf(stderr, "%s: (errno %d: %s)\n", who, -e->code, strerror(-e->code));
        int status = exit_status_from_errno(e->code);
        error_free(e);
        return status;
}

void cli_note(const char *fmt, ...) {
        va_list ap;
        va_start(ap, fmt);
        fprintf(stderr, "%s: ", cli.command ?: program_invocation_short_name);
        vfprintf(stderr, fmt, ap);
        fputc('\n', stderr);
        va_end(ap);
}

int cli_usage_error(const char *command, const char *fmt, ...) {
        va_list ap;
        va_start(ap, fmt);
        fprintf(stderr, "%s: ", command);
        vfprintf(stderr, fmt, ap);
        fprintf(stderr, "\nTry '%s --help'.\n", command);
        va_end(ap);
        return EXIT_USAGE;
}

/* The global options, which a user may put after the command by habit. */
static const char *const global_options[] = { "--dir", "--debug", "--version", NULL };

int cli_option_error(const char *command, const char *shortopts, int argc, char **argv) {
        /* getopt (told to be quiet: opterr is 0) leaves the option it did
         * not like at argv[optind - 1]; optopt is its letter, or for a long
         * option that it knows but that lacks its value, its code, and 0
         * for a long option that it does not know. */
        const char *arg = optind > 0 && optind <= argc ? argv[optind - 1] : "";
        bool is_long = startswith(arg, "--");
        char name[64];
        if (is_long)
                snprintf(name, sizeof(name), "%.*s", (int) strcspn(arg, "="), arg);
        else
                snprintf(name, sizeof(name), "-%c", optopt > ' ' && optopt < 0x7f ? optopt : '?');
        if (is_long ? optopt != 0 : optopt > ' ' && strchr(shortopts, optopt))
                return cli_usage_error(command, "option \"%s\" needs a value", name);
        for (const char *const *g = global_options; *g; g++)
                if (streq(name, *g))
                        return cli_usage_error(command, "unknown option \"%s\": it is a global option, which comes "
                                               "before the command (%s %s ...)", name, program_invocation_short_name, *g);
        return cli_usage_error(command, "unknown option \"%s\"", name);
}

int cli_parse_globals(int argc, char **argv, const char *usage, int *ret_status) {
        enum { OPT_DIR = 0x100, OPT_DEBUG, OPT_VERSION, OPT_CRASH_POINTS };
        static const struct option options[] = {
                { "dir", required_argument, NULL, OPT_DIR },
                /* Not in --help: for the crash tests (basic/crash-point.h). */
                { "crash-points", no_argument, NULL, OPT_CRASH_POINTS },
                { "debug", no_argument, NULL, OPT_DEBUG },
                { "help", no_argument, NULL, 'h' },
                { "version", no_argument, NULL, OPT_VERSION },
                {},
        };
        cli.dir = getenv("SDPOD_DIR");
        if (cli.dir && !*cli.dir)
                cli.dir = NULL;
        /* Our own messages for bad options (cli_option_error), not getopt's. */
        opterr = 0;
        argv[0] = program_invocation_short_name;
        int c;
        /* "+": stop at the verb; its options are its own. */
        while ((c = getopt_long(argc, argv, "+h", options, NULL)) >= 0)
                switch (c) {
                case OPT_DIR:
                        cli.dir = optarg;
                        break;
                case OPT_DEBUG:
                        cli.debug = true;
                        break;
                case 'h':
                        fputs(usage, stdout);
                        *ret_status = EXIT_OK;
                        return -1;
                case OPT_VERSION:
                        printf("%s %s\n", program_invocation_short_name, SDPOD_VERSION);
                        *ret_status = EXIT_OK;
                        return -1;
                case OPT_CRASH_POINTS:
                        if (crash_points_print() < 0) {
                                fprintf(stderr, "%s: this build has no crash points (meson setup -Dcrash-points=true)\n",
                                        program_invocation_short_name);
                                *ret_status = EXIT_ERROR;
                        } else
                                *ret_status = EXIT_OK;
                        return -1;
                default:
                        *ret_status = cli_option_error(program_invocation_short_name, "h", argc, argv);
                        return -1;
                }
        cli.dir_is_default = !cli.dir;
        if (!cli.dir)
                cli.dir = SDPOD_DEFAULT_DIR;
        if (optind >= argc) {
                fputs(usage, stderr);
                *ret_status = EXIT_USAGE;
                return -1;
        }
        return optind;
}

int cli_dispatch(const Verb *verbs, const char *context, const char *usage, int argc, char **argv) {
        if (argc < 1) {
                fputs(usage, stderr);
                return EXIT_USAGE;
        }
        if (streq(argv[0], "--help") || streq(argv[0], "-h") || streq(argv[0], "help")) {
                fputs(usage, stdout);
                return EXIT_OK;
        }
        for (const Verb *v = verbs; v->name; v++)
                if (streq(v->name, argv[0]) && !v->run)
                        return cli_usage_error(context, "unknown command \"%s\": did you mean %s?", argv[0], v->summary);
                else if (streq(v->name, argv[0])) {
                        /* Messages name the whole command ("sdpod image
                         * rm: ..."): argv[0] for the verb, cli.command
                         * for cli_fail(). */
                        _cleanup_free_ char *command = NULL;
                        const char *outer = cli.command;
                        if (asprintf(&command, "%s %s", context, v->name) >= 0) {
                                argv[0] = command;
                                cli.command = command;
                                /* for the stage1 entrypoints (sdpod-stage1(7)) */
                                (void) setenv("SDPOD_COMMAND", command, 1);
                        }
                        optind = 0; /* each verb parses its own options afresh */
                        int status = v->run(argc, argv);
                        cli.command = outer;
                        return status;
                }
        return cli_usage_error(context, "unknown command \"%s\"", argv[0]);
}

/* "enter POD --app=NAME -ti CMD", as podapp's exec takes them: --app and
 * the flags right after the POD, up to the first other argument (CMD) or a
 * "--", are taken out of argv, so that CMD follows the POD. */
static void take_options_after_pod(int argc, char **argv, int pod, const char **ret_app, unsigned *ret_flags) {
        int i = pod + 1, taken = 0;
        for (; i < argc; i++) {
                const char *a = argv[i], *v;
                if ((v = startswith(a, "--app=")))
                        *ret_app = v;
                else if (streq(a, "--app") && i + 1 < argc) {
                        *ret_app = argv[++i];
                        taken++;
                } else if (ret_flags && (streq(a, "--tty") || streq(a, "--interactive")))
                        *ret_flags |= streq(a, "--tty") ? ENTER_TTY : ENTER_INTERACTIVE;
                else if (ret_flags && a[0] == '-' && a[1] && a[1] != '-' && strspn(a + 1, "ti") == strlen(a + 1))
                        *ret_flags |= (strchr(a, 't') ? ENTER_TTY : 0) | (strchr(a, 'i') ? ENTER_INTERACTIVE : 0);
                else if (streq(a, "--")) {
                        i++;
                        taken++;
                        break;
                } else
                        break;
                taken++;
        }
        if (taken > 0)
                memmove(argv + pod + 1, argv + i, (size_t) (argc - i + 1) * sizeof(char *));
}

/* --help, --app=NAME and, when ret_flags is given, -t/--tty and
 * -i/--interactive (EnterFlags). */
static int parse_app_options(int argc, char **argv, const char *usage, bool operands_end_options, const char **ret_app,
                             unsigned *ret_flags, int *ret_status) {
        static const struct option options[] = {
                { "help", no_argument, NULL, 'h' },
                { "app", required_argument, NULL, 'a' },
                { "tty", no_argument, NULL, 't' },
                { "interactive", no_argument, NULL, 'i' },
                {},
        };
        const char *shorts = ret_flags ? (operands_end_options ? "+hti" : "hti") : (operands_end_options ? "+h" : "h");
        int c;
        *ret_app = NULL;
        if (ret_flags)
                *ret_flags = 0;
        while ((c = getopt_long(argc, argv, shorts, options, NULL)) >= 0)
                switch (c) {
                case 'h':
                        fputs(usage, stdout);
                        *ret_status = EXIT_OK;
                        return -1;
                case 'a':
                        *ret_app = optarg;
                        break;
                case 't':
                case 'i':
                        if (ret_flags) {
                                *ret_flags |= c == 't' ? ENTER_TTY : ENTER_INTERACTIVE;
                                break;
                        }
                        __attribute__((fallthrough));
                default:
                        *ret_status = cli_option_error(argv[0], "h", argc, argv);
                        return -1;
                }
        if (optind >= argc) {
                *ret_status = cli_usage_error(argv[0], "missing POD (a pod's name, UUID or UUID prefix)");
                return -1;
        }
        if (operands_end_options)
                take_options_after_pod(argc, argv, optind, ret_app, ret_flags);
        return optind;
}

int cli_parse_app_options(int argc, char **argv, const char *usage, bool operands_end_options, const char **ret_app,
                          int *ret_status) {
        return parse_app_options(argc, argv, usage, operands_end_options, ret_app, NULL, ret_status);
}

int cli_parse_enter_options(int argc, char **argv, const char *usage, bool operands_end_options, const char **ret_app,
                            unsigned *ret_flags, int *ret_status) {
        return parse_app_options(argc, argv, usage, operands_end_options, ret_app, ret_flags, ret_status);
}

int cli_parse_verb_options(int argc, char **argv, const char *usage, OutputFormat *format, bool *legend, int *ret_status) {
        enum { OPT_NO_LEGEND = 0x100 };
        static const struct option all[] = {
                { "help", no_argument, NULL, 'h' },
                { "format", required_argument, NULL, 'f' },
                { "no-legend", no_argument, NULL, OPT_NO_LEGEND },
                {},
        };
        static const struct option help_only[] = {
                { "help", no_argument, NULL, 'h' },
                {},
        };
        int c;
        while ((c = getopt_long(argc, argv, "h", format ? all : help_only, NULL)) >= 0)
                switch (c) {
                case 'h':
                        fputs(usage, stdout);
                        *ret_status = EXIT_OK;
                        return -1;
                case 'f':
                        if ((*ret_status = cli_parse_format(argv[0], optarg, format)) != 0)
                                return -1;
                        break;
                case OPT_NO_LEGEND:
                        *legend = false;
                        break;
                default:
                        *ret_status = cli_option_error(argv[0], "h", argc, argv);
                        return -1;
                }
        return optind;
}

int cli_parse_format(const char *command, const char *value, OutputFormat *ret) {
        if (streq(value, "json"))
                *ret = FORMAT_JSON;
        else if (streq(value, "table"))
                *ret = FORMAT_TABLE;
        else
                return cli_usage_error(command, "--format: \"%s\" is not one of json, table", value);
        return 0;
}

struct Table {
        size_t n_columns, n_cells;
        char **cells;           /* row-major, first row is the legend */
};

Table *table_new(size_t n_columns, ...) {
        Table *t = calloc(1, sizeof(Table));
        if (!t)
                return NULL;
        t->n_columns = n_columns;
        va_list ap;
        va_start(ap, n_columns);
        t->cells = calloc(n_columns, sizeof(char *));
        for (size_t i = 0; t->cells && i < n_columns; i++)
                t->cells[i] = strdup(va_arg(ap, const char *));
        va_end(ap);
        if (!t->cells) {
                free(t);
                return NULL;
        }
        t->n_cells = n_columns;
        return t;
}

int table_add_row(Table *t, ...) {
        char **cells = realloc(t->cells, (t->n_cells + t->n_columns) * sizeof(char *));
        if (!cells)
                return -ENOMEM;
        t->cells = cells;
        va_list ap;
        va_start(ap, t);
        for (size_t i = 0; i < t->n_columns; i++) {
                const char *s = va_arg(ap, const char *);
                t->cells[t->n_cells++] = strdup(s && *s ? s : "-");
        }
        va_end(ap);
        return 0;
}

void table_print(Table *t, bool legend) {
        size_t width[t->n_columns];
        memset(width, 0, sizeof(width));
        for (size_t i = 0; i < t->n_cells; i++) {
                size_t l = t->cells[i] ? strlen(t->cells[i]) : 0;
                if (l > width[i % t->n_columns])
                        width[i % t->n_columns] = l;
        }
        for (size_t i = legend ? 0 : t->n_columns; i < t->n_cells; i++) {
                size_t col = i % t->n_columns;
                if (col == t->n_columns - 1)
                        printf("%s\n", strempty(t->cells[i]));
                else
                        printf("%-*s  ", (int) width[col], strempty(t->cells[i]));
        }
}

void table_free(Table *t) {
        if (!t)
                return;
        for (size_t i = 0; i < t->n_cells; i++)
                free(t->cells[i]);
        free(t->cells);
        free(t);
}

int cli_print_json(struct json_object *o) {
        if (!o) {
                fprintf(stderr, "%s: out of memory\n", program_invocation_short_name);
                return EXIT_ERROR;
        }
        puts(json_to_text(o, true));
        return fflush(stdout) == 0 ? EXIT_OK : EXIT_ERROR;
}

void format_bytes(uint64_t bytes, char ret[16]) {
        static const char units[] = "BKMGTP";
        double v = (double) bytes;
        size_t u = 0;
        while (v >= 1024 && u < sizeof(units) - 2) {
                v /= 1024;
                u++;
        }
        if (u == 0)
                snprintf(ret, 16, "%lluB", (unsigned long long) bytes);
        else
                snprintf(ret, 16, "%.1f%c", v, units[u]);
}

/* The index of pod names, built once for a store of an earlier sdpod
 * where it can be written; names resolve without it, only slower. */
static void ensure_names_index(PodStore *s) {
        Error *e = NULL;
        if (s->pods_fd >= 0 && faccessat(s->pods_fd, ".", W_OK, AT_EACCESS) == 0 && pod_names_index_ensure(s, &e) < 0) {
                warn("%s", e ? e->msg : "pod names: out of memory");
                error_free(e);
        }
}

int cli_open_pods(PodStore **ret, Error **err) {
        int r = pod_store_open(cli.dir, cli.dir_is_default, false, ret, err);
        if (r >= 0)
                ensure_names_index(*ret);
        return r;
}

int cli_open_pod(const char *ref, PodStore **ret_store, Pod **ret, Error **err) {
        int r = cli_open_pods(ret_store, err);
        return r < 0 ? r : pod_resolve(*ret_store, ref, ret, err);
}

int cli_open_pods_to_read(PodStore **ret, Error **err) {
        int r = pod_store_open(cli.dir, false, true, ret, err);
        if (r >= 0)
                ensure_names_index(*ret);
        return r;
}

int cli_open_pod_to_read(const char *ref, PodStore **ret_store, Pod **ret, Error **err) {
        int r = cli_open_pods_to_read(ret_store, err);
        return r < 0 ? r : pod_resolve(*ret_store, ref, ret, err);
}

bool cli_wants_help(int argc, char **argv) {
        for (int i = 1; i < argc && !streq(argv[i], "--"); i++)
                if (streq(argv[i], "--help") || streq(argv[i], "-h"))
                        return true;
        return false;
}

const char *cli_table_time(uint64_t usec, char buf[static 32]) {
        if (!usec)
                return NULL;
        format_timestamp(usec, buf);
        buf[19] = 0;
        buf[10] = ' ';
        return buf;
}

int cli_json_add_time(struct json_object *o, const char *key, uint64_t usec) {
        char ts[32];
        if (!usec)
                return json_object_object_add(o, key, NULL);
        format_timestamp(usec, ts);
        return json_add_string(o, key, ts);
}

static void print_warning(const char *message) {
        _cleanup_free_ char *m = strdup(message);
        if (m)
                text_make_printable(m, strlen(m), false);
        fprintf(stderr, "%s: warning: %s\n", cli.command ?: program_invocation_short_name, m ?: message);
}

int cli_main(int argc, char **argv, const char *program, const char *usage, const Verb *verbs) {
        int status;
        warn_set_handler(print_warning);
        int i = cli_parse_globals(argc, argv, usage, &status);
        if (i < 0)
                return status;
        return cli_dispatch(verbs, program, usage, argc - i, argv + i);
}
