/* SPDX-License-Identifier: Apache-2.0 */
/* pod_manifest_parse(), the network settings read from a manifest, and the
 * mutations built on it. A pod manifest is
 * written by sdpod, but it lives in a directory root can edit, and "podapp"
 * reads it back to change it: whatever the parser accepts must survive being
 * written and read again unchanged, and a mutation must either succeed on a
 * valid manifest or leave it exactly as it was. */
#include "basic/strv.h"
#include "fuzz.h"
#include "manifest/pod-manifest.h"
#include "manifest/pod-net.h"

#define FUZZ_APP "fuzz-app"
#define ID "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

static void check_view(const PodManifest *m) {
        struct json_object *apps = NULL;
        if (!json_object_object_get_ex(m->json, "apps", &apps) || json_object_array_length(apps) != m->n_apps)
                fuzz_fail("the view has %zu apps, the document does not", m->n_apps);
        for (size_t i = 0; i < m->n_apps; i++) {
                const PodApp *a = &m->apps[i];
                if (!pod_app_name_is_valid(a->name))
                        fuzz_fail("apps[%zu]: invalid name accepted", i);
                if (pod_manifest_find_app(m, a->name) != a)
                        fuzz_fail("apps[%zu]: \"%s\" is not unique", i, a->name);
                if (strv_length(a->exec) == 0 || !a->exec[0][0])
                        fuzz_fail("apps[%zu]: empty exec accepted", i);
                if (!a->user || !a->group || !a->working_directory || a->working_directory[0] != '/')
                        fuzz_fail("apps[%zu]: user, group or workingDirectory missing or relative", i);
                for (size_t k = 0; k < a->n_environment; k++)
                        if (!a->environment[k].name[0] || strchr(a->environment[k].name, '='))
                                fuzz_fail("apps[%zu].environment[%zu]: bad name accepted", i, k);
                for (size_t k = 0; k < a->n_mounts; k++)
                        if (!pod_manifest_find_volume(m, a->mounts[k].volume) || a->mounts[k].path[0] != '/')
                                fuzz_fail("apps[%zu].mounts[%zu]: bad mount accepted", i, k);
        }
        for (size_t i = 0; i < m->n_volumes; i++) {
                const PodVolume *v = &m->volumes[i];
                if (pod_manifest_find_volume(m, v->name) != v)
                        fuzz_fail("volumes[%zu]: \"%s\" is not unique", i, v->name);
                if ((v->kind == POD_VOLUME_HOST) != (v->source != NULL) || v->mode > 07777)
                        fuzz_fail("volumes[%zu]: inconsistent volume accepted", i);
        }
        for (size_t i = 0; i < m->n_annotations; i++)
                if (!pod_identifier_is_valid(m->annotations[i].name))
                        fuzz_fail("annotations[%zu]: invalid name accepted", i);
        for (size_t i = 0; i < m->n_ports; i++) {
                const PodPort *p = &m->ports[i];
                if (p->host_port == 0 || p->pod_port == 0 || (!streq(p->protocol, "tcp") && !streq(p->protocol, "udp")))
                        fuzz_fail("ports[%zu]: bad port accepted", i);
        }
        /* The network settings are read from annotations by the run
         * entrypoint: whatever they hold is accepted or refused, and what
         * is accepted is well-formed. */
        PodNet n;
        Error *err = NULL;
        if (pod_net_from_manifest(m, &n, &err) >= 0) {
                if (n.mode == POD_NET_CNI && n.n_networks == 0)
                        fuzz_fail("a CNI network mode without networks accepted");
                if (n.hostname && !hostname_is_valid(n.hostname))
                        fuzz_fail("an invalid host name accepted");
                for (char **e = n.hosts_entries; e && *e; e++)
                        if (!strchr(*e, '=') || strpbrk(*e, " \n\t"))
                                fuzz_fail("a bad hosts entry accepted: %s", *e);
                pod_net_done(&n);
        } else if (!err || err->code != -EBADMSG)
                fuzz_fail("pod_net_from_manifest: not -EBADMSG");
        error_free(err);
}

/* What is written must read back as the same text. */
static void check_roundtrip(const PodManifest *m, const char *when) {
        const char *text = pod_manifest_to_text(m);
        PodManifest *again = NULL;
        Error *err = NULL;
        if (pod_manifest_parse(text, strlen(text), "written", &again, &err) < 0)
                fuzz_fail("%s: the written manifest is refused: %s\n%s", when, err && err->msg ? err->msg : "?", text);
        if (!streq(pod_manifest_to_text(again), text))
                fuzz_fail("%s: the manifest changed on the way through its text:\n%s\n%s", when, text,
                          pod_manifest_to_text(again));
        check_view(again);
        pod_manifest_free(again);
}

/* A refused change must be refused as invalid and change nothing. */
static void check_refused(PodManifest *m, const PodAppSpec *spec, const char *before) {
        Error *err = NULL;
        int r = pod_manifest_add_app(m, spec, &err);
        if (r != -EBADMSG && r != -EEXIST && r != -ENOMEM)
                fuzz_fail("an invalid add_app returned %d", r);
        if (!err || !err->msg)
                fuzz_fail("an invalid add_app said nothing");
        fuzz_error_done("pod_manifest_add_app (invalid)", err);
        if (!streq(pod_manifest_to_text(m), before))
                fuzz_fail("a refused add_app changed the manifest");
}

