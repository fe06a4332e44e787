/* SPDX-License-Identifier: Apache-2.0 */
#include <arpa/inet.h>
#include <ctype.h>
#include <stddef.h>

#include "basic/strv.h"
#include "manifest/pod-net.h"

void pod_net_done(PodNet *n) {
        for (size_t i = 0; i < n->n_networks; i++) {
                free(n->networks[i].name);
                free(n->networks[i].args);
        }
        free(n->networks);
        free(n->ns_path);
        strv_free(n->dns);
        strv_free(n->dns_search);
        strv_free(n->dns_options);
        free(n->hostname);
        strv_free(n->hosts_entries);
        *n = (PodNet) {};
}

void pod_net_args_done(PodNetArgs *a) {
        free(a->net);
        strv_free(a->ports);
        strv_free(a->dns);
        strv_free(a->dns_search);
        strv_free(a->dns_options);
        free(a->hostname);
        strv_free(a->hosts_entries);
        free(a->conntrack_limit);
        *a = (PodNetArgs) {};
}

static bool is_address(const char *s) {
        unsigned char buf[16];
        return inet_pton(AF_INET, s, buf) == 1 || inet_pton(AF_INET6, s, buf) == 1;
}

bool hostname_is_valid(const char *s) {
        size_t label = 0, n = strlen(s);
        if (n == 0 || n > 253 || s[0] == '.' || s[n - 1] == '.')
                return false;
        for (const char *p = s; *p; p++) {
                if (*p == '.') {
                        if (label == 0 || p[-1] == '-')
                                return false;
                        label = 0;
                        continue;
                }
                if (!isascii(*p) || !(isalnum(*p) || *p == '-') || (label == 0 && *p == '-') || ++label > 63)
                        return false;
        }
        return s[n - 1] != '-';
}

/* A CNI network name, which also names its file in /etc/sdpod/net.d:
 * letters, digits, '-', '_' and '.', not starting with '.' or '-'. */
static bool network_name_is_valid(const char *s) {
        size_t n = strlen(s);
        if (n == 0 || n > 64 || s[0] == '.' || s[0] == '-')
                return false;
        for (; *s; s++)
                if (!isascii(*s) || !(isalnum(*s) || strchr("-_.", *s)))
                        return false;
        return true;
}

/* CNI_ARGS: KEY=VALUE pairs joined by ';'. Values must not hold ',' (which
 * separates networks), whitespace or control characters. */
static bool cni_args_are_valid(const char *s) {
        if (!*s)
                return false;
        const char *p = s;
        while (*p) {
                const char *key = p;
                while (*p && (isalnum(*p) || *p == '_'))
                        p++;
                if (p == key || *p != '=')
                        return false;
                for (p++; *p && *p != ';'; p++)
                        if (!isgraph(*p) || *p == ',')
                                return false;
                if (*p == ';' && !*++p)
                        return false;
        }
        return true;
}

static int add_network(PodNet *n, const char *item, Error **err) {
        const char *colon = strchr(item, ':');
        _cleanup_free_ char *name = colon ? strndup(item, (size_t) (colon - item)) : strdup(item);
        if (!name)
                return error_sys(err, -ENOMEM, "--net");
        if (!network_name_is_valid(name))
                return error_set(err, -EINVAL, "network \"%s\": a network name is 1 to 64 letters, digits, '-', '_' "
                                 "and '.', not starting with '-' or '.'", name);
        if (streq(name, "none") || streq(name, "host") || streq(name, "ns"))
                return error_set(err, -EINVAL, "network \"%s\" cannot be combined with other networks", name);
        if (colon && !cni_args_are_valid(colon + 1))
                return error_set(err, -EINVAL, "network %s: arguments \"%s\": expected KEY=VALUE[;KEY=VALUE...]", name,
                                 colon + 1);
        for (size_t i = 0; i < n->n_networks; i++)
                if (streq(n->networks[i].name, name))
                        return error_set(err, -EINVAL, "network %s is named twice", name);
        PodNetwork *l = realloc(n->networks, (n->n_networks + 1) * sizeof(PodNetwork));
        if (!l)
                return error_sys(err, -ENOMEM, "--net");
        n->networks = l;
        l[n->n_networks] = (PodNetwork) { .name = TAKE_PTR(name), .args = colon ? strdup(colon + 1) : NULL };
        n->n_networks++;
        return colon && !l[n->n_networks - 1].args ? error_sys(err, -ENOMEM, "--net") : 0;
}

