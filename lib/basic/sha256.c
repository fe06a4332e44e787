/* SPDX-License-Identifier: Apache-2.0 */
/*
 * SHA-256 as specified in FIPS 180-4, with a portable block function and, on
 * x86-64, one using the SHA extensions (SHA-NI), chosen at run time.
 */

#include <stdbool.h>
#include <string.h>

#include "basic/sha256.h"

/* clang (at least up to 14) rejects "sha" in __builtin_cpu_supports(), so it
 * gets the portable code only. */
#if defined(__x86_64__) && !defined(__clang__)
#define HAVE_SHANI 1
#include <immintrin.h>
#else
#define HAVE_SHANI 0
#endif

static const uint32_t K[64] __attribute__((aligned(16))) = {
        0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
        0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
        0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
        0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
        0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
        0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
        0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
        0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};

static inline uint32_t rotr32(uint32_t x, unsigned n) {
        return (x >> n) | (x << (32 - n));
}

static inline uint32_t load_be32(const uint8_t *p) {
        return (uint32_t) p[0] << 24 | (uint32_t) p[1] << 16 | (uint32_t) p[2] << 8 | (uint32_t) p[3];
}

static inline void store_be32(uint8_t *p, uint32_t v) {
        p[0] = v >> 24;
        p[1] = v >> 16;
        p[2] = v >> 8;
        p[3] = v;
}

#define CH(x, y, z) ((z) ^ ((x) & ((y) ^ (z))))
#define MAJ(x, y, z) (((x) & (y)) | ((z) & ((x) | (y))))
#define BSIG0(x) (rotr32(x, 2) ^ rotr32(x, 13) ^ rotr32(x, 22))
#define BSIG1(x) (rotr32(x, 6) ^ rotr32(x, 11) ^ rotr32(x, 25))
#define SSIG0(x) (rotr32(x, 7) ^ rotr32(x, 18) ^ ((x) >> 3))
#define SSIG1(x) (rotr32(x, 17) ^ rotr32(x, 19) ^ ((x) >> 10))

/* Instead of shuffling eight variables every round, the callers rotate the
 * names they pass in, so each round only writes d and h. */
#define ROUND(a, b, c, d, e, f, g, h, i, wi)                                    \
        do {                                                                    \
                uint32_t t1 = (h) + BSIG1(e) + CH(e, f, g) + K[i] + (wi);       \
                uint32_t t2 = BSIG0(a) + MAJ(a, b, c);                          \
                (d) += t1;                                                      \
                (h) = t1 + t2;                                                  \
        } while (0)

/* The message schedule only ever looks back 16 words, so keep it in a ring. */
#define SCHED(i)                                                                \
        (w[(i) & 15] += SSIG1(w[((i) - 2) & 15]) + w[((i) - 7) & 15] +         \
                        SSIG0(w[((i) - 15) & 15]))

#define EIGHT_ROUNDS(i, W)                                                      \
        do {                                                                    \
                ROUND(a, b, c, d, e, f, g, h, (i) + 0, W((i) + 0));             \
                ROUND(h, a, b, c, d, e, f, g, (i) + 1, W((i) + 1));             \
                ROUND(g, h, a, b, c, d, e, f, (i) + 2, W((i) + 2));             \
                ROUND(f, g, h, a, b, c, d, e, (i) + 3, W((i) + 3));             \
                ROUND(e, f, g, h, a, b, c, d, (i) + 4, W((i) + 4));             \
                ROUND(d, e, f, g, h, a, b, c, (i) + 5, W((i) + 5));             \
                ROUND(c, d, e, f, g, h, a, b, (i) + 6, W((i) + 6));             \
                ROUND(b, c, d, e, f, g, h, a, (i) + 7, W((i) + 7));             \
        } while (0)

#define WLOAD(i) (w[i])

