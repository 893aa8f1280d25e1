#!/usr/bin/env python3
"""A fake registry for tests/unit/test_registry.c (standard library only):
it lies about digests, which a real registry never does, so the client's
refusals can be tested. Listens on 127.0.0.1, prints its port once ready.

Routes (repository names pick the lie):
  GET  /v2/                               200
  GET  /v2/wrong-header/manifests/t       a manifest whose Docker-Content-
                                          Digest is that of other bytes
  GET  /v2/wrong-bytes/manifests/sha256:D bytes that do not hash to D
  GET  /v2/wrong-bytes/blobs/sha256:D     idem for a blob
  PUT  /v2/rewrite/manifests/t            201 naming another digest
  GET  /v2/elsewhere/manifests/t          401 Bearer with a realm on
                                          "localhost" (another host than
                                          127.0.0.1), then 200 with a token
  GET  /token                             a token (logs whether it came
                                          with an Authorization header)
  GET  /_log                              "METHOD PATH auth=<scheme or ->"
"""
import hashlib
import http.server
import json
import sys
import threading

LOG = []
LOCK = threading.Lock()
MANIFEST = json.dumps({
    "schemaVersion": 2,
    "mediaType": "application/vnd.oci.image.manifest.v1+json",
    "config": {"mediaType": "application/vnd.oci.image.config.v1+json",
               "digest": "sha256:" + "a" * 64, "size": 2},
    "layers": []}).encode()
OTHER = b'{"something": "else"}'
MT = "application/vnd.oci.image.manifest.v1+json"


def digest(b):
    return "sha256:" + hashlib.sha256(b).hexdigest()


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):
        pass

    def record(self):
        auth = self.headers.get("Authorization", "")
        with LOCK:
            LOG.append("%s %s auth=%s" % (self.command, self.path,
                                          auth.split(" ")[0] or "-"))

    def send(self, code, body=b"", headers=None):
        self.send_response(code)
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def do_HEAD(self):
        self.do_GET()

    def do_GET(self):
        p = self.path
        if p == "/_log":
            with LOCK:
                body = "".join(l + "\n" for l in LOG).encode()
            return self.send(200, body)
        self.record()
        if p == "/v2/":
            return self.send(200, b"{}")
        if p == "/v2/wrong-header/manifests/t":
            return self.send(200, MANIFEST, {
                "Content-Type": MT, "Docker-Content-Digest": digest(OTHER)})
        if p.startswith("/v2/wrong-bytes/manifests/sha256:"):
            return self.send(200, MANIFEST, {"Content-Type": MT})
        if p.startswith("/v2/wrong-bytes/blobs/sha256:"):
            return self.send(200, OTHER)
        if p.startswith("/token"):
            return self.send(200, json.dumps(
                {"token": "fake-token-for-tests", "expires_in": 300}).encode(),
                {"Content-Type": "application/json"})
        if p == "/v2/elsewhere/manifests/t":
            if self.headers.get("Authorization", "").startswith("Bearer "):
                return self.send(200, MANIFEST, {
                    "Content-Type": MT,
                    "Docker-Content-Digest": digest(MANIFEST)})
            port = self.server.server_address[1]
            return self.send(401, b'{"errors":[{"code":"UNAUTHORIZED",'
                             b'"message":"authentication required"}]}', {
                "WWW-Authenticate":
                    'Bearer realm="http://localhost:%d/token",'
                    'service="fake",scope="repository:elsewhere:pull"' % port})
        return self.send(404, b'{"errors":[{"code":"NAME_UNKNOWN",'
                         b'"message":"repository name not known"}]}')

    def do_PUT(self):
        self.record()
        n = int(self.headers.get("Content-Length", "0"))
        body = self.rfile.read(n)
        if self.path == "/v2/rewrite/manifests/t":
            return self.send(201, b"", {
                "Docker-Content-Digest": digest(body + b" ")})
        return self.send(404, b"")


def main():
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    print(srv.server_address[1], flush=True)
    srv.serve_forever()


if __name__ == "__main__":
    sys.exit(main())
