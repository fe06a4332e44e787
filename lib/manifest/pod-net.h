/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* A pod's network settings (sdpod(1) NETWORKING, sdpod-manifest(5)): which
 * network namespace the pod gets and what it is told about names. They live
 * in the pod manifest, so that every app, those podapp adds later included,
 * joins what the pod (the sandbox) was given:
 *
 *   sdpod/net           "default" (also when absent), "none", "host",
 *                       "ns:PATH", or NAME[:K=V;K=V...][,NAME...]: CNI
 *                       networks, each with the CNI_ARGS given
 *   sdpod/dns           nameserver addresses, space-separated, or "host"
 *   sdpod/dns-search    search domains, space-separated
 *   sdpod/dns-options   resolv.conf options, space-separated
 *   sdpod/hostname      the pod's host name
 *   sdpod/hosts-entries "IP=NAME" entries, space-separated
 *   sdpod/conntrack-limit  the host conntrack entries each address of the
 *                       pod may make (net/conntrack-limit.h), 0 to
 *                       CONNTRACK_LIMIT_MAX; 0: unbounded; absent: the
 *                       default, POD_NET_CONNTRACK_LIMIT_DEFAULT
 *   ports[]             published ports (pod-manifest.h's PodPort)
 *
 * The command line (sdpod prepare and run, podapp sandbox) spells them
 * --net=, --dns=, --dns-search=, --dns-option=, --hostname=,
 * --hosts-entry=, --conntrack-limit= and --port=; each value is checked when it is given, and
 * the whole when the manifest is made. */

#include <stdbool.h>
#include <stddef.h>

#include "basic/error.h"
#include "manifest/pod-manifest.h"

#define POD_ANNOTATION_NET "sdpod/net"
#define POD_ANNOTATION_DNS "sdpod/dns"
#define POD_ANNOTATION_DNS_SEARCH "sdpod/dns-search"
#define POD_ANNOTATION_DNS_OPTIONS "sdpod/dns-options"
#define POD_ANNOTATION_HOSTNAME "sdpod/hostname"
#define POD_ANNOTATION_HOSTS_ENTRIES "sdpod/hosts-entries"
#define POD_ANNOTATION_CONNTRACK_LIMIT "sdpod/conntrack-limit"
/* The same numbers as net/conntrack-limit.h's, which comes after. */
#define POD_NET_CONNTRACK_LIMIT_DEFAULT 8192U
#define POD_NET_CONNTRACK_LIMIT_MAX (1U << 24)

#define POD_NET_DEFAULT "default"

typedef enum PodNetMode {
        POD_NET_CNI,    /* a namespace of its own, on CNI networks */
        POD_NET_NONE,   /* a namespace of its own with only lo */
        POD_NET_HOST,   /* the host's namespace */
        POD_NET_NS,     /* a namespace someone else made */
} PodNetMode;

/* One CNI network a pod is on. */
typedef struct PodNetwork {
        char *name;     /* the configuration list's name */
        char *args;     /* CNI_ARGS ("K=V;K=V"), or NULL */
} PodNetwork;

typedef struct PodNet {
        PodNetMode mode;
        PodNetwork *networks;   /* POD_NET_CNI: at least one */
        size_t n_networks;
        char *ns_path;          /* POD_NET_NS */
        char **dns;             /* addresses; NULL: from CNI, else the host's */
        bool dns_host;          /* --dns=host: the host's resolv.conf */
        char **dns_search, **dns_options;
        char *hostname;
        char **hosts_entries;   /* "IP=NAME" */
        unsigned conntrack_limit; /* CNI: per address; 0: none */
} PodNet;

void pod_net_done(PodNet *n);

/* The options of the command line, as given (each checked on its own). */
typedef struct PodNetArgs {
        char *net;
        char **ports;
        char **dns, **dns_search, **dns_options;
        char *hostname;
        char **hosts_entries;
        char *conntrack_limit;
} PodNetArgs;

void pod_net_args_done(PodNetArgs *a);

/* Whether option (without "--") is one of the network options. */
bool pod_net_option_is(const char *option);
/* Checks and records one network option; errors name it (-EINVAL). */
int pod_net_args_add(PodNetArgs *a, const char *option, const char *value, Error **err);

/* Writes a's settings into m (annotations and ports), checked as a whole:
 * --port with --net=host, none or ns: is refused. */
int pod_net_args_apply(const PodNetArgs *a, PodManifest *m, Error **err);

/* The settings m holds; a bad value is -EBADMSG naming the annotation. */
int pod_net_from_manifest(const PodManifest *m, PodNet *ret, Error **err);

/* Parsers, shared with the tests: "--net=" values, "--port=" values
 * ([HOSTIP:]HOSTPORT:PODPORT[/tcp|/udp]; the port's strings are borrowed
 * from buf, which must hold at least strlen(s) + 1 bytes). */
int pod_net_parse(const char *s, PodNet *ret, Error **err);
int pod_port_parse(const char *s, char *buf, PodPort *ret, Error **err);
/* A host name: 1 to 63 of [A-Za-z0-9-] per label, labels joined by '.'. */
bool hostname_is_valid(const char *s);
