#!/usr/bin/env bash
# tests/bench/slurm_bench.sh [N] — a job sweep through slurmrestd against
# N `sbatch` calls, on a throwaway Slurm cluster started here
# (tests/stack/slurm-start.sh: munged, slurmctld, two slurmd, slurmrestd
# with JWT auth, all on 127.0.0.1) and a throwaway radosgw
# (tests/stack/s3-start.sh) for the storage a Slurm profile needs.
#
# Not a test (nothing registers it with add_test): it prints numbers and
# fails only when a submission fails.
#
# Three sweeps of N jobs (default 1000), each meeting an empty queue in a
# partition set DOWN, so every job stays pending and nothing runs:
#   client   build/tests/bench/slurm_bench: N submissions through one
#            session of the slurmrestd client (host/jobs/slurm.c: one minted
#            HS256 token reused while it lives, kept-alive connections); the floor
#            of what navette sends;
#   run      `navette run sweep.lua` of a recipe declaring N jobs, on a
#            slurm profile: everything a real sweep does per job (spec,
#            presigned URLs for code and outputs, launcher, job database
#            row written before the request, audit line) through one
#            session per run;
#   sbatch   N `sbatch` processes with the same script, name, comment,
#            partition and working directory.
# Each sweep's jobs are cancelled before the next starts. Prints wall
# times, per-job milliseconds, requests and connections, and the ratios.
#
# Environment (all optional):
#   SLURM_PORT   slurmctld port (27817, away from the tests' fixture; the
#                slurmd and slurmrestd ports follow it)
#   S3_PORT      radosgw port (27490)
#   BENCH_TMP    where the clusters' folder goes (/tmp); removed on exit
#   ROUNDS       sweeps per tool, alternating, best kept (1)
#   NAVETTE      the navette binary (build/navette)
set -eu -o pipefail
. "$(dirname "$0")/../need_dir_lib.sh"

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
NAVETTE=${NAVETTE:-$ROOT/build/navette}

say() { printf 'slurm_bench: %s\n' "$*" >&2; }
die() {
	say "error: $*"
	exit 1
}
[ -x "$DRIVER" ] || die "$DRIVER not found (cmake --build build --target slurm_bench)"
[ -x "$NAVETTE" ] || die "$NAVETTE not found (cmake --build build --target navette)"
command -v sbatch >/dev/null || die "sbatch not found (Debian: slurm-client)"

