/* SPDX-License-Identifier: Apache-2.0 */
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>

#include "basic/quantity.h"
#include "basic/strv.h"
#include "basic/time-util.h"
#include "basic/utf8.h"
#include "manifest/app-args.h"
#include "manifest/app-lifecycle.h"
#include "manifest/pod-manifest.h"
#include "manifest/pod-net.h"
#include "unit/app-isolators.h"
#include "unit/app-unit.h"
#include "unit/pod-definition.h"

typedef enum Section {
        SECTION_NONE,           /* before the first section header */
        SECTION_UNIT,
        SECTION_POD,
        SECTION_APP,
        SECTION_SERVICE,
        SECTION_INSTALL,
        _SECTION_MAX,
} Section;

static const char *const section_names[_SECTION_MAX] = {
        [SECTION_UNIT] = "Unit", [SECTION_POD] = "Pod", [SECTION_APP] = "App",
        [SECTION_SERVICE] = "Service", [SECTION_INSTALL] = "Install",
};

typedef enum KeyKind {
        KEY_OPTION,             /* an option of sdpod run, checked by its own rules */
        KEY_DEVICE,             /* the same, --device: also a DeviceAllow= of the service */
        KEY_POD_NAME,           /* [Pod] Name= */
        KEY_IMAGE,              /* [App] Image= */
        KEY_EXEC,               /* [App] Exec=: program and arguments */
        KEY_ARGS,               /* [App] Args=: the image's arguments replaced */
        KEY_TEXT,               /* one line of text */
        KEY_UNITS,              /* unit names, separated by spaces */
        KEY_URLS,               /* Documentation= */
        KEY_DURATION,           /* a time span: 10s, 1min, 500ms, 2h */
        KEY_DURATION_INFINITY,  /* the same, or "infinity" */
        KEY_UINT,
        KEY_RESTART,            /* a value of systemd's Restart= */
        KEY_INSTALL,            /* WantedBy=, RequiredBy=: links the generator writes */
        KEY_FIXED,              /* what the generated unit must say itself: refused */
} KeyKind;

typedef struct DefinitionKey {
        Section section;
        const char *key;
        KeyKind kind;
        const char *option;     /* KEY_OPTION: sdpod run's option; KEY_INSTALL: the link directory's suffix */
} DefinitionKey;

/* Every key a definition may hold. [Unit] and [Service] take a few of
 * systemd's own directives, checked here rather than only when systemd
 * loads the unit: a typo is then a FILE:LINE message of the generator and
 * no unit, not a unit that runs without it. */
