#!/usr/bin/env bash
# Issue 26, H1: `navette plan`, `maintain --list`, `portability` and a
# refused `run` send nothing of the user's to a host the clone picks. A
# loopback server logs every request (method, path, whether it carried an
# Authorization header, its body's length); a clone's recipe asks, with
# the user's env and 0600-file credentials, for a POST without a method, a
# GET with a body, GETs with each credential, and a plain GET. Under plan
# only the plain GET is sent (and every request is listed in the plan);
# the checking pass of a run sends none; an accepted run sends each once;
# before trust a run is refused and sends none.
set -eu -o pipefail
. "$(dirname "$0")/../lib.sh"

PORT=$(free_ports 1)
LOG=$T/requests.log
: >"$LOG"
python3 - "$PORT" "$LOG" <<'PY' &
import http.server, sys
port, log = int(sys.argv[1]), sys.argv[2]
class H(http.server.BaseHTTPRequestHandler):
    def handle_one(self):
        n = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(n) if n else b""
        with open(log, "a") as f:
            f.write("%s %s auth=%s body=%d\n" % (
                self.command, self.path,
                "yes" if self.headers.get("Authorization") else "no",
                len(body)))
        self.send_response(200)
        self.send_header("Content-Length", "2")
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(b"ok")
    do_GET = do_POST = do_PUT = do_HEAD = do_DELETE = handle_one
    def log_message(self, *a):
        pass
http.server.ThreadingHTTPServer(("127.0.0.1", port), H).serve_forever()
PY
SERVER=$!
trap 'st=$?; kill "$SERVER" 2>/dev/null; (exit "$st"); _cleanup' EXIT
wait_for 10 python3 -c "import socket; socket.create_connection(('127.0.0.1', $PORT), 1)" 2>/dev/null

URL=http://127.0.0.1:$PORT
# (a token's shape, made at run time: the tree holds none)
GITHUB_TOKEN=$(printf 'ghp%s' _0123456789abcdefghijklmnopqrstuvwxyzAB)
export GITHUB_TOKEN
SECRET_FILE=$T/home/.api-token
printf 'file-secret-value-0123456789\n' >"$SECRET_FILE"
chmod 600 "$SECRET_FILE"

R=$(NO_PROJECT_FILE=1 new_repo clone)
cat >"$R/navette.lua" <<EOF
return {
  name = "clone",
  credentials = {
    gh = { kind = "bearer", source = "env", env = { token = "GITHUB_TOKEN" },
           host = "127.0.0.1:$PORT" },
    api = { kind = "bearer", source = "file", path = "$SECRET_FILE",
            host = "127.0.0.1:$PORT" },
  },
}
EOF
cat >"$R/r.lua" <<EOF
local navette = require "navette"
local gh, api = navette.creds.get("gh"), navette.creds.get("api")
print("handle: " .. tostring(gh))
navette.http.request("$URL/post-without-method", { body = "x" })
navette.http.request("$URL/get-with-body", { method = "GET", body = "yy" })
navette.http.request("$URL/get-with-gh", { credential = gh })
navette.http.request("$URL/get-with-api", { method = "GET", credential = api })
navette.http.get("$URL/plain-get")
navette.task { name = "t", schedule = "daily 03:00", run = function()
  navette.http.request("$URL/task-post", { body = "z" })
  navette.http.get("$URL/task-get")
end }
navette.job { name = "j", command = { "true" } }
EOF
NO_TRUST=1 commit_all "$R" >/dev/null

log_lines() { grep -c . "$LOG" || true; }
sent() { grep -E "$1" "$LOG" || true; }

# A second project of the clone's: a profile whose store is a folder of
# the user's, and a data set naming the user's secret file.
V=$T/victim
mkdir -p "$V"
R2=$(NO_PROJECT_FILE=1 new_repo clone2)
cat >"$R2/navette.lua" <<EOF
return { name = "clone2", default_profile = "mine",
  datasets = { loot = "$SECRET_FILE" },
  profiles = { mine = { storage = "file://$V/", require_pushed = false } } }
EOF
cat >"$R2/r.lua" <<'EOF'
local navette = require "navette"
print("the recipe was evaluated")
navette.storage.put_string("planted.txt", "planted")
navette.storage.put("inputs/loot", { dataset = "loot" })
navette.job { name = "j", command = { "true" } }
EOF
NO_TRUST=1 commit_all "$R2" >/dev/null

