/* SPDX-License-Identifier: Apache-2.0 */
/* The ttrpc server (shim/ttrpc.h) fed the input as the byte stream a client
 * sends on a connection, and the task service's requests decoded from
 * every request frame in it. The server runs the task service's method
 * names with handlers that decode their request and answer at once, but
 * Wait, which holds its calls and answers them after the connection is
 * gone, as a shim answers a Wait when the task exits.
 *
 * Checks besides crashes, leaks and UB: every frame the server sends is a
 * response on an odd stream id the input opened, whose Response decodes;
 * the connection ends once the client has hung up; no fd is left open. */
#include <errno.h>
#include <signal.h>
#include <sys/socket.h>

#include "fuzz.h"
#include "shim/ttrpc.h"
#include "containerd-shim.pb-c.h"
#include "ttrpc.pb-c.h"

#define TASK_SERVICE "containerd.task.v2.Task"

typedef struct Method {
        const char *name;
        const ProtobufCMessageDescriptor *request;
} Method;

static const Method methods[] = {
        { "State", &containerd__task__v2__state_request__descriptor },
        { "Create", &containerd__task__v2__create_task_request__descriptor },
        { "Start", &containerd__task__v2__start_request__descriptor },
        { "Delete", &containerd__task__v2__delete_request__descriptor },
        { "Pids", &containerd__task__v2__pids_request__descriptor },
        { "Pause", &containerd__task__v2__pause_request__descriptor },
        { "Resume", &containerd__task__v2__resume_request__descriptor },
        { "Checkpoint", &containerd__task__v2__checkpoint_task_request__descriptor },
        { "Kill", &containerd__task__v2__kill_request__descriptor },
        { "Exec", &containerd__task__v2__exec_process_request__descriptor },
        { "ResizePty", &containerd__task__v2__resize_pty_request__descriptor },
        { "CloseIO", &containerd__task__v2__close_iorequest__descriptor },
        { "Update", &containerd__task__v2__update_task_request__descriptor },
        { "Wait", &containerd__task__v2__wait_request__descriptor },
        { "Stats", &containerd__task__v2__stats_request__descriptor },
        { "Connect", &containerd__task__v2__connect_request__descriptor },
        { "Shutdown", &containerd__task__v2__shutdown_request__descriptor },
};

static TtrpcCall *held[512];
static size_t n_held;

static int handle(TtrpcCall *c, const uint8_t *payload, size_t size, void *userdata) {
        const Method *m = userdata;
        ProtobufCMessage *req = protobuf_c_message_unpack(m->request, NULL, size, payload);
        if (!req)
                return ttrpc_call_fail(c, GRPC_INVALID_ARGUMENT, "%s: the request does not decode", m->name);
        protobuf_c_message_free_unpacked(req, NULL);
        if (streq(m->name, "Wait") && n_held < ELEMENTSOF(held)) {
                held[n_held++] = c;
                return 0;
        }
        if (streq(m->name, "Pause"))
                return -EOPNOTSUPP;
        if (streq(m->name, "Connect")) {
                Containerd__Task__V2__ConnectResponse resp = CONTAINERD__TASK__V2__CONNECT_RESPONSE__INIT;
                resp.shim_pid = 1;
                resp.version = (char *) "fuzz";
                return ttrpc_call_reply(c, &resp.base);
        }
        return ttrpc_call_reply(c, NULL);
}

static sd_event *event;
static TtrpcServer *server;

static void setup_once(void) {
        if (server)
                return;
        signal(SIGPIPE, SIG_IGN);
        if (sd_event_new(&event) < 0 || ttrpc_server_new(event, -1, &server, NULL) < 0)
                fuzz_fail("cannot set up the server");
        for (size_t i = 0; i < ELEMENTSOF(methods); i++)
                if (ttrpc_server_add_method(server, TASK_SERVICE, methods[i].name, handle, (void *) &methods[i]) < 0)
                        fuzz_fail("cannot add %s", methods[i].name);
}

/* Without the server: the frames of the input as a parser sees them, and
 * each request's payload decoded as every request type. */
static void decode_frames(const uint8_t *data, size_t size) {
        size_t off = 0;
        while (size - off >= TTRPC_HEADER_SIZE) {
                TtrpcHeader h;
                ttrpc_header_decode(data + off, &h);
                if (h.length > TTRPC_MESSAGE_MAX || size - off - TTRPC_HEADER_SIZE < h.length)
                        break;
                const uint8_t *p = data + off + TTRPC_HEADER_SIZE;
                off += TTRPC_HEADER_SIZE + h.length;
                if (h.type != TTRPC_TYPE_REQUEST)
                        continue;
                Ttrpc__Request *req = ttrpc__request__unpack(NULL, h.length, p);
                if (!req)
                        continue;
                for (size_t i = 0; i < ELEMENTSOF(methods); i++) {
                        ProtobufCMessage *m = protobuf_c_message_unpack(methods[i].request, NULL,
                                                                        req->payload.len, req->payload.data);
                        if (m) {
                                /* What decodes encodes again, within the frame limit. */
                                size_t n = protobuf_c_message_get_packed_size(m);
                                if (n > TTRPC_MESSAGE_MAX)
                                        fuzz_fail("%s decoded from %zu bytes packs to %zu", methods[i].name,
                                                  req->payload.len, n);
                                protobuf_c_message_free_unpacked(m, NULL);
                        }
                }
                ttrpc__request__free_unpacked(req, NULL);
        }
}

