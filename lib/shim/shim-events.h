/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* Publishing task events to containerd the way runtime v2 shims may: by
 * running the publish binary containerd named with -publish-binary (its
 * own executable), as
 *
 *     BINARY --address ADDRESS publish --topic TOPIC --namespace NS
 *
 * with the event, a google.protobuf.Any (type URL the message's full name,
 * e.g. "containerd.events.TaskExit"; value its encoding) encoded on stdin.
 * containerd reads stdin to its end, decodes the Any and forwards it to
 * its event service on that topic.
 *
 * Events must reach containerd in order (a TaskExit after its TaskStart):
 * the publisher keeps a queue and runs one publish process at a time; the
 * event loop is never blocked, a publish process's exit is watched through
 * a pidfd (no SIGCHLD handling needed from the caller; but the caller must
 * not reap children it does not know, waitpid(-1, ...), or a publish would
 * count as failed and be sent again). A failed publish is tried again
 * twice; after that the event is dropped and on_failure told. One publish
 * costs about 50 ms (containerd's binary starting and dialing), so a
 * burst of events reaches containerd at that pace. */

#include <stdbool.h>
#include <protobuf-c/protobuf-c.h>
#include <systemd/sd-event.h>

#include "basic/error.h"

typedef struct ShimPublishQueue ShimPublishQueue;

typedef struct ShimPublisher {
        /* The caller's; copied by the first shim_publish(). */
        const char *binary;             /* containerd's -publish-binary */
        const char *address;            /* containerd's -address (its gRPC socket) */
        const char *namespace;          /* containerd's -namespace */
        /* Optional: told when an event could not be delivered (after the
         * retries); why is a short text (the exit status). */
        void (*on_failure)(const char *topic, const char *why, void *userdata);
        void *userdata;
        /* Private: made by the first shim_publish(), freed by shim_publisher_done(). */
        ShimPublishQueue *queue;
} ShimPublisher;

/* The topics of the task events. */
#define SHIM_TOPIC_TASK_CREATE        "/tasks/create"
#define SHIM_TOPIC_TASK_START         "/tasks/start"
#define SHIM_TOPIC_TASK_EXIT          "/tasks/exit"
#define SHIM_TOPIC_TASK_DELETE        "/tasks/delete"
#define SHIM_TOPIC_TASK_EXEC_ADDED    "/tasks/exec-added"
#define SHIM_TOPIC_TASK_EXEC_STARTED  "/tasks/exec-started"
#define SHIM_TOPIC_TASK_OOM           "/tasks/oom"
#define SHIM_TOPIC_TASK_PAUSED        "/tasks/paused"
#define SHIM_TOPIC_TASK_RESUMED       "/tasks/resumed"

/* Queues event (wrapped in an Any of type_url, e.g. "containerd.events.TaskCreate")
 * for topic and starts its publishing if none is running. Returns once it
 * is queued (the event is encoded now, so it may be freed at once); < 0
 * only when it cannot be encoded or queued (or p lacks binary, address or
 * namespace: -EINVAL). e must be the same loop on every call. */
int shim_publish(ShimPublisher *p, sd_event *e, const char *topic, const char *type_url,
                 const ProtobufCMessage *event, Error **err);
/* Events queued or being published. */
unsigned shim_publisher_pending(const ShimPublisher *p);
/* Outside the event loop (the shim about to exit): publishes what is
 * still queued, synchronously, waiting at most timeout_usec in all; what
 * is left then is dropped (its process killed). Returns the number of
 * events dropped or failed. */
int shim_publisher_flush(ShimPublisher *p, uint64_t timeout_usec);
/* Frees the queue: a publish process still running is killed and reaped,
 * queued events are dropped. Call shim_publisher_flush() first to deliver
 * them. */
void shim_publisher_done(ShimPublisher *p);

/* The encoding shim_publish() writes to the publish binary's stdin, for
 * tests: an Any of type_url wrapping event. */
int shim_event_encode_any(const char *type_url, const ProtobufCMessage *event, uint8_t **ret, size_t *ret_size);
