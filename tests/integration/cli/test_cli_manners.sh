# The CLI's manners as a user sees them on a terminal (a pseudo-terminal
# through pty_run.py) and on a pipe: final states in their colours, the
# jobs table, Ctrl-C while following, logs --json/--tail, storage ls
# --json and transfer progress (against fake_s3.py), command-line errors,
# credentials on the wrong system, and one exit status per class of the
# README's table.
set -eu -o pipefail
. "$(dirname "$0")/../lib.sh"
set +e # each check reports its own failure; finish sets the status

HERE=$(cd "$(dirname "$0")" && pwd)
ESC=$(printf '\033')

# on_tty [pty_run options] -- ARGS...: navette on a terminal with colour
# allowed; what it wrote in OUT (ERR empty), its status in RC.
on_tty() {
	local opts=()
	while [ "$1" != "--" ]; do opts+=("$1"); shift; done
	shift
	OUT=$(cd "${TTY_DIR:-$T}" && env -u NO_COLOR TERM=xterm \
		python3 "$HERE/../pty_run.py" "${opts[@]}" -- "$NAVETTE" "$@")
	RC=$?
	ERR=
	LAST_CMD="(on a terminal) navette $*"
}

R=$(new_repo manners)
put_file "$R" ok.lua <<'EOF'
local navette = require "navette"
navette.job { name = "ok", command = { "sh", "-c", "echo one; echo two >&2; echo three" } }
EOF
put_file "$R" bad.lua <<'EOF'
local navette = require "navette"
navette.job { name = "bad", command = { "sh", "-c", "echo no; exit 3" } }
EOF
put_file "$R" slow.lua <<'EOF'
local navette = require "navette"
navette.job { name = "slow", command = { "sh", "-c", "sleep 4; echo done" } }
EOF
put_file "$R" two.lua <<'EOF'
local navette = require "navette"
navette.job { name = "gone", command = { "no-such-program-here" },
              failure = { hint = "ask the data team" } }
navette.job { name = "noexec", command = { "sh", "-c", "exit 126" } }
EOF
commit_all "$R" >/dev/null
TTY_DIR=$R

# ---- final states -------------------------------------------------------------

on_tty -- run ok.lua --wait
check_rc "run --wait of a good job on a terminal: exits 0" 0
check_contains "succeeded is green at the end of run --wait" "$OUT" \
	"${ESC}[32msucceeded${ESC}[0m"
check_no_match "succeeded is never yellow" "$OUT" "${ESC}\\[33msucceeded"
OK_ID=$(printf '%s\n' "$OUT" | tr -d '\r' | sed -n 's/^job .* submitted: \([^ ]*\)$/\1/p')
on_tty -- run bad.lua --wait
check_rc "run --wait of a failing job on a terminal: exits 1" 1
check_contains "failed is bold red at the end of run --wait" "$OUT" \
	"${ESC}[1;31mfailed${ESC}[0m"
check_no_match "failed is never yellow" "$OUT" "${ESC}\\[33mfailed"
BAD_ID=$(printf '%s\n' "$OUT" | tr -d '\r' | sed -n 's/^job .* submitted: \([^ ]*\)$/\1/p')
on_tty -- watch "$BAD_ID"
check_rc "watch of a failed job: exits 1" 1
check_contains "watch: failed is bold red" "$OUT" "${ESC}[1;31mfailed${ESC}[0m"
check_match "watch: the time still follows the padded state" \
	"$(printf '%s' "$OUT" | tr -d '\r')" "failed${ESC}\\[0m {13}[0-9:.]+\$"
on_tty -- watch "$OK_ID"
check_contains "watch: succeeded is green" "$OUT" "${ESC}[32msucceeded${ESC}[0m"
nv watch "$OK_ID"
check_no_match "watch on a pipe: no escape sequences" "$OUT$ERR" "$ESC"
on_tty -- status "$BAD_ID"
check_rc "status of a failed job on a terminal: exits 1" 1
check_contains "status: failed is bold red" "$OUT" "${ESC}[1;31mfailed"
check_no_match "status: no colour is reset after a newline (it would colour the next line)" \
	"$(printf '%s\n' "$OUT" | tr -d '\r' | grep -n '' | grep -v "${ESC}\[0m\$" |
		grep "${ESC}\[[0-9;]*[1-9][0-9;]*m[^${ESC}]*\$" || true)" '.'
