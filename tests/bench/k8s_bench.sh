#!/usr/bin/env bash
# tests/bench/k8s_bench.sh [N] — a sweep of N tasks (1000 by default) sent
# to Kubernetes two ways, in the same run, on the same throwaway control
# plane (tests/stack/k8s-start.sh: the real kube-apiserver, controller
# manager and scheduler of the release tests/stack/k8s/ builds, KWOK for
# the nodes), with radosgw and a registry for what a navette profile
# needs (tests/stack/s3-start.sh, registry-start.sh):
#   navette    `navette run` of a recipe whose navette.sweep declares N
#              tasks, on a kubernetes profile: one Indexed Job and its
#              Secret (three requests), or a few when the sweep's launcher
#              would not fit in one Secret (1 MiB); timed from the start of the
#              command until it exits with all N submitted, N rows and
#              N signed launchers made;
#   kubectl    N `kubectl create -f JOB.yaml` of equivalent Jobs (the
#              manifest navette sends for one task, each with its own
#              name), as a user's shell loop does, with the kubectl built
#              from the same release.
# Every Job's pods ask for a node that does not exist, so they stay
# Pending and nothing runs: both ways meet the same empty cluster, each
# way's Jobs deleted before the next round.
#
# Prints the medians over ROUNDS rounds (navette) and LOOP_ROUNDS
# (kubectl), and the ratio kubectl / navette (above 1: navette is faster;
# the issue's aim is at least 10x). Not a test: nothing registers it with
# add_test; it fails only when a submission fails.
#
# Environment: the ports of the stacks it starts (required, no defaults:
# on a shared machine a guessed port collides):
#   K8S_PORT       kube-apiserver (the control plane takes 5 more)
#   S3_PORT        radosgw (ceph takes S3_PORT+20000 and up)
#   REGISTRY_PORT  the plain registry (the next three go to the others)
# And (all optional):
#   N            tasks (1000; the first argument wins)
#   ROUNDS       rounds of the navette sweep (3)
#   LOOP_ROUNDS  rounds of the kubectl loop (1)
#   K8S_BIN      prebuilt control plane (tests/stack/k8s/bin, built by
#                tests/stack/k8s/build.sh when missing)
#   BENCH_TMP    where the work folder goes (/tmp); removed on exit
#   NAVETTE      the navette binary (build/navette)
set -eu -o pipefail
. "$(dirname "$0")/../need_dir_lib.sh"

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
ROOT=$(cd "$HERE/../.." && pwd -P)
N=${1:-${N:-1000}}
case $N in
-h | --help)
	sed -n '2,/^set -eu/p' "$0" | sed '$d; s/^# \{0,1\}//'
	exit 0
	;;
*[!0-9]* | '' | 0 | 1)
	echo "usage: $0 [N >= 2] (see $0 --help)" >&2
	exit 2
	;;
esac
ROUNDS=${ROUNDS:-3}
LOOP_ROUNDS=${LOOP_ROUNDS:-1}
NAVETTE=${NAVETTE:-$ROOT/build/navette}
say() { printf 'k8s_bench: %s\n' "$*" >&2; }
die() {
	say "error: $*"
	exit 1
}
case $ROUNDS:$LOOP_ROUNDS in
*[!0-9:]* | 0:* | *:0 | :* | *:) die "ROUNDS and LOOP_ROUNDS must be whole numbers >= 1" ;;
esac
for v in K8S_PORT S3_PORT REGISTRY_PORT; do
	case ${!v:-} in
	'' | *[!0-9]*) die "$v is not set to a port: the bench starts the control plane, radosgw and a registry on K8S_PORT, S3_PORT and REGISTRY_PORT (e.g. K8S_PORT=28443 S3_PORT=27510 REGISTRY_PORT=25000)" ;;
	esac
done
[ -x "$NAVETTE" ] || die "$NAVETTE not found (cmake --build build --target navette, or set NAVETTE)"
for tool in git python3 buildah busybox; do
	command -v "$tool" >/dev/null 2>&1 || die "$tool not found (vendor/packages.txt)"
done
export REGISTRY_BASIC_PORT=$((REGISTRY_PORT + 1)) REGISTRY_TOKEN_PORT=$((REGISTRY_PORT + 2))
export REGISTRY_ISSUER_PORT=$((REGISTRY_PORT + 3))

