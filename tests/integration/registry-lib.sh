# shellcheck shell=bash
# shellcheck disable=SC2034 # REG, PULL_OPTS, BB_MANIFEST and the like are for the tests
#
# registry-lib.sh - a real registry for the pull tests, sourced after lib.sh:
#
#   . "$(dirname "$0")/lib.sh"
#   . "$LIB_DIR/registry-lib.sh"   # (lib.sh has cd'd into $T/cwd)
#
# What it gives a test:
#   * registries: Debian's docker-registry (the distribution registry, 2.8)
#     on 127.0.0.1, on a free port, with a configuration and a storage of
#     its own under $T/reg/NAME; plain HTTP, or HTTPS with a test CA, with or
#     without htpasswd basic auth. Stopped, killed and restarted by PID (the
#     same port, the same storage); always stopped when the test ends, also
#     when it fails, and then the end of its log is shown;
#   * the access log of a registry (which requests it answered, with which
#     status): how a test sees what sdpod fetched, and how often;
#   * image builders on top of lib.sh and images.sh (busybox, a two-platform
#     index, the two-layer whiteout image, a big image with a random layer),
#     pushed with skopeo;
#   * a throttling TCP proxy, so that a pull lasts long enough to be
#     interrupted where a test wants;
#   * a GPG key in a private GNUPGHOME, signed pushes (skopeo --sign-by) into
#     a lookaside directory, the registries.d and policy.json files sdpod
#     reads them through.
#
# Conventions:
#   * registry_start and proxy_start start background processes of this
#     shell: call them from the test's own shell, never in $(...);
#   * what sdpod would read from the host's home and runtime directories is
#     pointed into $T ($HOME=$T/home, $XDG_RUNTIME_DIR=$T/xdg; no
#     $REGISTRY_AUTH_FILE): a test never reads or writes root's credentials;
#   * the registry's own files (config, storage, log, TLS keys) live under
#     $T/reg; nothing of it goes to $T/tmp, which leak_check wants empty.
#
# Main functions (each documented where it is defined):
#   registry_start NAME [--tls] [--auth=USER:PASSWORD]    -> $REG, REG_ADDR[NAME]
#   registry_stop NAME, registry_kill NAME, registry_restart NAME
#   registry_log NAME, registry_access NAME, registry_blob_gets NAME REPO DIGEST
#   registry_ranged_gets NAME REPO DIGEST, registry_blob_file NAME DIGEST
#   registry_push NAME SRC REPO:TAG [SKOPEO-COPY-OPTIONS...]
#   registry_manifest_digest NAME REPO:TAG
#   pull_opts NAME            -> the sdpod options to reach it (PULL_OPTS array)
#   build_busybox, build_index, build_whiteout, build_big MB
#   proxy_start NAME UPSTREAM RATE, proxy_bytes NAME, proxy_stop NAME
#   gpg_setup, gpg_new_key VAR UID, sign_push ..., write_policy ...
#   registry_leak_check

# Tools every pull test needs.
require_root "the registry's storage and sdpod's store are root's"
for _t in docker-registry skopeo curl jq openssl python3; do
	case "$_t" in
	docker-registry) require_tool "$_t" docker-registry ;;
	*) require_tool "$_t" ;;
	esac
done
unset _t

declare -gA REG_ADDR=() REG_PID=() REG_DIR=() REG_TLS=() REG_CREDS=()
declare -gA PROXY_ADDR=() PROXY_PID=()
REG=
REG_ROOT="$T/reg"
mkdir -p "$REG_ROOT" "$T/home" "$T/xdg"
chmod 700 "$T/xdg"
export HOME="$T/home" XDG_RUNTIME_DIR="$T/xdg"
unset REGISTRY_AUTH_FILE DOCKER_CONFIG
# A registries.json of the host must not decide what a test sees.
export SDPOD_REGISTRIES_CONFIG="$REG_ROOT/registries.json"
printf '{"registries": {}}\n' >"$SDPOD_REGISTRIES_CONFIG"
GPG_HOME=

