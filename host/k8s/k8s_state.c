/* Kubernetes states to navette's view (see k8s_state.h): the Job's own
 * conditions first (they are final), then the index's sets, then what
 * the pod of that index says (the newest live one, else the newest), then
 * the Job controller's FailedCreate events when there is no pod. Messages
 * from the server are matched on a prefix or a substring, never whole:
 * kubelets and schedulers reword their ends between versions. */
#include "k8s/k8s_state.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void say(char *dst, size_t cap, const char *fmt, ...)
#if defined(__GNUC__)
	__attribute__((format(printf, 3, 4)))
#endif
	;

static void say(char *dst, size_t cap, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(dst, cap, fmt, ap);
	va_end(ap);
}

static void set(nv_k8s_view *v, const char *phase, int done, int blocked)
{
	v->phase = phase;
	v->done = done;
	v->blocked = blocked;
}

static const char *text(const char *s)
{
	return s ? s : "";
}

/* The job's pods of that index: the newest live one (Pending, Running),
 * else the newest. */
static int pod_live(const nv_k8s_pod *p)
{
	return !p->deleting && (strcmp(p->phase, "Pending") == 0 ||
				strcmp(p->phase, "Running") == 0);
}

static const nv_k8s_pod *pick_pod(const nv_k8s_job *job, const nv_k8s_pod *pods,
				  size_t n, long index)
{
	const nv_k8s_pod *best = NULL;
	int best_live = 0;

	for (size_t i = 0; pods && i < n; i++) {
		const nv_k8s_pod *p = &pods[i];
		int live = pod_live(p);

		if (p->job_name[0] && strcmp(p->job_name, job->name) != 0)
			continue;
		if (index >= 0 && p->completion_index != index)
			continue;
		if (!best || live > best_live ||
		    (live == best_live &&
		     strcmp(p->created, best->created) > 0)) {
			best = p;
			best_live = live;
		}
	}
	return best;
}

/* navette's container ("job"), else the first. */
static const nv_k8s_container *main_container(const nv_k8s_pod *pod)
{
	for (size_t i = 0; pod && i < pod->ncontainers; i++)
		if (strcmp(pod->containers[i].name, "job") == 0)
			return &pod->containers[i];
	return pod && pod->ncontainers ? &pod->containers[0] : NULL;
}

static int pod_exit_code(const nv_k8s_pod *pod)
{
	const nv_k8s_container *c = main_container(pod);

	return c && c->state == NV_K8S_CONTAINER_TERMINATED ? c->exit_code : -1;
}

/* "... failed with exit code 42 matching FailJob rule ..." -> 42. */
static int exit_code_in(const char *message)
{
	const char *p = message ? strstr(message, "exit code ") : NULL;
	int v = 0, digits = 0;

	if (!p)
		return -1;
	for (p += 10; *p >= '0' && *p <= '9' && digits < 4; p++, digits++)
		v = v * 10 + (*p - '0');
	return digits && digits < 4 && v <= 255 ? v : -1;
}

/* The latest FailedCreate event of this Job. */
static const nv_k8s_event *failed_create(const nv_k8s_job *job,
					 const nv_k8s_event *events, size_t n)
{
	const nv_k8s_event *best = NULL;

	for (size_t i = 0; events && i < n; i++) {
		const nv_k8s_event *e = &events[i];

		if (strcmp(e->reason, "FailedCreate") != 0 ||
		    strcmp(e->object_name, job->name) != 0 ||
		    (e->object_kind[0] && strcmp(e->object_kind, "Job") != 0))
			continue;
		if (!best ||
		    strcmp(e->last_timestamp, best->last_timestamp) >= 0)
			best = e;
	}
	return best;
}

