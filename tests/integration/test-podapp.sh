#!/bin/bash
#
# test-podapp.sh - mutable pods and podapp (seed 002) on real pods under
# systemd-nspawn: sandbox, add, start, stop, rm, list, status, exec; the
# errors that must leave the manifest as it was; concurrent adds, rm during
# add, start and stop racing, a pod exiting under an add; and the seed's
# three workflows (orchestrate, in-place update, debugging).
#
# What must hold after everything: no pod process left, the host's mount
# count unchanged (an app's root is mounted in the pod's own namespace), and
# every pod directory removable.

. "$(dirname "$0")/lib.sh"

use_real_images
require_tool systemd-nspawn systemd-container
[ -n "$PODAPP" ] || die "podapp not found (PODAPP_BIN)"

# Every pod this test made is stopped and removed, whatever happened.
remove_pods_on_exit

leak_begin

echo "# building the image"
busybox_layout
import_ok BB --name=busybox "$IMG/oci"

manifest_sum() { sha256sum <"$(pod_dir "$1")/pod"; }
app_state() { pa status "$1" --app="$2" --format=json | jq -r .state; }
app_exit() { pa status "$1" --app="$2" --format=json | jq -r .exit_status; }
pod_state() { sd status "$1" | sed -n 's/^state=//p'; }

state_is() { [ "$(app_state "$1" "$2")" = "$3" ]; }
pod_is() { [ "$(pod_state "$1")" = "$2" ]; }

# ---------------------------------------------------------------------------
echo "# sandbox: an empty mutable pod that stays up"
# ---------------------------------------------------------------------------
assert_exit 0 pa sandbox --name=sb1 --volume=shared,kind=empty
U=$OUT
assert_match "sandbox prints only the UUID" '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$' "$U"
assert_eq "the pod runs" running "$(pod_state "$U")"
assert_eq "its manifest is mutable" true \
	"$(jq -r '.annotations[] | select(.name == "sdpod/mutable") | .value' "$(pod_dir "$U")/pod")"
assert_eq "and has no apps" 0 "$(jq '.apps | length' "$(pod_dir "$U")/pod")"
sleep 1
assert_eq "an empty sandbox stays up" running "$(pod_state "$U")"
assert_exit 0 pa list "$U" --no-legend
assert_eq "podapp list of an empty pod" "" "$OUT"
assert_exit 2 pa sandbox stray-argument
assert_exit 2 pa sandbox --volume=bad
assert_exit 0 pa sandbox --help
assert_contains "sandbox --help" "$OUT" "--keep-on-app-failure"
LEADER=$(leader_of "$U")
NSPAWN=$(nspawn_of "$U")

# ---------------------------------------------------------------------------
echo "# add: the app's root appears in the running pod"
# ---------------------------------------------------------------------------
assert_exit 0 pa add "$U" --app=web busybox --exec=/bin/sh -- -c 'echo web started; exec sleep 1000'
assert_eq "add prints nothing" "" "$OUT"
assert_eq "the app is prepared" prepared "$(app_state "$U" web)"
assert_eq "the manifest names it" web "$(jq -r '.apps[0].name' "$(pod_dir "$U")/pod")"
check "its root is mounted in the pod" grep -q ' /opt/stage2/web/rootfs ' "/proc/$LEADER/mountinfo"
check "the pod sees the image in it" test -x "/proc/$LEADER/root/opt/stage2/web/rootfs/bin/busybox"
check "the generator wrote its unit" test -f "/proc/$LEADER/root/run/systemd/generator/app@web.service"
assert_mounts_unchanged "no mount on the host"

echo "# add: refusals leave the manifest as it was"
SUM=$(manifest_sum "$U")
assert_exit 4 pa add "$U" --app=web busybox --exec=/bin/true
assert_contains "a duplicate name is named" "$ERR" "already has an app web"
assert_exit 2 pa add "$U" busybox --exec=/bin/true
assert_contains "an app needs a name" "$ERR" "--app=NAME"
assert_exit 2 pa add "$U" --app=nope busybox --exec=/bin/nope
assert_contains "a missing program is named" "$ERR" "/bin/nope"
assert_exit 2 pa add "$U" --app=BAD busybox --exec=/bin/true
assert_exit 3 pa add "$U" --app=x no-such-image --exec=/bin/true
assert_exit 2 pa add "$U" --app=m busybox --exec=/bin/true --mount=volume=nothere,target=/x
assert_eq "the manifest is unchanged" "$SUM" "$(manifest_sum "$U")"
assert_file_absent "$(pod_dir "$U")/apps/nope"
assert_exit 3 pa add 00000000-0000-0000-0000-000000000000 --app=x busybox
PREP=$(sd prepare busybox --exec=/bin/true)
assert_exit 4 pa add "$PREP" --app=x busybox --exec=/bin/true
assert_contains "a pod that does not run is refused" "$ERR" "is not running"
assert_exit 0 sd rm "$PREP"

