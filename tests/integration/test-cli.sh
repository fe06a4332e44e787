#!/bin/bash
#
# test-cli.sh - the command line itself: help, version, usage errors and
# their exit codes, how errors are printed, and where the data directory is
# (--dir, SDPOD_DIR) - without real images: one tiny hand-made OCI layout
# is enough to see where an import lands.

. "$(dirname "$0")/lib.sh"

require_tool jq
require_tool tar

leak_begin

# --- help -----------------------------------------------------------------
echo "# help and version"

# Help goes to stdout with exit 0, and never needs the data directory: run
# it against one that does not exist.
nodir="$T/no-such-dir"
help_ok() {
	local want=$1
	shift
	assert_exit 0 "$SDPOD" --dir="$nodir" "$@"
	assert_match "'$*' prints '$want'" "^$want" "$OUT"
	assert_eq "'$*' prints nothing on stderr" "" "$ERR"
}
help_ok "Usage: sdpod " --help
help_ok "Usage: sdpod " -h
help_ok "Usage: sdpod " help
help_ok "Usage: sdpod image " image --help
help_ok "Usage: sdpod image " image help
for verb in import list inspect cat-manifest rm gc; do
	help_ok "Usage: sdpod image $verb" image "$verb" --help
	help_ok "Usage: sdpod image $verb" image "$verb" -h
done
assert_file_absent "$nodir"

# The global usage names every verb it dispatches to, the image usage every
# image verb.
assert_exit 0 "$SDPOD" --help
assert_contains "sdpod --help lists 'image'" "$OUT" "image"
assert_contains "sdpod --help documents --dir" "$OUT" "--dir=PATH"
assert_exit 0 "$SDPOD" image --help
for verb in import list inspect cat-manifest rm gc; do
	assert_contains "sdpod image --help lists '$verb'" "$OUT" "  $verb"
done

# --version: "sdpod X.Y.Z", the version of the meson project.
project_version=$(sed -n "s/^ *version *: *'\([^']*\)'.*/\1/p" "$LIB_DIR/../../meson.build" | head -n1)
assert_exit 0 "$SDPOD" --version
assert_eq "--version prints the project version" "sdpod $project_version" "$OUT"

# --- usage errors: exit 2, message on stderr, nothing on stdout -------------
echo "# usage errors"
usage_error() {
	local needle=$1
	shift
	assert_exit 2 "$@"
	assert_eq "$(_show_cmd "$*"): nothing on stdout" "" "$OUT"
	assert_contains "$(_show_cmd "$*"): says why on stderr" "$ERR" "$needle"
}
usage_error "Usage: sdpod" "$SDPOD"
usage_error 'unknown command "frobnicate"' "$SDPOD" --dir="$DATA" frobnicate
usage_error 'unknown command "frobnicate"' "$SDPOD" --dir="$DATA" image frobnicate
usage_error "Usage: sdpod image" "$SDPOD" --dir="$DATA" image
usage_error "sdpod --help" "$SDPOD" --bogus-option image list
usage_error "sdpod image list --help" "$SDPOD" --dir="$DATA" image list --bogus-option
usage_error "takes no arguments" "$SDPOD" --dir="$DATA" image list extra
usage_error '"yaml" is not one of json, table' "$SDPOD" --dir="$DATA" image list --format=yaml
usage_error "missing PATH" "$SDPOD" --dir="$DATA" image import
usage_error "takes one PATH" "$SDPOD" --dir="$DATA" image import a b
usage_error "missing IMAGE" "$SDPOD" --dir="$DATA" image inspect
usage_error "takes one IMAGE" "$SDPOD" --dir="$DATA" image inspect a b
usage_error "--format" "$SDPOD" --dir="$DATA" image inspect --format=json a
usage_error "missing IMAGE" "$SDPOD" --dir="$DATA" image cat-manifest
usage_error "missing IMAGE" "$SDPOD" --dir="$DATA" image rm
usage_error "takes no arguments" "$SDPOD" --dir="$DATA" image gc now
# Usage errors are found before the data directory is looked at.
usage_error "missing PATH" "$SDPOD" --dir="$nodir" image import
assert_file_absent "$nodir"