static void job_failed(const nv_k8s_job *job, const nv_k8s_condition *c,
		       const nv_k8s_pod *pod, nv_k8s_view *v)
{
	set(v, "failed", 1, 0);
	v->exit_code = pod_exit_code(pod);
	if (strcmp(c->reason, "DeadlineExceeded") == 0) {
		if (job->active_deadline_seconds > 0)
			say(v->reason, sizeof(v->reason),
			    "time limit %ld s reached",
			    job->active_deadline_seconds);
		else
			say(v->reason, sizeof(v->reason), "time limit reached");
		say(v->hint, sizeof(v->hint),
		    "Kubernetes counts the limit from the Job's start, time "
		    "waiting for a node included: raise time_limit or "
		    "queue_allowance");
	} else if (strcmp(c->reason, "BackoffLimitExceeded") == 0 ||
		   strcmp(c->reason, "FailedIndexes") == 0 ||
		   strcmp(c->reason, "MaxFailedIndexesExceeded") == 0) {
		say(v->reason, sizeof(v->reason),
		    "retries used up (%ld failed attempts; %s)", job->failed,
		    c->reason);
		say(v->hint, sizeof(v->hint),
		    "see why the last attempt failed: `navette logs %s`, "
		    "its exit code, and raise retries.max if it is "
		    "transient",
		    job->navette_job[0] ? job->navette_job : job->name);
	} else if (strcmp(c->reason, "PodFailurePolicy") == 0) {
		int code = exit_code_in(c->message);

		if (code >= 0) {
			v->exit_code = code;
			say(v->reason, sizeof(v->reason),
			    "exit code %d (not a failure it retries)", code);
		} else {
			say(v->reason, sizeof(v->reason),
			    "failed (not a failure it retries): %s",
			    text(c->message));
		}
		say(v->hint, sizeof(v->hint),
		    "see the command's log (`navette logs %s`); only the "
		    "exit codes of retries.on are retried",
		    job->navette_job[0] ? job->navette_job : job->name);
	} else {
		say(v->reason, sizeof(v->reason), "the Job failed (%s): %s",
		    c->reason[0] ? c->reason : "no reason", text(c->message));
		say(v->hint, sizeof(v->hint),
		    "`kubectl describe job %s` shows the Job controller's "
		    "events",
		    job->name);
	}
}

static int image_pull_error(const char *reason)
{
	return strcmp(reason, "ErrImagePull") == 0 ||
	       strcmp(reason, "ImagePullBackOff") == 0 ||
	       strcmp(reason, "InvalidImageName") == 0 ||
	       strcmp(reason, "ErrImageNeverPull") == 0 ||
	       strcmp(reason, "RegistryUnavailable") == 0;
}

