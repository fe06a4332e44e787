/* SPDX-License-Identifier: Apache-2.0 */
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>

#include "basic/fs.h"
#include "basic/json-util.h"
#include "basic/time-util.h"
#include "net/cni.h"
#include "net/conntrack-limit.h"

/* A plugin's answer is a result or an error object: small. */
#define CNI_OUTPUT_MAX (1U << 20)
#define CNI_CONFIG_MAX (1U << 20)
/* A plugin that hangs (an iptables lock held for ever) must not hang the
 * pod's start or its gc. */
#define CNI_PLUGIN_TIMEOUT_MSEC (60 * 1000)

const char *cni_default_config(bool with_ports) {
#define DEFAULT_HEAD                                                                    \
        "{\n"                                                                          \
        "  \"cniVersion\": \"" CNI_VERSION "\",\n"                                   \
        "  \"name\": \"default\",\n"                                                 \
        "  \"plugins\": [\n"                                                          \
        "    {\n"                                                                      \
        "      \"type\": \"ptp\",\n"                                                 \
        "      \"ipMasq\": true,\n"                                                   \
        "      \"ipam\": {\n"                                                          \
        "        \"type\": \"host-local\",\n"                                        \
        "        \"ranges\": [ [ { \"subnet\": \"10.77.0.0/16\" } ] ],\n"           \
        "        \"routes\": [ { \"dst\": \"0.0.0.0/0\" } ],\n"                     \
        "        \"dataDir\": \"/run/sdpod/cni/networks\"\n"                          \
        "      }\n"                                                                    \
        "    },\n"
#define DEFAULT_PORTMAP "    { \"type\": \"portmap\", \"capabilities\": { \"portMappings\": true } },\n"
#define DEFAULT_TAIL                                                                    \
        "    { \"type\": \"firewall\" },\n"                                           \
        "    { \"type\": \"" CONNTRACK_PLUGIN "\", \"capabilities\": { \"" CONNTRACK_CAPABILITY "\": true } }\n" \
        "  ]\n"                                                                         \
        "}\n"
        return with_ports ? DEFAULT_HEAD DEFAULT_PORTMAP DEFAULT_TAIL : DEFAULT_HEAD DEFAULT_TAIL;
}

static bool plugin_type_is_valid(const char *s) {
        return *s && *s != '.' && !strchr(s, '/') && strlen(s) < 128;
}

/* Checks list as a configuration list of the network name, or wraps a
 * single plugin's configuration into one. Takes the reference. */
static int config_check(struct json_object *o, const char *name, const char *what, struct json_object **ret, Error **err) {
        _cleanup_json_ struct json_object *doc = o;
        const char *version, *list_name;
        struct json_object *plugins;
        if (!json_object_is_type(o, json_type_object))
                return error_set(err, -EBADMSG, "%s: expected a JSON object", what);
        if (json_get_string(o, "cniVersion", true, &version, what, err) < 0 ||
            json_get_string(o, "name", true, &list_name, what, err) < 0 ||
            json_get_array(o, "plugins", false, &plugins, what, err) < 0)
                return -EBADMSG;
        if (!streq(list_name, name))
                return error_set(err, -EBADMSG, "%s: its name is \"%s\", not \"%s\" as the file's", what, list_name, name);
        if (!plugins) {
                /* A .conf: the object is the plugin. */
                _cleanup_json_ struct json_object *list = json_object_new_object(), *a = json_object_new_array();
                if (!list || !a || json_add_string(list, "cniVersion", version) < 0 ||
                    json_add_string(list, "name", name) < 0 || json_object_array_add(a, json_object_get(o)) < 0)
                        return error_sys(err, -ENOMEM, "%s", what);
                json_object_object_add(list, "plugins", TAKE_PTR(a));
                json_object_put(TAKE_PTR(doc));
                doc = TAKE_PTR(list);
                plugins = json_object_object_get(doc, "plugins");
        }
        size_t n = json_object_array_length(plugins);
        if (n == 0)
                return error_set(err, -EBADMSG, "%s: \"plugins\" is empty", what);
        for (size_t i = 0; i < n; i++) {
                struct json_object *p = json_object_array_get_idx(plugins, i);
                const char *type;
                char where[256];
                snprintf(where, sizeof(where), "%s: plugins[%zu]", what, i);
                if (!json_object_is_type(p, json_type_object))
                        return error_set(err, -EBADMSG, "%s: expected an object", where);
                if (json_get_string(p, "type", true, &type, where, err) < 0)
                        return -EBADMSG;
                if (!plugin_type_is_valid(type))
                        return error_set(err, -EBADMSG, "%s: type \"%s\" is not a plugin's file name", where, type);
        }
        *ret = TAKE_PTR(doc);
        return 0;
}

