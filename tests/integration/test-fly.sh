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
assert_contains "a missing program is refused before the pod runs" "$OUT" "not found in the app's root"
assert_exit 0 sd status "$U"
assert_exit 0 sd list
assert_contains "the nspawn flavor is the default" "$(sd prepare busybox --exec=/bin/true | xargs -I{} "$SDPOD" --dir="$DATA" status {})" "stage1=nspawn"
