/* SPDX-License-Identifier: Apache-2.0 */
#include <fcntl.h>
#include <grp.h>
#include <libgen.h>
#include <net/if.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <linux/capability.h>
#include <systemd/sd-daemon.h>

#include "basic/fs.h"
#include "basic/mount-util.h"
#include "basic/strv.h"
#include "basic/time-util.h"
#include "fly/fly-run.h"
#include "manifest/app-lifecycle.h"
#include "manifest/pod-net.h"
#include "net/net-files.h"
#include "net/netns.h"
#include "net/pod-net-setup.h"
#include "net/pod-network.h"
#include "pod/pod-app-root.h"
#include "pod/pod-log.h"
#include "pod/pod-cgroup.h"
#include "pod/pod-info.h"
#include "pod/pod-process.h"
#include "pod/pod-run.h"
#include "pod/pod-supervised.h"
#include "pod/pod-userns.h"
#include "fly/fly-seccomp.h"
#include "unit/app-isolators.h"
#include "unit/rootfs-lookup.h"

/* ---- the child: becomes the app ---- */

typedef struct FlyChild {
        const char *uuid;
        int pod_fd;
        const char *pod;                /* the pod directory's path */
        const char *root;               /* the app's root, mounted: POD/stage1/rootfs */
        const PodApp *app;
        const AppIsolation *iso;
        const PodCgroupLimits *limits;
        const PodNet *net;
        const char *netns;              /* to join, or NULL */
        const char *hostname;
        bool userns;
        uid_t uid;
        gid_t gid;
        const char *program;
        char **argv, **env;
        int out;                        /* the write end of the output pipe */
        int err_fd;                     /* the error pipe: a message, on failure */
        int sync_child, sync_parent;    /* userns: "unshared" to the parent, "mapped" back */
} FlyChild;

static _noreturn_ void child_fail(const FlyChild *c, int r, const char *fmt, ...) {
        char msg[512];
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(msg, sizeof(msg), fmt, ap);
        va_end(ap);
        if (n >= 0 && (size_t) n < sizeof(msg))
                snprintf(msg + n, sizeof(msg) - n, ": %s", strerror(r < 0 ? -r : r));
        (void) !write(c->err_fd, msg, strlen(msg));
        _exit(127);
}

#define CHECK(c, expr, ...)                                        \
        do {                                                       \
                if ((expr) < 0)                                    \
                        child_fail(c, errno, __VA_ARGS__);         \
        } while (0)

static int open_tree_clone(int dirfd, const char *path) {
        return (int) syscall(SYS_open_tree, dirfd, path, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);
}

/* A file or directory to mount on, made when missing (in the app's root,
 * after pivot_root: a symlink there leads nowhere but into the app). */
static void make_target(const FlyChild *c, const char *path, bool dir) {
        struct stat st;
        if (lstat(path, &st) >= 0)
                return;
        if (dir)
                CHECK(c, mkdir(path, 0755), "cannot create %s in the app's root", path);
        else {
                int fd = open(path, O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644);
                CHECK(c, fd, "cannot create %s in the app's root", path);
                close(fd);
        }
}

static void move_tree(const FlyChild *c, int fd, const char *target, bool read_only) {
        make_target(c, target, false);
        CHECK(c, (int) syscall(SYS_move_mount, fd, "", AT_FDCWD, target, MOVE_MOUNT_F_EMPTY_PATH), "cannot mount %s",
              target);
        if (read_only)
                CHECK(c, mount(NULL, target, NULL, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV, NULL),
                      "cannot make %s read-only", target);
        close(fd);
}

static void bind_read_only(const FlyChild *c, const char *path) {
        struct stat st;
        if (lstat(path, &st) < 0)
                return;
        CHECK(c, mount(path, path, NULL, MS_BIND | MS_REC, NULL), "cannot bind %s", path);
        CHECK(c, mount(NULL, path, NULL, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL),
              "cannot make %s read-only", path);
}

