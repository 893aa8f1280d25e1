#!/usr/bin/env bash
# Jobs on a profile whose storage is S3 (the real radosgw of the ctest
# fixture "s3"), on the local backend: recipes/first-job.lua end to end
# with its input and outputs in S3; the node-side launcher gets presigned
# URLs and a POST policy, never a key (checked: the policy refuses a key
# outside the job's prefix, asked by a hostile job itself); failures by exit
# status and by a missing output publish only navette's files; log chunks
# shipped while the job runs; cancel; URLs that expired before the job
# started; lifetimes bounded by the profile; no secret anywhere.
# Needs S3_STACK_ENV (the stack's users.env), set by ctest.
set -eu -o pipefail
. "$(dirname "$0")/../lib.sh"
set +e # each check reports its own failure; finish sets the status

: "${S3_STACK_ENV:?set S3_STACK_ENV to the users.env of tests/stack/s3-start.sh}"
if [ ! -r "$S3_STACK_ENV" ]; then
	echo "FAIL: no S3 stack: cannot read $S3_STACK_ENV" >&2
	exit 1
fi
. "$S3_STACK_ENV"

export AWS_ACCESS_KEY_ID=$S3_ACCESS_KEY
export AWS_SECRET_ACCESS_KEY=$S3_SECRET_KEY
unset AWS_SESSION_TOKEN AWS_ENDPOINT_URL AWS_ENDPOINT_URL_S3 AWS_PROFILE
export AWS_REGION=$S3_REGION
EP=(--endpoint "$S3_ENDPOINT")
BUCKET=nv-jobs-$$-$RANDOM
export NAVETTE_LOG_INTERVAL=1

nv storage mb "s3://$BUCKET" "${EP[@]}"
check_rc "the test bucket is created" 0

# A copy of the shipped first job, with a project file whose default
# profile stores in S3 (the credential: the conventional AWS_* variables).
R=$T/repo
mkdir -p "$R/recipes"
cp "$NAVETTE_SOURCE/recipes/first-job.lua" "$R/recipes/"
cp -R "$NAVETTE_SOURCE/recipes/first-job" "$R/recipes/"
cat >"$R/navette.lua" <<EOF
return {
  name = "s3proj",
  default_profile = "s3",
  profiles = {
    s3 = {
      storage = "s3://$BUCKET/team/",
      s3 = { endpoint = "$S3_ENDPOINT", region = "$S3_REGION" },
      max_url_lifetime = "2h",
    },
    short = {
      storage = "s3://$BUCKET/short/",
      s3 = { endpoint = "$S3_ENDPOINT", region = "$S3_REGION" },
      max_url_lifetime = 4, url_margin = 1,
    },
  },
}
EOF
put_file "$R" recipes/fail.lua <<'EOF'
local navette = require "navette"
navette.job {
  name = "exit3",
  command = { "sh", "-c", "echo partial >\"$NAVETTE_OUTPUTS/partial.txt\"; echo about to fail; exit 3" },
}
navette.job {
  name = "missing",
  command = { "sh", "-c", "echo other >\"$NAVETTE_OUTPUTS/other.txt\"" },
  success = { outputs = { "missing.txt" } },
}
EOF
# A job that reads the POST form out of its own launcher and tries to use
# it: under its prefix (allowed) and elsewhere (the server must refuse).
put_file "$R" recipes/hostile.sh <<'EOF'
#!/bin/sh
L="$NAVETTE_JOB_DIR/launcher.sh"
url=$(sed -n "s/^NAVETTE_POST_URL='\(.*\)'$/\1/p" "$L")
prefix=$(sed -n "s/^NAVETTE_PREFIX='\(.*\)'$/\1/p" "$L")
fields=$(grep -e "--form-string '\(policy\|x-amz-\)" "$L" | sed 's/\\$//' | tr '\n' ' ')
printf 'x\n' >"$NAVETTE_JOB_DIR/probe.txt"
post() {
	eval "curl -s -o /dev/null -w '%{http_code}' $fields --form-string 'key=$1' --form-string 'x-amz-meta-sha256=0' -F 'file=@$NAVETTE_JOB_DIR/probe.txt' '$url'"
}
echo "inside=$(post "${prefix}probe-inside.txt")" >"$NAVETTE_OUTPUTS/codes.txt"
echo "outside=$(post "team/elsewhere/escape.txt")" >>"$NAVETTE_OUTPUTS/codes.txt"
echo "root=$(post "escape.txt")" >>"$NAVETTE_OUTPUTS/codes.txt"
cat "$NAVETTE_OUTPUTS/codes.txt"
EOF
put_file "$R" recipes/hostile.lua <<'EOF'
local navette = require "navette"
navette.job { name = "hostile", command = { "sh", "recipes/hostile.sh" } }
EOF
# A job that reports the environment it sees, and the agent's (its pid
# from agent.lock, two folders above its job folder), letter-spaced as a
# job that meant to get past the masking would print it.
put_file "$R" recipes/creds.py <<'EOF'
import json, os
home = os.path.dirname(os.path.dirname(os.environ["NAVETTE_JOB_DIR"]))
r = {"env": dict(os.environ), "agent_pid": None, "agent_names": None}
try:
    # (a sandboxed job sees neither NAVETTE_HOME's agent.lock nor the
    # agent's process: both reads fail there)
    pid = open(os.path.join(home, "agent.lock")).read().strip()
    r["agent_pid"] = pid
    with open("/proc/%s/environ" % pid, "rb") as f:
        data = f.read().decode("utf-8", "replace")
    r["agent_names"] = sorted(e.split("=", 1)[0] for e in data.split("\0") if e)
    r["agent_spaced"] = " ".join(data)
