#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
#
# test-lib-layers.sh - lib/ is layered: a file in lib/FOLDER/ includes
# headers of its own folder and of the folders before it in lib_layers
# (lib/meson.build) only, never of a folder after it, so no cycle can form
# between subsystems. Every header of lib/ is included by its folder's
# name ("basic/fs.h"), so the folder of each include is visible.
#
# Usage: bash tests/unit/test-lib-layers.sh [SOURCE_ROOT]

set -u
ROOT=${1:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
LIB=$ROOT/lib

# The order, from the one place that states it.
read -ra layers < <(sed -n "s/^lib_layers = \[\(.*\)\]/\1/p" "$LIB/meson.build" | tr -d "',")
if [ ${#layers[@]} -lt 2 ]; then
        echo "test-lib-layers: cannot read lib_layers from $LIB/meson.build" >&2
        exit 1
fi
declare -A rank
for i in "${!layers[@]}"; do
        rank[${layers[$i]}]=$i
done

failures=0
checked=0
for dir in "$LIB"/*/; do
        folder=$(basename "$dir")
        if [ -z "${rank[$folder]+x}" ]; then
                echo "FAIL: lib/$folder/ is not in lib_layers" >&2
                failures=$((failures + 1))
                continue
        fi
done
for file in "$LIB"/*.c "$LIB"/*.h; do
        [ -e "$file" ] || continue
        echo "FAIL: ${file#"$ROOT"/} is not in a folder of lib/" >&2
        failures=$((failures + 1))
done

# Every quoted include of every file under lib/ and of the binaries: a
# header of lib/ must be named with its folder, and from lib/ only a folder
# at or below the includer's.
while IFS= read -r file; do
        rel=${file#"$ROOT"/}
        own=
        case $rel in
        lib/*/*) own=${rel#lib/}; own=${own%%/*} ;;
        esac
        while IFS= read -r header; do
                checked=$((checked + 1))
                if [[ $header != */* ]]; then
                        if [ -n "$(find "$LIB" -name "$header" -print -quit)" ]; then
                                echo "FAIL: $rel includes \"$header\" without its folder" >&2
                                failures=$((failures + 1))
                        fi
                        continue
                fi
                folder=${header%%/*}
                [ -n "${rank[$folder]+x}" ] || continue
                if [ ! -e "$LIB/$header" ]; then
                        echo "FAIL: $rel includes \"$header\", which lib/ does not have" >&2
                        failures=$((failures + 1))
                elif [ -n "$own" ] && [ "${rank[$folder]}" -gt "${rank[$own]}" ]; then
                        echo "FAIL: $rel (lib/$own/) includes \"$header\" of lib/$folder/, which comes after it" >&2
                        failures=$((failures + 1))
                fi
        done < <(sed -n 's/^#include "\([^"]*\)".*/\1/p' "$file")
done < <(find "$LIB" "$ROOT/helpers" "$ROOT/generator" "$ROOT/tests" "$ROOT/bench" -name '*.[ch]' | sort)

echo "test-lib-layers: ${#layers[@]} layers, $checked includes checked, $failures failures"
[ "$checked" -gt 100 ] || { echo "FAIL: too few includes seen; is $ROOT the source root?" >&2; exit 1; }
[ "$failures" -eq 0 ]
