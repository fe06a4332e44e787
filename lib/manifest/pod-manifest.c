/* SPDX-License-Identifier: Apache-2.0 */
#include <arpa/inet.h>
#include <inttypes.h>
#include <stdarg.h>

#include "basic/digest.h"
#include "basic/fs.h"
#include "basic/json-util.h"
#include "basic/strv.h"
#include "manifest/app-lifecycle.h"
#include "manifest/pod-manifest.h"

const PodStandardDevice pod_standard_devices[] = {
        { "/dev/null rwm", "c 1:3 rwm" },
        { "/dev/zero rwm", "c 1:5 rwm" },
        { "/dev/full rwm", "c 1:7 rwm" },
        { "/dev/random rwm", "c 1:8 rwm" },
        { "/dev/urandom rwm", "c 1:9 rwm" },
        { "/dev/tty rwm", "c 5:0 rwm" },
        { "/dev/ptmx rwm", "c 5:2 rwm" },
        { "char-pts rw", "c 136:* rw" },
        {},
};

/* Far beyond any real pod; it bounds what a corrupt or hostile file costs. */
#define POD_MANIFEST_SIZE_MAX (16U << 20)
#define AC_NAME_MAX 64
/* uid_t and gid_t are 32 bits; (uid_t) -1 means "no change" to chown(2). */
#define POD_ID_MAX 4294967294LL

/* How mutations name the document in errors; callers add the pod. */
#define MUTATION_WHAT "pod manifest"

