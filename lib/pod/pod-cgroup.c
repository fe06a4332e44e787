/* SPDX-License-Identifier: Apache-2.0 */
#include <fcntl.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <time.h>

#include "basic/fs.h"
#include "basic/uuid.h"
#include "pod/pod-cgroup.h"

#define CGROUP_ROOT "/sys/fs/cgroup"
/* A pod makes the cgroups below its own (its systemd, one per unit):
 * deeper than this, they are left for the kernel (and reported). */
#define CGROUP_DEPTH_MAX 64

/* The hierarchies nspawn places a container in: the unified one and, on a
 * hybrid or legacy host, systemd's named one. NULL-terminated in ret. */
static void hierarchies(const char *ret[static 3]) {
        struct statfs fs;
        size_t n = 0;
        if (statfs(CGROUP_ROOT, &fs) == 0 && fs.f_type == CGROUP2_SUPER_MAGIC)
                ret[n++] = CGROUP_ROOT;
        else {
                if (statfs(CGROUP_ROOT "/unified", &fs) == 0 && fs.f_type == CGROUP2_SUPER_MAGIC)
                        ret[n++] = CGROUP_ROOT "/unified";
                if (statfs(CGROUP_ROOT "/systemd", &fs) == 0 && fs.f_type == CGROUP_SUPER_MAGIC)
                        ret[n++] = CGROUP_ROOT "/systemd";
        }
        ret[n] = NULL;
}

int pod_cgroup_enter(const char *uuid, Error **err) {
        const char *h[3];
        hierarchies(h);
        for (const char **i = h; *i; i++) {
                char path[PATH_MAX];
                snprintf(path, sizeof(path), "%s/sdpod/%s", *i, uuid);
                int r = mkdir_p(path, 0755);
                if (r < 0)
                        return error_sys(err, r, "cannot create the cgroup %s", path);
                _cleanup_close_ int dir = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                _cleanup_close_ int procs = dir < 0 ? -1 : openat(dir, "cgroup.procs", O_WRONLY | O_CLOEXEC);
                if (procs < 0 || write(procs, "0", 1) != 1)
                        return error_sys(err, -errno, "cannot move into the cgroup %s", path);
        }
        return 0;
}

/* Removes the cgroup name of dir and its children, deepest first (a cgroup
 * directory goes with rmdir(2), its control files with it). */
static int remove_cgroup(int dir, const char *name, unsigned depth) {
        if (depth > CGROUP_DEPTH_MAX)
                return -ELOOP;
        _cleanup_closedir_ DIR *d = opendir_at(dir, name);
        if (!d)
                return errno == ENOENT ? 0 : -errno;
        int ret = 0;
        for (struct dirent *de; (de = readdir(d));) {
                if (de->d_type != DT_DIR || streq(de->d_name, ".") || streq(de->d_name, ".."))
                        continue;
                int r = remove_cgroup(dirfd(d), de->d_name, depth + 1);
                if (r < 0 && ret == 0)
                        ret = r;
        }
        if (unlinkat(dir, name, AT_REMOVEDIR) < 0 && errno != ENOENT && ret == 0)
                ret = -errno;
        return ret;
}

/* Whether the cgroup tree at dir has a process (its cgroup.procs, or a
 * child's, is not empty); errors count as "yes": keep it. */
static bool cgroup_busy(int dir, unsigned depth) {
        char buf[16];
        _cleanup_close_ int procs = openat(dir, "cgroup.procs", O_RDONLY | O_CLOEXEC);
        if (procs < 0 || read(procs, buf, sizeof(buf)) != 0 || depth > CGROUP_DEPTH_MAX)
                return true;
        _cleanup_closedir_ DIR *d = opendir_at(dir, ".");
        if (!d)
                return true;
        for (struct dirent *de; (de = readdir(d));) {
                if (de->d_type != DT_DIR || de->d_name[0] == '.')
                        continue;
                _cleanup_close_ int child = openat(dir, de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (child < 0 || cgroup_busy(child, depth + 1))
                        return true;
        }
        return false;
}

int pod_cgroup_remove_stale(void) {
        const char *h[3];
        int removed = 0;
        hierarchies(h);
        time_t now = time(NULL);
        for (const char **i = h; *i; i++) {
                char path[PATH_MAX];
                snprintf(path, sizeof(path), "%s/sdpod", *i);
                _cleanup_closedir_ DIR *d = opendir_at(AT_FDCWD, path);
                if (!d)
                        continue;
                for (struct dirent *de; (de = readdir(d));) {
                        struct stat st;
                        if (de->d_type != DT_DIR || !uuid_is_valid(de->d_name) ||
                            fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 || now - st.st_mtime < 60)
                                continue;
                        _cleanup_close_ int c = openat(dirfd(d), de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                        if (c >= 0 && !cgroup_busy(c, 0) && remove_cgroup(dirfd(d), de->d_name, 0) >= 0)
                                removed++;
                }
        }
        return removed;
}

int pod_cgroup_remove(const char *uuid, Error **err) {
        const char *h[3];
        hierarchies(h);
        for (const char **i = h; *i; i++) {
                char path[PATH_MAX];
                snprintf(path, sizeof(path), "%s/sdpod", *i);
                _cleanup_close_ int dir = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                if (dir < 0)
                        continue;
                int r = remove_cgroup(dir, uuid, 0);
                if (r < 0)
                        return error_sys(err, r, "cannot remove the cgroup %s/%s", path, uuid);
        }
        return 0;
}

char *pod_cgroup_path(const char *uuid) {
        char *s = NULL;
        return asprintf(&s, "/sdpod/%s", uuid) < 0 ? NULL : s;
}
