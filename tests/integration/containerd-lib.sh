# shellcheck shell=bash
# shellcheck disable=SC2034 # CTD_*, SHIM_*, CRI_* are for the tests
#
# containerd-lib.sh - a real containerd for the shim tests, sourced after
# lib.sh:
#
#   . "$(dirname "$0")/lib.sh"
#   . "$LIB_DIR/containerd-lib.sh"
#
# What it gives a test:
#   * the runtime under test: $SHIM_RUNTIME (default io.containerd.sdpod.v1,
#     containerd-shim-sdpod-v1 of this build; io.containerd.runc.v2 runs the
#     same tests on the runc shim, which is how the tests themselves are
#     checked), $SHIM_HANDLER its name in the CRI configuration ("sdpod" or
#     "runc"), and shim_is_sdpod for the checks that only make sense with
#     sdpod's shim (pods in `sdpod list`);
#   * containerd_start: Debian's containerd 1.6 as a plain process of the
#     test, its root, state, temporary files, sockets, CNI configuration
#     and netns mounts under $CTD (= $T/ctd), a config.toml registering both
#     runtimes for the CRI plugin (runtimes.sdpod, runtimes.runc), the
#     build's helpers directory first in its PATH (containerd finds
#     io.containerd.sdpod.v1 as containerd-shim-sdpod-v1 on PATH), and
#     SDPOD_DIR=$DATA in its environment, which containerd hands on to the
#     shims it starts: sdpod's shim keeps its pods in the test's data
#     directory, where `sd list` sees them;
#   * containerd_stop: every task and CRI sandbox deleted, containerd
#     stopped by PID, shims left over killed by PID, and what containerd
#     1.6 leaves on the host removed (see containerd_host_cleanup); the EXIT
#     trap does it whatever happened;
#   * ctr_ ARGS: ctr on this containerd, namespace $CTR_NS (default
#     "sdpod-test"; the CRI's images live in "k8s.io");
#   * containerd_images NS...: busybox (lib.sh's busybox_layout) as a
#     docker-archive, imported with `ctr image import` as $CTD_BUSYBOX, and a
#     sandbox image ($CTD_PAUSE: the same tree, its command `sleep`),
#     without any registry;
#   * cri: the test's CRI client (cri/cri-client.py, Debian's python3 with
#     python3-grpcio; stubs generated from cri/cri.proto into $T);
#     cri_call VAR METHOD JSON: a call that must succeed, its answer in VAR;
#   * containerd_leak_check: no shim, no task, no sandbox, no mount, no
#     pod of sdpod's left.
#
# Environment (all optional):
#   SHIM_RUNTIME      io.containerd.sdpod.v1 (default) or io.containerd.runc.v2
#   SHIM_BIN          sdpod's shim (default: containerd-shim-sdpod-v1 beside
#                     $SDPOD_BIN); its directory comes first in containerd's PATH
#   CTD_CALL_TIMEOUT  seconds after which a ctr or CRI call is given up (30)
#   CTD_LOG_LEVEL     containerd's log level (info; "debug" shows the shim calls)
#   CRI_PY            the python3 with grpc (default /usr/bin/python3: Debian's
#                     python3-grpcio is not in another python's path)
#
# Conventions: containerd_start starts a background process of this shell:
# call it from the test's own shell, never in $(...).

require_root "containerd and its shims run as root"
require_tool containerd containerd
require_tool ctr containerd
for _t in jq umoci skopeo; do
	require_tool "$_t"
done
unset _t

# --- the runtime under test ---

SHIM_RUNTIME=${SHIM_RUNTIME:-io.containerd.sdpod.v1}
case "$SHIM_RUNTIME" in
io.containerd.sdpod.v1) SHIM_HANDLER=sdpod ;;
io.containerd.runc.v2) SHIM_HANDLER=runc ;;
*) die "SHIM_RUNTIME=$SHIM_RUNTIME: expected io.containerd.sdpod.v1 or io.containerd.runc.v2" ;;
esac
# The shim of this build (meson does not pass it: it is beside sdpod).
SHIM_BIN=${SHIM_BIN:-$(dirname "$SDPOD")/containerd-shim-sdpod-v1}