_registry_on_exit() {
	local rc=$1 name
	set +e
	trap - ERR
	remove_all_pods >/dev/null 2>&1
	for name in "${!PROXY_PID[@]}"; do
		proxy_stop "$name"
	done
	for name in "${!REG_PID[@]}"; do
		[ -n "${REG_PID[$name]}" ] || continue
		registry_stop "$name"
	done
	if [ -n "$GPG_HOME" ] && [ -d "$GPG_HOME" ]; then
		gpgconf --homedir "$GPG_HOME" --kill all >/dev/null 2>&1
	fi
	# A failed test shows what its registries saw.
	if [ "$rc" != 0 ] || [ "$_failures" -gt 0 ]; then
		for name in "${!REG_DIR[@]}"; do
			echo "# --- the last lines of registry $name's log (${REG_DIR[$name]}/log):"
			grep -v 'level=info msg="response completed"' "${REG_DIR[$name]}/log" 2>/dev/null |
				tail -n 40 | cut -c1-400 | sed 's/^/#   /'
		done
	fi
}
trap '_rc=$?; _registry_on_exit "$_rc"; (exit "$_rc"); _lib_on_exit' EXIT

# ---------------------------------------------------------------------------
# TLS: a test CA and a certificate for 127.0.0.1, made once per test.
# ---------------------------------------------------------------------------

# $REG_CERT_DIR: a directory with the CA as ca.crt, for --cert-dir (and
# skopeo's --dest-cert-dir). $REG_CA: the CA certificate itself.
REG_CERT_DIR="$REG_ROOT/certs"
REG_CA="$REG_ROOT/tls/ca.crt"

_registry_tls() {
	local d="$REG_ROOT/tls"
	[ -f "$d/server.crt" ] && return 0
	mkdir -p "$d" "$REG_CERT_DIR"
	openssl req -x509 -newkey rsa:2048 -nodes -keyout "$d/ca.key" -out "$d/ca.crt" -days 2 \
		-subj "/CN=sdpod test CA" -addext "basicConstraints=critical,CA:TRUE" \
		-addext "keyUsage=critical,keyCertSign,cRLSign" >/dev/null 2>&1 || die "openssl: cannot make the test CA"
	openssl req -newkey rsa:2048 -nodes -keyout "$d/server.key" -out "$d/server.csr" \
		-subj "/CN=127.0.0.1" >/dev/null 2>&1 || die "openssl: cannot make the server key"
	printf '%s\n' "subjectAltName=IP:127.0.0.1,DNS:localhost" "basicConstraints=CA:FALSE" \
		"extendedKeyUsage=serverAuth" "keyUsage=digitalSignature,keyEncipherment" >"$d/ext"
	openssl x509 -req -in "$d/server.csr" -CA "$d/ca.crt" -CAkey "$d/ca.key" -CAcreateserial \
		-out "$d/server.crt" -days 2 -extfile "$d/ext" >/dev/null 2>&1 || die "openssl: cannot sign the server certificate"
	cp "$d/ca.crt" "$REG_CERT_DIR/ca.crt"
}

# ---------------------------------------------------------------------------
# Registries.
# ---------------------------------------------------------------------------

# registry_start NAME [--tls] [--auth=USER:PASSWORD]: a registry of its own
# (storage $T/reg/NAME/storage) on 127.0.0.1 and a free port, answering
# before this returns. $REG and REG_ADDR[NAME] are its "127.0.0.1:PORT".
# --tls: HTTPS with the certificate of the test CA ($REG_CERT_DIR);
# --auth: htpasswd basic auth with that one user (docker-registry 2.8
# allows it over plain HTTP too; the auth tests use it over TLS).
registry_start() {
	local name=$1 tls=no creds="" arg dir port i
	shift
	for arg; do
		case "$arg" in
		--tls) tls=yes ;;
		--auth=*:*) creds=${arg#--auth=} ;;
		*) die "registry_start: unknown option $arg" ;;
		esac
	done
	[ -z "${REG_PID[$name]:-}" ] || die "registry_start: $name runs already"
	dir="$REG_ROOT/$name"
	mkdir -p "$dir/storage"
	{
		echo "version: 0.1"
		echo "log:"
		echo "  level: info"
		echo "  accesslog:"
		echo "    disabled: false"
		echo "storage:"
		echo "  filesystem:"
		echo "    rootdirectory: $dir/storage"
		echo "  delete:"
		echo "    enabled: true"
		echo "http:"
		echo "  addr: 127.0.0.1:0"
		echo "  secret: sdpod-test-$name"
		if [ "$tls" = yes ]; then
			_registry_tls
			echo "  tls:"
			echo "    certificate: $REG_ROOT/tls/server.crt"
			echo "    key: $REG_ROOT/tls/server.key"
		fi
		if [ -n "$creds" ]; then
			require_tool htpasswd apache2-utils
			htpasswd -nbB "${creds%%:*}" "${creds#*:}" >"$dir/htpasswd" 2>/dev/null ||
				die "htpasswd failed"
			echo "auth:"
			echo "  htpasswd:"
			echo "    realm: sdpod-test-$name"
			echo "    path: $dir/htpasswd"
		fi
	} >"$dir/config.yml"
	REG_DIR[$name]=$dir
	REG_TLS[$name]=$tls
	REG_CREDS[$name]=$creds
	: >"$dir/log"
	_registry_run "$name"
	# The port it found: kept for restarts.
	port=
	for i in $(seq 100); do
		port=$(sed -n 's/.*msg="listening on 127\.0\.0\.1:\([0-9]*\)[",].*/\1/p' "$dir/log" | head -n 1)
		[ -n "$port" ] && break
		kill -0 "${REG_PID[$name]}" 2>/dev/null || break
		sleep 0.05
	done
	[ -n "$port" ] || die "registry $name did not start: $(tail -n 5 "$dir/log")"
	sed -i "s/^  addr: 127\.0\.0\.1:0\$/  addr: 127.0.0.1:$port/" "$dir/config.yml"
	REG_ADDR[$name]="127.0.0.1:$port"
	REG="127.0.0.1:$port"
	_registry_wait "$name"
	echo "# registry $name: ${REG_ADDR[$name]} (tls=$tls${creds:+, basic auth}), pid ${REG_PID[$name]}"
}

