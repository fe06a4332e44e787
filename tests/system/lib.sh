# shellcheck shell=bash
#
# lib.sh - sourced by every tests/system/test-*.sh, which run inside the
# test host that run-system-tests boots: sdpod is installed there (prefix
# $SDPOD_PREFIX), its systemd is PID 1, and the pods live in the default
# data directory, as on a user's machine.
#
# It builds on tests/integration/lib.sh (assertions, $T, skip and abort
# rules) and adds:
#   * sd / pa: the installed sdpod and podapp on the default data directory;
#   * busybox_image: a busybox image, built with umoci and imported once per
#     boot of the test host;
#   * host_counts: what a pod may leak on the host (mounts, cgroups, pod
#     processes, nspawn processes, pod directories, loop devices);
#   * $SDPOD_TEST_BOOT (1, 2, ...) and reboot_and_rerun: a test that needs
#     the test host rebooted does its first part when it is 1, then calls
#     reboot_and_rerun, and is run again after the reboot with 2.
#     /etc/sdpod and /var/lib/sdpod outlive the reboot, nothing else does.

[ -n "${SDPOD_PREFIX:-}" ] || { echo "ABORT - tests/system: run them with run-system-tests"; exit 1; }
SDPOD_BIN=$SDPOD_PREFIX/bin/sdpod
PODAPP_BIN=$SDPOD_PREFIX/bin/podapp
SDPOD_STAGE1=$SDPOD_PREFIX/lib/sdpod/stage1
# shellcheck source=../integration/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../integration/lib.sh"
# The installed defaults, not a test's own: pod@.service knows no other.
unset SDPOD_STAGE1 SDPOD_DIR
DATA=/var/lib/sdpod

require_root
[ "$(readlink /proc/1/exe)" = /usr/lib/systemd/systemd ] || die "PID 1 is not systemd: not in the test host"

# sd / pa: sdpod and podapp as a user types them.
sd() { "$SDPOD" "$@"; }
pa() { "$PODAPP" "$@"; }

# busybox_image: imports the image "busybox" unless the store has it.
busybox_image() {
	sd image inspect busybox >/dev/null 2>&1 && return 0
	use_real_images
	img_busybox_rootfs "$T/busybox-rootfs" >/dev/null
	img_oci_layout "$T/busybox-oci" latest "$T/busybox-rootfs" >/dev/null
	sd image import "$T/busybox-oci" --name=busybox >/dev/null
}


unit_prop() {
	systemctl show -P "$2" "$1"
}

# host_counts: one line per kind of resource a pod could leak.
host_counts() {
	local nspawn=0 p
	for p in /proc/[0-9]*; do
		[ "$(cat "$p/comm" 2>/dev/null)" = systemd-nspawn ] && nspawn=$((nspawn + 1))
	done
	echo "mounts $(wc -l </proc/self/mountinfo)"
	echo "machine.slice-cgroups $(find /sys/fs/cgroup -path '*/machine.slice/*' -type d 2>/dev/null | wc -l)"
	echo "pod-processes $(for p in /proc/[0-9]*; do grep -qz '^container_uuid=' "$p/environ" 2>/dev/null && echo; done | wc -l)"
	echo "nspawn-processes $nspawn"
	echo "pod-directories $(find "$DATA"/pods/{embryo,prepare,prepared,run,exited-garbage,garbage} -mindepth 1 -maxdepth 1 2>/dev/null | wc -l)"
	echo "machines $(machinectl list --no-legend 2>/dev/null | grep -c . || true)"
	echo "loop-devices $(losetup -a 2>/dev/null | wc -l)"
}

# gc_all: removes every pod that has ended, now.
gc_all() {
	sd gc --grace-period=0 >/dev/null
}

# reboot_and_rerun: ends this run of the test and asks run-system-tests to
# reboot the test host and run the test again, with SDPOD_TEST_BOOT one
# higher. A test whose checks failed already is not rerun: it fails.
SDPOD_TEST_BOOT=${SDPOD_TEST_BOOT:-1}
reboot_and_rerun() {
	if [ "$_failures" -gt 0 ]; then
		echo "# not rebooting: $_failures checks failed"
		exit 1
	fi
	exit 75
}
