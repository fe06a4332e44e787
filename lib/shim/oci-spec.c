/* SPDX-License-Identifier: Apache-2.0 */
#include <fcntl.h>
#include <inttypes.h>

#include "basic/fs.h"
#include "basic/json-util.h"
#include "basic/strv.h"
#include "shim/oci-spec.h"

/* Bounds on what one spec may list: far more than any real container, few
 * enough that a hostile spec costs nothing. */
#define OCI_LIST_MAX 4096

OciSpec *oci_spec_free(OciSpec *s) {
        if (!s)
                return NULL;
        free(s->oci_version);
        OciProcess *p = &s->process;
        strv_free(p->args);
        strv_free(p->env);
        free(p->cwd);
        free(p->additional_gids);
        free(p->username);
        strv_free(p->cap_bounding);
        strv_free(p->cap_effective);
        strv_free(p->cap_inheritable);
        strv_free(p->cap_permitted);
        strv_free(p->cap_ambient);
        for (size_t i = 0; i < p->n_rlimits; i++)
                free(p->rlimits[i].type);
        free(p->rlimits);
        free(p->apparmor_profile);
        free(p->selinux_label);
        free(s->root_path);
        free(s->hostname);
        for (size_t i = 0; i < s->n_mounts; i++) {
                free(s->mounts[i].destination);
                free(s->mounts[i].type);
                free(s->mounts[i].source);
                strv_free(s->mounts[i].options);
        }
        free(s->mounts);
        for (size_t i = 0; i < s->n_annotations; i++) {
                free(s->annotations[i].key);
                free(s->annotations[i].value);
        }
        free(s->annotations);
        for (size_t i = 0; i < s->n_namespaces; i++) {
                free(s->namespaces[i].type);
                free(s->namespaces[i].path);
        }
        free(s->namespaces);
        strv_free(s->masked_paths);
        strv_free(s->readonly_paths);
        free(s->cgroups_path);
        free(s->seccomp);
        for (size_t i = 0; i < s->n_sysctl; i++) {
                free(s->sysctl[i].key);
                free(s->sysctl[i].value);
        }
        free(s->sysctl);
        strv_free(s->ignored);
        strv_free(s->device_nodes);
        strv_free(s->device_allow);
        free(s);
        return NULL;
}

/* Parsing state: the document and a path for messages. */
typedef struct Ctx {
        OciSpec *spec;
        Error **err;
} Ctx;

static int dup_string(struct json_object *o, const char *key, const char *what, char **ret, Error **err) {
        const char *v = NULL;
        int r = json_get_string(o, key, false, &v, what, err);
        if (r <= 0)
                return r;
        if (strlen(v) != (size_t) json_object_get_string_len(json_object_object_get(o, key)))
                return error_set(err, -EBADMSG, "%s: field \"%s\": contains a NUL byte", what, key);
        return (*ret = strdup(v)) ? 1 : error_sys(err, -ENOMEM, "%s", what);
}

static int get_strv(struct json_object *o, const char *key, const char *what, char ***ret, Error **err) {
        struct json_object *a = NULL;
        int r = json_get_array(o, key, false, &a, what, err);
        if (r <= 0)
                return r;
        if (json_object_array_length(a) > OCI_LIST_MAX)
                return error_set(err, -EBADMSG, "%s: field \"%s\": more than %d entries", what, key, OCI_LIST_MAX);
        r = json_get_strv(o, key, false, ret, what, err);
        if (r < 0)
                return r;
        for (char **i = *ret; i && *i; i++)
                if (strlen(*i) != (size_t) json_object_get_string_len(json_object_array_get_idx(a, (size_t) (i - *ret)))) {
                        strv_free(*ret);
                        *ret = NULL;
                        return error_set(err, -EBADMSG, "%s: field \"%s\": an entry contains a NUL byte", what, key);
                }
        return 1;
}

