#!/bin/bash
#
# test-image-pull.sh - sdpod image pull from a real registry (Debian's
# docker-registry on 127.0.0.1, plain HTTP), and --pull on prepare, run and
# podapp add: by tag and by digest, then run; --name; OCI and docker
# schema 2 manifests; a two-platform index and --platform; the two-layer
# whiteout image; --pull=always sees a re-pushed tag, --pull=missing and
# --pull=never do not ask the registry (stopped, to prove it); unknown
# tag, repository and digest (exit 3); a reference without a registry
# (exit 2); a registry that does not answer (the message names it); plain
# HTTP only when told.
#
# Faults (interrupted pulls, corrupt blobs, parallel pulls):
# test-image-pull-faults.sh. TLS and credentials: test-image-pull-auth.sh.
# Signatures: test-image-pull-sign.sh.

. "$(dirname "$0")/lib.sh"

use_real_images
require_tool systemd-nspawn systemd-container
. "$LIB_DIR/registry-lib.sh"

leak_begin

echo "# building and pushing the images"
build_busybox
build_index
build_whiteout
# Two versions of one image (busybox and /etc/version), for a tag that moves.
for v in v1 v2; do
	tiny_layer "$T/version-$v.tar" version "$v"
	bb=$(jq -r '.layers[0].digest' "$(oci_blob "$IMG/oci" "$BB_MANIFEST")")
	cp -- "$(oci_blob "$IMG/oci" "$bb")" "$T/bb.tar.gz"
	oci_layout_new "$IMG/$v" "$(host_arch)" "$T/bb.tar.gz" "$T/version-$v.tar"
	rm -f -- "$T/bb.tar.gz" "$T/version-$v.tar"
done
V1=$(oci_manifest_digest "$IMG/v1")
V2=$(oci_manifest_digest "$IMG/v2")

registry_start plain
R=$REG
registry_push plain "oci:$IMG/oci:latest" test/busybox:latest
registry_push plain "oci:$IMG/oci:latest" test/busybox-docker:latest --format v2s2
registry_push plain "oci:$IMG/index:latest" test/multi:latest --all
registry_push plain "oci:$IMG/wo:latest" test/wo:latest
registry_push_layout plain "$IMG/v1" test/moving:latest
# The harness pushed what the tests expect (skopeo leaves OCI manifests as
# they are).
assert_eq "harness: the registry serves the busybox manifest as built" "$BB_MANIFEST" \
	"$(registry_manifest_digest plain test/busybox latest)"
assert_eq "harness: and the index" "$IDX_DIGEST" "$(registry_manifest_digest plain test/multi latest)"
DOCKER_MANIFEST=$(registry_manifest_digest plain test/busybox-docker latest)
assert_eq "harness: test/busybox-docker is docker schema 2" application/vnd.docker.distribution.manifest.v2+json \
	"$(registry_manifest plain test/busybox-docker latest | jq -r .mediaType)"

# The reference image trees: what import renders from the same layouts.
REF_DATA="$T/data-import"
mkdir "$REF_DATA"
"$SDPOD" --dir="$REF_DATA" image import "$IMG/oci" >/dev/null || die "import of the busybox layout failed"
BB_TREE="$REF_DATA/tree/${BB_MANIFEST#sha256:}/rootfs"

# image_names ID [DATA]: the names of an image, sorted, one line.
image_names() {
	"$SDPOD" --dir="${2:-$DATA}" image list --format=json |
		jq -r --arg id "$1" '.[] | select(.id == $id) | .names[]' | LC_ALL=C sort | tr '\n' ' ' | sed 's/ $//'
}
# image_id REF [DATA]: the id the store gives REF.
image_id() {
	"$SDPOD" --dir="${2:-$DATA}" image inspect "$1" 2>/dev/null | jq -r .id
}

# ---------------------------------------------------------------------------
echo "# pull by tag"
# ---------------------------------------------------------------------------
assert_exit 0 sd image pull --tls-verify=false "$R/test/busybox:latest"
assert_eq "pull prints the image id (the manifest digest), and only it" "$BB_MANIFEST" "$OUT"
assert_contains "the image is named after the reference" "$(image_names "$BB_MANIFEST")" "$R/test/busybox:latest"
assert_same_tree "the pulled tree equals import's tree of the same image" "$BB_TREE" \
	"$DATA/tree/${BB_MANIFEST#sha256:}/rootfs"
assert_jq "its record: linux/amd64" "$(sd image inspect "$BB_MANIFEST")" '.os + "/" + .architecture' \
	"\"linux/$(host_arch)\""
