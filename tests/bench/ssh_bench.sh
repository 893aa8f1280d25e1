#!/usr/bin/env bash
# tests/bench/ssh_bench.sh [N] — Slurm through SSH (backend slurm_ssh,
# issue 30): N submissions (500 by default) three ways, in the same run, on
# the same throwaway cluster: the two-node Slurm 22.05 of
# tests/stack/slurm-start.sh behind the OpenSSH login node of
# tests/stack/sshd-start.sh, with radosgw (tests/stack/s3-start.sh) for the
# storage a profile needs. The script starts the three stacks itself and
# stops them on exit; or it reuses running ones whose env files it is given.
#   navette     `navette run` of a recipe whose navette.sweep declares N
#               tasks, on a slurm_ssh profile: one `sbatch --array` through
#               one ControlMaster connection; timed from the start of the
#               command until it exits with all N submitted (Slurm then has
#               the whole array: checked with squeue -r);
#   ssh loop    N `ssh login sbatch --parsable ...` calls, a new connection
#               each (ssh -F none, no ControlMaster), as a user's shell loop
#               `for i in ...; do ssh ... sbatch ...; done` does;
#   local loop  N `sbatch --parsable ...` calls on the login node, in one
#               ssh session (the floor of what sbatch itself costs; the one
#               connection is in the time);
#   status      one `navette status TASK` with the N tasks queued (one
#               squeue --json through the login node for all of them);
#   jobs        one `navette jobs --profile P --limit N` over the N tasks.
# The loops submit the same tiny script, name, partition and folder. The
# partition is set DOWN first (its state is put back on exit), so nothing
# runs and each way meets a queue free of the bench's jobs: every job the
# bench submitted is cancelled (scancel, by its id) before the next way and
# on exit. With FINISH=1, one more navette sweep runs with the partition
# up, timed until every task has left the queue.
#
# Prints a table of medians (navette, status and jobs over ROUNDS rounds,
# each loop over LOOP_ROUNDS) with the ratios loop / navette (above 1:
# navette is faster; the issue's target is at least 20x the ssh loop), and
# sshd's "Connection from" and "Starting session" lines logged during each
# navette command (the sweep's target: 1 connection). The navette commands
# start with no ControlMaster (each opens its own connection); the profile's
# known_hosts is written by one `navette jobs` before the first round, as
# `navette ssh trust` and a first look would have. Not a test (nothing
# registers it with add_test): it fails only when a submission fails.
#
# Environment: either all three stacks to start, on these ports (required,
# no defaults: on a shared machine a guessed port collides):
#   SLURM_PORT   slurmctld port (slurmd and slurmrestd take the next three)
#   S3_PORT      radosgw port (ceph takes S3_PORT+20000 and up)
#   SSHD_PORT    the login node's port
# or all three running stacks to reuse (their jobs' partition goes DOWN
# while the bench runs: do not share them with running tests):
#   SLURM_STACK_ENV  slurm.env of tests/stack/slurm-start.sh
#   SSHD_STACK_ENV   sshd.env of tests/stack/sshd-start.sh, started with
#                    SLURM_ENV set to that slurm.env
#   S3_STACK_ENV     users.env of tests/stack/s3-start.sh
# And (all optional):
#   N            submissions per way (500; the first argument wins)
#   ROUNDS       rounds of the navette sweep, status and jobs (3)
#   LOOP_ROUNDS  rounds of each N-call loop (1)
#   FINISH       1: also time a sweep until all its tasks have ended (0)
#   BENCH_TMP    where the work folder goes (/tmp); removed on exit
#   NAVETTE      the navette binary (build/navette)
set -eu -o pipefail
. "$(dirname "$0")/../need_dir_lib.sh"

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
ROOT=$(cd "$HERE/../.." && pwd -P)
N=${1:-${N:-500}}
case $N in
-h | --help)
	sed -n '2,/^set -eu/p' "$0" | sed '$d; s/^# \{0,1\}//'
	exit 0
	;;
*[!0-9]* | '' | 0 | 1)
	echo "usage: $0 [N >= 2] (see $0 --help)" >&2
	exit 2
	;;
esac
ROUNDS=${ROUNDS:-3}
LOOP_ROUNDS=${LOOP_ROUNDS:-1}
FINISH=${FINISH:-0}
NAVETTE=${NAVETTE:-$ROOT/build/navette}
case $ROUNDS$LOOP_ROUNDS in *[!0-9]*) ROUNDS=x ;; esac
case $ROUNDS:$LOOP_ROUNDS in
x:* | 0:* | *:0 | :* | *:)
	echo "ssh_bench: ROUNDS and LOOP_ROUNDS must be whole numbers >= 1" >&2
	exit 2
	;;
