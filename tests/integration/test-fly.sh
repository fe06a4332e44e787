#!/bin/bash
#
# test-fly.sh - the fly flavor (--stage1=fly, fly/fly-run.h): one app run
# directly by the run entrypoint, no nspawn, no systemd in the pod. Its exit
# status, its log, its network and names, its lifecycle (the lock, stop
# with grace, a killed supervisor, gc), what it refuses, and the app part of
# test-hostile-pod.sh run against a fly pod: the same confinement as the
# nspawn flavor's defaults.

. "$(dirname "$0")/lib.sh"

use_real_images
require_tool nsenter util-linux
[ -n "$PODAPP" ] || die "podapp not found (PODAPP_BIN)"
FLY_IMAGE=$(dirname "$SDPOD_STAGE1")/stage1-fly
[ -f "$FLY_IMAGE/manifest" ] || die "$FLY_IMAGE: the fly flavor's stage1 image is not built"

remove_pods_on_exit
leak_begin

echo "# building the image: busybox and the probe"
import_probe_image

probe_result() { grep -o "$1=[A-Za-z0-9_-]*" <<<"$2" | head -1 | cut -d= -f2; }
refused() {
	local want=EPERM
	[ "$2" != compat_abi ] || want='EPERM|killed-by-signal-31'
	assert_match "$1: $2 is refused" "^($want)\$" "$(probe_result "$2" "$3")"
}
# fly [RUN OPTIONS] ARGS...: sdpod run --stage1=fly, after run's own options.
fly() {
	local pre=()
	while [[ ${1:-} == --uuid-file=* || ${1:-} == --detach ]]; do
		pre+=("$1")
		shift
	done
	sd run "${pre[@]}" --stage1=fly "$@"
}
# supervisor_of UUID: the run entrypoint (the pid file's), app_of UUID: its
# child, the app (PID 1 of the pod).
supervisor_of() { nspawn_of "$1"; }
app_of() { leader_of "$1"; }

# ---------------------------------------------------------------------------
echo "# exit statuses, the flavor recorded, the log"
# ---------------------------------------------------------------------------
assert_exit 0 fly --uuid-file="$T/u0" busybox --exec=/bin/true
U=$(cat "$T/u0")
assert_eq "status shows the flavor" fly "$(status_of "$U" stage1)"
assert_eq "the app's exit status is recorded" 0 "$(status_of "$U" app-busybox)"
assert_exit 7 fly --uuid-file="$T/u7" busybox --exec=/bin/sh -- -c 'echo out-line; echo err-line >&2; exit 7'
U7=$(cat "$T/u7")
assert_contains "the app's output reaches the caller" "$OUT" "out-line"
assert_eq "exit 7 is recorded" 7 "$(status_of "$U7" app-busybox)"
assert_exit 0 sd journal "$U7"
assert_contains "sdpod journal shows its stdout" "$OUT" "out-line"
assert_contains "and its stderr" "$OUT" "err-line"
assert_exit 0 fly --uuid-file="$T/uesc" busybox --exec=/bin/sh -- -c 'printf "osc\033]52;c;cHduZWQ=\007end\n"'
assert_not_contains "the app's output reaches the terminal escaped" "$OUT" $'\033]52'
assert_exit 0 sd journal "$(cat "$T/uesc")"
assert_not_contains "sdpod journal shows it escaped" "$OUT" $'\033]52'
assert_contains "as \\x1b" "$OUT" '\x1b]52'
assert_exit 2 fly busybox --exec=/no/such/program
assert_contains "a missing program is refused before the pod runs" "$ERR" "not found in the app's root"
assert_exit 0 sd status "$U"
assert_exit 0 sd list
assert_contains "the nspawn flavor is the default" "$(sd prepare busybox --exec=/bin/true | xargs -I{} "$SDPOD" --dir="$DATA" status {})" "stage1=nspawn"

