#!/bin/bash
#
# test-pod-run.sh - real pods under systemd-nspawn: sdpod run, run-prepared,
# stop, enter; the stage1 (its units, sdpod-generator, the reapers) and the
# exit statuses. Every pod boots the stage1 of the build ($SDPOD_STAGE1)
# with busybox apps.
#
# What must hold after every scenario: no pod process left, no mount left
# on the host (a pod's mounts live in its own mount namespace), and every
# pod directory removable by gc.

. "$(dirname "$0")/lib.sh"

use_real_images
require_tool systemd-nspawn systemd-container

trap '_rc=$?; bg_pods_cleanup; (exit "$_rc"); _lib_on_exit' EXIT

leak_begin

echo "# building the image"
busybox_layout
import_ok BB --name=busybox "$IMG/oci"

# ---------------------------------------------------------------------------
echo "# run: one app, its output and exit status 0"
# ---------------------------------------------------------------------------
assert_exit 0 sd run --uuid-file="$T/u1" busybox --exec=/bin/echo -- hello from the pod
U1=$(cat "$T/u1")
assert_contains "the app's output reaches sdpod run's output" "$OUT" "hello from the pod"
assert_eq "the pod has exited" exited "$(status_of "$U1" state)"
assert_eq "its exit status is recorded" 0 "$(status_of "$U1" app-busybox)"
assert_file_exists "$DATA/pods/run/$U1/status/busybox"
check "the status file holds a number and a newline" grep -qx 0 "$DATA/pods/run/$U1/status/busybox"
no_pod_procs "$U1"

# ---------------------------------------------------------------------------
echo "# run: exit statuses 1 and 42 become sdpod's"
# ---------------------------------------------------------------------------
for code in 1 42; do
	assert_exit "$code" sd run --uuid-file="$T/u" busybox --exec=/bin/sh -- -c "echo exiting $code; exit $code"
	U=$(cat "$T/u")
	assert_contains "exit $code: the app's output" "$OUT" "exiting $code"
	assert_eq "exit $code: recorded for the app" "$code" "$(status_of "$U" app-busybox)"
	assert_eq "exit $code: the pod has exited" exited "$(status_of "$U" state)"
	no_pod_procs "$U"
done

# ---------------------------------------------------------------------------
echo "# run: three apps; the one that fails halts the others"
# ---------------------------------------------------------------------------
assert_exit 42 sd run --uuid-file="$T/u3" \
	busybox --app=first --exec=/bin/sleep -- 1000 \
	--- busybox --app=second --exec=/bin/sleep -- 1000 \
	--- busybox --app=failing --exec=/bin/sh -- -c 'sleep 1; exit 42'
U3=$(cat "$T/u3")
assert_eq "the failing app's status" 42 "$(status_of "$U3" app-failing)"
# SIGTERM ends busybox sleep: 128 + 15.
assert_eq "the first app was stopped (SIGTERM) and recorded" 143 "$(status_of "$U3" app-first)"
assert_eq "the second app was stopped (SIGTERM) and recorded" 143 "$(status_of "$U3" app-second)"
no_pod_procs "$U3"

# Apps that all succeed: the pod ends with the last one, exit 0.
assert_exit 0 sd run --uuid-file="$T/u" busybox --app=quick --exec=/bin/true \
	--- busybox --app=slower --exec=/bin/sh -- -c 'sleep 1; echo slower done'
U=$(cat "$T/u")
assert_contains "the pod waits for its last app" "$OUT" "slower done"
assert_eq "both recorded" "0 0" "$(status_of "$U" app-quick) $(status_of "$U" app-slower)"

