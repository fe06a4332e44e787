/* SPDX-License-Identifier: Apache-2.0 */
#include <ctype.h>
#include <sys/stat.h>

#include "basic/json-util.h"
#include "basic/quantity.h"
#include "basic/strv.h"
#include "basic/warn.h"
#include "unit/app-isolators.h"
#include "unit/app-options.h"

static int add_isolator(struct json_object *list, const char *name, struct json_object *value) {
        struct json_object *o = json_object_new_object();
        if (!o || !value) {
                json_object_put(o);
                json_object_put(value);
                return -ENOMEM;
        }
        json_object_object_add(o, "name", json_object_new_string(name));
        json_object_object_add(o, "value", value);
        return json_object_array_add(list, o) < 0 ? (json_object_put(o), -ENOMEM) : 0;
}

/* {"limit": s} */
static struct json_object *limit_value(struct json_object *limit) {
        struct json_object *o = json_object_new_object();
        if (!o || !limit) {
                json_object_put(o);
                json_object_put(limit);
                return NULL;
        }
        json_object_object_add(o, "limit", limit);
        return o;
}

static int resources(const AppArgs *a, struct json_object *list, Error **err) {
        uint64_t v;
        int r;
        if (a->memory) {
                if ((r = parse_quantity_bytes(a->memory, &v)) < 0 || v == 0)
                        return error_set(err, -EINVAL,
                                         "--memory=%s: %s (bytes, or with a suffix: k M G T, powers of 1000, or Ki Mi "
                                         "Gi Ti, powers of 1024: \"512M\", \"1Gi\")",
                                         a->memory, r == -ERANGE ? "too large" : v == 0 && r >= 0 ? "must be greater than zero" : "not a quantity");
                if (add_isolator(list, "resource/memory", limit_value(json_object_new_string(a->memory))) < 0)
                        return error_sys(err, -ENOMEM, "--memory");
        }
        if (a->cpus) {
                if ((r = parse_cpu_millis(a->cpus, &v)) < 0 || v == 0)
                        return error_set(err, -EINVAL, "--cpus=%s: %s (\"2\", \"0.5\", at most 3 decimals, or "
                                         "millicores: \"500m\")",
                                         a->cpus, r == -ERANGE ? "too large" : v == 0 && r >= 0 ? "must be greater than zero" : "not a number of CPUs");
                if (add_isolator(list, "resource/cpu", limit_value(json_object_new_string(a->cpus))) < 0)
                        return error_sys(err, -ENOMEM, "--cpus");
        }
        if (a->pids_limit) {
                size_t n = strspn(a->pids_limit, "0123456789");
                long long l = n > 0 && n <= 10 && !a->pids_limit[n] ? atoll(a->pids_limit) : 0;
                if (l <= 0 || l > 1000000000)
                        return error_set(err, -EINVAL, "--pids-limit=%s: expected a number of tasks from 1 to "
                                         "1000000000", a->pids_limit);
                if (add_isolator(list, "sdpod/pids-limit", limit_value(json_object_new_int64(l))) < 0)
                        return error_sys(err, -ENOMEM, "--pids-limit");
        }
        return 0;
}

/* "net_admin", "CAP_NET_ADMIN" -> CAP_NET_ADMIN's number; "ALL" -> -2. */
static int capability_arg(const char *option, const char *name, Error **err) {
        char upper[64];
        size_t n = strlen(name);
        if (n + 5 > sizeof(upper))
                return error_set(err, -EINVAL, "--%s=%.32s...: not a capability", option, name);
        const char *prefix = strncasecmp(name, "CAP_", 4) == 0 ? "" : "CAP_";
        snprintf(upper, sizeof(upper), "%s%s", prefix, name);
        for (char *c = upper; *c; c++)
                *c = (char) toupper((unsigned char) *c);
        if (streq(upper, "CAP_ALL"))
                return -2;
        int cap = capability_from_name(upper);
        if (cap < 0)
                return error_set(err, -EINVAL, "--%s=%s: not a capability systemd 252 knows (such as NET_ADMIN, or ALL)",
                                 option, name);
        return cap;
}

