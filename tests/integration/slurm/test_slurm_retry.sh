#!/usr/bin/env bash
# Retries and checkpoints on Slurm (the ctest fixtures "slurm" and "s3"):
# a training whose node dies mid-run (its slurmd killed, and the job's
# processes with it) is requeued by Slurm, not submitted again by navette,
# and resumes on the other node from the checkpoint its first attempt
# saved through its POST policy; its record lists both attempts. A job
# that retries on exit:N and timeout fails once with that status and once
# at its real time limit: its launcher asks Slurm to requeue it each time
# (the same Slurm job, never a second submission), and its third attempt
# resumes from the checkpoint and succeeds, its record listing why each
# attempt ended. A cancelled job is not retried. The node is started
# again at the end, so the cluster is left healthy.
set -eu -o pipefail
. "$(dirname "$0")/../lib.sh"
set +e # each check reports its own failure; finish sets the status

use_slurm_stack retry
nv storage mb "s3://$BUCKET" "${EP[@]}"
check_rc "the bucket is created" 0

R=$(new_repo hpc)
cat >"$R/navette.lua" <<EOF
return {
  name = "hpc",
  default_profile = "hpc",
  credentials = {
    jwtkey = { kind = "hs256", source = "file", path = "$SLURM_JWT_KEY" },
  },
  profiles = {
    hpc = {
      backend = "slurm",
      storage = "s3://$BUCKET/",
      s3 = { endpoint = "$S3_ENDPOINT", region = "$S3_REGION" },
      slurm = { endpoint = "$SLURMRESTD_URL", user = "$SLURM_USER",
                credential = "jwtkey", partition = "$SLURM_PARTITION",
                working_directory = "$WD" },
      max_token_lifespan = "1h",
    },
  },
}
EOF
# a training of STEPS steps that keeps its step in $NAVETTE_CHECKPOINT;
# it says its node and its process group (the test kills that group with
# the node's slurmd: a node that dies takes its processes with it)
put_file "$R" train.sh <<'EOF'
#!/bin/sh
step=0
if [ -f "$NAVETTE_CHECKPOINT/step" ]; then
	step=$(cat "$NAVETTE_CHECKPOINT/step")
	echo "resumed from step $step"
fi
echo "on $SLURMD_NODENAME pgid $(ps -o pgid= -p $$ | tr -d ' ')"
while [ "$step" -lt "$STEPS" ]; do
	step=$((step + 1))
	echo "$step" >"$NAVETTE_CHECKPOINT/step.tmp"
	mv "$NAVETTE_CHECKPOINT/step.tmp" "$NAVETTE_CHECKPOINT/step"
	echo "step $step"
	sleep 1
done
echo "$step" >"$NAVETTE_OUTPUTS/model.txt"
EOF
put_file "$R" train.lua <<'EOF'
local navette = require "navette"
navette.job {
  name = "train",
  command = { "sh", "train.sh" },
  env = { STEPS = 40 },
  retries = { max = 1, on = { "node_fail" } },
  checkpoint = { every = 1 },
  resources = { cpus = 1, time_limit = "10m" },
  success = { outputs = { "model.txt" } },
}
EOF
# a job that fails in turn the two ways Slurm would not retry: it exits 3,
# then runs into its time limit; its checkpoint counts the runs
put_file "$R" flaky.sh <<'EOF'
#!/bin/sh
n=$(cat "$NAVETTE_CHECKPOINT/runs" 2>/dev/null || echo 0)
n=$((n + 1))
echo "$n" >"$NAVETTE_CHECKPOINT/runs"
echo "run $n on $SLURMD_NODENAME"
case $n in
1) exit 3 ;;
2)
	trap 'echo "run 2: SIGTERM"; exit 143' TERM
	while :; do sleep 1 & wait $!; done
	;;
