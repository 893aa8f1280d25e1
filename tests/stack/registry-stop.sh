#!/usr/bin/env bash
# tests/stack/registry-stop.sh DIR — stops what tests/stack/registry-start.sh
# started in DIR, by the PIDs recorded in DIR/run/*.pid (never by name):
# SIGTERM, a bounded wait (REGISTRY_STOP_WAIT seconds each, 10), then
# SIGKILL. A PID is signalled only while its command line still names a
# file of DIR, so a recycled PID is left alone. Idempotent: a missing DIR,
# PID file or process is fine. DIR itself (logs, data) is kept.
set -eu -o pipefail
. "$(dirname "$0")/../need_dir_lib.sh"

if [ $# -ne 1 ] || [ -z "$1" ]; then
	echo "usage: $0 DIR" >&2
	exit 2
fi
DIR=$(realpath -m "$1")
need_dir DIR
WAIT=${REGISTRY_STOP_WAIT:-10}

# ours PID: alive (not a zombie) and started with an argument under DIR.
ours() {
	local state
	state=$(ps -o stat= -p "$1" 2>/dev/null) || return 1
	case $state in Z*) return 1 ;; esac
	tr '\0' '\n' <"/proc/$1/cmdline" 2>/dev/null | grep -q -- "^$DIR/"
}

status=0
for name in plain basic token issuer; do
	pidfile=$DIR/run/$name.pid
	[ -f "$pidfile" ] || continue
	pid=$(cat "$pidfile" 2>/dev/null)
	case $pid in '' | *[!0-9]*) rm -f "$pidfile"; continue ;; esac
	if ours "$pid"; then
		kill -TERM "$pid" 2>/dev/null
		ticks=$((WAIT * 10))
		while [ "$ticks" -gt 0 ] && ours "$pid"; do
			sleep 0.1
			ticks=$((ticks - 1))
		done
		if ours "$pid"; then
			echo "registry-stop: $name ($pid) still running after ${WAIT}s: SIGKILL" >&2
			kill -KILL "$pid" 2>/dev/null
			sleep 0.2
			if ours "$pid"; then
				echo "registry-stop: error: $name ($pid) survived SIGKILL" >&2
				status=1
				continue
			fi
		fi
	fi
	rm -f "$pidfile"
done
echo "registry-stop: stopped $DIR"
exit "$status"
