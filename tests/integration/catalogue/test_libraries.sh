# Team-shared recipe libraries (issue 13): navette.use pinned by
# navette.lock, with libraries made here (file:// URLs and plain paths).
# A moved tag is refused naming both commits; with the remote gone the
# cache serves the locked commit; a branch is refused on a pinned
# profile; a library holding a secret is refused; `navette lock --check`
# passes, then fails on a library missing from the lock or a lock naming
# another commit; the run record lists the library; a library gets the
# same refusals as a recipe when it reaches for navette's internals, io,
# or the public API's functions; plan uses no network.
set -eu -o pipefail
. "$(dirname "$0")/../lib.sh"
set +e # each check reports its own failure; finish sets the status

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
check_contains "navette lock: says to commit the lock before run" "$OUT" \
	"next: commit it, as run takes the code from a commit: git add $P/navette.lock"
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
# (--no-reuse: the job of the same commit above would be reused)
nv_in "$P" run train.lua --wait --no-reuse
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


# ---- a commit id means that commit (review F2) ------------------------------
I=$(NO_PROJECT_FILE=1 new_repo idlib) || exit 1
printf 'return { who = "reviewed" }\n' >"$I/init.lua"
X=$(commit_all "$I") || exit 1
printf 'return { who = "moved" }\n' >"$I/init.lua"
Y=$(commit_all "$I") || exit 1
git -C "$I" tag "$X" "$Y" || exit 1 # a tag named like commit X -> Y
git -C "$I" tag abcdef1 "$Y" || exit 1
Q=$(new_repo review) || exit 1
put_file "$Q" byid.lua <<EOF
local lib = require("navette").use { git = "file://$I", ref = "$X" }
print("who: " .. lib.who)
EOF
put_file "$Q" abbrev.lua <<EOF
require("navette").use { git = "file://$I", ref = "abcdef1" }
EOF
commit_all "$Q" >/dev/null || exit 1
nv_in "$Q" lock byid.lua
check_rc "a commit id shadowed by a tag: lock ok" 0
check_contains "a commit id: the lock pins that commit" \
	"$(cat "$Q/navette.lock")" "commit = $X"
check_contains "a commit id: the module is that commit's" "$OUT" \
	"who: reviewed"
nv_in "$Q" lock abbrev.lua
check_rc "a tag named like an abbreviated id: refused" 3
check_contains "a tag named like an abbreviated id: ambiguous" "$ERR" \
	"'abcdef1' looks like an abbreviated commit id"
rm -f "$Q/navette.lock"

# ---- a library's own navette.use: https:// only (review F3) ----------------
V=$(NO_PROJECT_FILE=1 new_repo private) || exit 1
printf 'return { customer_list = "acme,globex" }\n' >"$V/settings.lua"
commit_all "$V" >/dev/null || exit 1
N=$(NO_PROJECT_FILE=1 new_repo nester) || exit 1
put_file "$N" init.lua <<EOF
local navette = require "navette"
local M = {}
local function why(e) return type(e) == "table" and e.message or tostring(e) end
function M.use(url)
  local ok, s = pcall(navette.use, { git = url, ref = "main",
                                     module = "settings" })
  print("nested " .. url .. ": " .. (ok and "READ " .. s.customer_list
                                     or why(s)))
end
M.use("../private")
return M
EOF
commit_all "$N" >/dev/null || exit 1
git -C "$N" tag v1 || exit 1
put_file "$Q" nested.lua <<EOF
local navette = require "navette"
navette.use { git = "$V", ref = "main", module = "settings" } -- the project's
local lib = navette.use { git = "file://$N", ref = "v1" }
for _, url in ipairs { "$V", "file://$V", "/etc", "." } do lib.use(url) end
EOF
commit_all "$Q" >/dev/null || exit 1
nv_in "$Q" lock nested.lua
check_rc "a library's nested local use: the recipe goes on" 0
check_no_match "a library reads no local repository" "$OUT" "READ"
for url in ../private "$V" "file://$V" /etc .; do
	check_contains "a library's nested use of $url: refused" "$OUT" \
		"nested $url: "
done
check_contains "a library's nested use: says why" "$OUT" \
	"a library may use only https:// libraries"
rm -f "$Q/navette.lock"

# a library refused (secret scan) under pcall is not served nor locked
put_file "$Q" trypcall.lua <<EOF
local navette = require "navette"
for i = 1, 2 do
  local ok = pcall(navette.use, { git = "file://$S", ref = "v1" })
  print("attempt " .. i .. ": " .. (ok and "served" or "refused"))
