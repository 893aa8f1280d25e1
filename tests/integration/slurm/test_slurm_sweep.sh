#!/usr/bin/env bash
# Workflows on the Slurm backend, on the two-node cluster (fixture "slurm")
# and the S3 server (fixture "s3"): a 2x3 sweep goes to slurmrestd as one
# job array (one submit request, counted by a proxy in front of it), each
# task a navette job of its own (row, Slurm id ARRAY_TASK, prefix, record,
# status); a fan-in job takes the six outputs and sees exactly the bytes
# their run records list; one task is cancelled alone; a failed task
# cancels the job after the sweep, naming that task; an output changed in
# the store after its producer's record was written fails its consumer at
# data_ready, naming the sha256, the producer and the output; plan says
# when a sweep is one array and when it cannot be.
# Needs SLURM_STACK_ENV and S3_STACK_ENV (set by ctest).
set -eu -o pipefail
. "$(dirname "$0")/../lib.sh"
set +e # each check reports its own failure; finish sets the status

use_slurm_stack sweep
nv storage mb "s3://$BUCKET" "${EP[@]}"
check_rc "the bucket is created" 0

read -r PROXY_PORT SLOW_PORT < <(free_ports 2 | tr '\n' ' ')
# The slow proxy (its submissions answered 8 s late: the killed run below)
# holds its port from now: drawn now and bound minutes later, the port was
# once taken by another test's connection in between, under a loaded
# parallel run.
start_delay_proxy "$SLOW_PORT" "$T/slow.log" 8
SLOW_PROXY=$DELAY_PROXY_PID
R=$T/repo
mkdir -p "$R/recipes"
profile() { # NAME ENDPOINT [MORE SLURM KEYS]
	cat <<EOF
    $1 = {
      backend = "slurm", storage = "s3://$BUCKET/", require_pushed = false,
      s3 = { endpoint = "$S3_ENDPOINT", region = "$S3_REGION" },
      slurm = { endpoint = "$2", user = "$SLURM_USER", credential = "jwtkey",
                partition = "$SLURM_PARTITION", working_directory = "$WD",
                ${3:-} },
      max_token_lifespan = "1h",
    },
EOF
}
cat >"$R/navette.lua" <<EOF
return {
  name = "hpc",
  default_profile = "hpc",
  credentials = {
    jwtkey = { kind = "hs256", source = "file", path = "$SLURM_JWT_KEY" },
  },
  profiles = {
$(profile hpc "$SLURMRESTD_URL")
$(profile counted "http://127.0.0.1:$PROXY_PORT")
$(profile spread "$SLURMRESTD_URL" 'nodes = { "gpu-a", "gpu-b" }')
$(profile slow "http://127.0.0.1:$SLOW_PORT")
  },
}
EOF
put_file "$R" recipes/sweep.lua <<'EOF'
local navette = require "navette"
local parts = navette.sweep {
  job = { name = "part", success = { outputs = { "part.txt" } },
          command = { "sh", "-c", 'echo "lr=$NAVETTE_PARAM_LR seed=$NAVETTE_PARAM_SEED $(date +%s%N)" > "$NAVETTE_OUTPUTS/part.txt"' } }, -- portable-ok: runs on the cluster's Linux nodes
  matrix = { lr = { 1, 2 }, seed = { 1, 2, 3 } },
}
navette.job { name = "gather", inputs = { parts = navette.outputs(parts, "part.txt") },
  command = { "sh", "-c", 'for i in 1 2 3 4 5 6; do shasum -a 256 < "$NAVETTE_INPUTS/parts/$i" | cut -d" " -f1; done > "$NAVETTE_OUTPUTS/sums.txt"; cat "$NAVETTE_INPUTS"/parts/* > "$NAVETTE_OUTPUTS/all.txt"' },
  success = { outputs = { "sums.txt" } } }
EOF
put_file "$R" recipes/slow.lua <<'EOF'
local navette = require "navette"
navette.sweep { job = { name = "slow", command = { "sh", "-c", "echo task $NAVETTE_PARAM_N; sleep 12" } },
                matrix = { n = { 1, 2, 3, 4, 5, 6 } } }
EOF
put_file "$R" recipes/fail.lua <<'EOF'
local navette = require "navette"
local parts = navette.sweep { job = { name = "step", command = { "sh", "-c", '[ "$NAVETTE_PARAM_N" != 2 ] || exit 4' } },
                              matrix = { n = { 1, 2, 3 } } }
navette.job { name = "join", after = { parts }, command = { "true" } }
EOF
put_file "$R" recipes/tamper.lua <<'EOF'
local navette = require "navette"
local make = navette.job { name = "make", success = { outputs = { "out.txt" } },
  command = { "sh", "-c", 'printf original > "$NAVETTE_OUTPUTS/out.txt"' } }
local hold = navette.job { name = "hold", after = { make }, command = { "sleep", "15" } }
navette.job { name = "use", after = { hold }, inputs = { model = make:output("out.txt") },
  command = { "sh", "-c", 'cat "$NAVETTE_INPUTS/model"' } }
