/* SPDX-License-Identifier: Apache-2.0 */
#include <sys/stat.h>
#include <yaml.h>

#include "basic/digest.h"
#include "basic/fs.h"
#include "basic/strv.h"
#include "image/lookaside.h"
#include "image/policy.h"

Lookaside *lookaside_new(void) {
        return calloc(1, sizeof(Lookaside));
}

void lookaside_free(Lookaside *l) {
        if (!l)
                return;
        for (size_t i = 0; i < l->n_entries; i++) {
                free(l->entries[i].scope);
                free(l->entries[i].url);
                free(l->entries[i].where);
        }
        free(l->entries);
        free(l);
}

static void yaml_document_deletep(yaml_document_t **d) {
        if (*d)
                yaml_document_delete(*d);
}

static void yaml_parser_deletep(yaml_parser_t **p) {
        if (*p)
                yaml_parser_delete(*p);
}

/* A scalar's text; NULL for anything else or a scalar holding a NUL. */
static char *scalar_dup(yaml_node_t *n) {
        if (!n || n->type != YAML_SCALAR_NODE)
                return NULL;
        const char *v = (const char *) n->data.scalar.value;
        size_t len = n->data.scalar.length;
        if (memchr(v, 0, len))
                return NULL;
        return strndup(v, len);
}

static bool scalar_is(yaml_node_t *n, const char *s) {
        return n && n->type == YAML_SCALAR_NODE && n->data.scalar.length == strlen(s) &&
               memcmp(n->data.scalar.value, s, n->data.scalar.length) == 0;
}

/* An empty value ("lookaside:" alone, or ~) is YAML's null. */
static bool scalar_is_null(yaml_node_t *n) {
        return n && n->type == YAML_SCALAR_NODE &&
               (n->data.scalar.length == 0 || scalar_is(n, "~") || scalar_is(n, "null")) &&
               n->data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
}

static bool url_is_supported(const char *url) {
        return startswith(url, "file://") || startswith(url, "http://") || startswith(url, "https://");
}

static const LookasideEntry *find_entry(const Lookaside *l, const char *scope) {
        for (size_t i = 0; i < l->n_entries; i++)
                if (streq_ptr(l->entries[i].scope, scope))
                        return &l->entries[i];
        return NULL;
}

static int parse_section(Lookaside *l, yaml_document_t *doc, yaml_node_t *section, const char *scope,
                         const char *what, Error **err) {
        char q[VALUE_QUOTED_MAX];
        _cleanup_free_ char *where = NULL;
        if ((scope ? asprintf(&where, "%s: docker[%s]", what, value_quote(scope, q))
                   : asprintf(&where, "%s: default-docker", what)) < 0) {
                where = NULL;
                return error_sys(err, -ENOMEM, "%s", what);
        }

        const LookasideEntry *before = find_entry(l, scope);
        if (before)
                return error_set(err, -EBADMSG, "%s: defined a second time (first in %s)", where, before->where);

        _cleanup_free_ char *lookaside = NULL, *sigstore = NULL;
        if (!scalar_is_null(section)) {
                if (section->type != YAML_MAPPING_NODE)
                        return error_set(err, -EBADMSG, "%s: expected a mapping", where);
                for (yaml_node_pair_t *pair = section->data.mapping.pairs.start; pair < section->data.mapping.pairs.top;
                     pair++) {
                        yaml_node_t *k = yaml_document_get_node(doc, pair->key);
                        yaml_node_t *v = yaml_document_get_node(doc, pair->value);
                        char **slot = scalar_is(k, "lookaside") ? &lookaside : scalar_is(k, "sigstore") ? &sigstore : NULL;
                        if (!slot)
                                continue; /* the staging locations, and what sdpod does not use */
                        const char *key = slot == &lookaside ? "lookaside" : "sigstore";
                        if (*slot)
                                return error_set(err, -EBADMSG, "%s.%s: given twice", where, key);
                        if (scalar_is_null(v))
                                continue;
                        *slot = scalar_dup(v);
                        if (!*slot)
                                return error_set(err, -EBADMSG, "%s.%s: expected a URL", where, key);
                        if (!url_is_supported(*slot))
                                return error_set(err, -EBADMSG, "%s.%s: %s: only file://, http:// and https:// URLs",
                                                 where, key, value_quote(*slot, q));
                }
        }

        LookasideEntry *e = realloc(l->entries, (l->n_entries + 1) * sizeof(LookasideEntry));
        if (!e)
                return error_sys(err, -ENOMEM, "%s", where);
        l->entries = e;
        LookasideEntry *n = &l->entries[l->n_entries];
        *n = (LookasideEntry) {};
        if (scope && !(n->scope = strdup(scope)))
                return error_sys(err, -ENOMEM, "%s", where);
        n->url = lookaside ? TAKE_PTR(lookaside) : TAKE_PTR(sigstore);
        n->where = TAKE_PTR(where);
        l->n_entries++;
        return 0;
}

