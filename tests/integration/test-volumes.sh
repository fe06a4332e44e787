#!/bin/bash
#
# test-volumes.sh - volumes that keep data across the pods of one service
# (sdpod(1) VOLUMES, sdpod-security(7) "Volumes that keep data"): the
# stable id range of a pod name, named volumes kept by sdpod and their
# verbs, chown=true host directories (podman's :U), idmap=true mounts, and
# the -v short form. And what a hostile pod tries with them: symlinks
# planted for the host's re-own to follow, names that are paths.

. "$(dirname "$0")/lib.sh"

use_real_images
require_tool systemd-nspawn systemd-container
require_tool jq

trap '_rc=$?; set +e; trap - ERR; remove_all_pods; (exit "$_rc"); _lib_on_exit' EXIT
leak_begin

busybox_layout
import_ok BB --name=busybox "$IMG/oci"

# The range of a pod, from its manifest: BASE of "BASE:65536".
base_of() {
	sd cat-manifest "$1" | jq -r '.annotations[] | select(.name == "sdpod/private-users") | .value' | cut -d: -f1
}
# run_pod VAR ARGS...: a pod run in the foreground to its end; VAR gets its UUID.
run_pod() {
	local var=$1
	shift
	rm -f "$T/uuid"
	sd run --uuid-file="$T/uuid" "$@" >"$T/run.out" 2>&1 || true
	printf -v "$var" '%s' "$(cat "$T/uuid" 2>/dev/null)"
}
owner() { stat -c %u:%g "$1"; }
# app_pid UUID COMM: a process of the pod's apps, from the host.
app_pid() {
	local p
	for p in $(pidns_procs "$(pod_pidns "$1")"); do
		[ "$(cat "/proc/$p/comm" 2>/dev/null)" = "$2" ] && echo "$p" && return 0
	done
	return 0
}
# mount_opts PID PATH: the options of the mount at PATH that process PID sees.
mount_opts() { awk -v m="$2" '$5 == m {print $6}' "/proc/$1/mountinfo" | tail -1; }

# A sentinel that stands for /etc/shadow: a host file no pod may re-own.
SENTINEL="$T/sentinel"
echo secret >"$SENTINEL"
chmod 600 "$SENTINEL"
shadow_before=$(owner /etc/shadow)

# ---------------------------------------------------------------------------
echo "# a pod name keeps its id range"
# ---------------------------------------------------------------------------
run_pod P1 --name=svc busybox --exec=/bin/true
run_pod P2 --name=svc busybox --exec=/bin/true
run_pod P3 busybox --exec=/bin/true
B1=$(base_of "$P1")
B2=$(base_of "$P2")
B3=$(base_of "$P3")
assert_match "pod of --name=svc has a range" '^[0-9]+$' "$B1"
assert_eq "the next pod of --name=svc has the same range" "$B1" "$B2"
assert_ne "an unnamed pod has another range" "$B1" "$B3"
assert_eq "the range is recorded durably" "{\"name\":\"svc\",\"base\":$B1}" "$(cat "$DATA/id-ranges/svc")"
assert_eq "its claim is the name's" "name:svc" "$(head -1 "$DATA/private-users/$B1")"
sd rm "$P1" "$P2" >/dev/null
assert_file_exists "$DATA/private-users/$B1" # removing the pods of a name keeps its range
run_pod P4 --name=svc busybox --exec=/bin/true
assert_eq "a pod of the name after them has it still" "$B1" "$(base_of "$P4")"
run_pod P5 --name=other busybox --exec=/bin/true
assert_ne "another name has another range" "$B1" "$(base_of "$P5")"
sd rm "$P3" "$P4" "$P5" >/dev/null
# Its record removed, the name's range is given back by gc.
rm "$DATA/id-ranges/svc"
assert_exit 0 sd gc
assert_file_absent "$DATA/private-users/$B1"
assert_eq "and for the machine" "" "$(grep -lx "name:svc" "/run/sdpod/private-users/$B1" 2>/dev/null)"
# A name's range claimed by someone else: refused, the owner named.
run_pod P6 --name=clash busybox --exec=/bin/true
BC=$(base_of "$P6")
sd rm "$P6" >/dev/null
printf 'name:intruder\n' >"$DATA/private-users/$BC.tmp" && mv "$DATA/private-users/$BC.tmp" "$DATA/private-users/$BC"
assert_exit 4 sd prepare --name=clash busybox --exec=/bin/true
assert_contains "a taken range is refused, naming its owner" "$ERR" "name:intruder"
rm -f "$DATA/private-users/$BC" "$DATA/id-ranges/clash"

