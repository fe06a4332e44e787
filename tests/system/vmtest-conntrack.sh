#!/usr/bin/env bash
# One pod's connections to the host, bounded by --conntrack-limit, on a
# Debian kernel (run-vm-tests' VM; test-hostile-net does the same on the
# build machine's). An app (uid 1000) opens BURST connections at once to
# closed ports of its gateway, the host's end of the pod's link: each one
# the host refused reached it (and was an entry of its conntrack table),
# each one the bound dropped never did (nc times out). A pod bound to
# LIMIT gets about LIMIT through (the bound's burst); the same burst from a
# pod without a bound (--conntrack-limit=0) gets all through, which shows
# the burst is real. The host's nf_conntrack_count is printed beside: it
# read 0 throughout here too (as on the build machine), so the table's own
# count is not what is checked.
. "$(dirname "$0")/lib.sh"
require_tool jq
busybox_image

LIMIT=50 BURST=300
COUNT=/proc/sys/net/netfilter/nf_conntrack_count
UNITS=()
trap '_rc=$?; set +e; for u in "${UNITS[@]}"; do systemctl stop "$u"; done; gc_all; (exit "$_rc"); _lib_on_exit' EXIT

# burst_from BOUND: how many connections of a burst from a pod bound to
# BOUND (0: no bound) reached the host, printed.
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
	before=$(cat "$COUNT" 2>/dev/null)
	timeout 120 "$PODAPP" exec "$uuid" --app=busybox -- /bin/sh -c "
		i=0
		while [ \$i -lt $BURST ]; do
			nc -w 2 $gw \$((20000 + i)) </dev/null 2>>/tmp/burst.\$i &
			i=\$((i + 1))
		done
		wait
		echo refused=\$(cat /tmp/burst.* | grep -c refused)
		rm -f /tmp/burst.*" >"$T/burst" 2>&1 || true
	after=$(cat "$COUNT" 2>/dev/null)
	echo "# bound $1: nf_conntrack_count $before before, $after after; $(tr '\n' ' ' <"$T/burst" | head -c 300)" >&2
	systemctl stop "$unit"
	sed -n 's/^refused=//p' "$T/burst"
}

echo "# the same burst from a pod bound to $LIMIT"
bound=$(burst_from "$LIMIT")
echo "# $bound of $BURST connections reached the host"
check "a bounded pod's burst stops near its bound (${bound:-?} <= $((2 * LIMIT)))" test "${bound:-999999}" -le $((2 * LIMIT))
check "and it did make connections (${bound:-?} >= $((LIMIT / 2)))" test "${bound:-0}" -ge $((LIMIT / 2))

echo "# a burst of $BURST connections from a pod without a bound"
free=$(burst_from 0)
echo "# $free of $BURST connections reached the host"
check "without a bound the whole burst reaches the host (${free:-?} >= $((BURST * 3 / 4)))" test "${free:-0}" -ge $((BURST * 3 / 4))
