#!/usr/bin/env bash
# tests/stack/k8s-stop.sh DIR — stops the test cluster that
# tests/stack/k8s-start.sh started in DIR: `kwokctl delete cluster` first,
# then any process still named by a pid file under DIR/kwok, by PID (never
# by name) and only while its command line names a path under DIR, so a
# recycled PID is left alone. Idempotent: a missing DIR, or a cluster
# already stopped, is fine. DIR itself (logs, certificates) is kept.
set -eu -o pipefail
. "$(dirname "$0")/../need_dir_lib.sh"

if [ $# -ne 1 ] || [ -z "$1" ]; then
	echo "usage: $0 DIR" >&2
	exit 2
fi
[ -d "$1" ] || exit 0
DIR=$(cd "$1" && pwd -P)
need_dir DIR
WAIT=${K8S_STOP_WAIT:-10}
export KWOK_WORKDIR=$DIR/kwok
[ -d "$KWOK_WORKDIR" ] || exit 0

bin=
if [ -f "$DIR/k8s.env" ]; then
	bin=$(. "$DIR/k8s.env" && printf '%s' "${K8S_BIN:-}")
fi
[ -n "$bin" ] || bin=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)/k8s/bin
if [ -x "$bin/kwokctl" ]; then
	"$bin/kwokctl" --name navette delete cluster >"$DIR/delete.log" 2>&1 || true
fi

ours() { # PID: alive, and started with a path under DIR
	case ${1:-} in '' | *[!0-9]*) return 1 ;; esac
	ps -o command= -p "$1" 2>/dev/null | grep -qF -- "$DIR/"
}
pids=
for f in $(find "$KWOK_WORKDIR" -name '*.pid' -type f 2>/dev/null); do
	pid=$(tr -dc '0-9' <"$f")
	ours "$pid" && pids="$pids $pid"
done
[ -n "$pids" ] || exit 0
kill -TERM $pids 2>/dev/null || true
end=$(($(date +%s) + WAIT))
for pid in $pids; do
	while ours "$pid" && [ "$(date +%s)" -lt "$end" ]; do sleep 0.2; done
	if ours "$pid"; then kill -KILL "$pid" 2>/dev/null || true; fi
done
