/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

#include <sys/file.h>

/* Opens (creating) path below dirfd and flock(2)s it with operation
 * (LOCK_SH or LOCK_EX, optionally | LOCK_NB). Returns the fd that holds the
 * lock: the kernel releases it when the last copy of the fd is closed, so a
 * lock never outlives a crashed holder. -EWOULDBLOCK when LOCK_NB and taken. */
int lock_file_at(int dirfd, const char *path, int operation);
