/* SPDX-License-Identifier: Apache-2.0 */
#include <signal.h>
#include <sys/wait.h>

#include "basic/macro.h"
#include "basic/time-util.h"
#include "bus/bus-util.h"

#define SYSTEMD_DEST "org.freedesktop.systemd1"
#define SYSTEMD_PATH "/org/freedesktop/systemd1"
#define MANAGER_IFACE "org.freedesktop.systemd1.Manager"
#define SERVICE_IFACE "org.freedesktop.systemd1.Service"
#define UNIT_IFACE "org.freedesktop.systemd1.Unit"

static int bus_error(Error **err, int r, const sd_bus_error *e, const char *what) {
        if (e && sd_bus_error_is_set(e))
                return error_set(err, r < 0 ? r : -EIO, "%s: %s", what, e->message ? e->message : e->name);
        return error_sys(err, r, "%s", what);
}

int bus_open_systemd_private(const char *path, sd_bus **ret, Error **err) {
        _cleanup_bus_ sd_bus *bus = NULL;
        _cleanup_free_ char *address = NULL;
        int r = sd_bus_new(&bus);
        if (r < 0 || asprintf(&address, "unix:path=%s", path) < 0)
                return error_sys(err, r < 0 ? r : -ENOMEM, "bus");
        if ((r = sd_bus_set_address(bus, address)) < 0 || (r = sd_bus_start(bus)) < 0)
                return error_sys(err, r, "cannot connect to systemd at %s", path);
        *ret = TAKE_PTR(bus);
        return 0;
}

int bus_service_exit(sd_bus *bus, const char *unit, ServiceExit *ret, Error **err) {
        _cleanup_free_ char *path = NULL;
        int r = sd_bus_path_encode(SYSTEMD_PATH "/unit", unit, &path);
        if (r < 0)
                return error_sys(err, r, "%s", unit);
        sd_bus_error e = SD_BUS_ERROR_NULL;
        int32_t code = 0, status = 0;
        uint32_t restarts = 0;
        char *result = NULL;
        if ((r = sd_bus_get_property_trivial(bus, SYSTEMD_DEST, path, SERVICE_IFACE, "ExecMainCode", &e, 'i', &code)) < 0 ||
            (r = sd_bus_get_property_trivial(bus, SYSTEMD_DEST, path, SERVICE_IFACE, "NRestarts", &e, 'u', &restarts)) < 0 ||
            (r = sd_bus_get_property_trivial(bus, SYSTEMD_DEST, path, SERVICE_IFACE, "ExecMainStatus", &e, 'i', &status)) < 0 ||
            (r = sd_bus_get_property_string(bus, SYSTEMD_DEST, path, SERVICE_IFACE, "Result", &e, &result)) < 0) {
                r = bus_error(err, r, &e, unit);
                sd_bus_error_free(&e);
                return r;
        }
        *ret = (ServiceExit) {
                /* A main process that could not be executed exited too,
                 * with systemd's code for it (203, EXIT_EXEC). */
                .exited = code == CLD_EXITED || code == CLD_KILLED || code == CLD_DUMPED,
                .exit_status = code == CLD_EXITED ? status : 128 + status,
                .not_executed = code == CLD_EXITED && status >= 200 && status <= 245,
                .failed = !streq(result, "success"),
                .restarts = restarts,
        };
        snprintf(ret->result, sizeof(ret->result), "%s", result);
        free(result);
        return 0;
}

int bus_manager_get_exit_code(sd_bus *bus, uint8_t *ret, Error **err) {
        sd_bus_error e = SD_BUS_ERROR_NULL;
        int r = sd_bus_get_property_trivial(bus, SYSTEMD_DEST, SYSTEMD_PATH, MANAGER_IFACE, "ExitCode", &e, 'y', ret);
        if (r < 0)
                r = bus_error(err, r, &e, "ExitCode");
        sd_bus_error_free(&e);
        return r < 0 ? r : 0;
}