# ---- before trust ----
nv_in "$R" plan r.lua
check_rc "plan of an untrusted clone succeeds" 0
check_eq "plan sent only the plain GET" "$(cat "$LOG")" \
	"GET /plain-get auth=no body=0"
check_match "plan lists the implicit POST" "$OUT" \
	"net POST: $URL/post-without-method"
check_match "plan lists the GET with a body (not sent)" "$OUT" \
	"net GET: $URL/get-with-body"
check_match "plan lists the GET with a credential (not sent)" "$OUT" \
	"net GET: $URL/get-with-gh"
check_match "plan lists the sent GET" "$OUT" "net GET \(sent\): $URL/plain-get"
check_match "plan says where gh would come from" "$OUT" \
	"creds would load: gh from env GITHUB_TOKEN for 127.0.0.1:$PORT"
check_no_match "no value in the plan" "$OUT$ERR" "ghp_0123|file-secret-value"

: >"$LOG"
nv_in "$R" run r.lua
check_rc "run of an untrusted clone is refused" 3
check_match "the refusal says to trust it" "$ERR" "navette trust"
check_eq "the refused run sent nothing" "$(log_lines)" 0

: >"$LOG"
nv_in "$R" maintain --list r.lua
check_eq "maintain --list sent nothing but plain GETs" \
	"$(sent 'auth=yes|body=[1-9]|^(POST|PUT|DELETE)')" ""

: >"$LOG"
nv_in "$R" portability r.lua
check_eq "portability sent nothing but plain GETs" \
	"$(sent 'auth=yes|body=[1-9]|^(POST|PUT|DELETE)')" ""

nv_in "$R2" plan r.lua
check_rc "plan of a clone binding a store and a data set" 0
check_match "the data set is not read before trust" "$OUT" \
	"storage put: .*inputs/loot <- dataset loot \(its paths are not read until the project is trusted\)"
nv_in "$R2" run r.lua
check_rc "a run on the clone's declared profile is refused" 3
check_match "the refusal names the profile and trust" "$ERR" \
	"profile mine: .*is not trusted on this machine"
check_eq "nothing was written into the user's folder" "$(ls "$V")" ""
check_no_match "the recipe was not even evaluated" "$OUT$ERR" \
	"the recipe was evaluated"

# ---- trusted ----
nv_in "$R" trust
check_rc "navette trust" 0
check_match "trust shows what it binds" "$OUT" \
	"credentials.gh.host = \"127.0.0.1:$PORT\""

: >"$LOG"
nv_in "$R" plan r.lua
check_eq "a trusted plan still sends only the plain GET" "$(cat "$LOG")" \
	"GET /plain-get auth=no body=0"
check_contains "a trusted plan hands the recipe a planned handle" "$OUT" \
	"handle: <secret:gh, not run>"

# a run the checking pass refuses (an input that does not exist) after
# the recipe's requests: none of them was sent
cat >>"$R/r.lua" <<EOF
navette.job { name = "k", command = { "true" },
              inputs = { x = "file://$T/no-such-input" } }
EOF
commit_all "$R" >/dev/null
: >"$LOG"
nv_in "$R" run r.lua
check_rc "a run refused by its checking pass" 3
check_eq "the refused run sent nothing" "$(log_lines)" 0

# an accepted run sends each request once, from the pass that submits
git -C "$R" checkout -q HEAD~1 -- r.lua
commit_all "$R" >/dev/null
: >"$LOG"
nv_in "$R" run r.lua
check_rc "the accepted run" 0
check_eq "the implicit POST was sent once, with its body" \
	"$(sent '^POST /post-without-method auth=no body=1$' | grep -c .)" 1
check_eq "the GET with gh was sent once, with gh" \
	"$(sent '^GET /get-with-gh auth=yes' | grep -c .)" 1
check_eq "each request once" "$(log_lines)" 5

# a changed binding is refused with its diff
sed "s/host = \"127.0.0.1:$PORT\" },\$/host = \"evil.example:443\" },/" \
	"$R/navette.lua" >"$T/navette.lua.new"
mv "$T/navette.lua.new" "$R/navette.lua"
NO_TRUST=1 commit_all "$R" >/dev/null
: >"$LOG"
nv_in "$R" run r.lua
check_rc "a changed binding is refused" 3
check_match "the refusal shows the diff" "$ERR" \
	"\+ credentials\.(api|gh)\.host = \"evil\.example:443\""
check_eq "and sent nothing" "$(log_lines)" 0

finish
