#!/bin/bash
#
# test-podman-habits.sh - what a podman user types works (issue 26, items 7,
# 9, 10, 11): the short options (-d, -p, -e, -u, -w, -t, -i), run's options
# anywhere before the first IMAGE, --rm, ps/logs/exec, enter POD --app=NAME
# CMD, "did you mean" for podman's commands; the OCI default group of an
# image's User (its primary group in the image's /etc/passwd, never looked
# up outside the image); health-check restarts counted and backed off, the
# health of an exited app, the checks' output as theirs; journal --since
# --lines=N the last N, -f ending with the pod; no nspawn noise on run's
# output; list shows the name the image was run by.

. "$(dirname "$0")/lib.sh"

use_real_images
require_tool systemd-nspawn systemd-container
require_tool umoci

trap '_rc=$?; bg_pods_cleanup; remove_all_pods; (exit "$_rc"); _lib_on_exit' EXIT
leak_begin

busybox_layout
import_ok BB --name=busybox "$IMG/oci"

no_pods() { [ -z "$(sd list --no-legend 2>/dev/null)" ]; }

# ---------------------------------------------------------------------------
echo "# short options, --rm, and no nspawn noise"
# ---------------------------------------------------------------------------
assert_exit 0 sd run --rm -e FOO=bar -w /tmp -u 1000:1000 busybox --exec=/bin/sh -- \
	-c 'echo "foo=$FOO"; echo "cwd=$(pwd)"; echo "ids=$(id -u):$(id -g)"'
assert_contains "-e sets the variable" "$OUT" "foo=bar"
assert_contains "-w sets the working directory" "$OUT" "cwd=/tmp"
assert_contains "-u USER:GROUP sets both" "$OUT" "ids=1000:1000"
assert_not_contains "no nspawn noise on run's stdout" "$OUT" "Failed to create symlink"
assert_not_contains "no nspawn noise on run's stderr" "$ERR" "Failed to create symlink"
check "--rm leaves no pod" no_pods
assert_eq "--rm leaves no pod directory" "" "$(find "$DATA/pods" -mindepth 2 -maxdepth 2 2>/dev/null)"

assert_exit 7 sd run --rm busybox --exec=/bin/sh -- -c 'exit 7'
check "--rm keeps the app's exit status, and removes the failed pod" no_pods

# A SIGTERM to sdpod run --rm stops the pod in order; the pod is removed.
run_bg R --rm busybox --app=long --exec=/bin/sleep -- 1000
wait_app "$R" long
kill -TERM "$R_PID"
wait_pid "$R_PID"
check "--rm: after a SIGTERM the pod is stopped and removed" wait_until 10 no_pods

# ---------------------------------------------------------------------------
echo "# run's options anywhere before the first IMAGE"
# ---------------------------------------------------------------------------
assert_exit 0 sd run --port=18091:80 --detach --name=ordered busybox --app=web --exec=/bin/sh -- \
	-c 'echo log-line-1; echo log-line-2; exec sleep 1000'
O=$OUT
assert_match "--detach after --port: the pod's UUID" '^[0-9a-f-]{36}$' "$O"
assert_contains "its port is published" "$(sd status ordered)" "18091->80/tcp"
assert_exit 0 sd run -p 18092:80 -d --name=shorts busybox --exec=/bin/sleep -- 1000
assert_contains "-p and -d: the port" "$(sd status shorts)" "18092->80/tcp"
assert_exit 2 sd run busybox --detach
assert_contains "run's option after the IMAGE says where it goes" "$ERR" "put it before the first IMAGE"
assert_exit 2 sd run -dt busybox
assert_contains "-dt: -t is not for a detached pod" "$ERR" "not with --detach"
assert_exit 2 sd run --rm -d busybox
assert_contains "--rm with -d says why not" "$ERR" "not with --detach"
assert_exit 2 sd run -x busybox
assert_contains "an unknown short option is named" "$ERR" 'unknown option "-x"'

