# Team-shared recipe libraries (issue 13): navette.use pinned by
# navette.lock, with libraries made here (file:// URLs and plain paths).
# A moved tag is refused naming both commits; with the remote gone the
# cache serves the locked commit; a branch is refused on a pinned
# profile; a library holding a secret is refused; `navette lock --check`
# passes, then fails on a library missing from the lock or a lock naming
# another commit; the run record lists the library; a library gets the
# same refusals as a recipe when it reaches for navette's internals, io,
# or the public API's functions; plan uses no network.
. "$(dirname "$0")/lib.sh"

jobs_count() {
	"$NAVETTE" jobs --json 2>/dev/null | json 'len(d)'
}

# ---- a library and a project that uses it -----------------------------------
L=$(NO_PROJECT_FILE=1 new_repo lib) || exit 1
put_file "$L" init.lua <<'EOF'
local navette = require "navette"
local helpers = require "helpers"
local M = { greeting = helpers.greeting }
function M.train(name)
  return navette.job { name = name, command = { "true" } }
end
return M
EOF
put_file "$L" helpers.lua <<'EOF'
return { greeting = "hello from the library" }
EOF
first=$(commit_all "$L") || exit 1
git -C "$L" tag v1 || exit 1

P=$(new_repo proj) || exit 1
put_file "$P" train.lua <<EOF
local navette = require "navette"
local lib = navette.use { git = "file://$L", ref = "v1" }
print(lib.greeting)
lib.train("t1")
EOF
commit_all "$P" >/dev/null || exit 1

nv_in "$P" plan train.lua
check_rc "plan, library never fetched: refused" 3
check_contains "plan, never fetched: says to run navette lock" "$ERR" \
	"navette lock"
check_absent "plan fetched nothing" "$NAVETTE_HOME/libraries"
nv_in "$P" run train.lua
check_rc "run, library not in navette.lock: refused" 3
check_contains "run, not locked: names the library" "$ERR" \
	"library file://$L (ref v1) is not in navette.lock"
check_contains "run, not locked: says what to run" "$ERR" \
	"navette lock train.lua"
check_eq "run, not locked: nothing submitted" "$(jobs_count)" 0

nv_in "$P" lock train.lua
check_rc "navette lock: ok" 0
check_contains "navette lock: prints the library" "$OUT" \
	"file://$L  v1  $first  (added)"
check_eq "navette.lock: the library's section" \
	"$(grep -A2 '^\[library' "$P/navette.lock")" \
	"$(printf '[library "file://%s"]\nref = v1\ncommit = %s' "$L" "$first")"
nv_in "$P" lock --check train.lua
check_rc "navette lock --check: ok" 0
check_contains "lock --check: each library ok" "$OUT" "$first  (ok)"

nv_in "$P" plan train.lua
check_rc "plan, navette.lock not committed: refused" 3
check_contains "plan, lock not committed: says so" "$ERR" \
	"navette.lock is not in commit HEAD"
commit_all "$P" >/dev/null || exit 1
nv_in "$P" plan train.lua
check_rc "plan: ok from the cache" 0
check_contains "plan: lists the library" "$OUT" \
	"git library: file://$L v1 -> $first"

nv_in "$P" run train.lua --wait
check_rc "run: the library's job succeeds" 0
check_contains "run: the library's module ran (its own require)" "$OUT" \
	"hello from the library"