/* What Docker masks of /proc and /sys: kernel memory and keys, timers
 * that leak other tasks' addresses, hardware interfaces. */
static const char *const masked_paths[] = {
        "/proc/asound", "/proc/acpi", "/proc/kcore", "/proc/keys", "/proc/latency_stats", "/proc/timer_list",
        "/proc/timer_stats", "/proc/sched_debug", "/proc/scsi", "/proc/kallsyms", "/sys/firmware",
        "/sys/devices/virtual/powercap", "/sys/kernel/debug", "/sys/kernel/security",
};
/* The kernel's tunables and interfaces, read-only. */
static const char *const read_only_paths[] = {
        "/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger",
};
static const char *const devices[] = { "null", "zero", "full", "random", "urandom", "tty" };

static void mask(const FlyChild *c, const char *path) {
        struct stat st;
        if (lstat(path, &st) < 0)
                return;
        if (S_ISDIR(st.st_mode))
                CHECK(c, mount("tmpfs", path, "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, "size=0,mode=0555"),
                      "cannot mask %s", path);
        else
                CHECK(c, mount("/dev/null", path, NULL, MS_BIND, NULL), "cannot mask %s", path);
}

static void loopback_up(const FlyChild *c) {
        int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        CHECK(c, s, "socket");
        struct ifreq ifr = {};
        snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "lo");
        CHECK(c, ioctl(s, SIOCGIFFLAGS, &ifr), "lo");
        ifr.ifr_flags |= IFF_UP;
        CHECK(c, ioctl(s, SIOCSIFFLAGS, &ifr), "cannot bring lo up");
        close(s);
}

static void write_str(const FlyChild *c, const char *path, const char *s) {
        int fd = open(path, O_WRONLY | O_CLOEXEC);
        CHECK(c, fd, "%s", path);
        CHECK(c, (int) write(fd, s, strlen(s)), "%s", path);
        close(fd);
}

