/* SPDX-License-Identifier: Apache-2.0 */
#include <fcntl.h>
#include <inttypes.h>
#include <sched.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "basic/fs.h"
#include "basic/json-util.h"
#include "basic/strv.h"
#include "basic/uuid.h"
#include "manifest/app-args.h"
#include "pod/pod-userns.h"
#include "unit/rootfs-lookup.h"

#define SLOTS ((POD_USERNS_BASE_MAX - POD_USERNS_BASE_MIN) / POD_USERNS_SIZE + 1)

int pod_userns_from_manifest(const PodManifest *m, PodUserns *ret, Error **err) {
        const char *v = pod_manifest_get_annotation(m, POD_ANNOTATION_PRIVATE_USERS);
        if (!v || streq(v, "no")) {
                *ret = (PodUserns) {};
                return 0;
        }
        unsigned long base;
        unsigned size;
        char end;
        char q[VALUE_QUOTED_MAX];
        if (sscanf(v, "%lu:%u%c", &base, &size, &end) != 2 || size != POD_USERNS_SIZE ||
            base < POD_USERNS_BASE_MIN || base > POD_USERNS_BASE_MAX || base % POD_USERNS_SIZE != 0)
                return error_set(err, -EBADMSG,
                                 "annotations: %s is %s, not \"no\" or BASE:%u with BASE a multiple of %u between "
                                 "%u and %u",
                                 POD_ANNOTATION_PRIVATE_USERS, value_quote(v, q), POD_USERNS_SIZE, POD_USERNS_SIZE,
                                 POD_USERNS_BASE_MIN, POD_USERNS_BASE_MAX);
        *ret = (PodUserns) { .enabled = true, .base = (uid_t) base };
        const char *owner = pod_manifest_get_annotation(m, POD_ANNOTATION_ID_RANGE), *name;
        if (owner) {
                if (!(name = startswith(owner, "name:")) || !pod_name_is_valid(name))
                        return error_set(err, -EBADMSG, "annotations: %s is %s, not name:NAME with NAME a pod name",
                                         POD_ANNOTATION_ID_RANGE, value_quote(owner, q));
                snprintf(ret->owner, sizeof(ret->owner), "%s", owner);
        }
        return 0;
}

int pod_id_range_record_parse(const char *text, size_t size, const char *what, PodIdRangeRecord *ret, Error **err) {
        if (size > POD_ID_RANGE_RECORD_MAX)
                return error_set(err, -EBADMSG, "%s: larger than %u bytes", what, POD_ID_RANGE_RECORD_MAX);
        _cleanup_json_ struct json_object *o = NULL;
        const char *name;
        int64_t base;
        int r = json_parse(text, size, what, &o, err);
        if (r < 0)
                return r;
        if (!json_object_is_type(o, json_type_object) || json_object_object_length(o) != 2)
                return error_set(err, -EBADMSG, "%s: expected an object of name and base", what);
        if ((r = json_get_string(o, "name", true, &name, what, err)) < 0 ||
            (r = json_get_int64(o, "base", true, &base, what, err)) < 0)
                return r;
        if (!pod_name_is_valid(name))
                return error_set(err, -EBADMSG, "%s: name is not a pod name", what);
        if (base < POD_USERNS_BASE_MIN || base > POD_USERNS_BASE_MAX || base % POD_USERNS_SIZE != 0)
                return error_set(err, -EBADMSG, "%s: base %" PRId64 " is not a multiple of %u between %u and %u", what,
                                 base, POD_USERNS_SIZE, POD_USERNS_BASE_MIN, POD_USERNS_BASE_MAX);
        *ret = (PodIdRangeRecord) { .base = (uint32_t) base };
        snprintf(ret->name, sizeof(ret->name), "%s", name);
        return 0;
}

