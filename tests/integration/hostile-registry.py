#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""A hostile registry for tests/integration/test-image-pull-hostile.sh.

  hostile-registry.py DIR OUTSIDE

OUTSIDE is an absolute directory of the host that layers try to write into
(through "..", absolute names, symlinks and hard links).

Listens on two ports of 127.0.0.1 the kernel picks: the registry, and an
"other origin" that redirected requests land on. Writes DIR/ports
("REGISTRY-PORT OTHER-PORT") once both listen, DIR/info.json (the digests
of what it serves, by scenario) and appends to DIR/other.log one line per
request the other origin got: "PATH AUTH" where AUTH is "auth" when the
request carried an Authorization header, "none" else.

Each repository h/SCENARIO is one attack; its tag "latest" is what the
test pulls. Images are made here, in memory, with the standard library.
Basic credentials, when a scenario asks for them, are "user:secret".
"""
import base64
import gzip
import hashlib
import http.server
import io
import json
import os
import socketserver
import sys
import tarfile
import threading
import time

DIR = sys.argv[1]
OUT = sys.argv[2].strip("/")
OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
OCI_INDEX = "application/vnd.oci.image.index.v1+json"
OCI_CONFIG = "application/vnd.oci.image.config.v1+json"
LAYER_GZIP = "application/vnd.oci.image.layer.v1.tar+gzip"
LAYER_TAR = "application/vnd.oci.image.layer.v1.tar"
CREDS = "Basic " + base64.b64encode(b"user:secret").decode()
ARCH = {"x86_64": "amd64", "aarch64": "arm64"}.get(os.uname().machine, os.uname().machine)

BLOBS = {}       # digest -> bytes
MANIFESTS = {}   # (scenario, reference) -> (body, media type)
INFO = {}
OTHER_PORT = 0
REG_PORT = 0


def digest(b):
    return "sha256:" + hashlib.sha256(b).hexdigest()


def blob(b):
    d = digest(b)
    BLOBS[d] = b
    return d


def tar_of(entries):
    """entries: (name, kind, data) with kind "file", "dir", "symlink" (data: target)."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as t:
        for name, kind, data in entries:
            ti = tarfile.TarInfo(name)
            ti.mtime = 1700000000
            if kind == "file":
                ti.size = len(data)
                ti.mode = 0o644
                t.addfile(ti, io.BytesIO(data))
            elif kind == "dir":
                ti.type = tarfile.DIRTYPE
                ti.mode = 0o755
                t.addfile(ti)
            elif kind == "symlink":
                ti.type = tarfile.SYMTYPE
                ti.linkname = data
                t.addfile(ti)
            elif kind == "hardlink":
                ti.type = tarfile.LNKTYPE
                ti.linkname = data
                t.addfile(ti)
    return buf.getvalue()


def config(diff_ids, raw=None):
    if raw is not None:
        return blob(raw), len(raw)
    c = {"architecture": ARCH, "os": "linux", "config": {"Cmd": ["/hello"]},
         "rootfs": {"type": "layers", "diff_ids": diff_ids}}
    b = json.dumps(c).encode()
    return blob(b), len(b)


def manifest(scenario, layers, cfg=None, ref="latest", extra=None):
    """layers: (digest, size, media type); cfg: (digest, size) or None (made from
    the diff_ids given by layers' 4th item)."""
    if cfg is None:
        cfg = config([l[3] for l in layers if len(l) > 3])
    m = {"schemaVersion": 2, "mediaType": OCI_MANIFEST,
         "config": {"mediaType": OCI_CONFIG, "digest": cfg[0], "size": cfg[1]},
         "layers": [{"mediaType": l[2], "digest": l[0], "size": l[1]} for l in layers]}
    if extra:
        m.update(extra)
    body = json.dumps(m).encode()
    MANIFESTS[(scenario, ref)] = (body, OCI_MANIFEST)
    MANIFESTS[(scenario, digest(body))] = (body, OCI_MANIFEST)
    return body


def gz_layer(entries):
    t = tar_of(entries)
    g = gzip.compress(t, mtime=0)
    return (blob(g), len(g), LAYER_GZIP, digest(t))


