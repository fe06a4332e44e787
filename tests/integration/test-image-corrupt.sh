#!/bin/bash
#
# test-image-corrupt.sh - images that must be refused, and what a refused
# import leaves behind: nothing.  Corrupt, truncated and lying blobs (exit 5,
# the message names the digest), broken archives, hostile layers (nothing
# outside the tree may change), inputs that are no image at all, bad options,
# and platform selection in an image index.

. "$(dirname "$0")/lib.sh"

use_real_images skopeo python3

leak_begin

echo "# building images"
busybox_layout
img_docker_archive "$IMG/oci" latest "$IMG/busybox.docker.tar" busybox:latest
img_aci "$IMG/rootfs" "$IMG/busybox.aci" example.com/busybox gzip
BASE="$IMG/oci"
manifest=$(oci_manifest_digest "$BASE")
config=$(jq -r .config.digest "$(oci_blob "$BASE" "$manifest")")
layer=$(jq -r '.layers[0].digest' "$(oci_blob "$BASE" "$manifest")")

# copy NAME: a private copy of the good layout to damage.
copy() {
	rm -rf -- "${IMG:?}/$1"
	cp -a -- "$BASE" "$IMG/$1"
	echo "$IMG/$1"
}

# flip_byte FILE OFFSET: invert one byte in place.
flip_byte() {
	local b
	b=$(od -An -tu1 -j "$2" -N1 "$1" | tr -d ' ')
	printf '%b' "\\$(printf %03o $((255 - b)))" | dd of="$1" bs=1 seek="$2" conv=notrunc status=none
}

# store_is_empty WHAT: no record, tree, blob or staging in $DATA.
store_is_empty() {
	local n
	n=$(find "$DATA/images/db" "$DATA/tree" "$DATA/images/blobs/sha256" "$DATA/images/tmp" -mindepth 1 | wc -l)
	if [ "$n" = 0 ]; then
		pass "$1: nothing left: no record, tree, blob or staging"
	else
		fail "$1: nothing left: no record, tree, blob or staging" \
			"$(cd "$DATA" && find images/db tree images/blobs/sha256 images/tmp -mindepth 1 -maxdepth 1)"
	fi
}

# refused CODES WHAT PATH NEEDLE [IMPORT-OPTIONS...]: the import fails with
# one of CODES, its one-line error names NEEDLE, and the store is empty.
refused() {
	local codes=$1 what=$2 path=$3 needle=$4
	shift 4
	assert_exit "$codes" sd image import "$@" "$path"
	assert_match "$what: error is 'sdpod image import: ...'" '^sdpod image import: ' "$ERR"
	assert_contains "$what: the error names $needle" "$ERR" "$needle"
	store_is_empty "$what"
}

# --- corrupt blobs --------------------------------------------------------------
echo "# corrupt, truncated and lying blobs"
# The copies must differ from the original, or these checks test nothing.
c=$(copy layer-flipped)
flip_byte "$(oci_blob "$c" "$layer")" 1000
check_not "fixture: the flipped layer differs" cmp -s "$(oci_blob "$c" "$layer")" "$(oci_blob "$BASE" "$layer")"
refused 5 "layer with a flipped byte" "$c" "$layer"

c=$(copy layer-truncated)
truncate -s -1000 "$(oci_blob "$c" "$layer")"
refused 5 "truncated layer" "$c" "$layer"

c=$(copy layer-empty)
: >"$(oci_blob "$c" "$layer")"
refused 5 "empty layer file" "$c" "$layer"

c=$(copy config-changed)
sed -i 's/GREETING=hi/GREETING=ho/' "$(oci_blob "$c" "$config")"
check_not "fixture: the changed config differs" cmp -s "$(oci_blob "$c" "$config")" "$(oci_blob "$BASE" "$config")"
refused 5 "config that does not match its digest" "$c" "$config"

c=$(copy manifest-flipped)
mf=$(oci_blob "$c" "$manifest")
flip_byte "$mf" 20
refused 5 "manifest with a flipped byte" "$c" "$manifest"