except OSError as e:
    r["agent_error"] = e.strerror
with open(os.path.join(os.environ["NAVETTE_OUTPUTS"], "creds.json"), "w") as f:
    json.dump(r, f)
EOF
put_file "$R" recipes/creds.lua <<'EOF'
local navette = require "navette"
navette.job { name = "creds", command = { "python3", "recipes/creds.py" },
              success = { outputs = { "creds.json" } } }
EOF
# chatty holds after its third line until the test creates go in its HOME
# (at most 30 s; a sandboxed job sees no other folder of the test's): a
# chunk listed before that was shipped while it ran
put_file "$R" recipes/chatty.lua <<EOF
local navette = require "navette"
navette.job {
  name = "chatty",
  -- lines longer than what the log's redacting filter holds back
  command = { "sh", "-c", "pad=\$(printf '%0300d' 0); for i in 1 2 3; do echo line \$i \$pad; sleep 0.7; done; w=0; while [ ! -e \"\$HOME/go\" ] && [ \$w -lt 300 ]; do sleep 0.1; w=\$((w + 1)); done; for i in 4 5 6; do echo line \$i \$pad; sleep 0.7; done" },
}
EOF
put_file "$R" recipes/sleepy.lua <<'EOF'
local navette = require "navette"
navette.job { name = "sleepy", command = { "sleep", "60" } }
EOF
put_file "$R" recipes/long-limit.lua <<'EOF'
local navette = require "navette"
navette.job { name = "long", command = { "true" },
              resources = { time_limit = "3h" } }
EOF
put_file "$R" recipes/late.lua <<'EOF'
local navette = require "navette"
local data = navette.storage.put_string("inputs/late.txt", "late\n")
navette.job { name = "blocker", command = { "sleep", "7" } }
navette.job { name = "late", inputs = { d = data.url },
              command = { "sh", "-c", "cat \"$NAVETTE_INPUTS/d\"" } }
EOF
git -C "$R" init -q
HEAD=$(commit_all "$R")
# profiles other than local run only pushed commits
git init -q --bare "$T/origin.git"
git -C "$R" remote add origin "$T/origin.git"
git -C "$R" push -q origin HEAD:main 2>/dev/null
git -C "$R" fetch -q origin

# s3ls PREFIX: the keys under s3://BUCKET/PREFIX, one per line
# (a listing that fails is a failure of the test, never an empty listing)
s3ls() {
	local out
	if ! out=$("$NAVETTE" storage ls "s3://$BUCKET/$1" --recursive \
		"${EP[@]}" 2>&1); then
		fail "listing s3://$BUCKET/$1 failed: $out"
		return 1
	fi
	printf '%s\n' "$out" | awk 'NF {print $NF}' | LC_ALL=C sort
}
# s3cat KEY: the object's bytes; a failed read is a failure of the test
s3cat() {
	rm -f "$T/got"
	if ! "$NAVETTE" storage cp "s3://$BUCKET/$1" "$T/got" "${EP[@]}" \
		>"$T/s3cat.err" 2>&1; then
		fail "reading s3://$BUCKET/$1 failed: $(head -3 "$T/s3cat.err")"
		return 1
	fi
	cat "$T/got"
}

