/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

#include <archive.h>
#include <archive_entry.h>

#include "basic/error.h"

static inline void archive_read_freep(struct archive **a) {
        if (*a)
                archive_read_free(*a);
}
#define _cleanup_archive_read_ _cleanup_(archive_read_freep)

/* Opens a tar stream (plain, gzip, xz, zstd or bzip2) for reading. Only the
 * filters libarchive implements in-process are enabled: untrusted input must
 * not make us spawn external decompressors. */
int archive_open_tar_fd(int fd, const char *what, struct archive **ret, Error **err);
