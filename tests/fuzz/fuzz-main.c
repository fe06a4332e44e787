/* SPDX-License-Identifier: Apache-2.0 */
/* main() of the regression runners: feeds LLVMFuzzerTestOneInput() every
 * file named on the command line and every file in the directories named
 * there, in name order, so each corpus file runs as part of "meson test"
 * without libFuzzer (and with gcc). A failing input aborts, as it would
 * under libFuzzer; the last "running" line names it. */
#include <fcntl.h>
#include <sys/stat.h>

#include "basic/fs.h"
#include "fuzz.h"

/* Inputs larger than libFuzzer's default -max_len are still read: a corpus
 * file is whatever someone put there. The limit only guards against a
 * mistaken path to something huge. */
#define INPUT_MAX (64U << 20)

static int run_file(int dirfd, const char *name, const char *display) {
        _cleanup_free_ char *data = NULL;
        size_t size = 0;
        Error *err = NULL;
        if (read_file_at(dirfd, name, INPUT_MAX, &data, &size, &err) < 0) {
                fprintf(stderr, "%s\n", err && err->msg ? err->msg : display);
                int r = err ? err->code : -EIO;
                error_free(err);
                return r;
        }
        printf("running %s (%zu bytes)\n", display, size);
        fflush(stdout);
        /* Handed over in a buffer of exactly its size, as libFuzzer does, so
         * that AddressSanitizer sees reads past the end of the input. */
        _cleanup_free_ uint8_t *copy = malloc(size ? size : 1);
        if (!copy)
                return -ENOMEM;
        memcpy(copy, data, size);
        (void) LLVMFuzzerTestOneInput(copy, size);
        return 0;
}

static int is_input(const struct dirent *de) {
        /* Hidden files are editor and VCS leftovers, not inputs. */
        return de->d_name[0] != '.';
}

static int run_directory(const char *path, unsigned *n) {
        struct dirent **list = NULL;
        int k = scandir(path, &list, is_input, alphasort);
        if (k < 0) {
                fprintf(stderr, "%s: %m\n", path);
                return -errno;
        }
        _cleanup_close_ int dfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        int r = dfd < 0 ? -errno : 0;
        for (int i = 0; i < k; i++) {
                struct stat st;
                if (r >= 0 && fstatat(dfd, list[i]->d_name, &st, 0) >= 0 && S_ISREG(st.st_mode)) {
                        _cleanup_free_ char *display = NULL;
                        if (asprintf(&display, "%s/%s", path, list[i]->d_name) < 0)
                                r = -ENOMEM;
                        else if ((r = run_file(dfd, list[i]->d_name, display)) >= 0)
                                (*n)++;
                }
                free(list[i]);
        }
        free(list);
        if (dfd < 0)
                fprintf(stderr, "%s: %s\n", path, strerror(-r));
        return r;
}

int main(int argc, char *argv[]) {
        if (argc < 2) {
                fprintf(stderr, "Usage: %s FILE|DIRECTORY...\n"
                        "Runs the fuzz target on each file, and on each file in each directory.\n",
                        program_invocation_short_name);
                return EXIT_FAILURE;
        }
        unsigned n = 0;
        for (int i = 1; i < argc; i++) {
                struct stat st;
                if (stat(argv[i], &st) < 0) {
                        fprintf(stderr, "%s: %m\n", argv[i]);
                        return EXIT_FAILURE;
                }
                int r = S_ISDIR(st.st_mode) ? run_directory(argv[i], &n) : run_file(AT_FDCWD, argv[i], argv[i]);
                if (r < 0)
                        return EXIT_FAILURE;
                if (!S_ISDIR(st.st_mode))
                        n++;
        }
        /* An empty corpus is more likely a wrong path than a passed test. */
        if (n == 0) {
                fprintf(stderr, "no inputs found\n");
                return EXIT_FAILURE;
        }
        printf("%u inputs passed\n", n);
        return EXIT_SUCCESS;
}
