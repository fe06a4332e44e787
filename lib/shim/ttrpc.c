/* SPDX-License-Identifier: Apache-2.0 */

#include <assert.h>
#include <fcntl.h>
#include <stdarg.h>
#include <sys/socket.h>

#include "shim/ttrpc.h"
#include "ttrpc.pb-c.h"

/* Bounds on what one peer can make the server hold. containerd opens one
 * connection per task it tracks and has a handful of calls in flight on
 * each (a Wait per process, a State or Kill meanwhile). */
#define TTRPC_CONNECTIONS_MAX 128U
#define TTRPC_CALLS_MAX 256U
/* Answers queued for a peer that does not read them: past this the
 * connection is closed rather than the shim's memory filled. */
#define TTRPC_OUTPUT_MAX (32U << 20)
/* Reads are done in chunks of this size (a frame of containerd's is
 * usually well below it, so one read takes several) ... */
#define TTRPC_READ_CHUNK (64U << 10)
/* ... and at most this many per wake-up, so that one busy connection
 * cannot starve the others or the rest of the loop. */
#define TTRPC_READS_PER_WAKEUP 16
/* How long accepting rests when the process is out of fds or memory. */
#define TTRPC_ACCEPT_PAUSE_USEC (100U * 1000U)
#define IN_SET_ERRNO_RESOURCES(e) ((e) == EMFILE || (e) == ENFILE || (e) == ENOBUFS || (e) == ENOMEM)
/* A failure message is cut here: it ends up in containerd's log and the
 * CRI's answer. */
#define TTRPC_STATUS_MESSAGE_MAX 4096U

typedef struct TtrpcMethod {
        struct TtrpcMethod *next;
        char *service, *method;
        TtrpcHandler handler;
        void *userdata;
} TtrpcMethod;

typedef struct TtrpcConn TtrpcConn;

struct TtrpcCall {
        TtrpcConn *conn;                /* NULL once its connection went away */
        TtrpcCall *prev, *next;         /* in conn->calls */
        uint32_t stream_id;
        bool in_dispatch;               /* its handler is running: freed after it returns */
        bool answered;
        char *service, *method;
        char **metadata;                /* key, value, key, value, ..., NULL */
};

struct TtrpcConn {
        TtrpcServer *server;
        TtrpcConn *prev, *next;
        int fd;
        sd_event_source *io;
        uint8_t *in;
        size_t in_len, in_alloc;
        uint8_t *out;
        size_t out_len, out_off, out_alloc;
        TtrpcCall *calls;
        unsigned n_calls;
        bool read_eof;                  /* the peer shut down its writing side */
        bool dead;                      /* to be freed by the server's reaper */
};

struct TtrpcServer {
        sd_event *event;
        int listen_fd;
        sd_event_source *listen_io;
        sd_event_source *accept_pause;  /* while out of fds: accepting resumes when it fires; made
                                         * up front, as its timerfd could not be made then */
        sd_event_source *reaper;        /* frees dead connections, outside any callback of theirs */
        TtrpcMethod *methods;
        TtrpcConn *conns;
        unsigned n_conns;
        void (*disconnect_cb)(TtrpcServer *s, unsigned left, void *userdata);
        void *disconnect_userdata;
};

GrpcCode grpc_code_from_errno(int r) {
        switch (r < 0 ? -r : r) {
        case ENOENT: return GRPC_NOT_FOUND;
        case EEXIST: return GRPC_ALREADY_EXISTS;
        case EINVAL: return GRPC_INVALID_ARGUMENT;
        case EOPNOTSUPP: case ENOSYS: return GRPC_UNIMPLEMENTED;
        case EBUSY: case ESRCH: return GRPC_FAILED_PRECONDITION;
        case EPERM: case EACCES: return GRPC_PERMISSION_DENIED;
        case ETIMEDOUT: return GRPC_DEADLINE_EXCEEDED;
        case ENOMEM: case E2BIG: return GRPC_RESOURCE_EXHAUSTED;
        case ECANCELED: return GRPC_CANCELLED;
        default: return GRPC_INTERNAL;
        }
}

