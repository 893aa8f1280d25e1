#!/usr/bin/env bash
# Archiving old jobs' logs and run records (issue 15, archive-logs) against
# the real radosgw of the ctest fixture "s3": three jobs run on the local
# backend with an s3:// store; two are made old by their run records (the
# record's times moved 40 days back and the record put back with `navette
# storage cp`: the recipe's notion of age is the record's own time, as in
# production, so the test changes the record, not the recipe), one stays
# recent. recipes/maintenance/archive-logs.lua then runs through `navette
# maintain --once`: the archive holds the copies and a manifest whose
# sha256 values are those of the objects read back (shasum -a 256) and of
# the originals; the old jobs' logs and records are gone, their outputs
# still there; the recent job is untouched; the lifecycle rule is on the
# bucket (read back with a SigV4 curl); the audit log has the lines; a
# second run has nothing to archive; a job whose copies were made but
# whose manifest was not (a run stopped there) is completed by the next
# run; --plan changes nothing; a bucket with a rule navette did not write
# keeps it.
# Needs S3_STACK_ENV (the stack's users.env), set by ctest.
set -eu -o pipefail
. "$(dirname "$0")/../lib.sh"
set +e # each check reports its own failure; finish sets the status

use_s3_stack archive

nv storage mb "s3://$BUCKET" "${EP[@]}"
check_rc "the test bucket is created" 0

R=$T/proj
mkdir -p "$R/recipes/maintenance"
cat >"$R/navette.lua" <<EOF
return { name = "arch", default_profile = "s3",
  maintenance = { "recipes/maintenance/archive-logs.lua" },
  profiles = { s3 = { backend = "local", storage = "s3://$BUCKET/team/",
    require_pushed = false,
    s3 = { endpoint = "$S3_ENDPOINT", region = "$S3_REGION" } } } }
EOF
put_file "$R" recipes/jobs.lua <<'EOF'
local navette = require "navette"
for _, name in ipairs { "one", "two", "three" } do
  navette.job {
    name = name,
    command = { "sh", "-c", "echo log of " .. name .. "; echo out-" .. name
                .. " >\"$NAVETTE_OUTPUTS/out.txt\"" },
  }
end
EOF
cp "$NAVETTE_SOURCE/recipes/maintenance/archive-logs.lua" "$R/recipes/maintenance/"
git -C "$R" init -q
commit_all "$R" >/dev/null

maintain() { nv_in "$R" maintain "$@"; }

# s3keys PREFIX: the keys of BUCKET under PREFIX, one a line, sorted
s3keys() {
	"$NAVETTE" storage ls "s3://$BUCKET/$1" --recursive "${EP[@]}" 2>"$T/ls.err" |
		awk '{ print $NF }' | LC_ALL=C sort
}
# s3sum KEY: shasum -a 256 of the object's bytes (nothing when unreadable)
s3sum() {
	rm -f "$T/sum.obj"
	"$NAVETTE" storage cp "s3://$BUCKET/$1" "$T/sum.obj" "${EP[@]}" >/dev/null 2>&1 &&
		sha256 "$T/sum.obj"
}
# signed SigV4 request with curl: s3req METHOD PATH-AND-QUERY [DATA-FILE]
s3req() {
	curl -sS --max-time 10 -X "$1" --aws-sigv4 "aws:amz:$S3_REGION:s3" \
		--user "$S3_ACCESS_KEY:$S3_SECRET_KEY" \
		-H 'x-amz-content-sha256: UNSIGNED-PAYLOAD' \
		${3:+-H "Content-MD5: $(openssl md5 -binary "$3" | openssl base64)" --data-binary "@$3"} \
		"$S3_ENDPOINT/$2"
}

nv_in "$R" run recipes/jobs.lua --wait
check_rc "three jobs run on the local backend with an s3:// store" 0
IDS=$(printf '%s\n' "$OUT" | sed -n 's/^job .* submitted: \([^ ]*\)$/\1/p')
ONE=$(printf '%s\n' "$IDS" | sed -n 1p)
TWO=$(printf '%s\n' "$IDS" | sed -n 2p)
THREE=$(printf '%s\n' "$IDS" | sed -n 3p)
check_ne "three job ids" "$THREE" ""
P=team/arch
LAYOUT=$(s3keys "$P/$ONE/")
check_contains "a job publishes its log" "$LAYOUT" "$P/$ONE/navette.log"
check_contains "... its run record" "$LAYOUT" "$P/$ONE/navette-run.json"
check_contains "... its output" "$LAYOUT" "$P/$ONE/out.txt"