_registry_run() {
	local name=$1 dir=${REG_DIR[$1]}
	echo "### $(date -u +%T.%N) sdpod test: (re)start" >>"$dir/log"
	docker-registry serve "$dir/config.yml" >>"$dir/log" 2>&1 </dev/null &
	REG_PID[$name]=$!
}

# registry_url NAME: its base URL.
registry_url() {
	if [ "${REG_TLS[$1]}" = yes ]; then echo "https://${REG_ADDR[$1]}"; else echo "http://${REG_ADDR[$1]}"; fi
}

# registry_curl NAME PATH [CURL-OPTIONS...]: curl of PATH on the registry,
# with its CA and credentials.
registry_curl() {
	local name=$1 path=$2
	shift 2
	local -a o=(-sS --max-time 20)
	[ "${REG_TLS[$name]}" = no ] || o+=(--cacert "$REG_CA")
	[ -z "${REG_CREDS[$name]}" ] || o+=(-u "${REG_CREDS[$name]}")
	curl "${o[@]}" "$@" "$(registry_url "$name")$path"
}

_registry_answers() {
	local code
	code=$(registry_curl "$1" /v2/ -o /dev/null -w '%{http_code}' 2>/dev/null) || return 1
	[ "$code" = 200 ] || [ "$code" = 401 ]
}

_registry_wait() {
	local name=$1 i
	for i in $(seq 200); do
		_registry_answers "$name" && return 0
		kill -0 "${REG_PID[$name]}" 2>/dev/null || break
		sleep 0.05
	done
	die "registry $name does not answer on ${REG_ADDR[$name]}: $(tail -n 5 "${REG_DIR[$name]}/log")"
}

# registry_stop NAME: SIGTERM, SIGKILL after 5 s; waits for its end.
registry_stop() {
	local name=$1 pid=${REG_PID[$1]:-} i
	[ -n "$pid" ] || return 0
	kill -TERM "$pid" 2>/dev/null || true
	for i in $(seq 50); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	kill -KILL "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
	REG_PID[$name]=
}

# registry_kill NAME: SIGKILL at once (a registry that goes away mid-transfer).
registry_kill() {
	local name=$1 pid=${REG_PID[$1]:-}
	[ -n "$pid" ] || return 0
	kill -KILL "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
	REG_PID[$name]=
}

# registry_restart NAME: starts a stopped registry again: same port, same
# configuration, same storage; answers before this returns.
registry_restart() {
	local name=$1 i
	[ -z "${REG_PID[$name]:-}" ] || registry_stop "$name"
	for i in $(seq 20); do
		_registry_run "$name"
		sleep 0.2
		kill -0 "${REG_PID[$name]}" 2>/dev/null && break
		# The port may still be held a moment; try again.
		wait "${REG_PID[$name]}" 2>/dev/null || true
		REG_PID[$name]=
		sleep 0.2
	done
	[ -n "${REG_PID[$name]}" ] || die "registry $name does not start again: $(tail -n 5 "${REG_DIR[$name]}/log")"
	_registry_wait "$name"
}

