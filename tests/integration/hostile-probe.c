/* SPDX-License-Identifier: Apache-2.0 */
/* hostile-probe: what an attacker inside a pod tries, one system call each,
 * for tests/integration/test-hostile-pod.sh. Statically linked, so it runs
 * in any root (an app's, the stage1's). Each attempt prints one line,
 * "NAME=allowed" or "NAME=EERRNO" (killed by seccomp, it would print
 * nothing and the test sees the gap):
 *
 *   hostile-probe ATTEMPT...     (no argument: all)
 *   hostile-probe notify NAME... sends READY=1 to each abstract unix
 *                                socket @NAME (what a launcher waits for)
 *   hostile-probe deep DIR N     makes N nested directories below DIR, far
 *                                deeper than a path can name
 *   hostile-probe find TEXT      the PIDs of the processes whose command
 *                                line has the word TEXT ("pids=...")
 *   hostile-probe peek [-u UID] PID|child
 *                                what this process (first setuid(UID), as
 *                                root in an app can) reaches of process
 *                                PID, or of a child of its own: ptrace
 *                                (seize and detach), process_vm_readv,
 *                                /proc/PID/mem for writing, /proc/PID/root,
 *                                /proc/PID/environ ("environ=allowed:TEXT"
 *                                with the first variable)
 *   hostile-probe swap DIR NAME TARGET
 *                                once something lists DIR (inotify), replaces
 *                                DIR/NAME by a symbolic link to TARGET: the
 *                                swap after a host tool's check, before its
 *                                use (prints "armed" when it listens)
 *
 * and "fds=0 1 2 ..." lists the open file descriptors, which is what
 * reaches a command besides its standard ones. It changes nothing when an
 * attempt is refused, and nothing that outlives it when one is allowed
 * (each runs in a child; what it makes it undoes), so that running it on
 * the host by mistake harms nothing. */
#include <errno.h>
#include <fcntl.h>
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/io_uring.h>
#include <linux/keyctl.h>
#include <linux/perf_event.h>
#include <linux/reboot.h>
#include <sched.h>
#include <stdbool.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <linux/vm_sockets.h>
#include <sys/inotify.h>
#include <sys/mount.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <stddef.h>
#include <sys/wait.h>
#include <time.h>
#include <dirent.h>
#include <unistd.h>
#include <arpa/inet.h>

static void report(const char *name, long r) {
        if (r >= 0)
                printf("%s=allowed\n", name);
        else
                printf("%s=%s\n", name, strerrorname_np(errno) ?: "E?");
        fflush(stdout);
}

static long try_io_uring(void) {
        struct io_uring_params p = { 0 };
        long fd = syscall(__NR_io_uring_setup, 1, &p);
        if (fd >= 0)
                close((int) fd);
        return fd;
}

static long try_userfaultfd(void) {
        long fd = syscall(__NR_userfaultfd, 0);
        if (fd >= 0)
                close((int) fd);
        return fd;
}

static long try_keyring(void) {
        return syscall(__NR_add_key, "user", "sdpod-probe", "x", 1, KEY_SPEC_PROCESS_KEYRING);
}

static long try_packet(void) {
        int fd = socket(AF_PACKET, SOCK_RAW, htons(ETH_P_ALL));
        if (fd >= 0)
                close(fd);
        return fd;
}

static long try_vsock(void) {
        /* A channel to the hypervisor or to other guests, past the pod's
         * network namespace. */
        int fd = socket(AF_VSOCK, SOCK_STREAM, 0);
        if (fd >= 0)
                close(fd);
        return fd;
}

static long try_unshare_user(void) {
        return unshare(CLONE_NEWUSER);
}

static long try_unshare_mount(void) {
        return unshare(CLONE_NEWNS);
}