static void pod_pending(const nv_k8s_pod *pod, nv_k8s_view *v)
{
	const nv_k8s_condition *sched = NULL;

	for (size_t i = 0; i < pod->nconditions; i++)
		if (strcmp(pod->conditions[i].type, "PodScheduled") == 0)
			sched = &pod->conditions[i];
	if (sched && strcmp(sched->status, "False") == 0 &&
	    strcmp(sched->reason, "Unschedulable") == 0) {
		set(v, "accepted", 0, 1);
		if (pod->gpus > 0)
			say(v->reason, sizeof(v->reason),
			    "unschedulable: %s (asked %ld nvidia.com/gpu)",
			    text(sched->message), pod->gpus);
		else
			say(v->reason, sizeof(v->reason), "unschedulable: %s",
			    text(sched->message));
		if (sched->message && strstr(sched->message, "Insufficient"))
			say(v->hint, sizeof(v->hint),
			    "no node has that much free now: wait for other "
			    "jobs to end, ask for less (gpus, cpus, memory), "
			    "or compare with the nodes' capacity "
			    "(`kubectl describe nodes`)");
		else
			say(v->hint, sizeof(v->hint),
			    "check the nodes' taints and labels against the "
			    "pod's nodeSelector (--node): `kubectl describe "
			    "pod %s`",
			    pod->name);
		return;
	}
	for (size_t i = 0; i < pod->ncontainers; i++) {
		const nv_k8s_container *c = &pod->containers[i];

		if (c->state != NV_K8S_CONTAINER_WAITING)
			continue;
		if (image_pull_error(c->reason)) {
			set(v, "image_ready", 0, 1);
			say(v->reason, sizeof(v->reason),
			    "cannot pull the image (%s): %s", c->reason,
			    text(c->message));
			say(v->hint, sizeof(v->hint),
			    "check that the image's digest is in the registry "
			    "(`navette image push`) and that the namespace's "
			    "imagePullSecrets let the node pull it");
			return;
		}
		if (strcmp(c->reason, "CreateContainerConfigError") == 0 ||
		    strcmp(c->reason, "CreateContainerError") == 0) {
			set(v, "accepted", 0, 1);
			say(v->reason, sizeof(v->reason),
			    "cannot start the container (%s): %s", c->reason,
			    text(c->message));
			say(v->hint, sizeof(v->hint),
			    "a Secret or ConfigMap the pod refers to is "
			    "missing or lacks a key: `kubectl get secret` in "
			    "the namespace (navette writes the job's Secret "
			    "right after the Job)");
			return;
		}
	}
	if (sched && strcmp(sched->status, "True") == 0) {
		set(v, "image_ready", 0, 0);
		say(v->reason, sizeof(v->reason), "starting on %s",
		    pod->node_name[0] ? pod->node_name : "its node");
		return;
	}
	set(v, "accepted", 0, 0);
	say(v->reason, sizeof(v->reason), "waiting for a node");
}

static void pod_view(const nv_k8s_pod *pod, nv_k8s_view *v)
{
	const nv_k8s_condition *dt;
	const nv_k8s_container *c = main_container(pod);

	snprintf(v->pod, sizeof(v->pod), "%s", pod->name);
	snprintf(v->node, sizeof(v->node), "%s", pod->node_name);
	v->exit_code = pod_exit_code(pod);
	if (strcmp(pod->phase, "Succeeded") == 0) {
		set(v, "succeeded", 1, 0);
		if (v->exit_code < 0)
			v->exit_code = 0;
		return;
	}
	if (strcmp(pod->phase, "Failed") == 0) {
		dt = nv_k8s_condition_true(pod->conditions, pod->nconditions,
					   "DisruptionTarget");
		if (dt) {
			set(v, "accepted", 0, 0);
			v->preempted = 1;
			say(v->reason, sizeof(v->reason),
			    "preempted (%s: %s), runs again, no retry used",
			    dt->reason[0] ? dt->reason : "disrupted",
			    text(dt->message));
			return;
		}
		set(v, "running", 0, 0);
		if (v->exit_code >= 0)
			say(v->reason, sizeof(v->reason),
			    "the attempt ended with exit code %d; Kubernetes "
			    "decides whether it runs again",
			    v->exit_code);
		else
			say(v->reason, sizeof(v->reason),
			    "the attempt failed (%s); Kubernetes decides "
			    "whether it runs again",
			    pod->reason[0] ? pod->reason : "no reason given");
		return;
	}
	if (strcmp(pod->phase, "Running") == 0) {
		set(v, "running", 0, 0);
		if (c && c->restart_count > 0)
			say(v->reason, sizeof(v->reason),
			    "running on %s (restarts: %ld)",
			    pod->node_name[0] ? pod->node_name : "its node",
			    c->restart_count);
		else
			say(v->reason, sizeof(v->reason), "running on %s",
			    pod->node_name[0] ? pod->node_name : "its node");
		return;
	}
	pod_pending(pod, v);
}

