#!/usr/bin/env python3
"""Token service for the token-auth registry of tests/stack (standard
library only; signatures by the openssl command).

It implements the token endpoint of Docker's registry token authentication:
GET /token?service=S&scope=repository:NAME:ACTIONS[&scope=...] with
optional Basic credentials answers {"token", "access_token", "expires_in",
"issued_at"}, a JWT signed RS256 whose header carries the key id in the
libtrust form registry 2.8 expects (base32 of the first 30 bytes of the
sha256 of the DER SubjectPublicKeyInfo, in 12 groups of 4 joined by ':').
Claims: iss, sub, aud (the service, as a string), exp, nbf, iat, jti and
access [{type, name, actions}], where the actions granted are those asked
for that the user holds (users file: {"user": {"password": ..., "actions":
[...]}}, and "" for anonymous requests). Wrong password: 401.

A team's ACL file (--acl FILE, optional; written by `navette team apply`,
read again whenever its mtime changes): {"users": {"alice": {"password":
"$2y$..."}}, "acl": [{"account": "alice", "name": "vision/*", "actions":
["pull"]}]}. Its users log in with the bcrypt hash (crypt(3), libxcrypt);
an entry's name is a repository or a prefix ending with '*'; a user gets
the union of the actions of the entries that match. A user missing from
the file (a revoked member) gets 401 like a wrong password.

Test controls (loopback only, never used by the registry):
  GET  /_log                       one line per token request:
                                   "user scope1 scope2... -> granted"
  POST /_config?expires_in=N       lifetime of the next tokens (seconds)
  POST /_config?stingy=1           the first token asked with push for a
                                   repository gets pull only (the registry
                                   then answers insufficient_scope)
  POST /_config?reset=1            log emptied, defaults back
Prints its port on stdout once listening.
"""
import argparse
import base64
import warnings

with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    import crypt
import hashlib
import http.server
import json
import os
import subprocess
import sys
import threading
import time
import urllib.parse

LOCK = threading.Lock()
STATE = {"log": [], "expires_in": 300, "stingy": False, "stingy_done": set()}


def b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def libtrust_kid(key_path):
    der = subprocess.run(["openssl", "pkey", "-in", key_path, "-pubout",
                          "-outform", "DER"], check=True,
                         capture_output=True).stdout
    b32 = base64.b32encode(hashlib.sha256(der).digest()[:30]).decode()
    b32 = b32.rstrip("=")
    return ":".join(b32[i:i + 4] for i in range(0, 48, 4))


def sign_rs256(key_path, data):
    return subprocess.run(["openssl", "dgst", "-sha256", "-sign", key_path],
                          input=data, check=True,
                          capture_output=True).stdout


