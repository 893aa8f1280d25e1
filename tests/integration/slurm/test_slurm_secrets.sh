#!/usr/bin/env bash
# A job's secrets on Slurm (issue 26, point 4; fixtures "slurm" and "s3"):
# `secrets = { HF_TOKEN = "hub" }` reaches the node as a 0400 file at
# $HF_TOKEN_FILE, through an encrypted object of the store that the node
# fetches once and deletes; the shipped log masks the value; the object
# is gone once the job ran; the value is in no file of NAVETTE_HOME, no
# object of the store (the sealed object aside, while it lives), and not
# in what jobs.db keeps; the audit says what was delivered. A job that
# never fetched its object has it deleted by `navette status` once over.
# Needs SLURM_STACK_ENV and S3_STACK_ENV (set by ctest).
set -eu -o pipefail
. "$(dirname "$0")/../lib.sh"
set +e # each check reports its own failure; finish sets the status

use_slurm_stack secrets
nv storage mb "s3://$BUCKET" "${EP[@]}"
check_rc "the bucket is created" 0

HUB_VALUE=hubvalue$(printf '%s' "$$-$RANDOM-$(date +%s)" |
	shasum -a 256 | cut -c1-32)
HUB_SHA=$(printf '%s' "$HUB_VALUE" | shasum -a 256 | cut -d' ' -f1)
export HUB_TOKEN=$HUB_VALUE

R=$(NO_PROJECT_FILE=1 new_repo sec)
cat >"$R/navette.lua" <<EOF
return {
  name = "sec",
  default_profile = "hpc",
  credentials = {
    jwtkey = { kind = "hs256", source = "file", path = "$SLURM_JWT_KEY" },
    hub = { kind = "bearer", source = "env", env = { token = "HUB_TOKEN" } },
  },
  profiles = {
    hpc = {
      backend = "slurm", storage = "s3://$BUCKET/", require_pushed = false,
      s3 = { endpoint = "$S3_ENDPOINT", region = "$S3_REGION" },
      slurm = { endpoint = "$SLURMRESTD_URL", user = "$SLURM_USER",
                credential = "jwtkey", partition = "$SLURM_PARTITION",
                working_directory = "$WD" },
      max_token_lifespan = "1h",
      credentials = { "hub" },
    },
  },
}
EOF
cat >"$R/reader.lua" <<'EOF'
local navette = require "navette"
navette.job { name = "reader", secrets = { HF_TOKEN = "hub" },
  resources = { time_limit = "5m" },
  command = { "sh", "-c", [[
echo "dir=$NAVETTE_SECRETS"
echo "mode=$(ls -l "$HF_TOKEN_FILE" | cut -c1-10)"
echo "sha=$(shasum -a 256 "$HF_TOKEN_FILE" | cut -d' ' -f1)"
if env | grep -qF "$(cat "$HF_TOKEN_FILE")"; then echo env=holds-value; else echo env=clean; fi
printf 'value=%s\n' "$(cat "$HF_TOKEN_FILE")"
]] } }
EOF
# a job that waits for another: cancelled before it starts, it never
# fetches its object
cat >"$R/held.lua" <<'EOF'
local navette = require "navette"
local first = navette.job { name = "first", command = { "sleep", "30" },
  resources = { time_limit = "5m" } }
navette.job { name = "held", after = { first }, secrets = { HF_TOKEN = "hub" },
  resources = { time_limit = "5m" }, command = { "true" } }
EOF
commit_all "$R" >/dev/null

# ---- plan: the line, nothing loaded, nothing put in the store
nv_in "$R" plan reader.lua --launcher
check_rc "plan of a Slurm job with secrets" 0
check_contains "plan says where the secret comes from" "$OUT" \
	'HF_TOKEN <- credential hub (file $NAVETTE_SECRETS/HF_TOKEN)'
check_contains "plan's launcher holds no URL nor password for it" "$OUT" \
	"its URLs and password are written when navette sends the job"

# ---- run
nv_in "$R" run reader.lua --wait
check_rc "run --wait of a job with secrets" 0
ID=$(submitted_id)
check_eq "the job succeeded" "$(st "$ID" 'd["state"]')" succeeded
LOG=$("$NAVETTE" logs "$ID" 2>&1)
check_match "the node's file is mode 0400" "$LOG" '^mode=-r--------$'
check_match "the node's file holds the credential's value" "$LOG" \
	"^sha=$HUB_SHA\$"
