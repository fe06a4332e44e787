#!/bin/bash
#
# test-image-concurrency.sh - sdpod has no daemon: concurrent commands meet
# only in the store (flock, rename).  Two imports of one image at once;
# five different images at once; imports racing gc and rm; imports killed
# halfway.  After each: the store's invariants (every listed image has its
# blobs, hashing right, and its tree; gc leaves nothing unreferenced).

. "$(dirname "$0")/lib.sh"

use_real_images

leak_begin

echo "# building images"
busybox_layout
img_aci "$IMG/rootfs" "$IMG/busybox.aci" example.com/busybox gzip
img_docker_archive "$IMG/oci" latest "$IMG/busybox.docker.tar" busybox:latest
declare -A want_id
want_id[oci]=$(oci_manifest_digest "$IMG/oci")
want_id[aci]="sha256:$(sha256sum <"$IMG/busybox.aci" | cut -d' ' -f1)"
want_id[docker]=$(jq -r .config.digest "$(oci_blob "$IMG/oci" "${want_id[oci]}")")
for v in 1 2 3; do
	want_id[v$v]=$(oci_variant "$IMG/oci" "$IMG/v$v" "$v")
done
path_of() {
	case "$1" in
	aci) echo "$IMG/busybox.aci" ;;
	docker) echo "$IMG/busybox.docker.tar" ;;
	*) echo "$IMG/$1" ;;
	esac
}

# Background commands, by name: start NAME CMD...; finish NAME sets RC,
# BG_OUT and BG_ERR.  CMD is the sdpod binary itself, not the sd function,
# so that $! is sdpod's pid (a function would run in a subshell, and a
# kill would hit the subshell).
declare -A bg_pid
start() {
	local name=$1
	shift
	"$@" >"$T/bg.$name.out" 2>"$T/bg.$name.err" &
	bg_pid[$name]=$!
}
finish() {
	RC=0
	# (2>/dev/null: no "Killed" job notice from bash for the killed ones.)
	wait "${bg_pid[$1]}" 2>/dev/null || RC=$?
	BG_OUT=$(cat "$T/bg.$1.out")
	BG_ERR=$(cat "$T/bg.$1.err")
	no_sanitizer_report "background $1" "$T/bg.$1.err"
	rm -f "$T/bg.$1.out" "$T/bg.$1.err"
	unset "bg_pid[$1]"
}

# fresh_store: an empty $DATA.
fresh_store() {
	rm -rf -- "$DATA"
	mkdir "$DATA"
}

# sound WHAT: the store's invariants, as two checks.
sound() {
	local listed records
	assert_eq "$1: every image has its blobs (hashes verified) and its tree" "" "$(store_problems)"
	listed=$(sd image list --format=json | jq -r '.[].id' | LC_ALL=C sort)
	records=$(cd "$DATA/images/db" && find . -name '*.json' -printf 'sha256:%f\n' | sed 's/\.json$//' | LC_ALL=C sort)
	assert_eq "$1: image list shows exactly the records" "$records" "$listed"
}

# --- the same image twice at once ------------------------------------------------
echo "# the same image, twice at once"
for round in 1 2 3 4 5; do
	fresh_store
	start a "$SDPOD" --dir="$DATA" image import "$IMG/oci"
	start b "$SDPOD" --dir="$DATA" image import "$IMG/oci"
	finish a
	a_rc=$RC a_out=$BG_OUT a_err=$BG_ERR
	finish b
	assert_eq "round $round: both imports succeed" "0 0" "$a_rc $RC"
	[ -z "$a_err$BG_ERR" ] || echo "# stderr: $a_err $BG_ERR"
	assert_eq "round $round: both print the id" "${want_id[oci]} ${want_id[oci]}" "$a_out $BG_OUT"
	assert_eq "round $round: one record" "${want_id[oci]#sha256:}.json" "$(ls -A "$DATA/images/db")"
	assert_dir_empty "round $round: no staging left" "$DATA/images/tmp"
	sound "round $round"
done
assert_same_tree "the tree of the last round is intact" "$IMG/rootfs" "$DATA/tree/${want_id[oci]#sha256:}/rootfs"

# The same image from two formats that share nothing but the layer content.
fresh_store
start a "$SDPOD" --dir="$DATA" image import "$IMG/oci"
start b "$SDPOD" --dir="$DATA" image import "$IMG/v1"
finish a
a_rc=$RC
finish b
assert_eq "two images sharing a layer, at once: both succeed" "0 0" "$a_rc $RC"
sound "two images sharing a layer"
assert_eq "... and nothing is unreferenced" "" "$(store_unreferenced)"

# --- five different images at once ------------------------------------------------
echo "# five images at once"
fresh_store
five=(oci v1 v2 aci docker)
for n in "${five[@]}"; do
	start "$n" "$SDPOD" --dir="$DATA" image import "$(path_of "$n")"