assert_eq "its record's app (exec, env, user...) is import's" \
	"$("$SDPOD" --dir="$REF_DATA" image inspect "$BB_MANIFEST" | jq -c .app)" "$(sd image inspect "$BB_MANIFEST" | jq -c .app)"
# Without a terminal: one summary line on stderr; --quiet: none.
assert_eq "in a script, one summary line on stderr" 1 "$(grep -c . "$T/stderr")"
assert_exit 0 sd image pull --quiet --tls-verify=false "$R/test/busybox:latest"
assert_eq "--quiet: nothing on stderr" "" "$ERR"
assert_eq "--quiet: the id on stdout" "$BB_MANIFEST" "$OUT"
assert_exit 0 sd image pull -q --tls-verify=false "docker://$R/test/busybox"
assert_eq "docker:// and no tag (latest): the same image" "$BB_MANIFEST" "$OUT"

# On a terminal: a line per layer (state, bytes, rate) and the total,
# redrawn in place and erased at the end, then the summary; the id on stdout.
D3="$T/data-tty"
mkdir "$D3"
script -qec "$(printf '%q ' "$SDPOD" --dir="$D3" image pull --tls-verify=false "$R/test/busybox:latest")" \
	/dev/null >"$T/tty.out" 2>&1 </dev/null || true
assert_contains "on a terminal, the progress names the layer" "$(cat "$T/tty.out")" \
	"$(jq -r '.layers[0].digest | .[7:19]' "$(oci_blob "$IMG/oci" "$BB_MANIFEST")")"
assert_contains "... and the total" "$(cat "$T/tty.out")" "total "
assert_contains "... and is erased, the summary line left" "$(cat "$T/tty.out")" $'\033[Jpulled '"$R/test/busybox:latest"
assert_contains "... before the id" "$(cat "$T/tty.out")" "$BB_MANIFEST"
rm -rf -- "$D3"

echo "# and run it"
assert_exit 0 sd run "$R/test/busybox:latest" --exec=/bin/echo -- hello from a pulled image
assert_contains "a pod runs the pulled image" "$OUT" "hello from a pulled image"
assert_exit 0 sd run "$R/test/busybox:latest"
assert_contains "with the image's own command (from its config)" "$OUT" "hello from busybox"

# ---------------------------------------------------------------------------
echo "# pull by digest, into an empty store"
# ---------------------------------------------------------------------------
D2="$T/data-digest"
mkdir "$D2"
sd2() { "$SDPOD" --dir="$D2" "$@"; }
registry_access_mark plain
assert_exit 0 sd2 image pull --tls-verify=false "$R/test/busybox@$BB_MANIFEST"
assert_eq "by digest: the id" "$BB_MANIFEST" "$OUT"
assert_contains "named REGISTRY/REPOSITORY@DIGEST" "$(image_names "$BB_MANIFEST" "$D2")" "$R/test/busybox@$BB_MANIFEST"
assert_eq "every layer fetched once" 1 "$(registry_blob_gets plain test/busybox \
	"$(jq -r '.layers[0].digest' "$(oci_blob "$IMG/oci" "$BB_MANIFEST")")")"
# shellcheck disable=SC2016 # $GREETING is the pod's
assert_exit 0 sd2 run "$R/test/busybox@$BB_MANIFEST" --exec=/bin/sh -- -c 'echo "by digest: $GREETING"'
assert_contains "runs, with the image's environment" "$OUT" "by digest: hi"
assert_jq "its record has the config's environment" "$(sd2 image inspect "$BB_MANIFEST")" '.app.env' \
	'["PATH=/usr/sbin:/usr/bin:/sbin:/bin","GREETING=hi"]'
assert_exit 3 sd2 image pull --tls-verify=false "$R/test/busybox@sha256:$(printf '%064d' 0)"
assert_contains "an unknown digest: exit 3, named" "$ERR" "sha256:$(printf '%064d' 0)"
store_verify "$D2"

# ---------------------------------------------------------------------------
echo "# --name"
# ---------------------------------------------------------------------------
assert_exit 0 sd image pull --tls-verify=false --name=mybox:1 "$R/test/busybox:latest"
assert_eq "--name: the same id" "$BB_MANIFEST" "$OUT"
assert_eq "--name gives a local name too" "$BB_MANIFEST" "$(image_id mybox:1)"
assert_contains "and the reference's name stays" "$(image_names "$BB_MANIFEST")" "$R/test/busybox:latest"
assert_exit 0 sd run mybox:1 --exec=/bin/true

