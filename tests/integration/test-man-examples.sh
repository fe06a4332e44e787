#!/bin/bash
#
# test-man-examples.sh - the examples of sdpod(1), podapp(1) and
# sdpod-stage1(7), run as the pages show them, on real pods: every command
# of their example blocks (example/shown in lib.sh fail on a command a page
# does not show, and all_examples_run on one that no test ran), with checks
# of what the page says it prints. Only what a run cannot reproduce is
# replaced: UUIDs, image ids, and the host paths /var/lib/sdpod and
# /srv/site. pod@.service(8)'s examples need a systemd host: see
# tests/system/test-man-examples.sh.

. "$(dirname "$0")/lib.sh"

use_real_images skopeo
require_tool systemd-nspawn systemd-container
[ -n "$PODAPP" ] || die "podapp not found (PODAPP_BIN)"

# Every pod this test made is stopped and removed, whatever happened.
remove_pods_on_exit

leak_begin

# The pages' commands, as a user types them: sdpod and podapp of this build
# on this test's data directory.
mkdir "$T/bin" "$T/site" "$T/home" "$T/examples"
cd "$T/examples"
ln -s "$SDPOD" "$T/bin/sdpod"
ln -s "$PODAPP" "$T/bin/podapp"
export PATH="$T/bin:$PATH" SDPOD_DIR="$DATA" HOME="$T/home"

newest_pod() { sd list --format=json | jq -r 'sort_by(.created) | last | .uuid'; }
prefix() { echo "${1:0:4}"; }
pod_state() { sd status "$1" | sed -n 's/^state=//p'; }
wait_state() {
	local i
	for i in $(seq 100); do
		[ "$(pod_state "$1")" = "$2" ] && return 0
		sleep 0.2
	done
	return 1
}
# Until the pod's only app runs (a running pod may still be booting).
app_runs() { sd enter "$1" true >/dev/null 2>&1; }
wait_app_runs() {
	local i
	for i in $(seq 100); do
		app_runs "$1" && return 0
		sleep 0.2
	done
	return 1
}
UUID_RE='[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}'

echo "# the images the examples import"
img_busybox_rootfs "$T/rootfs" >/dev/null
img_oci_layout busybox-oci latest "$T/rootfs" >/dev/null
# Two tags, one of them the same image as busybox-oci.
img_oci_layout oci-layout 1.36 "$T/rootfs" >/dev/null
cp -a "$T/rootfs" "$T/rootfs2"
echo 1.37 >"$T/rootfs2/etc/busybox-version"
img_oci_layout oci-layout 1.37 "$T/rootfs2" >/dev/null
# docker save's format: another image, named by its RepoTags.
img_oci_layout "$T/other-oci" latest "$T/rootfs2" >/dev/null
img_docker_archive "$T/other-oci" latest busybox.tar busybox:latest >/dev/null

# ---------------------------------------------------------------------------
echo "# sdpod(1): images"
# ---------------------------------------------------------------------------
example sdpod.1 'sdpod image import --name=busybox:1.36 ./busybox-oci'
assert_eq "import prints the image id" 0 "$RC"
assert_match "which is a sha256 id" '^sha256:[0-9a-f]{64}$' "$OUT"
BB_ID=$OUT
example sdpod.1 'sdpod image import busybox.tar'
assert_match "a docker archive imports" '^sha256:[0-9a-f]{64}$' "$OUT"
OTHER_ID=$OUT
assert_ne "as another image" "$BB_ID" "$OTHER_ID"
example sdpod.1 'sdpod image import --ref=1.36 ./oci-layout'
assert_eq "the tag 1.36 of a layout of two imports" "0 $BB_ID" "$RC $OUT"

example sdpod.1 'sdpod image list'
assert_match "the table's header" '^ID +NAMES +SIZE +FORMAT +IMPORTED$' "$(head -1 <<<"$OUT")"
assert_match "busybox:1.36, from the OCI layout" "^${BB_ID:7:12} +busybox:1\\.36 +[0-9.]+[KM] +oci +[0-9-]+ [0-9:]+\$" \
	"$(grep busybox:1.36 <<<"$OUT")"
