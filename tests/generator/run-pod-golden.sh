#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
#
# Golden tests of sdpod-pod-generator, the host's generator of pods kept as
# services (sdpod-pod-generator(8)). Each directory pods/CASE/ is one case:
#
#   CASE/pods/            the definitions, copied to ROOT/etc/sdpod/pods/
#                         (absent: there is no such directory)
#   CASE/expected/        the whole tree the generator must write; "@SDPOD@"
#                         stands for the installed sdpod of the build
#   CASE/expected-log     the generator's log, exactly (absent: empty)
#
# The runner runs the generator with SDPOD_POD_GENERATOR_ROOT=ROOT and three
# fresh output directories and compares the normal one with expected/ as a
# whole (every file, every symlink target, nothing more); the early and
# late ones must stay empty and the generator must exit 0, whatever the
# definitions hold. Then systemd-analyze verify (when there) loads every
# unit written, in a scratch root made of this machine's
# /usr/lib/systemd/system, the units written and a stand-in sdpod: every
# directive must parse, every unit named exist, ExecStart='s program exist.
# Run without arguments (a check), the generator must log the same, write
# nothing and exit 1 exactly when a definition is bad.
#
# Usage: run-pod-golden.sh GENERATOR SDPOD_PATH [CASE...]
# With SDPOD_UPDATE_GOLDEN=1, expected/ and expected-log are rewritten from
# the output (review the diff before committing it).
set -uo pipefail

if (($# < 2)); then
        echo "usage: $0 GENERATOR SDPOD_PATH [CASE...]" >&2
        exit 2
fi
generator=$(realpath "$1")
sdpod_path=$2
shift 2
here=$(cd "$(dirname "$0")" && pwd)/pods

cases=("$@")
if ((${#cases[@]} == 0)); then
        for d in "$here"/*/; do
                cases+=("$(basename "$d")")
        done
fi
((${#cases[@]} > 0)) || { echo "no cases in $here" >&2; exit 1; }

tmp=$(mktemp -d "${TMPDIR:-/tmp}/sdpod-pod-golden.XXXXXX")
trap 'rm -rf -- "$tmp"' EXIT

passed=0
failed=0
fail() {
        echo "FAIL $case: $*"
        case_failed=1
}

have_verify=0
command -v systemd-analyze >/dev/null && [[ -d /usr/lib/systemd/system ]] && have_verify=1

# verify OUT: systemd-analyze verify on every unit of OUT; prints what it
# reports.
verify() {
        local out=$1 vroot=$tmp/$case/verify f units=()
        mkdir -p "$vroot/etc/systemd/system" "$vroot/usr/lib/systemd" "$vroot$(dirname "$sdpod_path")"
        cp -a /usr/lib/systemd/system "$vroot/usr/lib/systemd/"
        printf '#!/bin/sh\n' >"$vroot$sdpod_path"
        chmod 755 "$vroot$sdpod_path"
        cp -a "$out"/. "$vroot/etc/systemd/system/"
        for f in "$out"/*.service; do
                [[ -f $f ]] && units+=("$(basename "$f")")
        done
        ((${#units[@]})) || return 0
        (cd "$vroot" && systemd-analyze verify --root="$vroot" --man=no --generators=no "${units[@]}" 2>&1)
}

for case in "${cases[@]}"; do
        dir=$here/$case
        case_failed=0
        root=$tmp/$case/root
        out=$tmp/$case/normal
        mkdir -p "$root" "$out" "$tmp/$case/early" "$tmp/$case/late"
        if [[ -d $dir/pods ]]; then
                mkdir -p "$root/etc/sdpod"
                cp -a "$dir/pods" "$root/etc/sdpod/pods"
        fi
        log=$tmp/$case/log
        SDPOD_POD_GENERATOR_ROOT=$root "$generator" "$out" "$tmp/$case/early" "$tmp/$case/late" 2>"$log"
        rc=$?
        [[ $rc -eq 0 ]] || fail "exit status $rc, log: $(cat "$log")"
        [[ -z $(find "$tmp/$case/early" "$tmp/$case/late" -mindepth 1) ]] || fail "wrote into the early or late directory"

        if [[ ${SDPOD_UPDATE_GOLDEN:-} == 1 ]]; then
                rm -rf "$dir/expected" "$dir/expected-log"
                if [[ -n $(find "$out" -mindepth 1) ]]; then
                        cp -a "$out" "$dir/expected"
                        grep -rlF -- "$sdpod_path" "$dir/expected" | xargs -r sed -i "s|$sdpod_path|@SDPOD@|g"
                fi
                [[ -s $log ]] && cp "$log" "$dir/expected-log"
        fi
        expected=$tmp/$case/expected
        mkdir -p "$expected"
        [[ -d $dir/expected ]] && cp -a "$dir/expected/." "$expected/"
        grep -rlF -- "@SDPOD@" "$expected" | xargs -r sed -i "s|@SDPOD@|$sdpod_path|g"
        if ! d=$(diff -r --no-dereference "$expected" "$out" 2>&1); then
                fail "output differs from expected/:"$'\n'"$d"
        fi
        if ! d=$(diff <(cat "$dir/expected-log" 2>/dev/null) "$log"); then
                fail "log differs from expected-log:"$'\n'"$d"
        fi
        # Without arguments, a check: the same log on stderr, nothing
        # written, exit 1 when a definition is bad.
        check_log=$tmp/$case/check-log
        (cd "$tmp/$case" && SDPOD_POD_GENERATOR_ROOT=$root "$generator" 2>"$check_log")
        rc=$?
        want=0
        [[ -s $log ]] && want=1
        [[ $rc -eq $want ]] || fail "the check exited $rc, not $want"
        cmp -s "$log" "$check_log" || fail "the check's log differs: $(cat "$check_log")"
        [[ -z $(find "$tmp/$case" -mindepth 1 -maxdepth 1 -newer "$check_log" ! -name check-log) ]] ||
                fail "the check wrote: $(find "$tmp/$case" -mindepth 1 -maxdepth 1 -newer "$check_log" ! -name check-log)"
        if ((have_verify)); then
                report=$(verify "$out")
                [[ -z $report ]] || fail "systemd-analyze verify: $report"
        fi

        if ((case_failed)); then
                failed=$((failed + 1))
        else
                passed=$((passed + 1))
                echo "ok $case"
        fi
done

# verify must be able to fail, or its silence above proves nothing: a unit
# the generator wrote, with a value systemd refuses, must be reported.
if ((have_verify)); then
        case=verify-selftest
        case_failed=0
        out=$tmp/$case/normal
        mkdir -p "$out"
        printf '[Service]\nType=notify\nExecStart=%s run busybox\nRestartSec=1x\n' "$sdpod_path" >"$out/bad.service"
        report=$(verify "$out")
        [[ $report == *"Failed to parse sec value"* ]] || fail "a bad unit passed verify: $report"
        if ((case_failed)); then failed=$((failed + 1)); else passed=$((passed + 1)) && echo "ok $case"; fi
else
        echo "note: systemd-analyze or /usr/lib/systemd/system not found, units were not verified"
fi

echo "pod-golden: $passed passed, $failed failed"
((failed == 0))
