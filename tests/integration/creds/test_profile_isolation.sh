#!/usr/bin/env bash
# Profiles share nothing implicitly (issue 16), through the CLI: a recipe
# run in profile dev that names prod's bucket (a job's input, a read, a
# head), prod's registry or prod's cluster endpoint, and a recipe run in
# prod that loads a credential only dev has (its own, or a project-level
# one only dev names), are refused with exit 3 naming both profiles, by
# `navette plan` and `navette run` alike, before anything is sent: every
# endpoint here is a closed port, so a request sent first would end in a
# connection error (exit 4), not in the refusal. The same recipes in
# their own profile get past the check (and then fail to connect).
set -eu -o pipefail
. "$(dirname "$0")/../lib.sh"
set +e # each check reports its own failure; finish sets the status

R=$(new_repo iso)
CLOSED=http://127.0.0.1:9
cat >"$R/navette.lua" <<EOF
return {
  name = "iso",
  credentials = {
    ["team-registry"] = { kind = "basic", source = "env", host = "127.0.0.1:9",
                          env = { user = "REG_USER", password = "REG_PASSWORD" } },
  },
  profiles = {
    dev = {
      storage = "s3://iso-dev/",
      s3 = { endpoint = "$CLOSED" },
      credentials = { "team-registry",
                      ["dev-key"] = { kind = "hs256", source = "env",
                                      env = { key = "DEV_KEY" } } },
      require_pushed = false,
    },
    stage = {
      storage = "s3://iso-dev/stage/",
      s3 = { endpoint = "$CLOSED" },
      require_pushed = false,
    },
    prod = {
      storage = "s3://iso-prod/",
      s3 = { endpoint = "$CLOSED" },
      images = { app = "127.0.0.1:19/app:v1" },
      endpoints = { ["https://127.0.0.1:29"] = { pin = "sha256//x" } },
      require_pushed = false,
    },
  },
  default_profile = "dev",
}
EOF
put_file "$R" recipes/input.lua <<'EOF'
local navette = require "navette"
navette.job { name = "train", command = { "true" },
              inputs = { data = "s3://iso-prod/datasets/train.csv" } }
EOF
put_file "$R" recipes/read.lua <<'EOF'
local navette = require "navette"
navette.storage.read("s3://iso-prod/models/model.bin")
EOF
put_file "$R" recipes/head.lua <<'EOF'
local navette = require "navette"
navette.storage.head("s3://iso-dev/outputs/x")
EOF
put_file "$R" recipes/registry.lua <<'EOF'
local navette = require "navette"
navette.image.exists("127.0.0.1:19/app:v1")
EOF
put_file "$R" recipes/endpoint.lua <<'EOF'
local navette = require "navette"
navette.http.get("https://127.0.0.1:29/api")
EOF
put_file "$R" recipes/devkey.lua <<'EOF'
local navette = require "navette"
navette.creds.get("dev-key")
EOF
put_file "$R" recipes/sharedkey.lua <<'EOF'
local navette = require "navette"
navette.creds.get("team-registry")
EOF
put_file "$R" recipes/delete.lua <<'EOF'
local navette = require "navette"
navette.storage.delete("s3://iso-dev/stage/model.bin")
EOF
put_file "$R" recipes/build.lua <<'EOF'
local navette = require "navette"
navette.image.build { to = "127.0.0.1:19/app:dev" }
EOF
put_file "$R" recipes/elsewhere.lua <<'EOF'
local navette = require "navette"
navette.image.check_credential { registry = "127.0.0.1:39",
                                 credential = navette.creds.get("team-registry") }
EOF
commit_all "$R" >/dev/null
export DEV_KEY=0123456789abcdef0123456789abcdef REG_USER=u REG_PASSWORD=p
export AWS_ACCESS_KEY_ID=AKIAEXAMPLE AWS_SECRET_ACCESS_KEY=examplesecretexamplesecret

