#!/bin/bash
#
# selftest.sh - build every test image from images.sh in a throw-away
# directory and check each one with independent tools (skopeo inspect, tar,
# jq, umoci unpack, the compressors' own integrity tests).
#
# Usage: tests/integration/images/selftest.sh      (as root; exits 0 on success)

set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=images.sh
. "$here/images.sh"

[ "$(id -u)" = 0 ] || { echo "selftest: must run as root (umoci unpack keeps ownership)" >&2; exit 1; }
for tool in umoci skopeo jq tar gzip xz zstd; do
	command -v "$tool" >/dev/null || { echo "selftest: missing tool $tool" >&2; exit 1; }
done

work=$(mktemp -d "${TMPDIR:-/tmp}/sdpod-img-selftest.XXXXXX")
trap 'rm -rf -- "$work"' EXIT
# Point the library's scratch space into $work, so we can check at the end
# that every function cleaned up after itself.
mkdir "$work/tmp"
export TMPDIR="$work/tmp"

start=$(date +%s.%N)
checks=0

fail() {
	echo "selftest: FAIL: $*" >&2
	exit 1
}

# expect_eq WHAT ACTUAL EXPECTED
expect_eq() {
	checks=$((checks + 1))
	[ "$2" = "$3" ] || fail "$1: got '$2', expected '$3'"
}

# expect_line WHAT TEXT LINE: TEXT has LINE as a whole line.
expect_line() {
	checks=$((checks + 1))
	grep -qxF -- "$3" <<<"$2" || fail "$1: no line '$3' in:
$2"
}

# expect_no_line WHAT TEXT LINE
expect_no_line() {
	checks=$((checks + 1))
	! grep -qxF -- "$3" <<<"$2" || fail "$1: unexpected line '$3'"
}

# expect_fails WHAT CMD...: the command must fail (used for the error paths).
# Running it as an `if` condition also proves the functions fail even where
# bash ignores `set -e`.
expect_fails() {
	local what="$1"
	shift
	checks=$((checks + 1))
	if "$@" 2>"$work/err"; then
		fail "$what: succeeded but should have failed"
	fi
	grep -q '^images.sh: ' "$work/err" || fail "$what: no 'images.sh:' error message"
}

# check_config WHAT JSON: the runtime config every umoci-built image carries,
# as printed by `skopeo inspect --config`.
check_config() {
	local what="$1" json="$2"
	expect_eq "$what entrypoint" "$(jq -c .config.Entrypoint <<<"$json")" '["/bin/sh","-c"]'
	expect_eq "$what cmd" "$(jq -c .config.Cmd <<<"$json")" '["echo hello from busybox"]'
	expect_eq "$what env" "$(jq -c .config.Env <<<"$json")" \
		'["PATH=/usr/sbin:/usr/bin:/sbin:/bin","GREETING=hi"]'
	expect_eq "$what user" "$(jq -r .config.User <<<"$json")" 1000:1000
	expect_eq "$what workdir" "$(jq -r .config.WorkingDir <<<"$json")" /home/app
	expect_eq "$what ports" "$(jq -c '.config.ExposedPorts | keys' <<<"$json")" '["8080/tcp"]'
	expect_eq "$what author" "$(jq -r .author <<<"$json")" "sdpod test suite"
	expect_eq "$what label" "$(jq -r '.config.Labels["org.opencontainers.image.title"]' <<<"$json")" \
		sdpod-test-busybox
	expect_eq "$what os/arch" "$(jq -r '.os + "/" + .architecture' <<<"$json")" linux/amd64
}

# blob LAYOUT DIGEST: path of a blob in an OCI layout.
blob() { echo "$1/blobs/${2%%:*}/${2#*:}"; }

cd "$work"

# --- 1. rootfs --------------------------------------------------------------
echo "selftest: busybox rootfs"
img_busybox_rootfs rootfs
for a in sh true false echo cat ls sleep env id printf test; do
	expect_eq "bin/$a link" "$(readlink "rootfs/bin/$a")" busybox
done
expect_eq "busybox is a regular file" "$(stat -c %F rootfs/bin/busybox)" "regular file"
expect_line passwd "$(cat rootfs/etc/passwd)" "app:x:1000:1000:app:/home/app:/bin/sh"
expect_line passwd "$(cat rootfs/etc/passwd)" "root:x:0:0:root:/root:/bin/sh"
expect_line group "$(cat rootfs/etc/group)" "app:x:1000:"
expect_eq "tmp mode" "$(stat -c %a rootfs/tmp)" 1777
expect_eq "home/app owner" "$(stat -c %u:%g rootfs/home/app)" 1000:1000
expect_eq "var/empty" "$(find rootfs/var/empty -mindepth 1 | wc -l)" 0
[ -d rootfs/root ] || fail "rootfs: /root missing"
[ -s rootfs/etc/os-release ] || fail "rootfs: /etc/os-release missing"
# The rootfs really runs: busybox is static, so chroot needs nothing else.
expect_eq "chroot run" "$(chroot rootfs /bin/sh -c 'cd /tmp && id -u app && echo ok')" "1000
ok"
expect_fails "rootfs into non-empty dir" img_busybox_rootfs rootfs