int cni_config_load(const char *name, bool with_ports, struct json_object **ret, Error **err) {
        const char *dir = getenv("SDPOD_NET_DIR") ?: CNI_CONFIG_DIR;
        static const char *const suffixes[] = { ".conflist", ".conf" };
        for (size_t i = 0; i < ELEMENTSOF(suffixes); i++) {
                _cleanup_free_ char *path = NULL, *data = NULL;
                size_t size;
                if (asprintf(&path, "%s/%s%s", dir, name, suffixes[i]) < 0)
                        return error_sys(err, -ENOMEM, "network %s", name);
                int r = read_file(path, CNI_CONFIG_MAX, &data, &size, err);
                if (r == -ENOENT) {
                        error_free(TAKE_PTR(*err));
                        continue;
                }
                if (r < 0)
                        return error_prefix(err, "network %s", name);
                struct json_object *o;
                if ((r = json_parse(data, size, path, &o, err)) < 0)
                        return error_prefix(err, "network %s", name);
                return config_check(o, name, path, ret, err) < 0 ? error_prefix(err, "network %s", name) : 0;
        }
        if (streq(name, "default")) {
                const char *text = cni_default_config(with_ports);
                struct json_object *o;
                if (json_parse(text, strlen(text), "the built-in default network", &o, err) < 0)
                        return -EBADMSG;
                return config_check(o, name, "the built-in default network", ret, err);
        }
        return error_set(err, -ENOENT, "network %s: no %s/%s.conflist or .conf", name, dir, name);
}

/* Where plugins are looked for, and what they are told as CNI_PATH. */
static const char *plugin_path(void) {
        return getenv("SDPOD_CNI_PATH") ?: CNI_PLUGIN_PATH;
}

/* The plugin's executable: the first of the plugin path. */
static int find_plugin(const char *type, char **ret_path, Error **err) {
        const char *path = plugin_path();
        _cleanup_free_ char *copy = strdup(path);
        if (!copy)
                return error_sys(err, -ENOMEM, "plugin %s", type);
        char *save = NULL;
        for (char *dir = strtok_r(copy, ":", &save); dir; dir = strtok_r(NULL, ":", &save)) {
                char *p = NULL;
                struct stat st;
                if (asprintf(&p, "%s/%s", dir, type) < 0)
                        return error_sys(err, -ENOMEM, "plugin %s", type);
                if (stat(p, &st) == 0 && S_ISREG(st.st_mode) && (st.st_mode & 0111)) {
                        *ret_path = p;
                        return 0;
                }
                free(p);
        }
        return error_set(err, -ENOENT, "plugin %s not found in %s (is containernetworking-plugins installed?)", type, path);
}

/* The plugin's configuration: its object of the list with the list's name
 * and version, prevResult, and the runtimeConfig it has the capability
 * for. */
static struct json_object *plugin_config(struct json_object *list, struct json_object *plugin, struct json_object *prev,
                                         struct json_object *runtime_config) {
        struct json_object *c = NULL;
        if (json_object_deep_copy(plugin, &c, NULL) < 0)
                return NULL;
        json_object_object_add(c, "cniVersion", json_object_get(json_object_object_get(list, "cniVersion")));
        json_object_object_add(c, "name", json_object_get(json_object_object_get(list, "name")));
        if (prev)
                json_object_object_add(c, "prevResult", json_object_get(prev));
        struct json_object *caps = json_object_object_get(plugin, "capabilities"), *rc = NULL;
        if (runtime_config && caps && json_object_is_type(caps, json_type_object)) {
                json_object_object_foreach(caps, key, wanted) {
                        struct json_object *v = json_object_object_get(runtime_config, key);
                        if (!v || !json_object_get_boolean(wanted))
                                continue;
                        if (!rc && !(rc = json_object_new_object()))
                                break;
                        json_object_object_add(rc, key, json_object_get(v));
                }
        }
        if (rc)
                json_object_object_add(c, "runtimeConfig", rc);
        return c;
}

