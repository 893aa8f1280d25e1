/* Unit tests of host/k8s/k8s_state.c: each Job and Pod answer of
 * tests/data/k8s/responses (a v1.31 API server's) mapped to its row of
 * the issue 31 design's table (3.4): phase, done, blocked, preempted,
 * exit code, and a reason and hint that say what happened and what to
 * check. A few rows need a state no recorded file holds (an Indexed Job's
 * sets, a FailedCreate event, a Running pod): those start from a parsed
 * file and change one field, said where it is done. */
#include "k8s/k8s_state.h"
#include "core/fsutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nv_test.h"
#include "test_data.h"

static void job_file(const char *name, nv_k8s_job *job)
{
	size_t len;
	char *body = load(name, &len);
	nv_err err;

	if (nv_k8s_parse_job(body, len, job, &err) != 0)
		fprintf(stderr, "%s: %s\n", name, err.message);
	free(body);
}

static void pod_file(const char *name, nv_k8s_pod *pod)
{
	size_t len;
	char *body = load(name, &len);
	nv_err err;

	if (nv_k8s_parse_pod(body, len, pod, &err) != 0)
		fprintf(stderr, "%s: %s\n", name, err.message);
	free(body);
}

static int contains(const char *hay, const char *needle)
{
	if (hay && strstr(hay, needle))
		return 1;
	fprintf(stderr, "  '%s' lacks '%s'\n", hay ? hay : "(null)", needle);
	return 0;
}

/* One row of the table. */
#define ROW(v, ph, dn, bl, code)                                               \
	do {                                                                   \
		CHECK_STR((v).phase, ph);                                      \
		CHECK((v).done == (dn));                                       \
		CHECK((v).blocked == (bl));                                    \
		CHECK((v).exit_code == (code));                                \
	} while (0)

/* the Job of the pod files (train-1's pods; the failed ones are
 * train-4's) */
static void as_pod_of(nv_k8s_pod *pod, const char *job)
{
	snprintf(pod->job_name, sizeof(pod->job_name), "%s", job);
}

static void test_waiting_rows(void)
{
	nv_k8s_job job;
	nv_k8s_pod pod;
	nv_k8s_view v;

	job_file("job-running.json", &job);

	/* no pod yet, no event */
	nv_k8s_view_of(&job, NULL, 0, NULL, 0, -1, &v);
	ROW(v, "accepted", 0, 0, -1);
	CHECK(contains(v.reason, "create its pod"));

	/* Unschedulable: the scheduler's message and what was asked */
	pod_file("pod-unschedulable-gpu.json", &pod);
	nv_k8s_view_of(&job, &pod, 1, NULL, 0, -1, &v);
	ROW(v, "accepted", 0, 1, -1);
	CHECK(contains(v.reason, "unschedulable: 0/2 nodes are available: 2 "
				 "Insufficient nvidia.com/gpu."));
	CHECK(contains(v.reason, "(asked 1 nvidia.com/gpu)"));
	CHECK(contains(v.hint, "kubectl describe nodes"));
	CHECK_STR(v.pod, "train-1-x7k2p");
	CHECK(v.pod_live); /* Pending */
	nv_k8s_pod_free(&pod);

	/* image pulls: image_ready, blocked */
	pod_file("pod-errimagepull.json", &pod);
	nv_k8s_view_of(&job, &pod, 1, NULL, 0, -1, &v);
	ROW(v, "image_ready", 0, 1, -1);
	CHECK(contains(v.reason, "cannot pull the image (ErrImagePull): rpc "
				 "error: code = NotFound"));
	CHECK(contains(v.hint, "digest") &&
	      contains(v.hint, "imagePullSecrets"));
	CHECK_STR(v.node, "gpu-a");
	nv_k8s_pod_free(&pod);
	pod_file("pod-imagepullbackoff.json", &pod);
	nv_k8s_view_of(&job, &pod, 1, NULL, 0, -1, &v);
	ROW(v, "image_ready", 0, 1, -1);
	CHECK(contains(v.reason, "(ImagePullBackOff): Back-off pulling image"));
	nv_k8s_pod_free(&pod);

	/* a missing Secret: accepted (configuration), blocked */
	pod_file("pod-createcontainerconfigerror.json", &pod);
	nv_k8s_view_of(&job, &pod, 1, NULL, 0, -1, &v);
	ROW(v, "accepted", 0, 1, -1);
	CHECK(contains(v.reason, "(CreateContainerConfigError): secret "
				 "\"hf-token\" not found"));
	CHECK(contains(v.hint, "Secret"));

	/* the same pod once its container runs (changed here: no recorded
	 * Running pod) */
	snprintf(pod.phase, sizeof(pod.phase), "Running");
	pod.containers[0].state = NV_K8S_CONTAINER_RUNNING;
	nv_k8s_view_of(&job, &pod, 1, NULL, 0, -1, &v);
	ROW(v, "running", 0, 0, -1);
	CHECK(contains(v.reason, "running on gpu-a"));
	nv_k8s_pod_free(&pod);
	nv_k8s_job_free(&job);
}

