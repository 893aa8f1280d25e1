#!/usr/bin/env bash
# A team on shared services (issue 16): team.lua with alice (developer:
# submit, read-logs, image-pull, read the shared dataset, write her own
# outputs) and bob (developer, image maintainer: also image-push, and
# lead: admin),
# converged by `navette team apply` onto the real radosgw (users made
# through the admin API, a bucket policy) and the token service of the
# registry fixture (its team ACL file). The services themselves refuse
# what the roles do not give: alice writing under the shared dataset or
# bob's prefix (403 from radosgw), alice pushing an image (the token
# service grants pull only, the registry answers 401); bob's push works.
# bob's admin right: radosgw lets him delete under the shared dataset,
# the token service gives him delete (alice neither); only an admin's
# git identity may apply or revoke (navette's own check, exit 3).
# A second apply changes nothing. `navette team revoke alice` suspends
# her S3 user and removes her registry login, proves it (each of her
# credentials refused, the time measured) while bob's still work, and a
# later apply does not give her rights back. A member removed from
# team.lua loses her statements and login, and her user is suspended.
# apply and revoke act on the committed team.lua only (--plan reads the
# working tree's). Radosgw answers are read
# with curl --aws-sigv4, not navette. Needs S3_STACK_ENV and
# REGISTRY_STACK_ENV (ctest's fixtures "s3" and "registry"). A removed
# member's state is read from the services themselves: radosgw's admin API
# says her user is suspended, her key is refused as suspended, the
# bucket's policy and the token service's ACL no longer name her.
set -eu -o pipefail
. "$(dirname "$0")/../lib.sh"
set +e # each check reports its own failure; finish sets the status

use_s3_stack team
if [ ! -r "${REGISTRY_STACK_ENV:-}" ]; then
	echo "FAIL: REGISTRY_STACK_ENV is not set (ctest sets it)" >&2
	exit 1
fi
. "$REGISTRY_STACK_ENV"
CONF=$(dirname "$S3_STACK_ENV")/ceph.conf
if ! command -v radosgw-admin >/dev/null || [ ! -r "$CONF" ]; then
	skip "the team's services" "radosgw-admin or $CONF missing"
	finish
fi
rgw() { perl -e 'alarm 60; exec @ARGV or die' radosgw-admin -c "$CONF" "$@" 2>>"$T/radosgw-admin.err"; }
for u in alice bob; do rgw user rm --uid="$u" --purge-data >/dev/null 2>&1 || true; done
REGISTRY_TEAM_ACL_DIR=$(dirname "${REGISTRY_TEAM_ACL:-}")
need_dir REGISTRY_TEAM_ACL_DIR
rm -f "$REGISTRY_TEAM_ACL"
ADMIN=team-admin-$$
rgw user rm --uid="$ADMIN" --purge-data >/dev/null 2>&1 || true
rgw user create --uid="$ADMIN" --display-name="team admin" --caps="users=*" >"$T/admin.json" ||
	{ fail "radosgw-admin user create"; finish; }
export TEAM_ADMIN_AK TEAM_ADMIN_SK
TEAM_ADMIN_AK=$(json 'd["keys"][0]["access_key"]' <"$T/admin.json")
TEAM_ADMIN_SK=$(json 'd["keys"][0]["secret_key"]' <"$T/admin.json")
BUCKET=nv-team-$$-$RANDOM
nv storage mb "s3://$BUCKET" "${EP[@]}"
check_rc "the team's bucket is made (owner: the profile's store key)" 0
echo "the shared dataset" >"$T/d.txt"
nv storage cp "$T/d.txt" "s3://$BUCKET/datasets/d.txt" "${EP[@]}"
check_rc "the dataset is put by the owner" 0
# a statement of someone else's on the bucket, in IAM's Not forms (it
# denies nothing navette's users do): apply keeps it
cat >"$T/foreign.json" <<EOF
{"Version":"2012-10-17","Statement":[{"Sid":"ops-keep","Effect":"Deny","Principal":"*",
 "NotAction":["s3:*"],"NotResource":"arn:aws:s3:::$BUCKET/*"}]}
