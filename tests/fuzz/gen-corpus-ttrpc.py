#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Writes the hand-made seeds of corpus/ttrpc: byte streams a ttrpc client
(containerd) sends on a shim's connection, valid and broken.

    tests/fuzz/gen-corpus-ttrpc.py [CORPUS_DIR]    (default: the corpus/ next to it)

Protobuf is encoded by hand here (field numbers from lib/shim/proto/), so
the seeds do not depend on a Python protobuf module.
"""

import os
import struct
import sys

SERVICE = "containerd.task.v2.Task"


def varint(n):
    out = b""
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out += bytes([b | 0x80])
        else:
            return out + bytes([b])


def field_bytes(num, data):
    if isinstance(data, str):
        data = data.encode()
    return varint(num << 3 | 2) + varint(len(data)) + data


def field_varint(num, n):
    return varint(num << 3) + varint(n)


def request(method, payload=b"", service=SERVICE, metadata=()):
    out = field_bytes(1, service) + field_bytes(2, method) + field_bytes(3, payload)
    for k, v in metadata:
        out += field_bytes(5, field_bytes(1, k) + field_bytes(2, v))
    return out


def frame(stream_id, payload, type_=1, flags=0, length=None):
    n = len(payload) if length is None else length
    return struct.pack(">IIBB", n, stream_id, type_, flags) + payload


def mount(type_, source, options):
    out = field_bytes(1, type_) + field_bytes(2, source)
    for o in options:
        out += field_bytes(4, o)
    return out


def create_request():
    return (field_bytes(1, "c1") + field_bytes(2, "/run/containerd/io.containerd.runtime.v2.task/k8s.io/c1")
            + field_bytes(3, mount("overlay", "overlay", ["lowerdir=/a:/b", "upperdir=/u", "workdir=/w"]))
            + field_bytes(5, "/run/containerd/fifo/1/c1-stdin")
            + field_bytes(6, "/run/containerd/fifo/1/c1-stdout")
            + field_bytes(7, "/run/containerd/fifo/1/c1-stderr")
            + field_bytes(10, field_bytes(1, "containerd.runc.v1.Options") + field_bytes(2, b"\x08\x01")))


def seeds():
    ns = [("containerd-namespace-ttrpc", "k8s.io")]
    s = {}
    s["connect"] = frame(1, request("Connect", field_bytes(1, "c1"), metadata=ns))
    s["create-start"] = (frame(1, request("Create", create_request(), metadata=ns))
                         + frame(3, request("Start", field_bytes(1, "c1"), metadata=ns)))
    # A Wait stays open while State and Kill come on the same connection.
    s["wait-state-kill"] = (frame(1, request("Wait", field_bytes(1, "c1")))
                            + frame(3, request("State", field_bytes(1, "c1")))
                            + frame(5, request("Kill", field_bytes(1, "c1") + field_varint(3, 9) + field_varint(4, 1)))
                            + frame(7, request("Delete", field_bytes(1, "c1"))))
    s["exec"] = frame(1, request("Exec", field_bytes(1, "c1") + field_bytes(2, "e1") + field_varint(3, 1)
                                 + field_bytes(7, field_bytes(1, "types.containerd.io/opencontainers/runtime-spec/1/Process")
                                               + field_bytes(2, b'{"args":["sh"],"cwd":"/"}'))))
    s["update-annotations"] = frame(1, request("Update", field_bytes(1, "c1")
                                               + field_bytes(3, field_bytes(1, "a") + field_bytes(2, "b"))))
    s["pause-unimplemented"] = frame(1, request("Pause", field_bytes(1, "c1")))
    s["unknown-method"] = frame(1, request("Frobnicate")) + frame(3, request("Create", service="no.Service"))
    s["bad-request"] = frame(1, b"\x0a\x7f\x01") + frame(3, request("Pids", field_bytes(1, "c1")))
    s["bad-payload"] = frame(1, request("Create", b"\x12\xff\xff\xff\xff\x0f"))
    s["data-frame"] = frame(1, b"abcd", type_=3) + frame(3, request("Stats", field_bytes(1, "c1")))
    s["oversize"] = frame(1, b"", length=(4 << 20) + 1)
    s["truncated"] = frame(1, request("State"), length=200)
    s["even-stream"] = frame(2, request("State"))
    s["stream-reused"] = frame(1, request("Wait")) + frame(1, request("State"))
    s["shutdown"] = frame(1, request("Shutdown", field_bytes(1, "c1") + field_varint(2, 1)))
    s["garbage"] = b"GET / HTTP/1.1\r\nHost: shim\r\n\r\n"
    return s


def main():
    corpus = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus")
    d = os.path.join(corpus, "ttrpc")
    os.makedirs(d, exist_ok=True)
    for name, data in seeds().items():
        with open(os.path.join(d, name), "wb") as f:
            f.write(data)


if __name__ == "__main__":
    main()