# ---- the first job, end to end ------------------------------------------------

nv_in "$R" run recipes/first-job.lua --wait
check_rc "first job on S3: run --wait exits 0" 0
ID=$(submitted_id)
check_match "first job on S3: it printed succeeded" "$OUT" '^ *succeeded\b'
check_contains "first job on S3: outputs are under the S3 prefix" "$OUT" \
	"s3://$BUCKET/team/s3proj/$ID/"

P=team/s3proj/$ID
KEYS=$(s3ls "$P/")
check_contains "the result is published" "$KEYS" "$P/result.txt"
check_contains "the log is published" "$KEYS" "$P/navette.log"
check_contains "the run record is published" "$KEYS" "$P/navette-run.json"
check_contains "the status object is published" "$KEYS" "$P/navette-status"

RESULT=$(s3cat "$P/result.txt")
GREETING_SUM=$(sha256 "$R/recipes/first-job/greeting.txt")
check_match "result.txt names the commit" "$RESULT" "^commit=$HEAD\$"
check_match "result.txt has the input's sha256 (read on the node)" "$RESULT" \
	"^input_sha256=$GREETING_SUM\$"
RESULT_SUM=$(sha256 "$T/got")

REC=$(s3cat "$P/navette-run.json")
r() { printf '%s' "$REC" | json "$1" 2>&1; }
check_eq "record: id" "$(r 'd["id"]')" "$ID"
check_eq "record: state" "$(r 'd["state"]')" succeeded
check_eq "record: commit" "$(r 'd["commit"]')" "$HEAD"
check_eq "record: the input's sha256 as checked on the node" \
	"$(r 'd["inputs"][0]["sha256"]')" "$GREETING_SUM"
check_eq "record: the input's URL is its s3:// URL, not a signed one" \
	"$(r 'd["inputs"][0]["url"]')" "s3://$BUCKET/team/inputs/first-job/greeting.txt"
check_eq "record: the output's sha256 equals the object's bytes" \
	"$(r '[o["sha256"] for o in d["outputs"] if o["name"]=="result.txt"][0]')" \
	"$RESULT_SUM"
check_eq "record: phases in order" \
	"$(r '" ".join(p["phase"] for p in d["phases"])')" \
	"accepted image_ready data_ready running logs_visible outputs_published succeeded"
check_eq "record: exit code" "$(r 'd["exit_code"]')" 0
check_eq "record: the log's URL" "$(r 'd["log"]["url"]')" \
	"s3://$BUCKET/$P/navette.log"

# the object's own recorded sha256 (x-amz-meta-sha256, sent by the node),
# read by a HEAD request signed with curl's SigV4: the bytes' sha256, and
# the one in the run record
s3head() {
	curl -sS -I --max-time 10 --aws-sigv4 "aws:amz:$S3_REGION:s3" \
		--user "$S3_ACCESS_KEY:$S3_SECRET_KEY" \
		-H 'x-amz-content-sha256: UNSIGNED-PAYLOAD' \
		"$S3_ENDPOINT/$BUCKET/$1" | tr -d '\r'
}
HEADERS=$(s3head "$P/result.txt")
check_match "HEAD of the result object answers 200" "$HEADERS" '^HTTP/[0-9.]+ 200'
META_SUM=$(printf '%s\n' "$HEADERS" |
	sed -n 's/^[Xx]-[Aa]mz-[Mm]eta-[Ss]ha256: *//p')
check_eq "the object's recorded sha256 is its bytes' sha256" \
	"$META_SUM" "$RESULT_SUM"
check_eq "the object's recorded sha256 is the run record's" "$META_SUM" \
	"$(r '[o["sha256"] for o in d["outputs"] if o["name"]=="result.txt"][0]')"

nv status "$ID" --json
check_rc "status of the S3 job exits 0" 0
check_eq "status: state" "$(printf '%s' "$OUT" | json 'd["state"]')" succeeded
check_eq "status: outputs[] read from the record in S3" \
	"$(printf '%s' "$OUT" | json '[o["name"] for o in d["outputs"]]')" \
	'["result.txt"]'
