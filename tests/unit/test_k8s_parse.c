/* Unit tests of host/k8s/k8s_parse.c with no server: every answer of a
 * v1.31 API server kept in tests/data/k8s/responses (Jobs, Pods, Status
 * bodies, watch streams) read into navette's structs; lists built from
 * them; a watch stream fed cut at every byte and every two-chunk split
 * giving the same events; the 410 ERROR event; and the refusals: a line
 * over NV_K8S_EVENT_MAX, malformed JSON, too many items or conditions, a
 * name too long, an object of another kind. */
#include "k8s/k8s_parse.h"
#include "core/buf.h"
#include "core/fsutil.h"

#include <dirent.h>
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nv_test.h"
#include "test_data.h"

/* a literal and its length */
#define LIT(s) s, sizeof(s) - 1

static int contains(const char *hay, const char *needle)
{
	return hay && strstr(hay, needle) != NULL;
}

static const char *cond_type(const nv_k8s_condition *c, size_t n, size_t i)
{
	return i < n ? c[i].type : "(none)";
}

/* ---- Jobs ---------------------------------------------------------------- */

static void test_jobs(void)
{
	nv_k8s_job job;
	nv_err err;
	size_t len;
	char *body;

	body = load("job-running.json", &len);
	CHECK(nv_k8s_parse_job(body, len, &job, &err) == 0);
	CHECK_STR(job.name, "train-1");
	CHECK_STR(job.uid, "4dc6ef71-c2eb-44af-9b73-bb77ab6463db");
	CHECK_STR(job.resource_version, "27446");
	CHECK(job.active == 1 && job.ready == 1 && job.succeeded == 0 &&
	      job.failed == 0 && job.terminating == 0);
	CHECK(job.completions == 1 && job.parallelism == 1 &&
	      job.backoff_limit == 6 && job.backoff_limit_per_index == -1);
	CHECK(!job.suspend && !job.indexed && job.nconditions == 0);
	CHECK(job.active_deadline_seconds == -1);
	CHECK_STR(job.start_time, "2024-09-10T12:00:00Z");
	CHECK(job.completion_time[0] == '\0');
	CHECK(job.tasks == NULL && job.navette_job[0] == '\0');
	nv_k8s_job_free(&job);
	nv_k8s_job_free(&job); /* twice is harmless */
	free(body);

	body = load("job-complete.json", &len);
	CHECK(nv_k8s_parse_job(body, len, &job, &err) == 0);
	CHECK(job.nconditions == 2);
	CHECK_STR(cond_type(job.conditions, job.nconditions, 0),
		  "SuccessCriteriaMet");
	CHECK_STR(cond_type(job.conditions, job.nconditions, 1), "Complete");
	CHECK(job.nconditions == 2 &&
	      strcmp(job.conditions[1].reason, "CompletionsReached") == 0);
	CHECK(job.nconditions == 2 &&
	      contains(job.conditions[1].message, "Reached expected number"));
	CHECK(nv_k8s_condition_true(job.conditions, job.nconditions,
				    "Complete") != NULL);
	CHECK(nv_k8s_condition_true(job.conditions, job.nconditions,
				    "Failed") == NULL);
	CHECK(job.succeeded == 1);
	CHECK_STR(job.completion_time, "2024-09-10T12:20:06Z");
	nv_k8s_job_free(&job);
	free(body);

	body = load("job-failed-deadline.json", &len);
	CHECK(nv_k8s_parse_job(body, len, &job, &err) == 0);
	CHECK(job.active_deadline_seconds == 3600 && job.failed == 1);
	CHECK(job.nconditions == 2 &&
	      strcmp(job.conditions[1].reason, "DeadlineExceeded") == 0);
	nv_k8s_job_free(&job);
	free(body);

	body = load("job-failed-podfailurepolicy.json", &len);
	CHECK(nv_k8s_parse_job(body, len, &job, &err) == 0);
	CHECK(job.nconditions == 2 &&
	      strcmp(job.conditions[0].message,
		     "Container main for pod default/train-4-8ckj8 failed "
		     "with exit code 42 matching FailJob rule at index 0") ==
		      0);
	nv_k8s_job_free(&job);
	free(body);

	body = load("job-suspended.json", &len);
	CHECK(nv_k8s_parse_job(body, len, &job, &err) == 0);
	CHECK(job.suspend == 1);
	CHECK(nv_k8s_condition_true(job.conditions, job.nconditions,
				    "Suspended") != NULL);
	nv_k8s_job_free(&job);
	free(body);

	body = load("job-successpolicy-interim.json", &len);
	CHECK(nv_k8s_parse_job(body, len, &job, &err) == 0);
	CHECK(job.indexed == 1 && job.terminating == 3 && job.succeeded == 1);
	CHECK_STR(job.completed_indexes, "0");
	CHECK(job.failed_indexes == NULL);
	nv_k8s_job_free(&job);
	free(body);
}

/* ---- Pods ---------------------------------------------------------------- */

