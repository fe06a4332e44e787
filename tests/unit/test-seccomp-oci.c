/* SPDX-License-Identifier: Apache-2.0 */
/* lib/seccomp/seccomp-oci.c: OCI seccomp profiles compiled and run (a
 * child loads each program and makes the calls it filters), bad and
 * absurd profiles refused; and what the shim makes of a spec's seccomp,
 * maskedPaths, readonlyPaths, sysctls and namespaces (oci-spec-map.c),
 * down to the app's unit (app-unit.c). */
#include <errno.h>
#include <fcntl.h>
#include <linux/seccomp.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "basic/strv.h"
#include "manifest/pod-manifest.h"
#include "seccomp/seccomp-oci.h"
#include "shim/oci-spec-map.h"
#include "unit/app-isolators.h"
#include "unit/app-options.h"
#include "tests.h"

static void compile_ok(const char *text, SeccompProgram *p) {
        Error *err = NULL;
        int r = seccomp_oci_compile_text(text, strlen(text), "profile", p, &err);
        if (r < 0)
                fprintf(stderr, "%s: %s\n", text, err ? err->msg : "?");
        ASSERT_EQ_INT(r, 0);
        ASSERT(p->n_insns > 0 && p->insns);
}

static char *compile_error(const char *text, int code) {
        SeccompProgram p = {};
        Error *err = NULL;
        int r = seccomp_oci_compile_text(text, strlen(text), "profile", &p, &err);
        if (r != code)
                fprintf(stderr, "%.200s: got %d (%s)\n", text, r, err ? err->msg : "");
        ASSERT_EQ_INT(r, code);
        ASSERT(err && !p.insns);
        char *msg = strdup(err->msg);
        error_free(err);
        return msg;
}

/* Runs check() in a child that loaded p (with NoNewPrivileges, as an
 * unprivileged process must); its exit status. */
static int run_filtered(const SeccompProgram *p, int (*check)(void)) {
        pid_t pid = fork();
        ASSERT(pid >= 0);
        if (pid == 0) {
                struct sock_fprog prog = { .len = (unsigned short) p->n_insns, .filter = p->insns };
                if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 ||
                    syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, p->flags, &prog) < 0)
                        _exit(100);
                _exit(check());
        }
        int status;
        ASSERT_EQ_INT(waitpid(pid, &status, 0), pid);
        return WIFEXITED(status) ? WEXITSTATUS(status) : 200 + WTERMSIG(status);
}

static char scratch[64];

/* mkdir denied with EPERM, rmdir with ENOSPC (errnoRet), kill with
 * signal 0 (an argument) denied, any other signal let through. */
static int check_denials(void) {
        char d[96];
        snprintf(d, sizeof(d), "%s/x", scratch);
        if (mkdir(d, 0700) == 0 || errno != EPERM)
                return 1;
        if (rmdir(scratch) == 0 || errno != ENOSPC)
                return 2;
        if (kill(getpid(), 0) == 0 || errno != EPERM)
                return 3;
        if (kill(getpid(), SIGCONT) < 0)
                return 4;
        if (getpid() <= 0)
                return 5;
        return 0;
}

