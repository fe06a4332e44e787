/* SPDX-License-Identifier: Apache-2.0 */

#include <assert.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/mman.h>
#include <sys/pidfd.h>
#include <sys/wait.h>
#include <time.h>

#include "shim/shim-events.h"
#include "google-protobuf.pb-c.h"

/* A publish process is tried this many times in all ... */
#define PUBLISH_ATTEMPTS 3
/* ... with this much more delay before each new try (containerd may be
 * restarting) ... */
#define PUBLISH_RETRY_STEP_USEC (200U * 1000U)
/* ... and killed after this long (containerd's publish itself gives up
 * dialing after a minute; a stuck one must not hold back every later
 * event). */
#define PUBLISH_TIMEOUT_USEC (20U * 1000U * 1000U)
/* Events waiting: containerd gone for good must not make the shim's
 * memory grow for ever. */
#define PUBLISH_QUEUE_MAX 4096U

typedef struct PublishEvent {
        struct PublishEvent *next;
        char *topic;
        uint8_t *data;
        size_t size;
        unsigned attempts;
        bool pause;                     /* failed: wait a little before the next try */
} PublishEvent;

struct ShimPublishQueue {
        sd_event *event;
        char *binary, *address, *namespace;
        PublishEvent *head, *tail;
        unsigned n;
        pid_t pid;                      /* the publish process running, or 0 */
        int pidfd;
        sd_event_source *child_io;      /* its pidfd */
        sd_event_source *timer;         /* its time limit, or the delay before a retry */
};

int shim_event_encode_any(const char *type_url, const ProtobufCMessage *event, uint8_t **ret, size_t *ret_size) {
        size_t n = protobuf_c_message_get_packed_size(event);
        _cleanup_free_ uint8_t *value = malloc(n > 0 ? n : 1);
        if (!value)
                return -ENOMEM;
        if (n > 0 && protobuf_c_message_pack(event, value) != n)
                return -EIO;
        Google__Protobuf__Any any = GOOGLE__PROTOBUF__ANY__INIT;
        any.type_url = (char *) type_url;
        any.value.data = value;
        any.value.len = n;
        size_t m = protobuf_c_message_get_packed_size(&any.base);
        uint8_t *buf = malloc(m > 0 ? m : 1);
        if (!buf)
                return -ENOMEM;
        if (protobuf_c_message_pack(&any.base, buf) != m) {
                free(buf);
                return -EIO;
        }
        *ret = buf;
        *ret_size = m;
        return 0;
}

static void event_free(PublishEvent *ev) {
        if (!ev)
                return;
        free(ev->topic);
        free(ev->data);
        free(ev);
}

static void queue_pop(ShimPublishQueue *q) {
        PublishEvent *ev = q->head;
        if (!ev)
                return;
        q->head = ev->next;
        if (!q->head)
                q->tail = NULL;
        q->n--;
        event_free(ev);
}

/* Runs the publish binary for the event at the head, its encoding on
 * stdin. stdin is a memfd rather than a pipe: the whole event is written
 * before the process starts, and never blocks whatever its size. */
static int queue_spawn(ShimPublishQueue *q) {
        PublishEvent *ev = q->head;
        assert(ev && q->pid == 0);

        _cleanup_close_ int memfd = memfd_create("sdpod-shim-event", MFD_CLOEXEC);
        if (memfd < 0)
                return -errno;
        for (size_t off = 0; off < ev->size; ) {
                ssize_t n = write(memfd, ev->data + off, ev->size - off);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                off += (size_t) n;
        }
        if (lseek(memfd, 0, SEEK_SET) < 0)
                return -errno;

        posix_spawn_file_actions_t fa;
        posix_spawnattr_t attr;
        int r = posix_spawn_file_actions_init(&fa);
        if (r != 0)
                return -r;
        r = posix_spawnattr_init(&attr);
        if (r != 0) {
                posix_spawn_file_actions_destroy(&fa);
                return -r;
        }
        /* The shim may block signals for its own loop (SIGCHLD for
         * sd-event): containerd's publish gets a clean mask and default
         * handlers. Its stdout is of no use; stderr stays the shim's (its
         * log), where containerd's own complaint goes. */
        sigset_t none, all;
        sigemptyset(&none);
        sigfillset(&all);
        sigdelset(&all, SIGKILL);
        sigdelset(&all, SIGSTOP);
        r = posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
        if (r == 0)
                r = posix_spawnattr_setsigmask(&attr, &none);
        if (r == 0)
                r = posix_spawnattr_setsigdefault(&attr, &all);
        if (r == 0)
                r = posix_spawn_file_actions_adddup2(&fa, memfd, STDIN_FILENO);
        if (r == 0)
                r = posix_spawn_file_actions_addopen(&fa, STDOUT_FILENO, "/dev/null", O_WRONLY | O_CLOEXEC, 0);
        pid_t pid = 0;
        if (r == 0) {
                char *argv[] = {
                        q->binary, (char *) "--address", q->address, (char *) "publish",
                        (char *) "--topic", ev->topic, (char *) "--namespace", q->namespace, NULL,
                };
                extern char **environ;
                r = posix_spawn(&pid, q->binary, &fa, &attr, argv, environ);
        }
        posix_spawn_file_actions_destroy(&fa);
        posix_spawnattr_destroy(&attr);
        if (r != 0)
                return -r;

        /* A pidfd tells the loop of the exit without SIGCHLD, which the
         * shim's other children (execs in pods) may be handled by. */
        int pidfd = pidfd_open(pid, 0);
        if (pidfd < 0) {
                r = -errno;
                (void) kill(pid, SIGKILL);
                (void) waitpid(pid, NULL, 0);
                return r;
        }
        q->pid = pid;
        q->pidfd = pidfd;
        return 0;
}

