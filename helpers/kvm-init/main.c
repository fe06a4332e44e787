/* SPDX-License-Identifier: Apache-2.0 */
/* kvm-init: the /init of the kvm flavor's initramfs, PID 1 until it execs
 * the pod's systemd. It loads the few modules the guest needs, finds the
 * disks the host attached by their serials (stage1, pod, app-I), builds the
 * pod's root from them as the nspawn flavor's pod sees it (the stage1 with
 * /sdpod and /opt/stage2/NAME/rootfs), names the host's virtio-serial ports
 * as udev would and hands over to systemd (sdpod-stage1(7), "The kvm
 * flavor"; the ports are kvm/kvm-run.h's: sdpod.report, sdpod.command).
 *
 * Static and libc only: it runs before any root with libraries exists.
 * Every failure ends the VM at once, saying what failed on the console:
 * QEMU exits 251 (isa-debug-exit, byte 125), which the host tells apart
 * from a pod's own exit. */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <net/if.h>
#include <net/route.h>
#include <sys/io.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/mount.h>
#include <sys/reboot.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#define APPS_MAX 64
#define APP_NAME_MAX 64 /* pod-manifest.c AC_NAME_MAX */
#define CMDLINE_MAX 4096
#define SMALL_FILE_MAX 256 /* a serial, a port's name */
#define DISK_DEADLINE_NSEC (10 * 1000000000LL)
#define POLL_NSEC (10 * 1000000LL)
#define DEBUG_EXIT_PORT 0xf4
#define DEBUG_EXIT_INIT_FAILED 125
#define PORTS_MAX 8
#define NEWROOT "/newroot"

static void closep(int *fd) {
        if (*fd >= 0)
                close(*fd);
}
static void closedirp(DIR **d) {
        if (*d)
                closedir(*d);
}
#define _cleanup_close_ __attribute__((cleanup(closep)))
#define _cleanup_closedir_ __attribute__((cleanup(closedirp)))

/* Says what failed and ends the VM: there is no one to return to (PID 1
 * exiting panics the kernel, and panic=-1 would reboot it into the same
 * failure). The debug-exit port makes QEMU exit with a code of its own;
 * the power-off is for a VM without that device. */
static _Noreturn void die(int err, const char *fmt, ...) {
        char msg[1024];
        int n = snprintf(msg, sizeof(msg), "kvm-init: ");
        va_list ap;
        va_start(ap, fmt);
        n += vsnprintf(msg + n, sizeof(msg) - n, fmt, ap);
        va_end(ap);
        if (n < (int) sizeof(msg))
                snprintf(msg + n, sizeof(msg) - n, ": %s\n", strerror(err));
        (void) !write(2, msg, strlen(msg));
        /* The console's UART sends what the tty holds after write()
         * returns; QEMU ends at once on the debug-exit port, and the
         * message would be cut short. */
        tcdrain(2);
        if (ioperm(DEBUG_EXIT_PORT, 1, 1) == 0)
                outb(DEBUG_EXIT_INIT_FAILED, DEBUG_EXIT_PORT);
        sync();
        reboot(RB_POWER_OFF);
        for (;;)
                pause();
}

/* The whole of a small file of /proc or /sys, bounded: a value longer than
 * max is not one we wait for. Returns its length, or -errno; -EFBIG when
 * it does not fit. */
static int read_small(const char *path, char *buf, size_t max) {
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        size_t n = 0;
        for (;;) {
                ssize_t k = read(fd, buf + n, max - n);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k < 0)
                        return -errno;
                if (k == 0)
                        break;
                n += (size_t) k;
                if (n == max)
                        return -EFBIG;
        }
        buf[n] = '\0';
        while (n > 0 && isspace((unsigned char) buf[n - 1]))
                buf[--n] = '\0';
        return (int) n;
}

static void mkdir_p(const char *path, mode_t mode) {
        char p[PATH_MAX];
        if (snprintf(p, sizeof(p), "%s", path) >= (int) sizeof(p))
                die(ENAMETOOLONG, "mkdir %s", path);
        for (char *s = p + 1;; s++) {
                if (*s && *s != '/')
                        continue;
                char c = *s;
                *s = '\0';
                if (mkdir(p, mode) < 0 && errno != EEXIST)
                        die(errno, "mkdir %s", p);
                if (!c)
                        return;
                *s = c;
        }
}

