/* SPDX-License-Identifier: Apache-2.0 */
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "basic/fs.h"
#include "basic/mount-util.h"
#include "image/image-store.h"
#include "pod/pod-app-root.h"
#include "unit/app-unit.h"

void app_root_layers_done(AppRootLayers *l) {
        free(l->lower);
        free(l->upper);
        free(l->work);
        free(l->lower_mountpoint);
        *l = (AppRootLayers) {};
}

int app_root_layers(const char *pod, const char *data, const PodApp *app, AppRootLayers *ret, Error **err) {
        _cleanup_(app_root_layers_done) AppRootLayers l = { .lower = image_tree_rootfs_path(data, app->image_id) };
        if (!l.lower || asprintf(&l.upper, "%s/" POD_APP_DIR "/%s/upper", pod, app->name) < 0 ||
            asprintf(&l.work, "%s/" POD_APP_DIR "/%s/work", pod, app->name) < 0 ||
            asprintf(&l.lower_mountpoint, "%s/" POD_APP_DIR "/%s/lower", pod, app->name) < 0)
                return error_sys(err, -ENOMEM, "app %s", app->name);
        if (access(l.lower, F_OK) < 0)
                return error_sys(err, -errno, "app %s: the tree of image %s (%s)", app->name, app->image_id, l.lower);
        *ret = l;
        l = (AppRootLayers) {};
        return 0;
}

/* Runs f in a child that has entered the mount namespace of process pid,
 * with rootfd, an fd of root (absolute in that namespace; NULL: its "/";
 * else a path of the host's own, POD/stage1/rootfs, whose every component
 * is the host's: the pod's tree begins below it),
 * the one way into the pod's tree: the child itself is rooted in the
 * host's procfs (pod_tree_enter()), so no path of the pod is ever resolved
 * but through pod_path_open() from rootfd. It is not dumpable and holds no
 * fd of ours but the namespace's. f returns 0 or a negative errno, which
 * becomes the result. */
