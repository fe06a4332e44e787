#!/bin/bash
#
# test-app-options.sh - the app options of sdpod prepare/run and podapp add
# that confine an app and limit its resources (sdpod(1) "App options"):
# --cap-add/--cap-drop, --read-only, --tmpfs, --env-file seen from inside
# real pods; --memory, --cpus, --pids-limit and --device either in effect
# in the app's cgroup (read from the host) or, where the pod's systemd
# cannot apply them (this cgroup v1 host), the app fails with the reason in
# its log and status: never less confined than asked without saying so.
# And the bad input, refused before a pod exists.

. "$(dirname "$0")/lib.sh"

use_real_images
require_tool systemd-nspawn systemd-container

trap '_rc=$?; bg_pods_cleanup; (exit "$_rc"); _lib_on_exit' EXIT
leak_begin

busybox_layout
import_ok BB --name=busybox "$IMG/oci"

# A host directory the pod's root may write (its ids are a range of the
# host's), where the apps leave what they saw.
OUTDIR="$T/out"
mkdir "$OUTDIR"
chmod 777 "$OUTDIR"
VOL=(--volume=out,kind=host,source="$OUTDIR")
OUTMNT=--mount=volume=out,target=/out

n_pods() { sd list --no-legend | grep -c . || true; }
journal_of() { sd journal "$1" --no-pager -o cat 2>/dev/null; }
# bit N of a hexadecimal capability mask
cap_bit() { echo $(((0x$1 >> $2) & 1)); }

# ---------------------------------------------------------------------------
echo "# bad input: refused before a pod exists, the option named"
# ---------------------------------------------------------------------------
before=$(n_pods)
assert_exit 2 sd prepare busybox --memory=lots
assert_contains "--memory=lots is named" "$ERR" "--memory=lots: not a quantity"
assert_exit 2 sd prepare busybox --memory=0
assert_contains "a zero memory limit" "$ERR" "must be greater than zero"
assert_exit 2 sd prepare busybox --cpus=-1
assert_contains "--cpus=-1 is named" "$ERR" "--cpus=-1: not a number of CPUs"
assert_exit 2 sd prepare busybox --pids-limit=many
assert_contains "--pids-limit=many is named" "$ERR" "--pids-limit=many"
assert_exit 2 sd prepare busybox --cap-add=CAP_WIZARD
assert_contains "an unknown capability" "$ERR" "--cap-add=CAP_WIZARD: not a capability"
assert_exit 2 sd prepare busybox --tmpfs=/tmp:size=1m,suid,exec
assert_contains "a tmpfs option outside the safe set is named" "$ERR" 'option "suid" is not supported'
assert_exit 2 sd prepare busybox --tmpfs=/proc/sys
assert_contains "no tmpfs over the API file systems" "$ERR" "not in /proc, /sys or /dev"
assert_exit 2 sd prepare busybox --tmpfs=tmp
assert_contains "a relative tmpfs path" "$ERR" "must be an absolute path"
assert_exit 2 sd prepare busybox --device=/etc/passwd
assert_contains "a file that is not under /dev" "$ERR" "a device goes under /dev"
assert_exit 2 sd prepare busybox --device=/dev/shm
assert_contains "a directory is not a device" "$ERR" "is not a device node"
assert_exit 2 sd prepare busybox --device=/dev/null:rx
assert_contains "bad device access" "$ERR" 'access "rx"'
printf 'GOOD=1\n# fine\n\nBAD LINE=2\n' >"$T/bad.env"
assert_exit 2 sd prepare busybox --env-file="$T/bad.env"
assert_contains "a bad env file line: file and line named" "$ERR" "$T/bad.env:4: \"BAD LINE\" is not a variable name"
printf 'A=1\nNOEQUALS\n' >"$T/bad2.env"
assert_exit 2 sd prepare busybox --env-file="$T/bad2.env"
assert_contains "a line without =" "$ERR" "$T/bad2.env:2: expected NAME=VALUE"
assert_exit 2 sd prepare busybox --env-file="$T/no-such.env"
assert_contains "a missing env file is named" "$ERR" "$T/no-such.env"
mkfifo "$T/fifo.env"
assert_exit 2 timeout 10 "$SDPOD" --dir="$DATA" prepare busybox --env-file="$T/fifo.env"
assert_contains "a FIFO as env file: refused, not read (no hang)" "$ERR" "$T/fifo.env"
assert_eq "nothing was prepared" "$before" "$(n_pods)"

