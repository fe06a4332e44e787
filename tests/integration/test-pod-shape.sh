#!/bin/bash
#
# test-pod-shape.sh - the shape of a pod (issue 26, items 5, 6 and 8): a
# pod definition with the keys of every kind of option runs, and its
# options are in force in the running app; sdpod run --mutable, then
# podapp add and rm of a sidecar; the order between apps (--after,
# --requires, --wait-healthy) as systemd's start times show it; and the
# bad orders, refused with the apps named. Real pods, busybox apps.

. "$(dirname "$0")/lib.sh"

use_real_images
require_tool systemd-nspawn systemd-container
[ -n "$PODAPP" ] || die "podapp not found (PODAPP_BIN)"
GENERATOR=$(realpath -e "$(dirname "$SDPOD")/../generator/sdpod-pod-generator") ||
	die "sdpod-pod-generator not found beside $SDPOD"

trap '_rc=$?; bg_pods_cleanup; (exit "$_rc"); _lib_on_exit' EXIT
leak_begin

busybox_layout
import_ok BB --name=busybox "$IMG/oci"

app_json() { pa status "$1" --app="$2" --format=json; }
app_state() { app_json "$1" "$2" | jq -r .state; }
# started_us UUID APP: when systemd started the app (its ExecMainStartTimestamp,
# as podapp status reports it), in microseconds.
started_us() {
	local t
	t=$(app_json "$1" "$2" | jq -r .started)
	[[ $t != null && -n $t ]] || return 1
	date -d "$t" +%s%6N
}
state_is() { [ "$(app_state "$1" "$2")" = "$3" ]; }

# ---------------------------------------------------------------------------
echo "# bad orders: refused before a pod exists, the apps named"
# ---------------------------------------------------------------------------
n_pods() { sd list --no-legend | grep -c . || true; }
before=$(n_pods)
assert_exit 2 sd prepare busybox --app=a --after=ghost --exec=/bin/true
assert_contains "an unknown app is named" "$ERR" "app a: --after=ghost: the pod has no app ghost"
assert_exit 2 sd prepare busybox --app=a --after=b --exec=/bin/true --- busybox --app=b --requires=a --exec=/bin/true
assert_contains "a cycle is named" "$ERR" "the order of the apps has a cycle: a -> b -> a"
assert_exit 2 sd prepare busybox --app=a --after=a --exec=/bin/true
assert_contains "an app after itself" "$ERR" "an app cannot wait for itself"
assert_exit 2 sd prepare busybox --app=a --after='b.service' --exec=/bin/true
assert_contains "a unit name is not an app name" "$ERR" "is not a list of app names"
assert_exit 2 sd prepare busybox --app=a --exec=/bin/true --- busybox --app=b --wait-healthy=a --exec=/bin/true
assert_contains "waiting for an app without a health check" "$ERR" "app a has no health check"
assert_exit 2 sd prepare --mutable=maybe busybox --exec=/bin/true
assert_contains "--mutable takes yes or no" "$ERR" "--mutable=maybe: expected yes or no"
assert_eq "nothing was prepared" "$before" "$(n_pods)"

# ---------------------------------------------------------------------------
echo "# order: --after and --wait-healthy, as systemd started the apps"
# ---------------------------------------------------------------------------
# redis-like: ready (its check passes) 2 s after it starts. The worker comes
# first on the command line: the order is the options', not the line's.
run_bg O --mutable \
	busybox --app=worker --after=redis --exec=/bin/sh -- -c 'echo worker up; exec sleep 1000' \
	--- busybox --app=web --wait-healthy=redis --exec=/bin/sh -- -c 'echo web up; exec sleep 1000' \
	--- busybox --app=redis --health-cmd='test -f /tmp/ready' --health-interval=1s --health-retries=30 \
	--exec=/bin/sh -- -c 'sleep 2; touch /tmp/ready; exec sleep 1000'
wait_for "the worker runs" 30 state_is "$O" worker running
wait_for "the app waiting for redis's health runs" 30 state_is "$O" web running || sd journal "$O" 2>&1 | tail -40 | sed "s/^/# /"
r=$(started_us "$O" redis)
w=$(started_us "$O" worker)
h=$(started_us "$O" web)
check "--after: the worker started after redis ($w > $r)" test "$w" -gt "$r"
check "--wait-healthy: web started once redis was healthy, 2 s after redis ($((h - r)) us)" \
	test $((h - r)) -ge 2000000
assert_eq "redis is healthy" healthy "$(app_json "$O" redis | jq -r .health)"

