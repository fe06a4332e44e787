/* SPDX-License-Identifier: Apache-2.0 */
#include <fcntl.h>
#include <inttypes.h>
#include <sched.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "basic/fs.h"
#include "basic/strv.h"
#include "basic/uuid.h"
#include "pod/pod-userns.h"

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
static int claim_file(int dir, const char *name, const char *uuid) {
        char tmp[40];
        random_name(tmp, sizeof(tmp), ".tmp-");
        _cleanup_close_ int fd = openat(dir, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
        if (fd < 0)
                return -errno;
        char line[UUID_STRING_MAX + 1];
        int n = snprintf(line, sizeof(line), "%s\n", uuid);
        int r = write_all(fd, line, (size_t) n);
        if (r >= 0 && fsync(fd) < 0)
                r = -errno;
        if (r >= 0 && linkat(dir, tmp, dir, name, 0) < 0)
                r = -errno;
        (void) unlinkat(dir, tmp, 0);
        return r;
}

int pod_userns_claim(const char *data, const char *uuid, PodManifest *m, Error **err) {
        _cleanup_close_ int dir = open_claims(data, true);
        if (dir < 0)
                return error_sys(err, dir, "cannot open %s/%s", data, POD_USERNS_DIR);
        uint32_t start = slot_of(uuid);
        for (uint32_t i = 0; i < SLOTS; i++) {
                uint32_t base = POD_USERNS_BASE_MIN + ((start + i) % SLOTS) * POD_USERNS_SIZE;
                char name[16], value[32];
                snprintf(name, sizeof(name), "%" PRIu32, base);
                int r = claim_file(dir, name, uuid);
                if (r == -EEXIST)
                        continue;
                if (r < 0)
                        return error_sys(err, r, "cannot claim %s/%s/%s", data, POD_USERNS_DIR, name);
                if ((r = fsync_dir_at(dir, ".")) < 0)
                        return error_sys(err, r, "%s/%s", data, POD_USERNS_DIR);
                snprintf(value, sizeof(value), "%" PRIu32 ":%u", base, POD_USERNS_SIZE);
                return pod_manifest_set_annotation(m, POD_ANNOTATION_PRIVATE_USERS, value, err);
        }
        return error_set(err, -ENOSPC, "all %u user id ranges of %s/%s are in use: collect exited pods (sdpod gc)",
                         SLOTS, data, POD_USERNS_DIR);
}

/* The UUID a claim holds, or "" when it cannot be read. */
static void claim_owner(int dir, const char *name, char owner[static UUID_STRING_MAX]) {
        _cleanup_free_ char *data = NULL;
        owner[0] = 0;
        if (read_file_at(dir, name, 64, &data, NULL, NULL) >= 0)
                snprintf(owner, UUID_STRING_MAX, "%.*s", (int) strcspn(data, "\n"), data);
}

void pod_userns_release(const char *data, const char *uuid, const PodUserns *u) {
        if (!u->enabled)
                return;
        _cleanup_close_ int dir = open_claims(data, false);
        char name[16], owner[UUID_STRING_MAX];
        snprintf(name, sizeof(name), "%" PRIu32, (uint32_t) u->base);
        if (dir < 0)
                return;
        claim_owner(dir, name, owner);
        if (streq(owner, uuid))
                (void) unlinkat(dir, name, 0);
}

int pod_userns_release_stale(const char *data, bool (*pod_exists)(const char *uuid, void *userdata), void *userdata,
                             Error **err) {
        _cleanup_close_ int fd = open_claims(data, false);
        if (fd == -ENOENT)
                return 0;
        if (fd < 0)
                return error_sys(err, fd, "cannot open %s/%s", data, POD_USERNS_DIR);
        _cleanup_closedir_ DIR *d = opendir_at(fd, ".");
        if (!d)
                return error_sys(err, -errno, "%s/%s", data, POD_USERNS_DIR);
        int released = 0;
        for (struct dirent *de; (de = readdir(d));) {
                if (de->d_name[0] == '.')
                        continue;
                /* A claim is made after its pod exists: one whose pod is
                 * gone was left by an interrupted delete. Unreadable or
                 * naming no pod at all, it is not ours to judge. */
                char owner[UUID_STRING_MAX];
                claim_owner(dirfd(d), de->d_name, owner);
                if (!uuid_is_valid(owner) || pod_exists(owner, userdata))
                        continue;
                if (unlinkat(dirfd(d), de->d_name, 0) == 0)
                        released++;
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
