#!/usr/bin/env bash
# tests/stack/k8s/build.sh — builds the test control plane from Go modules:
# kube-apiserver, kube-controller-manager, kube-scheduler and kubectl at the
# release the wrapper module (go.mod here) pins, etcd at the version that
# release requires, and kwok + kwokctl, all from one module. Nothing is downloaded
# but Go modules through the module proxy; nothing is committed.
#
# The binaries go to the ignored folder OUT (default tests/stack/k8s/bin),
# with OUT/.key (what they were built from: the module's go.mod and go.sum,
# this script and `go version`) and OUT/build-times.txt (wall seconds,
# user+sys seconds and peak RSS of each build). When OUT/.key matches, nothing
# is built. Two builds of the same OUT take turns (a lock folder).
#
# Exit status: 0 built or already there; 77 when it cannot be built here (no
# Go >= 1.26, or no module proxy), with the reason on the last line of
# stderr; 1 when a build fails.
#
# Usage: tests/stack/k8s/build.sh [OUT]      (K8S_BUILD_JOBS: go build -p)
set -eu -o pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
. "$here/../../need_dir_lib.sh"
out=${1:-$here/bin}
case $out in /*) ;; *) out=$PWD/$out ;; esac
# OUT: under this folder (the default), TMPDIR or a build folder
NEED_DIR_ROOT=$here
need_dir out
jobs=${K8S_BUILD_JOBS:-2}
say() { printf 'k8s-build: %s\n' "$*" >&2; }
unavailable() { say "skipped: $*"; exit 77; }

# Go: on PATH, or where its official archive installs it.
if ! command -v go >/dev/null 2>&1 && [ -x /usr/local/go/bin/go ]; then
    PATH=/usr/local/go/bin:$PATH
fi
command -v go >/dev/null 2>&1 || unavailable "no Go toolchain (go 1.26 or later) on PATH or in /usr/local/go/bin"
export GOTOOLCHAIN=local GOFLAGS=-mod=readonly CGO_ENABLED=0
gover=$(go env GOVERSION)
case $gover in
go1.2[6-9]* | go1.[3-9][0-9]* | go[2-9]*) ;;
*) unavailable "Go $gover is older than the 1.26 the control plane's modules need" ;;
esac

release=$(cd "$here" && go list -m -f '{{.Version}}' k8s.io/kubernetes) ||
    unavailable "the wrapper module cannot be read (go list -m k8s.io/kubernetes failed)"

key=$( (cat "$here/go.mod" "$here/go.sum" \
    "$here/build.sh"; echo "$gover") | shasum -a 256 | cut -c1-64)
if [ -f "$out/.key" ] && [ "$(cat "$out/.key")" = "$key" ]; then
    say "up to date: $out ($release)"
    exit 0
fi

mkdir -p "$(dirname "$out")"
lock=$out.lock
waited=0
until mkdir "$lock" 2>/dev/null; do
    # A lock left by a build that was killed: its PID is gone.
    holder=$(cat "$lock/pid" 2>/dev/null || true)
    if [ -n "$holder" ] && ! kill -0 "$holder" 2>/dev/null; then
        rm -rf "$lock"
        continue
    fi
    [ "$waited" -eq 0 ] && say "another build of $out is running (PID ${holder:-?}); waiting"
    waited=$((waited + 1))
    sleep 2
done
echo $$ >"$lock/pid"
trap 'rm -rf "$lock"' EXIT
if [ -f "$out/.key" ] && [ "$(cat "$out/.key")" = "$key" ]; then
    say "up to date: $out ($release), built meanwhile"
    exit 0
fi

# Every module must come from the proxy (or the module cache): fail early
# and say so, rather than in the middle of a build.
(cd "$here" && go mod download -json k8s.io/kubernetes >"$lock/kubernetes.json" 2>"$lock/download.err") ||
    unavailable "Go modules cannot be downloaded (GOPROXY=$(go env GOPROXY)): $(tail -n 1 "$lock/download.err")"

# The replace and godebug lines must be the release's own (update.sh wrote
# them from its go.mod); a hand edit would build another Kubernetes.
python3 - "$here/go.mod" "$lock/kubernetes.json" "$release" <<'PY'
import json, subprocess, sys
wrapper, info, release = sys.argv[1:4]
def edit_json(path):
    return json.loads(subprocess.run(["go", "mod", "edit", "-json", path],
                                     check=True, capture_output=True).stdout)
ours = edit_json(wrapper)
theirs = edit_json(json.load(open(info))["GoMod"])
staging = "v0." + release[len("v1."):]
want = sorted((r["Old"]["Path"], staging) for r in theirs.get("Replace") or []
              if r["New"]["Path"].startswith("./staging/src/"))
have = sorted((r["Old"]["Path"], r["New"].get("Version")) for r in ours.get("Replace") or [])
if want != have:
    sys.exit("k8s-build: go.mod's replace lines are not those of %s's go.mod "
             "(run tests/stack/k8s/update.sh %s): missing %s, extra %s"
             % (release, release, sorted(set(want) - set(have)), sorted(set(have) - set(want))))
g = lambda d: sorted((x["Key"], x["Value"]) for x in d.get("Godebug") or [])
if g(ours) != g(theirs):
    sys.exit("k8s-build: go.mod's godebug lines differ from %s's" % release)
PY

commit=$(python3 -c '
import json, sys
info = json.load(open(json.load(open(sys.argv[1]))["Info"]))
print(info.get("Origin", {}).get("Hash", ""), info.get("Time", ""))' "$lock/kubernetes.json")
git_commit=${commit%% *}
build_date=${commit#* }
minor=${release#v1.}
minor=${minor%%.*}
ldflags="-s -w"
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ldflags="$ldflags -X $pkg.gitVersion=$release -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor"
    ldflags="$ldflags -X $pkg.gitTreeState=clean -X $pkg.buildDate=$build_date"
    [ -n "$git_commit" ] && ldflags="$ldflags -X $pkg.gitCommit=$git_commit"
done

tmp=$out.new
rm -rf "$tmp"
mkdir -p "$tmp"
times=$tmp/build-times.txt
echo "# what  wall_s  user_sys_s  peak_rss_kib  ($gover, go build -p $jobs)" >"$times"
timed() { # NAME DIR COMMAND...
    local name=$1 dir=$2
    shift 2
    say "building $name"
    (cd "$dir" && /usr/bin/env python3 -c '
import os, resource, subprocess, sys, time
t = time.monotonic()
rc = subprocess.call(sys.argv[2:])
r = resource.getrusage(resource.RUSAGE_CHILDREN)
with open(sys.argv[1], "a") as f:
    f.write("%s %.0f %.0f %d\n" % (os.environ["NAME"], time.monotonic() - t,
                                  r.ru_utime + r.ru_stime, r.ru_maxrss))
sys.exit(rc)' "$times" "$@") || { say "the build of $name failed"; exit 1; }
}
NAME=kubernetes timed kubernetes "$here" go build -trimpath -p "$jobs" -o "$tmp/" -ldflags "$ldflags" \
    k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager \
    k8s.io/kubernetes/cmd/kube-scheduler k8s.io/kubernetes/cmd/kubectl
NAME=etcd timed etcd "$here" go build -trimpath -p "$jobs" -o "$tmp/etcd" -ldflags "-s -w" go.etcd.io/etcd/server/v3
NAME=kwok timed kwok "$here" go build -trimpath -p "$jobs" -o "$tmp/" -ldflags "-s -w" \
    sigs.k8s.io/kwok/cmd/kwok sigs.k8s.io/kwok/cmd/kwokctl
echo "$key" >"$tmp/.key"
rm -rf "$out"
mv "$tmp" "$out"
say "built $release into $out"
cat "$out/build-times.txt" >&2
