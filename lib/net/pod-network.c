/* SPDX-License-Identifier: Apache-2.0 */
#include <fcntl.h>
#include <sys/stat.h>

#include "basic/crash-point.h"
#include "basic/fs.h"
#include "basic/json-util.h"
#include "net/cni.h"
#include "net/netns.h"
#include "net/conntrack-limit.h"
#include "net/pod-network.h"
#include "net/ports.h"

#define RECORD_MAX (4U << 20)

static int record_read(int pod_fd, struct json_object **ret, Error **err) {
        _cleanup_free_ char *data = NULL;
        size_t size;
        int r = read_file_at(pod_fd, POD_NETWORKS_FILE, RECORD_MAX, &data, &size, err);
        if (r == -ENOENT) {
                error_free(TAKE_PTR(*err));
                *ret = NULL;
                return 0;
        }
        if (r < 0 || (r = json_parse(data, size, POD_NETWORKS_FILE, ret, err)) < 0)
                return r;
        if (!json_object_is_type(json_object_object_get(*ret, "networks"), json_type_array)) {
                json_object_put(TAKE_PTR(*ret));
                return error_set(err, -EBADMSG, "%s: no \"networks\" array", POD_NETWORKS_FILE);
        }
        return 0;
}

static int record_write(int pod_fd, struct json_object *record, Error **err) {
        const char *text = json_to_text(record, true);
        return write_file_atomic_at(pod_fd, POD_NETWORKS_FILE, text, strlen(text), 0644, err);
}

static void attachment_of(struct json_object *entry, const char *uuid, const char *netns, struct json_object *runtime_config,
                          CniAttachment *ret) {
        *ret = (CniAttachment) {
                .container_id = uuid,
                .netns = netns,
                .ifname = json_object_get_string(json_object_object_get(entry, "interface")),
                .args = json_object_get_string(json_object_object_get(entry, "args")),
                .runtime_config = runtime_config,
        };
}

/* DEL of every entry of the record, last first; entries released are
 * dropped from it. */
static int release(int pod_fd, const char *uuid, struct json_object *record, const char *netns, Error **err) {
        struct json_object *networks = json_object_object_get(record, "networks");
        int r = 0;
        for (size_t i = json_object_array_length(networks); i > 0; i--) {
                struct json_object *e = json_object_array_get_idx(networks, i - 1);
                CniAttachment a;
                attachment_of(e, uuid, netns, json_object_object_get(e, "runtimeConfig"), &a);
                Error *e_err = NULL;
                int k = cni_del(&a, json_object_object_get(e, "config"), json_object_object_get(e, "result"), &e_err);
                if (k < 0) {
                        if (r == 0 && err && !*err)
                                *err = TAKE_PTR(e_err);
                        r = r ?: k;
                } else
                        json_object_array_del_idx(networks, i - 1, 1);
                error_free(e_err);
        }
        if (json_object_array_length(networks) > 0) {
                Error *ignored = NULL;
                (void) record_write(pod_fd, record, &ignored);
                error_free(ignored);
                return r;
        }
        int k = unlink_beneath(pod_fd, POD_NETWORKS_FILE, 0);
        return k < 0 && k != -ENOENT ? error_sys(err, k, "cannot remove %s", POD_NETWORKS_FILE) : r;
}

static int loopback_up(const char *uuid, const char *netns, Error **err) {
        static const char lo[] = "{\"cniVersion\": \"" CNI_VERSION "\", \"name\": \"lo\", \"plugins\": [{\"type\": \"loopback\"}]}";
        _cleanup_json_ struct json_object *list = NULL, *result = NULL;
        if (json_parse(lo, sizeof(lo) - 1, "lo", &list, err) < 0)
                return -EINVAL;
        CniAttachment a = { .container_id = uuid, .netns = netns, .ifname = "lo" };
        return cni_add(&a, list, &result, err);
}