static struct json_object *capability_set(uint64_t caps) {
        struct json_object *set = json_object_new_array(), *o = json_object_new_object();
        if (!set || !o) {
                json_object_put(set);
                json_object_put(o);
                return NULL;
        }
        for (int c = 0; c <= CAPABILITY_LAST; c++)
                if (caps & CAP_BIT(c))
                        json_object_array_add(set, json_object_new_string(capability_to_name(c)));
        json_object_object_add(o, "set", set);
        return o;
}

/* The app's capabilities as podman, docker and runc compute them: from the
 * default set (every capability with --cap-add=ALL), the drops taken away
 * first (--cap-drop=ALL: all of them), then the named adds put back; so
 * "--cap-drop=ALL --cap-add=NET_BIND_SERVICE" is exactly that one. */
static int capabilities(const AppArgs *a, const char *app, bool host_root, struct json_object *list, Error **err) {
        const uint64_t all = (CAP_BIT(CAPABILITY_LAST) << 1) - 1;
        uint64_t base = APP_CAPABILITIES_DEFAULT, add = 0, drop = 0;
        for (char **c = a->cap_add; c && *c; c++) {
                int cap = capability_arg("cap-add", *c, err);
                if (cap == -EINVAL)
                        return cap;
                if (cap == -2)
                        base = all;
                else
                        add |= CAP_BIT(cap);
        }
        for (char **c = a->cap_drop; c && *c; c++) {
                int cap = capability_arg("cap-drop", *c, err);
                if (cap == -EINVAL)
                        return cap;
                drop |= cap == -2 ? all : CAP_BIT(cap);
        }
        uint64_t caps = (base & ~drop) | add, beyond = caps & ~APP_CAPABILITIES_DEFAULT;
        /* The operator may widen an app's confinement (sdpod-security(7)),
         * but never without being told what it gives. */
        for (int c = 0; c <= CAPABILITY_LAST; c++)
                if (beyond & CAP_BIT(c))
                        warn("app %s: --cap-add gives it %s, beyond the default set: %s (sdpod-security(7))", app,
                             capability_to_name(c),
                             host_root ? "the pod has no user namespace, so it is the host's capability"
                                       : "the capability of the pod's user namespace, within what systemd-nspawn keeps");
        /* What CAP_MKNOD gives (sdpod-security(7), "Device nodes"). */
        if (beyond & CAP_BIT(27))
                warn("app %s: CAP_MKNOD %s", app,
                     host_root ? "lets it make a node of any host device: one opens only in the pod's /dev (every "
                                 "other mount of the pod is nodev), as far as the pod's device rule allows, and one "
                                 "made in a host volume is a real node on the host; to give it a device, use --device"
                               : "gives it nothing in a user namespace: the kernel refuses device nodes there");
        /* With it, the pod's PID 1 was the app's (the stage1's root, none
         * of an app's confinement): app-domain keeps it to its own. */
        if (beyond & CAP_BIT(19 /* SYS_PTRACE */))
                warn("app %s: CAP_SYS_PTRACE lets it trace its own processes, of any user, and no other app's nor the "
                     "pod's PID 1: each app is a Landlock domain of its own; on a kernel without Landlock the app does "
                     "not run (sdpod-security(7))",
                     app);
        int r = 0;
        if (beyond)
                r = add_isolator(list, "os/linux/capabilities-retain-set", capability_set(caps));
        else if (caps != APP_CAPABILITIES_DEFAULT)
                r = add_isolator(list, "os/linux/capabilities-remove-set",
                                 capability_set(APP_CAPABILITIES_DEFAULT & ~caps));
        return r < 0 ? error_sys(err, r, "--cap-add") : 0;
}

