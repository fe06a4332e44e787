/* SPDX-License-Identifier: Apache-2.0 */
/* The pod life-cycle of seed 000: states, transitions, gc, rm, waiting, and
 * the races between them, each made with real processes, many times. No
 * privileges needed. */
#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>

#include "basic/fs.h"
#include "basic/strv.h"
#include "basic/time-util.h"
#include "basic/warn.h"
#include "manifest/pod-manifest.h"
#include "pod/pod-info.h"
#include "pod/pod.h"
#include "tests.h"

static char scratch[] = "/tmp/test-pod-store-XXXXXX";
static unsigned n_stores;
static char **warnings;

static void record_warning(const char *message) {
        strv_push(&warnings, message);
}

static bool warned_about(const char *needle) {
        for (char **w = warnings; w && *w; w++)
                if (strstr(*w, needle))
                        return true;
        return false;
}

static void forget_warnings(void) {
        strv_free(warnings);
        warnings = NULL;
}

/* A fresh data directory for each test. */
static PodStore *new_store(void) {
        char path[256];
        snprintf(path, sizeof(path), "%s/data%u", scratch, n_stores++);
        ASSERT(mkdir(path, 0755) == 0);
        PodStore *s = NULL;
        ASSERT_EQ_INT(pod_store_open(path, false, false, &s, NULL), 0);
        return s;
}

