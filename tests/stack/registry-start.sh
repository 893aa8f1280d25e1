#!/usr/bin/env bash
# tests/stack/registry-start.sh DIR — starts throwaway OCI registries for the
# tests: the CNCF distribution registry (Debian's docker-registry, 2.8) three
# times on 127.0.0.1, plus the token service of the third:
#   plain  no authentication                       (REGISTRY_PORT, 5000)
#   basic  htpasswd Basic auth, bcrypt entries      (REGISTRY_BASIC_PORT, 5001)
#   token  Bearer tokens from registry_token_issuer.py, RS256 JWTs
#                                                   (REGISTRY_TOKEN_PORT, 5002)
#   issuer the token service                        (REGISTRY_ISSUER_PORT, 5003)
# Everything lives under DIR (which must be missing or empty): configs,
# data, logs (DIR/NAME.log: the registry's access log is in it), PIDs
# (DIR/run/NAME.pid); tests/stack/registry-stop.sh DIR stops them by PID.
#
# On success DIR/registry.env holds, as shell assignments:
#   REGISTRY_PLAIN, REGISTRY_BASIC, REGISTRY_TOKEN     host:port of each
#   REGISTRY_ISSUER                                    http://host:port
#   REGISTRY_BASIC_USER, REGISTRY_BASIC_PASSWORD       a user of basic
#   REGISTRY_TOKEN_USER, REGISTRY_TOKEN_PASSWORD       pull+push on token
#   REGISTRY_TOKEN_READER, REGISTRY_TOKEN_READER_PASSWORD  pull only
#   REGISTRY_LOG_PLAIN, REGISTRY_LOG_BASIC, REGISTRY_LOG_TOKEN  log files
#   REGISTRY_TEAM_ACL   the token service's team ACL file (absent until
#                       navette team apply writes it)
# Anonymous requests to the token service get pull rights.
# On failure it prints the end of the logs, stops what it started and
# exits non-zero. Linux; needs docker-registry, htpasswd
# (apache2-utils), openssl, python3 and curl (vendor/packages.txt).
set -eu -o pipefail
. "$(dirname "$0")/../need_dir_lib.sh"

