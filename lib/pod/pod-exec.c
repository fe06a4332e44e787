/* SPDX-License-Identifier: Apache-2.0 */
#include <poll.h>
#include <signal.h>
#include <sys/signalfd.h>

#include "basic/fs.h"
#include "bus/bus-util.h"
#include "pod/pod-exec.h"

/* The signals a caller at a terminal sends the command it waits for. */
static const int forwarded_signals[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT };

/* StartTransientUnit(name, "fail", properties, aux): the command, its
 * stdio (the caller's fds, which sd-bus duplicates into the message) and
 * extra environment. Everything else comes from the template's drop-in. */
static int append_properties(sd_bus_message *m, const char *unit, const PodExec *x) {
        int r = sd_bus_message_append(m, "ss", unit, "fail");
        if (r < 0 || (r = sd_bus_message_open_container(m, 'a', "(sv)")) < 0)
                return r;
        if ((r = sd_bus_message_append(m, "(sv)", "Description", "s", "sdpod enter / podapp exec")) < 0 ||
            /* The unit keeps how it ended until we have read it (AddRef=
             * would tie that to our connection, but systemd refuses it on
             * a direct one): active (exited) or failed, until we stop or
             * reset it. */
            (r = sd_bus_message_append(m, "(sv)", "RemainAfterExit", "b", 1)) < 0 ||
            (r = sd_bus_message_append(m, "(sv)", "StandardInputFileDescriptor", "h", 0)) < 0 ||
            (r = sd_bus_message_append(m, "(sv)", "StandardOutputFileDescriptor", "h", 1)) < 0 ||
            (r = sd_bus_message_append(m, "(sv)", "StandardErrorFileDescriptor", "h", 2)) < 0)
                return r;
        if (x->environment && x->environment[0]) {
                if ((r = sd_bus_message_open_container(m, 'r', "sv")) < 0 ||
                    (r = sd_bus_message_append(m, "s", "Environment")) < 0 ||
                    (r = sd_bus_message_open_container(m, 'v', "as")) < 0 ||
                    (r = sd_bus_message_append_strv(m, (char **) x->environment)) < 0 ||
                    (r = sd_bus_message_close_container(m)) < 0 || (r = sd_bus_message_close_container(m)) < 0)
                        return r;
        }
        /* ExecStartEx: a(sasas), one command: path, argv, flags. The
         * arguments are the caller's, verbatim: systemd would expand $VAR
         * in them but for "no-env-expand". */
        if ((r = sd_bus_message_open_container(m, 'r', "sv")) < 0 ||
            (r = sd_bus_message_append(m, "s", "ExecStartEx")) < 0 ||
            (r = sd_bus_message_open_container(m, 'v', "a(sasas)")) < 0 ||
            (r = sd_bus_message_open_container(m, 'a', "(sasas)")) < 0 ||
            (r = sd_bus_message_open_container(m, 'r', "sasas")) < 0 ||
            (r = sd_bus_message_append(m, "s", x->path)) < 0 ||
            (r = sd_bus_message_append_strv(m, (char **) x->argv)) < 0 ||
            (r = sd_bus_message_append(m, "as", 1, "no-env-expand")) < 0)
                return r;
        for (int i = 0; i < 5; i++)
                if ((r = sd_bus_message_close_container(m)) < 0)
                        return r;
        return sd_bus_message_append(m, "a(sa(sv))", 0);
}

static int on_properties_changed(sd_bus_message *m, void *userdata, sd_bus_error *e) {
        *(bool *) userdata = true;
        return 0;
}

static bool unit_has_ended(const UnitState *st) {
        return streq(st->active_state, "inactive") || streq(st->active_state, "failed") ||
               (streq(st->active_state, "active") && streq(st->sub_state, "exited"));
}

/* Lets the pod's systemd forget the unit, now that we know how it ended. */
static void forget_unit(sd_bus *bus, const char *unit) {
        UnitState st;
        BusJob job;
        if (bus_unit_state(bus, unit, &st, NULL) < 0)
                return;
        if (streq(st.active_state, "failed"))
                (void) bus_unit_reset_failed(bus, unit, NULL);
        else if (streq(st.active_state, "active") && bus_job_start(bus, "StopUnit", unit, "replace", &job, NULL) >= 0) {
                (void) bus_job_wait(&job, 0, NULL);
                bus_job_done(&job);
        }
}

