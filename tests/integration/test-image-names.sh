#!/bin/bash
#
# test-image-names.sh - names of images: image tag and untag, and image rm
# that removes one name while the image has others (docker rmi), the image
# with its last name, and any image with --force.  The bad input: unknown
# images, bad names, a name another image has, untag of a missing name, rm
# of an image with several names by id, and rm of images that a prepared
# and a running pod use (they keep their trees; gc must not take them).

. "$(dirname "$0")/lib.sh"

use_real_images

leak_begin
trap '_rc=$?; bg_pods_cleanup; (exit "$_rc"); _lib_on_exit' EXIT

echo "# building images"
busybox_layout
oci_variant "$IMG/oci" "$IMG/var-b" b >/dev/null
oci_variant "$IMG/oci" "$IMG/var-c" c >/dev/null

record() {
	echo "$DATA/images/db/${1#sha256:}.json"
}
# names_of ID: the names of an image, sorted, comma-separated.
names_of() {
	jq -r '.names | sort | join(",")' "$(record "$1")"
}

import_ok A --name=web:v3 "$IMG/oci"
import_ok B "$IMG/var-b"
import_ok C "$IMG/var-c"

# --- tag -----------------------------------------------------------------------
echo "# tag"
assert_exit 0 sd image tag web:v3 web
assert_eq "tag prints the image id" "$A" "$OUT"
assert_eq "tag: no message when nothing moved" "" "$ERR"
assert_eq "the tag defaults to latest" "web:latest,web:v3" "$(names_of "$A")"
assert_exit 0 sd image inspect web
assert_jq "the new name resolves" "$OUT" .id "\"$A\""
# By id prefix, to a name with a registry and a port.
assert_exit 0 sd image tag "${B:7:12}" registry.example:5000/team/app:1.0
assert_eq "tag by id prefix" "$B" "$OUT"
assert_exit 0 sd image inspect registry.example:5000/team/app:1.0
assert_jq "a name with a registry port resolves" "$OUT" .id "\"$B\""
# Tagging an image with a name it has already changes nothing.
before=$(cat "$(record "$A")")
assert_exit 0 sd image tag "$A" web:v3
assert_eq "tag with a name it has: the record is unchanged" "$before" "$(cat "$(record "$A")")"

echo "# tag: bad input"
assert_exit 3 sd image tag no-such-image x:1
assert_contains "tag of an unknown image says so" "$ERR" "no-such-image: not found"
assert_exit 3 sd image tag sha256:0000000000000000000000000000000000000000000000000000000000000000 x:1
assert_contains "tag of an unknown id says so" "$ERR" "not found"
# (An escape sequence in a name would reach terminals through list and the
# messages: refused as every control character.)
for bad in 'has space' $'ctl\x01' $'esc\e[31mred' ':tag' 'name:' '/abs' 'a//b' 'name@sha256:abcd' \
	"sha256:${A#sha256:}" 'sha256:1234' "$(printf 'x%.0s' {1..300})"; do
	assert_exit 2 sd image tag "$A" "$bad"
	assert_contains "tag to a bad name ($(printf '%q' "${bad:0:30}")): refused, naming the name" "$ERR" 'image name "'
done
assert_exit 2 sd image tag "$A"
assert_contains "tag without a name: usage" "$ERR" "expected IMAGE and NAME"
assert_exit 2 sd image tag "$A" x y
assert_eq "the bad tags changed nothing" "web:latest,web:v3" "$(names_of "$A")"
assert_exit 0 sd image list --format=json
assert_jq "no image got a bad name" "$OUT" '[.[].names[]] | sort' '["registry.example:5000/team/app:1.0","web:latest","web:v3"]'

echo "# tag: a name another image has moves"
# Documented in sdpod(1): a name names one image; the other image loses it
# and stays.  C has no name: it gets web:latest, A keeps web:v3.
assert_exit 0 sd image tag "$C" web:latest
assert_eq "tag to a taken name prints the new owner" "$C" "$OUT"
assert_contains "... and says where the name came from" "$ERR" "the name web:latest moved from image $A"
assert_eq "A lost web:latest" "web:v3" "$(names_of "$A")"
assert_eq "C has it" "web:latest" "$(names_of "$C")"
assert_exit 0 sd image inspect web
assert_jq "web now names C" "$OUT" .id "\"$C\""
# Moving an image's only name away leaves it without names, still in the
# store and named by its id; the message says how to remove it.
assert_exit 0 sd image tag "$A" web:latest
assert_contains "moving an only name away says the other image has none left" "$ERR" \
	"moved from image $C (which has no name left"
assert_eq "C has no name now" "" "$(names_of "$C")"
assert_exit 0 sd image inspect "$C"
assert_eq "... and is still there, by its id" 0 "$?"

