/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The processes of a running pod, as seen from the host: systemd-nspawn,
 * which holds the pod's lock (its PID is in the pod directory's "pid"
 * file), and its child, the pod's systemd: PID 1 in the pod, the leader of
 * its namespaces. */

#include <stdbool.h>
#include <sys/types.h>

#include "basic/error.h"

/* The file in the pod directory holding the PID of systemd-nspawn, the
 * process that holds the pod's lock while it runs, and the number of its fd
 * that holds it: "PID FD\n". */
#define POD_PID_FILE "pid"

/* Writes the pid file for nspawn, pid. */
int pod_pid_file_write(int pod_fd, pid_t pid, int lock_fd, Error **err);

/* Makes the pod's lock the only fd of this process that the next exec
 * (systemd-nspawn's) keeps: nspawn holds it for the pod's life, and
 * nothing else of ours reaches it (the fd of the entrypoint itself, which
 * stage0 leaves open for scripts, included). A negative errno on failure. */
int pod_lock_keep_alone_on_exec(int lock_fd);

/* The first child of parent (single-threaded: its main thread's), or 0:
 * nspawn's is the pod's PID 1. */
pid_t pod_first_child(pid_t parent);

typedef struct PodProcess {
        pid_t nspawn;
        int nspawn_pidfd;       /* a pidfd of nspawn: signals reach it, never a recycled PID */
        pid_t leader;           /* the pod's PID 1, or 0 while nspawn starts it */
} PodProcess;

void pod_process_done(PodProcess *p);

/* Finds nspawn by the pid file and makes sure, once a pidfd is open, that
 * this very process holds the pod's lock (its fdinfo); -ESRCH when the
 * pod is not running. pod_fd is the pod directory. */
int pod_process_find(int pod_fd, const char *uuid, PodProcess *ret, Error **err);

/* Whether the pod's PID 1 still runs: false once it is exiting, a zombie
 * systemd-nspawn has yet to reap, or gone (nspawn may hold the pod's lock
 * a while longer). */
bool pod_leader_alive(const PodProcess *p);

/* The lowest PID in the pod's pid namespace whose cgroup is the unit's
 * ("app@web.service"): the unit's main process. -ESRCH when it runs none. */
int pod_unit_pid(const PodProcess *p, const char *unit, pid_t *ret);
/* The PIDs (on the host) of the unit's processes, or of every process in
 * the pod's pid namespace with unit NULL, at most max, in /proc's order. */
int pod_unit_pids(const PodProcess *p, const char *unit, pid_t *ret, size_t max, size_t *ret_n);

/* Kills what is left of a pod whose systemd-nspawn is gone (killed with
 * SIGKILL, say): nspawn does not take the pod's PID 1 with it. That PID 1 is
 * found as the init of a pid namespace whose environment carries
 * container_uuid=UUID (systemd-nspawn sets it from --uuid=); SIGKILL to it
 * ends every process of the pod, and with them the pod's mounts. Waits up
 * to 5 s for each to die. Returns how many it killed. */
int pod_kill_leftovers(const char *uuid, Error **err);
