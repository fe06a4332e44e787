#!/bin/bash
#
# test-pod-gc-mounts.sh - deleting pods that have mounts below them, in the
# host's mount namespace (where gc must work): the apps' roots (a tmpfs, an
# overlay on the image's shared tree), a bind mount of a host directory, a
# nested mount, a busy mount.  gc and rm must unmount everything first and
# never reach through a mount: the host directory and the image's tree stay
# intact, and no mount below the data directory remains.  Also the stage1
# gc entrypoint: run before the deletion, with the UUID and the pod
# directory, and its failure only warned about.

. "$(dirname "$0")/lib.sh"

use_real_images flock mount umount

# Mounts made here are undone by the EXIT trap whatever happens (a failed
# check, an abort): first the busy process goes, then every mount below $T
# is detached, deepest first, before lib.sh's own trap removes $T.
BUSY_PID=
IMMUTABLE=
_mounts_below_T() {
	awk -v t="$T" '$5 == t || index($5, t "/") == 1 { print $5 }' /proc/self/mountinfo | sort -r
}
_cleanup_mounts() {
	local m
	# An EXIT trap runs under set -e: nothing here may end the shell early.
	set +e
	trap - ERR
	if [ -n "$BUSY_PID" ]; then
		kill "$BUSY_PID" 2>/dev/null
		wait "$BUSY_PID" 2>/dev/null
	fi
	if [ -n "$IMMUTABLE" ]; then
		chattr -i "$IMMUTABLE" 2>/dev/null
	fi
	for m in $(_mounts_below_T); do
		echo "# cleanup: detaching $m"
		umount -l "$m" 2>/dev/null
	done
}
trap '_rc=$?; _cleanup_mounts; (exit "$_rc"); _lib_on_exit' EXIT

leak_begin

echo "# building the image"
busybox_layout
import_ok BB --name=busybox "$IMG/oci"
TREE="$DATA/tree/${BB#sha256:}"
TREE_BEFORE=$(snapshot "$TREE" --mtime)
# mountinfo shows canonical paths; so does sdpod in its messages.
RDATA=$(realpath "$DATA")

# The host directory a pod bind-mounts: outside $DATA, with a sentinel.
H="$T/host"
mkdir -p "$H/sub"
echo sentinel >"$H/sentinel"
echo deep >"$H/sub/deep"
H_BEFORE=$(snapshot "$H" --mtime)

# mounts_below_data: mounts at or below the data directory.
mounts_below_data() {
	awk -v t="$RDATA" '$5 == t || index($5, t "/") == 1 { print $5 }' /proc/self/mountinfo
}

# exited_pod VAR: a pod made by `sd prepare`, moved to run/ and not held: exited.
exited_pod() {
	local u
	assert_exit 0 sd prepare busybox
	u=$OUT
	[[ "$u" =~ ^[0-9a-f-]{36}$ ]] || die "prepare printed '$u'"
	mv "$DATA/pods/prepared/$u" "$DATA/pods/run/"
	printf -v "$1" '%s' "$u"
}

# app_root UUID: the mount point of the busybox app's root in a pod in run/
# (the run entrypoint makes it when the pod starts: made here by hand).
app_root() {
	mkdir -p "$DATA/pods/run/$1/stage1/rootfs/opt/stage2/busybox/rootfs"
	echo "$DATA/pods/run/$1/stage1/rootfs/opt/stage2/busybox/rootfs"
}

host_intact() {
	assert_eq "$1: the host directory is intact" "$H_BEFORE" "$(snapshot "$H" --mtime)"
	assert_eq "$1: the sentinel is intact" sentinel "$(cat "$H/sentinel" 2>&1)"
}

tree_intact() {
	assert_eq "$1: the image's tree is intact" "$TREE_BEFORE" "$(snapshot "$TREE" --mtime)"
}

# ---------------------------------------------------------------------------
echo "# gc of two pods with mounts"
# ---------------------------------------------------------------------------
# Pod A: a tmpfs as the app's root, a tmpfs nested in it, a bind mount of H
# and a busy tmpfs (a process has its working directory in it).
exited_pod A
PA="$DATA/pods/run/$A"
mount -t tmpfs sdpod-test-root "$(app_root "$A")"
echo data >"$(app_root "$A")/file"
mkdir "$(app_root "$A")/nested"
mount -t tmpfs sdpod-test-nested "$(app_root "$A")/nested"
echo nested >"$(app_root "$A")/nested/file"
mkdir "$PA/stage1/rootfs/vol"
mount --bind "$H" "$PA/stage1/rootfs/vol"
mkdir "$PA/stage1/rootfs/busy"
mount -t tmpfs sdpod-test-busy "$PA/stage1/rootfs/busy"
mkdir "$PA/stage1/rootfs/busy/cwd"
(cd "$PA/stage1/rootfs/busy/cwd" && exec sleep 1000) &
BUSY_PID=$!
# Wait until the process's working directory is in the tmpfs.
for ((i = 0; i < 100; i++)); do
	[ "$(readlink "/proc/$BUSY_PID/cwd" 2>/dev/null)" = "$(realpath "$PA")/stage1/rootfs/busy/cwd" ] && break
	sleep 0.05
