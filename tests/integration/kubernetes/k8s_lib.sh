# Helpers of the Kubernetes tests (tests/integration/kubernetes), sourced
# after tests/integration/lib.sh: reads the stack's env file
# (K8S_STACK_ENV, set by ctest: tests/stack/k8s-start.sh wrote it), skips
# the whole test when the stack was skipped there (no Go toolchain), and
# gives each test a namespace of its own, removed at the end.
# (unset variables are errors here too, whoever sources it)
set -u
for v in K8S_STACK_ENV; do
	if [ ! -r "${!v:-}" ]; then
		echo "FAIL: $v is not set to a readable file (ctest sets it)" >&2
		exit 1
	fi
done
K8S_SKIP=
. "$K8S_STACK_ENV"
if [ -n "$K8S_SKIP" ]; then
	skip "the Kubernetes stack" "$K8S_SKIP"
	finish
fi

# kc ARGS...: the stack's kubectl as its admin, bounded
kc() { bounded 60 "$K8S_BIN/kubectl" --kubeconfig "$K8S_KUBECONFIG" "$@"; }

# k8s_namespace NAME: makes the namespace NAME (deleted when the test ends)
# with the stack's submitter and reader roles bound in it; sets NS.
k8s_namespace() {
	NS=$1
	kc create namespace "$NS" >/dev/null
	kc label namespace "$NS" pod-security.kubernetes.io/enforce=baseline >/dev/null
	kc -n "$NS" create rolebinding navette-submitter --clusterrole=navette-submitter \
		--serviceaccount=navette-test:submitter >/dev/null
	kc -n "$NS" create rolebinding navette-reader --clusterrole=navette-reader \
		--serviceaccount=navette-test:reader >/dev/null
	wait_for 60 kc -n "$NS" get serviceaccount default >/dev/null 2>&1
	K8S_NAMESPACES="${K8S_NAMESPACES:-} $NS"
}
# k8s_user_kubeconfig: the user's kubeconfig ($HOME/.kube/config) for
# namespace NS: contexts submitter (current: a service account bound to
# navette-submitter in NS, by its token file), reader, and exec (the
# submitter's token from an exec credential plugin, T/exec-plugin.sh,
# whose credential lives 13 s, each run a line of T/exec-runs), the
# cluster's CA
k8s_user_kubeconfig() {
	mkdir -p "$HOME/.kube"
	cat >"$T/exec-plugin.sh" <<EOF
#!/bin/sh
echo run >>"$T/exec-runs"
exp=\$(perl -MPOSIX -e 'print strftime("%Y-%m-%dT%H:%M:%SZ", gmtime(time + 13))')
printf '{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential",'
printf '"status":{"token":"%s","expirationTimestamp":"%s"}}\\n' "\$(cat "$K8S_TOKEN_FILE")" "\$exp"
EOF
	chmod 700 "$T/exec-plugin.sh"
	cat >"$HOME/.kube/config" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: test
  cluster:
    server: $K8S_SERVER
    certificate-authority: $K8S_CA
users:
- name: submitter
  user:
    tokenFile: $K8S_TOKEN_FILE
- name: reader
  user:
    tokenFile: $K8S_READER_TOKEN_FILE
- name: exec
  user:
    exec:
      apiVersion: client.authentication.k8s.io/v1
      command: $T/exec-plugin.sh
      interactiveMode: Never
contexts:
- name: submitter
  context: {cluster: test, user: submitter, namespace: $NS}
- name: reader
  context: {cluster: test, user: reader, namespace: $NS}
- name: exec
  context: {cluster: test, user: exec, namespace: $NS}
current-context: submitter
EOF
}

# kubelet_start MODE: kubelet.py --MODE (host or podman) runs the pods of
# NS, its folder T/kubelet-MODE, its log T/kubelet-MODE.log, until
# kubelet_stop (which fails the test if it died before: its pods stay
# Running)
kubelet_start() {
	mkdir -p "$T/kubelet-$1"
	python3 "$(dirname "${BASH_SOURCE[0]}")/kubelet.py" \
		--kubectl "$K8S_BIN/kubectl --kubeconfig $K8S_KUBECONFIG" \
		--namespace "$NS" --root "$T/kubelet-$1" "--$1" \
		>"$T/kubelet-$1.log" 2>&1 &
	KUBELET=$!
	KUBELET_MODE=$1
}
kubelet_stop() {
	if ! kill -0 "$KUBELET" 2>/dev/null; then
		fail "kubelet.py --$KUBELET_MODE ran until the end; its log:
$(tail -n 20 "$T/kubelet-$KUBELET_MODE.log")"
	fi
	kill "$KUBELET" 2>/dev/null
	wait "$KUBELET" 2>/dev/null
	KUBELET=
}

