# shellcheck shell=bash
# SPDX-License-Identifier: Apache-2.0
#
# tools/vm/lib.sh - the project's QEMU plumbing, sourced by tools/vm/build-image,
# tests/system/run-vm-tests and whatever boots a Debian 12 guest next (the
# VM pods of issue 28 are meant to reuse it): the accelerator this machine
# can give a guest, the cache of built images, and one function that starts
# QEMU with a kernel, its initramfs and disks, and one that ends it by PID.
#
# Facts it relies on (shared/notes/VERIFIED.md "Virtual machines here"):
#   * /dev/kvm can be a PVM one (kvm_pvm: the host is itself a guest), which
#     runs only PVM-built guest kernels; with Debian's kernel -enable-kvm
#     -cpu host aborts there. A clean start of QEMU with -enable-kvm proves
#     nothing, so KVM is used only when /dev/kvm opens, kvm_pvm is not loaded
#     and the CPU says vmx or svm; otherwise TCG with -cpu max.
#   * q35 and microvm boot Debian's cloud kernel in about 2 s under TCG; q35
#     is used as its virtio-pci devices are found by the stock initramfs
#     without help, and microvm needs tsc_early_khz= under TCG.

# Where built images are kept, one directory per key (vm_image_key).
VM_CACHE=${SDPOD_VM_CACHE:-/var/cache/sdpod-vm}

# vm_accel: prints "kvm" when the guest can run under KVM here, else "tcg".
# SDPOD_VM_ACCEL=tcg|kvm overrides (for a host where detection is wrong).
vm_accel() {
	if [ -n "${SDPOD_VM_ACCEL:-}" ]; then
		echo "$SDPOD_VM_ACCEL"
		return
	fi
	if [ -r /dev/kvm ] && [ -w /dev/kvm ] && [ ! -e /sys/module/kvm_pvm ] &&
		grep -qwE 'vmx|svm' /proc/cpuinfo; then
		echo kvm
	else
		echo tcg
	fi
}

# vm_machine_args ACCEL: the machine and CPU arguments of QEMU for ACCEL.
vm_machine_args() {
	case $1 in
	kvm) echo "-machine q35 -accel kvm -cpu host" ;;
	# tb-size: the translated-code cache; QEMU's default (1 GiB of it
	# reserved) is more than a test guest uses.
	tcg) echo "-machine q35 -accel tcg,thread=multi,tb-size=128 -cpu max" ;;
	*) echo "vm_machine_args: unknown accelerator '$1'" >&2; return 1 ;;
	esac
}

# vm_tsc_khz: "tsc_early_khz=KHZ" for a TCG guest's kernel command line
# (the host's TSC frequency), or nothing. Under TCG the guest cannot
# calibrate its TSC against the emulated PIT on a busy host (measured:
# "tsc: Unable to calibrate against PIT"), and microvm hangs now and then.
vm_tsc_khz() {
	local mhz
	[ "$(vm_accel)" = tcg ] || return 0
	mhz=$(awk -F': *' '/^cpu MHz/ { print $2; exit }' /proc/cpuinfo)
	[ -z "$mhz" ] || awk -v m="$mhz" 'BEGIN { printf "tsc_early_khz=%d\n", m * 1000 }'
}

# vm_image_key FILE...: a short hash of the files that define an image (the
# build script, its package list, its guest files): a changed definition is
# a new image, an unchanged one is built once per machine.
vm_image_key() {
	cat -- "$@" | sha256sum | cut -c1-16
}

# VM_PID: the QEMU process vm_start started; vm_kill ends it.
VM_PID=

# vm_start LOG KERNEL INITRD CMDLINE MEM CPUS DRIVE...: starts QEMU in the
# background, its serial console (the guest's console) appended to LOG, and
# sets VM_PID. Each DRIVE is FILE:SERIAL[:ro|:snapshot]; the guest sees it as
# /dev/disk/by-id/virtio-SERIAL. "snapshot" keeps FILE as it is: the
# guest's writes go to a temporary file that QEMU drops when it exits (and
# that outlives reboots of the guest, as a disk does). No network device,
# no display, nothing but the given disks; a guest reboot restarts the
# guest in the same QEMU process, a poweroff ends QEMU.
vm_start() {
	local log=$1 kernel=$2 initrd=$3 cmdline=$4 mem=$5 cpus=$6 accel d file serial mode opts
	shift 6
	accel=$(vm_accel)
	# shellcheck disable=SC2207
	local args=($(vm_machine_args "$accel")) i=0
	args+=(-m "$mem" -smp "$cpus" -nodefaults -no-user-config -nographic
		-serial "file:$log" -monitor none -nic none
		-kernel "$kernel" -initrd "$initrd" -append "$cmdline")
	for d in "$@"; do
		IFS=: read -r file serial mode <<<"$d"
		opts="file=$file,format=raw,if=none,id=d$i,cache=unsafe"
		case $mode in
		ro) opts+=",readonly=on" ;;
		snapshot) opts+=",snapshot=on" ;;
		"") ;;
		*) echo "vm_start: $d: unknown mode '$mode'" >&2; return 1 ;;
		esac
		args+=(-drive "$opts" -device "virtio-blk-pci,drive=d$i,serial=$serial")
		i=$((i + 1))
	done
	qemu-system-x86_64 "${args[@]}" </dev/null >>"$log.qemu" 2>&1 &
	VM_PID=$!
}

# vm_wait SECONDS: waits for QEMU to end (the guest powered off), at most
# SECONDS; returns 0 when it ended, 1 when the deadline passed (QEMU still
# runs: vm_kill it).
vm_wait() {
	local deadline=$((SECONDS + $1))
	while kill -0 "$VM_PID" 2>/dev/null; do
		((SECONDS < deadline)) || return 1
		sleep 0.5
	done
	wait "$VM_PID" 2>/dev/null || true
	return 0
}

# vm_kill: ends QEMU by its PID (SIGKILL: a guest has nothing to save that
# a test wants), and reaps it. Safe to call when it has ended already.
vm_kill() {
	[ -n "$VM_PID" ] || return 0
	kill -KILL "$VM_PID" 2>/dev/null || true
	wait "$VM_PID" 2>/dev/null || true
	VM_PID=
}