EOF
check_eq "the owner sets a policy of their own on the bucket" \
	"$(curl -s -o /dev/null -w '%{http_code}' --aws-sigv4 "aws:amz:$S3_REGION:s3" \
		-H 'x-amz-content-sha256: UNSIGNED-PAYLOAD' --user "$S3_ACCESS_KEY:$S3_SECRET_KEY" \
		-X PUT --data-binary @"$T/foreign.json" "$S3_ENDPOINT/$BUCKET?policy=")" 204

R=$(new_repo vision)
cat >"$R/navette.lua" <<EOF
return {
  name = "vision",
  default_profile = "dev",
  credentials = {
    ["rgw-admin"] = { kind = "s3", source = "env",
      env = { access_key_id = "TEAM_ADMIN_AK", secret_access_key = "TEAM_ADMIN_SK" } },
  },
  profiles = {
    dev = { storage = "s3://$BUCKET/runs/", require_pushed = false,
            s3 = { endpoint = "$S3_ENDPOINT", region = "$S3_REGION" },
            credentials = { "rgw-admin" } },
  },
}
EOF
cat >"$R/team.lua" <<EOF
return {
  name = "vision",
  members = {
    alice = { name = "Alice Martin", email = "alice@example.com",
              roles = { "developer" } },
    bob = { name = "Bob Stone", email = "bob@example.com",
            roles = { "developer", "images", "lead" } },
  },
  roles = {
    developer = { "submit", "read-logs", "image-pull",
                  ["data-read"] = { "s3://$BUCKET/datasets/" },
                  ["data-write"] = { "s3://$BUCKET/outputs/{member}/" },
                  quota = { gpus_per_job = 1, concurrent_jobs = 1 } },
    images = { "image-pull", "image-push" },
    lead = { "admin" },
  },
  services = {
    s3 = { profile = "dev", admin = "rgw-admin" },
    registry = { host = "$REGISTRY_TOKEN", repositories = { "vision/*" },
                 acl_file = "$REGISTRY_TEAM_ACL" },
  },
}
EOF
commit_all "$R" >/dev/null
HANDOFF=$NAVETTE_HOME/team/vision

