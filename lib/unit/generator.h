/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* What sdpod's two systemd generators share (systemd.generator(7)):
 * sdpod-generator inside a pod, sdpod-pod-generator on the host. A
 * generator runs before journald and may not talk to other processes: it
 * logs to the kernel log, or to stderr when there is none (a pod without
 * /dev/kmsg, a test), and writes its files into the output directory, each
 * exclusively. */

#include <stdbool.h>

#include "basic/macro.h"
#include "unit/pod-units.h"

/* Logs as "PREFIX: message" to /dev/kmsg unless to_stderr_only, or when it
 * cannot be opened; prefix must outlive the logging. */
void generator_log_open(const char *prefix, bool to_stderr_only);
/* priority: 3 error, 4 warning, 6 info (syslog's levels). */
void generator_log(int priority, const char *fmt, ...) _printf_(2, 3);

/* Writes f below the output directory outfd: a regular file created
 * exclusively (one that exists was written by another generator, or an
 * earlier run, and is not overwritten: -EEXIST), or a symlink; the
 * directories of its path (TARGET.wants/) made as needed, never through a
 * symlink. */
int unit_file_write(int outfd, const UnitFile *f);
