#!/bin/bash
#
# test-image-pull-faults.sh - pulls that go wrong, from a real registry
# (docker-registry on 127.0.0.1): the registry killed in the middle of a
# big layer, then started again: the next pull resumes (a Range request,
# fewer bytes) and nothing was half visible in between; SIGINT in the
# middle: exit 130, the store consistent; a layer and a config corrupted
# on the registry's disk: refused naming the digest, nothing of them
# stays; two pulls of one image at once: both succeed, each layer is
# fetched once.
#
# The pulls that must be caught in the middle go through a throttling proxy
# (registry-lib.sh) at $RATE bytes a second, so that the moment to act is
# chosen by the bytes that went through, not by a guessed delay.

. "$(dirname "$0")/lib.sh"

use_real_images
. "$LIB_DIR/registry-lib.sh"

BIG_MB=${BIG_MB:-64}
RATE=$((16 << 20))

leak_begin

echo "# building and pushing the images"
build_busybox
# A small image whose second layer is an uncompressed tar: a byte changed in
# the middle of it changes a file's content, not the archive's structure,
# so that only the digest can tell.
build_big 2 small
SMALL_MANIFEST=$BIG_MANIFEST SMALL_LAYER=$BIG_LAYER
SMALL_CONFIG=$(jq -r .config.digest "$(oci_blob "$IMG/small" "$SMALL_MANIFEST")")
build_big "$BIG_MB"
BB_LAYER=$(jq -r '.layers[0].digest' "$(oci_blob "$IMG/big" "$BIG_MANIFEST")")
BIG_CONFIG=$(jq -r .config.digest "$(oci_blob "$IMG/big" "$BIG_MANIFEST")")

registry_start plain
R=$REG
registry_push_layout plain "$IMG/big" test/big:latest
registry_push_layout plain "$IMG/small" test/small:latest
assert_eq "harness: the registry serves the big image as built" "$BIG_MANIFEST" \
	"$(registry_manifest_digest plain test/big latest)"
assert_eq "harness: its big layer is ${BIG_MB} MiB and more" 1 "$((BIG_SIZE > (BIG_MB << 20)))"
proxy_start slow plain "$RATE"
P=${PROXY_ADDR[slow]}

# pull_bg VAR DATA REF: sdpod image pull in the background, with SIGINT at
# its default (a background job of a script ignores it otherwise); VAR_PID
# is sdpod's own PID, its output goes to $T/VAR.out and $T/VAR.err.
pull_bg() {
	local var=$1 data=$2 ref=$3
	python3 -c 'import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); os.execv(sys.argv[1], sys.argv[1:])' \
		"$SDPOD" --dir="$data" image pull --tls-verify=false "$ref" >"$T/$var.out" 2>"$T/$var.err" &
	printf -v "${var}_PID" '%s' "$!"
}

# pull_wait VAR: waits for it; RC, OUT and ERR as assert_exit leaves them.
pull_wait() {
	local pid_var="${1}_PID"
	RC=0
	wait "${!pid_var}" || RC=$?
	OUT=$(cat "$T/$1.out") ERR=$(cat "$T/$1.err")
	no_sanitizer_report "pull $1" "$T/$1.err"
}

# pull_passed VAR BYTES: the proxy has passed BYTES, or the pull VAR has
# ended (then waiting longer is pointless; the checks after say what went wrong).
pull_passed() {
	local pid_var="${1}_PID"
	proxy_passed slow "$2" || ! kill -0 "${!pid_var}" 2>/dev/null
}

alive() { kill -0 "$1" 2>/dev/null; }

# nothing_visible WHAT DATA: no record, no tree of the big image, no blob
# of its big layer.
nothing_visible() {
	local data=$2
	assert_file_absent "$data/images/db/${BIG_MANIFEST#sha256:}.json" "$data/tree/${BIG_MANIFEST#sha256:}" \
		"$data/images/blobs/sha256/${BIG_LAYER#sha256:}"
	assert_not_contains "$1: image list does not show it" "$("$SDPOD" --dir="$data" image list 2>&1)" "test/big"
	assert_eq "$1: the store is sound" "" "$(store_problems "$data")"
}

# ---------------------------------------------------------------------------
echo "# the registry killed in the middle of a layer, then back: the pull resumes"
# ---------------------------------------------------------------------------
base=$(proxy_bytes slow)
pull_bg first "$DATA" "$P/test/big:latest"
wait_until 60 pull_passed first $((base + (24 << 20))) || true
check "the pull is under way (24 MiB through)" alive "$first_PID"
registry_kill plain
pull_wait first
assert_eq "the cut pull fails (exit 1)" 1 "$RC"
assert_contains "and names the registry" "$ERR" "$P"
nothing_visible "after the cut" "$DATA"
echo "# what the cut pull kept for the next one:"
find "$DATA" -type f -size +1M -printf '#   %P %s bytes\n' || true

registry_restart plain
registry_access_mark plain
assert_exit 0 sd image pull --tls-verify=false "$P/test/big:latest"
assert_eq "the next pull succeeds" "$BIG_MANIFEST" "$OUT"
assert_eq "it asked for the rest of the layer (a Range request, answered 206)" 1 \
	"$(($(registry_ranged_gets plain test/big "$BIG_LAYER") >= 1))"
sent=$(registry_blob_bytes plain test/big "$BIG_LAYER")
if [ "$sent" -gt 0 ] && [ "$sent" -lt "$BIG_SIZE" ]; then
	pass "and got the rest, less than the whole layer ($sent of $BIG_SIZE bytes)"
else
	fail "and got the rest, less than the whole layer" "the registry sent $sent bytes of $BIG_SIZE"
