#!/usr/bin/env bash
# tests/bench/sweep_bench.sh [N] — a sweep of N jobs (default 1000) to
# Slurm, three ways, in the same run, on a throwaway two-node Slurm 22.05
# cluster with slurmrestd (tests/stack/slurm-start.sh) and a throwaway
# radosgw (tests/stack/s3-start.sh) for the storage a Slurm profile needs:
#   array    `navette run` of a recipe whose navette.sweep declares the N
#            jobs: one job array, one request (issue 13);
#   per-job  `navette run` of a recipe declaring the same N jobs one by one
#            (navette.job in a loop): one request per job;
#   sbatch   N `sbatch` processes with the same script, partition and
#            working directory (the cluster's own client, its SLURM_CONF).
# Each is timed end to end, from the start of the command to all N tasks
# accepted by Slurm (squeue -r counts them pending or later). The
# partition is set DOWN first, so nothing runs and each way meets an empty
# queue (every task is cancelled with scancel before the next way, and at
# the end). Each navette round starts from a fresh NAVETTE_HOME (the
# project trusted in it), as a user's first run of the day does. Prints a
# table of the first round (cold: what every real `navette run` is) and
# the median of the rounds, and the ratios; the target is the array at
# least 10x faster than the sbatch calls on both. Not a test (nothing
# registers it with add_test): it fails only when a submission fails.
#
# Environment (all optional):
#   SLURM_PORT   slurmctld port (27837, away from the tests' fixtures and
#                slurm_bench.sh's; the slurmd and slurmrestd ports follow)
#   S3_PORT      radosgw port (27500)
#   BENCH_TMP    where the clusters' folder goes (/tmp); removed on exit
#   ROUNDS       rounds of the three ways (5): the first, and the median
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
*[!0-9]* | 0 | 1)
	echo "usage: $0 [N >= 2]" >&2
	exit 2
	;;
esac
ROUNDS=${ROUNDS:-5}
NAVETTE=${NAVETTE:-$ROOT/build/navette}

say() { printf 'sweep_bench: %s\n' "$*" >&2; }
die() {
	say "error: $*"
	exit 1
}
[ -x "$NAVETTE" ] || die "$NAVETTE not found (cmake --build build --target navette)"
command -v sbatch >/dev/null || die "sbatch not found (Debian: slurm-client)"

WORK=$(mktemp -d "${BENCH_TMP:-/tmp}/navette-sweep-bench.XXXXXX")
NEED_DIR_ROOT=${BENCH_TMP:-}
need_dir WORK
chmod 755 "$WORK" # slurmrestd runs as another user; munged wants a traversable path
cleanup() {
	scancel -u "${SLURM_USER:-root}" >/dev/null 2>&1 || true
	bash "$ROOT/tests/stack/slurm-stop.sh" "$WORK/stack" >/dev/null 2>&1 || true
	bash "$ROOT/tests/stack/s3-stop.sh" "$WORK/s3" >/dev/null 2>&1 || true
	rm -rf "$WORK"
}
trap cleanup EXIT

export SLURM_PORT=${SLURM_PORT:-27837}
say "starting a Slurm cluster on 127.0.0.1:$SLURM_PORT.."
bash "$ROOT/tests/stack/slurm-start.sh" "$WORK/stack" >"$WORK/start.log" 2>&1 || {
	cat "$WORK/start.log" >&2
	die "the Slurm stack did not start"
}
# shellcheck disable=SC1091
. "$WORK/stack/slurm.env"
export SLURM_CONF
# every task stays pending: the partition takes jobs but starts none
scontrol update PartitionName="$SLURM_PARTITION" State=DOWN >/dev/null ||
	die "cannot set partition $SLURM_PARTITION down"

say "starting radosgw on 127.0.0.1:${S3_PORT:-27500}.."
S3_PORT=${S3_PORT:-27500} bash "$ROOT/tests/stack/s3-start.sh" "$WORK/s3" \
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
# A fresh radosgw answers its first object request after about 1.6 s
# (measured with strace: a HEAD sent, 404 back 1.65 s later), then in
# milliseconds: a site's S3 is not started for the user's run, so the
# store is asked once here, before the first round's clock starts.
printf 'warm-up\n' >"$WORK/warm-up"
"$NAVETTE" storage cp "$WORK/warm-up" s3://navette-sweep/warm-up \
	--endpoint "$S3_ENDPOINT" >/dev/null || die "cannot write to the bucket"
"$NAVETTE" storage ls s3://navette-sweep/ --endpoint "$S3_ENDPOINT" \
	>/dev/null || die "cannot list the bucket"

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
# the same N jobs, as a sweep and one by one
cat >"$REPO/recipes/array.lua" <<EOF
local navette = require "navette"
local values = {}
for i = 1, $N do values[i] = i end
navette.sweep { job = { name = "task", command = { "sh", "-c", "echo \$NAVETTE_PARAM_I" },
                        resources = { cpus = 1, time_limit = "10m" } },
                matrix = { i = values } }