done
assert_eq "fixture: the busy process works in the tmpfs" "$(realpath "$PA")/stage1/rootfs/busy/cwd" \
	"$(readlink "/proc/$BUSY_PID/cwd")"

# Pod B: an overlay as the app's root, as the pod will mount it: the shared
# tree below, the pod's upper and work directories.  Changes through it:
# a new file, a changed file, a removed file (a whiteout in upper).
exited_pod B
PB="$DATA/pods/run/$B"
mount -t overlay sdpod-test-overlay \
	-o "lowerdir=$TREE/rootfs,upperdir=$PB/apps/busybox/upper,workdir=$PB/apps/busybox/work" "$(app_root "$B")"
echo new >"$(app_root "$B")/new-file"
echo changed >>"$(app_root "$B")/etc/os-release"
rm "$(app_root "$B")/etc/group"
check "fixture: the overlay shows busybox" test -x "$(app_root "$B")/bin/busybox"
check "fixture: the removal is a whiteout in upper" test -c "$PB/apps/busybox/upper/etc/group"
mkdir "$PB/stage1/rootfs/vol"
mount --bind -o ro "$H" "$PB/stage1/rootfs/vol"

assert_eq "fixture: 6 mounts below the data directory" 6 "$(mounts_below_data | wc -l)"
tree_intact "with the overlay mounted"

assert_exit 0 sd gc --grace-period=0
assert_match "gc removed both pods" '^marked 2 exited and 0 failed pods, expired 0 prepared pods, removed 2 pods$' "$OUT"
assert_contains "gc warns about the busy mount" "$ERR" "$RDATA/pods/exited-garbage/$A/stage1/rootfs/busy"
assert_contains "... that it detached it lazily" "$ERR" "lazily"
assert_eq "gc warns about nothing else" 1 "$(grep -c . <<<"$ERR")"
assert_file_absent "$DATA/pods/run/$A" "$DATA/pods/exited-garbage/$A" "$DATA/pods/run/$B" "$DATA/pods/exited-garbage/$B"
assert_eq "no mount below the data directory remains" "" "$(mounts_below_data)"
host_intact "after gc"
check "the sub-directory of the host directory is intact" test -f "$H/sub/deep"
tree_intact "after gc"
# The lazily detached tmpfs lives on while it is used.
check "the busy process still works in its (detached) directory" test -d "/proc/$BUSY_PID/cwd/"
kill "$BUSY_PID"
wait "$BUSY_PID" 2>/dev/null || true
BUSY_PID=
for d in embryo prepare prepared run exited-garbage garbage; do
	assert_dir_empty "after gc: $d/ is empty" "$DATA/pods/$d"
done

# ---------------------------------------------------------------------------
echo "# rm of an exited pod with mounts"
# ---------------------------------------------------------------------------
exited_pod C
PC="$DATA/pods/run/$C"
mount -t overlay sdpod-test-overlay \
	-o "lowerdir=$TREE/rootfs,upperdir=$PC/apps/busybox/upper,workdir=$PC/apps/busybox/work" "$(app_root "$C")"
echo new >"$(app_root "$C")/new-file"
mkdir "$PC/stage1/rootfs/vol"
mount --bind "$H" "$PC/stage1/rootfs/vol"
# Two mounts stacked on one directory.
mkdir "$PC/stage1/rootfs/stack"
mount -t tmpfs sdpod-test-stack1 "$PC/stage1/rootfs/stack"
mount -t tmpfs sdpod-test-stack2 "$PC/stage1/rootfs/stack"
# A bind of H inside the bind of H: the same host files twice.
mount --bind "$H/sub" "$PC/stage1/rootfs/vol/sub"
assert_eq "fixture: 5 mounts below the pod" 5 "$(mounts_below_data | wc -l)"
assert_exit 0 sd rm "$C"
assert_eq "rm prints the UUID" "$C" "$OUT"
assert_eq "rm of a pod with mounts: no warnings" "" "$ERR"
assert_file_absent "$PC" "$DATA/pods/exited-garbage/$C"
assert_eq "after rm: no mount below the data directory" "" "$(mounts_below_data)"
host_intact "after rm"
tree_intact "after rm"