int pod_network_load(const PodManifest *m, const PodNet *n, struct json_object **ret_configs, Error **err) {
        _cleanup_json_ struct json_object *configs = json_object_new_array();
        if (!configs)
                return error_sys(err, -ENOMEM, "networks");
        for (size_t i = 0; i < n->n_networks; i++) {
                struct json_object *config;
                int r = cni_config_load(n->networks[i].name, m->n_ports > 0, &config, err);
                if (r < 0)
                        return r;
                if (json_object_array_add(configs, config) < 0) {
                        json_object_put(config);
                        return error_sys(err, -ENOMEM, "networks");
                }
        }
        *ret_configs = TAKE_PTR(configs);
        return 0;
}

int pod_network_up(int pod_fd, const char *uuid, const PodManifest *m, const PodNet *n, struct json_object *configs,
                   const char *netns, Error **err) {
        _cleanup_json_ struct json_object *record = json_object_new_object(), *networks = json_object_new_array();
        _cleanup_json_ struct json_object *runtime_config = m->n_ports > 0 ? ports_runtime_config(m) : json_object_new_object();
        if (!record || !networks || !runtime_config)
                return error_sys(err, -ENOMEM, "networks");
        /* For the plugins that ask for it: sdpod-conntrack's bound. */
        json_object_object_add(runtime_config, CONNTRACK_CAPABILITY, json_object_new_int64(n->conntrack_limit));
        if (mkdirat(pod_fd, POD_NET_DIR, 0755) < 0 && errno != EEXIST)
                return error_sys(err, -errno, "cannot create %s/", POD_NET_DIR);

        /* The record's entries, one per network. */
        for (size_t i = 0; i < n->n_networks; i++) {
                struct json_object *e = json_object_new_object();
                char ifname[24];
                snprintf(ifname, sizeof(ifname), "eth%zu", i);
                if (!e || json_object_array_add(networks, e) < 0) {
                        json_object_put(e);
                        return error_sys(err, -ENOMEM, "networks");
                }
                json_object_object_add(e, "config", json_object_get(json_object_array_get_idx(configs, i)));
                if (json_add_string(e, "name", n->networks[i].name) < 0 || json_add_string(e, "interface", ifname) < 0 ||
                    (n->networks[i].args && json_add_string(e, "args", n->networks[i].args) < 0))
                        return error_sys(err, -ENOMEM, "networks");
                json_object_object_add(e, "runtimeConfig", json_object_get(runtime_config));
        }
        int r = loopback_up(uuid, netns, err);
        if (r < 0)
                return r;

        /* Then one by one, each recorded before its ADD, so that whoever
         * comes after a crash releases it. */
        json_object_object_add(record, "networks", json_object_new_array());
        struct json_object *done = json_object_object_get(record, "networks");
        for (size_t i = 0; i < n->n_networks; i++) {
                struct json_object *e = json_object_get(json_object_array_get_idx(networks, i)), *result = NULL;
                if (!done || json_object_array_add(done, e) < 0) {
                        json_object_put(e);
                        r = error_sys(err, -ENOMEM, "networks");
                        break;
                }
                if ((r = record_write(pod_fd, record, err)) < 0)
                        break;
                crash_point(CRASH_RUN_NET_RECORDED);
                CniAttachment a;
                attachment_of(e, uuid, netns, runtime_config, &a);
                if ((r = cni_add(&a, json_object_object_get(e, "config"), &result, err)) < 0) {
                        /* cni_add() released this one itself. */
                        json_object_array_del_idx(done, i, 1);
                        break;
                }
                crash_point(CRASH_RUN_NET_ADDED);
                json_object_object_add(e, "result", result);
                if ((r = record_write(pod_fd, record, err)) < 0)
                        break;
        }
        if (r < 0) {
                (void) release(pod_fd, uuid, record, netns, NULL);
                return r;
        }
        return 0;
}

int pod_network_down(int pod_fd, const char *uuid, const char *netns, Error **err) {
        _cleanup_json_ struct json_object *record = NULL;
        int r = record_read(pod_fd, &record, err);
        if (r < 0 || !record)
                return r;
        return release(pod_fd, uuid, record, netns, err);
}

