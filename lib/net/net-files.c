/* SPDX-License-Identifier: Apache-2.0 */
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>

#include "basic/fs.h"
#include "basic/json-util.h"
#include "basic/strv.h"
#include "net/net-files.h"
#include "net/pod-network.h"

#define HOST_RESOLV_CONF "/etc/resolv.conf"
#define RESOLV_CONF_MAX (64U << 10)

static bool is_loopback(const char *address) {
        return startswith(address, "127.") || streq(address, "::1");
}

/* The host's resolv.conf split into what a pod's is made of. */
typedef struct Resolv {
        char **nameservers, **search, **options;
} Resolv;

static void resolv_done(Resolv *r) {
        strv_free(r->nameservers);
        strv_free(r->search);
        strv_free(r->options);
}

static int push_words(char ***l, char *rest) {
        char *save = NULL;
        for (char *w = strtok_r(rest, " \t", &save); w; w = strtok_r(NULL, " \t", &save))
                if (strv_push(l, w) < 0)
                        return -ENOMEM;
        return 0;
}

static int host_resolv(bool drop_loopback, Resolv *ret) {
        _cleanup_free_ char *data = NULL;
        size_t size;
        Error *ignored = NULL;
        if (read_file(HOST_RESOLV_CONF, RESOLV_CONF_MAX, &data, &size, &ignored) < 0) {
                error_free(ignored);
                return 0;       /* no file: nothing to inherit */
        }
        char *save = NULL;
        for (char *line = strtok_r(data, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
                char key[16];
                int n = 0;
                if (sscanf(line, " %15s %n", key, &n) != 1)
                        continue;
                char *rest = line + n;
                rest[strcspn(rest, "#;")] = 0;
                if (streq(key, "nameserver")) {
                        rest[strcspn(rest, " \t")] = 0;
                        if (*rest && !(drop_loopback && is_loopback(rest)) && strv_push(&ret->nameservers, rest) < 0)
                                return -ENOMEM;
                } else if (streq(key, "search") || streq(key, "domain")) {
                        strv_free(ret->search);
                        ret->search = NULL;
                        if (push_words(&ret->search, rest) < 0)
                                return -ENOMEM;
                } else if (streq(key, "options") && push_words(&ret->options, rest) < 0)
                        return -ENOMEM;
        }
        return 0;
}

static int json_words(struct json_object *dns, const char *key, char ***ret) {
        struct json_object *a = dns ? json_object_object_get(dns, key) : NULL;
        for (size_t i = 0; json_object_is_type(a, json_type_array) && i < json_object_array_length(a); i++) {
                const char *s = json_object_get_string(json_object_array_get_idx(a, i));
                /* A plugin's word, written into a file apps parse: no
                 * line breaks or spaces may come with it. */
                if (s && *s && !s[strcspn(s, " \t\r\n")] && strv_push(ret, s) < 0)
                        return -ENOMEM;
        }
        return 0;
}

static void write_line(FILE *f, const char *key, char *const *l, bool one_per_line) {
        if (!l || !*l)
                return;
        if (one_per_line) {
                for (char *const *p = l; *p; p++)
                        fprintf(f, "%s %s\n", key, *p);
                return;
        }
        fputs(key, f);
        for (char *const *p = l; *p; p++)
                fprintf(f, " %s", *p);
        fputc('\n', f);
}

static int write_resolv_conf(int pod_fd, const PodNet *n, Error **err) {
        _cleanup_free_ char *text = NULL;
        size_t size = 0;
        if (n->dns_host) {
                int r = read_file(HOST_RESOLV_CONF, RESOLV_CONF_MAX, &text, &size, err);
                if (r == -ENOENT) {
                        error_free(TAKE_PTR(*err));
                        return write_file_atomic_at(pod_fd, POD_RESOLV_CONF, "", 0, 0644, err);
                }
                return r < 0 ? r : write_file_atomic_at(pod_fd, POD_RESOLV_CONF, text, size, 0644, err);
        }
        bool private_ns = n->mode != POD_NET_HOST;
        _cleanup_(resolv_done) Resolv host = {}, cni = {};
        _cleanup_json_ struct json_object *dns = pod_network_dns(pod_fd);
        if (host_resolv(private_ns, &host) < 0 || json_words(dns, "nameservers", &cni.nameservers) < 0 ||
            json_words(dns, "search", &cni.search) < 0 || json_words(dns, "options", &cni.options) < 0)
                return error_sys(err, -ENOMEM, "%s", POD_RESOLV_CONF);
        FILE *f = open_memstream(&text, &size);
        if (!f)
                return error_sys(err, -ENOMEM, "%s", POD_RESOLV_CONF);
        fputs("# sdpod: this pod's resolv.conf (sdpod(1) NETWORKING)\n", f);
        write_line(f, "nameserver", n->dns ?: cni.nameservers ?: host.nameservers, true);
        write_line(f, "search", n->dns_search ?: cni.search ?: host.search, false);
        write_line(f, "options", n->dns_options ?: cni.options ?: host.options, false);
        if (fclose(f) != 0)
                return error_sys(err, -ENOMEM, "%s", POD_RESOLV_CONF);
        return write_file_atomic_at(pod_fd, POD_RESOLV_CONF, text, size, 0644, err);
}

static int write_hosts(int pod_fd, const PodNet *n, const char *hostname, const char *address, Error **err) {
        _cleanup_free_ char *text = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&text, &size);
        if (!f)
                return error_sys(err, -ENOMEM, "%s", POD_HOSTS);
        fputs("127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n", f);
        fprintf(f, "%s\t%s\n", address ?: "127.0.1.1", hostname);
        for (char **e = n->hosts_entries; e && *e; e++) {
                const char *eq = strchr(*e, '=');
                fprintf(f, "%.*s\t%s\n", (int) (eq - *e), *e, eq + 1);
        }
        if (fclose(f) != 0)
                return error_sys(err, -ENOMEM, "%s", POD_HOSTS);
        return write_file_atomic_at(pod_fd, POD_HOSTS, text, size, 0644, err);
}

int pod_net_files_write(int pod_fd, const PodNet *n, const char *hostname, const char *address, Error **err) {
        char line[256];
        int len = snprintf(line, sizeof(line), "%s\n", hostname);
        if (mkdirat(pod_fd, POD_NET_DIR, 0755) < 0 && errno != EEXIST)
                return error_sys(err, -errno, "cannot create %s/", POD_NET_DIR);
        int r;
        if ((r = write_resolv_conf(pod_fd, n, err)) < 0 || (r = write_hosts(pod_fd, n, hostname, address, err)) < 0 ||
            (r = write_file_atomic_at(pod_fd, POD_HOSTNAME, line, (size_t) len, 0644, err)) < 0 ||
            (r = write_file_atomic_at(pod_fd, POD_NET_READY, "", 0, 0644, err)) < 0)
                return error_prefix(err, "name files");
        return 0;
}
