/* SPDX-License-Identifier: Apache-2.0 */
#include <fcntl.h>
#include <libgen.h>
#include <sched.h>
#include <sys/mount.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <systemd/sd-bus.h>
#include <systemd/sd-daemon.h>
#include <systemd/sd-login.h>

#include "basic/crash-point.h"
#include "basic/digest.h"
#include "basic/fs.h"
#include "basic/mount-util.h"
#include "basic/relay.h"
#include "basic/strv.h"
#include "basic/time-util.h"
#include "config.h"
#include "image/image-store.h"
#include "manifest/app-lifecycle.h"
#include "manifest/pod-manifest.h"
#include "manifest/pod-net.h"
#include "net/pod-net-setup.h"
#include "pod/pod-app-root.h"
#include "pod/pod-cgroup.h"
#include "pod/pod-info.h"
#include "pod/pod-journal.h"
#include "pod/pod-process.h"
#include "pod/pod-run.h"
#include "pod/pod-supervise.h"
#include "pod/pod-userns.h"
#include "pod/pod-volume.h"
#include "pod/stage1.h"
#include "unit/app-unit.h"

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
                *ret = (NspawnHost) { .keep_unit = true, .register_machine = false, .systemd = false };
                return;
        }
        _cleanup_free_ char *unit = NULL;
        bool in_service = sd_pid_get_unit(0, &unit) >= 0 && strlen(unit) > 8 &&
                          streq(unit + strlen(unit) - 8, ".service");
        *ret = (NspawnHost) { .keep_unit = in_service, .register_machine = machined_reachable(), .systemd = true };
}

static char *path_join3(const char *a, const char *b, const char *c) {
        char *s = NULL;
        return asprintf(&s, "%s/%s%s%s", a, b, c ? "/" : "", strempty(c)) < 0 ? NULL : s;
}

/* What the run entrypoint mounts with: the pod directory, its user
 * namespace (userns_fd -1 without one) and the host's owner of what is
 * root's in the pod. */
typedef struct RunContext {
        const char *pod;        /* the pod directory's path */
        const char *data;       /* the data directory's */
        int pod_fd;             /* opened in the private mount namespace */
        const PodManifest *manifest;
        PodUserns userns;
        int userns_fd;
} RunContext;

/* Creates dir (below the pod directory, never through a symlink) for what
 * is root's in the pod, with mode. */
static int make_pod_owned_dir(const RunContext *c, const char *dir, mode_t mode, uid_t uid, gid_t gid, Error **err) {
        uid_t root = pod_userns_root(&c->userns);
        int r = mkdir_owned_beneath(c->pod_fd, dir, mode, root + uid, root + gid);
        return r < 0 ? error_sys(err, r, "cannot create %s/ for the pod", dir) : 0;
}

/* Mounts an overlay at target (below the pod directory). */
static int mount_layers(const RunContext *c, const AppRootLayers *l, const char *target, Error **err) {
        _cleanup_close_ int fd = -1;
        int r = app_root_make(l, c->userns_fd, &fd, err);
        return r < 0 ? r : mount_attach(fd, target, err);
}

/* Mounts the app's root: its image's tree below, its own changes above. */
static int mount_app(const RunContext *c, int rootfs_fd, const PodApp *app, Error **err) {
        char rel[128];
        snprintf(rel, sizeof(rel), "%s/%s/rootfs", POD_APPS_DIR + 1, app->name);
        _cleanup_close_ int fd = mkdir_p_in_root(rootfs_fd, rel, 0755, false);
        if (fd < 0)
                return error_sys(err, fd, "app %s: cannot create /%s in the pod", app->name, rel);
        _cleanup_(app_root_layers_done) AppRootLayers l = {};
        _cleanup_free_ char *target = path_join3(c->pod, "stage1/rootfs", rel);
        if (!target)
                return error_sys(err, -ENOMEM, "app %s", app->name);
        if (app_root_layers(c->pod, c->data, app, &l, err) < 0 || mount_layers(c, &l, target, err) < 0)
                return error_prefix(err, "app %s", app->name);
        return 0;
}

