#!/bin/bash
#
# test-shim-cri.sh - a Kubernetes pod's life through containerd's CRI plugin
# (Debian's containerd 1.6, started by the test; sdpod's network "default"
# as its CNI configuration; a sandbox image imported locally) with the
# test's own CRI client (cri/cri-client.py): RunPodSandbox, two containers
# in the pod (one serves on a port, the other reaches it on localhost),
# ContainerStatus (exit code), ExecSync, the CRI log file, StopContainer,
# StopPodSandbox, RemovePodSandbox; afterwards no sandbox, container,
# shim, mount, lease or NAT rule is left, and with sdpod's shim no pod.
# Bad input: a container for an unknown sandbox, an unknown runtime
# handler, an unknown container; with sdpod's shim, a container asking for
# a terminal (refused clearly, nothing half made, or run).
#
# SHIM_RUNTIME=io.containerd.runc.v2 runs the same test on runc's shim (the
# check of the test itself); the default is sdpod's shim of this build.

. "$(dirname "$0")/lib.sh"

use_real_images
. "$LIB_DIR/containerd-lib.sh"
require_tool iptables-save iptables
require_tool curl
for _p in ptp host-local loopback portmap firewall; do
	[ -x "/usr/lib/cni/$_p" ] || skip "no CNI plugin $_p in /usr/lib/cni (apt-get install containernetworking-plugins)"
done

LEASES=/run/sdpod/cni/networks/default

leak_begin
containerd_start
containerd_images k8s.io
cri_setup

# --- the runtime answers ---

cri_call V Version '{}'
assert_jq "Version: containerd's CRI" "$V" .runtime_name '"containerd"'
assert_jq "Version: CRI v1" "$V" .runtime_api_version '"v1"'
cri_call I ImageStatus "{\"image\": {\"image\": \"$CTD_PAUSE\"}}"
assert_jq "ImageStatus: the sandbox image was imported" "$I" '.image.repo_tags | index("'"$CTD_PAUSE"'") != null' true

# --- the sandbox ---

SBC=$(cri_sandbox_config web-pod)
cri_call R RunPodSandbox "{\"config\": $SBC, \"runtime_handler\": \"$SHIM_HANDLER\"}"
SB=$(jq -r '.pod_sandbox_id // empty' <<<"$R")
[ -n "$SB" ] || die "RunPodSandbox gave no sandbox id: $R"
cri_call S PodSandboxStatus "{\"pod_sandbox_id\": \"$SB\"}"
assert_jq "PodSandboxStatus: ready" "$S" .status.state '"SANDBOX_READY"'
assert_jq "PodSandboxStatus: the runtime handler" "$S" .status.runtime_handler "\"$SHIM_HANDLER\""
IP=$(jq -r '.status.network.ip // empty' <<<"$S")
assert_match "PodSandboxStatus: an address of sdpod's default network" '^10\.77\.[0-9]+\.[0-9]+$' "$IP"
assert_file_exists "$LEASES/$IP"
cri_call L ListPodSandbox '{}'
assert_jq "ListPodSandbox: the sandbox" "$L" '[.items[].id]' "[\"$SB\"]"
POD=
if shim_is_sdpod; then
	pods=$(sd list --no-legend 2>&1)
	assert_eq "sdpod list: one pod for the sandbox" 1 "$(grep -c . <<<"$pods")"
	assert_contains "sdpod list: it runs" "$pods" running
	# Its whole UUID (the listing shortens it).
	POD=$(sd list --format=json 2>/dev/null | jq -r 'if length == 1 then .[0].uuid else empty end' 2>/dev/null || true)
	assert_match "sdpod list: the sandbox's pod" '^[0-9a-f-]{36}$' "$POD"
fi

# --- two containers: one serves, the other reaches it on localhost ---

# container_json NAME LOG ARGS...: a CreateContainerRequest for the sandbox.
container_json() {
	local name=$1 log=$2
	shift 2
	local cmd
	# (Not jq's --args: jq would still take a "-c" among them as its own.)
	cmd=$(printf '%s\n' "$@" | jq -R . | jq -sc .)
	jq -nc --arg sb "$SB" --argjson sbc "$SBC" --arg n "$name" --arg img "$CTD_BUSYBOX" --arg log "$log" \
		--argjson cmd "$cmd" \
		'{pod_sandbox_id: $sb, sandbox_config: $sbc,
		  config: {metadata: {name: $n}, image: {image: $img}, command: $cmd, log_path: $log,
		           envs: [{key: "WHO", value: $n}]}}'
}
container_state() {
	cri ContainerStatus "{\"container_id\": \"$1\"}" 2>/dev/null | jq -r .status.state
}
container_is() { [ "$(container_state "$1")" = "$2" ]; }