static _noreturn_ void child(const FlyChild *c) {
        /* stdin nothing, stdout and stderr the pipe to the supervisor. */
        int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
        CHECK(c, null, "/dev/null");
        CHECK(c, dup2(null, 0), "stdin");
        CHECK(c, dup2(c->out, 1), "stdout");
        CHECK(c, dup2(c->out, 2), "stderr");

        /* The pod's cgroup (its device rule, its task limit), then a
         * cgroup namespace rooted there. */
        Error *e = NULL;
        if (pod_cgroup_enter(c->uuid, c->limits, &e) < 0)
                child_fail(c, e ? -e->code : ENOMEM, "%s", e ? e->msg : "cgroup");
        CHECK(c, unshare(CLONE_NEWCGROUP), "cgroup namespace");

        bool own_netns = c->net->mode != POD_NET_HOST;
        if (c->netns) {
                int fd = open(c->netns, O_RDONLY | O_CLOEXEC);
                CHECK(c, fd, "network namespace %s", c->netns);
                CHECK(c, setns(fd, CLONE_NEWNET), "cannot join the network namespace %s", c->netns);
                close(fd);
        } else if (own_netns) {
                CHECK(c, unshare(CLONE_NEWNET), "network namespace");
                loopback_up(c);
        }

        /* The host's sources, taken before the host's tree is left. */
        int dev_fds[ELEMENTSOF(devices)];
        for (size_t i = 0; i < ELEMENTSOF(devices); i++) {
                char p[32];
                snprintf(p, sizeof(p), "/dev/%s", devices[i]);
                CHECK(c, dev_fds[i] = open_tree_clone(AT_FDCWD, p), "%s", p);
        }
        static const char *const name_files[] = { POD_HOSTS, POD_RESOLV_CONF, POD_HOSTNAME };
        static const char *const name_targets[] = { "/etc/hosts", "/etc/resolv.conf", "/etc/hostname" };
        int name_fds[ELEMENTSOF(name_files)];
        /* By path: pod_fd is of the supervisor's mount namespace, and a
         * mount is cloned from this one's only. The files are the host's
         * (the pod never sees its directory). */
        for (size_t i = 0; i < ELEMENTSOF(name_files); i++) {
                char p[PATH_MAX];
                int n = snprintf(p, sizeof(p), "%s/%s", c->pod, name_files[i]);
                if (n < 0 || (size_t) n >= sizeof(p))
                        child_fail(c, ENAMETOOLONG, "%s/%s", c->pod, name_files[i]);
                name_fds[i] = exists_beneath(c->pod_fd, name_files[i]) ? open_tree_clone(AT_FDCWD, p) : -1;
                CHECK(c, name_fds[i] == -1 && exists_beneath(c->pod_fd, name_files[i]) ? -1 : 0, "%s", p);
        }

        /* Nothing propagates into the app's tree or out of it. */
        CHECK(c, mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL), "mounts");
        CHECK(c, chdir(c->root), "%s", c->root);
        CHECK(c, (int) syscall(SYS_pivot_root, ".", "."), "pivot_root to %s", c->root);
        CHECK(c, umount2(".", MNT_DETACH), "cannot detach the host's tree");
        CHECK(c, chdir("/"), "/");

        make_target(c, "/proc", true);
        CHECK(c, mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL), "cannot mount /proc");
        make_target(c, "/sys", true);
        CHECK(c, mount("sysfs", "/sys", "sysfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL),
              "cannot mount /sys");
        make_target(c, "/dev", true);
        CHECK(c, mount("tmpfs", "/dev", "tmpfs", MS_NOSUID | MS_NOEXEC, "mode=0755,size=64k"), "cannot mount /dev");
        for (size_t i = 0; i < ELEMENTSOF(devices); i++) {
                char p[32];
                snprintf(p, sizeof(p), "/dev/%s", devices[i]);
                move_tree(c, dev_fds[i], p, false);
        }
        make_target(c, "/dev/pts", true);
        char pts_opts[64];
        snprintf(pts_opts, sizeof(pts_opts), "newinstance,ptmxmode=0666,mode=0620");
        CHECK(c, mount("devpts", "/dev/pts", "devpts", MS_NOSUID | MS_NOEXEC, pts_opts), "cannot mount /dev/pts");
        CHECK(c, symlink("pts/ptmx", "/dev/ptmx"), "/dev/ptmx");
        make_target(c, "/dev/shm", true);
        CHECK(c, mount("tmpfs", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777"), "cannot mount /dev/shm");
        static const char *const links[][2] = {
                { "/proc/self/fd", "/dev/fd" }, { "/proc/self/fd/0", "/dev/stdin" },
                { "/proc/self/fd/1", "/dev/stdout" }, { "/proc/self/fd/2", "/dev/stderr" },
        };
        for (size_t i = 0; i < ELEMENTSOF(links); i++)
                CHECK(c, symlink(links[i][0], links[i][1]), "%s", links[i][1]);
        struct stat st;
        if (lstat("/etc", &st) < 0)
                CHECK(c, mkdir("/etc", 0755), "/etc");
        for (size_t i = 0; i < ELEMENTSOF(name_files); i++)
                if (name_fds[i] >= 0)
                        move_tree(c, name_fds[i], name_targets[i], true);

        /* An unprivileged port is any port: the app's root is not root of
         * the network namespace (which the host's user namespace owns), and
         * it binds :80 as in the nspawn flavor. A CNI namespace has it
         * (netns.h); one the operator named (ns:PATH) is theirs. */
        if (c->net->mode == POD_NET_NONE)
                write_str(c, "/proc/sys/net/ipv4/ip_unprivileged_port_start", "0");
        for (size_t i = 0; i < ELEMENTSOF(masked_paths); i++)
                mask(c, masked_paths[i]);
        for (size_t i = 0; i < ELEMENTSOF(read_only_paths); i++)
                bind_read_only(c, read_only_paths[i]);
        if (c->app->read_only_rootfs)
                CHECK(c, mount(NULL, "/", NULL, MS_REMOUNT | MS_BIND | MS_RDONLY, NULL), "cannot make / read-only");
        CHECK(c, sethostname(c->hostname, strlen(c->hostname)), "hostname");
        if (c->iso->have_oom_score_adjust) {
                char s[16];
                snprintf(s, sizeof(s), "%d", c->iso->oom_score_adjust);
                write_str(c, "/proc/self/oom_score_adj", s);
        }

        /* The pod's user namespace, last: from here on nothing of the
         * host's is in reach, the mounts above included. */
        if (c->userns) {
                char b = 0;
                CHECK(c, unshare(CLONE_NEWUSER), "user namespace");
                if (write(c->sync_child, "u", 1) != 1 || read(c->sync_parent, &b, 1) != 1 || b != 'm')
                        child_fail(c, EPROTO, "user namespace: the supervisor did not map it");
        }
        close(c->sync_child);
        close(c->sync_parent);

        /* Capabilities: the bounding set of the isolation; root of the
         * pod keeps those, any other user has none (as systemd's
         * CapabilityBoundingSet= without AmbientCapabilities=). */
        CHECK(c, prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0), "ambient capabilities");
        for (int cap = 0; cap <= 63; cap++)
                if (!(c->iso->capabilities & CAP_BIT(cap)) && prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) < 0 && errno != EINVAL)
                        child_fail(c, errno, "cannot drop capability %d", cap);
        size_t n_groups = c->app->n_supplementary_gids;
        CHECK(c, setgroups(n_groups, (const gid_t *) c->app->supplementary_gids), "supplementary groups");
        CHECK(c, setresgid(c->gid, c->gid, c->gid), "group %u", (unsigned) c->gid);
        CHECK(c, setresuid(c->uid, c->uid, c->uid), "user %u", (unsigned) c->uid);
        if (c->uid == 0) {
                struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
                struct __user_cap_data_struct d[2] = {};
                for (int i = 0; i < 2; i++)
                        d[i].effective = d[i].permitted = (uint32_t) (c->iso->capabilities >> (32 * i));
                CHECK(c, (int) syscall(SYS_capset, &h, d), "capabilities");
        }
        if (chdir(c->app->working_directory) < 0)
                child_fail(c, errno, "app %s: working directory %s", c->app->name, c->app->working_directory);
        if (c->iso->no_new_privileges)
                CHECK(c, prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs");
        /* The supervisor's death ends the app (the pod's cgroup is killed
         * by gc in any case). */
        CHECK(c, prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0), "parent death signal");
        if (seccomp_default_load(c->iso, &e) < 0)
                child_fail(c, e ? -e->code : ENOMEM, "%s", e ? e->msg : "seccomp");
        execve(c->program, c->argv, c->env);
        child_fail(c, errno, "app %s: cannot execute %s", c->app->name, c->program);
}

