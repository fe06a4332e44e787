/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "basic/fs.h"
#include "basic/macro.h"
#include "basic/time-util.h"
#include "bus/journal-sync.h"

/* The answer is {"parameters":{}} or {"error":"...",...}: far below this. */
#define REPLY_MAX 4096

/* One varlink call of method (no parameters) on fd, answered by the
 * deadline. Varlink: JSON objects, each ended by a NUL byte. */
static int call(int fd, const char *path, const char *method, uint64_t deadline, uint64_t timeout_usec, Error **err) {
        char request[128], reply[REPLY_MAX];
        int len = snprintf(request, sizeof(request), "{\"method\":\"io.systemd.Journal.%s\",\"parameters\":{}}", method);
        /* +1: the request's NUL is its end marker. */
        size_t size = (size_t) len + 1, sent = 0, got = 0;
        for (;;) {
                uint64_t now = monotonic_usec();
                if (now >= deadline)
                        return error_set(err, -ETIMEDOUT, "journald did not answer %s within %llu ms", method,
                                         (unsigned long long) (timeout_usec / 1000));
                struct pollfd p = { fd, sent < size ? POLLOUT : POLLIN, 0 };
                int n = poll(&p, 1, (int) ((deadline - now + 999) / 1000));
                if (n < 0 && errno != EINTR)
                        return error_sys(err, -errno, "%s", path);
                if (n <= 0)
                        continue;
                if (sent < size) {
                        ssize_t w = send(fd, request + sent, size - sent, MSG_NOSIGNAL);
                        if (w < 0 && errno != EAGAIN && errno != EINTR)
                                return error_sys(err, -errno, "cannot ask journald at %s", path);
                        sent += w > 0 ? (size_t) w : 0;
                        continue;
                }
                ssize_t r = recv(fd, reply + got, sizeof(reply) - 1 - got, 0);
                if (r < 0 && (errno == EAGAIN || errno == EINTR))
                        continue;
                if (r < 0)
                        return error_sys(err, -errno, "no answer from journald at %s", path);
                if (r == 0)
                        return error_set(err, -ECONNRESET, "journald at %s closed the connection", path);
                got += (size_t) r;
                reply[got] = 0;
                if (strlen(reply) < got)
                        break;
                if (got == sizeof(reply) - 1)
                        return error_set(err, -EBADMSG, "journald at %s: answer too long", path);
        }
        /* {"parameters":{}}, or an object with "error": journald's own
         * answer (the pod's stage1, not an app's), so no more parsing. */
        if (strstr(reply, "\"error\""))
                return error_set(err, -EIO, "journald at %s refused %s: %.200s", path, method, reply);
        return 0;
}

int journal_sync(const char *path, uint64_t timeout_usec, Error **err) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        if (strlen(path) >= sizeof(sa.sun_path))
                return error_set(err, -ENAMETOOLONG, "%s: path too long", path);
        strcpy(sa.sun_path, path);
        /* Non-blocking: the deadline holds for the connect and the write
         * too, whatever state journald's listening socket is in. */
        _cleanup_close_ int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd < 0)
                return error_sys(err, -errno, "%s", path);
        uint64_t deadline = monotonic_usec() + timeout_usec;
        /* Tried again until the deadline: a full backlog (EAGAIN) is a
         * journald busy elsewhere; no socket yet (ENOENT, ECONNREFUSED) a
         * journald still starting, or restarting (Restart=always). */
        while (connect(fd, (struct sockaddr *) &sa, sizeof(sa)) < 0) {
                if (errno != EAGAIN && errno != EINTR && errno != ENOENT && errno != ECONNREFUSED)
                        return error_sys(err, -errno, "cannot connect to journald at %s", path);
                if (monotonic_usec() >= deadline)
                        return error_set(err, -ETIMEDOUT, "journald at %s accepted nothing within %llu ms", path,
                                         (unsigned long long) (timeout_usec / 1000));
                usleep(10 * 1000);
        }
        /* Synchronize: what was queued is read. FlushToVar: what was read
         * is in the persistent journal (the pod directory's), where
         * journald keeps it only from its flush on (journalctl --flush at
         * boot), which a journald that was slow to start may not have
         * reached yet; else a no-op. */
        int r = call(fd, path, "Synchronize", deadline, timeout_usec, err);
        return r < 0 ? r : call(fd, path, "FlushToVar", deadline, timeout_usec, err);
}
