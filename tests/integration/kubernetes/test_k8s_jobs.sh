#!/usr/bin/env bash
# The kubernetes backend (lua/navette/backends/kubernetes.lua) against the
# real test control plane, with an S3 store and a registry: `navette run`
# of recipes whose jobs become batch/v1 Jobs and their Secrets, run by
# kubelet.py (--host: the pod's container, from the spec the real Job
# controller wrote, with its Secret's files and its environment), which
# publishes through S3 as on a node. Checked: a job through every phase to
# succeeded, with its output and run record; the Job and Secret as the API
# server has them (labels, owner, no secret in the env, the image by
# digest, restartPolicy Never, the TTL set only once the record is read);
# an exit code 3, named, and failed at running; a 3x2 sweep as one
# Indexed Job, each task its own job, then a fan-in that runs after them
# (navette's `after`: held suspended, released once they succeeded); a
# job that cannot run because the one it runs after failed; a GPU request
# no node fits (accepted, the scheduler's reason); a deadline; a retried
# exit code; a preemption; `navette watch` following by one watch of the
# profile's jobs, through a restart of the cluster (410: listed again);
# an exec credential renewed while a watch follows; the tasks of a held
# sweep cancelled together (one alone refused); cancel (the Job deleted,
# the Secret with it); logs; plan (the manifests, nothing sent); doctor
# (the access reviews); a reader refused with the cause.
# Needs NAVETTE, K8S_STACK_ENV, S3_STACK_ENV and REGISTRY_STACK_ENV (set by
# ctest).
set -eu -o pipefail
. "$(dirname "$0")/../lib.sh"
set +e # each check reports its own failure; finish sets the status
. "$(dirname "$0")/k8s_lib.sh"
. "$(dirname "$0")/../image_lib.sh"

use_s3_stack k8sjobs
export NAVETTE_LOG_INTERVAL=1
k8s_namespace navette-t-jobs

nv storage mb "s3://$BUCKET" "${EP[@]}"
check_rc "the bucket is created" 0
BASE=$PLAIN/$RUN_ID/base
make_base "$PLAIN" "$RUN_ID/base:1" >/dev/null
check_match "the base image is pushed" "$(skopeo_digest "$BASE:1")" '^sha256:'

# the containers: run on this machine by kubelet.py, until the test ends
kubelet_start host

k8s_user_kubeconfig

git init -q --bare "$T/origin.git"
R=$(NO_PROJECT_FILE=1 new_repo k8s)
git -C "$R" remote add origin "$T/origin.git"
cat >"$R/navette.lua" <<EOF
return {
  name = "k8s",
  profiles = {
    cluster = {
      backend = "kubernetes", storage = "s3://$BUCKET/jobs/",
      s3 = { endpoint = "$S3_ENDPOINT", region = "$S3_REGION" },
      kubernetes = { namespace = "$NS", ttl = 600 },
    },
    viaexec = {
      backend = "kubernetes", storage = "s3://$BUCKET/viaexec/",
      s3 = { endpoint = "$S3_ENDPOINT", region = "$S3_REGION" },
      kubernetes = { namespace = "$NS", context = "exec" },
    },
    reader = {
      backend = "kubernetes", storage = "s3://$BUCKET/reader/",
      s3 = { endpoint = "$S3_ENDPOINT", region = "$S3_REGION" },
      kubernetes = { namespace = "$NS", context = "reader" },
    },
  },
  default_profile = "cluster",
}
EOF
cat >"$R/hello.lua" <<EOF
local navette = require "navette"
local data = navette.storage.put_string("inputs/data.txt", "the data\n")
navette.job {
  name = "hello", image = "$BASE:1",
  inputs = { d = data.url },
  command = { "sh", "-c", "echo hello from the job; cp \"\$NAVETTE_INPUTS/d\" \"\$NAVETTE_OUTPUTS/out.txt\"" },
  env = { GREETING = "hi" },
  resources = { cpus = 1, memory = "1GiB", gpus = 1, time_limit = "10m" },
  success = { outputs = { "out.txt" } },
}
EOF
cat >"$R/fail.lua" <<EOF
local navette = require "navette"
navette.job { name = "three", image = "$BASE:1",
              command = { "sh", "-c", "echo failing; exit 3" } }
