#!/bin/bash
#
# test-pod-limits.sh - the whole pod's memory and CPU limits, --pod-memory
# and --pod-cpus (sdpod(1), sdpod-security(7)), on a host without systemd
# (this one: the run entrypoint makes the pod's cgroups, in every v1
# controller of a hybrid host, or on cgroup2): the limits are the host's
# cgroup files, an app past the memory limit is killed by the kernel, a
# busy pod is throttled, sdpod stats shows them, both flavors have them.
# And what the pod's root tries: raising its own limits from inside.

. "$(dirname "$0")/lib.sh"

use_real_images
require_tool systemd-nspawn systemd-container
require_tool nsenter util-linux
require_tool jq

trap '_rc=$?; bg_pods_cleanup; (exit "$_rc"); _lib_on_exit' EXIT
leak_begin

busybox_layout
import_ok BB --name=busybox "$IMG/oci"

is_running() { [ "$(status_of "$1" state)" = running ]; }
MIB64=$((64 << 20))
if [ "$(stat -f -c %T /sys/fs/cgroup)" = cgroup2fs ]; then
	V2=1
	memory_limit() { cat "/sys/fs/cgroup/sdpod/$1/memory.max"; }
	cpu_limit() { cat "/sys/fs/cgroup/sdpod/$1/cpu.max"; }
	throttled() { sed -n 's/^nr_throttled //p' "/sys/fs/cgroup/sdpod/$1/cpu.stat"; }
	oom_kills() { sed -n 's/^oom_kill //p' "/sys/fs/cgroup/sdpod/$1/memory.events"; }
	WANT_CPU="50000 100000"
else
	V2=
	memory_limit() { cat "/sys/fs/cgroup/memory/sdpod/$1/memory.limit_in_bytes"; }
	cpu_limit() { echo "$(cat "/sys/fs/cgroup/cpu/sdpod/$1/cpu.cfs_quota_us") $(cat "/sys/fs/cgroup/cpu/sdpod/$1/cpu.cfs_period_us")"; }
	throttled() { sed -n 's/^nr_throttled //p' "/sys/fs/cgroup/cpu/sdpod/$1/cpu.stat"; }
	oom_kills() { sed -n 's/^oom_kill //p' "/sys/fs/cgroup/memory/sdpod/$1/memory.oom_control"; }
	WANT_CPU="50000 100000"
fi
echo "# cgroup${V2:+2}${V2:- v1}: $(stat -f -c %T /sys/fs/cgroup)"

# ---------------------------------------------------------------------------
echo "# bad values are refused, naming the option"
# ---------------------------------------------------------------------------
for v in lots 12x -5M; do
	assert_exit 2 sd prepare --pod-memory="$v" busybox --exec=/bin/true
	assert_contains "--pod-memory=$v: named, not a quantity" "$ERR" "--pod-memory"
done
assert_exit 2 sd prepare --pod-memory=1Mi busybox --exec=/bin/true
assert_contains "--pod-memory below what a pod needs" "$ERR" "less than a pod needs"
for v in 0 5m 2000000 x; do
	assert_exit 2 sd prepare --pod-cpus="$v" busybox --exec=/bin/true
	assert_contains "--pod-cpus=$v: not a number of CPUs" "$ERR" "not a number of CPUs"
done
assert_exit 2 sd prepare --pod-memory=64Mi --pod-memory=128Mi busybox --exec=/bin/true
assert_contains "given twice" "$ERR" "--pod-memory"
assert_exit 2 sd prepare busybox --pod-cpus=1 --exec=/bin/true --- busybox --pod-cpus=2 --exec=/bin/true
assert_exit 0 sd list --no-legend
assert_eq "no pod was made of them" "" "$OUT"

PREP=$(sd prepare --pod-memory=64Mi --pod-cpus=0.5 busybox --exec=/bin/true)
assert_eq "the manifest has the memory limit as given" 64Mi \
	"$(sd cat-manifest "$PREP" | jq -r '.annotations[] | select(.name == "sdpod/pod-memory") | .value')"
assert_eq "and the CPUs" 0.5 \
	"$(sd cat-manifest "$PREP" | jq -r '.annotations[] | select(.name == "sdpod/pod-cpus") | .value')"
