#!/usr/bin/env bash
# `navette storage` against the real S3 server of the ctest fixture "s3":
# mb, cp both ways (checked by sha256), ls, rm (and rm --recursive, whose
# prefix is required); the same with --virtual-host; presigned URLs and POST
# policies used by curl, as a browser or a job would; exit codes, error
# details and the absence of the secret in what is printed; keys that
# would escape a folder refused before any request.
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
BUCKET=nv-cli-$$-$RANDOM
S3=s3://$BUCKET
# An endpoint where nothing listens: a command that must not send a
# request fails with 4 if it tries.
DEAD=(--endpoint http://127.0.0.1:1)

# http_code URL [CURL ARGS...]: the status of a curl request; body in
# $T/body.
http_code() {
	local url=$1
	shift
	curl -s --max-time 30 -o "$T/body" -w '%{http_code}' "$@" "$url"
}

# ---- mb, cp, ls, rm -------------------------------------------------------

nv storage mb "$S3" "${EP[@]}"
check_rc "mb creates the bucket" 0
check_contains "mb says so" "$OUT" "make_bucket: $BUCKET"

head -c $((6 * 1024 * 1024 + 7)) /dev/urandom >"$T/big.bin"
: >"$T/empty"
printf 'hello navette\n' >"$T/small.txt"

nv storage cp "$T/big.bin" "$S3/data/big.bin" "${EP[@]}"
check_rc "cp uploads a 6 MiB file" 0
check_eq "cp prints nothing on stdout on a pipe" "$OUT" ""
check_match "cp sums the upload up on stderr on a pipe" "$ERR" \
	"^upload: .*big\.bin -> $S3/data/big\.bin: 6\.0 MiB in [0-9.]+ s"
check_eq "cp's summary on a pipe is one line" \
	"$(printf '%s\n' "$ERR" | wc -l | tr -d ' ')" 1
if command -v script >/dev/null 2>&1 &&
	script -qec true /dev/null >/dev/null 2>&1; then
	TTY_OUT=$(script -qec "$(printf '%q ' "$NAVETTE" storage cp \
		"$T/small.txt" "$S3/data/tty.txt" "${EP[@]}")" /dev/null)
	check_match "cp shows bytes and rate on a terminal" "$TTY_OUT" \
		"upload: .*: 14 B in [0-9.]+ s"
	nv storage rm "$S3/data/tty.txt" "${EP[@]}"
	check_rc "the upload made on a terminal landed" 0
else
	skip "cp on a terminal" "no script(1) that takes -qec (util-linux's)"
fi
nv storage cp "$T/empty" "$S3/data/empty" "${EP[@]}"
check_rc "cp uploads a 0-byte file" 0
nv storage cp "$T/small.txt" "$S3/data/sub/" "${EP[@]}"
check_rc "cp to a prefix ending in / keeps the file name" 0

mkdir -p "$T/down"
nv storage cp "$S3/data/big.bin" "$T/down/big.bin" "${EP[@]}"
check_rc "cp downloads the 6 MiB object" 0
check_eq "the download has the uploaded bytes (sha256)" \
	"$(sha256 "$T/down/big.bin" 2>/dev/null)" "$(sha256 "$T/big.bin")"
nv storage cp "$S3/data/empty" "$T/down/empty" "${EP[@]}"
check_rc "cp downloads the 0-byte object" 0
check_eq "the 0-byte download is empty (sha256)" \
	"$(sha256 "$T/down/empty" 2>/dev/null)" "$(sha256 "$T/empty")"
nv storage cp "$S3/data/sub/small.txt" "$T/down/" "${EP[@]}"
check_rc "cp into a folder" 0
check_eq "cp s3://b/k DIR/ writes DIR/<last segment>" \
	"$(cat "$T/down/small.txt" 2>/dev/null)" "hello navette"
mkdir -p "$T/newdir/inner"
nv_in "$T/newdir/inner" storage cp "$S3/data/sub/small.txt" ./fresh/ \
	"${EP[@]}"
check_rc "cp into a folder that does not exist yet (trailing /)" 0
check_file "it lands inside that folder" "$T/newdir/inner/fresh/small.txt"
check_eq "and nowhere else in the parent" \
	"$(ls "$T/newdir/inner" | tr '\n' ' ')" "fresh "

nv storage ls "$S3/data/" "${EP[@]}"
check_rc "ls a prefix" 0
check_match "ls shows an object under the prefix with its size" "$OUT" \
	"[[:space:]]$((6 * 1024 * 1024 + 7)) big\.bin$"
check_match "ls shows the 0-byte object" "$OUT" "[[:space:]]0 empty$"
check_match "ls shows a deeper folder once as PRE" "$OUT" "PRE sub/$"
check_no_match "ls without --recursive hides deeper keys" "$OUT" \
	"small\.txt"
nv storage ls "$S3" --recursive "${EP[@]}"
check_rc "ls --recursive" 0
check_match "ls --recursive shows every key in full" "$OUT" \
	" data/sub/small\.txt$"
check_eq "ls --recursive shows 3 objects" \
	"$(printf '%s\n' "$OUT" | grep -c ' data/')" 3
nv storage ls "$S3/data/sub" --recursive "${EP[@]}"
check_eq "ls filters by prefix" "$(printf '%s\n' "$OUT" | grep -c .)" 1

nv storage rm "$S3/data/empty" "${EP[@]}"
check_rc "rm deletes an object" 0
nv storage ls "$S3" --recursive "${EP[@]}"
check_no_match "the deleted object is gone from ls" "$OUT" " data/empty$"
nv storage rm "$S3/data/empty" "${EP[@]}"
check_rc "rm of a missing object is an error (not found: 2)" 2
check_contains "and names NoSuchKey" "$ERR" "NoSuchKey"

# ---- presigned URLs ------------------------------------------------------

nv storage presign "$S3/data/sub/small.txt" --expires 300 "${EP[@]}"
check_rc "presign GET" 0
URL=$OUT
check_match "presign prints the URL unmasked" "$URL" \
	"X-Amz-Signature=[0-9a-f]{64}$"
check_eq "curl fetches the object with the presigned URL" \
	"$(http_code "$URL")" 200
check_eq "and gets its bytes" "$(cat "$T/body")" "hello navette"
# the last hex digit of the signature, changed
case ${URL: -1} in 0) BAD=${URL%?}1 ;; *) BAD=${URL%?}0 ;; esac
check_ne "the altered URL differs" "$BAD" "$URL"
check_eq "an altered signature is refused" "$(http_code "$BAD")" 403

