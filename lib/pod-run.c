/* SPDX-License-Identifier: Apache-2.0 */
#include <fcntl.h>
#include <libgen.h>
#include <sched.h>
#include <sys/mount.h>
#include <linux/close_range.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <systemd/sd-bus.h>
#include <systemd/sd-daemon.h>
#include <systemd/sd-login.h>

#include "app-unit.h"
#include "config.h"
#include "digest.h"
#include "fs.h"
#include "image-store.h"
#include "mount-util.h"
#include "pod-manifest.h"
#include "pod-app-root.h"
#include "pod-journal.h"
#include "pod-run.h"
#include "pod-userdb.h"
#include "stage1.h"
#include "strv.h"

static bool machined_reachable(void) {
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        int has = 0;
        if (sd_bus_open_system(&bus) < 0 ||
            sd_bus_call_method(bus, "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus",
                               "NameHasOwner", NULL, &reply, "s", "org.freedesktop.machine1") < 0 ||
            sd_bus_message_read(reply, "b", &has) < 0)
                return false;
        if (has)
                return true;
        /* Not running, but started on the first call. */
        sd_bus_message_unref(reply);
        reply = NULL;
        char **names = NULL;
        if (sd_bus_call_method(bus, "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus",
                               "ListActivatableNames", NULL, &reply, "") < 0 ||
            sd_bus_message_read_strv(reply, &names) < 0)
                return false;
        bool found = strv_contains(names, "org.freedesktop.machine1");
        strv_free(names);
        return found;
}

void nspawn_host_detect(NspawnHost *ret) {
        /* Without a host systemd there is no bus to register on or to ask
         * for a scope: nspawn must stay where it is. */
        if (sd_booted() <= 0) {
                *ret = (NspawnHost) { .keep_unit = true, .register_machine = false };
                return;
        }
        _cleanup_free_ char *unit = NULL;
        bool in_service = sd_pid_get_unit(0, &unit) >= 0 && strlen(unit) > 8 &&
                          streq(unit + strlen(unit) - 8, ".service");
        *ret = (NspawnHost) { .keep_unit = in_service, .register_machine = machined_reachable() };
}

static char *path_join3(const char *a, const char *b, const char *c) {
        char *s = NULL;
        return asprintf(&s, "%s/%s%s%s", a, b, c ? "/" : "", strempty(c)) < 0 ? NULL : s;
}

/* Mounts the app's root: its image's tree below, its own changes above. */
static int mount_app(const char *pod, const char *data, int rootfs_fd, const PodApp *app, Error **err) {
        char rel[128];
        snprintf(rel, sizeof(rel), "%s/%s/rootfs", POD_APPS_DIR + 1, app->name);
        _cleanup_close_ int fd = mkdir_p_in_root(rootfs_fd, rel, 0755, false);
        if (fd < 0)
                return error_sys(err, fd, "app %s: cannot create /%s in the pod", app->name, rel);
        _cleanup_(app_root_layers_done) AppRootLayers l = {};
        _cleanup_free_ char *target = path_join3(pod, "stage1/rootfs", rel);
        if (!target)
                return error_sys(err, -ENOMEM, "app %s", app->name);
        if (app_root_layers(pod, data, app, &l, err) < 0 || mount_overlay(l.lower, l.upper, l.work, target, err) < 0)
                return error_prefix(err, "app %s", app->name);
        return 0;
}

/* A volume at /sdpod/volumes/NAME: an empty one is the pod directory's
 * volumes/NAME, already there through the /sdpod bind; a host one is bound
 * over it. */
static int mount_volume(const char *pod, int pod_fd, const PodVolume *v, Error **err) {
        char rel[128];
        snprintf(rel, sizeof(rel), "volumes/%s", v->name);
        struct stat st = { .st_mode = S_IFDIR };
        if (v->kind == POD_VOLUME_HOST && stat(v->source, &st) < 0)
                return error_sys(err, -errno, "volume %s: source %s", v->name, v->source);
        _cleanup_close_ int dir = mkdir_p_in_root(pod_fd, "volumes", 0755, false);
        if (dir < 0)
                return error_sys(err, dir, "volume %s: cannot create volumes/", v->name);
        if (S_ISDIR(st.st_mode)) {
                if (mkdirat(pod_fd, rel, v->kind == POD_VOLUME_EMPTY ? v->mode : 0755) < 0 && errno != EEXIST)
                        return error_sys(err, -errno, "volume %s: cannot create %s", v->name, rel);
                if (v->kind == POD_VOLUME_EMPTY && fchownat(pod_fd, rel, v->uid, v->gid, AT_SYMLINK_NOFOLLOW) < 0)
                        return error_sys(err, -errno, "volume %s: cannot chown %s", v->name, rel);
        } else {
                _cleanup_close_ int f = openat(pod_fd, rel, O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644);
                if (f < 0)
                        return error_sys(err, -errno, "volume %s: cannot create %s", v->name, rel);
        }
        if (v->kind != POD_VOLUME_HOST)
                return 0;
        _cleanup_free_ char *target = path_join3(pod, "stage1/rootfs/sdpod", rel);
        if (!target)
                return error_sys(err, -ENOMEM, "volume %s", v->name);
        return mount_bind(v->source, target, v->read_only, err) < 0 ? error_prefix(err, "volume %s", v->name) : 0;
}