static void test_pods(void)
{
	nv_k8s_pod pod;
	nv_err err;
	size_t len;
	char *body;

	body = load("pod-unschedulable-gpu.json", &len);
	CHECK(nv_k8s_parse_pod(body, len, &pod, &err) == 0);
	CHECK_STR(pod.name, "train-1-x7k2p");
	CHECK_STR(pod.job_name, "train-1");
	CHECK_STR(pod.phase, "Pending");
	CHECK(pod.node_name[0] == '\0' && pod.gpus == 1);
	CHECK(pod.completion_index == -1 && pod.ncontainers == 0);
	CHECK(pod.nconditions == 1 &&
	      strcmp(pod.conditions[0].reason, "Unschedulable") == 0 &&
	      strcmp(pod.conditions[0].status, "False") == 0 &&
	      contains(pod.conditions[0].message,
		       "0/2 nodes are available: 2 Insufficient "
		       "nvidia.com/gpu."));
	nv_k8s_pod_free(&pod);
	free(body);

	body = load("pod-errimagepull.json", &len);
	CHECK(nv_k8s_parse_pod(body, len, &pod, &err) == 0);
	CHECK(pod.ncontainers == 1 &&
	      pod.containers[0].state == NV_K8S_CONTAINER_WAITING &&
	      strcmp(pod.containers[0].reason, "ErrImagePull") == 0 &&
	      contains(pod.containers[0].message, "code = NotFound") &&
	      pod.containers[0].exit_code == -1);
	CHECK_STR(pod.node_name, "gpu-a");
	nv_k8s_pod_free(&pod);
	free(body);

	body = load("pod-createcontainerconfigerror.json", &len);
	CHECK(nv_k8s_parse_pod(body, len, &pod, &err) == 0);
	CHECK(pod.ncontainers == 1 &&
	      strcmp(pod.containers[0].reason, "CreateContainerConfigError") ==
		      0 &&
	      strcmp(pod.containers[0].message,
		     "secret \"hf-token\" not found") == 0);
	nv_k8s_pod_free(&pod);
	free(body);

	body = load("pod-failed-exit42.json", &len);
	CHECK(nv_k8s_parse_pod(body, len, &pod, &err) == 0);
	CHECK_STR(pod.phase, "Failed");
	CHECK(pod.ncontainers == 1 &&
	      pod.containers[0].state == NV_K8S_CONTAINER_TERMINATED &&
	      pod.containers[0].exit_code == 42 &&
	      strcmp(pod.containers[0].reason, "Error") == 0 &&
	      pod.containers[0].restart_count == 0);
	CHECK(nv_k8s_condition_true(pod.conditions, pod.nconditions,
				    "DisruptionTarget") == NULL);
	nv_k8s_pod_free(&pod);
	free(body);

	body = load("pod-failed-disrupted.json", &len);
	CHECK(nv_k8s_parse_pod(body, len, &pod, &err) == 0);
	CHECK(pod.ncontainers == 1 && pod.containers[0].exit_code == 137);
	{
		const nv_k8s_condition *dt = nv_k8s_condition_true(
			pod.conditions, pod.nconditions, "DisruptionTarget");
		CHECK(dt && strcmp(dt->reason, "EvictionByEvictionAPI") == 0 &&
		      strcmp(dt->message, "Eviction API: evicting") == 0);
	}
	nv_k8s_pod_free(&pod);
	free(body);

	/* the completion index of an Indexed Job's pod, and its label */
	{
		static const char indexed[] =
			"{\"kind\":\"Pod\",\"metadata\":{\"name\":\"t-3-ab\","
			"\"labels\":{\"batch.kubernetes.io/job-name\":\"t\"},"
			"\"annotations\":{\"batch.kubernetes.io/"
			"job-completion-index\":\"3\"}},"
			"\"status\":{\"phase\":\"Running\"}}";
		static const char bad_index[] =
			"{\"kind\":\"Pod\",\"metadata\":{\"name\":\"t-3-ab\","
			"\"annotations\":{\"batch.kubernetes.io/"
			"job-completion-index\":\"03x\"}}}";

		CHECK(nv_k8s_parse_pod(indexed, strlen(indexed), &pod, &err) ==
		      0);
		CHECK(pod.completion_index == 3);
		CHECK_STR(pod.job_name, "t");
		nv_k8s_pod_free(&pod);
		CHECK(nv_k8s_parse_pod(bad_index, strlen(bad_index), &pod,
				       &err) == 0);
		CHECK(pod.completion_index == -1);
		nv_k8s_pod_free(&pod);
	}
}

/* ---- Status bodies ------------------------------------------------------- */

