/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* An app's life in its pod beyond its program (seed 003; sdpod-manifest(5)):
 * how long it has to stop, whether it is restarted, its watchdog and its
 * health check. They are the app's annotations ("sdpod/restart": "always"),
 * the pod's stop timeout a pod annotation that is every app's default; the
 * hooks are the appc eventHandlers (pod-manifest.h). One table here says
 * what each annotation holds: the command line (app-args.h) and the
 * manifest's validation both check values through it. */

#include <stdbool.h>
#include <stdint.h>

#include "basic/error.h"
#include "manifest/pod-manifest.h"

#define APP_ANNOTATION_STOP_TIMEOUT "sdpod/stop-timeout"        /* also the pod's, every app's default */
/* The pod's, not an app's: its supervisor kills a pod whose systemd has not
 * answered for that long (pod-liveness.h). */
#define POD_ANNOTATION_WATCHDOG "sdpod/pod-watchdog"
#define APP_ANNOTATION_RESTART "sdpod/restart"
#define APP_ANNOTATION_WATCHDOG "sdpod/watchdog"
#define APP_ANNOTATION_WATCHDOG_FILE "sdpod/watchdog-file"
#define APP_ANNOTATION_HEALTH_CMD "sdpod/health-cmd"            /* a JSON array of strings */
#define APP_ANNOTATION_HEALTH_INTERVAL "sdpod/health-interval"
#define APP_ANNOTATION_HEALTH_TIMEOUT "sdpod/health-timeout"
#define APP_ANNOTATION_HEALTH_RETRIES "sdpod/health-retries"
#define APP_ANNOTATION_HEALTH_START_PERIOD "sdpod/health-start-period"
#define APP_ANNOTATION_HEALTH_ON_FAILURE "sdpod/health-on-failure"
/* Order between the apps of a pod, each a comma-separated list of app
 * names (--after=redis,db): systemd's After= and Requires= (with After=)
 * on their app@NAME.service, and "start once each of them is healthy"
 * (their health check has passed in their current run). */
#define APP_ANNOTATION_AFTER "sdpod/after"
#define APP_ANNOTATION_REQUIRES "sdpod/requires"
#define APP_ANNOTATION_WAIT_HEALTHY "sdpod/wait-healthy"
#define APP_ORDER_NAMES_MAX 64
/* The pod's: "true" in a mutable pod made by sdpod run/prepare --mutable,
 * whose apps start with the pod as an immutable pod's do (podapp
 * sandbox's and the containerd shim's are started one by one). */
#define POD_ANNOTATION_START_APPS "sdpod/start-apps"

typedef enum AppRestart {
        APP_RESTART_NO,
        APP_RESTART_ON_FAILURE,
        APP_RESTART_ALWAYS,
} AppRestart;

typedef enum AppHealthAction {
        APP_HEALTH_NONE,        /* the state says unhealthy; nothing else */
        APP_HEALTH_RESTART,
        APP_HEALTH_STOP,
} AppHealthAction;

typedef struct AppLifecycle {
        uint64_t stop_timeout_usec;     /* 0: the stage1's default (10 s) */
        AppRestart restart;
        uint64_t watchdog_usec;         /* 0: none */
        const char *watchdog_file;      /* with watchdog_usec: the file's age is watched, not sd_notify */
        char **health_cmd;              /* NULL: no health check */
        uint64_t health_interval_usec;
        uint64_t health_timeout_usec;   /* a check still running then has failed */
        unsigned health_retries;
        uint64_t health_start_period_usec;
        AppHealthAction health_on_failure;
} AppLifecycle;

#define APP_HEALTH_INTERVAL_DEFAULT_USEC (30 * 1000000ULL)
/* Apart from the interval, as Docker and podman have it: a short interval
 * must not fail a check that only started slowly on a busy host. */
#define APP_HEALTH_TIMEOUT_DEFAULT_USEC (30 * 1000000ULL)
#define APP_HEALTH_RETRIES_DEFAULT 3

/* The app's lifecycle from its annotations (and the pod's default stop
 * timeout). The manifest was validated: values are known good. */
int app_lifecycle_of(const PodManifest *m, const PodApp *app, AppLifecycle *ret, Error **err);
void app_lifecycle_done(AppLifecycle *l);

/* The annotation behind command line option --OPTION ("restart"), or NULL
 * when it is not one of these (the pod's, --pod-watchdog, included). */
const char *app_lifecycle_annotation_of_option(const char *option);
/* Whether annotation is one of the table's. */
bool app_lifecycle_annotation_is(const char *annotation);
/* Whether it is the pod's alone (--pod-watchdog, --pod-pids-limit,
 * --pod-memory, --pod-cpus), never an app's. */
bool app_lifecycle_annotation_is_pods(const char *annotation);
/* Checks the value of one of the table's annotations; -EINVAL with a
 * message that says what is expected. */
int app_lifecycle_check(const char *annotation, const char *value, Error **err);

/* The order between the apps of a pod as a whole (the annotations above,
 * each value already checked as a list of app names): no app names
 * itself, one waited for healthy has a health check, and the order has no
 * cycle (a cycle is a deadlock at start, or systemd dropping one of the
 * jobs at random). With complete, apps are all the pod's apps and every
 * app named must be one of them (prepare, podapp add); without, a name
 * of no app is let through (a manifest is built one app at a time, and
 * podapp rm may remove an app that another names: After= of a unit that
 * does not exist orders nothing, Requires= of one fails the start). -EINVAL
 * with a message naming the apps. */
int app_order_check(const PodApp *apps, size_t n_apps, bool complete, Error **err);
/* Only that every app the app apps[index] names is one of apps (podapp
 * add: the new app names apps the pod has). */
int app_order_check_names(const PodApp *apps, size_t n_apps, size_t index, Error **err);
/* The names of the list annotation of app ("sdpod/after"...), NULL when
 * it has none; -ENOMEM only. */
int app_order_names(const PodApp *app, const char *annotation, char ***ret);

/* A command given on the command line (hooks, health check): a JSON array
 * of strings ('["/bin/check", "-q"]') is the command as it is; anything
 * else is a shell command line, run by /bin/sh -c. */
int app_command_parse(const char *s, char ***ret, Error **err);