const char *grpc_code_to_string(GrpcCode code) {
        static const char *const names[] = {
                [GRPC_OK] = "OK",
                [GRPC_CANCELLED] = "CANCELLED",
                [GRPC_UNKNOWN] = "UNKNOWN",
                [GRPC_INVALID_ARGUMENT] = "INVALID_ARGUMENT",
                [GRPC_DEADLINE_EXCEEDED] = "DEADLINE_EXCEEDED",
                [GRPC_NOT_FOUND] = "NOT_FOUND",
                [GRPC_ALREADY_EXISTS] = "ALREADY_EXISTS",
                [GRPC_PERMISSION_DENIED] = "PERMISSION_DENIED",
                [GRPC_RESOURCE_EXHAUSTED] = "RESOURCE_EXHAUSTED",
                [GRPC_FAILED_PRECONDITION] = "FAILED_PRECONDITION",
                [GRPC_ABORTED] = "ABORTED",
                [GRPC_OUT_OF_RANGE] = "OUT_OF_RANGE",
                [GRPC_UNIMPLEMENTED] = "UNIMPLEMENTED",
                [GRPC_INTERNAL] = "INTERNAL",
                [GRPC_UNAVAILABLE] = "UNAVAILABLE",
                [GRPC_DATA_LOSS] = "DATA_LOSS",
                [GRPC_UNAUTHENTICATED] = "UNAUTHENTICATED",
        };
        if ((unsigned) code >= ELEMENTSOF(names))
                return "?";
        return names[code];
}

/* ---- framing ---- */

static void put_be32(uint8_t *p, uint32_t v) {
        p[0] = (uint8_t) (v >> 24);
        p[1] = (uint8_t) (v >> 16);
        p[2] = (uint8_t) (v >> 8);
        p[3] = (uint8_t) v;
}

static uint32_t get_be32(const uint8_t *p) {
        return (uint32_t) p[0] << 24 | (uint32_t) p[1] << 16 | (uint32_t) p[2] << 8 | p[3];
}

void ttrpc_header_encode(const TtrpcHeader *h, uint8_t buf[static TTRPC_HEADER_SIZE]) {
        put_be32(buf, h->length);
        put_be32(buf + 4, h->stream_id);
        buf[8] = h->type;
        buf[9] = h->flags;
}

void ttrpc_header_decode(const uint8_t buf[static TTRPC_HEADER_SIZE], TtrpcHeader *ret) {
        ret->length = get_be32(buf);
        ret->stream_id = get_be32(buf + 4);
        ret->type = buf[8];
        ret->flags = buf[9];
}

/* A frame of type around envelope, packed into one new buffer. */
static int frame_pack(uint32_t stream_id, uint8_t type, const ProtobufCMessage *envelope,
                      uint8_t **ret, size_t *ret_size) {
        size_t n = protobuf_c_message_get_packed_size(envelope);
        if (n > TTRPC_MESSAGE_MAX)
                return -E2BIG;
        uint8_t *buf = malloc(TTRPC_HEADER_SIZE + n);
        if (!buf)
                return -ENOMEM;
        ttrpc_header_encode(&(TtrpcHeader) { .length = (uint32_t) n, .stream_id = stream_id, .type = type }, buf);
        if (protobuf_c_message_pack(envelope, buf + TTRPC_HEADER_SIZE) != n) {
                free(buf);
                return -EIO;
        }
        *ret = buf;
        *ret_size = TTRPC_HEADER_SIZE + n;
        return 0;
}

/* msg's encoding in a new buffer (NULL msg: empty). Over the frame limit
 * it could never be sent: -E2BIG. */
static int message_pack(const ProtobufCMessage *msg, uint8_t **ret, size_t *ret_size) {
        size_t n = msg ? protobuf_c_message_get_packed_size(msg) : 0;
        if (n > TTRPC_MESSAGE_MAX)
                return -E2BIG;
        uint8_t *buf = malloc(n > 0 ? n : 1);
        if (!buf)
                return -ENOMEM;
        if (n > 0 && protobuf_c_message_pack(msg, buf) != n) {
                free(buf);
                return -EIO;
        }
        *ret = buf;
        *ret_size = n;
        return 0;
}

