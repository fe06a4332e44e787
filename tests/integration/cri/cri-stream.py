#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Drives a CRI streaming session (the URL an Exec answers) for sdpod's tests.

    cri-stream.py [--timeout=S] URL STEP...

The session is Kubernetes' remote command protocol over a WebSocket
("v4.channel.k8s.io", which containerd's streaming server speaks beside
SPDY): each message starts with its channel's number, 0 stdin, 1 stdout,
2 stderr, 3 the error channel (the command's end, as a JSON Status), 4 the
terminal's size (JSON {"Width", "Height"}). The steps drive it:

    expect:TEXT   wait until the output (stdout and stderr, from the
                  previous expect on) holds TEXT
    send:TEXT     write TEXT to stdin (Python escapes: \\x04 is Ctrl-D)
    resize:R:C    send a window size of R rows and C columns
    sleep:S       wait S seconds, reading meanwhile

Then it waits for the error channel's status and the end of the session,
prints the output, then "EXIT=N" (0 on Success, the ExitCode cause on
Failure, -1 when the status said nothing of it). Exit status 0, or 3 when an
expect or the wait timed out (the output so far is printed).

Only the Python standard library: the WebSocket framing it needs (RFC 6455:
the client's frames masked, the server's not) is a few lines.
"""

import base64
import json
import os
import select
import socket
import struct
import sys
import time
import urllib.parse


class WebSocket:
    def __init__(self, url, protocol, timeout):
        u = urllib.parse.urlsplit(url)
        if u.scheme != "http":
            sys.exit("cri-stream: only http:// streaming URLs are served (%s)" % url)
        self.sock = socket.create_connection((u.hostname, u.port or 80), timeout=timeout)
        key = base64.b64encode(os.urandom(16)).decode()
        path = u.path + ("?" + u.query if u.query else "")
        req = ("GET %s HTTP/1.1\r\nHost: %s\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
               "Sec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Protocol: %s\r\n\r\n"
               % (path, u.netloc, key, protocol))
        self.sock.sendall(req.encode())
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = self.sock.recv(4096)
            if not chunk:
                sys.exit("cri-stream: the server closed during the handshake: %r" % head)
            head += chunk
        head, _, self.buf = head.partition(b"\r\n\r\n")
        status = head.split(b"\r\n", 1)[0]
        if b" 101 " not in status + b" ":
            sys.exit("cri-stream: no WebSocket: %r" % head[:400])
        self.sock.setblocking(False)
        self.closed = False

    def send(self, payload, opcode=2):
        mask = os.urandom(4)
        n = len(payload)
        if n < 126:
            head = struct.pack("!BB", 0x80 | opcode, 0x80 | n)
        elif n < 65536:
            head = struct.pack("!BBH", 0x80 | opcode, 0x80 | 126, n)
        else:
            head = struct.pack("!BBQ", 0x80 | opcode, 0x80 | 127, n)
        data = head + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
        self.sock.setblocking(True)
        self.sock.sendall(data)
        self.sock.setblocking(False)

    def _frame(self):
        """One whole frame from the buffer: (opcode, payload), or None."""
        b = self.buf
        if len(b) < 2:
            return None
        opcode, n, off = b[0] & 0x0F, b[1] & 0x7F, 2
        if n == 126:
            if len(b) < 4:
                return None
            n, off = struct.unpack("!H", b[2:4])[0], 4
        elif n == 127:
            if len(b) < 10:
                return None
            n, off = struct.unpack("!Q", b[2:10])[0], 10
        if b[1] & 0x80:
            off += 4    # a server never masks; taken as given
        if len(b) < off + n:
            return None
        self.buf = b[off + n:]
        return opcode, b[off:off + n]

    def recv(self, secs):
        """The messages that came within secs (fewer once closed)."""
        out = []
        r, _, _ = select.select([self.sock], [], [], secs)
        if r:
            try:
                chunk = self.sock.recv(65536)
            except BlockingIOError:
                chunk = None
            if chunk == b"":
                self.closed = True
            elif chunk:
                self.buf += chunk
        while True:
            f = self._frame()
            if f is None:
                return out
            opcode, payload = f
            if opcode == 8:
                self.closed = True
            elif opcode == 9:
                self.send(payload, opcode=10)
            elif opcode in (0, 1, 2):
                out.append(payload)


def main():
    args = sys.argv[1:]
    timeout = 30.0
    if args and args[0].startswith("--timeout="):
        timeout = float(args.pop(0)[10:])
    url, steps = args[0], args[1:]
    ws = WebSocket(url, "v4.channel.k8s.io", timeout)
    out = bytearray()
    status = None
    mark = 0

    def pump(secs):
        nonlocal status
        end = time.monotonic() + secs
        while not ws.closed:
            left = end - time.monotonic()
            if left <= 0:
                return
            for m in ws.recv(min(left, 0.1)):
                if not m:
                    continue
                if m[0] in (1, 2):
                    out.extend(m[1:])
                elif m[0] == 3 and len(m) > 1:
                    status = json.loads(m[1:].decode())

    failed = None
    for s in steps:
        kind, _, arg = s.partition(":")
        if kind == "expect":
            want = arg.encode()
            end = time.monotonic() + timeout
            while want not in out[mark:] and time.monotonic() < end and not ws.closed:
                pump(0.05)
            if want not in out[mark:]:
                failed = "expect %r timed out" % arg
                break
            mark = out.index(want, mark) + len(want)
        elif kind == "send":
            ws.send(b"\x00" + arg.encode().decode("unicode_escape").encode("latin-1"))
        elif kind == "resize":
            r, c = arg.split(":")
            ws.send(b"\x04" + json.dumps({"Width": int(c), "Height": int(r)}).encode())
        elif kind == "sleep":
            pump(float(arg))
        else:
            sys.exit("cri-stream: unknown step " + s)
    end = time.monotonic() + timeout
    while failed is None and not ws.closed:
        if time.monotonic() >= end:
            failed = "the session did not end within %s s" % timeout
            break
        pump(0.05)
    sys.stdout.write(out.decode("utf-8", "replace"))
    rc = -1
    if status is not None and status.get("status") == "Success":
        rc = 0
    elif status is not None:
        for c in (status.get("details") or {}).get("causes") or []:
            if c.get("reason") == "ExitCode":
                rc = int(c.get("message", "-1"))
    print("\nEXIT=%d" % rc)
    print("STATUS=%s" % json.dumps(status))
    if failed:
        print("cri-stream: " + failed, file=sys.stderr)
        return 3
    return 0


if __name__ == "__main__":
    sys.exit(main())
