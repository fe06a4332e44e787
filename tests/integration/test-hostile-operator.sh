#!/bin/bash
#
# test-hostile-operator.sh - the operator's own commands are never turned
# into the pod's tool (sdpod-security(7), issue 24 items 3 and 4).
#
# (a) The cleanup of an app's stdio, binds and root (podapp add's clearing
#     of leftovers, add's failure path, rm) works in the pod's tree as the
#     host's root: the pod's root plants symlinks where it walks, pointing
#     through /proc/PID/root of a host-rooted process in the pod's pid
#     namespace (the test makes one with nsenter, as a host helper that
#     joined the pod would be) to a victim directory of the host. The
#     victim stays as it was: nothing of a pod's tree is followed.
# (b) No host-rooted process is reachable from the pod: while podapp add,
#     status, list and exec run (each joins the pod's pid namespace to
#     reach its systemd), the pod's root scans /proc/*/root, cwd and fd/*
#     for a marker file of the host; in a pod with a user namespace and in
#     one without (whose root keeps CAP_SYS_PTRACE). It must find nothing.
# (c) podapp add --bind, --rootfs and --stdout do not make the pod's root
#     the host's root on what they bind: a root-owned host file cannot be
#     rewritten, and a set-user-ID file the pod writes into a writable bind
#     is not a host-root set-user-ID program.

. "$(dirname "$0")/lib.sh"

use_real_images
require_tool systemd-nspawn systemd-container
require_tool nsenter util-linux
[ -n "$PODAPP" ] || die "podapp not found (PODAPP_BIN)"

remove_pods_on_exit
leak_begin

echo "# building the image"
busybox_layout
import_ok BB --name=busybox "$IMG/oci"

app_exited() { [ "$(pa status "$1" --app="$2" --format=json | jq -r .state)" = exited ]; }

# The host's victims: a directory with files, and one whose stdio/ and
# binds/ look like an app's.
VICTIM="$T/victim"
mkdir -p "$VICTIM/sub" "$T/vparent/stdio" "$T/vparent/binds" "$T/vparent/rootfs"
echo sentinel >"$VICTIM/sentinel"
echo deep >"$VICTIM/sub/deep"
echo one >"$T/vparent/stdio/1"
echo bind >"$T/vparent/binds/0"
echo keep >"$T/vparent/rootfs/keep"
victim_before=$(snapshot "$VICTIM" --mtime)
vparent_before=$(snapshot "$T/vparent" --mtime)
mkdir "$T/victims.orig"
cp -a "$VICTIM" "$T/vparent" "$T/victims.orig/"
# Each case checked on its own: the victims are put back as they were.
victims_intact() {
	assert_eq "$1: the victim directory is unchanged" "$victim_before" "$(snapshot "$VICTIM" --mtime)"
	assert_eq "$1: the victim app-like directory is unchanged" "$vparent_before" "$(snapshot "$T/vparent" --mtime)"
	rm -rf -- "$VICTIM" "$T/vparent"
	cp -a "$T/victims.orig/victim" "$T/victims.orig/vparent" "$T/"
}

# ---------------------------------------------------------------------------
echo "# (a) symlinks the pod plants where the cleanup walks are never followed"
# ---------------------------------------------------------------------------
assert_exit 0 pa sandbox --keep-on-app-failure
U=$OUT
L=$(leader_of "$U")
# A host-rooted process in the pod's pid namespace: its /proc/PID/root,
# seen from the pod, is the host's root.
nsenter -t "$L" --pid -- sleep 120 &
NSENTER_PID=$!
HOST_PROC=
for _ in $(seq 50); do
	HOST_PROC=$(awk '{print $1}' "/proc/$NSENTER_PID/task/$NSENTER_PID/children" 2>/dev/null || true)
	[ -n "$HOST_PROC" ] && break
	sleep 0.1
done
[ -n "$HOST_PROC" ] || die "nsenter made no process in the pod's pid namespace"
IN_POD=$(awk '/^NSpid:/ {print $NF}' "/proc/$HOST_PROC/status")
# The pod sees the host through it (the way these links lead out).
check "the pod's /proc/$IN_POD/root is the host's root for the host" test -e "/proc/$L/root/proc/$IN_POD/root$VICTIM/sentinel"
OUT_LINK="/proc/$IN_POD/root"

