/* Fuzz target: a Kubernetes watch stream (host/k8s/k8s_parse.c) read as
 * hostile input. The first byte chooses the watch's kind (bit 0: Job or
 * Pod) and how the rest is cut into chunks (the other bits: a chunk size);
 * the rest is the stream. Checks invariants, not just the absence of
 * crashes: the stream fed whole and fed in chunks gives the same events
 * and the same result; every text read is NUL-terminated within its array
 * and free of control characters; an ERROR carries a Status, a BOOKMARK
 * nothing but its resourceVersion; each Job or Pod's view has a known
 * phase, and a done view is succeeded or failed. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/buf.h"
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

static void check_long_text(const char *s)
{
	if (s)
		check_text(s, NV_K8S_TASKS_TEXT_MAX + 1);
}

static void check_view(const nv_k8s_view *v)
{
	static const char *const phases[] = {
		"queued",    "accepted", "image_ready", "running",
		"succeeded", "failed",   NULL};
	int known = 0;

	for (size_t i = 0; v->phase && phases[i]; i++)
		known |= strcmp(v->phase, phases[i]) == 0;
	if (!known)
		abort();
	if (v->done && strcmp(v->phase, "succeeded") != 0 &&
	    strcmp(v->phase, "failed") != 0)
		abort();
	if (v->exit_code < -1 || v->exit_code > 255)
		abort();
	if (strnlen(v->reason, sizeof(v->reason)) == sizeof(v->reason) ||
	    strnlen(v->hint, sizeof(v->hint)) == sizeof(v->hint))
		abort();
}

static void check_conditions(const nv_k8s_condition *c, size_t n)
{
	if (n > NV_K8S_CONDITIONS_MAX || (n && !c))
		abort();
	for (size_t i = 0; i < n; i++) {
		check_text(c[i].type, sizeof(c[i].type));
		check_text(c[i].status, sizeof(c[i].status));
		check_text(c[i].reason, sizeof(c[i].reason));
		if (c[i].message)
			check_text(c[i].message, NV_K8S_MESSAGE_MAX);
	}
}

static void check_job(const nv_k8s_job *j)
{
	nv_k8s_view v;

	if (!j->name[0])
		abort();
	check_text(j->name, sizeof(j->name));
	check_text(j->uid, sizeof(j->uid));
	check_text(j->resource_version, sizeof(j->resource_version));
	check_text(j->navette_job, sizeof(j->navette_job));
	check_long_text(j->tasks);
	check_long_text(j->after);
	check_long_text(j->completed_indexes);
	check_long_text(j->failed_indexes);
	check_conditions(j->conditions, j->nconditions);
	if (j->active < 0 || j->failed < 0 || j->succeeded < 0)
		abort();
	for (long ix = -1; ix < 3; ix++) {
		nv_k8s_view_of(j, NULL, 0, NULL, 0, ix, &v);
		check_view(&v);
	}
}

static void check_pod(const nv_k8s_pod *p)
{
	nv_k8s_job job;
	nv_k8s_view v;

	if (!p->name[0] || p->ncontainers > NV_K8S_CONTAINERS_MAX)
		abort();
	check_text(p->name, sizeof(p->name));
	check_text(p->job_name, sizeof(p->job_name));
	check_text(p->node_name, sizeof(p->node_name));
	check_text(p->phase, sizeof(p->phase));
	check_conditions(p->conditions, p->nconditions);
	for (size_t i = 0; i < p->ncontainers; i++) {
		const nv_k8s_container *c = &p->containers[i];

		check_text(c->reason, sizeof(c->reason));
		if (c->exit_code < -1 || c->exit_code > 255)
			abort();
	}
	/* the view of a Job with this one pod, as a whole and per index */
	memset(&job, 0, sizeof(job));
	memcpy(job.name, p->job_name, sizeof(p->job_name));
	job.indexed = 1;
	nv_k8s_view_of(&job, p, 1, NULL, 0, -1, &v);
	check_view(&v);
	nv_k8s_view_of(&job, p, 1, NULL, 0, p->completion_index, &v);
	check_view(&v);
}

static int record(void *ctx, const nv_k8s_watch_event *ev, nv_err *err)
{
	nv_buf *b = ctx;

	(void)err;
	if (!ev->resource_version)
		abort();
	check_text(ev->resource_version, NV_K8S_RV_MAX);
	switch (ev->type) {
	case NV_K8S_ADDED:
	case NV_K8S_MODIFIED:
	case NV_K8S_DELETED:
		if (!ev->job == !ev->pod || ev->status)
			abort();
		if (ev->job)
			check_job(ev->job);
		else
			check_pod(ev->pod);
		break;
	case NV_K8S_BOOKMARK:
		if (ev->job || ev->pod || ev->status ||
		    !ev->resource_version[0])
			abort();
		break;
	case NV_K8S_ERROR:
		if (!ev->status || ev->job || ev->pod)
			abort();
		check_text(ev->status->message, sizeof(ev->status->message));
		check_text(ev->status->reason, sizeof(ev->status->reason));
		if (ev->status->ncauses > NV_K8S_CAUSES_MAX ||
		    ev->status->ncauses > ev->status->ncauses_total)
			abort();
		break;
	default: abort();
	}
	nv_buf_printf(b, "%d %s %s %s|", ev->type, ev->resource_version,
		      ev->job ? ev->job->name : "",
		      ev->pod ? ev->pod->name : "");
	return 0;
}

static int feed(const char *body, size_t len, size_t chunk, int kind,
		nv_buf *out, char *rv)
{
	nv_k8s_watch w;
	nv_err err;
	size_t at = 0;
	int rc = 0;

	nv_k8s_watch_init(&w, kind);
	while (at < len && rc == 0) {
		size_t n = len - at < chunk ? len - at : chunk;

		rc = nv_k8s_watch_feed(&w, body + at, n, record, out, &err);
		at += n;
	}
	if (rc == 0)
		rc = nv_k8s_watch_finish(&w, record, out, &err);
	if (rc &&
	    (!err.message[0] ||
	     strnlen(err.message, sizeof(err.message)) == sizeof(err.message)))
		abort();
	memcpy(rv, w.resource_version, NV_K8S_RV_MAX);
	nv_k8s_watch_free(&w);
	return rc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char rv_whole[NV_K8S_RV_MAX], rv_cut[NV_K8S_RV_MAX];
	nv_buf whole, cut;
	int kind, rc_whole, rc_cut;
	size_t chunk;

	if (size < 1 || size > (1u << 20))
		return 0;
	kind = (data[0] & 1) ? NV_K8S_POD : NV_K8S_JOB;
	chunk = (size_t)(data[0] >> 1) + 1;
	nv_buf_init(&whole, (size_t)1 << 24);
	nv_buf_init(&cut, (size_t)1 << 24);
	rc_whole = feed((const char *)data + 1, size - 1, size, kind, &whole,
			rv_whole);
	rc_cut = feed((const char *)data + 1, size - 1, chunk, kind, &cut,
		      rv_cut);
	if (rc_whole != rc_cut || whole.len != cut.len ||
	    (whole.len && memcmp(whole.data, cut.data, whole.len) != 0) ||
	    strcmp(rv_whole, rv_cut) != 0)
		abort();
	nv_buf_free(&whole);
	nv_buf_free(&cut);
	return 0;
}