# s3_code WHO METHOD KEY: radosgw's HTTP status for WHO's handed-over key
s3_code() {
	local pair
	pair=$(json 'd["AccessKeyId"] + ":" + d["SecretAccessKey"]' <"$HANDOFF/$1.s3.json")
	curl -s -o /dev/null -w '%{http_code}' --aws-sigv4 "aws:amz:$S3_REGION:s3" \
		-H 'x-amz-content-sha256: UNSIGNED-PAYLOAD' --user "$pair" \
		-X "$2" ${3:+--data-binary x} "$S3_ENDPOINT/$BUCKET/$3"
}
s3_get() { s3_code "$1" GET "$2"; }
s3_put() {
	local pair
	pair=$(json 'd["AccessKeyId"] + ":" + d["SecretAccessKey"]' <"$HANDOFF/$1.s3.json")
	curl -s -o /dev/null -w '%{http_code}' --aws-sigv4 "aws:amz:$S3_REGION:s3" \
		-H 'x-amz-content-sha256: UNSIGNED-PAYLOAD' --user "$pair" \
		-X PUT --data-binary x "$S3_ENDPOINT/$BUCKET/$2"
}
# registry_code WHO ACTIONS METHOD PATH: the registry's answer to WHO
# sending METHOD PATH (under /v2/vision/app/) with the token the token
# service gives WHO for ACTIONS on vision/app
registry_code() {
	local tok
	tok=$(curl -s -u "$(cat "$HANDOFF/$1.registry")" \
		"$REGISTRY_ISSUER/token?service=navette-test-registry&scope=repository:vision/app:$2" |
		json 'd.get("token", "")' 2>/dev/null)
	curl -s -o /dev/null -w '%{http_code}' -X "$3" -H "Authorization: Bearer $tok" \
		"http://$REGISTRY_TOKEN/v2/vision/app/$4"
}
# push_code WHO: starting a blob upload, asking for pull,push
push_code() { registry_code "$1" pull,push POST blobs/uploads/; }
# delete_code WHO: deleting a manifest that is not there: 404 once the
# token grants delete, 401 else
delete_code() {
	registry_code "$1" delete DELETE "manifests/sha256:$(printf '0%.0s' $(seq 64))"
}
# s3_error WHO KEY: the Code of radosgw's answer to WHO's GET of KEY
s3_error() {
	local pair
	pair=$(json 'd["AccessKeyId"] + ":" + d["SecretAccessKey"]' <"$HANDOFF/$1.s3.json")
	curl -s --aws-sigv4 "aws:amz:$S3_REGION:s3" \
		-H 'x-amz-content-sha256: UNSIGNED-PAYLOAD' --user "$pair" \
		"$S3_ENDPOINT/$BUCKET/$2" | sed -n 's/.*<Code>\([^<]*\)<\/Code>.*/\1/p'
}
# admin_user UID EXPR: EXPR (python, over d) of radosgw's admin API answer
# about user UID (GET /admin/user, signed with the admin user's key; the
# query in sorted order: curl 7.88 signs it as written)
admin_user() {
	curl -s --aws-sigv4 "aws:amz:$S3_REGION:s3" \
		-H 'x-amz-content-sha256: UNSIGNED-PAYLOAD' \
		--user "$TEAM_ADMIN_AK:$TEAM_ADMIN_SK" \
		"$S3_ENDPOINT/admin/user?format=json&uid=$1" | json "$2" 2>&1
}
# policy_names UID: the Sids of the bucket's statements (radosgw's copy,
# read with the owner's key) whose principal is user UID
policy_names() {
	curl -s --aws-sigv4 "aws:amz:$S3_REGION:s3" \
		-H 'x-amz-content-sha256: UNSIGNED-PAYLOAD' \
		--user "$S3_ACCESS_KEY:$S3_SECRET_KEY" "$S3_ENDPOINT/$BUCKET?policy=" |
		json "sorted(s['Sid'] for s in d['Statement'] if 'user/$1\"' in json.dumps(s.get('Principal')))"
}
login_code() {
	curl -s -o /dev/null -w '%{http_code}' -u "$(cat "$HANDOFF/$1.registry")" \
		"$REGISTRY_ISSUER/token?service=navette-test-registry&scope=repository:vision/app:pull"
}

nv_in "$R" team show
check_rc "team show: the policy is valid" 0
check_match "it lists the members and their roles" "$OUT" "bob +bob@example.com +developer, images"

nv_in "$R" team apply --plan
check_rc "team apply --plan" 0
check_match "the plan shows each change before anything is made" "$OUT" \
	"^team vision \(plan: nothing is changed\): 4 changes"
check_match "... the users" "$OUT" '^  \+ s3 user alice \(Alice Martin <alice@example.com>\)'
check_match "... the bucket policy" "$OUT" "^  ~ s3 bucket policy of $BUCKET: 7 statements of team vision, 1 other statement\(s\) kept$"
check_match "... the registry ACL" "$OUT" "alice \(vision/\* pull\), bob \(vision/\* pull,push,delete\)"
check_false "the plan made no user" rgw user info --uid=alice
check_absent "nor the ACL file" "$REGISTRY_TEAM_ACL"

nv_in "$R" team apply
check_rc "team apply by a git identity that is no admin: refused (exit 3)" 3
check_match "saying who may" "$ERR" "team apply: only an admin of team vision \(bob\) changes its services"
check_false "nothing was made" rgw user info --uid=alice
git -C "$R" config user.email alice@example.com
nv_in "$R" team apply
check_rc "nor by alice, a member without admin" 3
check_match "saying so" "$ERR" "your git identity alice@example.com is member alice, without admin"
git -C "$R" config user.email bob@example.com

nv_in "$R" team apply
check_rc "team apply" 0
check_match "it made the changes" "$OUT" "^team vision: 4 changes"
check_true "radosgw user alice exists" rgw user info --uid=alice
check_eq "alice's key is handed over 0600" \
	"$(python3 -c 'import os,sys; print(oct(os.stat(sys.argv[1]).st_mode & 0o777))' "$HANDOFF/alice.s3.json")" 0o600