WORK=$(mktemp -d "${BENCH_TMP:-/tmp}/navette-k8s-bench.XXXXXX")
NEED_DIR_ROOT=${BENCH_TMP:-}
need_dir WORK
cleanup() {
	local st=$?
	set +e
	bash "$ROOT/tests/stack/k8s-stop.sh" "$WORK/k8s" >/dev/null 2>&1
	bash "$ROOT/tests/stack/registry-stop.sh" "$WORK/registry" >/dev/null 2>&1
	bash "$ROOT/tests/stack/s3-stop.sh" "$WORK/s3" >/dev/null 2>&1
	rm -rf "$WORK"
	exit "$st"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# ---- the stacks ------------------------------------------------------------------

start() { # NAME SCRIPT
	say "starting $1.."
	bash "$ROOT/tests/stack/$2" "$WORK/$1" >"$WORK/$1-start.log" 2>&1 || {
		tail -n 30 "$WORK/$1-start.log" >&2
		die "$1 did not start"
	}
}
start k8s k8s-start.sh
start s3 s3-start.sh
start registry registry-start.sh
# shellcheck disable=SC1091
. "$WORK/k8s/k8s.env"
[ -z "${K8S_SKIP:-}" ] || die "the control plane cannot run here: $K8S_SKIP"
# shellcheck disable=SC1091
. "$WORK/s3/users.env"
# shellcheck disable=SC1091
. "$WORK/registry/registry.env"
export AWS_ACCESS_KEY_ID=$S3_ACCESS_KEY AWS_SECRET_ACCESS_KEY=$S3_SECRET_KEY
export AWS_REGION=$S3_REGION
unset AWS_SESSION_TOKEN AWS_ENDPOINT_URL AWS_ENDPOINT_URL_S3 AWS_PROFILE
kc() { "$K8S_BIN/kubectl" --kubeconfig "$K8S_KUBECONFIG" "$@"; }
NS=navette-bench
kc create namespace "$NS" >/dev/null

# a home, a kubeconfig (the stack's admin), the image, the repository
export HOME=$WORK/home NAVETTE_HOME=$WORK/navette-home
mkdir -p "$HOME/.kube" "$WORK/image"
cp "$K8S_KUBECONFIG" "$HOME/.kube/config"
cp "$(command -v busybox)" "$WORK/image/busybox"
printf 'FROM scratch\nCOPY busybox /bin/busybox\n' >"$WORK/image/Containerfile"
mkdir -p "$WORK/containers"
printf '[storage]\ndriver = "vfs"\ngraphroot = "%s/containers/storage"\nrunroot = "%s/containers/run"\n' \
	"$WORK" "$WORK" >"$WORK/containers/storage.conf"
export CONTAINERS_STORAGE_CONF=$WORK/containers/storage.conf
buildah bud --isolation chroot -q -t localhost/nv-k8s-bench -f "$WORK/image/Containerfile" \
	"$WORK/image" >"$WORK/buildah.log" 2>&1 &&
	buildah push --tls-verify=false localhost/nv-k8s-bench "docker://$REGISTRY_PLAIN/bench/base:1" \
		>>"$WORK/buildah.log" 2>&1 || {
	cat "$WORK/buildah.log" >&2
	die "the bench's image could not be built and pushed"
}
BUCKET=nv-k8s-bench-$$
"$NAVETTE" storage mb "s3://$BUCKET" --endpoint "$S3_ENDPOINT" >/dev/null

R=$WORK/repo
git init -q "$R"
git init -q --bare "$WORK/origin.git"
git -C "$R" remote add origin "$WORK/origin.git"
cat >"$R/navette.lua" <<EOF
return {
  name = "bench",
  profiles = {
    cluster = {
      backend = "kubernetes", storage = "s3://$BUCKET/jobs/",
      s3 = { endpoint = "$S3_ENDPOINT", region = "$S3_REGION" },
      kubernetes = { namespace = "$NS", nodes = { "no-such-node" } },
    },
  },
  default_profile = "cluster",
}
EOF
cat >"$R/sweep.lua" <<EOF
local navette = require "navette"
local n = {}
for i = 1, $N do n[i] = i end
navette.sweep { job = { name = "task", image = "$REGISTRY_PLAIN/bench/base:1",
                        command = { "sh", "-c", "echo \$NAVETTE_PARAM_N" } },
                matrix = { n = n } }
EOF
git -C "$R" add -A
git -C "$R" -c user.name=bench -c user.email=bench@invalid commit -qm bench
git -C "$R" push -q origin HEAD:main 2>/dev/null
(cd "$R" && "$NAVETTE" trust >/dev/null)

now() { python3 -c 'import time; print("%.3f" % time.monotonic())'; }
median() { sort -n | awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }
clear_jobs() {
	kc -n "$NS" delete jobs --all --wait=true --timeout=300s >/dev/null 2>&1 || true
	kc -n "$NS" delete secrets --all >/dev/null 2>&1 || true
}

# ---- navette: one Indexed Job ----------------------------------------------------
: >"$WORK/navette.times"
for r in $(seq 1 "$ROUNDS"); do
	clear_jobs
	t0=$(now)
	(cd "$R" && "$NAVETTE" run sweep.lua >"$WORK/run-$r.out" 2>&1) || {
		tail -n 20 "$WORK/run-$r.out" >&2
		die "navette run failed (round $r)"
	}
	t1=$(now)
	got=$(kc -n "$NS" get jobs -o 'jsonpath={range .items[*]}{.spec.completions}{"\n"}{end}')
	[ "$(printf '%s\n' "$got" | awk '{ n += $1 } END { print n }')" = "$N" ] ||
		die "round $r: the cluster's Jobs have completions '$got', not $N in all"
	JOBS=$(printf '%s\n' "$got" | grep -c .)
	python3 -c 'import sys; print("%.3f" % (float(sys.argv[2]) - float(sys.argv[1])))' "$t0" "$t1" >>"$WORK/navette.times"
	say "navette round $r: $(tail -n 1 "$WORK/navette.times") s"
done

# ---- kubectl: N Jobs, one create each --------------------------------------------
# the Job navette sent for the sweep, as one task: completions 1, its own name
kc -n "$NS" get jobs -o json | python3 -c '
import json, sys
job = json.load(sys.stdin)["items"][0]
meta = job["metadata"]
for k in list(meta):
    if k not in ("labels", "annotations"):
        del meta[k]
meta.get("annotations", {}).pop("navette/tasks", None)
spec = job["spec"]
for k in ("selector", "suspend"):
    spec.pop(k, None)
spec["completions"] = spec["parallelism"] = 1
spec["backoffLimit"] = 1
tmpl = spec["template"]["metadata"]
tmpl.get("labels", {}).clear()
job.pop("status", None)
json.dump(job, open(sys.argv[1], "w"))' "$WORK/one.json"
: >"$WORK/kubectl.times"
for r in $(seq 1 "$LOOP_ROUNDS"); do
	clear_jobs
	# (the N files written by one python, before the clock starts)
	python3 -c '
import json, sys
one, work, r, n = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
for i in range(1, n + 1):
    j = json.load(open(one))
    j["metadata"]["name"] = "bench-%s-%d" % (r, i)
    j["spec"]["template"]["spec"]["volumes"][0]["secret"]["secretName"] = j["metadata"]["name"]
    with open("%s/job-%d.json" % (work, i), "w") as f:
        json.dump(j, f)' "$WORK/one.json" "$WORK" "$r" "$N"
	t0=$(now)
	for i in $(seq 1 "$N"); do
		kc -n "$NS" create -f "$WORK/job-$i.json" >/dev/null || die "kubectl create failed (job $i)"
	done
	t1=$(now)
	python3 -c 'import sys; print("%.3f" % (float(sys.argv[2]) - float(sys.argv[1])))' "$t0" "$t1" >>"$WORK/kubectl.times"
	say "kubectl round $r: $(tail -n 1 "$WORK/kubectl.times") s"
done
clear_jobs

nav=$(median <"$WORK/navette.times")
kub=$(median <"$WORK/kubectl.times")
printf '\n%-40s %10s\n' "$N tasks to Kubernetes ($K8S_VERSION)" "seconds"
printf '%-40s %10.2f\n' "navette run ($JOBS Indexed Job(s)), median" "$nav"
printf '%-40s %10.2f\n' "$N x kubectl create -f, median" "$kub"
printf '%-40s %10.1fx\n' "kubectl / navette" "$(python3 -c 'import sys; print(float(sys.argv[1]) / float(sys.argv[2]))' "$kub" "$nav")"