static bool is_lower_alnum(char c) {
        return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

/* [a-z0-9]+([SEP][a-z0-9]+)*: a separator only between two alphanumerics. */
static bool name_matches(const char *name, const char *separators) {
        if (!name || !*name)
                return false;
        bool after_separator = true;
        for (const char *p = name; *p; p++) {
                if (is_lower_alnum(*p))
                        after_separator = false;
                else if (strchr(separators, *p) && !after_separator)
                        after_separator = true;
                else
                        return false;
        }
        return !after_separator;
}

bool pod_app_name_is_valid(const char *name) {
        return name_matches(name, "-") && strlen(name) <= AC_NAME_MAX;
}

bool pod_identifier_is_valid(const char *name) {
        return name_matches(name, "-._~/");
}

/* A numeric identifier of semver: "0" or no leading zero. */
static const char *semver_number(const char *p) {
        if (*p == '0')
                return p + 1;
        if (*p < '1' || *p > '9')
                return NULL;
        while (*p >= '0' && *p <= '9')
                p++;
        return p;
}

/* Dot-separated non-empty identifiers of [0-9A-Za-z-]. */
static const char *semver_identifiers(const char *p) {
        for (;;) {
                const char *start = p;
                while ((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || *p == '-')
                        p++;
                if (p == start)
                        return NULL;
                if (*p != '.')
                        return p;
                p++;
        }
}

/* MAJOR.MINOR.PATCH[-PRERELEASE][+BUILD], as semver.org 2.0.0 writes it. */
static bool semver_is_valid(const char *s) {
        const char *p = s;
        for (int i = 0; i < 3; i++) {
                if (!(p = semver_number(p)))
                        return false;
                if (i < 2 && *p++ != '.')
                        return false;
        }
        if (*p == '-' && !(p = semver_identifiers(p + 1)))
                return false;
        if (*p == '+' && !(p = semver_identifiers(p + 1)))
                return false;
        return *p == 0;
}

/* An absolute path as the manifest may name one: it begins with "/" and has
 * no ".." component. A path inside an app's root with ".." could name
 * something outside it once resolved lexically; no honest manifest needs it. */
const char *absolute_path_problem(const char *s) {
        if (s[0] != '/')
                return "must be an absolute path";
        for (const char *p = s; *p;) {
                while (*p == '/')
                        p++;
                size_t n = strcspn(p, "/");
                if (n == 2 && p[0] == '.' && p[1] == '.')
                        return "must not contain a \"..\" component";
                p += n;
        }
        return NULL;
}

/* Where a field is, rendered only when there is an error to report. */
typedef struct Path {
        const struct Path *parent;
        const char *key;        /* NULL: an array element */
        size_t index;
} Path;
#define KEY(p, k) (&(const Path) { .parent = (p), .key = (k) })
#define IDX(p, i) (&(const Path) { .parent = (p), .index = (i) })

/* Writes p below stop (NULL: from the root). */
static void path_write(FILE *f, const Path *p, const Path *stop) {
        bool below = p->parent && p->parent != stop;
        if (below)
                path_write(f, p->parent, stop);
        if (p->key)
                fprintf(f, "%s%s", below ? "." : "", p->key);
        else
                fprintf(f, "[%zu]", p->index);
}

/* The name of apps[index] of the document root, when it has a valid one
 * (the document is not validated yet: an invalid name is not shown). */
static const char *app_name_of(struct json_object *root, size_t index) {
        struct json_object *apps = NULL, *name = NULL;
        if (!root || !json_object_object_get_ex(root, "apps", &apps) || !json_object_is_type(apps, json_type_array) ||
            index >= json_object_array_length(apps) ||
            !json_object_object_get_ex(json_object_array_get_idx(apps, index), "name", &name) ||
            !json_object_is_type(name, json_type_string) || !pod_app_name_is_valid(json_object_get_string(name)))
                return NULL;
        return json_object_get_string(name);
}

/* A top-level key reads as in the other JSON readers of libsdpod, 'field
 * "acKind"'; deeper fields by their path, "apps[1].app.exec", where an app
 * that has a name is named instead of counted: "app web: app.exec". */
static char *path_to_string(const Path *p, struct json_object *root) {
        if (!p)
                return NULL;
        if (!p->parent && p->key) {
                char *s = NULL;
                return asprintf(&s, "field \"%s\"", p->key) < 0 ? NULL : s;
        }
        char *s = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&s, &size);
        if (!f)
                return NULL;
        /* The path from the root down: is it apps[i] and below? */
        const Path *chain[64];
        size_t n = 0;
        for (const Path *q = p; q && n < ELEMENTSOF(chain); q = q->parent)
                chain[n++] = q;
        /* Not for the name itself, whose error may be that two apps
         * have it. */
        const char *app = n >= 3 && streq_ptr(chain[n - 1]->key, "apps") && !chain[n - 1]->parent &&
                                          !chain[n - 2]->key && !(n == 3 && streq_ptr(chain[0]->key, "name"))
                                  ? app_name_of(root, chain[n - 2]->index)
                                  : NULL;
        if (app) {
                fprintf(f, "app %s: ", app);
                path_write(f, p, chain[n - 2]);
        } else
                path_write(f, p, NULL);
        if (fclose(f) != 0) {
                free(s);
                return NULL;
        }
        return s;
}

typedef struct Checker {
        const char *what;
        Error **err;
        struct json_object *root;       /* the document, to name apps in paths; may be NULL */
} Checker;

static int bad(const Checker *c, const Path *p, const char *fmt, ...) _printf_(3, 4);
static int bad(const Checker *c, const Path *p, const char *fmt, ...) {
        if (!c->err || *c->err)
                return -EBADMSG;
        _cleanup_free_ char *msg = NULL, *where = path_to_string(p, c->root);
        va_list ap;
        va_start(ap, fmt);
        if (vasprintf(&msg, fmt, ap) < 0)
                msg = NULL;
        va_end(ap);
        return error_set(c->err, -EBADMSG, "%s%s%s: %s", c->what, where ? ": " : "", strempty(where),
                         msg ?: "invalid");
}

static int oom(const Checker *c) {
        return error_sys(c->err, -ENOMEM, "%s", c->what);
}

/* A member of an object; absent and null are the same, as in json-util. */
static struct json_object *member(struct json_object *o, const char *key) {
        struct json_object *v = NULL;
        if (!json_object_object_get_ex(o, key, &v))
                return NULL;
        return v;
}

static int check_object(const Checker *c, struct json_object *v, const Path *p) {
        if (!json_object_is_type(v, json_type_object))
                return bad(c, p, "expected an object");
        return 0;
}

static int check_string(const Checker *c, struct json_object *v, const Path *p, const char **ret) {
        if (!json_object_is_type(v, json_type_string))
                return bad(c, p, "expected a string");
        /* The typed view hands out C strings: an embedded NUL would silently
         * cut them short, so it is refused wherever a string is read. */
        const char *s = json_object_get_string(v);
        if (strlen(s) != (size_t) json_object_get_string_len(v))
                return bad(c, p, "must not contain a NUL character");
        *ret = s;
        return 0;
}

static int get_string(const Checker *c, struct json_object *o, const Path *p, const char *key, bool required,
                      const char **ret) {
        struct json_object *v = member(o, key);
        if (!v) {
                if (required)
                        return bad(c, KEY(p, key), "missing");
                *ret = NULL;
                return 0;
        }
        return check_string(c, v, KEY(p, key), ret);
}

static int get_array(const Checker *c, struct json_object *o, const Path *p, const char *key, bool required,
                     struct json_object **ret) {
        struct json_object *v = member(o, key);
        if (!v) {
                if (required)
                        return bad(c, KEY(p, key), "missing");
                *ret = NULL;
                return 0;
        }
        if (!json_object_is_type(v, json_type_array))
                return bad(c, KEY(p, key), "expected an array");
        *ret = v;
        return 0;
}

/* Leaves *ret (the default) alone when the field is absent. */
static int get_bool(const Checker *c, struct json_object *o, const Path *p, const char *key, bool *ret) {
        struct json_object *v = member(o, key);
        if (!v)
                return 0;
        if (!json_object_is_type(v, json_type_boolean))
                return bad(c, KEY(p, key), "expected true or false");
        *ret = json_object_get_boolean(v);
        return 0;
}

/* Leaves *ret (the default) alone when the field is absent and optional. */
static int get_int(const Checker *c, struct json_object *o, const Path *p, const char *key, bool required,
                   int64_t min, int64_t max, int64_t *ret) {
        struct json_object *v = member(o, key);
        if (!v) {
                if (required)
                        return bad(c, KEY(p, key), "missing");
                return 0;
        }
        if (!json_object_is_type(v, json_type_int))
                return bad(c, KEY(p, key), "expected an integer");
        /* json-c saturates what int64 cannot hold: that number is not the
         * document's, so it is not quoted. */
        int64_t i = json_object_get_int64(v);
        if (i == INT64_MIN || i == INT64_MAX)
                return bad(c, KEY(p, key), "out of range (%" PRId64 "..%" PRId64 ")", min, max);
        if (i < min || i > max)
                return bad(c, KEY(p, key), "%" PRId64 " is out of range (%" PRId64 "..%" PRId64 ")", i, min, max);
        *ret = i;
        return 0;
}

/* A field that is kept as it is but must have the type the spec gives it. */
static int check_raw_array(const Checker *c, struct json_object *o, const Path *p, const char *key) {
        struct json_object *a;
        return get_array(c, o, p, key, false, &a);
}

/* A set of names, to find duplicates without quadratic cost: a JSON object
 * whose keys are borrowed from the document (which outlives the set). */
static int name_set_add(struct json_object *set, const char *name) {
        if (json_object_object_get_ex(set, name, NULL))
                return 1;
        if (json_object_object_add_ex(set, name, NULL, JSON_C_OBJECT_ADD_CONSTANT_KEY) < 0)
                return -ENOMEM;
        return 0;
}

static void *alloc_array(size_t n, size_t size) {
        return calloc(n ? n : 1, size);
}

typedef enum NameValueKind {
        NAME_VALUE_ANNOTATION,
        NAME_VALUE_ENVIRONMENT,
} NameValueKind;

/* A list of {"name", "value"} with unique names: annotations (names are
 * ACIdentifiers) or an environment (any name without "=" ). */
static int check_name_values(const Checker *c, struct json_object *o, const Path *p, const char *key,
                             NameValueKind kind, PodNameValue **ret, size_t *ret_n) {
        struct json_object *a;
        int r = get_array(c, o, p, key, false, &a);
        if (r < 0)
                return r;
        size_t n = a ? json_object_array_length(a) : 0;
        _cleanup_free_ PodNameValue *list = alloc_array(n, sizeof(PodNameValue));
        _cleanup_json_ struct json_object *seen = json_object_new_object();
        if (!list || !seen)
                return oom(c);
        const Path *ap = KEY(p, key);
        for (size_t i = 0; i < n; i++) {
                const Path *ep = IDX(ap, i);
                struct json_object *e = json_object_array_get_idx(a, i);
                const char *name, *value;
                if ((r = check_object(c, e, ep)) < 0 ||
                    (r = get_string(c, e, ep, "name", true, &name)) < 0 ||
                    (r = get_string(c, e, ep, "value", true, &value)) < 0)
                        return r;
                char q[VALUE_QUOTED_MAX];
                if (kind == NAME_VALUE_ANNOTATION && !pod_identifier_is_valid(name))
                        return bad(c, KEY(ep, "name"), "%s is not a valid identifier ([a-z0-9]+([-._~/][a-z0-9]+)*)",
                                   value_quote(name, q));
                if (kind == NAME_VALUE_ENVIRONMENT && !*name)
                        return bad(c, KEY(ep, "name"), "must not be empty");
                if (kind == NAME_VALUE_ENVIRONMENT && strchr(name, '='))
                        return bad(c, KEY(ep, "name"), "must not contain '='");
                r = name_set_add(seen, name);
                if (r < 0)
                        return oom(c);
                if (r > 0)
                        return bad(c, KEY(ep, "name"), "duplicate %s %s",
                                   kind == NAME_VALUE_ANNOTATION ? "annotation" : "variable", value_quote(name, q));
                list[i] = (PodNameValue) { .name = name, .value = value };
        }
        *ret = TAKE_PTR(list);
        *ret_n = n;
        return 0;
}

static int check_isolators(const Checker *c, struct json_object *o, const Path *p, const char *key,
                           PodIsolator **ret, size_t *ret_n) {
        struct json_object *a;
        int r = get_array(c, o, p, key, false, &a);
        if (r < 0)
                return r;
        size_t n = a ? json_object_array_length(a) : 0;
        _cleanup_free_ PodIsolator *list = alloc_array(n, sizeof(PodIsolator));
        if (!list)
                return oom(c);
        const Path *ap = KEY(p, key);
        for (size_t i = 0; i < n; i++) {
                const Path *ep = IDX(ap, i);
                struct json_object *e = json_object_array_get_idx(a, i), *value = NULL;
                const char *name;
                if ((r = check_object(c, e, ep)) < 0 ||
                    (r = get_string(c, e, ep, "name", true, &name)) < 0)
                        return r;
                char q[VALUE_QUOTED_MAX];
                if (!pod_identifier_is_valid(name))
                        return bad(c, KEY(ep, "name"), "%s is not a valid identifier ([a-z0-9]+([-._~/][a-z0-9]+)*)",
                                   value_quote(name, q));
                /* Any JSON value, null included, is the generator's to judge;
                 * only a missing one is refused. */
                if (!json_object_object_get_ex(e, "value", &value))
                        return bad(c, KEY(ep, "value"), "missing");
                list[i] = (PodIsolator) { .name = name, .value = value };
        }
        *ret = TAKE_PTR(list);
        *ret_n = n;
        return 0;
}

static int check_absolute_path(const Checker *c, struct json_object *o, const Path *p, const char *key,
                               bool required, const char **ret) {
        int r = get_string(c, o, p, key, required, ret);
        if (r < 0 || !*ret)
                return r;
        const char *problem = absolute_path_problem(*ret);
        if (problem) {
                char q[VALUE_QUOTED_MAX];
                return bad(c, KEY(p, key), "%s: %s", value_quote(*ret, q), problem);
        }
        return 0;
}

static int check_ac_name(const Checker *c, const Path *p, const char *name) {
        if (pod_app_name_is_valid(name))
                return 0;
        char q[VALUE_QUOTED_MAX];
        return bad(c, p, "%s is not a valid name ([a-z0-9]+(-[a-z0-9]+)*, at most %d characters)",
                   value_quote(name, q), AC_NAME_MAX);
}

static int check_volume(const Checker *c, struct json_object *e, const Path *ep, PodVolume *v) {
        const char *kind, *mode = NULL;
        bool recursive = false;
        int r;
        if ((r = check_object(c, e, ep)) < 0 ||
            (r = get_string(c, e, ep, "name", true, &v->name)) < 0 ||
            (r = check_ac_name(c, KEY(ep, "name"), v->name)) < 0 ||
            (r = get_string(c, e, ep, "kind", true, &kind)) < 0 ||
            (r = get_bool(c, e, ep, "readOnly", &v->read_only)) < 0 ||
            (r = get_bool(c, e, ep, "recursive", &recursive)) < 0)
                return r;

        char q[VALUE_QUOTED_MAX];
        if (streq(kind, "host")) {
                v->kind = POD_VOLUME_HOST;
                if ((r = check_absolute_path(c, e, ep, "source", true, &v->source)) < 0)
                        return r;
                static const char *const empty_only[] = { "mode", "uid", "gid" };
                for (size_t i = 0; i < ELEMENTSOF(empty_only); i++)
                        if (member(e, empty_only[i]))
                                return bad(c, KEY(ep, empty_only[i]), "only for volumes of kind \"empty\"");
                return 0;
        }
        if (!streq(kind, "empty"))
                return bad(c, KEY(ep, "kind"), "expected \"host\" or \"empty\", got %s", value_quote(kind, q));

        v->kind = POD_VOLUME_EMPTY;
        if (member(e, "source"))
                return bad(c, KEY(ep, "source"), "not allowed for volumes of kind \"empty\"");
        int64_t uid = 0, gid = 0;
        if ((r = get_string(c, e, ep, "mode", false, &mode)) < 0 ||
            (r = get_int(c, e, ep, "uid", false, 0, POD_ID_MAX, &uid)) < 0 ||
            (r = get_int(c, e, ep, "gid", false, 0, POD_ID_MAX, &gid)) < 0)
                return r;
        v->mode = 0755;
        if (mode) {
                size_t n = strlen(mode);
                if (n == 0 || n > 4 || strspn(mode, "01234567") != n)
                        return bad(c, KEY(ep, "mode"), "%s is not an octal mode (1 to 4 digits 0-7, as \"0755\")",
                                   value_quote(mode, q));
                v->mode = (uint32_t) strtoul(mode, NULL, 8);
        }
        v->uid = (uint32_t) uid;
        v->gid = (uint32_t) gid;
        return 0;
}

/* Two ports clash when they publish one protocol's port on the same host
 * address, or on every address and any one. */
static bool ports_clash(const PodPort *a, const PodPort *b) {
        return a->host_port == b->host_port && streq(a->protocol, b->protocol) &&
               (!a->host_ip || !b->host_ip || streq(a->host_ip, b->host_ip));
}

static int check_ports(const Checker *c, struct json_object *o, PodPort **ret, size_t *ret_n) {
        struct json_object *a;
        int r = get_array(c, o, NULL, "ports", false, &a);
        if (r < 0 || !a)
                return r;
        const Path *ap = KEY(NULL, "ports");
        size_t n = json_object_array_length(a);
        if (!(*ret = alloc_array(n, sizeof(PodPort))))
                return oom(c);
        for (size_t i = 0; i < n; i++) {
                const Path *ep = IDX(ap, i);
                struct json_object *e = json_object_array_get_idx(a, i);
                PodPort *port = &(*ret)[i];
                int64_t host_port, pod_port = 0;
                unsigned char addr[16];
                char q[VALUE_QUOTED_MAX];
                if ((r = check_object(c, e, ep)) < 0 ||
                    (r = get_string(c, e, ep, "name", true, &port->name)) < 0 ||
                    (r = check_ac_name(c, KEY(ep, "name"), port->name)) < 0 ||
                    (r = get_int(c, e, ep, "hostPort", true, 1, 65535, &host_port)) < 0 ||
                    (r = get_int(c, e, ep, "podPort", false, 1, 65535, &pod_port)) < 0 ||
                    (r = get_string(c, e, ep, "protocol", false, &port->protocol)) < 0 ||
                    (r = get_string(c, e, ep, "hostIP", false, &port->host_ip)) < 0)
                        return r;
                port->host_port = (uint16_t) host_port;
                port->pod_port = (uint16_t) (pod_port ?: host_port);
                if (!port->protocol)
                        port->protocol = "tcp";
                if (!streq(port->protocol, "tcp") && !streq(port->protocol, "udp"))
                        return bad(c, KEY(ep, "protocol"), "%s is not \"tcp\" or \"udp\"", value_quote(port->protocol, q));
                if (port->host_ip && inet_pton(AF_INET, port->host_ip, addr) != 1 &&
                    inet_pton(AF_INET6, port->host_ip, addr) != 1)
                        return bad(c, KEY(ep, "hostIP"), "%s is not a numeric IPv4 or IPv6 address",
                                   value_quote(port->host_ip, q));
                for (size_t j = 0; j < i; j++) {
                        if (streq((*ret)[j].name, port->name))
                                return bad(c, KEY(ep, "name"), "duplicate port name \"%s\"", port->name);
                        if (ports_clash(&(*ret)[j], port))
                                return bad(c, ep, "host port %u/%s is published twice", port->host_port, port->protocol);
                }
                *ret_n = i + 1;
        }
        return 0;
}

static int check_exec(const Checker *c, struct json_object *app, const Path *p, char ***ret) {
        struct json_object *a;
        int r = get_array(c, app, p, "exec", true, &a);
        if (r < 0)
                return r;
        const Path *ap = KEY(p, "exec");
        size_t n = json_object_array_length(a);
        if (n == 0)
                return bad(c, ap, "must not be empty");
        _cleanup_strv_free_ char **exec = calloc(n + 1, sizeof(char *));
        if (!exec)
                return oom(c);
        for (size_t i = 0; i < n; i++) {
                const char *s;
                if ((r = check_string(c, json_object_array_get_idx(a, i), IDX(ap, i), &s)) < 0)
                        return r;
                if (!*s)
                        return bad(c, IDX(ap, i), "must not be empty");
                if (!(exec[i] = strdup(s)))
                        return oom(c);
        }
        *ret = TAKE_PTR(exec);
        return 0;
}

static int check_event_handlers(const Checker *c, struct json_object *app, const Path *p, PodApp *a) {
        struct json_object *list;
        int r = get_array(c, app, p, "eventHandlers", false, &list);
        if (r < 0)
                return r;
        size_t n = list ? json_object_array_length(list) : 0;
        if (!(a->event_handlers = alloc_array(n, sizeof(PodEventHandler))))
                return oom(c);
        const Path *lp = KEY(p, "eventHandlers");
        for (size_t i = 0; i < n; i++) {
                const Path *ep = IDX(lp, i);
                struct json_object *e = json_object_array_get_idx(list, i);
                PodEventHandler *h = &a->event_handlers[i];
                if ((r = check_object(c, e, ep)) < 0 || (r = get_string(c, e, ep, "name", true, &h->name)) < 0)
                        return r;
                char q[VALUE_QUOTED_MAX];
                if (!streq(h->name, POD_EVENT_PRE_START) && !streq(h->name, POD_EVENT_PRE_STOP) &&
                    !streq(h->name, POD_EVENT_POST_STOP))
                        return bad(c, KEY(ep, "name"), "%s is not one of \"" POD_EVENT_PRE_START "\", \"" POD_EVENT_PRE_STOP
                                   "\", \"" POD_EVENT_POST_STOP "\"", value_quote(h->name, q));
                for (size_t k = 0; k < i; k++)
                        if (streq(a->event_handlers[k].name, h->name))
                                return bad(c, KEY(ep, "name"), "a second \"%s\" handler", h->name);
                if ((r = check_exec(c, e, ep, &h->exec)) < 0)
                        return r;
                a->n_event_handlers = i + 1;
        }
        return 0;
}

static int check_user(const Checker *c, struct json_object *app, const Path *p, const char *key, const char **ret) {
        int r = get_string(c, app, p, key, false, ret);
        if (r < 0)
                return r;
        if (!*ret)
                *ret = "0";
        else if (!**ret)
                return bad(c, KEY(p, key), "must not be empty");
        return 0;
}

static int check_mounts(const Checker *c, struct json_object *entry, const Path *p, struct json_object *volumes,
                        PodApp *a) {
        struct json_object *list;
        int r = get_array(c, entry, p, "mounts", false, &list);
        if (r < 0)
                return r;
        size_t n = list ? json_object_array_length(list) : 0;
        if (!(a->mounts = alloc_array(n, sizeof(PodMount))))
                return oom(c);
        const Path *lp = KEY(p, "mounts");
        for (size_t i = 0; i < n; i++) {
                const Path *ep = IDX(lp, i);
                struct json_object *e = json_object_array_get_idx(list, i);
                PodMount *mount = &a->mounts[i];
                if ((r = check_object(c, e, ep)) < 0 ||
                    (r = get_string(c, e, ep, "volume", true, &mount->volume)) < 0 ||
                    (r = check_ac_name(c, KEY(ep, "volume"), mount->volume)) < 0 ||
                    (r = check_absolute_path(c, e, ep, "path", true, &mount->path)) < 0)
                        return r;
                if (!json_object_object_get_ex(volumes, mount->volume, NULL))
                        return bad(c, KEY(ep, "volume"), "no volume \"%s\" in the pod", mount->volume);
                /* Two mounts on one path: only the last would be visible. */
                for (size_t k = 0; k < a->n_mounts; k++)
                        if (streq(a->mounts[k].path, mount->path))
                                return bad(c, KEY(ep, "path"), "\"%s\" is already the path of mounts[%zu]", mount->path, k);
                a->n_mounts++;
        }
        return 0;
}

/* The annotations of an app's lifecycle (app-lifecycle.h), of the app or,
 * for app NULL, the pod's (its default stop timeout, its watchdog). */
static int check_lifecycle(const Checker *c, const Path *p, const PodNameValue *l, size_t n, const PodApp *app) {
        bool health = false, health_cmd = false, watchdog = false, watchdog_file = false;
        for (size_t i = 0; i < n; i++) {
                const char *name = l[i].name;
                if (!app_lifecycle_annotation_is(name))
                        continue;
                const Path *vp = KEY(IDX(KEY(p, "annotations"), i), "value");
                bool pods = streq(name, APP_ANNOTATION_STOP_TIMEOUT) || app_lifecycle_annotation_is_pods(name);
                if (!app && !pods)
                        return bad(c, KEY(IDX(KEY(p, "annotations"), i), "name"), "%s is an app's annotation, not the pod's",
                                   name);
                if (app && app_lifecycle_annotation_is_pods(name))
                        return bad(c, KEY(IDX(KEY(p, "annotations"), i), "name"), "%s is the pod's annotation, not an app's",
                                   name);
                Error *e = NULL;
                if (app_lifecycle_check(name, l[i].value, &e) < 0) {
                        int r = bad(c, vp, "%s%s%s: %s", app ? "app " : "", app ? app->name : "", app ? ": " : "",
                                    e ? e->msg : "invalid");
                        error_free(e);
                        return r;
                }
                health |= startswith(name, "sdpod/health-") != NULL;
                health_cmd |= streq(name, APP_ANNOTATION_HEALTH_CMD);
                watchdog |= streq(name, APP_ANNOTATION_WATCHDOG);
                watchdog_file |= streq(name, APP_ANNOTATION_WATCHDOG_FILE);
        }
        if (health && !health_cmd)
                return bad(c, KEY(p, "annotations"), "app %s: health check settings without %s", app->name,
                           APP_ANNOTATION_HEALTH_CMD);
        if (watchdog_file && !watchdog)
                return bad(c, KEY(p, "annotations"), "app %s: %s without %s (its timeout)", app->name,
                           APP_ANNOTATION_WATCHDOG_FILE, APP_ANNOTATION_WATCHDOG);
        return 0;
}

/* "[{"source": S, "destination": D[, "readOnly": B]}...]": absolute paths
 * without "..", at most 256. *ret may be NULL (only checked). */
static int parse_host_binds(const char *value, PodHostBind **ret, size_t *ret_n, const char **ret_problem) {
        _cleanup_json_ struct json_object *o = NULL;
        if (json_parse(value, strlen(value), "binds", &o, NULL) < 0 || !json_object_is_type(o, json_type_array)) {
                *ret_problem = "not a JSON array";
                return -EBADMSG;
        }
        size_t n = json_object_array_length(o);
        if (n > 256) {
                *ret_problem = "more than 256 binds";
                return -EBADMSG;
        }
        _cleanup_free_ PodHostBind *l = calloc(n + 1, sizeof(PodHostBind));
        if (!l)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                struct json_object *e = json_object_array_get_idx(o, i), *s, *d, *ro = NULL;
                if (!json_object_is_type(e, json_type_object) || !json_object_object_get_ex(e, "source", &s) ||
                    !json_object_object_get_ex(e, "destination", &d) || !json_object_is_type(s, json_type_string) ||
                    !json_object_is_type(d, json_type_string) ||
                    (json_object_object_get_ex(e, "readOnly", &ro) && !json_object_is_type(ro, json_type_boolean))) {
                        *ret_problem = "each bind is {\"source\": PATH, \"destination\": PATH[, \"readOnly\": BOOL]}";
                        return -EBADMSG;
                }
                const char *problem = absolute_path_problem(json_object_get_string(s));
                if (!problem)
                        problem = absolute_path_problem(json_object_get_string(d));
                if (problem) {
                        *ret_problem = problem;
                        return -EBADMSG;
                }
                l[i] = (PodHostBind) { .read_only = ro && json_object_get_boolean(ro) };
        }
        if (ret) {
                /* Borrowed from the annotation's value: parsed again there. */
                *ret = TAKE_PTR(l);
                *ret_n = n;
        }
        return 0;
}