nv_in "$R" team apply
check_rc "a second apply" 0
check_match "changes nothing and says so" "$OUT" "^team vision: no changes"

# ---- the services enforce the roles ---------------------------------------
check_eq "alice reads the shared dataset" "$(s3_get alice datasets/d.txt)" 200
check_eq "alice writes her own outputs" "$(s3_put alice outputs/alice/model.bin)" 200
check_eq "radosgw refuses alice writing under the shared dataset" "$(s3_put alice datasets/evil.txt)" 403
check_eq "... and under bob's outputs" "$(s3_put alice outputs/bob/x.bin)" 403
check_eq "... and in the runs of the store" "$(s3_put alice runs/x)" 403
check_eq "bob writes his outputs" "$(s3_put bob outputs/bob/model.bin)" 200
check_eq "radosgw refuses alice deleting the shared dataset" "$(s3_code alice DELETE datasets/d.txt)" 403
check_eq "... and deleting her own outputs: no role but admin deletes" "$(s3_code alice DELETE outputs/alice/model.bin)" 403
echo "a file of the dataset" >"$T/old.txt"
nv storage cp "$T/old.txt" "s3://$BUCKET/datasets/old.txt" "${EP[@]}"
check_eq "bob, an admin, deletes a file of the shared dataset" "$(s3_code bob DELETE datasets/old.txt)" 204
check_eq "bob, an admin, writes under alice's outputs" "$(s3_put bob outputs/alice/fix.bin)" 200
check_eq "an admin's key deletes nothing outside the team's prefixes" "$(s3_code bob DELETE runs/x)" 403
check_eq "the token service gives bob, an admin, delete" "$(delete_code bob)" 404
check_eq "... and not alice: the registry refuses her DELETE" "$(delete_code alice)" 401
check_eq "alice cannot read bob's outputs" "$(s3_get alice outputs/bob/model.bin)" 403
check_eq "bob, an admin, reads alice's" "$(s3_get bob outputs/alice/model.bin)" 200
check_eq "the registry refuses alice's push (her token grants pull only)" "$(push_code alice)" 401
check_eq "bob's push is accepted" "$(push_code bob)" 202
check_match "the token service gave alice pull only" \
	"$(curl -s "$REGISTRY_ISSUER/_log")" "^alice repository:vision/app:pull,push -> repository:vision/app:pull$"

# ---- identity per submission ----------------------------------------------
put_file "$R" recipes/hello.lua <<'EOF'
local navette = require "navette"
navette.job { name = "hello", command = { "sh", "-c", "echo hello" } }
EOF
commit_all "$R" >/dev/null
git -C "$R" config user.email alice@example.com
nv_in "$R" run recipes/hello.lua --profile dev --wait
check_rc "alice's job runs" 0
JOB=$(printf '%s\n' "$OUT" | sed -n 's/^job hello submitted: \(.*\)$/\1/p')
check_match "its run record names her as the submitter" \
	"$(s3cat "runs/vision/$JOB/navette-run.json" | json 'd["submitted_by"]')" \
	"^alice <alice@example.com> [^ ]+@[^ ]+$"
check_eq "with read-logs, alice reads her job's record with her own key" \
	"$(s3_get alice "runs/vision/$JOB/navette-run.json")" 200
check_eq "... and its log" "$(s3_get alice "runs/vision/$JOB/navette.log")" 200
check_match "the audit lines carry her identity" \
	"$(tail -1 "$NAVETTE_HOME/audit/audit.jsonl")" '"identity":"alice <alice@example.com> '

