#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
#
# test-shim-publish.sh - the shim's events reach a real containerd: a
# containerd of its own (root, state and sockets under $T, no CRI plugin)
# is started, `ctr events` watches it, and shim_publish() (through
# shim-publish-check) runs containerd's publish binary the way the shim
# does. containerd must decode both events (it prints them as JSON only if
# the Any's type URL names a type it knows) and keep their order.

. "$(dirname "$0")/lib.sh"

require_root "containerd runs as root"
require_tool containerd containerd
require_tool ctr containerd
[ -n "${SHIM_PUBLISH_CHECK:-}" ] || die "SHIM_PUBLISH_CHECK is not set (meson sets it)"

C=$T/containerd
mkdir -p "$C"
cat >"$C/config.toml" <<CONF
version = 2
root = "$C/root"
state = "$C/state"
disabled_plugins = ["io.containerd.grpc.v1.cri"]
[grpc]
  address = "$C/containerd.sock"
[ttrpc]
  address = "$C/containerd.sock.ttrpc"
CONF
# What containerd mounts and leaves, not what the tests beside this one
# unmount (their network namespaces' binds, which lib.sh leaves out too).
mounts_before=$(_leak_mounts_now)

containerd --config "$C/config.toml" >"$C/log" 2>&1 &
CTD_PID=$!
ctr_() { ctr --address "$C/containerd.sock" "$@"; }
wait_until 20 ctr_ version || die "containerd did not start: $(tail -5 "$C/log")"

ctr_ events >"$T/events" 2>&1 &
EV_PID=$!
# The subscription is up once an event published now shows up.
warm() {
	"$SHIM_PUBLISH_CHECK" "$(command -v containerd)" "$C/containerd.sock" sdpod-test "warm-$1" >/dev/null 2>&1 || true
	grep -q "warm-$1" "$T/events"
}
for i in $(seq 1 20); do
	warm "$i" && break
	sleep 0.2
done
grep -q warm "$T/events" || die "ctr events saw nothing: $(cat "$T/events")"

t0=$(date +%s%N)
assert_exit 0 "$SHIM_PUBLISH_CHECK" "$(command -v containerd)" "$C/containerd.sock" sdpod-test c1
t1=$(date +%s%N)
echo "# two events published in $(((t1 - t0) / 1000000)) ms"
wait_for "containerd saw the exit" 10 grep -q '/tasks/exit.*"container_id":"c1"' "$T/events"
start=$(grep -n '/tasks/start.*"container_id":"c1"' "$T/events" | cut -d: -f1 || true)
exit_=$(grep -n '/tasks/exit.*"container_id":"c1"' "$T/events" | cut -d: -f1 || true)
check "a TaskStart, decoded, in namespace sdpod-test" grep -q 'sdpod-test /tasks/start {"container_id":"c1","pid":42}' "$T/events"
assert_contains "the TaskExit decoded with its status" "$(grep '/tasks/exit.*"c1"' "$T/events")" '"exit_status":7'
check "start before exit" test -n "$start" -a -n "$exit_" -a "${start:-0}" -lt "${exit_:-0}"

# A containerd that is not there: the check reports the failure (after
# the publisher's retries), it does not hang.
t0=$(date +%s)
assert_exit 1 "$SHIM_PUBLISH_CHECK" "$(command -v containerd)" "$C/nothing.sock" sdpod-test c2
t1=$(date +%s)
echo "# a missing containerd: given up after $((t1 - t0)) s"
check "a missing containerd fails within 30 s" test $((t1 - t0)) -lt 30

kill "$EV_PID" "$CTD_PID"
wait "$EV_PID" "$CTD_PID" 2>/dev/null || true
assert_eq "containerd left no mount" "" "$(comm -13 <(echo "$mounts_before") <(_leak_mounts_now))"
