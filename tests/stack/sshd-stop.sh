#!/usr/bin/env bash
# tests/stack/sshd-stop.sh DIR — stops the sshd that tests/stack/sshd-start.sh
# started in DIR, by the PID recorded in DIR/run/sshd.pid (never by name),
# and the connections it accepted: sshd forks one process per connection
# (which calls setsid, so no process group holds them all) and those
# outlive the listener, a ControlMaster's included. So the listener's
# children are noted first, then each gets SIGTERM, a bounded wait
# (SSHD_STOP_WAIT seconds, 10) and SIGKILL. The listener is only signalled
# while its command line still names a path under DIR, a child only while
# it is the sshd noted (PID and start time), so a recycled PID is left
# alone. Idempotent: a missing DIR or PID file or an sshd that
# is already gone is fine. DIR itself (keys, log) is kept; remove it
# yourself. The test user and its home are kept too.
set -eu -o pipefail
. "$(dirname "$0")/../need_dir_lib.sh"

if [ $# -ne 1 ] || [ -z "$1" ]; then
	echo "usage: $0 DIR" >&2
	exit 2
fi
DIR=$(realpath -m "$1")
need_dir DIR
WAIT=${SSHD_STOP_WAIT:-10}

alive() {
	local state
	case ${1:-} in '' | *[!0-9]*) return 1 ;; esac
	state=$(ps -o stat= -p "$1" 2>/dev/null) || return 1
	case $state in Z*) return 1 ;; esac
}
# listener_ours PID: alive and started with a path under DIR.
listener_ours() {
	alive "$1" || return 1
	tr '\0' '\n' 2>/dev/null <"/proc/$1/cmdline" | grep -qF -- "$DIR/"
}
# started PID: the process's start time (field 22 of /proc/PID/stat,
# after the parenthesised name, which may hold spaces).
started() {
	sed 's/^.*) //' 2>/dev/null <"/proc/$1/stat" | cut -d' ' -f20
}
# child_ours PID: alive, an sshd, and the very process noted as the
# listener's child (same PID and start time), whoever its parent is now.
child_ours() {
	alive "$1" || return 1
	[ "$(cat 2>/dev/null "/proc/$1/comm")" = sshd ] || return 1
	case " $NOTED " in *" $1:$(started "$1") "*) return 0 ;; esac
	return 1
}

# stop_one WHAT PID CHECK: SIGTERM, a bounded wait while CHECK PID holds,
# then SIGKILL.
stop_one() {
	local what=$1 pid=$2 check=$3 ticks
	"$check" "$pid" || return 0
	kill -TERM "$pid" 2>/dev/null || true
	ticks=$((WAIT * 10))
	while [ "$ticks" -gt 0 ] && "$check" "$pid"; do
		sleep 0.1
		ticks=$((ticks - 1))
	done
	if "$check" "$pid"; then
		echo "sshd-stop: $what ($pid) still running after ${WAIT}s: SIGKILL" >&2
		kill -KILL "$pid" 2>/dev/null || true
		sleep 0.2
		if "$check" "$pid"; then
			echo "sshd-stop: error: $what ($pid) survived SIGKILL" >&2
			return 1
		fi
	fi
}

status=0
pidfile=$DIR/run/sshd.pid
if [ -f "$pidfile" ]; then
	LISTENER=$(cat "$pidfile" 2>/dev/null)
	if listener_ours "$LISTENER"; then
		NOTED=
		for child in $(ps -o pid= --ppid "$LISTENER" 2>/dev/null); do
			NOTED="$NOTED $child:$(started "$child")"
		done
		stop_one "sshd" "$LISTENER" listener_ours || status=1
		for entry in $NOTED; do
			stop_one "sshd connection" "${entry%%:*}" child_ours || status=1
		done
	fi
	[ "$status" -ne 0 ] || rm -f "$pidfile"
fi
echo "sshd-stop: stopped $DIR"
exit "$status"
