#!/bin/bash
#
# test-hostile-pod.sh - the pod boundary holds (sdpod-security(7)). Every
# attack here was tried on real pods as an attacker would, and each that
# worked once stays here: it runs inside a real pod (as root in an app, or
# as root of the pod's own stage1, with every capability of its user
# namespace), and the test asserts that it failed AND that the host is
# unchanged (core_pattern, a victim directory, a sentinel, memory).
#
# hostile-probe (tests/integration/hostile-probe.c) makes the system calls
# busybox cannot: io_uring, userfaultfd, keyrings, AF_PACKET, bpf, perf,
# modules, the clock, syslog, open_by_handle_at, kexec; and lists the
# fds a command was handed.

. "$(dirname "$0")/lib.sh"

use_real_images
require_tool systemd-nspawn systemd-container
require_tool nsenter util-linux
require_tool python3
[ -n "$PODAPP" ] || die "podapp not found (PODAPP_BIN)"

remove_pods_on_exit
leak_begin

echo "# building the image: busybox and the probe"
import_probe_image

# probe_result NAME TEXT: what hostile-probe said about NAME in TEXT.
probe_result() { grep -o "$1=[A-Za-z0-9_-]*" <<<"$2" | head -1 | cut -d= -f2; }
# refused WHAT ATTEMPT TEXT: hostile-probe's ATTEMPT was refused: EPERM, or,
# for a system call of a foreign ABI, the process killed (SIGSYS, 31), as
# SystemCallArchitectures= refuses one.
refused() {
	local want=EPERM
	[ "$2" != compat_abi ] || want='EPERM|killed-by-signal-31'
	assert_match "$1: $2 is refused" "^($want)\$" "$(probe_result "$2" "$3")"
}
# peak_rss_kb CMD...: the peak memory of CMD and its children, in KiB.
peak_rss_kb() {
	python3 -c 'import resource, subprocess, sys
subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)' "$@"
}

CORE_PATTERN=$(cat /proc/sys/kernel/core_pattern)
SECRET="$T/host-secret"
echo "sdpod-host-secret-$$" >"$SECRET"
VICTIM="$T/victim"
mkdir "$VICTIM"
echo sentinel >"$VICTIM/sentinel"
victim_before=$(snapshot "$VICTIM" --mtime)
victim_intact() {
	assert_eq "$1: the victim directory is unchanged" "$victim_before" "$(snapshot "$VICTIM" --mtime)"
}