if [ $# -ne 1 ] || [ -z "$1" ]; then
	echo "usage: $0 DIR" >&2
	exit 2
fi
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
DIR=$(realpath -m "$1")
need_dir DIR
PLAIN_PORT=${REGISTRY_PORT:-5000}
BASIC_PORT=${REGISTRY_BASIC_PORT:-5001}
TOKEN_PORT=${REGISTRY_TOKEN_PORT:-5002}
ISSUER_PORT=${REGISTRY_ISSUER_PORT:-5003}
LIMIT=${REGISTRY_START_TIMEOUT:-30}
SERVICE=navette-test-registry
ISSUER=navette-test-issuer

say() { printf 'registry-start: %s\n' "$*"; }

for tool in docker-registry htpasswd openssl python3 curl realpath; do
	command -v "$tool" >/dev/null 2>&1 || {
		say "error: $tool not found (install the registry rows of vendor/packages.txt)" >&2
		exit 1
	}
done
if [ -e "$DIR" ] && [ -n "$(ls -A "$DIR" 2>/dev/null)" ]; then
	say "error: $DIR is not empty" >&2
	exit 1
fi
mkdir -p "$DIR/run"
started_ns=$(date +%s%N)

fail() {
	say "error: $*" >&2
	for f in "$DIR"/*.log; do
		[ -f "$f" ] || continue
		echo "--- $f" >&2
		tail -n 20 "$f" >&2
	done
	bash "$HERE/registry-stop.sh" "$DIR" >&2 || true
	exit 1
}

random_word() { openssl rand -hex 12; }

# Starts a program in its own session, its PID kept in DIR/run/NAME.pid.
spawn() {
	local name=$1
	shift
	setsid "$@" >>"$DIR/$name.log" 2>&1 </dev/null &
	echo $! >"$DIR/run/$name.pid"
}

registry_config() { # name port [auth yaml]
	mkdir -p "$DIR/$1/data"
	cat >"$DIR/$1/config.yml" <<EOF
version: 0.1
log:
  level: info
  formatter: text
storage:
  filesystem:
    rootdirectory: $DIR/$1/data
  delete:
    enabled: true
http:
  addr: 127.0.0.1:$2
  secret: $(random_word)
$3
EOF
}

# basic: bcrypt entries, as registry 2.8 wants
BASIC_USER=navette
BASIC_PASSWORD=$(random_word)
htpasswd -Bbn "$BASIC_USER" "$BASIC_PASSWORD" >"$DIR/htpasswd" 2>/dev/null ||
	fail "htpasswd failed"

# token: a signing key, its certificate as the registry's trust root, users
TOKEN_USER=pusher
TOKEN_PASSWORD=$(random_word)
READER=reader
READER_PASSWORD=$(random_word)
openssl req -x509 -newkey rsa:2048 -nodes -keyout "$DIR/token.key" \
	-out "$DIR/token.crt" -days 3650 -subj "/CN=$ISSUER" \
	>/dev/null 2>&1 || fail "cannot make the token signing key"
chmod 600 "$DIR/token.key"
cat >"$DIR/users.json" <<EOF
{"$TOKEN_USER": {"password": "$TOKEN_PASSWORD", "actions": ["pull", "push", "delete"]},
 "$READER": {"password": "$READER_PASSWORD", "actions": ["pull"]},
 "": {"actions": ["pull"]}}
EOF
chmod 600 "$DIR/users.json"

# Something already listening on one of our ports would answer in our
# place (with other users and keys): refuse rather than test against it.
port_busy() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
for p in "$PLAIN_PORT" "$BASIC_PORT" "$TOKEN_PORT" "$ISSUER_PORT"; do
	if port_busy "$p"; then
		echo "registry-start: error: port $p on 127.0.0.1 is in use" \
			"(set REGISTRY_PORT to move the stack)" >&2
		exit 1
	fi
done

registry_config plain "$PLAIN_PORT" ""
registry_config basic "$BASIC_PORT" "auth:
  htpasswd:
    realm: navette-test
    path: $DIR/htpasswd"
registry_config token "$TOKEN_PORT" "auth:
  token:
    realm: http://127.0.0.1:$ISSUER_PORT/token
    service: $SERVICE
    issuer: $ISSUER
    rootcertbundle: $DIR/token.crt"

spawn issuer python3 "$HERE/registry_token_issuer.py" --port "$ISSUER_PORT" \
	--key "$DIR/token.key" --users "$DIR/users.json" --issuer "$ISSUER" \
	--service "$SERVICE" --acl "$DIR/team-acl.json"
for name in plain basic token; do
	spawn "$name" docker-registry serve "$DIR/$name/config.yml"
done

# ready when /v2/ answers (200, or 401 where auth is on) and the issuer
# hands out an anonymous token
deadline=$(($(date +%s) + LIMIT))
for pair in plain:$PLAIN_PORT:200 basic:$BASIC_PORT:401 token:$TOKEN_PORT:401; do
	IFS=: read -r name port want <<<"$pair"
	until [ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/v2/" 2>/dev/null)" = "$want" ]; do
		kill -0 "$(cat "$DIR/run/$name.pid")" 2>/dev/null || fail "registry $name exited"
		[ "$(date +%s)" -lt "$deadline" ] || fail "registry $name not up after ${LIMIT}s"
		sleep 0.1
	done
done
until curl -sf -o /dev/null "http://127.0.0.1:$ISSUER_PORT/token?service=$SERVICE&scope=repository:probe:pull"; do
	kill -0 "$(cat "$DIR/run/issuer.pid")" 2>/dev/null || fail "the token issuer exited"
	[ "$(date +%s)" -lt "$deadline" ] || fail "the token issuer not up after ${LIMIT}s"
	sleep 0.1
done
curl -sf -o /dev/null -X POST "http://127.0.0.1:$ISSUER_PORT/_config?reset=1" ||
	fail "cannot reset the token issuer"

umask 077
cat >"$DIR/registry.env" <<EOF
REGISTRY_PLAIN=127.0.0.1:$PLAIN_PORT
REGISTRY_BASIC=127.0.0.1:$BASIC_PORT
REGISTRY_TOKEN=127.0.0.1:$TOKEN_PORT
REGISTRY_ISSUER=http://127.0.0.1:$ISSUER_PORT
REGISTRY_BASIC_USER=$BASIC_USER
REGISTRY_BASIC_PASSWORD=$BASIC_PASSWORD
REGISTRY_TOKEN_USER=$TOKEN_USER
REGISTRY_TOKEN_PASSWORD=$TOKEN_PASSWORD
REGISTRY_TOKEN_READER=$READER
REGISTRY_TOKEN_READER_PASSWORD=$READER_PASSWORD
REGISTRY_LOG_PLAIN=$DIR/plain.log
REGISTRY_LOG_BASIC=$DIR/basic.log
REGISTRY_LOG_TOKEN=$DIR/token.log
REGISTRY_STACK_DIR=$DIR
REGISTRY_TEAM_ACL=$DIR/team-acl.json
EOF
ms=$((($(date +%s%N) - started_ns) / 1000000))
say "up in $((ms / 1000)).$(printf '%03d' $((ms % 1000))) s: plain :$PLAIN_PORT, basic :$BASIC_PORT, token :$TOKEN_PORT (issuer :$ISSUER_PORT), dir $DIR"
