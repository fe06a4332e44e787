#!/usr/bin/env bash
# The examples of pod@.service(8), run as the page shows them (see
# example() in tests/integration/lib.sh): every command of its example
# blocks, with checks of what the page says they print. Nothing of them is
# replaced: the test host is a systemd host with the default data directory.
. "$(dirname "$0")/lib.sh"
busybox_image
before=$(host_counts)

echo "# USAGE"
example pod@.service.8 "uuid=\$(sdpod prepare busybox --exec=/bin/sh -- -c 'echo hello; exec sleep 1000')"
assert_match "prepare prints the UUID" '^[0-9a-f-]{36}$' "$uuid"
example pod@.service.8 'systemctl start pod@$uuid'
assert_eq "systemctl start returns 0" 0 "$RC"
example pod@.service.8 'systemctl status pod@$uuid'
assert_contains "systemctl status: the pod runs" "$OUT" "Active: active (running)"
example pod@.service.8 'sdpod status $uuid | grep ^state='
assert_eq "sdpod sees it running" state=running "$OUT"
example pod@.service.8 'systemctl stop pod@$uuid'
assert_eq "systemctl stop returns 0" 0 "$RC"
example pod@.service.8 'sdpod status $uuid | grep -e ^state= -e ^app-'
assert_eq "the app ended on the SIGTERM of the stop" "$(printf 'state=exited\napp-busybox=143')" "$OUT"

example pod@.service.8 "uuid=\$(sdpod run --detach busybox --exec=/bin/sh -- -c 'echo hello; exec sleep 1000')"
assert_match "run --detach prints the UUID" '^[0-9a-f-]{36}$' "$uuid"
example pod@.service.8 'systemctl is-active pod@$uuid'
assert_eq "its unit is active" active "$OUT"
assert_exit 0 systemctl stop "pod@$uuid"

echo "# EXIT STATUS"
example pod@.service.8 "uuid=\$(sdpod prepare busybox --exec=/bin/sh -- -c 'sleep 2; exit 5')"
example pod@.service.8 'systemctl start --wait pod@$uuid'
example pod@.service.8 'systemctl is-failed pod@$uuid'
assert_eq "a pod whose app failed fails its unit" failed "$OUT"
example pod@.service.8 'systemctl show -p ExecMainStatus pod@$uuid'
assert_eq "with the app's exit status" ExecMainStatus=5 "$OUT"
example pod@.service.8 'sdpod status $uuid | grep ^app-'
assert_eq "as sdpod shows it" app-busybox=5 "$OUT"
systemctl reset-failed "pod@$uuid"

echo "# MACHINES"
example pod@.service.8 "uuid=\$(sdpod prepare --name=web busybox --app=web --exec=/bin/sh -- -c 'echo serving; exec sleep 1000')"
example pod@.service.8 'systemctl start pod@$uuid'
assert_eq "the web pod starts" 0 "$RC"
example pod@.service.8 'machinectl list'
assert_match "machinectl list shows it" '^web +container +systemd-nspawn' "$(grep ^web <<<"$OUT")"
example pod@.service.8 'machinectl status web'
assert_contains "machinectl status shows its unit" "$OUT" "Unit: pod@$uuid.service"
example pod@.service.8 'machinectl show -p Unit web'
assert_eq "machinectl show" "Unit=pod@$uuid.service" "$OUT"
example pod@.service.8 'systemctl -M web list-units'
assert_contains "systemctl -M web lists the app" "$OUT" "app@web.service"
example pod@.service.8 'systemctl -M web status app@web.service'
assert_contains "and shows it running" "$OUT" "Active: active (running)"

echo "# MACHINES: terminate"
example pod@.service.8 'machinectl terminate web'
assert_eq "machinectl terminate" 0 "$RC"
example pod@.service.8 'sdpod status --wait $uuid | grep -e ^state= -e ^app-'
assert_eq "the pod halted in order" "$(printf 'state=exited\napp-web=143')" "$OUT"

no_machine_web() { ! machinectl show web >/dev/null 2>&1; }
wait_for "the machine web is gone" 10 no_machine_web

echo "# LOGS"
example pod@.service.8 "uuid=\$(sdpod run --detach --name=web busybox --app=web --exec=/bin/sh -- -c 'echo serving; exec sleep 1000')"
assert_match "run --detach prints the UUID" '^[0-9a-f-]{36}$' "$uuid"
# The pod is ready once its app has started, maybe before it has written.
wait_for "the app has written its line" 10 sh -c "journalctl -M web -u app@web.service -o cat | grep -q serving"
example pod@.service.8 'journalctl -M web -u app@web.service'
assert_contains "journalctl -M shows the app's output" "$OUT" "serving"
example pod@.service.8 'sdpod journal --app=web $uuid -o cat | grep serving'
assert_eq "so does sdpod journal" serving "$OUT"
example pod@.service.8 'systemctl stop pod@$uuid'
assert_eq "the pod stops" "0 exited" "$RC $(sd status "$uuid" | sed -n 's/^state=//p')"
example pod@.service.8 'sdpod journal --app=web $uuid -o cat | grep serving'
assert_eq "its journal outlives it" serving "$OUT"

echo "# GARBAGE COLLECTION"
example pod@.service.8 'systemctl enable --now sdpod-gc.timer'
assert_eq "the timer is enabled" enabled "$(systemctl is-enabled sdpod-gc.timer)"
example pod@.service.8 'systemctl start sdpod-gc.service'
assert_eq "gc runs" 0 "$RC"
assert_eq "it marked the exited pods" "" "$(sd list --no-legend | awk '$3 == "exited"')"
assert_exit 0 systemctl disable --now sdpod-gc.timer

all_examples_run pod@.service.8

gc_all
assert_eq "nothing is left on the host" "$before" "$(host_counts)"
