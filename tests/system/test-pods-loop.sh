#!/usr/bin/env bash
# Many pods: two of the same image at once, and ten started and stopped in
# a loop, without leaking mounts, cgroups, processes, machines or
# directories on the host.
. "$(dirname "$0")/lib.sh"
busybox_image
gc_all
before=$(host_counts)

echo "# two pods of the same image at once"
a=$(sd prepare --name=twin-a busybox --exec=/bin/sh -- -c 'echo i-am-a; exec sleep 600')
b=$(sd prepare --name=twin-b busybox --exec=/bin/sh -- -c 'echo i-am-b; exec sleep 600')
assert_exit 0 systemctl start "pod@$a.service" "pod@$b.service"
assert_eq "both run" "active active" "$(systemctl is-active "pod@$a.service" "pod@$b.service" | tr '\n' ' ' | sed 's/ $//')"
assert_eq "both are machines" "twin-a twin-b" "$(machinectl list --no-legend --no-pager | awk '{print $1}' | sort | tr '\n' ' ' | sed 's/ $//')"
wait_for "each has its own output" 10 sh -c \
	"journalctl -M twin-a -u app@busybox.service -o cat | grep -qx i-am-a && journalctl -M twin-b -u app@busybox.service -o cat | grep -qx i-am-b"
sd enter --app=busybox "$a" /bin/sh -c 'echo x > /only-a'
assert_exit 0 sd enter --app=busybox "$a" /bin/test -e /only-a
assert_exit 1 sd enter --app=busybox "$b" /bin/test -e /only-a
assert_exit 0 systemctl stop "pod@$a.service" "pod@$b.service"
assert_eq "both recorded" "143 143" "$(sd status "$a" | sed -n 's/^app-busybox=//p') $(sd status "$b" | sed -n 's/^app-busybox=//p')"

echo "# ten pods started and stopped in a loop"
gc_all
for i in $(seq 1 10); do
	uuid=$(sd prepare busybox --exec=/bin/sleep -- 600)
	systemctl start "pod@$uuid.service" || fail "round $i: start" "$(systemctl status "pod@$uuid.service" --no-pager 2>&1 | tail -5)"
	systemctl stop "pod@$uuid.service"
	[ "$(sd status "$uuid" | sed -n 's/^app-busybox=//p')" = 143 ] || fail "round $i: exit status" "$(sd status "$uuid")"
done
pass "ten rounds ran"
assert_eq "ten pods exited" 10 "$(sd list --format=json | jq '[.[] | select(.state == "exited")] | length')"
gc_all
after=$(host_counts)
assert_eq "nothing leaked (mounts, cgroups, processes, machines, directories)" "$before" "$after"
