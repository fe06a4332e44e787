/* SPDX-License-Identifier: Apache-2.0 */
#include "basic/macro.h"
#include "basic/path.h"

int path_normalize_archive_name(const char *name, char **ret) {
        size_t len = strlen(name);
        _cleanup_free_ char *out = malloc(len + 1);
        if (!out)
                return -ENOMEM;

        size_t n = 0;
        const char *p = name;
        while (*p) {
                while (*p == '/')
                        p++;
                if (!*p)
                        break;
                const char *end = strchrnul(p, '/');
                size_t l = (size_t) (end - p);
                if (l == 1 && p[0] == '.') {
                        p = end;
                        continue;
                }
                if (l == 2 && p[0] == '.' && p[1] == '.')
                        return -EINVAL;
                if (n > 0)
                        out[n++] = '/';
                memcpy(out + n, p, l);
                n += l;
                p = end;
        }
        out[n] = 0;
        *ret = TAKE_PTR(out);
        return 0;
}

int path_split(const char *path, char **ret_parent, char **ret_base) {
        const char *slash = strrchr(path, '/');
        _cleanup_free_ char *parent = slash ? strndup(path, (size_t) (slash - path)) : strdup("");
        char *base = strdup(slash ? slash + 1 : path);
        if (!parent || !base) {
                free(base);
                return -ENOMEM;
        }
        *ret_parent = TAKE_PTR(parent);
        *ret_base = base;
        return 0;
}

bool filename_is_valid(const char *name) {
        return name && *name && !streq(name, ".") && !streq(name, "..") && !strchr(name, '/');
}