c=$(copy layer-size-lie)
oci_rewrite "$c" . '.layers[0].size -= 1' >/dev/null
refused 5 "manifest lies about the layer's size" "$c" "$layer"

c=$(copy config-size-lie)
oci_rewrite "$c" . '.config.size += 1' >/dev/null
refused 5 "manifest lies about the config's size" "$c" "$config"

c=$(copy index-size-lie)
jq -c '.manifests[0].size += 7' "$BASE/index.json" >"$c/index.json"
refused 5 "index.json lies about the manifest's size" "$c" "$manifest"

c=$(copy layer-missing)
rm -f -- "$(oci_blob "$c" "$layer")"
# A blob missing from a layout is a broken image; sdpod says "not found" (3).
refused "3|5" "layer blob missing" "$c" "${layer#sha256:}"

c=$(copy bad-media-type)
oci_rewrite "$c" . '.layers[0].mediaType = "application/x-unknown"' >/dev/null
refused 5 "unsupported layer media type" "$c" "application/x-unknown"

# The config's rootfs.diff_ids name the uncompressed layers: a layer whose
# uncompressed content is not what its diff_id says is refused, naming it.
c=$(copy diff-id-wrong)
zero=sha256:$(printf '0%.0s' {1..64})
oci_rewrite "$c" ".rootfs.diff_ids[0] = \"$zero\"" . >/dev/null
refused 5 "config with a wrong diff_id" "$c" "$layer"
assert_contains "wrong diff_id: the error says diff_id and names it" "$ERR" "diff_id $zero"
c=$(copy diff-id-count)
oci_rewrite "$c" '.rootfs.diff_ids += .rootfs.diff_ids' . >/dev/null
refused 5 "config with more diff_ids than layers" "$c" "rootfs.diff_ids lists 2 layers, the manifest 1"

# Blobs whose digest is right but whose content is no tar: found only
# while rendering, after every blob was verified.  Still nothing may stay.
head -c 4096 /dev/urandom >"$T/garbage.tar.gz"
oci_layout_new "$IMG/garbage-layer" amd64 "$T/garbage.tar.gz"
refused 5 "a layer that is not a gzip tar" "$IMG/garbage-layer" "sha256:$(sha256sum <"$T/garbage.tar.gz" | cut -d' ' -f1)"

# --- the same in archives ------------------------------------------------------------
echo "# broken archives"
tar -C "$IMG/layer-flipped" -cf "$IMG/layer-flipped.oci.tar" .
refused 5 "oci-archive with a flipped layer byte" "$IMG/layer-flipped.oci.tar" "$layer"
head -c 100000 "$IMG/busybox.docker.tar" >"$IMG/truncated.docker.tar"
refused 5 "truncated docker archive" "$IMG/truncated.docker.tar" "truncated.docker.tar"

# A docker archive (as a directory) whose layer does not hash to its diff_id.
mkdir "$IMG/docker-dir"
tar -C "$IMG/docker-dir" -xf "$IMG/busybox.docker.tar"
dlayer=$(jq -r '.[0].Layers[0]' "$IMG/docker-dir/manifest.json")
diff_id=$(jq -r '.rootfs.diff_ids[0]' "$IMG/docker-dir/$(jq -r '.[0].Config' "$IMG/docker-dir/manifest.json")")
flip_byte "$IMG/docker-dir/$dlayer" 5000
refused 5 "docker archive directory with a corrupt layer" "$IMG/docker-dir" "$diff_id"
tar -C "$IMG/docker-dir" -cf "$IMG/corrupt.docker.tar" .
refused 5 "docker archive with a corrupt layer" "$IMG/corrupt.docker.tar" "$diff_id"

size=$(stat -c %s "$IMG/busybox.aci")
head -c $((size / 2)) "$IMG/busybox.aci" >"$IMG/truncated.aci"
# The ACI file is the blob: the error names its digest.
refused 5 "truncated ACI" "$IMG/truncated.aci" "sha256:$(sha256sum <"$IMG/truncated.aci" | cut -d' ' -f1)"

