#!/usr/bin/env bash
# tests/bench/s3_bench.sh [MiB | --quick] — S3 transfer benchmark: navette
# against raw curl (--aws-sigv4: one request, no checks, the floor),
# aws-cli v2 and rclone, on a throwaway radosgw started here.
#
# Not a test (nothing registers it with add_test): it prints numbers and
# fails only when a transfer fails or a download's sha256 differs.
#
# For each tool it uploads a random file of MiB MiB (default 1024; --quick is
# 256) and downloads it back, RUNS times (3), each run to a fresh key; the
# object is deleted and radosgw's garbage collection forced after each run,
# and the cluster is restarted between tools, so memstore never fills (a full
# memstore makes uploads hang rather than fail). Wall time and peak RSS come
# from /usr/bin/time; the table shows the median time and the largest RSS.
# Every tool runs with its default concurrency and part sizes.
#
# Environment (all optional):
#   RUNS            runs per tool and direction (3)
#   S3_PORT         radosgw port (27480, away from the tests' fixtures)
#   MEMSTORE_BYTES  memstore capacity, held in RAM (RUNS*MiB + 1 GiB, >= 2 GiB)
#   NAVETTE         the navette binary (build/navette)
#   BENCH_TMP       where the work folder goes (/tmp); it is removed on exit
#   XFER_TIMEOUT    seconds allowed for one transfer (900)
#
# Peers missing from the machine (aws-cli v2, rclone, GNU time) are installed
# with apt-get when run as root, and the script says so. AWS CLI v1 is skipped
# (it crashes on radosgw's empty error <Message>): only a v2 `aws` is used.
set -eu -o pipefail
. "$(dirname "$0")/../need_dir_lib.sh"

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
ROOT=$(cd "$HERE/../.." && pwd -P)

MIB=1024
case ${1:-} in
'') ;;
-q | --quick) MIB=256 ;;
-h | --help)
	sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'
	exit 0
	;;
*[!0-9]* | 0)
	echo "usage: $0 [MiB | --quick]" >&2
	exit 2
	;;
*) MIB=$1 ;;
esac
RUNS=${RUNS:-3}
BYTES=$((MIB * 1048576))
PORT=${S3_PORT:-27480}
MEM=${MEMSTORE_BYTES:-$(((RUNS * MIB + 1024) * 1048576))}
[ "$MEM" -ge $((2 * 1073741824)) ] || MEM=$((2 * 1073741824))
NAVETTE=${NAVETTE:-$ROOT/build/navette}
XFER_TIMEOUT=${XFER_TIMEOUT:-900}
BUCKET=navette-bench

say() { printf 's3_bench: %s\n' "$*" >&2; }
die() {
	say "error: $*"
	exit 1
}

# ---- tools ----------------------------------------------------------------
[ -x "$NAVETTE" ] || die "$NAVETTE not found (cmake --build build --target navette)"

apt_install() { # PACKAGE: installs a missing peer, saying so
	if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
		die "$1 is missing and apt-get is not usable here; install it"
	fi
	say "note: installing the missing Debian package $1 (apt-get)"
	DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "$1" \
		>/dev/null 2>&1 || {
		apt-get update >/dev/null 2>&1
		DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "$1" >/dev/null
	}
}

find_aws_v2() { # prints the path of an AWS CLI v2 on PATH (or /usr/bin)
	local a
	for a in /usr/bin/aws $(type -ap aws 2>/dev/null); do
		[ -x "$a" ] || continue
		case $("$a" --version 2>&1) in aws-cli/2.*) echo "$a" && return 0 ;; esac
	done
	return 1
}

[ -x /usr/bin/time ] || apt_install time
AWS=$(find_aws_v2) || {
	apt_install awscli
	AWS=$(find_aws_v2) || die "no AWS CLI v2 after installing awscli"
}
command -v rclone >/dev/null || apt_install rclone
RCLONE=$(command -v rclone)

