/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "basic/time-util.h"

uint64_t now_usec(void) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        return (uint64_t) ts.tv_sec * USEC_PER_SEC + (uint64_t) ts.tv_nsec / 1000;
}

uint64_t monotonic_usec(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * USEC_PER_SEC + (uint64_t) ts.tv_nsec / 1000;
}

void format_timestamp(uint64_t usec, char ret[32]) {
        time_t sec = (time_t) (usec / USEC_PER_SEC);
        struct tm tm;
        gmtime_r(&sec, &tm);
        size_t n = strftime(ret, 32, "%Y-%m-%dT%H:%M:%S", &tm);
        snprintf(ret + n, 32 - n, ".%06lluZ", (unsigned long long) (usec % USEC_PER_SEC));
}

int parse_timestamp(const char *s, uint64_t *ret) {
        struct tm tm = {};
        const char *p = strptime(s, "%Y-%m-%dT%H:%M:%S", &tm);
        if (!p)
                return -EINVAL;
        unsigned long long frac = 0;
        if (*p == '.') {
                int digits = 0;
                for (p++; *p >= '0' && *p <= '9'; p++, digits++)
                        if (digits < 6)
                                frac = frac * 10 + (unsigned long long) (*p - '0');
                for (; digits < 6; digits++)
                        frac *= 10;
        }
        if (strcmp(p, "Z") != 0 || tm.tm_sec > 59)
                return -EINVAL;
        time_t sec = timegm(&tm);
        /* Only what format_timestamp() writes: years 1970 to 9999. */
        if (sec < 0 || sec >= 253402300800LL)
                return -ERANGE;
        *ret = (uint64_t) sec * USEC_PER_SEC + frac;
        return 0;
}

int parse_duration(const char *s, uint64_t *ret) {
        static const struct {
                const char *suffix;
                uint64_t usec;
        } units[] = {
                /* longest first, so "ms" is not read as "m" */
                { "ms", 1000ULL }, { "us", 1ULL }, { "s", USEC_PER_SEC }, { "m", 60 * USEC_PER_SEC },
                { "h", 3600 * USEC_PER_SEC }, { "d", 86400 * USEC_PER_SEC },
        };
        uint64_t total = 0;
        const char *p = s;
        if (!*p)
                return -EINVAL;
        while (*p) {
                if (*p < '0' || *p > '9')
                        return -EINVAL;
                uint64_t v = 0;
                for (; *p >= '0' && *p <= '9'; p++) {
                        if (v > (UINT64_MAX - 9) / 10)
                                return -ERANGE;
                        v = v * 10 + (uint64_t) (*p - '0');
                }
                uint64_t unit = 0;
                for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++)
                        if (strncmp(p, units[i].suffix, strlen(units[i].suffix)) == 0) {
                                unit = units[i].usec;
                                p += strlen(units[i].suffix);
                                break;
                        }
                if (unit == 0) {
                        /* A bare number is seconds, but only on its own. */
                        if (*p || total)
                                return -EINVAL;
                        unit = USEC_PER_SEC;
                }
                if (v > (UINT64_MAX - total) / unit)
                        return -ERANGE;
                total += v * unit;
        }
        *ret = total;
        return 0;
}
