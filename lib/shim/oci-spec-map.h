/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* From an OCI spec (oci-spec.h) to sdpod's own arguments: the pod of a CRI
 * sandbox or of a plain task (PodArgs), and the app of a container or of a
 * plain task (AppArgs), so that a task becomes exactly what `podapp
 * sandbox` and `podapp add` would make. What the spec asks for and sdpod
 * cannot give is refused (-EOPNOTSUPP naming it), never dropped; what
 * sdpod gives anyway (its own /proc, /dev, /sys, masks, seccomp filter,
 * which are at least as strict as the spec's defaults) is not an error. */

#include "manifest/app-args.h"
#include "shim/oci-spec.h"

/* Is this task the CRI sandbox, a container of one (sandbox id), or neither. */
typedef enum OciTaskKind {
        OCI_TASK_PLAIN,
        OCI_TASK_SANDBOX,
        OCI_TASK_CONTAINER,
} OciTaskKind;

/* ret_sandbox_id (may be NULL): for a container, its sandbox's id (borrowed
 * from s); else NULL. A container-type "container" without a sandbox id is
 * PLAIN. */
OciTaskKind oci_spec_task_kind(const OciSpec *s, const char **ret_sandbox_id);

/* The pod for a sandbox or a plain task: mutable, --net=ns:PATH from the
 * spec's network namespace path (a network namespace without a path: a
 * private one, --net=none; no network namespace listed: --net=host),
 * --hostname from the spec, --name from task_id when it is a valid pod
 * name, and --private-users=no: containerd's snapshots are overlay mounts,
 * which this kernel cannot idmap, and Kubernetes' default (hostUsers) is
 * the host's ids. ret is initialized by the call; pod_args_done() frees it. */
int oci_spec_pod_args(const OciSpec *s, const char *task_id, PodArgs *ret, Error **err);

/* Sets the sandbox's sysctls (linux.sysctl), which oci_spec_pod_args()
 * checked: net.* in its network namespace (the spec's path, which
 * containerd made), before the pod starts; those of the IPC namespace
 * (kernel.shm*, kernel.msg*, kernel.sem, fs.mqueue.*) in the pod's, which
 * systemd-nspawn made, once the pod runs (leader: its PID 1), before any
 * container is added. Errors name the sysctl. */
int oci_spec_apply_sysctls(const OciSpec *s, Error **err);
int oci_spec_apply_ipc_sysctls(const OciSpec *s, pid_t leader, Error **err);

/* The app for a container or a plain task: root = rootfs (host directory,
 * already mounted by the shim), command (process.args as --exec and
 * arguments), environment, cwd, user/group/additional gids (numbers), the
 * exact capability set (bounding), rlimits, noNewPrivileges, oomScoreAdj
 * (ignored: sdpod leaves OOM scores to the pod), resources (memory, cpu
 * quota, pids), bind mounts of host paths (the CRI's /etc/hosts,
 * /etc/resolv.conf, /etc/hostname, /dev/shm, /dev/termination-log and
 * volumes), root.readonly, stdio paths (each may be NULL or ""). The
 * standard mounts of a container (/proc, /dev, /dev/pts, /dev/shm,
 * /dev/mqueue, /sys, /sys/fs/cgroup, /run tmpfs) are what every app has and
 * are skipped. A spec asking for something the app cannot get (a terminal,
 * a user namespace mapping, devices, sysctls, a mount of another type):
 * -EOPNOTSUPP naming it. ret is initialized by the call; free it with
 * app_args_done(). */
int oci_spec_app_args(const OciSpec *s, const char *app_name, const char *rootfs, const char *stdin_path,
                      const char *stdout_path, const char *stderr_path, AppArgs *ret, Error **err);

/* The app name of a task: its CRI container name when that is a valid
 * ACName (readable in `podapp list`; the CRI makes it unique in a pod
 * sandbox... but not across restarts, so the caller checks the pod for a
 * clash and falls back), else "c-" and the first 12 characters of the
 * task id made an ACName. ret: at least 72 bytes. */
#define OCI_APP_NAME_MAX 72
void oci_spec_app_name(const OciSpec *s, const char *task_id, bool prefer_cri_name, char ret[static OCI_APP_NAME_MAX]);
