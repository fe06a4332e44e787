#!/bin/bash
#
# test-shim-exec.sh - the end of an exec (issue 25 item 2), under a real
# containerd (containerd-lib.sh; serial, like test-shim-ctr):
#
#   - `ctr task kill --exec-id`: the exec's command (and everything it
#     started) goes, not only the shim's relay, and `ctr task exec`
#     returns: the FIFOs containerd gave are released;
#   - CRI ExecSync with a timeout on `sleep 4321`: returns within the
#     timeout and a few seconds, and the sleep is gone from the container;
#   - with sdpod's shim: the relay of an exec killed (SIGKILL, which it
#     cannot pass on): its command in the pod goes all the same, and
#     `ctr task exec` returns;
#   - with sdpod's shim: the lock of a pod's shims (/run/sdpod/shim/
#     HASH.lock) is there while its task or sandbox is, and gone with it.
#
# SHIM_RUNTIME=io.containerd.runc.v2 runs the same test on runc's shim (the
# check of the test itself; the relay part is sdpod's only).

. "$(dirname "$0")/lib.sh"

use_real_images
. "$LIB_DIR/containerd-lib.sh"
for _p in ptp host-local loopback portmap firewall; do
	[ -x "/usr/lib/cni/$_p" ] || skip "no CNI plugin $_p in /usr/lib/cni (apt-get install containernetworking-plugins)"
done

BG_PIDS=()
_exec_cleanup() {
	set +e
	local p
	for p in "${BG_PIDS[@]}"; do
		kill -KILL "$p" 2>/dev/null || true
		wait "$p" 2>/dev/null || true
	done
}
trap '_rc=$?; _exec_cleanup; _ctd_on_exit "$_rc"; (exit "$_rc"); _lib_on_exit' EXIT

leak_begin
containerd_start
containerd_images "$CTR_NS" k8s.io
R=(--runtime "$SHIM_RUNTIME")
CTR=(ctr --address "$CTD_SOCK" --namespace "$CTR_NS")

# shim_lock NAMESPACE GROUP: the lock file of the shims of a task or
# sandbox (helpers/shim/main.c: socket_path, a hash of containerd's
# address, the namespace and the sandbox's id or the plain task's).
shim_lock() {
	printf '%s\0%s\0%s\0' "$CTD_SOCK" "$1" "$2" | sha256sum | cut -c1-32 | sed 's|^|/run/sdpod/shim/|; s|$|.lock|'
}
task_is() { [ "$(ctr_ tasks ls 2>/dev/null | awk -v id="$1" '$1 == id { print $3 }')" = "$2" ]; }
# procs_of WORD: the PIDs of the host's processes whose command line is
# exactly "sleep WORD" or "/bin/sleep WORD" (the commands of this test).
procs_of() {
	local f
	# One grep over every command line (a process per PID would take
	# seconds on a busy machine, and wait_until runs this 10 times a second).
	for f in $(grep -lsaF -- "$1" /proc/[0-9]*/cmdline); do
		case "$(tr '\0' ' ' <"$f" 2>/dev/null)" in
		"sleep $1 " | "/bin/sleep $1 ") f=${f#/proc/} && echo "${f%/cmdline}" ;;
		esac
	done
	return 0
}
has_procs() { [ -n "$(procs_of "$1")" ]; }
no_procs() { [ -z "$(procs_of "$1")" ]; }
# gone_within SECONDS DESC PID: the background process PID ends in time.
gone_within() {
	local secs=$1 desc=$2 pid=$3 i
	for i in $(seq $((secs * 10))); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	if kill -0 "$pid" 2>/dev/null; then
		fail "$desc within ${secs}s" "still running"
	else
		pass "$desc within ${secs}s"
	fi
}

# ---------------------------------------------------------------------------
echo "# ctr task kill --exec-id: the command goes, ctr task exec returns"
# ---------------------------------------------------------------------------
assert_exit 0 ctr_ run -d "${R[@]}" "$CTD_BUSYBOX" t-exec /bin/sleep 600
wait_for "the task runs" 20 task_is t-exec RUNNING
LOCK1=$(shim_lock "$CTR_NS" t-exec)
! shim_is_sdpod || assert_file_exists "$LOCK1"
"${CTR[@]}" task exec --exec-id long t-exec /bin/sleep 4321 </dev/null >"$T/long.out" 2>&1 &
LONG=$!
BG_PIDS+=("$LONG")
wait_for "the exec's command runs" 20 has_procs 4321
assert_exit 0 ctr_ task kill --exec-id long -s SIGKILL t-exec
gone_within 10 "ctr task exec returns after the kill" "$LONG"
wait_for "the exec's command is gone" 10 no_procs 4321