cri_call C CreateContainer "$(container_json web web.log /bin/sh -c \
	'mkdir -p /tmp/www && echo "served by $WHO" >/tmp/www/index.html && exec httpd -f -p 8080 -h /tmp/www')"
WEB=$(jq -r '.container_id // empty' <<<"$C")
cri_call _ StartContainer "{\"container_id\": \"$WEB\"}"
wait_for "the web container runs" 20 container_is "$WEB" CONTAINER_RUNNING ||
	echo "# its status: $(cri ContainerStatus "{\"container_id\": \"$WEB\"}" 2>&1 | cut -c1-600)" \
		"# its log: $(cut -c1-300 "$CRI_LOGS/web-pod/web.log" 2>&1 | tail -n 5)"
# (One curl that retries: wait_until would count attempts, and a connection
# that hangs would make them long.)
check "the host reaches the web container on the sandbox's address" \
	curl -fsS -o /dev/null --max-time 20 --retry 100 --retry-delay 0 --retry-connrefused "http://$IP:8080/"

cri_call C CreateContainer "$(container_json client client.log /bin/sh -c \
	'echo to-stdout; echo to-stderr >&2; for i in $(seq 100); do wget -q -O - http://127.0.0.1:8080/ && exit 7; sleep 0.1; done; exit 1')"
CLIENT=$(jq -r '.container_id // empty' <<<"$C")
cri_call _ StartContainer "{\"container_id\": \"$CLIENT\"}"
wait_for "the client container ends" 30 container_is "$CLIENT" CONTAINER_EXITED || true
cri_call CS ContainerStatus "{\"container_id\": \"$CLIENT\"}"
assert_jq "ContainerStatus: exit code 7 (it reached the web container on localhost)" "$CS" .status.exit_code 7
# Both times are there. Their order is not checked: containerd 1.6 stamps
# started_at itself once the start returned, and a container that ends at
# once may have finished a moment before that (seen with runc's shim too).
assert_jq "ContainerStatus: started and finished times" "$CS" \
	'(.status.started_at | tonumber) > 0 and (.status.finished_at | tonumber) > 0' true
LOG="$CRI_LOGS/web-pod/client.log"
assert_jq "ContainerStatus: the log path" "$CS" .status.log_path "\"$LOG\""
if [ -f "$LOG" ]; then
	logtext=$(cat "$LOG")
	assert_match "the CRI log: stdout, in CRI's format" \
		'(^|'$'\n'')[0-9T:.+Z-]+ stdout F to-stdout('$'\n''|$)' "$logtext"
	assert_match "the CRI log: stderr" '[0-9T:.+Z-]+ stderr F to-stderr' "$logtext"
	assert_match "the CRI log: what the client got from the web container" 'stdout F served by web' "$logtext"
else
	fail "the CRI log $(_show_cmd "$LOG") exists"
fi
if shim_is_sdpod; then
	assert_eq "sdpod list: the containers are apps of the sandbox's pod, not pods" 1 \
		"$(sd list --no-legend 2>&1 | grep -c .)"
fi

# --- ExecSync ---

cri_call E ExecSync "{\"container_id\": \"$WEB\", \"cmd\": [\"cat\", \"/tmp/www/index.html\"], \"timeout\": 20}"
assert_jq "ExecSync: runs in the container" "$E" '[.exit_code, .stdout_text]' '[0,"served by web\n"]'
cri_call E ExecSync "{\"container_id\": \"$WEB\", \"cmd\": [\"/bin/sh\", \"-c\", \"echo out; echo err >&2; exit 3\"], \"timeout\": 20}"
assert_jq "ExecSync: exit code, stdout and stderr" "$E" '[.exit_code, .stdout_text, .stderr_text]' '[3,"out\n","err\n"]'
cri_call E ExecSync "{\"container_id\": \"$WEB\", \"cmd\": [\"/bin/sh\", \"-c\", \"echo \$WHO\"], \"timeout\": 20}"
assert_jq "ExecSync: the container's environment" "$E" .stdout_text '"web\n"'

cri_call LC ListContainers "{\"filter\": {\"pod_sandbox_id\": \"$SB\"}}"
assert_jq "ListContainers: both containers" "$LC" '[.containers[].metadata.name] | sort' '["client","web"]'

# --- the end of the pod ---

cri_call _ StopContainer "{\"container_id\": \"$WEB\", \"timeout\": 2}"
cri_call WS ContainerStatus "{\"container_id\": \"$WEB\"}"
assert_jq "StopContainer: the container has exited" "$WS" .status.state '"CONTAINER_EXITED"'
# httpd ends on SIGTERM (143), or, as the PID 1 of its own pid namespace
# (runc), is killed after the timeout (137).
assert_jq "StopContainer: ended by SIGTERM or SIGKILL" "$WS" '.status.exit_code | IN(143, 137)' true
cri_call _ RemoveContainer "{\"container_id\": \"$WEB\"}"
cri_call _ RemoveContainer "{\"container_id\": \"$CLIENT\"}"
cri_call LC ListContainers "{\"filter\": {\"pod_sandbox_id\": \"$SB\"}}"
assert_jq "RemoveContainer: no container left in the sandbox" "$LC" '.containers | length' 0

