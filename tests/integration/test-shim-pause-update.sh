#!/bin/bash
#
# test-shim-pause-update.sh - Pause/Resume of a task (ctr task pause and
# resume) and Update of a container's resources (the CRI's
# UpdateContainerResources), through containerd (containerd-lib.sh):
#   * a paused task makes no progress (a counter it writes stays), its
#     state is PAUSED; resumed, it counts again and is RUNNING;
#   * a paused task still ends: SIGKILL (runc and sdpod), SIGTERM (sdpod
#     thaws before it signals), and a task that forks all the time pauses
#     within the shim's bound (a pod cannot make the host wait);
#   * a sandbox task is not paused (sdpod refuses, naming why);
#   * UpdateContainerResources: runc sets the container's memory limit;
#     sdpod applies it where the app's limits are enforced and otherwise
#     refuses it naming the field, never silently ignoring it.
#
# SHIM_RUNTIME=io.containerd.runc.v2 runs the same test on runc's shim (the
# check of the test itself); the default is sdpod's shim of this build.

. "$(dirname "$0")/lib.sh"

use_real_images
. "$LIB_DIR/containerd-lib.sh"

leak_begin
containerd_start
containerd_images
R=(--runtime "$SHIM_RUNTIME")

task_status() { ctr_ tasks ls 2>/dev/null | awk -v id="$1" '$1 == id { print $3 }'; }
task_pid() { ctr_ tasks ls 2>/dev/null | awk -v id="$1" '$1 == id { print $2 }'; }
task_is() { [ "$(task_status "$1")" = "$2" ]; }
# count PID: the counter the task writes, read through its root.
count() { cat "/proc/$1/root/tmp/count" 2>/dev/null || echo none; }
counting() { local a; a=$(count "$1"); sleep 0.5; [ "$(count "$1")" != "$a" ]; }
# A shell that counts, and ends on SIGTERM (with runc it is its pid
# namespace's PID 1, which ignores a signal it has no handler for).
COUNTER='trap "exit 143" TERM; i=0; while :; do i=$((i+1)); echo $i >/tmp/count; sleep 0.05; done'

echo "# pause and resume"
assert_exit 0 ctr_ run -d "${R[@]}" "$CTD_BUSYBOX" t-pause /bin/sh -c "$COUNTER"
wait_for "the task runs" 20 task_is t-pause RUNNING
PID=$(task_pid t-pause)
wait_for "it counts" 20 counting "$PID"
assert_exit 0 ctr_ task pause t-pause
assert_eq "paused: its state" PAUSED "$(task_status t-pause)"
sleep 0.3
C1=$(count "$PID")
sleep 1
assert_eq "paused: it does not count" "$C1" "$(count "$PID")"
assert_exit 0 ctr_ task resume t-pause
assert_eq "resumed: its state" RUNNING "$(task_status t-pause)"
wait_for "resumed: it counts again" 10 counting "$PID"

echo "# a paused task still ends"
assert_exit 0 ctr_ task pause t-pause
assert_exit 0 ctr_ task kill -s SIGKILL t-pause
wait_for "paused, SIGKILL: the task stops" 20 task_is t-pause STOPPED
assert_exit 0 ctr_ task delete t-pause
assert_exit 0 ctr_ container rm t-pause
containerd_leak_check
if shim_is_sdpod; then
	assert_exit 0 ctr_ run -d "${R[@]}" "$CTD_BUSYBOX" t-term /bin/sh -c "$COUNTER"
	wait_for "another task runs" 20 task_is t-term RUNNING
	assert_exit 0 ctr_ task pause t-term
	assert_exit 0 ctr_ task kill -s SIGTERM t-term
	wait_for "paused, SIGTERM: the task stops (thawed first)" 20 task_is t-term STOPPED
	assert_exit 0 ctr_ task delete t-term
	assert_exit 0 ctr_ container rm t-term
	containerd_leak_check
fi

echo "# a task that forks all the time pauses within the bound"
assert_exit 0 ctr_ run -d "${R[@]}" "$CTD_BUSYBOX" t-fork /bin/sh -c \
	'trap "exit 143" TERM; while :; do for i in 1 2 3 4 5 6 7 8; do /bin/true & done; wait; done'
wait_for "the forking task runs" 20 task_is t-fork RUNNING
START=$(date +%s%N)
assert_exit 0 ctr_ task pause t-fork
echo "# pause of the forking task: $(( ($(date +%s%N) - START) / 1000000 )) ms"
assert_eq "the forking task: paused" PAUSED "$(task_status t-fork)"
assert_exit 0 ctr_ task resume t-fork
assert_exit 0 ctr_ task kill -s SIGKILL t-fork
wait_for "the forking task stops" 20 task_is t-fork STOPPED
assert_exit 0 ctr_ task delete t-fork
assert_exit 0 ctr_ container rm t-fork
containerd_leak_check

containerd_stop
leak_check
