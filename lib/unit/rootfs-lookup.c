/* SPDX-License-Identifier: Apache-2.0 */
#include <fcntl.h>
#include <limits.h>
#include <sys/stat.h>

#include "basic/fs.h"
#include "basic/path.h"
#include "unit/rootfs-lookup.h"

int parse_id(const char *s, uint32_t *ret) {
        if (!s || !*s || strspn(s, "0123456789") != strlen(s))
                return -EINVAL;
        uint64_t v = 0;
        for (const char *p = s; *p; p++) {
                v = v * 10 + (uint64_t) (*p - '0');
                if (v > UINT32_MAX)
                        return -ERANGE;
        }
        /* (uid_t) -1 means "unchanged" to the kernel, and 65535 is the
         * same for the 16-bit calls; systemd refuses both. */
        if (v == UINT32_MAX || v == 65535)
                return -ERANGE;
        *ret = (uint32_t) v;
        return 0;
}

void rootfs_user_done(RootfsUser *u) {
        if (!u)
                return;
        free(u->home);
        *u = (RootfsUser) {};
}

/* Reads a database file of the root: a regular file of at most
 * ROOTFS_DB_MAX bytes, so a FIFO, a device or a huge sparse file planted as
 * /etc/passwd is an error, not a hang or an allocation of its size.
 * -ENOENT (without a message) when it is not there. */
static int read_db(int rootfd, const char *path, char **ret, Error **err) {
        int r = read_file_in_root(rootfd, path, ROOTFS_DB_MAX, ret, NULL, err);
        if (r == -ENOENT && err && *err)
                error_free(TAKE_PTR(*err));
        return r == -ENOENT ? r : r < 0 ? error_prefix(err, "the app's root") : 0;
}

/* Splits a line of /etc/passwd or /etc/group into at most max fields, in
 * place; returns how many there are. */
static size_t split_fields(char *line, char **fields, size_t max) {
        size_t n = 0;
        line[strcspn(line, "\n")] = 0;
        for (char *p = line; n < max;) {
                fields[n++] = p;
                char *colon = strchr(p, ':');
                if (!colon)
                        break;
                *colon = 0;
                p = colon + 1;
        }
        return n;
}

/* Lines the "files" module of the C library does not take as entries:
 * comments, empty lines and NIS compatibility markers ("+", "-"). */
static bool line_is_entry(const char *line) {
        return *line && !strchr("#+-\n", *line);
}

typedef struct Entry {
        const char *name;
        uint32_t id;
        uint32_t gid;           /* passwd only */
        const char *home;       /* passwd only */
} Entry;

/* Finds the first entry whose name is key (by_id false) or whose id is id
 * in the file's text data (modified: lines are cut into fields); fills *ret
 * with pointers into data. 1 found, 0 not found. */
static int find_entry(char *data, bool passwd, bool by_id, const char *key, uint32_t id, Entry *ret) {
        for (char *line = data, *next; line && *line; line = next) {
                next = strchr(line, '\n');
                if (next)
                        *next++ = 0;
                if (!line_is_entry(line))
                        continue;
                char *fields[7];
                size_t n = split_fields(line, fields, passwd ? 7 : 4);
                /* passwd: name:password:uid:gid:gecos:home:shell
                 * group:  name:password:gid:members */
                if (n < (passwd ? 4U : 3U))
                        continue;
                Entry e = { .name = fields[0] };
                if (parse_id(fields[2], &e.id) < 0 || (passwd && parse_id(fields[3], &e.gid) < 0))
                        continue;
                e.home = passwd && n >= 6 && *fields[5] ? fields[5] : NULL;
                if (by_id ? e.id != id : !streq(e.name, key))
                        continue;
                *ret = e;
                return 1;
        }
        return 0;
}

static int lookup(int rootfd, const char *db, bool passwd, const char *key, Entry *ret_entry, char **ret_line,
                  uint32_t *ret_id, Error **err) {
        const char *what = passwd ? "user" : "group";
        char q[VALUE_QUOTED_MAX];
        uint32_t id = 0;
        int r = parse_id(key, &id);
        bool numeric = r >= 0;
        /* A number out of range is not a name either: systemd would take it
         * for a number and refuse it. */
        if (r == -ERANGE)
                return error_set(err, -ESRCH, "%s is not a valid %s id", value_quote(key, q), what);
        if (!numeric && !*key)
                return error_set(err, -ESRCH, "empty %s name", what);

        _cleanup_free_ char *data = NULL;
        r = read_db(rootfd, db, &data, err);
        if (r == -ENOENT) {
                if (!numeric)
                        return error_set(err, -ESRCH, "no %s %s: the app's root has no %s", what, value_quote(key, q),
                                         db);
        } else if (r < 0)
                return r;

        Entry e = {};
        r = data ? find_entry(data, passwd, numeric, key, id, &e) : 0;
        if (r == 0 && !numeric)
                return error_set(err, -ESRCH, "no %s %s in %s of the app's root", what, value_quote(key, q), db);
        *ret_entry = r > 0 ? e : (Entry) {};
        *ret_line = r > 0 ? TAKE_PTR(data) : NULL;
        *ret_id = numeric ? id : e.id;
        return r > 0;
}

