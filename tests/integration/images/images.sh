# shellcheck shell=bash
# "A && B || die" is used on purpose: die if any step of the chain fails.
# shellcheck disable=SC2015
#
# images.sh - build real container test images offline, with real tools.
#
# Source this file from integration tests and benchmarks:
#
#     . tests/integration/images/images.sh
#     img_busybox_rootfs "$tmp/rootfs"
#     img_oci_layout     "$tmp/oci" latest "$tmp/rootfs"
#     img_oci_archive    "$tmp/oci" latest "$tmp/busybox.oci.tar"
#     img_docker_archive "$tmp/oci" latest "$tmp/busybox.docker.tar" busybox:latest
#     img_aci            "$tmp/rootfs" "$tmp/busybox.aci" example.com/busybox gzip
#
# Functions (each documented where it is defined):
#     img_busybox_rootfs  DIR
#     img_oci_layout      LAYOUT TAG ROOTFS
#     img_oci_archive     LAYOUT TAG OUT
#     img_docker_archive  LAYOUT TAG OUT REF
#     img_aci             ROOTFS OUT NAME [gzip|xz|zstd|none]
#     img_whiteout_layout LAYOUT TAG ROOTFS
#     img_oci_layout_zstd LAYOUT TAG ROOTFS
#     img_layer_list      LAYOUT TAG INDEX   (prints a layer's tar members)
#
# Tools used (Debian packages): busybox-static, umoci, skopeo, tar, gzip,
# xz-utils, zstd, jq.
#
# Conventions:
#   * Every function takes explicit output paths and writes only there, plus
#     a private scratch directory from mktemp (under $TMPDIR) that is removed
#     when the function returns.  One exception is outside our control:
#     skopeo, run as root, keeps a blob-info cache in /var/lib/containers/cache.
#   * Every function body runs in a subshell "( ... )" so that `set -euo
#     pipefail`, the EXIT trap that removes scratch space, and `exit` on error
#     stay local to the function, whatever the caller's shell options are.
#     Critical steps still use an explicit `|| _img_die ...` because bash
#     ignores `set -e` inside a function that is called as `if f` or `f || x`.
#   * On failure a function prints "images.sh: <function>: <why>" to stderr
#     and returns non-zero.
#   * Timestamps are pinned to $SOURCE_DATE_EPOCH (default 2020-01-01) so
#     that the same inputs give the same files and, for the umoci-built
#     images, the same digests.

# Pinned time for file mtimes, image "created" fields and history entries.
IMG_EPOCH="${SOURCE_DATE_EPOCH:-1577836800}"

# The statically linked busybox from Debian's busybox-static package.  A
# dynamically linked one would not run inside a rootfs without libc.
IMG_BUSYBOX="${IMG_BUSYBOX:-/bin/busybox}"

# ---------------------------------------------------------------------------
# Internal helpers (prefixed with _img_).
# ---------------------------------------------------------------------------

# _img_die MESSAGE...: report which image function failed and why, then leave
# the function's subshell with status 1.
_img_die() {
	local fn="${FUNCNAME[1]:-images.sh}" i
	# Name the public img_* function, not an internal helper.
	for ((i = 1; i < ${#FUNCNAME[@]}; i++)); do
		case "${FUNCNAME[i]}" in img_*) fn="${FUNCNAME[i]}"; break ;; esac
	done
	echo "images.sh: $fn: $*" >&2
	exit 1
}

# _img_need CMD...: fail early, with the package to install, if a tool is missing.
_img_need() {
	local c
	for c in "$@"; do
		command -v "$c" >/dev/null 2>&1 ||
			_img_die "required tool '$c' not found (apt-get install -y $(_img_pkg_of "$c"))"
	done
}

_img_pkg_of() {
	case "$1" in
	xz) echo xz-utils ;;
	busybox) echo busybox-static ;;
	*) echo "$1" ;;
	esac
}

# _img_mkscratch: create a private scratch directory in $_img_scratch_dir and
# remove it when the calling function's subshell exits.  It sets a variable
# instead of printing the path because `dir=$(...)` would run it in yet
# another subshell, whose EXIT trap would delete the directory at once.
_img_mkscratch() {
	_img_scratch_dir=$(mktemp -d "${TMPDIR:-/tmp}/sdpod-img.XXXXXX") ||
		_img_die "mktemp failed"
	# shellcheck disable=SC2064 # expand now, quoted for the shell
	trap "rm -rf -- $(printf %q "$_img_scratch_dir")" EXIT
}