# ---------------------------------------------------------------------------
echo "# ps, logs, exec, enter POD --app=NAME CMD"
# ---------------------------------------------------------------------------
assert_exit 0 sd ps -a
assert_contains "ps lists the pods (as list)" "$OUT" "ordered"
assert_exit 0 sd ps -q
assert_contains "ps -q: the full UUIDs" "$OUT" "$O"
assert_exit 0 sd exec ordered --app=web cat /proc/self/comm
assert_eq "exec is enter" "cat" "$OUT"
assert_exit 0 sd enter ordered --app=web -- id -u
assert_eq "enter POD --app=NAME -- CMD" "0" "$OUT"
assert_exit 0 sd enter ordered --app web id -u
assert_eq "enter POD --app NAME CMD" "0" "$OUT"
assert_exit 3 sd enter ordered --app=nosuch id
check "the app's lines reach the journal" wait_until 10 journal_has log-line-2 ordered --app=web
assert_exit 0 sd logs --tail=1 ordered --app=web -o cat
assert_eq "logs --tail=1: the last line" "log-line-2" "$OUT"
assert_exit 0 sd logs -t --tail 2 ordered --app=web -o cat
assert_eq "logs -t --tail 2" $'log-line-1\nlog-line-2' "$OUT"
assert_exit 0 sd stop ordered shorts

# ---------------------------------------------------------------------------
echo "# list shows the image by the name it was run by, not a registry's"
# ---------------------------------------------------------------------------
assert_exit 0 sd image tag busybox localhost:5000/lib/bb:1
assert_exit 0 sd image untag busybox:latest
assert_exit 0 sd image tag localhost:5000/lib/bb:1 mybb
assert_exit 0 sd prepare --name=named mybb --exec=/bin/true
assert_eq "list: the name given (pull --name's), not the registry's" "mybb:latest" \
	"$(sd list --format=json | jq -r '.[] | select(.name == "named") | .images[0]')"
assert_exit 0 sd prepare --name=byid "${BB#sha256:}" --exec=/bin/true
assert_eq "by id: a local name before a registry's" "mybb:latest" \
	"$(sd list --format=json | jq -r '.[] | select(.name == "byid") | .images[0]')"
assert_exit 0 sd rm named byid
assert_exit 0 sd image tag mybb busybox

# ---------------------------------------------------------------------------
echo "# did you mean: podman's commands"
# ---------------------------------------------------------------------------
for c in "rmi:sdpod image rm" "pod:podapp sandbox" "inspect:sdpod status --format=json" "images:sdpod image list" \
	"kill:sdpod stop --force" "start:sdpod run-prepared"; do
	assert_exit 2 sd "${c%%:*}" x
	assert_contains "'sdpod ${c%%:*}' points to ${c#*:}" "$ERR" "did you mean '${c#*:}"
done
assert_exit 2 sd nosuchcommand
assert_not_contains "an unknown command has no hint" "$ERR" "did you mean"

# ---------------------------------------------------------------------------
echo "# the OCI default group: the primary group of User in the image's passwd"
# ---------------------------------------------------------------------------
U="$T/userimg"
cp -a "$IMG/rootfs" "$U.rootfs"
echo 'redis:x:101:101:redis:/var/lib/redis:/bin/false' >>"$U.rootfs/etc/passwd"
echo 'redis:x:101:' >>"$U.rootfs/etc/group"
img_oci_layout "$U" latest "$U.rootfs"
umoci config --image "$U:latest" --config.user redis >/dev/null
import_ok UI --name=userimg "$U"
ids='grep -E "^(Uid|Gid):" /proc/self/status | tr -s "\t " " "'
assert_exit 0 sd run --rm userimg --exec=/bin/sh -- -c "$ids"
assert_contains "User: redis runs as its primary group (101)" "$OUT" "Gid: 101 101 101 101"
assert_contains "... and as redis" "$OUT" "Uid: 101 101 101 101"
assert_exit 0 sd run --rm -u 101 userimg --exec=/bin/sh -- -c "$ids"
assert_contains "a number with a passwd entry: its primary group" "$OUT" "Gid: 101 101 101 101"
assert_exit 0 sd run --rm -u redis:7 userimg --exec=/bin/sh -- -c "$ids"
assert_contains "USER:GROUP: the group given" "$OUT" "Gid: 7 7 7 7"
assert_exit 0 sd run --rm -u 4242 userimg --exec=/bin/sh -- -c "$ids"
assert_contains "a number without an entry: group 0" "$OUT" "Gid: 0 0 0 0"