# ---------------------------------------------------------------------------
echo "# --cap-add, --cap-drop: the app's bounding and effective sets"
# ---------------------------------------------------------------------------
caps='grep -E "^Cap(Eff|Bnd)" /proc/self/status >/out/$0'
assert_exit 0 sd run "${VOL[@]}" busybox --user=0 "$OUTMNT" --exec=/bin/sh -- -c "$caps" default
assert_exit 0 sd run "${VOL[@]}" busybox --user=0 "$OUTMNT" --cap-add=net_raw,SYS_ADMIN --cap-drop=CAP_CHOWN \
	--exec=/bin/sh -- -c "$caps" changed
assert_contains "--cap-add names what it gives" "$ERR" "--cap-add gives it CAP_NET_RAW, beyond the default set"
assert_exit 0 sd run "${VOL[@]}" busybox --user=0 "$OUTMNT" --cap-drop=ALL --exec=/bin/sh -- -c "$caps" none
# (In a pod without a user namespace: with one and no network of its own
# for nspawn to make, nspawn withholds NET_BIND_SERVICE from the whole pod,
# measured; a pod's network namespace lets anyone bind a low port anyway.)
assert_exit 0 sd run "${VOL[@]}" --private-users=no busybox --user=0 "$OUTMNT" --cap-drop=ALL \
	--cap-add=NET_BIND_SERVICE --exec=/bin/sh -- -c "$caps" only-bind
def_bnd=$(awk '/CapBnd/ {print $2}' "$OUTDIR/default")
bnd=$(awk '/CapBnd/ {print $2}' "$OUTDIR/changed")
eff=$(awk '/CapEff/ {print $2}' "$OUTDIR/changed")
assert_eq "default: CAP_CHOWN (0) in the bounding set" 1 "$(cap_bit "$def_bnd" 0)"
assert_eq "default: no CAP_NET_RAW (13)" 0 "$(cap_bit "$def_bnd" 13)"
assert_eq "default: no CAP_MKNOD (27)" 0 "$(cap_bit "$def_bnd" 27)"
assert_eq "--cap-add=net_raw: CAP_NET_RAW bounded" 1 "$(cap_bit "$bnd" 13)"
assert_eq "--cap-add=net_raw: CAP_NET_RAW effective for root" 1 "$(cap_bit "$eff" 13)"
assert_eq "--cap-add=SYS_ADMIN: CAP_SYS_ADMIN (21), of the pod's user namespace" 1 "$(cap_bit "$bnd" 21)"
assert_eq "--cap-drop=CAP_CHOWN: gone from the bounding set" 0 "$(cap_bit "$bnd" 0)"
assert_eq "--cap-drop=CAP_CHOWN: not effective" 0 "$(cap_bit "$eff" 0)"
assert_eq "the rest of the default set stays (CAP_KILL, 5)" 1 "$(cap_bit "$bnd" 5)"
assert_eq "--cap-drop=ALL: nothing bounded" 0000000000000000 "$(awk '/CapBnd/ {print $2}' "$OUTDIR/none")"
assert_eq "--cap-drop=ALL: nothing effective for root" 0000000000000000 "$(awk '/CapEff/ {print $2}' "$OUTDIR/none")"
# Drops first, then adds, as podman, docker and runc do.
assert_eq "--cap-drop=ALL --cap-add=NET_BIND_SERVICE: that one bounded" 0000000000000400 \
	"$(awk '/CapBnd/ {print $2}' "$OUTDIR/only-bind")"
assert_eq "--cap-drop=ALL --cap-add=NET_BIND_SERVICE: that one effective for root" 0000000000000400 \
	"$(awk '/CapEff/ {print $2}' "$OUTDIR/only-bind")"

