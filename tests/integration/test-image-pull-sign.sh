#!/bin/bash
#
# test-image-pull-sign.sh - signature policies on pull, with a real registry
# (docker-registry on 127.0.0.1) and "simple signing" signatures made by
# skopeo copy --sign-by with a test GPG key, kept in a lookaside directory
# that a registries.d names: under signedBy a signed image is accepted; an
# unsigned one is refused before any layer is fetched; a tampered
# signature, a signature by another key, one for another manifest and one
# for another repository are refused; reject and insecureAcceptAnything;
# policy scopes; the old "sigstore" key of registries.d; a policy file that
# is missing or broken is an error, never "accept anything".

. "$(dirname "$0")/lib.sh"

use_real_images
. "$LIB_DIR/registry-lib.sh"

leak_begin

echo "# keys, images, signed pushes"
gpg_setup
gpg_new_key KEY signer
gpg_new_key OTHER other
KEYFILE="$REG_ROOT/signer.gpg"
build_busybox
V2=$(build_variant v2)
BB_LAYER=$(jq -r '.layers[0].digest' "$(oci_blob "$IMG/oci" "$BB_MANIFEST")")

registry_start plain
R=$REG
sign_push plain "$KEY" "oci:$IMG/oci:latest" test/signed:v1
sign_push plain "$KEY" "oci:$IMG/oci:latest" test/tampered:v1
sign_push plain "$OTHER" "oci:$IMG/oci:latest" test/otherkey:v1
registry_push plain "oci:$IMG/oci:latest" test/unsigned:v1
# test/wrongdigest:v1 is busybox with the signature of v2 (another manifest).
registry_push plain "oci:$IMG/oci:latest" test/wrongdigest:v1
sign_push plain "$KEY" "oci:$IMG/v2:latest" test/wrongdigest:v2
# test/identity:v1 is busybox with the signature made for test/signed:v1.
registry_push plain "oci:$IMG/oci:latest" test/identity:v1

SIG=$(sig_dir test/signed "$BB_MANIFEST")/signature-1
assert_file_exists "$SIG"
assert_eq "harness: skopeo pushed the manifest it signed" "$BB_MANIFEST" "$(registry_manifest_digest plain test/signed v1)"
# Tamper: one byte in the middle of the signature changed.
python3 - "$(sig_dir test/tampered "$BB_MANIFEST")/signature-1" <<'EOF'
import os, sys
fd = os.open(sys.argv[1], os.O_RDWR)
off = os.fstat(fd).st_size // 2
b = os.pread(fd, 1, off)
os.pwrite(fd, bytes([b[0] ^ 0x55]), off)
os.close(fd)
EOF
mkdir -p "$(sig_dir test/wrongdigest "$BB_MANIFEST")" "$(sig_dir test/identity "$BB_MANIFEST")"
cp -- "$(sig_dir test/wrongdigest "$V2")/signature-1" "$(sig_dir test/wrongdigest "$BB_MANIFEST")/signature-1"
cp -- "$SIG" "$(sig_dir test/identity "$BB_MANIFEST")/signature-1"

# The harness's signatures are what containers/image expects: skopeo's own
# verification accepts the signed image and refuses the others.
write_policy "$T/policy-signed.json" "$(jq -nc --arg r "$R" --argjson req "$(policy_signed_by "$KEYFILE")" \
	'{default: [{type: "reject"}], transports: {docker: {($r): $req}}}')"
skopeo_verifies() {
	skopeo --policy "$T/policy-signed.json" --registries.d "$REGISTRIES_D" copy -q --remove-signatures \
		--src-tls-verify=false "docker://$R/$1" "oci:$T/skopeo-out:x" >/dev/null 2>&1
	local rc=$?
	rm -rf -- "$T/skopeo-out"
	return "$rc"
}
check "harness: skopeo accepts test/signed:v1 under the policy" skopeo_verifies test/signed:v1
for ref in tampered otherkey unsigned wrongdigest identity; do
	check_not "harness: skopeo refuses test/$ref:v1" skopeo_verifies "test/$ref:v1"
done

write_policy "$T/policy-reject.json" '{"default": [{"type": "reject"}]}'
write_policy "$T/policy-accept.json" '{"default": [{"type": "insecureAcceptAnything"}]}'
write_policy "$T/policy-otherkey.json" "$(jq -nc --argjson req "$(policy_signed_by "$REG_ROOT/other.gpg")" \
	'{default: $req}')"
# Only test/unsigned is required to be signed; everything else is accepted.
write_policy "$T/policy-scoped.json" "$(jq -nc --arg r "$R/test/unsigned" --argjson req "$(policy_signed_by "$KEYFILE")" \
	'{default: [{type: "insecureAcceptAnything"}], transports: {docker: {($r): $req}}}')"

# pull POLICY REF [OPTIONS...]: sdpod image pull on a fresh data directory
# ($FD), with the lookaside of this test; the access log is marked first.
ALL_DATA=("$DATA")
pull() {
	local policy=$1 ref=$2
	shift 2
	FD="$T/data-${#ALL_DATA[@]}"
	mkdir "$FD"
	ALL_DATA+=("$FD")
	registry_access_mark plain
	assert_exit "$EXPECT" "$SDPOD" --dir="$FD" image pull --tls-verify=false --signature-policy="$policy" \
		--registries-d="$REGISTRIES_D" "$@" "$R/$ref"
}

# refused WHAT REPO: the pull just refused fetched no layer and stored nothing.
refused() {
	assert_eq "$1: no layer was fetched" 0 "$(registry_blob_gets plain "$2" "$BB_LAYER")"
	echo "# $1: blob GETs of the repository: $(registry_any_blob_gets plain "$2")"
	store_no_images "$1" "$FD"
}

