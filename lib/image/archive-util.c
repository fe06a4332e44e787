/* SPDX-License-Identifier: Apache-2.0 */
#include "image/archive-util.h"

int archive_open_tar_fd(int fd, const char *what, struct archive **ret, Error **err) {
        _cleanup_archive_read_ struct archive *a = archive_read_new();
        if (!a)
                return error_sys(err, -ENOMEM, "%s", what);
        archive_read_support_filter_gzip(a);
        archive_read_support_filter_xz(a);
        archive_read_support_filter_zstd(a);
        archive_read_support_filter_bzip2(a);
        archive_read_support_format_tar(a);
        /* OCI allows empty layers; some tools write them as zero bytes. */
        archive_read_support_format_empty(a);
        if (archive_read_open_fd(a, fd, 1 << 20) != ARCHIVE_OK)
                return error_set(err, -EBADMSG, "%s: %s", what, archive_error_string(a));
        *ret = TAKE_PTR(a);
        return 0;
}