# ---------------------------------------------------------------------------
echo "# harder trees"
# ---------------------------------------------------------------------------
# The mounts a running pod has in its app's root (proc, a /dev), mount
# points whose names mountinfo must escape, a bind mount of a single host
# file, a symlink to the host directory, and mounts covered by a mount made
# later on a directory above them.  Deleted through a data directory named
# by a symlink (mountinfo shows canonical paths).
exited_pod D
PD="$DATA/pods/run/$D"
RD=$(app_root "$D")
mount -t overlay sdpod-test-overlay \
	-o "lowerdir=$TREE/rootfs,upperdir=$PD/apps/busybox/upper,workdir=$PD/apps/busybox/work" "$RD"
mount -t proc proc "$RD/proc"
mount -t tmpfs sdpod-test-dev "$RD/dev"
mkdir "$RD/dev/pts"
mount -t tmpfs sdpod-test-pts "$RD/dev/pts"
mkdir "$PD/stage1/rootfs/with space" "$PD/stage1/rootfs/back\\slash" "$PD/stage1/rootfs/new
line"
mount -t tmpfs sdpod-test-space "$PD/stage1/rootfs/with space"
mount --bind "$H" "$PD/stage1/rootfs/back\\slash"
mount --bind "$H" "$PD/stage1/rootfs/new
line"
touch "$PD/stage1/rootfs/file-mnt"
mount --bind "$H/sentinel" "$PD/stage1/rootfs/file-mnt"
ln -s "$H" "$PD/stage1/rootfs/escape"
ln -s "$H/sentinel" "$PD/stage1/rootfs/escape-file"
# Covered: a bind of H, then a tmpfs on a directory above it.
mkdir -p "$PD/cover/below"
mount --bind "$H" "$PD/cover/below"
mount -t tmpfs sdpod-test-cover "$PD/cover"
mounted=$(mounts_below_data | wc -l)
assert_eq "fixture: 10 mounts below the pod" 10 "$mounted"
ln -s "$DATA" "$T/data-link"
assert_exit 0 "$SDPOD" --dir="$T/data-link" rm "$D"
assert_eq "rm of the harder tree prints the UUID" "$D" "$OUT"
assert_eq "rm of the harder tree: no warnings" "" "$ERR"
assert_file_absent "$PD" "$DATA/pods/exited-garbage/$D"
assert_eq "after rm: no mount below the data directory" "" "$(mounts_below_data)"
host_intact "after rm of the harder tree"
tree_intact "after rm of the harder tree"
rm "$T/data-link"

# A running pod's mounts are not touched: rm refuses before unmounting.
exited_pod R
PR="$DATA/pods/run/$R"
mount -t tmpfs sdpod-test-running "$(app_root "$R")"
flock --no-fork --exclusive "$PR" sleep 1000 &
holder=$!
for ((i = 0; i < 100; i++)); do
	flock --nonblock --shared "$PR" true 2>/dev/null || break
	sleep 0.05
done
assert_exit 4 sd rm "$R"
assert_exit 0 sd gc --grace-period=0
assert_eq "rm and gc of a running pod leave its mount" 1 "$(mounts_below_data | wc -l)"
kill "$holder"
wait "$holder" 2>/dev/null || true
assert_exit 0 sd rm "$R"
assert_eq "once exited, rm unmounts it" "" "$(mounts_below_data)"
assert_file_absent "$PR"

# ---------------------------------------------------------------------------
echo "# the stage1 gc entrypoint"
# ---------------------------------------------------------------------------
LOG="$T/gc-entrypoint.log"
# stage1 POD SCRIPT-BODY: a stage1 image of the pod's own, $T/stage1-POD,
# whose manifest names /gc, an executable of its rootfs; the pod's
# stage1/manifest names that image.
GC_MANIFEST='{"acKind":"ImageManifest","acVersion":"0.8.11","name":"sdpod/stage1","annotations":[{"name":"sdpod/stage1/gc","value":"/gc"}'
stage1() {
	local image="$T/stage1-$1"
	mkdir -p "$image/rootfs"
	printf '%s]}\n' "$GC_MANIFEST" >"$image/manifest"
	printf '#!/bin/sh\n%s\n' "$2" >"$image/rootfs/gc"
	chmod 0755 "$image/rootfs/gc"
	printf '%s,{"name":"sdpod/stage1/image","value":"%s"}]}\n' "$GC_MANIFEST" "$image" \
		>"$DATA/pods/run/$1/stage1/manifest"
}
exited_pod G
mount -t tmpfs sdpod-test-g "$(app_root "$G")"
echo here >"$(app_root "$G")/marker"
# It runs before the unmounting: the pod's files are all there.
stage1 "$G" "echo \"\$1 \$PWD\" >>'$LOG'
if [ -f stage1/rootfs/opt/stage2/busybox/rootfs/marker ]; then echo mounted; else echo unmounted; fi >>'$LOG'"
assert_exit 0 sd gc --grace-period=0
assert_match "gc removed the pod" 'removed 1 pods$' "$OUT"
assert_eq "gc: no warnings" "" "$ERR"
assert_eq "the gc entrypoint ran with the UUID and in the pod directory, before the unmounting" \
	"$G $RDATA/pods/exited-garbage/$G
