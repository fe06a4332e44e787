#!/bin/bash
#
# test-hostile-misc.sh - the smaller holes of the pod boundary
# (sdpod-security(7)), each tried as an attacker inside a pod would:
#
#   a. an app opens an AF_VSOCK socket (a channel to the hypervisor and
#      other guests, past the pod's network namespace);
#   b. the pod's root swaps a file of its journal directory for a link to a
#      host file between sdpod's check and journalctl's open;
#   c. an app prints terminal escape sequences (an OSC 52 clipboard write,
#      a screen clear) for the operator's terminal;
#   d. an app reads the host's v1 cgroup trees (every host process);
#   e. two data directories, or nspawn's own -U picks, hand out the same
#      user id range;
#   f. a running pod pins host mounts that the host has unmounted.

. "$(dirname "$0")/lib.sh"

use_real_images
require_tool systemd-nspawn systemd-container
require_tool nsenter util-linux
require_tool python3
require_tool flock util-linux
[ -n "$PODAPP" ] || die "podapp not found (PODAPP_BIN)"

remove_pods_on_exit
leak_begin

echo "# building the image: busybox and the probe"
import_probe_image

probe_result() { grep -o "$1=[A-Za-z0-9_-]*" <<<"$2" | head -1 | cut -d= -f2; }

# What an app tries: one pod for a, c (its console) and d.
ESC=$'\e'
BEL=$'\a'
assert_exit 0 sd run --uuid-file="$T/u-app" busybox --user=0 --exec=/bin/sh -- -c '
	hostile-probe vsock
	for c in memory cpu pids devices; do
		f=/sys/fs/cgroup/$c/cgroup.procs
		n=$(cat $f 2>/dev/null | wc -l)
		echo "cgroup-$c=$n"
		echo "cgroup-entries-$c=$(ls /sys/fs/cgroup/$c 2>/dev/null | wc -l)"
	done
	ls /sys/fs/cgroup/pids/sdpod >/dev/null 2>&1 && echo other-pods=listed || echo other-pods=hidden
	printf "clip:\033]52;c;cHduZWQ=\007 clear:\033[2J end\n"'
A=$(cat "$T/u-app")
APP_OUT=$OUT
APP_ERR=$ERR

# ---------------------------------------------------------------------------
echo "# a. no AF_VSOCK socket in an app"
# ---------------------------------------------------------------------------
assert_match "socket(AF_VSOCK) is refused" '^(EAFNOSUPPORT|EPERM)$' "$(probe_result vsock "$APP_OUT")"
assert_exit 0 pa sandbox
S=$OUT
assert_exit 0 pa add "$S" --app=victim busybox --user=0 --exec=/bin/sleep -- 1000
assert_exit 0 pa start "$S" --app=victim
assert_exit 0 pa exec "$S" --app=victim -- /bin/hostile-probe vsock
assert_match "and in podapp exec" '^(EAFNOSUPPORT|EPERM)$' "$(probe_result vsock "$OUT")"

# ---------------------------------------------------------------------------
echo "# b. journalctl never opens a host file the pod links to"
# ---------------------------------------------------------------------------
# A host journal file readable by others, with a secret: the log of a
# first pod, copied where every user may read it.
assert_exit 0 sd run --uuid-file="$T/u-secret" busybox --user=0 --exec=/bin/echo -- "sdpod-misc-secret-$$"
SJ=$(find "$DATA/pods" -path "*/$(cat "$T/u-secret")/journal/*" -name system.journal | head -1)
chmod 0711 "$T"
mkdir -m 0755 "$T/pub"
install -m 0644 "$SJ" "$T/pub/secret.journal"
assert_exit 0 sd rm "$(cat "$T/u-secret")"
# The sandbox's root makes old.journal (a real journal file: it passes the
# check) and swaps it for a link to the secret the moment sdpod has listed
# the directory, before journalctl opens it. Five tries: one is enough.
JD="/var/log/journal/${S//-/}"
L=$(leader_of "$S")
cp "$HOSTILE_PROBE" "/proc/$L/root/tmp/hostile-probe"
leaked=0 swapped=0
for i in 1 2 3 4 5; do
	rm -f "/proc/$L/root/tmp/armed"
	as_pod_root "$S" "cd $JD && \$B cp system.journal old.journal && \
		(/tmp/hostile-probe swap $JD old.journal '$T/pub/secret.journal' >/tmp/armed 2>&1 &)"
	for k in $(seq 100); do grep -q armed "/proc/$L/root/tmp/armed" 2>/dev/null && break; sleep 0.05; done
	out=$(timeout 30 "$SDPOD" --dir="$DATA" journal "$S" --no-pager -o cat 2>&1 || true)
	for k in $(seq 40); do grep -q "swap" "/proc/$L/root/tmp/armed" 2>/dev/null && break; sleep 0.05; done
	grep -q swapped "/proc/$L/root/tmp/armed" && swapped=$((swapped + 1))
	grep -q "sdpod-misc-secret-$$" <<<"$out" && leaked=$((leaked + 1))
	as_pod_root "$S" "\$B rm -f $JD/old.journal"
