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
# No exec into a paused task: runc's shim refuses "in a paused state".
assert_exit 1 ctr_ task exec --exec-id paused-exec t-pause /bin/true
assert_contains "paused: an exec is refused, saying why" "$ERR" "paused"
assert_exit 0 ctr_ task resume t-pause
assert_eq "resumed: its state" RUNNING "$(task_status t-pause)"
assert_exit 0 ctr_ task exec --exec-id resumed-exec t-pause /bin/true
wait_for "resumed: it counts again" 10 counting "$PID"
# Its figures (Stats: the app's own cgroups, pod-stats.c).
assert_exit 0 ctr_ task metrics t-pause
metric() { awk -v m="$1" '$1 == m { print $2 }' <<<"$OUT"; }
assert_match "metrics: its processes (the shell, a sleep at times)" '^[1-9][0-9]*$' "$(metric pids.current)"
# (Not its memory: on a cgroup v1 or hybrid host an app has no memory
# cgroup of its own yet, only its pod; issue 26 item 3.)
assert_match "metrics: its CPU time" '^[1-9][0-9]*$' "$(metric cpuacct.usage)"

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

echo "# UpdateContainerResources through the CRI"
for _p in ptp host-local loopback portmap firewall; do
	[ -x "/usr/lib/cni/$_p" ] || skip "no CNI plugin $_p in /usr/lib/cni (apt-get install containernetworking-plugins)"
done
containerd_images k8s.io
cri_setup
SBC=$(cri_sandbox_config update-pod)
cri_call RS RunPodSandbox "{\"config\": $SBC, \"runtime_handler\": \"$SHIM_HANDLER\"}"
SB=$(jq -r '.pod_sandbox_id // empty' <<<"$RS")
[ -n "$SB" ] || die "RunPodSandbox gave no sandbox id: $RS"
cri_call C CreateContainer "$(jq -nc --arg sb "$SB" --argjson sbc "$SBC" --arg img "$CTD_BUSYBOX" \
	'{pod_sandbox_id: $sb, sandbox_config: $sbc,
	  config: {metadata: {name: "limited"}, image: {image: $img}, command: ["/bin/sleep", "600"], log_path: "limited.log"}}')"
CID=$(jq -r '.container_id // empty' <<<"$C")
cri_call _ StartContainer "{\"container_id\": \"$CID\"}"
cri_call CS ContainerStatus "{\"container_id\": \"$CID\", \"verbose\": true}"
CPID=$(jq -r '.info.info | fromjson | .pid' <<<"$CS")
# The container's memory limit file: its cgroup v1 memory cgroup's, or its
# cgroup2 one's where the memory controller is there (a cgroup2 host).
memory_file() {
	local v1 v2
	v1=$(awk -F: '$2 == "memory" { print $3 }' "/proc/$CPID/cgroup")
	v2=$(awk -F: '$1 == "0" { print $3 }' "/proc/$CPID/cgroup")
	if [ -n "$v1" ] && [ -f "/sys/fs/cgroup/memory$v1/memory.limit_in_bytes" ]; then
		echo "/sys/fs/cgroup/memory$v1/memory.limit_in_bytes"
	elif [ -f "/sys/fs/cgroup$v2/memory.max" ]; then
		echo "/sys/fs/cgroup$v2/memory.max"
	elif [ -f "/sys/fs/cgroup/unified$v2/memory.max" ]; then
		echo "/sys/fs/cgroup/unified$v2/memory.max"
	fi
}
# Whether the app has a cgroup of its own with a memory limit (runc's always;
# sdpod's where the app's cgroup2 cgroup has the memory controller).
app_memory_cgroup() {
	local v2
	v2=$(awk -F: '$1 == "0" { print $3 }' "/proc/$CPID/cgroup")
	[ -f "/sys/fs/cgroup$v2/memory.max" ] || [ -f "/sys/fs/cgroup/unified$v2/memory.max" ]
}
UPD="{\"container_id\": \"$CID\", \"linux\": {\"memory_limit_in_bytes\": 268435456, \"cpu_period\": 100000, \"cpu_quota\": 50000}}"
if ! shim_is_sdpod || app_memory_cgroup; then
	cri_call _ UpdateContainerResources "$UPD"
	MF=$(memory_file)
	assert_eq "UpdateContainerResources: the memory limit in $MF" 268435456 "$(cat "$MF" 2>/dev/null)"
else
	echo "# the app's cgroup has no memory controller here: the update must be refused"
	assert_exit 3 cri UpdateContainerResources "$UPD"
	echo "# $ERR"
	assert_contains "UpdateContainerResources: refused, naming the field" "$ERR" "linux.resources.memory.limit"
	assert_contains "UpdateContainerResources: refused, saying why" "$ERR" "no memory controller"
	cri_call CS2 ContainerStatus "{\"container_id\": \"$CID\"}"
	assert_jq "UpdateContainerResources: the container runs on" "$CS2" .status.state '"CONTAINER_RUNNING"'
fi
# An update of nothing sdpod applies (cpu shares only) is no error.
cri_call _ UpdateContainerResources "{\"container_id\": \"$CID\", \"linux\": {\"cpu_shares\": 512}}"

# Pause of the sandbox task (ctr on the CRI's namespace): runc freezes the
# pause process; sdpod refuses, naming why (its systemd would freeze).
if shim_is_sdpod; then
	assert_exit 1 ctr --address "$CTD_SOCK" -n k8s.io task pause "$SB"
	assert_contains "the sandbox's pause: refused, saying why" "$ERR" "is a sandbox"
	assert_exit 0 ctr --address "$CTD_SOCK" -n k8s.io task pause "$CID"
	assert_eq "a CRI container: paused" PAUSED "$(ctr --address "$CTD_SOCK" -n k8s.io task ls | awk -v id="$CID" '$1 == id { print $3 }')"
	# StopPodSandbox with a paused container ends it (thawed first).
fi
cri_call _ StopPodSandbox "{\"pod_sandbox_id\": \"$SB\"}"
cri_call _ RemovePodSandbox "{\"pod_sandbox_id\": \"$SB\"}"
containerd_leak_check

containerd_stop
leak_check
