#!/usr/bin/env bash
# Regenerate the wrapper module of the test control plane from one
# Kubernetes release's own go.mod (a developer's tool; the result is
# committed). Usage: tests/stack/k8s/update.sh v1.36.3 [kwok-version]
#
# k8s.io/kubernetes names its staging modules at v0.0.0 with replace lines
# into ./staging; a module that imports it needs one replace per staging
# module, at the matching v0.X.Y tag. The list and the godebug lines are read
# from the release's go.mod with `go mod edit -json`, never typed by hand, and
# build.sh checks them again before every build.
set -eu -o pipefail
[ $# -ge 1 ] || { echo "usage: $0 vMAJOR.MINOR.PATCH [kwok-version]" >&2; exit 2; }
release=$1
kwok_version=${2:-v0.8.0}
case $release in v1.*.*) ;; *) echo "update.sh: $release is not a release tag like v1.36.3" >&2; exit 2 ;; esac
here=$(cd "$(dirname "$0")" && pwd -P)
. "$here/../../need_dir_lib.sh"
# it rewrites go.mod and go.sum here, nothing else
NEED_DIR_ROOT=$(dirname "$here")
need_dir here
export GOTOOLCHAIN=local GOFLAGS=-mod=mod
staging=v0.${release#v1.}

info=$(go mod download -json "k8s.io/kubernetes@$release")
gomod=$(printf '%s' "$info" | python3 -c 'import json,sys; print(json.load(sys.stdin)["GoMod"])')
release_json=$(go mod edit -json "$gomod")

work=$(mktemp -d)
need_dir work
trap 'rm -rf "$work"' EXIT
cd "$work"
go mod init navette.test/k8s-stack >/dev/null 2>&1
go_line=$(printf '%s' "$release_json" | python3 -c 'import json,sys; print(json.load(sys.stdin)["Go"])')
go mod edit -go="$go_line"
printf '%s' "$release_json" | python3 -c '
import json, sys
d = json.load(sys.stdin)
for r in d.get("Replace") or []:
    if r["New"]["Path"].startswith("./staging/src/"):
        print("replace", r["Old"]["Path"])
for g in d.get("Godebug") or []:
    print("godebug", g["Key"] + "=" + g["Value"])
' | while read -r kind arg; do
    case $kind in
    replace) go mod edit -replace="$arg=$arg@$staging" ;;
    godebug) go mod edit -godebug="$arg" ;;
    esac
done
etcd=$(printf '%s' "$release_json" | python3 -c '
import json, sys
d = json.load(sys.stdin)
print([r["Version"] for r in d["Require"] if r["Path"] == "go.etcd.io/etcd/server/v3"][0])')
go get "k8s.io/kubernetes@$release" "go.etcd.io/etcd/server/v3@$etcd"
for cmd in kube-apiserver kube-controller-manager kube-scheduler kubectl; do
    go get -tool "k8s.io/kubernetes/cmd/$cmd@$release"
done
go get -tool "go.etcd.io/etcd/server/v3@$etcd"
# KWOK in the same module: its k8s.io modules resolve to the release's
# staging versions above, so its packages are the ones the control plane
# already compiled (one build instead of two)
go get -tool "sigs.k8s.io/kwok/cmd/kwok@$kwok_version" "sigs.k8s.io/kwok/cmd/kwokctl@$kwok_version"
go mod tidy
cp go.mod go.sum "$here/"
echo "update.sh: tests/stack/k8s/go.mod for $release (staging $staging, etcd $etcd), kwok $kwok_version"
