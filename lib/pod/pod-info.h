/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* What sdpod list and status show about a pod, besides its state: its
 * manifest, its times and the exit statuses of its apps. */

#include <stdint.h>

#include "basic/error.h"
#include "manifest/pod-manifest.h"
#include "pod/pod.h"

typedef struct PodAppExit {
        char *name;
        bool exited;            /* its exit status is recorded */
        int exit_status;        /* as the shell shows it: 128+N for signal N */
        uint64_t exited_usec;   /* when it was recorded */
        unsigned restarts;      /* how often systemd restarted it (its restart policy) */
        int restart_exit_status;        /* with restarts: the status it exited with before the last */
        const char *health;     /* with a health check: "starting", "healthy", "unhealthy", "exited"; else NULL */
} PodAppExit;

typedef struct PodInfo {
        PodManifest *manifest;  /* NULL: none yet (an embryo, a failed prepare) or unreadable */
        char *manifest_error;   /* why it is unreadable; NULL when it is fine or absent */
        uint64_t created_usec;  /* 0: unknown (no manifest yet) */
        uint64_t started_usec;  /* 0: never started */
        uint64_t exited_usec;   /* 0: unknown; when the last app status was recorded */
        PodAppExit *apps;       /* the apps whose exit status or restarts are recorded */
        size_t n_apps;
} PodInfo;

/* Reads what there is. A missing or broken manifest is not an error here
 * (status must still show the pod): it is reported in manifest_error.
 * Fails only on allocation failure. Reads through p->fd, so it works
 * while the pod moves between state directories. */
int pod_info_read(Pod *p, bool with_app_exits, PodInfo *ret);
void pod_info_done(PodInfo *info);

/* The pod's name (sdpod prepare --name), or NULL. */
const char *pod_info_name(const PodInfo *info);

/* Where an app's exit status is recorded, relative to the pod directory;
 * the reaper writes it inside the pod as /sdpod/status/NAME: a decimal
 * number and a newline. */
#define POD_APP_STATUS_DIR "status"

/* Reads the exit status of app name from the status directory status_fd
 * (a regular file, not followed through a symlink) into ret's exit_status
 * and exited_usec (its modification time); ret->name is left alone.
 * -ENOENT: none recorded; -EBADMSG: not an exit status. */
int pod_app_exit_read_at(int status_fd, const char *name, PodAppExit *ret);

/* An app that is restarted (its restart policy) has NAME.restarts beside
 * its exit status ("." is not in an app name): the number of restarts and
 * the exit status of the run before the last, "3 1\n", written by the
 * stage1's pod-helper as each restart begins. */
#define POD_APP_RESTARTS_SUFFIX ".restarts"
/* Reads it into ret's restarts and restart_exit_status; -ENOENT: never
 * restarted; -EBADMSG: not such a record. */
int pod_app_restarts_read_at(int status_fd, const char *name, PodAppExit *ret);

/* An app with a health check has NAME.health: its state, the failures in a
 * row and the start of the app's run they are of (realtime usec), "healthy
 * 0 1764000000000000\n", written by the stage1's pod-helper after each
 * check. */
#define POD_APP_HEALTH_SUFFIX ".health"
typedef enum PodAppHealth {
        POD_APP_HEALTH_STARTING,
        POD_APP_HEALTH_HEALTHY,
        POD_APP_HEALTH_UNHEALTHY,
} PodAppHealth;
const char *pod_app_health_to_string(PodAppHealth h);
typedef struct PodAppHealthRecord {
        PodAppHealth state;
        unsigned failures;
        uint64_t run_usec;
} PodAppHealthRecord;
/* -ENOENT: no check has finished yet; -EBADMSG: not such a record. */
int pod_app_health_read_at(int status_fd, const char *name, PodAppHealthRecord *ret);
/* What status shows of an app with a health check: its record's state
 * (starting until a check has said), or "exited" once the run that state
 * is of has ended (e: its exit record, may be NULL) or the pod has. */
#define POD_APP_HEALTH_EXITED "exited"
const char *pod_app_health_shown(int status_fd, const char *name, bool pod_running, const PodAppExit *e);

/* Records on a full disk (sdpod-security(7)): each record of an app (NAME,
 * NAME.restarts, NAME.health) is made by the host when the pod starts or
 * the app is added or started (pod_app_records_reserve_at): an empty file,
 * owned as the status directory is, with POD_APP_RECORD_SIZE bytes (one
 * block) allocated beyond its end. The pod rewrites it in place
 * (pod_app_record_write_at), within that block. A pod that fills the file
 * system then does not keep another pod's reaper from recording an exit:
 * no write of a record allocates. Readers take an empty record for none
 * (-ENOENT): the app has not stopped. */
#define POD_APP_RECORD_SIZE 64
/* Makes the records app has (its exit status; its restarts with a restart
 * policy, its health with a health check) that are not there yet; never
 * opens one that is. */
int pod_app_records_reserve_at(int status_fd, const PodManifest *m, const PodApp *app, Error **err);
/* Writes text (at most POD_APP_RECORD_SIZE bytes) into the record file
 * (NAME or NAME.SUFFIX) of status_fd: in place when it is reserved, else
 * as a new file (which needs space); errors name the file. */
int pod_app_record_write_at(int status_fd, const char *file, const char *text, Error **err);

/* The records' texts as their writer (the stage1's pod-helper) writes them
 * and the readers above take them: one format each, kept beside its
 * parser (and fuzzed together: tests/fuzz/fuzz-pod-records.c). */
void pod_app_exit_format(char buf[static POD_APP_RECORD_SIZE + 1], int exit_status);
void pod_app_restarts_format(char buf[static POD_APP_RECORD_SIZE + 1], unsigned restarts, int exit_status);
void pod_app_health_format(char buf[static POD_APP_RECORD_SIZE + 1], const PodAppHealthRecord *h);

/* The image ids every pod refers to, in every state: image gc keeps their
 * trees, which pods use as the lower layer of their apps' roots. */
int pod_store_image_ids(PodStore *s, char ***ret, Error **err);