static void test_status(void)
{
	static const struct {
		const char *file;
		int code;
		const char *reason, *message;
	} cases[] = {
		{"status-401-unauthorized.json", 401, "Unauthorized",
		 "Unauthorized"},
		{"status-403-create-job.json", 403, "Forbidden",
		 "jobs.batch is forbidden: User "
		 "\"system:serviceaccount:default:job-robot\" cannot create "
		 "resource \"jobs\" in API group \"batch\" in the namespace "
		 "\"default\""},
		{"status-404-job-not-found.json", 404, "NotFound",
		 "jobs.batch \"train-1\" not found"},
		{"status-409-job-already-exists.json", 409, "AlreadyExists",
		 "jobs.batch \"train-1\" already exists"},
		{"status-410-expired-list.json", 410, "Expired",
		 "The provided continue parameter is too old to display a "
		 "consistent list result. You can start a new list without "
		 "the continue parameter."},
		{"status-422-invalid-restartpolicy.json", 422, "Invalid",
		 "Job.batch \"train-1\" is invalid: "
		 "spec.template.spec.restartPolicy: Required value: valid "
		 "values: \"OnFailure\", \"Never\""},
	};
	/* the 401 and 403 bodies as the server writes them (ORIGIN.md) */
	static const char wire401[] =
		"{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},"
		"\"status\":\"Failure\",\"message\":\"Unauthorized\","
		"\"reason\":\"Unauthorized\",\"code\":401}\n";
	static const char wire403[] =
		"{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},"
		"\"status\":\"Failure\",\"message\":\"jobs.batch is forbidden: "
		"User \\\"system:serviceaccount:default:job-robot\\\" cannot "
		"create resource \\\"jobs\\\" in API group \\\"batch\\\" in "
		"the "
		"namespace \\\"default\\\"\",\"reason\":\"Forbidden\","
		"\"details\":{\"group\":\"batch\",\"kind\":\"jobs\"},"
		"\"code\":403}\n";
	nv_k8s_status st;
	nv_err err;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		size_t len;
		char *body = load(cases[i].file, &len);

		CHECK(nv_k8s_parse_status(body, len, &st, &err) == 0);
		CHECK(st.code == cases[i].code);
		CHECK_STR(st.status, "Failure");
		CHECK_STR(st.reason, cases[i].reason);
		CHECK_STR(st.message, cases[i].message);
		free(body);
	}
	CHECK(strlen(wire401) == 129); /* its Content-Length */
	CHECK(nv_k8s_parse_status(wire401, strlen(wire401), &st, &err) == 0);
	CHECK(st.code == 401 && strcmp(st.message, "Unauthorized") == 0);
	CHECK(strlen(wire403) == 313);
	CHECK(nv_k8s_parse_status(wire403, strlen(wire403), &st, &err) == 0);
	CHECK(st.code == 403);
	CHECK_STR(st.message, cases[1].message);
	CHECK_STR(st.group, "batch");

	/* details */
	{
		size_t len;
		char *body = load("status-403-create-job.json", &len);

		CHECK(nv_k8s_parse_status(body, len, &st, &err) == 0);
		CHECK_STR(st.group, "batch");
		CHECK_STR(st.kind, "jobs");
		CHECK(st.name[0] == '\0' && st.ncauses == 0);
		free(body);
		body = load("status-422-invalid-restartpolicy.json", &len);
		CHECK(nv_k8s_parse_status(body, len, &st, &err) == 0);
		CHECK_STR(st.name, "train-1");
		CHECK_STR(st.kind, "Job");
		CHECK(st.ncauses == 1 && st.ncauses_total == 1);
		CHECK_STR(st.causes[0].field,
			  "spec.template.spec.restartPolicy");
		CHECK_STR(st.causes[0].reason, "FieldValueRequired");
		free(body);
	}

	/* causes past the cap are counted, not kept */
	{
		nv_buf b;

		nv_buf_init(&b, 1 << 20);
		nv_buf_puts(&b, "{\"kind\":\"Status\",\"code\":422,"
				"\"details\":{\"causes\":[");
		for (int i = 0; i < NV_K8S_CAUSES_MAX + 4; i++)
			nv_buf_printf(&b, "%s{\"field\":\"f%d\"}", i ? "," : "",
				      i);
		nv_buf_puts(&b, "]}}");
		CHECK(nv_k8s_parse_status(b.data, b.len, &st, &err) == 0);
		CHECK(st.ncauses == NV_K8S_CAUSES_MAX &&
		      st.ncauses_total == NV_K8S_CAUSES_MAX + 4);
		CHECK_STR(st.causes[NV_K8S_CAUSES_MAX - 1].field, "f15");
		nv_buf_free(&b);
	}

	/* not a Status */
	CHECK(nv_k8s_parse_status(LIT("<html>502</html>"), &st, &err) ==
	      NV_EBACKEND);
	CHECK(contains(err.message, "not a JSON Status"));
	CHECK(nv_k8s_parse_status(LIT("{\"kind\":\"Job\"}"), &st, &err) ==
	      NV_EBACKEND);
	CHECK(nv_k8s_parse_status(LIT("{}"), &st, &err) == NV_EBACKEND);
	CHECK(contains(err.message, "no code, reason nor message"));
	CHECK(nv_k8s_parse_status(LIT(""), &st, &err) == NV_EBACKEND);
}

/* ---- every file of the vectors is read ------------------------------ */

static void test_every_file(void)
{
	DIR *d = opendir(data_dir);
	struct dirent *e;
	int n = 0, others = 0;

	CHECK(d != NULL);
	while (d && (e = readdir(d))) {
		const char *f = e->d_name;
		char *body;
		size_t len;
		nv_err err;
		int rc = -99;

		if (f[0] == '.' || strcmp(f, "ORIGIN.md") == 0)
			continue;
		body = load(f, &len);
		if (strncmp(f, "job-", 4) == 0) {
			nv_k8s_job job;
			rc = nv_k8s_parse_job(body, len, &job, &err);
			if (rc == 0 && !job.name[0])
				rc = -98;
			nv_k8s_job_free(&job);
		} else if (strncmp(f, "pod-", 4) == 0) {
			nv_k8s_pod pod;
			rc = nv_k8s_parse_pod(body, len, &pod, &err);
			if (rc == 0 && (!pod.phase[0] || !pod.job_name[0]))
				rc = -98;
			nv_k8s_pod_free(&pod);
		} else if (strncmp(f, "status-", 7) == 0) {
			nv_k8s_status st;
			rc = nv_k8s_parse_status(body, len, &st, &err);
			if (rc == 0 && (st.code < 400 || !st.message[0]))
				rc = -98;
		} else if (strncmp(f, "watch-", 6) == 0) {
			nv_k8s_watch w;
			nv_k8s_watch_init(&w, NV_K8S_JOB);
			rc = nv_k8s_watch_feed(&w, body, len, NULL, NULL, &err);
			if (rc == 0)
				rc = nv_k8s_watch_finish(&w, NULL, NULL, &err);
			if (rc == 0 && w.events < 2)
				rc = -98;
			nv_k8s_watch_free(&w);
		} else if (strncmp(f, "exec", 4) == 0) {
			/* ExecCredential plugin I/O: k8s_exec.c's */
			others++;
			rc = 0;
		}
		if (rc != 0)
			fprintf(stderr, "%s: rc %d: %s\n", f, rc,
				rc == -99 ? "no parser" : err.message);
		CHECK(rc == 0);
		free(body);
		n++;
	}
	if (d)
		closedir(d);
	CHECK(n == 24 && others == 3); /* a new vector must be read here */
}

