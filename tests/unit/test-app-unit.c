/* SPDX-License-Identifier: Apache-2.0 */
#include <fcntl.h>
#include <sys/stat.h>

#include "basic/fs.h"
#include "basic/json-util.h"
#include "basic/quantity.h"
#include "basic/strv.h"
#include "basic/utf8.h"
#include "tests.h"
#include "unit/app-isolators.h"
#include "unit/app-unit.h"

/* systemd's rules for a command line (systemd.service(5) "Command lines",
 * systemd.unit(5) "Specifiers", systemd.syntax(7) "Quoting"), as far as
 * unit_quote_word() relies on them, in the order systemd applies them:
 * specifiers on the whole line ("%%" is "%"); words split at whitespace,
 * with double quotes and C escapes (\\ \" \n \t \xNN and the others);
 * then, when the command runs, "$$" is "$" in the arguments. A reference
 * written from the documentation, to show that what we write reads back as
 * what we meant. Returns NULL for anything it does not accept. */
static char **parse_command_line(const char *line, bool exec_args) {
        _cleanup_free_ char *expanded = malloc(strlen(line) + 1);
        ASSERT(expanded);
        size_t n = 0;
        for (const char *p = line; *p; p++) {
                if (*p == '%') {
                        if (p[1] != '%')
                                return NULL; /* an unintended specifier */
                        p++;
                }
                expanded[n++] = *p;
        }
        expanded[n] = 0;

        char **words = NULL;
        for (const char *p = expanded;;) {
                while (*p == ' ' || *p == '\t')
                        p++;
                if (!*p)
                        break;
                char word[4096];
                size_t w = 0;
                bool quoted = false;
                for (; *p && (quoted || (*p != ' ' && *p != '\t')); p++) {
                        if (*p == '"') {
                                quoted = !quoted;
                                continue;
                        }
                        if (*p != '\\') {
                                word[w++] = *p;
                                continue;
                        }
                        p++;
                        switch (*p) {
                        case 'n': word[w++] = '\n'; break;
                        case 't': word[w++] = '\t'; break;
                        case 'r': word[w++] = '\r'; break;
                        case 'a': word[w++] = '\a'; break;
                        case 'b': word[w++] = '\b'; break;
                        case 'f': word[w++] = '\f'; break;
                        case 'v': word[w++] = '\v'; break;
                        case 's': word[w++] = ' '; break;
                        case '\\': case '"': case '\'': word[w++] = *p; break;
                        case 'x': {
                                char hex[3] = { p[1], p[2], 0 };
                                char *end;
                                long v = strtol(hex, &end, 16);
                                if (end != hex + 2 || v == 0)
                                        goto fail;
                                word[w++] = (char) v;
                                p += 2;
                                break;
                        }
                        default:
                                goto fail;
                        }
                }
                if (quoted)
                        goto fail;
                word[w] = 0;
                if (exec_args) {
                        /* "$$" is "$"; a lone "$" would start a variable */
                        char *o = word;
                        for (char *i = word; *i; i++) {
                                if (*i == '$') {
                                        if (i[1] != '$')
                                                goto fail;
                                        i++;
                                }
                                *o++ = *i;
                        }
                        *o = 0;
                }
                ASSERT(strv_push(&words, word) == 0);
        }
        return words ?: calloc(1, sizeof(char *));
fail:
        strv_free(words);
        return NULL;
}

static void test_quote_roundtrip(void) {
        static const char *const odd[] = {
                "", " ", "plain", "a b", "\"", "\\", "\\\"", "'single'", "$", "$$", "$HOME", "${X}", "%", "%%", "%n",
                "100%", "\n", "line\nbreak", "\t", "\r", "\x01", "\x1b[31m", "\x7f", "ünï€😀", "\xff", "\xc3", "\xe2\x82",
                "\xed\xa0\x80" /* a surrogate */, ";", "\\;", "-", "@at", "a\\nb", "\\x41", "trailing\\",
                "=", "NAME=value with spaces", "#not a comment", "x\x02y",
        };
        for (int exec_arg = 0; exec_arg <= 1; exec_arg++)
                for (size_t i = 0; i < ELEMENTSOF(odd); i++) {
                        _cleanup_free_ char *q = unit_quote_word(odd[i], exec_arg);
                        ASSERT(q);
                        /* one line, one word, ASCII or valid UTF-8 */
                        ASSERT(!strchr(q, '\n'));
                        ASSERT(utf8_is_valid(q));
                        ASSERT(q[0] != '#' && q[0] != ';');
                        _cleanup_strv_free_ char **words = parse_command_line(q, exec_arg);
                        if (!words || strv_length(words) != 1 || !streq(words[0], odd[i]))
                                fprintf(stderr, "word %zu (exec_arg=%d) written as [%s]\n", i, exec_arg, q);
                        ASSERT(words);
                        ASSERT_EQ_INT(strv_length(words), 1);
                        ASSERT_STREQ(words[0], odd[i]);
                }

        /* and a whole command line of them */
        char *line = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&line, &size);
        ASSERT(f);
        for (size_t i = 0; i < ELEMENTSOF(odd); i++) {
                _cleanup_free_ char *q = unit_quote_word(odd[i], true);
                fprintf(f, "%s%s", i ? " " : "", q);
        }
        ASSERT(fclose(f) == 0);
        _cleanup_strv_free_ char **words = parse_command_line(line, true);
        ASSERT(words);
        ASSERT_EQ_INT(strv_length(words), ELEMENTSOF(odd));
        for (size_t i = 0; i < ELEMENTSOF(odd); i++)
                ASSERT_STREQ(words[i], odd[i]);
        free(line);
}

static void expect_quoted(const char *s, bool exec_arg, const char *expected) {
        _cleanup_free_ char *q = unit_quote_word(s, exec_arg);
        ASSERT_STREQ(q, expected);
}

