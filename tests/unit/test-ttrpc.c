/* SPDX-License-Identifier: Apache-2.0 */
/* The ttrpc server (shim/ttrpc.h) with a client written here over a
 * socketpair: unary calls, calls answered later and out of order while
 * others come, unknown services and methods, failures with their codes,
 * answers large enough to need several writes, a pipeline of requests in
 * one write, and what a broken peer sends: an oversize frame, a truncated
 * one, an even stream id, a reused stream id, garbage. Then the event
 * publisher (shim/shim-events.h) with a stand-in publish binary: order,
 * arguments, the Any on stdin, retries and the failure report. */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>

#include "shim/shim-events.h"
#include "shim/ttrpc.h"
#include "containerd-events.pb-c.h"
#include "google-protobuf.pb-c.h"
#include "ttrpc.pb-c.h"
#include "tests.h"

#define SERVICE "sdpod.test.v1.Test"

static sd_event *event;
static TtrpcServer *server;
static int client = -1;

/* The calls "Hold" kept, answered by the tests. */
static TtrpcCall *held[16];
static size_t n_held;

static int handle_echo(TtrpcCall *c, const uint8_t *payload, size_t size, void *userdata) {
        Ttrpc__KeyValue *kv = ttrpc__key_value__unpack(NULL, size, payload);
        if (!kv)
                return ttrpc_call_fail(c, GRPC_INVALID_ARGUMENT, "not a KeyValue");
        int r = ttrpc_call_reply(c, &kv->base);
        ttrpc__key_value__free_unpacked(kv, NULL);
        return r;
}

static int handle_hold(TtrpcCall *c, const uint8_t *payload, size_t size, void *userdata) {
        ASSERT(n_held < ELEMENTSOF(held));
        held[n_held++] = c;
        return 0;
}

static int handle_errno(TtrpcCall *c, const uint8_t *payload, size_t size, void *userdata) {
        return -ENOENT;
}

static int handle_explicit(TtrpcCall *c, const uint8_t *payload, size_t size, void *userdata) {
        return ttrpc_call_fail(c, GRPC_FAILED_PRECONDITION, "task %s is %s", "t1", "stopped");
}

/* Answers, then fails: the answer stands, the error is ignored. */
static int handle_reply_then_error(TtrpcCall *c, const uint8_t *payload, size_t size, void *userdata) {
        ttrpc_call_reply(c, NULL);
        return -EIO;
}

/* Answers with a value of the size the request's value names. */
static int handle_big(TtrpcCall *c, const uint8_t *payload, size_t size, void *userdata) {
        Ttrpc__KeyValue *kv = ttrpc__key_value__unpack(NULL, size, payload);
        ASSERT(kv);
        size_t n = strtoul(kv->value, NULL, 10);
        ttrpc__key_value__free_unpacked(kv, NULL);
        char *v = malloc(n + 1);
        ASSERT(v);
        memset(v, 'x', n);
        v[n] = '\0';
        Ttrpc__KeyValue out = TTRPC__KEY_VALUE__INIT;
        out.key = (char *) "big";
        out.value = v;
        int r = ttrpc_call_reply(c, &out.base);
        free(v);
        return r;
}

static int handle_metadata(TtrpcCall *c, const uint8_t *payload, size_t size, void *userdata) {
        Ttrpc__KeyValue out = TTRPC__KEY_VALUE__INIT;
        out.key = (char *) ttrpc_call_method(c);
        out.value = (char *) (ttrpc_call_metadata(c, "containerd-namespace-ttrpc") ?: "(none)");
        return ttrpc_call_reply(c, &out.base);
}

static void setup(void) {
        ASSERT(sd_event_new(&event) >= 0);
        ASSERT_EQ_INT(ttrpc_server_new(event, -1, &server, NULL), 0);
        ASSERT_EQ_INT(ttrpc_server_add_method(server, SERVICE, "Echo", handle_echo, NULL), 0);
        ASSERT_EQ_INT(ttrpc_server_add_method(server, SERVICE, "Echo", handle_echo, NULL), -EEXIST);
        ASSERT_EQ_INT(ttrpc_server_add_method(server, SERVICE, "Hold", handle_hold, NULL), 0);
        ASSERT_EQ_INT(ttrpc_server_add_method(server, SERVICE, "Errno", handle_errno, NULL), 0);
        ASSERT_EQ_INT(ttrpc_server_add_method(server, SERVICE, "Explicit", handle_explicit, NULL), 0);
        ASSERT_EQ_INT(ttrpc_server_add_method(server, SERVICE, "ReplyThenError", handle_reply_then_error, NULL), 0);
        ASSERT_EQ_INT(ttrpc_server_add_method(server, SERVICE, "Big", handle_big, NULL), 0);
        ASSERT_EQ_INT(ttrpc_server_add_method(server, SERVICE, "Metadata", handle_metadata, NULL), 0);
        int sv[2];
        ASSERT(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0);
        ASSERT_EQ_INT(ttrpc_server_add_connection(server, sv[0]), 0);
        client = sv[1];
        ASSERT_EQ_INT(ttrpc_server_connections(server), 1);
}

