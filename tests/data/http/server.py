#!/usr/bin/env python3
"""Test server for tests/unit/test_http.c (standard library only).

Listens on 127.0.0.1, on a port the OS chooses, and prints that port on
stdout (one line) once ready. With --tls CERT KEY it speaks HTTPS; with
--client-ca CA too, it asks for a client certificate (optional) and checks
it against CA.
Every request but GET /_log and /_connections is logged; /_log returns
the log, one line per request: "METHOD PATH auth=<Authorization or ->
cookie=<Cookie or ->"; /_connections returns how many connections were
accepted so far (its own included).

Routes:
  /hello              200 with ETag, x-amz-request-id, Docker-Content-Digest,
                      Retry-After, Content-Type
  /echo-auth          the Authorization header received, or "none"
  /echo               "METHOD|Content-Type|body" of the request
  /echo-header?name=N the value of request header N, or "none"
  /big?n=N            N bytes, with Content-Length
  /big-nolen?n=N      N bytes, no Content-Length (connection closed)
  /many-headers?n=N   N extra headers
  /status?code=C      an empty answer with that status
  /redirect?to=U&code=C   a redirect (302 by default) to U
  /loop               302 to itself
  /slow?ms=M          answers after M milliseconds
  /retry-after?key=K&n=N&code=C&after=S
                      C (429) with Retry-After: S (0) for the first N
                      requests of key K, then 200 "done after N"
  /lines?n=N&ms=M     N lines '{"n":I}', one every M milliseconds, no
                      Content-Length (connection closed)
  /whoami             the common name of the client certificate, or
                      "anonymous"
"""
import argparse
import http.server
import ssl
import sys
import threading
import time
import urllib.parse

LOG = []
RETRIES = {}
LOCK = threading.Lock()
CONNECTIONS = 0


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):
        pass

    def setup(self):
        global CONNECTIONS
        with LOCK:
            CONNECTIONS += 1
        super().setup()

    def reply(self, code, body=b"", headers=(), length=True):
        self.send_response(code)
        for name, value in headers:
            self.send_header(name, value)
        if length:
            self.send_header("Content-Length", str(len(body)))
        else:
            self.send_header("Connection", "close")
            self.close_connection = True
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def read_body(self):
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            data = b""
            while True:
                size = int(self.rfile.readline().strip(), 16)
                if size == 0:
                    self.rfile.readline()
                    return data
                data += self.rfile.read(size)
                self.rfile.readline()
        n = int(self.headers.get("Content-Length", "0") or "0")
        return self.rfile.read(n) if n else b""

    def handle_any(self):
        url = urllib.parse.urlsplit(self.path)
        query = dict(urllib.parse.parse_qsl(url.query))
        body = self.read_body()
        if url.path == "/_log":
            with LOCK:
                text = "".join(line + "\n" for line in LOG)
            return self.reply(200, text.encode())
        if url.path == "/_connections":
            with LOCK:
                text = "%d" % CONNECTIONS
            return self.reply(200, text.encode())
        with LOCK:
            LOG.append("%s %s auth=%s cookie=%s" % (
                self.command, self.path,
                self.headers.get("Authorization", "-"),
                self.headers.get("Cookie", "-")))
        if url.path == "/whoami":
            peer = None
            try:
                peer = self.connection.getpeercert()
            except (AttributeError, ValueError):
                pass
            name = "anonymous"
            for rdn in (peer or {}).get("subject", ()):
                for key, value in rdn:
                    if key == "commonName":
                        name = value
            return self.reply(200, name.encode())
        if url.path == "/hello":
            return self.reply(200, b"hello from " + ARGS.name.encode(), [
                ("Content-Type", "text/plain; charset=utf-8"),
                ("ETag", '"abc123"'),
                ("x-amz-request-id", "REQ42"),
                ("Docker-Content-Digest", "sha256:" + "0" * 64),
                ("Retry-After", "7")])
        if url.path == "/echo-auth":
            auth = self.headers.get("Authorization", "none")
            return self.reply(200, auth.encode())
        if url.path == "/echo-header":
            value = self.headers.get(query.get("name", ""), "none")
            return self.reply(200, value.encode())
        if url.path == "/echo":
            text = "%s|%s|" % (self.command,
                               self.headers.get("Content-Type", "-"))
            return self.reply(200, text.encode() + body)
        if url.path in ("/big", "/big-nolen"):
            data = b"x" * int(query.get("n", "0"))
            return self.reply(200, data, length=url.path == "/big")
        if url.path == "/retry-after":
            key, n = query.get("key", ""), int(query.get("n", "1"))
            with LOCK:
                RETRIES[key] = RETRIES.get(key, 0) + 1
                seen = RETRIES[key]
            if seen <= n:
                return self.reply(int(query.get("code", "429")), b"wait",
                                  [("Retry-After", query.get("after", "0"))])
            return self.reply(200, b"done after %d" % n)
        if url.path == "/lines":
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Connection", "close")
            self.close_connection = True
            self.end_headers()
            for i in range(int(query.get("n", "1"))):
                self.wfile.write(b'{"n":%d}\n' % i)
                self.wfile.flush()
                time.sleep(int(query.get("ms", "0")) / 1000.0)
            return None
        if url.path == "/many-headers":
            n = int(query.get("n", "0"))
            return self.reply(200, b"ok",
                              [("X-H%d" % i, "v") for i in range(n)])
        if url.path == "/status":
            return self.reply(int(query.get("code", "200")))
        if url.path == "/redirect":
            return self.reply(int(query.get("code", "302")), b"moved",
                              [("Location", query["to"])])
        if url.path == "/loop":
            return self.reply(302, b"", [("Location", "/loop")])
        if url.path == "/slow":
            time.sleep(int(query.get("ms", "1000")) / 1000.0)
            return self.reply(200, b"slow")
        return self.reply(404, b"no such route")

    do_GET = do_POST = do_PUT = do_DELETE = do_HEAD = do_PATCH = handle_any


class Server(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address):
        pass  # refused handshakes and dropped clients are expected


def main():
    global ARGS
    parser = argparse.ArgumentParser()
    parser.add_argument("--tls", nargs=2, metavar=("CERT", "KEY"))
    parser.add_argument("--client-ca")
    parser.add_argument("--name", default="server")
    ARGS = parser.parse_args()
    httpd = Server(("127.0.0.1", 0), Handler)
    if ARGS.tls:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(ARGS.tls[0], ARGS.tls[1])
        if ARGS.client_ca:
            ctx.load_verify_locations(ARGS.client_ca)
            ctx.verify_mode = ssl.CERT_OPTIONAL
        httpd.socket = ctx.wrap_socket(httpd.socket, server_side=True)
    print(httpd.server_address[1], flush=True)
    sys.stdout.close()
    httpd.serve_forever()


if __name__ == "__main__":
    main()