static long try_mount(void) {
        /* On an empty directory of its own, unmounted again at once: run
         * where mounting is allowed (by mistake, as the host's root), it
         * must hide nothing. */
        char dir[] = "/tmp/sdpod-probe.XXXXXX";
        if (!mkdtemp(dir))
                return -1;
        long r = mount("sdpod-probe", dir, "tmpfs", MS_NOSUID, NULL);
        int saved = errno;
        if (r >= 0)
                umount2(dir, MNT_DETACH);
        rmdir(dir);
        errno = saved;
        return r;
}

static long try_bpf(void) {
        union bpf_attr a;
        memset(&a, 0, sizeof(a));
        a.map_type = BPF_MAP_TYPE_ARRAY;
        a.key_size = 4;
        a.value_size = 4;
        a.max_entries = 1;
        long fd = syscall(__NR_bpf, BPF_MAP_CREATE, &a, sizeof(a));
        if (fd >= 0)
                close((int) fd);
        return fd;
}

static long try_perf(void) {
        struct perf_event_attr a;
        memset(&a, 0, sizeof(a));
        a.type = PERF_TYPE_SOFTWARE;
        a.size = sizeof(a);
        a.config = PERF_COUNT_SW_CPU_CLOCK;
        long fd = syscall(__NR_perf_event_open, &a, 0, -1, -1, 0);
        if (fd >= 0)
                close((int) fd);
        return fd;
}

static long try_module(void) {
        /* An empty module: refused before it is looked at, or EINVAL/ENOEXEC
         * from a kernel that would have loaded a real one. */
        return syscall(__NR_init_module, "", 0, "");
}

static long try_clock(void) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        return clock_settime(CLOCK_REALTIME, &ts);
}

static long try_reboot(void) {
        /* A command that does not exist: the privilege is checked first
         * (EPERM), a caller that has it gets EINVAL and nothing happens. */
        return syscall(__NR_reboot, LINUX_REBOOT_MAGIC1, LINUX_REBOOT_MAGIC2, 0x0badc0de, NULL);
}

static long try_syslog(void) {
        char buf[64];
        return syscall(__NR_syslog, 3 /* SYSLOG_ACTION_READ_ALL */, buf, (int) sizeof(buf));
}

static long try_open_by_handle(void) {
        struct { struct file_handle h; unsigned char b[64]; } fh;
        memset(&fh, 0, sizeof(fh));
        fh.h.handle_bytes = 8;
        fh.h.handle_type = 1;
        return syscall(__NR_open_by_handle_at, AT_FDCWD, &fh.h, O_RDONLY);
}

static long try_kexec(void) {
        return syscall(__NR_kexec_load, 0, 0, NULL, 0);
}

/* A system call of the i386 ABI from a 64-bit process (int $0x80):
 * another way in, past a filter written for the native ABI only. */
static long try_compat_abi(void) {
#if defined(__x86_64__)
        long r;
        __asm__ volatile("int $0x80" : "=a"(r) : "a"(20L) /* i386 getpid */ : "memory");
        if (r < 0 && r > -4096) {
                errno = (int) -r;
                return -1;
        }
        return r;
#else
        errno = ENOSYS;
        return -1;
#endif
}

static void list_fds(void) {
        DIR *d = opendir("/proc/self/fd");
        char line[1024] = "";
        size_t n = 0;
        int self = d ? dirfd(d) : -1;
        for (struct dirent *de; d && (de = readdir(d));) {
                if (de->d_name[0] == '.' || atoi(de->d_name) == self)
                        continue;
                n += (size_t) snprintf(line + n, sizeof(line) - n, "%s%s", n ? " " : "", de->d_name);
                if (n >= sizeof(line))
                        break;
        }
        if (d)
                closedir(d);
        printf("fds=%s\n", line);
        fflush(stdout);
}

static const struct {
        const char *name;
        long (*attempt)(void);
} attempts[] = {
        { "io_uring", try_io_uring },       { "userfaultfd", try_userfaultfd },
        { "keyring", try_keyring },         { "packet", try_packet },
        { "unshare_user", try_unshare_user }, { "unshare_mount", try_unshare_mount },
        { "mount", try_mount },             { "bpf", try_bpf },
        { "perf", try_perf },               { "module", try_module },
        { "clock", try_clock },             { "reboot", try_reboot },
        { "syslog", try_syslog },           { "open_by_handle", try_open_by_handle },
        { "kexec", try_kexec },             { "compat_abi", try_compat_abi },
        { "vsock", try_vsock },
};

