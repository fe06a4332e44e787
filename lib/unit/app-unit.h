/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* One app of a pod as the pod's systemd runs it: the app of the manifest
 * checked against its root file system (program, user, group, working
 * directory, environment, mounts, isolators) and rendered as the text of
 * app@NAME.service and reaper@NAME.service. sdpod-generator(8) documents
 * every directive; stage0 runs the same checks (app_check_in_root) so that
 * a bad app is refused before a pod exists. */

#include <stdbool.h>
#include <sys/types.h>

#include "basic/error.h"
#include "manifest/app-lifecycle.h"
#include "manifest/pod-manifest.h"
#include "unit/app-isolators.h"

/* Paths inside the pod (the stage1 root), fixed by sdpod-stage1(7). */
#define POD_MANIFEST_PATH "/sdpod/pod"
#define POD_VOLUMES_DIR "/sdpod/volumes"
#define POD_APPS_DIR "/opt/stage2"    /* an app's root: POD_APPS_DIR/NAME/rootfs */
#define POD_HELPER "/usr/lib/sdpod/pod-helper"
/* helpers/app-stdio: gives an app pipes for its stdout and stderr in place
 * of the journal's sockets, which no path opens (/dev/stdout: ENXIO). The
 * stage1's copy, bound read-only into each app's root (under its /run
 * tmpfs, not in its image) at APP_STDIO_IN_APP. */
#define APP_STDIO "/usr/lib/sdpod/app-stdio"
#define APP_STDIO_IN_APP "/run/sdpod/app-stdio"
/* Every command run in an app's root (its main process, hooks and health
 * check, and the commands of sdpod enter and podapp exec) starts as
 * "APP_DOMAIN_IN_APP PROGRAM ARGV0 ARG...": helpers/app-domain, the
 * stage1's APP_DOMAIN bound read-only into the app's /dev, gives it a
 * Landlock domain of its own, so that no app traces another app's
 * processes or the pod's PID 1, whatever its capabilities
 * (sdpod-security(7)). /dev: a mount every app has (MountAPIVFS=), and the
 * pod's own tmpfs, so the mount point is made in no app's root. */
#define APP_DOMAIN "/usr/lib/sdpod/app-domain"
#define APP_DOMAIN_IN_APP "/dev/.sdpod-app-domain"
/* What it calls: the filter of an app with an allow list must let them. */
#define APP_DOMAIN_SYSCALLS "landlock_create_ruleset landlock_add_rule landlock_restrict_self"
/* The units the generator writes for app NAME (printf formats of NAME). */
#define APP_UNIT_FORMAT "app@%s.service"
#define REAPER_UNIT_FORMAT "reaper@%s.service"
/* The stage1's unit that waits for the pod's network: every app is after it. */
#define POD_NETWORK_UNIT "sdpod-network.service"

/* A command run in app NAME by sdpod enter or podapp exec is a transient
 * instance of one of these templates (printf formats of NAME and the
 * instance), which exist only as drop-ins the generator writes: the app's
 * root, identity and confinement, so the command runs exactly as confined
 * as the app (sdpod-security(7)). Dashes in NAME are safe: systemd looks
 * for prefix drop-ins of "sdpod-exec-my-app@" in "sdpod-exec-my-.service.d"
 * and "sdpod-exec-.service.d", never in another app's "sdpod-exec-my@". */
typedef enum AppExecMode {
        APP_EXEC_AS_APP,        /* its user, group, working directory */
        APP_EXEC_AS_ROOT,       /* root (of the pod) in "/" */
} AppExecMode;
#define APP_EXEC_UNIT_FORMAT "sdpod-exec-%s@%s.service"
#define APP_EXEC_DROPIN_FORMAT "sdpod-exec-%s@.service.d/sdpod-app.conf"
#define APP_ENTER_UNIT_FORMAT "sdpod-enter-%s@%s.service"
#define APP_ENTER_DROPIN_FORMAT "sdpod-enter-%s@.service.d/sdpod-app.conf"
/* Each app's directory in the pod directory (upper/, work/ of its root),
 * seen in the pod as /sdpod/apps/NAME. */
