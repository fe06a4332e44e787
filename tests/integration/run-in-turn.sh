#!/bin/bash
#
# run-in-turn.sh TEST... - runs the tests one after the other, each in a
# mount namespace of its own (private: nothing it mounts reaches the
# machine's), for tests that must not run beside each other but may beside
# the rest: the containerd tests (containerd 1.6 always uses
# /run/containerd and /var/lib/cni, so two at once would share them), whose
# snapshot overlays and sandbox namespaces would otherwise come and go in
# the machine's mounts while other tests' leak checks compare them.
# Exits with the first failing test's status, 0 when all passed.
set -u
rc=0
for t in "$@"; do
	name=$(basename "$t" .sh)
	echo "== $name"
	r=0
	unshare --mount --propagation private -- bash "$t" || r=$?
	echo "== $name: exit $r"
	if [ "$r" -ne 0 ] && [ "$rc" -eq 0 ]; then
		rc=$r
	fi
done
exit "$rc"
