/* SPDX-License-Identifier: Apache-2.0 */
/* A pod's network settings: --net, --port, --dns... as they are checked on
 * the command line, written into the manifest and read back; the ports of
 * the manifest; CNI configuration lists as they are loaded and checked. */
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>

#include "basic/fs.h"
#include "basic/json-util.h"
#include "manifest/pod-manifest.h"
#include "manifest/pod-net.h"
#include "net/cni.h"
#include "tests.h"

/* The message of a refused value, or NULL when it was taken. */
static char *net_arg_error(PodNetArgs *a, const char *option, const char *value) {
        Error *e = NULL;
        char *msg = NULL;
        if (pod_net_args_add(a, option, value, &e) < 0)
                msg = strdup(e ? e->msg : "(no message)");
        error_free(e);
        return msg;
}

static void test_port_parse(void) {
        char buf[128];
        PodPort p;
        Error *e = NULL;
        ASSERT_EQ_INT(pod_port_parse("8080:80", buf, &p, &e), 0);
        ASSERT(!p.host_ip);
        ASSERT_EQ_INT(p.host_port, 8080);
        ASSERT_EQ_INT(p.pod_port, 80);
        ASSERT_STREQ(p.protocol, "tcp");
        ASSERT_EQ_INT(pod_port_parse("127.0.0.1:53:5353/udp", buf, &p, &e), 0);
        ASSERT_STREQ(p.host_ip, "127.0.0.1");
        ASSERT_STREQ(p.protocol, "udp");
        ASSERT_EQ_INT(p.pod_port, 5353);
        ASSERT_EQ_INT(pod_port_parse("[::1]:8443:443", buf, &p, &e), 0);
        ASSERT_STREQ(p.host_ip, "::1");

        static const struct {
                const char *value, *message;
        } bad[] = {
                { "80", "expected [HOSTIP:]HOSTPORT:PODPORT" },
                { "0:80", "\"0\" is not a port" },
                { "80:65536", "\"65536\" is not a port" },
                { "80:-1", "\"-1\" is not a port" },
                { "80:+1", "\"+1\" is not a port" },
                { "80:80/sctp", "protocol \"sctp\" is not tcp or udp" },
                { "localhost:80:80", "\"localhost\" is not a numeric IPv4 or IPv6 address" },
                { ":80:80", "\"\" is not a numeric" },
                { "1.2.3.4:x:80", "\"x\" is not a port" },
        };
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                ASSERT_EQ_INT(pod_port_parse(bad[i].value, buf, &p, &e), -EINVAL);
                ASSERT_CONTAINS(e->msg, bad[i].message);
                error_free(e);
                e = NULL;
        }
}

static void test_net_parse(void) {
        PodNet n;
        Error *e = NULL;
        ASSERT_EQ_INT(pod_net_parse("default", &n, &e), 0);
        ASSERT_EQ_INT(n.mode, POD_NET_CNI);
        ASSERT_EQ_INT(n.n_networks, 1);
        ASSERT_STREQ(n.networks[0].name, "default");
        pod_net_done(&n);
        ASSERT_EQ_INT(pod_net_parse("a:IP=10.1.2.3;K=v,b_2.x", &n, &e), 0);
        ASSERT_EQ_INT(n.n_networks, 2);
        ASSERT_STREQ(n.networks[0].args, "IP=10.1.2.3;K=v");
        ASSERT_STREQ(n.networks[1].name, "b_2.x");
        ASSERT(!n.networks[1].args);
        pod_net_done(&n);
        ASSERT_EQ_INT(pod_net_parse("none", &n, &e), 0);
        ASSERT_EQ_INT(n.mode, POD_NET_NONE);
        ASSERT_EQ_INT(pod_net_parse("host", &n, &e), 0);
        ASSERT_EQ_INT(n.mode, POD_NET_HOST);
        ASSERT_EQ_INT(pod_net_parse("ns:/run/netns/x", &n, &e), 0);
        ASSERT_EQ_INT(n.mode, POD_NET_NS);
        ASSERT_STREQ(n.ns_path, "/run/netns/x");
        pod_net_done(&n);

        static const struct {
                const char *value, *message;
        } bad[] = {
                { "", "no network named" },
                { ",", "no network named" },
                { "ns:relative", "must be absolute" },
                { "a,a", "network a is named twice" },
                { "a,none", "cannot be combined" },
                { "../x", "a network name is" },
                { "-x", "a network name is" },
                { "a/b", "a network name is" },
                { "a:", "expected KEY=VALUE" },
                { "a:IP", "expected KEY=VALUE" },
                { "a:IP=1;", "expected KEY=VALUE" },
                { "a:IP=1 2", "expected KEY=VALUE" },
                { "a:=1", "expected KEY=VALUE" },
        };
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                ASSERT_EQ_INT(pod_net_parse(bad[i].value, &n, &e), -EINVAL);
                ASSERT_CONTAINS(e->msg, bad[i].message);
                error_free(e);
                e = NULL;
        }
}