sd rm "$PREP" >/dev/null

# ---------------------------------------------------------------------------
echo "# the limits are the host's files of the pod's cgroups"
# ---------------------------------------------------------------------------
# Two apps: the limits are the pod's, not each app's.
run_bg P --pod-memory=64Mi --pod-cpus=0.5 busybox --app=a --exec=/bin/sleep -- 1000 \
	--- busybox --app=b --exec=/bin/sleep -- 1000
wait_app "$P" a
assert_eq "the memory limit" "$MIB64" "$(memory_limit "$P")"
assert_eq "the CPU limit: 50 ms of every 100 ms" "$WANT_CPU" "$(cpu_limit "$P")"
assert_exit 0 sd stats --format=json --interval=0 "$P"
assert_jq "sdpod stats shows the memory limit" "$OUT" '.[0].memory_limit_bytes' "$MIB64"
check "and what the pod uses" jq -e '.[0].memory_bytes > 0 and .[0].memory_bytes < 67108864' <<<"$OUT"

# The pod's root, in all of the pod's namespaces, raises its limits: the
# files are the host root's, and nspawn mounts the hierarchies read-only.
OUT=$(as_pod_root "$P" '
	for f in /sys/fs/cgroup/memory/memory.limit_in_bytes /sys/fs/cgroup/memory.max \
		/sys/fs/cgroup/cpu/cpu.cfs_quota_us /sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us /sys/fs/cgroup/cpu.max; do
		[ -e "$f" ] || continue
		{ echo -1 >"$f"; } 2>/dev/null && echo "wrote $f"
		{ echo max >"$f"; } 2>/dev/null && echo "wrote $f"
	done
	echo tried' 2>&1)
assert_eq "the pod's root cannot raise them" "tried" "$OUT"
assert_eq "the memory limit holds" "$MIB64" "$(memory_limit "$P")"
assert_eq "the CPU limit holds" "$WANT_CPU" "$(cpu_limit "$P")"

# ---------------------------------------------------------------------------
echo "# the kernel holds the pod to them"
# ---------------------------------------------------------------------------
# An app of the pod that wants 128 MiB: the kernel's OOM killer ends it,
# the pod's other apps and systemd stay.
assert_exit 137 sd enter --app=a "$P" /bin/sh -c 'x=$(head -c 134217728 /dev/zero | tr "\0" a); echo got ${#x}'
check_not "the app did not get past the limit" grep -q "got" <<<"$OUT"
check "the kernel counted an OOM kill in the pod's cgroup" test "$(oom_kills "$P")" -ge 1
assert_eq "the pod runs on" running "$(status_of "$P" state)"
assert_exit 0 sd enter --app=b "$P" /bin/true

# Two busy loops against half a CPU: the kernel throttles the pod.
before=$(throttled "$P")
assert_exit 0 sd enter --app=b "$P" /bin/sh -c '(while :; do :; done) & (while :; do :; done) & sleep 1.5; kill $(jobs -p)'
check "the pod was throttled ($before, then $(throttled "$P") periods)" test "$(throttled "$P")" -gt "$before"

kill -TERM "$P_PID"
wait_pid "$P_PID"
assert_exit 0 sd rm "$P"
no_pod_cgroup "$P"

# ---------------------------------------------------------------------------
echo "# the fly flavor has them too"
# ---------------------------------------------------------------------------
run_bg F --stage1=fly --pod-memory=64Mi --pod-cpus=0.5 busybox --exec=/bin/sleep -- 1000
wait_for "the fly pod runs" 20 is_running "$F"
# Running, the app's cgroups are made a moment later (by its child).
wait_until 20 memory_limit "$F" || true
assert_eq "fly: the memory limit" "$MIB64" "$(memory_limit "$F" 2>/dev/null)"
assert_eq "fly: the CPU limit" "$WANT_CPU" "$(cpu_limit "$F" 2>/dev/null)"
kill -TERM "$F_PID"
wait_pid "$F_PID"
assert_exit 0 sd rm "$F"
no_pod_cgroup "$F"

leak_check "$DATA"
