# `navette outputs` downloads a finished job's outputs (or a run's), each
# checked against its run record's sha256: a changed object is refused
# and leaves nothing under its name. `navette gc` lists old finished jobs
# (--dry-run), deletes their rows and folders (--yes), their objects
# (--store), and keeps a job whose outputs another job takes.
set -eu -o pipefail
. "$(dirname "$0")/../lib.sh"
set +e # each check reports its own failure; finish sets the status

R=$(new_repo outs)
put_file "$R" one.lua <<'EOF2'
local navette = require "navette"
navette.job {
  name = "one",
  command = { "sh", "-c", "printf 'model bytes\n' >\"$NAVETTE_OUTPUTS/model.bin\"; mkdir -p \"$NAVETTE_OUTPUTS/sub\"; printf 'metrics\n' >\"$NAVETTE_OUTPUTS/sub/metrics.txt\"" },
  success = { outputs = { "model.bin", "sub/metrics.txt" } },
}
EOF2
put_file "$R" pair.lua <<'EOF2'
local navette = require "navette"
local train = navette.job {
  name = "train",
  command = { "sh", "-c", "printf 'weights\n' >\"$NAVETTE_OUTPUTS/w.bin\"" },
  success = { outputs = { "w.bin" } },
}
navette.job {
  name = "eval",
  inputs = { w = train:output("w.bin") },
  command = { "sh", "-c", "cat \"$NAVETTE_INPUTS/w\" >\"$NAVETTE_OUTPUTS/score.txt\"" },
  success = { outputs = { "score.txt" } },
}
EOF2
put_file "$R" train.lua <<'EOF2'
local navette = require "navette"
navette.job { name = "train", command = { "true" } }
EOF2
commit_all "$R" >/dev/null

# ---- outputs JOB -----------------------------------------------------------
nv_in "$R" run one.lua --wait
check_rc "the job runs and succeeds" 0
ID=$(submitted_id)
D=$T/got
nv outputs "$ID" --to "$D"
check_rc "outputs exits 0" 0
check_eq "model.bin has the job's bytes" "$(cat "$D/model.bin" 2>&1)" "model bytes"
check_eq "sub/metrics.txt has the job's bytes" "$(cat "$D/sub/metrics.txt" 2>&1)" metrics
check_eq "no temporary file is left" \
	"$(find "$D" -name '.*' -type f | wc -l | tr -d ' ')" 0
nv outputs "$ID" --to "$D"
check_rc "outputs again into the same folder exits 0 (identical files)" 0
check_contains "an identical file is said to be there already" "$OUT" "already there"
nv outputs "$ID" --to "$T/json" --json
check_rc "outputs --json exits 0" 0
check_eq "--json: a line per file, fetched, with its sha256" \
	"$(printf '%s' "$OUT" | json '",".join(o["name"] + ":" + o["state"] + ":" + o["sha256"][:8] for o in d)' 2>&1)" \
	"model.bin:fetched:$(sha256 "$D/model.bin" | cut -c1-8),sub/metrics.txt:fetched:$(sha256 "$D/sub/metrics.txt" | cut -c1-8)"
nv outputs no-such-job
check_rc "outputs of an unknown job exits 2" 2
# the default folder: ./JOB_ID in the current folder
mkdir -p "$T/cwd"
nv_in "$T/cwd" outputs "$ID"
check_rc "outputs with no --to exits 0" 0
check_eq "by default the files land in ./JOB_ID" \
	"$(cat "$T/cwd/$ID/model.bin" 2>&1)" "model bytes"
# a file of other bytes under an output's name is not overwritten
printf 'mine\n' >"$D/model.bin"
nv outputs "$ID" --to "$D"
check_rc "a different file in DIR is refused (exit 3)" 3
check_contains "the refusal says to use another folder" "$ERR" "--to DIR"
check_eq "the user's file is left alone" "$(cat "$D/model.bin")" mine

# a changed object in the store is refused, naming both sha256
STORE=$(store_dir outs "$ID")
GOOD=$(sha256 "$STORE/model.bin")
printf 'tampered!!!\n' >"$STORE/model.bin"
BAD=$(sha256 "$STORE/model.bin")
D2=$T/got2
nv outputs "$ID" --to "$D2"
check_rc "a tampered output is refused (exit 1)" 1
check_contains "the error names the output" "$ERR" "output model.bin of job $ID"
check_contains "the error names the sha256 the record lists" "$ERR" "$GOOD"
check_contains "the error names the sha256 of the bytes found" "$ERR" "$BAD"
check_contains "the error says what to check" "$ERR" "changed in the store after the job published it"
check_absent "nothing is left under the tampered output's name" "$D2/model.bin"
check_eq "no temporary file is left beside it" \
	"$(find "$D2" -name '.*' -type f | wc -l | tr -d ' ')" 0