fi
assert_eq "the tree holds the big file" "$((BIG_MB << 20))" \
	"$(stat -c %s "$DATA/tree/${BIG_MANIFEST#sha256:}/rootfs/big/random" 2>&1)"
store_verify

# ---------------------------------------------------------------------------
echo "# SIGINT in the middle of a pull"
# ---------------------------------------------------------------------------
DI="$T/data-int"
mkdir "$DI"
base=$(proxy_bytes slow)
pull_bg int "$DI" "$P/test/big:latest"
wait_until 60 pull_passed int $((base + (16 << 20))) || true
check "the pull is under way (16 MiB through)" alive "$int_PID"
kill -INT "$int_PID" 2>/dev/null || true
pull_wait int
assert_eq "SIGINT: exit 130" 130 "$RC"
assert_eq "SIGINT: nothing on stdout" "" "$OUT"
nothing_visible "after SIGINT" "$DI"
assert_exit 0 "$SDPOD" --dir="$DI" image pull -q --tls-verify=false "$P/test/big:latest"
assert_eq "a pull after it succeeds" "$BIG_MANIFEST" "$OUT"
store_verify "$DI"

# ---------------------------------------------------------------------------
echo "# two pulls of one image at once"
# ---------------------------------------------------------------------------
DP="$T/data-parallel"
mkdir "$DP"
registry_access_mark plain
pull_bg par1 "$DP" "$P/test/big:latest"
pull_bg par2 "$DP" "$P/test/big:latest"
pull_wait par1
assert_eq "the first succeeds" "0 $BIG_MANIFEST" "$RC $OUT"
pull_wait par2
assert_eq "the second succeeds" "0 $BIG_MANIFEST" "$RC $OUT"
assert_eq "the big layer was fetched once" 1 "$(registry_blob_gets plain test/big "$BIG_LAYER")"
assert_eq "the busybox layer was fetched once" 1 "$(registry_blob_gets plain test/big "$BB_LAYER")"
echo "# the config was fetched $(registry_blob_gets plain test/big "$BIG_CONFIG") times"
store_verify "$DP"
assert_eq "no blob or tree without an image" "" "$(store_unreferenced "$DP")"

# ---------------------------------------------------------------------------
echo "# a layer corrupted on the registry's disk"
# ---------------------------------------------------------------------------
# flip FILE: the byte in the middle of FILE replaced by its complement (the
# size stays, so that only the digest tells).
flip() {
	python3 - "$1" <<-'EOF'
		import os, sys
		fd = os.open(sys.argv[1], os.O_RDWR)
		off = os.fstat(fd).st_size // 2
		b = os.pread(fd, 1, off)
		os.pwrite(fd, bytes([b[0] ^ 0xff]), off)
		os.close(fd)
	EOF
}
DC="$T/data-corrupt"
mkdir "$DC"
sdc() { "$SDPOD" --dir="$DC" "$@"; }
blob=$(registry_blob_file plain "$SMALL_LAYER")
cp -- "$blob" "$T/layer.good"
flip "$blob"
for attempt in 1 2; do
	registry_access_mark plain
	assert_exit 5 sdc image pull --tls-verify=false "$R/test/small:latest"
	assert_contains "attempt $attempt: refused, naming the layer's digest" "$ERR" "$SMALL_LAYER"
	assert_eq "attempt $attempt: the layer was fetched from its start (nothing bad was kept)" 0 \
		"$(registry_ranged_gets plain test/small "$SMALL_LAYER")"
	assert_eq "attempt $attempt: nothing of the layer is in the store" "" "$(store_files_with "${SMALL_LAYER#sha256:}" "$DC")"
	assert_eq "attempt $attempt: no record, no tree of the image" "" "$(store_files_with "${SMALL_MANIFEST#sha256:}" "$DC")"
	assert_eq "attempt $attempt: no tree at all" "" "$(ls -A "$DC/tree" 2>/dev/null)"
done
cp -- "$T/layer.good" "$blob"
echo "# a config corrupted on the registry's disk"
blob=$(registry_blob_file plain "$SMALL_CONFIG")
cp -- "$blob" "$T/config.good"
flip "$blob"
assert_exit 5 sdc image pull --tls-verify=false "$R/test/small:latest"
assert_contains "refused, naming the config's digest" "$ERR" "$SMALL_CONFIG"
assert_eq "nothing of the config is in the store" "" "$(store_files_with "${SMALL_CONFIG#sha256:}" "$DC")"
assert_eq "no record, no tree" "" "$(store_files_with "${SMALL_MANIFEST#sha256:}" "$DC")"
cp -- "$T/config.good" "$blob"
assert_exit 0 sdc image pull --tls-verify=false "$R/test/small:latest"
assert_eq "repaired on the registry, the same pull succeeds" "$SMALL_MANIFEST" "$OUT"
store_verify "$DC"
rm -f -- "$T/layer.good" "$T/config.good"

# ---------------------------------------------------------------------------
echo "# the end: nothing is left"
# ---------------------------------------------------------------------------
assert_eq "no blob or tree without an image" "" "$(store_unreferenced)"
assert_eq "nor after SIGINT" "" "$(store_unreferenced "$DI")"
# Whatever a pull kept to resume from is gone once the layer is in.
for d in "$DATA" "$DI" "$DP"; do
	assert_eq "$(_show_cmd "$d"): of the big layer only its blob is left (no partial download)" \
		"$d/images/blobs/sha256/${BIG_LAYER#sha256:}" "$(store_files_with "${BIG_LAYER#sha256:}" "$d")"
done
registry_leak_check
leak_check "$DATA" "$DI" "$DP" "$DC"
