#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
#
# test-signature-skopeo.sh - the signatures skopeo copy --sign-by writes into
# a lookaside, checked by sdpod's policy code where skopeo put them: a real
# distribution registry (Debian's docker-registry) on 127.0.0.1, an image
# pushed and signed by skopeo, registries.d configured as containers
# document it. Checks that the layout (BASE/REPO@sha256=HEX/signature-N)
# and the signed content are what signature.c reads, and that a tag pushed
# without signing, a tampered signature and a foreign key are refused.
#
# Usage: SIGNATURE_CHECK=build/tests/unit/signature-check \
#        bash tests/unit/test-signature-skopeo.sh SOURCE_ROOT
# Skips (77) when skopeo, gpg, docker-registry, umoci, jq or busybox is
# missing.

set -u
root=${1:?usage: test-signature-skopeo.sh SOURCE_ROOT}
check=${SIGNATURE_CHECK:?SIGNATURE_CHECK names the signature-check program}
for tool in skopeo gpg gpgconf docker-registry umoci curl python3 jq; do
	command -v "$tool" >/dev/null || { echo "skip: $tool missing"; exit 77; }
done
[ -x /bin/busybox ] || { echo "skip: busybox-static missing"; exit 77; }

T=$(mktemp -d "${TMPDIR:-/tmp}/test-signature-skopeo.XXXXXX")
export GNUPGHOME=$T/gnupg
registry_pid=
cleanup() {
	[ -n "$registry_pid" ] && kill "$registry_pid" 2>/dev/null && wait "$registry_pid" 2>/dev/null
	[ -d "$GNUPGHOME" ] && gpgconf --homedir "$GNUPGHOME" --kill all 2>/dev/null
	[ -d "$T/other-gnupg" ] && gpgconf --homedir "$T/other-gnupg" --kill all 2>/dev/null
	rm -rf "$T"
}
trap cleanup EXIT

checks=0
failures=0
ok() { checks=$((checks + 1)); echo "ok $checks - $1"; }
fail() { checks=$((checks + 1)); failures=$((failures + 1)); echo "FAIL $checks - $1"; }
die() { echo "test-signature-skopeo: $*" >&2; exit 1; }

# expect EXIT MESSAGE-PART NAME -- signature-check args: runs the check,
# wants its exit code and (for a refusal) a part of its message.
expect() {
	local want=$1 part=$2 name=$3
	shift 4
	local out rc
	out=$("$check" "$@" 2>&1)
	rc=$?
	if [ "$rc" = "$want" ] && [[ $out == *"$part"* ]]; then
		ok "$name"
	else
		fail "$name"
		echo "#   exit $rc (wanted $want), output: $out"
		echo "#   wanted in it: $part"
	fi
}

g() { gpg --batch --quiet --no-tty --pinentry-mode loopback --passphrase '' "$@"; }
mkdir -m 0700 "$GNUPGHOME"
g --quick-gen-key 'sdpod skopeo test <skopeo@example.test>' ed25519 sign never 2>/dev/null || die "gpg key"
fpr=$(g --with-colons --list-keys skopeo@example.test | awk -F: '/^fpr/ {print $10; exit}')
g --export "$fpr" >"$T/signer.pub"
mkdir -m 0700 "$T/other-gnupg"
GNUPGHOME=$T/other-gnupg g --quick-gen-key 'other <other@example.test>' ed25519 sign never 2>/dev/null || die "gpg key"
GNUPGHOME=$T/other-gnupg g --export other@example.test >"$T/other.pub"

# shellcheck source=../integration/images/images.sh
. "$root/tests/integration/images/images.sh"
img_busybox_rootfs "$T/rootfs" >/dev/null && img_oci_layout "$T/oci" latest "$T/rootfs" >/dev/null || die "image"

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
reg=127.0.0.1:$port
cat >"$T/registry.yml" <<EOF
version: 0.1
log:
  level: error
storage:
  filesystem:
    rootdirectory: $T/registry-data
http:
  addr: $reg
EOF
docker-registry serve "$T/registry.yml" >"$T/registry.log" 2>&1 &
registry_pid=$!
for _ in $(seq 1 100); do
	curl -fs "http://$reg/v2/" >/dev/null && break
	sleep 0.1
done
curl -fs "http://$reg/v2/" >/dev/null || die "the registry did not start: $(cat "$T/registry.log")"

# registries.d as an operator writes it: skopeo writes where sdpod reads.
# Half the namespace uses the older key name "sigstore".
mkdir "$T/registries.d"
cat >"$T/registries.d/test.yaml" <<EOF
docker:
  $reg:
    lookaside: file://$T/lookaside
  $reg/old:
    sigstore: file://$T/sigstore
EOF
push() { # [LAYOUT:]SRC-TAG DEST [skopeo options]
	local src=$1 dest=$2
	shift 2
	[[ $src == *:* ]] || src=$T/oci:$src
	skopeo --registries.d "$T/registries.d" copy --quiet --dest-tls-verify=false "$@" \
		"oci:$src" "docker://$reg/$dest" >/dev/null 2>"$T/skopeo.err" ||
		die "skopeo copy to $dest: $(cat "$T/skopeo.err")"
}
digest_of() { # REPO:TAG
	echo "sha256:$(skopeo inspect --raw --tls-verify=false "docker://$reg/$1" | sha256sum | cut -d' ' -f1)"
}

push latest test/busybox:v1 --sign-by "$fpr"
d=$(digest_of test/busybox:v1)
sig="$T/lookaside/test/busybox@sha256=${d#sha256:}/signature-1"
if [ -f "$sig" ]; then ok "skopeo wrote $reg/test/busybox's signature as BASE/REPO@sha256=HEX/signature-1"; else
	fail "skopeo wrote the signature where sdpod looks"; find "$T/lookaside" -type f; fi