# --- 2. OCI layout ------------------------------------------------------------
echo "selftest: OCI layout (umoci)"
img_oci_layout oci latest rootfs
expect_eq "oci-layout" "$(jq -r .imageLayoutVersion oci/oci-layout)" 1.0.0
expect_eq "ref.name" \
	"$(jq -r '.manifests[0].annotations["org.opencontainers.image.ref.name"]' oci/index.json)" latest
manifest=$(blob oci "$(jq -r '.manifests[0].digest' oci/index.json)")
expect_eq "config media type" "$(jq -r .config.mediaType "$manifest")" \
	application/vnd.oci.image.config.v1+json
expect_eq "layer media types" "$(jq -c '[.layers[].mediaType]' "$manifest")" \
	'["application/vnd.oci.image.layer.v1.tar+gzip"]'
# umoci gc left exactly manifest + config + layer.
expect_eq "blob count" "$(find oci/blobs -type f | wc -l)" 3
check_config "oci" "$(skopeo inspect --config oci:oci:latest)"
expect_eq "oci inspect layers" "$(skopeo inspect oci:oci:latest | jq '.Layers | length')" 1
layer=$(img_layer_list oci latest 0)
for m in bin/busybox bin/sh etc/passwd etc/group etc/os-release tmp/ home/app/ var/empty/; do
	expect_line "oci layer" "$layer" "$m"
done
# A second tag in the same layout is added, not a fresh layout.
img_oci_layout oci second rootfs
expect_eq "two tags" "$(umoci ls --layout oci | sort | tr '\n' ' ')" "latest second "
expect_fails "missing rootfs" img_oci_layout oci x "$work/no-such-rootfs"

# --- 3. oci-archive -----------------------------------------------------------
echo "selftest: oci-archive (skopeo)"
img_oci_archive oci latest busybox.oci.tar
check_config "oci-archive" "$(skopeo inspect --config oci-archive:busybox.oci.tar:latest)"
members=$(tar -tf busybox.oci.tar)
expect_line "oci-archive" "$members" index.json
expect_line "oci-archive" "$members" oci-layout
expect_line "oci-archive" "$members" "blobs/sha256/$(basename "$manifest")"
expect_eq "oci-archive ref.name" \
	"$(tar -xOf busybox.oci.tar index.json | jq -r '.manifests[0].annotations["org.opencontainers.image.ref.name"]')" latest
expect_fails "oci-archive from missing layout" img_oci_archive "$work/nope" latest x.tar

# --- 4. docker-archive --------------------------------------------------------
echo "selftest: docker-archive (skopeo)"
img_docker_archive oci latest busybox.docker.tar busybox:latest
check_config "docker-archive" "$(skopeo inspect --config docker-archive:busybox.docker.tar)"
members=$(tar -tf busybox.docker.tar)
dmanifest=$(tar -xOf busybox.docker.tar manifest.json)
expect_eq "docker RepoTags" "$(jq -c '.[0].RepoTags' <<<"$dmanifest")" '["docker.io/library/busybox:latest"]'
dconfig=$(jq -r '.[0].Config' <<<"$dmanifest")
dlayer=$(jq -r '.[0].Layers[0]' <<<"$dmanifest")
expect_line "docker-archive" "$members" manifest.json
expect_line "docker-archive" "$members" "$dconfig"
expect_line "docker-archive" "$members" "$dlayer"
# Layers are stored uncompressed: the member itself is a plain tar.
expect_line "docker layer is plain tar" "$(tar -xOf busybox.docker.tar "$dlayer" | tar -tf -)" bin/busybox
# ... named after the layer's diff_id (the uncompressed digest).
expect_eq "docker layer name" "$dlayer" \
	"$(skopeo inspect --config oci:oci:latest | jq -r '.rootfs.diff_ids[0] | sub("sha256:"; "")').tar"

# --- 5. ACI -------------------------------------------------------------------
echo "selftest: appc ACI (tar)"
for comp in gzip xz zstd none; do
	img_aci rootfs "busybox-$comp.aci" example.com/busybox "$comp"
	case "$comp" in
	gzip) gzip -t "busybox-$comp.aci"; unpack=(gzip -dc) ;;
	xz) xz -t "busybox-$comp.aci"; unpack=(xz -dc) ;;
	zstd) zstd -qt "busybox-$comp.aci"; unpack=(zstd -qdc) ;;
	none) unpack=(cat) ;;
	esac
	members=$("${unpack[@]}" "busybox-$comp.aci" | tar -tf -)
	expect_eq "aci $comp first member" "$(head -n1 <<<"$members")" manifest
	expect_line "aci $comp" "$members" rootfs/bin/busybox
	expect_line "aci $comp" "$members" rootfs/home/app/
	aci_manifest=$("${unpack[@]}" "busybox-$comp.aci" | tar -xOf - manifest)
	expect_eq "aci $comp manifest" \
		"$(jq -c '[.acKind, .acVersion, .name, .app.exec, .app.user, .app.group, .app.workingDirectory]' <<<"$aci_manifest")" \
		'["ImageManifest","0.8.11","example.com/busybox",["/bin/sh","-c","echo hello from aci"],"0","0","/"]'
	expect_eq "aci $comp labels" "$(jq -c '[.labels[] | .name + "=" + .value]' <<<"$aci_manifest")" \
		'["version=1.0.0","os=linux","arch=amd64"]'
	expect_eq "aci $comp ports" "$(jq -c .app.ports <<<"$aci_manifest")" \
		'[{"name":"http","protocol":"tcp","port":8080}]'
	expect_eq "aci $comp env" "$(jq -c '[.app.environment[] | .name]' <<<"$aci_manifest")" '["PATH","GREETING"]'
