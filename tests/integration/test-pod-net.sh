#!/bin/bash
#
# test-pod-net.sh - pod networking with the real CNI plugins of
# containernetworking-plugins: a namespace per pod on the default network,
# published ports (from the host's 127.0.0.1 and from another network
# namespace), egress through masquerade to an "outside" namespace, named
# networks with CNI_ARGS, --net=none, host and ns:PATH, the name files,
# a sandbox's port served by an app added later, the bad input, and no
# leak of veths, leases or NAT rules after many pods, killed ones included.
#
# The test's own "hosts" are network namespaces held by a process of the
# test (no /run/netns mount, which other tests running meanwhile would count
# as a leak); their veths are named sdpt-* and go with them. Everything is
# removed on exit, whatever happened.

. "$(dirname "$0")/lib.sh"

use_real_images
require_tool systemd-nspawn systemd-container
require_tool iptables iptables
require_tool ip iproute2
[ -x /usr/lib/cni/ptp ] || skip "no CNI plugins (containernetworking-plugins)"

IPAM=/run/sdpod/cni/networks/default
_net_cleanup() {
	set +e
	remove_all_pods >/dev/null 2>&1
	[ -n "${OUTSIDE_PID:-}" ] && kill "$OUTSIDE_PID" 2>/dev/null && { wait "$OUTSIDE_PID" 2>/dev/null || true; }
	[ -n "${ABSTRACT_PID:-}" ] && kill "$ABSTRACT_PID" 2>/dev/null
	netns_del_all
}

# netns_host VAR HOSTIF NET: another "host": a new namespace (VAR gets its
# holder's PID) on a veth to this one, this side HOSTIF with NET.1/24, its
# side eth0 with NET.2/24.
netns_host() {
	local var=$1 hostif=$2 net=$3 pid
	netns_new "$var"
	pid=${!var}
	ip link add "$hostif" type veth peer name eth0 netns "$pid"
	ip addr add "$net.1/24" dev "$hostif"
	ip link set "$hostif" up
	in_ns "$pid" ip addr add "$net.2/24" dev eth0
	in_ns "$pid" ip link set eth0 up
	in_ns "$pid" ip link set lo up
}
# in_ns PID CMD...: CMD in the namespace of PID.
in_ns() {
	local pid=$1
	shift
	nsenter --target "$pid" --net "$@"
}
trap '_rc=$?; _net_cleanup; (exit "$_rc"); _lib_on_exit' EXIT

leak_begin

# What a pod's network leaves on the host, of this test's pods (other tests
# run pods at the same time): host-local leases and the plugins' rules that
# name one of them. (Their veths go with their namespaces.)
UUIDS="$T/uuids"
: >"$UUIDS"
net_state() {
	sd list --format=json | jq -r '.[].uuid' >>"$UUIDS"
	local u n=0
	for u in $(sort -u "$UUIDS"); do
		grep -rqs -- "$u" "$IPAM" && n=$((n + 1))
		iptables-save 2>/dev/null | grep -q -- "$u" && n=$((n + 1))
	done
	echo "$n"
}
NET_BEFORE=$(net_state)

echo "# building the image"
busybox_layout
import_ok BB --name=busybox "$IMG/oci"

# web NAME ARGS...: a detached pod serving "NAME" with busybox httpd on 80.
web() {
	local name=$1
	shift
	sd run --detach --name="$name" "$@" busybox --exec=/bin/sh -- -c \
		"mkdir -p /tmp/www && echo $name > /tmp/www/index.html && exec httpd -f -p 80 -h /tmp/www"
}
# address_of POD: the pod's first address on its first network.
address_of() {
	sd status --format=json "$1" | jq -r '.networks[0].addresses[0]' | cut -d/ -f1
}
# fetch URL: the page, from the host.
fetch() {
	python3 -c 'import sys, urllib.request; print(urllib.request.urlopen(sys.argv[1], timeout=5).read().decode().strip())' "$1" 2>&1 || true
}
# until_fetch URL WANT: the page is WANT within 10 s (httpd starts a moment
# after the pod is ready).
until_fetch() {
	local i page
	for i in $(seq 50); do
		page=$(fetch "$1")
		[ "$page" = "$2" ] && break
		sleep 0.2
	done
	assert_eq "$3" "$2" "$page"
}

