#!/usr/bin/env bash
# The audit chain under faults (local backend, file:// store):
#   F8  `navette run` killed (SIGKILL) right after a job's row is written,
#       before its audit line: the job is held, not started, by any read
#       command or a running agent; the next run completes the submission,
#       writing the line first. Tries: NAVETTE_FAULT_ITERATIONS (3).
#   F4  killed with half of the audit line written (fault point
#       audit-half-line, the bytes a full disk lets through): the next
#       append cuts the partial line back, the chain verifies, and the job
#       runs once, audited. (test_audit_full_disk.sh does it on a real
#       full disk, as root.)
#   F7  the audit/ folder deleted: verify and show name it with the
#       recovery steps, a run refuses to start a new chain over it (its job
#       held), the store's mirror is never overwritten, by a new chain or by
#       an older, shorter copy of this chain put back; restored from the
#       mirror, everything verifies and the held job completes.
# Figures: tries, held, started without an audit line, converged.
set -eu -o pipefail
. "$(dirname "$0")/../integration/lib.sh"
set +e

N=${NAVETTE_FAULT_ITERATIONS:-3}
case $T in /*/navette-it.*) ;; *)
	echo "FAIL: T=$T is not the test's own temporary folder" >&2
	exit 1
	;;
esac
unset NAVETTE_FAULT

R=$(new_repo auditf)
cat >"$R/navette.lua" <<LUA
return { name = "auditf", default_profile = "here", profiles = {
  here = { backend = "local", storage = "file://$T/store/",
           require_pushed = false } } }
LUA
put_file "$R" recipes/one.lua <<'LUA'
local navette = require "navette"
-- (reuse = false: each round submits it anew, as the test needs)
navette.job { name = "one", reuse = false, command = { "sh", "-c",
  "echo done >\"$NAVETTE_OUTPUTS/out.txt\"" } }
LUA
put_file "$R" recipes/busy.lua <<'LUA'
local navette = require "navette"
navette.job { name = "busy", reuse = false, command = { "sleep", "8" } }
LUA
commit_all "$R" >/dev/null || exit 1
DB=$NAVETTE_HOME/jobs.db
LOG=$NAVETTE_HOME/audit/audit.jsonl

row_of() { # COMMIT -> "id state" of its rows
	python3 - "$DB" "$1" <<'PY'
import json, sqlite3, sys
db = sqlite3.connect(sys.argv[1], timeout=30)
for i, state, spec in db.execute("SELECT id, state, spec FROM jobs"):
    if json.loads(spec).get("commit") == sys.argv[2]:
        print(i, state)
PY
}
submit_lines() { # ID -> how many job.submit lines name it
	"$NAVETTE" audit show --job "$1" --json 2>/dev/null |
		json 'len([e for e in d if e["action"] == "job.submit"])'
}
state_of() { row_of "$1" | awk -v id="$2" '$1 == id {print $2}'; }
new_commit() {
	git -C "$R" commit -q --allow-empty -m "$1" || return 1
	git -C "$R" rev-parse HEAD
}
mirror_sum() { # the sha256 of the store's mirror files, in one line
	(cd "$T/store/_audit" && for f in */genesis.json */audit.jsonl */head; do
		shasum -a 256 "$f"
	done) | shasum -a 256 | cut -d' ' -f1
}

# ---- F8: killed after the row, before the audit line ------------------------
tries=0 held=0 unaudited=0 converged=0
for k in $(seq 1 "$N"); do
	tries=$((tries + 1))
	commit=$(new_commit "f8 $k")
	# an agent at work (a job of 8 s), which takes every startable job
	nv_in "$R" run recipes/busy.lua
	check_rc "F8 #$k: a busy job keeps the agent running" 0
	(cd "$R" && NAVETTE_FAULT=submit-row-written:one exec "$NAVETTE" run \
		recipes/one.lua >"$T/killed.out" 2>&1)
	check_eq "F8 #$k: killed at submit-row-written" "$?" 137
	id=$(python3 - "$DB" "$commit" <<'PY'
import json, sqlite3, sys
db = sqlite3.connect(sys.argv[1], timeout=30)
for i, name, spec in db.execute("SELECT id, name, spec FROM jobs"):
    if name == "one" and json.loads(spec).get("commit") == sys.argv[2]:
        print(i)
PY
)
	# neither the running agent nor a read (which starts one for the
	# queued jobs) may start it
	nv jobs
	started=
	for _ in 1 2 3 4 5 6 7 8; do
		s=$(state_of "$commit" "$id")
		[ "$s" = queued ] || { started=$s; break; }
		sleep 0.5
		nv jobs
	done
	lines=$(submit_lines "$id")
	if [ -z "$started" ]; then
		held=$((held + 1))
	elif [ "$lines" = 0 ]; then
		unaudited=$((unaudited + 1))
	fi
	check_eq "F8 #$k: the job is held, not started (state)" "${started:-queued}" queued
	check_eq "F8 #$k: and it has no audit line yet" "$lines" 0
	nv_in "$R" run recipes/one.lua --wait
	check_rc "F8 #$k: the re-run completes it" 0
	check_eq "F8 #$k: the re-run's job is the killed run's" "$(submitted_id)" "$id"
	check_contains "F8 #$k: and says so" "$ERR" "by a run that was interrupted"
	check_eq "F8 #$k: the job succeeded" "$(state_of "$commit" "$id")" succeeded
	check_eq "F8 #$k: with its audit line" "$(submit_lines "$id")" 1
	[ "$RC" = 0 ] && [ "$(state_of "$commit" "$id")" = succeeded ] &&
		converged=$((converged + 1))
