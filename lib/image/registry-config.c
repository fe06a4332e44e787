/* SPDX-License-Identifier: Apache-2.0 */
#include <fcntl.h>
#include <sys/stat.h>

#include "basic/fs.h"
#include "basic/json-util.h"
#include "image/registry-config.h"

int registry_config_insecure(const char *registry, bool *ret, Error **err) {
        const char *path = getenv("SDPOD_REGISTRIES_CONFIG");
        if (!path || !*path)
                path = REGISTRIES_CONFIG_DEFAULT;
        if (access(path, F_OK) < 0 && errno == ENOENT) {
                *ret = false;
                return 0;
        }
        _cleanup_free_ char *data = NULL;
        size_t size;
        int r = read_file(path, REGISTRIES_CONFIG_MAX, &data, &size, err);
        if (r < 0)
                return r;
        _cleanup_json_ struct json_object *root = NULL;
        r = json_parse(data, size, path, &root, err);
        if (r < 0)
                return r;
        if (!json_object_is_type(root, json_type_object))
                return error_set(err, -EBADMSG, "%s: not a JSON object", path);
        struct json_object *registries, *entry, *insecure;
        r = json_get_object(root, "registries", false, &registries, path, err);
        if (r < 0)
                return r;
        bool v = false;
        if (registries && json_object_object_get_ex(registries, registry, &entry)) {
                if (!json_object_is_type(entry, json_type_object))
                        return error_set(err, -EBADMSG, "%s: registries.\"%s\": not an object", path, registry);
                if (json_object_object_get_ex(entry, "insecure", &insecure)) {
                        if (!json_object_is_type(insecure, json_type_boolean))
                                return error_set(err, -EBADMSG, "%s: registries.\"%s\".insecure: not true or false",
                                                 path, registry);
                        v = json_object_get_boolean(insecure);
                }
        }
        *ret = v;
        return 0;
}

static int append_file(int dirfd, const char *name, const char *dir, char **buf, size_t *size, Error **err) {
        _cleanup_free_ char *data = NULL;
        size_t n;
        _cleanup_close_ int fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
        if (fd < 0)
                return error_sys(err, -errno, "%s/%s", dir, name);
        char what[PATH_MAX];
        snprintf(what, sizeof(what), "%s/%s", dir, name);
        int r = read_fd(fd, what, REGISTRY_CA_MAX, &data, &n, err);
        if (r < 0)
                return r;
        if (*size + n + 1 > REGISTRY_CA_MAX)
                return error_set(err, -EFBIG, "%s: the *.crt files add up to more than %u bytes", dir, REGISTRY_CA_MAX);
        char *nb = realloc(*buf, *size + n + 2);
        if (!nb)
                return error_set(err, -ENOMEM, "out of memory");
        memcpy(nb + *size, data, n);
        *size += n;
        nb[(*size)++] = '\n'; /* a file without a final newline must not glue two PEM blocks */
        nb[*size] = '\0';
        *buf = nb;
        return 0;
}

static int load_dir(const char *dir, RegistryCerts *c, Error **err) {
        _cleanup_closedir_ DIR *d = opendir(dir);
        if (!d)
                return error_sys(err, -errno, "certificate directory %s", dir);
        /* sorted, so that the order of the CAs does not depend on the file system */
        struct dirent **names = NULL;
        int n = scandir(dir, &names, NULL, alphasort);
        if (n < 0)
                return error_sys(err, -errno, "certificate directory %s", dir);
        int r = 0;
        for (int i = 0; i < n; i++) {
                const char *name = names[i]->d_name;
                if (r >= 0 && name[0] != '.') {
                        if (endswith(name, ".crt"))
                                r = append_file(dirfd(d), name, dir, &c->ca_pem, &c->ca_pem_size, err);
                        else if (streq(name, "client.cert") && asprintf(&c->client_cert, "%s/%s", dir, name) < 0)
                                r = error_set(err, -ENOMEM, "out of memory");
                        else if (streq(name, "client.key") && asprintf(&c->client_key, "%s/%s", dir, name) < 0)
                                r = error_set(err, -ENOMEM, "out of memory");
                }
                free(names[i]);
        }
        free(names);
        if (r < 0)
                return r;
        if (!!c->client_cert != !!c->client_key)
                return error_set(err, -EINVAL, "%s: client.cert and client.key go together; only %s is there", dir,
                                 c->client_cert ? "client.cert" : "client.key");
        return (c->dir = strdup(dir)) ? 0 : error_set(err, -ENOMEM, "out of memory");
}

int registry_certs_load(const char *cert_dir, const char *registry, RegistryCerts *ret, Error **err) {
        static const char *const bases[] = { "/etc/sdpod/certs.d", "/etc/containers/certs.d", "/etc/docker/certs.d" };
        RegistryCerts c = {};
        int r = 0;
        if (cert_dir)
                r = load_dir(cert_dir, &c, err);
        else {
                for (size_t i = 0; i < ELEMENTSOF(bases); i++) {
                        _cleanup_free_ char *dir = NULL;
                        if (asprintf(&dir, "%s/%s", bases[i], registry) < 0)
                                return error_set(err, -ENOMEM, "out of memory");
                        struct stat st;
                        if (stat(dir, &st) < 0 || !S_ISDIR(st.st_mode))
                                continue;
                        r = load_dir(dir, &c, err);
                        break;
                }
        }
        if (r < 0) {
                registry_certs_done(&c);
                return r;
        }
        *ret = c;
        return 0;
}

void registry_certs_done(RegistryCerts *c) {
        if (!c)
                return;
        free(c->dir);
        free(c->ca_pem);
        free(c->client_cert);
        free(c->client_key);
        *c = (RegistryCerts) {};
}
