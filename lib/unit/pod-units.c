/* SPDX-License-Identifier: Apache-2.0 */
#include <fcntl.h>
#include <stdarg.h>

#include "basic/fs.h"
#include "basic/strv.h"
#include "manifest/pod-manifest.h"
#include "unit/app-unit.h"
#include "unit/pod-units.h"

#define MANIFEST_WHAT "pod manifest " POD_MANIFEST_PATH
#define MANIFEST_SIZE_MAX (16U << 20)
#define MANIFEST_ERROR_UNIT "sdpod-manifest-error.service"
#define MUTABLE_DROPIN "default.target.d/sdpod-mutable.conf"

void pod_units_done(PodUnits *u) {
        if (!u)
                return;
        for (size_t i = 0; i < u->n_files; i++) {
                free(u->files[i].path);
                free(u->files[i].content);
                free(u->files[i].link_target);
        }
        free(u->files);
        free(u->ids);
        strv_free(u->errors);
        *u = (PodUnits) {};
}

/* Takes content (or link_target) and frees it on failure. */
static int add_file(PodUnits *u, char *content, char *link_target, const char *fmt, ...) _printf_(4, 5);
static int add_file(PodUnits *u, char *content, char *link_target, const char *fmt, ...) {
        UnitFile f = { .content = content, .link_target = link_target };
        va_list ap;
        va_start(ap, fmt);
        int k = vasprintf(&f.path, fmt, ap);
        va_end(ap);
        UnitFile *files = k < 0 ? NULL : realloc(u->files, (u->n_files + 1) * sizeof(UnitFile));
        if (!files) {
                if (k >= 0)
                        free(f.path);
                free(content);
                free(link_target);
                return -ENOMEM;
        }
        u->files = files;
        u->files[u->n_files++] = f;
        return 0;
}

/* default.target.wants/UNIT -> ../UNIT */
static int add_wants_link(PodUnits *u, const char *unit) {
        char *target = NULL;
        if (asprintf(&target, "../%s", unit) < 0)
                return -ENOMEM;
        return add_file(u, NULL, target, "default.target.wants/%s", unit);
}

static int add_error(PodUnits *u, const char *msg) {
        return strv_push(&u->errors, msg);
}

/* The manifest, read inside the pod's root (a symlink there cannot lead
 * out of it), whole and bounded, and parsed. */
static int read_manifest(int pod_rootfd, PodManifest **ret, Error **err) {
        _cleanup_free_ char *data = NULL;
        size_t size = 0;
        _cleanup_close_ int fd = open_regular_in_root(pod_rootfd, POD_MANIFEST_PATH, MANIFEST_SIZE_MAX);
        if (fd < 0)
                return open_regular_error(err, fd, MANIFEST_WHAT, MANIFEST_SIZE_MAX);
        int r = read_fd(fd, MANIFEST_WHAT, MANIFEST_SIZE_MAX, &data, &size, err);
        return r < 0 ? r : pod_manifest_parse(data, size, MANIFEST_WHAT, ret, err);
}

/* The pod cannot start: one unit that fails it with the reason. */
static int build_manifest_error(PodUnits *u, const char *message) {
        char *text = NULL;
        int r = add_error(u, message);
        if (r < 0 || (r = manifest_error_unit_render(message, &text)) < 0)
                return r;
        r = add_file(u, text, NULL, MANIFEST_ERROR_UNIT);
        return r < 0 ? r : add_wants_link(u, MANIFEST_ERROR_UNIT);
}