/* ---- the supervisor ---- */

static char *path_join(const char *a, const char *b) {
        char *s = NULL;
        return asprintf(&s, "%s/%s", a, b) < 0 ? NULL : s;
}

/* The app's environment, as the nspawn flavor's unit gives it: its own,
 * then PATH and HOME unless it has them. */
static int app_environment(const PodApp *app, const RootfsUser *user, char ***ret) {
        _cleanup_strv_free_ char **env = NULL;
        bool path = false, home = false;
        for (size_t i = 0; i < app->n_environment; i++) {
                char *s = NULL;
                if (asprintf(&s, "%s=%s", app->environment[i].name, app->environment[i].value) < 0 ||
                    strv_push(&env, s) < 0) {
                        free(s);
                        return -ENOMEM;
                }
                free(s);
                path = path || streq(app->environment[i].name, "PATH");
                home = home || streq(app->environment[i].name, "HOME");
        }
        _cleanup_free_ char *p = NULL, *h = NULL;
        if ((!path && (asprintf(&p, "PATH=%s", ROOTFS_DEFAULT_PATH) < 0 || strv_push(&env, p) < 0)) ||
            (!home && (asprintf(&h, "HOME=%s", user->home ?: "/") < 0 || strv_push(&env, h) < 0)))
                return -ENOMEM;
        if (!env && !(env = calloc(1, sizeof(char *))))
                return -ENOMEM;
        *ret = TAKE_PTR(env);
        return 0;
}