# ---------------------------------------------------------------------------
echo "# docker schema 2"
# ---------------------------------------------------------------------------
assert_exit 0 sd image pull --tls-verify=false "$R/test/busybox-docker:latest"
assert_eq "a docker schema 2 manifest: its digest is the id" "$DOCKER_MANIFEST" "$OUT"
assert_same_tree "its tree is busybox's" "$BB_TREE" "$DATA/tree/${DOCKER_MANIFEST#sha256:}/rootfs"

# ---------------------------------------------------------------------------
echo "# a two-platform index"
# ---------------------------------------------------------------------------
assert_exit 0 sd image pull --tls-verify=false "$R/test/multi:latest"
assert_eq "the host's platform by default (linux/amd64)" "$IDX_AMD64" "$OUT"
assert_exit 0 sd image pull --tls-verify=false --platform=linux/arm64 --name=multi-arm "$R/test/multi:latest"
assert_eq "--platform=linux/arm64 picks the other" "$IDX_ARM64" "$OUT"
assert_jq "its record says arm64" "$(sd image inspect "$IDX_ARM64")" '.os + "/" + .architecture' '"linux/arm64"'
assert_exit 3 sd image pull --tls-verify=false --platform=linux/s390x "$R/test/multi:latest"
assert_contains "a platform the index lacks: named" "$ERR" "linux/s390x"
assert_contains "with those there are" "$ERR" "linux/arm64"

# ---------------------------------------------------------------------------
echo "# the two-layer image with whiteouts"
# ---------------------------------------------------------------------------
assert_exit 0 sd image pull --tls-verify=false "$R/test/wo:latest"
assert_eq "its id" "$WO_MANIFEST" "$OUT"
tree="$DATA/tree/${WO_MANIFEST#sha256:}/rootfs"
assert_file_absent "$tree/etc/removed-file" "$tree/opaque-dir/old-a" "$tree/opaque-dir/old-b"
assert_eq "layer 2's file" added "$(cat "$tree/etc/added-in-layer2" 2>&1)"
assert_eq "no .wh. entry in the tree" "" "$(cd "$tree" && find . -name '.wh.*')"
umoci unpack --image "$IMG/wo:latest" "$T/umoci-bundle" >/dev/null
assert_same_tree "the tree equals umoci's unpack of the image" "$T/umoci-bundle/rootfs" "$tree"
rm -rf -- "$T/umoci-bundle"

# ---------------------------------------------------------------------------
echo "# --pull=always, missing, never on run and prepare"
# ---------------------------------------------------------------------------
M="$R/test/moving:latest"
assert_exit 0 sd run --pull=always --tls-verify=false "$M" --exec=/bin/cat -- /etc/version
assert_contains "run --pull=always of an image not in the store pulls it" "$OUT" ": v1"
assert_eq "the name is the reference's" "$V1" "$(image_id "$M")"
registry_push_layout plain "$IMG/v2" test/moving:latest
registry_access_mark plain
assert_exit 0 sd run --tls-verify=false "$M" --exec=/bin/cat -- /etc/version
assert_contains "the default (--pull=missing) runs the image it has" "$OUT" ": v1"
assert_exit 0 sd run --pull=missing --tls-verify=false "$M" --exec=/bin/cat -- /etc/version
assert_contains "--pull=missing too" "$OUT" ": v1"
assert_exit 0 sd prepare --pull=never --tls-verify=false "$M" --exec=/bin/true
assert_exit 0 sd rm "$OUT"
assert_eq "none of them asked the registry" 0 "$(registry_requests plain)"
assert_exit 0 sd run --pull=always --tls-verify=false "$M" --exec=/bin/cat -- /etc/version
assert_contains "--pull=always sees the tag pushed again" "$OUT" ": v2"
assert_eq "and the name moves to the new image" "$V2" "$(image_id "$M")"
assert_exit 0 sd prepare --pull=always --tls-verify=false "$M" --exec=/bin/true
assert_exit 0 sd rm "$OUT"

registry_access_mark plain
assert_exit 3 sd run --pull=never --tls-verify=false "$R/test/busybox:never-pulled" --exec=/bin/true
assert_contains "--pull=never and an image not in the store: not found, named" "$ERR" "test/busybox:never-pulled"
assert_exit 3 sd prepare --pull=never --tls-verify=false "$R/test/busybox:never-pulled" --exec=/bin/true
assert_eq "--pull=never did not ask the registry" 0 "$(registry_requests plain)"
assert_exit 2 sd prepare --pull=sometimes "$M" --exec=/bin/true
assert_contains "a bad --pull value is named" "$ERR" "sometimes"

