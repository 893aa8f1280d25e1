#!/usr/bin/env python3
"""A small in-memory S3 look-alike for the CLI tests that need a service
but not radosgw: path-style PUT, HEAD, GET and ListObjectsV2 of any bucket,
plus buckets that answer as a failing service would:

  denied-*  403 SignatureDoesNotMatch (a service refusing the request)
  broken-*  500 InternalError (a service failing)
  slow-*    like any other, with the body sent in small pieces slowly
            (so a progress bar has time to draw)
  liar-*    like any other, but a HEAD says every object is 10 bytes (a
            hostile server: a GET then sends the whole object)

Signatures are not checked. Usage: fake_s3.py PORT_FILE; it listens on
127.0.0.1 on a free port and writes the port to PORT_FILE."""
import hashlib
import http.server
import sys
import time
import urllib.parse

OBJECTS = {}  # (bucket, key) -> (body, meta headers)


def error_xml(code, message):
    return ("<?xml version=\"1.0\" encoding=\"UTF-8\"?><Error><Code>%s</Code>"
            "<Message>%s</Message></Error>" % (code, message)).encode()


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):
        pass

    def reply(self, status, body=b"", headers=None, slow=False):
        self.send_response(status)
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command == "HEAD" or not body:
            return
        if not slow:
            self.wfile.write(body)
            return
        step = max(1, len(body) // 20)
        for i in range(0, len(body), step):
            self.wfile.write(body[i:i + step])
            self.wfile.flush()
            time.sleep(0.1)

    def parts(self):
        url = urllib.parse.urlsplit(self.path)
        path = urllib.parse.unquote(url.path)
        bucket, _, key = path.lstrip("/").partition("/")
        return bucket, key, urllib.parse.parse_qs(url.query)

    def refused(self, bucket):
        if bucket.startswith("denied-"):
            self.reply(403, error_xml("SignatureDoesNotMatch", "The request "
                       "signature we calculated does not match"),
                       {"Content-Type": "application/xml"})
            return True
        if bucket.startswith("broken-"):
            self.reply(500, error_xml("InternalError", "We encountered an "
                       "internal error"), {"Content-Type": "application/xml"})
            return True
        return False

    def read_body(self):
        n = int(self.headers.get("Content-Length") or 0)
        data = b""
        while len(data) < n:
            chunk = self.rfile.read(min(65536, n - len(data)))
            if not chunk:
                break
            data += chunk
            if self.slow:
                time.sleep(0.01)
        return data

    def do_PUT(self):
        bucket, key, _ = self.parts()
        self.slow = bucket.startswith("slow-")
        body = self.read_body()
        if self.refused(bucket):
            return
        if key:
            meta = {k: v for k, v in self.headers.items()
                    if k.lower().startswith("x-amz-meta-")}
            OBJECTS[(bucket, key)] = (body, meta)
        self.reply(200, b"", {"ETag": '"%s"' % hashlib.md5(body).hexdigest()})

    def object_headers(self, body, meta):
        h = {"ETag": '"%s"' % hashlib.md5(body).hexdigest(),
             "Last-Modified": "Thu, 03 Dec 2026 12:00:00 GMT",
             "Content-Type": "application/octet-stream"}
        h.update(meta)
        return h

    def do_HEAD(self):
        self.do_GET()

    def do_GET(self):
        bucket, key, query = self.parts()
        if self.refused(bucket):
            return
        if not key:
            prefix = query.get("prefix", [""])[0]
            items = sorted((k, v) for (b, k), v in OBJECTS.items()
                           if b == bucket and k.startswith(prefix))
            xml = ["<?xml version=\"1.0\" encoding=\"UTF-8\"?>"
                   "<ListBucketResult><Name>%s</Name><Prefix>%s</Prefix>"
                   "<KeyCount>%d</KeyCount><IsTruncated>false</IsTruncated>"
                   % (bucket, prefix, len(items))]
            for k, (body, _) in items:
                xml.append("<Contents><Key>%s</Key><LastModified>"
                           "2026-12-03T12:00:00.000Z</LastModified><ETag>"
                           "&quot;%s&quot;</ETag><Size>%d</Size>"
                           "<StorageClass>STANDARD</StorageClass></Contents>"
                           % (k, hashlib.md5(body).hexdigest(), len(body)))
            xml.append("</ListBucketResult>")
            self.reply(200, "".join(xml).encode(),
                       {"Content-Type": "application/xml"})
            return
        found = OBJECTS.get((bucket, key))
        if not found:
            self.reply(404, error_xml("NoSuchKey", "The specified key does "
                       "not exist."), {"Content-Type": "application/xml"})
            return
        body, meta = found
        if self.command == "HEAD" and bucket.startswith("liar-"):
            self.reply(200, body[:10], self.object_headers(body[:10], meta))
            return
        self.reply(200, body, self.object_headers(body, meta),
                   slow=bucket.startswith("slow-"))


def main():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    with open(sys.argv[1] + ".tmp", "w") as f:
        f.write(str(server.server_address[1]))
    import os
    os.rename(sys.argv[1] + ".tmp", sys.argv[1])
    server.serve_forever()


if __name__ == "__main__":
    main()
