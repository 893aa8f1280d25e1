# The command line itself: usage, unknown commands and options, help,
# version, an empty home.
set -eu -o pipefail
. "$(dirname "$0")/../lib.sh"
set +e # each check reports its own failure; finish sets the status

nv
check_rc "no command: exits 2" 2
check_match "no command: prints usage" "$OUT$ERR" '^usage: navette COMMAND'
check_match "no command: lists run" "$OUT$ERR" 'navette run RECIPE'

nv frobnicate
check_rc "unknown command: exits 2" 2
check_contains "unknown command: named" "$ERR" frobnicate
check_contains "unknown command: suggests help" "$ERR" "navette help"
nv statsu
check_rc "misspelt command: exits 2" 2
check_match "misspelt command: suggests the right one" "$ERR" \
	"did you mean .status"

nv status no-such-job
check_rc "status of an unknown job: exits 2" 2
check_contains "status of an unknown job: named" "$ERR" no-such-job

nv run --bogus x
check_rc "run --bogus: exits 2" 2
check_contains "run --bogus: names the option" "$ERR" --bogus
nv run
check_rc "run without a recipe: exits 2" 2
nv jobs --limit zero
check_rc "jobs --limit zero: exits 2" 2

nv version
check_rc "version: exits 0" 0
check_match "version: prints navette's version" "$OUT" \
	'^navette [0-9]+\.[0-9]+(\.[0-9]+)?'
check_match "version: prints Lua's version" "$OUT" '^ *lua +(Lua )?5\.4'
check_match "version: prints libgit2's version" "$OUT" '^ *libgit2 +[0-9]'
check_match "version: prints SQLite's version" "$OUT" '^ *sqlite +[0-9]'
check_match "version: prints libcurl's version" "$OUT" '^ *libcurl +[0-9]'
# the optional engines (issue 33): the one this build uses, by name
check_match "version: names the redactor's engine" "$OUT" \
	'^ *redact +(vectorscan [0-9]+\.[0-9]+\.[0-9]+|aho-corasick)'
check_match "version: names the code layers' compressor" "$OUT" \
	'^ *gzip +(libdeflate [0-9]|zlib [0-9])'
nv --version
check_rc "--version: exits 0" 0
check_match "--version: prints navette's version" "$OUT" '^navette [0-9]'
nv version --json
check_rc "version --json: exits 0" 0
check_match "version --json: navette's version" \
	"$(printf '%s' "$OUT" | json 'd["navette"]' 2>&1)" '^[0-9]+\.[0-9]+'

nv help run
check_rc "help run: exits 0" 0
check_match "help run: prints run's usage" "$OUT" '^usage: navette run RECIPE'
check_contains "help run: documents --wait" "$OUT" --wait
nv run --help
check_rc "run --help: exits 0" 0
check_match "run --help: prints run's usage" "$OUT" '^usage: navette run RECIPE'
nv help
check_rc "help: exits 0" 0
check_match "help: prints usage" "$OUT" '^usage: navette COMMAND'
nv help frobnicate
check_rc "help of an unknown command: exits 2" 2

nv jobs
check_rc "jobs on a fresh home: exits 0" 0
check_match "jobs on a fresh home: no jobs yet" "$OUT" '^no jobs yet$'
nv jobs --json
check_rc "jobs --json on a fresh home: exits 0" 0
check_eq "jobs --json on a fresh home: []" \
	"$(printf '%s' "$OUT" | json 'd' 2>&1)" "[]"

# NO_COLOR, on a terminal (pty_run.py): the same human output, coloured
# without it (so the checks with it can fail), plain with it; an empty
# NO_COLOR means colour, as no-color.org says
HERE=$(cd "$(dirname "$0")" && pwd)
R=$(new_repo colours)
put_file "$R" ok.lua <<'RECIPE'
local navette = require "navette"
navette.job { name = "ok", command = { "true" } }
RECIPE
put_file "$R" nolog.lua <<'RECIPE'
local navette = require "navette"
navette.job { name = "nolog", command = { "true" }, logs = { publish = false } }
RECIPE
commit_all "$R" >/dev/null
nv_in "$R" run ok.lua --wait
check_rc "a job for the colour checks succeeds" 0
# a job whose log is not published: its record's log is null
nv_in "$R" run nolog.lua --wait
check_rc "a job that keeps its log: run --wait follows it to the end" 0
NOLOG=$(submitted_id)
nv status "$NOLOG" --json
check_rc "its status reads its record" 0
check_eq "no published log in its view" \
	"$(printf '%s' "$OUT" | json '[d["state"], d.get("log_url")]')" '["succeeded", null]'
