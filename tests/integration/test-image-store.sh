#!/bin/bash
#
# test-image-store.sh - the store's verbs: rm (by name, id, id prefix,
# ambiguous prefix, missing), gc (what it frees and what it keeps, stale
# staging) and cat-manifest (the exact bytes of the manifest).

. "$(dirname "$0")/lib.sh"

use_real_images python3

leak_begin

echo "# building images"
busybox_layout
img_aci "$IMG/rootfs" "$IMG/busybox.aci" example.com/busybox gzip
# Variants of the OCI image: other configs, the same layer.
oci_variant "$IMG/oci" "$IMG/var-b" b >/dev/null
oci_variant "$IMG/oci" "$IMG/var-d" d >/dev/null

blob() {
	echo "$DATA/images/blobs/sha256/${1#sha256:}"
}
tree() {
	echo "$DATA/tree/${1#sha256:}"
}
record() {
	echo "$DATA/images/db/${1#sha256:}.json"
}
# blobs_of ID: the blob digests of an image, from its record.
blobs_of() {
	record_digests "$(record "$1")"
}

echo "# importing"
import_ok A --name=alpha "$IMG/oci"
import_ok B --name=beta "$IMG/var-b"
import_ok C "$IMG/busybox.aci"
import_ok D "$IMG/var-d"
layer=$(jq -r '.layers[0].digest' "$(record "$A")")
assert_eq "fixture: B shares A's layer" "$layer" "$(jq -r '.layers[0].digest' "$(record "$B")")"
mapfile -t B_blobs < <(blobs_of "$B")
mapfile -t D_blobs < <(blobs_of "$D")

# --- cat-manifest ------------------------------------------------------------------
echo "# cat-manifest"
# The output is the stored manifest, byte for byte: its sha256 is the
# manifest digest that inspect shows.
cat_manifest_is_exact() {
	local what=$1 ref=$2 want
	assert_exit 0 sd image cat-manifest "$ref"
	assert_json "$what: cat-manifest prints valid JSON" "$OUT"
	want=$(sd image inspect "$ref" | jq -r .manifest)
	assert_eq "$what: the sha256 of its output is the manifest digest" "$want" "sha256:$(sha256sum <"$T/stdout" | cut -d' ' -f1)"
}
cat_manifest_is_exact "OCI (umoci)" alpha
assert_exit 0 sd image cat-manifest alpha
assert_jq "OCI: the manifest lists the layer" "$OUT" '.layers[0].digest' "\"$layer\""
cat_manifest_is_exact "ACI" "$C"
assert_jq "ACI: it is the ACI's image manifest" "$OUT" '.acKind + " " + .name' '"ImageManifest example.com/busybox"'
# A manifest without a trailing newline (most registries write them so;
# oci_rewrite does too) must come out unchanged as well.
check "fixture: B's manifest does not end in a newline" test "$(tail -c1 "$(blob "$B")" | od -An -c | tr -d ' ')" != '\n'
cat_manifest_is_exact "OCI without a final newline" beta
assert_exit 3 sd image cat-manifest no-such-image

# --- rm ----------------------------------------------------------------------
echo "# rm"
assert_exit 0 sd image rm beta
assert_eq "rm by name prints the id" "$B" "$OUT"
assert_file_absent "$(record "$B")"
assert_exit 3 sd image inspect beta
assert_exit 3 sd image inspect "$B"
assert_exit 0 sd image list --format=json
assert_jq "rm: the image is no longer listed" "$OUT" "[.[].id] | index(\"$B\")" null
# rm only drops the record; gc frees the rest.
assert_file_exists "$(tree "$B")" "$(blob "${B_blobs[0]}")"

assert_exit 3 sd image rm no-such-image
assert_eq "rm of a missing image prints nothing on stdout" "" "$OUT"
assert_contains "rm of a missing image says so" "$ERR" "no-such-image"
assert_exit 3 sd image rm "$B"
assert_contains "rm of a removed id: not found" "$ERR" "not found"
# Several at once: what can be removed is, the status is the first error's.
assert_exit 3 sd image rm "${D:7:12}" no-such-image
assert_eq "rm ID-PREFIX MISSING: removed the first, printed its id" "$D" "$OUT"
assert_file_absent "$(record "$D")"
assert_exit 0 sd image list --format=json
assert_jq "A and C are still there" "$OUT" '[.[].id] | sort' "$(jq -nc --arg a "$A" --arg c "$C" '[$a, $c] | sort')"

# --- ambiguous id prefixes ------------------------------------------------------
echo "# ambiguous id prefixes"
# Two images whose ids share their first 4 hex digits but not the 5th: make
# them by varying an annotation of the manifest until two digests collide
# (a few hundred tries, deterministic).
python3 - "$IMG/oci" "$(oci_manifest_digest "$IMG/oci")" "$IMG" <<'EOF'
import hashlib, json, os, shutil, sys
layout, digest, out = sys.argv[1], sys.argv[2], sys.argv[3]
base = json.load(open(f"{layout}/blobs/sha256/{digest[7:]}"))
seen = {}
for i in range(1000000):
    m = dict(base, annotations={"sdpod.test.n": str(i)})
    data = json.dumps(m, separators=(",", ":")).encode()
    h = hashlib.sha256(data).hexdigest()
    other = seen.get(h[:4])
    if other and other[0][4] != h[4]:
        break
    seen.setdefault(h[:4], (h, data))
