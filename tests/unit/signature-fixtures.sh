#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
#
# signature-fixtures.sh OUT - makes the keys and "simple signing" signatures
# test-signature verifies, with the real tools: gpg for the keys and for the
# hand-made (broken) signatures, skopeo standalone-sign for the good ones, so
# that what sdpod accepts is what skopeo writes, not what our own code makes.
#
# OUT gets:
#   gnupg/                 the signing keyring (its agent is ended on exit)
#   a.pub b.pub c.pub x.pub   public keys (binary); a.asc armored; a.fpr ...
#                          a, b: plain signing keys; c: a certify-only
#                          primary whose subkey signs; x: expired
#   manifest.json other.json   two manifests; manifest.digest other.digest
#   lookaside/ns/CASE@sha256=HEX/signature-N    for the cases below, all for
#                          manifest.json's digest and "registry.test:5000/ns/CASE:v1"
#
# Exit 77 (skip) when gpg or skopeo is missing.
set -euo pipefail

out=${1:?usage: signature-fixtures.sh OUT}
command -v gpg >/dev/null && command -v gpgconf >/dev/null || { echo "gpg missing" >&2; exit 77; }
command -v skopeo >/dev/null || { echo "skopeo missing" >&2; exit 77; }

mkdir -p "$out"
out=$(cd "$out" && pwd)
export GNUPGHOME=$out/gnupg
mkdir -m 0700 "$GNUPGHOME"
trap 'gpgconf --homedir "$GNUPGHOME" --kill all 2>/dev/null || true' EXIT

registry=registry.test:5000
g() { gpg --batch --quiet --no-tty --pinentry-mode loopback --passphrase '' "$@"; }

newkey() { # NAME USAGE EXPIRE [extra gpg options...]
	local name=$1 usage=$2 expire=$3
	shift 3
	g "$@" --quick-gen-key "sdpod test $name <$name@example.test>" ed25519 "$usage" "$expire" 2>/dev/null
	g --with-colons --list-keys "$name@example.test" | awk -F: '/^fpr/ {print $10; exit}' >"$out/$name.fpr"
	g --export "$(cat "$out/$name.fpr")" >"$out/$name.pub"
}
newkey a sign never
newkey b sign never
g --armor --export "$(cat "$out/a.fpr")" >"$out/a.asc"
# c: the primary only certifies; a subkey signs.
newkey c cert never
g --quick-add-key "$(cat "$out/c.fpr")" ed25519 sign never 2>/dev/null
g --export "$(cat "$out/c.fpr")" >"$out/c.pub"
# x: made and used in 2020, expired since 2021.
newkey x sign 2021-01-01 --faked-system-time 20200601T000000

printf '{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"sha256:%064d","size":2},"layers":[]}' 0 >"$out/manifest.json"
printf '{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"sha256:%064d","size":3},"layers":[]}' 1 >"$out/other.json"
hex=$(sha256sum "$out/manifest.json" | cut -d' ' -f1)
echo "sha256:$hex" >"$out/manifest.digest"
echo "sha256:$(sha256sum "$out/other.json" | cut -d' ' -f1)" >"$out/other.digest"

sigdir() { # CASE: the lookaside directory of ns/CASE for manifest.json
	local d="$out/lookaside/ns/$1@sha256=$hex"
	mkdir -p "$d"
	echo "$d"
}
skopeo_sign() { # MANIFEST REFERENCE KEY OUT
	skopeo standalone-sign "$1" "$2" "$(cat "$out/$3.fpr")" -o "$4"
}
payload() { # REFERENCE DIGEST [TYPE] [EXTRA-CRITICAL-FIELD]
	printf '{"critical":{"identity":{"docker-reference":"%s"},"image":{"docker-manifest-digest":"%s"},"type":"%s"%s},"optional":{"creator":"signature-fixtures.sh"}}' \
		"$1" "$2" "${3:-atomic container signature}" "${4:-}"
}
gpg_sign() { # KEY OUT [gpg options]: signs stdin into OUT
	local key=$1 file=$2
	shift 2
	g "$@" --local-user "$(cat "$out/$key.fpr")" --sign --output "$file"
}

