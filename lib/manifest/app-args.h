/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The command line of the apps of a pod, in rkt's grammar:
 *
 *   [POD OPTIONS] IMAGE [APP OPTIONS] [-- ARGS...] [--- IMAGE [APP OPTIONS] [-- ARGS...]]...
 *
 * "--" ends an app's options: what follows are its arguments, up to "---",
 * which starts the next app. App options given before the first IMAGE
 * belong to the first app ("podapp add UUID --app=NAME IMAGE" reads well).
 * Every option is "--opt=VALUE" or "--opt VALUE". Shared by sdpod prepare,
 * sdpod run and podapp add, so the grammar lives here once. */

#include <stdbool.h>
#include <stddef.h>

#include "basic/error.h"
#include "manifest/pod-manifest.h"
#include "manifest/pod-net.h"

typedef struct VolumeArg {
        char *name;
        PodVolumeKind kind;     /* a named volume is a host one: sdpod's directory */
        char *source;           /* host: the path; named: the named volume's name */
        bool read_only;
        bool named;             /* kind=named: kept by sdpod (pod/pod-volume.h) */
        bool chown;             /* chown=true: given to the pod's range at each start */
        bool idmap;             /* idmap=true: an idmapped mount, owners as they are */
} VolumeArg;

typedef struct MountArg {
        char *volume;
        char *target;
} MountArg;

typedef struct AppHostBind {
        char *source;           /* absolute host path */
        char *destination;      /* absolute path in the app */
        bool read_only;
} AppHostBind;

typedef struct AppArgs {
        char *image;            /* as given: a name, an id or an id prefix */
        char *name;             /* --app */
        char *exec;             /* --exec: replaces the image's entrypoint */
        char **args;            /* after "--": replace the image's arguments */
        bool have_args;         /* "--" was given (possibly with no arguments) */
        char **environment;     /* --set-env=NAME=VALUE, in order */
        char *user, *group, *working_dir;
        MountArg *mounts;
        size_t n_mounts;
        /* --stop-timeout, --restart, --watchdog, --health-cmd...: the
         * annotations of its lifecycle (app-lifecycle.h), checked */
        PodNameValue *lifecycle;
        size_t n_lifecycle;
        /* --pre-start, --pre-stop, --post-stop: its event handlers */
        PodEventHandler *hooks;
        size_t n_hooks;
        /* Its confinement and resources, as given: unit/app-options.h
         * checks them and makes them isolators and mounts. */
        char *memory, *cpus, *pids_limit;       /* --memory, --cpus, --pids-limit */
        char **cap_add, **cap_drop;             /* --cap-add, --cap-drop: one name each */
        bool read_only;                         /* --read-only */
        char **tmpfs;                           /* --tmpfs=PATH[:OPTIONS] */
        char **devices;                         /* --device=PATH[:PERMISSIONS] */
        bool tty;               /* sdpod run -t: on the pod's console (POD_ANNOTATION_TTY) */
        /* --rootfs=DIR (podapp add only): the app's root is this host
         * directory, bound into the pod as it is, instead of an image's
         * tree (then image is NULL). The directory is trusted (the operator
         * or containerd made it); what is in it is not. */
        char *rootfs;
        /* --stdin=PATH, --stdout=PATH, --stderr=PATH (podapp add only):
         * host files or FIFOs bound into the pod that become the app's
         * standard input, output and error instead of the journal. */
        char *stdin_path, *stdout_path, *stderr_path;
        /* --bind=SOURCE:DESTINATION[:ro] (podapp add only): a host file or
         * directory bound into the app at DESTINATION (a running pod gets
         * no new volume: these are the app's own). */
        AppHostBind *host_binds;
        size_t n_host_binds;
        /* --supplementary-groups=GID[,GID...]: numbers, in the app's ids */
        char **supplementary_groups;
        /* --rlimit=NAME=SOFT[:HARD] (NAME as in setrlimit(2) without
         * RLIMIT_, lowercase: nofile, nproc, core...; "infinity" allowed) */
        char **rlimits;
        /* --no-new-privileges=no lets the app gain privileges through
         * set-user-id programs (the default is yes) */
        bool allow_new_privileges;
        /* The containerd shim's (from an OCI spec; no command line option):
         * seccomp_profile, an OCI seccomp profile as JSON text, replaces
         * the default system call filter (seccomp/seccomp-oci.h);
         * seccomp_unconfined: no filter at all (the spec has none);
         * masked_paths and readonly_paths: the spec's maskedPaths and
         * readonlyPaths, beyond sdpod's own masks. */
        char *seccomp_profile;
        bool seccomp_unconfined;
        char **masked_paths, **readonly_paths;
} AppArgs;

