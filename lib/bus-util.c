/* SPDX-License-Identifier: Apache-2.0 */
#include <signal.h>
#include <sys/wait.h>

#include "bus-util.h"
#include "macro.h"

#define SYSTEMD_DEST "org.freedesktop.systemd1"
#define SYSTEMD_PATH "/org/freedesktop/systemd1"
#define MANAGER_IFACE "org.freedesktop.systemd1.Manager"
#define SERVICE_IFACE "org.freedesktop.systemd1.Service"

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
        char *result = NULL;
        if ((r = sd_bus_get_property_trivial(bus, SYSTEMD_DEST, path, SERVICE_IFACE, "ExecMainCode", &e, 'i', &code)) < 0 ||
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
                .failed = !streq(result, "success"),
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

static int manager_call(sd_bus *bus, const char *method, Error **err, const char *types, ...) {
        sd_bus_error e = SD_BUS_ERROR_NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL, *reply = NULL;
        int r = sd_bus_message_new_method_call(bus, &m, SYSTEMD_DEST, SYSTEMD_PATH, MANAGER_IFACE, method);
        if (r >= 0 && types) {
                va_list ap;
                va_start(ap, types);
                r = sd_bus_message_appendv(m, types, ap);
                va_end(ap);
        }
        if (r >= 0)
                r = sd_bus_call(bus, m, 0, &e, &reply);
        if (r < 0)
                r = bus_error(err, r, &e, method);
        sd_bus_error_free(&e);
        return r < 0 ? r : 0;
}

int bus_manager_set_exit_code(sd_bus *bus, uint8_t code, Error **err) {
        return manager_call(bus, "SetExitCode", err, "y", code);
}

int bus_manager_exit(sd_bus *bus, Error **err) {
        return manager_call(bus, "Exit", err, NULL);
}
