#!/usr/bin/env bash
# The S3 test server (tests/stack/s3-start.sh, the ctest fixture "s3") is a
# real one: it checks SigV4 signatures and keeps objects. Talks to it with
# curl only, so that later S3 tests can trust what it answers.
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

# s3 ACCESS SECRET METHOD PATH [CURL ARGS...]: a SigV4-signed request (or an
# anonymous one when ACCESS is empty); the body lands in $T/body, the HTTP
# status is printed.
s3() {
	local ak=$1 sk=$2 method=$3 path=$4
	shift 4
	local -a auth=()
	if [ -n "$ak" ]; then
		auth=(--aws-sigv4 "aws:amz:$S3_REGION:s3" --user "$ak:$sk"
			-H 'x-amz-content-sha256: UNSIGNED-PAYLOAD')
	fi
	curl -s --max-time 30 -o "$T/body" -w '%{http_code}' -X "$method" \
		"${auth[@]}" "$@" "$S3_ENDPOINT$path"
}

# error_code: the <Code> of the S3 error document in $T/body.
error_code() {
	sed -n 's:.*<Code>\([^<]*\)</Code>.*:\1:p' "$T/body" | head -1
}

AK=$S3_ACCESS_KEY
SK=$S3_SECRET_KEY
# A bucket name of our own, so that reruns against one stack do not clash.
BUCKET=navette-stack-$$-$RANDOM

code=$(s3 "$AK" "$SK" GET /)
check_eq "ListBuckets with the test user's keys" "$code" 200
check_contains "ListBuckets answers a bucket list" "$(cat "$T/body")" \
	ListAllMyBucketsResult

code=$(s3 "$S3_ACCESS_KEY_2" "$S3_SECRET_KEY_2" GET /)
check_eq "ListBuckets with the second user's keys" "$code" 200

code=$(s3 "$AK" "$SK" PUT "/$BUCKET")
check_eq "CreateBucket $BUCKET" "$code" 200

head -c 300000 /dev/urandom >"$T/object"
code=$(s3 "$AK" "$SK" PUT "/$BUCKET/dir/object.bin" \
	--upload-file "$T/object")
check_eq "PutObject" "$code" 200

code=$(s3 "$AK" "$SK" GET "/$BUCKET/dir/object.bin")
check_eq "GetObject" "$code" 200
check_eq "GetObject returns the bytes put (sha256)" \
	"$(sha256 "$T/body")" "$(sha256 "$T/object")"

code=$(s3 "$AK" "${SK}x" GET /)
check_eq "a wrong secret key is refused" "$code" 403
check_eq "a wrong secret key reads SignatureDoesNotMatch" \
	"$(error_code)" SignatureDoesNotMatch

code=$(s3 NAVETTEUNKNOWNKEY999 "$SK" GET /)
check_eq "an unknown access key is refused" "$code" 403
check_eq "an unknown access key reads InvalidAccessKeyId" \
	"$(error_code)" InvalidAccessKeyId

code=$(s3 "" "" GET "/$BUCKET/dir/object.bin")
check_eq "an anonymous GET of a private object is refused" "$code" 403
check_eq "an anonymous GET reads AccessDenied" "$(error_code)" AccessDenied

code=$(s3 "$S3_ACCESS_KEY_2" "$S3_SECRET_KEY_2" GET "/$BUCKET/dir/object.bin")
check_eq "the second user cannot read the test user's object" "$code" 403

# Leave the stack as found (each step can fail on its own).
code=$(s3 "$AK" "$SK" DELETE "/$BUCKET/dir/object.bin")
check_eq "DeleteObject" "$code" 204
code=$(s3 "$AK" "$SK" DELETE "/$BUCKET")
check_eq "DeleteBucket" "$code" 204

finish