static void test_compile_and_run(void) {
        snprintf(scratch, sizeof(scratch), "/tmp/test-seccomp-oci.XXXXXX");
        ASSERT(mkdtemp(scratch));
        SeccompProgram p = {};
        compile_ok("{\"defaultAction\": \"SCMP_ACT_ALLOW\", \"architectures\": [\"SCMP_ARCH_X86_64\", \"SCMP_ARCH_X86\", "
                   "\"SCMP_ARCH_X32\"], \"syscalls\": ["
                   "{\"names\": [\"mkdir\", \"mkdirat\"], \"action\": \"SCMP_ACT_ERRNO\"},"
                   "{\"names\": [\"rmdir\", \"unlinkat\"], \"action\": \"SCMP_ACT_ERRNO\", \"errnoRet\": 28},"
                   "{\"names\": [\"kill\"], \"action\": \"SCMP_ACT_ERRNO\", \"args\": [{\"index\": 1, \"value\": 0, "
                   "\"op\": \"SCMP_CMP_EQ\"}]},"
                   "{\"names\": [\"getpid\", \"no_such_call_in_any_kernel\"], \"action\": \"SCMP_ACT_ALLOW\"}]}",
                   &p);
        ASSERT_EQ_INT(run_filtered(&p, check_denials), 0);
        /* The same calls unfiltered: the check fails at once. */
        SeccompProgram allow = {};
        compile_ok("{\"defaultAction\": \"SCMP_ACT_ALLOW\"}", &allow);
        ASSERT_EQ_INT(run_filtered(&allow, check_denials), 1);
        char d[96];
        snprintf(d, sizeof(d), "%s/x", scratch);
        (void) rmdir(d);
        ASSERT_EQ_INT(rmdir(scratch), 0);

        /* As app-domain takes it. */
        _cleanup_free_ char *text = NULL;
        ASSERT_EQ_INT(seccomp_program_to_text(&p, &text), 0);
        ASSERT(startswith(text, "0:"));
        ASSERT_EQ_INT(strlen(text), 2 + p.n_insns * 16);
        seccomp_program_done(&p);
        seccomp_program_done(&allow);

        /* A deny-by-default profile: only what it lists. */
        compile_ok("{\"defaultAction\": \"SCMP_ACT_ERRNO\", \"defaultErrnoRet\": 38, \"flags\": "
                   "[\"SECCOMP_FILTER_FLAG_LOG\"], \"syscalls\": [{\"names\": [\"exit_group\", \"exit\", \"getpid\", "
                   "\"kill\"], \"action\": \"SCMP_ACT_ALLOW\"}]}", &p);
        ASSERT_EQ_INT(p.flags, SECCOMP_FILTER_FLAG_LOG);
        seccomp_program_done(&p);
}

