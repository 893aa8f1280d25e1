#!/usr/bin/env bash
# Jobs on the Slurm backend: a real two-node cluster behind slurmrestd (the
# ctest fixture "slurm") and the S3 server (fixture "s3"). The first job
# runs with its input and outputs in S3; a deterministic job runs on gpu-a,
# then `migrate` runs it again on gpu-b and compares the run records; a
# failing command, a missing output, an expired token and a wrong key each
# fail where they should with what to check; a job cancelled while running
# is cancelled; a node whose slurmd dies mid-run gives NODE_FAIL, and the
# job is requeued and completes elsewhere when the recipe allows it;
# navette killed after its submit request is sent leaves one job, which the
# next run finds instead of submitting again; a job outlives the shell that
# submitted it; logs are followed from the chunks the node shipped.
# Needs SLURM_STACK_ENV, SLURM_STACK_DIR and S3_STACK_ENV (set by ctest).
set -eu -o pipefail
. "$(dirname "$0")/../lib.sh"
set +e # each check reports its own failure; finish sets the status

use_slurm_stack slurm

nv storage mb "s3://$BUCKET" "${EP[@]}"
check_rc "the bucket is created" 0

# a wrong key, as a file the credential layer accepts (0600, ours)
head -c 32 /dev/urandom >"$T/wrong.key"
chmod 600 "$T/wrong.key"

R=$T/repo
mkdir -p "$R/recipes"
cp "$NAVETTE_SOURCE/recipes/first-job.lua" "$R/recipes/"
cp -R "$NAVETTE_SOURCE/recipes/first-job" "$R/recipes/"
profile() { # NAME ENDPOINT CREDENTIAL [MORE SLURM KEYS]
	cat <<EOF
    $1 = {
      backend = "slurm",
      storage = "s3://$BUCKET/",
      s3 = { endpoint = "$S3_ENDPOINT", region = "$S3_REGION" },
      slurm = { endpoint = "$2", user = "$SLURM_USER",
                credential = "$3", partition = "$SLURM_PARTITION",
                working_directory = "$WD", ${4:-} },
      max_token_lifespan = "1h",
    },
EOF
}
PROXY_PORT=$(free_ports 1)
cat >"$R/navette.lua" <<EOF
return {
  name = "hpc",
  default_profile = "hpc",
  credentials = {
    jwtkey = { kind = "hs256", source = "file", path = "$SLURM_JWT_KEY" },
    wrongkey = { kind = "hs256", source = "file", path = "$T/wrong.key" },
    token = { kind = "bearer", source = "env", env = { token = "SLURM_TEST_TOKEN" } },
  },
  profiles = {
$(profile hpc "$SLURMRESTD_URL" jwtkey)
$(profile wrong "$SLURMRESTD_URL" wrongkey)
$(profile pretoken "$SLURMRESTD_URL" token)
$(profile slow "http://127.0.0.1:$PROXY_PORT" jwtkey)
$(profile spread "$SLURMRESTD_URL" jwtkey 'nodes = { "gpu-b", "gpu-a" }, requeue = true')
  },
}
EOF
put_file "$R" recipes/same.lua <<'EOF'
local navette = require "navette"
local data = navette.storage.put_string("inputs/same.txt", "the same input\n")
navette.job {
  name = "same",
  inputs = { d = data.url },
  command = { "sh", "-c", "shasum -a 256 < \"$NAVETTE_INPUTS/d\" > \"$NAVETTE_OUTPUTS/sum.txt\"; echo \"$NAVETTE_COMMIT\" > \"$NAVETTE_OUTPUTS/commit.txt\"; echo ran on $SLURMD_NODENAME" },
  success = { outputs = { "sum.txt" } },
  resources = { cpus = 1, time_limit = "5m" },
}
EOF
put_file "$R" recipes/fail.lua <<'EOF'
local navette = require "navette"
navette.job { name = "exit3", command = { "sh", "-c", "echo about to fail; exit 3" } }
navette.job { name = "missing", command = { "true" },
              success = { outputs = { "model.bin" } } }
EOF
put_file "$R" recipes/graph.lua <<'EOF'
local navette = require "navette"
local first = navette.job { name = "first", command = { "sh", "-c",
  'sleep 3; date +%s > "$NAVETTE_OUTPUTS/end.txt"' } }
navette.job { name = "second", after = { first }, command = { "sh", "-c",
  'date +%s > "$NAVETTE_OUTPUTS/start.txt"' } }