shim_is_sdpod() { [ "$SHIM_HANDLER" = sdpod ]; }

if shim_is_sdpod; then
	[ -x "$SHIM_BIN" ] ||
		skip "no $(_show_cmd "$SHIM_BIN") in this build (SHIM_RUNTIME=io.containerd.runc.v2 runs these tests on runc's shim)"
else
	require_tool containerd-shim-runc-v2 containerd
	require_tool runc runc
fi
echo "# runtime under test: $SHIM_RUNTIME (CRI handler $SHIM_HANDLER)"

CTD="$T/ctd"
CTD_SOCK="$CTD/containerd.sock"
CTD_PID=
CTR_NS=${CTR_NS:-sdpod-test}
CTD_BUSYBOX=sdpod.test/busybox:1
CTD_PAUSE=sdpod.test/pause:1
CRI_PY=${CRI_PY:-/usr/bin/python3}
CRI_CLIENT="$LIB_DIR/cri/cri-client.py"
CRI_GEN="$T/cri-gen"
# Where sandboxes' container logs go (PodSandboxConfig.log_directory).
CRI_LOGS="$T/cri-logs"

# --- what containerd 1.6 leaves outside its own directories ---
#
# Measured (1.6.20, runc shim): /run/containerd/s (the shims' sockets,
# named by a hash of address, namespace and id; normally removed by the
# shim when its task is deleted), /run/containerd/runc/NS (runc's state
# root), /run/containerd/fifo; the CRI plugin's CNI cache /var/lib/cni
# (results/NETWORK-SANDBOXID-IFNAME, removed by CNI DEL, the directories
# stay); empty cgroups /sys/fs/cgroup/*/k8s.io and */NAMESPACE (runc's
# default cgroup parents: k8s.io for the CRI's containers, the namespace
# for ctr's). The netns bind mounts go to the state
# directory here (netns_mounts_under_state_dir), not /var/run/netns. Only
# what was not there before containerd_start is removed.
_ctd_had_run=no
_ctd_had_cni=no
_ctd_sockets_before=
_ctd_cgroups_before=

# The cgroups runc makes as the parent of a container's by default:
# /NAMESPACE/ID (ctr), /k8s.io/ID (CRI without a cgroup_parent).
_ctd_cgroups() {
	ls -d /sys/fs/cgroup/*/k8s.io /sys/fs/cgroup/k8s.io \
		"/sys/fs/cgroup/$CTR_NS" /sys/fs/cgroup/*/"$CTR_NS" 2>/dev/null || true
}

_ctd_snapshot_done=no
_ctd_host_snapshot() {
	_ctd_snapshot_done=yes
	[ -e /run/containerd ] && _ctd_had_run=yes
	[ -e /var/lib/cni ] && _ctd_had_cni=yes
	_ctd_sockets_before=$(ls -A /run/containerd/s 2>/dev/null || true)
	_ctd_cgroups_before=$(_ctd_cgroups)
	return 0
}

# containerd_host_cleanup: removes what containerd_start's containerd made
# outside $CTD (it must not run anymore).
containerd_host_cleanup() {
	local s cg
	for s in $(ls -A /run/containerd/s 2>/dev/null || true); do
		grep -qxF -- "$s" <<<"$_ctd_sockets_before" || rm -f -- "/run/containerd/s/$s"
	done
	if [ "$_ctd_had_run" = no ] && [ -d /run/containerd ] && ! grep -qF " /run/containerd" /proc/self/mountinfo; then
		rm -rf -- /run/containerd
	fi
	if [ "$_ctd_had_cni" = no ] && [ -d /var/lib/cni ]; then
		rm -rf -- /var/lib/cni
	fi
	for cg in $(_ctd_cgroups); do
		grep -qxF -- "$cg" <<<"$_ctd_cgroups_before" && continue
		# Only empty ones go (rmdir refuses the others): a leak stays visible.
		find "$cg" -depth -type d -exec rmdir {} \; 2>/dev/null || true
	done
	return 0
}

