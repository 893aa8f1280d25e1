# Workflows on the local backend. navette.sweep: a 2x3 matrix less one
# excluded combination, plus one included, runs as six jobs; each job
# sees its parameters as NAVETTE_PARAM_* and its run record carries them;
# the names say the parameters; `plan` shows the jobs; a malformed sweep
# is a recipe error naming the key, with nothing submitted. `after`: a
# fan-in job starts only once every job of the sweep has ended
# succeeded (a 2x3 sweep's six outputs reach a fan-in job, each with the
# sha256 its producer's record lists); a cycle is refused, named, with
# nothing submitted; a job after a failed one, and a job after that one, end
# cancelled at accepted naming the job they waited for. job:output(): a
# job takes another's output as an input, after it, with the sha256 its
# run record lists: a fan-in reads each part; an output never written, or
# changed in the store after it was published, fails the consumer at
# data_ready naming it.
# Every wait is bounded (NV_TIME_LIMIT for navette, bounded for the rest):
# a hang fails its check, and the jobs and agent are stopped on exit.
set -eu -o pipefail
. "$(dirname "$0")/../lib.sh"
set +e # each check reports its own failure; finish sets the status
NV_TIME_LIMIT=90
BG_PIDS=
trap 'st=$?; for p in $BG_PIDS; do kill "$p" 2>/dev/null; done
stop_local_jobs; (exit "$st"); _cleanup' EXIT
# The job's processes are named by the pids they print, and it waits on
# files under $T: both are the host's, which a job's sandbox hides (its
# own pid namespace, a private /tmp; test_local_sandbox covers it), so
# these jobs run without one. TODO: gates in the job's HOME and pids
# mapped through /proc/PID/status's NSpid, to run them sandboxed.
export NAVETTE_LOCAL_SANDBOX=off
HERE=$(cd "$(dirname "$0")" && pwd)

R=$(new_repo sweep)
put_file "$R" sweep.lua <<'EOF2'
local navette = require "navette"
navette.sweep {
  job = {
    name = "train",
    command = { "sh", "-c",
      'printf "%s %s\\n" "$NAVETTE_PARAM_LR" "$NAVETTE_PARAM_SEED" '
      .. '> "$NAVETTE_OUTPUTS/params.txt"' },
    success = { outputs = { "params.txt" } },
  },
  matrix = { lr = { 0.1, 0.01 }, seed = { 1, 2, 3 } },
  exclude = { { lr = 0.01, seed = 3 } },
  include = { { lr = 0.5, seed = 7 } },
}
EOF2
put_file "$R" graph.lua <<'EOF2'
local navette = require "navette"
local parts = navette.sweep {
  job = { name = "part", command = { "sh", "-c",
    'sleep 2; date +%s > "$NAVETTE_OUTPUTS/end.txt"' } },
  matrix = { n = { 1, 2, 3 } },
}
navette.job { name = "join", after = { parts },
  command = { "sh", "-c", 'date +%s > "$NAVETTE_OUTPUTS/start.txt"' } }
local broken = navette.job { name = "broken", command = { "false" } }
local next = navette.job { name = "next", after = { broken },
                           command = { "true" } }
navette.job { name = "then", after = { next }, command = { "true" } }
EOF2
put_file "$R" cycle.lua <<'EOF2'
local navette = require "navette"
navette.job { name = "fetch", after = { "merge" }, command = { "true" } }
navette.job { name = "clean", after = { "fetch" }, command = { "true" } }
navette.job { name = "merge", after = { "clean" }, command = { "true" } }
EOF2
put_file "$R" flow.lua <<'EOF2'
local navette = require "navette"
local pieces = navette.sweep {
  job = { name = "piece", command = { "sh", "-c",
    'echo "piece $NAVETTE_PARAM_N" > "$NAVETTE_OUTPUTS/piece.txt"' } },
  matrix = { n = { 1, 2 } },
}
local gate = navette.job { name = "gate", env = { GO = "@GO@" },
  command = { "sh", "-c", 'while [ ! -e "$GO" ]; do sleep 0.2; done' } }
navette.job { name = "merge", command = { "sh", "-c",
  'cat "$NAVETTE_INPUTS/a" "$NAVETTE_INPUTS/b" > "$NAVETTE_OUTPUTS/all.txt"' },
  inputs = { a = pieces[1]:output("piece.txt"),
             b = pieces[2]:output("piece.txt") } }
navette.job { name = "gather", command = { "sh", "-c",
  'cat "$NAVETTE_INPUTS/all/1" "$NAVETTE_INPUTS/all/2" > "$NAVETTE_OUTPUTS/all.txt"' },
  inputs = { all = navette.outputs(pieces, "piece.txt") } }
navette.job { name = "missing", command = { "true" },
  inputs = { x = pieces[1]:output("nothing.txt") } }
