# Jobs that fail: by exit status, by a missing required output, by a log
# pattern, by the time limit. Each names its phase and publishes nothing
# but the log and the run record.
set -eu -o pipefail
. "$(dirname "$0")/../lib.sh"
set +e # each check reports its own failure; finish sets the status

R=$(new_repo fails)
put_file "$R" exit3.lua <<'EOF'
local navette = require "navette"
navette.job {
  name = "exit3",
  command = { "sh", "-c", "echo partial >\"$NAVETTE_OUTPUTS/partial.txt\"; echo about to fail; exit 3" },
}
EOF
put_file "$R" missing.lua <<'EOF'
local navette = require "navette"
navette.job {
  name = "missing",
  command = { "sh", "-c", "echo other >\"$NAVETTE_OUTPUTS/other.txt\"" },
  success = { outputs = { "missing.txt" } },
}
EOF
put_file "$R" pattern.lua <<'EOF'
local navette = require "navette"
navette.job {
  name = "pattern",
  command = { "sh", "-c", "echo \"step 1 ok\"; echo \"FATAL: disk on fire\"; echo done >\"$NAVETTE_OUTPUTS/done.txt\"; exit 0" },
  failure = { log_patterns = { "FATAL: disk" } },
}
EOF
put_file "$R" timeout.lua <<'EOF'
local navette = require "navette"
navette.job {
  name = "timeout",
  command = { "sleep", "60" },
  resources = { time_limit = 2 },
}
EOF
commit_all "$R" >/dev/null

# only_navette_files ID: the job's prefix holds exactly navette.log and
# navette-run.json.
prefix_listing() {
	(cd "$(store_dir fails "$1")" 2>/dev/null && find . -type f | sort |
		tr '\n' ' ')
}
ONLY_NAVETTE="./navette-run.json ./navette.log "


# ---- exit status 3
nv_in "$R" run exit3.lua --wait
check_rc "run --wait of a failing job exits 1" 1
ID=$(submitted_id)
check_match "run printed the id" "$ID" '^fails-'
check_match "run says failed" "$OUT" 'failed'
check_eq "exit 3: state" "$(st "$ID" 'd["state"]')" failed
check_eq "exit 3: failure.phase" "$(st "$ID" 'd["failure"]["phase"]')" running
check_match "exit 3: reason names status 3" \
	"$(st "$ID" 'd["failure"]["reason"]')" '(status|code) 3\b'
check_eq "exit 3: exit_code" "$(st "$ID" 'd["exit_code"]')" 3
check_eq "exit 3: only the log and run record are published" \
	"$(prefix_listing "$ID")" "$ONLY_NAVETTE"
check_match "exit 3: the published log has the output" \
	"$(cat "$(store_dir fails "$ID")/navette.log" 2>&1)" '^about to fail$'
check_eq "exit 3: the run record says failed" \
	"$(json 'd["state"] + " " + d["failure"]["phase"]' \
	<"$(store_dir fails "$ID")/navette-run.json" 2>&1)" "failed running"
nv status "$ID"
check_rc "status of a failed job exits 1" 1

# ---- required output missing
nv_in "$R" run missing.lua --wait
check_rc "missing output: run --wait exits 1" 1
ID=$(submitted_id)
check_eq "missing output: state" "$(st "$ID" 'd["state"]')" failed
check_eq "missing output: failure.phase" \
	"$(st "$ID" 'd["failure"]["phase"]')" outputs_published
check_contains "missing output: reason names missing.txt" \
	"$(st "$ID" 'd["failure"]["reason"]')" missing.txt
check_eq "missing output: other.txt is not published" \
	"$(prefix_listing "$ID")" "$ONLY_NAVETTE"
check_eq "missing output: no outputs in status" \
	"$(st "$ID" 'd["outputs"]')" "[]"

# ---- failure log pattern, exit 0
nv_in "$R" run pattern.lua --wait
check_rc "log pattern: run --wait exits 1" 1
ID=$(submitted_id)
check_eq "log pattern: state" "$(st "$ID" 'd["state"]')" failed
check_eq "log pattern: failure.phase" "$(st "$ID" 'd["failure"]["phase"]')" \
	running
check_contains "log pattern: reason names the pattern" \
	"$(st "$ID" 'd["failure"]["reason"]')" "FATAL: disk"
check_eq "log pattern: exit code was 0" "$(st "$ID" 'd["exit_code"]')" 0
check_eq "log pattern: done.txt is not published" \
	"$(prefix_listing "$ID")" "$ONLY_NAVETTE"

# ---- time limit
START=$(date +%s)
nv_in "$R" run timeout.lua
check_rc "time limit: run (no --wait) exits 0" 0
ID=$(submitted_id)
check_state "time limit: the job ends failed within 20 s" "$ID" \
	'failed|succeeded|cancelled' 20
ELAPSED=$(($(date +%s) - START))
check_eq "time limit: state" "$(st "$ID" 'd["state"]')" failed
check_true "time limit: ended well before the 60 s sleep (${ELAPSED} s)" \
	test "$ELAPSED" -lt 20
check_eq "time limit: failure.phase" "$(st "$ID" 'd["failure"]["phase"]')" \
	running
check_match "time limit: reason names the time limit" \
	"$(st "$ID" 'd["failure"]["reason"]')" '[Tt]ime.?limit'
check_eq "time limit: only the log and run record are published" \
	"$(prefix_listing "$ID")" "$ONLY_NAVETTE"

# ---- the store cannot be written: the record is never published
U=$(new_repo unpublished)
put_file "$U" navette.lua <<'EOF'
return { name = "unpub", profiles = { broken = { backend = "local",
  storage = "file:///dev/null/store", require_pushed = false } } }
EOF
put_file "$U" job.lua <<'EOF'
local navette = require "navette"
navette.job {
  name = "unpub",
  command = { "sh", "-c", "echo out >\"$NAVETTE_OUTPUTS/o.txt\"" },
  success = { outputs = { "o.txt" } },
}
EOF
commit_all "$U" >/dev/null
nv_in "$U" run job.lua --profile broken --wait
check_rc "unpublished: run --wait exits 1 (a failed job, not a crash)" 1
check_contains "unpublished: names the phase" "$OUT" \
	"failed at outputs_published"
check_contains "unpublished: says the record is not published" "$OUT" \
	"run record: not published"
check_no_match "unpublished: no Lua error" "$ERR" "attempt to|cli\.lua"
ID=$(submitted_id)
nv status "$ID"
check_rc "unpublished: status exits 1" 1
check_contains "unpublished: status names the phase" "$OUT" \
	"failed at outputs_published"
check_no_match "unpublished: status prints no Lua error" "$ERR" \
	"attempt to|cli\.lua"
nv watch "$ID"
check_rc "unpublished: watch exits 1" 1
check_no_match "unpublished: watch prints no Lua error" "$ERR" \
	"attempt to|cli\.lua"

finish