void nv_k8s_view_of(const nv_k8s_job *job, const nv_k8s_pod *pods, size_t npods,
		    const nv_k8s_event *events, size_t nevents, long index,
		    nv_k8s_view *out)
{
	const nv_k8s_condition *fail, *ok;
	const nv_k8s_pod *pod;
	const nv_k8s_event *ev;
	int per_index = job->indexed && index >= 0;

	memset(out, 0, sizeof(*out));
	out->exit_code = -1;
	if (!per_index)
		index = -1;
	pod = pick_pod(job, pods, npods, index);
	if (pod) {
		snprintf(out->pod, sizeof(out->pod), "%s", pod->name);
		snprintf(out->node, sizeof(out->node), "%s", pod->node_name);
		out->pod_live = pod_live(pod);
	}

	/* an index's own outcome is final before the Job's */
	if (per_index && nv_k8s_index_in(job->completed_indexes, index)) {
		set(out, "succeeded", 1, 0);
		out->exit_code = 0;
		return;
	}
	if (per_index && nv_k8s_index_in(job->failed_indexes, index)) {
		set(out, "failed", 1, 0);
		out->exit_code = pod_exit_code(pod);
		say(out->reason, sizeof(out->reason),
		    "retries used up (task %ld)", index);
		say(out->hint, sizeof(out->hint),
		    "see why its last attempt failed: `navette logs`, its "
		    "exit code, and raise retries.max if it is transient");
		return;
	}

	/* 1.31 delays Failed/Complete until the pods are gone: the interim
	 * FailureTarget/SuccessCriteriaMet already decide */
	fail = nv_k8s_condition_true(job->conditions, job->nconditions,
				     "Failed");
	if (!fail)
		fail = nv_k8s_condition_true(job->conditions, job->nconditions,
					     "FailureTarget");
	if (fail) {
		job_failed(job, fail, pod, out);
		return;
	}
	ok = nv_k8s_condition_true(job->conditions, job->nconditions,
				   "Complete");
	if (!ok)
		ok = nv_k8s_condition_true(job->conditions, job->nconditions,
					   "SuccessCriteriaMet");
	if (ok) {
		if (per_index) { /* a success policy ended it first */
			set(out, "failed", 1, 0);
			say(out->reason, sizeof(out->reason),
			    "stopped before it succeeded: the Job met its "
			    "success criteria (%s)",
			    ok->reason[0] ? ok->reason : "Complete");
			return;
		}
		set(out, "succeeded", 1, 0);
		out->exit_code = 0;
		return;
	}

	if (job->suspend ||
	    nv_k8s_condition_true(job->conditions, job->nconditions,
				  "Suspended")) {
		set(out, "queued", 0, 0);
		if (job->after) {
			say(out->reason, sizeof(out->reason), "waits for %s",
			    job->after);
			say(out->hint, sizeof(out->hint),
			    "it starts at navette's next look once those "
			    "succeeded: `navette watch` or `run --wait` "
			    "release it");
		} else {
			say(out->reason, sizeof(out->reason),
			    "suspended (not started yet)");
			say(out->hint, sizeof(out->hint),
			    "navette resumes a Job it submitted at its next "
			    "look; `kubectl get job %s -o yaml` shows who "
			    "suspended it",
			    job->name);
		}
		return;
	}

	if (pod) {
		pod_view(pod, out);
		return;
	}
	ev = failed_create(job, events, nevents);
	if (ev) {
		const char *q = ev->message
					? strstr(ev->message, "exceeded quota")
					: NULL;

		set(out, "accepted", 0, 1);
		if (q) {
			say(out->reason, sizeof(out->reason), "%s", q);
			say(out->hint, sizeof(out->hint),
			    "the namespace's ResourceQuota is full: wait for "
			    "other jobs to end, ask for less, or ask the "
			    "team's admin to raise its quota");
		} else {
			say(out->reason, sizeof(out->reason),
			    "Kubernetes cannot create the pod: %s",
			    text(ev->message));
			say(out->hint, sizeof(out->hint),
			    "`kubectl describe job %s` shows the Job "
			    "controller's events",
			    job->name);
		}
		return;
	}
	set(out, "accepted", 0, 0);
	say(out->reason, sizeof(out->reason),
	    "waiting for the Job controller to create its pod");
}