# Made by skopeo: the real thing.
skopeo_sign "$out/manifest.json" "$registry/ns/good:v1" a "$(sigdir good)/signature-1"
skopeo_sign "$out/other.json" "$registry/ns/wrongdigest:v1" a "$(sigdir wrongdigest)/signature-1"
skopeo_sign "$out/manifest.json" "$registry/ns/elsewhere:v1" a "$(sigdir wrongidentity)/signature-1"
skopeo_sign "$out/manifest.json" "$registry/ns/wrongkey:v1" b "$(sigdir wrongkey)/signature-1"
skopeo_sign "$out/manifest.json" "$registry/ns/subkey:v1" c "$(sigdir subkey)/signature-1"
# Docker Hub's short names: the lookaside path is the normalized repository.
mkdir -p "$out/hub/library/busybox@sha256=$hex"
skopeo_sign "$out/manifest.json" "busybox:1" a "$out/hub/library/busybox@sha256=$hex/signature-1"
# A digest-named signature (skopeo signs what it is told).
skopeo_sign "$out/manifest.json" "$registry/ns/good@sha256:$hex" a "$out/by-digest.sig"

# Tampered: an uncompressed signed message whose JSON is changed after
# signing (v1 -> v2, same length), so gpg finds a bad signature.
d=$(sigdir tampered)
payload "$registry/ns/tampered:v1" "sha256:$hex" | gpg_sign a "$d/clean" --compress-algo none
sed 's/tampered:v1/tampered:v2/' "$d/clean" >"$d/signature-1"
cmp -s "$d/clean" "$d/signature-1" && { echo "tampering changed nothing" >&2; exit 1; }
rm "$d/clean"

# Several: by b, a tampered one, then a good one by a.
d=$(sigdir multi)
skopeo_sign "$out/manifest.json" "$registry/ns/multi:v1" b "$d/signature-1"
cp "$(sigdir tampered)/signature-1" "$d/signature-2"
skopeo_sign "$out/manifest.json" "$registry/ns/multi:v1" a "$d/signature-3"
# signature-5 is never read: the list ends at the first missing one.
skopeo_sign "$out/manifest.json" "$registry/ns/multi:v1" a "$d/signature-5"

# Hand-made contents, validly signed by a.
payload "$registry/ns/badtype:v1" "sha256:$hex" "atomic container signature v2" | gpg_sign a "$(sigdir badtype)/signature-1"
payload "$registry/ns/badcritical:v1" "sha256:$hex" "" ',"expires":0' | gpg_sign a "$(sigdir badcritical)/signature-1"
echo 'not json' | gpg_sign a "$(sigdir notjson)/signature-1"
# Detached: a signature packet without the content.
payload "$registry/ns/detached:v1" "sha256:$hex" | g --local-user "$(cat "$out/a.fpr")" --detach-sign --output "$(sigdir detached)/signature-1"
# Clear-signed text is a signed message too; gpg hands back its text.
payload "$registry/ns/clearsigned:v1" "sha256:$hex" | g --local-user "$(cat "$out/a.fpr")" --clearsign --output "$(sigdir clearsigned)/signature-1"
# Expired key: signed while it was valid.
payload "$registry/ns/expired:v1" "sha256:$hex" | gpg_sign x "$(sigdir expired)/signature-1" --faked-system-time 20200701T000000
# A compression bomb: 8 MiB of content in a few KiB of signature.
{ payload "$registry/ns/bomb:v1" "sha256:$hex"; head -c 8388608 /dev/zero | tr '\0' ' '; } |
	gpg_sign a "$(sigdir bomb)/signature-1" --compress-algo zlib -z 9
# Larger than any signature may be.
head -c 70000 /dev/urandom >"$(sigdir huge)/signature-1"
# Garbage.
echo "this is not OpenPGP" >"$(sigdir garbage)/signature-1"
# More signatures than are read (all by b).
d=$(sigdir many)
for i in $(seq 1 70); do cp "$(sigdir wrongkey)/signature-1" "$d/signature-$i"; done
# An image without signatures has no directory at all.
echo ok