static void test_args(void) {
        PodNetArgs a = {};
        static const struct {
                const char *option, *value, *message;
        } bad[] = {
                { "dns", "8.8.8", "--dns=8.8.8: expected a numeric" },
                { "dns-search", "bad..domain", "expected a domain name" },
                { "dns-option", "a b", "expected a resolv.conf option" },
                { "hosts-entry", "1.2.3.4", "expected IP=NAME" },
                { "hosts-entry", "x=name", "expected IP=NAME" },
                { "hosts-entry", "1.2.3.4=bad name", "expected IP=NAME" },
                { "hostname", "-web", "expected a host name" },
                { "hostname", "a.b-", "expected a host name" },
                { "net", "a,,a", "named twice" },
                { "port", "80", "--port=80" },
        };
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                _cleanup_free_ char *msg = net_arg_error(&a, bad[i].option, bad[i].value);
                ASSERT_CONTAINS(msg, bad[i].message);
        }
        ASSERT(!net_arg_error(&a, "dns", "host"));
        ASSERT(!net_arg_error(&a, "dns", "host"));
        _cleanup_free_ char *mixed = net_arg_error(&a, "dns", "192.0.2.1");
        ASSERT_CONTAINS(mixed, "--dns=host cannot be combined");
        /* Said twice, written once: the manifest must read back. */
        _cleanup_pod_manifest_ PodManifest *host_dns = NULL;
        Error *host_err = NULL;
        PodNet hn;
        ASSERT_EQ_INT(pod_manifest_new(&host_dns), 0);
        ASSERT_EQ_INT(pod_net_args_apply(&a, host_dns, &host_err), 0);
        ASSERT_STREQ(pod_manifest_get_annotation(host_dns, POD_ANNOTATION_DNS), "host");
        ASSERT_EQ_INT(pod_net_from_manifest(host_dns, &hn, &host_err), 0);
        ASSERT(hn.dns_host);
        pod_net_done(&hn);
        pod_net_args_done(&a);

        /* Written into a manifest, read back. */
        ASSERT(!net_arg_error(&a, "net", "default"));
        ASSERT(!net_arg_error(&a, "port", "127.0.0.1:18080:80"));
        ASSERT(!net_arg_error(&a, "port", "18080:80/udp"));
        ASSERT(!net_arg_error(&a, "dns", "192.0.2.53"));
        ASSERT(!net_arg_error(&a, "dns", "2001:db8::53"));
        ASSERT(!net_arg_error(&a, "dns-search", "example.test"));
        ASSERT(!net_arg_error(&a, "dns-option", "ndots:2"));
        ASSERT(!net_arg_error(&a, "hosts-entry", "192.0.2.7=db.example.test"));
        ASSERT(!net_arg_error(&a, "hostname", "web1"));
        _cleanup_free_ char *twice = net_arg_error(&a, "hostname", "web2");
        ASSERT_CONTAINS(twice, "--hostname given twice");
        _cleanup_pod_manifest_ PodManifest *m = NULL;
        Error *e = NULL;
        ASSERT_EQ_INT(pod_manifest_new(&m), 0);
        ASSERT_EQ_INT(pod_net_args_apply(&a, m, &e), 0);
        ASSERT_EQ_INT(m->n_ports, 2);
        ASSERT_STREQ(m->ports[0].name, "tcp-18080");
        ASSERT_STREQ(m->ports[0].host_ip, "127.0.0.1");
        ASSERT_STREQ(m->ports[1].name, "udp-18080");
        ASSERT_STREQ(pod_manifest_get_annotation(m, POD_ANNOTATION_DNS), "192.0.2.53 2001:db8::53");
        PodNet n;
        ASSERT_EQ_INT(pod_net_from_manifest(m, &n, &e), 0);
        ASSERT_EQ_INT(n.mode, POD_NET_CNI);
        ASSERT_STREQ(n.dns[1], "2001:db8::53");
        ASSERT_STREQ(n.dns_search[0], "example.test");
        ASSERT_STREQ(n.hosts_entries[0], "192.0.2.7=db.example.test");
        ASSERT_STREQ(n.hostname, "web1");
        pod_net_done(&n);
        pod_net_args_done(&a);

        /* A port with a network that has none to publish on. */
        _cleanup_pod_manifest_ PodManifest *m2 = NULL;
        ASSERT_EQ_INT(pod_manifest_new(&m2), 0);
        ASSERT(!net_arg_error(&a, "net", "host"));
        ASSERT(!net_arg_error(&a, "port", "80:80"));
        ASSERT_EQ_INT(pod_net_args_apply(&a, m2, &e), -EINVAL);
        ASSERT_CONTAINS(e->msg, "--net=host has none to publish");
        error_free(e);
        e = NULL;
        pod_net_args_done(&a);
        /* Two ports on one host port and protocol. */
        ASSERT(!net_arg_error(&a, "port", "80:80"));
        ASSERT(!net_arg_error(&a, "port", "127.0.0.1:80:81"));
        ASSERT_EQ_INT(pod_net_args_apply(&a, m2, &e), -EINVAL);
        ASSERT_CONTAINS(e->msg, "host port 80/tcp is published twice");
        error_free(e);
        pod_net_args_done(&a);
}