#define POD_APP_DIR "apps"
/* apps/NAME/stop-requested: podapp stop asked the app to stop. While it
 * exists, the app ending with a failure (its own status on SIGTERM, or
 * SIGKILL at the end of the grace period) neither halts the pod nor
 * becomes its exit code. podapp start removes it. */
#define POD_APP_STOP_REQUESTED "stop-requested"

/* An app that is restarted (app-lifecycle.h) waits before each restart:
 * 100 ms, then twice as long each time, up to 10 s (systemd 252 has no
 * RestartSteps=): the stage1's app-restarting@NAME.service, which each
 * start of the app pulls in, runs pod-helper restarting. */
#define APP_RESTARTING_UNIT_FORMAT "app-restarting@%s.service"
/* The SyslogIdentifier= of an app's health check: NAME.health. */
#define APP_HEALTH_IDENTIFIER_SUFFIX ".health"
/* The file watchdog of an app (--watchdog-file): the stage1's template,
 * pod-helper watchdog, bound to the app. */
#define APP_WATCHDOG_UNIT_FORMAT "app-watchdog@%s.service"
/* The health check of an app, which the generator writes (the app's
 * command, root and confinement), the timer that runs it, and the stage1's
 * templates that record each result and act on it (pod-helper health). */
#define APP_HEALTH_UNIT_FORMAT "app-health@%s.service"
#define APP_HEALTH_TIMER_FORMAT "app-health@%s.timer"
#define APP_HEALTHY_UNIT_FORMAT "app-healthy@%s.service"
#define APP_UNHEALTHY_UNIT_FORMAT "app-unhealthy@%s.service"
/* Before each start of an app with --wait-healthy=NAME: the generator's
 * oneshot that runs pod-helper wait-healthy NAME (app-lifecycle.h). */
#define APP_WAIT_HEALTHY_UNIT_FORMAT "app-wait-healthy@%s.service"
#define APP_RESTART_SEC_MIN_MSEC 100ULL
#define APP_RESTART_BACKOFF_MAX_MSEC 10000ULL

/* Exit codes of an app that cannot be started, as a shell reports them. */
#define APP_EXIT_CANNOT_RUN 125         /* anything else wrong with the app */
#define APP_EXIT_NOT_EXECUTABLE 126     /* its program is not executable */
#define APP_EXIT_NOT_FOUND 127          /* its program is not there */

/* How the pod's units depend on each other (seed 001): flags, from the
 * manifest's annotations. POD_GRAPH_IMMUTABLE alone is the default. What an
 * app's failure does is part of the graph: its OnFailure= edge. */
typedef enum PodGraph {
        POD_GRAPH_IMMUTABLE = 0,        /* the pod runs its apps and ends with the last */
        POD_GRAPH_MUTABLE = 1 << 0,     /* apps come and go; the pod lives on (POD_ANNOTATION_MUTABLE) */
        /* A failed app does not halt the pod: no OnFailure= at all
         * (POD_ANNOTATION_KEEP_ON_APP_FAILURE). */
        POD_GRAPH_KEEP_ON_APP_FAILURE = 1 << 1,
} PodGraph;

/* The pod's graph from its annotations "sdpod/mutable" and
 * "sdpod/keep-on-app-failure" (each "true" or "false", absent: false);
 * -EBADMSG for another value, naming the annotation. */
int pod_graph_from_manifest(const PodManifest *m, PodGraph *ret, Error **err);

typedef struct AppBind {
        char *source;           /* in the pod: POD_VOLUMES_DIR/VOLUME */
        const char *destination;        /* in the app, borrowed from the manifest */
        bool read_only;
} AppBind;

/* A command of the app's besides its program: a hook or its health check. */
typedef struct AppCommand {
        char *const *argv;      /* borrowed: the manifest's, or the lifecycle's */
        char *path;             /* the program, absolute in the app's root; NULL: no such command */
} AppCommand;

