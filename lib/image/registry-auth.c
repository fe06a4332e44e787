/* SPDX-License-Identifier: Apache-2.0 */
#include <fcntl.h>
#include <pwd.h>
#include <sys/stat.h>

#include "basic/base64.h"
#include "basic/fs.h"
#include "basic/json-util.h"
#include "basic/strv.h"
#include "image/registry-auth.h"

#define STRV_FOREACH(s, l) for (char **s = (l); s && *s; s++)

/* strv_push() of p, which is freed either way. */
static int strv_consume(char ***l, char *p) {
        int r = p ? strv_push(l, p) : -ENOMEM;
        free(p);
        return r;
}


/* An "auths" key names a registry as login wrote it ("host:port"), or as
 * docker's older clients did ("https://host/v1/"); a key with a path but no
 * scheme names one repository of it, which a whole-registry lookup skips. */
static bool host_matches(const char *host, size_t n, const char *registry) {
        if (n == strlen(registry) && strncmp(host, registry, n) == 0)
                return true;
        /* docker's own key for Docker Hub is https://index.docker.io/v1/ */
        return streq(registry, "docker.io") && ((n == strlen("index.docker.io") && strncmp(host, "index.docker.io", n) == 0) ||
                                                (n == strlen("registry-1.docker.io") &&
                                                 strncmp(host, "registry-1.docker.io", n) == 0));
}

static bool auth_key_matches(const char *key, const char *registry) {
        const char *host = startswith(key, "https://") ?: startswith(key, "http://");
        if (!host)
                return host_matches(key, strlen(key), registry);
        return host_matches(host, strcspn(host, "/"), registry);
}

static int entry_credentials(struct json_object *entry, const char *what, const char *key, char **ret_user,
                             char **ret_password, Error **err) {
        char q[VALUE_QUOTED_MAX];
        if (!json_object_is_type(entry, json_type_object))
                return error_set(err, -EBADMSG, "%s: auths entry %s: not an object", what, value_quote(key, q));
        const char *auth;
        int r = json_get_string(entry, "auth", false, &auth, what, err);
        if (r < 0)
                return r;
        if (!auth || !*auth)
                return 0; /* a credential helper's or identity token's entry: not ours */
        _cleanup_free_ char *plain = NULL;
        size_t plain_size = 0;
        if (base64_decode(auth, strlen(auth), &plain, &plain_size) < 0 || strlen(plain) != plain_size)
                return error_set(err, -EBADMSG, "%s: auths entry %s: \"auth\" is not base64 of USER:PASSWORD", what,
                                 value_quote(key, q));
        char *colon = strchr(plain, ':');
        if (!colon || colon == plain)
                return error_set(err, -EBADMSG, "%s: auths entry %s: \"auth\" is not base64 of USER:PASSWORD", what,
                                 value_quote(key, q));
        *colon = '\0';
        _cleanup_free_ char *user = strdup(plain), *password = strdup(colon + 1);
        explicit_bzero(plain, strlen(plain) + 1 + strlen(colon + 1));
        if (!user || !password)
                return error_set(err, -ENOMEM, "out of memory");
        *ret_user = TAKE_PTR(user);
        *ret_password = TAKE_PTR(password);
        return 1;
}

int registry_auth_parse(const char *data, size_t size, const char *what, const char *registry, char **ret_user,
                        char **ret_password, Error **err) {
        _cleanup_json_ struct json_object *root = NULL;
        int r = json_parse(data, size, what, &root, err);
        if (r < 0)
                return r;
        if (!json_object_is_type(root, json_type_object))
                return error_set(err, -EBADMSG, "%s: not a JSON object", what);
        struct json_object *auths;
        r = json_get_object(root, "auths", false, &auths, what, err);
        if (r < 0 || !auths)
                return r;
        /* the exact key first, then the forms with a scheme */
        struct json_object *entry;
        if (json_object_object_get_ex(auths, registry, &entry))
                return entry_credentials(entry, what, registry, ret_user, ret_password, err);
        json_object_object_foreach(auths, key, value) {
                if (!auth_key_matches(key, registry))
                        continue;
                r = entry_credentials(value, what, key, ret_user, ret_password, err);
                if (r != 0)
                        return r;
        }
        return 0;
}

static const char *home_dir(void) {
        const char *h = getenv("HOME");
        if (h && h[0] == '/')
                return h;
        struct passwd *pw = getpwuid(getuid());
        return pw && pw->pw_dir && pw->pw_dir[0] == '/' ? pw->pw_dir : NULL;
}

