#!/usr/bin/env bash
# A team's quotas on a Slurm cluster with accounting (issue 16): a cluster
# of this test's own with slurmdbd (SLURM_ACCOUNTING=1, free ports) and
# the S3 fixture for the jobs' data. `navette team apply` makes, through
# slurmrestd's accounting API as root: the account with the team's GPUs
# (GrpTRES), the role's QOS (MaxTRESPerJob, MaxJobsPerUser), alice's and
# bob's users and associations (their GPU-hours as GrpTRESMins) and a
# token for each (handed over 0600); a second apply changes nothing. As
# alice (her git email; her own Slurm user and token): a 2-GPU job is
# refused by navette before anything is sent, with the numbers; her first
# GPU job runs, her second is held by Slurm itself (QOSMaxJobsPerUserLimit)
# and carries her identity in its comment. `navette team revoke alice`
# cancels her jobs, removes her Slurm user and proves it (Slurm refuses
# her token: invalid account), within seconds, while bob still submits.
# carol holds the admin right only: she is a coordinator of the account
# with no association, so with her token Slurm cancels alice's job, which
# it refuses to bob, and refuses carol's own submission. With
# revoke_running = "leave", revoking bob cancels his pending job, leaves
# his running one to complete (squeue, sacct), and Slurm refuses his next
# submission (QOS vision-nosubmit); the apply after that job's end removes
# his user; carol's admin right removed: apply says what it cannot undo.
# A user of the account whom team.lua no longer names loses their
# association at the next apply. Limits team.lua drops go: the QOS's
# MaxJobsPerUser, erin's GrpTRESMins, then her role's QOS once the role
# has no quota (a second apply changes nothing); the account's GrpTRES is
# a ! line with the sacctmgr command (slurmrestd 22.05 changes no
# account's association).
# Linux, as root, with slurmdbd and mariadb-server (vendor/packages.txt);
# else skipped. Needs S3_STACK_ENV (ctest's fixture "s3").
set -eu -o pipefail
. "$(dirname "$0")/../lib.sh"
set +e # each check reports its own failure; finish sets the status

if [ "$(id -u)" -ne 0 ]; then
	skip "a team on Slurm" "the test cluster runs its daemons as root"
	finish
fi
for tool in slurmctld slurmdbd mariadbd sacctmgr squeue munged curl; do
	if ! command -v "$tool" >/dev/null 2>&1; then
		skip "a team on Slurm" "$tool is not installed (vendor/packages.txt, group test)"
		finish
	fi
done
use_s3_stack teamslurm
chmod 755 "$T"
STACK=$NAVETTE_SOURCE/tests/stack
DIR=$T/slurm
trap 'st=$?; [ -d "$DIR/run" ] && bash "$STACK/slurm-stop.sh" "$DIR" >/dev/null 2>&1; (exit $st); _cleanup' EXIT
bounded() { perl -e 'alarm shift; exec @ARGV or exit 127' "$@"; }
for u in alice bob carol; do
	id "$u" >/dev/null 2>&1 || useradd -M -d /tmp -s /bin/bash "$u" ||
		id "$u" >/dev/null 2>&1 || { fail "user $u exists or can be made"; finish; }
done
read -r P1 P2 P3 P4 P5 P6 <<<"$(free_ports 6 | tr '\n' ' ')"
if ! SLURM_ACCOUNTING=1 SLURM_PORT=$P1 SLURMD_PORT_A=$P2 SLURMD_PORT_B=$P3 \
	SLURMRESTD_PORT=$P4 SLURMDBD_PORT=$P5 SLURM_DB_PORT=$P6 \
	bounded 120 bash "$STACK/slurm-start.sh" "$DIR" >"$T/start.log" 2>&1; then
	fail "a Slurm cluster with accounting starts: $(tail -20 "$T/start.log")"
	finish