# the reset goes before the newline: no line starts with one
check_no_match "status of a failed job: no line starts with a colour reset" \
	"$(printf '%s\n' "$OUT" | tr -d '\r')" "^${ESC}\[0m"
on_tty -- status "$OK_ID"
check_rc "status of a good job on a terminal: exits 0" 0
check_contains "status: succeeded is green" "$OUT" "${ESC}[32msucceeded"
check_no_match "status of a good job: no line starts with a colour reset" \
	"$(printf '%s\n' "$OUT" | tr -d '\r')" "^${ESC}\[0m"

# ---- a failure says which job, what its status means, and where its log is

nv_in "$R" run two.lua --wait
check_rc "run --wait of two failing jobs: exits 1" 1
check_match "run --wait prints the run's id first" "$OUT" \
	'^run [a-z0-9-]+-run-[0-9a-z-]+ · recipe two\.lua · project manners'
RUN_ID=$(printf '%s\n' "$OUT" | sed -n 's/^run \([^ ]*\) · recipe.*/\1/p')
check_match "each job's end is headed by its name" "$OUT" '^job gone \('
check_match "... the other's too" "$OUT" '^job noexec \('
check_contains "status 127 is told as command not found" "$OUT" \
	"exited with status 127 (command not found"
check_contains "status 126 is told as not executable" "$OUT" \
	"exited with status 126 (found but not executable"
check_contains "the recipe's hint is shown" "$OUT" "check: ask the data team"
check_match "... and the log's command beside it" "$OUT" \
	'^  its log: navette logs [^ ]+$'
nv_in "$R" watch "$RUN_ID"
check_rc "watch RUN with the id run printed: exits 1 (both failed)" 1
check_match "watch RUN heads each job's end by its name too" "$OUT" '^job gone \('

# ---- the jobs table -------------------------------------------------------------

# (the same job again: --no-reuse, or the first would be reused)
nv_in "$R" run ok.lua --no-reuse
nv_in "$R" run ok.lua --no-reuse
LAST_ID=$(submitted_id)
check_state "the third good job ends" "$LAST_ID" succeeded 30
nv jobs
check_rc "jobs: exits 0" 0
check_match "jobs: AGE and PROJECT columns" "$OUT" \
	'^ID +STATE +AGE +PROJECT +PHASE +NAME$'
WIDEST=$(printf '%s\n' "$OUT" | awk '{ if (length($0) > m) m = length($0) } END { print m }')
check_true "jobs: every line fits 80 columns (widest: $WIDEST)" test "$WIDEST" -le 80
check_match "jobs: ages in seconds" "$OUT" " [0-9]+s +manners +succeeded +ok$"
SHORT=$(printf '%s\n' "$OUT" | awk '$NF == "bad" { print $1 }')
check_true "jobs: the id shown ($SHORT) is shorter than the id" \
	test "${#SHORT}" -lt "${#BAD_ID}"
check_eq "jobs: the id shown is a prefix of the id" "${BAD_ID#"$SHORT"}" \
	"${BAD_ID:${#SHORT}}"
nv status "$SHORT" --json
check_eq "the short id names the job" "$(printf '%s' "$OUT" | json 'd["id"]')" "$BAD_ID"
nv jobs -l
check_match "jobs -l: whole ids" "$OUT" "^$BAD_ID +failed "
# filters
nv jobs --state failed -l
check_match "jobs --state failed: the failed job" "$OUT" "^$BAD_ID +failed "
check_no_match "jobs --state failed: no job that succeeded" "$OUT" " succeeded "
nv jobs --state succeeded,cancelled
check_no_match "jobs --state succeeded,cancelled: no failed job" "$OUT" " failed "
check_match "jobs --state succeeded,cancelled: the good jobs" "$OUT" " succeeded +ok$"
nv jobs --run "$RUN_ID" --json
check_eq "jobs --run: the run's two jobs" \
	"$(printf '%s' "$OUT" | json 'sorted(j["name"] for j in d)')" \
	'["gone", "noexec"]'
nv jobs --state faild
check_rc "jobs --state with a typo: exits 2" 2
check_contains "jobs --state with a typo: did you mean" "$ERR" "did you mean 'failed'?"
nv jobs --project no-such-project
check_eq "jobs --project of no job: says so" "$OUT" "no job matches"
nv_in "$R" jobs --project . --since 1h --json
check_eq "jobs --project . --since 1h: this project's jobs only" \
	"$(printf '%s' "$OUT" | json 'sorted(set(j["project"] for j in d))')" \
	'["manners"]'