# make ONE and TWO 40 days old: every time of the record moved back
age_record() {
	rm -f "$T/rec.json"
	"$NAVETTE" storage cp "s3://$BUCKET/$P/$1/navette-run.json" "$T/rec.json" "${EP[@]}" >/dev/null 2>&1 ||
		{ fail "reading the record of $1"; return; }
	python3 - "$T/rec.json" <<'PY' || fail "editing the record of $1"
import datetime, json, re, sys
p = sys.argv[1]
text = open(p).read()
def back(m):
    t = datetime.datetime.strptime(m.group(2)[:19], "%Y-%m-%dT%H:%M:%S")
    t -= datetime.timedelta(days=40)
    return '"%s": "%s"' % (m.group(1), t.strftime("%Y-%m-%dT%H:%M:%SZ"))
text = re.sub(r'"(at|finished_at)"\s*:\s*"(\d{4}-\d\d-\d\dT[\d:.]+Z)"', back, text)
json.loads(text)
open(p, "w").write(text)
PY
	"$NAVETTE" storage cp "$T/rec.json" "s3://$BUCKET/$P/$1/navette-run.json" "${EP[@]}" >/dev/null 2>&1 ||
		fail "putting back the record of $1"
}
age_record "$ONE"
age_record "$TWO"
# TWO also has shipped log chunks, as a node launcher leaves them
printf 'chunk one\n' >"$T/c1"
printf 'chunk two\n' >"$T/c2"
nv storage cp "$T/c1" "s3://$BUCKET/$P/$TWO/navette-log/000001" "${EP[@]}"
nv storage cp "$T/c2" "s3://$BUCKET/$P/$TWO/navette-log/000002" "${EP[@]}"

# what the originals hold, before: "KEY SHA256" lines (bash 3.2 on macOS
# has no associative arrays)
: >"$T/sums"
for id in "$ONE" "$TWO"; do
	for k in $(s3keys "$P/$id/"); do echo "$k $(s3sum "$k")" >>"$T/sums"; done
done
sum_of() { awk -v k="$1" '$1 == k { print $2 }' "$T/sums"; }
# navette's objects of ONE and of both (the outputs stay)
MOVED_ONE=$(grep -c "^$P/$ONE/navette" "$T/sums")
MOVED=$(grep -c "^$P/[^ ]*/navette" "$T/sums")
THREE_BEFORE=$(s3keys "$P/$THREE/")
check_contains "the recent job has its record" "$THREE_BEFORE" "$P/$THREE/navette-run.json"

# A run stopped after its copies: TWO's objects already in the archive,
# no manifest (laid out as the recipe copies them)
A=team/_archive/arch
# no manifest; its copy of the status object is stale (the recipe must not
# take a copy it has not checked)
for k in $(s3keys "$P/$TWO/"); do
	case $k in */out.txt) continue ;; esac
	"$NAVETTE" storage cp "s3://$BUCKET/$k" "$T/pre.obj" "${EP[@]}" >/dev/null 2>&1 &&
		{ case $k in */navette-status) echo stale >"$T/pre.obj" ;; esac; } &&
		"$NAVETTE" storage cp "$T/pre.obj" "s3://$BUCKET/$A/$TWO/${k#"$P/$TWO/"}" "${EP[@]}" >/dev/null 2>&1 ||
		fail "laying out the stopped run's copy of $k"
done
check_eq "the stopped run left copies and no manifest" \
	"$(s3keys "$A/$TWO/" | grep -c manifest.json)" 0

# ONE's record and log as they are, for a run stopped while deleting
"$NAVETTE" storage cp "s3://$BUCKET/$P/$ONE/navette-run.json" "$T/one-rec" "${EP[@]}" >/dev/null 2>&1 &&
	"$NAVETTE" storage cp "s3://$BUCKET/$P/$ONE/navette.log" "$T/one-log" "${EP[@]}" >/dev/null 2>&1 ||
	fail "keeping ONE's record and log"

ALL_BEFORE=$(s3keys "")

# ---- --plan: lists, changes nothing -------------------------------------------
# (a plan reads no object: a job's age is its record's upload time, so a
# copy of the recipe whose policy archives every job shows the steps)
sed 's/older_than_days = 30,/older_than_days = 0,/' \
	"$R/recipes/maintenance/archive-logs.lua" >"$R/recipes/maintenance/archive-now.lua"
