/* SPDX-License-Identifier: Apache-2.0 */
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <systemd/sd-daemon.h>

#include "config.h"

#include "basic/fs.h"
#include "basic/strv.h"
#include "basic/time-util.h"
#include "kvm/kvm-net.h"
#include "kvm/kvm-run.h"
#include "manifest/pod-net.h"
#include "net/net-files.h"
#include "net/pod-net-setup.h"
#include "net/pod-network.h"
#include "pod/flavor-check.h"
#include "pod/pod-app-root.h"
#include "pod/pod-cgroup.h"
#include "pod/pod-info.h"
#include "pod/pod-log.h"
#include "pod/pod-process.h"
#include "pod/pod-run.h"
#include "pod/pod-supervised.h"
#include "pod/stage1.h"

#define QEMU "/usr/bin/qemu-system-x86_64"
#define MKFS_EROFS "/usr/bin/mkfs.erofs"
/* The guest's files in the image directory (stage1-rootfs/build-stage1-kvm). */
#define GUEST_KERNEL "guest/vmlinuz"
#define GUEST_INITRD "guest/initrd"
#define GUEST_STAGE1 "guest/stage1.erofs"
/* The pod's disks, made at each start. */
#define VM_DIR "stage1/vm"

const char *kvm_accel(void) {
        const char *e = getenv("SDPOD_KVM_ACCEL");
        if (e && (streq(e, "kvm") || streq(e, "tcg")))
                return e;
        if (access("/sys/module/kvm_pvm", F_OK) == 0 || access("/dev/kvm", R_OK | W_OK) < 0)
                return "tcg";
        _cleanup_free_ char *cpuinfo = NULL;
        size_t n = 0;
        Error *ignored = NULL;
        if (read_file_at(AT_FDCWD, "/proc/cpuinfo", 1 << 22, &cpuinfo, &n, &ignored) < 0) {
                error_free(ignored);
                return "tcg";
        }
        return strstr(cpuinfo, " vmx") || strstr(cpuinfo, " svm") ? "kvm" : "tcg";
}

/* The host's TSC in kHz, for a TCG guest's tsc_early_khz= (it cannot
 * calibrate against the emulated PIT on a busy host, and now and then
 * hangs: shared/notes/VERIFIED.md); 0 when unknown. */
static unsigned long tsc_khz(void) {
        _cleanup_free_ char *cpuinfo = NULL;
        size_t n = 0;
        Error *ignored = NULL;
        if (read_file_at(AT_FDCWD, "/proc/cpuinfo", 1 << 22, &cpuinfo, &n, &ignored) < 0) {
                error_free(ignored);
                return 0;
        }
        const char *p = strstr(cpuinfo, "cpu MHz");
        p = p ? strchr(p, ':') : NULL;
        return p ? (unsigned long) (strtod(p + 1, NULL) * 1000) : 0;
}

int kvm_report_parse(const char *line, size_t n, KvmReport *ret, Error **err) {
        char s[KVM_REPORT_LINE_MAX + 1];
        if (n > KVM_REPORT_LINE_MAX || memchr(line, 0, n))
                return error_set(err, -EBADMSG, "a report line longer than %d bytes or with a NUL", KVM_REPORT_LINE_MAX);
        memcpy(s, line, n);
        s[n] = 0;
        *ret = (KvmReport) {};
        if (streq(s, "ready")) {
                ret->kind = KVM_REPORT_READY;
                return 0;
        }
        if (streq(s, "alive")) {
                ret->kind = KVM_REPORT_ALIVE;
                return 0;
        }
        const char *rest = NULL;
        if ((rest = startswith(s, "status "))) {
                size_t k = strspn(rest, "abcdefghijklmnopqrstuvwxyz0123456789-");
                if (k == 0 || k >= sizeof(ret->app) || rest[k] != ' ')
                        goto bad;
                memcpy(ret->app, rest, k);
                ret->app[k] = 0;
                ret->kind = KVM_REPORT_STATUS;
                rest += k + 1;
        } else if ((rest = startswith(s, "exit ")))
                ret->kind = KVM_REPORT_EXIT;
        else
                goto bad;
        /* 0-255, in decimal, no sign, no leading zero. */
        size_t d = strspn(rest, "0123456789");
        if (d == 0 || d > 3 || rest[d] != 0 || (d > 1 && rest[0] == '0') || atoi(rest) > 255)
                goto bad;
        ret->code = atoi(rest);
        return 0;
bad:
        text_make_printable(s, n, false);
        return error_set(err, -EBADMSG, "the guest reported \"%s\": not a report of sdpod's (sdpod-stage1(7))", s);
}

