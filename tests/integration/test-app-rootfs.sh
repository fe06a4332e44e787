#!/bin/bash
#
# test-app-rootfs.sh - podapp add --rootfs (an app whose root is a host
# directory, as the containerd shim gives a container its bundle's rootfs)
# with --stdin/--stdout/--stderr (FIFOs and files of the host, as
# containerd's) and --bind, --rlimit, --supplementary-groups, on real pods:
# the app runs in the directory, exec works in it, its streams reach the
# host, rm unmounts it and leaves the directory's content alone, and an app
# that plants links in its root reaches nothing of the host beyond it.
#
# It also measures what the shim relies on: systemd 252 opens
# StandardOutput=file:PATH in the pod's root before it enters the app's
# (RootDirectory=), so the path need not exist in the app.

. "$(dirname "$0")/lib.sh"

use_real_images
require_tool systemd-nspawn systemd-container
require_tool mkfifo coreutils
[ -n "$PODAPP" ] || die "podapp not found (PODAPP_BIN)"

leak_begin

app_state() { pa status "$1" --app="$2" --format=json | jq -r .state; }
state_is() { [ "$(app_state "$1" "$2")" = "$3" ]; }
file_has() { grep -qF -- "$2" "$1" 2>/dev/null; }

# Readers of the FIFOs, ended by PID at exit.
readers=()
end_readers() {
	local p
	for p in "${readers[@]}"; do kill "$p" 2>/dev/null || true; done
	for p in "${readers[@]}"; do wait "$p" 2>/dev/null || true; done
	readers=()
}
# As remove_pods_on_exit, and the readers first.
trap '_rc=$?; set +e; trap - ERR; end_readers; remove_all_pods; (exit "$_rc"); _lib_on_exit' EXIT

echo "# a busybox tree in a host directory"
busybox_layout
ROOT1=$T/root1
cp -a "$IMG/rootfs" "$ROOT1"
mkdir -p "$T/vol"
echo "from the host" >"$T/vol/host-file"
tree_of() { (cd "$1" && find . -printf '%p %y %m\n' | sort); }
before=$(tree_of "$ROOT1")

# ---------------------------------------------------------------------------
echo "# a pod without a user namespace (the shim's), an app with FIFOs"
# ---------------------------------------------------------------------------
assert_exit 0 pa sandbox --private-users=no --keep-on-app-failure
U=$OUT
LEADER=$(leader_of "$U")
mkfifo "$T/in" "$T/out"
cat "$T/out" >"$T/out.txt" &
readers+=($!)
echo "line from the host" >"$T/in" &
readers+=($!)

assert_exit 2 pa add "$U" --app=both busybox --rootfs="$ROOT1" -- /bin/true
assert_contains "an image and --rootfs: refused" "$ERR" "not both"
assert_exit 2 pa add "$U" --app=nocmd --rootfs="$ROOT1"
assert_contains "no command: refused" "$ERR" "needs a command"
assert_exit 2 pa add "$U" --app=rel --rootfs=relative -- /bin/true
assert_exit 2 sd prepare --rootfs="$ROOT1" -- /bin/true
assert_contains "--rootfs is podapp add's" "$ERR" "podapp add"
assert_exit 2 pa add "$U" --app=rl --rootfs="$ROOT1" --rlimit=bogus=1 -- /bin/true

assert_exit 0 pa add "$U" --app=r1 --rootfs="$ROOT1" --stdin="$T/in" --stdout="$T/out" --stderr="$T/err.txt" \
	--bind="$T/vol:/data" --bind="$T/vol/host-file:/etc/motd:ro" --rlimit=nofile=1000:2000 \
	--supplementary-groups=10,20 --working-dir=/tmp --set-env=WHO=r1 -- \
	/bin/sh -c 'read l; echo "got: $l"; echo "to stderr" >&2; echo "nofile $(ulimit -n)"; id -G; pwd; echo $WHO;
	            cat /etc/motd; echo written >/data/by-app; test -e /opt/stage2 || echo "no stdio paths here";
	            exec sleep 1000'
assert_eq "the manifest records the root" "$ROOT1" \
	"$(jq -r '.apps[0].annotations[] | select(.name == "sdpod/rootfs") | .value' "$(pod_dir "$U")/pod")"
assert_eq "and names no image" sha256:0000000000000000000000000000000000000000000000000000000000000000 \
	"$(jq -r '.apps[0].image.id' "$(pod_dir "$U")/pod")"
assert_exit 0 pa start "$U" --app=r1
wait_for "stdin came from the host's FIFO" 10 file_has "$T/out.txt" "got: line from the host"
wait_for "stdout reached the host's FIFO" 10 file_has "$T/out.txt" "r1"
check "stderr went to the host's file" file_has "$T/err.txt" "to stderr"
check "the rlimit applies" file_has "$T/out.txt" "nofile 1000"
check "the supplementary groups apply" file_has "$T/out.txt" "0 10 20"
check "the working directory" file_has "$T/out.txt" "/tmp"
check "a read-only bind of a file" file_has "$T/out.txt" "from the host"
check "the app does not see where its streams come from" file_has "$T/out.txt" "no stdio paths here"
check "a bind of a directory is writable" file_has "$T/vol/by-app" "written"
# The measurement: the FIFO's path exists only in the pod's root.
assert_exit 1 pa exec "$U" --app=r1 -- /bin/test -e /opt/stage2/r1/stdio/1
pass "systemd 252 opened StandardOutput=file: before RootDirectory= (the path is not in the app's root)"

