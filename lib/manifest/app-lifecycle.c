/* SPDX-License-Identifier: Apache-2.0 */
#include <json-c/json.h>

#include "basic/json-util.h"
#include "basic/quantity.h"
#include "basic/strv.h"
#include "basic/time-util.h"
#include "manifest/app-lifecycle.h"

typedef enum ValueKind {
        VALUE_DURATION,         /* "10s", "500ms": more than 0 */
        VALUE_DURATION_OR_ZERO,
        VALUE_RESTART,
        VALUE_COUNT,            /* 1 to 100 */
        VALUE_TASKS,            /* 1 to POD_PIDS_LIMIT_MAX */
        VALUE_POD_MEMORY,       /* bytes, POD_MEMORY_MIN or more */
        VALUE_POD_CPUS,         /* CPUs, POD_CPU_MILLIS_MIN to _MAX */
        VALUE_PATH,             /* absolute */
        VALUE_COMMAND,          /* a JSON array of non-empty strings */
        VALUE_HEALTH_ACTION,
        VALUE_APP_NAMES,        /* "a,b": app names, each once */
} ValueKind;

static const struct {
        const char *option;
        const char *annotation;
        ValueKind kind;
} table[] = {
        { "stop-timeout", APP_ANNOTATION_STOP_TIMEOUT, VALUE_DURATION },
        { "restart", APP_ANNOTATION_RESTART, VALUE_RESTART },
        { "watchdog", APP_ANNOTATION_WATCHDOG, VALUE_DURATION },
        { "watchdog-file", APP_ANNOTATION_WATCHDOG_FILE, VALUE_PATH },
        { "health-cmd", APP_ANNOTATION_HEALTH_CMD, VALUE_COMMAND },
        { "health-interval", APP_ANNOTATION_HEALTH_INTERVAL, VALUE_DURATION },
        { "health-timeout", APP_ANNOTATION_HEALTH_TIMEOUT, VALUE_DURATION },
        { "health-retries", APP_ANNOTATION_HEALTH_RETRIES, VALUE_COUNT },
        { "health-start-period", APP_ANNOTATION_HEALTH_START_PERIOD, VALUE_DURATION_OR_ZERO },
        { "health-on-failure", APP_ANNOTATION_HEALTH_ON_FAILURE, VALUE_HEALTH_ACTION },
        { "after", APP_ANNOTATION_AFTER, VALUE_APP_NAMES },
        { "requires", APP_ANNOTATION_REQUIRES, VALUE_APP_NAMES },
        { "wait-healthy", APP_ANNOTATION_WAIT_HEALTHY, VALUE_APP_NAMES },
        { "pod-watchdog", POD_ANNOTATION_WATCHDOG, VALUE_DURATION },
        { "pod-pids-limit", POD_ANNOTATION_PIDS_LIMIT, VALUE_TASKS },
        { "pod-memory", POD_ANNOTATION_MEMORY, VALUE_POD_MEMORY },
        { "pod-cpus", POD_ANNOTATION_CPUS, VALUE_POD_CPUS },
};

static const char *const restart_names[] = { "no", "on-failure", "always" };
static const char *const health_action_names[] = { "none", "restart", "stop" };

static int name_index(const char *const *names, size_t n, const char *s) {
        for (size_t i = 0; i < n; i++)
                if (streq(names[i], s))
                        return (int) i;
        return -1;
}

const char *app_lifecycle_annotation_of_option(const char *option) {
        for (size_t i = 0; i < ELEMENTSOF(table); i++)
                if (streq(table[i].option, option))
                        return table[i].annotation;
        return NULL;
}

bool app_lifecycle_annotation_is(const char *annotation) {
        for (size_t i = 0; i < ELEMENTSOF(table); i++)
                if (streq(table[i].annotation, annotation))
                        return true;
        return false;
}

/* The pod's own are its --pod-* options (but --pod-stop-timeout, every
 * app's default, which has the app's annotation). */
bool app_lifecycle_annotation_is_pods(const char *annotation) {
        for (size_t i = 0; i < ELEMENTSOF(table); i++)
                if (streq(table[i].annotation, annotation))
                        return startswith(table[i].option, "pod-");
        return false;
}

