#!/usr/bin/env bash
# tests/stack/slurm-stop.sh DIR — stops the cluster that
# tests/stack/slurm-start.sh started in DIR: first the jobs still queued or
# running on it, every user's (scancel of each job squeue lists, through its
# own SLURM_CONF, so their slurmstepd processes end too: a job of another
# user left behind keeps its step running after slurmd is gone), then the
# daemons by the PIDs recorded in DIR/run/*.pid (never by name): SIGTERM, a
# bounded wait (SLURM_STOP_WAIT seconds each, 10), then SIGKILL; with
# accounting (SLURM_ACCOUNTING=1), slurmdbd after slurmctld, then MariaDB.
# A PID is only signalled while its command line still names a path under
# DIR (slurmdbd: while its environment has SLURM_CONF=DIR/slurm.conf), so a
# recycled PID is left alone.
# Idempotent: a missing DIR, a missing PID file or a daemon that is already
# gone is fine. DIR itself (logs, config) is kept; remove it yourself.
set -eu -o pipefail
. "$(dirname "$0")/../need_dir_lib.sh"

if [ $# -ne 1 ] || [ -z "$1" ]; then
	echo "usage: $0 DIR" >&2
	exit 2
fi
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
DIR=$(realpath -m "$1")
need_dir DIR
WAIT=${SLURM_STOP_WAIT:-10}
# shellcheck source=slurm-lib.sh
. "$HERE/slurm-lib.sh"

status=0
if [ -f "$DIR/slurm.conf" ] && slurm_ours "$(cat "$DIR/run/slurmctld.pid" 2>/dev/null)"; then
	export SLURM_CONF=$DIR/slurm.conf
	# squeue lists every user's pending, running and completing jobs by
	# default; a job submitted meanwhile is cancelled on the next round.
	ticks=$((WAIT * 10))
	while [ "$ticks" -gt 0 ]; do
		jobs=$(timeout 5 squeue -h -o %i 2>/dev/null | tr '\n' ' ')
		[ -n "${jobs// /}" ] || break
		if [ $((ticks % 10)) -eq 0 ]; then
			# shellcheck disable=SC2086 # one argument per job
			timeout 20 scancel --full $jobs >/dev/null 2>&1 || true
		fi
		sleep 0.1
		ticks=$((ticks - 1))
	done
fi
# REST first, the controller after the nodes, then slurmdbd and its
# database (SLURM_ACCOUNTING=1), munge last.
for name in slurmrestd slurmd-gpu-a slurmd-gpu-b slurmctld slurmdbd mariadbd \
	munged; do
	slurm_stop_one "$name" || status=1
done
echo "slurm-stop: stopped $DIR"
exit "$status"