# ---------------------------------------------------------------------------
echo "# two web pods on port 80, each published"
# ---------------------------------------------------------------------------
assert_exit 0 web weba --port=127.0.0.1:18080:80
A=$OUT
assert_exit 0 web webb --port=18081:80
B=$OUT
IP_A=$(address_of "$A")
IP_B=$(address_of "$B")
assert_match "pod A has an address of the default network" '^10\.77\.' "$IP_A"
assert_match "pod B has an address of the default network" '^10\.77\.' "$IP_B"
assert_ne "each pod has its own address" "$IP_A" "$IP_B"
assert_exit 0 sd status "$A"
assert_contains "status shows the network" "$OUT" "network-default=eth0 $IP_A/"
assert_contains "status shows the published port" "$OUT" "port-tcp-18080=127.0.0.1:18080->80/tcp"
assert_exit 0 sd list --format=json
assert_eq "list shows the ports" "18081" "$(jq -r --arg u "$B" '.[] | select(.uuid == $u) | .ports[0].host_port' <<<"$OUT")"

until_fetch "http://127.0.0.1:18080/" weba "the host reaches A through 127.0.0.1:18080"
until_fetch "http://127.0.0.1:18081/" webb "the host reaches B through 127.0.0.1:18081"
assert_exit 0 sd enter "$A" wget -q -O - "http://$IP_B/"
assert_eq "pod A fetches B's page by address" "webb" "$OUT"

# Another host: a namespace of the test's, on a veth to this one.
netns_host CLIENT sdpt-c0 10.250.0
PAGE=$(in_ns "$CLIENT" python3 -c 'import urllib.request; print(urllib.request.urlopen("http://10.250.0.1:18081/", timeout=5).read().decode().strip())' 2>&1)
assert_eq "another host reaches B through the host's address" "webb" "$PAGE"
PAGE=$(in_ns "$CLIENT" python3 -c 'import urllib.request; print(urllib.request.urlopen("http://10.250.0.1:18080/", timeout=2).read().decode().strip())' 2>&1 || true)
assert_not_contains "A, published on 127.0.0.1 only, is not reachable from another host" "$PAGE" "weba"

echo "# a host port another pod publishes"
assert_exit 1 web webc --port=18080:80
assert_contains "the port in use is named" "$ERR" "host port 18080/tcp is in use"
assert_eq "nothing of the refused pod is left" "" "$(sd list --no-legend | grep webc)"

# ---------------------------------------------------------------------------
echo "# a pod sees none of the host's interfaces, nor its abstract sockets"
# ---------------------------------------------------------------------------
assert_exit 0 sd enter "$A" ip -o link
assert_not_contains "the default pod does not see the host's veth" "$OUT" "sdpt-c0"
python3 -c '
import socket, time
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind("\0sdpt-abstract")
time.sleep(120)' &
ABSTRACT_PID=$!
sleep 0.3
assert_exit 0 sd run busybox --exec=/bin/sh -- -c 'grep -c sdpt-abstract /proc/net/unix || true'
assert_contains "a default pod does not see the host's abstract socket" "$OUT" "0"
assert_exit 0 sd run --net=host busybox --exec=/bin/sh -- -c 'grep -c sdpt-abstract /proc/net/unix || true'
assert_contains "a --net=host pod does" "$OUT" "1"
kill "$ABSTRACT_PID"
ABSTRACT_PID=

echo "# a hostile pod cannot change its network, nor its name files"
# The namespace is the host root's: root in the pod, in its own user
# namespace, has no CAP_NET_ADMIN over it, whatever its capabilities.
cp "$DATA/pods/run/$A/net/hosts" "$T/hosts.before"
assert_exit 0 sd enter "$A" /bin/sh -c '
	ip addr add 10.77.250.250/16 dev eth0 2>/dev/null; echo addr=$?
	ip link set eth0 down 2>/dev/null; echo link=$?
	ip route del default 2>/dev/null; echo route=$?
	(echo 10.0.0.1 evil >> /etc/hosts) 2>/dev/null; echo hosts=$?
	(echo nameserver 10.0.0.1 > /etc/resolv.conf) 2>/dev/null; echo resolv=$?
	(echo x > /sdpod/net/networks.json) 2>/dev/null; echo record=$?'
for what in addr link route hosts resolv record; do
	assert_match "root in the pod is refused: $what" "$what=[1-9]" "$OUT"