static void check_mutations(PodManifest *m) {
        _cleanup_free_ char *before = strdup(pod_manifest_to_text(m));
        if (!before)
                return;

        char *exec[] = { "/bin/sh", "-c", "true", NULL };
        char *env[] = { "A=1", "B=2", "A=3", NULL };
        PodNameValue annotations[] = { { "sdpod/fuzz", "1" } };
        PodAppSpec spec = {
                .name = FUZZ_APP, .image_id = ID, .exec = exec, .environment = env,
                .annotations = annotations, .n_annotations = 1, .read_only_rootfs = true,
        };
        bool existed = pod_manifest_find_app(m, FUZZ_APP);
        Error *err = NULL;
        int r = pod_manifest_add_app(m, &spec, &err);
        if (existed) {
                if (r != -EEXIST)
                        fuzz_fail("add_app of an existing name returned %d", r);
                fuzz_error_done("pod_manifest_add_app (exists)", err);
                if (!streq(pod_manifest_to_text(m), before))
                        fuzz_fail("a refused add_app changed the manifest");
        } else {
                if (r == -ENOMEM) {
                        fuzz_error_done("pod_manifest_add_app", err);
                        return;
                }
                if (r < 0)
                        fuzz_fail("a valid app could not be added to a valid manifest: %s",
                                  err && err->msg ? err->msg : "?");
                const PodApp *a = pod_manifest_find_app(m, FUZZ_APP);
                if (!a || a != &m->apps[m->n_apps - 1] || a->n_environment != 2 || !streq(a->environment[0].value, "3"))
                        fuzz_fail("the added app is not as asked");
                check_view(m);
                check_roundtrip(m, "after add_app");
                err = NULL;
                if (pod_manifest_remove_app(m, FUZZ_APP, &err) < 0)
                        fuzz_fail("the added app could not be removed: %s", err && err->msg ? err->msg : "?");
                if (!streq(pod_manifest_to_text(m), before))
                        fuzz_fail("add_app then remove_app changed the manifest:\n%s\n%s", before,
                                  pod_manifest_to_text(m));
        }

        char *bad_env[] = { "NOEQUALS", NULL };
        PodAppSpec bad = { .name = "fuzz-bad", .image_id = ID, .exec = exec, .environment = bad_env };
        check_refused(m, &bad, before);
        PodMount bad_mounts[] = { { "NOT-A-VOLUME", "/x" } };
        PodAppSpec bad_mount = { .name = "fuzz-bad", .image_id = ID, .exec = exec, .mounts = bad_mounts, .n_mounts = 1 };
        check_refused(m, &bad_mount, before);

        err = NULL;
        if (pod_manifest_remove_app(m, "NOT-AN-APP", &err) != -ENOENT || !streq(pod_manifest_to_text(m), before))
                fuzz_fail("remove_app of a missing app did not fail cleanly");
        fuzz_error_done("pod_manifest_remove_app (missing)", err);

        err = NULL;
        if (pod_manifest_set_annotation(m, "sdpod/fuzz", "x", &err) < 0) {
                if (err && err->code != -ENOMEM)
                        fuzz_fail("set_annotation failed on a valid manifest: %s", err->msg);
                fuzz_error_done("pod_manifest_set_annotation", err);
                return;
        }
        if (!streq_ptr(pod_manifest_get_annotation(m, "sdpod/fuzz"), "x"))
                fuzz_fail("set_annotation did not set");
        check_roundtrip(m, "after set_annotation");

        if (m->n_apps > 0) {
                size_t n = m->n_apps;
                _cleanup_free_ char *first = strdup(m->apps[0].name);
                err = NULL;
                if (!first)
                        return;
                if (pod_manifest_remove_app(m, first, &err) < 0) {
                        if (err && err->code != -ENOMEM)
                                fuzz_fail("remove_app failed on a valid manifest: %s", err->msg);
                        fuzz_error_done("pod_manifest_remove_app", err);
                        return;
                }
                if (m->n_apps != n - 1 || pod_manifest_find_app(m, first))
                        fuzz_fail("remove_app did not remove");
                check_view(m);
                check_roundtrip(m, "after remove_app");
        }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        PodManifest *m = NULL;
        Error *err = NULL;
        int r = pod_manifest_parse((const char *) data, size, "input", &m, &err);
        if (r < 0) {
                if (r != -EBADMSG && r != -ENOMEM && r != -EFBIG)
                        fuzz_fail("pod_manifest_parse returned %d", r);
                if (err && !startswith(strempty(err->msg), "input"))
                        fuzz_fail("the message does not name the manifest: %s", err->msg);
                fuzz_error_done("pod_manifest_parse", err);
                return 0;
        }
        if (FUZZ_VERBOSE)
                fprintf(stderr, "  valid: %zu apps, %zu volumes\n", m->n_apps, m->n_volumes);
        check_view(m);
        check_roundtrip(m, "after parse");
        check_mutations(m);
        pod_manifest_free(m);
        return 0;
}
