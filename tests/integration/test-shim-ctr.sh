#!/bin/bash
#
# test-shim-ctr.sh - containerd-shim-sdpod-v1 under a real containerd
# (Debian's 1.6, started by the test), driven with ctr: `ctr run --rm`
# prints and passes the exit status on (0, 42, the image's own command,
# user and working directory), a task in the background with `ctr task
# exec` (output, exit status, in the task's root), `ctr task ps`, `ctr task
# kill` and `ctr task delete`, and the bad input: an unknown task, a rootfs
# without a program, a terminal. After each: no task, shim or mount left;
# with sdpod's shim, no sdpod pod either (and the pod is in `sdpod list`
# while the task runs). And an image's block device node, of a scratch loop
# device: the task cannot open it, as runc's cannot.
#
# SHIM_RUNTIME=io.containerd.runc.v2 runs the same test on runc's shim (the
# check of the test itself); the default is sdpod's shim of this build.

. "$(dirname "$0")/lib.sh"

use_real_images
. "$LIB_DIR/containerd-lib.sh"
require_tool script bsdutils
require_tool losetup mount
require_tool python3

leak_begin
containerd_start
containerd_images
R=(--runtime "$SHIM_RUNTIME")

# task_status ID: RUNNING, STOPPED, CREATED... as `ctr task ls` says.
task_status() {
	ctr_ tasks ls 2>/dev/null | awk -v id="$1" '$1 == id { print $3 }'
}
task_pid() {
	ctr_ tasks ls 2>/dev/null | awk -v id="$1" '$1 == id { print $2 }'
}
task_is() { [ "$(task_status "$1")" = "$2" ]; }

# --- ctr run --rm: output and exit status ---

assert_exit 0 ctr_ run --rm "${R[@]}" "$CTD_BUSYBOX" t-echo /bin/echo hello from a task
assert_eq "ctr run --rm: the task's output" "hello from a task" "$OUT"

assert_exit 42 ctr_ run --rm "${R[@]}" "$CTD_BUSYBOX" t-42 /bin/sh -c 'echo exiting; exit 42'
assert_eq "ctr run --rm: output of a task exiting 42" "exiting" "$OUT"

# The image's command (entrypoint "/bin/sh -c", cmd "echo hello from
# busybox"), user (1000:1000), working directory and environment.
assert_exit 0 ctr_ run --rm "${R[@]}" "$CTD_BUSYBOX" t-default
assert_eq "ctr run --rm: the image's own command" "hello from busybox" "$OUT"
assert_exit 0 ctr_ run --rm "${R[@]}" "$CTD_BUSYBOX" t-env /bin/sh -c 'echo "$(id -u):$(id -g) $PWD $GREETING"'
assert_eq "ctr run --rm: the image's user, working directory and environment" "1000:1000 /home/app hi" "$OUT"
assert_exit 0 ctr_ run --rm "${R[@]}" --env FOO=bar --cwd /tmp "$CTD_BUSYBOX" t-opts \
	/bin/sh -c 'echo "$PWD $FOO"'
assert_eq "ctr run --rm: --cwd and --env" "/tmp bar" "$OUT"

# stdin reaches the task (ctr's FIFOs). ctr 1.6 does not close the task's
# stdin at the end of its own, so the task reads one line, not to the end;
# a ctr that hangs all the same is killed (the clean-up ends the task).
OUT=$(echo "through stdin" | timeout -s KILL 60 ctr --address "$CTD_SOCK" --namespace "$CTR_NS" run --rm "${R[@]}" "$CTD_BUSYBOX" t-stdin /bin/head -n 1 2>"$T/stdin.err") || true
assert_eq "ctr run --rm: stdin reaches the task" "through stdin" "$OUT"

containerd_leak_check

# --- a task in the background: exec, ps, kill, delete ---

# A shell that ends on SIGTERM: with runc it is the PID 1 of its pid
# namespace, which ignores a signal it has no handler for.
assert_exit 0 ctr_ run -d "${R[@]}" "$CTD_BUSYBOX" t-bg \
	/bin/sh -c 'trap "exit 143" TERM; echo marker-of-the-task >/tmp/marker; sleep 600 & wait'
wait_for "the background task runs" 20 task_is t-bg RUNNING
# What sdpod's shim relies on to find the test's data directory: containerd
# hands its environment on to the shims it starts.
shim_env=
for p in $(ctd_shim_pids); do
	shim_env+=$({ tr '\0' '\n' <"/proc/$p/environ"; } 2>/dev/null || true)
