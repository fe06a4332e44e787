#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
#
# check-scratch-removed.sh RUNNER CORPUS: the regression runner of a fuzz
# target that writes files passes on CORPUS and, exiting normally, leaves
# nothing in its $TMPDIR (its scratch directory is removed at exit; it once
# was not, and every run left a /tmp/sdpod-<target>.* behind).
set -euo pipefail
tmp=$(mktemp -d)
trap 'rm -rf -- "$tmp"' EXIT
TMPDIR=$tmp "$1" "$2" >/dev/null
left=$(ls -A "$tmp")
if [ -n "$left" ]; then
	echo "FAIL: $(basename "$1") left in \$TMPDIR: $left"
	exit 1
fi
echo "ok: $(basename "$1") left nothing in \$TMPDIR"
