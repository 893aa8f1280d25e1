#!/usr/bin/env bash
# Issue 26, L3: a read under plan is bounded as the GET streams, whatever
# HEAD said, with a default bound. A hostile S3 service (fake_s3.py's
# liar-* buckets) says an object is 10 bytes on HEAD and sends 3 MB on
# GET: navette.storage.read(url, 1000) is refused at the bound instead of
# downloading it, and leaves no temporary file; without a bound, a plan
# reads at most 16 MiB.
set -eu -o pipefail
. "$(dirname "$0")/../lib.sh"

start_fake_s3
head -c 3000000 /dev/urandom >"$T/blob"
head -c 17000000 /dev/zero >"$T/huge"
# (the fake checks no signature: a plain PUT, one request, whatever size)
curl -sf -X PUT --data-binary @"$T/blob" "$EP/liar-b/big" >/dev/null
curl -sf -X PUT --data-binary @"$T/huge" "$EP/liar-b/huge" >/dev/null

R=$(NO_PROJECT_FILE=1 new_repo reads)
cat >"$R/navette.lua" <<LUA
return { name = "reads", default_profile = "s3",
  profiles = { s3 = { storage = "s3://liar-b/", require_pushed = false,
                      s3 = { endpoint = "$EP" } } } }
LUA
cat >"$R/bounded.lua" <<'LUA'
local navette = require "navette"
local text = navette.storage.read("s3://liar-b/big", 1000)
print("read " .. #text .. " bytes")
LUA
cat >"$R/unbounded.lua" <<'LUA'
local navette = require "navette"
local text = navette.storage.read("s3://liar-b/huge")
print("read " .. #text .. " bytes")
LUA
commit_all "$R" >/dev/null

tmp_files() { find "$NAVETTE_HOME" "${TMPDIR:-/tmp}" -maxdepth 2 -name '*navette*read*' 2>/dev/null | wc -l | tr -d ' '; }
before=$(tmp_files)
nv_in "$R" plan bounded.lua
check_rc "a plan's bounded read of a lying server is refused" 3
check_match "it stopped at the bound as the body streamed" "$ERR" "sent more than 1000 bytes"
check_no_match "nothing was read into the recipe" "$OUT" "^read "

nv_in "$R" plan unbounded.lua
check_rc "a plan's unbounded read stops at the plan's bound" 3
check_match "it names the plan's bound" "$ERR" "16777216"

nv_in "$R" run bounded.lua
check_rc "a run's bounded read of a lying server is refused too" 3
check_match "it stopped at the bound (run)" "$ERR" "sent more than 1000 bytes"
check_eq "no temporary file left" "$(tmp_files)" "$before"

finish