done
printf '\nF8 kill after the row: tries %d, held %d, started without an audit line %d, converged %d\n\n' \
	"$tries" "$held" "$unaudited" "$converged"
nv audit verify
check_rc "F8: the chain verifies" 0
# an older copy of this chain, for F7
cp -R "$NAVETTE_HOME/audit" "$T/audit-old"

# ---- F4: half an audit line written ------------------------------------------
commit=$(new_commit f4)
lines_before=$(wc -l <"$LOG" | tr -d ' ')
(cd "$R" && NAVETTE_FAULT=audit-half-line:job.submit exec "$NAVETTE" run \
	recipes/one.lua >"$T/killed.out" 2>&1)
check_eq "F4: killed with half an audit line written" "$?" 137
check_ne "F4: the log ends with a partial line" "$(tail -c 1 "$LOG" | od -An -c | tr -d ' ')" '\n'
id=$(row_of "$commit" | awk '{print $1}')
nv jobs
sleep 2
check_eq "F4: the job is held" "$(state_of "$commit" "$id")" queued
nv_in "$R" run recipes/one.lua --wait
check_rc "F4: the next run goes on" 0
check_no_match "F4: with no audit warning" "$ERR" 'warning: audit'
check_eq "F4: it completes the held job" "$(submitted_id)" "$id"
nv audit verify
check_rc "F4: the partial line was cut back: the chain verifies" 0
check_eq "F4: one whole line added" "$(wc -l <"$LOG" | tr -d ' ')" $((lines_before + 1))
check_eq "F4: the job's submission is audited once" "$(submit_lines "$id")" 1

# ---- F7: the audit folder deleted -------------------------------------------
SEG=$(ls "$T/store/_audit")
check_eq "F7: the store holds one mirror" "$(printf '%s\n' "$SEG" | grep -c .)" 1
MIRROR=$T/store/_audit/$SEG
check_true "F7: the mirror is up to date" cmp -s "$LOG" "$MIRROR/audit.jsonl"
sum=$(mirror_sum)
rm -rf "$NAVETTE_HOME/audit"
nv audit verify
check_rc "F7: verify fails on a deleted audit folder" 1
check_contains "F7: it names the deletion" "$OUT" "is gone or empty"
check_contains "F7: and how to restore it" "$OUT" "from the mirror _audit/$SEG/"
nv audit show
check_rc "F7: show fails too" 1
check_contains "F7: naming it" "$ERR" "is gone or empty"
commit=$(new_commit f7)
nv_in "$R" run recipes/one.lua
check_ne "F7: a run does not start a job unaudited" "$RC" 0
check_contains "F7: it names the deleted folder" "$ERR" "is gone or empty"
check_contains "F7: and the recovery" "$ERR" "_audit/$SEG/"
check_absent "F7: no new chain is started" "$NAVETTE_HOME/audit/genesis.json"
check_eq "F7: the store's mirror is untouched" "$(mirror_sum)" "$sum"
id=$(row_of "$commit" | awk '{print $1}')
nv jobs
sleep 2
check_eq "F7: the job is held" "$(state_of "$commit" "$id")" queued

# restored from the mirror: intact, and the held job completes
mkdir -p "$NAVETTE_HOME/audit"
cp "$MIRROR/genesis.json" "$MIRROR/audit.jsonl" "$MIRROR/head" "$NAVETTE_HOME/audit/"
nv audit verify
check_rc "F7: restored from the mirror, the chain verifies" 0
nv_in "$R" run recipes/one.lua --wait
check_rc "F7: the next run completes the held job" 0
check_eq "F7: under its id" "$(submitted_id)" "$id"
check_eq "F7: audited" "$(submit_lines "$id")" 1
check_true "F7: the mirror follows the log again" cmp -s "$LOG" "$MIRROR/audit.jsonl"

# an older copy of this chain put back: the longer mirror is kept
sum=$(mirror_sum)
rm -rf "$NAVETTE_HOME/audit"
cp -R "$T/audit-old" "$NAVETTE_HOME/audit"
commit=$(new_commit f7-old)
nv_in "$R" run recipes/one.lua --wait
check_contains "F7: an older copy does not overwrite the mirror" "$ERR" \
	"left as it is: it records"
check_eq "F7: the mirror is unchanged" "$(mirror_sum)" "$sum"

# the anchor moved aside too (a home started again): a new chain, whose
# mirror never replaces the old chain's
rm -rf "$NAVETTE_HOME/audit"
mv "$NAVETTE_HOME/audit.anchor" "$T/anchor.aside"
commit=$(new_commit f7-new)
nv_in "$R" run recipes/one.lua --wait
check_rc "F7: a new chain, once the anchor is moved aside" 0
check_contains "F7: its mirror is refused" "$ERR" "left as it is: it holds another chain"
check_eq "F7: the old chain's mirror is unchanged" "$(mirror_sum)" "$sum"
nv audit verify
check_rc "F7: the new chain verifies" 0
finish