# ---------------------------------------------------------------------------
echo "# signedBy"
# ---------------------------------------------------------------------------
EXPECT=0 pull "$T/policy-signed.json" test/signed:v1
assert_eq "a signed image is accepted" "$BB_MANIFEST" "$OUT"
EXPECT=0 pull "$T/policy-signed.json" "test/signed@$BB_MANIFEST"
assert_eq "by digest too" "$BB_MANIFEST" "$OUT"
store_verify "$FD"

EXPECT=5 pull "$T/policy-signed.json" test/unsigned:v1
assert_match "an unsigned image is refused, said so" '[Ss]ignature' "$ERR"
refused "unsigned" test/unsigned

EXPECT=5 pull "$T/policy-signed.json" test/tampered:v1
assert_match "a tampered signature is refused" '[Ss]ignature' "$ERR"
refused "tampered" test/tampered

EXPECT=5 pull "$T/policy-signed.json" test/otherkey:v1
assert_match "a signature by another key is refused" '[Ss]ignature|key' "$ERR"
refused "other key" test/otherkey

EXPECT=5 pull "$T/policy-signed.json" test/wrongdigest:v1
assert_match "the signature of another manifest is refused" '[Ss]ignature|digest' "$ERR"
refused "another manifest's signature" test/wrongdigest

EXPECT=5 pull "$T/policy-signed.json" test/identity:v1
assert_match "a signature made for another repository is refused" '[Ss]ignature|identity|reference' "$ERR"
refused "another repository's signature" test/identity

EXPECT=0 pull "$T/policy-otherkey.json" test/otherkey:v1
assert_eq "the other key's policy accepts its image" "$BB_MANIFEST" "$OUT"
EXPECT=5 pull "$T/policy-otherkey.json" test/signed:v1
refused "the first key under the other key's policy" test/signed

# ---------------------------------------------------------------------------
echo "# reject, insecureAcceptAnything, scopes"
# ---------------------------------------------------------------------------
EXPECT=5 pull "$T/policy-reject.json" test/signed:v1
assert_match "reject: even a signed image is refused, said so" '[Rr]eject' "$ERR"
refused "reject" test/signed
EXPECT=0 pull "$T/policy-accept.json" test/unsigned:v1
assert_eq "insecureAcceptAnything: an unsigned image is pulled" "$BB_MANIFEST" "$OUT"
EXPECT=5 pull "$T/policy-scoped.json" test/unsigned:v1
refused "a scope for the repository: its requirement applies" test/unsigned
EXPECT=0 pull "$T/policy-scoped.json" test/otherkey:v1
assert_eq "another repository: the default applies" "$BB_MANIFEST" "$OUT"

# ---------------------------------------------------------------------------
echo "# where signatures are found"
# ---------------------------------------------------------------------------
OLD_D="$REG_ROOT/registries.d-old"
mkdir -p "$OLD_D"
printf '%s\n' "docker:" "  $R:" "    sigstore: file://$SIGSTORE" >"$OLD_D/old.yaml"
EXPECT=0 pull "$T/policy-signed.json" test/signed:v1 --registries-d="$OLD_D"
assert_eq "registries.d's older key \"sigstore\", per registry: found" "$BB_MANIFEST" "$OUT"
EMPTY_D="$REG_ROOT/registries.d-empty"
mkdir -p "$EMPTY_D"
EXPECT=5 pull "$T/policy-signed.json" test/signed:v1 --registries-d="$EMPTY_D"
assert_match "no lookaside configured: no signature, refused" '[Ss]ignature' "$ERR"
refused "no lookaside" test/signed

# ---------------------------------------------------------------------------
echo "# policy files that cannot be used"
# ---------------------------------------------------------------------------
EXPECT="1|2|5" pull "$T/no-such-policy.json" test/unsigned:v1
assert_contains "a missing policy file is an error, named" "$ERR" "no-such-policy.json"
store_no_images "missing policy" "$FD"
printf '{"default": [' >"$T/policy-broken.json"
EXPECT="1|2|5" pull "$T/policy-broken.json" test/unsigned:v1
assert_contains "a broken policy file is an error, named" "$ERR" "policy-broken.json"
store_no_images "broken policy" "$FD"
write_policy "$T/policy-nokey.json" "$(jq -nc --argjson req "$(policy_signed_by "$REG_ROOT/no-such-key.gpg")" '{default: $req}')"
EXPECT="1|5" pull "$T/policy-nokey.json" test/signed:v1
assert_contains "a signedBy without its key file: an error, named" "$ERR" "no-such-key.gpg"
store_no_images "missing key file" "$FD"

# ---------------------------------------------------------------------------
echo "# run --pull applies the policy too"
# ---------------------------------------------------------------------------
assert_exit 5 sd run --pull=always --tls-verify=false --signature-policy="$T/policy-signed.json" \
	--registries-d="$REGISTRIES_D" "$R/test/unsigned:v1" --exec=/bin/true
assert_match "run --pull=always of an unsigned image under signedBy: refused" '[Ss]ignature' "$ERR"
assert_eq "and no pod was made" "" "$(sd list --no-legend 2>/dev/null)"

# ---------------------------------------------------------------------------
echo "# the end"
# ---------------------------------------------------------------------------
for d in "${ALL_DATA[@]}"; do
	assert_eq "$(_show_cmd "$d"): the store is sound" "" "$(store_problems "$d")"
done
registry_leak_check
leak_check "${ALL_DATA[@]}"