navette.job { name = "tampered", command = { "true" }, after = { gate },
  inputs = { x = pieces[2]:output("piece.txt") } }
EOF2
# the gate job waits for this file (a job sees only its declared env)
GO=$T/go
GO=$GO perl -pe 's/\@GO\@/$ENV{GO}/' "$R/flow.lua" >"$T/flow.lua"
mv "$T/flow.lua" "$R/flow.lua"
# a sweep whose jobs wait for a file too (watch RUN on a terminal)
put_file "$R" held.lua <<EOF2
local navette = require "navette"
navette.sweep {
  job = { name = "held", env = { GATE = "$T/held" },
    command = { "sh", "-c", 'while [ ! -e "\$GATE" ]; do sleep 0.2; done' } },
  matrix = { n = { 1, 2, 3 } },
}
EOF2
# a 2x3 sweep and a fan-in job that takes the six outputs
put_file "$R" six.lua <<'EOF2'
local navette = require "navette"
local runs = navette.sweep {
  job = { name = "fit", success = { outputs = { "score.txt" } },
    command = { "sh", "-c", 'echo "lr=$NAVETTE_PARAM_LR seed=$NAVETTE_PARAM_SEED" > "$NAVETTE_OUTPUTS/score.txt"' } },
  matrix = { lr = { 0.1, 0.01 }, seed = { 1, 2, 3 } },
}
navette.job { name = "best", success = { outputs = { "seen.txt" } },
  inputs = { scores = navette.outputs(runs, "score.txt") },
  command = { "sh", "-c", 'for i in 1 2 3 4 5 6; do shasum -a 256 "$NAVETTE_INPUTS/scores/$i" | cut -c1-64; done > "$NAVETTE_OUTPUTS/seen.txt"' } }
EOF2
put_file "$R" bad.lua <<'EOF2'
local navette = require "navette"
navette.sweep {
  job = { name = "train", command = { "true" } },
  matrix = { lr = { 0.1 } },
  exclude = { { seeds = 1 } },
}
EOF2
commit_all "$R" >/dev/null

nv_in "$R" plan sweep.lua
check_rc "plan of the sweep: exit 0" 0
check_contains "plan names a job by its parameters" "$OUT" \
	"train[lr=0.01,seed=2]"
check_eq "plan shows six jobs" \
	"$(printf '%s\n' "$OUT" | grep -c '^job train\[')" 6

nv_in "$R" run bad.lua
check_rc "a malformed sweep: exit 2 (recipe error)" 2
check_contains "the error names the key" "$ERR" "'seeds' is not a key"
check_contains "the error names the recipe line" "$ERR" "bad.lua:2"
check_eq "nothing was submitted" "$("$NAVETTE" jobs --json | json 'len(d)')" 0

nv_in "$R" run sweep.lua --wait
check_rc "the sweep runs: exit 0" 0
LIST=$("$NAVETTE" jobs --json)
check_eq "six jobs" "$(printf '%s' "$LIST" | json 'len(d)')" 6
check_eq "their names" \
	"$(printf '%s' "$LIST" | json '" ".join(sorted(j["name"] for j in d))')" \
	"train[lr=0.01,seed=1] train[lr=0.01,seed=2] train[lr=0.1,seed=1] train[lr=0.1,seed=2] train[lr=0.1,seed=3] train[lr=0.5,seed=7]"
for row in "0.01 2" "0.5 7" "0.1 3"; do
	set -- $row
	ID=$(printf '%s' "$LIST" | json "[j['id'] for j in d if j['name'] == 'train[lr=$1,seed=$2]'][0]")
	check_eq "train[lr=$1,seed=$2] succeeded" "$(job_state "$ID")" succeeded
	check_eq "train[lr=$1,seed=$2] saw its parameters" \
		"$(cat "$(store_dir sweep "$ID")/params.txt" 2>&1)" "$1 $2"
	check_eq "train[lr=$1,seed=$2]: its run record has them" \
		"$(json 'd["params"]["lr"] + " " + d["params"]["seed"]' \
			<"$(store_dir sweep "$ID")/navette-run.json")" "$1 $2"
done

# ---- watch RUN -----------------------------------------------------------------

nv_in "$R" run sweep.lua
check_rc "the sweep again: exit 0" 0
check_eq "the sweep again: its six jobs are reused (nothing changed)" \
	"$(printf '%s\n' "$OUT" | grep -c '^reused  train\[')" 6