int ttrpc_frame_request(uint32_t stream_id, const char *service, const char *method,
                        const ProtobufCMessage *msg, uint8_t **ret, size_t *ret_size) {
        _cleanup_free_ uint8_t *payload = NULL;
        size_t payload_size;
        int r = message_pack(msg, &payload, &payload_size);
        if (r < 0)
                return r;
        Ttrpc__Request req = TTRPC__REQUEST__INIT;
        req.service = (char *) service;
        req.method = (char *) method;
        req.payload.data = payload;
        req.payload.len = payload_size;
        return frame_pack(stream_id, TTRPC_TYPE_REQUEST, &req.base, ret, ret_size);
}

int ttrpc_frame_response(uint32_t stream_id, const ProtobufCMessage *msg, uint8_t **ret, size_t *ret_size) {
        _cleanup_free_ uint8_t *payload = NULL;
        size_t payload_size;
        int r = message_pack(msg, &payload, &payload_size);
        if (r < 0)
                return r;
        Ttrpc__Response resp = TTRPC__RESPONSE__INIT;
        resp.payload.data = payload;
        resp.payload.len = payload_size;
        return frame_pack(stream_id, TTRPC_TYPE_RESPONSE, &resp.base, ret, ret_size);
}

int ttrpc_frame_status(uint32_t stream_id, GrpcCode code, const char *message, uint8_t **ret, size_t *ret_size) {
        Google__Rpc__Status status = GOOGLE__RPC__STATUS__INIT;
        status.code = code;
        status.message = (char *) (message ?: "");
        Ttrpc__Response resp = TTRPC__RESPONSE__INIT;
        resp.status = &status;
        return frame_pack(stream_id, TTRPC_TYPE_RESPONSE, &resp.base, ret, ret_size);
}

/* ---- connections ---- */

static void conn_fail(TtrpcConn *c);

static void server_schedule_reaper(TtrpcServer *s) {
        if (s->reaper)
                (void) sd_event_source_set_enabled(s->reaper, SD_EVENT_ONESHOT);
}

/* The events the connection waits for now: input until the peer's EOF,
 * output while answers wait to be written. */
static void conn_update_events(TtrpcConn *c) {
        uint32_t events = 0;
        if (!c->read_eof)
                events |= EPOLLIN;
        if (c->out_len > c->out_off)
                events |= EPOLLOUT;
        (void) sd_event_source_set_io_events(c->io, events);
}

/* A peer that has stopped sending and has every answer is done. */
static void conn_maybe_finish(TtrpcConn *c) {
        if (c->read_eof && c->n_calls == 0 && c->out_len == c->out_off)
                conn_fail(c);
}

static int conn_flush(TtrpcConn *c) {
        while (c->out_off < c->out_len) {
                ssize_t n = send(c->fd, c->out + c->out_off, c->out_len - c->out_off, MSG_NOSIGNAL | MSG_DONTWAIT);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        if (errno == EAGAIN)
                                break;
                        conn_fail(c);
                        return -errno;
                }
                c->out_off += (size_t) n;
        }
        if (c->out_off == c->out_len) {
                c->out_off = c->out_len = 0;
                /* A burst of answers (a Pids of many processes) need not
                 * keep its buffer for the connection's life. */
                if (c->out_alloc > TTRPC_READ_CHUNK) {
                        free(c->out);
                        c->out = NULL;
                        c->out_alloc = 0;
                }
        }
        conn_update_events(c);
        conn_maybe_finish(c);
        return 0;
}

/* Appends a frame to the connection's output and writes what the socket
 * takes now. */