static int write_pid_file(int pod_fd, int lock_fd, Error **err) {
        char buf[32];
        int n = snprintf(buf, sizeof(buf), "%d %d\n", (int) getpid(), lock_fd);
        return write_file_atomic_at(pod_fd, POD_PID_FILE, buf, n, 0644, err);
}

/* systemd-nspawn keeps a directory per machine in /run/systemd/nspawn/
 * propagate/ and, on exit, refuses to remove it unless it is on a tmpfs, as
 * /run is under a systemd host. Elsewhere, give it a tmpfs of this
 * namespace: the directories vanish with the pod. */
static int private_nspawn_propagate_dir(Error **err) {
        static const char dir[] = "/run/systemd/nspawn/propagate";
        struct statfs sfs;
        if (statfs("/run", &sfs) < 0)
                return error_sys(err, -errno, "/run");
        if (sfs.f_type == TMPFS_MAGIC)
                return 0;
        int r = mkdir_p(dir, 0755);
        if (r < 0)
                return error_sys(err, r, "cannot create %s", dir);
        if (mount("tmpfs", dir, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, "mode=0755") < 0)
                return error_sys(err, -errno, "cannot mount a tmpfs on %s", dir);
        return 0;
}

/* Mounts made from here on live in this namespace only; the host's still
 * propagate in (slave), ours never out. Directories opened before belong to
 * the old namespace's mounts: paths from them would not see the new ones. */
static int enter_private_mount_namespace(Error **err) {
        if (unshare(CLONE_NEWNS) < 0)
                return error_sys(err, -errno, "cannot create a mount namespace");
        if (mount(NULL, "/", NULL, MS_REC | MS_SLAVE, NULL) < 0)
                return error_sys(err, -errno, "cannot make the mount namespace a slave");
        return private_nspawn_propagate_dir(err);
}

/* The pod's journald writes below /var/log/journal, which is the pod
 * directory's journal/: kept after the pod has exited (pod-journal.h). */
static int mount_journal(const char *pod, int pod_fd, Error **err) {
        if (mkdirat(pod_fd, POD_JOURNAL_DIR, 0755) < 0 && errno != EEXIST)
                return error_sys(err, -errno, "cannot create %s/", POD_JOURNAL_DIR);
        _cleanup_free_ char *source = path_join3(pod, POD_JOURNAL_DIR, NULL),
                           *target = path_join3(pod, "stage1/rootfs/var/log/journal", NULL);
        if (!source || !target)
                return error_sys(err, -ENOMEM, "journal");
        return mount_bind(source, target, false, err);
}