esac

say() { printf 'ssh_bench: %s\n' "$*" >&2; }
die() {
	say "error: $*"
	exit 1
}

# ---- what it needs, before anything starts ------------------------------------

REUSE=
if [ -n "${SLURM_STACK_ENV:-}${SSHD_STACK_ENV:-}${S3_STACK_ENV:-}" ]; then
	for v in SLURM_STACK_ENV SSHD_STACK_ENV S3_STACK_ENV; do
		f=${!v:-}
		[ -n "$f" ] && [ -r "$f" ] || {
			say "error: $v='$f' is not a readable file: give all three env files to reuse running stacks, or none and SLURM_PORT, S3_PORT, SSHD_PORT to start them"
			exit 2
		}
	done
	REUSE=1
else
	for v in SLURM_PORT S3_PORT SSHD_PORT; do
		case ${!v:-} in
		'' | *[!0-9]*)
			say "error: $v is not set to a port: the bench starts Slurm, radosgw and sshd on SLURM_PORT, S3_PORT and SSHD_PORT (e.g. SLURM_PORT=27847 S3_PORT=27510 SSHD_PORT=27022), or reuses stacks given SLURM_STACK_ENV, SSHD_STACK_ENV and S3_STACK_ENV"
			exit 2
			;;
		esac
	done
fi
[ -x "$NAVETTE" ] || {
	say "error: $NAVETTE not found (cmake --build build --target navette, or set NAVETTE)"
	exit 2
}
for tool in ssh ssh-keygen sbatch squeue scancel scontrol perl git; do
	command -v "$tool" >/dev/null 2>&1 || {
		say "error: $tool not found (openssh-client, slurm-client, perl, git: vendor/packages.txt)"
		exit 2
	}
done

WORK=$(mktemp -d "${BENCH_TMP:-/tmp}/navette-ssh-bench.XXXXXX")
NEED_DIR_ROOT=${BENCH_TMP:-}
need_dir WORK
# the login node's user reads SLURM_CONF and the job script under it
chmod 755 "$WORK"
# the ControlMaster sockets: a short folder of ours (a socket path is short)
export XDG_RUNTIME_DIR=/tmp/nvsshb-$$
need_dir XDG_RUNTIME_DIR
mkdir -m 700 "$XDG_RUNTIME_DIR"
RUNDIR=$XDG_RUNTIME_DIR/navette