/* The publish process has ended (status as waitpid() gives it, or -1 when
 * it could not be started): the event is done, or tried again later. */
static void queue_finished(ShimPublisher *p, int status) {
        ShimPublishQueue *q = p->queue;
        PublishEvent *ev = q->head;
        if (!ev)
                return;
        if (status >= 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0) {
                queue_pop(q);
                return;
        }
        ev->attempts++;
        if (ev->attempts < PUBLISH_ATTEMPTS) {
                ev->pause = true;
                return;
        }
        if (p->on_failure) {
                char why[64];
                if (status < 0)
                        snprintf(why, sizeof(why), "the publish binary could not be run");
                else if (WIFEXITED(status))
                        snprintf(why, sizeof(why), "publish exited with status %d", WEXITSTATUS(status));
                else
                        snprintf(why, sizeof(why), "publish was killed by signal %d", WIFSIGNALED(status) ? WTERMSIG(status) : 0);
                p->on_failure(ev->topic, why, p->userdata);
        }
        queue_pop(q);
}

static int reap(ShimPublishQueue *q) {
        int status = -1;
        while (waitpid(q->pid, &status, 0) < 0 && errno == EINTR)
                ;
        q->child_io = sd_event_source_disable_unref(q->child_io);
        q->timer = sd_event_source_disable_unref(q->timer);
        if (q->pidfd >= 0)
                close(q->pidfd);
        q->pidfd = -1;
        q->pid = 0;
        return status;
}

static void queue_kick(ShimPublisher *p);

static int on_child(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        ShimPublisher *p = userdata;
        int status = reap(p->queue);
        queue_finished(p, status);
        queue_kick(p);
        return 0;
}

static int on_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        ShimPublisher *p = userdata;
        ShimPublishQueue *q = p->queue;
        q->timer = sd_event_source_disable_unref(q->timer);
        if (q->pid > 0) {
                /* Over its time: killed, and its exit comes through the pidfd. */
                (void) kill(q->pid, SIGKILL);
                return 0;
        }
        queue_kick(p);
        return 0;
}

/* Starts the event at the head unless a publish runs or a retry waits. */
static void queue_kick(ShimPublisher *p) {
        ShimPublishQueue *q = p->queue;
        while (q->head && q->pid == 0 && !q->timer) {
                if (q->head->pause) {
                        q->head->pause = false;
                        /* A retry comes after a pause; without a timer, at once. */
                        if (sd_event_add_time_relative(q->event, &q->timer, CLOCK_MONOTONIC,
                                                       q->head->attempts * PUBLISH_RETRY_STEP_USEC, 0,
                                                       on_timer, p) >= 0)
                                return;
                }
                if (queue_spawn(q) < 0) {
                        queue_finished(p, -1);
                        continue;
                }
                if (sd_event_add_io(q->event, &q->child_io, q->pidfd, EPOLLIN, on_child, p) < 0) {
                        /* Cannot watch it: wait for it here rather than lose the order. */
                        queue_finished(p, reap(q));
                        continue;
                }
                (void) sd_event_add_time_relative(q->event, &q->timer, CLOCK_MONOTONIC,
                                                  PUBLISH_TIMEOUT_USEC, 0, on_timer, p);
                return;
        }
}