def good_image(scenario, **kw):
    layer = gz_layer([("hello", "file", b"hello from " + scenario.encode() + b"\n")])
    body = manifest(scenario, [layer], **kw)
    INFO[scenario] = {"manifest": digest(body), "layer": layer[0], "layer_size": layer[1]}
    return layer


# ---- the scenarios whose documents are made ahead ----

good_image("good")
good_image("clie")           # the blob's Content-Length lies (more than is sent)
good_image("clmore")         # the blob's body goes on after its Content-Length
good_image("redirloop")      # blobs redirect to themselves
good_image("redirfile")      # blobs redirect to file:///etc/shadow
good_image("redirother")     # blobs redirect to the other origin (Basic auth here)
good_image("digestlie")      # Docker-Content-Digest names another digest
good_image("bigheader")      # a header of 1 MiB on the manifest
good_image("endlessheaders")  # headers that never end
good_image("realmfile")      # a Bearer realm file:///etc/passwd
good_image("realmhuge")      # the token answer: 8 MiB
good_image("realmjunk")      # the token answer: not JSON
good_image("ctescape")       # Content-Type with an escape sequence
good_image("badrange")       # 206 with a Content-Range other than asked
good_image("partial")        # used by the partial-download checks
good_image("bigmanifest")    # GET of the manifest: 5 MiB
good_image("endless")        # GET of the manifest: endless chunked body
good_image("drip")           # GET of the manifest: 4 MB, 4 bytes a second

# The layer says 10 bytes; the blob is 1 GB (streamed, never in memory).
HUGE = digest(b"the huge layer")
INFO["huge"] = {"layer": HUGE}
manifest("huge", [(HUGE, 10, LAYER_GZIP)], cfg=config(None, raw=json.dumps(
    {"architecture": ARCH, "os": "linux"}).encode()))

# A bomb: 256 MiB of zeros in one file, gzip'd to a few hundred KiB; the
# digest and diff_id are right.
_z = io.BytesIO()
with tarfile.open(fileobj=_z, mode="w", format=tarfile.PAX_FORMAT) as _t:
    _ti = tarfile.TarInfo("zeros")
    _ti.size = 256 << 20
    _ti.mtime = 1700000000

    class _Zeros(io.RawIOBase):
        left = 256 << 20

        def readable(self):
            return True

        def readinto(self, b):
            n = min(len(b), self.left)
            b[:n] = bytes(n)
            self.left -= n
            return n
    _t.addfile(_ti, io.BufferedReader(_Zeros(), 1 << 20))
_bt = _z.getvalue()
_bomb = gzip.compress(_bt, compresslevel=9, mtime=0)
_bl = (blob(_bomb), len(_bomb), LAYER_GZIP, digest(_bt))
del _z, _bt
manifest("bomb", [_bl])
INFO["bomb"] = {"layer": _bl[0], "layer_size": _bl[1]}

# Paths that leave the tree.
for name, entries in {
    "dotdot": [("../../../../../../../../../../%s/dotdot" % OUT, "file", b"escaped\n")],
    "absolute": [("/%s/absolute" % OUT, "file", b"escaped?\n")],
    "symlinkfile": [("link", "symlink", "/" + OUT), ("link/symlinkfile", "file", b"escaped\n")],
    "symlinkdir": [("link", "symlink", "../../../../../../../../../../" + OUT),
                   ("link/symlinkdir/x", "file", b"escaped\n")],
    "symlinkrel": [("d", "dir", None), ("d/up", "symlink", "../../../../../../../../../../" + OUT),
                   ("d/up/symlinkrel", "file", b"escaped\n")],
    # a symlink to a directory of the image: the file lands there, in the tree
    "symlinkin": [("etc", "dir", None), ("link", "symlink", "/etc"), ("link/inside", "file", b"in\n")],
    # a hard link to a symlink that points out: a second symlink, nothing more
    "hardlink": [("s", "symlink", "/%s/secret" % OUT), ("h", "hardlink", "s"),
                 ("h2", "hardlink", "../../../../../../../../../../%s/secret" % OUT)],
    "hardlinkok": [("s", "symlink", "/%s/secret" % OUT), ("h", "hardlink", "s")],
}.items():
    l = gz_layer(entries)
    manifest(name, [l])
    INFO[name] = {"layer": l[0]}