static void test_quote_forms(void) {
        expect_quoted("/usr/bin/nginx", true, "/usr/bin/nginx");
        expect_quoted("-g", true, "-g");
        expect_quoted("daemon off;", true, "\"daemon off;\"");
        expect_quoted("", true, "\"\"");
        expect_quoted("$HOME", true, "$$HOME");
        expect_quoted("$HOME", false, "$HOME");
        expect_quoted("100%", false, "100%%");
        expect_quoted("a\"b\\c\n", true, "\"a\\\"b\\\\c\\n\"");
        expect_quoted("\x01\x7f", true, "\"\\x01\\x7f\"");
        expect_quoted("\xff", true, "\"\\xff\"");
        expect_quoted("é", true, "\"é\"");
        expect_quoted(";", true, "\";\"");
}

static void test_utf8(void) {
        ASSERT(utf8_is_valid(""));
        ASSERT(utf8_is_valid("ascii"));
        ASSERT(utf8_is_valid("ünï€😀"));
        ASSERT(!utf8_is_valid("\xff"));
        ASSERT(!utf8_is_valid("\xc3"));
        ASSERT(!utf8_is_valid("\xc0\xaf"));             /* overlong "/" */
        ASSERT(!utf8_is_valid("\xed\xa0\x80"));         /* surrogate */
        ASSERT(!utf8_is_valid("\xf4\x90\x80\x80"));     /* beyond U+10FFFF */
        ASSERT(!utf8_is_valid("\xe2\x82"));
}

static void test_quantities(void) {
        uint64_t v = 0;
        ASSERT_EQ_INT(parse_quantity_bytes("512M", &v), 0);
        ASSERT_EQ_INT(v, 512000000);
        ASSERT_EQ_INT(parse_quantity_bytes("512Mi", &v), 0);
        ASSERT_EQ_INT(v, 512ULL << 20);
        ASSERT_EQ_INT(parse_quantity_bytes("1k", &v), 0);
        ASSERT_EQ_INT(v, 1000);
        ASSERT_EQ_INT(parse_quantity_bytes("1Ki", &v), 0);
        ASSERT_EQ_INT(v, 1024);
        ASSERT_EQ_INT(parse_quantity_bytes("2G", &v), 0);
        ASSERT_EQ_INT(v, 2000000000ULL);
        ASSERT_EQ_INT(parse_quantity_bytes("3Ti", &v), 0);
        ASSERT_EQ_INT(v, 3ULL << 40);
        ASSERT_EQ_INT(parse_quantity_bytes("1.5Gi", &v), 0);
        ASSERT_EQ_INT(v, 3ULL << 29);
        ASSERT_EQ_INT(parse_quantity_bytes("0.5k", &v), 0);
        ASSERT_EQ_INT(v, 500);
        ASSERT_EQ_INT(parse_quantity_bytes("1.0001k", &v), 0);
        ASSERT_EQ_INT(v, 1001); /* 1000.1 bytes, rounded up */
        ASSERT_EQ_INT(parse_quantity_bytes("1048576", &v), 0);
        ASSERT_EQ_INT(v, 1048576);
        ASSERT_EQ_INT(parse_quantity_bytes("15Ei", &v), 0);
        ASSERT_EQ_INT(parse_quantity_bytes("16Ei", &v), -ERANGE);
        ASSERT_EQ_INT(parse_quantity_bytes("99999999999999999999", &v), -ERANGE);
        ASSERT_EQ_INT(parse_quantity_bytes("", &v), -EINVAL);
        ASSERT_EQ_INT(parse_quantity_bytes("M", &v), -EINVAL);
        ASSERT_EQ_INT(parse_quantity_bytes("1m", &v), -EINVAL);  /* milli-bytes: no */
        ASSERT_EQ_INT(parse_quantity_bytes("1KB", &v), -EINVAL);
        ASSERT_EQ_INT(parse_quantity_bytes("1 M", &v), -EINVAL);
        ASSERT_EQ_INT(parse_quantity_bytes("-1", &v), -EINVAL);
        ASSERT_EQ_INT(parse_quantity_bytes("1.", &v), -EINVAL);
        ASSERT_EQ_INT(parse_quantity_bytes(".5", &v), -EINVAL);
        ASSERT_EQ_INT(parse_quantity_bytes("1e3", &v), -EINVAL);

        ASSERT_EQ_INT(parse_cpu_millis("500m", &v), 0);
        ASSERT_EQ_INT(v, 500);
        ASSERT_EQ_INT(parse_cpu_millis("2", &v), 0);
        ASSERT_EQ_INT(v, 2000);
        ASSERT_EQ_INT(parse_cpu_millis("1.5", &v), 0);
        ASSERT_EQ_INT(v, 1500);
        ASSERT_EQ_INT(parse_cpu_millis("0.001", &v), 0);
        ASSERT_EQ_INT(v, 1);
        ASSERT_EQ_INT(parse_cpu_millis("0.0001", &v), -EINVAL);
        ASSERT_EQ_INT(parse_cpu_millis("1.5m", &v), -EINVAL);
        ASSERT_EQ_INT(parse_cpu_millis("2k", &v), -EINVAL);
        ASSERT_EQ_INT(parse_cpu_millis("", &v), -EINVAL);

        char quota[CPU_QUOTA_MAX];
        format_cpu_quota(1500, quota);
        ASSERT_STREQ(quota, "150%");
        format_cpu_quota(25, quota);
        ASSERT_STREQ(quota, "2.5%");
        format_cpu_quota(10, quota);
        ASSERT_STREQ(quota, "1%");
}

