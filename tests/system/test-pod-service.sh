#!/usr/bin/env bash
# Pods kept as services (sdpod-pod-generator(8)): a definition in
# /etc/sdpod/pods becomes NAME.service at daemon-reload, enabled by its
# [Install] section; systemctl start runs a fresh pod, restart replaces it
# and collects the old one, kill -9 of the pod's systemd-nspawn is a
# failure that Restart=on-failure answers with a new pod, journalctl -u
# shows the app's output; a bad definition is logged with its file and
# line and gets no unit, while the good one beside it still comes up.
# Then the test host is rebooted: the enabled pod is up again after it,
# and the pod of before the reboot has been collected.
#
# Two runs: SDPOD_TEST_BOOT=1 (everything but the reboot), then 2 (after
# the reboot). Everything the test makes is removed when it ends, failed
# or not, except across the reboot it asks for.
. "$(dirname "$0")/lib.sh"

NAME=sdpod-test-web
UNIT=$NAME.service
DEFS=/etc/sdpod/pods
# The pod of the first boot, for the second: /etc/sdpod outlives the reboot.
STATE=/etc/sdpod/.test-pod-service-last-uuid
GENERATOR=$SDPOD_PREFIX/lib/systemd/system-generators/sdpod-pod-generator

cleanup_service() {
	systemctl stop "$UNIT" >/dev/null 2>&1
	rm -f "$DEFS/$NAME.pod" "$DEFS/sdpod-test-bad.pod" "$STATE"
	systemctl daemon-reload
	systemctl reset-failed "$UNIT" >/dev/null 2>&1
	local uuid
	for uuid in $(pods_named); do
		sd rm "$uuid" >/dev/null 2>&1
	done
}
trap '_rc=$?; set +e; trap - ERR; [ "$_rc" = 75 ] || cleanup_service; (exit "$_rc"); _lib_on_exit' EXIT

# pods_named [STATE]: the UUIDs of the pods named $NAME (in that state).
pods_named() {
	sd list --format=json | jq -r --arg n "$NAME" --arg s "${1:-}" \
		'.[] | select(.name == $n and ($s == "" or .state == $s)) | .uuid'
}
running_pod() { pods_named running; }
is_active() { [ "$(systemctl is-active "$UNIT")" = active ]; }
# new_pod_runs OLD: the unit is active with a running pod that is not OLD.
new_pod_runs() {
	local now
	is_active && now=$(running_pod) && [ -n "$now" ] && [ "$now" != "$1" ]
}
# nspawn_of_unit: the PID of the pod's systemd-nspawn, in the unit's cgroup.
nspawn_of_unit() {
	local cg pid
	cg=/sys/fs/cgroup$(unit_prop "$UNIT" ControlGroup)
	for pid in $(find "$cg" -name cgroup.procs -exec cat {} + 2>/dev/null); do
		[ "$(cat /proc/"$pid"/comm 2>/dev/null)" = systemd-nspawn ] && echo "$pid"
	done
}