/* ---- lists --------------------------------------------------------------- */

static void test_lists(void)
{
	static const char *const jobs[] = {
		"job-running.json", "job-complete.json",
		"job-failed-backofflimit.json", "job-suspended.json"};
	static const char *const pods[] = {"pod-unschedulable-gpu.json",
					   "pod-failed-exit42.json"};
	nv_k8s_job_list jl;
	nv_k8s_pod_list pl;
	nv_k8s_event_list el;
	nv_err err;
	nv_buf b;

	nv_buf_init(&b, 1 << 22);
	nv_buf_puts(&b, "{\"kind\":\"JobList\",\"apiVersion\":\"batch/v1\","
			"\"metadata\":{\"resourceVersion\":\"33000\","
			"\"continue\":\"eyJ2IjoibWV0YS5rOHMuaW8vdjEifQ\","
			"\"remainingItemCount\":3},\"items\":[");
	for (size_t i = 0; i < 4; i++) {
		size_t len;
		char *body = load(jobs[i], &len);

		if (i)
			nv_buf_puts(&b, ",");
		nv_buf_append(&b, body, len);
		free(body);
	}
	nv_buf_puts(&b, "]}");
	CHECK(nv_k8s_parse_job_list(b.data, b.len, &jl, &err) == 0);
	CHECK(jl.nitems == 4);
	CHECK_STR(jl.meta.resource_version, "33000");
	CHECK_STR(jl.meta.continue_token, "eyJ2IjoibWV0YS5rOHMuaW8vdjEifQ");
	CHECK(jl.nitems == 4 && strcmp(jl.items[2].name, "train-2") == 0 &&
	      jl.items[2].failed == 3 && jl.items[3].suspend == 1);
	nv_k8s_job_list_free(&jl);
	nv_k8s_job_list_free(&jl);

	/* a JobList is not a PodList */
	CHECK(nv_k8s_parse_pod_list(b.data, b.len, &pl, &err) == NV_EBACKEND);
	CHECK(contains(err.message, "a JobList where a PodList"));
	CHECK(pl.items == NULL && pl.nitems == 0);

	b.len = 0;
	nv_buf_puts(&b, "{\"kind\":\"PodList\",\"apiVersion\":\"v1\","
			"\"metadata\":{\"resourceVersion\":\"33001\"},"
			"\"items\":[");
	for (size_t i = 0; i < 2; i++) {
		size_t len;
		char *body = load(pods[i], &len);

		if (i)
			nv_buf_puts(&b, ",");
		nv_buf_append(&b, body, len);
		free(body);
	}
	nv_buf_puts(&b, "]}");
	CHECK(nv_k8s_parse_pod_list(b.data, b.len, &pl, &err) == 0);
	CHECK(pl.nitems == 2 && pl.meta.continue_token[0] == '\0');
	CHECK(pl.nitems == 2 && pl.items[1].containers &&
	      pl.items[1].containers[0].exit_code == 42);
	nv_k8s_pod_list_free(&pl);

	/* an empty list: items null */
	CHECK(nv_k8s_parse_job_list(LIT("{\"kind\":\"JobList\",\"metadata\":{"
					"\"resourceVersion\":\"9\"},\"items\":"
					"null}"),
				    &jl, &err) == 0);
	CHECK(jl.nitems == 0 && strcmp(jl.meta.resource_version, "9") == 0);
	nv_k8s_job_list_free(&jl);

	/* events: only FailedCreate kept; a composed example in the shape
	 * of the Job controller's event (no recorded vector holds one) */
	{
		static const char events[] =
			"{\"kind\":\"EventList\",\"apiVersion\":\"v1\","
			"\"metadata\":{\"resourceVersion\":\"40\"},\"items\":["
			"{\"metadata\":{\"name\":\"a\"},\"type\":\"Normal\","
			"\"reason\":\"SuccessfulCreate\",\"message\":\"Created "
			"pod: t-x\",\"involvedObject\":{\"kind\":\"Job\","
			"\"name\":\"t\"}},"
			"{\"metadata\":{\"name\":\"b\"},\"type\":\"Warning\","
			"\"reason\":\"FailedCreate\",\"message\":\"Error "
			"creating: pods \\\"t-y\\\" is forbidden: exceeded "
			"quota: navette-team, requested: "
			"requests.nvidia.com/gpu=16, used: "
			"requests.nvidia.com/gpu=0, limited: "
			"requests.nvidia.com/gpu=8\",\"count\":4,"
			"\"lastTimestamp\":\"2024-09-10T12:01:00Z\","
			"\"involvedObject\":{\"kind\":\"Job\",\"name\":\"t\","
			"\"namespace\":\"default\"}}]}";

		CHECK(nv_k8s_parse_event_list(events, strlen(events),
					      "FailedCreate", &el, &err) == 0);
		CHECK(el.nitems == 1);
		CHECK(el.nitems == 1 && el.items[0].count == 4 &&
		      strcmp(el.items[0].object_kind, "Job") == 0 &&
		      strcmp(el.items[0].object_name, "t") == 0 &&
		      strcmp(el.items[0].last_timestamp,
			     "2024-09-10T12:01:00Z") == 0 &&
		      contains(el.items[0].message, "exceeded quota: "
						    "navette-team"));
		nv_k8s_event_list_free(&el);
		CHECK(nv_k8s_parse_event_list(events, strlen(events), NULL, &el,
					      &err) == 0);
		CHECK(el.nitems == 2);
		nv_k8s_event_list_free(&el);
	}

	/* more items than NV_K8S_ITEMS_MAX: refused before reading them */
	b.len = 0;
	nv_buf_puts(&b, "{\"kind\":\"JobList\",\"items\":[");
	for (int i = 0; i <= NV_K8S_ITEMS_MAX; i++)
		nv_buf_puts(&b, i ? ",{}" : "{}");
	nv_buf_puts(&b, "]}");
	CHECK(nv_k8s_parse_job_list(b.data, b.len, &jl, &err) == NV_EBACKEND);
	CHECK(contains(err.message, "more than 10000 items"));
	CHECK(jl.items == NULL);

	/* an item without a name refuses the page */
	CHECK(nv_k8s_parse_job_list(LIT("{\"kind\":\"JobList\",\"items\":[{"
					"\"metadata\":{}}]}"),
				    &jl, &err) == NV_EBACKEND);
	CHECK(contains(err.message, "a Job without a name"));

	/* a Status handed in as a list says what it is */
	{
		size_t len;
		char *body = load("status-410-expired-list.json", &len);

		CHECK(nv_k8s_parse_job_list(body, len, &jl, &err) ==
		      NV_EBACKEND);
		CHECK(contains(err.message, "Status instead of a JobList") &&
		      contains(err.message, "continue parameter is too old"));
		free(body);
	}
	nv_buf_free(&b);
}