check_absent "nor in the store" "$(store_dir colours "$NOLOG")/navette.log"
check_file "whose run record is there" "$(store_dir colours "$NOLOG")/navette-run.json"
# on_tty NO_COLOR_VALUE|- ARGS...: navette on a terminal ("-": unset)
on_tty() {
	local nc=$1
	shift
	if [ "$nc" = - ]; then
		OUT=$(env -u NO_COLOR TERM=xterm python3 "$HERE/../pty_run.py" -- \
			"$NAVETTE" "$@")
	else
		OUT=$(env NO_COLOR="$nc" TERM=xterm python3 "$HERE/../pty_run.py" -- \
			"$NAVETTE" "$@")
	fi
	RC=$?
	ERR=
	LAST_CMD="(on a terminal, NO_COLOR=$nc) navette $*"
}
on_tty - jobs
check_match "without NO_COLOR, jobs is coloured on a terminal" "$OUT" $'\033\\['
on_tty 1 jobs
check_rc "with NO_COLOR, jobs exits 0" 0
check_match "with NO_COLOR, jobs lists the job" "$OUT" 'succeeded'
check_no_match "with NO_COLOR, jobs has no escape sequence" "$OUT" $'\033'
on_tty - status no-such-job
check_match "without NO_COLOR, an error is coloured on a terminal" "$OUT" \
	$'\033\\[[0-9;]*merror:'
on_tty 1 status no-such-job
check_match "with NO_COLOR, the error is printed" "$OUT" '^error: '
check_no_match "with NO_COLOR, the error has no escape sequence" "$OUT" $'\033'
on_tty "" jobs
check_match "an empty NO_COLOR leaves colour on" "$OUT" $'\033\\['

# navette test: a file that registers no case fails, a skip is a skip
printf 'local x = 1\n' >"$T/empty_test.lua"
nv test "$T/empty_test.lua"
check_rc "navette test of a file with no case: exits 1" 1
check_contains "navette test of a file with no case: says so" "$OUT" \
	"registers no test case"
cat >"$T/skip_test.lua" <<'CASES'
test.test("runs", function() test.eq(1, 1) end)
test.test("cannot run here", function() test.skip("no such tool") end)
CASES
nv test "$T/skip_test.lua"
check_rc "navette test with a skipped case: exits 77" 77
check_match "the skip is said with its reason" "$OUT" \
	'^SKIP cannot run here: no such tool$'
check_match "and counted" "$OUT" '^1 passed, 0 failed, 1 skipped$'

# navette test runs a file as untrusted as a recipe: no io, no _navette,
# no internal module, the time bound; --host is for navette's own tests
cat >"$T/escape_test.lua" <<'CASES'
test.test("io", function() io.open("/tmp/x", "w") end)
test.test("_navette", function() return _navette.sys end)
test.test("internal", function() require("navette.runner") end)
test.test("public", function() test.eq(type(require("navette").job), "function") end)
CASES
nv test "$T/escape_test.lua"
check_rc "navette test of a file reaching internals: fails" 1
check_match "its public API works" "$OUT" '^ok   public$'
check_match "no io" "$OUT" "^FAIL io: .*undeclared global 'io'"
check_match "no _navette" "$OUT" "^FAIL _navette: .*undeclared global '_navette'"
check_match "no internal module" "$OUT" '^FAIL internal: .*internal to navette'
printf 'test.test("loop", function() while true do end end)\n' >"$T/loop_test.lua"
NAVETTE_RECIPE_TIMEOUT=1 nv test "$T/loop_test.lua"
check_match "a test case is bounded in time" "$OUT" '^FAIL loop: .*ran longer than 1 s'
printf 'test.test("host", function() test.eq(type(_navette.sys), "table") end)\n' >"$T/host_test.lua"
nv test --host "$T/host_test.lua"
check_rc "navette test --host: the host's library" 0

finish
