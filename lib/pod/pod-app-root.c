/* SPDX-License-Identifier: Apache-2.0 */
#include <fcntl.h>
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
} MoveArgs;

static int move_into(void *userdata) {
        const MoveArgs *a = userdata;
        _cleanup_close_ int root = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
        _cleanup_close_ int fd = root < 0 ? -errno : mkdir_p_in_root(root, a->target, 0755, false);
        if (fd < 0)
                return fd;
        return move_mount(a->mount_fd, "", fd, "", MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) < 0 ? -errno : 0;
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
        int r = app_root_layers(pod, data, app, &l, err);
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
        if ((r = app_root_make(&l, userns_fd, &mount_fd, err)) < 0)
                return error_prefix(err, "app %s", app->name);
        r = in_mount_namespace(p->leader, move_into, &(MoveArgs) { mount_fd, target + 1 });
        return r < 0 ? error_sys(err, r, "app %s: cannot mount its root at %s in the pod", app->name, target) : 0;
}

typedef struct UnmountArgs {
        const char *target;     /* absolute */
        const char *parent;     /* with target, removed after the unmount; NULL: keep both */
} UnmountArgs;

static int unmount_and_remove(void *userdata) {
        const UnmountArgs *a = userdata;
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
