#!/bin/bash
#
# test-shim-tty.sh - terminals through containerd (issue 25, "Terminals"),
# under a real containerd (containerd-lib.sh; serial, like test-shim-exec),
# ctr given a terminal of its own by pty-session.py:
#
#   - `ctr task exec -t`: the command's stdin, stdout and stderr are a pty
#     (`tty` prints /dev/pts/N), what is typed reaches it, its exit status
#     passes through, its TERM is the spec's;
#   - ResizePty (ctr resizes at start and on SIGWINCH): `stty size` shows
#     the size, and the command gets SIGWINCH;
#   - Ctrl-D (the terminal's EOF character) ends `cat`;
#   - a hostile exec that floods its terminal and never reads its input,
#     whose client never reads its output: State (`ctr task ls`) and
#     another exec answer in time meanwhile, and a kill ends it;
#   - the CRI's Exec with tty: true through containerd's streaming server
#     (cri/cri-stream.py, a WebSocket client): a pty, TERM=xterm, the exit
#     status, a resize, typed input. (Its client gone, containerd 1.6
#     closes a tty exec's outputs, not its stdin, and calls no CloseIO:
#     the command goes on under runc's shim as under sdpod's.)
#   - `ctr run -t` (a container's own process on a terminal): runs on
#     runc's shim; sdpod's refuses it with an error that says so.
#
# SHIM_RUNTIME=io.containerd.runc.v2 runs the same test on runc's shim (the
# check of the test itself).

. "$(dirname "$0")/lib.sh"

use_real_images
. "$LIB_DIR/containerd-lib.sh"
for _p in ptp host-local loopback portmap firewall; do
	[ -x "/usr/lib/cni/$_p" ] || skip "no CNI plugin $_p in /usr/lib/cni (apt-get install containernetworking-plugins)"
done

SESSION="$LIB_DIR/pty-session.py"
BG_PIDS=()
_tty_cleanup() {
	set +e
	local p
	for p in "${BG_PIDS[@]}"; do
		kill -KILL "$p" 2>/dev/null || true
		wait "$p" 2>/dev/null || true
	done
}
trap '_rc=$?; _tty_cleanup; _ctd_on_exit "$_rc"; (exit "$_rc"); _lib_on_exit' EXIT

leak_begin
containerd_start
containerd_images "$CTR_NS" k8s.io
R=(--runtime "$SHIM_RUNTIME")
CTR=(ctr --address "$CTD_SOCK" --namespace "$CTR_NS")
task_is() { [ "$(ctr_ tasks ls 2>/dev/null | awk -v id="$1" '$1 == id { print $3 }')" = "$2" ]; }
# at_terminal STEP... -- CMD...: CMD on a new pty (pty-session.py), its
# output (with EXIT=N) in $OUT. The whole session within 60 s.
at_terminal() {
	OUT=$(timeout -s KILL 60 python3 "$SESSION" --timeout=20 "$@" 2>&1) || true
}

assert_exit 0 ctr_ run -d "${R[@]}" "$CTD_BUSYBOX" t-tty /bin/sleep 600
wait_for "the task runs" 20 task_is t-tty RUNNING

# ---------------------------------------------------------------------------
echo "# ctr task exec -t: a pty, typed input, exit status, TERM"
# ---------------------------------------------------------------------------
at_terminal expect:/dev/pts/ -- "${CTR[@]}" task exec -t --exec-id tty1 t-tty /bin/tty
assert_match "tty prints a pty of the container" '/dev/pts/[0-9]+' "$OUT"
assert_contains "and ends with 0" "$OUT" "EXIT=0"

at_terminal -- "${CTR[@]}" task exec -t --exec-id tty2 t-tty /bin/sh -c \
	'for f in 0 1 2; do [ -t $f ] && echo "fd$f:tty"; done; echo "term=[$TERM]"; exit 3'
assert_contains "stdin is a terminal" "$OUT" "fd0:tty"
assert_contains "stdout is a terminal" "$OUT" "fd1:tty"
assert_contains "stderr is a terminal" "$OUT" "fd2:tty"
assert_contains "the exit status passes through" "$OUT" "EXIT=3"
TERM_LINE=$(grep -o 'term=\[[^]]*\]' <<<"$OUT" | head -n1)
echo "# $TERM_LINE"