# diff_ids that do not match the layer.
_l = gz_layer([("hello", "file", b"diffid\n")])
manifest("diffid", [(_l[0], _l[1], _l[2], "sha256:" + "0" * 64)])
INFO["diffid"] = {"layer": _l[0]}

# Indexes nested three deep.
_inner = good_image("nestedimg")
_body = MANIFESTS[("nestedimg", "latest")][0]
_d, _s = digest(_body), len(_body)
MANIFESTS[("nested", _d)] = (_body, OCI_MANIFEST)
for level in range(3):
    idx = json.dumps({"schemaVersion": 2, "mediaType": OCI_INDEX, "manifests": [
        {"mediaType": OCI_INDEX if level else OCI_MANIFEST, "digest": _d, "size": _s,
         "platform": {"os": "linux", "architecture": ARCH}}]}).encode()
    _d, _s = digest(idx), len(idx)
    MANIFESTS[("nested", _d)] = (idx, OCI_INDEX)
MANIFESTS[("nested", "latest")] = MANIFESTS[("nested", _d)]

# An index that names its own tag's digest cannot exist (a hash), but one
# that names a digest the registry answers with the index itself can be tried.
_self_idx = json.dumps({"schemaVersion": 2, "mediaType": OCI_INDEX, "manifests": [
    {"mediaType": OCI_INDEX, "digest": "sha256:" + "5" * 64, "size": 300,
     "platform": {"os": "linux", "architecture": ARCH}}]}).encode()
MANIFESTS[("selfindex", "latest")] = (_self_idx, OCI_INDEX)
MANIFESTS[("selfindex", "sha256:" + "5" * 64)] = (_self_idx, OCI_INDEX)

# An index of 29000 images, none for this platform (what fits in 4 MiB).
_big = json.dumps({"schemaVersion": 2, "mediaType": OCI_INDEX, "manifests": [
    {"digest": "sha256:%064x" % i, "size": 1, "platform": {"os": "plan9", "architecture": "x"}}
    for i in range(29000)]}, separators=(",", ":")).encode()
MANIFESTS[("bigindex", "latest")] = (_big, OCI_INDEX)

# JSON nested 100000 deep.
MANIFESTS[("deepjson", "latest")] = (b"[" * 100000 + b"]" * 100000, OCI_MANIFEST)

# A config that is not JSON.
_l = gz_layer([("hello", "file", b"x\n")])
manifest("badconfig", [_l], cfg=config(None, raw=b"\x00this is not json\x1b[2J"))

# Digest strings with path characters.
_l = gz_layer([("hello", "file", b"x\n")])
manifest("pathdigest", [("sha256:../../../../etc/passwd", _l[1], _l[2])])
manifest("pathconfig", [_l], cfg=("sha256:../../x", 10))

# Media types with escape sequences, in the manifest's body.
_l = gz_layer([("hello", "file", b"x\n")])
manifest("mtescape", [(_l[0], _l[1], "application/x\x1b]0;pwned\x07\x1b[31mred")])
_b = json.dumps({"schemaVersion": 2, "mediaType": "\x1b[2Jtext/evil\x07",
                 "config": {}, "layers": []}).encode()
MANIFESTS[("docescape", "latest")] = (_b, None)

# 25000 layers (what fits in 4 MiB), each a distinct digest the registry does not have.
_lay = []
for i in range(25000):
    _lay.append(("sha256:%064x" % (i + 1), 1, LAYER_TAR))
manifest("manylayers", _lay, cfg=config(None, raw=json.dumps(
    {"architecture": ARCH, "os": "linux"}).encode()))
# 100000 layers: more than 4 MiB of manifest.
manifest("layers100k", _lay * 4, cfg=config(None, raw=json.dumps(
    {"architecture": ARCH, "os": "linux"}).encode()))
