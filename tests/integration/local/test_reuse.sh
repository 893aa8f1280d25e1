#!/usr/bin/env bash
# Reuse by content key (lua/navette/reuse) on the local backend, a sweep
# of three jobs and its fan-in, run again and again:
#   - nothing changed: nothing is submitted, each job says `reused  NAME
#     from ID`, --json gives reused_from, the audit log has job.reuse;
#   - one task's parameter changed: that task and the fan-in run, the
#     task saying which parameter changed; the others are reused;
#   - the README edited: nothing runs; src/ edited outside a job's
#     code.paths: that job is reused, the one keyed by the whole tree runs;
#   - an output deleted, or its bytes changed, behind navette's back: that
#     job runs again, saying so;
#   - reuse = false: always runs; a failed job is never reused;
#   - --rerun GLOB and --no-reuse; plan says reuse or run, and why;
#   - a second NAVETTE_HOME on the same store reuses (the index), another
#     profile with its own store does not;
#   - two runs at once: the second runs the job too, saying the first has
#     not ended; once one has, it is reused;
#   - a job after another that runs now runs too;
#   - `navette reuse list/show/forget`.
set -eu -o pipefail
. "$(dirname "$0")/../lib.sh"
set +e
# a held job waits for a file under $T, which a job's sandbox hides (a
# private /tmp; test_local_sandbox covers it)
export NAVETTE_LOCAL_SANDBOX=off

R=$(new_repo proj)
# the project file: profile "other" on a store of its own, and "shared"
# on the first home's store (used once a second home runs)
cat >"$R/navette.lua" <<EOF2
return {
  name = "proj",
  profiles = {
    other = { backend = "local", storage = "file://$T/store2/",
              require_pushed = false },
    shared = { backend = "local", storage = "file://$NAVETTE_HOME/store/",
               require_pushed = false },
  },
}
EOF2
printf 'a readme\n' >"$R/README.md"
put_file "$R" src/train.sh <<'EOF2'
#!/bin/sh
set -eu
echo "train lr=$NAVETTE_PARAM_LR epochs=$EPOCHS"
{ cat "$NAVETTE_INPUTS/data"; echo "lr=$NAVETTE_PARAM_LR"; } >"$NAVETTE_OUTPUTS/out.txt"
EOF2
printf 'notes\n' >"$R/src/notes.txt"
put_file "$R" recipe.lua <<'EOF2'
local navette = require "navette"
local data = navette.storage.put_string("data/in.txt", "hello\n")
local runs = navette.sweep {
  job = {
    name = "train",
    code = { paths = { "src/train.sh" } },
    inputs = { data = data },
    command = { "sh", "src/train.sh" },
    env = { EPOCHS = "3" },
    success = { exit_code = 0, outputs = { "out.txt" } },
  },
  matrix = { lr = { 0.1, 0.01, 0.001 } },
}
navette.job {
  name = "best",
  inputs = { runs = navette.outputs(runs, "out.txt") },
  command = { "sh", "-c", "cat \"$NAVETTE_INPUTS\"/runs/* >\"$NAVETTE_OUTPUTS/best.txt\"" },
  success = { exit_code = 0, outputs = { "best.txt" } },
}
navette.job {
  name = "clock",
  reuse = false,
  command = { "python3", "-c", "import os, time; open(os.environ['NAVETTE_OUTPUTS'] + '/t.txt', 'w').write(repr(time.time()))" },
  success = { exit_code = 0, outputs = { "t.txt" } },
}
EOF2
commit_all "$R" >/dev/null

submitted() { printf '%s\n' "$OUT" | sed -n 's/^job \([^ ]*\) submitted: .*/\1/p' | sort | tr '\n' ' '; }
reused() { printf '%s\n' "$OUT" | sed -n 's/^reused  \([^ ]*\)  from .*/\1/p' | sort | tr '\n' ' '; }

# ---- the first run: everything runs --------------------------------------
nv_in "$R" run recipe.lua --wait
check_rc "first run: exit 0" 0
check_eq "first run: all five jobs submitted" "$(submitted)" \
	"best clock train[lr=0.001] train[lr=0.01] train[lr=0.1] "
check_match "first run: a job with no earlier run says so" "$OUT" \
	'^  runs: no earlier run$'
FIRST_TRAIN=$(sub_id 'train\[lr=0\.1\]')
FIRST_BEST=$(sub_id best)