nv jobs --since soon
check_rc "jobs --since without an age: exits 2" 2
on_tty -- jobs
check_contains "jobs on a terminal: failed in bold red" "$OUT" "${ESC}[1;31mfailed${ESC}[0m"
check_contains "jobs on a terminal: succeeded in green" "$OUT" "${ESC}[32msucceeded${ESC}[0m"
nv jobs
check_no_match "jobs on a pipe: no colour" "$OUT" "$ESC"

# ---- Ctrl-C while following ---------------------------------------------------

on_tty --interrupt-after running -- run slow.lua --wait
check_rc "Ctrl-C during run --wait: exits 130" 130
SLOW_ID=$(printf '%s\n' "$OUT" | tr -d '\r' | sed -n 's/^job .* submitted: \([^ ]*\)$/\1/p')
check_contains "Ctrl-C: says the job keeps running" "$OUT" "keeps running"
check_contains "Ctrl-C: how to follow it" "$OUT" "navette watch $SLOW_ID"
check_contains "Ctrl-C: how to read its log" "$OUT" "navette logs $SLOW_ID"
check_state "the interrupted job still ends by itself" "$SLOW_ID" succeeded 30

# ---- logs --json and --tail ---------------------------------------------------

nv logs "$OK_ID" --json
check_rc "logs --json: exits 0" 0
check_eq "logs --json: one object per line of the log" \
	"$(printf '%s\n' "$OUT" | python3 -c '
import json, sys
rows = [json.loads(l) for l in sys.stdin if l.strip()]
print(" ".join(r["line"] for r in rows))')" "one two three"
check_eq "logs --json: each with a time, the stream and the job" \
	"$(printf '%s\n' "$OUT" | head -1 | json '[bool(re.match(r"\d{4}-\d\d-\d\dT", d["time"])), d["stream"], d["job"]]')" \
	"[true, \"output\", \"$OK_ID\"]"
nv logs "$OK_ID" --tail 2
check_eq "logs --tail 2: the last two lines" "$OUT" "two
three"
nv logs "$OK_ID" --tail 0
check_eq "logs --tail 0: nothing" "$OUT" ""
nv logs "$OK_ID" --tail x
check_rc "logs --tail x: usage error" 2

# ---- cancel and ambiguity -----------------------------------------------------

nv status "${OK_ID%%-*}"
check_rc "an ambiguous prefix: exits 2" 2
check_contains "an ambiguous prefix: says so" "$ERR" "matches several jobs"
check_contains "an ambiguous prefix: lists a matching job" "$ERR" "$OK_ID"
check_contains "an ambiguous prefix: lists another" "$ERR" "$BAD_ID"

# ---- naming jobs: names, globs, last, run ids (issue 29) ---------------------

nv_in "$R" status ok --json
check_eq "status NAME: the latest job of that name" \
	"$(printf '%s' "$OUT" | json 'd["id"]')" "$LAST_ID"
nv_in "$R" logs ok
check_rc "logs NAME: exits 0" 0
check_contains "logs NAME: that job's log" "$OUT" "three"
nv_in "$R" status last --json
check_eq "status last: the latest job of this project" \
	"$(printf '%s' "$OUT" | json 'd["id"]')" "$SLOW_ID"
nv_in "$R" watch 'g?ne'
check_rc "watch GLOB of one failed job: exits 1" 1
check_contains "watch GLOB: that job" "$OUT" "(gone)"
nv_in "$R" logs "$RUN_ID"
check_rc "logs RUN: a run is not one job, exits 2" 2
check_contains "logs RUN: says it is a run and how many jobs" "$ERR" \
	"is run $RUN_ID, 2 jobs; logs takes one"
check_match "logs RUN: lists each job with its name" "$ERR" \
	"^  manners-[0-9a-z-]+  failed +noexec$"
check_contains "logs RUN: how to follow them all" "$ERR" \
	"navette watch $RUN_ID"
nv_in "$T" status ok
check_rc "a name outside any repository: every project's, exits 0" 0
nv_in "$R" status no-such-name
check_rc "an unknown name: exits 2" 2
check_contains "an unknown name: what a job can be named by" "$ERR" \
	"a glob like train[*], a run id, or \`last\`"
