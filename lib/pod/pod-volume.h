/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* Volumes that keep data (sdpod(1) VOLUMES, sdpod-security(7)).
 *
 * Named volumes are sdpod's: DATA/volumes/NAME/ holds the record
 * volume.json ({"name":"NAME","created":"TIMESTAMP"[,"base":BASE]}: BASE,
 * the user id range that owns the data now) and data/, the directory a
 * pod sees. Created at the first prepare that names it. In the manifest a
 * named volume is a host volume of source DATA/volumes/NAME/data; the
 * annotation POD_ANNOTATION_VOLUMES says which volumes are named, and
 * which host ones are chown=true or idmap=true:
 *
 *   {"VOLUME":{"named":"NAME","uid":U,"gid":G}, "V2":{"chown":true,"uid":U,"gid":G},
 *    "V3":{"idmap":true}}
 *
 * U and G are the ids in the pod of the first app that mounts the volume,
 * resolved at prepare: a chown=true directory and everything in it is
 * given to them (BASE+U, BASE+G on the host) at each start, as podman's :U;
 * a named volume's directory, new, too. A named volume whose data a pod of
 * another range owns is re-owned at start: each entry the old range owns
 * keeps its id in the pod (BASE_OLD+I becomes BASE+I); what another range
 * or the host owns there is left alone. The walks never follow a symlink
 * (lchown of the link itself), never leave the volume's mount, and go at
 * most POD_VOLUME_DEPTH_MAX deep.
 *
 * While a pod runs, it holds the volume's lock (flock of DATA/volumes/NAME)
 * shared; a re-own takes it exclusively, so a volume is never re-owned
 * under a running pod of another range: that start is refused. */

#include <stdbool.h>
#include <stdint.h>

#include "basic/error.h"
#include "manifest/pod-manifest.h"
#include "pod/pod-userns.h"

#define POD_ANNOTATION_VOLUMES "sdpod/volumes"
#define POD_NAMED_VOLUMES_DIR "volumes"
#define POD_VOLUME_RECORD "volume.json"
#define POD_VOLUME_DATA "data"
#define POD_VOLUME_RECORD_MAX 4096
#define POD_VOLUME_NAME_MAX 64
#define POD_VOLUME_DEPTH_MAX 256

/* A named volume's name: 1 to 64 of [A-Za-z0-9_.-], starting with a
 * letter or digit (so never "." or "..", never a path). */
bool volume_name_is_valid(const char *name);

typedef struct VolumeRecord {
        char name[POD_VOLUME_NAME_MAX + 1];
        char created[40];
        bool has_base;
        uint32_t base;          /* the owning range: 0 for a pod of --private-users=no */
} VolumeRecord;

/* Strict: JSON exactly (json_parse()), an object of name, created and
 * optionally base, nothing else; what names the file in errors. */
int volume_record_parse(const char *text, size_t size, const char *what, VolumeRecord *ret, Error **err);
/* The record's text, as volume_record_parse() reads it back. */
int volume_record_format(const VolumeRecord *v, char **ret);

typedef struct PodVolumeOptions {
        char named[POD_VOLUME_NAME_MAX + 1];    /* "" for a host volume */
        bool chown, idmap;
        uint32_t uid, gid;
} PodVolumeOptions;

/* The options of volume in the annotation's text (NULL: none), strictly. */
int pod_volume_options_parse(const char *annotation, const char *volume, PodVolumeOptions *ret, Error **err);

/* DATA/volumes/name made if missing (its record too); *ret_source gets
 * its data directory's path. 1 when made, 0 when it existed. */
int named_volume_ensure(const char *data, const char *name, char **ret_source, Error **err);

/* At the start of a pod whose range is u: the ownership of volume v (of
 * options o) set as above. *ret_hold gets an fd to keep open while the pod
 * runs (a named volume's lock), or -1; *ret_source the directory to bind,
 * opened without following links (a named volume's data/), or -1. */
int pod_volume_start(const char *data, const PodVolume *v, const PodVolumeOptions *o, const PodUserns *u,
                     int *ret_hold, int *ret_source, Error **err);

/* Binds source at target, idmapped by userns_fd (the pod's: the owners on
 * disk seen in the pod as they are), nosuid and nodev always. */
int mount_bind_idmapped(const char *source, const char *target, int userns_fd, bool read_only, Error **err);

/* The named volumes of data, sorted. */
int volume_list(const char *data, char ***ret, Error **err);
/* The record of named volume name; -ENOENT when there is none. */
int volume_inspect(const char *data, const char *name, VolumeRecord *ret, Error **err);

typedef struct PodStore PodStore;
/* The pods ("UUID STATE") that name volume name and are not garbage:
 * preparing, prepared, running and exited ones (their manifests name it
 * until they are removed); pods being deleted or marked for gc do not. */
int volume_users(PodStore *ps, const char *name, char ***ret, Error **err);
/* Removes named volume name: -EBUSY naming the pod when one uses it. */
int volume_remove(PodStore *ps, const char *name, Error **err);
/* Removes every named volume no pod uses; ret (may be NULL) gets their names. */
int volume_prune(PodStore *ps, char ***ret, Error **err);
