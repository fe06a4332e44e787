# shellcheck shell=bash
#
# lib.sh - sourced by every tests/integration/test-*.sh.
#
#   . "$(dirname "$0")/lib.sh"
#
# What it gives a test:
#   * `set -euo pipefail`, and an ERR trap that names the command and line
#     that made the test abort;
#   * $T, a private temp dir removed by an EXIT trap (also on failure), with
#     $T/tmp as $TMPDIR (images.sh scratch space lands there), $T/cwd as the
#     working directory (must stay empty: sdpod writes nothing to its cwd)
#     and $DATA, an empty sdpod data directory;
#   * $SDPOD (from $SDPOD_BIN, which meson passes) and `sd`, which runs it on
#     $DATA;
#   * require_root / require_tool: exit 77 (meson's "skipped") with the
#     reason, or exit 1 when CI=true, because CI must never pass by skipping;
#   * assertions that print one line per check ("ok N - ..." or
#     "FAIL N - ..." with expected vs got).  They are soft: a failed check
#     does not stop the test, the test exits 1 at the end.  That way one run
#     shows every broken behaviour, not just the first;
#   * snapshot DIR: a listing of a tree (type, mode, owner, size, links,
#     symlink target, sha256 of regular files) to compare trees exactly;
#   * leak_begin / leak_check: mounts, staging entries, files in the cwd, in
#     the host's temp dir and sdpod's default data dir;
#   * store_verify / store_unreferenced: the store's own invariants;
#   * oci_* helpers that write small OCI layouts by hand (sha256sum + jq),
#     for images images.sh does not make (corrupt, multi-platform, odd),
#     and busybox_layout, the busybox layout most tests import;
#   * wait_until / wait_for and the checks they poll (status_is,
#     journal_has): for what a pod does on its own time.

set -euo pipefail
shopt -s inherit_errexit
# Functions and subshells inherit the ERR trap, so an unexpected failure
# anywhere is reported with its line.
set -E

TEST_NAME=$(basename "$0" .sh)
LIB_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck disable=SC2034 # for the tests: . "$IMAGES_SH"
IMAGES_SH="$LIB_DIR/images/images.sh"

_checks=0
_failures=0
_t0=$(date +%s.%N)
_host_tmp=${TMPDIR:-/tmp}
T=

# ---------------------------------------------------------------------------
# Exit, skip, abort.
# ---------------------------------------------------------------------------

_lib_on_err() {
	local rc=$? line=$1 cmd=$2
	# Only the test script itself reports: a failing command inside a
	# function shows up again when the function returns to the script.
	if [ "$BASH_SUBSHELL" = 0 ]; then
		echo "ABORT - $TEST_NAME: line $line: '$cmd' exited $rc (an unexpected failure, not a check)"
	fi
}
trap '_lib_on_err "$LINENO" "$BASH_COMMAND"' ERR

_lib_on_exit() {
	local rc=$? pid
	set +e
	trap - ERR
	# Stop what the test left running in the background, by pid.
	for pid in $(jobs -p); do
		kill "$pid" 2>/dev/null
	done
	wait 2>/dev/null
	if [ -n "$T" ] && [ -d "$T" ]; then
		cd / || true
		# Never rm -rf through a mount that a bug left behind.
		if grep -qF " $T" /proc/self/mountinfo; then
			echo "# $T has mounts below it; not removed"
		else
			rm -rf -- "$T"
		fi
	fi
	[ "$rc" = 0 ] && [ "$_failures" -gt 0 ] && rc=1
	local secs
	secs=$(awk -v s="$_t0" -v e="$(date +%s.%N)" 'BEGIN { printf "%.1f", e - s }')
	case "$rc" in
	0) echo "PASS - $TEST_NAME: $_checks checks in ${secs}s" ;;
	77) ;; # skip() said why
	75) echo "REBOOT - $TEST_NAME: asks for a reboot of the test host, to run again after it" ;; # system tests' reboot_and_rerun
	*) echo "FAIL - $TEST_NAME: exit $rc; $_failures of $_checks checks failed (${secs}s)" ;;
	esac
	exit "$rc"
}
trap _lib_on_exit EXIT
trap 'exit 129' HUP
trap 'exit 130' INT
trap 'exit 143' TERM

# skip REASON: meson's "skipped" (77); under CI=true a failure instead.
skip() {
	if [ "${CI:-}" = true ]; then
		echo "FAIL - $TEST_NAME: would skip, but CI=true: $*"
		exit 1
	fi
	echo "SKIP - $TEST_NAME: $*"
	exit 77
}

# die MESSAGE: the test cannot go on (a broken fixture, not a check).
die() {
	echo "ABORT - $TEST_NAME: $*"
	exit 1
}

require_root() {
	[ "$(id -u)" = 0 ] || skip "needs root${1:+ ($1)}"
}

# require_tool NAME [PACKAGE]
require_tool() {
	command -v "$1" >/dev/null 2>&1 ||
		skip "needs '$1' (apt-get install ${2:-$1})"
}

# ---------------------------------------------------------------------------
# The environment of a test.
# ---------------------------------------------------------------------------

[ -n "${SDPOD_BIN:-}" ] ||
	die "SDPOD_BIN is not set (meson sets it; by hand: SDPOD_BIN=build-integ/helpers/sdpod bash $0)"
