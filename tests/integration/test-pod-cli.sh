#!/bin/bash
#
# test-pod-cli.sh - the pod verbs (prepare, list, status, cat-manifest, rm,
# gc) against a busybox image: what prepare writes (directories, manifest)
# and the rkt argument grammar; that bad input creates no pod; lookups by
# UUID and prefix; the life-cycle states of seed 000, made by hand on disk
# (nothing runs pods yet: a running pod is a directory in run/ that a
# `flock` process holds) and what status, rm and gc do in each; app exit
# statuses; stray entries; broken manifests; data directory errors; image
# gc keeping the trees pods use; a prepare that fails half-way.

. "$(dirname "$0")/lib.sh"

use_real_images flock setpriv

leak_begin

echo "# building images"
busybox_layout
# Another image with the same layer (for image gc), and a tiny one with a
# layer of its own (for a prepare that cannot render it).
oci_variant "$IMG/oci" "$IMG/other" other >/dev/null
tiny_layer "$T/tiny.tar" tiny-marker hello
oci_layout_new "$IMG/tiny" "$(host_arch)" "$T/tiny.tar"
rm -f "$T/tiny.tar"

import_ok BB --name=busybox "$IMG/oci"
BB_HEX=${BB#sha256:}
BB_NAME=$(jq -r '.names[0]' "$DATA/images/db/$BB_HEX.json")
echo "# busybox is $BB ($BB_NAME)"

# ---------------------------------------------------------------------------
# Helpers.
# ---------------------------------------------------------------------------

UUID_RE='^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$'
STATE_DIRS=(embryo prepare prepared run exited-garbage garbage)

# pods_state: every entry of the six state directories (and the directories).
pods_state() {
	if [ -d "$DATA/pods" ]; then
		(cd "$DATA/pods" && find . -mindepth 1 -maxdepth 2 | LC_ALL=C sort)
	fi
}

# entries DIR: the names in $DATA/pods/DIR, one a line.
entries() {
	ls -A "$DATA/pods/$1"
}

# where UUID: the state directory a pod is in ("" when gone).
where() {
	local d
	for d in "${STATE_DIRS[@]}"; do
		if [ -e "$DATA/pods/$d/$1" ]; then
			echo "$d"
			return 0
		fi
	done
	echo ""
}

# prepare_ok VAR ARGS...: `sd prepare ARGS` exits 0 and prints one UUID.
prepare_ok() {
	local var=$1
	shift
	assert_exit 0 sd prepare "$@"
	assert_match "prepare prints one UUID (v4, lowercase)" "$UUID_RE" "$OUT"
	printf -v "$var" '%s' "$OUT"
}

# prepare_fails CODE NEEDLE ARGS...: `sd prepare ARGS` exits CODE with
# NEEDLE in its message, prints nothing on stdout and creates no pod.
prepare_fails() {
	local code=$1 needle=$2 before
	shift 2
	before=$(pods_state)
	assert_exit "$code" sd prepare "$@"
	assert_contains "prepare $(_show_cmd "$*"): the message names $needle" "$ERR" "$needle"
	assert_eq "prepare $(_show_cmd "$*"): nothing on stdout" "" "$OUT"
	assert_eq "prepare $(_show_cmd "$*"): no pod directory created" "$before" "$(pods_state)"
}

# manifest UUID FILTER EXPECTED: jq -c FILTER on `sd cat-manifest UUID`.
manifest_is() {
	local m
	m=$(sd cat-manifest "$1" 2>&1) || m="cat-manifest failed: $m"
	assert_jq "manifest of ${1:0:8}: $2" "$m" "$2" "$3"
}

# json_state UUID: the state sd list --format=json shows.
json_state() {
	sd list --format=json 2>/dev/null | jq -r --arg u "$1" '.[] | select(.uuid == $u) | .state'
}

# hold DIR SECONDS: a process that holds an exclusive flock on DIR (as the
# pod's systemd-nspawn will) for SECONDS; its pid in HOLDER.  --no-fork: the
# pid is the process that holds the lock, so killing it releases the lock.
HOLDER=
hold() {
	flock --no-fork --exclusive "$1" sleep "$2" &
	HOLDER=$!
	local i
	for ((i = 0; i < 200; i++)); do
		flock --nonblock --shared "$1" true 2>/dev/null || return 0
		sleep 0.05
	done
	die "the holder $HOLDER did not take the lock on $1"
}

# has_open PID NAME: the process PID, or a child of it (sd & is a shell
# running sdpod), has a file of a path with NAME open (a waiter has found
# its pod: removing the pod before would test "no such pod" instead).
has_open() {
	local p
	for p in "$1" $(pgrep -P "$1"); do
		ls -l "/proc/$p/fd" 2>/dev/null | grep -q -- "$2" && return 0
	done
	return 1
}

# unhold: kill the holder (by pid) and reap it.
unhold() {
	if [ -n "$HOLDER" ]; then
		kill "$HOLDER" 2>/dev/null || true
		wait "$HOLDER" 2>/dev/null || true
	fi
	HOLDER=
}

now() {
	date +%s.%N
}

# elapsed START: seconds since START, as a decimal.
elapsed() {
	awk -v s="$1" -v e="$(now)" 'BEGIN { printf "%.2f", e - s }'
}

# between LOW HIGH VALUE
between() {
	awk -v l="$1" -v h="$2" -v v="$3" 'BEGIN { exit !(v >= l && v <= h) }'
}

# ---------------------------------------------------------------------------
echo "# --help"
# ---------------------------------------------------------------------------
for verb in prepare list status cat-manifest rm gc; do
	assert_exit 0 sd "$verb" --help
	assert_match "$verb --help prints Usage: on stdout" '^Usage: sdpod '"$verb" "$OUT"
	assert_eq "$verb --help: nothing on stderr" "" "$ERR"
done
assert_file_absent "$DATA/pods/run/--help"

# ---------------------------------------------------------------------------
echo "# prepare: the pod on disk"
# ---------------------------------------------------------------------------
prepare_ok P1 busybox
POD="$DATA/pods/prepared/$P1"
assert_eq "the pod is in prepared/" prepared "$(where "$P1")"
assert_file_exists "$POD/pod" "$POD/stage1/manifest" "$POD/apps/busybox/upper" "$POD/apps/busybox/work"
check "stage1/rootfs, upper and work are directories" test -d "$POD/stage1/rootfs" -a -d "$POD/stage1/upper" -a -d "$POD/stage1/work"
assert_jq "the stage1 manifest names the stage1 image" "$(cat "$POD/stage1/manifest")" \
	'[.annotations[] | select(.name == "sdpod/stage1/image") | .value]' "[\"$(realpath "$SDPOD_STAGE1")\"]"
check "apps/busybox/upper and work are directories" test -d "$POD/apps/busybox/upper" -a -d "$POD/apps/busybox/work"
assert_json "the manifest file pod is valid JSON" "$(cat "$POD/pod")"
assert_jq "the manifest is a PodManifest" "$(cat "$POD/pod")" .acKind '"PodManifest"'
assert_dir_empty "no leftovers in embryo/" "$DATA/pods/embryo"
assert_dir_empty "no leftovers in prepare/" "$DATA/pods/prepare"
assert_dir_empty "nothing in garbage/" "$DATA/pods/garbage"
assert_exit 0 sd cat-manifest "$P1"
check "cat-manifest prints the file pod byte for byte" cmp -s "$T/stdout" "$POD/pod"
manifest_is "$P1" '[.apps[] | .name]' '["busybox"]'
manifest_is "$P1" '.apps[0].image.id' "\"$BB\""
manifest_is "$P1" '.apps[0].app.exec' '["/bin/sh","-c","echo hello from busybox"]'
manifest_is "$P1" '.apps[0].app.workingDirectory' '"/home/app"'
manifest_is "$P1" '[.apps[0].app.user, .apps[0].app.group]' '["1000","1000"]'
manifest_is "$P1" '[.apps[0].app.environment[] | .name + "=" + .value]' \
	'["PATH=/usr/sbin:/usr/bin:/sbin:/bin","GREETING=hi"]'
manifest_is "$P1" '[.annotations[] | select(.name == "sdpod/name")] | length' 0

# ---------------------------------------------------------------------------
echo "# prepare: the argument grammar"
# ---------------------------------------------------------------------------
prepare_ok P2 busybox --exec=/bin/sh -- -c 'echo hi' --- busybox --app=second --set-env=A=1 \
	--user=0 --group=0 --working-dir=/tmp
manifest_is "$P2" '[.apps[] | .name]' '["busybox","second"]'
manifest_is "$P2" '.apps[0].app.exec' '["/bin/sh","-c","echo hi"]'
manifest_is "$P2" '.apps[1].app.exec' '["/bin/sh","-c","echo hello from busybox"]'
manifest_is "$P2" '[.apps[1].app.environment[] | .name + "=" + .value]' \
	'["PATH=/usr/sbin:/usr/bin:/sbin:/bin","GREETING=hi","A=1"]'
manifest_is "$P2" '[.apps[1].app.user, .apps[1].app.group]' '["0","0"]'
manifest_is "$P2" '.apps[1].app.workingDirectory' '"/tmp"'
# The first app keeps the image's defaults.
manifest_is "$P2" '[.apps[0].app.user, .apps[0].app.group, .apps[0].app.workingDirectory]' '["1000","1000","/home/app"]'
manifest_is "$P2" '[.apps[0].app.environment[] | .name]' '["PATH","GREETING"]'
assert_file_exists "$DATA/pods/prepared/$P2/apps/second/upper" "$DATA/pods/prepared/$P2/apps/second/work"

# Arguments after "--" replace the image's command, not its entrypoint.
prepare_ok P3 busybox -- 'echo replaced'
manifest_is "$P3" '.apps[0].app.exec' '["/bin/sh","-c","echo replaced"]'
# "--" with nothing after it: an empty command.
prepare_ok P4 busybox --
manifest_is "$P4" '.apps[0].app.exec' '["/bin/sh","-c"]'
# --exec without "--" drops the image's command too.
prepare_ok P5 busybox --exec=/bin/echo
manifest_is "$P5" '.apps[0].app.exec' '["/bin/echo"]'
# "--opt VALUE" is "--opt=VALUE".
prepare_ok P6 busybox --exec /bin/true --set-env B=2
manifest_is "$P6" '.apps[0].app.exec' '["/bin/true"]'
manifest_is "$P6" '[.apps[0].app.environment[] | .name + "=" + .value] | last' '"B=2"'
# App options before the first IMAGE belong to the first app.
prepare_ok P7 --app=first --set-env=C=3 busybox --- busybox
manifest_is "$P7" '[.apps[] | .name]' '["first","busybox"]'
manifest_is "$P7" '[.apps[0].app.environment[] | .name + "=" + .value] | last' '"C=3"'
manifest_is "$P7" '[.apps[1].app.environment[] | .name]' '["PATH","GREETING"]'
assert_file_exists "$DATA/pods/prepared/$P7/apps/first/upper" "$DATA/pods/prepared/$P7/apps/busybox/upper"
# --name, --volume, --mount.
mkdir "$T/hostvol"
prepare_ok PW --name=web --volume=data,kind=host,source="$T/hostvol" --volume=scratch,kind=empty \
	busybox --mount=volume=data,target=/data --mount=volume=scratch,target=/scratch
manifest_is "$PW" '[.annotations[] | select(.name == "sdpod/name") | .value]' '["web"]'
manifest_is "$PW" '[.volumes[] | [.name, .kind, .source]]' "[[\"data\",\"host\",\"$T/hostvol\"],[\"scratch\",\"empty\",null]]"
manifest_is "$PW" '[.volumes[] | .readOnly]' '[false,false]'
manifest_is "$PW" '.apps[0].mounts' '[{"volume":"data","path":"/data"},{"volume":"scratch","path":"/scratch"}]'
prepare_ok PR --volume=ro,kind=host,source="$T/hostvol",readOnly=true busybox --mount=volume=ro,target=/ro
manifest_is "$PR" '.volumes[0].readOnly' true
manifest_is "$PR" '.apps[0].mounts[0]' '{"volume":"ro","path":"/ro"}'

# ---------------------------------------------------------------------------
echo "# prepare: bad input creates nothing"
# ---------------------------------------------------------------------------
# Two apps of one name: a usage error (2), telling to name one with --app.
prepare_fails 2 "--app" busybox --- busybox
prepare_fails 2 '"busybox"' busybox --- busybox
prepare_fails 2 '"second"' busybox --app=second --- busybox --app=second
prepare_fails 2 "--name" --name=a --name=b busybox
prepare_fails 2 "--volume=x" --volume=x busybox
prepare_fails 2 "--volume=x,kind=foo" --volume=x,kind=foo busybox
prepare_fails 2 "--volume=,kind=empty" --volume=,kind=empty busybox
prepare_fails 2 "--volume=x,kind=empty,source=/tmp" --volume=x,kind=empty,source=/tmp busybox
prepare_fails 2 "--volume=x,kind=empty,readOnly=maybe" --volume=x,kind=empty,readOnly=maybe busybox
prepare_fails 2 "--volume=x,kind=empty,bogus=1" --volume=x,kind=empty,bogus=1 busybox
prepare_fails 2 'volume x: source "rel"' --volume=x,kind=host,source=rel busybox
prepare_fails 2 "--mount=volume=x" --volume=x,kind=empty busybox --mount=volume=x
prepare_fails 2 "missing IMAGE"
prepare_fails 2 "missing IMAGE" --name=lonely
prepare_fails 2 "IMAGE" busybox ---
prepare_fails 2 '"---"' --- busybox
prepare_fails 2 "--bogus" busybox --bogus
prepare_fails 2 "--bogus" --bogus=1 busybox
prepare_fails 2 "--exec" busybox --exec
prepare_fails 2 "--exec" busybox --exec=/a --exec=/b
prepare_fails 2 '"extra"' busybox extra
prepare_fails 2 "--name=a b" --name='a b' busybox
prepare_fails 2 "--name=-x" --name=-x busybox
prepare_fails 2 "--name=a/b" --name=a/b busybox
# A machine name is a host name: no "_" (systemd-nspawn would refuse it).
prepare_fails 2 "--name=my_pod" --name=my_pod busybox
prepare_fails 2 "--name=" --name= busybox
prepare_fails 2 "--app=BAD" busybox --app=BAD
prepare_fails 2 "--set-env=NOVALUE" busybox --set-env=NOVALUE
# A mount of a volume the pod does not have: a usage error (2) or "not
# found" (3), naming the volume.
prepare_fails "2|3" '"nope"' busybox --mount=volume=nope,target=/x
# Values that only the manifest's validation rejects are still bad command
# lines: usage errors (2), naming the value.
prepare_fails "2|3" '"rel"' --volume=v,kind=empty busybox --mount=volume=v,target=rel
prepare_fails "2|3" '"rel"' busybox --working-dir=rel
prepare_fails "2|3" '"V"' --volume=V,kind=empty busybox
prepare_fails "2|3" "user" busybox --user=
# Two volumes of one name: like two apps of one name.
prepare_fails 2 '"x"' --volume=x,kind=empty --volume=x,kind=empty busybox
prepare_fails 3 "/nonexistent-sdpod-volume" --volume=x,kind=host,source=/nonexistent-sdpod-volume busybox
# Unknown image: not found.
prepare_fails 3 "no-such-image" no-such-image
prepare_fails 3 "no-such-image" busybox --- no-such-image
assert_dir_empty "after the failures: embryo/ is empty" "$DATA/pods/embryo"
assert_dir_empty "after the failures: prepare/ is empty" "$DATA/pods/prepare"
assert_dir_empty "after the failures: garbage/ is empty" "$DATA/pods/garbage"

# ---------------------------------------------------------------------------
echo "# list"
# ---------------------------------------------------------------------------
assert_exit 0 sd list
LIST=$OUT
assert_eq "list: the legend" "UUID NAME STATE APPS IMAGES CREATED STARTED" "$(head -n1 <<<"$LIST" | tr -s ' ')"
n_pods=$(find "$DATA/pods/prepared" -mindepth 1 -maxdepth 1 | wc -l)
assert_eq "list: one line per pod, plus the legend" "$((n_pods + 1))" "$(wc -l <<<"$LIST")"
row=$(awk -v u="${PW:0:8}" '$1 == u' <<<"$LIST")
assert_match "list: the named pod's row" "^${PW:0:8} +web +prepared +busybox +$BB_NAME +[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2} +-$" "$row"
row=$(awk -v u="${P2:0:8}" '$1 == u' <<<"$LIST")
assert_match "list: a pod of two apps: apps and images joined by commas" "^${P2:0:8} +- +prepared +busybox,second +$BB_NAME,$BB_NAME " "$row"
assert_exit 0 sd list --no-legend
assert_eq "list --no-legend: the same rows without the legend" "$(tail -n +2 <<<"$LIST")" "$OUT"
assert_exit 0 sd list --format=json
LJ=$OUT
assert_json "list --format=json is JSON" "$LJ"
assert_jq "list --format=json: one object per pod" "$LJ" length "$n_pods"
assert_jq "list --format=json: the keys" "$LJ" '[.[] | keys] | unique' '[["apps","created","images","name","net","networks","ports","started","state","uuid"]]'
assert_jq "list --format=json: sorted by UUID" "$LJ" '[.[].uuid] == ([.[].uuid] | sort)' true
assert_jq "list --format=json: the named pod" "$LJ" \
	".[] | select(.uuid == \"$PW\") | [.name, .state, .apps, .images, .started]" \
	"[\"web\",\"prepared\",[\"busybox\"],[\"$BB_NAME\"],null]"
assert_jq "list --format=json: created is RFC 3339 UTC" "$LJ" \
	".[] | select(.uuid == \"$PW\") | .created | test(\"^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\\\\.[0-9]+)?Z$\")" true
assert_jq "list --format=json: an unnamed pod has name null" "$LJ" ".[] | select(.uuid == \"$P1\") | .name" null
assert_jq "list --format=json: two apps" "$LJ" ".[] | select(.uuid == \"$P2\") | [.apps, .images]" \
	"[[\"busybox\",\"second\"],[\"$BB_NAME\",\"$BB_NAME\"]]"
assert_exit 2 sd list --format=yaml
assert_exit 2 sd list extra

# ---------------------------------------------------------------------------
echo "# status and lookups"
# ---------------------------------------------------------------------------
assert_exit 0 sd status "$PW"
ST=$OUT
assert_contains "status: uuid=" "$ST" "uuid=$PW"
assert_contains "status: name=web" "$ST" "name=web"
assert_contains "status: state=prepared" "$ST" "state=prepared"
assert_match "status: created=" $'(^|\n)created=[0-9]{4}-[0-9]{2}-[0-9]{2}T' "$ST"
assert_not_contains "status: a prepared pod was never started" "$ST" "started="
assert_exit 0 sd status "${PW:0:8}"
assert_eq "status by an 8-character prefix: the same" "$ST" "$OUT"
assert_exit 0 sd status --format=json "$PW"
SJ=$OUT
assert_json "status --format=json is JSON" "$SJ"
assert_jq "status --format=json: uuid, name, state" "$SJ" '[.uuid, .name, .state]' "[\"$PW\",\"web\",\"prepared\"]"
assert_jq "status --format=json: apps" "$SJ" '[.apps[] | [.name, .image, .image_id, .exit_status]]' \
	"[[\"busybox\",\"$BB_NAME\",\"$BB\",null]]"
assert_jq "status --format=json: no exit, no manifest error" "$SJ" '[.exited, .manifest_error, .started]' '[null,null,null]'
assert_exit 3 sd status XYZ
assert_contains "status XYZ: a name no pod has" "$ERR" "no pod named XYZ"
assert_exit 3 sd status "${PW^^}"
assert_exit 2 sd status web/x
assert_contains "status web/x: neither a name nor a UUID" "$ERR" '"web/x" is neither a pod name nor a pod UUID'
assert_exit 3 sd status 00000000-0000-4000-8000-000000000000
assert_contains "status of an unknown UUID names it" "$ERR" "00000000-0000-4000-8000-000000000000"
assert_exit 3 sd status 0000000
assert_exit 2 sd status
assert_exit 2 sd status "$PW" "$P1"
assert_exit 2 sd status --wait=soon "$PW"
assert_exit 3 sd cat-manifest XYZ
assert_exit 3 sd cat-manifest 00000000-0000-4000-8000-000000000000
assert_exit 2 sd rm
assert_exit 3 sd rm XYZ
assert_exit 2 sd rm .x
assert_exit 3 sd rm 00000000-0000-4000-8000-000000000000

# Ambiguous prefixes: pods until two share their first hex digit.
declare -A first=()
amb=
extra=()
for u in $(entries prepared); do
	[ -n "${first[${u:0:1}]:-}" ] && amb=${u:0:1}
	first[${u:0:1}]=$u
done
# (At least one more, so that the checks below are always the same.)
while [ -z "$amb" ] || [ ${#extra[@]} -eq 0 ]; do
	u=$(sd prepare busybox) || die "prepare failed"
	extra+=("$u")
	[ -n "${first[${u:0:1}]:-}" ] && amb=${u:0:1}
	first[${u:0:1}]=$u
done
before=$(pods_state)
assert_exit 2 sd status "$amb"
assert_contains "status of an ambiguous prefix says so" "$ERR" "ambiguous"
assert_eq "status of an ambiguous prefix prints nothing" "" "$OUT"
assert_exit 2 sd rm "$amb"
assert_contains "rm of an ambiguous prefix says so" "$ERR" "ambiguous"
assert_exit 2 sd cat-manifest "$amb"
assert_eq "an ambiguous prefix changes nothing" "$before" "$(pods_state)"
assert_exit 0 sd rm "${extra[@]}"
assert_eq "rm of several pods prints each UUID" "$(printf '%s\n' "${extra[@]}")" "$OUT"

# ---------------------------------------------------------------------------
echo "# rm of prepared pods"
# ---------------------------------------------------------------------------
for u in "$P3" "$P4" "$P5" "$P6"; do
	assert_exit 0 sd rm "$u"
	assert_eq "rm of a prepared pod prints its UUID" "$u" "$OUT"
	assert_eq "rm removed the prepared pod ${u:0:8}" "" "$(where "$u")"
done
assert_exit 3 sd rm "$P3"
assert_contains "rm of a removed pod: not found" "$ERR" "$P3"
# Several: what can be removed is, the status is the first error's.
assert_exit 3 sd rm "$PR" 00000000-0000-4000-8000-000000000000
assert_eq "rm POD MISSING: removed the first, printed its UUID" "$PR" "$OUT"
assert_eq "rm POD MISSING: the pod is gone" "" "$(where "$PR")"
assert_dir_empty "rm leaves nothing in garbage/" "$DATA/pods/garbage"
assert_dir_empty "rm leaves nothing in exited-garbage/" "$DATA/pods/exited-garbage"

# ---------------------------------------------------------------------------
echo "# running, exited, waiting"
# ---------------------------------------------------------------------------
# A "running" pod: moved to run/ and held, as the pod's nspawn will hold it.
mv "$DATA/pods/prepared/$P1" "$DATA/pods/run/"
RUN1="$DATA/pods/run/$P1"
hold "$RUN1" 1000
assert_exit 0 sd status "$P1"
assert_contains "a held pod in run/ is running" "$OUT" "state=running"
assert_eq "list --format=json: running" running "$(json_state "$P1")"
assert_exit 4 sd rm "$P1"
assert_contains "rm of a running pod says it is running" "$ERR" "running"
assert_eq "rm of a running pod prints nothing" "" "$OUT"
assert_eq "rm left the running pod in run/" run "$(where "$P1")"
t0=$(now)
assert_exit 4 sd status --wait=300ms "$P1"
took=$(elapsed "$t0")
assert_contains "status --wait=300ms of a running pod still prints the state" "$OUT" "state=running"
assert_contains "status --wait=300ms: the message says it timed out" "$ERR" "timed out"
check "status --wait=300ms returns after about 300ms (took ${took}s)" between 0.25 3 "$took"

# A failed prepare meanwhile: a pod in prepare/ that nobody holds.
mv "$DATA/pods/prepared/$P7" "$DATA/pods/prepare/"
assert_exit 0 sd status "$P7"
assert_contains "an unlocked pod in prepare/ is prepare-failed" "$OUT" "state=prepare-failed"
assert_exit 0 sd gc
assert_match "gc marks the failed prepare and removes it" '^marked 0 exited and 1 failed pods, expired 0 prepared pods, removed 1 pods' "$OUT"
assert_eq "gc removed the prepare-failed pod" "" "$(where "$P7")"
assert_eq "gc left the running pod in run/" run "$(where "$P1")"
assert_exit 0 sd gc --grace-period=0
assert_eq "gc --grace-period=0 leaves a running pod alone" run "$(where "$P1")"
assert_file_exists "$RUN1/pod"

unhold
assert_exit 0 sd status "$P1"
assert_contains "after its holder died, the pod is exited" "$OUT" "state=exited"
assert_eq "list --format=json: exited" exited "$(json_state "$P1")"

# status --wait returns when the holder dies, woken by the kernel.
# (4 s and a 30 s timeout: the holder's time begins before hold() has
# seen it take the lock, which took a second under CI's load.)
hold "$RUN1" 4
t0=$(now)
assert_exit 0 sd status --wait=30s "$P1"
took=$(elapsed "$t0")
assert_contains "status --wait=30s: exited once the holder died" "$OUT" "state=exited"
check "status --wait=30s returned when the holder (4s) died, not at the timeout (took ${took}s)" between 1 20 "$took"
wait "$HOLDER" 2>/dev/null || true
HOLDER=
# No timeout and nothing to wait for: at once.
assert_exit 0 sd status --wait "$P1"
assert_contains "status --wait of an exited pod" "$OUT" "state=exited"

# ---------------------------------------------------------------------------
echo "# app exit statuses"
# ---------------------------------------------------------------------------
mkdir -p "$RUN1/status"
printf '3\n' >"$RUN1/status/busybox"
assert_exit 0 sd status "$P1"
assert_contains "status: app-busybox=3" "$OUT" "app-busybox=3"
assert_match "status: exited=" $'(^|\n)exited=[0-9]{4}-[0-9]{2}-[0-9]{2}T' "$OUT"
assert_exit 0 sd status --format=json "$P1"
assert_jq "status --format=json: apps[].exit_status" "$OUT" '[.apps[] | .exit_status]' '[3]'
assert_jq "status --format=json: apps[].exited and exited are set" "$OUT" '[.apps[0].exited != null, .exited != null]' '[true,true]'
printf 'abc' >"$RUN1/status/busybox"
assert_exit 0 sd status "$P1"
assert_contains "a garbage status file: a warning naming it" "$ERR" "status/busybox"
assert_contains "a garbage status file: the warning is a warning" "$ERR" "warning"
assert_not_contains "a garbage status file: no app-busybox=" "$OUT" "app-busybox="
assert_contains "a garbage status file: the state is still shown" "$OUT" "state=exited"
# The time of exit is when the status was recorded (the file's mtime).
printf '0\n' >"$RUN1/status/busybox"
touch -d '2021-02-03 04:05:06 UTC' "$RUN1/status/busybox"
assert_exit 0 sd status "$P1"
assert_contains "status: app-busybox=0" "$OUT" "app-busybox=0"
assert_contains "status: exited= is the status file's mtime" "$OUT" "exited=2021-02-03T04:05:06.000000Z"
# Only the apps of the manifest: a status file of another name is ignored.
printf '9\n' >"$RUN1/status/ghost"
assert_exit 0 sd status "$P1"
assert_not_contains "a status file of an app not in the manifest is ignored" "$OUT" "ghost"
assert_eq "... silently" "" "$ERR"
# The status directory is read without following symlinks out of the pod.
rm -r "$RUN1/status"
mkdir "$T/elsewhere"
printf '7\n' >"$T/elsewhere/busybox"
ln -s "$T/elsewhere" "$RUN1/status"
assert_exit 0 sd status "$P1"
assert_not_contains "a symlinked status directory is not followed" "$OUT" "app-busybox=7"
rm -r "$RUN1/status" "$T/elsewhere"

# ---------------------------------------------------------------------------
echo "# gc: mark, grace period, sweep"
# ---------------------------------------------------------------------------
assert_exit 0 sd gc --mark-only
assert_match "gc --mark-only marks the exited pod" '^marked 1 exited and 0 failed pods, expired 0 prepared pods, removed 0 pods' "$OUT"
assert_eq "gc --mark-only moved it to exited-garbage/" exited-garbage "$(where "$P1")"
assert_exit 0 sd status "$P1"
assert_contains "a marked pod is exited+gc-marked" "$OUT" "state=exited+gc-marked"
assert_exit 0 sd gc
assert_match "gc with the default grace period removes nothing" '^marked 0 exited and 0 failed pods, expired 0 prepared pods, removed 0 pods' "$OUT"
assert_eq "gc kept the marked pod during its grace period" exited-garbage "$(where "$P1")"
assert_exit 0 sd gc --grace-period=1h
assert_eq "gc --grace-period=1h kept it" exited-garbage "$(where "$P1")"
assert_exit 0 sd gc --grace-period=0
assert_match "gc --grace-period=0 removes it" '^marked 0 exited and 0 failed pods, expired 0 prepared pods, removed 1 pods' "$OUT"
assert_eq "the marked pod is gone" "" "$(where "$P1")"
assert_exit 3 sd status "$P1"
assert_exit 2 sd gc --grace-period=soon
assert_exit 2 sd gc --expire-prepared=soon
assert_exit 2 sd gc extra

# rm of an exited pod (never marked) and of a marked one.
mv "$DATA/pods/prepared/$P2" "$DATA/pods/run/"
assert_exit 0 sd rm "$P2"
assert_eq "rm of an exited pod prints its UUID" "$P2" "$OUT"
assert_eq "rm removed the exited pod" "" "$(where "$P2")"
prepare_ok PM busybox
mv "$DATA/pods/prepared/$PM" "$DATA/pods/run/"
assert_exit 0 sd gc --mark-only
assert_eq "fixture: the pod is marked" exited-garbage "$(where "$PM")"
assert_exit 0 sd rm "${PM:0:8}"
assert_eq "rm of a marked pod prints its UUID" "$PM" "$OUT"
assert_eq "rm removed the marked pod" "" "$(where "$PM")"
assert_dir_empty "nothing left in exited-garbage/" "$DATA/pods/exited-garbage"
assert_dir_empty "nothing left in garbage/" "$DATA/pods/garbage"

# ---------------------------------------------------------------------------
echo "# the other states"
# ---------------------------------------------------------------------------
# preparing: in prepare/, held by its preparer.
prepare_ok PX busybox
mv "$DATA/pods/prepared/$PX" "$DATA/pods/prepare/"
hold "$DATA/pods/prepare/$PX" 1000
assert_exit 0 sd status "$PX"
assert_contains "a held pod in prepare/ is preparing" "$OUT" "state=preparing"
assert_exit 4 sd rm "$PX"
assert_contains "rm of a preparing pod says so" "$ERR" "prepared"
assert_exit 0 sd gc --grace-period=0 --expire-prepared=1s
assert_eq "gc leaves a preparing pod alone" prepare "$(where "$PX")"
assert_exit 4 sd status --wait=200ms "$PX"
assert_contains "status --wait of a preparing pod times out, still preparing" "$OUT" "state=preparing"
# Its preparer dies: the wait ends, the preparation failed.
sd status --wait=10s "$PX" >"$T/wait.out" 2>"$T/wait.err" &
waiter=$!
sleep 0.3
unhold
rc=0
wait "$waiter" || rc=$?
assert_eq "status --wait of a preparing pod whose preparer dies: exit 0" 0 "$rc"
assert_contains "... prepare-failed" "$(cat "$T/wait.out")" "state=prepare-failed"
no_sanitizer_report "status --wait (background)" "$T/wait.err"
rm -f "$T/wait.out" "$T/wait.err"
# prepared, locked: being started.
mv "$DATA/pods/prepare/$PX" "$DATA/pods/prepared/"
hold "$DATA/pods/prepared/$PX" 1000
assert_exit 0 sd status "$PX"
assert_contains "a locked prepared pod is still prepared (the lock means nothing there)" "$OUT" "state=prepared"
assert_exit 4 sd rm "$PX"
assert_contains "rm of a prepared pod being started: busy" "$ERR" "busy"
assert_eq "rm left the prepared pod being started" prepared "$(where "$PX")"
unhold
# status --wait on a prepared pod waits until it has run and exited: here it
# is moved to run/ unlocked (it "ran and exited at once").
assert_exit 4 sd status --wait=200ms "$PX"
assert_contains "status --wait of a prepared pod times out: still prepared" "$OUT" "state=prepared"
sd status --wait=10s "$PX" >"$T/wait.out" 2>"$T/wait.err" &
waiter=$!
sleep 0.5
mv "$DATA/pods/prepared/$PX" "$DATA/pods/run/"
t0=$(now)
rc=0
wait "$waiter" || rc=$?
took=$(elapsed "$t0")
assert_eq "status --wait of a prepared pod returns 0 once it moved on" 0 "$rc"
assert_contains "... and shows it exited" "$(cat "$T/wait.out")" "state=exited"
check "... at once, not at the timeout (took ${took}s)" between 0 3 "$took"
no_sanitizer_report "status --wait (background)" "$T/wait.err"
rm -f "$T/wait.out" "$T/wait.err"
# A pod removed while status --wait waits for it: not found.
prepare_ok PG busybox
sd status --wait=10s "$PG" >"$T/wait.out" 2>"$T/wait.err" &
waiter=$!
check "status --wait has the pod open" wait_until 20 has_open "$waiter" "$PG"
assert_exit 0 sd rm "$PG"
rc=0
wait "$waiter" || rc=$?
assert_eq "status --wait of a pod removed meanwhile exits 3" 3 "$rc"
assert_contains "... saying it was removed" "$(cat "$T/wait.err")" "removed"
no_sanitizer_report "status --wait (background)" "$T/wait.err"
rm -f "$T/wait.out" "$T/wait.err"
# exited+deleting: in exited-garbage/, held by its deleter.
assert_exit 0 sd gc --mark-only
assert_eq "fixture: marked" exited-garbage "$(where "$PX")"
hold "$DATA/pods/exited-garbage/$PX" 1000
assert_exit 0 sd status "$PX"
assert_contains "a held pod in exited-garbage/ is exited+deleting" "$OUT" "state=exited+deleting"
assert_exit 0 sd gc --grace-period=0
assert_match "gc skips a pod being deleted, says it is busy" '^marked 0 exited and 0 failed pods, expired 0 prepared pods, removed 0 pods, 1 busy' "$OUT"
assert_eq "gc left it" exited-garbage "$(where "$PX")"
assert_exit 4 sd rm "$PX"
assert_contains "rm of a pod being deleted says so" "$ERR" "deleted"
assert_exit 4 sd status --wait=200ms "$PX"
assert_contains "status --wait of a pod being deleted times out" "$OUT" "state=exited+deleting"
unhold
# A deleter that deletes: status --wait ends when the pod is gone (3).
prepare_ok PD busybox
mv "$DATA/pods/prepared/$PD" "$DATA/pods/exited-garbage/"
hold "$DATA/pods/exited-garbage/$PD" 1000
sd status --wait=10s "$PD" >"$T/wait.out" 2>"$T/wait.err" &
waiter=$!
check "status --wait has the pod being deleted open" wait_until 20 has_open "$waiter" "$PD"
rm -rf "${DATA:?}/pods/exited-garbage/$PD"
unhold
rc=0
wait "$waiter" || rc=$?
assert_eq "status --wait of a pod being deleted: exit 3 once it is gone" 3 "$rc"
assert_contains "... saying it was removed" "$(cat "$T/wait.err")" "removed"
no_sanitizer_report "status --wait (background)" "$T/wait.err"
rm -f "$T/wait.out" "$T/wait.err"
# prepare-failed+deleting and +gc-marked: in garbage/.
mv "$DATA/pods/exited-garbage/$PX" "$DATA/pods/garbage/"
assert_exit 0 sd status "$PX"
assert_contains "an unlocked pod in garbage/ is prepare-failed+gc-marked" "$OUT" "state=prepare-failed+gc-marked"
hold "$DATA/pods/garbage/$PX" 1000
assert_exit 0 sd status "$PX"
assert_contains "a held pod in garbage/ is prepare-failed+deleting" "$OUT" "state=prepare-failed+deleting"
assert_exit 0 sd gc
assert_eq "gc left the pod being deleted" garbage "$(where "$PX")"
unhold
assert_exit 0 sd gc
assert_eq "gc then removed it" "" "$(where "$PX")"
# embryo: a directory in embryo/, locked by its creator (between its lock
# and its rename to prepare/).
EMB=22222222-2222-4222-8222-222222222222
mkdir "$DATA/pods/embryo/$EMB"
hold "$DATA/pods/embryo/$EMB" 1000
assert_exit 0 sd status "$EMB"
assert_contains "a pod in embryo/ is embryo" "$OUT" "state=embryo"
assert_exit 4 sd rm "$EMB"
assert_exit 0 sd gc --grace-period=0 --expire-prepared=1s
assert_eq "gc leaves an embryo its creator holds alone" embryo "$(where "$EMB")"
assert_exit 3 sd cat-manifest "$EMB"
assert_contains "cat-manifest of a pod without a manifest says so" "$ERR" "no manifest"
# Its creator died (nobody holds it, nobody is creating a pod): collected
# at once.
unhold
assert_exit 0 sd gc
assert_eq "gc collects an embryo whose creator died" "" "$(where "$EMB")"

# Two gc at once over many exited pods: losing a race is normal.
many=()
for i in 1 2 3 4 5 6 7 8; do
	u=$(sd prepare busybox) || die "prepare failed"
	mv "$DATA/pods/prepared/$u" "$DATA/pods/run/"
	many+=("$u")
done
sd gc --grace-period=0 >"$T/gc1.out" 2>"$T/gc1.err" &
gc1=$!
sd gc --grace-period=0 >"$T/gc2.out" 2>"$T/gc2.err" &
gc2=$!
rc1=0 rc2=0
wait "$gc1" || rc1=$?
wait "$gc2" || rc2=$?
assert_eq "two concurrent gc: both exit 0" "0 0" "$rc1 $rc2"
assert_eq "two concurrent gc: no warnings" "" "$(cat "$T/gc1.err" "$T/gc2.err")"
removed=$(cat "$T/gc1.out" "$T/gc2.out" | sed -n 's/.*removed \([0-9]*\) pods.*/\1/p' | awk '{ n += $1 } END { print n + 0 }')
assert_eq "two concurrent gc: together they removed each pod once" 8 "$removed"
for u in "${many[@]}"; do
	[ -z "$(where "$u")" ] || fail "concurrent gc removed ${u:0:8}" "it is in $(where "$u")"
done
pass "concurrent gc removed all 8 pods"
rm -f "$T"/gc[12].out "$T"/gc[12].err
# rm racing gc's mark (which holds a shared lock across its rename): rm
# follows the pod to exited-garbage/ and removes it there.
for round in 1 2 3; do
	many=()
	for i in 1 2 3 4 5 6; do
		u=$(sd prepare busybox) || die "prepare failed"
		mv "$DATA/pods/prepared/$u" "$DATA/pods/run/"
		many+=("$u")
	done
	sd gc --mark-only >"$T/gc1.out" 2>"$T/gc1.err" &
	gc1=$!
	rc=0
	sd rm "${many[@]}" >"$T/rm.out" 2>"$T/rm.err" || rc=$?
	rc1=0
	wait "$gc1" || rc1=$?
	assert_eq "rm racing gc --mark-only (round $round): both exit 0" "0 0" "$rc $rc1"
	assert_eq "rm racing gc --mark-only (round $round): rm printed every UUID" \
		"$(printf '%s\n' "${many[@]}")" "$(cat "$T/rm.out")"
	assert_eq "rm racing gc --mark-only (round $round): no messages" "" "$(cat "$T/rm.err" "$T/gc1.err")"
	for u in "${many[@]}"; do
		[ -z "$(where "$u")" ] || fail "rm racing gc removed ${u:0:8}" "it is in $(where "$u")"
	done
done
rm -f "$T"/gc1.out "$T"/gc1.err "$T"/rm.out "$T"/rm.err

# ---------------------------------------------------------------------------
echo "# stray entries"
# ---------------------------------------------------------------------------
STRAY_UUID=11111111-1111-4111-8111-111111111111
mkdir "$T/stray-target"
echo '{"acKind":"PodManifest"}' >"$T/stray-target/pod"
echo "not a pod" >"$DATA/pods/run/notapod"
ln -s "$T/stray-target" "$DATA/pods/run/$STRAY_UUID"
mkdir "$DATA/pods/prepared/junk"
echo keep >"$DATA/pods/prepared/junk/file"
# The same symlink where gc deletes and renames: it must never follow it.
for d in embryo prepare garbage exited-garbage; do
	ln -s "$T/stray-target" "$DATA/pods/$d/$STRAY_UUID"
done
stray_still_there() {
	check "$1: run/notapod is still there" test -f "$DATA/pods/run/notapod"
	check "$1: the symlink run/$STRAY_UUID is still there" test -L "$DATA/pods/run/$STRAY_UUID"
	check "$1: prepared/junk/file is still there" test -f "$DATA/pods/prepared/junk/file"
	check "$1: the symlink's target is untouched" test -f "$T/stray-target/pod"
	local d
	for d in embryo prepare garbage exited-garbage; do
		check "$1: the symlink $d/$STRAY_UUID is still there" test -L "$DATA/pods/$d/$STRAY_UUID"
	done
}
for cmd in "list" "list --format=json" "gc" "gc --grace-period=0"; do
	# shellcheck disable=SC2086 # split the options
	assert_exit 0 sd $cmd
	assert_contains "$cmd: warns about run/notapod" "$ERR" "pods/run/notapod"
	assert_contains "$cmd: warns about the symlink" "$ERR" "pods/run/$STRAY_UUID"
	assert_contains "$cmd: warns about prepared/junk" "$ERR" "pods/prepared/junk"
	case "$cmd" in gc*)
		assert_contains "$cmd: warns about the symlink in garbage/" "$ERR" "pods/garbage/$STRAY_UUID"
		assert_contains "$cmd: warns about the symlink in exited-garbage/" "$ERR" "pods/exited-garbage/$STRAY_UUID"
		assert_contains "$cmd: warns about the symlink in prepare/" "$ERR" "pods/prepare/$STRAY_UUID"
		;;
	esac
	assert_not_contains "$cmd: the stray entries are not listed" "$OUT" "notapod"
	assert_not_contains "$cmd: the symlink is not listed" "$OUT" "11111111"
	stray_still_there "$cmd"
done
assert_exit 3 sd status "$STRAY_UUID"
assert_exit 3 sd rm "$STRAY_UUID"
stray_still_there "rm of the symlink's name"
rm -r "$DATA/pods/run/notapod" "$DATA/pods/prepared/junk" "$T/stray-target"
for d in embryo prepare run garbage exited-garbage; do
	rm "$DATA/pods/$d/$STRAY_UUID"
done

# ---------------------------------------------------------------------------
echo "# a manifest that is not JSON"
# ---------------------------------------------------------------------------
prepare_ok PB busybox
printf 'not json {' >"$DATA/pods/prepared/$PB/pod"
assert_exit 0 sd list
assert_contains "list still lists a pod with a broken manifest" "$OUT" "${PB:0:8}"
assert_exit 0 sd list --format=json
assert_jq "list --format=json: the broken pod, without apps" "$OUT" ".[] | select(.uuid == \"$PB\") | [.state, .apps]" '["prepared",[]]'
assert_exit 0 sd status "$PB"
assert_match "status shows manifest-error=" $'(^|\n)manifest-error=.+' "$OUT"
assert_contains "status still shows the state" "$OUT" "state=prepared"
assert_exit 0 sd status --format=json "$PB"
assert_jq "status --format=json: manifest_error" "$OUT" '.manifest_error | type' '"string"'
assert_exit 0 sd cat-manifest "$PB"
check "cat-manifest prints the broken manifest's raw bytes" cmp -s "$T/stdout" "$DATA/pods/prepared/$PB/pod"
assert_exit 0 sd rm "$PB"
assert_eq "rm of a pod with a broken manifest" "$PB" "$OUT"

# ---------------------------------------------------------------------------
echo "# data directory errors"
# ---------------------------------------------------------------------------
for cmd in list gc "status $PW" "rm $PW" "prepare busybox"; do
	# shellcheck disable=SC2086
	assert_exit 3 "$SDPOD" --dir=/nonexistent-sdpod-dir $cmd
	assert_contains "--dir=/nonexistent $cmd: names the path" "$ERR" "/nonexistent-sdpod-dir"
done
assert_file_absent /nonexistent-sdpod-dir
# Read-only, for an unprivileged user (root ignores modes).
as_nobody() {
	setpriv --reuid=65534 --regid=65534 --clear-groups "$@"
}
RO="$T/ro"
mkdir "$RO"
chown 65534:65534 "$RO"
chmod 0711 "$T"
chmod 0555 "$RO"
for cmd in gc "prepare busybox"; do
	# shellcheck disable=SC2086
	assert_exit "1|4" as_nobody "$SDPOD" --dir="$RO" $cmd
	assert_contains "read-only data dir, $cmd: names it" "$ERR" "$RO"
	assert_contains "read-only data dir, $cmd: says why" "$ERR" "ermission denied"
done
# The commands that only look create nothing: an empty store has no pods.
assert_exit 0 as_nobody "$SDPOD" --dir="$RO" list --no-legend
assert_eq "list of a read-only data dir without pods/" "" "$OUT"
assert_exit 3 as_nobody "$SDPOD" --dir="$RO" status web
assert_file_absent "$RO/pods"
# A store whose pods/ is read-only.
chmod 0755 "$RO"
assert_exit 0 as_nobody "$SDPOD" --dir="$RO" gc
assert_file_exists "$RO/pods"
chmod 0555 "$RO/pods"
for cmd in gc "rm 00000000-0000-4000-8000-000000000000"; do
	# shellcheck disable=SC2086
	assert_exit "1|4" as_nobody "$SDPOD" --dir="$RO" $cmd
	assert_contains "read-only pods/, $cmd: names the data directory" "$ERR" "$RO"
	assert_contains "read-only pods/, $cmd: says it is not writable" "$ERR" "not writable"
done
chmod 0755 "$RO/pods"
chmod 0700 "$T"
rm -rf "$RO"

# ---------------------------------------------------------------------------
echo "# image gc keeps the trees of pods"
# ---------------------------------------------------------------------------
import_ok OTHER --name=other "$IMG/other"
OTHER_HEX=${OTHER#sha256:}
prepare_ok PO other
manifest_is "$PO" '.apps[0] | [.name, .image.id]' "[\"other\",\"$OTHER\"]"
assert_exit 0 sd image rm other
assert_exit 0 sd image gc
check "image gc keeps the tree of a removed image a pod uses" test -d "$DATA/tree/$OTHER_HEX/rootfs/bin"
check "... and the tree of busybox" test -d "$DATA/tree/$BB_HEX/rootfs/bin"
# Every state keeps it: also an exited pod.
mv "$DATA/pods/prepared/$PO" "$DATA/pods/run/"
assert_exit 0 sd image gc
check "image gc keeps the tree of an exited pod's image" test -d "$DATA/tree/$OTHER_HEX/rootfs/bin"
assert_exit 0 sd rm "$PO"
assert_exit 0 sd image gc
assert_file_absent "$DATA/tree/$OTHER_HEX"
check "busybox's tree is still there" test -x "$DATA/tree/$BB_HEX/rootfs/bin/busybox"

# ---------------------------------------------------------------------------
echo "# a prepare that fails after the pod exists"
# ---------------------------------------------------------------------------
import_ok TINY --name=tiny "$IMG/tiny"
TINY_HEX=${TINY#sha256:}
tiny_layer_digest=$(jq -r '.layers[0].digest' "$DATA/images/db/$TINY_HEX.json")
# Neither its tree nor the blob to render it again: rendering fails, and it
# is found out while the request is checked, before a pod exists.
rm -rf "${DATA:?}/tree/$TINY_HEX" "$DATA/images/blobs/sha256/${tiny_layer_digest#sha256:}"
assert_exit "1|3|5" sd prepare tiny
assert_eq "a prepare whose tree cannot be rendered prints no UUID" "" "$OUT"
assert_contains "the message names the app" "$ERR" "app tiny"
assert_eq "and makes no pod" "" "$(entries prepare)"
assert_eq "no rendering staging left" "" "$(ls -A "$DATA/images/tmp" 2>/dev/null)"
# A stage1 image without a rootfs fails the stage1's rendering, which
# happens once the pod exists.
mkdir "$T/broken-stage1"
cp "$SDPOD_STAGE1/manifest" "$T/broken-stage1/"
SDPOD_STAGE1="$T/broken-stage1" assert_exit "1|3|5" sd prepare busybox
assert_eq "the failed prepare prints no UUID" "" "$OUT"
failed=$(entries prepare)
assert_match "the failed pod is left in prepare/" "$UUID_RE" "$failed"
assert_contains "the message names the pod" "$ERR" "pod $failed"
assert_contains "and the stage1 image" "$ERR" "$T/broken-stage1"
assert_eq "the failed pod is prepare-failed" prepare-failed "$(json_state "$failed")"
assert_dir_empty "no embryo left" "$DATA/pods/embryo"
assert_exit 0 sd gc
assert_match "gc collects the failed prepare" '^marked 0 exited and 1 failed pods, expired 0 prepared pods, removed 1 pods' "$OUT"
assert_dir_empty "prepare/ is empty after gc" "$DATA/pods/prepare"
assert_dir_empty "garbage/ is empty after gc" "$DATA/pods/garbage"
assert_exit 0 sd image rm tiny

# ---------------------------------------------------------------------------
echo "# gc: expiring prepared pods"
# ---------------------------------------------------------------------------
prepare_ok PE1 busybox
prepare_ok PE2 busybox
prepared_before=$(entries prepared)
assert_eq "fixture: the prepared pods" "$(printf '%s\n' "$PE1" "$PE2" | LC_ALL=C sort)" "$(LC_ALL=C sort <<<"$prepared_before")"
assert_exit 0 sd gc --expire-prepared=0
assert_eq "gc --expire-prepared=0 never expires prepared pods" "$prepared_before" "$(entries prepared)"
sleep 2
assert_exit 0 sd gc --expire-prepared=1s
assert_match "gc --expire-prepared=1s expires them" \
	"^marked 0 exited and 0 failed pods, expired $(wc -l <<<"$prepared_before") prepared pods, removed $(wc -l <<<"$prepared_before") pods" "$OUT"
assert_dir_empty "prepared/ is empty" "$DATA/pods/prepared"
assert_dir_empty "garbage/ is empty" "$DATA/pods/garbage"
for d in "${STATE_DIRS[@]}"; do
	assert_dir_empty "at the end: $d/ is empty" "$DATA/pods/$d"
done
assert_exit 0 sd list --format=json
assert_jq "at the end: no pods" "$OUT" length 0

check "the host volume is untouched" test -d "$T/hostvol"
store_verify
leak_check