# --- hostile layers ------------------------------------------------------------------
echo "# hostile layers"
# Nothing outside the image's tree may be created or changed: a sentinel
# directory next to the data dir, and the host's /etc/passwd.
mkdir "$T/sentinel"
echo "do not touch" >"$T/sentinel/file"
sentinel_before=$(snapshot "$T/sentinel" --mtime)
passwd_before=$(stat -c '%i %h %s %Y' /etc/passwd)
python3 - "$T" <<'EOF'
import io, sys, tarfile
T = sys.argv[1]
def layer(name, entries):
    with tarfile.open(f"{T}/{name}.tar", "w", format=tarfile.GNU_FORMAT) as t:
        for path, kind, link in entries:
            ti = tarfile.TarInfo(path)
            ti.mtime, ti.mode = 1577836800, 0o644
            if kind == "file":
                data = b"escaped\n"
                ti.size = len(data)
                t.addfile(ti, io.BytesIO(data))
            else:
                ti.type = tarfile.SYMTYPE if kind == "symlink" else tarfile.LNKTYPE
                ti.linkname = link
                t.addfile(ti)
layer("dotdot", [("../../../escape-dotdot", "file", None)])
layer("dotdot-inner", [("dir/../../escape-inner", "file", None)])
layer("symlink-rel", [("up", "symlink", "../../../../.."), ("up/escape-rel", "file", None)])
layer("symlink-abs", [("abs", "symlink", f"{T}/sentinel"), ("abs/escape-abs", "file", None)])
layer("hardlink-abs", [("hl", "hardlink", "/etc/passwd")])
layer("hardlink-dotdot", [("hl", "hardlink", "../../../../../../etc/passwd")])
EOF
# refused-or-confined NAME CODES: import the layer; CODES are the accepted
# exit statuses.  Whatever happens, nothing escapes the tree.
hostile() {
	local name=$1 codes=$2
	oci_layout_new "$IMG/hostile-$name" amd64 "$T/$name.tar"
	assert_exit "$codes" sd image import "$IMG/hostile-$name"
}
# ".." in an entry's name: refused as a bad image.
hostile dotdot 5
hostile dotdot-inner 5
# A hard link target with "..": a bad image (5), not a usage error.
hostile hardlink-dotdot 5
assert_match "hard link target with '..': message names the layer" 'layer sha256:[0-9a-f]{64}' "$ERR"
# Links resolved inside the tree: a symlink up and out ends at the tree's
# root; an absolute symlink or hard link points into the tree, where the
# target is missing (refused; sdpod says "not found", 3).
hostile symlink-rel "0|5"
hostile symlink-abs "3|5"
hostile hardlink-abs "3|5"
assert_eq "hostile layers: the sentinel is untouched" "$sentinel_before" "$(snapshot "$T/sentinel" --mtime)"
assert_eq "hostile layers: /etc/passwd is untouched (inode, links, size, mtime)" "$passwd_before" "$(stat -c '%i %h %s %Y' /etc/passwd)"
escaped=$(find "$T" "$_host_tmp" / -xdev -maxdepth 3 -name 'escape-*' ! -path "$DATA/tree/*" 2>/dev/null | LC_ALL=C sort -u || true)
assert_eq "hostile layers: no escape-* file outside the trees" "" "$escaped"
# What was accepted stays inside its own tree.
if [ -n "$(ls -A "$DATA/images/db")" ]; then
	assert_eq "the symlink-rel file landed at the tree's root" "escaped" \
		"$(cat "$DATA"/tree/*/rootfs/escape-rel 2>&1)"
fi
# Start the rest from an empty store again.
rm -rf -- "$DATA"
mkdir "$DATA"
sd image list >/dev/null

