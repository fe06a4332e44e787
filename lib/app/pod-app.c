/* SPDX-License-Identifier: Apache-2.0 */
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>

#include "app/pod-app.h"
#include "basic/crash-point.h"
#include "basic/fs.h"
#include "basic/lock.h"
#include "basic/time-util.h"
#include "basic/warn.h"
#include "bus/bus-util.h"
#include "bus/pod-bus.h"
#include "manifest/pod-manifest.h"
#include "pod/stage1.h"
#include "pod/pod-app-root.h"
#include "pod/pod-info.h"
#include "pod/pod-prepare.h"
#include "pod/pod-process.h"
#include "pod/pod-stats.h"
#include "pod/pod-userns.h"
#include "unit/app-unit.h"

/* apps/NAME/deleting: podapp rm is removing the app (or crashed doing so). */
#define APP_DELETING "deleting"

/* How long a start may take before we stop waiting (its job goes on). */
#define APP_START_TIMEOUT_USEC (90 * 1000000ULL)

static const char *const app_state_names[_APP_STATE_MAX] = {
        [APP_STATE_UNKNOWN] = "unknown",
        [APP_STATE_PREPARING] = "preparing",
        [APP_STATE_PREPARED] = "prepared",
        [APP_STATE_RUNNING] = "running",
        [APP_STATE_STOPPING] = "stopping",
        [APP_STATE_EXITED] = "exited",
        [APP_STATE_DELETING] = "deleting",
};

const char *app_state_to_string(AppState s) {
        return s >= 0 && s < _APP_STATE_MAX ? app_state_names[s] : NULL;
}

void app_status_done(AppStatus *s) {
        free(s->name);
        *s = (AppStatus) {};
}

/* A pod as the app operations see it. */
typedef struct AppPod {
        PodStore *store;
        Pod *pod;
        char *path;
        PodManifest *manifest;
        bool running;
        PodProcess proc;        /* running only */
        sd_bus *bus;            /* running only: the pod's systemd */
} AppPod;

static void app_pod_done(AppPod *ap) {
        free(ap->path);
        pod_manifest_free(ap->manifest);
        if (ap->running)
                pod_process_done(&ap->proc);
        sd_bus_flush_close_unref(ap->bus);
        *ap = (AppPod) {};
}

typedef enum Need {
        NEED_NOTHING = 0,
        NEED_RUNNING = 1 << 0,
        NEED_MUTABLE = 1 << 1,
} Need;

static int explain_exit(AppPod *ap, int r, Error **err);

