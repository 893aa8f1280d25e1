#!/usr/bin/env bash
# The slurm_ssh backend when things go wrong, on a second login node of
# its own (tests/stack/sshd-start.sh run again on another port, for a user
# whose login shell is bash): every command's session first runs the
# user's ~/.bashrc (bash reads it, not BASH_ENV, when sshd runs it), which
# prints a banner and fake frame lines on stdout and stderr, as a chatty
# shell profile does, and its PATH starts with a folder where
# squeue is a wrapper that this test turns hostile. Checks: jobs still run
# (the noise is outside navette's frame); a squeue answer over the
# listing's cap, a malformed JSON answer and a foreign job whose name is
# not UTF-8 give a clear error (what and what to check) or are read
# around, never a crash, and leave the job's row as it was; a job that
# retries on node failure is requeued by Slurm when its node goes down
# and ends succeeded, both attempts in its record; `migrate --profile`
# moves a job of the slurmrestd profile to the login node, the two
# records compared; the client never asks for agent forwarding, though
# an agent runs (sshd at DEBUG1 logs each channel request); a run of 20
# jobs opens one TCP connection.
# Needs SLURM_STACK_ENV, SSHD_STACK_ENV and S3_STACK_ENV (set by ctest);
# SSHD_FAULTS_PORT sets this test's login node's port (a free one).
set -eu -o pipefail
. "$(dirname "$0")/../lib.sh"
set +e # each check reports its own failure; finish sets the status

if [ ! -r "${SSHD_STACK_ENV:-}" ]; then
	echo "FAIL: SSHD_STACK_ENV is not set to a readable file (ctest sets it)" >&2
	exit 1
fi
for tool in ssh ssh-keygen ssh-keyscan ssh-agent /usr/sbin/sshd /bin/bash; do
	command -v "$tool" >/dev/null 2>&1 || {
		skip "faults of the login node" "$tool is not installed (openssh, bash)"
		finish
	}
done
if [ "$(id -u)" -ne 0 ]; then
	skip "faults of the login node" "its own sshd needs root"
	finish
fi
use_slurm_stack sshfaults
# (a look that never ends fails its check, not the whole test)
export NV_TIME_LIMIT=${NV_TIME_LIMIT:-90}
unset SSH_AUTH_SOCK SSH_AGENT_PID

# ---- this test's login node ------------------------------------------------

LOGIN_USER=navette-ssh-bash
LIST_MAX=$((32 * 1024 * 1024)) # slurm_ssh.lua's cap on one listing
FAKE=$T/fakebin
MODE=$T/squeue.mode
mkdir -p "$FAKE"
echo real >"$MODE"
chmod 644 "$MODE"
# squeue as the test wants it: the real one, or an answer over the cap,
# or JSON cut short
cat >"$FAKE/squeue" <<EOF
#!/bin/sh
case \$(cat '$MODE') in
huge)
	printf '{"meta": {}, "errors": [], "jobs": ['
	head -c $((LIST_MAX + 1024 * 1024)) /dev/zero | tr '\\000' ' '
	printf ']}\\n' ;;
malformed) printf '{"meta": {}, "errors": [], "jobs": [{"job_id": 12, "name": "nv-' ;;
*) exec /usr/bin/squeue "\$@" ;;
esac
EOF
chmod 755 "$FAKE" "$FAKE/squeue"
# a chatty profile: text on both streams, lines that look like frames
# (the ~/.bashrc of this test's own user, removed at the end)
cat >"$T/noisy.sh" <<'EOF'
echo "Welcome to the login node. Quota: 93% used."
echo "NAVETTE-BEGIN-00000000000000000000000000000000"
echo "NAVETTE-END-00000000000000000000000000000000 0"
printf 'no final newline'
echo "quota warning: /home is nearly full" >&2
EOF
chmod 644 "$T/noisy.sh"
LOGIN_HOME=

PORT=${SSHD_FAULTS_PORT:-$(free_ports 1)}
LOGIN_DIR=$T/sshd
SSHD_PORT=$PORT SSHD_USER=$LOGIN_USER SSHD_SHELL=/bin/bash \
	SSHD_LOG_LEVEL=DEBUG1 SLURM_ENV=$SLURM_STACK_ENV \
	SSHD_SET_ENV="PATH=$FAKE:/usr/local/bin:/usr/bin:/bin" \
	bash "$NAVETTE_SOURCE/tests/stack/sshd-start.sh" "$LOGIN_DIR" >"$T/sshd-start.out" 2>&1