PAST=$(date -u -d '-2 hours' +%Y-%m-%dT%H:%M:%SZ 2>/dev/null ||
	date -u -v-2H +%Y-%m-%dT%H:%M:%SZ)
nv storage presign "$S3/data/sub/small.txt" --expires 60 --at "$PAST" \
	"${EP[@]}"
check_rc "presign --at a past time" 0
OLD=$OUT
check_eq "the server refuses an expired URL" "$(http_code "$OLD")" 403
check_contains "with AccessDenied" "$(cat "$T/body")" "AccessDenied"
nv storage presign "$S3/data/sub/small.txt" --expires 60 --at "$PAST" \
	"${EP[@]}"
check_eq "presign --at is reproducible" "$OUT" "$OLD"

nv storage presign "$S3/data/put.txt" --method PUT --expires 300 "${EP[@]}"
check_rc "presign PUT" 0
check_eq "curl uploads with a presigned PUT" \
	"$(http_code "$OUT" -X PUT --data-binary @"$T/small.txt")" 200
nv storage cp "$S3/data/put.txt" "$T/down/put.txt" "${EP[@]}"
check_eq "the presigned upload landed" "$(cat "$T/down/put.txt")" \
	"hello navette"

nv storage presign "$S3/data/sub/small.txt" --expires 604801 "${EP[@]}"
check_rc "--expires over 7 days is a usage error" 2
nv storage presign "$S3/data/sub/small.txt" --expires 0 "${EP[@]}"
check_rc "--expires 0 is a usage error" 2

