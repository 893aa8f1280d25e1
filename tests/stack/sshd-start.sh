#!/usr/bin/env bash
# tests/stack/sshd-start.sh DIR — starts a throwaway OpenSSH sshd on
# 127.0.0.1, the "login node" of the Slurm test cluster for the tests of
# Slurm through SSH: its own host key, a user CA (TrustedUserCAKeys), an
# AuthorizedPrincipalsFile per user, a RevokedKeys KRL (empty at start), no
# authorized_keys, no passwords, no PAM, no agent, TCP or X11 forwarding,
# LogLevel VERBOSE (one "Connection from" line per TCP connection). Only
# certificates signed by the CA for the principal SSHD_PRINCIPAL log in, as
# the test user SSHD_USER (created if missing: useradd -m, password '*').
# With SLURM_ENV (the slurm.env of tests/stack/slurm-start.sh), the user's
# sessions get SLURM_CONF from sshd's own SetEnv, so that sbatch, squeue,
# sacct and scancel (in /usr/bin) reach that cluster, in non-interactive
# sessions too, whatever the user's shell files say. DIR must be missing or
# empty; keys, config, PID file and log stay under it (never /etc; sshd
# itself needs /run/sshd, its privilege separation folder). Linux only, as
# root (Debian: openssh-server; see vendor/packages.txt).
#
# sshd runs in the foreground (-D) in its own session; its PID is in
# DIR/run/sshd.pid and tests/stack/sshd-stop.sh DIR stops it and the
# connections it accepted. On success DIR/sshd.env holds, as shell
# assignments: SSHD_HOST, SSHD_PORT, SSHD_USER, SSHD_PRINCIPAL, SSHD_CA (the
# user CA's private key: ssh-keygen -s), SSHD_HOST_KEY_PUB, SSHD_FINGERPRINT
# (the host key's SHA256:...), SSHD_KNOWN_HOSTS (a known_hosts file pinning
# that key for [SSHD_HOST]:SSHD_PORT), SSHD_KRL (ssh-keygen -k -u -f adds to
# it; sshd rereads it at each login), SSHD_LOG and SSHD_SLURM_CONF (empty
# without SLURM_ENV). On failure it prints the end of the log, stops what it
# started (DIR is kept for inspection) and exits non-zero.
#
# Environment (all optional):
#   SSHD_PORT            port on 127.0.0.1 (2222)
#   SSHD_USER            the test user (navette-ssh)
#   SSHD_PRINCIPAL       the principal its certificates must hold (alice)
#   SLURM_ENV            slurm.env of the Slurm stack the user reaches
#   SSHD_START_TIMEOUT   seconds before giving up (20)
#   SSHD_SHELL           the login shell of a user it creates (/bin/sh); a
#                        user that exists must already have it
#   SSHD_SET_ENV         more NAME=value words for the sessions' SetEnv
#                        (no space or quote in them), e.g. a PATH with
#                        fake commands first, or a BASH_ENV
#   SSHD_LOG_LEVEL       sshd's LogLevel (VERBOSE; DEBUG1 logs the
#                        requests of each channel, agent forwarding's)
set -eu -o pipefail
. "$(dirname "$0")/../need_dir_lib.sh"

if [ $# -ne 1 ] || [ -z "$1" ]; then
	echo "usage: $0 DIR" >&2
	exit 2
fi
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
DIR=$(realpath -m "$1")
need_dir DIR

PORT=${SSHD_PORT:-2222}
USER_NAME=${SSHD_USER:-navette-ssh}
PRINCIPAL=${SSHD_PRINCIPAL:-alice}
LIMIT=${SSHD_START_TIMEOUT:-20}
LOGIN_SHELL=${SSHD_SHELL:-/bin/sh}
SET_ENV=${SSHD_SET_ENV:-}
LOG_LEVEL=${SSHD_LOG_LEVEL:-VERBOSE}
HOST=127.0.0.1

started_ns=$(date +%s%N)
deadline=$(($(date +%s) + LIMIT))

say() { printf 'sshd-start: %s\n' "$*"; }

[ "$(uname -s)" = Linux ] || {
	say "error: the sshd stack is Linux only (it creates a user with useradd)" >&2
	exit 1
}
SSHD=/usr/sbin/sshd
[ -x "$SSHD" ] || {
	say "error: $SSHD not found (install openssh-server: vendor/packages.txt, group test)" >&2
	exit 1
}
for tool in ssh-keygen useradd usermod runuser getent realpath setsid; do
	command -v "$tool" >/dev/null 2>&1 || {
		say "error: $tool not found (openssh-server, openssh-client and passwd: vendor/packages.txt)" >&2
		exit 1
	}
done
if [ "$(id -u)" -ne 0 ]; then
	say "error: sshd must run as root to log users in (and useradd needs root)" >&2
	exit 1
fi
case $USER_NAME in
'' | *[!a-z0-9_-]* | [!a-z_]*)
	say "error: SSHD_USER='$USER_NAME' is not a plain user name ([a-z_][a-z0-9_-]*)" >&2
	exit 1 ;;
