/* SPDX-License-Identifier: Apache-2.0 */
/* shim-publish-check BINARY ADDRESS NAMESPACE CONTAINER_ID: publishes a
 * TaskStart and a TaskExit (exit status 7) of CONTAINER_ID through
 * shim_publish(), as the shim does, running the event loop until both
 * are delivered. Exits 0 when containerd's publish took both, 1 otherwise.
 * For test-shim-publish.sh, which watches containerd's event stream. */
#include <stdio.h>
#include <time.h>

#include "shim/shim-events.h"
#include "containerd-events.pb-c.h"
#include "google-protobuf.pb-c.h"

static unsigned failures;

static void on_failure(const char *topic, const char *why, void *userdata) {
        fprintf(stderr, "shim-publish-check: %s: %s\n", topic, why);
        failures++;
}

int main(int argc, char **argv) {
        if (argc != 5) {
                fprintf(stderr, "usage: shim-publish-check BINARY ADDRESS NAMESPACE CONTAINER_ID\n");
                return 2;
        }
        sd_event *e = NULL;
        if (sd_event_new(&e) < 0)
                return 1;
        ShimPublisher p = { .binary = argv[1], .address = argv[2], .namespace = argv[3], .on_failure = on_failure };

        Containerd__Events__TaskStart start = CONTAINERD__EVENTS__TASK_START__INIT;
        start.container_id = argv[4];
        start.pid = 42;
        Google__Protobuf__Timestamp ts = GOOGLE__PROTOBUF__TIMESTAMP__INIT;
        ts.seconds = time(NULL);
        Containerd__Events__TaskExit ex = CONTAINERD__EVENTS__TASK_EXIT__INIT;
        ex.container_id = argv[4];
        ex.id = argv[4];
        ex.pid = 42;
        ex.exit_status = 7;
        ex.exited_at = &ts;

        Error *err = NULL;
        if (shim_publish(&p, e, SHIM_TOPIC_TASK_START, "containerd.events.TaskStart", &start.base, &err) < 0 ||
            shim_publish(&p, e, SHIM_TOPIC_TASK_EXIT, "containerd.events.TaskExit", &ex.base, &err) < 0) {
                fprintf(stderr, "shim-publish-check: %s\n", err->msg);
                return 1;
        }
        for (int i = 0; i < 3000 && shim_publisher_pending(&p) > 0; i++)
                if (sd_event_run(e, 10 * 1000) < 0)
                        return 1;
        int left = shim_publisher_flush(&p, 10 * 1000 * 1000);
        shim_publisher_done(&p);
        sd_event_unref(e);
        return failures == 0 && left == 0 ? 0 : 1;
}