int pod_app_host_binds(const PodApp *app, PodHostBind **ret, size_t *ret_n, Error **err) {
        const char *value = pod_app_get_annotation(app, POD_ANNOTATION_BINDS);
        *ret = NULL;
        *ret_n = 0;
        if (!value)
                return 0;
        /* The strings must outlive this call: they are found again in the
         * annotation's text, which the manifest keeps. */
        const char *problem = NULL;
        struct json_object *o = NULL;
        int r = parse_host_binds(value, NULL, NULL, &problem);
        if (r < 0)
                return error_set(err, r, "app %s: annotation %s: %s", app->name, POD_ANNOTATION_BINDS, problem ? problem : "invalid");
        if (json_parse(value, strlen(value), "binds", &o, err) < 0)
                return -EBADMSG;
        size_t n = json_object_array_length(o);
        PodHostBind *l = calloc(n + 1, sizeof(PodHostBind));
        if (!l) {
                json_object_put(o);
                return error_sys(err, -ENOMEM, "app %s", app->name);
        }
        for (size_t i = 0; i < n; i++) {
                struct json_object *e = json_object_array_get_idx(o, i), *s, *d, *ro = NULL;
                json_object_object_get_ex(e, "source", &s);
                json_object_object_get_ex(e, "destination", &d);
                bool b = json_object_object_get_ex(e, "readOnly", &ro) && json_object_get_boolean(ro);
                /* Copies that live as long as the list: one allocation. */
                char *sc = strdup(json_object_get_string(s)), *dc = strdup(json_object_get_string(d));
                if (!sc || !dc) {
                        free(sc);
                        free(dc);
                        for (size_t k = 0; k < i; k++) {
                                free((char *) l[k].source);
                                free((char *) l[k].destination);
                        }
                        free(l);
                        json_object_put(o);
                        return error_sys(err, -ENOMEM, "app %s", app->name);
                }
                l[i] = (PodHostBind) { .source = sc, .destination = dc, .read_only = b };
        }
        json_object_put(o);
        *ret = l;
        *ret_n = n;
        return 0;
}

