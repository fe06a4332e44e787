#!/bin/bash
#
# test-hostile-net.sh - what a pod does to the host's side of its bus and
# network (sdpod-security(7)):
#
#   - a socket planted at the pod's /run/systemd/private that takes no
#     connection (a full backlog) or takes one and never answers: every
#     host command that talks to the pod ends within its deadline with an
#     error naming the pod, and the supervisor's watchdog still fires;
#   - an app that opens connections as fast as it can makes no more host
#     conntrack entries than its pod's bound (--conntrack-limit);
#   - a pod whose supervisor was killed (kill -9) leaves no NAT rule or
#     chain of its address after `sdpod gc`, and the address is given again.
#
# The planted socket is made from the host, in the pod's /run, for want of
# a socket tool in the pod: the pod's root can do the same there (it owns
# its /run). Every process the test starts is ended by its PID; every rule
# and namespace goes with its pod.

. "$(dirname "$0")/lib.sh"

use_real_images
require_tool systemd-nspawn systemd-container
require_tool nsenter util-linux
require_tool python3
require_tool iptables iptables
[ -n "$PODAPP" ] || die "podapp not found (PODAPP_BIN)"
[ -x /usr/lib/cni/ptp ] || skip "no CNI plugins (containernetworking-plugins)"

LISTENERS=()
_net_cleanup() {
	set +e
	trap - ERR
	local pid
	for pid in "${LISTENERS[@]}"; do
		kill -KILL "$pid" 2>/dev/null
		wait "$pid" 2>/dev/null
	done
	bg_pods_cleanup >/dev/null 2>&1
	remove_all_pods >/dev/null 2>&1
}
trap '_rc=$?; _net_cleanup; (exit "$_rc"); _lib_on_exit' EXIT
leak_begin

busybox_layout
import_ok BB --name=busybox "$IMG/oci"

# part NAME: whether to run that part ($HOSTILE_NET_PARTS, for a run by
# hand: "bus conntrack gc"; all by default).
part() { [ -z "${HOSTILE_NET_PARTS:-}" ] || [[ " $HOSTILE_NET_PARTS " == *" $1 "* ]]; }


# plant UUID MODE: a socket of ours in place of the pod's systemd's,
# listening in the background (its PID in LISTENERS). MODE full: its
# backlog is full and it never accepts; mute: it accepts and never answers.
plant() {
	local root ready="$T/planted.$1"
	root="/proc/$(leader_of "$1")/root"
	rm -f "$ready"
	python3 -c '
import os, socket, sys, time
path, mode, ready = sys.argv[1:4]
os.unlink(path)
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.bind(path)
os.chmod(path, 0o777)
s.listen(0)
held = []
if mode == "full":
    # Fill the backlog: connections nobody accepts, until one would block.
    while True:
        c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        c.setblocking(False)
        try:
            c.connect(path)
        except BlockingIOError:
            break
        held.append(c)
open(ready, "w").close()
deadline = time.time() + 600
while time.time() < deadline:
    if mode == "mute":
        s.settimeout(1)
        try:
            held.append(s.accept()[0])
        except socket.timeout:
            pass
    else:
        time.sleep(1)
' "$root/run/systemd/private" "$2" "$ready" &
	LISTENERS+=($!)
	wait_until 10 test -e "$ready" || die "the planted socket of $1 is not listening"
}

# rules_of UUID ADDRESS: how many lines of the host's rules name the pod or
# its address (iptables' and nft's own views).
rules_of() {
	{ iptables-save 2>/dev/null; nft list ruleset 2>/dev/null; } | grep -c -F -e "$1" -e "$2/32" -e "$2 " || true
}
address_of() {
	sd status --format=json "$1" | jq -r '.networks[0].addresses[0]' | cut -d/ -f1
}