# ---- POST policies ---------------------------------------------------------

nv storage post-policy "$S3/uploads/" --expires 300 --max-bytes 100 \
	"${EP[@]}"
check_rc "post-policy" 0
printf '%s\n' "$OUT" >"$T/form.json"
check_eq "the form's key is scoped to the prefix" \
	"$(json 'd["fields"]["key"]' <"$T/form.json")" 'uploads/${filename}'
FORM_URL=$(json 'd["url"]' <"$T/form.json")
# post KEY FILE: the form upload of FILE under KEY; prints the status.
post() {
	local -a args=()
	local name
	for name in policy x-amz-algorithm x-amz-credential x-amz-date \
		x-amz-signature; do
		args+=(--form-string "$name=$(json "d['fields']['$name']" \
			<"$T/form.json")")
	done
	http_code "$FORM_URL" --form-string "key=$1" "${args[@]}" \
		-F "file=@$2"
}
check_eq "a form upload under the prefix is accepted" \
	"$(post 'uploads/${filename}' "$T/small.txt")" 204
nv storage cp "$S3/uploads/small.txt" "$T/down/posted.txt" "${EP[@]}"
check_eq "the form upload landed under the prefix" \
	"$(cat "$T/down/posted.txt")" "hello navette"
check_eq "a key outside the prefix is refused" \
	"$(post outside/x "$T/small.txt")" 403
head -c 101 /dev/urandom >"$T/101.bin"
check_eq "a body over --max-bytes is refused" \
	"$(post uploads/big "$T/101.bin")" 400
check_contains "as EntityTooLarge" "$(cat "$T/body")" EntityTooLarge
nv storage post-policy "$S3/uploads/" --expires 700000 "${EP[@]}"
check_rc "post-policy --expires over 7 days is a usage error" 2

# ---- errors and secrets ----------------------------------------------------

AWS_SECRET_ACCESS_KEY=wrong-secret-for-navette-test nv storage ls "$S3" \
	"${EP[@]}"
check_rc "a wrong secret is refused (3)" 3
check_contains "the error names SignatureDoesNotMatch" "$ERR" \
	SignatureDoesNotMatch
check_match "the error carries a request id" "$ERR" "request id tx[0-9a-f]"
check_match "the error carries a hint" "$ERR" "check: .*secret key"
check_no_match "the error never shows the secret" "$OUT$ERR" \
	"wrong-secret-for-navette-test|$S3_SECRET_KEY"

env -u AWS_ACCESS_KEY_ID -u AWS_SECRET_ACCESS_KEY "$NAVETTE" storage ls \
	"$S3" "${EP[@]}" >"$T/.out" 2>"$T/.err"
RC=$? OUT=$(cat "$T/.out") ERR=$(cat "$T/.err") LAST_CMD="storage ls (no keys)"
check_rc "missing credentials are refused (3)" 3
check_contains "with a hint naming the variables" "$ERR" AWS_ACCESS_KEY_ID

nv storage sign --explain "$S3/data/big.bin" "${EP[@]}"
check_rc "sign --explain" 0
check_eq "the canonical request starts with the method line" \
	"$(printf '%s\n' "$OUT" | sed -n 2p)" GET
check_eq "then the path" "$(printf '%s\n' "$OUT" | sed -n 3p)" \
	"/$BUCKET/data/big.bin"
check_eq "the string to sign starts with the algorithm" \
	"$(printf '%s\n' "$OUT" | sed -n '/^string to sign:$/{n;p;}')" \
	AWS4-HMAC-SHA256