void pod_host_binds_free(PodHostBind *l, size_t n) {
        for (size_t i = 0; i < n; i++) {
                free((char *) l[i].source);
                free((char *) l[i].destination);
        }
        free(l);
}

/* The host paths of podapp add: absolute, without "..". */
static int check_host_annotations(const Checker *c, const Path *ep, PodApp *a) {
        static const char *const paths[] = { POD_ANNOTATION_ROOTFS, POD_ANNOTATION_STDIN, POD_ANNOTATION_STDOUT,
                                             POD_ANNOTATION_STDERR };
        char q[VALUE_QUOTED_MAX];
        for (size_t i = 0; i < a->n_annotations; i++) {
                const char *name = a->annotations[i].name, *value = a->annotations[i].value, *problem = NULL;
                const Path *vp = KEY(IDX(KEY(ep, "annotations"), i), "value");
                bool is_path = false;
                for (size_t k = 0; k < ELEMENTSOF(paths); k++)
                        is_path |= streq(name, paths[k]);
                if (is_path && (problem = absolute_path_problem(value)))
                        return bad(c, vp, "%s: %s", value_quote(value, q), problem);
                if (streq(name, POD_ANNOTATION_BINDS)) {
                        int r = parse_host_binds(value, NULL, NULL, &problem);
                        if (r == -ENOMEM)
                                return oom(c);
                        if (r < 0)
                                return bad(c, vp, "%s", problem);
                }
        }
        a->rootfs = pod_app_get_annotation(a, POD_ANNOTATION_ROOTFS);
        return 0;
}