static void teardown(void) {
        server = ttrpc_server_free(server);
        event = sd_event_unref(event);
        if (client >= 0)
                close(client);
        client = -1;
}

static void send_all(const void *p, size_t n) {
        const uint8_t *b = p;
        while (n > 0) {
                ssize_t k = send(client, b, n, MSG_DONTWAIT | MSG_NOSIGNAL);
                if (k < 0 && errno == EAGAIN) {
                        /* The server reads as the loop runs. */
                        ASSERT(sd_event_run(event, 10 * 1000) >= 0);
                        continue;
                }
                ASSERT(k > 0);
                b += k;
                n -= (size_t) k;
        }
}

static void send_request(uint32_t stream_id, const char *service, const char *method, const ProtobufCMessage *msg) {
        uint8_t *frame;
        size_t size;
        ASSERT_EQ_INT(ttrpc_frame_request(stream_id, service, method, msg, &frame, &size), 0);
        send_all(frame, size);
        free(frame);
}

static void send_echo(uint32_t stream_id, const char *value) {
        Ttrpc__KeyValue kv = TTRPC__KEY_VALUE__INIT;
        kv.key = (char *) "k";
        kv.value = (char *) value;
        send_request(stream_id, SERVICE, "Echo", &kv.base);
}

/* Client input buffered across reads. */
static uint8_t *cin;
static size_t cin_len, cin_alloc;
static bool client_eof;

/* Runs the loop and reads what the server sent until a whole frame is
 * there (true) or the server closed the connection (false), within 5 s. */
static bool recv_frame(TtrpcHeader *ret_h, uint8_t **ret_payload) {
        for (int i = 0; i < 500; i++) {
                if (cin_len >= TTRPC_HEADER_SIZE) {
                        TtrpcHeader h;
                        ttrpc_header_decode(cin, &h);
                        if (cin_len >= TTRPC_HEADER_SIZE + h.length) {
                                *ret_h = h;
                                *ret_payload = malloc(h.length + 1);
                                memcpy(*ret_payload, cin + TTRPC_HEADER_SIZE, h.length);
                                memmove(cin, cin + TTRPC_HEADER_SIZE + h.length, cin_len - TTRPC_HEADER_SIZE - h.length);
                                cin_len -= TTRPC_HEADER_SIZE + h.length;
                                return true;
                        }
                }
                if (client_eof)
                        return false;
                if (cin_alloc - cin_len < 65536) {
                        cin_alloc = cin_alloc * 2 + 65536;
                        cin = realloc(cin, cin_alloc);
                        ASSERT(cin);
                }
                ssize_t n = recv(client, cin + cin_len, cin_alloc - cin_len, MSG_DONTWAIT);
                if (n == 0 || (n < 0 && errno == ECONNRESET)) {
                        client_eof = true;
                        continue;
                }
                if (n > 0) {
                        cin_len += (size_t) n;
                        continue;
                }
                ASSERT(errno == EAGAIN);
                ASSERT(sd_event_run(event, 10 * 1000) >= 0);
        }
        return false;
}

static void client_reset(void) {
        free(cin);
        cin = NULL;
        cin_len = cin_alloc = 0;
        client_eof = false;
}

/* Expects a response on stream_id: its status code (and message part),
 * and, for success, the KeyValue in it (caller frees). */
static Ttrpc__KeyValue *expect_response(uint32_t stream_id, GrpcCode code, const char *message_part) {
        TtrpcHeader h;
        uint8_t *payload;
        ASSERT(recv_frame(&h, &payload));
        ASSERT_EQ_INT(h.type, TTRPC_TYPE_RESPONSE);
        ASSERT_EQ_INT(h.stream_id, stream_id);
        Ttrpc__Response *resp = ttrpc__response__unpack(NULL, h.length, payload);
        free(payload);
        ASSERT(resp);
        Ttrpc__KeyValue *kv = NULL;
        if (code == GRPC_OK) {
                ASSERT(!resp->status || resp->status->code == 0);
                kv = ttrpc__key_value__unpack(NULL, resp->payload.len, resp->payload.data);
                ASSERT(kv);
        } else {
                ASSERT(resp->status);
                ASSERT_EQ_INT(resp->status->code, code);
                if (message_part)
                        ASSERT_CONTAINS(resp->status->message, message_part);
                ASSERT_EQ_INT(resp->payload.len, 0);
        }
        ttrpc__response__free_unpacked(resp, NULL);
        return kv;
}