# within SECONDS DESC CMD...: CMD ends within SECONDS (timeout(1) around
# it); OUT/ERR/RC as assert_exit leaves them.
within() {
	local secs=$1 desc=$2 t0
	shift 2
	t0=$(date +%s)
	RC=0
	timeout -k 2 "$secs" "$@" >"$T/within.out" 2>"$T/within.err" || RC=$?
	OUT=$(cat "$T/within.out")
	ERR=$(cat "$T/within.err")
	if [ "$RC" = 124 ] || [ "$RC" = 137 ]; then
		fail "$desc ends within ${secs}s" "it was still running: $(_show_cmd "$@")"
		return 0
	fi
	pass "$desc ends within ${secs}s (in $(($(date +%s) - t0)) s, exit $RC)"
}

if part bus; then
# ---------------------------------------------------------------------------
echo "# a planted socket that takes no connection, or never answers"
# ---------------------------------------------------------------------------
run_bg B --net=host busybox --exec=/bin/sleep -- 600
wait_app "$B" busybox
plant "$B" full
within 30 "podapp list" "$PODAPP" --dir="$DATA" list "$B"
check "podapp list fails" test "$RC" -ne 0
assert_contains "and names the pod" "$ERR" "$B"
within 30 "podapp status" "$PODAPP" --dir="$DATA" status "$B" --app=busybox
assert_contains "podapp status names the pod" "$ERR$OUT" "$B"
within 30 "podapp exec" "$PODAPP" --dir="$DATA" exec "$B" --app=busybox -- /bin/true
check "podapp exec fails" test "$RC" -ne 0
assert_contains "and names the pod" "$ERR" "$B"
within 30 "sdpod enter" "$SDPOD" --dir="$DATA" enter --app=busybox "$B" /bin/true
check "sdpod enter fails" test "$RC" -ne 0
assert_contains "and names the pod" "$ERR" "$B"

# The same pod, its socket now one that accepts and never says a word.
kill -KILL "${LISTENERS[-1]}"
plant "$B" mute
within 30 "podapp list (mute socket)" "$PODAPP" --dir="$DATA" list "$B"
check "podapp list fails" test "$RC" -ne 0
assert_contains "and names the pod" "$ERR" "$B"
within 30 "sdpod enter (mute socket)" "$SDPOD" --dir="$DATA" enter --app=busybox "$B" /bin/true
check "sdpod enter fails" test "$RC" -ne 0
within 40 "sdpod stop --force of a pod with a planted socket" "$SDPOD" --dir="$DATA" stop --force "$B"
wait_pid "$B_PID"

# The supervisor's watchdog: the pod's systemd stops answering (SIGSTOP)
# behind a planted socket. Its ping must connect anew, and must neither
# hang there (the pod would never be killed, and the supervisor would
# never hear a signal) nor take the planted socket for an answer.
run_bg W --net=host --pod-watchdog=3s busybox --exec=/bin/sleep -- 600
wait_app "$W" busybox
# The supervisor's pings (every 750 ms) have been answered by now: a pod
# that never answered is still booting, and its watchdog waits (a known
# limit, sdpod-security(7)).
sleep 2
plant "$W" full
wpid1=$(leader_of "$W")
kill -STOP "$wpid1"
t0=$(date +%s)
for _ in $(seq 300); do
	kill -0 "$W_PID" 2>/dev/null || break
	sleep 0.1
done
secs=$(($(date +%s) - t0))
if kill -0 "$W_PID" 2>/dev/null; then
	fail "the pod watchdog killed the pod behind a planted socket" "sdpod run still runs after ${secs}s"
	kill -CONT "$wpid1" 2>/dev/null || true
else
	pass "the pod watchdog killed the pod behind a planted socket (in ${secs}s)"
	wait_pid "$W_PID"
	assert_contains "and said why" "$(cat "$W_OUT")" "has not answered for 3000 ms"
fi

fi

