/* SPDX-License-Identifier: Apache-2.0 */
/* The readiness of a detached pod: its launcher's notify socket has an
 * abstract address any process of the network namespace can send to (an
 * app of a pod on the host's network). Only the pod's own nspawn counts. */
#include <stddef.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>

#include "pod/pod-launch.h"
#include "tests.h"

static struct sockaddr_un sa;
static socklen_t sa_len;

static void send_text(const char *text) {
        int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        ASSERT(fd >= 0);
        ASSERT(sendto(fd, text, strlen(text), 0, (struct sockaddr *) &sa, sa_len) == (ssize_t) strlen(text));
        close(fd);
}

/* Sends text from a child process; returns the child's PID. */
static pid_t send_from_child(const char *text) {
        pid_t pid = fork();
        ASSERT(pid >= 0);
        if (pid == 0) {
                send_text(text);
                _exit(0);
        }
        int st;
        ASSERT(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0);
        return pid;
}

int main(void) {
        char address[108], name[64];
        snprintf(name, sizeof(name), "sdpod/test-notify/%d", (int) getpid());
        int sock = notify_socket_new(name, address);
        ASSERT(sock >= 0);
        ASSERT(address[0] == '@' && streq(address + 1, name));
        sa = (struct sockaddr_un) { .sun_family = AF_UNIX };
        memcpy(sa.sun_path + 1, name, strlen(name));
        sa_len = (socklen_t) (offsetof(struct sockaddr_un, sun_path) + 1 + strlen(name));

        /* The expected process says READY=1: ready. */
        send_text("READY=1");
        ASSERT_EQ_INT(notify_socket_ready_from(sock, getpid()), 1);
        send_text("STATUS=booting\nREADY=1\n");
        ASSERT_EQ_INT(notify_socket_ready_from(sock, getpid()), 1);

        /* Anyone else saying it: not ready, whatever it writes. */
        pid_t other = send_from_child("READY=1");
        ASSERT(other != getpid());
        ASSERT_EQ_INT(notify_socket_ready_from(sock, getpid()), 0);
        /* ...but the same message from the process we wait for counts. */
        other = send_from_child("READY=1");
        ASSERT_EQ_INT(notify_socket_ready_from(sock, other), 1);

        /* Not READY=1: nothing. */
        send_text("READY=10");
        ASSERT_EQ_INT(notify_socket_ready_from(sock, getpid()), 0);
        send_text("XREADY=1");
        ASSERT_EQ_INT(notify_socket_ready_from(sock, getpid()), 0);
        /* An empty queue: nothing, no error. */
        ASSERT_EQ_INT(notify_socket_ready_from(sock, getpid()), 0);
        close(sock);
        return 0;
}