# ---------------------------------------------------------------------------
echo "# the pods of a definition keep its range and its named volume"
# ---------------------------------------------------------------------------
# What the definition's service runs on each start (sdpod-pod-generator(8)),
# run twice as systemd would.
[ -x "${SDPOD_POD_GENERATOR:-}" ] || die "SDPOD_POD_GENERATOR is not set (meson sets it)"
mkdir -p "$T/gen/etc/sdpod/pods" "$T/gen/out"
cat >"$T/gen/etc/sdpod/pods/keeper.pod" <<'EOF'
[Pod]
Volume=store,kind=named,source=keeperdata

[App]
Image=busybox
Exec=/bin/sh -c "echo x >>/store/n"
Mount=volume=store,target=/store
EOF
SDPOD_POD_GENERATOR_ROOT="$T/gen" "$SDPOD_POD_GENERATOR" "$T/gen/out" "$T/gen/early" "$T/gen/late" 2>"$T/gen/log" ||
	die "sdpod-pod-generator failed: $(cat "$T/gen/log")"
exec_start=$(sed -n 's/^ExecStart=//p' "$T/gen/out/keeper.service")
# The unit's sdpod (the installed one) is this test's, on its data
# directory; systemd's "$$" is "$".
def_args=$(sed 's/\$\$/$/g' <<<"${exec_start#* }")
def_run() { eval "sd $def_args" >"$T/run.out" 2>&1; }
def_run || true
D1=$(sd list --format=json | jq -r '.[] | select(.name == "keeper") | .uuid')
DB1=$(base_of "$D1")
def_run || true
D2=$(sd list --format=json | jq -r '.[] | select(.name == "keeper") | .uuid')
assert_ne "each start of the definition is a new pod" "$D1" "$D2"
assert_eq "with the range of the first" "$DB1" "$(base_of "$D2")"
assert_eq "and its data: the second pod wrote after the first" "x x" "$(tr '\n' ' ' <"$DATA/volumes/keeperdata/data/n" | sed 's/ $//')"
remove_all_pods
sd volume rm keeperdata >/dev/null

# ---------------------------------------------------------------------------
echo "# named volumes keep their data across the pods of a name"
# ---------------------------------------------------------------------------
run_pod V1 --name=db -v pgdata:/data busybox --exec=/bin/sh -- -c 'echo kept >/data/f && id -u >/data/who'
assert_eq "a named volume was made on first use" "kept" "$(cat "$DATA/volumes/pgdata/data/f" 2>/dev/null)"
VB=$(base_of "$V1")
U=$(cat "$DATA/volumes/pgdata/data/who") # the image's user
assert_eq "its data is the pod's range's" "$((VB + U)):$((VB + U))" "$(owner "$DATA/volumes/pgdata/data/f")"
run_pod V2 --name=db -v pgdata:/data busybox --exec=/bin/sh -- -c 'cat /data/f >/data/g; echo more >>/data/f'
assert_eq "the next pod of the name reads and writes it" "kept" "$(cat "$DATA/volumes/pgdata/data/g" 2>/dev/null)"
assert_eq "the record names the range" "$VB" "$(jq -r .base "$DATA/volumes/pgdata/volume.json")"
# An app of another user: a new volume is given to the first app that mounts it.
run_pod V3 --volume=data,kind=named,source=appdata busybox --user=1000 --group=1000 --mount=volume=data,target=/d \
	--exec=/bin/sh -- -c 'echo mine >/d/f'
B3=$(base_of "$V3")
assert_eq "a new named volume is its app's user's" "$((B3 + 1000)):$((B3 + 1000))" "$(owner "$DATA/volumes/appdata/data")"
assert_eq "which can write it" "mine" "$(cat "$DATA/volumes/appdata/data/f" 2>/dev/null)"