# ---- work folder, cluster, cleanup ---------------------------------------
WORK=$(mktemp -d "${BENCH_TMP:-/tmp}/navette-s3-bench.XXXXXX")
NEED_DIR_ROOT=${BENCH_TMP:-}
need_dir WORK
STACK=
stop_stack() {
	[ -n "$STACK" ] || return 0
	bash "$ROOT/tests/stack/s3-stop.sh" "$STACK" >/dev/null 2>&1 || true
	STACK=
}
cleanup() {
	local status=$?
	stop_stack
	rm -rf "$WORK"
	exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

n_stack=0
start_stack() {
	n_stack=$((n_stack + 1))
	STACK=$WORK/stack$n_stack
	S3_PORT=$PORT MEMSTORE_BYTES=$MEM bash "$ROOT/tests/stack/s3-start.sh" "$STACK" >&2 ||
		die "radosgw did not start"
	# shellcheck disable=SC1091
	. "$STACK/users.env"
	export AWS_ACCESS_KEY_ID=$S3_ACCESS_KEY AWS_SECRET_ACCESS_KEY=$S3_SECRET_KEY
	cat >"$WORK/rclone.conf" <<EOF
[bench]
type = s3
provider = Ceph
endpoint = $S3_ENDPOINT
region = $S3_REGION
access_key_id = $S3_ACCESS_KEY
secret_access_key = $S3_SECRET_KEY
EOF
	aws s3 mb "s3://$BUCKET" >/dev/null || die "could not create the bucket"
}

# Every tool sees the same clean environment: keys from users.env, no
# profile, no session token, no CA bundle variable (rclone refuses it).
unset AWS_PROFILE AWS_SESSION_TOKEN AWS_ENDPOINT_URL AWS_ENDPOINT_URL_S3 \
	AWS_DEFAULT_PROFILE AWS_CA_BUNDLE
export AWS_CONFIG_FILE=$WORK/aws.config AWS_SHARED_CREDENTIALS_FILE=/dev/null
export AWS_REGION=us-east-1 AWS_DEFAULT_REGION=us-east-1 AWS_PAGER=
cat >"$AWS_CONFIG_FILE" <<'EOF'
[default]
region = us-east-1
s3 =
    signature_version = s3v4
EOF

aws() { "$AWS" --endpoint-url "$S3_ENDPOINT" "$@"; }

# ---- transfers --------------------------------------------------------------
SRC=$WORK/src.bin
DST=$WORK/dst.bin

xfer() { # TOOL up|down KEY
	local tool=$1 dir=$2 key=$3
	case $tool.$dir in
	navette.up) "$NAVETTE" storage cp "$SRC" "s3://$BUCKET/$key" \
		--endpoint "$S3_ENDPOINT" --region "$S3_REGION" --path-style ;;
	navette.down) "$NAVETTE" storage cp "s3://$BUCKET/$key" "$DST" \
		--endpoint "$S3_ENDPOINT" --region "$S3_REGION" --path-style ;;
	aws.up) aws s3 cp --no-progress "$SRC" "s3://$BUCKET/$key" ;;
	aws.down) aws s3 cp --no-progress "s3://$BUCKET/$key" "$DST" ;;
	rclone.up) "$RCLONE" --config "$WORK/rclone.conf" copyto --no-check-dest \
		"$SRC" "bench:$BUCKET/$key" ;;
	rclone.down) "$RCLONE" --config "$WORK/rclone.conf" copyto --no-check-dest \
		"bench:$BUCKET/$key" "$DST" ;;
	# one signed PUT or GET, nothing hashed or verified (the payload is
	# sent UNSIGNED-PAYLOAD): what the network and radosgw allow
	curl.up) curl -sS --fail --aws-sigv4 "aws:amz:$S3_REGION:s3" \
		--user "$AWS_ACCESS_KEY_ID:$AWS_SECRET_ACCESS_KEY" \
		-H "x-amz-content-sha256: UNSIGNED-PAYLOAD" \
		-T "$SRC" "$S3_ENDPOINT/$BUCKET/$key" ;;
	curl.down) curl -sS --fail --aws-sigv4 "aws:amz:$S3_REGION:s3" \
		--user "$AWS_ACCESS_KEY_ID:$AWS_SECRET_ACCESS_KEY" \
		-H "x-amz-content-sha256: UNSIGNED-PAYLOAD" \
		-o "$DST" "$S3_ENDPOINT/$BUCKET/$key" ;;
	esac
}

timed() { # TOOL DIR KEY: appends "seconds maxrss_kib" to $WORK/TOOL.DIR
	local out=$WORK/$1.$2 t=$WORK/time.out log=$WORK/xfer.log
	export -f xfer aws
	export NAVETTE RCLONE AWS WORK SRC DST BUCKET S3_ENDPOINT S3_REGION
	if ! timeout "$XFER_TIMEOUT" /usr/bin/time -f '%e %M' -o "$t" \
		bash -c 'xfer "$@"' xfer "$@" >"$log" 2>&1; then
		tail -n 20 "$log" >&2
		die "$1 $2 of $3 failed (or ran past ${XFER_TIMEOUT}s)"
	fi
	tail -n 1 "$t" >>"$out"
}

