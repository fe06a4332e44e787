#!/bin/bash
#
# test-tty.sh - terminals: sdpod enter -t/-i and podapp exec -t/-i, driven
# from a real pseudo-terminal (pty-session.py) as a user at a terminal
# would: the command sees a terminal of the user's size and follows its
# resizing, Ctrl-C interrupts it, its exit status comes through, the
# user's terminal mode is restored. And what a hostile pod tries: keys
# injected with TIOCSTI, its settings changed, output that floods, a pty
# it never closes, dying under the user: none of it reaches the user's
# terminal or keeps the user waiting.

. "$(dirname "$0")/lib.sh"

use_real_images
require_tool systemd-nspawn systemd-container
require_tool python3
[ -x "${TTY_PROBE:-}" ] || die "TTY_PROBE is not set (meson sets it)"
[ -n "$PODAPP" ] || die "podapp not found (PODAPP_BIN)"

HOLDERS=()
trap '_rc=$?; set +e; for p in "${HOLDERS[@]}"; do kill -KILL "$p" 2>/dev/null; wait "$p" 2>/dev/null; done;
	bg_pods_cleanup; remove_all_pods; (exit "$_rc"); _lib_on_exit' EXIT
leak_begin

IMG="$T/img"
mkdir "$IMG"
img_busybox_rootfs "$IMG/rootfs"
install -m 0755 "$TTY_PROBE" "$IMG/rootfs/bin/tty-probe"
img_oci_layout "$IMG/oci" latest "$IMG/rootfs"
import_ok BB --name=busybox "$IMG/oci"

SESSION="$LIB_DIR/pty-session.py"
# at_terminal STEP... -- CMD...: CMD run on a new pty (pty-session.py);
# $OUT its output, $RC the session's status (3: it timed out), $EXIT the
# command's, $LEFTOVER what was left unread in the terminal's input.
at_terminal() {
	RC=0
	OUT=$(python3 "$SESSION" "$@" 2>"$T/session.err") || RC=$?
	EXIT=$(sed -n 's/^EXIT=//p' <<<"$OUT" | tail -n1)
	LEFTOVER=$(sed -n 's/^LEFTOVER=//p' <<<"$OUT" | tail -n1)
	MAXRSS=$(sed -n 's/^MAXRSS=//p' <<<"$OUT" | tail -n1)
	[ "$RC" = 0 ] || { echo "# pty-session: $(cat "$T/session.err")"; sed 's/^/#   /' <<<"$OUT"; }
	# What sdpod says on the terminal is in the output.
	printf '%s\n' "$OUT" >"$T/session.out"
	no_sanitizer_report "at a terminal: ${*: -1}" "$T/session.out"
}
# In the session: the terminal's mode before and after, around CMD, whose
# status passes through.
MODES="$T/modes"
around() {
	printf 'stty -g >%q.before; %s; rc=$?; stty -g >%q.after; exit $rc' "$MODES" "$*" "$MODES"
}
modes_kept() {
	assert_eq "$1: the terminal's mode is restored" "$(cat "$MODES.before")" "$(cat "$MODES.after")"
}
ENTER="$SDPOD --dir=$DATA enter"
EXEC="$PODAPP --dir=$DATA exec"

run_bg P busybox --app=sh --exec=/bin/sleep -- 100000
wait_app "$P" sh

# ---------------------------------------------------------------------------
echo "# -t -i: a terminal of the user's size, resized with it; the status passes through"
# ---------------------------------------------------------------------------
at_terminal --rows=33 --cols=101 expect:READY resize:50:120 sleep:0.5 'send:go\r' expect:DONE -- \
	sh -c "$(around "$ENTER -t -i $P sh -c 'tty; stty size; echo READY; read x; stty size; echo DONE; exit 42'")"
assert_eq "the session ended" 0 "$RC"
assert_eq "the exit status comes through" 42 "$EXIT"
assert_match "the command has a terminal of the pod's" '/dev/pts/[0-9]+' "$OUT"
assert_contains "it has the user's size" "$OUT" "33 101"
assert_contains "it follows a resize (SIGWINCH)" "$OUT" "50 120"
assert_contains "typed keys reach it" "$OUT" "go"
modes_kept "-t -i"
assert_eq "nothing is left in the user's input" "b''" "$LEFTOVER"

