#!/usr/bin/env bash
# The limits of apps and pods on a pure cgroup v2 host with systemd
# (run-vm-tests' Debian 12 VM), where each is a file of the app's cgroup
# that the pod's systemd writes: --memory is memory.max, and an app that
# goes beyond it is killed by the kernel's OOM killer and that is seen (the
# app's status and the pod's journal); --cpus is cpu.max and holds the app
# to it; --pids-limit is pids.max, and a fork beyond it fails;
# --pod-pids-limit, --pod-memory and --pod-cpus are the pids.max,
# memory.max and cpu.max of the pod's unit. sdpod stats shows
# memory, CPU, pids and block I/O of the pod and each app, with the limits.
. "$(dirname "$0")/lib.sh"
require_tool jq
[ "$(stat -f -c %T /sys/fs/cgroup)" = cgroup2fs ] || skip "needs a pure cgroup v2 host (run-vm-tests)"
busybox_image

UNIT=
trap '_rc=$?; set +e; [ -z "$UNIT" ] || systemctl stop "$UNIT"; gc_all; (exit "$_rc"); _lib_on_exit' EXIT

# app_cg UNIT APP: the cgroup2 directory of APP's unit in the pod of UNIT.
app_cg() {
	find "/sys/fs/cgroup$(unit_prop "$1" ControlGroup)" -maxdepth 6 -type d -name "app@$2.service" 2>/dev/null | head -n 1
}

# The io app writes to /tmp, in its root's writable layer: the test image
# has no /var/tmp (a write there failed unseen).
uuid=$(sd prepare --pod-pids-limit=300 --pod-memory=512Mi --pod-cpus=2 \
	busybox --app=mem --memory=64Mi --exec=/bin/sleep -- 600 --- \
	busybox --app=busy --cpus=0.25 --exec=/bin/sh -- -c 'while :; do :; done' --- \
	busybox --app=forks --pids-limit=20 --exec=/bin/sh -- -c \
		'(i=0; while [ $i -lt 40 ]; do sleep 600 & i=$((i + 1)); done) 2>/dev/null; echo forks=done; exec sleep 600' --- \
	busybox --app=io --exec=/bin/sh -- -c 'dd if=/dev/zero of=/tmp/io bs=1M count=8 conv=fsync 2>&1; echo io=done; exec sleep 600')
UNIT=pod@$uuid.service
systemctl start "$UNIT" || die "pod@$uuid.service did not start: $(systemctl status --no-pager "$UNIT" 2>&1 | tail -n 20)"
# (Not app forks: at its limit, a command entered there could not start.)
for a in mem busy io; do
	wait_until 120 sd enter --app="$a" "$uuid" true || die "app $a of pod $uuid did not start"
done
wait_until 120 journal_has io=done "$uuid" || fail "the io app wrote its file"

echo "# --pod-pids-limit: the pod's unit"
pod_cg=/sys/fs/cgroup$(unit_prop "$UNIT" ControlGroup)
assert_eq "the unit's TasksMax" 300 "$(unit_prop "$UNIT" TasksMax)"
assert_eq "the pod's pids.max" 300 "$(cat "$pod_cg/pids.max")"
echo "# --pod-memory, --pod-cpus: the pod's unit"
assert_eq "the unit's MemoryMax" 536870912 "$(unit_prop "$UNIT" MemoryMax)"
assert_eq "the pod's memory.max" 536870912 "$(cat "$pod_cg/memory.max")"
assert_eq "the pod's cpu.max" "200000 100000" "$(cat "$pod_cg/cpu.max")"
for c in cpu io memory pids; do
	assert_contains "the pod's systemd has the $c controller" "$(cat "$pod_cg/cgroup.subtree_control")" "$c"
done

echo "# --memory: memory.max"
cg=$(app_cg "$UNIT" mem)
[ -n "$cg" ] || die "app mem has no cgroup below $pod_cg"
assert_eq "memory.max of app mem" 67108864 "$(cat "$cg/memory.max")"

