#!/bin/bash
#
# test-hostile-apps.sh - apps of one pod against each other and against the
# pod's systemd (sdpod-security(7), APPS: "one app from another"). Each
# app, and each command podapp exec runs, is a Landlock domain of its own:
# a process reaches by ptrace(2), process_vm_readv(2) and /proc/PID/{mem,
# root,environ} only the processes of its own domain (its own descendants),
# whatever its user and capabilities; --cap-add=SYS_PTRACE included, so no
# app reaches the pod's PID 1 (the stage1's root, with every capability of
# the pod's user namespace and none of an app's confinement).
#
# hostile-probe peek makes the attempts (tests/integration/hostile-probe.c);
# the victims carry a secret in their environment.

. "$(dirname "$0")/lib.sh"

use_real_images
require_tool systemd-nspawn systemd-container
[ -n "$PODAPP" ] || die "podapp not found (PODAPP_BIN)"

remove_pods_on_exit
leak_begin

echo "# the image: busybox and the probe"
import_probe_image

# probe_result NAME TEXT: what hostile-probe said about NAME in TEXT.
probe_result() { grep -o "^$1=[A-Za-z0-9_:-]*" <<<"$2" | head -1 | cut -d= -f2; }
# ATTEMPTS of peek; a refusal is EPERM (ptrace, process_vm_readv) or
# EACCES (the /proc files): the kernel's answer, not the filter's.
ATTEMPTS="ptrace vmread mem root environ"
# refused_all WHAT TEXT / reached WHAT NAME TEXT
refused_all() {
	local a
	for a in $ATTEMPTS; do
		assert_match "$1: $a is refused" '^(EPERM|EACCES)$' "$(probe_result "$a" "$2")"
	done
}
reached() { assert_match "$1: $2" '^allowed' "$(probe_result "$2" "$3")"; }
# peek APP [ARGS...]: hostile-probe peek ARGS run by podapp exec in APP.
peek() { local app=$1; shift; assert_exit 0 pa exec "$P" --app="$app" -- hostile-probe peek "$@"; }
pid_of() { pa exec "$P" --app=a0 -- hostile-probe find "$1" | sed -n 's/^pids=\([0-9]*\).*/\1/p'; }

# ---------------------------------------------------------------------------
echo "# a pod of victims and attackers"
# ---------------------------------------------------------------------------
assert_exit 0 pa sandbox --keep-on-app-failure
P=$OUT
add() { local app=$1; shift; assert_exit 0 pa add "$P" --app="$app" busybox "$@"; assert_exit 0 pa start "$P" --app="$app"; }
add b0 --user=0 --set-env=SECRET=b0-secret --exec=/bin/sleep -- 4240
add b1 --user=1000 --set-env=SECRET=b1-secret --exec=/bin/sleep -- 4241
add a0 --user=0 --exec=/bin/sleep -- 4250
add a1 --user=1000 --exec=/bin/sleep -- 4251
assert_exit 0 pa add "$P" --app=t busybox --user=0 --cap-add=SYS_PTRACE --exec=/bin/sleep -- 4260
echo "# --cap-add=SYS_PTRACE said: $ERR"
assert_contains "--cap-add=SYS_PTRACE says what it gives" "$ERR" "SYS_PTRACE"
assert_exit 0 pa start "$P" --app=t
# An app whose own main process attacks (not a podapp exec command).
add m --user=0 --exec=/bin/sh -- -c \
	'sleep 1; for p in $(hostile-probe find 4240 | cut -d= -f2); do hostile-probe peek $p; done; echo m-done; exec sleep 4270'
B0=$(pid_of 4240)
B1=$(pid_of 4241)
[ -n "$B0" ] && [ -n "$B1" ] || die "the victims' PIDs were not found"