static void test_names(void) {
        ASSERT_EQ_INT(capability_from_name("CAP_CHOWN"), 0);
        ASSERT_EQ_INT(capability_from_name("CAP_CHECKPOINT_RESTORE"), 40);
        ASSERT_EQ_INT(capability_from_name("cap_chown"), -EINVAL);
        ASSERT_EQ_INT(capability_from_name("CHOWN"), -EINVAL);
        ASSERT_EQ_INT(capability_from_name("CAP_BOGUS"), -EINVAL);
        ASSERT_STREQ(capability_to_name(21), "CAP_SYS_ADMIN");
        ASSERT(!capability_to_name(41));
        ASSERT(syscall_name_is_valid("read"));
        ASSERT(syscall_name_is_valid("kexec_load"));
        ASSERT(syscall_name_is_valid("@system-service"));
        ASSERT(syscall_name_is_valid("@known"));
        ASSERT(!syscall_name_is_valid("@sandbox"));     /* systemd 253+ */
        ASSERT(!syscall_name_is_valid("bogus_call"));
        ASSERT(!syscall_name_is_valid("read write"));
        ASSERT(!syscall_name_is_valid("read:EPERM"));
        ASSERT(!syscall_name_is_valid(""));
        ASSERT(errno_name_is_valid("EPERM"));
        ASSERT(errno_name_is_valid("ENOSYS"));
        ASSERT(!errno_name_is_valid("EBOGUS"));
        ASSERT(!errno_name_is_valid("eperm"));
        ASSERT(!errno_name_is_valid("1"));
}

/* Parses a JSON array of isolators the way the manifest hands them over. */
static int isolation_of(const char *json, AppIsolation *ret, Error **err) {
        _cleanup_json_ struct json_object *a = json_tokener_parse(json);
        ASSERT(a && json_object_is_type(a, json_type_array));
        size_t n = json_object_array_length(a);
        PodIsolator list[16];
        ASSERT(n <= 16);
        for (size_t i = 0; i < n; i++) {
                struct json_object *e = json_object_array_get_idx(a, i), *name = NULL, *value = NULL;
                json_object_object_get_ex(e, "name", &name);
                json_object_object_get_ex(e, "value", &value);
                list[i] = (PodIsolator) { .name = json_object_get_string(name), .value = value };
        }
        return app_isolation_parse(list, n, "apps[0].app.isolators", ret, err);
}

static void expect_isolation_error(const char *json, const char *msg) {
        AppIsolation iso = {};
        Error *err = NULL;
        ASSERT_EQ_INT(isolation_of(json, &iso, &err), -EINVAL);
        ASSERT_STREQ(err->msg, msg);
        error_free(err);
}

