#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
#
# test-pod-paths.sh - the host reaches a pod's tree only through one
# resolver (sdpod-security(7), issue 24).
#
# Everything under a pod's root is the pod's to change while the host works
# there as the host's root: a directory becomes a symlink, and a symlink
# through /proc/PID/root of any process the pod sees leads anywhere on the
# host. A path string into that tree, resolved by the kernel the ordinary
# way, follows whatever the pod put there. So host code never names a path
# inside a pod: it opens the pod's root (an fd of /proc/PID/root, of
# POD/stage1/rootfs, or "/" of a helper that entered the pod's mount
# namespace) and resolves below it with pod_path_open() (lib/basic/fs.c:
# openat2 RESOLVE_IN_ROOT | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS) or
# the fs.c functions built on the same openat2 flags (open_in_root,
# open_beneath_no_symlinks, *_beneath); it lists with opendir_at() on such
# an fd, unlinks with unlinkat() on a directory fd, unmounts with
# pod_path_umount() (by the fd's magic link of a trusted procfs).
#
# What this checks, in lib/, helpers/ and generator/ (comments aside):
#   1. umount2( only in the files that unmount by fd or host paths:
#      lib/basic/fs.c, lib/basic/mount-util.c (the host's own mounts below
#      the data directory, canonical paths from mountinfo), lib/net/netns.c
#      (the host's /run/netns binds), lib/pod/pod-journal.c (the old root
#      of journalctl's private root, after pivot_root(2) in a mount
#      namespace of its own: nothing of the pod's on the way),
#      lib/fly/fly-run.c (the same: the host's tree, "." after the fly
#      app's pivot_root(2), before anything of the app runs).
#   2. opendir( of a path only of "/proc" (the host's own), or in files that
#      never touch a pod's tree: lib/image/ (the store, the user's
#      configuration), generator/ (runs inside the pod, on its own tree),
#      helpers/kvm-init/ (the kvm flavor's guest /init: runs inside the VM,
#      on the guest's own /sys, before anything of the pod's runs).
#   3. "/proc/%d/root" only as the root itself (to open an fd of it): never
#      a longer path below it, which would be resolved through the pod.
#   4. rmdir(, unlink( and unlinkat(AT_FDCWD only on host paths, in the
#      files listed below (cgroupfs, /run/netns, the shim's own socket,
#      journalctl's private root, nspawn's id range locks in /run).
#   5. "stage1/rootfs" joined with more components only where no process
#      of the pod runs yet (lib/pod/pod-run.c, after mkdir_p_in_root()
#      checked every directory on the way without following a symlink)
#      or where the tree is made (lib/pod/stage1.c).
#   6. The resolver exists and the app cleanup (lib/pod/pod-app-root.c)
#      uses it.
#   7. setns( only where a pod's namespaces are entered safely: the bus
#      helper (lib/bus/pod-bus.c: a child enters every namespace of the
#      pod, not dumpable, with only the fds it needs, before it makes the
#      one process the pod sees), the app mounts (lib/pod/pod-app-root.c:
#      the mount namespace only, staying in the host's pid namespace the
#      pod does not see), and network namespaces (lib/net/netns.c,
#      lib/pod/pod-supervise.c, lib/fly/fly-run.c: the fly app's child
#      joins the pod's before anything of the pod runs), and the shim's
#      sysctls (lib/shim/oci-spec-map.c: a child enters only the network
#      or IPC namespace, where no process of the pod sees it, and opens
#      /proc/sys of the host's mount namespace). A process of the host the pod can see
#      with the host's root would give it /proc/PID/root to the host.
# A new exception is a decision: add it here with its reason.
#
# Usage: bash tests/unit/test-pod-paths.sh [SOURCE_ROOT]

set -u
ROOT=${1:-${SDPOD_SOURCE_ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}}
cd "$ROOT" || exit 1

failures=0
files=0
fail() {
	echo "FAIL: $*" >&2
	failures=$((failures + 1))
}

