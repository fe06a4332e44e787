/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* A command run in an app of a running pod (sdpod enter, podapp exec). It
 * is never run by the host tool: the pod's own systemd starts it, as a
 * transient instance of the app's exec template (app-unit.h), so it gets
 * what the app gets (root, user and working directory, the pod's user
 * namespace, the app's capability bounding set, system call filter,
 * NoNewPrivileges, protections and limits) and nothing of the caller's but
 * its standard input, output and error, passed over the bus. Every other
 * fd is closed by systemd, as for any service. */

#include <stdbool.h>
#include <systemd/sd-bus.h>

#include "basic/error.h"
#include "unit/app-unit.h"

typedef struct PodExec {
        const char *app;
        AppExecMode mode;
        const char *path;               /* the program, absolute in the app's root */
        char *const *argv;              /* its arguments, argv[0] included */
        char *const *environment;       /* NAME=VALUE beside the app's (the caller's TERM) */
} PodExec;

/* Runs x in the pod whose systemd is bus and waits until it has ended,
 * passing SIGINT, SIGTERM, SIGHUP and SIGQUIT on to it meanwhile.
 * *ret_status: its exit status, 128 + N when killed by signal N. A command
 * whose program systemd could not run (a step of its own before it
 * failed, 200-245 in systemd.exec(5)): -EPROTO, with the reason. */
int pod_exec(sd_bus *bus, const PodExec *x, int *ret_status, Error **err);
