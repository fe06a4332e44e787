#!/usr/bin/env bash
# A pod under pod@.service is a machine: machinectl lists and shows it
# under its machine name, terminate ends it, sdpod sees it exited and gc
# removes it. Its journal is read with journalctl -M while it runs and with
# sdpod journal until gc; systemctl -M talks to its systemd through the
# stage1's socket-activated bus.
. "$(dirname "$0")/lib.sh"
busybox_image

uuid=$(sd prepare --name=web busybox --app=hello --exec=/bin/sh -- -c \
	'echo to-stdout; echo to-stderr >&2; exec sleep 600')
unit=pod@$uuid.service
assert_exit 0 systemctl start "$unit"

echo "# machinectl"
assert_match "machinectl list shows it as 'web'" '^web +container +systemd-nspawn' "$(machinectl list --no-legend --no-pager)"
out=$(machinectl status web --no-pager 2>&1) && rc=0 || rc=$?
assert_eq "machinectl status web exits 0" 0 "$rc"
assert_contains "machinectl status: its unit is the pod's" "$out" "Unit: $unit"
assert_contains "machinectl status: its root is the pod's" "$out" "Root: $DATA/pods/run/$uuid/stage1/rootfs"
assert_eq "machinectl: its id is the pod's UUID" "${uuid//-/}" "$(machinectl show web --property=Id --value)"

echo "# journalctl -M"
wait_for "journalctl -M web -u app@hello.service shows stdout" 10 \
	sh -c "journalctl -M web -u app@hello.service --no-pager -o cat | grep -qx to-stdout"
assert_contains "and stderr" "$(journalctl -M web -u app@hello.service --no-pager -o cat)" to-stderr

echo "# systemctl -M (the pod's bus, started on first use)"
out=$(systemctl -M web status app@hello.service --no-pager 2>&1) && rc=0 || rc=$?
assert_eq "systemctl -M web status app@hello.service exits 0" 0 "$rc"
assert_contains "it is active" "$out" "Active: active (running)"
out=$(systemctl -M web list-units --no-pager --no-legend 2>&1) && rc=0 || rc=$?
assert_eq "systemctl -M web list-units exits 0" 0 "$rc"
assert_match "it lists the app and its reaper" 'app@hello\.service.*' "$out"
assert_contains "and the reaper" "$out" "reaper@hello.service"
assert_eq "busctl -M web sees the pod's systemd" "s \"sdpod pod\"" \
	"$(busctl -M web get-property org.freedesktop.systemd1 /org/freedesktop/systemd1/unit/default_2etarget org.freedesktop.systemd1.Unit Description)"

echo "# machinectl terminate"
assert_exit 0 machinectl terminate web
wait_for "sdpod then reports it exited" 30 sh -c "$SDPOD status $uuid | grep -qx state=exited"
assert_eq "the unit is inactive" inactive "$(systemctl is-active "$unit" || true)"
assert_eq "the app was stopped (SIGTERM)" 143 "$(sd status "$uuid" | sed -n 's/^app-hello=//p')"
assert_not_contains "machinectl no longer lists it" "$(machinectl list --no-legend --no-pager)" web
no_pod_procs "$uuid"

echo "# the journal of an exited pod"
out=$(sd journal --app=hello "$uuid" --no-pager -o cat 2>&1) && rc=0 || rc=$?
assert_eq "sdpod journal --app=hello exits 0" 0 "$rc"
assert_contains "it shows stdout" "$out" to-stdout
assert_contains "and stderr" "$out" to-stderr
assert_not_contains "only the app's" "$out" "pod ready"
assert_contains "the whole journal has the pod's systemd too" "$(sd journal "$uuid" --no-pager -o cat)" "pod ready"
assert_exit 3 sd journal --app=nosuch "$uuid"
assert_contains "naming the app" "$(sd journal --app=nosuch "$uuid" 2>&1 || true)" 'has no app "nosuch"'

echo "# gc"
gc_all
assert_file_absent "$DATA/pods/run/$uuid"
assert_eq "sdpod no longer knows it" "" "$(sd list --format=json | jq -r --arg u "$uuid" '.[] | select(.uuid == $u) | .uuid')"
assert_ne "its journal is gone with it" 0 "$(sd journal "$uuid" --no-pager >/dev/null 2>&1; echo $?)"

echo "# a prepared pod has no journal yet"
uuid=$(sd prepare busybox --exec=/bin/true)
assert_contains "sdpod journal says so" "$(sd journal "$uuid" 2>&1 || true)" "has no journal: it has not run"
sd rm "$uuid" >/dev/null
