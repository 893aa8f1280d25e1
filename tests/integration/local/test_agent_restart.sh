# An agent killed with kill -9 while its jobs run: the next read (status,
# jobs, logs) or cancel finds it dead, starts a new one, and shows each job where it
# really is, never a stale `running`: a job whose launcher still runs is
# adopted and ends normally; one whose launcher died with the agent fails,
# saying so; one that ended while no agent watched gets its real outcome.
set -eu -o pipefail
. "$(dirname "$0")/../lib.sh"
set +e # each check reports its own failure; finish sets the status

R=$(new_repo restart)
# Each job waits for its gate file (at most 90 s), so that it ends when
# the test says: before, while or after the agent is dead. The gate is in
# the job's own HOME (its folder's home/): the only folder of this machine
# a job sees.
for n in 1 2 3 4 5; do
	put_file "$R" "gated-$n.lua" <<EOF
local navette = require "navette"
navette.job {
  name = "gated-$n",
  command = { "sh", "-c", "echo started; i=0; while [ ! -e \"\$HOME/gate-$n\" ] && [ \$i -lt 900 ]; do sleep 0.1; i=\$((i + 1)); done; echo slept >\"\$NAVETTE_OUTPUTS/slept.txt\"; echo finished" },
  success = { outputs = { "slept.txt" } },
}
EOF
done
commit_all "$R" >/dev/null

# submit N: queues job gated-N (no wait); its id in ID; waits until it
# runs and its launcher is known (L)
submit() {
	nv_in "$R" run "gated-$1.lua"
	ID=$(submitted_id)
	[ -n "$ID" ] || fail "navette run gated-$1.lua submits ($ERR)"
	check_state "$1: the job runs" "$ID" running 30
	wait_for 10 test -s "$NAVETTE_HOME/jobs/$ID/launcher.pid"
	L=$(launcher_pid "$ID")
}
agent_pid() { tr -dc 0-9 2>/dev/null <"$NAVETTE_HOME/agent.lock"; }
launcher_pid() {
	cut -d' ' -f1 2>/dev/null <"$NAVETTE_HOME/jobs/$1/launcher.pid"
}
agent_alive() { ! lock_is_free "$NAVETTE_HOME/agent.lock"; }
gone() { ! kill -0 "$1" 2>/dev/null; }
# group_gone PGID: no process of the group runs (one killed but not yet
# reaped by its new parent, a zombie, has ended)
group_gone() {
	! ps -A -o pgid= -o stat= | awk -v g="$1" \
		'$1 == g && $2 !~ /^Z/ { found = 1 } END { exit !found }'
}
# kill_agent: kill -9 of the agent; waits until its lock is free
kill_agent() {
	OLD_AGENT=$(agent_pid)
	if [ -z "$OLD_AGENT" ] || ! kill -KILL "$OLD_AGENT"; then
		fail "the agent to kill is named in agent.lock (got '$OLD_AGENT')"
		return
	fi
	check_true "the killed agent lets go of its lock" \
		wait_for 10 lock_is_free "$NAVETTE_HOME/agent.lock"
}
# read_state ID: the state that one `status --json` shows
read_state() {
	nv status "$1" --json
	printf '%s' "$OUT" | json 'd["state"]'
}
# agent_back N: a new agent took the lock (it may have ended since, idle)
# and took the job over
agent_back() {
	local new
	new=$(agent_pid)
	check_ne "$1: a new agent started" "$new" "$OLD_AGENT"
	check_match "$1: the new agent took the job over" \
		"$(cat "$NAVETTE_HOME/agent.log")" "agent\\[$new\\] job $ID: adopted"
}

# ---- 1. the launcher still runs: adopted, and the job ends normally ------
submit 1
kill_agent
check_true "1: the launcher outlives the agent" kill -0 "$L"
check_eq "1: status, the first read, shows it running" \
	"$(read_state "$ID")" running
