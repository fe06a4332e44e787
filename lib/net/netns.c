/* SPDX-License-Identifier: Apache-2.0 */
#include <fcntl.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <unistd.h>
#include <linux/nsfs.h>

#include "basic/macro.h"
#include "net/netns.h"

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
        _cleanup_close_ int sysctl = r < 0 ? -1 : open("/proc/sys/net/ipv4/ip_unprivileged_port_start", O_WRONLY | O_CLOEXEC);
        if (r >= 0 && (sysctl < 0 || write(sysctl, "0\n", 2) != 2))
                r = error_sys(err, -errno, "cannot open the ports of the pod's network namespace to its users");
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
