/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* A minimal harness: each test program runs its TEST()s in order and exits
 * non-zero on the first failed assertion, printing where and why. */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Set by a test that made something to remove even when an assertion fails
 * (abort() runs no atexit handlers). */
static void (*test_cleanup)(void);

static inline void test_fail(void) {
        if (test_cleanup)
                test_cleanup();
        abort();
}

#define ASSERT(expr)                                                               \
        do {                                                                       \
                if (!(expr)) {                                                     \
                        fprintf(stderr, "%s:%d: assertion failed: %s\n", __FILE__, \
                                __LINE__, #expr);                                  \
                        test_fail();                                                   \
                }                                                                  \
        } while (0)

#define ASSERT_EQ_INT(a, b)                                                           \
        do {                                                                          \
                long long _a = (long long) (a), _b = (long long) (b);                 \
                if (_a != _b) {                                                       \
                        fprintf(stderr, "%s:%d: %s == %lld, expected %s == %lld\n",   \
                                __FILE__, __LINE__, #a, _a, #b, _b);                  \
                        test_fail();                                                      \
                }                                                                     \
        } while (0)

#define ASSERT_STREQ(a, b)                                                           \
        do {                                                                         \
                const char *_a = (a), *_b = (b);                                     \
                if (!_a || !_b || strcmp(_a, _b) != 0) {                             \
                        fprintf(stderr, "%s:%d: %s == \"%s\", expected \"%s\"\n",    \
                                __FILE__, __LINE__, #a, _a ? _a : "(null)",          \
                                _b ? _b : "(null)");                                 \
                        test_fail();                                                     \
                }                                                                    \
        } while (0)

/* Asserts that a string contains a substring (error messages name things). */
#define ASSERT_CONTAINS(hay, needle)                                                 \
        do {                                                                         \
                const char *_h = (hay), *_n = (needle);                              \
                if (!_h || !strstr(_h, _n)) {                                        \
                        fprintf(stderr, "%s:%d: \"%s\" does not contain \"%s\"\n",   \
                                __FILE__, __LINE__, _h ? _h : "(null)", _n);         \
                        test_fail();                                                     \
                }                                                                    \
        } while (0)

#define RUN(test)                                                \
        do {                                                     \
                fprintf(stderr, "== %s\n", #test);               \
                test();                                          \
        } while (0)