# --- untag ----------------------------------------------------------------------
echo "# untag"
assert_exit 0 sd image tag "$A" only:1
assert_exit 0 sd image untag only:1
assert_eq "untag prints the image's id" "$A" "$OUT"
assert_eq "untag took the name" "web:latest,web:v3" "$(names_of "$A")"
assert_exit 3 sd image untag only:1
assert_contains "untag of a name no image has: not found, naming it" "$ERR" "image name only:1: no image has it"
assert_exit 3 sd image untag never-was
assert_contains "untag normalises the name it names" "$ERR" "never-was:latest"
assert_exit 2 sd image untag "$A"
assert_contains "untag of an id: a name is needed" "$ERR" "an image id, not a name"
assert_exit 2 sd image untag 'bad name'
# The last name: the image stays, named by its id only.
assert_exit 0 sd image untag web web:v3
assert_eq "untag of two names prints the id twice" "$A
$A" "$OUT"
assert_eq "untag of the last name: the image stays without names" "" "$(names_of "$A")"
assert_exit 0 sd image inspect "$A"
assert_exit 0 sd image tag "$A" web:v3
assert_exit 0 sd image tag "$A" web:v4
# Several names, one missing: the others are untagged, the status is the error's.
assert_exit 3 sd image untag web:v4 missing:1
assert_eq "untag NAME MISSING: untagged the first" "$A" "$OUT"
assert_eq "... and only it" "web:v3" "$(names_of "$A")"

# --- rm ----------------------------------------------------------------------------
echo "# rm"
assert_exit 0 sd image tag "$A" web:latest
assert_exit 0 sd image tag "$A" web:v2
assert_eq "fixture: A has three names" "web:latest,web:v2,web:v3" "$(names_of "$A")"
# The bug of the issue: rm web:v3 removed web:latest too.
assert_exit 0 sd image rm web:v3
assert_eq "rm of one of several names prints no id" "" "$OUT"
assert_contains "... and says what it did" "$ERR" "removed the name web:v3; image $A stays, named web:latest, web:v2"
assert_eq "rm NAME removed only that name" "web:latest,web:v2" "$(names_of "$A")"
assert_exit 0 sd image inspect web
assert_jq "web:latest still names A" "$OUT" .id "\"$A\""
assert_exit 3 sd image inspect web:v3
# By id while it has several names: refused, nothing changes.
assert_exit 4 sd image rm "$A"
assert_contains "rm ID of an image with names: refused, naming them" "$ERR" "2 names (web:latest, web:v2)"
assert_contains "... and --force" "$ERR" "--force"
assert_exit 4 sd image rm "${A:7:10}"
assert_file_exists "$(record "$A")"
# The last name takes the image with it.
assert_exit 0 sd image rm web
assert_exit 0 sd image rm web:v2
assert_eq "rm of the last name removes the image, printing its id" "$A" "$OUT"
assert_file_absent "$(record "$A")"
# --force: the image, whatever names it has.
assert_exit 0 sd image tag "$B" b:1
assert_exit 0 sd image tag "$B" b:2
assert_exit 0 sd image rm --force b:1
assert_eq "rm --force NAME removes the image" "$B" "$OUT"
assert_file_absent "$(record "$B")"
assert_exit 3 sd image inspect b:2
assert_exit 0 sd image list --format=json
assert_jq "no image has B's names any more" "$OUT" '[.[].names[]] | sort' '[]'
assert_exit 3 sd image rm --force no-such-image
assert_exit 0 sd image import "$IMG/var-b"
assert_exit 0 sd image tag "$B" b:1
assert_exit 0 sd image tag "$B" b:2
assert_exit 0 sd image rm -f "$B"
assert_eq "rm -f ID removes an image with several names" "$B" "$OUT"
assert_exit 2 sd image rm --bogus x
# An unreadable record: its full id removes it (its names are unknown).
import_ok B "$IMG/var-b"
echo '{"broken' >"$(record "$B")"
assert_exit 5 sd image rm "${B:7:12}"
assert_contains "rm of an unreadable record by a prefix: its error says how to remove it" "$ERR" \
	"remove it with 'sdpod image rm $B'"
assert_exit 0 sd image rm "$B"
assert_eq "rm by the full id of an unreadable record prints it" "$B" "$OUT"
assert_file_absent "$(record "$B")"

# --- images that pods use --------------------------------------------------------------
echo "# rm of images that pods use"
import_ok P --name=busybox "$IMG/oci"
assert_exit 0 sd image tag busybox busybox:pinned
u_prepared=$(sd prepare busybox --exec=/bin/true) || die "prepare failed"
run_bg RUN busybox:pinned --app=sleeper --exec=/bin/sleep -- 600
wait_app "$RUN" sleeper || die "the pod did not start: $(cat "$RUN_OUT")"
# What the store did before this change, and still does: removing the
# image drops the record, gc keeps the tree that pods name.
assert_exit 0 sd image rm busybox
assert_eq "rm of one of two names leaves the image" "" "$OUT"
assert_exit 0 sd image rm busybox:pinned
assert_eq "rm of the last name of an image in use removes its record" "$P" "$OUT"
assert_contains "... and says pods keep its tree" "$ERR" "image $P is used by a pod: its tree stays"
assert_exit 0 sd image gc
assert_file_exists "$DATA/tree/${P#sha256:}/rootfs/bin/busybox"
assert_exit 0 sd run-prepared "$u_prepared"
assert_exit 0 sd enter --app=sleeper "$RUN" /bin/true
assert_exit 0 sd stop "$RUN"
bg_pods_cleanup
# shellcheck disable=SC2034 # lib.sh's: the pods are gone
BG_PIDS=()
assert_exit 0 sd image gc
assert_file_absent "$DATA/tree/${P#sha256:}"

leak_check