echo "# exec runs in the directory"
assert_exit 0 pa exec "$U" --app=r1 -- /bin/sh -c 'echo made-by-exec >/made-by-exec; ls /bin/busybox'
assert_eq "exec's change lands in the directory" made-by-exec "$(cat "$ROOT1/made-by-exec")"
assert_exit 3 pa exec "$U" --app=r1 -- /bin/sh -c 'exit 3'
assert_exit 1 pa exec "$U" --app=r1 -- /bin/sh -c 'echo x >/etc/motd'

echo "# a hostile app: links in its root reach nothing beyond it"
assert_exit 0 pa exec "$U" --app=r1 -- /bin/sh -c 'ln -s / /up; ln -s ../../../../../../etc /hostetc;
	echo pwn >/up/pwned; echo pwn >/hostetc/pwned-etc 2>/dev/null; mkdir -p /hostetc2; true'
assert_file_absent /pwned
assert_file_absent /etc/pwned-etc
check "what it wrote is in its own directory" test -e "$ROOT1/pwned"
check "its link out of the root led into the root" test -e "$ROOT1/etc/pwned-etc"

echo "# a root whose /bin is a link out of it: checked inside the root"
ROOT2=$T/root2
mkdir -p "$ROOT2"
ln -s ../../../../../../../../bin "$ROOT2/bin"
assert_exit 2 pa add "$U" --app=out --rootfs="$ROOT2" -- /bin/sh -c true
assert_eq "the refused app is not in the manifest" 1 "$(jq '.apps | length' "$(pod_dir "$U")/pod")"

echo "# rm: unmounted, the directory's content kept"
assert_exit 0 pa rm "$U" --app=r1 --grace=1s
check_not "the pod no longer mounts the root" grep -qF "$ROOT1" "/proc/$LEADER/mountinfo"
check_not "nor the streams or binds" grep -qE "/opt/stage2/r1/" "/proc/$LEADER/mountinfo"
check "the directory is still there" test -x "$ROOT1/bin/busybox"
check "with what the app made in it" test -e "$ROOT1/made-by-exec"
rm -f "$ROOT1/etc/pwned-etc" "$ROOT1/made-by-exec" "$ROOT1/pwned" "$ROOT1/up" "$ROOT1/hostetc" "$T/vol/by-app"
rmdir "$ROOT1/hostetc2" 2>/dev/null
# Less the mount points systemd made for the app's binds, as runc would.
mount_points() { grep -v '^./\(run\|data\|etc/motd\|etc/resolv.conf\|etc/hosts\|etc/hostname\) '; }
assert_eq "and nothing else of it changed" "$(mount_points <<<"$before")" "$(tree_of "$ROOT1" | mount_points)"
after_rm=$(tree_of "$ROOT1")
end_readers

# ---------------------------------------------------------------------------
echo "# a pod with a user namespace: the directory is bound as it is, never idmapped"
# ---------------------------------------------------------------------------
assert_exit 0 pa sandbox --keep-on-app-failure
V=$OUT
# Idmapped, the pod's root was the host's root on every file of the tree
# (issue 24): a tree of the host's root is refused, one given to the
# pod's range is the pod's.
assert_exit 4 pa add "$V" --app=u1 --rootfs="$ROOT1" -- /bin/true
assert_contains "a root-owned tree is refused, saying what to do" "$ERR" "chown -R"
VBASE=$(sd status "$V" | sed -n 's/^private-users=//p')
VBASE=${VBASE%:65536}
ROOTU="$T/rootu"
cp -a "$ROOT1" "$ROOTU"
chown -R "$VBASE:$VBASE" "$ROOTU"
assert_exit 0 pa add "$V" --app=u1 --rootfs="$ROOTU" --stdout="$T/u1.txt" -- \
	/bin/sh -c 'id -u; stat -c %u /bin/busybox; echo new >/owned-by-pod-root; exec sleep 1000'
assert_exit 0 pa start "$V" --app=u1
wait_for "the app runs as the pod's root" 10 file_has "$T/u1.txt" "0"
check "the tree given to the pod's range is the pod's root's" test "$(sed -n 2p "$T/u1.txt")" = 0
wait_for "a file the app makes" 10 test -e "$ROOTU/owned-by-pod-root"
assert_eq "is owned by the pod's range on disk, never by the host's root" "$VBASE" "$(stat -c %u "$ROOTU/owned-by-pod-root")"
assert_exit 0 pa rm "$V" --app=u1 --grace=1s

echo "# an overlay (what containerd's snapshotter mounts) cannot be idmapped: said clearly"
mkdir -p "$T/ovl"/{lower,upper,work,merged}
cp -a "$IMG/rootfs/." "$T/ovl/lower/"
mount -t overlay overlay -o "lowerdir=$T/ovl/lower,upperdir=$T/ovl/upper,workdir=$T/ovl/work" "$T/ovl/merged"
assert_exit 4 pa add "$V" --app=ovl --rootfs="$T/ovl/merged" -- /bin/true
assert_contains "the error names the cause" "$ERR" "private-users=no"
assert_eq "nothing of it is left in the manifest" 0 "$(jq '.apps | length' "$(pod_dir "$V")/pod")"
assert_exit 0 pa add "$U" --app=ovl --rootfs="$T/ovl/merged" -- /bin/true
pass "without a user namespace, an overlay is a root"
assert_exit 0 pa rm "$U" --app=ovl
umount "$T/ovl/merged"

echo "# the pods go; gc leaves the directory alone"
assert_exit 0 sd stop "$U"
assert_exit 0 sd stop "$V"
assert_exit 0 sd gc --grace-period=0
assert_eq "gc left the directory as it was" "$after_rm" "$(tree_of "$ROOT1")"
no_pod_procs "$U"
no_pod_procs "$V"
leak_check
