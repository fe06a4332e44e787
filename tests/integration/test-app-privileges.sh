#!/bin/bash
#
# test-app-privileges.sh - sdpod run --no-new-privileges=no for an app that
# runs as a user other than root: its set-user-ID root program gains root
# (the pod's), as under runc with allowPrivilegeEscalation; with the
# default (yes) it gains nothing and the app has NoNewPrivileges. The
# app's process runs as its user, with no capability, and its bounding set
# is the app's (app-domain took back what it needed to change the user).

. "$(dirname "$0")/lib.sh"

use_real_images
require_tool systemd-nspawn systemd-container
require_tool "${CC:-cc}" gcc

# A sandbox left by a failed check: stopped and removed.
cleanup_sandbox() { [ -z "${U:-}" ] || { sd stop "$U"; sd rm "$U"; } >/dev/null 2>&1; bg_pods_cleanup; }
trap '_rc=$?; set +e; trap - ERR; cleanup_sandbox; (exit "$_rc"); _lib_on_exit' EXIT
leak_begin

P="$T/probe"
mkdir -p "$P"
"${CC:-cc}" -static -O2 -Wall -Werror -D_GNU_SOURCE -o "$P/spec-probe" "$LIB_DIR/spec-probe.c" ||
	die "cannot build spec-probe"
img_busybox_rootfs "$P/rootfs"
install -o 0 -g 0 -m 4755 "$P/spec-probe" "$P/rootfs/usr/bin/spec-probe"
img_oci_layout "$P/oci" latest "$P/rootfs"
import_ok PROBE --name=probe "$P/oci"

# Both apps in one sandbox: each writes what its main process saw, then
# waits; podapp exec reads it and looks again (an exec has the app's
# identity and confinement).
SHOW='id -u; spec-probe euid; grep -E "^(NoNewPrivs|CapEff|CapBnd)" /proc/self/status'
assert_exit 0 pa sandbox
U=$OUT
assert_exit 0 pa add "$U" --app=may probe --user=1000 --group=1000 --no-new-privileges=no \
	--exec=/bin/sh -- -c "{ $SHOW; } >/tmp/seen 2>&1; exec sleep 1000"
assert_exit 0 pa add "$U" --app=may-not probe --user=1000 --group=1000 \
	--exec=/bin/sh -- -c "{ $SHOW; } >/tmp/seen 2>&1; exec sleep 1000"
assert_exit 0 pa start "$U" --app=may
assert_exit 0 pa start "$U" --app=may-not
seen() { pa exec "$U" --app="$1" -- /bin/cat /tmp/seen 2>/dev/null; }
wait_for "the apps ran" 20 seen may-not || true
wait_until 20 seen may || true
may=$(seen may)
may_not=$(seen may-not)
echo "# --no-new-privileges=no: $(tr '\n' ' ' <<<"$may")"
echo "# default: $(tr '\n' ' ' <<<"$may_not")"
check_may() {
	local what=$1 text=$2
	assert_match "$what --no-new-privileges=no: the app runs as its user" '^1000'$'\n' "$text"
	assert_contains "$what --no-new-privileges=no: its set-user-ID program runs as root" "$text" "euid=0"
	assert_contains "$what --no-new-privileges=no: no NoNewPrivileges" "$text" "NoNewPrivs:	0"
	assert_contains "$what --no-new-privileges=no: the process has no capability" "$text" "CapEff:	0000000000000000"
	local bnd
	bnd=$(sed -n 's/^CapBnd:\t//p' <<<"$text")
	assert_eq "$what --no-new-privileges=no: no CAP_SYS_ADMIN left in the bounding set" 0 $(((0x${bnd:-0} >> 21) & 1))
	assert_eq "$what --no-new-privileges=no: the app's own bounding set (SETUID kept)" 1 $(((0x${bnd:-0} >> 7) & 1))
}
check_may "main process:" "$may"
assert_match "default: the app runs as its user" '^1000'$'\n' "$may_not"
assert_contains "default: its set-user-ID program gains nothing" "$may_not" "euid=1000"
assert_contains "default: NoNewPrivileges" "$may_not" "NoNewPrivs:	1"
pa exec "$U" --app=may -- /bin/sh -c "$SHOW" >"$T/exec.out" 2>&1 || true
check_may "podapp exec:" "$(cat "$T/exec.out")"
assert_exit 0 sd stop "$U"
assert_exit 0 sd rm "$U"
U=

leak_check
