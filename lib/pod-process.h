/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The processes of a running pod, as seen from the host: systemd-nspawn,
 * which holds the pod's lock (its PID is in the pod directory's "pid"
 * file), and its child, the pod's systemd: PID 1 in the pod, the leader of
 * its namespaces. */

#include <stdbool.h>
#include <sys/types.h>

#include "error.h"

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

/* Who a command entered into a pod runs as: NULL for root in "/". */
typedef struct EnterIdentity {
        uid_t uid;
        gid_t gid;                      /* the only group: supplementary groups are dropped */
        const char *working_directory;  /* in the target's root */
} EnterIdentity;

/* Runs cmd with envp in the namespaces and root of the process target (the
 * pod's PID 1 or an app's process): mount, UTS, IPC, network, cgroup and
 * pid namespaces, its root, as as says, and waits for it.
 * Returns its exit status (128 + N when killed by signal N). While it
 * runs, SIGINT and SIGQUIT are the command's, as with system(3). */
int pod_enter_process(pid_t target, char *const *cmd, char *const *envp, const EnterIdentity *as, int *ret_status,
                      Error **err);

/* Kills what is left of a pod whose systemd-nspawn is gone (killed with
 * SIGKILL, say): nspawn does not take the pod's PID 1 with it. That PID 1 is
 * found as the init of a pid namespace whose environment carries
 * container_uuid=UUID (systemd-nspawn sets it from --uuid=); SIGKILL to it
 * ends every process of the pod, and with them the pod's mounts. Waits up
 * to 5 s for each to die. Returns how many it killed. */
int pod_kill_leftovers(const char *uuid, Error **err);