# --- containerd ---

# The configuration files (shared with bench/cri).
# shellcheck source=cri/containerd-config.sh
. "$LIB_DIR/cri/containerd-config.sh"

# containerd_start [--runtime-dir DIR]: containerd running and answering
# before this returns. DIR (default: the directory of $SHIM_BIN) comes
# first in its PATH.
containerd_start() {
	local rundir i
	rundir=$(dirname "$SHIM_BIN")
	while [ $# -gt 0 ]; do
		case "$1" in
		--runtime-dir) rundir=$2; shift 2 ;;
		*) die "containerd_start: unknown option $1" ;;
		esac
	done
	[ -z "$CTD_PID" ] || die "containerd_start: containerd runs already"
	[ "$_ctd_snapshot_done" = yes ] || _ctd_host_snapshot
	mkdir -p "$CTD"/{root,state,tmp,opt,cni} "$CRI_LOGS"
	ctd_config_toml "$CTD" "$CTD_SOCK" "$CTD_PAUSE" "$SHIM_HANDLER" >"$CTD/config.toml"
	ctd_cni_conflist >"$CTD/cni/10-default.conflist"
	CTD_RUNTIME_DIR=$rundir
	# SDPOD_DIR and SDPOD_STAGE1 reach the shims through containerd's
	# environment.
	env PATH="$rundir:$PATH" SDPOD_DIR="$DATA" SDPOD_STAGE1="$SDPOD_STAGE1" TMPDIR="$CTD/tmp" \
		containerd --config "$CTD/config.toml" >>"$CTD/log" 2>&1 </dev/null &
	CTD_PID=$!
	for i in $(seq 200); do
		ctr --address "$CTD_SOCK" version >/dev/null 2>&1 && break
		kill -0 "$CTD_PID" 2>/dev/null || break
		sleep 0.05
	done
	ctr --address "$CTD_SOCK" version >/dev/null 2>&1 ||
		die "containerd did not start: $(tail -n 5 "$CTD/log")"
	echo "# containerd $(containerd --version | awk '{print $3}'), pid $CTD_PID, $(_show_cmd "$CTD_SOCK")"
}

# ctr_ ARGS: ctr on the test's containerd, namespace $CTR_NS, killed after
# $CTD_CALL_TIMEOUT seconds (exit 137): a shim that hangs must not take
# the test's whole time (meson's timeout) one call after the other; what
# the killed call left is then a leak the next check reports.
CTD_CALL_TIMEOUT=${CTD_CALL_TIMEOUT:-30}
ctr_() {
	timeout -s KILL "$CTD_CALL_TIMEOUT" ctr --address "$CTD_SOCK" --namespace "$CTR_NS" "$@"
}

# _ctd_purge: every task, container and CRI sandbox of every namespace
# deleted, while containerd runs (a shim is ended through containerd, so
# that it cleans up its task: killing a runc shim would leave its
# container running).
_ctd_purge() {
	local ns id
	[ -n "$CTD_PID" ] && kill -0 "$CTD_PID" 2>/dev/null || return 0
	if [ -d "$CRI_GEN" ]; then
		for id in $(cri ListPodSandbox '{}' 2>/dev/null | jq -r '.items[].id' 2>/dev/null); do
			cri StopPodSandbox "{\"pod_sandbox_id\": \"$id\"}" >/dev/null 2>&1
			cri RemovePodSandbox "{\"pod_sandbox_id\": \"$id\"}" >/dev/null 2>&1
		done
	fi
	for ns in $(ctr --address "$CTD_SOCK" namespaces ls -q 2>/dev/null); do
		for id in $(ctr --address "$CTD_SOCK" -n "$ns" tasks ls -q 2>/dev/null); do
			timeout 20 ctr --address "$CTD_SOCK" -n "$ns" tasks kill -a -s SIGKILL "$id" >/dev/null 2>&1
			timeout 20 ctr --address "$CTD_SOCK" -n "$ns" tasks delete -f "$id" >/dev/null 2>&1
		done
		for id in $(ctr --address "$CTD_SOCK" -n "$ns" containers ls -q 2>/dev/null); do
			timeout 20 ctr --address "$CTD_SOCK" -n "$ns" containers rm "$id" >/dev/null 2>&1
		done
	done
	return 0
}