void kvm_report_format(const KvmReport *r, char buf[static KVM_REPORT_LINE_MAX + 2]) {
        if (r->kind == KVM_REPORT_READY)
                snprintf(buf, KVM_REPORT_LINE_MAX + 2, "ready\n");
        else if (r->kind == KVM_REPORT_ALIVE)
                snprintf(buf, KVM_REPORT_LINE_MAX + 2, KVM_REPORT_ALIVE_LINE);
        else if (r->kind == KVM_REPORT_STATUS)
                snprintf(buf, KVM_REPORT_LINE_MAX + 2, "status %s %d\n", r->app, r->code);
        else
                snprintf(buf, KVM_REPORT_LINE_MAX + 2, "exit %d\n", r->code);
}

int kvm_hang_timeout(uint64_t *ret, Error **err) {
        const char *e = getenv("SDPOD_KVM_HANG_TIMEOUT");
        if (!e || !*e) {
                *ret = KVM_HANG_TIMEOUT_USEC;
                return 0;
        }
        size_t d = strspn(e, "0123456789");
        unsigned long v = d > 0 && d <= 5 && e[d] == 0 ? strtoul(e, NULL, 10) : 0;
        if (v < 1 || v > KVM_HANG_TIMEOUT_MAX_SEC)
                return error_set(err, -EINVAL, "SDPOD_KVM_HANG_TIMEOUT=%.32s: not a number of seconds from 1 to %d", e,
                                 KVM_HANG_TIMEOUT_MAX_SEC);
        *ret = (uint64_t) v * 1000000ULL;
        return 0;
}

/* What the supervisor makes the disks with, and may be stopped in. */
typedef struct DiskMaker {
        const char *uuid;
        const char *pod;
        int pod_fd;
        const PodCgroupLimits *limits;
        const sigset_t *old_mask;
        int sig_fd;
} DiskMaker;

/* Runs mkfs.erofs (a program of the host's, on trees the store made: it
 * follows no link, and records special files as they are), in the pod's
 * cgroup (its limits hold it; stop --force and gc kill it), its output to
 * our stderr. A SIGTERM, SIGINT or SIGHUP to the supervisor meanwhile
 * (sdpod stop) kills it: -ECANCELED. */
static int run_mkfs(const DiskMaker *d, char *const *argv, Error **err) {
        pid_t pid = fork();
        if (pid < 0)
                return error_sys(err, -errno, "%s", argv[0]);
        if (pid == 0) {
                Error *e = NULL;
                int null = open("/dev/null", O_RDWR | O_CLOEXEC);
                pod_supervisor_child_signals(d->old_mask);
                if (null < 0 || dup2(null, STDIN_FILENO) < 0 || dup2(STDERR_FILENO, STDOUT_FILENO) < 0 ||
                    pod_cgroup_enter(d->uuid, d->limits, &e) < 0 || prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0)
                        _exit(127);
                char *env[] = { (char *) "PATH=/usr/sbin:/usr/bin:/sbin:/bin", NULL };
                execve(argv[0], argv, env);
                _exit(127);
        }
        _cleanup_close_ int pidfd = (int) syscall(SYS_pidfd_open, pid, 0);
        if (pidfd < 0) {
                kill(pid, SIGKILL);
                (void) waitpid(pid, NULL, 0);
                return error_sys(err, -errno, "%s", argv[0]);
        }
        bool stopped = false;
        siginfo_t si = {};
        for (;;) {
                struct pollfd p[] = { { pidfd, POLLIN, 0 }, { d->sig_fd, POLLIN, 0 } };
                if (poll(p, ELEMENTSOF(p), -1) < 0 && errno != EINTR)
                        break;
                struct signalfd_siginfo ssi;
                while (read(d->sig_fd, &ssi, sizeof(ssi)) == sizeof(ssi))
                        if (ssi.ssi_signo != SIGCHLD && !stopped) {
                                stopped = true;
                                (void) syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, NULL, 0);
                        }
                if ((p[0].revents & POLLIN) && waitid(P_PIDFD, (id_t) pidfd, &si, WEXITED) == 0)
                        break;
        }
        if (stopped)
                return error_set(err, -ECANCELED, "stopped while its disks were made");
        if (si.si_code != CLD_EXITED || si.si_status != 0)
                return error_set(err, -EIO, "%s failed (%s %d)", argv[0], si.si_code == CLD_EXITED ? "exit status" : "signal",
                                 si.si_status);
        return 0;
}

/* An erofs image of the tree at source, at pod/VM_DIR/name. */
static int make_erofs(const DiskMaker *d, const char *name, const char *source, Error **err) {
        _cleanup_free_ char *image = NULL;
        if (asprintf(&image, "%s/" VM_DIR "/%s", d->pod, name) < 0)
                return error_sys(err, -ENOMEM, "%s", name);
        /* -T0: the same tree gives the same image. */
        char *argv[] = { (char *) MKFS_EROFS, (char *) "--quiet", (char *) "-T0", image, (char *) source, NULL };
        int r = run_mkfs(d, argv, err);
        return r < 0 ? error_prefix(err, "%s", name) : 0;
}

/* The "pod" disk's tree: the manifest as /sdpod/pod, an empty status/
 * (the guest's reapers write there, on a tmpfs over it). */
