/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* Talking to a pod's systemd over sd-bus, directly (no bus broker, no
 * Hello): its private socket, /run/systemd/private. From the host this only
 * works from inside the pod's pid namespace (see podapp). */

#include <stdbool.h>
#include <stdint.h>
#include <systemd/sd-bus.h>

#include "error.h"

#define SYSTEMD_PRIVATE_SOCKET "/run/systemd/private"

static inline void sd_bus_closep(sd_bus **b) { sd_bus_flush_close_unref(*b); }
#define _cleanup_bus_ _cleanup_(sd_bus_closep)

/* A peer-to-peer connection to the systemd listening on socket path. */
int bus_open_systemd_private(const char *path, sd_bus **ret, Error **err);

/* How a service's main process ended, as its unit records it. */
typedef struct ServiceExit {
        bool exited;            /* the main process ran and is gone */
        int exit_status;        /* its status, 128 + N when killed by signal N */
        bool failed;            /* the unit's Result is not "success" */
        char result[32];        /* the unit's Result ("exit-code", "signal", ...) */
} ServiceExit;
int bus_service_exit(sd_bus *bus, const char *unit, ServiceExit *ret, Error **err);

/* The manager's exit code (what systemd exits with in a container). */
int bus_manager_get_exit_code(sd_bus *bus, uint8_t *ret, Error **err);
int bus_manager_set_exit_code(sd_bus *bus, uint8_t code, Error **err);
/* Manager.Exit(): ends the pod's systemd (in a container: exits it). */
int bus_manager_exit(sd_bus *bus, Error **err);