static void test_bad_profiles(void) {
        static const struct {
                const char *text;
                const char *needle;
        } cases[] = {
                { "[]", "expected an object" },
                { "{}", "defaultAction" },
                { "{\"defaultAction\": \"SCMP_ACT_MAYBE\"}", "SCMP_ACT_MAYBE" },
                { "{\"defaultAction\": \"SCMP_ACT_ALLOW\", \"extra\": 1}", "\"extra\"" },
                { "{\"defaultAction\": \"SCMP_ACT_ALLOW\", \"architectures\": [\"SCMP_ARCH_PDP11\"]}", "SCMP_ARCH_PDP11" },
                { "{\"defaultAction\": \"SCMP_ACT_ALLOW\", \"flags\": [\"SECCOMP_FILTER_FLAG_NEW_LISTENER\"]}", "flags[0]" },
                { "{\"defaultAction\": \"SCMP_ACT_ALLOW\", \"syscalls\": [{\"names\": [\"mk dir\"], \"action\": "
                  "\"SCMP_ACT_ERRNO\"}]}", "syscalls[0].names[0]: \"mk dir\" is not a system call name" },
                { "{\"defaultAction\": \"SCMP_ACT_ALLOW\", \"syscalls\": [{\"names\": [\"mkdir\", \"MKDIR\"], \"action\": "
                  "\"SCMP_ACT_ERRNO\"}]}", "names[1]" },
                { "{\"defaultAction\": \"SCMP_ACT_ALLOW\", \"syscalls\": [{\"names\": [], \"action\": \"SCMP_ACT_ERRNO\"}]}",
                  "empty" },
                { "{\"defaultAction\": \"SCMP_ACT_ALLOW\", \"syscalls\": [{\"names\": [\"mkdir\"], \"action\": "
                  "\"SCMP_ACT_EXPLODE\"}]}", "syscalls[0].action" },
                { "{\"defaultAction\": \"SCMP_ACT_ALLOW\", \"syscalls\": [{\"names\": [\"mkdir\"], \"action\": "
                  "\"SCMP_ACT_ERRNO\", \"errnoRet\": 5000}]}", "errnoRet" },
                { "{\"defaultAction\": \"SCMP_ACT_ALLOW\", \"syscalls\": [{\"names\": [\"mkdir\"], \"action\": "
                  "\"SCMP_ACT_ERRNO\", \"args\": [{\"index\": 6, \"value\": 0, \"op\": \"SCMP_CMP_EQ\"}]}]}", "args[0].index" },
                { "{\"defaultAction\": \"SCMP_ACT_ALLOW\", \"syscalls\": [{\"names\": [\"mkdir\"], \"action\": "
                  "\"SCMP_ACT_ERRNO\", \"args\": [{\"index\": 0, \"value\": -1, \"op\": \"SCMP_CMP_EQ\"}]}]}", "args[0].value" },
                { "{\"defaultAction\": \"SCMP_ACT_ALLOW\", \"syscalls\": [{\"names\": [\"mkdir\"], \"action\": "
                  "\"SCMP_ACT_ERRNO\", \"args\": [{\"index\": 0, \"value\": 1, \"op\": \"SCMP_CMP_ROUGHLY\"}]}]}", "args[0].op" },
                { "{\"defaultAction\": \"SCMP_ACT_ALLOW\", \"syscalls\": [{\"names\": [\"mkdir\"], \"action\": "
                  "\"SCMP_ACT_ERRNO\", \"includes\": {}}]}", "\"includes\"" },
                { "{\"defaultAction\": \"SCMP_ACT_ALLOW\", \"syscalls\": [{\"names\": [\"mk\\u0000dir\"], \"action\": "
                  "\"SCMP_ACT_ERRNO\"}]}", "" },
        };
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                _cleanup_free_ char *msg = NULL;
                SeccompProgram p = {};
                Error *err = NULL;
                int r = seccomp_oci_compile_text(cases[i].text, strlen(cases[i].text), "profile", &p, &err);
                if (r >= 0 || !err || !strstr(err->msg, cases[i].needle))
                        fprintf(stderr, "case %zu: %d %s\n", i, r, err ? err->msg : "(no error)");
                ASSERT(r < 0 && err);
                ASSERT_CONTAINS(err->msg, cases[i].needle);
                error_free(err);
        }
        /* A listener is the host's business: not supported, said so. */
        _cleanup_free_ char *m1 = compile_error("{\"defaultAction\": \"SCMP_ACT_NOTIFY\"}", -EOPNOTSUPP);
        _cleanup_free_ char *m2 = compile_error("{\"defaultAction\": \"SCMP_ACT_ALLOW\", \"listenerPath\": \"/run/x\"}",
                                                -EOPNOTSUPP);
        ASSERT_CONTAINS(m2, "listenerPath");
}

/* Absurd profiles, refused without compiling them: 10^6 names in one
 * rule, 5000 rules. */
static void test_absurd_profiles(void) {
        size_t n = 1000000;
        char *big = malloc(64 + n * 10), *o = big;
        ASSERT(big);
        o += sprintf(o, "{\"defaultAction\": \"SCMP_ACT_ALLOW\", \"syscalls\": [{\"action\": \"SCMP_ACT_ERRNO\", \"names\": [");
        for (size_t i = 0; i < n; i++)
                o += sprintf(o, "%s\"mkdir\"", i ? "," : "");
        o += sprintf(o, "]}]}");
        struct timespec a, b;
        clock_gettime(CLOCK_MONOTONIC, &a);
        _cleanup_free_ char *m1 = compile_error(big, -EFBIG);
        (void) m1;
        /* Below the size bound: 400 000 names. */
        big[0] = 0;
        o = big + sprintf(big, "{\"defaultAction\": \"SCMP_ACT_ALLOW\", \"syscalls\": [{\"action\": \"SCMP_ACT_ERRNO\", \"names\": [");
        for (size_t i = 0; i < 400000; i++)
                o += sprintf(o, "%s\"dup\"", i ? "," : "");
        o += sprintf(o, "]}]}");
        _cleanup_free_ char *m2 = compile_error(big, -EINVAL);
        ASSERT_CONTAINS(m2, "more than 8192 names");
        o = big + sprintf(big, "{\"defaultAction\": \"SCMP_ACT_ALLOW\", \"syscalls\": [");
        for (size_t i = 0; i < 5000; i++)
                o += sprintf(o, "%s{\"names\":[\"dup\"],\"action\":\"SCMP_ACT_LOG\"}", i ? "," : "");
        o += sprintf(o, "]}");
        _cleanup_free_ char *m3 = compile_error(big, -EINVAL);
        ASSERT_CONTAINS(m3, "more than 4096 entries");
        clock_gettime(CLOCK_MONOTONIC, &b);
        printf("three absurd profiles refused in %.0f ms\n",
               (double) (b.tv_sec - a.tv_sec) * 1e3 + (double) (b.tv_nsec - a.tv_nsec) / 1e6);
        free(big);
}