static void test_quota_event(void)
{
	/* the Job controller's FailedCreate event (composed in its shape:
	 * no recorded vector holds one) */
	static const char events[] =
		"{\"kind\":\"EventList\",\"metadata\":{},\"items\":["
		"{\"reason\":\"FailedCreate\",\"type\":\"Warning\","
		"\"message\":\"Error creating: pods \\\"train-1-y\\\" is "
		"forbidden: exceeded quota: navette-team, requested: "
		"requests.nvidia.com/gpu=16, used: requests.nvidia.com/gpu=0, "
		"limited: requests.nvidia.com/gpu=8\",\"lastTimestamp\":"
		"\"2024-09-10T12:01:00Z\",\"involvedObject\":{\"kind\":\"Job\","
		"\"name\":\"train-1\"}},"
		"{\"reason\":\"FailedCreate\",\"message\":\"Error creating: "
		"other\",\"involvedObject\":{\"kind\":\"Job\",\"name\":"
		"\"train-9\"}}]}";
	nv_k8s_event_list el;
	nv_k8s_job job;
	nv_k8s_pod pod;
	nv_k8s_view v;
	nv_err err;

	job_file("job-running.json", &job);
	CHECK(nv_k8s_parse_event_list(events, sizeof(events) - 1,
				      "FailedCreate", &el, &err) == 0);
	nv_k8s_view_of(&job, NULL, 0, el.items, el.nitems, -1, &v);
	ROW(v, "accepted", 0, 1, -1);
	CHECK_STR(v.reason, "exceeded quota: navette-team, requested: "
			    "requests.nvidia.com/gpu=16, used: "
			    "requests.nvidia.com/gpu=0, limited: "
			    "requests.nvidia.com/gpu=8");
	CHECK(contains(v.hint, "quota"));
	/* another Job's event is not this one's */
	nv_k8s_view_of(&job, NULL, 0, el.items + 1, 1, -1, &v);
	ROW(v, "accepted", 0, 0, -1);
	/* once a pod exists, the pod says */
	pod_file("pod-unschedulable-gpu.json", &pod);
	nv_k8s_view_of(&job, &pod, 1, el.items, el.nitems, -1, &v);
	CHECK(contains(v.reason, "unschedulable"));
	nv_k8s_pod_free(&pod);
	nv_k8s_event_list_free(&el);
	nv_k8s_job_free(&job);
}

