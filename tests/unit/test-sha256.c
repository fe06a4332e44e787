/* SPDX-License-Identifier: Apache-2.0 */

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "basic/sha256.h"
#include "tests.h"

/* Test-only switch in sha256.c, deliberately not in the header. */
extern void sha256_force_portable(int on);

#define ELEMS(x) (sizeof(x) / sizeof((x)[0]))

/* Deterministic so that a failure can be reproduced. */
static uint64_t rng_state = 0x9e3779b97f4a7c15ULL;

static uint64_t rng(void) {
        rng_state ^= rng_state << 13;
        rng_state ^= rng_state >> 7;
        rng_state ^= rng_state << 17;
        return rng_state;
}

static void fill_random(uint8_t *p, size_t n) {
        for (size_t i = 0; i < n; i++)
                p[i] = (uint8_t) (rng() >> 56);
}

static void hex_oneshot(int portable, const void *data, size_t size, char ret[SHA256_HEX_SIZE]) {
        sha256_force_portable(portable);
        sha256_hex_of(data, size, ret);
        sha256_force_portable(0);
}

/* Feeds data in pieces whose sizes cycle through steps[]. */
static void hex_pieces(int portable, const uint8_t *data, size_t size,
                       const size_t *steps, size_t n_steps, char ret[SHA256_HEX_SIZE]) {
        uint8_t digest[SHA256_DIGEST_SIZE];
        Sha256 c;

        sha256_force_portable(portable);
        sha256_init(&c);
        for (size_t off = 0, i = 0; off < size; i++) {
                size_t k = steps[i % n_steps];

                if (k > size - off)
                        k = size - off;
                sha256_update(&c, data + off, k);
                off += k;
        }
        sha256_final(&c, digest);
        sha256_to_hex(digest, ret);
        sha256_force_portable(0);
}

