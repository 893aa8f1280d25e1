#!/usr/bin/env bash
# Jobs on the slurm_ssh backend: the real two-node cluster (fixture
# "slurm") reached only through its login node (fixture "sshd": OpenSSH's
# sshd with a user CA), S3 for inputs and outputs (fixture "s3"). The
# profile pins the login node's host key and names a key whose certificate
# the test signs with the stack's CA. Checks: a profile without host_key is
# refused before any connection, naming `navette ssh trust`; a wrong
# host_key is refused with both fingerprints and nothing sent (no login, no
# command in sshd's log); the first job's whole cycle, each phase in order,
# its log and outputs in S3; a 3-task sweep as one sbatch --array; a run of
# several jobs over one TCP connection, its ControlMaster gone after the
# run; cancel.
# Needs SLURM_STACK_ENV, SSHD_STACK_ENV and S3_STACK_ENV (set by ctest).
set -eu -o pipefail
. "$(dirname "$0")/../lib.sh"
set +e # each check reports its own failure; finish sets the status

if [ ! -r "${SSHD_STACK_ENV:-}" ]; then
	echo "FAIL: SSHD_STACK_ENV is not set to a readable file (ctest sets it)" >&2
	exit 1
fi
for tool in ssh ssh-keygen ssh-keyscan; do
	command -v "$tool" >/dev/null 2>&1 || {
		skip "jobs through the login node" "$tool is not installed (openssh-client)"
		finish
	}
done
use_slurm_stack sshjobs
unset SSH_AUTH_SOCK SSH_AGENT_PID
. "$SSHD_STACK_ENV"
# the ControlMaster sockets' folder: short, ours
export XDG_RUNTIME_DIR=/tmp/nvssh-$$
mkdir -m 700 "$XDG_RUNTIME_DIR"
RUNDIR=$XDG_RUNTIME_DIR/navette
trap 'st=$?; rm -rf "$XDG_RUNTIME_DIR"; (exit $st); _cleanup' EXIT

nv storage mb "s3://$BUCKET" "${EP[@]}"
check_rc "the bucket is created" 0

# the member's key and a certificate from the login node's CA
mkdir -p "$T/keys"
ssh-keygen -q -t ed25519 -N '' -C member -f "$T/keys/id"
ssh-keygen -q -s "$SSHD_CA" -I "member-$$" -n "$SSHD_PRINCIPAL" -V -5m:+1h \
	"$T/keys/id.pub"
# another key's fingerprint: a host_key that is not the login node's
ssh-keygen -q -t ed25519 -N '' -f "$T/keys/other"
OTHER_FP=$(ssh-keygen -lf "$T/keys/other.pub" | cut -d' ' -f2)

# the jobs run as the login node's user: their folder lets it write
SWD=$T/ssh-wd
mkdir -p "$SWD"
chmod 1777 "$SWD"

R=$T/repo
mkdir -p "$R/recipes"
cp "$NAVETTE_SOURCE/recipes/first-job.lua" "$R/recipes/"
cp -R "$NAVETTE_SOURCE/recipes/first-job" "$R/recipes/"
profile() { # NAME HOST_KEY_LINE
	cat <<EOF
    $1 = {
      backend = "slurm_ssh",
      storage = "s3://$BUCKET/",
      s3 = { endpoint = "$S3_ENDPOINT", region = "$S3_REGION" },
      slurm_ssh = {
        ssh = { host = "$SSHD_HOST", port = $SSHD_PORT, user = "$SSHD_USER",
                $2 },
        credential = "loginkey", certificate = "$T/keys/id-cert.pub",
        partition = "$SLURM_PARTITION", working_directory = "$SWD",
      },
    },
EOF
}
cat >"$R/navette.lua" <<EOF
return {
  name = "hpc",
  default_profile = "login",
  credentials = {
    loginkey = { kind = "pem", source = "file", path = "$T/keys/id" },
  },
  profiles = {
$(profile login "host_key = \"$SSHD_FINGERPRINT\"")
$(profile otherkey "host_key = \"$OTHER_FP\"")
$(profile nopin "")
  },
}
EOF
put_file "$R" recipes/sweep.lua <<'EOF'
local navette = require "navette"
local parts = navette.sweep { job = { name = "part", command = { "sh", "-c", "echo task $NAVETTE_PARAM_N" } },
                              matrix = { n = { 1, 2, 3 } } }
