#!/usr/bin/env bash
# pod@.service on a systemd host: systemctl start returns when the pod is
# ready, status shows it, stop halts it in order and the exit statuses are
# recorded; an immutable pod whose apps end leaves the unit inactive (0) or
# failed with the app's exit status in ExecMainStatus (pod@.service(8)).
. "$(dirname "$0")/lib.sh"
busybox_image

echo "# systemctl start / status / stop"
uuid=$(sd prepare busybox --exec=/bin/sh -- -c 'echo started; trap "echo got-term; exit 0" TERM; while :; do sleep 0.1; done')
unit=pod@$uuid.service
assert_exit 0 systemctl start "$unit"
# "Returns when the pod is ready": the pod's systemd reached its steady
# state, so the app runs and the pod is registered, at once.
assert_eq "active right after start" active "$(systemctl is-active "$unit")"
assert_eq "sdpod says running" running "$(sd status "$uuid" | sed -n 's/^state=//p')"
assert_eq "the pod's systemd is ready" "READY=1" "$( [ "$(unit_prop "$unit" StatusText)" = "Container running: Ready." ] && echo READY=1)"
out=$(systemctl status "$unit" --no-pager 2>&1) && rc=0 || rc=$?
assert_eq "systemctl status exits 0" 0 "$rc"
assert_contains "systemctl status: active (running)" "$out" "active (running)"
# The main process is the stage1's run entrypoint, which starts nspawn in
# the pod's network namespace and releases the network when it exits.
assert_contains "systemctl status: the main process is the run entrypoint" "$out" "Main PID:"
assert_contains "systemctl status: nspawn runs in the unit" "$out" "systemd-nspawn"
assert_eq "it runs in machine.slice" machine.slice "$(unit_prop "$unit" Slice)"
assert_exit 0 systemctl stop "$unit"
assert_eq "inactive after stop" inactive "$(systemctl is-active "$unit" || true)"
assert_eq "sdpod says exited" exited "$(sd status "$uuid" | sed -n 's/^state=//p')"
assert_eq "the app's exit status was recorded (its TERM handler's 0)" 0 "$(sd status "$uuid" | sed -n 's/^app-busybox=//p')"
assert_contains "the app saw SIGTERM" "$(sd journal "$uuid" --no-pager -o cat)" got-term
out=$(systemctl start "$unit" 2>&1) && rc=0 || rc=$?
assert_ne "a pod runs once: starting it again fails" 0 "$rc"
assert_contains "and the unit's log says why" "$(journalctl -u "$unit" --no-pager -o cat -n 5)" "was already started (it is exited)"
no_pod_procs "$uuid"

# unit_ended UNIT: it has ended (inactive or failed), not only begun to
# (deactivating: the run entrypoint releases the pod's network after nspawn).
unit_ended() {
	case $(systemctl is-active "$1") in
	inactive | failed) return 0 ;;
	*) return 1 ;;
	esac
}

echo "# a quick job: its apps end well while it boots; the start succeeds"
uuid=$(sd prepare busybox --exec=/bin/true)
unit=pod@$uuid.service
assert_exit 0 systemctl start "$unit"
wait_for "the pod exits by itself" 20 unit_ended "$unit"
assert_eq "Result=success, not protocol" success "$(unit_prop "$unit" Result)"
assert_eq "the app's status is recorded" 0 "$(sd status "$uuid" | sed -n 's/^app-busybox=//p')"

echo "# an immutable pod whose app exits 0: inactive"
uuid=$(sd prepare busybox --exec=/bin/sh -- -c 'sleep 1')
unit=pod@$uuid.service
assert_exit 0 systemctl start "$unit"
wait_for "the pod exits by itself" 20 unit_ended "$unit"
assert_eq "inactive" inactive "$(systemctl is-active "$unit" || true)"
assert_eq "Result=success" success "$(unit_prop "$unit" Result)"
assert_eq "ExecMainStatus=0" 0 "$(unit_prop "$unit" ExecMainStatus)"

