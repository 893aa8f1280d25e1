# Retries and checkpoints on the local backend: a training stopped by a
# SIGTERM it did not get from navette (preempted) runs again under the same
# id, resumes from the step its checkpoint saved, and its run record lists
# both attempts and the checkpoints; a failure `on` does not name is not
# retried; a job out of attempts fails with every attempt listed; a cancel
# is never retried, even one that comes while the time limit stops the job;
# a folder that does not change is saved once, even by an agent that
# adopted the job after a kill -9 of the one that started it.
set -eu -o pipefail
. "$(dirname "$0")/../lib.sh"
set +e # each check reports its own failure; finish sets the status
# The job's processes are named by the pids they print, and it waits on
# files under $T: both are the host's, which a job's sandbox hides (its
# own pid namespace, a private /tmp; test_local_sandbox covers it), so
# these jobs run without one. TODO: gates in the job's HOME and pids
# mapped through /proc/PID/status's NSpid, to run them sandboxed.
export NAVETTE_LOCAL_SANDBOX=off

R=$(new_repo ckpt)
# a training of STEPS steps that keeps its step in $NAVETTE_CHECKPOINT
put_file "$R" train.sh <<'EOF'
#!/bin/sh
step=0
if [ -f "$NAVETTE_CHECKPOINT/step" ]; then
	step=$(cat "$NAVETTE_CHECKPOINT/step")
	echo "resumed from step $step"
fi
echo "pid $$"
echo "pgid $(ps -o pgid= -p $$ | tr -d ' ')"
while [ "$step" -lt "$STEPS" ]; do
	step=$((step + 1))
	echo "$step" >"$NAVETTE_CHECKPOINT/step.tmp"
	mv "$NAVETTE_CHECKPOINT/step.tmp" "$NAVETTE_CHECKPOINT/step"
	echo "step $step"
	sleep 1
done
echo "$step" >"$NAVETTE_OUTPUTS/model.txt"
EOF
# job NAME RETRIES: a recipe of one such job
job() {
	put_file "$R" "$1.lua" <<EOF
local navette = require "navette"
navette.job {
  name = "$1",
  command = { "sh", "train.sh" },
  env = { STEPS = 9 },
  $2
  checkpoint = { every = "1s" },
  success = { outputs = { "model.txt" } },
}
EOF
}
job resumes 'retries = { max = 2, on = { "node_fail", "preempted" } },'
job other 'retries = { max = 2, on = { "timeout" } },'
job spent 'retries = { max = 1, on = { "exit:143" } },'
job crash 'retries = { max = 1, on = { "node_fail" } },'
put_file "$R" bad.lua <<'EOF'
local navette = require "navette"
navette.job { name = "bad", command = { "true" },
              retries = { on = { "oom" } } }
EOF
commit_all "$R" >/dev/null

