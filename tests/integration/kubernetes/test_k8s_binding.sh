#!/usr/bin/env bash
# _navette.k8s (host/k8s/k8s_lua.c) against the real test cluster: the
# checks of k8s_binding.lua (navette test --host) in a namespace of their
# own: sessions from the admin's kubeconfig (client certificate), a token
# file and an exec plugin (run again after its credential expires, and
# once after a 401), the reader's 403 verbatim, a 422's causes, look{} on
# a Job built by k8s.manifest whose row goes from queued to running to
# succeeded when the admin ends its pod, a watch that sees it; then the
# cluster restarts and a watch from the old resourceVersion is answered
# 410 (code "expired").
# Needs NAVETTE, NAVETTE_SOURCE and K8S_STACK_ENV (set by ctest).
set -eu -o pipefail
. "$(dirname "$0")/../lib.sh"
set +e # each check reports its own failure; finish sets the status
. "$(dirname "$0")/k8s_lib.sh"

k8s_namespace navette-t-binding

HERE=$(cd "$(dirname "$0")" && pwd -P)
work=$T/binding
mkdir -p "$work"
# binding PHASE: runs k8s_binding.lua's phase in a home of its own
binding() {
	NS=$NS WORK=$work PHASE=$1 \
		KUBECTL="$K8S_BIN/kubectl --kubeconfig $K8S_KUBECONFIG" \
		K8S_SERVER=$K8S_SERVER K8S_CA=$K8S_CA K8S_KUBECONFIG=$K8S_KUBECONFIG \
		K8S_TOKEN_FILE=$K8S_TOKEN_FILE K8S_READER_TOKEN_FILE=$K8S_READER_TOKEN_FILE \
		bounded 300 bash "$NAVETTE_SOURCE/tests/lua/run.sh" "$NAVETTE" \
		"$HERE/k8s_binding.lua" >"$T/$1.out" 2>&1
}

binding main
rc=$?
cat "$T/main.out"
check_eq "every check of the binding passes against the cluster" "$rc" 0
check_contains "none failed" "$(tail -n 1 "$T/main.out")" " 0 failed"

if [ -s "$work/rv" ]; then
	if k8s_restart; then
		pass "the cluster restarts"
		binding expired
		rc=$?
		cat "$T/expired.out"
		check_eq "after the restart: 410, code expired" "$rc" 0
	else
		fail "the cluster restarts" "$(cat "$T/restart.log")"
	fi
else
	fail "the main phase left a resourceVersion" "$(ls "$work")"
fi

finish
