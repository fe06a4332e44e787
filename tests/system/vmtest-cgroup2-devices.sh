#!/usr/bin/env bash
# The pod's device rule on a pure cgroup v2 host with systemd (run-vm-tests'
# Debian 12 VM): there the rule is a BPF device program that the host's
# systemd attaches to the pod's unit (pod@.service, or the scope of a pod
# run from a shell: DevicePolicy=closed, DeviceAllow=), and nothing else
# stands between a device node in the pod and the device. So the test puts
# a node of a scratch loop device where an app can reach it on a mount that
# is not nodev (a tmpfs the host mounts into the app's mount namespace, the
# worst case), and the app must fail to open it: in a default pod, as uid
# 1000 and as root, and in a --private-users=no pod with --cap-add=MKNOD,
# whose root also tries mknod(2) in its /dev. The standard pseudo-devices
# work; --device grants its one node and no other. The loop devices are
# files in $T, never a disk.
. "$(dirname "$0")/lib.sh"
require_tool losetup util-linux
require_tool nsenter util-linux
[ "$(stat -f -c %T /sys/fs/cgroup)" = cgroup2fs ] || skip "needs a pure cgroup v2 host (run-vm-tests)"
busybox_image

LOOP= LOOP2= UNITS=()
cleanup() {
	local u
	for u in "${UNITS[@]}"; do systemctl stop "$u" 2>/dev/null; done
	gc_all 2>/dev/null
	[ -z "$LOOP" ] || losetup -d "$LOOP"
	[ -z "$LOOP2" ] || losetup -d "$LOOP2"
}
trap '_rc=$?; set +e; cleanup; (exit "$_rc"); _lib_on_exit' EXIT

head -c 1048576 /dev/zero >"$T/disk.img"
head -c 1048576 /dev/zero >"$T/disk2.img"
LOOP=$(losetup -f --show "$T/disk.img")
LOOP2=$(losetup -f --show "$T/disk2.img")
IFS=: read -r MAJ MIN <"/sys/class/block/${LOOP#/dev/}/dev"
IFS=: read -r MAJ2 MIN2 <"/sys/class/block/${LOOP2#/dev/}/dev"
SUM=$(sha256sum <"$T/disk.img")
SUM2=$(sha256sum <"$T/disk2.img")
intact() {
	assert_eq "$1: the scratch disk is unchanged" "$SUM" "$(sha256sum <"$T/disk.img")"
	assert_eq "$1: the second scratch disk is unchanged" "$SUM2" "$(sha256sum <"$T/disk2.img")"
}
echo "# scratch disks $LOOP ($MAJ:$MIN), $LOOP2 ($MAJ2:$MIN2)"

OUTDIR=$T/out
mkdir -m 0777 "$OUTDIR"
VOL=(--volume=out,kind=host,source="$OUTDIR")
OUTMNT=--mount=volume=out,target=/out

# The app's probe: waits until /out/go.NAME exists (the test has planted
# its nodes in /tmp/dev), then tries each node and writes NAME=opened,
# refused (EPERM: the device rule) or absent to /out/NAME, and the errors.
# A node that opens is written to (marked), which the disk sums catch.
# shellcheck disable=SC2016
PROBE='try() { if [ ! -b "$1" ] && [ ! -c "$1" ]; then echo "$2=absent"; elif (exec 3<>"$1") 2>>/out/$N.err; then echo "$2=opened";
	printf SDPOD-HOSTILE | dd of="$1" bs=13 count=1 conv=notrunc 2>/dev/null; else echo "$2=refused"; fi; }