# busybox_root DIR: DIR/bin holds busybox and a link for each of its
# programs (sh, cat, ...), DIR/tmp is there: the root of an image with sh
busybox_root() {
	local a
	mkdir -p "$1/bin" "$1/tmp"
	chmod 1777 "$1/tmp"
	cp "$(command -v busybox)" "$1/bin/busybox"
	for a in $(busybox --list); do
		[ -e "$1/bin/$a" ] || ln -s busybox "$1/bin/$a"
	done
}

_k8s_cleanup() {
	local ns
	# (a kubelet.py left by a test that stopped early would run the pods
	# of the next one that makes a namespace of the same name)
	if [ -n "${KUBELET:-}" ]; then
		kill "$KUBELET" 2>/dev/null || true
	fi
	for ns in ${K8S_NAMESPACES:-}; do
		kc delete namespace "$ns" --wait=false >/dev/null 2>&1 || true
	done
}
trap 'st=$?; _k8s_cleanup; (exit "$st"); _cleanup' EXIT

# api METHOD PATH [BODY]: the API with a token file's bearer token (TOKEN,
# default the submitter's), like a client that is not kubectl; prints the
# body, then "HTTP <status>" on its own last line
api() {
	local method=$1 path=$2 body=${3:-}
	local args=(-sS --max-time 60 --cacert "$K8S_CA" -X "$method"
		-H "Authorization: Bearer $(cat "${TOKEN:-$K8S_TOKEN_FILE}")"
		-H 'Accept: application/json' -w '\nHTTP %{http_code}\n')
	if [ -n "$body" ]; then
		args+=(-H "Content-Type: ${CONTENT_TYPE:-application/json}" --data-binary "$body")
	fi
	curl "${args[@]}" "$K8S_SERVER$path"
}

# _k8s_kwok_works TRY: a pod placed on a node becomes Running within 30 s
# (KWOK, which plays the kubelets, is at work); the probe is deleted
_k8s_kwok_works() {
	local probe=navette-restart-probe-$$-$1 ok=1
	kc -n "$K8S_NAMESPACE" run "$probe" --restart=Never \
		--image="registry.invalid/navette/probe@sha256:$(printf '%064d' 0)" \
		--overrides='{"spec":{"nodeSelector":{"kubernetes.io/hostname":"kwok-gpu-a"}}}' >/dev/null 2>&1 || return 1
	_probe_running() { [ "$(kc -n "$K8S_NAMESPACE" get pod "$probe" -o 'jsonpath={.status.phase}' 2>/dev/null)" = Running ]; }
	wait_for 30 _probe_running && ok=0
	kc -n "$K8S_NAMESPACE" delete pod "$probe" --wait=false >/dev/null 2>&1
	return "$ok"
}

# k8s_restart: stops the whole cluster (kwokctl stop cluster), waits until
# each of its processes has exited (kwokctl does not wait), starts it again
# and waits until the API server is ready and a probe pod runs (a KWOK
# that finds the nodes' leases there never moves a pod: they are deleted
# first, and the cluster is restarted again, up to 3 times). etcd keeps its
# data, so the objects stay; the API server's watch cache starts anew.
k8s_restart() {
	local try
	for try in 1 2 3; do
		# KWOK, started again, creates the nodes' leases and stops
		# for good when they are there ("lease already exists")
		kc -n kube-node-lease delete lease --all >/dev/null 2>&1
		_k8s_restart_once || return 1
		_k8s_kwok_works "$try" && return 0
		echo "k8s_restart: no pod runs after restart $try of 3" >&2
	done
	return 1
}
_k8s_restart_once() {
	local work pids pid f i
	work=$(dirname "$K8S_STACK_ENV")/kwok
	pids=
	for f in "$work"/clusters/navette/pids/*.pid; do
		[ -f "$f" ] && pids="$pids $(tr -dc '0-9' <"$f")"
	done
	KWOK_WORKDIR=$work bounded 60 "$K8S_BIN/kwokctl" --name navette stop cluster >"$T/restart.log" 2>&1 || return 1
	for pid in $pids; do
		i=0
		while kill -0 "$pid" 2>/dev/null; do
			i=$((i + 1))
			[ "$i" -lt 300 ] || return 1
			sleep 0.1
		done
	done
	KWOK_WORKDIR=$work bounded 120 "$K8S_BIN/kwokctl" --name navette start cluster >>"$T/restart.log" 2>&1 || return 1
	wait_for 60 kc get --raw /readyz >/dev/null 2>&1
}