local bad = navette.job { name = "bad", command = { "false" } }
navette.job { name = "never", after = { bad }, command = { "true" } }
EOF
put_file "$R" recipes/sleepy.lua <<'EOF'
local navette = require "navette"
navette.job { name = "sleepy", command = { "sh", "-c", "echo started; sleep 120" } }
EOF
put_file "$R" recipes/fragile.lua <<'EOF'
local navette = require "navette"
navette.job { name = "fragile", requeue = true,
              command = { "sh", "-c", "echo on $SLURMD_NODENAME; sleep 25; echo done > \"$NAVETTE_OUTPUTS/done.txt\"" },
              success = { outputs = { "done.txt" } } }
EOF
put_file "$R" recipes/fragile-once.lua <<'EOF'
local navette = require "navette"
navette.job { name = "once", command = { "sh", "-c", "sleep 60" } }
EOF
put_file "$R" recipes/pair.lua <<'EOF'
local navette = require "navette"
navette.job { name = "one", command = { "true" } }
navette.job { name = "two", command = { "true" } }
navette.job { name = "own", command = { "true" }, requeue = false,
              resources = { nodes = "gpu-a" } }
EOF
put_file "$R" recipes/chatty.lua <<'EOF'
local navette = require "navette"
navette.job { name = "chatty",
  command = { "sh", "-c", "for i in 1 2 3 4 5; do echo line $i; sleep 1; done" } }
EOF
put_file "$R" recipes/unknown.lua <<'EOF'
local navette = require "navette"
navette.job { name = "unknown", command = { "true" },
              resources = { partition = "no-such-partition" } }
EOF
git -C "$R" init -q
HEAD=$(commit_all "$R")
git init -q --bare "$T/origin.git"
git -C "$R" remote add origin "$T/origin.git"
git -C "$R" push -q origin HEAD:main 2>/dev/null
git -C "$R" fetch -q origin

slurm_id() { st "$1" 'd["remote_id"]'; }
# jobs Slurm knows by that name (finished ones too, for MinJobAge)
squeue_named() { scontrol -o show jobs 2>/dev/null | grep -c " JobName=$1 "; }

# ---- the first job on Slurm, inputs and outputs in S3 ----------------------

nv_in "$R" run recipes/first-job.lua --wait
check_rc "first job on Slurm: run --wait exits 0" 0
ID=$(submitted_id)
check_match "it printed each phase and succeeded" "$OUT" '^ *succeeded\b'
for p in submitted accepted image_ready data_ready running logs_visible outputs_published; do
	check_match "watch showed $p" "$OUT" "^ *$p "
done
RESULT=$(s3cat "hpc/$ID/result.txt")
check_match "the result is in S3 under the job's prefix" "$RESULT" "^commit=$HEAD\$"
REC=$(s3cat "hpc/$ID/navette-run.json")
check_eq "the record says succeeded" "$(printf '%s' "$REC" | json 'd["state"]')" succeeded
check_eq "the record says slurm" "$(printf '%s' "$REC" | json 'd["backend"]')" slurm
nv status "$ID"
check_rc "status exits 0" 0
check_match "status names the Slurm job and its node" "$OUT" \
	'^backend slurm · job [0-9]+ · COMPLETED on gpu-[ab]$'
check_eq "status --json: outputs from the record" \
	"$(st "$ID" '[o["name"] for o in d["outputs"]]')" '["result.txt"]'
nv logs "$ID"
check_match "logs shows the command's output" "$OUT" '^first-job: wrote result.txt$'
check_eq "no local workspace is left on the node" \
	"$(ls -d /tmp/navette-"$ID" 2>/dev/null | wc -l | tr -d ' ')" 0

# ---- a change of node, tested ---------------------------------------------------

nv_in "$R" run recipes/same.lua --node gpu-a --wait
check_rc "the deterministic job runs on gpu-a" 0
A=$(submitted_id)
check_match "it ran on gpu-a" "$(st "$A" 'd["slurm"]["nodes"]')" '^gpu-a$'
# the job runs on the nodes' own environment (no image), and the project
# reads the cluster's key from the stack's folder (a file of this machine):
# the portability rules refuse the move
nv migrate "$A" --to gpu-b
check_rc "migrate to gpu-b is refused by the portability rules (exit 3)" 3
check_match "it names the rule of the hand-installed dependency" "$ERR" \
	'rule 2 \(no hand-installed dependency\) fails'
check_match "and the key file of this machine" "$ERR" \
	"credential jwtkey: its source is the file $SLURM_JWT_KEY, which is this machine's"
check_no_match "the code, image and data rule holds (a pushed commit)" "$ERR" \
	'rule 1 \('