done
assert_contains "containerd hands SDPOD_DIR on to the shim" "$shim_env" "SDPOD_DIR=$DATA"
POD=
if shim_is_sdpod; then
	pods=$(sd list --no-legend 2>&1)
	assert_eq "sdpod list: one pod for the task" 1 "$(grep -c . <<<"$pods")"
	assert_contains "sdpod list: it runs" "$pods" running
	# The pod's whole UUID (the listing shortens it): the one named after
	# the task, or the only one.
	POD=$(sd list --format=json 2>/dev/null | jq -r '([.[] | select(.name == "t-bg")] | if length == 1 then . else empty end)
		// (if length == 1 then . else empty end) | .[0].uuid' 2>/dev/null || true)
	assert_match "sdpod list: the task's pod" '^[0-9a-f-]{36}$' "$POD"
fi
wait_until 10 ctr_ task exec --exec-id probe t-bg /bin/cat /tmp/marker || true
assert_exit 0 ctr_ task exec --exec-id e1 t-bg /bin/cat /tmp/marker
assert_eq "ctr task exec: runs in the task's root" "marker-of-the-task" "$OUT"
assert_exit 5 ctr_ task exec --exec-id e2 t-bg /bin/sh -c 'echo from-exec; echo err-from-exec >&2; exit 5'
assert_eq "ctr task exec: its output" "from-exec" "$OUT"
assert_contains "ctr task exec: its stderr" "$ERR" "err-from-exec"
if shim_is_sdpod; then
	# An exec runs as its app does (podapp exec): another identity or
	# working directory is refused, never silently dropped.
	assert_exit 1 ctr_ task exec --exec-id e3 --user 0 --cwd /etc t-bg /bin/sh -c 'echo "$(id -u) $PWD"'
	assert_contains "ctr task exec --user: refused, saying why" "$ERR" "another user than the container's"
	assert_exit 1 ctr_ task exec --exec-id e3b --cwd /etc t-bg /bin/sh -c 'echo "$(id -u) $PWD"'
	assert_contains "ctr task exec --cwd: refused, saying why" "$ERR" "another working directory"
else
	assert_exit 0 ctr_ task exec --exec-id e3 --user 0 --cwd /etc t-bg /bin/sh -c 'echo "$(id -u) $PWD"'
	assert_eq "ctr task exec: --user and --cwd" "0 /etc" "$OUT"
fi
OUT=$(echo "exec stdin" | timeout -s KILL 60 ctr --address "$CTD_SOCK" --namespace "$CTR_NS" task exec --exec-id e4 t-bg /bin/head -n 1 2>"$T/exec-stdin.err") || true
assert_eq "ctr task exec: stdin reaches the process" "exec stdin" "$OUT"
assert_exit '1|126|127|255' ctr_ task exec --exec-id e5 t-bg /no/such/program
assert_ne "ctr task exec of a missing program: an error is shown" "" "$OUT$ERR"
# The same exec id twice at once: refused.
# (Not checked: ctr deletes an exec process when it ends.)

pid=$(task_pid t-bg)
assert_match "ctr task ls: the task's PID" '^[1-9][0-9]*$' "$pid"
assert_exit 0 ctr_ task ps t-bg
assert_match "ctr task ps: lists the task's PID" "(^|[[:space:]])$pid([[:space:]]|\$)" "$OUT"
if [ -n "$pid" ] && [ -e "/proc/$pid" ]; then
	assert_contains "the task's PID is its program (on the host)" "$(tr '\0' ' ' <"/proc/$pid/cmdline")" "marker-of-the-task"
fi

assert_exit 0 ctr_ task kill -s SIGTERM t-bg
wait_for "ctr task kill: the task stops" 20 task_is t-bg STOPPED
assert_exit 0 ctr_ task delete t-bg
assert_exit 0 ctr_ container rm t-bg
[ -z "$pid" ] || assert_file_absent "/proc/$pid"
[ -z "$POD" ] || no_pod_procs "$POD"
containerd_leak_check

# kill with SIGKILL, delete -f of a running task.
assert_exit 0 ctr_ run -d "${R[@]}" "$CTD_BUSYBOX" t-kill /bin/sleep 600
wait_for "a second background task runs" 20 task_is t-kill RUNNING
assert_exit 0 ctr_ task kill -s SIGKILL t-kill
wait_for "ctr task kill -s SIGKILL: the task stops" 20 task_is t-kill STOPPED
assert_exit 0 ctr_ task delete t-kill
assert_exit 0 ctr_ container rm t-kill
assert_exit 0 ctr_ run -d "${R[@]}" "$CTD_BUSYBOX" t-force /bin/sleep 600
wait_for "a third background task runs" 20 task_is t-force RUNNING
assert_exit 0 ctr_ task delete -f t-force
assert_exit 0 ctr_ container rm t-force
containerd_leak_check

# --- an image's device node (sdpod-security(7)): it does not open ---

# A layer with a block device of a scratch loop device, mode 0666, which
# containerd's snapshotter makes as it is. runc's task cannot open it (its
# device rule: EPERM); sdpod's neither (the bundle's root is nodev).
head -c 1048576 /dev/zero >"$T/disk.img"
LOOP=$(losetup -f --show "$T/disk.img")
trap '_rc=$?; set +e; trap - ERR; [ -z "$LOOP" ] || losetup -d "$LOOP" 2>/dev/null; _ctd_on_exit "$_rc"; (exit "$_rc"); _lib_on_exit' EXIT
IFS=: read -r MAJ MIN <"/sys/class/block/${LOOP#/dev/}/dev"
disk_sum=$(sha256sum <"$T/disk.img")
tar --numeric-owner -C "$IMG/rootfs" -czf "$T/base.tar.gz" .
python3 - "$T/devs.tar" "$MAJ" "$MIN" <<'PY'
import sys, tarfile
ti = tarfile.TarInfo("hostile-disk")
ti.type, ti.mode, ti.devmajor, ti.devminor = tarfile.BLKTYPE, 0o666, int(sys.argv[2]), int(sys.argv[3])
with tarfile.open(sys.argv[1], "w") as t:
    t.addfile(ti)
PY
gzip -n "$T/devs.tar"
oci_layout_new "$T/dev-oci" "$(host_arch)" "$T/base.tar.gz" "$T/devs.tar.gz"
img_docker_archive "$T/dev-oci" latest "$T/dev.tar" docker.io/library/sdpod-devnode:latest
ctr_ image import "$T/dev.tar" >/dev/null 2>&1 || die "ctr image import of the device image: $(ctr_ image import "$T/dev.tar" 2>&1)"
assert_exit 0 ctr_ run --rm "${R[@]}" docker.io/library/sdpod-devnode:latest t-dev /bin/sh -c \
	'if [ ! -b /hostile-disk ]; then echo absent; elif (exec 3<>/hostile-disk) 2>/dev/null; then echo opened;
	 printf SDPOD-HOSTILE | dd of=/hostile-disk conv=notrunc 2>/dev/null; else echo refused; fi'
assert_eq "an image's block device in the container: it is there, and does not open" refused "$OUT"
# A node the container makes itself (containerd's default spec lists
# CAP_MKNOD, as runc's containers have it), on its root and in /dev.
assert_exit 0 ctr_ run --rm "${R[@]}" docker.io/library/sdpod-devnode:latest t-mknod /bin/sh -c \
	"for n in /made /dev/made; do mknod \$n b $MAJ $MIN 2>/dev/null || { echo \$n=not-made; continue; };
	 if (exec 3<>\$n) 2>/dev/null; then echo \$n=opened; printf SDPOD-HOSTILE | dd of=\$n conv=notrunc 2>/dev/null;
	 else echo \$n=refused; fi; done; grep CapBnd /proc/self/status"
echo "$OUT" | sed 's/^/# mknod in the container: /'
assert_match "a node the container makes on its root does not open" '/made=(not-made|refused)' "$(grep '^/made=' <<<"$OUT")"
assert_match "a node the container makes in /dev does not open" '/dev/made=(not-made|refused)' "$(grep '^/dev/made=' <<<"$OUT")"
assert_eq "the loop device's file is unchanged" "$disk_sum" "$(sha256sum <"$T/disk.img")"
ctr_ image rm docker.io/library/sdpod-devnode:latest >/dev/null 2>&1 || true
losetup -d "$LOOP"
LOOP=
containerd_leak_check

# --- bad input ---

assert_exit 1 ctr_ task kill no-such-task
assert_contains "ctr task kill of an unknown task: not found" "$ERR" "not found"
assert_exit 1 ctr_ task exec --exec-id x no-such-task /bin/true
assert_contains "ctr task exec in an unknown task: not found" "$ERR" "not found"
assert_exit 1 ctr_ task delete no-such-task
assert_contains "ctr task delete of an unknown task: not found" "$ERR" "not found"

# A root given as a host directory (no snapshot) that holds no program.
mkdir -p "$T/empty-root"
assert_exit '1|2|126|127|128' ctr_ run --rm "${R[@]}" --rootfs "$T/empty-root" t-empty /bin/sh -c true
assert_ne "a root without the program: an error is shown" "" "$ERR"
ctr_ container rm t-empty >/dev/null 2>&1 || true
# (Not checked: that the directory stays empty. runc makes the mount
# points dev, proc, run and sys in it.)
# A root that does not exist.
assert_exit '1|2|126|127|128' ctr_ run --rm "${R[@]}" --rootfs "$T/no-such-root" t-noroot /bin/true
assert_ne "a root that does not exist: an error is shown" "" "$ERR"
ctr_ container rm t-noroot >/dev/null 2>&1 || true
containerd_leak_check

# A terminal (ctr -t needs one: script gives it a pseudo-terminal). runc
# supports it; sdpod's shim either does, or refuses it clearly.
rc=0
timeout -s KILL 60 script -qec "ctr --address '$CTD_SOCK' --namespace '$CTR_NS' run --rm -t --runtime '$SHIM_RUNTIME' '$CTD_BUSYBOX' t-tty /bin/sh -c 'test -t 0 && echo on-a-tty'" \
	"$T/tty.typescript" </dev/null >"$T/tty.out" 2>&1 || rc=$?
tty_out=$(tr -d '\r' <"$T/tty.out")
if [ "$rc" = 0 ]; then
	assert_contains "ctr run -t: the task has a terminal" "$tty_out" "on-a-tty"
elif shim_is_sdpod; then
	assert_match "ctr run -t refused: the error names the terminal" "[Tt]erminal|tty|TTY|not supported|unsupported" "$tty_out"
else
	fail "ctr run -t" "exit $rc: $tty_out"
fi
ctr_ container rm t-tty >/dev/null 2>&1 || true
containerd_leak_check

containerd_stop
leak_check
