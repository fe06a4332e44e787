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
#define APP_ANNOTATION_HEALTH_RETRIES "sdpod/health-retries"
#define APP_ANNOTATION_HEALTH_START_PERIOD "sdpod/health-start-period"
#define APP_ANNOTATION_HEALTH_ON_FAILURE "sdpod/health-on-failure"

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
        unsigned health_retries;
        uint64_t health_start_period_usec;
        AppHealthAction health_on_failure;
} AppLifecycle;

#define APP_HEALTH_INTERVAL_DEFAULT_USEC (30 * 1000000ULL)
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
/* Checks the value of one of the table's annotations; -EINVAL with a
 * message that says what is expected. */
int app_lifecycle_check(const char *annotation, const char *value, Error **err);

/* A command given on the command line (hooks, health check): a JSON array
 * of strings ('["/bin/check", "-q"]') is the command as it is; anything
 * else is a shell command line, run by /bin/sh -c. */
int app_command_parse(const char *s, char ***ret, Error **err);
