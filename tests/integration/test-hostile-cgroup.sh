#!/bin/bash
#
# test-hostile-cgroup.sh - what the host holds a pod by: its cgroups
# (sdpod-security(7)). On a host without systemd the run entrypoint puts
# every pod in cgroups of its own before nspawn starts, and the pod cannot
# change them:
#   - a device rule, deny by default (the v1 devices controller): a device
#     node that reaches the pod on a file system without nodev still does
#     not open;
#   - the pod's cgroup is the handle gc kills it by: a pod that forges its
#     identity (its PID 1's container_uuid=, its lifeline stopped) is still
#     killed, and a pod that cannot be killed is not deleted (its ids,
#     address and directory stay until it is gone);
#   - a task limit (the pids controller): a fork bomb in an app stops at
#     the pod's limit, and the host can still fork.

. "$(dirname "$0")/lib.sh"

use_real_images
require_tool systemd-nspawn systemd-container
require_tool nsenter util-linux
require_tool losetup util-linux
require_tool python3
if [ ! -d /sys/fs/cgroup/devices ] || [ ! -d /sys/fs/cgroup/pids ]; then
	skip "this test is for a host without systemd with cgroup v1 controllers (devices, pids)"
fi

LOOP=
FROZEN_CG=
cleanup() {
	set +e
	trap - ERR
	bg_pods_cleanup
	# Thawed, what the test froze dies with its pod (gc kills it).
	[ -z "$FROZEN_CG" ] || echo THAWED >"$FROZEN_CG/freezer.state" 2>/dev/null
	remove_all_pods
	if [ -n "$FROZEN_CG" ]; then
		for _ in $(seq 50); do [ -s "$FROZEN_CG/cgroup.procs" ] || break; sleep 0.1; done
		rmdir "$FROZEN_CG" 2>/dev/null
	fi
	[ -z "$LOOP" ] || losetup -d "$LOOP"
}
trap '_rc=$?; cleanup; (exit "$_rc"); _lib_on_exit' EXIT
leak_begin

busybox_layout
import_ok BB --name=busybox "$IMG/oci"

pidns_of() { stat -L -c %i "/proc/$(leader_of "$1")/ns/pid"; }
# app_pid UUID: the host PID of the pod's "/bin/sleep 1000".
app_pid() {
	local p
	for p in $(pidns_procs "$(pidns_of "$1")"); do
		[ "$(tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null)" != "/bin/sleep 1000 " ] || { echo "$p"; return 0; }
	done
	return 0
}
# kill_lifeline UUID: what the pod's root can do, its lifeline stopped.
kill_lifeline() {
	local p
	for p in $(pidns_procs "$(pidns_of "$1")"); do
		! tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null | grep -q lifeline || kill -KILL "$p"
	done
	return 0
}

# ---------------------------------------------------------------------------
echo "# a device node that reaches a pod does not open: the pod's device rule"
# ---------------------------------------------------------------------------
# A scratch loop device stands for a host disk. The host's root (the test)
# puts its node, mode 0666, on a tmpfs mounted WITHOUT nodev in an app's
# mount namespace: neither nodev nor the user namespace stands in the way
# (the tmpfs belongs to the host's user namespace), only the device rule.
truncate -s 1M "$T/disk"
printf 'host-disk-%s' $$ | dd of="$T/disk" conv=notrunc status=none
LOOP=$(losetup -f --show "$T/disk")
maj=$((0x$(stat -c %t "$LOOP"))) min=$((0x$(stat -c %T "$LOOP")))
# The app waits for the node, then tries it (its output goes to the
# journal), as uid 1000, like the app of the report.
run_bg D --net=host busybox --user=1000 --exec=/bin/sh -- -c '
	while [ ! -e /tmp/dev/ready ]; do sleep 0.1; done
	id -u
	head -c 32 /tmp/dev/disk 2>&1 && echo && echo disk=opened || echo disk=refused
	echo x >/tmp/dev/null && echo null=opened || echo null=refused
	echo x >/dev/null && echo devnull=opened
	echo probe=done
	while [ ! -e /tmp/dev/ready2 ]; do sleep 0.1; done
	head -c 32 /tmp/dev/disk 2>&1 && echo && echo disk2=opened || echo disk2=refused
	echo x >/tmp/dev/null && echo null2=opened || echo null2=refused
	echo probe2=done
	exec sleep 1000'
