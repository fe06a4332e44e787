/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>

#include "basic/macro.h"
#include "basic/quantity.h"

/* DIGITS[.DIGITS] into an integer part and a fraction scaled to 10^9. */
static int parse_decimal(const char *s, const char **end, uint64_t *ret_int, uint64_t *ret_frac_nano,
                         unsigned *ret_frac_digits) {
        const char *p = s;
        uint64_t v = 0, frac = 0;
        unsigned digits = 0;
        if (*p < '0' || *p > '9')
                return -EINVAL;
        for (; *p >= '0' && *p <= '9'; p++) {
                if (v > (UINT64_MAX - 9) / 10)
                        return -ERANGE;
                v = v * 10 + (uint64_t) (*p - '0');
        }
        if (*p == '.') {
                p++;
                if (*p < '0' || *p > '9')
                        return -EINVAL;
                uint64_t scale = 100000000;
                for (; *p >= '0' && *p <= '9'; p++, digits++) {
                        if (digits >= 9)
                                return -EINVAL; /* finer than a billionth: no one means that */
                        frac += (uint64_t) (*p - '0') * scale;
                        scale /= 10;
                }
        }
        *end = p;
        *ret_int = v;
        *ret_frac_nano = frac;
        *ret_frac_digits = digits;
        return 0;
}

int parse_quantity_bytes(const char *s, uint64_t *ret) {
        static const struct {
                const char *suffix;
                uint64_t factor;
        } suffixes[] = {
                { "", 1 },
                { "k", UINT64_C(1000) },
                { "M", UINT64_C(1000) * 1000 },
                { "G", UINT64_C(1000) * 1000 * 1000 },
                { "T", UINT64_C(1000) * 1000 * 1000 * 1000 },
                { "P", UINT64_C(1000) * 1000 * 1000 * 1000 * 1000 },
                { "E", UINT64_C(1000) * 1000 * 1000 * 1000 * 1000 * 1000 },
                { "Ki", UINT64_C(1) << 10 },
                { "Mi", UINT64_C(1) << 20 },
                { "Gi", UINT64_C(1) << 30 },
                { "Ti", UINT64_C(1) << 40 },
                { "Pi", UINT64_C(1) << 50 },
                { "Ei", UINT64_C(1) << 60 },
        };
        const char *end;
        uint64_t v, frac;
        unsigned digits;
        int r = parse_decimal(s, &end, &v, &frac, &digits);
        if (r < 0)
                return r;
        for (size_t i = 0; i < ELEMENTSOF(suffixes); i++) {
                if (!streq(end, suffixes[i].suffix))
                        continue;
                uint64_t f = suffixes[i].factor;
                if (v > UINT64_MAX / f)
                        return -ERANGE;
                uint64_t bytes = v * f;
                /* frac/1e9 * f, rounded up; f / 1000 keeps the product in
                 * range for every factor (and is exact for the decimal ones). */
                if (frac > 0) {
                        unsigned __int128 part = ((unsigned __int128) frac * f + 999999999) / 1000000000;
                        if (part > UINT64_MAX - bytes)
                                return -ERANGE;
                        bytes += (uint64_t) part;
                }
                *ret = bytes;
                return 0;
        }
        return -EINVAL;
}

int parse_cpu_millis(const char *s, uint64_t *ret) {
        const char *end;
        uint64_t v, frac;
        unsigned digits;
        int r = parse_decimal(s, &end, &v, &frac, &digits);
        if (r < 0)
                return r;
        if (streq(end, "m")) {
                if (digits > 0)
                        return -EINVAL; /* a fraction of a millicore */
                *ret = v;
                return 0;
        }
        if (*end || digits > 3)
                return -EINVAL;
        if (v > UINT64_MAX / 1000 - 1)
                return -ERANGE;
        *ret = v * 1000 + frac / 1000000;
        return 0;
}

void format_cpu_quota(uint64_t millis, char ret[static CPU_QUOTA_MAX]) {
        if (millis % 10 == 0)
                snprintf(ret, CPU_QUOTA_MAX, "%" PRIu64 "%%", millis / 10);
        else
                snprintf(ret, CPU_QUOTA_MAX, "%" PRIu64 ".%" PRIu64 "%%", millis / 10, millis % 10);
}