int pod_network_describe(int pod_fd, struct json_object **ret, Error **err) {
        _cleanup_json_ struct json_object *record = NULL, *out = json_object_new_array();
        if (!out)
                return error_sys(err, -ENOMEM, "networks");
        int r = record_read(pod_fd, &record, err);
        if (r < 0)
                return r;
        struct json_object *networks = record ? json_object_object_get(record, "networks") : NULL;
        for (size_t i = 0; networks && i < json_object_array_length(networks); i++) {
                struct json_object *e = json_object_array_get_idx(networks, i), *d = json_object_new_object();
                struct json_object *addresses = json_object_new_array();
                if (!d || !addresses || json_object_array_add(out, d) < 0) {
                        json_object_put(d);
                        json_object_put(addresses);
                        return error_sys(err, -ENOMEM, "networks");
                }
                json_object_object_add(d, "name", json_object_get(json_object_object_get(e, "name")));
                json_object_object_add(d, "interface", json_object_get(json_object_object_get(e, "interface")));
                json_object_object_add(d, "addresses", addresses);
                struct json_object *result = json_object_object_get(e, "result");
                struct json_object *ips = result ? json_object_object_get(result, "ips") : NULL;
                struct json_object *ifaces = result ? json_object_object_get(result, "interfaces") : NULL;
                for (size_t k = 0; json_object_is_type(ips, json_type_array) && k < json_object_array_length(ips); k++) {
                        struct json_object *ip = json_object_array_get_idx(ips, k), *idx;
                        /* Only the pod's side: an address of an interface
                         * the result places in the namespace. */
                        if (json_object_object_get_ex(ip, "interface", &idx) && json_object_is_type(ifaces, json_type_array)) {
                                struct json_object *iface = json_object_array_get_idx(ifaces, (size_t) json_object_get_int(idx));
                                if (!iface || !json_object_object_get(iface, "sandbox"))
                                        continue;
                        }
                        struct json_object *address = json_object_object_get(ip, "address");
                        if (json_object_is_type(address, json_type_string))
                                json_object_array_add(addresses, json_object_get(address));
                        struct json_object *gateway = json_object_object_get(ip, "gateway");
                        if (gateway && !json_object_object_get(d, "gateway"))
                                json_object_object_add(d, "gateway", json_object_get(gateway));
                }
        }
        *ret = TAKE_PTR(out);
        return 0;
}

char *pod_network_first_address(struct json_object *description) {
        for (size_t i = 0; i < json_object_array_length(description); i++) {
                struct json_object *a = json_object_object_get(json_object_array_get_idx(description, i), "addresses");
                if (json_object_array_length(a) == 0)
                        continue;
                const char *s = json_object_get_string(json_object_array_get_idx(a, 0));
                return strndup(s, strcspn(s, "/"));
        }
        return NULL;
}

struct json_object *pod_network_dns(int pod_fd) {
        _cleanup_json_ struct json_object *record = NULL;
        Error *ignored = NULL;
        if (record_read(pod_fd, &record, &ignored) < 0 || !record) {
                error_free(ignored);
                return NULL;
        }
        struct json_object *networks = json_object_object_get(record, "networks");
        for (size_t i = 0; i < json_object_array_length(networks); i++) {
                struct json_object *result = json_object_object_get(json_object_array_get_idx(networks, i), "result");
                struct json_object *dns = result ? json_object_object_get(result, "dns") : NULL;
                if (dns && json_object_object_length(dns) > 0)
                        return json_object_get(dns);
        }
        return NULL;
}

int pod_network_down_kept(int pod_fd, const char *uuid, Error **err) {
        char kept[NETNS_KEPT_PATH_MAX];
        netns_kept_path(uuid, kept);
        Error *ignored = NULL;
        bool have_kept = netns_check(kept, &ignored) >= 0;
        error_free(ignored);
        int r = pod_network_down(pod_fd, uuid, have_kept ? kept : "", err);
        return r < 0 ? r : netns_unkeep(-1, uuid, err);
}
