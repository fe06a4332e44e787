/* SPDX-License-Identifier: Apache-2.0 */
#include <ctype.h>
#include <limits.h>

#include "basic/base64.h"
#include "basic/digest.h"
#include "basic/fs.h"
#include "basic/json-util.h"
#include "basic/strv.h"
#include "image/policy.h"

/* ---- docker references ------------------------------------------------ */

/* The distribution's limits: a name of at most 255 characters, a tag of
 * at most 128. Anything longer is not a reference. */
#define NAME_MAX_LEN 255
#define TAG_MAX_LEN 128
#define REFERENCE_MAX_LEN (NAME_MAX_LEN + 1 + TAG_MAX_LEN + 1 + DIGEST_STRING_SIZE)

static bool is_lower_alnum(char c) {
        return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

static bool is_alnum(char c) {
        return is_lower_alnum(c) || (c >= 'A' && c <= 'Z');
}

/* [a-z0-9]+ ((. | _ | __ | -+) [a-z0-9]+)* */
static bool path_component_is_valid(const char *s, size_t n) {
        size_t i = 0;
        if (n == 0 || !is_lower_alnum(s[0]))
                return false;
        for (;;) {
                while (i < n && is_lower_alnum(s[i]))
                        i++;
                if (i == n)
                        return true;
                if (s[i] == '.')
                        i++;
                else if (s[i] == '_')
                        i += i + 1 < n && s[i + 1] == '_' ? 2 : 1;
                else if (s[i] == '-')
                        while (i < n && s[i] == '-')
                                i++;
                else
                        return false;
                if (i == n || !is_lower_alnum(s[i]))
                        return false;
        }
}

static bool path_is_valid(const char *s, size_t n) {
        size_t start = 0;
        for (size_t i = 0; i <= n; i++)
                if (i == n || s[i] == '/') {
                        if (!path_component_is_valid(s + start, i - start))
                                return false;
                        start = i + 1;
                }
        return true;
}

/* A host name of components [a-zA-Z0-9] or [a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9]
 * joined by ".", or an IPv6 address in brackets. */
static bool host_is_valid(const char *s, size_t n) {
        if (n == 0)
                return false;
        if (s[0] == '[') {
                if (n < 3 || s[n - 1] != ']')
                        return false;
                for (size_t i = 1; i < n - 1; i++)
                        if (!isxdigit((unsigned char) s[i]) && s[i] != ':')
                                return false;
                return true;
        }
        size_t start = 0;
        for (size_t i = 0; i <= n; i++)
                if (i == n || s[i] == '.') {
                        size_t len = i - start;
                        if (len == 0 || !is_alnum(s[start]) || !is_alnum(s[i - 1]))
                                return false;
                        for (size_t k = start; k < i; k++)
                                if (!is_alnum(s[k]) && s[k] != '-')
                                        return false;
                        start = i + 1;
                }
        return true;
}

/* HOST[:PORT] */
static bool domain_is_valid(const char *s, size_t n) {
        const char *end = s + n;
        const char *colon = NULL;
        if (n > 0 && s[0] == '[') {
                const char *close = memchr(s, ']', n);
                if (!close)
                        return false;
                if (close + 1 < end) {
                        if (close[1] != ':')
                                return false;
                        colon = close + 1;
                }
        } else
                colon = memchr(s, ':', n);
        if (!colon)
                return host_is_valid(s, n);
        if (colon + 1 == end || (size_t) (end - colon - 1) > 5)
                return false;
        for (const char *p = colon + 1; p < end; p++)
                if (!isdigit((unsigned char) *p))
                        return false;
        return host_is_valid(s, (size_t) (colon - s));
}

/* [\w][\w.-]{0,127} */
static bool tag_is_valid(const char *s) {
        size_t n = strlen(s);
        if (n == 0 || n > TAG_MAX_LEN || !(is_alnum(s[0]) || s[0] == '_'))
                return false;
        for (size_t i = 1; i < n; i++)
                if (!is_alnum(s[i]) && s[i] != '_' && s[i] != '.' && s[i] != '-')
                        return false;
        return true;
}

void docker_reference_done(DockerReference *r) {
        if (!r)
                return;
        free(r->name);
        free(r->tag);
        free(r->digest);
        *r = (DockerReference) {};
}

int docker_reference_parse(const char *s, DockerReference *ret) {
        size_t len = strlen(s);
        if (len == 0 || len > REFERENCE_MAX_LEN)
                return -EINVAL;
        /* A bare 64-digit hex string is an image ID, not a name. */
        if (hex_digest_is_valid(s))
                return -EINVAL;

        _cleanup_free_ char *copy = strdup(s);
        if (!copy)
                return -ENOMEM;

        const char *digest = NULL;
        char *at = strchr(copy, '@');
        if (at) {
                *at = 0;
                digest = at + 1;
                if (!digest_is_valid(digest))
                        return -EINVAL;
        }

        /* The first component is a registry when it looks like a host name
         * (a "." or ":", or "localhost") or has upper case letters, which a
         * repository cannot; otherwise the registry is docker.io. */
        const char *domain = "docker.io", *rest = copy;
        char *slash = strchr(copy, '/');
        if (slash) {
                *slash = 0;
                bool is_domain = strpbrk(copy, ".:") || streq(copy, "localhost");
                for (const char *p = copy; *p && !is_domain; p++)
                        if (*p >= 'A' && *p <= 'Z')
                                is_domain = true;
                if (is_domain) {
                        domain = copy;
                        rest = slash + 1;
                } else
                        *slash = '/';
        }
        if (streq(domain, "index.docker.io"))
                domain = "docker.io";
        if (!domain_is_valid(domain, strlen(domain)))
                return -EINVAL;

        const char *tag = NULL;
        char *colon = strchr(rest, ':');
        if (colon) {
                *colon = 0;
                tag = colon + 1;
                if (!tag_is_valid(tag))
                        return -EINVAL;
        }
        if (!path_is_valid(rest, strlen(rest)))
                return -EINVAL;

        _cleanup_free_ char *name = NULL;
        bool library = streq(domain, "docker.io") && !strchr(rest, '/');
        if (asprintf(&name, "%s/%s%s", domain, library ? "library/" : "", rest) < 0)
                return -ENOMEM;
        if (strlen(name) > NAME_MAX_LEN)
                return -EINVAL;

        DockerReference r = {};
        r.name = TAKE_PTR(name);
        r.tag = tag ? strdup(tag) : NULL;
        r.digest = digest ? strdup(digest) : NULL;
        if ((tag && !r.tag) || (digest && !r.digest)) {
                docker_reference_done(&r);
                return -ENOMEM;
        }
        *ret = r;
        return 0;
}

char *docker_reference_to_string(const DockerReference *r) {
        char *s = NULL;
        if (asprintf(&s, "%s%s%s%s%s", r->name, r->tag ? ":" : "", strempty(r->tag), r->digest ? "@" : "",
                     strempty(r->digest)) < 0)
                return NULL;
        return s;
}

char **docker_reference_scopes(const DockerReference *r) {
        _cleanup_strv_free_ char **l = NULL;
        _cleanup_free_ char *first = NULL;
        if (r->digest || r->tag) {
                if (asprintf(&first, "%s%s%s", r->name, r->digest ? "@" : ":", r->digest ? r->digest : r->tag) < 0)
                        return NULL;
                if (strv_push(&l, first) < 0)
                        return NULL;
        }
        _cleanup_free_ char *name = strdup(r->name);
        if (!name)
                return NULL;
        for (;;) {
                if (strv_push(&l, name) < 0)
                        return NULL;
                char *slash = strrchr(name, '/');
                if (!slash)
                        break;
                *slash = 0;
        }
        /* name is now the host[:port]: its parent domains as wildcards. */
        if (name[0] != '[') {
                char *colon = strchr(name, ':');
                if (colon)
                        *colon = 0;
                for (char *dot = strchr(name, '.'); dot; dot = strchr(dot + 1, '.')) {
                        _cleanup_free_ char *w = NULL;
                        if (asprintf(&w, "*%s", dot) < 0 || strv_push(&l, w) < 0)
                                return NULL;
                }
        }
        return TAKE_PTR(l);
}

/* ---- requirements -------------------------------------------------------- */

static void requirement_done(PolicyRequirement *r) {
        free(r->where);
        strv_free(r->key_paths);
        free(r->key_data);
        free(r->identity_reference);
        free(r->unsupported);
}

static void scope_done(PolicyScope *s) {
        for (size_t i = 0; i < s->n_requirements; i++)
                requirement_done(&s->requirements[i]);
        free(s->requirements);
        free(s->name);
}

void policy_free(Policy *p) {
        if (!p)
                return;
        scope_done(&p->fallback);
        for (size_t i = 0; i < p->n_docker; i++)
                scope_done(&p->docker[i]);
        free(p->docker);
        free(p->path);
        free(p);
}

const char *policy_identity_to_string(PolicyIdentity i) {
        switch (i) {
        case POLICY_IDENTITY_MATCH_REPO_DIGEST_OR_EXACT:
                return "matchRepoDigestOrExact";
        case POLICY_IDENTITY_MATCH_EXACT:
                return "matchExact";
        case POLICY_IDENTITY_MATCH_REPOSITORY:
                return "matchRepository";
        case POLICY_IDENTITY_EXACT_REFERENCE:
                return "exactReference";
        case POLICY_IDENTITY_EXACT_REPOSITORY:
                return "exactRepository";
        }
        return "?";
}

/* Strict parsing: a field this version does not know is an error, as in
 * containers' own parser, so that a typo never weakens a requirement. */
static int check_fields(struct json_object *o, const char *const *allowed, const char *where, Error **err) {
        json_object_object_foreach(o, key, val) {
                (void) val;
                bool ok = false;
                for (const char *const *a = allowed; *a; a++)
                        if (streq(*a, key))
                                ok = true;
                if (!ok) {
                        char q[VALUE_QUOTED_MAX];
                        return error_set(err, -EBADMSG, "%s: unknown field %s", where, value_quote(key, q));
                }
        }
        return 0;
}

static int key_path_resolve(const char *path, const char *base_dir, char **ret) {
        char *p;
        if (path[0] == '/' || !base_dir)
                p = strdup(path);
        else if (asprintf(&p, "%s/%s", base_dir, path) < 0)
                p = NULL;
        if (!p)
                return -ENOMEM;
        *ret = p;
        return 0;
}

static int parse_signed_identity(struct json_object *o, PolicyRequirement *req, const char *where, Error **err) {
        _cleanup_free_ char *w = NULL;
        if (asprintf(&w, "%s.signedIdentity", where) < 0)
                return error_sys(err, -ENOMEM, "%s", where);
        if (!json_object_is_type(o, json_type_object))
                return error_set(err, -EBADMSG, "%s: expected an object", w);
        const char *type = NULL;
        int r = json_get_string(o, "type", true, &type, w, err);
        if (r < 0)
                return r;

        const char *field = NULL;
        if (streq(type, "matchRepoDigestOrExact"))
                req->identity = POLICY_IDENTITY_MATCH_REPO_DIGEST_OR_EXACT;
        else if (streq(type, "matchExact"))
                req->identity = POLICY_IDENTITY_MATCH_EXACT;
        else if (streq(type, "matchRepository"))
                req->identity = POLICY_IDENTITY_MATCH_REPOSITORY;
        else if (streq(type, "exactReference")) {
                req->identity = POLICY_IDENTITY_EXACT_REFERENCE;
                field = "dockerReference";
        } else if (streq(type, "exactRepository")) {
                req->identity = POLICY_IDENTITY_EXACT_REPOSITORY;
                field = "dockerRepository";
        } else if (streq(type, "remapIdentity"))
                return error_set(err, -EBADMSG, "%s: type \"remapIdentity\" is not supported by sdpod", w);
        else {
                char q[VALUE_QUOTED_MAX];
                return error_set(err, -EBADMSG,
                                 "%s: unknown type %s (known: matchRepoDigestOrExact, matchExact, matchRepository, "
                                 "exactReference, exactRepository)",
                                 w, value_quote(type, q));
        }

        const char *const allowed[] = { "type", field, NULL };
        r = check_fields(o, allowed, w, err);
        if (r < 0)
                return r;
        if (!field)
                return 0;

        const char *value = NULL;
        r = json_get_string(o, field, true, &value, w, err);
        if (r < 0)
                return r;
        _cleanup_(docker_reference_done) DockerReference ref = {};
        char q[VALUE_QUOTED_MAX];
        if (docker_reference_parse(value, &ref) < 0)
                return error_set(err, -EBADMSG, "%s.%s: %s is not a valid docker reference", w, field,
                                 value_quote(value, q));
        if (req->identity == POLICY_IDENTITY_EXACT_REFERENCE) {
                if (!ref.tag && !ref.digest)
                        return error_set(err, -EBADMSG, "%s.%s: %s names no tag or digest", w, field,
                                         value_quote(value, q));
                req->identity_reference = docker_reference_to_string(&ref);
        } else {
                if (ref.tag || ref.digest)
                        return error_set(err, -EBADMSG, "%s.%s: %s is a repository, without tag or digest", w, field,
                                         value_quote(value, q));
                req->identity_reference = strdup(ref.name);
        }
        if (!req->identity_reference)
                return error_sys(err, -ENOMEM, "%s", w);
        return 0;
}

static int parse_signed_by(struct json_object *o, PolicyRequirement *req, const char *base_dir, Error **err) {
        static const char *const allowed[] = { "type", "keyType", "keyPath", "keyPaths", "keyData", "signedIdentity", NULL };
        const char *where = req->where;
        int r = check_fields(o, allowed, where, err);
        if (r < 0)
                return r;

        const char *key_type = NULL;
        r = json_get_string(o, "keyType", true, &key_type, where, err);
        if (r < 0)
                return r;
        if (!streq(key_type, "GPGKeys")) {
                char q[VALUE_QUOTED_MAX];
                if (streq(key_type, "signedByGPGKeys") || streq(key_type, "X509Certificates") ||
                    streq(key_type, "signedByX509CAs"))
                        return error_set(err, -EBADMSG, "%s.keyType: %s is not supported (only \"GPGKeys\")", where,
                                         value_quote(key_type, q));
                return error_set(err, -EBADMSG, "%s.keyType: unknown key type %s (only \"GPGKeys\")", where,
                                 value_quote(key_type, q));
        }

        struct json_object *v = NULL;
        unsigned given = 0;
        const char *key_path = NULL, *key_data = NULL;
        struct json_object *key_paths = NULL;
        r = json_get_string(o, "keyPath", false, &key_path, where, err);
        if (r < 0)
                return r;
        given += !!key_path;
        r = json_get_array(o, "keyPaths", false, &key_paths, where, err);
        if (r < 0)
                return r;
        given += !!key_paths;
        r = json_get_string(o, "keyData", false, &key_data, where, err);
        if (r < 0)
                return r;
        given += !!key_data;
        if (given != 1)
                return error_set(err, -EBADMSG, "%s: exactly one of \"keyPath\", \"keyPaths\" and \"keyData\" is needed",
                                 where);

        if (key_path) {
                if (!*key_path)
                        return error_set(err, -EBADMSG, "%s.keyPath: empty", where);
                _cleanup_free_ char *p = NULL;
                if (key_path_resolve(key_path, base_dir, &p) < 0 || strv_push(&req->key_paths, p) < 0)
                        return error_sys(err, -ENOMEM, "%s", where);
        } else if (key_paths) {
                size_t n = json_object_array_length(key_paths);
                if (n == 0)
                        return error_set(err, -EBADMSG, "%s.keyPaths: empty", where);
                for (size_t i = 0; i < n; i++) {
                        struct json_object *e = json_object_array_get_idx(key_paths, i);
                        if (!json_object_is_type(e, json_type_string) || !*json_object_get_string(e))
                                return error_set(err, -EBADMSG, "%s.keyPaths[%zu]: expected a file name", where, i);
                        _cleanup_free_ char *p = NULL;
                        if (key_path_resolve(json_object_get_string(e), base_dir, &p) < 0 ||
                            strv_push(&req->key_paths, p) < 0)
                                return error_sys(err, -ENOMEM, "%s", where);
                }
        } else {
                r = base64_decode(key_data, strlen(key_data), &req->key_data, &req->key_data_size);
                if (r == -ENOMEM)
                        return error_sys(err, r, "%s", where);
                if (r < 0 || req->key_data_size == 0)
                        return error_set(err, -EBADMSG, "%s.keyData: not base64 of a key", where);
        }

        req->identity = POLICY_IDENTITY_MATCH_REPO_DIGEST_OR_EXACT;
        if (json_object_object_get_ex(o, "signedIdentity", &v) && !json_object_is_type(v, json_type_null))
                return parse_signed_identity(v, req, where, err);
        return 0;
}

static int parse_requirement(struct json_object *o, PolicyRequirement *req, const char *base_dir, Error **err) {
        const char *where = req->where;
        if (!json_object_is_type(o, json_type_object))
                return error_set(err, -EBADMSG, "%s: expected a requirement object", where);
        const char *type = NULL;
        int r = json_get_string(o, "type", true, &type, where, err);
        if (r < 0)
                return r;

        static const char *const only_type[] = { "type", NULL };
        if (streq(type, "insecureAcceptAnything")) {
                req->type = POLICY_INSECURE_ACCEPT_ANYTHING;
                return check_fields(o, only_type, where, err);
        }
        if (streq(type, "reject")) {
                req->type = POLICY_REJECT;
                return check_fields(o, only_type, where, err);
        }
        if (streq(type, "signedBy")) {
                req->type = POLICY_SIGNED_BY;
                return parse_signed_by(o, req, base_dir, err);
        }
        /* A type containers know and sdpod does not implement does not stop
         * the whole file (the distributions' policies use it for registries
         * sdpod may never pull from): the scope that holds it refuses every
         * image when it is the one that applies. */
        if (streq(type, "sigstoreSigned")) {
                req->type = POLICY_UNSUPPORTED;
                req->unsupported = strdup("requirement type \"sigstoreSigned\" is not supported by sdpod");
                if (!req->unsupported)
                        return error_sys(err, -ENOMEM, "%s", where);
                return 0;
        }
        char q[VALUE_QUOTED_MAX];
        return error_set(err, -EBADMSG,
                         "%s: unknown requirement type %s (known: insecureAcceptAnything, reject, signedBy)", where,
                         value_quote(type, q));
}

static int parse_scope(struct json_object *array, const char *what, const char *path, const char *display,
                       const char *base_dir, PolicyScope *ret, Error **err) {
        if (!json_object_is_type(array, json_type_array))
                return error_set(err, -EBADMSG, "%s: %s: expected an array of requirements", what, path);
        size_t n = json_object_array_length(array);
        if (n == 0)
                return error_set(err, -EBADMSG, "%s: %s: no requirements (an empty list is refused, not taken for accept)",
                                 what, path);
        ret->name = strdup(display);
        ret->requirements = calloc(n, sizeof(PolicyRequirement));
        if (!ret->name || !ret->requirements)
                return error_sys(err, -ENOMEM, "%s", what);
        for (size_t i = 0; i < n; i++) {
                PolicyRequirement *req = &ret->requirements[i];
                ret->n_requirements++;
                if (asprintf(&req->where, "%s: %s[%zu]", what, path, i) < 0) {
                        req->where = NULL;
                        return error_sys(err, -ENOMEM, "%s", what);
                }
                int r = parse_requirement(json_object_array_get_idx(array, i), req, base_dir, err);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* A docker scope: "" (the transport's default), "*.DOMAIN", or a reference
 * (HOST[:PORT][/PATH][:TAG|@DIGEST]). Only a wildcard's leading "*" is
 * special; any other scope is compared as a string. */
static bool docker_scope_is_valid(const char *s) {
        if (!*s)
                return true;
        const char *w = startswith(s, "*.");
        if (w)
                return host_is_valid(w, strlen(w));
        if (strlen(s) > REFERENCE_MAX_LEN)
                return false;
        for (const char *p = s; *p; p++)
                if (!is_alnum(*p) && !strchr("._-:/@[]", *p))
                        return false;
        return true;
}

static int json_path_of_scope(const char *transport, const char *scope, char **ret) {
        /* Scopes are the operator's, but quoted all the same. */
        char q[VALUE_QUOTED_MAX], t[VALUE_QUOTED_MAX];
        if (asprintf(ret, "transports[%s][%s]", value_quote(transport, t), value_quote(scope, q)) < 0)
                return -ENOMEM;
        return 0;
}

int policy_parse(const char *text, size_t size, const char *what, const char *base_dir, Policy **ret, Error **err) {
        _cleanup_json_ struct json_object *root = NULL;
        int r = json_parse(text, size, what, &root, err);
        if (r < 0)
                return r;
        if (!json_object_is_type(root, json_type_object))
                return error_set(err, -EBADMSG, "%s: expected a JSON object", what);
        static const char *const allowed[] = { "default", "transports", NULL };
        r = check_fields(root, allowed, what, err);
        if (r < 0)
                return r;

        _cleanup_(policy_freep) Policy *p = calloc(1, sizeof(Policy));
        if (!p || !(p->path = strdup(what)))
                return error_sys(err, -ENOMEM, "%s", what);

        struct json_object *def = NULL;
        if (!json_object_object_get_ex(root, "default", &def))
                return error_set(err, -EBADMSG, "%s: field \"default\": missing (the policy for images no scope names)",
                                 what);
        r = parse_scope(def, what, "default", "default", base_dir, &p->fallback, err);
        if (r < 0)
                return r;

        struct json_object *transports = NULL;
        r = json_get_object(root, "transports", false, &transports, what, err);
        if (r < 0)
                return r;
        if (!transports) {
                *ret = TAKE_PTR(p);
                return 0;
        }
        json_object_object_foreach(transports, transport, scopes) {
                char q[VALUE_QUOTED_MAX];
                if (!json_object_is_type(scopes, json_type_object))
                        return error_set(err, -EBADMSG, "%s: transports[%s]: expected an object of scopes", what,
                                         value_quote(transport, q));
                bool docker = streq(transport, "docker");
                if (docker) {
                        size_t n = (size_t) json_object_object_length(scopes);
                        p->docker = calloc(n ? n : 1, sizeof(PolicyScope));
                        if (!p->docker)
                                return error_sys(err, -ENOMEM, "%s", what);
                }
                json_object_object_foreach(scopes, scope, reqs) {
                        _cleanup_free_ char *path = NULL;
                        if (json_path_of_scope(transport, scope, &path) < 0)
                                return error_sys(err, -ENOMEM, "%s", what);
                        if (docker && !docker_scope_is_valid(scope))
                                return error_set(err, -EBADMSG,
                                                 "%s: %s: not a docker scope (HOST[:PORT][/PATH][:TAG|@DIGEST] or *.DOMAIN)",
                                                 what, path);
                        /* Other transports' requirements are checked as
                         * strictly, and then dropped: sdpod only pulls
                         * through "docker". */
                        PolicyScope s = {};
                        _cleanup_free_ char *display = NULL;
                        if (asprintf(&display, "docker \"%s\"", scope) < 0) {
                                display = NULL;
                                return error_sys(err, -ENOMEM, "%s", what);
                        }
                        r = parse_scope(reqs, what, path, docker ? scope : display, base_dir, &s, err);
                        if (r < 0 || !docker) {
                                scope_done(&s);
                                if (r < 0)
                                        return r;
                                continue;
                        }
                        if (!*scope) {
                                free(s.name);
                                s.name = TAKE_PTR(display);
                        }
                        p->docker[p->n_docker++] = s;
                }
        }
        *ret = TAKE_PTR(p);
        return 0;
}

int policy_load(const char *path, Policy **ret, Error **err) {
        const char *file = path ? path : POLICY_DEFAULT_PATH;
        _cleanup_free_ char *text = NULL;
        size_t size = 0;
        Error *e = NULL;
        int r = read_file(file, POLICY_FILE_MAX, &text, &size, &e);
        if (r == -ENOENT && !path) {
                error_free(e);
                return policy_parse(POLICY_BUILTIN_DEFAULT, strlen(POLICY_BUILTIN_DEFAULT),
                                    "built-in default policy (no " POLICY_DEFAULT_PATH ")", NULL, ret, err);
        }
        if (r < 0) {
                if (err && !*err) {
                        *err = TAKE_PTR(e);
                        (void) error_prefix(err, "signature policy");
                }
                error_free(e);
                return r;
        }

        _cleanup_free_ char *dir = strdup(file);
        if (!dir)
                return error_sys(err, -ENOMEM, "%s", file);
        char *slash = strrchr(dir, '/');
        if (slash == dir)
                slash[1] = 0;
        else if (slash)
                *slash = 0;
        else {
                free(dir);
                dir = strdup(".");
                if (!dir)
                        return error_sys(err, -ENOMEM, "%s", file);
        }
        return policy_parse(text, size, file, dir, ret, err);
}

const PolicyScope *policy_lookup(const Policy *p, const char *registry, const char *repository, const char *tag,
                                 const char *digest) {
        _cleanup_free_ char *s = NULL;
        _cleanup_(docker_reference_done) DockerReference ref = {};
        if (p->n_docker > 0 && asprintf(&s, "%s/%s%s%s", registry, repository, tag ? ":" : digest ? "@" : "",
                                        tag ? tag : strempty(digest)) >= 0 &&
            docker_reference_parse(s, &ref) >= 0) {
                _cleanup_strv_free_ char **scopes = docker_reference_scopes(&ref);
                for (char **c = scopes; c && *c; c++)
                        for (size_t i = 0; i < p->n_docker; i++)
                                if (streq(p->docker[i].name, *c))
                                        return &p->docker[i];
        }
        for (size_t i = 0; i < p->n_docker; i++)
                if (streq(p->docker[i].name, "docker \"\""))
                        return &p->docker[i];
        return &p->fallback;
}

bool policy_identity_matches(const PolicyRequirement *req, const DockerReference *intended,
                             const char *signed_reference) {
        _cleanup_(docker_reference_done) DockerReference sig = {};
        if (docker_reference_parse(signed_reference, &sig) < 0)
                return false;
        bool sig_name_only = !sig.tag && !sig.digest;
        bool intended_name_only = !intended->tag && !intended->digest;
        _cleanup_free_ char *sig_text = docker_reference_to_string(&sig);
        _cleanup_free_ char *intended_text = docker_reference_to_string(intended);
        if (!sig_text || !intended_text)
                return false;

        switch (req->identity) {
        case POLICY_IDENTITY_MATCH_EXACT:
                return !sig_name_only && !intended_name_only && streq(sig_text, intended_text);
        case POLICY_IDENTITY_MATCH_REPO_DIGEST_OR_EXACT:
                /* By tag: the signature must name that tag. By digest: any
                 * signature of the repository, since its manifest digest is
                 * checked against the image's anyway. */
                if (intended->tag)
                        return streq(sig_text, intended_text);
                if (intended->digest)
                        return streq(sig.name, intended->name);
                return false;
        case POLICY_IDENTITY_MATCH_REPOSITORY:
                return streq(sig.name, intended->name);
        case POLICY_IDENTITY_EXACT_REFERENCE:
                return !sig_name_only && streq_ptr(sig_text, req->identity_reference);
        case POLICY_IDENTITY_EXACT_REPOSITORY:
                return streq_ptr(sig.name, req->identity_reference);
        }
        return false;
}
