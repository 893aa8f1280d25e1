#!/usr/bin/env bash
# tests/stack/s3-start.sh DIR — starts a throwaway S3 server for the tests:
# Ceph radosgw on a one-host RADOS cluster (one ceph-mon, one ceph-osd whose
# objects live in RAM with memstore, no mgr), cephx on, everything bound to
# 127.0.0.1, configured by DIR/ceph.conf and kept under DIR (which must be
# missing or empty). Linux only (Debian: ceph-mon, ceph-osd, radosgw,
# uuid-runtime, curl; see vendor/packages.txt).
#
# The daemons run in the background; their PIDs are in DIR/run/*.pid and
# tests/stack/s3-stop.sh DIR stops them. On success DIR/users.env holds, as
# shell assignments: S3_ENDPOINT, S3_REGION, S3_ACCESS_KEY, S3_SECRET_KEY (a
# test user) and S3_ACCESS_KEY_2, S3_SECRET_KEY_2 (a second, separate user);
# S3_ENDPOINT_VHOST is the same server for virtual-host addressing
# (http://localhost:PORT, rgw_dns_name = localhost: BUCKET.localhost:PORT).
# On failure it prints the end of the logs, stops what it started (DIR is
# kept for inspection) and exits non-zero.
#
# Environment (all optional):
#   S3_PORT           HTTP port of radosgw (7480)
#   S3_MON_PORT       ceph-mon msgr2 port; msgr1 is the next one (S3_PORT+20000)
#   S3_MSGR_PORT_MIN  first of 100 ports for the OSD (S3_PORT+20100)
#   MEMSTORE_BYTES    OSD capacity, held in RAM (1 GiB)
#   ACCESS_KEY, SECRET_KEY      keys of the test user
#   ACCESS_KEY_2, SECRET_KEY_2  keys of the second user
#   S3_START_TIMEOUT  seconds before giving up (90)
set -eu -o pipefail
# need_dir NAME...: refuses to go on (exit 2) unless each variable NAME
# holds a folder this script may write under: absolute, not /, no '..',
# inside TMPDIR, /tmp, NEED_DIR_ROOT or a build folder (one with a
# CMakeCache.txt). tests/integration/lib.sh's guard, for a script that
# does not source it.
need_dir() {
	local name value root
	for name in "$@"; do
		value=${!name-}
		case $value in
		'' | / | //* | [!/]* | *..*)
			echo "$0: refusing to run: $name='$value' is not a folder it may write under" >&2
			exit 2 ;;
		esac
		for root in "${TMPDIR:-/tmp}" /tmp "${NEED_DIR_ROOT:-/nonexistent}"; do
			for root in "$root" "$(cd "$root" 2>/dev/null && pwd -P)"; do
				case ${root%/} in '' | /) continue ;; esac
				case $value/ in "${root%/}"/?*) continue 3 ;; esac
			done
		done
		root=$value
		while [ "$root" != / ]; do
			[ -f "$root/CMakeCache.txt" ] && continue 2
			root=$(dirname "$root")
		done
		echo "$0: refusing to run: $name='$value' is outside TMPDIR, /tmp and any build folder" >&2
		exit 2
	done
}

