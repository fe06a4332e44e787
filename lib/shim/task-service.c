/* SPDX-License-Identifier: Apache-2.0 */
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>

#include "config.h"

#include "basic/fs.h"
#include "basic/json-util.h"
#include "basic/macro.h"
#include "basic/strv.h"
#include "basic/time-util.h"
#include "basic/warn.h"
#include "containerd-events.pb-c.h"
#include "cgroups-metrics.pb-c.h"
#include "containerd-shim.pb-c.h"
#include "image/image-store.h"
#include "pod/pod.h"
#include "shim/oci-spec-map.h"
#include "shim/oci-spec.h"
#include "shim/shim-resources.h"
#include "shim/shim-task.h"
#include "shim/shim-tty.h"
#include "shim/task-service.h"

#define TASK_SERVICE "containerd.task.v2.Task"
/* Pids answers at most this many. */
#define SHIM_PIDS_MAX 4096

typedef enum ProcStatus {
        PROC_CREATED = CONTAINERD__V1__TYPES__STATUS__CREATED,
        PROC_RUNNING = CONTAINERD__V1__TYPES__STATUS__RUNNING,
        PROC_STOPPED = CONTAINERD__V1__TYPES__STATUS__STOPPED,
} ProcStatus;

typedef struct Task Task;

/* A task's own process (exec_id NULL) or one it exec'd. */
typedef struct Proc {
        Task *task;
        char *exec_id;
        pid_t pid;
        ProcStatus status;
        int exit_status;
        uint64_t exited_usec;
        char *stdio[3];
        bool terminal;
        /* With a terminal: the master of its window-size carrier
         * (shim-tty.h), from Exec until the end, and the command's TERM. */
        int tty_master;
        char *term;
        char **argv;                    /* an exec's command */
        char instance[32];              /* an exec's unit in the pod (shim_exec_kill) */
        /* Our own hold on stdin's FIFO (O_RDWR), from Create or Exec until
         * CloseIO or the end: the app (or the exec) opens the FIFO to read
         * it, which blocks until the FIFO has a writer, and containerd's
         * client opens its writing end only when it has input to give.
         * Closing ours passes the client's EOF on. */
        int stdin_hold;
        bool starting;                  /* its start runs in a child of ours (background_run) */
        bool stdin_close_pending;       /* CloseIO came before it started: the hold goes then */
        sd_event_source *child;         /* an exec's process, while it runs */
        TtrpcCall **waiters;
        size_t n_waiters;
} Proc;

typedef enum TaskKind {
        TASK_SANDBOX,   /* the pod itself */
        TASK_CONTAINER, /* an app of a sandbox's pod */
        TASK_PLAIN,     /* a pod of its own, and its one app */
} TaskKind;

struct Task {
        TaskService *service;
        char *id, *bundle;
        TaskKind kind;
        ShimTarget target;              /* the pod, and the app for CONTAINER and PLAIN */
        bool rootfs_mounted;
        /* Its process's identity and working directory: an exec gets the
         * app's, and one that asks for others is refused. */
        uint32_t uid, gid;
        char *cwd;
        Proc init;
        Proc **execs;
        size_t n_execs;
        pid_t stopper;                  /* a child stopping the pod (Kill of a sandbox) */
        bool paused;                    /* its app's cgroup frozen (Pause; shim-resources.h) */
        sd_event_source *stopper_source;
};

struct TaskService {
        sd_event *event;
        TtrpcServer *server;
        PodStore *pods;
        /* The image store is opened for each pod or app made, not kept:
         * the shim lives as long as its pod, and a store held shared that
         * long would keep `sdpod image gc` waiting. */
        const char *data_dir;
        bool data_dir_is_default;
        ShimPublisher publisher;
        Task **tasks;
        size_t n_tasks;
        sd_event_source *poll;
        struct Background *background;  /* work running in children of ours */
        bool shutdown;
};

/* --- errors ------------------------------------------------------------ */

static bool debug;
#define debug_log(...) do { if (debug) warn(__VA_ARGS__); } while (0)

static int fail_with(TtrpcCall *c, int r, Error *e) {
        debug_log("%s: %s", ttrpc_call_method(c), e && e->msg ? e->msg : strerror(-r));
        ttrpc_call_fail_error(c, r, e);
        error_free(e);
        return 0;
}

static int safe_close_fd(int fd) {
        if (fd >= 0)
                close(fd);
        return -1;
}

/* --- work that may wait on a pod ---------------------------------------- */

/* A request whose work talks to a pod's systemd (each call within its
 * deadline, which a stopped or hostile pod lets run out) runs in a child:
 * the event loop answers every other request meanwhile, and none waits
 * behind a stuck pod. The child says how it went by its exit status (an
 * errno, 0: done) and its error's message on a pipe; the call, if any, is
 * answered when it ends, and then done runs (if set). */
#define BACKGROUND_ARGS 6
typedef struct Background Background;
typedef int (*BackgroundWork)(TaskService *s, const char *const args[BACKGROUND_ARGS], int sig, Error **err);
/* Called before the call is answered, with the work's result (< 0 an
 * error, else what the work returned: 0, or a value such as a PID):
 * returns < 0 to answer that error, 0 to answer empty, 1 when it has
 * answered the call itself (c, which may be NULL). */
typedef int (*BackgroundDone)(TaskService *s, TtrpcCall *c, const char *const args[BACKGROUND_ARGS], int sig, int r);
struct Background {
        TaskService *service;
        TtrpcCall *call;
        int fd;                         /* the read end of the child's pipe */
        sd_event_source *child;
        char *args[BACKGROUND_ARGS];    /* what the work is about: ids and names, copied */
        int sig;
        BackgroundDone done;
        Background *next;
};

#define BACKGROUND_MESSAGE_MAX 1024

static Background *background_free(Background *b) {
        if (!b)
                return NULL;
        sd_event_source_disable_unref(b->child);
        safe_close_fd(b->fd);
        for (size_t i = 0; i < ELEMENTSOF(b->args); i++)
                free(b->args[i]);
        if (b->call)
                ttrpc_call_fail(b->call, GRPC_UNAVAILABLE, "the shim is going away");
        free(b);
        return NULL;
}

static void background_unlink(TaskService *s, Background *b) {
        for (Background **i = &s->background; *i; i = &(*i)->next)
                if (*i == b) {
                        *i = b->next;
                        break;
                }
}

static int on_background_exit(sd_event_source *es, const siginfo_t *si, void *userdata) {
        Background *b = userdata;
        TaskService *s = b->service;
        char msg[BACKGROUND_MESSAGE_MAX + 1];
        ssize_t n = read(b->fd, msg, BACKGROUND_MESSAGE_MAX);
        msg[n > 0 ? n : 0] = 0;
        int r = si->si_code == CLD_EXITED ? -si->si_status : -EINTR;
        if (r == 0 && *msg)
                r = atoi(msg);  /* on success, the pipe carries the work's value */
        if (b->done) {
                r = b->done(s, b->call, (const char *const *) b->args, b->sig, r);
                if (r == 1)
                        b->call = NULL;
        }
        if (r > 0)
                r = 0;
        if (r < 0 && !*msg)
        if (r < 0 && (!*msg || (si->si_code == CLD_EXITED && si->si_status == 0)))
                snprintf(msg, sizeof(msg), "%s", si->si_code == CLD_EXITED ? strerror(-r) : "the shim's child was killed");
        if (b->call) {
                if (r < 0) {
                        Error e = { .code = r, .msg = msg };
                        debug_log("%s: %s", ttrpc_call_method(b->call), msg);
                        ttrpc_call_fail_error(b->call, r, &e);
                } else {
                        Google__Protobuf__Empty empty = GOOGLE__PROTOBUF__EMPTY__INIT;
                        ttrpc_call_reply(b->call, &empty.base);
                }
                b->call = NULL;
        } else if (r < 0)
                warn("%s", msg);
        background_unlink(s, b);
        background_free(b);
        return 0;
}

/* Runs work(args, sig) in a child; c (if not NULL) is answered when it
 * ends (empty, or its error). */
static int background_run(TaskService *s, TtrpcCall *c, BackgroundWork work, BackgroundDone done,
                          const char *const args[BACKGROUND_ARGS], int sig, Error **err) {
        Background *b = calloc(1, sizeof(Background));
        int p[2] = { -1, -1 };
        if (!b)
                return error_sys(err, -ENOMEM, "the shim's child");
        b->service = s;
        b->fd = -1;
        b->sig = sig;
        b->done = done;
        for (size_t i = 0; i < ELEMENTSOF(b->args); i++)
                if (args[i] && !(b->args[i] = strdup(args[i]))) {
                        background_free(b);
                        return error_sys(err, -ENOMEM, "the shim's child");
                }
        if (pipe2(p, O_CLOEXEC | O_NONBLOCK) < 0) {
                background_free(b);
                return error_sys(err, -errno, "the shim's child");
        }
        pid_t pid = fork();
        if (pid < 0) {
                int r = -errno;
                close(p[0]);
                close(p[1]);
                background_free(b);
                return error_sys(err, r, "cannot fork");
        }
        if (pid == 0) {
                sigset_t none;
                sigemptyset(&none);
                sigprocmask(SIG_SETMASK, &none, NULL);
                Error *e = NULL;
                int r = work(s, args, sig, &e);
                if (r < 0) {
                        const char *m = e && e->msg ? e->msg : strerror(-r);
                        (void) !write(p[1], m, strnlen(m, BACKGROUND_MESSAGE_MAX));
                } else if (r > 0)
                        (void) !dprintf(p[1], "%d", r);
                _exit(r < 0 ? (-r > 255 ? EIO : -r) : 0);
        }
        close(p[1]);
        b->fd = p[0];
        int r = sd_event_add_child(s->event, &b->child, pid, WEXITED, on_background_exit, b);
        if (r < 0) {
                /* Not followed: it goes, and is reaped here. */
                (void) kill(pid, SIGKILL);
                (void) waitpid(pid, NULL, 0);
                background_free(b);
                return error_sys(err, r, "the shim's child");
        }
        b->call = c;
        b->next = s->background;
        s->background = b;
        return 0;
}