static int in_mount_namespace(pid_t pid, const char *root, int (*f)(int rootfd, void *userdata), void *userdata) {
        char path[64];
        snprintf(path, sizeof(path), "/proc/%d/ns/mnt", (int) pid);
        _cleanup_close_ int ns = open(path, O_RDONLY | O_CLOEXEC);
        if (ns < 0)
                return -errno;
        _cleanup_close_ int proc = open("/proc", O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (proc < 0)
                return -errno;
        pid_t child = fork();
        if (child < 0)
                return -errno;
        if (child == 0) {
                int r = prctl(PR_SET_DUMPABLE, 0) < 0 ? -errno : 0;
                /* setns() also makes the namespace's root our root and cwd. */
                if (r >= 0 && setns(ns, CLONE_NEWNS) < 0)
                        r = -errno;
                int rootfd = r < 0 ? r : open(root ?: "/", O_PATH | O_DIRECTORY | O_CLOEXEC);
                if (r >= 0 && rootfd < 0)
                        r = -errno;
                if (r >= 0)
                        r = pod_tree_enter(proc);
                if (r >= 0)
                        r = f(rootfd, userdata);
                _exit(r < 0 ? (-r & 0xff) : 0);
        }
        int st;
        while (waitpid(child, &st, 0) < 0)
                if (errno != EINTR)
                        return -errno;
        return WIFEXITED(st) ? -WEXITSTATUS(st) : -EIO;
}

typedef struct MoveArgs {
        int mount_fd;
        const char *target;     /* relative to the root */
        bool file;              /* the mount is of a file (or FIFO): its mount point is a new empty file */
} MoveArgs;

static int move_into(int root, void *userdata) {
        const MoveArgs *a = userdata;
        _cleanup_close_ int fd = -1;
        if (!a->file)
                fd = mkdir_p_in_root(root, a->target, 0755, false);
        else {
                /* The pod's own tree: its directories are made without
                 * following a symlink, and the mount point must be new
                 * (O_EXCL), so a FIFO or a link planted there is never
                 * opened. */
                _cleanup_free_ char *parent = strdup(a->target);
                char *slash = parent ? strrchr(parent, '/') : NULL;
                if (!slash)
                        return -ENOMEM;
                *slash = 0;
                _cleanup_close_ int dir = mkdir_p_in_root(root, parent, 0755, false);
                if (dir < 0)
                        return dir;
                _cleanup_close_ int d = openat(dir, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                if (d < 0)
                        return -errno;
                fd = openat(d, slash + 1, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0600);
                if (fd < 0)
                        fd = -errno;
        }
        if (fd < 0)
                return fd;
        return move_mount(a->mount_fd, "", fd, "", MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) < 0 ? -errno : 0;
}

/* A detached copy of the host's path (a directory with what is mounted
 * below it), read-only when asked. The path is the operator's (or
 * containerd's); it is resolved as given. It is bound as a volume is, never
 * idmapped to the pod's user namespace: an idmapped bind would make the
 * pod's root the owner of the host's root-owned files there (it could
 * rewrite them, and leave a set-user-ID-root program for the host's
 * users). So the pod sees the host's owners as nobody, and what it writes
 * there is owned by its own range on the host. nodev: nothing there opens
 * a device. nosuid but for an app's root (app_root): a bind or stream
 * raises no app's privileges, while an app's own root keeps its
 * set-user-ID programs as an image's tree does (for the pod's ids only,
 * and only where the app's NoNewPrivileges is off; containerd's
 * containers expect them). */
static int host_tree_clone(const char *path, bool read_only, bool app_root, bool *ret_file, int *ret_fd, Error **err) {
        struct stat st;
        if (stat(path, &st) < 0)
                return error_sys(err, -errno, "%s", path);
        bool dir = S_ISDIR(st.st_mode);
        if (!dir && !S_ISREG(st.st_mode) && !S_ISFIFO(st.st_mode) && !S_ISCHR(st.st_mode) && !S_ISSOCK(st.st_mode))
                return error_set(err, -EINVAL, "%s: not a directory, file, FIFO, socket or character device", path);
        _cleanup_close_ int fd = open_tree(AT_FDCWD, path, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | (dir ? AT_RECURSIVE : 0));
        if (fd < 0)
                return error_sys(err, -errno, "%s: cannot clone its mount", path);
        /* A character device named itself (--stdin=/dev/null, a terminal)
         * is the operator's and stays one; nothing else there opens a
         * device, whoever put it there. */
        struct mount_attr attr = { .attr_set = (S_ISCHR(st.st_mode) ? 0 : MOUNT_ATTR_NODEV) |
                                               (app_root ? 0 : MOUNT_ATTR_NOSUID) };
        if (read_only)
                attr.attr_set |= MOUNT_ATTR_RDONLY;
        if (mount_setattr(fd, "", AT_EMPTY_PATH | (dir ? AT_RECURSIVE : 0), &attr, sizeof(attr)) < 0)
                return error_sys(err, -errno, "%s: cannot make its bind %s%s", path, app_root ? "nodev" : "nosuid, nodev",
                                 read_only ? " and read-only" : "");
        *ret_file = !dir;
        *ret_fd = TAKE_FD(fd);
        return 0;
}

/* Mounts host path at target (absolute, in the pod). */
static int mount_host_path(const PodProcess *p, const char *path, const char *target, bool read_only, Error **err) {
        _cleanup_close_ int fd = -1;
        bool file = false;
        int r = host_tree_clone(path, read_only, false, &file, &fd, err);
        if (r < 0)
                return r;
        r = in_mount_namespace(p->leader, NULL, move_into, &(MoveArgs) { fd, target + 1, file });
        return r < 0 ? error_sys(err, r, "cannot mount %s at %s in the pod", path, target) : 0;
}

/* The app's standard input, output and error, and its binds, from the
 * host: at POD_APPS_DIR/NAME/stdio/{0,1,2} and .../binds/N in the pod. */
static int mount_host_files(const PodProcess *p, const PodApp *app, uid_t root_uid, Error **err) {
        static const char *const stdio[] = { POD_ANNOTATION_STDIN, POD_ANNOTATION_STDOUT, POD_ANNOTATION_STDERR };
        char target[sizeof(POD_APPS_DIR) + 96];
        int r;
        for (size_t i = 0; i < ELEMENTSOF(stdio); i++) {
                const char *path = pod_app_get_annotation(app, stdio[i]);
                if (!path)
                        continue;
                snprintf(target, sizeof(target), POD_APPS_DIR "/%s/stdio/%zu", app->name, i);
                /* An output file the operator named and that is not there
                 * yet is made (empty, for the app alone, owned by the pod's
                 * root: the bind is not idmapped, see host_tree_clone()): a
                 * FIFO or a file that is there is taken as it is, never
                 * opened here; the pod's root opens it by its mode, as the
                 * host's nobody. */
                if (i > 0) {
                        _cleanup_close_ int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC,
                                                      0600);
                        if (fd < 0 && errno != EEXIST)
                                return error_sys(err, -errno, "%s", path);
                        if (fd >= 0 && root_uid != 0 && fchown(fd, root_uid, root_uid) < 0)
                                return error_sys(err, -errno, "%s: cannot give it to the pod's root", path);
                }
                if ((r = mount_host_path(p, path, target, false, err)) < 0)
                        return r;
        }
        PodHostBind *binds = NULL;
        size_t n = 0;
        if ((r = pod_app_host_binds(app, &binds, &n, err)) < 0)
                return r;
        for (size_t i = 0; r >= 0 && i < n; i++) {
                snprintf(target, sizeof(target), POD_APPS_DIR "/%s/binds/%zu", app->name, i);
                r = mount_host_path(p, binds[i].source, target, binds[i].read_only, err);
        }
        pod_host_binds_free(binds, n);
        return r;
}

int app_root_make(const AppRootLayers *l, int userns_fd, int *ret_fd, Error **err) {
        OverlayLayers o = {
                .lower = l->lower, .upper = l->upper, .work = l->work,
                .userns_fd = userns_fd, .lower_mountpoint = l->lower_mountpoint,
        };
        return mount_overlay_detached(&o, ret_fd, err);
}

int pod_app_root_mount(const PodProcess *p, const char *pod, const char *data, const PodApp *app, bool userns,
                       uid_t root_uid, Error **err) {
        _cleanup_(app_root_layers_done) AppRootLayers l = {};
        _cleanup_close_ int mount_fd = -1, userns_fd = -1;
        char target[sizeof(POD_APPS_DIR) + 80], path[64];
        snprintf(target, sizeof(target), POD_APPS_DIR "/%s/rootfs", app->name);
        int r = app->rootfs ? 0 : app_root_layers(pod, data, app, &l, err);
        if (r < 0)
                return error_prefix(err, "app %s", app->name);
        if (userns && !app->rootfs) {
                /* The pod's own user namespace maps the tree as the pod's
                 * ids; the idmapped mount is attached for a moment, in a
                 * mount namespace of ours. */
                snprintf(path, sizeof(path), "/proc/%d/ns/user", (int) p->leader);
                if ((userns_fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
                        return error_sys(err, -errno, "app %s: the pod's user namespace", app->name);
                if ((r = mount_namespace_unshare(err)) < 0)
                        return error_prefix(err, "app %s", app->name);
        }
        if (app->rootfs) {
                /* The directory as it is: the app's changes land in it. */
                bool file = false;
                if ((r = host_tree_clone(app->rootfs, false, true, &file, &mount_fd, err)) < 0)
                        return error_prefix(err, "app %s: its root", app->name);
                if (file)
                        return error_set(err, -ENOTDIR, "app %s: its root %s is not a directory", app->name, app->rootfs);
                /* Not idmapped (host_tree_clone()): in a pod with a user
                 * namespace the app's root must be the pod's already, or
                 * its systemd cannot even make the app's mount points. A
                 * tree the host's root owns is refused here, clearly. */
                struct stat st = {};
                if (userns && (fstat(mount_fd, &st) < 0 || st.st_uid != root_uid))
                        return error_set(err, -EOPNOTSUPP,
                                         "app %s: its root %s is owned by uid %u on the host, not by the pod's root "
                                         "(%u): a --rootfs is bound as it is, never idmapped, so give the tree to "
                                         "the pod's range (chown -R %u:%u) or use a pod made with "
                                         "--private-users=no (sdpod-security(7))",
                                         app->name, app->rootfs, (unsigned) st.st_uid, (unsigned) root_uid,
                                         (unsigned) root_uid, (unsigned) root_uid);
        } else if ((r = app_root_make(&l, userns_fd, &mount_fd, err)) < 0)
                return error_prefix(err, "app %s", app->name);
        r = in_mount_namespace(p->leader, NULL, move_into, &(MoveArgs) { mount_fd, target + 1, false });
        if (r < 0)
                return error_sys(err, r, "app %s: cannot mount its root at %s in the pod", app->name, target);
        r = mount_host_files(p, app, root_uid, err);
        return r < 0 ? error_prefix(err, "app %s", app->name) : 0;
}

typedef struct UnmountArgs {
        const char *app;        /* the app's directory, below the root */
        bool remove;            /* unmount stdio, binds and rootfs, and remove them; else unmount rootfs only */
} UnmountArgs;

/* Removes name of dirfd, whatever the pod made it (a link, a file, an
 * empty directory): the entry only, never what a link leads to. */
static int remove_entry(int dirfd, const char *name) {
        if (unlinkat(dirfd, name, 0) >= 0 || errno == ENOENT)
                return 0;
        if (errno != EISDIR)
                return -errno;
        return unlinkat(dirfd, name, AT_REMOVEDIR) < 0 && errno != ENOENT && errno != ENOTEMPTY ? -errno : 0;
}

/* Unmounts and removes each entry of the directory name of app (the stdio
 * and binds of an app in the pod), then the directory; what is not there
 * is fine, and a link or file the pod put in its place is removed, never
 * followed. */
static int unmount_entries(int app, const char *name) {
        _cleanup_close_ int dir = pod_path_open(app, name, O_RDONLY | O_DIRECTORY, 0);
        if (dir == -ENOENT)
                return 0;
        if (dir == -ELOOP || dir == -ENOTDIR)
                return remove_entry(app, name);
        if (dir < 0)
                return dir;
        _cleanup_closedir_ DIR *d = opendir_at(dir, ".");
        if (!d)
                return -errno;
        unsigned n = 0;
        struct dirent *e;
        while ((e = readdir(d)) && n++ < 4096) {
                if (streq(e->d_name, ".") || streq(e->d_name, ".."))
                        continue;
                int r = pod_path_umount(dir, e->d_name);
                if (r < 0 && r != -ELOOP)
                        return r;
                if ((r = remove_entry(dir, e->d_name)) < 0)
                        return r;
        }
        return remove_entry(app, name);
}

static int unmount_and_remove(int root, void *userdata) {
        const UnmountArgs *a = userdata;
        _cleanup_close_ int app = pod_path_open(root, a->app, O_RDONLY | O_DIRECTORY, 0);
        if (app == -ENOENT)
                return 0;
        if (app == -ELOOP || app == -ENOTDIR) {
                /* Not the directory we made: a link (or a file) the pod
                 * put there. Nothing of ours is below it; the link goes. */
                if (!a->remove)
                        return 0;
                _cleanup_free_ char *parent = strdup(a->app);
                char *slash = parent ? strrchr(parent, '/') : NULL;
                if (!slash)
                        return -ENOMEM;
                *slash = 0;
                _cleanup_close_ int dir = pod_path_open(root, parent, O_RDONLY | O_DIRECTORY, 0);
                return dir < 0 ? (dir == -ENOENT ? 0 : dir) : remove_entry(dir, slash + 1);
        }
        if (app < 0)
                return app;
        int r;
        /* The pod's side: the app's stdio and binds go first. */
        if (a->remove && ((r = unmount_entries(app, "stdio")) < 0 || (r = unmount_entries(app, "binds")) < 0))
                return r;
        /* Detached: a process that still has its cwd there (an exec that
         * outlived the app) does not keep the app's removal from going on. */
        r = pod_path_umount(app, "rootfs");
        if (r < 0 && r != -ELOOP)
                return r;
        if (!a->remove)
                return 0;
        if ((r = remove_entry(app, "rootfs")) < 0)
                return r;
        /* The app's directory itself, by its parent's fd. */
        _cleanup_free_ char *parent = strdup(a->app);
        char *slash = parent ? strrchr(parent, '/') : NULL;
        if (!slash)
                return -ENOMEM;
        *slash = 0;
        _cleanup_close_ int dir = pod_path_open(root, parent, O_RDONLY | O_DIRECTORY, 0);
        if (dir < 0)
                return dir == -ENOENT ? 0 : dir;
        return unlinkat(dir, slash + 1, AT_REMOVEDIR) < 0 && errno != ENOENT ? -errno : 0;
}

int pod_app_root_unmount(const PodProcess *p, const char *pod, const char *app, Error **err) {
        _cleanup_free_ char *in_pod = NULL, *stage1 = NULL;
        if (asprintf(&in_pod, POD_APPS_DIR "/%s", app) < 0 || asprintf(&stage1, "%s/stage1/rootfs", pod) < 0)
                return error_sys(err, -ENOMEM, "app %s", app);
        /* nspawn's namespace first: the pod's mounts are its copies (and,
         * where they are slaves, the unmount propagates). The directories
         * are the pod's own (the stage1 overlay): removed from inside.
         * Both resolved below the pod's root, the stage1's tree. */
        int r = in_mount_namespace(p->nspawn, stage1, unmount_and_remove, &(UnmountArgs) { in_pod + 1, false });
        if (r < 0 && r != -EBUSY)
                return error_sys(err, r, "app %s: cannot unmount its root %s/rootfs in systemd-nspawn's namespace", app,
                                 in_pod);
        r = in_mount_namespace(p->leader, NULL, unmount_and_remove, &(UnmountArgs) { in_pod + 1, true });
        return r < 0 ? error_sys(err, r, "app %s: cannot unmount its root %s/rootfs in the pod", app, in_pod) : 0;
}