# Hostile: the image's /etc/passwd is a link out of its tree, to the host's
# (which has daemon, uid 1, gid 1): never read, the user is unknown.
H="$T/hostimg"
cp -a "$IMG/rootfs" "$H.rootfs"
rm "$H.rootfs/etc/passwd"
ln -s ../../../../../../../../../../etc/passwd "$H.rootfs/etc/passwd"
img_oci_layout "$H" latest "$H.rootfs"
umoci config --image "$H:latest" --config.user daemon >/dev/null
import_ok HI --name=hostimg "$H"
grep -q '^daemon:x:1:1:' /etc/passwd || die "the host has no daemon:x:1:1 to tempt the image with"
assert_exit 2 sd run --rm hostimg --exec=/bin/sh -- -c "$ids"
assert_contains "a passwd linked out of the image: the user is unknown" "$ERR" "app.user"
assert_not_contains "... never the host's daemon group" "$OUT" "Gid: 1 1"

# ---------------------------------------------------------------------------
echo "# health: restarts counted and backed off, exited, the checks' output"
# ---------------------------------------------------------------------------
run_bg K busybox --app=sick --health-cmd=false --health-interval=200ms --health-retries=1 \
	--health-on-failure=restart --exec=/bin/sleep -- 1000 \
	--- busybox --app=quick --health-cmd=true --health-interval=200ms --exec=/bin/sh -- -c 'sleep 2; exit 0' \
	--- busybox --app=keep --health-cmd='echo check-says-hi' --health-interval=1s --exec=/bin/sleep -- 1000
