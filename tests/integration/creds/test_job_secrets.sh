#!/usr/bin/env bash
# A job's secrets (issue 26, point 4): `secrets = { HF_TOKEN = "hub" }`
# gives a local job the value of credential hub as a file, mode 0400, at
# $HF_TOKEN_FILE in $NAVETTE_SECRETS, mounted in its sandbox; the value is
# in no environment, log, spec, jobs.db, run record, audit line or plan,
# and the folder is gone once the job ends (run, cancelled before it
# started, or failed because the folder vanished). Bad declarations are
# refused, naming what to fix.
set -eu -o pipefail
. "$(dirname "$0")/../lib.sh"
set +e # each check reports its own failure; finish sets the status

# the secrets' folder is made in $XDG_RUNTIME_DIR when it is the user's
export XDG_RUNTIME_DIR=$T/xdg
mkdir -p "$XDG_RUNTIME_DIR" && chmod 700 "$XDG_RUNTIME_DIR"
SECRETS_ROOT=$XDG_RUNTIME_DIR/navette-secrets

# A value shaped like no known token (only the loaded value masks it).
HUB_VALUE=hubvalue$(printf '%s' "$$-$RANDOM-$(date +%s)" |
	shasum -a 256 | cut -c1-32)
HUB_SHA=$(printf '%s' "$HUB_VALUE" | shasum -a 256 | cut -d' ' -f1)

R=$(NO_PROJECT_FILE=1 new_repo sec)
cat >"$R/navette.lua" <<EOF
return { name = "sec", default_profile = "dev",
  credentials = {
    hub = { kind = "bearer", source = "env", env = { token = "HUB_TOKEN" } },
    other = { kind = "bearer", source = "env", env = { token = "OTHER" } },
  },
  profiles = {
    dev = { backend = "local", storage = "file://$T/store",
            require_pushed = false, credentials = { "hub" } },
    side = { backend = "local", storage = "file://$T/store",
             require_pushed = false, credentials = { "other" } },
  } }
EOF
# The job: the file's mode, the value's sha256, whether the environment
# holds the value, the value itself (which the log must mask).
cat >"$R/reader.lua" <<'EOF'
local navette = require "navette"
navette.job { name = "reader", secrets = { HF_TOKEN = "hub" },
  command = { "sh", "-c", [[
echo "dir=$NAVETTE_SECRETS"
echo "file=$HF_TOKEN_FILE"
echo "mode=$(stat -c %a "$HF_TOKEN_FILE" 2>/dev/null || stat -f %Lp "$HF_TOKEN_FILE")"
echo "sha=$(shasum -a 256 "$HF_TOKEN_FILE" | cut -d' ' -f1)"
if env | grep -qF "$(cat "$HF_TOKEN_FILE")"; then echo env=holds-value; else echo env=clean; fi
if ( : > "$NAVETTE_SECRETS/new" ) 2>/dev/null; then echo folder=writable; else echo folder=read-only; fi
printf 'value=%s\n' "$(cat "$HF_TOKEN_FILE")"
]] } }
EOF
commit_all "$R" >/dev/null

# ---- plan: the line, and nothing loaded (the variable is not even set)
unset HUB_TOKEN
nv_in "$R" plan reader.lua --launcher
check_rc "plan of a job with secrets succeeds without the credential" 0
check_contains "plan says where the secret comes from" "$OUT" \
	'HF_TOKEN <- credential hub (file $NAVETTE_SECRETS/HF_TOKEN)'
check_contains "plan's launcher names the file, not a value" "$OUT" \
	'HF_TOKEN_FILE="$NAVETTE_SECRETS/HF_TOKEN"'
check_absent "plan made no secrets folder" "$SECRETS_ROOT"

# ---- run
export HUB_TOKEN=$HUB_VALUE
nv_in "$R" run reader.lua
check_rc "run of a job with secrets" 0
ID=$(submitted_id)
# the agent itself removes the folder as the job ends (before any read of
# the jobs, which would sweep a leftover): watched through its log alone
agent_ended() { grep -q "job $ID: succeeded" "$NAVETTE_HOME/agent.log" 2>/dev/null; }
check_true "the agent ended the job" wait_for 60 agent_ended
check_absent "the agent removed the secrets folder as the job ended" \
	"$SECRETS_ROOT/$ID"
check_state "the job succeeds" "$ID" succeeded 60
LOG=$("$NAVETTE" logs "$ID" 2>&1)
check_match "the job read the file at \$HF_TOKEN_FILE" "$LOG" \
	"^file=$SECRETS_ROOT/$ID/HF_TOKEN\$"
check_match "the file is mode 0400" "$LOG" '^mode=400$'
check_match "the file holds the credential's value" "$LOG" "^sha=$HUB_SHA\$"
check_match "the environment does not hold the value" "$LOG" '^env=clean$'
check_match "the folder is read-only in the sandbox" "$LOG" \
	'^folder=read-only$'
check_match "the log masks the value" "$LOG" '^value=<redacted'
check_absent "the secrets folder is gone after the job" "$SECRETS_ROOT/$ID"
STORE_LOG=$(cat "$T/store/sec/$ID/navette.log" 2>/dev/null || true)
check_match "the published log masks the value" "$STORE_LOG" \
	'^value=<redacted'
LEAKS=$(grep -rlaF -- "$HUB_VALUE" "$NAVETTE_HOME" "$T/store" "$R" \
	"$XDG_RUNTIME_DIR" 2>/dev/null || true)
check_eq "the value is nowhere in NAVETTE_HOME, the store or the repo" \
	"$LEAKS" ""
