#!/bin/bash
#
# test-shim-netadmin.sh - NET_ADMIN over the pod's own network namespace
# when the pod joins one made by someone else (issue 25, item 4): the CRI's
# (containerd makes the sandbox's namespace and runs CNI in it) and the
# CLI's --net=ns:PATH. A container granted NET_ADMIN adds an address, sets
# the loopback's MTU, adds a route and an iptables rule in its pod's
# namespace; one without it gets EPERM for each; neither changes the host's
# namespace nor another pod's (their addresses, routes, MTUs and iptables
# rules are compared before and after). The image is busybox with the
# host's iptables (legacy) and its libraries.
# A hostile app with NET_ADMIN also tries to reach the host's namespace
# (through /proc/1/ns/net, which is its pod's, and by moving a link out).
#
# The CLI part runs first (sdpod only), then the CRI part through
# containerd; SHIM_RUNTIME=io.containerd.runc.v2 runs the CRI part on
# runc's shim (the check of the test itself) and skips the CLI part.

. "$(dirname "$0")/lib.sh"

use_real_images
require_tool ip iproute2
require_tool nsenter util-linux
require_tool systemd-nspawn systemd-container
require_tool iptables-legacy-save iptables
[ -x /usr/sbin/xtables-legacy-multi ] || skip "no /usr/sbin/xtables-legacy-multi (iptables)"

# The image: busybox, and the host's iptables-legacy with what it loads.
IPT_IMAGE=sdpod.test/iptables:1
IPT="$T/ipt"
mkdir -p "$IPT"
img_busybox_rootfs "$IPT/rootfs"
( set -e
  cd "$IPT/rootfs"
  # /run for its lock file (runc gives the container the image's)
  mkdir -p usr/sbin lib/x86_64-linux-gnu lib64 usr/lib/x86_64-linux-gnu run
  cp /usr/sbin/xtables-legacy-multi usr/sbin/
  ln -sf xtables-legacy-multi usr/sbin/iptables
  for l in $(ldd /usr/sbin/xtables-legacy-multi | awk '$3 ~ /^\// { print $3 }'); do cp -L "$l" lib/x86_64-linux-gnu/; done
  cp -L /lib64/ld-linux-x86-64.so.2 lib64/
  cp -a /usr/lib/x86_64-linux-gnu/xtables usr/lib/x86_64-linux-gnu/ ) || die "cannot put iptables in the image"
img_oci_layout "$IPT/oci" latest "$IPT/rootfs"

# ns_state PID: what a namespace's configuration is (links with their MTU,
# addresses, routes), for a before/after comparison.
ns_state() {
	nsenter --target "$1" --net sh -c 'ip -o link | sed "s/ qlen.*//; s/link\/.*//"; ip -o addr | awk "{print \$2, \$3, \$4}"; ip route; ip -6 route; iptables-legacy-save | grep -v "^#"; true' 2>&1
}
# The host's: other tests' pods come and go meanwhile, so only what the
# apps here try to change (the loopback, the address and route they add).
host_state() {
	{ ip -o link show lo | sed 's/ qlen.*//; s/link\/.*//'; ip -o addr show lo; ip -o addr | grep -F 192.0.2.77
	  ip route show 198.51.100.0/24; iptables-legacy-save | grep -F 192.0.2.99; iptables-save | grep -F 192.0.2.99; } 2>&1 || true
}

# What an app with or without NET_ADMIN tries in its pod's namespace; one
# line per step, "ok" or the error.
NET_SCRIPT='
for step in "ip addr add 192.0.2.77/32 dev lo" "ip link set lo mtu 1400" "ip route add 198.51.100.0/24 dev lo" \
	"iptables -A INPUT -s 192.0.2.99 -j DROP" "iptables -L -n"; do
	if out=$($step 2>&1); then echo "ok: $step"; else echo "failed: $step: $out"; fi
done
# Another namespace in reach? Every process the app sees is in its own.
echo "namespaces seen: $(for f in /proc/[0-9]*/ns/net; do readlink "$f"; done 2>/dev/null | sort -u | grep -c .)"
'

_na_cleanup() {
	set +e
	remove_all_pods >/dev/null 2>&1
	netns_del_all
}

