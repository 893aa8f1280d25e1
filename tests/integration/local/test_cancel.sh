# `navette cancel` of a running job: the state becomes cancelled, and the
# command and what it started (its whole process group) are gone.
set -eu -o pipefail
. "$(dirname "$0")/../lib.sh"
set +e # each check reports its own failure; finish sets the status
# The job's processes are named by the pids they print, and it waits on
# files under $T: both are the host's, which a job's sandbox hides (its
# own pid namespace, a private /tmp; test_local_sandbox covers it), so
# these jobs run without one. TODO: gates in the job's HOME and pids
# mapped through /proc/PID/status's NSpid, to run them sandboxed.
export NAVETTE_LOCAL_SANDBOX=off

PIDS=$T/pids
mkdir -p "$PIDS"
R=$(new_repo cancel)
# The command starts a background sleep (same process group), records
# both pids outside the job's folders, then waits.
put_file "$R" long.lua <<EOF
local navette = require "navette"
navette.job {
  name = "long",
  command = { "sh", "-c", "sleep 60 & echo \$! >\"\$PID_DIR/child.tmp\"; mv \"\$PID_DIR/child.tmp\" \"\$PID_DIR/child\"; echo \$\$ >\"\$PID_DIR/sh.tmp\"; mv \"\$PID_DIR/sh.tmp\" \"\$PID_DIR/sh\"; echo waiting; wait" },
  env = { PID_DIR = "$PIDS" },
}
EOF
commit_all "$R" >/dev/null

# alive PID: the process exists and is not a zombie.
alive() {
	local st
	[ -r "/proc/$1/stat" ] || { kill -0 "$1" 2>/dev/null; return; }
	st=$(sed 's/^.*) \(.\).*$/\1/' "/proc/$1/stat" 2>/dev/null) || return 1
	[ -n "$st" ] && [ "$st" != Z ] && [ "$st" != X ]
}
pids_written() { [ -s "$PIDS/sh" ] && [ -s "$PIDS/child" ]; }

nv_in "$R" run long.lua
check_rc "run exits 0" 0
ID=$(submitted_id)
check_state "the job reaches running" "$ID" running 30
check_true "the command recorded its pids" wait_for 30 pids_written
SH_PID=$(cat "$PIDS/sh" 2>/dev/null)
CHILD_PID=$(cat "$PIDS/child" 2>/dev/null)
check_true "the command's shell ($SH_PID) runs before cancel" alive "$SH_PID"
check_true "its sleep ($CHILD_PID) runs before cancel" alive "$CHILD_PID"

START=$(date +%s)
# by a prefix: the answer names the job whole, once it has stopped
nv cancel "${ID%??????}"
check_rc "cancel exits 0" 0
check_contains "cancel names the job" "$OUT" "$ID"
check_eq "cancel waits for the job to stop and says so" "$OUT" "$ID: cancelled"
check_state "the job is cancelled within 15 s" "$ID" 'cancelled|failed|succeeded' 15
check_eq "final state" "$STATE" cancelled
shell_gone() { ! alive "$SH_PID"; }
child_gone() { ! alive "$CHILD_PID"; }
check_true "the command's shell is gone" wait_for 15 shell_gone
check_true "the background sleep of the command is gone" wait_for 15 child_gone
ELAPSED=$(($(date +%s) - START))
check_true "cancel took effect well before the sleep's end (${ELAPSED} s)" \
	test "$ELAPSED" -le 20

nv status "$ID" --json
check_eq "status: state cancelled" \
	"$(printf '%s' "$OUT" | json 'd["state"]' 2>&1)" cancelled
check_eq "status: no outputs" \
	"$(printf '%s' "$OUT" | json 'd["outputs"]' 2>&1)" "[]"
nv status "$ID"
check_rc "status of a cancelled job exits 1" 1
check_match "status: the state is cancelled" "$OUT" '^state +cancelled$'
check_match "status: the last phase is cancelled" "$OUT" '^  cancelled +[0-9T:.Z-]+$'
check_no_match "status: no failed phase" "$OUT" 'failed'
check_eq "status: one line after the phases says how it ended" \
	"$(printf '%s\n' "$OUT" | sed -n '/^  cancelled /,$p' | sed -n 2p)" \
	"cancelled while running"
nv watch "$ID"
check_rc "watch of a cancelled job exits 1" 1
check_match "watch: ends with the cancelled phase" "$OUT" '^  cancelled +[0-9:.]+$'
check_no_match "watch: no failed phase" "$OUT" 'failed'
nv cancel "$ID"
check_rc "cancel of an ended job exits 0" 0
check_eq "cancel of an ended job says so" "$OUT" \
	"$ID: already cancelled, nothing to cancel"

# a job that ignores SIGTERM stops only after the grace: cancel --no-wait
# answers at once that it is stopping
put_file "$R" stubborn.lua <<'EOF'
local navette = require "navette"
navette.job { name = "stubborn", command = { "sh", "-c", "trap '' TERM; echo up; while :; do sleep 1; done" } }
EOF
commit_all "$R" >/dev/null
nv_in "$R" run stubborn.lua
SID=$(submitted_id)
check_state "the stubborn job runs" "$SID" running 30
nv cancel "$SID" --no-wait
check_rc "cancel --no-wait exits 0" 0
check_match "cancel --no-wait: the job is stopping" "$OUT" "^$SID: stopping "
check_contains "cancel --no-wait: how to see it stop" "$OUT" "navette watch $SID"
check_state "the stubborn job is cancelled in the end" "$SID" cancelled 60