ROW=$(python3 -c 'import json, sqlite3, sys
c = sqlite3.connect(sys.argv[1])
spec = json.loads(c.execute("select spec from jobs where id = ?", (sys.argv[2],)).fetchone()[0])
print(json.dumps(spec.get("secrets"), sort_keys=True))' "$NAVETTE_HOME/jobs.db" "$ID")
check_eq "jobs.db names the secret and its credential" "$ROW" \
	'[{"credential": "hub", "kind": "bearer", "name": "HF_TOKEN"}]'
RECORD=$(cat "$T/store/sec/$ID/navette-run.json" 2>/dev/null)
check_eq "the run record names the secrets, not their values" \
	"$(printf '%s' "$RECORD" | json 'd["secrets"]')" \
	'[{"credential": "hub", "kind": "bearer", "name": "HF_TOKEN"}]'
AUDIT=$(grep -h '"secret.deliver"' "$NAVETTE_HOME"/audit/*.jsonl)
check_eq "one audit line per delivery: job, variable, credential, backend" \
	"$(printf '%s' "$AUDIT" |
		json '[d["job"], d["target"], d["detail"]]')" \
	"[\"$ID\", \"HF_TOKEN\", \"credential hub, backend local\"]"

# ---- a folder that is gone when the job starts: it fails before running;
# a job cancelled before it started: its folder is removed
cat >"$R/wait.lua" <<'EOF'
local navette = require "navette"
local first = navette.job { name = "first", command = { "sleep", "3" } }
navette.job { name = "lost", after = { first }, secrets = { T = "hub" },
  command = { "sh", "-c", "echo ran" } }
navette.job { name = "dropped", after = { first }, secrets = { T = "hub" },
  command = { "sh", "-c", "echo ran" } }
EOF
commit_all "$R" >/dev/null
nv_in "$R" run wait.lua
check_rc "run of jobs that wait" 0
LOST=$(sub_id lost)
DROPPED=$(sub_id dropped)
check_file "a waiting job's secret is written at submission" \
	"$SECRETS_ROOT/$LOST/T"
rm -rf "$SECRETS_ROOT/$LOST"
nv cancel "$DROPPED"
check_state "the job cancelled while waiting ends cancelled" "$DROPPED" \
	cancelled 20
check_absent "its secrets folder is removed" "$SECRETS_ROOT/$DROPPED"
check_state "the job whose secrets are gone fails" "$LOST" failed 60
nv status "$LOST"
check_match "... before running, saying the secret is gone" "$OUT$ERR" \
	"secret T is gone"
check_no_match "... its command never ran" "$("$NAVETTE" logs "$LOST" 2>&1)" \
	'^ran$'

# ---- a job the queue cancels (it waited for a job that failed): its
# folder is removed when the jobs are next read
cat >"$R/orphan.lua" <<'EOF'
local navette = require "navette"
local bad = navette.job { name = "bad", command = { "false" } }
navette.job { name = "orphan", after = { bad }, secrets = { T = "hub" },
  command = { "sh", "-c", "echo ran" } }
EOF
commit_all "$R" >/dev/null
nv_in "$R" run orphan.lua
ORPHAN=$(sub_id orphan)
check_file "the orphan's secret is written at submission" \
	"$SECRETS_ROOT/$ORPHAN/T"
check_state "the job that waited for a failed one ends cancelled" \
	"$ORPHAN" cancelled 60
nv status "$ORPHAN"
check_absent "its secrets folder is removed once the jobs are read" \
	"$SECRETS_ROOT/$ORPHAN"

# ---- refusals
refused() { # WHAT RECIPE-BODY PATTERN
	printf 'local navette = require "navette"\n%s\n' "$2" >"$R/bad.lua"
	commit_all "$R" >/dev/null
	nv_in "$R" plan bad.lua
	if [ "$RC" = 0 ]; then
		fail "$1 (plan accepted it)"
	else
		check_match "$1" "$ERR" "$3"
	fi
}
refused "a reserved name (PATH) is refused" \
	'navette.job { name = "b", command = { "true" }, secrets = { PATH = "hub" } }' \
	"secret name 'PATH' is not allowed"
refused "a NAVETTE_* name is refused" \
	'navette.job { name = "b", command = { "true" }, secrets = { NAVETTE_X = "hub" } }' \
	"secret name 'NAVETTE_X' is not allowed"
refused "an LD_* name is refused" \
	'navette.job { name = "b", command = { "true" }, secrets = { LD_PRELOAD = "hub" } }' \
	"secret name 'LD_PRELOAD' is not allowed"
refused "a name that is not a variable name is refused" \
	'navette.job { name = "b", command = { "true" }, secrets = { ["A-B"] = "hub" } }' \
	"secret name 'A-B' is not allowed"
refused "a value that is not a credential name is refused" \
	'navette.job { name = "b", command = { "true" }, secrets = { TOK = "sk live 123" } }' \
	"'secrets.TOK' must be the name of a credential"
refused "a secret whose variable env declares too is refused" \
	'navette.job { name = "b", command = { "true" }, env = { TOK_FILE = "x" }, secrets = { TOK = "hub" } }' \
	"env declares TOK_FILE too"
refused "more than 32 secrets are refused" \
	'local s = {} for i = 1, 33 do s["S" .. i] = "hub" end
navette.job { name = "b", command = { "true" }, secrets = s }' \
	"declares 33 secrets \\(at most 32\\)"
refused "a credential the profile does not declare is refused, named" \
	'navette.job { name = "b", command = { "true" }, secrets = { TOK = "nope" } }' \
	"secret TOK names the credential 'nope', which profile 'dev' does not declare"
check_match "... listing the profile's credentials" "$ERR" \
	"the profile's credentials: hub"
refused "another profile's credential is refused" \
	'navette.job { name = "b", command = { "true" }, secrets = { TOK = "other" } }' \
	"credential 'other' belongs to profile"

finish