static int conn_send(TtrpcConn *c, const uint8_t *frame, size_t size) {
        if (c->dead)
                return 0;
        if (c->out_len - c->out_off + size > TTRPC_OUTPUT_MAX) {
                conn_fail(c);
                return -ENOBUFS;
        }
        if (c->out_off > 0 && c->out_off == c->out_len)
                c->out_off = c->out_len = 0;
        if (c->out_len + size > c->out_alloc) {
                if (c->out_off > 0) {
                        memmove(c->out, c->out + c->out_off, c->out_len - c->out_off);
                        c->out_len -= c->out_off;
                        c->out_off = 0;
                }
                if (c->out_len + size > c->out_alloc) {
                        size_t want = c->out_len + size;
                        if (want < 2 * c->out_alloc)
                                want = 2 * c->out_alloc;
                        uint8_t *p = realloc(c->out, want);
                        if (!p) {
                                conn_fail(c);
                                return -ENOMEM;
                        }
                        c->out = p;
                        c->out_alloc = want;
                }
        }
        memcpy(c->out + c->out_len, frame, size);
        c->out_len += size;
        return conn_flush(c);
}

static void call_unlink(TtrpcCall *call) {
        TtrpcConn *c = call->conn;
        if (!c)
                return;
        if (call->prev)
                call->prev->next = call->next;
        else
                c->calls = call->next;
        if (call->next)
                call->next->prev = call->prev;
        call->prev = call->next = NULL;
        call->conn = NULL;
        c->n_calls--;
}

static void call_free(TtrpcCall *call) {
        if (!call)
                return;
        TtrpcConn *c = call->conn;
        call_unlink(call);
        free(call->service);
        free(call->method);
        if (call->metadata)
                for (char **m = call->metadata; *m; m++)
                        free(*m);
        free(call->metadata);
        free(call);
        if (c && !c->dead)
                conn_maybe_finish(c);
}

static void conn_free(TtrpcConn *c) {
        if (!c)
                return;
        TtrpcServer *s = c->server;
        /* Calls in flight outlive their connection: their handlers still
         * hold them and answer into nothing. */
        while (c->calls)
                call_unlink(c->calls);
        sd_event_source_disable_unref(c->io);
        if (c->fd >= 0)
                close(c->fd);
        free(c->in);
        free(c->out);
        if (c->prev)
                c->prev->next = c->next;
        else
                s->conns = c->next;
        if (c->next)
                c->next->prev = c->prev;
        s->n_conns--;
        free(c);
}

/* Ends a connection: it stops reading and writing at once, and is freed by
 * the reaper, so that whoever is in the middle of using it (a read loop, a
 * handler answering) never sees it vanish. */
static void conn_fail(TtrpcConn *c) {
        if (c->dead)
                return;
        c->dead = true;
        (void) sd_event_source_set_enabled(c->io, SD_EVENT_OFF);
        server_schedule_reaper(c->server);
}

static int server_reap(sd_event_source *source, void *userdata) {
        TtrpcServer *s = userdata;
        unsigned freed = 0;
        for (TtrpcConn *c = s->conns, *next; c; c = next) {
                next = c->next;
                if (c->dead) {
                        conn_free(c);
                        freed++;
                }
        }
        if (freed > 0 && s->disconnect_cb)
                s->disconnect_cb(s, s->n_conns, s->disconnect_userdata);
        return 0;
}

static void conn_send_status(TtrpcConn *c, uint32_t stream_id, GrpcCode code, const char *message) {
        _cleanup_free_ uint8_t *frame = NULL;
        size_t size;
        if (ttrpc_frame_status(stream_id, code, message, &frame, &size) < 0) {
                /* Cannot even say why: the client would wait for ever. */
                conn_fail(c);
                return;
        }
        (void) conn_send(c, frame, size);
}

static TtrpcMethod *server_find_method(TtrpcServer *s, const char *service, const char *method, bool *ret_service_known) {
        bool service_known = false;
        for (TtrpcMethod *m = s->methods; m; m = m->next) {
                if (!streq(m->service, service))
                        continue;
                service_known = true;
                if (streq(m->method, method))
                        return m;
        }
        *ret_service_known = service_known;
        return NULL;
}

static int call_copy_metadata(TtrpcCall *call, const Ttrpc__Request *req) {
        call->metadata = calloc(2 * req->n_metadata + 1, sizeof(char *));
        if (!call->metadata)
                return -ENOMEM;
        size_t j = 0;
        for (size_t i = 0; i < req->n_metadata; i++) {
                const Ttrpc__KeyValue *kv = req->metadata[i];
                if (!kv)
                        continue;
                call->metadata[j] = strdup(strempty(kv->key));
                if (!call->metadata[j])
                        return -ENOMEM;
                j++;
                call->metadata[j] = strdup(strempty(kv->value));
                if (!call->metadata[j])
                        return -ENOMEM;
                j++;
        }
        return 0;
}

