#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
#
# test-registry-login.sh - sdpod login/logout and lib/image/registry.c against
# real registries on 127.0.0.1: Debian's docker-registry (the distribution
# registry) over plain HTTP (anonymous), over HTTPS with a test CA and
# htpasswd Basic auth, and over HTTP with Bearer tokens from a small token
# server (registry-auth-server.py); plus a fake registry that redirects blobs
# to another origin, to check that credentials stay behind. Manifests and
# blobs go through tests/integration/registry-client (registry.h from the
# shell). Mounts nothing and needs no root: it runs without the machine-wide
# test lock.

. "$(dirname "$0")/lib.sh"

require_tool docker-registry docker-registry
require_tool skopeo
require_tool htpasswd apache2-utils
require_tool openssl
require_tool /usr/bin/python3 python3
[ -x "${REGISTRY_CLIENT:-}" ] || die "REGISTRY_CLIENT is not set (meson sets it)"
RC=$REGISTRY_CLIENT
AUTH_SERVER=$LIB_DIR/registry-auth-server.py

# No credentials of the user running the test may leak in, none may leak out.
export HOME=$T/home XDG_RUNTIME_DIR=$T/run
mkdir -p "$HOME" "$XDG_RUNTIME_DIR"
unset REGISTRY_AUTH_FILE
export SDPOD_REGISTRIES_CONFIG=$T/registries.json