static unsigned count_entries(PodStore *s, PodDir d) {
        int fd = openat(s->dir_fds[d], ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        ASSERT(fd >= 0);
        DIR *dir = fdopendir(fd);
        ASSERT(dir);
        unsigned n = 0;
        struct dirent *de;
        while ((de = readdir(dir)))
                if (!streq(de->d_name, ".") && !streq(de->d_name, ".."))
                        n++;
        closedir(dir);
        return n;
}

static bool exists_in(PodStore *s, PodDir d, const char *name) {
        return faccessat(s->dir_fds[d], name, F_OK, AT_SYMLINK_NOFOLLOW) == 0;
}

/* Another process's view of the pod (own fd, so its probes conflict with
 * locks this process holds through a Pod). */
static PodState state_of(PodStore *s, const char *uuid) {
        Pod *p = NULL;
        ASSERT_EQ_INT(pod_lookup(s, uuid, &p, NULL), 0);
        PodState st = p->state;
        pod_free(p);
        return st;
}

static void make_prepared(PodStore *s, char uuid[UUID_STRING_MAX]) {
        Pod *p = NULL;
        ASSERT_EQ_INT(pod_create(s, &p, NULL), 0);
        ASSERT_EQ_INT(pod_finish_prepare(s, p, POD_DIR_PREPARED, NULL), 0);
        snprintf(uuid, UUID_STRING_MAX, "%s", p->uuid);
        pod_free(p);
}

static void make_exited(PodStore *s, char uuid[UUID_STRING_MAX]) {
        Pod *p = NULL;
        ASSERT_EQ_INT(pod_create(s, &p, NULL), 0);
        ASSERT_EQ_INT(pod_finish_prepare(s, p, POD_DIR_RUN, NULL), 0);
        snprintf(uuid, UUID_STRING_MAX, "%s", p->uuid);
        pod_free(p); /* the "pod process" exits: the kernel drops the lock */
}

static void make_failed(PodStore *s, char uuid[UUID_STRING_MAX]) {
        Pod *p = NULL;
        ASSERT_EQ_INT(pod_create(s, &p, NULL), 0);
        snprintf(uuid, UUID_STRING_MAX, "%s", p->uuid);
        pod_free(p); /* the preparer dies half-way */
}

static const PodGcOptions gc_now = { .grace_usec = 0, .embryo_age_usec = UINT64_MAX };

typedef struct Seen {
        char uuids[64][UUID_STRING_MAX];
        size_t n;
        int max_open_fds;
} Seen;

static int count_open_fds(void) {
        DIR *d = opendir("/proc/self/fd");
        ASSERT(d);
        int n = 0;
        while (readdir(d))
                n++;
        closedir(d);
        return n;
}

static int see_pod(PodStore *s, Pod *p, void *userdata) {
        Seen *seen = userdata;
        ASSERT(seen->n < 64);
        ASSERT(p->fd >= 0);
        snprintf(seen->uuids[seen->n++], UUID_STRING_MAX, "%s", p->uuid);
        int fds = count_open_fds();
        if (fds > seen->max_open_fds)
                seen->max_open_fds = fds;
        return 0;
}

static void seen_done(Seen *seen) {
        *seen = (Seen) {};
}

static void test_states(void) {
        PodStore *s = new_store();
        Pod *p = NULL;
        ASSERT_EQ_INT(pod_create(s, &p, NULL), 0);
        ASSERT(uuid_is_valid(p->uuid));
        ASSERT(p->uuid[14] == '4');
        ASSERT_EQ_INT(p->state, POD_STATE_PREPARING);
        ASSERT_EQ_INT(count_entries(s, POD_DIR_EMBRYO), 0);
        ASSERT_EQ_INT(state_of(s, p->uuid), POD_STATE_PREPARING);
        char uuid[UUID_STRING_MAX];
        snprintf(uuid, sizeof(uuid), "%s", p->uuid);

        ASSERT_EQ_INT(pod_finish_prepare(s, p, POD_DIR_PREPARED, NULL), 0);
        ASSERT(exists_in(s, POD_DIR_PREPARED, uuid) && !exists_in(s, POD_DIR_PREPARE, uuid));
        ASSERT_EQ_INT(state_of(s, uuid), POD_STATE_PREPARED);
        pod_free(p);
        ASSERT_EQ_INT(state_of(s, uuid), POD_STATE_PREPARED);
        ASSERT_EQ_INT(faccessat(s->dir_fds[POD_DIR_PREPARED], "started", F_OK, 0), -1);

        p = NULL;
        ASSERT_EQ_INT(pod_start_prepared(s, uuid, &p, NULL), 0);
        ASSERT_EQ_INT(p->dir, POD_DIR_RUN);
        ASSERT_EQ_INT(state_of(s, uuid), POD_STATE_RUNNING);
        PodInfo info;
        ASSERT_EQ_INT(pod_info_read(p, true, &info), 0);
        ASSERT(info.started_usec > 0 && info.started_usec <= now_usec());
        ASSERT(!info.manifest && !info.manifest_error); /* none written: absent, not broken */
        pod_info_done(&info);

        /* A second start loses and says why. */
        Error *e = NULL;
        Pod *q = NULL;
        ASSERT_EQ_INT(pod_start_prepared(s, uuid, &q, &e), -EALREADY);
        ASSERT_CONTAINS(e->msg, "already started");
        error_free(e);

        pod_free(p);
        ASSERT_EQ_INT(state_of(s, uuid), POD_STATE_EXITED);

        /* A preparer that dies leaves prepare-failed. */
        make_failed(s, uuid);
        ASSERT_EQ_INT(state_of(s, uuid), POD_STATE_PREPARE_FAILED);

        for (PodState st = 0; st < _POD_STATE_MAX; st++)
                ASSERT(pod_state_to_string(st));
        ASSERT_STREQ(pod_state_to_string(POD_STATE_EXITED_GC_MARKED), "exited+gc-marked");
        ASSERT_STREQ(pod_dir_to_string(POD_DIR_EXITED_GARBAGE), "exited-garbage");
        pod_store_free(s);
}

static void test_open_errors(void) {
        Error *e = NULL;
        PodStore *s = NULL;
        char path[300];
        snprintf(path, sizeof(path), "%s/does-not-exist", scratch);
        ASSERT_EQ_INT(pod_store_open(path, false, false, &s, &e), -ENOENT);
        ASSERT_CONTAINS(e->msg, path);
        error_free(e);
        /* Created on demand when asked (the default data directory). */
        ASSERT_EQ_INT(pod_store_open(path, true, false, &s, NULL), 0);
        for (PodDir d = 0; d < _POD_DIR_MAX; d++)
                ASSERT(s->dir_fds[d] >= 0);
        pod_store_free(s);
}

static void test_lookup(void) {
        PodStore *s = new_store();
        Error *e = NULL;
        Pod *p = NULL;
        const char *invalid[] = { "", "XYZ", "0123456-", "ABCDEF12", "0123456789", "../run" };
        for (size_t i = 0; i < ELEMENTSOF(invalid); i++) {
                ASSERT_EQ_INT(pod_lookup(s, invalid[i], &p, &e), -EINVAL);
                ASSERT_CONTAINS(e->msg, "not a pod UUID");
                error_free(e);
                e = NULL;
        }
        ASSERT_EQ_INT(pod_lookup(s, "01234567-89ab-4def-8123-456789abcdef", &p, &e), -ENOENT);
        ASSERT_CONTAINS(e->msg, "01234567-89ab-4def-8123-456789abcdef");
        error_free(e);
        e = NULL;

        /* 17 pods: by the pigeonhole principle two share a first digit. */
        char uuids[17][UUID_STRING_MAX];
        for (size_t i = 0; i < 17; i++)
                make_prepared(s, uuids[i]);
        char shared[2] = {};
        for (size_t i = 0; i < 17 && !shared[0]; i++)
                for (size_t j = i + 1; j < 17; j++)
                        if (uuids[i][0] == uuids[j][0])
                                shared[0] = uuids[i][0];
        ASSERT_EQ_INT(pod_lookup(s, shared, &p, &e), -ENOTUNIQ);
        ASSERT_CONTAINS(e->msg, "ambiguous");
        error_free(e);
        e = NULL;
        for (size_t i = 0; i < 17; i++) {
                char prefix[14];
                snprintf(prefix, sizeof(prefix), "%.13s", uuids[i]);
                ASSERT_EQ_INT(pod_lookup(s, prefix, &p, NULL), 0);
                ASSERT_STREQ(p->uuid, uuids[i]);
                pod_free(p);
        }

        /* foreach: every pod once, sorted */
        Seen seen = {};
        ASSERT_EQ_INT(pod_foreach(s, see_pod, &seen, NULL), 0);
        ASSERT_EQ_INT(seen.n, 17);
        for (size_t i = 1; i < seen.n; i++)
                ASSERT(strcmp(seen.uuids[i - 1], seen.uuids[i]) < 0);
        /* One pod directory open at a time, however many pods. */
        ASSERT(seen.max_open_fds < count_open_fds() + 4);
        seen_done(&seen);
        pod_store_free(s);
}

static void test_gc(void) {
        PodStore *s = new_store();
        char exited[3][UUID_STRING_MAX], failed[2][UUID_STRING_MAX], prepared[2][UUID_STRING_MAX];
        for (size_t i = 0; i < 3; i++)
                make_exited(s, exited[i]);
        for (size_t i = 0; i < 2; i++) {
                make_failed(s, failed[i]);
                make_prepared(s, prepared[i]);
        }
        Pod *running = NULL, *preparing = NULL;
        ASSERT_EQ_INT(pod_create(s, &preparing, NULL), 0);
        char uuid[UUID_STRING_MAX];
        make_prepared(s, uuid);
        ASSERT_EQ_INT(pod_start_prepared(s, uuid, &running, NULL), 0);

        PodGcOptions o = gc_now;
        o.mark_only = true;
        PodGcStats st;
        ASSERT_EQ_INT(pod_gc(s, &o, &st, NULL), 0);
        ASSERT_EQ_INT(st.marked_exited, 3);
        ASSERT_EQ_INT(st.marked_failed, 2);
        ASSERT_EQ_INT(st.removed, 0);
        for (size_t i = 0; i < 3; i++)
                ASSERT_EQ_INT(state_of(s, exited[i]), POD_STATE_EXITED_GC_MARKED);
        for (size_t i = 0; i < 2; i++)
                ASSERT_EQ_INT(state_of(s, failed[i]), POD_STATE_PREPARE_FAILED_GC_MARKED);

        /* Within the grace period: only garbage goes. */
        o = gc_now;
        o.grace_usec = 3600 * USEC_PER_SEC;
        ASSERT_EQ_INT(pod_gc(s, &o, &st, NULL), 0);
        ASSERT_EQ_INT(st.removed, 2);
        ASSERT_EQ_INT(count_entries(s, POD_DIR_GARBAGE), 0);
        ASSERT_EQ_INT(count_entries(s, POD_DIR_EXITED_GARBAGE), 3);

        ASSERT_EQ_INT(pod_gc(s, &gc_now, &st, NULL), 0);
        ASSERT_EQ_INT(st.removed, 3);
        ASSERT_EQ_INT(st.failed, 0);
        ASSERT_EQ_INT(count_entries(s, POD_DIR_EXITED_GARBAGE), 0);
        /* Untouched: running, preparing, prepared (expiry off). */
        ASSERT_EQ_INT(state_of(s, uuid), POD_STATE_RUNNING);
        ASSERT_EQ_INT(state_of(s, preparing->uuid), POD_STATE_PREPARING);
        ASSERT_EQ_INT(count_entries(s, POD_DIR_PREPARED), 2);

        /* Expired prepared pods go; a prepared pod being started stays. */
        usleep(2000);
        Pod *starting = NULL;
        ASSERT_EQ_INT(pod_lookup(s, prepared[1], &starting, NULL), 0);
        ASSERT(flock(starting->fd, LOCK_EX | LOCK_NB) == 0);
        o = gc_now;
        o.expire_prepared_usec = 1000;
        ASSERT_EQ_INT(pod_gc(s, &o, &st, NULL), 0);
        ASSERT_EQ_INT(st.expired_prepared, 1);
        ASSERT_EQ_INT(st.busy, 1);
        ASSERT_EQ_INT(st.removed, 1);
        ASSERT(!exists_in(s, POD_DIR_PREPARED, prepared[0]));
        ASSERT(exists_in(s, POD_DIR_PREPARED, prepared[1]));
        pod_free(starting);

        /* An embryo whose creator died before the rename, while another
         * creator is between its mkdir and its lock (it holds embryo/
         * shared, through a descriptor of its own): only its age can tell
         * it from that creator's. */
        const char *embryo = "01234567-89ab-4def-8123-456789abcdef";
        ASSERT(mkdirat(s->dir_fds[POD_DIR_EMBRYO], embryo, 0700) == 0);
        int creating = openat(s->dir_fds[POD_DIR_EMBRYO], ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        ASSERT(creating >= 0 && flock(creating, LOCK_SH | LOCK_NB) == 0);
        ASSERT_EQ_INT(pod_gc(s, &gc_now, &st, NULL), 0);
        ASSERT_EQ_INT(count_entries(s, POD_DIR_EMBRYO), 1);
        o = gc_now;
        o.embryo_age_usec = 0;
        ASSERT_EQ_INT(pod_gc(s, &o, &st, NULL), 0);
        ASSERT_EQ_INT(count_entries(s, POD_DIR_EMBRYO), 0);
        ASSERT_EQ_INT(count_entries(s, POD_DIR_GARBAGE), 0);
        /* Nobody creating: a dead embryo goes at once, whatever its age;
         * a locked one (its creator lives) stays. */
        ASSERT(mkdirat(s->dir_fds[POD_DIR_EMBRYO], embryo, 0700) == 0);
        ASSERT(flock(creating, LOCK_UN) == 0);
        close(creating);
        int alive = openat(s->dir_fds[POD_DIR_EMBRYO], embryo, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        ASSERT(alive >= 0 && flock(alive, LOCK_EX | LOCK_NB) == 0);
        o.embryo_age_usec = 0;
        ASSERT_EQ_INT(pod_gc(s, &o, &st, NULL), 0);
        ASSERT_EQ_INT(count_entries(s, POD_DIR_EMBRYO), 1);
        close(alive);
        ASSERT_EQ_INT(pod_gc(s, &gc_now, &st, NULL), 0);
        ASSERT_EQ_INT(count_entries(s, POD_DIR_EMBRYO), 0);
        ASSERT_EQ_INT(count_entries(s, POD_DIR_GARBAGE), 0);

        pod_free(running);
        pod_free(preparing);
        ASSERT_EQ_INT(pod_gc(s, &gc_now, &st, NULL), 0);
        ASSERT_EQ_INT(st.marked_exited + st.marked_failed, 2);
        for (PodDir d = 0; d < _POD_DIR_MAX; d++)
                ASSERT_EQ_INT(count_entries(s, d), d == POD_DIR_PREPARED ? 1 : 0);
        pod_store_free(s);
}

static void test_stray_entries(void) {
        PodStore *s = new_store();
        char uuid[UUID_STRING_MAX], target[300];
        make_exited(s, uuid);
        snprintf(target, sizeof(target), "%s/precious", scratch);
        ASSERT(mkdir(target, 0755) == 0);
        int fd = openat(s->dir_fds[POD_DIR_RUN], "notapod", O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
        ASSERT(fd >= 0);
        close(fd);
        ASSERT(symlinkat(target, s->dir_fds[POD_DIR_RUN], "11111111-1111-4111-8111-111111111111") == 0);
        ASSERT(symlinkat(target, s->dir_fds[POD_DIR_EXITED_GARBAGE], "22222222-2222-4222-8222-222222222222") == 0);
        ASSERT(mkdirat(s->dir_fds[POD_DIR_PREPARED], "junk", 0755) == 0);

        forget_warnings();
        Seen seen = {};
        ASSERT_EQ_INT(pod_foreach(s, see_pod, &seen, NULL), 0);
        ASSERT_EQ_INT(seen.n, 1);
        ASSERT_STREQ(seen.uuids[0], uuid);
        seen_done(&seen);
        ASSERT(warned_about("run/notapod is not a pod directory"));
        ASSERT(warned_about("run/11111111-1111-4111-8111-111111111111 is not a pod"));
        ASSERT(warned_about("prepared/junk"));

        Pod *p = NULL;
        ASSERT_EQ_INT(pod_lookup(s, "11111111-1111-4111-8111-111111111111", &p, NULL), -ENOENT);
        PodGcStats st;
        ASSERT_EQ_INT(pod_gc(s, &gc_now, &st, NULL), 0);
        ASSERT_EQ_INT(st.removed, 1);
        ASSERT_EQ_INT(st.failed, 0);
        /* Nothing that is not a pod was touched. */
        ASSERT(exists_in(s, POD_DIR_RUN, "notapod"));
        ASSERT(exists_in(s, POD_DIR_RUN, "11111111-1111-4111-8111-111111111111"));
        ASSERT(exists_in(s, POD_DIR_EXITED_GARBAGE, "22222222-2222-4222-8222-222222222222"));
        ASSERT(exists_in(s, POD_DIR_PREPARED, "junk"));
        ASSERT(access(target, F_OK) == 0);
        forget_warnings();
        pod_store_free(s);
}

static void test_rm(void) {
        PodStore *s = new_store();
        char uuid[UUID_STRING_MAX];
        void (*makers[])(PodStore *, char *) = { make_prepared, make_exited, make_failed };
        for (size_t i = 0; i < ELEMENTSOF(makers); i++) {
                makers[i](s, uuid);
                Pod *p = NULL;
                ASSERT_EQ_INT(pod_lookup(s, uuid, &p, NULL), 0);
                ASSERT_EQ_INT(pod_remove(s, p, NULL), 0);
                pod_free(p);
                Error *e = NULL;
                ASSERT_EQ_INT(pod_lookup(s, uuid, &p, &e), -ENOENT);
                error_free(e);
        }
        /* marked for gc */
        make_exited(s, uuid);
        PodGcOptions o = gc_now;
        o.mark_only = true;
        ASSERT_EQ_INT(pod_gc(s, &o, NULL, NULL), 0);
        Pod *p = NULL;
        ASSERT_EQ_INT(pod_lookup(s, uuid, &p, NULL), 0);
        ASSERT_EQ_INT(p->state, POD_STATE_EXITED_GC_MARKED);
        ASSERT_EQ_INT(pod_remove(s, p, NULL), 0);
        pod_free(p);

        /* refused: running, preparing */
        Pod *running = NULL, *preparing = NULL;
        make_prepared(s, uuid);
        ASSERT_EQ_INT(pod_start_prepared(s, uuid, &running, NULL), 0);
        ASSERT_EQ_INT(pod_create(s, &preparing, NULL), 0);
        Pod *targets[] = { running, preparing };
        const char *why[] = { "is running", "is being prepared" };
        for (size_t i = 0; i < 2; i++) {
                Error *e = NULL;
                ASSERT_EQ_INT(pod_lookup(s, targets[i]->uuid, &p, NULL), 0);
                ASSERT_EQ_INT(pod_remove(s, p, &e), -EBUSY);
                ASSERT_CONTAINS(e->msg, why[i]);
                error_free(e);
                pod_free(p);
        }
        /* A reader's shared probe does not make an exited pod look running. */
        pod_free(running);
        ASSERT_EQ_INT(pod_lookup(s, uuid, &p, NULL), 0);
        int reader = openat(s->dir_fds[POD_DIR_RUN], uuid, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        ASSERT(reader >= 0 && flock(reader, LOCK_SH) == 0);
        pid_t child = fork();
        ASSERT(child >= 0);
        if (child == 0) {
                usleep(100 * 1000); /* holds the reader's lock a while */
                _exit(0);
        }
        close(reader); /* the child's copy keeps the lock until it exits */
        ASSERT_EQ_INT(pod_remove(s, p, NULL), 0);
        pod_free(p);
        waitpid(child, NULL, 0);
        pod_free(preparing);
        pod_store_free(s);
}

/* ---- races between processes ---- */

/* Children wait at a barrier so that they really start together. */
typedef struct Barrier {
        int fds[2];
} Barrier;

static void barrier_init(Barrier *b) {
        ASSERT(pipe2(b->fds, O_CLOEXEC) == 0);
}

static void barrier_wait(Barrier *b) {
        char c;
        close(b->fds[1]);
        while (read(b->fds[0], &c, 1) < 0 && errno == EINTR)
                ;
}

static void barrier_release(Barrier *b) {
        close(b->fds[0]);
        close(b->fds[1]); /* EOF wakes every waiter at once */
}

static int wait_child(pid_t pid) {
        int status;
        ASSERT(waitpid(pid, &status, 0) == pid);
        ASSERT(WIFEXITED(status));
        return WEXITSTATUS(status);
}

enum { CHILD_WON = 10, CHILD_LOST_ALREADY, CHILD_LOST_BUSY, CHILD_BAD };

static void test_race_start(void) {
        PodStore *s = new_store();
        unsigned already = 0, busy = 0;
        for (int round = 0; round < 100; round++) {
                char uuid[UUID_STRING_MAX];
                make_prepared(s, uuid);
                Barrier b;
                barrier_init(&b);
                pid_t pids[2];
                for (int i = 0; i < 2; i++) {
                        ASSERT((pids[i] = fork()) >= 0);
                        if (pids[i] == 0) {
                                test_cleanup = NULL;
                                barrier_wait(&b);
                                Pod *p = NULL;
                                Error *e = NULL;
                                int r = pod_start_prepared(s, uuid, &p, &e);
                                if (r == 0)
                                        _exit(CHILD_WON); /* exits: the pod exits */
                                if (r == -EALREADY && strstr(e->msg, "already started"))
                                        _exit(CHILD_LOST_ALREADY);
                                if (r == -EBUSY && strstr(e->msg, "being started"))
                                        _exit(CHILD_LOST_BUSY);
                                fprintf(stderr, "start race: %d %s\n", r, e ? e->msg : "");
                                _exit(CHILD_BAD);
                        }
                }
                barrier_release(&b);
                int a = wait_child(pids[0]), c = wait_child(pids[1]);
                ASSERT((a == CHILD_WON) != (c == CHILD_WON)); /* exactly one */
                int loser = a == CHILD_WON ? c : a;
                ASSERT(loser == CHILD_LOST_ALREADY || loser == CHILD_LOST_BUSY);
                already += loser == CHILD_LOST_ALREADY;
                busy += loser == CHILD_LOST_BUSY;
                ASSERT_EQ_INT(state_of(s, uuid), POD_STATE_EXITED);
        }
        fprintf(stderr, "   losers: %u already started, %u busy\n", already, busy);
        ASSERT_EQ_INT(count_entries(s, POD_DIR_PREPARED), 0);
        ASSERT_EQ_INT(count_entries(s, POD_DIR_RUN), 100);
        pod_store_free(s);
}

/* Runs gc in a child; its stats come back through a pipe. */
static pid_t fork_gc(PodStore *s, Barrier *b, int result_fd) {
        pid_t pid = fork();
        ASSERT(pid >= 0);
        if (pid == 0) {
                test_cleanup = NULL;
                barrier_wait(b);
                PodGcStats st = {};
                Error *e = NULL;
                int r = pod_gc(s, &gc_now, &st, &e);
                if (r < 0)
                        fprintf(stderr, "gc: %s\n", e->msg);
                _exit(r < 0 || write(result_fd, &st, sizeof(st)) != sizeof(st) ? CHILD_BAD : 0);
        }
        return pid;
}

static void test_race_gc_gc(void) {
        PodStore *s = new_store();
        for (int round = 0; round < 30; round++) {
                char uuid[UUID_STRING_MAX];
                for (int i = 0; i < 10; i++)
                        make_exited(s, uuid);
                for (int i = 0; i < 3; i++)
                        make_failed(s, uuid);
                Barrier b;
                barrier_init(&b);
                int results[2];
                ASSERT(pipe2(results, O_CLOEXEC) == 0);
                pid_t a = fork_gc(s, &b, results[1]), c = fork_gc(s, &b, results[1]);
                barrier_release(&b);
                ASSERT_EQ_INT(wait_child(a), 0);
                ASSERT_EQ_INT(wait_child(c), 0);
                PodGcStats x, y;
                ASSERT(read(results[0], &x, sizeof(x)) == sizeof(x) && read(results[0], &y, sizeof(y)) == sizeof(y));
                close(results[0]);
                close(results[1]);
                /* Each pod was marked and removed exactly once, by one of them. */
                ASSERT_EQ_INT(x.marked_exited + y.marked_exited, 10);
                ASSERT_EQ_INT(x.marked_failed + y.marked_failed, 3);
                ASSERT_EQ_INT(x.failed + y.failed, 0);
                ASSERT_EQ_INT(x.removed + y.removed, 13);
                for (PodDir d = 0; d < _POD_DIR_MAX; d++)
                        ASSERT_EQ_INT(count_entries(s, d), 0);
        }
        pod_store_free(s);
}

static void test_race_gc_status(void) {
        PodStore *s = new_store();
        for (int round = 0; round < 20; round++) {
                char uuids[20][UUID_STRING_MAX];
                for (int i = 0; i < 20; i++)
                        make_exited(s, uuids[i]);
                Barrier b;
                barrier_init(&b);
                int results[2];
                ASSERT(pipe2(results, O_CLOEXEC) == 0);
                pid_t reader = fork();
                ASSERT(reader >= 0);
                if (reader == 0) {
                        test_cleanup = NULL;
                        barrier_wait(&b);
                        for (int k = 0; k < 10; k++)
                                for (int i = 0; i < 20; i++) {
                                        Pod *p = NULL;
                                        Error *e = NULL;
                                        int r = pod_lookup(s, uuids[i], &p, &e);
                                        PodInfo info;
                                        if (r == 0 && pod_info_read(p, true, &info) == 0)
                                                pod_info_done(&info);
                                        if (r == 0 && p->state != POD_STATE_EXITED && p->state != POD_STATE_EXITED_GC_MARKED &&
                                            p->state != POD_STATE_EXITED_DELETING)
                                                _exit(CHILD_BAD);
                                        pod_free(p);
                                        error_free(e);
                                        if (r < 0 && r != -ENOENT)
                                                _exit(CHILD_BAD);
                                }
                        _exit(0);
                }
                pid_t gc = fork_gc(s, &b, results[1]);
                barrier_release(&b);
                ASSERT_EQ_INT(wait_child(reader), 0);
                ASSERT_EQ_INT(wait_child(gc), 0);
                PodGcStats x;
                ASSERT(read(results[0], &x, sizeof(x)) == sizeof(x));
                close(results[0]);
                close(results[1]);
                ASSERT_EQ_INT(x.failed, 0);
                ASSERT_EQ_INT(x.marked_exited, 20);
                /* Pods a status held at the sweep are left for the next gc. */
                ASSERT_EQ_INT(x.removed + x.busy, 20);
                PodGcStats z;
                ASSERT_EQ_INT(pod_gc(s, &gc_now, &z, NULL), 0);
                ASSERT_EQ_INT(z.removed, x.busy);
                for (PodDir d = 0; d < _POD_DIR_MAX; d++)
                        ASSERT_EQ_INT(count_entries(s, d), 0);
        }
        pod_store_free(s);
}

static void test_race_rm_gc(void) {
        PodStore *s = new_store();
        for (int round = 0; round < 20; round++) {
                char uuids[10][UUID_STRING_MAX];
                for (int i = 0; i < 10; i++)
                        (i % 2 ? make_exited : make_prepared)(s, uuids[i]);
                Barrier b;
                barrier_init(&b);
                int results[2];
                ASSERT(pipe2(results, O_CLOEXEC) == 0);
                pid_t rm = fork();
                ASSERT(rm >= 0);
                if (rm == 0) {
                        test_cleanup = NULL;
                        barrier_wait(&b);
                        for (int i = 0; i < 10; i++) {
                                Pod *p = NULL;
                                Error *e = NULL;
                                int r = pod_lookup(s, uuids[i], &p, &e);
                                if (r == 0)
                                        r = pod_remove(s, p, &e);
                                if (r < 0 && r != -ENOENT && r != -EBUSY) {
                                        fprintf(stderr, "rm: %s\n", e->msg);
                                        _exit(CHILD_BAD);
                                }
                                pod_free(p);
                                error_free(e);
                        }
                        _exit(0);
                }
                pid_t gc = fork_gc(s, &b, results[1]);
                barrier_release(&b);
                ASSERT_EQ_INT(wait_child(rm), 0);
                ASSERT_EQ_INT(wait_child(gc), 0);
                close(results[0]);
                close(results[1]);
                /* What one left busy, the other removed or the next gc does. */
                ASSERT_EQ_INT(pod_gc(s, &gc_now, NULL, NULL), 0);
                for (int i = 0; i < 10; i++)
                        if (exists_in(s, POD_DIR_PREPARED, uuids[i])) {
                                Pod *p = NULL;
                                ASSERT_EQ_INT(pod_lookup(s, uuids[i], &p, NULL), 0);
                                ASSERT_EQ_INT(pod_remove(s, p, NULL), 0);
                                pod_free(p);
                        }
                for (PodDir d = 0; d < _POD_DIR_MAX; d++)
                        ASSERT_EQ_INT(count_entries(s, d), 0);
        }
        pod_store_free(s);
}

/* ---- waiting ---- */

static uint64_t mono_usec(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * USEC_PER_SEC + (uint64_t) ts.tv_nsec / 1000;
}

/* A child that starts the prepared pod after start_ms, keeps it running
 * for run_ms, and exits. */
static pid_t fork_runner(PodStore *s, const char *uuid, unsigned start_ms, unsigned run_ms, Barrier *started) {
        pid_t pid = fork();
        ASSERT(pid >= 0);
        if (pid == 0) {
                test_cleanup = NULL;
                usleep(start_ms * 1000);
                Pod *p = NULL;
                if (pod_start_prepared(s, uuid, &p, NULL) < 0)
                        _exit(CHILD_BAD);
                if (started)
                        close(started->fds[1]);
                usleep(run_ms * 1000);
                _exit(0);
        }
        return pid;
}

static void test_wait(void) {
        PodStore *s = new_store();
        char uuid[UUID_STRING_MAX];

        /* running -> exited: wakes when the holder dies */
        make_prepared(s, uuid);
        Barrier started;
        barrier_init(&started);
        pid_t pid = fork_runner(s, uuid, 0, 300, &started);
        barrier_wait(&started);
        close(started.fds[0]);
        Pod *p = NULL;
        ASSERT_EQ_INT(pod_lookup(s, uuid, &p, NULL), 0);
        ASSERT_EQ_INT(p->state, POD_STATE_RUNNING);
        uint64_t t0 = mono_usec();
        ASSERT_EQ_INT(pod_wait(s, p, 10 * USEC_PER_SEC, NULL), 0);
        uint64_t waited = mono_usec() - t0;
        ASSERT_EQ_INT(p->state, POD_STATE_EXITED);
        ASSERT(waited >= 150 * 1000 && waited < 5 * USEC_PER_SEC);
        ASSERT_EQ_INT(wait_child(pid), 0);
        pod_free(p);

        /* a timeout ends the wait; the pod is still running */
        make_prepared(s, uuid);
        barrier_init(&started);
        pid = fork_runner(s, uuid, 0, 3000, &started);
        barrier_wait(&started);
        close(started.fds[0]);
        ASSERT_EQ_INT(pod_lookup(s, uuid, &p, NULL), 0);
        Error *e = NULL;
        t0 = mono_usec();
        ASSERT_EQ_INT(pod_wait(s, p, 200 * 1000, &e), -ETIMEDOUT);
        waited = mono_usec() - t0;
        ASSERT(waited >= 190 * 1000 && waited < 2 * USEC_PER_SEC);
        ASSERT_CONTAINS(e->msg, "timed out");
        ASSERT_CONTAINS(e->msg, "running");
        error_free(e);
        ASSERT_EQ_INT(p->state, POD_STATE_RUNNING);
        pod_free(p);
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
        ASSERT_EQ_INT(state_of(s, uuid), POD_STATE_EXITED);

        /* prepared: waits through the start (a rename, seen by inotify)
         * and the run */
        make_prepared(s, uuid);
        ASSERT_EQ_INT(pod_lookup(s, uuid, &p, NULL), 0);
        pid = fork_runner(s, uuid, 150, 150, NULL);
        t0 = mono_usec();
        ASSERT_EQ_INT(pod_wait(s, p, 10 * USEC_PER_SEC, NULL), 0);
        waited = mono_usec() - t0;
        ASSERT_EQ_INT(p->state, POD_STATE_EXITED);
        ASSERT(waited >= 250 * 1000);
        ASSERT_EQ_INT(wait_child(pid), 0);
        pod_free(p);

        /* a pod that exited already: no wait */
        ASSERT_EQ_INT(pod_lookup(s, uuid, &p, NULL), 0);
        t0 = mono_usec();
        ASSERT_EQ_INT(pod_wait(s, p, 10 * USEC_PER_SEC, NULL), 0);
        ASSERT(mono_usec() - t0 < USEC_PER_SEC);
        pod_free(p);

        /* SIGALRM is restored */
        struct sigaction sa;
        ASSERT(sigaction(SIGALRM, NULL, &sa) == 0);
        ASSERT(sa.sa_handler == SIG_DFL);
        pod_store_free(s);
}

/* ---- deletion: the stage1 gc entrypoint ---- */

static void write_at(int dirfd, const char *path, const char *content, mode_t mode) {
        ASSERT_EQ_INT(write_file_atomic_at(dirfd, path, content, strlen(content), mode, NULL), 0);
}

#define STAGE1_MANIFEST_GC(image_annotation)                                                          \
        "{\"acKind\":\"ImageManifest\",\"acVersion\":\"0.8.11\",\"name\":\"sdpod/stage1\","        \
        "\"annotations\":[{\"name\":\"sdpod/stage1/gc\",\"value\":\"/sdpod/gc\"}" image_annotation "]}"

/* An exited pod of a stage1 image (STAGE1/manifest, STAGE1/rootfs) whose gc
 * entrypoint is script. */
static void make_exited_with_stage1(PodStore *s, const char *script, char uuid[UUID_STRING_MAX]) {
        char image[300], manifest[600];
        snprintf(image, sizeof(image), "%s/stage1-image", scratch);
        int dir = open(scratch, O_PATH | O_DIRECTORY | O_CLOEXEC);
        int fd = mkdir_p_in_root(dir, "stage1-image/rootfs/sdpod", 0755, false);
        ASSERT(dir >= 0 && fd >= 0);
        close(fd);
        write_at(dir, "stage1-image/manifest", STAGE1_MANIFEST_GC(""), 0644);
        write_at(dir, "stage1-image/rootfs/sdpod/gc", script, 0755);
        close(dir);
        Pod *p = NULL;
        ASSERT_EQ_INT(pod_create(s, &p, NULL), 0);
        snprintf(manifest, sizeof(manifest), STAGE1_MANIFEST_GC(",{\"name\":\"sdpod/stage1/image\",\"value\":\"%s\"}"),
                 image);
        fd = mkdir_p_in_root(p->fd, "stage1", 0755, false);
        ASSERT(fd >= 0);
        close(fd);
        write_at(p->fd, "stage1/manifest", manifest, 0644);
        ASSERT_EQ_INT(pod_finish_prepare(s, p, POD_DIR_RUN, NULL), 0);
        snprintf(uuid, UUID_STRING_MAX, "%s", p->uuid);
        pod_free(p);
}

/* What a hostile pod that could write its stage1 directory plants: a
 * manifest naming no image, and an entrypoint in its own root. */
static void make_exited_with_planted_stage1(PodStore *s, const char *script, char uuid[UUID_STRING_MAX]) {
        Pod *p = NULL;
        ASSERT_EQ_INT(pod_create(s, &p, NULL), 0);
        int fd = mkdir_p_in_root(p->fd, "stage1/rootfs/sdpod", 0755, false);
        ASSERT(fd >= 0);
        close(fd);
        write_at(p->fd, "stage1/manifest", STAGE1_MANIFEST_GC(""), 0644);
        write_at(p->fd, "stage1/rootfs/sdpod/gc", script, 0755);
        ASSERT_EQ_INT(pod_finish_prepare(s, p, POD_DIR_RUN, NULL), 0);
        snprintf(uuid, UUID_STRING_MAX, "%s", p->uuid);
        pod_free(p);
}

static void test_stage1_gc(void) {
        PodStore *s = new_store();
        char out[300], script[600], uuid[UUID_STRING_MAX], *got = NULL;
        snprintf(out, sizeof(out), "%s/gc-ran", scratch);
        snprintf(script, sizeof(script), "#!/bin/sh\necho \"$1 $PWD\" > '%s'\n", out);
        make_exited_with_stage1(s, script, uuid);
        PodGcStats st;
        forget_warnings();
        ASSERT_EQ_INT(pod_gc(s, &gc_now, &st, NULL), 0);
        ASSERT_EQ_INT(st.removed, 1);
        ASSERT_EQ_INT(read_file(out, 4096, &got, NULL, NULL), 0);
        char expected[600];
        snprintf(expected, sizeof(expected), "%s %s/pods/exited-garbage/%s\n", uuid, s->root, uuid);
        ASSERT_STREQ(got, expected);
        free(got);
        ASSERT(!warnings);

        /* A failing entrypoint is reported; the pod is deleted anyway. */
        make_exited_with_stage1(s, "#!/bin/sh\nexit 3\n", uuid);
        ASSERT_EQ_INT(pod_gc(s, &gc_now, &st, NULL), 0);
        ASSERT_EQ_INT(st.removed, 1);
        ASSERT(warned_about("/sdpod/gc failed with exit status 3"));
        ASSERT(warned_about(uuid));
        ASSERT_EQ_INT(count_entries(s, POD_DIR_EXITED_GARBAGE), 0);
        forget_warnings();

        /* The pod's own stage1/rootfs is never a place entrypoints come
         * from: the planted one does not run, the pod is deleted. */
        ASSERT_EQ_INT(unlink(out), 0);
        make_exited_with_planted_stage1(s, script, uuid);
        ASSERT_EQ_INT(pod_gc(s, &gc_now, &st, NULL), 0);
        ASSERT_EQ_INT(st.removed, 1);
        ASSERT(access(out, F_OK) < 0 && errno == ENOENT);
        ASSERT(warned_about("stage1/manifest names no stage1 image"));
        ASSERT_EQ_INT(count_entries(s, POD_DIR_EXITED_GARBAGE), 0);
        forget_warnings();
        pod_store_free(s);
}

static void test_info(void) {
        PodStore *s = new_store();
        Pod *p = NULL;
        ASSERT_EQ_INT(pod_create(s, &p, NULL), 0);
        PodManifest *m = NULL;
        ASSERT_EQ_INT(pod_manifest_new(&m), 0);
        ASSERT_EQ_INT(pod_manifest_set_annotation(m, POD_ANNOTATION_CREATED, "2026-01-01T00:00:00.5Z", NULL), 0);
        ASSERT_EQ_INT(pod_manifest_set_annotation(m, POD_ANNOTATION_NAME, "web", NULL), 0);
        const char *apps[] = { "one", "two", "three" };
        for (size_t i = 0; i < ELEMENTSOF(apps); i++) {
                char *exec[] = { "/bin/true", NULL };
                PodAppSpec spec = {
                        .name = apps[i],
                        .image_id = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
                        .exec = exec,
                };
                ASSERT_EQ_INT(pod_manifest_add_app(m, &spec, NULL), 0);
        }
        ASSERT_EQ_INT(pod_manifest_write_at(p->fd, "pod", m, NULL), 0);
        int fd = mkdir_p_in_root(p->fd, POD_APP_STATUS_DIR, 0755, false);
        ASSERT(fd >= 0);
        write_at(fd, "one", "7\n", 0644);
        write_at(fd, "two", "garbage\n", 0644);
        /* three's record is reserved: nothing recorded yet; one's, of the
         * old kind, is left alone */
        ASSERT_EQ_INT(pod_app_records_reserve_at(fd, m, pod_manifest_find_app(m, "three"), NULL), 0);
        ASSERT_EQ_INT(pod_app_records_reserve_at(fd, m, pod_manifest_find_app(m, "one"), NULL), 0);
        struct stat st;
        ASSERT_EQ_INT(fstatat(fd, "three", &st, AT_SYMLINK_NOFOLLOW), 0);
        ASSERT_EQ_INT(st.st_size, 0);
        ASSERT(st.st_blocks > 0); /* its block is allocated */
        ASSERT_EQ_INT(fstatat(fd, "three" POD_APP_RESTARTS_SUFFIX, &st, AT_SYMLINK_NOFOLLOW), -1);
        pod_manifest_free(m);
        ASSERT_EQ_INT(pod_finish_prepare(s, p, POD_DIR_RUN, NULL), 0);

        forget_warnings();
        PodInfo info;
        ASSERT_EQ_INT(pod_info_read(p, true, &info), 0);
        ASSERT_STREQ(pod_info_name(&info), "web");
        ASSERT_EQ_INT(info.created_usec, 1767225600500000ULL);
        ASSERT(info.started_usec > info.created_usec);
        ASSERT_EQ_INT(info.n_apps, 1);
        ASSERT_STREQ(info.apps[0].name, "one");
        ASSERT_EQ_INT(info.apps[0].exit_status, 7);
        ASSERT(info.exited_usec > 0);
        ASSERT(warned_about("status/two: not an exit status"));
        pod_info_done(&info);

        /* written in place, in its block; shorter, then longer again */
        ASSERT_EQ_INT(pod_app_record_write_at(fd, "three", "12\n", NULL), 0);
        ASSERT_EQ_INT(pod_app_record_write_at(fd, "three", "1\n", NULL), 0);
        ASSERT_EQ_INT(pod_app_record_write_at(fd, "three", "143\n", NULL), 0);
        ASSERT_EQ_INT(fstatat(fd, "three", &st, AT_SYMLINK_NOFOLLOW), 0);
        ASSERT_EQ_INT(st.st_size, 4);
        ASSERT_EQ_INT(pod_info_read(p, true, &info), 0);
        ASSERT_EQ_INT(info.n_apps, 2);
        ASSERT_STREQ(info.apps[1].name, "three");
        ASSERT_EQ_INT(info.apps[1].exit_status, 143);
        pod_info_done(&info);
        /* not reserved: a new file */
        ASSERT_EQ_INT(pod_app_record_write_at(fd, "one" POD_APP_RESTARTS_SUFFIX, "2 1\n", NULL), 0);
        PodAppExit x = {};
        ASSERT_EQ_INT(pod_app_restarts_read_at(fd, "one", &x), 0);
        ASSERT_EQ_INT(x.restarts, 2);
        close(fd);

        /* a broken manifest is reported, not fatal */
        write_at(p->fd, "pod", "{not json", 0644);
        ASSERT_EQ_INT(pod_info_read(p, true, &info), 0);
        ASSERT(!info.manifest);
        ASSERT(info.manifest_error);
        pod_info_done(&info);

        /* image gc must not collect what a pod uses, so a pod whose
         * manifest cannot be read stops it */
        char **ids = NULL;
        Error *e = NULL;
        ASSERT_EQ_INT(pod_store_image_ids(s, &ids, &e), -EBADMSG);
        ASSERT_CONTAINS(e->msg, p->uuid);
        error_free(e);
        pod_free(p);
        forget_warnings();
        pod_store_free(s);
}

static void remove_scratch(void) {
        (void) rm_rf(scratch);
}

int main(void) {
        ASSERT(mkdtemp(scratch));
        test_cleanup = remove_scratch;
        warn_set_handler(record_warning);
        RUN(test_states);
        RUN(test_open_errors);
        RUN(test_lookup);
        RUN(test_gc);
        RUN(test_stray_entries);
        RUN(test_rm);
        RUN(test_race_start);
        RUN(test_race_gc_gc);
        RUN(test_race_gc_status);
        RUN(test_race_rm_gc);
        RUN(test_wait);
        RUN(test_stage1_gc);
        RUN(test_info);
        forget_warnings();
        ASSERT(rm_rf(scratch) == 0);
        return 0;
}