/* Waits until unit has ended; a signal of forwarded_signals that arrives
 * meanwhile (on sigfd) goes to its main process. */
static int wait_for_end(sd_bus *bus, const char *unit, int sigfd, Error **err) {
        _cleanup_free_ char *path = bus_unit_path(unit);
        _cleanup_(sd_bus_slot_unrefp) sd_bus_slot *slot = NULL;
        bool changed = true;
        int r = path ? sd_bus_match_signal(bus, &slot, NULL, path, "org.freedesktop.DBus.Properties",
                                           "PropertiesChanged", on_properties_changed, &changed)
                     : -ENOMEM;
        if (r < 0)
                return error_sys(err, r, "%s", unit);
        for (;;) {
                if (changed) {
                        UnitState st;
                        changed = false;
                        if ((r = bus_unit_state(bus, unit, &st, err)) < 0)
                                return r;
                        if (unit_has_ended(&st))
                                return 0;
                }
                if ((r = sd_bus_process(bus, NULL)) < 0)
                        return error_sys(err, r, "%s", unit);
                if (r > 0)
                        continue;
                struct pollfd p[] = { { sd_bus_get_fd(bus), (short) sd_bus_get_events(bus), 0 }, { sigfd, POLLIN, 0 } };
                if (poll(p, ELEMENTSOF(p), -1) < 0 && errno != EINTR)
                        return error_sys(err, -errno, "%s", unit);
                struct signalfd_siginfo si;
                if ((p[1].revents & POLLIN) && read(sigfd, &si, sizeof(si)) == sizeof(si))
                        (void) bus_unit_kill(bus, unit, "main", (int) si.ssi_signo, NULL);
        }
}

int pod_exec(sd_bus *bus, const PodExec *x, int *ret_status, Error **err) {
        char id[32], unit[256];
        random_name(id, sizeof(id), "");
        snprintf(unit, sizeof(unit), x->mode == APP_EXEC_AS_ROOT ? APP_ENTER_UNIT_FORMAT : APP_EXEC_UNIT_FORMAT,
                 x->app, id);

        /* The signals are ours to pass on from now: blocked, read from a
         * signalfd while we wait. */
        sigset_t mask, old;
        sigemptyset(&mask);
        for (size_t i = 0; i < ELEMENTSOF(forwarded_signals); i++)
                sigaddset(&mask, forwarded_signals[i]);
        if (sigprocmask(SIG_BLOCK, &mask, &old) < 0)
                return error_sys(err, -errno, "app %s", x->app);
        _cleanup_close_ int sigfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL;
        BusJob job = {};
        int r = sigfd < 0 ? error_sys(err, -errno, "app %s: signalfd", x->app) : 0;
        if (r >= 0 && (r = bus_manager_new_call(bus, "StartTransientUnit", &m, err)) >= 0 &&
            (r = append_properties(m, unit, x)) < 0)
                r = error_sys(err, r, "%s", unit);
        if (r >= 0 && (r = bus_job_start_call(bus, m, unit, &job, err)) >= 0) {
                r = bus_job_wait(&job, 0, err);
                bus_job_done(&job);
                /* A failed start job still tells how the command ended. */
                if (r == -EIO && err && *err)
                        error_free(TAKE_PTR(*err));
                r = r == -EIO ? 0 : r;
        }
        if (r >= 0)
                r = wait_for_end(bus, unit, sigfd, err);
        ServiceExit e;
        if (r >= 0 && (r = bus_service_exit(bus, unit, &e, err)) >= 0) {
                forget_unit(bus, unit);
                if (e.not_executed)
                        r = error_set(err, -EPROTO, "app %s: the command could not be run (status %d, %s: a step of "
                                      "systemd before it failed, see the pod's journal)",
                                      x->app, e.exit_status, e.result);
                else if (!e.exited)
                        r = error_set(err, -EPROTO, "app %s: the command did not run (%s)", x->app, e.result);
                else
                        *ret_status = e.exit_status;
        }
        sigprocmask(SIG_SETMASK, &old, NULL);
        return r;
}