cri_call _ StopPodSandbox "{\"pod_sandbox_id\": \"$SB\"}"
cri_call S PodSandboxStatus "{\"pod_sandbox_id\": \"$SB\"}"
assert_jq "StopPodSandbox: not ready" "$S" .status.state '"SANDBOX_NOTREADY"'
assert_file_absent "$LEASES/$IP"
cri_call _ StopPodSandbox "{\"pod_sandbox_id\": \"$SB\"}"
cri_call _ RemovePodSandbox "{\"pod_sandbox_id\": \"$SB\"}"
cri_call L ListPodSandbox '{}'
assert_jq "RemovePodSandbox: no sandbox left" "$L" '.items | length' 0
assert_eq "no NAT or filter rule names the sandbox's address" "" "$(iptables-save 2>/dev/null | grep -F -- "$IP/" || true)"
[ -z "$POD" ] || no_pod_procs "$POD"
assert_eq "no CNI cache entry of the sandbox" "" "$(ls -d /var/lib/cni/results/*"$SB"* 2>/dev/null || true)"
containerd_leak_check

# --- bad input ---

SBC2=$(cri_sandbox_config bad-pod)
assert_exit 3 cri CreateContainer "$(jq -nc --argjson sbc "$SBC2" --arg img "$CTD_BUSYBOX" \
	'{pod_sandbox_id: "no-such-sandbox", sandbox_config: $sbc,
	  config: {metadata: {name: "x"}, image: {image: $img}, command: ["/bin/true"], log_path: "x.log"}}')"
assert_contains "CreateContainer in an unknown sandbox: NOT_FOUND" "$ERR" "CRI ERROR NOT_FOUND"
assert_exit 3 cri StartContainer '{"container_id": "no-such-container"}'
assert_contains "StartContainer of an unknown container: NOT_FOUND" "$ERR" "CRI ERROR NOT_FOUND"
assert_exit 3 cri ExecSync '{"container_id": "no-such-container", "cmd": ["/bin/true"]}'
assert_contains "ExecSync in an unknown container: NOT_FOUND" "$ERR" "CRI ERROR NOT_FOUND"
assert_exit 3 cri RunPodSandbox "{\"config\": $SBC2, \"runtime_handler\": \"no-such-handler\"}"
assert_contains "RunPodSandbox with an unknown runtime handler: refused" "$ERR" "no-such-handler"
cri_call L ListPodSandbox '{}'
assert_jq "an unknown runtime handler: no sandbox half made" "$L" '.items | length' 0

# A container with a terminal, in a sandbox of its own: runc gives it one;
# sdpod's shim gives it one or refuses it with a clear error, and then
# nothing of it runs.
cri_call R RunPodSandbox "{\"config\": $SBC2, \"runtime_handler\": \"$SHIM_HANDLER\"}"
SB2=$(jq -r '.pod_sandbox_id // empty' <<<"$R")
cri_call C CreateContainer "$(jq -nc --arg sb "$SB2" --argjson sbc "$SBC2" --arg img "$CTD_BUSYBOX" \
	'{pod_sandbox_id: $sb, sandbox_config: $sbc,
	  config: {metadata: {name: "tty"}, image: {image: $img}, tty: true, stdin: true, log_path: "tty.log",
	           command: ["/bin/sh", "-c", "test -t 1 && echo on-a-tty; sleep 600"]}}')"
TTYC=$(jq -r '.container_id // empty' <<<"$C")
rc=0
cri StartContainer "{\"container_id\": \"$TTYC\"}" >"$T/stdout" 2>"$T/stderr" || rc=$?
if [ "$rc" = 0 ]; then
	pass "a container with a terminal: started"
	wait_for "a container with a terminal: has one" 20 grep -q on-a-tty "$CRI_LOGS/bad-pod/tty.log" || true
elif shim_is_sdpod; then
	assert_match "a container with a terminal: refused, the error names it" "[Tt]erminal|tty|TTY|not supported|unsupported" \
		"$(cat "$T/stderr")"
	assert_ne "a container with a terminal: refused, it does not run" CONTAINER_RUNNING "$(container_state "$TTYC")"
else
	fail "a container with a terminal" "StartContainer: exit $rc: $(cat "$T/stderr")"
fi
cri_call _ StopPodSandbox "{\"pod_sandbox_id\": \"$SB2\"}"
cri_call _ RemovePodSandbox "{\"pod_sandbox_id\": \"$SB2\"}"
containerd_leak_check

containerd_stop
leak_check