# --- errors: "sdpod COMMAND: <what>: <why>" on stderr -----------------------
echo "# error messages"
# stderr_is_error WHAT: one line, "sdpod COMMAND: ...: ...", nothing on stdout.
stderr_is_error() {
	assert_eq "$1: nothing on stdout" "" "$OUT"
	assert_match "$1: stderr is 'sdpod COMMAND: <what>: <why>'" '^sdpod [a-z -]+: .+: .+$' "$ERR"
	assert_eq "$1: stderr is one line" 1 "$(wc -l <"$T/stderr")"
}
assert_exit 3 sd image inspect no-such-image
stderr_is_error "inspect of a missing image"
assert_contains "the message names the image" "$ERR" "no-such-image"
assert_exit 3 sd image rm no-such-image
stderr_is_error "rm of a missing image"
assert_exit 3 sd image cat-manifest sha256:0000000000000000000000000000000000000000000000000000000000000000
stderr_is_error "cat-manifest of a missing id"
assert_exit 3 sd image import "$T/no-such-file"
stderr_is_error "import of a missing path"
assert_contains "the message names the path" "$ERR" "$T/no-such-file"
# --debug adds the errno, on stderr too.
assert_exit 3 sd --debug image inspect no-such-image
assert_contains "--debug adds the errno" "$ERR" "(errno 2: No such file or directory)"
assert_eq "--debug: nothing on stdout" "" "$OUT"

# --- the data directory -----------------------------------------------------
echo "# data directory"
# A --dir that does not exist is an error (exit 3) that names it, for every
# verb that needs the store, and nothing is created.
for args in "image list" "image inspect x" "image cat-manifest x" "image rm x" "image gc" "image import $T"; do
	# shellcheck disable=SC2086 # split the verb and its arguments
	assert_exit 3 "$SDPOD" --dir="$nodir/sub" $args
	assert_contains "$args: the error names the directory" "$ERR" "$nodir/sub"
	assert_match "$args: stderr is 'sdpod ${args%% *} ...: ...'" "^sdpod ${args%% *}[a-z -]*: " "$ERR"
done
assert_file_absent "$nodir"
# A --dir that is a file is an error too, and stays a file.
echo data >"$T/a-file"
assert_exit 1 "$SDPOD" --dir="$T/a-file" image list
assert_match "a file as --dir: 'sdpod image list: ...'" '^sdpod image list: .*a-file' "$ERR"
assert_eq "the file is untouched" data "$(cat "$T/a-file")"

# An existing empty directory becomes a store.
assert_exit 0 sd image list
assert_eq "empty store: table has only the legend" "ID NAMES SIZE FORMAT IMPORTED" "$(tr -s ' ' <<<"$OUT")"
assert_exit 0 sd image list --no-legend
assert_eq "empty store: --no-legend prints nothing" "" "$OUT"
assert_exit 0 sd image list --format=json
assert_jq "empty store: JSON list is []" "$OUT" . '[]'
for d in images/blobs/sha256 images/db images/tmp tree; do
	assert_file_exists "$DATA/$d"
done

# A tiny image to see where imports land.
tiny_layer "$T/layer.tar" hello "hello from the cli test"
oci_layout_new "$T/tiny" "$(host_arch)" "$T/layer.tar"

# SDPOD_DIR is honoured when there is no --dir ...
envdir="$T/envdir"
mkdir "$envdir"
assert_exit 0 env SDPOD_DIR="$envdir" "$SDPOD" image import "$T/tiny"
id=$OUT
assert_match "import via SDPOD_DIR printed an id" '^sha256:[0-9a-f]{64}$' "$id"
assert_file_exists "$envdir/images/db/${id#sha256:}.json" "$envdir/tree/${id#sha256:}/rootfs/etc/hello"
assert_eq "... and the tree has the file" "hello from the cli test" "$(cat "$envdir/tree/${id#sha256:}/rootfs/etc/hello")"
assert_dir_empty "... and nothing went to --dir's default (\$DATA has no records)" "$DATA/images/db"
assert_exit 0 env SDPOD_DIR="$envdir" "$SDPOD" image list --format=json
assert_jq "image list via SDPOD_DIR shows it" "$OUT" '[.[].id]' "[\"$id\"]"
# ... but --dir wins over it.
assert_exit 0 env SDPOD_DIR="$envdir" "$SDPOD" --dir="$DATA" image list --format=json
assert_jq "--dir overrides SDPOD_DIR" "$OUT" . '[]'
# `image rm --help` prints help and removes nothing - not even an image
# that happens to be called "rm" (the verb's own name).
assert_exit 0 env SDPOD_DIR="$envdir" "$SDPOD" image import --name=rm "$T/tiny"
assert_exit 0 env SDPOD_DIR="$envdir" "$SDPOD" image rm --help
assert_exit 0 env SDPOD_DIR="$envdir" "$SDPOD" image inspect rm
assert_jq "image rm --help removed nothing" "$OUT" .id "\"$id\""
assert_file_exists "$envdir/images/db/${id#sha256:}.json"

# A SDPOD_DIR that does not exist is not created either.
assert_exit 3 env SDPOD_DIR="$nodir" "$SDPOD" image list
assert_contains "a missing SDPOD_DIR is named" "$ERR" "$nodir"
assert_file_absent "$nodir"

leak_check "$DATA" "$envdir"
