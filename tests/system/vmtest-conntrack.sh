#!/usr/bin/env bash
# One pod's connections in the host's conntrack table, counted where the
# kernel counts them: the host's nf_conntrack_count, which the build
# machine's kernel does not keep (it reads 0 there, so test-hostile-net
# can only count the connections that were refused). An app (uid 1000)
# opens BURST connections at once to closed ports of its gateway, the
# host's end of the pod's link: each refused one is an entry of the host's
# table for 10 s. A pod bound to LIMIT (--conntrack-limit) adds about
# LIMIT entries (the bound's burst); the same burst from a pod without a
# bound (--conntrack-limit=0) adds about BURST, which shows the count
# counts. The bounded pod goes first: the entries of the unbounded burst
# would still be expiring while the next is counted.
. "$(dirname "$0")/lib.sh"
require_tool jq
busybox_image

LIMIT=50 BURST=300
COUNT=/proc/sys/net/netfilter/nf_conntrack_count
UNITS=()
trap '_rc=$?; set +e; for u in "${UNITS[@]}"; do systemctl stop "$u"; done; gc_all; (exit "$_rc"); _lib_on_exit' EXIT

# burst_from BOUND: the entries the host's table gained from a burst of a
# pod bound to BOUND (0: no bound), printed.
burst_from() {
	local uuid unit gw before after
	uuid=$(sd prepare --conntrack-limit="$1" busybox --user=1000 --exec=/bin/sleep -- 600)
	unit=pod@$uuid.service
	UNITS+=("$unit")
	systemctl start "$unit" || die "$unit did not start"
	wait_until 120 sd enter "$uuid" true || die "pod $uuid did not start"
	gw=$(sd status --format=json "$uuid" | jq -r '.networks[0].gateway' | cut -d/ -f1)
	[ -n "$gw" ] && [ "$gw" != null ] || die "pod $uuid has no gateway"
	[ -e "$COUNT" ] || die "$COUNT: the host has no conntrack table after the pod's rules"
	before=$(cat "$COUNT")
	timeout 120 pa exec "$uuid" --app=busybox -- /bin/sh -c "
		i=0
		while [ \$i -lt $BURST ]; do
			nc -w 2 $gw \$((20000 + i)) </dev/null 2>/dev/null &
			i=\$((i + 1))
		done
		wait" >/dev/null 2>&1 || true
	after=$(cat "$COUNT")
	systemctl stop "$unit"
	echo $((after - before))
}

echo "# the same burst from a pod bound to $LIMIT"
bound=$(burst_from "$LIMIT")
echo "# the host's table gained $bound entries"
check "a bounded pod's burst stops near its bound ($bound <= $((2 * LIMIT)))" test "$bound" -le $((2 * LIMIT))
check "and it did make connections ($bound >= $((LIMIT / 2)))" test "$bound" -ge $((LIMIT / 2))

echo "# a burst of $BURST connections from a pod without a bound"
free=$(burst_from 0)
echo "# the host's table gained $free entries"
check "the count counts: most of the unbounded burst is in it ($free >= $((BURST * 3 / 4)))" test "$free" -ge $((BURST * 3 / 4))