navette.job { name = "join", after = { parts }, command = { "true" } }
EOF
put_file "$R" recipes/fail.lua <<'EOF'
local navette = require "navette"
local parts = navette.sweep { job = { name = "step", command = { "sh", "-c", '[ "$NAVETTE_PARAM_N" != 2 ] || exit 4' } },
                              matrix = { n = { 1, 2, 3 } } }
navette.job { name = "join", after = { parts }, command = { "true" } }
EOF
put_file "$R" recipes/several.lua <<'EOF'
local navette = require "navette"
for i = 1, 4 do
  navette.job { name = "job" .. i, command = { "true" } }
end
EOF
put_file "$R" recipes/sleepy.lua <<'EOF'
local navette = require "navette"
navette.job { name = "sleepy", command = { "sh", "-c", "echo started; sleep 120" } }
EOF
git -C "$R" init -q
HEAD=$(commit_all "$R")
git init -q --bare "$T/origin.git"
git -C "$R" remote add origin "$T/origin.git"
git -C "$R" push -q origin HEAD:main 2>/dev/null
git -C "$R" fetch -q origin

connections() { grep -c '^Connection from ' "$SSHD_LOG"; }
logins() { grep -c 'Accepted ' "$SSHD_LOG"; }
commands() { grep -c 'Starting session' "$SSHD_LOG"; }
KNOWN=$NAVETTE_HOME/ssh

# ---- refusals before anything is sent ------------------------------------

c0=$(connections)
nv_in "$R" run recipes/first-job.lua --profile nopin
check_rc "a profile with no host_key is refused (exit 3)" 3
check_match "it says no key is pinned and nothing was sent" "$ERR" \
	'has no pinned host key .*nothing was sent'
check_match "it names navette ssh trust PROFILE" "$ERR" 'navette ssh trust nopin'
check_eq "no connection was made" "$(connections)" "$c0"

l0=$(logins) s0=$(commands)
nv_in "$R" run recipes/first-job.lua --profile otherkey
check_rc "a host_key that is not the login node's is refused (exit 3)" 3
check_contains "it gives both fingerprints" "$ERR" \
	"pinned $OTHER_FP, the host shows ssh-ed25519 $SSHD_FINGERPRINT"
check_match "and says nothing was sent" "$ERR" 'nothing was sent'
check_eq "no login (sshd logged none)" "$(logins)" "$l0"
check_eq "no command (sshd started no session)" "$(commands)" "$s0"
check_eq "no known_hosts line was written for it" \
	"$(cat "$KNOWN/otherkey.known_hosts" 2>/dev/null | wc -l | tr -d ' ')" 0

# ---- plan: nothing is sent ----------------------------------------------------

c0=$(connections)
nv_in "$R" plan recipes/sweep.lua
check_rc "plan of a sweep exits 0" 0
check_eq "plan makes no connection" "$(connections)" "$c0"

# ---- the first job, its whole cycle ----------------------------------------

nv_in "$R" run recipes/first-job.lua --wait
check_rc "first job through the login node: run --wait exits 0" 0
ID=$(submitted_id)
check_match "it succeeded" "$OUT" '^ *succeeded\b'
# each phase, in order
PHASES=$(printf '%s\n' "$OUT" | sed -n 's/^ *\([a-z_]*\) .*/\1/p' | awk '!seen[$0]++' |
	grep -Ex 'submitted|accepted|image_ready|data_ready|running|logs_visible|outputs_published|succeeded' |
	tr '\n' ' ')
check_eq "watch showed each phase, in order" "$PHASES" \
	"submitted accepted image_ready data_ready running logs_visible outputs_published succeeded "
check_eq "known_hosts holds the pinned key only" \
	"$(ssh-keygen -lf "$KNOWN/login.known_hosts" | cut -d' ' -f2)" "$SSHD_FINGERPRINT"
check_match "the result is in S3 under the job's prefix" \
	"$(s3cat "hpc/$ID/result.txt")" "^commit=$HEAD\$"
REC=$(s3cat "hpc/$ID/navette-run.json")
check_eq "the record says succeeded" "$(printf '%s' "$REC" | json 'd["state"]')" succeeded
check_eq "the record says slurm_ssh" "$(printf '%s' "$REC" | json 'd["backend"]')" slurm_ssh
nv status "$ID"
check_rc "status exits 0" 0
check_match "status names the Slurm job and its node" "$OUT" \
	'job [0-9]+ · COMPLETED on gpu-[ab]'
