/* SPDX-License-Identifier: Apache-2.0 */
/* containerd-shim-sdpod-v1: the containerd runtime v2 shim of sdpod
 * (runtime type io.containerd.sdpod.v1; containerd-shim-sdpod-v1(8)).
 *
 * containerd runs it three ways, always with the task's bundle as the
 * working directory:
 *   start   finds the shim of the task's pod (a CRI container goes to its
 *           sandbox's), or starts one, and prints its address;
 *   delete  cleans up after a task whose shim is gone, and prints a
 *           DeleteResponse;
 *   (none)  is never run by containerd: start forks the server itself.
 *
 * The server is one process per pod, serving the task service over ttrpc
 * on a unix socket only root can reach (/run/sdpod/shim, mode 0700), and
 * only to peers with our uid (ttrpc.h). */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <systemd/sd-event.h>

#include "config.h"

#include "basic/fs.h"
#include "basic/lock.h"
#include "basic/macro.h"
#include "basic/sha256.h"
#include "basic/time-util.h"
#include "basic/warn.h"
#include "containerd-shim.pb-c.h"
#include "image/image-store.h"
#include "pod/pod.h"
#include "shim/oci-spec-map.h"
#include "shim/oci-spec.h"
#include "shim/shim-task.h"
#include "shim/task-service.h"
#include "shim/ttrpc.h"

#define SHIM_SOCKET_DIR "/run/sdpod/shim"

static const char usage[] =
        "Usage: containerd-shim-sdpod-v1 [OPTIONS] start|delete\n"
        "\n"
        "The containerd runtime v2 shim of sdpod (runtime type io.containerd.sdpod.v1):\n"
        "containerd runs it with a task's bundle as the working directory. A CRI pod\n"
        "sandbox becomes an sdpod pod, each of its containers an app of that pod, and\n"
        "a plain task a pod of one app. See containerd-shim-sdpod-v1(8).\n"
        "\n"
        "  start                   start the shim of the task's pod (or find it) and\n"
        "                          print its address\n"
        "  delete                  remove what a task left after its shim ended, and\n"
        "                          print a DeleteResponse\n"
        "\n"
        "  -namespace NAME         containerd's namespace of the task\n"
        "  -address PATH           containerd's socket\n"
        "  -publish-binary PATH    the program that publishes events to containerd\n"
        "  -id ID                  the task's id\n"
        "  -bundle PATH            the task's bundle (default: the working directory)\n"
        "  -debug                  log more\n"
        "  -h, --help              show this help\n"
        "  -v, --version           show the version\n"
        "\n"
        "Environment: SDPOD_DIR, the data directory (default " SDPOD_DEFAULT_DIR ");\n"
        "SDPOD_STAGE1, the stage1 image, as for sdpod; SDPOD_SHIM_LOG, a file for the\n"
        "shim's messages instead of containerd's log; SDPOD_SHIM_DEBUG, more of them.\n";

typedef struct ShimOptions {
        const char *namespace, *address, *publish_binary, *id, *bundle;
        bool debug;
        const char *verb;
} ShimOptions;

static const char *program = "containerd-shim-sdpod-v1";

/* containerd copies the shim's stderr (the bundle's "log" FIFO) into its
 * own log, each line as it comes. */
static void warn_to_stderr(const char *message) {
        fprintf(stderr, "%s[%d]: %s\n", program, (int) getpid(), message);
}

/* Prints e and frees it: a verb's failure ends the process, but under the
 * sanitizers a leak at the exit fails it too. */
static int die(const char *what, Error *e) {
        fprintf(stderr, "%s %s: %s\n", program, what, e && e->msg ? e->msg : "out of memory");
        error_free(e);
        return 1;
}

/* containerd passes Go flags: "-name value", "-name=value", one or two
 * dashes, then the verb. */