# The shell's fds, listed with no command substitution's pipe open (the
# list's own file aside, which busybox's shell holds while ls runs): the pty of the
# pod's, and nothing else (no fd of the host's terminal, the relay's
# master or its window-size carrier).
at_terminal expect:fds-listed -- "${CTR[@]}" task exec -t --exec-id fds t-tty /bin/sh -c \
	't=$(tty); ls -l /proc/$$/fd >/tmp/fds; grep -- "->" /tmp/fds | grep -v -e "-> $t\$" -e "-> /tmp/fds\$" | sed "s/^/other-fd /"; echo fds-listed'
assert_contains "the command lists its fds" "$OUT" "fds-listed"
assert_not_contains "it holds no fd but its pty" "$OUT" "other-fd"

at_terminal expect:name? send:'sdpod\r' expect:hello-sdpod -- "${CTR[@]}" task exec -t --exec-id tty3 t-tty \
	/bin/sh -c 'printf "name? "; read n; echo "hello-$n"'
assert_contains "a typed line reaches the command" "$OUT" "hello-sdpod"
assert_contains "which ends with 0" "$OUT" "EXIT=0"

at_terminal expect:ready send:'abc\r' expect:abc send:'\x04' -- "${CTR[@]}" task exec -t --exec-id tty4 t-tty \
	/bin/sh -c 'echo ready; cat; echo cat-ended'
assert_contains "Ctrl-D (the terminal's EOF) ends cat" "$OUT" "cat-ended"
assert_contains "which ends with 0" "$OUT" "EXIT=0"

# ---------------------------------------------------------------------------
echo "# ResizePty: stty size, SIGWINCH"
# ---------------------------------------------------------------------------
# The first size is ctr's own, sent once the exec has started (runc's
# command may see none before it): a resize after the command is ready.
at_terminal --rows=30 --cols=100 expect:ready resize:40:120 expect:'winch:40 120' send:'x\r' expect:got \
	-- "${CTR[@]}" task exec -t --exec-id size1 t-tty /bin/sh -c \
	'trap "echo winch:\$(stty size)" WINCH; echo ready; while :; do read -t 1 x && break; done; echo "got:$(stty size)"; exit 5'
assert_contains "after a resize, SIGWINCH and the new size" "$OUT" "winch:40 120"
assert_contains "stty size then" "$OUT" "got:40 120"
assert_contains "and the exit status passes through" "$OUT" "EXIT=5"

# ---------------------------------------------------------------------------
echo "# hostile: an exec that floods its terminal and never reads its input"
# ---------------------------------------------------------------------------
# The client (ctr) at a terminal nobody reads, with input it keeps
# getting: the pod's writes and ctr's both block on full buffers.
python3 - "${CTR[@]}" task exec -t --exec-id flood t-tty /bin/sh -c \
	'exec 0</dev/null; while :; do echo flood-flood-flood-flood-flood-flood-flood-flood; done' <<'PY' &
import os, pty, subprocess, sys, time, fcntl
m, s = pty.openpty()
p = subprocess.Popen(sys.argv[1:], stdin=s, stdout=s, stderr=s, start_new_session=True)
fcntl.fcntl(m, fcntl.F_SETFL, os.O_NONBLOCK)
end = time.monotonic() + 100
while p.poll() is None and time.monotonic() < end:
    try:
        os.write(m, b"typed-but-never-read " * 100)
    except BlockingIOError:
        pass
    time.sleep(0.05)
p.kill()
PY
FLOOD=$!
BG_PIDS+=("$FLOOD")
sleep 3
t0=$(date +%s%N)
assert_exit 0 ctr_ task ls
took=$((($(date +%s%N) - t0) / 1000000))
check "State (ctr task ls) answers within 15 s meanwhile ($took ms)" test "$took" -le 15000
t0=$(date +%s%N)
OTHER=$(timeout -s KILL 30 "${CTR[@]}" task exec --exec-id other t-tty /bin/echo other-exec 2>&1 </dev/null)
took=$((($(date +%s%N) - t0) / 1000000))
assert_eq "another exec runs meanwhile" "other-exec" "$OTHER"
check "within 10 s ($took ms)" test "$took" -le 10000
at_terminal -- "${CTR[@]}" task exec -t --exec-id tty5 t-tty /bin/sh -c 'echo other-tty; exit 4'
assert_contains "and another exec with a terminal" "$OUT" "EXIT=4"
# The flooding shell: "sh" whose command line has the loop (ctr's and
# python's have it too).
flooders() {
	local f
	for f in $(grep -lsaF -- flood-flood-flood /proc/[0-9]*/cmdline); do
		[ "$(cat "${f%/cmdline}/comm" 2>/dev/null)" = sh ] && echo "${f%/cmdline}"
	done
	return 0
}
no_flooders() { [ -z "$(flooders)" ]; }
check "the flooding command runs" test -n "$(flooders)"
assert_exit 0 ctr_ task kill --exec-id flood -s SIGKILL t-tty
wait_for "the flooding command is gone after its kill" 15 no_flooders
# Its client blocks writing to a terminal nobody reads (runc's too).
kill -KILL "$FLOOD" 2>/dev/null || true