static void test_manifest_ports(void) {
        static const struct {
                const char *ports, *message;
        } bad[] = {
                { "[{\"name\": \"a\", \"hostPort\": 80, \"protocol\": \"sctp\"}]", "ports[0].protocol" },
                { "[{\"name\": \"a\", \"hostPort\": 80, \"hostIP\": \"localhost\"}]", "ports[0].hostIP" },
                { "[{\"name\": \"a\", \"hostPort\": 80, \"podPort\": 0}]", "ports[0].podPort" },
                { "[{\"name\": \"a\", \"hostPort\": 80}, {\"name\": \"a\", \"hostPort\": 81}]", "duplicate port name" },
                { "[{\"name\": \"a\", \"hostPort\": 80}, {\"name\": \"b\", \"hostPort\": 80, \"hostIP\": \"::1\"}]",
                  "host port 80/tcp is published twice" },
        };
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                char doc[512];
                snprintf(doc, sizeof(doc), "{\"acKind\": \"PodManifest\", \"acVersion\": \"0.8.11\", \"apps\": [], \"ports\": %s}",
                         bad[i].ports);
                PodManifest *m = NULL;
                Error *e = NULL;
                ASSERT_EQ_INT(pod_manifest_parse(doc, strlen(doc), "test", &m, &e), -EBADMSG);
                ASSERT_CONTAINS(e->msg, bad[i].message);
                error_free(e);
        }
        const char *good = "{\"acKind\": \"PodManifest\", \"acVersion\": \"0.8.11\", \"apps\": [], \"ports\": "
                           "[{\"name\": \"a\", \"hostPort\": 80}, {\"name\": \"b\", \"hostPort\": 80, \"protocol\": \"udp\"}]}";
        _cleanup_pod_manifest_ PodManifest *m = NULL;
        Error *e = NULL;
        ASSERT_EQ_INT(pod_manifest_parse(good, strlen(good), "test", &m, &e), 0);
        ASSERT_EQ_INT(m->n_ports, 2);
        ASSERT_EQ_INT(m->ports[0].pod_port, 80);
        ASSERT_STREQ(m->ports[0].protocol, "tcp");
}

static char dir[] = "/tmp/test-pod-net.XXXXXX";

static void write_config(const char *name, const char *text) {
        char path[256];
        snprintf(path, sizeof(path), "%s/%s", dir, name);
        FILE *f = fopen(path, "we");
        ASSERT(f);
        fputs(text, f);
        fclose(f);
}

static char *load_error(const char *name) {
        struct json_object *o = NULL;
        Error *e = NULL;
        char *msg = NULL;
        if (cni_config_load(name, false, &o, &e) < 0)
                msg = strdup(e->msg);
        json_object_put(o);
        error_free(e);
        return msg;
}

