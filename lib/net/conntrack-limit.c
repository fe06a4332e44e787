/* SPDX-License-Identifier: Apache-2.0 */
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "basic/sha256.h"
#include "basic/strv.h"
#include "basic/time-util.h"
#include "net/conntrack-limit.h"

/* iptables waits for the xtables lock this long; we for iptables a little
 * more, then kill it. */
#define IPTABLES_WAIT "10"
#define IPTABLES_TIMEOUT_USEC (20 * USEC_PER_SEC)
#define IPTABLES_OUTPUT_MAX (4U << 20)

void conntrack_chain_name(const char *container_id, const char *network, const char *ifname, char ret[static CONNTRACK_CHAIN_MAX]) {
        Sha256 c;
        uint8_t d[SHA256_DIGEST_SIZE];
        char hex[SHA256_HEX_SIZE];
        sha256_init(&c);
        sha256_update(&c, container_id, strlen(container_id) + 1);
        sha256_update(&c, network, strlen(network) + 1);
        sha256_update(&c, ifname, strlen(ifname) + 1);
        sha256_final(&c, d);
        sha256_to_hex(d, hex);
        snprintf(ret, CONNTRACK_CHAIN_MAX, "SDPOD-CT-%.16s", hex);
}

/* Runs tool (iptables, ip6tables) -w -t mangle ARGS...; its standard output
 * in *ret_output when asked for. Returns its exit status (>= 0), or a
 * negative errno when it could not be run or did not end in time. */
static int run(const char *tool, char **ret_output, const char *const *args) {
        const char *argv[24] = { tool, "-w", IPTABLES_WAIT, "-t", "mangle" };
        size_t n = 5;
        for (size_t i = 0; args[i] && n < ELEMENTSOF(argv) - 1; i++)
                argv[n++] = args[i];
        argv[n] = NULL;
        int out[2];
        if (pipe2(out, O_CLOEXEC) < 0)
                return -errno;
        pid_t pid = fork();
        if (pid < 0) {
                int r = -errno;
                close(out[0]), close(out[1]);
                return r;
        }
        if (pid == 0) {
                int null = open("/dev/null", O_RDWR | O_CLOEXEC);
                /* Its messages are not our result: our stdout is the CNI
                 * answer. */
                if (null < 0 || dup2(null, 0) < 0 || dup2(out[1], 1) < 0 || dup2(null, 2) < 0)
                        _exit(127);
                execvp(tool, (char *const *) argv);
                _exit(127);
        }
        close(out[1]);
        _cleanup_close_ int rd = out[0];
        _cleanup_close_ int pidfd = (int) syscall(SYS_pidfd_open, pid, 0);
        _cleanup_free_ char *buf = malloc(IPTABLES_OUTPUT_MAX + 1);
        size_t have = 0;
        int r = buf ? 0 : -ENOMEM;
        uint64_t deadline = monotonic_usec() + IPTABLES_TIMEOUT_USEC;
        while (r == 0) {
                uint64_t now = monotonic_usec();
                struct pollfd p = { rd, POLLIN, 0 };
                int k = now >= deadline ? 0 : poll(&p, 1, (int) ((deadline - now) / 1000) + 1);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k <= 0) {
                        r = -ETIMEDOUT;
                        break;
                }
                ssize_t got = read(rd, buf + have, IPTABLES_OUTPUT_MAX - have);
                if (got < 0 && errno == EINTR)
                        continue;
                if (got <= 0)
                        break;
                have += (size_t) got;
                if (have == IPTABLES_OUTPUT_MAX)
                        r = -EFBIG;
        }
        if (r < 0)
                (void) kill(pid, SIGKILL);
        int status;
        while (waitpid(pid, &status, 0) < 0)
                if (errno != EINTR)
                        return -errno;
        (void) pidfd;
        if (r < 0)
                return r;
        buf[have] = 0;
        if (ret_output)
                *ret_output = TAKE_PTR(buf);
        if (!WIFEXITED(status))
                return -EIO;
        return WEXITSTATUS(status) == 127 ? -ENOENT : WEXITSTATUS(status);
}

static const char *tool_of(const char *address) {
        return strchr(address, ':') ? "ip6tables" : "iptables";
}

static int jump_args(const char *chain, const char *address, const char *op, char source[64], const char *args[8]) {
        snprintf(source, 64, "%s/%s", address, strchr(address, ':') ? "128" : "32");
        const char *a[] = { op, "PREROUTING", "-s", source, "-j", chain, NULL };
        memcpy(args, a, sizeof(a));
        return 0;
}

