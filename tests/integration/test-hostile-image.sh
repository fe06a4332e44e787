#!/bin/bash
#
# test-hostile-image.sh - no device node from an image, or made in a pod,
# ever works (sdpod-security(7), "Devices"). An image's layer carries a
# block device of a scratch loop device and a character device, mode 0666;
# apps of a default pod and of a --private-users=no pod, as uid 1000 and as
# root, try to open and write them; a --private-users=no app tries mknod,
# without CAP_MKNOD (refused) and with --cap-add=MKNOD (made, but on nodev
# mounts it does not open). The loop device's backing file must stay
# unchanged, and the store's tree must hold no device node.
#
# The device numbers are a loop device of a file in $T, never a real disk;
# the character device is /dev/full's (1:7): harmless, and which a pod's
# device rule allows, so only nodev and import stop it.

. "$(dirname "$0")/lib.sh"

use_real_images
require_tool systemd-nspawn systemd-container
require_tool losetup mount
require_tool python3

LOOP=
detach_loop() {
	[ -z "$LOOP" ] || losetup -d "$LOOP" 2>/dev/null || true
}
trap '_rc=$?; set +e; trap - ERR; remove_all_pods; detach_loop; (exit "$_rc"); _lib_on_exit' EXIT
leak_begin

# The scratch disk: 1 MiB of zeros behind a loop device.
head -c 1048576 /dev/zero >"$T/disk.img"
LOOP=$(losetup -f --show "$T/disk.img")
IFS=: read -r MAJ MIN <"/sys/class/block/${LOOP#/dev/}/dev"
DISK_SUM=$(sha256sum <"$T/disk.img")
disk_intact() {
	assert_eq "$1: the loop device's file is unchanged" "$DISK_SUM" "$(sha256sum <"$T/disk.img")"
}
echo "# scratch disk $LOOP ($MAJ:$MIN)"

echo "# building the image: busybox, and a layer of device nodes"
IMG="$T/img"
mkdir -p "$IMG/rootfs"
img_busybox_rootfs "$IMG/rootfs"
tar --numeric-owner -C "$IMG/rootfs" -czf "$T/base.tar.gz" .
python3 - "$T/devs.tar" "$MAJ" "$MIN" <<'EOF'
import sys, tarfile
out, maj, mn = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
def info(name, kind, mode, **kw):
    ti = tarfile.TarInfo(name)
    ti.type, ti.mode, ti.mtime = kind, mode, 1577836800
    for k, v in kw.items():
        setattr(ti, k, v)
    return ti
with tarfile.open(out, "w", format=tarfile.PAX_FORMAT) as t:
    t.addfile(info("hostile", tarfile.DIRTYPE, 0o755))
    t.addfile(info("hostile/disk", tarfile.BLKTYPE, 0o666, devmajor=maj, devminor=mn))
    t.addfile(info("hostile/full", tarfile.CHRTYPE, 0o666, devmajor=1, devminor=7))
    t.addfile(info("hostile/whiteout", tarfile.CHRTYPE, 0o000, devmajor=0, devminor=0))
    t.addfile(info("hostile/fifo", tarfile.FIFOTYPE, 0o644))
EOF
gzip -n "$T/devs.tar"
oci_layout_new "$IMG/oci" "$(host_arch)" "$T/base.tar.gz" "$T/devs.tar.gz"

echo "# import: no device node reaches the store"
import_ok ID --name=hostile "$IMG/oci"
TREE="$DATA/tree/${ID#sha256:}/rootfs"
assert_file_exists "$TREE/bin/busybox"
assert_eq "no block or character device in the store but 0:0 whiteouts" "" \
	"$(find "$DATA" \( -type b -o -type c \) 2>/dev/null |
		while read -r p _; do [ "$(stat -c '%t:%T' "$p")" = 0:0 ] || echo "$p"; done)"
check "a FIFO of the image is kept" test -p "$TREE/hostile/fifo"
assert_contains "import says it skipped the block device, naming it" "$ERR" "hostile/disk"
assert_contains "import says it skipped the character device, naming it" "$ERR" "hostile/full"
assert_contains "the warning says what was skipped" "$ERR" "device node"
disk_intact "import"

OUTDIR="$T/out"
mkdir "$OUTDIR"
chmod 777 "$OUTDIR"
VOL=(--volume=out,kind=host,source="$OUTDIR")
OUTMNT=--mount=volume=out,target=/out

