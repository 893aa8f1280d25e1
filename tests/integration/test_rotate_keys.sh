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
. "$(dirname "$0")/lib.sh"

use_s3_stack rotate
CONF=$(dirname "$S3_STACK_ENV")/ceph.conf
if ! command -v radosgw-admin >/dev/null || [ ! -r "$CONF" ]; then
	skip "rotation against radosgw" "radosgw-admin or $CONF missing"
	finish
fi
rgw() { timeout 60 radosgw-admin -c "$CONF" "$@" 2>>"$T/radosgw-admin.err"; }
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
export ROT_DIR=$T/creds
mkdir -p "$ROT_DIR"
json 'json.dumps({"Version": 1, "AccessKeyId": d["keys"][0]["access_key"], "SecretAccessKey": d["keys"][0]["secret_key"]})' \
	<"$T/$ROT_USER.json" >"$ROT_DIR/svc.json"
chmod 600 "$ROT_DIR/svc.json"

nv test --host "$NAVETTE_SOURCE/tests/integration/rotate_keys_host.lua"
check_rc "the primitives against radosgw (rotate_keys_host.lua)" 0
check_no_match "no secret in their output" "$OUT$ERR" "$ROT_SVC_SK|$ROT_ADMIN_SK"
check_eq "the service user has one key left, the one created" \
	"$(key_ids "$ROT_USER" | wc -l | tr -d ' ')" 1
check_eq "the stored file holds that key" \
	"$(json 'd["AccessKeyId"]' <"$ROT_DIR/svc.json")" "$(key_ids "$ROT_USER")"

finish