int conntrack_limit_add(const char *chain, unsigned limit, char *const *addresses, Error **err) {
        char above[16], rate[32], burst[16], name[16];
        snprintf(above, sizeof(above), "%u", limit);
        snprintf(rate, sizeof(rate), "%u/sec", limit / CONNTRACK_RATE_DIVISOR ?: 1);
        snprintf(burst, sizeof(burst), "%u", limit);
        /* hashlimit's table: a name of at most 15. */
        snprintf(name, sizeof(name), "sdct%.11s", chain + strlen("SDPOD-CT-"));
        for (char *const *a = addresses; a && *a; a++) {
                const char *tool = tool_of(*a), *mask = strchr(*a, ':') ? "128" : "32";
                /* The chain anew: made, or emptied when there. */
                int r = run(tool, NULL, (const char *[]) { "-N", chain, NULL });
                if (r < 0 || (r = run(tool, NULL, (const char *[]) { "-F", chain, NULL })) != 0 ||
                    (r = run(tool, NULL, (const char *[]) { "-A", chain, "-m", "conntrack", "--ctstate", "NEW", "-m",
                                                            "connlimit", "--connlimit-above", above, "--connlimit-mask",
                                                            mask, "-j", "DROP", NULL })) != 0 ||
                    (r = run(tool, NULL, (const char *[]) { "-A", chain, "-m", "conntrack", "--ctstate", "NEW", "-m",
                                                            "hashlimit", "--hashlimit-above", rate, "--hashlimit-burst",
                                                            burst, "--hashlimit-mode", "srcip", "--hashlimit-name",
                                                            name, "-j", "DROP", NULL })) != 0)
                        return error_set(err, r < 0 ? r : -EIO, "%s: cannot make the chain %s (%s)", tool, chain,
                                         r < 0 ? strerror(-r) : "it failed");
                char source[64];
                const char *args[8];
                jump_args(chain, *a, "-C", source, args);
                if (run(tool, NULL, args) == 0)
                        continue;
                /* First: an ACCEPT of another's before it would pass the
                 * pod's packets on unbounded. */
                const char *insert[] = { "-I", "PREROUTING", "1", "-s", source, "-j", chain, NULL };
                if ((r = run(tool, NULL, insert)) != 0)
                        return error_set(err, r < 0 ? r : -EIO, "%s: cannot jump to %s for %s", tool, chain, *a);
        }
        return 0;
}

/* The jumps to chain in PREROUTING, deleted by their own text: a rule is
 * "-A PREROUTING -s ADDRESS/LEN -j CHAIN", which we made, without spaces
 * within its words. */
static int del_jumps(const char *tool, const char *chain) {
        _cleanup_free_ char *rules = NULL;
        int r = run(tool, &rules, (const char *[]) { "-S", "PREROUTING", NULL });
        /* No such tool, or no such table (ip6tables on a host without
         * IPv6 tables): nothing of ours can be there. A DEL that failed
         * for that would keep every pod's gc failing. */
        if (r != 0)
                return r < 0 && r != -ENOENT ? r : 0;
        char tail[CONNTRACK_CHAIN_MAX + 8];
        snprintf(tail, sizeof(tail), " -j %s", chain);
        for (char *line = rules, *next; line && *line; line = next) {
                next = strchr(line, '\n');
                if (next)
                        *next++ = 0;
                char source[64];
                if (!endswith(line, tail) || sscanf(line, "-A PREROUTING -s %63s -j ", source) != 1)
                        continue;
                const char *args[] = { "-D", "PREROUTING", "-s", source, "-j", chain, NULL };
                if ((r = run(tool, NULL, args)) != 0)
                        return r < 0 ? r : -EIO;
        }
        return 0;
}

int conntrack_limit_del(const char *chain, Error **err) {
        static const char *const tools[] = { "iptables", "ip6tables" };
        for (size_t i = 0; i < ELEMENTSOF(tools); i++) {
                int r = del_jumps(tools[i], chain);
                if (r < 0)
                        return error_set(err, r, "%s: cannot remove the jumps to %s", tools[i], chain);
                /* Gone already, or never made: fine. */
                (void) run(tools[i], NULL, (const char *[]) { "-F", chain, NULL });
                (void) run(tools[i], NULL, (const char *[]) { "-X", chain, NULL });
        }
        return 0;
}

int conntrack_limit_check(const char *chain, char *const *addresses, Error **err) {
        for (char *const *a = addresses; a && *a; a++) {
                const char *tool = tool_of(*a);
                char source[64];
                const char *args[8];
                jump_args(chain, *a, "-C", source, args);
                if (run(tool, NULL, (const char *[]) { "-S", chain, NULL }) != 0 || run(tool, NULL, args) != 0)
                        return error_set(err, -ENOENT, "%s: no chain %s or no jump to it for %s", tool, chain, *a);
        }
        return 0;
}