# ---------------------------------------------------------------------------
echo "# apps cannot change the host's kernel or see what they should not"
# ---------------------------------------------------------------------------
# As root in an app: the core_pattern attack that gave host root (a fresh,
# writable procfs, MountAPIVFS=), then sysrq, /sys, the masked files, the
# kernel log, the clock and the cgroup tree.
assert_exit 0 sd run busybox --user=0 --exec=/bin/sh -- -c '
	v=$(cat /proc/sys/kernel/core_pattern)
	echo "$v" >/proc/sys/kernel/core_pattern 2>/dev/null && echo core=written || echo core=refused
	test -w /proc/sysrq-trigger && echo sysrq=writable || echo sysrq=refused
	test -w /sys/kernel/uevent_helper && echo uevent=writable || echo uevent=refused
	test -w /proc/sys/kernel/modprobe && echo modprobe=writable || echo modprobe=refused
	for f in /proc/kcore /proc/keys /proc/timer_list /proc/sched_debug; do
		n=$(cat $f 2>/dev/null | head -c 100 | wc -c); echo "mask$f=$n"
	done
	echo "dirs=$(ls /proc/scsi /proc/acpi /sys/firmware 2>/dev/null | grep -v : | tr -d "\n")"
	dmesg >/dev/null 2>&1 && echo dmesg=allowed || echo dmesg=refused
	date -s "$(date)" >/dev/null 2>&1 && echo date=allowed || echo date=refused
	for c in /sys/fs/cgroup/*/cgroup.procs; do echo 1 >"$c" 2>/dev/null && echo "cgroup=written $c"; done
	echo cgroup=done'
assert_contains "core_pattern cannot be written" "$OUT" "core=refused"
assert_eq "the host's core_pattern is unchanged" "$CORE_PATTERN" "$(cat /proc/sys/kernel/core_pattern)"
assert_contains "sysrq-trigger is read-only" "$OUT" "sysrq=refused"
assert_contains "/sys is read-only" "$OUT" "uevent=refused"
assert_contains "/proc/sys/kernel/modprobe is read-only" "$OUT" "modprobe=refused"
for f in kcore keys timer_list sched_debug; do
	assert_contains "/proc/$f is masked" "$OUT" "mask/proc/$f=0"
done
assert_match "/proc/scsi, /proc/acpi and /sys/firmware are empty" 'dirs=[[:space:]]*$' "$(grep -o 'dirs=.*' <<<"$OUT")"
assert_contains "no kernel log" "$OUT" "dmesg=refused"
assert_contains "no clock change" "$OUT" "date=refused"
assert_not_contains "no cgroup file is writable" "$OUT" "cgroup=written"

# ---------------------------------------------------------------------------
echo "# the default confinement: the common container default"
# ---------------------------------------------------------------------------
# The same attempts as the image's user and as root: each is refused with
# EPERM (the filter's answer, or a missing capability's).
ATTEMPTS="io_uring userfaultfd keyring packet unshare_user unshare_mount mount bpf perf module clock reboot syslog open_by_handle kexec"
# The i386 ABI of an x86-64 kernel: a way past a filter for the native one.
# Where the kernel has it: one without IA32 emulation kills the caller of
# int 0x80 with SIGSEGV before any filter sees the call, on the host as in
# a pod, so there is nothing to refuse (the probe says so on the host).
[ "$(uname -m)" != x86_64 ] || [ "$("$HOSTILE_PROBE" | grep -o 'compat_abi=[^ ]*')" = compat_abi=killed-by-signal-11 ] ||
	ATTEMPTS="$ATTEMPTS compat_abi"
for who in app 0; do
	assert_exit 0 sd run busybox --user="$who" --exec=/bin/sh -- -c \
		'hostile-probe; grep -E "^(CapBnd|NoNewPrivs|Seccomp):" /proc/self/status'
	for a in $ATTEMPTS; do
		refused "as user $who" "$a" "$OUT"
	done
	assert_match "as user $who: NoNewPrivileges" 'NoNewPrivs:[[:space:]]+1' "$OUT"
	assert_match "as user $who: a seccomp filter" 'Seccomp:[[:space:]]+2' "$OUT"
	bnd=$(grep -o 'CapBnd:[[:space:]]*[0-9a-f]*' <<<"$OUT" | awk '{print $2}')
	assert_eq "as user $who: no CAP_NET_RAW, no CAP_SYS_ADMIN" 0 $(((0x$bnd >> 13 & 1) + (0x$bnd >> 21 & 1)))
done

# ---------------------------------------------------------------------------
echo "# root in a pod is not root on the host"
# ---------------------------------------------------------------------------
mkdir -m 0755 "$T/vol"
echo host-file >"$T/vol/host-file"
mkdir -m 1777 "$T/vol/open"
assert_exit 0 sd run --uuid-file="$T/u-userns" --volume=v,kind=host,source="$T/vol" \
	busybox --user=0 --group=0 --mount=volume=v,target=/v --exec=/bin/sh -- -c '
	echo "map=$(cat /proc/self/uid_map | tr -s " " | sed "s/^ //")"
	echo pwned >/v/host-file 2>/dev/null && echo volfile=written || echo volfile=refused
	touch /v/new 2>/dev/null && echo voldir=written || echo voldir=refused
	echo mine >/v/open/mine; echo open=done'
U=$(cat "$T/u-userns")
BASE=$(status_of "$U" private-users)
BASE=${BASE%:65536}
assert_match "the pod has a range of its own" '^[1-9][0-9]*$' "$BASE"
assert_contains "root in the pod is its range's first id on the host" "$OUT" "map=0 $BASE 65536"
assert_contains "a root-owned host file in a volume cannot be written" "$OUT" "volfile=refused"
assert_eq "and is unchanged" host-file "$(cat "$T/vol/host-file")"
assert_contains "nor a root-owned host directory" "$OUT" "voldir=refused"
assert_file_absent "$T/vol/new"
assert_eq "what it may write is owned by its range, never by root" "$BASE:$BASE" "$(stat -c %u:%g "$T/vol/open/mine")"

# ---------------------------------------------------------------------------
echo "# a sandbox to attack from inside"
# ---------------------------------------------------------------------------
assert_exit 0 pa sandbox --keep-on-app-failure
S=$OUT
assert_exit 0 pa add "$S" --app=victim busybox --user=0 --exec=/bin/sleep -- 1000
assert_exit 0 pa start "$S" --app=victim
S_BASE=$(status_of "$S" private-users)
S_BASE=${S_BASE%:65536}

# ---------------------------------------------------------------------------
echo "# the pod cannot write what the host trusts"
# ---------------------------------------------------------------------------
# Root of the pod's stage1, with every capability of its user namespace,
# against the pod directory (bound read-only, the binds locked) and
# against what the host executes (its stop and gc entrypoints).
manifest_before=$(sha256sum "$(pod_dir "$S")/stage1/manifest")
OUT=$(as_pod_root "$S" '
	$B grep CapEff /proc/self/status
	echo x >/sdpod/stage1/manifest 2>/dev/null && echo manifest=written || echo manifest=refused
	echo x >/sdpod/pod 2>/dev/null && echo podmanifest=written || echo podmanifest=refused
	$B mkdir /sdpod/apps/planted 2>/dev/null && echo apps=written || echo apps=refused
	$B mount -o remount,rw /sdpod 2>/dev/null && echo remount=done || echo remount=refused
	$B mount -o remount,bind,rw /sdpod 2>/dev/null && echo rebind=done || echo rebind=refused
	$B umount /sdpod/status 2>/dev/null && echo umount=done || echo umount=refused
	$B umount -l /sdpod 2>/dev/null && echo umount2=done || echo umount2=refused
	# entrypoints of its own, where a careless host would look for them
	for e in stop gc enter run; do
		$B rm -f /usr/lib/sdpod/$e
		printf "#!/bin/sh\necho ran-$e >>'"$SECRET"'.pwned\n" >/usr/lib/sdpod/$e
		$B chmod 755 /usr/lib/sdpod/$e
	done
	echo planted=done' 2>&1)
assert_match "the attacker has every capability of the pod's namespace" 'CapEff:[[:space:]]+0*1ffffffffff' "$OUT"
assert_contains "the stage1 manifest cannot be written" "$OUT" "manifest=refused"
assert_contains "nor the pod manifest" "$OUT" "podmanifest=refused"
assert_contains "nor the pod's app directories" "$OUT" "apps=refused"
assert_contains "the pod directory cannot be made writable" "$OUT" "remount=refused"
assert_contains "not even as a new bind" "$OUT" "rebind=refused"
assert_contains "its binds cannot be taken away" "$OUT" "umount=refused"
assert_contains "neither can the pod directory's" "$OUT" "umount2=refused"
assert_eq "the stage1 manifest is unchanged" "$manifest_before" "$(sha256sum "$(pod_dir "$S")/stage1/manifest")"
assert_file_absent "$(pod_dir "$S")/apps/planted"
assert_contains "the planted entrypoints are in place" "$OUT" "planted=done"

# ---------------------------------------------------------------------------
echo "# sdpod enter and podapp exec run as confined as the app"
# ---------------------------------------------------------------------------
app_bnd=$(pa exec "$S" --app=victim -- /bin/sh -c 'grep CapBnd /proc/self/status' | awk '{print $2}')
for cmd in "sd enter --app=victim $S" "pa exec $S --app=victim --"; do
	# An fd the caller has open must not reach the command.
	assert_exit 0 $cmd /bin/hostile-probe 7<"$SECRET" 9<"$SECRET"
	for a in $ATTEMPTS; do
		refused "$cmd" "$a" "$OUT"
	done
	assert_eq "$cmd: only fds 0, 1 and 2 reach the command" "0 1 2" "$(grep -o 'fds=.*' <<<"$OUT" | cut -d= -f2)"
	assert_exit 0 $cmd /bin/sh -c 'cat /proc/self/status /proc/self/uid_map /proc/self/cgroup'
	assert_match "$cmd: NoNewPrivileges" 'NoNewPrivs:[[:space:]]+1' "$OUT"
	assert_match "$cmd: the app's seccomp filter" 'Seccomp:[[:space:]]+2' "$OUT"
	assert_eq "$cmd: the app's capability bounding set" "$app_bnd" "$(grep CapBnd <<<"$OUT" | awk '{print $2}')"
	assert_match "$cmd: the pod's user namespace" "^ +0 +$S_BASE +65536\$" "$(grep -E '^ +0 ' <<<"$OUT")"
	assert_match "$cmd: a cgroup of the pod's, not the caller's" ':/.*/sdpod-(exec|enter)-victim@[0-9a-f]+\.service' "$OUT"
