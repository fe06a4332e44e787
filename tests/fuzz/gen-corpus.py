#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Writes the hand-made seeds of corpus/layer and corpus/import.

The seeds are committed; this script documents what each one is and makes
them again (byte for byte: times, owners and compression headers are pinned).
The JSON seeds of corpus/json-records are real documents and records taken
from test images (see README.md) and are not made here.

    tests/fuzz/gen-corpus.py [CORPUS_DIR]    (default: the corpus/ next to it)

Seeds stay small (a few KB) so that libFuzzer's -max_len need not grow and
every mutation is cheap: the import seeds carry a two-file rootfs, not
busybox.

Several layer seeds point symlinks at /proc/self/fd/1000/outside: the fuzz
targets keep their scratch directory open as fd 1000 (see fuzz.h), so that
path is the sentinel directory next to the tree, reachable only if the
library resolves a symlink outside the tree it writes into.
"""

import bz2
import gzip
import hashlib
import io
import json
import lzma
import os
import shutil
import subprocess
import sys
import tarfile

# No padding to tar's 10 KiB records: the two zero blocks of the end marker
# are enough for every reader, and the seeds stay small.
tarfile.RECORDSIZE = tarfile.BLOCKSIZE

MTIME = 1577836800  # 2020-01-01, as tests/integration/images/images.sh
SENTINEL_DIR = "/proc/self/fd/1000/outside"

MT_OCI_INDEX = "application/vnd.oci.image.index.v1+json"
MT_OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
MT_OCI_CONFIG = "application/vnd.oci.image.config.v1+json"
MT_OCI_LAYER = "application/vnd.oci.image.layer.v1.tar"
MT_OCI_LAYER_GZ = "application/vnd.oci.image.layer.v1.tar+gzip"
REF_NAME = "org.opencontainers.image.ref.name"


# --- tar ---------------------------------------------------------------------

def F(name, data=b"", mode=0o644, **kw):
    return dict(type=tarfile.REGTYPE, name=name, data=data, mode=mode, **kw)


def D(name, mode=0o755, **kw):
    return dict(type=tarfile.DIRTYPE, name=name, mode=mode, **kw)


def S(name, target, **kw):
    return dict(type=tarfile.SYMTYPE, name=name, linkname=target, mode=0o777, **kw)


def H(name, target, **kw):
    return dict(type=tarfile.LNKTYPE, name=name, linkname=target, mode=0o644, **kw)


def N(name, kind, major=0, minor=0, mode=0o644):
    return dict(type=kind, name=name, mode=mode, devmajor=major, devminor=minor)


def tar(entries, fmt=tarfile.PAX_FORMAT):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=fmt) as t:
        for e in entries:
            i = tarfile.TarInfo(e["name"])
            i.type = e["type"]
            i.mode = e["mode"]
            i.mtime = MTIME
            i.uid = e.get("uid", 0)
            i.gid = e.get("gid", 0)
            i.uname = i.gname = ""
            i.linkname = e.get("linkname", "")
            i.devmajor = e.get("devmajor", 0)
            i.devminor = e.get("devminor", 0)
            if "pax" in e:
                i.pax_headers = e["pax"]
            data = e.get("data", b"")
            i.size = len(data) if i.type == tarfile.REGTYPE else 0
            t.addfile(i, io.BytesIO(data) if i.size else None)
    return buf.getvalue()


def gz(data):
    return gzip.compress(data, compresslevel=9, mtime=0)


def zstd(data):
    if not shutil.which("zstd"):
        return None
    return subprocess.run(["zstd", "-q", "-19", "-c"], input=data, stdout=subprocess.PIPE, check=True).stdout


ROOTFS = [
    D("bin/"),
    F("bin/hello", b"#!/bin/sh\necho hello\n", 0o755),
    S("bin/sh", "hello"),
    D("etc/"),
    F("etc/hostname", b"fuzz\n"),
]


def layer_seeds():
    s = {}
    s["plain.tar"] = tar(ROOTFS + [H("bin/hello2", "bin/hello"), F("./etc/./motd", b"hi\n")])
    s["gnu-longname.tar"] = tar([D("a/"), F("a/" + "n" * 120, b"x"), S("a/" + "l" * 110, "t" * 120)],
                                fmt=tarfile.GNU_FORMAT)
    s["gzip.tar.gz"] = gz(tar(ROOTFS))
    s["bzip2.tar.bz2"] = bz2.compress(tar(ROOTFS), 9)
    s["xz.tar.xz"] = lzma.compress(tar(ROOTFS))
    z = zstd(tar(ROOTFS))
    if z:
        s["zstd.tar.zst"] = z
    s["aci-rootfs.tar"] = tar([F("manifest", b'{"acKind":"ImageManifest"}'), D("rootfs/")] +
                              [dict(e, name="rootfs/" + e["name"]) for e in ROOTFS] +
                              [F("rootfsx/not-below-rootfs", b"x")])

    # Names that leave the tree: refused ("..") or made relative ("/").
    s["dotdot.tar"] = tar([F("ok", b"1"), F("../x", b"escaped\n")])
    s["dotdot-inner.tar"] = tar([D("a/"), F("a/../../outside/x", b"escaped\n")])
    s["absolute.tar"] = tar([F("/abs", b"made relative\n"), D("/etc/"), F("/etc/passwd", b"root::0:0::/:/bin/sh\n"),
                             H("/etc/passwd-", "/etc/passwd")])
    # A symlink planted first, then entries through it, pointing at the
    # sentinel directory by an absolute and by a relative path. (An entry
    # that fails ends the layer: one attempt per seed.)
    s["symlink-abs-then-file.tar"] = tar([S("evil", SENTINEL_DIR), F("evil/pwned", b"escaped\n")])
    s["symlink-rel-then-file.tar"] = tar([S("rootfs/rel", "../outside"), F("rootfs/rel/pwned", b"escaped\n")])
    # A symlink at a name, then a file at the same name: must replace the
    # symlink, not write through it.
    s["symlink-replaced.tar"] = tar([
        S("x", SENTINEL_DIR + "/sentinel"), F("x", b"replaced\n"),
        S("rootfs/y", "../../outside/sentinel"), F("rootfs/y", b"replaced\n"),
        S("d", SENTINEL_DIR), D("d/"), F("d/sentinel", b"replaced\n"),
    ])
    # Hard links out of the tree: by "..", and through a symlink.
    s["hardlink-dotdot.tar"] = tar([F("etc/passwd", b"x"), H("h", "../../etc/passwd")])
    s["hardlink-through-symlink.tar"] = tar([S("rootfs/s", SENTINEL_DIR), H("rootfs/h", "rootfs/s/sentinel")])
    # OCI whiteouts. The fuzz target applies every input twice, first with
    # subdir "rootfs" (ACI), then with whiteouts on top: so "rootfs/..."
    # entries make the lower layer that ".wh." entries act on.
    s["whiteouts.tar"] = tar([
        D("rootfs/lower/"), F("rootfs/lower/old", b"old"), F("rootfs/gone", b"gone"), D("rootfs/dir/"),
        F("rootfs/dir/f", b"f"),
        F(".wh.gone"), F("lower/.wh..wh..opq"), F("lower/new", b"new"), F(".wh.dir"),
        F("new/.wh.missing"), F(".wh..wh.plnk"), F(".wh..."), F("same"), F(".wh.same"),
    ])
    # Whiteouts and opaque markers below a symlink that leads out.
    s["whiteout-through-symlink.tar"] = tar([
        S("rootfs/l", SENTINEL_DIR), S("rootfs/r", "../outside"),
        F("l/.wh.sentinel"), F("r/.wh.sentinel"), F("l/.wh..wh..opq"), F("r/.wh..wh..opq"),
    ])
    # Entries replacing each other: file by directory, directory by file,
    # directory by symlink, and a duplicate.
    s["replace.tar"] = tar([
        F("a", b"file"), D("a/"), F("a/f", b"in dir"),
        D("b/"), F("b/f", b"x"), F("b", b"file now"),
        D("c/"), S("c", "/"), F("c/through", b"into the root of the tree"),
        F("dup", b"1"), F("dup", b"22"),
    ])
    # Device nodes, a FIFO and extended attributes (kept: user.*,
    # security.capability; dropped: trusted.*, security.selinux).
    s["special.tar"] = tar([
        N("dev/null", tarfile.CHRTYPE, 1, 3), N("dev/sda", tarfile.BLKTYPE, 8, 0), N("fifo", tarfile.FIFOTYPE),
        F("xattrs", b"x", pax={
            "SCHILY.xattr.user.k": "v",
            # VFS_CAP_REVISION_2, effective, CAP_NET_BIND_SERVICE
            "SCHILY.xattr.security.capability": "\x01\x00\x00\x02\x00\x04" + "\x00" * 14,
            "SCHILY.xattr.trusted.overlay.opaque": "y",
            "SCHILY.xattr.security.selinux": "system_u:object_r:etc_t:s0",
        }),
        F("suid", b"x", 0o4755), D("sticky/", 0o1777), F("owned", b"x", uid=1000, gid=1000),
    ])
    # pax overrides of the name and link target.
    s["pax-path.tar"] = tar([
        F("short", b"x", pax={"path": "rootfs/" + "p" * 200}),
        S("sl", "t", pax={"linkpath": SENTINEL_DIR}),
        F("sl/x", b"escaped\n"),
    ])
    return s


# --- images --------------------------------------------------------------------

def sha(b):
    return hashlib.sha256(b).hexdigest()


def js(o):
    return json.dumps(o, separators=(",", ":"), sort_keys=True).encode()


def image_config(diff_ids, arch="amd64"):
    return js({
        "architecture": arch, "os": "linux",
        "config": {"Entrypoint": ["/bin/sh"], "Cmd": ["-c", "echo hi"], "Env": ["PATH=/bin"],
                   "WorkingDir": "/", "User": "1000:1000", "ExposedPorts": {"80/tcp": {}}},
        "rootfs": {"type": "layers", "diff_ids": ["sha256:" + d for d in diff_ids]},
    })


def files_tar(files):
    """A tar of {path: bytes} with the parent directories, as oci-archive
    and docker save write them."""
    entries, dirs = [], set()
    for path in sorted(files):
        parts = path.split("/")[:-1]
        for i in range(1, len(parts) + 1):
            d = "/".join(parts[:i]) + "/"
            if d not in dirs:
                dirs.add(d)
                entries.append(D(d))
        entries.append(F(path, files[path]))
    return tar(entries)


def oci_manifest(blobs, layers, arch="amd64"):
    """Adds config and layers to blobs; returns the manifest bytes.
    layers: list of (uncompressed tar, gzip?)."""
    descs, diff_ids = [], []
    for data, compress in layers:
        diff_ids.append(sha(data))
        b = gz(data) if compress else data
        blobs[sha(b)] = b
        descs.append({"mediaType": MT_OCI_LAYER_GZ if compress else MT_OCI_LAYER,
                      "digest": "sha256:" + sha(b), "size": len(b)})
    c = image_config(diff_ids, arch)
    blobs[sha(c)] = c
    return js({"schemaVersion": 2, "mediaType": MT_OCI_MANIFEST,
               "config": {"mediaType": MT_OCI_CONFIG, "digest": "sha256:" + sha(c), "size": len(c)},
               "layers": descs})


def desc(mt, b, ref=None, platform=None):
    d = {"mediaType": mt, "digest": "sha256:" + sha(b), "size": len(b)}
    if ref:
        d["annotations"] = {REF_NAME: ref}
    if platform:
        d["platform"] = platform
    return d


def oci_archive(blobs, index_manifests):
    files = {"oci-layout": js({"imageLayoutVersion": "1.0.0"}),
             "index.json": js({"schemaVersion": 2, "manifests": index_manifests})}
    for h, b in blobs.items():
        files["blobs/sha256/" + h] = b
    return files_tar(files)


def import_seeds():
    s = {}
    base = tar(ROOTFS)

    blobs = {}
    m = oci_manifest(blobs, [(base, True)])
    blobs[sha(m)] = m
    s["oci-archive.tar"] = oci_archive(blobs, [desc(MT_OCI_MANIFEST, m, "fuzz/oci:latest")])

    # Two layers, the upper one with whiteouts; uncompressed layers.
    blobs = {}
    upper = tar([F("etc/.wh.hostname"), F("bin/.wh..wh..opq"), F("bin/sh", b"new sh", 0o755)])
    m = oci_manifest(blobs, [(base, True), (upper, False)])
    blobs[sha(m)] = m
    s["oci-archive-whiteouts.tar"] = oci_archive(blobs, [desc(MT_OCI_MANIFEST, m, "latest")])

    # Index -> nested index -> manifests for two platforms.
    blobs = {}
    m_amd = oci_manifest(blobs, [(base, True)])
    m_arm = oci_manifest(blobs, [(base, True)], arch="arm64")
    blobs[sha(m_amd)] = m_amd
    blobs[sha(m_arm)] = m_arm
    nested = js({"schemaVersion": 2, "mediaType": MT_OCI_INDEX, "manifests": [
        desc(MT_OCI_MANIFEST, m_arm, platform={"os": "linux", "architecture": "arm64", "variant": "v8"}),
        desc(MT_OCI_MANIFEST, m_amd, platform={"os": "linux", "architecture": "amd64"}),
    ]})
    blobs[sha(nested)] = nested
    s["oci-archive-nested-index.tar"] = oci_archive(blobs, [desc(MT_OCI_INDEX, nested, "fuzz/multi:1")])

    # docker save: <config>.json, <id>/layer.tar (a symlink to a shared
    # layer file, as docker writes for repeated layers), manifest.json.
    cfg = image_config([sha(base)])
    s["docker-archive.tar"] = tar([
        F(sha(base) + ".tar", base, 0o444),
        F(sha(cfg) + ".json", cfg, 0o444),
        D("aaaa/"),
        S("aaaa/layer.tar", "../" + sha(base) + ".tar"),
        F("aaaa/VERSION", b"1.0", 0o444),
        F("manifest.json", js([{"Config": sha(cfg) + ".json", "RepoTags": ["fuzz/docker:latest"],
                                "Layers": ["aaaa/layer.tar"]}]), 0o444),
        F("repositories", js({"fuzz/docker": {"latest": "aaaa"}}), 0o444),
    ])

    # docker-archive in the newer layout of blobs/sha256 (docker 25+).
    files = {"blobs/sha256/" + sha(cfg): cfg, "blobs/sha256/" + sha(base): base,
             "manifest.json": js([{"Config": "blobs/sha256/" + sha(cfg), "RepoTags": ["docker.io/library/fuzz:2"],
                                   "Layers": ["blobs/sha256/" + sha(base)]}])}
    s["docker-archive-blobs.tar"] = files_tar(files)

    aci_manifest = js({
        "acKind": "ImageManifest", "acVersion": "0.8.11", "name": "example.com/fuzz",
        "labels": [{"name": "version", "value": "1.0.0"}, {"name": "os", "value": "linux"},
                   {"name": "arch", "value": "amd64"}],
        "app": {"exec": ["/bin/sh", "-c", "echo hi"], "user": "0", "group": "0",
                "workingDirectory": "/", "environment": [{"name": "PATH", "value": "/bin"}],
                "ports": [{"name": "http", "protocol": "tcp", "port": 8080}]},
    })
    aci = tar([F("manifest", aci_manifest), D("rootfs/")] + [dict(e, name="rootfs/" + e["name"]) for e in ROOTFS])
    s["aci.tar"] = aci
    s["aci.tar.gz"] = gz(aci)
    s["aci.tar.xz"] = lzma.compress(aci)

    # Members that appear twice (tar allows it: "tar -r" appends), and a
    # directory reached through a symlink of the archive: honest here, but
    # one mutation away from members whose content differs from what was
    # hashed, or from a symlink out of the archive.
    blobs = {}
    m = oci_manifest(blobs, [(base, True)])
    blobs[sha(m)] = m
    t = oci_archive(blobs, [desc(MT_OCI_MANIFEST, m, "dup")])
    c = [h for h, b in blobs.items() if b.startswith(b'{"architecture"')][0]
    s["oci-archive-duplicate-member.tar"] = t[:-2 * tarfile.BLOCKSIZE] + tar([F("blobs/sha256/" + c, blobs[c])])
    s["docker-archive-symlinked-dir.tar"] = tar([
        D("real/"), S("l", "real"),
        F("l/" + sha(cfg) + ".json", cfg, 0o444),
        F("l/layer.tar", base, 0o444),
        F("manifest.json", js([{"Config": "l/" + sha(cfg) + ".json", "RepoTags": ["fuzz/link:latest"],
                                "Layers": ["l/layer.tar"]}]), 0o444),
    ])

    # Hostile archives: ".." and symlinked blob directories.
    s["archive-dotdot.tar"] = tar([F("oci-layout", b'{"imageLayoutVersion":"1.0.0"}'), F("../index.json", b"{}")])
    s["archive-symlink-blobs.tar"] = tar([
        S("blobs", SENTINEL_DIR), F("oci-layout", b'{"imageLayoutVersion":"1.0.0"}'),
        F("index.json", js({"schemaVersion": 2, "manifests": [
            {"mediaType": MT_OCI_MANIFEST, "digest": "sha256:" + "0" * 64, "size": 2}]})),
    ])
    return s


def write(dir, seeds):
    os.makedirs(dir, exist_ok=True)
    for name, data in seeds.items():
        with open(os.path.join(dir, name), "wb") as f:
            f.write(data)
        print(f"{os.path.join(dir, name)}: {len(data)} bytes")


def main():
    corpus = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus")
    write(os.path.join(corpus, "layer"), layer_seeds())
    write(os.path.join(corpus, "import"), import_seeds())


if __name__ == "__main__":
    main()