# A hostile pod plants links for the re-own to follow, and a set-user-ID file.
run_pod V4 --name=db -v pgdata:/data busybox --exec=/bin/sh -- -c "ln -s /etc/shadow /data/shadow; ln -s $SENTINEL /data/sentinel; mkdir /data/sub; ln -s /etc /data/sub/etc; cp /bin/busybox /data/suid; chmod 4755 /data/suid"
# A pod of another name (another range) re-owns the volume.
run_pod V5 --name=web -v pgdata:/data busybox --exec=/bin/sh -- -c 'cat /data/f >/data/h && echo ok >/data/w'
WB=$(base_of "$V5")
assert_eq "a pod of another range can use it (re-owned)" "ok" "$(cat "$DATA/volumes/pgdata/data/w" 2>/dev/null)"
assert_eq "what the old range owned keeps its id in the pod" "$((WB + U)):$((WB + U))" "$(owner "$DATA/volumes/pgdata/data/f")"
assert_eq "a planted link is re-owned itself" "$((WB + U)):$((WB + U))" "$(stat -c %u:%g "$DATA/volumes/pgdata/data/shadow")"
assert_eq "/etc/shadow is not re-owned through it" "$shadow_before" "$(owner /etc/shadow)"
assert_eq "nor the sentinel" "0:0" "$(owner "$SENTINEL")"
assert_eq "nor /etc through a link in a subdirectory" "0:0" "$(owner /etc)"
assert_file_exists "$DATA/volumes/pgdata/data/suid"
check_not "the re-owned file lost its set-user-ID bit" test -u "$DATA/volumes/pgdata/data/suid"
assert_eq "the record follows the range" "$WB" "$(jq -r .base "$DATA/volumes/pgdata/volume.json")"

# The mount is nosuid and nodev in the pod, read from the host.
run_bg R --name=db2 -v pgdata:/data busybox --exec=/bin/sleep -- 300
wait_app "$R" busybox
flags=$(mount_opts "$(app_pid "$R" sleep)" /data)
assert_match "a named volume is mounted nosuid and nodev" 'nosuid.*nodev|nodev.*nosuid' "$flags"

# While it runs, a pod of another range cannot re-own the volume.
run_pod V6 --name=third -v pgdata:/data busybox --exec=/bin/true
assert_contains "a re-own under a running pod is refused" "$(cat "$T/run.out")" "in use by a running pod"

# ---------------------------------------------------------------------------
echo "# sdpod volume list, inspect, rm, prune"
# ---------------------------------------------------------------------------
assert_exit 0 sd volume list --no-legend
assert_contains "list shows pgdata" "$OUT" "pgdata"
assert_contains "list shows appdata" "$OUT" "appdata"
assert_exit 0 sd volume inspect pgdata
assert_eq "inspect names its directory" "$DATA/volumes/pgdata/data" "$(jq -r .directory <<<"$OUT")"
assert_contains "inspect names the running pod" "$(jq -r '.pods[].uuid' <<<"$OUT")" "$R"
assert_exit 4 sd volume rm pgdata
assert_contains "rm of a volume in use is refused" "$ERR" "in use by"
sd stop "$R" >/dev/null
wait_pid "$R_PID"
assert_exit 4 sd volume rm pgdata
assert_contains "rm names the pod that uses it" "$ERR" "in use by pod"
assert_exit 2 sd volume rm ../etc
assert_contains "a path is not a volume name" "$ERR" "not a volume name"
remove_all_pods
assert_exit 0 sd volume rm appdata
check_not "rm removed it" test -e "$DATA/volumes/appdata"
mkdir -p "$T/spare" # prune: every volume no pod uses
assert_exit 0 sd volume prune
assert_contains "prune removed pgdata" "$OUT" "pgdata"
assert_eq "nothing is left" "" "$(sd volume list --no-legend)"

# A named volume's directory replaced by a symlink: refused, never followed.
run_pod S1 -v swap:/data busybox --exec=/bin/true
rm -rf "$DATA/volumes/swap/data"
ln -s /etc "$DATA/volumes/swap/data"
run_pod S2 -v swap:/data busybox --exec=/bin/true
assert_contains "a volume whose directory is a symlink is refused" "$(cat "$T/run.out")" "is not a directory"
assert_eq "/etc is left alone" "0:0" "$(owner /etc)"
remove_all_pods
rm -f "$DATA/volumes/swap/data"
sd volume rm swap >/dev/null