int lookaside_parse(Lookaside *l, const char *text, size_t size, const char *what, Error **err) {
        yaml_parser_t parser_storage;
        if (!yaml_parser_initialize(&parser_storage))
                return error_sys(err, -ENOMEM, "%s", what);
        _cleanup_(yaml_parser_deletep) yaml_parser_t *parser = &parser_storage;
        yaml_parser_set_input_string(parser, (const unsigned char *) text, size);

        yaml_document_t doc_storage;
        if (!yaml_parser_load(parser, &doc_storage)) {
                if (parser->error == YAML_MEMORY_ERROR)
                        return error_sys(err, -ENOMEM, "%s", what);
                return error_set(err, -EBADMSG, "%s: not valid YAML: %s (line %zu, column %zu)", what,
                                 strempty(parser->problem), parser->problem_mark.line + 1,
                                 parser->problem_mark.column + 1);
        }
        _cleanup_(yaml_document_deletep) yaml_document_t *doc = &doc_storage;

        yaml_node_t *root = yaml_document_get_root_node(doc);
        if (!root || scalar_is_null(root))
                return 0; /* empty, or only comments */
        if (root->type != YAML_MAPPING_NODE)
                return error_set(err, -EBADMSG, "%s: expected a mapping (default-docker:, docker:)", what);

        bool seen_docker = false;
        for (yaml_node_pair_t *pair = root->data.mapping.pairs.start; pair < root->data.mapping.pairs.top; pair++) {
                yaml_node_t *k = yaml_document_get_node(doc, pair->key);
                yaml_node_t *v = yaml_document_get_node(doc, pair->value);
                int r;
                if (scalar_is(k, "default-docker")) {
                        r = parse_section(l, doc, v, NULL, what, err);
                        if (r < 0)
                                return r;
                        continue;
                }
                if (!scalar_is(k, "docker"))
                        continue;
                if (seen_docker)
                        return error_set(err, -EBADMSG, "%s: docker: given twice", what);
                seen_docker = true;
                if (scalar_is_null(v))
                        continue;
                if (v->type != YAML_MAPPING_NODE)
                        return error_set(err, -EBADMSG, "%s: docker: expected a mapping of scopes", what);
                for (yaml_node_pair_t *sp = v->data.mapping.pairs.start; sp < v->data.mapping.pairs.top; sp++) {
                        _cleanup_free_ char *scope = scalar_dup(yaml_document_get_node(doc, sp->key));
                        if (!scope || !*scope)
                                return error_set(err, -EBADMSG, "%s: docker: a scope that is not a name", what);
                        r = parse_section(l, doc, yaml_document_get_node(doc, sp->value), scope, what, err);
                        if (r < 0)
                                return r;
                }
        }
        return 0;
}