# ---------------------------------------------------------------------------
echo "# an executable that is not in the image"
# ---------------------------------------------------------------------------
assert_exit 2 sd run busybox --exec=/bin/nope
assert_contains "prepare names the missing executable" "$ERR" "/bin/nope"
assert_eq "and makes no pod" "" "$(sd list --no-legend | awk '$3 != "exited"')"
# A manifest edited by hand after prepare is checked again by run-prepared
# before the pod moves to run/: a broken one leaves the pod prepared, to be
# fixed, and the error names the manifest's path.
assert_exit 0 sd prepare busybox --exec=/bin/true
UX=$OUT
PX="$DATA/pods/prepared/$UX"
cp "$PX/pod" "$T/good-manifest"
jq '.apps[0].app.exec = ["/bin/gone"]' "$T/good-manifest" >"$PX/pod"
assert_exit 5 sd run-prepared "$UX"
assert_contains "run-prepared says which file is missing, in which manifest" "$ERR" \
	"pod $UX is left prepared: $PX/pod: app busybox:"
assert_contains "and which program" "$ERR" '"/bin/gone" not found'
assert_eq "the pod is still prepared" prepared "$(status_of "$UX" state)"
head -c 100 "$T/good-manifest" >"$PX/pod"
assert_exit 5 sd run-prepared "$UX"
assert_contains "a manifest that is not JSON" "$ERR" "$PX/pod: pod manifest: not valid JSON"
assert_eq "still prepared" prepared "$(status_of "$UX" state)"
cp "$T/good-manifest" "$PX/pod"
assert_exit 0 sd run-prepared "$UX"
assert_eq "fixed, it runs" 0 "$(status_of "$UX" app-busybox)"
no_pod_procs "$UX"

# ---------------------------------------------------------------------------
echo "# stop: an orderly halt records every status"
# ---------------------------------------------------------------------------
run_bg S1 --name=stopper busybox --app=one --exec=/bin/sleep -- 1000 \
	--- busybox --app=two --exec=/bin/sh -- -c 'trap "echo two got TERM; exit 7" TERM; while :; do sleep 0.1; done'
wait_app "$S1" one && wait_app "$S1" two
assert_eq "a started pod is running" running "$(status_of "$S1" state)"
assert_exit 4 sd rm "$S1"
assert_contains "rm refuses a running pod" "$ERR" "running"
assert_exit 0 sd stop "$S1"
assert_eq "stop prints the UUID" "$S1" "$OUT"
assert_eq "after stop the pod has exited" exited "$(status_of "$S1" state)"
assert_eq "one: killed by SIGTERM" 143 "$(status_of "$S1" app-one)"
assert_eq "two: its own exit status" 7 "$(status_of "$S1" app-two)"
wait_pid "$S1_PID"
# An app that exits non-zero on SIGTERM has failed: its status is the pod's.
assert_eq "sdpod run's exit status" 7 "$RC"
assert_contains "the app saw SIGTERM" "$(cat "$S1_OUT")" "two got TERM"
no_pod_procs "$S1"
assert_exit 4 sd stop "$S1"
assert_contains "stop of an exited pod says so" "$ERR" "not running"

# ---------------------------------------------------------------------------
echo "# SIGTERM and SIGINT to sdpod run stop the pod in order"
# ---------------------------------------------------------------------------
for sig in TERM INT; do
	run_bg S2 busybox --exec=/bin/sleep -- 1000
	wait_app "$S2" busybox
	kill -"$sig" "$S2_PID"
	wait_pid "$S2_PID"
	assert_eq "SIG$sig: sdpod run exits 0 (no app failed)" 0 "$RC"
	assert_eq "SIG$sig: the status is recorded" 143 "$(status_of "$S2" app-busybox)"
	no_pod_procs "$S2"
done

# ---------------------------------------------------------------------------
echo "# stop --force"
# ---------------------------------------------------------------------------
run_bg S3 busybox --exec=/bin/sleep -- 1000
wait_app "$S3" busybox
assert_exit 0 sd stop --force "$S3"
assert_eq "after stop --force the pod has exited" exited "$(status_of "$S3" state)"
assert_eq "no status is recorded" "" "$(status_of "$S3" app-busybox)"
wait_pid "$S3_PID"
no_pod_procs "$S3"

# What a killed nspawn leaves: test-pod-lifecycle.sh.