pseudo() { for d in null zero full random urandom; do (exec 3<>/dev/$d) 2>>/out/$N.err && echo "$d=opened" || echo "$d=refused"; done
	head -c 16 /dev/urandom | wc -c | sed "s/^ */urandom-read=/"
	(exec 3<>/dev/ptmx) 2>>/out/$N.err && echo ptmx=opened || echo ptmx=refused
	# No controlling terminal: ENXIO, which is not the device rule (EPERM).
	if (exec 3<>/dev/tty) 2>/out/$N.tty; then echo tty=opened; elif grep -q "Operation not permitted" /out/$N.tty; then echo tty=refused; else echo tty=no-ctty; fi; }
while [ ! -e /out/go.$N ]; do sleep 0.1; done'
result() { grep "^$2=" "$OUTDIR/$1" 2>/dev/null | cut -d= -f2; }

# app_pid UUID: the PID of the probe (its command line names /out/go) in
# the pod of UUID.
app_pid() {
	local l p
	l=$(leader_of "$1") || return 1
	for p in $(pidns_procs "$(stat -L -c %i "/proc/$l/ns/pid")"); do
		tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null | grep -q '/out/go' && { echo "$p"; return 0; }
	done
	return 1
}

# plant UUID NAME: the host's root mounts a tmpfs (not nodev: the host
# mounts it, not the pod) at /tmp/dev in the probe's mount namespace with
# nodes of both scratch disks and of /dev/null, then lets the probe go.
plant() {
	local pid
	wait_until 120 app_pid "$1" || die "$2: the probe of pod $1 did not start"
	pid=$(app_pid "$1")
	nsenter -t "$pid" -m /bin/sh -c "mkdir -p /tmp/dev && mount -t tmpfs -o mode=0755 planted /tmp/dev &&
		mknod -m 0666 /tmp/dev/disk b $MAJ $MIN && mknod -m 0666 /tmp/dev/disk2 b $MAJ2 $MIN2 &&
		mknod -m 0666 /tmp/dev/null c 1 3" || die "$2: cannot plant the nodes"
	touch "$OUTDIR/go.$2"
	wait_until 120 test -s "$OUTDIR/$2.done" || die "$2: the probe did not finish: $(cat "$OUTDIR/$2" 2>&1)"
	sed "s/^/# $2: /" "$OUTDIR/$2"
}

ATTACK="$PROBE"'
{ try /tmp/dev/disk disk; try /tmp/dev/disk2 disk2; try /tmp/dev/null planted-null; pseudo; } >/out/$N 2>&1; echo done >/out/$N.done'

# The pseudo-devices and the planted nodes, for probe NAME.
check_rule() {
	local n=$1 d
	assert_eq "$n: the planted node of a host disk does not open" refused "$(result "$n" disk)"
	assert_eq "$n: nor that of another" refused "$(result "$n" disk2)"
	assert_contains "$n: the kernel says EPERM (the device rule), not a missing node" "$(cat "$OUTDIR/$n.err")" \
		"Operation not permitted"
	assert_eq "$n: a planted node of /dev/null opens (the rule allows it, the mount is not nodev)" opened \
		"$(result "$n" planted-null)"
	for d in null zero full random urandom ptmx; do
		assert_eq "$n: /dev/$d opens" opened "$(result "$n" "$d")"
	done
	assert_eq "$n: /dev/urandom reads" 16 "$(result "$n" urandom-read)"
	assert_match "$n: /dev/tty is not refused by the rule" '^(opened|no-ctty)$' "$(result "$n" tty)"
}

echo "# a default pod (user namespace) under pod@.service, uid 1000 and root"
for who in 1000 0; do
	n=svc-u$who
	uuid=$(sd prepare "${VOL[@]}" busybox "$OUTMNT" --user="$who" --exec=/bin/sh -- -c "N=$n; $ATTACK; exec sleep 600")
	unit=pod@$uuid.service
	UNITS+=("$unit")
	systemctl start "$unit" || die "$n: $unit did not start: $(systemctl status --no-pager "$unit" 2>&1 | tail -n 20)"
	assert_eq "$n: the pod's unit has the closed device policy" closed "$(unit_prop "$unit" DevicePolicy)"
	plant "$uuid" "$n"
	check_rule "$n"
	assert_exit 0 systemctl stop "$unit"
