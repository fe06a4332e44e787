#!/bin/bash
#
# test-shim-cri-spec.sh - what a Kubernetes pod's security context asks,
# through containerd's CRI plugin (containerd-lib.sh), applied or refused
# by name, never ignored:
#   * a Localhost seccomp profile that denies mkdir denies it (main
#     process and ExecSync); a profile with an unknown action is refused,
#     and (sdpod) one of 5000 rules, quickly; RuntimeDefault (containerd's profile) denies
#     personality(ADDR_NO_RANDOMIZE), Unconfined allows it;
#   * a set-user-ID program of a container running as user 1000 gains
#     root with allowPrivilegeEscalation (no_new_privs false) and not
#     without (no_new_privs true);
#   * the spec's maskedPaths (unreadable) and readonlyPaths (unwritable);
#   * sandbox sysctls hold in the pod's network namespace
#     (net.ipv4.ip_unprivileged_port_start) and IPC namespace
#     (kernel.shm_rmid_forced); a sysctl that is the host's is refused;
#   * hostPID: runc honours it; sdpod's shim refuses it, naming it.
#
# SHIM_RUNTIME=io.containerd.runc.v2 runs the same test on runc's shim (the
# check of the test itself); the default is sdpod's shim of this build.

. "$(dirname "$0")/lib.sh"

use_real_images
. "$LIB_DIR/containerd-lib.sh"
for _p in ptp host-local loopback portmap firewall; do
	[ -x "/usr/lib/cni/$_p" ] || skip "no CNI plugin $_p in /usr/lib/cni (apt-get install containernetworking-plugins)"
done
require_tool "${CC:-cc}" gcc

PROBE_IMAGE=sdpod.test/spec-probe:1

# The probe image: busybox, spec-probe set-user-ID root, a file to mask and
# a directory to make read-only.
P="$T/probe"
mkdir -p "$P"
"${CC:-cc}" -static -O2 -Wall -Werror -D_GNU_SOURCE -o "$P/spec-probe" "$LIB_DIR/spec-probe.c" ||
	die "cannot build spec-probe"
img_busybox_rootfs "$P/rootfs"
install -o 0 -g 0 -m 4755 "$P/spec-probe" "$P/rootfs/usr/bin/spec-probe"
echo secret >"$P/rootfs/etc/masked-file"
mkdir -p "$P/rootfs/srv/ro"
chmod 0777 "$P/rootfs/srv/ro"
img_oci_layout "$P/oci" latest "$P/rootfs"
img_docker_archive "$P/oci" latest "$P/probe.tar" "$PROBE_IMAGE"

# A Localhost profile: everything but mkdir.
PROFILE="$T/deny-mkdir.json"
cat >"$PROFILE" <<'JSON'
{"defaultAction": "SCMP_ACT_ALLOW",
 "architectures": ["SCMP_ARCH_X86_64", "SCMP_ARCH_X86", "SCMP_ARCH_X32"],
 "syscalls": [{"names": ["mkdir", "mkdirat"], "action": "SCMP_ACT_ERRNO", "errnoRet": 1}]}
JSON

leak_begin
containerd_start
containerd_images k8s.io
ctr --address "$CTD_SOCK" -n k8s.io image import "$P/probe.tar" >"$P/import.out" 2>&1 ||
	die "ctr image import of the probe: $(cat "$P/import.out")"
cri_setup

# --- a sandbox with a sysctl ---

SBC=$(cri_sandbox_config spec-pod | jq -c '.linux.sysctls = {"net.ipv4.ip_unprivileged_port_start": "42", "kernel.shm_rmid_forced": "1"}')
cri_call R RunPodSandbox "{\"config\": $SBC, \"runtime_handler\": \"$SHIM_HANDLER\"}"
SB=$(jq -r '.pod_sandbox_id // empty' <<<"$R")
[ -n "$SB" ] || die "RunPodSandbox gave no sandbox id: $R"