static int check_app(const Checker *c, struct json_object *entry, const Path *ep, struct json_object *volumes,
                     PodApp *a) {
        struct json_object *image, *app;
        int r;
        if ((r = check_object(c, entry, ep)) < 0 ||
            (r = get_string(c, entry, ep, "name", true, &a->name)) < 0 ||
            (r = check_ac_name(c, KEY(ep, "name"), a->name)) < 0)
                return r;

        const Path *ip = KEY(ep, "image");
        if (!(image = member(entry, "image")))
                return bad(c, ip, "missing");
        if ((r = check_object(c, image, ip)) < 0 ||
            (r = get_string(c, image, ip, "name", false, &a->image_name)) < 0 ||
            (r = get_string(c, image, ip, "id", true, &a->image_id)) < 0)
                return r;
        char q[VALUE_QUOTED_MAX];
        if (!digest_is_valid(a->image_id))
                return bad(c, KEY(ip, "id"), "%s is not a sha256 digest (\"sha256:\" and 64 lowercase hexadecimal digits)",
                           value_quote(a->image_id, q));

        const Path *pp = KEY(ep, "app");
        if (!(app = member(entry, "app")))
                return bad(c, pp, "missing");
        if ((r = check_object(c, app, pp)) < 0 ||
            (r = check_exec(c, app, pp, &a->exec)) < 0 ||
            (r = check_user(c, app, pp, "user", &a->user)) < 0 ||
            (r = check_user(c, app, pp, "group", &a->group)) < 0 ||
            (r = check_absolute_path(c, app, pp, "workingDirectory", false, &a->working_directory)) < 0 ||
            (r = check_name_values(c, app, pp, "environment", NAME_VALUE_ENVIRONMENT, &a->environment,
                                   &a->n_environment)) < 0 ||
            (r = check_raw_array(c, app, pp, "mountPoints")) < 0 ||
            (r = check_isolators(c, app, pp, "isolators", &a->isolators, &a->n_isolators)) < 0 ||
            (r = check_event_handlers(c, app, pp, a)) < 0 ||
            (r = check_raw_array(c, app, pp, "ports")) < 0)
                return r;
        if (!a->working_directory)
                a->working_directory = "/";

        struct json_object *gids = NULL;
        if ((r = get_array(c, app, pp, "supplementaryGIDs", false, &gids)) < 0)
                return r;
        size_t n_gids = gids ? json_object_array_length(gids) : 0;
        if (n_gids > 256)
                return bad(c, KEY(pp, "supplementaryGIDs"), "more than 256 groups");
        if (n_gids > 0 && !(a->supplementary_gids = calloc(n_gids, sizeof(uint32_t))))
                return oom(c);
        for (size_t i = 0; i < n_gids; i++) {
                struct json_object *g = json_object_array_get_idx(gids, i);
                int64_t v = json_object_is_type(g, json_type_int) ? json_object_get_int64(g) : -1;
                if (v < 0 || v > POD_ID_MAX || v == 65535)
                        return bad(c, IDX(KEY(pp, "supplementaryGIDs"), i), "not a group id (0..%lld, not 65535)", POD_ID_MAX);
                a->supplementary_gids[a->n_supplementary_gids++] = (uint32_t) v;
        }

        if ((r = get_bool(c, entry, ep, "readOnlyRootFS", &a->read_only_rootfs)) < 0 ||
            (r = check_mounts(c, entry, ep, volumes, a)) < 0 ||
            (r = check_name_values(c, entry, ep, "annotations", NAME_VALUE_ANNOTATION, &a->annotations,
                                   &a->n_annotations)) < 0 ||
            (r = check_lifecycle(c, ep, a->annotations, a->n_annotations, a)) < 0 ||
            (r = check_host_annotations(c, ep, a)) < 0)
                return r;
        return 0;
}

