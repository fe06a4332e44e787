/* SPDX-License-Identifier: Apache-2.0 */
#include <fcntl.h>
#include <libgen.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "basic/fs.h"
#include "basic/json-util.h"
#include "basic/strv.h"
#include "config.h"
#include "pod/stage1.h"

const char *stage1_image_dir(void) {
        const char *e = getenv("SDPOD_STAGE1");
        return e && *e ? e : SDPOD_STAGE1_DIR;
}

static int read_manifest_at(int dirfd, const char *path, const char *what, struct json_object **ret, Error **err) {
        _cleanup_free_ char *data = NULL;
        size_t size;
        int r = read_file_at(dirfd, path, 1 << 20, &data, &size, err);
        return r < 0 ? r : json_parse(data, size, what, ret, err);
}

/* The value of the annotation name, NULL when absent. */
static int manifest_annotation(struct json_object *m, const char *name, const char *what, const char **ret, Error **err) {
        struct json_object *annotations = NULL;
        int r = json_get_array(m, "annotations", false, &annotations, what, err);
        if (r < 0)
                return r;
        *ret = NULL;
        for (size_t i = 0; annotations && i < json_object_array_length(annotations); i++) {
                struct json_object *a = json_object_array_get_idx(annotations, i);
                const char *n = NULL, *v = NULL;
                if ((r = json_get_string(a, "name", true, &n, what, err)) < 0 ||
                    (r = json_get_string(a, "value", true, &v, what, err)) < 0)
                        return r;
                if (streq(n, name))
                        *ret = v;
        }
        return 0;
}

int stage1_image_of_arg(const char *arg, char **ret, Error **err) {
        char *s = NULL;
        const char *sibling = !arg ? NULL : streq(arg, STAGE1_FLAVOR_FLY) ? STAGE1_FLY_DIR_NAME
                            : streq(arg, STAGE1_FLAVOR_KVM) ? STAGE1_KVM_DIR_NAME : NULL;
        if (!arg || streq(arg, STAGE1_FLAVOR_NSPAWN))
                s = strdup(stage1_image_dir());
        else if (sibling) {
                _cleanup_free_ char *d = strdup(stage1_image_dir());
                if (d && asprintf(&s, "%s/%s", dirname(d), sibling) < 0)
                        s = NULL;
                /* The kvm flavor's image is built only where its parts are
                 * (a cloud kernel, mkfs.erofs): say what is missing. */
                if (s && access(s, F_OK) < 0) {
                        int k = -errno;
                        _cleanup_free_ char *image = s;
                        return streq(arg, STAGE1_FLAVOR_KVM)
                                       ? error_set(err, k, "--stage1=kvm: its image %s is not there: the kvm flavor is "
                                                   "built where linux-image-cloud-amd64, erofs-utils and "
                                                   "qemu-system-x86 are installed", image)
                                       : error_sys(err, k, "--stage1=%s: its image %s", arg, image);
                }
        } else if (strchr(arg, '/'))
                s = strdup(arg);
        else
                return error_set(err, -EINVAL, "--stage1=%s: expected fly, kvm, nspawn or the path of a stage1 image", arg);
        return (*ret = s) ? 0 : error_sys(err, -ENOMEM, "stage1");
}

/* The flavor annotation of the manifest at dirfd/path, into buf. */
static const char *flavor_at(int dirfd, const char *path, char buf[static 32]) {
        _cleanup_json_ struct json_object *m = NULL;
        const char *v = NULL;
        _cleanup_error_ Error *ignored = NULL;
        if (read_manifest_at(dirfd, path, path, &m, &ignored) < 0 ||
            manifest_annotation(m, STAGE1_ANNOTATION_FLAVOR, path, &v, &ignored) < 0 || !v)
                return STAGE1_FLAVOR_NSPAWN;
        snprintf(buf, 32, "%s", v);
        text_make_printable(buf, strlen(buf), false);
        return buf;
}

const char *stage1_flavor_of(int pod_fd, char buf[static 32]) {
        return flavor_at(pod_fd, "stage1/manifest", buf);
}

bool stage1_flavor_has_log(const char *flavor) {
        return streq(flavor, STAGE1_FLAVOR_FLY) || streq(flavor, STAGE1_FLAVOR_KVM);
}