static int make_pod_disk(const DiskMaker *d, Error **err) {
        static const char dir[] = VM_DIR "/pod.d";
        _cleanup_free_ char *manifest = NULL, *tree = NULL;
        size_t size = 0;
        int r;
        if ((r = mkdir_owned_beneath(d->pod_fd, dir, 0755, 0, 0)) < 0 ||
            (r = mkdir_owned_beneath(d->pod_fd, VM_DIR "/pod.d/" POD_APP_STATUS_DIR, 0755, 0, 0)) < 0)
                return error_sys(err, r, "%s", dir);
        if ((r = read_file_at(d->pod_fd, "pod", 1 << 20, &manifest, &size, err)) < 0 ||
            (r = write_file_atomic_at(d->pod_fd, VM_DIR "/pod.d/pod", manifest, size, 0644, err)) < 0)
                return r;
        /* The name files the apps bind over /etc's (net-files.h), which the
         * host wrote, and net/ready: the network is there before the VM. */
        if ((r = mkdir_owned_beneath(d->pod_fd, VM_DIR "/pod.d/" POD_NET_DIR, 0755, 0, 0)) < 0)
                return error_sys(err, r, "%s/%s", dir, POD_NET_DIR);
        static const char *const files[] = { POD_RESOLV_CONF, POD_HOSTS, POD_HOSTNAME, POD_NET_READY };
        for (size_t i = 0; i < ELEMENTSOF(files); i++) {
                _cleanup_free_ char *data = NULL, *to = NULL;
                size_t n = 0;
                r = read_file_at(d->pod_fd, files[i], 1 << 20, &data, &n, err);
                if (r == -ENOENT) {
                        error_free(*err);
                        *err = NULL;
                        continue;
                }
                if (r < 0 || asprintf(&to, "%s/%s", dir, files[i]) < 0 ||
                    (r = write_file_atomic_at(d->pod_fd, to, data, n, 0644, err)) < 0)
                        return r < 0 ? r : error_sys(err, -ENOMEM, "%s", files[i]);
        }
        if (asprintf(&tree, "%s/%s", d->pod, dir) < 0)
                return error_sys(err, -ENOMEM, "%s", dir);
        return make_erofs(d, "pod.erofs", tree, err);
}

/* The disks are made anew at each start and removed at the pod's end:
 * none outlives the VM (copies of image trees, as big as they are). */
static void vm_dir_remove(int pod_fd) {
        int r = rm_rf_beneath(pod_fd, VM_DIR);
        if (r < 0 && r != -ENOENT)
                fprintf(stderr, "cannot remove %s: %s\n", VM_DIR, strerror(-r));
}
static void vm_dir_removep(int *pod_fd) {
        if (*pod_fd >= 0)
                vm_dir_remove(*pod_fd);
}

/* What the QEMU child is handed. */
typedef struct KvmChild {
        const char *uuid;
        const PodCgroupLimits *limits;
        uid_t uid;
        gid_t gid;
        gid_t kvm_gid;          /* (gid_t) -1: none */
        pid_t supervisor;
        int out;                /* its stdout and stderr: the console */
        int err_fd;             /* why it did not start */
        char **argv;
} KvmChild;

static _noreturn_ void child_fail(const KvmChild *c, int r, const char *what) {
        dprintf(c->err_fd, "%s: %s", what, strerror(r));
        _exit(125);
}

static _noreturn_ void child(const KvmChild *c) {
        int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
        if (null < 0 || dup2(null, STDIN_FILENO) < 0 || dup2(c->out, STDOUT_FILENO) < 0 || dup2(c->out, STDERR_FILENO) < 0)
                child_fail(c, errno, "stdio");
        Error *e = NULL;
        if (pod_cgroup_enter(c->uuid, c->limits, &e) < 0)
                child_fail(c, e ? -e->code : ENOMEM, e ? e->msg : "cgroup");
        /* Nothing to reach on any network: QEMU has no network device,
         * and its process none either. */
        if (unshare(CLONE_NEWNET) < 0)
                child_fail(c, errno, "network namespace");
        gid_t groups[1] = { c->kvm_gid };
        if (setgroups(c->kvm_gid == (gid_t) -1 ? 0 : 1, groups) < 0 || setresgid(c->gid, c->gid, c->gid) < 0 ||
            setresuid(c->uid, c->uid, c->uid) < 0)
                child_fail(c, errno, "cannot become the pod's first id");
        /* After the change of ids, which clears it; and the supervisor
         * may have died before. */
        if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0)
                child_fail(c, errno, "parent death signal");
        if (getppid() != c->supervisor)
                _exit(125);
        /* Its files are the fds it was given, opened through
         * /proc/self/fd: a process that changed its ids is not dumpable,
         * and its /proc/self would be root's. */
        if (prctl(PR_SET_DUMPABLE, 1, 0, 0, 0) < 0 || prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
                child_fail(c, errno, "prctl");
        /* Nothing of the caller's environment: QEMU's id could read it. */
        char *env[] = { (char *) "PATH=/usr/sbin:/usr/bin:/sbin:/bin", NULL };
        execve(c->argv[0], c->argv, env);
        child_fail(c, errno, "cannot execute " QEMU);
}