static OciSpec *spec(const char *linux_json) {
        _cleanup_free_ char *text = NULL;
        ASSERT(asprintf(&text, "{\"ociVersion\": \"1.1.0\", \"process\": {\"args\": [\"/bin/sh\"], \"cwd\": \"/\", "
                               "\"user\": {\"uid\": 1000, \"gid\": 1000}}, \"root\": {\"path\": \"rootfs\"}, "
                               "\"linux\": %s}", linux_json) > 0);
        OciSpec *s = NULL;
        Error *err = NULL;
        int r = oci_spec_parse(text, strlen(text), &s, &err);
        if (r < 0)
                fprintf(stderr, "%s: %s\n", text, err->msg);
        ASSERT_EQ_INT(r, 0);
        return s;
}

#define NAMESPACES "\"namespaces\": [{\"type\": \"pid\"}, {\"type\": \"ipc\"}, {\"type\": \"mount\"}, " \
                   "{\"type\": \"network\", \"path\": \"/var/run/netns/cni-1\"}]"

static char *app_error(const char *linux_json) {
        _cleanup_(oci_spec_freep) OciSpec *s = spec(linux_json);
        AppArgs a;
        Error *err = NULL;
        int r = oci_spec_app_args(s, "app", "/rootfs", NULL, NULL, NULL, &a, &err);
        if (r >= 0) {
                app_args_done(&a);
                return NULL;
        }
        char *m = strdup(err->msg);
        error_free(err);
        return m;
}

static char *pod_error(const char *linux_json) {
        _cleanup_(oci_spec_freep) OciSpec *s = spec(linux_json);
        PodArgs p;
        Error *err = NULL;
        int r = oci_spec_pod_args(s, "sb", &p, &err);
        if (r >= 0) {
                pod_args_done(&p);
                return NULL;
        }
        char *m = strdup(err->msg);
        error_free(err);
        return m;
}