nv_in "$R" completion jobs
check_rc "completion jobs: exits 0" 0
check_eq "completion jobs: last first" "$(printf '%s\n' "$OUT" | head -1)" last
check_match "completion jobs: offers the names" "$OUT" '^noexec$'
check_match "completion jobs: offers the ids" "$OUT" "^$LAST_ID\$"
check_match "completion jobs: offers the run ids" "$OUT" "^$RUN_ID\$"
nv_in "$R" completion bash
check_contains "completion bash: JOB words come from completion jobs" "$OUT" \
	'compgen -W "$(navette completion jobs 2>/dev/null)"'

# ---- command-line errors and help --------------------------------------------

nv run --wiat ok.lua
check_rc "a mistyped option: exits 2" 2
check_contains "a mistyped option: did you mean" "$ERR" "did you mean --wait?"
nv jobs --limt 3
check_contains "jobs --limt: did you mean --limit" "$ERR" "did you mean --limit?"
nv storage ls s3://b --recusive
check_contains "storage ls --recusive: did you mean --recursive" "$ERR" \
	"did you mean --recursive?"
nv wacth x
check_rc "a mistyped command: exits 2" 2
check_contains "a mistyped command: did you mean" "$ERR" "did you mean 'watch'"
nv help
check_rc "help: exits 0" 0
for c in "run RECIPE" "plan RECIPE" "status JOB" "logs JOB" "watch JOB" \
	"cancel JOB" "jobs" "migrate JOB" "creds list" "creds check NAME" \
	"audit verify" "audit show" "storage VERB" "image VERB" "agent" \
	"test FILE" "version" "help"; do
	check_match "help lists '$c' on one line with what it does" "$OUT" \
		"^  navette $c.* [a-z]+"
done
check_eq "help: no line wider than 80 columns" \
	"$(printf '%s\n' "$OUT" | awk 'length > 80')" ""
check_match "help: a long synopsis has what it does on the next line" \
	"$(printf '%s\n' "$OUT" | grep -A1 '^  navette portability ')" \
	'^ {33}may its jobs change node'
nv help --help
check_rc "help --help: exits 0" 0
check_match "help --help: help's usage" "$OUT" '^usage: navette help'
nv agent --help
check_rc "agent --help: exits 0" 0
check_match "agent --help: the agent's usage" "$OUT" '^usage: navette agent'
nv agent -h
check_rc "agent -h: exits 0" 0
agent_usage=$OUT
nv help agent
check_eq "help agent: the same as agent --help" "$OUT" "$agent_usage"

# ---- credentials ----------------------------------------------------------------

C=$(new_repo credsys)
put_file "$C" navette.lua <<'EOF'
return {
  name = "credsys",
  credentials = {
    mac = { kind = "basic", source = "keychain", service = "svc", account = "me" },
    gone = { kind = "bearer", source = "env", env = { token = "NAVETTE_TEST_NO_SUCH_VAR" } },
  },
}
EOF
commit_all "$C" >/dev/null
unset NAVETTE_TEST_NO_SUCH_VAR
nv_in "$C" creds list
check_rc "creds list with a missing credential: exits 3" 3
check_match "creds list: a STATUS column" "$OUT" '^NAME +KIND +SOURCE +AGE +EXPIRES +STATUS$'
check_match "creds list: the missing variable is 'missing'" "$OUT" '^gone +bearer +env .* missing$'
check_no_match "creds list: no whole message in the table" \
	"$(printf '%s\n' "$OUT" | grep -E '^(gone|mac) ')" 'is not set|credential '
check_contains "creds list: the message under the table" "$OUT" \
	"NAVETTE_TEST_NO_SUCH_VAR is not set"
if [ "$(uname)" != Darwin ]; then
	check_match "creds list: the keychain off macOS is 'unavailable'" "$OUT" \
		'^mac +basic +keychain .* unavailable$'
	check_contains "creds list: the keychain exists on macOS only" "$OUT" \
		"keychain source exists on macOS only"
	nv_in "$C" creds check mac
	check_rc "creds check of a keychain credential off macOS: exits 3" 3
	check_contains "creds check: macOS only" "$OUT$ERR" "macOS only"