done
assert_eq "the pod's hosts file is as the host wrote it" "$(cat "$T/hosts.before")" "$(cat "$DATA/pods/run/$A/net/hosts")"
assert_eq "and the pod still has its address" "$IP_A" "$(address_of "$A")"
until_fetch "http://127.0.0.1:18080/" weba "and still serves"

echo "# --net=none and --net=host"
assert_exit 0 sd run --net=none busybox --exec=/bin/sh -- -c 'echo links=$(ip -o link | wc -l) $(ip -o link | grep -c " lo:")'
assert_contains "--net=none has lo only" "$OUT" "links=1 1"
assert_exit 0 sd run --net=host busybox --exec=/bin/sh -- -c 'ip -o link'
assert_contains "--net=host sees the host's interfaces" "$OUT" "sdpt-c0"

# ---------------------------------------------------------------------------
echo "# egress through masquerade"
# ---------------------------------------------------------------------------
netns_host OUTSIDE sdpt-o0 10.251.0
mkdir "$T/outside"
echo outside >"$T/outside/index.html"
nsenter --target "$OUTSIDE" --net python3 -m http.server --bind 10.251.0.2 8080 --directory "$T/outside" \
	>"$T/outside.log" 2>&1 &
OUTSIDE_PID=$!
until_fetch "http://10.251.0.2:8080/" outside "the outside server runs"
assert_exit 0 sd run busybox --exec=/bin/wget -- -q -O - http://10.251.0.2:8080/
assert_contains "a pod reaches a server outside" "$OUT" "outside"
assert_contains "the server saw the host's address (masquerade)" "$(cat "$T/outside.log")" "10.251.0.1"

# ---------------------------------------------------------------------------
echo "# a named network with a static address, and --net=ns:PATH"
# ---------------------------------------------------------------------------
mkdir "$T/net.d"
export SDPOD_NET_DIR="$T/net.d"
cat >"$T/net.d/sdpt.conflist" <<EOF
{ "cniVersion": "1.0.0", "name": "sdpt", "plugins": [
  { "type": "ptp", "ipam": { "type": "host-local", "ranges": [[{ "subnet": "10.252.0.0/24" }]],
    "dataDir": "$T/ipam" } } ] }
EOF
assert_exit 0 sd run --net=sdpt:IP=10.252.0.42 busybox --exec=/bin/sh -- -c 'ip -o -4 addr show eth0'
assert_contains "the static address CNI_ARGS asked for" "$OUT" "10.252.0.42/24"
assert_eq "its lease is released" "" "$(find "$T/ipam" -type f -name '10.*' 2>/dev/null)"

netns_new JOIN
in_ns "$JOIN" ip link add sdpt-j0 type veth peer name sdpt-j1
assert_exit 0 sd run --net=ns:/proc/"$JOIN"/ns/net busybox --exec=/bin/sh -- -c 'ip -o link'
assert_contains "--net=ns: joins the namespace given" "$OUT" "sdpt-j0"

echo "# DNS, search, options, hosts entries, host name"
assert_exit 0 sd run --dns=192.0.2.53 --dns-search=example.test --dns-option=ndots:2 \
	--hosts-entry=192.0.2.7=db.example.test --hostname=web1 busybox --exec=/bin/sh -- -c \
	'cat /etc/resolv.conf /etc/hosts /etc/hostname; hostname'
assert_contains "the nameserver" "$OUT" "nameserver 192.0.2.53"
assert_contains "the search domain" "$OUT" "search example.test"
assert_contains "the option" "$OUT" "options ndots:2"
assert_match "the hosts entry" '192\.0\.2\.7[[:space:]]+db\.example\.test' "$OUT"
assert_match "the host name" 'busybox\[[0-9]+\]: web1' "$OUT"

assert_exit 0 sd run --dns=host busybox --exec=/bin/cat -- /etc/resolv.conf
if [ -s /etc/resolv.conf ]; then
	assert_contains "--dns=host: the host's resolv.conf as it is" "$OUT" "$(grep -m1 . /etc/resolv.conf)"
fi
assert_not_contains "--dns=host is not sdpod's own file" "$OUT" "this pod's resolv.conf"

# ---------------------------------------------------------------------------
echo "# a sandbox's port, served by an app added later"
# ---------------------------------------------------------------------------
assert_exit 0 pa sandbox --port=127.0.0.1:18082:80
S=$OUT
assert_exit 0 pa add "$S" --app=web busybox --exec=/bin/sh -- -c \
	'mkdir -p /tmp/www && echo later > /tmp/www/index.html && exec httpd -f -p 80 -h /tmp/www'