static void test_ended_rows(void)
{
	nv_k8s_job job;
	nv_k8s_pod pods[2];
	nv_k8s_view v;

	/* succeeded */
	job_file("job-complete.json", &job);
	nv_k8s_view_of(&job, NULL, 0, NULL, 0, -1, &v);
	ROW(v, "succeeded", 1, 0, 0);
	/* a Complete with an empty reason (before 1.31) alone */
	job.conditions[0].type[0] = '\0';
	job.conditions[1].reason[0] = '\0';
	nv_k8s_view_of(&job, NULL, 0, NULL, 0, -1, &v);
	ROW(v, "succeeded", 1, 0, 0);
	nv_k8s_job_free(&job);
	/* the interim SuccessCriteriaMet alone decides */
	job_file("job-successpolicy-interim.json", &job);
	nv_k8s_view_of(&job, NULL, 0, NULL, 0, -1, &v);
	ROW(v, "succeeded", 1, 0, 0);
	nv_k8s_view_of(&job, NULL, 0, NULL, 0, 0, &v); /* completedIndexes */
	ROW(v, "succeeded", 1, 0, 0);
	nv_k8s_view_of(&job, NULL, 0, NULL, 0, 1, &v);
	ROW(v, "failed", 1, 0, -1);
	CHECK(contains(v.reason, "success criteria (SuccessPolicy)"));
	nv_k8s_job_free(&job);

	/* time limit */
	job_file("job-failed-deadline.json", &job);
	nv_k8s_view_of(&job, NULL, 0, NULL, 0, -1, &v);
	ROW(v, "failed", 1, 0, -1);
	CHECK_STR(v.reason, "time limit 3600 s reached");
	CHECK(contains(v.hint, "time_limit"));
	/* only the interim FailureTarget (1.31 waits for the pods) */
	job.conditions[1].type[0] = '\0';
	nv_k8s_view_of(&job, NULL, 0, NULL, 0, -1, &v);
	ROW(v, "failed", 1, 0, -1);
	CHECK_STR(v.reason, "time limit 3600 s reached");
	nv_k8s_job_free(&job);

	/* retries used up, with the last attempt's exit code */
	job_file("job-failed-backofflimit.json", &job);
	pod_file("pod-failed-exit42.json", &pods[0]);
	as_pod_of(&pods[0], "train-2");
	nv_k8s_view_of(&job, pods, 1, NULL, 0, -1, &v);
	ROW(v, "failed", 1, 0, 42);
	CHECK(contains(v.reason, "retries used up (3 failed attempts; "
				 "BackoffLimitExceeded)"));
	CHECK(contains(v.hint, "retries.max"));
	/* a pod of another Job is not read */
	as_pod_of(&pods[0], "train-4");
	nv_k8s_view_of(&job, pods, 1, NULL, 0, -1, &v);
	ROW(v, "failed", 1, 0, -1);
	/* FailedIndexes says the same */
	snprintf(job.conditions[1].reason, sizeof(job.conditions[1].reason),
		 "FailedIndexes");
	snprintf(job.conditions[0].reason, sizeof(job.conditions[0].reason),
		 "FailedIndexes");
	nv_k8s_view_of(&job, NULL, 0, NULL, 0, -1, &v);
	CHECK(contains(v.reason, "retries used up"));
	nv_k8s_job_free(&job);

	/* the pod failure policy's FailJob: the exit code from the
	 * condition's message, even with no pod left */
	job_file("job-failed-podfailurepolicy.json", &job);
	nv_k8s_view_of(&job, NULL, 0, NULL, 0, -1, &v);
	ROW(v, "failed", 1, 0, 42);
	CHECK_STR(v.reason, "exit code 42 (not a failure it retries)");
	nv_k8s_view_of(&job, pods, 1, NULL, 0, -1, &v);
	ROW(v, "failed", 1, 0, 42);
	CHECK_STR(v.pod, "train-4-8ckj8");
	CHECK(!v.pod_live); /* Failed: a new one may follow */
	/* a code that is not one (Windows nodes' codes are larger): the
	 * message is shown, the code not guessed; the pod's is kept */
	free(job.conditions[1].message);
	job.conditions[0].type[0] = '\0';
	job.conditions[1].message =
		strdup("Container main for pod default/x "
		       "failed with exit code 1234 matching "
		       "FailJob rule at index 0");
	nv_k8s_view_of(&job, NULL, 0, NULL, 0, -1, &v);
	ROW(v, "failed", 1, 0, -1);
	CHECK(contains(v.reason, "(not a failure it retries): Container main"));

	/* before the Job fails: the failed attempt is not the end */
	nv_k8s_job_free(&job);
	job_file("job-running.json", &job);
	as_pod_of(&pods[0], "train-1");
	nv_k8s_view_of(&job, pods, 1, NULL, 0, -1, &v);
	ROW(v, "running", 0, 0, 42);
	CHECK(contains(v.reason, "exit code 42"));

	/* preempted: runs again, no retry used */
	pod_file("pod-failed-disrupted.json", &pods[1]);
	as_pod_of(&pods[1], "train-1");
	nv_k8s_view_of(&job, pods + 1, 1, NULL, 0, -1, &v);
	ROW(v, "accepted", 0, 0, 137);
	CHECK(v.preempted == 1);
	CHECK_STR(v.reason, "preempted (EvictionByEvictionAPI: Eviction API: "
			    "evicting), runs again, no retry used");
	CHECK(pods[0].ncontainers == 1 && pods[1].ncontainers == 1);
	nv_k8s_pod_free(&pods[0]);

	/* the new pod made after a preemption is the one read */
	pod_file("pod-unschedulable-gpu.json", &pods[0]);
	nv_k8s_view_of(&job, pods, 2, NULL, 0, -1, &v);
	ROW(v, "accepted", 0, 1, -1);
	CHECK(v.preempted == 0);
	CHECK_STR(v.pod, "train-1-x7k2p");
	{ /* whatever the order of the list (shallow copies, not freed) */
		nv_k8s_pod swapped[2] = {pods[1], pods[0]};

		nv_k8s_view_of(&job, swapped, 2, NULL, 0, -1, &v);
		CHECK(v.preempted == 0 && v.blocked == 1);
		CHECK_STR(v.pod, "train-1-x7k2p");
	}
	nv_k8s_pod_free(&pods[0]);
	nv_k8s_pod_free(&pods[1]);
	nv_k8s_job_free(&job);
}

