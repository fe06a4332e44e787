#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
#
# test-completion.sh - the bash completion of sdpod and podapp
# (shell-completion/bash/), without privileges.
#
# Sources the completion scripts with stub sdpod and podapp functions that
# print fixed lists, splits a command line into COMP_WORDS as bash does
# (COMP_WORDBREAKS makes "--app=web" three words), calls the completion
# function and compares COMPREPLY with what a user must get.
#
# With SDPOD_BIN and PODAPP_BIN (meson passes them), it also checks that the
# completion knows every command and option that the binaries' --help
# texts list, and offers none that they do not, so that a new option
# without its completion fails here.
#
# Usage: bash tests/unit/test-completion.sh

# shellcheck source-path=SCRIPTDIR
set -u

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
COMPLETION_DIR=${COMPLETION_DIR:-$HERE/../../shell-completion/bash}

T=$(mktemp -d)
trap 'rm -rf -- "$T"' EXIT

checks=0
failures=0

# check NAME EXPECTED GOT: one line per check, the test fails at the end.
check() {
	checks=$((checks + 1))
	if [[ $2 == "$3" ]]; then
		echo "ok $checks - $1"
	else
		failures=$((failures + 1))
		echo "FAIL $checks - $1"
		echo "#   expected: $2"
		echo "#   got:      $3"
	fi
}

# ---------------------------------------------------------------------------
# Stubs: what 'sdpod list', 'sdpod image list' and 'podapp list' print. Each
# call is logged to $T/calls, so that the tests see the options passed on.
# ---------------------------------------------------------------------------

RUNNING=3f0c2a51-8d4e-4b7a-9c61-2e5f7a9b0d14
PREPARED=7a1e9b30-5c2d-4f8e-a6b7-0c9d1e2f3a45
EXITED=9c4d2e61-7b3a-4e5f-8a9b-1c2d3e4f5a67
MARKED=9cb0f1e2-3d4c-4b5a-9e8f-7a6b5c4d3e21

cat >"$T/pods.json" <<EOF
[
  {
    "uuid": "$RUNNING",
    "name": "web",
    "state": "running",
    "apps": [
      "nginx",
      "builder"
    ],
    "images": [
      "nginx:1.25",
      "busybox:1.36"
    ],
    "created": "2026-11-21T08:00:00.000000Z",
    "started": "2026-11-21T08:00:01.000000Z"
  },
  {
    "uuid": "$PREPARED",
    "name": null,
    "state": "prepared",
    "apps": [
      "job"
    ],
    "images": [
      "busybox:1.36"
    ],
    "created": "2026-11-21T08:01:00.000000Z",
    "started": null
  },
  {
    "uuid": "$EXITED",
    "name": null,
    "state": "exited",
    "apps": [
      "shell"
    ],
    "images": [
      "busybox:1.36"
    ],
    "created": "2026-11-21T08:02:00.000000Z",
    "started": "2026-11-21T08:02:01.000000Z"
  },
  {
    "uuid": "$MARKED",
    "name": null,
    "state": "exited+gc-marked",
    "apps": [],
    "images": [],
    "created": null,
    "started": null
  }
]
EOF

# The same list as sdpod might print it one day: on one line.
tr -d '\n' <"$T/pods.json" | tr -s ' ' >"$T/pods-plain.json"

cat >"$T/images.json" <<'EOF'
[
  {
    "id": "sha256:45883b8a2efacf4256c65b1b2de23e96216e662b8a8805cc190129352cb4701b",
    "names": [
      "busybox:1.36",
      "example.com/my-app:latest"
    ],
    "size": 1089409,
    "imported_at": "2026-11-21T08:00:00.000000Z",
    "format": "oci"
  },
  {
    "id": "sha256:32b50a95402a2ba09c4b4facf5aa4e8e6f889ca63b8ffe1cf89ac95245ecf083",
    "names": [],
    "size": 2089409,
    "imported_at": "2026-11-21T08:00:05.000000Z",
    "format": "docker-archive"
  }
]
EOF

