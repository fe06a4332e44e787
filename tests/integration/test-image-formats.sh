#!/bin/bash
#
# test-image-formats.sh - every image format sdpod imports, built with the
# real tools (umoci, skopeo, tar): OCI layout, oci-archive, docker-archive,
# ACI (gzip, xz, zstd, uncompressed) and an OCI layout with a zstd layer.
# For each: the id, the rendered tree (exactly the source rootfs), the
# record (list, inspect), names, and that importing again changes nothing.

. "$(dirname "$0")/lib.sh"

use_real_images skopeo zstd
require_tool xz xz-utils

leak_begin

# --- the images, built once -------------------------------------------------
echo "# building images"
busybox_layout
img_oci_archive "$IMG/oci" latest "$IMG/busybox.oci.tar"
img_docker_archive "$IMG/oci" latest "$IMG/busybox.docker.tar" busybox:latest
for c in gzip xz zstd none; do
	img_aci "$IMG/rootfs" "$IMG/busybox-$c.aci" example.com/busybox "$c"
done
img_oci_layout_zstd "$IMG/zstd" latest "$IMG/rootfs"
ROOTFS="$IMG/rootfs"

# What the ids must be, computed independently of sdpod.
oci_manifest=$(oci_manifest_digest "$IMG/oci")
oci_config=$(jq -r .config.digest "$(oci_blob "$IMG/oci" "$oci_manifest")")
zstd_manifest=$(oci_manifest_digest "$IMG/zstd")
declare -A aci_digest
for c in gzip xz zstd none; do
	aci_digest[$c]="sha256:$(sha256sum <"$IMG/busybox-$c.aci" | cut -d' ' -f1)"
done

# The source rootfs really has what the tree comparisons are about, so a
# tree that lost it cannot compare equal by accident.
echo "# the source rootfs"
assert_eq "source: /home/app is 1000:1000 0755" "1000:1000 755" "$(stat -c '%u:%g %a' "$ROOTFS/home/app")"
assert_eq "source: /tmp is 1777" 1777 "$(stat -c %a "$ROOTFS/tmp")"
assert_eq "source: /root is 0700" 700 "$(stat -c %a "$ROOTFS/root")"
assert_eq "source: /bin/sh -> busybox" busybox "$(readlink "$ROOTFS/bin/sh")"
assert_ne "source: hundreds of applet symlinks" 0 "$(find "$ROOTFS/bin" -type l | wc -l)"

# tree_of ID: where sdpod renders an image.
tree_of() {
	echo "$DATA/tree/${1#sha256:}/rootfs"
}

# check_tree WHAT ID [DATA]: the rendered tree is exactly the source rootfs,
# plus spot checks that say what broke when it is not.
check_tree() {
	local what=$1 tree
	tree="${3:-$DATA}/tree/${2#sha256:}/rootfs"
	assert_same_tree "$what: tree equals the source rootfs" "$ROOTFS" "$tree"
	assert_eq "$what: /home/app is 1000:1000 0755" "1000:1000 755" "$(stat -c '%u:%g %a' "$tree/home/app" 2>&1)"
	assert_eq "$what: /tmp is 1777" 1777 "$(stat -c %a "$tree/tmp" 2>&1)"
	assert_eq "$what: /bin/sh -> busybox" busybox "$(readlink "$tree/bin/sh" 2>&1)"
	assert_eq "$what: /bin/busybox content" "$(sha256sum <"$ROOTFS/bin/busybox")" "$(sha256sum <"$tree/bin/busybox" 2>&1)"
}

# --- import each format -------------------------------------------------------
echo "# importing"
t_start=$(date -u +%s)

import_ok id_oci "$IMG/oci"
assert_eq "OCI layout: id is the manifest digest" "$oci_manifest" "$id_oci"
check_tree "OCI layout" "$id_oci"

# The oci-archive holds the same manifest: same id.  Into a data dir of its
# own, so its tree is really rendered from the archive.
DATA_ARCHIVE="$T/data-oci-archive"
mkdir "$DATA_ARCHIVE"
assert_exit 0 "$SDPOD" --dir="$DATA_ARCHIVE" image import "$IMG/busybox.oci.tar"
assert_eq "oci-archive: id is the manifest digest" "$oci_manifest" "$OUT"
check_tree "oci-archive" "$OUT" "$DATA_ARCHIVE"

