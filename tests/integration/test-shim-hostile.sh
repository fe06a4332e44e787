#!/bin/bash
#
# test-shim-hostile.sh - containerd-shim-sdpod-v1 against a hostile pod,
# under a real containerd (containerd-lib.sh; serial, like test-shim-ctr):
#
#   - a status record swapped for a FIFO, and the record of restarts for a
#     symlink to a host file, while containerd waits for the task (Wait
#     pending): the shim neither hangs on the FIFO nor follows the symlink,
#     keeps answering, and the Wait ends when the task does;
#   - the status record then swapped for a symlink to a host file that
#     holds an exit status: not followed, the task still runs;
#   - a pod that stops its systemd (SIGSTOP to its PID 1) while the shim
#     talks to it: kill and exec end within their deadline with an error,
#     and while a kill waits on the stopped systemd, the shim answers
#     other requests at once (its exit polls read the status record and
#     the app's cgroup, never the pod's systemd; what needs the systemd
#     runs in a child of the shim's); after SIGCONT all works again.
#
# The swaps are made from the host, in the pod directory's status/, which
# the pod's root writes (/sdpod/status): what it can do there.

. "$(dirname "$0")/lib.sh"

use_real_images
. "$LIB_DIR/containerd-lib.sh"
shim_is_sdpod || skip "the hostile pod's side is sdpod's (SHIM_RUNTIME=$SHIM_RUNTIME)"

STOPPED_LEADERS=()
WAIT_PIDS=()
_hostile_cleanup() {
	set +e
	trap - ERR
	local p
	for p in "${STOPPED_LEADERS[@]}"; do
		kill -CONT "$p" 2>/dev/null || true
	done
	for p in "${WAIT_PIDS[@]}"; do
		kill -KILL "$p" 2>/dev/null || true
		wait "$p" 2>/dev/null || true
	done
}
# containerd-lib's clean-up too (containerd, its shims, the pods), which
# this trap replaces: without it an aborted run left its shim and pod.
trap '_rc=$?; _hostile_cleanup; _ctd_on_exit "$_rc"; (exit "$_rc"); _lib_on_exit' EXIT

leak_begin
containerd_start
containerd_images
R=(--runtime "$SHIM_RUNTIME")
CTR=(ctr --address "$CTD_SOCK" --namespace "$CTR_NS")

task_is() { [ "$(ctr_ tasks ls 2>/dev/null | awk -v id="$1" '$1 == id { print $3 }')" = "$2" ]; }
pod_of() { sd list --format=json 2>/dev/null | jq -r --arg n "$1" '[.[] | select(.name == $n)] | .[0].uuid // empty'; }
# within SECONDS DESC CMD...: CMD ends within SECONDS; OUT, ERR, RC.
within() {
	local secs=$1 desc=$2 t0
	shift 2
	t0=$(date +%s)
	RC=0
	timeout -s KILL "$secs" "$@" >"$T/within.out" 2>"$T/within.err" || RC=$?
	OUT=$(cat "$T/within.out")
	ERR=$(cat "$T/within.err")
	if [ "$RC" = 137 ]; then
		fail "$desc ends within ${secs}s" "it was still running: $(_show_cmd "$@")"
	else
		pass "$desc ends within ${secs}s (in $(($(date +%s) - t0)) s, exit $RC)"
	fi
}

# ---------------------------------------------------------------------------
echo "# a status record swapped for a FIFO and a symlink while a Wait is pending"
# ---------------------------------------------------------------------------
# ctr run in the foreground: its Wait is pending in the shim until the task
# ends (ctr 1.6 has no `task wait`).
"${CTR[@]}" run --rm "${R[@]}" "$CTD_BUSYBOX" t-swap /bin/sleep 600 </dev/null >"$T/wait.out" 2>&1 &
WAIT_PIDS+=($!)
WAIT_PID=$!
wait_for "the task runs" 20 task_is t-swap RUNNING
POD=$(pod_of t-swap)
[ -n "$POD" ] || POD=$(sd list --format=json | jq -r '.[0].uuid')
assert_match "the task's pod" '^[0-9a-f-]{36}$' "$POD"
APP=$(pa list "$POD" --no-legend 2>/dev/null | awk 'NR == 1 { print $1 }')
STATUS="$DATA/pods/run/$POD/status"
check "the pod has its status directory" test -d "$STATUS"
# The pod's root replaces the records reserved for the app (sdpod-security(7),
# "Records on a full disk") as it may.
rm -f "$STATUS/$APP" "$STATUS/$APP.restarts"
mkfifo "$STATUS/$APP"
ln -s /etc/shadow "$STATUS/$APP.restarts"
within 30 "ctr task ls with a FIFO as the record" "${CTR[@]}" tasks ls
assert_contains "the task still runs (a FIFO is no exit status)" "$OUT" RUNNING
within 30 "ctr task ps" "${CTR[@]}" task ps t-swap
check "the Wait is still pending" kill -0 "$WAIT_PID"
# A symlink to a host file that says the app exited with 3: followed, the
# shim would end the task (its exit polls run every 100 ms).
echo 3 >"$T/fake-status"
rm -f "$STATUS/$APP"
ln -s "$T/fake-status" "$STATUS/$APP"
sleep 1
within 30 "ctr task ls with a symlink as the record" "${CTR[@]}" tasks ls
assert_contains "the task still runs (the symlink is not followed)" "$OUT" RUNNING
check "the Wait is still pending after the symlink" kill -0 "$WAIT_PID"
within 30 "ctr task kill" "${CTR[@]}" task kill -s SIGKILL t-swap
for _ in $(seq 300); do
	kill -0 "$WAIT_PID" 2>/dev/null || break
	sleep 0.1