check_eq "status: the output's URL" \
	"$(printf '%s' "$OUT" | json 'd["outputs"][0]["url"]')" \
	"s3://$BUCKET/$P/result.txt"
check_eq "status: record_url" "$(printf '%s' "$OUT" | json 'd["record_url"]')" \
	"s3://$BUCKET/$P/navette-run.json"
nv logs "$ID"
check_match "logs shows the command's output" "$OUT" "^first-job: wrote result.txt$"

# What the bucket holds: the input, the code archive (once per commit), the
# audit log's mirror, the job's prefix and its reuse entry (under the
# project's prefix, by its key: navette-reuse/HEX/ID); nothing else.
ALL=$(s3ls "" | grep -v "^team/s3proj/$ID/")
check_eq "the bucket holds only the input, the code, the audit and the job's reuse entry besides the job" \
	"$(printf '%s\n' "$ALL" | sed 's|^team/_audit/[^/]*/|team/_audit/USER/|; s|^team/s3proj/navette-reuse/[0-9a-f]\{64\}/|team/s3proj/navette-reuse/HEX/|')" \
	"$(printf '%s\n' team/_audit/USER/audit.jsonl team/_audit/USER/genesis.json \
	team/_audit/USER/head "team/_code/s3proj/$HEAD.tar.gz" \
	"team/inputs/first-job/greeting.txt" "team/s3proj/navette-reuse/HEX/$ID")"
AUD=$(s3cat "$(printf '%s\n' "$ALL" | grep '_audit/.*/audit.jsonl')")
check_contains "the audit mirror in S3 holds the submission" "$AUD" "\"job\":\"$ID\""

# A second run of the same commit reuses the code archive: one upload
# request in all, as the server's access log counts it (radosgw logs each
# request: "PUT /BUCKET/KEY HTTP/1.1" STATUS), and one in the audit log.
RGW_LOG=$(dirname "$S3_STACK_ENV")/log/client.rgw.a.log
CODE_KEY=team/_code/s3proj/$HEAD.tar.gz
# uploads KEY: the upload requests (PUT, or a multipart POST) of KEY
uploads() {
	grep -cE "\"(PUT|POST) /$BUCKET/$1([?][^ ]*)? HTTP/" "$RGW_LOG"
}
code_puts_audited() {
	"$NAVETTE" audit show --json |
		json "len([e for e in d if e['action'] == 'storage.put' and (e.get('target') or '').endswith('$CODE_KEY')])"
}
# (--no-reuse: a second job of the same commit, whose code is not uploaded
# again; without it the first job would be reused)
nv_in "$R" run recipes/first-job.lua --wait --no-reuse
check_rc "a second run succeeds" 0
ID2=$(submitted_id)
# (radosgw writes its log asynchronously: the first upload shows first)
[ -r "$RGW_LOG" ] && wait_for 10 grep -E "$CODE_KEY HTTP/" "$RGW_LOG" >/dev/null
check_eq "one code archive in the store" \
	"$(s3ls team/_code/ | wc -l | tr -d ' ')" 1
if [ -r "$RGW_LOG" ]; then
	check_eq "the code archive is uploaded once per commit (server log)" \
		"$(uploads "$CODE_KEY")" 1
else
	skip "uploads counted in the server's log" "cannot read $RGW_LOG"
fi
check_eq "the code archive is uploaded once per commit (audit log)" \
	"$(code_puts_audited)" 1
check_eq "both runs record the same code" \
	"$(s3cat "team/s3proj/$ID2/result.txt" | grep commit=)" "commit=$HEAD"

# ---- the job's POST policy is its prefix, checked by the server ----------------

nv_in "$R" run recipes/hostile.lua --wait
check_rc "the hostile job itself succeeds" 0
HID=$(submitted_id)
CODES=$(s3cat "team/s3proj/$HID/codes.txt")
check_match "a POST under its own prefix is accepted (the form was read right)" \
	"$CODES" '^inside=20[014]$'
check_match "a POST elsewhere in the store is refused by the server" \
	"$CODES" '^outside=403$'
check_match "a POST at the bucket's root is refused by the server" \
	"$CODES" '^root=403$'