static void expect_echo(uint32_t stream_id, const char *value) {
        Ttrpc__KeyValue *kv = expect_response(stream_id, GRPC_OK, NULL);
        ASSERT_STREQ(kv->value, value);
        ttrpc__key_value__free_unpacked(kv, NULL);
}

/* The server closed the connection: EOF for the client, and the server
 * counts none once the loop has run. */
static void expect_closed(void) {
        TtrpcHeader h;
        uint8_t *payload = NULL;
        ASSERT(!recv_frame(&h, &payload));
        ASSERT(client_eof);
        for (int i = 0; i < 10 && ttrpc_server_connections(server) > 0; i++)
                ASSERT(sd_event_run(event, 10 * 1000) >= 0);
        ASSERT_EQ_INT(ttrpc_server_connections(server), 0);
}

static void test_unary(void) {
        setup();
        send_echo(1, "hello");
        expect_echo(1, "hello");
        /* An empty message (google.protobuf.Empty's encoding) is a valid KeyValue too. */
        send_request(3, SERVICE, "Echo", NULL);
        Ttrpc__KeyValue *kv = expect_response(3, GRPC_OK, NULL);
        ASSERT_STREQ(kv->value, "");
        ttrpc__key_value__free_unpacked(kv, NULL);
        send_request(5, SERVICE, "ReplyThenError", NULL);
        kv = expect_response(5, GRPC_OK, NULL);
        ttrpc__key_value__free_unpacked(kv, NULL);
        ASSERT_EQ_INT(ttrpc_server_connections(server), 1);
        teardown();
        client_reset();
}

static void test_out_of_order(void) {
        setup();
        n_held = 0;
        send_request(1, SERVICE, "Hold", NULL);
        send_request(3, SERVICE, "Hold", NULL);
        send_request(5, SERVICE, "Hold", NULL);
        send_echo(7, "meanwhile");
        /* The held calls do not block the others. */
        expect_echo(7, "meanwhile");
        ASSERT_EQ_INT(n_held, 3);
        ASSERT_STREQ(ttrpc_call_method(held[1]), "Hold");
        ASSERT_STREQ(ttrpc_call_service(held[1]), SERVICE);
        ASSERT(ttrpc_call_connected(held[1]));

        /* Answered in another order than asked. */
        Ttrpc__KeyValue v = TTRPC__KEY_VALUE__INIT;
        v.value = (char *) "3";
        ASSERT_EQ_INT(ttrpc_call_reply(held[2], &v.base), 0);
        expect_echo(5, "3");
        ASSERT_EQ_INT(ttrpc_call_fail(held[0], GRPC_NOT_FOUND, "no task %d", 1), 0);
        expect_response(1, GRPC_NOT_FOUND, "no task 1");
        v.value = (char *) "2";
        ASSERT_EQ_INT(ttrpc_call_reply(held[1], &v.base), 0);
        expect_echo(3, "2");
        /* Stream ids may be used again once answered. */
        send_echo(1, "again");
        expect_echo(1, "again");
        teardown();
        client_reset();
}

static void test_unimplemented_and_failures(void) {
        setup();
        send_request(1, "no.such.Service", "Create", NULL);
        expect_response(1, GRPC_UNIMPLEMENTED, "no.such.Service");
        send_request(3, SERVICE, "Nope", NULL);
        expect_response(3, GRPC_UNIMPLEMENTED, "Nope");
        send_request(5, SERVICE, "Errno", NULL);
        expect_response(5, GRPC_NOT_FOUND, strerror(ENOENT));
        send_request(7, SERVICE, "Explicit", NULL);
        expect_response(7, GRPC_FAILED_PRECONDITION, "task t1 is stopped");
        /* A payload that is no KeyValue: the handler says so. */
        Google__Protobuf__Timestamp ts = GOOGLE__PROTOBUF__TIMESTAMP__INIT;
        ts.seconds = 12345;
        send_request(9, SERVICE, "Echo", &ts.base);
        expect_response(9, GRPC_INVALID_ARGUMENT, "KeyValue");
        /* A frame whose Request does not decode: answered, the connection stays. */
        uint8_t bad[TTRPC_HEADER_SIZE + 3];
        ttrpc_header_encode(&(TtrpcHeader) { .length = 3, .stream_id = 11, .type = TTRPC_TYPE_REQUEST }, bad);
        memcpy(bad + TTRPC_HEADER_SIZE, "\x0a\x7f\x01", 3);   /* a string field claiming 127 bytes */
        send_all(bad, sizeof(bad));
        expect_response(11, GRPC_INVALID_ARGUMENT, "does not decode");
        /* Stream data and stray responses are read and ignored. */
        uint8_t data[TTRPC_HEADER_SIZE + 4] = {};
        ttrpc_header_encode(&(TtrpcHeader) { .length = 4, .stream_id = 13, .type = TTRPC_TYPE_DATA }, data);
        send_all(data, sizeof(data));
        ttrpc_header_encode(&(TtrpcHeader) { .length = 4, .stream_id = 2, .type = TTRPC_TYPE_RESPONSE }, data);
        send_all(data, sizeof(data));
        send_echo(15, "still here");
        expect_echo(15, "still here");
        teardown();
        client_reset();
}