static void exec_plugin(const char *path, const char *command, const CniAttachment *a, int in, int out) {
        char *env[8];
        size_t n = 0;
        if (asprintf(&env[n++], "CNI_COMMAND=%s", command) < 0 ||
            asprintf(&env[n++], "CNI_CONTAINERID=%s", a->container_id) < 0 ||
            asprintf(&env[n++], "CNI_NETNS=%s", a->netns) < 0 || asprintf(&env[n++], "CNI_IFNAME=%s", a->ifname) < 0 ||
            asprintf(&env[n++], "CNI_ARGS=%s", strempty(a->args)) < 0 ||
            asprintf(&env[n++], "CNI_PATH=%s", plugin_path()) < 0)
                _exit(127);
        /* Plugins run iptables and the like: a PATH of the host's tools. */
        env[n++] = (char *) "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
        env[n] = NULL;
        if (dup2(in, 0) < 0 || dup2(out, 1) < 0)
                _exit(127);
        char *argv[] = { (char *) path, NULL };
        execve(path, argv, env);
        _exit(127);
}

/* Runs one plugin; its output in *ret_output (NUL-terminated). Returns its
 * exit status, or a negative errno when it could not be run. */
static int run_plugin(const char *path, const char *command, const CniAttachment *a, const char *config,
                      char **ret_output, Error **err) {
        int in[2] = { -1, -1 }, out[2] = { -1, -1 };
        if (pipe2(in, O_CLOEXEC) < 0 || pipe2(out, O_CLOEXEC) < 0) {
                int r = -errno;
                close(in[0]), close(in[1]);
                return error_sys(err, r, "cannot run %s", path);
        }
        _cleanup_close_ int in_w = in[1], out_r = out[0];
        pid_t pid = fork();
        if (pid == 0)
                exec_plugin(path, command, a, in[0], out[1]);
        int r = pid < 0 ? -errno : 0;
        close(in[0]), close(out[1]);
        if (r < 0)
                return error_sys(err, r, "cannot run %s", path);

        /* Its configuration is small next to the pipe's buffer, but a
         * plugin that does not read it must not block us: the write is
         * non-blocking, and what does not fit is an error. */
        size_t size = strlen(config);
        fcntl(in_w, F_SETFL, O_NONBLOCK);
        if (write(in_w, config, size) != (ssize_t) size)
                r = error_sys(err, -EIO, "%s: cannot pass its configuration (%zu bytes)", path, size);
        close(TAKE_FD(in_w));

        _cleanup_free_ char *output = malloc(CNI_OUTPUT_MAX + 1);
        size_t have = 0;
        uint64_t deadline = now_usec() + CNI_PLUGIN_TIMEOUT_MSEC * 1000ULL;
        while (r >= 0 && output) {
                uint64_t now = now_usec();
                struct pollfd p = { out_r, POLLIN, 0 };
                int k = now >= deadline ? 0 : poll(&p, 1, (int) ((deadline - now) / 1000) + 1);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k <= 0) {
                        r = error_set(err, -ETIMEDOUT, "%s %s: no answer in %d s", path, command, CNI_PLUGIN_TIMEOUT_MSEC / 1000);
                        break;
                }
                ssize_t got = read(out_r, output + have, CNI_OUTPUT_MAX - have);
                if (got < 0 && errno == EINTR)
                        continue;
                if (got <= 0)
                        break;
                have += (size_t) got;
                if (have == CNI_OUTPUT_MAX)
                        r = error_set(err, -EFBIG, "%s %s: its output exceeds %u bytes", path, command, CNI_OUTPUT_MAX);
        }
        if (!output && r >= 0)
                r = error_sys(err, -ENOMEM, "%s", path);
        if (r < 0)
                kill(pid, SIGKILL);
        int status;
        while (waitpid(pid, &status, 0) < 0)
                if (errno != EINTR)
                        return error_sys(err, -errno, "%s", path);
        if (r < 0)
                return r;
        output[have] = 0;
        *ret_output = TAKE_PTR(output);
        if (WIFEXITED(status))
                return WEXITSTATUS(status);
        free(TAKE_PTR(*ret_output));
        return error_set(err, -EPROTO, "%s %s: killed by signal %d", path, command, WTERMSIG(status));
}

