#!/bin/bash
#
# test-crash-points.sh - SIGKILL at each step of prepare, run-prepared,
# stop, podapp add/start/rm and gc (issue 15 item 9), through the crash
# points of a -Dcrash-points=true build (lib/basic/crash-point.h; the list
# comes from `sdpod --crash-points`). For each step: the operation is run
# with SDPOD_CRASH_AT naming it, and must die there (a step that is never
# reached is a failure: a bug in the test or in the code). Then:
#
#   * the store is consistent: each pod directory in exactly one state
#     directory, nothing else there; `sdpod list` works; every manifest
#     (pod, stage1/manifest, net/networks.json) is valid JSON;
#   * what the crash interrupted is finished or undone the ordinary way
#     (stop, podapp rm, waiting for a pod to exit) and `sdpod gc` removes
#     every pod it must;
#   * nothing leaks: no mount below the data directory, no process of a
#     removed pod, no process with a file (a lock) of the data directory
#     open but the pods that run, no CNI lease or NAT rule of a removed
#     pod, no user id range claimed for a pod that is gone.
#
# First every step once, in the table's order; then CRASH_ITERATIONS
# (default 20) steps drawn at random with the seed CRASH_SEED (printed;
# default: from the clock). CRASH_WALK=no skips the walk (bench/crash-soak
# runs the random part alone, for a long run); CRASH_ONLY="NAME..." walks
# only those steps. CRASH_PART=K/N runs the K-th of N shares: every N-th
# step of the walk from the K-th, and 1/N of the random steps (meson runs
# the test as two shares at once, so that CI's run does not end waiting on
# one long test).

. "$(dirname "$0")/lib.sh"

use_real_images
require_tool systemd-nspawn systemd-container
require_tool iptables iptables
require_tool ip iproute2
[ -x /usr/lib/cni/ptp ] || skip "no CNI plugins (containernetworking-plugins)"
[ -n "$PODAPP" ] || die "podapp not found (PODAPP_BIN)"
# A build without crash points cannot run this test: a skip, which CI=true
# turns into a failure.
POINTS=$("$SDPOD" --crash-points 2>&1) ||
	skip "$SDPOD has no crash points: build with meson setup -Dcrash-points=true ($POINTS)"

IPAM=/run/sdpod/cni/networks/default
RDATA=$(realpath "$DATA")
SEEN="$T/uuids"
: >"$SEEN"
# The pods check_clean found gone for good: it does not look at them again,
# which kept each check's cost growing with the run (a soak of 1,000 steps
# went from 2 s to 12 s a step).
CHECKED="$T/uuids-checked"
: >"$CHECKED"

# Whatever happens: pods stopped and removed, then what a failed check may
# have left: processes of the pods (by PID), mounts below $T.
_crash_cleanup() {
	local u p m
	set +e
	trap - ERR
	remove_all_pods
	"$SDPOD" --dir="$DATA" gc --grace-period=0 --expire-prepared=1us >/dev/null 2>&1
	for u in $(sort -u "$SEEN"); do
		for p in $(pod_procs "$u"); do
			echo "# cleanup: killing process $p of pod $u"
			kill -KILL "$p" 2>/dev/null
		done
	done
	for u in $(sort -u "$SEEN"); do
		nat_release "$u" 2>/dev/null
	done
	for m in $(awk -v t="$T" '$5 == t || index($5, t "/") == 1 { print $5 }' /proc/self/mountinfo | sort -r); do
		echo "# cleanup: detaching $m"
		umount -l "$m" 2>/dev/null
	done
}
trap '_rc=$?; _crash_cleanup; (exit "$_rc"); _lib_on_exit' EXIT

leak_begin

echo "# building the image"
busybox_layout
import_ok BB --name=busybox "$IMG/oci"

# ---------------------------------------------------------------------------
# Helpers.
# ---------------------------------------------------------------------------

UUID_RE='^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$'

