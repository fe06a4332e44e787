/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* A ttrpc server on sd-event: the protocol containerd speaks to its runtime
 * v2 shims over a unix socket. Each frame is a 10-byte header (payload
 * length, stream id, both big-endian uint32; type; flags) and a payload of
 * at most 4 MiB; a request frame (type 1) carries a ttrpc.Request
 * (service, method, the method's own message), the server answers on the
 * same stream id with a response frame (type 2) carrying a ttrpc.Response
 * (a google.rpc.Status when it failed, else the answer's message).
 *
 * The client (containerd) multiplexes: a Wait may stay unanswered for the
 * life of a task while other calls come and go on the same connection, so
 * handlers may answer at once or keep the call and answer later, from any
 * callback of the same event loop. The peer is containerd, but everything
 * it sends is read bounded and checked: a frame that breaks the framing
 * (too long, an even or zero stream id, a stream id already in flight)
 * closes its connection; a request whose Request does not decode is
 * answered INVALID_ARGUMENT; frames of other types than requests (stream
 * data, which the task service never uses) are read and ignored, as
 * ttrpc's own server does. Only peers of our own uid are served
 * (SO_PEERCRED), others are disconnected at once. */

#include <stdarg.h>
#include <stdint.h>
#include <protobuf-c/protobuf-c.h>
#include <systemd/sd-event.h>

#include "basic/error.h"

/* gRPC's canonical status codes, which ttrpc carries in its Status and
 * containerd maps onto its error kinds (errdefs): NOT_FOUND -> "not found",
 * ALREADY_EXISTS, FAILED_PRECONDITION, UNIMPLEMENTED -> "not implemented". */
typedef enum GrpcCode {
        GRPC_OK = 0,
        GRPC_CANCELLED = 1,
        GRPC_UNKNOWN = 2,
        GRPC_INVALID_ARGUMENT = 3,
        GRPC_DEADLINE_EXCEEDED = 4,
        GRPC_NOT_FOUND = 5,
        GRPC_ALREADY_EXISTS = 6,
        GRPC_PERMISSION_DENIED = 7,
        GRPC_RESOURCE_EXHAUSTED = 8,
        GRPC_FAILED_PRECONDITION = 9,
        GRPC_ABORTED = 10,
        GRPC_OUT_OF_RANGE = 11,
        GRPC_UNIMPLEMENTED = 12,
        GRPC_INTERNAL = 13,
        GRPC_UNAVAILABLE = 14,
        GRPC_DATA_LOSS = 15,
        GRPC_UNAUTHENTICATED = 16,
} GrpcCode;

/* The code a negative errno is answered with: -ENOENT NOT_FOUND, -EEXIST
 * ALREADY_EXISTS, -EINVAL INVALID_ARGUMENT, -EOPNOTSUPP/-ENOSYS
 * UNIMPLEMENTED, -EBUSY/-ESRCH FAILED_PRECONDITION, -EPERM/-EACCES
 * PERMISSION_DENIED, -ETIMEDOUT DEADLINE_EXCEEDED, -ENOMEM/-E2BIG
 * RESOURCE_EXHAUSTED, -ECANCELED CANCELLED; anything else INTERNAL. */
GrpcCode grpc_code_from_errno(int r);
const char *grpc_code_to_string(GrpcCode code);

/* ---- framing (also what tests and the fuzz target use) ---- */

#define TTRPC_HEADER_SIZE 10U
#define TTRPC_MESSAGE_MAX (4U << 20)

enum {
        TTRPC_TYPE_REQUEST = 1,
        TTRPC_TYPE_RESPONSE = 2,
        TTRPC_TYPE_DATA = 3,
};

typedef struct TtrpcHeader {
        uint32_t length;        /* of the payload, header not counted */
        uint32_t stream_id;
        uint8_t type;
        uint8_t flags;
} TtrpcHeader;

void ttrpc_header_encode(const TtrpcHeader *h, uint8_t buf[static TTRPC_HEADER_SIZE]);
void ttrpc_header_decode(const uint8_t buf[static TTRPC_HEADER_SIZE], TtrpcHeader *ret);

/* A whole frame: header + payload, in one buffer of 10 + payload size bytes
 * (*ret_size). For a client (tests): a request frame calling service/method
 * with msg (NULL: an empty message) as payload. */
int ttrpc_frame_request(uint32_t stream_id, const char *service, const char *method,
                        const ProtobufCMessage *msg, uint8_t **ret, size_t *ret_size);
/* The server's answers: a response frame with msg (NULL: empty), or with a
 * status of code (!= GRPC_OK) and message. */
int ttrpc_frame_response(uint32_t stream_id, const ProtobufCMessage *msg, uint8_t **ret, size_t *ret_size);
int ttrpc_frame_status(uint32_t stream_id, GrpcCode code, const char *message, uint8_t **ret, size_t *ret_size);

/* ---- the server ---- */

typedef struct TtrpcServer TtrpcServer;
typedef struct TtrpcCall TtrpcCall;     /* one request in flight */

/* A method's handler. It decodes payload itself (protobuf-c's unpack; the
 * bytes are only valid during the call) and answers now or later with
 * exactly one of ttrpc_call_reply() / ttrpc_call_fail*(), which free the
 * call. Returning < 0 without having answered: the server answers for it,
 * with grpc_code_from_errno() of the error and its strerror text.
 * Returning >= 0 without answering: the handler keeps the call and must
 * answer it later. A handler must not free the server. */
typedef int (*TtrpcHandler)(TtrpcCall *c, const uint8_t *payload, size_t size, void *userdata);

/* Serves on listen_fd (a listening SOCK_STREAM unix socket, made
 * non-blocking here; it stays the caller's, closed by the caller after
 * ttrpc_server_free()), or on no listener with listen_fd < 0 (connections
 * are then added with ttrpc_server_add_connection()). */
int ttrpc_server_new(sd_event *e, int listen_fd, TtrpcServer **ret, Error **err);
/* Closes every connection; calls still in flight stay valid for their
 * handlers to answer (the answer is dropped). NULL is fine. */
TtrpcServer *ttrpc_server_free(TtrpcServer *s);
static inline void ttrpc_server_freep(TtrpcServer **s) { ttrpc_server_free(*s); }
#define _cleanup_ttrpc_server_ _cleanup_(ttrpc_server_freep)

/* service "containerd.task.v2.Task", method "Create". The strings are
 * copied. -EEXIST for a pair already added. */
int ttrpc_server_add_method(TtrpcServer *s, const char *service, const char *method,
                            TtrpcHandler h, void *userdata);
/* Serves a connected socket (takes fd, also on failure): what accepting a
 * connection does; tests hand one end of a socketpair. */
int ttrpc_server_add_connection(TtrpcServer *s, int fd);
unsigned ttrpc_server_connections(const TtrpcServer *s);
/* Called (if set) after a connection went away, with the number left:
 * containerd closing its last connection is a reason for a shim whose
 * tasks are all gone to exit. It runs from an event source of the server:
 * it must not free the server (sd_event_exit() and free it after the loop). */
void ttrpc_server_set_disconnect_callback(TtrpcServer *s, void (*cb)(TtrpcServer *s, unsigned left, void *userdata),
                                          void *userdata);

/* Answers c with msg (NULL: an empty message, what google.protobuf.Empty
 * encodes to) and frees c. 0 also when the connection went away meanwhile
 * (the answer is dropped); < 0 only when msg could not be encoded or is
 * over 4 MiB (then RESOURCE_EXHAUSTED is answered instead). */
int ttrpc_call_reply(TtrpcCall *c, const ProtobufCMessage *msg);
/* Answers c with a failure status (code != GRPC_OK) and a message, and
 * frees c. Returns 0 (or < 0 on ENOMEM, c freed all the same). */
int ttrpc_call_fail(TtrpcCall *c, GrpcCode code, const char *fmt, ...) _printf_(3, 4);
int ttrpc_call_failv(TtrpcCall *c, GrpcCode code, const char *fmt, va_list ap) _printf_(3, 0);
/* As ttrpc_call_fail() for a libsdpod error: code from r
 * (grpc_code_from_errno), message err's (or strerror(-r) without one). */
int ttrpc_call_fail_error(TtrpcCall *c, int r, const Error *err);

/* What the call asked for, valid until it is answered. */
const char *ttrpc_call_service(const TtrpcCall *c);
const char *ttrpc_call_method(const TtrpcCall *c);
/* A metadata value the client sent with the request (first of that key),
 * or NULL. */
const char *ttrpc_call_metadata(const TtrpcCall *c, const char *key);
/* Whether the call's connection is still there (an answer would arrive). */
bool ttrpc_call_connected(const TtrpcCall *c);
