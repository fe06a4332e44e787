#!/bin/bash
#
# test-hostile-disk.sh - a pod that fills the data directory's file system
# (sdpod-security(7), KNOWN LIMITS and "Records on a full disk"). The data
# directory is a small tmpfs of its own: one pod's app writes until the file
# system is full (ENOSPC). Then another pod's app exits and its exit status
# is recorded (the reaper overwrites a record reserved when the pod started,
# in place: no new block); the image store's records are intact and sdpod
# list/status/image list work; what needs new space (a manifest rewrite by
# podapp add, an import) fails with a message that names what it wrote and
# leaves the old record as it was. Once the filler is gone, all works again.
#
# It also prints what the reservation costs a pod (its status directory).

# In a mount namespace of its own: its small file system is no mount of the
# host's (the leak checks of tests running beside it count those), and goes
# with the namespace however the test ends.
if [ -z "${SDPOD_TEST_DISK_NS:-}" ] && [ "$(id -u)" = 0 ] && command -v unshare >/dev/null; then
	SDPOD_TEST_DISK_NS=1 exec unshare --mount --propagation private bash "$0" "$@"
fi

. "$(dirname "$0")/lib.sh"

use_real_images
require_tool systemd-nspawn systemd-container
require_tool jq
[ -n "$PODAPP" ] || die "podapp not found (PODAPP_BIN)"

# The data directory is a tmpfs of 160 MiB (the image, two pods, their
# journals): no loop device, and no reserve for root (ext4 keeps 5% for
# uid 0, which a pod with a user namespace cannot use but the host can).
# SDPOD_TEST_DISK_FS=ext4: an ext4 without a reserve on a loop device of
# its own instead (mount -o loop frees it at umount).
if [ "${SDPOD_TEST_DISK_FS:-tmpfs}" = ext4 ]; then
	require_tool mkfs.ext4 e2fsprogs
	truncate -s 160M "$T/disk.img"
	mkfs.ext4 -q -m 0 "$T/disk.img"
	mount -o loop "$T/disk.img" "$DATA"
	rm -rf "$DATA/lost+found"
	chmod 0755 "$DATA"
else
	mount -t tmpfs -o size=160m,mode=0755 sdpod-test-disk "$DATA"
fi
cleanup() {
	local rc=$?
	set +e
	trap - ERR
	remove_all_pods
	umount "$DATA" || umount -l "$DATA"
	(exit "$rc")
	_lib_on_exit
}
trap cleanup EXIT
leak_begin

echo "# the image"
busybox_layout
import_ok BB --name=busybox "$IMG/oci"
images_before=$(sd image list --no-legend)

app_exit() { pa status "$1" --app="$2" --format=json | jq -r .exit_status; }
app_state() { pa status "$1" --app="$2" --format=json | jq -r .state; }
state_is() { [ "$(app_state "$1" "$2")" = "$3" ]; }
avail_kb() { df --output=avail -k "$DATA" | tail -1 | tr -d ' '; }
full() { [ "$(avail_kb)" -lt 4 ]; }

# ---------------------------------------------------------------------------
echo "# a victim pod and a filler pod"
# ---------------------------------------------------------------------------
assert_exit 0 pa sandbox --name=victim --keep-on-app-failure
V=$OUT
# The victim exits 7 when asked to stop; a second one with a restart
# policy is restarted after each exit (its record of restarts).
assert_exit 0 pa add "$V" --app=quit busybox --exec=/bin/sh -- -c 'trap "exit 7" TERM; while :; do sleep 0.1; done'
assert_exit 0 pa start "$V" --app=quit
assert_exit 0 pa add "$V" --app=again busybox --restart=always --exec=/bin/sh -- -c 'sleep 1; exit 3'
assert_exit 0 pa start "$V" --app=again
wait_for "the victim's apps run" 20 state_is "$V" quit running
reserve=$(du -s --block-size=1 "$(pod_dir "$V")/status" | cut -f1)
echo "# the status directory of a pod with 2 apps takes $reserve bytes ($(du -s --apparent-size --block-size=1 "$(pod_dir "$V")/status" | cut -f1) apparent)"