fi
nv_in "$C" creds list --json
check_eq "creds list --json: a status word per credential" \
	"$(printf '%s' "$OUT" | json '[r["status"] for r in d]')" \
	"$( [ "$(uname)" = Darwin ] && echo '["missing", "not checked"]' ||
		echo '["missing", "unavailable"]')"

# a newcomer's project declares none (this once read a nil global: exit 2)
E=$(new_repo credsnone)
commit_all "$E" >/dev/null
nv_in "$E" creds list
check_rc "creds list in a project with no credentials: exits 0" 0
check_contains "creds list: says the project declares none" "$OUT" \
	"project credsnone declares no credentials"
nv_in "$E" creds list --json
check_rc "creds list --json with no credentials: exits 0" 0
check_eq "creds list --json with no credentials: an empty list" "$OUT" "[]"

# ---- storage: ls --json, progress, exit statuses of services ------------------

start_fake_s3
head -c 3000000 /dev/urandom >"$T/blob"
# (big enough to outlast what the sockets buffer, for the bar's rate)
head -c 6000000 /dev/urandom >"$T/blob6"

nv storage cp "$T/blob" s3://bkt/dir/blob --endpoint "$EP"
check_rc "cp upload: exits 0" 0
check_match "cp upload on a pipe: a one-line summary" "$ERR" \
	'^upload: .*blob -> s3://bkt/dir/blob: 2\.9 MiB in [0-9.]+ s'
check_eq "cp upload on a pipe: one line only" "$(printf '%s\n' "$ERR" | wc -l | tr -d ' ')" 1
nv storage ls s3://bkt/ --recursive --json --endpoint "$EP"
check_rc "ls --json: exits 0" 0
check_eq "ls --json: key, size, url" \
	"$(printf '%s' "$OUT" | json '[(o["key"], o["size"], o["url"]) for o in d]')" \
	'[["dir/blob", 3000000, "s3://bkt/dir/blob"]]'
nv storage ls s3://bkt/ --json --endpoint "$EP"
check_eq "ls --json: a folder as its prefix" \
	"$(printf '%s' "$OUT" | json '[o.get("prefix") for o in d]')" '["dir/"]'

on_tty -- storage cp "$T/blob6" s3://slow-bkt/blob --endpoint "$EP"
check_rc "cp upload on a terminal: exits 0" 0
check_match "cp upload on a terminal: a progress bar with bytes and percent" \
	"$OUT" '#+\.* +[0-9]+% [0-9.]+ [KM]iB/5\.7 MiB'
check_match "cp upload on a terminal: the rate" "$OUT" '[0-9.]+ [KM]iB/s'
check_match "cp upload on a terminal: the time left" "$OUT" 'ETA [0-9]+:[0-9][0-9]'
on_tty -- storage cp s3://slow-bkt/blob "$T/blob.back" --endpoint "$EP"
check_rc "cp download on a terminal: exits 0" 0
check_match "cp download on a terminal: a progress bar" \
	"$OUT" '#+\.* +[0-9]+% [0-9.]+ [KM]iB/5\.7 MiB'
check_match "cp download on a terminal: the time left" "$OUT" 'ETA [0-9]+:[0-9][0-9]'
check_eq "the download is the upload" "$(sha256 "$T/blob.back")" "$(sha256 "$T/blob6")"
nv storage cp s3://bkt/dir/blob "$T/blob.pipe" --endpoint "$EP"
check_match "cp download on a pipe: a one-line summary" "$ERR" \
	'^download: s3://bkt/dir/blob -> .*: 2\.9 MiB in [0-9.]+ s'

# ---- one exit status per class (README, "Exit codes") -------------------------

nv version
check_rc "class 0, success: version" 0
nv_in "$R" run bad.lua --wait
check_rc "class 1, a job failed: run --wait" 1
nv status --frobnicate
check_rc "class 2, usage: an unknown option" 2
nv status no-such-job
check_rc "class 2, not found: an unknown job" 2
nv storage cp s3://bkt/no/such/key "$T/x" --endpoint "$EP"
check_rc "class 2, not found: a missing object (HTTP 404)" 2
NOGIT=$T/nogit
mkdir -p "$NOGIT"
cp "$R/ok.lua" "$NOGIT/"
nv_in "$NOGIT" run ok.lua
check_rc "class 3, refused by navette: not a git repository" 3
nv storage cp "$T/blob" s3://denied-bkt/x --endpoint "$EP"
check_rc "class 3, refused by a service: a signature refused (HTTP 403)" 3
nv storage ls s3://broken-bkt --endpoint "$EP"
check_rc "class 4, a service failing (HTTP 500 after retries)" 4
nv storage ls s3://bkt --endpoint http://127.0.0.1:1
check_rc "class 4, a service unreachable" 4
on_tty --interrupt-after running -- run slow.lua --wait --no-reuse
check_rc "class 130, Ctrl-C while following" 130