done
check "the pod swapped the file in at least one try ($swapped of 5)" test "$swapped" -gt 0
assert_eq "sdpod journal never shows the host file ($leaked of 5 leaked)" 0 "$leaked"
# Links planted outright: the directory itself and a file.
as_pod_root "$S" "cd $JD && \$B ln -sf '$T/pub/secret.journal' link.journal"
assert_exit "0|1" sd journal "$S" --no-pager -o cat
assert_not_contains "a planted link shows nothing of the host" "$OUT$ERR" "sdpod-misc-secret-$$"
as_pod_root "$S" "\$B rm -f $JD/link.journal"

# ---------------------------------------------------------------------------
echo "# c. escape sequences from a pod reach the operator printable"
# ---------------------------------------------------------------------------
assert_contains "the app printed its text" "$APP_OUT" "clip:"
check_not "the console relay of sdpod run passes no ESC" grep -q "$ESC" <<<"$APP_OUT"
check_not "nor a BEL" grep -q "$BEL" <<<"$APP_OUT"
assert_not_contains "the relay is no orphan of the pod's to halt" "$APP_ERR" "leaving the pod's processes"
assert_match "and shows them escaped" 'clip:\\(x1b|e|033)\]52;c;cHduZWQ=' "$(grep -o 'clip:.*' <<<"$APP_OUT" | head -1)"
for o in cat short verbose; do
	assert_exit 0 sd journal "$A" --no-pager -o "$o"
	check_not "sdpod journal -o $o passes no ESC" grep -q "$ESC" <<<"$OUT"
	check_not "sdpod journal -o $o passes no BEL" grep -q "$BEL" <<<"$OUT"
done
assert_exit 0 sd journal "$A" --no-pager -o cat
assert_contains "-o cat shows them escaped" "$OUT" 'clip:\x1b]52;c;cHduZWQ=\x07 clear:\x1b[2J end'
assert_exit 0 sd journal "$A" --no-pager -o cat --raw
assert_contains "--raw passes the bytes as they are" "$OUT" "clip:$ESC]52;c;cHduZWQ=$BEL clear:$ESC[2J end"

# ---------------------------------------------------------------------------
echo "# d. apps do not see the host's v1 cgroup trees"
# ---------------------------------------------------------------------------
host_procs=$(wc -l </sys/fs/cgroup/memory/cgroup.procs)
echo "# the host's memory root lists $host_procs processes; the app saw: $(grep -o 'cgroup-[a-z-]*=[0-9]*' <<<"$APP_OUT" | tr '\n' ' ')"
for c in memory cpu pids devices; do
	assert_eq "the app sees no process in the $c tree's root" 0 "$(probe_result "cgroup-$c" "$APP_OUT")"
	assert_eq "and nothing of the host's $c tree (its usage, its cgroups)" 0 "$(probe_result "cgroup-entries-$c" "$APP_OUT")"
done
assert_contains "nor the cgroups of every pod (pids/sdpod)" "$APP_OUT" "other-pods=hidden"

# ---------------------------------------------------------------------------
echo "# f. a pod does not pin what the host unmounts"
# ---------------------------------------------------------------------------
mkdir "$T/pinned"
mount -t tmpfs sdpod-misc-pinned "$T/pinned"
assert_exit 0 pa sandbox
P=$OUT
umount "$T/pinned"
N=$(nspawn_of "$P")
PL=$(leader_of "$P")
assert_eq "the tmpfs is gone from nspawn's mount namespace" "" "$(grep sdpod-misc-pinned "/proc/$N/mountinfo")"
assert_eq "and from the pod's" "" "$(grep sdpod-misc-pinned "/proc/$PL/mountinfo")"
assert_exit 0 sd stop "$P"

