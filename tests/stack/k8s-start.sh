#!/usr/bin/env bash
# tests/stack/k8s-start.sh DIR — starts the test Kubernetes cluster: a real
# control plane (etcd, kube-apiserver with authorization and admission,
# kube-controller-manager, kube-scheduler), built from Go modules by
# tests/stack/k8s/build.sh, and KWOK, which stands in for the kubelets of two
# fake GPU nodes. kwokctl (binary runtime) runs them as processes on
# 127.0.0.1, with its state under DIR/kwok (KWOK_WORKDIR): certificates,
# logs, pid files. Nothing is downloaded: every binary is given.
#
# Then it makes the objects the tests use (tests/stack/k8s/cluster.yaml):
# nodes kwok-gpu-a and kwok-gpu-b (16 CPUs, 64 GiB, 8 nvidia.com/gpu each),
# kwok-nopull (where every image pull fails: tests/stack/k8s/stages.yaml),
# the namespace navette-test, the service accounts submitter (may run Jobs)
# and reader (may only read them), and a token for each.
#
# On success DIR/k8s.env holds, as shell assignments: K8S_SERVER,
# K8S_CA (the cluster CA's certificate), K8S_KUBECONFIG (the admin's,
# context kwok-navette), K8S_NAMESPACE, K8S_TOKEN_FILE (submitter's token),
# K8S_READER_TOKEN_FILE, K8S_BIN (kubectl and the others), K8S_VERSION,
# K8S_START_SECONDS. When the control plane cannot be built here (no Go
# 1.26, no module proxy), it writes K8S_SKIP="the reason" instead and exits
# 0, so the tests report themselves skipped with that reason; with
# NAVETTE_REQUIRE_K8S=1 (.ci/run) that is an error (exit 1) instead.
#
# Environment (all optional):
#   K8S_PORT           kube-apiserver's port (26443); etcd, the controller
#                      manager, the scheduler, kwok and etcd's peer port
#                      take the next five
#   K8S_BIN            folder of prebuilt binaries (tests/stack/k8s/bin,
#                      built or brought up to date by build.sh)
#   K8S_START_TIMEOUT  seconds to wait for the cluster (180)
set -eu -o pipefail
. "$(dirname "$0")/../need_dir_lib.sh"

