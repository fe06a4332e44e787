/* SPDX-License-Identifier: Apache-2.0 */
/* lib/shim/oci-spec.c and oci-spec-map.c: bundle config.json files as ctr
 * and the CRI write them (tests/unit/oci-spec/), and bad ones. */
#include <fcntl.h>
#include <limits.h>

#include "basic/fs.h"
#include "basic/strv.h"
#include "shim/oci-spec-map.h"
#include "tests.h"

static OciSpec *load(const char *name) {
        const char *root = getenv("SDPOD_SOURCE_ROOT");
        ASSERT(root);
        char path[PATH_MAX];
        snprintf(path, sizeof(path), "%s/tests/unit/oci-spec/%s", root, name);
        _cleanup_free_ char *data = NULL;
        size_t size;
        ASSERT_EQ_INT(read_file(path, OCI_SPEC_MAX, &data, &size, NULL), 0);
        OciSpec *s = NULL;
        Error *err = NULL;
        int r = oci_spec_parse(data, size, &s, &err);
        if (r < 0)
                fprintf(stderr, "%s: %s\n", name, err ? err->msg : "?");
        ASSERT_EQ_INT(r, 0);
        return s;
}

/* The error of parsing text, which must fail with code. */
static char *parse_error(const char *text, int code) {
        OciSpec *s = NULL;
        Error *err = NULL;
        int r = oci_spec_parse(text, strlen(text), &s, &err);
        if (r != code)
                fprintf(stderr, "%s: got %d (%s)\n", text, r, err ? err->msg : "");
        ASSERT_EQ_INT(r, code);
        ASSERT(!s && err);
        char *msg = strdup(err->msg);
        error_free(err);
        return msg;
}

static void test_ctr_default(void) {
        _cleanup_oci_spec_ OciSpec *s = load("ctr-default.json");
        ASSERT_STREQ(s->oci_version, "1.0.2-dev");
        ASSERT(s->have_process && !s->process.terminal && !s->process.args);
        ASSERT_STREQ(s->process.cwd, "/");
        ASSERT_EQ_INT(s->process.n_rlimits, 1);
        ASSERT_STREQ(s->process.rlimits[0].type, "RLIMIT_NOFILE");
        ASSERT_EQ_INT(s->process.rlimits[0].soft, 1024);
        ASSERT(s->process.no_new_privileges);
        ASSERT(strv_contains(s->process.cap_bounding, "CAP_NET_RAW"));
        ASSERT_STREQ(s->root_path, "rootfs");
        ASSERT_EQ_INT(s->n_mounts, 7);
        ASSERT(oci_spec_namespace(s, "network") && !oci_spec_namespace(s, "network")->path);
        ASSERT(!oci_spec_namespace(s, "user"));
        ASSERT_EQ_INT(strv_length(s->device_allow), 0);
        ASSERT_EQ_INT(oci_spec_task_kind(s, NULL), OCI_TASK_PLAIN);

        /* ctr run gives the args; here the spec has none. */
        AppArgs a;
        Error *err = NULL;
        ASSERT_EQ_INT(oci_spec_app_args(s, "t", "/run/b/rootfs", NULL, NULL, NULL, &a, &err), -EINVAL);
        ASSERT_CONTAINS(err->msg, "no process");
        error_free(TAKE_PTR(err));

        char *args[] = { "/bin/echo", "hi", NULL };
        s->process.args = strv_copy(args);
        ASSERT_EQ_INT(oci_spec_app_args(s, "t", "/run/b/rootfs", "", "/run/fifo/out", "/run/fifo/err", &a, NULL), 0);
        ASSERT_STREQ(a.name, "t");
        ASSERT_STREQ(a.rootfs, "/run/b/rootfs");
        ASSERT(!a.image);
        ASSERT_STREQ(a.exec, "/bin/echo");
        ASSERT(a.have_args && strv_length(a.args) == 1);
        ASSERT_STREQ(a.args[0], "hi");
        ASSERT_STREQ(a.user, "0");
        ASSERT_STREQ(a.group, "0");
        ASSERT(!a.stdin_path);
        ASSERT_STREQ(a.stdout_path, "/run/fifo/out");
        ASSERT_STREQ(a.stderr_path, "/run/fifo/err");
        ASSERT(strv_contains(a.cap_drop, "ALL") && strv_contains(a.cap_add, "CAP_NET_RAW"));
        ASSERT_EQ_INT(strv_length(a.rlimits), 1);
        ASSERT_STREQ(a.rlimits[0], "nofile=1024:1024");
        ASSERT(!a.allow_new_privileges);
        /* /proc, /dev, /sys, /run...: every app has them */
        ASSERT_EQ_INT(a.n_host_binds, 0);
        ASSERT(!a.tmpfs);
        app_args_done(&a);

        /* The pod: no network namespace path, a private one: none. */
        PodArgs p;
        ASSERT_EQ_INT(oci_spec_pod_args(s, "my-task", &p, NULL), 0);
        ASSERT(p.mutable_pod && p.keep_on_app_failure && p.no_private_users);
        ASSERT_STREQ(p.name, "my-task");
        ASSERT_EQ_INT(p.n_apps, 0);
        pod_args_done(&p);

        /* No network namespace at all: the host's. Not a pod name: none. */
        free(s->namespaces[4].type);
        s->namespaces[4].type = strdup("time");
        ASSERT_EQ_INT(oci_spec_pod_args(s, "_bad name_", &p, NULL), 0);
        ASSERT(!p.name);
        pod_args_done(&p);

        /* A terminal is refused, clearly. */
        s->process.terminal = true;
        ASSERT_EQ_INT(oci_spec_app_args(s, "t", "/r", NULL, NULL, NULL, &a, &err), -EOPNOTSUPP);
        ASSERT_CONTAINS(err->msg, "process.terminal");
        error_free(err);
}