/* Each attempt in a child of its own: one that succeeds (unshare) must
 * not change what the next one sees, and one the kernel kills is told. */
static void attempt(size_t i) {
        pid_t pid = fork();
        if (pid == 0) {
                errno = 0;
                report(attempts[i].name, attempts[i].attempt());
                _exit(0);
        }
        int st = 0;
        if (pid < 0 || waitpid(pid, &st, 0) < 0)
                printf("%s=probe-failed\n", attempts[i].name);
        else if (WIFSIGNALED(st))
                printf("%s=killed-by-signal-%d\n", attempts[i].name, WTERMSIG(st));
        fflush(stdout);
}

static int notify(int n, char **names) {
        int sent = 0;
        for (int i = 0; i < n; i++) {
                struct sockaddr_un sa = { .sun_family = AF_UNIX };
                size_t l = strlen(names[i]);
                if (l >= sizeof(sa.sun_path) - 1)
                        continue;
                memcpy(sa.sun_path + 1, names[i], l);
                int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
                if (fd >= 0 && sendto(fd, "READY=1", 7, 0, (struct sockaddr *) &sa,
                                      (socklen_t) (offsetof(struct sockaddr_un, sun_path) + 1 + l)) == 7)
                        sent++;
                if (fd >= 0)
                        close(fd);
        }
        printf("notify=%d\n", sent);
        return 0;
}