static const char *env_of(const PodApp *app, const char *name) {
        for (size_t i = 0; i < app->n_environment; i++)
                if (streq(app->environment[i].name, name))
                        return app->environment[i].value;
        return NULL;
}

/* Whether the manifest's app names a group (else the user's own). */
static bool app_has_group(const PodManifest *m) {
        struct json_object *apps = NULL, *app = NULL, *group = NULL;
        return json_object_object_get_ex(m->json, "apps", &apps) && json_object_array_length(apps) > 0 &&
               json_object_object_get_ex(json_object_array_get_idx(apps, 0), "app", &app) &&
               json_object_object_get_ex(app, "group", &group);
}

static int write_map(pid_t pid, const char *file, uid_t base) {
        char path[64], map[64];
        snprintf(path, sizeof(path), "/proc/%d/%s", (int) pid, file);
        int n = snprintf(map, sizeof(map), "0 %u %u\n", (unsigned) base, POD_USERNS_SIZE);
        _cleanup_close_ int fd = open(path, O_WRONLY | O_CLOEXEC);
        return fd < 0 || write(fd, map, (size_t) n) != n ? -errno : 0;
}

int fly_run_exec(const char *uuid, int lock_fd, Error **err) {
        /* The lock is ours, never the app's. */
        (void) fcntl(lock_fd, F_SETFD, FD_CLOEXEC);
        _cleanup_(pod_run_start_done) PodRunStart start = {};
        int r = pod_run_start(uuid, &start, err);
        if (r < 0)
                return r;
        if ((r = fly_manifest_check(start.manifest, err)) < 0)
                return error_prefix(err, "pod %s", uuid);
        const char *pod = start.pod, *data = start.data, *machine = start.machine;
        const PodManifest *m = start.manifest;
        const PodApp *app = &m->apps[0];
        const PodUserns userns = start.userns;
        int pod_fd = start.pod_fd, host_mnt_fd = start.host_mnt_fd, userns_fd = start.userns_fd;

        /* The app's root at stage1/rootfs. */
        _cleanup_free_ char *root = path_join(pod, "stage1/rootfs");
        _cleanup_(app_root_layers_done) AppRootLayers layers = {};
        _cleanup_close_ int tree = -1;
        if (!root)
                return error_sys(err, -ENOMEM, "pod %s", uuid);
        if ((r = app_root_layers(pod, data, app, &layers, err)) < 0 ||
            (r = app_root_make(&layers, userns_fd, &tree, err)) < 0 || (r = mount_attach(tree, root, err)) < 0)
                return error_prefix(err, "pod %s: app %s", uuid, app->name);
        _cleanup_close_ int root_fd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (root_fd < 0)
                return error_sys(err, -errno, "pod %s: %s", uuid, root);

        /* Who and what runs, looked up in the app's root. */
        _cleanup_(rootfs_user_done) RootfsUser user = {};
        gid_t gid = 0;
        _cleanup_free_ char *program = NULL;
        _cleanup_strv_free_ char **env = NULL;
        _cleanup_(app_isolation_done) AppIsolation iso = {};
        if ((r = rootfs_lookup_user(root_fd, app->user, &user, err)) < 0 ||
            (r = app_has_group(m) ? rootfs_lookup_group(root_fd, app->group, &gid, err) : (gid = user.found ? user.gid : 0, 0)) < 0 ||
            (r = rootfs_find_executable(root_fd, app->exec[0], env_of(app, "PATH") ?: ROOTFS_DEFAULT_PATH,
                                        app->working_directory, &program, err)) < 0 ||
            (r = app_isolation_parse(app->isolators, app->n_isolators, "apps[0].app.isolators", &iso, err)) < 0)
                return error_prefix(err, "pod %s: app %s", uuid, app->name);
        if (app_environment(app, &user, &env) < 0)
                return error_sys(err, -ENOMEM, "pod %s", uuid);
        _cleanup_(app_lifecycle_done) AppLifecycle lifecycle = {};
        if ((r = app_lifecycle_of(m, app, &lifecycle, err)) < 0)
                return error_prefix(err, "pod %s", uuid);
        uint64_t stop_timeout = lifecycle.stop_timeout_usec ?: FLY_STOP_TIMEOUT_USEC;

        /* The exit status's record, made before the app can fill the disk. */
        _cleanup_close_ int status_fd = -1;
        if (mkdirat(pod_fd, POD_APP_STATUS_DIR, 0755) < 0 && errno != EEXIST)
                return error_sys(err, -errno, "pod %s: %s", uuid, POD_APP_STATUS_DIR);
        if ((status_fd = open_beneath_no_symlinks(pod_fd, POD_APP_STATUS_DIR, O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0)) < 0)
                return error_sys(err, status_fd, "pod %s: %s", uuid, POD_APP_STATUS_DIR);
        if ((r = pod_app_records_reserve_at(status_fd, m, app, err)) < 0)
                return error_prefix(err, "pod %s", uuid);
        _cleanup_(pod_log_finish) PodLog log = { .fd = -1 };
        if ((r = pod_log_open(pod_fd, &log, err)) < 0)
                return error_prefix(err, "pod %s", uuid);

        _cleanup_(pod_cgroup_limits_done) PodCgroupLimits limits = {};
        _cleanup_(pod_net_done) PodNet net = {};
        if ((r = pod_cgroup_limits_from_manifest(m, &limits, err)) < 0 || (r = pod_net_from_manifest(m, &net, err)) < 0)
                return error_prefix(err, "pod %s", uuid);
        _cleanup_(pod_net_release) PodNetSetup ns = {
                .uuid = uuid, .pod = pod, .pod_fd = pod_fd, .manifest = m, .net = &net,
                .hostname = net.hostname ?: machine, .host_mnt_fd = host_mnt_fd,
        };
        /* The network is up before the app starts: nothing in the pod
         * waits for it as the nspawn flavor's units do. */
        if ((r = pod_net_prepare(&ns, err)) < 0 || (r = pod_net_attach(&ns, err)) < 0)
                return error_prefix(err, "pod %s", uuid);

        int out[2], errp[2], sync_c[2], sync_p[2];
        if (pipe2(out, O_CLOEXEC) < 0 || pipe2(errp, O_CLOEXEC) < 0 || pipe2(sync_c, O_CLOEXEC) < 0 ||
            pipe2(sync_p, O_CLOEXEC) < 0)
                return error_sys(err, -errno, "pod %s: pipes", uuid);
        /* SIGTERM, SIGINT, SIGHUP: read from a signalfd, also while the
         * child starts (it unblocks them for itself). */
        sigset_t old;
        _cleanup_close_ int sig_fd = pod_supervisor_signals(&old, err);
        if (sig_fd < 0)
                return error_prefix(err, "pod %s", uuid);

        FlyChild c = {
                .uuid = uuid, .pod_fd = pod_fd, .pod = pod, .root = root, .app = app, .iso = &iso, .limits = &limits,
                .net = &net, .netns = ns.netns, .hostname = ns.hostname, .userns = userns.enabled,
                .uid = user.uid, .gid = gid, .program = program, .argv = app->exec, .env = env,
                .out = out[1], .err_fd = errp[1], .sync_child = sync_c[1], .sync_parent = sync_p[0],
        };
        fflush(NULL);
        pid_t pid = (pid_t) syscall(SYS_clone, SIGCHLD | CLONE_NEWPID | CLONE_NEWNS | CLONE_NEWUTS | CLONE_NEWIPC,
                                    NULL, NULL, NULL, NULL);
        if (pid < 0)
                return error_sys(err, -errno, "pod %s: cannot start app %s", uuid, app->name);
        if (pid == 0) {
                pod_supervisor_child_signals(&old);
                /* Nothing of ours but the pipes it writes reaches the app:
                 * the lock stays ours. */
                child(&c);
        }
        close(out[1]);
        close(errp[1]);
        close(sync_c[1]);
        close(sync_p[0]);
        _cleanup_close_ int pidfd = (int) syscall(SYS_pidfd_open, pid, 0);
        if (pidfd < 0) {
                kill(pid, SIGKILL);
                return error_sys(err, -errno, "pod %s: pidfd", uuid);
        }
        if (userns.enabled) {
                char b = 0;
                if (read(sync_c[0], &b, 1) == 1 && b == 'u') {
                        if ((r = write_map(pid, "uid_map", userns.base)) < 0 ||
                            (r = write_map(pid, "gid_map", userns.base)) < 0) {
                                kill(pid, SIGKILL);
                                return error_sys(err, r, "pod %s: cannot map its user namespace", uuid);
                        }
                        (void) !write(sync_p[1], "m", 1);
                }
        }
        close(sync_c[0]);
        close(sync_p[1]);
        char what[128];
        snprintf(what, sizeof(what), "app %s", app->name);
        if ((r = pod_supervisor_child_started(uuid, pid, errp[0], what, err)) < 0)
                return r;
        Error *ignored = NULL;
        if (pod_pid_file_write(pod_fd, getpid(), lock_fd, &ignored) < 0)
                error_free(ignored);
        (void) sd_notify(false, "READY=1");

        fcntl(out[0], F_SETFL, O_NONBLOCK);
        bool out_open = true;
        uint64_t kill_at = 0;
        siginfo_t si = {};
        for (;;) {
                struct pollfd fds[] = { { pidfd, POLLIN, 0 }, { sig_fd, POLLIN, 0 }, { out_open ? out[0] : -1, POLLIN, 0 } };
                int timeout = -1;
                if (kill_at) {
                        uint64_t now = monotonic_usec();
                        timeout = now >= kill_at ? 0 : (int) ((kill_at - now + 999) / 1000);
                }
                int n = poll(fds, 3, timeout);
                if (n < 0 && errno != EINTR)
                        break;
                if (kill_at && monotonic_usec() >= kill_at) {
                        (void) syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, NULL, 0);
                        kill_at = 0;
                }
                if (fds[2].revents)
                        out_open = pod_log_drain(&log, out[0]);
                if (fds[1].revents & POLLIN) {
                        struct signalfd_siginfo ssi;
                        while (read(sig_fd, &ssi, sizeof(ssi)) == sizeof(ssi))
                                if (ssi.ssi_signo != SIGCHLD && !kill_at) {
                                        /* The app's grace: its stop timeout. */
                                        (void) syscall(SYS_pidfd_send_signal, pidfd, SIGTERM, NULL, 0);
                                        kill_at = monotonic_usec() + stop_timeout;
                                }
                }
                if (fds[0].revents & POLLIN) {
                        if (waitid(P_PIDFD, (id_t) pidfd, &si, WEXITED) == 0)
                                break;
                }
        }
        /* The app's pid namespace is gone with it; what it held of the
         * pipe too, but for what escaped into the cgroup: killed. */
        int status = si.si_code == CLD_EXITED ? si.si_status : 128 + si.si_status;
        char rec[16];
        snprintf(rec, sizeof(rec), "%d\n", status);
        if (pod_app_record_write_at(status_fd, app->name, rec, &ignored) < 0) {
                fprintf(stderr, "pod %s: %s\n", uuid, ignored->msg);
                error_free(ignored);
                ignored = NULL;
        }
        if (pod_cgroup_kill(uuid, &ignored) < 0) {
                fprintf(stderr, "pod %s: %s\n", uuid, ignored->msg);
                error_free(ignored);
                ignored = NULL;
        }
        pod_supervisor_drain(&log, out[0], out_open);
        pod_log_finish(&log);
        (void) pod_cgroup_remove(uuid, NULL);
        pod_net_release(&ns);
        exit(status);
}
