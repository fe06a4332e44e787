/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <systemd/sd-daemon.h>

#include "basic/error.h"
#include "basic/macro.h"
#include "basic/time-util.h"
#include "bus/pod-bus.h"
#include "pod/pod-liveness.h"
#include "pod/pod-process.h"

/* A ping that takes longer than this (or than the interval) failed. */
#define PING_TIMEOUT_MAX_USEC (2 * USEC_PER_SEC)

static uint64_t min_u64(uint64_t a, uint64_t b) {
        return a < b ? a : b;
}

void pod_liveness_init(PodLiveness *l, uint64_t pod_usec) {
        uint64_t host = 0;
        if (sd_watchdog_enabled(false, &host) <= 0)
                host = 0;
        *l = (PodLiveness) { .host_usec = host, .pod_usec = pod_usec };
        /* Four pings per timeout: one late or lost answer is not yet a
         * wedged pod. */
        uint64_t t = host && pod_usec ? min_u64(host, pod_usec) : host ?: pod_usec;
        l->interval_usec = t / 4 ?: 1;
        l->next_usec = l->started_usec = monotonic_usec();
}

/* Closed without a flush: a wedged pod would keep a flush waiting (sd-bus
 * gives an unanswered connection 90 s). */
void pod_liveness_done(PodLiveness *l) {
        l->bus = sd_bus_close_unref(l->bus);
}

int pod_liveness_poll_timeout(const PodLiveness *l) {
        if (!l->host_usec && !l->pod_usec)
                return -1;
        uint64_t now = monotonic_usec();
        if (now >= l->next_usec)
                return 0;
        uint64_t ms = (l->next_usec - now + 999) / 1000;
        return ms > INT_MAX ? INT_MAX : (int) ms;
}

typedef struct PingState {
        bool done;
        int result;
} PingState;

static int on_ping_reply(sd_bus_message *m, void *userdata, sd_bus_error *ret_error) {
        PingState *s = userdata;
        s->done = true;
        s->result = sd_bus_message_is_method_error(m, NULL) ? -EIO : 0;
        return 0;
}

/* Ping() within timeout_usec, the connection's authentication included:
 * sd-bus waits up to 90 s for a peer that accepted the connection but does
 * not answer (a stopped systemd's backlog), whatever the call's timeout. */
static int ping_within(sd_bus *bus, uint64_t timeout_usec) {
        PingState s = {};
        int r = sd_bus_call_method_async(bus, NULL, "org.freedesktop.systemd1", "/org/freedesktop/systemd1",
                                         "org.freedesktop.DBus.Peer", "Ping", on_ping_reply, &s, "");
        if (r < 0)
                return r;
        uint64_t deadline = monotonic_usec() + timeout_usec;
        while (!s.done) {
                if ((r = sd_bus_process(bus, NULL)) < 0)
                        return r;
                if (r > 0)
                        continue;
                uint64_t now = monotonic_usec();
                if (now >= deadline)
                        return -ETIMEDOUT;
                struct pollfd p = { .fd = sd_bus_get_fd(bus), .events = (short) sd_bus_get_events(bus) };
                if (p.fd < 0 || (poll(&p, 1, (int) ((deadline - now + 999) / 1000)) < 0 && errno != EINTR))
                        return -errno ?: -EBADF;
        }
        return s.result;
}

static bool ping(PodLiveness *l, pid_t nspawn) {
        if (!l->bus) {
                pid_t leader = pod_first_child(nspawn);
                Error *ignored = NULL;
                /* Within the ping's own bound: the supervisor handles
                 * signals and nspawn's end between pings, and a pod whose
                 * socket takes no connection (a full backlog it planted)
                 * is a pod that does not answer. */
                if (leader <= 0 ||
                    pod_bus_open_within(leader, min_u64(l->interval_usec, PING_TIMEOUT_MAX_USEC), &l->bus, &ignored) < 0) {
                        error_free(ignored);
                        return false;
                }
        }
        int r = ping_within(l->bus, min_u64(l->interval_usec, PING_TIMEOUT_MAX_USEC));
        if (r < 0)
                /* Connect anew next time: systemd may have re-executed. */
                l->bus = sd_bus_close_unref(l->bus);
        return r >= 0;
}

int pod_liveness_check(PodLiveness *l, pid_t nspawn) {
        if ((!l->host_usec && !l->pod_usec) || monotonic_usec() < l->next_usec)
                return 0;
        bool answered = ping(l, nspawn);
        uint64_t now = monotonic_usec();
        l->next_usec = now + l->interval_usec;
        if (answered)
                l->answered_usec = now;
        /* Booting (no answer yet), or answered: the service is alive.
         * Booting ends after POD_LIVENESS_BOOT_MAX_USEC all the same: a
         * pod that planted a socket its pings never get through (a full
         * backlog at /run/systemd/private) before its first answer would
         * otherwise keep both watchdogs quiet for ever. */
        bool booting = !l->answered_usec && now - l->started_usec < POD_LIVENESS_BOOT_MAX_USEC;
        if (l->host_usec && (answered || booting))
                (void) sd_notify(false, "WATCHDOG=1");
        if (l->pod_usec && !answered && !booting &&
            (!l->answered_usec || now - l->answered_usec >= l->pod_usec))
                return -ETIMEDOUT;
        return 0;
}