check_match "with the action to take" "$ERR" '-> rebuild an image first'
check_match "and how to go on anyway" "$ERR" 'with --force \(audited\)'
nv migrate "$A" --to gpu-b --force
check_rc "migrate --force to gpu-b: the comparison holds (exit 0)" 0
check_match "the forced move says which rules it overrode" "$ERR" \
	'over the portability rules 2, 4 \(--force, audited\)'
check_eq "the audit log holds the forced move" \
	"$(grep -c '"action":"migrate.force"' "$NAVETTE_HOME/audit/audit.jsonl")" 1
MIGRATE_OUT=$OUT
B=$(printf '%s\n' "$OUT" | sed -n 's/.* submitted again on gpu-b: \(.*\)$/\1/p')
check_match "migrate printed the new job" "$B" '^hpc-'
check_match "the new run was on gpu-b" "$(st "$B" 'd["slurm"]["nodes"]')" '^gpu-b$'
check_match "the comparison names both nodes" "$OUT" "\\(on gpu-a\\)"
check_match "logs present in both" "$OUT" 'log .* present in both'
check_match "the declared output is in both" "$OUT" 'declared sum.txt .* present in both'
check_match "checksums equal" "$OUT" '^  sum.txt .* sha256 equal'
check_match "the two nodes' fingerprints side by side" "$OUT" \
	'^  kernel .* same$'
check_eq "same commit" "$(st "$B" 'd["commit"]')" "$HEAD"
check_eq "the new run's record says where it came from" \
	"$(s3cat "hpc/$B/navette-run.json" | json 'd["state"]')" succeeded
echo "$MIGRATE_OUT" >"$T/migrate.txt"
[ -n "${NAVETTE_KEEP_OUTPUT:-}" ] && cp "$T/migrate.txt" "$NAVETTE_KEEP_OUTPUT/"

# ---- a profile's node list and requeue default ---------------------------------

nv_in "$R" run recipes/pair.lua --profile spread --wait
check_rc "a profile with a node list: the jobs succeed" 0
P1=$(printf '%s\n' "$OUT" | sed -n 's/^job one submitted: \(.*\)$/\1/p')
P2=$(printf '%s\n' "$OUT" | sed -n 's/^job two submitted: \(.*\)$/\1/p')
P3=$(printf '%s\n' "$OUT" | sed -n 's/^job own submitted: \(.*\)$/\1/p')
check_eq "the first job went to the list's first node" "$(st "$P1" 'd["slurm"]["nodes"]')" gpu-b
check_eq "the second job to its second node" "$(st "$P2" 'd["slurm"]["nodes"]')" gpu-a
check_eq "a job naming its nodes keeps them" "$(st "$P3" 'd["slurm"]["nodes"]')" gpu-a
for j in one two own; do
	check_eq "watch: $j's end comes after its last phase" \
		"$(printf '%s\n' "$OUT" | awk -v j="$j" '$1 == j && $2 ~ /^[a-z_]+$/ { last = $2 } END { print last }')" succeeded
done
check_eq "status: the end is the last phase, in time too" \
	"$(st "$P1" '[p["phase"] for p in sorted(d["phases"], key=lambda p: p["at"])][-1]')" succeeded
nv_in "$R" jobs --profile spread -l
check_match "jobs --profile lists a job with its Slurm job, state and node" "$OUT" \
	"^$P1 +succeeded +[0-9]+[smhd] +[^ ]+ +[a-z_]+ +[0-9]+ COMPLETED gpu-b +one\$"
check_eq "jobs --profile lists that profile's three jobs" \
	"$(printf '%s\n' "$OUT" | grep -c '^hpc-')" 3
requeue_of() { scontrol -o show job "$(slurm_id "$1")" 2>/dev/null | grep -o ' Requeue=[0-9]' | cut -d= -f2; }
check_eq "the profile's requeue = true reaches Slurm" "$(requeue_of "$P1")" 1
check_eq "a job's requeue = false overrides the profile's" "$(requeue_of "$P3")" 0

# ---- failures ---------------------------------------------------------------

nv_in "$R" run recipes/fail.lua --wait
check_rc "failing jobs: exit 1" 1
E3=$(printf '%s\n' "$OUT" | sed -n 's/^job exit3 submitted: \(.*\)$/\1/p')
MS=$(printf '%s\n' "$OUT" | sed -n 's/^job missing submitted: \(.*\)$/\1/p')
check_eq "exit 3: failed in phase running" \
	"$(st "$E3" 'd["state"] + " " + d["failure"]["phase"]')" "failed running"