check_rc_start=$?
if [ "$check_rc_start" -ne 0 ]; then
	fail "this test's login node starts: $(tail -5 "$T/sshd-start.out")"
	finish
fi
. "$LOGIN_DIR/sshd.env"
AGENT_PID=
LOGIN_HOME=$SSHD_USER_HOME
need_dir T
case $LOGIN_HOME in /home/* | /tmp/*) ;; *) fail "the login user's home is $LOGIN_HOME"; finish ;; esac
cp "$T/noisy.sh" "$LOGIN_HOME/.bashrc"
chmod 644 "$LOGIN_HOME/.bashrc"
stop_all() {
	rm -f "$LOGIN_HOME/.bashrc"
	scancel -u "$LOGIN_USER" >/dev/null 2>&1
	[ -z "${DOWN_NODE:-}" ] ||
		scontrol update nodename="$DOWN_NODE" state=resume >/dev/null 2>&1
	[ -z "$AGENT_PID" ] || kill "$AGENT_PID" 2>/dev/null
	bash "$NAVETTE_SOURCE/tests/stack/sshd-stop.sh" "$LOGIN_DIR" >/dev/null 2>&1
	rm -rf "$XDG_RUNTIME_DIR"
}
# the ControlMaster sockets' folder: short, ours
export XDG_RUNTIME_DIR=/tmp/nvsshf-$$
mkdir -m 700 "$XDG_RUNTIME_DIR"
RUNDIR=$XDG_RUNTIME_DIR/navette
trap 'st=$?; stop_all; (exit $st); _cleanup' EXIT

# an agent runs, as on a laptop: navette must not forward it
eval "$(ssh-agent -s -a "$T/agent.sock")" >/dev/null
AGENT_PID=$SSH_AGENT_PID
check_true "an ssh-agent runs (SSH_AUTH_SOCK)" test -S "$SSH_AUTH_SOCK"

nv storage mb "s3://$BUCKET" "${EP[@]}"
check_rc "the bucket is created" 0

mkdir -p "$T/keys"
ssh-keygen -q -t ed25519 -N '' -C member -f "$T/keys/id"
ssh-keygen -q -s "$SSHD_CA" -I "member-$$" -n "$SSHD_PRINCIPAL" -V -5m:+1h \
	"$T/keys/id.pub"
ssh-add -q "$T/keys/id" 2>/dev/null
SWD=$T/ssh-wd
mkdir -p "$SWD"
chmod 1777 "$SWD"

# the noise is real: a plain ssh sees it around the command's output
BARE=$(ssh -F none -T -p "$SSHD_PORT" -i "$T/keys/id" \
	-o CertificateFile="$T/keys/id-cert.pub" -o IdentitiesOnly=yes \
	-o IdentityAgent=none -o BatchMode=yes \
	-o UserKnownHostsFile="$SSHD_KNOWN_HOSTS" -o StrictHostKeyChecking=yes \
	"$SSHD_USER@$SSHD_HOST" 'command -v squeue' 2>"$T/bare.err")
check_match "the login node prints a banner before every command" "$BARE" '^Welcome to the login node'
check_match "and text on stderr" "$(cat "$T/bare.err")" 'quota warning'
check_match "squeue is the test's wrapper there" "$BARE" "$FAKE/squeue\$"

R=$T/repo
mkdir -p "$R/recipes"
cat >"$R/navette.lua" <<EOF
return {
  name = "hpc",
  default_profile = "login",
  credentials = {
    loginkey = { kind = "pem", source = "file", path = "$T/keys/id" },
    jwtkey = { kind = "hs256", source = "file", path = "$SLURM_JWT_KEY" },
  },
  profiles = {
    login = {
      backend = "slurm_ssh",
      storage = "s3://$BUCKET/",
      s3 = { endpoint = "$S3_ENDPOINT", region = "$S3_REGION" },
      slurm_ssh = {
        ssh = { host = "$SSHD_HOST", port = $SSHD_PORT, user = "$SSHD_USER",
                host_key = "$SSHD_FINGERPRINT" },
        credential = "loginkey", certificate = "$T/keys/id-cert.pub",
        partition = "$SLURM_PARTITION", working_directory = "$SWD",
      },
    },
    rest = {
      backend = "slurm",
      storage = "s3://$BUCKET/",
      s3 = { endpoint = "$S3_ENDPOINT", region = "$S3_REGION" },
      slurm = { endpoint = "$SLURMRESTD_URL", user = "$SLURM_USER",
                credential = "jwtkey", partition = "$SLURM_PARTITION",
                working_directory = "$SWD" },
      max_token_lifespan = "1h",
    },
  },
}
EOF
put_file "$R" recipes/twenty.lua <<'EOF'
local navette = require "navette"
for i = 1, 20 do
  navette.job { name = "j" .. i, command = { "true" } }
end
EOF
# a job that lives through its node's failure: its first attempt waits
# for the node to go down, the second (Slurm's restart count 1) ends
put_file "$R" recipes/survivor.lua <<'EOF'
local navette = require "navette"
navette.job {
  name = "survivor",
  command = { "sh", "-c", 'echo "attempt on $SLURMD_NODENAME restart ${SLURM_RESTART_COUNT:-0}"; [ "${SLURM_RESTART_COUNT:-0}" -ge 1 ] || sleep 100; echo ok > "$NAVETTE_OUTPUTS/done.txt"' },
  retries = { max = 1, on = { "node_fail" } },
  success = { outputs = { "done.txt" } },
  resources = { cpus = 1, time_limit = "5m" },
}
EOF
put_file "$R" recipes/same.lua <<'EOF'
local navette = require "navette"
local data = navette.storage.put_string("inputs/same.txt", "the same input\n")
navette.job {
  name = "same",
  inputs = { d = data.url },
  command = { "sh", "-c", "shasum -a 256 < \"$NAVETTE_INPUTS/d\" > \"$NAVETTE_OUTPUTS/sum.txt\"" },
  success = { outputs = { "sum.txt" } },
  resources = { cpus = 1, time_limit = "5m" },
}
EOF
git -C "$R" init -q
commit_all "$R" >/dev/null
git init -q --bare "$T/origin.git"
git -C "$R" remote add origin "$T/origin.git"
git -C "$R" push -q origin HEAD:main 2>/dev/null
git -C "$R" fetch -q origin

connections() { grep -c 'Connection from ' "$SSHD_LOG"; }
end_masters() {
	local sock
	for sock in $(find "$RUNDIR" -type s 2>/dev/null); do
		ssh -F none -o ControlPath="$sock" -O exit navette-master 2>/dev/null
	done
}
log_has() { "$NAVETTE" logs "$1" 2>/dev/null | grep -Eq -- "$2"; }
slurm_field() { # SLURM_ID FIELD
	scontrol -o show job "$1" | tr ' ' '\n' | sed -n "s/^$2=//p"
}
NO_CRASH='panic|stack traceback|Segmentation|core dumped'

# (the job that `migrate` moves runs meanwhile, through slurmrestd)
nv_in "$R" run recipes/same.lua --profile rest --node gpu-a
check_rc "a job through slurmrestd is submitted" 0
A=$(submitted_id)

# ---- 1a. a chatty shell profile: jobs still run ---------------------------------
# (the job that outlives its node, below, goes through it: its submission
# and every look at it are framed amid the profile's text)

nv_in "$R" run recipes/survivor.lua
check_rc "through the chatty login node: a job is submitted" 0
N=$(submitted_id)
check_no_match "no noise in what navette shows" "$OUT$ERR" 'Welcome|NAVETTE-|quota'
check_state "it runs" "$N" running 60
check_true "its log shows its first attempt" wait_for 30 log_has "$N" '^attempt on gpu-. restart 0$'
nv status "$N"
check_rc "status exits 0" 0
check_match "status names the Slurm job and its node" "$OUT" 'job [0-9]+ · RUNNING on gpu-[ab]'
check_no_match "no noise in it" "$OUT$ERR" 'Welcome|NAVETTE-|quota|cannot reach'

# ---- 1b, 1c. hostile answers of squeue --------------------------------------------

echo huge >"$MODE"
nv status "$N"
check_rc "a squeue answer over the cap: status still shows the job (exit 0)" 0
check_match "it says squeue's answer is over the cap" "$OUT" \
	"cannot reach Slurm: the login node $LOGIN_USER@$SSHD_HOST:$SSHD_PORT: squeue --json printed more than 32 MiB"
check_match "and what to check" "$OUT" "check \`squeue -u $LOGIN_USER | wc -l\` on the login node"
check_match "the state shown is the last known" "$OUT" '^state +running'
check_no_match "no crash" "$ERR" "$NO_CRASH"
nv_in "$R" jobs --profile login
check_rc "jobs still lists the jobs (exit 0)" 0
check_no_match "no crash" "$ERR" "$NO_CRASH"

echo malformed >"$MODE"
nv status "$N"
check_rc "malformed JSON: status still shows the job (exit 0)" 0
check_match "it says squeue's answer is not JSON, naming the login node" "$OUT" \
	"cannot reach Slurm: the login node $LOGIN_USER@$SSHD_HOST:$SSHD_PORT: squeue --json's answer is not a JSON object"
check_match "and what to check" "$OUT" "check \`squeue --json\` on the login node"
check_no_match "no crash" "$ERR" "$NO_CRASH"

echo real >"$MODE"
check_eq "nothing was half-recorded: the job still runs" "$(job_state "$N")" running

# a foreign job of the same user whose name is not UTF-8 (held: it stays)
FOREIGN=$(runuser -u "$LOGIN_USER" -- env SLURM_CONF="$SLURM_CONF" \
	sbatch --parsable --hold --job-name="$(printf 'bad\377\376name')" \
	-p "$SLURM_PARTITION" -D "$SWD" --wrap 'true' 2>&1)
check_match "a job with a name that is not UTF-8 is queued" "$FOREIGN" '^[0-9]+$'
# (the whole answer read first: grep -q on a pipe would leave squeue
# writing into a closed pipe, and pipefail would take that for a miss)
raw_name_listed() {
	local listed
	listed=$(runuser -u "$LOGIN_USER" -- env SLURM_CONF="$SLURM_CONF" \
		/usr/bin/squeue --json) || return 1
	LC_ALL=C grep -q "\"bad$(printf '\377\376')name\"" <<<"$listed"
}
check_true "squeue --json shows its name's bytes as they are" raw_name_listed
nv status "$N"
check_rc "status reads around it (exit 0)" 0
check_match "and still sees the job running" "$OUT" 'RUNNING'
nv_in "$R" jobs --profile login
check_rc "jobs lists the profile's jobs" 0
# (jobs shows an id's shortest unique prefix: 12 characters or more, as
# the ids drawn in the same second require)
listed_running() {
	printf '%s\n' "$OUT" | awk -v id="$N" \
		'length($1) >= 12 && index(id, $1) == 1 && $2 == "running" { found = 1 } END { exit !found }'
}
check_true "with the job" listed_running
check_no_match "no crash" "$ERR" "$NO_CRASH"

# ---- 2. retries on node failure, through the login node ----------------------

NSLURM=$(st "$N" 'd["remote_id"]')
NODE=$(slurm_field "$NSLURM" NodeList)
check_match "Slurm says its node" "$NODE" '^gpu-[ab]$'
OTHER=gpu-a
[ "$NODE" = gpu-a ] && OTHER=gpu-b
# (the slurmrestd job is over before a node goes down)
check_state "the slurmrestd job succeeded" "$A" 'succeeded|failed|cancelled' 60
check_eq "... it succeeded" "$STATE" succeeded
# the node fails (as slurmctld marks a node whose slurmd stopped answering)
DOWN_NODE=$NODE
scontrol update nodename="$NODE" state=down reason=navette-test-node-failure
requeued() { [ "$(slurm_field "$NSLURM" Restarts)" = 1 ]; }
check_true "Slurm requeued the job" wait_for 20 requeued

# ---- 3. migrate from the slurmrestd profile to the login node ------------------
# (on the node that stays up, while the requeued job waits to start again)

nv_in "$R" migrate "$A" --to "$OTHER" --profile login --force
check_rc "migrate --profile login: the comparison holds (exit 0)" 0
B=$(printf '%s\n' "$OUT" | sed -n "s/.* submitted again on $OTHER through profile login: \\(.*\\)\$/\\1/p")
check_match "migrate printed the new job" "$B" '^hpc-'
check_match "checksums equal" "$OUT" '^  sum.txt .* sha256 equal'
check_no_match "no noise in what migrate shows" "$OUT$ERR" 'Welcome|NAVETTE-|quota'
RA=$(s3cat "hpc/$A/navette-run.json")
RB=$(s3cat "hpc/$B/navette-run.json")
same_field() { # WHAT EXPR
	check_eq "both records: the same $1" "$(printf '%s' "$RB" | json "$2")" \
		"$(printf '%s' "$RA" | json "$2")"
}
check_eq "the new record: backend slurm_ssh, profile login, succeeded" \
	"$(printf '%s' "$RB" | json '[d["backend"], d["profile"], d["state"]]')" \
	'["slurm_ssh", "login", "succeeded"]'
check_eq "the old record: backend slurm, profile rest" \
	"$(printf '%s' "$RA" | json '[d["backend"], d["profile"]]')" '["slurm", "rest"]'
same_field commit 'd["commit"]'
same_field command 'd["command"]'
same_field image 'd["image"]'
same_field inputs '[(i["name"], i["sha256"]) for i in d["inputs"]]'
same_field outputs '[(o["name"], o["sha256"]) for o in d["outputs"]]'
check_eq "the new job ran on $OTHER" "$(st "$B" 'd["slurm"]["nodes"]')" "$OTHER"
check_eq "... as the login node's user" \
	"$(slurm_field "$(st "$B" 'd["remote_id"]')" UserId | sed 's/(.*//')" "$LOGIN_USER"

