/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/* Crash injection for tests (tests/integration/test-crash-points.sh): a
 * crash point is a step of an operation on the pod store between two of its
 * effects on disk, where a process can die (SIGKILL, power loss, OOM) and
 * leave what the next process must cope with. In a build with
 * -Dcrash-points=true, crash_point(CRASH_X) kills the calling process with
 * SIGKILL when $SDPOD_CRASH_AT names that step ("NAME", or "NAME:N" for its
 * Nth pass in this process), after one line on stderr that says so (and
 * which process). Otherwise it compiles to nothing: release builds carry
 * neither the table nor the check.
 *
 * The table below is the one list of the steps: `sdpod --crash-points`
 * prints it (NAME, OPERATION, what is on disk at that moment) for the test
 * to walk. OPERATION is the command the test runs to reach the step:
 * prepare (sdpod prepare), run (sdpod run-prepared), stop (sdpod stop),
 * add, start and rm (podapp), gc (sdpod gc). */

#include <stdbool.h>

#include "config.h"

#define CRASH_POINTS(X) \
        X(PREPARE_EMBRYO,       "prepare-embryo",       "prepare", "embryo/UUID made, not yet locked") \
        X(PREPARE_LOCKED,       "prepare-locked",       "prepare", "embryo/UUID locked, not yet in prepare/") \
        X(PREPARE_CREATED,      "prepare-created",      "prepare", "in prepare/, locked, no manifest") \
        X(PREPARE_CLAIMED,      "prepare-claimed",      "prepare", "user id range claimed, no manifest") \
        X(PREPARE_MANIFEST,     "prepare-manifest",     "prepare", "manifest written, no stage1") \
        X(PREPARE_STAGE1,       "prepare-stage1",       "prepare", "stage1 rendered, no app directories") \
        X(PREPARE_APPS,         "prepare-apps",         "prepare", "apps rendered, still in prepare/") \
        X(PREPARE_DONE,         "prepare-done",         "prepare", "in prepared/, UUID not printed") \
        X(RUN_LOCKED,           "run-locked",           "run",     "prepared/UUID locked, not started") \
        X(RUN_RECORDED,         "run-recorded",         "run",     "start time written, still in prepared/") \
        X(RUN_RENAMED,          "run-renamed",          "run",     "in run/, locked, stage1 not executed") \
        X(RUN_MOUNT_NS,         "run-mount-ns",         "run",     "stage1 run: own mount namespace, nothing mounted") \
        X(RUN_MOUNTED,          "run-mounted",          "run",     "stage1 run: stage1 and app roots mounted, no network") \
        X(RUN_NETNS,            "run-netns",            "run",     "stage1 run: network namespace made, no CNI ADD") \
        X(RUN_NET_RECORDED,     "run-net-recorded",     "run",     "network recorded, before its CNI ADD") \
        X(RUN_NET_ADDED,        "run-net-added",        "run",     "CNI ADD done, its result not recorded") \
        X(RUN_FORKED,           "run-forked",           "run",     "stage1 run: nspawn forked, waiting for the go") \
        X(RUN_ATTACHED,         "run-attached",         "run",     "stage1 run: nspawn runs, network up, supervisor dies") \
        X(STOP_ENTRY,           "stop-entry",           "stop",    "stage1 stop entrypoint: pod found, not signalled") \
        X(STOP_ASKED,           "stop-asked",           "stop",    "the pod was asked to halt, sdpod stop not waiting") \
        X(ADD_LOCKED,           "add-locked",           "add",     "pod.lck taken, nothing changed") \
        X(ADD_RENDERED,         "add-rendered",         "add",     "apps/NAME made, root not mounted, not in the manifest") \
        X(ADD_MOUNTED,          "add-mounted",          "add",     "app root mounted in the pod, not in the manifest") \
        X(ADD_WRITTEN,          "add-written",          "add",     "manifest names the app, pod not reloaded") \
        X(START_CLEARED,        "start-cleared",        "start",   "last run's stop request and status removed, no start job") \
        X(RM_MARKED,            "rm-marked",            "rm",      "apps/NAME/deleting made, app not stopped") \
        X(RM_STOPPED,           "rm-stopped",           "rm",      "app stopped, still in the manifest") \
        X(RM_WRITTEN,           "rm-written",           "rm",      "manifest without the app, pod not reloaded") \
        X(RM_RELOADED,          "rm-reloaded",          "rm",      "pod reloaded, app root and directory still there") \
        X(RM_UNMOUNTED,         "rm-unmounted",         "rm",      "app root unmounted in the pod, apps/NAME still there (add too, clearing leftovers)") \
        X(GC_MARKED,            "gc-marked",            "gc",      "a pod moved by the mark, directories not synced") \
        X(GC_LOCKED,            "gc-locked",            "gc",      "sweep: pod locked, nothing deleted") \
        X(GC_ENTRY_KILLED,      "gc-entry-killed",      "gc",      "stage1 gc entrypoint: leftovers killed, network not released") \
        X(GC_ENTRY_NET,         "gc-entry-net",         "gc",      "stage1 gc entrypoint: network released, cgroup not removed") \
        X(GC_ENTRYPOINT,        "gc-entrypoint",        "gc",      "gc entrypoint done, nothing unmounted") \
        X(GC_UNMOUNTED,         "gc-unmounted",         "gc",      "everything below the pod unmounted, not removed") \
        X(GC_REMOVED,           "gc-removed",           "gc",      "pod directory removed, user id range still claimed")

typedef enum CrashPoint {
#define CRASH_POINT_ENUM(id, name, op, what) CRASH_##id,
        CRASH_POINTS(CRASH_POINT_ENUM)
#undef CRASH_POINT_ENUM
        _CRASH_POINT_MAX,
} CrashPoint;

#if SDPOD_CRASH_POINTS
void crash_point(CrashPoint p);
#else
#define crash_point(p) ((void) 0)
#endif

/* Whether this build has crash points. */
static inline bool crash_points_enabled(void) { return SDPOD_CRASH_POINTS; }

/* Prints the table, one "NAME OPERATION WHAT" line (tab-separated) a step;
 * -EOPNOTSUPP, printing nothing, in a build without crash points. */
int crash_points_print(void);