# --- not an image at all --------------------------------------------------------------
echo "# not an image"
echo "just text" >"$T/not-an-image"
refused 5 "a text file" "$T/not-an-image" "not-an-image"
: >"$T/empty-file"
refused 5 "an empty file" "$T/empty-file" "empty-file"
refused 3 "a missing path" "$T/no-such-path" "$T/no-such-path"
mkdir "$T/empty-dir"
refused 5 "a directory without index.json" "$T/empty-dir" "index.json"
c=$(copy no-oci-layout)
rm -f "$c/oci-layout"
# Like a missing blob, sdpod says "not found" (3) for this broken layout.
refused "3|5" "a layout without oci-layout" "$c" "oci-layout"
c=$(copy bad-index)
echo '{"schemaVersion": 2, "manifests": [' >"$c/index.json"
refused 5 "an index.json that is not JSON" "$c" "index.json"
assert_exit "1|3|5" sd image import /dev/null
store_is_empty "/dev/null"

# --- bad options ---------------------------------------------------------------------
echo "# bad options"
for name in "bad name" ":tag" "name:" "/name" "$(printf 'a\tb')" ""; do
	assert_exit 2 sd image import --name="$name" "$BASE"
	assert_contains "--name='$name': says the name is invalid" "$ERR" "not a valid name"
done
for platform in linux "" /amd64 linux/ "linux//"; do
	assert_exit 2 sd image import --platform="$platform" "$BASE"
	assert_contains "--platform='$platform': says what a platform looks like" "$ERR" "OS/ARCH"
done
store_is_empty "bad options"

# --- limits ---------------------------------------------------------------------------
echo "# limits on what an image unpacks to"
# A small compressed layer can hold millions of entries or a petabyte of
# sparse file; the operator's limits refuse it, and nothing of it stays.
# its entries, the root ("." or "./") aside
n=$(tar -tzf "$(oci_blob "$BASE" "$layer")" | grep -cvxE "\./?")
refused 5 "more entries than --max-entries" "$BASE" "more than $((n - 1)) entries (the limit)" --max-entries=$((n - 1))
refused 5 "more bytes than --max-size" "$BASE" "the image unpacks to more than 1000 bytes (the limit)" --max-size=1000
for bad in --max-entries=0 --max-entries=lots --max-size=0 --max-size=-1 --max-size=1Q; do
	assert_exit 2 sd image import "$bad" "$BASE"
done
store_is_empty "bad limits"
assert_exit 0 sd image import --max-entries="$n" --max-size=1G "$BASE"
assert_match "an image within its limits is imported" '^sha256:[0-9a-f]{64}$' "$OUT"
rm -rf -- "$DATA"
mkdir "$DATA"
sd image list >/dev/null

# --- platforms -----------------------------------------------------------------------
echo "# platforms"
# An index whose one image is for linux/arm64 (its config says so too).
c=$(copy arm64)
arm_id=$(oci_rewrite "$c" '.architecture = "arm64"' . '.manifests[0].platform = {"os": "linux", "architecture": "arm64"}')
assert_exit 3 sd image import "$c"
assert_contains "only arm64: the error names the platform asked for" "$ERR" "linux/amd64"
assert_contains "only arm64: the error names the platforms there are" "$ERR" "linux/arm64"
store_is_empty "only arm64"
assert_exit 0 sd image import --platform=linux/arm64 "$c"
assert_eq "--platform=linux/arm64 imports it" "$arm_id" "$OUT"
assert_exit 0 sd image inspect "$arm_id"
assert_jq "... and its record says arm64" "$OUT" '.os + "/" + .architecture' '"linux/arm64"'
# The index says arm64, the config amd64: selection passes, the config
# check does not (no image for the platform asked for: 3; or bad input: 5).
c=$(copy arm64-config-amd64)
oci_rewrite "$c" . . '.manifests[0].platform = {"os": "linux", "architecture": "arm64"}' >/dev/null
assert_exit "3|5" sd image import --platform=linux/arm64 "$c"
assert_contains "index arm64, config amd64: refused by the config check" "$ERR" "the image is for linux/amd64, not linux/arm64"
assert_contains "... naming the config" "$ERR" "$config"
# Both platforms in one index: the default is the host's.
c=$(copy multi)
jq -c --arg d "$arm_id" --argjson s "$(stat -c %s "$(oci_blob "$IMG/arm64" "$arm_id")")" \
	'.manifests[0].platform = {"os": "linux", "architecture": "amd64"} |
	 .manifests += [{mediaType: .manifests[0].mediaType, digest: $d, size: $s,
	                 platform: {os: "linux", architecture: "arm64"}}]' "$BASE/index.json" >"$c/index.json"