# SIGTERM, the default of ctr task kill, reaches the command (sdpod: every
# process of the exec's unit; runc: the exec's process).
"${CTR[@]}" task exec --exec-id term t-exec /bin/sleep 4322 </dev/null >"$T/term.out" 2>&1 &
TERM_EXEC=$!
BG_PIDS+=("$TERM_EXEC")
wait_for "the second exec's command runs" 20 has_procs 4322
assert_exit 0 ctr_ task kill --exec-id term t-exec
gone_within 10 "ctr task exec returns after SIGTERM" "$TERM_EXEC"
wait_for "the second exec's command is gone" 10 no_procs 4322

if shim_is_sdpod; then
	echo "# the exec's relay killed: its command goes all the same"
	"${CTR[@]}" task exec --exec-id relay t-exec /bin/sleep 4323 </dev/null >"$T/relay.out" 2>&1 &
	RELAY_EXEC=$!
	BG_PIDS+=("$RELAY_EXEC")
	wait_for "the third exec's command runs" 20 has_procs 4323 ||
		echo "# ctr task exec: $(cut -c1-300 "$T/relay.out")"
	# The relay: the shim's child whose command line carries the command.
	SHIMS=" $(ctd_shim_pids | tr '\n' ' ')"
	RELAY=
	for f in $(grep -lsaF -- 4323 /proc/[0-9]*/cmdline); do
		p=${f%/cmdline}
		pp=$(awk '/^PPid:/ { print $2 }' "$p/status" 2>/dev/null) || continue
		case "$SHIMS" in *" $pp "*) RELAY=${p#/proc/} ;; esac
	done
	assert_match "the exec's relay, a child of the shim" '^[0-9]+$' "$RELAY"
	[ -z "$RELAY" ] || kill -KILL "$RELAY"
	gone_within 15 "ctr task exec returns after its relay was killed" "$RELAY_EXEC"
	wait_for "the third exec's command is gone" 15 no_procs 4323
fi

assert_exit 0 ctr_ task kill -s SIGKILL t-exec
wait_for "the task stops" 30 task_is t-exec STOPPED
assert_exit 0 ctr_ task delete t-exec
assert_exit 0 ctr_ container rm t-exec
if shim_is_sdpod; then
	wait_for "the shim's lock goes with its task" 10 test ! -e "$LOCK1"
fi

# ---------------------------------------------------------------------------
echo "# CRI ExecSync with a timeout"
# ---------------------------------------------------------------------------
cri_setup
SBC=$(cri_sandbox_config exec-pod)
cri_call RS RunPodSandbox "{\"config\": $SBC, \"runtime_handler\": \"$SHIM_HANDLER\"}"
SB=$(jq -r '.pod_sandbox_id // empty' <<<"$RS")
[ -n "$SB" ] || die "RunPodSandbox gave no sandbox id: $RS"
CC=$(jq -nc --arg sb "$SB" --argjson sbc "$SBC" --arg img "$CTD_BUSYBOX" \
	'{pod_sandbox_id: $sb, sandbox_config: $sbc,
	  config: {metadata: {name: "probe"}, image: {image: $img}, command: ["/bin/sleep", "600"],
	           log_path: "probe.log"}}')
cri_call C CreateContainer "$CC"
CID=$(jq -r '.container_id // empty' <<<"$C")
cri_call _ StartContainer "{\"container_id\": \"$CID\"}"
LOCK2=$(shim_lock k8s.io "$SB")
! shim_is_sdpod || assert_file_exists "$LOCK2"
cri_call E ExecSync "{\"container_id\": \"$CID\", \"cmd\": [\"/bin/sh\", \"-c\", \"echo ready\"], \"timeout\": 20}"
assert_jq "ExecSync runs" "$E" '[.exit_code, .stdout_text]' '[0,"ready\n"]'
t0=$(date +%s)
RC=0
timeout -s KILL 60 "$CRI_PY" "$CRI_CLIENT" --socket "$CTD_SOCK" --gen "$CRI_GEN" --timeout 60 ExecSync \
	"{\"container_id\": \"$CID\", \"cmd\": [\"/bin/sleep\", \"4324\"], \"timeout\": 3}" >"$T/es.out" 2>"$T/es.err" || RC=$?
took=$(($(date +%s) - t0))
check "ExecSync of sleep 4324 with a 3 s timeout returns within 3 + 10 s (in $took s, exit $RC)" test "$took" -le 13
assert_contains "and says it timed out" "$(cat "$T/es.out" "$T/es.err")" "timeout"
wait_for "the sleep is gone from the container" 10 no_procs 4324
cri_call _ StopPodSandbox "{\"pod_sandbox_id\": \"$SB\"}"
cri_call _ RemovePodSandbox "{\"pod_sandbox_id\": \"$SB\"}"

containerd_leak_check
! shim_is_sdpod || assert_file_absent "$LOCK2"
containerd_stop
leak_check