IDS=$WORK/ids # every Slurm job id the bench submitted, one a line
PARTITION_WAS=
# ends navette's ControlMasters (a status look leaves one for the next)
end_masters() {
	local sock
	for sock in "$RUNDIR"/*; do
		[ -S "$sock" ] || continue
		ssh -F none -o ControlPath="$sock" -O exit navette-master >/dev/null 2>&1 || true
	done
}
cancel_ours() {
	[ -s "$IDS" ] || return 0
	# shellcheck disable=SC2046 # one id a word
	scancel $(sort -u "$IDS") >/dev/null 2>&1 || true
}
cleanup() {
	local st=$?
	set +e
	cancel_ours
	end_masters
	if [ -n "$PARTITION_WAS" ]; then
		scontrol update PartitionName="$SLURM_PARTITION" State="$PARTITION_WAS" >/dev/null 2>&1
	fi
	if [ -z "$REUSE" ]; then
		bash "$ROOT/tests/stack/sshd-stop.sh" "$WORK/sshd" >/dev/null 2>&1
		bash "$ROOT/tests/stack/slurm-stop.sh" "$WORK/slurm" >/dev/null 2>&1
		bash "$ROOT/tests/stack/s3-stop.sh" "$WORK/s3" >/dev/null 2>&1
	fi
	rm -rf "$WORK" "$XDG_RUNTIME_DIR"
	exit "$st"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# ---- the stacks ---------------------------------------------------------------------

if [ -z "$REUSE" ]; then
	say "starting Slurm on 127.0.0.1:$SLURM_PORT.."
	bash "$ROOT/tests/stack/slurm-start.sh" "$WORK/slurm" >"$WORK/slurm-start.log" 2>&1 || {
		tail -n 30 "$WORK/slurm-start.log" >&2
		die "the Slurm stack did not start"
	}
	SLURM_STACK_ENV=$WORK/slurm/slurm.env
	say "starting the login node (sshd) on 127.0.0.1:$SSHD_PORT.."
	SLURM_ENV=$SLURM_STACK_ENV bash "$ROOT/tests/stack/sshd-start.sh" "$WORK/sshd" \
		>"$WORK/sshd-start.log" 2>&1 || {
		tail -n 30 "$WORK/sshd-start.log" >&2
		die "the sshd stack did not start"
	}
	SSHD_STACK_ENV=$WORK/sshd/sshd.env
	say "starting radosgw on 127.0.0.1:$S3_PORT.."
	bash "$ROOT/tests/stack/s3-start.sh" "$WORK/s3" >"$WORK/s3-start.log" 2>&1 || {
		tail -n 30 "$WORK/s3-start.log" >&2
		die "radosgw did not start"
	}
	S3_STACK_ENV=$WORK/s3/users.env
fi
# shellcheck disable=SC1090
. "$SLURM_STACK_ENV"
# shellcheck disable=SC1090
. "$SSHD_STACK_ENV"
# shellcheck disable=SC1090
. "$S3_STACK_ENV"
export SLURM_CONF
[ -n "${SSHD_SLURM_CONF:-}" ] ||
	die "the login node in $SSHD_STACK_ENV reaches no Slurm (start sshd-start.sh with SLURM_ENV=$SLURM_STACK_ENV)"
[ "$SSHD_SLURM_CONF" = "$SLURM_CONF" ] ||
	die "the login node reaches $SSHD_SLURM_CONF, not $SLURM_CONF of $SLURM_STACK_ENV"

PARTITION_WAS=$(scontrol -o show partition "$SLURM_PARTITION" |
	tr ' ' '\n' | sed -n 's/^State=//p')
[ -n "$PARTITION_WAS" ] || die "Slurm has no partition $SLURM_PARTITION"
# every job stays pending: the partition takes jobs but starts none
scontrol update PartitionName="$SLURM_PARTITION" State=DOWN >/dev/null ||
	die "cannot set partition $SLURM_PARTITION down"

export AWS_ACCESS_KEY_ID=$S3_ACCESS_KEY AWS_SECRET_ACCESS_KEY=$S3_SECRET_KEY
export AWS_REGION=$S3_REGION NAVETTE_HOME=$WORK/home NO_COLOR=1
unset AWS_SESSION_TOKEN AWS_PROFILE AWS_ENDPOINT_URL SSH_AUTH_SOCK SSH_AGENT_PID
BUCKET=navette-ssh-bench-$$
"$NAVETTE" storage mb "s3://$BUCKET" --endpoint "$S3_ENDPOINT" >/dev/null ||
	die "cannot make the bucket $BUCKET"

# the member's key and a certificate from the login node's CA
mkdir -p "$WORK/keys"
KEY=$WORK/keys/id
ssh-keygen -q -t ed25519 -N '' -C bench -f "$KEY"
ssh-keygen -q -s "$SSHD_CA" -I "bench-$$" -n "$SSHD_PRINCIPAL" -V -5m:+4h "$KEY.pub"
# the jobs run as the login node's user: their folder lets it write
SWD=$WORK/wd
mkdir -p "$SWD"
chmod 1777 "$SWD"
JOB=$WORK/job.sh
printf '#!/bin/sh\necho bench\n' >"$JOB"
chmod 755 "$JOB"

REPO=$WORK/repo
mkdir -p "$REPO/recipes"
cat >"$REPO/navette.lua" <<EOF
return {
  name = "sshbench",
  default_profile = "login",
  credentials = {
    loginkey = { kind = "pem", source = "file", path = "$KEY" },
  },
  profiles = {
    login = {
      backend = "slurm_ssh", require_pushed = false,
      storage = "s3://$BUCKET/",
      s3 = { endpoint = "$S3_ENDPOINT", region = "$S3_REGION" },
      slurm_ssh = {
        ssh = { host = "$SSHD_HOST", port = $SSHD_PORT, user = "$SSHD_USER",
                host_key = "$SSHD_FINGERPRINT" },
        credential = "loginkey", certificate = "$KEY-cert.pub",
        partition = "$SLURM_PARTITION", working_directory = "$SWD",
      },
    },
  },
}
EOF
cat >"$REPO/recipes/one.lua" <<EOF
local navette = require "navette"
navette.job { name = "first", command = { "true" } }
EOF
cat >"$REPO/recipes/sweep.lua" <<EOF
local navette = require "navette"
local values = {}
for i = 1, $N do values[i] = i end
navette.sweep { job = { name = "task", command = { "true" } },
                matrix = { i = values } }
EOF
git -C "$REPO" init -q
git -C "$REPO" add -A
git -C "$REPO" -c user.name=bench -c user.email=bench@localhost commit -qm bench
# the author's trust of the project file (kept in a throwaway configuration)
export XDG_CONFIG_HOME=$WORK/config
"$NAVETTE" trust "$REPO" >/dev/null || die "navette trust $REPO failed"

# a user's own ssh, as in a shell loop: no config, no ControlMaster
SSH=(ssh -F none -o BatchMode=yes -o StrictHostKeyChecking=yes
	-o UserKnownHostsFile="$SSHD_KNOWN_HOSTS" -o GlobalKnownHostsFile=/dev/null
	-o IdentitiesOnly=yes -o IdentityFile="$KEY" -o CertificateFile="$KEY-cert.pub"
	-o ControlMaster=no -o ControlPath=none -o ForwardAgent=no -o ForwardX11=no
	-p "$SSHD_PORT" "$SSHD_USER@$SSHD_HOST")
# the same sbatch for both loops (the name is the loop's and the index)
SBATCH_WORDS="sbatch --parsable -p $SLURM_PARTITION -D $SWD -o /dev/null"

# ---- measures -------------------------------------------------------------------------

now() { perl -MTime::HiRes=time -e 'printf "%.6f\n", time'; }
since() { awk -v a="$(now)" -v b="$1" 'BEGIN { printf "%.3f", a - b }'; }
median() { # VALUES...
	printf '%s\n' "$@" | sort -n | awk '{ v[NR] = $1 }
		END { if (NR % 2) printf "%.3f", v[(NR + 1) / 2];
		      else printf "%.3f", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
connections() { grep -c '^Connection from ' "$SSHD_LOG" || true; }
sessions() { grep -c 'Starting session' "$SSHD_LOG" || true; }
# the bench's jobs Slurm still has pending or running (tasks counted: -r)
ours_queued() {
	[ -s "$IDS" ] || {
		echo 0
		return
	}
	squeue -h -r -u "$SSHD_USER" -t PENDING,RUNNING,COMPLETING,CONFIGURING \
		-o '%F' 2>/dev/null | awk 'NR == FNR { id[$1] = 1; next } ($1 in id)' \
		"$IDS" - | wc -l | tr -d ' '
}
drain() {
	cancel_ours
	local i
	for i in $(seq 1 240); do
		[ "$(ours_queued)" -eq 0 ] && return 0
		sleep 0.5
	done
	die "Slurm still has $(ours_queued) of the bench's tasks"
}
# the tasks Slurm has of array job A
array_tasks() { squeue -h -r -j "$1" -o '%i' 2>/dev/null | wc -l | tr -d ' '; }

NV_SUB='' NV_FIN='' NV_CONN='' NV_SESS='' ST_T='' ST_CONN='' ST_SESS=''
JB_T='' JB_CONN='' JB_SESS=''
SSH_T='' LOC_T=''

# slurm_id JOB: the Slurm job (the array's) of a navette job
slurm_id() {
	(cd "$REPO" && "$NAVETTE" status "$1" --json) |
		perl -MJSON::PP -0777 -ne 'print((decode_json($_)->{remote_id} // "") =~ /^(\d+)/ ? $1 : "")' ||
		die "navette status $1 failed"
}

# navette_sweep: one navette run of the N tasks; sets ARRAY, TASK (an id)
navette_sweep() {
	end_masters
	local c0 s0 t0 t got
	c0=$(connections) s0=$(sessions)
	t0=$(now)
	(cd "$REPO" && "$NAVETTE" run recipes/sweep.lua >"$WORK/run.out" 2>"$WORK/run.err") || {
		tail -n 20 "$WORK/run.err" >&2
		die "navette run of the $N-task sweep failed"
	}
	t=$(since "$t0")
	NV_SUB="$NV_SUB $t"
	NV_CONN="$NV_CONN $(($(connections) - c0))"
	NV_SESS="$NV_SESS $(($(sessions) - s0))"
	got=$(grep -c '^job task.* submitted: ' "$WORK/run.out" || true)
	[ "$got" -eq "$N" ] || die "navette run submitted $got tasks of $N"
	TASK=$(sed -n 's/^job task.* submitted: \(.*\)$/\1/p' "$WORK/run.out" | sed -n "$((N / 2))p")
	ARRAY=$(slurm_id "$TASK")
	[ -n "$ARRAY" ] || die "task $TASK has no Slurm job id"
	echo "$ARRAY" >>"$IDS"
	[ "$(array_tasks "$ARRAY")" -eq "$N" ] ||
		die "Slurm has $(array_tasks "$ARRAY") tasks of array $ARRAY, not $N"
}

# ---- the rounds ---------------------------------------------------------------------------

LOAD0=$(uptime | sed 's/.*load averages*: *//')
# (first contact scans the host's keys: more connections, not measured)
say "first contact: one job, so that navette writes the profile's known_hosts.."
(cd "$REPO" && "$NAVETTE" run recipes/one.lua >/dev/null 2>"$WORK/first.err") || {
	cat "$WORK/first.err" >&2
	die "navette run recipes/one.lua failed"
}
first=$(slurm_id first)
[ -n "$first" ] || die "the first job has no Slurm job id"
echo "$first" >>"$IDS"

for round in $(seq 1 "$ROUNDS"); do
	drain
	say "round $round/$ROUNDS: navette run, a sweep of $N tasks.."
	navette_sweep
	say "round $round/$ROUNDS: navette status, navette jobs over the $N tasks.."
	end_masters
	c0=$(connections) s0=$(sessions)
	t0=$(now)
	(cd "$REPO" && "$NAVETTE" status "$TASK" >"$WORK/status.out" 2>&1) ||
		die "navette status $TASK failed: $(tail -n 5 "$WORK/status.out")"
	ST_T="$ST_T $(since "$t0")"
	ST_CONN="$ST_CONN $(($(connections) - c0))"
	ST_SESS="$ST_SESS $(($(sessions) - s0))"
	grep -q 'PENDING' "$WORK/status.out" ||
		die "navette status $TASK shows no PENDING Slurm job: $(cat "$WORK/status.out")"
	end_masters
	c0=$(connections) s0=$(sessions)
	t0=$(now)
	(cd "$REPO" && "$NAVETTE" jobs --profile login --limit "$N" >"$WORK/jobs.out" 2>&1) ||
		die "navette jobs failed: $(tail -n 5 "$WORK/jobs.out")"
	JB_T="$JB_T $(since "$t0")"
	JB_CONN="$JB_CONN $(($(connections) - c0))"
	JB_SESS="$JB_SESS $(($(sessions) - s0))"
	got=$(grep -c " ${ARRAY}_[0-9]* PENDING" "$WORK/jobs.out" || true)
	[ "$got" -eq "$N" ] || die "navette jobs lists $got tasks of array $ARRAY as pending, not $N"
done
drain

for round in $(seq 1 "$LOOP_ROUNDS"); do
	say "round $round/$LOOP_ROUNDS: $N ssh login sbatch calls, a connection each.."
	: >"$WORK/loop.ids"
	t0=$(now)
	for i in $(seq 1 "$N"); do
		# shellcheck disable=SC2086 # words
		"${SSH[@]}" $SBATCH_WORDS -J "sshb-ssh-$i" "$JOB" </dev/null >>"$WORK/loop.ids" ||
			die "ssh sbatch $i failed"
	done
	SSH_T="$SSH_T $(since "$t0")"
	cut -d';' -f1 "$WORK/loop.ids" >>"$IDS"
	[ "$(wc -l <"$WORK/loop.ids" | tr -d ' ')" -eq "$N" ] || die "the ssh loop got $(wc -l <"$WORK/loop.ids") ids, not $N"
	drain
	say "round $round/$LOOP_ROUNDS: $N sbatch calls on the login node, one session.."
	t0=$(now)
	"${SSH[@]}" sh -s >"$WORK/loop.ids" <<EOF || die "the sbatch loop on the login node failed"
i=1
while [ \$i -le $N ]; do
	$SBATCH_WORDS -J sshb-local-\$i $JOB || exit 1
	i=\$((i + 1))
done
EOF
	LOC_T="$LOC_T $(since "$t0")"
	cut -d';' -f1 "$WORK/loop.ids" >>"$IDS"
	[ "$(wc -l <"$WORK/loop.ids" | tr -d ' ')" -eq "$N" ] || die "the local loop got $(wc -l <"$WORK/loop.ids") ids, not $N"
	drain
done

if [ "$FINISH" = 1 ]; then
	say "FINISH=1: a sweep of $N tasks with the partition up, until all have ended.."
	scontrol update PartitionName="$SLURM_PARTITION" State=UP >/dev/null
	keep="$NV_SUB|$NV_CONN|$NV_SESS"
	t0=$(now)
	navette_sweep
	# (this sweep's submission is not one of the rounds')
	IFS='|' read -r NV_SUB NV_CONN NV_SESS <<<"$keep"
	for i in $(seq 1 3600); do
		[ "$(array_tasks "$ARRAY")" -eq 0 ] && break
		sleep 0.5
	done
	[ "$(array_tasks "$ARRAY")" -eq 0 ] || die "array $ARRAY still has tasks after 30 minutes"
	NV_FIN=$(since "$t0")
	scontrol update PartitionName="$SLURM_PARTITION" State=DOWN >/dev/null
fi
LOAD1=$(uptime | sed 's/.*load averages*: *//')

# ---- the table -------------------------------------------------------------------------------

# shellcheck disable=SC2086 # a list of numbers
nv=$(median $NV_SUB) ssh_t=$(median $SSH_T) loc=$(median $LOC_T)
# shellcheck disable=SC2086
st=$(median $ST_T) jb=$(median $JB_T)
per() { awk -v a="$1" -v n="$N" 'BEGIN { printf "%.2f", a * 1000 / n }'; }
# shellcheck disable=SC2048,SC2086 # a list of words, commas between
list() { echo $* | tr ' ' ','; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf (a < b ? "%.2fx" : "%.1fx"), a / b }'; }
row() { # WAY ROUNDS SECONDS PER RATIO_SSH RATIO_LOCAL CONNECTIONS
	printf '| %-44s | %6s | %8s | %10s | %10s | %10s | %11s |\n' "$@"
}
echo
echo "Slurm through SSH, $N submissions each way, medians:" \
	"$(getconf _NPROCESSORS_ONLN) cores, load $LOAD0 at the start, $LOAD1 at the end;" \
	"Slurm $(sbatch --version | awk '{ print $2 }'), $(ssh -V 2>&1 | cut -d, -f1)"
row way rounds "wall s" "per job ms" "ssh loop /" "local /" "connections"
printf '|%s|%s|%s|%s|%s|%s|%s|\n' "----------------------------------------------" \
	"-------:" "---------:" "-----------:" "-----------:" "-----------:" "------------:"
row "navette run, one sbatch --array (submitted)" "$ROUNDS" "$nv" "$(per "$nv")" \
	"$(ratio "$ssh_t" "$nv")" "$(ratio "$loc" "$nv")" "$(list $NV_CONN)"
[ -z "$NV_FIN" ] || row "navette run, partition up, until all ended" 1 "$NV_FIN" \
	"$(per "$NV_FIN")" "" "" ""
row "ssh login sbatch, a connection per call" "$LOOP_ROUNDS" "$ssh_t" "$(per "$ssh_t")" \
	"1.0x" "$(ratio "$loc" "$ssh_t")" "$N"
row "sbatch on the login node, one session" "$LOOP_ROUNDS" "$loc" "$(per "$loc")" \
	"$(ratio "$ssh_t" "$loc")" "1.0x" 1
row "navette status TASK ($N queued)" "$ROUNDS" "$st" "" "" "" "$(list $ST_CONN)"
row "navette jobs --profile --limit $N" "$ROUNDS" "$jb" "" "" "" "$(list $JB_CONN)"
echo "each round, s: navette run $(list $NV_SUB); status $(list $ST_T);" \
	"jobs $(list $JB_T); ssh loop $(list $SSH_T); local loop $(list $LOC_T)"
echo "sshd, each round: the sweep $(list $NV_CONN) connections," \
	"$(list $NV_SESS) commands; status $(list $ST_SESS) commands;" \
	"jobs $(list $JB_SESS) commands (squeue --json)"
echo "targets: the sweep over 1 connection:" \
	"$(case " $NV_CONN " in *" 0 "* | *" "[2-9]* | *" "[1-9][0-9]*) echo MISS ;; *) echo met ;; esac);" \
	"navette >= 20x the ssh loop:" \
	"$(awk -v a="$ssh_t" -v b="$nv" 'BEGIN { print (a / b >= 20) ? "met" : "MISS" }')"