/* Frees the typed view, not the document. */
static void manifest_view_done(PodManifest *m) {
        for (size_t i = 0; i < m->n_apps; i++) {
                PodApp *a = &m->apps[i];
                strv_free(a->exec);
                free(a->environment);
                free(a->mounts);
                free(a->isolators);
                for (size_t k = 0; k < a->n_event_handlers; k++)
                        strv_free(a->event_handlers[k].exec);
                free(a->event_handlers);
                free(a->annotations);
                free(a->supplementary_gids);
        }
        free(m->apps);
        free(m->volumes);
        free(m->isolators);
        free(m->annotations);
        free(m->ports);
        *m = (PodManifest) { .json = m->json };
}

/* Validates the whole document o and builds its typed view into *ret, which
 * borrows from o and gets o as its document (not a reference: the caller's
 * reference moves there on success). */
static int manifest_validate(struct json_object *o, const char *what, PodManifest *ret, Error **err) {
        const Checker checker = { .what = what, .err = err, .root = o }, *c = &checker;
        _cleanup_(manifest_view_done) PodManifest v = {};
        char q[VALUE_QUOTED_MAX];
        int r;

        if (!json_object_is_type(o, json_type_object))
                return bad(c, NULL, "expected a JSON object");

        const char *kind, *version;
        if ((r = get_string(c, o, NULL, "acKind", true, &kind)) < 0)
                return r;
        if (!streq(kind, POD_MANIFEST_KIND))
                return bad(c, KEY(NULL, "acKind"), "expected \"%s\", got %s", POD_MANIFEST_KIND, value_quote(kind, q));
        if ((r = get_string(c, o, NULL, "acVersion", true, &version)) < 0)
                return r;
        if (!semver_is_valid(version))
                return bad(c, KEY(NULL, "acVersion"), "%s is not a version (MAJOR.MINOR.PATCH, as \"%s\")",
                           value_quote(version, q), POD_MANIFEST_VERSION);

        /* Volumes first: the apps' mounts refer to them. */
        struct json_object *volumes, *apps;
        if ((r = get_array(c, o, NULL, "volumes", false, &volumes)) < 0)
                return r;
        size_t n = volumes ? json_object_array_length(volumes) : 0;
        _cleanup_json_ struct json_object *volume_names = json_object_new_object();
        if (!volume_names || !(v.volumes = alloc_array(n, sizeof(PodVolume))))
                return oom(c);
        for (size_t i = 0; i < n; i++) {
                const Path *ep = IDX(KEY(NULL, "volumes"), i);
                PodVolume *volume = &v.volumes[i];
                if ((r = check_volume(c, json_object_array_get_idx(volumes, i), ep, volume)) < 0)
                        return r;
                r = name_set_add(volume_names, volume->name);
                if (r < 0)
                        return oom(c);
                if (r > 0)
                        return bad(c, KEY(ep, "name"), "duplicate volume name \"%s\"", volume->name);
                v.n_volumes++;
        }

        if ((r = get_array(c, o, NULL, "apps", true, &apps)) < 0)
                return r;
        n = json_object_array_length(apps);
        _cleanup_json_ struct json_object *app_names = json_object_new_object();
        if (!app_names || !(v.apps = alloc_array(n, sizeof(PodApp))))
                return oom(c);
        v.n_apps = n; /* all zero until filled: safe to free at any point */
        for (size_t i = 0; i < n; i++) {
                const Path *ep = IDX(KEY(NULL, "apps"), i);
                PodApp *a = &v.apps[i];
                if ((r = check_app(c, json_object_array_get_idx(apps, i), ep, volume_names, a)) < 0)
                        return r;
                r = name_set_add(app_names, a->name);
                if (r < 0)
                        return oom(c);
                if (r > 0)
                        return bad(c, KEY(ep, "name"), "duplicate app name \"%s\"", a->name);
        }

        if ((r = check_isolators(c, o, NULL, "isolators", &v.isolators, &v.n_isolators)) < 0 ||
            (r = check_name_values(c, o, NULL, "annotations", NAME_VALUE_ANNOTATION, &v.annotations,
                                   &v.n_annotations)) < 0 ||
            (r = check_lifecycle(c, NULL, v.annotations, v.n_annotations, NULL)) < 0 ||
            (r = check_ports(c, o, &v.ports, &v.n_ports)) < 0)
                return r;
        /* The order between the apps (app-lifecycle.h), as a whole. */
        Error *e = NULL;
        if ((r = app_order_check(v.apps, v.n_apps, false, &e)) < 0) {
                r = r == -ENOMEM ? oom(c) : bad(c, KEY(NULL, "apps"), "%s", e ? e->msg : "invalid order");
                error_free(e);
                return r;
        }

        v.json = o;
        *ret = v;
        v = (PodManifest) {};
        return 0;
}

void pod_manifest_free(PodManifest *m) {
        if (!m)
                return;
        manifest_view_done(m);
        if (m->json)
                json_object_put(m->json);
        free(m);
}

/* Takes the reference o; on success the new manifest owns it. */
static int manifest_from_json(struct json_object *o, const char *what, PodManifest **ret, Error **err) {
        _cleanup_json_ struct json_object *doc = o;
        _cleanup_pod_manifest_ PodManifest *m = calloc(1, sizeof(PodManifest));
        if (!m)
                return error_sys(err, -ENOMEM, "%s", what);
        int r = manifest_validate(doc, what, m, err);
        if (r < 0)
                return r;
        TAKE_PTR(doc);
        *ret = TAKE_PTR(m);
        return 0;
}

int pod_manifest_parse(const char *data, size_t size, const char *what, PodManifest **ret, Error **err) {
        what = what ?: "pod manifest";
        struct json_object *o = NULL;
        int r = json_parse(data, size, what, &o, err);
        if (r < 0)
                return r;
        return manifest_from_json(o, what, ret, err);
}

int pod_manifest_read_at(int dirfd, const char *path, const char *what, PodManifest **ret, Error **err) {
        _cleanup_free_ char *data = NULL;
        size_t size = 0;
        int r = read_file_at(dirfd, path, POD_MANIFEST_SIZE_MAX, &data, &size, err);
        if (r < 0) {
                if (what && !streq(what, path))
                        error_prefix(err, "%s", what);
                return r;
        }
        return pod_manifest_parse(data, size, what ?: path, ret, err);
}

const char *pod_manifest_to_text(const PodManifest *m) {
        return json_to_text(m->json, true);
}

int pod_manifest_write_at(int dirfd, const char *path, const PodManifest *m, Error **err) {
        const char *text = pod_manifest_to_text(m);
        if (!text)
                return error_sys(err, -ENOMEM, "%s", path);
        size_t n = strlen(text);
        _cleanup_free_ char *buf = malloc(n + 2);
        if (!buf)
                return error_sys(err, -ENOMEM, "%s", path);
        memcpy(buf, text, n);
        buf[n++] = '\n';
        buf[n] = 0;
        return write_file_atomic_at(dirfd, path, buf, n, 0644, err);
}