assert_exit 0 pa start "$S" --app=web
until_fetch "http://127.0.0.1:18082/" later "the app added later serves on the sandbox's port"

# ---------------------------------------------------------------------------
echo "# bad input: a clear error, no pod started, nothing allocated"
# ---------------------------------------------------------------------------
assert_exit 1 sd run --net=nosuchnet busybox --exec=/bin/true
assert_contains "an unknown network is named" "$ERR" "network nosuchnet: no $T/net.d/nosuchnet.conflist"
assert_exit 2 sd run --port=80 busybox --exec=/bin/true
assert_contains "an invalid --port is named" "$ERR" "--port=80: expected [HOSTIP:]HOSTPORT:PODPORT"
assert_exit 2 sd run --port=18083:70000 busybox --exec=/bin/true
assert_contains "a port out of range" "$ERR" "\"70000\" is not a port"
assert_exit 2 sd run --net=host --port=18083:80 busybox --exec=/bin/true
assert_contains "--port with --net=host" "$ERR" "--port needs a network of the pod's own"
assert_exit 2 sd run --net=none --port=18083:80 busybox --exec=/bin/true
assert_contains "--port with --net=none" "$ERR" "--net=none has none to publish"
touch "$T/not-a-netns"
assert_exit 1 sd run --net=ns:"$T/not-a-netns" busybox --exec=/bin/true
assert_contains "ns: of a file that is no namespace" "$ERR" "is not a network namespace"
echo '{ "cniVersion": "1.0.0", "name": "broken", ' >"$T/net.d/broken.conflist"
assert_exit 1 sd run --net=broken busybox --exec=/bin/true
assert_contains "an invalid list names its file" "$ERR" "$T/net.d/broken.conflist"
cat >"$T/net.d/halfway.conflist" <<EOF
{ "cniVersion": "1.0.0", "name": "halfway", "plugins": [
  { "type": "ptp", "ipMasq": true, "ipam": { "type": "host-local", "ranges": [[{ "subnet": "10.252.1.0/24" }]],
    "dataDir": "$T/ipam" } },
  { "type": "sdpt-no-such-plugin" } ] }
EOF
assert_exit 1 sd run --net=halfway busybox --exec=/bin/true
assert_contains "a missing plugin is named" "$ERR" "plugin sdpt-no-such-plugin not found"
assert_eq "what the first plugin added is deleted: no lease" "" "$(find "$T/ipam" -type f -name '10.*' 2>/dev/null)"
assert_eq "what the first plugin added is deleted: no masquerade rule" 0 \
	"$(iptables-save | grep -c 'name: "halfway"' || true)"
unset SDPOD_NET_DIR

# ---------------------------------------------------------------------------
echo "# no leaks: many pods, and pods whose nspawn is killed"
# ---------------------------------------------------------------------------
sd list --format=json | jq -r ".[].uuid" >>"$UUIDS"
remove_all_pods
assert_eq "the first pods released everything" "$NET_BEFORE" "$(net_state)"
# 20 by default: a leak is per pod, and 20 show it as well as 50 did, in
# half the time (NET_LEAK_PODS=200 for a longer run).
N=${NET_LEAK_PODS:-20}
for i in $(seq "$N"); do
	sd run --uuid-file="$T/u" --port=18090:80 busybox --exec=/bin/true >/dev/null 2>&1 || fail "pod $i of $N did not run"
	cat "$T/u" >>"$UUIDS"
done
assert_eq "$N pods started and stopped leave nothing" "$NET_BEFORE" "$(net_state)"
for i in $(seq 10); do
	assert_exit 0 sd run --detach --port=18091:80 busybox --exec=/bin/sleep -- 600
	U=$OUT
	echo "$U" >>"$UUIDS"
	NSPAWN=$(cut -d' ' -f1 "$DATA/pods/run/$U/pid")
	kill -KILL "$NSPAWN"
	for k in $(seq 100); do
		sd status "$U" | grep -q state=exited && break
		sleep 0.05
	done
	assert_exit 0 sd rm "$U"
done
assert_eq "10 pods whose nspawn was killed, then removed, leave nothing" "$NET_BEFORE" "$(net_state)"

kill "$OUTSIDE_PID"
wait "$OUTSIDE_PID" 2>/dev/null || true
OUTSIDE_PID=
netns_del_all
leak_check