esac
case $PRINCIPAL in
'' | *[!A-Za-z0-9@._-]*)
	say "error: SSHD_PRINCIPAL='$PRINCIPAL' holds characters other than [A-Za-z0-9@._-]" >&2
	exit 1 ;;
esac
case $LOG_LEVEL in
QUIET | FATAL | ERROR | INFO | VERBOSE | DEBUG | DEBUG1 | DEBUG2 | DEBUG3) ;;
*)
	say "error: SSHD_LOG_LEVEL='$LOG_LEVEL' is not one of sshd's levels (VERBOSE, DEBUG1...)" >&2
	exit 1 ;;
esac
[ -x "$LOGIN_SHELL" ] || {
	say "error: SSHD_SHELL=$LOGIN_SHELL is not an executable" >&2
	exit 1
}
for word in $SET_ENV; do
	case $word in
	[A-Za-z_]*=*) ;;
	*)
		say "error: SSHD_SET_ENV: '$word' is not NAME=value" >&2
		exit 1 ;;
	esac
	case $word in
	*[\"\']*)
		say "error: SSHD_SET_ENV: '$word' holds a quote (sshd_config's SetEnv cannot carry it)" >&2
		exit 1 ;;
	esac
done
if [ -n "$(ls -A "$DIR" 2>/dev/null)" ]; then
	say "error: $DIR is not empty (run tests/stack/sshd-stop.sh and remove it)" >&2
	exit 1
fi

# SLURM_CONF for the user's sessions, read from the Slurm stack's env file.
SLURM_CONF_PATH=
if [ -n "${SLURM_ENV:-}" ]; then
	[ -r "$SLURM_ENV" ] || {
		say "error: SLURM_ENV=$SLURM_ENV cannot be read (start tests/stack/slurm-start.sh first)" >&2
		exit 1
	}
	SLURM_CONF_PATH=$(unset SLURM_CONF && . "$SLURM_ENV" && printf '%s' "${SLURM_CONF:-}")
	case $SLURM_CONF_PATH in
	/*) ;;
	*)
		say "error: $SLURM_ENV names no absolute SLURM_CONF" >&2
		exit 1 ;;
	esac
	case $SLURM_CONF_PATH in
	*[[:space:]\"\']*)
		say "error: SLURM_CONF=$SLURM_CONF_PATH holds a space or a quote (sshd_config's SetEnv cannot carry it)" >&2
		exit 1 ;;
	esac
fi

port_busy() { (exec 3<>"/dev/tcp/$HOST/$1") 2>/dev/null; }
if port_busy "$PORT"; then
	say "error: port $PORT on $HOST is in use (set SSHD_PORT to move the stack)" >&2
	exit 1
fi

# The test user: created once, kept (other stacks may use it). A new user
# is "locked" ('!' in /etc/shadow) and sshd refuses locked accounts even
# with a certificate: '*' means no password, not locked.
if ! getent passwd "$USER_NAME" >/dev/null; then
	useradd -m -s "$LOGIN_SHELL" "$USER_NAME"
	usermod -p '*' "$USER_NAME"
fi
if [ -n "${SSHD_SHELL:-}" ] &&
	[ "$(getent passwd "$USER_NAME" | cut -d: -f7)" != "$LOGIN_SHELL" ]; then
	say "error: user $USER_NAME exists with another shell than SSHD_SHELL=$LOGIN_SHELL" >&2
	exit 1
fi
case $(getent shadow "$USER_NAME" | cut -d: -f2) in
'!'*)
	say "error: user $USER_NAME is locked ('!' in /etc/shadow): usermod -p '*' $USER_NAME" >&2
	exit 1 ;;
esac
USER_HOME=$(getent passwd "$USER_NAME" | cut -d: -f6)

mkdir -p "$DIR"/{etc/principals,run,log}
# sshd reads the principals file as the user: DIR must let it through.
chmod 755 "$DIR" "$DIR/etc" "$DIR/etc/principals"
# Debian's sshd is built with /run/sshd as its privilege separation folder.
mkdir -p /run/sshd
chmod 755 /run/sshd

if [ -n "$SLURM_CONF_PATH" ] &&
	! runuser -u "$USER_NAME" -- test -r "$SLURM_CONF_PATH"; then
	say "error: $USER_NAME cannot read $SLURM_CONF_PATH (each folder above it must be searchable by others: chmod o+x)" >&2
	exit 1
fi

LOG=$DIR/log/sshd.log
on_exit() {
	local status=$?
	[ "$status" -ne 0 ] || return 0
	say "error: sshd did not start (status $status); last log lines:" >&2
	local f
	for f in "$DIR"/log/*; do
		[ -f "$f" ] || continue
		echo "---- $f" >&2
		tail -n 25 "$f" >&2
	done
	bash "$HERE/sshd-stop.sh" "$DIR" >&2 || true
	exit "$status"
}
trap on_exit EXIT

# Keys (ssh-keygen writes private keys 0600): the login node's host key,
# the team's user CA, an empty KRL.
ssh-keygen -q -t ed25519 -N '' -C "navette-test-host" -f "$DIR/etc/host_ed25519"
ssh-keygen -q -t ed25519 -N '' -C "navette-test-user-ca" -f "$DIR/etc/user_ca"
ssh-keygen -q -k -f "$DIR/etc/revoked.krl"
printf '%s\n' "$PRINCIPAL" >"$DIR/etc/principals/$USER_NAME"
chmod 644 "$DIR/etc/principals/$USER_NAME"
FINGERPRINT=$(ssh-keygen -lf "$DIR/etc/host_ed25519.pub" | cut -d' ' -f2)
printf '[%s]:%s %s\n' "$HOST" "$PORT" \
	"$(cut -d' ' -f1,2 "$DIR/etc/host_ed25519.pub")" >"$DIR/known_hosts"

CONF=$DIR/etc/sshd_config
{
	cat <<EOF
# Generated by tests/stack/sshd-start.sh: a throwaway login node.
Port $PORT
ListenAddress $HOST
HostKey $DIR/etc/host_ed25519
PidFile $DIR/run/sshd.daemonpid
AuthenticationMethods publickey
PubkeyAuthentication yes
AuthorizedKeysFile none
TrustedUserCAKeys $DIR/etc/user_ca.pub
AuthorizedPrincipalsFile $DIR/etc/principals/%u
RevokedKeys $DIR/etc/revoked.krl
PasswordAuthentication no
KbdInteractiveAuthentication no
HostbasedAuthentication no
PermitRootLogin no
UsePAM no
# DIR sits in a build or temporary folder that sshd's ownership checks
# would refuse.
StrictModes no
AllowAgentForwarding no
AllowTcpForwarding no
AllowStreamLocalForwarding no
PermitTunnel no
X11Forwarding no
PermitUserEnvironment no
LogLevel $LOG_LEVEL
EOF
	# SetEnv (sshd 7.8+) is sshd's own: no file in the user's home, and
	# it overrides what the client or the user's files could set. Only
	# the first SetEnv line counts: one line holds them all.
	words=${SLURM_CONF_PATH:+SLURM_CONF=$SLURM_CONF_PATH}
	words=${words:+$words }$SET_ENV
	[ -z "${words// /}" ] || printf 'SetEnv %s\n' "$words"
} >"$CONF"
"$SSHD" -t -f "$CONF" 2>>"$LOG"

# sshd re-executes itself for each connection: it needs its absolute path.
printf '%q ' "$SSHD" -D -f "$CONF" -E "$LOG" >"$DIR/run/sshd.cmd"
setsid "$SSHD" -D -f "$CONF" -E "$LOG" >>"$DIR/log/sshd.out" 2>&1 </dev/null &
echo $! >"$DIR/run/sshd.pid"

# Ready when it says it listens (a probe connection would count in the log).
until grep -qF "Server listening on $HOST port $PORT" "$LOG" 2>/dev/null; do
	if ! kill -0 "$(cat "$DIR/run/sshd.pid")" 2>/dev/null; then
		say "error: sshd exited before listening" >&2
		exit 1
	fi
	if [ "$(date +%s)" -ge "$deadline" ]; then
		say "error: timed out after ${LIMIT}s waiting for sshd to listen" >&2
		exit 1
	fi
	sleep 0.1
done

cat >"$DIR/sshd.env.tmp" <<EOF
SSHD_HOST=$HOST
SSHD_PORT=$PORT
SSHD_USER=$USER_NAME
SSHD_USER_HOME=$USER_HOME
SSHD_PRINCIPAL=$PRINCIPAL
SSHD_CA=$DIR/etc/user_ca
SSHD_HOST_KEY_PUB=$DIR/etc/host_ed25519.pub
SSHD_FINGERPRINT=$FINGERPRINT
SSHD_KNOWN_HOSTS=$DIR/known_hosts
SSHD_KRL=$DIR/etc/revoked.krl
SSHD_LOG=$LOG
SSHD_SLURM_CONF=$SLURM_CONF_PATH
EOF
mv "$DIR/sshd.env.tmp" "$DIR/sshd.env"

ms=$((($(date +%s%N) - started_ns) / 1000000))
say "up in $((ms / 1000)).$(printf '%03d' $((ms % 1000))) s: $USER_NAME@$HOST:$PORT $FINGERPRINT (dir $DIR, pid $(cat "$DIR/run/sshd.pid"))"
