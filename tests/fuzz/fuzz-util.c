/* SPDX-License-Identifier: Apache-2.0 */
#include <fcntl.h>
#include <stdarg.h>
#include <sys/stat.h>

#include "basic/fs.h"
#include "fuzz.h"

#define SENTINEL_CONTENT "sdpod fuzz sentinel: nothing may change, replace or link this file\n"

static char *scratch_path = NULL;
static struct stat outside_st, sentinel_st;

void fuzz_error_done(const char *what, Error *err) {
        /* The message names the object already; what names the call. */
        if (FUZZ_VERBOSE && err)
                fprintf(stderr, "  %s: %s\n", what, err->msg ? err->msg : strerror(-err->code));
        error_free(err);
}

void fuzz_fail(const char *fmt, ...) {
        va_list ap;
        fputs("fuzz: invariant violated: ", stderr);
        va_start(ap, fmt);
        vfprintf(stderr, fmt, ap);
        va_end(ap);
        fputc('\n', stderr);
        if (scratch_path)
                fprintf(stderr, "fuzz: scratch directory kept: %s\n", scratch_path);
        abort();
}

static void scratch_remove(void) {
        if (!scratch_path)
                return;
        /* The fd stays open until exit; removing by path is fine, nothing
         * else runs any more. (rm_rf_at() takes a name, not a path: given
         * the absolute path it refused with -EINVAL, and every run left its
         * scratch directory behind.) */
        int r = rm_rf(scratch_path);
        if (r < 0)
                fprintf(stderr, "fuzz: removing the scratch directory %s: %s\n", scratch_path, strerror(-r));
        free(scratch_path);
        scratch_path = NULL;
}

const char *fuzz_scratch_path(void) {
        return scratch_path;
}

int fuzz_scratch(const char *target) {
        if (scratch_path)
                return FUZZ_SCRATCH_FD;

        const char *tmp = getenv("TMPDIR");
        char *p = NULL;
        if (asprintf(&p, "%s/sdpod-%s.XXXXXX", tmp && *tmp ? tmp : "/tmp", target) < 0)
                fuzz_fail("out of memory");
        if (!mkdtemp(p))
                fuzz_fail("mkdtemp(%s): %m", p);
        scratch_path = p;
        atexit(scratch_remove);

        /* A fixed descriptor number, so that /proc/self/fd/1000 names the
         * scratch directory in seeds (see fuzz.h). Taking over a descriptor
         * that is in use would break whoever uses it: refuse instead. */
        if (fcntl(FUZZ_SCRATCH_FD, F_GETFD) >= 0)
                fuzz_fail("file descriptor %d is in use already", FUZZ_SCRATCH_FD);
        _cleanup_close_ int fd = open(p, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0 || dup3(fd, FUZZ_SCRATCH_FD, O_CLOEXEC) < 0)
                fuzz_fail("%s: %m", p);

        if (mkdirat(FUZZ_SCRATCH_FD, "outside", 0755) < 0)
                fuzz_fail("%s/outside: %m", p);
        _cleanup_close_ int s = openat(FUZZ_SCRATCH_FD, "outside/sentinel",
                                       O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
        if (s < 0 || write_all(s, SENTINEL_CONTENT, strlen(SENTINEL_CONTENT)) < 0 || fstat(s, &sentinel_st) < 0)
                fuzz_fail("%s/outside/sentinel: %m", p);
        if (fstatat(FUZZ_SCRATCH_FD, "outside", &outside_st, AT_SYMLINK_NOFOLLOW) < 0)
                fuzz_fail("%s/outside: %m", p);
        return FUZZ_SCRATCH_FD;
}

static bool stat_unchanged(const struct stat *a, const struct stat *b) {
        return a->st_dev == b->st_dev && a->st_ino == b->st_ino && a->st_mode == b->st_mode &&
               a->st_nlink == b->st_nlink && a->st_uid == b->st_uid && a->st_gid == b->st_gid &&
               a->st_size == b->st_size && a->st_mtim.tv_sec == b->st_mtim.tv_sec &&
               a->st_mtim.tv_nsec == b->st_mtim.tv_nsec;
}

/* Every entry of dir (relative to the scratch fd) must be in allowed. */
static void check_entries(const char *dir, const char *const *allowed) {
        int fd = openat(FUZZ_SCRATCH_FD, dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        _cleanup_closedir_ DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
        if (!d)
                fuzz_fail("%s/%s: %m", scratch_path, dir);
        struct dirent *de;
        while ((de = readdir(d))) {
                if (streq(de->d_name, ".") || streq(de->d_name, ".."))
                        continue;
                bool ok = false;
                for (const char *const *a = allowed; a && *a && !ok; a++)
                        ok = streq(*a, de->d_name);
                if (!ok)
                        fuzz_fail("%s/%s: \"%s\" appeared", scratch_path, dir, de->d_name);
        }
}

void fuzz_scratch_check(const char *const *allowed) {
        /* outside/ itself: same inode, mode and owner; its mtime would
         * change with any entry added or removed. */
        struct stat st;
        if (fstatat(FUZZ_SCRATCH_FD, "outside", &st, AT_SYMLINK_NOFOLLOW) < 0)
                fuzz_fail("%s/outside: %m", scratch_path);
        if (!stat_unchanged(&st, &outside_st))
                fuzz_fail("%s/outside: changed or replaced", scratch_path);
        check_entries("outside", (const char *const[]) { "sentinel", NULL });

        /* The sentinel: same inode, no new hard link, same content. */
        if (fstatat(FUZZ_SCRATCH_FD, "outside/sentinel", &st, AT_SYMLINK_NOFOLLOW) < 0)
                fuzz_fail("%s/outside/sentinel: %m", scratch_path);
        if (!stat_unchanged(&st, &sentinel_st))
                fuzz_fail("%s/outside/sentinel: changed, replaced or linked (nlink %ju)", scratch_path,
                          (uintmax_t) st.st_nlink);
        char buf[sizeof(SENTINEL_CONTENT)] = {};
        _cleanup_close_ int fd = openat(FUZZ_SCRATCH_FD, "outside/sentinel", O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0 || read(fd, buf, sizeof(buf)) != (ssize_t) strlen(SENTINEL_CONTENT) ||
            !streq(buf, SENTINEL_CONTENT))
                fuzz_fail("%s/outside/sentinel: content changed", scratch_path);

        /* Nothing else next to it. */
        const char *all[8] = { "outside" };
        for (size_t i = 0; allowed && allowed[i]; i++) {
                if (i + 2 >= ELEMENTSOF(all))
                        fuzz_fail("too many allowed names");
                all[i + 1] = allowed[i];
        }
        check_entries(".", all);
}

unsigned fuzz_count_fds(void) {
        int fd = open("/proc/self/fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        _cleanup_closedir_ DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
        if (!d)
                fuzz_fail("/proc/self/fd: %m");
        unsigned n = 0;
        struct dirent *de;
        while ((de = readdir(d)))
                if (de->d_name[0] != '.')
                        n++;
        return n; /* includes the one reading the directory: same every time */
}