mounted" "$(cat "$LOG" 2>&1)"
assert_file_absent "$DATA/pods/exited-garbage/$G"
assert_eq "no mount left" "" "$(mounts_below_data)"
rm -f "$LOG"

# rm runs it too.
exited_pod G2
stage1 "$G2" "echo \"\$1 \$PWD\" >>'$LOG'"
assert_exit 0 sd rm "$G2"
assert_eq "rm ran the gc entrypoint" "$G2 $RDATA/pods/exited-garbage/$G2" "$(cat "$LOG" 2>&1)"
assert_file_absent "$DATA/pods/exited-garbage/$G2"
rm -f "$LOG"

# A failing entrypoint: a warning naming it and its status; the pod goes anyway.
exited_pod F
mount -t tmpfs sdpod-test-f "$(app_root "$F")"
stage1 "$F" "exit 1"
assert_exit 0 sd gc --grace-period=0
assert_match "gc removed the pod whose entrypoint failed" 'removed 1 pods$' "$OUT"
assert_contains "the warning names the entrypoint" "$ERR" "/gc"
assert_contains "the warning names the exit status" "$ERR" "exit status 1"
assert_contains "the warning names the pod" "$ERR" "$F"
assert_contains "it is a warning" "$ERR" "warning"
assert_file_absent "$DATA/pods/exited-garbage/$F"
assert_eq "no mount left" "" "$(mounts_below_data)"
exited_pod F2
stage1 "$F2" "exit 3"
# Its cgroups, left empty by its end: the entrypoint that removes them
# failed, so rm does (a removed build's pod left them for good).
F2_CG=()
for h in /sys/fs/cgroup/unified /sys/fs/cgroup/systemd /sys/fs/cgroup/pids; do
	[ -d "$h" ] && mkdir -p "$h/sdpod/$F2" && F2_CG+=("$h/sdpod/$F2")
done
assert_exit 0 sd rm "$F2"
assert_eq "rm of a pod whose entrypoint fails prints the UUID" "$F2" "$OUT"
assert_contains "rm: the warning names the exit status" "$ERR" "exit status 3"
assert_file_absent "$DATA/pods/exited-garbage/$F2"
check "rm removed its empty cgroups (${#F2_CG[@]} made)" test "${#F2_CG[@]}" -gt 0
for c in "${F2_CG[@]}"; do
	assert_file_absent "$c"
	rmdir "$c" 2>/dev/null || true
done

# The entrypoint is resolved inside the stage1's rootfs: a symlink there
# resolves as it would in the pod, never to the host.
# shellcheck disable=SC2016 # $1 is the script's
printf '#!/bin/sh\necho "$1" >>"%s"\n' "$LOG" >"$T/host-gc"
chmod 0755 "$T/host-gc"
exited_pod S
stage1 "$S" "exit 0"
mkdir -p "$T/stage1-$S/rootfs/usr/lib"
mv "$T/stage1-$S/rootfs/gc" "$T/stage1-$S/rootfs/usr/lib/real-gc"
# shellcheck disable=SC2016 # $1 is the script's
printf '#!/bin/sh\necho "inside $1" >>"%s"\n' "$LOG" >"$T/stage1-$S/rootfs/usr/lib/real-gc"
ln -s /usr/lib/real-gc "$T/stage1-$S/rootfs/gc"
exited_pod S2
stage1 "$S2" "exit 0"
rm "$T/stage1-$S2/rootfs/gc"
ln -s "../../../../../../../../../../../..$T/host-gc" "$T/stage1-$S2/rootfs/gc"
assert_exit 0 sd rm "$S" "$S2"
assert_eq "a symlinked entrypoint resolves inside the stage1; one escaping it is not run" "inside $S" "$(cat "$LOG" 2>&1)"
assert_contains "the entrypoint that cannot be found is warned about" "$ERR" "$S2"
assert_file_absent "$DATA/pods/exited-garbage/$S" "$DATA/pods/exited-garbage/$S2"
rm -f "$LOG" "$T/host-gc"