static int get_bool(struct json_object *o, const char *key, const char *what, bool *ret, Error **err) {
        struct json_object *v = NULL;
        if (!json_object_object_get_ex(o, key, &v) || json_object_is_type(v, json_type_null))
                return 0;
        if (!json_object_is_type(v, json_type_boolean))
                return error_set(err, -EBADMSG, "%s: field \"%s\": expected true or false", what, key);
        *ret = json_object_get_boolean(v);
        return 1;
}

/* An integer in [min, max]; json-c keeps integers above INT64_MAX as
 * uint64, which only the unsigned fields accept. */
static int get_integer(struct json_object *o, const char *key, const char *what, int64_t min, int64_t max,
                       int64_t *ret, Error **err) {
        struct json_object *v = NULL;
        if (!json_object_object_get_ex(o, key, &v) || json_object_is_type(v, json_type_null))
                return 0;
        if (!json_object_is_type(v, json_type_int))
                return error_set(err, -EBADMSG, "%s: field \"%s\": expected an integer", what, key);
        errno = 0;
        int64_t n = json_object_get_int64(v);
        if (errno != 0 || n < min || n > max)
                return error_set(err, -EBADMSG, "%s: field \"%s\": out of range", what, key);
        *ret = n;
        return 1;
}

static int get_uint64(struct json_object *o, const char *key, const char *what, uint64_t *ret, Error **err) {
        struct json_object *v = NULL;
        if (!json_object_object_get_ex(o, key, &v) || json_object_is_type(v, json_type_null))
                return 0;
        if (!json_object_is_type(v, json_type_int))
                return error_set(err, -EBADMSG, "%s: field \"%s\": expected an integer", what, key);
        if (json_object_get_int64(v) < 0)
                return error_set(err, -EBADMSG, "%s: field \"%s\": negative", what, key);
        *ret = json_object_get_uint64(v);
        return 1;
}

/* Notes every member of o not in known, as PREFIX.KEY. */
static int note_unknown(OciSpec *s, struct json_object *o, const char *prefix, const char *const *known, Error **err) {
        json_object_object_foreach(o, key, v) {
                (void) v;
                bool found = false;
                for (const char *const *k = known; *k && !found; k++)
                        found = streq(*k, key);
                if (found)
                        continue;
                if (strv_length(s->ignored) >= 64)
                        return 0;
                _cleanup_free_ char *path = NULL;
                if (asprintf(&path, "%s%s%.64s", prefix, *prefix ? "." : "", key) < 0 || strv_push(&s->ignored, path) < 0)
                        return error_sys(err, -ENOMEM, "OCI spec");
        }
        return 0;
}

static int check_absolute(const char *path, const char *what, const char *key, Error **err) {
        if (path && path[0] != '/') {
                char q[VALUE_QUOTED_MAX];
                return error_set(err, -EBADMSG, "%s: field \"%s\": %s is not an absolute path", what, key, value_quote(path, q));
        }
        return 0;
}

static int parse_capabilities(OciProcess *p, struct json_object *caps, Error **err) {
        static const char what[] = "process.capabilities";
        int r;
        p->have_capabilities = true;
        if ((r = get_strv(caps, "bounding", what, &p->cap_bounding, err)) < 0 ||
            (r = get_strv(caps, "effective", what, &p->cap_effective, err)) < 0 ||
            (r = get_strv(caps, "inheritable", what, &p->cap_inheritable, err)) < 0 ||
            (r = get_strv(caps, "permitted", what, &p->cap_permitted, err)) < 0 ||
            (r = get_strv(caps, "ambient", what, &p->cap_ambient, err)) < 0)
                return r;
        return 0;
}