nv logs "$ID"
check_match "logs shows the command's output" "$OUT" '^first-job: wrote result.txt$'
check_eq "the job ran as the login node's user" \
	"$(scontrol -o show job "$(st "$ID" 'd["remote_id"]')" | tr ' ' '\n' | sed -n 's/^UserId=\([^(]*\)(.*/\1/p')" \
	"$SSHD_USER"

# ---- several jobs, one connection; the master ends with the run -------------

# (the status looks' master, left for the next look, is ended first)
for sock in $(find "$RUNDIR" -type s 2>/dev/null); do
	ssh -F none -o ControlPath="$sock" -O exit navette-master 2>/dev/null
done
c0=$(connections)
nv_in "$R" run recipes/several.lua
check_rc "four jobs are submitted" 0
check_eq "four jobs submitted" "$(printf '%s\n' "$OUT" | grep -c '^job job[0-9] submitted: ')" 4
check_eq "over one TCP connection (sshd's log)" "$(($(connections) - c0))" 1
check_eq "the run's ControlMaster is gone once it is submitted" \
	"$(find "$RUNDIR" -type s 2>/dev/null | wc -l | tr -d ' ')" 0
check_eq "the ControlMaster folder is 0700" \
	"$(python3 -c 'import os,sys; print(oct(os.stat(sys.argv[1]).st_mode & 0o777))' "$RUNDIR")" 0o700

# ---- a look at many jobs: one squeue for all of them --------------------------

sleep 3 # (the four end; the last look is stale)
s0=$(commands)
nv_in "$R" jobs --profile login
check_rc "jobs lists the profile's jobs" 0
check_eq "the five jobs are listed" "$(printf '%s\n' "$OUT" | grep -c 'slurm_ssh\|job[0-9]\|first-job')" 5
check_eq "one command on the login node for all of them (sshd's log)" \
	"$(($(commands) - s0))" 1

# ---- a sweep: one sbatch --array ---------------------------------------------

s0=$(commands)
nv_in "$R" run recipes/sweep.lua --wait
check_rc "the 3-task sweep succeeds" 0
T0=$(sub_id 'part\[n=1\]') T1=$(sub_id 'part\[n=2\]') T2=$(sub_id 'part\[n=3\]')
A=$(st "$T0" 'd["remote_id"]' | cut -d_ -f1)
check_match "task 0 is task 0 of a Slurm array" "$(st "$T0" 'd["remote_id"]')" '^[0-9]+_0$'
check_eq "tasks 1 and 2 are the same array's" \
	"$(st "$T1" 'd["remote_id"]') $(st "$T2" 'd["remote_id"]')" "${A}_1 ${A}_2"
check_eq "one sbatch: Slurm has one array of 3 tasks from it" \
	"$(scontrol -o show job "$A" | grep -c "ArrayJobId=$A ")" 3
J=$(sub_id join)
check_eq "the fan-in after the sweep (afterok) succeeded" "$(st "$J" 'd["state"]')" succeeded

nv_in "$R" run recipes/fail.lua --wait
check_rc "a sweep with a failed task: run --wait exits 1" 1
F2=$(sub_id 'step\[n=2\]')
J=$(sub_id join)
check_eq "the failed task failed" "$(st "$F2" 'd["state"]')" failed
check_eq "the job after the sweep (afterok): cancelled at accepted" \
	"$(st "$J" 'd["state"] + " " + d["failure"]["phase"]')" "cancelled accepted"

# ---- cancel ----------------------------------------------------------------------

nv_in "$R" run recipes/sleepy.lua
check_rc "a long job is submitted" 0
S=$(submitted_id)
SID=$(st "$S" 'd["remote_id"]')
for _ in $(seq 1 60); do
	[ "$(scontrol -o show job "$SID" | tr ' ' '\n' | sed -n 's/^JobState=//p')" = RUNNING ] && break
	sleep 0.5
done
nv cancel "$S"
check_rc "cancel exits 0" 0
check_eq "Slurm cancelled it" \
	"$(scontrol -o show job "$SID" | tr ' ' '\n' | sed -n 's/^JobState=//p')" CANCELLED
check_eq "navette says cancelled" "$(job_state "$S")" cancelled

finish