check_eq "nothing landed outside the prefix" \
	"$(s3ls "" | grep -c escape)" 0

# ---- no storage key reaches the job, nor any process it can read ----------

nv_in "$R" run recipes/creds.lua --wait
check_rc "the credential probe succeeds" 0
CRED=$(s3cat "team/s3proj/$(submitted_id)/creds.json")
CRED_NAMES='^AWS_|SECRET|TOKEN|PASSW|_KEY$|CREDENTIAL'
check_eq "the job's environment has no AWS_* or credential-shaped name" \
	"$(printf '%s' "$CRED" | json '"\n".join(sorted(d["env"]))' |
	grep -E "$CRED_NAMES" | tr '\n' ' ')" ""
if [ -e /proc/self/environ ] && { [ "$(id -u)" != 0 ] ||
	[ "$(uname)" = Linux ]; }; then
	# (Linux: the sandbox hides NAVETTE_HOME and the agent's process, even
	# from a job of root's)
	check_eq "the job cannot read the agent's environment" \
		"$(printf '%s' "$CRED" | json 'd["agent_names"]')" null
elif [ -e /proc/self/environ ]; then
	# root reads any process's: the agent's must hold no key
	check_eq "the agent's environment has no AWS_* or credential-shaped name" \
		"$(printf '%s' "$CRED" | json '"\n".join(d["agent_names"])' |
		grep -E "$CRED_NAMES" | tr '\n' ' ')" ""
else
	skip "the agent's environment as a job sees it" "no /proc here"
fi
case $CRED$(printf '%s' "$CRED" | tr -d ' ') in
*"$S3_SECRET_KEY"*) fail "the job saw the storage secret key" ;;
*) pass "the job never saw the storage secret key, even letter-spaced" ;;
esac

# ---- failures ---------------------------------------------------------------

nv_in "$R" run recipes/fail.lua --wait
check_rc "failing jobs: run --wait exits 1" 1
for name in exit3 missing; do
	FID=$(printf '%s\n' "$OUT" | sed -n "s/^job $name submitted: \([^ ]*\)$/\1/p")
	eval "ID_$name=\$FID"
done
check_eq "exit 3: failed" "$(st "$ID_exit3" 'd["state"]')" failed
check_eq "exit 3: in phase running" "$(st "$ID_exit3" 'd["failure"]["phase"]')" running
check_match "exit 3: the reason names the status" \
	"$(st "$ID_exit3" 'd["failure"]["reason"]')" 'status 3'
check_eq "exit 3: exit_code" "$(st "$ID_exit3" 'd["exit_code"]')" 3
check_eq "exit 3: only navette's objects under the prefix" \
	"$(s3ls "team/s3proj/$ID_exit3/" | grep -v '/navette-log/' |
	sed 's|.*/||' | tr '\n' ' ')" "navette-run.json navette-status navette.log "
check_match "exit 3: the published log has the output" \
	"$(s3cat "team/s3proj/$ID_exit3/navette.log")" '^about to fail$'
check_eq "exit 3: the record in S3 says failed at running" \
	"$(s3cat "team/s3proj/$ID_exit3/navette-run.json" |
	json 'd["state"] + " " + d["failure"]["phase"]')" "failed running"
check_eq "missing output: failed at outputs_published" \
	"$(st "$ID_missing" 'd["state"] + " " + d["failure"]["phase"]')" \
	"failed outputs_published"
check_contains "missing output: the reason names it" \
	"$(st "$ID_missing" 'd["failure"]["reason"]')" missing.txt
check_eq "missing output: other.txt is not published" \
	"$(s3ls "team/s3proj/$ID_missing/" | grep -c other.txt)" 0

# ---- logs shipped while the job runs -----------------------------------------

nv_in "$R" run recipes/chatty.lua
CID=$(submitted_id)
check_state "chatty: running" "$CID" 'running' 20
# a chunk is listed while the job waits for $CHATTY_GO: it was shipped
# before the job ended
chunk_listed() {
	"$NAVETTE" storage ls "s3://$BUCKET/team/s3proj/$CID/navette-log/" \
		"${EP[@]}" 2>/dev/null | grep 000001 >/dev/null
}
if wait_for 20 chunk_listed; then
	check_eq "chatty: a log chunk is in S3 before the job ends" \
		"$(job_state "$CID")" running