EOF
cat >"$R/sweep.lua" <<EOF
local navette = require "navette"
local parts = navette.sweep {
  job = { name = "part", image = "$BASE:1",
          command = { "sh", "-c", "echo \"\$NAVETTE_PARAM_A-\$NAVETTE_PARAM_B\" > \"\$NAVETTE_OUTPUTS/part.txt\"" },
          success = { outputs = { "part.txt" } } },
  matrix = { a = { 1, 2, 3 }, b = { "x", "y" } },
}
navette.job {
  name = "total", image = "$BASE:1",
  inputs = { parts = navette.outputs(parts, "part.txt") },
  command = { "sh", "-c", "cat \"\$NAVETTE_INPUTS\"/parts/* | sort > \"\$NAVETTE_OUTPUTS/total.txt\"" },
  success = { outputs = { "total.txt" } },
}
EOF
cat >"$R/chain.lua" <<EOF
local navette = require "navette"
local first = navette.job { name = "first", image = "$BASE:1",
                            command = { "sh", "-c", "exit 5" } }
navette.job { name = "second", image = "$BASE:1", after = { first },
              command = { "true" } }
EOF
cat >"$R/big.lua" <<EOF
local navette = require "navette"
navette.job { name = "big", image = "$BASE:1", resources = { gpus = 16 },
              command = { "true" } }
EOF
cat >"$R/slow.lua" <<EOF
local navette = require "navette"
navette.job { name = "slow", image = "$BASE:1",
              command = { "sh", "-c", "echo started; sleep 300" } }
EOF
cat >"$R/late.lua" <<EOF
local navette = require "navette"
navette.job { name = "late", image = "$BASE:1",
              resources = { time_limit = 4 },
              command = { "sh", "-c", "echo waiting; sleep 120" } }
EOF
# counts its runs in its checkpoint: fails the first, succeeds after
cat >"$R/flaky.lua" <<EOF
local navette = require "navette"
navette.job {
  name = "flaky", image = "$BASE:1",
  retries = { max = 1, on = { "exit:4" } },
  checkpoint = { every = 1 },
  command = { "sh", "-c", "n=\$(cat \"\$NAVETTE_CHECKPOINT/n\" 2>/dev/null || echo 0); n=\$((n + 1)); echo \$n > \"\$NAVETTE_CHECKPOINT/n\"; [ \$n -ge 2 ] || exit 4; echo \$n > \"\$NAVETTE_OUTPUTS/runs.txt\"" },
  success = { outputs = { "runs.txt" } },
}
EOF
# the first run waits to be preempted; the one after it ends
cat >"$R/moved.lua" <<EOF
local navette = require "navette"
navette.job {
  name = "moved", image = "$BASE:1",
  checkpoint = { every = 1 },
  command = { "sh", "-c", "n=\$(cat \"\$NAVETTE_CHECKPOINT/n\" 2>/dev/null || echo 0); n=\$((n + 1)); echo \$n > \"\$NAVETTE_CHECKPOINT/n\"; [ \$n -ge 2 ] || sleep 300; echo \$n > \"\$NAVETTE_OUTPUTS/runs.txt\"" },
  success = { outputs = { "runs.txt" } },
}
EOF
# waits on this machine (kubelet.py --host) until the test opens its gate
cat >"$R/gate.lua" <<EOF
local navette = require "navette"
navette.job { name = "gate", image = "$BASE:1",
              command = { "sh", "-c", "echo waiting; while [ ! -e '$T/gate' ]; do sleep 0.2; done; echo through" } }
EOF
# lasts longer than an exec credential's renewal (3 s after it is made)
cat >"$R/nap.lua" <<EOF
local navette = require "navette"
navette.job { name = "nap", image = "$BASE:1",
              command = { "sh", "-c", "sleep 8; echo rested" } }
