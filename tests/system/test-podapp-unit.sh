#!/usr/bin/env bash
# podapp on a systemd host: sandbox starts pod@UUID.service over the bus
# (never by running systemctl), and add/start/exec/stop/rm work on it.
# sdpod run --detach starts an immutable pod the same way.
. "$(dirname "$0")/lib.sh"
busybox_image

# A systemctl that must never run: podapp and sdpod talk to systemd over
# sd-bus themselves.
mkdir "$T/bin"
printf '#!/bin/sh\ntouch %s/systemctl-ran\nexit 1\n' "$T" >"$T/bin/systemctl"
chmod +x "$T/bin/systemctl"

echo "# podapp sandbox"
uuid=$(PATH=$T/bin:$PATH pa sandbox)
assert_match "it prints the UUID" '^[0-9a-f-]{36}$' "$uuid"
unit=pod@$uuid.service
assert_eq "the sandbox runs as $unit" active "$(systemctl is-active "$unit")"
assert_eq "in machine.slice" machine.slice "$(unit_prop "$unit" Slice)"
assert_file_absent "$T/systemctl-ran"

echo "# podapp add / start / exec / stop / rm"
assert_exit 0 pa add "$uuid" --app=web busybox --exec=/bin/sh -- -c 'echo web-up; exec sleep 600'
assert_exit 0 pa start "$uuid" --app=web
assert_eq "web runs" running "$(pa status "$uuid" --app=web --format=json | jq -r .state)"
assert_exit 7 pa exec "$uuid" --app=web -- /bin/sh -c 'exit 7'
wait_for "its output reaches the pod's journal (journalctl -M)" 10 \
	sh -c "journalctl -M sdpod-$uuid -u app@web.service -o cat --no-pager | grep -qx web-up"
assert_exit 0 pa stop "$uuid" --app=web
assert_eq "web exited (SIGTERM)" "exited 143" "$(pa status "$uuid" --app=web --format=json | jq -r '"\(.state) \(.exit_status)"')"
assert_eq "the pod runs on" active "$(systemctl is-active "$unit")"
assert_exit 0 pa rm "$uuid" --app=web
assert_eq "no app left" "[]" "$(pa list "$uuid" --format=json | jq -c .)"

echo "# the sandbox ends with systemctl stop"
assert_exit 0 systemctl stop "$unit"
assert_eq "sdpod: exited" exited "$(sd status "$uuid" | sed -n 's/^state=//p')"
no_pod_procs "$uuid"

echo "# sdpod run --detach"
uuid=$(PATH=$T/bin:$PATH sd run --detach --name=batch busybox --exec=/bin/sh -- -c 'echo detached-out; sleep 600')
assert_match "it prints the UUID" '^[0-9a-f-]{36}$' "$uuid"
assert_eq "it runs as pod@UUID.service" active "$(systemctl is-active "pod@$uuid.service")"
assert_eq "sdpod: running" running "$(sd status "$uuid" | sed -n 's/^state=//p')"
wait_for "its output is in its journal" 10 journal_has detached-out --app=busybox "$uuid"
assert_exit 0 systemctl stop "pod@$uuid.service"
assert_eq "the app's exit status is recorded" 143 "$(sd status "$uuid" | sed -n 's/^app-busybox=//p')"
assert_file_absent "$T/systemctl-ran"

gc_all