# ---------------------------------------------------------------------------
echo "# Ctrl-C and Ctrl-Z reach the command's terminal"
# ---------------------------------------------------------------------------
start=$(date +%s)
at_terminal expect:READY 'send:\x03' -- \
	sh -c "$(around "$ENTER -t -i $P sh -c 'echo READY; sleep 100; echo not-interrupted'")"
assert_eq "Ctrl-C ended the session" 0 "$RC"
assert_eq "the command died of SIGINT" 130 "$EXIT"
assert_not_contains "sleep was interrupted" "$OUT" "not-interrupted"
check "within 10 s ($(($(date +%s) - start)) s)" test $(($(date +%s) - start)) -lt 10
modes_kept "Ctrl-C"
# A trap in the command sees the signal: its terminal's line discipline
# sent it, not a kill from the host.
at_terminal expect:READY 'send:\x03' expect:CAUGHT -- \
	sh -c "$(around "$ENTER -t -i $P sh -c 'trap \"echo CAUGHT; exit 7\" INT; echo READY; while :; do sleep 0.1; done'")"
assert_eq "a trap on SIGINT ran" 7 "$EXIT"
# Job control: an interactive shell in the pod stops a job with Ctrl-Z.
# The job says when it runs (J42, then T2 each second: the terminal's echo
# of the typed line shows neither), so each key goes to a foreground job,
# not to the shell before or between (a fixed sleep was not always enough).
at_terminal 'expect:# ' "send:sh -c \"echo J\$((6*7)); while :; do sleep 1; echo T\$((1+1)); done\"\r" expect:J42 \
	'send:\x1a' expect:Stopped 'expect:# ' 'send:fg\r' expect:T2 'send:\x03' 'expect:# ' \
	'send:echo back=$?; exit 3\r' -- \
	sh -c "$(around "$ENTER -t -i $P")"
assert_eq "an interactive shell: Ctrl-Z stopped the job, fg and Ctrl-C ended it, the shell ended" "0 3" "$RC $EXIT"
assert_contains "the job died of SIGINT in the foreground" "$OUT" "back=130"
modes_kept "job control"

# ---------------------------------------------------------------------------
echo "# -i without -t: input from the terminal through a pipe, never the terminal"
# ---------------------------------------------------------------------------
at_terminal expect:READY 'send:hello\r' -- \
	sh -c "$ENTER -i $P sh -c 'tty; echo READY; read x; echo got=\$x'"
assert_eq "exit 0" 0 "$EXIT"
assert_contains "the command has no terminal" "$OUT" "not a tty"
assert_contains "the typed line reached it" "$OUT" "got=hello"
assert_eq "-i with a pipe" "piped" "$(echo piped | sd enter -i "$P" cat)"
assert_eq "without -i, a pipe still is stdin" "piped" "$(echo piped | sd enter "$P" cat)"
at_terminal -- sh -c "$ENTER $P sh -c 'read x; echo read=\$?; tty'"
assert_contains "without -i, input from a terminal is /dev/null" "$OUT" "read=1"
assert_contains "and the command has no terminal" "$OUT" "not a tty"
assert_exit 3 bash -c "printf 'echo via-pty\nexit 3\n' | $ENTER -t -i $P sh"
assert_contains "-t -i with piped input: it reaches the pod's terminal, EOF ends it" "$OUT" "via-pty"
assert_exit 0 bash -c "$ENTER -t $P sh -c 'tty; stty size' </dev/null"
assert_match "-t without a terminal: one of 24x80" '^/dev/pts/[0-9]+.*24 80' "$(tr -d '\r' <<<"$OUT" | tr '\n' ' ')"

# ---------------------------------------------------------------------------
echo "# a hostile command: keys injected, settings changed, on what it was given"
# ---------------------------------------------------------------------------
for opts in "" "-i" "-t -i" "-t"; do
	at_terminal sleep:1 -- sh -c "$(around "$ENTER $opts $P /bin/tty-probe 'echo INJECTED\n'")"
	assert_eq "enter $opts: the probe ran" "0 0" "$RC $EXIT"
	assert_not_contains "enter $opts: nothing injected reaches the user's terminal" "$LEFTOVER" "INJECTED"
	modes_kept "enter $opts, the probe turned echo off"
	case "$opts" in
	*-t*)
		assert_contains "enter $opts: its stdin is the pod's terminal" "$OUT" "fd0 tty=yes"
		assert_contains "enter $opts: TIOCSTI works on it (its own)" "$OUT" "fd0 tty=yes sti=allowed"
		;;
	*)
		for fd in fd0 fd1 fd2; do
			assert_contains "enter $opts: $fd is no terminal" "$OUT" "$fd tty=no"
		done
		assert_contains "enter $opts: it has no controlling terminal" "$OUT" "devtty open=ENXIO"
		;;
	esac
