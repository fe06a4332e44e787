#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
#
# Golden tests of sdpod-generator, in the manner of systemd's generator
# tests: each directory CASE/ beside this script that has an "assertions"
# file is one case:
#
#   CASE/pod              the pod manifest (absent: the pod has none)
#   CASE/rootfs/NAME/...  the root file system of app NAME
#   CASE/expected/        the whole tree the generator must write
#   CASE/assertions       single directives and log lines to check (below)
#
# The runner builds a pod root (ROOT/sdpod/pod, ROOT/opt/stage2/NAME/rootfs),
# runs the generator on it with SDPOD_GENERATOR_ROOT=ROOT and three fresh
# output directories, and compares the normal directory with CASE/expected
# as a whole: every file, every symlink target, nothing more. The early and
# late directories must stay empty, and the generator must exit 0.
#
# Then systemd-analyze verify (when there) loads every unit written, and
# the unit of every drop-in written (default.target for UNIT.d/), with the
# stage1 units beside them, in a scratch root made of the units, stand-ins
# of /usr/lib/sdpod/pod-helper and of the apps' /dev/.sdpod-app-domain, and
# the union of the case's app roots. What that checks: every directive
# parses (an unknown key, a bad Environment= name, an unknown system call, a
# malformed ExecStart= are all reported), every unit referred to exists
# (OnFailure= units are named to it, as it does not load them), and each
# ExecStart=/ExecStop= program exists and is executable: app-domain, whose
# first argument is the app's program (named exactly by the golden files).
# What it cannot check: verify ignores RootDirectory= and looks
# for programs from the scratch root, so it does not prove which app's root
# holds the program; the golden files do (they name the path exactly), and
# the unit tests check the lookup inside each root.
#
# assertions, one per line ('#' starts a comment):
#   key UNIT SECTION KEY=VALUE     UNIT has the line KEY=VALUE in [SECTION]
#   no-key UNIT SECTION KEY        UNIT has no KEY= line in [SECTION]
#   log TEXT                       the generator's log has a line containing TEXT
#   log-lines N                    the log has exactly N lines
#   output-empty                   nothing is written (no expected/ needed:
#                                  git keeps no empty directory)
#   passwd LINE / group LINE       the pod's /etc/passwd (group) has LINE: the
#                                  generator adds the ids apps run as
#
# The pod root's /etc starts as the stage1's: root and nobody.
#
# Usage: run-golden.sh GENERATOR STAGE1_UNITS_DIR [CASE...]
# With SDPOD_UPDATE_GOLDEN=1, CASE/expected is rewritten from the output
# (review the diff before committing it).
set -uo pipefail