echo "# --cpus: cpu.max, and the app is held to it"
cg=$(app_cg "$UNIT" busy)
assert_eq "cpu.max of app busy" "25000 100000" "$(cat "$cg/cpu.max")"
read -r _ u0 <"$cg/cpu.stat"
sleep 4
read -r _ u1 <"$cg/cpu.stat"
pct=$(((u1 - u0) / 40000))
echo "# app busy used ${pct}% of a CPU over 4 s"
check "app busy uses at most its quarter of a CPU (and some)" test "$pct" -le 35 -a "$pct" -ge 1

echo "# --pids-limit: pids.max, and forks beyond it fail"
# The app forks 40 sleeps in a subshell, which ends at the first fork
# refused (busybox sh exits on it); what it made stays.
cg=$(app_cg "$UNIT" forks)
assert_eq "pids.max of app forks" 20 "$(cat "$cg/pids.max")"
wait_until 120 journal_has forks=done "$uuid" || fail "app forks went on after its forks"
n=$(cat "$cg/pids.current")
echo "# app forks has $n tasks, after trying 40 sleeps"
check "its tasks are at the limit, no more" test "$n" -le 20 -a "$n" -ge 18
check "the kernel counted the refused forks" test "$(sed -n 's/^max //p' "$cg/pids.events")" -gt 0

echo "# --memory exceeded: the OOM killer ends the app, and that is seen"
# A pod of its own: a failed app ends an immutable pod.
rc=0
sd run --uuid-file="$T/hog.uuid" busybox --app=hog --memory=32Mi \
	--exec=/bin/dd -- if=/dev/zero of=/dev/null bs=100M count=1 >"$T/hog.out" 2>&1 || rc=$?
hog=$(cat "$T/hog.uuid")
sed 's/^/# run: /' "$T/hog.out"
check "the pod of the hog failed (exit $rc)" test "$rc" -ne 0
status=$(sd status "$hog")
echo "$status" | grep '^app-hog' | sed 's/^/# status: /' || true
J=$(sd journal "$hog" --no-pager -o cat 2>/dev/null)
echo "$J" | grep -i 'oom\|kill' | sed 's/^/# journal: /' || true
assert_contains "the pod's journal says the OOM killer killed it" "$J" "OOM killer"
assert_contains "and that its unit failed with oom-kill" "$J" "oom-kill"
assert_match "its status is a kill by the kernel" 'KILL|137|oom' "$(echo "$status" | grep '^app-hog=')"
sd rm "$hog" >/dev/null

echo "# sdpod stats: memory, CPU, pids and block I/O of the pod and of each app"
assert_exit 0 sd stats --format=json "$uuid"
S=$OUT
echo "# $(sd stats "$uuid" | tr -s ' ' | tr '\n' '|')"
echo "# the pod's io.stat: $(tr '\n' '|' <"$pod_cg/io.stat")"
echo "# app io's io.stat: $(tr '\n' '|' <"$(app_cg "$UNIT" io)/io.stat" 2>&1)"
app() { jq -c --arg a "$1" ".[0].apps[] | select(.name == \$a) | $2" <<<"$S"; }
assert_eq "the pod's memory is accounted" true "$(jq -c '.[0].memory_bytes > 0' <<<"$S")"
assert_eq "the pod's CPU time" true "$(jq -c '.[0].cpu_usec > 0' <<<"$S")"
assert_eq "the pod's pids and their limit" true "$(jq -c '.[0].pids > 20 and .[0].pids_limit == 300' <<<"$S")"
assert_eq "the pod's block I/O is a figure" true "$(jq -c '(.[0].io_read_bytes | type) == "number" and .[0].io_write_bytes >= 8388608' <<<"$S")"
assert_eq "app mem: its memory and limit" true "$(app mem '.memory_bytes > 0 and .memory_limit_bytes == 67108864')"
assert_eq "app busy: its CPU, a quarter of one" true "$(app busy '.cpu_usec > 0 and .cpu_percent <= 35')"
assert_eq "app forks: pids at the limit" true "$(app forks '.pids <= 20 and .pids >= 18 and .pids_limit == 20')"
assert_eq "app io: its writes" true "$(app io '.io_write_bytes >= 8388608')"
assert_eq "app io: no memory limit is null" null "$(app io '.memory_limit_bytes')"

assert_exit 0 systemctl stop "$UNIT"
UNIT=
gc_all