check_no_match "sign --explain never prints the secret" "$OUT$ERR" \
	"$S3_SECRET_KEY"
nv storage sign --explain "$S3/data/big.bin" --at 2025-01-31T12:00:00Z \
	"${EP[@]}"
check_contains "--at dates the string to sign" "$OUT" \
	"20250131/$S3_REGION/s3/aws4_request"

# ---- keys that would escape ---------------------------------------------------

nv storage cp "$S3/../x" "$T/down/" "${DEAD[@]}"
check_rc "cp s3://b/../x is refused as usage (2), before any request" 2
check_contains "naming the .. segment" "$ERR" ".."
check_absent "and writes nothing" "$T/x"
nv storage cp "$S3/a/../../x" "$T/down/x" "${DEAD[@]}"
check_rc "a key with .. inside is refused (2)" 2
nv storage cp "$T/small.txt" "$S3//etc/passwd" "${DEAD[@]}"
check_rc "an absolute key is refused (2)" 2
nv storage presign "$S3/a/../b" --expires 60 "${DEAD[@]}"
check_rc "presign refuses a .. key (2)" 2
nv storage rm "$S3/data/big.bin" "${DEAD[@]}"
check_rc "control: the dead endpoint fails as backend (4)" 4

# ---- virtual-host addressing (BUCKET.localhost) ------------------------------

: "${S3_ENDPOINT_VHOST:?no S3_ENDPOINT_VHOST in the users.env of the stack}"
VH=(--endpoint "$S3_ENDPOINT_VHOST" --virtual-host)
nv storage cp "$T/big.bin" "$S3/vh/big.bin" "${VH[@]}"
check_rc "cp uploads with --virtual-host" 0
nv storage cp "$S3/vh/big.bin" "$T/down/vh.bin" "${VH[@]}"
check_rc "cp downloads with --virtual-host" 0
check_eq "the virtual-host round trip keeps the bytes (sha256)" \
	"$(sha256 "$T/down/vh.bin" 2>/dev/null)" "$(sha256 "$T/big.bin")"
nv storage ls "$S3/vh/" "${VH[@]}"
check_match "ls with --virtual-host" "$OUT" " big\.bin$"
nv storage presign "$S3/vh/big.bin" --expires 300 "${VH[@]}"
check_match "a virtual-host presigned URL names the bucket in the host" \
	"$OUT" "^http://$BUCKET\.localhost:[0-9]+/vh/big\.bin\?"
check_eq "curl fetches it" "$(http_code "$OUT")" 200
check_eq "the bytes it fetched" "$(sha256 "$T/body")" "$(sha256 "$T/big.bin")"
nv storage post-policy "$S3/vh/in/" --expires 300 --max-bytes 100 "${VH[@]}"
printf '%s\n' "$OUT" >"$T/form.json"
FORM_URL=$(json 'd["url"]' <"$T/form.json")
check_match "the form's action is the bucket's host" "$FORM_URL" \
	"^http://$BUCKET\.localhost:[0-9]+/$"
check_eq "a virtual-host form upload under the prefix is accepted" \
	"$(post 'vh/in/${filename}' "$T/small.txt")" 204
check_eq "and one outside the prefix is refused" \
	"$(post outside/x "$T/small.txt")" 403

# ---- an interrupted cp resumes ------------------------------------------------

# The upload goes through a proxy that stops forwarding after 36 MiB of a
# 40 MiB file (five parts of 8 MiB, four at a time: at least one part is
# then complete), and navette is killed (SIGKILL) there.
head -c $((40 * 1024 * 1024)) /dev/urandom >"$T/resume.bin"
python3 "$NAVETTE_SOURCE/tests/data/s3/fault_proxy.py" "${S3_ENDPOINT#http://}" \
	1 0 --stall-after $((36 * 1024 * 1024)) --lifetime 120 \
	>"$T/proxy.port" 2>"$T/proxy.log" &