# try NODE NAME: opens NODE, a device node, for reading and writing and
# writes to it; prints NAME=opened or NAME=refused, or NAME=absent when
# there is no device node at NODE (never creating a file there).
PROBE='try() { if [ ! -b "$1" ] && [ ! -c "$1" ]; then echo "$2=absent"; elif (exec 3<>"$1") 2>/dev/null; then echo "$2=opened";
	printf SDPOD-HOSTILE | dd of="$1" bs=13 count=1 conv=notrunc 2>/dev/null; else echo "$2=refused"; fi; }'
# The image's nodes (absent after a fixed import: then there is nothing to
# open; on an old import they are real nodes) at /hostile, and the numbers
# made anew where a node could be made.
ATTACK="$PROBE"'; try /hostile/disk disk; try /hostile/full chr'

run_attack() { # OUTFILE ARGS...: runs the attack in a pod, its lines in OUTFILE
	local out=$1
	shift
	assert_exit 0 timeout 60 "$SDPOD" --dir="$DATA" run "${VOL[@]}" "$@" hostile "$OUTMNT" --exec=/bin/sh -- -c \
		"{ $ATTACK
} >/out/$out 2>&1; true"
}
result() { grep "^$2=[a-z]*\$" "$OUTDIR/$1" 2>/dev/null | cut -d= -f2; }

echo "# a default pod (user namespace): uid 1000 and root"
run_attack u1000 --user=1000
run_attack root --user=0
for who in u1000 root; do
	assert_match "default pod, $who: the image's block device does not open" '^(absent|refused)$' "$(result $who disk)"
	assert_match "default pod, $who: the image's character device does not open" '^(absent|refused)$' "$(result $who chr)"
done
disk_intact "default pod"

echo "# a --private-users=no pod: uid 1000 and root"
run_attack nu1000 --private-users=no --user=1000
run_attack nroot --private-users=no --user=0
for who in nu1000 nroot; do
	assert_match "--private-users=no, $who: the image's block device does not open" '^(absent|refused)$' "$(result $who disk)"
	assert_match "--private-users=no, $who: the image's character device does not open" '^(absent|refused)$' "$(result $who chr)"
done
disk_intact "--private-users=no pod"

echo "# mknod in a --private-users=no app: refused by default, inert with --cap-add=MKNOD"
ATTACK="$PROBE; mknod /mk b $MAJ $MIN 2>/out/mknod.err && echo mknod=made || echo mknod=refused; try /mk made"
run_attack mknod --private-users=no --user=0
assert_eq "--private-users=no: mknod without --cap-add=MKNOD is refused" refused "$(result mknod mknod)"
assert_contains "--private-users=no: mknod fails with EPERM" "$(cat "$OUTDIR/mknod.err" 2>&1)" "Operation not permitted"
# With CAP_MKNOD: a host disk's node cannot even be made, the pod's device
# rule refuses mknod(2) of any device it does not allow (test-hostile-cgroup
# checks the rule itself); and a node of a device it does allow (null, 1:3)
# made on any mount but /dev does not open (nodev).
ATTACK="$PROBE; mknod /disk b $MAJ $MIN 2>/out/capmknod.err && echo mknod=made || echo mknod=refused; try /disk made;
	for p in /mk /out/mk /dev/shm/mk /tmp/mk /run/mk; do mknod \$p c 1 3 && try \$p \$p; done; true"
run_attack capmknod --private-users=no --user=0 --cap-add=MKNOD
assert_contains "--cap-add=MKNOD: the warning says what it gives" "$ERR" "CAP_MKNOD lets it make a node of any host device"
sed "s/^/# capmknod: /" "$OUTDIR/capmknod"
assert_eq "--cap-add=MKNOD: a host disk's node is not made (the pod's device rule)" refused "$(result capmknod mknod)"
assert_contains "--cap-add=MKNOD: mknod of the disk fails with EPERM" "$(cat "$OUTDIR/capmknod.err" 2>&1)" \
	"Operation not permitted"
assert_match "--cap-add=MKNOD: so there is no disk node to open" '^(absent|refused)$' "$(result capmknod made)"
assert_eq "--cap-add=MKNOD: a node on the app's root does not open (nodev)" refused "$(result capmknod /mk)"
assert_eq "--cap-add=MKNOD: a node in a host volume does not open in the pod (nodev)" refused "$(result capmknod /out/mk)"
for d in /dev/shm /tmp /run; do
	assert_eq "--cap-add=MKNOD: a node made in $d does not open (nodev)" refused "$(result capmknod "$d/mk")"