esac
echo "$n" >"$NAVETTE_OUTPUTS/runs.txt"
EOF
put_file "$R" flaky.lua <<'EOF'
local navette = require "navette"
navette.job {
  name = "flaky",
  command = { "sh", "flaky.sh" },
  retries = { max = 2, on = { "exit:3", "timeout" } },
  checkpoint = { every = 1 },
  resources = { cpus = 1, time_limit = "1m" },
  success = { outputs = { "runs.txt" } },
}
EOF
put_file "$R" held.lua <<'EOF'
local navette = require "navette"
navette.job { name = "held", command = { "sleep", "300" },
              retries = { on = { "timeout", "exit:143" } },
              resources = { cpus = 1, time_limit = "10m" } }
EOF
commit_all "$R" >/dev/null
git init -q --bare "$T/origin.git"
git -C "$R" remote add origin "$T/origin.git"
git -C "$R" push -q origin HEAD:main 2>/dev/null
git -C "$R" fetch -q origin

log_has() { "$NAVETTE" logs "$1" 2>/dev/null | grep -Eq -- "$2"; }
saved() { s3cat "hpc/$1/navette-checkpoint/checkpoint.tar" >/dev/null; }

# ---- the node dies: requeued, resumed from the checkpoint ---------------------
nv_in "$R" run train.lua
check_rc "run exits 0" 0
ID=$(submitted_id)
[ -n "$ID" ] || finish
check_state "train: running" "$ID" running 60
check_true "train: its log shows step 4" wait_for 60 log_has "$ID" '^step 4$'
check_true "train: a checkpoint is in the store" wait_for 30 saved "$ID"
saved "$ID" || finish # (nothing to resume from: the rest cannot pass)
SLURM_ID=$(st "$ID" 'd["remote_id"]')
NODE=$(st "$ID" 'd["slurm"]["nodes"]')

# ---- retries Slurm would not do itself: the launcher requeues ----------------
# (on the node the training does not run on, which stays up, meanwhile)
OTHER=gpu-a
[ "$NODE" = gpu-a ] && OTHER=gpu-b
nv_in "$R" run flaky.lua --node "$OTHER"
check_rc "flaky: run exits 0" 0
FID=$(submitted_id)

PGID=$("$NAVETTE" logs "$ID" 2>/dev/null | sed -n "s/^on $NODE pgid \([0-9]*\)\$/\1/p" | head -1)
check_match "train: it said its process group on $NODE" "$PGID" '^[0-9]+$'
# the node dies: its slurmd, the job's slurmstepd (the parent of the batch
# script, which leads the job's process group), and the job's processes
STEPD=$(ps -o ppid= -p "${PGID:-0}" 2>/dev/null | tr -d ' ')
bash "$NAVETTE_SOURCE/tests/stack/slurm-node.sh" "$SLURM_STACK_DIR" kill "$NODE"
[ -n "$STEPD" ] && [ "$STEPD" -gt 1 ] && kill -KILL "$STEPD" 2>/dev/null
[ -n "$PGID" ] && kill -KILL -- "-$PGID" 2>/dev/null
check_state "train: requeued and completed" "$ID" 'succeeded|failed|cancelled' 300
check_eq "train: it succeeded" "$STATE" succeeded
check_eq "train: the same Slurm job, requeued (never a second submission)" \
	"$(st "$ID" 'd["remote_id"]')" "$SLURM_ID"
FINAL_NODE=$(st "$ID" 'd["slurm"]["nodes"]')
check_ne "train: it finished on the other node" "$FINAL_NODE" "$NODE"
LOG=$(s3cat "hpc/$ID/navette.log")
check_match "train: the second attempt ran on $FINAL_NODE" "$LOG" "^on $FINAL_NODE pgid"
RESUMED=$(printf '%s\n' "$LOG" | sed -n 's/^resumed from step \([0-9]*\)$/\1/p')
check_true "train: it resumed from the step its first attempt saved ($RESUMED)" \
	test "${RESUMED:-0}" -ge 4
check_eq "train: it did not start over" "$(printf '%s\n' "$LOG" | grep -c '^step 1$')" 0
check_eq "train: the output is the whole training's" "$(s3cat "hpc/$ID/model.txt")" 40
REC=$(s3cat "hpc/$ID/navette-run.json")
check_eq "train: the record lists two attempts" \
	"$(printf '%s' "$REC" | json '[(a["attempt"], a["state"]) for a in d["attempts"]]')" \
	'[[1, "failed"], [2, "succeeded"]]'
