/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* Talking to a pod's systemd over sd-bus, directly (no bus broker, no
 * Hello): its private socket, /run/systemd/private. From the host this only
 * works from inside the pod's pid namespace (see podapp). */

#include <stdbool.h>
#include <stdint.h>
#include <systemd/sd-bus.h>

#include "basic/error.h"

#define SYSTEMD_PRIVATE_SOCKET "/run/systemd/private"

static inline void sd_bus_closep(sd_bus **b) { sd_bus_flush_close_unref(*b); }
#define _cleanup_bus_ _cleanup_(sd_bus_closep)

/* A peer-to-peer connection to the systemd listening on socket path. */
int bus_open_systemd_private(const char *path, sd_bus **ret, Error **err);

/* How a service's main process ended, as its unit records it. */
typedef struct ServiceExit {
        bool exited;            /* the main process ran and is gone */
        bool not_executed;      /* it exited with one of systemd's own statuses
                                 * (200-245, systemd.exec(5)) for a step before
                                 * the program: the program never ran */
        int exit_status;        /* its status, 128 + N when killed by signal N */
        bool failed;            /* the unit's Result is not "success" */
        char result[32];        /* the unit's Result ("exit-code", "signal", ...) */
        unsigned restarts;      /* NRestarts: automatic restarts since it was last started */
} ServiceExit;
int bus_service_exit(sd_bus *bus, const char *unit, ServiceExit *ret, Error **err);

/* The manager's exit code (what systemd exits with in a container). */
int bus_manager_get_exit_code(sd_bus *bus, uint8_t *ret, Error **err);
int bus_manager_set_exit_code(sd_bus *bus, uint8_t code, Error **err);
/* Manager.Exit(): ends the pod's systemd (in a container: exits it). */
int bus_manager_exit(sd_bus *bus, Error **err);
/* Manager.PowerOff(): in a VM, where systemd refuses Exit(), ends it
 * (systemd-shutdown: what is left is killed, the machine powered off). */
int bus_manager_power_off(sd_bus *bus, Error **err);

/* Manager.Subscribe(): on a bus with a broker, the manager's signals
 * (JobRemoved) reach only subscribers. */
int bus_manager_subscribe(sd_bus *bus, Error **err);

/* Manager.Reload(): re-runs the generators and reloads every unit; returns
 * when the reload is done. */
int bus_manager_reload(sd_bus *bus, Error **err);

/* A job of the manager ("StartUnit" or "StopUnit" of unit, in mode
 * "replace", "fail", ...), followed to its end by the JobRemoved signal (a
 * private connection receives every signal of the manager). */
typedef struct BusJob {
        sd_bus *bus;
        sd_bus_slot *slot;      /* the match on JobRemoved */
        char *unit;
        char *path;             /* the job's object path */
        char *result;           /* once it ended: "done", "failed", ... */
} BusJob;

int bus_job_start(sd_bus *bus, const char *method, const char *unit, const char *mode, BusJob *ret, Error **err);
/* The same for a call of the manager's that the caller built (from
 * bus_manager_new_call()) and that returns the job's path:
 * StartTransientUnit(). */
int bus_manager_new_call(sd_bus *bus, const char *method, sd_bus_message **ret, Error **err);
int bus_job_start_call(sd_bus *bus, sd_bus_message *call, const char *unit, BusJob *ret, Error **err);
/* Waits at most timeout_usec (0: for ever) for the job to end and maps its
 * result: done or skipped 0; failed -EIO, timeout -ETIME, canceled
 * -ECANCELED, dependency -ENOLINK, anything else -EPROTO, each with a
 * message that names the unit. Still running at the timeout: -ETIMEDOUT,
 * and it can be waited for again. */
int bus_job_wait(BusJob *j, uint64_t timeout_usec, Error **err);
void bus_job_done(BusJob *j);

/* Manager.ResetFailedUnit(). */
int bus_unit_reset_failed(sd_bus *bus, const char *unit, Error **err);

/* Manager.KillUnit(): signal to the unit's processes (who: "main", "all"). */
int bus_unit_kill(sd_bus *bus, const char *unit, const char *who, int signo, Error **err);

/* What a unit's state is, as the seed's app states need it. */
typedef struct UnitState {
        char load_state[16];    /* "loaded", "not-found", ... */
        char active_state[16];  /* "active", "activating", "deactivating", "inactive", "failed" */
        char sub_state[32];
        uint64_t started_usec;  /* realtime: its main process was started; 0: never */
        uint64_t exited_usec;   /* realtime: its main process exited; 0: not yet */
} UnitState;
int bus_unit_state(sd_bus *bus, const char *unit, UnitState *ret, Error **err);

/* The object path of unit (free() it). */
char *bus_unit_path(const char *unit);