# ==== a failure's block and run --wait's board (issue 29, "reading") =========
# A failed job's outcome names it, shows the last 20 lines of its log
# (redacted as `navette logs` redacts), the recipe's hint and the way to
# the whole log; run --wait on a terminal draws watch RUN's board, redrawn
# in place, not a line per phase.

# The job writes 30 lines, line-1 to line-25, a bearer token, line-26 to
# line-29: its last 20 run from line-11 to line-29. (The token is made in
# pieces: a recipe refuses a command line that holds a secret.)
TALK_HALF1=tok$(printf '%s' "$$-$RANDOM" | shasum -a 256 | cut -c1-15)
TALK_HALF2=$(printf '%s' "$RANDOM-$$" | shasum -a 256 | cut -c1-15)
TALK_TOKEN=$TALK_HALF1$TALK_HALF2
put_file "$R" talk.lua <<EOF
local navette = require "navette"
navette.job { name = "talker", failure = { hint = "the talker's notes" },
  command = { "sh", "-c", [[
i=1; while [ \$i -le 25 ]; do echo line-\$i; i=\$((i+1)); done
a=Authoriz; b=Bea
printf '%s: %s %s%s\\n' "\${a}ation" "\${b}rer" $TALK_HALF1 $TALK_HALF2
for i in 26 27 28 29; do echo line-\$i; done
exit 5]] } }
EOF
put_file "$R" trio.lua <<'EOF'
local navette = require "navette"
navette.job { name = "trio-one", command = { "sh", "-c", "sleep 1" } }
navette.job { name = "trio-two", command = { "sh", "-c", "sleep 1" } }
navette.job { name = "trio-bad", command = { "sh", "-c", "sleep 1; exit 2" } }
EOF
commit_all "$R" >/dev/null

# tail_of TEXT: the lines after "  last lines of its log:", while they
# are indented by four spaces
tail_of() {
	printf '%s\n' "$1" | tr -d '\r' |
		awk '/^  last lines of its log:$/ { on = 1; next }
		     on && /^    / { print; next } { on = 0 }'
}

nv_in "$R" run talk.lua --wait
check_rc "run --wait of the talker: exits 1" 1
TALK_ID=$(submitted_id)
check_match "the failure is headed by the job's name and id" "$OUT" \
	"^job talker \\($TALK_ID\\):\$"
check_match "... then where it failed" "$OUT" \
	'^failed at running: the command exited with status 5$'
TAIL=$(tail_of "$OUT")
check_eq "the failure shows exactly 20 lines of the log" \
	"$(printf '%s\n' "$TAIL" | grep -c '')" 20
check_eq "... the first of them line-11" \
	"$(printf '%s\n' "$TAIL" | head -1)" "    line-11"
check_eq "... the last line-29" "$(printf '%s\n' "$TAIL" | tail -1)" \
	"    line-29"
check_match "... the token's line among them, masked" "$TAIL" \
	'^    Authorization: <redacted'
check_no_match "the token is not shown" "$OUT" "$TALK_TOKEN"
check_contains "the recipe's hint is shown" "$OUT" \
	"  check: the talker's notes"
check_contains "... and the way to the whole log" "$OUT" \
	"  its log: navette logs $TALK_ID"

# the tail is redacted as `navette logs` redacts: a secret of the job,
# known here by its fingerprint alone (its value not loaded), is masked.
# The log on disk is written anew holding the value (the agent's filter
# masked it in the log the job wrote).
export XDG_RUNTIME_DIR=$T/xdg
mkdir -p "$XDG_RUNTIME_DIR" && chmod 700 "$XDG_RUNTIME_DIR"
HUB_VALUE=hubvalue$(printf '%s' "$$-$RANDOM-tail" | shasum -a 256 |
	cut -c1-32)