wait_app "$D" busybox
app=
for p in $(pidns_procs "$(pidns_of "$D")"); do
	! tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null | grep -q 'dev/ready' || app=$p
done
[ -n "$app" ] || die "the app of pod $D was not found"
nsenter -t "$app" -m /bin/sh -c "mkdir -p /tmp/dev && mount -t tmpfs -o mode=0755 h2dev /tmp/dev &&
	mknod -m 0666 /tmp/dev/disk b $maj $min && mknod -m 0666 /tmp/dev/null c 1 3 && touch /tmp/dev/ready"
wait_for "the app tried the node" 20 journal_has probe=done "$D"
OUT=$(sd journal "$D" --no-pager -o cat 2>/dev/null)
assert_contains "the app runs as uid 1000" "$OUT" "1000"
assert_not_contains "the node of a host disk does not open" "$OUT" "host-disk-"
assert_contains "the device rule refuses it" "$OUT" "disk=refused"
assert_contains "a node of an allowed pseudo-device opens on the same tmpfs" "$OUT" "null=opened"
assert_contains "the pod's own /dev/null opens" "$OUT" "devnull=opened"
# The same rule in the pod's cgroup2 cgroup (a BPF device program, what a
# cgroup v2 host has): with the v1 rule lifted by the host, it still holds.
echo a >"/sys/fs/cgroup/devices/sdpod/$D/devices.allow"
assert_contains "the v1 rule is lifted" "$(cat "/sys/fs/cgroup/devices/sdpod/$D/devices.list")" "a *:* rwm"
nsenter -t "$app" -m /bin/touch /tmp/dev/ready2
wait_for "the app tried the node again" 20 journal_has probe2=done "$D"
OUT=$(sd journal "$D" --no-pager -o cat 2>/dev/null)
assert_not_contains "without the v1 rule, the node still does not open" "$OUT" "disk2=opened"
assert_contains "the cgroup2 device program refuses it" "$OUT" "disk2=refused"
assert_contains "and allows the pseudo-devices" "$OUT" "null2=opened"
echo a >"/sys/fs/cgroup/devices/sdpod/$D/devices.deny"
printf 'c 1:3 rwm\nc 1:5 rwm\nc 1:7 rwm\nc 1:8 rwm\nc 1:9 rwm\nc 5:0 rwm\nc 5:2 rwm\nc 136:* rwm\n' |
	while read -r rule; do echo "$rule" >"/sys/fs/cgroup/devices/sdpod/$D/devices.allow"; done
