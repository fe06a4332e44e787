/* SPDX-License-Identifier: Apache-2.0 */
#include <systemd/sd-bus.h>
#include <systemd/sd-login.h>

#include "basic/strv.h"
#include "pod/pod-ref.h"
#include "pod/pod-replace.h"

int pod_remove_named(PodStore *ps, const char *name, char ***ret_removed, Error **err) {
        /* The names are collected first and the pods removed after the
         * walk: removing renames entries of the directories it reads. */
        _cleanup_free_ PodNamed *found = NULL;
        _cleanup_strv_free_ char **removed = NULL, **uuids = NULL;
        size_t n;
        int r = pod_find_named(ps, name, &found, &n, err);
        if (r < 0)
                return r;
        for (size_t i = 0; i < n; i++) {
                switch (found[i].state) {
                case POD_STATE_RUNNING:
                case POD_STATE_PREPARING:
                        return error_set(err, -EBUSY, "a pod named %s is %s already: %s (stop it first)", name,
                                         pod_state_to_string(found[i].state), found[i].uuid);
                case POD_STATE_EXITED_DELETING:
                case POD_STATE_PREPARE_FAILED_DELETING:
                        continue; /* being deleted already */
                default:
                        if (strv_push(&uuids, found[i].uuid) < 0)
                                return error_sys(err, -ENOMEM, "pods named %s", name);
                }
        }
        for (char **u = uuids; u && *u; u++) {
                _cleanup_pod_ Pod *p = NULL;
                Error *e = NULL;
                r = pod_lookup(ps, *u, &p, &e);
                if (r >= 0 && (p->state == POD_STATE_RUNNING || p->state == POD_STATE_PREPARING)) {
                        error_free(e);
                        return error_set(err, -EBUSY, "a pod named %s is %s already: %s (stop it first)", name,
                                         pod_state_to_string(p->state), p->uuid);
                }
                r = r < 0 ? r : pod_remove(ps, p, &e);
                if (r == -ENOENT) {
                        error_free(e);
                        continue; /* removed by someone else meanwhile: fine */
                }
                if (r < 0) {
                        if (!err || *err) {
                                error_free(e);
                                return r;
                        }
                        *err = e;
                        return error_prefix(err, "removing the earlier pod named %s", name);
                }
                if (strv_push(&removed, *u) < 0)
                        return error_sys(err, -ENOMEM, "pods named %s", name);
        }
        if (ret_removed)
                *ret_removed = TAKE_PTR(removed);
        return 0;
}

#define MACHINED "org.freedesktop.machine1"
#define MACHINED_PATH "/org/freedesktop/machine1"
#define MACHINED_MANAGER "org.freedesktop.machine1.Manager"

static void bus_error_freep(sd_bus_error *e) { sd_bus_error_free(e); }

int pod_machine_release_stale(const char *name, Error **err) {
        _cleanup_free_ char *own_unit = NULL, *machine_unit = NULL;
        if (sd_pid_get_unit(0, &own_unit) < 0)
                return 0;
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        if (sd_bus_open_system(&bus) < 0)
                return 0;
        _cleanup_(bus_error_freep) sd_bus_error e = SD_BUS_ERROR_NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        const char *path;
        /* No such machine, or no machined: nothing to release. */
        if (sd_bus_call_method(bus, MACHINED, MACHINED_PATH, MACHINED_MANAGER, "GetMachine", &e, &reply, "s", name) < 0 ||
            sd_bus_message_read(reply, "o", &path) < 0)
                return 0;
        int r = sd_bus_get_property_string(bus, MACHINED, path, "org.freedesktop.machine1.Machine", "Unit", &e,
                                           &machine_unit);
        if (r < 0)
                return error_set(err, r, "machine %s: cannot read its unit: %s", name, e.message ?: strerror(-r));
        if (!streq(machine_unit, own_unit))
                return 0;
        sd_bus_error_free(&e);
        r = sd_bus_call_method(bus, MACHINED, MACHINED_PATH, MACHINED_MANAGER, "UnregisterMachine", &e, NULL, "s", name);
        if (r < 0 && !sd_bus_error_has_name(&e, "org.freedesktop.machine1.NoSuchMachine"))
                return error_set(err, r, "machine %s of %s, whose pod has ended: cannot unregister it: %s", name,
                                 own_unit, e.message ?: strerror(-r));
        return r < 0 ? 0 : 1;
}