static void cleanup_dir(void) {
        rm_rf(dir);
}

static void test_cni_config(void) {
        ASSERT(mkdtemp(dir));
        test_cleanup = cleanup_dir;
        setenv("SDPOD_NET_DIR", dir, 1);

        struct json_object *o = NULL;
        Error *e = NULL;
        ASSERT_EQ_INT(cni_config_load("default", true, &o, &e), 0);
        ASSERT_EQ_INT(json_object_array_length(json_object_object_get(o, "plugins")), 4);
        json_object_put(o);
        /* Without ports, no portmap; the conntrack bound last. */
        ASSERT_EQ_INT(cni_config_load("default", false, &o, &e), 0);
        struct json_object *two = json_object_object_get(o, "plugins");
        ASSERT_EQ_INT(json_object_array_length(two), 3);
        ASSERT_STREQ(json_object_get_string(json_object_object_get(json_object_array_get_idx(two, 1), "type")), "firewall");
        ASSERT_STREQ(json_object_get_string(json_object_object_get(json_object_array_get_idx(two, 2), "type")),
                     "sdpod-conntrack");
        json_object_put(o);

        write_config("one.conf", "{\"cniVersion\": \"0.4.0\", \"name\": \"one\", \"type\": \"bridge\"}");
        ASSERT_EQ_INT(cni_config_load("one", false, &o, &e), 0);
        struct json_object *plugins = json_object_object_get(o, "plugins");
        ASSERT_EQ_INT(json_object_array_length(plugins), 1);
        ASSERT_STREQ(json_object_get_string(json_object_object_get(json_object_array_get_idx(plugins, 0), "type")), "bridge");
        ASSERT_STREQ(json_object_get_string(json_object_object_get(o, "cniVersion")), "0.4.0");
        json_object_put(o);

        write_config("default.conflist", "{\"cniVersion\": \"1.0.0\", \"name\": \"default\", \"plugins\": [{\"type\": \"ptp\"}]}");
        ASSERT_EQ_INT(cni_config_load("default", true, &o, &e), 0);
        ASSERT_EQ_INT(json_object_array_length(json_object_object_get(o, "plugins")), 1);
        json_object_put(o);

        static const struct {
                const char *file, *text, *message;
        } bad[] = {
                { "other.conflist", "{\"cniVersion\": \"1.0.0\", \"name\": \"else\", \"plugins\": [{\"type\": \"ptp\"}]}",
                  "its name is \"else\", not \"other\"" },
                { "empty.conflist", "{\"cniVersion\": \"1.0.0\", \"name\": \"empty\", \"plugins\": []}", "\"plugins\" is empty" },
                { "path.conflist", "{\"cniVersion\": \"1.0.0\", \"name\": \"path\", \"plugins\": [{\"type\": \"../../bin/sh\"}]}",
                  "is not a plugin's file name" },
                { "dot.conflist", "{\"cniVersion\": \"1.0.0\", \"name\": \"dot\", \"plugins\": [{\"type\": \".\"}]}",
                  "is not a plugin's file name" },
                { "notype.conflist", "{\"cniVersion\": \"1.0.0\", \"name\": \"notype\", \"plugins\": [{}]}", "type" },
                { "noversion.conflist", "{\"name\": \"noversion\", \"plugins\": [{\"type\": \"ptp\"}]}", "cniVersion" },
                { "array.conflist", "[]", "expected a JSON object" },
                { "broken.conflist", "{\"cniVersion\": ", "broken.conflist" },
        };
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                write_config(bad[i].file, bad[i].text);
                char name[64];
                snprintf(name, sizeof(name), "%.*s", (int) strcspn(bad[i].file, "."), bad[i].file);
                _cleanup_free_ char *msg = load_error(name);
                ASSERT_CONTAINS(msg, bad[i].message);
                ASSERT_CONTAINS(msg, name);
        }
        _cleanup_free_ char *missing = load_error("missing");
        ASSERT_CONTAINS(missing, "network missing: no ");
        cleanup_dir();
        test_cleanup = NULL;
}

int main(void) {
        RUN(test_port_parse);
        RUN(test_net_parse);
        RUN(test_args);
        RUN(test_manifest_ports);
        RUN(test_cni_config);
        return 0;
}