static int parse_options(int argc, char **argv, ShimOptions *o) {
        static const struct {
                const char *name;
                size_t offset;
        } strings[] = {
                { "namespace", offsetof(ShimOptions, namespace) },
                { "address", offsetof(ShimOptions, address) },
                { "publish-binary", offsetof(ShimOptions, publish_binary) },
                { "id", offsetof(ShimOptions, id) },
                { "bundle", offsetof(ShimOptions, bundle) },
        };
        for (int i = 1; i < argc; i++) {
                const char *a = argv[i];
                if (a[0] != '-') {
                        if (o->verb) {
                                fprintf(stderr, "%s: unexpected argument \"%s\"\n", program, a);
                                return 2;
                        }
                        o->verb = a;
                        continue;
                }
                a += a[1] == '-' ? 2 : 1;
                if (streq(a, "h") || streq(a, "help")) {
                        fputs(usage, stdout);
                        return 0;
                }
                if (streq(a, "v") || streq(a, "version")) {
                        printf("%s %s\n", program, SDPOD_VERSION);
                        return 0;
                }
                if (streq(a, "debug")) {
                        o->debug = true;
                        continue;
                }
                size_t l = strcspn(a, "=");
                bool found = false;
                for (size_t j = 0; j < ELEMENTSOF(strings); j++) {
                        if (strlen(strings[j].name) != l || strncmp(a, strings[j].name, l) != 0)
                                continue;
                        const char *value = a[l] == '=' ? a + l + 1 : (i + 1 < argc ? argv[++i] : NULL);
                        if (!value) {
                                fprintf(stderr, "%s: option \"-%s\" needs a value\n", program, strings[j].name);
                                return 2;
                        }
                        *(const char **) ((char *) o + strings[j].offset) = value;
                        found = true;
                }
                if (!found) {
                        fprintf(stderr, "%s: unknown option \"%s\"\n", program, argv[i]);
                        return 2;
                }
        }
        return -1;
}

/* The socket of a pod's shim: one per containerd (its address), namespace
 * and pod (the sandbox's id, or the plain task's). */
static void socket_path(const ShimOptions *o, const char *group, char ret[static sizeof(((struct sockaddr_un *) 0)->sun_path)]) {
        Sha256 c;
        uint8_t digest[SHA256_DIGEST_SIZE];
        char hex[SHA256_HEX_SIZE];
        sha256_init(&c);
        const char *parts[] = { o->address ? o->address : "", o->namespace ? o->namespace : "", group };
        for (size_t i = 0; i < ELEMENTSOF(parts); i++)
                sha256_update(&c, parts[i], strlen(parts[i]) + 1);
        sha256_final(&c, digest);
        sha256_to_hex(digest, hex);
        snprintf(ret, sizeof(((struct sockaddr_un *) 0)->sun_path), SHIM_SOCKET_DIR "/%.32s", hex);
}

static int socket_connect(const char *path) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
        _cleanup_close_ int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return -errno;
        return connect(fd, (struct sockaddr *) &sa, sizeof(sa)) < 0 ? -errno : 0;
}

static int socket_listen(const char *path, int *ret, Error **err) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
        _cleanup_close_ int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return error_sys(err, -errno, "socket");
        (void) unlink(path);    /* a dead shim's */
        if (bind(fd, (struct sockaddr *) &sa, sizeof(sa)) < 0 || listen(fd, 64) < 0)
                return error_sys(err, -errno, "cannot listen on %s", path);
        *ret = TAKE_FD(fd);
        return 0;
}

/* The lock of a pod's shims, SHIM_SOCKET_DIR/HASH.lock, held while one
 * starts its server (verb_start) or while the server goes away (serve):
 * the server removes it, so that a lock is not left behind for every
 * sandbox ever run. It removes it while holding it; whoever waited for it
 * meanwhile then holds a lock on a file no longer there, which locks
 * nothing: so a lock counts once the file locked is still the one at the
 * path, and is taken anew otherwise. */
static int lock_group(int dir, const char *name) {
        for (unsigned attempt = 0; attempt < 100; attempt++) {
                int fd = lock_file_at(dir, name, LOCK_EX);
                if (fd < 0)
                        return fd;
                struct stat a, b;
                if (fstat(fd, &a) >= 0 && fstatat(dir, name, &b, AT_SYMLINK_NOFOLLOW) >= 0 && a.st_dev == b.st_dev &&
                    a.st_ino == b.st_ino)
                        return fd;
                close(fd);
        }
        return -EAGAIN;
}

static void lock_name(const char *path, char ret[static 128]) {
        snprintf(ret, 128, "%s.lock", path + strlen(SHIM_SOCKET_DIR) + 1);
}