int pod_net_parse(const char *s, PodNet *ret, Error **err) {
        PodNet n = {};
        int r = 0;
        if (streq(s, "none") || streq(s, "host"))
                n.mode = streq(s, "none") ? POD_NET_NONE : POD_NET_HOST;
        else if (startswith(s, "ns:")) {
                n.mode = POD_NET_NS;
                if (s[3] != '/')
                        r = error_set(err, -EINVAL, "ns:%s: the namespace's path must be absolute", s + 3);
                else if (!(n.ns_path = strdup(s + 3)))
                        r = error_sys(err, -ENOMEM, "--net");
        } else {
                n.mode = POD_NET_CNI;
                _cleanup_free_ char *copy = strdup(s);
                if (!copy)
                        return error_sys(err, -ENOMEM, "--net");
                char *save = NULL;
                for (char *item = strtok_r(copy, ",", &save); r >= 0 && item; item = strtok_r(NULL, ",", &save))
                        r = add_network(&n, item, err);
                if (r >= 0 && n.n_networks == 0)
                        r = error_set(err, -EINVAL, "no network named");
        }
        if (r < 0) {
                pod_net_done(&n);
                return r;
        }
        *ret = n;
        return 0;
}

int pod_port_parse(const char *s, char *buf, PodPort *ret, Error **err) {
        strcpy(buf, s);
        PodPort p = { .protocol = "tcp" };
        char *slash = strrchr(buf, '/');
        if (slash) {
                *slash = 0;
                if (!streq(slash + 1, "tcp") && !streq(slash + 1, "udp"))
                        return error_set(err, -EINVAL, "--port=%s: protocol \"%s\" is not tcp or udp", s, slash + 1);
                p.protocol = streq(slash + 1, "tcp") ? "tcp" : "udp";
        }
        /* [HOSTIP:]HOSTPORT:PODPORT; an IPv6 address in brackets. */
        char *pod_port = strrchr(buf, ':');
        if (!pod_port)
                return error_set(err, -EINVAL, "--port=%s: expected [HOSTIP:]HOSTPORT:PODPORT[/tcp|/udp]", s);
        *pod_port++ = 0;
        char *host_port = strrchr(buf, ':');
        if (host_port) {
                *host_port++ = 0;
                char *ip = buf;
                size_t n = strlen(ip);
                if (n >= 2 && ip[0] == '[' && ip[n - 1] == ']') {
                        ip[n - 1] = 0;
                        ip++;
                }
                if (!is_address(ip))
                        return error_set(err, -EINVAL, "--port=%s: \"%s\" is not a numeric IPv4 or IPv6 address", s, ip);
                p.host_ip = ip;
        } else
                host_port = buf;
        const char *names[] = { host_port, pod_port };
        unsigned long values[2];
        for (size_t i = 0; i < 2; i++) {
                char *end;
                errno = 0;
                values[i] = strtoul(names[i], &end, 10);
                if (!isdigit(names[i][0]) || *end || errno || values[i] < 1 || values[i] > 65535)
                        return error_set(err, -EINVAL, "--port=%s: \"%s\" is not a port (1 to 65535)", s, names[i]);
        }
        p.host_port = (uint16_t) values[0];
        p.pod_port = (uint16_t) values[1];
        *ret = p;
        return 0;
}