/* A volume at /sdpod/volumes/NAME: an empty one is the pod directory's
 * volumes/NAME, owned by the pod (as the manifest says); a host one is
 * bound over it, as it is: the operator chose it. */
static int mount_volume(const RunContext *c, const PodVolume *v, Error **err) {
        char rel[128];
        snprintf(rel, sizeof(rel), "volumes/%s", v->name);
        struct stat st = { .st_mode = S_IFDIR };
        if (v->kind == POD_VOLUME_HOST && stat(v->source, &st) < 0)
                return error_sys(err, -errno, "volume %s: source %s", v->name, v->source);
        if (v->kind == POD_VOLUME_EMPTY) {
                if (c->userns.enabled && (v->uid >= POD_USERNS_SIZE || v->gid >= POD_USERNS_SIZE))
                        return error_set(err, -EINVAL, "volume %s: owner %u:%u is outside the pod's user namespace "
                                         "(ids 0 to %u)", v->name, v->uid, v->gid, POD_USERNS_SIZE - 1);
                return make_pod_owned_dir(c, rel, v->mode, v->uid, v->gid, err) < 0 ? error_prefix(err, "volume %s", v->name) : 0;
        }
        if (S_ISDIR(st.st_mode)) {
                if (mkdirat(c->pod_fd, rel, 0755) < 0 && errno != EEXIST)
                        return error_sys(err, -errno, "volume %s: cannot create %s", v->name, rel);
        } else {
                _cleanup_close_ int f = open_beneath_no_symlinks(c->pod_fd, rel, O_WRONLY | O_CREAT | O_NOFOLLOW, 0644);
                if (f < 0)
                        return error_sys(err, f, "volume %s: cannot create %s", v->name, rel);
        }
        _cleanup_free_ char *target = path_join3(c->pod, "stage1/rootfs/sdpod", rel);
        if (!target)
                return error_sys(err, -ENOMEM, "volume %s", v->name);
        /* Named, chown=true and idmap=true volumes (pod-volume.h): their
         * owners set before the pod sees them. */
        PodVolumeOptions o;
        int r = pod_volume_options_parse(pod_manifest_get_annotation(c->manifest, POD_ANNOTATION_VOLUMES), v->name, &o, err);
        if (r < 0)
                return error_prefix(err, "volume %s", v->name);
        if (o.idmap) {
                if (c->userns_fd < 0)
                        return error_set(err, -EINVAL, "volume %s: idmap=true needs the pod's user namespace", v->name);
                return mount_bind_idmapped(v->source, target, c->userns_fd, v->read_only, err) < 0
                               ? error_prefix(err, "volume %s", v->name)
                               : 0;
        }
        /* Open until we exit, as the range's hold: a named volume's lock. */
        int hold;
        _cleanup_close_ int source_fd = -1;
        if ((r = pod_volume_start(c->data, v, &o, &c->userns, &hold, &source_fd, err)) < 0)
                return r;
        (void) hold;
        /* What was checked is what is bound: the directory opened. */
        char source_path[64];
        if (source_fd >= 0)
                snprintf(source_path, sizeof(source_path), "/proc/self/fd/%d", source_fd);
        /* nodev: what the pod writes there (root of a --private-users=no
         * pod with --cap-add=MKNOD) or what lies there opens no device;
         * a volume that is a device node itself is the operator's grant
         * (--device) and stays one. A named volume holds only what pods
         * wrote: nosuid too. */
        unsigned long flags = (v->read_only ? MS_RDONLY : 0) | (S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode) ? 0 : MS_NODEV) |
                              (o.named[0] ? MS_NOSUID : 0);
        return mount_bind(source_fd >= 0 ? source_path : v->source, target, flags, err) < 0
                       ? error_prefix(err, "volume %s", v->name)
                       : 0;
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