SDPOD=$(realpath -e -- "$SDPOD_BIN" 2>/dev/null) || die "SDPOD_BIN=$SDPOD_BIN does not exist"
# podapp, beside sdpod unless PODAPP_BIN says otherwise.
PODAPP=$(realpath -e -- "${PODAPP_BIN:-$(dirname "$SDPOD")/podapp}" 2>/dev/null) || PODAPP=
[ -x "$SDPOD" ] || die "$SDPOD is not executable"
# The stage1 image of the build: pods are prepared with it.
[ -n "${SDPOD_STAGE1:-}" ] ||
	die "SDPOD_STAGE1 is not set (meson sets it; by hand: SDPOD_STAGE1=build-integ/stage1-rootfs/stage1)"
[ -f "$SDPOD_STAGE1/manifest" ] || die "SDPOD_STAGE1=$SDPOD_STAGE1 is not a stage1 image (no manifest)"
SDPOD_STAGE1=$(realpath -e -- "$SDPOD_STAGE1")
export SDPOD_STAGE1

T=$(mktemp -d "$_host_tmp/sdpod-test.$TEST_NAME.XXXXXX")
mkdir "$T/tmp" "$T/cwd" "$T/data"
export TMPDIR="$T/tmp"
DATA="$T/data"
# A test that forgets --dir must not fall back to the host's data directory
# (nor to the caller's SDPOD_DIR): point SDPOD_DIR at a path that does not
# exist, so such a call fails instead of touching anything.
export SDPOD_DIR="$T/SDPOD_DIR-not-set-by-this-test"
cd "$T/cwd"
# Predictable modes for what tests create (sdpod must not depend on it).
umask 022

# sd ARGS...: sdpod on this test's data directory.
# The preamble of the tests that build real images with images.sh: it needs
# root (umoci unpack), an amd64 host and these tools, plus any named.
use_real_images() {
	require_root "images.sh runs umoci unpack as root"
	require_amd64
	local tool
	for tool in umoci jq tar gzip sha256sum "$@"; do
		require_tool "$tool"
	done
	# shellcheck source=images/images.sh
	. "$IMAGES_SH"
}

sd() {
	"$SDPOD" --dir="$DATA" "$@"
}

# pa: podapp on $DATA ($PODAPP from $PODAPP_BIN, which meson passes).
pa() {
	"$PODAPP" --dir="$DATA" "$@"
}

# remove_all_pods: every pod of $DATA stopped (killed when it does not stop
# within 20 s) and removed. remove_pods_on_exit makes it part of the EXIT
# trap, so that it happens whatever the test did.
remove_all_pods() {
	local uuid
	for uuid in $(sd list --no-legend 2>/dev/null | awk '$3 == "running" {print $1}'); do
		timeout 20 "$SDPOD" --dir="$DATA" stop "$uuid" >/dev/null 2>&1 ||
			sd stop --force "$uuid" >/dev/null 2>&1 || true
	done
	for uuid in $(sd list --no-legend 2>/dev/null | awk '{print $1}'); do
		sd rm "$uuid" >/dev/null 2>&1 || true
	done
}

remove_pods_on_exit() {
	trap '_rc=$?; set +e; trap - ERR; remove_all_pods; (exit "$_rc"); _lib_on_exit' EXIT
}

# netns_new VAR: a new network namespace, held by a sleeping process of the
# test (no /run/netns mount, which other tests running meanwhile would count
# as a leak); VAR gets that process's PID (its namespace: /proc/PID/ns/net).
# netns_del_all ends them all; a test calls it from its EXIT trap.
NS_PIDS=()
netns_new() {
	local pid i
	unshare --net sleep 3600 &
	pid=$!
	NS_PIDS+=("$pid")
	for i in $(seq 100); do
		[ "$(readlink "/proc/$pid/ns/net")" != "$(readlink /proc/self/ns/net)" ] && break
		sleep 0.01
	done
	printf -v "$1" '%s' "$pid"
}
netns_del_all() {
	local pid
	for pid in "${NS_PIDS[@]}"; do
		kill "$pid" 2>/dev/null
		wait "$pid" 2>/dev/null || true
	done
	NS_PIDS=()
}

# ---------------------------------------------------------------------------
# Assertions.  Each prints one line; failures add "# " lines with details.
# ---------------------------------------------------------------------------

pass() {
	_checks=$((_checks + 1))
	echo "ok $_checks - $*"
}

# fail WHAT [DETAIL...]: a failed check (the test goes on, and fails at the end).
fail() {
	_checks=$((_checks + 1))
	_failures=$((_failures + 1))
	echo "FAIL $_checks - $1"
	shift
	local l
	for l in "$@"; do
		# shellcheck disable=SC2001 # indent every line
		sed 's/^/#   /' <<<"$l"
	done
}

# check WHAT CMD...: passes when CMD succeeds.
check() {
	local what=$1
	shift
	if "$@"; then pass "$what"; else fail "$what" "command failed: $*"; fi
}

# check_not WHAT CMD...: passes when CMD fails.
check_not() {
	local what=$1
	shift
	if "$@"; then fail "$what" "command succeeded: $*"; else pass "$what"; fi
}

# assert_eq WHAT EXPECTED GOT
assert_eq() {
	if [ "$2" = "$3" ]; then
		pass "$1"
	else
		fail "$1" "expected: $2" "got:      $3"
	fi
}

# assert_ne WHAT UNEXPECTED GOT
assert_ne() {
	if [ "$2" != "$3" ]; then pass "$1"; else fail "$1" "expected anything but: $2"; fi
}

# assert_contains WHAT HAYSTACK NEEDLE (fixed string)
assert_contains() {
	if [[ "$2" == *"$3"* ]]; then
		pass "$1"
	else
		fail "$1" "expected to contain: $3" "got: $2"
	fi
}

