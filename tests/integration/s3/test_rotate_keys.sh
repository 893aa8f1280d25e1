#!/usr/bin/env bash
# Rotating a radosgw user's S3 key (issue 15, rotate-keys) against the real
# radosgw of the ctest fixture "s3": the primitives (navette.storage.keys,
# create_key, remove_key, check_credential; navette.creds.store into a
# 0600 file) through rotate_keys_host.lua, then the recipe
# recipes/maintenance/rotate-keys.lua end to end through `navette maintain
# --once`: the new key works (a put and a get), the old one gets 403
# InvalidAccessKeyId, the stored file holds the new key (key ids compared,
# no secret printed), the audit log has the lines, a second rotation
# converges (one key left), and a rotation stopped after its key creation
# is converged by the next run (one key left, the newest).
# The admin (caps users=*) and service users are made here with
# radosgw-admin and the stack's ceph.conf, beside S3_STACK_ENV.
# Needs S3_STACK_ENV (the stack's users.env), set by ctest.
set -eu -o pipefail
. "$(dirname "$0")/../lib.sh"
set +e # each check reports its own failure; finish sets the status

use_s3_stack rotate
CONF=$(dirname "$S3_STACK_ENV")/ceph.conf
if ! command -v radosgw-admin >/dev/null || [ ! -r "$CONF" ]; then
	skip "rotation against radosgw" "radosgw-admin or $CONF missing"
	finish
fi
# (bounded by perl's alarm: macOS has no timeout(1))
rgw() { perl -e 'alarm 60; exec @ARGV or die' radosgw-admin -c "$CONF" "$@" 2>>"$T/radosgw-admin.err"; }
rand() { python3 -c "import secrets,sys; print(secrets.token_hex(int(sys.argv[1])))" "$1"; }

# key_ids UID: the user's S3 access key ids, one a line, as radosgw-admin
# sees them (the secrets never leave python)
key_ids() {
	rgw user info --uid="$1" | json '"\n".join(k["access_key"] for k in d["keys"])'
}

# make_user UID [CAPS]: a fresh user (a leftover of an earlier run removed);
# its first key's id in FIRST_AK, the pair in the file $T/UID.json
make_user() {
	rgw user rm --uid="$1" --purge-data >/dev/null || true
	rgw user create --uid="$1" --display-name="navette $1" \
		${2:+--caps="$2"} >"$T/$1.json" ||
		{ fail "radosgw-admin user create $1"; finish; }
	FIRST_AK=$(json 'd["keys"][0]["access_key"]' <"$T/$1.json")
}

# absent WHAT TEXT SECRET...: no secret is in TEXT (a failure never shows
# the secret)
absent() {
	local what=$1 text=$2 s
	shift 2
	for s in "$@"; do
		case $text in *"$s"*)
			fail "$what (a secret is in the output)"
			return ;;
		esac
	done
	pass "$what"
}

# ---- the primitives -------------------------------------------------------
export S3_ACCESS_KEY S3_SECRET_KEY
nv storage mb "s3://$BUCKET" "${EP[@]}"
check_rc "the bucket of the profile (its audit mirror) is made" 0
export ROT_BUCKET=$BUCKET
ADMIN=rot-admin-$$
make_user "$ADMIN" "users=*"
export ROT_ADMIN_AK=$FIRST_AK
ROT_ADMIN_SK=$(json 'd["keys"][0]["secret_key"]' <"$T/$ADMIN.json")
export ROT_ADMIN_SK
export ROT_USER=rot-svc-$$
make_user "$ROT_USER"
export ROT_SVC_AK=$FIRST_AK
ROT_SVC_SK=$(json 'd["keys"][0]["secret_key"]' <"$T/$ROT_USER.json")
export ROT_SVC_SK
export ROT_ENDPOINT=$S3_ENDPOINT
# (creds.store writes only into the project's own credentials folder)
export ROT_DIR=$HOME/.navette/rot ROT_OUTSIDE=$T/creds
mkdir -p "$ROT_DIR" "$ROT_OUTSIDE"
json 'json.dumps({"Version": 1, "AccessKeyId": d["keys"][0]["access_key"], "SecretAccessKey": d["keys"][0]["secret_key"]})' \
	<"$T/$ROT_USER.json" >"$ROT_DIR/svc.json"
chmod 600 "$ROT_DIR/svc.json"

