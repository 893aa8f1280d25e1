/* Fuzz target: a Kubernetes API answer (host/k8s/k8s_parse.c) read as
 * hostile input: the body is read as every kind navette asks for (a
 * JobList, a PodList, an EventList, a Job, a Pod, a Status). Checks
 * invariants, not just the absence of crashes: a refused answer leaves
 * nothing allocated and says why; a list holds at most NV_K8S_ITEMS_MAX
 * items, each named; texts end within their arrays, with no control
 * characters; every Job's view, with the pods and events of the same
 * body, has a known phase, and a done one is succeeded or failed. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "k8s/k8s_parse.h"
#include "k8s/k8s_state.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_text(const char *s, size_t cap)
{
	size_t n = strnlen(s, cap);

	if (n == cap)
		abort();
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
			abort();
}

static void check_err(int rc, const nv_err *err)
{
	if (rc != 0 && (rc != err->code || !err->message[0] ||
			strnlen(err->message, sizeof(err->message)) ==
				sizeof(err->message)))
		abort();
}

static void check_view(const nv_k8s_view *v)
{
	static const char *const phases[] = {
		"queued",    "accepted", "image_ready", "running",
		"succeeded", "failed",   NULL};
	int known = 0;

	for (size_t i = 0; v->phase && phases[i]; i++)
		known |= strcmp(v->phase, phases[i]) == 0;
	if (!known || v->exit_code < -1 || v->exit_code > 255)
		abort();
	if (v->done && strcmp(v->phase, "succeeded") != 0 &&
	    strcmp(v->phase, "failed") != 0)
		abort();
	if (strnlen(v->reason, sizeof(v->reason)) == sizeof(v->reason))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *body = (const char *)data;
	nv_k8s_job_list jl;
	nv_k8s_pod_list pl;
	nv_k8s_event_list el;
	nv_k8s_job job;
	nv_k8s_pod pod;
	nv_k8s_status st;
	nv_err err;
	int rc;

	if (size > (1u << 20))
		return 0;

	rc = nv_k8s_parse_job_list(body, size, &jl, &err);
	check_err(rc, &err);
	if (rc && (jl.items || jl.nitems))
		abort();
	rc = nv_k8s_parse_pod_list(body, size, &pl, &err);
	check_err(rc, &err);
	if (rc && (pl.items || pl.nitems))
		abort();
	rc = nv_k8s_parse_event_list(body, size, "FailedCreate", &el, &err);
	check_err(rc, &err);
	if (rc && (el.items || el.nitems))
		abort();
	if (jl.nitems > NV_K8S_ITEMS_MAX || pl.nitems > NV_K8S_ITEMS_MAX ||
	    el.nitems > NV_K8S_ITEMS_MAX)
		abort();
	check_text(jl.meta.continue_token, sizeof(jl.meta.continue_token));
	check_text(jl.meta.resource_version, sizeof(jl.meta.resource_version));
	for (size_t i = 0; i < pl.nitems; i++) {
		if (!pl.items[i].name[0])
			abort();
		check_text(pl.items[i].name, sizeof(pl.items[i].name));
		check_text(pl.items[i].phase, sizeof(pl.items[i].phase));
	}
	for (size_t i = 0; i < el.nitems; i++) {
		if (strcmp(el.items[i].reason, "FailedCreate") != 0)
			abort();
		if (el.items[i].message)
			check_text(el.items[i].message, NV_K8S_MESSAGE_MAX);
	}
	for (size_t i = 0; i < jl.nitems; i++) {
		nv_k8s_view v;

		if (!jl.items[i].name[0])
			abort();
		check_text(jl.items[i].name, sizeof(jl.items[i].name));
		for (long ix = -1; ix < 4; ix++) {
			nv_k8s_view_of(&jl.items[i], pl.items, pl.nitems,
				       el.items, el.nitems, ix, &v);
			check_view(&v);
		}
	}
	nv_k8s_job_list_free(&jl);
	nv_k8s_pod_list_free(&pl);
	nv_k8s_event_list_free(&el);

	rc = nv_k8s_parse_job(body, size, &job, &err);
	check_err(rc, &err);
	if (rc == 0) {
		nv_k8s_view v;

		nv_k8s_view_of(&job, NULL, 0, NULL, 0, -1, &v);
		check_view(&v);
	} else if (job.conditions || job.tasks) {
		abort();
	}
	nv_k8s_job_free(&job);
	rc = nv_k8s_parse_pod(body, size, &pod, &err);
	check_err(rc, &err);
	if (rc == 0 && pod.completion_index < -1)
		abort();
	nv_k8s_pod_free(&pod);
	rc = nv_k8s_parse_status(body, size, &st, &err);
	check_err(rc, &err);
	if (rc == 0) {
		check_text(st.message, sizeof(st.message));
		if (st.ncauses > NV_K8S_CAUSES_MAX ||
		    st.ncauses > st.ncauses_total || st.code < 0 ||
		    st.code > 999)
			abort();
	}
	return 0;
}