# ctd_shim_pids: the shims of this containerd (their command line names
# its address), running.
ctd_shim_pids() {
	local p
	for p in /proc/[0-9]*; do
		{ tr '\0' ' ' <"$p/cmdline"; } 2>/dev/null | grep -q -- "containerd-shim.* -address $CTD_SOCK " &&
			echo "${p#/proc/}"
	done
	return 0
}

# containerd_stop: tasks and sandboxes deleted, containerd stopped
# (SIGTERM, SIGKILL after 10 s), shims left over killed, what it made on
# the host removed, $CTD's mounts unmounted.
containerd_stop() {
	local i pid m
	[ -n "$CTD_PID" ] || return 0
	_ctd_purge
	kill -TERM "$CTD_PID" 2>/dev/null || true
	for i in $(seq 100); do
		kill -0 "$CTD_PID" 2>/dev/null || break
		sleep 0.1
	done
	kill -KILL "$CTD_PID" 2>/dev/null || true
	wait "$CTD_PID" 2>/dev/null || true
	CTD_PID=
	for pid in $(ctd_shim_pids); do
		echo "# containerd_stop: killing shim $pid left behind: $(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null)"
		kill -KILL "$pid" 2>/dev/null || true
	done
	# Deepest first; never through the test's own directory structure.
	for m in $(awk -v p="$CTD/" 'index($5, p) == 1 { print $5 }' /proc/self/mountinfo | sort -r); do
		umount -l -- "$m" 2>/dev/null || true
	done
	containerd_host_cleanup
}

# containerd_log_tail [N]: the end of containerd's log, for a failure.
containerd_log_tail() {
	grep -v 'level=info' "$CTD/log" 2>/dev/null | tail -n "${1:-30}" | cut -c1-400 | sed 's/^/#   /'
}

_ctd_on_exit() {
	local rc=$1
	set +e
	trap - ERR
	# A reader of the test's output that went away must not stop the
	# clean-up half-way.
	trap '' PIPE
	if [ "$rc" != 0 ] || [ "$_failures" -gt 0 ]; then
		echo "# --- the last warnings and errors of containerd ($(_show_cmd "$CTD/log")):"
		containerd_log_tail 40
	fi
	containerd_stop
	remove_all_pods >/dev/null 2>&1
}
trap '_rc=$?; _ctd_on_exit "$_rc"; (exit "$_rc"); _lib_on_exit' EXIT

# --- images ---