check_match "the node's environment does not hold it" "$LOG" '^env=clean$'
check_match "the log masks the value" "$LOG" '^value=<redacted'
SHIPPED=$(s3cat "sec/$ID/navette.log")
check_match "the log in the store masks the value" "$SHIPPED" \
	'^value=<redacted'
check_no_match "... and never holds it" "$SHIPPED" "$HUB_VALUE"
LISTING=$("$NAVETTE" storage ls "s3://$BUCKET/" --recursive "${EP[@]}" 2>&1)
check_no_match "the sealed object is gone once the job ran" "$LISTING" \
	"_secrets/sec/$ID/"
check_true "the job's prefix is listed (the listing works)" \
	grep -q "$ID/navette-run.json" <<<"$LISTING"
# every object of the store, read back: the value is in none
LEAK=
READ=0
while read -r key; do
	[ -n "$key" ] || continue
	s3cat "$key" >/dev/null 2>&1 && READ=$((READ + 1))
	if grep -qF -- "$HUB_VALUE" "$T/got" 2>/dev/null; then
		LEAK="$LEAK $key"
	fi
done < <("$NAVETTE" storage ls "s3://$BUCKET/" --recursive --json "${EP[@]}" |
	json '"\n".join(o["key"] for o in (d if isinstance(d, list) else d["objects"]))')
check_true "the store's objects were read back (code, log, record...)" \
	[ "$READ" -ge 4 ]
check_eq "no object of the store holds the value" "$LEAK" ""
HOMELEAK=$(grep -rlaF -- "$HUB_VALUE" "$NAVETTE_HOME" "$R" 2>/dev/null || true)
check_eq "the value is nowhere in NAVETTE_HOME or the repository" \
	"$HOMELEAK" ""
ROW=$(python3 -c 'import json, sqlite3, sys
c = sqlite3.connect(sys.argv[1])
spec = json.loads(c.execute("select spec from jobs where id = ?", (sys.argv[2],)).fetchone()[0])
print(json.dumps([spec.get("secrets"), spec.get("secrets_objects")], sort_keys=True))' \
	"$NAVETTE_HOME/jobs.db" "$ID")
check_eq "jobs.db keeps the names and the object's key" \
	"$ROW" \
	"[[{\"credential\": \"hub\", \"kind\": \"bearer\", \"name\": \"HF_TOKEN\"}], [\"_secrets/sec/$ID/HF_TOKEN\"]]"
SPEC_TEXT=$(python3 -c 'import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
print(c.execute("select spec from jobs where id = ?", (sys.argv[2],)).fetchone()[0])' \
	"$NAVETTE_HOME/jobs.db" "$ID")
check_match "jobs.db keeps the job's spec" "$SPEC_TEXT" '"launcher":'
check_no_match "jobs.db keeps no presigned URL of the sealed object" \
	"$SPEC_TEXT" "_secrets/sec/$ID/HF_TOKEN\\?"
check_no_match "... nor the password" "$SPEC_TEXT" '"password"'
check_no_match "... and its launcher has no fetch of it" "$SPEC_TEXT" \
	"fetch_secret HF_TOKEN '"
AUDIT=$(grep -h '"secret.deliver"' "$NAVETTE_HOME"/audit/*.jsonl)
check_eq "one audit line for the delivery" \
	"$(printf '%s' "$AUDIT" | json '[d["job"], d["target"], d["detail"]]')" \
	"[\"$ID\", \"HF_TOKEN\", \"credential hub, backend slurm\"]"
RECORD=$(s3cat "sec/$ID/navette-run.json")
check_eq "the run record names the secret" \
	"$(printf '%s' "$RECORD" | json 'd["secrets"]')" \
	'[{"credential": "hub", "kind": "bearer", "name": "HF_TOKEN"}]'

# ---- a job that never ran: its object is deleted once it is over
nv_in "$R" run held.lua
check_rc "run of a job that waits" 0
FIRST=$(sub_id first)
HELD=$(sub_id held)
LISTING=$("$NAVETTE" storage ls "s3://$BUCKET/_secrets/" --recursive "${EP[@]}" 2>&1)
check_match "a waiting job's sealed object is in the store" "$LISTING" \
	"_secrets/sec/$HELD/HF_TOKEN"
nv cancel "$HELD"
check_state "the waiting job ends cancelled" "$HELD" cancelled 60
"$NAVETTE" status "$HELD" >/dev/null 2>&1
LISTING=$("$NAVETTE" storage ls "s3://$BUCKET/_secrets/" --recursive "${EP[@]}" 2>&1)
check_no_match "navette status deleted it once the job was over" \
	"$LISTING" "_secrets/sec/$HELD/"
nv cancel "$FIRST"

finish