/* pod_fd must have been opened in the private mount namespace. */
static int mount_pod(const char *pod, int pod_fd, const PodManifest *m, Error **err) {
        _cleanup_free_ char *image = NULL;
        int r = stage1_image_of(pod_fd, &image, err);
        if (r < 0)
                return r;
        if (!image)
                return error_set(err, -EBADMSG, "stage1/manifest names no stage1 image (%s)", STAGE1_ANNOTATION_IMAGE);
        char data_buf[PATH_MAX];
        snprintf(data_buf, sizeof(data_buf), "%s", pod);
        /* DATA/pods/run/UUID */
        const char *data = dirname(dirname(dirname(data_buf)));

        _cleanup_free_ char *lower = path_join3(image, "rootfs", NULL), *rootfs = path_join3(pod, "stage1/rootfs", NULL),
                           *upper = path_join3(pod, "stage1/upper", NULL), *work = path_join3(pod, "stage1/work", NULL),
                           *sdpod = path_join3(pod, "stage1/rootfs/sdpod", NULL);
        if (!lower || !rootfs || !upper || !work || !sdpod)
                return error_sys(err, -ENOMEM, "stage1");
        if ((r = mount_overlay(lower, upper, work, rootfs, err)) < 0)
                return error_prefix(err, "stage1");
        _cleanup_close_ int rootfs_fd = open_beneath_no_symlinks(pod_fd, "stage1/rootfs", O_PATH | O_DIRECTORY | O_CLOEXEC, 0);
        if (rootfs_fd < 0)
                return error_sys(err, rootfs_fd, "stage1/rootfs");
        for (size_t i = 0; i < m->n_apps; i++)
                if ((r = mount_app(pod, data, rootfs_fd, &m->apps[i], err)) < 0)
                        return r;
        if ((r = pod_userdb_add_apps(rootfs_fd, m, err)) < 0)
                return r;

        if (mkdirat(pod_fd, "status", 0755) < 0 && errno != EEXIST)
                return error_sys(err, -errno, "cannot create status/");
        if ((r = mount_journal(pod, pod_fd, err)) < 0)
                return r;
        _cleanup_close_ int fd = mkdir_p_in_root(rootfs_fd, "sdpod", 0755, false);
        if (fd < 0)
                return error_sys(err, fd, "cannot create /sdpod in the pod");
        if ((r = mount_bind(pod, sdpod, false, err)) < 0)
                return r;
        for (size_t i = 0; i < m->n_volumes; i++)
                if ((r = mount_volume(pod, pod_fd, &m->volumes[i], err)) < 0)
                        return r;
        return 0;
}

/* "sdpod-UUID", or the pod's --name. */
static char *machine_name(const PodManifest *m, const char *uuid) {
        const char *name = pod_manifest_get_annotation(m, POD_ANNOTATION_NAME);
        char *s = NULL;
        return asprintf(&s, "%s%s", name ? "" : "sdpod-", name ? name : uuid) < 0 ? NULL : s;
}

int pod_run_exec(const char *uuid, int lock_fd, Error **err) {
        char pod[PATH_MAX];
        if (!getcwd(pod, sizeof(pod)))
                return error_sys(err, -errno, "pod %s: cannot tell the pod directory", uuid);
        int r = enter_private_mount_namespace(err);
        if (r < 0)
                return error_prefix(err, "pod %s", uuid);
        _cleanup_close_ int pod_fd = open(pod, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (pod_fd < 0)
                return error_sys(err, -errno, "pod %s: %s", uuid, pod);
        _cleanup_pod_manifest_ PodManifest *m = NULL;
        if ((r = pod_manifest_read_at(pod_fd, "pod", "pod manifest", &m, err)) < 0 ||
            (r = mount_pod(pod, pod_fd, m, err)) < 0 || (r = write_pid_file(pod_fd, lock_fd, err)) < 0)
                return error_prefix(err, "pod %s", uuid);

        NspawnHost host;
        nspawn_host_detect(&host);
        _cleanup_free_ char *machine = machine_name(m, uuid);
        _cleanup_free_ char *dir = NULL, *machine_arg = NULL, *uuid_arg = NULL;
        if (!machine || asprintf(&dir, "--directory=%s/stage1/rootfs", pod) < 0 ||
            asprintf(&machine_arg, "--machine=%s", machine) < 0 || asprintf(&uuid_arg, "--uuid=%s", uuid) < 0)
                return error_sys(err, -ENOMEM, "pod %s", uuid);
        char *argv[] = {
                "systemd-nspawn", "--quiet", "--boot", dir, machine_arg, uuid_arg,
                "--notify-ready=yes", "--link-journal=no", "--timezone=off", "--console=read-only",
                host.register_machine ? "--register=yes" : "--register=no",
                host.keep_unit ? "--keep-unit" : NULL,
                NULL,
        };
        /* The lock passes to nspawn, which holds it for the pod's life;
         * nothing else does (the fd of this very program, which stage0
         * leaves open for scripts, included). */
        if (fcntl(lock_fd, F_SETFD, 0) < 0)
                return error_sys(err, -errno, "pod %s: the lock fd %d", uuid, lock_fd);
        if ((lock_fd > 3 && close_range(3, lock_fd - 1, CLOSE_RANGE_CLOEXEC) < 0) ||
            close_range(lock_fd + 1, ~0U, CLOSE_RANGE_CLOEXEC) < 0)
                return error_sys(err, -errno, "pod %s: cannot close the other fds on exec", uuid);
        execv(SYSTEMD_NSPAWN, argv);
        r = -errno;
        fcntl(lock_fd, F_SETFD, FD_CLOEXEC);
        return error_sys(err, r, "pod %s: cannot execute %s", uuid, SYSTEMD_NSPAWN);
}