# ---------------------------------------------------------------------------
echo "# enter"
# ---------------------------------------------------------------------------
run_bg E1 --name=entered busybox --app=web --exec=/bin/sleep --set-env=GREETING=hi -- 1000 \
	--- busybox --app=db --exec=/bin/sleep -- 1000
wait_app "$E1" web && wait_app "$E1" db
assert_exit 0 sd enter --app=web "$E1" /bin/sh -c 'echo "$GREETING from $(hostname)"'
assert_eq "enter runs in the app with its environment, in the pod's UTS namespace" "hi from entered" "$OUT"
assert_exit 0 sd enter --app=web "$E1" /bin/sh -c 'echo "$HOME"'
assert_eq "enter gives the app's HOME, as its unit does" /home/app "$OUT"
assert_exit 0 sd enter --app=web "$E1" /bin/sh -c 'cat /proc/1/comm; ls /bin/busybox'
assert_contains "enter is in the pod's pid namespace" "$OUT" "systemd"
assert_contains "and in the app's root" "$OUT" "/bin/busybox"
assert_exit 0 sd enter --app=db "$E1" /bin/ps
assert_contains "the other app is visible (one pid namespace)" "$OUT" "sleep 1000"
assert_exit 7 sd enter --app=web "$E1" /bin/sh -c 'exit 7'
assert_exit 2 sd enter "$E1" true
assert_contains "two apps: --app is needed" "$ERR" "--app"
assert_exit 3 sd enter --app=nope "$E1" true
assert_contains "an unknown app is named" "$ERR" "no app nope"
assert_exit 127 sd enter --app=web "$E1" /bin/no-such-command
assert_exit 0 sd enter --app=web "${E1:0:8}" true
pass "enter takes a UUID prefix"

# The manifest inside the pod is the host's file, seen anew after an atomic
# rewrite (rename), which is how podapp will change a running pod.
# (Read through the pod's root as its PID 1 sees it: the stage1 has no cat.)
NSPAWN=$(awk '{print $1}' "$DATA/pods/run/$E1/pid")
LEADER=$(awk '{print $1}' "/proc/$NSPAWN/task/$NSPAWN/children")
assert_eq "the pod sees the manifest at /sdpod/pod" "$(cat "$DATA/pods/run/$E1/pod")" \
	"$(cat "/proc/$LEADER/root/sdpod/pod")"
jq '.annotations += [{"name": "test/rewritten", "value": "yes"}]' "$DATA/pods/run/$E1/pod" >"$DATA/pods/run/$E1/pod.new"
mv "$DATA/pods/run/$E1/pod.new" "$DATA/pods/run/$E1/pod"
assert_contains "a rewrite by rename is seen inside the pod" "$(cat "/proc/$LEADER/root/sdpod/pod")" "test/rewritten"
assert_exit 0 sd stop "$E1"
wait_pid "$E1_PID"
assert_exit 4 sd enter --app=web "$E1" true
assert_contains "enter of an exited pod" "$ERR" "not running"
no_pod_procs "$E1"

# ---------------------------------------------------------------------------
echo "# run-prepared"
# ---------------------------------------------------------------------------
assert_exit 0 sd prepare busybox --exec=/bin/sh -- -c 'echo prepared ran; exit 3'
P1=$OUT
assert_exit 3 sd run-prepared "${P1:0:8}"
assert_contains "run-prepared runs the prepared pod" "$OUT" "prepared ran"
assert_eq "and it is recorded" 3 "$(status_of "$P1" app-busybox)"
assert_exit 4 sd run-prepared "$P1"
assert_contains "a pod runs once" "$ERR" "$P1"