/* DATA/private-users; created by a claim. */
static int open_claims(const char *data, bool create) {
        _cleanup_close_ int root = open(data, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (root < 0)
                return -errno;
        if (create && mkdirat(root, POD_USERNS_DIR, 0700) < 0 && errno != EEXIST)
                return -errno;
        return open_beneath_no_symlinks(root, POD_USERNS_DIR, O_RDONLY | O_DIRECTORY, 0);
}

static uint32_t slot_of(const char *uuid) {
        uint32_t h = 2166136261U; /* FNV-1a */
        for (const char *c = uuid; *c; c++)
                h = (h ^ (uint8_t) *c) * 16777619U;
        return h % SLOTS;
}

/* Makes the claim file name, holding uuid, appear whole or not at all: a
 * temporary file linked into place (link(2) never replaces). 0, or -EEXIST
 * when the range is someone else's. */
static int claim_file(int dir, const char *name, const char *uuid, const char *data) {
        char tmp[40];
        random_name(tmp, sizeof(tmp), ".tmp-");
        _cleanup_close_ int fd = openat(dir, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
        if (fd < 0)
                return -errno;
        _cleanup_free_ char *line = NULL;
        int n = asprintf(&line, "%s\n%s%s", uuid, data ?: "", data ? "\n" : "");
        if (n < 0)
                return -ENOMEM;
        int r = write_all(fd, line, (size_t) n);
        if (r >= 0 && fsync(fd) < 0)
                r = -errno;
        if (r >= 0 && linkat(dir, tmp, dir, name, 0) < 0)
                r = -errno;
        (void) unlinkat(dir, tmp, 0);
        return r;
}

/* POD_USERNS_RUN_DIR, made when create. */
static int open_run_claims(bool create) {
        if (create && (mkdir("/run/sdpod", 0755) < 0 && errno != EEXIST))
                return -errno;
        if (create && (mkdir(POD_USERNS_RUN_DIR, 0700) < 0 && errno != EEXIST))
                return -errno;
        int fd = open(POD_USERNS_RUN_DIR, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        return fd < 0 ? -errno : fd;
}

/* Whether a container of nspawn's holds base: its lock file, locked. */
static bool nspawn_holds(uint32_t base) {
        char path[sizeof(NSPAWN_UID_LOCK_DIR) + 16];
        snprintf(path, sizeof(path), NSPAWN_UID_LOCK_DIR "/%" PRIu32, base);
        _cleanup_close_ int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
        if (fd < 0)
                return errno != ENOENT; /* unreadable: not ours to take */
        if (flock(fd, LOCK_SH | LOCK_NB) < 0)
                return true;
        return false; /* closing drops our lock */
}

/* The owner a claim holds (its first line), or "" when it cannot be read. */
static void claim_owner(int dir, const char *name, char owner[static POD_USERNS_OWNER_MAX]) {
        _cleanup_free_ char *data = NULL;
        owner[0] = 0;
        if (read_file_at(dir, name, PATH_MAX + 64, &data, NULL, NULL) >= 0)
                snprintf(owner, POD_USERNS_OWNER_MAX, "%.*s", (int) strcspn(data, "\n"), data);
}

/* Claims a free range for owner, starting from the slot owner gives: its
 * base, -ENOSPC when none is free. */
static int pick_range(int dir, int run, const char *data, const char *owner, uint32_t *ret, Error **err) {
        uint32_t start = slot_of(owner);
        for (uint32_t i = 0; i < SLOTS; i++) {
                uint32_t base = POD_USERNS_BASE_MIN + ((start + i) % SLOTS) * POD_USERNS_SIZE;
                char name[16];
                snprintf(name, sizeof(name), "%" PRIu32, base);
                /* Taken ranges are skipped without a write: with most of
                 * them taken, a claim per slot would cost a sync each. */
                if (faccessat(run, name, F_OK, AT_SYMLINK_NOFOLLOW) == 0 ||
                    faccessat(dir, name, F_OK, AT_SYMLINK_NOFOLLOW) == 0 || nspawn_holds(base))
                        continue;
                /* The machine's claim first: link(2) gives it to one
                 * claimant only, whichever data directory it prepares in. */
                int r = claim_file(run, name, owner, data);
                if (r == -EEXIST)
                        continue;
                if (r < 0)
                        return error_sys(err, r, "cannot claim %s/%s", POD_USERNS_RUN_DIR, name);
                r = claim_file(dir, name, owner, NULL);
                if (r < 0)
                        (void) unlinkat(run, name, 0);
                if (r == -EEXIST)
                        continue;
                if (r < 0)
                        return error_sys(err, r, "cannot claim %s/%s/%s", data, POD_USERNS_DIR, name);
                if ((r = fsync_dir_at(dir, ".")) < 0)
                        return error_sys(err, r, "%s/%s", data, POD_USERNS_DIR);
                *ret = base;
                return 0;
        }
        return error_set(err, -ENOSPC,
                         "all %u user id ranges are in use (claims in %s/%s and %s, nspawn's locks in %s): collect "
                         "exited pods (sdpod gc)",
                         SLOTS, data, POD_USERNS_DIR, POD_USERNS_RUN_DIR, NSPAWN_UID_LOCK_DIR);
}

/* Makes claim base of dir owner's, or finds it owner's already; -EBUSY
 * when it is another's. */
static int claim_as(int dir, const char *where, uint32_t base, const char *owner, const char *data, Error **err) {
        char name[16], other[POD_USERNS_OWNER_MAX];
        snprintf(name, sizeof(name), "%" PRIu32, base);
        int r = claim_file(dir, name, owner, data);
        if (r < 0 && r != -EEXIST)
                return error_sys(err, r, "cannot claim %s/%s", where, name);
        claim_owner(dir, name, other);
        if (!streq(other, owner))
                return error_set(err, -EBUSY, "user id range %s:%u of %s is claimed by %s%s (%s/%s)", name,
                                 POD_USERNS_SIZE, owner, uuid_is_valid(other) ? "pod " : "",
                                 *other ? other : "(unreadable)", where, name);
        return 0;
}

/* The stable range of pod name (pod-userns.h): its record's, else one a
 * claim of the name already holds (a prepare interrupted before the
 * record), else a new one, recorded. */
static int claim_stable(int root, int dir, int run, const char *data, const char *name, uint32_t *ret, Error **err) {
        char owner[POD_USERNS_OWNER_MAX];
        snprintf(owner, sizeof(owner), "name:%s", name);
        if (mkdirat(root, POD_ID_RANGES_DIR, 0700) < 0 && errno != EEXIST)
                return error_sys(err, -errno, "cannot create %s/%s", data, POD_ID_RANGES_DIR);
        _cleanup_close_ int ranges = open_beneath_no_symlinks(root, POD_ID_RANGES_DIR, O_RDONLY | O_DIRECTORY, 0);
        if (ranges < 0)
                return error_sys(err, ranges, "cannot open %s/%s", data, POD_ID_RANGES_DIR);
        /* One claimant of a name at a time (a name's pods are prepared one
         * by one anyway: pod_name_claim()). */
        if (flock(ranges, LOCK_EX) < 0)
                return error_sys(err, -errno, "cannot lock %s/%s", data, POD_ID_RANGES_DIR);
        _cleanup_free_ char *text = NULL, *what = NULL;
        size_t size = 0;
        if (asprintf(&what, "%s/%s/%s", data, POD_ID_RANGES_DIR, name) < 0)
                return error_sys(err, -ENOMEM, "pod name %s", name);
        int r = read_file_at(ranges, name, POD_ID_RANGE_RECORD_MAX + 1, &text, &size, NULL);
        if (r >= 0) {
                PodIdRangeRecord rec;
                if ((r = pod_id_range_record_parse(text, size, what, &rec, err)) < 0)
                        return r;
                if (!streq(rec.name, name))
                        return error_set(err, -EBADMSG, "%s: the record of name %s", what, rec.name);
                if ((r = claim_as(run, POD_USERNS_RUN_DIR, rec.base, owner, data, err)) < 0)
                        return r;
                _cleanup_free_ char *where = NULL;
                if (asprintf(&where, "%s/%s", data, POD_USERNS_DIR) < 0)
                        return error_sys(err, -ENOMEM, "pod name %s", name);
                if ((r = claim_as(dir, where, rec.base, owner, NULL, err)) < 0)
                        return r;
                *ret = rec.base;
                return 0;
        }
        if (r != -ENOENT)
                return error_sys(err, r, "%s", what);
        uint32_t base = 0;
        _cleanup_closedir_ DIR *d = opendir_at(dir, ".");
        for (struct dirent *de; d && !base && (de = readdir(d));) {
                char other[POD_USERNS_OWNER_MAX];
                if (de->d_name[0] == '.')
                        continue;
                claim_owner(dirfd(d), de->d_name, other);
                uint32_t b;
                if (streq(other, owner) && parse_id(de->d_name, &b) >= 0 &&
                    claim_as(run, POD_USERNS_RUN_DIR, b, owner, data, NULL) >= 0)
                        base = b;
        }
        if (!base && (r = pick_range(dir, run, data, owner, &base, err)) < 0)
                return r;
        _cleanup_json_ struct json_object *o = json_object_new_object();
        if (!o || json_add_string(o, "name", name) < 0 ||
            json_object_object_add(o, "base", json_object_new_int64(base)) < 0)
                return error_sys(err, -ENOMEM, "%s", what);
        const char *json = json_to_text(o, false);
        if ((r = write_file_atomic_at(ranges, name, json, strlen(json), 0644, err)) < 0)
                return error_prefix(err, "%s", what);
        *ret = base;
        return 0;
}

int pod_userns_claim(const char *data, const char *uuid, const char *name, PodManifest *m, Error **err) {
        _cleanup_close_ int root = open(data, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (root < 0)
                return error_sys(err, -errno, "cannot open %s", data);
        _cleanup_close_ int dir = open_claims(data, true);
        if (dir < 0)
                return error_sys(err, dir, "cannot open %s/%s", data, POD_USERNS_DIR);
        _cleanup_close_ int run = open_run_claims(true);
        if (run < 0)
                return error_sys(err, run, "cannot open %s", POD_USERNS_RUN_DIR);
        uint32_t base;
        int r = name ? claim_stable(root, dir, run, data, name, &base, err) : pick_range(dir, run, data, uuid, &base, err);
        if (r < 0)
                return r;
        char value[32];
        snprintf(value, sizeof(value), "%" PRIu32 ":%u", base, POD_USERNS_SIZE);
        if ((r = pod_manifest_set_annotation(m, POD_ANNOTATION_PRIVATE_USERS, value, err)) < 0)
                return r;
        if (!name)
                return 0;
        char owner[POD_USERNS_OWNER_MAX];
        snprintf(owner, sizeof(owner), "name:%s", name);
        return pod_manifest_set_annotation(m, POD_ANNOTATION_ID_RANGE, owner, err);
}

/* Removes claim name of dir when it is uuid's. */
static void release_claim(int dir, const char *name, const char *uuid) {
        char owner[POD_USERNS_OWNER_MAX];
        if (dir < 0)
                return;
        claim_owner(dir, name, owner);
        if (streq(owner, uuid))
                (void) unlinkat(dir, name, 0);
}

void pod_userns_release(const char *data, const char *uuid, const PodUserns *u) {
        if (!u->enabled)
                return;
        _cleanup_close_ int dir = open_claims(data, false), run = open_run_claims(false);
        char name[16];
        snprintf(name, sizeof(name), "%" PRIu32, (uint32_t) u->base);
        release_claim(dir, name, uuid);
        release_claim(run, name, uuid);
        /* The nspawn lock file its runs left (unlocked: the pod is gone),
         * removed while locked, as nspawn removes its own. */
        char path[sizeof(NSPAWN_UID_LOCK_DIR) + 16];
        snprintf(path, sizeof(path), NSPAWN_UID_LOCK_DIR "/%s", name);
        _cleanup_close_ int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
        if (fd >= 0 && flock(fd, LOCK_EX | LOCK_NB) == 0)
                (void) unlink(path);
}

int pod_userns_hold(const char *data, const char *uuid, const PodUserns *u, Error **err) {
        if (!u->enabled)
                return -1;
        char name[16], path[sizeof(NSPAWN_UID_LOCK_DIR) + 16], owner[POD_USERNS_OWNER_MAX];
        snprintf(name, sizeof(name), "%" PRIu32, (uint32_t) u->base);
        _cleanup_close_ int run = open_run_claims(true);
        if (run < 0)
                return error_sys(err, run, "cannot open %s", POD_USERNS_RUN_DIR);
        /* A stable range's claim is its name's, whichever pod of it runs. */
        const char *mine = u->owner[0] ? u->owner : uuid;
        int r = claim_file(run, name, mine, data);
        if (r < 0 && r != -EEXIST)
                return error_sys(err, r, "cannot claim %s/%s", POD_USERNS_RUN_DIR, name);
        claim_owner(run, name, owner);
        if (!streq(owner, mine))
                return error_set(err, -EBUSY, "user id range %s:%u is in use by %s%s (%s/%s)", name,
                                 POD_USERNS_SIZE, uuid_is_valid(owner) ? "pod " : "", *owner ? owner : "(unreadable)",
                                 POD_USERNS_RUN_DIR, name);
        /* nspawn's own lock, as nspawn takes it: a file locked while the
         * container runs (nspawn removes its own when done; ours stays,
         * unlocked, which nspawn takes as free). */
        if (mkdir("/run/systemd", 0755) < 0 && errno != EEXIST)
                return error_sys(err, -errno, "cannot make /run/systemd");
        if (mkdir(NSPAWN_UID_LOCK_DIR, 0755) < 0 && errno != EEXIST)
                return error_sys(err, -errno, "cannot make %s", NSPAWN_UID_LOCK_DIR);
        snprintf(path, sizeof(path), NSPAWN_UID_LOCK_DIR "/%s", name);
        int fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK, 0600);
        if (fd < 0)
                return error_sys(err, -errno, "cannot open %s", path);
        if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
                r = -errno;
                close(fd);
                return r == -EWOULDBLOCK ? u->owner[0] ? error_set(err, -EBUSY, "user id range %s:%u of %s is in use by "
                                                                  "another pod of that name, running (%s is locked)",
                                                                  name, POD_USERNS_SIZE, u->owner, path)
                                                       : error_set(err, -EBUSY, "user id range %s:%u is in use by a container of "
                                                                  "systemd-nspawn (%s is locked)",
                                                     name, POD_USERNS_SIZE, path)
                                         : error_sys(err, r, "cannot lock %s", path);
        }
        return fd;
}

/* The data directory a machine claim names (its second line), or "". */
static void claim_data(int dir, const char *name, char *buf, size_t size) {
        _cleanup_free_ char *text = NULL;
        buf[0] = 0;
        if (read_file_at(dir, name, PATH_MAX + 64, &text, NULL, NULL) < 0)
                return;
        const char *l = strchr(text, '\n');
        if (l)
                snprintf(buf, size, "%.*s", (int) strcspn(l + 1, "\n"), l + 1);
}

int pod_userns_release_stale(const char *data, bool (*pod_exists)(const char *uuid, void *userdata), void *userdata,
                             Error **err) {
        int released = 0;
        /* The machine's claims of this data directory first: one is made
         * before the directory's own, and an interrupted prepare may have
         * left it alone. */
        _cleanup_close_ int run = open_run_claims(false);
        _cleanup_closedir_ DIR *rd = run >= 0 ? opendir_at(run, ".") : NULL;
        for (struct dirent *de; rd && (de = readdir(rd));) {
                char owner[POD_USERNS_OWNER_MAX], of[PATH_MAX];
                if (de->d_name[0] == '.')
                        continue;
                claim_data(dirfd(rd), de->d_name, of, sizeof(of));
                /* Also any claim whose data directory is gone altogether
                 * (a test's, removed without sdpod rm): its pods are. */
                if (!streq(of, data)) {
                        if (of[0] == '/' && access(of, F_OK) < 0 && errno == ENOENT &&
                            unlinkat(dirfd(rd), de->d_name, 0) == 0)
                                released++;
                        continue;
                }
                claim_owner(dirfd(rd), de->d_name, owner);
                if (uuid_is_valid(owner) && !pod_exists(owner, userdata) && unlinkat(dirfd(rd), de->d_name, 0) == 0)
                        released++;
        }
        _cleanup_close_ int fd = open_claims(data, false);
        if (fd == -ENOENT)
                return released;
        if (fd < 0)
                return error_sys(err, fd, "cannot open %s/%s", data, POD_USERNS_DIR);
        _cleanup_closedir_ DIR *d = opendir_at(fd, ".");
        if (!d)
                return error_sys(err, -errno, "%s/%s", data, POD_USERNS_DIR);
        for (struct dirent *de; (de = readdir(d));) {
                if (de->d_name[0] == '.')
                        continue;
                /* A claim is made after its pod exists: one whose pod is
                 * gone was left by an interrupted delete. Unreadable or
                 * naming no pod at all, it is not ours to judge. */
                char owner[POD_USERNS_OWNER_MAX];
                claim_owner(dirfd(d), de->d_name, owner);
                const char *stable = startswith(owner, "name:");
                if (stable) {
                        /* A name's range stays while its record does. */
                        char record[PATH_MAX];
                        snprintf(record, sizeof(record), "%s/%s/%s", data, POD_ID_RANGES_DIR, stable);
                        if (!pod_name_is_valid(stable) || access(record, F_OK) == 0 || errno != ENOENT)
                                continue;
                } else if (!uuid_is_valid(owner) || pod_exists(owner, userdata))
                        continue;
                if (unlinkat(dirfd(d), de->d_name, 0) == 0)
                        released++;
                release_claim(run, de->d_name, owner);
        }
        return released;
}

int userns_fd_new(uid_t base, Error **err) {
        int pipefd[2];
        if (pipe2(pipefd, O_CLOEXEC) < 0)
                return error_sys(err, -errno, "cannot make a user namespace");
        pid_t pid = fork();
        if (pid < 0) {
                int r = -errno;
                close(pipefd[0]);
                close(pipefd[1]);
                return error_sys(err, r, "cannot make a user namespace");
        }
        if (pid == 0) {
                /* A namespace that lives as long as this child: long enough
                 * for the parent to map it and open it. */
                char c = unshare(CLONE_NEWUSER) < 0 ? 'E' : 'U';
                (void) write(pipefd[1], &c, 1);
                pause();
                _exit(0);
        }
        close(pipefd[1]);
        char c = 0;
        ssize_t n;
        while ((n = read(pipefd[0], &c, 1)) < 0 && errno == EINTR)
                ;
        close(pipefd[0]);
        int r = n == 1 && c == 'U' ? 0 : -EPERM, fd = -1;
        static const char *const maps[] = { "uid_map", "gid_map" };
        char path[64], map[64];
        int k = snprintf(map, sizeof(map), "0 %" PRIu32 " %u\n", (uint32_t) base, POD_USERNS_SIZE);
        for (size_t i = 0; r >= 0 && i < ELEMENTSOF(maps); i++) {
                snprintf(path, sizeof(path), "/proc/%d/%s", (int) pid, maps[i]);
                _cleanup_close_ int m = open(path, O_WRONLY | O_CLOEXEC);
                if (m < 0 || write(m, map, (size_t) k) != k)
                        r = -errno;
        }
        if (r >= 0) {
                snprintf(path, sizeof(path), "/proc/%d/ns/user", (int) pid);
                if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
                        r = -errno;
        }
        (void) kill(pid, SIGKILL);
        while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
                ;
        return r < 0 ? error_sys(err, r, "cannot make a user namespace for ids %" PRIu32 "..", (uint32_t) base) : fd;
}