const char *stage1_image_flavor(const char *image, char buf[static 32]) {
        _cleanup_close_ int fd = open(image, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        return fd < 0 ? STAGE1_FLAVOR_NSPAWN : flavor_at(fd, "manifest", buf);
}

int stage1_render(int pod_fd, const char *image, uid_t root_uid, Error **err) {
        if (!image)
                image = stage1_image_dir();
        char abs[PATH_MAX];
        if (!realpath(image, abs))
                return error_sys(err, -errno, "stage1 image %s", image);
        _cleanup_close_ int image_fd = open(abs, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (image_fd < 0)
                return error_sys(err, -errno, "stage1 image %s", abs);
        if (faccessat(image_fd, "rootfs", X_OK, 0) < 0)
                return error_sys(err, -errno, "stage1 image %s: rootfs", abs);

        _cleanup_json_ struct json_object *m = NULL;
        struct json_object *annotations = NULL;
        int r = read_manifest_at(image_fd, "manifest", "stage1 image manifest", &m, err);
        if (r < 0 || (r = json_get_array(m, "annotations", false, &annotations, "stage1 image manifest", err)) < 0)
                return error_prefix(err, "stage1 image %s", abs);
        if (!annotations && ((annotations = json_object_new_array()) == NULL ||
                             json_object_object_add(m, "annotations", annotations) < 0))
                return error_sys(err, -ENOMEM, "stage1 manifest");
        struct json_object *a = json_object_new_object();
        if (!a || json_object_array_add(annotations, a) < 0 ||
            json_add_string(a, "name", STAGE1_ANNOTATION_IMAGE) < 0 || json_add_string(a, "value", abs) < 0)
                return error_sys(err, -ENOMEM, "stage1 manifest");

        static const char *const dirs[] = { "stage1/rootfs", "stage1/upper", "stage1/work", "stage1/lower" };
        for (size_t i = 0; i < ELEMENTSOF(dirs); i++) {
                /* The upper layer is the root directory of the pod. */
                uid_t owner = streq(dirs[i], "stage1/upper") ? root_uid : 0;
                int k = mkdir_owned_beneath(pod_fd, dirs[i], 0755, owner, owner);
                if (k < 0)
                        return error_sys(err, k, "cannot create %s", dirs[i]);
        }
        const char *text = json_to_text(m, true);
        return write_file_atomic_at(pod_fd, "stage1/manifest", text, strlen(text), 0644, err);
}

int stage1_image_of(int pod_fd, char **ret, Error **err) {
        _cleanup_json_ struct json_object *m = NULL;
        const char *image = NULL;
        int r = read_manifest_at(pod_fd, "stage1/manifest", "stage1/manifest", &m, err);
        if (r < 0 || (r = manifest_annotation(m, STAGE1_ANNOTATION_IMAGE, "stage1/manifest", &image, err)) < 0)
                return r;
        char q[VALUE_QUOTED_MAX];
        if (!image)
                return error_set(err, -EBADMSG, "stage1/manifest names no stage1 image (%s)", STAGE1_ANNOTATION_IMAGE);
        if (image[0] != '/')
                return error_set(err, -EBADMSG, "stage1/manifest: %s: %s is not an absolute path",
                                 STAGE1_ANNOTATION_IMAGE, value_quote(image, q));
        return (*ret = strdup(image)) ? 0 : error_sys(err, -ENOMEM, "stage1/manifest");
}

/* Opens the program of entrypoint name for execution (O_PATH), or
 * -EOPNOTSUPP when the image names none. ret_path is its path in the
 * image. The pod's stage1/manifest only tells which image: the entrypoint
 * is the one the image's own manifest names, inside the image's rootfs. */
static int open_entrypoint(int pod_fd, const char *name, char **ret_path, Error **err) {
        /* A pod whose preparation failed before its stage1 was rendered
         * has none: nothing to run. (A pod cannot remove its own: the
         * pod directory is read-only in it.) */
        if (!exists_beneath(pod_fd, "stage1/manifest"))
                return -EOPNOTSUPP;
        _cleanup_free_ char *image = NULL;
        int r = stage1_image_of(pod_fd, &image, err);
        if (r < 0)
                return r;
        _cleanup_close_ int image_fd = open(image, O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (image_fd < 0)
                return error_sys(err, -errno, "stage1 image %s", image);
        _cleanup_json_ struct json_object *m = NULL;
        const char *entry = NULL;
        char q[VALUE_QUOTED_MAX];
        if ((r = read_manifest_at(image_fd, "manifest", "stage1 image manifest", &m, err)) < 0 ||
            (r = manifest_annotation(m, name, "stage1 image manifest", &entry, err)) < 0)
                return error_prefix(err, "stage1 image %s", image);
        if (!entry)
                return -EOPNOTSUPP;
        if (entry[0] != '/')
                return error_set(err, -EBADMSG, "stage1 image %s: entrypoint %s: %s is not an absolute path", image,
                                 name, value_quote(entry, q));
        _cleanup_close_ int rootfs = open_beneath_no_symlinks(image_fd, "rootfs", O_PATH | O_DIRECTORY, 0);
        if (rootfs < 0)
                return error_sys(err, rootfs, "stage1 image %s: rootfs", image);
        /* Symlinks inside the stage1 resolve within it, as they would in
         * the pod. */
        int exe = open_in_root(rootfs, entry, O_PATH, 0);
        if (exe < 0)
                return error_sys(err, exe, "stage1 %s entrypoint %s", name + strlen("sdpod/stage1/"), entry);
        if (!(*ret_path = strdup(entry))) {
                close(exe);
                return error_sys(err, -ENOMEM, "stage1");
        }
        return exe;
}

/* In the process that becomes the entrypoint. */
static void exec_entrypoint(int pod_fd, int exe, const char *path, const char *uuid, char *const *args) {
        size_t n = strv_length((char **) args);
        char **argv = calloc(n + 3, sizeof(char *));
        if (!argv)
                return;
        argv[0] = (char *) path;
        argv[1] = (char *) uuid;
        for (size_t i = 0; i < n; i++)
                argv[2 + i] = args[i];
        /* A script is run by its interpreter as /dev/fd/N: the fd must
         * survive the exec. */
        if (fchdir(pod_fd) < 0 || fcntl(exe, F_SETFD, 0) < 0)
                return;
        syscall(SYS_execveat, exe, "", argv, environ, AT_EMPTY_PATH);
        free(argv);
}

int stage1_exec(int pod_fd, const char *uuid, const char *name, char *const *args, Error **err) {
        _cleanup_free_ char *path = NULL;
        _cleanup_close_ int exe = open_entrypoint(pod_fd, name, &path, err);
        if (exe == -EOPNOTSUPP)
                return error_set(err, exe, "pod %s: its stage1 has no %s entrypoint", uuid, name + strlen("sdpod/stage1/"));
        if (exe < 0)
                return error_prefix(err, "pod %s", uuid);
        exec_entrypoint(pod_fd, exe, path, uuid, args);
        return error_sys(err, -errno, "pod %s: cannot execute the stage1 entrypoint %s", uuid, path);
}

int stage1_exec_run(int pod_fd, const char *uuid, Error **err) {
        char fd[16];
        snprintf(fd, sizeof(fd), "%d", pod_fd);
        if (setenv("SDPOD_LOCK_FD", fd, 1) < 0 || fcntl(pod_fd, F_SETFD, 0) < 0)
                return error_sys(err, -errno, "pod %s: cannot pass its lock on", uuid);
        fflush(stdout);
        int r = stage1_exec(pod_fd, uuid, STAGE1_ENTRYPOINT_RUN, NULL, err);
        fcntl(pod_fd, F_SETFD, FD_CLOEXEC);
        unsetenv("SDPOD_LOCK_FD");
        return r;
}

int stage1_exec_enter(int pod_fd, const char *uuid, const char *app, unsigned flags, char *const *cmd, Error **err) {
        size_t n = 0;
        for (char *const *c = cmd; c && *c; c++)
                n++;
        _cleanup_free_ char *app_arg = NULL;
        _cleanup_free_ char **args = calloc(n + 6, sizeof(char *));
        if (!args || (app && asprintf(&app_arg, "--app=%s", app) < 0))
                return error_sys(err, -ENOMEM, "pod %s", uuid);
        size_t k = 0;
        if (app_arg)
                args[k++] = app_arg;
        if (flags & ENTER_AS_APP)
                args[k++] = (char *) "--as-app";
        if (flags & ENTER_TTY)
                args[k++] = (char *) "--tty";
        if (flags & ENTER_INTERACTIVE)
                args[k++] = (char *) "--interactive";
        args[k++] = (char *) "--";
        for (size_t i = 0; i < n; i++)
                args[k++] = cmd[i];
        return stage1_exec(pod_fd, uuid, STAGE1_ENTRYPOINT_ENTER, args, err);
}

int stage1_run(int pod_fd, const char *uuid, const char *name, char *const *args, Error **err) {
        const char *what = name + strlen("sdpod/stage1/");
        _cleanup_free_ char *path = NULL;
        _cleanup_close_ int exe = open_entrypoint(pod_fd, name, &path, err);
        if (exe == -EOPNOTSUPP)
                return error_set(err, exe, "pod %s: its stage1 has no %s entrypoint", uuid, what);
        if (exe < 0)
                return error_prefix(err, "pod %s", uuid);

        pid_t pid = fork();
        if (pid < 0)
                return error_sys(err, -errno, "pod %s: cannot run the stage1 %s entrypoint", uuid, what);
        if (pid == 0) {
                exec_entrypoint(pod_fd, exe, path, uuid, args);
                _exit(127);
        }
        int status;
        while (waitpid(pid, &status, 0) < 0)
                if (errno != EINTR)
                        return error_sys(err, -errno, "pod %s: stage1 %s entrypoint %s", uuid, what, path);
        if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
                return 0;
        if (WIFEXITED(status))
                return error_set(err, -EPROTO, "pod %s: stage1 %s entrypoint %s failed with exit status %d", uuid, what, path, WEXITSTATUS(status));
        return error_set(err, -EINTR, "pod %s: stage1 %s entrypoint %s was killed by signal %d", uuid, what, path, WTERMSIG(status));
}