/* ---- caps and refusals --------------------------------------------- */

static void test_refusals(void)
{
	nv_k8s_job job;
	nv_err err;
	nv_buf b;
	char name[400];

	/* malformed JSON */
	CHECK(nv_k8s_parse_job(LIT("{\"kind\":\"Job\","), &job, &err) ==
	      NV_EBACKEND);
	CHECK(contains(err.message, "not a JSON object"));
	CHECK(err.hint[0] != '\0');
	CHECK(nv_k8s_parse_job(LIT("[1]"), &job, &err) == NV_EBACKEND);
	CHECK(nv_k8s_parse_job(LIT(""), &job, &err) == NV_EBACKEND);
	CHECK(contains(err.message, "empty answer"));
	/* a Pod is not a Job */
	CHECK(nv_k8s_parse_job(LIT("{\"kind\":\"Pod\",\"metadata\":{\"name\":"
				   "\"p\"}}"),
			       &job, &err) == NV_EBACKEND);
	CHECK(contains(err.message, "a Pod where a Job"));

	/* a name over 253 bytes is refused, not cut */
	memset(name, 'a', sizeof(name));
	name[300] = '\0';
	nv_buf_init(&b, 1 << 20);
	nv_buf_printf(&b, "{\"kind\":\"Job\",\"metadata\":{\"name\":\"%s\"}}",
		      name);
	CHECK(nv_k8s_parse_job(b.data, b.len, &job, &err) == NV_EBACKEND);
	CHECK(contains(err.message, "a name is longer than 253 bytes"));
	name[253] = '\0';
	b.len = 0;
	nv_buf_printf(&b, "{\"kind\":\"Job\",\"metadata\":{\"name\":\"%s\"}}",
		      name);
	CHECK(nv_k8s_parse_job(b.data, b.len, &job, &err) == 0);
	CHECK(strlen(job.name) == 253);
	nv_k8s_job_free(&job);

	/* a control character in a name is refused; in a message, cleaned */
	CHECK(nv_k8s_parse_job(LIT("{\"metadata\":{\"name\":\"a\\u0001\"}}"),
			       &job, &err) == NV_EBACKEND);
	CHECK(contains(err.message, "control character"));
	{
		static const char j[] =
			"{\"metadata\":{\"name\":\"a\"},\"status\":{"
			"\"conditions\":[{\"type\":\"Failed\",\"status\":"
			"\"True\",\"message\":\"line\\none\\u001b[31m\"}]}}";
		CHECK(nv_k8s_parse_job(j, strlen(j), &job, &err) == 0);
		CHECK(job.nconditions == 1 &&
		      strcmp(job.conditions[0].message, "line one?[31m") == 0);
		nv_k8s_job_free(&job);
	}

	/* a long message is cut on a UTF-8 boundary */
	b.len = 0;
	nv_buf_puts(&b, "{\"metadata\":{\"name\":\"a\"},\"status\":{"
			"\"conditions\":[{\"type\":\"Failed\",\"message\":\"");
	for (int i = 0; i < NV_K8S_MESSAGE_MAX; i++)
		nv_buf_puts(&b, "\xc3\xa9"); /* é */
	nv_buf_puts(&b, "\"}]}}");
	CHECK(nv_k8s_parse_job(b.data, b.len, &job, &err) == 0);
	CHECK(job.nconditions == 1 &&
	      strlen(job.conditions[0].message) == NV_K8S_MESSAGE_MAX - 2);
	nv_k8s_job_free(&job);

	/* more conditions than NV_K8S_CONDITIONS_MAX */
	b.len = 0;
	nv_buf_puts(&b, "{\"metadata\":{\"name\":\"a\"},\"status\":{"
			"\"conditions\":[");
	for (int i = 0; i <= NV_K8S_CONDITIONS_MAX; i++)
		nv_buf_puts(&b, i ? ",{\"type\":\"X\"}" : "{\"type\":\"X\"}");
	nv_buf_puts(&b, "]}}");
	CHECK(nv_k8s_parse_job(b.data, b.len, &job, &err) == NV_EBACKEND);
	CHECK(contains(err.message, "more than 16 conditions"));
	nv_buf_free(&b);

	/* numbers out of range are left unset */
	{
		static const char j[] =
			"{\"metadata\":{\"name\":\"a\"},\"spec\":{"
			"\"completions\":-4,\"parallelism\":1.5,"
			"\"backoffLimit\":\"6\"},\"status\":{\"failed\":1e300}"
			"}";
		CHECK(nv_k8s_parse_job(j, strlen(j), &job, &err) == 0);
		CHECK(job.completions == -1 && job.parallelism == -1 &&
		      job.backoff_limit == -1 && job.failed == 0);
		nv_k8s_job_free(&job);
	}

	/* navette's labels and annotations */
	{
		static const char j[] =
			"{\"metadata\":{\"name\":\"nv-7\",\"labels\":{"
			"\"navette/job\":\"nv-7\"},\"annotations\":{"
			"\"navette/tasks\":\"nv-7,nv-8,nv-9\","
			"\"navette/after\":\"nv-1\"}},\"spec\":{"
			"\"completionMode\":\"Indexed\"},\"status\":{"
			"\"completedIndexes\":\"0,2\",\"failedIndexes\":"
			"\"1\"}}";
		CHECK(nv_k8s_parse_job(j, strlen(j), &job, &err) == 0);
		CHECK_STR(job.navette_job, "nv-7");
		CHECK_STR(job.tasks, "nv-7,nv-8,nv-9");
		CHECK_STR(job.after, "nv-1");
		CHECK(job.indexed);
		CHECK_STR(job.failed_indexes, "1");
		nv_k8s_job_free(&job);
	}
}