/* The CRI's sandbox and containers, as containerd 1.6.20 wrote them. */
static void test_cri_captured(void) {
        _cleanup_oci_spec_ OciSpec *sb = load("cri-sandbox.json"), *c = load("cri-container.json"),
                                   *tty = load("cri-container-tty.json");
        const char *sandbox_id = NULL;
        ASSERT_EQ_INT(oci_spec_task_kind(sb, &sandbox_id), OCI_TASK_SANDBOX);
        ASSERT(!sandbox_id);
        ASSERT_EQ_INT(oci_spec_task_kind(c, &sandbox_id), OCI_TASK_CONTAINER);
        ASSERT_STREQ(sandbox_id, "debfa13def8d611ca2e5035334bdac1a400a60ad367710fe5b269f4b46c8b1aa");

        PodArgs p;
        Error *err = NULL;
        ASSERT_EQ_INT(oci_spec_pod_args(sb, sandbox_id, &p, &err), 0);
        ASSERT_STREQ(p.name, sandbox_id);
        ASSERT_STREQ(p.net.hostname, "web-pod");
        ASSERT(p.mutable_pod && p.no_private_users);
        pod_args_done(&p);
        /* The sandbox's own process (the pause image's) maps too. */
        AppArgs a;
        ASSERT_EQ_INT(oci_spec_app_args(sb, "pause", "/run/s/rootfs", NULL, NULL, NULL, &a, NULL), 0);
        ASSERT_STREQ(a.exec, "/bin/sleep");
        app_args_done(&a);

        ASSERT_EQ_INT(oci_spec_app_args(c, "web", "/run/containerd/x/rootfs", NULL, "/run/containerd/fifo/o",
                                        "/run/containerd/fifo/e", &a, &err), 0);
        ASSERT_STREQ(a.exec, "/bin/sh");
        ASSERT_EQ_INT(strv_length(a.args), 2);
        ASSERT_STREQ(a.user, "1000");
        ASSERT_STREQ(a.group, "1000");
        ASSERT_EQ_INT(strv_length(a.supplementary_groups), 1);
        ASSERT_STREQ(a.working_dir, "/home/app");
        ASSERT(strv_contains(a.environment, "WHO=web"));
        ASSERT(!a.memory && !a.cpus && !a.pids_limit && !a.rlimits);
        /* Kubernetes' default, allowPrivilegeEscalation: as runc does. */
        ASSERT(a.allow_new_privileges);
        /* The sandbox's hostname, hosts and resolv.conf; not /dev/shm,
         * which every app has of its own. */
        ASSERT_EQ_INT(a.n_host_binds, 3);
        ASSERT_STREQ(a.host_binds[0].destination, "/etc/hostname");
        ASSERT_STREQ(a.host_binds[2].destination, "/etc/resolv.conf");
        ASSERT(!a.host_binds[2].read_only);
        app_args_done(&a);

        ASSERT_EQ_INT(oci_spec_app_args(tty, "tty", "/r", NULL, NULL, NULL, &a, &err), -EOPNOTSUPP);
        ASSERT_CONTAINS(err->msg, "terminal");
        error_free(TAKE_PTR(err));
}