static int parse_rlimits(OciProcess *p, struct json_object *a, Error **err) {
        size_t n = json_object_array_length(a);
        if (n > 64)
                return error_set(err, -EBADMSG, "process.rlimits: more than 64 entries");
        if (!(p->rlimits = calloc(n ? n : 1, sizeof(OciRlimit))))
                return error_sys(err, -ENOMEM, "process.rlimits");
        for (size_t i = 0; i < n; i++) {
                struct json_object *e = json_object_array_get_idx(a, i);
                char what[48];
                snprintf(what, sizeof(what), "process.rlimits[%zu]", i);
                OciRlimit *l = &p->rlimits[p->n_rlimits++];
                int r = dup_string(e, "type", what, &l->type, err);
                if (r == 0)
                        r = error_set(err, -EBADMSG, "%s: field \"type\": missing", what);
                if (r < 0 || (r = get_uint64(e, "soft", what, &l->soft, err)) < 0 ||
                    (r = get_uint64(e, "hard", what, &l->hard, err)) < 0)
                        return r;
                if (l->soft > l->hard)
                        return error_set(err, -EBADMSG, "%s: soft limit above the hard limit", what);
        }
        return 0;
}

static int parse_process(OciSpec *s, struct json_object *o, Error **err) {
        static const char what[] = "process";
        static const char *const known[] = { "terminal", "args", "env", "cwd", "user", "capabilities", "rlimits",
                                             "noNewPrivileges", "oomScoreAdj", "apparmorProfile", "selinuxLabel",
                                             NULL };
        OciProcess *p = &s->process;
        s->have_process = true;
        int r;
        int64_t n;
        if ((r = get_bool(o, "terminal", what, &p->terminal, err)) < 0 || (r = get_strv(o, "args", what, &p->args, err)) < 0 ||
            (r = get_strv(o, "env", what, &p->env, err)) < 0 || (r = dup_string(o, "cwd", what, &p->cwd, err)) < 0 ||
            (r = check_absolute(p->cwd, what, "cwd", err)) < 0 ||
            (r = get_bool(o, "noNewPrivileges", what, &p->no_new_privileges, err)) < 0 ||
            (r = dup_string(o, "apparmorProfile", what, &p->apparmor_profile, err)) < 0 ||
            (r = dup_string(o, "selinuxLabel", what, &p->selinux_label, err)) < 0)
                return r;
        if (p->args && !p->args[0])
                return error_set(err, -EBADMSG, "process: field \"args\": empty");
        if ((r = get_integer(o, "oomScoreAdj", what, -1000, 1000, &n, err)) < 0)
                return r;
        if (r > 0) {
                p->have_oom_score_adj = true;
                p->oom_score_adj = (int) n;
        }
        struct json_object *user = NULL, *caps = NULL, *rlimits = NULL;
        if ((r = json_get_object(o, "user", false, &user, what, err)) < 0 ||
            (r = json_get_object(o, "capabilities", false, &caps, what, err)) < 0 ||
            (r = json_get_array(o, "rlimits", false, &rlimits, what, err)) < 0)
                return r;
        if (user) {
                static const char uwhat[] = "process.user";
                if ((r = get_integer(user, "uid", uwhat, 0, UINT32_MAX, &n, err)) < 0)
                        return r;
                p->uid = (uint32_t) n;
                if ((r = get_integer(user, "gid", uwhat, 0, UINT32_MAX, &n, err)) < 0)
                        return r;
                p->gid = (uint32_t) n;
                if ((r = dup_string(user, "username", uwhat, &p->username, err)) < 0)
                        return r;
                struct json_object *gids = NULL;
                if ((r = json_get_array(user, "additionalGids", false, &gids, uwhat, err)) < 0)
                        return r;
                size_t k = gids ? json_object_array_length(gids) : 0;
                if (k > 256)
                        return error_set(err, -EBADMSG, "process.user.additionalGids: more than 256 entries");
                if (k > 0 && !(p->additional_gids = calloc(k, sizeof(uint32_t))))
                        return error_sys(err, -ENOMEM, "%s", uwhat);
                for (size_t i = 0; i < k; i++) {
                        struct json_object *g = json_object_array_get_idx(gids, i);
                        int64_t v = json_object_is_type(g, json_type_int) ? json_object_get_int64(g) : -1;
                        if (v < 0 || v > UINT32_MAX)
                                return error_set(err, -EBADMSG, "process.user.additionalGids[%zu]: not a group id", i);
                        p->additional_gids[p->n_additional_gids++] = (uint32_t) v;
                }
        }
        if (caps && (r = parse_capabilities(p, caps, err)) < 0)
                return r;
        if (rlimits && (r = parse_rlimits(p, rlimits, err)) < 0)
                return r;
        return note_unknown(s, o, "process", known, err);
}