static int tmpfs_mounts(const AppArgs *a, struct json_object *list, Error **err) {
        if (!a->tmpfs)
                return 0;
        struct json_object *mounts = json_object_new_array(), *v = json_object_new_object();
        if (!mounts || !v || json_object_object_add(v, "mounts", mounts) < 0) {
                json_object_put(mounts);
                json_object_put(v);
                return error_sys(err, -ENOMEM, "--tmpfs");
        }
        for (char **t = a->tmpfs; *t; t++) {
                const char *colon = strchr(*t, ':');
                _cleanup_free_ char *path = colon ? strndup(*t, (size_t) (colon - *t)) : strdup(*t);
                const char *problem;
                int r;
                if (!path) {
                        json_object_put(v);
                        return error_sys(err, -ENOMEM, "--tmpfs");
                }
                if ((problem = app_mount_path_problem(path, false)) ||
                    (colon && (r = tmpfs_options_check(colon + 1, err)) < 0)) {
                        json_object_put(v);
                        return problem ? error_set(err, -EINVAL, "--tmpfs=%s: %s: %s", *t, path, problem)
                                       : error_prefix(err, "--tmpfs=%s", *t);
                }
                for (char **u = a->tmpfs; u < t; u++)
                        if (strncmp(*u, path, strlen(path)) == 0 && strchr(":", (*u)[strlen(path)])) {
                                json_object_put(v);
                                return error_set(err, -EINVAL, "--tmpfs=%s: a second tmpfs at %s", *t, path);
                        }
                struct json_object *m = json_object_new_object();
                if (!m || json_object_array_add(mounts, m) < 0) {
                        json_object_put(m);
                        json_object_put(v);
                        return error_sys(err, -ENOMEM, "--tmpfs");
                }
                json_object_object_add(m, "path", json_object_new_string(path));
                if (colon)
                        json_object_object_add(m, "options", json_object_new_string(colon + 1));
        }
        return add_isolator(list, "sdpod/tmpfs", v) < 0 ? error_sys(err, -ENOMEM, "--tmpfs") : 0;
}

int device_arg_parse(const char *s, char **ret_path, char **ret_node, char **ret_access, Error **err) {
        const char *colon = strchr(s, ':');
        _cleanup_free_ char *path = colon ? strndup(s, (size_t) (colon - s)) : strdup(s);
        _cleanup_free_ char *access = strdup(colon ? colon + 1 : "rw");
        if (!path || !access)
                return error_sys(err, -ENOMEM, "--device");
        const char *problem = app_mount_path_problem(path, true);
        if (problem)
                return error_set(err, -EINVAL, "--device=%s: %s", s, problem);
        if (!device_access_is_valid(access))
                return error_set(err, -EINVAL, "--device=%s: access \"%s\": expected r, w and m (at least one, each "
                                 "once)", s, access);
        /* The node the path leads to (/dev/disk/by-label/X is a link to
         * /dev/sdb1) is what is bound in: a link would be followed when
         * the pod starts, to wherever it leads then (/dev/stdin to the
         * terminal of whoever runs the pod). */
        _cleanup_free_ char *node = realpath(path, NULL);
        struct stat st;
        if (!node || stat(node, &st) < 0)
                return error_sys(err, -errno, "--device=%s", s);
        if (!startswith(node, "/dev/"))
                return error_set(err, -EINVAL, "--device=%s: %s leads to %s, not under /dev", s, path, node);
        if (!S_ISCHR(st.st_mode) && !S_ISBLK(st.st_mode))
                return error_set(err, -EINVAL, "--device=%s: %s is not a device node", s, node);
        if (ret_node)
                *ret_node = TAKE_PTR(node);
        *ret_path = TAKE_PTR(path);
        *ret_access = TAKE_PTR(access);
        return 0;
}

static int devices(const AppArgs *a, struct json_object *list, Error **err) {
        if (!a->devices)
                return 0;
        struct json_object *allow = json_object_new_array(), *v = json_object_new_object();
        if (!allow || !v || json_object_object_add(v, "allow", allow) < 0) {
                json_object_put(allow);
                json_object_put(v);
                return error_sys(err, -ENOMEM, "--device");
        }
        for (char **d = a->devices; *d; d++) {
                _cleanup_free_ char *path = NULL, *access = NULL;
                struct json_object *e = NULL;
                int r = device_arg_parse(*d, &path, NULL, &access, err);
                if (r >= 0 && (!(e = json_object_new_object()) || json_object_array_add(allow, e) < 0)) {
                        json_object_put(e);
                        r = error_sys(err, -ENOMEM, "--device");
                }
                if (r < 0) {
                        json_object_put(v);
                        return r;
                }
                json_object_object_add(e, "path", json_object_new_string(path));
                json_object_object_add(e, "access", json_object_new_string(access));
        }
        return add_isolator(list, "sdpod/devices", v) < 0 ? error_sys(err, -ENOMEM, "--device") : 0;
}