# ---- nothing changed: reused, nothing submitted ------------------------------
SECONDS=0
nv_in "$R" run recipe.lua --wait
SECOND_S=$SECONDS
echo "second run, nothing changed: ${SECOND_S}s"
check_rc "second run: exit 0" 0
check_eq "second run: only the job with reuse = false is submitted" "$(submitted)" "clock "
check_eq "second run: the four others are reused" "$(reused)" \
	"best train[lr=0.001] train[lr=0.01] train[lr=0.1] "
check_match "second run: reused from the first run's job" "$OUT" \
	"^reused  train\\[lr=0\\.1\\]  from $FIRST_TRAIN\$"
check_match "second run: the fan-in too" "$OUT" "^reused  best  from $FIRST_BEST\$"
check_match "second run: reuse = false says why it runs" "$OUT" '^  runs: reuse = false$'
check_eq "the audit log has a job.reuse line per reused job" \
	"$("$NAVETTE" audit show --json 2>&1 | json 'sum(1 for e in d if e["action"] == "job.reuse")' 2>&1)" 4

nv_in "$R" run recipe.lua --json
check_rc "--json: exit 0" 0
check_match "--json: reused_from names the first run's fan-in" "$OUT" \
	"\"reused_from\":[[:space:]]*\"$FIRST_BEST\""
check_match "--json: their outputs point at the earlier job's" "$OUT" \
	"store/proj/$FIRST_BEST/best\\.txt"

# ---- plan: reuse or run, and why ---------------------------------------------
nv_in "$R" plan recipe.lua
check_rc "plan: exit 0" 0
check_match "plan: says a job is reused, from which job" "$OUT" \
	"^  reuse +train\\[lr=0\\.1\\] +from $FIRST_TRAIN\$"
check_match "plan: says why a job runs" "$OUT" '^  run +clock +\(reuse = false\)$'
nv_in "$R" plan recipe.lua --json
check_eq "plan --json: a decision per job" \
	"$(printf '%s' "$OUT" | json '" ".join(sorted(r["name"] + ":" + r["decision"] for r in d["reuse"]))' 2>&1)" \
	"best:reuse clock:run train[lr=0.001]:reuse train[lr=0.01]:reuse train[lr=0.1]:reuse"

# ---- one task's parameter: that task and the fan-in ---------------------------
perl -0pi -e 's/0\.001 \}/0.002 }/' "$R/recipe.lua"
commit_all "$R" >/dev/null
nv_in "$R" run recipe.lua --wait
check_rc "a new parameter: exit 0" 0
check_eq "a new parameter: that task, the fan-in and clock run" "$(submitted)" \
	"best clock train[lr=0.002] "
check_eq "... the others are reused" "$(reused)" "train[lr=0.01] train[lr=0.1] "
check_match "... the fan-in says its input changed" "$OUT" \
	'^  runs: its input runs/[0-9] comes from a job that runs now$'

# ---- the README, and src/ outside code.paths: nothing runs ---------------------
printf 'a better readme\n' >"$R/README.md"
printf 'more notes\n' >"$R/src/notes.txt"
commit_all "$R" >/dev/null
nv_in "$R" run recipe.lua --wait
check_rc "README and src/notes.txt edited: exit 0" 0
check_eq "... the trainings (code.paths) are reused" "$(reused)" \
	"train[lr=0.002] train[lr=0.01] train[lr=0.1] "
check_match "... the fan-in, keyed by the whole tree, says so" "$OUT" \
	"^  runs: code: the commit's tree changed"
printf 'echo changed\n' >>"$R/src/train.sh"
commit_all "$R" >/dev/null
nv_in "$R" plan recipe.lua
check_match "src/train.sh edited: plan says it changed (code.paths)" "$OUT" \
	'^  run +train\[lr=0\.1\] +\(code: src/train\.sh changed \(code\.paths\)\)$'
nv_in "$R" run recipe.lua --wait
check_eq "src/train.sh edited: every training runs" "$(submitted)" \
	"best clock train[lr=0.002] train[lr=0.01] train[lr=0.1] "

# ---- env: the reason names it -------------------------------------------------
perl -0pi -e 's/EPOCHS = "3"/EPOCHS = "5"/' "$R/recipe.lua"
commit_all "$R" >/dev/null
nv_in "$R" plan recipe.lua
check_match "env changed: plan names the variable and its values" "$OUT" \
	'^  run +train\[lr=0\.1\] +\(env\.EPOCHS: 3 -> 5\)$'
nv_in "$R" run recipe.lua --wait
check_rc "env changed: exit 0" 0
LAST_TRAIN=$(sub_id 'train\[lr=0\.1\]')