static void test_index_sets(void)
{
	CHECK(nv_k8s_index_in("0-3,5,7-9", 0));
	CHECK(nv_k8s_index_in("0-3,5,7-9", 3));
	CHECK(!nv_k8s_index_in("0-3,5,7-9", 4));
	CHECK(nv_k8s_index_in("0-3,5,7-9", 5));
	CHECK(nv_k8s_index_in("0-3,5,7-9", 9));
	CHECK(!nv_k8s_index_in("0-3,5,7-9", 10));
	CHECK(!nv_k8s_index_in("", 0));
	CHECK(!nv_k8s_index_in(NULL, 0));
	CHECK(!nv_k8s_index_in("0-3", -1));
	CHECK(!nv_k8s_index_in("3-1", 2)); /* malformed holds nothing */
	CHECK(!nv_k8s_index_in("a", 0));
	CHECK(!nv_k8s_index_in("1-", 1));
	CHECK(nv_k8s_index_in("999", 999));
}

/* ---- watch streams ------------------------------------------------------ */

/* Each event, written as one line of text, so two feeds compare. */
static int record(void *ctx, const nv_k8s_watch_event *ev, nv_err *err)
{
	nv_buf *b = ctx;

	(void)err;
	nv_buf_printf(b, "%d %s", ev->type, ev->resource_version);
	if (ev->job) {
		nv_buf_printf(b, " job %s active=%ld succeeded=%ld",
			      ev->job->name, ev->job->active,
			      ev->job->succeeded);
		for (size_t i = 0; i < ev->job->nconditions; i++)
			nv_buf_printf(b, " %s/%s", ev->job->conditions[i].type,
				      ev->job->conditions[i].reason);
	}
	if (ev->pod)
		nv_buf_printf(b, " pod %s %s", ev->pod->name, ev->pod->phase);
	if (ev->status)
		nv_buf_printf(b, " status %d %s: %s", ev->status->code,
			      ev->status->reason, ev->status->message);
	nv_buf_puts(b, "\n");
	return 0;
}

/* Feeds body cut at the given points (sorted, ≤ len); -> the record. */
static int feed_cut(const char *body, size_t len, const size_t *cuts,
		    size_t ncuts, int kind, nv_buf *out, char *rv, nv_err *err)
{
	nv_k8s_watch w;
	size_t at = 0;
	int rc = 0;

	nv_k8s_watch_init(&w, kind);
	for (size_t i = 0; i <= ncuts && !rc; i++) {
		size_t end = i < ncuts ? cuts[i] : len;

		rc = nv_k8s_watch_feed(&w, body + at, end - at, record, out,
				       err);
		at = end;
	}
	if (!rc)
		rc = nv_k8s_watch_finish(&w, record, out, err);
	if (rv)
		snprintf(rv, NV_K8S_RV_MAX, "%s", w.resource_version);
	nv_k8s_watch_free(&w);
	return rc;
}