# ---------------------------------------------------------------------------
echo "# --mutable: the pod's apps ran at start; a sidecar comes and goes"
# ---------------------------------------------------------------------------
assert_exit 0 pa add "$O" --app=sidecar busybox --exec=/bin/sh -- -c 'echo sidecar up; exec sleep 1000'
assert_eq "the sidecar is prepared, not started by the reload" prepared "$(app_state "$O" sidecar)"
assert_exit 0 pa start "$O" --app=sidecar
assert_eq "the sidecar runs" running "$(app_state "$O" sidecar)"
assert_exit 0 pa exec "$O" --app=sidecar -- /bin/sh -c 'echo in the sidecar'
assert_contains "exec in the sidecar" "$OUT" "in the sidecar"
assert_exit 0 pa stop "$O" --app=sidecar
assert_exit 0 pa rm "$O" --app=sidecar
assert_exit 0 pa list "$O" --no-legend
assert_not_contains "the sidecar is gone" "$OUT" sidecar
assert_eq "the pod's own apps run on" running "$(app_state "$O" worker)"
assert_exit 2 pa add "$O" --app=late --after=ghost busybox --exec=/bin/true
assert_contains "podapp add refuses an unknown app in --after" "$ERR" "the pod has no app ghost"

# ---------------------------------------------------------------------------
echo "# --requires: stopping the app required stops the app that requires it"
# ---------------------------------------------------------------------------
assert_exit 0 pa add "$O" --app=needy --requires=redis busybox --exec=/bin/sleep -- 1000
assert_exit 0 pa start "$O" --app=needy
assert_eq "the app that requires redis runs" running "$(app_state "$O" needy)"
assert_exit 0 pa stop "$O" --app=redis
wait_for "stopping redis stopped the app that requires it" 20 state_is "$O" needy exited
assert_eq "the app only after redis runs on" running "$(app_state "$O" worker)"
assert_exit 0 pa start "$O" --app=needy
assert_eq "starting it again starts redis too" running "$(app_state "$O" redis)"
assert_exit 0 sd stop "$O"
wait_pid "$O_PID"
assert_eq "a mutable pod stopped by sdpod stop ends well" 0 "$RC"

# ---------------------------------------------------------------------------
echo "# a definition with a key of each kind: the options in force"
# ---------------------------------------------------------------------------
G="$T/gen"
mkdir -p "$G/root/etc/sdpod/pods" "$G/out" "$G/early" "$G/late"
printf 'GREETING=from the env file\n' >"$T/app.env"
cat >"$G/root/etc/sdpod/pods/shape.pod" <<DEF
[Pod]
Volume=data,kind=empty
StopTimeout=5s
PidsLimit=1024
Pull=never
[App]
Image=busybox
Name=main
Exec=/bin/sh -c 'echo main up; exec sleep 1000'
User=1000
Group=1001
WorkingDirectory=/tmp
Environment=WHO=definition
EnvironmentFile=$T/app.env
ReadOnly=yes
Tmpfs=/scratch:size=1m
DropCapability=ALL
Mount=volume=data,target=/data
After=helper
[App]
Image=busybox
Name=helper
Exec=/bin/sleep 1000
HealthCmd=true
HealthInterval=1s
DEF
assert_exit 0 env SDPOD_POD_GENERATOR_ROOT="$G/root" "$GENERATOR" "$G/out" "$G/early" "$G/late"
unit=$G/out/shape.service
assert_file_exists "$unit"
assert_contains "the pod's task limit is the unit's" "$(cat "$unit")" "TasksMax=1024"
# The command line the unit runs, as sdpod run's arguments (the unit's
# quoting is the shell's for these words: no "$" or "%" in them).
eval "set -- $(sed -n 's/^ExecStart=[^ ]* run //p' "$unit")"
run_bg D "$@"
wait_for "the definition's app runs" 30 state_is "$D" main running
# podapp exec runs a command as the app runs (its user, directory and
# environment).
assert_exit 0 pa exec "$D" --app=main -- /bin/sh -c 'id -u; id -g; pwd; echo "$WHO / $GREETING"'
assert_eq "User=, Group=, WorkingDirectory=, Environment=, EnvironmentFile=" \
	"$(printf '1000\n1001\n/tmp\ndefinition / from the env file')" "$OUT"
assert_exit 0 pa exec "$D" --app=main -- /bin/sh -c 'awk "\$2 == \"/\" {print \$4}" /proc/mounts | tail -1'
assert_match "ReadOnly=: the root is mounted read-only" '^ro(,|$)' "$OUT"
assert_exit 0 pa exec "$D" --app=main -- /bin/sh -c 'grep " /scratch " /proc/mounts; grep " /data " /proc/mounts | cut -d" " -f2'
assert_contains "Tmpfs=" "$OUT" "tmpfs /scratch tmpfs"
assert_contains "Mount= of a Volume=" "$OUT" "/data"
assert_exit 0 pa exec "$D" --app=main -- /bin/sh -c 'grep CapBnd /proc/self/status'
assert_contains "DropCapability=ALL" "$OUT" "0000000000000000"
check "After=helper: main started after helper" test "$(started_us "$D" main)" -gt "$(started_us "$D" helper)"
assert_exit 0 sd stop "$D"
wait_pid "$D_PID"

remove_all_pods
leak_check
