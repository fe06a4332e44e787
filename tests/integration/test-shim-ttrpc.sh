#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
#
# test-shim-ttrpc.sh - lib/shim/ttrpc.h against a real ttrpc client: ctr's
# `shim` command (containerd 1.6's Go ttrpc client and task service stubs)
# calls ttrpc-task-server, which serves State and Delete (not Start) the
# way the shim will. ctr finds the server at the abstract socket it tries for
# `--id ID` (\0/containerd-shim/NAMESPACE/ID/shim.sock), so no containerd
# needs to run. Checks: the answer decoded field by field, a failure's gRPC
# code and message, UNIMPLEMENTED for a method the server lacks.

. "$(dirname "$0")/lib.sh"

require_tool ctr containerd
[ -n "${TTRPC_TASK_SERVER:-}" ] || die "TTRPC_TASK_SERVER is not set (meson sets it)"

NS=sdpod-test-$$
"$TTRPC_TASK_SERVER" "@/containerd-shim/$NS/t1/shim.sock" >"$T/server.out" 2>&1 &
SERVER_PID=$!
wait_until 10 grep -q ready "$T/server.out" || die "the server did not start: $(cat "$T/server.out")"
ctr_shim() { ctr --namespace "$NS" shim --id t1 "$@"; }

assert_exit 0 ctr_shim state t1
assert_jq "State: the id asked for" "$OUT" '.id' '"t1"'
assert_jq "State: pid" "$OUT" '.pid' 4242
assert_jq "State: bundle" "$OUT" '.bundle' '"/bundle"'
assert_jq "State: status RUNNING (2)" "$OUT" '.status' 2

assert_exit 1 ctr_shim delete t1
assert_contains "Delete: the gRPC code reaches the client" "$ERR" "code = NotFound"
assert_contains "Delete: and the message" "$ERR" "task t1 not found"

# (ctr 1.6's `shim exec` panics before it calls: Start is the method left out.)
assert_exit 1 ctr_shim start t1
assert_contains "Start, not served: UNIMPLEMENTED" "$ERR" "code = Unimplemented"

# Many clients one after the other, each a new connection.
t0=$(date +%s%N)
for i in $(seq 1 20); do
	ctr_shim state t1 >/dev/null || fail "state call $i"
done
t1=$(date +%s%N)
echo "# 20 ctr shim state calls: $(((t1 - t0) / 20000000)) ms each (mostly ctr starting)"

kill "$SERVER_PID"
assert_exit 0 wait "$SERVER_PID"