else:
    sys.exit("no collision found")
for name, (h, data) in (("amb-x", other), ("amb-y", (h, data))):
    shutil.copytree(layout, f"{out}/{name}", symlinks=True)
    open(f"{out}/{name}/blobs/sha256/{h}", "wb").write(data)
    index = json.load(open(f"{layout}/index.json"))
    index["manifests"][0].update(digest="sha256:" + h, size=len(data))
    json.dump(index, open(f"{out}/{name}/index.json", "w"))
EOF
import_ok X "$IMG/amb-x"
import_ok Y "$IMG/amb-y"
assert_eq "fixture: X and Y share a 4-digit id prefix" "${X:7:4}" "${Y:7:4}"
assert_ne "fixture: ... but not a 5-digit one" "${X:7:5}" "${Y:7:5}"
assert_exit 2 sd image rm "${X:7:4}"
assert_contains "rm of an ambiguous prefix says so" "$ERR" "ambiguous"
assert_exit 2 sd image inspect "${X:7:4}"
assert_file_exists "$(record "$X")" "$(record "$Y")"
# A name wins over an id prefix.
assert_exit 0 sd image import --name="${X:7:4}" "$IMG/oci"
assert_exit 0 sd image inspect "${X:7:4}"
assert_jq "a name that looks like an id prefix wins over the prefix" "$OUT" .id "\"$A\""
assert_exit 0 sd image rm "${X:7:5}"
assert_eq "rm of a 5-digit prefix removes just that image" "$X" "$OUT"
assert_file_exists "$(record "$Y")"
assert_exit 0 sd image rm "$Y"
assert_eq "rm by full id" "$Y" "$OUT"
# Too short to be a prefix: 3 digits are not an id.
assert_exit 3 sd image inspect "${A:7:3}"

# --- gc ------------------------------------------------------------------------
echo "# gc"
# Removed so far: B, D, X, Y.  Their own manifests and configs go; the layer
# they shared with A stays, as do A's and C's blobs and trees.
assert_exit 0 sd image gc
gc_out=$OUT
assert_match "gc reports what it removed" '^removed 6 blobs, 4 trees, 0 leftovers of interrupted imports \(.*\)$' "$gc_out"
for d in "${B_blobs[@]}" "${D_blobs[@]}"; do
	[ "$d" = "$layer" ] && continue
	assert_file_absent "$(blob "$d")"
done
assert_file_absent "$(tree "$B")" "$(tree "$D")" "$(tree "$X")" "$(tree "$Y")"
assert_file_exists "$(blob "$layer")" "$(tree "$A")/rootfs/bin/busybox" "$(tree "$C")/rootfs/bin/busybox"
store_verify
assert_eq "after gc nothing is unreferenced" "" "$(store_unreferenced)"
assert_exit 0 sd image gc
assert_match "a second gc removes nothing" '^removed 0 blobs, 0 trees, 0 leftovers of interrupted imports' "$OUT"

# Stale staging of imports that died, a stray blob, a stray tree.
mkdir -p "$DATA/images/tmp/import-dead/blobs" "$DATA/images/tmp/render-dead/rootfs/etc"
echo junk >"$DATA/images/tmp/import-dead/blobs/x"
echo junk >"$DATA/images/tmp/render-dead/rootfs/etc/y"
echo stray >"$T/stray"
stray=$(sha256sum <"$T/stray" | cut -d' ' -f1)
cp "$T/stray" "$DATA/images/blobs/sha256/$stray"
mkdir -p "$DATA/tree/$(printf '%064d' 0)/rootfs"
# ... and a record write that died between creating its temporary file and
# renaming it into place (what write_file_atomic leaves behind).
echo '{"id": "half-written' >"$DATA/images/db/.tmp-0123456789abcdef"
assert_exit 0 sd image gc
assert_match "gc removes stale staging, a stray blob and a stray tree" \
	'^removed 1 blobs, 1 trees, 3 leftovers of interrupted imports' "$OUT"
assert_dir_empty "images/tmp is empty after gc" "$DATA/images/tmp"
assert_file_absent "$DATA/images/blobs/sha256/$stray" "$DATA/tree/$(printf '%064d' 0)" \
	"$DATA/images/db/.tmp-0123456789abcdef"
store_verify

# rm the rest; gc leaves an empty store.
# A has two names now (alpha, and the one that looks like a prefix): the
# first rm takes a name, the second the image.
assert_exit 0 sd image rm alpha "${X:7:4}" "$C"
assert_eq "rm of two names and an id prints the ids of the two images removed" "$A
$C" "$OUT"
assert_exit 0 sd image gc
assert_eq "gc of an empty store: no blobs left" "" "$(ls -A "$DATA/images/blobs/sha256")"
assert_eq "gc of an empty store: no trees left" "" "$(ls -A "$DATA/tree")"

leak_check