static int queue_new(ShimPublisher *p, sd_event *e) {
        ShimPublishQueue *q = calloc(1, sizeof(*q));
        if (!q)
                return -ENOMEM;
        q->pidfd = -1;
        q->binary = strdup(p->binary);
        q->address = strdup(p->address);
        q->namespace = strdup(p->namespace);
        if (!q->binary || !q->address || !q->namespace) {
                free(q->binary);
                free(q->address);
                free(q->namespace);
                free(q);
                return -ENOMEM;
        }
        q->event = sd_event_ref(e);
        p->queue = q;
        return 0;
}

int shim_publish(ShimPublisher *p, sd_event *e, const char *topic, const char *type_url,
                 const ProtobufCMessage *event, Error **err) {
        if (!p->binary || !*p->binary || !p->address || !*p->address || !p->namespace || !*p->namespace)
                return error_set(err, -EINVAL, "publishing %s: no publish binary, address or namespace", topic);
        int r;
        if (!p->queue) {
                r = queue_new(p, e);
                if (r < 0)
                        return error_sys(err, r, "publishing %s", topic);
        }
        ShimPublishQueue *q = p->queue;
        if (q->n >= PUBLISH_QUEUE_MAX)
                return error_set(err, -ENOBUFS, "publishing %s: %u events wait already", topic, q->n);

        PublishEvent *ev = calloc(1, sizeof(*ev));
        if (!ev)
                return error_sys(err, -ENOMEM, "publishing %s", topic);
        ev->topic = strdup(topic);
        r = ev->topic ? shim_event_encode_any(type_url, event, &ev->data, &ev->size) : -ENOMEM;
        if (r < 0) {
                event_free(ev);
                return error_sys(err, r, "publishing %s: cannot encode the event", topic);
        }
        if (q->tail)
                q->tail->next = ev;
        else
                q->head = ev;
        q->tail = ev;
        q->n++;
        queue_kick(p);
        return 0;
}

unsigned shim_publisher_pending(const ShimPublisher *p) {
        return p->queue ? p->queue->n : 0;
}

static uint64_t now_usec(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000000U + (uint64_t) ts.tv_nsec / 1000U;
}

/* Waits for the running publish process until deadline; kills it past
 * that. Returns its status. */
static int wait_until(ShimPublishQueue *q, uint64_t deadline) {
        for (;;) {
                uint64_t now = now_usec();
                if (now >= deadline) {
                        (void) kill(q->pid, SIGKILL);
                        break;
                }
                struct pollfd pfd = { .fd = q->pidfd, .events = POLLIN };
                uint64_t left_ms = (deadline - now + 999) / 1000;
                int n = poll(&pfd, 1, left_ms > INT32_MAX ? INT32_MAX : (int) left_ms);
                if (n > 0 || (n < 0 && errno != EINTR))
                        break;
        }
        return reap(q);
}

int shim_publisher_flush(ShimPublisher *p, uint64_t timeout_usec) {
        ShimPublishQueue *q = p->queue;
        if (!q)
                return 0;
        uint64_t deadline = now_usec() + timeout_usec;
        unsigned before = q->n;
        unsigned delivered = 0;
        q->timer = sd_event_source_disable_unref(q->timer);
        while (q->head) {
                if (q->pid == 0) {
                        if (now_usec() >= deadline)
                                break;
                        if (queue_spawn(q) < 0) {
                                queue_finished(p, -1);
                                continue;
                        }
                }
                q->child_io = sd_event_source_disable_unref(q->child_io);
                int status = wait_until(q, deadline);
                bool ok = status >= 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0;
                queue_finished(p, status);
                if (ok)
                        delivered++;
        }
        /* What is left is dropped: the caller is about to exit. */
        while (q->head)
                queue_pop(q);
        return (int) (before - delivered);
}

void shim_publisher_done(ShimPublisher *p) {
        ShimPublishQueue *q = p->queue;
        if (!q)
                return;
        if (q->pid > 0) {
                (void) kill(q->pid, SIGKILL);
                (void) reap(q);
        }
        q->child_io = sd_event_source_disable_unref(q->child_io);
        q->timer = sd_event_source_disable_unref(q->timer);
        while (q->head)
                queue_pop(q);
        sd_event_unref(q->event);
        free(q->binary);
        free(q->address);
        free(q->namespace);
        free(q);
        p->queue = NULL;
}
