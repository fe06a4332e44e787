/* SPDX-License-Identifier: Apache-2.0 */
#include <arpa/inet.h>
#include <fcntl.h>
#include <linux/if_tun.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include "basic/fs.h"
#include "basic/json-util.h"
#include "kvm/kvm-net.h"
#include "net/netns.h"
#include "net/pod-network.h"

#define TC "/usr/sbin/tc"
#define POD_IF "eth0"
#define TAP_IF "tap0"

void kvm_nic_done(KvmNic *n) {
        closep(&n->tap_fd);
}

/* tc with args, in this process's network namespace, waited for. */
static int run_tc(char *const *args, Error **err) {
        char *argv[80] = { (char *) TC };
        size_t n = 1;
        for (; args[n - 1] && n < ELEMENTSOF(argv) - 1; n++)
                argv[n] = args[n - 1];
        argv[n] = NULL;
        pid_t pid = fork();
        if (pid < 0)
                return error_sys(err, -errno, TC);
        if (pid == 0) {
                char *env[] = { (char *) "PATH=/usr/sbin:/usr/bin:/sbin:/bin", NULL };
                int null = open("/dev/null", O_RDWR | O_CLOEXEC);
                if (null < 0 || dup2(null, STDIN_FILENO) < 0 || dup2(STDERR_FILENO, STDOUT_FILENO) < 0)
                        _exit(127);
                execve(TC, argv, env);
                _exit(127);
        }
        int st;
        while (waitpid(pid, &st, 0) < 0)
                if (errno != EINTR)
                        return error_sys(err, -errno, TC);
        if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
                return error_set(err, -EIO, TC " %s %s dev %s: failed (%d)", args[0], args[1], args[3],
                                 WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
        return 0;
}

/* tc's ingress on both: whatever comes in on eth0 goes out of the tap,
 * and from the tap, only what a container on eth0 could send goes out of
 * eth0: IPv4 from the pod's own address and MAC, ARP of that address and
 * MAC. The rest (a forged source, which would pass the host's rules made
 * for the pod's address: NAT, firewall, the connection-tracking limit;
 * IPv6, Router Advertisements, DHCP) stays in the namespace, which drops
 * it (make_in_netns). u32 keys are 16 bits at most where the offsets are
 * not 4-aligned: the MACs at -8 (the Ethernet source) and 8 (ARP's
 * sender), ARP's sender address at 14. */
static int tie_tap(const KvmNic *n, Error **err) {
        unsigned m[6];
        struct in_addr a;
        char host[64];
        snprintf(host, sizeof(host), "%.*s", (int) strcspn(n->address, "/"), n->address);
        if (sscanf(n->mac, "%x:%x:%x:%x:%x:%x", &m[0], &m[1], &m[2], &m[3], &m[4], &m[5]) != 6 ||
            inet_pton(AF_INET, host, &a) != 1)
                return error_set(err, -EINVAL, "%s, %s: not a MAC and an IPv4 address", n->mac, n->address);
        uint32_t ip = ntohl(a.s_addr);
        char w[8][16];
        snprintf(w[0], sizeof(w[0]), "0x%02x%02x", m[0], m[1]);
        snprintf(w[1], sizeof(w[1]), "0x%02x%02x", m[2], m[3]);
        snprintf(w[2], sizeof(w[2]), "0x%02x%02x", m[4], m[5]);
        snprintf(w[3], sizeof(w[3]), "0x%04x", ip >> 16);
        snprintf(w[4], sizeof(w[4]), "0x%04x", ip & 0xffff);
        char src[80];
        snprintf(src, sizeof(src), "%s/32", host);
#define U16(v, at) "match", "u16", v, "0xffff", "at", at
        char *in[] = { "qdisc", "add", "dev", POD_IF, "ingress", NULL };
        char *to_tap[] = { "filter", "add", "dev", POD_IF, "parent", "ffff:", "protocol", "all", "u32", "match", "u8", "0",
                           "0", "action", "mirred", "egress", "redirect", "dev", TAP_IF, NULL };
        char *out[] = { "qdisc", "add", "dev", TAP_IF, "ingress", NULL };
        char *ipv4[] = { "filter", "add", "dev", TAP_IF, "parent", "ffff:", "prio", "1", "protocol", "ip", "u32",
                         "match", "ip", "src", src, U16(w[0], "-8"), U16(w[1], "-6"), U16(w[2], "-4"),
                         "action", "mirred", "egress", "redirect", "dev", POD_IF, NULL };
        char *arp[] = { "filter", "add", "dev", TAP_IF, "parent", "ffff:", "prio", "2", "protocol", "arp", "u32",
                        U16(w[0], "-8"), U16(w[1], "-6"), U16(w[2], "-4"), U16(w[0], "8"), U16(w[1], "10"),
                        U16(w[2], "12"), U16(w[3], "14"), U16(w[4], "16"),
                        "action", "mirred", "egress", "redirect", "dev", POD_IF, NULL };
#undef U16
        char *const *steps[] = { in, to_tap, out, ipv4, arp };
        for (size_t i = 0; i < ELEMENTSOF(steps); i++) {
                int r = run_tc(steps[i], err);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* In the pod's namespace: the tap, up, eth0's MAC, and tc's redirects. */
static int make_in_netns(void *userdata, Error **err) {
        KvmNic *n = userdata;
        int fd = open("/dev/net/tun", O_RDWR | O_CLOEXEC);
        if (fd < 0)
                return error_sys(err, -errno, "/dev/net/tun");
        n->tap_fd = fd;
        struct ifreq ifr = { .ifr_flags = IFF_TAP | IFF_NO_PI };
        snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), TAP_IF);
        if (ioctl(fd, TUNSETIFF, &ifr) < 0)
                return error_sys(err, -errno, "cannot make the tap " TAP_IF);
        _cleanup_close_ int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        if (s < 0)
                return error_sys(err, -errno, "socket");
        struct ifreq q = {};
        snprintf(q.ifr_name, sizeof(q.ifr_name), POD_IF);
        if (ioctl(s, SIOCGIFHWADDR, &q) < 0)
                return error_sys(err, -errno, POD_IF);
        const unsigned char *m = (const unsigned char *) q.ifr_hwaddr.sa_data;
        snprintf(n->mac, sizeof(n->mac), "%02x:%02x:%02x:%02x:%02x:%02x", m[0], m[1], m[2], m[3], m[4], m[5]);
        /* What the namespace's own stack would do with what the guest sends
         * and tc does not take (below): nothing. No forwarding from the
         * tap, no reverse path for a forged source, no IPv6 on it (a
         * Router Advertisement to the namespace). */
        static const char *const sysctls[][2] = {
                { "ipv4/conf/" TAP_IF "/forwarding", "0\n" },
                { "ipv4/conf/" TAP_IF "/rp_filter", "1\n" },
                { "ipv6/conf/" TAP_IF "/disable_ipv6", "1\n" },
        };
        for (size_t i = 0; i < ELEMENTSOF(sysctls); i++) {
                int r = netns_sysctl_set(sysctls[i][0], sysctls[i][1], err);
                /* A kernel without IPv6 has no such file: nothing to stop. */
                if (r == -ENOENT && startswith(sysctls[i][0], "ipv6/")) {
                        error_free(*err);
                        *err = NULL;
                        continue;
                }
                if (r < 0)
                        return r;
        }
        struct ifreq up = {};
        snprintf(up.ifr_name, sizeof(up.ifr_name), TAP_IF);
        if (ioctl(s, SIOCGIFFLAGS, &up) < 0)
                return error_sys(err, -errno, TAP_IF);
        up.ifr_flags |= IFF_UP;
        if (ioctl(s, SIOCSIFFLAGS, &up) < 0)
                return error_sys(err, -errno, "cannot bring " TAP_IF " up");
        return tie_tap(n, err);
}

/* The pod's first address and gateway on POD_IF, from its network record. */
static int pod_address(int pod_fd, KvmNic *n, Error **err) {
        _cleanup_json_ struct json_object *nets = NULL;
        int r = pod_network_describe(pod_fd, &nets, err);
        if (r < 0)
                return r;
        struct json_object *net = json_object_array_length(nets) > 0 ? json_object_array_get_idx(nets, 0) : NULL;
        struct json_object *addresses = net ? json_object_object_get(net, "addresses") : NULL;
        const char *address = NULL, *gateway = json_object_get_string(net ? json_object_object_get(net, "gateway") : NULL);
        for (size_t i = 0; json_object_is_type(addresses, json_type_array) && i < json_object_array_length(addresses); i++) {
                const char *a = json_object_get_string(json_object_array_get_idx(addresses, i));
                if (a && strchr(a, '.') && !strchr(a, ':')) {
                        address = a;
                        break;
                }
        }
        struct in_addr probe;
        char host[64];
        if (!address || !gateway || strlen(address) >= sizeof(n->address) || strlen(gateway) >= sizeof(n->gateway))
                return error_set(err, -EOPNOTSUPP, "the kvm flavor needs an IPv4 address and a gateway on %s", POD_IF);
        size_t h = strcspn(address, "/");
        const char *prefix = address[h] ? address + h + 1 : "";
        snprintf(host, sizeof(host), "%.*s", (int) h, address);
        /* It goes on the guest's kernel command line: nothing but digits. */
        if (inet_pton(AF_INET, host, &probe) != 1 || inet_pton(AF_INET, gateway, &probe) != 1 || !*prefix ||
            strlen(prefix) > 2 || strspn(prefix, "0123456789") != strlen(prefix) || atoi(prefix) > 32)
                return error_set(err, -EBADMSG, "the pod's network record: %s, %s: not IPv4 addresses", address, gateway);
        snprintf(n->address, sizeof(n->address), "%s", address);
        snprintf(n->gateway, sizeof(n->gateway), "%s", gateway);
        return 0;
}

int kvm_nic_make(int pod_fd, const char *netns, KvmNic *ret, Error **err) {
        *ret = (KvmNic) { .tap_fd = -1 };
        int r = pod_address(pod_fd, ret, err);
        if (r < 0)
                return r;
        /* Into the pod's namespace and back: this process is the
         * supervisor, single-threaded; what runs there meanwhile is tc. */
        r = netns_run(netns, make_in_netns, ret, err);
        if (r < 0)
                kvm_nic_done(ret);
        return r;
}