/* Opens path (of the host's, read-only) for QEMU, kept across its exec:
 * "/proc/self/fd/N" into buf. */
static int open_for_qemu(int dirfd, const char *path, char buf[static 32], int *fds, size_t *n_fds, Error **err) {
        int fd = openat(dirfd, path, O_RDONLY | O_NOFOLLOW);
        if (fd < 0)
                return error_sys(err, -errno, "%s", path);
        fds[(*n_fds)++] = fd;
        snprintf(buf, 32, "/proc/self/fd/%d", fd);
        return 0;
}

static int argv_add(char ***argv, const char *fmt, ...) _printf_(2, 3);
static int argv_add(char ***argv, const char *fmt, ...) {
        va_list ap;
        va_start(ap, fmt);
        char *s = NULL;
        int r = vasprintf(&s, fmt, ap);
        va_end(ap);
        if (r < 0)
                return -ENOMEM;
        r = strv_push(argv, s);
        free(s);
        return r;
}

/* Reads what the report socket holds, line by line; -EBADMSG (err set)
 * when the guest says what it must not. */
typedef struct Reports {
        char line[KVM_REPORT_LINE_MAX + 1];
        size_t n;
        unsigned lines;         /* but heartbeats */
        uint64_t beats_since;   /* the second the heartbeats are counted in */
        unsigned beats;
        uint64_t last_life;     /* when the guest last said anything */
        bool ready;
        int exit_code;          /* -1: not reported */
} Reports;

static int reports_take(Reports *rep, const char *buf, size_t n, const PodManifest *m, int status_fd, Error **err) {
        for (size_t i = 0; i < n; i++) {
                if (buf[i] != '\n') {
                        if (rep->n == KVM_REPORT_LINE_MAX)
                                return error_set(err, -EBADMSG, "the guest reported a line longer than %d bytes",
                                                 KVM_REPORT_LINE_MAX);
                        rep->line[rep->n++] = buf[i];
                        continue;
                }
                KvmReport r;
                int k = kvm_report_parse(rep->line, rep->n, &r, err);
                rep->n = 0;
                if (k < 0)
                        return k;
                /* Every line is a sign of life. Heartbeats come for as
                 * long as the pod runs, so they are bounded by rate; what
                 * the host acts on, by number. */
                uint64_t now = monotonic_usec();
                rep->last_life = now;
                if (r.kind == KVM_REPORT_ALIVE) {
                        if (now - rep->beats_since >= 1000000) {
                                rep->beats_since = now;
                                rep->beats = 0;
                        }
                        if (++rep->beats > KVM_HEARTBEATS_PER_SEC_MAX)
                                return error_set(err, -EBADMSG, "the guest reported more than %d heartbeats in a second",
                                                 KVM_HEARTBEATS_PER_SEC_MAX);
                        continue;
                }
                if (++rep->lines > KVM_REPORT_LINES_MAX)
                        return error_set(err, -EBADMSG, "the guest reported more than %d lines", KVM_REPORT_LINES_MAX);
                if (r.kind == KVM_REPORT_READY && !rep->ready) {
                        rep->ready = true;
                        (void) sd_notify(false, "READY=1");
                } else if (r.kind == KVM_REPORT_EXIT)
                        rep->exit_code = r.code;
                else if (r.kind == KVM_REPORT_STATUS) {
                        if (!pod_manifest_find_app(m, r.app))
                                return error_set(err, -EBADMSG, "the guest reported the status of app %s, which the "
                                                 "pod does not have", r.app);
                        char rec[POD_APP_RECORD_SIZE + 1];
                        pod_app_exit_format(rec, r.code);
                        if ((k = pod_app_record_write_at(status_fd, r.app, rec, err)) < 0)
                                return k;
                }
        }
        return 0;
}