# ---------------------------------------------------------------------------
echo "# the app part of test-hostile-pod.sh, in a fly pod"
# ---------------------------------------------------------------------------
CORE_PATTERN=$(cat /proc/sys/kernel/core_pattern)
assert_exit 0 fly busybox --user=0 --exec=/bin/sh -- -c '
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
	umount /proc/kcore 2>/dev/null && echo unmask=done || echo unmask=refused
	mount -o remount,rw /proc/sys 2>/dev/null && echo remount=done || echo remount=refused
	echo "ps=$(ls -d /proc/[0-9]* | wc -l)"
	echo "hostname=$(hostname)"
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
assert_contains "a mask cannot be taken away" "$OUT" "unmask=refused"
assert_contains "nor /proc/sys made writable" "$OUT" "remount=refused"
assert_match "its own pid namespace: it sees itself and its children" 'ps=[1-4]$' "$(grep -o 'ps=.*' <<<"$OUT")"
assert_match "the pod's host name" 'hostname=sdpod-[0-9a-f-]+$' "$(grep -o 'hostname=.*' <<<"$OUT")"

ATTEMPTS="io_uring userfaultfd keyring packet unshare_user unshare_mount mount bpf perf module clock reboot syslog open_by_handle kexec"
# The i386 ABI of an x86-64 kernel, where the kernel has it (without it,
# int 0x80 is a SIGSEGV even on the host).
[ "$(uname -m)" != x86_64 ] || [ "$("$HOSTILE_PROBE" | grep -o 'compat_abi=.*')" = compat_abi=killed-by-signal-11 ] ||
	ATTEMPTS="$ATTEMPTS compat_abi"
# APP_CAPABILITIES_DEFAULT (unit/app-isolators.h), the bounding set the
# nspawn flavor's systemd is given for an app.
default_bnd=00000000a00405fb
for who in app 0; do
	assert_exit 0 fly busybox --user="$who" --exec=/bin/sh -- -c \
		'hostile-probe 7<&- 9<&-; grep -E "^(CapBnd|CapEff|NoNewPrivs|Seccomp|Seccomp_filters):" /proc/self/status' 7<"$T/u0" 9<"$T/u0"
	for a in $ATTEMPTS; do
		refused "fly, as user $who" "$a" "$OUT"
	done
	assert_match "as user $who: NoNewPrivileges" 'NoNewPrivs:[[:space:]]+1' "$OUT"
	assert_match "as user $who: a seccomp filter" 'Seccomp:[[:space:]]+2' "$OUT"
	assert_match "as user $who: one filter, not 21" 'Seccomp_filters:[[:space:]]+1$' "$(grep Seccomp_filters <<<"$OUT")"
	bnd=$(grep -o 'CapBnd:[[:space:]]*[0-9a-f]*' <<<"$OUT" | awk '{print $2}')
	assert_eq "as user $who: the default bounding set" "$default_bnd" "$bnd"
	[ "$who" = 0 ] || assert_match "the image's user has no effective capability" 'CapEff:[[:space:]]+0+$' \
		"$(grep CapEff <<<"$OUT")"
	assert_eq "as user $who: no CAP_NET_RAW, no CAP_SYS_ADMIN" 0 $(((0x$bnd >> 13 & 1) + (0x$bnd >> 21 & 1)))
	assert_eq "as user $who: only fds 0, 1 and 2 reach the app" "0 1 2" "$(grep -o 'fds=.*' <<<"$OUT" | cut -d= -f2)"
done

# Root in a fly pod is not root on the host: the pod's own id range.
assert_exit 0 fly --uuid-file="$T/u-userns" busybox --user=0 --group=0 --exec=/bin/sh -- -c '
	echo "map=$(cat /proc/self/uid_map | tr -s " " | sed "s/^ //")"; touch /new-file; echo made=done'
