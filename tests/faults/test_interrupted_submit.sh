#!/usr/bin/env bash
# `navette run` killed (SIGKILL) at each step of a submission, on the local
# and the Slurm backends, then run again: the re-run must converge on one
# job per submission. Steps, hit every time through the test-only fault
# points of host/core/fault.h (NAVETTE_FAULT):
#   row-written    the job's row is in the database, nothing else done
#   code-upload    part of the code archive's PUT sent to S3
#   slurm-request  slurmrestd has answered the submit request, unread
#   before-agent   local: row and audit written, agent not yet started;
#                  slurm: Slurm accepted the job, its id not yet recorded
# Counted per step and backend: duplicates (more than one job of one
# submission queued, running or run), losses (a job no row knows of, or a
# submission that never runs) and convergence (the re-run exits 0 with the
# job of the killed run, which then succeeds). Any duplicate, loss or
# non-convergence fails the test. NAVETTE_FAULT_ITERATIONS (20) per step.
# Needs S3_STACK_ENV, SLURM_STACK_ENV (ctest's fixtures "s3" and "slurm").
set -eu -o pipefail
. "$(dirname "$0")/../integration/lib.sh"
set +e # each check reports its own failure; finish sets the status
set -o pipefail

for v in SLURM_STACK_ENV S3_STACK_ENV; do
	if [ ! -r "${!v:-}" ]; then
		echo "FAIL: $v is not set to a readable file (ctest sets it)" >&2
		exit 1
	fi
done
. "$SLURM_STACK_ENV"
. "$S3_STACK_ENV"
export SLURM_CONF
export AWS_ACCESS_KEY_ID=$S3_ACCESS_KEY
export AWS_SECRET_ACCESS_KEY=$S3_SECRET_KEY
unset AWS_SESSION_TOKEN AWS_ENDPOINT_URL AWS_ENDPOINT_URL_S3 AWS_PROFILE
export AWS_REGION=$S3_REGION
unset NAVETTE_FAULT
N=${NAVETTE_FAULT_ITERATIONS:-20}
BUCKET=nv-faults-$$-$RANDOM
WD=$T/slurm-wd
mkdir -p "$WD" "$T/store"
chmod 755 "$T" "$WD"

nv storage mb "s3://$BUCKET" --endpoint "$S3_ENDPOINT"
check_rc "the bucket is created" 0

R=$T/repo
mkdir -p "$R/recipes"
cat >"$R/navette.lua" <<NAVETTE_LUA
return {
  name = "faults",
  default_profile = "here",
  credentials = {
    jwtkey = { kind = "hs256", source = "file", path = "$SLURM_JWT_KEY" },
  },
  profiles = {
    here = { backend = "local", storage = "file://$T/store/",
             require_pushed = false },
    heres3 = {
      backend = "local", storage = "s3://$BUCKET/local/",
      require_pushed = false,
      s3 = { endpoint = "$S3_ENDPOINT", region = "$S3_REGION" },
    },
    hpc = {
      backend = "slurm", require_pushed = false,
      storage = "s3://$BUCKET/hpc/",
      s3 = { endpoint = "$S3_ENDPOINT", region = "$S3_REGION" },
      slurm = { endpoint = "$SLURMRESTD_URL", user = "$SLURM_USER",
                credential = "jwtkey", partition = "$SLURM_PARTITION",
                working_directory = "$WD" },
      max_token_lifespan = "1h",
    },
  },
}
NAVETTE_LUA
put_file "$R" recipes/one.lua <<'RECIPE'
local navette = require "navette"
navette.job { name = "one", command = { "true" } }
RECIPE
# an archive larger than one upload buffer (512 KiB), so code-upload dies
# with part of the body sent
python3 -c 'import os, sys; sys.stdout.buffer.write(os.urandom(1200000))' \
	>"$R/blob.bin"
git -C "$R" init -q
commit_all "$R" base >/dev/null