fi
unset SLURM_CONF
. "$DIR/slurm.env"
sl() { SLURM_CONF=$SLURM_CONF bounded 30 "$@"; }
cp "$SLURM_JWT_KEY" "$NAVETTE_HOME/cluster.key"
chmod 600 "$NAVETTE_HOME/cluster.key"
HANDOFF=$NAVETTE_HOME/team/vision
nv storage mb "s3://$BUCKET" "${EP[@]}"
check_rc "the jobs' bucket is made" 0

# the members' jobs write their Slurm output here (each cluster counts its
# jobs from 1: a shared /tmp would hold another run's navette-1.out)
WD=$T/wd
mkdir -p "$WD"
chmod 1777 "$WD"
R=$(new_repo vision)
profile() { # NAME USER CREDENTIAL
	cat <<EOF
    $1 = { backend = "slurm", storage = "s3://$BUCKET/", require_pushed = false,
           s3 = { endpoint = "$S3_ENDPOINT", region = "$S3_REGION" },
           slurm = { endpoint = "$SLURMRESTD_URL", user = "$2", credential = "$3",
                     partition = "$SLURM_PARTITION", account = "vision",
                     working_directory = "$WD" } },
EOF
}
cat >"$R/navette.lua" <<EOF
return {
  name = "vision", default_profile = "admin",
  credentials = {
    clusterkey = { kind = "hs256", source = "file", path = "$NAVETTE_HOME/cluster.key" },
    ["alice-token"] = { kind = "bearer", source = "file", path = "$HANDOFF/alice.slurm-token" },
    ["bob-token"] = { kind = "bearer", source = "file", path = "$HANDOFF/bob.slurm-token" },
  },
  profiles = {
$(profile admin root clusterkey)
$(profile alice alice alice-token)
$(profile bob bob bob-token)
  },
}
EOF
cat >"$R/team.lua" <<'EOF'
return {
  name = "vision",
  members = {
    alice = { name = "Alice", email = "alice@example.com", roles = { "developer" } },
    bob = { name = "Bob", email = "bob@example.com", roles = { "developer" } },
    carol = { name = "Carol", email = "carol@example.com", roles = { "lead" } },
  },
  roles = {
    developer = { "submit", "read-logs",
                  quota = { gpus_per_job = 1, concurrent_jobs = 1, gpu_hours_per_day = 8 } },
    lead = { "admin" },
  },
  quota = { gpus = 2 },
  services = { slurm = { profile = "admin", account = "vision" } },
}
EOF
put_file "$R" recipes/short.lua <<'EOF'
local navette = require "navette"
navette.job { name = "short", command = { "sh", "-c", "sleep 40" },
              resources = { gpus = 1, cpus = 1, time_limit = "5m" } }
EOF
put_file "$R" recipes/gpu.lua <<'EOF'
local navette = require "navette"
navette.job { name = "train", command = { "sh", "-c", "sleep 120" },
              resources = { gpus = 1, cpus = 1, time_limit = "5m" } }
EOF
put_file "$R" recipes/big.lua <<'EOF'
local navette = require "navette"
navette.job { name = "big", command = { "true" },
              resources = { gpus = 2, cpus = 1, time_limit = "5m" } }
EOF
commit_all "$R" >/dev/null

nv_in "$R" team apply --plan
check_rc "team apply --plan" 0
check_match "the plan names the QOS and its limits" "$OUT" \
	'^  \+ slurm QOS vision-developer: MaxTRESPerJob=gres/gpu=1 MaxJobsPerUser=1$'
check_match "... the account with the team's GPUs" "$OUT" 'account vision on .*: GrpTRES=gres/gpu=2'
check_match "... each member" "$OUT" 'slurm user alice in account vision with QOS vision-developer, GrpTRESMins=gres/gpu=480'
check_match "... and the admin as the account's coordinator" "$OUT" \
	'^  \+ slurm coordinator carol of account vision \(a user with no association: submits nothing\)$'
check_no_match "... who submits nothing" "$OUT" 'slurm user carol in account'
check_eq "the plan made nothing in slurmdbd" "$(sl sacctmgr -n -P show qos vision-developer format=name 2>&1)" ""
# carol, the team's admin, applies and revokes
git -C "$R" config user.email carol@example.com
nv_in "$R" team apply
check_rc "team apply" 0
nv_in "$R" team apply
check_match "a second apply: no changes" "$OUT" "^team vision: no changes"
check_eq "slurmdbd holds the QOS's limits" \
	"$(sl sacctmgr -n -P show qos vision-developer format=name,maxtres,maxjobspu 2>&1)" \
	"vision-developer|gres/gpu=1|1"