assert_exit 0 pa sandbox --name=filler
F=$OUT
# It goes on writing, as an attacker would: what ext4 gives back after a
# refusal (its estimate of delayed allocations) is taken again.
assert_exit 0 pa add "$F" --app=fill busybox --user=1000 --exec=/bin/sh -- -c \
	'mkdir -p /tmp/f; i=0; while :; do dd if=/dev/zero of=/tmp/f/$i bs=1M count=8 2>/dev/null || sleep 0.05; i=$((i+1)); done'
assert_exit 0 pa start "$F" --app=fill
wait_for "the filler fills the data directory's file system" 60 full
echo "# what the pod left: $(df -k --output=avail "$DATA" | tail -1 | tr -d ' ') KiB"
# And the rest, as the host's root (what a pod without a user namespace
# would take too): on ext4, the pod's ids cannot take the last blocks the
# host can (delayed allocation's margin).
dd if=/dev/zero of="$DATA/host-fill" bs=4k 2>/dev/null || true
sync -f "$DATA"
dd if=/dev/zero of="$DATA/host-fill2" bs=1k 2>/dev/null || true
echo "# $(df -k "$DATA" | tail -1)"

# ---------------------------------------------------------------------------
echo "# on a full disk: statuses recorded, records intact, commands work"
# ---------------------------------------------------------------------------
assert_exit 0 pa stop "$V" --app=quit
wait_for "the victim's app stopped" 20 state_is "$V" quit exited || true
assert_eq "its exit status is recorded on a full disk" 7 "$(app_exit "$V" quit)"
# The second app exits by itself (3) and is restarted, each restart
# recorded (NAME.restarts) with the status it exited with.
restarts() { pa status "$V" --app=again --format=json | jq -r .restarts; }
r0=$(restarts)
more_restarts() { [ "$(restarts)" -gt "$r0" ]; }
wait_for "a restart is recorded on a full disk" 30 more_restarts || true
assert_exit 0 pa status "$V" --app=again --format=json
assert_eq "the restart records the status it exited with" 3 "$(jq -r .restart_exit_status <<<"$OUT")"

assert_exit 0 sd list
assert_contains "sdpod list shows the victim" "$OUT" "${V:0:8}  victim  running"
assert_exit 0 sd status "$V"
assert_exit 0 sd image list --no-legend
assert_eq "the image records are intact" "$images_before" "$OUT"
store_verify

# What needs new space fails and names it; the old record stays.
manifest_before=$(sha256sum <"$(pod_dir "$V")/pod")
assert_exit_not0() { local d=$1; shift; if "$@" >"$T/out" 2>&1; then fail "$d" "succeeded: $*"; else pass "$d"; fi; OUT=$(cat "$T/out"); }
assert_exit_not0 "podapp add fails on a full disk" pa add "$V" --app=more busybox --exec=/bin/true
assert_contains "and says why" "$OUT" "No space left on device"
echo "# podapp add said: $OUT"
assert_eq "the pod's manifest is unchanged" "$manifest_before" "$(sha256sum <"$(pod_dir "$V")/pod")"
assert_exit 0 pa list "$V"
assert_exit_not0 "an import fails on a full disk" sd image import --name=other "$IMG/oci"
assert_contains "and says why" "$OUT" "No space left on device"
echo "# the import said: $OUT"
assert_exit 0 sd image list --no-legend
assert_eq "the image records are still intact" "$images_before" "$OUT"

# ---------------------------------------------------------------------------
echo "# the filler gone, all works again"
# ---------------------------------------------------------------------------
assert_exit 0 sd stop "$F"
assert_exit 0 sd rm "$F"
rm -f "$DATA/host-fill" "$DATA/host-fill2"
assert_exit 0 pa add "$V" --app=more busybox --exec=/bin/sh -- -c 'exit 5'
assert_exit 0 pa start "$V" --app=more
wait_for "a new app runs and its status is recorded" 20 state_is "$V" more exited
assert_eq "its exit status" 5 "$(app_exit "$V" more)"
assert_exit 0 pa start "$V" --app=quit
wait_for "a stopped app starts again" 20 state_is "$V" quit running
assert_eq "its old status is cleared" null "$(app_exit "$V" quit)"
assert_exit 0 sd stop "$V"
assert_exit 0 sd rm "$V"
store_verify
leak_check