if [ "$SDPOD_TEST_BOOT" = 1 ]; then
	busybox_image
	[ -x "$GENERATOR" ] || die "$GENERATOR is not installed"
	[ ! -e "$DEFS/$NAME.pod" ] || die "$DEFS/$NAME.pod exists already"
	mkdir -p "$DEFS"
	cat >"$DEFS/$NAME.pod" <<-'EOF'
		# sdpod-pod-generator(8): a pod kept as a service
		[Unit]
		Description=sdpod test pod

		[App]
		Image=busybox
		Name=web
		Exec=/bin/sh -c 'echo "service-pod up"; trap "echo got-term; exit 0" TERM; while :; do sleep 0.2; done'

		[Service]
		Restart=on-failure
		RestartSec=1s

		[Install]
		WantedBy=multi-user.target
	EOF
	# A definition with a mistake on line 3: no unit, and a log line.
	printf '[App]\nImage=busybox\nRestartSec=1s\n' >"$DEFS/sdpod-test-bad.pod"

	echo "# daemon-reload: the generator writes the unit and its link"
	assert_exit 0 systemctl daemon-reload
	assert_eq "the unit is loaded" loaded "$(unit_prop "$UNIT" LoadState)"
	assert_eq "from the generator" "/run/systemd/generator/$UNIT" "$(unit_prop "$UNIT" FragmentPath)"
	assert_eq "with the definition as its source" "$DEFS/$NAME.pod" "$(unit_prop "$UNIT" SourcePath)"
	assert_eq "enabled by [Install] WantedBy=" generated "$(systemctl is-enabled "$UNIT" || true)"
	assert_contains "multi-user.target wants it" "$(unit_prop multi-user.target Wants)" "$UNIT"
	assert_eq "Restart=on-failure" on-failure "$(unit_prop "$UNIT" Restart)"
	assert_eq "Type=notify" notify "$(unit_prop "$UNIT" Type)"
	assert_eq "in machine.slice" machine.slice "$(unit_prop "$UNIT" Slice)"
	assert_eq "the bad definition has no unit" not-found "$(unit_prop sdpod-test-bad.service LoadState)"
	# The generator logs to the kernel log, which the journal of a
	# container (the test host) does not read: its check, run by hand,
	# prints the same on stderr.
	out=$("$GENERATOR" 2>&1) && rc=0 || rc=$?
	assert_eq "the generator's check fails for the bad definition" 1 "$rc"
	assert_contains "and names its file and line" "$out" \
		"$DEFS/sdpod-test-bad.pod:3: unknown key RestartSec= in [App]"
	assert_eq "and only it" 1 "$(grep -c . <<<"$out")"
	out=$(systemctl enable "$UNIT" 2>&1) && rc=0 || rc=$?
	assert_ne "a generated unit cannot be enabled: [Install] does it" 0 "$rc"

	echo "# systemctl start: a fresh pod, ready when the unit is active"
	assert_exit 0 systemctl start "$UNIT"
	assert_eq "active" active "$(systemctl is-active "$UNIT")"
	first=$(running_pod)
	assert_match "one running pod named $NAME" '^[0-9a-f-]{36}$' "$first"
	wait_for "journalctl -u shows the app's output" 20 \
		sh -c "journalctl -u $UNIT --no-pager -o cat | grep -q 'web\[[0-9]*\]: service-pod up\$'"

	echo "# systemctl restart: a new pod, the old one collected"
	assert_exit 0 systemctl restart "$UNIT"
	second=$(running_pod)
	assert_match "a running pod again" '^[0-9a-f-]{36}$' "$second"
	assert_ne "a new pod" "$first" "$second"
	assert_eq "the old pod was collected: only the new one is left" "$second" "$(pods_named)"
	assert_contains "the old pod stopped in order" "$(journalctl -u "$UNIT" --no-pager -o cat)" got-term
	no_pod_procs "$first"

	echo "# kill -9 of the pod's systemd-nspawn: Restart=on-failure, a new pod"
	restarts=$(unit_prop "$UNIT" NRestarts)
	nspawn=$(nspawn_of_unit)
	assert_match "the unit's systemd-nspawn" '^[0-9]+$' "$nspawn"
	[ -n "$nspawn" ] && kill -KILL "$nspawn"
	wait_for "a new pod runs" 60 new_pod_runs "$second"
	third=$(running_pod)
	assert_eq "systemd restarted it once" $((restarts + 1)) "$(unit_prop "$UNIT" NRestarts)"
	assert_eq "the killed pod was collected" "$third" "$(pods_named)"
	no_pod_procs "$second"
	echo "$third" >"$STATE"

	echo "# reboot the test host, with the pod running"
	reboot_and_rerun
fi

echo "# after the reboot: the enabled pod is up"
before=$(cat "$STATE" 2>/dev/null || true)
assert_match "the first boot left its pod's UUID" '^[0-9a-f-]{36}$' "$before"
wait_for "the unit is active after boot" 60 is_active
after=$(running_pod)
assert_match "a pod named $NAME runs" '^[0-9a-f-]{36}$' "$after"
assert_ne "a new pod" "$before" "$after"
assert_eq "the pod of before the reboot was collected" "$after" "$(pods_named)"
wait_for "journalctl -u shows the app's output" 20 \
	sh -c "journalctl -u $UNIT --no-pager -o cat | grep -q 'web\[[0-9]*\]: service-pod up\$'"

echo "# removing the definition removes the service"
assert_exit 0 systemctl stop "$UNIT"
assert_eq "the pod exited, and is kept until the next start" exited "$(sd status "$after" | sed -n 's/^state=//p')"
rm -f "$DEFS/$NAME.pod" "$DEFS/sdpod-test-bad.pod" "$STATE"
assert_exit 0 systemctl daemon-reload
assert_eq "no unit any more" not-found "$(unit_prop "$UNIT" LoadState)"
assert_exit 0 sd rm "$after"
assert_eq "no pod named $NAME is left" "" "$(pods_named)"
no_pod_procs "$after"