cat >"$T/apps.json" <<'EOF'
[
  {
    "name": "nginx",
    "state": "running",
    "created": "2026-11-21T08:00:00.000000Z",
    "started": "2026-11-21T08:00:01.000000Z",
    "exited": null,
    "exit_status": null
  },
  {
    "name": "builder",
    "state": "exited",
    "created": "2026-11-21T08:00:00.000000Z",
    "started": "2026-11-21T08:00:01.000000Z",
    "exited": "2026-11-21T08:00:09.000000Z",
    "exit_status": 0
  }
]
EOF

PODS_JSON=$T/pods.json

sdpod() {
	echo "sdpod $*" >>"$T/calls"
	while [[ ${1-} == --dir=* || ${1-} == --debug ]]; do shift; done
	case "$*" in
	"list --format=json") cat "$PODS_JSON" ;;
	"image list --format=json") cat "$T/images.json" ;;
	*) return 1 ;;
	esac
}

podapp() {
	echo "podapp $*" >>"$T/calls"
	while [[ ${1-} == --dir=* || ${1-} == --debug ]]; do shift; done
	# Only the full UUID of the running pod has apps; a prefix is the
	# program's to resolve, so the stub takes the one the test types.
	case "$*" in
	"list $RUNNING --format=json" | "list 3f0c --format=json" | "list web --format=json") cat "$T/apps.json" ;;
	*) return 1 ;;
	esac
}

# shellcheck source=../../shell-completion/bash/sdpod
. "$COMPLETION_DIR/sdpod" || exit 1
# shellcheck source=../../shell-completion/bash/podapp
. "$COMPLETION_DIR/podapp" || exit 1