# =========================================================================
# The CLI: sdpod run --net=ns:PATH
# =========================================================================
if [ "${SHIM_RUNTIME:-io.containerd.sdpod.v1}" = io.containerd.sdpod.v1 ]; then
	trap '_rc=$?; _na_cleanup; (exit "$_rc"); _lib_on_exit' EXIT
	echo "# the CLI: --net=ns:PATH with and without --cap-add=NET_ADMIN"
	import_ok IPTID --name=busybox "$IPT/oci"
	netns_new JOIN
	netns_new OTHER
	nsenter --target "$JOIN" --net ip link set lo up
	nsenter --target "$OTHER" --net ip link set lo up
	HOST0=$(host_state)
	OTHER0=$(ns_state "$OTHER")
	JOIN0=$(ns_state "$JOIN")

	assert_exit 0 sd run --private-users=no --net=ns:/proc/"$JOIN"/ns/net busybox --user=0 --cap-add=NET_RAW --exec=/bin/sh -- -c "$NET_SCRIPT"
	assert_contains "no NET_ADMIN: no address" "$OUT" "failed: ip addr add"
	assert_contains "no NET_ADMIN: no MTU" "$OUT" "failed: ip link set lo mtu"
	assert_contains "no NET_ADMIN: no route" "$OUT" "failed: ip route add"
	assert_contains "no NET_ADMIN: no iptables rule" "$OUT" "failed: iptables -A"
	assert_contains "no NET_ADMIN: no iptables -L" "$OUT" "failed: iptables -L"
	assert_not_contains "no NET_ADMIN: nothing done" "$OUT" "ok: "
	assert_eq "no NET_ADMIN: the joined namespace is unchanged" "$JOIN0" "$(ns_state "$JOIN")"

	assert_exit 0 sd run --private-users=no --net=ns:/proc/"$JOIN"/ns/net busybox --user=0 --cap-add=NET_ADMIN,NET_RAW \
		--exec=/bin/sh -- -c "$NET_SCRIPT"
	assert_contains "NET_ADMIN: an address" "$OUT" "ok: ip addr add"
	assert_contains "NET_ADMIN: the loopback's MTU" "$OUT" "ok: ip link set lo mtu"
	assert_contains "NET_ADMIN: a route" "$OUT" "ok: ip route add"
	assert_contains "NET_ADMIN: an iptables rule" "$OUT" "ok: iptables -A"
	assert_contains "NET_ADMIN: iptables -L" "$OUT" "ok: iptables -L"
	assert_contains "NET_ADMIN: no other namespace in sight" "$OUT" "namespaces seen: 1"
	JOIN1=$(ns_state "$JOIN")
	assert_contains "the joined namespace has the address" "$JOIN1" "192.0.2.77/32"
	assert_contains "the joined namespace has the MTU" "$JOIN1" "mtu 1400"
	assert_contains "the joined namespace has the route" "$JOIN1" "198.51.100.0/24"
	assert_contains "the joined namespace has the iptables rule" "$JOIN1" "-A INPUT -s 192.0.2.99/32 -j DROP"
	assert_eq "the host's namespace is unchanged" "$HOST0" "$(host_state)"
	assert_eq "the other namespace is unchanged" "$OTHER0" "$(ns_state "$OTHER")"

	# A pod none of whose apps is granted NET_ADMIN: its stage1 root does
	# not get it either (the pod's PID 1's bounding set, bit 12).
	run_bg QUIET --private-users=no --net=ns:/proc/"$JOIN"/ns/net busybox --user=0 --exec=/bin/sleep -- 600
	wait_app "$QUIET" busybox
	bnd=$(sed -n 's/^CapBnd:[[:space:]]*//p' "/proc/$(leader_of "$QUIET")/status")
	echo "# the pod's PID 1: CapBnd $bnd"
	check "no app granted NET_ADMIN: nor the pod's PID 1" test $(((0x$bnd >> 12) & 1)) = 0
	assert_exit 0 sd stop "$QUIET"
	wait_pid "$QUIET_PID"

	# The host's own namespace named by --net=ns: it stays the host's
	# network, whatever an app is granted: a harmless change (a dummy
	# link, removed if it was made) is refused.
	trap '_rc=$?; ip link del sdpodna0 2>/dev/null; _na_cleanup; (exit "$_rc"); _lib_on_exit' EXIT
	# (This shell's namespace: PID 1's is out of the run entrypoint's reach.)
	assert_exit 0 sd run --private-users=no --net=ns:/proc/$$/ns/net busybox --user=0 --cap-add=NET_ADMIN,NET_RAW \
		--exec=/bin/sh -- -c 'if ip link add sdpodna0 type dummy 2>&1; then echo "ok: link"; else echo "failed: link"; fi'
	assert_contains "the host's namespace: NET_ADMIN gives nothing there" "$OUT" "failed: link"
	check "the host has no link sdpodna0" sh -c '! ip link show sdpodna0 >/dev/null 2>&1'

	# In a user namespace (the CLI's default), the joined namespace is the
	# host's user namespace's: NET_ADMIN of the pod's gives nothing there.
	assert_exit 0 sd run --net=ns:/proc/"$OTHER"/ns/net busybox --user=0 --cap-add=NET_ADMIN,NET_RAW --exec=/bin/sh -- -c "$NET_SCRIPT"
	assert_contains "user namespace: no address" "$OUT" "failed: ip addr add"
	assert_not_contains "user namespace: nothing done" "$OUT" "ok: "
	assert_eq "user namespace: the other namespace is unchanged" "$OTHER0" "$(ns_state "$OTHER")"
	assert_eq "the host's namespace is still unchanged" "$HOST0" "$(host_state)"
	_na_cleanup
	trap - EXIT
	trap '_rc=$?; (exit "$_rc"); _lib_on_exit' EXIT
