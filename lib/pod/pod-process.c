/* SPDX-License-Identifier: Apache-2.0 */
#include <fcntl.h>
#include <linux/close_range.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>

#include "basic/fs.h"
#include "pod/pod-process.h"

int pod_pid_file_write(int pod_fd, pid_t pid, int lock_fd, Error **err) {
        char buf[32];
        int n = snprintf(buf, sizeof(buf), "%d %d\n", (int) pid, lock_fd);
        return write_file_atomic_at(pod_fd, POD_PID_FILE, buf, (size_t) n, 0644, err);
}

int pod_lock_keep_alone_on_exec(int lock_fd) {
        if (fcntl(lock_fd, F_SETFD, 0) < 0 || (lock_fd > 3 && close_range(3, lock_fd - 1, CLOSE_RANGE_CLOEXEC) < 0) ||
            close_range(lock_fd + 1, ~0U, CLOSE_RANGE_CLOEXEC) < 0)
                return -errno;
        return 0;
}

void pod_process_done(PodProcess *p) {
        closep(&p->nspawn_pidfd);
        *p = (PodProcess) { .nspawn_pidfd = -1 };
}

/* Whether pid's fd holds a flock on the inode (dev, ino), per its fdinfo:
 * "lock:\t1: FLOCK  ADVISORY  WRITE 1234 08:01:5678 0 EOF". (Not
 * /proc/locks: its first read in a process takes 5 to 20 ms.) The PID in
 * the line is the lock's first owner, whoever has the fd now. */
static bool holds_flock(pid_t pid, int fd, dev_t dev, ino_t ino) {
        char path[64], line[256];
        snprintf(path, sizeof(path), "/proc/%d/fdinfo/%d", (int) pid, fd);
        _cleanup_fclose_ FILE *f = fopen(path, "re");
        while (f && fgets(line, sizeof(line), f)) {
                char type[16];
                unsigned maj, min;
                uint64_t lino;
                /* A lock someone waits for is listed as "1: -> FLOCK ...". */
                if (sscanf(line, "lock: %*d: %15s %*s %*s %*d %x:%x:%" SCNu64, type, &maj, &min, &lino) == 4 &&
                    streq(type, "FLOCK") && makedev(maj, min) == dev && lino == ino)
                        return true;
        }
        return false;
}

pid_t pod_first_child(pid_t parent) {
        char path[64], buf[256];
        snprintf(path, sizeof(path), "/proc/%d/task/%d/children", parent, parent);
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
        ssize_t n = fd < 0 ? -1 : read(fd, buf, sizeof(buf) - 1);
        if (n <= 0)
                return 0;
        buf[n] = 0;
        return (pid_t) atoi(buf);
}

int pod_process_find(int pod_fd, const char *uuid, PodProcess *ret, Error **err) {
        *ret = (PodProcess) { .nspawn_pidfd = -1 };
        _cleanup_free_ char *data = NULL;
        size_t size;
        Error *ignored = NULL;
        struct stat st;
        if (fstat(pod_fd, &st) < 0)
                return error_sys(err, -errno, "pod %s", uuid);
        int r = read_file_at(pod_fd, POD_PID_FILE, 64, &data, &size, &ignored);
        error_free(ignored);
        int pid = 0, lock_fd = -1;
        if (r < 0 || sscanf(data, "%d %d", &pid, &lock_fd) != 2)
                pid = 0;
        if (pid <= 0)
                return error_set(err, -ESRCH, "pod %s is not running (no pid file)", uuid);
        int pidfd = (int) syscall(SYS_pidfd_open, pid, 0);
        if (pidfd < 0 && errno != ESRCH)
                return error_sys(err, -errno, "pod %s: process %d", uuid, (int) pid);
        /* Checked after the pidfd is open: if pid is ours now, the pidfd
         * refers to it, whatever happens to the number later. */
        if (pidfd < 0 || !holds_flock(pid, lock_fd, st.st_dev, st.st_ino)) {
                if (pidfd >= 0)
                        close(pidfd);
                return error_set(err, -ESRCH, "pod %s is not running", uuid);
        }
        *ret = (PodProcess) { .nspawn = pid, .nspawn_pidfd = pidfd, .leader = pod_first_child(pid) };
        return 0;
}

bool pod_leader_alive(const PodProcess *p) {
        /* A process loses its root early in its exit, before it is even a
         * zombie: a root we can reach is a process that still runs. */
        char path[64];
        snprintf(path, sizeof(path), "/proc/%d/root/", (int) p->leader);
        return p->leader > 0 && access(path, F_OK) == 0;
}

static int ns_inode(pid_t pid, const char *ns, ino_t *ret) {
        char path[64];
        struct stat st;
        snprintf(path, sizeof(path), "/proc/%d/ns/%s", (int) pid, ns);
        if (stat(path, &st) < 0)
                return -errno;
        *ret = st.st_ino;
        return 0;
}