static int parse_mounts(OciSpec *s, struct json_object *a, Error **err) {
        size_t n = json_object_array_length(a);
        if (n > 1024)
                return error_set(err, -EBADMSG, "mounts: more than 1024 entries");
        if (!(s->mounts = calloc(n ? n : 1, sizeof(OciMount))))
                return error_sys(err, -ENOMEM, "mounts");
        for (size_t i = 0; i < n; i++) {
                struct json_object *e = json_object_array_get_idx(a, i);
                char what[32];
                snprintf(what, sizeof(what), "mounts[%zu]", i);
                if (!json_object_is_type(e, json_type_object))
                        return error_set(err, -EBADMSG, "%s: expected an object", what);
                OciMount *m = &s->mounts[s->n_mounts++];
                int r = dup_string(e, "destination", what, &m->destination, err);
                if (r == 0)
                        r = error_set(err, -EBADMSG, "%s: field \"destination\": missing", what);
                if (r < 0 || (r = check_absolute(m->destination, what, "destination", err)) < 0 ||
                    (r = dup_string(e, "type", what, &m->type, err)) < 0 ||
                    (r = dup_string(e, "source", what, &m->source, err)) < 0 ||
                    (r = get_strv(e, "options", what, &m->options, err)) < 0)
                        return r;
        }
        return 0;
}

static int parse_key_values(struct json_object *o, const char *what, OciKeyValue **ret, size_t *ret_n, Error **err) {
        size_t n = (size_t) json_object_object_length(o);
        if (n > OCI_LIST_MAX)
                return error_set(err, -EBADMSG, "%s: more than %d entries", what, OCI_LIST_MAX);
        if (!(*ret = calloc(n ? n : 1, sizeof(OciKeyValue))))
                return error_sys(err, -ENOMEM, "%s", what);
        json_object_object_foreach(o, key, v) {
                if (!json_object_is_type(v, json_type_string))
                        return error_set(err, -EBADMSG, "%s: the value of \"%.64s\" is not a string", what, key);
                OciKeyValue *kv = &(*ret)[(*ret_n)++];
                if (!(kv->key = strdup(key)) || !(kv->value = strndup(json_object_get_string(v), (size_t) json_object_get_string_len(v))))
                        return error_sys(err, -ENOMEM, "%s", what);
                if (strlen(kv->value) != (size_t) json_object_get_string_len(v))
                        return error_set(err, -EBADMSG, "%s: the value of \"%.64s\" contains a NUL byte", what, key);
        }
        return 0;
}