static void test_metadata(void) {
        setup();
        Ttrpc__KeyValue md = TTRPC__KEY_VALUE__INIT, *mdp = &md;
        md.key = (char *) "containerd-namespace-ttrpc";
        md.value = (char *) "k8s.io";
        Ttrpc__Request req = TTRPC__REQUEST__INIT;
        req.service = (char *) SERVICE;
        req.method = (char *) "Metadata";
        req.n_metadata = 1;
        req.metadata = &mdp;
        size_t n = ttrpc__request__get_packed_size(&req);
        uint8_t *frame = malloc(TTRPC_HEADER_SIZE + n);
        ttrpc_header_encode(&(TtrpcHeader) { .length = n, .stream_id = 1, .type = TTRPC_TYPE_REQUEST }, frame);
        ttrpc__request__pack(&req, frame + TTRPC_HEADER_SIZE);
        send_all(frame, TTRPC_HEADER_SIZE + n);
        free(frame);
        Ttrpc__KeyValue *kv = expect_response(1, GRPC_OK, NULL);
        ASSERT_STREQ(kv->key, "Metadata");
        ASSERT_STREQ(kv->value, "k8s.io");
        ttrpc__key_value__free_unpacked(kv, NULL);
        teardown();
        client_reset();
}

static void test_big_and_pipelined(void) {
        setup();
        /* 3 MiB out: more than a socket buffer, so written as the client reads. */
        Ttrpc__KeyValue kv = TTRPC__KEY_VALUE__INIT;
        kv.value = (char *) "3145728";
        send_request(1, SERVICE, "Big", &kv.base);
        Ttrpc__KeyValue *got = expect_response(1, GRPC_OK, NULL);
        ASSERT_EQ_INT(strlen(got->value), 3145728);
        ttrpc__key_value__free_unpacked(got, NULL);
        /* Over 4 MiB: cannot be sent, said so. */
        kv.value = (char *) "4194305";
        send_request(3, SERVICE, "Big", &kv.base);
        expect_response(3, GRPC_RESOURCE_EXHAUSTED, NULL);

        /* A 2 MiB request in. */
        char *v = malloc(2 << 20);
        memset(v, 'y', (2 << 20) - 1);
        v[(2 << 20) - 1] = '\0';
        send_echo(5, v);
        expect_echo(5, v);
        free(v);

        /* 200 requests in one buffer, written at once. */
        uint8_t *all = NULL;
        size_t all_len = 0;
        for (uint32_t i = 0; i < 200; i++) {
                char value[32];
                snprintf(value, sizeof(value), "n%u", i);
                Ttrpc__KeyValue e = TTRPC__KEY_VALUE__INIT;
                e.value = value;
                uint8_t *frame;
                size_t size;
                ASSERT_EQ_INT(ttrpc_frame_request(2 * i + 7, SERVICE, "Echo", &e.base, &frame, &size), 0);
                all = realloc(all, all_len + size);
                memcpy(all + all_len, frame, size);
                all_len += size;
                free(frame);
        }
        send_all(all, all_len);
        free(all);
        for (uint32_t i = 0; i < 200; i++) {
                char value[32];
                snprintf(value, sizeof(value), "n%u", i);
                expect_echo(2 * i + 7, value);
        }
        teardown();
        client_reset();
}

/* One call after the other, each waiting for its answer: the cost of a
 * call through framing, dispatch and the loop (printed, loosely bounded). */
static void test_round_trips(void) {
        setup();
        struct timespec a, b;
        clock_gettime(CLOCK_MONOTONIC, &a);
        for (uint32_t i = 0; i < 5000; i++) {
                send_echo(2 * i + 1, "ping");
                expect_echo(2 * i + 1, "ping");
        }
        clock_gettime(CLOCK_MONOTONIC, &b);
        double us = ((b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec)) / 1e3 / 5000;
        fprintf(stderr, "# %.1f us per call (client and server in one process)\n", us);
        ASSERT(us < 5000);
        teardown();
        client_reset();
}

static void test_oversize_frame(void) {
        setup();
        uint8_t h[TTRPC_HEADER_SIZE];
        ttrpc_header_encode(&(TtrpcHeader) { .length = TTRPC_MESSAGE_MAX + 1, .stream_id = 1, .type = TTRPC_TYPE_REQUEST }, h);
        send_all(h, sizeof(h));
        expect_closed();
        teardown();
        client_reset();
}