EOF
# a sweep whose tasks no node fits (16 GPUs each)
cat >"$R/bigsweep.lua" <<EOF
local navette = require "navette"
navette.sweep { job = { name = "wide", image = "$BASE:1",
                        resources = { gpus = 16 }, command = { "true" } },
                matrix = { n = { 1, 2 } } }
EOF
# a sweep held until a job that waits for the test's second gate
cat >"$R/heldsweep.lua" <<EOF
local navette = require "navette"
local opener = navette.job { name = "opener", image = "$BASE:1",
  command = { "sh", "-c", "while [ ! -e '$T/gate2' ]; do sleep 0.2; done" } }
navette.sweep { job = { name = "held", image = "$BASE:1", after = { opener },
                        command = { "true" } },
                matrix = { n = { 1, 2 } } }
EOF
commit_all "$R" >/dev/null
git -C "$R" push -q origin HEAD:main 2>/dev/null
nv_in "$R" trust
check_rc "the project is trusted" 0

# ---- plan: the manifests, nothing sent ---------------------------------------
nv_in "$R" plan hello.lua --launcher
check_rc "plan succeeds" 0
check_contains "plan lists the Job's request" "$OUT" "request  POST /apis/batch/v1/namespaces/$NS/jobs"
check_contains "and the Secret's" "$OUT" "request  POST /api/v1/namespaces/$NS/secrets"
check_match "and shows the manifest" "$OUT" '"restartPolicy":[[:space:]]*"Never"'
check_eq "plan created no Job" "$(kc -n "$NS" get jobs -o name | wc -l | tr -d ' ')" 0
nv_in "$R" plan hello.lua --json
check_eq "plan --json has the Job manifest" \
	"$(printf '%s' "$OUT" | json 'd["jobs"][0]["requests"][0]["body"]["kind"]')" Job

# ---- doctor --------------------------------------------------------------------
nv_in "$R" doctor --profile cluster
check_contains "doctor: the context and server" "$OUT" "ok    kubernetes: context submitter"
check_contains "doctor: may create Jobs" "$OUT" "ok    kubernetes may create jobs: in namespace $NS"
nv_in "$R" doctor --profile reader
check_contains "doctor: the reader may not create Jobs" "$OUT" "fail  kubernetes may create jobs: not in namespace $NS"

# ---- one job through every phase ---------------------------------------------
nv_in "$R" run hello.lua --wait
check_rc "the job succeeds" 0
ID=$(printf '%s\n' "$OUT" | sed -n 's/^job hello submitted: \(.*\)$/\1/p')
check_match "its id" "$ID" '^k8s-'
check_eq "status: succeeded" "$(st "$ID" 'd["state"]')" succeeded
check_eq "its backend" "$(st "$ID" 'd["backend"]')" kubernetes
check_eq "every phase" "$(st "$ID" '" ".join(p["phase"] for p in d["phases"])')" \
	"submitted accepted image_ready data_ready running logs_visible outputs_published succeeded"
check_eq "the output is published" "$(s3cat "jobs/k8s/$ID/out.txt")" "the data"
record=$(s3cat "jobs/k8s/$ID/navette-run.json")
check_contains "the record is published" "$record" "\"id\":\"$ID\""
check_contains "it names the node the pod ran on" "$record" 'kwok-gpu-'
job_json=$(kc -n "$NS" get job "$ID" -o json)
jq_() { printf '%s' "$job_json" | json "$1"; }
check_eq "the Job has navette's label" "$(jq_ 'd["metadata"]["labels"]["navette/job"]')" "$ID"
check_eq "restartPolicy Never" "$(jq_ 'd["spec"]["template"]["spec"]["restartPolicy"]')" Never
check_match "the image by digest" "$(jq_ 'd["spec"]["template"]["spec"]["containers"][0]["image"]')" '@sha256:[0-9a-f]{64}$'
check_eq "1 GPU asked" "$(jq_ 'd["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"]')" 1
check_eq "the TTL is set once the record is read" "$(jq_ 'd["spec"].get("ttlSecondsAfterFinished")')" 600
env_text=$(jq_ 'json.dumps(d["spec"]["template"]["spec"]["containers"][0]["env"])')
check_no_match "no presigned URL in the Job's env" "$env_text" 'X-Amz-Signature'
check_eq "the Secret is owned by the Job" \
	"$(kc -n "$NS" get secret "$ID" -o 'jsonpath={.metadata.ownerReferences[0].name}')" "$ID"
