#!/usr/bin/env bash
# tests/stack/slurm-node.sh DIR kill|start|restart NODE — for node failure
# tests on the cluster of tests/stack/slurm-start.sh: `kill` sends SIGKILL
# to NODE's slurmd (by its recorded PID; the job steps it started keep
# running, as when a node's daemon dies), `start` starts it again with the
# command it was first started with (ReturnToService=2 brings the node
# back), `restart` stops it (SIGTERM) and starts it. NODE `slurmctld` is
# the controller (a restart makes it read its JWT key again).
set -eu -o pipefail
. "$(dirname "$0")/../need_dir_lib.sh"

if [ $# -ne 3 ] || [ -z "$1" ]; then
	echo "usage: $0 DIR kill|start|restart NODE" >&2
	exit 2
fi
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
DIR=$(realpath -m "$1")
need_dir DIR
WAIT=${SLURM_STOP_WAIT:-10}
NODE=$3
# shellcheck source=slurm-lib.sh
. "$HERE/slurm-lib.sh"
name=slurmd-$NODE
[ "$NODE" = slurmctld ] && name=slurmctld
case $NODE in '' | *[!a-z0-9-]*) echo "slurm-node: bad node name" >&2; exit 2 ;; esac
[ -f "$DIR/run/$name.cmd" ] || { echo "slurm-node: no $name in $DIR" >&2; exit 1; }

case $2 in
kill)
	pid=$(cat "$DIR/run/$name.pid" 2>/dev/null)
	slurm_ours "$pid" || { echo "slurm-node: $name is not running" >&2; exit 1; }
	kill -KILL "$pid"
	ticks=$((WAIT * 10))
	while [ "$ticks" -gt 0 ] && slurm_ours "$pid"; do sleep 0.1; ticks=$((ticks - 1)); done
	! slurm_ours "$pid"
	;;
start | restart)
	pid=$(cat "$DIR/run/$name.pid" 2>/dev/null)
	if [ "$2" = restart ]; then
		slurm_stop_one "$name" || exit 1
	elif slurm_ours "$pid"; then
		echo "slurm-node: $name already runs ($pid)" >&2
		exit 1
	fi
	eval "set -- $(cat "$DIR/run/$name.cmd")"
	SLURM_CONF=$DIR/slurm.conf setsid "$@" >>"$DIR/log/$name.out" 2>&1 </dev/null &
	echo $! >"$DIR/run/$name.pid"
	if [ "$name" = slurmctld ]; then
		# answering again, within WAIT seconds
		ticks=$((WAIT * 10))
		until SLURM_CONF=$DIR/slurm.conf scontrol ping >/dev/null 2>&1; do
			ticks=$((ticks - 1))
			[ "$ticks" -gt 0 ] || { echo "slurm-node: slurmctld does not answer" >&2; exit 1; }
			sleep 0.1
		done
	fi
	;;
*)
	echo "usage: $0 DIR kill|start|restart NODE" >&2
	exit 2
	;;
esac
