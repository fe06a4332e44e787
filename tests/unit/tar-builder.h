/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* Builds tar archives in memory files for tests: every kind of entry,
 * including the hostile ones real images must never get away with. */

#include <archive.h>
#include <archive_entry.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tests.h"

typedef struct TarBuilder {
        struct archive *a;
        int fd;
} TarBuilder;

/* filter: ARCHIVE_FILTER_NONE, ARCHIVE_FILTER_GZIP, ... */
static inline void tar_begin(TarBuilder *t, int filter) {
        t->fd = memfd_create("tar", MFD_CLOEXEC);
        ASSERT(t->fd >= 0);
        t->a = archive_write_new();
        ASSERT(t->a);
        ASSERT(archive_write_set_format_pax_restricted(t->a) == ARCHIVE_OK);
        if (filter != ARCHIVE_FILTER_NONE)
                ASSERT(archive_write_add_filter(t->a, filter) == ARCHIVE_OK);
        ASSERT(archive_write_open_fd(t->a, t->fd) == ARCHIVE_OK);
}

static inline struct archive_entry *tar_entry(const char *name, mode_t type, mode_t perm) {
        struct archive_entry *e = archive_entry_new();
        ASSERT(e);
        archive_entry_set_pathname(e, name);
        archive_entry_set_filetype(e, type);
        archive_entry_set_perm(e, perm);
        archive_entry_set_mtime(e, 1577836800, 0);
        return e;
}

static inline void tar_write(TarBuilder *t, struct archive_entry *e, const void *data, size_t size) {
        archive_entry_set_size(e, (la_int64_t) size);
        ASSERT(archive_write_header(t->a, e) == ARCHIVE_OK);
        if (size > 0)
                ASSERT(archive_write_data(t->a, data, size) == (la_ssize_t) size);
        archive_entry_free(e);
}

static inline void tar_file(TarBuilder *t, const char *name, const char *content) {
        tar_write(t, tar_entry(name, AE_IFREG, 0644), content, strlen(content));
}

static inline void tar_dir(TarBuilder *t, const char *name) {
        tar_write(t, tar_entry(name, AE_IFDIR, 0755), NULL, 0);
}

static inline void tar_symlink(TarBuilder *t, const char *name, const char *target) {
        struct archive_entry *e = tar_entry(name, AE_IFLNK, 0777);
        archive_entry_set_symlink(e, target);
        tar_write(t, e, NULL, 0);
}

static inline void tar_hardlink(TarBuilder *t, const char *name, const char *target) {
        struct archive_entry *e = tar_entry(name, AE_IFREG, 0644);
        archive_entry_set_hardlink(e, target);
        archive_entry_set_size(e, 0);
        ASSERT(archive_write_header(t->a, e) == ARCHIVE_OK);
        archive_entry_free(e);
}

/* Ends the archive; returns its fd positioned at the start. */
static inline int tar_end(TarBuilder *t) {
        ASSERT(archive_write_close(t->a) == ARCHIVE_OK);
        archive_write_free(t->a);
        ASSERT(lseek(t->fd, 0, SEEK_SET) == 0);
        return t->fd;
}

/* Copies an fd's whole content into a file at dirfd/path. */
static inline void fd_to_file(int fd, int dirfd, const char *path) {
        int out = openat(dirfd, path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        ASSERT(out >= 0);
        ASSERT(lseek(fd, 0, SEEK_SET) == 0);
        char buf[65536];
        ssize_t k;
        while ((k = read(fd, buf, sizeof(buf))) > 0)
                ASSERT(write(out, buf, (size_t) k) == k);
        ASSERT(k == 0);
        close(out);
        ASSERT(lseek(fd, 0, SEEK_SET) == 0);
}
