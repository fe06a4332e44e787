#!/bin/bash
#
# test-pod-names-prune.sh - the name index (DATA/pods/names, pod-ref.h)
# keeps no entry for a name whose pods are all gone (issue 25: every CRI
# sandbox, named by its id, left one): sdpod rm of a pod removes its
# entry, or points it at the pod the name resolves to now (an older pod of
# the name); sdpod gc removes entries whose pod was removed without that
# (by hand, or by an older sdpod).

. "$(dirname "$0")/lib.sh"

use_real_images
require_tool systemd-nspawn systemd-container

remove_pods_on_exit
leak_begin

busybox_layout
import_ok BB --name=busybox "$IMG/oci"

NAMES="$DATA/pods/names"
entry() { readlink "$NAMES/$1" 2>/dev/null || true; }
uuid_of() { sd status "$1" | sed -n 's/^uuid=//p'; }

echo "# rm removes the entry of a name whose last pod goes"
assert_exit 0 sd prepare --name=solo busybox --exec=/bin/true
U=$OUT
assert_eq "the index names the pod" "$U" "$(entry solo)"
assert_exit 0 sd rm solo
assert_eq "rm removed its entry" "" "$(entry solo)"
check "and the name names nothing" test -z "$(sd status solo 2>/dev/null)"

echo "# rm of the newest pod of a name: the entry names the one left"
assert_exit 0 sd prepare --name=twice busybox --exec=/bin/true
U1=$OUT
assert_exit 0 sd run-prepared twice
assert_exit 0 sd prepare --name=twice busybox --exec=/bin/true
U2=$OUT
assert_eq "the index names the newest" "$U2" "$(entry twice)"
assert_exit 0 sd rm "$U2"
assert_eq "after its rm, the one left" "$U1" "$(entry twice)"
assert_eq "which the name resolves to" "$U1" "$(uuid_of twice)"
assert_exit 0 sd rm "$U1"
assert_eq "and after its rm, none" "" "$(entry twice)"

echo "# rm of an older pod leaves the entry of the newer alone"
assert_exit 0 sd prepare --name=keep busybox --exec=/bin/true
K1=$OUT
assert_exit 0 sd run-prepared keep
assert_exit 0 sd prepare --name=keep busybox --exec=/bin/true
K2=$OUT
assert_exit 0 sd rm "$K1"
assert_eq "the entry still names the newer" "$K2" "$(entry keep)"
assert_exit 0 sd rm "$K2"

echo "# gc prunes an entry whose pod is gone"
assert_exit 0 sd prepare --name=live busybox --exec=/bin/true
L=$OUT
ln -s 01234567-89ab-cdef-0123-456789abcdef "$NAMES/ghost"
assert_exit 0 sd gc
assert_eq "gc removed the entry of a pod that is gone" "" "$(entry ghost)"
assert_eq "and kept the live pod's" "$L" "$(entry live)"
assert_exit 0 sd gc
assert_eq "a gc with nothing stale keeps it too" "$L" "$(entry live)"
assert_exit 0 sd rm live
assert_eq "no entry left" "" "$(ls -A "$NAMES")"

leak_check
