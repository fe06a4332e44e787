/* SPDX-License-Identifier: Apache-2.0 */
/* sdpod-conntrack: a chained CNI plugin that bounds the host conntrack
 * entries of a pod's addresses (net/conntrack-limit.h; sdpod-security(7)).
 * The CNI protocol: CNI_COMMAND (ADD, DEL, CHECK, VERSION), CNI_CONTAINERID
 * and CNI_IFNAME from the environment, the configuration on stdin with the
 * previous plugin's result (prevResult), which ADD passes on unchanged. */
#include <stdio.h>

#include "basic/fs.h"
#include "basic/json-util.h"
#include "basic/strv.h"
#include "net/conntrack-limit.h"

#define CONFIG_MAX (1U << 20)

static int answer_error(const char *version, int code, const char *msg) {
        _cleanup_json_ struct json_object *o = json_object_new_object();
        if (o) {
                json_add_string(o, "cniVersion", version ?: "1.0.0");
                json_object_object_add(o, "code", json_object_new_int(code));
                json_add_string(o, "msg", msg);
                puts(json_to_text(o, false));
        }
        return 1;
}

static int fail(const char *version, Error *e) {
        int r = answer_error(version, 999, e ? e->msg : "out of memory");
        error_free(e);
        return r;
}

/* The pod's addresses of prevResult (those of an interface in the pod's
 * namespace when it says which), without their prefix lengths. */
static int addresses_of(struct json_object *result, char ***ret) {
        struct json_object *ips = json_object_object_get(result, "ips");
        struct json_object *ifaces = json_object_object_get(result, "interfaces");
        _cleanup_strv_free_ char **l = NULL;
        for (size_t i = 0; json_object_is_type(ips, json_type_array) && i < json_object_array_length(ips); i++) {
                struct json_object *ip = json_object_array_get_idx(ips, i), *idx;
                if (json_object_object_get_ex(ip, "interface", &idx) && json_object_is_type(ifaces, json_type_array)) {
                        struct json_object *iface = json_object_array_get_idx(ifaces, (size_t) json_object_get_int(idx));
                        if (iface && !json_object_object_get(iface, "sandbox"))
                                continue;
                }
                const char *a = json_object_get_string(json_object_object_get(ip, "address"));
                if (!a)
                        continue;
                _cleanup_free_ char *addr = strndup(a, strcspn(a, "/"));
                if (!addr || strv_push(&l, addr) < 0)
                        return -ENOMEM;
        }
        *ret = TAKE_PTR(l);
        return 0;
}

/* The configuration, from the runtime's pipe: at most CONFIG_MAX. */
static int read_stdin(char **ret, size_t *ret_size) {
        _cleanup_free_ char *buf = malloc(CONFIG_MAX + 1);
        size_t have = 0;
        if (!buf)
                return -ENOMEM;
        for (;;) {
                ssize_t n = read(STDIN_FILENO, buf + have, CONFIG_MAX - have);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return -errno;
                if (n == 0)
                        break;
                have += (size_t) n;
                if (have == CONFIG_MAX)
                        return -EFBIG;
        }
        buf[have] = 0;
        *ret = TAKE_PTR(buf);
        *ret_size = have;
        return 0;
}

static int limit_of(struct json_object *config, unsigned *ret, Error **err) {
        struct json_object *rc = json_object_object_get(config, "runtimeConfig");
        struct json_object *v = rc ? json_object_object_get(rc, CONNTRACK_CAPABILITY) : NULL;
        if (!v)
                v = json_object_object_get(config, "limit");
        if (!v) {
                *ret = CONNTRACK_LIMIT_DEFAULT;
                return 0;
        }
        int64_t n = json_object_get_int64(v);
        if (!json_object_is_type(v, json_type_int) || n < 0 || n > CONNTRACK_LIMIT_MAX)
                return error_set(err, -EINVAL, "conntrack limit %s: expected a number from 0 to %u",
                                 json_object_to_json_string(v), CONNTRACK_LIMIT_MAX);
        *ret = (unsigned) n;
        return 0;
}

int main(void) {
        const char *command = getenv("CNI_COMMAND");
        if (!command)
                return answer_error(NULL, 4, "CNI_COMMAND is not set");
        if (streq(command, "VERSION")) {
                puts("{\"cniVersion\": \"1.0.0\", \"supportedVersions\": [\"0.3.0\", \"0.3.1\", \"0.4.0\", \"1.0.0\"]}");
                return 0;
        }
        Error *err = NULL;
        _cleanup_free_ char *data = NULL;
        size_t size = 0;
        _cleanup_json_ struct json_object *config = NULL;
        if (read_stdin(&data, &size) < 0)
                return answer_error(NULL, 4, "cannot read the configuration (at most 1 MiB) on stdin");
        if (json_parse(data, size, "the configuration", &config, &err) < 0)
                return fail(NULL, err);
        const char *version = json_object_get_string(json_object_object_get(config, "cniVersion"));
        const char *network = json_object_get_string(json_object_object_get(config, "name"));
        const char *id = getenv("CNI_CONTAINERID"), *ifname = getenv("CNI_IFNAME");
        if (!id || !*id || !ifname || !network)
                return answer_error(version, 4, "CNI_CONTAINERID, CNI_IFNAME and the network's name are needed");
        char chain[CONNTRACK_CHAIN_MAX];
        conntrack_chain_name(id, network, ifname, chain);
        if (streq(command, "DEL"))
                return conntrack_limit_del(chain, &err) < 0 ? fail(version, err) : 0;

        struct json_object *prev = json_object_object_get(config, "prevResult");
        if (!prev)
                return answer_error(version, 4, "sdpod-conntrack is a chained plugin: it needs a prevResult");
        _cleanup_strv_free_ char **addresses = NULL;
        unsigned limit = 0;
        if (addresses_of(prev, &addresses) < 0)
                return answer_error(version, 999, "out of memory");
        if (limit_of(config, &limit, &err) < 0)
                return fail(version, err);
        if (streq(command, "CHECK"))
                return limit > 0 && conntrack_limit_check(chain, addresses, &err) < 0 ? fail(version, err) : 0;
        if (!streq(command, "ADD"))
                return answer_error(version, 4, "unknown CNI_COMMAND");
        if (limit > 0 && conntrack_limit_add(chain, limit, addresses, &err) < 0) {
                Error *ignored = NULL;
                (void) conntrack_limit_del(chain, &ignored);
                error_free(ignored);
                return fail(version, err);
        }
        /* The result is the previous one, in the configuration's version. */
        json_object_object_add(prev, "cniVersion", json_object_new_string(version ?: "1.0.0"));
        puts(json_to_text(prev, false));
        return 0;
}
