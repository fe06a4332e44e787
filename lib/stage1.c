/* SPDX-License-Identifier: Apache-2.0 */
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "fs.h"
#include "json-util.h"
#include "stage1.h"

int stage1_render(int pod_fd, Error **err) {
        _cleanup_close_ int fd = mkdir_p_in_root(pod_fd, "stage1/rootfs/opt/stage2", 0755, false);
        if (fd < 0)
                return error_sys(err, fd, "cannot create stage1/rootfs/opt/stage2");
        return 0;
}

/* The value of annotation name of the stage1 manifest; NULL when absent. */
static int stage1_entrypoint(int pod_fd, const char *name, char **ret, Error **err) {
        if (faccessat(pod_fd, "stage1/manifest", F_OK, AT_SYMLINK_NOFOLLOW) < 0 && errno == ENOENT) {
                *ret = NULL;
                return 0;
        }
        _cleanup_free_ char *data = NULL;
        size_t size;
        int r = read_file_at(pod_fd, "stage1/manifest", 1 << 20, &data, &size, err);
        if (r < 0)
                return r;
        _cleanup_json_ struct json_object *m = NULL;
        struct json_object *annotations = NULL;
        if ((r = json_parse(data, size, "stage1/manifest", &m, err)) < 0 ||
            (r = json_get_array(m, "annotations", false, &annotations, "stage1/manifest", err)) < 0)
                return r;
        for (size_t i = 0; annotations && i < json_object_array_length(annotations); i++) {
                struct json_object *a = json_object_array_get_idx(annotations, i);
                const char *n = NULL, *v = NULL;
                if ((r = json_get_string(a, "name", true, &n, "stage1/manifest annotations", err)) < 0 ||
                    (r = json_get_string(a, "value", true, &v, "stage1/manifest annotations", err)) < 0)
                        return r;
                if (streq(n, name)) {
                        if (v[0] != '/')
                                return error_set(err, -EBADMSG, "stage1/manifest: entrypoint %s: \"%s\" is not an absolute path", name, v);
                        return (*ret = strdup(v)) ? 0 : error_sys(err, -ENOMEM, "stage1/manifest");
                }
        }
        *ret = NULL;
        return 0;
}

int stage1_run_gc(int pod_fd, const char *uuid, Error **err) {
        _cleanup_free_ char *entry = NULL;
        int r = stage1_entrypoint(pod_fd, STAGE1_ENTRYPOINT_GC, &entry, err);
        if (r < 0)
                return error_prefix(err, "pod %s", uuid);
        if (!entry)
                return 0;

        _cleanup_close_ int rootfs = open_beneath_no_symlinks(pod_fd, "stage1/rootfs", O_PATH | O_DIRECTORY | O_CLOEXEC, 0);
        if (rootfs < 0)
                return error_sys(err, rootfs, "pod %s: stage1/rootfs", uuid);
        /* Symlinks inside the stage1 resolve within it, as they would in
         * the pod. */
        _cleanup_close_ int exe = open_in_root(rootfs, entry, O_PATH | O_CLOEXEC, 0);
        if (exe < 0)
                return error_sys(err, exe, "pod %s: stage1 gc entrypoint %s", uuid, entry);

        pid_t pid = fork();
        if (pid < 0)
                return error_sys(err, -errno, "pod %s: cannot run the stage1 gc entrypoint", uuid);
        if (pid == 0) {
                /* A script is run by its interpreter as /dev/fd/N: the fd
                 * must survive the exec. */
                char *argv[] = { entry, (char *) uuid, NULL };
                if (fchdir(pod_fd) < 0 || fcntl(exe, F_SETFD, 0) < 0)
                        _exit(127);
                syscall(SYS_execveat, exe, "", argv, environ, AT_EMPTY_PATH);
                _exit(127);
        }
        int status;
        while (waitpid(pid, &status, 0) < 0)
                if (errno != EINTR)
                        return error_sys(err, -errno, "pod %s: stage1 gc entrypoint %s", uuid, entry);
        if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
                return 0;
        if (WIFEXITED(status))
                return error_set(err, -EPROTO, "pod %s: stage1 gc entrypoint %s failed with exit status %d", uuid, entry, WEXITSTATUS(status));
        return error_set(err, -EPROTO, "pod %s: stage1 gc entrypoint %s was killed by signal %d", uuid, entry, WTERMSIG(status));
}
