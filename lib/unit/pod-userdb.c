/* SPDX-License-Identifier: Apache-2.0 */
#include <fcntl.h>
#include <inttypes.h>

#include "basic/fs.h"
#include "unit/pod-userdb.h"
#include "unit/rootfs-lookup.h"

/* Whether a line of the file has id in its third field (passwd: uid,
 * group: gid). */
static bool has_id(const char *data, uint32_t id) {
        for (const char *l = data; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
                const char *f = strchr(l, ':');
                f = f ? strchr(f + 1, ':') : NULL;
                char *end;
                if (f && strtoul(f + 1, &end, 10) == id && *end == ':' && end > f + 1)
                        return true;
        }
        return false;
}

static int add_line(int etc_fd, const char *file, uint32_t id, const char *line, Error **err) {
        _cleanup_free_ char *data = NULL, *next = NULL;
        size_t size = 0;
        int r = read_file_at(etc_fd, file, ROOTFS_DB_MAX, &data, &size, err);
        if (r == -ENOENT && err && *err)
                error_free(TAKE_PTR(*err));
        else if (r < 0)
                return error_prefix(err, "/etc/%s of the pod", file);
        if (data && has_id(data, id))
                return 0;
        bool nl = size > 0 && data[size - 1] != '\n';
        int n = asprintf(&next, "%s%s%s\n", strempty(data), nl ? "\n" : "", line);
        if (n < 0)
                return error_sys(err, -ENOMEM, "/etc/%s", file);
        return write_file_atomic_at(etc_fd, file, next, n, 0644, err);
}

int pod_userdb_add(int rootfd, uid_t uid, gid_t gid, Error **err) {
        _cleanup_close_ int etc = open_in_root(rootfd, "etc", O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
        if (etc < 0)
                return error_sys(err, etc, "/etc of the pod");
        char line[128];
        snprintf(line, sizeof(line), "sdpod-u%" PRIu32 ":x:%" PRIu32 ":%" PRIu32 "::/:/usr/sbin/nologin",
                 (uint32_t) uid, (uint32_t) uid, (uint32_t) gid);
        int r = add_line(etc, "passwd", uid, line, err);
        if (r < 0)
                return r;
        snprintf(line, sizeof(line), "sdpod-g%" PRIu32 ":x:%" PRIu32 ":", (uint32_t) gid, (uint32_t) gid);
        return add_line(etc, "group", gid, line, err);
}