class Issuer(http.server.BaseHTTPRequestHandler):
    server_version = "navette-test-issuer"

    def log_message(self, fmt, *args):  # quiet: the log is /_log
        pass

    def answer(self, code, obj, extra=None):
        body = json.dumps(obj).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        for k, v in (extra or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(body)

    def user(self):
        auth = self.headers.get("Authorization", "")
        if not auth:
            return "", None
        if not auth.startswith("Basic "):
            return None, "only Basic credentials are understood"
        try:
            user, _, password = base64.b64decode(
                auth[6:]).decode().partition(":")
        except Exception:
            return None, "malformed Basic credentials"
        team = self.server.team_acl()
        if user in team.get("users", {}):
            stored = team["users"][user].get("password", "")
            if stored.startswith("$2") and crypt.crypt(password,
                                                       stored) == stored:
                return user, None
            return None, "invalid username or password"
        entry = self.server.users.get(user)
        if not entry or entry.get("password") != password:
            return None, "invalid username or password"
        return user, None

    def team_actions(self, user, name):
        """The actions the team's ACL gives user on repository name."""
        out = set()
        for e in self.server.team_acl().get("acl", []):
            pat = e.get("name", "")
            if e.get("account") != user:
                continue
            if pat == name or (pat.endswith("*") and
                               name.startswith(pat[:-1])):
                out.update(e.get("actions", []))
        return out

    def do_POST(self):
        url = urllib.parse.urlparse(self.path)
        if url.path != "/_config":
            return self.answer(404, {"details": "not found"})
        q = urllib.parse.parse_qs(url.query)
        with LOCK:
            if "reset" in q:
                STATE.update(log=[], expires_in=300, stingy=False,
                             stingy_done=set())
            if "expires_in" in q:
                STATE["expires_in"] = int(q["expires_in"][0])
            if "stingy" in q:
                STATE["stingy"] = q["stingy"][0] == "1"
                STATE["stingy_done"] = set()
        return self.answer(200, {"ok": True})

    def do_GET(self):
        url = urllib.parse.urlparse(self.path)
        if url.path == "/_log":
            with LOCK:
                body = "".join(line + "\n" for line in STATE["log"])
            data = body.encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            return
        if url.path != "/token":
            return self.answer(404, {"details": "not found"})
        q = urllib.parse.parse_qs(url.query)
        if q.get("service", [""])[0] != self.server.service:
            return self.answer(400, {"details": "unknown service"})
        user, problem = self.user()
        if user is None:
            with LOCK:
                STATE["log"].append("? refused")
            return self.answer(401, {"details": problem}, {
                "WWW-Authenticate": 'Basic realm="navette-test-issuer"'})
        team_user = user in self.server.team_acl().get("users", {})
        holds = set(self.server.users.get(user, {}).get("actions", []))
        access, asked, granted = [], [], []
        for scope in q.get("scope", []):
            parts = scope.split(":")
            if len(parts) != 3 or parts[0] != "repository":
                continue
            _, name, actions = parts
            want = [a for a in actions.split(",") if a]
            allowed = self.team_actions(user, name) if team_user else holds
            give = [a for a in want if a in allowed]
            with LOCK:
                if (STATE["stingy"] and "push" in give
                        and name not in STATE["stingy_done"]):
                    STATE["stingy_done"].add(name)
                    give = [a for a in give if a != "push"]
            asked.append(scope)
            granted.append("repository:%s:%s" % (name, ",".join(give)))
            access.append({"type": "repository", "name": name,
                           "actions": give})
        now = int(time.time())
        with LOCK:
            lifetime = STATE["expires_in"]
        claims = {"iss": self.server.issuer, "sub": user,
                  "aud": self.server.service, "exp": now + lifetime,
                  "nbf": now - 5, "iat": now,
                  "jti": base64.b16encode(os.urandom(8)).decode(),
                  "access": access}
        header = {"typ": "JWT", "alg": "RS256", "kid": self.server.kid}
        signing_input = (b64url(json.dumps(header).encode()) + "." +
                         b64url(json.dumps(claims).encode())).encode()
        token = signing_input.decode() + "." + b64url(
            sign_rs256(self.server.key, signing_input))
        with LOCK:
            STATE["log"].append("%s %s -> %s" % (user or "-",
                                                 " ".join(asked) or "-",
                                                 " ".join(granted) or "-"))
        return self.answer(200, {
            "token": token, "access_token": token, "expires_in": lifetime,
            "issued_at": time.strftime("%Y-%m-%dT%H:%M:%SZ",
                                       time.gmtime(now))})


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--key", required=True)
    ap.add_argument("--users", required=True)
    ap.add_argument("--issuer", required=True)
    ap.add_argument("--service", required=True)
    ap.add_argument("--acl", default=None)
    a = ap.parse_args()
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", a.port), Issuer)
    srv.key, srv.issuer, srv.service = a.key, a.issuer, a.service
    cache = {"mtime": None, "acl": {}}

    def team_acl():
        """The ACL file as of its last change ({} without one)."""
        if not a.acl:
            return {}
        try:
            mtime = os.stat(a.acl).st_mtime_ns
        except OSError:
            return {}
        with LOCK:
            if cache["mtime"] != mtime:
                try:
                    with open(a.acl) as f:
                        cache["acl"] = json.load(f)
                except (OSError, ValueError):
                    cache["acl"] = {}
                cache["mtime"] = mtime
            return cache["acl"]
    srv.team_acl = team_acl
    srv.kid = libtrust_kid(a.key)
    with open(a.users) as f:
        srv.users = json.load(f)
    print(srv.server_address[1], flush=True)
    srv.serve_forever()


if __name__ == "__main__":
    sys.exit(main())