static int serve(const ShimOptions *o, int listen_fd, const char *path) {
        _cleanup_(sd_event_unrefp) sd_event *e = NULL;
        Error *err = NULL;
        TtrpcServer *server = NULL;
        TaskService *service = NULL;
        sigset_t mask;
        /* SIGCHLD for sd_event_add_child(); SIGPIPE: containerd may close
         * the log FIFO our stderr goes to. */
        signal(SIGPIPE, SIG_IGN);
        sigemptyset(&mask);
        sigaddset(&mask, SIGCHLD);
        sigprocmask(SIG_BLOCK, &mask, NULL);
        const char *dir = getenv("SDPOD_DIR");
        TaskServiceConfig c = {
                .data_dir = dir && *dir ? dir : NULL,
                .data_dir_is_default = !(dir && *dir),
                .publisher = { o->publish_binary, o->address, o->namespace },
                .debug = o->debug || getenv("SDPOD_SHIM_DEBUG"),
        };
        int r = sd_event_default(&e);
        if (r < 0)
                return error_sys(&err, r, "event loop"), die("serve", err);
        if ((r = ttrpc_server_new(e, listen_fd, &server, &err)) < 0 ||
            (r = task_service_new(e, server, &c, &service, &err)) < 0) {
                ttrpc_server_free(server);
                return die("serve", err);
        }
        r = sd_event_loop(e);
        task_service_free(service);
        ttrpc_server_free(server);
        /* The socket and the lock go under the lock: a start meanwhile
         * either connected to us before (and containerd starts no task in
         * a sandbox it deleted), or finds neither and starts a server. */
        char name[128];
        lock_name(path, name);
        _cleanup_close_ int sock_dir = open(SHIM_SOCKET_DIR, O_PATH | O_DIRECTORY | O_CLOEXEC);
        _cleanup_close_ int lock = sock_dir < 0 ? -1 : lock_group(sock_dir, name);
        (void) unlink(path);
        if (lock >= 0)
                (void) unlinkat(sock_dir, name, 0);
        return r < 0 ? 1 : 0;
}

/* The group of the task in the bundle: a CRI container's sandbox, else
 * the task itself. */
static int task_group(const ShimOptions *o, int bundle_fd, char **ret, Error **err) {
        _cleanup_oci_spec_ OciSpec *spec = NULL;
        int r = oci_spec_read_at(bundle_fd, &spec, err);
        if (r < 0)
                return r;
        const char *sandbox = NULL;
        if (oci_spec_task_kind(spec, &sandbox) != OCI_TASK_CONTAINER)
                sandbox = o->id;
        return (*ret = strdup(sandbox)) ? 0 : error_sys(err, -ENOMEM, "task %s", o->id);
}

