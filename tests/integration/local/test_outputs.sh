# `navette outputs` downloads a finished job's outputs (or a run's), each
# checked against its run record's sha256: a changed object is refused
# and leaves nothing under its name.
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

finish
