# `navette outputs` and `navette gc --store` on a profile whose storage is
# S3 (the radosgw of the ctest fixture "s3"), local backend: the outputs
# come with the job's profile credential, checked against the run record;
# an object replaced in the bucket is refused; gc --store deletes the
# job's objects. Needs S3_STACK_ENV, set by ctest.
set -eu -o pipefail
. "$(dirname "$0")/../lib.sh"
set +e # each check reports its own failure; finish sets the status

use_s3_stack s3out
nv storage mb "s3://$BUCKET" "${EP[@]}"
check_rc "the test bucket is created" 0

R=$(NO_PROJECT_FILE=1 new_repo s3out)
cat >"$R/navette.lua" <<EOF2
return {
  name = "s3out", default_profile = "s3",
  profiles = {
    s3 = { storage = "s3://$BUCKET/team/", require_pushed = false,
           s3 = { endpoint = "$S3_ENDPOINT", region = "$S3_REGION" } },
  },
}
EOF2
put_file "$R" one.lua <<'EOF2'
local navette = require "navette"
navette.job {
  name = "one",
  command = { "sh", "-c", "printf 'from s3\n' >\"$NAVETTE_OUTPUTS/a.txt\"" },
  success = { outputs = { "a.txt" } },
}
EOF2
commit_all "$R" >/dev/null

nv_in "$R" run one.lua --wait
check_rc "the job succeeds, publishing to S3" 0
ID=$(submitted_id)
check_ne "run printed the job id" "$ID" ""
nv outputs "$ID" --to "$T/got"
check_rc "outputs from S3 exits 0" 0
check_eq "the output has the job's bytes" "$(cat "$T/got/a.txt" 2>&1)" "from s3"

# another object under the output's key (uploaded with its own sha256)
printf 'replaced\n' >"$T/other.txt"
nv storage cp "$T/other.txt" "s3://$BUCKET/team/s3out/$ID/a.txt" "${EP[@]}"
check_rc "the output is replaced in the bucket" 0
nv outputs "$ID" --to "$T/got2"
check_rc "the replaced output is refused (exit 1)" 1
check_contains "the error names the output" "$ERR" "output a.txt of job $ID"
check_contains "the error names the sha256 of the bytes found" "$ERR" \
	"$(sha256 "$T/other.txt")"
check_absent "nothing is left under its name" "$T/got2/a.txt"

# gc --store: a second run makes the first old; its objects go
nv_in "$R" run one.lua --wait
check_rc "a second run succeeds" 0
ID2=$(submitted_id)
nv storage ls "s3://$BUCKET/team/s3out/$ID/" "${EP[@]}"
check_contains "the first job's objects are listed before gc" "$OUT" "a.txt"
nv gc --older-than 0s --store --yes
check_rc "gc --store --yes exits 0" 0
check_contains "gc says it deleted the job" "$OUT" "deleted 1 job"
nv storage ls "s3://$BUCKET/team/s3out/$ID/" "${EP[@]}"
check_rc "the job's prefix is listed after gc" 0
check_no_match "gc --store removed its output" "$OUT" 'a\.txt'
check_no_match "gc --store removed its run record and log" "$OUT" 'navette'
check_no_match "gc --store refuses nothing" "$ERR" 'error'
nv storage ls "s3://$BUCKET/team/s3out/" "${EP[@]}"
check_contains "the second job's objects stay" "$OUT" "$ID2/"
check_no_match "the first job's prefix is gone" "$OUT" "$ID/"

finish