static int deep(const char *dir, long n) {
        int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        long i = 0;
        for (; fd >= 0 && i < n; i++) {
                if (mkdirat(fd, "d", 0755) < 0)
                        break;
                int next = openat(fd, "d", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                close(fd);
                fd = next;
        }
        if (fd >= 0)
                close(fd);
        printf("depth=%ld\n", i);
        return i == n ? 0 : 1;
}

static int find(const char *text) {
        DIR *d = opendir("/proc");
        struct dirent *e;
        printf("pids=");
        while (d && (e = readdir(d))) {
                char path[300], buf[4096];
                if (e->d_name[0] < '1' || e->d_name[0] > '9' || atoi(e->d_name) == getpid())
                        continue;
                snprintf(path, sizeof(path), "/proc/%s/cmdline", e->d_name);
                int fd = open(path, O_RDONLY | O_CLOEXEC);
                ssize_t n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;
                if (fd >= 0)
                        close(fd);
                for (ssize_t i = 0, w = 0; i < n; i = w + 1) {
                        w = i + (ssize_t) strnlen(buf + i, (size_t) (n - i));
                        if ((size_t) (w - i) == strlen(text) && memcmp(buf + i, text, (size_t) (w - i)) == 0) {
                                printf("%s ", e->d_name);
                                break;
                        }
                }
        }
        if (d)
                closedir(d);
        printf("\n");
        return 0;
}

static void peek_at(pid_t pid) {
        char path[64];
        long r = ptrace(PTRACE_SEIZE, pid, 0, 0);
        report("ptrace", r);
        if (r >= 0)
                ptrace(PTRACE_DETACH, pid, 0, 0);
        char buf[16];
        struct iovec local = { buf, sizeof(buf) }, remote = { (void *) 0x1000, sizeof(buf) };
        r = process_vm_readv(pid, &local, 1, &remote, 1, 0);
        if (r < 0 && errno == EFAULT)
                r = 0; /* let in: only the address was wrong */
        report("vmread", r);
        snprintf(path, sizeof(path), "/proc/%d/mem", (int) pid);
        int fd = open(path, O_RDWR | O_CLOEXEC);
        report("mem", fd);
        if (fd >= 0)
                close(fd);
        snprintf(path, sizeof(path), "/proc/%d/root/", (int) pid);
        DIR *d = opendir(path);
        report("root", d ? 0 : -1);
        if (d)
                closedir(d);
        snprintf(path, sizeof(path), "/proc/%d/environ", (int) pid);
        fd = open(path, O_RDONLY | O_CLOEXEC);
        ssize_t n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;
        if (fd >= 0)
                close(fd);
        if (n > 0) {
                buf[n] = 0;
                for (ssize_t i = 0; i < n; i++)
                        if (buf[i] == '=' || buf[i] < ' ' || buf[i] > '~')
                                buf[i] = buf[i] ? '_' : 0;
                printf("environ=allowed:%s\n", buf);
        } else
                report("environ", fd < 0 ? -1 : n == 0 ? -1 : 0);
        fflush(stdout);
}

static int peek(int argc, char **argv) {
        int k = 2;
        if (argc > 3 && strcmp(argv[2], "-u") == 0) {
                uid_t uid = (uid_t) atoi(argv[3]);
                if (setgid(uid) < 0 || setuid(uid) < 0) {
                        report("setuid", -1);
                        return 1;
                }
                k = 4;
        }
        if (k >= argc)
                return 2;
        if (strcmp(argv[k], "child") != 0) {
                peek_at((pid_t) atoi(argv[k]));
                return 0;
        }
        pid_t child = fork();
        if (child == 0) {
                pause();
                _exit(0);
        }
        usleep(100000);
        peek_at(child);
        kill(child, SIGKILL);
        waitpid(child, NULL, 0);
        return 0;
}

/* The first listing of dir (an IN_ACCESS on the directory itself) is
 * the host tool's check; 2 ms later, while it starts what it checked for,
 * name becomes a link to target. Gives up after 30 s. */
static int swap(const char *dir, const char *name, const char *target) {
        char tmp[4096], path[4096];
        snprintf(tmp, sizeof(tmp), "%s/.swap-%s", dir, name);
        snprintf(path, sizeof(path), "%s/%s", dir, name);
        int in = inotify_init1(IN_CLOEXEC);
        if (in < 0 || inotify_add_watch(in, dir, IN_ACCESS | IN_ONLYDIR) < 0) {
                printf("swap=%s\n", strerrorname_np(errno) ?: "E?");
                return 1;
        }
        printf("armed\n");
        fflush(stdout);
        alarm(30);
        char buf[4096];
        for (;;) {
                ssize_t n = read(in, buf, sizeof(buf));
                if (n <= 0)
                        return 1;
                const struct inotify_event *e = (const void *) buf;
                if (e->len == 0)
                        break; /* the directory itself was read */
        }
        usleep(2000);
        unlink(tmp);
        if (symlink(target, tmp) < 0 || rename(tmp, path) < 0) {
                printf("swap=%s\n", strerrorname_np(errno) ?: "E?");
                return 1;
        }
        printf("swapped\n");
        return 0;
}

int main(int argc, char **argv) {
        if (argc == 3 && strcmp(argv[1], "find") == 0)
                return find(argv[2]);
        if (argc > 2 && strcmp(argv[1], "peek") == 0)
                return peek(argc, argv);
        if (argc == 5 && strcmp(argv[1], "swap") == 0)
                return swap(argv[2], argv[3], argv[4]);
        if (argc > 1 && strcmp(argv[1], "notify") == 0)
                return notify(argc - 2, argv + 2);
        if (argc == 4 && strcmp(argv[1], "deep") == 0)
                return deep(argv[2], atol(argv[3]));
        for (size_t i = 0; i < sizeof(attempts) / sizeof(attempts[0]); i++) {
                bool wanted = argc < 2;
                for (int k = 1; k < argc && !wanted; k++)
                        wanted = strcmp(argv[k], attempts[i].name) == 0;
                if (wanted)
                        attempt(i);
        }
        bool fds = argc < 2;
        for (int k = 1; k < argc && !fds; k++)
                fds = strcmp(argv[k], "fds") == 0;
        if (fds)
                list_fds();
        return 0;
}
