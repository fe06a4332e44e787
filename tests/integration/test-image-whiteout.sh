#!/bin/bash
#
# test-image-whiteout.sh - OCI whiteouts.  First the two-layer image umoci
# builds (layer 2 deletes /etc/removed-file, /opaque-dir/old-a and old-b
# with ".wh." entries), compared with umoci's own unpack of it; then a
# hand-made image with what umoci never writes: an opaque directory marker,
# a whiteout of a whole directory and of a symlink, a whiteout listed after
# an entry of the same layer, whiteouts of things that do not exist.

. "$(dirname "$0")/lib.sh"

use_real_images

leak_begin

echo "# building images"
IMG="$T/img"
mkdir "$IMG"
img_busybox_rootfs "$IMG/rootfs"
img_whiteout_layout "$IMG/wo" latest "$IMG/rootfs"

# --- the umoci image ---------------------------------------------------------
echo "# two-layer umoci image"
import_ok id "$IMG/wo"
tree="$DATA/tree/${id#sha256:}/rootfs"
assert_file_absent "$tree/etc/removed-file" "$tree/opaque-dir/old-a" "$tree/opaque-dir/old-b"
assert_eq "opaque-dir holds only new-c" "new-c" "$(find "$tree/opaque-dir" -mindepth 1 -printf '%P ' 2>&1 | sed 's/ $//')"
assert_eq "opaque-dir/new-c (layer 2)" new-c "$(cat "$tree/opaque-dir/new-c" 2>&1)"
assert_eq "etc/added-in-layer2 (layer 2)" added "$(cat "$tree/etc/added-in-layer2" 2>&1)"
assert_eq "keep-dir/kept (layer 1, untouched)" kept "$(cat "$tree/keep-dir/kept" 2>&1)"
assert_eq "etc/passwd (layer 1) survives the whiteout next to it" \
	"$(cat "$IMG/rootfs/etc/passwd")" "$(cat "$tree/etc/passwd" 2>&1)"
assert_eq "bin/busybox (layer 1)" "$(sha256sum <"$IMG/rootfs/bin/busybox")" "$(sha256sum <"$tree/bin/busybox" 2>&1)"
assert_eq "no .wh. entry made it into the tree" "" "$(cd "$tree" && find . -name '.wh.*')"

# An independent implementation of the same merge: umoci unpack.  The whole
# tree (modes, owners, content, file mtimes) must be the same.
umoci unpack --image "$IMG/wo:latest" "$T/umoci-bundle" >/dev/null
assert_same_tree "the tree equals umoci's unpack of the image" "$T/umoci-bundle/rootfs" "$tree"
rm -rf -- "$T/umoci-bundle"

# --- hand-made layers ----------------------------------------------------------
echo "# hand-made whiteouts"
# layer_from DIR OUT ENTRY...: a tar of DIR's ENTRYs, in exactly that order.
layer_from() {
	local dir=$1 out=$2
	shift 2
	tar --create --file="$out" --format=gnu --no-recursion --numeric-owner --owner=0 --group=0 \
		--mtime=@1577836800 -C "$dir" "$@"
}

# Layer 1: a/{x,y,sub/z}, b/1, c, d -> c, e/f ("old").
l1="$T/l1"
mkdir -p "$l1/a/sub" "$l1/b" "$l1/e"
echo x >"$l1/a/x"
echo y >"$l1/a/y"
echo z >"$l1/a/sub/z"
echo 1 >"$l1/b/1"
echo c >"$l1/c"
ln -s c "$l1/d"
echo old >"$l1/e/f"
layer_from "$l1" "$T/layer1.tar" a a/x a/y a/sub a/sub/z b b/1 c d e e/f

# Layer 2, in this order:
#   a/new, then a/.wh..wh..opq  - opaque: hides a's lower entries, not a/new,
#                                 which the same layer made (before the marker)
#   .wh.b                       - a whole directory
#   .wh.d                       - a symlink: the link goes, its target c stays
#   e/f ("new"), then e/.wh.f   - a same-layer entry survives its whiteout
#   .wh.nothing, nodir/.wh.x    - whiteouts of nothing: no error, nothing made
l2="$T/l2"
mkdir -p "$l2/a" "$l2/e" "$l2/nodir"
echo new >"$l2/a/new"
echo new >"$l2/e/f"
touch "$l2/a/.wh..wh..opq" "$l2/.wh.b" "$l2/.wh.d" "$l2/e/.wh.f" "$l2/.wh.nothing" "$l2/nodir/.wh.x"
layer_from "$l2" "$T/layer2.tar" a a/new a/.wh..wh..opq .wh.b .wh.d e e/f e/.wh.f .wh.nothing nodir/.wh.x
gzip -n "$T/layer2.tar"
# The test layer really has the entries in that order (it could not fail otherwise).
assert_eq "layer 2 lists its entries in the intended order" \
	"a/ a/new a/.wh..wh..opq .wh.b .wh.d e/ e/f e/.wh.f .wh.nothing nodir/.wh.x" \
	"$(tar -tzf "$T/layer2.tar.gz" | tr '\n' ' ' | sed 's/ $//')"

oci_layout_new "$IMG/hand" amd64 "$T/layer1.tar" "$T/layer2.tar.gz"
import_ok id2 "$IMG/hand"
tree="$DATA/tree/${id2#sha256:}/rootfs"
assert_eq "the whole tree, entry by entry" \
	"a a/new c e e/f" \
	"$(cd "$tree" && find . -mindepth 1 -printf '%P\n' | LC_ALL=C sort | tr '\n' ' ' | sed 's/ $//')"
assert_file_absent "$tree/a/x" "$tree/a/y" "$tree/a/sub" "$tree/b" "$tree/d" "$tree/nodir"
assert_eq "a/new survives the opaque marker that follows it in its layer" new "$(cat "$tree/a/new" 2>&1)"
assert_eq "c, the target of the whited-out symlink, stays" c "$(cat "$tree/c" 2>&1)"
assert_eq "e/f is layer 2's, whatever the order of entry and whiteout" new "$(cat "$tree/e/f" 2>&1)"

store_verify
leak_check
