#!/usr/bin/env bash
# tests/bench/startup_bench.sh [RUNS] — start-up time of navette's quick
# commands beside two peer command-line tools, in the same run.
#
# Not a test (nothing registers it with add_test; `cmake --build B --target
# startup_bench` runs it): it prints numbers, and fails only when a command
# fails. Measured, each as a fresh process RUNS times (default 50):
#   navette version
#   navette help
#   navette status ID   ID: a real job, submitted to the local backend
#                       from a throwaway git repository and home
#   aws --version       AWS CLI (/usr/bin/aws preferred, as in s3_bench.sh)
#   rclone version
# The commands take turns (one run of each per round), so that the load of
# a shared machine falls on all of them alike. Wall time from spawn to exit
# comes from python3 (perf_counter around posix_spawn and waitpid); output
# goes to /dev/null. The table gives the median wall time, its 10th and
# 90th percentiles, the median CPU time (user+system, from wait4: on a
# machine shared with other work it shows what the start costs apart from
# waiting for a core) and, per navette command, the ratio of its median to
# each peer's (below 1: navette starts faster); then whether every navette
# median wall time meets the target (START_TARGET_MS, default 10).
#
# Environment (all optional):
#   NAVETTE          the navette binary (build/navette)
#   RUNS             runs per command (50; the first argument wins)
#   START_TARGET_MS  the target for navette's medians (10)
#   BENCH_TMP        where the throwaway home and repository go (/tmp)
# A peer that is not installed is skipped with a note (vendor/packages.txt,
# group bench, lists them).
set -eu -o pipefail
. "$(dirname "$0")/../need_dir_lib.sh"

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
ROOT=$(cd "$HERE/../.." && pwd -P)
NAVETTE=${NAVETTE:-$ROOT/build/navette}
RUNS=${1:-${RUNS:-50}}
START_TARGET_MS=${START_TARGET_MS:-10}