id=$(submitted_id)
record=$("$NAVETTE" status "$id" --json | json 'd["record_url"]')
record=${record#file://}
check_eq "the run record lists the library" \
	"$(json 'd["libraries"]' <"$record")" \
	"[{\"commit\": \"$first\", \"ref\": \"v1\", \"url\": \"file://$L\"}]"

# ---- navette lock executes nothing (plan mode) ------------------------------
C=$(new_repo creds) || exit 1
cat >"$C/navette.lua" <<EOF
return { name = "creds", credentials = {
  tok = { kind = "bearer", source = "command",
          command = { "sh", "-c", "touch '$T/ran'; echo x" } } } }
EOF
put_file "$C" uses.lua <<EOF
local navette = require "navette"
navette.use { git = "file://$L", ref = "v1" }
print("handle: " .. tostring(navette.creds.get("tok")))
EOF
commit_all "$C" >/dev/null || exit 1
nv_in "$C" lock uses.lua
check_rc "lock with a command credential: ok" 0
check_absent "lock ran no credential command" "$T/ran"
check_contains "lock: the library is pinned" "$(cat "$C/navette.lock")" \
	"commit = $first"

# ---- lock --check fails: a library not locked, another commit -------------
put_file "$P" other.lua <<'EOF'
local navette = require "navette"
navette.use { git = "../lib", ref = "v1" }
EOF
commit_all "$P" >/dev/null || exit 1
nv_in "$P" lock --check other.lua
check_rc "lock --check, a library not in the lock: exit 3" 3
check_contains "lock --check, not in the lock: named" "$ERR" \
	"library ../lib (ref v1) is not in navette.lock"
check_contains "lock --check, not in the lock: what to run" "$ERR" \
	"run \`navette lock other.lua\`"

cp "$P/navette.lock" "$T/lock.saved"
second=$(printf 'x\n' >"$L/x.txt" && commit_all "$L") || exit 1
perl -pe "s/$first/$second/" "$T/lock.saved" >"$P/navette.lock"
nv_in "$P" lock --check train.lua
check_rc "lock --check, the lock names another commit: exit 3" 3
check_contains "lock --check, another commit: both named" "$ERR" \
	"ref v1 now points to commit $first, but navette.lock pins commit $second"
cp "$T/lock.saved" "$P/navette.lock"

# ---- a moved tag is refused; the cache serves the locked commit offline --
git -C "$L" tag -f v1 "$second" >/dev/null || exit 1
before=$(jobs_count)
nv_in "$P" run train.lua
check_rc "moved tag: run refused (exit 3)" 3
check_contains "moved tag: names the library and both commits" "$ERR" \
	"library file://$L: ref v1 now points to commit $second, but navette.lock pins commit $first (the tag moved)"
check_eq "moved tag: nothing submitted" "$(jobs_count)" "$before"
check_match "moved tag: the refusal is audited" \
	"$("$NAVETTE" audit show 2>&1 | tail -1)" "policy\.refuse +refused +train\.lua"

mv "$L" "$T/lib-away" || exit 1
nv_in "$P" run train.lua --wait
check_rc "offline: the locked commit runs from the cache" 0
check_contains "offline: says the library is unreachable" "$ERR" \
	"warning: library file://$L is unreachable"
id=$(submitted_id)
record=$("$NAVETTE" status "$id" --json | json 'd["record_url"]')
check_eq "offline: the record lists the locked commit" \
	"$(json 'd["libraries"][0]["commit"]' <"${record#file://}")" "$first"
mv "$T/lib-away" "$L" || exit 1

# ---- a branch on a pinned profile; a plain path --------------------------
B=$(new_repo branchy) || exit 1
cat >"$B/navette.lua" <<'EOF'
return { name = "branchy",
         profiles = { prod = { pinned = true, require_pushed = false } } }
EOF
put_file "$B" floating.lua <<EOF
local navette = require "navette"
navette.use { git = "$L", ref = "main" }.train("f")
EOF
commit_all "$B" >/dev/null || exit 1
nv_in "$B" lock floating.lua
check_rc "a branch, plain path: lock ok" 0
commit_all "$B" >/dev/null || exit 1
nv_in "$B" plan floating.lua
check_rc "a branch on the local profile: plan ok" 0
nv_in "$B" run floating.lua --profile prod
check_rc "a branch on a pinned profile: refused" 3
check_contains "a branch on a pinned profile: says why" "$ERR" \
	"ref main is a branch, which moves; profile 'prod' is pinned"
nv_in "$B" plan floating.lua --profile prod
check_rc "a branch on a pinned profile: plan refuses it too" 3

# ---- a secret in a library -------------------------------------------------
S=$(NO_PROJECT_FILE=1 new_repo leaky) || exit 1
key_id="AKIA$(printf 'QWERTYUIOPASDFGH' | tr 'A-Z' 'B-ZA')"
secret=$(python3 -c 'import random; r=random.Random(11); print("".join(r.choice("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789/+") for _ in range(40)))')
printf 'AWS_ACCESS_KEY_ID=%s\nAWS_SECRET_ACCESS_KEY=%s\n' "$key_id" \
	"$secret" >"$S/.env"
printf 'return {}\n' >"$S/init.lua"
commit_all "$S" >/dev/null || exit 1
git -C "$S" tag v1 || exit 1
put_file "$P" leaky.lua <<EOF
require("navette").use { git = "file://$S", ref = "v1" }
EOF
commit_all "$P" >/dev/null || exit 1
nv_in "$P" lock leaky.lua
check_rc "a secret in a library: refused" 3
check_contains "a secret in a library: names the library and the file" \
	"$ERR" "library file://$S: commit"
check_contains "a secret in a library: the finding" "$ERR" ".env"
check_eq "a secret in a library: the lock is unchanged" \
	"$(cat "$P/navette.lock")" "$(cat "$T/lock.saved")"

# ---- a library gets the same refusals as a recipe ------------------------
E=$(NO_PROJECT_FILE=1 new_repo escaper) || exit 1
put_file "$E" init.lua <<'EOF'
local navette = require "navette"
local M = {}
function M.internal() return require "navette.runner" end
function M.raw_io() return io.open("/etc/hostname") end
function M.replace() navette.job = function() end end
function M.recipe_module() return require "mine" end
function M.uncommitted() return require "extra" end
return M
EOF
commit_all "$E" >/dev/null || exit 1
git -C "$E" tag v1 || exit 1
printf 'return {}\n' >"$E/extra.lua" # in its folder, never committed
put_file "$P" mine.lua <<'EOF'
return { mine = true }
EOF
for attempt in internal raw_io replace recipe_module uncommitted sealed; do
	put_file "$P" "escape_$attempt.lua" <<EOF
local navette = require "navette"
local lib = navette.use { git = "file://$E", ref = "v1" }
require "mine"
if "$attempt" == "sealed" then lib.internal = function() end
else lib.$attempt() end
navette.job { name = "escaped", command = { "true" } }
EOF
done
put_file "$P" escape_lock.lua <<EOF
require("navette").use { git = "file://$E", ref = "v1" }
EOF
commit_all "$P" >/dev/null || exit 1
nv_in "$P" lock escape_lock.lua
check_rc "escaper: locked" 0
commit_all "$P" >/dev/null || exit 1
check_escape() {
	nv_in "$P" plan "escape_$1.lua"
	check_rc "library escape ($1): refused as a recipe error" 2
	check_contains "library escape ($1): says why" "$ERR" "$2"
	check_no_match "library escape ($1): no job declared" "$OUT" "escaped"
}
check_escape internal "'navette.runner' is internal to navette"
check_escape raw_io "'io'"
check_escape replace "read-only"
check_escape recipe_module "module 'mine' not found"
check_escape uncommitted "module 'extra' not found"
check_escape sealed "read-only"

# ---- a library that does not exist -----------------------------------------
put_file "$P" missing.lua <<EOF
require("navette").use { git = "$T/no-such-lib", ref = "v1" }
EOF
commit_all "$P" >/dev/null || exit 1
nv_in "$P" lock missing.lua
check_rc "a library that does not exist: exit 2" 2
check_contains "a library that does not exist: says so" "$ERR" \
	"no repository at $T/no-such-lib"
put_file "$P" unreachable.lua <<'EOF'
require("navette").use { git = "https://127.0.0.1:9/team/lib", ref = "v1" }
EOF
commit_all "$P" >/dev/null || exit 1
nv_in "$P" lock unreachable.lua
check_rc "an unreachable library, not cached: exit 4" 4
check_contains "an unreachable library: says it is not in the cache" \
	"$ERR" "(and it is not in the cache)"

finish