WORK=$(mktemp -d "${BENCH_TMP:-/tmp}/navette-slurm-bench.XXXXXX")
NEED_DIR_ROOT=${BENCH_TMP:-}
need_dir WORK
chmod 755 "$WORK" # slurmrestd runs as another user; munged wants a traversable path
cleanup() {
	bash "$ROOT/tests/stack/slurm-stop.sh" "$WORK/stack" >/dev/null 2>&1 || true
	bash "$ROOT/tests/stack/s3-stop.sh" "$WORK/s3" >/dev/null 2>&1 || true
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
# every job stays pending: the partition takes jobs but starts none
scontrol update PartitionName="$SLURM_PARTITION" State=DOWN >/dev/null ||
	die "cannot set partition $SLURM_PARTITION down"

say "starting radosgw on 127.0.0.1:${S3_PORT:-27490}.."
S3_PORT=${S3_PORT:-27490} bash "$ROOT/tests/stack/s3-start.sh" "$WORK/s3" \
	>"$WORK/s3-start.log" 2>&1 || {
	tail -n 30 "$WORK/s3-start.log" >&2
	die "radosgw did not start"
}
# shellcheck disable=SC1091
. "$WORK/s3/users.env"
export AWS_ACCESS_KEY_ID=$S3_ACCESS_KEY AWS_SECRET_ACCESS_KEY=$S3_SECRET_KEY
export AWS_REGION=$S3_REGION NAVETTE_HOME=$WORK/home
unset AWS_SESSION_TOKEN AWS_PROFILE AWS_ENDPOINT_URL
"$NAVETTE" storage mb s3://navette-sweep --endpoint "$S3_ENDPOINT" >/dev/null ||
	die "cannot make the bucket"
REPO=$WORK/repo
mkdir -p "$REPO/recipes"
cat >"$REPO/navette.lua" <<EOF
return {
  name = "sweep",
  default_profile = "cluster",
  credentials = {
    jwt = { kind = "hs256", source = "file", path = "$SLURM_JWT_KEY" },
  },
  profiles = {
    cluster = {
      backend = "slurm", require_pushed = false,
      storage = "s3://navette-sweep/",
      s3 = { endpoint = "$S3_ENDPOINT", region = "$S3_REGION" },
      slurm = { endpoint = "$SLURMRESTD_URL", user = "$SLURM_USER",
                credential = "jwt", partition = "$SLURM_PARTITION",
                working_directory = "/tmp" },
    },
  },
}
EOF
cat >"$REPO/recipes/sweep.lua" <<EOF
local navette = require "navette"
for i = 1, $N do
  navette.job { name = "sweep-" .. i, command = { "sh", "-c", "echo " .. i },
                resources = { cpus = 1, time_limit = "10m" } }
end
EOF
git -C "$REPO" init -q
git -C "$REPO" add -A
git -C "$REPO" -c user.name=bench -c user.email=bench@localhost commit -qm sweep

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

best_nv='' best_sb='' best_run='' nv_out=''
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
		sbatch -J "bench-sb-$i" --comment "navette-bench:$i" \
			${SLURM_PARTITION:+-p "$SLURM_PARTITION"} -D /tmp -o /dev/null \
			--export=PATH=/usr/bin:/bin "$WORK/job.sh" >/dev/null ||
			die "sbatch $i failed"
	done
	t=$(awk -v a="$(now)" -v b="$t0" 'BEGIN { printf "%.3f", a - b }')
	[ -n "$best_sb" ] && awk -v a="$t" -v b="$best_sb" 'BEGIN { exit !(a >= b) }' || best_sb=$t
	drain
	say "round $round: navette run of a $N-job recipe.."
	rm -rf "$WORK/home"
	# a run of a project's own profile needs the project trusted
	"$NAVETTE" trust "$REPO" >/dev/null || die "navette trust $REPO failed"
	t0=$(now)
	(cd "$REPO" && "$NAVETTE" run recipes/sweep.lua >"$WORK/run.out" 2>"$WORK/run.err") ||
		{
			tail -n 20 "$WORK/run.err" >&2
			die "navette run failed"
		}
	t=$(awk -v a="$(now)" -v b="$t0" 'BEGIN { printf "%.3f", a - b }')
	got=$(grep -c '^job sweep-[0-9]* submitted: ' "$WORK/run.out" || true)
	[ "$got" -eq "$N" ] || die "navette run submitted $got jobs of $N"
	[ "$(queued)" -eq "$N" ] || die "Slurm has $(queued) of the $N jobs"
	[ -n "$best_run" ] && awk -v a="$t" -v b="$best_run" 'BEGIN { exit !(a >= b) }' || best_run=$t
	drain
done

field() { printf '%s\n' "$nv_out" | awk -v k="$1" '$1 == k { print $2 }'; }
per() { awk -v a="$1" -v n="$N" 'BEGIN { printf "%.3f", a * 1000 / n }'; }
echo
echo "Slurm sweep: $N pending jobs, $(nproc) cores, Slurm $(sbatch --version | awk '{ print $2 }'), slurmrestd API ${SLURM_API_VERSION:-?}"
printf '%-40s %10s %12s\n' tool "wall s" "per job ms"
printf '%-40s %10.3f %12.3f\n' "navette client (one slurmrestd session)" "$best_nv" "$(field per_job_ms)"
printf '%-40s %10.3f %12.3f\n' "navette run (N-job recipe, end to end)" "$best_run" "$(per "$best_run")"
printf '%-40s %10.3f %12.3f\n' "sbatch (one process per job)" "$best_sb" "$(per "$best_sb")"
echo "navette client: $(field requests) requests over $(field connections) connection(s); cancel of the $N jobs $(field cancel_s) s"
awk -v a="$best_sb" -v b="$best_nv" 'BEGIN { printf "ratio sbatch/navette client: %.2fx\n", a / b }'
awk -v a="$best_sb" -v b="$best_run" 'BEGIN { printf "ratio sbatch/navette run:    %.2fx\n", a / b }'