# containerd_images NS...: busybox and the sandbox image imported into
# each namespace NS (default: $CTR_NS). Built once per test, in $T/ctd-img.
containerd_images() {
	local d="$T/ctd-img" ns
	[ $# -gt 0 ] || set -- "$CTR_NS"
	if [ ! -f "$d/pause.tar" ]; then
		busybox_layout
		mkdir -p "$d"
		img_docker_archive "$IMG/oci" latest "$d/busybox.tar" "$CTD_BUSYBOX"
		# The sandbox image: the same tree, a command that waits for ever
		# (CRI's "pause"; its container is killed with SIGKILL).
		cp -a -- "$IMG/oci" "$d/pause-oci"
		umoci config --image "$d/pause-oci:latest" --tag pause \
			--clear config.entrypoint --clear config.cmd \
			--config.entrypoint /bin/sleep --config.cmd 2147483647 >/dev/null ||
			die "umoci config of the sandbox image failed"
		img_docker_archive "$d/pause-oci" pause "$d/pause.tar" "$CTD_PAUSE"
	fi
	for ns; do
		ctr --address "$CTD_SOCK" -n "$ns" image import "$d/busybox.tar" >"$d/import.out" 2>&1 ||
			die "ctr image import busybox into $ns: $(cat "$d/import.out")"
		ctr --address "$CTD_SOCK" -n "$ns" image import "$d/pause.tar" >"$d/import.out" 2>&1 ||
			die "ctr image import pause into $ns: $(cat "$d/import.out")"
	done
}

# --- the CRI ---

# cri_setup: the CRI client ready (stubs generated) and the CRI plugin
# ready (runtime and network conditions true).
cri_setup() {
	[ -x "$CRI_PY" ] || skip "needs Debian's python3 ($CRI_PY)"
	"$CRI_PY" -c 'import grpc, grpc_tools.protoc' 2>/dev/null ||
		skip "needs python3-grpcio and python3-grpc-tools (for $CRI_PY)"
	cri wait-ready 30 || die "containerd's CRI plugin is not ready: $(containerd_log_tail 5)"
}

# cri METHOD [JSON]: the CRI client on this containerd (see cri-client.py).
# Each call times out after $CTD_CALL_TIMEOUT seconds (DEADLINE_EXCEEDED).
cri() {
	"$CRI_PY" "$CRI_CLIENT" --socket "$CTD_SOCK" --gen "$CRI_GEN" --timeout "$CTD_CALL_TIMEOUT" "$@"
}

# cri_call VAR METHOD JSON: a call that must succeed (a failed check
# otherwise); VAR gets the answer (JSON), "" after a failure.
cri_call() {
	local var=$1 out rc=0
	shift
	out=$(cri "$@" 2>"$T/cri.err") || rc=$?
	if [ "$rc" = 0 ]; then
		pass "CRI $1"
	else
		fail "CRI $1" "exit $rc: $(cat "$T/cri.err")" "request: ${2:-}"
		out=
	fi
	printf -v "$var" '%s' "$out"
}

# cri_sandbox_config NAME: a PodSandboxConfig (JSON) for a sandbox NAME,
# its logs in $CRI_LOGS/NAME.
cri_sandbox_config() {
	jq -nc --arg n "$1" --arg logs "$CRI_LOGS/$1" \
		'{metadata: {name: $n, uid: ("uid-" + $n), namespace: "sdpod-test", attempt: 0},
		  hostname: $n, log_directory: $logs,
		  linux: {security_context: {namespace_options: {network: "POD", pid: "CONTAINER", ipc: "POD"}}}}'
}

# --- leaks ---

# containerd_leak_check: nothing of a task is left while containerd runs:
# no task or container in any namespace, no CRI sandbox, no shim (after
# the last task of a shim is deleted, the shim exits), no mount that was
# not there at leak_begin, no sdpod pod (with sdpod's shim).
containerd_leak_check() {
	local ns left="" pids i
	for ns in $(ctr_ namespaces ls -q 2>/dev/null); do
		left+=$(ctr --address "$CTD_SOCK" -n "$ns" tasks ls -q 2>/dev/null | sed "s|^|task $ns/|")
		left+=$(ctr --address "$CTD_SOCK" -n "$ns" containers ls -q 2>/dev/null | sed "s|^|container $ns/|")
	done
	if [ -d "$CRI_GEN" ]; then
		left+=$(cri ListPodSandbox '{}' 2>/dev/null | jq -r '.items[] | "sandbox " + .id')
	fi
	assert_eq "leak: no task, container or sandbox left in containerd" "" "$left"
	# A shim exits a moment after its last task is deleted.
	for i in $(seq 50); do
		pids=$(ctd_shim_pids)
		[ -z "$pids" ] && break
		sleep 0.1
	done
	assert_eq "leak: no shim process left" "" "$pids"
	# containerd itself mounts nothing while no task exists: the host has
	# the mounts it had at leak_begin (lib.sh), before containerd_start.
	assert_mounts_unchanged "leak: no mount left (snapshots, rootfs, netns)"
	if shim_is_sdpod; then
		assert_eq "leak: no sdpod pod left" "" "$(sd list --no-legend 2>&1)"
	fi
}