done

# Input from elsewhere, output to the terminal: before, the terminal itself
# was the command's stdout and stderr, and the probe turned its echo off.
at_terminal sleep:1 -- sh -c "$(around "$ENTER $P /bin/tty-probe 'echo INJECTED' </dev/null")"
assert_contains "stdout to the terminal: the command's is no terminal" "$OUT" "fd1 tty=no"
assert_contains "stderr to the terminal: the command's is no terminal" "$OUT" "fd2 tty=no"
modes_kept "stdout and stderr a terminal, the probe turned echo off"

# ---------------------------------------------------------------------------
echo "# a flood of output: Ctrl-C still gets through; sdpod stays small"
# ---------------------------------------------------------------------------
start=$(date +%s)
at_terminal expect:READY sleep:1 'send:\x03' -- \
	sh -c "$(around "$ENTER -t -i $P sh -c 'echo READY; yes'")"
assert_eq "Ctrl-C in a flood ended it" "0 130" "$RC $EXIT"
check "within 15 s ($(($(date +%s) - start)) s)" test $(($(date +%s) - start)) -lt 15
check "peak RSS ${MAXRSS} KiB < 64 MiB" test "${MAXRSS:-999999}" -lt 65536
echo "# flood: peak RSS of sdpod and the session: $MAXRSS KiB"
modes_kept "flood"

# ---------------------------------------------------------------------------
echo "# a pty the pod never closes, and one it floods after the command ended"
# ---------------------------------------------------------------------------
start=$(date +%s)
at_terminal -- sh -c "$ENTER -t -i $P sh -c 'sleep 1000 & exit 5'"
assert_eq "a background process holding the pty: the status comes back" "0 5" "$RC $EXIT"
check "at once ($(($(date +%s) - start)) s < 10)" test $(($(date +%s) - start)) -lt 10
# Another process of the pod's, outside the command's unit, opens the pty
# by name and writes to it for ever.
at_terminal expect:READY sleep:1 'send:x\r' -- \
	sh -c "$ENTER -t -i $P sh -c 'tty >/tmp/the-tty; echo READY; read x; exit 6'" &
SESSION_PID=$!
HOLDERS+=($SESSION_PID)
wait_until 10 sd enter "$P" test -s /tmp/the-tty || fail "the session started"
"$SDPOD" --dir="$DATA" enter "$P" sh -c 'exec 3<>"$(cat /tmp/the-tty)"; while :; do echo FLOOD >&3; done' \
	>/dev/null 2>&1 </dev/null &
HOLDERS+=($!)
start=$(date +%s)
wait "$SESSION_PID" || true
check "the session ended despite a writer holding its pty ($(($(date +%s) - start)) s < 15)" \
	test $(($(date +%s) - start)) -lt 15
for p in "${HOLDERS[@]}"; do kill -TERM "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
HOLDERS=()

# ---------------------------------------------------------------------------
echo "# sdpod run -t: the app on the pod's console, relayed by nspawn"
# ---------------------------------------------------------------------------
RUN="$SDPOD --dir=$DATA run"
at_terminal --rows=33 --cols=101 expect:READY resize:44:120 sleep:0.5 'send:hello\r' expect:DONE -- \
	sh -c "$(around "$RUN -t busybox --exec=/bin/sh -- -c 'tty; stty size; echo READY; read x; echo got=\$x; stty size; /bin/tty-probe \"echo INJECTED\"; echo DONE; exit 42'")"
