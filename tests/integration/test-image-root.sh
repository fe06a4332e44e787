#!/bin/bash
#
# test-image-root.sh - what only root can render: fifos (and never device
# nodes), owners, setuid/setgid modes, hard links, and extended attributes
# (user.* kept, trusted.* dropped).  The layer is written by hand with python's
# tarfile (pax headers carry the xattrs), the OCI layout with sha256sum+jq.

. "$(dirname "$0")/lib.sh"

require_root "mknod, chown and trusted.* xattrs"
for tool in python3 jq gzip sha256sum; do
	require_tool "$tool"
done
require_tool getfattr attr

leak_begin

echo "# building the image"
python3 - "$T/layer.tar" <<'EOF'
import io, sys, tarfile
out = sys.argv[1]
def info(name, kind, mode, uid=0, gid=0, **kw):
    ti = tarfile.TarInfo(name)
    ti.type, ti.mode, ti.uid, ti.gid, ti.mtime = kind, mode, uid, gid, 1577836800
    for k, v in kw.items():
        setattr(ti, k, v)
    return ti
with tarfile.open(out, "w", format=tarfile.PAX_FORMAT) as t:
    for d in ("dev", "run", "usr", "usr/bin", "etc"):
        t.addfile(info(d, tarfile.DIRTYPE, 0o755))
    t.addfile(info("sticky", tarfile.DIRTYPE, 0o1777, 123, 456))
    t.addfile(info("dev/null", tarfile.CHRTYPE, 0o666, devmajor=1, devminor=3))
    t.addfile(info("dev/loop-test", tarfile.BLKTYPE, 0o660, 0, 6, devmajor=7, devminor=200))
    t.addfile(info("run/fifo", tarfile.FIFOTYPE, 0o620, 123, 456))
    data = b"#!/bin/sh\necho setuid\n"
    t.addfile(info("usr/bin/suid", tarfile.REGTYPE, 0o4755, 123, 456, size=len(data)), io.BytesIO(data))
    t.addfile(info("usr/bin/sgid", tarfile.REGTYPE, 0o2711, 0, 456, size=len(data)), io.BytesIO(data))
    t.addfile(info("usr/bin/suid-hardlink", tarfile.LNKTYPE, 0o4755, 123, 456, linkname="usr/bin/suid"))
    t.addfile(info("usr/bin/link", tarfile.SYMTYPE, 0o777, 123, 456, linkname="suid"))
    data = b"has xattrs\n"
    ti = info("etc/xattr-file", tarfile.REGTYPE, 0o640, 123, 456, size=len(data))
    ti.pax_headers = {"SCHILY.xattr.user.test": "hello", "SCHILY.xattr.trusted.evil": "bad"}
    t.addfile(ti, io.BytesIO(data))
EOF
# The layer really carries both xattrs (otherwise "dropped" proves nothing).
assert_eq "fixture: the layer has user.test and trusted.evil" "SCHILY.xattr.trusted.evil SCHILY.xattr.user.test" \
	"$(python3 -c 'import sys, tarfile; print(" ".join(sorted(k for k in tarfile.open(sys.argv[1]).getmember("etc/xattr-file").pax_headers if "xattr" in k)))' "$T/layer.tar")"
gzip -n "$T/layer.tar"
oci_layout_new "$T/image" "$(host_arch)" "$T/layer.tar.gz"

echo "# importing"
import_ok id "$T/image"
tree="$DATA/tree/${id#sha256:}/rootfs"

echo "# the tree"
st() {
	stat -c "$1" "$2" 2>&1
}
# An image's device nodes are never made (sdpod-security(7)): each is named
# in a warning.
assert_file_absent "$tree/dev/null"
assert_file_absent "$tree/dev/loop-test"
assert_contains "import names the device nodes it did not make" "$ERR" '"dev/loop-test": a block device node (7:200)'
check "the directory of the nodes is there" test -d "$tree/dev"
assert_eq "run/fifo: a fifo, 123:456 0620" "fifo 123:456 620" "$(st '%F %u:%g %a' "$tree/run/fifo")"
assert_eq "usr/bin/suid: 123:456 4755" "regular file 123:456 4755" "$(st '%F %u:%g %a' "$tree/usr/bin/suid")"
assert_eq "usr/bin/suid: content" "$(printf '#!/bin/sh\necho setuid')" "$(cat "$tree/usr/bin/suid" 2>&1)"
assert_eq "usr/bin/sgid: 0:456 2711" "0:456 2711" "$(st '%u:%g %a' "$tree/usr/bin/sgid")"
assert_eq "usr/bin/suid-hardlink: the same inode as suid, 2 links" \
	"$(st '%i 2' "$tree/usr/bin/suid")" "$(st '%i %h' "$tree/usr/bin/suid-hardlink")"
assert_eq "usr/bin/link: a symlink to suid, owned 123:456" "symbolic link suid 123:456" \
	"$(st '%F' "$tree/usr/bin/link") $(readlink "$tree/usr/bin/link") $(st '%u:%g' "$tree/usr/bin/link")"
assert_eq "sticky: 123:456 1777" "123:456 1777" "$(st '%u:%g %a' "$tree/sticky")"
assert_eq "etc/xattr-file: 123:456 0640" "123:456 640" "$(st '%u:%g %a' "$tree/etc/xattr-file")"
assert_eq "etc/xattr-file: user.test is kept" hello \
	"$(getfattr --absolute-names --only-values -n user.test "$tree/etc/xattr-file" 2>&1)"
has_xattr() {
	getfattr --absolute-names -n "$1" "$2" >/dev/null 2>&1
}
# The file system can hold trusted.* (otherwise "dropped" proves nothing).
touch "$DATA/probe"
check "fixture: the data dir's file system takes trusted.* xattrs" setfattr -n trusted.probe -v 1 "$DATA/probe"
rm -f "$DATA/probe"
check_not "etc/xattr-file: trusted.evil is dropped" has_xattr trusted.evil "$tree/etc/xattr-file"
assert_eq "etc/xattr-file: user.test is its only xattr" "user.test" \
	"$(getfattr --absolute-names -d -m - "$tree/etc/xattr-file" 2>&1 | sed -n 's/=.*//p')"

# The same image again, and gc: nothing of it changes.
before=$(snapshot "$tree" --mtime)
assert_exit 0 sd image import "$T/image"
assert_exit 0 sd image gc
assert_eq "import again and gc: the tree is unchanged" "$before" "$(snapshot "$tree" --mtime)"
store_verify

leak_check