check_eq "the other output still comes" "$(cat "$D2/sub/metrics.txt" 2>&1)" metrics

# ---- outputs RUN -----------------------------------------------------------
nv_in "$R" run pair.lua --wait
check_rc "the run of two jobs succeeds" 0
RUN=$(printf '%s\n' "$OUT" | grep -o 'outs-run-[a-z0-9-]*' | head -1)
check_ne "run printed its run id" "$RUN" ""
TRAIN=$(printf '%s\n' "$OUT" | sed -n 's/^job train submitted: \([^ ]*\)$/\1/p')
EVAL=$(printf '%s\n' "$OUT" | sed -n 's/^job eval submitted: \([^ ]*\)$/\1/p')
nv outputs "$RUN" --to "$T/run"
check_rc "outputs of a run exits 0" 0
check_eq "train's output lands in DIR/train" "$(cat "$T/run/train/w.bin" 2>&1)" weights
check_eq "eval's output lands in DIR/eval" "$(cat "$T/run/eval/score.txt" 2>&1)" weights

# ---- gc -----------------------------------------------------------------------
# a second `one` and a second `train`: the first ones are then no longer
# the newest of their names (eval, which takes train's output, is)
# (--no-reuse: the first ones would be reused)
nv_in "$R" run train.lua --wait --no-reuse
check_rc "a second train succeeds" 0
nv_in "$R" run one.lua --wait --no-reuse
check_rc "a second run of one succeeds" 0
ID2=$(submitted_id)
nv gc --older-than 0s --dry-run
check_rc "gc --dry-run exits 0" 0
check_match "gc --dry-run lists the old job" "$OUT" "^  succeeded +$ID "
check_contains "gc --dry-run says it deleted nothing" "$OUT" "dry run: nothing deleted"
check_match "gc keeps the newest job of a name" "$OUT" "^  kept +$ID2 +one: the newest"
check_match "gc keeps a job whose outputs another takes" "$OUT" "^  kept +$TRAIN +train: job $EVAL"
check_true "after --dry-run the job's folder is still there" test -d "$NAVETTE_HOME/jobs/$ID"
nv status "$ID" --json
check_eq "after --dry-run the job's row is still there" \
	"$(printf '%s' "$OUT" | json 'd["id"]' 2>&1)" "$ID"

nv gc --older-than 0s </dev/null
check_rc "gc without a terminal or --yes is refused (exit 3)" 3
check_contains "the refusal says to pass --yes or --dry-run" "$ERR" "--yes"
check_true "a refused gc deletes nothing" test -d "$NAVETTE_HOME/jobs/$ID"

nv gc --older-than 0s --yes
check_rc "gc --yes exits 0" 0
check_contains "gc --yes says what it deleted" "$OUT" "deleted 1 job"
check_absent "the job's folder is gone" "$NAVETTE_HOME/jobs/$ID"
nv status "$ID"
check_rc "the job's row is gone (status: no such job, exit 2)" 2
nv status "$TRAIN" --json
check_rc "the job another takes outputs of is kept" 0
check_true "the newest job of the name keeps its folder" test -d "$NAVETTE_HOME/jobs/$ID2"
check_true "without --store the deleted job's objects stay" test -f "$STORE/sub/metrics.txt"
nv audit show --job "$ID"
check_contains "the deletion is audited" "$OUT" "job.gc"

# --store: a third `one` makes the second old, and its objects go too
nv_in "$R" run one.lua --wait --no-reuse
STORE2=$(store_dir outs "$ID2")
check_true "the second job published its outputs" test -f "$STORE2/model.bin"
nv gc --older-than 0s --store --yes
check_rc "gc --store --yes exits 0" 0
check_absent "gc --store removes its folder" "$NAVETTE_HOME/jobs/$ID2"
check_eq "gc --store removes its objects" \
	"$(find "$STORE2" -type f 2>/dev/null | wc -l | tr -d ' ')" 0
nv jobs --json
check_eq "the agent still opens the job database (no lost-jobs refusal)" "$RC" 0

nv gc --older-than 5x
check_rc "a bad --older-than is a usage error" 2

finish