static int verb_start(const ShimOptions *o) {
        Error *err = NULL;
        _cleanup_close_ int bundle_fd = open(o->bundle ? o->bundle : ".", O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (bundle_fd < 0)
                return error_sys(&err, -errno, "the bundle"), die("start", err);
        _cleanup_free_ char *group = NULL;
        if (task_group(o, bundle_fd, &group, &err) < 0)
                return die("start", err);
        char path[sizeof(((struct sockaddr_un *) 0)->sun_path)];
        socket_path(o, group, path);
        if (mkdir_p(SHIM_SOCKET_DIR, 0700) < 0)
                return error_sys(&err, -errno, "%s", SHIM_SOCKET_DIR), die("start", err);
        /* Two starts of one pod at once must not both start a server. */
        char name[128];
        lock_name(path, name);
        _cleanup_close_ int dir = open(SHIM_SOCKET_DIR, O_PATH | O_DIRECTORY | O_CLOEXEC);
        _cleanup_close_ int lock = dir < 0 ? -errno : lock_group(dir, name);
        if (lock < 0)
                return error_sys(&err, lock, "%s/%s", SHIM_SOCKET_DIR, name), die("start", err);

        char address[sizeof(path) + 8];
        snprintf(address, sizeof(address), "unix://%s", path);
        if (socket_connect(path) < 0) {
                _cleanup_close_ int listen_fd = -1;
                if (socket_listen(path, &listen_fd, &err) < 0)
                        return die("start", err);
                pid_t pid = fork();
                if (pid < 0)
                        return error_sys(&err, -errno, "fork"), die("start", err);
                if (pid == 0) {
                        /* The server: a session of its own, nothing of
                         * containerd's open (it reads start's stdout to
                         * its end), its log to the bundle's "log" FIFO
                         * when containerd reads it. */
                        setsid();
                        int devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
                        const char *log_path = getenv("SDPOD_SHIM_LOG");
                        int log = log_path && *log_path ? open(log_path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600)
                                                        : openat(bundle_fd, "log", O_WRONLY | O_NONBLOCK | O_CLOEXEC);
                        /* Blocking from here on (the FIFO was opened
                         * without waiting for a reader), and appending
                         * still: shims share SDPOD_SHIM_LOG. */
                        if (log >= 0)
                                fcntl(log, F_SETFL, fcntl(log, F_GETFL) & ~O_NONBLOCK);
                        dup2(devnull, STDIN_FILENO);
                        dup2(devnull, STDOUT_FILENO);
                        dup2(log >= 0 ? log : devnull, STDERR_FILENO);
                        if (chdir("/") < 0)
                                _exit(1);
                        close(bundle_fd);
                        close(lock);
                        close(dir);
                        _exit(serve(o, listen_fd, path));
                }
        }
        /* containerd reads the address from our output, and from the
         * bundle's "address" file when it comes back after a restart. */
        if (write_file_atomic_at(bundle_fd, "address", address, strlen(address), 0600, &err) < 0)
                return die("start", err);
        puts(address);
        return fflush(stdout) == 0 ? 0 : 1;
}

/* containerd runs "delete" for a task whose shim died: for the sandbox's
 * (or a plain task's), the dead server's socket and lock go too, under the
 * lock, once nothing answers at the socket. */
static void forget_dead_server(const ShimOptions *o, int bundle_fd) {
        _cleanup_free_ char *group = NULL;
        _cleanup_error_ Error *ignored = NULL;
        if (task_group(o, bundle_fd, &group, &ignored) < 0 || !streq(group, o->id))
                return;
        char path[sizeof(((struct sockaddr_un *) 0)->sun_path)], name[128];
        socket_path(o, group, path);
        lock_name(path, name);
        _cleanup_close_ int dir = open(SHIM_SOCKET_DIR, O_PATH | O_DIRECTORY | O_CLOEXEC);
        _cleanup_close_ int lock = dir < 0 ? -1 : lock_group(dir, name);
        if (lock < 0 || socket_connect(path) >= 0)
                return;
        (void) unlink(path);
        (void) unlinkat(dir, name, 0);
}

static int verb_delete(const ShimOptions *o) {
        Error *err = NULL;
        const char *bundle = o->bundle ? o->bundle : ".";
        _cleanup_free_ char *bundle_path = realpath(bundle, NULL);
        _cleanup_close_ int bundle_fd = open(bundle, O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (bundle_fd < 0 || !bundle_path)
                return error_sys(&err, -errno, "the bundle %s", bundle), die("delete", err);
        _cleanup_(shim_target_done) ShimTarget t = {};
        int r = shim_target_read(bundle_fd, &t, &err);
        if (r < 0 && r != -ENOENT)
                return die("delete", err);
        error_free(err);
        err = NULL;
        if (r >= 0) {
                const char *dir = getenv("SDPOD_DIR");
                bool is_default = !(dir && *dir);
                _cleanup_pod_store_ PodStore *ps = NULL;
                if (pod_store_open(is_default ? SDPOD_DEFAULT_DIR : dir, false, false, &ps, &err) < 0)
                        return die("delete", err);
                /* A container's app goes; a sandbox's or a plain task's
                 * pod goes whole. */
                _cleanup_free_ char *group = NULL;
                bool container = t.app && task_group(o, bundle_fd, &group, &err) >= 0 && !streq(group, o->id);
                error_free(err);
                err = NULL;
                r = container ? shim_app_remove(ps, t.uuid, t.app, &err) : shim_pod_remove(ps, t.uuid, &err);
                if (r < 0)
                        return die("delete", err);
        }
        if (shim_rootfs_unmount(bundle_path, &err) < 0)
                return die("delete", err);
        forget_dead_server(o, bundle_fd);
        Google__Protobuf__Timestamp ts = GOOGLE__PROTOBUF__TIMESTAMP__INIT;
        uint64_t now = now_usec();
        ts.seconds = (int64_t) (now / 1000000);
        ts.nanos = (int32_t) (now % 1000000) * 1000;
        Containerd__Task__V2__DeleteResponse resp = CONTAINERD__TASK__V2__DELETE_RESPONSE__INIT;
        resp.exit_status = 128 + SIGKILL;
        resp.exited_at = &ts;
        size_t n = containerd__task__v2__delete_response__get_packed_size(&resp);
        _cleanup_free_ uint8_t *buf = malloc(n ? n : 1);
        if (!buf)
                return die("delete", NULL);
        containerd__task__v2__delete_response__pack(&resp, buf);
        return write_all(STDOUT_FILENO, buf, n) < 0 ? 1 : 0;
}

int main(int argc, char **argv) {
        ShimOptions o = {};
        warn_set_handler(warn_to_stderr);
        int r = parse_options(argc, argv, &o);
        if (r >= 0)
                return r;
        if (!o.verb) {
                fprintf(stderr, "%s: which? start or delete (containerd runs it; see --help)\n", program);
                return 2;
        }
        if (!o.id || !*o.id) {
                fprintf(stderr, "%s %s: the task's -id is missing\n", program, o.verb);
                return 2;
        }
        if (streq(o.verb, "start"))
                return verb_start(&o);
        if (streq(o.verb, "delete"))
                return verb_delete(&o);
        fprintf(stderr, "%s: unknown command \"%s\" (start or delete)\n", program, o.verb);
        return 2;
}
