/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* An OCI runtime bundle's config.json (runtime-spec 1.0/1.1), as far as the
 * shim uses it: what a task runs (process), where (root, mounts), and the
 * Linux settings that say which pod it belongs to (namespaces) and what it
 * may use (resources). containerd writes the file, but what it says comes
 * from whoever asked containerd (a CRI client, a Kubernetes user's pod
 * spec): it is read bounded (OCI_SPEC_MAX), every field type-checked, and
 * every field this parser does not keep is named in "ignored" so the mapping
 * (oci-spec-map.h) can refuse a spec it cannot honour instead of dropping a
 * request silently. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "basic/error.h"

#define OCI_SPEC_MAX (4U << 20)
#define OCI_SPEC_FILE "config.json"

/* The CRI plugin's annotations (containerd 1.6, pkg/cri/annotations). */
#define OCI_ANNOTATION_CONTAINER_TYPE "io.kubernetes.cri.container-type"     /* "sandbox" or "container" */
#define OCI_ANNOTATION_SANDBOX_ID "io.kubernetes.cri.sandbox-id"
#define OCI_ANNOTATION_CONTAINER_NAME "io.kubernetes.cri.container-name"
#define OCI_ANNOTATION_SANDBOX_NAME "io.kubernetes.cri.sandbox-name"
#define OCI_ANNOTATION_SANDBOX_NAMESPACE "io.kubernetes.cri.sandbox-namespace"

typedef struct OciRlimit {
        char *type;             /* "RLIMIT_NOFILE" */
        uint64_t soft, hard;    /* UINT64_MAX: unlimited */
} OciRlimit;

typedef struct OciMount {
        char *destination;      /* absolute (checked) */
        char *type;             /* may be NULL (a bind) */
        char *source;           /* may be NULL */
        char **options;         /* may be NULL */
} OciMount;

typedef struct OciNamespace {
        char *type;             /* "network", "pid", "ipc", "uts", "mount", "user", "cgroup", "time" */
        char *path;             /* NULL: a new one */
} OciNamespace;

typedef struct OciKeyValue {
        char *key, *value;
} OciKeyValue;

typedef struct OciProcess {
        bool terminal;
        char **args;            /* never empty when present */
        char **env;             /* NAME=VALUE */
        char *cwd;              /* absolute */
        uint32_t uid, gid;
        uint32_t *additional_gids;
        size_t n_additional_gids;
        char *username;         /* Windows only; noted when set */
        /* The capability sets ("CAP_NET_ADMIN" ...), each NULL when absent;
         * have_capabilities: the object was there at all. */
        bool have_capabilities;
        char **cap_bounding, **cap_effective, **cap_inheritable, **cap_permitted, **cap_ambient;
        OciRlimit *rlimits;
        size_t n_rlimits;
        bool no_new_privileges;
        bool have_oom_score_adj;
        int oom_score_adj;
        char *apparmor_profile, *selinux_label;  /* kept to be named, not applied */
} OciProcess;

typedef struct OciResources {
        int64_t memory_limit;           /* bytes; 0 or less: none */
        int64_t cpu_quota;              /* microseconds per period; 0 or less: none */
        uint64_t cpu_period;            /* microseconds; 0: the kernel's default 100000 */
        uint64_t cpu_shares;            /* 0: none */
        int64_t pids_limit;             /* 0 or less: none */
} OciResources;

typedef struct OciSpec {
        char *oci_version;
        bool have_process;
        OciProcess process;
        char *root_path;                /* relative to the bundle, or absolute; NULL: no root */
        bool root_readonly;
        char *hostname;
        OciMount *mounts;
        size_t n_mounts;
        OciKeyValue *annotations;
        size_t n_annotations;
        OciNamespace *namespaces;
        size_t n_namespaces;
        OciResources resources;
        char **masked_paths, **readonly_paths;  /* beyond sdpod's own masks */
        char *cgroups_path;
        bool have_seccomp;
        char *seccomp;                  /* linux.seccomp as compact JSON text (seccomp/seccomp-oci.h) */
        OciKeyValue *sysctl;
        size_t n_sysctl;
        bool have_uid_mappings;         /* linux.uidMappings/gidMappings present and not empty */
        char **device_nodes;            /* linux.devices[].path */
        /* linux.resources.devices rules that allow: "c 1:3 rwm" ("*" for a
         * wildcard type, major or minor); deny rules are not kept (every
         * app is denied what it is not given) */
        char **device_allow;
        /* Fields present that are parsed nowhere ("hooks", "linux.intelRdt",
         * "process.consoleSize" ...), by their JSON path. */
        char **ignored;
} OciSpec;

/* Parses a config.json held in memory. -EBADMSG naming the field for a
 * document that is not a valid spec (wrong types, a relative mount
 * destination, an args array that is empty, more than OCI_SPEC_MAX ...). */
int oci_spec_parse(const char *data, size_t size, OciSpec **ret, Error **err);
/* Parses a LinuxResources object alone (what UpdateTaskRequest carries)
 * into a spec holding only resources, device_allow and ignored. */
int oci_resources_parse(const char *data, size_t size, OciSpec **ret, Error **err);
/* Reads OCI_SPEC_FILE beneath bundle_fd (no symlinks, regular, bounded). */
int oci_spec_read_at(int bundle_fd, OciSpec **ret, Error **err);
OciSpec *oci_spec_free(OciSpec *s);
static inline void oci_spec_freep(OciSpec **s) { oci_spec_free(*s); }
#define _cleanup_oci_spec_ _cleanup_(oci_spec_freep)

/* An annotation's value, or NULL. */
const char *oci_spec_annotation(const OciSpec *s, const char *key);
/* The namespace of that type, or NULL when the spec does not list it. */
const OciNamespace *oci_spec_namespace(const OciSpec *s, const char *type);