# _img_write FILE: write stdin to FILE with mode 0644 (used with heredocs).
_img_write() {
	cat >"$1" && chmod 0644 "$1" || _img_die "cannot write '$1'"
}

# _img_rfc3339: the pinned epoch as an RFC 3339 UTC timestamp (for umoci).
_img_rfc3339() {
	date -u -d "@$IMG_EPOCH" +%Y-%m-%dT%H:%M:%SZ
}

# _img_no_colon WHAT PATH: skopeo's "transport:path:ref" syntax cannot carry
# a path that contains ':'.
_img_no_colon() {
	case "$2" in *:*) _img_die "$1 '$2' must not contain ':' (skopeo image syntax)" ;; esac
}

# _img_check_rootfs ROOTFS: the source tree must be an existing directory.
_img_check_rootfs() {
	[ -d "$1" ] || _img_die "rootfs '$1' is not a directory"
}

# _img_pin_times DIR: set every mtime in DIR (not following symlinks) to the
# pinned epoch, so that tar/umoci layers do not depend on when we ran.
_img_pin_times() {
	find "$1" -exec touch -h -d "@$IMG_EPOCH" {} + ||
		_img_die "cannot pin mtimes under '$1'"
}

# _img_layout_init LAYOUT: make sure LAYOUT is an OCI image layout.  An
# existing layout is reused (so several tags can share one layout); an
# existing non-layout path is refused rather than overwritten.
_img_layout_init() {
	local layout="$1"
	if [ -f "$layout/oci-layout" ]; then
		return 0
	fi
	if [ -e "$layout" ]; then
		# umoci init refuses existing paths, even empty directories.
		rmdir -- "$layout" 2>/dev/null ||
			_img_die "'$layout' exists and is not an OCI layout; refusing to overwrite"
	fi
	umoci init --layout "$layout" || _img_die "umoci init --layout '$layout' failed"
}

# _img_umoci_unpack LAYOUT TAG BUNDLE: unpack TAG into a fresh runtime bundle.
# We run as root, so umoci keeps file ownership as it is in the image and no
# --rootless is needed.
_img_umoci_unpack() {
	[ "$(id -u)" = 0 ] || _img_die "must run as root (umoci unpack without --rootless)"
	umoci unpack --image "$1:$2" "$3" >/dev/null ||
		_img_die "umoci unpack --image '$1:$2' '$3' failed"
}

# _img_umoci_repack LAYOUT TAG BUNDLE WHY: turn the bundle's changes since
# unpack into a new gzip layer on top of TAG.  The history entry is dated
# with the pinned epoch so that digests are reproducible.
_img_umoci_repack() {
	umoci repack --image "$1:$2" \
		--history.created "$(_img_rfc3339)" \
		--history.created_by "images.sh: $4" \
		"$3" || _img_die "umoci repack --image '$1:$2' '$3' failed"
}

# _img_umoci_config LAYOUT TAG: the runtime configuration every test image
# carries.  Tests check these exact values through their image parsers.
_img_umoci_config() {
	umoci config --image "$1:$2" \
		--created "$(_img_rfc3339)" \
		--history.created "$(_img_rfc3339)" \
		--history.created_by "images.sh: umoci config" \
		--author "sdpod test suite" \
		--os linux --architecture amd64 \
		--clear config.entrypoint --clear config.cmd --clear config.env \
		--config.entrypoint /bin/sh --config.entrypoint -c \
		--config.cmd "echo hello from busybox" \
		--config.env PATH=/usr/sbin:/usr/bin:/sbin:/bin \
		--config.env GREETING=hi \
		--config.workingdir /home/app \
		--config.user 1000:1000 \
		--config.exposedports 8080/tcp \
		--config.label org.opencontainers.image.title=sdpod-test-busybox \
		--config.label org.opencontainers.image.authors="sdpod test suite" ||
		_img_die "umoci config --image '$1:$2' failed"
}

# _img_manifest_json LAYOUT TAG: print the image manifest that TAG points to.
_img_manifest_json() {
	local digest
	digest=$(jq -r --arg tag "$2" \
		'.manifests[] | select(.annotations["org.opencontainers.image.ref.name"] == $tag) | .digest' \
		"$1/index.json") || _img_die "cannot read '$1/index.json'"
	[ -n "$digest" ] || _img_die "tag '$2' not found in '$1/index.json'"
	cat "$1/blobs/${digest%%:*}/${digest#*:}" || _img_die "manifest blob $digest missing"
}