# ---------------------------------------------------------------------------
echo "# --read-only, --tmpfs: the root refuses writes, the tmpfs takes them"
# ---------------------------------------------------------------------------
script='
touch /file-in-root 2>/out/root-err; echo "root=$?" >/out/fs
touch /etc/x 2>>/out/root-err; echo "etc=$?" >>/out/fs
echo hello >/tmp/f && echo "tmp=$(cat /tmp/f)" >>/out/fs
grep " /tmp " /proc/self/mounts >/out/tmp-mount
grep " /scratch " /proc/self/mounts >/out/scratch-mount
stat -c "%a" /tmp /scratch >/out/modes
cp /bin/busybox /tmp/bb && /tmp/bb true 2>/out/noexec-err; echo "exec-on-noexec=$?" >>/out/fs
head -c 2097152 /dev/zero >/tmp/big 2>/out/size-err; echo "over-size=$?" >>/out/fs
'
assert_exit 0 sd run "${VOL[@]}" busybox --user=0 "$OUTMNT" --read-only --tmpfs=/tmp:size=1m,noexec \
	--tmpfs=/scratch:mode=0700 --exec=/bin/sh -- -c "$script"
FS=$(cat "$OUTDIR/fs")
assert_contains "--read-only: a write to / fails" "$FS" "root=1"
assert_contains "--read-only: with EROFS" "$(cat "$OUTDIR/root-err")" "Read-only file system"
assert_contains "--read-only: /etc too" "$FS" "etc=1"
assert_contains "--tmpfs=/tmp: writable on a read-only root" "$FS" "tmp=hello"
TM=$(cat "$OUTDIR/tmp-mount")
assert_contains "/tmp is a tmpfs" "$TM" "tmpfs /tmp tmpfs"
assert_contains "nosuid, nodev always, noexec asked" "$TM" "rw,nosuid,nodev,noexec"
assert_contains "size=1m" "$TM" "size=1024k"
assert_eq "mode 1777 unless given; mode=0700 given" "1777
700" "$(cat "$OUTDIR/modes")"
check_not "noexec: a program copied there does not run" grep -q "exec-on-noexec=0" "$OUTDIR/fs"
check_not "size=1m: 2 MiB does not fit" grep -q "over-size=0" "$OUTDIR/fs"
assert_contains "the scratch tmpfs is there too" "$(cat "$OUTDIR/scratch-mount")" "tmpfs /scratch tmpfs rw,nosuid,nodev"
# Without --read-only the root is writable (the overlay's upper layer).
assert_exit 0 sd run "${VOL[@]}" busybox --user=0 "$OUTMNT" --exec=/bin/sh -- -c 'touch /file-in-root; echo "root=$?" >/out/rw'
assert_eq "without --read-only, / is writable" "root=0" "$(cat "$OUTDIR/rw")"

# ---------------------------------------------------------------------------
echo "# --env-file: variables in order, with --set-env"
# ---------------------------------------------------------------------------
printf '# settings\n\nA=1\n  B=two words\nC=x=y\r\nQ="quoted"\nA=again\n' >"$T/good.env"
assert_exit 0 sd run "${VOL[@]}" busybox "$OUTMNT" --env-file="$T/good.env" --set-env=D=4 \
	--exec=/bin/sh -- -c 'printf "%s|" "$A" "$B" "$C" "$Q" "$D" >/out/env'
assert_eq "the file's variables, the last A winning, quotes kept, CR dropped" 'again|two words|x=y|"quoted"|4|' \
	"$(cat "$OUTDIR/env")"
U=$(sd prepare busybox --env-file="$T/good.env" --exec=/bin/true)
assert_jq "the manifest holds them as environment" "$(sd cat-manifest "$U")" \
	'[.apps[0].app.environment[] | select(.name == "A" or .name == "B")] == [{"name": "A", "value": "again"}, {"name": "B", "value": "two words"}]' true
sd rm "$U" >/dev/null

# ---------------------------------------------------------------------------
echo "# --memory, --cpus, --pids-limit, --device: in effect, or the app fails saying why"
# ---------------------------------------------------------------------------
# The pod's systemd applies a limit only where it has the controller: on
# a cgroup v2 host whose controllers reach the pod. On this hybrid host
# (cgroup v1 controllers) it has none, and MemoryMax= would silently do
# nothing: the app must fail instead, exit code 125, with the reason.
host_v2=no
[ -e /sys/fs/cgroup/cgroup.controllers ] && host_v2=yes
echo "# host cgroup v2: $host_v2"