nv logs "$ID"
check_contains "logs: the job's log" "$OUT" "hello from the job"

# ---- a submission killed between the Job and its Secret, run again ----------
# (--no-reuse: the job above would be reused, and nothing submitted)
NAVETTE_FAULT=k8s-job-created nv_in "$R" run hello.lua --no-reuse
check_rc "killed after the Job's creation" 137
KID=$(kc -n "$NS" get jobs -l navette/job -o json | json '[j["metadata"]["name"] for j in d["items"] if j["spec"].get("suspend")][0]')
check_match "the Job is there, suspended" "$KID" '^k8s-'
check_eq "without its Secret" "$(kc -n "$NS" get secret "$KID" -o name 2>/dev/null | wc -l | tr -d ' ')" 0
nv_in "$R" run hello.lua --wait --no-reuse
check_rc "the same run again completes the submission" 0
check_contains "under the same id" "$OUT" "job hello submitted: $KID"
check_eq "the job succeeded" "$(st "$KID" 'd["state"]')" succeeded
check_eq "one Job for it" "$(kc -n "$NS" get jobs -l "navette/job=$KID" -o name | wc -l | tr -d ' ')" 1

# ---- an exit code 3 ----------------------------------------------------------------
nv_in "$R" run fail.lua --wait
check_rc "a failing job fails the run" 1
FID=$(printf '%s\n' "$OUT" | sed -n 's/^job three submitted: \(.*\)$/\1/p')
check_eq "status: failed" "$(st "$FID" 'd["state"]')" failed
check_eq "at running" "$(st "$FID" 'd["failure"]["phase"]')" running
check_eq "exit code 3" "$(st "$FID" 'd["exit_code"]')" 3
check_eq "the Job failed by its podFailurePolicy" \
	"$(kc -n "$NS" get job "$FID" -o 'jsonpath={.status.conditions[?(@.type=="Failed")].reason}')" PodFailurePolicy

# ---- a 3x2 sweep as one Indexed Job, then a fan-in -------------------------------
nv_in "$R" run sweep.lua --wait
check_rc "the sweep and its fan-in succeed" 0
check_eq "one Indexed Job for the sweep, one for the fan-in" \
	"$(kc -n "$NS" get jobs -l navette/project=k8s -o json | json 'sorted(str(j["spec"].get("completions")) + "/" + str(j["spec"].get("completionMode")) for j in d["items"] if j["metadata"]["labels"]["navette/job"] not in ("'"$ID"'", "'"$FID"'", "'"$KID"'"))')" \
	'["1/Indexed", "6/Indexed"]'
parts=$(printf '%s\n' "$OUT" | sed -n 's/^job part\[.*\] submitted: \(.*\)$/\1/p')
check_eq "six jobs of the sweep" "$(printf '%s\n' "$parts" | grep -c .)" 6
got=
for p in $parts; do got="$got $(s3cat "jobs/k8s/$p/part.txt")"; done
check_eq "each task its own output" "$(printf '%s\n' $got | sort | tr '\n' ' ')" "1-x 1-y 2-x 2-y 3-x 3-y "
TID=$(printf '%s\n' "$OUT" | sed -n 's/^job total submitted: \(.*\)$/\1/p')
check_eq "the fan-in succeeded" "$(st "$TID" 'd["state"]')" succeeded
check_eq "with its producers' outputs" "$(s3cat "jobs/k8s/$TID/total.txt" | tr '\n' ' ')" "1-x 1-y 2-x 2-y 3-x 3-y "

# ---- after a job that failed ----------------------------------------------------------
nv_in "$R" run chain.lua --wait
check_rc "the chain fails" 1
SID=$(printf '%s\n' "$OUT" | sed -n 's/^job second submitted: \(.*\)$/\1/p')
check_eq "the second job is cancelled" "$(st "$SID" 'd["state"]')" cancelled
check_contains "saying why" "$(st "$SID" 'd["failure"]["reason"]')" "runs after first"
check_eq "its Job was deleted" "$(kc -n "$NS" get job "$SID" -o name 2>/dev/null | wc -l | tr -d ' ')" 0