static void test_watch_splits(void)
{
	static const char expect[] =
		"1 27446 job train-1 active=1 succeeded=0\n"
		"2 27640 job train-1 active=0 succeeded=1 "
		"SuccessCriteriaMet/CompletionsReached\n"
		"2 27656 job train-1 active=0 succeeded=1 "
		"SuccessCriteriaMet/CompletionsReached "
		"Complete/CompletionsReached\n"
		"4 27700\n";
	nv_buf whole, part;
	nv_err err;
	size_t len, bad = 0;
	char *body = load("watch-job-train-1.jsonl", &len);
	char rv[NV_K8S_RV_MAX];
	size_t *bytes;

	nv_buf_init(&whole, 1 << 20);
	nv_buf_init(&part, 1 << 20);
	CHECK(feed_cut(body, len, NULL, 0, NV_K8S_JOB, &whole, rv, &err) == 0);
	CHECK_STR(whole.data, expect);
	CHECK_STR(rv, "27700"); /* the bookmark's */

	/* every two-chunk split */
	for (size_t cut = 0; cut <= len; cut++) {
		part.len = 0;
		if (feed_cut(body, len, &cut, 1, NV_K8S_JOB, &part, NULL,
			     &err) != 0 ||
		    part.len != whole.len ||
		    memcmp(part.data, whole.data, whole.len) != 0)
			bad++;
	}
	CHECK(bad == 0);

	/* byte by byte */
	bytes = malloc(len * sizeof(*bytes));
	for (size_t i = 0; bytes && i < len; i++)
		bytes[i] = i + 1;
	part.len = 0;
	CHECK(bytes && feed_cut(body, len, bytes, len, NV_K8S_JOB, &part, NULL,
				&err) == 0);
	CHECK(part.len == whole.len &&
	      memcmp(part.data, whole.data, whole.len) == 0);
	free(bytes);

	/* no newline after the last event: finish reads it */
	part.len = 0;
	CHECK(len > 1 && body[len - 1] == '\n');
	CHECK(feed_cut(body, len - 1, NULL, 0, NV_K8S_JOB, &part, NULL, &err) ==
	      0);
	CHECK(part.len == whole.len);
	/* a stream cut inside an event: finish says so */
	part.len = 0;
	CHECK(feed_cut(body, len - 10, NULL, 0, NV_K8S_JOB, &part, NULL,
		       &err) == NV_EBACKEND);
	CHECK(contains(err.message, "event 4 is not"));
	/* CRLF and blank lines between events are fine */
	{
		nv_buf crlf;

		nv_buf_init(&crlf, 1 << 20);
		nv_buf_puts(&crlf, "\n\r\n");
		for (size_t i = 0; i < len; i++) {
			if (body[i] == '\n')
				nv_buf_puts(&crlf, "\r\n\n");
			else
				nv_buf_append(&crlf, body + i, 1);
		}
		part.len = 0;
		CHECK(feed_cut(crlf.data, crlf.len, NULL, 0, NV_K8S_JOB, &part,
			       NULL, &err) == 0);
		CHECK(part.len == whole.len &&
		      memcmp(part.data, whole.data, whole.len) == 0);
		nv_buf_free(&crlf);
	}
	free(body);
	nv_buf_free(&whole);
	nv_buf_free(&part);
}

/* A Pod watch built from the pod files, one event of each type, cut at
 * every two-chunk split. */
static void test_watch_pods(void)
{
	static const char *const files[] = {
		"pod-unschedulable-gpu.json", "pod-errimagepull.json",
		"pod-failed-exit42.json", "pod-failed-disrupted.json"};
	static const char *const types[] = {"ADDED", "MODIFIED", "MODIFIED",
					    "DELETED"};
	static const char expect[] = "1 27450 pod train-1-x7k2p Pending\n"
				     "2 27460 pod train-1-q9w8e Pending\n"
				     "2 30005 pod train-4-8ckj8 Failed\n"
				     "3 30002 pod train-4-p0o9i Failed\n";
	nv_buf stream, whole, part;
	nv_err err;
	size_t bad = 0;
	char rv[NV_K8S_RV_MAX];

	nv_buf_init(&stream, 1 << 20);
	nv_buf_init(&whole, 1 << 20);
	nv_buf_init(&part, 1 << 20);
	for (size_t i = 0; i < 4; i++) {
		size_t len;
		char *body = load(files[i], &len), *flat;
		cJSON *o = cJSON_ParseWithLength(body, len);

		flat = cJSON_PrintUnformatted(o);
		nv_buf_printf(&stream, "{\"type\":\"%s\",\"object\":%s}\n",
			      types[i], flat ? flat : "null");
		free(flat);
		cJSON_Delete(o);
		free(body);
	}
	CHECK(feed_cut(stream.data, stream.len, NULL, 0, NV_K8S_POD, &whole, rv,
		       &err) == 0);
	CHECK_STR(whole.data, expect);
	CHECK_STR(rv, "30002");
	for (size_t cut = 0; cut <= stream.len; cut++) {
		part.len = 0;
		if (feed_cut(stream.data, stream.len, &cut, 1, NV_K8S_POD,
			     &part, NULL, &err) != 0 ||
		    part.len != whole.len ||
		    memcmp(part.data, whole.data, whole.len) != 0)
			bad++;
	}
	CHECK(bad == 0);
	/* a Job watch refuses them */
	part.len = 0;
	CHECK(feed_cut(stream.data, stream.len, NULL, 0, NV_K8S_JOB, &part,
		       NULL, &err) == NV_EBACKEND);
	CHECK(contains(err.message, "a Pod where a Job"));
	nv_buf_free(&stream);
	nv_buf_free(&whole);
	nv_buf_free(&part);
}

static void test_watch_error_410(void)
{
	static const char expect[] =
		"5  status 410 Expired: too old resource version: 27446 "
		"(27600)\n"
		"5  status 410 Expired: The resourceVersion for the provided "
		"watch is too old.\n";
	nv_buf out;
	nv_err err;
	size_t len, bad = 0;
	char *body = load("watch-error-410.jsonl", &len);

	nv_buf_init(&out, 1 << 20);
	CHECK(feed_cut(body, len, NULL, 0, NV_K8S_JOB, &out, NULL, &err) == 0);
	CHECK_STR(out.data, expect);
	for (size_t cut = 0; cut <= len; cut++) {
		out.len = 0;
		if (feed_cut(body, len, &cut, 1, NV_K8S_POD, &out, NULL,
			     &err) != 0 ||
		    strcmp(out.data, expect) != 0)
			bad++;
	}
	CHECK(bad == 0);
	nv_buf_free(&out);
	free(body);
}

static int stop_at_first(void *ctx, const nv_k8s_watch_event *ev, nv_err *err)
{
	(void)ctx;
	(void)ev;
	return nv_err_set(err, NV_EFAILED, NULL, "stopped by the caller");
}

