# A job outlives its terminal: the submitter (`run --wait`, in its own
# process group) is killed with SIGKILL while the job runs; the job still
# succeeds and publishes its output.
set -eu -o pipefail
. "$(dirname "$0")/../lib.sh"
set +e # each check reports its own failure; finish sets the status

R=$(new_repo detached)
# The job runs until the test says go (a file), at most 120 s, so it is
# still running when its submitter is killed however slow the machine.
# The file is in the job's own HOME (its folder's home/): the only folder
# of this machine a job sees.
GO=go
put_file "$R" slow.lua <<EOF
local navette = require "navette"
navette.job {
  name = "slow",
  command = { "sh", "-c", "echo started; i=0; while [ ! -e \"\$HOME/\$GO\" ] && [ \$i -lt 1200 ]; do sleep 0.1; i=\$((i+1)); done; echo survived >\"\$NAVETTE_OUTPUTS/survived.txt\"; echo finished" },
  env = { GO = "$GO" },
  success = { outputs = { "survived.txt" } },
}
EOF
commit_all "$R" >/dev/null

SUBMIT_OUT=$T/submit.out
LEADER_FILE=$T/submitter.pid
# The shell run in a new session records its pid (the new group's id),
# then becomes the submitter.
(cd "$R" && exec_in_new_session sh -c 'echo $$ >"$1"; exec "$2" run slow.lua --wait' \
	sh "$LEADER_FILE" "$NAVETTE") >"$SUBMIT_OUT" 2>&1 &
SUBMITTER=$!

# The job id, once the submitter has printed it.
get_id() {
	ID=$(sed -n 's/^job .* submitted: \([^ ]*\)$/\1/p' "$SUBMIT_OUT" | head -1)
	[ -n "$ID" ]
}
ID=
if wait_for 30 get_id; then
	pass "the submitter printed the job id"
else
	fail "the submitter printed the job id (got: $(cat "$SUBMIT_OUT"))"
fi
check_state "the job reaches running" "$ID" 'running' 30

# The submitter's process group, as the new session made it.
PGID=$(cat "$LEADER_FILE" 2>/dev/null)
if [ -z "$PGID" ] || ! kill -0 "$PGID" 2>/dev/null; then
	fail "the submitter still runs while the job runs" \
		"(got: $(cat "$SUBMIT_OUT"))"
else
	check_eq "the submitter leads its own process group" \
		"$(ps -o pgid= -p "$PGID" | tr -d ' ')" "$PGID"
	check_ne "the submitter's group is not the test's" "$PGID" \
		"$(ps -o pgid= -p $$ | tr -d ' ')"
	kill -KILL -- "-$PGID" 2>/dev/null
	if [ "$SUBMITTER" = "$PGID" ]; then
		wait "$SUBMITTER" 2>/dev/null
		check_eq "the submitter died of SIGKILL" "$?" 137
	fi
	gone() { ! kill -0 "$PGID" 2>/dev/null; }
	check_true "the submitter is gone after SIGKILL" wait_for 10 gone
	check_eq "the job was still running when its submitter was killed" \
		"$(job_state "$ID")" running
fi

touch "$NAVETTE_HOME/jobs/$ID/home/$GO"
check_state "the job succeeds without its submitter" "$ID" \
	'succeeded|failed|cancelled' 60
check_eq "final state" "$STATE" succeeded
D=$(store_dir detached "$ID")
check_eq "the output is published" "$(cat "$D/survived.txt" 2>&1)" survived
check_match "the published log has the whole run" \
	"$(cat "$D/navette.log" 2>&1)" '^finished$'

finish