if [ $# -ne 1 ] || [ -z "$1" ]; then
	echo "usage: $0 DIR" >&2
	exit 2
fi
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
DIR=$(realpath -m "$1")
need_dir DIR

PORT=${S3_PORT:-7480}
MON_PORT=${S3_MON_PORT:-$((PORT + 20000))}
MSGR_MIN=${S3_MSGR_PORT_MIN:-$((PORT + 20100))}
MEM_BYTES=${MEMSTORE_BYTES:-1073741824}
AK1=${ACCESS_KEY:-NAVETTETESTKEY000001}
SK1=${SECRET_KEY:-navette-test-secret-not-a-real-key-000001}
AK2=${ACCESS_KEY_2:-NAVETTETESTKEY000002}
SK2=${SECRET_KEY_2:-navette-test-secret-not-a-real-key-000002}
# radosgw 16 accepts any region in the SigV4 credential scope, but its
# zonegroup's api_name is "default": a CreateBucket LocationConstraint must
# be absent or "default" ("us-east-1" gets 400 InvalidLocationConstraint).
# With "us-east-1", S3 clients send no LocationConstraint, which works.
REGION=us-east-1
LIMIT=${S3_START_TIMEOUT:-90}
ENDPOINT=http://127.0.0.1:$PORT

started_ns=$(date +%s%N)
deadline=$(($(date +%s) + LIMIT))

say() { printf 's3-start: %s\n' "$*"; }

for tool in ceph-mon ceph-osd radosgw radosgw-admin ceph ceph-authtool \
	monmaptool uuidgen curl realpath; do
	command -v "$tool" >/dev/null 2>&1 || {
		say "error: $tool not found (install the S3 stack rows of vendor/packages.txt)" >&2
		exit 1
	}
done

if [ -n "$(ls -A "$DIR" 2>/dev/null)" ]; then
	say "error: $DIR is not empty (run tests/stack/s3-stop.sh and remove it)" >&2
	exit 1
fi

# Something already listening on one of our ports would answer in our place.
port_busy() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
for p in "$PORT" "$MON_PORT" "$((MON_PORT + 1))"; do
	if port_busy "$p"; then
		say "error: port $p on 127.0.0.1 is in use (set S3_PORT to move the stack)" >&2
		exit 1
	fi
done

mkdir -p "$DIR"/{run,log,mon.a,osd.0,rgw}
CONF=$DIR/ceph.conf
ceph_cli() { timeout 20 ceph -c "$CONF" --connect-timeout 5 "$@"; }

on_exit() {
	local status=$?
	[ "$status" -ne 0 ] || return 0
	say "error: the S3 stack did not start (status $status); last logs:" >&2
	local f
	for f in "$DIR"/log/*; do
		[ -f "$f" ] || continue
		echo "---- $f" >&2
		tail -n 25 "$f" >&2
	done
	bash "$HERE/s3-stop.sh" "$DIR" >&2 || true
	exit "$status"
}
trap on_exit EXIT

# now_left: fails once the start deadline has passed.
now_left() { [ "$(date +%s)" -lt "$deadline" ]; }

# wait_until WHAT COMMAND...: polls COMMAND until it succeeds or the deadline.
wait_until() {
	local what=$1
	shift
	until "$@" >/dev/null 2>&1; do
		if ! now_left; then
			say "error: timed out after ${LIMIT}s waiting for $what" >&2
			return 1
		fi
		sleep 0.3
	done
}

# spawn NAME COMMAND...: runs a daemon in the background, records its PID.
spawn() {
	local name=$1
	shift
	nohup "$@" >>"$DIR/log/$name.out" 2>&1 </dev/null &
	echo $! >"$DIR/run/$name.pid"
}

fsid=$(uuidgen)
mon_addr="[v2:127.0.0.1:$MON_PORT,v1:127.0.0.1:$((MON_PORT + 1))]"
cat >"$CONF" <<EOF
# Generated by tests/stack/s3-start.sh: a throwaway test cluster.
[global]
fsid = $fsid
mon_host = $mon_addr
public_addr = 127.0.0.1
cluster_addr = 127.0.0.1
ms_bind_port_min = $MSGR_MIN
ms_bind_port_max = $((MSGR_MIN + 99))
auth_cluster_required = cephx
auth_service_required = cephx
auth_client_required = cephx
run_dir = $DIR/run
admin_socket = $DIR/run/\$name.asok
crash_dir = $DIR/crash
log_file = $DIR/log/\$name.log
keyring = $DIR/keyring
osd_pool_default_size = 1
osd_pool_default_min_size = 1
osd_pool_default_pg_num = 8
osd_pool_default_pg_autoscale_mode = off
mon_allow_pool_size_one = true
mon_max_pg_per_osd = 1000

[mon]
mon_data = $DIR/\$name

[osd]
osd_data = $DIR/\$name
keyring = $DIR/\$name/keyring
osd_objectstore = memstore
memstore_device_bytes = $MEM_BYTES

[client.rgw.a]
keyring = $DIR/rgw/keyring
rgw_data = $DIR/rgw
rgw_frontends = beast endpoint=127.0.0.1:$PORT
# virtual-host addressing: BUCKET.localhost:PORT names the bucket
rgw_dns_name = localhost
EOF

# Monitor: keys for itself and for the admin client, a one-entry monmap.
ceph-authtool --create-keyring "$DIR/keyring" --gen-key -n mon. \
	--cap mon 'allow *' >/dev/null
ceph-authtool "$DIR/keyring" --gen-key -n client.admin \
	--cap mon 'allow *' --cap osd 'allow *' --cap mgr 'allow *' >/dev/null
monmaptool --create --enable-all-features --fsid "$fsid" \
	--addv a "$mon_addr" "$DIR/monmap" >/dev/null
ceph-mon -c "$CONF" --mkfs -i a --monmap "$DIR/monmap" \
	--keyring "$DIR/keyring" >>"$DIR/log/mon.a.out" 2>&1
spawn mon.a ceph-mon -c "$CONF" -i a -f
wait_until "ceph-mon" ceph_cli mon stat

# OSD: registered with its own cephx key, then formatted and started.
osd_uuid=$(uuidgen)
osd_key=$(ceph-authtool --gen-print-key)
printf '{"cephx_secret": "%s"}' "$osd_key" |
	ceph_cli osd new "$osd_uuid" 0 -i - >/dev/null
ceph-osd -c "$CONF" -i 0 --mkfs --key "$osd_key" --osd-uuid "$osd_uuid" \
	>>"$DIR/log/osd.0.out" 2>&1
printf '[osd.0]\n\tkey = %s\n' "$osd_key" >"$DIR/osd.0/keyring"
spawn osd.0 ceph-osd -c "$CONF" -i 0 -f
osd_up() { ceph_cli osd dump 2>/dev/null | grep -q '^osd\.0 up'; }
wait_until "ceph-osd" osd_up

# Gateway: radosgw creates its pools and default zone on first start.
ceph_cli auth get-or-create client.rgw.a mon 'allow rw' osd 'allow rwx' \
	-o "$DIR/rgw/keyring"
spawn rgw.a radosgw -c "$CONF" -n client.rgw.a -f
wait_until "radosgw to answer HTTP" curl -s -o /dev/null "$ENDPOINT/"

# Users, then a signed ListBuckets as the proof that it all works.
make_user() { # UID ACCESS SECRET
	timeout 60 radosgw-admin -c "$CONF" user create --uid="$1" \
		--display-name="navette $1" --access-key="$2" --secret-key="$3" \
		>"$DIR/$1.json" 2>>"$DIR/log/radosgw-admin.out"
}
make_user tester "$AK1" "$SK1"
make_user tester2 "$AK2" "$SK2"
signed_ok() { # ACCESS SECRET
	[ "$(curl -s -o /dev/null -w '%{http_code}' --max-time 5 \
		--aws-sigv4 "aws:amz:$REGION:s3" --user "$1:$2" \
		-H 'x-amz-content-sha256: UNSIGNED-PAYLOAD' "$ENDPOINT/")" = 200 ]
}
wait_until "a signed request of the test user" signed_ok "$AK1" "$SK1"
wait_until "a signed request of the second user" signed_ok "$AK2" "$SK2"

cat >"$DIR/users.env.tmp" <<EOF
S3_ENDPOINT=$ENDPOINT
S3_ENDPOINT_VHOST=http://localhost:$PORT
S3_REGION=$REGION
S3_ACCESS_KEY=$AK1
S3_SECRET_KEY=$SK1
S3_ACCESS_KEY_2=$AK2
S3_SECRET_KEY_2=$SK2
EOF
mv "$DIR/users.env.tmp" "$DIR/users.env"

ms=$((($(date +%s%N) - started_ns) / 1000000))
say "up in $((ms / 1000)).$(printf '%03d' $((ms % 1000))) s: $ENDPOINT (dir $DIR, pids $(cat "$DIR"/run/*.pid | tr '\n' ' '| sed 's/ $//'))"