U=$(cat "$T/u-userns")
BASE=$(status_of "$U" private-users)
BASE=${BASE%:65536}
assert_match "the pod has a range of its own" '^[1-9][0-9]*$' "$BASE"
assert_contains "root in the pod is its range's first id on the host" "$OUT" "map=0 $BASE 65536"
assert_eq "what it writes is owned by its range" "$BASE:$BASE" \
	"$(stat -c %u:%g "$(sd status "$U" >/dev/null; echo "$DATA"/pods/*/"$U"/apps/busybox/upper/new-file)")"

# Devices: only the standard ones (the pod's cgroup device rule).
assert_exit 0 fly busybox --user=0 --exec=/bin/sh -- -c '
	ls /dev | tr "\n" " "; echo
	mknod /tmp/sda b 8 0 2>/dev/null && echo mknod=done || echo mknod=refused
	head -c 1 /dev/zero >/dev/null && echo zero=ok'
assert_contains "no device node can be made" "$OUT" "mknod=refused"
assert_contains "the standard devices work" "$OUT" "zero=ok"
assert_not_contains "no host disk in /dev" "$OUT" "sda"

# The task limit (--pod-pids-limit): a fork bomb stops at it.
# Counted with the shell's builtins: at the limit, nothing more forks.
assert_exit 0 fly --uuid-file="$T/u-pids" --pod-pids-limit=20 busybox --exec=/bin/sh -- -c '
	(i=0; while [ $i -lt 40 ]; do sleep 5 & i=$((i + 1)); done) 2>/dev/null
	set -- /proc/[0-9]*; echo "forked=$#"'
n=$(grep -o 'forked=[0-9]*' <<<"$OUT" | cut -d= -f2)
assert_match "the task limit holds ($n tasks)" '^(1[0-9]|20)$' "$n"
U=$(cat "$T/u-pids")
no_pod_cgroup_left() { ! ls -d /sys/fs/cgroup/*/sdpod/"$U" /sys/fs/cgroup/sdpod/"$U" 2>/dev/null | grep -q .; }
wait_for "its sleeps did not outlive it (no cgroup of a pod left)" 5 no_pod_cgroup_left

# ---------------------------------------------------------------------------
echo "# network and names"
# ---------------------------------------------------------------------------
assert_exit 0 fly --net=none busybox --exec=/bin/sh -- -c 'ip -o link | cut -d: -f2 | tr -d " \n"; echo; cat /etc/hostname'
assert_contains "--net=none: only lo" "$OUT" "lo"
assert_not_contains "--net=none: no other interface" "$(head -1 <<<"$OUT")" "eth"
assert_exit 0 fly --name=flyname busybox --exec=/bin/sh -- -c 'hostname; grep -c flyname /etc/hosts'
assert_contains "--name is the host name" "$OUT" "flyname"
# The namespace, not a count of interfaces: the tests beside this one add
# and remove veths on the host (CI's run saw 7 where 6 were counted).
assert_exit 0 fly --net=host busybox --exec=/bin/sh -- -c 'readlink /proc/self/ns/net'
assert_eq "--net=host: the host's network namespace" "$(readlink /proc/self/ns/net)" "$(tail -1 <<<"$OUT")"

# ---------------------------------------------------------------------------
echo "# lifecycle: the lock, stop with grace, a killed supervisor, gc"
# ---------------------------------------------------------------------------
# An app that ends on SIGTERM with its own status: stop gives it the grace.
assert_exit 0 fly --detach --uuid-file="$T/u-stop" busybox --exec=/bin/sh -- -c \
	'trap "echo got-term; exit 3" TERM; echo started; sleep 1000 & wait'
U=$(cat "$T/u-stop")
assert_eq "a detached fly pod runs" running "$(status_of "$U" state)"
S=$(supervisor_of "$U")
A=$(app_of "$U")
assert_match "the app is the supervisor's child" '^[0-9]+$' "$A"
assert_eq "the supervisor holds the lock, not the app" "" "$(ls -l /proc/"$A"/fd 2>/dev/null | grep -F pod.lck || true)"
assert_exit 4 sd enter "$U" true
assert_contains "sdpod enter of a fly pod is refused, naming why" "$ERR" "enter"
assert_exit 0 sd stop "$U"
assert_eq "stop: the app's own status after SIGTERM" 3 "$(status_of "$U" app-busybox)"
assert_exit 0 sd journal "$U"
assert_contains "the app saw SIGTERM" "$OUT" "got-term"
gone() { ! test -d "/proc/$1" || grep -q '^State:.*Z' "/proc/$1/status"; }
wait_for "the supervisor is gone" 5 gone "$S"