/* Binds POD/dir at stage1/rootfs/in_pod, writable or not; nodev (the pod
 * writes there) and, but for the empty volumes, which are the apps' own
 * files, nosuid (nothing of sdpod's there is a program). */
static int bind_pod_dir(const RunContext *c, const char *dir, const char *in_pod, bool read_only, Error **err) {
        _cleanup_free_ char *source = path_join3(c->pod, dir, NULL), *target = path_join3(c->pod, "stage1/rootfs", in_pod);
        if (!source || !target)
                return error_sys(err, -ENOMEM, "%s", dir);
        unsigned long flags = MS_NODEV | (read_only ? MS_RDONLY : 0) | (streq(dir, "volumes") ? 0 : MS_NOSUID);
        return mount_bind(source, target, flags, err);
}

/* Each app's records, before the pod can fill the disk (pod-info.h). */
static int reserve_app_records(const RunContext *c, Error **err) {
        _cleanup_close_ int fd = open_beneath_no_symlinks(c->pod_fd, POD_APP_STATUS_DIR, O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
        if (fd < 0)
                return error_sys(err, fd, POD_APP_STATUS_DIR);
        for (size_t i = 0; i < c->manifest->n_apps; i++) {
                int r = pod_app_records_reserve_at(fd, c->manifest, &c->manifest->apps[i], err);
                if (r < 0)
                        return error_prefix(err, "app %s", c->manifest->apps[i].name);
        }
        return 0;
}

/* What the pod sees of its directory (sdpod-stage1(7), sdpod-security(7)):
 *
 *   /sdpod                  the pod directory, read-only: its manifest at
 *                           /sdpod/pod (the directory, not the file: seen
 *                           anew after each atomic rewrite), and the stop
 *                           requests at /sdpod/apps/NAME/stop-requested
 *   /sdpod/status           writable: the reapers record exit statuses
 *   /sdpod/volumes          writable: the empty volumes; host ones over
 *                           their names
 *   /var/log/journal        writable: the pod directory's journal/
 *
 * Nothing else of it can be written from the pod: not the stage1 manifest,
 * which names what the host executes (the stop and gc entrypoints), nor
 * the apps' directories that podapp creates and removes on the host. With
 * a user namespace these mounts are locked (the pod's root cannot make
 * them writable or take them away: mount_namespaces(7)). */
static int mount_pod_dir(const RunContext *c, int rootfs_fd, Error **err) {
        /* The pod's root, an "other" to the host's, reaches its manifest. */
        if (fchmod(c->pod_fd, 0711) < 0)
                return error_sys(err, -errno, "cannot make the pod directory reachable");
        int r;
        if ((r = make_pod_owned_dir(c, POD_APP_STATUS_DIR, 0755, 0, 0, err)) < 0 ||
            (r = reserve_app_records(c, err)) < 0 ||
            (r = make_pod_owned_dir(c, POD_JOURNAL_DIR, 0755, 0, 0, err)) < 0 ||
            (r = bind_pod_dir(c, POD_JOURNAL_DIR, "var/log/journal", false, err)) < 0)
                return r;
        _cleanup_close_ int fd = mkdir_p_in_root(rootfs_fd, "sdpod", 0755, false);
        if (fd < 0)
                return error_sys(err, fd, "cannot create /sdpod in the pod");
        if ((r = bind_pod_dir(c, ".", "sdpod", true, err)) < 0 ||
            (r = bind_pod_dir(c, POD_APP_STATUS_DIR, "sdpod/" POD_APP_STATUS_DIR, false, err)) < 0)
                return r;
        if (c->manifest->n_volumes == 0)
                return 0;
        if (mkdirat(c->pod_fd, "volumes", 0755) < 0 && errno != EEXIST)
                return error_sys(err, -errno, "cannot create volumes/");
        if ((r = bind_pod_dir(c, "volumes", "sdpod/volumes", false, err)) < 0)
                return r;
        for (size_t i = 0; i < c->manifest->n_volumes; i++)
                if ((r = mount_volume(c, &c->manifest->volumes[i], err)) < 0)
                        return r;
        return 0;
}

static int mount_pod(const RunContext *c, Error **err) {
        _cleanup_free_ char *image = NULL;
        int r = stage1_image_of(c->pod_fd, &image, err);
        if (r < 0)
                return r;
        _cleanup_free_ char *rootfs = path_join3(c->pod, "stage1/rootfs", NULL);
        AppRootLayers l = {
                .lower = path_join3(image, "rootfs", NULL),
                .upper = path_join3(c->pod, "stage1/upper", NULL),
                .work = path_join3(c->pod, "stage1/work", NULL),
                .lower_mountpoint = path_join3(c->pod, "stage1/lower", NULL),
        };
        if (!rootfs || !l.lower || !l.upper || !l.work || !l.lower_mountpoint)
                r = error_sys(err, -ENOMEM, "stage1");
        else if ((r = mount_layers(c, &l, rootfs, err)) < 0)
                error_prefix(err, "stage1");
        app_root_layers_done(&l);
        if (r < 0)
                return r;
        _cleanup_close_ int rootfs_fd = open_beneath_no_symlinks(c->pod_fd, "stage1/rootfs", O_PATH | O_DIRECTORY, 0);
        if (rootfs_fd < 0)
                return error_sys(err, rootfs_fd, "stage1/rootfs");
        for (size_t i = 0; i < c->manifest->n_apps; i++)
                if ((r = mount_app(c, rootfs_fd, &c->manifest->apps[i], err)) < 0)
                        return r;
        return mount_pod_dir(c, rootfs_fd, err);
}

/* The run entrypoint's namespace (nspawn's outside the pod) holds what it
 * needs of the host's mounts only: the pod's are made (its volumes bound
 * in), and nspawn, the CNI plugins and the supervisor need the system's
 * directories, the API file systems and the data directory. On a host whose
 * mounts are private (no systemd) nothing propagates into a slave: every
 * other host mount was pinned for the pod's life, its unmount on the host
 * ending nothing. */
static int detach_unneeded_mounts(const char *data, const PodNet *net, Error **err) {
        _cleanup_strv_free_ char **keep = NULL;
        static const char *const system_dirs[] = { "/usr", "/etc", "/opt", "/var/lib", "/proc", "/sys", "/dev", "/run" };
        for (size_t i = 0; i < ELEMENTSOF(system_dirs); i++)
                if (strv_push(&keep, system_dirs[i]) < 0)
                        return error_sys(err, -ENOMEM, "mounts");
        if (strv_push(&keep, data) < 0)
                return error_sys(err, -ENOMEM, "mounts");
        /* A namespace to join (--net=ns:PATH, the CRI's under containerd's
         * state directory): nspawn's child joins it by its path. */
        if (net->mode == POD_NET_NS && strv_push(&keep, net->ns_path) < 0)
                return error_sys(err, -ENOMEM, "mounts");
        /* The plugins' directories ($SDPOD_CNI_PATH), which DEL needs after
         * the pod has exited. */
        const char *cni = getenv("SDPOD_CNI_PATH");
        for (const char *d = cni; d && *d;) {
                size_t n = strcspn(d, ":");
                _cleanup_free_ char *dir = strndup(d, n);
                if (!dir || (dir[0] == '/' && strv_push(&keep, dir) < 0))
                        return error_sys(err, -ENOMEM, "mounts");
                d += n + (d[n] == ':');
        }
        return mount_namespace_detach_unneeded(keep, err);
}

/* "sdpod-UUID", or the pod's --name. */
/* Whether an app of the pod runs on its console (sdpod run -t) and the
 * console can be the caller's terminal: nspawn then relays typed keys to
 * it (--console=interactive), and must be the terminal's foreground job
 * to read them. Else the console is only relayed out (read-only), as
 * always: a pod started by pod@.service has no terminal to read. */
static bool console_interactive(const PodManifest *m) {
        for (size_t i = 0; i < m->n_apps; i++) {
                const char *v = pod_app_get_annotation(&m->apps[i], POD_ANNOTATION_TTY);
                if (v && streq(v, "true"))
                        return isatty(STDIN_FILENO) && tcgetpgrp(STDIN_FILENO) == getpgrp();
        }
        return false;
}

int pod_run_start(const char *uuid, PodRunStart *ret, Error **err) {
        *ret = (PodRunStart) { .host_mnt_fd = -1, .pod_fd = -1, .userns_fd = -1, .userns_hold = -1 };
        if (!getcwd(ret->pod, sizeof(ret->pod)))
                return error_sys(err, -errno, "pod %s: cannot tell the pod directory", uuid);
        char buf[PATH_MAX];
        snprintf(buf, sizeof(buf), "%s", ret->pod);
        snprintf(ret->data, sizeof(ret->data), "%s", dirname(dirname(dirname(buf)))); /* DATA/pods/run/UUID */
        /* The operator's mount namespace, where gc finds the pod's kept
         * network namespace (netns.h) after we are gone. */
        if ((ret->host_mnt_fd = open("/proc/self/ns/mnt", O_RDONLY | O_CLOEXEC)) < 0)
                return error_sys(err, -errno, "pod %s: /proc/self/ns/mnt", uuid);
        int r = mount_namespace_unshare(err);
        if (r < 0)
                return error_prefix(err, "pod %s", uuid);
        if ((ret->pod_fd = open(ret->pod, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
                return error_sys(err, -errno, "pod %s: %s", uuid, ret->pod);
        if ((r = pod_manifest_read_at(ret->pod_fd, "pod", "pod manifest", &ret->manifest, err)) < 0 ||
            (r = pod_userns_from_manifest(ret->manifest, &ret->userns, err)) < 0)
                return error_prefix(err, "pod %s", uuid);
        if (ret->userns.enabled && (ret->userns_fd = userns_fd_new(ret->userns.base, err)) < 0)
                return error_prefix(err, "pod %s", uuid);
        /* The range stays the machine's while the pod runs: nspawn's own
         * picks see it locked (pod-userns.h). */
        ret->userns_hold = pod_userns_hold(ret->data, uuid, &ret->userns, err);
        if (ret->userns.enabled && ret->userns_hold < 0)
                return error_prefix(err, "pod %s", uuid);
        const char *name = pod_manifest_get_annotation(ret->manifest, POD_ANNOTATION_NAME);
        if (asprintf(&ret->machine, "%s%s", name ? "" : "sdpod-", name ?: uuid) < 0) {
                ret->machine = NULL;
                return error_sys(err, -ENOMEM, "pod %s", uuid);
        }
        return 0;
}

void pod_run_start_done(PodRunStart *s) {
        closep(&s->host_mnt_fd);
        closep(&s->pod_fd);
        closep(&s->userns_fd);
        closep(&s->userns_hold);
        pod_manifest_free(s->manifest);
        free(s->machine);
        *s = (PodRunStart) { .host_mnt_fd = -1, .pod_fd = -1, .userns_fd = -1, .userns_hold = -1 };
}

int pod_run_entrypoint(const char *uuid, int (*run)(const char *uuid, int lock_fd, Error **err), Error **err) {
        const char *e = getenv("SDPOD_LOCK_FD");
        int fd = e ? atoi(e) : -1;
        if (fd < 3 || fcntl(fd, F_GETFD) < 0)
                return error_set(err, -EBADF, "SDPOD_LOCK_FD must name the open fd of the pod lock");
        unsetenv("SDPOD_LOCK_FD");
        int r = run(uuid, fd, err);
        const char *msg = *err ? (*err)->msg : strerror(ENOMEM);
        Error *ignored = NULL;
        if (write_file_atomic_at(AT_FDCWD, POD_RUN_ERROR_FILE, msg, strlen(msg), 0644, &ignored) < 0)
                error_free(ignored);
        return r < 0 ? r : -EIO;
}

int pod_run_exec(const char *uuid, int lock_fd, Error **err) {
        _cleanup_(pod_run_start_done) PodRunStart start = {};
        int r = pod_run_start(uuid, &start, err);
        if (r < 0)
                return r;
        /* Mounts made from here on live in this namespace only
         * (mount-util.h), nspawn's included. */
        if ((r = private_nspawn_propagate_dir(err)) < 0)
                return error_prefix(err, "pod %s", uuid);
        crash_point(CRASH_RUN_MOUNT_NS);
        const char *pod = start.pod, *machine = start.machine;
        const PodManifest *m = start.manifest;
        int pod_fd = start.pod_fd, host_mnt_fd = start.host_mnt_fd;
        RunContext c = { .pod = pod, .data = start.data, .pod_fd = pod_fd, .manifest = m, .userns = start.userns,
                         .userns_fd = start.userns_fd };
        if ((r = mount_pod(&c, err)) < 0)
                return error_prefix(err, "pod %s", uuid);
        crash_point(CRASH_RUN_MOUNTED);

        NspawnHost host;
        nspawn_host_detect(&host);
        bool interactive = console_interactive(m);
        /* Without a host systemd, the pod gets a cgroup of its own, which
         * nspawn hands to its user namespace, and cgroups it is not handed:
         * its device rule, its task limit (pod-cgroup.h). Under one, its
         * unit's: pod@.service's (set on it here), or nspawn's scope's
         * (below; the scope is DevicePolicy=closed already). */
        _cleanup_(pod_cgroup_limits_done) PodCgroupLimits limits = {};
        if ((r = pod_cgroup_limits_from_manifest(m, &limits, err)) < 0 ||
            (!host.systemd && (r = pod_cgroup_enter(uuid, &limits, err)) < 0) ||
            (host.systemd && host.keep_unit && (r = pod_unit_set_limits(uuid, &limits, err)) < 0))
                return error_prefix(err, "pod %s", uuid);
        _cleanup_close_ int unit_procs_fd = -1;
        if (host.systemd && host.keep_unit && (r = pod_unit_leave_root(&unit_procs_fd, err)) < 0)
                return error_prefix(err, "pod %s", uuid);
        _cleanup_(pod_net_done) PodNet net = {};
        _cleanup_free_ char *hostname_arg = NULL;
        if ((r = pod_net_from_manifest(m, &net, err)) < 0)
                return error_prefix(err, "pod %s", uuid);
        _cleanup_(pod_net_release) PodNetSetup ns = {
                .uuid = uuid, .pod = pod, .pod_fd = pod_fd, .manifest = m, .net = &net,
                .hostname = net.hostname ?: machine, .host_mnt_fd = host_mnt_fd,
                .userns = c.userns.enabled,
        };
        if ((r = pod_net_prepare(&ns, err)) < 0)
                return error_prefix(err, "pod %s", uuid);
        if (ns.netns)
                crash_point(CRASH_RUN_NETNS);
        if ((r = detach_unneeded_mounts(c.data, &net, err)) < 0)
                return error_prefix(err, "pod %s", uuid);
        _cleanup_free_ char *dir = NULL, *machine_arg = NULL, *uuid_arg = NULL, *users_arg = NULL;
        if ((net.hostname && asprintf(&hostname_arg, "--hostname=%s", net.hostname) < 0) ||
            asprintf(&dir, "--directory=%s/stage1/rootfs", pod) < 0 ||
            asprintf(&machine_arg, "--machine=%s", machine) < 0 || asprintf(&uuid_arg, "--uuid=%s", uuid) < 0 ||
            (c.userns.enabled ? asprintf(&users_arg, "--private-users=%u:%u", (unsigned) c.userns.base, POD_USERNS_SIZE)
                              : asprintf(&users_arg, "--private-users=no")) < 0)
                return error_sys(err, -ENOMEM, "pod %s", uuid);
        char *argv[] = {
                "systemd-nspawn", "--quiet", "--boot", dir, machine_arg, uuid_arg,
                "--notify-ready=yes", "--link-journal=no", "--timezone=off",
                interactive ? "--console=interactive" : "--console=read-only",
                users_arg,
                /* The overlays' ownership is set up already: never chown. */
                "--private-users-ownership=off",
                /* nspawn 252's filter lacks Landlock: each app's domain. */
                "--system-call-filter=" APP_DOMAIN_SYSCALLS,
                host.register_machine ? "--register=yes" : "--register=no",
                host.keep_unit ? "--keep-unit" : NULL,
                NULL, NULL, NULL, NULL,
        };
        /* In place of the first NULL: --keep-unit's, when not given. */
        size_t k = 0;
        while (argv[k])
                k++;
        if (ns.nspawn_option)
                argv[k++] = ns.nspawn_option;
        if (ns.net_admin)
                argv[k++] = "--capability=CAP_NET_ADMIN";
        if (hostname_arg)
                argv[k++] = hostname_arg;
        /* In the scope nspawn has machined make: the pod's task limit and
         * device volumes as the scope's properties (pod-cgroup.h). */
        _cleanup_strv_free_ char **nspawn_argv = strv_copy(argv);
        if (!nspawn_argv || (host.systemd && !host.keep_unit && host.register_machine &&
                             pod_scope_properties(&limits, &nspawn_argv) < 0))
                return error_sys(err, -ENOMEM, "pod %s", uuid);

        /* nspawn as a child, the network released and what it may leave
         * of the pod halted when it exits (pod-supervise.h). */
        uint64_t watchdog_usec = 0;
        const char *watchdog = pod_manifest_get_annotation(m, POD_ANNOTATION_WATCHDOG);
        if (watchdog && parse_duration(watchdog, &watchdog_usec) < 0)
                return error_set(err, -EINVAL, "pod %s: annotation %s: \"%s\" is not a duration", uuid,
                                 POD_ANNOTATION_WATCHDOG, watchdog);
        /* What the pod's console shows (its apps' output) reaches the
         * caller's terminal escaped: a pod must not drive it (OSC 52 writes
         * the clipboard). An interactive console is the user's terminal,
         * as they asked (sdpod(1), TERMINALS). */
        int console = -1, console_saved = -1, console_done = -1;
        if (!interactive && fcntl(STDOUT_FILENO, F_GETFD) >= 0) { /* without one, nothing to show */
                if ((console_saved = fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 3)) < 0 ||
                    (console = printable_filter_start(STDOUT_FILENO, &console_done)) < 0 ||
                    dup2(console, STDOUT_FILENO) < 0)
                        return error_sys(err, console < 0 && console_saved >= 0 ? console : -errno,
                                         "pod %s: cannot relay its console", uuid);
                close(console);
        }
        int status = pod_supervise(pod_fd, lock_fd, ns.netns, SYSTEMD_NSPAWN, nspawn_argv, watchdog_usec, interactive,
                                   unit_procs_fd, pod_net_attach, &ns, err);
        if (console_saved >= 0) {
                /* Our copy of the pipe closed, the filter is done once
                 * nspawn's is too. */
                fflush(stdout);
                (void) dup2(console_saved, STDOUT_FILENO);
                close(console_saved);
                console = -1;
                printable_filter_finish(&console, &console_done);
        }
        pod_net_release(&ns);
        if (status < 0)
                return error_prefix(err, "pod %s", uuid);
        exit(status);
}