# ---------------------------------------------------------------------------
echo "# start: runs it, once"
# ---------------------------------------------------------------------------
assert_exit 0 pa start "$U" --app=web
assert_eq "the app runs" running "$(app_state "$U" web)"
STARTED=$(pa status "$U" --app=web --format=json | jq -r .started)
assert_ne "its start time is known" null "$STARTED"
assert_exit 0 pa start "$U" --app=web
assert_eq "start again leaves it alone" "$STARTED" "$(pa status "$U" --app=web --format=json | jq -r .started)"
assert_exit 3 pa start "$U" --app=ghost
assert_contains "an unknown app is named" "$ERR" "has no app ghost"
assert_exit 2 pa start "$U"

# ---------------------------------------------------------------------------
echo "# exec: the app's namespaces, root, environment, user and directory"
# ---------------------------------------------------------------------------
assert_exit 0 pa add "$U" --app=dbg --user=1234 --group=2345 --working-dir=/tmp --set-env=FOO=bar \
	busybox --exec=/bin/sleep -- 1000
assert_exit 0 pa start "$U" --app=dbg
assert_exit 0 pa exec "$U" --app=dbg -- /bin/sh -c 'id -u; id -g; pwd; echo $FOO'
assert_eq "exec runs as the app's user and group, in its directory and environment" \
	"$(printf '1234\n2345\n/tmp\nbar')" "$OUT"
assert_exit 7 pa exec "$U" --app=dbg -- /bin/sh -c 'exit 7'
assert_eq "stdin is connected" "through stdin" "$(echo "through stdin" | pa exec "$U" --app=dbg -- /bin/cat)"
assert_exit 127 pa exec "$U" --app=dbg -- /bin/nope
assert_exit 0 pa exec "$U" --app=dbg -- /bin/ps -o comm
assert_contains "the debug app sees the other app's processes (one pid namespace)" "$OUT" sleep
assert_exit 3 pa exec "$U" --app=ghost -- /bin/true
assert_exit 2 pa exec "$U" --app=dbg

# ---------------------------------------------------------------------------
echo "# stop: the app's own status, or SIGKILL after the grace; the pod runs on"
# ---------------------------------------------------------------------------
assert_exit 0 pa add "$U" --app=polite busybox --exec=/bin/sh -- -c 'trap "exit 7" TERM; while :; do sleep 0.1; done'
assert_exit 0 pa start "$U" --app=polite
assert_exit 0 pa stop "$U" --app=polite
assert_eq "stop returns with the app exited" exited "$(app_state "$U" polite)"
assert_eq "its SIGTERM handler's status is recorded" 7 "$(app_exit "$U" polite)"
assert_eq "a failure that stop asked for does not halt the pod" running "$(pod_state "$U")"
assert_exit 0 pa stop "$U" --app=polite
assert_eq "stopping it again changes nothing" 7 "$(app_exit "$U" polite)"

assert_exit 0 pa add "$U" --app=stubborn busybox --exec=/bin/sh -- -c 'trap "" TERM; while :; do sleep 0.1; done'
assert_exit 0 pa start "$U" --app=stubborn
t0=$(date +%s%N)
assert_exit 0 pa stop "$U" --app=stubborn --grace=1s
t1=$(date +%s%N)
assert_eq "after the grace it is killed" 137 "$(app_exit "$U" stubborn)"
check "the grace was given (>= 1 s)" test $(((t1 - t0) / 1000000)) -ge 900
check "and not much more (< 8 s)" test $(((t1 - t0) / 1000000)) -lt 8000
assert_eq "the pod runs on" running "$(pod_state "$U")"
assert_exit 2 pa stop "$U" --app=stubborn --grace=soon

echo "# start after stop: a new run"
assert_exit 0 pa start "$U" --app=polite
assert_eq "it runs again" running "$(app_state "$U" polite)"
assert_eq "the last run's exit code is gone" null "$(app_exit "$U" polite)"