check_eq "train: the last on the other node" \
	"$(printf '%s' "$REC" | json 'd["attempts"][1]["node"]')" "$FINAL_NODE"
check_eq "train: the record lists the checkpoint restored" \
	"$(printf '%s' "$REC" | json 'd["checkpoints"]["restored"]["attempt"]')" 2
check_true "train: ... and those written" \
	test "$(printf '%s' "$REC" | json 'len(d["checkpoints"]["written"])')" -ge 1
nv status "$ID"
check_match "train: status shows the attempt" "$OUT" '^state +succeeded · attempt 2$'

# ---- a cancelled job that retries on timeout and exit:143: not retried ------
nv_in "$R" run held.lua --node "$OTHER"
check_rc "held: run exits 0" 0
HID=$(submitted_id)
check_state "held: running" "$HID" running 60
nv cancel "$HID"
check_rc "held: cancelled" 0
check_state "held: ended" "$HID" 'succeeded|failed|cancelled' 90
check_eq "held: it ends cancelled" "$STATE" cancelled
# (the final state stays cancelled even when the job was retried: the
# restarts Slurm counts, the attempt and the log say whether it was)
check_eq "held: a cancel is not retried: Slurm requeued it 0 times" \
	"$(st "$HID" 'd["slurm"]["restarts"]')" 0
check_eq "held: ... status shows no second attempt" \
	"$(st "$HID" 'd.get("attempt", "none")')" none
nv logs "$HID"
check_no_match "held: ... its log has no attempt line" "$OUT" '^navette: attempt'

# ---- flaky: two retries by the launcher -----------------------------------------
[ -n "$FID" ] || finish
FSLURM=$(st "$FID" 'd["remote_id"]')
check_state "flaky: ended" "$FID" 'succeeded|failed|cancelled' 240
check_eq "flaky: it succeeded at last" "$STATE" succeeded
check_eq "flaky: the same Slurm job, requeued twice" \
	"$(st "$FID" 'd["remote_id"]') $(st "$FID" 'd["slurm"]["restarts"]')" "$FSLURM 2"
check_eq "flaky: its output is the third run's" "$(s3cat "hpc/$FID/runs.txt")" 3
FREC=$(s3cat "hpc/$FID/navette-run.json")
check_eq "flaky: the record lists why each attempt ended" \
	"$(printf '%s' "$FREC" | json '[(a["attempt"], a["state"], a.get("failure")) for a in d["attempts"]]')" \
	'[[1, "failed", "exit:3"], [2, "failed", "timeout"], [3, "succeeded", null]]'
check_eq "flaky: ... with the reasons" \
	"$(printf '%s' "$FREC" | json 'd["attempts"][0]["reason"]')" \
	"the command exited with status 3"
check_match "flaky: ... the time limit named" \
	"$(printf '%s' "$FREC" | json 'd["attempts"][1]["reason"]')" '^the job reached its time limit'
FLOG=$("$NAVETTE" logs "$FID" 2>/dev/null)
check_match "flaky: the log shows the first run" "$FLOG" '^run 1 on '
check_match "flaky: ... the second, stopped before the limit" "$FLOG" '^run 2: SIGTERM$'
check_match "flaky: ... the attempts' ends" "$FLOG" '^navette: attempt 2 ended \(timeout: the job reached its time limit'
check_match "flaky: ... and the third" "$FLOG" '^navette: attempt 3 of 3 starts on '
check_match "flaky: status shows the attempt" "$("$NAVETTE" status "$FID" 2>&1)" '^state +succeeded · attempt 3$'

bash "$NAVETTE_SOURCE/tests/stack/slurm-node.sh" "$SLURM_STACK_DIR" start "$NODE"
check_true "the node is back" wait_for 90 sh -c "sinfo -h -n $NODE -o '%t' | grep -qx idle"

finish
