/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The fly flavor (sdpod-stage1(7)): a pod of one app, run directly by the
 * run entrypoint, without systemd-nspawn or a systemd in the pod. The run
 * entrypoint holds the pod's lock, as nspawn does for the nspawn flavor,
 * and stays as the app's supervisor on the host; the app is its child:
 *
 *   mounts      in a mount namespace of its own, the app's root (the
 *               overlay of its image's tree, idmapped, as in the nspawn
 *               flavor) becomes "/" (pivot_root); a new /proc of its pid
 *               namespace, /sys read-only, a /dev of its own (tmpfs with
 *               null, zero, full, random, urandom, tty bound from the
 *               host, devpts, shm), the pod's name files over /etc/hosts,
 *               /etc/resolv.conf and /etc/hostname; the paths Docker masks
 *               masked (an empty read-only tmpfs, /dev/null), the kernel's
 *               tunables read-only. Every mount is made by the host's root
 *               in a namespace the host's user namespace owns, before the
 *               app enters its user namespace: the app can change none
 *   namespaces  pid (the app is PID 1: SIGTERM reaches it only if it
 *               handles it), mount, UTS (the pod's hostname), IPC, cgroup,
 *               network (none: only lo; CNI and ns:PATH: the pod's; host:
 *               the host's), user (the pod's range, pod-userns.h)
 *   confinement the app's AppIsolation (unit/app-isolators.h), as the
 *               nspawn flavor's systemd applies it: capability bounding
 *               set, no_new_privs, one seccomp filter (fly-seccomp.h);
 *               the pod's cgroup (pod-cgroup.h) with its device rule and
 *               task limit
 *   output      the app's stdout and stderr go through a pipe to the
 *               supervisor, which writes them to POD_LOG_FILE in the pod
 *               directory (pod-log.h: at most POD_LOG_MAX bytes: the rest is
 *               dropped and counted) and, escaped, to its own stdout;
 *               'sdpod journal' shows the file escaped
 *   exit        the app's exit status (128+N for signal N) is recorded by
 *               the supervisor in status/NAME, then everything left in the
 *               pod's cgroup is killed, the network released, and the
 *               supervisor exits with that status, releasing the lock
 *   stop        SIGTERM to the supervisor (the stop entrypoint) is passed
 *               to the app; SIGKILL follows after the app's stop timeout
 *               (default 10 s). SIGKILL of the supervisor: the app gets
 *               SIGKILL (PR_SET_PDEATHSIG); gc kills the pod's cgroup
 *               either way
 *
 * Refused, with an error naming the flavor: several apps, a terminal
 * (-t), hooks and health checks (systemd runs them), restart policies and
 * watchdogs, volumes and mounts, tmpfs and devices of the app, a mutable
 * pod (podapp sandbox), and later podapp add. */

#include "basic/error.h"
#include "manifest/pod-manifest.h"
#include "pod/flavor-check.h"

#define FLY_FLAVOR "fly"
#define FLY_STOP_TIMEOUT_USEC (10 * 1000000ULL)

/* The run entrypoint: the working directory is the pod directory, lock_fd
 * its lock. Exits with the app's exit status; returns only on failure. */
int fly_run_exec(const char *uuid, int lock_fd, Error **err);