check_eq "exit 3: its exit code" "$(st "$E3" 'd["exit_code"]')" 3
check_match "exit 3: the reason names it" "$(st "$E3" 'd["failure"]["reason"]')" 'status 3'
check_eq "missing output: failed after the run" \
	"$(st "$MS" 'd["state"] + " " + d["failure"]["phase"]')" \
	"failed outputs_published"
check_contains "missing output: the hint names the publication path" \
	"$(st "$MS" 'd["failure"]["hint"]')" "publication path"

nv_in "$R" run recipes/unknown.lua
check_ne "an unknown partition is refused" "$RC" 0
check_contains "the error names the partition" "$ERR" "partition"

# identity: an expired pre-issued token, and a key the cluster does not know
TOKEN=$(scontrol token username="$SLURM_USER" lifespan=2 | sed -n 's/^SLURM_JWT=//p')
sleep 4
SLURM_TEST_TOKEN=$TOKEN nv_in "$R" run recipes/same.lua --profile pretoken
check_rc "an expired token is refused (3)" 3
check_match "it says which identity problem to check" "$ERR" '[Tt]oken'
check_no_match "never a raw HTTP 500" "$ERR" 'HTTP 500'
check_no_match "the token never shows" "$ERR$OUT" "${TOKEN:0:20}"
FID=$("$NAVETTE" jobs --json | json '[j["id"] for j in d if j["profile"] == "pretoken"][0]')
check_eq "the refused job is recorded as failed at accepted" \
	"$(st "$FID" 'd["state"] + " " + d["failure"]["phase"]')" "failed accepted"
nv_in "$R" run recipes/same.lua --profile wrong
check_rc "a wrong key is refused (3)" 3
check_match "it says to check the key" "$ERR" '[Kk]ey|[Tt]oken'

# ---- cancel while running ----------------------------------------------------------

nv_in "$R" run recipes/sleepy.lua
SID=$(submitted_id)
check_state "sleepy: running" "$SID" running 60
nv_in "$R" jobs --profile hpc --json
check_eq "jobs --profile: the running job as Slurm has it" \
	"$(printf '%s' "$OUT" | json '[j["slurm"]["state"] + " " + str(j["slurm"]["job_id"] > 0) for j in d if j["id"] == "'"$SID"'"][0]')" "RUNNING True"
check_eq "jobs --profile: only that profile's jobs" \
	"$(printf '%s' "$OUT" | json 'sorted(set(j["profile"] for j in d))')" '["hpc"]'
nv cancel "$SID"
check_rc "cancel exits 0" 0
check_state "sleepy: cancelled" "$SID" cancelled 60
check_match "Slurm says CANCELLED" "$(st "$SID" 'd["slurm"]["state"]')" CANCELLED

# ---- logs followed from the node's chunks ------------------------------------

nv_in "$R" run recipes/chatty.lua
CID=$(submitted_id)
nv logs "$CID" --follow
check_rc "logs --follow ends with the job" 0
check_eq "logs --follow showed every line, once" \
	"$(printf '%s\n' "$OUT" | grep -c '^line [1-5]$')" 5
check_eq "the job ended" "$(st "$CID" 'd["state"]')" succeeded

# ---- watch from the laptop, from submission to the end -----------------------

# (the same job again: --no-reuse, or the last one would be reused)
nv_in "$R" run recipes/chatty.lua --no-reuse
WID=$(submitted_id)
nv watch "$WID"
check_rc "watch of a Slurm job exits 0 when it succeeds" 0
WATCHED=$(printf '%s\n' "$OUT" | awk 'NF == 2 && $2 ~ /^[0-9][0-9]:[0-9][0-9]:/ { print $1 }' | tr '\n' ' ')
check_eq "watch showed every phase, in order, the end last" "$WATCHED" \
	"submitted accepted image_ready data_ready running logs_visible outputs_published succeeded "

# ---- a node dies mid-run ---------------------------------------------------------

nv_in "$R" run recipes/fragile-once.lua --node gpu-a
OID=$(submitted_id)
check_state "once: running on gpu-a" "$OID" running 60
bash "$NAVETTE_SOURCE/tests/stack/slurm-node.sh" "$SLURM_STACK_DIR" kill gpu-a
check_state "once: failed when its node died" "$OID" failed 90
check_match "NODE_FAIL is reported" "$(st "$OID" 'd["failure"]["reason"]')" NODE_FAIL
check_eq "in phase running" "$(st "$OID" 'd["failure"]["phase"]')" running
bash "$NAVETTE_SOURCE/tests/stack/slurm-node.sh" "$SLURM_STACK_DIR" start gpu-a
wait_for 60 sh -c "sinfo -h -n gpu-a -o '%t' | grep -qx idle"

