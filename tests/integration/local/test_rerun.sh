# `navette rerun RUN --failed`: a sweep of six jobs where two fail runs
# exactly those two again, as a new run, at the old run's commit while
# HEAD has moved on; the four that succeeded are not run again. A job
# that takes the output of one that succeeded reads it as published, and
# one that runs after a job run again waits for the new one. A run with
# no failure, a run still going, a run that is none, another project's
# run and `rerun` without --failed are refused.
set -eu -o pipefail
. "$(dirname "$0")/../lib.sh"
set +e # each check reports its own failure; finish sets the status

# Whether a job fails is read from $T/fails, outside the commit, so that
# the test makes the rerun pass; the local sandbox hides /tmp from a job
# (test_local_sandbox covers it), so these jobs run without one.
export NAVETTE_LOCAL_SANDBOX=off
export NV_TIME_LIMIT=120
# (the test's status kept through stop_local_jobs)
trap 'st=$?; stop_local_jobs; (exit "$st"); _cleanup' EXIT

FAILS=$T/fails
R=$(new_repo rerun)
echo one >"$R/marker.txt"
# work[n=N] fails when N is a line of $FAILS; its output is the marker of
# the commit it ran
put_file "$R" sweep.lua <<EOF
local navette = require "navette"
navette.sweep {
  job = {
    name = "work",
    command = { "sh", "-c", "if grep -qx \"\$NAVETTE_PARAM_N\" '$FAILS'; "
      .. "then echo \"work \$NAVETTE_PARAM_N fails at \$(cat marker.txt)\"; "
      .. "exit 3; fi; cp marker.txt \"\$NAVETTE_OUTPUTS/marker.txt\"" },
  },
  matrix = { n = { 1, 2, 3, 4, 5, 6 } },
}
EOF
# prep succeeds; use reads prep's output and fails when "use" is in
# $FAILS; last runs after use (so ends cancelled when use fails)
put_file "$R" chain.lua <<EOF
local navette = require "navette"
local prep = navette.job {
  name = "prep",
  command = { "sh", "-c", "echo data-\$RANDOM >\"\$NAVETTE_OUTPUTS/data.txt\"" },
}
local use = navette.job {
  name = "use",
  inputs = { data = prep:output("data.txt") },
  command = { "sh", "-c", "if grep -qx use '$FAILS'; then exit 4; fi; "
    .. "cp \"\$NAVETTE_INPUTS/data\" \"\$NAVETTE_OUTPUTS/seen.txt\"" },
}
navette.job { name = "last", after = { use }, command = { "true" } }
EOF
# reader reads an object of the store, and fails as use does
DATA=$NAVETTE_HOME/store/rerun/data/in.txt
mkdir -p "$(dirname "$DATA")"
echo first >"$DATA"
put_file "$R" input.lua <<EOF
local navette = require "navette"
navette.job {
  name = "reader",
  inputs = { data = "file://$DATA" },
  command = { "sh", "-c", "if grep -qx reader '$FAILS'; then exit 5; fi" },
}
EOF
put_file "$R" slow.lua <<'EOF'
local navette = require "navette"
navette.job { name = "slow", command = { "sleep", "60" } }
EOF
C1=$(commit_all "$R")

# run_id: the run id the last run or rerun printed
run_id() {
	printf '%s\n' "$OUT" | sed -n 's/^run \([^ ]*\) · recipe.*/\1/p' | head -1
}
# spec ID EXPR: EXPR of the stored spec of job ID (d), from jobs.db
spec() {
	python3 -c '
import json, sqlite3, sys
row = sqlite3.connect(sys.argv[1]).execute(
    "SELECT spec FROM jobs WHERE id=?", (sys.argv[2],)).fetchone()
print(json.dumps(sys.argv[3] and eval(sys.argv[3], {"d": json.loads(row[0])})))
' "$NAVETTE_HOME/jobs.db" "$1" "$2" 2>&1
}
# run_jobs RUN: "name=state" of each job of RUN, sorted, one line
run_jobs() {
	"$NAVETTE" jobs --run "$1" --json --limit 1000 |
		json '" ".join(sorted(j["name"] + "=" + j["state"] for j in d))'
}
# id_of RUN NAME: the id of job NAME of RUN
id_of() {
	"$NAVETTE" jobs --run "$1" --json --limit 1000 -l |
		json "[j['id'] for j in d if j['name'] == '$2'][0]"
}

# ---- a sweep where two of six fail ---------------------------------------
printf '2\n5\n' >"$FAILS"
nv_in "$R" run sweep.lua --wait
check_rc "the sweep: two of six fail, run --wait exits 1" 1
RUN1=$(run_id)
check_match "run printed its id" "$RUN1" '^rerun-run-'
check_eq "the sweep: 2 and 5 failed, the others succeeded" "$(run_jobs "$RUN1")" \
	"work[n=1]=succeeded work[n=2]=failed work[n=3]=succeeded work[n=4]=succeeded work[n=5]=failed work[n=6]=succeeded"
OLD2=$(id_of "$RUN1" 'work[n=2]')
OLD5=$(id_of "$RUN1" 'work[n=5]')

# HEAD moves on: another marker, a recipe that declares work otherwise
# (read at HEAD, the rerun would be refused), and nothing fails any more
echo two >"$R/marker.txt"
perl -pi -e 's/then echo/then echo v2;/' "$R/sweep.lua"
C2=$(commit_all "$R")
check_ne "HEAD has moved on" "$C2" "$C1"
: >"$FAILS"

nv_in "$R" rerun "$RUN1"
check_rc "rerun without --failed: a usage error" 2
check_contains "... saying --failed is needed" "$ERR" "--failed"