nv test --host "$NAVETTE_SOURCE/tests/integration/s3/rotate_keys_host.lua"
check_rc "the primitives against radosgw (rotate_keys_host.lua)" 0
absent "no secret in their output" "$OUT$ERR" "$ROT_SVC_SK" "$ROT_ADMIN_SK"
check_eq "the service user has one key left, the one created" \
	"$(key_ids "$ROT_USER" | wc -l | tr -d ' ')" 1
check_eq "the stored file holds that key" \
	"$(json 'd["AccessKeyId"]' <"$ROT_DIR/svc.json")" "$(key_ids "$ROT_USER")"

# ---- the recipe, end to end through `navette maintain --once` --------------
# Its ROTATION table names user svc and credentials rgw-admin, storage-svc.
make_user svc
OLD_AK=$FIRST_AK
SVC_FILE=$HOME/.navette/rot/storage-svc.json
json 'json.dumps({"Version": 1, "AccessKeyId": d["keys"][0]["access_key"], "SecretAccessKey": d["keys"][0]["secret_key"]})' \
	<"$T/svc.json" >"$SVC_FILE"
chmod 600 "$SVC_FILE"
# the first key's pair, for the server's verdict on it after the rotation
cp "$SVC_FILE" "$T/old-key.json"

R=$T/proj
mkdir -p "$R/recipes/maintenance"
cat >"$R/navette.lua" <<EOF
return { name = "rot", default_profile = "s3",
  credentials = {
    ["rgw-admin"] = { kind = "s3", source = "env",
      env = { access_key_id = "ROT_ADMIN_AK", secret_access_key = "ROT_ADMIN_SK" } },
    ["storage-svc"] = { kind = "s3", source = "file", path = "$SVC_FILE" },
  },
  maintenance = { "recipes/maintenance/rotate-keys.lua" },
  profiles = { s3 = { backend = "local", storage = "s3://$BUCKET/",
    require_pushed = false, credentials = { "rgw-admin", "storage-svc" },
    s3 = { endpoint = "$S3_ENDPOINT", region = "$S3_REGION" } } } }
EOF
cp "$NAVETTE_SOURCE/recipes/maintenance/rotate-keys.lua" "$R/recipes/maintenance/"
git -C "$R" init -q
commit_all "$R" >/dev/null

maintain() { nv_in "$R" maintain "$@"; }
# server_says FILE: radosgw's own verdict on the key pair of FILE (a
# credential_process JSON): the HTTP status of a signed ListBuckets and
# the error code, if any (the pair goes to curl, never to the output)
server_says() {
	local ak sk
	ak=$(json 'd["AccessKeyId"]' <"$1")
	sk=$(json 'd["SecretAccessKey"]' <"$1")
	curl -s -o "$T/verdict" -w '%{http_code}' --max-time 10 \
		--aws-sigv4 "aws:amz:$S3_REGION:s3" --user "$ak:$sk" \
		-H 'x-amz-content-sha256: UNSIGNED-PAYLOAD' "$S3_ENDPOINT/"
	printf ' %s\n' "$(sed -n 's:.*<Code>\([^<]*\)</Code>.*:\1:p' "$T/verdict")"
}
stored_id() { json 'd["AccessKeyId"]' <"$SVC_FILE"; }

check_eq "before: the old key is accepted" "$(server_says "$T/old-key.json")" "200 "

maintain --plan recipes/maintenance/rotate-keys.lua
check_rc "maintain --plan runs the task in plan mode" 0
check_contains "it lists the key creation" "$OUT" "storage key create: radosgw user svc"
check_contains "... and the store" "$OUT" "creds store: storage-svc -> $SVC_FILE"
check_eq "and changes nothing: the user keeps its one key" "$(key_ids svc)" "$OLD_AK"
check_eq "... and the file its key" "$(stored_id)" "$OLD_AK"

AUDIT=$NAVETTE_HOME/audit/audit.jsonl
AUDIT_BEFORE=$(wc -l <"$AUDIT" | tr -d ' ')
maintain --once recipes/maintenance/rotate-keys.lua
check_rc "maintain --once runs the rotation" 0
check_contains "the task succeeds" "$OUT" "task rotate-storage-key (recipes/maintenance/rotate-keys.lua): ok"
check_contains "it says what it did" "$OUT" "1 old key removed"
NEW_AK=$(stored_id)
check_ne "the stored file holds a new key" "$NEW_AK" "$OLD_AK"
check_eq "the user has one key, the stored one" "$(key_ids svc)" "$NEW_AK"
check_eq "the file is still 0600" "$(python3 -c 'import os, sys; print("%o" % (os.stat(sys.argv[1]).st_mode & 0o777))' "$SVC_FILE")" 600
check_eq "the old key gets 403 InvalidAccessKeyId from radosgw" \
	"$(server_says "$T/old-key.json")" "403 InvalidAccessKeyId"
