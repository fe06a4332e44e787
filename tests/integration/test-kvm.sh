#!/bin/bash
#
# test-kvm.sh - the kvm flavor (--stage1=kvm, kvm/kvm-run.h): the pod is a
# QEMU guest (KVM where the host can run Debian's kernel in it, TCG here),
# and inside it the nspawn flavor's stage1 runs the apps. Exit codes and
# statuses as the guest reports them, the console log and the journal of
# it, several apps, readiness and stop with grace, the VM process's
# confinement on the host (the pod's first id, no capabilities, no_new_privs,
# seccomp, no network, the pod's cgroup, no file of the host's but those it
# was handed), a killed supervisor, gc, and what the flavor refuses.
#
# Each boot takes 10-30 s under TCG on a loaded 2-core machine: the test
# boots four VMs.

. "$(dirname "$0")/lib.sh"

use_real_images
require_tool qemu-system-x86_64 qemu-system-x86
require_tool mkfs.erofs erofs-utils
[ -n "$PODAPP" ] || die "podapp not found (PODAPP_BIN)"
KVM_IMAGE=$(dirname "$SDPOD_STAGE1")/stage1-kvm
[ -f "$KVM_IMAGE/manifest" ] || die "$KVM_IMAGE: the kvm flavor's stage1 image is not built (it needs linux-image-cloud-amd64 and erofs-utils)"

remove_pods_on_exit
leak_begin

echo "# building the image: busybox"
busybox_layout
import_ok BB --name=busybox "$IMG/oci"

# kvm [RUN OPTIONS] ARGS...: sdpod run --stage1=kvm --net=none.
kvm() {
	local pre=()
	while [[ ${1:-} == --uuid-file=* || ${1:-} == --detach ]]; do
		pre+=("$1")
		shift
	done
	sd run "${pre[@]}" --stage1=kvm --net=none "$@"
}
qemu_of() { leader_of "$1"; }
gone() { ! kill -0 "$1" 2>/dev/null; }

# ---------------------------------------------------------------------------
echo "# refusals, naming the flavor (no VM)"
# ---------------------------------------------------------------------------
assert_exit 4 sd run --stage1=kvm --net=host busybox --exec=/bin/true
assert_contains "the host's network" "$ERR" "kvm flavor joins no namespace but its own"
assert_exit 4 kvm --volume=data,kind=empty busybox --exec=/bin/true --mount=volume=data,target=/data
assert_contains "volumes" "$ERR" "kvm flavor does not mount volumes"
assert_exit 4 kvm -t busybox --exec=/bin/sh
assert_contains "a terminal" "$ERR" "kvm flavor has no terminal"
assert_exit 4 pa sandbox --stage1=kvm --net=none
assert_contains "podapp sandbox" "$ERR" "kvm flavor"
# QEMU runs as the first id of the pod's range: without a range, every
# such pod's QEMU would be nobody, and could trace the others'.
assert_exit 4 kvm --private-users=no busybox --exec=/bin/true
assert_contains "--private-users=no" "$ERR" "--private-users=no is refused"
eleven=()
for i in 1 2 3 4 5 6 7 8 9 10 11; do eleven+=(--- busybox --app="a$i" --exec=/bin/true); done
assert_exit 4 kvm busybox --exec=/bin/true "${eleven[@]}"
assert_contains "more apps than disks" "$ERR" "1 to 10 apps"

# ---------------------------------------------------------------------------
echo "# an exit code, the flavor and the status recorded, the console log"
# ---------------------------------------------------------------------------
t0=$(date +%s%N)
assert_exit 3 kvm --uuid-file="$T/u3" busybox --exec=/bin/sh -- -c 'echo hello-from-the-guest; printf "osc\033]52;c;cHduZWQ=\007end\n"; exit 3'
echo "# run to exit: $((($(date +%s%N) - t0) / 1000000)) ms (accelerator: $([ -e /sys/module/kvm_pvm ] && echo tcg, PVM host || echo see status))"
U3=$(cat "$T/u3")
assert_contains "the app's output reaches the caller through the guest's console" "$OUT" "hello-from-the-guest"
assert_not_contains "escaped" "$OUT" $'\033]52'
assert_eq "status shows the flavor" kvm "$(status_of "$U3" stage1)"
assert_eq "the guest reported the app's exit status" 3 "$(status_of "$U3" app-busybox)"
assert_exit 0 sd journal "$U3"
assert_contains "sdpod journal shows the guest's console" "$OUT" "hello-from-the-guest"
assert_contains "escaped as \\x1b" "$OUT" '\x1b]52'
assert_eq "no process of the pod is left" "" "$(pgrep -f "$(pod_dir "$U3")/" || true)"
no_pod_cgroup "$U3"