fi

# =========================================================================
# The CRI: capabilities.add_capabilities NET_ADMIN in a sandbox's namespace
# =========================================================================
. "$LIB_DIR/containerd-lib.sh"
for _p in ptp host-local loopback portmap firewall; do
	[ -x "/usr/lib/cni/$_p" ] || skip "no CNI plugin $_p in /usr/lib/cni (apt-get install containernetworking-plugins)"
done
echo "# the CRI: NET_ADMIN over the sandbox's namespace"

leak_begin
containerd_start
containerd_images k8s.io
img_docker_archive "$IPT/oci" latest "$IPT/ipt.tar" "$IPT_IMAGE"
ctr --address "$CTD_SOCK" -n k8s.io image import "$IPT/ipt.tar" >"$IPT/import.out" 2>&1 ||
	die "ctr image import of the iptables image: $(cat "$IPT/import.out")"
cri_setup

# sandbox NAME: a sandbox; its id in $SB, its network namespace's path (as
# containerd made it, from the verbose status's runtime spec) in $NSPATH.
sandbox() {
	local sbc
	sbc=$(cri_sandbox_config "$1")
	cri_call R RunPodSandbox "{\"config\": $sbc, \"runtime_handler\": \"$SHIM_HANDLER\"}"
	SB=$(jq -r '.pod_sandbox_id // empty' <<<"$R")
	[ -n "$SB" ] || die "RunPodSandbox gave no sandbox id: $R"
	cri_call S PodSandboxStatus "{\"pod_sandbox_id\": \"$SB\", \"verbose\": true}"
	NSPATH=$(jq -r '.info.info | fromjson | .runtimeSpec.linux.namespaces[] | select(.type == "network") | .path' <<<"$S")
	[ -e "$NSPATH" ] || die "no network namespace for sandbox $1: $(jq -c .info <<<"$S" | head -c 2000)"
	SBCONF=$sbc
}
# container NAME CAPS: a container of sandbox $SB running as root with
# capabilities CAPS added (a JSON list), running $NET_SCRIPT and then
# sleeping; its id in $CID.
container() {
	local name=$1 caps=$2
	cri_call C CreateContainer "$(jq -nc --arg sb "$SB" --argjson sbc "$SBCONF" --arg n "$name" --arg img "$IPT_IMAGE" \
		--arg script "$NET_SCRIPT; exec sleep 600" --argjson caps "$caps" \
		'{pod_sandbox_id: $sb, sandbox_config: $sbc,
		  config: {metadata: {name: $n}, image: {image: $img}, command: ["/bin/sh", "-c", $script],
		           log_path: ($n + ".log"),
		           linux: {security_context: {run_as_user: {value: 0}, capabilities: {add_capabilities: $caps}}}}}')"
	CID=$(jq -r '.container_id // empty' <<<"$C")
	cri_call _ StartContainer "{\"container_id\": \"$CID\"}"
}
# log_of SANDBOX NAME: a container's CRI log, without the prefixes.
log_of() { sed -E 's/^[^ ]+ (stdout|stderr) [FP] //' "$CRI_LOGS/$1/$2.log" 2>/dev/null; }
logged() { log_of "$1" "$2" | grep -q "namespaces seen"; }
# (Addresses without their flags: IPv6 DAD's "tentative" ends meanwhile.)
nsstate() { nsenter --net="$1" sh -c 'ip -o link | sed "s/ qlen.*//; s/link\/.*//"; ip -o addr | awk "{print \$2, \$3, \$4}"; ip route; iptables-legacy-save | grep -v "^#"; true' 2>&1; }

