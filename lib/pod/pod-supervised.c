/* SPDX-License-Identifier: Apache-2.0 */
#include <fcntl.h>
#include <signal.h>
#include <sys/syscall.h>

#include "net/netns.h"
#include "net/pod-network.h"
#include "pod/pod-cgroup.h"
#include "pod/pod-process.h"
#include "pod/pod-supervised.h"

int pod_supervised_stop(const char *uuid, bool force, Error **err) {
        _cleanup_close_ int pod_fd = open(".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        PodProcess p = { .nspawn_pidfd = -1 };
        if (pod_fd < 0)
                return error_sys(err, -errno, "pod %s", uuid);
        int r = pod_process_find(pod_fd, uuid, &p, err);
        if (r < 0)
                return r;
        if (!force) {
                if (syscall(SYS_pidfd_send_signal, p.nspawn_pidfd, SIGTERM, NULL, 0) < 0)
                        r = error_sys(err, -errno, "pod %s: cannot signal its supervisor (%d)", uuid, (int) p.nspawn);
        } else {
                /* The child (fly: the app, PID 1 of its namespace, whose
                 * end is everyone's there; kvm: QEMU): the supervisor then
                 * records its end and cleans up. */
                int fd = p.leader > 0 ? (int) syscall(SYS_pidfd_open, p.leader, 0) : -1;
                if (fd >= 0) {
                        if (syscall(SYS_pidfd_send_signal, fd, SIGKILL, NULL, 0) < 0)
                                r = error_sys(err, -errno, "pod %s: cannot kill its child (%d)", uuid, (int) p.leader);
                        close(fd);
                } else if (syscall(SYS_pidfd_send_signal, p.nspawn_pidfd, SIGKILL, NULL, 0) < 0)
                        r = error_sys(err, -errno, "pod %s: cannot kill its supervisor (%d)", uuid, (int) p.nspawn);
        }
        pod_process_done(&p);
        return r;
}

int pod_supervised_gc(const char *uuid, Error **err) {
        /* The pod's cgroup first: the handle the app cannot leave. */
        int n = pod_cgroup_kill(uuid, err);
        if (n < 0)
                return n;
        if (n > 0)
                fprintf(stderr, "gc: pod %s: killed what was left in its cgroup\n", uuid);
        _cleanup_close_ int pod_fd = open(".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        char kept[NETNS_KEPT_PATH_MAX];
        netns_kept_path(uuid, kept);
        Error *ignored = NULL;
        bool have_kept = netns_check(kept, &ignored) >= 0;
        error_free(ignored);
        int r;
        if (pod_fd < 0)
                return error_sys(err, -errno, "pod %s", uuid);
        if ((r = pod_network_down(pod_fd, uuid, have_kept ? kept : "", err)) < 0 ||
            (r = netns_unkeep(-1, uuid, err)) < 0 || (r = pod_cgroup_remove(uuid, err)) < 0)
                return r;
        (void) pod_cgroup_remove_stale();
        return 0;
}