/* --- tasks ------------------------------------------------------------- */

static void proc_done(Proc *p) {
        p->stdin_hold = safe_close_fd(p->stdin_hold);
        p->tty_master = safe_close_fd(p->tty_master);
        free(p->term);
        free(p->exec_id);
        for (int i = 0; i < 3; i++)
                free(p->stdio[i]);
        strv_free(p->argv);
        sd_event_source_disable_unref(p->child);
        for (size_t i = 0; i < p->n_waiters; i++)
                ttrpc_call_fail(p->waiters[i], GRPC_NOT_FOUND, "the process was deleted");
        free(p->waiters);
}

static Task *task_free(Task *t) {
        if (!t)
                return NULL;
        proc_done(&t->init);
        for (size_t i = 0; i < t->n_execs; i++) {
                proc_done(t->execs[i]);
                free(t->execs[i]);
        }
        free(t->execs);
        sd_event_source_disable_unref(t->stopper_source);
        shim_target_done(&t->target);
        free(t->cwd);
        free(t->id);
        free(t->bundle);
        free(t);
        return NULL;
}

static Task *task_find(TaskService *s, const char *id) {
        for (size_t i = 0; i < s->n_tasks; i++)
                if (streq(s->tasks[i]->id, id))
                        return s->tasks[i];
        return NULL;
}

static Proc *proc_find(Task *t, const char *exec_id) {
        if (!exec_id || !*exec_id)
                return &t->init;
        for (size_t i = 0; i < t->n_execs; i++)
                if (streq(t->execs[i]->exec_id, exec_id))
                        return t->execs[i];
        return NULL;
}

/* The task and process a request names, or an answer NOT_FOUND. */
static Proc *lookup(TaskService *s, TtrpcCall *c, const char *id, const char *exec_id) {
        Task *t = task_find(s, id);
        Proc *p = t ? proc_find(t, exec_id) : NULL;
        if (!t)
                ttrpc_call_fail(c, GRPC_NOT_FOUND, "no task %s in this shim", id);
        else if (!p)
                ttrpc_call_fail(c, GRPC_NOT_FOUND, "task %s has no exec %s", id, exec_id);
        return p;
}

static void timestamp_set(Google__Protobuf__Timestamp *ts, uint64_t usec) {
        ts->seconds = (int64_t) (usec / 1000000);
        ts->nanos = (int32_t) (usec % 1000000) * 1000;
}

static const char *proc_id(const Proc *p) {
        return p->exec_id ? p->exec_id : p->task->id;
}

/* --- events ------------------------------------------------------------ */

static void publish(TaskService *s, const char *topic, const char *type_url, const ProtobufCMessage *event) {
        Error *e = NULL;
        if (!s->publisher.binary)
                return;
        if (shim_publish(&s->publisher, s->event, topic, type_url, event, &e) < 0) {
                warn("cannot publish %s: %s", topic, e ? e->msg : "out of memory");
                error_free(e);
        }
}

static void publish_exit(TaskService *s, const Proc *p) {
        Google__Protobuf__Timestamp ts = GOOGLE__PROTOBUF__TIMESTAMP__INIT;
        timestamp_set(&ts, p->exited_usec);
        Containerd__Events__TaskExit ev = CONTAINERD__EVENTS__TASK_EXIT__INIT;
        ev.container_id = p->task->id;
        ev.id = (char *) proc_id(p);
        ev.pid = (uint32_t) p->pid;
        ev.exit_status = (uint32_t) p->exit_status;
        ev.exited_at = &ts;
        publish(s, SHIM_TOPIC_TASK_EXIT, "containerd.events.TaskExit", &ev.base);
}

/* --- exits ------------------------------------------------------------- */

static int answer_wait(TtrpcCall *c, const Proc *p) {
        Google__Protobuf__Timestamp ts = GOOGLE__PROTOBUF__TIMESTAMP__INIT;
        timestamp_set(&ts, p->exited_usec);
        Containerd__Task__V2__WaitResponse w = CONTAINERD__TASK__V2__WAIT_RESPONSE__INIT;
        w.exit_status = (uint32_t) p->exit_status;
        w.exited_at = &ts;
        return ttrpc_call_reply(c, &w.base);
}

static void proc_exited(Proc *p, int status, uint64_t usec) {
        if (p->status == PROC_STOPPED)
                return;
        debug_log("%s %s exited %d, %zu waiting", p->task->id, proc_id(p), status, p->n_waiters);
        p->status = PROC_STOPPED;
        p->stdin_hold = safe_close_fd(p->stdin_hold);
        p->exit_status = status;
        p->exited_usec = usec ? usec : now_usec();
        publish_exit(p->task->service, p);
        for (size_t i = 0; i < p->n_waiters; i++)
                answer_wait(p->waiters[i], p);
        p->n_waiters = 0;
}

static bool any_running(TaskService *s) {
        for (size_t i = 0; i < s->n_tasks; i++)
                if (s->tasks[i]->init.status == PROC_RUNNING)
                        return true;
        return false;
}

/* The task's own process has ended when its app's status is recorded (an
 * app, CONTAINER and PLAIN) or its pod has exited (SANDBOX). */
static void task_poll(Task *t) {
        TaskService *s = t->service;
        ShimExit x = {};
        Error *e = NULL;
        int r = t->kind == TASK_SANDBOX ? shim_pod_exit(s->pods, t->target.uuid, &x, &e)
                                        : shim_app_exit(s->pods, t->target.uuid, t->target.app, &x, &e);
        if (r == -ENOENT) /* the pod is gone (removed behind our back): it ended */
                x = (ShimExit) { .exited = true, .status = 128 + SIGKILL };
        else if (r < 0)
                warn("task %s: %s", t->id, e ? e->msg : "cannot read its state");
        error_free(e);
        if (x.exited)
                proc_exited(&t->init, x.status, x.exited_usec);
}

static int on_poll(sd_event_source *es, uint64_t usec, void *userdata) {
        TaskService *s = userdata;
        for (size_t i = 0; i < s->n_tasks; i++)
                if (s->tasks[i]->init.status == PROC_RUNNING)
                        task_poll(s->tasks[i]);
        /* A time source is one-shot: it is armed again while a task runs. */
        if (!any_running(s))
                return 0;
        int r = sd_event_source_set_time(es, usec + SHIM_POLL_USEC);
        return r < 0 ? r : sd_event_source_set_enabled(es, SD_EVENT_ONESHOT);
}

static void poll_start(TaskService *s) {
        uint64_t now;
        sd_event_now(s->event, CLOCK_MONOTONIC, &now);
        if (!s->poll) {
                if (sd_event_add_time(s->event, &s->poll, CLOCK_MONOTONIC, now + SHIM_POLL_USEC, 1000, on_poll, s) < 0)
                        warn("cannot poll the tasks' states");
                return;
        }
        sd_event_source_set_time(s->poll, now + SHIM_POLL_USEC);
        sd_event_source_set_enabled(s->poll, SD_EVENT_ONESHOT);
}

static int exit_status_of(const siginfo_t *si) {
        return si->si_code == CLD_EXITED ? si->si_status : 128 + si->si_status;
}

static int work_exec_kill(TaskService *s, const char *const a[BACKGROUND_ARGS], int sig, Error **err) {
        return shim_exec_kill(s->pods, a[0], a[1], a[2], sig, a[3] != NULL, err);
}

static int exec_end_done(TaskService *s, TtrpcCall *c, const char *const a[BACKGROUND_ARGS], int sig, int r) {
        return r == -ESRCH ? 0 : r;     /* no unit left: nothing to end */
}

static int on_exec_exit(sd_event_source *es, const siginfo_t *si, void *userdata) {
        Proc *p = userdata;
        p->child = sd_event_source_disable_unref(p->child);
        /* The relay ends when the command's unit has ended and it has had
         * the pod's systemd let go of it. Killed, it did not: the unit
         * may run on, and would keep containerd's FIFOs open (and the
         * exec's ExecSync waiting) for as long as it likes. */
        if (si->si_code != CLD_EXITED) {
                Task *t = p->task;
                Error *e = NULL;
                const char *args[BACKGROUND_ARGS] = { t->target.uuid, t->target.app, p->instance, "end" };
                debug_log("%s %s: its relay was killed (signal %d): ending its unit", t->id, proc_id(p), si->si_status);
                if (background_run(t->service, NULL, work_exec_kill, exec_end_done, args, SIGKILL, &e) < 0)
                        warn("exec %s: %s", proc_id(p), e ? e->msg : "cannot end its unit");
                error_free(e);
        }
        proc_exited(p, exit_status_of(si), 0);
        return 0;
}