int kvm_run_exec(const char *uuid, int lock_fd, Error **err) {
        (void) fcntl(lock_fd, F_SETFD, FD_CLOEXEC);
        _cleanup_(pod_run_start_done) PodRunStart start = {};
        int r = pod_run_start(uuid, &start, err);
        if (r < 0)
                return r;
        if ((r = kvm_manifest_check(start.manifest, err)) < 0)
                return error_prefix(err, "pod %s", uuid);
        uint64_t hang_usec;
        if ((r = kvm_hang_timeout(&hang_usec, err)) < 0)
                return error_prefix(err, "pod %s", uuid);
        if (!start.userns.enabled)
                return error_set(err, -EOPNOTSUPP, "pod %s: the kvm flavor needs the pod's user namespace (its range)", uuid);
        const char *pod = start.pod, *data = start.data;
        const PodManifest *m = start.manifest;
        int pod_fd = start.pod_fd;

        _cleanup_free_ char *image = NULL;
        _cleanup_close_ int image_fd = -1;
        if ((r = stage1_image_of(pod_fd, &image, err)) < 0)
                return error_prefix(err, "pod %s", uuid);
        if ((image_fd = open(image, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
                return error_sys(err, -errno, "pod %s: stage1 image %s", uuid, image);
        _cleanup_(pod_cgroup_limits_done) PodCgroupLimits limits = {};
        if ((r = pod_cgroup_limits_from_manifest(m, &limits, err)) < 0)
                return error_prefix(err, "pod %s", uuid);
        /* From here on, sdpod stop reaches us (the pid file) and we hear it
         * (the signalfd), while the disks are made too. */
        sigset_t old;
        _cleanup_close_ int sig_fd = pod_supervisor_signals(&old, err);
        if (sig_fd < 0)
                return error_prefix(err, "pod %s", uuid);
        Error *ignored = NULL;
        if (pod_pid_file_write(pod_fd, getpid(), lock_fd, &ignored) < 0)
                error_free(ignored);

        /* The pod's network, made by CNI as for the other flavors, and the
         * guest's NIC tied to it (kvm-net.h); its name files are on the pod
         * disk. */
        _cleanup_(pod_net_done) PodNet net = {};
        if ((r = pod_net_from_manifest(m, &net, err)) < 0)
                return error_prefix(err, "pod %s", uuid);
        _cleanup_(pod_net_release) PodNetSetup ns = {
                .uuid = uuid, .pod = pod, .pod_fd = pod_fd, .manifest = m, .net = &net,
                .hostname = net.hostname ?: start.machine, .host_mnt_fd = start.host_mnt_fd,
        };
        _cleanup_(kvm_nic_done) KvmNic nic = { .tap_fd = -1 };
        if ((r = pod_net_prepare(&ns, err)) < 0 || (r = pod_net_attach(&ns, err)) < 0 ||
            (net.mode == POD_NET_CNI && (r = kvm_nic_make(pod_fd, ns.netns, &nic, err)) < 0))
                return error_prefix(err, "pod %s", uuid);

        /* The disks: the pod's manifest, and each distinct tree of its
         * apps' images once. */
        (void) rm_rf_beneath(pod_fd, VM_DIR);
        if ((r = mkdir_owned_beneath(pod_fd, VM_DIR, 0755, 0, 0)) < 0)
                return error_sys(err, r, "pod %s: %s", uuid, VM_DIR);
        _cleanup_(vm_dir_removep) int vm_dir_pod_fd = pod_fd;
        DiskMaker dm = { .uuid = uuid, .pod = pod, .pod_fd = pod_fd, .limits = &limits, .old_mask = &old, .sig_fd = sig_fd };
        if ((r = make_pod_disk(&dm, err)) < 0)
                return error_prefix(err, "pod %s", uuid);
        _cleanup_free_ char *app_names = NULL;
        char *lowers[KVM_APPS_MAX] = {};
        size_t disk_of[KVM_APPS_MAX];
        for (size_t i = 0; r >= 0 && i < m->n_apps; i++) {
                const PodApp *app = &m->apps[i];
                _cleanup_(app_root_layers_done) AppRootLayers l = {};
                char name[32];
                if ((r = app_root_layers(pod, data, app, &l, err)) < 0) {
                        error_prefix(err, "pod %s: app %s", uuid, app->name);
                        break;
                }
                disk_of[i] = i;
                for (size_t j = 0; j < i; j++)
                        if (lowers[j] && streq(lowers[j], l.lower))
                                disk_of[i] = disk_of[j];
                lowers[i] = TAKE_PTR(l.lower);
                snprintf(name, sizeof(name), "app-%zu.erofs", i);
                if (disk_of[i] == i && (r = make_erofs(&dm, name, lowers[i], err)) < 0) {
                        error_prefix(err, "pod %s: app %s", uuid, app->name);
                        break;
                }
                char *s = NULL;
                if (asprintf(&s, "%s%s%s", app_names ?: "", app_names ? "," : "", app->name) < 0) {
                        r = error_sys(err, -ENOMEM, "pod %s", uuid);
                        break;
                }
                free(app_names);
                app_names = s;
        }
        for (size_t i = 0; i < m->n_apps; i++)
                free(lowers[i]);
        if (r < 0)
                return r;

        /* Each app's record, made before the guest can report it. */
        _cleanup_close_ int status_fd = -1;
        if (mkdirat(pod_fd, POD_APP_STATUS_DIR, 0755) < 0 && errno != EEXIST)
                return error_sys(err, -errno, "pod %s: %s", uuid, POD_APP_STATUS_DIR);
        if ((status_fd = open_beneath_no_symlinks(pod_fd, POD_APP_STATUS_DIR, O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0)) < 0)
                return error_sys(err, status_fd, "pod %s: %s", uuid, POD_APP_STATUS_DIR);
        for (size_t i = 0; i < m->n_apps; i++)
                if ((r = pod_app_records_reserve_at(status_fd, m, &m->apps[i], err)) < 0)
                        return error_prefix(err, "pod %s", uuid);
        _cleanup_(pod_log_finish) PodLog log = { .fd = -1 };
        if ((r = pod_log_open(pod_fd, &log, err)) < 0)
                return error_prefix(err, "pod %s", uuid);

        /* QEMU's files, as fds it keeps. */
        int fds[4 + KVM_APPS_MAX + 3];
        size_t n_fds = 0;
        char kernel[32], initrd[32], stage1[32], pod_disk[32];
        if ((r = open_for_qemu(image_fd, GUEST_KERNEL, kernel, fds, &n_fds, err)) < 0 ||
            (r = open_for_qemu(image_fd, GUEST_INITRD, initrd, fds, &n_fds, err)) < 0 ||
            (r = open_for_qemu(image_fd, GUEST_STAGE1, stage1, fds, &n_fds, err)) < 0 ||
            (r = open_for_qemu(pod_fd, VM_DIR "/pod.erofs", pod_disk, fds, &n_fds, err)) < 0)
                return error_prefix(err, "pod %s: stage1 image %s", uuid, image);
        char apps[KVM_APPS_MAX][32];
        for (size_t i = 0; i < m->n_apps; i++) {
                char name[48];
                snprintf(name, sizeof(name), VM_DIR "/app-%zu.erofs", disk_of[i]);
                if (disk_of[i] != i)
                        memcpy(apps[i], apps[disk_of[i]], sizeof(apps[i]));
                else if ((r = open_for_qemu(pod_fd, name, apps[i], fds, &n_fds, err)) < 0)
                        return error_prefix(err, "pod %s", uuid);
        }
        int report[2], command[2], out[2], errp[2];
        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, report) < 0 ||
            socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, command) < 0 || pipe2(out, O_CLOEXEC) < 0 ||
            pipe2(errp, O_CLOEXEC) < 0)
                return error_sys(err, -errno, "pod %s: sockets", uuid);
        fds[n_fds++] = report[1];
        fds[n_fds++] = command[1];

        const char *accel = kvm_accel();
        uint64_t memory = limits.memory_max == 0 ? KVM_GUEST_MEMORY
                        : limits.memory_max > KVM_GUEST_MIN + KVM_QEMU_OVERHEAD ? limits.memory_max - KVM_QEMU_OVERHEAD
                        : KVM_GUEST_MIN;
        unsigned cpus = limits.cpu_millis ? (unsigned) ((limits.cpu_millis + 999) / 1000) : 1;
        unsigned long khz = streq(accel, "tcg") ? tsc_khz() : 0;
        _cleanup_strv_free_ char **argv = NULL;
        char tsc[48] = "", net_arg[256] = "";
        if (khz)
                snprintf(tsc, sizeof(tsc), " tsc_early_khz=%lu", khz);
        if (nic.address[0])
                snprintf(net_arg, sizeof(net_arg), " sdpod.net=%s,%s", nic.address, nic.gateway);
        /* The pod's host name, as nspawn gives a container its own (a
         * checked name: --hostname's rules, or the pod's). */
        if (ns.hostname && strlen(ns.hostname) < 64 &&
            strspn(ns.hostname, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-") == strlen(ns.hostname)) {
                size_t k = strlen(net_arg);
                snprintf(net_arg + k, sizeof(net_arg) - k, " systemd.hostname=%s", ns.hostname);
        }
#if SDPOD_CRASH_POINTS
        /* Test builds only (tests/integration/test-kvm-kills.sh): a guest
         * whose kernel panics once kvm-init has said it is alive, or that
         * floods the host with heartbeats. */
        const char *crash = getenv("SDPOD_KVM_GUEST_CRASH");
        if (crash && (streq(crash, "panic") || streq(crash, "flood"))) {
                size_t k = strlen(net_arg);
                snprintf(net_arg + k, sizeof(net_arg) - k, " sdpod.crash=%s", crash);
        }
#endif
        if (argv_add(&argv, QEMU) < 0 || argv_add(&argv, "-machine") < 0 || argv_add(&argv, "q35") < 0 ||
            argv_add(&argv, "-accel") < 0 ||
            argv_add(&argv, "%s", streq(accel, "kvm") ? "kvm" : "tcg,thread=multi,tb-size=64") < 0 ||
            argv_add(&argv, "-cpu") < 0 || argv_add(&argv, "%s", streq(accel, "kvm") ? "host" : "max") < 0 ||
            argv_add(&argv, "-m") < 0 || argv_add(&argv, "%llum", (unsigned long long) (memory >> 20)) < 0 ||
            argv_add(&argv, "-smp") < 0 || argv_add(&argv, "%u", cpus) < 0 ||
            argv_add(&argv, "-nodefaults") < 0 || argv_add(&argv, "-no-user-config") < 0 ||
            argv_add(&argv, "-no-reboot") < 0 || argv_add(&argv, "-display") < 0 || argv_add(&argv, "none") < 0 ||
            argv_add(&argv, "-monitor") < 0 || argv_add(&argv, "none") < 0 || argv_add(&argv, "-serial") < 0 ||
            argv_add(&argv, "stdio") < 0 ||
            argv_add(&argv, "-sandbox") < 0 ||
            argv_add(&argv, "on,obsolete=deny,elevateprivileges=deny,spawn=deny,resourcecontrol=deny") < 0 ||
            argv_add(&argv, "-kernel") < 0 || argv_add(&argv, "%s", kernel) < 0 || argv_add(&argv, "-initrd") < 0 ||
            argv_add(&argv, "%s", initrd) < 0 || argv_add(&argv, "-append") < 0 ||
            argv_add(&argv, "console=ttyS0 panic=-1 quiet no_timer_check rdinit=/init sdpod.apps=%s%s%s", app_names, tsc,
                     net_arg) < 0 ||
            argv_add(&argv, "-device") < 0 || argv_add(&argv, "isa-debug-exit,iobase=0xf4,iosize=0x04") < 0 ||
            argv_add(&argv, "-device") < 0 || argv_add(&argv, "virtio-serial-pci") < 0 ||
            argv_add(&argv, "-chardev") < 0 || argv_add(&argv, "socket,id=report,fd=%d", report[1]) < 0 ||
            argv_add(&argv, "-device") < 0 || argv_add(&argv, "virtserialport,chardev=report,name=sdpod.report") < 0 ||
            argv_add(&argv, "-chardev") < 0 || argv_add(&argv, "socket,id=command,fd=%d", command[1]) < 0 ||
            argv_add(&argv, "-device") < 0 || argv_add(&argv, "virtserialport,chardev=command,name=sdpod.command") < 0)
                return error_sys(err, -ENOMEM, "pod %s", uuid);
        if (nic.tap_fd >= 0) {
                fds[n_fds++] = nic.tap_fd;
                if (argv_add(&argv, "-netdev") < 0 || argv_add(&argv, "tap,id=n0,fd=%d,vhost=off", nic.tap_fd) < 0 ||
                    argv_add(&argv, "-device") < 0 || argv_add(&argv, "virtio-net-pci,netdev=n0,mac=%s", nic.mac) < 0)
                        return error_sys(err, -ENOMEM, "pod %s", uuid);
                nic.tap_fd = -1; /* closed with the others once QEMU has it */
        } else if (argv_add(&argv, "-nic") < 0 || argv_add(&argv, "none") < 0)
                return error_sys(err, -ENOMEM, "pod %s", uuid);
        const char *serials[ELEMENTSOF(fds)], *files[ELEMENTSOF(fds)];
        char app_serials[ELEMENTSOF(fds)][32];
        size_t n_disks = 0;
        serials[n_disks] = "stage1", files[n_disks++] = stage1;
        serials[n_disks] = "pod", files[n_disks++] = pod_disk;
        for (size_t i = 0; i < m->n_apps; i++) {
                snprintf(app_serials[i], sizeof(app_serials[i]), "app-%zu", i);
                serials[n_disks] = app_serials[i], files[n_disks++] = apps[i];
        }
        for (size_t i = 0; i < n_disks; i++)
                if (argv_add(&argv, "-drive") < 0 ||
                    argv_add(&argv, "file=%s,format=raw,if=none,readonly=on,id=d%zu", files[i], i) < 0 ||
                    argv_add(&argv, "-device") < 0 || argv_add(&argv, "virtio-blk-pci,drive=d%zu,serial=%s", i, serials[i]) < 0)
                        return error_sys(err, -ENOMEM, "pod %s", uuid);

        /* QEMU keeps its files and its ends of the sockets, nothing else. */
        for (size_t i = 0; i < n_fds; i++)
                (void) fcntl(fds[i], F_SETFD, 0);
        struct group *g = streq(accel, "kvm") ? getgrnam("kvm") : NULL;
        KvmChild c = {
                .uuid = uuid, .limits = &limits, .kvm_gid = g ? g->gr_gid : (gid_t) -1,
                .uid = start.userns.base, .gid = start.userns.base,
                .out = out[1], .err_fd = errp[1], .argv = argv, .supervisor = getpid(),
        };
        fflush(NULL);
        pid_t pid = fork();
        if (pid < 0)
                return error_sys(err, -errno, "pod %s: cannot start QEMU", uuid);
        if (pid == 0) {
                pod_supervisor_child_signals(&old);
                child(&c);
        }
        for (size_t i = 0; i < n_fds; i++)
                close(fds[i]);
        close(out[1]);
        close(errp[1]);
        _cleanup_close_ int pidfd = (int) syscall(SYS_pidfd_open, pid, 0);
        if (pidfd < 0) {
                kill(pid, SIGKILL);
                return error_sys(err, -errno, "pod %s: pidfd", uuid);
        }
        if ((r = pod_supervisor_child_started(uuid, pid, errp[0], "QEMU", err)) < 0)
                return r;

        fcntl(out[0], F_SETFL, O_NONBLOCK);
        fcntl(report[0], F_SETFL, O_NONBLOCK);
        /* The guest's first sign of life is due within the hang timeout
         * of QEMU's start: kvm-init's, once the kernel runs it. */
        Reports rep = { .exit_code = -1, .last_life = monotonic_usec() };
        bool out_open = true, report_open = true, hung = false;
        uint64_t kill_at = 0;
        siginfo_t si = {};
        Error *bad = NULL;
        for (;;) {
                struct pollfd p[] = { { pidfd, POLLIN, 0 }, { sig_fd, POLLIN, 0 }, { out_open ? out[0] : -1, POLLIN, 0 },
                                      { report_open ? report[0] : -1, POLLIN, 0 } };
                uint64_t now = monotonic_usec(), wake = hung ? UINT64_MAX : rep.last_life + hang_usec;
                if (kill_at && kill_at < wake)
                        wake = kill_at;
                uint64_t ms = wake == UINT64_MAX || now >= wake ? 0 : (wake - now + 999) / 1000;
                int timeout = wake == UINT64_MAX ? -1 : ms > INT_MAX ? INT_MAX : (int) ms;
                if (poll(p, ELEMENTSOF(p), timeout) < 0 && errno != EINTR)
                        break;
                if (kill_at && monotonic_usec() >= kill_at) {
                        (void) syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, NULL, 0);
                        kill_at = 0;
                }
                if (p[2].revents)
                        out_open = pod_log_drain(&log, out[0]);
                if (p[3].revents) {
                        char buf[4096];
                        ssize_t n = read(report[0], buf, sizeof(buf));
                        if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR))
                                report_open = false;
                        else if (n > 0 && !bad &&
                                 reports_take(&rep, buf, (size_t) n, m, status_fd, &bad) < 0) {
                                /* Nothing more of it is believed: the pod ends. */
                                report_open = false;
                                (void) syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, NULL, 0);
                        }
                }
                if (p[1].revents & POLLIN) {
                        struct signalfd_siginfo ssi;
                        while (read(sig_fd, &ssi, sizeof(ssi)) == sizeof(ssi))
                                if (ssi.ssi_signo != SIGCHLD && !kill_at) {
                                        (void) !write(command[0], "stop\n", 5);
                                        kill_at = monotonic_usec() + KVM_STOP_TIMEOUT_USEC;
                                }
                }
                /* After the lines read meanwhile: the last may be the
                 * beat that was due. QEMU stopped (SIGSTOP) is as hung as
                 * its guest, and SIGKILL ends it all the same. */
                if (!hung && monotonic_usec() >= rep.last_life + hang_usec) {
                        hung = true;
                        (void) syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, NULL, 0);
                }
                if ((p[0].revents & POLLIN) && waitid(P_PIDFD, (id_t) pidfd, &si, WEXITED) == 0)
                        break;
        }
        pod_supervisor_drain(&log, out[0], out_open);
        int status;
        char note[256] = "";
        if (bad) {
                status = 125;
                snprintf(note, sizeof(note), "sdpod: pod %s: %s: the pod was ended", uuid, bad->msg);
                error_free(bad);
        } else if (hung) {
                /* A guest that reported the pod's end and hung powering
                 * off ended as it said. */
                status = rep.exit_code >= 0 ? rep.exit_code : 125;
                snprintf(note, sizeof(note), "sdpod: pod %s: the guest hung: nothing from it in %llu s (its heartbeat "
                         "stopped, sdpod-stage1(7)): QEMU was killed", uuid, (unsigned long long) (hang_usec / 1000000));
        } else if (si.si_code != CLD_EXITED) {
                status = 128 + si.si_status;
                snprintf(note, sizeof(note), "sdpod: pod %s: QEMU was killed by signal %d", uuid, si.si_status);
        } else if (rep.exit_code >= 0)
                status = rep.exit_code;
        else {
                status = 125;
                snprintf(note, sizeof(note), "sdpod: pod %s: the VM ended (QEMU's exit status %d) without the pod's "
                         "exit code: its init failed or its kernel panicked (see its console above)", uuid, si.si_status);
        }
        if (note[0]) {
                pod_log_write(&log, "\n", 1);
                pod_log_write(&log, note, strlen(note));
                pod_log_write(&log, "\n", 1);
                fprintf(stderr, "%s\n", note);
        }
        pod_log_finish(&log);
        (void) pod_cgroup_kill(uuid, NULL);
        (void) pod_cgroup_remove(uuid, NULL);
        pod_net_release(&ns);
        vm_dir_remove(pod_fd);
        exit(status);
}