# ---- revocation -----------------------------------------------------------
nv_in "$R" team revoke alice
check_rc "alice cannot revoke anyone (no admin): exit 3" 3
check_eq "... her registry login still works" "$(login_code alice)" 200
git -C "$R" config user.email bob@example.com
nv_in "$R" team revoke alice
check_rc "team revoke alice: every credential refused (exit 0)" 0
check_match "it suspends her S3 user" "$OUT" "s3: user alice suspended"
check_match "and removes her registry login" "$OUT" "registry: alice's login and rights removed"
check_match "the proof: radosgw refuses her key" "$OUT" "^  s3 +key \.\.\.[A-Z0-9]{4} +refused: UserSuspended"
check_match "the proof: the token service refuses her login" "$OUT" "^  registry +login alice +refused: .*HTTP 401"
check_match "and the time it took" "$OUT" "^from the command to the last refusal: [0-9]+\.[0-9]{2} s$"
REVOKE_S=$(printf '%s\n' "$OUT" | sed -n 's/^from the command to the last refusal: \([0-9.]*\) s$/\1/p')
echo "revocation took $REVOKE_S s"
check_true "within seconds" python3 -c "import sys; sys.exit(0 if float('$REVOKE_S') < 5 else 1)"
check_eq "radosgw refuses alice's read now" "$(s3_get alice datasets/d.txt)" 403
check_eq "the token service refuses her login" "$(login_code alice)" 401
check_eq "bob still reads" "$(s3_get bob datasets/d.txt)" 200
check_eq "bob still pushes" "$(push_code bob)" 202
check_match "the audit log has the revocation" "$("$NAVETTE" audit show 2>/dev/null)" "team\.revoke +ok +alice"
nv_in "$R" team apply
check_rc "an apply of the unchanged team.lua" 0
check_no_match "gives alice nothing back" "$OUT" "new login for alice|enabled again"
check_eq "her login stays refused" "$(login_code alice)" 401
check_eq "her S3 user stays suspended" "$(s3_get alice datasets/d.txt)" 403

git -C "$R" config user.email alice@example.com
nv_in "$R" run recipes/hello.lua --profile dev
check_rc "a run as the revoked alice is refused (exit 3)" 3
check_match "saying so" "$ERR" "team member alice is revoked"
git -C "$R" config user.email bob@example.com
nv_in "$R" run recipes/hello.lua --profile dev --wait
check_rc "bob's run still goes" 0

# ---- a credential two members share is a finding ----------------------------
cp "$R/team.lua" "$T/team.lua.kept"
python3 - "$R/team.lua" <<'PY'
import sys
p = sys.argv[1]
s = open(p).read()
s = s.replace('roles = { "developer" } },', 'roles = { "developer" }, keys = { "AKIASHAREDKEY01" } },', 1)
s = s.replace('roles = { "developer", "images", "lead" } },', 'roles = { "developer", "images", "lead" }, keys = { "AKIASHAREDKEY01" } },', 1)
open(p, "w").write(s)
PY
nv_in "$R" doctor --profile dev
check_match "navette doctor reports a credential alice and bob share" "$OUT" \
	"warn +team: members alice and bob share the credential AKIASH"
nv_in "$R" team apply --plan
check_match "so does team apply --plan" "$OUT" "^  ! members alice and bob share the credential"
cp "$T/team.lua.kept" "$R/team.lua"