static void sha256_blocks_portable(uint32_t state[static 8], const uint8_t *p, size_t n) {
        for (; n > 0; n--, p += 64) {
                uint32_t w[16];

                for (unsigned i = 0; i < 16; i++)
                        w[i] = load_be32(p + 4 * i);

                uint32_t a = state[0], b = state[1], c = state[2], d = state[3],
                         e = state[4], f = state[5], g = state[6], h = state[7];

                EIGHT_ROUNDS(0, WLOAD);
                EIGHT_ROUNDS(8, WLOAD);
                for (unsigned i = 16; i < 64; i += 8)
                        EIGHT_ROUNDS(i, SCHED);

                state[0] += a;
                state[1] += b;
                state[2] += c;
                state[3] += d;
                state[4] += e;
                state[5] += f;
                state[6] += g;
                state[7] += h;
        }
}

#if HAVE_SHANI
#define SHANI_TARGET __attribute__((target("sha,sse4.1,ssse3")))

/* Four rounds: sha256rnds2 takes the state as (C,D,G,H) and (A,B,E,F) halves
 * and returns the new (A,B,E,F); the old (A,B,E,F) is then the new (C,D,G,H),
 * so swapping the roles of the two registers each call keeps them in step. */
#define SHANI_ROUNDS4(m, i)                                                     \
        do {                                                                    \
                __m128i wk = _mm_add_epi32(m, _mm_load_si128((const __m128i *) &K[i])); \
                cdgh = _mm_sha256rnds2_epu32(cdgh, abef, wk);                   \
                abef = _mm_sha256rnds2_epu32(abef, cdgh, _mm_shuffle_epi32(wk, 0x0e)); \
        } while (0)

/* W[t..t+3] from the 16 previous words held in m0 (oldest) to m3:
 * msg1 adds sigma0(W[t-15]) to W[t-16], alignr supplies W[t-7], and msg2
 * adds sigma1(W[t-2]), which for the upper two words is only known once the
 * lower two are done (hence the dedicated instruction). */
#define SHANI_SCHED(m0, m1, m2, m3)                                             \
        (m0) = _mm_sha256msg2_epu32(_mm_add_epi32(_mm_sha256msg1_epu32(m0, m1), \
                                                  _mm_alignr_epi8(m3, m2, 4)),  \
                                    m3)

SHANI_TARGET
static void sha256_blocks_shani(uint32_t state[static 8], const uint8_t *p, size_t n) {
        /* Byte-swaps each 32-bit lane: the message words are big-endian. */
        const __m128i bswap = _mm_set_epi8(12, 13, 14, 15, 8, 9, 10, 11, 4, 5, 6, 7, 0, 1, 2, 3);
        __m128i abcd, efgh, abef, cdgh;

        abcd = _mm_shuffle_epi32(_mm_loadu_si128((const __m128i *) &state[0]), 0x1b); /* d c b a */
        efgh = _mm_shuffle_epi32(_mm_loadu_si128((const __m128i *) &state[4]), 0x1b); /* h g f e */
        abef = _mm_unpackhi_epi64(efgh, abcd);
        cdgh = _mm_unpacklo_epi64(efgh, abcd);

        for (; n > 0; n--, p += 64) {
                __m128i abef_saved = abef, cdgh_saved = cdgh, m0, m1, m2, m3;

                m0 = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *) (p + 0)), bswap);
                m1 = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *) (p + 16)), bswap);
                m2 = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *) (p + 32)), bswap);
                m3 = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *) (p + 48)), bswap);

                SHANI_ROUNDS4(m0, 0);
                SHANI_ROUNDS4(m1, 4);
                SHANI_ROUNDS4(m2, 8);
                SHANI_ROUNDS4(m3, 12);

                for (unsigned i = 16; i < 64; i += 16) {
                        SHANI_SCHED(m0, m1, m2, m3);
                        SHANI_ROUNDS4(m0, i + 0);
                        SHANI_SCHED(m1, m2, m3, m0);
                        SHANI_ROUNDS4(m1, i + 4);
                        SHANI_SCHED(m2, m3, m0, m1);
                        SHANI_ROUNDS4(m2, i + 8);
                        SHANI_SCHED(m3, m0, m1, m2);
                        SHANI_ROUNDS4(m3, i + 12);
                }

                abef = _mm_add_epi32(abef, abef_saved);
                cdgh = _mm_add_epi32(cdgh, cdgh_saved);
        }

        abcd = _mm_shuffle_epi32(_mm_unpackhi_epi64(cdgh, abef), 0x1b);
        efgh = _mm_shuffle_epi32(_mm_unpacklo_epi64(cdgh, abef), 0x1b);
        _mm_storeu_si128((__m128i *) &state[0], abcd);
        _mm_storeu_si128((__m128i *) &state[4], efgh);
}
#endif