cat >"$T/policy.json" <<EOF
{"default": [{"type": "reject"}],
 "transports": {"docker": {"$reg": [{"type": "signedBy", "keyType": "GPGKeys", "keyPath": "$T/signer.pub"}]}}}
EOF
cat >"$T/policy-other.json" <<EOF
{"default": [{"type": "signedBy", "keyType": "GPGKeys", "keyPath": "$T/other.pub"}]}
EOF
P=$T/policy.json
R=$T/registries.d

expect 0 "" "skopeo's signature accepted, by tag" -- "$P" "$R" "$reg" test/busybox v1 "$d"
expect 0 "" "skopeo's signature accepted, by digest" -- "$P" "$R" "$reg" test/busybox - "$d"
expect 5 "signature by an unknown key" "a signature by another key refused" -- \
	"$T/policy-other.json" "$R" "$reg" test/busybox v1 "$d"
expect 5 "rejected by the policy for scope default" "an image outside the signed scope refused" -- \
	"$P" "$R" "localhost:1" test/busybox v1 "$d"

# The same manifest under a tag skopeo did not sign: its signature names v1.
push latest test/busybox:v2
expect 5 "identity mismatch" "a tag pushed without signing: v1's signature does not name it" -- \
	"$P" "$R" "$reg" test/busybox v2 "$(digest_of test/busybox:v2)"

# Another manifest (docker schema 2), never signed.
push latest test/unsigned:v1 --format v2s2
u=$(digest_of test/unsigned:v1)
[ "$u" != "$d" ] || die "the v2s2 copy has the same digest"
expect 5 "no signature found at file://$T/lookaside/test/unsigned@sha256=${u#sha256:}/signature-1" \
	"an unsigned image refused" -- "$P" "$R" "$reg" test/unsigned v1 "$u"

# The older key name of the lookaside.
push latest old/busybox:v1 --sign-by "$fpr"
o=$(digest_of old/busybox:v1)
expect 0 "" "a lookaside given as \"sigstore\"" -- "$P" "$R" "$reg" old/busybox v1 "$o"

# Tampered: one byte of the signature changed.
cp "$sig" "$T/good-signature"
python3 - "$sig" <<'EOF'
import sys
p = sys.argv[1]
b = bytearray(open(p, 'rb').read())
b[len(b) // 2] ^= 0x01
open(p, 'wb').write(b)
EOF
expect 5 "signature 1 (file://" "a tampered signature refused" -- "$P" "$R" "$reg" test/busybox v1 "$d"

# A second signature after the tampered one is still found (signature-2).
cp "$T/good-signature" "${sig%-1}-2"
expect 0 "" "signature-2 read after a bad signature-1" -- "$P" "$R" "$reg" test/busybox v1 "$d"

# An image index: skopeo copy --all --sign-by signs the index, the manifest
# the reference names (and sdpod checks), and each image under it too.
cp -a "$T/oci" "$T/oci-index"
m=$(jq -r '.manifests[0].digest' "$T/oci/index.json")
ms=$(jq -r '.manifests[0].size' "$T/oci/index.json")
printf '{"schemaVersion":2,"mediaType":"application/vnd.oci.image.index.v1+json","manifests":[{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"%s","size":%s,"platform":{"os":"linux","architecture":"amd64"}}]}' \
	"$m" "$ms" >"$T/index.blob"
ih=$(sha256sum <"$T/index.blob" | cut -d' ' -f1)
cp "$T/index.blob" "$T/oci-index/blobs/sha256/$ih"
printf '{"schemaVersion":2,"manifests":[{"mediaType":"application/vnd.oci.image.index.v1+json","digest":"sha256:%s","size":%s,"annotations":{"org.opencontainers.image.ref.name":"latest"}}]}' \
	"$ih" "$(stat -c %s "$T/index.blob")" >"$T/oci-index/index.json"
push "$T/oci-index:latest" test/index:v1 --all --sign-by "$fpr"
i=$(digest_of test/index:v1)
if [ "$i" = "sha256:$ih" ] && [ -f "$T/lookaside/test/index@sha256=$ih/signature-1" ]; then
	ok "skopeo copy --all signs the index, under the index's digest"
else
	fail "skopeo copy --all signs the index"
	echo "#   registry has $i, index sha256:$ih"; find "$T/lookaside/test" -maxdepth 1
fi
expect 0 "" "a signed index accepted by the index's digest" -- "$P" "$R" "$reg" test/index v1 "$i"
expect 0 "" "and the image under it by its own" -- "$P" "$R" "$reg" test/index v1 "$m"
# An index pushed with a single-image copy's signature only: the index
# itself is unsigned.
push "$T/oci-index:latest" test/index2:v1 --all
mkdir -p "$T/lookaside/test/index2@sha256=${m#sha256:}"
cp "$T/lookaside/test/index@sha256=${m#sha256:}/signature-1" "$T/lookaside/test/index2@sha256=${m#sha256:}/"
expect 5 "/test/index2@sha256=$ih/signature-1" "an index whose images are signed but not itself is refused" -- \
	"$P" "$R" "$reg" test/index2 v1 "$(digest_of test/index2:v1)"

# The policy file is the operator's: errors name it and the field.
echo '{"default": [{"type": "signedBy", "keyType": "GPGKeys"}]}' >"$T/bad.json"
expect 1 "$T/bad.json: default[0]: exactly one of" "a malformed policy names the file and the field" -- \
	"$T/bad.json" "$R" "$reg" test/busybox v1 "$d"
expect 1 "$T/missing.json" "a missing --signature-policy file is an error" -- \
	"$T/missing.json" "$R" "$reg" test/busybox v1 "$d"

echo "1..$checks"
[ "$failures" -eq 0 ]