# ---- a member removed from team.lua -------------------------------------------
rgw user rm --uid=dora --purge-data >/dev/null 2>&1 || true
python3 - "$R/team.lua" <<'PY'
import sys
p = sys.argv[1]
s = open(p).read()
s = s.replace('  members = {\n', '  members = {\n    dora = { name = "Dora", email = "dora@example.com", roles = { "developer" } },\n', 1)
open(p, "w").write(s)
PY
git -C "$R" config user.email bob@example.com
nv_in "$R" team apply
check_rc "apply of a team.lua not committed: refused (exit 3)" 3
check_match "saying so" "$ERR" "team.lua has changes not committed: the services are converged to the committed policy only"
check_false "dora was not made" rgw user info --uid=dora
nv_in "$R" team revoke bob
check_rc "nor does revoke act on it" 3
commit_all "$R" >/dev/null
nv_in "$R" team apply
check_rc "apply with dora added" 0
check_eq "dora reads the dataset" "$(s3_get dora datasets/d.txt)" 200
check_eq "dora logs in to the token service" "$(login_code dora)" 200
check_eq "radosgw's admin API: her user is active" "$(admin_user dora 'bool(d["suspended"])')" false
check_ne "the bucket's policy names her" "$(policy_names dora)" "[]"
check_true "the token service's ACL names her" grep -q dora "$REGISTRY_TEAM_ACL"
# revoke's proof fails when a credential is still accepted: dora's
# handed-over key, swapped for bob's (which revoke leaves alone), is tried
# as hers; --readmit then lets her back in
cp "$HANDOFF/dora.s3.json" "$T/dora.s3.json.kept"
cp "$HANDOFF/bob.s3.json" "$HANDOFF/dora.s3.json"
nv_in "$R" team revoke dora
check_rc "a revoke whose proof finds a credential still accepted: exit 1" 1
check_match "the proof names it" "$OUT" "^  s3 +key \.\.\.[A-Z0-9]{4} +STILL ACCEPTED: "
check_match "and says so" "$ERR" "1 credential\(s\) of dora still accepted"
cp "$T/dora.s3.json.kept" "$HANDOFF/dora.s3.json"
nv_in "$R" team apply --readmit dora
check_rc "apply --readmit dora" 0
check_eq "dora reads the dataset again" "$(s3_get dora datasets/d.txt)" 200
cp "$T/team.lua.kept" "$R/team.lua"
nv_in "$R" team apply --plan
check_match "with dora removed, apply --plan (of the change not committed yet) suspends her user" "$OUT" \
	"^  ~ s3 user dora \(made for team vision, not in team.lua any more\): suspended$"
commit_all "$R" >/dev/null
nv_in "$R" team apply
check_rc "apply with dora removed" 0
check_eq "radosgw refuses dora's key" "$(s3_get dora datasets/d.txt)" 403
check_eq "... because her user is suspended (not only her statements gone)" \
	"$(s3_error dora datasets/d.txt)" UserSuspended
check_eq "radosgw's admin API: her user is suspended" "$(admin_user dora 'bool(d["suspended"])')" true
check_eq "the bucket's policy names her no more" "$(policy_names dora)" "[]"
check_false "nor does the token service's ACL" grep -q dora "$REGISTRY_TEAM_ACL"
check_eq "the token service refuses her login" "$(login_code dora)" 401
check_eq "bob still reads" "$(s3_get bob datasets/d.txt)" 200
nv_in "$R" team apply
check_no_match "the next apply has nothing more about her" "$OUT" dora

# a statement with the team's Sid written by someone else, naming the
# radosgw admin user: apply drops it and suspends nobody
cat >"$T/forged.json" <<EOF
{"Version":"2012-10-17","Statement":[{"Sid":"navette-team-6-vision-forged","Effect":"Allow",
 "Principal":{"AWS":["arn:aws:iam:::user/$ADMIN"]},"Action":"s3:GetObject","Resource":"arn:aws:s3:::$BUCKET/x"}]}
EOF
check_eq "the owner puts a statement with the team's Sid, naming the admin user" \
	"$(curl -s -o /dev/null -w '%{http_code}' --aws-sigv4 "aws:amz:$S3_REGION:s3" \
		-H 'x-amz-content-sha256: UNSIGNED-PAYLOAD' --user "$S3_ACCESS_KEY:$S3_SECRET_KEY" \
		-X PUT --data-binary @"$T/forged.json" "$S3_ENDPOINT/$BUCKET?policy=")" 204
nv_in "$R" team apply
check_rc "apply" 0
check_match "reports the user the forged statement names" "$OUT" \
	"^  ! s3 user $ADMIN is named by team vision's statements on bucket $BUCKET but not in team.lua"
check_true "and does not suspend them" sh -c "radosgw-admin -c '$CONF' user info --uid='$ADMIN' 2>/dev/null | grep -q '\"suspended\": 0'"
check_eq "bob still reads (the team's statements are back)" "$(s3_get bob datasets/d.txt)" 200

# ---- misuse ------------------------------------------------------------------
nv_in "$R" team apply --readmit carol
check_rc "--readmit of an unknown member: usage (exit 2)" 2
finish