echo "# an immutable pod whose app exits 3: failed, ExecMainStatus=3"
uuid=$(sd prepare busybox --exec=/bin/sh -- -c 'sleep 1; exit 3' --- busybox --app=other --exec=/bin/sleep -- 60)
unit=pod@$uuid.service
assert_exit 0 systemctl start "$unit"
wait_for "the pod exits by itself" 20 unit_ended "$unit"
assert_eq "failed" failed "$(systemctl is-active "$unit" || true)"
assert_eq "Result=exit-code" exit-code "$(unit_prop "$unit" Result)"
assert_eq "ExecMainStatus=3, the app's" 3 "$(unit_prop "$unit" ExecMainStatus)"
assert_eq "sdpod status: the failed app" 3 "$(sd status "$uuid" | sed -n 's/^app-busybox=//p')"
assert_eq "sdpod status: the other app was stopped" 143 "$(sd status "$uuid" | sed -n 's/^app-other=//p')"
systemctl reset-failed "$unit"
no_pod_procs "$uuid"

echo "# systemctl start --wait: returns when the pod has exited (pod@.service(8))"
uuid=$(sd prepare busybox --exec=/bin/sh -- -c 'sleep 1; exit 5')
assert_exit 1 systemctl start --wait "pod@$uuid.service"
assert_eq "failed" failed "$(systemctl is-failed "pod@$uuid.service" || true)"
assert_eq "ExecMainStatus=5" 5 "$(unit_prop "pod@$uuid.service" ExecMainStatus)"
systemctl reset-failed "pod@$uuid.service"

echo "# SIGKILL of the pod's systemd-nspawn: nothing of the pod outlives it"
uuid=$(sd prepare busybox --exec=/bin/sleep -- 1000)
unit=pod@$uuid.service
assert_exit 0 systemctl start "$unit"
leader=$(pod_procs "$uuid" | head -n1)
pidns=$(stat -L -c %i "/proc/$leader/ns/pid")
kill -KILL "$(cut -d' ' -f1 "/var/lib/sdpod/pods/run/$uuid/pid")"
# pidns_gone: no process is left in the pod's pid namespace.
pidns_gone() {
	local p
	for p in /proc/[0-9]*; do
		[ "$(stat -L -c %i "$p/ns/pid" 2>/dev/null)" = "$pidns" ] && return 1
	done
	return 0
}
wait_for "no process of the pod within 2 s" 2 pidns_gone
wait_for "the unit has ended" 20 unit_ended "$unit"
assert_eq "the app was halted in order and recorded" 143 "$(sd status "$uuid" | sed -n 's/^app-busybox=//p')"
systemctl reset-failed "$unit" 2>/dev/null || true

echo "# WatchdogSec= on pod@.service: the host's systemd acts on a wedged pod"
uuid=$(sd prepare busybox --exec=/bin/sleep -- 1000)
unit=pod@$uuid.service
mkdir -p "/run/systemd/system/$unit.d"
printf '[Service]\nWatchdogSec=4s\nTimeoutAbortSec=2s\n' >"/run/systemd/system/$unit.d/watchdog.conf"
systemctl daemon-reload
assert_exit 0 systemctl start "$unit"
sleep 6
assert_eq "a pod that answers its supervisor's pings stays up" active "$(systemctl is-active "$unit")"
# SIGSTOP: the pod's systemd no longer answers, and nspawn does not notice.
kill -STOP "$(pod_procs "$uuid" | head -n1)"
wait_for "the wedged pod's unit fails" 20 unit_ended "$unit"
assert_eq "Result=watchdog" watchdog "$(unit_prop "$unit" Result)"
no_pod_procs "$uuid"
rm -r "/run/systemd/system/$unit.d"
systemctl daemon-reload
systemctl reset-failed "$unit" 2>/dev/null || true

gc_all
assert_eq "gc removed every pod" "" "$(sd list --format=json | jq -r '.[].uuid')"