# ---------------------------------------------------------------------------
echo "# list and status"
# ---------------------------------------------------------------------------
assert_exit 0 pa list "$U" --format=json
assert_eq "list --format=json: every app, in order" "web dbg polite stubborn" "$(jq -r '[.[].name] | join(" ")' <<<"$OUT")"
assert_eq "their states" "running running running exited" "$(jq -r '[.[].state] | join(" ")' <<<"$OUT")"
assert_jq "every entry has the seed's fields" "$OUT" \
	'all(.[]; has("name") and has("state") and has("created") and has("started") and has("exited") and has("exit_status"))' true
assert_exit 0 pa list "$U"
assert_match "list: a table with a header" '^APP +STATE +CREATED +STARTED +EXITED +EXIT' "$OUT"
assert_exit 0 pa status "$U" --app=stubborn
assert_contains "status: the exit status, as sdpod status shows it" "$OUT" "exit-status=137"
assert_exit 3 pa status "$U" --app=ghost

# ---------------------------------------------------------------------------
echo "# rm: the app and every resource of it go; the pod runs on"
# ---------------------------------------------------------------------------
assert_exit 0 pa rm "$U" --app=stubborn
assert_exit 0 pa rm "$U" --app=polite
for app in stubborn polite; do
	assert_exit 3 pa status "$U" --app=$app
	assert_eq "rm $app: gone from the manifest" "" "$(jq -r --arg a $app '.apps[] | select(.name == $a) | .name' "$(pod_dir "$U")/pod")"
	check_not "rm $app: its root is unmounted in the pod" grep -q " /opt/stage2/$app/" "/proc/$LEADER/mountinfo"
	assert_file_absent "/proc/$LEADER/root/opt/stage2/$app"
	assert_file_absent "$(pod_dir "$U")/apps/$app"
	assert_file_absent "$(pod_dir "$U")/status/$app"
	assert_file_absent "/proc/$LEADER/root/run/systemd/generator/app@$app.service"
done
assert_exit 3 pa rm "$U" --app=polite
assert_eq "the pod never restarted" "$NSPAWN" "$(nspawn_of "$U")"
assert_eq "the other apps run on" "running running" "$(pa list "$U" --format=json | jq -r '[.[].state] | join(" ")')"

# ---------------------------------------------------------------------------
echo "# an immutable pod takes no apps, but its apps stop and start one by one"
# ---------------------------------------------------------------------------
"$SDPOD" --dir="$DATA" run --uuid-file="$T/imm" busybox --exec=/bin/sleep -- 1000 \
	--- busybox --app=other --exec=/bin/sleep -- 1000 >"$T/imm.out" 2>&1 &
IMM_PID=$!
wait_for "the immutable pod runs" 20 test -s "$T/imm"
IMM=$(cat "$T/imm")
wait_for "its app runs" 20 sd enter --app=busybox "$IMM" true
SUM=$(manifest_sum "$IMM")
assert_exit 4 pa add "$IMM" --app=x busybox --exec=/bin/true
assert_contains "the refusal says why" "$ERR" "not mutable"
assert_exit 4 pa rm "$IMM" --app=busybox
assert_contains "nor are its apps removed" "$ERR" "not mutable"
assert_exit 0 pa stop "$IMM" --app=busybox
assert_eq "one app of an immutable pod stops" "exited 143" "$(app_state "$IMM" busybox) $(app_exit "$IMM" busybox)"
assert_eq "the pod runs on with the other" "running running" "$(pod_state "$IMM") $(app_state "$IMM" other)"
assert_exit 0 pa start "$IMM" --app=busybox
assert_eq "and starts again" running "$(app_state "$IMM" busybox)"
assert_eq "its manifest is unchanged" "$SUM" "$(manifest_sum "$IMM")"
assert_exit 0 pa list "$IMM" --no-legend
assert_match "podapp list shows an immutable pod's app too" '(^|'$'\n'')busybox +running' "$OUT"
assert_exit 0 sd stop "$IMM"
wait "$IMM_PID" || true

# ---------------------------------------------------------------------------
echo "# 20 adds at once; a reader never sees a torn manifest"
# ---------------------------------------------------------------------------
assert_exit 0 pa sandbox
S=$OUT
(
	torn=0
	while [ ! -e "$T/storm.done" ]; do
		sd cat-manifest "$S" | jq -e '.apps | length' >/dev/null || torn=$((torn + 1))
	done
	echo "$torn" >"$T/torn"
) &
READER=$!
pids=()
for i in $(seq 20); do
	pa add "$S" --app="app$i" busybox --exec=/bin/sleep -- 1000 >"$T/add.$i" 2>&1 &
	pids+=($!)