COUNT_BEFORE=$("$NAVETTE" jobs --json --limit 1000 | json 'len(d)')
nv_in "$R" rerun "$RUN1" --failed --wait
check_rc "rerun --failed --wait: both pass now, exits 0" 0
RUN2=$(run_id)
check_match "rerun printed a new run id" "$RUN2" '^rerun-run-'
check_ne "... not the old one" "$RUN2" "$RUN1"
check_contains "the run line says what it reruns" "$OUT" "rerun of $RUN1"
check_eq "the new run: exactly the two failed jobs, succeeded" \
	"$(run_jobs "$RUN2")" "work[n=2]=succeeded work[n=5]=succeeded"
check_eq "only two jobs were added (the four succeeded ran once)" \
	"$("$NAVETTE" jobs --json --limit 1000 | json 'len(d)')" \
	"$((COUNT_BEFORE + 2))"
check_eq "the old run still has its six jobs" "$(run_jobs "$RUN1" | wc -w | tr -d ' ')" 6
NEW2=$(id_of "$RUN2" 'work[n=2]')
NEW5=$(id_of "$RUN2" 'work[n=5]')
check_ne "the rerun job has a new id" "$NEW2" "$OLD2"
check_eq "its commit is the old run's, not HEAD" "$(spec "$NEW2" 'd["commit"]')" "\"$C1\""
check_eq "... for both" "$(spec "$NEW5" 'd["commit"]')" "\"$C1\""
check_eq "it ran the old commit's tree" \
	"$(cat "$(store_dir rerun "$NEW2")/marker.txt" 2>&1)" one
check_eq "its spec links to the job it reruns" "$(spec "$NEW2" 'd["rerun_of"]')" "\"$OLD2\""
check_eq "... the other's too" "$(spec "$NEW5" 'd["rerun_of"]')" "\"$OLD5\""
check_eq "its spec's run is the new run" "$(spec "$NEW2" 'd["run"]')" "\"$RUN2\""
nv_in "$R" status "$NEW2"
check_contains "status shows the link" "$OUT" "rerun   of job $OLD2"

# ---- nothing to rerun ------------------------------------------------------
nv_in "$R" rerun "$RUN2" --failed
check_rc "a run with no failure is refused (exit 3)" 3
check_contains "... nothing to rerun, all succeeded" "$ERR" \
	"nothing to rerun: all 2 jobs of $RUN2 succeeded"
check_eq "... and submits nothing" \
	"$("$NAVETTE" jobs --json --limit 1000 | json 'len(d)')" \
	"$((COUNT_BEFORE + 2))"

nv_in "$R" rerun last --failed
check_rc "rerun last: the run of this project's latest job, refused too" 3
check_contains "... it is that run" "$ERR" \
	"nothing to rerun: all 2 jobs of $RUN2 succeeded"

nv_in "$R" rerun rerun-run-3m0000-00000 --failed
check_rc "a run id that names no run: exit 2" 2
check_contains "... says so" "$ERR" "no run"

O=$(new_repo other)
commit_all "$O" >/dev/null
nv_in "$O" rerun "$RUN1" --failed
check_rc "another project's run is refused (exit 3)" 3
check_contains "... naming both projects" "$ERR" "is of project rerun, not of this folder's project (other)"

# ---- a chain: a succeeded producer is read as published ------------------
echo use >"$FAILS"
nv_in "$R" run chain.lua --wait
check_rc "the chain: use fails, run --wait exits 1" 1
RUN3=$(run_id)
check_eq "the chain: prep succeeded, use failed, last cancelled" \
	"$(run_jobs "$RUN3")" "last=cancelled prep=succeeded use=failed"
PREP=$(id_of "$RUN3" prep)
: >"$FAILS"
nv_in "$R" rerun "$RUN3" --failed --wait
check_rc "rerun of the chain: exits 0" 0
RUN4=$(run_id)
check_eq "the rerun: use and last, not prep" "$(run_jobs "$RUN4")" \
	"last=succeeded use=succeeded"
USE=$(id_of "$RUN4" use)
check_eq "use reads the output of the old prep" \
	"$(spec "$USE" '[i["from"] for i in d["inputs"]]')" "[\"$PREP\"]"
check_eq "... and no longer waits for it (it succeeded)" \
	"$(spec "$USE" 'd.get("after")')" null
check_eq "last waits for the new use" \
	"$(spec "$(id_of "$RUN4" last)" 'd["after"]')" "[\"$USE\"]"
check_eq "use saw what prep published" \
	"$(cat "$(store_dir rerun "$USE")/seen.txt" 2>&1)" \
	"$(cat "$(store_dir rerun "$PREP")/data.txt" 2>&1)"

# ---- an input that changed since ------------------------------------------
echo reader >"$FAILS"
nv_in "$R" run input.lua --wait
check_rc "reader fails" 1
RUN6=$(run_id)
echo second >"$DATA"
: >"$FAILS"
nv_in "$R" rerun "$RUN6" --failed
check_rc "an input changed since the run: refused (exit 3)" 3
check_contains "... naming it" "$ERR" "input 'data' (file://$DATA) changed since run $RUN6"
echo first >"$DATA"
nv_in "$R" rerun "$RUN6" --failed --wait
check_rc "... and run again once it holds what it held" 0

# ---- a run still going -----------------------------------------------------
nv_in "$R" run slow.lua
RUN5=$(run_id)
nv_in "$R" rerun "$RUN5" --failed
check_rc "a run whose job is running is refused (exit 3)" 3
check_contains "... wait or cancel" "$ERR" "wait for it"
nv cancel "$(id_of "$RUN5" slow)"

finish
