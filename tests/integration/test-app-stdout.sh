#!/bin/bash
#
# test-app-stdout.sh - an app's stdout and stderr open by path (issue 26,
# item 1): images link their logs to /dev/stdout and /dev/stderr (nginx,
# httpd), and a journal stream socket does not open (ENXIO). Apps get
# pipes whose other end reaches the journal (app-stdio, sdpod-stage1(7)):
# /dev/stdout, /dev/stderr, /proc/self/fd/1 open; the lines are the app's
# in the journal (its SyslogIdentifier, unit and priorities, as before) and
# on the console of sdpod run; nothing is lost when the app exits.

. "$(dirname "$0")/lib.sh"

use_real_images
require_tool systemd-nspawn systemd-container

trap '_rc=$?; bg_pods_cleanup; remove_all_pods; (exit "$_rc"); _lib_on_exit' EXIT
leak_begin

busybox_layout
import_ok BB --name=busybox "$IMG/oci"

# Each step exits with its own code when it fails: the exit status says
# which open failed.
WRITER='echo out-dev-stdout >/dev/stdout || exit 11
echo err-dev-stderr >/dev/stderr || exit 12
echo out-proc-fd1 >/proc/self/fd/1 || exit 13
exec 3>/dev/stderr || exit 14
echo err-fd3 >&3
echo plain-out
echo plain-err >&2
echo "<3>prio-err"'

# ---------------------------------------------------------------------------
echo "# sdpod run: the opens work, the console shows the lines"
# ---------------------------------------------------------------------------
assert_exit 0 sd run busybox --app=writer --exec=/bin/sh -- -c "$WRITER"
for l in out-dev-stdout err-dev-stderr out-proc-fd1 err-fd3 plain-out plain-err; do
	assert_contains "sdpod run shows $l" "$OUT$ERR" "$l"
done

# ---------------------------------------------------------------------------
echo "# a journal that is slow when the pod ends: the last lines still shown"
# ---------------------------------------------------------------------------
# An app's last lines wait in journald's sockets after the app has exited;
# a pod that ended before journald read them lost them (seen in CI under
# load: a run's output was only "Shutting down."). Its end now waits for
# journald (Synchronize, 5 s at most). The pod's journald is stopped from
# the host (SIGSTOP) from its start until 2 s later, while the app writes
# and exits after 1 s.
# stop_journald UUIDFILE SECONDS: in the background, the journald of the
# pod whose UUID the file gets, stopped as soon as it runs, for SECONDS.
stop_journald() {
	local i p u
	for i in $(seq 200); do
		u=$(cat "$1" 2>/dev/null) && [ -n "$u" ] && for p in $(pgrep -x systemd-journal); do
			if grep -qs -- "/$u/.*systemd-journald.service" "/proc/$p/cgroup"; then
				kill -STOP "$p" || return 1
				# Until then by the clock (the pod's end waits 5 s at
				# most), or until the pod's end took it.
				local end=$((${EPOCHREALTIME/./} + $2 * 1000000))
				while ((${EPOCHREALTIME/./} < end)); do
					[ -d "/proc/$p" ] || return 0
					sleep 0.1
				done
				kill -CONT "$p" 2>/dev/null
				return 0
			fi
		done
		sleep 0.05
	done
	echo "no journald of pod ${u:-?} found" >&2
	return 1
}
for i in 1 2 3; do
	rm -f "$T/slow.uuid"
	stop_journald "$T/slow.uuid" 2 &
	STOPPER=$!
	assert_exit 0 sd run --net=none --uuid-file="$T/slow.uuid" busybox --app=slow --exec=/bin/sh -- -c \
		"sleep 1; echo slow-line-$i; echo slow-err-$i >&2"
	check "run $i: the pod's journald was stopped" wait "$STOPPER"
	assert_contains "run $i: the last stdout line is shown" "$OUT$ERR" "slow-line-$i"
	assert_contains "run $i: the last stderr line is shown" "$OUT$ERR" "slow-err-$i"
	assert_contains "run $i: and the journal has it" "$(sd journal "$(cat "$T/slow.uuid")" --app=slow -o cat 2>&1)" \
		"slow-line-$i"
