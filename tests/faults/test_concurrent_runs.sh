#!/usr/bin/env bash
# Concurrent runs of one recipe in one clone (a team's CI and a person at
# once): 8 `navette run --wait` of a 10-job recipe, started together. Runs
# of the same recipe at the same commit share a submit key; each must keep
# its own 10 jobs (80 of 80), none may take a live run's row for an
# interrupted submission (the note "by a run that was interrupted" is
# printed by no run), and every job succeeds. Before each round one run is
# killed (SIGKILL) right after the row of its first job is written: that
# row is adopted by exactly one of the 8 runs (its note printed once), as a
# re-run after a kill must. NAVETTE_CONCURRENT_ROUNDS rounds (2), each at a
# new commit. Figures: tries, jobs held, duplicates, losses, false notes.
set -eu -o pipefail
. "$(dirname "$0")/../integration/lib.sh"
set +e

ROUNDS=${NAVETTE_CONCURRENT_ROUNDS:-2}
RUNS=8
JOBS=10
LIMIT_S=${NAVETTE_CONCURRENT_LIMIT_S:-300} # per round: `run --wait` is bounded here
export NAVETTE_AGENT_SLOTS=16 # (80 short jobs: the agent runs 4 at once by default)
case $T in /*/navette-it.*) ;; *)
	echo "FAIL: T=$T is not the test's own temporary folder" >&2
	exit 1
	;;
esac

R=$(new_repo conc)
cat >"$R/navette.lua" <<LUA
return { name = "conc", default_profile = "here", profiles = {
  here = { backend = "local", storage = "file://$T/store/",
           require_pushed = false } } }
LUA
put_file "$R" recipes/ten.lua <<'LUA'
local navette = require "navette"
for i = 1, 10 do
  navette.job { name = "j" .. i, command = { "sh", "-c",
    "echo " .. i .. " >\"$NAVETTE_OUTPUTS/out.txt\"" } }
end
LUA
commit_all "$R" >/dev/null || exit 1
DB=$NAVETTE_HOME/jobs.db

# rows_of COMMIT: "id state" of every row of that commit
rows_of() {
	python3 - "$DB" "$1" <<'PY'
import json, sqlite3, sys
db = sqlite3.connect(sys.argv[1], timeout=30)
for i, state, spec in db.execute("SELECT id, state, spec FROM jobs"):
    if json.loads(spec).get("commit") == sys.argv[2]:
        print(i, state)
PY
}

tries=0 held=0 dups=0 losses=0 false_notes=0 adopted_ok=0
for round in $(seq 1 "$ROUNDS"); do
	git -C "$R" commit -q --allow-empty -m "round $round" || exit 1
	commit=$(git -C "$R" rev-parse HEAD)
	# a run killed with its first job's row written, nothing else done
	(cd "$R" && NAVETTE_FAULT=submit-row-written:j1 exec "$NAVETTE" run \
		recipes/ten.lua >"$T/killed.out" 2>&1)
	rc=$?
	check_eq "round $round: the killed run died at its fault point" "$rc" 137
	killed=$(rows_of "$commit" | awk '{print $1}')
	check_eq "round $round: it left one row" "$(printf '%s\n' "$killed" | grep -c .)" 1

	pids=
	for k in $(seq 1 "$RUNS"); do
		(cd "$R" && exec "$NAVETTE" run recipes/ten.lua --wait \
			>"$T/run$k.out" 2>"$T/run$k.err") &
		pids="$pids $!"
	done
	# the watchdog: a run that does not end in time is killed (and fails
	# the checks below), never left to hang the suite
	(sleep "$LIMIT_S" && kill -9 $pids 2>/dev/null) &
	watchdog=$!
	for k in $(seq 1 "$RUNS"); do
		pid=$(echo $pids | cut -d' ' -f"$k")
		wait "$pid"
		echo $? >"$T/run$k.rc"
	done
	kill "$watchdog" 2>/dev/null
	wait "$watchdog" 2>/dev/null

	: >"$T/ids"
	notes=0
	for k in $(seq 1 "$RUNS"); do
		tries=$((tries + 1))
		rc=$(cat "$T/run$k.rc")
		ids=$(sed -n 's/^job .* submitted: \([^ ]*\)$/\1/p' "$T/run$k.out")
		n=$(printf '%s\n' "$ids" | grep -c . || true)
		printf '%s\n' "$ids" | grep . >>"$T/ids" || true
		note=$(grep -c "by a run that was interrupted" "$T/run$k.err" || true)
		notes=$((notes + note))
		if [ "$rc" -ne 0 ] || [ "$n" -ne "$JOBS" ]; then
			echo "  round $round run $k: exit $rc, $n jobs" >&2
			sed 's/^/    | /' "$T/run$k.err" | tail -5 >&2
		fi
		check_eq "round $round run $k: exits 0" "$rc" 0
		check_eq "round $round run $k: submits its $JOBS jobs" "$n" "$JOBS"
	done
	distinct=$(sort -u "$T/ids" | grep -c . || true)
	all=$(grep -c . "$T/ids" || true)
	dups=$((dups + all - distinct))
	# the killed run's row: completed by exactly one run, its note once
	took=$(grep -c -x "$killed" "$T/ids" || true)
	[ "$took" -eq 1 ] && [ "$notes" -eq 1 ] && adopted_ok=$((adopted_ok + 1))
	[ "$notes" -gt 1 ] && false_notes=$((false_notes + notes - 1))
	[ "$took" -eq 0 ] && false_notes=$((false_notes + notes))
	check_eq "round $round: the killed run's row is adopted by one run" "$took" 1
	check_eq "round $round: the interrupted note is printed once" "$notes" 1
	# every job of every run is its own row, and succeeded
	rows_of "$commit" >"$T/rows"
	ok=$(awk '$2 == "succeeded"' "$T/rows" | wc -l | tr -d ' ')
	lost=$((RUNS * JOBS - ok))
	[ "$lost" -lt 0 ] && lost=0
	held=$((held + ok))
	losses=$((losses + lost))
	check_eq "round $round: $((RUNS * JOBS)) distinct jobs submitted" "$distinct" $((RUNS * JOBS))
	check_eq "round $round: $((RUNS * JOBS)) rows, each succeeded" "$ok/$(grep -c . "$T/rows")" \
		"$((RUNS * JOBS))/$((RUNS * JOBS))"
done

printf '\n%-8s %6s %10s %11s %7s %12s %8s\n' rounds tries "jobs held" duplicates losses "false notes" adopted
printf '%-8d %6d %7d/%-3d %10d %7d %12d %6d/%d\n\n' "$ROUNDS" "$tries" "$held" \
	$((ROUNDS * RUNS * JOBS)) "$dups" "$losses" "$false_notes" "$adopted_ok" "$ROUNDS"
check_eq "no job lost" "$losses" 0
check_eq "no duplicate" "$dups" 0
check_eq "no false interrupted note" "$false_notes" 0

nv audit verify
check_rc "the audit chain verifies after $tries concurrent runs" 0
finish