# ---------------------------------------------------------------------------
echo "# two apps: the guest's systemd runs both, the first failure is the pod's"
# ---------------------------------------------------------------------------
# Its output read by a reader that goes away at once (sdpod run | head):
# the supervisor still records and cleans up (SIGPIPE ignored).
rc=0
kvm --uuid-file="$T/u2" busybox --exec=/bin/sh -- -c 'echo first-app' --- \
	busybox --app=second --exec=/bin/sh -- -c 'sleep 1; echo second-app; exit 5' 2>"$T/u2.err" | head -c 1 >/dev/null ||
	rc=$?
assert_eq "sdpod run | head -c 1: the pod's exit code, not a death by SIGPIPE (141)" 5 "$rc"
U2=$(cat "$T/u2")
wait_for "the pod ends even so" 120 status_is "$U2" state exited
assert_exit 0 sd journal "$U2"
assert_contains "the first app ran" "$OUT" "first-app"
assert_contains "the second app ran" "$OUT" "second-app"
assert_eq "the first app's status" 0 "$(status_of "$U2" app-busybox)"
assert_eq "the second app's status" 5 "$(status_of "$U2" app-second)"
no_pod_cgroup "$U2"

# ---------------------------------------------------------------------------
echo "# detached: ready, the VM process confined, stop with grace"
# ---------------------------------------------------------------------------
assert_exit 0 env KVM_TEST_SECRET=hunter2 "$SDPOD" --dir="$DATA" run --detach --uuid-file="$T/ud" --stage1=kvm --net=none \
	busybox --exec=/bin/sleep -- 1000 --- busybox --app=twin --exec=/bin/sleep -- 1000
UD=$(cat "$T/ud")
assert_eq "two apps of one image: one disk of its tree" "app-0.erofs pod.erofs" \
	"$(cd "$(pod_dir "$UD")/stage1/vm" && ls -- *.erofs | tr '\n' ' ' | sed 's/ $//')"
assert_eq "run --detach returns once the guest is ready: the pod runs" running "$(status_of "$UD" state)"
Q=$(qemu_of "$UD")
check "the supervisor's child is QEMU" grep -q qemu-system "/proc/$Q/cmdline"
BASE=$(status_of "$UD" private-users | cut -d: -f1)
assert_eq "QEMU runs as the pod's first id" "$BASE $BASE $BASE $BASE" "$(awk '/^Uid:/ { print $2, $3, $4, $5 }' "/proc/$Q/status")"
assert_eq "and its group" "$BASE $BASE $BASE $BASE" "$(awk '/^Gid:/ { print $2, $3, $4, $5 }' "/proc/$Q/status")"
assert_eq "with no supplementary group (TCG)" "" "$(awk '/^Groups:/ { print $2 }' "/proc/$Q/status")"
assert_eq "no capabilities" 0000000000000000 "$(awk '/^CapEff:/ { print $2 }' "/proc/$Q/status")"
assert_eq "no_new_privs" 1 "$(awk '/^NoNewPrivs:/ { print $2 }' "/proc/$Q/status")"
assert_eq "a seccomp filter (QEMU's sandbox)" 2 "$(awk '/^Seccomp:/ { print $2 }' "/proc/$Q/status")"
assert_ne "a network namespace of its own" "$(readlink /proc/self/ns/net)" "$(readlink "/proc/$Q/ns/net")"
assert_eq "with nothing but lo in it" "lo" "$(nsenter -t "$Q" -n ip -o link | awk -F': ' '{ print $2 }' | tr '\n' ' ' | sed 's/ $//')"
assert_contains "in the pod's cgroup" "$(cat "/proc/$Q/cgroup")" "/sdpod/$UD"
assert_not_contains "nothing of the caller's environment" "$(tr '\0' '\n' <"/proc/$Q/environ")" "KVM_TEST_SECRET"
# Every file QEMU holds is one of the image's guest files or the pod's
# disks: what it was handed.
assert_eq "it holds no file of the host's but its disks, kernel and initrd" "" \
	"$(for f in /proc/"$Q"/fd/*; do readlink "$f"; done | grep '^/' | grep -v -e "^$KVM_IMAGE/guest/" -e "^$(pod_dir "$UD")/stage1/vm/" -e '^/dev/null$' || true)"
