#!/bin/bash
#
# test-image-pull-auth.sh - pulls over HTTPS and with credentials, from real
# registries (docker-registry on 127.0.0.1 with a certificate of a test CA;
# one anonymous, one with htpasswd basic auth): --cert-dir, --tls-verify=false,
# and the TLS failure without the CA; anonymous pulls refused with a hint
# at `sdpod login`; a wrong password; sdpod login --password-stdin and
# logout, the auth file (mode 0600, the containers format), --authfile,
# $REGISTRY_AUTH_FILE, the default location and ~/.docker/config.json;
# --creds.
#
# registry-lib.sh points $HOME and $XDG_RUNTIME_DIR into $T: nothing here
# reads or writes root's credentials.

. "$(dirname "$0")/lib.sh"

use_real_images
require_tool htpasswd apache2-utils
. "$LIB_DIR/registry-lib.sh"

USER_=alice
PASS_='s3cret pass'

leak_begin

echo "# building and pushing the image"
build_busybox
registry_start tls --tls
RT=$REG
registry_start auth --tls --auth="$USER_:$PASS_"
RA=$REG
registry_push tls "oci:$IMG/oci:latest" test/busybox:latest
registry_push auth "oci:$IMG/oci:latest" test/busybox:latest
assert_eq "harness: the anonymous TLS registry serves the image" "$BB_MANIFEST" \
	"$(registry_manifest_digest tls test/busybox latest)"
assert_eq "harness: the registry with auth too" "$BB_MANIFEST" "$(registry_manifest_digest auth test/busybox latest)"
check "harness: the registry with auth refuses anonymous clients" \
	test "$(curl -s -o /dev/null -w '%{http_code}' --cacert "$REG_CA" "https://$RA/v2/")" = 401

# fresh_data: a new empty data directory in $FD (each pull below fetches
# everything again). All of them are checked at the end.
ALL_DATA=("$DATA")
fresh_data() {
	FD="$T/data-${#ALL_DATA[@]}"
	mkdir "$FD"
	ALL_DATA+=("$FD")
}
fd() { "$SDPOD" --dir="$FD" "$@"; }

# ---------------------------------------------------------------------------
echo "# HTTPS with a test CA"
# ---------------------------------------------------------------------------
fresh_data
assert_exit 0 fd image pull --cert-dir="$REG_CERT_DIR" "$RT/test/busybox:latest"
assert_eq "--cert-dir: the CA of the directory is trusted" "$BB_MANIFEST" "$OUT"
fresh_data
assert_exit 0 fd image pull --tls-verify=false "$RT/test/busybox:latest"
assert_eq "--tls-verify=false: pulled over HTTPS without verification" "$BB_MANIFEST" "$OUT"
fresh_data
assert_exit 1 fd image pull "$RT/test/busybox:latest"
assert_match "without the CA: a TLS failure, said so" '[Cc]ertificate|TLS|SSL' "$ERR"
assert_contains "naming the registry" "$ERR" "$RT"
store_no_images "without the CA" "$FD"
mkdir "$T/other-ca"
assert_exit 1 fd image pull --cert-dir="$T/other-ca" "$RT/test/busybox:latest"
assert_match "a --cert-dir without the CA: refused too" '[Cc]ertificate|TLS|SSL' "$ERR"
printf '{"registries": {"%s": {"insecure": true}}}\n' "$RT" >"$SDPOD_REGISTRIES_CONFIG"
assert_exit 0 fd image pull "$RT/test/busybox:latest"
assert_eq "registries.json \"insecure\": TLS not verified" "$BB_MANIFEST" "$OUT"
printf '{"registries": {}}\n' >"$SDPOD_REGISTRIES_CONFIG"

# ---------------------------------------------------------------------------
echo "# basic auth: anonymous, wrong and right credentials"
# ---------------------------------------------------------------------------
fresh_data
assert_exit 1 fd image pull --cert-dir="$REG_CERT_DIR" "$RA/test/busybox:latest"
assert_contains "anonymous: unauthorized, said so" "$ERR" "unauthorized"
assert_contains "with how to log in" "$ERR" "sdpod login $RA"
store_no_images "anonymous" "$FD"
assert_exit 1 fd image pull --cert-dir="$REG_CERT_DIR" --creds="$USER_:wrong" "$RA/test/busybox:latest"
assert_contains "--creds with a wrong password: unauthorized" "$ERR" "unauthorized"
assert_exit 1 fd image pull --cert-dir="$REG_CERT_DIR" --creds="bob:$PASS_" "$RA/test/busybox:latest"
assert_contains "--creds of an unknown user: unauthorized" "$ERR" "unauthorized"
assert_exit 0 fd image pull --cert-dir="$REG_CERT_DIR" --creds="$USER_:$PASS_" "$RA/test/busybox:latest"
assert_eq "--creds right: pulled" "$BB_MANIFEST" "$OUT"
assert_exit 2 fd image pull --cert-dir="$REG_CERT_DIR" --creds=no-colon "$RA/test/busybox:latest"

