#!/bin/bash
#
# test-image-import-interrupt.sh - long imports: progress on a terminal
# (bytes, layers; redrawn in place) and nothing in a pipe; SIGINT and
# SIGTERM in the middle free what the import staged and say how much; a
# SIGKILL leaves staging that image gc frees and counts, also while another
# import runs, whose staging it must not take.
#
# The image is one layer of a single large file (zeros, uncompressed), so
# that an import takes seconds; the signals are sent when the store shows
# the import in the stage wanted, not after a guessed delay.

. "$(dirname "$0")/lib.sh"

require_root "the store's staging is checked as root writes it"
require_tool python3
require_tool jq

leak_begin

SIZE_MB=${SIZE_MB:-512}
echo "# building a ${SIZE_MB}M image"
mkdir -p "$T/src/etc"
head -c "${SIZE_MB}M" /dev/zero >"$T/src/etc/big"
tar --create --file="$T/big.tar" --format=gnu --numeric-owner --owner=0 --group=0 -C "$T/src" etc
rm -rf -- "$T/src"
oci_layout_new "$T/oci" "$(host_arch)" "$T/big.tar"
rm -f -- "$T/big.tar"
tar --create --file="$T/big-oci.tar" -C "$T/oci" .
ID=$(oci_manifest_digest "$T/oci")

# ptyrun SIGNAL-WHEN COMMAND...: COMMAND on a new pseudo-terminal (stdin,
# stdout and stderr); everything it wrote goes to $T/pty.out, its exit
# status to $T/pty.rc. SIGNAL-WHEN "-" sends nothing, else
# "SIG:FILE-GLOB[:MIN-BYTES]": SIG once a path matching the glob exists (and
# has at least MIN-BYTES).
cat >"$T/ptyrun.py" <<'EOF'
import glob, os, pty, select, signal, sys, time
when, argv = sys.argv[1], sys.argv[2:]
pid, fd = pty.fork()
if pid == 0:
    os.execv(argv[0], argv)
sig, pattern, least = (None, None, 0) if when == "-" else (when.split(":") + [0])[:3]
def reached():
    for p in glob.glob(pattern):
        try:
            if os.lstat(p).st_size >= int(least):
                return True
        except OSError:
            pass
    return False