# img_layer_list LAYOUT TAG INDEX: list the tar members of layer INDEX
# (0-based) of TAG, decompressing according to the layer's media type.
# Public because tests want to look inside layers too.
img_layer_list() (
	set -euo pipefail
	[ $# -eq 3 ] || _img_die "usage: img_layer_list LAYOUT TAG INDEX"
	_img_need jq tar
	local manifest mt digest blob
	manifest=$(_img_manifest_json "$1" "$2") || exit 1 # already reported
	mt=$(jq -r --argjson i "$3" '.layers[$i].mediaType // empty' <<<"$manifest") &&
		digest=$(jq -r --argjson i "$3" '.layers[$i].digest // empty' <<<"$manifest") ||
		_img_die "cannot parse the manifest of '$1:$2'"
	[ -n "$digest" ] || _img_die "'$1:$2' has no layer $3"
	blob="$1/blobs/${digest%%:*}/${digest#*:}"
	case "$mt" in
	*tar+gzip) tar -tzf "$blob" ;;
	*tar+zstd) tar --zstd -tf "$blob" ;;
	*tar) tar -tf "$blob" ;;
	*) _img_die "unknown layer media type '$mt'" ;;
	esac || _img_die "cannot list layer $3 ($blob)"
)

# ---------------------------------------------------------------------------
# 1. img_busybox_rootfs DIR
# ---------------------------------------------------------------------------