# 25000 times the same small layer.
_l = gz_layer([("hello", "file", b"x\n")])
manifest("samelayers", [_l] * 25000, cfg=config(None, raw=json.dumps(
    {"architecture": ARCH, "os": "linux"}).encode()))

# A digest reference whose body does not hash to it.
_body = MANIFESTS[("good", "latest")][0]
WRONG = "sha256:" + "7" * 64
MANIFESTS[("wrongdigest", WRONG)] = (_body, OCI_MANIFEST)
INFO["wrongdigest"] = {"reference": WRONG}


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True


class Base(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def answer(self, code, body=b"", headers=()):
        self.send_response(code)
        for k, v in headers:
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)


class Other(Base):
    def do_GET(self):
        with open(os.path.join(DIR, "other.log"), "a") as f:
            f.write("%s %s\n" % (self.path, "auth" if "Authorization" in self.headers else "none"))
        d = self.path.rsplit("/", 1)[-1]
        if self.path.startswith("/token"):
            return self.answer(200, json.dumps({"token": "t0k3n"}).encode())
        if d in BLOBS:
            return self.answer(200, BLOBS[d])
        self.answer(404)

    do_HEAD = do_GET


def endless(wfile, chunk=b"x" * 65536, seconds=120):
    """A chunked body that goes on (for 120 s at most: the test fails long before)."""
    end = time.time() + seconds
    try:
        while time.time() < end:
            wfile.write(b"%x\r\n" % len(chunk) + chunk + b"\r\n")
    except OSError:
        pass