static void do_mount(const char *src, const char *dst, const char *type, unsigned long flags, const char *data) {
        mkdir_p(dst, 0755);
        if (mount(src, dst, type, flags, data) < 0)
                die(errno, "mount %s (%s) on %s", src, type ? type : "move", dst);
}

/* An overlay of a read-only tree with its writes in /run/rw (tmpfs). */
static void mount_overlay(const char *lower, const char *what, const char *dst) {
        char upper[PATH_MAX], work[PATH_MAX], opts[3 * PATH_MAX + 64];
        snprintf(upper, sizeof(upper), "/run/rw/%s", what);
        snprintf(work, sizeof(work), "/run/rw/%s.work", what);
        mkdir_p(upper, 0755);
        mkdir_p(work, 0755);
        snprintf(opts, sizeof(opts), "lowerdir=%s,upperdir=%s,workdir=%s", lower, upper, work);
        do_mount("overlay", dst, "overlay", 0, opts);
}

/* The modules in /modules/order, one file name a line, in dependency order
 * (build-stage1-kvm wrote it from modules.dep): no modprobe here. */
static void load_modules(void) {
        char order[8192];
        int n = read_small("/modules/order", order, sizeof(order) - 1);
        if (n < 0)
                die(-n, "/modules/order");
        for (char *save = NULL, *name = strtok_r(order, "\n", &save); name; name = strtok_r(NULL, "\n", &save)) {
                char path[PATH_MAX];
                if (strchr(name, '/') || snprintf(path, sizeof(path), "/modules/%s", name) >= (int) sizeof(path))
                        die(EINVAL, "/modules/order: %s", name);
                _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
                if (fd < 0)
                        die(errno, "%s", path);
                if (syscall(SYS_finit_module, fd, "", 0) < 0 && errno != EEXIST)
                        die(errno, "load module %s", path);
        }
}

/* [a-z0-9]+(-[a-z0-9]+)*, at most APP_NAME_MAX: an app name of a pod
 * manifest (pod-manifest.c), which becomes a path below /opt/stage2. */
static bool app_name_valid(const char *s) {
        size_t n = strlen(s);
        if (n == 0 || n > APP_NAME_MAX || s[0] == '-' || s[n - 1] == '-' || strstr(s, "--"))
                return false;
        return strspn(s, "abcdefghijklmnopqrstuvwxyz0123456789-") == n;
}

typedef struct {
        char names[APPS_MAX][APP_NAME_MAX + 1];
        size_t n;
} Apps;

/* sdpod.apps=NAME1,NAME2 from the kernel's command line: the apps in the
 * order of their disks app-0, app-1, ... Empty is a pod without apps;
 * missing is a host that does not speak the contract. */
/* The value of key= on the kernel's command line, copied into buf; NULL
 * without one. The last one wins, as the kernel's own. */
static const char *cmdline_value(const char *key, char buf[static CMDLINE_MAX]) {
        char cmdline[CMDLINE_MAX];
        int n = read_small("/proc/cmdline", cmdline, CMDLINE_MAX - 1);
        if (n < 0)
                die(-n, "/proc/cmdline");
        const char *value = NULL;
        size_t k = strlen(key);
        for (char *save = NULL, *w = strtok_r(cmdline, " \t\n", &save); w; w = strtok_r(NULL, " \t\n", &save))
                if (strncmp(w, key, k) == 0 && w[k] == '=')
                        value = w + k + 1;
        if (!value)
                return NULL;
        snprintf(buf, CMDLINE_MAX, "%s", value);
        return buf;
}

static void parse_apps(Apps *apps) {
        char list[CMDLINE_MAX];
        const char *value = cmdline_value("sdpod.apps", list);
        if (!value)
                die(EINVAL, "no sdpod.apps= on the kernel command line");
        apps->n = 0;
        for (char *save = NULL, *name = strtok_r(list, ",", &save); name; name = strtok_r(NULL, ",", &save)) {
                if (!app_name_valid(name))
                        die(EINVAL, "sdpod.apps: '%.80s' is not an app name ([a-z0-9]+(-[a-z0-9]+)*, at most %d)", name,
                            APP_NAME_MAX);
                for (size_t i = 0; i < apps->n; i++)
                        if (strcmp(apps->names[i], name) == 0)
                                die(EINVAL, "sdpod.apps: app %s twice", name);
                if (apps->n == APPS_MAX)
                        die(E2BIG, "sdpod.apps: more than %d apps", APPS_MAX);
                strcpy(apps->names[apps->n++], name);
        }
}

