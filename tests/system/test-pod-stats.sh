#!/usr/bin/env bash
# sdpod stats on a systemd host: the pod's cgroup is its unit's (pod@.service
# or the scope of a pod run from a shell), found from the host's part of the
# path, and what the host's systemd accounts there is shown.
. "$(dirname "$0")/lib.sh"
busybox_image

# cgroup_dir CGROUP: where the cgroup2 directory of CGROUP is on this host.
cgroup_dir() {
	if [ "$(stat -f -c %T /sys/fs/cgroup)" = cgroup2fs ]; then
		echo "/sys/fs/cgroup$1"
	else
		echo "/sys/fs/cgroup/unified$1"
	fi
}

echo "# a pod under pod@.service"
uuid=$(sd prepare busybox --app=web --exec=/bin/sh -- -c 'while :; do :; done')
unit=pod@$uuid.service
assert_exit 0 systemctl start "$unit"
assert_exit 0 sd stats --format=json "$uuid"
J=$OUT
cg=$(unit_prop "$unit" ControlGroup)
assert_eq "the pod's cgroup is its unit's" "\"$cg\"" "$(jq -c '.[0].cgroup' <<<"$J")"
assert_eq "its app" '["web"]' "$(jq -c '[.[0].apps[].name]' <<<"$J")"
assert_eq "the busy app uses a CPU" true "$(jq -c '.[0].apps[0].cpu_percent > 30' <<<"$J")"
d=$(cgroup_dir "$cg")
if [ -e "$d/memory.current" ]; then
	assert_eq "memory: the host's systemd accounts it" true "$(jq -c '.[0].memory_bytes > 0' <<<"$J")"
else
	assert_eq "memory: not accounted here: null" null "$(jq -c '.[0].memory_bytes' <<<"$J")"
fi
if [ -e "$d/pids.current" ]; then
	assert_eq "pids: from the controller" true "$(jq -c '.[0].pids > 0' <<<"$J")"
fi
echo "# $(sd stats "$uuid" | tr -s ' ')"
assert_exit 0 systemctl stop "$unit"
assert_exit 4 sd stats "$uuid"
assert_contains "a pod that has stopped: says so" "$ERR" "is not running (it is exited)"
sd rm "$uuid" >/dev/null

echo "# a pod run from a scope: machined gives it a scope of its own"
systemd-run --scope --quiet -- "$SDPOD" run --uuid-file="$T/uuid" busybox --app=idle --exec=/bin/sleep -- 1000 >"$T/run.out" 2>&1 &
run_pid=$!
wait_for "the pod runs" 30 test -s "$T/uuid"
uuid=$(cat "$T/uuid")
wait_for "its app runs" 30 sd enter --app=idle "$uuid" true
assert_exit 0 sd stats --format=json "$uuid"
J=$OUT
cg=$(jq -r '.[0].cgroup' <<<"$J")
assert_match "the pod's cgroup is machined's scope, not what the pod made below it" '^/machine\.slice/machine-[^/]+\.scope$' "$cg"
assert_eq "the app runs" true "$(jq -c '.[0].apps[0].running and .[0].apps[0].pids >= 1' <<<"$J")"
assert_exit 0 sd stop "$uuid"
wait "$run_pid" || true
sd rm "$uuid" >/dev/null