done
rm -f "$OUTDIR/mk"
disk_intact "mknod"

echo "# podapp add: an image's overlay, a --rootfs and a --bind with device nodes (the shim's way)"
# A host directory as an app's root, as containerd's snapshot is the
# shim's container's: its nodes are the image's (made here as the host's
# root, as a snapshotter does), and must not open in the pod either.
ROOT="$T/root"
cp -a "$IMG/rootfs" "$ROOT"
mkdir "$ROOT/hostile" "$T/bind"
mknod -m 0666 "$ROOT/hostile/disk" b "$MAJ" "$MIN"
mknod -m 0666 "$T/bind/disk" b "$MAJ" "$MIN"
DEVCMD="$PROBE; try /hostile/disk rootfs; try /data/disk bind"
for mode in "--private-users=no" ""; do
	# A device of the host as stdin is the operator's (devtmpfs cannot be
	# idmapped: only a pod without a user namespace takes it).
	STDIN=()
	[ -z "$mode" ] || STDIN=(--stdin=/dev/null)
	assert_exit 0 pa sandbox $mode --keep-on-app-failure
	S=$OUT
	# A --rootfs is bound as it is: in a user namespace it must be the
	# pod's root's (podapp(1)), as a snapshotter's would be given.
	if [ -z "$mode" ]; then
		base=$(sd status "$S" | sed -n 's/^private-users=\([0-9]*\):.*/\1/p')
		chown -R "$base:$base" "$ROOT"
	fi
	assert_exit 0 pa add "$S" --app=r --rootfs="$ROOT" --bind="$T/bind:/data" --user=1000 --stdout="$T/r$mode.txt" \
		"${STDIN[@]}" -- /bin/sh -c "$DEVCMD; cat && echo stdin=read"
	assert_exit 0 pa add "$S" --app=i hostile --user=1000 --stdout="$T/i$mode.txt" --exec=/bin/sh -- -c "$PROBE; try /hostile/disk image"
	assert_exit 0 pa start "$S" --app=r
	assert_exit 0 pa start "$S" --app=i
	wait_until 20 grep -q "^bind=" "$T/r$mode.txt" || true
	wait_until 20 grep -q "^image=" "$T/i$mode.txt" || true
	sed "s/^/# podapp ${mode:-userns}: /" "$T/r$mode.txt" "$T/i$mode.txt"
	assert_eq "podapp add ${mode:-(user namespace)}: a node of a --rootfs does not open" refused \
		"$(grep '^rootfs=' "$T/r$mode.txt" | cut -d= -f2)"
	assert_eq "podapp add ${mode:-(user namespace)}: a node of a --bind does not open" refused \
		"$(grep '^bind=' "$T/r$mode.txt" | cut -d= -f2)"
	assert_match "podapp add ${mode:-(user namespace)}: the image's node does not open" '^(absent|refused)$' \
		"$(grep '^image=' "$T/i$mode.txt" | cut -d= -f2)"
	[ -z "$mode" ] || assert_eq "podapp add $mode: --stdin=/dev/null, the operator's device, works" read \
		"$(grep '^stdin=' "$T/r$mode.txt" | cut -d= -f2)"
	remove_all_pods
done
disk_intact "podapp add"

echo "# an app still has its pseudo devices (nspawn's /dev), and a volume that is a device works"
ATTACK='echo x >/dev/null && echo null=ok; head -c 4 /dev/urandom | wc -c | sed "s/^ */urandom=/";
	if (exec 3>/full) 2>/dev/null; then echo full=opened; else echo full=refused; fi'
run_attack pseudo --user=1000 --volume=full,kind=host,source=/dev/full --mount=volume=full,target=/full
assert_eq "/dev/null works in the app" ok "$(result pseudo null)"
assert_eq "/dev/urandom works in the app" 4 "$(grep -o '^urandom=[0-9]*' "$OUTDIR/pseudo" | cut -d= -f2)"
assert_eq "a host volume that is a device node (the operator's grant) opens" opened "$(result pseudo full)"

remove_all_pods
disk_intact "the end"
leak_check