PROXY=$!
for _ in $(seq 100); do [ -s "$T/proxy.port" ] && break; sleep 0.1; done
"$NAVETTE" storage cp "$T/resume.bin" "$S3/resume/r.bin" \
	--endpoint "http://127.0.0.1:$(cat "$T/proxy.port")" >/dev/null 2>&1 &
CP=$!
for _ in $(seq 600); do grep -q stalled "$T/proxy.log" && break; sleep 0.1; done
check_contains "the proxy stalled the upload" "$(cat "$T/proxy.log")" stalled
sleep 1
kill -9 "$CP"
wait "$CP" 2>/dev/null
kill "$PROXY"
wait "$PROXY" 2>/dev/null
nv storage ls "$S3/resume/" "${EP[@]}"
check_no_match "the killed upload published nothing" "$OUT" "r\.bin"
if command -v script >/dev/null 2>&1 &&
	script -qec true /dev/null >/dev/null 2>&1; then
	TTY_OUT=$(script -qec "$(printf '%q ' "$NAVETTE" storage cp \
		"$T/resume.bin" "$S3/resume/r.bin" "${EP[@]}")" /dev/null)
	check_match "the next cp continues it (on a terminal it says so)" \
		"$TTY_OUT" "resumed: [0-9.]+ MiB were already there"
else
	skip "the next cp says it resumed, on a terminal" \
		"no script(1) that takes -qec (util-linux's)"
	nv storage cp "$T/resume.bin" "$S3/resume/r.bin" "${EP[@]}"
fi
nv storage cp "$S3/resume/r.bin" "$T/down/r.bin" "${EP[@]}"
check_eq "the resumed upload holds the file's bytes (sha256)" \
	"$(sha256 "$T/down/r.bin" 2>/dev/null)" "$(sha256 "$T/resume.bin")"
nv storage rm "$S3/resume/r.bin" "${EP[@]}"

# ---- rm --recursive ------------------------------------------------------------

for i in 1 2 3; do
	nv storage cp "$T/small.txt" "$S3/tree/a/$i.txt" "${EP[@]}"
done
nv storage cp "$T/small.txt" "$S3/tree/ab.txt" "${EP[@]}"
nv storage rm "$S3" --recursive "${EP[@]}"
check_rc "rm --recursive of a whole bucket is refused (2)" 2
check_contains "naming the rule" "$ERR" "needs a prefix"
nv storage rm "$S3/" --recursive "${DEAD[@]}"
check_rc "... also written s3://BUCKET/, before any request (2)" 2
nv storage rm "$S3/tree/a" --recursive "${EP[@]}"
check_rc "rm --recursive of a folder" 0
check_eq "prints each deleted key" \
	"$(printf '%s\n' "$OUT" | grep -c "^delete: $S3/tree/a/")" 3
check_contains "and a count" "$OUT" "deleted 3 objects under $S3/tree/a/"
nv storage ls "$S3/tree/" --recursive "${EP[@]}"
check_no_match "the folder is empty" "$OUT" "tree/a/"
check_match "a key that only shares the prefix's letters stays" "$OUT" \
	" tree/ab\.txt$"
nv storage rm "$S3/vh" --recursive "${EP[@]}"
check_rc "rm --recursive of the virtual-host objects" 0
nv storage rm "$S3/tree/ab.txt" "${EP[@]}"

# Leave the stack as found.
for k in data/big.bin data/sub/small.txt data/put.txt uploads/small.txt; do
	nv storage rm "$S3/$k" "${EP[@]}"
	check_rc "cleanup rm $k" 0
done
curl -s -o /dev/null --aws-sigv4 "aws:amz:$S3_REGION:s3" \
	--user "$S3_ACCESS_KEY:$S3_SECRET_KEY" -X DELETE "$S3_ENDPOINT/$BUCKET"

finish