done
expect_eq "aci default is gzip" "$(img_aci rootfs default.aci example.com/busybox && gzip -t default.aci && echo gz)" gz
expect_fails "aci bad name" img_aci rootfs bad.aci "Not A Name"
expect_fails "aci bad compression" img_aci rootfs bad.aci example.com/busybox bzip9
[ ! -e bad.aci ] || fail "a failed img_aci left bad.aci behind"

# --- 6. whiteouts -------------------------------------------------------------
echo "selftest: two-layer whiteout image (umoci)"
img_whiteout_layout wo latest rootfs
check_config "whiteout" "$(skopeo inspect --config oci:wo:latest)"
expect_eq "whiteout layers" "$(skopeo inspect oci:wo:latest | jq '.Layers | length')" 2
layer1=$(img_layer_list wo latest 0)
layer2=$(img_layer_list wo latest 1)
for m in etc/removed-file opaque-dir/old-a opaque-dir/old-b keep-dir/kept bin/busybox; do
	expect_line "layer 1" "$layer1" "$m"
done
for m in etc/.wh.removed-file opaque-dir/.wh.old-a opaque-dir/.wh.old-b opaque-dir/new-c etc/added-in-layer2; do
	expect_line "layer 2" "$layer2" "$m"
done
# umoci 0.4.7 writes individual whiteouts, never the opaque marker.
expect_no_line "layer 2" "$layer2" "opaque-dir/.wh..wh..opq"
expect_no_line "layer 2" "$layer2" "keep-dir/kept"
# Whiteouts are empty regular files in the layer.
d2=$(jq -r '.layers[1].digest' "$(blob wo "$(jq -r '.manifests[0].digest' wo/index.json)")")
expect_eq "whiteout entry" "$(tar -tvzf "$(blob wo "$d2")" etc/.wh.removed-file | cut -c1-10)" "----------"
# Apply both layers with an independent implementation (umoci unpack) and
# check the merged view.
umoci unpack --image wo:latest merged >/dev/null
[ ! -e merged/rootfs/etc/removed-file ] || fail "merged: etc/removed-file survived"
expect_eq "merged opaque-dir" "$(find merged/rootfs/opaque-dir -mindepth 1 -printf '%P ')" "new-c "
expect_eq "merged keep-dir" "$(cat merged/rootfs/keep-dir/kept)" kept
expect_eq "merged added" "$(cat merged/rootfs/etc/added-in-layer2)" added

# --- 7. zstd layers -----------------------------------------------------------
echo "selftest: OCI layout with zstd layer (umoci + skopeo)"
img_oci_layout_zstd zs latest rootfs
zmanifest=$(blob zs "$(jq -r '.manifests[0].digest' zs/index.json)")
expect_eq "zstd media type" "$(jq -c '[.layers[].mediaType]' "$zmanifest")" \
	'["application/vnd.oci.image.layer.v1.tar+zstd"]'
zlayer=$(blob zs "$(jq -r '.layers[0].digest' "$zmanifest")")
zstd -qt "$zlayer" || fail "zstd layer does not decompress"
expect_line "zstd layer" "$(img_layer_list zs latest 0)" bin/busybox
check_config "zstd" "$(skopeo inspect --config oci:zs:latest)"
# Same config (and so the same diff_ids) as the gzip image.
expect_eq "zstd config digest" "$(jq -r .config.digest "$zmanifest")" "$(jq -r .config.digest "$manifest")"

# --- determinism and cleanup --------------------------------------------------
echo "selftest: reproducibility"
img_oci_layout oci2 latest rootfs
expect_eq "same manifest digest" \
	"$(jq -r '.manifests[0].digest' oci2/index.json)" "$(jq -r '.manifests[0].digest' oci/index.json)"
img_aci rootfs again.aci example.com/busybox gzip
cmp -s again.aci busybox-gzip.aci || fail "ACI not reproducible"
checks=$((checks + 1))

expect_eq "scratch dirs removed" "$(ls -A "$TMPDIR")" ""

end=$(date +%s.%N)
awk -v s="$start" -v e="$end" -v n="$checks" \
	'BEGIN { printf "selftest: PASS (%d checks, %.1fs)\n", n, e - s }'