done
# The app's root replaces its own shell; the next 'sdpod enter' runs it,
# and it gets nothing more than the app has.
assert_exit 0 pa exec "$S" --app=victim -- /bin/sh -c \
	'rm /bin/sh; printf "#!/bin/busybox sh\n/bin/hostile-probe; grep -E \"^(CapBnd|NoNewPrivs):\" /proc/self/status\n" >/bin/sh; chmod 755 /bin/sh'
assert_exit 0 sd enter --app=victim "$S"
assert_contains "the planted shell ran" "$OUT" "io_uring="
for a in $ATTEMPTS; do
	refused "the planted shell" "$a" "$OUT"
done
assert_eq "the planted shell: the app's bounding set" "$app_bnd" "$(grep CapBnd <<<"$OUT" | awk '{print $2}')"

# ---------------------------------------------------------------------------
echo "# host tools never follow, hang on or read without bounds what a pod plants"
# ---------------------------------------------------------------------------
# The pod's /etc/passwd a symlink to a host file: podapp add made the host
# copy that file into the pod. The ids are now written inside the pod.
as_pod_root "$S" "\$B rm -f /etc/passwd; \$B ln -s '$SECRET' /etc/passwd"
assert_exit "0|1" pa add "$S" --app=id4242 busybox --user=4242 --exec=/bin/sleep -- 1000
assert_eq "the host file never reaches the pod" "" "$(grep -rl "sdpod-host-secret-$$" "$(pod_dir "$S")/stage1/upper" 2>/dev/null)"
# A FIFO as the pod's /etc/passwd: podapp add hung holding pod.lck.
as_pod_root "$S" '$B rm -f /etc/passwd; $B mkfifo /etc/passwd'
assert_exit "0|1" timeout 60 "$PODAPP" --dir="$DATA" add "$S" --app=fifo busybox --user=4343 --exec=/bin/sleep -- 1000
assert_ne "podapp add does not hang on a FIFO" 124 "$(timeout 60 "$PODAPP" --dir="$DATA" list "$S" >/dev/null 2>&1; echo $?)"
# A FIFO and a 2 GiB sparse file as the app's own /etc/passwd: sdpod
# enter and podapp exec hung, or used 2 GiB of memory.
assert_exit 0 pa exec "$S" --app=victim -- /bin/busybox sh -c \
	'rm -f /etc/passwd /etc/group; mkfifo /etc/group; truncate -s 2G /etc/passwd; stat -c %s /etc/passwd'