static int parse_resources(OciSpec *s, struct json_object *o, Error **err) {
        static const char *const known[] = { "memory", "cpu", "pids", "devices", NULL };
        OciResources *res = &s->resources;
        struct json_object *mem = NULL, *cpu = NULL, *pids = NULL, *devices = NULL;
        int r;
        if ((r = json_get_object(o, "memory", false, &mem, "linux.resources", err)) < 0 ||
            (r = json_get_object(o, "cpu", false, &cpu, "linux.resources", err)) < 0 ||
            (r = json_get_object(o, "pids", false, &pids, "linux.resources", err)) < 0 ||
            (r = json_get_array(o, "devices", false, &devices, "linux.resources", err)) < 0)
                return r;
        int64_t n = 0;
        if (mem) {
                static const char *const mem_known[] = { "limit", "swap", "reservation", "kernel", "kernelTCP",
                                                         "swappiness", "disableOOMKiller", "useHierarchy", NULL };
                if ((r = get_integer(mem, "limit", "linux.resources.memory", INT64_MIN, INT64_MAX, &res->memory_limit, err)) < 0 ||
                    (r = note_unknown(s, mem, "linux.resources.memory", mem_known, err)) < 0)
                        return r;
        }
        if (cpu) {
                static const char *const cpu_known[] = { "quota", "period", "shares", "cpus", "mems",
                                                         "realtimeRuntime", "realtimePeriod", NULL };
                if ((r = get_integer(cpu, "quota", "linux.resources.cpu", INT64_MIN, INT64_MAX, &res->cpu_quota, err)) < 0 ||
                    (r = get_uint64(cpu, "period", "linux.resources.cpu", &res->cpu_period, err)) < 0 ||
                    (r = get_uint64(cpu, "shares", "linux.resources.cpu", &res->cpu_shares, err)) < 0)
                        return r;
                const char *set = NULL;
                if ((r = json_get_string(cpu, "cpus", false, &set, "linux.resources.cpu", err)) < 0)
                        return r;
                if (set && *set && (r = strv_push(&s->ignored, "linux.resources.cpu.cpus")) < 0)
                        return error_sys(err, r, "OCI spec");
                (void) cpu_known;
        }
        if (pids && (r = get_integer(pids, "limit", "linux.resources.pids", INT64_MIN, INT64_MAX, &n, err)) < 0)
                return r;
        if (pids)
                res->pids_limit = n;
        /* devices: the cgroup device rules. The default spec denies all and
         * allows the standard nodes, which is what every app has; any rule
         * that allows more is a device the app cannot get. */
        for (size_t i = 0; devices && i < json_object_array_length(devices) && i < 256; i++) {
                struct json_object *d = json_object_array_get_idx(devices, i);
                char dwhat[48];
                snprintf(dwhat, sizeof(dwhat), "linux.resources.devices[%zu]", i);
                if (!json_object_is_type(d, json_type_object))
                        return error_set(err, -EBADMSG, "%s: expected an object", dwhat);
                bool allow = false;
                const char *type = NULL, *access = NULL;
                int64_t major = -1, minor = -1;
                if ((r = get_bool(d, "allow", dwhat, &allow, err)) < 0 ||
                    (r = json_get_string(d, "type", false, &type, dwhat, err)) < 0 ||
                    (r = json_get_string(d, "access", false, &access, dwhat, err)) < 0 ||
                    (r = get_integer(d, "major", dwhat, -1, UINT32_MAX, &major, err)) < 0 ||
                    (r = get_integer(d, "minor", dwhat, -1, UINT32_MAX, &minor, err)) < 0)
                        return r;
                if (!allow)
                        continue;
                char rule[96], maj[24] = "*", min[24] = "*";
                if (major >= 0)
                        snprintf(maj, sizeof(maj), "%" PRIi64, major);
                if (minor >= 0)
                        snprintf(min, sizeof(min), "%" PRIi64, minor);
                snprintf(rule, sizeof(rule), "%.1s %s:%s %.8s", type && *type && !streq(type, "a") ? type : "*", maj, min,
                         access && *access ? access : "rwm");
                if (strv_push(&s->device_allow, rule) < 0)
                        return error_sys(err, -ENOMEM, "%s", dwhat);
        }
        return note_unknown(s, o, "linux.resources", known, err);
}