import_ok id_docker "$IMG/busybox.docker.tar"
assert_eq "docker-archive: id is the config digest (docker's image id)" "$oci_config" "$id_docker"
check_tree "docker-archive" "$id_docker"

declare -A id_aci
for c in gzip xz zstd none; do
	import_ok "id_aci[$c]" "$IMG/busybox-$c.aci"
	assert_eq "ACI ($c): id is the digest of the file" "${aci_digest[$c]}" "${id_aci[$c]}"
	check_tree "ACI ($c)" "${id_aci[$c]}"
done

import_ok id_zstd "$IMG/zstd"
assert_eq "zstd OCI layout: id is the manifest digest" "$zstd_manifest" "$id_zstd"
check_tree "zstd OCI layout" "$id_zstd"

# --- image list ---------------------------------------------------------------
echo "# image list"
assert_exit 0 sd image list --format=json
list=$OUT
assert_json "list --format=json is valid JSON" "$list"
assert_jq "every entry has exactly id, names, size, imported_at, format" "$list" \
	'[.[] | keys] | unique' '[["format","id","imported_at","names","size"]]'
assert_jq "the list has every image once" "$list" '[.[].id] | sort' \
	"$(printf '%s\n' "$id_oci" "$id_docker" "${id_aci[@]}" "$id_zstd" | jq -Rsc 'split("\n") | map(select(. != "")) | sort')"
assert_jq "types: id string, names array of strings, size number, imported_at string, format string" "$list" \
	'all(.[]; (.id|type) == "string" and (.names|type) == "array" and all(.names[]; type == "string") and (.size|type) == "number" and (.imported_at|type) == "string" and (.format|type) == "string")' true
assert_jq "formats" "$list" \
	"[.[] | select(.id == \"$id_oci\" or .id == \"$id_zstd\") | .format] + [.[] | select(.id == \"$id_docker\") | .format] + [.[] | select(.id == \"${id_aci[gzip]}\") | .format]" \
	'["oci","oci","docker-archive","aci"]'
# imported_at: RFC 3339 UTC, between the start of the imports and now.
t_end=$(date -u +%s)
while read -r id ts; do
	assert_match "imported_at of ${id:7:12} is RFC 3339 UTC" '^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]+)?Z$' "$ts"
	s=$(date -u -d "$ts" +%s 2>/dev/null || echo 0)
	check "imported_at of ${id:7:12} ($ts) is during this test" test "$s" -ge "$t_start" -a "$s" -le "$t_end"