static const DefinitionKey definition_keys[] = {
        { SECTION_UNIT, "Description", KEY_TEXT, NULL },
        { SECTION_UNIT, "Documentation", KEY_URLS, NULL },
        { SECTION_UNIT, "After", KEY_UNITS, NULL },
        { SECTION_UNIT, "Before", KEY_UNITS, NULL },
        { SECTION_UNIT, "Wants", KEY_UNITS, NULL },
        { SECTION_UNIT, "Requires", KEY_UNITS, NULL },
        { SECTION_UNIT, "Requisite", KEY_UNITS, NULL },
        { SECTION_UNIT, "BindsTo", KEY_UNITS, NULL },
        { SECTION_UNIT, "PartOf", KEY_UNITS, NULL },
        { SECTION_UNIT, "Conflicts", KEY_UNITS, NULL },
        { SECTION_UNIT, "OnFailure", KEY_UNITS, NULL },
        { SECTION_UNIT, "StartLimitIntervalSec", KEY_DURATION, NULL },
        { SECTION_UNIT, "StartLimitBurst", KEY_UINT, NULL },

        { SECTION_POD, "Name", KEY_POD_NAME, NULL },
        { SECTION_POD, "Volume", KEY_OPTION, "volume" },
        { SECTION_POD, "PrivateUsers", KEY_OPTION, "private-users" },
        { SECTION_POD, "Net", KEY_OPTION, "net" },
        { SECTION_POD, "Port", KEY_OPTION, "port" },
        { SECTION_POD, "DNS", KEY_OPTION, "dns" },
        { SECTION_POD, "DNSSearch", KEY_OPTION, "dns-search" },
        { SECTION_POD, "DNSOption", KEY_OPTION, "dns-option" },
        { SECTION_POD, "Hostname", KEY_OPTION, "hostname" },
        { SECTION_POD, "HostsEntry", KEY_OPTION, "hosts-entry" },
        { SECTION_POD, "ConntrackLimit", KEY_OPTION, "conntrack-limit" },
        { SECTION_POD, "StopTimeout", KEY_OPTION, "pod-stop-timeout" },
        { SECTION_POD, "Watchdog", KEY_OPTION, "pod-watchdog" },
        { SECTION_POD, "PidsLimit", KEY_OPTION, "pod-pids-limit" },
        { SECTION_POD, "Memory", KEY_OPTION, "pod-memory" },
        { SECTION_POD, "CPUs", KEY_OPTION, "pod-cpus" },
        { SECTION_POD, "Stage1", KEY_OPTION, "stage1" },
        { SECTION_POD, "Mutable", KEY_OPTION, "mutable" },
        /* The pulls of the images that name a registry. */
        { SECTION_POD, "Pull", KEY_OPTION, "pull" },
        { SECTION_POD, "TLSVerify", KEY_OPTION, "tls-verify" },
        { SECTION_POD, "CertDir", KEY_OPTION, "cert-dir" },
        { SECTION_POD, "AuthFile", KEY_OPTION, "authfile" },
        { SECTION_POD, "Creds", KEY_OPTION, "creds" },
        { SECTION_POD, "SignaturePolicy", KEY_OPTION, "signature-policy" },
        { SECTION_POD, "RegistriesD", KEY_OPTION, "registries-d" },

        { SECTION_APP, "Image", KEY_IMAGE, NULL },
        { SECTION_APP, "Name", KEY_OPTION, "app" },
        { SECTION_APP, "Exec", KEY_EXEC, NULL },
        { SECTION_APP, "Args", KEY_ARGS, NULL },
        { SECTION_APP, "Environment", KEY_OPTION, "set-env" },
        { SECTION_APP, "User", KEY_OPTION, "user" },
        { SECTION_APP, "Group", KEY_OPTION, "group" },
        { SECTION_APP, "WorkingDirectory", KEY_OPTION, "working-dir" },
        { SECTION_APP, "Mount", KEY_OPTION, "mount" },
        { SECTION_APP, "EnvironmentFile", KEY_OPTION, "env-file" },
        { SECTION_APP, "ReadOnly", KEY_OPTION, "read-only" },
        { SECTION_APP, "Tmpfs", KEY_OPTION, "tmpfs" },
        { SECTION_APP, "AddDevice", KEY_DEVICE, "device" },
        { SECTION_APP, "AddCapability", KEY_OPTION, "cap-add" },
        { SECTION_APP, "DropCapability", KEY_OPTION, "cap-drop" },
        /* Its resources (app-isolators.h). */
        { SECTION_APP, "Memory", KEY_OPTION, "memory" },
        { SECTION_APP, "CPUs", KEY_OPTION, "cpus" },
        { SECTION_APP, "PidsLimit", KEY_OPTION, "pids-limit" },
        /* Its order among the pod's apps (app-lifecycle.h). */
        { SECTION_APP, "After", KEY_OPTION, "after" },
        { SECTION_APP, "Requires", KEY_OPTION, "requires" },
        { SECTION_APP, "WaitHealthy", KEY_OPTION, "wait-healthy" },
        /* The app's lifecycle (app-lifecycle.h). */
        { SECTION_APP, "StopTimeout", KEY_OPTION, "stop-timeout" },
        { SECTION_APP, "Restart", KEY_OPTION, "restart" },
        { SECTION_APP, "PreStart", KEY_OPTION, "pre-start" },
        { SECTION_APP, "PreStop", KEY_OPTION, "pre-stop" },
        { SECTION_APP, "PostStop", KEY_OPTION, "post-stop" },
        { SECTION_APP, "Watchdog", KEY_OPTION, "watchdog" },
        { SECTION_APP, "WatchdogFile", KEY_OPTION, "watchdog-file" },
        { SECTION_APP, "HealthCmd", KEY_OPTION, "health-cmd" },
        { SECTION_APP, "HealthInterval", KEY_OPTION, "health-interval" },
        { SECTION_APP, "HealthTimeout", KEY_OPTION, "health-timeout" },
        { SECTION_APP, "HealthRetries", KEY_OPTION, "health-retries" },
        { SECTION_APP, "HealthStartPeriod", KEY_OPTION, "health-start-period" },
        { SECTION_APP, "HealthOnFailure", KEY_OPTION, "health-on-failure" },

        { SECTION_SERVICE, "Restart", KEY_RESTART, NULL },
        { SECTION_SERVICE, "RestartSec", KEY_DURATION, NULL },
        { SECTION_SERVICE, "TimeoutStartSec", KEY_DURATION_INFINITY, NULL },
        { SECTION_SERVICE, "TimeoutStopSec", KEY_DURATION_INFINITY, NULL },
        { SECTION_SERVICE, "WatchdogSec", KEY_DURATION_INFINITY, NULL },
        { SECTION_SERVICE, "Type", KEY_FIXED, NULL },
        { SECTION_SERVICE, "NotifyAccess", KEY_FIXED, NULL },
        { SECTION_SERVICE, "ExecStart", KEY_FIXED, NULL },
        { SECTION_SERVICE, "KillMode", KEY_FIXED, NULL },
        { SECTION_SERVICE, "Delegate", KEY_FIXED, NULL },
        { SECTION_SERVICE, "Slice", KEY_FIXED, NULL },

        { SECTION_INSTALL, "WantedBy", KEY_INSTALL, "wants" },
        { SECTION_INSTALL, "RequiredBy", KEY_INSTALL, "requires" },
};

static const char *const restart_values[] = {
        "no", "always", "on-success", "on-failure", "on-abnormal", "on-abort", "on-watchdog",
};