static int parse_linux(OciSpec *s, struct json_object *o, Error **err) {
        static const char what[] = "linux";
        static const char *const known[] = { "namespaces", "resources", "maskedPaths", "readonlyPaths", "cgroupsPath",
                                             "seccomp", "sysctl", "uidMappings", "gidMappings", "devices", NULL };
        struct json_object *ns = NULL, *res = NULL, *sysctl = NULL, *uid_maps = NULL, *gid_maps = NULL, *devices = NULL,
                           *seccomp = NULL;
        int r;
        if ((r = json_get_array(o, "namespaces", false, &ns, what, err)) < 0 ||
            (r = json_get_object(o, "resources", false, &res, what, err)) < 0 ||
            (r = json_get_object(o, "sysctl", false, &sysctl, what, err)) < 0 ||
            (r = json_get_array(o, "uidMappings", false, &uid_maps, what, err)) < 0 ||
            (r = json_get_array(o, "gidMappings", false, &gid_maps, what, err)) < 0 ||
            (r = json_get_array(o, "devices", false, &devices, what, err)) < 0 ||
            (r = json_get_object(o, "seccomp", false, &seccomp, what, err)) < 0 ||
            (r = get_strv(o, "maskedPaths", what, &s->masked_paths, err)) < 0 ||
            (r = get_strv(o, "readonlyPaths", what, &s->readonly_paths, err)) < 0 ||
            (r = dup_string(o, "cgroupsPath", what, &s->cgroups_path, err)) < 0)
                return r;
        s->have_seccomp = seccomp != NULL;
        const char *seccomp_text = seccomp ? json_object_to_json_string_ext(seccomp, JSON_C_TO_STRING_PLAIN) : NULL;
        if (seccomp && (!seccomp_text || !(s->seccomp = strdup(seccomp_text))))
                return error_sys(err, -ENOMEM, "linux.seccomp");
        s->have_uid_mappings = (uid_maps && json_object_array_length(uid_maps) > 0) ||
                (gid_maps && json_object_array_length(gid_maps) > 0);
        for (size_t i = 0; devices && i < json_object_array_length(devices) && i < 256; i++) {
                struct json_object *d = json_object_array_get_idx(devices, i);
                const char *path = NULL;
                if ((r = json_get_string(d, "path", true, &path, "linux.devices", err)) < 0)
                        return r;
                if (strv_push(&s->device_nodes, path) < 0)
                        return error_sys(err, -ENOMEM, "linux.devices");
        }
        size_t n = ns ? json_object_array_length(ns) : 0;
        if (n > 16)
                return error_set(err, -EBADMSG, "linux.namespaces: more than 16 entries");
        if (n > 0 && !(s->namespaces = calloc(n, sizeof(OciNamespace))))
                return error_sys(err, -ENOMEM, "linux.namespaces");
        for (size_t i = 0; i < n; i++) {
                struct json_object *e = json_object_array_get_idx(ns, i);
                char nwhat[40];
                snprintf(nwhat, sizeof(nwhat), "linux.namespaces[%zu]", i);
                if (!json_object_is_type(e, json_type_object))
                        return error_set(err, -EBADMSG, "%s: expected an object", nwhat);
                OciNamespace *x = &s->namespaces[s->n_namespaces++];
                if ((r = dup_string(e, "type", nwhat, &x->type, err)) == 0)
                        r = error_set(err, -EBADMSG, "%s: field \"type\": missing", nwhat);
                if (r < 0 || (r = dup_string(e, "path", nwhat, &x->path, err)) < 0 ||
                    (r = check_absolute(x->path, nwhat, "path", err)) < 0)
                        return r;
                if (x->path && !*x->path) {
                        free(x->path);
                        x->path = NULL;
                }
                for (size_t j = 0; j + 1 < s->n_namespaces; j++)
                        if (streq(s->namespaces[j].type, x->type))
                                return error_set(err, -EBADMSG, "%s: a second namespace of type %.32s", nwhat, x->type);
        }
        if (res && (r = parse_resources(s, res, err)) < 0)
                return r;
        if (sysctl && (r = parse_key_values(sysctl, "linux.sysctl", &s->sysctl, &s->n_sysctl, err)) < 0)
                return r;
        return note_unknown(s, o, "linux", known, err);
}

/* What every document the shim takes starts with: bounded, strict JSON
 * (json_parse()), an object; then body fills a new OciSpec from it. */
