/* SPDX-License-Identifier: Apache-2.0 */
#include <fcntl.h>

#include "basic/fs.h"
#include "manifest/app-lifecycle.h"
#include "manifest/pod-net.h"
#include "pod/flavor-check.h"
#include "pod/pod-userns.h"
#include "pod/stage1.h"
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

/* The kvm flavor (kvm/kvm-run.h): the apps of images, with systemd in the
 * guest running them as in the nspawn flavor, on one CNI network or none,
 * and nothing of the host's files inside yet. */
int kvm_manifest_check(const PodManifest *m, Error **err) {
        if (m->n_apps == 0 || m->n_apps > KVM_APPS_MAX)
                return error_set(err, -EOPNOTSUPP, "the kvm flavor runs 1 to %d apps, not %zu", KVM_APPS_MAX, m->n_apps);
        /* QEMU runs as the first id of the pod's range: without one, the
         * VMs of every such pod would share an id (nobody) and could
         * trace each other's QEMU. */
        const char *v = pod_manifest_get_annotation(m, POD_ANNOTATION_PRIVATE_USERS);
        if (v && streq(v, "no"))
                return error_set(err, -EOPNOTSUPP, "the kvm flavor runs each pod's QEMU as an id of its own range: "
                                 "--private-users=no is refused with it");
        int r;
        v = pod_manifest_get_annotation(m, POD_ANNOTATION_MUTABLE);
        if (v && streq(v, "true"))
                return error_set(err, -EOPNOTSUPP, "the kvm flavor cannot add apps to a running pod yet (podapp "
                                 "sandbox needs --stage1=nspawn)");
        if (m->n_volumes > 0)
                return error_set(err, -EOPNOTSUPP, "the kvm flavor does not mount volumes yet (use --stage1=nspawn)");
        _cleanup_(pod_net_done) PodNet net = {};
        if ((r = pod_net_from_manifest(m, &net, err)) < 0)
                return r;
        if (net.mode == POD_NET_HOST || net.mode == POD_NET_NS)
                return error_set(err, -EOPNOTSUPP, "the kvm flavor joins no namespace but its own: --net=host and "
                                 "--net=ns: need --stage1=nspawn or fly");
        if (net.mode == POD_NET_CNI && net.n_networks != 1)
                return error_set(err, -EOPNOTSUPP, "the kvm flavor joins one CNI network, not %zu", net.n_networks);
        for (size_t i = 0; i < m->n_apps; i++) {
                const PodApp *app = &m->apps[i];
                v = pod_app_get_annotation(app, POD_ANNOTATION_TTY);
                if (v && streq(v, "true"))
                        return error_set(err, -EOPNOTSUPP, "app %s: the kvm flavor has no terminal for an app yet: "
                                         "-t needs --stage1=nspawn", app->name);
                if (app->n_mounts > 0)
                        return error_set(err, -EOPNOTSUPP, "app %s: the kvm flavor does not mount volumes yet", app->name);
                if (app->rootfs)
                        return error_set(err, -EOPNOTSUPP, "app %s: the kvm flavor runs apps of images only", app->name);
        }
        return 0;
}

int stage1_flavor_check(const char *flavor, const PodManifest *m, Error **err) {
        if (streq(flavor, STAGE1_FLAVOR_FLY))
                return fly_manifest_check(m, err);
        if (streq(flavor, STAGE1_FLAVOR_KVM))
                return kvm_manifest_check(m, err);
        return 0;
}