sandbox other-pod
OTHER_SB=$SB OTHER_NS=$NSPATH
sandbox admin-pod
ADMIN_SB=$SB ADMIN_NS=$NSPATH
HOST0=$(host_state)
OTHER0=$(nsstate "$OTHER_NS")
ADMIN0=$(nsstate "$ADMIN_NS")

container plain '[]'
PLAIN=$CID
wait_for "without NET_ADMIN: the container has run its steps" 60 logged admin-pod plain || true
OUT=$(log_of admin-pod plain)
assert_contains "CRI, no NET_ADMIN: no address" "$OUT" "failed: ip addr add"
assert_contains "CRI, no NET_ADMIN: no MTU" "$OUT" "failed: ip link set lo mtu"
assert_contains "CRI, no NET_ADMIN: no route" "$OUT" "failed: ip route add"
assert_contains "CRI, no NET_ADMIN: no iptables rule" "$OUT" "failed: iptables -A"
assert_not_contains "CRI, no NET_ADMIN: nothing done" "$OUT" "ok: "
assert_eq "CRI, no NET_ADMIN: the sandbox's namespace is unchanged" "$ADMIN0" "$(nsstate "$ADMIN_NS")"

container admin '["NET_ADMIN"]'
ADMIN=$CID
wait_for "NET_ADMIN: the container has run its steps" 60 logged admin-pod admin || true
OUT=$(log_of admin-pod admin)
assert_contains "CRI, NET_ADMIN: an address" "$OUT" "ok: ip addr add"
assert_contains "CRI, NET_ADMIN: the loopback's MTU" "$OUT" "ok: ip link set lo mtu"
assert_contains "CRI, NET_ADMIN: a route" "$OUT" "ok: ip route add"
assert_contains "CRI, NET_ADMIN: an iptables rule" "$OUT" "ok: iptables -A"
assert_contains "CRI, NET_ADMIN: iptables -L" "$OUT" "ok: iptables -L"
ADMIN1=$(nsstate "$ADMIN_NS")
assert_contains "CRI: the sandbox's namespace has the address" "$ADMIN1" "192.0.2.77/32"
assert_contains "CRI: the sandbox's namespace has the MTU" "$ADMIN1" "mtu 1400"
assert_contains "CRI: the sandbox's namespace has the route" "$ADMIN1" "198.51.100.0/24"
assert_contains "CRI: the sandbox's namespace has the iptables rule" "$ADMIN1" "-A INPUT -s 192.0.2.99/32 -j DROP"
assert_eq "CRI: the other sandbox's namespace is unchanged" "$OTHER0" "$(nsstate "$OTHER_NS")"
assert_eq "CRI: the host's namespace is unchanged" "$HOST0" "$(host_state)"

for c in "$PLAIN" "$ADMIN"; do
	cri StopContainer "{\"container_id\": \"$c\", \"timeout\": 1}" >/dev/null 2>&1 || true
	cri RemoveContainer "{\"container_id\": \"$c\"}" >/dev/null 2>&1 || true
done
for sb in "$ADMIN_SB" "$OTHER_SB"; do
	cri_call _ StopPodSandbox "{\"pod_sandbox_id\": \"$sb\"}"
	cri_call _ RemovePodSandbox "{\"pod_sandbox_id\": \"$sb\"}"
done
containerd_leak_check
containerd_stop
leak_check