int rootfs_lookup_user(int rootfd, const char *user, RootfsUser *ret, Error **err) {
        Entry e;
        _cleanup_free_ char *line = NULL;
        uint32_t id;
        int r = lookup(rootfd, "/etc/passwd", true, user, &e, &line, &id, err);
        if (r < 0)
                return r;
        RootfsUser u = { .uid = id, .found = r > 0 };
        if (u.found) {
                u.gid = e.gid;
                if (e.home && !(u.home = strdup(e.home)))
                        return error_sys(err, -ENOMEM, "/etc/passwd");
        }
        *ret = u;
        return 0;
}

int rootfs_lookup_group(int rootfd, const char *group, gid_t *ret, Error **err) {
        Entry e;
        _cleanup_free_ char *line = NULL;
        uint32_t id;
        int r = lookup(rootfd, "/etc/group", false, group, &e, &line, &id, err);
        if (r < 0)
                return r;
        *ret = id;
        return 0;
}

/* "/" followed by the normalised path of dir/name (dir may be NULL). */
static int join_absolute(const char *dir, const char *name, char **ret) {
        _cleanup_free_ char *joined = NULL, *normal = NULL;
        if (asprintf(&joined, "%s/%s", strempty(dir), name) < 0)
                return -ENOMEM;
        int r = path_normalize_archive_name(joined, &normal);
        if (r < 0)
                return r;
        if (asprintf(ret, "/%s", normal) < 0)
                return -ENOMEM;
        return 0;
}

/* 0: an executable regular file; -EACCES: something else is there; other
 * negative errno: nothing usable (ENOENT, ENOTDIR, ELOOP, ...). */
static int check_executable(int rootfd, const char *path) {
        _cleanup_close_ int fd = open_in_root(rootfd, path, O_PATH, 0);
        if (fd < 0)
                return fd;
        struct stat st;
        if (fstat(fd, &st) < 0)
                return -errno;
        /* Whether the app's user may run it depends on ids and every
         * directory on the way; an execute bit for anyone is what a root
         * caller of execve(2) needs, and what this checks. */
        if (!S_ISREG(st.st_mode) || !(st.st_mode & 0111))
                return -EACCES;
        return 0;
}

int rootfs_find_executable(int rootfd, const char *name, const char *path_env, const char *working_directory,
                           char **ret, Error **err) {
        const char *cwd = working_directory ?: "/";
        _cleanup_free_ char *candidate = NULL;
        char q[VALUE_QUOTED_MAX];
        int r;

        if (!*name)
                return error_set(err, -ENOENT, "empty program name");
        if (strchr(name, '/')) {
                r = join_absolute(name[0] == '/' ? NULL : cwd, name, &candidate);
                if (r == -EINVAL)
                        return error_set(err, -EINVAL, "%s must not contain a \"..\" component", value_quote(name, q));
                if (r < 0)
                        return error_sys(err, r, "%s", value_quote(name, q));
                r = check_executable(rootfd, candidate);
                if (r == -EACCES)
                        return error_set(err, -EACCES, "%s is not an executable file in the app's root",
                                         value_quote(candidate, q));
                if (r == -ENOENT || r == -ENOTDIR)
                        return error_set(err, -ENOENT, "%s not found in the app's root", value_quote(candidate, q));
                if (r < 0)
                        return error_sys(err, r, "%s in the app's root", value_quote(candidate, q));
                *ret = TAKE_PTR(candidate);
                return 0;
        }

        _cleanup_free_ char *not_executable = NULL;
        const char *p = path_env ?: ROOTFS_DEFAULT_PATH;
        for (;;) {
                size_t n = strcspn(p, ":");
                _cleanup_free_ char *dir = strndup(p, n), *full = NULL;
                if (!dir)
                        return error_sys(err, -ENOMEM, "%s", value_quote(name, q));
                /* An empty or relative entry is relative to the working
                 * directory, as execvp(3) takes it. */
                if (dir[0] != '/') {
                        char *d = NULL;
                        if (asprintf(&d, "%s/%s", cwd, dir) < 0)
                                return error_sys(err, -ENOMEM, "%s", value_quote(name, q));
                        free(dir);
                        dir = d;
                }
                r = join_absolute(dir, name, &full);
                if (r == -ENOMEM)
                        return error_sys(err, r, "%s", value_quote(name, q));
                if (r == 0) {
                        r = check_executable(rootfd, full);
                        if (r == 0) {
                                *ret = TAKE_PTR(full);
                                return 0;
                        }
                        if (r == -EACCES && !not_executable)
                                not_executable = TAKE_PTR(full);
                }
                /* A directory with ".." in PATH is skipped: it may mean
                 * something else lexically than in the tree. */
                if (!p[n])
                        break;
                p += n + 1;
        }
        if (not_executable)
                return error_set(err, -EACCES, "%s is not an executable file in the app's root",
                                 value_quote(not_executable, q));
        char qp[VALUE_QUOTED_MAX];
        return error_set(err, -ENOENT, "%s not found in the app's root (searched PATH=%s)", value_quote(name, q),
                         value_quote(path_env ?: ROOTFS_DEFAULT_PATH, qp));
}
