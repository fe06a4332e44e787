/* SPDX-License-Identifier: Apache-2.0 */
#include <systemd/sd-bus.h>
#include <systemd/sd-login.h>

#include "basic/strv.h"
#include "pod/pod-info.h"
#include "pod/pod-replace.h"

typedef struct NamedPods {
        const char *name;
        char **uuids;           /* the pods to remove */
        char busy[UUID_STRING_MAX];     /* one that runs or is being prepared */
        PodState busy_state;
} NamedPods;

static int collect_named(PodStore *s, Pod *p, void *userdata) {
        NamedPods *c = userdata;
        PodInfo info;
        int r = pod_info_read(p, false, &info);
        if (r < 0)
                return r;
        bool match = streq_ptr(pod_info_name(&info), c->name);
        pod_info_done(&info);
        if (!match)
                return 0;
        switch (p->state) {
        case POD_STATE_RUNNING:
        case POD_STATE_PREPARING:
                snprintf(c->busy, sizeof(c->busy), "%s", p->uuid);
                c->busy_state = p->state;
                return 0;
        case POD_STATE_EXITED_DELETING:
        case POD_STATE_PREPARE_FAILED_DELETING:
                return 0; /* being deleted already */
        default:
                return strv_push(&c->uuids, p->uuid);
        }
}

int pod_remove_named(PodStore *ps, const char *name, char ***ret_removed, Error **err) {
        /* The names are collected first and the pods removed after the
         * walk: removing renames entries of the directories it reads. */
        NamedPods c = { .name = name };
        _cleanup_strv_free_ char **removed = NULL;
        int r = pod_foreach(ps, collect_named, &c, err);
        _cleanup_strv_free_ char **uuids = c.uuids;
        if (r < 0)
                return r == -ENOMEM ? error_sys(err, r, "pods named %s", name) : r;
        if (c.busy[0])
                return error_set(err, -EBUSY, "a pod named %s is %s already: %s (stop it first)", name,
                                 pod_state_to_string(c.busy_state), c.busy);
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
