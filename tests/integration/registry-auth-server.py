#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Small HTTP servers for tests/integration/test-registry-login.sh.

  registry-auth-server.py token PORTFILE KEY CERT ISSUER USER:PASSWORD
      A token server for the distribution registry's "token" auth: GET
      /token?service=S&scope=repository:NAME:ACTIONS with Basic USER:PASSWORD
      answers {"token": JWT} (RS256, signed with KEY, CERT in the x5c header,
      so that a registry whose rootcertbundle is CERT trusts it); without
      or with other credentials, 401.

  registry-auth-server.py redirect PORTFILE LOGFILE USER:PASSWORD
      A fake registry (Basic auth) whose blobs redirect to a second server
      on another port ("storage"), which writes to LOGFILE whether the
      redirected request carried an Authorization header. Blob
      sha256:00..01 redirects there, sha256:00..02 to a file:// URL;
      sha256:00..03 is "0123456789", whatever Range asks for.

Both listen on 127.0.0.1, on ports the kernel picks, written to PORTFILE
once they listen ("PORT" or "REGISTRY-PORT STORAGE-PORT"). Signing uses the
openssl command, so nothing but python3's standard library is needed.
"""
import base64
import http.server
import json
import os
import subprocess
import sys
import threading
import time
import urllib.parse


def b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def basic_ok(handler, userpass):
    h = handler.headers.get("Authorization", "")
    return h == "Basic " + base64.b64encode(userpass.encode()).decode()


class Quiet(http.server.BaseHTTPRequestHandler):
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


def serve_token(portfile, key, cert, issuer, userpass):
    der = subprocess.run(["openssl", "x509", "-in", cert, "-outform", "DER"],
                         check=True, capture_output=True).stdout
    x5c = base64.b64encode(der).decode()

    class Handler(Quiet):
        def do_GET(self):
            url = urllib.parse.urlparse(self.path)
            q = urllib.parse.parse_qs(url.query)
            if url.path != "/token":
                return self.answer(404)
            if not basic_ok(self, userpass):
                return self.answer(401, b'{"details": "bad credentials"}',
                                   [("WWW-Authenticate", 'Basic realm="token"')])
            access = []
            for scope in q.get("scope", []):
                parts = scope.split(":")
                if len(parts) == 3 and parts[0] == "repository":
                    access.append({"type": "repository", "name": parts[1],
                                   "actions": ["pull", "push"]})
            now = int(time.time())
            header = {"typ": "JWT", "alg": "RS256", "x5c": [x5c]}
            claims = {"iss": issuer, "sub": userpass.split(":")[0],
                      "aud": q.get("service", [""])[0], "exp": now + 600,
                      "nbf": now - 60, "iat": now, "jti": os.urandom(8).hex(),
                      "access": access}
            signing_input = (b64url(json.dumps(header).encode()) + "." +
                             b64url(json.dumps(claims).encode()))
            sig = subprocess.run(["openssl", "dgst", "-sha256", "-sign", key],
                                 input=signing_input.encode(), check=True,
                                 capture_output=True).stdout
            token = signing_input + "." + b64url(sig)
            body = json.dumps({"token": token, "expires_in": 600}).encode()
            self.answer(200, body, [("Content-Type", "application/json")])

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    with open(portfile + ".tmp", "w") as f:
        f.write("%d\n" % server.server_address[1])
    os.rename(portfile + ".tmp", portfile)
    server.serve_forever()


def serve_redirect(portfile, logfile, userpass):
    blob = b"hello from storage\n"

    class Storage(Quiet):
        def do_GET(self):
            with open(logfile, "a") as f:
                f.write("storage authorization=%s\n" %
                        ("yes" if "Authorization" in self.headers else "no"))
            self.answer(200, blob, [("Content-Type", "application/octet-stream")])

    storage = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Storage)
    storage_port = storage.server_address[1]

    class Registry(Quiet):
        def do_GET(self):
            if not basic_ok(self, userpass):
                return self.answer(401, b'{"errors": [{"code": "UNAUTHORIZED", "message": "authentication required"}]}',
                                   [("WWW-Authenticate", 'Basic realm="probe"'),
                                    ("Content-Type", "application/json")])
            if self.path == "/v2/":
                return self.answer(200, b"{}")
            if self.path.endswith("/blobs/sha256:" + "0" * 63 + "1"):
                return self.answer(307, b"", [("Location", "http://127.0.0.1:%d/storage/blob" % storage_port)])
            if self.path.endswith("/blobs/sha256:" + "0" * 63 + "2"):
                return self.answer(302, b"", [("Location", "file:///etc/passwd")])
            if self.path.endswith("/blobs/sha256:" + "0" * 63 + "3"):
                # whatever Range asked for: the whole blob
                return self.answer(200, b"0123456789")
            self.answer(404)

    registry = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Registry)
    threading.Thread(target=storage.serve_forever, daemon=True).start()
    with open(portfile + ".tmp", "w") as f:
        f.write("%d %d\n" % (registry.server_address[1], storage_port))
    os.rename(portfile + ".tmp", portfile)
    registry.serve_forever()


if __name__ == "__main__":
    if sys.argv[1] == "token" and len(sys.argv) == 7:
        serve_token(*sys.argv[2:])
    elif sys.argv[1] == "redirect" and len(sys.argv) == 5:
        serve_redirect(*sys.argv[2:])
    else:
        sys.exit(__doc__)