/* sdpod.net=ADDRESS/PREFIX,GATEWAY from the kernel's command line (the
 * pod's IPv4 address on its CNI network, kvm/kvm-net.h): eth0 takes it,
 * with a route to the gateway on the link and the default route through
 * it, as CNI's ptp plugin sets them in a container. No sdpod.net: a pod
 * without a network (only lo, which systemd brings up). */
typedef struct {
        bool set;
        struct in_addr address, netmask, gateway;
} Net;

static void parse_net(Net *net) {
        char buf[CMDLINE_MAX];
        const char *value = cmdline_value("sdpod.net", buf);
        *net = (Net) {};
        if (!value)
                return;
        char a[64], g[64];
        unsigned prefix;
        char end;
        if (sscanf(value, "%63[0-9.]/%u,%63[0-9.]%c", a, &prefix, g, &end) != 3 || prefix > 32 ||
            inet_pton(AF_INET, a, &net->address) != 1 || inet_pton(AF_INET, g, &net->gateway) != 1)
                die(EINVAL, "sdpod.net: '%.80s' is not ADDRESS/PREFIX,GATEWAY", value);
        net->netmask.s_addr = prefix ? htonl(~0U << (32 - prefix)) : 0;
        net->set = true;
}

static void set_addr(struct sockaddr *sa, struct in_addr a) {
        struct sockaddr_in sin = { .sin_family = AF_INET, .sin_addr = a };
        memcpy(sa, &sin, sizeof(sin));
}

/* A route on eth0: to dst/mask, through gw when gw is not 0. */
static void add_route(int s, struct in_addr dst, struct in_addr mask, struct in_addr gw) {
        struct rtentry rt = { .rt_flags = RTF_UP | (gw.s_addr ? RTF_GATEWAY : 0) | (mask.s_addr == 0xffffffff ? RTF_HOST : 0),
                              .rt_dev = (char *) "eth0" };
        set_addr(&rt.rt_dst, dst);
        set_addr(&rt.rt_genmask, mask);
        set_addr(&rt.rt_gateway, gw);
        if (ioctl(s, SIOCADDRT, &rt) < 0 && errno != EEXIST)
                die(errno, "route on eth0");
}

static void setup_net(const Net *net) {
        /* Any user of the pod may listen on any port, as in the other
         * flavors' network namespaces (netns.h): the guest is the pod's. */
        int fd = open("/proc/sys/net/ipv4/ip_unprivileged_port_start", O_WRONLY | O_CLOEXEC);
        if (fd < 0 || write(fd, "0", 1) != 1)
                die(errno, "/proc/sys/net/ipv4/ip_unprivileged_port_start");
        close(fd);
        if (!net->set)
                return;
        /* The NIC's driver is loaded; its interface appears soon after. */
        struct timespec start;
        clock_gettime(CLOCK_MONOTONIC, &start);
        while (if_nametoindex("eth0") == 0) {
                struct timespec now;
                clock_gettime(CLOCK_MONOTONIC, &now);
                if ((now.tv_sec - start.tv_sec) * 1000000000LL + (now.tv_nsec - start.tv_nsec) > DISK_DEADLINE_NSEC)
                        die(ENODEV, "no eth0 after 10 s");
                nanosleep(&(struct timespec) { .tv_nsec = POLL_NSEC }, NULL);
        }
        _cleanup_close_ int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        if (s < 0)
                die(errno, "socket");
        struct ifreq ifr = {};
        snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "eth0");
        set_addr(&ifr.ifr_addr, net->address);
        if (ioctl(s, SIOCSIFADDR, &ifr) < 0)
                die(errno, "eth0's address");
        /* The address alone on the link (/32), as ptp gives it: everything
         * else goes through the gateway, on the link. */
        set_addr(&ifr.ifr_netmask, (struct in_addr) { .s_addr = 0xffffffff });
        if (ioctl(s, SIOCSIFNETMASK, &ifr) < 0)
                die(errno, "eth0's netmask");
        if (ioctl(s, SIOCGIFFLAGS, &ifr) < 0)
                die(errno, "eth0's flags");
        ifr.ifr_flags |= IFF_UP;
        if (ioctl(s, SIOCSIFFLAGS, &ifr) < 0)
                die(errno, "eth0 up");
        struct in_addr any = { 0 }, host = { .s_addr = 0xffffffff };
        add_route(s, net->gateway, host, any);
        struct in_addr subnet = { .s_addr = net->address.s_addr & net->netmask.s_addr };
        if (net->netmask.s_addr)
                add_route(s, subnet, net->netmask, net->gateway);
        add_route(s, any, any, net->gateway);
        char a[INET_ADDRSTRLEN], g[INET_ADDRSTRLEN];
        printf("kvm-init: eth0: %s, through %s\n", inet_ntop(AF_INET, &net->address, a, sizeof(a)),
               inet_ntop(AF_INET, &net->gateway, g, sizeof(g)));
}