static void conn_handle_request(TtrpcConn *c, uint32_t stream_id, const uint8_t *payload, size_t size) {
        TtrpcServer *s = c->server;
        char q1[VALUE_QUOTED_MAX], q2[VALUE_QUOTED_MAX];

        Ttrpc__Request *req = ttrpc__request__unpack(NULL, size, payload);
        if (!req) {
                conn_send_status(c, stream_id, GRPC_INVALID_ARGUMENT, "ttrpc: the request does not decode");
                return;
        }
        const char *service = strempty(req->service), *method = strempty(req->method);

        bool service_known;
        TtrpcMethod *m = server_find_method(s, service, method, &service_known);
        if (!m) {
                _cleanup_free_ char *msg = NULL;
                if (service_known
                    ? asprintf(&msg, "ttrpc: service %s has no method %s",
                               value_quote(service, q1), value_quote(method, q2)) < 0
                    : asprintf(&msg, "ttrpc: no service %s", value_quote(service, q1)) < 0)
                        msg = NULL;
                conn_send_status(c, stream_id, GRPC_UNIMPLEMENTED, msg ?: "ttrpc: not implemented");
                goto finish;
        }
        if (c->n_calls >= TTRPC_CALLS_MAX) {
                conn_send_status(c, stream_id, GRPC_RESOURCE_EXHAUSTED, "ttrpc: too many calls in flight on this connection");
                goto finish;
        }

        TtrpcCall *call = calloc(1, sizeof(*call));
        if (!call) {
                conn_send_status(c, stream_id, GRPC_RESOURCE_EXHAUSTED, "ttrpc: out of memory");
                goto finish;
        }
        call->stream_id = stream_id;
        call->conn = c;
        call->next = c->calls;
        if (c->calls)
                c->calls->prev = call;
        c->calls = call;
        c->n_calls++;
        call->service = strdup(service);
        call->method = strdup(method);
        if (!call->service || !call->method || call_copy_metadata(call, req) < 0) {
                conn_send_status(c, stream_id, GRPC_RESOURCE_EXHAUSTED, "ttrpc: out of memory");
                call_free(call);
                goto finish;
        }

        call->in_dispatch = true;
        int r = m->handler(call, req->payload.data, req->payload.len, m->userdata);
        call->in_dispatch = false;
        if (call->answered)
                call_free(call);
        else if (r < 0)
                (void) ttrpc_call_fail_error(call, r, NULL);
        /* else: the handler keeps the call and answers later */
finish:
        ttrpc__request__free_unpacked(req, NULL);
}

/* Checks a header as soon as its 10 bytes are in, before any of its
 * payload is waited for: a length over the limit, or a stream id a client
 * may not use, ends the connection. */
static int conn_check_header(TtrpcConn *c, const TtrpcHeader *h) {
        if (h->length > TTRPC_MESSAGE_MAX)
                return -EMSGSIZE;
        if (h->type != TTRPC_TYPE_REQUEST)
                return 0;
        /* Client-initiated streams have odd ids; an id whose call is still
         * in flight would make two answers on one stream. */
        if (h->stream_id % 2 != 1)
                return -EBADMSG;
        for (TtrpcCall *call = c->calls; call; call = call->next)
                if (call->stream_id == h->stream_id)
                        return -EBADMSG;
        return 0;
}

/* Handles the complete frames at the start of the input; keeps a partial
 * one for the next read. */
static int conn_process_input(TtrpcConn *c) {
        size_t off = 0;
        int r = 0;
        while (!c->dead && c->in_len - off >= TTRPC_HEADER_SIZE) {
                TtrpcHeader h;
                ttrpc_header_decode(c->in + off, &h);
                r = conn_check_header(c, &h);
                if (r < 0)
                        break;
                if (c->in_len - off - TTRPC_HEADER_SIZE < h.length)
                        break;
                const uint8_t *payload = c->in + off + TTRPC_HEADER_SIZE;
                off += TTRPC_HEADER_SIZE + h.length;
                /* Other frame types (stream data) are for streaming calls,
                 * which the served API has none of: read, and ignored as
                 * ttrpc's own server does. */
                if (h.type == TTRPC_TYPE_REQUEST)
                        conn_handle_request(c, h.stream_id, payload, h.length);
        }
        if (off > 0) {
                memmove(c->in, c->in + off, c->in_len - off);
                c->in_len -= off;
        }
        return r;
}