static void test_isolators(void) {
        AppIsolation iso = {};
        Error *err = NULL;
        ASSERT_EQ_INT(isolation_of("[]", &iso, &err), 0);
        ASSERT_EQ_INT(iso.capabilities, APP_CAPABILITIES_DEFAULT);
        ASSERT(!iso.memory_max && !iso.cpu_millis && !iso.have_oom_score_adjust);
        /* Confined by default: NoNewPrivileges, no namespaces, the filter
         * of the common container default, refusing with EPERM. */
        ASSERT(iso.no_new_privileges && iso.restrict_namespaces && iso.syscalls_native_only);
        ASSERT(strv_length(iso.syscalls_allowed) == 3 && streq(iso.syscalls_allowed[0], "@system-service"));
        ASSERT(strv_contains(iso.syscalls_denied, "io_uring_setup") && strv_contains(iso.syscalls_denied, "@keyring"));
        ASSERT_STREQ(iso.syscall_errno, "EPERM");
        app_isolation_done(&iso);
        /* the default set is the classic container one less CAP_NET_RAW
         * and CAP_MKNOD (a node of any host device), 12 */
        ASSERT_EQ_INT(__builtin_popcountll(APP_CAPABILITIES_DEFAULT), 12);
        ASSERT(!(APP_CAPABILITIES_DEFAULT & CAP_BIT(13)));
        ASSERT(!(APP_CAPABILITIES_DEFAULT & CAP_BIT(27)));

        ASSERT_EQ_INT(isolation_of("[{\"name\": \"os/linux/capabilities-retain-set\", \"value\": {\"set\": "
                                   "[\"CAP_SYS_ADMIN\", \"CAP_CHOWN\"]}},"
                                   " {\"name\": \"resource/memory\", \"value\": {\"limit\": 1048576, \"request\": \"1Ki\"}},"
                                   " {\"name\": \"resource/cpu\", \"value\": {\"limit\": \"250m\"}},"
                                   " {\"name\": \"os/linux/oom-score-adj\", \"value\": -1000},"
                                   " {\"name\": \"os/linux/no-new-privileges\", \"value\": true},"
                                   " {\"name\": \"os/linux/seccomp-retain-set\", \"value\": {\"set\": [\"@system-service\"]}},"
                                   " {\"name\": \"example.com/ignored\", \"value\": null}]",
                                   &iso, &err),
                      0);
        ASSERT_EQ_INT(iso.capabilities, CAP_BIT(21) | CAP_BIT(0));
        ASSERT_EQ_INT(iso.memory_max, 1048576);
        ASSERT_EQ_INT(iso.cpu_millis, 250);
        ASSERT(iso.have_oom_score_adjust && iso.oom_score_adjust == -1000);
        ASSERT(iso.no_new_privileges);
        /* A seccomp isolator replaces the default filter as a whole. */
        ASSERT(iso.syscalls_allowed && !iso.syscalls_denied && !iso.syscall_errno && !iso.syscalls_native_only);
        ASSERT_STREQ(iso.syscalls_allowed[0], "@system-service");
        ASSERT(!iso.syscalls_allowed[1]);
        app_isolation_done(&iso);

        /* Widening: a remove-set refuses only its own set; no NoNewPrivileges. */
        ASSERT_EQ_INT(isolation_of("[{\"name\": \"os/linux/seccomp-remove-set\", \"value\": {\"set\": [\"@reboot\"], "
                                   "\"errno\": \"ENOSYS\"}},"
                                   " {\"name\": \"os/linux/no-new-privileges\", \"value\": false}]",
                                   &iso, &err),
                      0);
        ASSERT(!iso.syscalls_allowed && iso.syscalls_denied && !iso.syscalls_denied[1]);
        ASSERT_STREQ(iso.syscalls_denied[0], "@reboot");
        ASSERT_STREQ(iso.syscall_errno, "ENOSYS");
        ASSERT(!iso.no_new_privileges);
        app_isolation_done(&iso);

        ASSERT_EQ_INT(isolation_of("[{\"name\": \"os/linux/capabilities-remove-set\", \"value\": {\"set\": "
                                   "[\"CAP_NET_RAW\", \"CAP_SYS_ADMIN\"]}}]",
                                   &iso, &err),
                      0);
        ASSERT_EQ_INT(iso.capabilities, APP_CAPABILITIES_DEFAULT & ~CAP_BIT(21));
        app_isolation_done(&iso);

        expect_isolation_error("[{\"name\": \"os/linux/selinux-context\", \"value\": {}}]",
                               "apps[0].app.isolators[0].name: isolator \"os/linux/selinux-context\" is not supported "
                               "by sdpod (see sdpod-generator(8))");
        expect_isolation_error("[{\"name\": \"resource/network-bandwidth\", \"value\": {}}]",
                               "apps[0].app.isolators[0].name: isolator \"resource/network-bandwidth\" is not supported "
                               "by sdpod (see sdpod-generator(8))");
        expect_isolation_error("[{\"name\": \"os/linux/capabilities-retain-set\", \"value\": {\"set\": [\"CAP_CHOWN\"]}},"
                               " {\"name\": \"os/linux/capabilities-remove-set\", \"value\": {\"set\": [\"CAP_CHOWN\"]}}]",
                               "apps[0].app.isolators[1].name: \"os/linux/capabilities-remove-set\" conflicts with "
                               "apps[0].app.isolators[0] (\"os/linux/capabilities-retain-set\")");
        expect_isolation_error("[{\"name\": \"resource/memory\", \"value\": {\"limit\": \"1G\"}},"
                               " {\"name\": \"resource/memory\", \"value\": {\"limit\": \"2G\"}}]",
                               "apps[0].app.isolators[1].name: \"resource/memory\" conflicts with "
                               "apps[0].app.isolators[0] (\"resource/memory\")");
        expect_isolation_error("[{\"name\": \"resource/memory\", \"value\": {\"limit\": \"lots\"}}]",
                               "apps[0].app.isolators[0].value.limit (resource/memory): \"lots\" is not a quantity "
                               "(\"512M\", \"1Gi\", \"1048576\")");
        expect_isolation_error("[{\"name\": \"resource/memory\", \"value\": {\"request\": \"1G\"}}]",
                               "apps[0].app.isolators[0].value.limit (resource/memory): missing");
        expect_isolation_error("[{\"name\": \"resource/memory\", \"value\": {\"limit\": \"0\"}}]",
                               "apps[0].app.isolators[0].value.limit (resource/memory): must be greater than zero");
        expect_isolation_error("[{\"name\": \"resource/cpu\", \"value\": {\"limit\": \"1\", \"max\": 2}}]",
                               "apps[0].app.isolators[0].value (resource/cpu): unknown field \"max\"");
        expect_isolation_error("[{\"name\": \"resource/cpu\", \"value\": \"1\"}]",
                               "apps[0].app.isolators[0].value (resource/cpu): expected an object");
        expect_isolation_error("[{\"name\": \"os/linux/no-new-privileges\", \"value\": \"yes\"}]",
                               "apps[0].app.isolators[0].value (os/linux/no-new-privileges): expected true or false");
        expect_isolation_error("[{\"name\": \"os/linux/oom-score-adj\", \"value\": 1001}]",
                               "apps[0].app.isolators[0].value (os/linux/oom-score-adj): must be between -1000 and 1000");
        expect_isolation_error("[{\"name\": \"os/linux/seccomp-remove-set\", \"value\": {\"set\": []}}]",
                               "apps[0].app.isolators[0].value.set (os/linux/seccomp-remove-set): must not be empty");
        expect_isolation_error("[{\"name\": \"os/linux/seccomp-remove-set\", \"value\": {\"set\": [\"read\", \"x y\"]}}]",
                               "apps[0].app.isolators[0].value.set[1] (os/linux/seccomp-remove-set): \"x y\" is not a "
                               "system call or a group of systemd 252");
        expect_isolation_error("[{\"name\": \"os/linux/seccomp-remove-set\", \"value\": {\"set\": [\"read\"], "
                               "\"errno\": \"EWHAT\"}}]",
                               "apps[0].app.isolators[0].value.errno (os/linux/seccomp-remove-set): expected an errno "
                               "name such as \"EPERM\"");
        expect_isolation_error("[{\"name\": \"os/linux/capabilities-retain-set\", \"value\": {\"set\": [1]}}]",
                               "apps[0].app.isolators[0].value.set[0] (os/linux/capabilities-retain-set): expected a "
                               "string");

        /* sdpod's own: pids, tmpfs, devices; strict like appc's. */
        ASSERT_EQ_INT(isolation_of("[{\"name\": \"sdpod/pids-limit\", \"value\": {\"limit\": 64}},"
                                   " {\"name\": \"sdpod/tmpfs\", \"value\": {\"mounts\": [{\"path\": \"/tmp\"},"
                                   " {\"path\": \"/scratch\", \"options\": \"mode=0700,size=1g\"}]}},"
                                   " {\"name\": \"sdpod/devices\", \"value\": {\"allow\": [{\"path\": \"/dev/fuse\"},"
                                   " {\"path\": \"/dev/net/tun\", \"access\": \"rwm\"}]}}]",
                                   &iso, &err),
                      0);
        ASSERT_EQ_INT(iso.tasks_max, 64);
        ASSERT_EQ_INT(iso.n_tmpfs, 2);
        ASSERT_STREQ(iso.tmpfs[0].options, "mode=1777");
        ASSERT_STREQ(iso.tmpfs[1].options, "mode=0700,size=1g");
        ASSERT_EQ_INT(iso.n_devices, 2);
        ASSERT_STREQ(iso.devices[0].access, "rw");
        ASSERT_STREQ(iso.devices[1].path, "/dev/net/tun");
        ASSERT_STREQ(iso.devices[1].access, "rwm");
        /* The rule names the numbers of the node bound at the device's
         * path, looked up below the pod's root (here "/", where /dev/null
         * stands in for a volume); a device without a bind keeps its path. */
        int rootfd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
        ASSERT(rootfd >= 0);
        const char *sources[] = { "/dev/null", "/srv" }, *destinations[] = { "/dev/fuse", "/data" };
        app_isolation_resolve_devices(&iso, sources, destinations, 2, rootfd);
        close(rootfd);
        ASSERT_STREQ(iso.devices[0].rule, "/dev/char/1:3");
        ASSERT(!iso.devices[1].rule);
        app_isolation_done(&iso);
        expect_isolation_error("[{\"name\": \"sdpod/memory\", \"value\": {}}]",
                               "apps[0].app.isolators[0].name: isolator \"sdpod/memory\" is not supported by sdpod "
                               "(see sdpod-generator(8))");
        expect_isolation_error("[{\"name\": \"sdpod/pids-limit\", \"value\": {\"limit\": 0}}]",
                               "apps[0].app.isolators[0].value.limit (sdpod/pids-limit): must be between 1 and 1000000000");
        expect_isolation_error("[{\"name\": \"sdpod/pids-limit\", \"value\": {\"limit\": \"7\"}}]",
                               "apps[0].app.isolators[0].value.limit (sdpod/pids-limit): expected a number of tasks");
        expect_isolation_error("[{\"name\": \"sdpod/tmpfs\", \"value\": {\"mounts\": [{\"path\": \"/tmp\", "
                               "\"options\": \"exec\"}]}}]",
                               "apps[0].app.isolators[0].value.mounts[0].options (sdpod/tmpfs): option \"exec\" is not "
                               "supported (only size=, mode= and noexec; nosuid and nodev are always set)");
        expect_isolation_error("[{\"name\": \"sdpod/tmpfs\", \"value\": {\"mounts\": [{\"path\": \"/tmp\"}, "
                               "{\"path\": \"/tmp\"}]}}]",
                               "apps[0].app.isolators[0].value.mounts[1] (sdpod/tmpfs): path \"/tmp\": a second tmpfs there");
        expect_isolation_error("[{\"name\": \"sdpod/tmpfs\", \"value\": {\"mounts\": [{\"path\": \"/sys/fs\"}]}}]",
                               "apps[0].app.isolators[0].value.mounts[0] (sdpod/tmpfs): path \"/sys/fs\": not in /proc, "
                               "/sys or /dev");
        expect_isolation_error("[{\"name\": \"sdpod/tmpfs\", \"value\": {\"mounts\": [{\"path\": \"/a:b\"}]}}]",
                               "apps[0].app.isolators[0].value.mounts[0] (sdpod/tmpfs): path \"/a:b\": whitespace, quotes, "
                               "backslashes, ':', control and non-ASCII characters are not supported");
        expect_isolation_error("[{\"name\": \"sdpod/tmpfs\", \"value\": {\"mounts\": []}}]",
                               "apps[0].app.isolators[0].value.mounts (sdpod/tmpfs): expected a non-empty array");
        expect_isolation_error("[{\"name\": \"sdpod/devices\", \"value\": {\"allow\": [{\"path\": \"/etc/shadow\"}]}}]",
                               "apps[0].app.isolators[0].value.allow[0] (sdpod/devices): path \"/etc/shadow\": a device "
                               "goes under /dev");
        expect_isolation_error("[{\"name\": \"sdpod/devices\", \"value\": {\"allow\": [{\"path\": \"/dev/fuse\", "
                               "\"access\": \"x\"}]}}]",
                               "apps[0].app.isolators[0].value.allow[0] (sdpod/devices): access \"x\": expected r, w and m "
                               "(at least one, each once)");
        expect_isolation_error("[{\"name\": \"sdpod/devices\", \"value\": {\"allow\": [{\"path\": \"/dev/fuse\", "
                               "\"major\": 10}]}}]",
                               "apps[0].app.isolators[0].value.allow[0] (sdpod/devices): unknown field \"major\"");
}