if (($# < 2)); then
        echo "usage: $0 GENERATOR STAGE1_UNITS_DIR [CASE...]" >&2
        exit 2
fi
generator=$(realpath "$1")
stage1_units=$(realpath "$2")
shift 2
here=$(cd "$(dirname "$0")" && pwd)

cases=("$@")
if ((${#cases[@]} == 0)); then
        for d in "$here"/*/; do
                [[ -f $d/assertions ]] && cases+=("$(basename "$d")")
        done
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/sdpod-golden.XXXXXX")
trap 'rm -rf -- "$tmp"' EXIT

passed=0
failed=0
fail() {
        echo "FAIL $case: $*"
        case_failed=1
}

have_verify=0
command -v systemd-analyze >/dev/null && have_verify=1

# unit_key UNIT_FILE SECTION KEY: every value of KEY in [SECTION], one a line.
unit_key() {
        awk -v section="[$2]" -v key="$3" '
                /^\[/ { in_section = ($0 == section); next }
                in_section && index($0, key "=") == 1 { print substr($0, length(key) + 2) }
        ' "$1"
}

run_assertions() {
        local out=$1 log=$2 line cmd unit section kv key
        while IFS= read -r line || [[ -n $line ]]; do
                [[ -z ${line// /} || $line == \#* ]] && continue
                read -r cmd rest <<<"$line"
                case $cmd in
                key)
                        read -r unit section kv <<<"$rest"
                        key=${kv%%=*}
                        [[ -f $out/$unit ]] || { fail "$line: no $unit"; continue; }
                        unit_key "$out/$unit" "$section" "$key" | grep -qxF -- "${kv#*=}" ||
                                fail "$line: [$section] of $unit has $key=$(unit_key "$out/$unit" "$section" "$key" | head -1)"
                        ;;
                no-key)
                        read -r unit section key <<<"$rest"
                        [[ -f $out/$unit ]] || { fail "$line: no $unit"; continue; }
                        [[ -z $(unit_key "$out/$unit" "$section" "$key") ]] || fail "$line: $key= is there"
                        ;;
                log)
                        grep -qF -- "$rest" "$log" || fail "$line: not in the log: $(cat "$log")"
                        ;;
                output-empty) ;; # checked with the tree
                passwd | group)
                        grep -qxF -- "$rest" "$root/etc/$cmd" ||
                                fail "$line: not in /etc/$cmd: $(tr '\n' ' ' <"$root/etc/$cmd")"
                        ;;
                log-lines)
                        [[ $(wc -l <"$log") -eq $rest ]] || fail "$line: the log has $(wc -l <"$log") lines"
                        ;;
                *)
                        fail "unknown assertion: $line"
                        ;;
                esac
        done <"$here/$case/assertions"
}

# verify OUT CASE_DIR: systemd-analyze verify on every unit of OUT.
verify() {
        local out=$1 dir=$2 vroot=$tmp/$case/verify app
        mkdir -p "$vroot/etc/systemd/system" "$vroot/usr/lib/sdpod"
        cp "$stage1_units"/* "$vroot/etc/systemd/system/"
        cp -a "$out"/. "$vroot/etc/systemd/system/"
        if [[ -d $dir/rootfs ]]; then
                for app in "$dir"/rootfs/*/; do
                        cp -a "$app". "$vroot/" 2>/dev/null || true
                done
        fi
        printf '#!/bin/sh\n' >"$vroot/usr/lib/sdpod/pod-helper"
        chmod 755 "$vroot/usr/lib/sdpod/pod-helper"
        mkdir -p "$vroot/dev"
        printf '#!/bin/sh\n' >"$vroot/dev/.sdpod-app-domain"
        chmod 755 "$vroot/dev/.sdpod-app-domain"
        local units=() d f u
        for f in "$out"/*.service; do
                [[ -f $f ]] && units+=("$(basename "$f")")
        done
        # A drop-in (UNIT.d/NAME.conf) is checked by loading its unit. The
        # exec templates have no unit file: their instances are transient
        # units (sdpod enter, podapp exec), stood in for by a bare one.
        for d in "$out"/*.d/; do
                [[ -d $d ]] || continue
                u=$(basename "$d" .d)
                units+=("$u")
                if [[ $u == sdpod-exec-*@.service || $u == sdpod-enter-*@.service ]]; then
                        printf '[Service]\nExecStart=/usr/lib/sdpod/pod-helper\n' >"$vroot/etc/systemd/system/$u"
                fi
        done
        # verify does not load what OnFailure= names: named here, so that
        # a missing one (app-failed@.service of the stage1) is reported.
        local -A on_failure=()
        for f in "$out"/*.service; do
                [[ -f $f ]] || continue
                for u in $(unit_key "$f" Unit OnFailure); do
                        on_failure[$u]=1
                done
        done
        units+=("${!on_failure[@]}")
        ((${#units[@]})) || return 0
        local report
        report=$(cd "$vroot" && systemd-analyze verify --root="$vroot" --man=no --generators=no "${units[@]}" 2>&1)
        [[ -z $report ]] || fail "systemd-analyze verify: $report"
}

for case in "${cases[@]}"; do
        dir=$here/$case
        case_failed=0
        root=$tmp/$case/root
        out=$tmp/$case/normal
        mkdir -p "$root/sdpod" "$root/opt/stage2" "$root/etc" "$out" "$tmp/$case/early" "$tmp/$case/late"
        printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/:/usr/sbin/nologin\n' >"$root/etc/passwd"
        printf 'root:x:0:\nnogroup:x:65534:\n' >"$root/etc/group"
        [[ -f $dir/pod ]] && cp "$dir/pod" "$root/sdpod/pod"
        if [[ -d $dir/rootfs ]]; then
                for app in "$dir"/rootfs/*/; do
                        name=$(basename "$app")
                        mkdir -p "$root/opt/stage2/$name"
                        cp -a "$app" "$root/opt/stage2/$name/rootfs"
                done
        fi
        # Files a case needs in the pod's root outside the app roots (to
        # show that nothing leads there) are in CASE/pod-root/.
        [[ -d $dir/pod-root ]] && cp -a "$dir/pod-root/." "$root/"

        log=$tmp/$case/log
        SDPOD_GENERATOR_ROOT=$root "$generator" "$out" "$tmp/$case/early" "$tmp/$case/late" 2>"$log"
        rc=$?
        [[ $rc -eq 0 ]] || fail "exit status $rc, log: $(cat "$log")"
        [[ -z $(find "$tmp/$case/early" "$tmp/$case/late" -mindepth 1) ]] || fail "wrote into the early or late directory"

        if [[ ${SDPOD_UPDATE_GOLDEN:-} == 1 ]]; then
                rm -rf "$dir/expected"
                cp -a "$out" "$dir/expected"
        fi
        if grep -qx "output-empty" "$dir/assertions"; then
                [[ -z $(find "$out" -mindepth 1) ]] || fail "output-empty, but it wrote: $(find "$out" -mindepth 1)"
        elif [[ ! -d $dir/expected ]]; then
                fail "no expected/ (run with SDPOD_UPDATE_GOLDEN=1 to create it)"
        elif ! d=$(diff -r --no-dereference "$dir/expected" "$out" 2>&1); then
                fail "output differs from expected/:"$'\n'"$d"
        fi
        run_assertions "$out" "$log"
        ((have_verify)) && verify "$out" "$dir"

        if ((case_failed)); then
                failed=$((failed + 1))
        else
                passed=$((passed + 1))
                echo "ok $case"
        fi
done

# verify must be able to fail, or its silence above proves nothing: a unit
# with a name systemd refuses in Environment= must be reported.
if ((have_verify)); then
        case=verify-selftest
        case_failed=0
        v=$tmp/verify-selftest
        mkdir -p "$v/etc/systemd/system"
        printf '[Service]\nExecStart=/bin/sh\nEnvironment=bad-name=1\n' >"$v/etc/systemd/system/bad.service"
        mkdir -p "$v/bin" && printf '#!/bin/sh\n' >"$v/bin/sh" && chmod 755 "$v/bin/sh"
        report=$(cd "$v" && systemd-analyze verify --root="$v" --man=no --generators=no bad.service 2>&1)
        [[ $report == *"Invalid environment assignment"* ]] || fail "a bad unit passed verify: $report"
        if ((case_failed)); then failed=$((failed + 1)); else passed=$((passed + 1)) && echo "ok $case"; fi
else
        echo "note: systemd-analyze not found, units were not verified"
fi

echo "golden: $passed passed, $failed failed"
((failed == 0))