check_eq "... the account's GPUs and the members' GPU-hours" \
	"$(sl sacctmgr -n -P show assoc account=vision format=user,qos,grptres,grptresmins 2>&1 | LC_ALL=C sort)" \
	"alice|vision-developer||gres/gpu=480
bob|vision-developer||gres/gpu=480
|normal|gres/gpu=2|"
check_eq "carol coordinates account vision" \
	"$(sl sacctmgr -n -P show user carol withcoord format=user,coord 2>&1)" "carol|vision"
check_eq "alice's token is handed over 0600" \
	"$(python3 -c 'import os,sys; print(oct(os.stat(sys.argv[1]).st_mode & 0o777))' "$HANDOFF/alice.slurm-token")" 0o600

# ---- as alice ---------------------------------------------------------------
git -C "$R" config user.email alice@example.com
nv_in "$R" run recipes/big.lua --profile alice
check_rc "a 2-GPU job: refused by navette (exit 3)" 3
check_match "... with the numbers" "$ERR" \
	"job 'big' asks for 2 GPUs; team vision's quota gives alice 1 per job \(role developer: quota.gpus_per_job = 1\)"
check_eq "... before anything reached Slurm" "$(sl squeue -h -u alice -o %i | wc -l | tr -d ' ')" 0
nv_in "$R" run recipes/gpu.lua --profile alice
check_rc "alice's first GPU job is submitted" 0
check_no_match "... with no note: she is within her jobs at once" "$ERR" "concurrent_jobs"
nv_in "$R" run recipes/gpu.lua --profile alice
check_rc "her second too (Slurm holds it, navette does not refuse it)" 0
HELD=$(printf '%s\n' "$OUT" | sed -n 's/^job train submitted: \(.*\)$/\1/p')
check_match "navette says, with the numbers, that Slurm will hold it" "$ERR" \
	"note: alice has [01] jobs? running and [01] pending, and submits 1 more; team vision's quota runs 1 of alice's jobs at once \(role developer: quota.concurrent_jobs = 1\): Slurm holds the others \(QOSMaxJobsPerUserLimit\) until one ends"
state_of() { sl squeue -h -u alice -t "$1" -o '%T %r %k' 2>&1; }
deadline=$(($(date +%s) + 30))
until [ -n "$(state_of RUNNING)" ] && [ "$(state_of PENDING | cut -d' ' -f2)" = QOSMaxJobsPerUserLimit ]; do
	[ "$(date +%s)" -lt "$deadline" ] || break
	sleep 0.3
done
check_match "her first runs, as Slurm user alice" "$(state_of RUNNING)" '^RUNNING '
check_match "Slurm holds the second: QOSMaxJobsPerUserLimit" "$(state_of PENDING)" '^PENDING QOSMaxJobsPerUserLimit '
check_match "her jobs carry her identity" "$(state_of PENDING)" ' member alice$'
nv status "$HELD"
check_rc "navette status of the held job, with her own token" 0
check_match "... shows Slurm's reason" "$OUT" "QOSMaxJobsPerUserLimit"