assert_contains "the app's passwd is 2 GiB" "$OUT" "2147483648"
assert_exit 0 timeout 60 "$SDPOD" --dir="$DATA" enter --app=victim "$S" /bin/busybox true
rss=$(peak_rss_kb "$PODAPP" --dir="$DATA" exec "$S" --app=victim -- /bin/busybox true)
assert_match "podapp exec stays small (peak ${rss} KiB)" '^[0-9]+$' "$rss"
check "podapp exec reads nothing of the 2 GiB file (peak ${rss} KiB < 128 MiB)" test "$rss" -lt 131072

# 'apps' a symlink to a host directory (what a pod that could write its
# directory would plant): podapp add deleted files under it, podapp stop
# created files there. Every host-side path under a pod is resolved
# beneath it, without symlinks.
mv "$(pod_dir "$S")/apps" "$(pod_dir "$S")/apps.real"
ln -s "$VICTIM" "$(pod_dir "$S")/apps"
assert_exit "1|3" pa add "$S" --app=sneaky busybox --exec=/bin/sleep -- 1
assert_exit "1|3" pa stop "$S" --app=victim
assert_exit "1|3" pa rm "$S" --app=victim
victim_intact "podapp add, stop and rm through a planted symlink"
rm "$(pod_dir "$S")/apps"
mv "$(pod_dir "$S")/apps.real" "$(pod_dir "$S")/apps"

# A FIFO as the pod manifest (again what a pod that could write its
# directory would plant): sdpod list and status hung.
mv "$(pod_dir "$S")/pod" "$(pod_dir "$S")/pod.real"
mkfifo "$(pod_dir "$S")/pod"
assert_exit 0 timeout 30 "$SDPOD" --dir="$DATA" list
assert_exit 0 timeout 30 "$SDPOD" --dir="$DATA" status "$S"
assert_contains "status names the manifest that is not a file" "$OUT" "manifest-error="
rm "$(pod_dir "$S")/pod"
mv "$(pod_dir "$S")/pod.real" "$(pod_dir "$S")/pod"

# The pod's private bus socket a symlink to a socket of the host: podapp
# connected to whatever it named (a path through /proc/PID/root resolves an
# absolute symlink against the host's root).
python3 - "$T/host.sock" "$T/host.sock.log" <<'EOF' &
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.bind(sys.argv[1]); s.listen(1); s.settimeout(30)
try:
    s.accept(); open(sys.argv[2], "w").write("connected\n")
except socket.timeout:
    pass
EOF
LISTENER=$!
for i in $(seq 50); do [ -S "$T/host.sock" ] && break; sleep 0.1; done
as_pod_root "$S" "\$B rm -f /run/systemd/private; \$B ln -s '$T/host.sock' /run/systemd/private"
assert_exit "1|3" pa list "$S"
assert_contains "podapp finds no socket where the pod planted a symlink" "$ERR" "run/systemd/private"
kill "$LISTENER" 2>/dev/null || true
wait "$LISTENER" 2>/dev/null || true
assert_file_absent "$T/host.sock.log"