/* The containers files, in order: the XDG_RUNTIME_DIR one (when that is
 * set), the ~/.config one; and with docker, ~/.docker/config.json. */
static int default_paths(bool docker, char ***ret) {
        _cleanup_strv_free_ char **l = NULL;
        const char *xdg = getenv("XDG_RUNTIME_DIR"), *home = home_dir();
        char *p;
        if (xdg && xdg[0] == '/') {
                if (asprintf(&p, "%s/containers/auth.json", xdg) < 0 || strv_consume(&l, p) < 0)
                        return -ENOMEM;
        }
        if (home) {
                if (asprintf(&p, "%s/.config/containers/auth.json", home) < 0 || strv_consume(&l, p) < 0)
                        return -ENOMEM;
                if (docker && (asprintf(&p, "%s/.docker/config.json", home) < 0 || strv_consume(&l, p) < 0))
                        return -ENOMEM;
        }
        *ret = TAKE_PTR(l);
        return 0;
}

static const char *explicit_file(const char *auth_file) {
        if (auth_file)
                return auth_file;
        const char *e = getenv("REGISTRY_AUTH_FILE");
        return e && *e ? e : NULL;
}

/* Reads path; -ENOENT (without a message) when it does not exist. */
static int read_auth_file(const char *path, char **ret, size_t *ret_size, Error **err) {
        if (access(path, F_OK) < 0 && errno == ENOENT)
                return -ENOENT;
        return read_file(path, REGISTRY_AUTH_FILE_MAX, ret, ret_size, err);
}

int registry_auth_lookup(const char *auth_file, const char *registry, char **ret_user, char **ret_password,
                         Error **err) {
        _cleanup_strv_free_ char **paths = NULL;
        const char *only = explicit_file(auth_file);
        if (only) {
                if (strv_push(&paths, only) < 0)
                        return error_set(err, -ENOMEM, "out of memory");
        } else if (default_paths(true, &paths) < 0)
                return error_set(err, -ENOMEM, "out of memory");

        STRV_FOREACH(p, paths) {
                _cleanup_free_ char *data = NULL;
                size_t size;
                int r = read_auth_file(*p, &data, &size, err);
                if (r == -ENOENT)
                        continue;
                if (r < 0)
                        return r;
                r = registry_auth_parse(data, size, *p, registry, ret_user, ret_password, err);
                explicit_bzero(data, size);
                if (r != 0)
                        return r;
        }
        return 0;
}

/* The file store and remove change. */
static int write_path(const char *auth_file, char **ret) {
        const char *only = explicit_file(auth_file);
        if (only)
                return (*ret = strdup(only)) ? 0 : -ENOMEM;
        _cleanup_strv_free_ char **paths = NULL;
        if (default_paths(false, &paths) < 0)
                return -ENOMEM;
        if (!paths || !paths[0])
                return -ENOENT; /* neither XDG_RUNTIME_DIR nor a home */
        STRV_FOREACH(p, paths)
                if (access(*p, F_OK) >= 0)
                        return (*ret = strdup(*p)) ? 0 : -ENOMEM;
        return (*ret = strdup(paths[strv_length(paths) - 1])) ? 0 : -ENOMEM;
}

/* The document of path, or a new empty one when it does not exist; its
 * "auths" object, made when missing. */
static int load_for_update(const char *path, struct json_object **ret_root, struct json_object **ret_auths, Error **err) {
        _cleanup_free_ char *data = NULL;
        size_t size = 0;
        _cleanup_json_ struct json_object *root = NULL;
        int r = read_auth_file(path, &data, &size, err);
        if (r == -ENOENT)
                root = json_object_new_object();
        else if (r < 0)
                return r;
        else {
                r = json_parse(data, size, path, &root, err);
                explicit_bzero(data, size);
                if (r < 0)
                        return r;
                if (!json_object_is_type(root, json_type_object))
                        return error_set(err, -EBADMSG, "%s: not a JSON object, not changing it", path);
        }
        if (!root)
                return error_set(err, -ENOMEM, "out of memory");
        struct json_object *auths;
        if (!json_object_object_get_ex(root, "auths", &auths)) {
                auths = json_object_new_object();
                if (!auths || json_object_object_add(root, "auths", auths) < 0) {
                        json_object_put(auths);
                        return error_set(err, -ENOMEM, "out of memory");
                }
        } else if (!json_object_is_type(auths, json_type_object))
                return error_set(err, -EBADMSG, "%s: field \"auths\" is not an object, not changing it", path);
        *ret_auths = auths;
        *ret_root = TAKE_PTR(root);
        return 0;
}