# all_pods: "DIR UUID" of every entry of the state directories.
all_pods() {
	local d e
	for d in "$DATA"/pods/*/; do
		for e in "$d"*; do
			[ -e "$e" ] || [ -L "$e" ] || continue
			echo "$(basename "$d") $(basename "$e")"
		done
	done
	return 0
}

remember_pods() {
	all_pods | awk '{print $2}' >>"$SEEN"
}

pod_state() { "$SDPOD" --dir="$DATA" status "$1" 2>/dev/null | sed -n 's/^state=//p'; }

# wait_not_running UUID SECONDS: until the pod is not running (it exits by
# itself, or its nspawn was killed); true when it did.
wait_not_running() {
	local i
	for ((i = 0; i < $2 * 10; i++)); do
		[ "$(pod_state "$1")" = running ] || return 0
		sleep 0.1
	done
	return 1
}

# The pod's PID 1, seen from the host (the pod's directory in run/).
leader_of() {
	local n
	n=$(awk '{print $1}' "$DATA/pods/run/$1/pid" 2>/dev/null) || return 0
	awk '{print $1}' "/proc/$n/task/$n/children" 2>/dev/null || true
}

# crash POINT CMD...: runs CMD with SDPOD_CRASH_AT=POINT; it must reach the
# step: the line the crash point writes names it, and when the process that
# died is CMD's own, CMD was killed by SIGKILL (137). A CMD still running
# after 120 s is killed (and a failure). CRASH_RC is CMD's exit status.
CRASHES=0
crash() {
	local point=$1 pid i rc=0 who
	shift
	SDPOD_CRASH_AT=$point "$@" >"$T/crash.out" 2>"$T/crash.err" </dev/null &
	pid=$!
	# A zombie still answers kill -0: look at its state.
	for ((i = 0; i < 1200; i++)); do
		[ -e "/proc/$pid" ] && [ "$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null)" != Z ] || break
		sleep 0.1
	done
	[ "$i" -lt 1200 ] || kill -KILL "$pid" 2>/dev/null || true
	wait "$pid" || rc=$?
	CRASH_RC=$rc
	CRASHES=$((CRASHES + 1))
	no_sanitizer_report "$point: $(_show_cmd "$@")" "$T/crash.err"
	who=$(sed -n "s/^sdpod: crash point $point: SIGKILL to pid \([0-9]*\)$/\1/p" "$T/crash.err" | head -n 1)
	if [ -z "$who" ]; then
		fail "$point: reached by $(_show_cmd "$@")" "exit $rc" "stdout: $(head -c 1500 "$T/crash.out")" \
			"stderr: $(head -c 1500 "$T/crash.err")"
	elif [ "$who" = "$pid" ] && [ "$rc" != 137 ]; then
		fail "$point: $(_show_cmd "$@") died by SIGKILL" "exit $rc" "stderr: $(head -c 1500 "$T/crash.err")"
	else
		pass "$point: reached by $(_show_cmd "$@") (pid $who, exit $rc)"
	fi
	remember_pods
}

# check_store WHAT: the store's invariants right after a crash.
check_store() {
	local what=$1 problems="" dir uuid n f out
	while read -r dir uuid; do
		[ -n "$uuid" ] || continue
		[[ "$uuid" =~ $UUID_RE ]] || problems+="stray entry $dir/$uuid; "
		[ -d "$DATA/pods/$dir/$uuid" ] && [ ! -L "$DATA/pods/$dir/$uuid" ] || problems+="$dir/$uuid is not a directory; "
		for f in pod stage1/manifest net/networks.json; do
			# Read once: a pod that is exiting removes its network
			# record meanwhile, and that is no broken file.
			if out=$(cat "$DATA/pods/$dir/$uuid/$f" 2>/dev/null) && ! jq -e . >/dev/null 2>&1 <<<"$out"; then
				problems+="$dir/$uuid/$f is not valid JSON: $(head -c 200 <<<"$out"); "
			fi
		done
	done < <(all_pods)
	n=$(all_pods | awk '{print $2}' | sort | uniq -d)
	[ -z "$n" ] || problems+="in two state directories: $n; "
	if ! out=$("$SDPOD" --dir="$DATA" list --format=json 2>&1) || ! jq -e . >/dev/null 2>&1 <<<"$out"; then
		problems+="sdpod list failed: $out; "
	fi
	if [ -z "$problems" ]; then
		pass "$what: the store is consistent"
	else
		fail "$what: the store is consistent" "$problems" "$(all_pods)"
	fi
}

# gc_all WHAT: sdpod gc collects everything that is not running. A gc whose
# crash left a pod for the next one may need a second run.
gc_all() {
	local out rc=0
	out=$("$SDPOD" --dir="$DATA" gc --grace-period=0 --expire-prepared=1us 2>&1) || rc=$?
	no_sanitizer_report "$1: sdpod gc" <(echo "$out")
	if [ "$rc" = 0 ]; then
		pass "$1: sdpod gc"
	else
		fail "$1: sdpod gc" "exit $rc: $out"
	fi
}

# nat_release UUID: removes the masquerade rules the ptp plugin made for
# the pod. They are a leak this test knows and counts, but does not fail
# on (yet): when the run entrypoint dies after a CNI ADD, the pod's network
# namespace is gone by the time gc releases its network, and ptp's DEL
# (containernetworking-plugins 1.1) finds the addresses to unmasquerade
# only in that namespace, so it leaves the rules. The fix (a namespace that
# outlives the pod until gc, or the addresses handed back another way) is
# still to do; meanwhile the test removes what it made.
NAT_LEAKS=0
nat_release() {
	local line c chains
	chains=$(iptables-save -t nat | grep -F -- "$1" | grep '^-A POSTROUTING' | sed -n 's/.* -j \(CNI-[0-9a-f]*\)$/\1/p')
	while read -r line; do
		[ -z "$line" ] || eval "iptables -t nat -D ${line#-A }"
	done < <(iptables-save -t nat | grep -F -- "$1" | grep '^-A POSTROUTING')
	for c in $chains; do
		iptables -t nat -F "$c" && iptables -t nat -X "$c"
	done
}

# procs_left UUID: the processes of the pod, with their command lines and
# parents, once those that are dying have had 3 s: the kernel ends the rest
# of a pid namespace after its PID 1 asynchronously.
procs_left() {
	local i p
	for ((i = 0; i < 30; i++)); do
		[ -n "$(pod_procs "$1")" ] || return 0
		sleep 0.1
	done
	for p in $(pod_procs "$1"); do
		echo "$p ($(tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null | head -c 100), parent $(awk '/^PPid:/ {print $2}' "/proc/$p/status" 2>/dev/null))"
	done
}

# check_clean WHAT KEEP...: after the repair and gc, only the pods KEEP
# (running) are left, and nothing of any other pod.
check_clean() {
	local what=$1 u problems="" left p
	shift
	local keep=" $* "
	left=$(all_pods | awk '{print $2}' | sort -u)
	for u in $left; do
		[[ "$keep" == *" $u "* ]] || problems+="pod $u is left ($(pod_state "$u")); "
	done
	p=$(awk -v t="$RDATA" '$5 == t || index($5, t "/") == 1 { print $5 }' /proc/self/mountinfo)
	[ -z "$p" ] || problems+="mounts below the data directory: $p; "
	local checked=""
	for u in $(sort -u "$SEEN" | comm -23 - "$CHECKED"); do
		[[ "$keep" == *" $u "* ]] && continue
		checked+="$u"$'\n'
		p=$(procs_left "$u")
		[ -z "$p" ] || problems+="processes of pod $u: $p; "
		grep -rqs -- "$u" "$IPAM" && problems+="a CNI lease of pod $u; "
		if iptables-save -t nat 2>/dev/null | grep -q -- "$u"; then
			# A known leak, not fixed: see nat_release.
			echo "# KNOWN LEAK: NAT rules of pod $u (its supervisor died after CNI ADD; ptp's DEL without the netns keeps them)"
			NAT_LEAKS=$((NAT_LEAKS + 1))
			nat_release "$u"
		fi
		iptables-save -t filter 2>/dev/null | grep -q -- "$u" && problems+="firewall rules of pod $u; "
	done
	# Files of the data directory held open (a lock is held through one):
	# only by the processes of the pods that run.
	p=$(find /proc/[0-9]*/fd -maxdepth 1 -lname "$RDATA/*" -printf '%p -> %l\n' 2>/dev/null |
		awk -v keep="$keep" -v r="$RDATA/pods/run/" '{
			u = substr($3, length(r) + 1, 36)
			if (index($3, r) == 1 && index(keep, " " u " ")) next
			print }' || true)
	[ -z "$p" ] || problems+="open files of the data directory: $p; "
	if [ -d "$DATA/private-users" ]; then
		for p in "$DATA"/private-users/*; do
			[ -e "$p" ] || continue
			u=$(head -c 36 "$p")
			[[ "$keep" == *" $u "* ]] || problems+="user id range $(basename "$p") still claimed for pod $u; "
		done
	fi
	if [ -z "$problems" ]; then
		printf '%s' "$checked" | sort -u -o "$CHECKED" - "$CHECKED"
		pass "$what: nothing leaked"
	else
		fail "$what: nothing leaked" "$problems"
	fi
}

# The sandbox the app steps run on: made again when a step ended it.
SB=
sandbox() {
	if [ -n "$SB" ] && [ "$(pod_state "$SB")" = running ]; then
		return 0
	fi
	SB=$("$PODAPP" --dir="$DATA" sandbox) || die "podapp sandbox failed"
	echo "$SB" >>"$SEEN"
}

# app_gone APP WHAT: nothing of the app is left in the sandbox, which runs.
app_gone() {
	local app=$1 what=$2 leader problems=""
	leader=$(leader_of "$SB")
	[ "$(pod_state "$SB")" = running ] || problems+="the sandbox does not run ($(pod_state "$SB")); "
	[ -z "$(jq -r --arg a "$app" '.apps[] | select(.name == $a) | .name' "$DATA/pods/run/$SB/pod" 2>&1)" ] ||
		problems+="the manifest names $app; "
	[ ! -e "$DATA/pods/run/$SB/apps/$app" ] || problems+="apps/$app is left; "
	[ ! -e "$DATA/pods/run/$SB/status/$app" ] || problems+="status/$app is left; "
	[ -z "$leader" ] || ! grep -q " /opt/stage2/$app/" "/proc/$leader/mountinfo" ||
		problems+="its root is still mounted in the pod; "
	if [ -z "$problems" ]; then
		pass "$what: app $app is gone, the sandbox runs on"
	else
		fail "$what: app $app is gone, the sandbox runs on" "$problems"
	fi
}

# ---------------------------------------------------------------------------
# One step: its operation, with its fixture and repair.
# ---------------------------------------------------------------------------

APPS=0
step() {
	local point=$1 op=$2 u app rc=0
	echo "# $point ($op)"
	case "$op" in
	prepare)
		crash "$point" "$SDPOD" --dir="$DATA" prepare busybox --exec=/bin/true
		check_store "$point"
		;;
	run)
		u=$("$SDPOD" --dir="$DATA" prepare busybox --exec=/bin/true) || die "sdpod prepare failed"
		echo "$u" >>"$SEEN"
		crash "$point" "$SDPOD" --dir="$DATA" run-prepared "$u"
		check_store "$point"
		# What runs goes on and exits by itself (the app is /bin/true).
		wait_not_running "$u" 60 || fail "$point: pod $u exits by itself" "it is $(pod_state "$u")"
		;;
	stop)
		u=$("$SDPOD" --dir="$DATA" run --detach busybox --exec=/bin/sleep -- 1000) || die "sdpod run --detach failed"
		echo "$u" >>"$SEEN"
		crash "$point" "$SDPOD" --dir="$DATA" stop "$u"
		check_store "$point"
		if [ "$(pod_state "$u")" = running ]; then
			"$SDPOD" --dir="$DATA" stop "$u" >/dev/null 2>&1 || true
		fi
		wait_not_running "$u" 60 || fail "$point: pod $u stops" "it is $(pod_state "$u")"
		;;
	gc)
		# An exited pod whose network was never released: its supervisor
		# died while the pod ran (the gc entrypoint has work to do).
		u=$("$SDPOD" --dir="$DATA" prepare busybox --exec=/bin/true) || die "sdpod prepare failed"
		echo "$u" >>"$SEEN"
		SDPOD_CRASH_AT=run-attached "$SDPOD" --dir="$DATA" run-prepared "$u" >/dev/null 2>&1 || true
		wait_not_running "$u" 60 || die "fixture: pod $u did not exit"
		crash "$point" "$SDPOD" --dir="$DATA" gc --grace-period=0
		check_store "$point"
		;;
	add | start | rm)
		sandbox
		APPS=$((APPS + 1))
		app=c$APPS
		if [ "$op" = add ]; then
			crash "$point" "$PODAPP" --dir="$DATA" add "$SB" --app="$app" busybox --exec=/bin/sleep -- 1000
		else
			"$PODAPP" --dir="$DATA" add "$SB" --app="$app" busybox --exec=/bin/sleep -- 1000 ||
				die "podapp add failed"
			if [ "$op" = start ]; then
				crash "$point" "$PODAPP" --dir="$DATA" start "$SB" --app="$app"
			else
				"$PODAPP" --dir="$DATA" start "$SB" --app="$app" || die "podapp start failed"
				crash "$point" "$PODAPP" --dir="$DATA" rm "$SB" --app="$app"
			fi
		fi
		check_store "$point"
		# The interrupted app is finished the ordinary way: added again
		# (what a crashed add left goes first) and started, then removed.
		if [ "$op" != rm ]; then
			rc=0
			"$PODAPP" --dir="$DATA" add "$SB" --app="$app" busybox --exec=/bin/sleep -- 1000 >"$T/fix.out" 2>&1 || rc=$?
			# 4: the manifest names it already (the crash came after the rewrite).
			[ "$rc" = 0 ] || [ "$rc" = 4 ] || fail "$point: podapp add after the crash" "exit $rc: $(cat "$T/fix.out")"
			rc=0
			"$PODAPP" --dir="$DATA" start "$SB" --app="$app" >"$T/fix.out" 2>&1 || rc=$?
			[ "$rc" = 0 ] || fail "$point: podapp start after the crash" "exit $rc: $(cat "$T/fix.out")"
		fi
		rc=0
		"$PODAPP" --dir="$DATA" rm "$SB" --app="$app" >"$T/fix.out" 2>&1 || rc=$?
		# 3: nothing was left of it.
		[ "$rc" = 0 ] || [ "$rc" = 3 ] || fail "$point: podapp rm after the crash" "exit $rc: $(cat "$T/fix.out")"
		app_gone "$app" "$point"
		;;
	*)
		fail "$point: an operation the test knows" "operation \"$op\""
		;;
	esac
	remember_pods
	gc_all "$point"
	if [ -n "$SB" ] && [ "$(pod_state "$SB")" = running ]; then
		check_clean "$point" "$SB"
	else
		check_clean "$point"
	fi
}

NAMES=()
OPS=()
while IFS=$'\t' read -r name op _; do
	NAMES+=("$name")
	OPS+=("$op")
done <<<"$POINTS"
[ "${#NAMES[@]}" -gt 10 ] || die "sdpod --crash-points listed ${#NAMES[@]} steps: $POINTS"
echo "# ${#NAMES[@]} crash points"
PART=${CRASH_PART:-1/1}
[[ $PART =~ ^([1-9][0-9]*)/([1-9][0-9]*)$ ]] && [ "${BASH_REMATCH[1]}" -le "${BASH_REMATCH[2]}" ] ||
	die "CRASH_PART=$PART: not K/N with 1 <= K <= N"
PART_K=${BASH_REMATCH[1]} PART_N=${BASH_REMATCH[2]}

if [ "${CRASH_WALK:-yes}" != no ]; then
	echo "# every step once${CRASH_ONLY:+ of: $CRASH_ONLY} (share $PART)"
	for i in "${!NAMES[@]}"; do
		[ $((i % PART_N)) -eq $((PART_K - 1)) ] || continue
		# CRASH_ONLY="NAME...": only those (to look at one step again).
		[ -z "${CRASH_ONLY:-}" ] || [[ " $CRASH_ONLY " == *" ${NAMES[$i]} "* ]] || continue
		step "${NAMES[$i]}" "${OPS[$i]}"
	done
fi

ITERATIONS=$(((${CRASH_ITERATIONS:-20} + PART_N - PART_K) / PART_N))
SEED=${CRASH_SEED:-$(($(date +%s) + PART_K))}
echo "# $ITERATIONS random steps, seed $SEED (CRASH_SEED=$SEED to repeat)"
RANDOM=$SEED
for ((n = 1; n <= ITERATIONS; n++)); do
	i=$((RANDOM % ${#NAMES[@]}))
	echo "# iteration $n/$ITERATIONS"
	step "${NAMES[$i]}" "${OPS[$i]}"
done

echo "# the sandbox, stopped and collected"
if [ -n "$SB" ] && [ "$(pod_state "$SB")" = running ]; then
	assert_exit 0 sd stop "$SB"
fi
gc_all "end"
check_clean "end"
echo "# $CRASHES crashes; known leaks not failed on: NAT rules of $NAT_LEAKS pods"
leak_check
