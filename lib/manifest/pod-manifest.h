/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The pod manifest: the appc PodManifest (schema in sdpod-manifest(5)).
 *
 * The JSON document is the source of truth: a PodManifest keeps the parsed
 * json_object and a typed view of it whose strings are borrowed from the
 * document. Fields this version does not know are therefore kept when a
 * manifest is read, changed and written again. Every change is made on a
 * copy of the document, validated as a whole, and only then replaces it: a
 * PodManifest is always valid, and a refused change leaves it as it was. */

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "basic/error.h"

#define POD_MANIFEST_KIND "PodManifest"
#define POD_MANIFEST_VERSION "0.8.11"

/* sdpod's own settings are annotations with this prefix. */
#define POD_ANNOTATION_PREFIX "sdpod/"
#define POD_ANNOTATION_NAME "sdpod/name"        /* the pod's --name */
#define POD_ANNOTATION_CREATED "sdpod/created"  /* when it was prepared (RFC 3339, UTC) */
/* "true": apps come and go while the pod runs (podapp); the mutable graph. */
#define POD_ANNOTATION_MUTABLE "sdpod/mutable"
/* "true": a failed app does not halt the pod (podapp sandbox --keep-on-app-failure). */
#define POD_ANNOTATION_KEEP_ON_APP_FAILURE "sdpod/keep-on-app-failure"
/* An app's: "true" (sdpod run -t): the app runs on the pod's console, its
 * controlling terminal, which systemd-nspawn relays to the terminal of
 * 'sdpod run'. One app of a pod at most. */
#define POD_ANNOTATION_TTY "sdpod/tty"
/* An app's: "false" lets it make namespaces (RestrictNamespaces=no). */
#define POD_ANNOTATION_RESTRICT_NAMESPACES "sdpod/restrict-namespaces"

/* An app's, written by podapp add --rootfs: the app's root is this host
 * directory (absolute), bound into the pod at the app's root, and not an
 * image's tree. Its image is then named by the directory's path, with the
 * id POD_IMAGE_ID_NONE, which no image has. */
#define POD_ANNOTATION_ROOTFS "sdpod/rootfs"
#define POD_IMAGE_ID_NONE "sha256:0000000000000000000000000000000000000000000000000000000000000000"
/* An app's (podapp add --stdin/--stdout/--stderr): a host file or FIFO,
 * bound into the pod, that is the app's standard input, output, error. */
#define POD_ANNOTATION_STDIN "sdpod/stdin"
#define POD_ANNOTATION_STDOUT "sdpod/stdout"
#define POD_ANNOTATION_STDERR "sdpod/stderr"
/* An app's (podapp add --bind): a JSON array of {"source": HOSTPATH,
 * "destination": PATH[, "readOnly": true]}, host files or directories bound
 * into the pod for this app alone. */
#define POD_ANNOTATION_BINDS "sdpod/binds"
/* The pod's task limit (--pod-pids-limit): tasks, processes and threads,
 * the whole pod may have at once, 1 to POD_PIDS_LIMIT_MAX (pod-cgroup.h
 * has the default). Not sdpod/pids-limit: that is an app's TasksMax=. */
#define POD_ANNOTATION_PIDS_LIMIT "sdpod/pod-pids-limit"
#define POD_PIDS_LIMIT_MAX 4194304
#define POD_PIDS_LIMIT_DEFAULT 4096
/* The pod's memory and CPU limits (--pod-memory, --pod-cpus): the whole
 * pod's, its systemd and every app together, held from the host side
 * (pod-cgroup.h) where the pod cannot raise them. As given: a byte
 * quantity ("512Mi", at least POD_MEMORY_MIN) and CPUs ("1.5", "250m", at
 * least POD_CPU_MILLIS_MIN), basic/quantity.h's forms. Not sdpod/memory:
 * an app's limits are isolators. */
#define POD_ANNOTATION_MEMORY "sdpod/pod-memory"
#define POD_ANNOTATION_CPUS "sdpod/pod-cpus"
/* podman's and docker's floor for a container. */
#define POD_MEMORY_MIN (UINT64_C(6) << 20)
/* The kernel's: a quota of 1 ms per period of 100 ms. */
#define POD_CPU_MILLIS_MIN 10
#define POD_CPU_MILLIS_MAX 1000000

