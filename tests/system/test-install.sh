#!/usr/bin/env bash
# What 'meson install' lays out, as the test host sees it: the programs,
# the host units, the stage1 image, the man pages and the bash completion;
# and sdpod-gc.timer / sdpod-gc.service working under systemd.
. "$(dirname "$0")/lib.sh"
P=$SDPOD_PREFIX

echo "# the layout"
assert_file_exists "$P/bin/sdpod" "$P/bin/podapp" \
	"$P/lib/systemd/system/pod@.service" "$P/lib/systemd/system/sdpod-gc.service" \
	"$P/lib/systemd/system/sdpod-gc.timer" \
	"$P/lib/sdpod/stage1/manifest" "$P/lib/sdpod/stage1/rootfs/usr/lib/systemd/systemd" \
	"$P/share/man/man1/sdpod.1" "$P/share/man/man1/podapp.1" "$P/share/man/man5/sdpod-manifest.5" \
	"$P/share/man/man7/sdpod-stage1.7" "$P/share/man/man8/sdpod-generator.8" "$P/share/man/man8/pod@.service.8" \
	"$P/share/bash-completion/completions/sdpod" "$P/share/bash-completion/completions/podapp"
assert_eq "sdpod is on PATH" "$P/bin/sdpod" "$(command -v sdpod)"
assert_match "the man page of pod@.service is titled so" '^\.TH "pod@\.service" "8"' \
	"$(grep -m1 '^\.TH' "$P/share/man/man8/pod@.service.8")"
for u in pod@.service sdpod-gc.service sdpod-gc.timer; do
	assert_eq "systemd loads $u" loaded "$(systemctl show -P LoadState "${u/@/@x}")"
done
out=$(systemd-analyze verify --man=no "$P/lib/systemd/system/sdpod-gc.service" "$P/lib/systemd/system/sdpod-gc.timer" 2>&1) && rc=0 || rc=$?
assert_eq "systemd-analyze verify: no complaint" "0" "$rc"
[ "$rc" = 0 ] || echo "$out" | sed 's/^/# /'

echo "# bash completion"
# shellcheck disable=SC2016 # expanded by the inner bash
out=$(bash -c '. "$1"; fn=$(complete -p sdpod | sed -n "s/.*-F \([^ ]*\) .*/\1/p")
	COMP_WORDS=(sdpod st); COMP_CWORD=1; COMP_LINE="sdpod st"; COMP_POINT=8
	"$fn" sdpod st sdpod; printf "%s\n" "${COMPREPLY[@]}"' - "$P/share/bash-completion/completions/sdpod")
assert_eq "sdpod st<TAB>: stats, status, stop" "stats status stop" "$(sort <<<"$out" | tr '\n' ' ' | sed 's/ $//')"

echo "# sdpod-gc.timer and sdpod-gc.service"
busybox_image
uuid=$(sd prepare busybox --exec=/bin/true)
sd run-prepared "$uuid" >/dev/null 2>&1 || true
assert_eq "a pod exited" exited "$(sd status "$uuid" | sed -n 's/^state=//p')"
assert_exit 0 systemctl enable --now sdpod-gc.timer
assert_eq "the timer is active" active "$(systemctl is-active sdpod-gc.timer)"
assert_match "and scheduled" 'sdpod-gc\.timer +sdpod-gc\.service' "$(systemctl list-timers --no-pager sdpod-gc.timer)"
assert_exit 0 systemctl start sdpod-gc.service
assert_eq "the gc service succeeded" success "$(unit_prop sdpod-gc.service Result)"
assert_file_exists "$DATA/pods/exited-garbage/$uuid"
assert_eq "the exited pod is marked, its journal kept for the grace period" 0 \
	"$(sd journal "$uuid" --no-pager >/dev/null 2>&1; echo $?)"
assert_exit 0 systemctl disable --now sdpod-gc.timer
gc_all
assert_file_absent "$DATA/pods/exited-garbage/$uuid"
