#!/usr/bin/env bash
# What `status` and `logs` show is there (issue 27, F10): a run record
# gone or damaged in the store, an output gone, a deleted log are each
# named with what to do, never shown as a job without outputs or an empty
# log; a status file emptied while the job runs does not fail a job that
# exits 0 (the exit status has a file of its own).
set -eu -o pipefail
. "$(dirname "$0")/../integration/lib.sh"
set +e

R=$(new_repo sf)
STORE=$T/store
cat >"$R/navette.lua" <<LUA
return { name = "sf", default_profile = "here", profiles = {
  here = { backend = "local", storage = "file://$STORE/",
           require_pushed = false } } }
LUA
put_file "$R" recipes/one.lua <<'LUA'
local navette = require "navette"
navette.job { name = "one", command = { "sh", "-c",
  "echo a line of log; echo out >\"$NAVETTE_OUTPUTS/out.txt\"" } }
LUA
put_file "$R" recipes/slow.lua <<'LUA'
local navette = require "navette"
navette.job { name = "slow", command = { "sh", "-c",
  "echo started; sleep 3; echo out >\"$NAVETTE_OUTPUTS/out.txt\"" } }
LUA
commit_all "$R" >/dev/null

# ---- F10a: the run record and the outputs status shows
nv_in "$R" run recipes/one.lua --wait
check_rc "the job succeeds" 0
ID=$(submitted_id)
nv status "$ID" --json
REC=$(printf '%s' "$OUT" | json 'd["record_url"]')
OUTURL=$(printf '%s' "$OUT" | json 'd["outputs"][0]["url"]')
REC_PATH=${REC#file://}
OUT_PATH=${OUTURL#file://}
check_file "the record is in the store" "$REC_PATH"
check_file "the output is in the store" "$OUT_PATH"

rm -f "$OUT_PATH"
nv status "$ID"
check_rc "an output gone from the store: status exits 1" 1
check_contains "it names the output that is missing" "$ERR" \
	"output out.txt of job $ID is missing from the store"
check_match "and marks it in the listing" "$OUT" 'out\.txt .*MISSING'
nv status "$ID" --json
check_eq "--json marks it missing" \
	"$(printf '%s' "$OUT" | json 'd["outputs"][0].get("missing")')" true

mv "$REC_PATH" "$T/record.kept"
nv status "$ID"
check_rc "a run record gone from the store: status exits 1" 1
check_contains "it says the record is missing" "$ERR" \
	"the run record of job $ID is missing"
check_no_match "never '(no output files)'" "$OUT" 'no output files'

printf '{"navette_run_rec' >"$REC_PATH"
nv status "$ID"
check_rc "a damaged run record: status exits 1" 1
check_contains "it says the record is corrupt" "$ERR" \
	"the run record of job $ID is corrupt"
check_no_match "never '(no output files)' for it" "$OUT" 'no output files'

mv "$T/record.kept" "$REC_PATH"
printf 'out\n' >"$OUT_PATH"
nv status "$ID"
check_rc "all back in place: status exits 0" 0
check_eq "nothing said on stderr" "$ERR" ""

# ---- F10b: a deleted log
nv logs "$ID"
check_eq "logs shows the log" "$OUT" "a line of log"
LOGURL=$(printf '%s' "$("$NAVETTE" status "$ID" --json)" | json 'd["log_url"]')
rm -f "$NAVETTE_HOME/jobs/$ID/log"
nv logs "$ID"
check_rc "the job folder's log deleted: logs shows the store's copy" 0
check_eq "the same text" "$OUT" "a line of log"
rm -f "${LOGURL#file://}"
nv logs "$ID"
check_ne "the log deleted in both places: logs fails" "$RC" 0
check_contains "it says the log is missing" "$ERR" "the log of job $ID is missing"

# ---- F10c: the status file emptied while the job runs
nv_in "$R" run recipes/slow.lua
SLOW=$(submitted_id)
wait_for 20 grep -q started "$NAVETTE_HOME/jobs/$SLOW/log" 2>/dev/null
: >"$NAVETTE_HOME/jobs/$SLOW/status"
check_state "a job whose status file was emptied as it ran, exit 0, succeeds" \
	"$SLOW" succeeded 30
nv status "$SLOW"
check_contains "with its exit status" "$OUT" "exit    0"
finish
