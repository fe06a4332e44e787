/* SPDX-License-Identifier: Apache-2.0 */
#include <fcntl.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>
#include <linux/nsfs.h>
#include <sys/wait.h>

#include "basic/fs.h"
#include "basic/macro.h"
#include "net/netns.h"

static int write_sysctl(const char *proc, const char *name, const char *value) {
        char path[256];
        snprintf(path, sizeof(path), "%s/sys/net/%s", proc, name);
        _cleanup_close_ int fd = open(path, O_WRONLY | O_CLOEXEC);
        size_t n = strlen(value);
        return fd < 0 ? -errno : write(fd, value, n) == (ssize_t) n ? 0 : -EIO;
}

/* Where /proc/sys is mounted read-only (sdpod in a container, as in the
 * system tests), a procfs of our own, in this private mount namespace,
 * writes it: net sysctls are those of the writer's namespace, whatever
 * the mount. */
int netns_sysctl_set(const char *name, const char *value, Error **err) {
        int r = write_sysctl("/proc", name, value);
        if (r != -EROFS)
                return r < 0 ? error_sys(err, r, "cannot set net.%s in the pod's network namespace", name) : 0;
        char dir[] = "/tmp/sdpod-proc.XXXXXX";
        if (!mkdtemp(dir))
                return error_sys(err, -errno, "cannot set net.%s in the pod's network namespace", name);
        r = mount("proc", dir, "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0 ? -errno : write_sysctl(dir, name, value);
        (void) umount2(dir, MNT_DETACH);
        (void) rmdir(dir);
        return r < 0 ? error_sys(err, r, "cannot set net.%s in the pod's network namespace", name) : 0;
}

int netns_new_at(const char *path, Error **err) {
        _cleanup_close_ int self = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
        if (self < 0)
                return error_sys(err, -errno, "cannot open this process's network namespace");
        _cleanup_close_ int file = open(path, O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644);
        if (file < 0)
                return error_sys(err, -errno, "cannot create %s", path);
        if (unshare(CLONE_NEWNET) < 0)
                return error_sys(err, -errno, "cannot create a network namespace");
        int r = 0;
        if (mount("/proc/self/ns/net", path, NULL, MS_BIND, NULL) < 0)
                r = error_sys(err, -errno, "cannot bind the new network namespace to %s", path);
        /* The namespace is the host root's, not the pod's user namespace's:
         * root in the pod has no CAP_NET_BIND_SERVICE over it, and could
         * not listen on port 80. Every port is a pod's own to use in its
         * own namespace (as Docker and podman set it); this sysctl is the
         * namespace's, which is where we are now. */
        if (r >= 0)
                r = netns_sysctl_set("ipv4/ip_unprivileged_port_start", "0\n", err);
        /* Back to where we were, whatever happened: plugins and nspawn run
         * from the host's side. */
        if (setns(self, CLONE_NEWNET) < 0)
                return error_sys(err, -errno, "cannot return to the host's network namespace");
        return r;
}

int netns_check(const char *path, Error **err) {
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
        if (fd < 0)
                return error_sys(err, -errno, "network namespace %s", path);
        int type = ioctl(fd, NS_GET_NSTYPE);
        if (type != CLONE_NEWNET)
                return error_set(err, -EINVAL, "%s is not a network namespace", path);
        return 0;
}

bool netns_is_hosts(const char *path) {
        struct stat ns, own, init;
        if (stat(path, &ns) < 0 || stat("/proc/self/ns/net", &own) < 0)
                return true;
        if (ns.st_dev == own.st_dev && ns.st_ino == own.st_ino)
                return true;
        /* PID 1's may be out of the caller's reach (a run entrypoint may
         * not trace it: EACCES); then nothing of it is compared. */
        return stat("/proc/1/ns/net", &init) == 0 && ns.st_dev == init.st_dev && ns.st_ino == init.st_ino;
}

void netns_kept_path(const char *uuid, char path[static NETNS_KEPT_PATH_MAX]) {
        snprintf(path, NETNS_KEPT_PATH_MAX, NETNS_KEPT_DIR "/%s", uuid);
}

/* In the child: binds the namespace of ns_fd at path, in mnt_fd's mount
 * namespace. */
static int keep_in(int mnt_fd, int ns_fd, const char *path) {
        if (mnt_fd >= 0 && setns(mnt_fd, CLONE_NEWNS) < 0)
                return -errno;
        int r = mkdir_p(NETNS_KEPT_DIR, 0700);
        if (r < 0)
                return r;
        /* Left by an earlier run that could not release it: ours now. */
        (void) umount2(path, MNT_DETACH | UMOUNT_NOFOLLOW);
        int file = open(path, O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (file < 0)
                return -errno;
        close(file);
        char source[64];
        snprintf(source, sizeof(source), "/proc/self/fd/%d", ns_fd);
        return mount(source, path, NULL, MS_BIND, NULL) < 0 ? -errno : 0;
}

static int unkeep_in(int mnt_fd, const char *path) {
        if (mnt_fd >= 0 && setns(mnt_fd, CLONE_NEWNS) < 0)
                return -errno;
        if (umount2(path, MNT_DETACH | UMOUNT_NOFOLLOW) < 0 && errno != EINVAL && errno != ENOENT)
                return -errno;
        return unlink(path) < 0 && errno != ENOENT ? -errno : 0;
}

/* Runs keep_in() or unkeep_in() in a child, which alone enters mnt_fd's
 * mount namespace (ours stays private). */
static int in_child(int mnt_fd, int ns_fd, const char *path) {
        pid_t pid = fork();
        if (pid < 0)
                return -errno;
        if (pid == 0)
                _exit(-(ns_fd >= 0 ? keep_in(mnt_fd, ns_fd, path) : unkeep_in(mnt_fd, path)) & 0xff);
        int st;
        while (waitpid(pid, &st, 0) < 0)
                if (errno != EINTR)
                        return -errno;
        return WIFEXITED(st) ? -WEXITSTATUS(st) : -EIO;
}

int netns_keep(const char *netns, int mnt_fd, const char *uuid, Error **err) {
        char path[NETNS_KEPT_PATH_MAX];
        netns_kept_path(uuid, path);
        _cleanup_close_ int ns = open(netns, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
        if (ns < 0)
                return error_sys(err, -errno, "network namespace %s", netns);
        int r = in_child(mnt_fd, ns, path);
        return r < 0 ? error_sys(err, r, "cannot keep the pod's network namespace at %s", path) : 0;
}

int netns_unkeep(int mnt_fd, const char *uuid, Error **err) {
        char path[NETNS_KEPT_PATH_MAX];
        netns_kept_path(uuid, path);
        int r = mnt_fd >= 0 ? in_child(mnt_fd, -1, path) : unkeep_in(-1, path);
        return r < 0 ? error_sys(err, r, "cannot remove %s", path) : 0;
}

int netns_run(const char *path, int (*fn)(void *userdata, Error **err), void *userdata, Error **err) {
        _cleanup_close_ int host = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
        _cleanup_close_ int target = open(path, O_RDONLY | O_CLOEXEC);
        if (host < 0 || target < 0)
                return error_sys(err, -errno, "network namespace %s", host < 0 ? "/proc/self/ns/net" : path);
        if (setns(target, CLONE_NEWNET) < 0)
                return error_sys(err, -errno, "cannot enter the network namespace %s", path);
        int r = fn(userdata, err);
        if (setns(host, CLONE_NEWNET) < 0) {
                /* Nothing this process does on the network would be right. */
                fprintf(stderr, "cannot return to the host's network namespace: %m\n");
                abort();
        }
        return r;
}
