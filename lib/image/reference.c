/* SPDX-License-Identifier: Apache-2.0 */
#include <ctype.h>

#include "basic/digest.h"
#include "image/reference.h"

#define DOCKER_TRANSPORT "docker://"
#define REFERENCE_CHARS "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-/:@[]"

static bool is_lower_alnum(char c) {
        return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

/* A host as the first component of a reference: what it must contain for
 * the component to count as a registry rather than a path. */
static bool component_is_host(const char *s, size_t n) {
        if (n == strlen("localhost") && strncmp(s, "localhost", n) == 0)
                return true;
        return memchr(s, '.', n) || memchr(s, ':', n) || (n > 0 && s[0] == '[');
}

static bool host_char(char c) {
        return isascii(c) && (isalnum(c) || c == '-' || c == '.');
}

bool image_registry_is_valid(const char *s) {
        const char *port;
        if (s[0] == '[') {
                /* an IPv6 literal: hex digits, ':' and '.' inside brackets */
                const char *end = strchr(s, ']');
                if (!end || end == s + 1)
                        return false;
                for (const char *p = s + 1; p < end; p++)
                        if (!isxdigit((unsigned char) *p) && *p != ':' && *p != '.')
                                return false;
                port = end + 1;
                if (*port == '\0')
                        return true;
                if (*port != ':')
                        return false;
        } else {
                size_t n = strcspn(s, ":");
                if (n == 0 || s[0] == '-' || s[0] == '.' || s[n - 1] == '-' || s[n - 1] == '.')
                        return false;
                for (size_t i = 0; i < n; i++)
                        if (!host_char(s[i]) || (s[i] == '.' && s[i + 1] == '.'))
                                return false;
                port = s + n;
                if (*port == '\0')
                        return true;
        }
        /* ":PORT": 1 to 65535 */
        port++;
        size_t digits = strspn(port, "0123456789");
        if (digits == 0 || digits > 5 || port[digits] != '\0')
                return false;
        long v = strtol(port, NULL, 10);
        return v >= 1 && v <= 65535;
}

/* One path component: [a-z0-9]+ joined by '.', '_', "__" or runs of '-'. */
static bool repository_component_is_valid(const char *s, size_t n) {
        if (n == 0 || !is_lower_alnum(s[0]) || !is_lower_alnum(s[n - 1]))
                return false;
        for (size_t i = 0; i < n; i++) {
                if (is_lower_alnum(s[i]))
                        continue;
                if (s[i] == '.' || s[i] == '_') {
                        /* one '.', one '_' or "__", each between alphanumerics */
                        size_t run = 1;
                        while (i + run < n && s[i + run] == s[i])
                                run++;
                        if (run > (s[i] == '_' ? 2u : 1u) || !is_lower_alnum(s[i + run]))
                                return false;
                        i += run - 1;
                } else if (s[i] == '-') {
                        size_t run = 1;
                        while (i + run < n && s[i + run] == '-')
                                run++;
                        if (!is_lower_alnum(s[i + run]))
                                return false;
                        i += run - 1;
                } else
                        return false;
        }
        return true;
}

bool image_repository_is_valid(const char *s) {
        if (*s == '\0')
                return false;
        for (;;) {
                size_t n = strcspn(s, "/");
                if (!repository_component_is_valid(s, n))
                        return false;
                if (s[n] == '\0')
                        return true;
                s += n + 1;
        }
}

bool image_tag_is_valid(const char *s) {
        size_t n = strlen(s);
        if (n == 0 || n > IMAGE_REFERENCE_TAG_MAX)
                return false;
        for (size_t i = 0; i < n; i++) {
                char c = s[i];
                bool word = isascii(c) && (isalnum(c) || c == '_');
                if (!word && (i == 0 || (c != '.' && c != '-')))
                        return false;
        }
        return true;
}

bool image_reference_is_remote(const char *s) {
        if (startswith(s, DOCKER_TRANSPORT))
                return true;
        const char *slash = memchr(s, '/', strcspn(s, "@"));
        return slash && component_is_host(s, slash - s);
}

int image_reference_parse(const char *s, ImageReference *ret, Error **err) {
        char q[VALUE_QUOTED_MAX];
        const char *name = startswith(s, DOCKER_TRANSPORT) ?: s;

        /* the registry is the first component of the name, before any '@' */
        const char *slash = memchr(name, '/', strcspn(name, "@"));
        if (!slash || !component_is_host(name, slash - name)) {
                /* What the user typed is shown as typed when it looks like a
                 * name, quoted when it may hold anything. */
                const char *shown = name;
                if (strlen(name) > IMAGE_REFERENCE_NAME_MAX || name[strspn(name, REFERENCE_CHARS)] != '\0')
                        shown = value_quote(name, q);
                return error_set(err, -EINVAL, "%s: name the registry, e.g. REGISTRY/%s", shown, shown);
        }

        _cleanup_free_ char *copy = strdup(name);
        if (!copy)
                return error_set(err, -ENOMEM, "out of memory");
        char *digest = strchr(copy, '@');
        if (digest)
                *digest++ = '\0';
        char *rest = strchr(copy, '/');
        *rest++ = '\0';
        char *registry = copy, *repository = rest, *tag = NULL;
        /* the tag is after the last ':' of the repository part, which has
         * no ':' of its own (the port is in the registry part) */
        char *colon = strrchr(repository, ':');
        if (colon && !strchr(colon, '/')) {
                *colon = '\0';
                tag = colon + 1;
        }

        value_quote(s, q);
        if (!image_registry_is_valid(registry))
                return error_set(err, -EINVAL, "%s: invalid registry (expected HOST or HOST:PORT)", q);
        if (!image_repository_is_valid(repository)) {
                bool upper = false;
                for (const char *p = repository; *p; p++)
                        upper = upper || (*p >= 'A' && *p <= 'Z');
                return error_set(err, -EINVAL,
                                 upper ? "%s: invalid repository name: it must be lower case"
                                       : "%s: invalid repository name (components of [a-z0-9] joined by '.', '_' or '-', separated by '/')",
                                 q);
        }
        if (strlen(registry) + 1 + strlen(repository) > IMAGE_REFERENCE_NAME_MAX)
                return error_set(err, -EINVAL, "%s: name longer than %d characters", q, IMAGE_REFERENCE_NAME_MAX);
        if (tag && !image_tag_is_valid(tag))
                return error_set(err, -EINVAL, "%s: invalid tag (at most %d of [A-Za-z0-9_.-], not starting with '.' or '-')",
                                 q, IMAGE_REFERENCE_TAG_MAX);
        if (digest && !digest_is_valid(digest))
                return error_set(err, -EINVAL, "%s: invalid digest (expected sha256: and 64 lower-case hex digits)", q);

        ImageReference r = {};
        bool hub = streq(registry, DOCKER_HUB) || streq(registry, "index.docker.io");
        r.registry = strdup(hub ? DOCKER_HUB : registry);
        if (hub && !strchr(repository, '/')) {
                if (asprintf(&r.repository, "library/%s", repository) < 0)
                        r.repository = NULL;
        } else
                r.repository = strdup(repository);
        if (digest)
                r.digest = strdup(digest);
        else
                r.tag = strdup(tag ?: "latest");
        if (!r.registry || !r.repository || (!r.digest && !r.tag)) {
                image_reference_done(&r);
                return error_set(err, -ENOMEM, "out of memory");
        }
        *ret = r;
        return 0;
}

void image_reference_done(ImageReference *r) {
        if (!r)
                return;
        free(r->registry);
        free(r->repository);
        free(r->tag);
        free(r->digest);
        *r = (ImageReference) {};
}

char *image_reference_format(const ImageReference *r) {
        char *s = NULL;
        if (asprintf(&s, "%s/%s%s%s", r->registry, r->repository, r->digest ? "@" : ":",
                     r->digest ?: strempty(r->tag)) < 0)
                return NULL;
        return s;
}