static int app_pod_open(PodStore *ps, Pod *p, Need need, AppPod *ret, Error **err) {
        _cleanup_(app_pod_done) AppPod ap = { .store = ps, .pod = p, .proc.nspawn_pidfd = -1 };
        int r = pod_refresh(ps, p, err);
        if (r < 0)
                return r;
        if (!(ap.path = pod_path(ps, p)))
                return error_sys(err, -ENOMEM, "pod %s", p->uuid);
        ap.running = p->state == POD_STATE_RUNNING;
        if ((need & NEED_RUNNING) && !ap.running)
                return error_set(err, -ESRCH, "pod %s is not running (it is %s)", p->uuid, pod_state_to_string(p->state));
        if ((r = pod_manifest_read_at(p->fd, "pod", "pod manifest", &ap.manifest, err)) < 0)
                return error_prefix(err, "pod %s", p->uuid);
        char flavor[32];
        if ((need & (NEED_RUNNING | NEED_MUTABLE)) && streq(stage1_flavor_of(p->fd, flavor), STAGE1_FLAVOR_FLY))
                return error_set(err, -EOPNOTSUPP, "pod %s is of the fly flavor, which runs its one app with no "
                                 "systemd to add, start or stop apps: podapp needs --stage1=nspawn", p->uuid);
        if ((need & (NEED_RUNNING | NEED_MUTABLE)) && streq(flavor, STAGE1_FLAVOR_KVM))
                return error_set(err, -EOPNOTSUPP, "pod %s is of the kvm flavor, whose systemd in the VM podapp "
                                 "cannot reach yet: podapp needs --stage1=nspawn", p->uuid);
        if (need & NEED_MUTABLE) {
                PodGraph graph;
                if ((r = pod_graph_from_manifest(ap.manifest, &graph, err)) < 0)
                        return error_prefix(err, "pod %s", p->uuid);
                if (!(graph & POD_GRAPH_MUTABLE))
                        return error_set(err, -EOPNOTSUPP, "pod %s is not mutable: apps are added to and removed "
                                         "from pods made with 'podapp sandbox' or --mutable (the apps of any pod are started "
                                         "and stopped)", p->uuid);
        }
        if (ap.running) {
                r = pod_process_find(p->fd, p->uuid, &ap.proc, err);
                if (r == -ESRCH) {
                        /* It exited since we looked. */
                        ap.running = false;
                        if (need & NEED_RUNNING)
                                return r;
                        if (err) {
                                error_free(*err);
                                *err = NULL;
                        }
                } else if (r < 0)
                        return r;
                else if (ap.proc.leader <= 0)
                        return error_set(err, -EBUSY, "pod %s is still starting", p->uuid);
                else if ((r = pod_bus_open(ap.proc.leader, &ap.bus, err)) < 0)
                        return explain_exit(&ap, error_prefix(err, "pod %s", p->uuid), err);
        }
        *ret = ap;
        ap = (AppPod) { .proc.nspawn_pidfd = -1 };
        return 0;
}

/* A failure that may come from the pod ending under us: say so. A lost
 * connection to its systemd, or its PID 1 exiting or gone, means it is
 * going away while nspawn may still hold the lock a moment: give it that
 * moment. */
static int explain_exit(AppPod *ap, int r, Error **err) {
        _cleanup_error_ Error *ignored = NULL;
        if (r >= 0 || !ap->running)
                return r;
        int code = err && *err ? (*err)->code : r;
        if (code == -ESRCH)
                return r; /* said already: the pod is not running */
        bool gone = code == -ECONNRESET || code == -ENOTCONN || code == -EPIPE ||
                !pod_leader_alive(&ap->proc);
        if ((gone ? pod_wait(ap->store, ap->pod, 5 * USEC_PER_SEC, &ignored) : pod_refresh(ap->store, ap->pod, &ignored)) == -ENOENT ||
            ap->pod->state != POD_STATE_RUNNING) {
                error_prefix(err, "pod %s exited meanwhile", ap->pod->uuid);
                if (err && *err)
                        (*err)->code = -ESRCH;
                return -ESRCH;
        }
        return r;
}

static void app_unit(const char *app, char unit[static 128]) {
        snprintf(unit, 128, APP_UNIT_FORMAT, app);
}

/* apps/NAME/FILE of the pod directory */
static void app_file(const char *app, const char *file, char path[static 128]) {
        snprintf(path, 128, POD_APP_DIR "/%s%s%s", app, file ? "/" : "", strempty(file));
}

static int touch_app_file(AppPod *ap, const char *app, const char *file, Error **err) {
        char path[128];
        app_file(app, file, path);
        _cleanup_close_ int fd = open_beneath_no_symlinks(ap->pod->fd, path, O_WRONLY | O_CREAT | O_NOFOLLOW | O_NOCTTY, 0644);
        return fd < 0 ? error_sys(err, fd, "pod %s: %s", ap->pod->uuid, path) : 0;
}

static bool has_app_file(AppPod *ap, const char *app, const char *file) {
        char path[128];
        app_file(app, file, path);
        return exists_beneath(ap->pod->fd, path);
}

static int unlink_pod_file(AppPod *ap, const char *path, Error **err) {
        int r = unlink_beneath(ap->pod->fd, path, 0);
        return r < 0 ? error_sys(err, r, "pod %s: %s", ap->pod->uuid, path) : 0;
}

