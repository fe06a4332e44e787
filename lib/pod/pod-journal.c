/* SPDX-License-Identifier: Apache-2.0 */
#include <fcntl.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "basic/strv.h"
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