static void test_suspended(void)
{
	nv_k8s_job job;
	nv_k8s_view v;

	job_file("job-suspended.json", &job);
	nv_k8s_view_of(&job, NULL, 0, NULL, 0, -1, &v);
	ROW(v, "queued", 0, 0, -1);
	CHECK(contains(v.reason, "suspended"));
	CHECK(v.hint[0] != '\0');
	/* just created suspended (navette's submit sequence): no condition
	 * yet, spec.suspend alone says it */
	snprintf(job.conditions[0].status, sizeof(job.conditions[0].status),
		 "Unknown");
	nv_k8s_view_of(&job, NULL, 0, NULL, 0, -1, &v);
	ROW(v, "queued", 0, 0, -1);
	snprintf(job.conditions[0].status, sizeof(job.conditions[0].status),
		 "True");
	/* an `after` job (its annotation set here) */
	job.after = strdup("nv-20261206-1");
	nv_k8s_view_of(&job, NULL, 0, NULL, 0, -1, &v);
	ROW(v, "queued", 0, 0, -1);
	CHECK_STR(v.reason, "waits for nv-20261206-1");
	/* resumed: the Suspended condition turns False */
	job.suspend = 0;
	snprintf(job.conditions[0].status, sizeof(job.conditions[0].status),
		 "False");
	nv_k8s_view_of(&job, NULL, 0, NULL, 0, -1, &v);
	ROW(v, "accepted", 0, 0, -1);
	nv_k8s_job_free(&job);
}

/* A sweep: one Indexed Job, a task per completion index (the sets and
 * the pods' indexes are set here: no recorded Indexed Job has them). */
static void test_indexes(void)
{
	nv_k8s_job job;
	nv_k8s_pod pods[2];
	nv_k8s_view v;

	job_file("job-running.json", &job);
	job.indexed = 1;
	job.completed_indexes = strdup("0,3-4");
	job.failed_indexes = strdup("2");
	pod_file("pod-unschedulable-gpu.json", &pods[0]);
	pods[0].completion_index = 1;
	pod_file("pod-failed-exit42.json", &pods[1]);
	as_pod_of(&pods[1], "train-1");
	pods[1].completion_index = 2;

	nv_k8s_view_of(&job, pods, 2, NULL, 0, 0, &v);
	ROW(v, "succeeded", 1, 0, 0);
	nv_k8s_view_of(&job, pods, 2, NULL, 0, 4, &v);
	ROW(v, "succeeded", 1, 0, 0);
	nv_k8s_view_of(&job, pods, 2, NULL, 0, 1, &v);
	ROW(v, "accepted", 0, 1, -1);
	CHECK(contains(v.reason, "unschedulable"));
	nv_k8s_view_of(&job, pods, 2, NULL, 0, 2, &v);
	ROW(v, "failed", 1, 0, 42);
	CHECK_STR(v.reason, "retries used up (task 2)");
	/* index 5: its pod is not made yet; the others' pods are not it */
	nv_k8s_view_of(&job, pods, 2, NULL, 0, 5, &v);
	ROW(v, "accepted", 0, 0, -1);
	CHECK(v.pod[0] == '\0');
	nv_k8s_pod_free(&pods[0]);
	nv_k8s_pod_free(&pods[1]);
	nv_k8s_job_free(&job);

	/* an index that succeeded stays so when the Job fails later */
	job_file("job-failed-deadline.json", &job);
	job.indexed = 1;
	job.completed_indexes = strdup("0");
	nv_k8s_view_of(&job, NULL, 0, NULL, 0, 0, &v);
	ROW(v, "succeeded", 1, 0, 0);
	nv_k8s_view_of(&job, NULL, 0, NULL, 0, 1, &v);
	ROW(v, "failed", 1, 0, -1);
	CHECK_STR(v.reason, "time limit 3600 s reached");
	nv_k8s_job_free(&job);
}

int main(void)
{
	find_data_dir_of("k8s/responses");
	test_waiting_rows();
	test_quota_event();
	test_ended_rows();
	test_suspended();
	test_indexes();
	return nv_test_done();
}