# limit_case NAME OPTION CONTROLLER-FILE EXPECTED ISOLATOR
limit_case() {
	local name=$1 option=$2 file=$3 expected=$4 isolator=$5 marker="3601.$$$RANDOM" pid cg
	rm -f "$T/uuid.$name"
	"$SDPOD" --dir="$DATA" run --uuid-file="$T/uuid.$name" busybox --app="$name" "$option" \
		--exec=/bin/sleep -- "$marker" >"$T/out.$name" 2>&1 &
	local runpid=$!
	BG_PIDS+=("$runpid")
	wait_until 20 test -s "$T/uuid.$name" || fail "$name: no pod"
	local uuid
	uuid=$(cat "$T/uuid.$name")
	if wait_until 20 status_is "$uuid" "app-$name" 125; then
		wait_pid "$runpid"
		assert_eq "$option: the pod exits with the app's 125" 125 "$RC"
		# On the console of sdpod run: a pod that ends this fast may end
		# before its journald has moved the log to the pod's journal
		# directory (the sandbox below shows the journal).
		assert_contains "$option: sdpod run shows why ($isolator)" "$(cat "$T/out.$name")" \
			"app $name: $isolator cannot be enforced"
		check_not "$option: the program never ran" pgrep -f "sleep $marker"
		[ "$host_v2" = no ] && pass "$option: refused on a cgroup v1 host, as it must be"
	else
		pid=$(pgrep -f "sleep $marker" | head -1)
		cg=$(sed -n 's/^0:://p' "/proc/$pid/cgroup")
		assert_eq "$option: the app's cgroup has $file=$expected" "$expected" "$(cat "/sys/fs/cgroup$cg/$file")"
		[ "$host_v2" = yes ] || fail "$option: ran on a host without cgroup v2"
		sd stop "$uuid" >/dev/null
		wait_pid "$runpid"
	fi
	sd rm "$uuid" >/dev/null 2>&1 || true
}
limit_case mem --memory=20M memory.max 20000000 "resource/memory (MemoryMax=)"
limit_case cpu --cpus=0.5 cpu.max "50000 100000" "resource/cpu (CPUQuota=)"
limit_case pids --pids-limit=20 pids.max 20 "sdpod/pids-limit (TasksMax=)"

# --device: the node comes in as a read-only host volume, the rule goes
# into the cgroup (DeviceAllow=); neither v1 nor a user namespace lets the
# pod's systemd apply the rule, so here the app fails.
U=$(sd prepare busybox --device=/dev/full:rw --exec=/bin/true)
M=$(sd cat-manifest "$U")
assert_jq "--device: a read-only host volume of the node" "$M" \
	'.volumes == [{"name": "dev-full", "kind": "host", "source": "/dev/full", "readOnly": true}]' true
assert_jq "--device: mounted at its path" "$M" '.apps[0].mounts == [{"volume": "dev-full", "path": "/dev/full"}]' true
assert_jq "--device: the rule as an isolator" "$M" \
	'.apps[0].app.isolators == [{"name": "sdpod/devices", "value": {"allow": [{"path": "/dev/full", "access": "rw"}]}}]' true
sd rm "$U" >/dev/null
# A link is resolved when the pod is prepared: the volume is the node it
# leads to then, and one that leads out of /dev is refused.
LINK=/dev/sdpod-test-$$
ln -s /dev/full "$LINK"
U=$(sd prepare busybox --device="$LINK" --exec=/bin/true)
rm -f "$LINK"
assert_jq "--device=LINK: the volume is the node the link led to" "$(sd cat-manifest "$U")" \
	'[.volumes[0].source, .apps[0].mounts[0].path]' "[\"/dev/full\",\"$LINK\"]"
sd rm "$U" >/dev/null
ln -s /etc/shadow "$LINK"
assert_exit 2 sd prepare busybox --device="$LINK"
rm -f "$LINK"
assert_contains "--device: a link out of /dev is refused" "$ERR" "leads to /etc/shadow, not under /dev"
assert_exit 125 sd run --uuid-file="$T/u-dev" busybox --app=dev --device=/dev/full --exec=/bin/echo -- device app ran
assert_eq "--device: the app's status is 125" 125 "$(status_of "$(cat "$T/u-dev")" app-dev)"
assert_contains "--device: sdpod run says the device rule cannot be enforced" "$OUT$ERR" \
	"app dev: sdpod/devices (DeviceAllow=) cannot be enforced"