if part conntrack; then
# ---------------------------------------------------------------------------
echo "# one pod's connections are bounded in the host's conntrack table"
# ---------------------------------------------------------------------------
# As uid 1000, BURST TCP connections at once to closed ports of the host's
# end of the pod's link (its gateway): each refused one is an entry of the
# host's table for 10 s. (Nothing leaves the host.) With the default bound
# (8192) a test would take long: the pod asks for LIMIT. The bound's burst
# is LIMIT, then LIMIT/30 a second (conntrack-limit.h).
LIMIT=100 BURST=400
run_bg C --conntrack-limit=$LIMIT busybox --user=1000 --exec=/bin/sleep -- 600
wait_app "$C" busybox
IP_C=$(address_of "$C")
GW=$(sd status --format=json "$C" | jq -r '.networks[0].gateway' | cut -d/ -f1)
assert_match "the pod has a gateway on the host" '^10\.77\.' "$GW"
CHAIN_C=$(iptables -t mangle -S PREROUTING | awk -v s="$IP_C/32" '$4 == s && $6 ~ /^SDPOD-CT-/ {print $6}')
assert_match "the pod's address jumps to a chain of its own" '^SDPOD-CT-[0-9a-f]{16}$' "$CHAIN_C"
# What reached the host: each refused connection is an entry of the host's
# conntrack table; one the bound dropped made none (its SYN was dropped
# before conntrack confirmed the entry: nc times out).
assert_exit 0 timeout 60 "$PODAPP" --dir="$DATA" exec "$C" --app=busybox -- /bin/sh -c "
	i=0
	while [ \$i -lt $BURST ]; do
		nc -w 2 $GW \$((20000 + i)) </dev/null 2>>/tmp/burst.\$i &
		i=\$((i + 1))
	done
	wait
	echo refused=\$(cat /tmp/burst.* | grep -c refused)
	rm -f /tmp/burst.*"
n=$(sed -n 's/^refused=//p' <<<"$OUT")
echo "# $BURST connections from the pod, bound $LIMIT: $n reached the host (host conntrack entries: $(grep -c "src=$IP_C " /proc/net/nf_conntrack || true))"
check "some connections were made" test "${n:-0}" -ge $((LIMIT / 2))
check "the pod's connections stop near its bound (${n:-?} <= $((2 * LIMIT)))" test "${n:-999999}" -le $((2 * LIMIT))
assert_exit 0 sd stop "$C"
wait_pid "$C_PID"
assert_eq "its rules go with it" 0 "$(rules_of "$C" "$IP_C")"
assert_eq "and its chain" 0 "$(iptables -t mangle -S | grep -c -F -- "$CHAIN_C" || true)"
assert_exit 2 sd prepare --net=host --conntrack-limit=5 busybox
assert_contains "a bound without a network of the pod's own is refused" "$ERR" "--conntrack-limit"
assert_exit 2 sd prepare --conntrack-limit=lots busybox
assert_contains "so is a bound that is not a number" "$ERR" "--conntrack-limit=lots"
fi

if part gc; then
# ---------------------------------------------------------------------------
echo "# a pod whose supervisor was killed: gc releases its whole network"
# ---------------------------------------------------------------------------
run_bg K busybox --exec=/bin/sleep -- 600
wait_app "$K" busybox
IP_K=$(address_of "$K")
assert_match "the pod has an address of the default network" '^10\.77\.' "$IP_K"
check "the host has rules for it" test "$(rules_of "$K" "$IP_K")" -gt 0
kill -KILL "$K_PID"
wait_pid "$K_PID"
wait_until 10 status_is "$K" state exited || true
assert_exit 0 sd gc --grace-period=0
assert_exit 3 sd status "$K"
assert_eq "no rule or chain names the pod or its address after gc" 0 "$(rules_of "$K" "$IP_K")"
{ iptables-save; nft list ruleset; } 2>/dev/null | grep -F -e "$K" -e "$IP_K" | sed 's/^/#   left: /' | head -5 || true
assert_file_absent "/run/sdpod/netns/$K"
assert_file_absent "/run/sdpod/cni/networks/default/$IP_K"
# The same address, asked for: given, and released as a whole again.
assert_exit 0 sd run --uuid-file="$T/uk2" --net="default:IP=$IP_K" busybox --exec=/bin/sh -- -c 'ip -o -4 addr show eth0'
assert_contains "the address is given again" "$OUT" "inet $IP_K/"
assert_eq "and released as a whole again" 0 "$(rules_of "$(cat "$T/uk2")" "$IP_K")"
fi