/* What the CRI lists for a pod without hostPID or hostIPC. */
#define NAMESPACES "\"namespaces\": [{\"type\": \"pid\"}, {\"type\": \"ipc\"}]"

static void test_cri(void) {
        _cleanup_oci_spec_ OciSpec *sb = load("cri-sandbox-handmade.json"), *c = load("cri-container-volumes.json");
        const char *sandbox_id = NULL;
        ASSERT_EQ_INT(oci_spec_task_kind(sb, &sandbox_id), OCI_TASK_SANDBOX);
        ASSERT_EQ_INT(oci_spec_task_kind(c, &sandbox_id), OCI_TASK_CONTAINER);
        ASSERT(sb->have_seccomp && !c->have_seccomp);
        ASSERT_EQ_INT(sb->process.oom_score_adj, -998);

        PodArgs p;
        Error *err = NULL;
        ASSERT_EQ_INT(oci_spec_pod_args(sb, "5a3c0e8e5d1b47f7b3d4c0b4f3f57a6e9d7c1b2a3f4e5d6c7b8a9f0e1d2c3b4a", &p, &err), 0);
        ASSERT_STREQ(p.net.hostname, "web-0");
        pod_args_done(&p);

        AppArgs a;
        ASSERT_EQ_INT(oci_spec_app_args(c, "web", "/run/containerd/x/rootfs", NULL, "/run/containerd/fifo/o",
                                        "/run/containerd/fifo/e", &a, &err), 0);
        ASSERT_STREQ(a.user, "1000");
        ASSERT_STREQ(a.group, "3000");
        ASSERT_EQ_INT(strv_length(a.supplementary_groups), 2);
        ASSERT_STREQ(a.supplementary_groups[1], "2000");
        ASSERT_STREQ(a.working_dir, "/srv");
        ASSERT(strv_contains(a.environment, "GREETING=hello world"));
        ASSERT_STREQ(a.memory, "134217728");
        ASSERT_STREQ(a.cpus, "0.500");
        ASSERT_STREQ(a.pids_limit, "100");
        ASSERT_STREQ(a.rlimits[0], "nofile=1048576:1048576");
        /* hosts, termination-log, hostname, resolv.conf, the volume */
        ASSERT_EQ_INT(a.n_host_binds, 5);
        ASSERT_STREQ(a.host_binds[0].destination, "/etc/hosts");
        ASSERT(!a.host_binds[0].read_only);
        ASSERT_STREQ(a.host_binds[4].source, "/var/lib/kubelet/pods/0c1d/volumes/kubernetes.io~empty-dir/data");
        ASSERT(a.host_binds[4].read_only);
        ASSERT_EQ_INT(strv_length(a.tmpfs), 1);
        ASSERT_STREQ(a.tmpfs[0], "/cache:size=1048576k,mode=1777");
        app_args_done(&a);

        char name[OCI_APP_NAME_MAX];
        oci_spec_app_name(c, "9f8e7d6c5b4a39281706f5e4d3c2b1a0", true, name);
        ASSERT_STREQ(name, "web");
        oci_spec_app_name(c, "9f8e7d6c5b4a39281706f5e4d3c2b1a0", false, name);
        ASSERT_STREQ(name, "c-9f8e7d6c5b4a");
        oci_spec_app_name(NULL, "__--", false, name);
        ASSERT_STREQ(name, "c-task");
        ASSERT(pod_app_name_is_valid(name));

        /* What an app cannot get. */
        static const struct {
                const char *mutation;   /* a member to add to "linux" */
                const char *message;
        } refused[] = {
                { "\"sysctl\": {\"net.ipv4.ip_forward\": \"1\"}", "linux.sysctl: sysctls of a container" },
                { "\"namespaces\": [{\"type\": \"ipc\"}]", "hostPID" },
                { "\"uidMappings\": [{\"containerID\": 0, \"hostID\": 100000, \"size\": 65536}]", "linux.uidMappings" },
                { "\"devices\": [{\"path\": \"/dev/sda\", \"type\": \"b\", \"major\": 8, \"minor\": 0}]", "/dev/sda" },
                { "\"resources\": {\"devices\": [{\"allow\": true, \"access\": \"rwm\"}]}", "a privileged container" },
        };
        for (size_t i = 0; i < ELEMENTSOF(refused); i++) {
                char text[1024];
                snprintf(text, sizeof(text), "{\"process\": {\"args\": [\"/x\"]}, \"linux\": {" NAMESPACES ", %s}}",
                         refused[i].mutation);
                _cleanup_oci_spec_ OciSpec *s = NULL;
                ASSERT_EQ_INT(oci_spec_parse(text, strlen(text), &s, NULL), 0);
                ASSERT_EQ_INT(oci_spec_app_args(s, "x", "/r", NULL, NULL, NULL, &a, &err), -EOPNOTSUPP);
                ASSERT_CONTAINS(err->msg, refused[i].message);
                error_free(TAKE_PTR(err));
        }
        static const char *const other_mount =
                "{\"process\": {\"args\": [\"/x\"]}, \"linux\": {" NAMESPACES "}, \"mounts\": [{\"destination\": \"/m\", "
                "\"type\": \"nfs\", \"source\": \"h:/e\"}]}";
        _cleanup_oci_spec_ OciSpec *s = NULL;
        ASSERT_EQ_INT(oci_spec_parse(other_mount, strlen(other_mount), &s, NULL), 0);
        ASSERT_EQ_INT(oci_spec_app_args(s, "x", "/r", NULL, NULL, NULL, &a, &err), -EOPNOTSUPP);
        ASSERT_CONTAINS(err->msg, "type nfs");
        error_free(TAKE_PTR(err));
        /* The default device rules of ctr's spec are fine. */
        static const char *const std_devices =
                "{\"process\": {\"args\": [\"/x\"]}, \"linux\": {" NAMESPACES ", \"resources\": {\"devices\": ["
                "{\"allow\": false, \"access\": \"rwm\"}, {\"allow\": true, \"type\": \"c\", \"major\": 1, \"minor\": 3, \"access\": \"rwm\"},"
                "{\"allow\": true, \"type\": \"c\", \"major\": 136, \"access\": \"rwm\"}, {\"allow\": true, \"type\": \"b\", \"access\": \"m\"}]}}}";
        _cleanup_oci_spec_ OciSpec *d = NULL;
        ASSERT_EQ_INT(oci_spec_parse(std_devices, strlen(std_devices), &d, NULL), 0);
        ASSERT_EQ_INT(strv_length(d->device_allow), 3);
        ASSERT_STREQ(d->device_allow[1], "c 136:* rwm");
        ASSERT_EQ_INT(oci_spec_app_args(d, "x", "/r", NULL, NULL, NULL, &a, NULL), 0);
        app_args_done(&a);
}

