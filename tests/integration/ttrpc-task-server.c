/* SPDX-License-Identifier: Apache-2.0 */
/* ttrpc-task-server SOCKET: serves a few methods of containerd's task
 * service with lib/shim/ttrpc.h on the unix socket SOCKET, for a real
 * ttrpc client (ctr shim) to call. A leading '@' names an abstract socket,
 * with a NUL at its end as Go's net.Dial makes the name of "\x00..." (the
 * address `ctr shim --id ID` tries after /run/containerd/s/HASH is
 * "\x00/containerd-shim/NAMESPACE/ID/shim.sock").
 *
 *
 *   State   answers id = the request's, pid 4242, RUNNING, bundle /bundle
 *   Delete  fails NOT_FOUND "task ID not found"
 *   Wait    held; answered (exit status 9) when a Kill comes
 *   Kill    answers empty
 *   others  not served (Start too): UNIMPLEMENTED
 *
 * Prints "ready" once listening; exits on SIGTERM or after 60 s. */
#include <signal.h>
#include <stdio.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "shim/ttrpc.h"
#include "containerd-shim.pb-c.h"

#define TASK "containerd.task.v2.Task"

static TtrpcCall *waiting;

static int on_state(TtrpcCall *c, const uint8_t *payload, size_t size, void *userdata) {
        Containerd__Task__V2__StateRequest *req = containerd__task__v2__state_request__unpack(NULL, size, payload);
        if (!req)
                return ttrpc_call_fail(c, GRPC_INVALID_ARGUMENT, "StateRequest does not decode");
        Containerd__Task__V2__StateResponse resp = CONTAINERD__TASK__V2__STATE_RESPONSE__INIT;
        resp.id = req->id;
        resp.bundle = (char *) "/bundle";
        resp.pid = 4242;
        resp.status = CONTAINERD__V1__TYPES__STATUS__RUNNING;
        int r = ttrpc_call_reply(c, &resp.base);
        containerd__task__v2__state_request__free_unpacked(req, NULL);
        return r;
}

static int on_delete(TtrpcCall *c, const uint8_t *payload, size_t size, void *userdata) {
        Containerd__Task__V2__DeleteRequest *req = containerd__task__v2__delete_request__unpack(NULL, size, payload);
        if (!req)
                return -EINVAL;
        int r = ttrpc_call_fail(c, GRPC_NOT_FOUND, "task %s not found", req->id);
        containerd__task__v2__delete_request__free_unpacked(req, NULL);
        return r;
}

static int on_wait(TtrpcCall *c, const uint8_t *payload, size_t size, void *userdata) {
        if (waiting)
                return ttrpc_call_fail(c, GRPC_ALREADY_EXISTS, "one Wait at a time");
        waiting = c;
        return 0;
}

static int on_kill(TtrpcCall *c, const uint8_t *payload, size_t size, void *userdata) {
        if (waiting) {
                Containerd__Task__V2__WaitResponse resp = CONTAINERD__TASK__V2__WAIT_RESPONSE__INIT;
                resp.exit_status = 9;
                (void) ttrpc_call_reply(TAKE_PTR(waiting), &resp.base);
        }
        return ttrpc_call_reply(c, NULL);
}

int main(int argc, char **argv) {
        if (argc != 2 || strlen(argv[1]) >= sizeof(((struct sockaddr_un *) NULL)->sun_path)) {
                fprintf(stderr, "usage: ttrpc-task-server SOCKET\n");
                return 2;
        }
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        socklen_t len;
        if (argv[1][0] == '@') {
                memcpy(sa.sun_path + 1, argv[1] + 1, strlen(argv[1]) - 1);
                len = offsetof(struct sockaddr_un, sun_path) + strlen(argv[1]) + 1;
        } else {
                strcpy(sa.sun_path, argv[1]);
                len = sizeof(sa);
        }
        int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd < 0 || bind(fd, (struct sockaddr *) &sa, len) < 0 || listen(fd, 16) < 0) {
                perror("ttrpc-task-server: socket");
                return 1;
        }
        sigset_t ss;
        sigemptyset(&ss);
        sigaddset(&ss, SIGTERM);
        sigprocmask(SIG_BLOCK, &ss, NULL);
        sd_event *e = NULL;
        TtrpcServer *s = NULL;
        Error *err = NULL;
        if (sd_event_default(&e) < 0 || ttrpc_server_new(e, fd, &s, &err) < 0 ||
            sd_event_add_signal(e, NULL, SIGTERM, NULL, NULL) < 0 ||
            sd_event_add_time_relative(e, NULL, CLOCK_MONOTONIC, 60 * 1000 * 1000, 0, NULL, NULL) < 0 ||
            ttrpc_server_add_method(s, TASK, "State", on_state, NULL) < 0 ||
            ttrpc_server_add_method(s, TASK, "Delete", on_delete, NULL) < 0 ||
            ttrpc_server_add_method(s, TASK, "Wait", on_wait, NULL) < 0 ||
            ttrpc_server_add_method(s, TASK, "Kill", on_kill, NULL) < 0) {
                fprintf(stderr, "ttrpc-task-server: setup failed\n");
                return 1;
        }
        printf("ready\n");
        fflush(stdout);
        int r = sd_event_loop(e);
        if (waiting)
                (void) ttrpc_call_fail(TAKE_PTR(waiting), GRPC_UNAVAILABLE, "server exiting");
        ttrpc_server_free(s);
        sd_event_unref(e);
        close(fd);
        return r < 0 ? 1 : 0;
}