/* The rest of systemd's unit types is of no use here, but harmless. */
static const char *const unit_types[] = {
        ".service", ".socket", ".target", ".device", ".mount", ".automount",
        ".swap", ".timer", ".path", ".slice", ".scope",
};

bool unit_name_is_valid(const char *s) {
        size_t n = strlen(s);
        if (n == 0 || n > 255)
                return false;
        const char *dot = strrchr(s, '.');
        if (!dot || dot == s)
                return false;
        bool typed = false;
        for (size_t i = 0; i < ELEMENTSOF(unit_types) && !typed; i++)
                typed = streq(dot, unit_types[i]);
        if (!typed)
                return false;
        for (const char *p = s; p < dot; p++) {
                if (*p == '\\') {
                        /* only \xNN, as systemd-escape writes it */
                        if (p[1] != 'x' || !isxdigit((unsigned char) p[2]) || !isxdigit((unsigned char) p[3]))
                                return false;
                        p += 3;
                        continue;
                }
                if (!isalnum((unsigned char) *p) && !strchr(":_.-@", *p))
                        return false;
        }
        return true;
}

/* One app: its image and the options that follow it on sdpod run's
 * command line. */
typedef struct DefinitionApp {
        unsigned line;          /* of its [App] header */
        char *image;
        char **options;         /* "--OPTION=VALUE", in order */
        char **args;            /* after "--" */
        bool have_args;         /* Exec= or Args= given */
        bool have_exec;
} DefinitionApp;

typedef struct Parser {
        const char *path;
        unsigned line;
        Section section;
        bool seen[_SECTION_MAX];
        PodArgs args;           /* everything given, checked as the command line is */
        char *pod_name;
        char **pod_options;     /* "--OPTION=VALUE", in order */
        DefinitionApp apps[POD_DEFINITION_APPS_MAX];
        size_t n_apps;
        char *description;
        char **unit_lines;      /* "KEY=VALUE" for [Unit], in order */
        char **service_lines;   /* the same for [Service] */
        bool have_timeout_stop;
        char **links;           /* "TARGET.wants" / "TARGET.requires", in order */
} Parser;

static void parser_done(Parser *p) {
        pod_args_done(&p->args);
        free(p->pod_name);
        strv_free(p->pod_options);
        for (size_t i = 0; i < p->n_apps; i++) {
                free(p->apps[i].image);
                strv_free(p->apps[i].options);
                strv_free(p->apps[i].args);
        }
        free(p->description);
        strv_free(p->unit_lines);
        strv_free(p->service_lines);
        strv_free(p->links);
}

/* "PATH:LINE: message" (-EINVAL). */
static int bad(Parser *p, Error **err, const char *fmt, ...) _printf_(3, 4);
static int bad(Parser *p, Error **err, const char *fmt, ...) {
        _cleanup_free_ char *msg = NULL;
        va_list ap;
        va_start(ap, fmt);
        int k = vasprintf(&msg, fmt, ap);
        va_end(ap);
        if (k < 0)
                return error_sys(err, -ENOMEM, "%s", p->path);
        if (p->line)
                return error_set(err, -EINVAL, "%s:%u: %s", p->path, p->line, msg);
        return error_set(err, -EINVAL, "%s: %s", p->path, msg);
}

static int oom(Parser *p, Error **err) {
        return error_sys(err, -ENOMEM, "%s", p->path);
}

static bool is_blank(char c) {
        return c == ' ' || c == '\t';
}

/* Splits a command line into words as a shell does with quotes, and
 * nothing else: 'single' quotes keep everything, "double" quotes and bare
 * words take a backslash as an escape of the next character; no variables,
 * globs or specifiers (the unit escapes "%" and "$" again when written). */
static int split_words(Parser *p, const char *key, const char *s, char ***ret, Error **err) {
        _cleanup_strv_free_ char **words = NULL;
        size_t n = strlen(s);
        _cleanup_free_ char *word = malloc(n + 1);
        if (!word)
                return oom(p, err);
        const char *c = s;
        for (;;) {
                while (is_blank(*c))
                        c++;
                if (!*c)
                        break;
                size_t k = 0;
                char quote = 0;
                for (; *c && (quote || !is_blank(*c)); c++) {
                        if (quote == '\'') {
                                if (*c == '\'')
                                        quote = 0;
                                else
                                        word[k++] = *c;
                        } else if (*c == '\\') {
                                if (!c[1])
                                        return bad(p, err, "%s=: a backslash at the end", key);
                                word[k++] = *++c;
                        } else if (quote == '"' && *c == '"')
                                quote = 0;
                        else if (!quote && (*c == '"' || *c == '\''))
                                quote = *c;
                        else
                                word[k++] = *c;
                }
                if (quote)
                        return bad(p, err, "%s=: the quote %c is not closed", key, quote);
                word[k] = 0;
                if (strv_push(&words, word) < 0)
                        return oom(p, err);
        }
        *ret = TAKE_PTR(words);
        return 0;
}

