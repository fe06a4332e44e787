/* SPDX-License-Identifier: Apache-2.0 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "basic/json-util.h"
#include "net/ports.h"

static int reserve_one(const PodPort *p, Error **err) {
        struct sockaddr_storage ss = {};
        socklen_t len;
        const char *ip = p->host_ip ? p->host_ip : "0.0.0.0";
        struct sockaddr_in *in4 = (struct sockaddr_in *) &ss;
        struct sockaddr_in6 *in6 = (struct sockaddr_in6 *) &ss;
        if (inet_pton(AF_INET, ip, &in4->sin_addr) == 1) {
                in4->sin_family = AF_INET;
                in4->sin_port = htons(p->host_port);
                len = sizeof(*in4);
        } else if (inet_pton(AF_INET6, ip, &in6->sin6_addr) == 1) {
                in6->sin6_family = AF_INET6;
                in6->sin6_port = htons(p->host_port);
                len = sizeof(*in6);
        } else
                return error_set(err, -EINVAL, "port %s: host address \"%s\" is not numeric", p->name, ip);
        int fd = socket(ss.ss_family, (streq(p->protocol, "udp") ? SOCK_DGRAM : SOCK_STREAM) | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return error_sys(err, -errno, "port %s", p->name);
        if (bind(fd, (struct sockaddr *) &ss, len) < 0) {
                int r = -errno;
                close(fd);
                if (r == -EADDRINUSE)
                        return error_set(err, r, "host port %s%s%u/%s is in use (another pod publishes it, or a program "
                                         "of the host listens on it)", p->host_ip ?: "", p->host_ip ? ":" : "",
                                         p->host_port, p->protocol);
                return error_sys(err, r, "cannot hold host port %s%s%u/%s", p->host_ip ?: "", p->host_ip ? ":" : "",
                                 p->host_port, p->protocol);
        }
        return fd;
}

void ports_release(int *fds, size_t n) {
        for (size_t i = 0; fds && i < n; i++)
                if (fds[i] >= 0)
                        close(fds[i]);
        free(fds);
}

int ports_reserve(const PodManifest *m, int **ret_fds, Error **err) {
        int *fds = calloc(m->n_ports + 1, sizeof(int));
        if (!fds)
                return error_sys(err, -ENOMEM, "ports");
        for (size_t i = 0; i < m->n_ports; i++) {
                int fd = reserve_one(&m->ports[i], err);
                if (fd < 0) {
                        ports_release(fds, i);
                        return fd;
                }
                fds[i] = fd;
        }
        *ret_fds = fds;
        return 0;
}

struct json_object *ports_runtime_config(const PodManifest *m) {
        if (m->n_ports == 0)
                return NULL;
        _cleanup_json_ struct json_object *rc = json_object_new_object(), *a = json_object_new_array();
        if (!rc || !a)
                return NULL;
        for (size_t i = 0; i < m->n_ports; i++) {
                const PodPort *p = &m->ports[i];
                struct json_object *e = json_object_new_object();
                if (!e || json_object_array_add(a, e) < 0) {
                        json_object_put(e);
                        return NULL;
                }
                json_object_object_add(e, "hostPort", json_object_new_int(p->host_port));
                json_object_object_add(e, "containerPort", json_object_new_int(p->pod_port));
                if (json_add_string(e, "protocol", p->protocol) < 0 || (p->host_ip && json_add_string(e, "hostIP", p->host_ip) < 0))
                        return NULL;
        }
        json_object_object_add(rc, "portMappings", TAKE_PTR(a));
        return TAKE_PTR(rc);
}