if [ $# -ne 1 ] || [ -z "$1" ]; then
	echo "usage: $0 DIR" >&2
	exit 2
fi
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
case $1 in /*) DIR=$1 ;; *) DIR=$PWD/$1 ;; esac
need_dir DIR
mkdir -p "$DIR"
DIR=$(cd "$DIR" && pwd -P)
PORT=${K8S_PORT:-26443}
BIN=${K8S_BIN:-$HERE/k8s/bin}
LIMIT=${K8S_START_TIMEOUT:-180}
NS=navette-test
NAME=navette
say() { printf 'k8s-start: %s\n' "$*"; }
case $PORT in '' | *[!0-9]*) say "error: K8S_PORT='$PORT' is not a port" >&2; exit 2 ;; esac
if [ -n "$(ls -A "$DIR" 2>/dev/null)" ]; then
	say "error: $DIR is not empty (run tests/stack/k8s-stop.sh and remove it)" >&2
	exit 1
fi
started=$(date +%s)

# The binaries: built once per wrapper go.sum (build.sh says when they are
# already there, and waits for a build that is running).
if [ -z "${K8S_BIN:-}" ]; then
	set +e
	"$HERE/k8s/build.sh" "$BIN" 2>"$DIR/build.log"
	rc=$?
	set -e
	cat "$DIR/build.log" >&2
	if [ "$rc" -eq 77 ]; then
		reason=$(tail -n 1 "$DIR/build.log" | sed 's/^k8s-build: skipped: //')
		if [ "${NAVETTE_REQUIRE_K8S:-0}" = 1 ]; then
			say "error: the Kubernetes stack is required here (NAVETTE_REQUIRE_K8S=1) but cannot be built: $reason" >&2
			exit 1
		fi
		printf 'K8S_SKIP=%q\n' "$reason" >"$DIR/k8s.env"
		say "skipped: $reason"
		exit 0
	fi
	[ "$rc" -eq 0 ] || { say "error: tests/stack/k8s/build.sh failed (exit $rc); its log is above" >&2; exit 1; }
fi
for b in etcd kube-apiserver kube-controller-manager kube-scheduler kubectl kwok kwokctl; do
	[ -x "$BIN/$b" ] || { say "error: $BIN/$b is missing (run tests/stack/k8s/build.sh)" >&2; exit 1; }
done
version=$("$BIN/kube-apiserver" --version | sed 's/^Kubernetes //')

export KWOK_WORKDIR=$DIR/kwok
mkdir -p "$KWOK_WORKDIR"
cat >"$DIR/kwokctl.yaml" <<YAML
apiVersion: config.kwok.x-k8s.io/v1alpha1
kind: KwokctlConfiguration
options:
  kubectlBinary: $BIN/kubectl
  kubeVersion: $version
  # every port on loopback, none chosen at random
  bindAddress: 127.0.0.1
  etcdPeerPort: $((PORT + 5))
# etcd is compacted every 10 s (5 min by default), so that a client that
# holds an old resourceVersion meets the 410 Expired of a long-lived
# cluster within a test's time
componentsPatches:
- name: kube-apiserver
  extraArgs:
  - key: etcd-compaction-interval
    value: 10s
YAML
on_fail() {
	say "error: the cluster did not start; the end of each component's log:" >&2
	for f in "$KWOK_WORKDIR"/clusters/$NAME/logs/*.log; do
		[ -f "$f" ] || continue
		echo "--- $f" >&2
		tail -n 15 "$f" >&2
	done
	"$HERE/k8s-stop.sh" "$DIR" >&2 || true
}
trap on_fail EXIT
"$BIN/kwokctl" --name "$NAME" --config "$DIR/kwokctl.yaml" --config "$HERE/k8s/stages.yaml" \
	create cluster --runtime binary \
	--kube-apiserver-port "$PORT" --secure-port \
	--etcd-port $((PORT + 1)) --kube-controller-manager-port $((PORT + 2)) \
	--kube-scheduler-port $((PORT + 3)) --controller-port $((PORT + 4)) \
	--kube-authorization --kube-admission \
	--etcd-binary "$BIN/etcd" --kube-apiserver-binary "$BIN/kube-apiserver" \
	--kube-controller-manager-binary "$BIN/kube-controller-manager" \
	--kube-scheduler-binary "$BIN/kube-scheduler" --kwok-controller-binary "$BIN/kwok" \
	--kubeconfig "$DIR/admin.kubeconfig" --timeout "${LIMIT}s" --wait "${LIMIT}s" \
	>"$DIR/kwokctl.log" 2>&1 || { cat "$DIR/kwokctl.log" >&2; exit 1; }

kc() { "$BIN/kubectl" --kubeconfig "$DIR/admin.kubeconfig" "$@"; }
kc apply -f "$HERE/k8s/cluster.yaml" >"$DIR/apply.log"
# Pods are refused until the namespace's default service account exists.
deadline=$(($(date +%s) + LIMIT))
until kc -n "$NS" get serviceaccount default >/dev/null 2>&1; do
	[ "$(date +%s)" -lt "$deadline" ] || { say "error: no default service account in $NS" >&2; exit 1; }
	sleep 1
done
until [ "$(kc get nodes -o 'jsonpath={range .items[*]}{.status.conditions[?(@.type=="Ready")].status}{" "}{end}')" = "True True True " ]; do
	[ "$(date +%s)" -lt "$deadline" ] || { say "error: the fake nodes are not Ready" >&2; kc get nodes >&2; exit 1; }
	sleep 1
done
umask 077
kc -n "$NS" create token submitter --duration=24h >"$DIR/submitter.token"
kc -n "$NS" create token reader --duration=24h >"$DIR/reader.token"
ca=$KWOK_WORKDIR/clusters/$NAME/pki/ca.crt
[ -f "$ca" ] || { say "error: no cluster CA at $ca" >&2; exit 1; }
{
	printf 'K8S_SERVER=%q\n' "https://127.0.0.1:$PORT"
	printf 'K8S_CA=%q\n' "$ca"
	printf 'K8S_KUBECONFIG=%q\n' "$DIR/admin.kubeconfig"
	printf 'K8S_NAMESPACE=%q\n' "$NS"
	printf 'K8S_TOKEN_FILE=%q\n' "$DIR/submitter.token"
	printf 'K8S_READER_TOKEN_FILE=%q\n' "$DIR/reader.token"
	printf 'K8S_BIN=%q\n' "$BIN"
	printf 'K8S_VERSION=%q\n' "$version"
	printf 'K8S_START_SECONDS=%q\n' "$(($(date +%s) - started))"
} >"$DIR/k8s.env"
trap - EXIT
say "cluster $version up on https://127.0.0.1:$PORT in $(($(date +%s) - started)) s (env: $DIR/k8s.env)"