# sort_words VAR WORD...: VAR gets the words sorted as sort(1) sorts them
# (the locale's order), one blank between them: in bash, as a fork and
# two execs cost more than the completion itself on CI's machines (which
# ran this test at 43 CPU-seconds).
sort_words() {
	local -n _sorted=$1
	shift
	local -a a=("$@")
	local i j w IFS=' '
	for ((i = 1; i < ${#a[@]}; i++)); do
		w=${a[i]}
		for ((j = i - 1; j >= 0; j--)); do
			[[ ${a[j]} > $w ]] || break
			a[j + 1]=${a[j]}
		done
		a[j + 1]=$w
	done
	_sorted="${a[*]}"
}

# complete LINE: complete at the end of LINE as bash does, into $got (the
# replies, sorted, one blank between them). bash passes the words of the line
# split at blanks and at COMP_WORDBREAKS (runs of "=" and ":" are words of
# their own), and, as $2, the part of the last word that readline replaces.
complete() {
	local line=$1 rest re='^([^[:space:]=:]+|[=:]+)' blank=1 rl fn
	COMP_LINE=$line
	COMP_POINT=${#line}
	COMP_WORDS=()
	rest=$line
	while [[ -n $rest ]]; do
		if [[ $rest =~ ^[[:space:]]+ ]]; then
			blank=1
		else
			[[ $rest =~ $re ]]
			COMP_WORDS+=("${BASH_REMATCH[0]}")
			blank=0
		fi
		rest=${rest:${#BASH_REMATCH[0]}}
	done
	((blank)) && COMP_WORDS+=("")
	COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
	rl=${COMP_WORDS[COMP_CWORD]}
	[[ $rl =~ ^[=:]+$ ]] && rl=
	fn=_sdpod
	[[ ${COMP_WORDS[0]} == *podapp ]] && fn=_podapp
	COMPREPLY=()
	: >"$T/calls"
	"$fn" "${COMP_WORDS[0]}" "$rl" "${COMP_WORDS[COMP_CWORD - 1]-}"
	sort_words got "${COMPREPLY[@]}"
}

# expect LINE [REPLY...]: completing LINE gives exactly these replies.
# The lifecycle options of an app (sdpod(1)).
pull_options=(--pull= --tls-verify= --cert-dir= --authfile= --creds= --signature-policy= --registries-d=)
app_lifecycle=(--stop-timeout= --restart= --pre-start= --pre-stop= --post-stop= --watchdog= --watchdog-file= --health-cmd=
	--health-interval= --health-timeout= --health-retries= --health-start-period= --health-on-failure=
	--after= --requires= --wait-healthy=)
# Its confinement and resources (sdpod(1)).
app_confinement=(--env-file= --memory= --cpus= --pids-limit= --cap-add= --cap-drop= --read-only --tmpfs= --device=)

expect() {
	local line=$1 want
	shift
	complete "$line"
	sort_words want "$@"
	check "'$line'" "$want" "$got"
}

# ---------------------------------------------------------------------------
# sdpod: commands, global options, options of each command.
# ---------------------------------------------------------------------------

expect 'sdpod ' image login logout prepare run run-prepared stop enter list ps status cat-manifest journal logs stats rm gc volume
expect 'sdpod r' run run-prepared rm
expect 'sdpod -' --dir= --debug --help --version
expect 'sdpod --debug ru' run run-prepared
expect 'sdpod --dir=/x ru' run run-prepared
expect 'sdpod --dir /x st' stop stats status
expect 'sdpod image ' import pull list inspect cat-manifest tag untag rm gc
expect 'sdpod volume ' list inspect rm prune
expect 'sdpod volume list --' --help --format= --no-legend
expect 'sdpod image i' import inspect
expect 'sdpod image list --' --help --format= --no-legend
expect 'sdpod image list --format=' table json
expect 'sdpod image import --' --help --name= --platform= --ref= --max-entries= --max-size=
expect 'sdpod image pull --' --help --quiet --name= --platform= --tls-verify= --cert-dir= --authfile= --creds= --signature-policy= --registries-d=
expect 'sdpod prepare --' --help --name= --volume= --private-users= --pod-stop-timeout= --pod-watchdog= --pod-pids-limit= --pod-memory= --pod-cpus= --stage1= --mutable --net= --port= --dns= --dns-search= --dns-option= --hostname= --hosts-entry= --conntrack-limit= \
	--app= --exec= --set-env= --user= --group= --working-dir= --mount= "${app_lifecycle[@]}" "${app_confinement[@]}" "${pull_options[@]}"
expect 'sdpod prepare --wo' --working-dir=
expect 'sdpod prepare --w' --wait-healthy= --watchdog= --watchdog-file= --working-dir=
expect 'sdpod prepare --private-users=' yes no
expect 'sdpod run --' --detach --rm --uuid-file= --replace --tty --interactive --help --name= --volume= --private-users= --pod-stop-timeout= --pod-watchdog= --pod-pids-limit= --pod-memory= --pod-cpus= --stage1= --mutable --net= --port= --dns= --dns-search= --dns-option= --hostname= --hosts-entry= --conntrack-limit= \
	--app= --exec= --set-env= --user= --group= \
	--working-dir= --mount= "${app_lifecycle[@]}" "${app_confinement[@]}" "${pull_options[@]}"
expect 'sdpod run --d' --detach --device= --dns= --dns-search= --dns-option=
# run's own options only come first
expect 'sdpod run --detach --d' --detach --device= --dns= --dns-search= --dns-option=
# run's own options anywhere before the first image, as podman's
expect 'sdpod run --name=x --d' --detach --device= --dns= --dns-search= --dns-option=
expect 'sdpod run --replace --r' --rm --read-only --registries-d= --replace --requires= --restart=
expect 'sdpod run --name=x --r' --rm --read-only --registries-d= --replace --requires= --restart=
expect 'sdpod run busybox:1.36 --d' --device= --dns= --dns-search= --dns-option=
expect 'sdpod run busybox:1.36 --read-only --cap-drop=SYS_' SYS_CHROOT SYS_ADMIN SYS_PTRACE SYS_NICE SYS_RESOURCE SYS_TIME
expect 'sdpod prepare busybox:1.36 --read-only=' yes no
expect 'sdpod stop --' --help --force --timeout=
expect 'sdpod status --' --help --format= --wait --wait=
expect 'sdpod status --format ' table json
expect 'sdpod gc --' --help --grace-period= --expire-prepared= --mark-only
expect 'sdpod journal --' --help --app= --since= --lines= --follow --follow= --raw
expect 'sdpod journal --follow=' always
expect 'sdpod logs --' --help --app= --since= --tail= --follow --timestamps
expect 'sdpod stats --' --help --format= --no-legend --interval=
expect 'sdpod enter --' --help --app= --tty --interactive
expect 'sdpod no-such-command '

# An option that ends in "=" takes its value without a blank.
complete 'sdpod gc --grace'
check "'sdpod gc --grace' adds no blank" "--grace-period=" "$got"

# ---------------------------------------------------------------------------
# Images: names (with ":" that bash splits at), ids after "sha256:".
# ---------------------------------------------------------------------------

expect 'sdpod image inspect ' busybox:1.36 example.com/my-app:latest
expect 'sdpod image inspect b' busybox:1.36
# readline replaces what follows the ":" only
expect 'sdpod image inspect busybox:' 1.36
expect 'sdpod image inspect busybox:1' 1.36
expect 'sdpod image inspect sha256:3' 32b50a95402a2ba09c4b4facf5aa4e8e6f889ca63b8ffe1cf89ac95245ecf083
expect 'sdpod image inspect busybox:1.36 '
expect 'sdpod image rm busybox:1.36 e' example.com/my-app:latest
expect 'sdpod image rm --' --help --force
expect 'sdpod image rm --force b' busybox:1.36
expect 'sdpod image tag ' busybox:1.36 example.com/my-app:latest
expect 'sdpod image tag busybox:1.36 '
expect 'sdpod image untag ' busybox:1.36 example.com/my-app:latest
expect 'sdpod image untag busybox:1.36 e' example.com/my-app:latest
expect 'sdpod image t' tag
expect 'sdpod prepare ' busybox:1.36 example.com/my-app:latest

# ---------------------------------------------------------------------------
# The grammar of prepare and run.
# ---------------------------------------------------------------------------

# after an image, only its options, "--" and "---"
expect 'sdpod prepare busybox:1.36 ' --help --name= --volume= --private-users= --pod-stop-timeout= --pod-watchdog= --pod-pids-limit= --pod-memory= --pod-cpus= --stage1= --mutable --net= --port= --dns= --dns-search= --dns-option= --hostname= --hosts-entry= --conntrack-limit= \
	--app= --exec= --set-env= --user= --group= \
	--working-dir= --mount= "${app_lifecycle[@]}" "${app_confinement[@]}" "${pull_options[@]}" -- ---
expect 'sdpod prepare --app=x busybox:1.36 --ex' --exec=
expect 'sdpod prepare --app x busybox:1.36 --app y ' --help --name= --volume= --private-users= --pod-stop-timeout= --pod-watchdog= --pod-pids-limit= --pod-memory= --pod-cpus= --stage1= --mutable --net= --port= --dns= --dns-search= --dns-option= --hostname= --hosts-entry= --conntrack-limit= \
	--app= --exec= --set-env= \
	--user= --group= --working-dir= --mount= "${app_lifecycle[@]}" "${app_confinement[@]}" "${pull_options[@]}" -- ---
# the app's arguments are its own, but "---" starts the next app
expect 'sdpod prepare busybox:1.36 -- -c '
expect 'sdpod prepare busybox:1.36 -- -c --'  ---
expect 'sdpod prepare busybox:1.36 -- -c x --- ' busybox:1.36 example.com/my-app:latest
expect 'sdpod prepare busybox:1.36 --- b' busybox:1.36
expect 'sdpod run --detach ' busybox:1.36 example.com/my-app:latest
expect 'sdpod prepare --volume=data,kind=empty busybox:1.36 --mount=' volume=data,target=
expect 'sdpod prepare --volume data,kind=empty busybox:1.36 --mount ' volume=data,target=

# ---------------------------------------------------------------------------
# Pods: UUIDs of the states each command takes; --dir is passed on.
# ---------------------------------------------------------------------------

expect 'sdpod status ' "$RUNNING" "$PREPARED" "$EXITED" "$MARKED" web
expect 'sdpod status 9c' "$EXITED" "$MARKED"
expect 'sdpod status 9c4' "$EXITED"
expect "sdpod status $EXITED "
expect 'sdpod cat-manifest 3' "$RUNNING"
expect 'sdpod run-prepared ' "$PREPARED"
expect 'sdpod stop ' "$RUNNING" web
expect 'sdpod stop --force ' "$RUNNING" web
expect 'sdpod enter ' "$RUNNING" web
expect 'sdpod enter -t -i ' "$RUNNING" web
expect 'sdpod rm ' "$PREPARED" "$EXITED" "$MARKED"
expect 'sdpod rm 7a1e 9' "$EXITED" "$MARKED"
expect 'sdpod journal ' "$RUNNING" "$EXITED" "$MARKED" web
expect 'sdpod journal --lines=5 ' "$RUNNING" "$EXITED" "$MARKED" web
expect 'sdpod stats ' "$RUNNING" web
expect "sdpod stats $RUNNING " "$RUNNING" web
expect 'sdpod stats --format=' table json

complete 'sdpod --dir=/srv/pods --debug stop '
check "--dir and --debug reach 'sdpod list'" "sdpod --dir=/srv/pods --debug list --format=json" "$(cat "$T/calls")"
complete "sdpod --dir '/srv/pods' stop "
check "--dir PATH, quoted, reaches 'sdpod list'" "sdpod --dir=/srv/pods list --format=json" "$(cat "$T/calls")"
check "... and the UUIDs come all the same" "$RUNNING web" "$got"

PODS_JSON=$T/pods-plain.json
expect 'sdpod status ' "$RUNNING" "$PREPARED" "$EXITED" "$MARKED" web
expect 'sdpod enter --app=' nginx builder
PODS_JSON=$T/pods.json

# The apps of enter and journal: the pod's, or those of every pod it may be.
expect 'sdpod enter --app=' nginx builder
expect 'sdpod enter --app ' nginx builder
expect 'sdpod journal --app=' nginx builder shell
expect 'sdpod journal --app=s' shell
expect 'sdpod enter --app=n' nginx
# after the pod: the command to run, or journalctl's options
expect "sdpod enter $RUNNING "
expect "sdpod journal --app=shell $EXITED --no-p" --no-pager
expect "sdpod journal $EXITED --output=json-" json-pretty json-seq json-sse
expect "sdpod journal $EXITED -o ca" cat

# ---------------------------------------------------------------------------
# podapp.
# ---------------------------------------------------------------------------

expect 'podapp ' sandbox add start stop rm list status exec
expect 'podapp s' sandbox start stop status
expect 'podapp -' --dir= --debug --help --version
expect 'podapp sandbox --' --help --name= --volume= --keep-on-app-failure --private-users= --pod-stop-timeout= --pod-watchdog= --pod-pids-limit= --pod-memory= --pod-cpus= --net= --port= --dns= --dns-search= --dns-option= --hostname= --hosts-entry= --conntrack-limit= --stage1=
expect 'sdpod prepare --net=' default none host ns:
expect 'sdpod run --dns=' host
expect 'podapp sandbox --private-users=' yes no
expect 'podapp add --' --help --app= --exec= --set-env= --user= --group= --working-dir= --mount= "${app_lifecycle[@]}" "${app_confinement[@]}" "${pull_options[@]}" \
	--rootfs= --stdin= --stdout= --stderr= --bind= --supplementary-groups= --rlimit= --no-new-privileges=
expect 'podapp stop --' --help --app= --grace=
expect 'podapp list --' --help --format= --no-legend
expect 'podapp status --format=' table json
expect 'podapp start ' "$RUNNING" web
expect 'podapp list ' "$RUNNING" "$PREPARED" "$EXITED" "$MARKED" web
expect 'podapp add ' "$RUNNING" web
expect "podapp add $RUNNING " busybox:1.36 example.com/my-app:latest
expect "podapp add $RUNNING --app=new busybox:1.36 -- "
expect "podapp exec $RUNNING --app=nginx -- "
expect "podapp exec -t -i $RUNNING --app=nginx -- "
expect 'podapp exec --' --help --app= --tty --interactive

# --app= takes the apps of the pod on the command line, from 'podapp list'.
expect "podapp start $RUNNING --app=" nginx builder
expect "podapp start web --app=" nginx builder
expect "podapp stop $RUNNING --app=b" builder
expect "podapp status 3f0c --app " nginx builder
expect "podapp exec $RUNNING --app=" nginx builder
expect 'podapp stop --app='
expect "podapp add $RUNNING --app="
complete "podapp --dir=/srv/pods rm $RUNNING --app="
check "--dir reaches 'podapp list'" "podapp --dir=/srv/pods list $RUNNING --format=json" "$(cat "$T/calls")"
check "... and the apps come all the same" "builder nginx" "$got"

# ---------------------------------------------------------------------------
# Without COMP_LINE, and with "=" left out of COMP_WORDBREAKS.
# ---------------------------------------------------------------------------

COMPREPLY=()
COMP_WORDS=(podapp start "$RUNNING" --app "=" ng)
COMP_CWORD=5
unset COMP_LINE COMP_POINT
_podapp podapp ng --app
check "without COMP_LINE" "nginx" "${COMPREPLY[*]}"
COMPREPLY=()
COMP_WORDS=(podapp start "$RUNNING" --app=ng)
COMP_CWORD=3
_podapp podapp --app=ng "$RUNNING"
check "with '--app=ng' as one word" "--app=nginx" "${COMPREPLY[*]}"

# ---------------------------------------------------------------------------
# The binaries' --help: every command and option is completed.
# ---------------------------------------------------------------------------

# help_commands HELP: the commands a --help text lists under "Commands:".
help_commands() {
	sed -n '/^Commands:/,/^$/s/^  \([a-z][a-z-]*\) .*/\1/p' <<<"$1"
}

# help_options HELP: the options a --help text lists (in its usage line, and
# at the start of a line of their own, after its short form "-t, "), written as completed:
# "--name=" for one that takes a value, "--force" for one that does not,
# both for "--wait[=TIMEOUT]".
help_options() {
	{
		sed -n 's/^[[:space:]]*\(-[a-z], \)\?\(--[a-z][a-z0-9-]*\)\([=[]\?\).*/\2 \3/p' <<<"$1"
		grep '^Usage:' <<<"$1" | grep -o -- '--[a-z][a-z0-9-]*[=[]\?' | sed 's/^\(--[a-z0-9-]*\)\(.\?\)$/\1 \2/'
	} | while read -r opt kind; do
		case $kind in
		=) echo "$opt=" ;;
		"[") echo "$opt"; echo "$opt=" ;;
		*) echo "$opt" ;;
		esac
	done | sort -u
}

# compare_options WHAT HELP LINE: the options that completing LINE offers
# are those HELP lists (--help may be left out of HELP).
compare_options() {
	local want
	want=$( { help_options "$2"; echo --help; } | sort -u | tr '\n' ' ')
	complete "$3"
	check "$1: the options of its --help" "${want% }" "$got"
}

if [[ -n ${SDPOD_BIN-} && -n ${PODAPP_BIN-} ]]; then
	help=$("$SDPOD_BIN" --help)
	complete 'sdpod '
	check "sdpod: the commands of its --help" "$(help_commands "$help" | sort | tr '\n' ' ' | sed 's/ $//')" "$got"
	compare_options "sdpod" "$help" 'sdpod --'
	for cmd in $(help_commands "$help"); do
		if [[ $cmd == image || $cmd == volume ]]; then
			ihelp=$("$SDPOD_BIN" "$cmd" --help)
			complete "sdpod $cmd "
			check "sdpod $cmd: the commands of its --help" \
				"$(help_commands "$ihelp" | sort | tr '\n' ' ' | sed 's/ $//')" "$got"
			for sub in $(help_commands "$ihelp"); do
				compare_options "sdpod $cmd $sub" "$("$SDPOD_BIN" "$cmd" "$sub" --help)" "sdpod $cmd $sub --"
			done
			continue
		fi
		chelp=$("$SDPOD_BIN" "$cmd" --help)
		# run takes prepare's options too, which its --help refers to
		[[ $cmd == run ]] && chelp+=$'\n'$("$SDPOD_BIN" prepare --help)
		compare_options "sdpod $cmd" "$chelp" "sdpod $cmd --"
	done
	help=$("$PODAPP_BIN" --help)
	complete 'podapp '
	check "podapp: the commands of its --help" "$(help_commands "$help" | sort | tr '\n' ' ' | sed 's/ $//')" "$got"
	compare_options "podapp" "$help" 'podapp --'
	for cmd in $(help_commands "$help"); do
		compare_options "podapp $cmd" "$("$PODAPP_BIN" "$cmd" --help)" "podapp $cmd --"
	done
else
	echo "# SDPOD_BIN and PODAPP_BIN are not set: the --help texts are not compared"
fi

echo "$((checks - failures)) passed, $failures failed"
((failures == 0))
