/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* A running pod's liveness, as its supervisor (pod-supervise.h) checks it:
 * the pod's own systemd must answer a ping (org.freedesktop.DBus.Peer.Ping
 * on its private socket). systemd-nspawn does not forward the pod's
 * watchdog pings, and the pod's systemd sends none (measured, systemd 252):
 * nspawn's own WATCHDOG=1 says only that nspawn runs. So the supervisor
 * asks the pod itself, and
 *
 *   - under a service manager that wants pings (pod@.service's WatchdogSec=,
 *     $WATCHDOG_USEC), says WATCHDOG=1 only for a pod that answered: the
 *     host's systemd acts on a wedged pod (WatchdogSignal=, Restart=);
 *   - with the pod's own watchdog (the pod annotation sdpod/watchdog,
 *     --pod-watchdog), kills the pod when it has not answered for that
 *     long, foreground, detached and under a service alike.
 *
 * Until the pod has answered once it is booting, for at most
 * POD_LIVENESS_BOOT_MAX_USEC: the service's own WATCHDOG=1 is sent
 * meanwhile, and the pod's watchdog waits; a pod that has never answered
 * after that is not alive (its socket may be one it planted). A hostile pod can answer
 * while wedged; it only keeps itself alive, which it could anyway. */

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <systemd/sd-bus.h>

#define POD_LIVENESS_BOOT_MAX_USEC (90 * 1000000ULL)

typedef struct PodLiveness {
        uint64_t host_usec;     /* the service manager's watchdog timeout; 0: none */
        uint64_t pod_usec;      /* the pod's own (sdpod/watchdog); 0: none */
        uint64_t interval_usec; /* between pings */
        uint64_t next_usec;     /* monotonic: the next ping */
        uint64_t answered_usec; /* monotonic: the last answer; 0: none yet */
        uint64_t started_usec;  /* monotonic: when supervision began */
        sd_bus *bus;            /* to the pod's systemd, once connected */
} PodLiveness;

/* pod_usec: the pod's watchdog (0: none); the host's from the environment. */
void pod_liveness_init(PodLiveness *l, uint64_t pod_usec);
void pod_liveness_done(PodLiveness *l);
/* How long the supervisor may sleep before the next check, for poll(2)
 * (-1: no checks at all). */
int pod_liveness_poll_timeout(const PodLiveness *l);
/* Pings the pod's systemd when due (nspawn's child is its PID 1) and tells
 * the service manager. Returns -ETIMEDOUT when the pod has not answered
 * within its own watchdog: it must be killed. */
int pod_liveness_check(PodLiveness *l, pid_t nspawn);
