#!/usr/bin/env bash
# The limits of apps and pods on a pure cgroup v2 host with systemd
# (run-vm-tests' Debian 12 VM), where each is a file of the app's cgroup
# that the pod's systemd writes: --memory is memory.max, and an app that
# goes beyond it is killed by the kernel's OOM killer and that is seen (the
# app's status and the pod's journal); --cpus is cpu.max and holds the app
# to it; --pids-limit is pids.max, and a fork beyond it fails;
# --pod-pids-limit is the pids.max of the pod's unit. sdpod stats shows
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

uuid=$(sd prepare --pod-pids-limit=300 \
	busybox --app=mem --memory=64Mi --exec=/bin/sleep -- 600 --- \
	busybox --app=busy --cpus=0.25 --exec=/bin/sh -- -c 'while :; do :; done' --- \
	busybox --app=forks --pids-limit=20 --exec=/bin/sh -- -c \
		'n=0; for i in $(seq 40); do sleep 600 & n=$((n + 1)); done 2>/dev/null; echo "forked=$(jobs -p | wc -l)"; exec sleep 600' --- \
	busybox --app=hog --memory=32Mi --exec=/bin/dd -- if=/dev/zero of=/dev/null bs=100M count=1 --- \
	busybox --app=io --exec=/bin/sh -- -c 'dd if=/dev/zero of=/var/tmp/io bs=1M count=8 conv=fsync 2>/dev/null; echo io=done; exec sleep 600')
UNIT=pod@$uuid.service
assert_exit 0 systemctl start "$UNIT"
for a in mem busy forks io; do
	wait_until 60 sd enter --app="$a" "$uuid" true || die "app $a of pod $uuid did not start"
done
wait_until 30 journal_has io=done "$uuid" || fail "the io app wrote its file"

echo "# --pod-pids-limit: the pod's unit"
pod_cg=/sys/fs/cgroup$(unit_prop "$UNIT" ControlGroup)
assert_eq "the unit's TasksMax" 300 "$(unit_prop "$UNIT" TasksMax)"
assert_eq "the pod's pids.max" 300 "$(cat "$pod_cg/pids.max")"
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
check "app busy uses at most its quarter of a CPU (and some)" test "$pct" -le 35 -a "$pct" -ge 5

echo "# --pids-limit: pids.max, and forks beyond it fail"
cg=$(app_cg "$UNIT" forks)
assert_eq "pids.max of app forks" 20 "$(cat "$cg/pids.max")"
wait_until 30 journal_has forked= "$uuid" || fail "app forks reported its forks"
forked=$(sd journal "$uuid" --no-pager -o cat | sed -n 's/^forked=//p' | tail -n 1)
echo "# app forks made $forked of 40 processes"
check "it could not make 40" test "${forked:-40}" -lt 40
assert_eq "its tasks are at the limit, no more" 20 "$(cat "$cg/pids.current")"
check "the kernel counted the refused forks" test "$(sed -n 's/^max //p' "$cg/pids.events")" -gt 0

echo "# --memory exceeded: the OOM killer ends the app, and that is seen"
wait_until 60 sh -c "$SDPOD status $uuid | grep -q '^app-hog\.'" || true
status=$(sd status "$uuid")
echo "$status" | grep '^app-hog' | sed 's/^/# /'
wait_until 30 journal_has oom "$uuid" || true
J=$(sd journal "$uuid" --no-pager -o cat 2>/dev/null)
assert_contains "the pod's journal says the OOM killer killed it" "$J" "OOM killer"
assert_contains "and that its unit failed with oom-kill" "$J" "oom-kill"
assert_match "its exit status is SIGKILL's" '137|SIGKILL|KILL' "$(echo "$status" | grep '^app-hog\.')"
check "the hog is not running" sh -c "! $SDPOD enter --app=hog $uuid true"

echo "# sdpod stats: memory, CPU, pids and block I/O of the pod and of each app"
assert_exit 0 sd stats --format=json "$uuid"
S=$OUT
echo "# $(sd stats "$uuid" | tr -s ' ' | tr '\n' '|')"
app() { jq -c --arg a "$1" ".[0].apps[] | select(.name == \$a) | $2" <<<"$S"; }
assert_eq "the pod's memory is accounted" true "$(jq -c '.[0].memory_bytes > 0' <<<"$S")"
assert_eq "the pod's CPU time" true "$(jq -c '.[0].cpu_usec > 0' <<<"$S")"
assert_eq "the pod's pids and their limit" true "$(jq -c '.[0].pids > 20 and .[0].pids_limit == 300' <<<"$S")"
assert_eq "the pod's block I/O is a figure" true "$(jq -c '(.[0].io_read_bytes | type) == "number" and .[0].io_write_bytes >= 8388608' <<<"$S")"
assert_eq "app mem: its memory and limit" true "$(app mem '.memory_bytes > 0 and .memory_limit_bytes == 67108864')"
assert_eq "app busy: its CPU, a quarter of one" true "$(app busy '.cpu_usec > 0 and .cpu_percent <= 35')"
assert_eq "app forks: pids at the limit" true "$(app forks '.pids == 20 and .pids_limit == 20')"
assert_eq "app io: its writes" true "$(app io '.io_write_bytes >= 8388608')"
assert_eq "app io: no memory limit is null" null "$(app io '.memory_limit_bytes')"
assert_eq "app hog: not running" false "$(app hog '.running')"

assert_exit 0 systemctl stop "$UNIT"
UNIT=
gc_all