/* A JSON array of non-empty strings, as a NULL-terminated list. */
static int command_from_json(const char *text, char ***ret) {
        _cleanup_json_ struct json_object *o = NULL;
        if (json_parse(text, strlen(text), "command", &o, NULL) < 0 || !json_object_is_type(o, json_type_array) || json_object_array_length(o) == 0)
                return -EINVAL;
        size_t n = json_object_array_length(o);
        _cleanup_strv_free_ char **l = calloc(n + 1, sizeof(char *));
        if (!l)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                struct json_object *e = json_object_array_get_idx(o, i);
                if (!json_object_is_type(e, json_type_string) || json_object_get_string_len(e) == 0 ||
                    strlen(json_object_get_string(e)) != (size_t) json_object_get_string_len(e))
                        return -EINVAL;
                if (!(l[i] = strdup(json_object_get_string(e))))
                        return -ENOMEM;
        }
        *ret = TAKE_PTR(l);
        return 0;
}

/* "a,b" as {"a", "b"}: -EINVAL for an empty list, an empty or invalid
 * name or one given twice, -E2BIG beyond APP_ORDER_NAMES_MAX. */
static int split_names(const char *value, char ***ret) {
        _cleanup_strv_free_ char **l = NULL;
        _cleanup_free_ char *copy = strdup(value);
        if (!copy)
                return -ENOMEM;
        size_t n = 0;
        for (char *s = copy, *comma;; s = comma + 1) {
                comma = strchr(s, ',');
                if (comma)
                        *comma = 0;
                if (!pod_app_name_is_valid(s) || strv_contains(l, s))
                        return -EINVAL;
                if (++n > APP_ORDER_NAMES_MAX)
                        return -E2BIG;
                if (strv_push(&l, s) < 0)
                        return -ENOMEM;
                if (!comma)
                        break;
        }
        *ret = TAKE_PTR(l);
        return 0;
}

int app_order_names(const PodApp *app, const char *annotation, char ***ret) {
        const char *v = pod_app_get_annotation(app, annotation);
        *ret = NULL;
        if (!v)
                return 0;
        int r = split_names(v, ret);
        return r == -ENOMEM ? r : 0;
}

static const char *const order_annotations[] = {
        APP_ANNOTATION_AFTER, APP_ANNOTATION_REQUIRES, APP_ANNOTATION_WAIT_HEALTHY,
};

static const char *order_option(const char *annotation) {
        for (size_t i = 0; i < ELEMENTSOF(table); i++)
                if (streq(table[i].annotation, annotation))
                        return table[i].option;
        return annotation;
}

static ssize_t app_index(const PodApp *apps, size_t n_apps, const char *name) {
        for (size_t i = 0; i < n_apps; i++)
                if (streq(apps[i].name, name))
                        return (ssize_t) i;
        return -1;
}

/* Depth-first over "starts after", with a stack of its own (a manifest
 * may have many apps: no recursion as deep as their count). state: 0
 * unseen, 1 on the stack, 2 done. */
typedef struct OrderFrame {
        size_t app, next;       /* the app, and its next edge to follow */
} OrderFrame;

static int order_visit(const PodApp *apps, size_t n_apps, char ***edges, size_t root, uint8_t *state,
                       OrderFrame *stack, Error **err) {
        size_t depth = 0;
        stack[depth++] = (OrderFrame) { root, 0 };
        state[root] = 1;
        while (depth > 0) {
                OrderFrame *top = &stack[depth - 1];
                const char *name = edges[top->app] ? edges[top->app][top->next] : NULL;
                if (!name) {
                        state[top->app] = 2;
                        depth--;
                        continue;
                }
                top->next++;
                ssize_t k = app_index(apps, n_apps, name);
                if (k < 0 || state[k] == 2)
                        continue;
                if (state[k] == 0) {
                        state[k] = 1;
                        stack[depth++] = (OrderFrame) { (size_t) k, 0 };
                        continue;
                }
                /* On the stack: the cycle is the stack from k up, and k. */
                size_t from = 0;
                while (stack[from].app != (size_t) k)
                        from++;
                _cleanup_free_ char *cycle = strdup(apps[k].name);
                for (size_t j = from + 1; j <= depth && cycle; j++) {
                        char *c = NULL;
                        if (asprintf(&c, "%s -> %s", cycle, apps[j < depth ? stack[j].app : (size_t) k].name) < 0)
                                c = NULL;
                        free(cycle);
                        cycle = c;
                }
                if (!cycle)
                        return error_sys(err, -ENOMEM, "apps");
                return error_set(err, -EINVAL, "the order of the apps has a cycle: %s (each starts after the next, "
                                 "by --after, --requires or --wait-healthy)", cycle);
        }
        return 0;
}