end
navette.use { git = "file://$L", ref = "v1" }
EOF
commit_all "$Q" >/dev/null || exit 1
nv_in "$Q" lock trypcall.lua
check_contains "a library refused under pcall: refused again" "$OUT" \
	"attempt 2: refused"
check_no_match "a library refused under pcall: never served" "$OUT" "served"
check_no_match "a library refused under pcall: not in the lock" \
	"$(cat "$Q/navette.lock" 2>/dev/null)" "leaky"
rm -f "$Q/navette.lock"

# ---- fetched only from https:// or a folder (review F4) ---------------------
echo x >"$Q/u@127.0.0.1:x"
put_file "$Q" sshlike.lua <<'EOF'
require("navette").use { git = "./u@127.0.0.1:x", ref = "v1" }
EOF
commit_all "$Q" >/dev/null || exit 1
nv_in "$Q" lock sshlike.lua
check_rc "a path that is a file named like an ssh address: exit 2" 2
check_contains "an ssh-like file path: not a folder, no ssh" "$ERR" \
	"(not a folder)"
check_no_match "an ssh-like file path: no ssh session" "$ERR" "SSH|ssh"

# ---- navette.lock is read as a regular file, never echoed (review F5) ------
secret_text=lock-target-never-shown
printf '%s\n' "$secret_text" >"$T/docker_secret"
put_file "$Q" plain.lua <<EOF
require("navette").use { git = "file://$L", ref = "v1" }
EOF
ln -s "$T/docker_secret" "$Q/navette.lock"
nv_in "$Q" lock --check plain.lua
check_rc "navette.lock a symlink: lock --check refused" 3
check_contains "navette.lock a symlink: says so" "$ERR" \
	"navette.lock is a symlink, not a regular file"
check_no_match "navette.lock a symlink: its target is not printed" \
	"$OUT$ERR" "$secret_text"
nv_in "$Q" lock plain.lua
check_rc "navette.lock a symlink: lock refused" 3
check_no_match "navette.lock a symlink: lock prints no target" \
	"$OUT$ERR" "$secret_text"
check_eq "navette.lock a symlink: the secret is left as it was" \
	"$(cat "$T/docker_secret")" "$secret_text"
commit_all "$Q" >/dev/null || exit 1
nv_in "$Q" plan plain.lua
check_rc "navette.lock a committed symlink: plan refused" 3
check_contains "a committed symlink: not a regular file" "$ERR" \
	"not a regular file"
check_no_match "a committed symlink: its target is not printed" \
	"$OUT$ERR" "$secret_text"
rm -f "$Q/navette.lock"
printf '[library "x"]\nref = %s extra\n' "$secret_text" >"$Q/navette.lock"
nv_in "$Q" lock --check plain.lua
check_rc "a malformed lock: refused" 2
check_contains "a malformed lock: names the line" "$ERR" "navette.lock:2:"
check_no_match "a malformed lock: the line is not echoed" "$ERR" \
	"$secret_text"
python3 -c 'import sys; open(sys.argv[1], "w").write("#" * (1 << 20) + "\n")' \
	"$Q/navette.lock"
nv_in "$Q" lock --check plain.lua
check_rc "a lock over the size cap: refused" 3
check_contains "a lock over the size cap: says so" "$ERR" \
	"is larger than 1048576 bytes"
commit_all "$Q" >/dev/null || exit 1
nv_in "$Q" plan plain.lua
check_rc "a committed lock over the size cap: plan refused" 3
check_contains "a committed lock over the size cap: says so" "$ERR" \
	"larger than 1048576 bytes"
check_no_match "a committed lock over the size cap: not 'not in HEAD'" \
	"$ERR" "not in commit HEAD"
git -C "$Q" rm -q navette.lock && commit_all "$Q" >/dev/null || exit 1

# ---- a library serves only what the secret scan read (review F6) -----------
tok=ghp_$(python3 -c 'import random; r=random.Random(7); print("".join(r.choice("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789") for _ in range(36)))')
BG=$(NO_PROJECT_FILE=1 new_repo biglib) || exit 1
python3 -c 'import sys; open(sys.argv[1], "w").write("-- " + "x" * (3 << 20) + "\nreturn { t = \"" + sys.argv[2] + "\" }\n")' \
	"$BG/init.lua" "$tok"