# ---- a run, names, globs and --all (issue 29) --------------------------------
# A sweep of three naps and one other job: `cancel RUN` stops the four;
# a glob stops the latest job of each matching name, and no other;
# `--all` stops every job of this project that still runs, after a
# question on a terminal.
put_file "$R" group.lua <<'EOF'
local navette = require "navette"
navette.sweep { job = { name = "nap", command = { "sh", "-c", "sleep 60" } },
                matrix = { n = { 1, 2, 3 } } }
navette.job { name = "other", command = { "sh", "-c", "sleep 60" } }
EOF
commit_all "$R" >/dev/null
nv_in "$R" run group.lua
GRP=$(printf '%s\n' "$OUT" | sed -n 's/^run \([^ ]*\) · recipe.*/\1/p')
check_match "run prints the run's id first" "$GRP" '^cancel-run-[0-9a-z]{6}-[0-9a-z]{5}$'
GIDS=$(printf '%s\n' "$OUT" | sed -n 's/^job .* submitted: \([^ ]*\)$/\1/p')
check_eq "the run submitted four jobs" "$(printf '%s\n' "$GIDS" | wc -l | tr -d ' ')" 4
for id in $GIDS; do
	check_match "a job id is <project>-<time6>-<random5>: $id" "$id" \
		'^cancel-[0-9a-z]{6}-[0-9a-z]{5}$'
	check_state "job $id runs" "$id" running 30
done
nv_in "$R" status "$GRP"
check_rc "status RUN: a run is not one job, exits 2" 2
check_contains "status RUN: says it is a run of four jobs" "$ERR" \
	"is run $GRP, 4 jobs; status takes one"
check_match "status RUN: lists the run's jobs by name" "$ERR" \
	'  cancel-[0-9a-z-]+  (queued|running) +nap\[n=2\]'
nv_in "$R" logs "$GRP"
check_rc "logs RUN: exits 2 too" 2
nv_in "$R" status 'nap[n=2]' --json
check_eq "status NAME: the job of that name" \
	"$(printf '%s' "$OUT" | json 'd["name"]')" 'nap[n=2]'
nv_in "$R" status 'nap[*]'
check_rc "status GLOB of three jobs: exits 2" 2
check_contains "status GLOB: lists the three" "$ERR" "3 jobs; status takes one"
nv_in "$R" cancel 'nap[n=1]' 'nap[n=3]'
check_rc "cancel of two names: exits 0" 0
check_eq "cancel of two names: two lines, each cancelled" \
	"$(printf '%s\n' "$OUT" | grep -c ': cancelled$')" 2
nv_in "$R" status 'nap[n=2]' --json
check_eq "the name not given still runs" \
	"$(printf '%s' "$OUT" | json 'd["state"]')" running
nv_in "$R" cancel "$GRP" --no-wait
check_rc "cancel RUN: exits 0" 0
check_match "cancel RUN: the two still running are asked to stop" "$OUT" \
	"^cancel-[0-9a-z-]+: (stopping|cancelled)"
check_eq "cancel RUN: the two cancelled before are said to be" \
	"$(printf '%s\n' "$OUT" | grep -c ': already cancelled, nothing to cancel$')" 2
for id in $GIDS; do check_state "cancel RUN: $id ends cancelled" "$id" cancelled 30; done

nv_in "$R" run group.lua
G2=$(printf '%s\n' "$OUT" | sed -n 's/^job .* submitted: \([^ ]*\)$/\1/p')
for id in $G2; do check_state "again: job $id runs" "$id" running 30; done
R2=$(new_repo bystander)
put_file "$R2" nap.lua <<'EOF'
local navette = require "navette"
navette.job { name = "nap", command = { "sh", "-c", "sleep 60" } }
EOF
commit_all "$R2" >/dev/null
nv_in "$R2" run nap.lua
BYSTANDER=$(submitted_id)
# (queued while the four take the agent's slots)
check_state "another project's job is submitted" "$BYSTANDER" 'queued|running' 30
OUT=$(cd "$R" && python3 "$(dirname "$0")/../pty_run.py" \
	--answer-after '[y/N]' n -- "$NAVETTE" cancel --all)
RC=$?
check_rc "cancel --all answered no on a terminal: exits 1" 1
check_contains "cancel --all asks first, with the count" "$OUT" \
	"cancel these 4 jobs of project cancel? [y/N]"
check_contains "cancel --all answered no: cancels nothing" "$OUT" "nothing cancelled"
for id in $G2; do check_state "answered no: $id still runs" "$id" running 5; done
nv_in "$R" cancel --all --yes
check_rc "cancel --all --yes: exits 0" 0
for id in $G2; do check_state "cancel --all: $id ends cancelled" "$id" cancelled 30; done
check_state "cancel --all leaves another project's job running" "$BYSTANDER" running 5
nv_in "$R" cancel --all --yes
check_eq "cancel --all with nothing running: says so" "$OUT" \
	"no queued or running job in project cancel"
nv_in "$R2" status last --json
check_eq "status last: this project's latest job" \
	"$(printf '%s' "$OUT" | json 'd["id"]')" "$BYSTANDER"
nv_in "$R2" cancel last
check_state "cancel last: the latest job of this project" "$BYSTANDER" cancelled 30
nv_in "$R" cancel no-such-name
check_rc "cancel of a name no job has: exits 2" 2
check_contains "cancel of an unknown name: says what a job can be named by" \
	"$ERR" "its name (the latest job of that name here)"

nv cancel no-such-job
check_rc "cancel of an unknown job exits 2" 2

finish
