#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
#
# test-definition-keys.sh - every option of `sdpod prepare` has a key in pod
# definitions (sdpod-pod-generator(8)), and every key is in that page. The
# options are read from the code's own tables, not from a copy kept here:
# known_options of lib/manifest/app-args.c (all kinds but OPTION_ADD, the
# options of podapp add only), the network options of lib/manifest/pod-net.c
# and the lifecycle table of lib/manifest/app-lifecycle.c. The keys are
# definition_keys of lib/unit/pod-definition.c. An option added to one of
# those tables without a key fails here.
#
# Usage: bash tests/unit/test-definition-keys.sh [SOURCE_ROOT]

set -u
ROOT=${1:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
checks=0
failures=0

check() {
	checks=$((checks + 1))
	if [[ $2 == "$3" ]]; then
		echo "ok $checks - $1"
	else
		failures=$((failures + 1))
		echo "FAIL $checks - $1 (expected \"$3\", got \"$2\")"
	fi
}

# table FILE START: the first strings of the lines { "NAME", ... } after the
# line matching START, up to the table's end "};".
table() {
	awk -v start="$2" 'index($0, start) { on = 1; next }
	     on && /^};/ { exit }
	     on' "$ROOT/$1"
}

# The options of sdpod prepare.
app_args=$(table lib/manifest/app-args.c 'known_options[] = {' |
	grep -v OPTION_ADD | sed -n 's/^ *{ "\([a-z0-9-]*\)", OPTION_[A-Z]* },.*/\1/p')
net=$( (table lib/manifest/pod-net.c 'list_options[] = {' | sed -n 's/^ *{ "\([a-z0-9-]*\)", POD_ANNOTATION.*/\1/p'
	awk '/^bool pod_net_option_is\(/ { on = 1 } on { print } on && /^}/ { exit }' "$ROOT/lib/manifest/pod-net.c" |
		grep -o 'streq(option, "[a-z0-9-]*")' | sed 's/.*"\(.*\)")/\1/') )
lifecycle=$(table lib/manifest/app-lifecycle.c '} table[] = {' | sed -n 's/^ *{ "\([a-z0-9-]*\)", [A-Z_]*, VALUE_.*/\1/p')
options=$(printf '%s\n' $app_args $net $lifecycle | sort -u)

# The tables were read: a few options each must be there, or the parsing
# above no longer matches the code and would pass by finding nothing.
for o in volume memory cap-add pull; do
	check "known_options of app-args.c read: $o" "$(grep -cx -- "$o" <<<"$app_args")" 1
done
for o in net port dns hostname; do
	check "network options of pod-net.c read: $o" "$(grep -cx -- "$o" <<<"$net")" 1
done
for o in restart health-cmd pod-watchdog; do
	check "lifecycle table of app-lifecycle.c read: $o" "$(grep -cx -- "$o" <<<"$lifecycle")" 1
done
for o in rootfs bind stdin; do
	check "options of podapp add only are left out: $o" "$(grep -cx -- "$o" <<<"$options")" 0
done

# The keys: KEY_OPTION and KEY_DEVICE lines name the option they give;
# --name is [Pod] Name= and --exec the program of [App] Exec=.
keys=$(table lib/unit/pod-definition.c 'definition_keys[] = {')
key_options=$( (sed -n 's/.*KEY_\(OPTION\|DEVICE\), "\([a-z0-9-]*\)".*/\2/p' <<<"$keys"
	grep -q 'SECTION_POD, "Name", KEY_POD_NAME' <<<"$keys" && echo name
	grep -q 'SECTION_APP, "Exec", KEY_EXEC' <<<"$keys" && echo exec) | sort -u)
check "definition_keys of pod-definition.c read" "$(grep -cx volume <<<"$key_options")" 1

for o in $options; do
	check "--$o of sdpod prepare has a definition key" "$(grep -cx -- "$o" <<<"$key_options")" 1
done

# Each key is described in sdpod-pod-generator(8) as *KEY=*.
page=$ROOT/man/sdpod-pod-generator.8.scd
for k in $(sed -n 's/^ *{ SECTION_[A-Z]*, "\([A-Za-z]*\)",.*/\1/p' <<<"$keys" | sort -u); do
	check "$k= is in sdpod-pod-generator(8)" "$(grep -c -- "\*$k=" "$page" | sed 's/^[1-9][0-9]*$/yes/')" yes
done

echo "$((checks - failures)) passed, $failures failed"
((failures == 0))