int app_order_check(const PodApp *apps, size_t n_apps, bool complete, Error **err) {
        if (n_apps == 0)
                return 0;
        char ***edges = calloc(n_apps, sizeof(char **));
        uint8_t *state = calloc(n_apps, 1);
        OrderFrame *stack = calloc(n_apps, sizeof(OrderFrame));
        int r = edges && state && stack ? 0 : error_sys(err, -ENOMEM, "apps");
        for (size_t i = 0; r >= 0 && i < n_apps; i++)
                for (size_t a = 0; r >= 0 && a < ELEMENTSOF(order_annotations); a++) {
                        const char *v = pod_app_get_annotation(&apps[i], order_annotations[a]);
                        _cleanup_strv_free_ char **names = NULL;
                        if (!v)
                                continue;
                        if ((r = split_names(v, &names)) < 0) {
                                r = r == -ENOMEM ? error_sys(err, r, "apps")
                                                 : error_set(err, -EINVAL, "app %s: %s=%s: not a list of app names",
                                                             apps[i].name, order_annotations[a], v);
                                break;
                        }
                        for (char **n = names; r >= 0 && *n; n++) {
                                ssize_t k = app_index(apps, n_apps, *n);
                                if (k < 0 && !complete)
                                        continue;
                                if (k < 0)
                                        r = error_set(err, -EINVAL, "app %s: --%s=%s: the pod has no app %s", apps[i].name,
                                                      order_option(order_annotations[a]), v, *n);
                                else if ((size_t) k == i)
                                        r = error_set(err, -EINVAL, "app %s: --%s=%s: an app cannot wait for itself",
                                                      apps[i].name, order_option(order_annotations[a]), v);
                                else if (streq(order_annotations[a], APP_ANNOTATION_WAIT_HEALTHY) &&
                                         !pod_app_get_annotation(&apps[k], APP_ANNOTATION_HEALTH_CMD))
                                        r = error_set(err, -EINVAL, "app %s: --wait-healthy=%s: app %s has no health "
                                                      "check (--health-cmd)", apps[i].name, v, *n);
                                else if (!strv_contains(edges[i], *n) && strv_push(&edges[i], *n) < 0)
                                        r = error_sys(err, -ENOMEM, "apps");
                        }
                }
        for (size_t i = 0; r >= 0 && i < n_apps; i++)
                if (state[i] == 0)
                        r = order_visit(apps, n_apps, edges, i, state, stack, err);
        for (size_t i = 0; edges && i < n_apps; i++)
                strv_free(edges[i]);
        free(edges);
        free(state);
        free(stack);
        return r;
}

int app_order_check_names(const PodApp *apps, size_t n_apps, size_t index, Error **err) {
        for (size_t a = 0; a < ELEMENTSOF(order_annotations); a++) {
                _cleanup_strv_free_ char **names = NULL;
                if (app_order_names(&apps[index], order_annotations[a], &names) < 0)
                        return error_sys(err, -ENOMEM, "apps");
                for (char **n = names; n && *n; n++)
                        if (app_index(apps, n_apps, *n) < 0)
                                return error_set(err, -EINVAL, "app %s: --%s=%s: the pod has no app %s", apps[index].name,
                                                 order_option(order_annotations[a]),
                                                 pod_app_get_annotation(&apps[index], order_annotations[a]), *n);
        }
        return 0;
}