assert_exit 4 pa add "$UD" busybox --app=more --exec=/bin/true
assert_contains "podapp on a kvm pod" "$ERR" "kvm flavor"
assert_exit 4 sd enter "$UD" /bin/true
assert_contains "sdpod enter: not yet" "$ERR" "no enter entrypoint"
t0=$(date +%s)
assert_exit 0 sd stop "$UD"
echo "# stop took $(($(date +%s) - t0)) s"
assert_eq "stopped, the guest stopped the app (SIGTERM) and said so" 143 "$(status_of "$UD" app-busybox)"
assert_eq "and the other" 143 "$(status_of "$UD" app-twin)"
assert_file_absent "$(pod_dir "$UD")/stage1/vm"
assert_contains "its console says the host stopped it" "$(sd journal "$UD")" "the host stops the pod"
wait_for "QEMU is gone" 5 gone "$Q"

# ---------------------------------------------------------------------------
echo "# the default network: the guest on the pod's CNI network, its port published"
# ---------------------------------------------------------------------------
# A server of the host's on the gateway's side, which the guest fetches
# from; the guest's own server on 80 (any user may listen on any port, as
# in the other flavors), published on the host's 18093.
mkdir -p "$T/www" && echo from-the-host >"$T/www/x"
python3 -m http.server 18094 --bind 0.0.0.0 --directory "$T/www" >"$T/http.log" 2>&1 &
# (a job of this shell: _lib_on_exit ends it)
wait_until 10 curl -sf -o /dev/null http://127.0.0.1:18094/x
assert_exit 0 sd run --detach --uuid-file="$T/un" --stage1=kvm --port=18093:80 busybox --exec=/bin/sh -- -c \
	'wget -q -O- http://10.77.0.1:18094/x; echo from-the-guest >/tmp/index.html; exec httpd -f -p 80 -h /tmp'
UN=$(cat "$T/un")
ADDR=$(status_of "$UN" network-default | awk '{ print $2 }' | cut -d/ -f1)
assert_match "the pod has an address on the default network" '^10\.77\.[0-9]+\.[0-9]+$' "$ADDR"
assert_contains "the guest took it" "$(sd journal "$UN")" "kvm-init: eth0: $ADDR, through 10.77.0.1"
wait_for "the guest reaches the host through its gateway" 30 journal_has "from-the-host" "$UN"
assert_exit 0 curl -sS -m 10 "http://$ADDR/index.html"
assert_eq "the host reaches the guest at the pod's address" from-the-guest "$OUT"
assert_exit 0 curl -sS -m 10 http://127.0.0.1:18093/index.html
assert_eq "and through the published port" from-the-guest "$OUT"
Q=$(qemu_of "$UN")
assert_ne "QEMU itself stays out of the pod's network namespace" "$(readlink "$(pod_dir "$UN")/netns" 2>/dev/null || echo none)" \
	"$(readlink "/proc/$Q/ns/net")"
assert_exit 0 sd stop "$UN"
assert_eq "stopped: no address of it is leased" "" "$(grep -rl "$UN" /run/sdpod/cni/networks/default 2>/dev/null || true)"
assert_eq "no NAT rule of it is left" "" "$(iptables -t nat -S | grep -- "$UN" || true)"
check_not "its port is free again" curl -sf -m 2 -o /dev/null http://127.0.0.1:18093/index.html

# ---------------------------------------------------------------------------
echo "# the supervisor killed: the VM dies with it, gc cleans up"
# ---------------------------------------------------------------------------
assert_exit 0 kvm --detach --uuid-file="$T/uk" busybox --exec=/bin/sleep -- 1000
UK=$(cat "$T/uk")
Q=$(qemu_of "$UK")
S=$(nspawn_of "$UK")
kill -KILL "$S"
wait_for "QEMU died with its supervisor (PR_SET_PDEATHSIG)" 5 gone "$Q"
wait_for "the pod reads as exited" 5 status_is "$UK" state exited
assert_exit 0 sd gc --grace-period=0s
assert_exit 0 sd gc --grace-period=0s
for u in "$U3" "$U2" "$UD" "$UN" "$UK"; do
	check_not "gc removed pod $u" sd status "$u"
	no_pod_cgroup "$u"
done

leak_check
