/* SPDX-License-Identifier: Apache-2.0 */
#include <dirent.h>
#include <fcntl.h>
#include <grp.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "basic/fs.h"
#include "basic/strv.h"
#include "basic/time-util.h"
#include "manifest/pod-manifest.h"
#include "pod/pod-journal.h"
#include "pod/pod-userns.h"
#include "unit/app-unit.h"

/* A name the pod's journald gives its files: system.journal,
 * user-1000.journal, system@...-...-....journal, and "~" for one it found
 * corrupt. Nothing else is read, and no name reaches journalctl (which
 * prints names of files it dislikes). */
static bool journal_file_name_ok(const char *name) {
        size_t n = strlen(name);
        if (n == 0 || n > 200 || name[0] == '.' || strspn(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                                                "0123456789@._-~") != n)
                return false;
        return endswith(name, ".journal") || endswith(name, ".journal~");
}

/* The pod's journal files. The directory and everything in it are the
 * pod's (its journald writes them as the pod's root), and journalctl
 * follows symbolic links: given the directory as root, it would open
 * devices that act on an open (a watchdog), or the host's own journal. So:
 *   - only the pod's machine directory (POD/journal/MACHINE-ID, the UUID's
 *     digits), opened here without a symbolic link, and given to
 *     journalctl as /proc/self/fd/D, which the pod cannot redirect;
 *   - only regular files with the names journald gives (checked here, and
 *     the only names journalctl prints), at most POD_JOURNAL_FILES_MAX;
 *   - journalctl runs as the pod's root (pod_journal_exec), so that a file
 *     the pod swaps for a link after this check reaches only what the pod
 *     may read itself. (A pod without a user namespace is the host's root,
 *     trusted code: sdpod-security(7).)
 * Files as /proc/self/fd/D/NAME, not each by an fd of its own: journalctl
 * --follow watches the directory of each path it is given. */
