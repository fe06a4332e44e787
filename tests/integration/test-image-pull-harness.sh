#!/bin/bash
#
# test-image-pull-harness.sh - registry-lib.sh checked with skopeo and curl
# alone (no sdpod): if it fails, the pull tests test nothing. The images
# the builders make reach the registries with the digests the tests
# expect; HTTPS with the test CA and basic auth refuse what they must; the
# access log counts GETs, 206 answers and bytes; a registry killed in the
# middle of a transfer through the throttling proxy cuts it, and comes back
# on the same port with the same storage; skopeo's own verification accepts
# the signed push under the harness's policy and refuses an unsigned image.

. "$(dirname "$0")/lib.sh"

use_real_images
. "$LIB_DIR/registry-lib.sh"

leak_begin

# quiet CMD...: CMD without its output (skopeo explains its refusals at length).
quiet() { "$@" >/dev/null 2>&1; }

echo "# builders and pushes"
build_busybox
build_index
build_whiteout
build_big 20
registry_start plain
registry_start secure --tls --auth=alice:s3cret
registry_push plain "oci:$IMG/oci:latest" test/busybox:latest
registry_push plain "oci:$IMG/oci:latest" test/busybox-docker:latest --format v2s2
registry_push plain "oci:$IMG/index:latest" test/multi:latest --all
registry_push plain "oci:$IMG/wo:latest" test/wo:latest
registry_push_layout plain "$IMG/big" test/big:latest
registry_push secure "oci:$IMG/oci:latest" test/busybox:latest
assert_eq "busybox: the manifest digest of the layout" "$BB_MANIFEST" "$(registry_manifest_digest plain test/busybox latest)"
assert_eq "the index: its digest" "$IDX_DIGEST" "$(registry_manifest_digest plain test/multi latest)"
assert_eq "the index: two platforms" '{"os":"linux","architecture":"amd64"} {"os":"linux","architecture":"arm64"}' \
	"$(registry_manifest plain test/multi latest | jq -c '.manifests[].platform' | tr '\n' ' ' | sed 's/ $//')"
assert_eq "skopeo picks arm64 from it" arm64 "$(skopeo inspect --tls-verify=false --override-arch arm64 \
	"docker://${REG_ADDR[plain]}/test/multi:latest" | jq -r .Architecture)"
assert_eq "the whiteout image: its digest" "$WO_MANIFEST" "$(registry_manifest_digest plain test/wo latest)"
assert_eq "the big image, pushed blob for blob: its digest" "$BIG_MANIFEST" "$(registry_manifest_digest plain test/big latest)"
assert_eq "--format v2s2: a docker schema 2 manifest" application/vnd.docker.distribution.manifest.v2+json \
	"$(registry_manifest plain test/busybox-docker latest | jq -r .mediaType)"
assert_eq "over TLS with credentials" "$BB_MANIFEST" "$(registry_manifest_digest secure test/busybox latest)"
check "registry_has" registry_has plain test/busybox latest
check_not "registry_has: not an unknown tag" registry_has plain test/busybox nope

echo "# TLS and auth refuse what they must"
check_not "anonymous: refused" quiet skopeo inspect --cert-dir "$REG_CERT_DIR" "docker://${REG_ADDR[secure]}/test/busybox:latest"
check_not "a wrong password: refused" quiet skopeo inspect --cert-dir "$REG_CERT_DIR" --creds alice:wrong \
	"docker://${REG_ADDR[secure]}/test/busybox:latest"
check_not "without the CA: refused" quiet skopeo inspect --creds alice:s3cret "docker://${REG_ADDR[secure]}/test/busybox:latest"
check "with --tls-verify=false: accepted" quiet skopeo inspect --tls-verify=false --creds alice:s3cret \
	"docker://${REG_ADDR[secure]}/test/busybox:latest"

echo "# the access log"
registry_access_mark plain
registry_curl plain "/v2/test/big/blobs/$BIG_LAYER" -o /dev/null -r 1000-
registry_curl plain "/v2/test/big/blobs/$BIG_LAYER" -o /dev/null
registry_curl plain "/v2/test/big/blobs/$BIG_LAYER" -o /dev/null -I
assert_eq "GETs of a blob (HEAD not counted)" 2 "$(registry_blob_gets plain test/big "$BIG_LAYER")"
assert_eq "of which ranged" 1 "$(registry_ranged_gets plain test/big "$BIG_LAYER")"
assert_eq "bytes sent" "$((2 * BIG_SIZE - 1000))" "$(registry_blob_bytes plain test/big "$BIG_LAYER")"
assert_eq "requests since the mark" 3 "$(registry_requests plain)"
assert_eq "the blob's file on the registry's disk" "$(oci_blob "$IMG/big" "$BIG_LAYER" | xargs sha256sum | cut -d' ' -f1)" \
	"$(sha256sum <"$(registry_blob_file plain "$BIG_LAYER")" | cut -d' ' -f1)"

echo "# the proxy, a kill in the middle, a restart"
proxy_start slow plain $((4 << 20))
registry_curl slow "/v2/test/big/blobs/$BIG_LAYER" -o "$T/got" 2>/dev/null &
cpid=$!
wait_for "the proxy passes 8 MiB" 20 proxy_passed slow $((8 << 20))
registry_kill plain
rc=0
wait "$cpid" || rc=$?
assert_ne "the transfer was cut" 0 "$rc"
got=$(stat -c %s "$T/got")
if [ "$got" -lt "$BIG_SIZE" ]; then pass "cut short ($got of $BIG_SIZE bytes)"; else fail "cut short" "got all $got bytes"; fi
rm -f -- "$T/got"
old=${REG_ADDR[plain]}
registry_restart plain
check "it answers on the same address" curl -fs -o /dev/null "http://$old/v2/"
registry_access_mark plain
assert_eq "with the same storage" "$BIG_MANIFEST" "$(registry_manifest_digest slow test/big latest)"
registry_curl slow "/v2/test/big/blobs/$BIG_LAYER" -o /dev/null -r "$got-"
assert_eq "a Range request through the proxy: 206" 1 "$(registry_ranged_gets plain test/big "$BIG_LAYER")"

echo "# signatures"
gpg_setup
gpg_new_key KEY signer
sign_push plain "$KEY" "oci:$IMG/oci:latest" test/signed:v1
assert_file_exists "$(sig_dir test/signed "$BB_MANIFEST")/signature-1"
write_policy "$T/policy.json" "$(jq -nc --arg r "${REG_ADDR[plain]}" --argjson req "$(policy_signed_by "$REG_ROOT/signer.gpg")" \
	'{default: [{type: "reject"}], transports: {docker: {($r): $req}}}')"
check "skopeo accepts the signed image" skopeo --policy "$T/policy.json" --registries.d "$REGISTRIES_D" copy -q \
	--remove-signatures --src-tls-verify=false "docker://${REG_ADDR[plain]}/test/signed:v1" "oci:$T/out:v1"
check_not "skopeo refuses an unsigned one" quiet skopeo --policy "$T/policy.json" --registries.d "$REGISTRIES_D" copy -q \
	--remove-signatures --src-tls-verify=false "docker://${REG_ADDR[plain]}/test/busybox:latest" "oci:$T/out:v2"
rm -rf -- "$T/out"

registry_leak_check
leak_check