median() { sort -n | awk '{v[NR]=$1} END {print (NR%2) ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2}'; }
maxcol2() { awk 'BEGIN{m=0} $2>m{m=$2} END{print m}'; }

say "making a ${MIB} MiB random file"
head -c "$BYTES" /dev/urandom >"$SRC"
SUM=$(shasum -a 256 "$SRC" | cut -d' ' -f1)

command -v curl >/dev/null || apt_install curl
TOOLS="navette curl aws rclone"
for tool in $TOOLS; do
	start_stack
	for run in $(seq 1 "$RUNS"); do
		key=bench/$tool-$run-$RANDOM.bin
		rm -f "$DST"
		say "$tool run $run/$RUNS: upload"
		timed "$tool" up "$key"
		say "$tool run $run/$RUNS: download"
		timed "$tool" down "$key"
		[ "$(wc -c <"$DST" | tr -d ' ')" = "$BYTES" ] || die "$tool: download has the wrong size"
		[ "$(shasum -a 256 "$DST" | cut -d' ' -f1)" = "$SUM" ] ||
			die "$tool: downloaded sha256 differs from the upload"
		rm -f "$DST"
		aws s3 rm "s3://$BUCKET/$key" >/dev/null
		timeout 120 radosgw-admin -c "$STACK/ceph.conf" gc process --include-all \
			>/dev/null 2>&1 || true
	done
	stop_stack
done

# ---- report ---------------------------------------------------------------
# The (bash -c) wrapper above is small next to the tools: its RSS never wins.
declare -A UP DOWN RSS
for tool in $TOOLS; do
	UP[$tool]=$(cut -d' ' -f1 <"$WORK/$tool.up" | median)
	DOWN[$tool]=$(cut -d' ' -f1 <"$WORK/$tool.down" | median)
	RSS[$tool]=$(cat "$WORK/$tool.up" "$WORK/$tool.down" | maxcol2)
done

echo
echo "S3 transfer of $MIB MiB to radosgw (memstore, 127.0.0.1), median of $RUNS runs"
echo "$(curl --version | head -n 1 | cut -d' ' -f1,2), $("$AWS" --version 2>&1 | cut -d' ' -f1), $("$RCLONE" version 2>/dev/null | head -n 1)"
printf '%-8s %8s %8s %9s %9s %12s %12s\n' tool "up s" "down s" "up MB/s" "down MB/s" \
	"up RSS MiB" "down RSS MiB"
for tool in $TOOLS; do
	awk -v t="$tool" -v u="${UP[$tool]}" -v d="${DOWN[$tool]}" -v b="$BYTES" \
		-v ru="$(maxcol2 <"$WORK/$tool.up")" -v rd="$(maxcol2 <"$WORK/$tool.down")" \
		'BEGIN { printf "%-8s %8.2f %8.2f %9.1f %9.1f %12.1f %12.1f\n",
			t, u, d, (u > 0 ? b / 1e6 / u : 0), (d > 0 ? b / 1e6 / d : 0),
			ru / 1024, rd / 1024 }'
done
echo
echo "speed ratio = peer time / navette time (above 1: navette is faster;"
echo "curl is the floor: navette, with its checks, within 5% of it is 0.95x)"
for peer in curl aws rclone; do
	case $peer in curl) want=0.95 ;; aws) want=1.5 ;; rclone) want=1.0 ;; esac
	awk -v p="$peer" -v w="$want" -v nu="${UP[navette]}" -v nd="${DOWN[navette]}" \
		-v pu="${UP[$peer]}" -v pd="${DOWN[$peer]}" \
		'function r(a, b) { return b > 0 ? a / b : 0 }
		function ok(x) { return x >= w ? "ok" : "MISS" }
		BEGIN { printf "navette / %-6s  up %5.2fx  down %5.2fx   target >= %.2fx: up %s, down %s\n",
			p, r(pu, nu), r(pd, nd), w, ok(r(pu, nu)), ok(r(pd, nd)) }'
done
awk -v r="${RSS[navette]}" 'BEGIN { printf "navette peak RSS %.1f MiB   target <= 64 MiB: %s\n",
	r / 1024, (r / 1024 <= 64 ? "ok" : "MISS") }'