else
	fail "chatty: a log chunk is in S3 before the job ends (none listed in 20 s)"
fi
: >"$NAVETTE_HOME/jobs/$CID/home/go"
check_state "chatty: succeeded" "$CID" 'succeeded' 30
CHUNKS=$(s3ls "team/s3proj/$CID/navette-log/")
check_true "chatty: more than one chunk was shipped" \
	test "$(printf '%s\n' "$CHUNKS" | grep -c .)" -ge 2
: >"$T/joined"
for k in $CHUNKS; do s3cat "$k" >>"$T/joined"; done
s3cat "team/s3proj/$CID/navette.log" >"$T/final-log"
check_eq "chatty: the chunks joined are the published log" \
	"$(sha256 "$T/joined")" "$(sha256 "$T/final-log")"
check_eq "chatty: the log holds the six lines" \
	"$(grep -c '^line [1-6] 0*$' "$T/final-log")" 6

# ---- cancel -------------------------------------------------------------------

nv_in "$R" run recipes/sleepy.lua
SID=$(submitted_id)
check_state "sleepy: running" "$SID" running 20
nv cancel "$SID"
check_rc "cancel exits 0" 0
check_state "sleepy: cancelled" "$SID" cancelled 40
check_eq "sleepy: the record in S3 says cancelled" \
	"$(s3cat "team/s3proj/$SID/navette-run.json" | json 'd["state"]')" cancelled

# ---- lifetimes ------------------------------------------------------------

nv_in "$R" run recipes/long-limit.lua --profile short
check_rc "a time limit past the profile's URL lifetime is refused (3)" 3
check_contains "the refusal names max_url_lifetime" "$ERR$OUT" max_url_lifetime

# URLs of 4 s: the second job waits behind the first (one slot), its URLs
# expire before it starts, and the server refuses them. (The agent of the
# jobs above must be gone first, so the new one has one slot.)
wait_for 30 lock_is_free "$NAVETTE_HOME/agent.lock"
NAVETTE_AGENT_SLOTS=1 nv_in "$R" run recipes/late.lua --profile short --wait
check_rc "expired URLs: run --wait exits 1" 1
LID=$(printf '%s\n' "$OUT" | sed -n 's/^job late submitted: \([^ ]*\)$/\1/p')
check_eq "expired URLs: failed at data_ready" \
	"$(st "$LID" 'd["failure"]["phase"]')" data_ready
check_match "expired URLs: the server's answer is named" \
	"$(st "$LID" 'd["failure"]["reason"]')" 'HTTP 403.*AccessDenied'
check_contains "expired URLs: the hint says why" \
	"$(st "$LID" 'd["failure"]["hint"]')" url_margin

# ---- plan, and no secret anywhere -------------------------------------------

# (--no-reuse: the job would be reused, and a plan shows no launcher then)
nv_in "$R" plan recipes/first-job.lua --launcher --no-reuse
check_rc "plan on the S3 profile exits 0" 0
check_contains "plan shows the node launcher" "$OUT" "fetch_code"
check_no_match "plan shows no signature" "$OUT" \
	'(X-Amz-Signature=|x-amz-signature=)[0-9a-f]{16}'
for place in "$OUT" "$(cat "$NAVETTE_HOME"/jobs/*/log 2>/dev/null)"; do
	check_no_match "the secret key is nowhere in what navette printed" \
		"$place" "$S3_SECRET_KEY"
done
check_true "the secret key is nowhere under NAVETTE_HOME" \
	sh -c "! grep -r -a -q -F '$S3_SECRET_KEY' '$NAVETTE_HOME'"
: >"$T/published"
NPUB=0
for k in $(s3ls team/s3proj/); do
	case $k in */navette-run.json | */navette.log | */navette-status)
		s3cat "$k" >>"$T/published" && NPUB=$((NPUB + 1)) ;;
	esac
done
check_true "the jobs' logs, statuses and records were read back ($NPUB)" \
	test "$NPUB" -ge 20
check_true "the secret key is in no published log, status or record" \
	sh -c "! grep -a -q -F '$S3_SECRET_KEY' '$T/published'"
check_true "nor is the access key id" \
	sh -c "! grep -a -q -F '$S3_ACCESS_KEY' '$T/published'"

finish