# ---- the admin right: Slurm's coordinator ---------------------------------------
# slurmrestd as USER with the token handed over to them, its answer on
# one line: api USER METHOD PATH [BODY]
api() {
	bounded 30 curl -sS -X "$2" -H "X-SLURM-USER-NAME: $1" \
		-H "X-SLURM-USER-TOKEN: $(tr -d '\n' <"$HANDOFF/$1.slurm-token")" \
		-H 'Content-Type: application/json' ${4:+--data "$4"} \
		"$SLURMRESTD_URL/slurm/$SLURM_API_VERSION/$3" |
		python3 -c 'import json,sys; d=json.load(sys.stdin); d.pop("meta",None); print(json.dumps(d))'
}
job_body() { # HOLD
	printf '{"script":"#!/bin/sh\\nsleep 5\\n","job":{"name":"direct","partition":"%s","account":"vision","cpus_per_task":1,"time_limit":2,"hold":%s,"current_working_directory":"%s","environment":{"PATH":"/bin:/usr/bin"}}}' \
		"$SLURM_PARTITION" "$1" "$WD"
}
held=$(api alice POST job/submit "$(job_body true)")
HELD=$(printf '%s' "$held" | python3 -c 'import json,sys; print(json.load(sys.stdin).get("job_id") or "")')
check_ne "alice submits a held job with her token ($held)" "$HELD" ""
check_match "bob's token may not cancel it: Slurm refuses" "$(api bob DELETE "job/$HELD")" \
	'Access/permission denied'
check_eq "... and it is still pending" "$(sl squeue -h -j "$HELD" -o %T 2>&1)" PENDING
check_match "carol's token cancels it (a coordinator): no error" "$(api carol DELETE "job/$HELD")" \
	'"errors": \[\]'
check_match "... and Slurm cancelled it" "$(sl squeue -h -j "$HELD" -t all -o %T 2>&1)" '^CANCELLED'
check_match "carol's own submission is refused by Slurm (no association)" \
	"$(api carol POST job/submit "$(job_body true)")" 'Invalid account'

# ---- revocation ---------------------------------------------------------------
git -C "$R" config user.email carol@example.com
nv_in "$R" team revoke alice
check_rc "team revoke alice: every credential refused (exit 0)" 0
check_match "her jobs are cancelled and her user removed" "$OUT" \
	"slurm: user alice removed from accounting \(2 jobs cancelled\)"
check_match "the proof: Slurm refuses her token" "$OUT" \
	"^  slurm +token alice +refused: .*Invalid account"
check_match "and the time it took" "$OUT" "^from the command to the last refusal: [0-9]+\.[0-9]{2} s$"
REVOKE_S=$(printf '%s\n' "$OUT" | sed -n 's/^from the command to the last refusal: \([0-9.]*\) s$/\1/p')
echo "revocation on Slurm took $REVOKE_S s"
check_true "within seconds" python3 -c "import sys; sys.exit(0 if float('$REVOKE_S') < 10 else 1)"
check_eq "slurmdbd no longer knows alice" \
	"$(sl sacctmgr -n -P show assoc user=alice format=user 2>&1)" ""
git -C "$R" config user.email alice@example.com
nv_in "$R" run recipes/gpu.lua --profile alice
check_rc "alice's next run is refused (exit 3)" 3
check_match "... as a revoked member" "$ERR" "team member alice is revoked"
git -C "$R" config user.email bob@example.com
nv_in "$R" run recipes/short.lua --profile bob
check_rc "bob still submits" 0
deadline=$(($(date +%s) + 30))
until [ -n "$(sl squeue -h -u bob -t RUNNING -o %i)" ]; do
	[ "$(date +%s)" -lt "$deadline" ] || break
	sleep 0.3
done
check_ne "... and his job runs ($(sl squeue -h -u bob -o '%T %r' 2>&1))" \
	"$(sl squeue -h -u bob -t RUNNING -o %i)" ""
BOB_RUNNING=$(sl squeue -h -u bob -t RUNNING -o %i)

# ---- revoke_running = "leave": bob's running job finishes -------------------------
nv_in "$R" run recipes/short.lua --profile bob
check_rc "bob's second job is submitted" 0
BOB_PENDING=$(sl squeue -h -u bob -t PENDING -o %i)
check_ne "... and Slurm holds it pending" "$BOB_PENDING" ""
cat >"$R/team.lua" <<'EOF'
return {
  name = "vision",
  members = {
    alice = { name = "Alice", email = "alice@example.com", roles = { "developer" }, revoked = true },
    bob = { name = "Bob", email = "bob@example.com", roles = { "developer" } },
    carol = { name = "Carol", email = "carol@example.com", roles = { "viewer" } },
  },
  roles = {
    developer = { "submit", "read-logs",
                  quota = { gpus_per_job = 1, concurrent_jobs = 1, gpu_hours_per_day = 8 } },
    viewer = { "read-logs" },
  },
  quota = { gpus = 2 },
  services = { slurm = { profile = "admin", account = "vision", revoke_running = "leave" } },
}
EOF
commit_all "$R" >/dev/null
nv_in "$R" team apply
check_rc "team apply with revoke_running = leave" 0
check_match "... makes the QOS of a blocked member" "$OUT" \
	'^  \+ slurm QOS vision-nosubmit: MaxSubmitJobsPerUser=0$'