static void test_bad(void) {
        static const struct {
                const char *text;
                const char *message;
        } bad[] = {
                { "[]", "expected a JSON object" },
                { "{\"process\": 1}", "\"process\"" },
                { "{\"process\": {\"args\": []}}", "args" },
                { "{\"process\": {\"args\": [1]}}", "args" },
                { "{\"process\": {\"cwd\": \"rel\"}}", "absolute" },
                { "{\"process\": {\"user\": {\"uid\": -1}}}", "uid" },
                { "{\"process\": {\"user\": {\"uid\": 4294967296}}}", "uid" },
                { "{\"process\": {\"oomScoreAdj\": 5000}}", "oomScoreAdj" },
                { "{\"process\": {\"rlimits\": [{\"type\": \"RLIMIT_NOFILE\", \"soft\": 2, \"hard\": 1}]}}", "soft" },
                { "{\"process\": {\"env\": [\"A=\\u0000B\"]}}", "NUL" },
                { "{\"root\": {}}", "path" },
                { "{\"mounts\": [{\"destination\": \"relative\"}]}", "absolute" },
                { "{\"mounts\": [{}]}", "destination" },
                { "{\"annotations\": {\"a\": 1}}", "not a string" },
                { "{\"linux\": {\"namespaces\": [{\"type\": \"network\"}, {\"type\": \"network\"}]}}", "second" },
                { "{\"linux\": {\"namespaces\": [{\"type\": \"network\", \"path\": \"rel\"}]}}", "absolute" },
                { "{} trailing", "trailing" },
        };
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                _cleanup_free_ char *msg = parse_error(bad[i].text, -EBADMSG);
                ASSERT_CONTAINS(msg, bad[i].message);
        }
        /* Bounded: larger than OCI_SPEC_MAX is refused unread. */
        size_t big = OCI_SPEC_MAX + 1;
        char *data = malloc(big);
        ASSERT(data);
        memset(data, ' ', big);
        OciSpec *s = NULL;
        ASSERT_EQ_INT(oci_spec_parse(data, big, &s, NULL), -EFBIG);
        free(data);
        /* Deep nesting: json-c's depth limit. */
        char deep[2100];
        size_t k = 0;
        k += (size_t) snprintf(deep, sizeof(deep), "{\"x\":");
        for (int i = 0; i < 1000; i++)
                deep[k++] = '[';
        deep[k] = 0;
        ASSERT_EQ_INT(oci_spec_parse(deep, k, &s, NULL), -EBADMSG);
        /* Unknown fields are named, not dropped silently; hooks are refused. */
        static const char *const hooks = "{\"process\": {\"args\": [\"/x\"]}, \"hooks\": {\"prestart\": []}, \"linux\": {\"intelRdt\": {}}}";
        ASSERT_EQ_INT(oci_spec_parse(hooks, strlen(hooks), &s, NULL), 0);
        ASSERT(strv_contains(s->ignored, "hooks") && strv_contains(s->ignored, "linux.intelRdt"));
        AppArgs a;
        Error *err = NULL;
        ASSERT_EQ_INT(oci_spec_app_args(s, "x", "/r", NULL, NULL, NULL, &a, &err), -EOPNOTSUPP);
        ASSERT_CONTAINS(err->msg, "hooks");
        error_free(err);
        oci_spec_free(s);
}