# Names that are paths.
assert_exit 2 sd prepare -v ../x:/d busybox --exec=/bin/true
assert_exit 2 sd prepare --volume=d,kind=named,source=a/b busybox --exec=/bin/true
assert_exit 2 sd prepare -v .:/d busybox --exec=/bin/true
check_not "no volume was made of them" test -e "$T/x"

# ---------------------------------------------------------------------------
echo "# chown=true: a host directory given to the app's user at start"
# ---------------------------------------------------------------------------
H="$T/host-chown"
mkdir -p "$H/sub"
echo old >"$H/sub/file"
ln -s "$SENTINEL" "$H/link"
run_pod C1 -v "$H:/data:U" busybox --user=1000 --group=1000 --exec=/bin/sh -- -c 'echo written >/data/new && ln -s /etc/shadow /data/evil'
CB=$(base_of "$C1")
assert_eq "the app's user can write it" "written" "$(cat "$H/new" 2>/dev/null)"
assert_eq "the directory is the app's user's" "$((CB + 1000)):$((CB + 1000))" "$(owner "$H")"
assert_eq "recursively" "$((CB + 1000)):$((CB + 1000))" "$(owner "$H/sub/file")"
assert_eq "a link is re-owned itself" "$((CB + 1000)):$((CB + 1000))" "$(stat -c %u:%g "$H/link")"
assert_eq "not what it names" "0:0" "$(owner "$SENTINEL")"
run_pod C2 -v "$H:/data:U" busybox --user=1000 --group=1000 --exec=/bin/true
assert_eq "the link the pod planted was not followed at the next start" "$shadow_before" "$(owner /etc/shadow)"
# Another mount below it is not crossed.
mkdir "$H/mnt"
mount -t tmpfs -o size=1M tmpfs "$H/mnt"
touch "$H/mnt/other"
run_pod C3 -v "$H:/data:U" busybox --user=1000 --group=1000 --exec=/bin/true
assert_eq "a mount below is not crossed" "0:0" "$(owner "$H/mnt/other")"
umount "$H/mnt"
remove_all_pods

# ---------------------------------------------------------------------------
echo "# idmap=true: owners seen as they are, nosuid and nodev"
# ---------------------------------------------------------------------------
I="$T/host-idmap"
mkdir "$I"
echo data >"$I/f"
chown 1234:1234 "$I/f"
run_bg M -v "$I:/data:idmap" busybox --exec=/bin/sleep -- 300
wait_app "$M" busybox
assert_eq "the pod sees the host's owners" "1234:1234" "$(sd enter "$M" /bin/stat -c %u:%g /data/f)"
sd enter "$M" /bin/sh -c 'echo by-root >/data/r; cp /bin/busybox /data/suid; chmod 4755 /data/suid' || true
assert_eq "what the pod's root writes is the host's root's" "0:0" "$(owner "$I/r")"
flags=$(mount_opts "$(app_pid "$M" sleep)" /data)
assert_match "an idmapped volume is mounted nosuid and nodev" 'nosuid.*nodev|nodev.*nosuid' "$flags"
assert_contains "and idmapped" "$flags" "idmapped"
sd stop "$M" >/dev/null
wait_pid "$M_PID"
remove_all_pods
assert_exit 2 sd prepare --private-users=no -v "$I:/data:idmap" busybox --exec=/bin/true
assert_contains "idmap needs the pod's user namespace" "$ERR" "user namespace"

# ---------------------------------------------------------------------------
echo "# -v forms"
# ---------------------------------------------------------------------------
RO="$T/host-ro"
mkdir "$RO"
echo ro >"$RO/f"
run_pod F1 -v "$RO:/r:ro" busybox --exec=/bin/sh -- -c 'cat /r/f >/dev/null && ! touch /r/x'
check_not "-v SRC:DST:ro is read-only" test -e "$RO/x"
assert_eq "the app saw it" "1" "$(sd cat-manifest "$F1" | jq '[.volumes[] | select(.readOnly == true)] | length')"
remove_all_pods
sd volume prune >/dev/null

leak_check
