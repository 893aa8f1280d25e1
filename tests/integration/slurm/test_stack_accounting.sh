#!/usr/bin/env bash
# The Slurm test cluster's accounting mode (tests/stack/slurm-start.sh with
# SLURM_ACCOUNTING=1: a private MariaDB and slurmdbd), against a cluster of
# this test's own on free ports: slurm.env names it, slurmdbd.conf is 0600,
# the cluster and the gres/gpu TRES are in the database; then Slurm itself
# enforces a QOS (GrpTRES=gres/gpu=1 MaxJobsPerUser=1) of an account with
# users alice and bob: alice's first GPU job runs, her second stays PENDING
# with reason QOSMaxJobsPerUserLimit, bob's waits for the GPU (QOSGrpGRES),
# a REST submission as alice (slurmrestd, her token from scontrol) shows
# alice's reason too, slurmrestd serves the slurmdb API (the QOS read as
# alice), and after `sacctmgr modify user alice set
# MaxSubmitJobs=0` her next sbatch and REST submission are refused with the
# policy error. Last, slurm-stop.sh leaves no process behind: none whose
# command line or environment names the cluster's folder (their jobs'
# included). Linux, as root, with slurmdbd and mariadb-server installed
# (vendor/packages.txt, group test); else skipped.
set -eu -o pipefail
. "$(dirname "$0")/../lib.sh"
set +e # each check reports its own failure; finish sets the status

if [ "$(id -u)" -ne 0 ]; then
	skip "Slurm accounting" "the test cluster runs its daemons as root"
	finish
fi
for tool in slurmctld slurmd slurmrestd slurmdbd mariadbd sacctmgr munged curl; do
	if ! command -v "$tool" >/dev/null 2>&1; then
		skip "Slurm accounting" "$tool is not installed (vendor/packages.txt, group test)"
		finish
	fi
done

# alice's and bob's jobs reach the cluster's files and munge socket
chmod 755 "$T"
STACK=$NAVETTE_SOURCE/tests/stack
DIR=$T/slurm
STOPPED=
stop_stack() {
	[ -z "$STOPPED" ] && [ -d "$DIR/run" ] &&
		bash "$STACK/slurm-stop.sh" "$DIR" >/dev/null 2>&1
	return 0
}
trap 'st=$?; stop_stack; (exit $st); _cleanup' EXIT

# bounded SECONDS COMMAND...: COMMAND, killed (SIGALRM) after SECONDS.
bounded() {
	perl -e 'alarm shift; exec @ARGV or exit 127' "$@"
}

read -r P1 P2 P3 P4 P5 P6 <<<"$(free_ports 6 | tr '\n' ' ')"
if ! SLURM_ACCOUNTING=1 SLURM_PORT=$P1 SLURMD_PORT_A=$P2 SLURMD_PORT_B=$P3 \
	SLURMRESTD_PORT=$P4 SLURMDBD_PORT=$P5 SLURM_DB_PORT=$P6 \
	bounded 120 bash "$STACK/slurm-start.sh" "$DIR" >"$T/start.log" 2>&1; then
	fail "a Slurm cluster with accounting starts: $(tail -40 "$T/start.log")"
	finish
fi
# (the script's own figure: "up in N s")
sed -n 's/^\(slurm-start: up in [0-9.]* s\).*/\1/p' "$T/start.log"
pass "a Slurm cluster with accounting starts"

# SLURM_CONF is given to each command, never exported: the last check looks
# for processes whose environment names DIR (one exported by the caller
# would stay exported).
unset SLURM_CONF
. "$DIR/slurm.env"
check_eq "slurm.env: SLURM_ACCOUNTING" "${SLURM_ACCOUNTING:-}" 1
check_eq "slurm.env: SLURMDBD_PORT" "${SLURMDBD_PORT:-}" "$P5"
check_eq "slurm.env: SLURM_CLUSTER" "${SLURM_CLUSTER:-}" navettetest
check_match "slurmdbd.conf is 0600" "$(ls -l "$DIR/slurmdbd.conf")" '^-rw-------'
check_match "slurm.conf: accounting through slurmdbd" "$(cat "$SLURM_CONF")" \
	'^AccountingStorageType=accounting_storage/slurmdbd$'
