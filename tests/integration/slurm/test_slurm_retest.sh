#!/usr/bin/env bash
# recipes/maintenance/retest-after-update.lua through `navette maintain
# --once` on the two-node Slurm cluster (fixtures "slurm" and "s3"): the
# first run submits the smoke job to gpu-a and gpu-b and records each
# node's baseline; the second compares each node's record with it (same
# outputs, same phases, the fingerprint shown: "same"); then gpu-b
# "changes" (the test's smoke script mixes in a file standing for that
# node's state, as a driver update would change a result): the re-test
# reports the regression on gpu-b only, exits 1, and keeps gpu-b's old
# baseline; --plan submits nothing.
# Needs SLURM_STACK_ENV and S3_STACK_ENV (set by ctest).
set -eu -o pipefail
. "$(dirname "$0")/../lib.sh"
set +e # each check reports its own failure; finish sets the status

use_slurm_stack retest
nv storage mb "s3://$BUCKET" "${EP[@]}"
check_rc "the bucket is created" 0
mkdir -p "$HOME/.navette" "$T/node-state"
cp "$SLURM_JWT_KEY" "$HOME/.navette/slurm.key"
chmod 600 "$HOME/.navette/slurm.key"
chmod 755 "$T/node-state"
echo "driver 550.54" >"$T/node-state/gpu-a"
echo "driver 550.54" >"$T/node-state/gpu-b"
chmod 644 "$T/node-state/gpu-a" "$T/node-state/gpu-b"

R=$(NO_PROJECT_FILE=1 new_repo fleet)
cat >"$R/navette.lua" <<EOF
return {
  name = "fleet",
  default_profile = "hpc",
  credentials = {
    jwtkey = { kind = "hs256", source = "file", path = "~/.navette/slurm.key" },
  },
  maintenance = { "recipes/maintenance/retest-after-update.lua" },
  profiles = {
    hpc = {
      backend = "slurm", storage = "s3://$BUCKET/", require_pushed = false,
      s3 = { endpoint = "$S3_ENDPOINT", region = "$S3_REGION" },
      slurm = { endpoint = "$SLURMRESTD_URL", user = "$SLURM_USER",
                credential = "jwtkey", partition = "$SLURM_PARTITION",
                working_directory = "$WD", nodes = { "gpu-a", "gpu-b" } },
      max_token_lifespan = "1h",
    },
  },
}
EOF
mkdir -p "$R/recipes/maintenance/retest"
cp "$NAVETTE_SOURCE/recipes/maintenance/retest-after-update.lua" "$R/recipes/maintenance/"
# the shipped smoke job, and the node's state mixed in (what an update of
# that node would change)
{
	cat "$NAVETTE_SOURCE/recipes/maintenance/retest/smoke.sh"
	printf 'cat "%s/node-state/$SLURMD_NODENAME" >>"$out"\n' "$T"
} >"$R/recipes/maintenance/retest/smoke.sh"
commit_all "$R" >/dev/null

DB=$NAVETTE_HOME/tasks.db
due_now() { # the task due again (its next slot moved to a minute ago)
	python3 - "$DB" <<'PY'
import sqlite3, sys, time
db = sqlite3.connect(sys.argv[1])
n = db.execute("UPDATE tasks SET next_due = ? WHERE name = 'retest-after-update'",
               (time.time() - 60,)).rowcount
db.commit()
sys.exit(0 if n == 1 else 1)
PY
}
baseline() { # NODE: the baseline's job id for NODE
	s3cat "_baselines/fleet/hpc/$1/smoke.json" | json 'd["id"]'
}

# ---- plan: nothing submitted ------------------------------------------------
nv_in "$R" maintain --plan
check_rc "maintain --plan exits 0" 0
check_match "it says what it would submit" "$OUT" "would submit 2 smoke job\\(s\\): gpu-a, gpu-b"
check_eq "nothing was submitted" "$("$NAVETTE" jobs --json | json 'len(d)')" 0

# ---- first run: a baseline per node -----------------------------------------------
nv_in "$R" maintain --once
check_rc "the first re-test succeeds" 0
check_match "gpu-a gets its baseline" "$OUT" "gpu-a: baseline recorded"
check_match "gpu-b gets its baseline" "$OUT" "gpu-b: baseline recorded"
check_eq "two smoke jobs ran" "$("$NAVETTE" jobs --json | json '[j["state"] for j in d]')" \
	'["succeeded", "succeeded"]'
A1=$(baseline gpu-a)
B1=$(baseline gpu-b)
check_match "gpu-a's baseline is in the store" "$A1" '^fleet-'
check_eq "gpu-a's smoke job ran on gpu-a" "$(st "$A1" 'd["slurm"]["nodes"]')" gpu-a
check_eq "gpu-b's on gpu-b" "$(st "$B1" 'd["slurm"]["nodes"]')" gpu-b

# ---- second run: compared, the same -----------------------------------------------
due_now
check_rc "the task is made due again" 0
nv_in "$R" maintain --once
check_rc "the second re-test succeeds" 0
check_match "no regression on either node" "$OUT" "no regression on 2 node\\(s\\)"
check_match "gpu-a compared with its baseline" "$OUT" "gpu-a: ok \\(job fleet-.*, baseline $A1\\)"
check_match "the output's sha256 is the same" "$OUT" "output smoke.txt +[0-9a-f]{12} +[0-9a-f]{12} +same"
check_match "the node's kernel shown beside it" "$OUT" "node kernel .* same"
A2=$(baseline gpu-a)
check_ne "a node that passes gets its new record as baseline" "$A2" "$A1"

# ---- gpu-b changes: a regression there only --------------------------------------
echo "driver 555.10" >"$T/node-state/gpu-b"
B2=$(baseline gpu-b)
due_now
nv_in "$R" maintain --once
check_rc "a regression fails the task (exit 1)" 1
printf '%s\n' "$OUT" | sed 's/^/retest report: /'
check_match "it names the node that regressed" "$OUT" "gpu-b: REGRESSION"
check_match "and why: the output's sha256 differs" "$OUT" \
	"output smoke.txt +[0-9a-f]{12} +[0-9a-f]{12} +REGRESSION: sha256 differs"
check_match "gpu-a is still fine" "$OUT" "gpu-a: ok"
check_match "one node of two" "$OUT" "1 node\\(s\\) regressed of 2 node\\(s\\)"
check_eq "gpu-b keeps its last good baseline" "$(baseline gpu-b)" "$B2"
nv_in "$R" maintain --list --json
check_eq "the task's state says it failed" \
	"$(printf '%s' "$OUT" | json '[t["result"] for t in d["tasks"]]')" '["failed"]'
finish