/* Room for the next read: a chunk, or the rest of the frame under way if
 * it is longer (at most the frame limit). */
static int conn_reserve_input(TtrpcConn *c) {
        size_t want = c->in_len + TTRPC_READ_CHUNK;
        if (c->in_len >= TTRPC_HEADER_SIZE) {
                TtrpcHeader h;
                ttrpc_header_decode(c->in, &h);
                size_t frame = TTRPC_HEADER_SIZE + (size_t) h.length;
                if (frame > want)
                        want = frame;
        }
        if (want <= c->in_alloc)
                return 0;
        uint8_t *p = realloc(c->in, want);
        if (!p)
                return -ENOMEM;
        c->in = p;
        c->in_alloc = want;
        return 0;
}

static int conn_read(TtrpcConn *c) {
        for (int i = 0; i < TTRPC_READS_PER_WAKEUP && !c->dead && !c->read_eof; i++) {
                int r = conn_reserve_input(c);
                if (r < 0)
                        return r;
                ssize_t n = recv(c->fd, c->in + c->in_len, c->in_alloc - c->in_len, MSG_DONTWAIT);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        if (errno == EAGAIN)
                                break;
                        return -errno;
                }
                if (n == 0) {
                        /* The peer may have shut down only its sending
                         * side and still wait for answers. A frame cut
                         * short by the EOF is garbage. */
                        c->read_eof = true;
                        if (c->in_len > 0)
                                return -EBADMSG;
                        break;
                }
                c->in_len += (size_t) n;
                r = conn_process_input(c);
                if (r < 0)
                        return r;
        }
        /* After a large frame, give the memory back. */
        if (c->in_len == 0 && c->in_alloc > TTRPC_READ_CHUNK) {
                free(c->in);
                c->in = NULL;
                c->in_alloc = 0;
        }
        return 0;
}

static int conn_io(sd_event_source *source, int fd, uint32_t revents, void *userdata) {
        TtrpcConn *c = userdata;

        if (revents & (EPOLLIN | EPOLLHUP | EPOLLERR)) {
                if (conn_read(c) < 0) {
                        conn_fail(c);
                        return 0;
                }
        }
        if (c->dead)
                return 0;
        if (revents & EPOLLOUT)
                (void) conn_flush(c);
        if (c->dead)
                return 0;
        /* Both directions gone: nothing can be read or written any more. */
        if ((revents & (EPOLLHUP | EPOLLERR)) && c->read_eof) {
                conn_fail(c);
                return 0;
        }
        conn_update_events(c);
        conn_maybe_finish(c);
        return 0;
}

static bool peer_is_us(int fd) {
        struct ucred cred;
        socklen_t len = sizeof(cred);
        if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0 || len != sizeof(cred))
                return false;
        return cred.uid == geteuid();
}

int ttrpc_server_add_connection(TtrpcServer *s, int fd) {
        _cleanup_close_ int cfd = fd;
        if (s->n_conns >= TTRPC_CONNECTIONS_MAX)
                return -EMFILE;
        /* containerd runs as root and so does the shim; anyone else who
         * can reach the socket is not containerd. */
        if (!peer_is_us(cfd))
                return -EPERM;
        int flags = fcntl(cfd, F_GETFL);
        if (flags < 0 || fcntl(cfd, F_SETFL, flags | O_NONBLOCK) < 0)
                return -errno;

        TtrpcConn *c = calloc(1, sizeof(*c));
        if (!c)
                return -ENOMEM;
        c->server = s;
        c->fd = -1;
        int r = sd_event_add_io(s->event, &c->io, cfd, EPOLLIN, conn_io, c);
        if (r < 0) {
                free(c);
                return r;
        }
        c->fd = TAKE_FD(cfd);
        c->next = s->conns;
        if (s->conns)
                s->conns->prev = c;
        s->conns = c;
        s->n_conns++;
        return 0;
}