static int push_line(Parser *p, char ***lines, const char *key, const char *value, Error **err) {
        _cleanup_free_ char *line = NULL;
        if (asprintf(&line, "%s=%s", key, value) < 0 || strv_push(lines, line) < 0)
                return oom(p, err);
        return 0;
}

/* "%" is a specifier in every value of a unit file: a literal one is
 * doubled. */
static char *escape_percent(const char *s) {
        size_t n = 0;
        for (const char *c = s; *c; c++)
                n += *c == '%' ? 2 : 1;
        char *r = malloc(n + 1), *w = r;
        if (!r)
                return NULL;
        for (const char *c = s; *c; c++) {
                *w++ = *c;
                if (*c == '%')
                        *w++ = '%';
        }
        *w = 0;
        return r;
}

/* Checks each space-separated unit name of value; the names are written
 * back one space apart. */
static int parse_units(Parser *p, const char *key, const char *value, char **ret, Error **err) {
        _cleanup_strv_free_ char **names = NULL;
        int r = split_words(p, key, value, &names, err);
        if (r < 0)
                return r;
        if (!names)
                return bad(p, err, "%s= names no unit", key);
        _cleanup_free_ char *joined = NULL;
        for (char **n = names; *n; n++) {
                if (!unit_name_is_valid(*n))
                        return bad(p, err, "%s=: \"%s\" is not a unit name (NAME.service, NAME.target, ...)", key, *n);
                char *j = NULL;
                if (asprintf(&j, "%s%s%s", strempty(joined), joined ? " " : "", *n) < 0)
                        return oom(p, err);
                free(joined);
                joined = j;
        }
        *ret = TAKE_PTR(joined);
        return 0;
}

/* A time span of systemd's syntax that this parser also understands:
 * numbers with a unit (us, ms, s, min, m, h, d), written one after the
 * other without spaces ("1min30s"), or a bare number of seconds. */
static bool duration_is_valid(const char *s) {
        static const char *const units[] = { "usec", "us", "msec", "ms", "sec", "s", "min", "m", "hr", "h", "d" };
        if (!*s)
                return false;
        while (*s) {
                if (!isdigit((unsigned char) *s))
                        return false;
                while (isdigit((unsigned char) *s))
                        s++;
                size_t i = 0;
                while (i < ELEMENTSOF(units) && !startswith(s, units[i]))
                        i++;
                if (i < ELEMENTSOF(units))
                        s += strlen(units[i]);
                else if (*s)
                        return false;
        }
        return true;
}

static int parse_uint(const char *s, unsigned *ret) {
        if (!isdigit((unsigned char) *s) || strlen(s) > 9)
                return -EINVAL;
        *ret = (unsigned) strtoul(s, NULL, 10);
        return 0;
}

static int add_option(Parser *p, const char *key, const char *option, const char *value, char ***options, Error **err) {
        int r = pod_args_add_option(&p->args, option, value, err);
        if (r < 0)
                return r == -ENOMEM ? r : (error_prefix(err, "%s:%u: %s=", p->path, p->line, key), -EINVAL);
        _cleanup_free_ char *word = NULL;
        if (asprintf(&word, "--%s=%s", option, value) < 0 || strv_push(options, word) < 0)
                return oom(p, err);
        return 0;
}