# An app with a stdout the pod then swaps for a link (podapp rm), and
# names the pod prepares before the operator adds them (add clears what a
# crashed add left, then fails on a missing bind).
echo original >"$T/out-d"
assert_exit 0 pa add "$U" --app=d --stdout="$T/out-d" busybox --exec=/bin/true
assert_exit 0 as_pod_root "$U" "
	\$B mkdir -p /opt/stage2/b /opt/stage2/f
	\$B ln -s $OUT_LINK$VICTIM /opt/stage2/b/stdio
	\$B ln -s $OUT_LINK$VICTIM /opt/stage2/b/binds
	\$B ln -s $OUT_LINK$T/vparent /opt/stage2/c
	\$B ln -s $OUT_LINK$VICTIM /opt/stage2/f/stdio
	\$B mv /opt/stage2/d /opt/stage2/d.gone && \$B mkdir /opt/stage2/d &&
		\$B ln -s $OUT_LINK$VICTIM /opt/stage2/d/stdio && \$B ln -s $OUT_LINK$VICTIM /opt/stage2/d/binds
	echo planted"
assert_contains "the pod's root planted its links" "$OUT" planted
pa add "$U" --app=b busybox --exec=/bin/true >/dev/null 2>&1 || true
victims_intact "podapp add over a planted stdio and binds link"
pa add "$U" --app=c busybox --exec=/bin/true >/dev/null 2>&1 || true
victims_intact "podapp add over a planted app directory link"
assert_exit 3 pa add "$U" --app=f --bind="$T/no-such-source:/x" busybox --exec=/bin/true
pa add "$U" --app=f --bind="$T/victim:/x" --bind="$T/no-such-source:/y" busybox --exec=/bin/true >/dev/null 2>&1 || true
victims_intact "podapp add's failure path"
pa rm "$U" --app=d >/dev/null 2>&1 || true
victims_intact "podapp rm of an app whose directory the pod swapped"
assert_eq "the operator's stdout file is untouched" original "$(cat "$T/out-d")"
kill "$HOST_PROC" "$NSENTER_PID" 2>/dev/null || true
wait "$NSENTER_PID" 2>/dev/null || true

