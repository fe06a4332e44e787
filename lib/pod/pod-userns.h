/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* A pod's private user namespace (sdpod-security(7)). Root in a pod is
 * then not root on the host: the pod's ids 0..65535 are the host's
 * BASE..BASE+65535, a range of its own. The shared image trees are never
 * chowned: each pod sees them through an idmapped mount (host id N shown
 * as BASE+N) as the lower layer of its overlays, whose upper layers are
 * new and owned by BASE. systemd-nspawn gets the range as it is
 * (--private-users=BASE:65536 --private-users-ownership=off).
 *
 * The range is chosen at prepare and held until the pod is deleted, so
 * that no two pods of a data directory ever share one (files a pod left in
 * a shared volume stay out of reach of later pods): DATA/private-users/BASE
 * is the claim, created exclusively, holding the pod's UUID. The pod's
 * manifest records it (annotation sdpod/private-users: "BASE:65536", or
 * "no" for a pod made with --private-users=no; absent, in a manifest of an
 * older sdpod, is "no").
 *
 * Ranges are the machine's, not a data directory's: a claim is also made in
 * POD_USERNS_RUN_DIR/BASE (holding the UUID and the data directory), so
 * that pods of two data directories never share a range either, and a
 * range whose nspawn lock (NSPAWN_UID_LOCK_DIR/BASE, which nspawn's own -U
 * pick holds locked while its container runs) is held is skipped. While a
 * pod runs, its run entrypoint holds that same lock (pod_userns_hold()),
 * so that nspawn's picks skip its range, and re-makes the machine claim,
 * which /run loses at a reboot. */

#include <stdbool.h>
#include <sys/types.h>

#include "basic/error.h"
#include "manifest/pod-manifest.h"

#define POD_ANNOTATION_PRIVATE_USERS "sdpod/private-users"
/* "name:NAME" when the range is the pod name's (stable: kept for every pod
 * of that name, see below); absent when it is the pod's own. */
#define POD_ANNOTATION_ID_RANGE "sdpod/id-range"
#define POD_USERNS_SIZE 65536U
/* systemd's range for containers (UIDS-GIDS.md), which nspawn's own "pick"
 * uses too: machined then names the ids of running pods. */
#define POD_USERNS_BASE_MIN 0x00080000U
#define POD_USERNS_BASE_MAX 0x6FFF0000U
#define POD_USERNS_DIR "private-users"
#define POD_USERNS_RUN_DIR "/run/sdpod/private-users"
#define NSPAWN_UID_LOCK_DIR "/run/systemd/nspawn-uid"
/* DATA/id-ranges/NAME: the stable range of pod name NAME (a record, JSON:
 * {"name":"NAME","base":BASE}). The claims of such a range hold the owner
 * "name:NAME" instead of a pod's UUID: deleting a pod does not give the
 * range back, and every pod of the name (each start of a definition's
 * service is a new pod of its name) gets it again, so that what its pods
 * wrote in volumes stays theirs. Two pods of one range never run at once:
 * the run entrypoint's nspawn lock of the range is exclusive. The range is
 * given back by sdpod gc once the record is removed. */
#define POD_ID_RANGES_DIR "id-ranges"
#define POD_ID_RANGE_RECORD_MAX 4096
#define POD_USERNS_OWNER_MAX 80 /* "name:" and a pod name, or a UUID */

typedef struct PodUserns {
        bool enabled;
        uid_t base;             /* the host id of the pod's root; 0 when not enabled */
        /* whose claim it is: "name:NAME" for a stable range, else "" (the pod's) */
        char owner[POD_USERNS_OWNER_MAX];
} PodUserns;

typedef struct PodIdRangeRecord {
        char name[65];
        uint32_t base;
} PodIdRangeRecord;

/* Parses a DATA/id-ranges/ record strictly (the name a valid pod name, the
 * base one of the ranges); what names the file in errors. */
int pod_id_range_record_parse(const char *text, size_t size, const char *what, PodIdRangeRecord *ret, Error **err);

/* The pod's setting, from its manifest; -EBADMSG for a malformed one. */
int pod_userns_from_manifest(const PodManifest *m, PodUserns *ret, Error **err);

/* Claims a free range of the data directory data for pod uuid (starting
 * from a slot its UUID gives, so pods rarely contend) and records it in
 * m. The pod must exist already. With name (a pod's --name), the range is
 * the name's: the one its record names, claimed once for good. -EBUSY
 * when that range is claimed by another owner (named in the message). */
int pod_userns_claim(const char *data, const char *uuid, const char *name, PodManifest *m, Error **err);
/* Gives back the range of pod uuid (when the claim is its own). */
void pod_userns_release(const char *data, const char *uuid, const PodUserns *u);
/* Gives back the claims whose pods no longer exist (an interrupted
 * delete), as pod_exists tells. Returns how many. */
int pod_userns_release_stale(const char *data, bool (*pod_exists)(const char *uuid, void *userdata), void *userdata,
                             Error **err);

/* For the run entrypoint of pod uuid: the machine claim of its range made
 * again if /run lost it (-EBUSY when another pod has it), and nspawn's lock
 * of the range taken (-EBUSY when a container of nspawn's own holds it).
 * Returns the lock's fd, to keep open while the pod runs; -1 without a
 * user namespace. */
int pod_userns_hold(const char *data, const char *uuid, const PodUserns *u, Error **err);

/* The owner on the host of what is root's in the pod: base, or 0. */
static inline uid_t pod_userns_root(const PodUserns *u) {
        return u->enabled ? u->base : 0;
}

/* An fd of a new user namespace that maps 0..65535 to base..: what an
 * idmapped mount needs (mount_setattr(MOUNT_ATTR_IDMAP)). */
int userns_fd_new(uid_t base, Error **err);