/* A space-separated list of an annotation, each item checked. */
static int split_checked(const char *value, bool (*valid)(const char *), const char *what, char ***ret, Error **err) {
        _cleanup_free_ char *copy = strdup(value);
        _cleanup_(strv_freep) char **l = NULL;
        if (!copy)
                return error_sys(err, -ENOMEM, "%s", what);
        char *save = NULL;
        for (char *item = strtok_r(copy, " ", &save); item; item = strtok_r(NULL, " ", &save)) {
                if (!valid(item))
                        return error_set(err, -EBADMSG, "%s: \"%s\" is not valid", what, item);
                if (strv_push(&l, item) < 0)
                        return error_sys(err, -ENOMEM, "%s", what);
        }
        *ret = TAKE_PTR(l);
        return 0;
}

static bool dns_option_is_valid(const char *s) {
        if (!*s || strlen(s) > 64)
                return false;
        for (; *s; s++)
                if (!isascii(*s) || !(isalnum(*s) || strchr("-_:.", *s)))
                        return false;
        return true;
}

static bool hosts_entry_is_valid(const char *s) {
        const char *eq = strchr(s, '=');
        if (!eq || eq == s || eq - s >= 64)
                return false;
        char ip[64];
        snprintf(ip, sizeof(ip), "%.*s", (int) (eq - s), s);
        return is_address(ip) && hostname_is_valid(eq + 1);
}

static bool dns_server_is_valid(const char *s) {
        return is_address(s);
}

/* The options that give lists, each stored in its field of PodNetArgs and
 * written to its annotation. */
static const struct {
        const char *option;
        const char *annotation;
        size_t field;                   /* offsetof(PodNetArgs, ...): a char ** */
        bool (*valid)(const char *);
        const char *expected;
} list_options[] = {
        { "dns", POD_ANNOTATION_DNS, offsetof(PodNetArgs, dns), dns_server_is_valid,
          "a numeric IPv4 or IPv6 address, or host" },
        { "dns-search", POD_ANNOTATION_DNS_SEARCH, offsetof(PodNetArgs, dns_search), hostname_is_valid, "a domain name" },
        { "dns-option", POD_ANNOTATION_DNS_OPTIONS, offsetof(PodNetArgs, dns_options), dns_option_is_valid,
          "a resolv.conf option (as ndots:2)" },
        { "hosts-entry", POD_ANNOTATION_HOSTS_ENTRIES, offsetof(PodNetArgs, hosts_entries), hosts_entry_is_valid,
          "IP=NAME" },
};

static int list_option_index(const char *option) {
        for (size_t i = 0; i < ELEMENTSOF(list_options); i++)
                if (streq(option, list_options[i].option))
                        return (int) i;
        return -1;
}

static char ***list_field(PodNetArgs *a, int i) {
        return (char ***) ((char *) a + list_options[i].field);
}

bool pod_net_option_is(const char *option) {
        return streq(option, "net") || streq(option, "hostname") || streq(option, "port") ||
                streq(option, "conntrack-limit") || list_option_index(option) >= 0;
}

/* A conntrack limit: decimal digits only, 0 to the maximum. */
static int conntrack_limit_parse(const char *s, unsigned *ret) {
        if (!*s || strlen(s) > 9 || strspn(s, "0123456789") != strlen(s))
                return -EINVAL;
        unsigned long n = strtoul(s, NULL, 10);
        if (n > POD_NET_CONNTRACK_LIMIT_MAX)
                return -ERANGE;
        *ret = (unsigned) n;
        return 0;
}