# ---- an output deleted, an output's bytes changed: runs again -------------------
rm "$(store_dir proj "$LAST_TRAIN")/out.txt"
nv_in "$R" run recipe.lua --wait
check_match "an output deleted: the job runs, saying so" "$OUT" \
	"^  runs: its output out\\.txt is missing \\(job $LAST_TRAIN\\)\$"
check_eq "an output deleted: only that job and what reads it" "$(submitted)" \
	"best clock train[lr=0.1] "
LAST_TRAIN=$(sub_id 'train\[lr=0\.1\]')
F=$(store_dir proj "$LAST_TRAIN")/out.txt
perl -pi -e 's/hello/HELLO/' "$F"
nv_in "$R" run recipe.lua --wait
check_match "an output's bytes changed: the job runs, saying so" "$OUT" \
	"^  runs: its output out\\.txt changed \\(sha256 [0-9a-f]{12} -> [0-9a-f]{12}, job $LAST_TRAIN\\)\$"

# ---- an input's content: the reason names it and both sha256 --------------------
put_file "$R" input.lua <<'EOF2'
local navette = require "navette"
local data = navette.storage.put_string("data/x.txt", "one\n")
navette.job { name = "inp", code = { paths = { "src/" } },
              inputs = { data = data }, command = { "true" } }
EOF2
commit_all "$R" >/dev/null
nv_in "$R" run input.lua --wait
check_rc "an input: the first run, exit 0" 0
perl -0pi -e 's/"one\\n"/"two\\n"/' "$R/input.lua"
commit_all "$R" >/dev/null
nv_in "$R" run input.lua --wait
check_match "an input's bytes changed: the job runs, naming it and both sha256" "$OUT" \
	"^  runs: inputs\\.data: sha256 $(printf 'one\n' | shasum -a 256 | cut -c1-12)… -> sha256 $(printf 'two\n' | shasum -a 256 | cut -c1-12)…\$"

# ---- --rerun and --no-reuse -------------------------------------------------------
nv_in "$R" run recipe.lua --rerun 'trian[*]'
check_rc "--rerun naming no job: refused as a usage error (2)" 2
check_contains "... naming the glob and the recipe's jobs" "$ERR" \
	"--rerun 'trian[*]' names no job of recipe.lua"
check_eq "... and nothing was submitted" "$(submitted)" ""
nv_in "$R" run recipe.lua --rerun 'train[lr=0.0*]'
check_eq "--rerun 'train[lr=0.0*]': those two run, and the fan-in" \
	"$(submitted)" "best clock train[lr=0.002] train[lr=0.01] "
check_match "... saying why" "$OUT" "^  runs: --rerun train\\[lr=0\\.0\\*\\]\$"
nv_in "$R" run recipe.lua --no-reuse --wait
check_eq "--no-reuse: every job runs" "$(submitted)" \
	"best clock train[lr=0.002] train[lr=0.01] train[lr=0.1] "

# ---- a failed job is not reused ---------------------------------------------------
put_file "$R" fail.lua <<'EOF2'
local navette = require "navette"
navette.job { name = "flaky", command = { "sh", "-c", "exit 3" } }
EOF2
commit_all "$R" >/dev/null
nv_in "$R" run fail.lua --wait
check_rc "a failing job: exit 1" 1
nv_in "$R" run fail.lua --wait
check_eq "a failed job is not reused: it runs again" "$(submitted)" "flaky "
check_match "... saying its job of the same key failed" "$OUT" \
	'^  runs: job [a-z0-9-]+ of the same key ended failed$'

# ---- another home on the same store: reused; another profile: not ---------------
# (a job on the host is keyed by its profile: both homes use "shared")
nv_in "$R" run recipe.lua --profile shared --wait
check_rc "profile shared, first home: exit 0" 0
check_eq "profile shared, first home: its jobs run (a host's profile is in the key)" \
	"$(reused)" ""
NAVETTE_HOME_1=$NAVETTE_HOME
export NAVETTE_HOME=$T/home2
mkdir -p "$NAVETTE_HOME"
"$NAVETTE" trust "$R" >/dev/null
nv_in "$R" run recipe.lua --profile shared --wait
check_rc "a second home, the same profile and store: exit 0" 0
check_eq "a second home on the same store: nothing but clock is submitted" \
	"$(submitted)" "clock "
check_eq "... the others are reused, from the index in the store" "$(reused)" \
	"best train[lr=0.002] train[lr=0.01] train[lr=0.1] "