static void test_spec_mapping(void) {
        /* A profile goes to the app as given; none is unconfined. */
        _cleanup_(oci_spec_freep) OciSpec *s = spec("{" NAMESPACES ", \"seccomp\": {\"defaultAction\": \"SCMP_ACT_ALLOW\", "
                                                    "\"syscalls\": [{\"names\": [\"mkdir\"], \"action\": \"SCMP_ACT_ERRNO\"}]}, "
                                                    "\"maskedPaths\": [\"/proc/kcore\", \"/secret\"], "
                                                    "\"readonlyPaths\": [\"/proc/sys\"]}");
        AppArgs a;
        ASSERT_EQ_INT(oci_spec_app_args(s, "app", "/rootfs", NULL, NULL, NULL, &a, NULL), 0);
        ASSERT(a.seccomp_profile && !a.seccomp_unconfined);
        ASSERT(strstr(a.seccomp_profile, "mkdir"));
        ASSERT(strv_contains(a.masked_paths, "/secret") && strv_contains(a.readonly_paths, "/proc/sys"));
        /* Through the isolators to the unit's lines. */
        struct json_object *list = NULL;
        ASSERT_EQ_INT(app_options_isolators(&a, "app", true, &list, NULL), 0);
        _cleanup_free_ PodIsolator *iso = calloc(json_object_array_length(list), sizeof(PodIsolator));
        for (size_t i = 0; i < json_object_array_length(list); i++) {
                struct json_object *o = json_object_array_get_idx(list, i);
                iso[i].name = json_object_get_string(json_object_object_get(o, "name"));
                iso[i].value = json_object_object_get(o, "value");
        }
        AppIsolation ai;
        Error *err = NULL;
        int r = app_isolation_parse(iso, json_object_array_length(list), "isolators", &ai, &err);
        if (r < 0)
                fprintf(stderr, "%s\n", err->msg);
        ASSERT_EQ_INT(r, 0);
        ASSERT(ai.seccomp_program && !ai.syscalls_allowed && !ai.syscalls_denied && !ai.syscalls_native_only);
        ASSERT(strv_contains(ai.masked_paths, "/secret") && strv_contains(ai.readonly_paths, "/proc/sys"));
        /* allowPrivilegeEscalation: unset in the spec is true. */
        ASSERT(a.allow_new_privileges);
        app_isolation_done(&ai);
        json_object_put(list);
        app_args_done(&a);

        _cleanup_(oci_spec_freep) OciSpec *u = spec("{" NAMESPACES "}");
        ASSERT_EQ_INT(oci_spec_app_args(u, "app", "/rootfs", NULL, NULL, NULL, &a, NULL), 0);
        ASSERT(!a.seccomp_profile && a.seccomp_unconfined);
        app_args_done(&a);

        /* A bad profile is refused at Create, naming it. */
        _cleanup_free_ char *m1 = app_error("{" NAMESPACES ", \"seccomp\": {\"defaultAction\": \"SCMP_ACT_ALLOW\", "
                                            "\"syscalls\": [{\"names\": [\"mk;dir\"], \"action\": \"SCMP_ACT_ERRNO\"}]}}");
        ASSERT_CONTAINS(m1, "linux.seccomp.syscalls[0].names[0]");
        /* hostPID, hostIPC: refused, named, for containers and sandboxes. */
        _cleanup_free_ char *m2 = app_error("{\"namespaces\": [{\"type\": \"ipc\"}, {\"type\": \"mount\"}]}");
        ASSERT_CONTAINS(m2, "hostPID");
        _cleanup_free_ char *m3 = pod_error("{\"namespaces\": [{\"type\": \"pid\"}, {\"type\": \"mount\"}]}");
        ASSERT_CONTAINS(m3, "hostIPC");
        /* A pid namespace of the sandbox's (shareProcessNamespace) is the pod's. */
        _cleanup_free_ char *m4 = app_error("{\"namespaces\": [{\"type\": \"pid\", \"path\": \"/proc/1/ns/pid\"}, "
                                            "{\"type\": \"ipc\"}]}");
        ASSERT(!m4);
        /* Sysctls: net.* in the sandbox's own network namespace; others refused by name. */
        _cleanup_free_ char *m5 = pod_error("{" NAMESPACES ", \"sysctl\": {\"net.ipv4.ip_unprivileged_port_start\": \"0\", "
                                            "\"net.ipv4.conf.eth0/100.rp_filter\": \"1\"}}");
        ASSERT(!m5);
        _cleanup_free_ char *m6 = pod_error("{" NAMESPACES ", \"sysctl\": {\"kernel.core_pattern\": \"|/x\"}}");
        ASSERT_CONTAINS(m6, "\"kernel.core_pattern\" is not a namespaced sysctl");
        _cleanup_free_ char *m7 = pod_error("{" NAMESPACES ", \"sysctl\": {\"kernel.shmmax\": \"1\", "
                                            "\"kernel.shm_rmid_forced\": \"1\", \"fs.mqueue.msg_max\": \"20\"}}");
        ASSERT(!m7);
        _cleanup_free_ char *m12 = pod_error("{" NAMESPACES ", \"sysctl\": {\"kernel.hostname\": \"x\"}}");
        ASSERT_CONTAINS(m12, "kernel.hostname");
        _cleanup_free_ char *m13 = pod_error("{" NAMESPACES ", \"sysctl\": {\"net.core.somaxconn\": \"1\\n2\"}}");
        ASSERT_CONTAINS(m13, "one line");
        _cleanup_free_ char *m8 = pod_error("{\"namespaces\": [{\"type\": \"pid\"}, {\"type\": \"ipc\"}], "
                                            "\"sysctl\": {\"net.ipv4.ip_forward\": \"1\"}}");
        ASSERT_CONTAINS(m8, "hostNetwork");
        _cleanup_free_ char *m9 = pod_error("{" NAMESPACES ", \"sysctl\": {\"net.ipv4.conf...rp_filter\": \"1\"}}");
        ASSERT_CONTAINS(m9, "not a sysctl name");
        _cleanup_free_ char *m10 = pod_error("{" NAMESPACES ", \"sysctl\": {\"net.ipv4.conf.eth0/../x\": \"1\"}}");
        ASSERT_CONTAINS(m10, "not a sysctl name");
        _cleanup_free_ char *m11 = app_error("{" NAMESPACES ", \"sysctl\": {\"net.ipv4.ip_forward\": \"1\"}}");
        ASSERT_CONTAINS(m11, "only those of its pod sandbox");
}