# ---- 2, the end: the job that outlived its node ------------------------------

check_state "the requeued job ends" "$N" 'succeeded|failed|cancelled' 90
check_eq "it succeeded after its node failed" "$STATE" succeeded
check_eq "the same Slurm job, requeued by Slurm (never a second submission)" \
	"$(st "$N" 'd["remote_id"]') $(st "$N" 'd["slurm"]["restarts"]')" "$NSLURM 1"
NREC=$(s3cat "hpc/$N/navette-run.json")
check_eq "the record lists both attempts, the first requeued by Slurm" \
	"$(printf '%s' "$NREC" | json '[(a["attempt"], a["state"], a.get("failure")) for a in d["attempts"]]')" \
	'[[1, "failed", "requeued"], [2, "succeeded", null]]'
check_match "... with why" "$(printf '%s' "$NREC" | json 'd["attempts"][0]["reason"]')" \
	'^Slurm requeued the job \(its node failed'
check_eq "the record says slurm_ssh" "$(printf '%s' "$NREC" | json 'd["backend"]')" slurm_ssh
check_match "the log shows the second attempt" "$(s3cat "hpc/$N/navette.log")" \
	'^attempt on gpu-. restart 1$'
nv status "$N"
check_match "status shows the attempt" "$OUT" '^state +succeeded · attempt 2$'
scontrol update nodename="$NODE" state=resume
DOWN_NODE=

# ---- 5. ControlMaster: 20 jobs, one connection ---------------------------------------

end_masters
c0=$(connections)
nv_in "$R" run recipes/twenty.lua
check_rc "twenty jobs are submitted" 0
check_eq "twenty jobs submitted" "$(printf '%s\n' "$OUT" | grep -c '^job j[0-9]* submitted: ')" 20
check_eq "over one TCP connection (sshd's log)" "$(($(connections) - c0))" 1

# ---- 4. no agent forwarding ----------------------------------------------------

check_true "sshd logs each channel request (DEBUG1)" \
	grep -q 'server_input_channel_req: channel [0-9]* request exec' "$SSHD_LOG"
check_eq "navette never asked for agent forwarding" \
	"$(grep -c 'auth-agent-req' "$SSHD_LOG")" 0
check_eq "nor X11 or port forwarding" \
	"$(grep -Ec 'x11-req|tcpip-forward|direct-tcpip' "$SSHD_LOG")" 0

finish
