#!/bin/bash
#
# test-pod-names.sh - a pod's --name as a reference (sdpod(1) "Pod
# references"): accepted wherever a UUID is, by sdpod and podapp; unique
# among the pods that are prepared or running, also when two prepares race;
# the live pod of a name before the exited ones; a name before a UUID
# prefix; and the bad references.

. "$(dirname "$0")/lib.sh"

use_real_images
require_tool systemd-nspawn systemd-container
[ -n "$PODAPP" ] || die "podapp not found (PODAPP_BIN)"

remove_pods_on_exit
leak_begin

busybox_layout
import_ok BB --name=busybox "$IMG/oci"

uuid_of() { sd status "$1" | sed -n 's/^uuid=//p'; }

# ---------------------------------------------------------------------------
echo "# a name names its pod wherever a UUID does"
# ---------------------------------------------------------------------------
assert_exit 0 sd prepare --name=web busybox --exec=/bin/sh -- -c 'echo ran; exit 7'
U1=$OUT
assert_eq "status web" "$U1" "$(uuid_of web)"
assert_exit 0 sd cat-manifest web
assert_contains "cat-manifest web" "$OUT" '"sdpod/name"'
assert_exit 0 sd list
assert_match "list shows the name" "^${U1:0:8} +web +prepared" "$(grep "^${U1:0:8}" <<<"$OUT")"

# ---------------------------------------------------------------------------
echo "# a name is unique among the pods that are prepared or running"
# ---------------------------------------------------------------------------
assert_exit 4 sd prepare --name=web busybox --exec=/bin/true
assert_contains "a second pod of the name is refused, naming the first" "$ERR" \
	"a pod named web is prepared already: $U1"
assert_eq "and nothing is left of it" 1 "$(sd list --no-legend | grep -c ' web ')"
# Four prepares of one name at once: the name lock lets exactly one pass.
for i in 1 2 3 4; do
	"$SDPOD" --dir="$DATA" prepare --name=race busybox --exec=/bin/true >"$T/race.$i" 2>&1 &
	pids[i]=$!
done
ok=0
for i in 1 2 3 4; do
	if wait "${pids[i]}"; then ok=$((ok + 1)); fi
done
assert_eq "of four racing prepares of one name, one wins" 1 "$ok"
assert_eq "the others were told why" 3 "$(cat "$T"/race.* | grep -c 'a pod named race is')"
assert_eq "one pod has the name" 1 "$(sd list --no-legend | grep -c ' race ')"

# ---------------------------------------------------------------------------
echo "# an exited pod frees its name; the live pod of a name comes first"
# ---------------------------------------------------------------------------
assert_exit 7 sd run-prepared web
assert_eq "run-prepared web ran it" exited "$(status_of "$U1" state)"
assert_exit 0 sd prepare --name=web busybox --exec=/bin/true
U2=$OUT
assert_ne "a new pod may take the name of an exited one" "$U1" "$U2"
assert_eq "the name now names the prepared pod" "$U2" "$(uuid_of web)"
assert_exit 0 sd rm web
assert_file_absent "$DATA/pods/prepared/$U2"
assert_eq "then the newest exited pod of the name" "$U1" "$(uuid_of web)"
assert_exit 0 sd journal web --no-pager -o cat
assert_contains "sdpod journal web" "$OUT" ran

# ---------------------------------------------------------------------------
echo "# the name index (DATA/pods/names): a cache the manifests have the last word on"
# ---------------------------------------------------------------------------
# rm of the last pod given the name pointed its entry at the one left
# (test-pod-names-prune.sh).
assert_eq "names/web is the pod the name resolves to after an rm" "$U1" "$(readlink "$DATA/pods/names/web")"
# An entry that names a pod of another name is not believed.
ln -sfn "$(sd status race | sed -n 's/^uuid=//p')" "$DATA/pods/names/web"
assert_eq "a wrong entry is checked against the manifest" "$U1" "$(uuid_of web)"
# A store of an earlier sdpod has no index: it is built on first use.
rm -rf "$DATA/pods/names"
assert_eq "without an index, by the manifests" "$U1" "$(uuid_of web)"
check "and the index is built" test -L "$DATA/pods/names/race"
assert_exit 4 sd prepare --name=race busybox --exec=/bin/true
assert_contains "a rebuilt index still keeps a name to its live pod" "$ERR" "a pod named race is prepared already"

# ---------------------------------------------------------------------------
echo "# a name before a UUID prefix"
# ---------------------------------------------------------------------------
P=${U1:0:4}
assert_exit 0 sd prepare --name="$P" busybox --exec=/bin/true
U3=$OUT
assert_eq "\"$P\" is the pod named so, not the pod whose UUID starts so" "$U3" "$(uuid_of "$P")"
assert_eq "a longer prefix still finds the other" "$U1" "$(uuid_of "${U1:0:13}")"
assert_exit 0 sd rm "$U3"

# ---------------------------------------------------------------------------
echo "# bad references"
# ---------------------------------------------------------------------------
assert_exit 3 sd status nosuch
assert_contains "an unknown name is named" "$ERR" "no pod named nosuch"
assert_exit 3 sd status abcdef1
assert_contains "a reference that could be either says both" "$ERR" \
	"no pod is named abcdef1 or has a UUID starting with it"
assert_exit 2 sd status 'web/../x'
assert_contains "what is neither is refused" "$ERR" "is neither a pod name nor a pod UUID"
assert_exit 2 sd status -- -web
assert_exit 3 pa list nosuch
assert_contains "podapp says the same" "$ERR" "no pod named nosuch"

# ---------------------------------------------------------------------------
echo "# running pods by name: enter, stop, and podapp"
# ---------------------------------------------------------------------------
assert_exit 0 sd run --detach --name=bg busybox --exec=/bin/sleep -- 600
B=$OUT
assert_exit 0 sd enter bg /bin/echo entered
assert_eq "sdpod enter bg" entered "$OUT"
assert_exit 4 sd run --detach --name=bg busybox --exec=/bin/true
assert_contains "a running pod holds its name" "$ERR" "a pod named bg is running already: $B"
assert_exit 0 sd stop bg
assert_eq "sdpod stop bg" exited "$(status_of "$B" state)"

assert_exit 0 pa sandbox --name=sb
S=$OUT
assert_exit 0 pa add sb --app=app1 busybox --exec=/bin/sleep -- 600
assert_exit 0 pa list sb
assert_contains "podapp list sb" "$OUT" app1
assert_exit 0 pa start sb --app=app1
wait_app sb app1
assert_exit 0 pa exec sb --app=app1 -- /bin/echo in-app1
assert_eq "podapp exec sb" in-app1 "$OUT"
assert_exit 0 pa stop sb --app=app1
assert_exit 0 pa rm sb --app=app1
assert_exit 0 sd stop sb
assert_eq "the sandbox stopped by name" exited "$(status_of "$S" state)"
no_pod_procs "$B"
no_pod_procs "$S"

assert_exit 0 sd gc --grace-period=0
# gc makes the index anew: no entry for a pod that is gone.
for l in "$DATA"/pods/names/*; do
	[ -L "$l" ] || continue
	check "after gc, names/$(basename "$l") names a pod that is there" \
		test -n "$(find "$DATA/pods" -mindepth 2 -maxdepth 2 -name "$(readlink "$l")")"
done
leak_check