/* Reads what the server sent; checks each whole frame. */
static size_t in_len;
static uint8_t in[TTRPC_HEADER_SIZE + (1U << 16)];
static unsigned responses;

static void check_frames(void) {
        while (in_len >= TTRPC_HEADER_SIZE) {
                TtrpcHeader h;
                ttrpc_header_decode(in, &h);
                if (h.type != TTRPC_TYPE_RESPONSE || h.stream_id % 2 != 1 || h.length > TTRPC_MESSAGE_MAX)
                        fuzz_fail("the server sent type %u, stream %u, length %u", h.type, h.stream_id, h.length);
                /* Our handlers answer small messages only. */
                if (h.length > sizeof(in) - TTRPC_HEADER_SIZE)
                        fuzz_fail("a response of %u bytes", h.length);
                if (in_len < TTRPC_HEADER_SIZE + h.length)
                        return;
                Ttrpc__Response *resp = ttrpc__response__unpack(NULL, h.length, in + TTRPC_HEADER_SIZE);
                if (!resp)
                        fuzz_fail("a response that does not decode");
                if (FUZZ_VERBOSE)
                        printf("stream %u: %s %s\n", h.stream_id,
                               grpc_code_to_string(resp->status ? (GrpcCode) resp->status->code : GRPC_OK),
                               resp->status ? resp->status->message : "");
                ttrpc__response__free_unpacked(resp, NULL);
                responses++;
                memmove(in, in + TTRPC_HEADER_SIZE + h.length, in_len - TTRPC_HEADER_SIZE - h.length);
                in_len -= TTRPC_HEADER_SIZE + h.length;
        }
}

/* Returns false at EOF. */
static bool client_read(int fd) {
        for (;;) {
                ssize_t n = recv(fd, in + in_len, sizeof(in) - in_len, MSG_DONTWAIT);
                if (n > 0) {
                        in_len += (size_t) n;
                        check_frames();
                        continue;
                }
                if (n == 0 || errno != EAGAIN)
                        return false;
                return true;
        }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        setup_once();
        decode_frames(data, size);

        unsigned fds = fuzz_count_fds();
        int sv[2];
        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
                fuzz_fail("socketpair: %m");
        if (ttrpc_server_add_connection(server, sv[0]) < 0)
                fuzz_fail("add_connection");
        int client = sv[1];
        in_len = 0;
        responses = 0;
        n_held = 0;

        /* Write the input as the server takes it, reading its answers. */
        size_t off = 0;
        bool open = true;
        for (unsigned spins = 0; off < size && spins < 100000; spins++) {
                ssize_t n = send(client, data + off, size - off, MSG_DONTWAIT | MSG_NOSIGNAL);
                if (n > 0)
                        off += (size_t) n;
                else if (n < 0 && errno != EAGAIN)
                        break;  /* the server closed: a bad frame */
                (void) sd_event_run(event, 0);
                if (open)
                        open = client_read(client);
        }
        (void) shutdown(client, SHUT_WR);
        /* Until the server has nothing more to do. */
        for (unsigned quiet = 0, spins = 0; open && quiet < 3 && spins < 100000; spins++) {
                int r = sd_event_run(event, 0);
                size_t before = in_len;
                unsigned before_responses = responses;
                open = client_read(client);
                quiet = (r == 0 && in_len == before && responses == before_responses) ? quiet + 1 : 0;
        }
        close(client);
        for (int i = 0; i < 100 && sd_event_run(event, 0) > 0; i++)
                ;
        if (ttrpc_server_connections(server) != 0)
                fuzz_fail("the connection outlived its client");
        /* Held calls are answered after their connection is gone. */
        for (size_t i = 0; i < n_held; i++) {
                Containerd__Task__V2__WaitResponse resp = CONTAINERD__TASK__V2__WAIT_RESPONSE__INIT;
                resp.exit_status = 137;
                (void) ttrpc_call_reply(held[i], &resp.base);
        }
        n_held = 0;
        if (fuzz_count_fds() != fds)
                fuzz_fail("fds leaked: %u before, %u after", fds, fuzz_count_fds());
        if (FUZZ_VERBOSE)
                printf("%zu of %zu bytes taken, %u responses\n", off, size, responses);
        return 0;
}