/* Calls method of the manager with arguments types; the reply, if asked for. */
static int manager_call_reply(sd_bus *bus, const char *method, sd_bus_message **ret_reply, Error **err,
                              const char *types, va_list ap) {
        sd_bus_error e = SD_BUS_ERROR_NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL, *reply = NULL;
        int r = sd_bus_message_new_method_call(bus, &m, SYSTEMD_DEST, SYSTEMD_PATH, MANAGER_IFACE, method);
        if (r >= 0 && types)
                r = sd_bus_message_appendv(m, types, ap);
        if (r >= 0)
                r = sd_bus_call(bus, m, 0, &e, &reply);
        if (r < 0)
                r = bus_error(err, r, &e, method);
        sd_bus_error_free(&e);
        if (r >= 0 && ret_reply)
                *ret_reply = TAKE_PTR(reply);
        return r < 0 ? r : 0;
}

static int manager_call(sd_bus *bus, const char *method, Error **err, const char *types, ...) {
        va_list ap;
        va_start(ap, types);
        int r = manager_call_reply(bus, method, NULL, err, types, ap);
        va_end(ap);
        return r;
}

int bus_manager_set_exit_code(sd_bus *bus, uint8_t code, Error **err) {
        return manager_call(bus, "SetExitCode", err, "y", code);
}

int bus_manager_exit(sd_bus *bus, Error **err) {
        return manager_call(bus, "Exit", err, NULL);
}

int bus_manager_power_off(sd_bus *bus, Error **err) {
        return manager_call(bus, "PowerOff", err, NULL);
}

int bus_manager_subscribe(sd_bus *bus, Error **err) {
        return manager_call(bus, "Subscribe", err, NULL);
}

int bus_manager_reload(sd_bus *bus, Error **err) {
        /* A reload re-runs the generators: give it time on a loaded host. */
        uint64_t old = 0;
        sd_bus_get_method_call_timeout(bus, &old);
        sd_bus_set_method_call_timeout(bus, 90 * 1000000ULL);
        int r = manager_call(bus, "Reload", err, NULL);
        sd_bus_set_method_call_timeout(bus, old);
        return r;
}

int bus_unit_reset_failed(sd_bus *bus, const char *unit, Error **err) {
        int r = manager_call(bus, "ResetFailedUnit", err, "s", unit);
        return r < 0 ? error_prefix(err, "%s", unit) : 0;
}

int bus_unit_kill(sd_bus *bus, const char *unit, const char *who, int signo, Error **err) {
        int r = manager_call(bus, "KillUnit", err, "ssi", unit, who, (int32_t) signo);
        return r < 0 ? error_prefix(err, "%s", unit) : 0;
}

static int on_job_removed(sd_bus_message *m, void *userdata, sd_bus_error *ret_error) {
        BusJob *j = userdata;
        const char *path, *unit, *result;
        uint32_t id;
        if (sd_bus_message_read(m, "uoss", &id, &path, &unit, &result) < 0 || !streq(path, strempty(j->path)))
                return 0;
        free(j->result);
        j->result = strdup(result);
        return 0;
}

int bus_manager_new_call(sd_bus *bus, const char *method, sd_bus_message **ret, Error **err) {
        int r = sd_bus_message_new_method_call(bus, ret, SYSTEMD_DEST, SYSTEMD_PATH, MANAGER_IFACE, method);
        return r < 0 ? error_sys(err, r, "%s", method) : 0;
}

int bus_job_start_call(sd_bus *bus, sd_bus_message *call, const char *unit, BusJob *ret, Error **err) {
        /* The match refers to *ret, which therefore must not move until
         * bus_job_done(). It comes first: a job can end before the reply. */
        *ret = (BusJob) { .bus = sd_bus_ref(bus), .unit = strdup(unit) };
        int r = ret->unit ? 0 : -ENOMEM;
        if (r >= 0)
                r = sd_bus_match_signal(bus, &ret->slot, NULL, SYSTEMD_PATH, MANAGER_IFACE, "JobRemoved",
                                        on_job_removed, ret);
        if (r < 0) {
                bus_job_done(ret);
                return error_sys(err, r, "%s", unit);
        }
        const char *method = sd_bus_message_get_member(call), *path;
        sd_bus_error e = SD_BUS_ERROR_NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        r = sd_bus_call(bus, call, 0, &e, &reply);
        if (r < 0)
                r = bus_error(err, r, &e, method);
        else if ((r = sd_bus_message_read(reply, "o", &path)) < 0 || !(ret->path = strdup(path)))
                r = error_sys(err, r < 0 ? r : -ENOMEM, "%s: %s", method, unit);
        sd_bus_error_free(&e);
        if (r < 0) {
                bus_job_done(ret);
                return error_prefix(err, "%s", unit);
        }
        return 0;
}