done
# A journald that never answers holds the pod's end 5 s at most: stopped
# for 60 s, the run ends well before.
rm -f "$T/slow.uuid"
stop_journald "$T/slow.uuid" 60 &
STOPPER=$!
START=$(date +%s)
assert_exit 0 sd run --net=none --uuid-file="$T/slow.uuid" busybox --app=slow --exec=/bin/true
assert_eq "a journald stopped for good: the pod ends within 20 s" yes "$( (($(date +%s) - START < 20)) && echo yes)"
check "the pod's journald was stopped, and went with the pod" wait "$STOPPER"

# ---------------------------------------------------------------------------
echo "# the journal: the app's identifier, unit and priorities"
# ---------------------------------------------------------------------------
assert_exit 0 pa sandbox --keep-on-app-failure
S=$OUT
assert_exit 0 pa add "$S" --app=writer busybox --exec=/bin/sh -- -c "$WRITER"
assert_exit 0 pa add "$S" --app=lines busybox --exec=/bin/sh -- -c 'seq 1 10000; echo lines-done'
assert_exit 0 pa start "$S" --app=writer
assert_exit 0 pa start "$S" --app=lines
check "the writer exited 0" wait_until 20 status_is "$S" app-writer 0
check "the 10,000-line app exited 0" wait_until 20 status_is "$S" app-lines 0
check "the last line is in the journal" wait_until 20 journal_has lines-done "$S" --app=lines

J=$(sd journal "$S" --app=writer --no-pager -o json 2>/dev/null)
# MESSAGE PRIORITY SYSLOG_IDENTIFIER _SYSTEMD_UNIT of the line MSG
fields() {
	jq -r --arg m "$1" 'select(.MESSAGE == $m) | [.PRIORITY, .SYSLOG_IDENTIFIER, ._SYSTEMD_UNIT] | join(" ")' <<<"$J" | head -1
}
for l in out-dev-stdout err-dev-stderr out-proc-fd1 err-fd3 plain-out plain-err; do
	assert_eq "$l: info, the app's identifier and unit" "6 writer app@writer.service" "$(fields "$l")"
done
assert_eq "a <3> prefix is still the line's priority" "3 writer app@writer.service" "$(fields prio-err)"
assert_eq "the lines keep their order" "out-dev-stdout err-dev-stderr out-proc-fd1 err-fd3 plain-out plain-err prio-err" \
	"$(jq -r 'select(.SYSLOG_IDENTIFIER == "writer") | .MESSAGE' <<<"$J" | tr '\n' ' ' | sed 's/ $//')"

# All 10,000, in order, nothing lost when the app exited at once.
L=$(sd journal "$S" --app=lines --no-pager -o json 2>/dev/null |
	jq -r 'select(.SYSLOG_IDENTIFIER == "lines") | .MESSAGE')
assert_eq "all 10,000 lines are in the journal" 10000 "$(grep -cx '[0-9]*' <<<"$L")"
assert_eq "in order" "$(seq 1 10000 | md5sum)" "$(grep -x '[0-9]*' <<<"$L" | md5sum)"

# Only stdout given (a host file, as podapp add --stdout and containerd
# give): the app writes to it as before, and stderr still gets its pipe.
# (The file itself is the host's, made 0600 for the host's root: the app
# writes to the descriptor, but /dev/stdout does not reopen it, as before.)
# And a user that is not root opens its own pipes.
assert_exit 0 pa add "$S" --app=half busybox --stdout="$T/half.txt" --exec=/bin/sh -- -c \
	'echo half-out; echo half-err >/dev/stderr || exit 12'
assert_exit 0 pa add "$S" --app=nobody busybox --user=65534 --exec=/bin/sh -- -c \
	'echo nobody-out >/dev/stdout || exit 11; echo nobody-err >/dev/stderr || exit 12'
assert_exit 0 pa start "$S" --app=half
assert_exit 0 pa start "$S" --app=nobody
check "--stdout to a file: the app exited 0" wait_until 20 status_is "$S" app-half 0
check "a user that is not root: the app exited 0" wait_until 20 status_is "$S" app-nobody 0
assert_eq "--stdout to a file: the file has stdout" half-out "$(cat "$T/half.txt" 2>/dev/null)"
check "--stdout to a file: stderr is in the journal" wait_until 10 journal_has half-err "$S" --app=half
check "a user that is not root: its stdout is in the journal" wait_until 10 journal_has nobody-out "$S" --app=nobody
check "a user that is not root: its stderr is in the journal" wait_until 10 journal_has nobody-err "$S" --app=nobody

assert_exit 0 sd stop "$S"
assert_exit 0 sd rm "$S"
leak_check
