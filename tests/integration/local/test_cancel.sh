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

nv cancel no-such-job
check_rc "cancel of an unknown job exits 2" 2

finish