EOF
put_file "$R" recipes/pair.lua <<'EOF'
local navette = require "navette"
navette.sweep { job = { name = "pair", command = { "sh", "-c", "echo $NAVETTE_PARAM_N" } },
                matrix = { n = { 1, 2 } } }
EOF
git -C "$R" init -q
commit_all "$R" >/dev/null


# ---- plan: one array, or one submission per job, and why -------------------

nv_in "$R" plan recipes/sweep.lua
check_rc "plan of the sweep exits 0" 0
check_match "plan: each job is a task of the array" "$OUT" \
	'jobs submit: <id of part\[lr=2,seed=3\]> \(part\[lr=2,seed=3\]\) on hpc, task 5 of the job array'
check_match "plan: one request for the sweep" "$OUT" \
	'jobs submit-array: 6 jobs of sweep part as one job array \(one request\)'
nv_in "$R" plan recipes/sweep.lua --profile spread
check_match "plan: a node per job is no array, and plan says why" "$OUT" \
	"jobs note: sweep part: one submission per job, not one job array \(the profile's nodes are taken in turn, one node per job\)"
check_no_match "plan: then no array request" "$OUT" 'submit-array'

# ---- a 2x3 sweep and a fan-in: one array request ----------------------------

start_delay_proxy "$PROXY_PORT" "$T/proxy.log" 0 --log-submits
PROXY=$DELAY_PROXY_PID
nv_in "$R" run recipes/sweep.lua --profile counted --wait
check_rc "the sweep and its fan-in succeed" 0
check_eq "two submit requests: the array, then the fan-in" \
	"$(grep -c '^submit request$' "$T/proxy.log")" 2
TASKS=()
for lr in 1 2; do
	for seed in 1 2 3; do
		TASKS+=("$(sub_id "part\\[lr=$lr,seed=$seed\\]")")
	done
done
G=$(sub_id gather)
ARRAY=$(st "${TASKS[0]}" 'd["remote_id"]' | cut -d_ -f1)
check_match "the first task is task 0 of a Slurm array" "$(st "${TASKS[0]}" 'd["remote_id"]')" '^[0-9]+_0$'
for k in 0 1 2 3 4 5; do
	id=${TASKS[$k]}
	check_eq "task $k: its own row, Slurm id ${ARRAY}_$k" "$(st "$id" 'd["remote_id"]')" "${ARRAY}_$k"
	check_eq "task $k: succeeded, with its phases" \
		"$(st "$id" 'd["state"] + " " + " ".join(p["phase"] for p in d["phases"])')" \
		"succeeded submitted accepted image_ready data_ready running logs_visible outputs_published succeeded"
	check_eq "task $k: its own record, under its own prefix" \
		"$(s3cat "hpc/$id/navette-run.json" | json 'd["id"] + " " + d["name"] + " " + d["params"]["lr"]')" \
		"$id $(st "$id" 'd["name"]') $((k / 3 + 1))"
	check_eq "task $k: its submission is audited, as task $k of the array" \
		"$("$NAVETTE" audit show --job "$id" --json | json '[e["detail"] for e in d if e["action"] == "job.submit"]')" \
		"[\"slurm array $ARRAY task $k\"]"
	SUMS[$k]=$(s3cat "hpc/$id/navette-run.json" | json '[o["sha256"] for o in d["outputs"] if o["name"] == "part.txt"][0]')
done
nv status "${TASKS[4]}"
check_match "status names the task's Slurm job and node" "$OUT" \
	"^backend slurm · job ${ARRAY}_4 · COMPLETED on gpu-[ab]\$"
LAST_END=$(for id in "${TASKS[@]}"; do s3cat "hpc/$id/navette-run.json" | json 'd["finished_at"]'; done | sort | tail -1)
G_RUNNING=$(s3cat "hpc/$G/navette-run.json" | json '[p["at"] for p in d["phases"] if p["phase"] == "running"][0]')
check_true "the fan-in started after the last task ended ($G_RUNNING > $LAST_END)" \
	test "$G_RUNNING" \> "$LAST_END"
check_eq "the fan-in saw exactly the six outputs, by sha256, in order" \
	"$(s3cat "hpc/$G/sums.txt" | tr '\n' ' ')" "$(printf '%s ' "${SUMS[@]}")"
check_eq "its record lists them as its inputs" \
	"$(s3cat "hpc/$G/navette-run.json" | json '" ".join(i["name"] + "=" + i["sha256"] for i in d["inputs"])')" \
	"parts/1=${SUMS[0]} parts/2=${SUMS[1]} parts/3=${SUMS[2]} parts/4=${SUMS[3]} parts/5=${SUMS[4]} parts/6=${SUMS[5]}"
check_match "the parts carried their parameters" "$(s3cat "hpc/$G/all.txt" | head -1)" '^lr=1 seed=1 '
RUN=$(s3cat "hpc/$G/navette-run.json" | json 'd["run"]')
nv watch "$RUN"
check_rc "watch RUN follows the tasks and the fan-in to the end" 0
check_match "watch RUN: the run's seven jobs" "$OUT" '^run hpc-run-.* \(7 jobs\)$'
check_eq "watch RUN: each task and the fan-in succeeded" \
	"$(printf '%s\n' "$OUT" | grep -cE '^ +(part\[[^ ]*|gather) +succeeded ')" 7