/* What the host attached, as found so far: the device of each disk by its
 * role (stage1, pod, app-I) and the named virtio-serial ports. */
typedef struct {
        char stage1[32], pod[32], app[APPS_MAX][32];
        struct {
                char name[SMALL_FILE_MAX + 1], dev[32];
        } ports[PORTS_MAX];
        size_t n_ports;
} Devices;

/* The ports pod-helper talks to the host through (kvm/kvm-run.h): the
 * guest does not start without them. */
static const char *const required_ports[] = { "sdpod.report", "sdpod.command" };

static long long now_nsec(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* One look at /sys/block: each virtio disk names its role in its serial
 * (QEMU's serial=); a role seen twice is a host error, not a race. */
static void scan_disks(const Apps *apps, Devices *dev) {
        _cleanup_closedir_ DIR *d = opendir("/sys/block");
        if (!d)
                die(errno, "/sys/block");
        struct dirent *de;
        while ((de = readdir(d))) {
                char path[PATH_MAX], serial[SMALL_FILE_MAX + 1];
                if (strncmp(de->d_name, "vd", 2) != 0 || strlen(de->d_name) >= sizeof(dev->stage1))
                        continue;
                snprintf(path, sizeof(path), "/sys/block/%s/serial", de->d_name);
                /* Not there yet while the disk is being added. */
                if (read_small(path, serial, sizeof(serial) - 1) < 0)
                        continue;
                char *slot = NULL;
                if (strcmp(serial, "stage1") == 0)
                        slot = dev->stage1;
                else if (strcmp(serial, "pod") == 0)
                        slot = dev->pod;
                else
                        for (size_t i = 0; i < apps->n && !slot; i++) {
                                char want[32];
                                snprintf(want, sizeof(want), "app-%zu", i);
                                if (strcmp(serial, want) == 0)
                                        slot = dev->app[i];
                        }
                if (!slot)
                        continue; /* not ours: the host decides what else a VM has */
                /* devtmpfs makes the node after sysfs shows the disk. */
                snprintf(path, sizeof(path), "/dev/%s", de->d_name);
                if (access(path, F_OK) < 0)
                        continue;
                if (*slot && strcmp(slot, de->d_name) != 0)
                        die(EEXIST, "disks %s and %s both have serial %s", slot, de->d_name, serial);
                strcpy(slot, de->d_name);
        }
}

/* A name a port may have as a link in /dev/virtio-ports: one path
 * component, as udev's rule would make it. */
static bool port_name_valid(const char *s) {
        if (!*s || strcmp(s, ".") == 0 || strcmp(s, "..") == 0)
                return false;
        for (; *s; s++)
                if (*s == '/' || !isgraph((unsigned char) *s))
                        return false;
        return true;
}

/* Every named port, as udev would link it: a port's name arrives from
 * QEMU after the port itself, so an empty name is "not yet". */
static void scan_ports(Devices *dev) {
        _cleanup_closedir_ DIR *d = opendir("/sys/class/virtio-ports");
        if (!d)
                return; /* virtio_console has not registered the class yet */
        dev->n_ports = 0;
        struct dirent *de;
        while ((de = readdir(d)) && dev->n_ports < PORTS_MAX) {
                char path[PATH_MAX], name[SMALL_FILE_MAX + 1];
                if (strncmp(de->d_name, "vport", 5) != 0 || strlen(de->d_name) >= sizeof(dev->ports[0].dev))
                        continue;
                snprintf(path, sizeof(path), "/sys/class/virtio-ports/%s/name", de->d_name);
                if (read_small(path, name, sizeof(name) - 1) < 0 || !port_name_valid(name))
                        continue;
                snprintf(path, sizeof(path), "/dev/%s", de->d_name);
                if (access(path, F_OK) < 0)
                        continue;
                strcpy(dev->ports[dev->n_ports].name, name);
                strcpy(dev->ports[dev->n_ports++].dev, de->d_name);
        }
}

static bool port_found(const Devices *dev, const char *name) {
        for (size_t i = 0; i < dev->n_ports; i++)
                if (strcmp(dev->ports[i].name, name) == 0)
                        return true;
        return false;
}

static bool all_found(const Apps *apps, const Devices *dev) {
        if (!*dev->stage1 || !*dev->pod)
                return false;
        for (size_t i = 0; i < sizeof(required_ports) / sizeof(required_ports[0]); i++)
                if (!port_found(dev, required_ports[i]))
                        return false;
        for (size_t i = 0; i < apps->n; i++)
                if (!*dev->app[i])
                        return false;
        return true;
}

/* The modules probe their devices asynchronously: wait for every disk and
 * the host's ports, and name the first missing one when the wait fails. */
static void wait_devices(const Apps *apps, Devices *dev) {
        long long deadline = now_nsec() + DISK_DEADLINE_NSEC;
        memset(dev, 0, sizeof(*dev));
        for (;;) {
                scan_disks(apps, dev);
                scan_ports(dev);
                if (all_found(apps, dev))
                        return;
                if (now_nsec() >= deadline)
                        break;
                struct timespec ts = { 0, POLL_NSEC };
                nanosleep(&ts, NULL);
        }
        if (!*dev->stage1)
                die(ENODEV, "no disk with serial stage1 after 10 s");
        if (!*dev->pod)
                die(ENODEV, "no disk with serial pod after 10 s");
        for (size_t i = 0; i < apps->n; i++)
                if (!*dev->app[i])
                        die(ENODEV, "no disk with serial app-%zu (app %s) after 10 s", i, apps->names[i]);
        for (size_t i = 0; i < sizeof(required_ports) / sizeof(required_ports[0]); i++)
                if (!port_found(dev, required_ports[i]))
                        die(ENODEV, "no virtio-serial port named %s after 10 s", required_ports[i]);
        die(EIO, "the devices were there and are not");
}

/* Writes text to the host on the report port (kvm/kvm-run.h). */
static void report(const Devices *dev, const char *text) {
        for (size_t i = 0; i < dev->n_ports; i++) {
                if (strcmp(dev->ports[i].name, "sdpod.report") != 0)
                        continue;
                char path[64];
                size_t n = strlen(text);
                snprintf(path, sizeof(path), "/dev/%s", dev->ports[i].dev);
                _cleanup_close_ int fd = open(path, O_WRONLY | O_CLOEXEC | O_NOCTTY);
                if (fd < 0 || write(fd, text, n) != (ssize_t) n)
                        die(errno, "%s (sdpod.report)", path);
                return;
        }
}

/* The guest's first sign of life to the host (kvm/kvm-run.h's
 * KVM_REPORT_ALIVE_LINE): the kernel booted and runs us. The host's hang
 * timeout runs from QEMU's start to this line, then from it to the
 * lifeline's first heartbeat, once systemd has started. */
static void report_alive(const Devices *dev) {
        report(dev, "alive\n");
}

#if SDPOD_CRASH_POINTS
/* Test builds only: sdpod.crash= on the command line (the host adds it
 * for tests/integration/test-kvm-kills.sh). "panic" panics the kernel, as
 * a guest's own fault would; "flood" is a hostile guest that floods the
 * host with heartbeats, then hangs. */
static void crash_if_asked(const Devices *dev) {
        char buf[CMDLINE_MAX];
        const char *value = cmdline_value("sdpod.crash", buf);
        if (value && strcmp(value, "flood") == 0) {
                char lines[200 * 6 + 1] = "";
                for (int i = 0; i < 200; i++)
                        strcat(lines, "alive\n");
                printf("kvm-init: sdpod.crash=flood: 200 heartbeats at once\n");
                fflush(stdout);
                report(dev, lines);
                for (;;)
                        pause();
        }
        if (!value || strcmp(value, "panic") != 0)
                return;
        printf("kvm-init: sdpod.crash=panic: panicking the kernel\n");
        fflush(stdout);
        int fd = open("/proc/sysrq-trigger", O_WRONLY | O_CLOEXEC);
        if (fd < 0 || write(fd, "c", 1) != 1)
                die(errno, "/proc/sysrq-trigger");
        die(EIO, "the kernel did not panic");
}
#endif

static void mount_erofs(const char *disk, const char *dst) {
        char src[64];
        snprintf(src, sizeof(src), "/dev/%s", disk);
        do_mount(src, dst, "erofs", MS_RDONLY, NULL);
}

int main(void) {
        Apps apps;
        Devices dev;
        Net net;

        /* The kernel gave us no console when the initramfs has no
         * /dev/console (it is built without device nodes, as any user):
         * open it once devtmpfs is there, so that failures are seen. */
        if (mount("devtmpfs", "/dev", "devtmpfs", MS_NOSUID, "mode=0755") < 0 && errno != EBUSY)
                die(errno, "mount devtmpfs on /dev");
        if (fcntl(2, F_GETFD) < 0) {
                int fd = open("/dev/console", O_RDWR | O_NOCTTY | O_CLOEXEC);
                if (fd >= 0) {
                        for (int i = 0; i < 3; i++)
                                dup2(fd, i); /* dup2 clears O_CLOEXEC on the copies */
                        if (fd > 2)
                                close(fd);
                }
        }
        do_mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL);
        do_mount("sysfs", "/sys", "sysfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL);

        parse_apps(&apps);
        parse_net(&net);
        load_modules();
        wait_devices(&apps, &dev);
        report_alive(&dev);
#if SDPOD_CRASH_POINTS
        crash_if_asked(&dev);
#endif
        setup_net(&net);

        /* The pod's root: the stage1, writable in memory as nspawn's
         * overlay of it is, so that systemd and the generator can write
         * /etc and /run's mount points. */
        mount_erofs(dev.stage1, "/run/stage1");
        do_mount("tmpfs", "/run/rw", "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755");
        mount_overlay("/run/stage1", "stage1", NEWROOT);

        /* /sdpod: the pod's directory, read-only but for status/, where the
         * reapers write the apps' records that pod-helper sends the host. */
        mount_erofs(dev.pod, NEWROOT "/sdpod");
        do_mount("tmpfs", NEWROOT "/sdpod/status", "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755");

        for (size_t i = 0; i < apps.n; i++) {
                char lower[64], what[64], root[PATH_MAX];
                snprintf(lower, sizeof(lower), "/run/app-%zu", i);
                snprintf(what, sizeof(what), "app-%zu", i);
                snprintf(root, sizeof(root), NEWROOT "/opt/stage2/%s/rootfs", apps.names[i]);
                mount_erofs(dev.app[i], lower);
                mount_overlay(lower, what, root);
                printf("kvm-init: app %s: /dev/%s\n", apps.names[i], dev.app[i]);
        }

        /* /dev moves as it is, so the console stays open on it; no udev in
         * the guest, so the link udev would make for the port is ours. */
        do_mount("/dev", NEWROOT "/dev", NULL, MS_MOVE, NULL);
        mkdir_p(NEWROOT "/dev/virtio-ports", 0755);
        for (size_t i = 0; i < dev.n_ports; i++) {
                char link[PATH_MAX], target[64];
                snprintf(link, sizeof(link), NEWROOT "/dev/virtio-ports/%s", dev.ports[i].name);
                snprintf(target, sizeof(target), "../%s", dev.ports[i].dev);
                if (symlink(target, link) < 0)
                        die(errno, "symlink %s", link);
                printf("kvm-init: /dev/virtio-ports/%s -> %s\n", dev.ports[i].name, target);
        }

        /* systemd finds them mounted and leaves them be. */
        do_mount("/proc", NEWROOT "/proc", NULL, MS_MOVE, NULL);
        do_mount("/sys", NEWROOT "/sys", NULL, MS_MOVE, NULL);

        /* switch_root's way: the initramfs (rootfs) cannot be unmounted or
         * pivoted away from, so the new root is moved over it. What stays
         * below (kvm-init, the modules, /run/rw's mount points) is a few
         * MiB, left as it is. */
        if (chdir(NEWROOT) < 0)
                die(errno, "chdir " NEWROOT);
        if (mount(".", "/", NULL, MS_MOVE, NULL) < 0)
                die(errno, "move " NEWROOT " to /");
        if (chroot(".") < 0 || chdir("/") < 0)
                die(errno, "chroot " NEWROOT);
        fflush(stdout);
        char *const argv[] = { "/usr/lib/systemd/systemd", NULL };
        execv(argv[0], argv);
        die(errno, "exec %s", argv[0]);
}