commit_all "$R" >/dev/null
sleep 1
maintain --plan recipes/maintenance/archive-now.lua
check_rc "maintain --plan runs the task in plan mode" 0
check_contains "the plan lists the copies" "$OUT" "storage copy: s3://$BUCKET/$A/$THREE/navette.log <- "
check_contains "... the manifest" "$OUT" "$A/$THREE/manifest.json"
check_contains "... the deletions" "$OUT" "storage delete: s3://$BUCKET/$P/$THREE/navette-run.json"
check_contains "... the lifecycle rule" "$OUT" "storage lifecycle: s3://$BUCKET/team/_archive/: expire after 365 days"
check_contains "... and what it would do" "$OUT" "would archive 3 job(s)"
check_eq "and changes nothing" "$(s3keys "")" "$ALL_BEFORE"
check_eq "no lifecycle rule yet" \
	"$(s3req GET "$BUCKET?lifecycle=" | sed -n 's:.*<Code>\([^<]*\)</Code>.*:\1:p')" \
	NoSuchLifecycleConfiguration

# ---- the run ------------------------------------------------------------------
AUDIT=$NAVETTE_HOME/audit/audit.jsonl
AUDIT_BEFORE=$(wc -l <"$AUDIT" | tr -d ' ')
maintain --once recipes/maintenance/archive-logs.lua
check_rc "maintain --once archives" 0
check_contains "the task succeeds and says what it did" "$OUT" \
	"task archive-logs (recipes/maintenance/archive-logs.lua): ok"
check_contains "two jobs, their logs, records and status objects" "$OUT" \
	"archived 2 job(s), $MOVED object(s)"
check_contains "the rule is applied" "$OUT" "lifecycle rule applied"

for id in "$ONE" "$TWO"; do
	check_eq "job $id: only its outputs are left" "$(s3keys "$P/$id/")" "$P/$id/out.txt"
	check_eq "job $id: the output is untouched" "$(s3sum "$P/$id/out.txt")" "$(sum_of "$P/$id/out.txt")"
	rm -f "$T/manifest.json"
	"$NAVETTE" storage cp "s3://$BUCKET/$A/$id/manifest.json" "$T/manifest.json" "${EP[@]}" >/dev/null 2>&1
	check_file "job $id: the manifest is in the archive" "$T/manifest.json"
	# each entry: the copy read back and the original had that sha256
	bad=0
	n=0
	while IFS=' ' read -r key orig size sum; do
		n=$((n + 1))
		[ "$(s3sum "$key")" = "$sum" ] || { bad=1; echo "copy $key: sha256 differs" >&2; }
		[ "$(sum_of "$orig")" = "$sum" ] || { bad=1; echo "original $orig: sha256 differs" >&2; }
		[ "$key" = "$A/$id/${orig#"$P/$id/"}" ] || { bad=1; echo "key $key for $orig" >&2; }
	done < <(json '"\n".join("%s %s %d %s" % (o["key"], o["original"], o["size"], o["sha256"]) for o in d["objects"])' <"$T/manifest.json" |
		sed "s:^:team/:; s: : team/:")
	check_eq "job $id: every copy's and original's sha256 is the manifest's" "$bad" 0
	check_eq "job $id: the manifest lists the archive" \
		"$(s3keys "$A/$id/" | grep -vc manifest.json)" "$n"
done
check_eq "job $TWO: its chunks are archived too" \
	"$(s3keys "$A/$TWO/navette-log/" | wc -l | tr -d ' ')" 2
check_eq "the recent job is untouched" "$(s3keys "$P/$THREE/")" "$THREE_BEFORE"
check_eq "... and not archived" "$(s3keys "$A/$THREE/")" ""

LC=$(s3req GET "$BUCKET?lifecycle=")
check_contains "the lifecycle rule is on the bucket" "$LC" "<ID>navette-archive-logs</ID>"
check_contains "... for the archive prefix" "$LC" "<Prefix>team/_archive/</Prefix>"
check_contains "... after 365 days" "$LC" "<Days>365</Days>"

