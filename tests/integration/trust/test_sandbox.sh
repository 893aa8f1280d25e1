# A recipe and a project file are untrusted code (issue 11): what they can
# reach (the sealed public API only), what they cannot change (the trusted
# code's own references), how long they can run (the bound, even inside C),
# which files they load (the commit's), and that a refused run has no side
# effect. Each class is probed with several variants.
set -eu -o pipefail
. "$(dirname "$0")/../lib.sh"
set +e # each check reports its own failure; finish sets the status

# repo NAME [no-project]: a fresh repository (stops the test when it cannot
# be made: nothing may be written outside $T)
repo() {
	local dir
	if [ "${2:-}" = no-project ]; then
		dir=$(NO_PROJECT_FILE=1 new_repo "$1")
	else
		dir=$(new_repo "$1")
	fi
	case $dir in "$T"/*) printf '%s\n' "$dir" ;; *) exit 1 ;; esac
}

no_job_submitted() {
	local list
	list=$("$NAVETTE" jobs --json 2>&1)
	check_eq "$1: nothing submitted" \
		"$(printf '%s' "$list" | json 'len(d)' 2>&1)" 0
}

R=$(repo sandbox) || exit 1

# ---- internal modules: the issue's reproducer and variants --------------
put_file "$R" escape.lua <<'EOF'
local navette = require "navette"
if rawget(_ENV, "test") then
  io.popen("id; echo ESCAPED > escaped.txt"):read("a")
  return
end
require("navette.testing").run_files({ navette.context().recipe })
navette.job { name = "x", command = {"true"}, success = { outputs = {} } }
EOF
for mod in navette.runner navette.storage navette.embedding navette.luals \
	navette.completion navette.cli navette.cli.common navette.cli.completion \
	navette.cli.run \
	navette.cli.storage navette.cli.subcommand navette.creds navette.jobview \
	_navette; do
	printf 'local m = require "%s"\nreturn m\n' "$mod" >"$R/req-$mod.lua"
done
put_file "$R" replace.lua <<'EOF'
-- replace the runner's secret scan with a no-op, then submit
local navette = require "navette"
local ok = pcall(function()
  require("navette.runner").scan_secrets = function() end
end)
navette.job { name = "after-replace", command = { "true" } }
EOF
put_file "$R" meta.lua <<'EOF'
local navette = require "navette"
local smt = getmetatable("")
assert(smt == nil, "getmetatable('') handed out a metatable")
string.format = function() return "evil" end
for _, attempt in ipairs({
  function() navette.job = function() end end,
  function() navette.storage.put = function() end end,
  function() rawset(navette, "job", print) end,
  function() rawset(navette.image, "resolve", print) end,
  function() setmetatable(navette, {}) end,
  function() getmetatable(navette).__index = {} end,
}) do
  assert(not pcall(attempt), "the API could be changed")
end
navette.job { name = "meta", command = { "true" } }
EOF
commit_all "$R" >/dev/null

nv_in "$R" plan escape.lua
check_rc "reproducer: plan exits 2 (a recipe error)" 2
check_contains "reproducer: the module is named internal" "$ERR" \
	"'navette.testing' is internal to navette"
check_absent "reproducer: io.popen never ran" "$R/escaped.txt"
nv_in "$R" run escape.lua
check_rc "reproducer: run exits 2" 2
check_absent "reproducer: run did not run it either" "$R/escaped.txt"
no_job_submitted "reproducer"

for mod in navette.runner navette.storage navette.embedding navette.luals \
	navette.completion navette.cli navette.cli.common navette.cli.completion \
	navette.cli.run \
	navette.cli.storage navette.cli.subcommand navette.creds navette.jobview \
	_navette; do
	nv_in "$R" plan "req-$mod.lua"
	check_rc "require '$mod': refused" 2
	check_contains "require '$mod': says internal" "$ERR" "internal to navette"
done

nv_in "$R" plan replace.lua --json
check_rc "replacing an internal: the recipe still plans" 0
check_eq "replacing an internal: the job is declared" \
	"$(printf '%s' "$OUT" | json 'd["jobs"][0]["name"]' 2>&1)" after-replace

nv_in "$R" plan meta.lua
check_rc "sealed API, string metatable, recipe's string copy: plan ok" 0
check_contains "the trusted string.format is intact" "$OUT" "job meta"

# ---- the secret scan cannot be switched off from a recipe ----------------
S=$(repo scanrepo) || exit 1
put_file "$S" recipe.lua <<'EOF'
local navette = require "navette"
pcall(function() require("navette.runner").scan_secrets = function() end end)
pcall(function() rawset(require("navette"), "job", nil) end)
navette.job { name = "leak", command = { "cat", ".env" } }
EOF
# an AWS-shaped pair, made here (never committed to navette itself)
key_id="AKIA$(printf 'QWERTYUIOPASDFGH' | tr 'A-Z' 'B-ZA')"
secret=$(python3 -c 'import random; r=random.Random(7); print("".join(r.choice("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789/+") for _ in range(40)))')
printf 'AWS_ACCESS_KEY_ID=%s\nAWS_SECRET_ACCESS_KEY=%s\n' "$key_id" "$secret" >"$S/.env"
commit_all "$S" >/dev/null
nv_in "$S" run recipe.lua
check_rc "committed .env: still refused by the scan" 3
check_contains "committed .env: the finding names it" "$ERR" ".env"
no_job_submitted "committed .env"

# ---- navette.lua is data ------------------------------------------------
P=$(repo projfile no-project) || exit 1
put_file "$P" ok.lua <<'EOF'
require("navette").job { name = "p", command = { "true" } }
EOF
for body in \
	'require("navette.testing").run_files({}) return {}' \
	'local n = require "navette"; return { name = "x" }' \
	'io.open("'"$P"'/escaped.txt", "w") return {}' \
	'os.execute("touch '"$P"'/escaped.txt") return {}' \
	'require("helper") return {}'; do
	printf '%s\n' "$body" >"$P/navette.lua"
	printf 'return { name = "h" }\n' >"$P/helper.lua"
	commit_all "$P" >/dev/null
	nv_in "$P" creds list
	check_rc "navette.lua [$body]: creds list refuses it" 2
	nv_in "$P" plan ok.lua
	check_rc "navette.lua [$body]: plan refuses it" 2
	check_absent "navette.lua [$body]: nothing ran" "$P/escaped.txt"
done

# ---- the job a recipe gets back is a sealed copy ---------------------------
J=$(repo sealed) || exit 1
put_file "$J" recipe.lua <<'EOF'
local navette = require "navette"
local j = navette.job { name = "good", command = { "true" },
                        env = { MODE = "fast" } }
local tries = {
  function() j.name = "bad\nname" end,
  function() j.env.MODE = "ghp_" .. ("a"):rep(36) end,
  function() j.outputs = "../../etc" end,
  function() rawset(j, "name", "x") end,
  function() rawset(j.command, 1, "rm") end,
  function() table.insert(j.command, "-rf") end,
  function() setmetatable(j, nil) end,
}
for i, f in ipairs(tries) do
  assert(not pcall(f), "change " .. i .. " went through")
end
assert(j.name == "good" and j.command[1] == "true" and #j.command == 1)
-- a spec that shows a different value on each read is read once
local reads = 0
local spec = setmetatable({ command = { "true" } }, { __index = function(_, k)
  if k == "name" then reads = reads + 1; return "n" .. reads end
end })
assert(not pcall(navette.job, spec), "a name read through __index counted")
EOF
commit_all "$J" >/dev/null
nv_in "$J" plan recipe.lua --json
check_rc "sealed job: plan ok" 0
check_eq "sealed job: the submitted name is the validated one" \
	"$(printf '%s' "$OUT" | json 'd["jobs"][0]["name"] + "|" + ",".join(d["jobs"][0]["env"])' 2>&1)" "good|MODE"

# ---- the time bound holds whatever the recipe does --------------------------
B=$(repo bound) || exit 1
put_file "$B" pcall-loop.lua <<'EOF'
while true do pcall(function() while true do end end) end
EOF
put_file "$B" handler-loop.lua <<'EOF'
local function loop() while true do end end
while true do xpcall(loop, function() while true do end end) end
EOF
put_file "$B" pattern.lua <<'EOF'
local s = ("a"):rep(5000)
return s:find(("a*"):rep(12) .. "b")
EOF
put_file "$B" gsub.lua <<'EOF'
local s = ("a"):rep(3000)
local n = 0
while true do
  n = n + select(2, s:gsub("a", function() return "a" end))
end
EOF
put_file "$B" tostring-loop.lua <<'EOF'
error(setmetatable({}, { __tostring = function() while true do end end }))
EOF
put_file "$B" close-loop.lua <<'EOF'
local x <close> = setmetatable({}, { __close = function()
  while true do pcall(function() while true do end end) end
end })
error("boom")
EOF
commit_all "$B" >/dev/null
put_file "$B" quick.lua <<'EOF'
return 1
EOF
commit_all "$B" >/dev/null
# elapsed CMD...: runs CMD (nv keeps RC, OUT, ERR), then sets TOOK to the
# seconds it took (one decimal)
elapsed() {
	local start
	start=$(python3 -c 'import time; print(time.monotonic())')
	"$@"
	TOOK=$(python3 -c "import time; print(round(time.monotonic() - $start, 1))")
}
for r in pcall-loop handler-loop pattern gsub tostring-loop close-loop; do
	# what starting navette costs now (the machine may be loaded)
	elapsed nv_in "$B" plan quick.lua
	base=$TOOK
	NAVETTE_RECIPE_TIMEOUT=2 elapsed nv_in "$B" plan "$r.lua"
	took=$TOOK
	check_rc "$r: ends with a recipe error" 2
	# and again just after (the load may have changed meanwhile): the
	# larger of the two counts
	rc_case=$RC err_case=$ERR
	elapsed nv_in "$B" plan quick.lua
	base=$(python3 -c "print(max($base, $TOOK))")
	RC=$rc_case ERR=$err_case
	# the limit (2 s) plus one second, plus starting navette (twice what
	# it took, and half a second of scheduling)
	check_true "$r: ends within the limit plus one second: ${took} s (start-up ${base} s)" \
		python3 -c "import sys; sys.exit(0 if $took <= 3.5 + 2 * $base else 1)"
	if [ "$r" = pattern ]; then
		check_contains "pattern: the hard stop names the recipe" "$ERR" \
			"pattern.lua"
	fi
	check_contains "$r: says it ran longer than the limit" "$ERR" \
		"ran longer than 2 s"
done
NAVETTE_RECIPE_TIMEOUT=2 nv_in "$B" plan pcall-loop.lua
check_contains "a caught time-out: the error is at the recipe's line" "$ERR" \
	"pcall-loop.lua:1: the recipe ran longer"

# ---- recipe code comes from the commit -------------------------------------
C=$(repo committed) || exit 1
put_file "$C" recipe.lua <<'EOF'
local helper = require "helper"
require("navette").job { name = helper.name, command = { "true" } }
EOF
put_file "$C" helper.lua <<'EOF'
return { name = "committed-helper" }
EOF
put_file "$C" ignored.lua <<'EOF'
local h = require "secret_helper"
require("navette").job { name = h.name, command = { "true" } }
EOF
printf 'secret_helper.lua\nignored-recipe.lua\n' >"$C/.gitignore"
commit_all "$C" >/dev/null
printf 'return { name = "from-an-ignored-file" }\n' >"$C/secret_helper.lua"
printf 'require("navette").job { name = "ign", command = { "true" } }\n' \
	>"$C/ignored-recipe.lua"
nv_in "$C" plan recipe.lua --json
check_rc "committed module: plan ok" 0
check_eq "committed module: its value is used" \
	"$(printf '%s' "$OUT" | json 'd["jobs"][0]["name"]' 2>&1)" committed-helper
nv_in "$C" run ignored.lua
check_rc "ignored module: run refused" 3
check_contains "ignored module: named" "$ERR" secret_helper.lua
no_job_submitted "ignored module"
nv_in "$C" plan ignored.lua
check_rc "ignored module: plan refuses too" 3
nv_in "$C" run ignored-recipe.lua
check_rc "ignored recipe: run refused" 3
check_contains "ignored recipe: named" "$ERR" ignored-recipe.lua
no_job_submitted "ignored recipe"

# Never through a link: a file outside the repository (here a secret in
# an env file) is not evaluated, so neither its text (in an error a
# recipe could catch) nor its values reach the recipe, whether the link
# is committed, left untracked, a folder link, or the recipe itself.
L=$(repo links) || exit 1
printf 'HIDDEN_VALUE=linkprobeneverread\n' >"$T/outside.env"
mkdir -p "$T/outside-dir"
cp "$T/outside.env" "$T/outside-dir/env.lua"
ln -s "$T/outside.env" "$L/cfg.lua"
ln -s "$T/outside-dir" "$L/sub"
ln -s "$T/outside.env" "$L/direct.lua"
for m in cfg sub.env loose; do
	put_file "$L" "req-$m.lua" <<EOF
local ok, e = pcall(require, "$m")
print("CAUGHT: " .. tostring(e))
EOF
done
commit_all "$L" >/dev/null
ln -s "$T/outside.env" "$L/loose.lua" # untracked
for m in cfg sub.env loose; do
	nv_in "$L" plan "req-$m.lua"
	check_no_match "a link ($m): the file's text never reaches the recipe" \
		"$OUT$ERR" "linkprobeneverread"
	check_contains "a link ($m): require says why" "$OUT" \
		"CAUGHT: module '$m' not found"
done
nv_in "$L" plan req-cfg.lua
check_contains "a committed link: not a regular file" "$OUT" \
	"is not a regular file"
nv_in "$L" plan direct.lua
check_rc "a recipe that is a link to a file outside: refused" 2
check_no_match "a recipe that is a link: its text is not shown" \
	"$OUT$ERR" "linkprobeneverread"

# ---- a refused run has no side effect ---------------------------------------
D=$(repo sideeffects) || exit 1
put_file "$D" upload.lua <<'EOF'
local navette = require "navette"
local info = navette.storage.put("inputs/data.txt", "data.txt")
navette.job { name = "reader", command = { "cat", "inputs/data.txt" },
              inputs = { ["data.txt"] = info.url } }
EOF
put_file "$D" invalid-after-upload.lua <<'EOF'
local navette = require "navette"
navette.storage.put("inputs/other.txt", "data.txt")
navette.job { name = "bad", command = "not a list" }
EOF
printf 'committed data\n' >"$D/data.txt"
commit_all "$D" >/dev/null
echo "uncommitted edit" >>"$D/data.txt"
audit_before=$(wc -l <"$NAVETTE_HOME/audit/audit.jsonl" 2>/dev/null || echo 0)
nv_in "$D" run upload.lua
check_rc "dirty data file: run refused" 3
check_contains "dirty data file: named" "$ERR" data.txt
check_absent "dirty data file: nothing uploaded" \
	"$NAVETTE_HOME/store/inputs/data.txt"
no_job_submitted "dirty data file"
audit_new=$(tail -n +"$((audit_before + 1))" "$NAVETTE_HOME/audit/audit.jsonl" 2>/dev/null)
check_no_match "dirty data file: no upload in the audit log" "$audit_new" \
	'storage.put'
check_match "dirty data file: the refusal is in the audit log" "$audit_new" \
	'policy.refuse'
git -C "$D" checkout -q -- data.txt
nv_in "$D" run invalid-after-upload.lua
check_rc "invalid job after an upload: refused as a recipe error" 2
check_absent "invalid job after an upload: nothing uploaded" \
	"$NAVETTE_HOME/store/inputs/other.txt"
nv_in "$D" run upload.lua
check_rc "clean tree: the run goes through" 0
check_file "clean tree: the upload happened" \
	"$NAVETTE_HOME/store/inputs/data.txt"
check_eq "clean tree: the committed bytes were uploaded" \
	"$(cat "$NAVETTE_HOME/store/inputs/data.txt")" "committed data"

# ---- every local file that leaves the laptop is scanned ----------------------
U=$(repo uploads) || exit 1
put_file "$U" up-secret.lua <<'EOF'
require("navette").storage.put("inputs/config.env", "config.env")
EOF
put_file "$U" up-big.lua <<'EOF'
require("navette").storage.put("inputs/big.csv", "big.csv")
EOF
put_file "$U" up-allowed.lua <<'EOF'
require("navette").storage.put("inputs/fixture.env", "fixture.env")
EOF
printf 'GITHUB_TOKEN=ghp_%s\n' "$(python3 -c 'import random; r=random.Random(3); print("".join(r.choice("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789") for _ in range(36)))')" >"$U/config.env"
cp "$U/config.env" "$U/fixture.env"
printf 'fixture.env  a test fixture: the token is not a live one\n' >"$U/.navette-secrets-allow"
# a secret deep in a data file larger than one scanning chunk (2 MiB)
python3 - "$U/big.csv" "$key_id" <<'PY'
import sys
with open(sys.argv[1], "w") as f:
    for i in range(120000):
        f.write("%d,%d,%d\n" % (i, i * 7, i * 13))
    f.write("aws_access_key_id,%s\n" % sys.argv[2])
PY
commit_all "$U" >/dev/null
nv_in "$U" run up-secret.lua
check_rc "storage.put of a file holding a token: refused" 3
check_contains "storage.put of a token: names the file" "$ERR" config.env
check_absent "storage.put of a token: nothing uploaded" \
	"$NAVETTE_HOME/store/inputs/config.env"
nv_in "$U" plan up-secret.lua
check_rc "storage.put of a token: plan refuses it too" 3
nv_in "$U" run up-big.lua
check_rc "a secret after 2 MiB of data: refused" 3
check_contains "a secret after 2 MiB of data: its line" "$ERR" "big.csv:120001"
check_absent "a secret after 2 MiB of data: nothing uploaded" \
	"$NAVETTE_HOME/store/inputs/big.csv"
nv_in "$U" run up-allowed.lua
check_rc "an allow-listed fixture: uploaded" 0
check_file "an allow-listed fixture: in the store" \
	"$NAVETTE_HOME/store/inputs/fixture.env"

# text a recipe makes is scanned too (navette.storage.put_string): the
# token is built at evaluation, so no file of the commit holds it
put_file "$U" ps-secret.lua <<'EOF'
local t = "ghp" .. "_" .. ("Qx7LmZ2pRv9K"):rep(3)
require("navette").storage.put_string("inputs/made.txt", "token=" .. t .. "\n")
EOF
put_file "$U" ps-big.lua <<'EOF'
local rows = {}
for i = 1, 120000 do rows[i] = i .. "," .. i * 7 .. "," .. i * 13 end
local k = "AKIA" .. "J4WQ" .. "T7RZ" .. "M2KD" .. "P9XB"
rows[#rows + 1] = "aws_access_key_id," .. k
require("navette").storage.put_string("inputs/made-big.csv",
                                      table.concat(rows, "\n") .. "\n")
EOF
put_file "$U" ps-clean.lua <<'EOF'
require("navette").storage.put_string("inputs/made-clean.txt", "lr=0.001\n")
EOF
commit_all "$U" >/dev/null
nv_in "$U" run ps-secret.lua
check_rc "put_string of a token: refused" 3
check_contains "put_string of a token: names the key" "$ERR" inputs/made.txt
check_contains "put_string of a token: names the rule" "$ERR" github-token
check_absent "put_string of a token: nothing uploaded" \
	"$NAVETTE_HOME/store/inputs/made.txt"
nv_in "$U" plan ps-secret.lua
check_rc "put_string of a token: plan refuses it too" 3
nv_in "$U" run ps-big.lua
check_rc "put_string, a key after 2 MiB of text: refused" 3
check_contains "put_string, a key after 2 MiB: its line" "$ERR" \
	"inputs/made-big.csv:120001"
check_absent "put_string, a key after 2 MiB: nothing uploaded" \
	"$NAVETTE_HOME/store/inputs/made-big.csv"
nv_in "$U" run ps-clean.lua
check_rc "put_string of ordinary text: uploaded" 0
check_eq "put_string of ordinary text: the bytes in the store" \
	"$(cat "$NAVETTE_HOME/store/inputs/made-clean.txt")" "lr=0.001"

# text uploaded by put_string is an input the run's jobs can take: the
# checking pass notes it as planned (it uploads nothing), so the job
# declared after it is not refused for an input missing from the store
PI=$(repo putstring-input) || exit 1
put_file "$PI" ps-input.lua <<'EOF'
local navette = require "navette"
local made = navette.storage.put_string("inputs/made-input.txt", "seed=3\n")
navette.job { name = "ps-input", command = { "cat", "inputs/seed.txt" },
              inputs = { ["seed.txt"] = made.url } }
EOF
commit_all "$PI" >/dev/null
nv_in "$PI" run ps-input.lua
check_rc "put_string then a job taking it as input: the run goes through" 0
check_eq "put_string then a job taking it: the text is in the store" \
	"$(cat "$NAVETTE_HOME/store/inputs/made-input.txt")" "seed=3"

# ---- checks added by the mutation experiment (issue 11) -----------------
# Each fails with one deliberate bug that the checks above let through.

# no_job_named WHAT NAME: no job of that name is in `navette jobs` (jobs
# of the checks above are there already)
no_job_named() {
	local list
	list=$("$NAVETTE" jobs --json 2>&1)
	check_eq "$1: nothing submitted" \
		"$(printf '%s' "$list" | json "len([j for j in d if j['name'] == '$2'])" 2>&1)" 0
}

# Recipe code is read from the commit even where the folder differs: plan
# (which refuses a dirty tree only when it pins a job's commit) evaluates
# the committed recipe and module, not the edited ones. (Mutant:
# committed_source read the folder.)
H=$(repo fromhead) || exit 1
put_file "$H" recipe.lua <<'EOF'
local helper = require "helper"
print("helper says " .. helper.name)
EOF
put_file "$H" helper.lua <<'EOF'
return { name = "committed-helper" }
EOF
commit_all "$H" >/dev/null
printf 'return { name = "edited-helper" }\n' >"$H/helper.lua"
nv_in "$H" plan recipe.lua
check_rc "edited module: plan ok" 0
check_contains "edited module: plan evaluates the committed one" "$OUT" \
	"helper says committed-helper"
git -C "$H" checkout -q -- helper.lua
printf 'print("the edited recipe ran")\n' >"$H/recipe.lua"
nv_in "$H" plan recipe.lua
check_rc "edited recipe: plan ok" 0
check_contains "edited recipe: plan evaluates the committed one" "$OUT" \
	"helper says committed-helper"

# A dirty tree is refused before the recipe is evaluated, also when the
# recipe declares no job (no commit is pinned then): nothing is uploaded.
# (Mutant: the tree checked only when a job's commit is pinned.)
E=$(repo dirtynojob) || exit 1
put_file "$E" upload-only.lua <<'EOF'
require("navette").storage.put("inputs/nojob.txt", "data.txt")
EOF
printf 'committed data\n' >"$E/data.txt"
commit_all "$E" >/dev/null
echo "uncommitted edit" >>"$E/data.txt"
nv_in "$E" run upload-only.lua
check_rc "dirty tree, a recipe without jobs: run refused" 3
check_contains "dirty tree, a recipe without jobs: names the file" "$ERR" data.txt
check_absent "dirty tree, a recipe without jobs: nothing uploaded" \
	"$NAVETTE_HOME/store/inputs/nojob.txt"

# A refusal found when the jobs are checked (here the secret scan of the
# commit) comes before the recipe's uploads: the store is left as it was.
# (Mutant: the checking pass evaluated the recipe without checking its
# jobs, so the second pass uploaded, then was refused.)
K=$(repo scanbeforeupload) || exit 1
put_file "$K" recipe.lua <<'EOF'
local navette = require "navette"
local info = navette.storage.put("inputs/scanned-first.txt", "data.txt")
navette.job { name = "scan-reader", command = { "cat", "inputs/data.txt" },
              inputs = { ["data.txt"] = info.url } }
EOF
printf 'clean data\n' >"$K/data.txt"
printf 'AWS_ACCESS_KEY_ID=%s\nAWS_SECRET_ACCESS_KEY=%s\n' "$key_id" "$secret" >"$K/.env"
commit_all "$K" >/dev/null
nv_in "$K" run recipe.lua
check_rc "secret in the commit, recipe uploads: refused" 3
check_contains "secret in the commit, recipe uploads: names .env" "$ERR" ".env"
check_absent "secret in the commit, recipe uploads: nothing uploaded" \
	"$NAVETTE_HOME/store/inputs/scanned-first.txt"
no_job_named "secret in the commit, recipe uploads" scan-reader

# A recipe that declares other jobs when run than when checked (a name
# drawn at random: both passes run in one Lua state, so the draws differ)
# is refused, and nothing is submitted. (Mutant: the comparison removed.)
V=$(repo twofaced) || exit 1
put_file "$V" recipe.lua <<'EOF'
local navette = require "navette"
navette.job { name = "drawn-" .. math.random(1, 1000000000),
              command = { "true" } }
EOF
commit_all "$V" >/dev/null
nv_in "$V" run recipe.lua
check_rc "other jobs when run than when checked: refused" 3
check_contains "other jobs when run than when checked: says so" "$ERR" \
	"declared other jobs"
nv jobs --json
check_eq "other jobs when run than when checked: nothing submitted" \
	"$(printf '%s' "$OUT" | json "len([j for j in d if j['name'].startswith('drawn-')])" 2>&1)" 0

# navette.context().plan is true under `navette plan` only: the checking
# pass of a run does not show itself, so a recipe cannot act one way when
# checked and another when run (mutant: context().plan = plan mode, which
# made this run refuse, its passes declaring different jobs).
P=$(repo planflag) || exit 1
put_file "$P" recipe.lua <<'EOF'
local navette = require "navette"
local c = navette.context()
navette.job { name = c.plan and "seen-as-plan" or "seen-as-run",
              command = { "true" } }
EOF
commit_all "$P" >/dev/null
nv_in "$P" plan recipe.lua
check_rc "context().plan: plan ok" 0
check_contains "context().plan: true under navette plan" "$OUT" seen-as-plan
nv_in "$P" run recipe.lua
check_rc "context().plan: run ok (both passes see a run)" 0
nv jobs --json
check_eq "context().plan: the run submitted the job it saw as run" \
	"$(printf '%s' "$OUT" | json "len([j for j in d if j['name'] == 'seen-as-run'])" 2>&1)" 1

finish
