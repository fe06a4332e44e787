/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* The pod store and the life-cycle of a pod on disk (seed 000).
 *
 * A pod is a directory DATA/pods/STATE/UUID. Its state is the directory it
 * is in, combined with whether a process holds an exclusive flock(2) on it:
 *
 *   directory         locked exclusively          unlocked
 *   embryo            -                           -
 *   prepare           preparing                   prepare-failed
 *   prepared          -                           -
 *   run               running                     exited
 *   exited-garbage    exited+deleting             exited+gc-marked
 *   garbage           prepare-failed+deleting     prepare-failed+gc-marked
 *
 * The lock is taken on the directory itself and held by the process whose
 * life the state describes (the preparer; the pod's systemd-nspawn), so
 * the kernel releases it the moment that process dies, however it dies.
 * Transitions are rename(2)s between the state directories, each followed
 * by an fsync of both. Every transition moves a pod forward in the order of
 * the table above (embryo -> prepare -> prepared -> run -> exited-garbage,
 * prepare/prepared -> garbage); lookups scan in that order, so a pod that
 * moves during a lookup is still found.
 *
 * Any state read here is a sample: it was true when the lock was probed
 * and may have changed since (a pod exits whenever it likes). Only a state
 * whose lock we hold ourselves is stable. Losing a race (another process
 * moved or deleted the pod first: ENOENT on rename) is normal and reported
 * as such, never as corruption. */

#include <stdbool.h>
#include <stdint.h>

#include "basic/error.h"
#include "basic/uuid.h"

typedef enum PodDir {
        POD_DIR_EMBRYO,
        POD_DIR_PREPARE,
        POD_DIR_PREPARED,
        POD_DIR_RUN,
        POD_DIR_EXITED_GARBAGE,
        POD_DIR_GARBAGE,
        _POD_DIR_MAX,
} PodDir;

typedef enum PodState {
        POD_STATE_EMBRYO,
        POD_STATE_PREPARING,
        POD_STATE_PREPARE_FAILED,
        POD_STATE_PREPARED,
        POD_STATE_RUNNING,
        POD_STATE_EXITED,
        POD_STATE_EXITED_DELETING,
        POD_STATE_EXITED_GC_MARKED,
        POD_STATE_PREPARE_FAILED_DELETING,
        POD_STATE_PREPARE_FAILED_GC_MARKED,
        _POD_STATE_MAX,
} PodState;

/* "embryo", "prepare", ... (the directory names) */
const char *pod_dir_to_string(PodDir d);
/* "preparing", "exited+gc-marked", ... (seed 000's names; stable: they
 * appear in `sdpod list --format=json`) */
const char *pod_state_to_string(PodState s);

typedef struct PodStore {
        char *root;                     /* the data directory, canonical */
        int pods_fd;                    /* DATA/pods */
        int dir_fds[_POD_DIR_MAX];      /* DATA/pods/STATE */
} PodStore;

/* Opens DATA/pods, creating it and its state directories. A data directory
 * that does not exist is an error unless create_root is set. read_only
 * creates nothing and does not ask for a writable data directory: for the
 * commands that only look (list, status, journal), which then work on a
 * read-only one too. */
int pod_store_open(const char *root, bool create_root, bool read_only, PodStore **ret, Error **err);
void pod_store_free(PodStore *s);
static inline void pod_store_freep(PodStore **s) { pod_store_free(*s); }
#define _cleanup_pod_store_ _cleanup_(pod_store_freep)

typedef struct Pod {
        char uuid[UUID_STRING_MAX];
        PodDir dir;             /* where it was found, or moved to by us */
        PodState state;         /* sampled; stable only while we hold the lock */
        int fd;                 /* the pod directory (follows it across renames) */
        int lock;               /* the flock we hold on fd: 0, LOCK_SH or LOCK_EX */
} Pod;

void pod_free(Pod *p);
static inline void pod_freep(Pod **p) { pod_free(*p); }
#define _cleanup_pod_ _cleanup_(pod_freep)

/* Absolute path of the pod's directory as it is now, for messages and for
 * what needs a path (mounts). Returns NULL on allocation failure. */
char *pod_path(const PodStore *s, const Pod *p);

/* Creates a pod: a new directory in embryo/, locked exclusively, then
 * renamed to prepare/. Returns it "preparing", with the lock held for as
 * long as the Pod lives. */
int pod_create(PodStore *s, Pod **ret, Error **err);

/* prepare -> prepared ("sdpod prepare") or prepare -> run ("sdpod run"),
 * with the lock held throughout. After PREPARED the caller drops the Pod
 * (and so the lock); after RUN it keeps the lock for the pod's life. */
int pod_finish_prepare(PodStore *s, Pod *p, PodDir target, Error **err);

/* prepared -> run: locks the pod exclusively *before* the rename, so two
 * processes starting one pod cannot both win. Returns the pod in run/, with
 * the lock held. The loser gets -EALREADY ("already started"), -EBUSY
 * (another process is starting or removing it right now) or -ENOENT (it
 * was removed), with a message that says which. Records the start time. */
int pod_start_prepared(PodStore *s, const char *uuid, Pod **ret, Error **err);

/* Finds a pod by UUID or by a unique prefix of one and samples its state.
 * Not a UUID: -EINVAL. No such pod: -ENOENT. Ambiguous: -ENOTUNIQ. */
int pod_lookup(PodStore *s, const char *ref, Pod **ret, Error **err);

/* Samples the state of p again, following it if it moved; -ENOENT when it
 * is gone. A state whose lock we hold is not probed. */
int pod_refresh(PodStore *s, Pod *p, Error **err);

/* Calls f for every pod, sorted by UUID, each once, with its directory open
 * and its state sampled. The Pod is freed when f returns: only one pod
 * directory is open at a time, however many pods there are. Entries of
 * the state directories that are not pods are reported with warn() and
 * skipped. A negative return of f stops the walk and is returned. */
typedef int (*PodFunc)(PodStore *s, Pod *p, void *userdata);
int pod_foreach(PodStore *s, PodFunc f, void *userdata, Error **err);

/* Blocks until the pod has exited: a preparing or prepared pod until it has
 * run and exited (or its preparation failed), a running pod until it
 * exits; a pod being deleted until it is gone (-ENOENT). Wakes on the
 * kernel's release of the lock (blocking flock) or on the rename that ends
 * a lock-less state (inotify), never by polling. timeout_usec 0 waits for
 * ever; on timeout -ETIMEDOUT. The end state is sampled into p. Uses
 * SIGALRM for the timeout while it waits. */
int pod_wait(PodStore *s, Pod *p, uint64_t timeout_usec, Error **err);

/* Runs cmd in an app of the running pod p through its stage1's enter
 * entrypoint, in place of this process (stage1_exec_enter(), whose
 * EnterFlags flags are). A pod that does not run: -ESRCH. Returns only on
 * failure. */
int pod_enter(Pod *p, const char *app, unsigned flags, char *const *cmd, Error **err);

/* Removes one pod now ("sdpod rm"): an exited, prepared or prepare-failed
 * pod, or one marked for gc. A running pod, or one being prepared, started
 * or deleted by another process, is refused with -EBUSY. */
int pod_remove(PodStore *s, Pod *p, Error **err);

typedef struct PodGcOptions {
        uint64_t grace_usec;            /* exited pods dwell this long after marking */
        uint64_t expire_prepared_usec;  /* prepared pods older than this are collected; 0: never */
        uint64_t embryo_age_usec;       /* unlocked embryos older than this are removed even while
                                         * a creator works (else at once: pod_gc()) */
        bool mark_only;                 /* only the mark pass */
} PodGcOptions;

typedef struct PodGcStats {
        unsigned marked_exited;         /* run -> exited-garbage */
        unsigned marked_failed;         /* prepare -> garbage */
        unsigned expired_prepared;      /* prepared -> garbage */
        unsigned removed;               /* swept */
        unsigned busy;                  /* skipped: locked by another process */
        unsigned failed;                /* could not be removed (warned) */
} PodGcStats;

/* Garbage collection, mark and sweep as seed 000 describes it. Mark:
 * exited pods (a shared lock on run/UUID succeeds) move to exited-garbage,
 * failed prepares (same in prepare/) and expired prepared pods move to
 * garbage. Sweep: garbage at once, exited-garbage when its change time (the
 * mark) is older than the grace period; each under an exclusive lock taken
 * without waiting (a pod that is busy is left for the next run). Deleting a
 * pod runs its stage1 gc entrypoint, unmounts everything below it and only
 * then removes the directory; a gc entrypoint killed by a signal leaves the
 * pod for the next gc. An embryo whose creator died (not locked) is moved
 * to garbage at once when no creator is between its mkdir and its lock,
 * else once it is older than embryo_age_usec. Problems with single pods are
 * warned about and counted; they do not stop the collection. */
int pod_gc(PodStore *s, const PodGcOptions *o, PodGcStats *ret, Error **err);