# registry_log NAME: the path of its log (stdout and stderr, all restarts).
registry_log() {
	echo "${REG_DIR[$1]}/log"
}

# registry_access NAME: its access log, one line per request answered:
#   127.0.0.1 - - [DATE] "METHOD PATH HTTP/1.1" STATUS BYTES "" "AGENT"
# (a request is logged when its answer is complete; one cut off by a kill
# is not).
registry_access() {
	grep -E '^127\.0\.0\.1 - ' "${REG_DIR[$1]}/log" || true
}

# registry_access_mark NAME: remembers how far its access log is; the
# registry_*_gets functions then count only what came after.
declare -gA _REG_MARK=()
registry_access_mark() {
	_REG_MARK[$1]=$(registry_access "$1" | wc -l)
}

_registry_access_since() {
	registry_access "$1" | tail -n +"$((${_REG_MARK[$1]:-0} + 1))"
}

# registry_blob_gets NAME REPO DIGEST: how many GETs of the blob the
# registry answered with 200 or 206 (since registry_access_mark).
registry_blob_gets() {
	_registry_access_since "$1" | grep -cE "\"GET /v2/$2/blobs/$3 HTTP/[0-9.]+\" (200|206) " || true
}

# registry_ranged_gets NAME REPO DIGEST: how many of them were partial (206:
# a Range request).
registry_ranged_gets() {
	_registry_access_since "$1" | grep -cE "\"GET /v2/$2/blobs/$3 HTTP/[0-9.]+\" 206 " || true
}

# registry_blob_bytes NAME REPO DIGEST: the bytes the registry sent of the
# blob, all GETs together (since registry_access_mark).
registry_blob_bytes() {
	_registry_access_since "$1" | awk -v p="\"GET /v2/$2/blobs/$3 " \
		'index($0, p) { split(substr($0, index($0, p) + length(p)), f, " "); s += f[3] } END { print s + 0 }'
}

# registry_any_blob_gets NAME REPO: GETs of any blob of REPO (since the mark).
registry_any_blob_gets() {
	_registry_access_since "$1" | grep -cE "\"GET /v2/$2/blobs/" || true
}

# registry_requests NAME: the number of requests it answered since the mark.
registry_requests() {
	_registry_access_since "$1" | wc -l
}

# registry_blob_file NAME DIGEST: where the registry keeps the blob's bytes.
registry_blob_file() {
	local hex=${2#sha256:}
	echo "${REG_DIR[$1]}/storage/docker/registry/v2/blobs/sha256/${hex:0:2}/$hex/data"
}

# registry_push NAME SRC REPO:TAG [SKOPEO-COPY-OPTIONS...]: skopeo copy of
# SRC (a transport:reference, e.g. oci:DIR:latest) to the registry.
registry_push() {
	local name=$1 src=$2 dst=$3
	shift 3
	local -a o=()
	if [ "${REG_TLS[$name]}" = yes ]; then
		o+=(--dest-cert-dir "$REG_CERT_DIR")
	else
		o+=(--dest-tls-verify=false)
	fi
	[ -z "${REG_CREDS[$name]}" ] || o+=(--dest-creds "${REG_CREDS[$name]}")
	skopeo --insecure-policy copy -q "${o[@]}" "$@" "$src" "docker://${REG_ADDR[$name]}/$dst" >"$REG_ROOT/push.out" 2>&1 ||
		die "skopeo copy $src to ${REG_ADDR[$name]}/$dst failed: $(cat "$REG_ROOT/push.out")"
}

# registry_upload NAME REPO FILE: FILE as a blob of REPO, uploaded with
# curl as it is (a monolithic upload: POST, then PUT with the digest).
# skopeo would compress an uncompressed layer on its way to a registry, so
# an image whose blobs must stay exactly what a test made goes this way.
registry_upload() {
	local name=$1 repo=$2 file=$3 hex loc
	hex=$(sha256sum <"$file" | cut -d' ' -f1)
	loc=$(registry_curl "$name" "/v2/$repo/blobs/uploads/" -f -X POST -o /dev/null -D - |
		tr -d '\r' | sed -n 's/^[Ll]ocation: //p') || die "registry_upload: POST to $repo failed"
	[ -n "$loc" ] || die "registry_upload: no Location for an upload to $repo"
	# The Location may be a path or a whole URL.
	case "$loc" in
	http*://*) loc="/${loc#*://*/}" ;;
	esac
	case "$loc" in
	*\?*) loc="$loc&digest=sha256:$hex" ;;
	*) loc="$loc?digest=sha256:$hex" ;;
	esac
	registry_curl "$name" "$loc" -f -X PUT -H 'Content-Type: application/octet-stream' \
		--data-binary "@$file" -o /dev/null || die "registry_upload: PUT of $file to $repo failed"
}

