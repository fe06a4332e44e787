/* SPDX-License-Identifier: Apache-2.0 */
/* policy_parse() (the signature policy, containers' policy.json) and the
 * docker references its scopes and signatures name. The policy is the
 * operator's, but it decides what is trusted: whatever the parser accepts
 * must be complete (no requirement without its keys, no scope without
 * requirements, nothing unknown taken for "accept"), and every error names
 * the file. The input is also read as one docker reference, whose
 * normalized form must be a fixed point. */
#include "basic/strv.h"
#include "fuzz.h"
#include "image/policy.h"

static void check_requirement(const PolicyRequirement *req) {
        if (!req->where || !startswith(req->where, "input: "))
                fuzz_fail("a requirement without its place in the file");
        switch (req->type) {
        case POLICY_INSECURE_ACCEPT_ANYTHING:
        case POLICY_REJECT:
                if (req->key_paths || req->key_data)
                        fuzz_fail("%s: keys on a requirement that takes none", req->where);
                break;
        case POLICY_SIGNED_BY:
                if (!!req->key_paths == !!req->key_data)
                        fuzz_fail("%s: signedBy needs exactly one key source", req->where);
                for (char **p = req->key_paths; p && *p; p++)
                        if ((*p)[0] != '/')
                                fuzz_fail("%s: a relative key path survived: %s", req->where, *p);
                if (req->key_data && req->key_data_size == 0)
                        fuzz_fail("%s: empty keyData accepted", req->where);
                if ((req->identity == POLICY_IDENTITY_EXACT_REFERENCE ||
                     req->identity == POLICY_IDENTITY_EXACT_REPOSITORY) != !!req->identity_reference)
                        fuzz_fail("%s: exact identity without its reference", req->where);
                break;
        case POLICY_UNSUPPORTED:
                if (!req->unsupported)
                        fuzz_fail("%s: unsupported without a reason", req->where);
                break;
        default:
                fuzz_fail("%s: unknown requirement type %d", req->where, (int) req->type);
        }
}

static void check_scope(const PolicyScope *s) {
        if (!s->name || s->n_requirements == 0)
                fuzz_fail("a scope without name or requirements");
        for (size_t i = 0; i < s->n_requirements; i++)
                check_requirement(&s->requirements[i]);
}

static void check_reference(const char *s) {
        DockerReference r = {};
        if (docker_reference_parse(s, &r) < 0)
                return;
        _cleanup_free_ char *text = docker_reference_to_string(&r);
        if (!text) {
                docker_reference_done(&r);
                return;
        }
        DockerReference again = {};
        if (docker_reference_parse(text, &again) < 0)
                fuzz_fail("\"%s\" normalizes to \"%s\", which is refused", s, text);
        _cleanup_free_ char *text2 = docker_reference_to_string(&again);
        if (text2 && !streq(text, text2))
                fuzz_fail("\"%s\" normalizes to \"%s\", then to \"%s\"", s, text, text2);
        if (!strchr(r.name, '/'))
                fuzz_fail("\"%s\": a name without a registry: %s", s, r.name);
        char **scopes = docker_reference_scopes(&r);
        if (scopes && (!scopes[0] || (!r.tag && !r.digest && !streq(scopes[0], r.name))))
                fuzz_fail("\"%s\": the first scope is not the reference", s);
        strv_free(scopes);
        docker_reference_done(&again);
        docker_reference_done(&r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        _cleanup_free_ char *s = strndup((const char *) data, size);
        if (s && strlen(s) < 1024)
                check_reference(s);

        Policy *p = NULL;
        Error *err = NULL;
        int r = policy_parse((const char *) data, size, "input", "/keys", &p, &err);
        if (r < 0) {
                if (r != -EBADMSG && r != -ENOMEM && r != -EFBIG)
                        fuzz_fail("policy_parse returned %d", r);
                if (err && !startswith(strempty(err->msg), "input"))
                        fuzz_fail("the message does not name the file: %s", err->msg);
                fuzz_error_done("policy_parse", err);
                return 0;
        }
        check_scope(&p->fallback);
        for (size_t i = 0; i < p->n_docker; i++)
                check_scope(&p->docker[i]);

        static const char *const images[][3] = {
                { "registry.test:5000", "ns/app", "v1" },
                { "docker.io", "library/busybox", "latest" },
                { "a.b.example.com", "x", NULL },
        };
        for (size_t i = 0; i < ELEMENTSOF(images); i++) {
                const PolicyScope *scope = policy_lookup(
                        p, images[i][0], images[i][1], images[i][2],
                        images[i][2] ? NULL : "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef");
                if (!scope)
                        fuzz_fail("no scope for %s/%s", images[i][0], images[i][1]);
                check_scope(scope);
        }
        if (FUZZ_VERBOSE)
                fprintf(stderr, "  valid: %zu docker scopes\n", p->n_docker);
        policy_free(p);
        return 0;
}
