/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* What the fly flavor (fly/fly-run.h) cannot do, refused when a pod is
 * prepared with it, and again by its run entrypoint. */

#include <stdbool.h>

#include "basic/error.h"
#include "manifest/pod-manifest.h"

/* 0, or -EOPNOTSUPP naming the flavor and what it cannot do for m. */
int fly_manifest_check(const PodManifest *m, Error **err);

/* The fly flavor's log of its app's stdout and stderr, in the pod
 * directory, written by the host side (its run entrypoint): at most
 * FLY_LOG_MAX bytes, then what is dropped is counted at its end. */
#define FLY_LOG_FILE "fly.log"
#define FLY_LOG_MAX (8U << 20)

/* sdpod journal of a fly pod: the log, escaped for a terminal (raw: as it
 * is), the last lines lines of it only (0: all). */
int fly_log_show(int pod_fd, const char *uuid, unsigned lines, bool raw, Error **err);
/* The same into *ret, for sdpod run's report of an early exit. */
int fly_log_read(int pod_fd, const char *uuid, unsigned lines, char **ret, Error **err);
