/* SPDX-License-Identifier: Apache-2.0 */
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <sys/mount.h>
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

/* Runs f in a child that has entered the mount namespace of process pid;
 * f returns 0 or a negative errno, which becomes the result. */
static int in_mount_namespace(pid_t pid, int (*f)(void *userdata), void *userdata) {
        char path[64];
        snprintf(path, sizeof(path), "/proc/%d/ns/mnt", (int) pid);
        _cleanup_close_ int ns = open(path, O_RDONLY | O_CLOEXEC);
        if (ns < 0)
                return -errno;
        pid_t child = fork();
        if (child < 0)
                return -errno;
        if (child == 0) {
                /* setns() also makes the namespace's root our root and cwd. */
                int r = setns(ns, CLONE_NEWNS) < 0 ? -errno : f(userdata);
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

static int move_into(void *userdata) {
        const MoveArgs *a = userdata;
        _cleanup_close_ int root = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (root < 0)
                return -errno;
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
 * below it), idmapped with userns_fd (>= 0) for a pod with a user
 * namespace, read-only when asked. The path is the operator's (or
 * containerd's); it is resolved as given. */
static int host_tree_clone(const char *path, int userns_fd, bool read_only, bool *ret_file, int *ret_fd, Error **err) {
        struct stat st;
        if (stat(path, &st) < 0)
                return error_sys(err, -errno, "%s", path);
        bool dir = S_ISDIR(st.st_mode);
        if (!dir && !S_ISREG(st.st_mode) && !S_ISFIFO(st.st_mode) && !S_ISCHR(st.st_mode) && !S_ISSOCK(st.st_mode))
                return error_set(err, -EINVAL, "%s: not a directory, file, FIFO, socket or character device", path);
        _cleanup_close_ int fd = open_tree(AT_FDCWD, path, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | (dir ? AT_RECURSIVE : 0));
        if (fd < 0)
                return error_sys(err, -errno, "%s: cannot clone its mount", path);
        /* nodev, with every mount below (a --rootfs, the shim's bundle
         * root, a --bind): no node there opens in the pod, whoever put it
         * there. A character device named itself (--stdin=/dev/null, a
         * terminal) is the operator's and stays one. */
        struct mount_attr attr = { .attr_set = S_ISCHR(st.st_mode) ? 0 : MOUNT_ATTR_NODEV };
        if (userns_fd >= 0) {
                attr.attr_set |= MOUNT_ATTR_IDMAP;
                attr.userns_fd = (uint64_t) userns_fd;
        }
        if (read_only)
                attr.attr_set |= MOUNT_ATTR_RDONLY;
        /* The kernel says EINVAL for a file system that cannot be idmapped
         * (overlayfs, measured on 6.18): a request this pod cannot serve. */
        if (attr.attr_set && mount_setattr(fd, "", AT_EMPTY_PATH | (dir ? AT_RECURSIVE : 0), &attr, sizeof(attr)) < 0)
                return error_sys(err, errno == EINVAL && userns_fd >= 0 ? -EOPNOTSUPP : -errno, "%s: cannot %s", path,
                                 userns_fd >= 0 ? "map it to the pod's user namespace (a file system that "
                                                  "cannot be idmapped, such as overlayfs: use a pod with "
                                                  "--private-users=no)"
                                                : "set its mount's flags (nodev, read-only)");
        *ret_file = !dir;
        *ret_fd = TAKE_FD(fd);
        return 0;
}

/* Mounts host path at target (absolute, in the pod). */
static int mount_host_path(const PodProcess *p, const char *path, const char *target, int userns_fd, bool read_only,
                           Error **err) {
        _cleanup_close_ int fd = -1;
        bool file = false;
        int r = host_tree_clone(path, userns_fd, read_only, &file, &fd, err);
        if (r < 0)
                return r;
        r = in_mount_namespace(p->leader, move_into, &(MoveArgs) { fd, target + 1, file });
        return r < 0 ? error_sys(err, r, "cannot mount %s at %s in the pod", path, target) : 0;
}

/* The app's standard input, output and error, and its binds, from the
 * host: at POD_APPS_DIR/NAME/stdio/{0,1,2} and .../binds/N in the pod. */
static int mount_host_files(const PodProcess *p, const PodApp *app, int userns_fd, Error **err) {
        static const char *const stdio[] = { POD_ANNOTATION_STDIN, POD_ANNOTATION_STDOUT, POD_ANNOTATION_STDERR };
        char target[sizeof(POD_APPS_DIR) + 96];
        int r;
        for (size_t i = 0; i < ELEMENTSOF(stdio); i++) {
                const char *path = pod_app_get_annotation(app, stdio[i]);
                if (!path)
                        continue;
                snprintf(target, sizeof(target), POD_APPS_DIR "/%s/stdio/%zu", app->name, i);
                /* An output file the operator named and that is not there
                 * yet is made (empty, for the app alone): a FIFO or a file
                 * that is there is taken as it is, never opened here. */
                if (i > 0) {
                        int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC, 0600);
                        if (fd >= 0)
                                close(fd);
                        else if (errno != EEXIST)
                                return error_sys(err, -errno, "%s", path);
                }
                if ((r = mount_host_path(p, path, target, userns_fd, false, err)) < 0)
                        return r;
        }
        PodHostBind *binds = NULL;
        size_t n = 0;
        if ((r = pod_app_host_binds(app, &binds, &n, err)) < 0)
                return r;
        for (size_t i = 0; r >= 0 && i < n; i++) {
                snprintf(target, sizeof(target), POD_APPS_DIR "/%s/binds/%zu", app->name, i);
                r = mount_host_path(p, binds[i].source, target, userns_fd, binds[i].read_only, err);
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
                       Error **err) {
        _cleanup_(app_root_layers_done) AppRootLayers l = {};
        _cleanup_close_ int mount_fd = -1, userns_fd = -1;
        char target[sizeof(POD_APPS_DIR) + 80], path[64];
        snprintf(target, sizeof(target), POD_APPS_DIR "/%s/rootfs", app->name);
        int r = app->rootfs ? 0 : app_root_layers(pod, data, app, &l, err);
        if (r < 0)
                return error_prefix(err, "app %s", app->name);
        if (userns) {
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
                if ((r = host_tree_clone(app->rootfs, userns_fd, false, &file, &mount_fd, err)) < 0)
                        return error_prefix(err, "app %s: its root", app->name);
                if (file)
                        return error_set(err, -ENOTDIR, "app %s: its root %s is not a directory", app->name, app->rootfs);
        } else if ((r = app_root_make(&l, userns_fd, &mount_fd, err)) < 0)
                return error_prefix(err, "app %s", app->name);
        r = in_mount_namespace(p->leader, move_into, &(MoveArgs) { mount_fd, target + 1, false });
        if (r < 0)
                return error_sys(err, r, "app %s: cannot mount its root at %s in the pod", app->name, target);
        r = mount_host_files(p, app, userns_fd, err);
        return r < 0 ? error_prefix(err, "app %s", app->name) : 0;
}

typedef struct UnmountArgs {
        const char *target;     /* absolute */
        const char *parent;     /* with target, removed after the unmount; NULL: keep both */
} UnmountArgs;

/* Unmounts and removes each entry of directory path (the stdio and binds
 * of an app in the pod), then the directory; what is not there is fine. */
static int unmount_entries(const char *path) {
        _cleanup_closedir_ DIR *d = opendir(path);
        if (!d)
                return errno == ENOENT || errno == ENOTDIR ? 0 : -errno;
        unsigned n = 0;
        struct dirent *e;
        while ((e = readdir(d)) && n++ < 4096) {
                if (streq(e->d_name, ".") || streq(e->d_name, ".."))
                        continue;
                /* Detached, beneath the directory's fd: nothing is followed. */
                char entry[PATH_MAX];
                if (snprintf(entry, sizeof(entry), "%s/%s", path, e->d_name) >= (int) sizeof(entry))
                        continue;
                if (umount2(entry, MNT_DETACH | UMOUNT_NOFOLLOW) < 0 && errno != EINVAL && errno != ENOENT)
                        return -errno;
                if (unlinkat(dirfd(d), e->d_name, 0) < 0 && errno == EISDIR)
                        (void) unlinkat(dirfd(d), e->d_name, AT_REMOVEDIR);
        }
        return rmdir(path) < 0 && errno != ENOENT && errno != ENOTEMPTY ? -errno : 0;
}

static int unmount_and_remove(void *userdata) {
        const UnmountArgs *a = userdata;
        if (a->parent) {
                /* The pod's side: the app's stdio and binds go first. */
                char path[PATH_MAX];
                snprintf(path, sizeof(path), "%s/stdio", a->parent);
                int r = unmount_entries(path);
                if (r < 0)
                        return r;
                snprintf(path, sizeof(path), "%s/binds", a->parent);
                if ((r = unmount_entries(path)) < 0)
                        return r;
        }
        /* Detached: a process that still has its cwd there (an exec that
         * outlived the app) does not keep the app's removal from going on. */
        if (umount2(a->target, MNT_DETACH | UMOUNT_NOFOLLOW) < 0 && errno != EINVAL && errno != ENOENT)
                return -errno;
        if (!a->parent)
                return 0;
        if ((rmdir(a->target) < 0 && errno != ENOENT) || (rmdir(a->parent) < 0 && errno != ENOENT))
                return -errno;
        return 0;
}

int pod_app_root_unmount(const PodProcess *p, const char *pod, const char *app, Error **err) {
        _cleanup_free_ char *in_pod = NULL, *in_pod_parent = NULL, *outside = NULL;
        if (asprintf(&in_pod_parent, POD_APPS_DIR "/%s", app) < 0 || asprintf(&in_pod, "%s/rootfs", in_pod_parent) < 0 ||
            asprintf(&outside, "%s/stage1/rootfs%s", pod, in_pod) < 0)
                return error_sys(err, -ENOMEM, "app %s", app);
        /* nspawn's namespace first: the pod's mounts are its copies (and,
         * where they are slaves, the unmount propagates). The directories
         * are the pod's own (the stage1 overlay): removed from inside. */
        int r = in_mount_namespace(p->nspawn, unmount_and_remove, &(UnmountArgs) { outside, NULL });
        if (r < 0 && r != -EBUSY)
                return error_sys(err, r, "app %s: cannot unmount its root %s in systemd-nspawn's namespace", app, outside);
        r = in_mount_namespace(p->leader, unmount_and_remove, &(UnmountArgs) { in_pod, in_pod_parent });
        return r < 0 ? error_sys(err, r, "app %s: cannot unmount its root %s in the pod", app, in_pod) : 0;
}