/* The devices every pod may use, and no others unless the operator gives
 * them (sdpod-security(7)): what systemd-nspawn makes in a pod's /dev and
 * what a pod's systemd and apps use: null, zero, full, random, urandom,
 * tty, ptmx and the ptys (the console is one). Not /dev/net/tun, which
 * nspawn's own scope allows: a pod's network is the veth the host made.
 * As DeviceAllow= says them, and as a cgroup v1 devices.allow entry.
 * (units/pod@.service.in repeats the list.) NULL-terminated. */
typedef struct PodStandardDevice {
        const char *device_allow;
        const char *v1_rule;
} PodStandardDevice;
extern const PodStandardDevice pod_standard_devices[];

typedef struct PodNameValue {
        const char *name;
        const char *value;
} PodNameValue;

/* A "mounts" entry of an app: volume NAME appears at path inside the app. */
typedef struct PodMount {
        const char *volume;
        const char *path;
} PodMount;

typedef enum PodVolumeKind {
        POD_VOLUME_HOST,        /* a host directory or file, bound in */
        POD_VOLUME_EMPTY,       /* an empty directory the pod owns */
} PodVolumeKind;

typedef struct PodVolume {
        const char *name;
        PodVolumeKind kind;
        const char *source;     /* host: absolute path; empty: NULL */
        bool read_only;
        /* empty volumes only: the directory's mode, owner and group */
        uint32_t mode;          /* default 0755 */
        uint32_t uid, gid;      /* default 0 */
} PodVolume;

/* A "ports" entry of the pod: host address hostIP (NULL: every address),
 * port hostPort and protocol published to the pod's port podPort. appc has
 * name and hostPort; podPort, protocol and hostIP are sdpod's. */
typedef struct PodPort {
        const char *name;
        const char *host_ip;            /* a numeric IPv4 or IPv6 address, or NULL */
        uint16_t host_port;
        uint16_t pod_port;              /* default hostPort */
        const char *protocol;           /* "tcp" (the default) or "udp" */
} PodPort;

typedef struct PodIsolator {
        const char *name;
        struct json_object *value;      /* borrowed; interpreted by the generator */
} PodIsolator;

/* An entry of an app's "eventHandlers": a command run in the app's root
 * and confinement around its life. appc names "pre-start" (before the
 * app's program) and "post-stop" (after it has exited); sdpod adds
 * "pre-stop" (before the app is sent SIGTERM on a stop; its time counts
 * against the app's grace period). */
typedef struct PodEventHandler {
        const char *name;
        char **exec;                    /* owned copy, never empty */
} PodEventHandler;

#define POD_EVENT_PRE_START "pre-start"
#define POD_EVENT_PRE_STOP "pre-stop"
#define POD_EVENT_POST_STOP "post-stop"

typedef struct PodApp {
        const char *name;               /* an ACName: [a-z0-9]+(-[a-z0-9]+)* */
        const char *image_name;         /* may be NULL */
        const char *image_id;           /* "sha256:HEX" */
        char **exec;                    /* owned copy, never empty */
        const char *user, *group;       /* names or numbers, default "0" */
        const char *working_directory;  /* absolute, default "/" */
        PodNameValue *environment;      /* in order, names unique */
        size_t n_environment;
        PodMount *mounts;
        size_t n_mounts;
        PodIsolator *isolators;
        size_t n_isolators;
        PodEventHandler *event_handlers;        /* names unique */
        size_t n_event_handlers;
        PodNameValue *annotations;
        size_t n_annotations;
        bool read_only_rootfs;
        uint32_t *supplementary_gids;   /* appc's app.supplementaryGIDs */
        size_t n_supplementary_gids;
        /* POD_ANNOTATION_ROOTFS, or NULL: the app's root is its image's */
        const char *rootfs;
} PodApp;

typedef struct PodManifest {
        struct json_object *json;       /* the document */
        PodApp *apps;
        size_t n_apps;
        PodVolume *volumes;
        size_t n_volumes;
        PodIsolator *isolators;
        size_t n_isolators;
        PodNameValue *annotations;
        size_t n_annotations;
        PodPort *ports;
        size_t n_ports;
} PodManifest;