# The rule is the host's: not the pod's to change, even as its stage1's root.
cg=/sys/fs/cgroup/devices/sdpod/$D
assert_contains "the pod has a device rule of its own" "$(cat "$cg/devices.list" 2>/dev/null)" "c 1:3 rwm"
assert_not_contains "that denies by default" "$(cat "$cg/devices.list" 2>/dev/null)" "a *:* rwm"
l=$(leader_of "$D")
cp /bin/busybox "/proc/$l/root/tmp/busybox"
OUT=$(nsenter -t "$l" -U -m -p -r -w /tmp/busybox sh -c "
	echo 'b $maj:$min rwm' >/sys/fs/cgroup/devices/devices.allow 2>/dev/null && echo allow=written || echo allow=refused
	echo \$\$ >/sys/fs/cgroup/devices/cgroup.procs 2>/dev/null && echo moved=yes || echo moved=no" 2>&1)
assert_contains "the pod's root cannot widen it" "$OUT" "allow=refused"
assert_contains "nor leave it" "$OUT" "moved=no"
kill -TERM "$D_PID"
wait_pid "$D_PID"

# A pod without a user namespace boots under the rule (nspawn makes its
# /dev in it), its pseudo-devices work, and root in an app with CAP_MKNOD
# makes the disk's node but cannot open it.
assert_exit 0 sd run --private-users=no --net=host busybox --user=0 --cap-add=MKNOD --exec=/bin/sh -- -c "
	echo x >/dev/null && head -c 1 /dev/urandom >/dev/null && echo pseudo=ok
	mknod /tmp/disk b $maj $min && echo mknod=done
	head -c 32 /tmp/disk 2>/dev/null || echo disk=refused"
assert_contains "a pod without a user namespace has its pseudo-devices" "$OUT" "pseudo=ok"
assert_not_contains "its root does not open a node it made" "$OUT" "host-disk-"

# A node the operator gives the pod (a volume of a host device, what
# --device binds and podapp add --device needs) is in its rule.
assert_exit 0 pa sandbox --net=host --volume=disk,kind=host,source="$LOOP"
V=$OUT
assert_contains "a device volume is in the pod's rule" "$(cat "/sys/fs/cgroup/devices/sdpod/$V/devices.list")" "b $maj:$min rw"
assert_exit 0 sd stop "$V"

# ---------------------------------------------------------------------------
echo "# a pod that forges its identity is still killed by its cgroup"
# ---------------------------------------------------------------------------
# The pod's own root stops its lifeline and rewrites container_uuid= in its
# PID 1's environment (in the pod's user namespace, with the capabilities
# it has there: /proc/1/mem), then the supervisor dies. gc must still kill
# every process of the pod before it releases anything.
run_bg Z --net=host busybox --exec=/bin/sleep -- 1000
wait_app "$Z" busybox
l=$(leader_of "$Z")
ns=$(stat -L -c %i "/proc/$l/ns/pid")
kill_lifeline "$Z"
forged=$(cat /proc/sys/kernel/random/uuid)
nsenter -t "$l" -U python3 -c '
import sys
pid, old, new = sys.argv[1], sys.argv[2].encode(), sys.argv[3].encode()
f = open("/proc/%s/stat" % pid).read().rsplit(")", 1)[1].split()
start, end = int(f[47]), int(f[48])
with open("/proc/%s/mem" % pid, "r+b", buffering=0) as m:
    m.seek(start); env = m.read(end - start)
    i = env.index(b"container_uuid=" + old) + len(b"container_uuid=")
    m.seek(start + i); m.write(new)
' "$l" "$Z" "$forged"
check "the pod's PID 1 no longer says it is pod $Z" test "$(tr '\0' '\n' <"/proc/$l/environ" | grep '^container_uuid=')" = "container_uuid=$forged"
kill -KILL "$Z_PID" "$(nspawn_of "$Z")"
wait_pid "$Z_PID"
sleep 0.5
check "without its supervisor and lifeline the pod runs on" test -n "$(pidns_procs "$ns")"
assert_exit 0 sd rm "$Z"
assert_eq "gc killed every process of the pod" "" "$(pidns_procs "$ns")"
no_pod_cgroup "$Z"

# A process of a pod that a kill cannot end (here: frozen by the host in a
# v1 freezer cgroup of the test's, where SIGKILL waits for a thaw): gc
# kills what it can and keeps the pod in garbage, its ids and directory
# claimed, and says why.
run_bg Y --net=host busybox --exec=/bin/sleep -- 1000
wait_app "$Y" busybox
l=$(leader_of "$Y")
ns=$(stat -L -c %i "/proc/$l/ns/pid")
base=$(sd status "$Y" | sed -n 's/^private-users=//p')
app=$(app_pid "$Y")
[ -n "$app" ] || die "the app of pod $Y was not found"
FROZEN_CG=/sys/fs/cgroup/freezer/sdpod-test-$$
mkdir "$FROZEN_CG"
echo "$app" >"$FROZEN_CG/cgroup.procs"
echo FROZEN >"$FROZEN_CG/freezer.state"
kill_lifeline "$Y"
kill -KILL "$Y_PID" "$(nspawn_of "$Y")"
wait_pid "$Y_PID"
assert_exit "1|2|3|4|5" sd rm "$Y"
assert_contains "rm says why the pod stays" "$ERR" "still has processes"
check "the frozen process still runs" test -d "/proc/$app"
check "the pod is kept (in garbage)" test -d "$DATA/pods/exited-garbage/$Y" -o -d "$DATA/pods/garbage/$Y"
assert_contains "status says why" "$(sd status "$Y" 2>&1)" "gc-blocked=the pod still has processes"
assert_contains "in JSON too" "$(sd status --format=json "$Y" 2>&1)" '"gc_blocked": "the pod still has processes'
assert_contains "gc says why it leaves the pod" "$(sd gc --grace-period=0 2>&1)" "still has processes"
assert_match "list shows it, marked for gc" "${Y:0:8} .*gc-marked" "$(sd list --no-legend 2>&1)"
if [ -n "$base" ]; then
	check "its id range stays claimed" grep -rqs "${base%%:*}" "$DATA/userns" "$DATA"/pods/*/"$Y"/pod
fi
echo THAWED >"$FROZEN_CG/freezer.state"
wait_until 5 test ! -d "/proc/$app" || true
assert_exit 0 sd rm "$Y"
check "once the process is gone, rm deletes the pod" test ! -d "$DATA/pods/exited-garbage/$Y" -a ! -d "$DATA/pods/garbage/$Y"
assert_eq "and nothing of it runs" "" "$(pidns_procs "$ns")"
rmdir "$FROZEN_CG" && FROZEN_CG=

# ---------------------------------------------------------------------------
echo "# a fork bomb stops at the pod's task limit"
# ---------------------------------------------------------------------------
# Bounded for the code before the limit: 600 sleepers at most, 20 s each.
# shellcheck disable=SC2016 # the pod's shell expands it
run_bg F --net=host --pod-pids-limit=200 busybox --exec=/bin/sh -- -c \
	'i=0; while [ $i -lt 600 ]; do sleep 20 & i=$((i + 1)); done; wait'
# The pod's PID 1 in a pid namespace of its own: nspawn's first child may
# still be the helper it forks on the way (CI's run found it gone at once).
host_pidns=$(stat -L -c %i /proc/self/ns/pid)
pod_pidns_of_F() {
	local l n
	l=$(leader_of "$F" 2>/dev/null) && n=$(stat -L -c %i "/proc/$l/ns/pid" 2>/dev/null) &&
		[ -n "$n" ] && [ "$n" != "$host_pidns" ] && echo "$n"
}
wait_until 20 pod_pidns_of_F >/dev/null || die "pod $F did not start"
ns=$(pod_pidns_of_F) || die "pod $F: its PID 1 is gone"
cg=/sys/fs/cgroup/pids/sdpod/$F
peak=0 hits=0
for _ in $(seq 100); do
	n=$(pidns_procs "$ns" | wc -l)
	[ "$n" -le "$peak" ] || peak=$n
	hits=$(sed -n 's/^max //p' "$cg/pids.events" 2>/dev/null)
	[ "${hits:-0}" -eq 0 ] || break
	sleep 0.1
done
echo "# pod processes: peak $peak seen; forks refused at the limit: ${hits:-none}; pids.peak $(cat "$cg/pids.peak" 2>/dev/null)"
check "the pod's process count stays under its limit (200; peak seen $peak)" test "$peak" -le 200
check "the bomb hit the pod's limit: forks were refused" test "${hits:-0}" -gt 0
check "the pod's tasks never passed the limit" test "$(cat "$cg/pids.peak" 2>/dev/null || echo 999)" -le 200
assert_eq "the limit is the pod's pids cgroup's" 200 "$(cat "$cg/pids.max" 2>/dev/null)"
check "the host can still fork" /bin/true
kill -KILL "$F_PID" "$(nspawn_of "$F" 2>/dev/null)" 2>/dev/null || true
wait_pid "$F_PID"
assert_exit 0 sd rm "$F"
assert_eq "rm killed the bomb" "" "$(pidns_procs "$ns")"

echo "# the default limit"
run_bg G --net=host busybox --exec=/bin/sleep -- 1000
wait_app "$G" busybox
assert_eq "a pod has a task limit by default" 4096 "$(cat "/sys/fs/cgroup/pids/sdpod/$G/pids.max" 2>/dev/null)"
kill -TERM "$G_PID"
wait_pid "$G_PID"

bg_pods_cleanup
leak_check