NL=$(NO_PROJECT_FILE=1 new_repo nullib) || exit 1
printf -- '-- \0\nreturn { t = "%s" }\n' "$tok" >"$NL/init.lua"
AL=$(NO_PROJECT_FILE=1 new_repo allowlib) || exit 1
printf 'return { t = "%s" }\n' "$tok" >"$AL/init.lua"
printf '** test fixtures\n' >"$AL/.navette-secrets-allow"
for v in "$BG" "$NL" "$AL"; do
	commit_all "$v" >/dev/null && git -C "$v" tag v1 || exit 1
	b=$(basename "$v")
	put_file "$Q" "$b.lua" <<EOF
print("served: " .. #require("navette").use { git = "file://$v", ref = "v1" }.t)
EOF
done
commit_all "$Q" >/dev/null || exit 1
nv_in "$Q" lock biglib.lua
check_rc "a module over the scan's size cap: refused" 2
check_contains "a module over the scan's size cap: says so" "$ERR" \
	"'init.lua' is larger than 2097152 bytes"
check_no_match "a module over the scan's size cap: not served" "$OUT" \
	"served"
nv_in "$Q" lock nullib.lua
# (since issue 26's M2 the scan reads past the NUL: it refuses the file
# named like text that holds one, and finds the token hidden after it)
check_rc "a module holding a NUL byte: refused" 3
check_contains "a module holding a NUL byte: says so" "$ERR" \
	"init.lua: NUL bytes in a file named like text"
check_contains "a module holding a NUL byte: the token after it is found" \
	"$ERR" "init.lua: GitHub personal token in a binary file"
check_no_match "a module holding a NUL byte: not served" "$OUT" "served"
nv_in "$Q" lock allowlib.lua
check_rc "a library's own allow-list does not apply: refused" 3
check_contains "a library's own allow-list: the finding" "$ERR" \
	"init.lua:1: "
check_no_match "a library's own allow-list: not served" "$OUT" "served"
rm -f "$Q/navette.lock"

# ---- a library that uses itself: a loop, not a runaway (review F8) ---------
LP=$(NO_PROJECT_FILE=1 new_repo looper) || exit 1
put_file "$LP" init.lua <<EOF
return require("navette").use { git = "file://$LP", ref = "v1" }
EOF
commit_all "$LP" >/dev/null && git -C "$LP" tag v1 || exit 1
put_file "$Q" loop.lua <<EOF
require("navette").use { git = "file://$LP", ref = "v1" }
EOF
commit_all "$Q" >/dev/null || exit 1
nv_in "$Q" lock loop.lua
check_rc "a library loop: a recipe error" 2
check_contains "a library loop: names the chain" "$ERR" \
	"libraries use each other in a loop: file://$LP (init) -> file://$LP (init)"
put_file "$LP" init.lua <<EOF
return require("navette").use { git = "FILE://$LP/./", ref = "v1" }
EOF
commit_all "$LP" >/dev/null && git -C "$LP" tag -f v1 >/dev/null || exit 1
nv_in "$Q" lock loop.lua
check_rc "a library loop, the URL spelled otherwise: a recipe error" 2
check_contains "a library loop, spelled otherwise: still a loop" "$ERR" \
	"libraries use each other in a loop: file://$LP (init) -> FILE://$LP/. (init)"


# ---- a fetch that hangs: the time bound says so (review F7) -----------------
# (a listener that accepts and never answers: the TLS handshake waits)
python3 -c '
import os, socket, sys, time
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(4)
open(sys.argv[1] + ".tmp", "w").write(str(s.getsockname()[1]))
os.rename(sys.argv[1] + ".tmp", sys.argv[1]); s.settimeout(30)
try:
    c, _ = s.accept(); time.sleep(20)
except Exception:
    pass' "$T/silent.port" &
silent_pid=$!
for _ in $(seq 100); do [ -f "$T/silent.port" ] && break; sleep 0.1; done
put_file "$Q" hang.lua <<EOF
require("navette").use { git = "https://127.0.0.1:$(cat "$T/silent.port")/team/lib", ref = "v1" }
EOF
commit_all "$Q" >/dev/null || exit 1
NAVETTE_RECIPE_TIMEOUT=2 nv_in "$Q" lock hang.lua
check_rc "a fetch that hangs: ended by the time bound" 2
check_contains "a fetch that hangs: says it was fetching the library" \
	"$ERR" "while navette fetched the library https://127.0.0.1:"
check_no_match "a fetch that hangs: blames no pattern match" "$ERR" \
	"backtrack"
kill "$silent_pid" 2>/dev/null
wait "$silent_pid" 2>/dev/null

finish