# A minimal rootfs: static busybox, one relative symlink per applet in /bin,
# users root and app (1000:1000), and the directories programs expect.
# DIR must not exist or be empty: we never delete what we did not create.
img_busybox_rootfs() (
	set -euo pipefail
	[ $# -eq 1 ] || _img_die "usage: img_busybox_rootfs DIR"
	local dir="$1" applet applets
	_img_need find touch install

	[ -x "$IMG_BUSYBOX" ] ||
		_img_die "'$IMG_BUSYBOX' missing (apt-get install -y busybox-static)"
	# ldd exits 0 only for dynamic executables.
	if ldd "$IMG_BUSYBOX" >/dev/null 2>&1; then
		_img_die "'$IMG_BUSYBOX' is dynamically linked; install busybox-static"
	fi
	if [ -e "$dir" ] && [ -n "$(ls -A -- "$dir")" ]; then
		_img_die "'$dir' exists and is not empty"
	fi

	mkdir -p -- "$dir" || _img_die "cannot create '$dir'"
	mkdir -p -- "$dir"/{bin,sbin,usr/bin,usr/sbin,etc,root,home/app,tmp,var/empty,proc,sys,dev} ||
		_img_die "cannot create directories in '$dir'"
	install -m 0755 "$IMG_BUSYBOX" "$dir/bin/busybox" || _img_die "cannot copy busybox"

	# Relative links ("busybox", not "/bin/busybox") resolve the same inside
	# the container and when the tree is inspected from the host.
	applets=$("$dir/bin/busybox" --list) || _img_die "busybox --list failed"
	for applet in $applets; do
		case "$applet" in busybox | */*) continue ;; esac
		ln -s busybox "$dir/bin/$applet" || _img_die "cannot link applet '$applet'"
	done

	_img_write "$dir/etc/passwd" <<-'EOF'
		root:x:0:0:root:/root:/bin/sh
		app:x:1000:1000:app:/home/app:/bin/sh
		nobody:x:65534:65534:nobody:/var/empty:/bin/false
	EOF
	_img_write "$dir/etc/group" <<-'EOF'
		root:x:0:
		app:x:1000:
		nogroup:x:65534:
	EOF
	_img_write "$dir/etc/os-release" <<-'EOF'
		NAME="sdpod test busybox"
		ID=sdpod-test-busybox
		VERSION_ID=1
		PRETTY_NAME="sdpod test busybox rootfs"
	EOF

	# Explicit modes, so the result does not depend on the caller's umask.
	find "$dir" -type d -exec chmod 0755 {} + &&
		chmod 0700 "$dir/root" &&
		chmod 1777 "$dir/tmp" &&
		chown -hR 0:0 "$dir" &&
		chown 1000:1000 "$dir/home/app" ||
		_img_die "setting modes and owners in '$dir' failed"

	# Sanity: the applets the tests rely on exist.
	for applet in sh true false echo cat ls sleep env id printf test; do
		[ -L "$dir/bin/$applet" ] || _img_die "busybox has no '$applet' applet"
	done
	_img_pin_times "$dir"
)

# ---------------------------------------------------------------------------
# 2. img_oci_layout LAYOUT TAG ROOTFS
# ---------------------------------------------------------------------------

# An OCI image layout (umoci, gzip layer) whose TAG holds ROOTFS as a single
# layer and the standard test config (see _img_umoci_config).  LAYOUT may be
# an existing layout; TAG is then added (or replaced).
img_oci_layout() (
	set -euo pipefail
	[ $# -eq 3 ] || _img_die "usage: img_oci_layout LAYOUT TAG ROOTFS"
	local layout="$1" tag="$2" rootfs="$3" bundle
	_img_need umoci cp
	_img_check_rootfs "$rootfs"
	_img_mkscratch
	bundle="$_img_scratch_dir/bundle"

	_img_layout_init "$layout"
	umoci new --image "$layout:$tag" || _img_die "umoci new --image '$layout:$tag' failed"

	# umoci only knows how to make a layer from the difference between an
	# unpacked bundle and the image, so unpack the empty image, fill its
	# rootfs and repack.  cp -a keeps owners, modes, mtimes and symlinks.
	_img_umoci_unpack "$layout" "$tag" "$bundle"
	cp -a -- "$rootfs/." "$bundle/rootfs/" || _img_die "copying '$rootfs' into the bundle failed"
	_img_umoci_repack "$layout" "$tag" "$bundle" "add rootfs"

	_img_umoci_config "$layout" "$tag"
	# new/repack/config each leave the previous manifest and config behind.
	umoci gc --layout "$layout" || _img_die "umoci gc --layout '$layout' failed"
)

# ---------------------------------------------------------------------------
# 3. img_oci_archive LAYOUT TAG OUT
# ---------------------------------------------------------------------------

# An OCI layout in a tar ("oci-archive").  The tag is kept as the
# org.opencontainers.image.ref.name annotation inside the archive.
img_oci_archive() (
	set -euo pipefail
	[ $# -eq 3 ] || _img_die "usage: img_oci_archive LAYOUT TAG OUT"
	local layout="$1" tag="$2" out="$3"
	_img_need skopeo
	_img_no_colon LAYOUT "$layout"
	_img_no_colon OUT "$out"
	[ ! -d "$out" ] || _img_die "'$out' is a directory"
	_img_mkscratch

	rm -f -- "$out" || _img_die "cannot remove the old '$out'"
	# --insecure-policy: local test images carry no signatures; do not depend
	# on /etc/containers/policy.json.  --tmpdir keeps skopeo's staging copy in
	# our scratch directory.
	skopeo --insecure-policy --tmpdir "$_img_scratch_dir" copy -q \
		"oci:$layout:$tag" "oci-archive:$out:$tag" || {
		rm -f -- "$out"
		_img_die "skopeo copy oci:$layout:$tag oci-archive:$out:$tag failed"
	}
)

# ---------------------------------------------------------------------------
# 4. img_docker_archive LAYOUT TAG OUT REF
# ---------------------------------------------------------------------------

# The `docker save` format: manifest.json, the config as <hex>.json and one
# <hex>.tar per layer (skopeo stores them uncompressed), with REF (for example
# busybox:latest) recorded in manifest.json's RepoTags.
img_docker_archive() (
	set -euo pipefail
	[ $# -eq 4 ] || _img_die "usage: img_docker_archive LAYOUT TAG OUT REF"
	local layout="$1" tag="$2" out="$3" ref="$4"
	_img_need skopeo
	_img_no_colon LAYOUT "$layout"
	_img_no_colon OUT "$out"
	[ ! -d "$out" ] || _img_die "'$out' is a directory"
	_img_mkscratch

	# skopeo's docker-archive writer will not add to an existing file.
	rm -f -- "$out" || _img_die "cannot remove the old '$out'"
	skopeo --insecure-policy --tmpdir "$_img_scratch_dir" copy -q \
		"oci:$layout:$tag" "docker-archive:$out:$ref" || {
		rm -f -- "$out"
		_img_die "skopeo copy oci:$layout:$tag docker-archive:$out:$ref failed"
	}
)

# ---------------------------------------------------------------------------
# 5. img_aci ROOTFS OUT NAME [gzip|xz|zstd|none]
# ---------------------------------------------------------------------------

# An appc ACI: a tar whose first member is the image manifest, followed by
# rootfs/ holding ROOTFS.  Compression defaults to gzip, as `actool build`
# does.  NAME must be an appc AC identifier (e.g. example.com/busybox); since
# that alphabet needs no JSON escaping, the manifest is written literally.
img_aci() (
	set -euo pipefail
	[ $# -eq 3 ] || [ $# -eq 4 ] ||
		_img_die "usage: img_aci ROOTFS OUT NAME [gzip|xz|zstd|none]"
	local rootfs="$1" out="$2" name="$3" comp="${4:-gzip}" stage
	local -a compress
	_img_need tar cp
	_img_check_rootfs "$rootfs"
	[ ! -d "$out" ] || _img_die "'$out' is a directory"
	[[ "$name" =~ ^[a-z0-9]+([-._~/][a-z0-9]+)*$ ]] ||
		_img_die "'$name' is not an appc AC identifier"
	case "$comp" in
	gzip) _img_need gzip; compress=(gzip -n -c) ;; # -n: no name/time in header
	xz) _img_need xz; compress=(xz -T1 -c) ;;       # -T1: reproducible output
	zstd) _img_need zstd; compress=(zstd -q -c) ;;
	none) compress=(cat) ;;
	*) _img_die "unknown compression '$comp' (gzip|xz|zstd|none)" ;;
	esac
	_img_mkscratch
	stage="$_img_scratch_dir/aci"
	mkdir -p -- "$stage/rootfs" || _img_die "cannot create '$stage/rootfs'"

	cat >"$stage/manifest" <<-EOF || _img_die "cannot write the manifest"
		{
		    "acKind": "ImageManifest",
		    "acVersion": "0.8.11",
		    "name": "$name",
		    "labels": [
		        {"name": "version", "value": "1.0.0"},
		        {"name": "os", "value": "linux"},
		        {"name": "arch", "value": "amd64"}
		    ],
		    "app": {
		        "exec": ["/bin/sh", "-c", "echo hello from aci"],
		        "user": "0",
		        "group": "0",
		        "workingDirectory": "/",
		        "environment": [
		            {"name": "PATH", "value": "/usr/sbin:/usr/bin:/sbin:/bin"},
		            {"name": "GREETING", "value": "hi"}
		        ],
		        "ports": [
		            {"name": "http", "protocol": "tcp", "port": 8080}
		        ]
		    }
		}
	EOF
	chmod 0644 "$stage/manifest" &&
		touch -d "@$IMG_EPOCH" "$stage/manifest" ||
		_img_die "cannot set the manifest's mode and mtime"
	cp -a -- "$rootfs/." "$stage/rootfs/" || _img_die "copying '$rootfs' failed"

	# Naming "manifest" before "rootfs" on the command line makes it the
	# first member; --sort=name only orders directory contents.  GNU format
	# keeps the archive free of pax headers that embed pids or atimes.
	tar --create --file=- --format=gnu --sort=name --numeric-owner \
		-C "$stage" manifest rootfs | "${compress[@]}" >"$out" || {
		rm -f -- "$out"
		_img_die "creating '$out' failed"
	}
)

# ---------------------------------------------------------------------------
# 6. img_whiteout_layout LAYOUT TAG ROOTFS
# ---------------------------------------------------------------------------

# A two-layer OCI image for testing whiteout handling:
#   layer 1: ROOTFS + /etc/removed-file ("gone"), /opaque-dir/{old-a,old-b},
#            /keep-dir/kept
#   layer 2: deletes /etc/removed-file, replaces /opaque-dir with one that
#            holds only new-c, adds /etc/added-in-layer2
# umoci 0.4.7 writes deletions as individual ".wh.<name>" entries; it never
# writes the opaque marker ".wh..wh..opq", not even when a directory is
# replaced wholesale.  We check the entries are there and fail otherwise.
img_whiteout_layout() (
	set -euo pipefail
	[ $# -eq 3 ] || _img_die "usage: img_whiteout_layout LAYOUT TAG ROOTFS"
	local layout="$1" tag="$2" rootfs="$3" bundle root members
	_img_need umoci cp jq tar
	_img_check_rootfs "$rootfs"
	_img_mkscratch

	_img_layout_init "$layout"
	umoci new --image "$layout:$tag" || _img_die "umoci new --image '$layout:$tag' failed"

	# Layer 1.
	bundle="$_img_scratch_dir/bundle1"
	_img_umoci_unpack "$layout" "$tag" "$bundle"
	cp -a -- "$rootfs/." "$bundle/rootfs/" || _img_die "copying '$rootfs' into the bundle failed"
	root="$bundle/rootfs"
	mkdir -p "$root/etc" "$root/opaque-dir" "$root/keep-dir" &&
		chmod 0755 "$root/opaque-dir" "$root/keep-dir" &&
		echo gone | _img_write "$root/etc/removed-file" &&
		echo old-a | _img_write "$root/opaque-dir/old-a" &&
		echo old-b | _img_write "$root/opaque-dir/old-b" &&
		echo kept | _img_write "$root/keep-dir/kept" ||
		_img_die "populating layer 1 failed"
	_img_pin_times "$bundle/rootfs"
	_img_umoci_repack "$layout" "$tag" "$bundle" "layer 1: rootfs and whiteout targets"

	# Layer 2: a fresh unpack of layer 1, changed, then repacked; umoci
	# computes the diff and turns deletions into whiteouts.
	bundle="$_img_scratch_dir/bundle2"
	_img_umoci_unpack "$layout" "$tag" "$bundle"
	root="$bundle/rootfs"
	rm -f "$root/etc/removed-file" &&
		rm -rf "$root/opaque-dir" &&
		mkdir -m 0755 "$root/opaque-dir" &&
		echo new-c | _img_write "$root/opaque-dir/new-c" &&
		echo added | _img_write "$root/etc/added-in-layer2" ||
		_img_die "changing the rootfs for layer 2 failed"
	# Re-pin what we touched (the root too: rm/mkdir changed its mtime), so
	# layer 2 is reproducible.
	(cd "$root" && touch -h -d "@$IMG_EPOCH" . etc etc/added-in-layer2 opaque-dir opaque-dir/new-c) ||
		_img_die "pinning layer 2 mtimes failed"
	_img_umoci_repack "$layout" "$tag" "$bundle" "layer 2: whiteouts"

	_img_umoci_config "$layout" "$tag"
	umoci gc --layout "$layout" || _img_die "umoci gc --layout '$layout' failed"

	# Prove the whiteouts really are in layer 2 (index 1).
	members=$(img_layer_list "$layout" "$tag" 1) || _img_die "cannot list layer 2"
	grep -qx 'etc/\.wh\.removed-file' <<<"$members" ||
		_img_die "layer 2 lacks etc/.wh.removed-file; members: $members"
	grep -qE '^opaque-dir/\.wh\.(\.wh\.\.opq|old-a)$' <<<"$members" ||
		_img_die "layer 2 lacks a whiteout for opaque-dir; members: $members"
	grep -qx 'opaque-dir/new-c' <<<"$members" ||
		_img_die "layer 2 lacks opaque-dir/new-c; members: $members"
)

# ---------------------------------------------------------------------------
# 7. img_oci_layout_zstd LAYOUT TAG ROOTFS
# ---------------------------------------------------------------------------

# Same image as img_oci_layout, but the layer is zstd-compressed (media type
# application/vnd.oci.image.layer.v1.tar+zstd).  umoci 0.4.7 can only write
# gzip layers, so the image is built with umoci in scratch space and skopeo
# (1.9.3 can recompress) copies it into LAYOUT.  Config and diff_ids are
# unchanged; only the layer blob and the manifest differ.
img_oci_layout_zstd() (
	set -euo pipefail
	[ $# -eq 3 ] || _img_die "usage: img_oci_layout_zstd LAYOUT TAG ROOTFS"
	local layout="$1" tag="$2" rootfs="$3"
	_img_need skopeo
	_img_no_colon LAYOUT "$layout"
	_img_mkscratch
	if [ -e "$layout" ] && [ ! -f "$layout/oci-layout" ] && [ -n "$(ls -A -- "$layout")" ]; then
		_img_die "'$layout' exists and is not an OCI layout; refusing to overwrite"
	fi

	img_oci_layout "$_img_scratch_dir/gzip" "$tag" "$rootfs" ||
		_img_die "building the gzip image failed"
	skopeo --insecure-policy --tmpdir "$_img_scratch_dir" copy -q \
		--dest-compress-format zstd \
		"oci:$_img_scratch_dir/gzip:$tag" "oci:$layout:$tag" ||
		_img_die "skopeo copy --dest-compress-format zstd into oci:$layout:$tag failed"
)