# A pod that could write its own stage1 directory (it cannot: the run
# entrypoint binds it read-only) would plant a manifest that names no
# image and an entrypoint in its root: entrypoints never come from there.
exited_pod P
printf '%s]}\n' "$GC_MANIFEST" >"$DATA/pods/run/$P/stage1/manifest"
printf '#!/bin/sh\necho planted >>"%s"\n' "$LOG" >"$DATA/pods/run/$P/stage1/rootfs/gc"
chmod 0755 "$DATA/pods/run/$P/stage1/rootfs/gc"
assert_exit 0 sd rm "$P"
assert_file_absent "$LOG"
assert_contains "the manifest without an image is warned about" "$ERR" "stage1/manifest names no stage1 image"
assert_file_absent "$DATA/pods/exited-garbage/$P"

# ---------------------------------------------------------------------------
echo "# a pod that cannot be deleted"
# ---------------------------------------------------------------------------
# An immutable file: deleting that pod fails, gc warns, counts it, goes on
# with the others, and exits 1; once the file can go, the next gc removes it.
exited_pod I
exited_pod J
mount -t tmpfs sdpod-test-i "$(app_root "$I")"
touch "$DATA/pods/run/$I/apps/busybox/upper/stuck"
if chattr +i "$DATA/pods/run/$I/apps/busybox/upper/stuck" 2>/dev/null; then
	IMMUTABLE="$DATA/pods/run/$I/apps/busybox/upper/stuck"
	assert_exit 1 sd gc --grace-period=0
	IMMUTABLE="$DATA/pods/exited-garbage/$I/apps/busybox/upper/stuck"
	assert_match "gc: one removed, one could not be" 'removed 1 pods, 1 could not be removed$' "$OUT"
	assert_contains "gc warns about the pod it could not delete" "$ERR" "$I"
	assert_file_absent "$DATA/pods/exited-garbage/$J"
	assert_file_exists "$DATA/pods/exited-garbage/$I"
	assert_eq "its mounts are gone all the same" "" "$(mounts_below_data)"
	assert_exit 0 sd status "$I"
	assert_contains "the pod left behind is still exited+gc-marked" "$OUT" "state=exited+gc-marked"
	chattr -i "$IMMUTABLE"
	IMMUTABLE=
	assert_exit 0 sd gc --grace-period=0
	assert_match "the next gc removes it" 'removed 1 pods$' "$OUT"
	assert_file_absent "$DATA/pods/exited-garbage/$I"
else
	echo "# chattr +i does not work on $(_show_cmd "$DATA"): skipping the undeletable pod"
	umount "$(app_root "$I")"
	assert_exit 0 sd rm "$I" "$J"
fi

# A stage1 that is a symlink out of the pod: its entrypoint is not run (the
# stage1 is opened without following symlinks), the target is untouched.
mkdir -p "$T/fake-stage1/rootfs"
printf '%s\n' '{"acKind":"ImageManifest","acVersion":"0.8.11","name":"sdpod/stage1","annotations":[{"name":"sdpod/stage1/gc","value":"/gc"}]}' \
	>"$T/fake-stage1/manifest"
# shellcheck disable=SC2016 # $1 is the script's
printf '#!/bin/sh\necho "host stage1 $1" >>"%s"\n' "$LOG" >"$T/fake-stage1/rootfs/gc"
chmod 0755 "$T/fake-stage1/rootfs/gc"
FAKE_BEFORE=$(snapshot "$T/fake-stage1" --mtime)
exited_pod L
rm -r "$DATA/pods/run/$L/stage1" "$DATA/pods/run/$L/apps"
ln -s "$T/fake-stage1" "$DATA/pods/run/$L/stage1"
ln -s "$H" "$DATA/pods/run/$L/apps"
assert_exit 0 sd gc --grace-period=0
assert_file_absent "$LOG"
assert_file_absent "$DATA/pods/exited-garbage/$L"
assert_eq "a stage1 symlinked out of the pod is left alone" "$FAKE_BEFORE" "$(snapshot "$T/fake-stage1" --mtime)"
host_intact "after gc of a pod whose apps/ is a symlink to it"
rm -rf "$T/fake-stage1" "$LOG"

host_intact "at the end"
tree_intact "at the end"
store_verify
leak_check