/* Runs command for the plugin of list; on success its result (ADD), else
 * an error naming the network and plugin with what the plugin said. */
static int plugin_call(const char *command, const CniAttachment *a, struct json_object *list, struct json_object *plugin,
                       struct json_object *prev, struct json_object **ret_result, Error **err) {
        const char *network = json_object_get_string(json_object_object_get(list, "name"));
        const char *type = json_object_get_string(json_object_object_get(plugin, "type"));
        _cleanup_free_ char *path = NULL, *output = NULL;
        _cleanup_json_ struct json_object *config = plugin_config(list, plugin, prev, a->runtime_config);
        if (!config)
                return error_sys(err, -ENOMEM, "network %s", network);
        if (find_plugin(type, &path, err) < 0)
                return error_prefix(err, "network %s", network);
        int status = run_plugin(path, command, a, json_to_text(config, false), &output, err);
        if (status < 0)
                return error_prefix(err, "network %s", network);
        _cleanup_json_ struct json_object *answer = NULL;
        if (*output) {
                Error *parse_err = NULL;
                if (json_parse(output, strlen(output), "its output", &answer, &parse_err) < 0)
                        error_free(parse_err);
        }
        if (status != 0) {
                const char *msg = answer ? json_object_get_string(json_object_object_get(answer, "msg")) : NULL;
                const char *details = answer ? json_object_get_string(json_object_object_get(answer, "details")) : NULL;
                return error_set(err, -EPROTO, "network %s: plugin %s %s failed: %s%s%s%s", network, type, command,
                                 msg ?: "(no message)", details && *details ? " (" : "", details ?: "",
                                 details && *details ? ")" : "");
        }
        if (ret_result) {
                if (!answer || !json_object_is_type(answer, json_type_object))
                        return error_set(err, -EPROTO, "network %s: plugin %s %s printed no result", network, type, command);
                *ret_result = TAKE_PTR(answer);
        }
        return 0;
}

int cni_del(const CniAttachment *a, struct json_object *list, struct json_object *result, Error **err) {
        struct json_object *plugins = json_object_object_get(list, "plugins");
        int r = 0;
        for (size_t i = json_object_array_length(plugins); i > 0; i--) {
                Error *e = NULL;
                int k = plugin_call("DEL", a, list, json_object_array_get_idx(plugins, i - 1), result, NULL, &e);
                if (k < 0 && r == 0) {
                        r = k;
                        if (err && !*err)
                                *err = TAKE_PTR(e);
                }
                error_free(e);
        }
        return r;
}

int cni_add(const CniAttachment *a, struct json_object *list, struct json_object **ret_result, Error **err) {
        struct json_object *plugins = json_object_object_get(list, "plugins");
        _cleanup_json_ struct json_object *result = NULL;
        for (size_t i = 0, n = json_object_array_length(plugins); i < n; i++) {
                struct json_object *next = NULL;
                int r = plugin_call("ADD", a, list, json_object_array_get_idx(plugins, i), result, &next, err);
                if (r < 0) {
                        /* Undone as a whole: DEL of every plugin is what the
                         * specification asks of a runtime whose ADD failed. */
                        (void) cni_del(a, list, result, NULL);
                        return r;
                }
                json_object_put(result);
                result = next;
        }
        *ret_result = TAKE_PTR(result);
        return 0;
}