audit_actions() {
	python3 -c '
import collections, json, sys
lines = open(sys.argv[1]).read().splitlines()[int(sys.argv[2]):]
acts = collections.Counter(json.loads(l).get("action") for l in lines if l.strip())
print(" ".join("%s=%d" % (a, acts[a]) for a in ("storage.lifecycle", "storage.copy", "storage.put", "storage.delete", "task.run")))' "$AUDIT" "$1"
}
# ONE's objects copied, and TWO's stale status copy again (its other
# copies were there already and checked), two manifests, every original
# of both deleted
check_eq "the audit log has the archive's lines" "$(audit_actions "$AUDIT_BEFORE")" \
	"storage.lifecycle=1 storage.copy=$((MOVED_ONE + 1)) storage.put=2 storage.delete=$MOVED task.run=1"
nv audit verify
check_rc "the audit chain verifies" 0

# ---- a run stopped while deleting: the record (deleted last) still there ------
"$NAVETTE" storage cp "s3://$BUCKET/$A/$ONE/manifest.json" "$T/manifest-one" "${EP[@]}" >/dev/null 2>&1
"$NAVETTE" storage cp "$T/one-rec" "s3://$BUCKET/$P/$ONE/navette-run.json" "${EP[@]}" >/dev/null 2>&1 &&
	"$NAVETTE" storage cp "$T/one-log" "s3://$BUCKET/$P/$ONE/navette.log" "${EP[@]}" >/dev/null 2>&1 ||
	fail "putting back ONE's record and log"
AUDIT_BEFORE=$(wc -l <"$AUDIT" | tr -d ' ')
rm -f "$NAVETTE_HOME/tasks.db"
maintain --once recipes/maintenance/archive-logs.lua
check_rc "the next run finishes the job" 0
check_contains "it archives that job" "$OUT" "archived 1 job(s), $MOVED_ONE object(s)"
check_eq "its originals are gone, its output stays" "$(s3keys "$P/$ONE/")" "$P/$ONE/out.txt"
rm -f "$T/manifest-again"
"$NAVETTE" storage cp "s3://$BUCKET/$A/$ONE/manifest.json" "$T/manifest-again" "${EP[@]}" >/dev/null 2>&1
check_eq "the manifest still lists every copy (the ones whose originals were gone too)" \
	"$(cat "$T/manifest-again" 2>&1)" "$(cat "$T/manifest-one" 2>&1)"
check_eq "the copies were checked, not made again" "$(audit_actions "$AUDIT_BEFORE")" \
	"storage.lifecycle=0 storage.copy=0 storage.put=1 storage.delete=2 task.run=1"

# ---- a second run: nothing to do ------------------------------------------------
AUDIT_BEFORE=$(wc -l <"$AUDIT" | tr -d ' ')
ALL_AFTER=$(s3keys "")
rm -f "$NAVETTE_HOME/tasks.db"
maintain --once recipes/maintenance/archive-logs.lua
check_rc "a second run succeeds" 0
check_contains "it has nothing to archive" "$OUT" "nothing to archive"
check_contains "the rule is there already" "$OUT" "lifecycle rule present"
check_eq "it changes nothing" "$(s3keys "")" "$ALL_AFTER"
check_eq "its only audit line is the task's" "$(audit_actions "$AUDIT_BEFORE")" \
	"storage.lifecycle=0 storage.copy=0 storage.put=0 storage.delete=0 task.run=1"

# ---- a bucket whose lifecycle rules someone else wrote ---------------------------
cat >"$T/theirs.xml" <<'EOF'
<LifecycleConfiguration><Rule><ID>theirs</ID><Filter><Prefix>tmp/</Prefix></Filter><Status>Enabled</Status><Expiration><Days>7</Days></Expiration></Rule></LifecycleConfiguration>
EOF
s3req PUT "$BUCKET?lifecycle=" "$T/theirs.xml" >/dev/null
check_contains "their rule is set" "$(s3req GET "$BUCKET?lifecycle=")" "<ID>theirs</ID>"
rm -f "$NAVETTE_HOME/tasks.db"
maintain --once recipes/maintenance/archive-logs.lua
check_rc "the task still succeeds" 0
check_contains "it says why it wrote no rule" "$OUT" "no lifecycle rule: the bucket has 1 lifecycle rule(s) that navette did not write"
LC=$(s3req GET "$BUCKET?lifecycle=")
check_contains "their rule is kept" "$LC" "<ID>theirs</ID>"
check_no_match "and navette's not forced in" "$LC" "navette-archive-logs"

finish
