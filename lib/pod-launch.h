/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* Starting a prepared pod in the background and waiting until it is ready
 * (its systemd has reached default.target: READY=1). On a host whose PID 1
 * is systemd and which has pod@.service, the pod runs as pod@UUID.service,
 * started over the system bus; elsewhere, as a detached process of its own
 * session (stdin, stdout and stderr /dev/null), whose READY=1 reaches us on
 * a notify socket of ours (systemd-nspawn --notify-ready=yes). */

#include <stdint.h>

#include "error.h"
#include "pod.h"
#include "uuid.h"

typedef enum PodLaunchMode {
        POD_LAUNCH_AUTO,        /* the unit when the host can, else detached */
        POD_LAUNCH_UNIT,
        POD_LAUNCH_DETACHED,
} PodLaunchMode;

/* timeout_usec 0: 90 s. A pod that exits before it is ready, or a unit that
 * fails, is an error that says so. */
int pod_launch(PodStore *ps, const char *uuid, PodLaunchMode mode, uint64_t timeout_usec, Error **err);

/* Launches the prepared pod *p, which it takes (and unlocks), and puts its
 * UUID in ret_uuid. A pod that does not become ready is removed: nothing of
 * it is kept. */
int pod_launch_prepared(PodStore *ps, Pod **p, PodLaunchMode mode, char ret_uuid[static UUID_STRING_MAX], Error **err);