done
for n in "${five[@]}"; do
	finish "$n"
	assert_eq "$n: import succeeds" 0 "$RC"
	assert_eq "$n: prints its id" "${want_id[$n]}" "$BG_OUT"
done
assert_eq "five records" 5 "$(find "$DATA/images/db" -name '*.json' | wc -l)"
for n in "${five[@]}"; do
	assert_same_tree "$n: tree intact" "$IMG/rootfs" "$DATA/tree/${want_id[$n]#sha256:}/rootfs"
done
assert_dir_empty "no staging left" "$DATA/images/tmp"
sound "five at once"
assert_eq "five at once: nothing unreferenced" "" "$(store_unreferenced)"

# A name names one image, also when five imports claim it at once (the
# images are in the store already: only the names move).
for n in "${five[@]}"; do
	start "$n" "$SDPOD" --dir="$DATA" image import --name=race:1 "$(path_of "$n")"
done
for n in "${five[@]}"; do
	finish "$n"
	assert_eq "$n: import --name=race:1 succeeds" 0 "$RC"
done
assert_eq "race:1 names exactly one image" 1 \
	"$(sd image list --format=json | jq '[.[] | select(.names | index("race:1"))] | length')"
assert_exit 0 sd image inspect race:1

# --- imports racing gc and rm -----------------------------------------------------------
echo "# imports racing gc and rm (20 rounds)"
fresh_store
# A bystander that nobody removes: it must come through untouched.
import_ok keep "$IMG/busybox.aci"
keep_tree_before=$(snapshot "$DATA/tree/${keep#sha256:}" --mtime)
cycle=(v1 v2 v3 oci)
bad=
removed=0
for round in $(seq 1 20); do
	n=${cycle[round % 4]}
	prev=${cycle[(round + 3) % 4]}
	# Import one image while gc runs and the image imported last round,
	# and this one, are removed.
	start imp "$SDPOD" --dir="$DATA" image import "$(path_of "$n")"
	start gc "$SDPOD" --dir="$DATA" image gc
	start rm1 "$SDPOD" --dir="$DATA" image rm "${want_id[$prev]}"
	start rm2 "$SDPOD" --dir="$DATA" image rm "${want_id[$n]}"
	finish imp
	[ "$RC" = 0 ] && [ "$BG_OUT" = "${want_id[$n]}" ] || bad+="round $round: import $n: exit $RC: $BG_OUT $BG_ERR
"
	finish gc
	[ "$RC" = 0 ] || bad+="round $round: gc: exit $RC: $BG_ERR
"
	for r in rm1 rm2; do
		finish $r
		# 0: removed; 3: not there (yet, or any more).
		[ "$RC" = 0 ] || [ "$RC" = 3 ] || bad+="round $round: $r: exit $RC: $BG_ERR
"
		[ "$RC" != 0 ] || removed=$((removed + 1))
	done
	p=$(store_problems)
	[ -z "$p" ] || bad+="round $round: store: $p
"
done
echo "# (the 40 racing rm removed $removed images)"
assert_eq "20 rounds: every import, gc and rm did what it should, and the store stayed sound" "" "$bad"
sound "after the races"
assert_eq "the bystander's tree is untouched" "$keep_tree_before" "$(snapshot "$DATA/tree/${keep#sha256:}" --mtime)"
assert_exit 0 sd image inspect "$keep"
assert_exit 0 sd image gc
assert_eq "after a final gc nothing is unreferenced" "" "$(store_unreferenced)"
assert_dir_empty "no staging left" "$DATA/images/tmp"
sound "after the final gc"

# --- imports killed halfway -----------------------------------------------------------------
echo "# imports killed halfway"
# Whatever a SIGKILL leaves (staging, blobs without a record) is gc's to
# remove, and never a record without its blobs or tree.
fresh_store
delays=(0.01 0.03 0.06 0.1 0.15 0.25 0.4)
for round in 1 2 3 4 5 6 7; do
	n=${cycle[round % 4]}
	start imp "$SDPOD" --dir="$DATA" image import "$(path_of "$n")"
	sleep "${delays[round - 1]}"
	kill -KILL "${bg_pid[imp]}" 2>/dev/null || true
	finish imp
	[ "$RC" = 0 ] || [ "$RC" = 137 ] || fail "round $round: killed import: exit $RC" "$BG_ERR"
	p=$(store_problems)
	assert_eq "killed round $round (exit $RC): no record without its blobs and tree" "" "$p"
done
echo "# (the killed imports left $(find "$DATA/images/tmp" -mindepth 1 -maxdepth 1 | wc -l) staging directories)"
assert_exit 0 sd image gc
assert_dir_empty "gc removed what the killed imports staged" "$DATA/images/tmp"
assert_eq "after gc nothing is unreferenced" "" "$(store_unreferenced)"
# And the images import fine afterwards.
for n in v1 v2 v3 oci; do
	assert_exit 0 sd image import "$(path_of "$n")"
done
sound "after killed imports"

leak_check