# ---------------------------------------------------------------------------
echo "# volumes"
# ---------------------------------------------------------------------------
# A host volume is seen as it is: root in the pod is not root on the host
# (it has a user namespace), so it writes where others may, as its own
# range of ids, never as the host's root.
mkdir "$T/hostvol"
echo from-host >"$T/hostvol/in"
mkdir -m 1777 "$T/hostvol/shared"
assert_exit 0 sd run --uuid-file="$T/vol-uuid" --volume=data,kind=host,source="$T/hostvol" --volume=scratch,kind=empty \
	busybox --app=writer --user=0 --group=0 --mount=volume=data,target=/data --mount=volume=scratch,target=/scratch \
	--exec=/bin/sh -- -c 'cat /data/in; echo from-pod >/data/shared/out; echo x >/data/denied || echo denied;
		echo shared >/scratch/f' \
	--- busybox --app=reader --mount=volume=scratch,target=/s --exec=/bin/sh -- -c 'i=0; until [ -s /s/f ] || [ $i -ge 300 ]; do sleep 0.1; i=$((i+1)); done; cat /s/f'
assert_contains "the app reads the host volume" "$OUT" "from-host"
assert_contains "an empty volume is shared by the apps" "$OUT" "shared"
assert_eq "the app's write reaches the host" from-pod "$(cat "$T/hostvol/shared/out" 2>/dev/null)"
base=$(status_of "$(cat "$T/vol-uuid")" private-users)
assert_match "the pod has a range of ids of its own" '^[0-9]+:65536$' "$base"
assert_eq "what root in the pod wrote is owned by the pod's range, not by root" "${base%:*}:${base%:*}" \
	"$(stat -c %u:%g "$T/hostvol/shared/out")"
assert_contains "root in the pod cannot write what only the host's root may" "$OUT" "denied"
assert_file_absent "$T/hostvol/denied"

# ---------------------------------------------------------------------------
echo "# --private-users=no: the operator's choice of a pod without a user namespace"
# ---------------------------------------------------------------------------
assert_exit 0 sd run --uuid-file="$T/u-nouserns" --private-users=no busybox --user=0 --exec=/bin/sh -- -c \
	'echo "map=$(tr -s " " </proc/self/uid_map | sed "s/^ //")"; grep -E "^(NoNewPrivs|Seccomp):" /proc/self/status'
assert_contains "root in the pod is the host's" "$OUT" "map=0 0 4294967295"
assert_match "its apps keep their confinement" 'NoNewPrivs:[[:space:]]+1' "$OUT"
assert_eq "status says so" no "$(status_of "$(cat "$T/u-nouserns")" private-users)"
assert_exit 2 sd run --private-users=maybe busybox --exec=/bin/true
assert_contains "a bad value is named" "$ERR" "--private-users=maybe: expected yes or no"
# An app whose ids do not fit a pod's range is refused at prepare.
assert_exit 2 sd prepare busybox --user=70000 --exec=/bin/true
assert_contains "an id beyond the range is refused" "$ERR" "outside the pod's user namespace"
assert_exit 0 sd prepare --private-users=no busybox --user=70000 --exec=/bin/true
assert_exit 0 sd rm "$OUT"

# ---------------------------------------------------------------------------
echo "# run --detach without a systemd host: a process of its own; sdpod journal"
# ---------------------------------------------------------------------------
assert_exit 0 sd run --detach --name=bg busybox --exec=/bin/sh -- -c 'echo bg-out; echo bg-err >&2; exec sleep 600'
D=$OUT
assert_match "it prints only the UUID" '^[0-9a-f-]{36}$' "$D"
assert_eq "the pod runs once the UUID is printed" running "$(status_of "$D" state)"
# journald stores the output a moment after the app wrote it.
check "sdpod journal: stdout" wait_until 10 journal_has bg-out --app=busybox "$D"
check "and stderr" journal_has bg-err --app=busybox "$D"
assert_exit 0 sd stop "$D"
assert_eq "stopped in order" 143 "$(status_of "$D" app-busybox)"
assert_exit 0 sd journal --app=busybox "$D" --no-pager -o cat
assert_contains "the journal outlives the pod" "$OUT" bg-out
assert_exit 3 sd journal --app=nope "$D"
assert_exit 2 sd journal
no_pod_procs "$D"