# (--no-reuse: run them again, to follow a run of six)
nv_in "$R" run sweep.lua --no-reuse
check_rc "the sweep again, --no-reuse, without waiting: exit 0" 0
RUN=$(printf '%s\n' "$OUT" | sed -n 's/^follow with: navette watch \([^ ]*\)  (the run: its 6 jobs)$/\1/p')
check_match "run prints the run's id to watch" "$RUN" '^sweep-'
nv watch "${RUN%??????}"
check_rc "watch RUN (a prefix of it): exit 0 when every job succeeded" 0
check_contains "it names the run" "$OUT" "run $RUN (6 jobs)"
check_eq "it shows each job's end, labelled with its name" \
	"$(printf '%s\n' "$OUT" | grep -c '^  train\[.*\] *succeeded ')" 6
# on a terminal: a line per job redrawn in place, under a count by state
nv_in "$R" run held.lua
HELD=$(printf '%s\n' "$OUT" | sed -n 's/^follow with: navette watch \([^ ]*\)  (the run: its 3 jobs)$/\1/p')
TERM=xterm bounded 90 python3 "$HERE/../pty_run.py" --timeout 60 -- "$NAVETTE" \
	watch "$HELD" >"$T/board.out" 2>&1 &
BOARD=$!
BG_PIDS="$BG_PIDS $BOARD"
wait_for 20 grep -q 'held\[n=3\] *running' "$T/board.out"
: >"$T/held"
wait "$BOARD"
check_eq "watch RUN on a terminal: exit 0" "$?" 0
BOARD_OUT=$(cat "$T/board.out")
check_contains "the board shows each job running" "$BOARD_OUT" "held[n=2]"
check_contains "the board is redrawn in place (4 lines up)" "$BOARD_OUT" \
	"$(printf '\033[4A')"
check_contains "the count by state while they run" "$BOARD_OUT" \
	"3 jobs: 3 running"
check_contains "the count by state at the end" "$BOARD_OUT" \
	"3 jobs: 3 succeeded"
check_contains "a job's line shows its current phase" "$BOARD_OUT" \
	"running    logs_visible"
check_eq "no phase is printed line by line on a terminal" \
	"$(printf '%s\n' "$BOARD_OUT" | grep -c ' accepted ')" 0
LIST=$("$NAVETTE" jobs --json)
ONE=$(printf '%s' "$LIST" | json "[j['id'] for j in d if j['name'] == 'train[lr=0.5,seed=7]'][0]")
check_eq "the run record carries the run's id" \
	"$(json 'd["run"]' <"$(store_dir sweep "$ONE")/navette-run.json")" "$RUN"
nv status "$ONE" --json
check_eq "status --json names the job's run" \
	"$(printf '%s' "$OUT" | json 'd["run"]')" "$RUN"

# ---- after ---------------------------------------------------------------------

nv_in "$R" plan graph.lua
check_rc "plan of a graph: exit 0" 0
check_contains "plan shows the graph" "$OUT" "part[n=2] -> join"
check_contains "plan shows what a job runs after" "$OUT" \
	"after    part[n=1], part[n=2], part[n=3]"
nv_in "$R" plan cycle.lua
check_rc "plan of a cycle: a recipe error (exit 2)" 2
check_contains "plan names the cycle" "$ERR" \
	"form a cycle: fetch runs after merge, which runs after clean, which runs after fetch"
nv_in "$R" run cycle.lua
check_rc "run of a cycle: exit 2" 2
check_eq "run of a cycle: nothing submitted" \
	"$("$NAVETTE" jobs --json | json '[j["name"] for j in d if j["name"] in ("fetch", "clean", "merge")]')" "[]"
nv_in "$R" plan flow.lua --json
check_eq "plan --json: the graph's edges" \
	"$(printf '%s' "$OUT" | json '" ".join(e["from"] + ">" + e["to"] + ":" + ",".join(e["inputs"]) for e in d["graph"])')" \
	"piece[n=1]>merge:piece.txt as a piece[n=2]>merge:piece.txt as b piece[n=1]>gather:piece.txt as all/1 piece[n=2]>gather:piece.txt as all/2 piece[n=1]>missing:nothing.txt as x gate>tampered: piece[n=2]>tampered:piece.txt as x"
nv_in "$R" run graph.lua --wait
check_rc "a graph with a failed job: run --wait exits 1" 1
LIST=$("$NAVETTE" jobs --json)
id_of() { printf '%s' "$LIST" | json "[j['id'] for j in d if j['name'] == '$1'][0]"; }
JOIN=$(id_of join)
check_eq "join succeeded" "$(job_state "$JOIN")" succeeded
START=$(cat "$(store_dir sweep "$JOIN")/start.txt" 2>&1)
for n in 1 2 3; do
	P=$(id_of "part[n=$n]")
	check_eq "part[n=$n] succeeded" "$(job_state "$P")" succeeded
	END=$(cat "$(store_dir sweep "$P")/end.txt" 2>&1)
	check_true "join started after part[n=$n] ended ($START >= $END)" \
		test "$START" -ge "$END"