cp "$IMG/arm64/blobs/sha256/"* "$c/blobs/sha256/"
assert_exit 0 sd image import "$c"
assert_eq "multi-platform index: the default is linux/amd64" "$manifest" "$OUT"
assert_exit 0 sd image import --platform=linux/arm64 "$c"
assert_eq "multi-platform index: --platform=linux/arm64 picks the other" "$arm_id" "$OUT"
# The same two behind a nested index (index.json -> image index -> the
# manifests), as multi-arch images copied from a registry are.
n="$IMG/nested"
rm -rf -- "$n"
cp -a -- "$c" "$n"
nested=$(jq -c 'del(.manifests[].annotations) | .mediaType = "'"$MT_OCI_INDEX"'"' "$c/index.json")
nd=$(oci_put_json "$n" "$nested")
jq -nc --arg d "$nd" --argjson s "${#nested}" \
	'{schemaVersion: 2, manifests: [{mediaType: "'"$MT_OCI_INDEX"'", digest: $d, size: $s,
	  annotations: {"org.opencontainers.image.ref.name": "example.com/nested:1"}}]}' >"$n/index.json"
rm -rf -- "$DATA"
mkdir "$DATA"
assert_exit 0 sd image import "$n"
assert_eq "nested index: the default is linux/amd64" "$manifest" "$OUT"
assert_exit 0 sd image import --platform=linux/arm64 "$n"
assert_eq "nested index: --platform=linux/arm64 picks the other" "$arm_id" "$OUT"
assert_exit 0 sd image inspect example.com/nested:1
assert_jq "nested index: the outer ref.name names the image last imported" "$OUT" .id "\"$arm_id\""
if [ -n "$(store_unreferenced)" ]; then
	echo "# note: importing through a nested index leaves its blob in the store, unreferenced: $(store_unreferenced | tr '\n' ' ')"
fi
sd image gc >/dev/null

# --- a store that has the blobs already -------------------------------------------------
echo "# corrupt images against a store that has their blobs"
import_ok good "$BASE"
# A lie about a size is a lie whether or not the store has the blob: the
# layer descriptor must be refused, and no record made.
c=$(copy layer-size-lie-2)
lie_id=$(oci_rewrite "$c" . '.layers[0].size -= 1')
assert_exit 5 sd image import "$c"
assert_contains "layer size lie, layer already stored: the error names the layer" "$ERR" "$layer"
assert_file_absent "$DATA/images/db/${lie_id#sha256:}.json" "$DATA/tree/${lie_id#sha256:}"
# An image for the wrong platform is refused whether or not the store has
# it: the same command must not fail on an empty store and pass on a full one.
for src in "$BASE" "$IMG/busybox.docker.tar" "$IMG/busybox.aci"; do
	assert_exit 0 sd image import "$src"
	assert_exit "3|5" sd image import --platform=linux/arm64 "$src"
	assert_contains "$(basename "$src") stored, --platform=linux/arm64: still refused" "$ERR" "not linux/arm64"
done
# A new image (another config) whose own blob is corrupt: the store stays
# exactly as it was.
before=$(snapshot "$DATA" --mtime)
c=$(copy variant-corrupt)
v=$(oci_rewrite "$c" '.config.Labels["variant"] = "1"' .)
vconfig=$(jq -r .config.digest "$(oci_blob "$c" "$v")")
sed -i 's/"variant":"1"/"variant":"2"/' "$(oci_blob "$c" "$vconfig")"
assert_exit 5 sd image import "$c"
assert_contains "new image with a corrupt config: the error names it" "$ERR" "$vconfig"
assert_eq "... and the store is as it was" "$before" "$(snapshot "$DATA" --mtime)"

store_verify
assert_eq "nothing unreferenced in the store" "" "$(store_unreferenced)"
leak_check