static int save(const char *path, struct json_object *root, Error **err) {
        /* the directory is private: it may hold other secrets */
        _cleanup_free_ char *dir = strdup(path);
        if (!dir)
                return error_set(err, -ENOMEM, "out of memory");
        char *slash = strrchr(dir, '/');
        if (slash && slash != dir) {
                *slash = '\0';
                int r = mkdir_p(dir, 0700);
                if (r < 0)
                        return error_sys(err, r, "%s: creating directory", dir);
        }
        const char *text = json_to_text(root, true);
        if (!text)
                return error_set(err, -ENOMEM, "out of memory");
        _cleanup_free_ char *data = NULL;
        if (asprintf(&data, "%s\n", text) < 0)
                return error_set(err, -ENOMEM, "out of memory");
        int r = write_file_atomic_at(AT_FDCWD, path, data, strlen(data), 0600, err);
        explicit_bzero(data, strlen(data));
        return r;
}

int registry_auth_store(const char *auth_file, const char *registry, const char *user, const char *password,
                        char **ret_path, Error **err) {
        if (!*user || strchr(user, ':'))
                return error_set(err, -EINVAL, "a user name must be given and cannot contain ':'");
        _cleanup_free_ char *path = NULL;
        int r = write_path(auth_file, &path);
        if (r < 0)
                return error_set(err, r, r == -ENOENT ? "no auth file: set $HOME, $XDG_RUNTIME_DIR or use --authfile"
                                                      : "out of memory");
        _cleanup_json_ struct json_object *root = NULL;
        struct json_object *auths;
        r = load_for_update(path, &root, &auths, err);
        if (r < 0)
                return r;

        _cleanup_free_ char *plain = NULL, *encoded = NULL;
        if (asprintf(&plain, "%s:%s", user, password) < 0)
                return error_set(err, -ENOMEM, "out of memory");
        encoded = base64_encode(plain, strlen(plain));
        explicit_bzero(plain, strlen(plain));
        struct json_object *entry = json_object_new_object();
        if (!encoded || !entry || json_add_string(entry, "auth", encoded) < 0) {
                json_object_put(entry);
                return error_set(err, -ENOMEM, "out of memory");
        }
        explicit_bzero(encoded, strlen(encoded));
        /* the entry replaces any of the same key (object_add puts the old one) */
        if (json_object_object_add(auths, registry, entry) < 0) {
                json_object_put(entry);
                return error_set(err, -ENOMEM, "out of memory");
        }
        r = save(path, root, err);
        if (r < 0)
                return r;
        if (ret_path)
                *ret_path = TAKE_PTR(path);
        return 0;
}

/* Removes the keys of registry (NULL: all) from the file at path: 1 when
 * there were some, 0 when not. */
static int remove_from(const char *path, const char *registry, Error **err) {
        if (access(path, F_OK) < 0 && errno == ENOENT)
                return 0;
        _cleanup_json_ struct json_object *root = NULL;
        struct json_object *auths;
        int r = load_for_update(path, &root, &auths, err);
        if (r < 0)
                return r;
        _cleanup_strv_free_ char **keys = NULL;
        json_object_object_foreach(auths, key, value) {
                (void) value;
                if ((!registry || auth_key_matches(key, registry)) && strv_push(&keys, key) < 0)
                        return error_set(err, -ENOMEM, "out of memory");
        }
        if (!keys)
                return 0;
        STRV_FOREACH(k, keys)
                json_object_object_del(auths, *k);
        r = save(path, root, err);
        return r < 0 ? r : 1;
}

int registry_auth_remove(const char *auth_file, const char *registry, char **ret_path, Error **err) {
        _cleanup_free_ char *path = NULL;
        int r = write_path(auth_file, &path);
        if (r < 0)
                return error_set(err, r, r == -ENOENT ? "no auth file: set $HOME, $XDG_RUNTIME_DIR or use --authfile"
                                                      : "out of memory");
        r = remove_from(path, registry, err);
        if (r >= 0 && ret_path)
                *ret_path = TAKE_PTR(path);
        return r;
}