int app_lifecycle_check(const char *annotation, const char *value, Error **err) {
        size_t i = 0;
        while (i < ELEMENTSOF(table) && !streq(table[i].annotation, annotation))
                i++;
        if (i == ELEMENTSOF(table))
                return error_set(err, -EINVAL, "%s: not an annotation of an app's lifecycle", annotation);
        uint64_t usec;
        switch (table[i].kind) {
        case VALUE_DURATION:
        case VALUE_DURATION_OR_ZERO:
                if (parse_duration(value, &usec) < 0 || (usec == 0 && table[i].kind == VALUE_DURATION))
                        return error_set(err, -EINVAL, "\"%s\" is not a duration%s (\"30s\", \"500ms\", \"1m\")", value,
                                         table[i].kind == VALUE_DURATION ? " above 0" : "");
                return 0;
        case VALUE_RESTART:
                if (name_index(restart_names, ELEMENTSOF(restart_names), value) < 0)
                        return error_set(err, -EINVAL, "\"%s\" is not no, on-failure or always", value);
                return 0;
        case VALUE_HEALTH_ACTION:
                if (name_index(health_action_names, ELEMENTSOF(health_action_names), value) < 0)
                        return error_set(err, -EINVAL, "\"%s\" is not none, restart or stop", value);
                return 0;
        case VALUE_COUNT: {
                char *end = NULL;
                errno = 0;
                unsigned long n = strtoul(value, &end, 10);
                if (!*value || *end || errno || value[0] == '-' || n < 1 || n > 100)
                        return error_set(err, -EINVAL, "\"%s\" is not a number from 1 to 100", value);
                return 0;
        }
        case VALUE_TASKS: {
                char *end = NULL;
                errno = 0;
                unsigned long long n = strtoull(value, &end, 10);
                if (!*value || *end || errno || value[0] == '-' || n < 1 || n > POD_PIDS_LIMIT_MAX)
                        return error_set(err, -EINVAL, "\"%s\" is not a number from 1 to %u", value, POD_PIDS_LIMIT_MAX);
                return 0;
        }
        case VALUE_POD_MEMORY: {
                uint64_t bytes;
                int r = parse_quantity_bytes(value, &bytes);
                if (r < 0)
                        return error_set(err, -EINVAL, "\"%s\" is %s (\"512Mi\", \"2G\")", value,
                                         r == -ERANGE ? "too large" : "not a quantity of bytes");
                if (bytes < POD_MEMORY_MIN)
                        return error_set(err, -EINVAL, "\"%s\" is less than a pod needs (6Mi)", value);
                return 0;
        }
        case VALUE_POD_CPUS: {
                uint64_t millis;
                if (parse_cpu_millis(value, &millis) < 0 || millis < POD_CPU_MILLIS_MIN || millis > POD_CPU_MILLIS_MAX)
                        return error_set(err, -EINVAL, "\"%s\" is not a number of CPUs from 0.01 to %u (\"1.5\", \"250m\")",
                                         value, POD_CPU_MILLIS_MAX / 1000);
                return 0;
        }
        case VALUE_PATH:
                if (absolute_path_problem(value))
                        return error_set(err, -EINVAL, "\"%s\" %s", value, absolute_path_problem(value));
                return 0;
        case VALUE_APP_NAMES: {
                /* The names become unit names (app@NAME.service): nothing
                 * but an app name's [a-z0-9-] may reach a unit file. */
                _cleanup_strv_free_ char **l = NULL;
                int r = split_names(value, &l);
                if (r == -ENOMEM)
                        return error_sys(err, r, "%s", annotation);
                if (r == -E2BIG)
                        return error_set(err, -EINVAL, "more than %d app names", APP_ORDER_NAMES_MAX);
                if (r < 0)
                        return error_set(err, -EINVAL, "\"%s\" is not a list of app names (NAME[,NAME...], each "
                                         "[a-z0-9]+(-[a-z0-9]+)*, each once)", value);
                return 0;
        }
        case VALUE_COMMAND: {
                _cleanup_strv_free_ char **l = NULL;
                int r = command_from_json(value, &l);
                if (r == -ENOMEM)
                        return error_sys(err, r, "%s", annotation);
                if (r < 0)
                        return error_set(err, -EINVAL, "not a JSON array of non-empty strings");
                return 0;
        }
        }
        return -EINVAL;
}