done
failed=0
for i in $(seq 20); do
	wait "${pids[$((i - 1))]}" || { failed=$((failed + 1)); cat "$T/add.$i"; }
done
touch "$T/storm.done"
wait "$READER"
assert_eq "all 20 adds succeed" 0 "$failed"
assert_eq "the reader never saw a torn or invalid manifest" 0 "$(cat "$T/torn")"
assert_eq "the manifest has 20 apps" 20 "$(sd cat-manifest "$S" | jq '.apps | length')"
SL=$(leader_of "$S")
assert_eq "all 20 units exist" 20 "$(find "/proc/$SL/root/run/systemd/generator" -name 'app@app*.service' | wc -l)"
assert_eq "all 20 are prepared" 20 "$(pa list "$S" --format=json | jq '[.[] | select(.state == "prepared")] | length')"

echo "# rm of one app while another is added"
pa rm "$S" --app=app1 >"$T/rm.out" 2>&1 &
RM=$!
pa add "$S" --app=late busybox --exec=/bin/sleep -- 1000 >"$T/late.out" 2>&1 &
ADD=$!
rc_rm=0 rc_add=0
wait "$RM" || rc_rm=$?
wait "$ADD" || rc_add=$?
assert_eq "rm during add succeeds" 0 "$rc_rm"
assert_eq "add during rm succeeds" 0 "$rc_add"
assert_eq "the manifest has what both did" "20 false true" \
	"$(sd cat-manifest "$S" | jq -r '[(.apps | length), any(.apps[]; .name == "app1"), any(.apps[]; .name == "late")] | join(" ")')"

