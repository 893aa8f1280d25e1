#!/usr/bin/env bash
# tests/bench/slurm_bench.sh [N] — a job sweep through slurmrestd against
# N `sbatch` calls, on a throwaway Slurm cluster started here
# (tests/stack/slurm-start.sh: munged, slurmctld, two slurmd, slurmrestd
# with JWT auth, all on 127.0.0.1).
#
# Not a test (nothing registers it with add_test): it prints numbers and
# fails only when a submission fails.
#
# navette: build/tests/bench/slurm_bench submits N jobs (default 1000)
# through one session of the slurmrestd client (host/jobs/slurm.c: one
# minted HS256 token, kept-alive connections), the way `navette run` submits
# a sweep; then cancels them. sbatch: N `sbatch` processes, each with the
# same batch script, name, comment, partition and working directory. Every
# job is held (`hold`, `--hold`) so nothing runs and both sweeps meet the
# same empty queue; each sweep's jobs are cancelled before the next starts.
# Prints the wall time of each sweep, navette's per-job submission time,
# requests and connections, and the ratio.
#
# Environment (all optional):
#   SLURM_PORT   slurmctld port (27817, away from the tests' fixture; the
#                slurmd and slurmrestd ports follow it)
#   BENCH_TMP    where the cluster's folder goes (/tmp); removed on exit
#   ROUNDS       sweeps per tool, alternating, best kept (1)
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
ROOT=$(cd "$HERE/../.." && pwd -P)
N=${1:-1000}
case $N in
-h | --help)
	sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'
	exit 0
	;;
*[!0-9]* | 0)
	echo "usage: $0 [N]" >&2
	exit 2
	;;
esac
ROUNDS=${ROUNDS:-1}
DRIVER=${SLURM_BENCH:-$ROOT/build/tests/bench/slurm_bench}

say() { printf 'slurm_bench: %s\n' "$*" >&2; }
die() {
	say "error: $*"
	exit 1
}
[ -x "$DRIVER" ] || die "$DRIVER not found (cmake --build build --target slurm_bench)"
command -v sbatch >/dev/null || die "sbatch not found (Debian: slurm-client)"

WORK=$(mktemp -d "${BENCH_TMP:-/tmp}/navette-slurm-bench.XXXXXX")
chmod 755 "$WORK" # slurmrestd runs as another user; munged wants a traversable path
cleanup() {
	bash "$ROOT/tests/stack/slurm-stop.sh" "$WORK/stack" >/dev/null 2>&1 || true
	rm -rf "$WORK"
}
trap cleanup EXIT

export SLURM_PORT=${SLURM_PORT:-27817}
say "starting a Slurm cluster on 127.0.0.1:$SLURM_PORT.."
bash "$ROOT/tests/stack/slurm-start.sh" "$WORK/stack" >"$WORK/start.log" 2>&1 ||
	{
		cat "$WORK/start.log" >&2
		die "the Slurm stack did not start"
	}
# shellcheck disable=SC1091
. "$WORK/stack/slurm.env"
export SLURM_CONF

printf '#!/bin/sh\necho bench\n' >"$WORK/job.sh"

queued() { squeue -h -u "$SLURM_USER" -t PENDING,RUNNING 2>/dev/null | wc -l; }
drain() { # cancels what is left and waits until the queue is empty
	scancel -u "$SLURM_USER" >/dev/null 2>&1 || true
	local i
	for i in $(seq 1 120); do
		[ "$(queued)" -eq 0 ] && return 0
		sleep 0.5
	done
	die "the queue did not drain"
}

now() { date +%s.%N; }

best_nv='' best_sb='' nv_out=''
for round in $(seq 1 "$ROUNDS"); do
	drain
	say "round $round: $N submissions through slurmrestd.."
	out=$("$DRIVER" "$WORK/stack/slurm.env" "$N" "$WORK/job.sh") ||
		{
			printf '%s\n' "$out" >&2
			die "navette's sweep failed"
		}
	t=$(printf '%s\n' "$out" | awk '$1 == "submit_s" { print $2 }')
	if [ -z "$best_nv" ] || awk -v a="$t" -v b="$best_nv" 'BEGIN { exit !(a < b) }'; then
		best_nv=$t nv_out=$out
	fi
	drain
	say "round $round: $N sbatch calls.."
	t0=$(now)
	for i in $(seq 0 $((N - 1))); do
		sbatch --hold -J "bench-sb-$i" --comment "navette-bench:$i" \
			${SLURM_PARTITION:+-p "$SLURM_PARTITION"} -D /tmp -o /dev/null \
			--export=PATH=/usr/bin:/bin "$WORK/job.sh" >/dev/null ||
			die "sbatch $i failed"
	done
	t=$(awk -v a="$(now)" -v b="$t0" 'BEGIN { printf "%.3f", a - b }')
	[ -n "$best_sb" ] && awk -v a="$t" -v b="$best_sb" 'BEGIN { exit !(a >= b) }' || best_sb=$t
	drain
done

field() { printf '%s\n' "$nv_out" | awk -v k="$1" '$1 == k { print $2 }'; }
echo
echo "Slurm sweep: $N held jobs, $(nproc) cores, Slurm $(sbatch --version | awk '{ print $2 }'), slurmrestd API ${SLURM_API_VERSION:-?}"
printf '%-34s %10s %12s\n' tool "wall s" "per job ms"
printf '%-34s %10.3f %12.3f\n' "navette (one slurmrestd session)" "$best_nv" "$(field per_job_ms)"
printf '%-34s %10.3f %12.3f\n' "sbatch (one process per job)" "$best_sb" \
	"$(awk -v a="$best_sb" -v n="$N" 'BEGIN { printf "%.3f", a * 1000 / n }')"
echo "navette: $(field requests) requests over $(field connections) connection(s); cancel of the $N jobs $(field cancel_s) s"
awk -v a="$best_sb" -v b="$best_nv" 'BEGIN { printf "ratio sbatch/navette: %.2fx\n", a / b }'