wait_app "$K" keep
restarts_at_least() { [ "$(status_of "$K" app-sick.restarts)" -ge "$1" ] 2>/dev/null; }
check "health restarts are counted (status app-sick.restarts)" wait_until 40 restarts_at_least 5
check "an app that exited while the pod runs: health exited" wait_until 10 status_is "$K" app-quick.health exited
assert_eq "the pod runs on" running "$(status_of "$K" state)"
# Each restart's time and backoff, as the journal has them.
J=$(sd journal "$K" --no-pager -o json 2>/dev/null)
mapfile -t R < <(jq -r 'select(.MESSAGE | test("^app sick is restarted for its failed health checks")) |
	"\(.__REALTIME_TIMESTAMP) \(.MESSAGE | capture("after (?<ms>[0-9]+) ms").ms)"' <<<"$J")
[ "${#R[@]}" -ge 5 ] || fail "five restarts in the journal" "got ${#R[@]}"
# Restart k is logged, then waits its backoff, then the app starts: the
# starts are spaced by at least the backoff before the later one.
spaced=true figures=
for ((i = 1; i < ${#R[@]}; i++)); do
	read -r t0 ms0 <<<"${R[i - 1]}"
	read -r t1 ms1 <<<"${R[i]}"
	gap=$(((t1 + ms1 * 1000 - t0 - ms0 * 1000) / 1000))
	figures+=" ${gap}ms(>=${ms1})"
	[ "$gap" -ge "$ms1" ] || spaced=false
done
echo "# health restarts: time between the starts after restart k-1 and k (>= the backoff before k):$figures"
check "health restarts are spaced by at least their backoff" $spaced
assert_eq "the backoff doubles: 100, 200, 400, 800 ms" "100 200 400 800" \
	"$(for r in "${R[@]:0:4}"; do echo "${r#* }"; done | tr '\n' ' ' | sed 's/ $//')"
check "a check's output reaches the journal" wait_until 20 journal_has check-says-hi "$K"
J=$(sd journal "$K" --no-pager -o json 2>/dev/null)
ident=$(jq -r 'select(.MESSAGE == "check-says-hi") | .SYSLOG_IDENTIFIER' <<<"$J" | sort -u)
assert_eq "the check's output is logged as the check's" "keep.health" "$ident"
assert_not_contains "... and not in the app's own log" "$(sd journal "$K" --app=keep --no-pager -o cat)" "check-says-hi"
assert_exit 0 sd stop "$K"
wait_pid "$K_PID"
assert_eq "once the pod has exited, its apps' health is exited" "exited" "$(status_of "$K" app-sick.health)"
assert_jq "status --format=json: exited" "$(sd status --format=json "$K")" '[.apps[].health]' '["exited","exited","exited"]'

# ---------------------------------------------------------------------------
echo "# journal --since --lines=N: the last N; -f ends with the pod"
# ---------------------------------------------------------------------------
assert_exit 0 sd run --name=lines busybox --app=seq --exec=/bin/sh -- -c 'for i in $(seq 1 50); do echo line-$i; done'
check "the last line is in the journal" wait_until 10 journal_has line-50 lines --app=seq
assert_exit 0 sd journal lines --app=seq --since=-1h --lines=3 -o cat --no-pager
assert_eq "--since with --lines=3: the last 3" $'line-48\nline-49\nline-50' "$OUT"
assert_exit 0 sd journal --since=-1h -n 2 lines --app=seq -o cat --no-pager
assert_eq "-n 2 before the POD" $'line-49\nline-50' "$OUT"
assert_exit 0 sd journal lines --app=seq --since=@1 --lines=all -o cat --no-pager
assert_eq "--lines=all: every line from TIME" 50 "$(wc -l <<<"$OUT")"

assert_exit 0 timeout 20 "$SDPOD" --dir="$DATA" logs -f lines --app=seq -o cat
assert_contains "-f on an exited pod shows its lines and ends" "$OUT" "line-50"
assert_exit 124 timeout 10 "$SDPOD" --dir="$DATA" journal --follow=always lines --app=seq -o cat
assert_contains "--follow=always shows the lines and follows on" "$OUT" "line-50"

# As root: the journal files journalctl follows are those there when it
# starts, and an app of user 1000 writes to user-1000.journal, which may come
# later.
run_bg F -u 0 busybox --app=f --exec=/bin/sh -- -c 'echo f-start; sleep 3; echo f-end'
# Until it runs: run_bg returns once the pod is prepared, and a pod that
# does not run (yet) has nothing to follow (its journal is shown as it is).
wait_app "$F" f
t0=$(date +%s%N)
assert_exit 0 timeout 30 "$SDPOD" --dir="$DATA" logs -f "$F" --app=f -o cat
t1=$(date +%s%N)
echo "# logs -f of a pod that exits 3 s later ended after $(((t1 - t0) / 1000000)) ms"
assert_contains "logs -f shows what came while it followed" "$OUT" "f-end"
check "logs -f ended when the pod exited (not the 30 s timeout)" test $(((t1 - t0) / 1000000000)) -lt 20
wait_pid "$F_PID"

# ---------------------------------------------------------------------------
echo "# help"
# ---------------------------------------------------------------------------
assert_exit 0 sd run --help
for o in "-d, --detach" "--rm" "-p" "-e" "-u" "-w" "-i"; do
	assert_contains "run --help has $o" "$OUT" "$o"
done
assert_exit 0 sd --help
assert_contains "sdpod --help names podman's aliases" "$OUT" "'ps' is list"

remove_all_pods
leak_check