for cmd in plan run; do
	nv_in "$R" "$cmd" recipes/input.lua --profile dev
	check_rc "$cmd: dev's job with an input in prod's bucket: refused (exit 3)" 3
	check_match "... naming both profiles" "$ERR" \
		"input 'data': s3://iso-prod/datasets/train.csv is in the storage of profile 'prod', not of profile 'dev' \(s3://iso-dev/\)"
	check_match "... and what to do" "$ERR" "check: run the recipe with --profile prod"

	nv_in "$R" "$cmd" recipes/read.lua --profile dev
	check_rc "$cmd: dev reading prod's object: refused (exit 3)" 3
	check_match "... naming both profiles" "$ERR" "profile 'prod', not of profile 'dev'"

	nv_in "$R" "$cmd" recipes/head.lua --profile prod
	check_rc "$cmd: prod looking at dev's bucket: refused (exit 3)" 3
	check_match "... naming both profiles" "$ERR" "in the storage of profile 'dev', not of profile 'prod'"

	nv_in "$R" "$cmd" recipes/registry.lua --profile dev
	check_rc "$cmd: dev reaching prod's registry: refused (exit 3)" 3
	check_match "... naming both profiles" "$ERR" "registry 127.0.0.1:19 belongs to profile 'prod'.*not to profile 'dev'"

	nv_in "$R" "$cmd" recipes/endpoint.lua --profile dev
	check_rc "$cmd: dev calling prod's endpoint: refused (exit 3)" 3
	check_match "... naming both profiles" "$ERR" "https://127.0.0.1:29 is an endpoint of profile 'prod', not of profile 'dev'"

	nv_in "$R" "$cmd" recipes/devkey.lua --profile prod
	check_rc "$cmd: prod loading dev's own credential: refused (exit 3)" 3
	check_match "... naming both profiles" "$ERR" "credential 'dev-key' belongs to profile 'dev', not to profile 'prod'"

	nv_in "$R" "$cmd" recipes/sharedkey.lua --profile prod
	check_rc "$cmd: prod loading a project credential only dev names: refused (exit 3)" 3
	check_match "... naming profile prod and the way to grant it" "$ERR" \
		"credential 'team-registry' belongs to profile 'dev', not to profile 'prod'"
done

# the review's variants: a nested root in dev's own bucket, a build that
# would push itself, a credential handed to another registry
for cmd in plan run; do
	nv_in "$R" "$cmd" recipes/delete.lua --profile dev
	check_rc "$cmd: dev deleting under stage's prefix of its own bucket: refused (exit 3)" 3
	check_match "... naming stage" "$ERR" "in the storage of profile 'stage', not of profile 'dev'"
	nv_in "$R" "$cmd" recipes/build.lua --profile dev
	check_rc "$cmd: dev building into prod's registry: refused before the build (exit 3)" 3
	check_match "... naming prod" "$ERR" "navette.image.build: registry 127.0.0.1:19 belongs to profile 'prod'"
done
nv_in "$R" plan recipes/elsewhere.lua --profile dev
check_rc "a credential bound to one registry, handed to another: refused (exit 3)" 3
check_match "... saying where it is bound" "$ERR" "credential 'team-registry' is bound to 127.0.0.1:9, not to registry 127.0.0.1:39"

# in their own profile the same recipes pass the check
nv_in "$R" plan recipes/devkey.lua --profile dev
check_rc "dev loads its own credential" 0
nv_in "$R" plan recipes/sharedkey.lua --profile dev
check_rc "dev loads the project credential it names" 0
nv_in "$R" plan recipes/head.lua --profile dev
check_no_match "dev's head of its own bucket is not refused as another profile's" \
	"$ERR" "share nothing"
nv_in "$R" plan recipes/read.lua --profile prod
check_no_match "prod's read of its own object is not refused as another profile's" \
	"$ERR" "share nothing"

# a redirect into prod's endpoint is refused before it is followed: a
# server of no profile answers 302 to https://127.0.0.1:29 (prod's, a
# closed port: a followed redirect ends in exit 4, not 3)
RPORT=$(free_ports 1)
python3 - "$RPORT" >"$T/redirector.log" 2>&1 <<'PY' &
import http.server, sys
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(302)
        self.send_header("Location", "https://127.0.0.1:29/api")
        self.send_header("Content-Length", "0")
        self.end_headers()
    def log_message(self, *a):
        sys.stderr.write("GET %s\n" % self.path)
http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
PY
REDIRECTOR=$!
wait_for 10 curl -s -o /dev/null "http://127.0.0.1:$RPORT/" ||
	fail "the redirecting server listens on $RPORT"
put_file "$R" recipes/redirect.lua <<EOF
local navette = require "navette"
navette.http.get("http://127.0.0.1:$RPORT/start", { max_redirects = 3 })
EOF
commit_all "$R" >/dev/null
nv_in "$R" run recipes/redirect.lua --profile dev
check_rc "dev following a redirect into prod's endpoint: refused (exit 3)" 3
check_match "... naming the redirect and both profiles" "$ERR" \
	"navette.http \(a redirect from http://127.0.0.1:$RPORT\): https://127.0.0.1:29 is an endpoint of profile 'prod', not of profile 'dev'"
check_match "the first request was sent" "$(cat "$T/redirector.log")" "GET /start"
nv_in "$R" run recipes/redirect.lua --profile prod
check_rc "prod follows the same redirect to its own endpoint (closed: exit 4)" 4
kill "$REDIRECTOR" 2>/dev/null
wait "$REDIRECTOR" 2>/dev/null

# no job was submitted, nothing recorded for the refused runs
check_eq "no job was recorded" "$("$NAVETTE" jobs --json 2>/dev/null | json 'len(d)' 2>/dev/null || echo 0)" 0
finish