static int on_stopper_exit(sd_event_source *es, const siginfo_t *si, void *userdata) {
        Task *t = userdata;
        t->stopper_source = sd_event_source_disable_unref(t->stopper_source);
        t->stopper = 0;
        task_poll(t);
        return 0;
}

/* --- Create ------------------------------------------------------------ */

static int task_add(TaskService *s, Task *t) {
        Task **ts = reallocarray(s->tasks, s->n_tasks + 1, sizeof(Task *));
        if (!ts)
                return -ENOMEM;
        s->tasks = ts;
        s->tasks[s->n_tasks++] = t;
        return 0;
}

static void task_remove(TaskService *s, Task *t) {
        for (size_t i = 0; i < s->n_tasks; i++)
                if (s->tasks[i] == t) {
                        memmove(s->tasks + i, s->tasks + i + 1, (s->n_tasks - i - 1) * sizeof(Task *));
                        s->n_tasks--;
                        break;
                }
        task_free(t);
        if (s->shutdown && s->n_tasks == 0)
                sd_event_exit(s->event, 0);
}

/* containerd names a process's streams by path (its FIFOs), or by URI
 * ("file://PATH"; "binary://" logging drivers are not served). Empty:
 * none. */
static int stdio_path(const char *s, char **ret, Error **err) {
        *ret = NULL;
        if (!s || !*s)
                return 0;
        if (startswith(s, "file://"))
                s += strlen("file://");
        else if (strstr(s, "://"))
                return error_set(err, -EOPNOTSUPP, "stream \"%s\": only FIFOs and files are supported", s);
        if (s[0] != '/')
                return error_set(err, -EINVAL, "stream \"%s\": not an absolute path", s);
        return (*ret = strdup(s)) ? 0 : error_sys(err, -ENOMEM, "stream");
}

static int proc_set_stdio(Proc *p, const char *in, const char *out, const char *errs, Error **err) {
        int r;
        if ((r = stdio_path(in, &p->stdio[0], err)) < 0 || (r = stdio_path(out, &p->stdio[1], err)) < 0 ||
            (r = stdio_path(errs, &p->stdio[2], err)) < 0)
                return r;
        if (!p->stdio[0])
                return 0;
        int fd = open(p->stdio[0], O_RDWR | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC);
        struct stat st;
        if (fd < 0)
                return error_sys(err, -errno, "stdin %s", p->stdio[0]);
        if (fstat(fd, &st) < 0 || !S_ISFIFO(st.st_mode))
                close(fd);      /* a file: nothing to wait for */
        else
                p->stdin_hold = fd;
        return 0;
}

/* The app a container or plain task becomes. */
static int add_app(TaskService *s, Task *t, const OciSpec *spec, const char *pod_uuid, bool prefer_cri_name, Error **err) {
        char name[OCI_APP_NAME_MAX];
        oci_spec_app_name(spec, t->id, prefer_cri_name, name);
        /* The CRI reuses a container's name for its next attempt: a name
         * the pod has already goes to the id's form. */
        for (size_t i = 0; i < s->n_tasks; i++)
                if (streq(s->tasks[i]->target.uuid, pod_uuid) && s->tasks[i]->target.app &&
                    streq(s->tasks[i]->target.app, name)) {
                        oci_spec_app_name(spec, t->id, false, name);
                        break;
                }
        _cleanup_free_ char *rootfs = NULL;
        if (asprintf(&rootfs, "%s/rootfs", t->bundle) < 0)
                return error_sys(err, -ENOMEM, "task %s", t->id);
        AppArgs a;
        int r = oci_spec_app_args(spec, name, rootfs, t->init.stdio[0], t->init.stdio[1], t->init.stdio[2], &a, err);
        if (r < 0)
                return r;
        _cleanup_image_store_ ImageStore *is = NULL;
        r = image_store_open(s->data_dir, s->data_dir_is_default, STORE_SHARED, &is, err);
        if (r >= 0)
                r = shim_app_add(s->pods, is, pod_uuid, &a, err);
        app_args_done(&a);
        if (r < 0)
                return r;
        memcpy(t->target.uuid, pod_uuid, UUID_STRING_MAX);
        if (!(t->target.app = strdup(name)))
                return error_sys(err, -ENOMEM, "task %s", t->id);
        return 0;
}

static int start_pod(TaskService *s, Task *t, const OciSpec *spec, Error **err) {
        PodArgs a;
        int r = oci_spec_pod_args(spec, t->id, &a, err);
        /* The sandbox's sysctls, in its network namespace, before anything runs there. */
        if (r >= 0 && (r = oci_spec_apply_sysctls(spec, err)) < 0)
                pod_args_done(&a);
        if (r < 0)
                return r;
        _cleanup_image_store_ ImageStore *is = NULL;
        r = image_store_open(s->data_dir, s->data_dir_is_default, STORE_SHARED, &is, err);
        if (r >= 0)
                r = shim_pod_start(s->pods, is, &a, t->target.uuid, err);
        pod_args_done(&a);
        /* Those of its IPC namespace, once it runs (create_undo() removes it on failure). */
        pid_t leader = 0;
        if (r >= 0 && (r = shim_pod_leader(s->pods, t->target.uuid, &leader, err)) >= 0)
                r = oci_spec_apply_ipc_sysctls(spec, leader, err);
        return r;
}

/* Undoes what a failed Create made, so that nothing is left half made. */
static void create_undo(TaskService *s, Task *t) {
        Error *e = NULL;
        if (t->kind == TASK_CONTAINER && t->target.app)
                (void) shim_app_remove(s->pods, t->target.uuid, t->target.app, &e);
        else if (t->kind != TASK_CONTAINER && *t->target.uuid)
                (void) shim_pod_remove(s->pods, t->target.uuid, &e);
        error_free(e);
        e = NULL;
        if (t->rootfs_mounted)
                (void) shim_rootfs_unmount(t->bundle, &e);
        error_free(e);
}

