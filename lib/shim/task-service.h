/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The task service (containerd.task.v2.Task) of containerd-shim-sdpod-v1:
 * one shim process serves a pod, that is the tasks of one CRI sandbox (the
 * sandbox's own task and its containers'), or one plain task. It keeps
 * each task's state in memory, maps each call onto shim-task.h, answers
 * over ttrpc and publishes the task events containerd waits for (in the
 * order runtime v2 asks: create, start, exit, delete).
 *
 * An app's end is seen by polling its recorded exit status (status/NAME,
 * written by its reaper) every SHIM_POLL_USEC while a task runs: the
 * record, not a bus signal, is what says the status is known. */

#include <systemd/sd-event.h>

#include "basic/error.h"
#include "shim/shim-events.h"
#include "shim/ttrpc.h"

#define SHIM_POLL_USEC (100 * 1000ULL)

typedef struct TaskService TaskService;

typedef struct TaskServiceConfig {
        const char *data_dir;           /* the pod store; NULL: the default */
        bool data_dir_is_default;
        ShimPublisher publisher;
        bool debug;                     /* log each process's start, wait and exit (stderr) */
} TaskServiceConfig;

/* Registers the methods on server; the service exits e when Shutdown is
 * asked and it has no task left, or when its last connection closed after
 * its last task was deleted. */
int task_service_new(sd_event *e, TtrpcServer *server, const TaskServiceConfig *c, TaskService **ret, Error **err);
TaskService *task_service_free(TaskService *s);
