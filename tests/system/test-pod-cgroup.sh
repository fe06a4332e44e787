#!/usr/bin/env bash
# Under a host systemd, the host holds a pod by its unit (sdpod-security(7)):
# pod@.service has the pod's device rule and task limit, and its memory and
# CPU limits; a pod in a scope (sdpod run outside a service) has its
# --pod-pids-limit, --pod-memory and --pod-cpus as the scope's TasksMax=,
# MemoryMax= and CPUQuota=; and gc kills a pod whose supervisor died through machined, by
# the UUID nspawn registered, even when the pod forged its PID 1's
# container_uuid= and stopped its lifeline.
. "$(dirname "$0")/lib.sh"
require_tool python3
require_tool nsenter util-linux
busybox_image

echo "# pod@.service: a device rule and a task limit the pod cannot change"
uuid=$(sd prepare busybox --exec=/bin/sleep -- 600)
unit=pod@$uuid.service
assert_exit 0 systemctl start "$unit"
assert_eq "DevicePolicy=closed" closed "$(unit_prop "$unit" DevicePolicy)"
assert_eq "TasksMax=4096" 4096 "$(unit_prop "$unit" TasksMax)"
assert_contains "only the pseudo-devices" "$(unit_prop "$unit" DeviceAllow)" "/dev/urandom rwm"
assert_exit 0 systemctl stop "$unit"
gc_all
# What the unit file cannot know: set on the unit when the pod starts.
[ -c /dev/net/tun ] || die "the test host has no /dev/net/tun"
uuid=$(sd prepare --pod-pids-limit=300 --pod-memory=64Mi --pod-cpus=1.5 \
	--volume=tun,kind=host,source=/dev/net/tun busybox --exec=/bin/sleep -- 600)
unit=pod@$uuid.service
assert_exit 0 systemctl start "$unit"
assert_eq "--pod-pids-limit is the unit's TasksMax" 300 "$(unit_prop "$unit" TasksMax)"
assert_eq "--pod-memory is the unit's MemoryMax" $((64 << 20)) "$(unit_prop "$unit" MemoryMax)"
assert_eq "--pod-cpus is the unit's CPUQuota" 1.500000s "$(unit_prop "$unit" CPUQuotaPerSecUSec)"
assert_contains "a device volume is in its DeviceAllow" "$(unit_prop "$unit" DeviceAllow)" "/dev/char/10:200 rw"
assert_exit 0 systemctl stop "$unit"
gc_all

echo "# a pod in a scope that forges its identity is killed by its machine"
BG=
trap '_rc=$?; set +e; [ -z "$BG" ] || kill -KILL "$BG" 2>/dev/null; (exit "$_rc"); _lib_on_exit' EXIT
systemd-run --scope --quiet "$SDPOD" run --uuid-file="$T/uuid" --name=forger --net=host --pod-pids-limit=300 --pod-memory=256Mi --pod-cpus=2 \
	--volume=tun,kind=host,source=/dev/net/tun busybox --exec=/bin/sleep -- 600 >"$T/out" 2>&1 &
BG=$!
wait_until 30 machinectl status forger || die "the pod did not register: $(cat "$T/out")"
uuid=$(cat "$T/uuid")
scope=$(machinectl show forger --property=Unit --value)
assert_match "it runs in a scope of its own" '^machine-.*\.scope$' "$scope"
assert_eq "its --pod-pids-limit is the scope's TasksMax" 300 "$(unit_prop "$scope" TasksMax)"
assert_eq "its --pod-memory is the scope's MemoryMax" $((256 << 20)) "$(unit_prop "$scope" MemoryMax)"
assert_eq "its --pod-cpus is the scope's CPUQuota" 2s "$(unit_prop "$scope" CPUQuotaPerSecUSec)"
assert_contains "its device volume is in the scope's DeviceAllow" "$(unit_prop "$scope" DeviceAllow)" "/dev/char/10:200 rw"
leader=$(machinectl show forger --property=Leader --value)
ns=$(stat -L -c %i "/proc/$leader/ns/pid")
wait_until 30 sh -c "$SDPOD status $uuid | grep -qx state=running" || true
sleep 2
# The pod's root: its lifeline stopped, its PID 1's container_uuid= rewritten.
for p in $(pidns_procs "$ns"); do
	! tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null | grep -q lifeline || kill -KILL "$p"
done
nsenter -t "$leader" -U python3 -c '
import sys
pid, old, new = sys.argv[1], sys.argv[2].encode(), sys.argv[3].encode()
f = open("/proc/%s/stat" % pid).read().rsplit(")", 1)[1].split()
start, end = int(f[47]), int(f[48])
with open("/proc/%s/mem" % pid, "r+b", buffering=0) as m:
    m.seek(start); env = m.read(end - start)
    i = env.index(b"container_uuid=" + old) + len(b"container_uuid=")
    m.seek(start + i); m.write(new)
' "$leader" "$uuid" "$(cat /proc/sys/kernel/random/uuid)"
check "its PID 1 no longer says it is the pod" sh -c "! grep -qz '^container_uuid=$uuid' /proc/$leader/environ"
kill -KILL "$BG" "$(cut -d' ' -f1 "$DATA/pods/run/$uuid/pid")"
wait "$BG" 2>/dev/null || true
BG=
sleep 1
check "without its supervisor and lifeline the pod runs on" test -n "$(pidns_procs "$ns")"
assert_exit 0 sd rm "$uuid"
assert_eq "rm killed every process of the pod" "" "$(pidns_procs "$ns")"
assert_not_contains "its machine is gone" "$(machinectl list --no-legend --no-pager)" forger
gc_all