# ---------------------------------------------------------------------------
echo "# (b) no host-rooted process of a command is reachable from the pod"
# ---------------------------------------------------------------------------
MARK="$T/host-marker-$$"
echo host >"$MARK"
scan_while_commands_run() {
	local uuid=$1 what=$2 stop=$T/stop-scan scan_pid i
	rm -f "$stop"
	touch "/proc/$(leader_of "$uuid")/root/tmp/scan-go"
	# The pod's root scans for 20 s at most, until the host says stop.
	as_pod_root "$uuid" "
		n=0; end=\$((\$(\$B date +%s) + 20))
		while [ -e /tmp/scan-go ] && [ \$(\$B date +%s) -lt \$end ]; do
			for x in /proc/[0-9]*/root /proc/[0-9]*/cwd /proc/[0-9]*/fd/*; do
				[ -e \"\$x$MARK\" ] && echo \"found=\$x\"
			done
			n=\$((n + 1))
		done
		echo scans=\$n" >"$T/scan.out" 2>&1 &
	scan_pid=$!
	sleep 1
	for i in $(seq 15); do
		pa status "$uuid" --app=s >/dev/null 2>&1 || true
		pa list "$uuid" >/dev/null 2>&1 || true
		pa exec "$uuid" --app=s /bin/true >/dev/null 2>&1 || true
	done
	pa add "$uuid" --app="s2" busybox --exec=/bin/sleep -- 100 >/dev/null 2>&1 || true
	rm -f "/proc/$(leader_of "$uuid")/root/tmp/scan-go"
	wait "$scan_pid" || true
	assert_exit 0 pa exec "$uuid" --app=s /bin/true
	assert_match "$what: the pod's root scanned while the commands ran" 'scans=[1-9]' "$(cat "$T/scan.out")"
	assert_not_contains "$what: nothing in the pod leads to the host's root" "$(cat "$T/scan.out")" found=
}
assert_exit 0 pa add "$U" --app=s busybox --exec=/bin/sleep -- 1000
assert_exit 0 pa start "$U" --app=s
scan_while_commands_run "$U" "a pod with a user namespace"
assert_exit 0 pa sandbox --private-users=no
N=$OUT
assert_exit 0 pa add "$N" --app=s busybox --exec=/bin/sleep -- 1000
assert_exit 0 pa start "$N" --app=s
scan_while_commands_run "$N" "a pod without a user namespace"
assert_exit 0 sd stop "$N"

# ---------------------------------------------------------------------------
echo "# (c) --bind, --rootfs and --stdout give the pod's root no host-root ownership"
# ---------------------------------------------------------------------------
mkdir -m 0755 "$T/bind"
echo host-owned >"$T/bind/root-file"
mkdir -m 1777 "$T/bind/open"
mkdir -m 0755 "$T/rootfs"
cp -a "$IMG/rootfs/." "$T/rootfs/"
echo host-owned >"$T/rootfs/root-file"
mkdir -m 1777 "$T/rootfs/open"
# The operator's choice: a root-owned output file the pod may write.
: >"$T/stdout-root"
chmod 0666 "$T/stdout-root"
assert_exit 0 pa add "$U" --app=binder --user=0 --group=0 --bind="$T/bind:/b" --stdout="$T/stdout-root" busybox \
	--exec=/bin/sh -- -c '
	echo pwned >/b/root-file 2>/dev/null && echo bindfile=written || echo bindfile=refused
	cp /bin/busybox /b/open/suid && chmod 4755 /b/open/suid; echo suid=done'
assert_exit 0 pa start "$U" --app=binder
wait_for "the app binder ran" 20 app_exited "$U" binder
got=$(cat "$T/stdout-root")
assert_contains "root in the pod cannot rewrite a root-owned file of a --bind" "$got" bindfile=refused
assert_eq "which is unchanged" host-owned "$(cat "$T/bind/root-file")"
if [ -e "$T/bind/open/suid" ]; then
	st=$(stat -c '%u %A' "$T/bind/open/suid")
	check_not "a set-user-ID file the pod wrote into a --bind is not a host-root set-user-ID program ($st)" \
		test "$(stat -c %u "$T/bind/open/suid")" = 0 -a -u "$T/bind/open/suid"
else
	pass "the pod could not write a set-user-ID file into the --bind"
fi
assert_exit 0 as_pod_root "$U" '
	$B chmod 4755 /opt/stage2/binder/stdio/1 2>/dev/null && echo chmod=done || echo chmod=refused
	$B chown 0:0 /opt/stage2/binder/stdio/1 2>/dev/null && echo chown=done || echo chown=refused'
assert_contains "the pod's root cannot change the mode of a root-owned --stdout file" "$OUT" chmod=refused
assert_eq "which keeps its host owner and mode" "0 -rw-rw-rw-" "$(stat -c '%u %A' "$T/stdout-root")"

# A root-owned tree is refused in a pod with a user namespace (before the
# fix its root became the host's root on every file of it); a tree the
# operator gave to the pod's range works, and its root-owned files stay
# out of the pod's reach.
assert_exit 4 pa add "$U" --app=rooted --user=0 --group=0 --rootfs="$T/rootfs" -- /bin/true
assert_contains "a root-owned --rootfs is refused, saying why" "$ERR" "not by the pod's root"
BASE=$(sd status "$U" | sed -n 's/^private-users=//p')
BASE=${BASE%:65536}
chown -R "$BASE:$BASE" "$T/rootfs"
chown 0:0 "$T/rootfs/root-file"
assert_exit 0 pa add "$U" --app=rooted --user=0 --group=0 --rootfs="$T/rootfs" --stdout="$T/stdout-rootfs" \
	--exec=/bin/sh -- -c '
	echo pwned >/root-file 2>/dev/null && echo rootfile=written || echo rootfile=refused
	cp /bin/busybox /open/suid && chmod 4755 /open/suid; echo suid=done'
assert_exit 0 pa start "$U" --app=rooted
wait_for "the app rooted ran" 20 app_exited "$U" rooted
assert_contains "root in the pod cannot rewrite a root-owned file of a --rootfs" "$(cat "$T/stdout-rootfs")" rootfile=refused
assert_eq "which is unchanged" host-owned "$(cat "$T/rootfs/root-file")"
assert_file_exists "$T/rootfs/open/suid"
st=$(stat -c '%u %A' "$T/rootfs/open/suid" 2>/dev/null || echo none)
assert_eq "a set-user-ID file the pod wrote into a --rootfs is its range's, not the host root's" "$BASE" "${st%% *}"
assert_exit 0 as_pod_root "$U" '$B chmod 4755 /opt/stage2/rooted/stdio/1; echo chmod=tried'
st=$(stat -c '%u %A' "$T/stdout-rootfs" 2>/dev/null || echo none)
check_not "a --stdout file sdpod made is never the host root's set-user-ID program ($st)" \
	test "$(stat -c %u "$T/stdout-rootfs")" = 0 -a -u "$T/stdout-rootfs"

assert_exit 0 pa rm "$U" --app=binder
assert_exit 0 pa rm "$U" --app=rooted
victims_intact "after everything"
assert_exit 0 sd stop "$U"
remove_all_pods
leak_check
