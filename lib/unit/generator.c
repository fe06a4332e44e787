/* SPDX-License-Identifier: Apache-2.0 */
#include <fcntl.h>
#include <stdarg.h>

#include "basic/fs.h"
#include "unit/generator.h"

static int kmsg_fd = -1;
static const char *log_prefix = "";

void generator_log_open(const char *prefix, bool to_stderr_only) {
        log_prefix = prefix;
        if (!to_stderr_only && kmsg_fd < 0)
                kmsg_fd = open("/dev/kmsg", O_WRONLY | O_NOCTTY | O_CLOEXEC);
}

void generator_log(int priority, const char *fmt, ...) {
        _cleanup_free_ char *msg = NULL;
        va_list ap;
        va_start(ap, fmt);
        if (vasprintf(&msg, fmt, ap) < 0)
                msg = NULL;
        va_end(ap);
        if (!msg)
                return;
        if (kmsg_fd >= 0 && dprintf(kmsg_fd, "<%d>%s: %s\n", priority, log_prefix, msg) > 0)
                return;
        fprintf(stderr, "%s: %s\n", log_prefix, msg);
}

int unit_file_write(int outfd, const UnitFile *f) {
        _cleanup_close_ int subfd = -1;
        const char *name = f->path, *slash = strrchr(f->path, '/');
        if (slash) {
                _cleanup_free_ char *dir = strndup(f->path, (size_t) (slash - f->path));
                if (!dir)
                        return -ENOMEM;
                if ((subfd = mkdir_p_in_root(outfd, dir, 0755, false)) < 0)
                        return subfd;
                name = slash + 1;
        }
        int dirfd = slash ? subfd : outfd;
        if (f->link_target)
                return RET_NERRNO(symlinkat(f->link_target, dirfd, name));

        _cleanup_close_ int fd = openat(dirfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
        if (fd < 0)
                return -errno;
        int r = write_all(fd, f->content, strlen(f->content));
        if (r < 0)
                return r;
        return RET_NERRNO(close(TAKE_FD(fd)));
}
