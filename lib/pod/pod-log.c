/* SPDX-License-Identifier: Apache-2.0 */
#include <fcntl.h>

#include "basic/fs.h"
#include "pod/pod-log.h"

int pod_log_open(int pod_fd, PodLog *ret, Error **err) {
        *ret = (PodLog) { .fd = -1, .console = -1 };
        int fd = open_beneath_no_symlinks(pod_fd, POD_LOG_FILE, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_NOFOLLOW, 0640);
        if (fd < 0)
                return error_sys(err, fd, "%s", POD_LOG_FILE);
        ret->fd = fd;
        if (fcntl(STDOUT_FILENO, F_GETFD) >= 0)
                ret->console = STDOUT_FILENO;
        return 0;
}

void pod_log_write(PodLog *l, const char *buf, size_t n) {
        size_t take = l->size >= POD_LOG_MAX ? 0 : ((uint64_t) n < POD_LOG_MAX - l->size ? (uint64_t) n : POD_LOG_MAX - l->size);
        if (take > 0 && l->fd >= 0 && write_all(l->fd, buf, take) >= 0)
                l->size += take;
        l->dropped += n - take;
        for (size_t off = 0; l->console >= 0 && off < n;) {
                char out[4 * 16384];
                size_t k = 0, c = n - off < 16384 ? n - off : 16384;
                text_escape(buf + off, c, true, out, &k);
                if (write_all(l->console, out, k) < 0)
                        l->console = -1;
                off += c;
        }
}

bool pod_log_drain(PodLog *l, int fd) {
        char buf[65536];
        for (;;) {
                ssize_t k = read(fd, buf, sizeof(buf));
                if (k > 0) {
                        pod_log_write(l, buf, (size_t) k);
                        continue;
                }
                return k < 0 && (errno == EAGAIN || errno == EINTR);
        }
}

void pod_log_finish(PodLog *l) {
        if (l->fd >= 0 && l->dropped > 0)
                dprintf(l->fd, "\n[sdpod: the log is full at %u bytes: %llu more bytes were dropped]\n", POD_LOG_MAX,
                        (unsigned long long) l->dropped);
        closep(&l->fd);
}

int pod_log_read(int pod_fd, const char *uuid, unsigned lines, char **ret, Error **err) {
        _cleanup_free_ char *data = NULL;
        size_t size = 0;
        /* The host wrote it; bounded all the same. */
        int r = read_file_at(pod_fd, POD_LOG_FILE, POD_LOG_MAX + 4096, &data, &size, err);
        if (r == -ENOENT) {
                error_free(*err);
                *err = NULL;
                return (*ret = strdup("")) ? 0 : error_sys(err, -ENOMEM, "pod %s", uuid);
        }
        if (r < 0)
                return error_prefix(err, "pod %s", uuid);
        size_t start = 0;
        if (lines > 0) {
                size_t end = size > 0 && data[size - 1] == '\n' ? size - 1 : size, k = end;
                unsigned n = 0;
                while (k > 0 && n < lines)
                        if (data[--k] == '\n' && ++n == lines) {
                                k++;
                                break;
                        }
                start = k;
        }
        char *s = strndup(data + start, size - start);
        return (*ret = s) ? 0 : error_sys(err, -ENOMEM, "pod %s", uuid);
}

int pod_log_show(int pod_fd, const char *uuid, unsigned lines, bool raw, Error **err) {
        _cleanup_free_ char *text = NULL;
        int r = pod_log_read(pod_fd, uuid, lines, &text, err);
        if (r < 0)
                return r;
        size_t n = strlen(text);
        if (raw)
                return write_all(STDOUT_FILENO, text, n) < 0 ? error_sys(err, -errno, "stdout") : 0;
        _cleanup_free_ char *out = malloc(4 * n + 1);
        size_t k = 0;
        if (!out)
                return error_sys(err, -ENOMEM, "pod %s", uuid);
        text_escape(text, n, true, out, &k);
        return write_all(STDOUT_FILENO, out, k) < 0 ? error_sys(err, -errno, "stdout") : 0;
}