nv_in "$R" run recipes/fragile.lua
FRID=$(submitted_id)
check_state "fragile: running" "$FRID" running 60
NODE=$(st "$FRID" 'd["slurm"]["nodes"]')
bash "$NAVETTE_SOURCE/tests/stack/slurm-node.sh" "$SLURM_STACK_DIR" kill "$NODE"
check_state "fragile: requeued and completed elsewhere" "$FRID" succeeded 240
# Slurm's own count of requeues (every run of the job prints one "on"
# line, so the log alone cannot tell a requeue)
RESTARTS=$(st "$FRID" 'd["slurm"]["restarts"]')
check_true "fragile: Slurm requeued it (restarts: $RESTARTS)" \
	test "$RESTARTS" -ge 1
FINAL_NODE=$(st "$FRID" 'd["slurm"]["nodes"]')
check_ne "fragile: it finished on the other node" "$FINAL_NODE" "$NODE"
check_match "fragile: the published log is of the run on that node" \
	"$(s3cat "hpc/$FRID/navette.log")" "^on $FINAL_NODE\$"
bash "$NAVETTE_SOURCE/tests/stack/slurm-node.sh" "$SLURM_STACK_DIR" start "$NODE"
wait_for 60 sh -c "sinfo -h -n $NODE -o '%t' | grep -qx idle"

# ---- navette killed after the submit request is sent ---------------------------

start_delay_proxy "$PROXY_PORT" "$T/proxy.log" 8
PROXY=$DELAY_PROXY_PID
(cd "$R" && exec "$NAVETTE" run recipes/same.lua --profile slow >"$T/slow.out" 2>&1) &
RUNNER=$!
wait_for 30 grep -q "submit forwarded" "$T/proxy.log"
kill -9 "$RUNNER" 2>/dev/null
wait "$RUNNER" 2>/dev/null
LOST=$("$NAVETTE" jobs --json | json '[j["id"] for j in d if j["profile"] == "slow"][0]')
check_match "the killed run left its job recorded" "$LOST" '^hpc-'
check_eq "the killed run never had Slurm's answer (no Slurm id recorded)" \
	"$("$NAVETTE" jobs --json | json "[j.get('remote_id') for j in d if j['id'] == '$LOST'][0]")" null
wait_for 20 sh -c "scontrol -o show jobs | grep -q ' JobName=$LOST '"
check_eq "Slurm has the job the lost answer was for" "$(squeue_named "$LOST")" 1
nv_in "$R" run recipes/same.lua --profile slow --wait
check_rc "the re-run succeeds" 0
check_contains "the re-run says it found the job" "$ERR" "already submitted as $LOST"
check_eq "and did not submit again: the job is the lost one" \
	"$(submitted_id)" "$LOST"
check_eq "one Slurm job carries that id" "$(squeue_named "$LOST")" 1
check_eq "the adopted job succeeded" "$(st "$LOST" 'd["state"]')" succeeded
kill "$PROXY" 2>/dev/null

# ---- after: Slurm's afterok ----------------------------------------------------

nv_in "$R" run recipes/graph.lua --wait
check_rc "a graph with a failed job: run --wait exits 1" 1
G1=$(sub_id first)
G2=$(sub_id second)
GB=$(sub_id bad)
GN=$(sub_id never)
check_eq "after: the first job succeeded" "$(st "$G1" 'd["state"]')" succeeded
check_eq "after: the second job succeeded" "$(st "$G2" 'd["state"]')" succeeded
START=$(s3cat "hpc/$G2/start.txt")
END=$(s3cat "hpc/$G1/end.txt")
check_true "after: second started once first ended ($START >= $END)" \
	test "${START:-0}" -ge "${END:-1}"
check_eq "a job after a failed one: cancelled at accepted" \
	"$(st "$GN" 'd["state"] + " " + d["failure"]["phase"]')" \
	"cancelled accepted"
check_match "its reason names the failed job" \
	"$(st "$GN" 'd["failure"]["reason"]')" \
	"^it runs after bad \($GB\), which ended failed\$"

# ---- the submitting shell killed --------------------------------------------------

bash -c "cd '$R' && '$NAVETTE' run recipes/same.lua --no-reuse > '$T/shell.out' 2>&1; sleep 30" &
SHELL_PID=$!
wait_for 30 grep -q submitted "$T/shell.out"
kill -9 "$SHELL_PID" 2>/dev/null
SHID=$(sed -n 's/^job same submitted: \(.*\)$/\1/p' "$T/shell.out")
check_state "the job of a killed shell completes, and status shows it" \
	"$SHID" succeeded 120

finish