done
if kill -0 "$WAIT_PID" 2>/dev/null; then
	fail "the pending Wait ends with the task" "still waiting after 30 s"
else
	pass "the pending Wait ends with the task"
fi
assert_not_contains "no host file was read through the symlink" "$(cat "$T/wait.out")" "root:"
# ctr run --rm deleted the task and its container.
wait_until 10 test -z "$(ctr_ tasks ls -q 2>/dev/null)" || true

# ---------------------------------------------------------------------------
echo "# a pod that stops its systemd while the shim talks to it"
# ---------------------------------------------------------------------------
assert_exit 0 ctr_ run -d "${R[@]}" "$CTD_BUSYBOX" t-stop /bin/sleep 600
wait_for "the task runs" 20 task_is t-stop RUNNING
POD2=$(pod_of t-stop)
[ -n "$POD2" ] || POD2=$(sd list --format=json | jq -r '.[0].uuid')
L=$(leader_of "$POD2")
assert_match "the pod's PID 1" '^[1-9][0-9]*$' "$L"
kill -STOP "$L"
STOPPED_LEADERS+=("$L")
# One deadline: connecting to the stopped systemd (10 s), and a margin.
within 20 "ctr task kill while the pod's systemd is stopped" "${CTR[@]}" task kill -s SIGTERM t-stop
check "and it fails" test "$RC" -ne 0
assert_contains "the error names the pod" "$ERR" "$POD2"
within 30 "ctr task exec while the pod's systemd is stopped" \
	"${CTR[@]}" task exec --exec-id stuck-exec t-stop /bin/true
check "and it fails" test "$RC" -ne 0
# A kill that waits on the stopped systemd does not hold up the others.
"${CTR[@]}" task kill -s SIGTERM t-stop >/dev/null 2>&1 &
KILL_PID=$!
WAIT_PIDS+=("$KILL_PID")
sleep 1
check "a kill is waiting on the stopped systemd" kill -0 "$KILL_PID"
# 7 s each: a shim that served the kill first would answer only at its
# 10 s deadline; ctr itself took over 2 s under CI's load.
within 7 "ctr task ls meanwhile" "${CTR[@]}" tasks ls
assert_contains "the task still runs for the shim" "$OUT" RUNNING
within 7 "ctr task ps meanwhile" "${CTR[@]}" task ps t-stop
check "it answers" test "$RC" -eq 0
within 7 "ctr task metrics meanwhile" "${CTR[@]}" task metrics t-stop
check "it answers" test "$RC" -eq 0
for _ in $(seq 200); do
	kill -0 "$KILL_PID" 2>/dev/null || break
	sleep 0.1
done
if kill -0 "$KILL_PID" 2>/dev/null; then
	fail "the waiting kill ends within its deadline" "still waiting after 20 s"
else
	pass "the waiting kill ends within its deadline"
fi
within 30 "ctr task ls after" "${CTR[@]}" tasks ls
assert_contains "the shim still serves containerd" "$OUT" t-stop
kill -CONT "$L"
STOPPED_LEADERS=()
within 30 "ctr task exec once the pod's systemd runs again" \
	"${CTR[@]}" task exec --exec-id after-cont t-stop /bin/sh -c 'echo back'
assert_eq "it runs" "0 back" "$RC $OUT"
within 45 "ctr task kill once the pod's systemd runs again" "${CTR[@]}" task kill -s SIGKILL t-stop
wait_for "the task stops" 30 task_is t-stop STOPPED
within 30 "ctr task delete" "${CTR[@]}" task delete t-stop
ctr_ container rm t-stop >/dev/null 2>&1 || true
containerd_leak_check

containerd_stop
leak_check