const PodApp *pod_manifest_find_app(const PodManifest *m, const char *name) {
        for (size_t i = 0; name && i < m->n_apps; i++)
                if (streq(m->apps[i].name, name))
                        return &m->apps[i];
        return NULL;
}

const PodVolume *pod_manifest_find_volume(const PodManifest *m, const char *name) {
        for (size_t i = 0; name && i < m->n_volumes; i++)
                if (streq(m->volumes[i].name, name))
                        return &m->volumes[i];
        return NULL;
}

const char *pod_manifest_get_annotation(const PodManifest *m, const char *name) {
        for (size_t i = 0; name && i < m->n_annotations; i++)
                if (streq(m->annotations[i].name, name))
                        return m->annotations[i].value;
        return NULL;
}

const char *pod_app_get_annotation(const PodApp *app, const char *name) {
        for (size_t i = 0; name && i < app->n_annotations; i++)
                if (streq(app->annotations[i].name, name))
                        return app->annotations[i].value;
        return NULL;
}

char *const *pod_app_event_handler(const PodApp *app, const char *name) {
        for (size_t i = 0; i < app->n_event_handlers; i++)
                if (streq(app->event_handlers[i].name, name))
                        return app->event_handlers[i].exec;
        return NULL;
}

/* Mutations: the change is made on a deep copy of the document, the copy is
 * validated as a whole, and only then does it replace m's document and view.
 * A refused change leaves m exactly as it was. */

static int document_copy(const PodManifest *m, struct json_object **ret, Error **err) {
        struct json_object *copy = NULL;
        if (json_object_deep_copy(m->json, &copy, NULL) < 0)
                return error_sys(err, -ENOMEM, "%s: copying", MUTATION_WHAT);
        *ret = copy;
        return 0;
}

/* Takes the reference copy. */
static int manifest_replace(PodManifest *m, struct json_object *copy, Error **err) {
        _cleanup_json_ struct json_object *doc = copy;
        PodManifest v = {};
        int r = manifest_validate(doc, MUTATION_WHAT, &v, err);
        if (r < 0)
                return r;
        manifest_view_done(m);
        json_object_put(m->json);
        *m = v;
        TAKE_PTR(doc);
        return 0;
}

/* The builders return -ENOMEM and drop value when it cannot be added. */
static int add_member(struct json_object *o, const char *key, struct json_object *value) {
        if (!value)
                return -ENOMEM;
        if (json_object_object_add(o, key, value) < 0) {
                json_object_put(value);
                return -ENOMEM;
        }
        return 0;
}

static int add_element(struct json_object *a, struct json_object *value) {
        if (!value)
                return -ENOMEM;
        if (json_object_array_add(a, value) < 0) {
                json_object_put(value);
                return -ENOMEM;
        }
        return 0;
}

static int add_string(struct json_object *o, const char *key, const char *value) {
        return value ? add_member(o, key, json_object_new_string(value)) : 0;
}

static struct json_object *name_value_new(const char *name_key, const char *name, const char *value_key,
                                          const char *value) {
        struct json_object *o = json_object_new_object();
        if (!o)
                return NULL;
        if (add_string(o, name_key, name) < 0 || add_string(o, value_key, value) < 0) {
                json_object_put(o);
                return NULL;
        }
        return o;
}

int pod_manifest_new(PodManifest **ret) {
        _cleanup_json_ struct json_object *o = json_object_new_object();
        if (!o)
                return -ENOMEM;
        int r = add_string(o, "acKind", POD_MANIFEST_KIND);
        r = r ?: add_string(o, "acVersion", POD_MANIFEST_VERSION);
        r = r ?: add_member(o, "apps", json_object_new_array());
        if (r < 0)
                return r;
        return manifest_from_json(TAKE_PTR(o), MUTATION_WHAT, ret, NULL);
}

/* The member "key" of o, created as an empty array when absent. */
static struct json_object *array_member(struct json_object *o, const char *key) {
        struct json_object *a = member(o, key);
        if (a)
                return a;
        if (add_member(o, key, json_object_new_array()) < 0)
                return NULL;
        return member(o, key);
}

/* "NAME=VALUE" strings as [{"name", "value"}], a later NAME replacing the
 * value of an earlier one where it stands. */
static int environment_from_strv(char *const *env, const Path *p, struct json_object **ret, Error **err) {
        const Checker c = { .what = MUTATION_WHAT, .err = err };
        _cleanup_json_ struct json_object *a = json_object_new_array();
        if (!a)
                return oom(&c);
        for (char *const *i = env; i && *i; i++) {
                const char *eq = strchr(*i, '=');
                char q[VALUE_QUOTED_MAX];
                if (!eq)
                        return bad(&c, p, "%s is not NAME=VALUE", value_quote(*i, q));
                _cleanup_free_ char *name = strndup(*i, (size_t) (eq - *i));
                if (!name)
                        return oom(&c);
                struct json_object *existing = NULL;
                for (size_t k = 0, n = json_object_array_length(a); k < n && !existing; k++) {
                        struct json_object *e = json_object_array_get_idx(a, k);
                        if (streq(json_object_get_string(member(e, "name")), name))
                                existing = e;
                }
                int r = existing ? add_string(existing, "value", eq + 1)
                                 : add_element(a, name_value_new("name", name, "value", eq + 1));
                if (r < 0)
                        return oom(&c);
        }
        *ret = TAKE_PTR(a);
        return 0;
}

static int app_entry_from_spec(const PodAppSpec *spec, size_t index, struct json_object **ret, Error **err) {
        const Checker c = { .what = MUTATION_WHAT, .err = err };
        _cleanup_json_ struct json_object *entry = json_object_new_object(), *image = json_object_new_object(),
                                          *app = json_object_new_object(), *env = NULL;
        if (!entry || !image || !app)
                return oom(&c);
        const Path *ap = KEY(IDX(KEY(NULL, "apps"), index), "app");
        int r = environment_from_strv(spec->environment, KEY(ap, "environment"), &env, err);
        if (r < 0)
                return r;

        /* A NULL required field is left out: validation then names it. */
        r = add_string(entry, "name", spec->name);
        r = r ?: add_string(image, "name", spec->image_name);
        r = r ?: add_string(image, "id", spec->image_id);
        r = r ?: add_member(entry, "image", TAKE_PTR(image));
        if (spec->exec)
                r = r ?: add_member(app, "exec", json_strv(spec->exec));
        r = r ?: add_string(app, "user", spec->user ?: "0");
        r = r ?: add_string(app, "group", spec->group ?: "0");
        r = r ?: add_string(app, "workingDirectory", spec->working_directory ?: "/");
        r = r ?: add_member(app, "environment", TAKE_PTR(env));
        if (r == 0 && spec->n_supplementary_gids > 0) {
                struct json_object *gids = json_object_new_array();
                r = add_member(app, "supplementaryGIDs", gids);
                for (size_t i = 0; r == 0 && i < spec->n_supplementary_gids; i++)
                        r = add_element(gids, json_object_new_int64(spec->supplementary_gids[i]));
        }
        if (r == 0 && spec->isolators) {
                struct json_object *isolators = NULL;
                r = json_object_deep_copy(spec->isolators, &isolators, NULL) < 0 ? -ENOMEM
                                                                                  : add_member(app, "isolators", isolators);
        } else
                r = r ?: add_member(app, "isolators", json_object_new_array());
        if (r == 0 && spec->n_event_handlers > 0) {
                struct json_object *handlers = json_object_new_array();
                r = add_member(app, "eventHandlers", handlers);
                for (size_t i = 0; r == 0 && i < spec->n_event_handlers; i++) {
                        struct json_object *h = json_object_new_object();
                        r = add_element(handlers, h);
                        r = r ?: add_string(h, "name", spec->event_handlers[i].name);
                        r = r ?: add_member(h, "exec", json_strv(spec->event_handlers[i].exec));
                }
        }
        r = r ?: add_member(entry, "app", TAKE_PTR(app));
        if (spec->read_only_rootfs)
                r = r ?: add_member(entry, "readOnlyRootFS", json_object_new_boolean(1));
        if (r == 0 && spec->n_mounts > 0) {
                struct json_object *mounts = json_object_new_array();
                r = add_member(entry, "mounts", mounts);
                for (size_t i = 0; r == 0 && i < spec->n_mounts; i++)
                        r = add_element(mounts, name_value_new("volume", spec->mounts[i].volume, "path",
                                                               spec->mounts[i].path));
        }
        if (r == 0 && spec->n_annotations > 0) {
                struct json_object *annotations = json_object_new_array();
                r = add_member(entry, "annotations", annotations);
                for (size_t i = 0; r == 0 && i < spec->n_annotations; i++)
                        r = add_element(annotations, name_value_new("name", spec->annotations[i].name, "value",
                                                                    spec->annotations[i].value));
        }
        if (r < 0)
                return oom(&c);
        *ret = TAKE_PTR(entry);
        return 0;
}