assert_not_contains() {
	if [[ "$2" != *"$3"* ]]; then
		pass "$1"
	else
		fail "$1" "expected not to contain: $3" "got: $2"
	fi
}

# assert_match WHAT EXTENDED-REGEX GOT
assert_match() {
	if [[ "$3" =~ $2 ]]; then
		pass "$1"
	else
		fail "$1" "expected to match: $2" "got: $3"
	fi
}

_show_cmd() {
	local s="$*"
	s=${s//"$SDPOD"/sdpod}
	s=${s//"$T"/\$T}
	printf '%s' "$s"
}

# no_sanitizer_report WHAT FILE: with a -Db_sanitize build, a report from
# ASan, LSan or UBSan on stderr is a failure, whatever the exit status
# (UBSan may go on and exit as if nothing happened).  Silent when clean.
no_sanitizer_report() {
	if grep -qE 'ERROR: (Address|Leak)Sanitizer|runtime error:|UndefinedBehaviorSanitizer' "$2" 2>/dev/null; then
		fail "$1: no sanitizer report" "$(head -c 4000 "$2")"
	fi
}

# assert_exit CODE CMD...: runs CMD and checks its exit status.  Afterwards
# $OUT and $ERR hold its stdout and stderr (and $T/stdout, $T/stderr the
# exact bytes).  CODE may be a list: "3|5".
assert_exit() {
	local want=$1 rc=0
	shift
	"$@" >"$T/stdout" 2>"$T/stderr" || rc=$?
	# shellcheck disable=SC2034 # for the caller
	OUT=$(cat "$T/stdout") ERR=$(cat "$T/stderr")
	no_sanitizer_report "$(_show_cmd "$@")" "$T/stderr"
	if [[ "|$want|" == *"|$rc|"* ]]; then
		pass "exit $rc: $(_show_cmd "$@")"
	else
		fail "exit $want: $(_show_cmd "$@")" "got exit $rc" "stdout: $(head -c 2000 "$T/stdout")" \
			"stderr: $(head -c 2000 "$T/stderr")"
	fi
	return 0
}

assert_file_absent() {
	local p
	for p; do
		if [ -e "$p" ] || [ -L "$p" ]; then
			fail "absent: $(_show_cmd "$p")" "it exists: $(ls -ld -- "$p")"
		else
			pass "absent: $(_show_cmd "$p")"
		fi
	done
}

assert_file_exists() {
	local p
	for p; do
		if [ -e "$p" ] || [ -L "$p" ]; then
			pass "exists: $(_show_cmd "$p")"
		else
			fail "exists: $(_show_cmd "$p")" "no such file"
		fi
	done
}

# assert_dir_empty WHAT DIR
assert_dir_empty() {
	local entries
	entries=$(ls -A -- "$2" 2>&1) || true
	if [ -d "$2" ] && [ -z "$entries" ]; then
		pass "$1"
	else
		fail "$1" "$(_show_cmd "$2") holds: $entries"
	fi
}

# assert_json WHAT TEXT: TEXT is one valid JSON document.
assert_json() {
	local e
	if e=$(jq -e . <<<"$2" 2>&1 >/dev/null); then
		pass "$1"
	else
		fail "$1" "not valid JSON ($e): $(head -c 500 <<<"$2")"
	fi
}

# assert_jq WHAT JSON FILTER EXPECTED: jq -c FILTER on JSON prints EXPECTED.
assert_jq() {
	local got
	got=$(jq -c "$3" <<<"$2" 2>&1) || got="jq failed: $got"
	assert_eq "$1" "$4" "$got"
}

# ---------------------------------------------------------------------------
# Snapshots of trees.
# ---------------------------------------------------------------------------

# snapshot DIR [--mtime]: one line per entry, sorted:
#   path  type  mode  uid:gid  size  nlink  symlink-target  sha256  [mtime]
# The size of directories is left out (it depends on the file system's
# history, not on the content); with --mtime the mtimes of everything but
# directories are included (sdpod does not promise directory mtimes, and a
# directory's mtime changes whenever an entry is added).
snapshot() {
	local dir=$1 mtime=${2:-}
	[ -d "$dir" ] || {
		echo "snapshot: $dir is not a directory"
		return 0
	}
	# Fields are separated by \037 in find's output: a symlink target may
	# be empty, and awk must still see it as a field.
	awk -F'\037' -v OFS='\t' -v mtime="$mtime" '
		FNR == NR { sums[substr($0, 67)] = substr($0, 1, 64); next }
		{
			h = "-"
			if ($2 == "f") h = ($1 in sums) ? sums[$1] : "?"
			if ($2 == "d") { $5 = "-"; $8 = "-" }
			out = $1 OFS $2 OFS $3 OFS $4 OFS $5 OFS $6 OFS $7 OFS h
			if (mtime == "--mtime") out = out OFS $8
			print out
		}' \
		<(cd "$dir" && find . -type f -print0 | xargs -0r sha256sum -z | tr '\0' '\n') \
		<(cd "$dir" && find . -printf '%p\037%y\037%#m\037%U:%G\037%s\037%n\037%l\037%T@\n') |
		LC_ALL=C sort
}

# assert_same_tree WHAT EXPECTED-DIR GOT-DIR: equal snapshots (with mtimes).
assert_same_tree() {
	local a b d
	a=$(snapshot "$2" --mtime)
	b=$(snapshot "$3" --mtime)
	if [ "$a" = "$b" ]; then
		pass "$1 ($(wc -l <<<"$a") entries)"
	else
		d=$(diff <(echo "$a") <(echo "$b") | head -n 30 || true)
		fail "$1" "diff expected got (first lines):" "$d"
	fi
}

# ---------------------------------------------------------------------------
# Leaks.
# ---------------------------------------------------------------------------

_default_dir() {
	# The data directory used without --dir and SDPOD_DIR, as --help says.
	# (Its exit status is not this helper's business: test-cli checks it.)
	local help
	help=$("$SDPOD" --help 2>/dev/null || true)
	# shellcheck disable=SC2016 # a literal $SDPOD_DIR
	sed -n 's/.*default: \$SDPOD_DIR, or \([^)]*\)).*/\1/p' <<<"$help"
}

# Entries of the host's temp dir with the names sdpod gives its staging
# (import-HEX, render-HEX, .tmp-HEX).  Only those: other people's and other
# tests' files come and go in the same place concurrently.
_host_tmp_suspects() {
	local x='[0-9a-f]'
	x="$x$x$x$x"
	x="$x$x$x$x"
	(cd "$_host_tmp" && find . -maxdepth 1 -mindepth 1 \
		\( -name "import-$x" -o -name "render-$x" -o -name ".tmp-$x" \) -printf '%P\n' | LC_ALL=C sort)
}

# pod_procs UUID: PIDs of processes whose environment names the pod (its
# PID 1 carries container_uuid=UUID).
pod_procs() {
	local p
	for p in /proc/[0-9]*; do
		grep -qzx "container_uuid=$1" "$p/environ" 2>/dev/null && echo "${p#/proc/}"
	done
	return 0
}

no_pod_procs() {
	assert_eq "no process of pod $1 is left" "" "$(pod_procs "$1")"
}

# no_pod_cgroup UUID: the cgroups the run entrypoint makes for a pod on a
# host without systemd are gone.
no_pod_cgroup() {
	assert_eq "no cgroup of pod $1 is left" "" "$(ls -d /sys/fs/cgroup/sdpod/"$1" /sys/fs/cgroup/*/sdpod/"$1" 2>/dev/null)"
}

# pod_pidns UUID: the inode of the pod's pid namespace (its PID 1's).
pod_pidns() {
	local pid
	pid=$(pod_procs "$1" | head -n1)
	[ -n "$pid" ] && stat -L -c %i "/proc/$pid/ns/pid" 2>/dev/null
	return 0
}

# pidns_procs INODE: PIDs of every process in that pid namespace that has
# not ended (a zombie waits for a reaper: on a host whose init reaps late,
# the pod's PID 1 may linger so), with one find, not a process per PID:
# quick enough to time with.
pidns_procs() {
	local p line
	# (find fails for the processes that end meanwhile.)
	for p in $({ find /proc/[0-9]*/ns/pid -maxdepth 0 -lname "pid:\[$1\]" 2>/dev/null || true; } | cut -d/ -f3); do
		{ read -r line <"/proc/$p/stat"; } 2>/dev/null || continue
		line=${line##*) }
		[ "${line%% *}" = Z ] || echo "$p"
	done
	return 0
}

# ---------------------------------------------------------------------------
# Pods in the background: `sdpod run` started by run_bg. A test that uses
# them sets
#     trap '_rc=$?; bg_pods_cleanup; (exit "$_rc"); _lib_on_exit' EXIT
# which halts what is left, kills what does not halt, and removes the pods
# (rm runs the stage1 gc entrypoint, which kills what a pod left behind).
# ---------------------------------------------------------------------------

BG_PIDS=()
bg_pods_cleanup() {
	set +e
	trap - ERR
	local pid i
	for pid in "${BG_PIDS[@]}"; do
		kill -TERM "$pid" 2>/dev/null
	done
	for pid in "${BG_PIDS[@]}"; do
		for i in $(seq 100); do
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.1
		done
		kill -KILL "$pid" 2>/dev/null
		wait "$pid" 2>/dev/null
	done
	"$SDPOD" --dir="$DATA" list --no-legend 2>/dev/null | while read -r uuid _; do
		"$SDPOD" --dir="$DATA" rm "$uuid" >/dev/null 2>&1
	done
}

# run_bg VAR ARGS...: `sd run --uuid-file=... ARGS` in the background; VAR
# gets the UUID, ${VAR}_PID the PID, ${VAR}_OUT the file with its output.
run_bg() {
	local var=$1 i
	shift
	rm -f "$T/uuid.$var"
	# Not through sd: $! must be sdpod's own PID (the run entrypoint's, nspawn's supervisor), not that
	# of a subshell running a function.
	"$SDPOD" --dir="$DATA" run --uuid-file="$T/uuid.$var" "$@" >"$T/out.$var" 2>&1 &
	BG_PIDS+=($!)
	printf -v "${var}_PID" '%s' "$!"
	printf -v "${var}_OUT" '%s' "$T/out.$var"
	for i in $(seq 100); do
		[ -s "$T/uuid.$var" ] && break
		sleep 0.05
	done
	[ -s "$T/uuid.$var" ] || die "sdpod run $* wrote no UUID: $(cat "$T/out.$var")"
	printf -v "$var" '%s' "$(cat "$T/uuid.$var")"
}

# wait_app UUID APP: until the app runs (enter can reach it), 20 s at most.
wait_app() {
	local i
	for i in $(seq 200); do
		sd enter --app="$2" "$1" true >/dev/null 2>&1 && return 0
		sleep 0.1
	done
	fail "app $2 of pod $1 started within 20 s"
	return 1
}

# wait_pid PID: waits for a background run and sets RC to its exit status.
wait_pid() {
	RC=0
	wait "$1" || RC=$?
}

# status_of UUID KEY: one line of `sd status`.
status_of() {
	sd status "$1" | sed -n "s/^$2=//p"
}


# A running pod's processes, seen from the host: its directory, the pid of
# its systemd-nspawn (the first field of POD/pid), and the pod's PID 1
# (nspawn's child).
pod_dir() { echo "$DATA/pods/run/$1"; }
nspawn_of() { cut -d' ' -f1 "$(pod_dir "$1")/pid"; }
leader_of() { local n; n=$(nspawn_of "$1"); awk '{print $1}' "/proc/$n/task/$n/children"; }
# as_pod_root UUID SCRIPT: SCRIPT run by the root of the pod's stage1, in
# every namespace of the pod's PID 1, user namespace included: the
# strongest attacker inside a pod. A busybox in the pod's /tmp runs it
# (the stage1 has no shell); $B names it.
as_pod_root() {
	local l
	l=$(leader_of "$1")
	cp /bin/busybox "/proc/$l/root/tmp/busybox"
	nsenter -t "$l" -a /tmp/busybox sh -c "B=/tmp/busybox; $2"
}

# import_probe_image: the image of the hostile tests, busybox with
# hostile-probe (tests/integration/hostile-probe.c, $HOSTILE_PROBE) at
# /bin/hostile-probe, imported as "busybox"; its tree at $IMG/rootfs.
import_probe_image() {
	[ -x "${HOSTILE_PROBE:-}" ] || die "HOSTILE_PROBE is not set (meson sets it)"
	IMG="$T/img"
	mkdir -p "$IMG"
	img_busybox_rootfs "$IMG/rootfs"
	install -m 0755 "$HOSTILE_PROBE" "$IMG/rootfs/bin/hostile-probe"
	img_oci_layout "$IMG/oci" latest "$IMG/rootfs"
	import_ok BB --name=busybox "$IMG/oci"
}

# busybox_layout: $IMG, in $T, with a busybox root file system ($IMG/rootfs)
# and an OCI layout of it ($IMG/oci, tag latest), for a test to import.
busybox_layout() {
	IMG="$T/img"
	mkdir -p "$IMG"
	img_busybox_rootfs "$IMG/rootfs"
	img_oci_layout "$IMG/oci" latest "$IMG/rootfs"
}

# wait_until SECONDS CMD...: until CMD succeeds, polled every 100 ms; for
# what a pod does on its own time (journald stores an app's output a moment
# after the app wrote it, an app restarts after its back-off).
wait_until() {
	local n=$(($1 * 10)) i
	shift
	for ((i = 0; i < n; i++)); do
		"$@" >/dev/null 2>&1 && return 0
		sleep 0.1
	done
	return 1
}

# wait_for DESC SECONDS CMD...: a check that CMD succeeds within SECONDS.
wait_for() {
	local desc=$1 secs=$2
	shift 2
	if wait_until "$secs" "$@"; then
		pass "$desc"
	else
		fail "$desc" "not within ${secs}s: $(_show_cmd "$@")"
		return 1
	fi
}

# status_is UUID KEY VALUE, status_has UUID KEY, journal_has TEXT UUID
# [JOURNAL ARGS...]: checks for wait_until, which runs them anew each time.
status_is() { [ "$(status_of "$1" "$2")" = "$3" ]; }
status_has() { [ -n "$(status_of "$1" "$2")" ]; }
journal_has() {
	local text=$1
	shift
	grep -qF -- "$text" <<<"$(sd journal "$@" --no-pager -o cat 2>/dev/null)"
}

# leak_begin: remember what leak_check compares against.
# The host's mounts (target, type, source) but the network namespaces that
# running pods keep in /run/sdpod/netns (netns.h): the pods of the tests
# that run meanwhile come and go there.
_leak_mounts_now() {
	cut -d' ' -f5,9,10 /proc/self/mountinfo | grep -v '^/run/sdpod/netns/' | sort
}

leak_begin() {
	_leak_mounts=$(wc -l </proc/self/mountinfo)
	_leak_mountinfo=$(_leak_mounts_now)
	_leak_staging=0
	if [ -d "$DATA/images/tmp" ]; then
		_leak_staging=$(find "$DATA/images/tmp" -mindepth 1 -maxdepth 1 | wc -l)
	fi
	_leak_tmp=$(_host_tmp_suspects)
	_leak_default_dir=$(_default_dir)
	_leak_default_existed=no
	[ -z "$_leak_default_dir" ] || [ ! -e "$_leak_default_dir" ] || _leak_default_existed=yes
}

# assert_mounts_unchanged WHAT: the host has the mounts it had at
# leak_begin; a failure lists what changed (target, type, source).
assert_mounts_unchanged() {
	local now
	now=$(_leak_mounts_now)
	if [ "$now" = "$_leak_mountinfo" ]; then
		pass "$1"
	else
		fail "$1" "$(diff <(echo "$_leak_mountinfo") <(echo "$now") | grep '^[<>]')"
	fi
}

# leak_check [DATA-DIR...]: no new mounts, no staging left in the data dirs
# (default: $DATA), nothing in the cwd, no new sdpod-looking files in the
# host's temp dir, no default data directory made.
leak_check() {
	local d n now
	assert_mounts_unchanged "leak: mount count unchanged"
	[ $# -gt 0 ] || set -- "$DATA"
	for d; do
		if [ -d "$d/images/tmp" ]; then
			n=$(find "$d/images/tmp" -mindepth 1 -maxdepth 1 | wc -l)
			# The first data dir may hold staging made on purpose before leak_begin.
			[ "$d" = "$DATA" ] || _leak_staging=0
			assert_eq "leak: no staging left in $(_show_cmd "$d")/images/tmp" "$_leak_staging" "$n"
		fi
	done
	assert_dir_empty "leak: nothing written to the working directory" "$T/cwd"
	assert_dir_empty "leak: nothing left in \$TMPDIR (\$T/tmp)" "$T/tmp"
	now=$(_host_tmp_suspects)
	assert_eq "leak: no new sdpod files in $_host_tmp" "$_leak_tmp" "$now"
	if [ "$_leak_default_existed" = no ] && [ -n "$_leak_default_dir" ]; then
		assert_file_absent "$_leak_default_dir"
	fi
}

# ---------------------------------------------------------------------------
# The store's invariants.
# ---------------------------------------------------------------------------

# record_digests FILE: the blob digests a record references (manifest,
# config, layers), one per line.
record_digests() {
	jq -r '[.manifest, .config, (.layers[].digest)] | .[] | select(. != null)' "$1"
}

# store_verify [DATA]: for every record: its blobs exist and hash to their
# names, its tree exists.  One check per image.
store_verify() {
	local data=${1:-$DATA} rec id hex dg blob bad n=0
	for rec in "$data"/images/db/*.json; do
		[ -e "$rec" ] || continue
		n=$((n + 1))
		id=$(jq -r .id "$rec")
		hex=${id#sha256:}
		bad=
		[ "$(basename "$rec" .json)" = "$hex" ] || bad+=" record-name-vs-id"
		for dg in $(record_digests "$rec"); do
			blob="$data/images/blobs/sha256/${dg#sha256:}"
			if [ ! -f "$blob" ]; then
				bad+=" missing:$dg"
			elif [ "$(sha256sum <"$blob" | cut -d' ' -f1)" != "${dg#sha256:}" ]; then
				bad+=" corrupt:$dg"
			fi
		done
		[ -d "$data/tree/$hex/rootfs" ] || bad+=" no-tree"
		if [ -z "$bad" ]; then
			pass "store: image ${hex:0:12} has all its blobs (hashes verified) and its tree"
		else
			fail "store: image ${hex:0:12} has all its blobs and its tree" "problems:$bad"
		fi
	done
	[ "$n" -gt 0 ] || echo "# store_verify: no images in $(_show_cmd "$data")"
}

# store_problems [DATA]: prints what store_verify would fail on, one line per
# problem, nothing when the store is sound (for checks in loops).
store_problems() {
	local data=${1:-$DATA} rec id hex dg blob
	for rec in "$data"/images/db/*.json; do
		[ -e "$rec" ] || continue
		id=$(jq -r .id "$rec" 2>/dev/null) || {
			echo "unreadable record $(basename "$rec")"
			continue
		}
		hex=${id#sha256:}
		for dg in $(record_digests "$rec"); do
			blob="$data/images/blobs/sha256/${dg#sha256:}"
			if [ ! -f "$blob" ]; then
				echo "${hex:0:12}: blob $dg missing"
			elif [ "$(sha256sum <"$blob" | cut -d' ' -f1)" != "${dg#sha256:}" ]; then
				echo "${hex:0:12}: blob $dg corrupt"
			fi
		done
		[ -d "$data/tree/$hex/rootfs" ] || echo "${hex:0:12}: no tree"
	done
}

# store_unreferenced [DATA]: prints blobs and trees no record references.
store_unreferenced() {
	local data=${1:-$DATA} rec f
	local -A refs=() trees=()
	for rec in "$data"/images/db/*.json; do
		[ -e "$rec" ] || continue
		for f in $(record_digests "$rec"); do refs[${f#sha256:}]=1; done
		f=$(jq -r .id "$rec")
		trees[${f#sha256:}]=1
	done
	for f in "$data"/images/blobs/sha256/*; do
		[ -e "$f" ] || continue
		[ -n "${refs[$(basename "$f")]:-}" ] || echo "blob $(basename "$f")"
	done
	for f in "$data"/tree/*; do
		[ -e "$f" ] || continue
		[ -n "${trees[$(basename "$f")]:-}" ] || echo "tree $(basename "$f")"
	done
}

# ---------------------------------------------------------------------------
# Hand-made OCI layouts (sha256sum + jq), for what images.sh does not build.
# ---------------------------------------------------------------------------

MT_OCI_MANIFEST=application/vnd.oci.image.manifest.v1+json
MT_OCI_CONFIG=application/vnd.oci.image.config.v1+json
MT_OCI_INDEX=application/vnd.oci.image.index.v1+json

# oci_put_blob LAYOUT FILE: copy FILE into LAYOUT's blobs; prints its digest.
oci_put_blob() {
	local h
	h=$(sha256sum <"$2" | cut -d' ' -f1)
	mkdir -p "$1/blobs/sha256"
	cp -- "$2" "$1/blobs/sha256/$h"
	echo "sha256:$h"
}

# oci_put_json LAYOUT JSON: store JSON (exactly these bytes) as a blob.
oci_put_json() {
	printf '%s' "$2" >"$T/.blob"
	oci_put_blob "$1" "$T/.blob"
	rm -f "$T/.blob"
}

# oci_blob LAYOUT DIGEST: the path of a blob.
oci_blob() {
	echo "$1/blobs/sha256/${2#sha256:}"
}

# oci_manifest_digest LAYOUT: digest of the first manifest in index.json.
oci_manifest_digest() {
	jq -r '.manifests[0].digest' "$1/index.json"
}

# oci_layout_new LAYOUT ARCH LAYER-FILE...: a one-image layout (tag
# "latest") with the given layers (.tar, .tar.gz or .tar.zst) and a minimal
# config.  The index entry carries no platform: add one with oci_rewrite.
# (A layer that does not decompress gets the diff_id of what did.)
oci_layout_new() {
	local layout=$1 arch=$2 l mt diff d layers='[]' diffs='[]' config cd manifest md
	shift 2
	mkdir -p "$layout/blobs/sha256"
	printf '{"imageLayoutVersion":"1.0.0"}' >"$layout/oci-layout"
	for l; do
		case "$l" in
		*.tar.gz) mt=application/vnd.oci.image.layer.v1.tar+gzip diff=$({ gzip -dc "$l" 2>/dev/null || true; } | sha256sum) ;;
		*.tar.zst) mt=application/vnd.oci.image.layer.v1.tar+zstd diff=$({ zstd -qdc "$l" 2>/dev/null || true; } | sha256sum) ;;
		*.tar) mt=application/vnd.oci.image.layer.v1.tar diff=$(sha256sum <"$l") ;;
		*) die "oci_layout_new: unknown layer type: $l" ;;
		esac
		d=$(oci_put_blob "$layout" "$l")
		layers=$(jq -c --arg mt "$mt" --arg d "$d" --argjson s "$(stat -c %s "$l")" \
			'. + [{mediaType: $mt, digest: $d, size: $s}]' <<<"$layers")
		diffs=$(jq -c --arg d "sha256:${diff%% *}" '. + [$d]' <<<"$diffs")
	done
	config=$(jq -nc --arg arch "$arch" --argjson diffs "$diffs" \
		'{created: "2020-01-01T00:00:00Z", architecture: $arch, os: "linux",
		  config: {Entrypoint: ["/bin/sh"], Env: ["PATH=/bin"]},
		  rootfs: {type: "layers", diff_ids: $diffs}}')
	cd=$(oci_put_json "$layout" "$config")
	manifest=$(jq -nc --arg mt "$MT_OCI_CONFIG" --arg cd "$cd" --argjson cs "${#config}" --argjson layers "$layers" \
		'{schemaVersion: 2, mediaType: "'"$MT_OCI_MANIFEST"'", config: {mediaType: $mt, digest: $cd, size: $cs}, layers: $layers}')
	md=$(oci_put_json "$layout" "$manifest")
	jq -nc --arg md "$md" --argjson ms "${#manifest}" \
		'{schemaVersion: 2, mediaType: "'"$MT_OCI_INDEX"'", manifests: [{mediaType: "'"$MT_OCI_MANIFEST"'", digest: $md, size: $ms,
		  annotations: {"org.opencontainers.image.ref.name": "latest"}}]}' >"$layout/index.json"
}

# oci_rewrite LAYOUT CONFIG-FILTER MANIFEST-FILTER [INDEX-FILTER]: change
# the first image of a layout with jq filters ("." for no change) and keep
# every digest and size consistent: a new config blob makes a new manifest,
# which index.json then points to.  Old blobs stay (layouts may hold
# unreferenced blobs).  Prints the new manifest digest.
oci_rewrite() {
	local layout=$1 cf=$2 mf=$3 xf=${4:-.} md manifest config cd
	md=$(oci_manifest_digest "$layout")
	manifest=$(jq -c . "$(oci_blob "$layout" "$md")")
	if [ "$cf" != . ]; then
		config=$(jq -c "$cf" "$(oci_blob "$layout" "$(jq -r .config.digest <<<"$manifest")")")
		cd=$(oci_put_json "$layout" "$config")
		manifest=$(jq -c --arg d "$cd" --argjson s "${#config}" '.config.digest = $d | .config.size = $s' <<<"$manifest")
	fi
	manifest=$(jq -c "$mf" <<<"$manifest")
	md=$(oci_put_json "$layout" "$manifest")
	jq -c --arg d "$md" --argjson s "${#manifest}" \
		".manifests[0].digest = \$d | .manifests[0].size = \$s | $xf" "$layout/index.json" >"$layout/index.json.new"
	mv -- "$layout/index.json.new" "$layout/index.json"
	echo "$md"
}

# oci_variant SRC DST LABEL: a copy of layout SRC that is another image (its
# config carries LABEL) with the same layers.  Prints its manifest digest,
# which is the id sdpod gives it.
oci_variant() {
	rm -rf -- "$2"
	cp -a -- "$1" "$2"
	oci_rewrite "$2" ".config.Labels[\"sdpod.test.variant\"] = \"$3\"" .
}

# is_id TEXT: TEXT is an image id.
is_id() {
	[[ "$1" =~ ^sha256:[0-9a-f]{64}$ ]]
}

# import_ok VAR ARGS...: `sd image import ARGS` must succeed and print an id,
# which is stored in VAR.
import_ok() {
	local var=$1
	shift
	assert_exit 0 sd image import "$@"
	if is_id "$OUT"; then
		pass "import printed an id: $OUT"
	else
		fail "import printed an id" "got: $OUT"
	fi
	printf -v "$var" '%s' "$OUT"
}

# host_arch: this machine's architecture as OCI names it (sdpod's default).
host_arch() {
	case "$(uname -m)" in
	x86_64) echo amd64 ;;
	aarch64) echo arm64 ;;
	i?86) echo 386 ;;
	arm*) echo arm ;;
	*) uname -m ;;
	esac
}

# require_amd64: images.sh builds linux/amd64 images, which sdpod imports by
# default only on an amd64 host.
require_amd64() {
	[ "$(host_arch)" = amd64 ] || skip "images.sh builds amd64 images; this host is $(host_arch)"
}

# tiny_layer OUT.tar NAME CONTENT: a one-file tar layer, made with GNU tar
# (no umoci needed), reproducible.
tiny_layer() {
	local src="$T/.tiny.$$"
	rm -rf -- "$src"
	mkdir -p "$src/etc"
	printf '%s\n' "$3" >"$src/etc/$2"
	tar --create --file="$1" --format=gnu --sort=name --numeric-owner --owner=0 --group=0 \
		--mtime=@1577836800 -C "$src" etc
	rm -rf -- "$src"
}

# ---------------------------------------------------------------------------
# The examples of the man pages, run as they are written.
# ---------------------------------------------------------------------------

MAN_DIR=$(cd "$LIB_DIR/../../man" && pwd)

# man_commands PAGE: the commands of PAGE's examples (man/PAGE.scd), each
# followed by a \036 byte: the lines of its ``` blocks that begin with a
# "$ " or "# " prompt, without it, with the lines a trailing backslash
# continues, and scdoc's "\\" read as "\".
man_commands() {
	awk '
	/^```/ { block = !block; next }
	!block { next }
	cont { cmd = cmd "\n" $0 }
	!cont && /^[$#] / { cmd = substr($0, 3) }
	!cont && !/^[$#] / { next }
	{
		cont = /\\\\$/
		if (!cont) { gsub(/\\\\/, "\\", cmd); printf "%s\036", cmd }
	}' "$MAN_DIR/$1.scd"
}

_man_shows() {
	local c
	while IFS= read -r -d $'\036' c; do
		[ "$c" = "$2" ] && return 0
	done < <(man_commands "$1")
	return 1
}

# example PAGE CMD [FROM TO]...: runs CMD, an example command of the man
# page PAGE exactly as it shows it, but for each FROM replaced by TO (a UUID
# or image id that a run cannot reproduce, a path of the host). It runs in
# this shell, so what it assigns stays for the next one; OUT, ERR and RC are
# what it printed and its exit status. A CMD that PAGE does not show is a
# failure: an example changed, and so must its test. With EXAMPLES_SHOW=1
# it prints the output too, to copy into the page.
example() {
	local page=$1 cmd=$2 run=$2
	shift 2
	while [ $# -ge 2 ]; do
		run=${run//"$1"/"$2"}
		shift 2
	done
	_shown "$page" "$cmd" || return 0
	# Files of its own (a command put in the background writes on), also
	# when it runs in a subshell.
	_examples=$((${_examples:-0} + 1))
	local out="$T/example.$BASHPID.$_examples.out" err="$T/example.$BASHPID.$_examples.err"
	# An example that waits for what an earlier one failed to do would
	# wait for ever: after 120 s the shell it runs in gives up.
	local shell=$BASHPID watchdog keep
	exec {keep}>&1
	trap 'exec >&"$keep" 2>&1; fail "$page example still running after 120 s: $cmd"; exit 1' ALRM
	# Without the test's output: a watchdog killed before its TERM trap is
	# set leaves its sleep behind, which must not hold meson's pipe (the
	# keep fd too) for two minutes.
	(
		trap 'kill "$nap" 2>/dev/null; exit 0' TERM
		sleep 120 &
		nap=$!
		wait "$nap" && kill -ALRM "$shell"
	) >/dev/null 2>&1 {keep}>&- &
	watchdog=$!
	RC=0
	{ eval "$run"; } >"$out" 2>"$err" </dev/null || RC=$?
	kill "$watchdog" 2>/dev/null || true
	wait "$watchdog" 2>/dev/null || true
	trap - ALRM
	exec {keep}>&-
	# shellcheck disable=SC2034 # for the caller
	OUT=$(cat "$out") ERR=$(cat "$err")
	no_sanitizer_report "$cmd" "$err"
	# EXAMPLES_SHOW=1: what it printed, for the page's author.
	[ -z "${EXAMPLES_SHOW:-}" ] || sed "1i # $ ${run//$'\n'/ }" "$out" "$err" | sed 's/^/#> /'
}

# shown PAGE CMD: passes when PAGE shows CMD as an example command, which
# counts as run: for a command checked otherwise (an "echo $?" after one
# whose exit status a test asserts).
shown() { _shown "$@" || true; }

_shown() {
	printf '%s\036' "$2" >>"$T/.examples.$1"
	if _man_shows "$1" "$2"; then
		pass "$1 shows: $2"
	else
		fail "$1 shows: $2" "no such command in man/$1.scd"
		return 1
	fi
}

# all_examples_run PAGE: every example command of PAGE was run (or shown).
all_examples_run() {
	local c missing=() done
	done=$(cat "$T/.examples.$1" 2>/dev/null || true)
	while IFS= read -r -d $'\036' c; do
		[[ $'\036'"$done" == *$'\036'"$c"$'\036'* ]] || missing+=("$c")
	done < <(man_commands "$1")
	if [ ${#missing[@]} = 0 ]; then
		pass "every example command of $1 was run"
	else
		fail "every example command of $1 was run" "${missing[@]/#/not run: }"
	fi
}
