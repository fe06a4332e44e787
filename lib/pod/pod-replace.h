/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* sdpod run --replace: a service that runs a fresh pod of one name on each
 * start (sdpod-pod-generator(8)) collects the pod of its previous start
 * first, so that restarts do not pile up exited pods. The previous pod is
 * kept, with its exit statuses and journal, until then. */

#include "basic/error.h"
#include "pod/pod.h"

/* Removes every pod named name (sdpod prepare --name) that is not running:
 * exited, prepared, prepare-failed or marked for gc, as pod_remove() does.
 * A pod of that name that runs, or is being prepared, is -EBUSY with its
 * UUID, and nothing is removed: two pods of one name would also be two
 * machines of one name. A pod that another process removes meanwhile is
 * not an error. ret_removed (may be NULL) gets the UUIDs removed. */
int pod_remove_named(PodStore *ps, const char *name, char ***ret_removed, Error **err);