static int server_resume_accept(sd_event_source *source, uint64_t usec, void *userdata) {
        TtrpcServer *s = userdata;
        (void) sd_event_source_set_enabled(s->listen_io, SD_EVENT_ON);
        return 0;
}

static int server_accept(sd_event_source *source, int fd, uint32_t revents, void *userdata) {
        TtrpcServer *s = userdata;
        for (int i = 0; i < 16; i++) {
                int cfd = accept4(fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
                if (cfd >= 0) {
                        (void) ttrpc_server_add_connection(s, cfd);
                        continue;
                }
                /* Out of fds or memory: the pending connection stays, and
                 * the socket stays readable; without a pause the loop would
                 * spin on it. */
                uint64_t now;
                if (IN_SET_ERRNO_RESOURCES(errno) &&
                    sd_event_now(s->event, CLOCK_MONOTONIC, &now) >= 0 &&
                    sd_event_source_set_time(s->accept_pause, now + TTRPC_ACCEPT_PAUSE_USEC) >= 0 &&
                    sd_event_source_set_enabled(s->accept_pause, SD_EVENT_ONESHOT) >= 0)
                        (void) sd_event_source_set_enabled(s->listen_io, SD_EVENT_OFF);
                break;  /* EAGAIN, or a connection that died before it was taken */
        }
        return 0;
}

int ttrpc_server_new(sd_event *e, int listen_fd, TtrpcServer **ret, Error **err) {
        TtrpcServer *s = calloc(1, sizeof(*s));
        if (!s)
                return error_sys(err, -ENOMEM, "ttrpc server");
        s->event = sd_event_ref(e);
        s->listen_fd = listen_fd;
        int r = sd_event_add_defer(e, &s->reaper, server_reap, s);
        if (r < 0) {
                ttrpc_server_free(s);
                return error_sys(err, r, "ttrpc server: cannot add its reaper to the event loop");
        }
        (void) sd_event_source_set_enabled(s->reaper, SD_EVENT_OFF);
        if (listen_fd >= 0) {
                int flags = fcntl(listen_fd, F_GETFL);
                if (flags < 0 || fcntl(listen_fd, F_SETFL, flags | O_NONBLOCK) < 0) {
                        r = -errno;
                        ttrpc_server_free(s);
                        return error_sys(err, r, "ttrpc server: cannot make the listening socket non-blocking");
                }
                r = sd_event_add_io(e, &s->listen_io, listen_fd, EPOLLIN, server_accept, s);
                if (r < 0) {
                        ttrpc_server_free(s);
                        return error_sys(err, r, "ttrpc server: cannot watch the listening socket");
                }
                r = sd_event_add_time(e, &s->accept_pause, CLOCK_MONOTONIC, UINT64_MAX, 0, server_resume_accept, s);
                if (r < 0) {
                        ttrpc_server_free(s);
                        return error_sys(err, r, "ttrpc server: cannot add a timer to the event loop");
                }
                (void) sd_event_source_set_enabled(s->accept_pause, SD_EVENT_OFF);
        }
        *ret = s;
        return 0;
}

TtrpcServer *ttrpc_server_free(TtrpcServer *s) {
        if (!s)
                return NULL;
        while (s->conns)
                conn_free(s->conns);
        while (s->methods) {
                TtrpcMethod *m = s->methods;
                s->methods = m->next;
                free(m->service);
                free(m->method);
                free(m);
        }
        sd_event_source_disable_unref(s->listen_io);
        sd_event_source_disable_unref(s->accept_pause);
        sd_event_source_disable_unref(s->reaper);
        sd_event_unref(s->event);
        free(s);
        return NULL;
}

int ttrpc_server_add_method(TtrpcServer *s, const char *service, const char *method,
                            TtrpcHandler h, void *userdata) {
        bool service_known;
        if (server_find_method(s, service, method, &service_known))
                return -EEXIST;
        TtrpcMethod *m = calloc(1, sizeof(*m));
        if (!m)
                return -ENOMEM;
        m->service = strdup(service);
        m->method = strdup(method);
        if (!m->service || !m->method) {
                free(m->service);
                free(m->method);
                free(m);
                return -ENOMEM;
        }
        m->handler = h;
        m->userdata = userdata;
        m->next = s->methods;
        s->methods = m;
        return 0;
}

unsigned ttrpc_server_connections(const TtrpcServer *s) {
        /* Dead ones waiting for the reaper are gone already for the caller. */
        unsigned n = 0;
        for (const TtrpcConn *c = s->conns; c; c = c->next)
                if (!c->dead)
                        n++;
        return n;
}

void ttrpc_server_set_disconnect_callback(TtrpcServer *s, void (*cb)(TtrpcServer *s, unsigned left, void *userdata),
                                          void *userdata) {
        s->disconnect_cb = cb;
        s->disconnect_userdata = userdata;
}

/* ---- answering ---- */

/* Sends frame (may be NULL: nothing to send) as c's answer and frees c,
 * or, while its handler runs, leaves the freeing to the dispatch. */
static void call_answer(TtrpcCall *c, const uint8_t *frame, size_t size) {
        assert(!c->answered);
        c->answered = true;
        if (frame && c->conn)
                (void) conn_send(c->conn, frame, size);
        if (!c->in_dispatch)
                call_free(c);
}

int ttrpc_call_reply(TtrpcCall *c, const ProtobufCMessage *msg) {
        _cleanup_free_ uint8_t *frame = NULL;
        size_t size;
        int r = ttrpc_frame_response(c->stream_id, msg, &frame, &size);
        if (r < 0) {
                (void) ttrpc_call_fail(c, GRPC_RESOURCE_EXHAUSTED, "ttrpc: the answer cannot be encoded: %s", strerror(-r));
                return r;
        }
        call_answer(c, frame, size);
        return 0;
}

int ttrpc_call_failv(TtrpcCall *c, GrpcCode code, const char *fmt, va_list ap) {
        _cleanup_free_ char *msg = NULL;
        int r = 0;
        if (vasprintf(&msg, fmt, ap) < 0) {
                msg = NULL;
                r = -ENOMEM;
        } else if (strlen(msg) > TTRPC_STATUS_MESSAGE_MAX)
                msg[TTRPC_STATUS_MESSAGE_MAX] = '\0';
        if (code == GRPC_OK)
                code = GRPC_UNKNOWN;    /* a failure that says success would be taken for one */

        _cleanup_free_ uint8_t *frame = NULL;
        size_t size;
        int k = ttrpc_frame_status(c->stream_id, code, msg ?: grpc_code_to_string(code), &frame, &size);
        if (k < 0) {
                r = k;
                frame = NULL;
                if (c->conn)
                        conn_fail(c->conn);
        }
        call_answer(c, frame, size);
        return r;
}

int ttrpc_call_fail(TtrpcCall *c, GrpcCode code, const char *fmt, ...) {
        va_list ap;
        va_start(ap, fmt);
        int r = ttrpc_call_failv(c, code, fmt, ap);
        va_end(ap);
        return r;
}

int ttrpc_call_fail_error(TtrpcCall *c, int r, const Error *err) {
        if (r >= 0)
                r = -EIO;
        if (err && err->msg)
                return ttrpc_call_fail(c, grpc_code_from_errno(err->code < 0 ? err->code : r), "%s", err->msg);
        return ttrpc_call_fail(c, grpc_code_from_errno(r), "%s", strerror(-r));
}

const char *ttrpc_call_service(const TtrpcCall *c) {
        return c->service;
}

const char *ttrpc_call_method(const TtrpcCall *c) {
        return c->method;
}

const char *ttrpc_call_metadata(const TtrpcCall *c, const char *key) {
        if (!c->metadata)
                return NULL;
        for (char **m = c->metadata; m[0] && m[1]; m += 2)
                if (streq(m[0], key))
                        return m[1];
        return NULL;
}

bool ttrpc_call_connected(const TtrpcCall *c) {
        return c->conn && !c->conn->dead;
}