static void test_watch_refusals(void)
{
	static const char bookmark[] =
		"{\"type\":\"BOOKMARK\",\"object\":{\"kind\":\"Job\","
		"\"apiVersion\":\"batch/v1\",\"metadata\":{"
		"\"resourceVersion\":\"1\"},\"spec\":{\"template\":{"
		"\"metadata\":{},\"spec\":{\"containers\":null}}},"
		"\"status\":{}}}\n";
	static const char pod_in_job[] =
		"{\"type\":\"ADDED\",\"object\":{\"kind\":\"Pod\","
		"\"metadata\":{\"name\":\"p\"}}}\n";
	nv_k8s_watch w;
	nv_buf out, big;
	nv_err err;
	size_t head, pad;

	nv_buf_init(&out, 1 << 20);
	CHECK(feed_cut(bookmark, strlen(bookmark), NULL, 0, NV_K8S_JOB, &out,
		       NULL, &err) == 0);
	CHECK_STR(out.data, "4 1\n"); /* no job: a bookmark is not one */

	out.len = 0;
	CHECK(feed_cut(pod_in_job, strlen(pod_in_job), NULL, 0, NV_K8S_JOB,
		       &out, NULL, &err) == NV_EBACKEND);
	CHECK(contains(err.message, "a Pod where a Job"));
	out.len = 0;
	CHECK(feed_cut(pod_in_job, strlen(pod_in_job), NULL, 0, NV_K8S_POD,
		       &out, NULL, &err) == 0);
	CHECK_STR(out.data, "1  pod p \n");

	/* malformed JSON, an unknown type: refused, and the watch stays
	 * failed */
	nv_k8s_watch_init(&w, NV_K8S_JOB);
	CHECK(nv_k8s_watch_feed(&w, LIT("{\"type\":\"ADDED\",\"object\":{\n"),
				record, &out, &err) == NV_EBACKEND);
	CHECK(contains(err.message,
		       "event 1 is not {\"type\", \"object\"} JSON"));
	CHECK(nv_k8s_watch_feed(&w, bookmark, strlen(bookmark), record, &out,
				&err) == NV_EBACKEND);
	CHECK(contains(err.message, "already failed"));
	nv_k8s_watch_free(&w);
	nv_k8s_watch_init(&w, NV_K8S_JOB);
	CHECK(nv_k8s_watch_feed(&w,
				LIT("{\"type\":\"CHANGED\",\"object\":{}}\n"),
				record, &out, &err) == NV_EBACKEND);
	CHECK(contains(err.message, "unknown event type 'CHANGED'"));
	nv_k8s_watch_free(&w);
	nv_k8s_watch_init(&w, NV_K8S_JOB);
	CHECK(nv_k8s_watch_feed(&w,
				LIT("{\"type\":\"BOOKMARK\",\"object\":{}}\n"),
				record, &out, &err) == NV_EBACKEND);
	CHECK(contains(err.message, "bookmark without a resourceVersion"));
	nv_k8s_watch_free(&w);

	/* the callback stops the feed with its own code */
	nv_k8s_watch_init(&w, NV_K8S_JOB);
	CHECK(nv_k8s_watch_feed(&w, bookmark, strlen(bookmark), stop_at_first,
				NULL, &err) == NV_EFAILED);
	nv_k8s_watch_free(&w);

	/* a line of exactly NV_K8S_EVENT_MAX bytes is read; one more byte
	 * is refused as soon as it arrives, whatever the chunks */
	nv_buf_init(&big, NV_K8S_EVENT_MAX + 16);
	nv_buf_puts(&big, "{\"type\":\"BOOKMARK\",\"object\":{\"metadata\":{"
			  "\"resourceVersion\":\"77\"},\"pad\":\"");
	head = big.len;
	pad = NV_K8S_EVENT_MAX - head - 3;
	for (size_t i = 0; i < pad; i++)
		nv_buf_append(&big, "x", 1);
	nv_buf_puts(&big, "\"}}");
	CHECK(big.len == NV_K8S_EVENT_MAX && !big.failed);
	nv_buf_puts(&big, "\n");
	out.len = 0;
	{
		size_t cut = 100;
		CHECK(feed_cut(big.data, big.len, &cut, 1, NV_K8S_JOB, &out,
			       NULL, &err) == 0);
	}
	CHECK_STR(out.data, "4 77\n");

	/* one byte more: the closing quote moves one byte on */
	big.len = head;
	for (size_t i = 0; i <= pad; i++)
		nv_buf_append(&big, "x", 1);
	nv_buf_puts(&big, "\"}}");
	nv_k8s_watch_init(&w, NV_K8S_JOB);
	{
		size_t at = 0, chunk = 65536;
		int rc = 0;

		/* refused while the line is still open: not buffered whole */
		while (at < big.len && rc == 0) {
			size_t n = big.len - at < chunk ? big.len - at : chunk;

			rc = nv_k8s_watch_feed(&w, big.data + at, n, record,
					       &out, &err);
			at += n;
		}
		CHECK(rc == NV_EBACKEND);
		CHECK(at == big.len); /* the byte past the cap is the last */
		CHECK(contains(err.message, "an event over 4194304 bytes"));
		CHECK(w.line.len <= NV_K8S_EVENT_MAX);
	}
	nv_k8s_watch_free(&w);
	/* in one feed, with a newline: refused too */
	nv_buf_puts(&big, "\n");
	out.len = 0;
	CHECK(feed_cut(big.data, big.len, NULL, 0, NV_K8S_JOB, &out, NULL,
		       &err) == NV_EBACKEND);
	CHECK(out.len == 0);
	nv_buf_free(&big);
	nv_buf_free(&out);
}

int main(void)
{
	find_data_dir_of("k8s/responses");
	test_jobs();
	test_pods();
	test_status();
	test_every_file();
	test_lists();
	test_refusals();
	test_index_sets();
	test_watch_splits();
	test_watch_pods();
	test_watch_error_410();
	test_watch_refusals();
	return nv_test_done();
}
