#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
#
# test-help-man.sh - every command's --help and its man page agree: the
# usage line of --help is the command's line in the page's SYNOPSIS (markup
# aside), and every option --help lists is described in the page's section
# of that command. A new option or a changed grammar that reaches only one
# of them fails here.
#
# Usage: SDPOD_BIN=... PODAPP_BIN=... bash tests/unit/test-help-man.sh [MAN_DIR]

set -u
MAN_DIR=${1:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../../man" && pwd)}
checks=0
failures=0

check() {
	checks=$((checks + 1))
	if [[ $2 == "$3" ]]; then
		echo "ok $checks - $1"
	else
		failures=$((failures + 1))
		echo "FAIL $checks - $1"
		echo "#   help: $2"
		echo "#   man:  $3"
	fi
}

# usage_line HELP: the Usage: line of a --help text with its continuation
# lines, words separated by one space.
usage_line() {
	awk '/^Usage:/ { on = 1; sub(/^Usage: */, ""); print; next }
	     on && /^ +[^ ]/ { print; next }
	     { on = 0 }' <<<"$1" | tr -s ' \n' ' ' | sed 's/ $//'
}

# synopsis_line PAGE COMMAND: the page's SYNOPSIS line for COMMAND ("sdpod
# image rm"), without scdoc's markup.
synopsis_line() {
	sed -n '/^# SYNOPSIS/,/^# /p' "$MAN_DIR/$1" | grep -F "*$2*" | head -1 |
		sed 's/[*]//g; s/\b_\([^_]*\)_/\1/g; s/_//g' | tr -s ' ' | sed 's/ $//'
}

# section PAGE COMMAND: the page's section "## COMMAND ...", up to the next.
section() {
	awk -v head="## $2" 'index($0, head) == 1 && (length($0) == length(head) || substr($0, length(head) + 1, 1) == " ") { on = 1; next }
	     on && /^#{1,2} / { exit }
	     on' "$MAN_DIR/$1"
}

# help_options HELP: the long options a --help text lists, each once.
help_options() {
	grep -o -- '--[a-z][a-z-]*' <<<"$1" | sort -u
}

compare() {
	local page=$1 command=$2 help=$3 extra=${4:-} opt
	check "$command: --help's usage is the SYNOPSIS line of $page" "$(usage_line "$help")" \
		"$(synopsis_line "$page" "$command")"
	local text
	text=$(section "$page" "$command")$'\n'$extra
	for opt in $(help_options "$help"); do
		[[ $opt == --help ]] && continue
		check "$command: $opt of --help is in its section of $page" yes "$(grep -qF -- "$opt" <<<"$text" && echo yes || echo no)"
	done
}

help_commands() {
	sed -n '/^Commands:/,/^$/s/^  \([a-z][a-z-]*\) .*/\1/p' <<<"$1"
}

for cmd in $(help_commands "$("$SDPOD_BIN" --help)"); do
	if [[ $cmd == image || $cmd == volume ]]; then
		for sub in $(help_commands "$("$SDPOD_BIN" "$cmd" --help)"); do
			compare sdpod.1.scd "sdpod $cmd $sub" "$("$SDPOD_BIN" "$cmd" "$sub" --help)"
		done
		continue
	fi
	extra=
	# run takes prepare's options, which its page's section refers to
	[[ $cmd == run ]] && extra=$(section sdpod.1.scd "sdpod prepare")
	compare sdpod.1.scd "sdpod $cmd" "$("$SDPOD_BIN" "$cmd" --help)" "$extra"
done
for cmd in $(help_commands "$("$PODAPP_BIN" --help)"); do
	extra=
	# add takes prepare's app options, which its page's section refers to
	[[ $cmd == add ]] && extra=$(section sdpod.1.scd "sdpod prepare")
	compare podapp.1.scd "podapp $cmd" "$("$PODAPP_BIN" "$cmd" --help)" "$extra"
done

echo "$((checks - failures)) passed, $failures failed"
((failures == 0))