echo "# start and stop of one app from two processes"
for round in 1 2 3; do
	pa start "$S" --app=app2 >"$T/st.out" 2>&1 &
	ST=$!
	pa stop "$S" --app=app2 >"$T/sp.out" 2>&1 &
	SP=$!
	rc_st=0 rc_sp=0
	wait "$ST" || rc_st=$?
	wait "$SP" || rc_sp=$?
	# One may replace the other's job: that must be said, not hidden.
	for r in "$rc_st:$T/st.out" "$rc_sp:$T/sp.out"; do
		if [ "${r%%:*}" != 0 ]; then
			assert_match "round $round: a lost race is a clear error" 'canceled|job' "$(cat "${r#*:}")"
		fi
	done
	assert_match "round $round: the app ends in a consistent state" '^(running|exited|prepared)$' "$(app_state "$S" app2)"
done
assert_eq "the races did not halt the pod" running "$(pod_state "$S")"

echo "# add to a pod that exits meanwhile"
pa add "$S" --app=doomed busybox --exec=/bin/sleep -- 1000 >"$T/doomed.out" 2>&1 &
DOOMED=$!
sd stop --force "$S" >/dev/null 2>&1 || true
rc=0
wait "$DOOMED" || rc=$?
if [ "$rc" != 0 ]; then
	assert_match "the add says the pod is gone" 'not running|exited|cannot' "$(cat "$T/doomed.out")"
else
	pass "the add finished before the pod exited"
fi
check "the manifest is still valid JSON" jq -e . "$DATA/pods/run/$S/pod"
no_pod_procs "$S"
assert_mounts_unchanged "no mount left on the host"
assert_exit 4 pa add "$S" --app=after busybox --exec=/bin/true
assert_contains "an exited pod is not running" "$ERR" "is not running"

# ---------------------------------------------------------------------------
echo "# failures: an app that fails halts the pod, unless --keep-on-app-failure"
# ---------------------------------------------------------------------------
assert_exit 0 pa sandbox
F=$OUT
assert_exit 0 pa add "$F" --app=bad busybox --exec=/bin/sh -- -c 'sleep 0.3; exit 3'
assert_exit 0 pa start "$F" --app=bad
wait_for "the failed app halted the pod" 20 pod_is "$F" exited
assert_eq "its exit code is recorded" 3 "$(app_exit "$F" bad)"
no_pod_procs "$F"

assert_exit 0 pa sandbox --keep-on-app-failure
K=$OUT
assert_exit 0 pa add "$K" --app=bad busybox --exec=/bin/sh -- -c 'exit 3'
assert_exit 0 pa add "$K" --app=good busybox --exec=/bin/sleep -- 1000
assert_exit 0 pa start "$K" --app=good
# It exits at once, at times before systemd has seen its exec (a race that
# fails the start job): it ran, so it started.
assert_exit 0 pa start "$K" --app=bad
wait_for "the failed app is exited" 20 state_is "$K" bad exited
assert_eq "with its exit code" 3 "$(app_exit "$K" bad)"
sleep 0.5
assert_eq "the pod keeps running" running "$(pod_state "$K")"
assert_eq "and so does its other app" running "$(app_state "$K" good)"
# More starts than systemd's default start limit (5 in 10 s) allows.
for i in $(seq 8); do
	assert_exit 0 pa start "$K" --app=bad
	wait_for "an orchestrator can start it again ($i)" 20 state_is "$K" bad exited
done
# The first run takes its working directory away; the next one cannot chdir
# (systemd's status 200), so its program is never executed.
assert_exit 0 pa add "$K" --app=nowd --user=0 --working-dir=/home/app busybox --exec=/bin/rmdir -- /home/app
assert_exit 0 pa start "$K" --app=nowd
wait_for "the first run ended" 20 state_is "$K" nowd exited
assert_eq "and removed its working directory" 0 "$(app_exit "$K" nowd)"
assert_exit 1 pa start "$K" --app=nowd
assert_contains "a program never executed fails the start" "$ERR" \
	"app nowd: its program was not executed (status 200, exit-code"
assert_eq "the pod keeps running after it" running "$(pod_state "$K")"

# ---------------------------------------------------------------------------
echo "# seed 002 workflow: orchestrate (app2 only after app1 finished)"
# ---------------------------------------------------------------------------
assert_exit 0 pa add "$U" --app=first --user=0 --mount=volume=shared,target=/shared busybox \
	--exec=/bin/sh -- -c 'sleep 0.5; echo done >/shared/first'
assert_exit 0 pa add "$U" --app=second --user=0 --mount=volume=shared,target=/shared busybox \
	--exec=/bin/sh -- -c 'test "$(cat /shared/first)" = done'
assert_exit 0 pa start "$U" --app=first
wait_for "app1 finished" 20 state_is "$U" first exited
assert_eq "app1 succeeded" 0 "$(app_exit "$U" first)"
assert_exit 0 pa start "$U" --app=second
wait_for "app2 ran after it" 20 state_is "$U" second exited
assert_eq "app2 saw app1's result" 0 "$(app_exit "$U" second)"

# ---------------------------------------------------------------------------
echo "# seed 002 workflow: in-place update (the pod never restarts)"
# ---------------------------------------------------------------------------
assert_exit 0 pa exec "$U" --app=web -- /bin/sh -c 'echo v1 >/tmp/old-version'
assert_exit 0 pa rm "$U" --app=web
assert_exit 0 pa add "$U" --app=web busybox --exec=/bin/sh -- -c 'echo v2 >/tmp/version; exec sleep 1000'
assert_exit 0 pa start "$U" --app=web
assert_exit 0 pa exec "$U" --app=web -- /bin/cat /tmp/version
assert_eq "the new app runs" v2 "$OUT"
assert_exit 0 pa exec "$U" --app=web -- /bin/sh -c 'ls /tmp'
assert_eq "in a fresh root: the old app's changes are gone" version "$OUT"
assert_eq "the pod is the same process all along" "$NSPAWN" "$(nspawn_of "$U")"

# ---------------------------------------------------------------------------
echo "# seed 002 workflow: debugging (a debug app in a running pod)"
# ---------------------------------------------------------------------------
assert_exit 0 pa add "$U" --app=debug busybox --exec=/bin/sleep -- 1000
assert_exit 0 pa start "$U" --app=debug
assert_exit 0 pa exec "$U" --app=debug -- /bin/sh -c 'ps -o comm,args | grep -c "sleep 1000"'
check "the debug app sees the service's processes" test "$OUT" -ge 2

# ---------------------------------------------------------------------------
echo "# the end: every pod stops and goes; nothing is left"
# ---------------------------------------------------------------------------
for pod in "$U" "$K"; do
	assert_exit 0 sd stop "$pod"
	no_pod_procs "$pod"
done
assert_eq "the stopped pod recorded every app" "exited exited exited exited exited" \
	"$(pa list "$U" --format=json | jq -r '[.[].state] | join(" ")')"
assert_exit 0 sd gc --grace-period=0
assert_eq "gc removed every pod" "" "$(sd list --no-legend)"
for d in embryo prepare prepared run exited-garbage garbage; do
	assert_dir_empty "gc left nothing in pods/$d" "$DATA/pods/$d"
done
leak_check