static int parse_key(Parser *p, const DefinitionKey *k, const char *value, Error **err) {
        DefinitionApp *app = p->section == SECTION_APP ? &p->apps[p->n_apps - 1] : NULL;
        _cleanup_free_ char *v = NULL;
        unsigned u;
        int r;

        switch (k->kind) {
        case KEY_DEVICE: {
                /* Checked here as the app's manifest will be, as it becomes
                 * a word of DeviceAllow= too; the node itself is looked up
                 * when the pod is prepared (it may appear after boot). */
                const char *colon = strchr(value, ':');
                _cleanup_free_ char *path = colon ? strndup(value, (size_t) (colon - value)) : strdup(value);
                if (!path)
                        return oom(p, err);
                const char *problem = app_mount_path_problem(path, true);
                if (problem)
                        return bad(p, err, "AddDevice=%s: %s", value, problem);
                if (!startswith(path, "/dev/"))
                        return bad(p, err, "AddDevice=%s: not under /dev", value);
                if (colon && !device_access_is_valid(colon + 1))
                        return bad(p, err, "AddDevice=%s: access \"%s\": expected r, w and m (at least one, each once)",
                                   value, colon + 1);
                return add_option(p, k->key, k->option, value, &app->options, err);
        }
        case KEY_OPTION:
                return add_option(p, k->key, k->option, value, app ? &app->options : &p->pod_options, err);
        case KEY_POD_NAME:
                if (p->pod_name)
                        return bad(p, err, "Name= given twice");
                if (!pod_name_is_valid(value))
                        return bad(p, err, "Name=%s: a pod name is 1 to 64 letters, digits, '.' and '-', not starting "
                                   "with '-' or '.'", value);
                return (p->pod_name = strdup(value)) ? 0 : oom(p, err);
        case KEY_IMAGE:
                if (app->image)
                        return bad(p, err, "Image= given twice in one [App]: each app is a section of its own");
                if (!*value)
                        return bad(p, err, "Image= is empty");
                if (value[0] == '-')
                        return bad(p, err, "Image=%s: an image reference does not start with '-'", value);
                if (!(app->image = strdup(value)))
                        return oom(p, err);
                /* The command line's image of this app, for its checks. */
                free(p->args.apps[p->args.n_apps - 1].image);
                return (p->args.apps[p->args.n_apps - 1].image = strdup(value)) ? 0 : oom(p, err);
        case KEY_EXEC:
        case KEY_ARGS: {
                if (app->have_args)
                        return bad(p, err, "%s=: the app's command is given already (Exec= and Args= are one of "
                                   "each app, and exclusive)", k->key);
                _cleanup_strv_free_ char **words = NULL;
                if ((r = split_words(p, k->key, value, &words, err)) < 0)
                        return r;
                for (char **w = words; w && *w; w++)
                        if (streq(*w, "---"))
                                return bad(p, err, "%s=: an argument \"---\" cannot be given: sdpod run would read "
                                           "it as the start of the next app", k->key);
                if (k->kind == KEY_EXEC) {
                        if (!words || !*words[0])
                                return bad(p, err, "Exec= has no program (leave it out to run the image's own command)");
                        if ((r = add_option(p, k->key, "exec", words[0], &app->options, err)) < 0)
                                return r;
                        app->have_exec = true;
                }
                size_t first = k->kind == KEY_EXEC ? 1 : 0;
                for (size_t i = first; words && words[i]; i++)
                        if (strv_push(&app->args, words[i]) < 0)
                                return oom(p, err);
                app->have_args = true;
                return 0;
        }
        case KEY_TEXT:
                if (p->description)
                        return bad(p, err, "%s= given twice", k->key);
                return (p->description = escape_percent(value)) ? 0 : oom(p, err);
        case KEY_UNITS:
                if ((r = parse_units(p, k->key, value, &v, err)) < 0)
                        return r;
                return push_line(p, &p->unit_lines, k->key, v, err);
        case KEY_URLS: {
                _cleanup_strv_free_ char **urls = NULL;
                if ((r = split_words(p, k->key, value, &urls, err)) < 0)
                        return r;
                for (char **url = urls; url && *url; url++)
                        if (!startswith(*url, "man:") && !startswith(*url, "http://") && !startswith(*url, "https://") &&
                            !startswith(*url, "file:") && !startswith(*url, "info:"))
                                return bad(p, err, "Documentation=: \"%s\" is not a man:, info:, file:, http:// or https:// "
                                           "address", *url);
                if (!(v = escape_percent(value)))
                        return oom(p, err);
                return push_line(p, &p->unit_lines, k->key, v, err);
        }
        case KEY_DURATION:
        case KEY_DURATION_INFINITY:
                if (!duration_is_valid(value) && !(k->kind == KEY_DURATION_INFINITY && streq(value, "infinity")))
                        return bad(p, err, "%s=%s: not a time span (as 30s, 2min, 500ms, 1h%s)", k->key, value,
                                   k->kind == KEY_DURATION_INFINITY ? ", or infinity" : "");
                if (streq(k->key, "TimeoutStopSec"))
                        p->have_timeout_stop = true;
                return push_line(p, k->section == SECTION_UNIT ? &p->unit_lines : &p->service_lines, k->key, value, err);
        case KEY_UINT:
                if (parse_uint(value, &u) < 0)
                        return bad(p, err, "%s=%s: not a number", k->key, value);
                return push_line(p, &p->unit_lines, k->key, value, err);
        case KEY_RESTART:
                for (size_t i = 0; i < ELEMENTSOF(restart_values); i++)
                        if (streq(value, restart_values[i]))
                                return push_line(p, &p->service_lines, k->key, value, err);
                return bad(p, err, "Restart=%s: not one of no, always, on-success, on-failure, on-abnormal, "
                           "on-abort, on-watchdog", value);
        case KEY_INSTALL: {
                _cleanup_strv_free_ char **names = NULL;
                if ((r = split_words(p, k->key, value, &names, err)) < 0)
                        return r;
                if (!names)
                        return bad(p, err, "%s= names no unit", k->key);
                for (char **n = names; *n; n++) {
                        _cleanup_free_ char *dir = NULL;
                        if (!unit_name_is_valid(*n) || strchr(*n, '/'))
                                return bad(p, err, "%s=: \"%s\" is not a unit name (as multi-user.target)", k->key, *n);
                        if (asprintf(&dir, "%s.%s", *n, k->option) < 0)
                                return oom(p, err);
                        if (!strv_contains(p->links, dir) && strv_push(&p->links, dir) < 0)
                                return oom(p, err);
                }
                return 0;
        }
        case KEY_FIXED:
                return bad(p, err, "%s= of [Service] is the generator's: a pod's service is always Type=notify, "
                           "NotifyAccess=main, KillMode=mixed, Delegate=yes, Slice=machine.slice, and runs sdpod run",
                           k->key);
        }
        return bad(p, err, "internal error: key %s", k->key);
}

