# success.exit_codes on the local backend: the exit statuses that mean
# success are the job's, not always 0. Exit 3 with exit_codes = {0, 3}
# succeeds (and publishes its outputs); exit 3 with the default fails at
# running, naming the status; exit 0 with exit_codes = {3} fails; the
# one-status form exit_code = 3 behaves as {3}.
set -eu -o pipefail
. "$(dirname "$0")/../lib.sh"
set +e # each check reports its own failure; finish sets the status

R=$(new_repo codes)
put_file "$R" codes.lua <<'EOF'
local navette = require "navette"
local function job(name, status, success)
  success = success or {}
  success.outputs = { "out.txt" }
  navette.job { name = name, success = success,
                command = { "sh", "-c", "echo " .. name .. " > \"$NAVETTE_OUTPUTS/out.txt\"; exit " .. status } }
end
job("three-allowed", 3, { exit_codes = { 0, 3 } })
job("three-default", 3)
job("zero-not-allowed", 0, { exit_codes = { 3 } })
job("three-one-code", 3, { exit_code = 3 })
job("zero-one-code", 0, { exit_code = 3 })
job("zero-default", 0)
EOF
commit_all "$R" >/dev/null

nv_in "$R" run codes.lua --wait --json
check_rc "some jobs fail: run --wait exits 1" 1
RUN=$OUT
# state NAME: "STATE PHASE EXIT" of the job named NAME
state() {
	printf '%s' "$RUN" | json "[(j['state'] + ' ' + (j.get('failure') or {}).get('phase', '-') + ' ' + str(j.get('exit_code'))) for j in d if j['name'] == '$1'][0]"
}
check_eq "exit 3 with exit_codes {0, 3}: succeeded" \
	"$(state three-allowed)" "succeeded - 3"
check_eq "exit 3 by default: failed at running" \
	"$(state three-default)" "failed running 3"
check_eq "exit 0 with exit_codes {3}: failed at running" \
	"$(state zero-not-allowed)" "failed running 0"
check_eq "exit 3 with exit_code = 3: succeeded" \
	"$(state three-one-code)" "succeeded - 3"
check_eq "exit 0 with exit_code = 3: failed at running" \
	"$(state zero-one-code)" "failed running 0"
check_eq "exit 0 by default: succeeded" "$(state zero-default)" "succeeded - 0"

id_of() {
	printf '%s' "$RUN" | json "[j['id'] for j in d if j['name'] == '$1'][0]"
}
ALLOWED=$(id_of three-allowed)
check_eq "exit 3 allowed: its output is published" \
	"$(cat "$(store_dir codes "$ALLOWED")/out.txt" 2>&1)" three-allowed
nv status "$(id_of three-default)" --json
check_match "exit 3 by default: the reason names the status" \
	"$(printf '%s' "$OUT" | json 'd["failure"]["reason"]')" 'status 3'
check_absent "exit 3 by default: its output is not published" \
	"$(store_dir codes "$(id_of three-default)")/out.txt"
nv status "$(id_of zero-not-allowed)" --json
check_match "exit 0 not allowed: the reason names the status" \
	"$(printf '%s' "$OUT" | json 'd["failure"]["reason"]')" 'status 0'

# the record in the store says the same
check_eq "the record of the allowed exit 3 says succeeded" \
	"$(json 'd["state"] + " " + str(d["exit_code"])' \
		<"$(store_dir codes "$ALLOWED")/navette-run.json")" "succeeded 3"

finish