done
intact "a default pod"

# From a scope, as from a login shell: machined gives the pod a scope of its
# own, on which sdpod sets the device rule (in a service, the pod would be
# in the service's cgroup, under its rule: sdpod-security(7)).
echo "# a --private-users=no pod run from a shell (a scope), root with --cap-add=MKNOD"
n=scope-mknod
MK='mknod /dev/mk-disk b '"$MAJ $MIN"' 2>>/out/$N.mknod && echo mknod-disk=made || echo mknod-disk=refused
	try /dev/mk-disk made-disk
	mknod /dev/mk-null c 1 3 2>>/out/$N.mknod && echo mknod-null=made || echo mknod-null=refused
	try /dev/mk-null made-null'
systemd-run --scope --quiet "$SDPOD" run --uuid-file="$T/uuid.$n" --private-users=no "${VOL[@]}" busybox "$OUTMNT" --user=0 --cap-add=MKNOD \
	--exec=/bin/sh -- -c "N=$n; $ATTACK; { $MK; } >>/out/$n 2>&1; echo done >/out/$n.mk" >"$T/run.$n" 2>&1 &
RUN=$!
wait_until 120 test -s "$T/uuid.$n" || die "$n: the pod did not start: $(cat "$T/run.$n")"
plant "$(cat "$T/uuid.$n")" "$n"
wait_until 120 test -s "$OUTDIR/$n.mk" || fail "$n: mknod probe finished"
sed "s/^/# $n: /" "$OUTDIR/$n"
rc=0
wait "$RUN" || rc=$?
assert_eq "$n: sdpod run exits 0" 0 "$rc"
check_rule "$n"
assert_eq "$n: mknod of a host disk in the pod's /dev is refused" refused "$(result "$n" mknod-disk)"
assert_contains "$n: with EPERM (the rule's m access)" "$(cat "$OUTDIR/$n.mknod" 2>&1)" "Operation not permitted"
assert_match "$n: so there is no node to open" '^(absent|refused)$' "$(result "$n" made-disk)"
assert_eq "$n: mknod of /dev/null's numbers works (CAP_MKNOD, the rule allows it)" made "$(result "$n" mknod-null)"
assert_eq "$n: and that node opens" opened "$(result "$n" made-null)"
intact "a --private-users=no pod with CAP_MKNOD"

echo "# --device grants its one node"
n=device
uuid=$(sd prepare --private-users=no "${VOL[@]}" busybox "$OUTMNT" --device="$LOOP" --user=0 \
	--exec=/bin/sh -- -c "N=$n; $ATTACK; { try $LOOP granted; } >>/out/$n 2>&1; echo done >/out/$n.granted; exec sleep 600")
unit=pod@$uuid.service
UNITS+=("$unit")
systemctl start "$unit" || die "$n: $unit did not start: $(systemctl status --no-pager "$unit" 2>&1 | tail -n 20)"
assert_contains "$n: the pod's unit allows the device" "$(unit_prop "$unit" DeviceAllow)" "/dev/block/$MAJ:$MIN rw"
plant "$uuid" "$n"
wait_until 120 test -s "$OUTDIR/$n.granted" || fail "$n: the granted node was tried"
sed "s/^/# $n: /" "$OUTDIR/$n"
assert_eq "$n: the granted node opens" opened "$(result "$n" granted)"
assert_eq "$n: a planted node of the same device opens too (same numbers)" opened "$(result "$n" disk)"
assert_eq "$n: another disk's node does not" refused "$(result "$n" disk2)"
check "$n: the app wrote to its device" grep -q SDPOD-HOSTILE "$T/disk.img"
assert_eq "$n: the other disk is unchanged" "$SUM2" "$(sha256sum <"$T/disk2.img")"
assert_exit 0 systemctl stop "$unit"
gc_all