static int parse_section_header(Parser *p, const char *line, Error **err) {
        size_t n = strlen(line);
        if (line[n - 1] != ']')
                return bad(p, err, "a section header is [NAME]: %s", line);
        Section s = SECTION_NONE;
        for (Section i = SECTION_UNIT; i < _SECTION_MAX; i++)
                if (strlen(section_names[i]) == n - 2 && strncmp(line + 1, section_names[i], n - 2) == 0)
                        s = i;
        if (s == SECTION_NONE)
                return bad(p, err, "unknown section %s (expected [Unit], [Pod], [App], [Service] or [Install])", line);
        if (s != SECTION_APP && p->seen[s])
                return bad(p, err, "section %s given twice", line);
        p->seen[s] = true;
        p->section = s;
        if (s != SECTION_APP)
                return 0;
        /* Each [App] is the next app, in order. */
        if (p->n_apps == POD_DEFINITION_APPS_MAX)
                return bad(p, err, "more than %d apps", POD_DEFINITION_APPS_MAX);
        if (p->n_apps > 0 && pod_args_add_app(&p->args, err) < 0)
                return oom(p, err);
        if (p->args.n_apps == 0 && pod_args_add_app(&p->args, err) < 0)
                return oom(p, err);
        p->apps[p->n_apps++] = (DefinitionApp) { .line = p->line };
        return 0;
}

static int parse_line(Parser *p, char *line, Error **err) {
        for (const char *c = line; *c; c++)
                if ((unsigned char) *c < 0x20 && *c != '\t')
                        return bad(p, err, "control character 0x%02x", (unsigned) (unsigned char) *c);
                else if (*c == 0x7f)
                        return bad(p, err, "control character 0x7f");
        if (!utf8_is_valid(line))
                return bad(p, err, "not UTF-8");
        while (is_blank(*line))
                line++;
        size_t n = strlen(line);
        while (n > 0 && is_blank(line[n - 1]))
                line[--n] = 0;
        if (n == 0 || line[0] == '#' || line[0] == ';')
                return 0;
        if (line[n - 1] == '\\')
                return bad(p, err, "a line that ends with a backslash: continued lines are not supported");
        if (line[0] == '[')
                return parse_section_header(p, line, err);

        char *eq = strchr(line, '=');
        if (!eq)
                return bad(p, err, "expected KEY=VALUE or [SECTION], got \"%s\"", line);
        char *key = line, *value = eq + 1;
        char *end = eq;
        while (end > key && is_blank(end[-1]))
                end--;
        *end = 0;
        while (is_blank(*value))
                value++;
        if (!*key)
                return bad(p, err, "a line without a key: =%s", value);
        if (p->section == SECTION_NONE)
                return bad(p, err, "%s= before any section: a definition begins with [Unit], [Pod] or [App]", key);
        for (size_t i = 0; i < ELEMENTSOF(definition_keys); i++)
                if (definition_keys[i].section == p->section && streq(definition_keys[i].key, key))
                        return parse_key(p, &definition_keys[i], value, err);
        return bad(p, err, "unknown key %s= in [%s] (sdpod-pod-generator(8) lists the keys)", key,
                   section_names[p->section]);
}

/* The whole of sdpod run's command line, after "sdpod run". */
static int build_run_args(Parser *p, const char *name, char ***ret, Error **err) {
        _cleanup_strv_free_ char **argv = NULL;
        _cleanup_free_ char *name_option = NULL;
        if (asprintf(&name_option, "--name=%s", name) < 0 || strv_push(&argv, "--replace") < 0 ||
            strv_push(&argv, name_option) < 0)
                return oom(p, err);
        for (char **o = p->pod_options; o && *o; o++)
                if (strv_push(&argv, *o) < 0)
                        return oom(p, err);
        for (size_t i = 0; i < p->n_apps; i++) {
                const DefinitionApp *a = &p->apps[i];
                if ((i > 0 && strv_push(&argv, "---") < 0) || strv_push(&argv, a->image) < 0)
                        return oom(p, err);
                for (char **o = a->options; o && *o; o++)
                        if (strv_push(&argv, *o) < 0)
                                return oom(p, err);
                if (a->have_args && strv_push(&argv, "--") < 0)
                        return oom(p, err);
                for (char **w = a->args; w && *w; w++)
                        if (strv_push(&argv, *w) < 0)
                                return oom(p, err);
        }
        *ret = TAKE_PTR(argv);
        return 0;
}

/* As pod@.service's: the pod's device rule and task limit, set by the
 * unit, which the pod cannot change (sdpod-security(7)); the limit is the
 * definition's PidsLimit=, and each Device= of an app is allowed to the
 * pod as a whole (the app's own rule narrows it to the app). */