# The entrypoints the pod planted in its root never run on the host. And
# a pod that cannot halt (its own bus is gone) does not hold 'sdpod stop'
# for ever: after 30 s it is killed.
assert_exit 0 timeout 120 "$SDPOD" --dir="$DATA" stop "$S"
assert_contains "the stop says it killed the pod" "$ERR" "did not halt within 30 s: killing it"
wait_gone() { for i in $(seq 100); do [ "$(status_of "$1" state)" = exited ] && return 0; sleep 0.1; done; return 1; }
check "the sandbox stopped" wait_gone "$S"
assert_exit 0 sd gc --grace-period=0
assert_file_absent "$SECRET.pwned"
assert_eq "the host secret is untouched" "sdpod-host-secret-$$" "$(cat "$SECRET")"

# ---------------------------------------------------------------------------
echo "# gc removes any tree a pod can build"
# ---------------------------------------------------------------------------
# 10,000 nested directories: under the usual limit of 1024 open files,
# every gc failed with EMFILE and left the pod half deleted.
assert_exit 0 sd run --uuid-file="$T/u-deep" busybox --exec=/bin/hostile-probe -- deep /tmp 10000
assert_contains "the app built the tree" "$OUT" "depth=10000"
D=$(cat "$T/u-deep")
assert_exit 0 bash -c 'ulimit -n 1024 && exec "$@"' - "$SDPOD" --dir="$DATA" gc --grace-period=0
assert_eq "gc says nothing is left behind" "" "$ERR"
assert_file_absent "$DATA/pods/run/$D" "$DATA/pods/exited-garbage/$D"

# ---------------------------------------------------------------------------
echo "# readiness cannot be faked"
# ---------------------------------------------------------------------------
# An app on the host's network sends READY=1 to every launcher's notify
# socket it sees (abstract addresses, listed in /proc/net/unix) while
# sandboxes start: each must still return only once really ready.
assert_exit 0 sd run --detach --name=faker --net=host busybox --user=0 --exec=/bin/sh -- -c '
	while :; do
		s=$(grep -o "@sdpod/launch/[^ ]*" /proc/net/unix | sed "s/^@//")
		[ -z "$s" ] || hostile-probe notify $s
		usleep 1000
	done'
F=$OUT
for i in 1 2 3; do
	assert_exit 0 pa sandbox
	assert_exit 0 pa list "$OUT" --no-legend
done
assert_exit 0 sd journal "$F" --no-pager -o cat
assert_match "the faker sent READY=1 to launchers" 'notify=[1-9]' "$OUT"
assert_exit 0 sd stop "$F"

# ---------------------------------------------------------------------------
echo "# a pod's journal directory is the pod's: what journalctl is given"
# ---------------------------------------------------------------------------
# The pod's systemd (root of the stage1) writes POD/journal/MACHINE-ID; as
# that root would, plant a symbolic link to a host file, a journal file
# whose name drives a terminal, and a link to the host's journal directory.
# journalctl runs as the host's root: it must be given none of these.
J="$DATA/pods/exited-garbage/$F/journal/${F//-/}"
[ -d "$J" ] || J="$DATA/pods/run/$F/journal/${F//-/}"
ln -s /etc/shadow "$J/evil.journal"
ln -s /var/log "$J/dir.journal"
head -c 4096 /dev/urandom >"$J/"$'x\e]0;PWNED\a\e[31mRED.journal'
assert_exit 0 sd journal "$F" --no-pager -o cat
assert_contains "the real journal is still read" "$OUT" "notify="
check_not "no escape sequence from a file name reaches the terminal" grep -q $'\e' <<<"$OUT$ERR"
assert_not_contains "no host file is read through a link" "$OUT$ERR" shadow
rm -rf "$J"
ln -s /var/log/journal "$J"
assert_exit 1 sd journal "$F" --no-pager
assert_eq "a linked journal directory gives nothing of the host's journal" "" "$OUT"
rm "$J"
mkdir "$J"
assert_exit 3 sd journal "$F" --no-pager
assert_contains "and an empty one says so, instead of the host's journal" "$ERR" "has no journal: it wrote none"
assert_eq "with nothing on stdout" "" "$OUT"

assert_exit 0 sd gc --grace-period=0
for u in "$U" "$S" "$D" "$F"; do
	no_pod_procs "$u"
	no_pod_cgroup "$u"
done
leak_check