static int parse_document(const char *data, size_t size, const char *what,
                          int (*body)(OciSpec *s, struct json_object *doc, Error **err), OciSpec **ret, Error **err) {
        if (size > OCI_SPEC_MAX)
                return error_set(err, -EFBIG, "%s: larger than %u bytes", what, OCI_SPEC_MAX);
        _cleanup_json_ struct json_object *doc = NULL;
        int r = json_parse(data, size, what, &doc, err);
        if (r < 0)
                return r;
        if (!json_object_is_type(doc, json_type_object))
                return error_set(err, -EBADMSG, "%s: expected a JSON object", what);
        OciSpec *s = calloc(1, sizeof(OciSpec));
        if (!s)
                return error_sys(err, -ENOMEM, "%s", what);
        if ((r = body(s, doc, err)) < 0) {
                oci_spec_free(s);
                return r;
        }
        *ret = s;
        return 0;
}

int oci_resources_parse(const char *data, size_t size, OciSpec **ret, Error **err) {
        return parse_document(data, size, "linux.resources", parse_resources, ret, err);
}

static int parse_spec(OciSpec *s, struct json_object *doc, Error **err) {
        static const char *const known[] = { "ociVersion", "process", "root", "hostname", "mounts", "annotations",
                                             "linux", NULL };
        struct json_object *process = NULL, *root = NULL, *mounts = NULL, *annotations = NULL, *linux_ = NULL;
        int r;
        if ((r = dup_string(doc, "ociVersion", "OCI spec", &s->oci_version, err)) < 0 ||
            (r = dup_string(doc, "hostname", "OCI spec", &s->hostname, err)) < 0 ||
            (r = json_get_object(doc, "process", false, &process, "OCI spec", err)) < 0 ||
            (r = json_get_object(doc, "root", false, &root, "OCI spec", err)) < 0 ||
            (r = json_get_array(doc, "mounts", false, &mounts, "OCI spec", err)) < 0 ||
            (r = json_get_object(doc, "annotations", false, &annotations, "OCI spec", err)) < 0 ||
            (r = json_get_object(doc, "linux", false, &linux_, "OCI spec", err)) < 0)
                return r;
        if (root) {
                if ((r = dup_string(root, "path", "root", &s->root_path, err)) == 0)
                        r = error_set(err, -EBADMSG, "root: field \"path\": missing");
                if (r < 0 || (r = get_bool(root, "readonly", "root", &s->root_readonly, err)) < 0)
                        return r;
        }
        if ((process && (r = parse_process(s, process, err)) < 0) || (mounts && (r = parse_mounts(s, mounts, err)) < 0) ||
            (annotations && (r = parse_key_values(annotations, "annotations", &s->annotations, &s->n_annotations, err)) < 0) ||
            (linux_ && (r = parse_linux(s, linux_, err)) < 0) || (r = note_unknown(s, doc, "", known, err)) < 0)
                return r;
        return 0;
}

int oci_spec_parse(const char *data, size_t size, OciSpec **ret, Error **err) {
        return parse_document(data, size, "OCI spec", parse_spec, ret, err);
}

int oci_spec_read_at(int bundle_fd, OciSpec **ret, Error **err) {
        _cleanup_free_ char *data = NULL;
        size_t size = 0;
        int r = read_file_at(bundle_fd, OCI_SPEC_FILE, OCI_SPEC_MAX, &data, &size, err);
        if (r < 0)
                return r;
        r = oci_spec_parse(data, size, ret, err);
        return r < 0 ? error_prefix(err, "%s", OCI_SPEC_FILE) : 0;
}

const char *oci_spec_annotation(const OciSpec *s, const char *key) {
        for (size_t i = 0; i < s->n_annotations; i++)
                if (streq(s->annotations[i].key, key))
                        return s->annotations[i].value;
        return NULL;
}

const OciNamespace *oci_spec_namespace(const OciSpec *s, const char *type) {
        for (size_t i = 0; i < s->n_namespaces; i++)
                if (streq(s->namespaces[i].type, type))
                        return &s->namespaces[i];
        return NULL;
}