# registry_push_layout NAME LAYOUT REPO:TAG: the first image of an OCI
# layout (hand-made with oci_layout_new: one manifest) pushed blob for
# blob as it is, then its manifest under TAG.
registry_push_layout() {
	local name=$1 layout=$2 repo=${3%:*} tag=${3##*:} md mf d
	md=$(oci_manifest_digest "$layout")
	mf=$(oci_blob "$layout" "$md")
	for d in $(jq -r '.config.digest, .layers[].digest' "$mf"); do
		registry_upload "$name" "$repo" "$(oci_blob "$layout" "$d")"
	done
	registry_curl "$name" "/v2/$repo/manifests/$tag" -f -X PUT \
		-H "Content-Type: $(jq -r '.mediaType // "'"$MT_OCI_MANIFEST"'"' "$mf")" \
		--data-binary "@$mf" -o /dev/null || die "registry_push_layout: PUT of the manifest $repo:$tag failed"
}

_accept_manifests="application/vnd.oci.image.index.v1+json, application/vnd.oci.image.manifest.v1+json, application/vnd.docker.distribution.manifest.list.v2+json, application/vnd.docker.distribution.manifest.v2+json"

# registry_manifest NAME REPO REFERENCE: the manifest (or index) as the
# registry serves it, byte for byte.
registry_manifest() {
	registry_curl "$1" "/v2/$2/manifests/$3" -f -H "Accept: $_accept_manifests"
}

# registry_manifest_digest NAME REPO REFERENCE: its digest (sha256 of those bytes).
registry_manifest_digest() {
	local h
	h=$(registry_manifest "$@" | sha256sum) || die "no manifest $2:$3 in registry $1"
	echo "sha256:${h%% *}"
}

# registry_has NAME REPO REFERENCE: the registry knows it (skopeo inspect).
registry_has() {
	local -a o=()
	if [ "${REG_TLS[$1]}" = yes ]; then o+=(--cert-dir "$REG_CERT_DIR"); else o+=(--tls-verify=false); fi
	[ -z "${REG_CREDS[$1]}" ] || o+=(--creds "${REG_CREDS[$1]}")
	skopeo inspect --raw "${o[@]}" "docker://${REG_ADDR[$1]}/$2:$3" >/dev/null 2>&1
}

# pull_opts NAME: PULL_OPTS, the sdpod options that reach registry NAME:
# --tls-verify=false for plain HTTP, --cert-dir for HTTPS (no credentials).
pull_opts() {
	if [ "${REG_TLS[$1]}" = yes ]; then
		PULL_OPTS=(--cert-dir="$REG_CERT_DIR")
	else
		PULL_OPTS=(--tls-verify=false)
	fi
}

# ---------------------------------------------------------------------------
# Images (OCI layouts under $T/img; use_real_images must have run).
# ---------------------------------------------------------------------------

# build_busybox: $IMG/rootfs and the single-arch busybox layout $IMG/oci
# (tag latest), as busybox_layout; $BB_MANIFEST is its manifest digest.
build_busybox() {
	busybox_layout
	BB_MANIFEST=$(oci_manifest_digest "$IMG/oci")
}

# build_variant LABEL: $IMG/LABEL, busybox with LABEL in its config (another
# image, the same layer); prints its manifest digest.
build_variant() {
	oci_variant "$IMG/oci" "$IMG/$1" "$1"
}

# build_index: $IMG/index (tag latest), a two-platform image index:
# linux/amd64 is the busybox image, linux/arm64 the same layer with a
# config that says arm64. Sets IDX_DIGEST, IDX_AMD64, IDX_ARM64 (manifest
# digests).
build_index() {
	local arm="$IMG/idx-arm64" idx="$IMG/index" index sa sb
	rm -rf -- "$arm" "$idx"
	cp -a -- "$IMG/oci" "$arm"
	IDX_ARM64=$(oci_rewrite "$arm" '.architecture = "arm64" | .config.Labels["sdpod.test.platform"] = "arm64"' .)
	IDX_AMD64=$(oci_manifest_digest "$IMG/oci")
	mkdir -p "$idx/blobs/sha256"
	cp -n -- "$IMG/oci/blobs/sha256/"* "$arm/blobs/sha256/"* "$idx/blobs/sha256/"
	printf '{"imageLayoutVersion":"1.0.0"}' >"$idx/oci-layout"
	sa=$(stat -c %s "$(oci_blob "$idx" "$IDX_AMD64")")
	sb=$(stat -c %s "$(oci_blob "$idx" "$IDX_ARM64")")
	index=$(jq -nc --arg a "$IDX_AMD64" --argjson sa "$sa" --arg b "$IDX_ARM64" --argjson sb "$sb" \
		'{schemaVersion: 2, mediaType: "'"$MT_OCI_INDEX"'", manifests: [
		  {mediaType: "'"$MT_OCI_MANIFEST"'", digest: $a, size: $sa, platform: {os: "linux", architecture: "amd64"}},
		  {mediaType: "'"$MT_OCI_MANIFEST"'", digest: $b, size: $sb, platform: {os: "linux", architecture: "arm64"}}]}')
	IDX_DIGEST=$(oci_put_json "$idx" "$index")
	jq -nc --arg d "$IDX_DIGEST" --argjson s "${#index}" \
		'{schemaVersion: 2, manifests: [{mediaType: "'"$MT_OCI_INDEX"'", digest: $d, size: $s,
		  annotations: {"org.opencontainers.image.ref.name": "latest"}}]}' >"$idx/index.json"
	rm -rf -- "$arm"
}

