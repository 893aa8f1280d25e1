# Two submitters at once in one NAVETTE_HOME: both jobs succeed, and one
# agent (not two) runs them.
set -eu -o pipefail
. "$(dirname "$0")/../lib.sh"
set +e # each check reports its own failure; finish sets the status

R=$(new_repo oneagent)
for n in a b; do
	put_file "$R" "job-$n.lua" <<EOF
local navette = require "navette"
navette.job {
  name = "job-$n",
  command = { "sh", "-c", "sleep 1; echo $n >\"\$NAVETTE_OUTPUTS/$n.txt\"" },
  success = { outputs = { "$n.txt" } },
}
EOF
done
commit_all "$R" >/dev/null

check_absent "no agent has run in this home yet" "$NAVETTE_HOME/agent.log"

(cd "$R" && exec "$NAVETTE" run job-a.lua --wait) >"$T/a.out" 2>&1 &
PA=$!
(cd "$R" && exec "$NAVETTE" run job-b.lua --wait) >"$T/b.out" 2>&1 &
PB=$!
wait "$PA"
RA=$?
wait "$PB"
RB=$?
OUT="$(cat "$T/a.out")
$(cat "$T/b.out")"
ERR=
RC="$RA/$RB"
LAST_CMD="navette run job-a.lua --wait & navette run job-b.lua --wait"
check_eq "first concurrent run --wait exits 0" "$RA" 0
check_eq "second concurrent run --wait exits 0" "$RB" 0

IDA=$(sed -n 's/^job .* submitted: \([^ ]*\)$/\1/p' "$T/a.out")
IDB=$(sed -n 's/^job .* submitted: \([^ ]*\)$/\1/p' "$T/b.out")
check_ne "the two jobs have different ids" "$IDA" "$IDB"
check_eq "job a succeeded" "$(job_state "$IDA")" succeeded
check_eq "job b succeeded" "$(job_state "$IDB")" succeeded
check_eq "job a's output" "$(cat "$(store_dir oneagent "$IDA")/a.txt" 2>&1)" a
check_eq "job b's output" "$(cat "$(store_dir oneagent "$IDB")/b.txt" 2>&1)" b

LIST=$("$NAVETTE" jobs --json)
check_eq "jobs lists both" \
	"$(printf '%s' "$LIST" | json 'sorted(j["id"] for j in d)')" \
	"$(printf '%s\n' "$IDA" "$IDB" | sort | python3 -c 'import json,sys; print(json.dumps([l.strip() for l in sys.stdin]))')"

STARTS=$(grep -c "agent started" "$NAVETTE_HOME/agent.log" 2>/dev/null)
OUT=$(cat "$NAVETTE_HOME/agent.log" 2>&1)
LAST_CMD="cat agent.log"
check_eq "exactly one agent started" "$STARTS" 1

finish