static int unlink_app_file(AppPod *ap, const char *app, const char *file, Error **err) {
        char path[128];
        app_file(app, file, path);
        return unlink_pod_file(ap, path, err);
}

/* Its exit status and the record of its restarts. */
static int unlink_app_status(AppPod *ap, const char *app, Error **err) {
        char path[128];
        snprintf(path, sizeof(path), POD_APP_STATUS_DIR "/%s", app);
        int r = unlink_pod_file(ap, path, err);
        snprintf(path, sizeof(path), POD_APP_STATUS_DIR "/%s" POD_APP_RESTARTS_SUFFIX, app);
        return r < 0 ? r : unlink_pod_file(ap, path, err);
}

/* The app's records, reserved before it runs (pod-info.h). */
static int reserve_app_records(AppPod *ap, const char *app, Error **err) {
        _cleanup_close_ int fd = open_beneath_no_symlinks(ap->pod->fd, POD_APP_STATUS_DIR,
                                                          O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
        const PodApp *a = pod_manifest_find_app(ap->manifest, app);
        int r = fd < 0 ? error_sys(err, fd, POD_APP_STATUS_DIR)
                : !a   ? error_set(err, -ENOENT, "no app %s", app)
                       : pod_app_records_reserve_at(fd, ap->manifest, a, err);
        return r < 0 ? error_prefix(err, "app %s", app) : 0;
}

/* What the pod recorded of the app: its exit status and when, its restarts
 * (each left alone when there is none, or it is not one: sdpod status warns
 * about that). */
static void read_app_records(AppPod *ap, const char *app, PodAppExit *ret) {
        _cleanup_close_ int fd = open_beneath_no_symlinks(ap->pod->fd, POD_APP_STATUS_DIR,
                                                          O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
        if (fd < 0)
                return;
        (void) pod_app_exit_read_at(fd, app, ret);
        (void) pod_app_restarts_read_at(fd, app, ret);
        if (ret->health)
                ret->health = pod_app_health_shown(fd, app, ap->pod->state == POD_STATE_RUNNING, ret);
}

/* Takes pod.lck with operation; -EBUSY cannot happen (it waits). */
static int lock_apps(Pod *p, int operation, int *ret, Error **err) {
        int fd = lock_file_at(p->fd, POD_APPS_LOCK, operation);
        if (fd < 0)
                return error_sys(err, fd, "pod %s: cannot lock %s", p->uuid, POD_APPS_LOCK);
        *ret = fd;
        return 0;
}

static int reload(AppPod *ap, Error **err) {
        int r = bus_manager_reload(ap->bus, err);
        return r < 0 ? explain_exit(ap, error_prefix(err, "pod %s: reloading its systemd", ap->pod->uuid), err) : 0;
}

static int write_manifest(AppPod *ap, Error **err) {
        int r = pod_manifest_write_at(ap->pod->fd, "pod", ap->manifest, err);
        return r < 0 ? error_prefix(err, "pod %s", ap->pod->uuid) : 0;
}

/* Everything of the app but its manifest entry: its exit status, its root
 * (unmounted in the pod), its directory. */
static int remove_app_resources(AppPod *ap, const char *app, Error **err) {
        char dir[128];
        app_file(app, NULL, dir);
        int r = unlink_app_status(ap, app, err);
        if (r >= 0 && ap->running)
                r = pod_app_root_unmount(&ap->proc, ap->path, app, err);
        if (r < 0)
                return explain_exit(ap, r, err);
        /* Also where add clears what a crashed add or rm left. */
        crash_point(CRASH_RM_UNMOUNTED);
        if ((r = rm_rf_beneath(ap->pod->fd, dir)) < 0 && r != -ENOENT)
                return error_sys(err, r, "pod %s: cannot remove %s", ap->pod->uuid, dir);
        return 0;
}

int pod_app_add(PodStore *ps, Pod *p, ImageStore *is, const AppArgs *a, Error **err) {
        if (!a->name)
                return error_set(err, -EINVAL, "the app needs a name: --app=NAME");
        _cleanup_close_ int lock = -1;
        _cleanup_(app_pod_done) AppPod ap = { .proc.nspawn_pidfd = -1 };
        int r = lock_apps(p, LOCK_EX, &lock, err);
        if (r < 0 || (r = app_pod_open(ps, p, NEED_RUNNING | NEED_MUTABLE, &ap, err)) < 0)
                return r;
        crash_point(CRASH_ADD_LOCKED);
        if (pod_manifest_find_app(ap.manifest, a->name))
                return error_set(err, -EEXIST, "pod %s already has an app %s", p->uuid, a->name);

        char created[32];
        format_timestamp(now_usec(), created);
        PodUserns u;
        if ((r = pod_userns_from_manifest(ap.manifest, &u, err)) < 0)
                return error_prefix(err, "pod %s", p->uuid);
        if ((r = pod_manifest_add_app_from_args(is, ap.manifest, a, created, err)) < 0)
                return r;
        const PodApp *app = pod_manifest_find_app(ap.manifest, a->name);

        /* What is there of an app not in the manifest was left by a crashed
         * add or rm: it goes first. */
        if ((r = remove_app_resources(&ap, app->name, err)) < 0 ||
            (r = pod_render_app(p->fd, is, app, pod_userns_root(&u), err)) < 0 ||
            (crash_point(CRASH_ADD_RENDERED), r = pod_app_root_mount(&ap.proc, ap.path, ps->root, app, u.enabled,
                                                                      pod_userns_root(&u), err)) < 0 ||
            (r = reserve_app_records(&ap, app->name, err)) < 0) {
                _cleanup_error_ Error *ignored = NULL;
                (void) remove_app_resources(&ap, app->name, &ignored);
                return explain_exit(&ap, error_prefix(err, "pod %s", p->uuid), err);
        }
        crash_point(CRASH_ADD_MOUNTED);
        /* The pod's generator adds the app's ids to the pod's passwd on
         * the reload (pod-userdb.h). */
        if ((r = write_manifest(&ap, err)) < 0) {
                _cleanup_error_ Error *ignored = NULL;
                (void) remove_app_resources(&ap, a->name, &ignored);
                return explain_exit(&ap, error_prefix(err, "pod %s: app %s", p->uuid, a->name), err);
        }
        crash_point(CRASH_ADD_WRITTEN);
        /* In the manifest now: a failed reload leaves the app prepared for
         * the next one, as any later add or rm would do. */
        return reload(&ap, err);
}

/* What systemd says about the app's unit. */
static int app_unit_state(AppPod *ap, const char *app, UnitState *ret, Error **err) {
        char unit[128];
        app_unit(app, unit);
        int r = bus_unit_state(ap->bus, unit, ret, err);
        return r < 0 ? explain_exit(ap, error_prefix(err, "pod %s", ap->pod->uuid), err) : 0;
}

static bool unit_is_up(const UnitState *st) {
        return streq(st->active_state, "active") || streq(st->active_state, "activating") ||
                streq(st->active_state, "reloading");
}

static int need_app(AppPod *ap, const char *app, Error **err) {
        if (!pod_manifest_find_app(ap->manifest, app))
                return error_set(err, -ENOENT, "pod %s has no app %s", ap->pod->uuid, app);
        if (has_app_file(ap, app, APP_DELETING))
                return error_set(err, -EBUSY, "pod %s: app %s is being removed", ap->pod->uuid, app);
        return 0;
}

/* Runs a job of the pod's systemd and waits for it, timeout_usec at most. */
static int run_job(AppPod *ap, const char *method, const char *unit, uint64_t timeout_usec, Error **err) {
        BusJob job;
        int r = bus_job_start(ap->bus, method, unit, "replace", &job, err);
        if (r >= 0) {
                r = bus_job_wait(&job, timeout_usec, err);
                if (r == -ETIMEDOUT)
                        r = error_set(err, r, "%s: still not done after %llu s", unit,
                                      (unsigned long long) (timeout_usec / USEC_PER_SEC));
                bus_job_done(&job);
        }
        return r < 0 ? explain_exit(ap, error_prefix(err, "pod %s", ap->pod->uuid), err) : 0;
}

/* The state of the unit of an app the manifest names. An add that died
 * between its manifest rewrite and its reload left the app without units:
 * the reload it did not do comes first. */
static int loaded_app_unit_state(AppPod *ap, const char *app, UnitState *st, Error **err) {
        int r = app_unit_state(ap, app, st, err);
        if (r < 0 || !streq(st->load_state, "not-found"))
                return r;
        return (r = reload(ap, err)) < 0 ? r : app_unit_state(ap, app, st, err);
}

/* For start and stop: pod.lck shared, the running pod (mutable or not: an
 * immutable pod keeps its apps, but one may be stopped and started), the app
 * and its unit's state. */
static int open_for_app(PodStore *ps, Pod *p, const char *app, int *lock, AppPod *ap, UnitState *st, Error **err) {
        int r = lock_apps(p, LOCK_SH, lock, err);
        if (r < 0 || (r = app_pod_open(ps, p, NEED_RUNNING, ap, err)) < 0 || (r = need_app(ap, app, err)) < 0)
                return r;
        return loaded_app_unit_state(ap, app, st, err);
}

/* A start job of a Type=exec unit fails also when the program ran and
 * exited with a failure before systemd saw its exec succeed: a race that a
 * program exiting at once wins or loses by chance. Such an app has started
 * as much as one that exits a moment later, and its reaper records its exit
 * status all the same: the start succeeds. It fails when the program never
 * ran: with r and the job's error in *err, or with systemd's status for the
 * step before the program that failed. */
static int check_failed_start(AppPod *ap, const char *app, const char *unit, uint64_t last_start_usec, int r,
                              Error **err) {
        _cleanup_error_ Error *ignored = NULL;
        UnitState st;
        ServiceExit x;
        if (bus_unit_state(ap->bus, unit, &st, &ignored) < 0 || bus_service_exit(ap->bus, unit, &x, &ignored) < 0 ||
            st.started_usec == last_start_usec || !x.exited)
                return r;   /* no new main process */
        if (x.not_executed)
                return error_prefix(err, "app %s: its program was not executed (status %d, %s: a step of "
                                    "systemd before it failed, see the pod's journal)", app, x.exit_status, x.result);
        if (err) {
                error_free(*err);
                *err = NULL;
        }
        return 0;
}

int pod_app_start(PodStore *ps, Pod *p, const char *app, Error **err) {
        _cleanup_close_ int lock = -1;
        _cleanup_(app_pod_done) AppPod ap = { .proc.nspawn_pidfd = -1 };
        UnitState st;
        int r = open_for_app(ps, p, app, &lock, &ap, &st, err);
        if (r < 0)
                return r;
        if (unit_is_up(&st))
                return 1;
        /* A new run: the last one's stop request and record go. */
        if ((r = unlink_app_file(&ap, app, POD_APP_STOP_REQUESTED, err)) < 0 ||
            (r = unlink_app_status(&ap, app, err)) < 0)
                return r;
        if ((r = reserve_app_records(&ap, app, err)) < 0)
                return error_prefix(err, "pod %s", p->uuid);
        crash_point(CRASH_START_CLEARED);
        char unit[128];
        app_unit(app, unit);
        r = run_job(&ap, "StartUnit", unit, APP_START_TIMEOUT_USEC, err);
        return r == -EIO ? check_failed_start(&ap, app, unit, st.started_usec, r, err) : r;
}

#define APP_STOP_SLACK_USEC (2 * 1000000ULL)

/* Asks the app to stop and waits until its reaper has recorded its exit
 * status. The stop request marks it first, so that its failure (its own
 * exit status on SIGTERM, or SIGKILL) does not halt the pod. */
static int stop_app(AppPod *ap, const char *app, uint64_t grace_usec, Error **err) {
        char unit[128], reaper[128];
        app_unit(app, unit);
        snprintf(reaper, sizeof(reaper), REAPER_UNIT_FORMAT, app);
        int r = touch_app_file(ap, app, POD_APP_STOP_REQUESTED, err);
        if (r < 0)
                return r;
        /* systemd kills the app at the end of its unit's stop timeout
         * (TimeoutStopSec=, the app's --stop-timeout), which systemd 252
         * cannot change at runtime: a grace can be shorter, not longer. */
        const PodApp *a = pod_manifest_find_app(ap->manifest, app);
        _cleanup_(app_lifecycle_done) AppLifecycle l = {};
        uint64_t timeout_usec = a && app_lifecycle_of(ap->manifest, a, &l, NULL) >= 0 && l.stop_timeout_usec
                                        ? l.stop_timeout_usec
                                        : APP_STOP_GRACE_USEC;
        if (grace_usec != APP_GRACE_OWN && grace_usec > timeout_usec)
                warn("pod %s: app %s: its stop timeout, %llu ms, bounds the grace of %llu ms asked for "
                     "(give the app a longer --stop-timeout)",
                     ap->pod->uuid, app, (unsigned long long) (timeout_usec / 1000), (unsigned long long) (grace_usec / 1000));
        if (grace_usec > timeout_usec)
                grace_usec = timeout_usec;
        BusJob job;
        if ((r = bus_job_start(ap->bus, "StopUnit", unit, "replace", &job, err)) < 0)
                return explain_exit(ap, error_prefix(err, "pod %s", ap->pod->uuid), err);
        /* systemd kills it at the end of the grace; a little more, in case
         * the pod's systemd does not. */
        r = bus_job_wait(&job, grace_usec ? grace_usec + APP_STOP_SLACK_USEC : 1, err);
        if (r == -ETIMEDOUT) {
                /* The grace is over. */
                r = bus_unit_kill(ap->bus, unit, "all", SIGKILL, err);
                if (r >= 0)
                        r = bus_job_wait(&job, APP_START_TIMEOUT_USEC, err);
        }
        bus_job_done(&job);
        if (r < 0)
                return explain_exit(ap, error_prefix(err, "pod %s: stopping app %s", ap->pod->uuid, app), err);
        /* The reaper stops once the app no longer wants it: stopping it
         * ourselves joins that job, so the status is on disk when we return. */
        /* Bounded too: the pod's systemd may never say (stopped, hostile). */
        return run_job(ap, "StopUnit", reaper, APP_START_TIMEOUT_USEC, err);
}

int pod_app_stop(PodStore *ps, Pod *p, const char *app, uint64_t grace_usec, Error **err) {
        _cleanup_close_ int lock = -1;
        _cleanup_(app_pod_done) AppPod ap = { .proc.nspawn_pidfd = -1 };
        UnitState st;
        int r = open_for_app(ps, p, app, &lock, &ap, &st, err);
        if (r < 0)
                return r;
        bool was_up = unit_is_up(&st) || streq(st.active_state, "deactivating");
        r = stop_app(&ap, app, grace_usec, err);
        return r < 0 ? r : !was_up;
}

int pod_app_rm(PodStore *ps, Pod *p, const char *app, uint64_t grace_usec, Error **err) {
        _cleanup_close_ int lock = -1;
        _cleanup_(app_pod_done) AppPod ap = { .proc.nspawn_pidfd = -1 };
        int r = lock_apps(p, LOCK_EX, &lock, err);
        if (r < 0 || (r = app_pod_open(ps, p, NEED_RUNNING | NEED_MUTABLE, &ap, err)) < 0)
                return r;
        char dir[128];
        app_file(app, NULL, dir);
        if (!pod_manifest_find_app(ap.manifest, app)) {
                /* Only what an interrupted add or rm left, if anything. */
                if (!exists_beneath(p->fd, dir))
                        return error_set(err, -ENOENT, "pod %s has no app %s", p->uuid, app);
                return remove_app_resources(&ap, app, err);
        }
        UnitState st;
        if ((r = loaded_app_unit_state(&ap, app, &st, err)) < 0 || (r = touch_app_file(&ap, app, APP_DELETING, err)) < 0)
                return r;
        crash_point(CRASH_RM_MARKED);
        if ((r = stop_app(&ap, app, grace_usec, err)) < 0)
                return r;
        crash_point(CRASH_RM_STOPPED);
        if ((r = pod_manifest_remove_app(ap.manifest, app, err)) < 0 || (r = write_manifest(&ap, err)) < 0)
                return r;
        crash_point(CRASH_RM_WRITTEN);
        if ((r = reload(&ap, err)) < 0)
                return r;
        crash_point(CRASH_RM_RELOADED);
        return remove_app_resources(&ap, app, err);
}

static int parse_created(const PodApp *app, const PodManifest *m, uint64_t *ret) {
        const char *added = pod_app_get_annotation(app, POD_ANNOTATION_CREATED);
        if (added)
                return parse_timestamp(added, ret);
        /* An app the pod was prepared with. */
        const char *c = pod_manifest_get_annotation(m, POD_ANNOTATION_CREATED);
        return c ? parse_timestamp(c, ret) : -ENOENT;
}

static int app_status_of(AppPod *ap, const PodApp *app, AppStatus *ret, Error **err) {
        AppStatus s = { .name = strdup(app->name) };
        if (!s.name)
                return error_sys(err, -ENOMEM, "app %s", app->name);
        (void) parse_created(app, ap->manifest, &s.created_usec);
        /* An app with a health check is starting until a check says. */
        PodAppExit e = {
                .health = pod_app_get_annotation(app, APP_ANNOTATION_HEALTH_CMD)
                                  ? pod_app_health_to_string(POD_APP_HEALTH_STARTING)
                                  : NULL,
        };
        read_app_records(ap, app->name, &e);
        uint64_t recorded = e.exited_usec;
        s.exited = e.exited;
        s.exit_status = e.exit_status;
        s.restarts = e.restarts;
        s.restart_exit_status = e.restart_exit_status;
        s.health = e.health;
        if (has_app_file(ap, app->name, APP_DELETING))
                s.state = APP_STATE_DELETING;
        else if (!ap->running)
                s.state = s.exited ? APP_STATE_EXITED :
                        ap->pod->state == POD_STATE_PREPARED ? APP_STATE_PREPARED : APP_STATE_UNKNOWN;
        if (s.exited)
                s.exited_usec = recorded;
        if (ap->running) {
                UnitState st;
                int r = app_unit_state(ap, app->name, &st, err);
                if (r < 0) {
                        app_status_done(&s);
                        return r;
                }
                s.started_usec = st.started_usec;
                if (s.state == APP_STATE_DELETING)
                        ;
                else if (unit_is_up(&st))
                        s.state = APP_STATE_RUNNING;
                else if (streq(st.active_state, "deactivating"))
                        s.state = APP_STATE_STOPPING;
                else
                        s.state = s.exited ? APP_STATE_EXITED : APP_STATE_PREPARED;
                if (s.state == APP_STATE_EXITED && st.exited_usec)
                        s.exited_usec = st.exited_usec;
                if (s.state == APP_STATE_RUNNING || s.state == APP_STATE_STOPPING) {
                        /* A record of an earlier run is not this one's. */
                        s.exited = false;
                        s.exited_usec = 0;
                }
        }
        *ret = s;
        return 0;
}

int pod_app_status(PodStore *ps, Pod *p, const char *app, AppStatus *ret, Error **err) {
        _cleanup_(app_pod_done) AppPod ap = { .proc.nspawn_pidfd = -1 };
        int r = app_pod_open(ps, p, NEED_NOTHING, &ap, err);
        if (r < 0)
                return r;
        const PodApp *a = pod_manifest_find_app(ap.manifest, app);
        if (a)
                return app_status_of(&ap, a, ret, err);
        /* Not in the manifest: on its way in, or out. */
        char dir[128];
        app_file(app, NULL, dir);
        if (pod_app_name_is_valid(app) && exists_beneath(p->fd, dir)) {
                AppState state = APP_STATE_DELETING;
                if (!has_app_file(&ap, app, APP_DELETING)) {
                        /* Being added while pod.lck is taken; otherwise a
                         * crashed add's leftovers (rm removes them). */
                        _cleanup_close_ int lock = lock_file_at(p->fd, POD_APPS_LOCK, LOCK_SH | LOCK_NB);
                        state = lock == -EWOULDBLOCK ? APP_STATE_PREPARING : _APP_STATE_MAX;
                }
                if (state != _APP_STATE_MAX) {
                        *ret = (AppStatus) { .name = strdup(app), .state = state };
                        return ret->name ? 0 : error_sys(err, -ENOMEM, "app %s", app);
                }
        }
        return error_set(err, -ENOENT, "pod %s has no app %s", p->uuid, app);
}

int pod_app_list(PodStore *ps, Pod *p, AppStatus **ret, size_t *ret_n, Error **err) {
        _cleanup_(app_pod_done) AppPod ap = { .proc.nspawn_pidfd = -1 };
        int r = app_pod_open(ps, p, NEED_NOTHING, &ap, err);
        if (r < 0)
                return r;
        AppStatus *list = calloc(ap.manifest->n_apps + 1, sizeof(AppStatus));
        if (!list)
                return error_sys(err, -ENOMEM, "pod %s", p->uuid);
        size_t n = 0;
        for (; n < ap.manifest->n_apps; n++)
                if ((r = app_status_of(&ap, &ap.manifest->apps[n], &list[n], err)) < 0) {
                        while (n > 0)
                                app_status_done(&list[--n]);
                        free(list);
                        return r;
                }
        *ret = list;
        *ret_n = n;
        return 0;
}

/* Whether anything of the app's unit still runs: its cgroup (found from
 * the manifest's name below the pod's, pod-stats.c) has tasks. Unknown
 * counts as not busy: the record is then what says. */
static bool app_cgroup_busy(Pod *p, const char *app) {
        _cleanup_(cgroup_set_done) CgroupSet cg = CGROUP_SET_NONE;
        _cleanup_error_ Error *ignored = NULL;
        if (pod_app_cgroups_open(p, app, &cg, &ignored) < 0)
                return false;   /* no cgroup, or its pod's PID 1 has gone: nothing of it runs */
        CgroupFigures f;
        cgroup_figures_read(&cg, &f);
        return f.tasks != POD_STATS_UNKNOWN && f.tasks > 0;
}

int pod_app_exit_seen(PodStore *ps, Pod *p, const char *app, PodAppExit *ret, Error **err) {
        int r = pod_refresh(ps, p, err);
        if (r < 0)
                return r;
        if (!pod_app_name_is_valid(app))
                return error_set(err, -EINVAL, "pod %s: \"%s\" is not an app name", p->uuid, app);
        PodAppExit e = {};
        _cleanup_close_ int fd = open_beneath_no_symlinks(p->fd, POD_APP_STATUS_DIR, O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
        bool recorded = fd >= 0 && pod_app_exit_read_at(fd, app, &e) >= 0;
        bool running = p->state == POD_STATE_RUNNING;
        if (running && recorded && app_cgroup_busy(p, app))
                recorded = false;       /* a record, and the app runs again (a restart) */
        if (!running && !recorded && p->state != POD_STATE_PREPARED && p->state != POD_STATE_PREPARING &&
            p->state != POD_STATE_EMBRYO)
                e = (PodAppExit) { .exited = true, .exit_status = 128 + SIGKILL };
        ret->exited = e.exited;
        ret->exit_status = e.exit_status;
        ret->exited_usec = e.exited_usec;
        return 0;
}