assert_not_contains "--device: the program never ran" "$OUT$ERR" "device app ran"
sd rm "$(cat "$T/u-dev")" >/dev/null
# An app without --device has no device of the host's beyond the pod's
# pseudo devices, and cannot make one (CAP_MKNOD is not in its set).
assert_exit 0 sd run "${VOL[@]}" busybox --user=0 "$OUTMNT" --exec=/bin/sh -- -c \
	'ls /dev >/out/devs; mknod /tmp/fuse c 10 229 2>/out/mknod-err; echo "mknod=$?" >/out/mknod'
check_not "no /dev/fuse in an app that did not ask for it" grep -qx fuse "$OUTDIR/devs"
check_not "no /dev/kvm either" grep -qx kvm "$OUTDIR/devs"
assert_eq "mknod of /dev/fuse's numbers fails" "mknod=1" "$(cat "$OUTDIR/mknod")"

# ---------------------------------------------------------------------------
echo "# podapp add: the same options for an app of a running pod"
# ---------------------------------------------------------------------------
# A sandbox that outlives a failed app: its journal has the reasons.
assert_exit 0 pa sandbox --keep-on-app-failure "${VOL[@]}" --volume=full,kind=host,source=/dev/full,readOnly=true
S=$OUT
assert_exit 0 pa add "$S" --app=ro busybox --user=0 "$OUTMNT" --read-only --tmpfs=/tmp --cap-drop=ALL \
	--env-file="$T/good.env" --exec=/bin/sh -- -c \
	'touch /x 2>/dev/null; echo "root=$? tmp=$(touch /tmp/y && echo ok) A=$A $(grep CapBnd /proc/self/status)" >/out/podapp'
assert_exit 0 pa start "$S" --app=ro
wait_until 10 test -s "$OUTDIR/podapp" || true
P=$(cat "$OUTDIR/podapp" 2>/dev/null || true)
assert_contains "podapp add --read-only" "$P" "root=1"
assert_contains "podapp add --tmpfs" "$P" "tmp=ok"
assert_contains "podapp add --env-file" "$P" "A=again"
assert_contains "podapp add --cap-drop=ALL" "$P" "CapBnd:	0000000000000000"
assert_exit 2 pa add "$S" --app=dev busybox --device=/dev/zero --exec=/bin/true
assert_contains "podapp add --device: a running pod gets no new volume" "$ERR" "the pod has no volume of /dev/zero"
assert_exit 0 pa add "$S" --app=dev busybox --device=/dev/full --exec=/bin/echo -- device app ran
assert_jq "podapp add --device: the sandbox's volume of the node is mounted" "$(sd cat-manifest "$S")" \
	'.apps[] | select(.name == "dev") | .mounts' '[{"volume":"full","path":"/dev/full"}]'
assert_exit '0|1|125' pa start "$S" --app=dev
check "podapp: --device, the journal says why" wait_until 10 journal_has \
	"app dev: sdpod/devices (DeviceAllow=) cannot be enforced" "$S"
check_not "podapp: the device app never ran" journal_has "device app ran" "$S"
assert_exit 2 pa add "$S" --app=mem busybox --memory=lots --exec=/bin/true
assert_contains "podapp add --memory=lots" "$ERR" "--memory=lots: not a quantity"
assert_exit 0 pa add "$S" --app=mem busybox --memory=20M --exec=/bin/true
assert_exit '0|1|125' pa start "$S" --app=mem
check "podapp: the limited app's journal says why" wait_until 10 journal_has \
	"app mem: resource/memory (MemoryMax=) cannot be enforced" "$S"
check "podapp: its status is 125" wait_until 10 status_is "$S" app-mem 125
check "podapp: the pod outlived the failed app" status_is "$S" state running
assert_exit 0 pa add "$S" --app=cpu busybox --cpus=1 --exec=/bin/true
assert_exit '0|1|125' pa start "$S" --app=cpu
check "podapp: --cpus, the journal says why" wait_until 10 journal_has \
	"app cpu: resource/cpu (CPUQuota=) cannot be enforced" "$S"
sd stop "$S" >/dev/null 2>&1 || true
sd rm "$S" >/dev/null 2>&1 || true

bg_pods_cleanup
leak_check