# the lines of the job's log
log_of() { "$NAVETTE" logs "$1" 2>/dev/null; }
# log_has ID REGEX
log_has() { log_of "$1" | grep -Eq -- "$2"; }
# the pid the command's attempt N printed (its Nth "pid" line)
pid_of() { log_of "$1" | sed -n 's/^pid \([0-9]*\)$/\1/p' | sed -n "$2p"; }
# has_steps ID N K: attempt N (after the Nth "pid" line) printed K steps
has_steps() {
	[ "$(log_of "$1" | awk -v n="$2" '/^pid /{p++} p==n && /^step /{c++}
		END{print c+0}')" -ge "$3" ]
}
# stop ID N: waits for 3 steps of attempt N (and, for the first, a saved
# checkpoint), then sends SIGTERM to the command itself (not to navette's
# launcher)
stop() {
	local id=$1 n=$2 pid
	wait_for 30 has_steps "$id" "$n" 3 || return 1
	if [ "$n" = 1 ]; then
		wait_for 10 test -f "$(store_dir ckpt "$id")/navette-checkpoint/manifest.json" ||
			return 1
	fi
	pid=$(pid_of "$id" "$n")
	[ -n "$pid" ] && kill -TERM "$pid"
}
record_of() { cat "$(store_dir ckpt "$1")/navette-run.json"; }

# ---- preempted, retried, resumed -------------------------------------------
nv_in "$R" run resumes.lua
check_rc "run exits 0" 0
ID=$(submitted_id)
check_true "a checkpoint is saved while it runs, then its command is stopped" \
	stop "$ID" 1
check_state "the second attempt runs to the end" "$ID" 'succeeded|failed' 60
check_eq "it succeeds" "$STATE" succeeded
nv logs "$ID"
LOG=$OUT
# (the script saves a step, then prints it: a stop between the two leaves
# the checkpoint one step past the last line printed)
SAVED=$(printf '%s\n' "$LOG" | sed -n '/^navette: attempt 1 ended/q;s/^step //p' | tail -1)
check_match "the log says why attempt 1 ended" "$LOG" \
	'^navette: attempt 1 ended \(preempted: the command was stopped by a SIGTERM navette did not send \(status 143\)\); attempt 2 of 3 starts$'
check_match "attempt 1 reached step 3 or more ($SAVED)" "$SAVED" '^[3-8]$'
check_match "attempt 2 resumed from the step attempt 1 saved" "$LOG" \
	"^resumed from step ($SAVED|$((SAVED + 1)))\$"
check_eq "it did not start over" "$(printf '%s\n' "$LOG" | grep -c '^step 1$')" 1
check_eq "the output is the whole training's" \
	"$(cat "$(store_dir ckpt "$ID")/model.txt" 2>&1)" 9
REC=$(record_of "$ID")
check_eq "the record lists two attempts" \
	"$(printf '%s' "$REC" | json '[(a["attempt"], a["state"], a.get("failure")) for a in d["attempts"]]')" \
	'[[1, "failed", "preempted"], [2, "succeeded", null]]'
check_eq "each attempt has its times and node" \
	"$(printf '%s' "$REC" | json 'all(a["started"] <= a["ended"] and a["node"] for a in d["attempts"])')" true
check_eq "the record lists the checkpoint attempt 2 restored" \
	"$(printf '%s' "$REC" | json '[(c["attempt"], c["written_by_attempt"], c["files"]) for c in d["checkpoints"]["restored"]]')" \
	'[[2, 1, 1]]'
check_eq "... and the checkpoints both attempts wrote" \
	"$(printf '%s' "$REC" | json 'sorted(set(c["attempt"] for c in d["checkpoints"]["written"]))')" \
	'[1, 2]'
check_eq "the spec's retries are in the record" \
	"$(printf '%s' "$REC" | json 'd["retries"]')" \
	'{"max": 2, "on": ["node_fail", "preempted"]}'
CK=$(store_dir ckpt "$ID")/navette-checkpoint
check_eq "the store keeps the objects of the latest checkpoint only" \
	"$(ls "$CK/objects" | tr '\n' ' ')" \
	"$(json '" ".join(f["sha256"] for f in d["files"]) + " "' <"$CK/manifest.json")"
check_eq "... which holds the last step" \
	"$(cat "$CK/objects/$(json 'd["files"][0]["sha256"]' <"$CK/manifest.json")")" 9
nv status "$ID"
check_match "status shows the attempt" "$OUT" '^state +succeeded · attempt 2$'
nv status "$ID" --json
check_eq "status --json: attempt" "$(printf '%s' "$OUT" | json 'd["attempt"]')" 2

# ---- a failure `on` does not name ------------------------------------------
nv_in "$R" run other.lua
ID=$(submitted_id)
check_true "the command of 'other' is stopped" stop "$ID" 1
check_state "it ends" "$ID" 'succeeded|failed' 60
check_eq "it fails: preempted is not in its on list" "$STATE" failed
nv logs "$ID"
check_no_match "no second attempt" "$OUT" '^navette: attempt'
check_eq "its record lists one attempt" \
	"$(record_of "$ID" | json '[(a["attempt"], a["state"], a.get("failure")) for a in d["attempts"]]')" \
	'[[1, "failed", "preempted"]]'
check_eq "no output of the stopped attempt is published" \
	"$(record_of "$ID" | json 'd["outputs"]')" '[]'

# ---- out of attempts ---------------------------------------------------------
nv_in "$R" run spent.lua
ID=$(submitted_id)
check_true "attempt 1 of 'spent' is stopped" stop "$ID" 1
check_true "attempt 2 of 'spent' is stopped" stop "$ID" 2
check_state "it ends" "$ID" 'succeeded|failed' 60
check_eq "it fails: no attempt left" "$STATE" failed
check_eq "its record lists both attempts (exit:143 named the failure)" \
	"$(record_of "$ID" | json '[(a["attempt"], a["state"], a.get("exit_code")) for a in d["attempts"]]')" \
	'[[1, "failed", 143], [2, "failed", 143]]'
nv status "$ID"
check_match "status names the last failure" "$OUT" 'exited with status 143'

# ---- the launcher and its command killed: node_fail --------------------------
nv_in "$R" run crash.lua
ID=$(submitted_id)
check_true "attempt 1 of 'crash' runs 3 steps" wait_for 30 has_steps "$ID" 1 3
PGID=$(log_of "$ID" | sed -n 's/^pgid \([0-9]*\)$/\1/p' | head -1)
check_match "it says its process group" "$PGID" '^[0-9]+$'
[ -n "$PGID" ] && kill -KILL -- "-$PGID"
check_state "killed with its launcher, it is retried and ends" "$ID" 'succeeded|failed' 60
check_eq "it succeeds" "$STATE" succeeded
nv logs "$ID"
check_match "the first attempt ended without an exit status: node_fail" "$OUT" \
	'^navette: attempt 1 ended \(node_fail: the launcher stopped without reporting an exit status\); attempt 2 of 2 starts$'
check_match "the second resumed" "$OUT" '^resumed from step [1-9]$'

# ---- the time limit: the command gets the SIGTERM, its last step is saved --
put_file "$R" slow.lua <<'EOF'
local navette = require "navette"
navette.job {
  name = "slow",
  command = { "sh", "train.sh" },
  env = { STEPS = 6 },
  resources = { time_limit = 4 },
  retries = { max = 3, on = { "timeout" } },
  checkpoint = { every = "1h" },
  success = { outputs = { "model.txt" } },
}
EOF
commit_all "$R" >/dev/null
nv_in "$R" run slow.lua
ID=$(submitted_id)
# (6 steps of 1 s, 4 s per attempt: the second attempt ends the work
# unless a loaded machine starts it late; a third, or fourth, then does:
# each resumes from the step the last one saved)
check_state "a job over its time limit is retried, and ends" "$ID" 'succeeded|failed' 90
check_eq "it succeeds once resumed" "$STATE" succeeded
nv logs "$ID"
check_match "the first attempt ended at the time limit" "$OUT" \
	'^navette: attempt 1 ended \(timeout: the time limit of 4 s was reached\); attempt 2 of 4 starts$'
SAVED=$(printf '%s\n' "$OUT" | sed -n '/^navette: attempt 1 ended/q;s/^step //p' | tail -1)
check_match "the second resumed from the step saved at the end of the first ($SAVED)" \
	"$OUT" "^resumed from step ($SAVED|$((SAVED + 1)))\$"
check_eq "every step ran once: resumed attempts never start over" \
	"$(printf '%s\n' "$OUT" | sed -n 's/^step //p' | LC_ALL=C sort -n | uniq -d | tr '\n' ' ')" ""
check_eq "its record: timeouts, then succeeded" \
	"$(record_of "$ID" | json '"ok" if d["attempts"][-1]["state"] == "succeeded" and len(d["attempts"]) >= 2 and all((a["state"], a.get("failure")) == ("failed", "timeout") for a in d["attempts"][:-1]) else d["attempts"]')" \
	ok

# ---- a cancel is never retried (every kind of failure listed) ---------------
put_file "$R" held.lua <<'EOF'
local navette = require "navette"
navette.job {
  name = "held",
  command = { "sh", "-c", 'echo "pid $$"; i=0; while [ $i -lt 60 ]; do i=$((i + 1)); echo "step $i"; sleep 1; done' },
  retries = { max = 2, on = { "exit:143", "preempted", "node_fail", "timeout" } },
}
EOF
# a command that outlives the SIGTERM of its time limit (its group's sleep
# dies, the loop goes on; the launcher is gone, so it says so in a file
# of the test's, not in its log), until the SIGKILL 5 s later
put_file "$R" stubborn.sh <<'EOF'
#!/bin/sh
trap '' PIPE
trap 'echo TERM >"$MARK"' TERM
i=0
while [ "$i" -lt 60 ]; do
	sleep 1
	i=$((i + 1))
done
EOF
put_file "$R" stubborn.lua <<EOF
local navette = require "navette"
navette.job {
  name = "stubborn",
  command = { "sh", "stubborn.sh" },
  env = { MARK = "$T/stubborn.term" },
  resources = { time_limit = 3 },
  retries = { max = 2, on = { "timeout" } },
}
EOF
commit_all "$R" >/dev/null
# attempts_of ID: the record's attempts, as [attempt, state, failure]
attempts_of() {
	record_of "$1" |
		json '[(a["attempt"], a["state"], a.get("failure")) for a in d["attempts"]]'
}
nv_in "$R" run held.lua
ID=$(submitted_id)
check_true "'held' runs 3 steps" wait_for 30 has_steps "$ID" 1 3
nv cancel "$ID"
check_rc "it is cancelled" 0
check_state "it ends" "$ID" 'succeeded|failed|cancelled' 60
check_eq "cancelled" "$STATE" cancelled
check_eq "its record lists one attempt: a cancel is not retried" \
	"$(attempts_of "$ID")" '[[1, "cancelled", null]]'
nv logs "$ID"
check_no_match "its log has no second attempt" "$OUT" '^navette: attempt'
check_eq "its command started once" "$(printf '%s\n' "$OUT" | grep -c '^pid ')" 1
nv status "$ID" --json
check_eq "status --json shows no attempt" \
	"$(printf '%s' "$OUT" | json 'd.get("attempt", "none")')" none

nv_in "$R" run stubborn.lua
ID=$(submitted_id)
check_true "'stubborn' is stopped at its time limit, and holds on" \
	wait_for 30 test -s "$T/stubborn.term"
nv cancel "$ID"
check_rc "then it is cancelled, before the SIGKILL" 0
check_state "it ends" "$ID" 'succeeded|failed|cancelled' 60
check_eq "cancelled, not failed by its time limit" "$STATE" cancelled
check_eq "its record lists one attempt: the cancel is not retried as a timeout" \
	"$(attempts_of "$ID")" '[[1, "cancelled", null]]'
nv logs "$ID"
check_no_match "its log has no second attempt" "$OUT" '^navette: attempt'

# ---- an idle folder is saved once, across an agent's restart too -------------
put_file "$R" idle.lua <<'EOF'
local navette = require "navette"
navette.job {
  name = "idle",
  command = { "sh", "-c", 'echo 1 >"$NAVETTE_CHECKPOINT/state"; echo "pid $$"; sleep 8; echo done' },
  checkpoint = { every = "1s" },
}
EOF
commit_all "$R" >/dev/null
nv_in "$R" run idle.lua
ID=$(submitted_id)
check_true "'idle' saves its checkpoint" \
	wait_for 20 test -f "$(store_dir ckpt "$ID")/navette-checkpoint/manifest.json"
# the agent killed while the job waits: the next read starts another,
# which adopts the job (and knows nothing of the checkpoint but the store)
AGENT=$(tr -dc 0-9 <"$NAVETTE_HOME/agent.lock" 2>/dev/null || true)
check_match "the agent is named in agent.lock" "$AGENT" '^[0-9]+$'
[ -n "$AGENT" ] && kill -KILL "$AGENT"
check_true "the killed agent lets go of its lock" \
	wait_for 10 lock_is_free "$NAVETTE_HOME/agent.lock"
check_state "a read starts another agent, and the job ends" "$ID" 'succeeded|failed' 60
check_eq "it succeeds" "$STATE" succeeded
check_eq "its unchanged folder was saved once in 8 s of saves every 1 s" \
	"$(record_of "$ID" | json '[(w["files"], w["files_uploaded"]) for w in d["checkpoints"]["written"]]')" \
	'[[1, 1]]'

# ---- an unknown failure kind ---------------------------------------------------
nv_in "$R" plan bad.lua
check_rc "plan of an unknown kind is a recipe error" 2
check_contains "the error names the entry" "$ERR" "'retries.on[1]' = 'oom' is not a failure navette retries"
check_contains "... and the kinds" "$ERR" "node_fail, preempted, timeout, exit:N"

finish
