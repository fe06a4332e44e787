/* SPDX-License-Identifier: Apache-2.0 */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "basic/strv.h"
#include "basic/time-util.h"
#include "manifest/pod-manifest.h"
#include "pod/pod-journal.h"
#include "unit/app-unit.h"

int pod_journal_exec(const PodStore *ps, const Pod *p, const char *app, char **args, Error **err) {
        if (faccessat(p->fd, POD_JOURNAL_DIR, F_OK, AT_SYMLINK_NOFOLLOW) < 0)
                return errno == ENOENT ? error_set(err, -ENOENT, "pod %s has no journal: it has not run (it is %s)",
                                                   p->uuid, pod_state_to_string(p->state))
                                       : error_sys(err, -errno, "pod %s: %s/", p->uuid, POD_JOURNAL_DIR);
        _cleanup_free_ char *unit = NULL;
        if (app) {
                _cleanup_pod_manifest_ PodManifest *m = NULL;
                if (pod_manifest_read_at(p->fd, "pod", "pod manifest", &m, err) < 0)
                        return error_prefix(err, "pod %s", p->uuid);
                if (!pod_manifest_find_app(m, app))
                        return error_set(err, -ENOENT, "pod %s has no app \"%s\"", p->uuid, app);
                if (asprintf(&unit, "--unit=" APP_UNIT_FORMAT, app) < 0)
                        return error_sys(err, -ENOMEM, "pod %s", p->uuid);
        }
        _cleanup_free_ char *path = pod_path(ps, p), *dir_arg = NULL;
        if (!path || asprintf(&dir_arg, "--directory=%s/%s", path, POD_JOURNAL_DIR) < 0)
                return error_sys(err, -ENOMEM, "pod %s", p->uuid);
        size_t n = strv_length(args);
        _cleanup_free_ char **argv = calloc(n + 4, sizeof(char *));
        if (!argv)
                return error_sys(err, -ENOMEM, "pod %s", p->uuid);
        size_t k = 0;
        argv[k++] = "journalctl";
        argv[k++] = dir_arg;
        if (unit)
                argv[k++] = unit;
        for (size_t i = 0; i < n; i++)
                argv[k++] = args[i];
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
                Error *e = NULL;
                if (dup2(pipefd[1], STDOUT_FILENO) < 0)
                        _exit(127);
                pod_journal_exec(ps, p, app, args, &e);
                dprintf(STDERR_FILENO, "%s\n", e ? e->msg : "journalctl");
                _exit(127);
        }
        close(pipefd[1]);
        /* What the pod logged goes to a user's terminal: control
         * characters but newline and tab, DEL and the C1 controls (UTF-8
         * C2 80..C2 9F) are shown as '?', so that it cannot drive the
         * terminal; and the whole is bounded. */
        size_t max = (size_t) lines * 1024, size = 0;
        _cleanup_free_ char *text = malloc(max + 1);
        bool after_c2 = false;
        ssize_t k = 0;
        while (text && size < max && (k = read(pipefd[0], text + size, max - size)) != 0) {
                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        break;
                }
                for (size_t i = size; i < size + (size_t) k; i++) {
                        unsigned char c = (unsigned char) text[i];
                        if ((c < 0x20 && c != '\n' && c != '\t') || c == 0x7f || (after_c2 && c >= 0x80 && c <= 0x9f)) {
                                text[i] = '?';
                                if (after_c2)
                                        text[i - 1] = '?';
                        }
                        after_c2 = c == 0xc2;
                }
                size += (size_t) k;
        }
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
