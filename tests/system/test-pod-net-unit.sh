#!/usr/bin/env bash
# pod@.service with a network of its own: the pod's address and published
# port while it runs, machinectl's view of it, and systemctl stop releasing
# both (the host-local lease, the portmap rules, the held port).
. "$(dirname "$0")/lib.sh"
busybox_image

fetch() {
	python3 -c 'import sys, urllib.request; print(urllib.request.urlopen(sys.argv[1], timeout=5).read().decode().strip())' "$1" 2>&1 || true
}

echo "# a pod with a published port under pod@.service"
uuid=$(sd prepare --name=netpod --port=127.0.0.1:18085:80 busybox --exec=/bin/sh -- -c \
	'mkdir -p /tmp/www && echo served > /tmp/www/index.html && exec httpd -f -p 80 -h /tmp/www')
unit=pod@$uuid.service
assert_exit 0 systemctl start "$unit"
address=$(sd status --format=json "$uuid" | jq -r '.networks[0].addresses[0]' | cut -d/ -f1)
assert_contains "the pod has an address of the default network" "$address" "10.77."
wait_for "the page is served through the published port" 10 sh -c '[ "$(python3 -c "import urllib.request; print(urllib.request.urlopen(\"http://127.0.0.1:18085/\", timeout=2).read().decode().strip())" 2>/dev/null)" = served ]'
assert_contains "iptables has the pod's port rules" "$(iptables-save)" "$uuid"
assert_exit 0 ls /run/sdpod/cni/networks/default/"$address"
if out=$(machinectl status netpod --no-pager 2>&1); then
	assert_contains "machinectl shows the pod's address" "$out" "$address"
else
	fail "machinectl status netpod" "$out"
fi
out=$(systemctl status "$unit" --no-pager 2>&1 || true)
assert_contains "the service's main process supervises nspawn" "$out" "systemd-nspawn"

echo "# systemctl stop releases the address and the port"
assert_exit 0 systemctl stop "$unit"
assert_eq "inactive after stop" inactive "$(systemctl is-active "$unit" || true)"
assert_eq "no rule names the pod" 0 "$(iptables-save | grep -c "$uuid" || true)"
assert_exit 2 ls /run/sdpod/cni/networks/default/"$address"
assert_exit 0 python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 18085))'
assert_eq "the pod's status shows no network once exited" "[]" "$(sd status --format=json "$uuid" | jq -c .networks)"
no_pod_procs "$uuid"
sd rm "$uuid" >/dev/null