# The code of a file, comments dropped (block comments and // lines), as
# "FILE:LINE:TEXT".
code_of() {
	awk -v f="$1" '
		{
			line = $0
			out = ""
			while (length(line) > 0) {
				if (inc) {
					e = index(line, "*/")
					if (!e) { line = ""; break }
					line = substr(line, e + 2); inc = 0
				} else {
					s = index(line, "/*")
					if (!s) { out = out line; line = ""; break }
					out = out substr(line, 1, s - 1); line = substr(line, s + 2); inc = 1
				}
			}
			sub(/\/\/.*/, "", out)
			if (out ~ /[^ \t]/) print f ":" NR ":" out
		}' "$1"
}

allowed() {
	local file=$1
	shift
	local a
	for a; do
		# shellcheck disable=SC2053 # a glob on purpose
		[[ $file == $a ]] && return 0
	done
	return 1
}

while IFS= read -r file; do
	files=$((files + 1))
	code=$(code_of "$file")
	while IFS= read -r hit; do
		[ -n "$hit" ] || continue
		allowed "$file" lib/basic/fs.c lib/basic/mount-util.c lib/net/netns.c lib/pod/pod-journal.c lib/fly/fly-run.c ||
			fail "$hit: umount2() outside the resolver (pod_path_umount())"
	done < <(grep -E '(^|[^_a-z])umount2\(' <<<"$code")
	while IFS= read -r hit; do
		[ -n "$hit" ] || continue
		[[ $hit == *'opendir("/proc")'* ]] && continue
		allowed "$file" 'lib/image/*' 'generator/*' 'helpers/kvm-init/*' ||
			fail "$hit: opendir() of a path; use opendir_at() on an fd from the resolver"
	done < <(grep -E '(^|[^_a-z])opendir\(' <<<"$code")
	while IFS= read -r hit; do
		[ -n "$hit" ] || continue
		[[ $hit == *'"/proc/%d/root/"'* ]] && allowed "$file" lib/pod/pod-process.c && continue
		fail "$hit: a path below /proc/PID/root; open the root and use pod_path_open()"
	done < <(grep -E '"/proc/%[a-z]+/root[^"]' <<<"$code")
	while IFS= read -r hit; do
		[ -n "$hit" ] || continue
		allowed "$file" lib/pod/pod-cgroup.c lib/net/netns.c helpers/shim/main.c lib/pod/pod-journal.c \
			lib/pod/pod-userns.c ||
			fail "$hit: a removal by path; use unlinkat() on a directory fd from the resolver"
	done < <(grep -E '(^|[^_a-z])(rmdir|unlink)\(|unlinkat\(AT_FDCWD' <<<"$code")
	while IFS= read -r hit; do
		[ -n "$hit" ] || continue
		allowed "$file" lib/pod/pod-run.c lib/pod/stage1.c ||
			fail "$hit: a path below a pod's stage1/rootfs; open it and use pod_path_open()"
	done < <(grep -E '"[^"]*stage1/rootfs(/|%)[^"]*"|path_join3\([^,]+, *"stage1/rootfs[^"]*", *[a-z_]' <<<"$code")
	while IFS= read -r hit; do
		[ -n "$hit" ] || continue
		allowed "$file" lib/bus/pod-bus.c lib/pod/pod-app-root.c lib/net/netns.c lib/pod/pod-supervise.c \
			lib/fly/fly-run.c lib/shim/oci-spec-map.c ||
			fail "$hit: setns() outside the helpers that enter a pod safely"
	done < <(grep -E '(^|[^_a-z])setns\(' <<<"$code")
done < <(find lib helpers generator -name '*.c' | sort)

grep -q '^int pod_path_open(' lib/basic/fs.c || fail "lib/basic/fs.c has no pod_path_open()"
grep -q 'RESOLVE_IN_ROOT | RESOLVE_NO_SYMLINKS' lib/basic/fs.c || fail "pod_path_open() does not refuse symlinks"
grep -q 'pod_path_open(' lib/pod/pod-app-root.c || fail "lib/pod/pod-app-root.c does not use the resolver"
grep -q 'pod_path_umount(' lib/pod/pod-app-root.c || fail "lib/pod/pod-app-root.c does not unmount by fd"

echo "test-pod-paths: $files files checked, $failures failures"
[ "$files" -gt 50 ] || { echo "FAIL: too few files seen; is $ROOT the source root?" >&2; exit 1; }
[ "$failures" -eq 0 ]
