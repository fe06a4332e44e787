/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* How users name pods: by UUID, by a unique prefix of one, or by the name
 * given at prepare (--name), which is unique among the pods that are live.
 *
 * A reference is resolved in this order, and the first that matches wins:
 *   1. a whole UUID;
 *   2. a pod name: the live pod of that name (preparing, prepared or
 *      running: there is at most one), else the newest pod of that name
 *      (exited, or failed to prepare), so that `sdpod status web` shows the
 *      last run of web;
 *   3. a UUID prefix that is unique.
 * A name that is also a UUID prefix ("cafe") is a name first: names are
 * what people type, and a prefix can always be made longer.
 *
 * Names come from the pod's manifest, which only the host writes (the pod
 * sees its directory read-only), so a pod cannot take another's name. */

#include <stdint.h>

#include "basic/error.h"
#include "pod/pod.h"

/* A pod found by its name. */
typedef struct PodNamed {
        char uuid[UUID_STRING_MAX];
        PodState state;
        uint64_t created_usec;
} PodNamed;

/* Whether a pod in state s holds its name: it is being prepared, is
 * prepared or runs. */
bool pod_state_holds_name(PodState s);

/* Every pod named name, sorted by UUID (*ret NULL when none). */
int pod_find_named(PodStore *s, const char *name, PodNamed **ret, size_t *ret_n, Error **err);

/* Resolves ref as above: -ENOENT when nothing matches, -ENOTUNIQ for an
 * ambiguous prefix, -EINVAL when ref is neither a name nor a UUID prefix. */
int pod_resolve(PodStore *s, const char *ref, Pod **ret, Error **err);

/* Before a pod named name is created: takes the store's name lock
 * (DATA/pods/names.lock) and checks that no live pod has the name
 * (-EEXIST, naming that pod). The caller keeps *ret_lock open until the new
 * pod's manifest, which carries the name, is written and pod_name_record()
 * has noted it, so that two prepares of one name cannot both pass. */
int pod_name_claim(PodStore *s, const char *name, int *ret_lock, Error **err);
/* Notes in the name index (DATA/pods/names) that name is the pod uuid's
 * now; under the lock of pod_name_claim(). */
int pod_name_record(PodStore *s, const char *name, const char *uuid, Error **err);

/* Makes the name index anew from the manifests (sdpod gc, after it removed
 * pods), so that it does not keep every name ever given. */
int pod_names_index_rebuild(PodStore *s, Error **err);

/* After pod uuid, named name, was removed (pod_remove() calls it): its
 * entry in the name index goes, or names the pod the name resolves to now
 * (another pod of that name), so that the index does not keep an entry
 * for every sandbox a CRI ever made. An entry that names another pod is
 * left alone. */
int pod_name_forget(PodStore *s, const char *name, const char *uuid, Error **err);

/* sdpod gc: makes the name index anew when an entry names a pod that is
 * gone (removed by an sdpod that did not prune, or by hand); otherwise
 * leaves it as it is. */
int pod_names_index_prune(PodStore *s, Error **err);

/* Builds the name index of a store that has none (one made by an earlier
 * sdpod): reads every pod's manifest once. Without it, names are resolved
 * by reading them on every lookup. */
int pod_names_index_ensure(PodStore *s, Error **err);