EOF
cat >"$REPO/recipes/perjob.lua" <<EOF
local navette = require "navette"
for i = 1, $N do
  navette.job { name = "task-" .. i, command = { "sh", "-c", "echo " .. i },
                resources = { cpus = 1, time_limit = "10m" } }
end
EOF
git -C "$REPO" init -q
git -C "$REPO" add -A
git -C "$REPO" -c user.name=bench -c user.email=bench@localhost commit -qm sweep
printf '#!/bin/sh\necho bench\n' >"$WORK/job.sh"

# tasks Slurm has accepted (each task of an array counted: -r)
queued() { squeue -h -r -u "$SLURM_USER" -t PENDING,RUNNING 2>/dev/null | wc -l; }
drain() {
	scancel -u "$SLURM_USER" >/dev/null 2>&1 || true
	local i
	for i in $(seq 1 240); do
		[ "$(queued)" -eq 0 ] && return 0
		sleep 0.5
	done
	die "the queue did not drain"
}
now() { date +%s.%N; }
since() { awk -v a="$(now)" -v b="$1" 'BEGIN { printf "%.3f", a - b }'; }
# until all N are accepted: the end of the measured span
accepted() {
	local i
	for i in $(seq 1 600); do
		[ "$(queued)" -ge "$N" ] && return 0
		sleep 0.05
	done
	die "Slurm has $(queued) of the $N tasks"
}
keep() { # WAY TIME: appends the round's time to $WORK/WAY.times
	printf '%s\n' "$2" >>"$WORK/$1.times"
}
first_of() { head -n 1 "$WORK/$1.times"; }
median_of() {
	sort -n "$WORK/$1.times" |
		awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

navette_way() { # RECIPE: navette run, then until Slurm has the N tasks
	rm -rf "$NAVETTE_HOME"
	"$NAVETTE" trust "$REPO" >/dev/null || die "navette trust $REPO failed"
	local t0
	t0=$(now)
	(cd "$REPO" && "$NAVETTE" run "recipes/$1" >"$WORK/run.out" 2>"$WORK/run.err") || {
		tail -n 20 "$WORK/run.err" >&2
		die "navette run recipes/$1 failed"
	}
	accepted
	since "$t0"
	local got
	got=$(grep -c '^job task.* submitted: ' "$WORK/run.out" || true)
	[ "$got" -eq "$N" ] || die "navette run recipes/$1 submitted $got jobs of $N"
}

arrays=0
for round in $(seq 1 "$ROUNDS"); do
	drain
	say "round $round: navette run, a sweep of $N jobs as one array.."
	t=$(navette_way array.lua)
	keep array "$t"
	arrays=$(squeue -h -u "$SLURM_USER" -o '%F' | sort -u | wc -l)
	drain
	say "round $round: navette run, $N jobs one by one.."
	t=$(navette_way perjob.lua)
	keep perjob "$t"
	drain
	say "round $round: $N sbatch calls.."
	t0=$(now)
	for i in $(seq 1 "$N"); do
		sbatch -J "bench-sb-$i" ${SLURM_PARTITION:+-p "$SLURM_PARTITION"} \
			-D /tmp -o /dev/null --export=PATH=/usr/bin:/bin \
			"$WORK/job.sh" >/dev/null || die "sbatch $i failed"
	done
	accepted
	keep sbatch "$(since "$t0")"
done
drain

per() { awk -v a="$1" -v n="$N" 'BEGIN { printf "%.3f", a * 1000 / n }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1fx", a / b }'; }
echo
echo "Sweep of $N jobs to Slurm, end to end until all are accepted:" \
	"$(nproc) cores, Slurm $(sbatch --version | awk '{ print $2 }')," \
	"slurmrestd ${SLURM_API_VERSION:-?}, $ROUNDS rounds"
printf '| %-36s | %-12s | %8s | %10s | %14s |\n' way round "wall s" "per job ms" "sbatch / way"
printf '|%s|%s|%s|%s|%s|\n' "--------------------------------------" \
	"--------------" "---------:" "-----------:" "---------------:"
verdict=met
for which in first median; do
	sb=$("${which}_of" sbatch)
	for way in array perjob sbatch; do
		case $way in
		array) label="navette run, one job array" ;;
		perjob) label="navette run, one request per job" ;;
		sbatch) label="sbatch, one process per job" ;;
		esac
		t=$("${which}_of" "$way")
		printf '| %-36s | %-12s | %8.3f | %10.3f | %14s |\n' "$label" \
			"$([ "$which" = first ] && echo "first (cold)" || echo "median of $ROUNDS")" \
			"$t" "$(per "$t")" "$(ratio "$sb" "$t")"
	done
	awk -v a="$sb" -v b="$("${which}_of" array)" 'BEGIN { exit !(a / b >= 10) }' || verdict=MISS
done
echo "Slurm job arrays seen for the sweep: $arrays (target: the array >= 10x" \
	"faster than sbatch, on the first round and on the median: $verdict)"