agent_back "1"
check_true "1: the new agent follows it" agent_alive
touch "$NAVETTE_HOME/jobs/$ID/home/gate-1"
check_state "1: the adopted job ends" "$ID" 'succeeded|failed|cancelled' 60
check_eq "1: it succeeds" "$STATE" succeeded
check_eq "1: its output is published" \
	"$(cat "$(store_dir restart "$ID")/slept.txt" 2>&1)" slept

# ---- 2. the launcher was killed too: failed, saying the agent died -------
wait_for 20 lock_is_free "$NAVETTE_HOME/agent.lock"
submit 2
kill_agent
kill -KILL -- "-$L" 2>/dev/null
check_true "2: the launcher's group is gone" wait_for 10 group_gone "$L"
nv jobs --json
OUT_JOBS=$OUT
check_rc "2: jobs exits 0" 0
check_eq "2: jobs, the first read, shows it failed" \
	"$(printf '%s' "$OUT_JOBS" | json "[j['state'] for j in d if j['id'] == '$ID'][0]")" \
	failed
agent_back "2"
nv status "$ID" --json
check_rc "2: status of the failed job exits 1" 1
check_match "2: the reason says the agent stopped" \
	"$(printf '%s' "$OUT" | json 'd["failure"]["reason"]')" \
	'agent that ran the job stopped'
check_eq "2: at the running phase" \
	"$(printf '%s' "$OUT" | json 'd["failure"]["phase"]')" running

# ---- 3. the job ended while no agent watched: its real outcome -----------
wait_for 20 lock_is_free "$NAVETTE_HOME/agent.lock"
submit 3
kill_agent
touch "$NAVETTE_HOME/jobs/$ID/home/gate-3"
check_true "3: the job ends without an agent" wait_for 30 gone "$L"
check_match "3: its launcher wrote its exit status" \
	"$(cat "$NAVETTE_HOME/jobs/$ID/status")" '^exit 0$'
check_true "3: no agent runs meanwhile" lock_is_free "$NAVETTE_HOME/agent.lock"
nv logs "$ID"
check_rc "3: logs exits 0" 0
check_match "3: logs shows the whole run" "$OUT" '^finished$'
agent_back "3"
check_eq "3: status shows it succeeded" "$(read_state "$ID")" succeeded
check_eq "3: its output is published" \
	"$(cat "$(store_dir restart "$ID")/slept.txt" 2>&1)" slept

# ---- 4. the launcher's pid now names another process ---------------------
# The pid alone would keep it `running` while that process lives: the
# launcher's start time tells them apart.
wait_for 20 lock_is_free "$NAVETTE_HOME/agent.lock"
submit 4
START=$(cut -d' ' -f2 <"$NAVETTE_HOME/jobs/$ID/launcher.pid")
kill_agent
kill -KILL -- "-$L" 2>/dev/null
wait_for 10 gone "$L"
# a process that leads its own group, as the launcher did, in its place
(exec_in_new_session sleep 60) &
OTHER=$!
python3 - "$NAVETTE_HOME/jobs.db" "$ID" "$OTHER" <<'EOF'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
db.execute("UPDATE jobs SET pid=? WHERE id=?", (int(sys.argv[3]), sys.argv[2]))
db.commit()
EOF
printf '%s %s\n' "$OTHER" "$START" >"$NAVETTE_HOME/jobs/$ID/launcher.pid"
check_eq "4: status shows it failed, not running" "$(read_state "$ID")" failed
check_true "4: the other process was left alone" kill -0 "$OTHER"
kill "$OTHER" 2>/dev/null
wait "$OTHER" 2>/dev/null

# ---- 5. cancel with no agent: a new one stops the job --------------------
wait_for 20 lock_is_free "$NAVETTE_HOME/agent.lock"
submit 5
kill_agent
nv cancel "$ID"
check_rc "5: cancel exits 0" 0
check_match "5: cancel saw the job stop" "$OUT" "^$ID: cancelled"
check_eq "5: status shows it cancelled" "$(read_state "$ID")" cancelled
check_true "5: its launcher is gone" wait_for 10 gone "$L"

finish