# start_container NAME SECURITY_CONTEXT ARGS...: a container of the probe
# image that runs ARGS; its id in $CID.
start_container() {
	local name=$1 sc=$2 cmd
	shift 2
	cmd=$(printf '%s\n' "$@" | jq -R . | jq -sc .)
	cri_call C CreateContainer "$(jq -nc --arg sb "$SB" --argjson sbc "$SBC" --arg n "$name" --arg img "$PROBE_IMAGE" \
		--argjson cmd "$cmd" --argjson sc "$sc" \
		'{pod_sandbox_id: $sb, sandbox_config: $sbc,
		  config: {metadata: {name: $n}, image: {image: $img}, command: $cmd, log_path: ($n + ".log"),
		           linux: {security_context: $sc}}}')"
	CID=$(jq -r '.container_id // empty' <<<"$C")
	cri_call _ StartContainer "{\"container_id\": \"$CID\"}"
}
container_is() { [ "$(cri ContainerStatus "{\"container_id\": \"$1\"}" 2>/dev/null | jq -r .status.state)" = "$2" ]; }
# exec_in ID ARGS...: ExecSync, its answer in $E.
exec_in() {
	local id=$1 cmd
	shift
	cmd=$(printf '%s\n' "$@" | jq -R . | jq -sc .)
	cri_call E ExecSync "{\"container_id\": \"$id\", \"cmd\": $cmd, \"timeout\": 20}"
}
# log_of NAME: the CRI log's lines, without their prefixes.
log_of() { sed -E 's/^[^ ]+ (stdout|stderr) [FP] //' "$CRI_LOGS/spec-pod/$1.log" 2>/dev/null; }

# --- seccomp: Localhost ---

start_container local "{\"seccomp\": {\"profile_type\": \"Localhost\", \"localhost_ref\": \"$PROFILE\"}}" \
	/bin/sh -c 'spec-probe mkdir /tmp/a; spec-probe personality; exec sleep 600'
LOCAL=$CID
wait_for "Localhost profile: the container runs" 30 container_is "$LOCAL" CONTAINER_RUNNING || true
wait_until 10 grep -q personality "$CRI_LOGS/spec-pod/local.log" || true
assert_contains "Localhost profile: mkdir denied (EPERM)" "$(log_of local)" "mkdir: Operation not permitted"
assert_contains "Localhost profile: what it allows works" "$(log_of local)" "personality: ok"
exec_in "$LOCAL" spec-probe mkdir /tmp/b
assert_jq "Localhost profile: mkdir denied in ExecSync too" "$E" .stdout_text '"mkdir: Operation not permitted\n"'

# --- hostile profiles: refused, nothing of them runs ---

# try_profile NAME FILE: a container with that Localhost profile; $TRY_ERR
# gets the error of the call that refused it ("" when it started).
try_profile() {
	local out rc=0
	out=$(cri CreateContainer "$(jq -nc --arg sb "$SB" --argjson sbc "$SBC" --arg n "$1" --arg img "$PROBE_IMAGE" \
		--arg p "$2" \
		'{pod_sandbox_id: $sb, sandbox_config: $sbc,
		  config: {metadata: {name: $n}, image: {image: $img}, command: ["/bin/sleep", "600"],
		           log_path: ($n + ".log"),
		           linux: {security_context: {seccomp: {profile_type: "Localhost", localhost_ref: $p}}}}}')" \
		2>"$T/try.err") || rc=$?
	TRY_ERR=
	if [ "$rc" != 0 ]; then
		TRY_ERR=$(cat "$T/try.err")
		return
	fi
	CID=$(jq -r '.container_id // empty' <<<"$out")
	cri StartContainer "{\"container_id\": \"$CID\"}" >/dev/null 2>"$T/try.err" || TRY_ERR=$(cat "$T/try.err")
	assert_ne "profile $1: the container does not run" CONTAINER_RUNNING \
		"$(cri ContainerStatus "{\"container_id\": \"$CID\"}" 2>/dev/null | jq -r .status.state)"
	cri RemoveContainer "{\"container_id\": \"$CID\"}" >/dev/null 2>&1 || true
}
echo '{"defaultAction": "SCMP_ACT_ALLOW", "syscalls": [{"names": ["mkdir"], "action": "SCMP_ACT_EXPLODE"}]}' \
	>"$T/bad-action.json"
try_profile bad-action "$T/bad-action.json"
assert_ne "a profile with an unknown action: refused" "" "$TRY_ERR"
if shim_is_sdpod; then
	assert_contains "a profile with an unknown action: the error names it" "$TRY_ERR" "linux.seccomp.syscalls[0].action"
	# 5000 rules: refused before anything is compiled.
	jq -nc '{defaultAction: "SCMP_ACT_ALLOW",
	         syscalls: [range(5000) | {names: ["mkdir", "rmdir", "unlink"], action: "SCMP_ACT_LOG"}]}' >"$T/huge.json"
	t0=$(date +%s%N)
	try_profile huge "$T/huge.json"
	echo "# a profile of 5000 rules refused in $((($(date +%s%N) - t0) / 1000000)) ms (the whole CreateContainer)"
	assert_contains "a profile of 5000 rules: refused, named" "$TRY_ERR" "more than 4096 entries"
fi

# --- seccomp: RuntimeDefault and Unconfined ---

start_container default '{"seccomp": {"profile_type": "RuntimeDefault"}}' \
	/bin/sh -c 'spec-probe personality; spec-probe mkdir /tmp/a; exec sleep 600'
DEFAULT=$CID
start_container unconfined '{"seccomp": {"profile_type": "Unconfined"}}' \
	/bin/sh -c 'spec-probe personality; exec sleep 600'
UNCONFINED=$CID
wait_until 20 grep -q mkdir "$CRI_LOGS/spec-pod/default.log" || true
wait_until 20 grep -q personality "$CRI_LOGS/spec-pod/unconfined.log" || true
assert_contains "RuntimeDefault: personality(ADDR_NO_RANDOMIZE) denied" "$(log_of default)" \
	"personality: Operation not permitted"
assert_contains "RuntimeDefault: mkdir allowed" "$(log_of default)" "mkdir: ok"
assert_contains "Unconfined: personality(ADDR_NO_RANDOMIZE) allowed" "$(log_of unconfined)" "personality: ok"

# --- allowPrivilegeEscalation for a user that is not root ---

start_container escalate '{"run_as_user": {"value": 1000}, "no_new_privs": false}' \
	/bin/sh -c 'id -u; spec-probe euid; exec sleep 600'
ESCALATE=$CID
start_container no-escalate '{"run_as_user": {"value": 1000}, "no_new_privs": true}' \
	/bin/sh -c 'id -u; spec-probe euid; exec sleep 600'
NOESCALATE=$CID
wait_until 20 grep -q euid "$CRI_LOGS/spec-pod/escalate.log" || true
wait_until 20 grep -q euid "$CRI_LOGS/spec-pod/no-escalate.log" || true
assert_eq "allowPrivilegeEscalation: the container runs as 1000, its set-user-ID program as root" \
	"1000 euid=0" "$(log_of escalate | tr '\n' ' ' | sed 's/ $//')"
assert_eq "no allowPrivilegeEscalation: the set-user-ID program gains nothing" \
	"1000 euid=1000" "$(log_of no-escalate | tr '\n' ' ' | sed 's/ $//')"
exec_in "$ESCALATE" /bin/sh -c 'id -u; spec-probe euid'
assert_jq "allowPrivilegeEscalation: in ExecSync too" "$E" .stdout_text '"1000\neuid=0\n"'
exec_in "$NOESCALATE" /bin/sh -c 'id -u; spec-probe euid; cat /proc/self/status | grep NoNewPrivs'
assert_contains "no allowPrivilegeEscalation: ExecSync has NoNewPrivs" "$(jq -r .stdout_text <<<"$E")" "NoNewPrivs:	1"

# --- maskedPaths, readonlyPaths ---

start_container masked '{"masked_paths": ["/etc/masked-file"], "readonly_paths": ["/srv/ro"]}' \
	/bin/sh -c 'exec sleep 600'
MASKED=$CID
exec_in "$MASKED" /bin/sh -c 'cat /etc/masked-file 2>/dev/null; echo; touch /srv/ro/x 2>/dev/null && echo wrote; cat /etc/passwd >/dev/null && echo other-files'
assert_not_contains "maskedPaths: the file cannot be read" "$(jq -r .stdout_text <<<"$E")" secret
assert_not_contains "readonlyPaths: the directory cannot be written" "$(jq -r .stdout_text <<<"$E")" wrote
assert_contains "maskedPaths: the rest is there" "$(jq -r .stdout_text <<<"$E")" other-files

# --- the sandbox's sysctl ---

exec_in "$MASKED" cat /proc/sys/net/ipv4/ip_unprivileged_port_start
assert_jq "sysctl net.ipv4.ip_unprivileged_port_start: set in the pod's network namespace" "$E" .stdout_text '"42\n"'
assert_ne "sysctl: not the host's" 42 "$(cat /proc/sys/net/ipv4/ip_unprivileged_port_start)"
exec_in "$MASKED" cat /proc/sys/kernel/shm_rmid_forced
assert_jq "sysctl kernel.shm_rmid_forced: set in the pod's IPC namespace" "$E" .stdout_text '"1\n"'
assert_eq "sysctl kernel.shm_rmid_forced: not the host's" 0 "$(cat /proc/sys/kernel/shm_rmid_forced)"

for c in "$LOCAL" "$DEFAULT" "$UNCONFINED" "$ESCALATE" "$NOESCALATE" "$MASKED"; do
	cri StopContainer "{\"container_id\": \"$c\", \"timeout\": 1}" >/dev/null 2>&1 || true
	cri RemoveContainer "{\"container_id\": \"$c\"}" >/dev/null 2>&1 || true
done
cri_call _ StopPodSandbox "{\"pod_sandbox_id\": \"$SB\"}"
cri_call _ RemovePodSandbox "{\"pod_sandbox_id\": \"$SB\"}"

# --- a sysctl of the host's: refused (runc too) ---

SBC2=$(cri_sandbox_config host-sysctl | jq -c '.linux.sysctls = {"kernel.core_pattern": "|/tmp/x"}')
assert_exit 3 cri RunPodSandbox "{\"config\": $SBC2, \"runtime_handler\": \"$SHIM_HANDLER\"}"
assert_contains "a sysctl that is not namespaced: refused, named" "$ERR" "kernel.core_pattern"
cri_call L ListPodSandbox '{}'
for sb in $(jq -r '.items[]?.id' <<<"$L"); do
	cri StopPodSandbox "{\"pod_sandbox_id\": \"$sb\"}" >/dev/null 2>&1 || true
	cri RemovePodSandbox "{\"pod_sandbox_id\": \"$sb\"}" >/dev/null 2>&1 || true
done

# --- hostPID ---

SBC3=$(cri_sandbox_config host-pid | jq -c '.linux.security_context.namespace_options.pid = "NODE"')
rc=0
cri RunPodSandbox "{\"config\": $SBC3, \"runtime_handler\": \"$SHIM_HANDLER\"}" >"$T/stdout" 2>"$T/stderr" || rc=$?
if shim_is_sdpod; then
	assert_eq "hostPID: refused" 3 "$rc"
	assert_contains "hostPID: the error names it" "$(cat "$T/stderr")" hostPID
else
	assert_eq "hostPID: runc honours it" 0 "$rc"
fi
cri_call L ListPodSandbox '{}'
for sb in $(jq -r '.items[]?.id' <<<"$L"); do
	cri StopPodSandbox "{\"pod_sandbox_id\": \"$sb\"}" >/dev/null 2>&1 || true
	cri RemovePodSandbox "{\"pod_sandbox_id\": \"$sb\"}" >/dev/null 2>&1 || true
done
containerd_leak_check

containerd_stop
leak_check
