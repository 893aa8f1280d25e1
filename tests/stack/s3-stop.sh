#!/usr/bin/env bash
# tests/stack/s3-stop.sh DIR — stops the daemons that tests/stack/s3-start.sh
# started in DIR, by the PIDs recorded in DIR/run/*.pid (never by name):
# SIGTERM, a bounded wait (S3_STOP_WAIT seconds each, 10), then SIGKILL.
# A PID is only signalled while its command line still names DIR/ceph.conf,
# so a recycled PID is left alone. Idempotent: a missing DIR, a missing PID
# file or a daemon that is already gone is fine, as after a start that failed
# half-way. DIR itself (logs, config) is kept; remove it yourself.
set -eu -o pipefail
. "$(dirname "$0")/../need_dir_lib.sh"

if [ $# -ne 1 ] || [ -z "$1" ]; then
	echo "usage: $0 DIR" >&2
	exit 2
fi
DIR=$(realpath -m "$1")
need_dir DIR
WAIT=${S3_STOP_WAIT:-10}

# ours PID: alive (not a zombie) and started with our config file.
ours() {
	local state
	state=$(ps -o stat= -p "$1" 2>/dev/null) || return 1
	case $state in Z*) return 1 ;; esac
	tr '\0' '\n' <"/proc/$1/cmdline" 2>/dev/null | grep -qxF -- "$DIR/ceph.conf"
}

status=0
# The gateway first, the monitor last: each depends on the ones after it.
for name in rgw.a osd.0 mon.a; do
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
			echo "s3-stop: $name ($pid) still running after ${WAIT}s: SIGKILL" >&2
			kill -KILL "$pid" 2>/dev/null
			sleep 0.2
			if ours "$pid"; then
				echo "s3-stop: error: $name ($pid) survived SIGKILL" >&2
				status=1
				continue
			fi
		fi
	fi
	rm -f "$pidfile"
done
echo "s3-stop: stopped $DIR"
exit "$status"