kill "$PROXY" 2>/dev/null

# ---- one task cancelled, alone ----------------------------------------------

nv_in "$R" run recipes/slow.lua
check_rc "a sweep of six sleeping tasks is submitted" 0
for n in 1 2 3 4 5 6; do SLOW[$n]=$(sub_id "slow\\[n=$n\\]"); done
S0=${SLOW[1]} S1=${SLOW[2]} S5=${SLOW[6]}
check_state "task 0 runs" "$S0" running 60
nv cancel "$S0"
check_rc "cancel of a running task exits 0" 0
nv cancel "$S5"
check_rc "cancel of another task exits 0" 0
check_state "the running task ends cancelled" "$S0" cancelled 60
check_state "the other cancelled task ends cancelled" "$S5" cancelled 60
# Cancelling two tasks leaves the others alone: the neighbour is still
# running, or (12 s is short on a loaded machine) already succeeded.
check_match "its neighbour is not cancelled" "$(st "$S1" 'd["state"]')" \
	'^(running|succeeded)$'
check_state "its neighbour runs to its end" "$S1" succeeded 90
nv logs "$S1"
check_match "logs of a task: its own output" "$OUT" '^task 2$'
for n in 3 4 5; do
	check_state "task $((n - 1)) succeeded" "${SLOW[$n]}" succeeded 90
done

# ---- a failed task cancels what runs after the sweep --------------------------

nv_in "$R" run recipes/fail.lua --wait
check_rc "a sweep with a failed task: run --wait exits 1" 1
F2=$(sub_id 'step\[n=2\]')
J=$(sub_id join)
check_eq "the failed task failed" "$(st "$F2" 'd["state"]')" failed
check_eq "its neighbours succeeded" \
	"$(st "$(sub_id 'step\[n=1\]')" 'd["state"]') $(st "$(sub_id 'step\[n=3\]')" 'd["state"]')" \
	"succeeded succeeded"
check_eq "the job after the sweep: cancelled at accepted" \
	"$(st "$J" 'd["state"] + " " + d["failure"]["phase"]')" "cancelled accepted"
check_match "its reason names the failed task" "$(st "$J" 'd["failure"]["reason"]')" \
	"^it runs after step\[n=2\] \($F2\), which ended failed\$"

# ---- an output changed after its record: the consumer refuses it ------------

nv_in "$R" run recipes/tamper.lua
check_rc "producer, holder and consumer are submitted" 0
M=$(sub_id make)
U=$(sub_id use)
check_state "the producer succeeds" "$M" succeeded 60
RECORDED=$(s3cat "hpc/$M/navette-run.json" | json '[o["sha256"] for o in d["outputs"]][0]')
printf 'Original' >"$T/forged"
nv storage cp "$T/forged" "s3://$BUCKET/hpc/$M/out.txt" "${EP[@]}"
check_rc "the output is overwritten in the store (same size)" 0
check_state "the consumer fails" "$U" failed 90
check_eq "at data_ready" "$(st "$U" 'd["failure"]["phase"]')" data_ready
check_eq "naming the sha256 mismatch, the producer and the output" \
	"$(st "$U" 'd["failure"]["reason"]')" \
	"input 'model' has sha256 $(sha256 "$T/forged"), job $M's run record lists output 'out.txt' with $RECORDED"

# ---- navette killed after the array's request was sent ----------------------

(cd "$R" && exec "$NAVETTE" run recipes/pair.lua --profile slow >"$T/pair.out" 2>&1) &
RUNNER=$!
wait_for 30 grep -q "submit forwarded" "$T/slow.log" ||
	fail "the run's array request reached slurmrestd through the slow proxy"
kill -9 "$RUNNER" 2>/dev/null
wait "$RUNNER" 2>/dev/null
LOST=$("$NAVETTE" jobs --json | json '" ".join(sorted(j["id"] for j in d if j["profile"] == "slow"))')
check_match "the killed run left both tasks recorded" "$LOST" '^hpc-[^ ]+ hpc-[^ ]+$'
FIRST=$("$NAVETTE" jobs --json | json '[j["id"] for j in d if j["name"] == "pair[n=1]"][0]')
wait_for 20 sh -c "scontrol -o show jobs | grep -q ' JobName=$FIRST-array '" ||
	fail "Slurm has the killed run's array ($FIRST-array)"
nv_in "$R" run recipes/pair.lua --profile slow --wait
check_rc "the re-run succeeds" 0
check_contains "the re-run says it found the tasks" "$ERR" "already submitted as $FIRST"
check_eq "and submitted nothing again: the same two jobs" \
	"$(printf '%s\n' "$OUT" | sed -n 's/^job pair.* submitted: \(.*\)$/\1/p' | sort | tr '\n' ' ')" "$LOST "
check_match "each task adopted with its array task id" "$(st "$FIRST" 'd["remote_id"]')" '^[0-9]+_0$'
kill "$SLOW_PROXY" 2>/dev/null

finish