/* An app root and a manifest, for resolve and render. */
static char scratch[] = "/tmp/test-app-unit.XXXXXX";
static void remove_scratch(void) {
        rm_rf(scratch);
}

static void put(const char *path, const char *content, mode_t mode) {
        char full[512], dir[512];
        snprintf(full, sizeof(full), "%s/%s", scratch, path);
        snprintf(dir, sizeof(dir), "%s", full);
        *strrchr(dir, '/') = 0;
        ASSERT(mkdir_p(dir, 0755) == 0);
        int fd = open(full, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
        ASSERT(fd >= 0);
        ASSERT(write_all(fd, content, strlen(content)) == 0);
        ASSERT(fchmod(fd, mode) == 0);
        close(fd);
}

#define ID "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

static PodManifest *manifest(const char *apps, const char *extra) {
        char *text = NULL;
        ASSERT(asprintf(&text,
                        "{\"acKind\": \"PodManifest\", \"acVersion\": \"0.8.11\", \"apps\": [%s],"
                        " \"volumes\": [{\"name\": \"v\", \"kind\": \"empty\"},"
                        " {\"name\": \"ro\", \"kind\": \"host\", \"source\": \"/x\", \"readOnly\": true}]%s}",
                        apps, extra) >= 0);
        PodManifest *m = NULL;
        Error *err = NULL;
        int r = pod_manifest_parse(text, strlen(text), "T", &m, &err);
        if (r < 0)
                fprintf(stderr, "%s\n", err->msg);
        ASSERT_EQ_INT(r, 0);
        free(text);
        return m;
}

static int resolve(int rootfd, const char *app, AppUnit **ret, Error **err) {
        char *apps = NULL;
        ASSERT(asprintf(&apps, "{\"name\": \"a\", \"image\": {\"id\": \"" ID "\"}, \"app\": %s}", app) >= 0);
        PodManifest *m = manifest(apps, "");
        free(apps);
        int r = app_unit_resolve(m, 0, rootfd, ret, err);
        /* check == resolve */
        Error *err2 = NULL;
        ASSERT_EQ_INT(app_check_in_root(m, 0, rootfd, &err2), r);
        ASSERT(r == 0 ? !err2 : streq(err2->msg, (*err)->msg));
        error_free(err2);
        if (r == 0)
                (*ret)->app = NULL; /* the manifest goes now */
        pod_manifest_free(m);
        return r;
}

static void expect_resolve_error(int rootfd, const char *app, int exit_code, const char *msg) {
        AppUnit *u = NULL;
        Error *err = NULL;
        int r = resolve(rootfd, app, &u, &err);
        ASSERT(r < 0);
        ASSERT(!u);
        ASSERT_EQ_INT(app_unit_exit_code(r), exit_code);
        ASSERT_STREQ(err->msg, msg);
        error_free(err);
}

static void test_resolve(void) {
        ASSERT(mkdtemp(scratch));
        test_cleanup = remove_scratch;
        put("root/bin/sh", "#!/bin/sh\n", 0755);
        put("root/bin/data", "x\n", 0644);
        put("root/home/app/.keep", "", 0644);
        char root[512];
        snprintf(root, sizeof(root), "%s/root", scratch);
        int rootfd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
        ASSERT(rootfd >= 0);

        /* No /etc/passwd at all: numbers work, a name is "cannot run". */
        AppUnit *u = NULL;
        Error *err = NULL;
        ASSERT_EQ_INT(resolve(rootfd, "{\"exec\": [\"sh\", \"-c\", \"x\"], \"user\": \"1000\"}", &u, &err), 0);
        ASSERT_STREQ(u->exec_path, "/bin/sh");
        ASSERT(u->uid == 1000 && u->gid == 0);
        ASSERT_EQ_INT(strv_length(u->environment), 2);
        ASSERT_STREQ(u->environment[0], "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin");
        ASSERT_STREQ(u->environment[1], "HOME=/");
        app_unit_free(TAKE_PTR(u));
        expect_resolve_error(rootfd, "{\"exec\": [\"sh\"], \"user\": \"app\"}", 125,
                             "app.user: no user \"app\": the app's root has no /etc/passwd");

        put("root/etc/passwd", "app:x:100:101::/home/app:/bin/sh\n", 0644);
        put("root/etc/group", "app:x:101:\nother:x:202:\n", 0644);
        /* by name, group absent: the user's primary group; HOME from passwd */
        ASSERT_EQ_INT(resolve(rootfd, "{\"exec\": [\"/bin/sh\"], \"user\": \"app\", \"environment\":"
                                      " [{\"name\": \"PATH\", \"value\": \"/bin\"}]}",
                              &u, &err),
                      0);
        ASSERT(u->uid == 100 && u->gid == 101);
        ASSERT_EQ_INT(strv_length(u->environment), 2);
        ASSERT_STREQ(u->environment[0], "PATH=/bin");
        ASSERT_STREQ(u->environment[1], "HOME=/home/app");
        app_unit_free(TAKE_PTR(u));
        /* a group given is the group, by name or number */
        ASSERT_EQ_INT(resolve(rootfd, "{\"exec\": [\"/bin/sh\"], \"user\": \"app\", \"group\": \"other\"}", &u, &err), 0);
        ASSERT(u->uid == 100 && u->gid == 202);
        app_unit_free(TAKE_PTR(u));
        ASSERT_EQ_INT(resolve(rootfd, "{\"exec\": [\"/bin/sh\"], \"user\": \"app\", \"group\": \"0\"}", &u, &err), 0);
        ASSERT(u->uid == 100 && u->gid == 0);
        app_unit_free(TAKE_PTR(u));

        /* exit codes: only the program gives 126 and 127 */
        expect_resolve_error(rootfd, "{\"exec\": [\"/bin/none\"]}", 127,
                             "app.exec[0]: \"/bin/none\" not found in the app's root");
        expect_resolve_error(rootfd, "{\"exec\": [\"/bin/data\"]}", 126,
                             "app.exec[0]: \"/bin/data\" is not an executable file in the app's root");
        expect_resolve_error(rootfd, "{\"exec\": [\"/bin/sh\"], \"group\": \"nogroup\"}", 125,
                             "app.group: no group \"nogroup\" in /etc/group of the app's root");
        expect_resolve_error(rootfd, "{\"exec\": [\"/bin/sh\"], \"workingDirectory\": \"/nope\"}", 125,
                             "app.workingDirectory: \"/nope\" in the app's root: No such file or directory");
        expect_resolve_error(rootfd, "{\"exec\": [\"/bin/sh\"], \"workingDirectory\": \"/bin/sh\"}", 125,
                             "app.workingDirectory: \"/bin/sh\" in the app's root: Not a directory");
        expect_resolve_error(rootfd, "{\"exec\": [\"/bin/sh\"], \"workingDirectory\": \"/a b\"}", 125,
                             "app.workingDirectory: \"/a b\": whitespace, quotes, backslashes and control "
                             "characters are not supported");
        expect_resolve_error(rootfd, "{\"exec\": [\"/bin/sh\"], \"environment\": [{\"name\": \"1X\", \"value\": \"\"}]}",
                             125,
                             "app.environment[0].name: \"1X\" cannot be passed by systemd (letters, digits "
                             "and '_', not starting with a digit)");
        /* A value that is not UTF-8 never gets this far: a manifest is JSON,
         * and JSON is UTF-8. */
        static const char not_utf8[] = "{\"acKind\": \"PodManifest\", \"acVersion\": \"0.8.11\", \"apps\": [{\"name\": "
                                        "\"a\", \"image\": {\"id\": \"" ID "\"}, \"app\": {\"exec\": [\"/bin/sh\"], "
                                        "\"environment\": [{\"name\": \"X\", \"value\": \"\xff\"}]}}]}";
        PodManifest *bad = NULL;
        Error *parse_err = NULL;
        ASSERT_EQ_INT(pod_manifest_parse(not_utf8, strlen(not_utf8), "T", &bad, &parse_err), -EBADMSG);
        ASSERT_CONTAINS(parse_err->msg, "T: not valid JSON: not UTF-8 (at byte ");
        error_free(parse_err);
        expect_resolve_error(rootfd, "{\"exec\": [\"/bin/sh\"], \"isolators\": [{\"name\": \"resource/cpu\", \"value\": {}}]}",
                             125, "app.isolators[0].value.limit (resource/cpu): missing");
        close(rootfd);
}

/* The whole app@.service of a resolved app: directive forms that the
 * golden tests do not reach. */
static void test_render(void) {
        char root[512];
        snprintf(root, sizeof(root), "%s/root", scratch);
        int rootfd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
        ASSERT(rootfd >= 0);
        _cleanup_pod_manifest_ PodManifest *m = manifest(
                "{\"name\": \"x\", \"image\": {\"id\": \"" ID "\"}, \"app\": {\"exec\": [\"/bin/sh\"],"
                " \"mountPoints\": [{\"name\": \"m\", \"path\": \"/mnt/b\", \"readOnly\": true}],"
                " \"isolators\": [{\"name\": \"os/linux/capabilities-retain-set\", \"value\": {\"set\": [\"CAP_CHOWN\"]}},"
                " {\"name\": \"resource/cpu\", \"value\": {\"limit\": \"1505m\"}}]},"
                " \"mounts\": [{\"volume\": \"v\", \"path\": \"/mnt/a%x\"}, {\"volume\": \"v\", \"path\": \"/mnt/b\"},"
                " {\"volume\": \"ro\", \"path\": \"/mnt/c\"}]}",
                ", \"annotations\": [{\"name\": \"sdpod/mutable\", \"value\": \"false\"}]");
        AppUnit *u = NULL;
        Error *err = NULL;
        ASSERT_EQ_INT(app_unit_resolve(m, 0, rootfd, &u, &err), 0);
        PodGraph g = POD_GRAPH_MUTABLE;
        ASSERT_EQ_INT(pod_graph_from_manifest(m, &g, &err), 0);
        ASSERT_EQ_INT(g, POD_GRAPH_IMMUTABLE);
        char *text = NULL;
        ASSERT_EQ_INT(app_unit_render(u, g, &text), 0);
        ASSERT(startswith(text, "# Automatically generated by sdpod-generator\n\n[Unit]\n"));
        ASSERT_CONTAINS(text, "\nBindPaths=/sdpod/volumes/v:/mnt/a%%x\n");
        ASSERT_CONTAINS(text, "\nBindReadOnlyPaths=/sdpod/volumes/v:/mnt/b\n");     /* the mount point is read-only */
        ASSERT_CONTAINS(text, "\nBindReadOnlyPaths=/sdpod/volumes/ro:/mnt/c\n");    /* the volume is */
        ASSERT_CONTAINS(text, "\nCapabilityBoundingSet=CAP_CHOWN\n");
        ASSERT_CONTAINS(text, "\nCPUQuota=150.5%\n");
        /* Through app-stdio, bound into the app's /run: pipes for the
         * journal's streams, which /dev/stdout could not open; started in
         * the app's Landlock domain, as every command of the app. */
        ASSERT_CONTAINS(text, "\nBindReadOnlyPaths=" APP_STDIO ":" APP_STDIO_IN_APP "\nExecStart=" APP_DOMAIN_IN_APP " "
                              APP_STDIO_IN_APP " " APP_STDIO_IN_APP " /bin/sh /bin/sh\n");
        ASSERT_CONTAINS(text, "\nBindReadOnlyPaths=" APP_DOMAIN ":" APP_DOMAIN_IN_APP "\n");
        ASSERT(!strstr(text, "ProtectSystem"));
        /* /run is a nodev tmpfs (MountAPIVFS='s is not, under systemd 252). */
        ASSERT_CONTAINS(text, "\nMountAPIVFS=yes\nTemporaryFileSystem=/run:mode=0755,nosuid,nodev\n");
        /* The default confinement, whatever the isolators. */
        ASSERT_CONTAINS(text, "\nNoNewPrivileges=yes\n");
        ASSERT_CONTAINS(text, "\nProtectKernelTunables=yes\nProtectKernelModules=yes\nProtectKernelLogs=yes\n"
                              "ProtectControlGroups=yes\nProtectClock=yes\n");
        ASSERT_CONTAINS(text, "\nInaccessiblePaths=-/opt/stage2/x/rootfs/proc/kcore -/opt/stage2/x/rootfs/proc/keys ");
        ASSERT_CONTAINS(text, "\nRestrictNamespaces=yes\n");
        ASSERT_CONTAINS(text, "\nSystemCallFilter=@system-service chroot ptrace\n"
                              "SystemCallFilter=" APP_DOMAIN_SYSCALLS "\n"
                              "SystemCallFilter=~@keyring io_uring_enter io_uring_register io_uring_setup userfaultfd\n"
                              "SystemCallErrorNumber=EPERM\n"
                              "SystemCallArchitectures=native\n");
        free(text);

        /* No capability at all: an empty value would mean all of them. */
        u->isolation.capabilities = 0;
        ASSERT_EQ_INT(app_unit_render(u, g, &text), 0);
        ASSERT_CONTAINS(text, "\nCapabilityBoundingSet=~CAP_CHOWN CAP_DAC_OVERRIDE ");
        ASSERT_CONTAINS(text, " CAP_CHECKPOINT_RESTORE\n");
        free(text);
        app_unit_free(u);

        /* The app annotation sdpod/restrict-namespaces widens; a bad value
         * is named. */
        PodManifest *ns = manifest("{\"name\": \"a\", \"image\": {\"id\": \"" ID "\"}, \"app\": {\"exec\": [\"/bin/sh\"]},"
                                   " \"annotations\": [{\"name\": \"sdpod/restrict-namespaces\", \"value\": \"false\"}]}",
                                   "");
        ASSERT_EQ_INT(app_unit_resolve(ns, 0, rootfd, &u, &err), 0);
        ASSERT(!u->isolation.restrict_namespaces);
        ASSERT_EQ_INT(app_unit_render(u, g, &text), 0);
        ASSERT(!strstr(text, "RestrictNamespaces"));
        free(text);
        app_unit_free(TAKE_PTR(u));
        pod_manifest_free(ns);
        ns = manifest("{\"name\": \"a\", \"image\": {\"id\": \"" ID "\"}, \"app\": {\"exec\": [\"/bin/sh\"]},"
                      " \"annotations\": [{\"name\": \"sdpod/restrict-namespaces\", \"value\": \"no\"}]}",
                      "");
        ASSERT_EQ_INT(app_unit_resolve(ns, 0, rootfd, &u, &err), -EBADMSG);
        ASSERT_STREQ(err->msg, "annotations[0].value: \"no\" is not \"true\" or \"false\" "
                               "(sdpod/restrict-namespaces)");
        error_free(TAKE_PTR(err));
        pod_manifest_free(ns);

        /* An app's own --tmpfs at /run, however spelled, is the one /run
         * (systemd would take only one of two). */
        ns = manifest("{\"name\": \"a\", \"image\": {\"id\": \"" ID "\"}, \"app\": {\"exec\": [\"/bin/sh\"],"
                      " \"isolators\": [{\"name\": \"sdpod/tmpfs\", \"value\": {\"mounts\": [{\"path\": \"//./run/\","
                      " \"options\": \"size=1m\"}]}}]}}",
                      "");
        ASSERT_EQ_INT(app_unit_resolve(ns, 0, rootfd, &u, &err), 0);
        ASSERT_EQ_INT(app_unit_render(u, g, &text), 0);
        ASSERT(!strstr(text, "TemporaryFileSystem=/run:"));
        ASSERT_CONTAINS(text, "\nTemporaryFileSystem=//./run/:");
        free(text);
        app_unit_free(TAKE_PTR(u));
        pod_manifest_free(ns);

        /* app-stdio only where a stream is the journal's: not with a
         * terminal, nor when the host gave both (podapp add --stdout and
         * --stderr); with one given, the other still needs its pipe. */
        static const struct {
                const char *annotations;
                bool wrapped;
        } stdio_cases[] = {
                { "{\"name\": \"sdpod/tty\", \"value\": \"true\"}", false },
                { "{\"name\": \"sdpod/stdout\", \"value\": \"/o\"}, {\"name\": \"sdpod/stderr\", \"value\": \"/e\"}", false },
                { "{\"name\": \"sdpod/stdout\", \"value\": \"/o\"}", true },
        };
        for (size_t i = 0; i < ELEMENTSOF(stdio_cases); i++) {
                char app[512];
                snprintf(app, sizeof(app),
                         "{\"name\": \"a\", \"image\": {\"id\": \"" ID "\"}, \"app\": {\"exec\": [\"/bin/sh\"]},"
                         " \"annotations\": [%s]}",
                         stdio_cases[i].annotations);
                ns = manifest(app, "");
                ASSERT_EQ_INT(app_unit_resolve(ns, 0, rootfd, &u, &err), 0);
                ASSERT_EQ_INT(app_unit_render(u, g, &text), 0);
                if (stdio_cases[i].wrapped)
                        ASSERT_CONTAINS(text, "\nExecStart=" APP_DOMAIN_IN_APP " " APP_STDIO_IN_APP " " APP_STDIO_IN_APP
                                              " /bin/sh /bin/sh\n");
                else {
                        ASSERT_CONTAINS(text, "\nExecStart=" APP_DOMAIN_IN_APP " /bin/sh /bin/sh\n");
                        ASSERT(!strstr(text, APP_STDIO));
                }
                free(text);
                app_unit_free(TAKE_PTR(u));
                pod_manifest_free(ns);
        }

        ASSERT_EQ_INT(reaper_unit_render(&m->apps[0], POD_GRAPH_MUTABLE, &text), 0);
        ASSERT(!strstr(text, "shutdown.service"));
        free(text);
        ASSERT_EQ_INT(reaper_unit_render(&m->apps[0], POD_GRAPH_IMMUTABLE, &text), 0);
        ASSERT_CONTAINS(text, "\nWants=shutdown.service\nAfter=shutdown.service\n");
        free(text);
        ASSERT_EQ_INT(app_unit_render_failure(&m->apps[0], 127, "app x: $HOME 100% \"q\"\nnl", g, &text), 0);
        ASSERT_CONTAINS(text, "\nExecStart=/usr/lib/sdpod/pod-helper fail 127 \"app x: $$HOME 100%% \\\"q\\\"\\nnl\"\n");
        ASSERT(!strstr(text, "RootDirectory"));
        free(text);
        ASSERT_EQ_INT(manifest_error_unit_render("bad", &text), 0);
        ASSERT_CONTAINS(text, "\nExecStart=/usr/lib/sdpod/pod-helper fail 125 bad\n");
        ASSERT_CONTAINS(text, "\nFailureAction=exit-force\n");
        free(text);
        close(rootfd);
        remove_scratch();
        test_cleanup = NULL;
}

int main(void) {
        RUN(test_quote_forms);
        RUN(test_quote_roundtrip);
        RUN(test_utf8);
        RUN(test_quantities);
        RUN(test_names);
        RUN(test_isolators);
        RUN(test_resolve);
        RUN(test_render);
        return 0;
}