out = b""
deadline = time.time() + 120
while time.time() < deadline:
    if sig and reached():
        os.kill(pid, getattr(signal, "SIG" + sig))
        sig = None
    r, _, _ = select.select([fd], [], [], 0.02)
    if r:
        try:
            data = os.read(fd, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not data:
            break
        out += data
_, status = os.waitpid(pid, 0)
open(sys.argv[0] + ".out", "wb").write(out)
open(sys.argv[0] + ".rc", "w").write(str(os.waitstatus_to_exitcode(status)))
EOF
ptyrun() {
	python3 "$T/ptyrun.py" "$@"
	PTY_OUT=$(cat "$T/ptyrun.py.out")
	PTY_RC=$(cat "$T/ptyrun.py.rc")
}

# empty_store WHAT: no record, no blob, no tree, no staging.
empty_store() {
	assert_eq "$1: no record" "" "$(ls -A "$DATA/images/db")"
	assert_eq "$1: no blob" "" "$(ls -A "$DATA/images/blobs/sha256")"
	assert_eq "$1: no tree" "" "$(ls -A "$DATA/tree")"
	assert_dir_empty "$1: no staging" "$DATA/images/tmp"
}

# --- progress ----------------------------------------------------------------------
echo "# progress on a terminal"
ptyrun - "$SDPOD" --dir="$DATA" image import "$T/big-oci.tar"
assert_eq "import on a terminal succeeds" 0 "$PTY_RC"
assert_contains "it prints the id" "$PTY_OUT" "$ID"
assert_match "it shows the bytes read of the archive" 'reading: [0-9.]+M of [0-9.]+M \([0-9]+%\)' "$PTY_OUT"
assert_match "it shows the layer rendered" 'rendering layer 1 of 1: [0-9.]+M of [0-9.]+M' "$PTY_OUT"
# Redrawn in place: carriage returns and erase-line, never a newline
# between two updates, and the line erased before the id is printed.
assert_contains "each update goes back to the start of the line and erases it" "$PTY_OUT" $'\r'"reading: "
assert_eq "no update ends with a newline" 0 "$(grep -c 'reading: .*%)$' <<<"${PTY_OUT//$'\r'/$'\n'}" || true)"
assert_contains "the progress line is erased at the end" "$PTY_OUT" $'\r\e[K'"$ID"
assert_exit 0 sd image rm "$ID"
assert_exit 0 sd image gc

echo "# nothing in a pipe"
# stderr to a file (assert_exit), and to a pipe.
assert_exit 0 sd image import "$T/oci"
assert_eq "stdout: only the id" "$ID" "$OUT"
assert_eq "stderr to a file: nothing" "" "$ERR"
assert_exit 0 sd image rm "$ID"
piped=$("$SDPOD" --dir="$DATA" image import "$T/big-oci.tar" 2>&1 | cat)
assert_eq "stderr and stdout to a pipe: only the id" "$ID" "$piped"
assert_exit 0 sd image rm "$ID"
ptyrun - /usr/bin/env TERM=dumb "$SDPOD" --dir="$DATA" image import "$T/oci"
assert_eq "on a dumb terminal (which cannot erase a line): only the id" "0 $ID" "$PTY_RC ${PTY_OUT%$'\r'}"
assert_exit 0 sd image rm "$ID"
assert_exit 0 sd image gc
empty_store "after the progress checks"

# --- SIGINT, SIGTERM ---------------------------------------------------------------------
# interrupted SIG STAGE-GLOB SOURCE [MIN-MB]: an import of SOURCE on a
# terminal gets SIG once the store shows STAGE-GLOB; it must stop, say what
# it freed (at least MIN-MB) and leave nothing.
interrupted() {
	local sig=$1 glob=$2 src=$3 min=${4:-0} num freed
	num=$(kill -l "$sig")
	ptyrun "$sig:$glob" "$SDPOD" --dir="$DATA" image import "$src"
	assert_eq "$sig while $(basename "${glob%:*}"): exit 128 + $num" $((128 + num)) "$PTY_RC"
	assert_match "$sig: it says it was interrupted and what it freed" \
		"sdpod image import: $src: interrupted \\(SIG$sig\\); removed what it had staged \\([1-9][0-9.]*[KMG]\\)" "$PTY_OUT"
	assert_not_contains "$sig: no id printed" "$PTY_OUT" "$ID"
	freed=$(tr '\r' '\n' <<<"$PTY_OUT" | sed -n 's/.*removed what it had staged (\([0-9.]*\)M).*/\1/p')
	check "$sig: it freed at least ${min}M (${freed:-?}M)" awk -v f="${freed:-0}" -v m="$min" 'BEGIN { exit !(f >= m) }'

	echo "# $(tr '\r' '\n' <<<"$PTY_OUT" | grep interrupted || true)"
	empty_store "after $sig"
}
echo "# SIGINT while unpacking the archive"
interrupted INT "$DATA/images/tmp/import-*/archive/blobs/sha256/*" "$T/big-oci.tar"
echo "# SIGINT while copying the layer of a layout"
interrupted INT "$DATA/images/tmp/import-*/blobs/.tmp-*:$((64 << 20))" "$T/oci" 64
echo "# SIGTERM while rendering"
interrupted TERM "$DATA/images/tmp/render-*/rootfs/etc/big" "$T/big-oci.tar" 100
# Without a terminal the same: the message on stderr, nothing on stdout.
echo "# SIGINT without a terminal"
"$SDPOD" --dir="$DATA" image import "$T/oci" >"$T/bg.out" 2>"$T/bg.err" &
pid=$!
wait_until 60 compgen -G "$DATA/images/tmp/render-*/rootfs/etc/big" || fail "the import never started rendering"
kill -INT "$pid"
rc=0
wait "$pid" || rc=$?
assert_eq "SIGINT in a script: exit 130" 130 "$rc"
assert_eq "SIGINT in a script: nothing on stdout" "" "$(cat "$T/bg.out")"
assert_match "SIGINT in a script: the message on stderr, no progress" \
	'^sdpod image import: .*: interrupted \(SIGINT\); removed what it had staged \([0-9.]+[KMG]\)$' "$(cat "$T/bg.err")"
empty_store "after SIGINT in a script"

# --- SIGKILL: gc frees it, also while another import runs -------------------------------
echo "# SIGKILL while rendering"
"$SDPOD" --dir="$DATA" image import "$T/big-oci.tar" >/dev/null 2>&1 &
pid=$!
wait_until 60 compgen -G "$DATA/images/tmp/render-*/rootfs/etc/big" || fail "the import never started rendering"
sleep 0.5
kill -KILL "$pid"
wait "$pid" 2>/dev/null || true
left_kb=$(du -sk "$DATA/images/tmp" | cut -f1)
dead=$(ls "$DATA/images/tmp")
echo "# the killed import left $((left_kb / 1024))M in images/tmp: ${dead//$'\n'/ }"
check "SIGKILL leaves staging (what gc is for)" test "$left_kb" -gt 10240

echo "# gc while another import runs"
# gc does not wait for the live import: it frees what the dead one left
# (its staging can be locked: no one holds it) and keeps the live one's.
"$SDPOD" --dir="$DATA" image import "$T/big-oci.tar" >"$T/imp.out" 2>"$T/imp.err" &
imp=$!
# The dead import's staging matches the same pattern: wait for a new one.
live_staging() {
	local d
	for d in "$DATA"/images/tmp/import-*; do
		[[ -d $d/archive/blobs && " ${dead//$'\n'/ } " != *" ${d##*/} "* ]] && return 0
	done
	return 1
}
wait_until 60 live_staging || fail "the live import never started"
t0=$(date +%s%N)
assert_exit 0 sd image gc
t1=$(date +%s%N)
echo "# gc: $OUT (in $(((t1 - t0) / 1000000)) ms)"
echo "# gc: $ERR"
check "gc did not wait for the live import" kill -0 "$imp"
assert_match "gc frees the two staging directories of the dead import and says how much" \
	'^removed 0 blobs, 0 trees, 2 leftovers of interrupted imports \([0-9.]+[MG] freed\)$' "$OUT"
assert_contains "gc says it left blobs and trees for later, as an import runs" "$ERR" \
	"(1 staging directories in use): blobs and trees were not collected"
freed=$(sed -E 's/.*\(([0-9.]+)([MG]) freed\)$/\1 \2/' <<<"$OUT")
freed_kb=$(awk -v n="${freed% *}" -v u="${freed#* }" 'BEGIN { printf "%d", n * (u == "G" ? 1048576 : 1024) }')
check "gc's figure is what du saw (within 5%): $freed_kb KiB vs $left_kb KiB" \
	test $((freed_kb * 100)) -ge $((left_kb * 95)) -a $((freed_kb * 100)) -le $((left_kb * 105))
for d in $dead; do
	assert_file_absent "$DATA/images/tmp/$d"
done
rc=0
wait "$imp" || rc=$?
assert_eq "the live import succeeds all the same" "0 $ID" "$rc $(cat "$T/imp.out")"
store_verify
assert_exit 0 sd image gc
assert_eq "a gc with the store to itself: nothing left of the killed import, nothing of the live one taken" \
	"removed 0 blobs, 0 trees, 0 leftovers of interrupted imports" "${OUT% (*}"
assert_eq "... and no message" "" "$ERR"
store_verify
assert_exit 0 sd image rm "$ID"
assert_exit 0 sd image gc
empty_store "at the end"

leak_check