# build_whiteout: $IMG/wo (tag latest), images.sh's two-layer image whose
# second layer removes /etc/removed-file (and replaces /opaque-dir) with
# whiteouts; $WO_MANIFEST is its manifest digest.
build_whiteout() {
	img_whiteout_layout "$IMG/wo" latest "$IMG/rootfs"
	WO_MANIFEST=$(oci_manifest_digest "$IMG/wo")
}

# build_big MB [NAME]: $IMG/NAME (default big; tag latest): the busybox
# layer, then an uncompressed layer with one file /big/random of MB MiB of
# random data. Sets BIG_MANIFEST, BIG_LAYER (the big layer's digest) and
# BIG_SIZE (its size in bytes).
build_big() {
	local mb=$1 name=${2:-big} src="$T/big-src" bb
	rm -rf -- "$src" "${IMG:?}/$name"
	mkdir -p "$src/big"
	head -c "$((mb << 20))" /dev/urandom >"$src/big/random"
	tar --create --file="$T/big.tar" --format=gnu --numeric-owner --owner=0 --group=0 \
		--mtime=@1577836800 -C "$src" big
	rm -rf -- "$src"
	# The busybox layer of $IMG/oci (gzip) as a file oci_layout_new takes.
	bb=$(jq -r '.layers[0].digest' "$(oci_blob "$IMG/oci" "$(oci_manifest_digest "$IMG/oci")")")
	cp -- "$(oci_blob "$IMG/oci" "$bb")" "$T/bb-layer.tar.gz"
	oci_layout_new "$IMG/$name" "$(host_arch)" "$T/bb-layer.tar.gz" "$T/big.tar"
	rm -f -- "$T/big.tar" "$T/bb-layer.tar.gz"
	BIG_MANIFEST=$(oci_manifest_digest "$IMG/$name")
	BIG_LAYER=$(jq -r '.layers[1].digest' "$(oci_blob "$IMG/$name" "$BIG_MANIFEST")")
	BIG_SIZE=$(jq -r '.layers[1].size' "$(oci_blob "$IMG/$name" "$BIG_MANIFEST")")
}

# ---------------------------------------------------------------------------
# The store, seen from a test.
# ---------------------------------------------------------------------------

# store_has_blob DIGEST [DATA]: the store holds the blob.
store_has_blob() {
	[ -e "${2:-$DATA}/images/blobs/sha256/${1#sha256:}" ]
}

