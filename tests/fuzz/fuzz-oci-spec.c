/* SPDX-License-Identifier: Apache-2.0 */
/* A bundle's config.json (shim/oci-spec.h), which says what whoever asked
 * containerd wants, and its mapping onto an app and a pod
 * (shim/oci-spec-map.h); and the same bytes as an Update's resources
 * (oci_resources_parse()). What is accepted must hold what the headers
 * promise: absolute mount destinations and cwd, non-empty args; an app
 * that is made has valid paths, and its name is an ACName. */
#include "fuzz.h"
#include "manifest/pod-manifest.h"
#include "shim/oci-spec-map.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        /* The same bytes as what an UpdateTaskRequest carries: a
         * LinuxResources alone. */
        OciSpec *res = NULL;
        Error *rerr = NULL;
        if (oci_resources_parse((const char *) data, size, &res, &rerr) >= 0)
                oci_spec_free(res);
        fuzz_error_done("resources", rerr);

        OciSpec *s = NULL;
        Error *err = NULL;
        if (oci_spec_parse((const char *) data, size, &s, &err) < 0) {
                fuzz_error_done("spec", err);
                return 0;
        }
        for (size_t i = 0; i < s->n_mounts; i++)
                if (s->mounts[i].destination[0] != '/')
                        fuzz_fail("mount destination \"%s\" accepted", s->mounts[i].destination);
        if (s->process.cwd && s->process.cwd[0] != '/')
                fuzz_fail("cwd \"%s\" accepted", s->process.cwd);
        if (s->process.args && !s->process.args[0])
                fuzz_fail("empty args accepted");
        (void) oci_spec_task_kind(s, NULL);

        PodArgs p;
        err = NULL;
        if (oci_spec_pod_args(s, "fuzz", &p, &err) >= 0)
                pod_args_done(&p);
        fuzz_error_done("pod", err);

        AppArgs a;
        err = NULL;
        if (oci_spec_app_args(s, "app", "/rootfs", NULL, "/out", "", &a, &err) >= 0) {
                if (!a.exec || !a.rootfs || (a.stderr_path && !*a.stderr_path))
                        fuzz_fail("app without program or root");
                for (size_t i = 0; i < a.n_host_binds; i++)
                        if (a.host_binds[i].source[0] != '/' || a.host_binds[i].destination[0] != '/')
                                fuzz_fail("bind %s:%s accepted", a.host_binds[i].source, a.host_binds[i].destination);
                app_args_done(&a);
        }
        fuzz_error_done("app", err);

        char name[OCI_APP_NAME_MAX];
        oci_spec_app_name(s, (const char *) "0123456789abcdef0123", true, name);
        if (!pod_app_name_is_valid(name))
                fuzz_fail("app name \"%s\"", name);
        oci_spec_free(s);
        return 0;
}