assert_match "busybox:latest, from the docker archive" \
	"^${OTHER_ID:7:12} +busybox:latest +[0-9.]+[KM] +docker-archive " "$(grep busybox:latest <<<"$OUT")"
example sdpod.1 'sdpod image list --format=json'
assert_eq "JSON: the fields of an image" '["format","id","imported_at","names","size"]' \
	"$(jq -c '.[0] | keys' <<<"$OUT")"
assert_eq "JSON: busybox:1.36 is an oci image" oci \
	"$(jq -r --arg id "$BB_ID" '.[] | select(.id == $id) | .format' <<<"$OUT")"
example sdpod.1 "sdpod image list --format=json | jq -r '.[].id'"
assert_eq "the ids of all images" "$(printf '%s\n' "$BB_ID" "$OTHER_ID" | sort)" "$(sort <<<"$OUT")"
example sdpod.1 'sdpod image inspect busybox:1.36 | jq -c .app.exec'
assert_eq "the command the image runs" '["/bin/sh","-c","echo hello from busybox"]' "$OUT"

example sdpod.1 'sdpod image tag busybox:1.36 busybox:stable'
assert_eq "tag prints the image id" "0 $BB_ID" "$RC $OUT"
example sdpod.1 'sdpod image rm busybox:stable'
assert_eq "rm of a second name: nothing on stdout" "0 " "$RC $OUT"
assert_contains "... and the image keeps its first name" "$ERR" "stays, named busybox:1.36"
example sdpod.1 'sdpod image rm e0c8' e0c8 "${OTHER_ID:7:4}"
assert_eq "rm by a prefix of the id prints the id" "0 $OTHER_ID" "$RC $OUT"
example sdpod.1 'sdpod image gc'
assert_match "gc frees what the image used" \
	'^removed [1-9][0-9]* blobs, 1 trees, 0 leftovers of interrupted imports \([0-9.]+[KM]? freed\)$' "$OUT"
example sdpod.1 "sdpod image list --format=json | jq -r '.[].id'"
assert_eq "busybox:1.36 is left" "$BB_ID" "$OUT"

(
	example sdpod.1 'export SDPOD_DIR="$HOME/.local/share/sdpod"'
	example sdpod.1 'mkdir -p "$SDPOD_DIR"'
	example sdpod.1 'sdpod image list'
	assert_eq "a data directory of one's own starts empty" "0 1" "$RC $(wc -l <<<"$OUT")"
	check "and holds the image store" test -d "$T/home/.local/share/sdpod/images"
)

# ---------------------------------------------------------------------------
echo "# sdpod(1): preparing and looking at pods"
# ---------------------------------------------------------------------------
example sdpod.1 "sdpod prepare --name=website \\
      --volume=site,kind=host,source=/srv/site \\
      busybox:1.36 --exec=/bin/httpd --mount=volume=site,target=/www -- -f -p 8080 -h /www \\
      --- busybox:1.36 --app=builder --user=0 --mount=volume=site,target=/out \\
          -- 'while :; do date > /out/index.html; sleep 60; done'" /srv/site "$T/site"
assert_match "prepare prints the UUID" "^$UUID_RE\$" "$OUT"
WEB=$OUT
example sdpod.1 "sdpod prepare --app=shell --exec=/bin/sh busybox:1.36 -- -c 'echo hello'"
assert_match "so does the second" "^$UUID_RE\$" "$OUT"
SHELL_POD=$OUT