# store_has_image ID [DATA]: a record and a tree of the image.
store_has_image() {
	local data=${2:-$DATA} hex=${1#sha256:}
	[ -e "$data/images/db/$hex.json" ] || [ -e "$data/tree/$hex" ]
}

# store_files_with HEX [DATA]: every path in the data directory whose name
# holds HEX (a blob, a tree, a record, a partial download), one per line.
store_files_with() {
	find "${2:-$DATA}" -name "*$1*" 2>/dev/null || true
}

# store_no_images WHAT [DATA]: no record, no blob, no tree (three checks).
store_no_images() {
	local data=${2:-$DATA}
	assert_eq "$1: no image record" "" "$(ls -A "$data/images/db" 2>/dev/null || true)"
	assert_eq "$1: no blob" "" "$(ls -A "$data/images/blobs/sha256" 2>/dev/null || true)"
	assert_eq "$1: no tree" "" "$(ls -A "$data/tree" 2>/dev/null || true)"
}

# ---------------------------------------------------------------------------
# A throttling TCP proxy: what goes from the registry to the client is sent
# at RATE bytes a second, counted in $T/reg/proxy-NAME.bytes.
# ---------------------------------------------------------------------------

_proxy_py() {
	cat >"$REG_ROOT/proxy.py" <<'EOF'
import os, socket, sys, threading, time
upstream_host, upstream_port = sys.argv[1].rsplit(":", 1)
rate, count_file, port_file = int(sys.argv[2]), sys.argv[3], sys.argv[4]
lock = threading.Lock()
total = [0]
def publish():
    tmp = count_file + ".new"
    with open(tmp, "w") as f:
        f.write(str(total[0]))
    os.replace(tmp, count_file)
def pump(src, dst, throttle):
    start, sent = time.monotonic(), 0
    try:
        while True:
            data = src.recv(16384 if throttle else 65536)
            if not data:
                break
            dst.sendall(data)
            if throttle:
                sent += len(data)
                with lock:
                    total[0] += len(data)
                    publish()
                ahead = sent / rate - (time.monotonic() - start)
                if ahead > 0:
                    time.sleep(ahead)
    except OSError:
        pass
    for s in (src, dst):
        try:
            s.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
def serve(client):
    try:
        up = socket.create_connection((upstream_host, int(upstream_port)))
    except OSError:
        client.close()
        return
    threading.Thread(target=pump, args=(client, up, False), daemon=True).start()
    threading.Thread(target=pump, args=(up, client, True), daemon=True).start()
ls = socket.socket()
ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
ls.bind(("127.0.0.1", 0))
ls.listen(16)
with lock:
    publish()
with open(port_file + ".new", "w") as f:
    f.write(str(ls.getsockname()[1]))
os.replace(port_file + ".new", port_file)
while True:
    c, _ = ls.accept()
    serve(c)
EOF
}

# proxy_start NAME REGISTRY RATE: a proxy in front of registry REGISTRY;
# PROXY_ADDR[NAME] is its address, which sdpod is given instead of the
# registry's (what it pulls is then named with the proxy's port). RATE in
# bytes per second, for what the registry sends.
proxy_start() {
	local name=$1 reg=$2 rate=$3 i
	[ -f "$REG_ROOT/proxy.py" ] || _proxy_py
	rm -f "$REG_ROOT/proxy-$name.port"
	python3 "$REG_ROOT/proxy.py" "${REG_ADDR[$reg]}" "$rate" "$REG_ROOT/proxy-$name.bytes" \
		"$REG_ROOT/proxy-$name.port" </dev/null >"$REG_ROOT/proxy-$name.log" 2>&1 &
	PROXY_PID[$name]=$!
	for i in $(seq 100); do
		[ -s "$REG_ROOT/proxy-$name.port" ] && break
		sleep 0.05
	done
	[ -s "$REG_ROOT/proxy-$name.port" ] || die "proxy $name did not start: $(cat "$REG_ROOT/proxy-$name.log")"
	PROXY_ADDR[$name]="127.0.0.1:$(cat "$REG_ROOT/proxy-$name.port")"
	# The proxy is a registry too, as far as the functions above go (the
	# access log is the real registry's).
	REG_TLS[$name]=${REG_TLS[$reg]}
	REG_CREDS[$name]=${REG_CREDS[$reg]}
	REG_ADDR[$name]=${PROXY_ADDR[$name]}
}

# proxy_bytes NAME: bytes it has passed from the registry to clients.
proxy_bytes() {
	cat "$REG_ROOT/proxy-$1.bytes" 2>/dev/null || echo 0
}

# proxy_passed NAME BYTES: true once it has passed at least BYTES.
proxy_passed() {
	[ "$(proxy_bytes "$1")" -ge "$2" ]
}

proxy_stop() {
	local pid=${PROXY_PID[$1]:-}
	[ -n "$pid" ] || return 0
	kill -TERM "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
	PROXY_PID[$1]=
}

# ---------------------------------------------------------------------------
# Signatures: a GPG key, signed pushes, lookaside, policies.
# ---------------------------------------------------------------------------

# gpg_setup: $GPG_HOME, a private GNUPGHOME (its agent is killed at exit).
# It is not exported: sdpod must verify with the key file of the policy,
# not with a keyring it happens to find. $SIGSTORE is the lookaside
# directory, $REGISTRIES_D a registries.d that names it for every registry
# of this test (default-docker: lookaside and lookaside-staging).
gpg_setup() {
	require_tool gpg gnupg
	require_tool gpgconf gnupg
	GPG_HOME="$REG_ROOT/gnupg"
	mkdir -p "$REG_ROOT"
	mkdir -m 700 "$GPG_HOME"
	SIGSTORE="$REG_ROOT/sigstore"
	REGISTRIES_D="$REG_ROOT/registries.d"
	mkdir -p "$SIGSTORE" "$REGISTRIES_D"
	printf '%s\n' "default-docker:" "  lookaside: file://$SIGSTORE" "  lookaside-staging: file://$SIGSTORE" \
		>"$REGISTRIES_D/default.yaml"
}

# gpg_new_key VAR NAME: a new signing key (ed25519, no passphrase); VAR
# gets its fingerprint, $REG_ROOT/NAME.gpg its public key (binary, as
# keyPath wants it).
gpg_new_key() {
	local var=$1 name=$2 fpr
	GNUPGHOME="$GPG_HOME" gpg --batch --quiet --passphrase '' \
		--quick-gen-key "sdpod test $name <$name@sdpod.invalid>" ed25519 sign never >/dev/null 2>&1 ||
		die "gpg: cannot make a key"
	fpr=$(GNUPGHOME="$GPG_HOME" gpg --batch --with-colons --list-keys "$name@sdpod.invalid" 2>/dev/null |
		awk -F: '$1 == "fpr" { print $10; exit }')
	[ -n "$fpr" ] || die "gpg: no fingerprint for the key $name"
	GNUPGHOME="$GPG_HOME" gpg --batch --export "$fpr" >"$REG_ROOT/$name.gpg" 2>/dev/null
	printf -v "$var" '%s' "$fpr"
}

# sign_push NAME FPR SRC REPO:TAG [SKOPEO-COPY-OPTIONS...]: registry_push,
# signed by key FPR ("simple signing"); the signature goes to $SIGSTORE.
sign_push() {
	local name=$1 fpr=$2 src=$3 dst=$4
	shift 4
	GNUPGHOME="$GPG_HOME" registry_push "$name" "$src" "$dst" --registries.d "$REGISTRIES_D" \
		--sign-by "$fpr" "$@"
}

# sig_dir REPO DIGEST: the lookaside directory of an image's signatures
# (for a registry on 127.0.0.1: the repository path without the host).
sig_dir() {
	echo "$SIGSTORE/$1@sha256=${2#sha256:}"
}

# write_policy FILE JSON: a policy.json.
write_policy() {
	printf '%s\n' "$2" >"$1"
	jq -e . "$1" >/dev/null || die "write_policy: not JSON: $2"
}

# policy_signed_by KEYFILE: the requirement list [signedBy KEYFILE].
policy_signed_by() {
	jq -nc --arg k "$1" '[{type: "signedBy", keyType: "GPGKeys", keyPath: $k}]'
}

# ---------------------------------------------------------------------------
# The end of a test.
# ---------------------------------------------------------------------------

# registry_leak_check: stops every registry and proxy (and the GPG agent),
# then checks that no process is left whose command line names $T: no
# registry, no proxy, no gpg-agent (ours or one sdpod made), no sdpod.
registry_leak_check() {
	local name pid left=
	for name in "${!PROXY_PID[@]}"; do proxy_stop "$name"; done
	for name in "${!REG_PID[@]}"; do registry_stop "$name"; done
	if [ -n "$GPG_HOME" ] && [ -d "$GPG_HOME" ]; then
		gpgconf --homedir "$GPG_HOME" --kill all >/dev/null 2>&1 || true
		sleep 0.2
	fi
	local cmd
	for pid in /proc/[0-9]*; do
		pid=${pid#/proc/}
		cmd=$(tr '\0' ' ' 2>/dev/null <"/proc/$pid/cmdline") || continue
		[[ "$cmd" == *"$T"* ]] || continue
		# This shell's own subshells run the test script, whose path is not in $T.
		left+="$pid: ${cmd:0:200}"$'\n'
	done
	assert_eq "leak: no process left that names the test's directory" "" "${left%$'\n'}"
}