static int task_create(TaskService *s, Task *t, const Containerd__Task__V2__CreateTaskRequest *req, Error **err) {
        _cleanup_close_ int bundle_fd = open(t->bundle, O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (bundle_fd < 0)
                return error_sys(err, -errno, "bundle %s", t->bundle);
        _cleanup_oci_spec_ OciSpec *spec = NULL;
        int r = oci_spec_read_at(bundle_fd, &spec, err);
        if (r < 0)
                return r;
        if (spec->have_process) {
                t->uid = spec->process.uid;
                t->gid = spec->process.gid;
                if (!(t->cwd = strdup(spec->process.cwd ? spec->process.cwd : "/")))
                        return error_sys(err, -ENOMEM, "task %s", t->id);
        }
        const char *sandbox_id = NULL;
        switch (oci_spec_task_kind(spec, &sandbox_id)) {
        case OCI_TASK_SANDBOX:
                t->kind = TASK_SANDBOX;
                break;
        case OCI_TASK_CONTAINER:
                t->kind = TASK_CONTAINER;
                break;
        default:
                t->kind = TASK_PLAIN;
        }
        Task *sandbox = NULL;
        if (t->kind == TASK_CONTAINER) {
                sandbox = task_find(s, sandbox_id);
                if (!sandbox || sandbox->kind != TASK_SANDBOX)
                        return error_set(err, -ENOENT, "container %s: no sandbox %s in this shim", t->id, sandbox_id);
                if (sandbox->init.status == PROC_STOPPED)
                        return error_set(err, -ESRCH, "container %s: sandbox %s has exited", t->id, sandbox_id);
        }
        if (t->kind != TASK_SANDBOX) {
                ShimMount *mounts = calloc(req->n_rootfs ? req->n_rootfs : 1, sizeof(ShimMount));
                if (!mounts)
                        return error_sys(err, -ENOMEM, "task %s", t->id);
                for (size_t i = 0; i < req->n_rootfs; i++)
                        mounts[i] = (ShimMount) { req->rootfs[i]->type, req->rootfs[i]->source,
                                                  req->rootfs[i]->options, req->rootfs[i]->n_options };
                r = shim_rootfs_mount(t->bundle, mounts, req->n_rootfs, err);
                free(mounts);
                if (r < 0)
                        return r;
                t->rootfs_mounted = req->n_rootfs > 0;
                _cleanup_close_ int root = openat(bundle_fd, "rootfs", O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (root < 0)
                        return error_sys(err, errno == ENOENT ? -EINVAL : -errno, "task %s: the bundle has no rootfs",
                                         t->id);
        }
        switch (t->kind) {
        case TASK_SANDBOX:
                r = start_pod(s, t, spec, err);
                break;
        case TASK_CONTAINER:
                r = add_app(s, t, spec, sandbox->target.uuid, true, err);
                break;
        case TASK_PLAIN:
                if ((r = start_pod(s, t, spec, err)) >= 0) {
                        char uuid[UUID_STRING_MAX];
                        memcpy(uuid, t->target.uuid, sizeof(uuid));
                        r = add_app(s, t, spec, uuid, false, err);
                }
                break;
        }
        if (r < 0)
                return r;
        if (t->kind == TASK_SANDBOX)
                (void) shim_pod_leader(s->pods, t->target.uuid, &t->init.pid, NULL);
        return shim_target_write(bundle_fd, &t->target, err);
}

/* A container's own process on a terminal (ctr run -t, the CRI's tty:
 * true) would be an app whose unit runs on a pty of the pod's, with a
 * relay for the app's whole life holding its master; the app's units are
 * made without one. Refused, never run without the terminal it asked for;
 * an exec can have one. */
static int task_terminal_refuse(const char *id, Error **err) {
        return error_set(err, -EOPNOTSUPP,
                         "task %s: a terminal for a container's own process (ctr run -t, the CRI's tty: true) is not "
                         "supported; an exec's is (ctr task exec -t, containerd-shim-sdpod-v1(8))", id);
}

static int on_create(TtrpcCall *c, const uint8_t *payload, size_t size, void *userdata) {
        TaskService *s = userdata;
        Containerd__Task__V2__CreateTaskRequest *req =
                containerd__task__v2__create_task_request__unpack(NULL, size, payload);
        if (!req)
                return ttrpc_call_fail(c, GRPC_INVALID_ARGUMENT, "Create: not a CreateTaskRequest");
        Error *e = NULL;
        int r = 0;
        Task *t = NULL;
        if (task_find(s, req->id)) {
                r = error_set(&e, -EEXIST, "task %s exists already", req->id);
                goto out;
        }
        if (req->terminal) {
                r = task_terminal_refuse(req->id, &e);
                goto out;
        }
        if (*req->checkpoint) {
                r = error_set(&e, -EOPNOTSUPP, "task %s: restoring a checkpoint is not supported", req->id);
                goto out;
        }
        if ((t = calloc(1, sizeof(Task))))
                t->init.stdin_hold = t->init.tty_master = -1;
        if (!t || !(t->id = strdup(req->id)) || !(t->bundle = strdup(req->bundle))) {
                r = error_sys(&e, -ENOMEM, "task %s", req->id);
                goto out;
        }
        t->service = s;
        t->init.task = t;
        t->init.status = PROC_CREATED;
        if ((r = proc_set_stdio(&t->init, req->stdin, req->stdout, req->stderr, &e)) < 0)
                goto out;
        if ((r = task_create(s, t, req, &e)) < 0) {
                create_undo(s, t);
                goto out;
        }
        if ((r = task_add(s, t)) < 0) {
                create_undo(s, t);
                r = error_sys(&e, r, "task %s", req->id);
                goto out;
        }
        Containerd__Events__TaskIO io = CONTAINERD__EVENTS__TASK_IO__INIT;
        io.stdin = req->stdin;
        io.stdout = req->stdout;
        io.stderr = req->stderr;
        Containerd__Events__TaskCreate ev = CONTAINERD__EVENTS__TASK_CREATE__INIT;
        ev.container_id = t->id;
        ev.bundle = t->bundle;
        ev.n_rootfs = req->n_rootfs;
        ev.rootfs = req->rootfs;
        ev.io = &io;
        ev.pid = (uint32_t) t->init.pid;
        publish(s, SHIM_TOPIC_TASK_CREATE, "containerd.events.TaskCreate", &ev.base);
        Containerd__Task__V2__CreateTaskResponse resp = CONTAINERD__TASK__V2__CREATE_TASK_RESPONSE__INIT;
        resp.pid = (uint32_t) t->init.pid;
        t = NULL;
        r = ttrpc_call_reply(c, &resp.base);
out:
        task_free(t);
        containerd__task__v2__create_task_request__free_unpacked(req, NULL);
        return r < 0 && e ? fail_with(c, r, e) : 0;
}

/* --- Start ------------------------------------------------------------- */

static void publish_started(TaskService *s, Proc *p) {
        if (p->exec_id) {
                Containerd__Events__TaskExecStarted ev = CONTAINERD__EVENTS__TASK_EXEC_STARTED__INIT;
                ev.container_id = p->task->id;
                ev.exec_id = p->exec_id;
                ev.pid = (uint32_t) p->pid;
                publish(s, SHIM_TOPIC_TASK_EXEC_STARTED, "containerd.events.TaskExecStarted", &ev.base);
        } else {
                Containerd__Events__TaskStart ev = CONTAINERD__EVENTS__TASK_START__INIT;
                ev.container_id = p->task->id;
                ev.pid = (uint32_t) p->pid;
                publish(s, SHIM_TOPIC_TASK_START, "containerd.events.TaskStart", &ev.base);
                poll_start(s);
        }
        debug_log("started %s %s pid %d", p->task->id, proc_id(p), (int) p->pid);
}

static int reply_started(TtrpcCall *c, const Proc *p) {
        Containerd__Task__V2__StartResponse resp = CONTAINERD__TASK__V2__START_RESPONSE__INIT;
        resp.pid = (uint32_t) p->pid;
        return ttrpc_call_reply(c, &resp.base);
}

/* Starting an app waits for a job of the pod's systemd (up to its start
 * timeout, which a hostile pod lets run out): in a child, whose value is
 * the app's main PID (0: it has exited already). */
static int work_app_start(TaskService *s, const char *const a[BACKGROUND_ARGS], int sig, Error **err) {
        pid_t pid = 0;
        int r = shim_app_start(s->pods, a[0], a[1], &pid, err);
        return r < 0 ? r : (int) pid;
}

static int app_start_done(TaskService *s, TtrpcCall *c, const char *const a[BACKGROUND_ARGS], int sig, int r) {
        Task *t = task_find(s, a[2]);
        if (!t || !streq(t->target.uuid, a[0]))
                return r < 0 ? r : -ENOENT;     /* deleted meanwhile: cannot be, Delete waits */
        Proc *p = &t->init;
        p->starting = false;
        if (r < 0)
                return r;
        p->pid = r;
        p->status = PROC_RUNNING;
        if (p->stdin_close_pending)
                p->stdin_hold = safe_close_fd(p->stdin_hold);
        publish_started(s, p);
        if (c)
                reply_started(c, p);
        return 1;
}

/* 1: the start goes on in a child, which answers c. */
static int proc_start(TaskService *s, TtrpcCall *c, Proc *p, Error **err) {
        Task *t = p->task;
        int r;
        if (p->starting)
                return error_set(err, -EBUSY, "task %s is being started", t->id);
        if (p->status != PROC_CREATED)
                return error_set(err, -EBUSY, "%s of task %s: started already", p->exec_id ? p->exec_id : "the process", t->id);
        if (p->exec_id) {
                if (t->init.status != PROC_RUNNING)
                        return error_set(err, -ESRCH, "task %s does not run", t->id);
                const char *stdio[3] = { p->stdio[0], p->stdio[1], p->stdio[2] };
                const char *app = t->kind == TASK_SANDBOX ? NULL : t->target.app;
                if (!app)
                        return error_set(err, -EOPNOTSUPP, "task %s is a pod sandbox: nothing to exec in", t->id);
                /* The carrier's slave is the relay's: ours goes once it
                 * has its copy. */
                _cleanup_close_ int size_fd = -1;
                ShimExecTty tty = { .size_fd = -1, .term = p->term };
                if (p->tty_master >= 0 && (size_fd = tty.size_fd = shim_tty_slave(p->tty_master, err)) < 0)
                        return error_prefix(err, "exec %s", p->exec_id);
                random_name(p->instance, sizeof(p->instance), "");
                if ((r = shim_exec_spawn(s->pods, t->target.uuid, app, p->argv, stdio, p->instance,
                                         p->tty_master >= 0 ? &tty : NULL, &p->pid, err)) < 0)
                        return r;
                /* The relay has our hold too until it has opened stdin. */
                if (p->stdin_close_pending)
                        p->stdin_hold = safe_close_fd(p->stdin_hold);
                if ((r = sd_event_add_child(s->event, &p->child, p->pid, WEXITED, on_exec_exit, p)) < 0)
                        return error_sys(err, r, "exec %s", p->exec_id);
        } else if (t->kind != TASK_SANDBOX) {
                const char *args[BACKGROUND_ARGS] = { t->target.uuid, t->target.app, t->id };
                if ((r = background_run(s, c, work_app_start, app_start_done, args, 0, err)) < 0)
                        return r;
                p->starting = true;
                return 1;
        }
        /* A sandbox: its pod runs since Create. */
        p->status = PROC_RUNNING;
        return 0;
}

static int on_start(TtrpcCall *c, const uint8_t *payload, size_t size, void *userdata) {
        TaskService *s = userdata;
        Containerd__Task__V2__StartRequest *req = containerd__task__v2__start_request__unpack(NULL, size, payload);
        if (!req)
                return ttrpc_call_fail(c, GRPC_INVALID_ARGUMENT, "Start: not a StartRequest");
        Error *e = NULL;
        Proc *p = lookup(s, c, req->id, req->exec_id);
        int r = p ? proc_start(s, c, p, &e) : 0;
        if (p && r == 0) {
                publish_started(s, p);
                r = reply_started(c, p);
        }
        containerd__task__v2__start_request__free_unpacked(req, NULL);
        return r < 0 ? fail_with(c, r, e) : 0;
}

/* --- State, Wait, Pids, Connect ---------------------------------------- */

static int on_state(TtrpcCall *c, const uint8_t *payload, size_t size, void *userdata) {
        TaskService *s = userdata;
        Containerd__Task__V2__StateRequest *req = containerd__task__v2__state_request__unpack(NULL, size, payload);
        if (!req)
                return ttrpc_call_fail(c, GRPC_INVALID_ARGUMENT, "State: not a StateRequest");
        Proc *p = lookup(s, c, req->id, req->exec_id);
        if (p) {
                if (p->status == PROC_RUNNING && !p->exec_id)
                        task_poll(p->task);
                Google__Protobuf__Timestamp ts = GOOGLE__PROTOBUF__TIMESTAMP__INIT;
                Containerd__Task__V2__StateResponse st = CONTAINERD__TASK__V2__STATE_RESPONSE__INIT;
                st.id = p->task->id;
                st.bundle = p->task->bundle;
                st.pid = (uint32_t) p->pid;
                st.status = (Containerd__V1__Types__Status) p->status;
                if (p->status == PROC_RUNNING && !p->exec_id && p->task->paused)
                        st.status = CONTAINERD__V1__TYPES__STATUS__PAUSED;
                st.stdin = p->stdio[0] ? p->stdio[0] : (char *) "";
                st.stdout = p->stdio[1] ? p->stdio[1] : (char *) "";
                st.stderr = p->stdio[2] ? p->stdio[2] : (char *) "";
                st.terminal = p->terminal;
                st.exec_id = p->exec_id ? p->exec_id : (char *) "";
                if (p->status == PROC_STOPPED) {
                        st.exit_status = (uint32_t) p->exit_status;
                        timestamp_set(&ts, p->exited_usec);
                        st.exited_at = &ts;
                }
                ttrpc_call_reply(c, &st.base);
        }
        containerd__task__v2__state_request__free_unpacked(req, NULL);
        return 0;
}

static int on_wait(TtrpcCall *c, const uint8_t *payload, size_t size, void *userdata) {
        TaskService *s = userdata;
        Containerd__Task__V2__WaitRequest *req = containerd__task__v2__wait_request__unpack(NULL, size, payload);
        if (!req)
                return ttrpc_call_fail(c, GRPC_INVALID_ARGUMENT, "Wait: not a WaitRequest");
        Proc *p = lookup(s, c, req->id, req->exec_id);
        containerd__task__v2__wait_request__free_unpacked(req, NULL);
        if (!p)
                return 0;
        if (p->status == PROC_STOPPED)
                return answer_wait(c, p);
        debug_log("wait %s %s (status %d)", p->task->id, proc_id(p), (int) p->status);
        /* Answered when it exits (proc_exited). */
        TtrpcCall **w = reallocarray(p->waiters, p->n_waiters + 1, sizeof(TtrpcCall *));
        if (!w)
                return ttrpc_call_fail(c, GRPC_RESOURCE_EXHAUSTED, "out of memory");
        p->waiters = w;
        p->waiters[p->n_waiters++] = c;
        return 0;
}

static int on_pids(TtrpcCall *c, const uint8_t *payload, size_t size, void *userdata) {
        TaskService *s = userdata;
        Containerd__Task__V2__PidsRequest *req = containerd__task__v2__pids_request__unpack(NULL, size, payload);
        if (!req)
                return ttrpc_call_fail(c, GRPC_INVALID_ARGUMENT, "Pids: not a PidsRequest");
        Proc *p = lookup(s, c, req->id, NULL);
        containerd__task__v2__pids_request__free_unpacked(req, NULL);
        if (!p)
                return 0;
        Task *t = p->task;
        _cleanup_free_ pid_t *pids = calloc(SHIM_PIDS_MAX, sizeof(pid_t));
        _cleanup_free_ Containerd__V1__Types__ProcessInfo *infos = NULL;
        _cleanup_free_ Containerd__V1__Types__ProcessInfo **list = NULL;
        size_t n = 0;
        Error *e = NULL;
        if (!pids)
                return ttrpc_call_fail(c, GRPC_RESOURCE_EXHAUSTED, "out of memory");
        if (t->init.status == PROC_RUNNING) {
                int r = shim_pids(s->pods, t->target.uuid, t->kind == TASK_SANDBOX ? NULL : t->target.app, pids,
                                  SHIM_PIDS_MAX, &n, &e);
                if (r < 0)
                        return fail_with(c, r, e);
        }
        infos = calloc(n ? n : 1, sizeof(*infos));
        list = calloc(n ? n : 1, sizeof(*list));
        if (!infos || !list)
                return ttrpc_call_fail(c, GRPC_RESOURCE_EXHAUSTED, "out of memory");
        for (size_t i = 0; i < n; i++) {
                containerd__v1__types__process_info__init(&infos[i]);
                infos[i].pid = (uint32_t) pids[i];
                list[i] = &infos[i];
        }
        Containerd__Task__V2__PidsResponse resp = CONTAINERD__TASK__V2__PIDS_RESPONSE__INIT;
        resp.n_processes = n;
        resp.processes = list;
        return ttrpc_call_reply(c, &resp.base);
}

static int on_connect(TtrpcCall *c, const uint8_t *payload, size_t size, void *userdata) {
        TaskService *s = userdata;
        Containerd__Task__V2__ConnectRequest *req = containerd__task__v2__connect_request__unpack(NULL, size, payload);
        if (!req)
                return ttrpc_call_fail(c, GRPC_INVALID_ARGUMENT, "Connect: not a ConnectRequest");
        Task *t = task_find(s, req->id);
        Containerd__Task__V2__ConnectResponse resp = CONTAINERD__TASK__V2__CONNECT_RESPONSE__INIT;
        resp.shim_pid = (uint32_t) getpid();
        resp.task_pid = t ? (uint32_t) t->init.pid : 0;
        resp.version = (char *) SDPOD_VERSION;
        containerd__task__v2__connect_request__free_unpacked(req, NULL);
        return ttrpc_call_reply(c, &resp.base);
}

/* --- Kill -------------------------------------------------------------- */

static int work_app_kill(TaskService *s, const char *const a[BACKGROUND_ARGS], int sig, Error **err) {
        return shim_app_kill(s->pods, a[0], a[1], sig, a[2] != NULL, err);
}

/* The exec's unit was not there (the relay has not started it yet, or it
 * has ended): the relay gets the signal, while it runs. */
static int exec_kill_done(TaskService *s, TtrpcCall *c, const char *const a[BACKGROUND_ARGS], int sig, int r) {
        if (r != -ESRCH)
                return r;
        Task *t = task_find(s, a[4]);
        Proc *p = t ? proc_find(t, a[5]) : NULL;
        if (!p || p->status != PROC_RUNNING || !p->child || !streq(p->instance, a[2]))
                return 0;       /* it has ended meanwhile */
        return kill(p->pid, sig) < 0 ? -errno : 0;
}

/* A paused task's app thawed before it is signalled, or its pod stopped:
 * a frozen process would not act on SIGTERM until resumed, and the stop
 * would wait out its grace (shim-resources.h). */
static void task_thaw(Task *t) {
        if (!t->paused)
                return;
        Error *e = NULL;
        if (shim_app_freeze(t->service->pods, t->target.uuid, t->target.app, false, &e) < 0)
                warn("task %s: %s", t->id, e ? e->msg : "cannot thaw it");
        error_free(e);
        t->paused = false;
}

/* Kill answers c itself, now or when its work in a child has ended: 1. */
static int proc_kill(TaskService *s, TtrpcCall *c, Proc *p, int sig, bool all, Error **err) {
        Task *t = p->task;
        if (p->status != PROC_RUNNING)
                return error_set(err, -ESRCH, "%s %s is not running", p->exec_id ? "exec" : "task", proc_id(p));
        if (p->exec_id) {
                /* Every process of the exec's unit, not only its relay
                 * (which would pass on only some signals, and only to the
                 * unit's main process; SIGKILL would leave the command
                 * running, holding containerd's FIFOs). */
                const char *args[BACKGROUND_ARGS] = { t->target.uuid, t->target.app, p->instance, NULL, t->id,
                                                      p->exec_id };
                int r = background_run(s, c, work_exec_kill, exec_kill_done, args, sig, err);
                return r < 0 ? r : 1;
        }
        if (t->kind != TASK_SANDBOX) {
                task_thaw(t);
                const char *args[BACKGROUND_ARGS] = { t->target.uuid, t->target.app, all ? "all" : NULL };
                int r = background_run(s, c, work_app_kill, NULL, args, sig, err);
                return r < 0 ? r : 1;
        }
        if (t->stopper)
                return 0;       /* stopping already */
        for (size_t i = 0; i < s->n_tasks; i++)
                if (streq(s->tasks[i]->target.uuid, t->target.uuid))
                        task_thaw(s->tasks[i]);
        /* Stopping a pod takes up to its apps' grace: in a child, so that
         * the other calls are answered meanwhile. */
        pid_t pid = fork();
        if (pid < 0)
                return error_sys(err, -errno, "task %s: cannot stop its pod", t->id);
        if (pid == 0) {
                sigset_t none;
                sigemptyset(&none);
                sigprocmask(SIG_SETMASK, &none, NULL);
                Error *e = NULL;
                int r = shim_pod_stop(s->pods, t->target.uuid, sig, &e);
                if (r < 0)
                        fprintf(stderr, "containerd-shim-sdpod-v1: %s\n", e ? e->msg : strerror(-r));
                _exit(r < 0 ? 1 : 0);
        }
        t->stopper = pid;
        int r = sd_event_add_child(s->event, &t->stopper_source, pid, WEXITED, on_stopper_exit, t);
        return r < 0 ? error_sys(err, r, "task %s", t->id) : 0;
}

static int on_kill(TtrpcCall *c, const uint8_t *payload, size_t size, void *userdata) {
        TaskService *s = userdata;
        Containerd__Task__V2__KillRequest *req = containerd__task__v2__kill_request__unpack(NULL, size, payload);
        if (!req)
                return ttrpc_call_fail(c, GRPC_INVALID_ARGUMENT, "Kill: not a KillRequest");
        Error *e = NULL;
        int r = 0;
        debug_log("kill %s %s %u%s", req->id, req->exec_id, req->signal, req->all ? " all" : "");
        Proc *p = lookup(s, c, req->id, req->exec_id);
        if (p) {
                if (req->signal == 0 || req->signal >= _NSIG)
                        r = error_set(&e, -EINVAL, "Kill: signal %u", req->signal);
                else
                        r = proc_kill(s, c, p, (int) req->signal, req->all, &e);
                /* A process that has exited already is not an error
                 * containerd needs: it kills to make sure. */
                if (r == -ESRCH && p->status == PROC_STOPPED) {
                        error_free(e);
                        e = NULL;
                        r = 0;
                }
                if (r == 0) {
                        Google__Protobuf__Empty empty = GOOGLE__PROTOBUF__EMPTY__INIT;
                        ttrpc_call_reply(c, &empty.base);
                }
        }
        containerd__task__v2__kill_request__free_unpacked(req, NULL);
        return r < 0 ? fail_with(c, r, e) : 0;
}

/* --- Exec -------------------------------------------------------------- */

/* The command of an exec: an OCI runtime-spec Process, as JSON. Its args
 * are taken; the command runs as the app's user, in its working directory,
 * with its environment and confinement (podapp exec), which is what the
 * CRI asks for (ExecSync copies the container's process). Another user or
 * working directory (ctr task exec --user, --cwd) is refused, not
 * ignored. */
/* The command's TERM, from the spec's env: the last TERM=, when valid
 * (shim_term_is_valid()); NULL otherwise. */
static int exec_term(struct json_object *o, char **ret, Error **err) {
        struct json_object *env = NULL;
        const char *term = NULL;
        *ret = NULL;
        if (!json_object_object_get_ex(o, "env", &env) || !json_object_is_type(env, json_type_array))
                return 0;
        for (size_t i = 0; i < json_object_array_length(env); i++) {
                const char *kv = json_object_get_string(json_object_array_get_idx(env, i));
                if (kv && startswith(kv, "TERM="))
                        term = kv + strlen("TERM=");
        }
        if (!shim_term_is_valid(term))
                return 0;
        return (*ret = strdup(term)) ? 0 : error_sys(err, -ENOMEM, "exec");
}

/* *ret_terminal: the spec asks for a terminal; *ret_term: its TERM. */
static int exec_argv(const Task *t, const ProtobufCBinaryData *spec, char ***ret, bool *ret_terminal, char **ret_term,
                     Error **err) {
        if (spec->len > OCI_SPEC_MAX)
                return error_set(err, -EINVAL, "exec: the process spec is too large");
        /* containerd's bytes, of their own length (not a C string). */
        struct json_object *o = NULL;
        if (json_parse((const char *) spec->data, spec->len, "exec: the process spec", &o, err) < 0)
                return -EINVAL;
        struct json_object *args = NULL, *term = NULL;
        int r = 0;
        if (!o || !json_object_is_type(o, json_type_object) || !json_object_object_get_ex(o, "args", &args) ||
            !json_object_is_type(args, json_type_array) || json_object_array_length(args) == 0)
                r = error_set(err, -EINVAL, "exec: the process spec has no args");
        *ret_terminal = json_object_object_get_ex(o, "terminal", &term) && json_object_get_boolean(term);
        *ret_term = NULL;
        if (r >= 0 && *ret_terminal)
                r = exec_term(o, ret_term, err);
        struct json_object *user = NULL, *uid = NULL, *gid = NULL, *cwd = NULL;
        if (r >= 0 && json_object_object_get_ex(o, "user", &user) &&
            ((json_object_object_get_ex(user, "uid", &uid) && json_object_get_int64(uid) != (int64_t) t->uid) ||
             (json_object_object_get_ex(user, "gid", &gid) && json_object_get_int64(gid) != (int64_t) t->gid)))
                r = error_set(err, -EOPNOTSUPP, "exec: another user than the container's (%u:%u) is not supported",
                              t->uid, t->gid);
        if (r >= 0 && t->cwd && json_object_object_get_ex(o, "cwd", &cwd) &&
            !streq(json_object_get_string(cwd) ?: "", t->cwd))
                r = error_set(err, -EOPNOTSUPP, "exec: another working directory than the container's (%s) is not supported",
                              t->cwd);
        char **argv = NULL;
        for (size_t i = 0; r >= 0 && i < json_object_array_length(args); i++) {
                struct json_object *a = json_object_array_get_idx(args, i);
                if (!json_object_is_type(a, json_type_string))
                        r = error_set(err, -EINVAL, "exec: args[%zu] is not a string", i);
                else if (strv_push(&argv, json_object_get_string(a)) < 0)
                        r = error_sys(err, -ENOMEM, "exec");
        }
        json_object_put(o);
        if (r < 0) {
                strv_free(argv);
                free(*ret_term);
                *ret_term = NULL;
                return r;
        }
        *ret = argv;
        return 0;
}

/* An exec with a terminal: its window-size carrier, made now so that a
 * ResizePty before Start has somewhere to go. */
static int exec_tty_prepare(Proc *p, Error **err) {
        int r = shim_tty_open(&p->tty_master, err);
        return r < 0 ? error_prefix(err, "exec %s", p->exec_id) : 0;
}

static int on_exec(TtrpcCall *c, const uint8_t *payload, size_t size, void *userdata) {
        TaskService *s = userdata;
        Containerd__Task__V2__ExecProcessRequest *req =
                containerd__task__v2__exec_process_request__unpack(NULL, size, payload);
        if (!req)
                return ttrpc_call_fail(c, GRPC_INVALID_ARGUMENT, "Exec: not an ExecProcessRequest");
        Error *e = NULL;
        int r = 0;
        Task *t = task_find(s, req->id);
        Proc *p = NULL;
        if (!t)
                r = error_set(&e, -ENOENT, "no task %s in this shim", req->id);
        else if (!*req->exec_id || proc_find(t, req->exec_id))
                r = error_set(&e, -EEXIST, "task %s: exec id \"%s\" is taken", req->id, req->exec_id);
        /* As runc's shim: a frozen app would hold the command, or, run
         * beside it, the command would break the pause. */
        else if (t->paused)
                r = error_set(&e, -EBUSY, "task %s is paused: cannot exec in a paused task (resume it first)", req->id);
        else if (!req->spec)
                r = error_set(&e, -EINVAL, "exec %s: no process spec", req->exec_id);
        else if (!(p = calloc(1, sizeof(Proc))) || (p->stdin_hold = p->tty_master = -1, !(p->exec_id = strdup(req->exec_id))))
                r = error_sys(&e, -ENOMEM, "exec %s", req->exec_id);
        if (r >= 0) {
                p->task = t;
                p->status = PROC_CREATED;
                if ((r = proc_set_stdio(p, req->stdin, req->stdout, req->stderr, &e)) >= 0)
                        r = exec_argv(t, &req->spec->value, &p->argv, &p->terminal, &p->term, &e);
                p->terminal = p->terminal || req->terminal;
                if (r >= 0 && p->terminal)
                        r = exec_tty_prepare(p, &e);
        }
        Proc **ps = r >= 0 ? reallocarray(t->execs, t->n_execs + 1, sizeof(Proc *)) : NULL;
        if (r >= 0 && !ps)
                r = error_sys(&e, -ENOMEM, "exec %s", req->exec_id);
        if (r >= 0) {
                t->execs = ps;
                t->execs[t->n_execs++] = p;
                Containerd__Events__TaskExecAdded ev = CONTAINERD__EVENTS__TASK_EXEC_ADDED__INIT;
                ev.container_id = t->id;
                ev.exec_id = p->exec_id;
                publish(s, SHIM_TOPIC_TASK_EXEC_ADDED, "containerd.events.TaskExecAdded", &ev.base);
                p = NULL;
                Google__Protobuf__Empty empty = GOOGLE__PROTOBUF__EMPTY__INIT;
                ttrpc_call_reply(c, &empty.base);
        }
        if (p) {
                proc_done(p);
                free(p);
        }
        containerd__task__v2__exec_process_request__free_unpacked(req, NULL);
        return r < 0 ? fail_with(c, r, e) : 0;
}

/* --- Delete, Shutdown -------------------------------------------------- */

static void publish_delete(TaskService *s, const Proc *p) {
        Google__Protobuf__Timestamp ts = GOOGLE__PROTOBUF__TIMESTAMP__INIT;
        timestamp_set(&ts, p->exited_usec);
        Containerd__Events__TaskDelete ev = CONTAINERD__EVENTS__TASK_DELETE__INIT;
        ev.container_id = p->task->id;
        ev.pid = (uint32_t) p->pid;
        ev.exit_status = (uint32_t) p->exit_status;
        ev.exited_at = &ts;
        ev.id = p->exec_id ? p->exec_id : (char *) "";
        publish(s, SHIM_TOPIC_TASK_DELETE, "containerd.events.TaskDelete", &ev.base);
}

/* Removes what the task made: its app, its pod (a sandbox or a plain
 * task's), its rootfs mounts. */
static int task_teardown(TaskService *s, Task *t, Error **err) {
        int r = 0;
        if (t->kind == TASK_SANDBOX) {
                for (size_t i = 0; i < s->n_tasks; i++)
                        if (s->tasks[i]->kind == TASK_CONTAINER && streq(s->tasks[i]->target.uuid, t->target.uuid))
                                return error_set(err, -EBUSY, "sandbox %s still has container %s", t->id, s->tasks[i]->id);
        }
        if (t->target.app && t->kind == TASK_CONTAINER)
                r = shim_app_remove(s->pods, t->target.uuid, t->target.app, err);
        else
                r = shim_pod_remove(s->pods, t->target.uuid, err);
        if (r < 0)
                return r;
        if (t->rootfs_mounted) {
                if ((r = shim_rootfs_unmount(t->bundle, err)) < 0)
                        return r;
                t->rootfs_mounted = false;
        }
        return 0;
}

static int on_delete(TtrpcCall *c, const uint8_t *payload, size_t size, void *userdata) {
        TaskService *s = userdata;
        Containerd__Task__V2__DeleteRequest *req = containerd__task__v2__delete_request__unpack(NULL, size, payload);
        if (!req)
                return ttrpc_call_fail(c, GRPC_INVALID_ARGUMENT, "Delete: not a DeleteRequest");
        Error *e = NULL;
        int r = 0;
        debug_log("delete %s %s", req->id, req->exec_id);
        Proc *p = lookup(s, c, req->id, req->exec_id);
        containerd__task__v2__delete_request__free_unpacked(req, NULL);
        if (!p)
                return 0;
        Task *t = p->task;
        if (p->starting)
                return ttrpc_call_fail(c, GRPC_FAILED_PRECONDITION, "task %s is being started", t->id);
        if (p->status == PROC_RUNNING)
                return ttrpc_call_fail(c, GRPC_FAILED_PRECONDITION, "%s %s is still running: kill it first",
                                       p->exec_id ? "exec" : "task", proc_id(p));
        if (!p->exec_id && (r = task_teardown(s, t, &e)) < 0)
                return fail_with(c, r, e);
        if (p->status == PROC_CREATED) {
                /* Never started: containerd still wants a status. */
                p->exit_status = 0;
                p->exited_usec = now_usec();
        }
        publish_delete(s, p);
        Google__Protobuf__Timestamp ts = GOOGLE__PROTOBUF__TIMESTAMP__INIT;
        timestamp_set(&ts, p->exited_usec);
        Containerd__Task__V2__DeleteResponse resp = CONTAINERD__TASK__V2__DELETE_RESPONSE__INIT;
        resp.pid = (uint32_t) p->pid;
        resp.exit_status = (uint32_t) p->exit_status;
        resp.exited_at = &ts;
        r = ttrpc_call_reply(c, &resp.base);
        if (p->exec_id) {
                for (size_t i = 0; i < t->n_execs; i++)
                        if (t->execs[i] == p) {
                                memmove(t->execs + i, t->execs + i + 1, (t->n_execs - i - 1) * sizeof(Proc *));
                                t->n_execs--;
                                break;
                        }
                proc_done(p);
                free(p);
        } else
                task_remove(s, t);
        return 0;
}

static int on_shutdown(TtrpcCall *c, const uint8_t *payload, size_t size, void *userdata) {
        TaskService *s = userdata;
        Google__Protobuf__Empty empty = GOOGLE__PROTOBUF__EMPTY__INIT;
        ttrpc_call_reply(c, &empty.base);
        /* One shim serves every task of its pod: it goes with the last. */
        s->shutdown = true;
        if (s->n_tasks == 0)
                sd_event_exit(s->event, 0);
        return 0;
}

/* --- the rest ---------------------------------------------------------- */

static int on_close_io(TtrpcCall *c, const uint8_t *payload, size_t size, void *userdata) {
        TaskService *s = userdata;
        Containerd__Task__V2__CloseIORequest *req = containerd__task__v2__close_iorequest__unpack(NULL, size, payload);
        if (!req)
                return ttrpc_call_fail(c, GRPC_INVALID_ARGUMENT, "CloseIO: not a CloseIORequest");
        /* The app and the exec hold containerd's FIFOs themselves, not
         * through us; our hold on stdin goes, so that containerd's EOF
         * reaches them. */
        Proc *p = lookup(s, c, req->id, req->exec_id);
        bool close_stdin = req->stdin;
        containerd__task__v2__close_iorequest__free_unpacked(req, NULL);
        if (p) {
                /* Before it has started, the hold is all that keeps what
                 * the client wrote (the FIFO's buffer goes with its last
                 * fd), and the exec's relay would find no writer: it goes
                 * once the process has the FIFO open. */
                if (close_stdin && (p->status == PROC_CREATED || p->starting))
                        p->stdin_close_pending = true;
                else if (close_stdin)
                        p->stdin_hold = safe_close_fd(p->stdin_hold);
                Google__Protobuf__Empty empty = GOOGLE__PROTOBUF__EMPTY__INIT;
                ttrpc_call_reply(c, &empty.base);
        }
        return 0;
}

/* The carrier's new size, then SIGWINCH to the relay, which copies it to
 * the pod's pty (shim-tty.h). Never waits: a relay that does not look
 * (busy, or one a hostile command keeps writing) finds the last size when
 * it does. Before Start, the relay takes the size at its start; after the
 * end, there is nobody to tell. */
static int exec_tty_resize(TtrpcCall *c, Proc *p, unsigned rows, unsigned cols) {
        if (p->tty_master < 0)
                return ttrpc_call_fail(c, GRPC_FAILED_PRECONDITION, "%s has no terminal", proc_id(p));
        Error *e = NULL;
        int r = shim_tty_resize(p->tty_master, rows, cols, &e);
        if (r < 0) {
                error_prefix(&e, "%s", proc_id(p));
                return fail_with(c, r, e);
        }
        /* p->child: the relay runs and is not reaped, its PID is its own. */
        if (p->status == PROC_RUNNING && p->child)
                (void) kill(p->pid, SIGWINCH);
        Google__Protobuf__Empty empty = GOOGLE__PROTOBUF__EMPTY__INIT;
        return ttrpc_call_reply(c, &empty.base);
}

static int on_resize_pty(TtrpcCall *c, const uint8_t *payload, size_t size, void *userdata) {
        TaskService *s = userdata;
        Containerd__Task__V2__ResizePtyRequest *req =
                containerd__task__v2__resize_pty_request__unpack(NULL, size, payload);
        if (!req)
                return ttrpc_call_fail(c, GRPC_INVALID_ARGUMENT, "ResizePty: not a ResizePtyRequest");
        Proc *p = lookup(s, c, req->id, req->exec_id);
        unsigned rows = req->height, cols = req->width;
        containerd__task__v2__resize_pty_request__free_unpacked(req, NULL);
        if (!p)
                return 0;
        return exec_tty_resize(c, p, rows, cols);
}

static int not_implemented(TtrpcCall *c, const char *what) {
        return ttrpc_call_fail(c, GRPC_UNIMPLEMENTED, "%s is not implemented by containerd-shim-sdpod-v1", what);
}

/* --- Pause, Resume (shim-resources.h) ---------------------------------- */

static int pause_resume(TaskService *s, TtrpcCall *c, const char *id, bool pause) {
        const char *what = pause ? "Pause" : "Resume";
        Proc *p = lookup(s, c, id, NULL);
        if (!p)
                return 0;
        Task *t = p->task;
        Error *e = NULL;
        int r = 0;
        if (t->kind == TASK_SANDBOX)
                r = error_set(&e, -EOPNOTSUPP, "%s: task %s is a sandbox, the pod itself (its systemd would freeze "
                              "with its apps): pause the containers", what, t->id);
        else if (p->status != PROC_RUNNING)
                r = error_set(&e, -ESRCH, "%s: task %s is not running", what, t->id);
        else if ((r = shim_app_freeze(s->pods, t->target.uuid, t->target.app, pause, &e)) < 0)
                error_prefix(&e, "%s: task %s", what, t->id);
        if (r < 0)
                return fail_with(c, r, e);
        t->paused = pause;
        if (pause) {
                Containerd__Events__TaskPaused ev = CONTAINERD__EVENTS__TASK_PAUSED__INIT;
                ev.container_id = t->id;
                publish(s, SHIM_TOPIC_TASK_PAUSED, "containerd.events.TaskPaused", &ev.base);
        } else {
                Containerd__Events__TaskResumed ev = CONTAINERD__EVENTS__TASK_RESUMED__INIT;
                ev.container_id = t->id;
                publish(s, SHIM_TOPIC_TASK_RESUMED, "containerd.events.TaskResumed", &ev.base);
        }
        Google__Protobuf__Empty empty = GOOGLE__PROTOBUF__EMPTY__INIT;
        ttrpc_call_reply(c, &empty.base);
        return 0;
}

static int on_pause(TtrpcCall *c, const uint8_t *payload, size_t size, void *userdata) {
        Containerd__Task__V2__PauseRequest *req = containerd__task__v2__pause_request__unpack(NULL, size, payload);
        if (!req)
                return ttrpc_call_fail(c, GRPC_INVALID_ARGUMENT, "Pause: not a PauseRequest");
        int r = pause_resume(userdata, c, req->id, true);
        containerd__task__v2__pause_request__free_unpacked(req, NULL);
        return r;
}

static int on_resume(TtrpcCall *c, const uint8_t *payload, size_t size, void *userdata) {
        Containerd__Task__V2__ResumeRequest *req = containerd__task__v2__resume_request__unpack(NULL, size, payload);
        if (!req)
                return ttrpc_call_fail(c, GRPC_INVALID_ARGUMENT, "Resume: not a ResumeRequest");
        int r = pause_resume(userdata, c, req->id, false);
        containerd__task__v2__resume_request__free_unpacked(req, NULL);
        return r;
}

static int on_checkpoint(TtrpcCall *c, const uint8_t *payload, size_t size, void *userdata) {
        return not_implemented(c, "Checkpoint");
}

/* --- Update (shim-resources.h) ------------------------------------------ */

/* The resources' JSON at most: a LinuxResources with its device rules. */
#define SHIM_UPDATE_MAX (64U << 10)

static int work_app_update(TaskService *s, const char *const a[BACKGROUND_ARGS], int sig, Error **err) {
        return shim_app_update(s->pods, a[0], a[1], a[2], err);
}

/* It talks to the pod's systemd: in a child (background_run), so that a
 * stuck pod holds up nothing else. */
static int on_update(TtrpcCall *c, const uint8_t *payload, size_t size, void *userdata) {
        TaskService *s = userdata;
        Containerd__Task__V2__UpdateTaskRequest *req =
                containerd__task__v2__update_task_request__unpack(NULL, size, payload);
        if (!req)
                return ttrpc_call_fail(c, GRPC_INVALID_ARGUMENT, "Update: not an UpdateTaskRequest");
        Error *e = NULL;
        int r = 0;
        Proc *p = lookup(s, c, req->id, NULL);
        if (p) {
                Task *t = p->task;
                const ProtobufCBinaryData *v = req->resources ? &req->resources->value : NULL;
                _cleanup_free_ char *json = NULL;
                if (t->kind == TASK_SANDBOX)
                        r = error_set(&e, -EOPNOTSUPP, "Update: task %s is a sandbox, the pod itself: its limits are "
                                      "the pod's, set when it starts; update its containers", t->id);
                else if (!v || v->len == 0)
                        r = error_set(&e, -EINVAL, "Update: task %s: no resources", t->id);
                else if (v->len > SHIM_UPDATE_MAX || memchr(v->data, 0, v->len))
                        r = error_set(&e, -EINVAL, "Update: task %s: the resources are not a JSON LinuxResources of "
                                      "at most %u bytes", t->id, SHIM_UPDATE_MAX);
                else if (p->status != PROC_RUNNING)
                        r = error_set(&e, -ESRCH, "Update: task %s is not running", t->id);
                else if (!(json = malloc(v->len + 1)))
                        r = error_sys(&e, -ENOMEM, "Update");
                else {
                        /* Copied whole, not by strndup(): protobuf's bytes
                         * end without a NUL, which strndup may look for
                         * past them (the sanitizers' strict check did). */
                        memcpy(json, v->data, v->len);
                        json[v->len] = 0;
                        const char *args[BACKGROUND_ARGS] = { t->target.uuid, t->target.app, json };
                        r = background_run(s, c, work_app_update, NULL, args, 0, &e);
                }
        }
        containerd__task__v2__update_task_request__free_unpacked(req, NULL);
        return r < 0 ? fail_with(c, r, e) : 0;
}

static int on_stats(TtrpcCall *c, const uint8_t *payload, size_t size, void *userdata);

static const struct {
        const char *method;
        TtrpcHandler handler;
} methods[] = {
        { "Create", on_create },   { "Start", on_start },           { "State", on_state },
        { "Wait", on_wait },       { "Kill", on_kill },             { "Delete", on_delete },
        { "Exec", on_exec },       { "Pids", on_pids },             { "Connect", on_connect },
        { "Shutdown", on_shutdown }, { "CloseIO", on_close_io },    { "ResizePty", on_resize_pty },
        { "Stats", on_stats },     { "Pause", on_pause },           { "Resume", on_resume },
        { "Checkpoint", on_checkpoint }, { "Update", on_update },
};

int task_service_new(sd_event *e, TtrpcServer *server, const TaskServiceConfig *c, TaskService **ret, Error **err) {
        TaskService *s = calloc(1, sizeof(TaskService));
        if (!s)
                return error_sys(err, -ENOMEM, "task service");
        s->event = sd_event_ref(e);
        debug = c->debug;
        s->server = server;
        s->publisher = c->publisher;
        s->data_dir = c->data_dir ? c->data_dir : SDPOD_DEFAULT_DIR;
        s->data_dir_is_default = c->data_dir_is_default;
        int r = pod_store_open(s->data_dir, s->data_dir_is_default, false, &s->pods, err);
        for (size_t i = 0; r >= 0 && i < ELEMENTSOF(methods); i++)
                if ((r = ttrpc_server_add_method(server, TASK_SERVICE, methods[i].method, methods[i].handler, s)) < 0)
                        error_sys(err, r, "task service");
        if (r < 0) {
                task_service_free(s);
                return r;
        }
        *ret = s;
        return 0;
}

TaskService *task_service_free(TaskService *s) {
        if (!s)
                return NULL;
        /* The last events (a TaskExit, a TaskDelete) still go out before
         * the shim ends: containerd waits for them. */
        int dropped = shim_publisher_flush(&s->publisher, 10 * 1000000ULL);
        if (dropped > 0)
                warn("%d events could not be published", dropped);
        shim_publisher_done(&s->publisher);
        while (s->background) {
                Background *b = s->background;
                s->background = b->next;
                background_free(b);
        }
        for (size_t i = 0; i < s->n_tasks; i++)
                task_free(s->tasks[i]);
        free(s->tasks);
        sd_event_source_disable_unref(s->poll);
        pod_store_free(s->pods);
        sd_event_unref(s->event);
        free(s);
        return NULL;
}

/* Stats: the figures sdpod stats shows, as containerd's cgroup v1 metrics
 * (the type `ctr task metrics` and the CRI decode); a figure the host does
 * not give is left out. */
static int on_stats(TtrpcCall *c, const uint8_t *payload, size_t size, void *userdata) {
        TaskService *s = userdata;
        Containerd__Task__V2__StatsRequest *req = containerd__task__v2__stats_request__unpack(NULL, size, payload);
        if (!req)
                return ttrpc_call_fail(c, GRPC_INVALID_ARGUMENT, "Stats: not a StatsRequest");
        Proc *p = lookup(s, c, req->id, NULL);
        containerd__task__v2__stats_request__free_unpacked(req, NULL);
        if (!p)
                return 0;
        Task *t = p->task;
        CgroupFigures f;
        Error *e = NULL;
        int r = shim_figures(s->pods, t->target.uuid, t->kind == TASK_SANDBOX ? NULL : t->target.app, &f, &e);
        if (r < 0)
                return fail_with(c, r, e);
        Io__Containerd__Cgroups__V1__Metrics m = IO__CONTAINERD__CGROUPS__V1__METRICS__INIT;
        Io__Containerd__Cgroups__V1__PidsStat pids = IO__CONTAINERD__CGROUPS__V1__PIDS_STAT__INIT;
        Io__Containerd__Cgroups__V1__CPUStat cpu = IO__CONTAINERD__CGROUPS__V1__CPUSTAT__INIT;
        Io__Containerd__Cgroups__V1__CPUUsage usage = IO__CONTAINERD__CGROUPS__V1__CPUUSAGE__INIT;
        Io__Containerd__Cgroups__V1__MemoryStat mem = IO__CONTAINERD__CGROUPS__V1__MEMORY_STAT__INIT;
        Io__Containerd__Cgroups__V1__MemoryEntry mem_usage = IO__CONTAINERD__CGROUPS__V1__MEMORY_ENTRY__INIT;
        if (f.tasks != POD_STATS_UNKNOWN) {
                pids.current = f.tasks;
                pids.limit = f.tasks_limit < POD_STATS_NO_LIMIT ? f.tasks_limit : 0;
                m.pids = &pids;
        }
        if (f.cpu_usec != POD_STATS_UNKNOWN) {
                usage.total = f.cpu_usec * 1000;        /* nanoseconds */
                cpu.usage = &usage;
                m.cpu = &cpu;
        }
        if (f.memory_bytes != POD_STATS_UNKNOWN) {
                mem_usage.usage = f.memory_bytes;
                mem_usage.limit = f.memory_limit_bytes < POD_STATS_NO_LIMIT ? f.memory_limit_bytes : 0;
                mem.usage = &mem_usage;
                m.memory = &mem;
        }
        size_t n = io__containerd__cgroups__v1__metrics__get_packed_size(&m);
        _cleanup_free_ uint8_t *buf = malloc(n ? n : 1);
        if (!buf)
                return ttrpc_call_fail(c, GRPC_RESOURCE_EXHAUSTED, "out of memory");
        io__containerd__cgroups__v1__metrics__pack(&m, buf);
        Google__Protobuf__Any any = GOOGLE__PROTOBUF__ANY__INIT;
        any.type_url = (char *) "io.containerd.cgroups.v1.Metrics";
        any.value = (ProtobufCBinaryData) { n, buf };
        Containerd__Task__V2__StatsResponse resp = CONTAINERD__TASK__V2__STATS_RESPONSE__INIT;
        resp.stats = &any;
        return ttrpc_call_reply(c, &resp.base);
}