int pod_net_args_add(PodNetArgs *a, const char *option, const char *value, Error **err) {
        if (streq(option, "conntrack-limit")) {
                unsigned n;
                if (a->conntrack_limit)
                        return error_set(err, -EINVAL, "--%s given twice", option);
                if (conntrack_limit_parse(value, &n) < 0)
                        return error_set(err, -EINVAL, "--conntrack-limit=%s: expected a number from 0 (no bound) to %u",
                                         value, POD_NET_CONNTRACK_LIMIT_MAX);
                return (a->conntrack_limit = strdup(value)) ? 0 : error_sys(err, -ENOMEM, "--%s", option);
        }
        if (streq(option, "net") || streq(option, "hostname")) {
                char **field = streq(option, "net") ? &a->net : &a->hostname;
                if (*field)
                        return error_set(err, -EINVAL, "--%s given twice", option);
                if (streq(option, "net")) {
                        PodNet n;
                        int r = pod_net_parse(value, &n, err);
                        if (r < 0)
                                return error_prefix(err, "--net=%s", value);
                        pod_net_done(&n);
                } else if (!hostname_is_valid(value))
                        return error_set(err, -EINVAL, "--hostname=%s: expected a host name (letters, digits and '-', "
                                         "in labels of at most 63 joined by '.')", value);
                return (*field = strdup(value)) ? 0 : error_sys(err, -ENOMEM, "--%s", option);
        }
        char ***list = &a->ports;
        if (streq(option, "port")) {
                _cleanup_free_ char *buf = malloc(strlen(value) + 1);
                PodPort p;
                if (!buf)
                        return error_sys(err, -ENOMEM, "--port");
                if (pod_port_parse(value, buf, &p, err) < 0)
                        return -EINVAL;
        } else {
                int i = list_option_index(option);
                if (i < 0)
                        return error_set(err, -EINVAL, "--%s: not a network option", option);
                list = list_field(a, i);
                bool host = streq(option, "dns") && streq(value, "host");
                if (!host && !list_options[i].valid(value))
                        return error_set(err, -EINVAL, "--%s=%s: expected %s", option, value, list_options[i].expected);
                /* --dns=host is the host's file as it is: no address
                 * beside it; said twice, it means it once. */
                if (streq(option, "dns") && a->dns && host != strv_contains(a->dns, "host"))
                        return error_set(err, -EINVAL, "--dns=host cannot be combined with addresses");
                if (host && a->dns)
                        return 0;
        }
        return strv_push(list, value) < 0 ? error_sys(err, -ENOMEM, "--%s", option) : 0;
}

static int set_list(PodManifest *m, const char *annotation, char *const *l, Error **err) {
        if (!l)
                return 0;
        size_t n = 1;
        for (char *const *p = l; *p; p++)
                n += strlen(*p) + 1;
        _cleanup_free_ char *joined = calloc(n, 1);
        if (!joined)
                return error_sys(err, -ENOMEM, "%s", annotation);
        for (char *const *p = l; *p; p++) {
                if (p != l)
                        strcat(joined, " ");
                strcat(joined, *p);
        }
        return pod_manifest_set_annotation(m, annotation, joined, err);
}

int pod_net_args_apply(const PodNetArgs *a, PodManifest *m, Error **err) {
        PodNet n = {};
        int r = pod_net_parse(a->net ? a->net : POD_NET_DEFAULT, &n, err);
        PodNetMode mode = n.mode;
        pod_net_done(&n);
        if (r < 0)
                return r;
        if (a->ports && mode != POD_NET_CNI)
                return error_set(err, -EINVAL, "--port needs a network of the pod's own: --net=%s has none to publish",
                                 a->net);
        if (a->conntrack_limit && mode != POD_NET_CNI)
                return error_set(err, -EINVAL, "--conntrack-limit bounds a network of the pod's own: --net=%s has none",
                                 a->net);
        if ((a->net && (r = pod_manifest_set_annotation(m, POD_ANNOTATION_NET, a->net, err)) < 0) ||
            (a->hostname && (r = pod_manifest_set_annotation(m, POD_ANNOTATION_HOSTNAME, a->hostname, err)) < 0) ||
            (a->conntrack_limit &&
             (r = pod_manifest_set_annotation(m, POD_ANNOTATION_CONNTRACK_LIMIT, a->conntrack_limit, err)) < 0))
                return r;
        for (size_t i = 0; i < ELEMENTSOF(list_options); i++)
                if ((r = set_list(m, list_options[i].annotation, *(char **const *) ((const char *) a + list_options[i].field),
                                  err)) < 0)
                        return r;
        for (char **p = a->ports; p && *p; p++) {
                _cleanup_free_ char *buf = malloc(strlen(*p) + 1);
                PodPort port;
                char name[32];
                if (!buf)
                        return error_sys(err, -ENOMEM, "--port");
                if ((r = pod_port_parse(*p, buf, &port, err)) < 0)
                        return r;
                /* Named by protocol and host port, made unique by the
                 * index when two host addresses share one port. */
                snprintf(name, sizeof(name), "%s-%u", port.protocol, port.host_port);
                for (size_t i = 0; i < m->n_ports; i++)
                        if (streq(m->ports[i].name, name))
                                snprintf(name, sizeof(name), "%s-%u-%zu", port.protocol, port.host_port, m->n_ports + 1);
                port.name = name;
                if (pod_manifest_add_port(m, &port, NULL) < 0)
                        return error_set(err, -EINVAL, "--port=%s: host port %u/%s is published twice", *p,
                                         port.host_port, port.protocol);
        }
        return 0;
}