static bool force_portable = false;

/* Not in sha256.h on purpose: only the unit test uses it, to check that both
 * block functions agree on the same machine. */
void sha256_force_portable(int on);
void sha256_force_portable(int on) {
        force_portable = on;
}

static void sha256_blocks(uint32_t state[static 8], const uint8_t *p, size_t n) {
#if HAVE_SHANI
        /* Cheap enough to ask every time: it reads a word libgcc filled in once. */
        __builtin_cpu_init();
        if (!force_portable &&
            __builtin_cpu_supports("sha") &&
            __builtin_cpu_supports("sse4.1") &&
            __builtin_cpu_supports("ssse3")) {
                sha256_blocks_shani(state, p, n);
                return;
        }
#endif
        sha256_blocks_portable(state, p, n);
}

void sha256_init(Sha256 *c) {
        *c = (Sha256) {
                .state = {
                        0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                        0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19,
                },
        };
}

void sha256_update(Sha256 *c, const void *data, size_t size) {
        const uint8_t *p = data;

        if (size == 0)
                return;

        c->length += size;

        if (c->buffer_len > 0) {
                size_t n = sizeof(c->buffer) - c->buffer_len;

                if (n > size)
                        n = size;
                memcpy(c->buffer + c->buffer_len, p, n);
                c->buffer_len += n;
                p += n;
                size -= n;

                if (c->buffer_len < sizeof(c->buffer))
                        return;

                sha256_blocks(c->state, c->buffer, 1);
                c->buffer_len = 0;
        }

        /* Whole blocks straight from the caller's memory: large imports
         * would otherwise pay for a second pass through the buffer. */
        if (size >= 64) {
                size_t n = size / 64;

                sha256_blocks(c->state, p, n);
                p += n * 64;
                size -= n * 64;
        }

        if (size > 0) {
                memcpy(c->buffer, p, size);
                c->buffer_len = size;
        }
}

void sha256_final(Sha256 *c, uint8_t ret[SHA256_DIGEST_SIZE]) {
        uint64_t bits = c->length * 8;
        size_t n = c->buffer_len;

        c->buffer[n++] = 0x80;
        if (n > 56) {
                memset(c->buffer + n, 0, 64 - n);
                sha256_blocks(c->state, c->buffer, 1);
                n = 0;
        }
        memset(c->buffer + n, 0, 56 - n);
        store_be32(c->buffer + 56, bits >> 32);
        store_be32(c->buffer + 60, (uint32_t) bits);
        sha256_blocks(c->state, c->buffer, 1);

        for (unsigned i = 0; i < 8; i++)
                store_be32(ret + 4 * i, c->state[i]);
}

void sha256_to_hex(const uint8_t digest[SHA256_DIGEST_SIZE], char ret[SHA256_HEX_SIZE]) {
        static const char hex[] = "0123456789abcdef";

        for (size_t i = 0; i < SHA256_DIGEST_SIZE; i++) {
                ret[2 * i] = hex[digest[i] >> 4];
                ret[2 * i + 1] = hex[digest[i] & 15];
        }
        ret[2 * SHA256_DIGEST_SIZE] = '\0';
}

void sha256_hex_of(const void *data, size_t size, char ret[SHA256_HEX_SIZE]) {
        uint8_t digest[SHA256_DIGEST_SIZE];
        Sha256 c;

        sha256_init(&c);
        sha256_update(&c, data, size);
        sha256_final(&c, digest);
        sha256_to_hex(digest, ret);
}