RS=$(NO_PROJECT_FILE=1 new_repo manners-sec)
cat >"$RS/navette.lua" <<EOF
return { name = "manners-sec", default_profile = "dev",
  credentials = {
    hub = { kind = "bearer", source = "env", env = { token = "HUB_TOKEN" } },
  },
  profiles = {
    dev = { backend = "local", storage = "file://$T/store-sec",
            require_pushed = false, credentials = { "hub" } },
  } }
EOF
put_file "$RS" leak.lua <<'EOF'
local navette = require "navette"
navette.job { name = "leak", secrets = { HF_TOKEN = "hub" },
  command = { "sh", "-c", "echo hello; exit 1" } }
EOF
commit_all "$RS" >/dev/null
HUB_TOKEN=$HUB_VALUE nv_in "$RS" run leak.lua --wait
check_rc "run --wait of a failing job with a secret: exits 1" 1
LEAK_ID=$(submitted_id)
LEAK_LOG=$NAVETTE_HOME/jobs/$LEAK_ID/log
check_file "the job's log is in its folder" "$LEAK_LOG"
if [ -f "$LEAK_LOG" ]; then
	{
		i=1
		while [ $i -le 24 ]; do echo "again-$i"; i=$((i + 1)); done
		echo "value=$HUB_VALUE"
	} >"$LEAK_LOG"
fi
unset HUB_TOKEN
nv status "$LEAK_ID"
check_rc "status of the failed job: exits 1" 1
TAIL=$(tail_of "$OUT")
check_eq "status: the tail of the log as it is now" \
	"$(printf '%s\n' "$TAIL" | head -1)" "    again-6"
check_match "status: the job's secret is masked in the tail" "$TAIL" \
	'^    value=<redacted:hub>$'
check_no_match "status: the secret's value is not shown" "$OUT" "$HUB_VALUE"
check_contains "status: the way to the log" "$OUT" "navette logs $LEAK_ID"
if [ -f "$LEAK_LOG" ]; then : >"$LEAK_LOG"; fi
nv status "$LEAK_ID"
check_match "an empty log is said to be empty" "$OUT" '^  its log is empty$'

# screen: what a terminal shows once it has read stdin (line feeds,
# carriage returns, cursor up, erase to the end of the line replayed)
screen() {
	python3 -c '
import re, sys
rows, row, col = [[]], 0, 0
text = sys.stdin.buffer.read().decode("utf-8", "replace")
for tok in re.findall(r"\x1b\[[0-9;]*[A-Za-z]|\r|\n|[^\x1b\r\n]+|\x1b",
                      text):
    if tok == "\n":
        row, col = row + 1, 0
        while len(rows) <= row:
            rows.append([])
    elif tok == "\r":
        col = 0
    elif tok.startswith("\x1b[") and tok[-1] == "A":
        row = max(0, row - int(tok[2:-1] or 1))
    elif tok.startswith("\x1b[") and tok[-1] == "K":
        del rows[row][col:]
    elif not tok.startswith("\x1b"):
        rows[row][col:col + len(tok)] = list(tok)
        col += len(tok)
print("\n".join("".join(r) for r in rows))'
}
on_tty -- run trio.lua --wait
check_rc "run --wait of three jobs on a terminal: exits 1 (one failed)" 1
check_match "run --wait on a terminal redraws in place (cursor up)" "$OUT" \
	"${ESC}\\[[0-9]+A"
SCREEN=$(printf '%s' "$OUT" | screen)
for name in trio-one trio-two trio-bad; do
	check_eq "the board holds one line for $name" \
		"$(printf '%s\n' "$SCREEN" | grep -c "^  $name ")" 1
done
check_match "the board counts the jobs by state" "$SCREEN" \
	'^  3 jobs: (2 succeeded, 1 failed|1 failed, 2 succeeded)$'
check_match "each job's outcome is headed by its name" "$SCREEN" \
	'^job trio-one \('
check_match "... the failed one's too" "$SCREEN" '^job trio-bad \('
nv_in "$R" run trio.lua --wait --no-reuse
check_no_match "run --wait on a pipe: no escape sequences" "$OUT" "$ESC"
PHASES=$(printf '%s\n' "$OUT" | grep -c '^  trio-one ')
check_true "run --wait on a pipe: still a line per phase ($PHASES)" \
	test "$PHASES" -gt 3

finish