# ---------------------------------------------------------------------------
echo "# one app against another"
# ---------------------------------------------------------------------------
peek a0 "$B0"
echo "# root in a0 against root in b0: $(tr '\n' ' ' <<<"$OUT")"
refused_all "root in an app, against root in another" "$OUT"
assert_not_contains "b0's secret stays b0's" "$OUT" "b0-secret"
peek a1 "$B1"
refused_all "uid 1000 in an app, against uid 1000 in another" "$OUT"
peek a0 -u 1000 "$B1"
refused_all "root in an app become uid 1000, against uid 1000 in another" "$OUT"
peek a1 "$B0"
refused_all "uid 1000 in an app, against root in another" "$OUT"
wait_for "the app m attacked b0 from its main process" 20 journal_has m-done "$P"
mlog=$(sd journal "$P" --no-pager -o cat 2>/dev/null | grep -E '^(ptrace|vmread|mem|root|environ)=' || true)
echo "# m's main process against b0: $(tr '\n' ' ' <<<"$mlog")"
refused_all "an app's main process, against another app" "$mlog"

# ---------------------------------------------------------------------------
echo "# --cap-add=SYS_PTRACE: the app's own processes, not the pod's"
# ---------------------------------------------------------------------------
peek t 1
echo "# t (SYS_PTRACE) against the pod's PID 1: $(tr '\n' ' ' <<<"$OUT")"
refused_all "an app with SYS_PTRACE, against the pod's systemd (PID 1)" "$OUT"
peek t "$B0"
refused_all "an app with SYS_PTRACE, against another app" "$OUT"
peek a0 1
refused_all "root in an app, against the pod's systemd" "$OUT"

# ---------------------------------------------------------------------------
echo "# within an app all is as before"
# ---------------------------------------------------------------------------
peek a0 child
for a in $ATTEMPTS; do reached "an app's own child" "$a" "$OUT"; done
peek t child
for a in $ATTEMPTS; do reached "an app with SYS_PTRACE, its own child" "$a" "$OUT"; done
peek a1 child
for a in $ATTEMPTS; do reached "uid 1000, its own child" "$a" "$OUT"; done
# The domain handles renames and links between directories (any domain
# refuses them unless it gives them back): they work as before.
assert_exit 0 pa exec "$P" --app=a0 -- /bin/sh -c \
	'mkdir -p /tmp/x/d /tmp/y && echo hi >/tmp/x/f && mv /tmp/x/f /tmp/y/f && mv /tmp/x/d /tmp/y/d && ln /tmp/y/f /tmp/x/g && cat /tmp/x/g'
assert_eq "renames and links between directories work in an app" hi "$OUT"

assert_exit 0 sd stop "$P"
assert_exit 0 sd rm "$P"

# ---------------------------------------------------------------------------
echo "# without Landlock: an app with SYS_PTRACE does not run, others warn"
# ---------------------------------------------------------------------------
# A filter that refuses the Landlock calls stands in for a kernel without
# Landlock (the operator's manifest, edited as an operator may).
no_landlock() {
	local u m
	u=$(sd prepare busybox --user=0 "$@" --exec=/bin/sh -- -c 'echo app-ran')
	m="$DATA/pods/prepared/$u/pod"
	jq '.apps[0].app.isolators += [{"name": "os/linux/seccomp-remove-set", "value": {"set": ["landlock_create_ruleset"], "errno": "EPERM"}}]' \
		"$m" >"$T/pod.json"
	cat "$T/pod.json" >"$m"
	echo "$u"
}
U=$(no_landlock --cap-add=SYS_PTRACE 2>/dev/null)
assert_exit 126 sd run-prepared "$U"
assert_not_contains "with SYS_PTRACE and no Landlock the app does not run" "$OUT" "app-ran"
assert_contains "and says why" "$OUT$ERR" "could trace the pod's PID 1, not running it"
sd rm "$U" >/dev/null
U=$(no_landlock)
assert_exit 0 sd run-prepared "$U"
assert_contains "without SYS_PTRACE it runs" "$OUT" "app-ran"
assert_contains "with a warning" "$OUT$ERR" "no Landlock domain"
sd rm "$U" >/dev/null
leak_check
