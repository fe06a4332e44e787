/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The stop and gc entrypoints of the flavors whose run entrypoint is the
 * supervisor of one child of its own, holding the pod's lock: fly (the
 * child is the app) and kvm (QEMU). The supervisor's PID is in the pid
 * file (pod-process.h), its child is the pod's leader. The working
 * directory is the pod directory. */

#include <stdbool.h>

#include "basic/error.h"

/* SIGTERM to the supervisor, which stops its child its own way; with
 * force SIGKILL to the child (the supervisor then records its end and
 * cleans up), or to the supervisor when the child is not known yet. */
int pod_supervised_stop(const char *uuid, bool force, Error **err);

/* Kills what is left in the pod's cgroup, releases its networks (in its
 * kept namespace) and removes its cgroup. */
int pod_supervised_gc(const char *uuid, Error **err);
