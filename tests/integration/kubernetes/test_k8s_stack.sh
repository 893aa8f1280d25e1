#!/usr/bin/env bash
# The test cluster (tests/stack/k8s-start.sh, the ctest fixture "k8s") is a
# real control plane: its API server is the release it was built from, and
# its scheduler, Job controller and garbage collector act as on any
# cluster, while KWOK's stages (tests/stack/k8s/stages.yaml) play the
# kubelets. Checked with kubectl and curl only (no navette yet): a Job runs
# to Complete when its pod exits 0; exit 3 under a podFailurePolicy fails it
# with reason PodFailurePolicy; a preempted pod (DisruptionTarget) is
# ignored and replaced; a pod asking 16 GPUs of 8-GPU nodes is
# Unschedulable with the scheduler's reason; an image that cannot be pulled
# shows ErrImagePull then ImagePullBackOff; activeDeadlineSeconds ends a Job
# with DeadlineExceeded; a Secret owned by a Job goes with it; RBAC refuses
# a reader's Job; a watch from before the API server restarted answers 410
# (it restarts the cluster: the Kubernetes tests take turns on it).
# Needs K8S_STACK_ENV (the stack's env file), set by ctest.
set -eu -o pipefail
. "$(dirname "$0")/../lib.sh"
set +e # each check reports its own failure; finish sets the status
. "$(dirname "$0")/k8s_lib.sh"

k8s_namespace navette-t-stack

check_eq "the API server is the release built ($K8S_VERSION)" \
	"$(kc version -o json | json 'd["serverVersion"]["gitVersion"]')" "$K8S_VERSION"