static int build_app(PodUnits *u, const PodManifest *m, size_t index, int pod_rootfd, PodGraph graph) {
        const PodApp *app = &m->apps[index];
        _cleanup_error_ Error *err = NULL;
        _cleanup_app_unit_ AppUnit *au = NULL;
        char *text = NULL;
        char root[sizeof(POD_APPS_DIR) + 80];
        snprintf(root, sizeof(root), POD_APPS_DIR "/%s/rootfs", app->name);

        int r;
        _cleanup_close_ int app_rootfd = open_in_root(pod_rootfd, root, O_PATH | O_DIRECTORY, 0);
        if (app_rootfd < 0)
                r = error_set(&err, -EIO, "the app's root %s: %s", root, strerror(-app_rootfd));
        else if ((r = app_unit_resolve(m, index, app_rootfd, &au, &err)) >= 0)
                /* Here, in the pod, and not when it was prepared: what its
                 * systemd can apply depends on the host and the way the pod
                 * runs (a service of the host's systemd, or not), and the
                 * app fails like any app that cannot run, its reason in its
                 * log and its exit status recorded. */
                r = app_isolation_check_cgroups(&au->isolation, pod_rootfd, &err);
        if (r >= 0 && au->isolation.n_devices > 0) {
                const char *sources[au->n_binds + 1], *destinations[au->n_binds + 1];
                for (size_t b = 0; b < au->n_binds; b++) {
                        sources[b] = au->binds[b].source;
                        destinations[b] = au->binds[b].destination;
                }
                app_isolation_resolve_devices(&au->isolation, sources, destinations, au->n_binds, pod_rootfd);
        }

        if (r == -ENOMEM)
                return r;
        if (r < 0) {
                _cleanup_free_ char *msg = NULL;
                if (asprintf(&msg, "app %s: %s", app->name, err && err->msg ? err->msg : strerror(-r)) < 0)
                        return -ENOMEM;
                if ((r = add_error(u, msg)) < 0 ||
                    (r = app_unit_render_failure(app, app_unit_exit_code(err ? err->code : r), msg, graph, &text)) < 0)
                        return r;
        } else {
                /* Its supplementary groups too: systemd 252 resolves
                 * SupplementaryGroups= numbers as well, and refuses one
                 * without an entry (216/GROUP, measured). */
                size_t n_gids = app->n_supplementary_gids;
                UnitIds *ids = reallocarray(u->ids, u->n_ids + 1 + n_gids, sizeof(UnitIds));
                if (!ids)
                        return -ENOMEM;
                u->ids = ids;
                u->ids[u->n_ids++] = (UnitIds) { au->uid, au->gid };
                for (size_t g = 0; g < n_gids; g++)
                        u->ids[u->n_ids++] = (UnitIds) { au->uid, app->supplementary_gids[g] };
                if ((r = exec_unit_dropin_render(au, APP_EXEC_AS_APP, &text)) < 0 ||
                    (r = add_file(u, text, NULL, APP_EXEC_DROPIN_FORMAT, app->name)) < 0 ||
                    (r = exec_unit_dropin_render(au, APP_EXEC_AS_ROOT, &text)) < 0 ||
                    (r = add_file(u, text, NULL, APP_ENTER_DROPIN_FORMAT, app->name)) < 0 ||
                    (r = app_unit_render(au, graph, &text)) < 0)
                        return r;
                if (au->health.path) {
                        char *service = NULL, *timer = NULL;
                        if ((r = health_unit_render(au, &service)) < 0 ||
                            (r = add_file(u, service, NULL, APP_HEALTH_UNIT_FORMAT, app->name)) < 0 ||
                            (r = health_timer_render(au, &timer)) < 0 ||
                            (r = add_file(u, timer, NULL, APP_HEALTH_TIMER_FORMAT, app->name)) < 0) {
                                free(text);
                                return r;
                        }
                }
        }
        if ((r = add_file(u, text, NULL, APP_UNIT_FORMAT, app->name)) < 0)
                return r;

        if ((r = reaper_unit_render(app, graph, &text)) < 0 ||
            (r = add_file(u, text, NULL, REAPER_UNIT_FORMAT, app->name)) < 0)
                return r;

        /* What an app started after this one is healthy waits on. */
        if (pod_app_get_annotation(app, APP_ANNOTATION_HEALTH_CMD) &&
            ((r = wait_healthy_unit_render(app, &text)) < 0 ||
             (r = add_file(u, text, NULL, APP_WAIT_HEALTHY_UNIT_FORMAT, app->name)) < 0))
                return r;

        /* An immutable pod starts its apps at boot, and so does a mutable
         * one of sdpod run --mutable; the apps of a sandbox are started
         * one by one (podapp start). An app added later gets the link too,
         * which starts nothing: systemd acts on a Wants= of a target only
         * when the target is started. */
        const char *start_apps = pod_manifest_get_annotation(m, POD_ANNOTATION_START_APPS);
        if (!(graph & POD_GRAPH_MUTABLE) || (start_apps && streq(start_apps, "true"))) {
                char unit[128];
                snprintf(unit, sizeof(unit), APP_UNIT_FORMAT, app->name);
                return add_wants_link(u, unit);
        }
        return 0;
}

int pod_units_build(int pod_rootfd, PodUnits *ret) {
        _cleanup_(pod_units_done) PodUnits u = {};
        _cleanup_pod_manifest_ PodManifest *m = NULL;
        _cleanup_error_ Error *err = NULL;
        PodGraph graph = POD_GRAPH_IMMUTABLE;

        int r = read_manifest(pod_rootfd, &m, &err);
        if (r >= 0 && (r = pod_graph_from_manifest(m, &graph, &err)) < 0)
                error_prefix(&err, "%s", MANIFEST_WHAT);
        /* An immutable pod without apps would wait for nothing forever. */
        if (r >= 0 && !(graph & POD_GRAPH_MUTABLE) && m->n_apps == 0)
                r = error_set(&err, -EBADMSG, "%s: field \"apps\": empty, and the pod is not mutable (%s)",
                              MANIFEST_WHAT, "annotation " POD_ANNOTATION_MUTABLE);
        /* The apps of an immutable pod are all there: an order naming an
         * app that is not is the manifest's error (the validation let it
         * through, as a mutable pod's apps come and go). */
        if (r >= 0 && !(graph & POD_GRAPH_MUTABLE) && (r = app_order_check(m->apps, m->n_apps, true, &err)) < 0)
                error_prefix(&err, "%s: field \"apps\"", MANIFEST_WHAT);
        if (r == -ENOMEM)
                return r;
        if (r < 0) {
                if ((r = build_manifest_error(&u, err && err->msg ? err->msg : strerror(-r))) < 0)
                        return r;
                *ret = u;
                u = (PodUnits) {};
                return 0;
        }

        /* A mutable pod's own part of the graph, with or without apps
         * (podapp sandbox starts it empty). */
        if (graph & POD_GRAPH_MUTABLE) {
                char *text = NULL;
                if ((r = mutable_default_target_dropin_render(&text)) < 0 ||
                    (r = add_file(&u, text, NULL, MUTABLE_DROPIN)) < 0)
                        return r;
        }
        for (size_t i = 0; i < m->n_apps; i++)
                if ((r = build_app(&u, m, i, pod_rootfd, graph)) < 0)
                        return r;
        *ret = u;
        u = (PodUnits) {};
        return 0;
}