static void render_limits(FILE *f, const PodArgs *args) {
        fputs("DevicePolicy=closed\n", f);
        for (const PodStandardDevice *d = pod_standard_devices; d->device_allow; d++)
                fprintf(f, "DeviceAllow=%s\n", d->device_allow);
        for (size_t i = 0; i < args->n_apps; i++)
                for (char **d = args->apps[i].devices; d && *d; d++) {
                        const char *colon = strchr(*d, ':');
                        fprintf(f, "DeviceAllow=%.*s %s\n", (int) (colon ? colon - *d : (ptrdiff_t) strlen(*d)), *d,
                                colon ? colon + 1 : "rw");
                }
        const char *limit = NULL;
        uint64_t memory = 0, cpu_millis = 0;
        for (size_t i = 0; i < args->n_lifecycle; i++) {
                const PodNameValue *l = &args->lifecycle[i];
                if (streq(l->name, POD_ANNOTATION_PIDS_LIMIT))
                        limit = l->value;
                /* Checked when parsed (app-lifecycle.c). */
                else if (streq(l->name, POD_ANNOTATION_MEMORY))
                        (void) parse_quantity_bytes(l->value, &memory);
                else if (streq(l->name, POD_ANNOTATION_CPUS))
                        (void) parse_cpu_millis(l->value, &cpu_millis);
        }
        if (limit)
                fprintf(f, "TasksMax=%s\n", limit);
        else
                fprintf(f, "TasksMax=%u\n", POD_PIDS_LIMIT_DEFAULT);
        if (memory > 0)
                fprintf(f, "MemoryMax=%" PRIu64 "\n", memory);
        if (cpu_millis > 0) {
                char quota[CPU_QUOTA_MAX];
                format_cpu_quota(cpu_millis, quota);
                fprintf(f, "CPUQuota=%s\n", quota);
        }
}

static int render_service(Parser *p, const char *name, const char *sdpod_path, char **run_args, const PodArgs *args,
                          char **ret, Error **err) {
        char *buf = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&buf, &size);
        if (!f)
                return oom(p, err);
        _cleanup_free_ char *quoted_path = escape_percent(p->path), *program = unit_quote_word(sdpod_path, false);
        bool ok = quoted_path && program;
        fprintf(f, "# Automatically generated by sdpod-pod-generator from %s\n", p->path);
        fputs("# Change the definition, not this file, then: systemctl daemon-reload\n", f);
        fputs("[Unit]\n", f);
        if (p->description)
                fprintf(f, "Description=%s\n", p->description);
        else
                fprintf(f, "Description=sdpod pod %s\n", name);
        fputs("Documentation=man:sdpod-pod-generator(8)\n", f);
        fprintf(f, "SourcePath=%s\n", strempty(quoted_path));
        for (char **l = p->unit_lines; l && *l; l++)
                fprintf(f, "%s\n", *l);
        fputs("\n[Service]\n", f);
        /* As pod@.service (pod@.service(8)): the main process becomes the
         * pod's run entrypoint, whose nspawn's READY=1 says the pod is up. */
        fputs("Type=notify\nNotifyAccess=main\n", f);
        fprintf(f, "ExecStart=%s run", strempty(program));
        for (char **a = run_args; a && *a && ok; a++) {
                _cleanup_free_ char *w = unit_quote_word(*a, true);
                ok = w != NULL;
                fprintf(f, " %s", strempty(w));
        }
        fputs("\nKillMode=mixed\n", f);
        if (!p->have_timeout_stop)
                fputs("TimeoutStopSec=30s\n", f);
        fputs("Delegate=yes\nSlice=machine.slice\n", f);
        render_limits(f, args);
        /* As pod@.service: the run entrypoint pings the pod's systemd and
         * says WATCHDOG=1 for a pod that answers (pod-liveness.h); a
         * WatchdogSec= of [Service], below, wins. */
        fputs("WatchdogSec=1min\n", f);
        for (char **l = p->service_lines; l && *l; l++)
                fprintf(f, "%s\n", *l);
        if (fclose(f) != 0 || !ok) {
                free(buf);
                return oom(p, err);
        }
        *ret = buf;
        return 0;
}

static int add_unit_file(PodUnits *u, const char *path, char *content, char *link_target) {
        UnitFile *files = realloc(u->files, (u->n_files + 1) * sizeof(UnitFile));
        char *copy = strdup(path);
        if (!files || !copy) {
                if (files)
                        u->files = files;
                free(copy);
                free(content);
                free(link_target);
                return -ENOMEM;
        }
        u->files = files;
        u->files[u->n_files++] = (UnitFile) { .path = copy, .content = content, .link_target = link_target };
        return 0;
}

/* NAME of DIR/NAME.pod. */
static int definition_name(Parser *p, char **ret, Error **err) {
        const char *base = strrchr(p->path, '/');
        base = base ? base + 1 : p->path;
        size_t n = strlen(base), suffix = strlen(POD_DEFINITION_SUFFIX);
        if (n <= suffix || !streq(base + n - suffix, POD_DEFINITION_SUFFIX))
                return bad(p, err, "a definition is named NAME" POD_DEFINITION_SUFFIX);
        _cleanup_free_ char *name = strndup(base, n - suffix);
        if (!name)
                return oom(p, err);
        /* NAME.service is the unit, and the pod's default name: no '@'
         * (templates) nor anything a pod name may not have. */
        if (!pod_name_is_valid(name))
                return bad(p, err, "\"%s\" cannot name a pod's service: a definition's name is 1 to 64 letters, "
                           "digits, '.' and '-', not starting with '-' or '.'", name);
        *ret = TAKE_PTR(name);
        return 0;
}