/* A new manifest with no apps (acKind, acVersion, empty apps). */
int pod_manifest_new(PodManifest **ret);
void pod_manifest_free(PodManifest *m);
static inline void pod_manifest_freep(PodManifest **m) { pod_manifest_free(*m); }
#define _cleanup_pod_manifest_ _cleanup_(pod_manifest_freep)

/* Parses and validates a manifest. "what" names it in errors (a file, "pod
 * manifest of UUID"); errors name the bad field by its path, for example
 * "pod manifest: apps[1].app.environment[0].name: must not contain '='".
 * Not JSON or invalid: -EBADMSG. */
int pod_manifest_parse(const char *data, size_t size, const char *what, PodManifest **ret, Error **err);
/* Reads and parses the file path below dirfd (at most 16 MiB). */
int pod_manifest_read_at(int dirfd, const char *path, const char *what, PodManifest **ret, Error **err);
/* Replaces path below dirfd atomically (write_file_atomic_at). */
int pod_manifest_write_at(int dirfd, const char *path, const PodManifest *m, Error **err);
/* The document as text, as written to disk (pretty-printed, ends in "\n"
 * when written). Borrowed from m; valid until m changes. */
const char *pod_manifest_to_text(const PodManifest *m);

const PodApp *pod_manifest_find_app(const PodManifest *m, const char *name);
/* The command of the app's event handler of that name (POD_EVENT_*), or NULL. */
char *const *pod_app_event_handler(const PodApp *app, const char *name);
/* An app-level annotation's value, or NULL. */
const char *pod_app_get_annotation(const PodApp *app, const char *name);
const PodVolume *pod_manifest_find_volume(const PodManifest *m, const char *name);
/* What is wrong with s as a path the manifest names ("must be an absolute
 * path"), or NULL: absolute, and without a ".." component. */
const char *absolute_path_problem(const char *s);

/* The app's host binds (POD_ANNOTATION_BINDS), checked as the manifest
 * was; free the list with pod_host_binds_free(). */
typedef struct PodHostBind {
        const char *source, *destination;
        bool read_only;
} PodHostBind;
int pod_app_host_binds(const PodApp *app, PodHostBind **ret, size_t *ret_n, Error **err);
void pod_host_binds_free(PodHostBind *l, size_t n);

/* A pod-level annotation's value, or NULL. */
const char *pod_manifest_get_annotation(const PodManifest *m, const char *name);

/* What prepare or "podapp add" asks for, before it is an app of a manifest. */
typedef struct PodAppSpec {
        const char *name;
        const char *image_name;         /* may be NULL */
        const char *image_id;
        char **exec;
        const char *user, *group;       /* NULL: "0" */
        const char *working_directory;  /* NULL: "/" */
        char **environment;             /* "NAME=VALUE"; a later NAME replaces an earlier one */
        PodMount *mounts;
        size_t n_mounts;
        PodEventHandler *event_handlers;
        size_t n_event_handlers;
        PodNameValue *annotations;
        size_t n_annotations;
        bool read_only_rootfs;
        struct json_object *isolators;  /* an array, copied; NULL: none */
        const uint32_t *supplementary_gids;
        size_t n_supplementary_gids;
} PodAppSpec;

/* Appends an app. Refused with -EEXIST when an app of that name exists, with
 * -EBADMSG (naming the field) when the result would be invalid, for example
 * a mount of a volume the pod does not have. */
int pod_manifest_add_app(PodManifest *m, const PodAppSpec *spec, Error **err);
/* Removes an app; -ENOENT when there is none of that name. */
int pod_manifest_remove_app(PodManifest *m, const char *name, Error **err);
/* Adds a volume; -EEXIST when one of that name exists. */
int pod_manifest_add_volume(PodManifest *m, const PodVolume *volume, Error **err);
/* Publishes a port; -EEXIST when the pod publishes that host address, port
 * and protocol already. */
int pod_manifest_add_port(PodManifest *m, const PodPort *port, Error **err);
/* Sets (adds or replaces) a pod-level annotation. */
int pod_manifest_set_annotation(PodManifest *m, const char *name, const char *value, Error **err);

/* appc's name rules: ACName for apps and volumes ([a-z0-9]+(-[a-z0-9]+)*, at
 * most 64 characters here), ACIdentifier for annotation and isolator names
 * ([a-z0-9]+([-._~/][a-z0-9]+)*). */
bool pod_app_name_is_valid(const char *name);
bool pod_identifier_is_valid(const char *name);