static void test_truncated_frame(void) {
        setup();
        uint8_t frame[TTRPC_HEADER_SIZE + 10] = {};
        ttrpc_header_encode(&(TtrpcHeader) { .length = 100, .stream_id = 1, .type = TTRPC_TYPE_REQUEST }, frame);
        send_all(frame, sizeof(frame));
        ASSERT(shutdown(client, SHUT_WR) == 0);
        expect_closed();
        teardown();
        client_reset();
}

static void test_bad_stream_ids(void) {
        /* Even: a server-initiated stream, which a client may not open. */
        setup();
        send_echo(2, "x");
        expect_closed();
        teardown();
        client_reset();

        /* Zero. */
        setup();
        send_echo(0, "x");
        expect_closed();
        teardown();
        client_reset();

        /* One still in flight. */
        setup();
        n_held = 0;
        send_request(1, SERVICE, "Hold", NULL);
        send_echo(3, "ok");
        expect_echo(3, "ok");
        send_echo(1, "x");
        expect_closed();
        /* The held call's connection is gone: its answer goes nowhere. */
        ASSERT_EQ_INT(n_held, 1);
        ASSERT(!ttrpc_call_connected(held[0]));
        ASSERT_EQ_INT(ttrpc_call_reply(held[0], NULL), 0);
        teardown();
        client_reset();
}

static void test_garbage(void) {
        setup();
        /* Text where a header should be: a length of about 1.2 GB. */
        send_all("GET / HTTP/1.1\r\nHost: x\r\n\r\n", 27);
        expect_closed();
        teardown();
        client_reset();
}

static void test_half_close_and_hangup(void) {
        /* A client that stops sending still gets its answers, then EOF. */
        setup();
        n_held = 0;
        send_echo(1, "a");
        send_request(3, SERVICE, "Hold", NULL);
        ASSERT(shutdown(client, SHUT_WR) == 0);
        expect_echo(1, "a");
        for (int i = 0; i < 5; i++)
                ASSERT(sd_event_run(event, 10 * 1000) >= 0);
        ASSERT_EQ_INT(n_held, 1);
        ASSERT_EQ_INT(ttrpc_call_reply(held[0], NULL), 0);
        Ttrpc__KeyValue *kv = expect_response(3, GRPC_OK, NULL);
        ttrpc__key_value__free_unpacked(kv, NULL);
        expect_closed();
        teardown();
        client_reset();

        /* A client that goes away with a call in flight: the call stays
         * answerable, also after the server is freed. */
        setup();
        n_held = 0;
        send_request(1, SERVICE, "Hold", NULL);
        send_request(3, SERVICE, "Hold", NULL);
        for (int i = 0; i < 5 && n_held < 2; i++)
                ASSERT(sd_event_run(event, 10 * 1000) >= 0);
        ASSERT_EQ_INT(n_held, 2);
        close(client);
        client = -1;
        for (int i = 0; i < 10 && ttrpc_server_connections(server) > 0; i++)
                ASSERT(sd_event_run(event, 10 * 1000) >= 0);
        ASSERT_EQ_INT(ttrpc_server_connections(server), 0);
        ASSERT_EQ_INT(ttrpc_call_fail(held[0], GRPC_ABORTED, "late"), 0);
        teardown();
        ASSERT_EQ_INT(ttrpc_call_reply(held[1], NULL), 0);
        client_reset();
}

static unsigned disconnects;
static void on_disconnect(TtrpcServer *s, unsigned left, void *userdata) {
        disconnects++;
}

/* The listening socket: accepted peers of our uid are served; as root, a
 * peer of another uid is refused. */