static int rlimits(const AppArgs *a, struct json_object *list, Error **err) {
        if (!a->rlimits)
                return 0;
        for (char **l = a->rlimits; *l; l++) {
                int r = rlimit_arg_check(*l, err);
                if (r < 0)
                        return r;
                size_t n = strcspn(*l, "=");
                for (char **o = a->rlimits; o < l; o++)
                        if (strncmp(*o, *l, n + 1) == 0)
                                return error_set(err, -EINVAL, "--rlimit=%s: a second limit of %.*s", *l, (int) n, *l);
        }
        struct json_object *v = json_object_new_object(), *limits = json_strv(a->rlimits);
        if (!v || !limits || json_object_object_add(v, "limits", limits) < 0) {
                json_object_put(v);
                json_object_put(limits);
                return error_sys(err, -ENOMEM, "--rlimit");
        }
        return add_isolator(list, "sdpod/rlimits", v) < 0 ? error_sys(err, -ENOMEM, "--rlimit") : 0;
}

/* The OCI spec's seccomp profile (or none: unconfined), and its masked
 * and read-only paths: sdpod's own isolators, which app-isolators.c checks
 * (the profile is compiled there, so a bad one is refused before the pod
 * has the app). */
static int oci_confinement(const AppArgs *a, struct json_object *list, Error **err) {
        if (a->seccomp_profile || a->seccomp_unconfined) {
                struct json_object *v = json_object_new_object(), *profile = NULL;
                if (!v)
                        return error_sys(err, -ENOMEM, "seccomp profile");
                if (a->seccomp_profile) {
                        int r = json_parse(a->seccomp_profile, strlen(a->seccomp_profile), "seccomp profile", &profile, err);
                        if (r < 0) {
                                json_object_put(v);
                                return r;
                        }
                        json_object_object_add(v, "profile", profile);
                } else
                        json_object_object_add(v, "unconfined", json_object_new_boolean(1));
                if (add_isolator(list, "sdpod/seccomp-oci", v) < 0)
                        return error_sys(err, -ENOMEM, "seccomp profile");
        }
        if (a->masked_paths || a->readonly_paths) {
                struct json_object *v = json_object_new_object();
                if (!v || (a->masked_paths && json_add_strv(v, "masked", a->masked_paths) < 0) ||
                    (a->readonly_paths && json_add_strv(v, "readonly", a->readonly_paths) < 0)) {
                        json_object_put(v);
                        return error_sys(err, -ENOMEM, "masked paths");
                }
                if (add_isolator(list, "sdpod/masked-paths", v) < 0)
                        return error_sys(err, -ENOMEM, "masked paths");
        }
        return 0;
}

int app_options_isolators(const AppArgs *a, const char *app, bool host_root, struct json_object **ret, Error **err) {
        struct json_object *list = json_object_new_array();
        if (!list)
                return error_sys(err, -ENOMEM, "app %s", app);
        int r = resources(a, list, err);
        if (r >= 0)
                r = capabilities(a, app, host_root, list, err);
        if (r >= 0)
                r = tmpfs_mounts(a, list, err);
        if (r >= 0)
                r = devices(a, list, err);
        if (r >= 0)
                r = rlimits(a, list, err);
        if (r >= 0)
                r = oci_confinement(a, list, err);
        if (r >= 0 && a->allow_new_privileges && add_isolator(list, "os/linux/no-new-privileges", json_object_new_boolean(0)) < 0)
                r = error_sys(err, -ENOMEM, "--no-new-privileges");
        if (r < 0) {
                json_object_put(list);
                return r;
        }
        *ret = list;
        return 0;
}