# ---------------------------------------------------------------------------
echo "# e. user id ranges are claimed machine-wide"
# ---------------------------------------------------------------------------
# Two data directories whose every range but one is taken (claims that
# name no pod), preparing at once: one gets it, the other none.
D1="$T/d1" D2="$T/d2"
FREE=$((0x20000000))
for d in "$D1" "$D2"; do
	mkdir -p "$d/private-users"
	python3 - "$d/private-users" "$FREE" <<'EOF'
import os, sys
lo, hi, size = 0x00080000, 0x6FFF0000, 65536
for b in range(lo, hi + 1, size):
    if b != int(sys.argv[2]):
        open(os.path.join(sys.argv[1], str(b)), "w").write("not-a-pod\n")
EOF
	"$SDPOD" --dir="$d" image import --name=busybox "$IMG/oci" >/dev/null
done
"$SDPOD" --dir="$D1" prepare busybox >"$T/p1" 2>&1 &
p1=$!
"$SDPOD" --dir="$D2" prepare busybox >"$T/p2" 2>&1 &
p2=$!
rc1=0 rc2=0
wait "$p1" || rc1=$?
wait "$p2" || rc2=$?
got=0
for d in "$D1" "$D2"; do
	for u in $("$SDPOD" --dir="$d" list --no-legend | awk '{print $1}'); do
		[ "$(DATA=$d status_of "$u" private-users)" = "$FREE:65536" ] && got=$((got + 1))
	done
done
echo "# prepare in d1: exit $rc1; in d2: exit $rc2"
assert_eq "the free range went to one pod only" 1 "$got"
assert_contains "the other names what took it" "$(cat "$T/p1" "$T/p2")" "in use"
for d in "$D1" "$D2"; do
	for u in $("$SDPOD" --dir="$d" list --no-legend | awk '{print $1}'); do "$SDPOD" --dir="$d" rm "$u" >/dev/null; done
done
# A range that nspawn's own -U pick holds (its lock file, locked) is skipped.
mkdir -p /run/systemd/nspawn-uid
rm -f "$D1/private-users/$FREE"
python3 -c 'import fcntl, sys, time
f = open(sys.argv[1], "w"); fcntl.flock(f, fcntl.LOCK_EX); print("locked", flush=True); time.sleep(60)' \
	"/run/systemd/nspawn-uid/$FREE" >"$T/locker" &
LOCKER=$!
for i in $(seq 100); do grep -q locked "$T/locker" && break; sleep 0.05; done
assert_exit 1 "$SDPOD" --dir="$D1" prepare busybox
assert_contains "a range nspawn holds is not handed out" "$ERR" "in use"
kill "$LOCKER" && wait "$LOCKER" 2>/dev/null || true
rm -f "/run/systemd/nspawn-uid/$FREE"
# And a running pod's range is locked as nspawn locks its own, and claimed
# for the machine.
S_BASE=$(status_of "$S" private-users)
S_BASE=${S_BASE%:65536}
check_not "the sandbox's range is locked for nspawn's picks" flock -n "/run/systemd/nspawn-uid/$S_BASE" true
assert_eq "and claimed for the machine" "$S" "$(head -1 "/run/sdpod/private-users/$S_BASE" 2>/dev/null)"
for u in $("$SDPOD" --dir="$D1" list --no-legend | awk '{print $1}'); do "$SDPOD" --dir="$D1" rm "$u" >/dev/null; done

# A machine claim whose data directory is gone (removed without sdpod rm)
# is given back by any gc.
STALE=$((0x30000000))
printf '00000000-0000-4000-8000-000000000000\n%s\n' "$T/gone/data" >"/run/sdpod/private-users/$STALE"
assert_exit 0 sd stop "$S"
assert_exit 0 sd gc --grace-period=0
assert_file_absent "/run/sdpod/private-users/$STALE"
for u in "$A" "$S" "$P"; do
	no_pod_procs "$u"
	no_pod_cgroup "$u"
	assert_eq "no machine-wide claim of $u is left" "" "$(grep -rlx "$u" /run/sdpod/private-users 2>/dev/null)"
done
assert_file_absent "/run/systemd/nspawn-uid/$S_BASE"
leak_check "$DATA" "$D1" "$D2"