static void test_read_at(void) {
        char dir[] = "/tmp/test-oci-spec.XXXXXX";
        ASSERT(mkdtemp(dir));
        int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        ASSERT(fd >= 0);
        OciSpec *s = NULL;
        Error *err = NULL;
        /* A link planted as config.json is not followed. */
        ASSERT_EQ_INT(symlinkat("/etc/passwd", fd, OCI_SPEC_FILE), 0);
        ASSERT(oci_spec_read_at(fd, &s, &err) < 0);
        error_free(TAKE_PTR(err));
        ASSERT_EQ_INT(unlinkat(fd, OCI_SPEC_FILE, 0), 0);
        ASSERT_EQ_INT(write_file_atomic_at(fd, OCI_SPEC_FILE, "{\"hostname\": \"h\"}", 17, 0644, NULL), 0);
        ASSERT_EQ_INT(oci_spec_read_at(fd, &s, NULL), 0);
        ASSERT_STREQ(s->hostname, "h");
        oci_spec_free(s);
        ASSERT_EQ_INT(unlinkat(fd, OCI_SPEC_FILE, 0), 0);
        close(fd);
        ASSERT_EQ_INT(rmdir(dir), 0);
}

int main(void) {
        RUN(test_ctr_default);
        RUN(test_cri_captured);
        RUN(test_cri);
        RUN(test_bad);
        RUN(test_read_at);
        return 0;
}