static void test_fips_vectors(void) {
        static const char abc448[] = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
        static const size_t steps[] = { 1, 63, 64, 65, 1000, 4095 };
        char hex[SHA256_HEX_SIZE];
        uint8_t *million;

        million = malloc(1000000);
        ASSERT(million);
        memset(million, 'a', 1000000);

        for (int portable = 0; portable <= 1; portable++) {
                hex_oneshot(portable, "", 0, hex);
                ASSERT_STREQ(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");

                hex_oneshot(portable, NULL, 0, hex);
                ASSERT_STREQ(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");

                hex_oneshot(portable, "abc", 3, hex);
                ASSERT_STREQ(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");

                hex_oneshot(portable, abc448, strlen(abc448), hex);
                ASSERT_STREQ(hex, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");

                hex_oneshot(portable, million, 1000000, hex);
                ASSERT_STREQ(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");

                hex_pieces(portable, million, 1000000, steps, ELEMS(steps), hex);
                ASSERT_STREQ(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
        }

        free(million);
}

/* Lengths where the padding does or does not spill into an extra block,
 * checked against coreutils' sha256sum rather than against ourselves. */
static void test_padding_boundaries(void) {
        static const struct {
                size_t len;
                const char *hex;
        } vectors[] = {
                { 55, "9f4390f8d30c2dd92ec9f095b65e2b9ae9b0a925a5258e241c9f1e910f734318" },
                { 56, "b35439a4ac6f0948b6d6f9e3c6af0f5f590ce20f1bde7090ef7970686ec6738a" },
                { 57, "f13b2d724659eb3bf47f2dd6af1accc87b81f09f59f2b75e5c0bed6589dfe8c6" },
                { 63, "7d3e74a05d7db15bce4ad9ec0658ea98e3f06eeecf16b4c6fff2da457ddc2f34" },
                { 64, "ffe054fe7ae0cb6dc65c3af9b61d5209f439851db43d0ba5997337df154668eb" },
                { 65, "635361c48bb9eab14198e76ea8ab7f1a41685d6ad62aa9146d301d4f17eb0ae0" },
                { 119, "31eba51c313a5c08226adf18d4a359cfdfd8d2e816b13f4af952f7ea6584dcfb" },
                { 120, "2f3d335432c70b580af0e8e1b3674a7c020d683aa5f73aaaedfdc55af904c21c" },
                { 128, "6836cf13bac400e9105071cd6af47084dfacad4e5e302c94bfed24e013afb73e" },
        };
        char a[128], hex[SHA256_HEX_SIZE];

        memset(a, 'a', sizeof(a));
        for (int portable = 0; portable <= 1; portable++)
                for (size_t i = 0; i < ELEMS(vectors); i++) {
                        hex_oneshot(portable, a, vectors[i].len, hex);
                        ASSERT_STREQ(hex, vectors[i].hex);
                }
}

static void test_split_points(void) {
        static const size_t odd_steps[] = { 1, 3, 5, 7, 11, 13, 31, 63, 65, 127 };
        uint8_t data[300];
        char ref[SHA256_HEX_SIZE], hex[SHA256_HEX_SIZE];

        fill_random(data, sizeof(data));

        for (size_t len = 0; len <= sizeof(data); len++) {
                hex_oneshot(1, data, len, ref);

                for (int portable = 0; portable <= 1; portable++) {
                        hex_oneshot(portable, data, len, hex);
                        ASSERT_STREQ(hex, ref);

                        /* Every two-piece split, including empty pieces at either end. */
                        for (size_t s = 0; s <= len; s++) {
                                uint8_t digest[SHA256_DIGEST_SIZE];
                                Sha256 c;

                                sha256_force_portable(portable);
                                sha256_init(&c);
                                sha256_update(&c, data, s);
                                sha256_update(&c, data + s, len - s);
                                sha256_final(&c, digest);
                                sha256_force_portable(0);
                                sha256_to_hex(digest, hex);
                                ASSERT_STREQ(hex, ref);
                        }

                        /* Many pieces of odd sizes, rotating the starting step. */
                        for (size_t r = 0; r < ELEMS(odd_steps); r++) {
                                size_t steps[ELEMS(odd_steps)];

                                for (size_t i = 0; i < ELEMS(odd_steps); i++)
                                        steps[i] = odd_steps[(i + r) % ELEMS(odd_steps)];
                                hex_pieces(portable, data, len, steps, ELEMS(steps), hex);
                                ASSERT_STREQ(hex, ref);
                        }

                        size_t one = 1;
                        hex_pieces(portable, data, len, &one, 1, hex);
                        ASSERT_STREQ(hex, ref);
                }
        }
}

/* The SHA-NI path must produce exactly what the portable one does. (On a CPU
 * without SHA-NI this compares the portable path with itself.) */
static void test_paths_agree(void) {
        const size_t max = (1 << 20) + 64;
        char a[SHA256_HEX_SIZE], b[SHA256_HEX_SIZE];
        uint8_t *buf;

        buf = malloc(max + 16);
        ASSERT(buf);
        fill_random(buf, max + 16);

        for (size_t len = 0; len <= max; len = len < 1100 ? len + 1 : len * 3 / 2 + 7) {
                /* Vary the alignment of the input as well. */
                const uint8_t *p = buf + len % 16;
                size_t steps[3];

                hex_oneshot(1, p, len, a);
                hex_oneshot(0, p, len, b);
                ASSERT_STREQ(b, a);

                for (size_t i = 0; i < ELEMS(steps); i++)
                        steps[i] = 1 + rng() % 300;
                hex_pieces(0, p, len, steps, ELEMS(steps), b);
                ASSERT_STREQ(b, a);
        }

        free(buf);
}

static void test_against_sha256sum(void) {
        static const size_t steps[] = { 1, 63, 4097, 65536 + 3, 1 << 20 };
        const size_t size = 5 * 1024 * 1024;
        char path[] = "/tmp/test-sha256.XXXXXX";
        char cmd[sizeof(path) + 32], line[256], hex[SHA256_HEX_SIZE];
        uint8_t *buf;
        FILE *f;
        int fd;

        buf = malloc(size);
        ASSERT(buf);
        fill_random(buf, size);

        fd = mkstemp(path);
        ASSERT(fd >= 0);
        for (size_t off = 0; off < size;) {
                ssize_t n = write(fd, buf + off, size - off);

                ASSERT(n > 0);
                off += (size_t) n;
        }
        ASSERT(close(fd) == 0);

        snprintf(cmd, sizeof(cmd), "sha256sum %s", path);
        f = popen(cmd, "r");
        ASSERT(f);
        ASSERT(fgets(line, sizeof(line), f));
        ASSERT(pclose(f) == 0);
        ASSERT(unlink(path) == 0);
        ASSERT(strlen(line) > 64 && line[64] == ' ');
        line[64] = '\0';

        for (int portable = 0; portable <= 1; portable++) {
                hex_oneshot(portable, buf, size, hex);
                ASSERT_STREQ(hex, line);

                hex_pieces(portable, buf, size, steps, ELEMS(steps), hex);
                ASSERT_STREQ(hex, line);
        }

        free(buf);
}

int main(void) {
        RUN(test_fips_vectors);
        RUN(test_padding_boundaries);
        RUN(test_split_points);
        RUN(test_paths_agree);
        RUN(test_against_sha256sum);
        return 0;
}