nv_in "$R" run recipe.lua --profile other --wait
check_rc "another profile with its own store: exit 0" 0
check_eq "another profile with its own store: nothing is reused" "$(reused)" ""
export NAVETTE_HOME=$NAVETTE_HOME_1

# ---- two runs at once: the second does not wait for the first's jobs --------
put_file "$R" held.lua <<EOF2
local navette = require "navette"
navette.job { name = "held", env = { GATE = "$T/gate" },
  command = { "sh", "-c", 'while [ ! -e "\$GATE" ]; do sleep 0.1; done; echo done >"\$NAVETTE_OUTPUTS/o.txt"' },
  success = { outputs = { "o.txt" } } }
EOF2
commit_all "$R" >/dev/null
nv_in "$R" run held.lua
check_rc "a held job is submitted" 0
HELD1=$(sub_id held)
nv_in "$R" run held.lua
check_rc "the same recipe again while it runs: exit 0" 0
check_eq "... its job runs a second time (the first has not ended)" \
	"$(submitted)" "held "
check_match "... saying why" "$OUT" \
	"^  runs: job $HELD1 of the same key has not ended \\(a run does not wait for another run's jobs\\)\$"
HELD2=$(sub_id held)
: >"$T/gate"
check_state "the first held job ends" "$HELD1" succeeded 30
check_state "the second held job ends" "$HELD2" succeeded 30
nv_in "$R" run held.lua
check_match "once one has ended: reused" "$OUT" "^reused  held  from $HELD2\$"

# ---- a job that runs after another (no input from it) --------------------------
put_file "$R" after.lua <<'EOF2'
local navette = require "navette"
local steps = navette.sweep {
  job = { name = "step", code = { paths = { "src/" } },
          command = { "sh", "-c", "echo $NAVETTE_PARAM_N" } },
  matrix = { n = { 1, 2 } },
}
navette.job { name = "join", after = steps, code = { paths = { "src/" } },
              command = { "true" } }
EOF2
commit_all "$R" >/dev/null
nv_in "$R" run after.lua --wait
check_rc "after: the first run, exit 0" 0
nv_in "$R" run after.lua --wait
check_eq "after: nothing changed, all three reused" "$(reused)" \
	"join step[n=1] step[n=2] "
perl -0pi -e 's/n = \{ 1, 2 \}/n = { 1, 3 }/' "$R/after.lua"
commit_all "$R" >/dev/null
nv_in "$R" run after.lua --wait
check_eq "after: a new step runs, and the job after the steps" "$(submitted)" \
	"join step[n=3] "
check_match "... which says why" "$OUT" \
	'^  runs: it runs after step\[n=3\], which runs now$'

# ---- navette reuse list / show / forget -----------------------------------------
nv_in "$R" plan recipe.lua
LR1=$(printf '%s\n' "$OUT" | sed -n 's/^  reuse  train\[lr=0\.1\]  from //p')
check_match "plan: train[lr=0.1] is reused" "$LR1" '^proj-'
nv_in "$R" reuse list
check_rc "reuse list: exit 0" 0
check_match "reuse list: a key per line with its job and name" "$OUT" \
	"^sha256:[0-9a-f]{12}  $LR1  train\\[lr=0\\.1\\]  "
KEY=$(printf '%s\n' "$OUT" | grep " $LR1 " | cut -d' ' -f1)
nv_in "$R" reuse show "$KEY"
check_rc "reuse show: exit 0" 0
check_match "reuse show: the key's jobs" "$OUT" "^  job $LR1  train\\[lr=0\\.1\\]"
check_match "reuse show: the key's parts" "$OUT" '"EPOCHS":[[:space:]]*"5"'
nv_in "$R" reuse forget "$KEY"
check_rc "reuse forget: exit 0" 0
check_match "reuse forget: says how many entries went" "$OUT" '^forgot [0-9]+ entr'
check_match "the audit log has reuse.forget" "$("$NAVETTE" audit show --json 2>&1)" \
	'"action":[[:space:]]*"reuse.forget"'
nv_in "$R" plan recipe.lua
check_match "forgotten: train[lr=0.1] runs, with no earlier job of its key" "$OUT" \
	'^  run +train\[lr=0\.1\] +\('
check_match "... the others are still reused" "$OUT" '^  reuse +train\[lr=0\.01\] '
nv_in "$R" reuse forget sha256:0123456789ab
check_rc "reuse forget of a key it does not hold: exit 2 (it names nothing)" 2

stop_local_jobs
finish
