/* SPDX-License-Identifier: Apache-2.0 */
#include <fcntl.h>

#include "basic/lock.h"
#include "basic/macro.h"

int lock_file_at(int dirfd, const char *path, int operation) {
        _cleanup_close_ int fd = openat(dirfd, path, O_RDONLY | O_CREAT | O_CLOEXEC | O_NOCTTY, 0600);
        if (fd < 0)
                return -errno;
        while (flock(fd, operation) < 0)
                if (errno != EINTR)
                        return -errno;
        return TAKE_FD(fd);
}