# ---------------------------------------------------------------------------
echo "# sdpod login and logout with --authfile"
# ---------------------------------------------------------------------------
AF="$T/auth/auth.json"
mkdir -m 700 "$T/auth"
login() { sd login --cert-dir="$REG_CERT_DIR" "$@"; }
assert_exit 1 login --username="$USER_" --password-stdin --authfile="$AF" "$RA" <<<"wrong"
assert_contains "a wrong password: unauthorized" "$ERR" "unauthorized"
assert_file_absent "$AF"
assert_exit 0 login --username="$USER_" --password-stdin --authfile="$AF" "$RA" <<<"$PASS_"
assert_file_exists "$AF"
assert_eq "the auth file is mode 0600" 600 "$(stat -c %a "$AF" 2>&1)"
assert_jq "in the containers format: auths.REGISTRY.auth = base64(user:password)" "$(cat "$AF" 2>/dev/null)" \
	".auths[\"$RA\"].auth | @base64d" "\"$USER_:$PASS_\""
assert_not_contains "the password is not printed" "$OUT$ERR" "$PASS_"
fresh_data
assert_exit 0 fd image pull --cert-dir="$REG_CERT_DIR" --authfile="$AF" "$RA/test/busybox:latest"
assert_eq "pulled with the credentials of --authfile" "$BB_MANIFEST" "$OUT"
# A second login (another registry) keeps the first.
assert_exit 0 login --tls-verify=false --username=carol --password-stdin --authfile="$AF" "$RT" <<<"pw"
assert_jq "login of another registry keeps the first" "$(cat "$AF" 2>/dev/null)" '.auths | keys | length' 2
assert_exit 0 sd logout --authfile="$AF" "$RA"
assert_jq "logout removes the registry's entry" "$(cat "$AF" 2>/dev/null)" ".auths | has(\"$RA\")" false
assert_jq "and only it" "$(cat "$AF" 2>/dev/null)" ".auths | has(\"$RT\")" true
assert_eq "the file stays mode 0600" 600 "$(stat -c %a "$AF" 2>&1)"
fresh_data
assert_exit 1 fd image pull --cert-dir="$REG_CERT_DIR" --authfile="$AF" "$RA/test/busybox:latest"
assert_contains "logged out: refused again" "$ERR" "unauthorized"
assert_exit 0 sd logout --authfile="$AF" --all
assert_jq "logout --all: no entry left" "$(jq -c '.auths // {}' "$AF" 2>/dev/null || echo '{}')" 'length' 0
assert_exit 2 sd logout --authfile="$AF"
assert_exit 2 sd login --authfile="$AF"

# ---------------------------------------------------------------------------
echo "# \$REGISTRY_AUTH_FILE"
# ---------------------------------------------------------------------------
EF="$T/auth/env-auth.json"
REGISTRY_AUTH_FILE="$EF" assert_exit 0 login --username="$USER_" --password-stdin "$RA" <<<"$PASS_"
assert_file_exists "$EF"
assert_eq "written there, mode 0600" 600 "$(stat -c %a "$EF" 2>&1)"
assert_eq "nothing written to the default places" "" "$(find "$T/home" "$T/xdg" -type f)"
fresh_data
REGISTRY_AUTH_FILE="$EF" assert_exit 0 fd image pull --cert-dir="$REG_CERT_DIR" "$RA/test/busybox:latest"
assert_eq "pull reads \$REGISTRY_AUTH_FILE" "$BB_MANIFEST" "$OUT"
assert_exit 1 fd image pull --cert-dir="$REG_CERT_DIR" "$RA/test/busybox:latest"
assert_contains "without it: refused" "$ERR" "unauthorized"
REGISTRY_AUTH_FILE="$EF" assert_exit 0 sd logout "$RA"
assert_jq "logout uses it too" "$(cat "$EF" 2>/dev/null)" ".auths | has(\"$RA\")" false

# ---------------------------------------------------------------------------
echo "# the default auth file, and ~/.docker/config.json"
# ---------------------------------------------------------------------------
assert_exit 0 login --username="$USER_" --password-stdin "$RA" <<<"$PASS_"
written=$(find "$T/home" "$T/xdg" -type f -name '*.json')
case "$written" in
"$T/xdg/containers/auth.json" | "$T/home/.config/containers/auth.json")
	pass "login without --authfile writes a containers auth.json ($(_show_cmd "$written"))" ;;
*) fail "login without --authfile writes a containers auth.json" "wrote: $written" ;;
esac
[ -n "$written" ] && [ -f "$written" ] && assert_eq "mode 0600" 600 "$(stat -c %a "$written")"
fresh_data
assert_exit 0 fd image pull --cert-dir="$REG_CERT_DIR" "$RA/test/busybox:latest"
assert_eq "pull finds it there" "$BB_MANIFEST" "$OUT"
assert_exit 0 sd logout "$RA"
assert_exit 1 fd image pull --cert-dir="$REG_CERT_DIR" "$RA/test/busybox:latest"
assert_contains "logged out" "$ERR" "unauthorized"
rm -f -- "$written"

mkdir -p "$T/home/.docker"
jq -n --arg r "$RA" --arg a "$(printf '%s' "$USER_:$PASS_" | base64 -w0)" '{auths: {($r): {auth: $a}}}' \
	>"$T/home/.docker/config.json"
fresh_data
assert_exit 0 fd image pull --cert-dir="$REG_CERT_DIR" "$RA/test/busybox:latest"
assert_eq "the credentials of ~/.docker/config.json are read" "$BB_MANIFEST" "$OUT"
rm -rf -- "$T/home/.docker"

# ---------------------------------------------------------------------------
echo "# the end: the stores are sound, nothing is left"
# ---------------------------------------------------------------------------
for d in "${ALL_DATA[@]}"; do
	assert_eq "$(_show_cmd "$d"): the store is sound" "" "$(store_problems "$d")"
done
registry_leak_check
leak_check "${ALL_DATA[@]}"