done
BROKEN=$(id_of broken)
check_eq "broken failed" "$(job_state "$BROKEN")" failed
for name in next then; do
	ID=$(id_of "$name")
	nv status "$ID" --json
	check_eq "$name: cancelled" "$(printf '%s' "$OUT" | json 'd["state"]')" \
		cancelled
	check_eq "$name: at accepted" \
		"$(printf '%s' "$OUT" | json 'd["failure"]["phase"]')" accepted
done
nv status "$(id_of then)" --json
check_match "then: the reason names the job it waited for" \
	"$(printf '%s' "$OUT" | json 'd["failure"]["reason"]')" \
	"^it runs after next \(.*\), which ended cancelled\$"
nv status "$(id_of next)" --json
check_match "next: the reason names broken" \
	"$(printf '%s' "$OUT" | json 'd["failure"]["reason"]')" \
	"^it runs after broken \($BROKEN\), which ended failed\$"

# ---- a 2x3 sweep and its fan-in ------------------------------------------------

nv_in "$R" run six.lua --wait
check_rc "a 2x3 sweep and a fan-in: run --wait exits 0" 0
BEST=$(printf '%s\n' "$OUT" | sed -n 's/^job best submitted: //p')
WANT=
for lr in 0.1 0.01; do
	for seed in 1 2 3; do
		ID=$(printf '%s\n' "$OUT" | sed -n "s/^job fit\[lr=$lr,seed=$seed\] submitted: //p")
		WANT="$WANT$(json '[o["sha256"] for o in d["outputs"] if o["name"] == "score.txt"][0]' \
			<"$(store_dir sweep "$ID")/navette-run.json")
"
	done
done
check_eq "the fan-in saw exactly the six outputs its producers' records list, in order" \
	"$(cat "$(store_dir sweep "$BEST")/seen.txt" 2>&1)
" "$WANT"

# ---- job:output() --------------------------------------------------------------

(cd "$R" && exec perl -e 'alarm 90; exec @ARGV' "$NAVETTE" run flow.lua --wait) \
	>"$T/flow.out" 2>&1 &
FLOW=$!
BG_PIDS="$BG_PIDS $FLOW"
fresh_id() { # NAME: the id of the job NAME of the flow run, once listed
	"$NAVETTE" jobs --json | json "([j['id'] for j in d if j['name'] == '$1'] + [''])[0]"
}
wait_for 60 sh -c "[ -n \"\$(perl -e 'alarm 20; exec @ARGV' '$NAVETTE' jobs --json | grep -o '\"gate\"')\" ]"
P2=$(fresh_id "piece[n=2]")
wait_state "$P2" succeeded 60
check_eq "piece[n=2] succeeded" "$STATE" succeeded
# merge and gather read it as published; only then does it change in the
# store (the gate job holds the job that reads it after that)
for name in merge gather; do
	wait_state "$(fresh_id "$name")" 'succeeded|failed|cancelled' 60
done
printf 'forged\n' >"$(store_dir sweep "$P2")/piece.txt"
: >"$GO"
wait "$FLOW"
check_eq "the flow: run --wait exits 1 (two consumers fail; 142: it did not end in 90 s)" "$?" 1
MERGE=$(fresh_id merge)
check_eq "merge read both pieces" "$(job_state "$MERGE")" succeeded
check_eq "merge's output holds both pieces, in order" \
	"$(cat "$(store_dir sweep "$MERGE")/all.txt" 2>&1)" "piece 1
piece 2"
GATHER=$(fresh_id gather)
check_eq "gather (navette.outputs) read both pieces" "$(job_state "$GATHER")" succeeded
check_eq "gather's output holds both pieces, in the sweep's order" \
	"$(cat "$(store_dir sweep "$GATHER")/all.txt" 2>&1)" "piece 1
piece 2"
nv status "$(fresh_id missing)" --json
check_eq "an output never written: the consumer fails" \
	"$(printf '%s' "$OUT" | json 'd["state"]')" failed
check_eq "  at data_ready" "$(printf '%s' "$OUT" | json 'd["failure"]["phase"]')" \
	data_ready
check_match "  naming the output and the job" \
	"$(printf '%s' "$OUT" | json 'd["failure"]["reason"]')" \
	"input 'x': job .* published no output 'nothing.txt'"
nv status "$(fresh_id tampered)" --json
check_eq "an output changed after its record: the consumer fails" \
	"$(printf '%s' "$OUT" | json 'd["state"]')" failed
check_eq "  at data_ready" "$(printf '%s' "$OUT" | json 'd["failure"]["phase"]')" \
	data_ready
check_match "  saying the bytes differ" \
	"$(printf '%s' "$OUT" | json 'd["failure"]["reason"]')" "sha256"

finish