static int journal_file_args(const Pod *p, int *ret_dirfd, char ***ret_args, Error **err) {
        char machine[UUID_STRING_MAX], rel[sizeof(POD_JOURNAL_DIR) + UUID_STRING_MAX + 1];
        size_t k = 0;
        for (const char *c = p->uuid; *c; c++)
                if (*c != '-')
                        machine[k++] = *c;
        machine[k] = 0;
        snprintf(rel, sizeof(rel), POD_JOURNAL_DIR "/%s", machine);
        _cleanup_close_ int dfd = open_beneath_no_symlinks(p->fd, rel, O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
        if (dfd < 0)
                return dfd == -ENOENT ? error_set(err, -ENOENT, "pod %s has no journal: it wrote none", p->uuid)
                                      : error_sys(err, dfd, "pod %s: %s/", p->uuid, rel);
        int list_fd = fcntl(dfd, F_DUPFD_CLOEXEC, 3);
        _cleanup_closedir_ DIR *d = list_fd >= 0 ? fdopendir(list_fd) : NULL;
        if (!d) {
                if (list_fd >= 0)
                        close(list_fd);
                return error_sys(err, -errno, "pod %s: %s/", p->uuid, rel);
        }
        _cleanup_strv_free_ char **args = NULL;
        size_t n = 0;
        struct dirent *de;
        while ((errno = 0, de = readdir(d))) {
                if (!journal_file_name_ok(de->d_name))
                        continue;
                struct stat st;
                if (fstatat(dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(st.st_mode))
                        continue;
                if (++n > POD_JOURNAL_FILES_MAX)
                        return error_set(err, -E2BIG, "pod %s: more than %d journal files in %s/", p->uuid,
                                         POD_JOURNAL_FILES_MAX, rel);
                _cleanup_free_ char *a = NULL;
                if (asprintf(&a, "--file=/proc/self/fd/%d/%s", dfd, de->d_name) < 0 || strv_push(&args, a) < 0)
                        return error_sys(err, -ENOMEM, "pod %s", p->uuid);
        }
        if (errno > 0)
                return error_sys(err, -errno, "pod %s: %s/", p->uuid, rel);
        if (n == 0)
                /* journalctl without a file would show the host's journal */
                return error_set(err, -ENOENT, "pod %s has no journal: it wrote none", p->uuid);
        *ret_dirfd = TAKE_FD(dfd);
        *ret_args = TAKE_PTR(args);
        return 0;
}

/* Becomes the pod's root (uid and gid base), without capabilities or a
 * way back to them; /proc/self stays ours to read (dumpable). */
static int become(uid_t base) {
        if (setgroups(0, NULL) < 0 || setresgid(base, base, base) < 0 || setresuid(base, base, base) < 0 ||
            prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 || prctl(PR_SET_DUMPABLE, 1, 0, 0, 0) < 0)
                return -errno;
        return 0;
}

int pod_journal_exec(const PodStore *ps, const Pod *p, const char *app, char **args, Error **err) {
        if (faccessat(p->fd, POD_JOURNAL_DIR, F_OK, AT_SYMLINK_NOFOLLOW) < 0)
                return errno == ENOENT ? error_set(err, -ENOENT, "pod %s has no journal: it has not run (it is %s)",
                                                   p->uuid, pod_state_to_string(p->state))
                                       : error_sys(err, -errno, "pod %s: %s/", p->uuid, POD_JOURNAL_DIR);
        _cleanup_pod_manifest_ PodManifest *m = NULL;
        if (pod_manifest_read_at(p->fd, "pod", "pod manifest", &m, err) < 0)
                return error_prefix(err, "pod %s", p->uuid);
        PodUserns u;
        if (pod_userns_from_manifest(m, &u, err) < 0)
                return error_prefix(err, "pod %s", p->uuid);
        _cleanup_free_ char *unit = NULL;
        if (app) {
                if (!pod_manifest_find_app(m, app))
                        return error_set(err, -ENOENT, "pod %s has no app \"%s\"", p->uuid, app);
                if (asprintf(&unit, "--unit=" APP_UNIT_FORMAT, app) < 0)
                        return error_sys(err, -ENOMEM, "pod %s", p->uuid);
        }
        _cleanup_close_ int dirfd = -1;
        _cleanup_strv_free_ char **file_args = NULL;
        int r = journal_file_args(p, &dirfd, &file_args, err);
        if (r < 0)
                return r;
        size_t n = strv_length(args), n_files = strv_length(file_args);
        _cleanup_free_ char **argv = calloc(n + n_files + 4, sizeof(char *));
        if (!argv)
                return error_sys(err, -ENOMEM, "pod %s", p->uuid);
        size_t k = 0;
        argv[k++] = "journalctl";
        for (size_t i = 0; i < n_files; i++)
                argv[k++] = file_args[i];
        if (unit)
                argv[k++] = unit;
        for (size_t i = 0; i < n; i++)
                argv[k++] = args[i];
        if (fcntl(dirfd, F_SETFD, 0) < 0)
                return error_sys(err, -errno, "pod %s: journal", p->uuid);
        if (u.enabled && (r = become(pod_userns_root(&u))) < 0)
                return error_sys(err, r, "pod %s: cannot become its root (%u) to read its journal", p->uuid,
                                 (unsigned) pod_userns_root(&u));
        (void) ps;
        fflush(NULL);
        execvp("journalctl", argv);
        return error_sys(err, -errno, "pod %s: cannot execute journalctl (apt-get install systemd)", p->uuid);
}

/* Midnight (local time) of the day of t, days_back days before. */
static int local_midnight(uint64_t now_usec, int days_back, uint64_t *ret) {
        time_t t = (time_t) (now_usec / USEC_PER_SEC);
        struct tm tm;
        if (!localtime_r(&t, &tm))
                return -EINVAL;
        tm.tm_hour = tm.tm_min = tm.tm_sec = 0;
        tm.tm_mday -= days_back;
        tm.tm_isdst = -1;
        time_t m = mktime(&tm);
        if (m < 0)
                return -EINVAL;
        *ret = (uint64_t) m * USEC_PER_SEC;
        return 0;
}

int journal_since_parse(const char *s, uint64_t now_usec, uint64_t *ret) {
        uint64_t v;
        if (streq(s, "now")) {
                *ret = now_usec;
                return 0;
        }
        if (streq(s, "today"))
                return local_midnight(now_usec, 0, ret);
        if (streq(s, "yesterday"))
                return local_midnight(now_usec, 1, ret);
        if (s[0] == '@') {
                /* Whole seconds: journalctl takes them as they are. */
                if (!s[1] || strlen(s + 1) > 12 || strspn(s + 1, "0123456789") != strlen(s + 1))
                        return -EINVAL;
                *ret = strtoull(s + 1, NULL, 10) * USEC_PER_SEC;
                return 0;
        }
        /* A duration before now: "-1h" or "1h ago". */
        const char *ago = strstr(s, " ago");
        if (s[0] == '-' || (ago && streq(ago, " ago"))) {
                _cleanup_free_ char *d = s[0] == '-' ? strdup(s + 1) : strndup(s, (size_t) (ago - s));
                if (!d)
                        return -ENOMEM;
                if (parse_duration(d, &v) < 0 || v > now_usec)
                        return -EINVAL;
                *ret = now_usec - v;
                return 0;
        }
        if (parse_timestamp(s, &v) >= 0) {
                *ret = v;
                return 0;
        }
        /* Local time, as journalctl and date(1) read it. */
        static const char *const formats[] = { "%Y-%m-%d %H:%M:%S", "%Y-%m-%d %H:%M", "%Y-%m-%d" };
        for (size_t i = 0; i < ELEMENTSOF(formats); i++) {
                struct tm tm = {};
                const char *end = strptime(s, formats[i], &tm);
                if (!end || *end || tm.tm_year < 70 || tm.tm_year > 8099)
                        continue;
                tm.tm_isdst = -1;
                time_t t = mktime(&tm);
                if (t < 0)
                        return -EINVAL;
                *ret = (uint64_t) t * USEC_PER_SEC;
                return 0;
        }
        return -EINVAL;
}

int journal_lines_parse(const char *s, uint64_t *ret) {
        if (streq(s, "all")) {
                *ret = UINT64_MAX;
                return 0;
        }
        /* journalctl takes an int: at most 9 digits keeps it one. */
        if (!*s || strlen(s) > 9 || strspn(s, "0123456789") != strlen(s))
                return -EINVAL;
        *ret = strtoull(s, NULL, 10);
        return 0;
}

int pod_journal_tail(const PodStore *ps, const Pod *p, const char *app, unsigned lines, char **ret, Error **err) {
        char n[32];
        snprintf(n, sizeof(n), "--lines=%u", lines);
        char *args[] = { n, "--output=cat", "--no-pager", "--quiet", NULL };
        int pipefd[2];
        if (pipe2(pipefd, O_CLOEXEC) < 0)
                return error_sys(err, -errno, "pod %s: pipe", p->uuid);
        fflush(NULL);
        pid_t pid = fork();
        if (pid < 0) {
                int r = -errno;
                close(pipefd[0]);
                close(pipefd[1]);
                return error_sys(err, r, "pod %s: cannot fork journalctl", p->uuid);
        }
        if (pid == 0) {
                /* Only the lines: what journalctl has to say about the
                 * files goes nowhere, unchecked text as it is. */
                int null = open("/dev/null", O_WRONLY | O_CLOEXEC);
                if (dup2(pipefd[1], STDOUT_FILENO) < 0 || null < 0 || dup2(null, STDERR_FILENO) < 0)
                        _exit(127);
                pod_journal_exec(ps, p, app, args, NULL);
                _exit(127);
        }
        close(pipefd[1]);
        /* What the pod logged goes to a user's terminal: bounded, and made
         * printable (text_make_printable) once it is all read. */
        size_t max = (size_t) lines * 1024, size = 0;
        _cleanup_free_ char *text = malloc(max + 1);
        ssize_t k = 0;
        while (text && size < max && (k = read(pipefd[0], text + size, max - size)) != 0) {
                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        break;
                }
                size += (size_t) k;
        }
        if (text)
                text_make_printable(text, size, true);
        close(pipefd[0]); /* journalctl gets EPIPE if it had more */
        int st;
        while (waitpid(pid, &st, 0) < 0)
                if (errno != EINTR)
                        return error_sys(err, -errno, "pod %s: journalctl", p->uuid);
        if (!text)
                return error_sys(err, -ENOMEM, "pod %s: journal", p->uuid);
        text[size] = 0;
        *ret = TAKE_PTR(text);
        return 0;
}