static void test_listener(void) {
        ASSERT(sd_event_new(&event) >= 0);
        int lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        ASSERT(lfd >= 0);
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        int len = snprintf(sa.sun_path + 1, sizeof(sa.sun_path) - 1, "sdpod-test-ttrpc-%d", (int) getpid());
        socklen_t salen = offsetof(struct sockaddr_un, sun_path) + 1 + len;
        ASSERT(bind(lfd, (struct sockaddr *) &sa, salen) == 0);
        ASSERT(listen(lfd, 16) == 0);
        ASSERT_EQ_INT(ttrpc_server_new(event, lfd, &server, NULL), 0);
        ttrpc_server_set_disconnect_callback(server, on_disconnect, NULL);
        ASSERT_EQ_INT(ttrpc_server_add_method(server, SERVICE, "Echo", handle_echo, NULL), 0);

        client = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        ASSERT(connect(client, (struct sockaddr *) &sa, salen) == 0);
        send_echo(1, "via listener");
        expect_echo(1, "via listener");
        ASSERT_EQ_INT(ttrpc_server_connections(server), 1);
        close(client);
        client = -1;
        for (int i = 0; i < 10 && disconnects == 0; i++)
                ASSERT(sd_event_run(event, 10 * 1000) >= 0);
        ASSERT_EQ_INT(ttrpc_server_connections(server), 0);
        ASSERT_EQ_INT(disconnects, 1);
        client_reset();

        if (geteuid() == 0) {
                pid_t pid = fork();
                ASSERT(pid >= 0);
                if (pid == 0) {
                        if (setgroups(0, NULL) < 0 || setgid(65534) < 0 || setuid(65534) < 0)
                                _exit(2);
                        int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
                        if (fd < 0 || connect(fd, (struct sockaddr *) &sa, salen) < 0)
                                _exit(3);
                        uint8_t *frame;
                        size_t size;
                        if (ttrpc_frame_request(1, SERVICE, "Echo", NULL, &frame, &size) < 0)
                                _exit(4);
                        /* Refused: the write fails (the server was quicker),
                         * or the read sees EOF or a reset; never an answer. */
                        if (write(fd, frame, size) != (ssize_t) size)
                                _exit(0);
                        char buf[64];
                        ssize_t n = read(fd, buf, sizeof(buf));
                        _exit(n <= 0 ? 0 : 5);
                }
                int status = 0;
                for (int i = 0; i < 500; i++) {
                        ASSERT(sd_event_run(event, 10 * 1000) >= 0);
                        if (waitpid(pid, &status, WNOHANG) == pid)
                                break;
                }
                ASSERT(WIFEXITED(status));
                ASSERT_EQ_INT(WEXITSTATUS(status), 0);
                ASSERT_EQ_INT(ttrpc_server_connections(server), 0);
        } else
                fprintf(stderr, "(not root: a peer of another uid is not tried)\n");

        teardown();
        close(lfd);
}

/* Out of fds, a pending connection cannot be accepted and keeps the
 * listening socket readable: the server pauses accepting rather than spin
 * the loop, and takes the connection once fds are free again. */