check_eq "the new key is accepted" "$(server_says "$SVC_FILE")" "200 "
printf 'rotated payload\n' >"$T/payload"
nv_in "$R" storage mb "s3://$BUCKET-e2e" --endpoint "$S3_ENDPOINT" --credential storage-svc
check_rc "the new key makes a bucket of the service user" 0
nv_in "$R" storage cp "$T/payload" "s3://$BUCKET-e2e/p.txt" --endpoint "$S3_ENDPOINT" --credential storage-svc
check_rc "a put with the new key" 0
nv_in "$R" storage cp "s3://$BUCKET-e2e/p.txt" "$T/payload.back" --endpoint "$S3_ENDPOINT" --credential storage-svc
check_rc "a get with the new key" 0
check_eq "the object comes back" "$(cat "$T/payload.back" 2>&1)" "rotated payload"

# the rotation's lines (after the primitives' own)
audit_actions() {
	python3 -c '
import json, sys
want = ("storage.key_create", "creds.store", "storage.key_remove", "task.run")
lines = open(sys.argv[1]).read().splitlines()[int(sys.argv[2]):]
recs = [json.loads(l) for l in lines if l.strip()]
# (the other tasks of the recipe, with no credential declared here, say skipped)
print(" ".join(r["action"] + ("(%s)" % r["target"].split(":")[-1]
                              if r["action"] == "task.run" else "")
               for r in recs if r.get("action") in want))' "$AUDIT" "$AUDIT_BEFORE"
}
check_eq "the audit log has the rotation's lines, in order" "$(audit_actions)" \
	"storage.key_create creds.store storage.key_remove task.run(rotate-storage-key) task.run(rotate-registry-password) task.run(rotate-slurm-key)"
check_eq "no secret in the audit log" "$(python3 -c '
import json, sys
s = json.load(open(sys.argv[1]))["SecretAccessKey"]
print("found" if s in open(sys.argv[2]).read() else "none")' "$SVC_FILE" "$AUDIT")" none
nv audit verify
check_rc "the audit chain verifies" 0

# A second rotation (a fresh schedule state, so the weekly task is due).
cp "$SVC_FILE" "$T/first-rotation.json"
rm -f "$NAVETTE_HOME/tasks.db"
maintain --once recipes/maintenance/rotate-keys.lua
check_rc "a second rotation runs" 0
SECOND_AK=$(stored_id)
check_ne "it stores another key" "$SECOND_AK" "$NEW_AK"
check_eq "it converges: one key left, the stored one" "$(key_ids svc)" "$SECOND_AK"
check_eq "the first rotation's key is refused now" \
	"$(server_says "$T/first-rotation.json")" "403 InvalidAccessKeyId"

# A rotation stopped after its key creation: a key made by the server,
# never stored.
cp "$SVC_FILE" "$T/second-rotation.json"
rgw key create --uid=svc --key-type=s3 --gen-access-key --gen-secret >"$T/orphan.json"
ORPHAN_AK=$(json '"\n".join(k["access_key"] for k in d["keys"])' <"$T/orphan.json" | grep -vx "$SECOND_AK")
check_eq "the user now has two keys" "$(key_ids svc | wc -l | tr -d ' ')" 2
rm -f "$NAVETTE_HOME/tasks.db"
maintain --once recipes/maintenance/rotate-keys.lua
check_rc "the next run converges" 0
check_contains "it removed both other keys" "$OUT" "2 old keys removed"
THIRD_AK=$(stored_id)
check_eq "one key left, the newest, stored" "$(key_ids svc)" "$THIRD_AK"
check_ne "it is not the interrupted run's key" "$THIRD_AK" "$ORPHAN_AK"
check_ne "nor the second rotation's" "$THIRD_AK" "$SECOND_AK"
check_eq "the second rotation's key is refused" \
	"$(server_says "$T/second-rotation.json")" "403 InvalidAccessKeyId"
absent "no secret printed" "$OUT$ERR" "$(json 'd["SecretAccessKey"]' <"$SVC_FILE")" \
	"$(json 'd["SecretAccessKey"]' <"$T/second-rotation.json")" "$ROT_ADMIN_SK"

finish