free_port() {
	/usr/bin/python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# start_registry NAME EXTRA-YAML: a docker-registry on a free port serving
# $T/storage; sets PORT. The YAML is appended to the http: and auth: parts.
start_registry() {
	local name=$1 http_extra=$2 auth_extra=$3
	for _ in 1 2 3; do
		PORT=$(free_port)
		cat >"$T/$name.yml" <<-YAML
		version: 0.1
		log:
		  level: error
		storage:
		  filesystem:
		    rootdirectory: $T/storage
		  delete:
		    enabled: true
		http:
		  addr: 127.0.0.1:$PORT
		$http_extra
		$auth_extra
		YAML
		docker-registry serve "$T/$name.yml" >"$T/$name.log" 2>&1 &
		echo $! >"$T/$name.pid"
		if wait_until 10 curl -sk -o /dev/null "http://127.0.0.1:$PORT/v2/" ||
			wait_until 1 curl -sk -o /dev/null "https://127.0.0.1:$PORT/v2/"; then
			return 0
		fi
		kill "$(cat "$T/$name.pid")" 2>/dev/null || true
		wait "$(cat "$T/$name.pid")" 2>/dev/null || true
	done
	die "registry $name did not start: $(cat "$T/$name.log")"
}

stop_registry() {
	local pid
	pid=$(cat "$T/$1.pid")
	kill "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
}

# ---------------------------------------------------------------------------
# Fixtures: an image, a CA, a server certificate, htpasswd, a token key.
# ---------------------------------------------------------------------------
# shellcheck source=images/images.sh
. "$IMAGES_SH"
busybox_layout
openssl req -x509 -newkey rsa:2048 -nodes -keyout "$T/ca.key" -out "$T/ca.crt" -days 2 \
	-subj /CN=sdpod-test-ca 2>/dev/null
openssl req -newkey rsa:2048 -nodes -keyout "$T/server.key" -out "$T/server.csr" -subj /CN=127.0.0.1 2>/dev/null
printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\n' >"$T/san.ext"
openssl x509 -req -in "$T/server.csr" -CA "$T/ca.crt" -CAkey "$T/ca.key" -CAcreateserial \
	-out "$T/server.crt" -days 2 -extfile "$T/san.ext" 2>/dev/null
mkdir -p "$T/certs" "$T/certs-no-client"
cp "$T/ca.crt" "$T/certs/test-ca.crt"
cp "$T/ca.crt" "$T/certs-no-client/test-ca.crt"
# a client certificate, which the HTTPS registry asks for
openssl req -newkey rsa:2048 -nodes -keyout "$T/certs/client.key" -out "$T/client.csr" -subj /CN=sdpod-test-client \
	2>/dev/null
openssl x509 -req -in "$T/client.csr" -CA "$T/ca.crt" -CAkey "$T/ca.key" -CAcreateserial \
	-out "$T/certs/client.cert" -days 2 2>/dev/null
htpasswd -nbB alice s3cret >"$T/htpasswd"
openssl req -x509 -newkey rsa:2048 -nodes -keyout "$T/token.key" -out "$T/token.crt" -days 2 \
	-subj /CN=sdpod-test-token 2>/dev/null

# ---------------------------------------------------------------------------
# Plain HTTP, anonymous.
# ---------------------------------------------------------------------------
start_registry plain "" ""
PLAIN=127.0.0.1:$PORT
skopeo --insecure-policy copy -q --dest-tls-verify=false "oci:$IMG/oci:latest" "docker://$PLAIN/test/busybox:latest" ||
	die "skopeo copy to $PLAIN failed"

# Secure by default: a plain-http registry is a TLS failure that says what to do.
# registry-client exits with the errno: EHOSTUNREACH is 113.
assert_exit 113 "$RC" manifest "$PLAIN/test/busybox"
assert_contains "the TLS failure names the address" "$ERR" "https://$PLAIN/v2/"
assert_contains "and says how to trust or skip" "$ERR" "--tls-verify=false"
# registries.json marks it insecure: https is tried, then http.
printf '{"registries": {"%s": {"insecure": true}}}\n' "$PLAIN" >"$SDPOD_REGISTRIES_CONFIG"
assert_exit 0 "$RC" manifest "$PLAIN/test/busybox"
MANIFEST_DIGEST=$(sed -n 's/^digest //p' <<<"$OUT")
assert_match "manifest digest" '^sha256:[0-9a-f]{64}$' "$MANIFEST_DIGEST"
assert_contains "OCI media type" "$OUT" "media-type application/vnd.oci.image.manifest.v1+json"
LAYER=$(sed -n '/^{/p' <<<"$OUT" | jq -r '.layers[0].digest')
LAYER_SIZE=$(sed -n '/^{/p' <<<"$OUT" | jq -r '.layers[0].size')
rm "$SDPOD_REGISTRIES_CONFIG"
assert_exit 0 "$RC" --tls-verify=false manifest --head "$PLAIN/test/busybox"
assert_contains "HEAD gives the same digest" "$OUT" "digest $MANIFEST_DIGEST"
assert_exit 0 "$RC" --tls-verify=false manifest "$PLAIN/test/busybox@$MANIFEST_DIGEST"
assert_contains "by digest" "$OUT" "digest $MANIFEST_DIGEST"
assert_exit 2 "$RC" --tls-verify=false manifest "$PLAIN/test/busybox:nope"
assert_contains "unknown tag named" "$ERR" "$PLAIN/test/busybox:nope: unknown repository or tag"
assert_exit 2 "$RC" --tls-verify=false manifest "$PLAIN/test/nothing"
assert_exit 2 "$RC" --tls-verify=false manifest "$PLAIN/test/busybox@sha256:$(printf '%064d' 0)"

# Blobs: whole, resumed with Range, several at once on one Registry.
"$RC" --tls-verify=false blob "$PLAIN/test/busybox" "$LAYER" >"$T/layer" 2>"$T/blob.err" || true
assert_eq "the blob's digest" "${LAYER#sha256:}" "$(sha256sum <"$T/layer" | cut -d' ' -f1)"
assert_eq "the blob's size" "$LAYER_SIZE" "$(stat -c %s "$T/layer")"
"$RC" --tls-verify=false blob "$PLAIN/test/busybox" "$LAYER" 1000 >"$T/layer.tail" 2>"$T/blob.err" || true
assert_contains "Range honoured" "$(cat "$T/blob.err")" "start 1000"
check "the resumed part is the blob's end" cmp -s "$T/layer.tail" <(tail -c +1001 "$T/layer")
assert_exit 0 "$RC" --tls-verify=false parallel-blobs "$PLAIN/test/busybox" "$LAYER" "$LAYER" "$LAYER" "$LAYER"
assert_eq "four parallel downloads, each whole" 4 "$(grep -c "^$LAYER $LAYER $LAYER_SIZE\$" <<<"$OUT")"
assert_exit 2 "$RC" --tls-verify=false blob "$PLAIN/test/busybox" "sha256:$(printf '%064d' 0)"
assert_contains "unknown blob named" "$ERR" "blob sha256:$(printf '%064d' 0)"

# registry_get_url, for signature lookaside stores: http, file, 404.
assert_exit 0 "$RC" --tls-verify=false url "$PLAIN/test/busybox" "http://$PLAIN/v2/"
assert_eq "a URL's body" "{}" "$OUT"
assert_exit 2 "$RC" --tls-verify=false url "$PLAIN/test/busybox" "http://$PLAIN/nothing/here"
printf 'lookaside\n' >"$T/sig"
assert_exit 0 "$RC" --tls-verify=false url "$PLAIN/test/busybox" "file://$T/sig"
assert_eq "a file URL" lookaside "$OUT"
assert_exit 2 "$RC" --tls-verify=false url "$PLAIN/test/busybox" "file://$T/no-such-sig"
assert_exit 27 "$RC" --tls-verify=false url "$PLAIN/test/busybox" "file://$T/layer" 1000
assert_exit 22 "$RC" --tls-verify=false url "$PLAIN/test/busybox" "ftp://$PLAIN/x"

# A stalled registry fails the transfer after the stall timeout; SIGINT
# (the interrupted() callback) stops one at once.
kill -STOP "$(cat "$T/plain.pid")"
"$RC" --tls-verify=false blob "$PLAIN/test/busybox" "$LAYER" >/dev/null 2>"$T/interrupted.err" &
client=$!
sleep 1
kill -INT "$client"
rc=0
wait "$client" || rc=$?
assert_eq "interrupted: ECANCELED" 125 "$rc"
assert_contains "interrupted, said so" "$(cat "$T/interrupted.err")" "interrupted"
SECONDS=0
assert_exit 110 env SDPOD_REGISTRY_STALL_TIMEOUT=2 "$RC" --tls-verify=false blob "$PLAIN/test/busybox" "$LAYER"
assert_contains "stall named" "$ERR" "timed out"
kill -CONT "$(cat "$T/plain.pid")"
check "within seconds, not minutes" test "$SECONDS" -lt 20

# login to an anonymous registry: nothing to refuse; the file is written.
assert_exit 0 "$SDPOD" login --username=bob --password-stdin --tls-verify=false "$PLAIN" <<<"pw"
assert_contains "login says where" "$OUT" "$HOME/.config/containers/auth.json"
assert_eq "auth.json mode" 600 "$(stat -c %a "$HOME/.config/containers/auth.json")"
assert_eq "its directory's mode" 700 "$(stat -c %a "$HOME/.config/containers")"
assert_eq "the containers format" "$(printf bob:pw | base64)" \
	"$(jq -r --arg r "$PLAIN" '.auths[$r].auth' "$HOME/.config/containers/auth.json")"
assert_exit 0 "$SDPOD" logout "$PLAIN"
assert_exit 3 "$SDPOD" logout "$PLAIN"
stop_registry plain

# ---------------------------------------------------------------------------
# HTTPS with a test CA, a client certificate, htpasswd Basic auth.
# ---------------------------------------------------------------------------
start_registry basic "  tls:
    certificate: $T/server.crt
    key: $T/server.key
    clientcas:
      - $T/ca.crt" "auth:
  htpasswd:
    realm: sdpod-test
    path: $T/htpasswd"
BASIC=127.0.0.1:$PORT
AUTH=$T/auth.json
printf '{"auths": {"other.example": {"auth": "dTpw"}}, "credHelpers": {"x.example": "pass"}}\n' >"$AUTH"

assert_exit 1 "$SDPOD" login --authfile="$AUTH" --username=alice --password-stdin "$BASIC" <<<"s3cret"
assert_contains "unknown CA: TLS failure" "$ERR" "TLS with https://$BASIC/v2/ failed"
assert_exit 1 "$SDPOD" login --authfile="$AUTH" --cert-dir="$T/certs-no-client" --username=alice --password-stdin \
	"$BASIC" <<<"s3cret"
assert_contains "no client certificate: refused" "$ERR" "$BASIC"
assert_exit 1 "$SDPOD" login --authfile="$AUTH" --cert-dir="$T/certs" --username=alice --password-stdin "$BASIC" <<<"wrong"
assert_contains "wrong password: unauthorized" "$ERR" "unauthorized"
check "nothing stored for a wrong password" test "$(jq -r --arg r "$BASIC" '.auths[$r]' "$AUTH")" = null
assert_exit 0 "$SDPOD" login --authfile="$AUTH" --cert-dir="$T/certs" --username=alice --password-stdin "$BASIC" <<<"s3cret"
assert_contains "stored where asked" "$OUT" "stored in $AUTH"
assert_eq "other registries kept" "dTpw" "$(jq -r '.auths["other.example"].auth' "$AUTH")"
assert_eq "unknown keys kept" "pass" "$(jq -r '.credHelpers["x.example"]' "$AUTH")"
assert_exit 2 "$SDPOD" login --authfile="$AUTH" --password-stdin "$BASIC" <<<"s3cret"
assert_exit 2 "$SDPOD" login --authfile="$AUTH" --username=alice --password-stdin "busybox/x" <<<"s3cret"

assert_exit 0 "$RC" --cert-dir="$T/certs" --authfile="$AUTH" manifest "$BASIC/test/busybox"
assert_contains "a pull with the stored credentials" "$OUT" "digest $MANIFEST_DIGEST"
REGISTRY_AUTH_FILE=$AUTH assert_exit 0 "$RC" --cert-dir="$T/certs" ping "$BASIC"
assert_exit 13 "$RC" --cert-dir="$T/certs" manifest "$BASIC/test/busybox"
assert_contains "no credentials: how to log in" "$ERR" "run 'sdpod login $BASIC'"
"$RC" --tls-verify=false --cert-dir="$T/certs" --creds=alice:s3cret blob "$BASIC/test/busybox" "$LAYER" >"$T/layer.basic" 2>/dev/null || true
check "a blob with Basic credentials" cmp -s "$T/layer" "$T/layer.basic"
# At a terminal: asked for, the password without echo; Ctrl-C at the prompt.
SESSION=$LIB_DIR/pty-session.py
out=$(/usr/bin/python3 "$SESSION" --timeout=20 expect:Username: 'send:alice\r' expect:Password: 'send:s3cret\r' \
	expect:succeeded -- "$SDPOD" login --authfile="$AUTH" --cert-dir="$T/certs" "$BASIC" 2>&1) || true
assert_contains "login at a terminal" "$out" "EXIT=0"
assert_not_contains "the password is not echoed" "$out" "s3cret"
out=$(/usr/bin/python3 "$SESSION" --timeout=20 expect:Password: 'send:\x03' -- \
	"$SDPOD" login --authfile="$AUTH" --username=alice "$BASIC" 2>&1) || true
assert_contains "Ctrl-C at the password prompt" "$out" "EXIT=130"
assert_exit 0 "$SDPOD" logout --authfile="$AUTH" --all
assert_eq "logout --all" "{}" "$(jq -c .auths "$AUTH")"
assert_eq "logout keeps unknown keys" "pass" "$(jq -r '.credHelpers["x.example"]' "$AUTH")"
stop_registry basic

# ---------------------------------------------------------------------------
# Bearer tokens from a token server.
# ---------------------------------------------------------------------------
/usr/bin/python3 "$AUTH_SERVER" token "$T/token.port" "$T/token.key" "$T/token.crt" sdpod-test-issuer alice:s3cret \
	>"$T/token.log" 2>&1 &
wait_until 10 test -s "$T/token.port" || die "the token server did not start: $(cat "$T/token.log")"
TOKEN_PORT=$(cat "$T/token.port")
start_registry bearer "" "auth:
  token:
    realm: http://127.0.0.1:$TOKEN_PORT/token
    service: sdpod-test-registry
    issuer: sdpod-test-issuer
    rootcertbundle: $T/token.crt"
BEARER=127.0.0.1:$PORT
printf '{"registries": {"%s": {"insecure": true}}}\n' "$BEARER" >"$SDPOD_REGISTRIES_CONFIG"
assert_exit 13 "$RC" manifest "$BEARER/test/busybox"
assert_contains "anonymous: the token server wants credentials" "$ERR" "token server wants credentials"
assert_exit 1 "$SDPOD" login --username=alice --password-stdin "$BEARER" <<<"wrong"
assert_contains "wrong password at the token server" "$ERR" "refused the credentials"
assert_exit 0 "$SDPOD" login --username=alice --password-stdin "$BEARER" <<<"s3cret"
assert_exit 0 "$RC" manifest "$BEARER/test/busybox"
assert_contains "a manifest with a Bearer token" "$OUT" "digest $MANIFEST_DIGEST"
assert_exit 0 "$RC" parallel-blobs "$BEARER/test/busybox" "$LAYER" "$LAYER" "$LAYER"
assert_eq "parallel blobs share the token" 3 "$(grep -c "^$LAYER $LAYER $LAYER_SIZE\$" <<<"$OUT")"
stop_registry bearer

# ---------------------------------------------------------------------------
# Redirects: credentials stay on the registry's origin.
# ---------------------------------------------------------------------------
/usr/bin/python3 "$AUTH_SERVER" redirect "$T/redirect.port" "$T/storage.log" alice:s3cret >"$T/redirect.log" 2>&1 &
wait_until 10 test -s "$T/redirect.port" || die "the redirect server did not start: $(cat "$T/redirect.log")"
read -r FAKE_PORT _ <"$T/redirect.port"
FAKE=127.0.0.1:$FAKE_PORT
assert_exit 0 "$RC" --tls-verify=false --creds=alice:s3cret blob "$FAKE/probe" "sha256:$(printf '%063d1' 0)"
assert_eq "the storage's bytes" "hello from storage" "$OUT"
assert_eq "no Authorization sent to the storage" "storage authorization=no" "$(cat "$T/storage.log")"
assert_exit 71 "$RC" --tls-verify=false --creds=alice:s3cret blob "$FAKE/probe" "sha256:$(printf '%063d2' 0)"
assert_contains "a redirect to file:// is refused" "$ERR" "not an http(s) URL"
# A server that ignores Range: the sink still gets the blob from the offset.
"$RC" --tls-verify=false --creds=alice:s3cret blob "$FAKE/probe" "sha256:$(printf '%063d3' 0)" 4 \
	>"$T/norange" 2>"$T/norange.err" || true
assert_eq "Range ignored: the rest of the blob" 456789 "$(cat "$T/norange")"
assert_contains "Range ignored: still from the offset" "$(cat "$T/norange.err")" "start 4"
