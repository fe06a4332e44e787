/* SPDX-License-Identifier: Apache-2.0 */
/* sdpod-pod-generator: a generator of the host's systemd that turns each
 * pod definition, /etc/sdpod/pods/NAME.pod, into NAME.service, which runs
 * a fresh pod of that definition on each start (sdpod-pod-generator(8)).
 * What it writes is decided by pod_definition_render(); this only finds
 * the definitions, logs and writes the files. A bad definition is logged
 * with its file and line, and gets no unit; the others still get theirs. */
#include <fcntl.h>
#include <sys/stat.h>

#include "basic/fs.h"
#include "basic/macro.h"
#include "config.h"
#include "unit/generator.h"
#include "unit/pod-definition.h"

#define log_error(...) generator_log(3, __VA_ARGS__)

static int compare_names(const void *a, const void *b) {
        return strcmp(*(char *const *) a, *(char *const *) b);
}

/* The names of dir's NAME.pod entries, sorted, so that the log and the
 * units come out in a stable order. Hidden files and editors' backups
 * (NAME.pod~) are not definitions. */
static int list_definitions(DIR *d, char ***ret, size_t *ret_n) {
        char **names = NULL;
        size_t n = 0;
        struct dirent *de;
        size_t suffix = strlen(POD_DEFINITION_SUFFIX);
        while ((errno = 0, de = readdir(d))) {
                size_t l = strlen(de->d_name);
                if (de->d_name[0] == '.' || l <= suffix || !streq(de->d_name + l - suffix, POD_DEFINITION_SUFFIX))
                        continue;
                char **l2 = realloc(names, (n + 1) * sizeof(char *));
                char *copy = l2 ? strdup(de->d_name) : NULL;
                if (l2)
                        names = l2;
                if (!copy)
                        goto oom;
                names[n++] = copy;
        }
        if (errno != 0) {
                int r = -errno;
                for (size_t i = 0; i < n; i++)
                        free(names[i]);
                free(names);
                return r;
        }
        qsort(names, n, sizeof(char *), compare_names);
        *ret = names;
        *ret_n = n;
        return 0;
oom:
        for (size_t i = 0; i < n; i++)
                free(names[i]);
        free(names);
        return -ENOMEM;
}

/* Renders and writes one definition; a failure is logged, and whatever
 * was written of its units is left (a link without its unit is harmless,
 * and the next daemon-reload starts from an empty directory). */
/* Returns 0, or -EINVAL when the definition is bad (logged). outfd -1:
 * a check, nothing is written. */
static int generate_one(int outfd, const char *dir, const char *name) {
        _cleanup_free_ char *path = NULL, *shown = NULL, *text = NULL;
        _cleanup_error_ Error *err = NULL;
        size_t size;
        /* Messages and SourcePath= name the definition as the host knows
         * it, also in a test run below SDPOD_POD_GENERATOR_ROOT. */
        if (asprintf(&path, "%s/%s", dir, name) < 0 || asprintf(&shown, "%s/%s", POD_DEFINITIONS_DIR, name) < 0) {
                log_error("%s/%s: %s", dir, name, strerror(ENOMEM));
                return -ENOMEM;
        }
        /* The operator's file: a symlink to one elsewhere is followed, but
         * only a regular file of bounded size is read. */
        int r = read_file(path, POD_DEFINITION_MAX, &text, &size, &err);
        if (r < 0) {
                log_error("%s: %s; no unit for it", shown,
                          r == -EBADMSG ? "not a regular file"
                          : r == -EFBIG ? "larger than 64 KiB"
                                        : strerror(-r));
                return r;
        }
        _cleanup_(pod_units_done) PodUnits units = {};
        if (pod_definition_render(shown, text, size, SDPOD_BINARY, &units, &err) < 0) {
                log_error("%s; no unit for it", err ? err->msg : strerror(ENOMEM));
                return -EINVAL;
        }
        for (size_t i = 0; outfd >= 0 && i < units.n_files; i++) {
                r = unit_file_write(outfd, &units.files[i]);
                if (r < 0)
                        log_error("%s: cannot write %s: %s", shown, units.files[i].path, strerror(-r));
        }
        return 0;
}

int main(int argc, char *argv[]) {
        /* SDPOD_POD_GENERATOR_ROOT (tests): definitions are read below it,
         * and nothing is written to the kernel log. */
        const char *test_root = getenv("SDPOD_POD_GENERATOR_ROOT");
        bool testing = test_root && *test_root;
        /* Without arguments, a check by hand: every definition is read and
         * checked, what is wrong printed on stderr, nothing written, and
         * the exit status says whether all are good. It is also the way to
         * see the messages where the kernel log does not reach the journal
         * (in a container). systemd always passes the three directories
         * (systemd.generator(7)). */
        bool check = argc == 1;
        generator_log_open("sdpod-pod-generator", testing || check);
        if (argc != 1 && argc != 4) {
                log_error("expected no arguments (a check) or three directories (normal early late), got %d", argc - 1);
                return 1;
        }
        _cleanup_free_ char *dir = NULL;
        if (asprintf(&dir, "%s%s", testing ? test_root : "", POD_DEFINITIONS_DIR) < 0) {
                log_error("%s", strerror(ENOMEM));
                return 1;
        }

        _cleanup_closedir_ DIR *d = opendir(dir);
        if (!d) {
                if (errno == ENOENT)
                        return 0; /* no definitions: nothing to do */
                log_error("%s: %s", dir, strerror(errno));
                return 1;
        }
        _cleanup_close_ int outfd = -1;
        if (!check && (outfd = open(argv[1], O_PATH | O_DIRECTORY | O_CLOEXEC)) < 0) {
                log_error("%s: %s", argv[1], strerror(errno));
                return 1;
        }
        char **names = NULL;
        size_t n = 0;
        int r = list_definitions(d, &names, &n);
        if (r < 0) {
                log_error("%s: %s", dir, strerror(-r));
                return 1;
        }
        bool all_good = true;
        for (size_t i = 0; i < n; i++) {
                if (generate_one(outfd, dir, names[i]) < 0)
                        all_good = false;
                free(names[i]);
        }
        free(names);
        /* A bad definition was logged and has no unit; the others have
         * theirs. Exiting non-zero would only add a line to the log; a
         * check says it. */
        return check && !all_good ? 1 : 0;
}
