/* SPDX-License-Identifier: Apache-2.0 */
#include <fcntl.h>

#include "basic/fs.h"
#include "manifest/app-lifecycle.h"
#include "pod/fly-check.h"
#include "unit/app-isolators.h"

int fly_manifest_check(const PodManifest *m, Error **err) {
        if (m->n_apps != 1)
                return error_set(err, -EOPNOTSUPP, "the fly flavor runs one app, not %zu (use --stage1=nspawn)", m->n_apps);
        const char *v = pod_manifest_get_annotation(m, POD_ANNOTATION_MUTABLE);
        if (v && streq(v, "true"))
                return error_set(err, -EOPNOTSUPP, "the fly flavor runs one app: no apps are added to it (podapp "
                                 "sandbox needs --stage1=nspawn)");
        if (m->n_volumes > 0)
                return error_set(err, -EOPNOTSUPP, "the fly flavor does not mount volumes yet (use --stage1=nspawn)");
        const PodApp *app = &m->apps[0];
        v = pod_app_get_annotation(app, POD_ANNOTATION_TTY);
        if (v && streq(v, "true"))
                return error_set(err, -EOPNOTSUPP, "the fly flavor has no console: -t needs --stage1=nspawn");
        if (app->n_event_handlers > 0)
                return error_set(err, -EOPNOTSUPP, "app %s: the fly flavor runs no hooks (%s: the nspawn flavor's "
                                 "systemd runs them)", app->name, app->event_handlers[0].name);
        if (app->n_mounts > 0)
                return error_set(err, -EOPNOTSUPP, "app %s: the fly flavor does not mount volumes yet", app->name);
        if (app->rootfs)
                return error_set(err, -EOPNOTSUPP, "app %s: the fly flavor runs an app of an image only", app->name);
        _cleanup_(app_lifecycle_done) AppLifecycle l = {};
        int r = app_lifecycle_of(m, app, &l, err);
        if (r < 0)
                return r;
        if (l.health_cmd)
                return error_set(err, -EOPNOTSUPP, "app %s: the fly flavor runs no health checks (the nspawn "
                                 "flavor's systemd runs them)", app->name);
        if (l.restart != APP_RESTART_NO || l.watchdog_usec)
                return error_set(err, -EOPNOTSUPP, "app %s: the fly flavor has no supervisor to restart or watch "
                                 "the app (use --stage1=nspawn)", app->name);
        _cleanup_(app_isolation_done) AppIsolation iso = {};
        if ((r = app_isolation_parse(app->isolators, app->n_isolators, "apps[0].app.isolators", &iso, err)) < 0)
                return r;
        const char *what = iso.memory_max ? "--memory" : iso.cpu_millis ? "--cpus" : iso.tasks_max ? "--pids-limit"
                         : iso.n_tmpfs ? "--tmpfs" : iso.n_devices ? "--device" : iso.rlimits ? "--rlimit" : NULL;
        if (what)
                return error_set(err, -EOPNOTSUPP, "app %s: the fly flavor does not apply %s yet (use "
                                 "--stage1=nspawn; the pod's --pod-pids-limit holds)", app->name, what);
        return 0;
}

int fly_log_read(int pod_fd, const char *uuid, unsigned lines, char **ret, Error **err) {
        _cleanup_free_ char *data = NULL;
        size_t size = 0;
        /* The host wrote it; bounded all the same. */
        int r = read_file_at(pod_fd, FLY_LOG_FILE, FLY_LOG_MAX + 4096, &data, &size, err);
        if (r == -ENOENT) {
                error_free(*err);
                *err = NULL;
                return (*ret = strdup("")) ? 0 : error_sys(err, -ENOMEM, "pod %s", uuid);
        }
        if (r < 0)
                return error_prefix(err, "pod %s", uuid);
        size_t start = 0;
        if (lines > 0) {
                size_t end = size > 0 && data[size - 1] == '\n' ? size - 1 : size, k = end;
                unsigned n = 0;
                while (k > 0 && n < lines)
                        if (data[--k] == '\n' && ++n == lines) {
                                k++;
                                break;
                        }
                start = k;
        }
        char *s = strndup(data + start, size - start);
        return (*ret = s) ? 0 : error_sys(err, -ENOMEM, "pod %s", uuid);
}

int fly_log_show(int pod_fd, const char *uuid, unsigned lines, bool raw, Error **err) {
        _cleanup_free_ char *text = NULL;
        int r = fly_log_read(pod_fd, uuid, lines, &text, err);
        if (r < 0)
                return r;
        size_t n = strlen(text);
        if (raw)
                return write_all(STDOUT_FILENO, text, n) < 0 ? error_sys(err, -errno, "stdout") : 0;
        _cleanup_free_ char *out = malloc(4 * n + 1);
        size_t k = 0;
        if (!out)
                return error_sys(err, -ENOMEM, "pod %s", uuid);
        text_escape(text, n, true, out, &k);
        return write_all(STDOUT_FILENO, out, k) < 0 ? error_sys(err, -errno, "stdout") : 0;
}
