/* SPDX-License-Identifier: Apache-2.0 */
#include "basic/strv.h"

size_t strv_length(char *const *l) {
        size_t n = 0;
        while (l && l[n])
                n++;
        return n;
}

char **strv_copy(char *const *l) {
        size_t n = strv_length(l);
        char **c = calloc(n + 1, sizeof(char *));
        if (!c)
                return NULL;
        for (size_t i = 0; i < n; i++)
                if (!(c[i] = strdup(l[i]))) {
                        strv_free(c);
                        return NULL;
                }
        return c;
}

int strv_push(char ***l, const char *value) {
        size_t n = strv_length(*l);
        char *v = strdup(value);
        char **nl = v ? realloc(*l, (n + 2) * sizeof(char *)) : NULL;
        if (!nl) {
                free(v);
                return -ENOMEM;
        }
        nl[n] = v;
        nl[n + 1] = NULL;
        *l = nl;
        return 0;
}

bool strv_contains(char *const *l, const char *value) {
        for (char *const *i = l; i && *i; i++)
                if (streq(*i, value))
                        return true;
        return false;
}

const char *strv_find_prefix(char *const *l, const char *prefix) {
        for (; l && *l; l++)
                if (startswith(*l, prefix))
                        return *l;
        return NULL;
}