example sdpod.1 'sdpod status 5f2c | grep private-users' 5f2c "$(prefix "$WEB")"
assert_match "the pod's range of ids" '^private-users=[0-9]+:65536$' "$OUT"
BASE=${OUT#private-users=}
BASE=${BASE%:*}
example sdpod.1 'chown 1769996288:1769996288 /srv/site' 1769996288 "$BASE" /srv/site "$T/site"
assert_eq "the directory is the pod's root's" "$BASE:$BASE" "$(stat -c %u:%g "$T/site")"

example sdpod.1 'sdpod list'
assert_match "the list's header" '^UUID +NAME +STATE +APPS +IMAGES +CREATED +STARTED$' "$(head -1 <<<"$OUT")"
assert_match "the website pod" "^${WEB:0:8} +website +prepared +busybox,builder +busybox:1\\.36,busybox:1\\.36 +[0-9-]+ [0-9:]+ +-\$" \
	"$(grep "^${WEB:0:8}" <<<"$OUT")"
assert_match "the shell pod" "^${SHELL_POD:0:8} +- +prepared +shell +busybox:1\\.36 " "$(grep "^${SHELL_POD:0:8}" <<<"$OUT")"

example sdpod.1 'sdpod status --wait=3s 5f2c; echo "exit status $?"' 5f2c "$(prefix "$WEB")"
assert_contains "the wait times out" "$ERR" "sdpod status: timed out waiting for pod $WEB (it is prepared)"
assert_eq "the status is printed all the same, with exit status 4" \
	"$(printf 'uuid=%s\nname=website\nstate=prepared\n' "$WEB")|exit status 4" \
	"$(head -3 <<<"$OUT")|$(tail -1 <<<"$OUT")"

# The website pod runs, serves the page its job writes, and is stopped.
sd run-prepared "$WEB" >"$T/website.log" 2>&1 &
WEB_PID=$!
check "the website pod runs" wait_state "$WEB" running
for i in $(seq 50); do [ -s "$T/site/index.html" ] && break; sleep 0.2; done
check "its job wrote the page" test -s "$T/site/index.html"
served() { sd enter --app=builder "$WEB" wget -q -O - http://127.0.0.1:8080/index.html 2>/dev/null; }
for i in $(seq 50); do served >/dev/null && break; sleep 0.2; done
assert_eq "its web server serves it" "$(cat "$T/site/index.html")" "$(served)"
assert_exit 0 sd stop "$WEB"
wait "$WEB_PID" || true

example sdpod.1 'sdpod status 5f2c' 5f2c "$(prefix "$WEB")"
assert_match "an exited pod's status" "^uuid=$WEB
name=website
state=exited
created=[0-9T:.-]+Z
started=[0-9T:.-]+Z
exited=[0-9T:.-]+Z
private-users=$BASE:65536
net=default
stage1=nspawn
app-busybox=143
app-builder=143\$" "$OUT"
example sdpod.1 "sdpod status --format=json 5f2c | jq -c '.apps[] | [.name, .exit_status]'" 5f2c "$(prefix "$WEB")"
assert_eq "as JSON" '["busybox",143]|["builder",143]' "$(tr '\n' '|' <<<"$OUT" | sed 's/|$//')"

# ---------------------------------------------------------------------------
echo "# sdpod(1): running pods"
# ---------------------------------------------------------------------------
example sdpod.1 "sdpod run busybox:1.36 -- 'echo hello; sleep 1; exit 3'"
shown sdpod.1 'echo $?'
assert_eq "sdpod run exits with the app's status" 3 "$RC"
assert_match "the app's output is shown" 'busybox\[[0-9]+\]: hello' "$OUT"
assert_contains "and the pod's readiness" "$OUT" "pod-helper"

example sdpod.1 "sdpod run busybox:1.36 --app=web -- 'echo serving; exec sleep 1000' \\
      --- busybox:1.36 --app=job -- 'echo working; sleep 1; exit 5'"
assert_eq "a failing app's status is the pod's" 5 "$RC"
assert_match "both apps' output is shown" 'job\[[0-9]+\]: working.*web\[[0-9]+\]: serving|web\[[0-9]+\]: serving.*job\[[0-9]+\]: working' \
	"$(tr '\n' ' ' <<<"$OUT")"
TWO=$(newest_pod)
example sdpod.1 'sdpod status f73e | grep ^app-' f73e "$(prefix "$TWO")"
assert_eq "web ended on the SIGTERM of the stop" "$(printf 'app-web=143\napp-job=5')" "$OUT"

echo "# sdpod-stage1(7): the pod's directory after it ran"
D="$DATA/pods/run/$TWO"
assert_file_exists "$D"/apps/{job,web}/{upper,work} "$D"/{pid,pod,started} \
	"$D"/stage1/{manifest,rootfs,upper,work} "$D"/status/{job,web}
example sdpod-stage1.7 'cat /var/lib/sdpod/pods/run/f73eecef-aa7e-4b13-bec6-66020c1a20af/status/job' \
	f73eecef-aa7e-4b13-bec6-66020c1a20af "$TWO" /var/lib/sdpod "$DATA"
assert_eq "the status file of job" "0 5" "$RC $OUT"
example sdpod-stage1.7 'sdpod status f73e | grep ^app-' f73e "$(prefix "$TWO")"
assert_eq "and how sdpod status shows it" "$(printf 'app-web=143\napp-job=5')" "$OUT"

echo "# Ctrl-C: SIGINT to the terminal's foreground process group"
set -m
(
	example sdpod.1 "sdpod run busybox:1.36 -- 'echo up; exec sleep 1000'"
	exit "$RC"
) &
CC=$!
set +m
for i in $(seq 100); do
	CC_POD=$(sd list --no-legend | awk '$3 == "running" {print $1}')
	[ -n "$CC_POD" ] && break
	sleep 0.2
done
check "the pod runs" test -n "$CC_POD"
check "its app runs" wait_app_runs "$CC_POD"
kill -INT -- -"$CC"
rc=0
wait "$CC" || rc=$?
shown sdpod.1 'echo $?'
assert_eq "Ctrl-C ends sdpod run with exit status 0" 0 "$rc"
CC_POD=$(newest_pod)
assert_eq "its app ended on SIGTERM" "app-busybox=143" "$(sd status "$CC_POD" | grep ^app-)"

echo "# a pod in the background"
example sdpod.1 "sdpod run --uuid-file=clock.uuid --name=clock busybox:1.36 --app=clock \\
      -- 'while :; do date; sleep 10; done' &"
CLOCK_PID=$!
for i in $(seq 100); do [ -s clock.uuid ] && break; sleep 0.2; done
example sdpod.1 'cat clock.uuid'
assert_match "the UUID file" "^$UUID_RE\$" "$OUT"
CLOCK=$OUT
check "the clock runs" wait_app_runs "$CLOCK"
example sdpod.1 'sdpod list'
assert_match "sdpod list shows it running" "^${CLOCK:0:8} +clock +running +clock +busybox:1\\.36 " \
	"$(grep "^${CLOCK:0:8}" <<<"$OUT")"
example sdpod.1 'sdpod enter f5d0 ps' f5d0 "$(prefix "$CLOCK")"
assert_contains "ps in the pod shows the app" "$OUT" "/bin/sh -c while :; do date; sleep 10; done"
assert_contains "and the pod's systemd" "$OUT" "/usr/lib/systemd/systemd"
example sdpod.1 "sdpod enter f5d0 sh -c 'echo \$GREETING; exit 7'; echo \"exit status \$?\"" f5d0 "$(prefix "$CLOCK")"
assert_eq "enter runs with the app's environment and passes its status on" "$(printf 'hi\nexit status 7')" "$OUT"
example sdpod.1 'sdpod stop f5d0' f5d0 "$(prefix "$CLOCK")"
assert_eq "stop prints the UUID" "0 $CLOCK" "$RC $OUT"
rc=0
wait "$CLOCK_PID" || rc=$?
assert_eq "the background sdpod run ends, with status 0" 0 "$rc"
example sdpod.1 'sdpod status f5d0 | grep ^app-' f5d0 "$(prefix "$CLOCK")"
assert_eq "the clock ended on SIGTERM" "app-clock=143" "$OUT"

echo "# a prepared pod, and a wait from another terminal"
example sdpod.1 "sdpod prepare --name=job busybox:1.36 -- 'echo working; sleep 3; echo done'"
JOB=$OUT
(
	example sdpod.1 'sdpod run-prepared ce94' ce94 "$(prefix "$JOB")"
	exit "$RC"
) &
RP=$!
check "the job pod runs" wait_state "$JOB" running
example sdpod.1 'sdpod status --wait ce94' ce94 "$(prefix "$JOB")"
assert_match "status --wait returns when it exited" "^uuid=$JOB
name=job
state=exited
created=.*
app-busybox=0\$" "$OUT"
rc=0
wait "$RP" || rc=$?
assert_eq "run-prepared exits 0" 0 "$rc"

echo "# nspawn of sdpod run killed with SIGKILL"
sd run busybox:1.36 -- 'exec sleep 1000' >/dev/null 2>&1 &
KILLED_PID=$!
for i in $(seq 100); do
	KILLED=$(sd list --no-legend | awk '$3 == "running" {print $1}')
	[ -n "$KILLED" ] && break
	sleep 0.2
done
KILLED=$(sd status "$KILLED" | sed -n 's/^uuid=//p')
check "its app runs" wait_app_runs "$KILLED"
example sdpod.1 "kill -KILL \"\$(cut -d' ' -f1 /var/lib/sdpod/pods/run/5792610c-f131-4bc2-88bd-c270a5124526/pid)\"" \
	5792610c-f131-4bc2-88bd-c270a5124526 "$KILLED" /var/lib/sdpod "$DATA"
assert_eq "kill" 0 "$RC"
rc=0
wait "$KILLED_PID" || rc=$?
assert_eq "sdpod run exits with 137" 137 "$rc"
example sdpod.1 'sdpod status 5792 | grep -e ^state -e ^app-' 5792 "$(prefix "$KILLED")"
assert_eq "the pod has exited, its app halted in order" "state=exited app-busybox=143" "$(tr '\n' ' ' <<<"$OUT" | sed 's/ $//')"
no_pod_procs "$KILLED"
example sdpod.1 'sdpod rm 5792' 5792 "$(prefix "$KILLED")"
assert_eq "rm has nothing left to kill" "" "$ERR"
assert_eq "and prints the UUID" "0 $KILLED" "$RC $OUT"
assert_exit 3 sd status "$KILLED"

echo "# gc and rm"
example sdpod.1 'sdpod gc'
assert_match "the first gc marks the exited pods" \
	'^marked [1-9][0-9]* exited and 0 failed pods, expired 0 prepared pods, removed 0 pods$' "$OUT"
example sdpod.1 'sdpod gc --grace-period=0'
assert_match "the second deletes them" \
	'^marked 0 exited and 0 failed pods, expired 0 prepared pods, removed [1-9][0-9]* pods$' "$OUT"
example sdpod.1 'sdpod rm 9d1e' 9d1e "$(prefix "$SHELL_POD")"
assert_eq "rm by a prefix" "0 $SHELL_POD" "$RC $OUT"
sd prepare busybox:1.36 >/dev/null
sd prepare busybox:1.36 >/dev/null
example sdpod.1 "sdpod list --format=json | jq -r '.[] | select(.state == \"prepared\") | .uuid' | xargs -r sdpod rm"
assert_eq "every prepared pod is removed" "0 2 0" "$RC $(wc -l <<<"$OUT") $(sd list --no-legend | wc -l)"

all_examples_run sdpod.1

# ---------------------------------------------------------------------------
echo "# podapp(1)"
# ---------------------------------------------------------------------------
# The page's image is "busybox".
assert_exit 0 sd image import --name=busybox ./busybox-oci
# A pod of sdpod run --mutable takes a sidecar.
example podapp.1 'uuid=$(sdpod run --detach --mutable busybox --app=web --exec=/bin/httpd -- -f -p 8080)'
assert_eq "a mutable pod of sdpod run runs its app" running "$(pa status "$uuid" --app=web --format=json | jq -r .state)"
example podapp.1 'podapp add $uuid --app=debug busybox --exec=/bin/sleep -- 3600'
example podapp.1 'podapp start $uuid --app=debug'
assert_eq "and a sidecar added to it" running "$(pa status "$uuid" --app=debug --format=json | jq -r .state)"
example podapp.1 'podapp stop $uuid --app=debug; podapp rm $uuid --app=debug'
assert_eq "which goes again" web "$(pa list "$uuid" --format=json | jq -r '.[].name')"
assert_exit 0 sd stop "$uuid"
assert_exit 0 sd rm "$uuid"
example podapp.1 'uuid=$(podapp sandbox)'
assert_match "sandbox prints the UUID" "^$UUID_RE\$" "$uuid"
example podapp.1 "podapp add \"\$uuid\" --app=app1 busybox --exec=/bin/sh -- -c 'echo migrating; sleep 2'"
assert_eq "add app1" 0 "$RC"
example podapp.1 'podapp add "$uuid" --app=app2 busybox --exec=/bin/sleep -- 3600'
assert_eq "add app2" 0 "$RC"
example podapp.1 'podapp start "$uuid" --app=app1'
assert_eq "start app1" 0 "$RC"
example podapp.1 'until [ "$(podapp status "$uuid" --app=app1 --format=json | jq -r .state)" = exited ]; do sleep 1; done'
example podapp.1 'podapp status "$uuid" --app=app1 --format=json | jq .exit_status'
assert_eq "app1 finished with 0" 0 "$OUT"
example podapp.1 'podapp start "$uuid" --app=app2'
assert_eq "then app2 starts" 0 "$RC"
example podapp.1 'podapp list "$uuid"'
assert_match "list's header" '^APP +STATE +CREATED +STARTED +EXITED +EXIT +RESTARTS$' "$(head -1 <<<"$OUT")"
assert_match "app1 exited with 0" '^app1 +exited +[0-9-]+ [0-9:]+ +- +[0-9-]+ [0-9:]+ +0 +0$' "$(grep ^app1 <<<"$OUT")"
assert_match "app2 runs" '^app2 +running +[0-9-]+ [0-9:]+ +[0-9-]+ [0-9:]+ +- +- +0$' "$(grep ^app2 <<<"$OUT")"

example podapp.1 'uuid=$(podapp sandbox)'
V1="podapp add \"\$uuid\" --app=web --set-env=VERSION=1 busybox --exec=/bin/sh -- -c 'echo \"version \$VERSION\" >/tmp/version; exec /bin/sleep 3600'"
example podapp.1 "$V1"
example podapp.1 'podapp start "$uuid" --app=web'
example podapp.1 'podapp exec "$uuid" --app=web -- /bin/cat /tmp/version'
assert_eq "version 1 runs" "version 1" "$OUT"
example podapp.1 'podapp rm "$uuid" --app=web'
assert_eq "rm" 0 "$RC"
example podapp.1 "${V1/VERSION=1/VERSION=2}"
example podapp.1 'podapp start "$uuid" --app=web'
example podapp.1 'podapp exec "$uuid" --app=web -- /bin/cat /tmp/version'
assert_eq "version 2 runs, in a fresh root" "version 2" "$OUT"

example podapp.1 'uuid=$(podapp sandbox)'
example podapp.1 'podapp add "$uuid" --app=service busybox --exec=/bin/sleep -- 3600'
example podapp.1 'podapp start "$uuid" --app=service'
example podapp.1 'podapp add "$uuid" --app=debug busybox --exec=/bin/sleep -- 3600'
example podapp.1 'podapp start "$uuid" --app=debug'
example podapp.1 'podapp exec "$uuid" --app=debug -- /bin/ps -o pid,args'
assert_match "the debug app sees the pod's systemd" '^ +1 /usr/lib/systemd/systemd$' "$(grep ' 1 ' <<<"$OUT")"
assert_eq "and both apps" 2 "$(grep -cE '^ *[0-9]+ /bin/sleep 3600$' <<<"$OUT")"
assert_eq "each with the relay of its output" 2 "$(grep -cE '^ *[0-9]+ app-stdio \(relay\)$' <<<"$OUT")"
example podapp.1 'podapp rm "$uuid" --app=debug'
assert_eq "the debug app goes" 0 "$RC"

example podapp.1 "podapp add \"\$uuid\" --app=stubborn busybox --exec=/bin/sh -- -c 'trap \"\" TERM; while :; do sleep 1; done'"
example podapp.1 'podapp start "$uuid" --app=stubborn'
example podapp.1 'podapp stop "$uuid" --app=stubborn --grace=2s'
assert_eq "stop" 0 "$RC"
example podapp.1 "podapp status \"\$uuid\" --app=stubborn --format=json | jq -c '[.state, .exit_status]'"
assert_eq "an app that ignores SIGTERM is killed" '["exited",137]' "$OUT"
example podapp.1 'sdpod status "$uuid" | grep ^state='
assert_eq "and the pod runs on" state=running "$OUT"
example podapp.1 'sdpod stop "$uuid"'
assert_eq "sdpod stop prints the UUID" "$uuid" "$OUT"
example podapp.1 "podapp list \"\$uuid\" --format=json | jq -c '.[] | [.name, .state, .exit_status]'"
assert_eq "the apps' exit statuses stay readable" '["service","exited",143]|["stubborn","exited",137]' \
	"$(tr '\n' '|' <<<"$OUT" | sed 's/|$//')"
example podapp.1 'sdpod rm "$uuid"'
assert_eq "rm" "$uuid" "$OUT"

all_examples_run podapp.1

# ---------------------------------------------------------------------------
echo "# sdpod-stage1(7): a stage1 of one's own"
# ---------------------------------------------------------------------------
mkdir -p my-stage1/rootfs
cat >my-stage1/manifest <<'EOF'
{
  "acKind": "ImageManifest",
  "acVersion": "0.8.11",
  "name": "example.com/my-stage1",
  "annotations": [
    { "name": "sdpod/stage1/gc", "value": "/gc" }
  ]
}
EOF
printf '%s\n' '#!/bin/sh' 'echo "gc: pod $1, in $PWD, as $0" >&2' 'exit 3' >my-stage1/rootfs/gc
chmod 755 my-stage1/rootfs/gc
example sdpod-stage1.7 'cat my-stage1/manifest'
check "the page shows this manifest" grep -qF '"name": "example.com/my-stage1",' "$MAN_DIR/sdpod-stage1.7.scd"
example sdpod-stage1.7 'cat my-stage1/rootfs/gc'
check "and this script" grep -qxF 'echo "gc: pod $1, in $PWD, as $0" >&2' "$MAN_DIR/sdpod-stage1.7.scd"
example sdpod-stage1.7 'uuid=$(SDPOD_STAGE1=my-stage1 sdpod prepare busybox:1.36)'
assert_match "a pod prepared with it" "^$UUID_RE\$" "$uuid"
example sdpod-stage1.7 'sdpod rm "$uuid"'
assert_match "rm calls its gc entrypoint" "^gc: pod $uuid, in $DATA/pods/garbage/$uuid, as /dev/fd/[0-9]+\$" \
	"$(head -1 <<<"$ERR")"
assert_contains "and reports its failure" "$ERR" \
	"sdpod rm: warning: pod $uuid: stage1 gc entrypoint /gc failed with exit status 3; deleting the pod anyway"
assert_eq "and deletes the pod" "0 $uuid" "$RC $OUT"

all_examples_run sdpod-stage1.7

remove_all_pods
no_pod_left() { [ -z "$(sd list --no-legend)" ]; }
check "no pod is left" no_pod_left
leak_check