# ---------------------------------------------------------------------------
echo "# run --detach of a pod that ends before it is ready: kept, and told why"
# ---------------------------------------------------------------------------
# A quick job (its app ends well while the pod boots) is a success.
assert_exit 0 sd run --detach busybox --exec=/bin/true
Q=$OUT
assert_match "a quick job prints its UUID" '^[0-9a-f-]{36}$' "$Q"
check "and exits 0" wait_until 20 status_is "$Q" app-busybox 0
# A network whose plugin does not exist: CNI ADD fails while the pod boots.
# Before, the pod waited for its network for ever (the SIGTERM that was to
# end it came while its systemd booted, which loses it). The stage1 gave
# up before any app started: its reason says it all, and the pod goes.
mkdir "$T/net.d"
echo '{ "cniVersion": "1.0.0", "name": "broken", "plugins": [ { "type": "nosuchplugin" } ] }' \
	>"$T/net.d/broken.conflist"
before=$(sd list --no-legend | wc -l)
SDPOD_NET_DIR=$T/net.d assert_exit 1 timeout 30 "$SDPOD" --dir="$DATA" run --detach --net=broken busybox --exec=/bin/sleep -- 600
assert_contains "it says why, at once" "$ERR" "plugin nosuchplugin not found"
assert_eq "and leaves no pod" "$before" "$(sd list --no-legend | wc -l)"
# A pod that ran and ended on its own before it was ready is kept, with
# its exit code: here its stage1's run entrypoint, which only exits 3.
mkdir -p "$T/stage1-3/rootfs"
jq '.annotations |= map(if .name == "sdpod/stage1/run" then .value = "/run3"
	elif .name == "sdpod/stage1/gc" then .value = "/gc0" else . end)' \
	"$SDPOD_STAGE1/manifest" >"$T/stage1-3/manifest"
printf '#!/bin/sh\nexit 3\n' >"$T/stage1-3/rootfs/run3"
printf '#!/bin/sh\nexit 0\n' >"$T/stage1-3/rootfs/gc0"
chmod 755 "$T/stage1-3/rootfs/run3" "$T/stage1-3/rootfs/gc0"
SDPOD_STAGE1=$T/stage1-3 assert_exit 3 sd run --detach busybox --exec=/bin/true
K=$OUT
assert_match "it prints the UUID of the pod it kept" '^[0-9a-f-]{36}$' "$K"
assert_contains "and says so" "$ERR" "The pod is kept for 'sdpod status' and 'sdpod journal' until 'sdpod rm $K'"
assert_eq "the pod is kept, exited" exited "$(status_of "$K" state)"
assert_exit 0 sd rm "$K"

# ---------------------------------------------------------------------------
echo "# the commands that only look work on a read-only data directory"
# ---------------------------------------------------------------------------
mkdir "$T/ro"
mount --bind "$DATA" "$T/ro"
mount -o remount,bind,ro "$T/ro"
ro() { "$SDPOD" --dir="$T/ro" "$@"; }
assert_exit 0 ro list
assert_contains "list" "$OUT" "${D:0:8}"
assert_exit 0 ro status "$D"
assert_contains "status" "$OUT" "app-busybox=143"
assert_exit 0 ro cat-manifest "$D"
assert_exit 0 ro journal --app=busybox "$D" --no-pager -o cat
assert_contains "journal" "$OUT" bg-out
assert_exit 0 ro image list
assert_contains "image list" "$OUT" busybox
assert_exit 1 ro prepare busybox --exec=/bin/true
assert_contains "what writes says why" "$ERR" "is not writable: Read-only file system"
umount "$T/ro"

# ---------------------------------------------------------------------------
echo "# what is left: exited pods, removed by gc"
# ---------------------------------------------------------------------------
assert_eq "every pod has exited" "" "$(sd list --no-legend | awk '$3 != "exited"')"
assert_exit 0 sd gc --grace-period=0
for d in embryo prepare prepared run exited-garbage garbage; do
	assert_dir_empty "gc left nothing in pods/$d" "$DATA/pods/$d"
done
leak_check