int app_command_parse(const char *s, char ***ret, Error **err) {
        int r;
        if (s[0] == '[') {
                if ((r = command_from_json(s, ret)) == -EINVAL)
                        return error_set(err, -EINVAL, "%s: not a JSON array of non-empty strings", s);
                return r < 0 ? error_sys(err, r, "%s", s) : 0;
        }
        if (!*s)
                return error_set(err, -EINVAL, "an empty command");
        char **l = NULL;
        if (strv_push(&l, "/bin/sh") < 0 || strv_push(&l, "-c") < 0 || strv_push(&l, s) < 0) {
                strv_free(l);
                return error_sys(err, -ENOMEM, "%s", s);
        }
        *ret = l;
        return 0;
}

void app_lifecycle_done(AppLifecycle *l) {
        strv_free(l->health_cmd);
        *l = (AppLifecycle) {};
}

int app_lifecycle_of(const PodManifest *m, const PodApp *app, AppLifecycle *ret, Error **err) {
        AppLifecycle l = {
                .health_interval_usec = APP_HEALTH_INTERVAL_DEFAULT_USEC,
                .health_timeout_usec = APP_HEALTH_TIMEOUT_DEFAULT_USEC,
                .health_retries = APP_HEALTH_RETRIES_DEFAULT,
        };
        const char *v;
        if ((v = pod_app_get_annotation(app, APP_ANNOTATION_STOP_TIMEOUT) ?:
                 pod_manifest_get_annotation(m, APP_ANNOTATION_STOP_TIMEOUT)))
                (void) parse_duration(v, &l.stop_timeout_usec);
        if ((v = pod_app_get_annotation(app, APP_ANNOTATION_RESTART)))
                l.restart = (AppRestart) name_index(restart_names, ELEMENTSOF(restart_names), v);
        if ((v = pod_app_get_annotation(app, APP_ANNOTATION_WATCHDOG)))
                (void) parse_duration(v, &l.watchdog_usec);
        l.watchdog_file = pod_app_get_annotation(app, APP_ANNOTATION_WATCHDOG_FILE);
        if ((v = pod_app_get_annotation(app, APP_ANNOTATION_HEALTH_CMD))) {
                int r = command_from_json(v, &l.health_cmd);
                if (r < 0)
                        return error_sys(err, r, "app %s: %s", app->name, APP_ANNOTATION_HEALTH_CMD);
        }
        if ((v = pod_app_get_annotation(app, APP_ANNOTATION_HEALTH_INTERVAL)))
                (void) parse_duration(v, &l.health_interval_usec);
        if ((v = pod_app_get_annotation(app, APP_ANNOTATION_HEALTH_TIMEOUT)))
                (void) parse_duration(v, &l.health_timeout_usec);
        if ((v = pod_app_get_annotation(app, APP_ANNOTATION_HEALTH_RETRIES)))
                l.health_retries = (unsigned) strtoul(v, NULL, 10);
        if ((v = pod_app_get_annotation(app, APP_ANNOTATION_HEALTH_START_PERIOD)))
                (void) parse_duration(v, &l.health_start_period_usec);
        if ((v = pod_app_get_annotation(app, APP_ANNOTATION_HEALTH_ON_FAILURE)))
                l.health_on_failure = (AppHealthAction) name_index(health_action_names, ELEMENTSOF(health_action_names), v);
        /* Validation guarantees the names; this keeps a bug from reading
         * -1 as a policy. */
        if ((int) l.restart < 0 || (int) l.health_on_failure < 0) {
                app_lifecycle_done(&l);
                return error_set(err, -EINVAL, "app %s: an unchecked lifecycle annotation", app->name);
        }
        *ret = l;
        return 0;
}