done < <(jq -r '.[] | "\(.id) \(.imported_at)"' <<<"$list")
# size: the bytes of every blob the image references, as stored.
for rec in "$DATA"/images/db/*.json; do
	id=$(jq -r .id "$rec")
	want=0
	for d in $(record_digests "$rec"); do
		want=$((want + $(stat -c %s "$DATA/images/blobs/sha256/${d#sha256:}" 2>/dev/null || echo 0)))
	done
	assert_eq "size of ${id:7:12} is the sum of its blobs" "$want" "$(jq -r --arg id "$id" '.[] | select(.id == $id) | .size' <<<"$list")"
done
# The table shows the same images.
assert_exit 0 sd image list --no-legend
assert_eq "the table has one row per image" 7 "$(grep -c . <<<"$OUT")"
assert_contains "the table shows a short id" "$OUT" "${id_docker:7:12}"

# --- names ----------------------------------------------------------------------
echo "# names"
names_of() {
	jq -c --arg id "$1" '.[] | select(.id == $id) | .names' <<<"$(sd image list --format=json)"
}
assert_eq "OCI layout tagged 'latest' only: no name (a bare tag names nothing)" '[]' "$(names_of "$id_oci")"
assert_eq "docker-archive: RepoTag docker.io/library/busybox:latest is busybox:latest" '["busybox:latest"]' "$(names_of "$id_docker")"
# All four ACIs are called example.com/busybox:1.0.0; a name names one
# image, so the last import has it.
assert_eq "ACI: name:version, on the last imported ACI" '["example.com/busybox:1.0.0"]' "$(names_of "${id_aci[none]}")"
for c in gzip xz zstd; do
	assert_eq "ACI ($c): the name moved on to a later ACI" '[]' "$(names_of "${id_aci[$c]}")"
done
assert_exit 0 sd image inspect example.com/busybox:1.0.0
assert_jq "inspect by ACI name finds it" "$OUT" .id "\"${id_aci[none]}\""

# --- inspect: the app defaults from the config ------------------------------------
echo "# image inspect"
app_oci='{"exec":["/bin/sh","-c","echo hello from busybox"],"env":["PATH=/usr/sbin:/usr/bin:/sbin:/bin","GREETING=hi"],"working_dir":"/home/app","user":"1000","group":"1000","ports":["8080/tcp"]}'
app_aci='{"exec":["/bin/sh","-c","echo hello from aci"],"env":["PATH=/usr/sbin:/usr/bin:/sbin:/bin","GREETING=hi"],"working_dir":"/","user":"0","group":"0","ports":["8080/tcp"]}'
app_filter='.app | {exec, env, working_dir, user, group, ports}'
for pair in "OCI:$id_oci" "docker-archive:$id_docker" "zstd:$id_zstd" "ACI:${id_aci[xz]}"; do
	what=${pair%%:*} id=${pair#*:}
	assert_exit 0 sd image inspect "$id"
	assert_json "$what: inspect is valid JSON" "$OUT"
	if [ "$what" = ACI ]; then want=$app_aci; else want=$app_oci; fi
	assert_jq "$what: app defaults" "$OUT" "$app_filter" "$want"
	assert_jq "$what: os/architecture" "$OUT" '.os + "/" + .architecture' '"linux/amd64"'
	assert_jq "$what: id" "$OUT" .id "\"$id\""
done
assert_exit 0 sd image inspect "$id_oci"
inspect=$OUT
manifest_file=$(oci_blob "$IMG/oci" "$oci_manifest")
assert_jq "OCI: manifest digest" "$inspect" .manifest "\"$oci_manifest\""
assert_jq "OCI: config digest" "$inspect" .config "\"$oci_config\""
assert_jq "OCI: layers as in the manifest" "$inspect" '[.layers[] | {digest, media_type, size}]' \
	"$(jq -c '[.layers[] | {digest, media_type: .mediaType, size}]' "$manifest_file")"
assert_exit 0 sd image inspect "$id_zstd"
assert_jq "zstd: the layer's media type" "$OUT" '[.layers[].media_type]' '["application/vnd.oci.image.layer.v1.tar+zstd"]'
assert_exit 0 sd image inspect "$id_docker"
assert_jq "docker-archive: one uncompressed layer" "$OUT" '[.layers[].media_type]' '["application/vnd.docker.image.rootfs.diff.tar"]'
assert_jq "docker-archive: the layer digest is the diff_id" "$OUT" '.layers[0].digest' \
	"$(jq -c '.rootfs.diff_ids[0]' "$(oci_blob "$IMG/oci" "$oci_config")")"

# --- importing again changes nothing ----------------------------------------------
echo "# importing again"
# store_state: the whole data dir, content and metadata, with the mtime of
# every file (blobs, trees) except the records (see below).  Directory
# mtimes are never compared: images/tmp changes with every import's staging.
store_state() {
	snapshot "$DATA" --mtime | awk -F'\t' -v OFS='\t' '$1 ~ /^\.\/images\/db\// { $9 = "-" } { print }'
}
record="$DATA/images/db/${id_oci#sha256:}.json"
before=$(store_state)
record_mtime=$(stat -c %Y.%N "$record")
assert_exit 0 sd image import "$IMG/oci"
assert_eq "OCI again: same id" "$id_oci" "$OUT"
after=$(store_state)
if [ "$before" = "$after" ]; then
	pass "OCI again: the store is byte-identical ($(wc -l <<<"$after") entries)"
else
	fail "OCI again: the store is byte-identical" "$(diff <(echo "$before") <(echo "$after") | head -n 20 || true)"
fi
# Not a failure, but worth knowing: an import of an image that is there
# rewrites its (identical) record.
if [ "$record_mtime" != "$(stat -c %Y.%N "$record")" ]; then
	echo "# note: importing an image again rewrote its record (same content, new mtime and inode)"
fi

# Everything again, in the first order (so names end where they were).
assert_exit 0 sd image import "$IMG/busybox.oci.tar"
assert_eq "oci-archive again: same id" "$id_oci" "$OUT"
assert_exit 0 sd image import "$IMG/busybox.docker.tar"
assert_eq "docker-archive again: same id" "$id_docker" "$OUT"
for c in gzip xz zstd none; do
	assert_exit 0 sd image import "$IMG/busybox-$c.aci"
	assert_eq "ACI ($c) again: same id" "${id_aci[$c]}" "$OUT"
done
assert_exit 0 sd image import "$IMG/zstd"
assert_eq "zstd again: same id" "$id_zstd" "$OUT"
after=$(store_state)
if [ "$before" = "$after" ]; then
	pass "all formats again: the store is byte-identical"
else
	fail "all formats again: the store is byte-identical" "$(diff <(echo "$before") <(echo "$after") | head -n 20 || true)"
fi

# --- --name ---------------------------------------------------------------------
echo "# --name"
assert_exit 0 sd image import --name=myimage:v1 "$IMG/oci"
assert_eq "--name: same id" "$id_oci" "$OUT"
assert_eq "--name adds the name" '["myimage:v1"]' "$(names_of "$id_oci")"
assert_exit 0 sd image import --name=myimage "$IMG/oci"
assert_eq "--name without a tag means :latest, and adds to the names" '["myimage:v1","myimage:latest"]' "$(names_of "$id_oci")"
# A name names one image: given to another, it moves.
assert_exit 0 sd image import --name=busybox "$IMG/zstd"
assert_eq "--name=busybox gives busybox:latest to the zstd image" '["busybox:latest"]' "$(names_of "$id_zstd")"
assert_eq "... and takes it from the docker-archive image" '[]' "$(names_of "$id_docker")"
assert_exit 0 sd image inspect busybox
assert_jq "inspect busybox finds the zstd image now" "$OUT" .id "\"$id_zstd\""
assert_exit 0 sd image import --name=myimage:v1 "$IMG/busybox.docker.tar"
assert_eq "myimage:v1 moved to the docker-archive image (with its RepoTag back)" \
	'["busybox:latest","myimage:v1"]' "$(names_of "$id_docker")"
assert_eq "... leaving the OCI image its other name" '["myimage:latest"]' "$(names_of "$id_oci")"
assert_eq "... and busybox:latest left the zstd image again" '[]' "$(names_of "$id_zstd")"
assert_exit 0 sd image import --name=docker.io/library/short "$IMG/zstd"
assert_eq "--name=docker.io/library/short is short:latest" '["short:latest"]' "$(names_of "$id_zstd")"
# A re-import gives an image the names its source gives it, taking them
# from others: the docker archive above got busybox:latest back; an ACI
# gets its name:version back the same way.
assert_exit 0 sd image import "$IMG/busybox-gzip.aci"
assert_eq "ACI (gzip) again: it takes example.com/busybox:1.0.0 back" '["example.com/busybox:1.0.0"]' "$(names_of "${id_aci[gzip]}")"
assert_eq "... from the ACI (none) that had it" '[]' "$(names_of "${id_aci[none]}")"

# --- several images in one layout: --ref --------------------------------------------
echo "# --ref"
# One layout, two images: "latest" (the OCI image) and a variant with a full
# reference as its ref.name, which then names it.
multi="$IMG/multi"
variant=$(oci_variant "$IMG/oci" "$multi" other)
jq -c --arg base "$oci_manifest" --argjson size "$(stat -c %s "$(oci_blob "$IMG/oci" "$oci_manifest")")" \
	'.manifests[0].annotations["org.opencontainers.image.ref.name"] = "example.com/other:2" |
	 .manifests += [{mediaType: .manifests[0].mediaType, digest: $base, size: $size,
	                 annotations: {"org.opencontainers.image.ref.name": "latest"}}]' \
	"$multi/index.json" >"$multi/index.json.new"
mv "$multi/index.json.new" "$multi/index.json"
assert_exit 2 sd image import "$multi"
assert_contains "two images, no --ref: asks for --ref" "$ERR" "--ref"
assert_exit 3 sd image import --ref=nope "$multi"
assert_contains "--ref that matches nothing: names what there is" "$ERR" "example.com/other:2"
assert_exit 0 sd image import --ref=latest "$multi"
assert_eq "--ref=latest picks the image tagged latest" "$id_oci" "$OUT"
import_ok id_other --ref=example.com/other:2 "$multi"
assert_eq "--ref=example.com/other:2 picks the other" "$variant" "$id_other"
assert_eq "a full reference as ref.name names the image" '["example.com/other:2"]' "$(names_of "$id_other")"
check_tree "the image picked by --ref" "$id_other"

store_verify
assert_eq "nothing unreferenced in the store" "" "$(store_unreferenced)"
leak_check "$DATA" "$DATA_ARCHIVE"