DB=$NAVETTE_HOME/jobs.db
# rows COMMIT PROFILE: "id state remote_id" of that submission's rows
rows() {
	python3 - "$DB" "$1" "$2" <<'PY'
import json, sqlite3, sys
db = sqlite3.connect(sys.argv[1], timeout=30)
for i, state, remote, spec in db.execute(
        "SELECT id, state, remote_id, spec FROM jobs WHERE profile=?"
        " ORDER BY created", (sys.argv[3],)):
    if json.loads(spec).get("commit") == sys.argv[2]:
        print(i, state, remote or "-")
PY
}
# Slurm's jobs (MinJobAge keeps the ended ones): "name job_id state"
slurm_jobs() {
	scontrol -o show jobs 2>/dev/null |
		sed -n 's/^JobId=\([0-9]*\) JobName=\([^ ]*\) .* JobState=\([A-Z_]*\) .*/\2 \1 \3/p'
}

# counters per step/backend, as lines "KIND CELL N" in a file (bash 3.2
# has no associative arrays): count KIND CELL N adds, count_of KIND CELL sums
: >"$T/counts"
: >"$T/pending"
count() { printf '%s %s %d\n' "$1" "$2" "$3" >>"$T/counts"; }
count_of() {
	awk -v k="$1" -v c="$2" '$1 == k && $2 == c { s += $3 } END { print s + 0 }' \
		"$T/counts"
}
STEPS_LOCAL="row-written code-upload before-agent"
STEPS_SLURM="row-written code-upload slurm-request before-agent"
fault_of() { # STEP BACKEND -> NAVETTE_FAULT value
	case $1/$2 in
	row-written/*) echo submit-row-written ;;
	code-upload/*) echo "http-upload:/_code/" ;;
	slurm-request/slurm) echo "http-answer:/job/submit" ;;
	before-agent/local) echo submit-before-agent ;;
	before-agent/slurm) echo submit-accepted ;;
	esac
}
profile_of() { # STEP BACKEND
	case $1/$2 in
	code-upload/local) echo heres3 ;;
	*/local) echo here ;;
	*) echo hpc ;;
	esac
}

# one iteration: a fresh commit (a new submission), a killed run, a re-run
iteration() { # STEP BACKEND K
	local step=$1 backend=$2 k=$3 cell="$1/$2" fault profile commit rc
	local t0
	t0=$(date +%s)
	fault=$(fault_of "$step" "$backend")
	profile=$(profile_of "$step" "$backend")
	git -C "$R" commit -q --allow-empty -m "$cell $k" || return 1
	commit=$(git -C "$R" rev-parse HEAD)
	count runs "$cell" 1
	# (--no-reuse: an empty commit keeps the job's key, and the job of
	# the last round would be reused instead of submitted)
	(cd "$R" && NAVETTE_FAULT=$fault exec "$NAVETTE" run recipes/one.lua \
		--profile "$profile" --no-reuse >"$T/killed.out" 2>&1)
	rc=$?
	if [ "$rc" -ne 137 ]; then
		fail "$cell #$k: the fault point $fault was not reached (exit $rc)"
		sed 's/^/  | /' "$T/killed.out" >&2
		return
	fi
	local before id
	before=$(rows "$commit" "$profile" | awk '{print $1}')
	nv_in "$R" run recipes/one.lua --profile "$profile" --no-reuse
	id=$(submitted_id)
	if [ "$RC" -ne 0 ] || [ -z "$id" ]; then
		fail "$cell #$k: the re-run did not submit (exit $RC)"
		_show_last
		return
	fi
	# a row the killed run left is the one the re-run completes
	if [ -n "$before" ] && [ "$before" != "$id" ]; then
		fail "$cell #$k: the killed run left $before, the re-run made $id"
	fi
	printf '%s %s\n' "$cell" "$commit:$profile:$id" >>"$T/pending"
	# Slurm forgets an ended job after MinJobAge (10 min): kept as seen
	[ "$backend" = slurm ] && slurm_jobs >>"$T/slurm-seen.txt"
	echo "$cell #$k: killed at $fault, re-run: $id ($(($(date +%s) - t0)) s)"
}