assert_eq "run -t: the app's exit status is the pod's" "0 42" "$RC $EXIT"
assert_contains "run -t: the app has a terminal" "$OUT" "/dev/pts/"
assert_contains "run -t: of the user's size" "$OUT" "33 101"
assert_contains "run -t: resized with it" "$OUT" "44 120"
assert_contains "run -t: typed keys reach it" "$OUT" "got=hello"
assert_contains "run -t: the console is the app's controlling terminal" "$OUT" "devtty tty=yes"
assert_not_contains "run -t: what it injects stays in the pod" "$LEFTOVER" "INJECTED"
modes_kept "run -t"
start=$(date +%s)
at_terminal expect:READY 'send:\x03' -- \
	sh -c "$(around "$RUN -t --uuid-file=$T/u-int busybox --exec=/bin/sh -- -c 'echo READY; sleep 100; echo not-interrupted'")"
assert_eq "run -t: Ctrl-C reached the app, the pod ended" 0 "$RC"
assert_not_contains "run -t: sleep was interrupted" "$OUT" "not-interrupted"
echo "# run -t, Ctrl-C: pod exit $EXIT, app recorded $(status_of "$(cat "$T/u-int")" app-busybox)"
assert_eq "run -t: the app's end by SIGINT is recorded" 130 "$(status_of "$(cat "$T/u-int")" app-busybox)"
check "run -t: Ctrl-C, within 20 s ($(($(date +%s) - start)) s)" test $(($(date +%s) - start)) -lt 20
modes_kept "run -t, Ctrl-C"
assert_exit 2 sd run -t busybox --exec=/bin/true --- busybox --exec=/bin/true
assert_contains "run -t: one app only" "$ERR" "only a pod of one app runs on the terminal"
assert_exit 2 sd run -t --detach busybox --exec=/bin/true
assert_contains "run -t: not detached" "$ERR" "not with --detach"
assert_exit 7 bash -c "$RUN -t busybox --exec=/bin/sh -- -c 'test -t 0 && echo console-tty; exit 7' </dev/null"
assert_contains "run -t without a terminal of the user's: still the console, read-only" "$OUT" "console-tty"

# ---------------------------------------------------------------------------
echo "# podapp exec -t -i in a mutable pod, as the app's user"
# ---------------------------------------------------------------------------
assert_exit 0 pa sandbox --name=tty-sb
U=$OUT
assert_exit 0 pa add "$U" --app=dbg --user=1234 --group=2345 busybox --exec=/bin/sleep -- 100000
assert_exit 0 pa start "$U" --app=dbg
at_terminal --rows=40 --cols=132 expect:READY 'send:ok\r' -- \
	sh -c "$(around "$EXEC -t -i $U --app=dbg -- sh -c 'id -u; tty; stty size; echo READY; read x; echo got=\$x; exit 9'")"
assert_eq "podapp exec -t -i: the status" "0 9" "$RC $EXIT"
assert_contains "as the app's user" "$OUT" "1234"
assert_match "on a terminal of the pod's" '/dev/pts/[0-9]+' "$OUT"
assert_contains "of the user's size" "$OUT" "40 132"
assert_contains "typed keys reach it" "$OUT" "got=ok"
modes_kept "podapp exec -t -i"
assert_exit 0 pa exec "$U" --app=dbg -t -- sh -c 'test -t 0 && test -t 1 && test -t 2 && echo all-ttys'
assert_contains "podapp exec -t without a terminal of the user's" "$OUT" "all-ttys"

# ---------------------------------------------------------------------------
echo "# the pod dies under an interactive session: sdpod ends, the terminal restored"
# ---------------------------------------------------------------------------
at_terminal expect:READY sleep:30 -- \
	sh -c "$(around "$EXEC -t -i $U --app=dbg -- sh -c 'echo READY; sleep 1013'")" &
SESSION_PID=$!
HOLDERS+=($SESSION_PID)
wait_until 20 sh -c "grep -q . '$MODES.before'" || true
# The session's command runs in the pod (a time no other test sleeps):
# on a loaded machine the exec took longer than a fixed 2 s, and the pod
# was stopped before the session was there to end with it.
wait_until 30 pgrep -f "^sleep 1013$" || true
start=$(date +%s)
assert_exit 0 sd stop --force "$U"
wait "$SESSION_PID" || true
HOLDERS=()
check "the session ended with the pod ($(($(date +%s) - start)) s < 10)" test $(($(date +%s) - start)) -lt 10
modes_kept "a pod that died"
assert_exit 0 sd rm "$U"

leak_check