int pod_manifest_add_app(PodManifest *m, const PodAppSpec *spec, Error **err) {
        if (pod_manifest_find_app(m, spec->name))
                return error_set(err, -EEXIST, "%s: an app named \"%s\" exists already", MUTATION_WHAT, spec->name);

        _cleanup_json_ struct json_object *entry = NULL, *copy = NULL;
        int r = app_entry_from_spec(spec, m->n_apps, &entry, err);
        if (r < 0)
                return r;
        if ((r = document_copy(m, &copy, err)) < 0)
                return r;
        if (add_element(member(copy, "apps"), TAKE_PTR(entry)) < 0)
                return error_sys(err, -ENOMEM, "%s", MUTATION_WHAT);
        return manifest_replace(m, TAKE_PTR(copy), err);
}

int pod_manifest_remove_app(PodManifest *m, const char *name, Error **err) {
        const PodApp *a = pod_manifest_find_app(m, name);
        if (!a)
                return error_set(err, -ENOENT, "%s: no app named \"%s\"", MUTATION_WHAT, strempty(name));
        size_t index = (size_t) (a - m->apps);

        _cleanup_json_ struct json_object *copy = NULL;
        int r = document_copy(m, &copy, err);
        if (r < 0)
                return r;
        if (json_object_array_del_idx(member(copy, "apps"), index, 1) < 0)
                return error_set(err, -EIO, "%s: removing app \"%s\"", MUTATION_WHAT, name);
        return manifest_replace(m, TAKE_PTR(copy), err);
}

int pod_manifest_add_volume(PodManifest *m, const PodVolume *volume, Error **err) {
        if (pod_manifest_find_volume(m, volume->name))
                return error_set(err, -EEXIST, "%s: a volume named \"%s\" exists already", MUTATION_WHAT,
                                 volume->name);

        _cleanup_json_ struct json_object *v = json_object_new_object(), *copy = NULL;
        if (!v)
                return error_sys(err, -ENOMEM, "%s", MUTATION_WHAT);
        int r = add_string(v, "name", volume->name);
        switch (volume->kind) {
        case POD_VOLUME_HOST:
                r = r ?: add_string(v, "kind", "host");
                r = r ?: add_string(v, "source", volume->source);
                r = r ?: add_member(v, "readOnly", json_object_new_boolean(volume->read_only));
                break;
        case POD_VOLUME_EMPTY: {
                char mode[16];
                snprintf(mode, sizeof(mode), "%04" PRIo32, volume->mode);
                r = r ?: add_string(v, "kind", "empty");
                r = r ?: add_member(v, "readOnly", json_object_new_boolean(volume->read_only));
                r = r ?: add_string(v, "mode", mode);
                r = r ?: add_member(v, "uid", json_object_new_int64(volume->uid));
                r = r ?: add_member(v, "gid", json_object_new_int64(volume->gid));
                break;
        }
        default:
                return error_set(err, -EINVAL, "%s: volume \"%s\": unknown kind %d", MUTATION_WHAT,
                                 strempty(volume->name), (int) volume->kind);
        }
        if (r < 0)
                return error_sys(err, -ENOMEM, "%s", MUTATION_WHAT);

        if ((r = document_copy(m, &copy, err)) < 0)
                return r;
        struct json_object *volumes = array_member(copy, "volumes");
        if (!volumes || add_element(volumes, TAKE_PTR(v)) < 0)
                return error_sys(err, -ENOMEM, "%s", MUTATION_WHAT);
        return manifest_replace(m, TAKE_PTR(copy), err);
}

int pod_manifest_add_port(PodManifest *m, const PodPort *port, Error **err) {
        for (size_t i = 0; i < m->n_ports; i++)
                if (ports_clash(&m->ports[i], port))
                        return error_set(err, -EEXIST, "%s: host port %u/%s is published already", MUTATION_WHAT,
                                         port->host_port, port->protocol);
        _cleanup_json_ struct json_object *e = json_object_new_object(), *copy = NULL;
        if (!e)
                return error_sys(err, -ENOMEM, "%s", MUTATION_WHAT);
        int r = add_string(e, "name", port->name);
        r = r ?: add_member(e, "hostPort", json_object_new_int(port->host_port));
        r = r ?: add_member(e, "podPort", json_object_new_int(port->pod_port));
        r = r ?: add_string(e, "protocol", port->protocol);
        if (port->host_ip)
                r = r ?: add_string(e, "hostIP", port->host_ip);
        if (r < 0)
                return error_sys(err, -ENOMEM, "%s", MUTATION_WHAT);
        if ((r = document_copy(m, &copy, err)) < 0)
                return r;
        struct json_object *ports = array_member(copy, "ports");
        if (!ports || add_element(ports, TAKE_PTR(e)) < 0)
                return error_sys(err, -ENOMEM, "%s", MUTATION_WHAT);
        return manifest_replace(m, TAKE_PTR(copy), err);
}

int pod_manifest_set_annotation(PodManifest *m, const char *name, const char *value, Error **err) {
        _cleanup_json_ struct json_object *copy = NULL;
        int r = document_copy(m, &copy, err);
        if (r < 0)
                return r;
        struct json_object *annotations = array_member(copy, "annotations");
        if (!annotations)
                return error_sys(err, -ENOMEM, "%s", MUTATION_WHAT);

        /* Replaced where it stands, so the order of the others is kept. */
        for (size_t i = 0; i < m->n_annotations; i++)
                if (name && streq(m->annotations[i].name, name)) {
                        struct json_object *e = json_object_array_get_idx(annotations, i);
                        if (add_string(e, "value", value) < 0)
                                return error_sys(err, -ENOMEM, "%s", MUTATION_WHAT);
                        if (!value)
                                json_object_object_del(e, "value");
                        return manifest_replace(m, TAKE_PTR(copy), err);
                }
        if (add_element(annotations, name_value_new("name", name, "value", value)) < 0)
                return error_sys(err, -ENOMEM, "%s", MUTATION_WHAT);
        return manifest_replace(m, TAKE_PTR(copy), err);
}