echo "# --pull=missing with the registry stopped"
registry_stop plain
assert_exit 0 sd run --tls-verify=false "$R/test/busybox:latest" --exec=/bin/echo -- no registry needed
assert_contains "the image in the store runs without the registry" "$OUT" "no registry needed"
assert_exit 0 sd prepare --pull=missing --tls-verify=false "$M" --exec=/bin/true
assert_exit 0 sd rm "$OUT"

echo "# a registry that does not answer"
assert_exit 1 sd image pull --tls-verify=false "$R/test/busybox:latest"
assert_contains "the message names the address" "$ERR" "$R"
assert_match "and why (curl's reason)" '[Cc]onnect|refused' "$ERR"
assert_exit 1 sd run --pull=always --tls-verify=false "$R/test/busybox:latest" --exec=/bin/true
assert_contains "run --pull=always too" "$ERR" "$R"
assert_exit 1 sd run --tls-verify=false "$R/test/busybox:not-here" --exec=/bin/true
assert_contains "and run of an image it must pull" "$ERR" "$R"
registry_restart plain

# ---------------------------------------------------------------------------
echo "# podapp add --pull"
# ---------------------------------------------------------------------------
assert_exit 0 pa sandbox --name=pull-sandbox
U=$OUT
assert_exit 0 pa add "$U" --app=never --pull=never --tls-verify=false "$M" --exec=/bin/sleep -- 1000
assert_exit 3 pa add "$U" --app=absent --pull=never --tls-verify=false "$R/test/wo:absent" --exec=/bin/true
registry_push_layout plain "$IMG/v1" test/moving:latest
assert_exit 0 pa add "$U" --app=always --pull=always --tls-verify=false "$M" --exec=/bin/sleep -- 1000
assert_eq "podapp add --pull=always pulled the tag anew" "$V1" "$(image_id "$M")"
assert_exit 0 pa add "$U" --app=fresh --tls-verify=false "$R/test/busybox-docker@$DOCKER_MANIFEST" --exec=/bin/true
assert_exit 0 sd stop "$U"
assert_exit 0 sd rm "$U"

# ---------------------------------------------------------------------------
echo "# references that cannot be pulled"
# ---------------------------------------------------------------------------
assert_exit 3 sd image pull --tls-verify=false "$R/test/busybox:nope"
assert_contains "an unknown tag: exit 3, named" "$ERR" "nope"
assert_exit 3 sd image pull --tls-verify=false "$R/test/nothing:latest"
assert_contains "an unknown repository: exit 3, named" "$ERR" "test/nothing"
for ref in busybox library/busybox busybox:latest docker://busybox; do
	assert_exit 2 sd image pull "$ref"
	assert_contains "$ref: refused, the registry must be named" "$ERR" "name the registry"
done
assert_exit 2 sd image pull --tls-verify=false "$R/Test/Upper:latest"
assert_exit 2 sd image pull
assert_exit 2 sd image pull --tls-verify=maybe "$R/test/busybox:latest"
assert_exit 2 sd image pull --tls-verify=false "$R/test/busybox:latest" extra-argument

# ---------------------------------------------------------------------------
echo "# plain HTTP only when told"
# ---------------------------------------------------------------------------
D3="$T/data-http"
mkdir "$D3"
assert_exit 1 "$SDPOD" --dir="$D3" image pull "$R/test/busybox:latest"
assert_contains "TLS by default: a plain-HTTP registry fails, named" "$ERR" "$R"
printf '{"registries": {"%s": {"insecure": true}}}\n' "$R" >"$SDPOD_REGISTRIES_CONFIG"
assert_exit 0 "$SDPOD" --dir="$D3" image pull "$R/test/busybox:latest"
assert_eq "registries.json \"insecure\": plain HTTP allowed" "$BB_MANIFEST" "$OUT"
printf '{"registries": {}}\n' >"$SDPOD_REGISTRIES_CONFIG"

# ---------------------------------------------------------------------------
echo "# the end: the stores are sound, nothing is left"
# ---------------------------------------------------------------------------
store_verify
assert_eq "no blob or tree without an image" "" "$(store_unreferenced)"
assert_eq "nor in the digest store" "" "$(store_unreferenced "$D2")"
remove_all_pods
registry_leak_check
leak_check "$DATA" "$D2" "$D3"