int pod_definition_render(const char *path, const char *text, size_t size, const char *sdpod_path, PodUnits *ret,
                          Error **err) {
        _cleanup_(parser_done) Parser p = { .path = path };
        _cleanup_free_ char *name = NULL;
        int r = definition_name(&p, &name, err);
        if (r < 0)
                return r;
        if (size > POD_DEFINITION_MAX)
                return bad(&p, err, "larger than %d bytes", POD_DEFINITION_MAX);
        if (memchr(text, 0, size))
                return bad(&p, err, "contains a NUL byte");

        char line[POD_DEFINITION_LINE_MAX + 1];
        for (const char *s = text, *end = text + size; s < end;) {
                const char *nl = memchr(s, '\n', (size_t) (end - s));
                size_t n = (size_t) ((nl ? nl : end) - s);
                p.line++;
                if (n > POD_DEFINITION_LINE_MAX)
                        return bad(&p, err, "a line longer than %d bytes", POD_DEFINITION_LINE_MAX);
                memcpy(line, s, n);
                line[n] = 0;
                if ((r = parse_line(&p, line, err)) < 0)
                        return r;
                s += n + 1;
        }

        /* What no single line says. */
        for (size_t i = 0; i < p.n_apps; i++)
                if (!p.apps[i].image) {
                        p.line = p.apps[i].line;
                        return bad(&p, err, "[App] without Image=");
                }
        p.line = 0;
        if (p.n_apps == 0)
                return bad(&p, err, "no [App] section: a pod has at least one app");

        /* What prepare checks of the options as a whole, before any image
         * is looked at: the network's (--port needs a network namespace
         * of the pod's own) and each mount's volume. */
        _cleanup_pod_manifest_ PodManifest *scratch = NULL;
        if (pod_manifest_new(&scratch) < 0)
                return oom(&p, err);
        if ((r = pod_net_args_apply(&p.args.net, scratch, err)) < 0)
                return r == -ENOMEM ? oom(&p, err) : (error_prefix(err, "%s", path), -EINVAL);
        for (size_t i = 0; i < p.args.n_apps; i++)
                for (size_t j = 0; j < p.args.apps[i].n_mounts; j++) {
                        const char *volume = p.args.apps[i].mounts[j].volume;
                        size_t v = 0;
                        while (v < p.args.n_volumes && !streq(p.args.volumes[v].name, volume))
                                v++;
                        if (v == p.args.n_volumes) {
                                p.line = p.apps[i].line;
                                return bad(&p, err, "[App] Mount=: no Volume=%s,... in [Pod]", volume);
                        }
                }

        /* The command line the unit runs, parsed again as sdpod run will
         * parse it: whatever the checks above let through that the command
         * line would refuse is refused here too, not at the first start. */
        const char *pod_name = p.pod_name ?: name;
        _cleanup_strv_free_ char **run_args = NULL;
        if ((r = build_run_args(&p, pod_name, &run_args, err)) < 0)
                return r;
        _cleanup_(pod_args_done) PodArgs check = {};
        r = pod_args_parse((int) strv_length(run_args) - 1, run_args + 1, true, &check, err);
        if (r < 0)
                return r == -ENOMEM ? oom(&p, err) : (error_prefix(err, "%s", path), -EINVAL);

        /* The order between the apps, when every app is named here (an
         * app without Name= is named after its image, at each start). */
        bool named = true;
        for (size_t i = 0; i < check.n_apps; i++)
                named &= check.apps[i].name != NULL;
        if (named) {
                PodApp apps[check.n_apps];
                for (size_t i = 0; i < check.n_apps; i++)
                        apps[i] = (PodApp) { .name = check.apps[i].name, .annotations = check.apps[i].lifecycle,
                                             .n_annotations = check.apps[i].n_lifecycle };
                if ((r = app_order_check(apps, check.n_apps, true, err)) < 0)
                        return r == -ENOMEM ? oom(&p, err) : (error_prefix(err, "%s", path), -EINVAL);
        }

        _cleanup_(pod_units_done) PodUnits u = {};
        char *content = NULL;
        _cleanup_free_ char *unit = NULL;
        if (asprintf(&unit, "%s.service", name) < 0)
                return oom(&p, err);
        if ((r = render_service(&p, name, sdpod_path, run_args, &check, &content, err)) < 0)
                return r;
        if (add_unit_file(&u, unit, content, NULL) < 0)
                return oom(&p, err);
        for (char **dir = p.links; dir && *dir; dir++) {
                _cleanup_free_ char *link = NULL;
                char *target = NULL;
                if (asprintf(&link, "%s/%s", *dir, unit) < 0 || asprintf(&target, "../%s", unit) < 0)
                        return oom(&p, err);
                if (add_unit_file(&u, link, NULL, target) < 0)
                        return oom(&p, err);
        }
        *ret = u;
        u = (PodUnits) {};
        return 0;
}