check_match "slurm.conf: ... enforcing associations, limits and QOS" \
	"$(cat "$SLURM_CONF")" '^AccountingStorageEnforce=associations,limits,qos,safe$'

sl() { SLURM_CONF=$SLURM_CONF bounded 30 "$@"; }

check_eq "sacctmgr lists the cluster" \
	"$(sl sacctmgr -n -P show cluster format=cluster 2>&1)" "$SLURM_CLUSTER"
check_match "slurmctld registered gres/gpu as a TRES" \
	"$(sl sacctmgr -n -P show tres format=type,name 2>&1)" '^gres\|gpu$'

# as_user USER COMMAND...: COMMAND as USER (uid, gid, groups), from /tmp
# (python3: runuser and su differ between Linux and macOS)
as_user() {
	local u=$1
	shift
	(cd /tmp && SLURM_CONF=$SLURM_CONF bounded 30 python3 -c '
import os, pwd, sys
p = pwd.getpwnam(sys.argv[1])
os.initgroups(p.pw_name, p.pw_gid)
os.setgid(p.pw_gid)
os.setuid(p.pw_uid)
os.environ.update(HOME=p.pw_dir, USER=p.pw_name, LOGNAME=p.pw_name)
os.execvp(sys.argv[2], sys.argv[2:])' "$u" "$@")
}

# the Unix users (kept: creating them again is all a later run needs)
for u in alice bob; do
	id "$u" >/dev/null 2>&1 || useradd -M -d /tmp -s /bin/bash "$u" ||
		id "$u" >/dev/null 2>&1 || {
		fail "user $u exists or can be made"
		finish
	}
done

sl sacctmgr -i add qos small GrpTRES=gres/gpu=1 MaxJobsPerUser=1 >"$T/sacctmgr.log" 2>&1 &&
	sl sacctmgr -i add account vision >>"$T/sacctmgr.log" 2>&1 &&
	sl sacctmgr -i modify account vision set QOS=small DefaultQOS=small >>"$T/sacctmgr.log" 2>&1 &&
	sl sacctmgr -i add user alice,bob Account=vision >>"$T/sacctmgr.log" 2>&1
check_eq "sacctmgr adds the QOS, the account and its users" "$?" 0
check_eq "the QOS holds its limits" \
	"$(sl sacctmgr -n -P show qos small format=name,grptres,maxjobspu 2>&1)" \
	"small|gres/gpu=1|1"
check_eq "alice's association has the QOS" \
	"$(sl sacctmgr -n -P show assoc user=alice format=account,user,qos,defaultqos 2>&1)" \
	"vision|alice|small|small"

# a GPU job of USER, sleeping (its output thrown away); prints its id
gpu_job() {
	as_user "$1" sbatch --parsable --gres=gpu:1 -o /dev/null -J "acct-$1" \
		--chdir=/tmp --wrap 'sleep 300' 2>"$T/sbatch.err" | cut -d';' -f1
}
# wait_job ID STATE REASON SECONDS: until squeue shows "STATE REASON" for
# ID; leaves the last line seen in GOT
GOT=
wait_job() {
	local deadline=$(($(date +%s) + $4))
	while :; do
		GOT=$(sl squeue -h -j "$1" -o '%T %r' 2>&1)
		[ "$GOT" = "$2 $3" ] && return 0
		[ "$(date +%s)" -lt "$deadline" ] || return 1
		sleep 0.3
	done
}
check_job() {
	if wait_job "$2" "$3" "$4" 30; then
		pass "$1"
	else
		fail "$1 (got '$GOT' for job '$2', expected '$3 $4')"
	fi
}

A1=$(gpu_job alice)
check_match "alice submits a GPU job" "$A1" '^[0-9]+$'
check_job "... which runs" "$A1" RUNNING None
A2=$(gpu_job alice)
check_match "alice submits a second one" "$A2" '^[0-9]+$'
check_job "... which waits: QOSMaxJobsPerUserLimit" "$A2" PENDING QOSMaxJobsPerUserLimit
B1=$(gpu_job bob)
check_match "bob submits a GPU job" "$B1" '^[0-9]+$'
check_job "... which waits for the QOS's one GPU: QOSGrpGRES" "$B1" PENDING QOSGrpGRES

# REST, as alice
TOKEN=$(sl scontrol token username=alice lifespan=300 2>/dev/null | sed -n 's/^SLURM_JWT=//p')
check_ne "scontrol issues a token for alice" "$TOKEN" ""
V=$SLURM_API_VERSION
# rest METHOD PATH CURL_ARGS...: a request as alice; the body in rest.json,
# the HTTP status on stdout
rest() {
	local method=$1 path=$2
	shift 2
	curl -s --max-time 20 -X "$method" -H "X-SLURM-USER-NAME: alice" \
		-H "X-SLURM-USER-TOKEN: $TOKEN" -H "Content-Type: application/json" \
		-o "$T/rest.json" -w '%{http_code}' "$@" "$SLURMRESTD_URL/$path"
}
BODY='{"script":"#!/bin/bash\nsleep 300\n","job":{"name":"acct-rest","current_working_directory":"/tmp","environment":{"PATH":"/usr/bin:/bin"},"standard_output":"/dev/null","gres":"gpu:1"}}'
code=$(rest POST "slurm/$V/job/submit" --data "$BODY")
R1=$(json 'd["job_id"]' <"$T/rest.json" 2>&1)
check_eq "REST as alice: the submission is accepted (HTTP 200)" "$code" 200
check_match "... with a job id" "$R1" '^[0-9]+$'
reason=
deadline=$(($(date +%s) + 30))
while :; do
	rest GET "slurm/$V/job/$R1" >/dev/null
	reason=$(json '"%s %s" % (d["jobs"][0]["job_state"], d["jobs"][0]["state_reason"])' <"$T/rest.json" 2>&1)
	[ "$reason" = "PENDING QOSMaxJobsPerUserLimit" ] && break
	[ "$(date +%s)" -lt "$deadline" ] || break
	sleep 0.3
done
check_eq "... PENDING, QOSMaxJobsPerUserLimit (GET job)" "$reason" "PENDING QOSMaxJobsPerUserLimit"

code=$(rest GET "slurmdb/$V/qos/small")
check_eq "slurmrestd serves the slurmdb API too: the QOS, read as alice" \
	"$code $(json '[q["name"] for q in d["QOS"]]' <"$T/rest.json" 2>&1)" '200 ["small"]'

# a limit set now holds on the next submission
sl sacctmgr -i modify user alice set MaxSubmitJobs=0 >>"$T/sacctmgr.log" 2>&1
check_eq "sacctmgr sets alice's MaxSubmitJobs=0" "$?" 0
as_user alice sbatch --parsable --gres=gpu:1 -o /dev/null --chdir=/tmp \
	--wrap 'sleep 300' >"$T/refused.out" 2>"$T/refused.err"
check_ne "alice's next sbatch fails" "$?" 0
check_contains "... with the policy error" "$(cat "$T/refused.err")" \
	"Job violates accounting/QOS policy"
code=$(rest POST "slurm/$V/job/submit" --data "$BODY")
check_eq "... and her REST submission (HTTP 500)" "$code" 500
check_eq "... error 2050" "$(json '[e.get("error_code") for e in d.get("errors", [])]' <"$T/rest.json" 2>&1)" "[2050]"
check_eq "her queued jobs stay" "$(sl squeue -h -u alice -o %i 2>&1 | wc -l | tr -d ' ')" 3

# stopping: every user's jobs, then the daemons, MariaDB and slurmdbd too
bash "$STACK/slurm-stop.sh" "$DIR" >"$T/stop.log" 2>&1
check_eq "slurm-stop.sh stops the cluster" "$?" 0
check_no_match "... each daemon on SIGTERM" "$(cat "$T/stop.log")" 'SIGKILL|error'
STOPPED=1
left=
deadline=$(($(date +%s) + 10))
while :; do
	# (ps's `e`: each command followed by its environment; its output is
	# read after it ends, so that this check's own commands are not in it)
	ps axeww -o pid=,command= >"$T/ps.txt" 2>&1
	left=$(grep -F "$DIR/" "$T/ps.txt" | cut -c1-200)
	[ -z "$left" ] && break
	[ "$(date +%s)" -lt "$deadline" ] || break
	sleep 0.3
done
check_eq "no process names the cluster's folder once it is stopped" "$left" ""

finish