check_match "... and says it cannot remove carol's coordinator" "$OUT" \
	'^  ! slurm user carol is a coordinator of account vision but holds no admin right; slurmrestd 22.05 removes no coordinator: sacctmgr remove coordinator user=carol account=vision$'
nv_in "$R" team revoke bob
check_rc "team revoke bob: his token refused (exit 0)" 0
check_match "his pending job is cancelled, his running one left" "$OUT" \
	'slurm: user bob blocked \(QOS vision-nosubmit: Slurm refuses their new jobs\); 1 pending job cancelled, 1 running job left to finish'
check_match "the proof: Slurm refuses his token's submission" "$OUT" \
	'^  slurm +token bob +refused: .*job submit limit'
check_eq "squeue: his running job still runs, the pending one is gone" \
	"$(sl squeue -h -u bob -o '%i %T' 2>&1)" "$BOB_RUNNING RUNNING"
check_match "... the pending one was cancelled" "$(sl sacct -n -X -P -j "$BOB_PENDING" -o state 2>&1)" '^CANCELLED'
check_match "Slurm refuses bob's new submission (curl, his token)" \
	"$(api bob POST job/submit "$(job_body false)")" \
	"Job violates accounting/QOS policy \(job submit limit, user's size and/or time limits\)"
check_match "... also asking for his former QOS" \
	"$(api bob POST job/submit "$(job_body false | python3 -c 'import json,sys; d=json.load(sys.stdin); d["job"]["qos"]="vision-developer"; print(json.dumps(d))')")" \
	'Invalid qos specification'
nv_in "$R" team apply
check_no_match "an apply while his job runs leaves him blocked" "$OUT" 'slurm user bob'
deadline=$(($(date +%s) + 90))
until [ -z "$(sl squeue -h -u bob -o %i)" ]; do
	[ "$(date +%s)" -lt "$deadline" ] || break
	sleep 1
done
check_match "his running job ran to its end: COMPLETED" \
	"$(sl sacct -n -X -P -j "$BOB_RUNNING" -o state 2>&1)" '^COMPLETED'
nv_in "$R" team apply
check_rc "the apply after it" 0
check_match "... removes his user" "$OUT" \
	'^  - slurm user bob \(revoked, blocked by vision-nosubmit\) removed from accounting: their running jobs have ended$'
check_eq "slurmdbd no longer knows bob" \
	"$(sl sacctmgr -n -P show assoc user=bob format=user 2>&1)" ""

# ---- a member removed from team.lua loses their association -------------------
# (dave: in the account, added by hand or by an earlier policy, named by
# no team.lua now)
sl sacctmgr -i add user dave account=vision >/dev/null 2>&1
check_eq "dave is in the account" "$(sl sacctmgr -n -P show assoc user=dave account=vision format=user 2>&1)" dave
nv_in "$R" team apply --plan
check_match "apply --plan shows his association going" "$OUT" \
	'^  - slurm user dave is in account vision but not in team.lua: association removed$'
check_eq "... and removes nothing" "$(sl sacctmgr -n -P show assoc user=dave account=vision format=user 2>&1)" dave
nv_in "$R" team apply
check_rc "apply" 0
check_eq "slurmdbd: dave is no longer in the account" \
	"$(sl sacctmgr -n -P show assoc user=dave account=vision format=user 2>&1)" ""
nv_in "$R" team apply
check_no_match "a second apply has nothing more about him" "$OUT" dave