/* The isolators refuse what the shim could not have sent. */
static void test_isolators(void) {
        static const char *const bad[] = {
                "{\"unconfined\": false}",
                "{\"profile\": {\"defaultAction\": \"SCMP_ACT_ALLOW\"}, \"unconfined\": true}",
                "{}",
                "{\"profile\": {\"defaultAction\": \"SCMP_ACT_NOPE\"}}",
        };
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                PodIsolator iso = { .name = "sdpod/seccomp-oci", .value = json_tokener_parse(bad[i]) };
                AppIsolation ai;
                Error *err = NULL;
                ASSERT(iso.value);
                ASSERT(app_isolation_parse(&iso, 1, "isolators", &ai, &err) < 0);
                ASSERT_CONTAINS(err->msg, "isolators[0].value");
                error_free(err);
                json_object_put(iso.value);
        }
        static const char *const bad_paths[] = {
                "{\"masked\": [\"relative\"]}", "{\"masked\": [\"/a b\"]}", "{\"readonly\": [\"/x/../y\"]}",
                "{\"readonly\": [\"/\"]}", "{\"masked\": [\"/%h\"]}", "{\"other\": []}",
        };
        for (size_t i = 0; i < ELEMENTSOF(bad_paths); i++) {
                PodIsolator iso = { .name = "sdpod/masked-paths", .value = json_tokener_parse(bad_paths[i]) };
                AppIsolation ai;
                Error *err = NULL;
                ASSERT(iso.value);
                if (app_isolation_parse(&iso, 1, "isolators", &ai, &err) >= 0) {
                        fprintf(stderr, "accepted: %s\n", bad_paths[i]);
                        ASSERT(false);
                }
                error_free(err);
                json_object_put(iso.value);
        }
        /* An OCI profile and a seccomp isolator of appc's exclude each other. */
        PodIsolator two[2] = {
                { .name = "os/linux/seccomp-remove-set", .value = json_tokener_parse("{\"set\": [\"mkdir\"]}") },
                { .name = "sdpod/seccomp-oci", .value = json_tokener_parse("{\"unconfined\": true}") },
        };
        AppIsolation ai;
        Error *err = NULL;
        ASSERT(app_isolation_parse(two, 2, "isolators", &ai, &err) < 0);
        ASSERT_CONTAINS(err->msg, "conflicts");
        error_free(err);
        json_object_put(two[0].value);
        json_object_put(two[1].value);
}

int main(void) {
        RUN(test_compile_and_run);
        RUN(test_bad_profiles);
        RUN(test_absurd_profiles);
        RUN(test_spec_mapping);
        RUN(test_isolators);
        return 0;
}