static void test_out_of_fds(void) {
        pid_t pid = fork();
        ASSERT(pid >= 0);
        if (pid == 0) {
                sd_event *e = NULL;
                TtrpcServer *s = NULL;
                int lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
                struct sockaddr_un sa = { .sun_family = AF_UNIX };
                int len = snprintf(sa.sun_path + 1, sizeof(sa.sun_path) - 1, "sdpod-test-ttrpc-fds-%d", (int) getpid());
                socklen_t salen = offsetof(struct sockaddr_un, sun_path) + 1 + len;
                if (lfd < 0 || bind(lfd, (struct sockaddr *) &sa, salen) < 0 || listen(lfd, 16) < 0 ||
                    sd_event_new(&e) < 0 || ttrpc_server_new(e, lfd, &s, NULL) < 0)
                        _exit(10);
                int cfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
                if (cfd < 0 || connect(cfd, (struct sockaddr *) &sa, salen) < 0)
                        _exit(11);
                /* The lowest free fd becomes the limit: every new one fails (EMFILE). */
                int probe = open("/dev/null", O_RDONLY | O_CLOEXEC);
                if (probe < 0)
                        _exit(12);
                close(probe);
                struct rlimit old, rl;
                if (getrlimit(RLIMIT_NOFILE, &old) < 0)
                        _exit(13);
                rl = old;
                rl.rlim_cur = probe;
                if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
                        _exit(14);
                /* 300 ms of the loop: how often did it wake up? */
                struct timespec t0, t;
                clock_gettime(CLOCK_MONOTONIC, &t0);
                unsigned wakeups = 0;
                do {
                        int r = sd_event_run(e, 10 * 1000);
                        if (r < 0)
                                _exit(15);
                        wakeups += r > 0;
                        clock_gettime(CLOCK_MONOTONIC, &t);
                } while ((t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000 < 300);
                fprintf(stderr, "# out of fds: %u wake-ups in 300 ms\n", wakeups);
                if (wakeups > 20)
                        _exit(1);
                if (ttrpc_server_connections(s) != 0)
                        _exit(2);
                if (setrlimit(RLIMIT_NOFILE, &old) < 0)
                        _exit(16);
                for (int i = 0; i < 100 && ttrpc_server_connections(s) == 0; i++)
                        if (sd_event_run(e, 10 * 1000) < 0)
                                _exit(17);
                _exit(ttrpc_server_connections(s) == 1 ? 0 : 3);
        }
        int status = 0;
        ASSERT(waitpid(pid, &status, 0) == pid);
        ASSERT(WIFEXITED(status));
        ASSERT_EQ_INT(WEXITSTATUS(status), 0);
}

static void test_codes(void) {
        ASSERT_EQ_INT(grpc_code_from_errno(-ENOENT), GRPC_NOT_FOUND);
        ASSERT_EQ_INT(grpc_code_from_errno(-EEXIST), GRPC_ALREADY_EXISTS);
        ASSERT_EQ_INT(grpc_code_from_errno(-EOPNOTSUPP), GRPC_UNIMPLEMENTED);
        ASSERT_EQ_INT(grpc_code_from_errno(-EIO), GRPC_INTERNAL);
        ASSERT_STREQ(grpc_code_to_string(GRPC_UNIMPLEMENTED), "UNIMPLEMENTED");
        ASSERT_STREQ(grpc_code_to_string((GrpcCode) 99), "?");
        uint8_t b[TTRPC_HEADER_SIZE];
        TtrpcHeader h = { .length = 0x01020304, .stream_id = 0xa0b0c0d0, .type = 2, .flags = 5 }, back;
        ttrpc_header_encode(&h, b);
        ASSERT(memcmp(b, "\x01\x02\x03\x04\xa0\xb0\xc0\xd0\x02\x05", 10) == 0);
        ttrpc_header_decode(b, &back);
        ASSERT_EQ_INT(back.length, h.length);
        ASSERT_EQ_INT(back.stream_id, h.stream_id);
        ASSERT_EQ_INT(back.type, 2);
        ASSERT_EQ_INT(back.flags, 5);
}

/* ---- events ---- */

static char tmpdir[] = "/tmp/test-ttrpc-XXXXXX";

static void remove_tmpdir(void) {
        char cmd[128];
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
        (void) !system(cmd);
}

static char *read_file_all(const char *path, size_t *ret_size) {
        FILE *f = fopen(path, "re");
        if (!f)
                return NULL;
        char *buf = malloc(1 << 16);
        size_t n = fread(buf, 1, (1 << 16) - 1, f);
        fclose(f);
        buf[n] = '\0';
        if (ret_size)
                *ret_size = n;
        return buf;
}

static unsigned failures;
static char failed_topic[64];
static void on_failure(const char *topic, const char *why, void *userdata) {
        failures++;
        snprintf(failed_topic, sizeof(failed_topic), "%s", topic);
        ASSERT_CONTAINS(why, "status 7");
}

static void test_publish(void) {
        ASSERT(mkdtemp(tmpdir));
        test_cleanup = remove_tmpdir;
        /* A stand-in for containerd: records its arguments in order and the
         * event of each topic. */
        char script[256], log[256];
        snprintf(script, sizeof(script), "%s/publish", tmpdir);
        snprintf(log, sizeof(log), "%s/log", tmpdir);
        FILE *f = fopen(script, "we");
        ASSERT(f);
        fprintf(f, "#!/bin/sh\necho \"$*\" >> '%s'\ncat > '%s'/\"$(printf %%s \"$5\" | tr / _)\"\n", log, tmpdir);
        fclose(f);
        ASSERT(chmod(script, 0755) == 0);

        ASSERT(sd_event_new(&event) >= 0);
        ShimPublisher p = { .binary = script, .address = "/run/containerd/containerd.sock", .namespace = "k8s.io" };
        Containerd__Events__TaskStart start = CONTAINERD__EVENTS__TASK_START__INIT;
        start.container_id = (char *) "c1";
        start.pid = 42;
        Containerd__Events__TaskExit exit_ev = CONTAINERD__EVENTS__TASK_EXIT__INIT;
        Google__Protobuf__Timestamp ts = GOOGLE__PROTOBUF__TIMESTAMP__INIT;
        ts.seconds = 1700000000;
        ts.nanos = 5;
        exit_ev.container_id = (char *) "c1";
        exit_ev.id = (char *) "c1";
        exit_ev.pid = 42;
        exit_ev.exit_status = 3;
        exit_ev.exited_at = &ts;
        ASSERT_EQ_INT(shim_publish(&p, event, SHIM_TOPIC_TASK_START, "containerd.events.TaskStart", &start.base, NULL), 0);
        ASSERT_EQ_INT(shim_publish(&p, event, SHIM_TOPIC_TASK_EXIT, "containerd.events.TaskExit", &exit_ev.base, NULL), 0);
        ASSERT_EQ_INT(shim_publisher_pending(&p), 2);
        for (int i = 0; i < 500 && shim_publisher_pending(&p) > 0; i++)
                ASSERT(sd_event_run(event, 10 * 1000) >= 0);
        ASSERT_EQ_INT(shim_publisher_pending(&p), 0);

        char *l = read_file_all(log, NULL);
        ASSERT_STREQ(l, "--address /run/containerd/containerd.sock publish --topic /tasks/start --namespace k8s.io\n"
                        "--address /run/containerd/containerd.sock publish --topic /tasks/exit --namespace k8s.io\n");
        free(l);
        char path[300];
        snprintf(path, sizeof(path), "%s/_tasks_exit", tmpdir);
        size_t n;
        char *data = read_file_all(path, &n);
        ASSERT(data);
        Google__Protobuf__Any *any = google__protobuf__any__unpack(NULL, n, (uint8_t *) data);
        ASSERT(any);
        ASSERT_STREQ(any->type_url, "containerd.events.TaskExit");
        Containerd__Events__TaskExit *back = containerd__events__task_exit__unpack(NULL, any->value.len, any->value.data);
        ASSERT(back);
        ASSERT_STREQ(back->container_id, "c1");
        ASSERT_EQ_INT(back->exit_status, 3);
        ASSERT(back->exited_at);
        ASSERT_EQ_INT(back->exited_at->seconds, 1700000000);
        ASSERT_EQ_INT(back->exited_at->nanos, 5);
        containerd__events__task_exit__free_unpacked(back, NULL);
        google__protobuf__any__free_unpacked(any, NULL);
        free(data);

        /* flush() delivers synchronously what is queued. */
        ASSERT_EQ_INT(shim_publish(&p, event, SHIM_TOPIC_TASK_DELETE, "containerd.events.TaskDelete", &start.base, NULL), 0);
        ASSERT_EQ_INT(shim_publisher_flush(&p, 5 * 1000 * 1000), 0);
        ASSERT_EQ_INT(shim_publisher_pending(&p), 0);
        snprintf(path, sizeof(path), "%s/_tasks_delete", tmpdir);
        ASSERT(access(path, F_OK) == 0);
        shim_publisher_done(&p);

        /* A binary that fails: tried three times, then reported. */
        f = fopen(script, "we");
        fprintf(f, "#!/bin/sh\necho try >> '%s'.fail\nexit 7\n", log);
        fclose(f);
        ShimPublisher q = { .binary = script, .address = "a", .namespace = "n", .on_failure = on_failure };
        ASSERT_EQ_INT(shim_publish(&q, event, SHIM_TOPIC_TASK_OOM, "containerd.events.TaskOOM", &start.base, NULL), 0);
        for (int i = 0; i < 500 && shim_publisher_pending(&q) > 0; i++)
                ASSERT(sd_event_run(event, 10 * 1000) >= 0);
        ASSERT_EQ_INT(failures, 1);
        ASSERT_STREQ(failed_topic, SHIM_TOPIC_TASK_OOM);
        snprintf(path, sizeof(path), "%s.fail", log);
        l = read_file_all(path, NULL);
        ASSERT_STREQ(l, "try\ntry\ntry\n");
        free(l);
        shim_publisher_done(&q);

        /* No binary at all: an error at once. */
        ShimPublisher none = { .address = "a", .namespace = "n" };
        ASSERT_EQ_INT(shim_publish(&none, event, SHIM_TOPIC_TASK_OOM, "x", &start.base, NULL), -EINVAL);
        /* A binary that hangs: flush kills it at its deadline. */
        f = fopen(script, "we");
        fprintf(f, "#!/bin/sh\nexec sleep 60\n");
        fclose(f);
        ShimPublisher hang = { .binary = script, .address = "a", .namespace = "n" };
        ASSERT_EQ_INT(shim_publish(&hang, event, SHIM_TOPIC_TASK_OOM, "x", &start.base, NULL), 0);
        ASSERT_EQ_INT(shim_publish(&hang, event, SHIM_TOPIC_TASK_OOM, "x", &start.base, NULL), 0);
        ASSERT_EQ_INT(shim_publisher_flush(&hang, 300 * 1000), 2);
        shim_publisher_done(&hang);
        /* done() with a process running kills and reaps it. */
        ASSERT_EQ_INT(shim_publish(&hang, event, SHIM_TOPIC_TASK_OOM, "x", &start.base, NULL), 0);
        shim_publisher_done(&hang);
        ASSERT(waitpid(-1, NULL, WNOHANG) < 0 && errno == ECHILD);

        event = sd_event_unref(event);
        remove_tmpdir();
        test_cleanup = NULL;
}

int main(void) {
        /* A peer that vanished must not kill the test with SIGPIPE. */
        signal(SIGPIPE, SIG_IGN);
        RUN(test_codes);
        RUN(test_unary);
        RUN(test_out_of_order);
        RUN(test_unimplemented_and_failures);
        RUN(test_metadata);
        RUN(test_big_and_pipelined);
        RUN(test_round_trips);
        RUN(test_oversize_frame);
        RUN(test_truncated_frame);
        RUN(test_bad_stream_ids);
        RUN(test_garbage);
        RUN(test_half_close_and_hangup);
        RUN(test_listener);
        RUN(test_out_of_fds);
        RUN(test_publish);
        return 0;
}