# ---- limits team.lua drops are removed ----------------------------------------
# (erin: a developer given the role's quota, then the quotas go: the QOS's
# MaxJobsPerUser and her GrpTRESMins are removed through slurmrestd; the
# account's GrpTRES is a ! line, slurmrestd 22.05 changing no account's
# association; the role's last quota gone, so is its QOS on her association)
team_lua() { # DEVELOPER_QUOTA TEAM_QUOTA
	cat >"$R/team.lua" <<EOF
return {
  name = "vision",
  members = {
    alice = { name = "Alice", email = "alice@example.com", roles = { "developer" }, revoked = true },
    bob = { name = "Bob", email = "bob@example.com", roles = { "developer" }, revoked = true },
    carol = { name = "Carol", email = "carol@example.com", roles = { "viewer" } },
    erin = { name = "Erin", email = "erin@example.com", roles = { "developer" } },
  },
  roles = {
    developer = { "submit", "read-logs"$1 },
    viewer = { "read-logs" },
  },$2
  services = { slurm = { profile = "admin", account = "vision", revoke_running = "leave" } },
}
EOF
	commit_all "$R" >/dev/null
}
team_lua ", quota = { gpus_per_job = 1, concurrent_jobs = 1, gpu_hours_per_day = 8 }" \
	" quota = { gpus = 2 },"
nv_in "$R" team apply
check_match "erin joins with the role's QOS and GPU-hours" "$OUT" \
	'^  \+ slurm user erin in account vision with QOS vision-developer, GrpTRESMins=gres/gpu=480$'
team_lua ", quota = { gpus_per_job = 1 }" ""
nv_in "$R" team apply --plan
check_match "without concurrent_jobs, the plan removes the QOS's MaxJobsPerUser" "$OUT" \
	'^  ~ slurm QOS vision-developer: MaxTRESPerJob=gres/gpu=1 MaxJobsPerUser=none; MaxJobsPerUser removed$'
check_match "... without gpu_hours_per_day, erin's GrpTRESMins" "$OUT" \
	'^  ~ slurm user erin in account vision with QOS vision-developer; GrpTRESMins removed$'
check_match "... without quota.gpus, says how to remove the account's GrpTRES" "$OUT" \
	"^  ! slurm association of account vision on $SLURM_CLUSTER has GrpTRES=gres/gpu=2, team.lua no quota.gpus; slurmrestd 22.05 changes no account's association: sacctmgr -i modify account vision where cluster=$SLURM_CLUSTER set GrpTRES=gres/gpu=-1\$"
nv_in "$R" team apply
check_rc "apply" 0
check_eq "slurmdbd: the QOS keeps only MaxTRESPerJob" \
	"$(sl sacctmgr -n -P show qos vision-developer format=name,maxtres,maxjobspu 2>&1)" \
	"vision-developer|gres/gpu=1|"
check_eq "... erin's association no GrpTRESMins" \
	"$(sl sacctmgr -n -P show assoc account=vision user=erin format=user,qos,grptresmins 2>&1)" \
	"erin|vision-developer|"
sl sacctmgr -i modify account vision where cluster="$SLURM_CLUSTER" set GrpTRES=gres/gpu=-1 >/dev/null 2>&1
nv_in "$R" team apply
check_rc "a second apply (slurmrestd still answers)" 0
check_no_match "... changes none of them" "$OUT" 'QOS vision-developer|user erin|association of account'
team_lua "" ""
nv_in "$R" team apply
check_match "the role's last quota gone: its QOS leaves erin's association" "$OUT" \
	'^  ~ slurm user erin in account vision; QOS vision-developer removed$'
check_eq "slurmdbd: erin has the account's QOS, the account no GrpTRES" \
	"$(sl sacctmgr -n -P show assoc account=vision format=user,qos,grptres,grptresmins 2>&1 | LC_ALL=C sort)" \
	"erin|normal||
|normal||"
nv_in "$R" team apply
check_rc "the apply after it" 0
check_no_match "... changes nothing more" "$OUT" 'QOS vision-developer|user erin|association of account'
finish