class Registry(Base):
    def scenario(self):
        parts = self.path.split("?")[0].split("/")
        # /v2/h/SCENARIO/(manifests|blobs)/REF
        if len(parts) >= 6 and parts[1] == "v2" and parts[2] == "h":
            return parts[3], parts[4], "/".join(parts[5:])
        return None, None, None

    def auth(self, sc):
        """Whether the request may go on; answers the 401 else."""
        if sc == "redirother":
            if self.headers.get("Authorization") != CREDS:
                self.answer(401, b"", [("WWW-Authenticate", 'Basic realm="hostile"')])
                return False
        if sc in ("realmfile", "realmhuge", "realmjunk"):
            if not self.headers.get("Authorization", "").startswith("Bearer "):
                realm = {"realmfile": "file:///etc/passwd",
                         "realmhuge": "http://127.0.0.1:%d/huge" % REG_PORT,
                         "realmjunk": "http://127.0.0.1:%d/junk" % REG_PORT}[sc]
                self.answer(401, b"", [("WWW-Authenticate", 'Bearer realm="%s",service="x"' % realm)])
                return False
        return True

    def do_GET(self):
        if self.path == "/v2/" or self.path == "/v2":
            return self.answer(200, b"{}")
        if self.path.startswith("/huge"):
            self.send_response(200)
            self.send_header("Content-Length", str(8 << 20))
            self.end_headers()
            try:
                self.wfile.write(b'{"token": "' + b"a" * (8 << 20))
            except OSError:
                pass
            return
        if self.path.startswith("/junk"):
            return self.answer(200, b"\x1b[31mnot json at all\x07")
        sc, kind, ref = self.scenario()
        if not sc:
            return self.answer(404)
        if not self.auth(sc):
            return
        if kind == "manifests":
            return self.manifest(sc, ref)
        if kind == "blobs":
            return self.blob(sc, ref)
        self.answer(404)

    do_HEAD = do_GET

    def manifest(self, sc, ref):
        if sc == "bigmanifest" and self.command == "GET":
            body = b'{"pad": "' + b"a" * (5 << 20) + b'"}'
            return self.answer(200, body, [("Content-Type", OCI_MANIFEST)])
        if sc == "endless" and self.command == "GET":
            self.send_response(200)
            self.send_header("Content-Type", OCI_MANIFEST)
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            endless(self.wfile)
            self.close_connection = True
            return
        if sc == "drip" and self.command == "GET":
            self.send_response(200)
            self.send_header("Content-Type", OCI_MANIFEST)
            self.send_header("Content-Length", str(4 << 20))
            self.end_headers()
            end = time.time() + 120
            try:
                while time.time() < end:
                    self.wfile.write(b" ")
                    self.wfile.flush()
                    time.sleep(0.25)
            except OSError:
                pass
            self.close_connection = True
            return
        if sc == "bigheader":
            self.send_response(200)
            self.send_header("Content-Type", OCI_MANIFEST)
            self.send_header("X-Junk", "j" * (1 << 20))
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        if sc == "endlessheaders":
            self.wfile.write(b"HTTP/1.1 200 OK\r\n")
            end = time.time() + 120
            try:
                i = 0
                while time.time() < end:
                    self.wfile.write(b"X-Junk-%d: %s\r\n" % (i, b"j" * 100))
                    i += 1
            except OSError:
                pass
            self.close_connection = True
            return
        m = MANIFESTS.get((sc, ref))
        if not m:
            # Escapes in JSON's own form (a raw control character would
            # make it no JSON at all, refused as a whole).
            return self.answer(404, b'{"errors": [{"code": "MANIFEST_UNKNOWN", "message": "\\u001b[31mno\\u0007"}]}')
        body, mt = m
        headers = []
        if mt:
            headers.append(("Content-Type", mt if sc != "ctescape" else mt + "\x1b[31m"))
        if sc == "digestlie":
            headers.append(("Docker-Content-Digest", "sha256:" + "6" * 64))
        else:
            headers.append(("Docker-Content-Digest", digest(body)))
        self.answer(200, body, headers)

    def blob(self, sc, d):
        if sc == "huge" and d == HUGE:
            self.send_response(200)
            self.send_header("Content-Length", str(1 << 30))
            self.end_headers()
            chunk = b"\x1f\x8b" + b"h" * 65534
            try:
                for _ in range((1 << 30) // len(chunk)):
                    self.wfile.write(chunk)
            except OSError:
                pass
            self.close_connection = True
            return
        if sc == "redirloop":
            return self.answer(307, b"", [("Location", self.path)])
        if sc == "redirfile":
            return self.answer(307, b"", [("Location", "file:///etc/shadow")])
        if sc == "redirother" and d in BLOBS:
            return self.answer(307, b"", [("Location", "http://127.0.0.1:%d/store/%s" % (OTHER_PORT, d))])
        b = BLOBS.get(d)
        if b is None:
            return self.answer(404, b'{"errors": [{"code": "BLOB_UNKNOWN", "message": "unknown"}]}')
        if sc == "clie" and d == INFO["clie"]["layer"]:
            self.send_response(200)
            self.send_header("Content-Length", str(len(b) + 1000))
            self.end_headers()
            self.wfile.write(b[: len(b) // 2])
            self.close_connection = True
            return
        if sc == "clmore" and d == INFO["clmore"]["layer"]:
            self.send_response(200)
            self.send_header("Content-Length", str(len(b)))
            self.end_headers()
            # the answer, and then the start of a forged second one
            self.wfile.write(b + b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nforge")
            return
        rng = self.headers.get("Range")
        if rng and rng.startswith("bytes=") and rng.endswith("-"):
            start = int(rng[6:-1])
            if sc == "badrange":
                start = 0
            return self.answer(206, b[start:] if sc != "badrange" else b,
                               [("Content-Range", "bytes %d-%d/%d" % (start, len(b) - 1, len(b)))])
        self.answer(200, b)


def main():
    global OTHER_PORT, REG_PORT
    other = Server(("127.0.0.1", 0), Other)
    reg = Server(("127.0.0.1", 0), Registry)
    OTHER_PORT = other.server_address[1]
    REG_PORT = reg.server_address[1]
    with open(os.path.join(DIR, "info.json"), "w") as f:
        json.dump(INFO, f)
    threading.Thread(target=other.serve_forever, daemon=True).start()
    with open(os.path.join(DIR, "ports.tmp"), "w") as f:
        f.write("%d %d\n" % (REG_PORT, OTHER_PORT))
    os.rename(os.path.join(DIR, "ports.tmp"), os.path.join(DIR, "ports"))
    reg.serve_forever()


main()
