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

/* The registration of a machine named name that systemd-machined still
 * keeps for the caller's own service, whose pod does not run any more: a
 * pod whose systemd-nspawn was killed never unregistered, and machined
 * forgets a machine only once its unit is inactive, which a unit that
 * Restart= restarts never is; the next pod of the service could not
 * register. The caller (sdpod run --replace, after pod_remove_named())
 * has no pod of that name running, so a machine of that name of its own
 * unit is stale: it is unregistered. A machine of another unit, and a
 * caller outside a unit or without machined, are left alone (0).
 * Returns 1 when it unregistered one. */
int pod_machine_release_stale(const char *name, Error **err);