# ---- 16 GPUs on 8-GPU nodes: accepted, with the scheduler's reason --------------------
nv_in "$R" run big.lua
check_rc "the big job is submitted" 0
BID=$(printf '%s\n' "$OUT" | sed -n 's/^job big submitted: \(.*\)$/\1/p')
big_reason() { case $(st "$BID" 'd.get("kubernetes", {}).get("reason", "")') in *"Insufficient nvidia.com/gpu"*) return 0 ;; esac; return 1; }
wait_for 60 big_reason
check_true "status names the scheduler's reason" big_reason
check_eq "it waits at accepted" "$(st "$BID" 'd["state"]')" queued

# ---- a deadline: activeDeadlineSeconds --------------------------------------------
nv_in "$R" run late.lua --wait
check_rc "a job past its time limit fails the run" 1
LID=$(printf '%s\n' "$OUT" | sed -n 's/^job late submitted: \(.*\)$/\1/p')
check_eq "status: failed" "$(st "$LID" 'd["state"]')" failed
check_contains "the reason: its time limit" "$(st "$LID" 'd["failure"]["reason"]')" "time limit 4 s reached"
check_eq "the Job says DeadlineExceeded" \
	"$(kc -n "$NS" get job "$LID" -o 'jsonpath={.status.conditions[?(@.type=="Failed")].reason}')" DeadlineExceeded

# ---- retries: an exit code the job retries, counted by the Job --------------------
nv_in "$R" run flaky.lua --wait
check_rc "a job that fails once and retries succeeds" 0
RID=$(printf '%s\n' "$OUT" | sed -n 's/^job flaky submitted: \(.*\)$/\1/p')
check_eq "one navette id, two runs" "$(s3cat "jobs/k8s/$RID/runs.txt")" 2
check_eq "status: attempt 2" "$(st "$RID" 'd.get("attempt")')" 2
check_eq "the record lists both attempts" \
	"$(s3cat "jobs/k8s/$RID/navette-run.json" | json '[[a["attempt"], a["state"], a.get("failure")] for a in d["attempts"]]')" \
	'[[1, "failed", "exit:4"], [2, "succeeded", null]]'
check_eq "the Job counted one failure" "$(kc -n "$NS" get job "$RID" -o 'jsonpath={.status.failed}')" 1

# ---- a preemption (DisruptionTarget) uses up no retry -------------------------------
nv_in "$R" run moved.lua
MID=$(printf '%s\n' "$OUT" | sed -n 's/^job moved submitted: \(.*\)$/\1/p')
first_pod=
saved_once() {
	first_pod=$(kc -n "$NS" get pods -l "navette/job=$MID" -o 'jsonpath={.items[0].metadata.name}' 2>/dev/null)
	[ -n "$first_pod" ] && [ "$(s3cat "jobs/k8s/$MID/navette-checkpoint/checkpoint.tar" >/dev/null && echo y)" = y ]
}
wait_for 90 saved_once
check_true "the first run saved a checkpoint" saved_once
kc -n "$NS" annotate pod "$first_pod" navette.test/disrupt=1 >/dev/null
moved_done() { case $(st "$MID" 'd["state"]') in succeeded | failed | cancelled) return 0 ;; esac; return 1; }
wait_for 120 moved_done
check_eq "the preempted job succeeds on a new pod" "$(st "$MID" 'd["state"]')" succeeded
check_eq "its second run" "$(s3cat "jobs/k8s/$MID/runs.txt")" 2
check_eq "the Job counted no failure" "$(kc -n "$NS" get job "$MID" -o 'jsonpath={.status.failed}')" ""
check_eq "the first pod has the DisruptionTarget condition" \
	"$(kc -n "$NS" get pod "$first_pod" -o 'jsonpath={.status.conditions[?(@.type=="DisruptionTarget")].status}')" True