/* Whether the cgroup of pid (any hierarchy) is ".../unit". */
static bool in_unit_cgroup(pid_t pid, const char *unit) {
        char path[64], line[1024];
        snprintf(path, sizeof(path), "/proc/%d/cgroup", (int) pid);
        _cleanup_fclose_ FILE *f = fopen(path, "re");
        size_t l = strlen(unit);
        while (f && fgets(line, sizeof(line), f)) {
                line[strcspn(line, "\n")] = 0;
                size_t n = strlen(line);
                if (n > l && line[n - l - 1] == '/' && streq(line + n - l, unit))
                        return true;
        }
        return false;
}

/* Calls f for each process in the pod's pid namespace whose cgroup is the
 * unit's (unit NULL: each process), until f returns false. */
static int pod_walk_pids(const PodProcess *p, const char *unit, bool (*f)(pid_t pid, void *userdata), void *userdata) {
        ino_t pod_ns, ns;
        if (p->leader <= 0 || ns_inode(p->leader, "pid", &pod_ns) < 0)
                return -ESRCH;
        _cleanup_closedir_ DIR *d = opendir("/proc");
        if (!d)
                return -errno;
        for (struct dirent *de; (de = readdir(d));) {
                pid_t pid = (pid_t) atoi(de->d_name);
                if (pid <= 0 || ns_inode(pid, "pid", &ns) < 0 || ns != pod_ns || (unit && !in_unit_cgroup(pid, unit)))
                        continue;
                if (!f(pid, userdata))
                        break;
        }
        return 0;
}

static bool keep_lowest(pid_t pid, void *userdata) {
        pid_t *best = userdata;
        if (!*best || pid < *best)
                *best = pid;
        return true;
}

int pod_unit_pid(const PodProcess *p, const char *unit, pid_t *ret) {
        pid_t best = 0;
        int r = pod_walk_pids(p, unit, keep_lowest, &best);
        if (r < 0)
                return r;
        if (!best)
                return -ESRCH;
        *ret = best;
        return 0;
}

typedef struct PidList {
        pid_t *pids;
        size_t n, max;
} PidList;

static bool collect_pid(pid_t pid, void *userdata) {
        PidList *l = userdata;
        l->pids[l->n++] = pid;
        return l->n < l->max;
}

int pod_unit_pids(const PodProcess *p, const char *unit, pid_t *ret, size_t max, size_t *ret_n) {
        PidList l = { ret, 0, max };
        int r = max ? pod_walk_pids(p, unit, collect_pid, &l) : 0;
        *ret_n = l.n;
        return r;
}

/* Whether pid is the init of a pid namespace below ours: "NSpid: 4528 1". */
static bool is_nested_init(pid_t pid) {
        char path[64], line[256];
        snprintf(path, sizeof(path), "/proc/%d/status", (int) pid);
        _cleanup_fclose_ FILE *f = fopen(path, "re");
        while (f && fgets(line, sizeof(line), f)) {
                if (!startswith(line, "NSpid:"))
                        continue;
                unsigned n = 0;
                const char *last = NULL;
                char *save = NULL;
                for (char *t = strtok_r(line + strlen("NSpid:"), " \t\n", &save); t; t = strtok_r(NULL, " \t\n", &save), n++)
                        last = t;
                return n >= 2 && streq(last, "1");
        }
        return false;
}

static bool has_environ(pid_t pid, const char *entry) {
        char path[64];
        snprintf(path, sizeof(path), "/proc/%d/environ", (int) pid);
        _cleanup_free_ char *data = NULL;
        size_t size;
        Error *ignored = NULL;
        int r = read_file(path, 1 << 20, &data, &size, &ignored);
        error_free(ignored);
        for (size_t i = 0; r >= 0 && i < size; i += strlen(data + i) + 1)
                if (streq(data + i, entry))
                        return true;
        return false;
}

int pod_kill_leftovers(const char *uuid, Error **err) {
        char entry[64];
        snprintf(entry, sizeof(entry), "container_uuid=%s", uuid);
        _cleanup_closedir_ DIR *d = opendir("/proc");
        if (!d)
                return error_sys(err, -errno, "/proc");
        int killed = 0;
        for (struct dirent *de; (de = readdir(d));) {
                pid_t pid = (pid_t) atoi(de->d_name);
                if (pid <= 0 || !is_nested_init(pid))
                        continue;
                _cleanup_close_ int fd = (int) syscall(SYS_pidfd_open, pid, 0);
                /* Checked once the pidfd is open, so the kill cannot hit a
                 * process that took over the number. */
                if (fd < 0 || !has_environ(pid, entry))
                        continue;
                if (syscall(SYS_pidfd_send_signal, fd, SIGKILL, NULL, 0) < 0 && errno != ESRCH)
                        return error_sys(err, -errno, "pod %s: cannot kill its PID 1 (%d)", uuid, (int) pid);
                struct pollfd p = { .fd = fd, .events = POLLIN };
                if (poll(&p, 1, 5000) <= 0)
                        return error_set(err, -ETIMEDOUT, "pod %s: its PID 1 (%d) did not die within 5 s", uuid, (int) pid);
                killed++;
        }
        return killed;
}