typedef struct AppUnit {
        const PodApp *app;      /* borrowed from the manifest */
        char *exec_path;        /* the program, absolute in the app's root */
        AppLifecycle lifecycle;
        AppCommand pre_start, pre_stop, post_stop, health;
        uid_t uid;
        gid_t gid;
        char **environment;     /* NAME=VALUE: the manifest's in order, then PATH and HOME when absent */
        AppBind *binds;
        size_t n_binds;
        /* The app's own binds of host paths (podapp add --bind), in the
         * pod at POD_APPS_DIR/NAME/binds/N; the binds borrow from it. */
        PodHostBind *host_binds;
        size_t n_host_binds;
        AppIsolation isolation;
} AppUnit;

/* Checks app number index of m against its root file system app_rootfd
 * (an fd of the directory, resolved as "/") and returns everything its unit
 * says. Errors name the field ("apps[0].app.user: no user ..."), and the
 * code tells the app's exit code (app_unit_exit_code): -ENOENT only when
 * the program was not found, -EACCES only when it is not executable. */
int app_unit_resolve(const PodManifest *m, size_t index, int app_rootfd, AppUnit **ret, Error **err);
void app_unit_free(AppUnit *u);
static inline void app_unit_freep(AppUnit **u) { app_unit_free(*u); }
#define _cleanup_app_unit_ _cleanup_(app_unit_freep)

/* The same checks, for stage0 (sdpod prepare, podapp add): 0 when the app
 * can be started in that root. */
int app_check_in_root(const PodManifest *m, size_t index, int app_rootfd, Error **err);

/* The exit code an app fails with when app_unit_resolve() failed with r. */
int app_unit_exit_code(int r);

/* Unit file syntax. unit_quote_word() returns one word of a command line
 * or an Environment= assignment that systemd reads back as s: quoted and
 * C-escaped when needed, "%" doubled (specifiers), and with exec_arg "$"
 * doubled too (systemd expands $VAR in the arguments of Exec lines, not in
 * the program's path nor in Environment=). NULL on allocation failure. */
char *unit_quote_word(const char *s, bool exec_arg);

/* The texts of the units, each a whole file beginning with the header
 * "# Automatically generated by sdpod-generator". */
int app_unit_render(const AppUnit *u, PodGraph graph, char **ret);
/* app@NAME.service of an app that cannot run: the same graph, with
 * ExecStart=pod-helper fail CODE MESSAGE, so the app fails with CODE, says
 * why on the console and in the journal, and its failure does what any
 * app's does (OnFailure=, per graph). */
int app_unit_render_failure(const PodApp *app, int exit_code, const char *message, PodGraph graph, char **ret);
int reaper_unit_render(const PodApp *app, PodGraph graph, char **ret);
/* APP_HEALTH_UNIT_FORMAT and APP_HEALTH_TIMER_FORMAT of an app with a
 * health check (u->health.path). */
int health_unit_render(const AppUnit *u, char **ret);
int health_timer_render(const AppUnit *u, char **ret);
/* APP_WAIT_HEALTHY_UNIT_FORMAT of an app with a health check. */
int wait_healthy_unit_render(const PodApp *app, char **ret);
/* The drop-in of the exec template of the app (APP_EXEC_DROPIN_FORMAT or
 * APP_ENTER_DROPIN_FORMAT): everything of app@NAME.service's [Service] but
 * its type, program and output, which the command brings. */
int exec_unit_dropin_render(const AppUnit *u, AppExecMode mode, char **ret);
/* The drop-in default.target.d/sdpod-mutable.conf of a mutable pod (seed
 * 001): default.target conflicts with, and is ordered before, halt.target,
 * poweroff.target and exit.target. The pod stays in its steady state with
 * or without apps until one of them is started, which stops it. */
int mutable_default_target_dropin_render(char **ret);
/* sdpod-manifest-error.service: fails the pod with 125 and message. */
int manifest_error_unit_render(const char *message, char **ret);