assert_exit 0 ctr_ task kill -s SIGKILL t-tty
wait_for "the task stops" 30 task_is t-tty STOPPED
assert_exit 0 ctr_ task delete t-tty
assert_exit 0 ctr_ container rm t-tty

# ---------------------------------------------------------------------------
echo "# the CRI's Exec with tty: true (kubectl exec -it), through its streaming server"
# ---------------------------------------------------------------------------
cri_setup
SBC=$(cri_sandbox_config tty-pod)
cri_call RS RunPodSandbox "{\"config\": $SBC, \"runtime_handler\": \"$SHIM_HANDLER\"}"
SB=$(jq -r '.pod_sandbox_id // empty' <<<"$RS")
[ -n "$SB" ] || die "RunPodSandbox gave no sandbox id: $RS"
CC=$(jq -nc --arg sb "$SB" --argjson sbc "$SBC" --arg img "$CTD_BUSYBOX" \
	'{pod_sandbox_id: $sb, sandbox_config: $sbc,
	  config: {metadata: {name: "shell"}, image: {image: $img}, command: ["/bin/sleep", "600"],
	           log_path: "shell.log"}}')
cri_call C CreateContainer "$CC"
CID=$(jq -r '.container_id // empty' <<<"$C")
cri_call _ StartContainer "{\"container_id\": \"$CID\"}"
# cri_exec_tty CMD_JSON STEP...: the CRI's Exec of CMD with a terminal and
# stdin, driven by cri-stream.py; its output (with EXIT=N) in $OUT.
cri_exec_tty() {
	local cmd=$1 x url
	shift
	x=$(cri Exec "{\"container_id\": \"$CID\", \"cmd\": $cmd, \"tty\": true, \"stdin\": true, \"stdout\": true}" 2>&1) || true
	url=$(jq -r '.url // empty' <<<"$x" 2>/dev/null) || true
	[ -n "$url" ] || { OUT="Exec: $x"; return 0; }
	OUT=$(timeout -s KILL 60 "$CRI_PY" "$LIB_DIR/cri/cri-stream.py" --timeout=20 "$url" "$@" 2>&1) || true
}
cri_exec_tty '["/bin/tty"]'
assert_match "tty prints a pty of the container" '/dev/pts/[0-9]+' "$OUT"
assert_contains "and ends with 0" "$OUT" "EXIT=0"
cri_exec_tty '["/bin/sh", "-c", "echo \"term=[$TERM]\"; exit 3"]'
assert_contains "TERM is the spec's (the CRI's xterm)" "$OUT" "term=[xterm]"
assert_contains "the exit status passes through" "$OUT" "EXIT=3"
cri_exec_tty '["/bin/sh", "-c", "trap \"echo winch:\\$(stty size)\" WINCH; echo ready; while :; do read -t 1 x && break; done; echo got-$x; exit 5"]' \
	expect:ready resize:40:120 expect:'winch:40 120' send:'typed\r' expect:got-typed
assert_contains "a resize: SIGWINCH and the new size" "$OUT" "winch:40 120"
assert_contains "typed input reaches the command" "$OUT" "got-typed"
assert_contains "and the exit status passes through" "$OUT" "EXIT=5"
cri_call _ StopPodSandbox "{\"pod_sandbox_id\": \"$SB\"}"
cri_call _ RemovePodSandbox "{\"pod_sandbox_id\": \"$SB\"}"

# ---------------------------------------------------------------------------
echo "# ctr run -t: a container's own process on a terminal"
# ---------------------------------------------------------------------------
at_terminal expect:/dev/pts/ -- "${CTR[@]}" run -t --rm "${R[@]}" "$CTD_BUSYBOX" t-run /bin/sh -c 'tty; exit 6'
if shim_is_sdpod; then
	assert_contains "refused, and the error says why" "$OUT" "terminal"
	ctr_ task delete t-run >/dev/null 2>&1 || true
	ctr_ container rm t-run >/dev/null 2>&1 || true
else
	assert_match "runs on a pty" '/dev/pts/[0-9]+' "$OUT"
	assert_contains "its exit status passes through" "$OUT" "EXIT=6"
fi

containerd_leak_check
containerd_stop
leak_check