int bus_job_start(sd_bus *bus, const char *method, const char *unit, const char *mode, BusJob *ret, Error **err) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL;
        int r = bus_manager_new_call(bus, method, &m, err);
        if (r >= 0 && (r = sd_bus_message_append(m, "ss", unit, mode)) < 0)
                r = error_sys(err, r, "%s: %s", method, unit);
        return r < 0 ? r : bus_job_start_call(bus, m, unit, ret, err);
}

void bus_job_done(BusJob *j) {
        sd_bus_slot_unref(j->slot);
        sd_bus_unref(j->bus);
        free(j->unit);
        free(j->path);
        free(j->result);
        *j = (BusJob) {};
}

int bus_job_wait(BusJob *j, uint64_t timeout_usec, Error **err) {
        uint64_t deadline = timeout_usec ? monotonic_usec() + timeout_usec : UINT64_MAX;
        while (!j->result) {
                int r = sd_bus_process(j->bus, NULL);
                if (r < 0)
                        return error_sys(err, r, "%s: waiting for its job", j->unit);
                if (r > 0)
                        continue;
                uint64_t now = monotonic_usec();
                if (now >= deadline)
                        return -ETIMEDOUT;
                r = sd_bus_wait(j->bus, deadline == UINT64_MAX ? UINT64_MAX : deadline - now);
                if (r < 0)
                        return error_sys(err, r, "%s: waiting for its job", j->unit);
        }
        static const struct { const char *result; int code; const char *what; } map[] = {
                { "done", 0, NULL },
                { "skipped", 0, NULL },
                { "failed", -EIO, "failed" },
                { "timeout", -ETIME, "timed out" },
                { "canceled", -ECANCELED, "was canceled (another job replaced it)" },
                { "dependency", -ENOLINK, "failed: a unit it depends on failed" },
        };
        for (size_t i = 0; i < ELEMENTSOF(map); i++)
                if (streq(j->result, map[i].result))
                        return map[i].code == 0 ? 0 : error_set(err, map[i].code, "%s: job %s", j->unit, map[i].what);
        return error_set(err, -EPROTO, "%s: job ended with \"%s\"", j->unit, j->result);
}

char *bus_unit_path(const char *unit) {
        char *path = NULL;
        return sd_bus_path_encode(SYSTEMD_PATH "/unit", unit, &path) < 0 ? NULL : path;
}

int bus_unit_state(sd_bus *bus, const char *unit, UnitState *ret, Error **err) {
        _cleanup_free_ char *path = NULL;
        int r = sd_bus_path_encode(SYSTEMD_PATH "/unit", unit, &path);
        if (r < 0)
                return error_sys(err, r, "%s", unit);
        UnitState st = {};
        sd_bus_error e = SD_BUS_ERROR_NULL;
        const struct { const char *name; char *buf; size_t size; } strings[] = {
                { "LoadState", st.load_state, sizeof(st.load_state) },
                { "ActiveState", st.active_state, sizeof(st.active_state) },
                { "SubState", st.sub_state, sizeof(st.sub_state) },
        };
        for (size_t i = 0; i < ELEMENTSOF(strings) && r >= 0; i++) {
                char *v = NULL;
                r = sd_bus_get_property_string(bus, SYSTEMD_DEST, path, UNIT_IFACE, strings[i].name, &e, &v);
                if (r >= 0)
                        snprintf(strings[i].buf, strings[i].size, "%s", v);
                free(v);
        }
        /* A unit that is not loaded has no Service interface. */
        if (r >= 0 && streq(st.load_state, "loaded") &&
            (r = sd_bus_get_property_trivial(bus, SYSTEMD_DEST, path, SERVICE_IFACE, "ExecMainStartTimestamp", &e,
                                             't', &st.started_usec)) >= 0)
                r = sd_bus_get_property_trivial(bus, SYSTEMD_DEST, path, SERVICE_IFACE, "ExecMainExitTimestamp", &e,
                                                't', &st.exited_usec);
        if (r < 0) {
                r = bus_error(err, r, &e, unit);
                sd_bus_error_free(&e);
                return r;
        }
        *ret = st;
        return 0;
}