[[ -x $NAVETTE ]] || { echo "startup_bench: no navette at $NAVETTE (set NAVETTE)" >&2; exit 2; }
# the runs happen in another folder: a relative path is taken from here
[[ $NAVETTE == /* ]] || NAVETTE="$PWD/$NAVETTE"
[[ $RUNS =~ ^[1-9][0-9]*$ ]] || { echo "startup_bench: RUNS must be a positive integer" >&2; exit 2; }
command -v python3 >/dev/null || { echo "startup_bench: needs python3" >&2; exit 2; }

WORK=$(mktemp -d "${BENCH_TMP:-/tmp}/navette-startup.XXXXXX")
NEED_DIR_ROOT=${BENCH_TMP:-}
need_dir WORK
export NAVETTE_HOME=$WORK/home NAVETTE_AGENT_IDLE=2 NO_COLOR=1
unset NAVETTE_LUA_PATH NAVETTE_DEBUG
cleanup() {
	# the agent leaves on its own after NAVETTE_AGENT_IDLE seconds idle
	local i=0
	while [[ -e $NAVETTE_HOME/agent.pid ]] && kill -0 "$(cat "$NAVETTE_HOME/agent.pid" 2>/dev/null)" 2>/dev/null && ((i < 50)); do
		sleep 0.1
		i=$((i + 1))
	done
	rm -rf "$WORK"
}
trap cleanup EXIT
mkdir -p "$NAVETTE_HOME" "$WORK/repo"

# A job to ask the status of: one small local job, run to its end.
REPO=$WORK/repo
printf 'return { name = "startup" }\n' >"$REPO/navette.lua"
cat >"$REPO/hello.lua" <<'EOF'
local navette = require "navette"
navette.job {
  name = "hello",
  command = { "sh", "-c", "echo hello >\"$NAVETTE_OUTPUTS/hello.txt\"" },
  success = { outputs = { "hello.txt" } },
}
EOF
git -C "$REPO" init -q
git -C "$REPO" add -A
git -C "$REPO" -c user.name=bench -c user.email=bench@localhost \
	commit -q -m "startup bench"
if ! (cd "$REPO" && "$NAVETTE" run hello.lua --wait) >"$WORK/run.out" 2>&1; then
	echo "startup_bench: the job to ask the status of failed:" >&2
	cat "$WORK/run.out" >&2
	exit 1
fi
JOB=$(sed -n 's/^job .* submitted: \([^ ]*\)$/\1/p' "$WORK/run.out" | head -1)
[[ -n $JOB ]] || { echo "startup_bench: no job id in: $(cat "$WORK/run.out")" >&2; exit 1; }

# name<TAB>command words<TAB>... ; peers found on this machine only
COMMANDS=$WORK/commands
{
	printf 'navette version\t%s\tversion\n' "$NAVETTE"
	printf 'navette help\t%s\thelp\n' "$NAVETTE"
	printf 'navette status ID\t%s\tstatus\t%s\n' "$NAVETTE" "$JOB"
} >"$COMMANDS"
AWS=
if [[ -x /usr/bin/aws ]]; then AWS=/usr/bin/aws; else AWS=$(command -v aws || true); fi
if [[ -n $AWS ]]; then
	printf 'aws --version\t%s\t--version\n' "$AWS" >>"$COMMANDS"
else
	echo "note: aws not installed; skipped (apt-get install awscli / brew install awscli)"
fi
if RCLONE=$(command -v rclone); then
	printf 'rclone version\t%s\tversion\n' "$RCLONE" >>"$COMMANDS"
else
	echo "note: rclone not installed; skipped (apt-get install rclone / brew install rclone)"
fi

echo "navette: $NAVETTE; status of $JOB; $RUNS runs each, taking turns"
python3 - "$COMMANDS" "$RUNS" "$START_TARGET_MS" <<'EOF'
import os, sys, time

path, runs, target = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
commands = []
with open(path) as f:
    for line in f:
        name, *argv = line.rstrip("\n").split("\t")
        commands.append((name, argv))

devnull = os.open(os.devnull, os.O_RDWR)
actions = [(os.POSIX_SPAWN_DUP2, devnull, 0), (os.POSIX_SPAWN_DUP2, devnull, 1),
           (os.POSIX_SPAWN_DUP2, devnull, 2)]

def once(argv):
    start = time.perf_counter()
    pid = os.posix_spawn(argv[0], argv, os.environ, file_actions=actions)
    _, status, usage = os.wait4(pid, 0)
    elapsed = time.perf_counter() - start
    cpu = (usage.ru_utime + usage.ru_stime) * 1000.0
    return elapsed * 1000.0, cpu, os.waitstatus_to_exitcode(status)

# one untimed run each: warms the page cache, and checks the exit status
for name, argv in commands:
    _, _, code = once(argv)
    if code != 0:
        sys.exit(f"startup_bench: `{name}` exited {code}")

times = {name: [] for name, _ in commands}
cpus = {name: [] for name, _ in commands}
for _ in range(runs):
    for name, argv in commands:
        ms, cpu, code = once(argv)
        if code != 0:
            sys.exit(f"startup_bench: `{name}` exited {code}")
        times[name].append(ms)
        cpus[name].append(cpu)

def pct(values, p):
    v = sorted(values)
    k = (len(v) - 1) * p
    lo, hi = int(k), min(int(k) + 1, len(v) - 1)
    return v[lo] + (v[hi] - v[lo]) * (k - lo)

medians = {n: pct(t, 0.5) for n, t in times.items()}
peers = [n for n, _ in commands if not n.startswith("navette")]
head = f"{'command':<20} {'median ms':>10} {'p10':>8} {'p90':>8} {'cpu ms':>8}"
head += "".join(f" {'/ ' + p.split()[0]:>10}" for p in peers)
print(head)
print("-" * len(head))
for name, _ in commands:
    t = times[name]
    row = f"{name:<20} {medians[name]:>10.1f} {pct(t, 0.1):>8.1f} {pct(t, 0.9):>8.1f} {pct(cpus[name], 0.5):>8.1f}"
    if name.startswith("navette"):
        row += "".join(f" {medians[name] / medians[p]:>10.3f}" for p in peers)
    print(row)
print("(cpu ms: median user+system time of the process, which a busy machine")
print(" inflates less than wall time; / peer: navette's median wall time over")
print(" the peer's, below 1 navette starts faster)")
missed = [n for n in medians if n.startswith("navette") and medians[n] > target]
if missed:
    print(f"target: navette medians <= {target:g} ms: MISS ({', '.join(missed)})")
else:
    print(f"target: navette medians <= {target:g} ms: met")
EOF