# job NAME GPUS EXTRA_SPEC_YAML: a Job of one pod asking GPUS GPUs; the
# pod template's spec gets EXTRA (indented YAML) too
job() {
	kc -n "$NS" apply -f - >/dev/null <<YAML
apiVersion: batch/v1
kind: Job
metadata:
  name: $1
spec:
  backoffLimit: ${BACKOFF:-0}
  podReplacementPolicy: Failed
  ${JOB_EXTRA:-}
  podFailurePolicy:
    rules:
    - action: Ignore
      onPodConditions:
      - type: DisruptionTarget
        status: "True"
    - action: FailJob
      onExitCodes:
        containerName: job
        operator: NotIn
        values: [0]
  template:
    spec:
      restartPolicy: Never
      ${POD_EXTRA:-}
      containers:
      - name: job
        image: registry.invalid/navette/test@sha256:$(printf '%064d' 0)
        command: ["sh", "-c", "true"]
        resources:
          limits:
            nvidia.com/gpu: "$2"
YAML
}
# pods_of JOB: its pods' names, oldest first
pods_of() {
	kc -n "$NS" get pods -l "batch.kubernetes.io/job-name=$1" \
		--sort-by=.metadata.creationTimestamp -o 'jsonpath={range .items[*]}{.metadata.name}{"\n"}{end}'
}
# phase_is POD PHASE
phase_is() { [ "$(kc -n "$NS" get pod "$1" -o 'jsonpath={.status.phase}' 2>/dev/null)" = "$2" ]; }
# condition JOB TYPE: the reason of the Job's condition TYPE when True
condition() {
	kc -n "$NS" get job "$1" -o "jsonpath={.status.conditions[?(@.type==\"$2\")].status}/{.status.conditions[?(@.type==\"$2\")].reason}" 2>/dev/null
}
# is_true JOB TYPE: the Job's condition TYPE is True
is_true() { case $(condition "$1" "$2") in True/*) return 0 ;; esac; return 1; }
# reason_is JOB TYPE REASON
reason_is() { [ "$(condition "$1" "$2")" = "True/$3" ]; }
first_pod_running() { # JOB: sets POD once its first pod is Running
	POD=$(pods_of "$1" | head -n 1)
	[ -n "$POD" ] && phase_is "$POD" Running
}

# 1. exit 0: Complete, by the real Job controller
job ok 1
if wait_for 60 first_pod_running ok; then
	pass "a pod asking 1 GPU is scheduled and Running"
	node=$(kc -n "$NS" get pod "$POD" -o 'jsonpath={.spec.nodeName}')
	check_match "it was placed on a GPU node" "$node" '^kwok-gpu-[ab]$'
	kc -n "$NS" annotate pod "$POD" navette.test/exit-code=0 >/dev/null
	wait_for 60 is_true ok Complete
	check_match "exit 0: the Job is Complete" "$(condition ok Complete)" '^True/'
else
	fail "a pod asking 1 GPU is scheduled and Running" "$(kc -n "$NS" get pods -o wide 2>&1)"
fi

# 2. exit 3 under FailJob NotIn [0]: Failed, reason PodFailurePolicy
job exit3 1
if wait_for 60 first_pod_running exit3; then
	kc -n "$NS" annotate pod "$POD" navette.test/exit-code=3 >/dev/null
	wait_for 60 reason_is exit3 Failed PodFailurePolicy
	check_eq "exit 3: the Job failed by its podFailurePolicy" "$(condition exit3 Failed)" True/PodFailurePolicy
	check_contains "the condition's message names the exit code" \
		"$(kc -n "$NS" get job exit3 -o 'jsonpath={.status.conditions[?(@.type=="Failed")].message}')" \
		"exit code 3"
else
	fail "the exit-3 job's pod runs" "$(kc -n "$NS" get pods 2>&1)"
fi

# 3. a preemption (DisruptionTarget) is ignored: a new pod, no failure
#    counted, then it completes
job preempt 1
if wait_for 60 first_pod_running preempt; then
	first=$POD
	kc -n "$NS" annotate pod "$first" navette.test/disrupt=1 >/dev/null
	second_running() {
		POD=$(pods_of preempt | grep -vx "$first" | head -n 1)
		[ -n "$POD" ] && phase_is "$POD" Running
	}
	if wait_for 60 second_running; then
		pass "a preempted pod is replaced although backoffLimit is 0"
		check_eq "the first pod has the DisruptionTarget condition" \
			"$(kc -n "$NS" get pod "$first" -o 'jsonpath={.status.conditions[?(@.type=="DisruptionTarget")].status}')" True
		check_eq "the Job counts no failure for it" \
			"$(kc -n "$NS" get job preempt -o 'jsonpath={.status.failed}')" ""
		kc -n "$NS" annotate pod "$POD" navette.test/exit-code=0 >/dev/null
		wait_for 60 is_true preempt Complete
		check_match "then it completes" "$(condition preempt Complete)" '^True/'
	else
		fail "a preempted pod is replaced although backoffLimit is 0" "$(kc -n "$NS" get pods 2>&1)"
	fi
else
	fail "the preempted job's pod runs" "$(kc -n "$NS" get pods 2>&1)"
fi

# 4. 16 GPUs on 8-GPU nodes: Unschedulable, with the scheduler's reason
job big 16
unschedulable() {
	POD=$(pods_of big | head -n 1)
	[ -n "$POD" ] && [ "$(kc -n "$NS" get pod "$POD" -o 'jsonpath={.status.conditions[?(@.type=="PodScheduled")].reason}')" = Unschedulable ]
}
if wait_for 60 unschedulable; then
	pass "a pod asking 16 GPUs is Unschedulable"
	check_contains "the scheduler says why" \
		"$(kc -n "$NS" get pod "$POD" -o 'jsonpath={.status.conditions[?(@.type=="PodScheduled")].message}')" \
		"Insufficient nvidia.com/gpu"
else
	fail "a pod asking 16 GPUs is Unschedulable" "$(kc -n "$NS" get pods -o wide 2>&1)"
fi

# 5. an image that cannot be pulled (the node kwok-nopull): the pod's
#    waiting reasons, read from a watch that starts before the Job (the
#    API server replays every change since then, so a loaded machine that
#    polls too slowly for the 2 s of ErrImagePull still sees it)
pods_rv=$(api GET "/api/v1/namespaces/$NS/pods?limit=1" | sed '$d' | json 'd["metadata"]["resourceVersion"]')
POD_EXTRA='nodeSelector: {kubernetes.io/hostname: kwok-nopull}
      tolerations: [{key: navette.test/nopull, operator: Exists}]' job nopull 1
waiting_is() { # REASON
	POD=$(pods_of nopull | head -n 1)
	[ -n "$POD" ] && [ "$(kc -n "$NS" get pod "$POD" -o 'jsonpath={.status.containerStatuses[0].state.waiting.reason}')" = "$1" ]
}
wait_for 60 waiting_is ImagePullBackOff
# the distinct waiting reasons of the job's pod, in the order seen
reasons=$(api GET "/api/v1/namespaces/$NS/pods?watch=1&resourceVersion=$pods_rv&timeoutSeconds=1&labelSelector=batch.kubernetes.io%2Fjob-name%3Dnopull" | sed '$d' | python3 -c '
import json, sys
text, dec, pos, seen = sys.stdin.read(), json.JSONDecoder(), 0, []
while True:
    while pos < len(text) and text[pos].isspace():
        pos += 1
    if pos >= len(text):
        break
    ev, pos = dec.raw_decode(text, pos)
    for c in (ev["object"].get("status") or {}).get("containerStatuses") or []:
        r = ((c.get("state") or {}).get("waiting") or {}).get("reason")
        if r and (not seen or seen[-1] != r):
            seen.append(r)
print(" ".join(seen))')
check_eq "an image that cannot be pulled: ErrImagePull, then ImagePullBackOff" \
	"$reasons" "ErrImagePull ImagePullBackOff"
check_true "the pod stays in ImagePullBackOff" waiting_is ImagePullBackOff

# 6. activeDeadlineSeconds: DeadlineExceeded
JOB_EXTRA='activeDeadlineSeconds: 3' job late 1
wait_for 60 reason_is late Failed DeadlineExceeded
check_eq "activeDeadlineSeconds ends the Job: DeadlineExceeded" "$(condition late Failed)" True/DeadlineExceeded

# 7. a Secret owned by a Job is deleted with it (garbage collector)
uid=$(kc -n "$NS" get job ok -o 'jsonpath={.metadata.uid}')
kc -n "$NS" apply -f - >/dev/null <<YAML
apiVersion: v1
kind: Secret
metadata:
  name: ok
  ownerReferences:
  - apiVersion: batch/v1
    kind: Job
    name: ok
    uid: $uid
stringData:
  launcher.sh: "true"
YAML
check_true "the Secret owned by the Job exists" kc -n "$NS" get secret ok
out=$(api DELETE "/apis/batch/v1/namespaces/$NS/jobs/ok" \
	'{"kind":"DeleteOptions","apiVersion":"v1","propagationPolicy":"Background"}')
check_contains "the Job is deleted (Background)" "$out" "HTTP 200"
secret_gone() { ! kc -n "$NS" get secret ok >/dev/null 2>&1; }
wait_for 60 secret_gone
check_true "its Secret is gone with it" secret_gone

# 8. RBAC: the reader may list Jobs but not create one
out=$(TOKEN=$K8S_READER_TOKEN_FILE api GET "/apis/batch/v1/namespaces/$NS/jobs")
check_contains "the reader lists Jobs" "$out" "HTTP 200"
out=$(TOKEN=$K8S_READER_TOKEN_FILE api POST "/apis/batch/v1/namespaces/$NS/jobs" \
	'{"apiVersion":"batch/v1","kind":"Job","metadata":{"name":"nope"},"spec":{"template":{"spec":{"restartPolicy":"Never","containers":[{"name":"job","image":"x"}]}}}}')
check_contains "the reader may not create a Job: 403" "$out" "HTTP 403"
check_contains "with the cause" "$out" 'cannot create resource \"jobs\" in API group \"batch\"'
out=$(api POST "/apis/batch/v1/namespaces/$NS/jobs" \
	'{"apiVersion":"batch/v1","kind":"Job","metadata":{"name":"bad"},"spec":{"template":{"spec":{"restartPolicy":"Always","containers":[{"name":"job","image":"x"}]}}}}')
check_contains "a Job with restartPolicy Always: 422" "$out" "HTTP 422"

# 9. after the API server restarts (a new watch cache), a watch from a
#    resourceVersion older than its first LIST is answered 410 Expired
# (the API server pretty-prints for curl: JSON read whole, the status
# line dropped)
rv_now() { api GET "/apis/batch/v1/namespaces/$NS/jobs?limit=1" | sed '$d' | json 'd["metadata"]["resourceVersion"]'; }
rv=$(rv_now)
check_match "a LIST gives its resourceVersion" "$rv" '^[0-9][0-9]*$'
job after-rv 1 # (one more change after rv)
if k8s_restart; then
	pass "the cluster restarts"
else
	fail "the cluster restarts" "$(cat "$T/restart.log")"
fi
expired() {
	OUT=$(api GET "/apis/batch/v1/namespaces/$NS/jobs?watch=1&resourceVersion=$rv&timeoutSeconds=1&allowWatchBookmarks=true" 2>&1)
	case $OUT in *'"code":410'*) return 0 ;; esac
	return 1
}
wait_for 60 expired
check_true "after the restart, a watch from the old resourceVersion is answered 410" expired
check_contains "with the reason Expired" "$OUT" '"reason":"Expired"'

finish