# ---- following: one watch for the profile; a 410 during the watch --------------
# (NAVETTE_DEBUG=1: the backend traces each LIST and watch on stderr)
nv_in "$R" run gate.lua
GID=$(printf '%s\n' "$OUT" | sed -n 's/^job gate submitted: \(.*\)$/\1/p')
# (navette itself in the background, bounded: perl's alarm, then exec)
(cd "$R" && NAVETTE_DEBUG=1 exec perl -e 'alarm shift; exec @ARGV or die' \
	300 "$NAVETTE" watch "$GID" >"$T/gate.out" 2>"$T/gate.err") &
WATCHER=$!
watching() { [ "$(st "$GID" 'd["state"]')" = running ] && grep -q '^navette: kubernetes: watch pods from .*: quiet' "$T/gate.err"; }
wait_for 90 watching
check_true "navette watch follows the running job by watching its pods" watching
# The watcher is stopped while the cluster restarts, and goes on once the
# new API server answers 410 to the submitter's watch from the versions
# it holds (read from its trace: the last LIST's, moved on by each quiet
# watch), not whatever a server still starting answers (a 403 while its
# RBAC is not loaded yet, which navette meets with a LIST).
kill -STOP "$WATCHER"
read -r RVJ RVP <<EOF
$(awk '/^navette: kubernetes: LIST .*: jobs at /{ sub(/.*: jobs at /, ""); split($0, a, ", pods at "); j = a[1]; p = a[2] }
/^navette: kubernetes: watch jobs from .*: quiet, at /{ sub(/.*: quiet, at /, ""); j = $0 }
/^navette: kubernetes: watch pods from .*: quiet, at /{ sub(/.*: quiet, at /, ""); p = $0 }
END { print j, p }' "$T/gate.err")
EOF
check_match "the watcher's versions, from its trace" "$RVJ $RVP" '^[0-9]+ [0-9]+$'
if k8s_restart; then
	pass "the cluster restarts under the watch"
else
	fail "the cluster restarts under the watch:
$(cat "$T/restart.log")"
fi
too_old() {
	TOKEN=$K8S_TOKEN_FILE api GET "/apis/batch/v1/namespaces/$NS/jobs?watch=1&allowWatchBookmarks=true&resourceVersion=$RVJ&timeoutSeconds=1" | grep -q '"code":410' &&
		TOKEN=$K8S_TOKEN_FILE api GET "/api/v1/namespaces/$NS/pods?watch=1&allowWatchBookmarks=true&resourceVersion=$RVP&timeoutSeconds=1" | grep -q '"code":410'
}
wait_for 90 too_old
check_true "the new API server answers 410 to the watcher's versions" too_old
kill -CONT "$WATCHER"
expired_seen() { grep -q 'LIST .*(410 Expired)' "$T/gate.err"; }
wait_for 60 expired_seen
touch "$T/gate"
wait "$WATCHER"
check_eq "the watch ends when the job does" "$?" 0
check_contains "with its end" "$(cat "$T/gate.out")" succeeded
check_eq "status: succeeded" "$(st "$GID" 'd["state"]')" succeeded
if expired_seen; then
	pass "the watch from before the restart was answered 410, and listed again"
else
	fail "the watch from before the restart was answered 410, and listed again; the trace:
$(grep '^navette: kubernetes:' "$T/gate.err" | tail -n 40)"
fi
check_eq "every LIST is of the profile's jobs, not of one job" \
	"$(grep '^navette: kubernetes: LIST' "$T/gate.err" | grep -cv 'LIST navette/project=k8s,navette/profile=cluster in ')" 0
# (how many of each depends on the machine's pace: that both kinds were
# watched, and quietly, is what is certain)
check_true "its Jobs were watched too" grep -q '^navette: kubernetes: watch jobs from .*: quiet' "$T/gate.err"

# ---- an exec credential renewed while navette follows the job ---------------------
# (the plugin's credential lives 13 s and is renewed 10 s before its end:
# a watch that lasts over 3 s runs it again, though the cluster still
# takes the old token)
nv_in "$R" run nap.lua --profile viaexec
check_rc "a job submitted with an exec credential" 0
XID=$(printf '%s\n' "$OUT" | sed -n 's/^job nap submitted: \(.*\)$/\1/p')
: >"$T/exec-runs"
nv_in "$R" watch "$XID"
check_rc "followed to its end with the exec credential" 0
check_eq "status: succeeded" "$(st "$XID" 'd["state"]')" succeeded
runs=$(grep -c . "$T/exec-runs")
check_true "the plugin ran again once the credential was near its end ($runs runs)" [ "$runs" -ge 2 ]

# ---- cancel: one task of a sweep whose pods wait for a node -----------------------
# (its Pending pod deleted: the index ends, no new pod comes for it, the
# other task still waits)
nv_in "$R" run bigsweep.lua
check_rc "the wide sweep is submitted" 0
W1=$(sub_id 'wide\[.*\]' | sed -n 1p)
W2=$(sub_id 'wide\[.*\]' | sed -n 2p)
w1_pending() { [ "$(kc -n "$NS" get pods -l "navette/job=$(st "$W1" 'd["kubernetes"]["job"]')" -o json | json '[p["status"]["phase"] for p in d["items"] if p["metadata"]["annotations"].get("batch.kubernetes.io/job-completion-index") == "0"]')" = '["Pending"]' ]; }
wait_for 60 w1_pending
check_true "the first task's pod waits for a node" w1_pending
nv cancel "$W1"
check_rc "one task of the waiting sweep is cancelled" 0
check_eq "status: cancelled" "$(st "$W1" 'd["state"]')" cancelled
WJOB=$(st "$W2" 'd["kubernetes"]["job"]')
index_failed() { [ "$(kc -n "$NS" get job "$WJOB" -o 'jsonpath={.status.failedIndexes}')" = 0 ]; }
wait_for 60 index_failed
check_true "the Job counts its index failed" index_failed
sleep 5
check_eq "and no new pod comes for it" \
	"$(kc -n "$NS" get pods -l "navette/job=$WJOB" -o json | json '[p["metadata"]["name"] for p in d["items"] if p["metadata"]["annotations"].get("batch.kubernetes.io/job-completion-index") == "0" and not p["metadata"].get("deletionTimestamp")]')" '[]'
check_eq "the other task still waits" "$(st "$W2" 'd["state"]')" queued
nv cancel "$W2"
check_rc "the other task is cancelled" 0

# ---- cancel: the tasks of a sweep held for its `after` -------------------------
# (an Indexed Job runs every index: one task alone cannot be left out
# before it has a pod; all of them together delete the Job)
nv_in "$R" run heldsweep.lua
check_rc "the held sweep is submitted" 0
OID=$(printf '%s\n' "$OUT" | sed -n 's/^job opener submitted: \(.*\)$/\1/p')
H1=$(printf '%s\n' "$OUT" | sed -n 's/^job held\[.*\] submitted: \(.*\)$/\1/p' | sed -n 1p)
H2=$(printf '%s\n' "$OUT" | sed -n 's/^job held\[.*\] submitted: \(.*\)$/\1/p' | sed -n 2p)
HJOB=$(kc -n "$NS" get jobs -l navette/held=after -o json | json '[j["metadata"]["name"] for j in d["items"] if "'"$H1"'" in j["metadata"]["annotations"].get("navette/tasks", "")][0]')
check_match "its Job is there, held" "$HJOB" '^k8s-'
nv cancel "$H1"
check_true "one task of the held sweep alone is not cancelled" [ "$RC" -ne 0 ]
check_contains "saying why, and what to do" "$ERR" "an index of it cannot be left out"
check_eq "it stays queued" "$(st "$H1" 'd["state"]')" queued
nv cancel "$H1" "$H2"
check_rc "both tasks together are cancelled" 0
check_eq "the first: cancelled" "$(st "$H1" 'd["state"]')" cancelled
check_eq "the second: cancelled" "$(st "$H2" 'd["state"]')" cancelled
held_gone() { [ "$(kc -n "$NS" get job "$HJOB" -o name 2>/dev/null | wc -l | tr -d ' ')" = 0 ]; }
wait_for 60 held_gone
check_true "the sweep's Job is deleted" held_gone
nv cancel "$OID" >/dev/null 2>&1

# ---- cancel ----------------------------------------------------------------------------------
nv_in "$R" run slow.lua
CID=$(printf '%s\n' "$OUT" | sed -n 's/^job slow submitted: \(.*\)$/\1/p')
slow_running() { [ "$(st "$CID" 'd["state"]')" = running ]; }
wait_for 90 slow_running
check_true "the slow job runs" slow_running
nv cancel "$CID"
check_rc "cancel succeeds" 0
check_eq "status: cancelled" "$(st "$CID" 'd["state"]')" cancelled
gone() { [ "$(kc -n "$NS" get job,secret "$CID" -o name 2>/dev/null | wc -l | tr -d ' ')" = 0 ]; }
wait_for 60 gone
check_true "the Job and its Secret are deleted" gone
nv cancel "$BID" >/dev/null 2>&1

# ---- a reader may not submit ------------------------------------------------------------
nv_in "$R" run hello.lua --profile reader --no-reuse
check_rc "the reader's run is refused" 3
check_contains "with the cause" "$OUT$ERR" 'cannot create resource "jobs"'

# ---- the manifest really runs: the pod's container in podman ----------------
# (kubelet.py --podman: the image by digest, the Secret's files and the
# work folder mounted where the pod spec says, its env and command)
kubelet_stop
# an image with sh, curl and the tools the launcher uses: busybox and
# this machine's curl with its libraries
img=$T/curl-image
busybox_root "$img/root"
rm -f "$img/root/bin/curl"
curl_bin=$(command -v curl)
# shellcheck disable=SC2046 # (one word per path)
tar -chf - "$curl_bin" $(ldd "$curl_bin" | awk '/\//{print ($2 == "=>") ? $3 : $1}') 2>/dev/null |
	tar -xf - -C "$img/root"
[ -x "$img/root/usr/bin/curl" ] && [ ! -e "$img/root/bin/curl" ] && ln -s /usr/bin/curl "$img/root/bin/curl"
printf 'FROM scratch\nCOPY root/ /\n' >"$img/Containerfile"
if buildah bud --isolation chroot -q -t localhost/nv-k8s-curl -f "$img/Containerfile" "$img" >"$T/buildah-curl.log" 2>&1 &&
	buildah push --tls-verify=false localhost/nv-k8s-curl "docker://$PLAIN/$RUN_ID/curl:1" >>"$T/buildah-curl.log" 2>&1; then
	pass "the image with curl is built and pushed"
else
	fail "the image with curl is built and pushed" "$(cat "$T/buildah-curl.log")"
fi
cat >"$R/inpod.lua" <<EOF
local navette = require "navette"
local data = navette.storage.put_string("inputs/pod.txt", "from the pod\n")
navette.job {
  name = "inpod", image = "$PLAIN/$RUN_ID/curl:1",
  inputs = { d = data.url },
  command = { "sh", "-c", "cat \"\$NAVETTE_INPUTS/d\" > \"\$NAVETTE_OUTPUTS/out.txt\"; if [ -e /etc/os-release ]; then echo has os-release; else echo no os-release; fi" },
  success = { outputs = { "out.txt" } },
}
EOF
commit_all "$R" >/dev/null
git -C "$R" push -q origin HEAD:main 2>/dev/null
kubelet_start podman
nv_in "$R" run inpod.lua --wait
check_rc "a job run by podman from the pod spec succeeds" 0
PID_=$(printf '%s\n' "$OUT" | sed -n 's/^job inpod submitted: \(.*\)$/\1/p')
check_eq "its output is published from the container" "$(s3cat "jobs/k8s/$PID_/out.txt")" "from the pod"
check_contains "the container has no os-release (scratch: not the host)" "$(nv logs "$PID_"; printf '%s' "$OUT")" "no os-release"
kubelet_stop
[ "$FAILED" = 0 ] || { echo "== kubelet (host)"; tail -n 20 "$T/kubelet-host.log"; echo "== kubelet (podman)"; tail -n 20 "$T/kubelet-podman.log"; }
finish