typedef struct PodArgs {
        char *name;             /* --name */
        char *stage1;           /* --stage1: "nspawn", "fly" or an image's path (pod/stage1.h) */
        VolumeArg *volumes;     /* --volume */
        size_t n_volumes;
        AppArgs *apps;
        size_t n_apps;
        bool mutable_pod;               /* podapp sandbox: annotation sdpod/mutable */
        bool keep_on_app_failure;       /* podapp sandbox --keep-on-app-failure */
        bool no_private_users;          /* --private-users=no: the pod's root is the host's */
        /* --pod-stop-timeout (every app's default) and --pod-watchdog: the
         * pod's lifecycle annotations (app-lifecycle.h), checked */
        PodNameValue *lifecycle;
        size_t n_lifecycle;
        PodNetArgs net;                 /* --net, --port, --dns... (pod-net.h) */
        /* --pull=missing|always|never and the options of the pulls it makes
         * (--tls-verify, --cert-dir, --authfile, --creds,
         * --signature-policy, --registries-d), for the images that name a
         * registry: as given, checked by image/image-pull.h. */
        char *pull;
        PodNameValue *pull_options;
        size_t n_pull_options;
} PodArgs;

/* Parses argv (the operands and options after the verb). With
 * pod_options false, --name, --volume and the network options are refused (podapp add). At
 * least one app is required. Errors are -EINVAL with a message that names
 * the option or argument. */
int pod_args_parse(int argc, char *const *argv, bool pod_options, PodArgs *ret, Error **err);
/* The same, where the command has options of its own among the pod's
 * (sdpod run's -d, --rm, -t): extra is offered each option that is none of
 * the pod's or an app's, with the argument after it (NULL at the end), and
 * returns how many arguments it took (1, or 2 with its value), 0 when it is
 * not the command's either, or a negative errno with err set. The
 * command's options come before the first IMAGE. Short options: -p (--port),
 * -e (--set-env), -u (--user), -w (--working-dir), with the value in the
 * same argument or the next. */
typedef int (*PodArgsExtraOption)(const char *arg, const char *next, void *userdata, Error **err);
int pod_args_parse_with(int argc, char *const *argv, bool pod_options, PodArgsExtraOption extra, void *userdata,
                        PodArgs *ret, Error **err);
void pod_args_done(PodArgs *a);
/* Frees what an AppArgs holds (pod_args_done() does it for each app). */
void app_args_done(AppArgs *a);

/* The steps of pod_args_parse(), for a caller that has the options one by
 * one rather than as a command line (sdpod-pod-generator's definitions):
 * pod_args_add_app() starts the next app (the first exists once any option
 * was added); pod_args_add_option() checks and records option (its name
 * without "--") for the pod, or for the last app, exactly as the command
 * line's --OPTION=VALUE. Errors name the option (-EINVAL). */
int pod_args_add_app(PodArgs *pod, Error **err);
int pod_args_add_option(PodArgs *pod, const char *option, const char *value, Error **err);

/* A pod name (--name): 1 to 64 of [A-Za-z0-9.-], not starting with '-'
 * or '.'; it becomes the pod's machine name. */
bool pod_name_is_valid(const char *name);

/* The value of --private-users: "yes" (the default) or "no". */
int private_users_arg_parse(const char *s, PodArgs *pod, Error **err);

/* --pod-stop-timeout, --pod-watchdog (durations above 0), --pod-pids-limit,
 * --pod-memory and --pod-cpus (option without "--"); each once. */
int pod_lifecycle_arg_parse(const char *option, const char *s, PodArgs *pod, Error **err);

/* An environment file (--env-file): NAME=VALUE lines, blank lines and
 * lines starting with '#' (leading blanks ignored); a trailing carriage
 * return is dropped; the value is the rest of the line, taken literally
 * (no quotes, no expansion). The variables are appended to *env, which a
 * bad file leaves as it was: -EINVAL "FILE:LINE: reason"; at most
 * ENV_FILE_MAX bytes. */
#define ENV_FILE_MAX (1024 * 1024)
int env_file_parse(const char *path, char ***env, Error **err);

/* --rlimit=NAME=SOFT[:HARD]: -EINVAL naming the option when it is not one. */
int rlimit_arg_check(const char *s, Error **err);

/* "NAME,kind=host,source=PATH[,readOnly=true]" or "NAME,kind=empty". */
int volume_arg_parse(const char *s, VolumeArg *ret, Error **err);
/* "volume=NAME,target=PATH" */
int mount_arg_parse(const char *s, MountArg *ret, Error **err);
/* -v SRC:DST[:OPTIONS] (podman's): a volume (SRC an absolute path: a host
 * one; else a named volume's name) of pod, and its mount at DST in app.
 * OPTIONS, comma-separated: ro, rw, U (chown=true), idmap. */
int short_volume_arg_parse(PodArgs *pod, AppArgs *app, const char *s, Error **err);