for k in $(seq 1 "$N"); do
	for step in $STEPS_LOCAL; do iteration "$step" local "$k"; done
	for step in $STEPS_SLURM; do iteration "$step" slurm "$k"; done
done

# every submission's job ends; then count
deadline=$(($(date +%s) + ${NAVETTE_FAULT_WAIT:-300}))
while :; do
	left=$(python3 - "$DB" <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1], timeout=30)
print(db.execute("SELECT count(*) FROM jobs WHERE state IN"
                 " ('queued','running')").fetchone()[0])
PY
)
	[ "$left" = 0 ] && break
	if [ "$(date +%s)" -gt "$deadline" ]; then
		fail "$left jobs still queued or running after the wait"
		break
	fi
	# the Slurm rows move only when something looks at them (all of
	# them: a listing asks Slurm of the jobs it shows)
	"$NAVETTE" jobs --profile hpc --limit 1000 >/dev/null 2>&1
	sleep 2
done
slurm_jobs >>"$T/slurm-seen.txt"
# one line per Slurm job
awk '!seen[$2]++' "$T/slurm-seen.txt" >"$T/slurm.txt"

while read -r cell entry <&3; do
	IFS=: read -r commit profile id <<<"$entry"
	rows "$commit" "$profile" >"$T/rows.txt"
	live=$(awk '$2 != "failed" && $2 != "cancelled"' "$T/rows.txt" | wc -l)
	state=$(awk -v id="$id" '$1 == id {print $2}' "$T/rows.txt")
	dup=0 lost=0
	[ "$live" -gt 1 ] && dup=$((live - 1))
	if [ "$profile" = hpc ]; then
		# the Slurm jobs of this submission's rows, each the one
		# its row records
		n=0
		while read -r rid rstate rremote; do
			while read -r name jid jstate; do
				[ "$name" = "$rid" ] || continue
				n=$((n + 1))
				[ "$jid" = "$rremote" ] || lost=$((lost + 1))
			done <"$T/slurm.txt"
		done <"$T/rows.txt"
		[ "$n" -gt 1 ] && dup=$((dup + n - 1))
		[ "$n" -eq 0 ] && lost=$((lost + 1))
	fi
	[ -z "$state" ] && lost=$((lost + 1))
	count dups "$cell" "$dup"
	count losses "$cell" "$lost"
	if [ "$state" = succeeded ] && [ "$dup" -eq 0 ] &&
		[ "$lost" -eq 0 ]; then
		count conv "$cell" 1
	else
		echo "  $cell $id: state ${state:-none}, $dup duplicate(s), $lost lost" >&2
		sed 's/^/    row /' "$T/rows.txt" >&2
	fi
done 3<"$T/pending"

printf '\n%-14s %-7s %5s %10s %7s %10s\n' step backend runs duplicates losses converged
for backend in local slurm; do
	steps=$STEPS_LOCAL
	[ "$backend" = slurm ] && steps=$STEPS_SLURM
	for step in $steps; do
		cell=$step/$backend
		runs=$(count_of runs "$cell")
		dups=$(count_of dups "$cell")
		losses=$(count_of losses "$cell")
		conv=$(count_of conv "$cell")
		printf '%-14s %-7s %5d %10d %7d %10d\n' "$step" "$backend" \
			"$runs" "$dups" "$losses" "$conv"
		check_eq "$cell: no duplicate" "$dups" 0
		check_eq "$cell: no job lost" "$losses" 0
		check_eq "$cell: every re-run converged" "$conv" "$runs"
	done
done
echo

nv audit verify
check_rc "the audit chain verifies after $((N * 7)) interrupted runs" 0

finish