static int compare_names(const void *a, const void *b) {
        return strcmp(*(char *const *) a, *(char *const *) b);
}

int lookaside_load(const char *dir, Lookaside **ret, Error **err) {
        const char *path = dir ? dir : LOOKASIDE_DEFAULT_DIR;
        _cleanup_(lookaside_freep) Lookaside *l = lookaside_new();
        if (!l)
                return error_sys(err, -ENOMEM, "%s", path);

        _cleanup_closedir_ DIR *d = opendir(path);
        if (!d) {
                if (errno == ENOENT && !dir) {
                        *ret = TAKE_PTR(l);
                        return 0;
                }
                return error_sys(err, -errno, "registries.d %s", path);
        }

        _cleanup_strv_free_ char **names = NULL;
        size_t n = 0;
        struct dirent *de;
        while ((errno = 0, de = readdir(d))) {
                if (de->d_name[0] == '.' || !endswith(de->d_name, ".yaml"))
                        continue;
                if (++n > LOOKASIDE_FILES_MAX)
                        return error_set(err, -EFBIG, "registries.d %s: more than %u files", path, LOOKASIDE_FILES_MAX);
                if (strv_push(&names, de->d_name) < 0)
                        return error_sys(err, -ENOMEM, "%s", path);
        }
        if (errno != 0)
                return error_sys(err, -errno, "registries.d %s", path);
        if (n > 1)
                qsort(names, n, sizeof(char *), compare_names);

        for (size_t i = 0; i < n; i++) {
                _cleanup_free_ char *file = NULL, *text = NULL;
                size_t size = 0;
                if (asprintf(&file, "%s/%s", path, names[i]) < 0)
                        return error_sys(err, -ENOMEM, "%s", path);
                struct stat st;
                if (stat(file, &st) < 0)
                        return error_sys(err, -errno, "%s", file);
                if (S_ISDIR(st.st_mode))
                        continue;
                int r = read_file(file, LOOKASIDE_FILE_MAX, &text, &size, err);
                if (r < 0)
                        return r;
                r = lookaside_parse(l, text, size, file, err);
                if (r < 0)
                        return r;
        }
        *ret = TAKE_PTR(l);
        return 0;
}

const LookasideEntry *lookaside_find(const Lookaside *l, const char *registry, const char *repository,
                                     const char *tag, const char *digest) {
        _cleanup_free_ char *s = NULL;
        _cleanup_(docker_reference_done) DockerReference ref = {};
        if (asprintf(&s, "%s/%s%s%s", registry, repository, tag ? ":" : digest ? "@" : "",
                     tag ? tag : strempty(digest)) < 0) {
                s = NULL;
                return NULL;
        }
        if (docker_reference_parse(s, &ref) >= 0) {
                _cleanup_strv_free_ char **scopes = docker_reference_scopes(&ref);
                /* As containers do: an entry without a URL does not stop
                 * the search, a less specific one may still give one. */
                for (char **c = scopes; c && *c; c++) {
                        const LookasideEntry *e = find_entry(l, *c);
                        if (e && e->url)
                                return e;
                }
        }
        const LookasideEntry *e = find_entry(l, NULL);
        return e && e->url ? e : NULL;
}

char *lookaside_signature_url(const char *base, const char *repository, const char *manifest_digest, unsigned index) {
        if (!digest_is_valid(manifest_digest))
                return NULL;
        /* "file:///srv/sigs/" and "file:///srv/sigs" are one place; the
         * slashes of "file:///" itself stay. */
        const char *scheme = strstr(base, "://");
        size_t len = strlen(base), min = scheme ? (size_t) (scheme - base) + 3 : 0;
        while (len > min && base[len - 1] == '/')
                len--;
        char *url = NULL;
        if (asprintf(&url, "%.*s/%s@sha256=%s/signature-%u", (int) len, base, repository, digest_hex(manifest_digest),
                     index) < 0)
                return NULL;
        return url;
}