int pod_net_from_manifest(const PodManifest *m, PodNet *ret, Error **err) {
        const char *net = pod_manifest_get_annotation(m, POD_ANNOTATION_NET);
        PodNet n = {};
        int r = pod_net_parse(net ? net : POD_NET_DEFAULT, &n, err);
        if (r < 0) {
                error_prefix(err, "annotation %s", POD_ANNOTATION_NET);
                if (err && *err)
                        (*err)->code = -EBADMSG;
                return -EBADMSG;
        }
        const char *hostname = pod_manifest_get_annotation(m, POD_ANNOTATION_HOSTNAME);
        const char *dns = pod_manifest_get_annotation(m, POD_ANNOTATION_DNS);
        if (hostname && !hostname_is_valid(hostname))
                r = error_set(err, -EBADMSG, "annotation %s: \"%s\" is not a host name", POD_ANNOTATION_HOSTNAME, hostname);
        else if (hostname && !(n.hostname = strdup(hostname)))
                r = error_sys(err, -ENOMEM, "pod manifest");
        if (r >= 0 && dns && streq(dns, "host"))
                n.dns_host = true;
        else if (r >= 0 && dns)
                r = split_checked(dns, dns_server_is_valid, "annotation " POD_ANNOTATION_DNS, &n.dns, err);
        const char *v;
        if (r >= 0 && (v = pod_manifest_get_annotation(m, POD_ANNOTATION_DNS_SEARCH)))
                r = split_checked(v, hostname_is_valid, "annotation " POD_ANNOTATION_DNS_SEARCH, &n.dns_search, err);
        if (r >= 0 && (v = pod_manifest_get_annotation(m, POD_ANNOTATION_DNS_OPTIONS)))
                r = split_checked(v, dns_option_is_valid, "annotation " POD_ANNOTATION_DNS_OPTIONS, &n.dns_options, err);
        if (r >= 0 && (v = pod_manifest_get_annotation(m, POD_ANNOTATION_HOSTS_ENTRIES)))
                r = split_checked(v, hosts_entry_is_valid, "annotation " POD_ANNOTATION_HOSTS_ENTRIES, &n.hosts_entries, err);
        n.conntrack_limit = POD_NET_CONNTRACK_LIMIT_DEFAULT;
        if (r >= 0 && (v = pod_manifest_get_annotation(m, POD_ANNOTATION_CONNTRACK_LIMIT)) &&
            conntrack_limit_parse(v, &n.conntrack_limit) < 0)
                r = error_set(err, -EBADMSG, "annotation %s: \"%s\" is not a number from 0 to %u",
                              POD_ANNOTATION_CONNTRACK_LIMIT, v, POD_NET_CONNTRACK_LIMIT_MAX);
        if (r >= 0 && m->n_ports > 0 && n.mode != POD_NET_CNI)
                r = error_set(err, -EBADMSG, "ports: a pod with %s %s publishes no ports", POD_ANNOTATION_NET, net);
        if (r < 0) {
                pod_net_done(&n);
                return r;
        }
        *ret = n;
        return 0;
}