# An app that ignores SIGTERM is killed after its stop timeout.
assert_exit 0 fly --detach --uuid-file="$T/u-stubborn" busybox --stop-timeout=1s --exec=/bin/sleep -- 1000
U=$(cat "$T/u-stubborn")
t0=$(date +%s%N)
assert_exit 0 sd stop "$U"
ms=$((($(date +%s%N) - t0) / 1000000))
assert_eq "SIGKILL after the stop timeout: 137" 137 "$(status_of "$U" app-busybox)"
assert_match "within about the timeout (${ms} ms)" '^[0-9]{3,4}$' "$ms"

# SIGKILL of the supervisor: the app goes with it (PR_SET_PDEATHSIG), gc
# kills what is left in the pod's cgroup and releases everything.
assert_exit 0 fly --detach --uuid-file="$T/u-kill" busybox --exec=/bin/sh -- -c 'sleep 1017 & sleep 1017 & wait'
U=$(cat "$T/u-kill")
S=$(supervisor_of "$U")
A=$(app_of "$U")
kill -KILL "$S"
wait_for "the app died with its supervisor" 5 gone "$A"
wait_for "the pod reads as exited" 5 status_is "$U" state exited
assert_exit 0 sd gc --grace-period=0s
no_left() { ! ls -d /sys/fs/cgroup/*/sdpod/"$U" /sys/fs/cgroup/sdpod/"$U" 2>/dev/null | grep -q .; }
wait_for "nothing of it is left after gc (its cgroups)" 5 no_left
check_not "no process of it left" pgrep -f "sleep 1017" # a time no other test uses: they run beside it

# stop --force: SIGKILL to the app, recorded as 137 by the supervisor.
assert_exit 0 fly --detach --uuid-file="$T/u-force" busybox --exec=/bin/sleep -- 1000
U=$(cat "$T/u-force")
assert_exit 0 sd stop --force "$U"
wait_for "stop --force: 137" 5 status_is "$U" app-busybox 137

# ---------------------------------------------------------------------------
echo "# refusals, naming the flavor"
# ---------------------------------------------------------------------------
assert_exit 4 sd run --stage1=fly busybox --exec=/bin/true --- busybox --app=two --exec=/bin/true
assert_contains "two apps" "$ERR" "fly flavor runs one app"
assert_exit 4 sd run --stage1=fly busybox --pre-start=/bin/true --exec=/bin/true
assert_contains "hooks" "$ERR" "fly flavor runs no hooks"
assert_exit 4 sd run --stage1=fly busybox --health-cmd=/bin/true --exec=/bin/true
assert_contains "health checks" "$ERR" "fly flavor runs no health checks"
assert_exit 2 sd run --stage1=lxc busybox --exec=/bin/true
assert_contains "an unknown flavor" "$ERR" "expected fly, kvm, nspawn"
assert_exit 4 pa sandbox --stage1=fly
assert_contains "podapp sandbox" "$ERR" "fly flavor"
assert_exit 0 fly --detach --uuid-file="$T/u-add" busybox --exec=/bin/sleep -- 1000
P=$(cat "$T/u-add")
assert_exit 4 pa add "$P" busybox --app=more --exec=/bin/true
assert_contains "podapp add to a fly pod" "$ERR" "fly flavor"
assert_exit 0 sd run --stage1="$FLY_IMAGE" busybox --exec=/bin/true
assert_exit 0 env SDPOD_STAGE1="$FLY_IMAGE" "$SDPOD" --dir="$DATA" run --uuid-file="$T/u-env" busybox --exec=/bin/true
assert_eq "SDPOD_STAGE1 still chooses the image" fly "$(status_of "$(cat "$T/u-env")" stage1)"

leak_check
