# Helpers shared by tests/stack/slurm-stop.sh and slurm-node.sh (sourced,
# with DIR and WAIT set): the stack's daemons are known by PID only.

# slurm_ours PID: alive (not a zombie) and started with a path under DIR
# on its command line; or slurmdbd (SLURM_ACCOUNTING=1), whose command line
# names no path (it reads the slurmdbd.conf beside $SLURM_CONF), with
# SLURM_CONF=DIR/slurm.conf in its environment.
slurm_ours() {
	local state
	case ${1:-} in '' | *[!0-9]*) return 1 ;; esac
	state=$(ps -o stat= -p "$1" 2>/dev/null) || return 1
	case $state in Z*) return 1 ;; esac
	# (2> first: reading the files of a process that is exiting fails)
	tr '\0' '\n' 2>/dev/null <"/proc/$1/cmdline" | grep -qF -- "$DIR/" && return 0
	[ "$(cat 2>/dev/null "/proc/$1/comm")" = slurmdbd ] || return 1
	tr '\0' '\n' 2>/dev/null <"/proc/$1/environ" |
		grep -qxF -- "SLURM_CONF=$DIR/slurm.conf"
}

# slurm_stop_one NAME: SIGTERM to DIR/run/NAME.pid, a bounded wait, SIGKILL.
slurm_stop_one() {
	local name=$1 pidfile=$DIR/run/$1.pid pid ticks
	[ -f "$pidfile" ] || return 0
	pid=$(cat "$pidfile" 2>/dev/null)
	if slurm_ours "$pid"; then
		kill -TERM "$pid" 2>/dev/null
		ticks=$((WAIT * 10))
		while [ "$ticks" -gt 0 ] && slurm_ours "$pid"; do
			sleep 0.1
			ticks=$((ticks - 1))
		done
		if slurm_ours "$pid"; then
			echo "slurm-stop: $name ($pid) still running after ${WAIT}s: SIGKILL" >&2
			kill -KILL "$pid" 2>/dev/null
			sleep 0.2
			if slurm_ours "$pid"; then
				echo "slurm-stop: error: $name ($pid) survived SIGKILL" >&2
				return 1
			fi
		fi
	fi
	rm -f "$pidfile"
}
