# recipes/first-job.lua, end to end, in a fresh copy of its files: run
# --wait, the published result, the run record, status, logs, the id.
set -eu -o pipefail
. "$(dirname "$0")/../lib.sh"
set +e # each check reports its own failure; finish sets the status

R=$T/repo
mkdir -p "$R/recipes"
cp "$NAVETTE_SOURCE/navette.lua" "$R/"
cp "$NAVETTE_SOURCE/recipes/first-job.lua" "$R/recipes/"
cp -R "$NAVETTE_SOURCE/recipes/first-job" "$R/recipes/"
git -C "$R" init -q
HEAD=$(commit_all "$R")
check_match "the test repository has a commit" "$HEAD" '^[0-9a-f]{40}$'
# The project name comes from the copied navette.lua (recipes live under
# <project>/<id>/); read it the way a user would.
PROJECT=$(sed -n 's/^[[:space:]]*name[[:space:]]*=[[:space:]]*"\([^"]*\)".*/\1/p' \
	"$R/navette.lua" | head -1)
check_ne "navette.lua names the project" "$PROJECT" ""

nv_in "$R" run recipes/first-job.lua --wait
check_rc "run --wait of a succeeding job exits 0" 0
ID=$(submitted_id)
check_match "run prints the job id" "$ID" '^[a-z0-9]'
check_match "run prints succeeded" "$OUT" '^ *succeeded\b'
check_no_match "run prints no failure" "$OUT" '\bfailed\b'

check_true "job id is DNS-1123 ('$ID')" \
	grep -Eqx '[a-z0-9]([-a-z0-9]*[a-z0-9])?' <<<"$ID"
check_true "job id is at most 63 characters (${#ID})" test "${#ID}" -le 63
check_contains "job id carries the project" "$ID" "$PROJECT"
# the id's shape is <project>-<time6>-<random5> (lua/navette/job.lua):
# the second it was drawn in base 36 from 2020-01-01 UTC, so ids sort by
# time; the commit is in the record (checked below), no longer in the id
check_match "job id is <project>-<time6>-<random5>" "$ID" \
	"^$PROJECT-[0-9a-z]{6}-[0-9a-z]{5}\$"
check_true "job id's time is the submission's (within 5 min of now)" \
	python3 -c 'import sys, time
t = int(sys.argv[1].split("-")[-2], 36) + 1577836800
sys.exit(0 if abs(time.time() - t) < 300 else 1)' "$ID"

D=$(store_dir "$PROJECT" "$ID")
check_file "result.txt is published under <project>/<id>/" "$D/result.txt"
check_file "navette.log is published beside it" "$D/navette.log"
check_file "navette-run.json is published beside it" "$D/navette-run.json"

RESULT=$(cat "$D/result.txt" 2>/dev/null)
GREETING_SUM=$(sha256 "$R/recipes/first-job/greeting.txt")
check_match "result.txt names the commit" "$RESULT" "^commit=$HEAD\$"
check_match "result.txt has the input's sha256" "$RESULT" \
	"^input_sha256=$GREETING_SUM\$"
check_match "result.txt names the job" "$RESULT" "^job=$ID\$"

REC=$(cat "$D/navette-run.json" 2>/dev/null)
r() { printf '%s' "$REC" | json "$1" 2>&1; }
check_eq "record: id" "$(r 'd["id"]')" "$ID"
check_eq "record: state" "$(r 'd["state"]')" succeeded
check_eq "record: dirty" "$(r 'd["dirty"]')" false
check_eq "record: image" "$(r 'd["image"]')" host
check_eq "record: commit" "$(r 'd["commit"]')" "$HEAD"
check_eq "record: phases in order" \
	"$(r '" ".join(p["phase"] for p in d["phases"])')" \
	"submitted accepted image_ready data_ready running logs_visible outputs_published succeeded"
check_eq "record: phase timestamps never go back" \
	"$(r 'all(a["at"] <= b["at"] for a, b in zip(d["phases"], d["phases"][1:])) and all(re.match(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$", p["at"]) for p in d["phases"])')" \
	true
check_eq "record: one output" "$(r 'len(d["outputs"])')" 1
check_eq "record: outputs[0].name" "$(r 'd["outputs"][0]["name"]')" result.txt
check_eq "record: outputs[0].sha256 is the published file's" \
	"$(r 'd["outputs"][0]["sha256"]')" "$(sha256 "$D/result.txt")"
check_eq "record: outputs[0].size" "$(r 'd["outputs"][0]["size"]')" \
	"$(wc -c <"$D/result.txt" | tr -d ' ')"
check_eq "record: input checksum" "$(r 'd["inputs"][0]["sha256"]')" \
	"$GREETING_SUM"

nv_in "$R" status "$ID" --json
check_rc "status --json of a succeeded job exits 0" 0
s() { printf '%s' "$OUT" | json "$1" 2>&1; }
check_eq "status: id" "$(s 'd["id"]')" "$ID"
check_eq "status: state" "$(s 'd["state"]')" succeeded
check_eq "status: phase" "$(s 'd["phase"]')" succeeded
check_eq "status: phases[]" \
	"$(s '" ".join(p["phase"] for p in d["phases"])')" \
	"submitted accepted image_ready data_ready running logs_visible outputs_published succeeded"
check_eq "status: commit" "$(s 'd["commit"]')" "$HEAD"
check_eq "status: image" "$(s 'd["image"]')" host
check_eq "status: outputs[]" "$(s '[o["name"] for o in d["outputs"]]')" \
	'["result.txt"]'
check_eq "status: outputs[0].sha256" "$(s 'd["outputs"][0]["sha256"]')" \
	"$(sha256 "$D/result.txt")"
check_eq "status: failure is null" "$(s '"failure" in d and d["failure"]')" \
	null

nv_in "$R" logs "$ID"
check_rc "logs exits 0" 0
check_match "logs show the script's output" "$OUT" \
	"^first-job: job $ID at commit $HEAD\$"
check_match "logs show the input's checksum" "$OUT" \
	"first-job: input greeting has sha256 $GREETING_SUM"
check_match "logs show the end of the script" "$OUT" "first-job: wrote result.txt"
check_match "the published log holds the same" "$(cat "$D/navette.log")" \
	"first-job: wrote result.txt"

finish
