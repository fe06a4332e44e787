/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

#include <dirent.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define _cleanup_(f) __attribute__((cleanup(f)))
#define _unused_ __attribute__((unused))
#define _printf_(a, b) __attribute__((format(printf, a, b)))
#define _nodiscard_ __attribute__((warn_unused_result))

#define ELEMENTSOF(x) (sizeof(x) / sizeof((x)[0]))

/* Moves ownership out of a variable that has a cleanup attribute. */
#define TAKE_PTR(p) ({ __typeof__(p) _p = (p); (p) = NULL; _p; })
#define TAKE_FD(fd) ({ int _fd = (fd); (fd) = -1; _fd; })

static inline void freep(void *p) { free(*(void **) p); }
#define _cleanup_free_ _cleanup_(freep)

static inline void closep(int *fd) {
        if (*fd >= 0) {
                int saved = errno;
                close(*fd);
                errno = saved;
        }
}
#define _noreturn_ __attribute__((__noreturn__))
#define _cleanup_close_ _cleanup_(closep)

static inline void fclosep(FILE **f) { if (*f) fclose(*f); }
#define _cleanup_fclose_ _cleanup_(fclosep)

static inline void closedirp(DIR **d) { if (*d) closedir(*d); }
#define _cleanup_closedir_ _cleanup_(closedirp)


static inline int streq(const char *a, const char *b) { return strcmp(a, b) == 0; }
static inline int streq_ptr(const char *a, const char *b) {
        return a && b ? streq(a, b) : a == b;
}
static inline const char *startswith(const char *s, const char *prefix) {
        size_t l = strlen(prefix);
        return strncmp(s, prefix, l) == 0 ? s + l : NULL;
}
static inline bool endswith(const char *s, const char *suffix) {
        size_t n = strlen(s), l = strlen(suffix);
        return n >= l && memcmp(s + n - l, suffix, l) == 0;
}
static inline const char *strempty(const char *s) { return s ? s : ""; }

/* Turns the -1/errno convention of a system call into a negative errno. */
#define RET_NERRNO(expr) ({ int _r = (expr); _r < 0 ? -errno : _r; })
