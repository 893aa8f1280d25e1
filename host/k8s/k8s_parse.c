/* Reading the Kubernetes API's answers (see k8s_parse.h): Jobs, Pods,
 * Events, Status bodies and watch streams, into bounded structs. Every
 * helper here copies with a cap and checks each number's range; nothing
 * of the cJSON tree outlives a parse. Pure C, no Lua. */
#include "k8s/k8s_parse.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#define HINT_SERVER                                                            \
	"is the profile's server a Kubernetes API server (v1.31 or close)? "   \
	"Try `kubectl get --raw /version` with the same kubeconfig"

/* ---- helpers ----------------------------------------------------------- */

static const cJSON *field(const cJSON *obj, const char *name)
{
	return cJSON_IsObject(obj) ? cJSON_GetObjectItemCaseSensitive(obj, name)
				   : NULL;
}

static const char *string_of(const cJSON *item)
{
	return cJSON_IsString(item) ? item->valuestring : NULL;
}

/* Length of s cut to at most max bytes on a UTF-8 boundary. */
static size_t cut_len(const char *s, size_t max)
{
	size_t n = 0;

	while (n < max && s[n])
		n++;
	if (s[n]) /* cut: do not end inside a UTF-8 sequence */
		while (n > 0 && ((unsigned char)s[n] & 0xC0) == 0x80)
			n--;
	return n;
}

static void clean_copy(char *dst, const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c == '\t' || c == '\n' || c == '\r')
			dst[i] = ' ';
		else if (c < 0x20 || c == 0x7f)
			dst[i] = '?';
		else
			dst[i] = (char)c;
	}
	dst[n] = '\0';
}

/* Display text: copied into dst[cap], cut when longer. */
static void copy_text(char *dst, size_t cap, const cJSON *item)
{
	const char *s = string_of(item);

	dst[0] = '\0';
	if (s)
		clean_copy(dst, s, cut_len(s, cap - 1));
}

/* Display text, malloc'd (cut at NV_K8S_MESSAGE_MAX). *dst stays NULL when
 * absent or empty. -> 0, or -1 out of memory. */
static int dup_text(char **dst, const cJSON *item)
{
	const char *s = string_of(item);
	size_t n;

	*dst = NULL;
	if (!s || !s[0])
		return 0;
	n = cut_len(s, NV_K8S_MESSAGE_MAX - 1);
	*dst = malloc(n + 1);
	if (!*dst)
		return -1;
	clean_copy(*dst, s, n);
	return 0;
}

/* An identity field: refused when it does not fit (a cut name is another
 * name) or holds a control character. Absent is "". */
static int copy_id(char *dst, size_t cap, const cJSON *item, const char *what,
		   nv_err *err)
{
	const char *s = string_of(item);
	size_t n;

	dst[0] = '\0';
	if (!item || cJSON_IsNull(item))
		return 0;
	if (!s)
		return nv_err_set(err, NV_EBACKEND, HINT_SERVER,
				  "Kubernetes answer: %s is not a string",
				  what);
	n = strlen(s);
	if (n >= cap)
		return nv_err_set(err, NV_EBACKEND, HINT_SERVER,
				  "Kubernetes answer: %s is longer than %zu "
				  "bytes",
				  what, cap - 1);
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
			return nv_err_set(err, NV_EBACKEND, HINT_SERVER,
					  "Kubernetes answer: %s holds a "
					  "control character",
					  what);
	memcpy(dst, s, n + 1);
	return 0;
}

/* An identity text that may be long (an annotation), malloc'd. */
static int dup_id(char **dst, size_t max, const cJSON *item, const char *what,
		  nv_err *err)
{
	const char *s = string_of(item);
	size_t n;

	*dst = NULL;
	if (!item || cJSON_IsNull(item))
		return 0;
	if (!s)
		return nv_err_set(err, NV_EBACKEND, HINT_SERVER,
				  "Kubernetes answer: %s is not a string",
				  what);
	n = strlen(s);
	if (n >= max)
		return nv_err_set(err, NV_EBACKEND, HINT_SERVER,
				  "Kubernetes answer: %s is longer than %zu "
				  "bytes",
				  what, max - 1);
	*dst = malloc(n + 1);
	if (!*dst)
		return nv_err_set(err, NV_ENOMEM, NULL, "out of memory");
	clean_copy(*dst, s, n);
	return 0;
}

/* A whole number in [lo, hi], else dflt. */
static long number_in(const cJSON *item, long lo, long hi, long dflt)
{
	double v;

	if (!cJSON_IsNumber(item))
		return dflt;
	v = item->valuedouble;
	if (!isfinite(v) || v < (double)lo || v > (double)hi || v != floor(v))
		return dflt;
	return (long)v;
}

/* A decimal text in [0, hi] ("3"), else -1. */
static long index_text(const char *s, long hi)
{
	long v = 0;

	if (!s || !*s || (s[0] == '0' && s[1]))
		return -1;
	for (; *s; s++) {
		if (*s < '0' || *s > '9')
			return -1;
		v = v * 10 + (*s - '0');
		if (v > hi)
			return -1;
	}
	return v;
}

static cJSON *parse_body(const char *body, size_t len, size_t max,
			 const char *what, nv_err *err)
{
	cJSON *root;
	const char *kind;

	if (!body || len == 0) {
		nv_err_set(err, NV_EBACKEND, HINT_SERVER,
			   "Kubernetes sent an empty answer for %s", what);
		return NULL;
	}
	if (len > max) {
		nv_err_set(err, NV_EBACKEND,
			   "a list is read in pages (limit=500): is the "
			   "server's answer a single huge object?",
			   "Kubernetes answer for %s is over %zu bytes", what,
			   max);
		return NULL;
	}
	root = cJSON_ParseWithLength(body, len);
	if (!cJSON_IsObject(root)) {
		cJSON_Delete(root);
		nv_err_set(err, NV_EBACKEND, HINT_SERVER,
			   "Kubernetes answer for %s is not a JSON object",
			   what);
		return NULL;
	}
	kind = string_of(field(root, "kind"));
	if (kind && strcmp(kind, "Status") == 0) {
		char msg[NV_K8S_MESSAGE_MAX];

		copy_text(msg, sizeof(msg), field(root, "message"));
		nv_err_set(err, NV_EBACKEND, HINT_SERVER,
			   "Kubernetes answered a Status instead of %s: %s",
			   what, msg[0] ? msg : "(no message)");
		cJSON_Delete(root);
		return NULL;
	}
	return root;
}

/* kind, when the object states one, must be the one asked for. */
static int check_kind(const cJSON *obj, const char *want, nv_err *err)
{
	const char *kind = string_of(field(obj, "kind"));

	if (kind && strcmp(kind, want) != 0)
		return nv_err_set(err, NV_EBACKEND, HINT_SERVER,
				  "Kubernetes answer: a %.40s where a %s was "
				  "expected",
				  kind, want);
	return 0;
}

static void conditions_free(nv_k8s_condition *c, size_t n)
{
	for (size_t i = 0; c && i < n; i++)
		free(c[i].message);
	free(c);
}

/* An optional array of at most max items: *count (0 when absent or
 * null), or an error naming the field. */
static int bounded_array(const cJSON *arr, const char *name, int max,
			 int *count, nv_err *err)
{
	*count = 0;
	if (!arr || cJSON_IsNull(arr))
		return 0;
	if (!cJSON_IsArray(arr))
		return nv_err_set(err, NV_EBACKEND, HINT_SERVER,
				  "Kubernetes answer: %s is not a list", name);
	*count = cJSON_GetArraySize(arr);
	if (*count > max)
		return nv_err_set(err, NV_EBACKEND, HINT_SERVER,
				  "Kubernetes answer: more than %d %s", max,
				  name);
	return 0;
}

static int read_conditions(const cJSON *arr, nv_k8s_condition **out, size_t *n,
			   nv_err *err)
{
	const cJSON *it;
	int count, rc;

	*out = NULL;
	*n = 0;
	if ((rc = bounded_array(arr, "conditions", NV_K8S_CONDITIONS_MAX,
				&count, err)) ||
	    count == 0)
		return rc;
	*out = calloc((size_t)count, sizeof(**out));
	if (!*out)
		return nv_err_set(err, NV_ENOMEM, NULL, "out of memory");
	cJSON_ArrayForEach(it, arr)
	{
		nv_k8s_condition *c = &(*out)[*n];

		if (!cJSON_IsObject(it))
			continue;
		copy_text(c->type, sizeof(c->type), field(it, "type"));
		copy_text(c->status, sizeof(c->status), field(it, "status"));
		copy_text(c->reason, sizeof(c->reason), field(it, "reason"));
		copy_text(c->last_transition, sizeof(c->last_transition),
			  field(it, "lastTransitionTime"));
		(*n)++;
		if (dup_text(&c->message, field(it, "message")))
			return nv_err_set(err, NV_ENOMEM, NULL,
					  "out of memory");
	}
	return 0;
}

const nv_k8s_condition *nv_k8s_condition_true(const nv_k8s_condition *c,
					      size_t n, const char *type)
{
	for (size_t i = 0; c && i < n; i++)
		if (strcmp(c[i].type, type) == 0 &&
		    strcmp(c[i].status, "True") == 0)
			return &c[i];
	return NULL;
}

int nv_k8s_index_in(const char *set, long index)
{
	const char *p = set;

	if (!set || index < 0)
		return 0;
	while (*p) {
		char *end;
		long lo, hi;

		if (*p < '0' || *p > '9')
			return 0;
		errno = 0;
		lo = strtol(p, &end, 10);
		if (errno)
			return 0;
		hi = lo;
		p = end;
		if (*p == '-') {
			p++;
			if (*p < '0' || *p > '9')
				return 0;
			hi = strtol(p, &end, 10);
			if (errno || hi < lo)
				return 0;
			p = end;
		}
		if (*p == ',')
			p++;
		else if (*p)
			return 0;
		if (index >= lo && index <= hi)
			return 1;
	}
	return 0;
}

/* ---- objects ----------------------------------------------------------- */

static int read_meta(const cJSON *obj, char *name, char *uid, char *rv,
		     int *deleting, const char *what, nv_err *err)
{
	const cJSON *meta = field(obj, "metadata");

	if (!cJSON_IsObject(meta))
		return nv_err_set(err, NV_EBACKEND, HINT_SERVER,
				  "Kubernetes answer: a %s without metadata",
				  what);
	if (copy_id(name, NV_K8S_NAME_SIZE, field(meta, "name"), "a name",
		    err) ||
	    copy_id(uid, NV_K8S_UID_MAX, field(meta, "uid"), "a uid", err) ||
	    copy_id(rv, NV_K8S_RV_MAX, field(meta, "resourceVersion"),
		    "a resourceVersion", err))
		return err ? err->code : NV_EBACKEND;
	if (!name[0])
		return nv_err_set(err, NV_EBACKEND, HINT_SERVER,
				  "Kubernetes answer: a %s without a name",
				  what);
	*deleting = string_of(field(meta, "deletionTimestamp")) != NULL;
	return 0;
}

void nv_k8s_job_free(nv_k8s_job *job)
{
	if (!job)
		return;
	free(job->tasks);
	free(job->after);
	free(job->spec_sha256);
	free(job->completed_indexes);
	free(job->failed_indexes);
	conditions_free(job->conditions, job->nconditions);
	memset(job, 0, sizeof(*job));
}

static int job_from(const cJSON *obj, nv_k8s_job *job, nv_err *err)
{
	const cJSON *meta = field(obj, "metadata");
	const cJSON *labels = field(meta, "labels");
	const cJSON *notes = field(meta, "annotations");
	const cJSON *spec = field(obj, "spec"), *status = field(obj, "status");
	const char *mode;
	int rc;

	memset(job, 0, sizeof(*job));
	if ((rc = check_kind(obj, "Job", err)) ||
	    (rc = read_meta(obj, job->name, job->uid, job->resource_version,
			    &job->deleting, "Job", err)))
		goto fail;
	if ((rc = copy_id(job->navette_job, sizeof(job->navette_job),
			  field(labels, NV_K8S_LABEL_PREFIX "/job"),
			  "label " NV_K8S_LABEL_PREFIX "/job", err)) ||
	    (rc = dup_id(&job->tasks, NV_K8S_TASKS_TEXT_MAX,
			 field(notes, NV_K8S_LABEL_PREFIX "/tasks"),
			 "annotation " NV_K8S_LABEL_PREFIX "/tasks", err)) ||
	    (rc = dup_id(&job->after, NV_K8S_TASKS_TEXT_MAX,
			 field(notes, NV_K8S_LABEL_PREFIX "/after"),
			 "annotation " NV_K8S_LABEL_PREFIX "/after", err)) ||
	    (rc = dup_id(&job->spec_sha256, 80,
			 field(notes, NV_K8S_LABEL_PREFIX "/spec-sha256"),
			 "annotation " NV_K8S_LABEL_PREFIX "/spec-sha256",
			 err)))
		goto fail;

	job->suspend = cJSON_IsTrue(field(spec, "suspend"));
	mode = string_of(field(spec, "completionMode"));
	job->indexed = mode && strcmp(mode, "Indexed") == 0;
	job->completions =
		number_in(field(spec, "completions"), 0, INT_MAX, -1);
	job->parallelism =
		number_in(field(spec, "parallelism"), 0, INT_MAX, -1);
	job->backoff_limit =
		number_in(field(spec, "backoffLimit"), 0, INT_MAX, -1);
	job->backoff_limit_per_index =
		number_in(field(spec, "backoffLimitPerIndex"), 0, INT_MAX, -1);
	job->active_deadline_seconds = number_in(
		field(spec, "activeDeadlineSeconds"), 1, (long)1 << 40, -1);

	job->active = number_in(field(status, "active"), 0, INT_MAX, 0);
	job->succeeded = number_in(field(status, "succeeded"), 0, INT_MAX, 0);
	job->failed = number_in(field(status, "failed"), 0, INT_MAX, 0);
	job->ready = number_in(field(status, "ready"), 0, INT_MAX, 0);
	job->terminating =
		number_in(field(status, "terminating"), 0, INT_MAX, 0);
	if ((rc = dup_id(&job->completed_indexes, NV_K8S_INDEXES_MAX,
			 field(status, "completedIndexes"),
			 "status.completedIndexes", err)) ||
	    (rc = dup_id(&job->failed_indexes, NV_K8S_INDEXES_MAX,
			 field(status, "failedIndexes"), "status.failedIndexes",
			 err)) ||
	    (rc = read_conditions(field(status, "conditions"), &job->conditions,
				  &job->nconditions, err)))
		goto fail;
	copy_text(job->start_time, sizeof(job->start_time),
		  field(status, "startTime"));
	copy_text(job->completion_time, sizeof(job->completion_time),
		  field(status, "completionTime"));
	return 0;
fail:
	nv_k8s_job_free(job);
	return rc ? rc : NV_EBACKEND;
}

void nv_k8s_pod_free(nv_k8s_pod *pod)
{
	if (!pod)
		return;
	free(pod->message);
	conditions_free(pod->conditions, pod->nconditions);
	for (size_t i = 0; pod->containers && i < pod->ncontainers; i++)
		free(pod->containers[i].message);
	free(pod->containers);
	memset(pod, 0, sizeof(*pod));
}

/* nvidia.com/gpu asked by the pod's containers ("1", or 1). */
static long pod_gpus(const cJSON *spec)
{
	const cJSON *c;
	long total = 0;

	cJSON_ArrayForEach(c, field(spec, "containers"))
	{
		const cJSON *res = field(c, "resources");
		const cJSON *g =
			field(field(res, "requests"), "nvidia.com/gpu");
		long n;

		if (!g)
			g = field(field(res, "limits"), "nvidia.com/gpu");
		n = cJSON_IsString(g) ? index_text(g->valuestring, 1 << 20)
				      : number_in(g, 0, 1 << 20, -1);
		if (n > 0 && total < (1L << 30))
			total += n;
	}
	return total;
}

static int read_containers(const cJSON *arr, nv_k8s_pod *pod, nv_err *err)
{
	const cJSON *it;
	int count, rc;

	if ((rc = bounded_array(arr, "container statuses",
				NV_K8S_CONTAINERS_MAX, &count, err)))
		return rc;
	if (count == 0)
		return 0;
	pod->containers = calloc((size_t)count, sizeof(*pod->containers));
	if (!pod->containers)
		return nv_err_set(err, NV_ENOMEM, NULL, "out of memory");
	cJSON_ArrayForEach(it, arr)
	{
		nv_k8s_container *c = &pod->containers[pod->ncontainers];
		const cJSON *state = field(it, "state"), *s;

		if (!cJSON_IsObject(it))
			continue;
		pod->ncontainers++;
		copy_text(c->name, sizeof(c->name), field(it, "name"));
		c->restart_count =
			number_in(field(it, "restartCount"), 0, INT_MAX, 0);
		c->exit_code = -1;
		if (cJSON_IsObject(s = field(state, "terminated"))) {
			c->state = NV_K8S_CONTAINER_TERMINATED;
			c->exit_code = (int)number_in(field(s, "exitCode"), 0,
						      255, -1);
			c->signal =
				(int)number_in(field(s, "signal"), 0, 127, 0);
		} else if (cJSON_IsObject(s = field(state, "running"))) {
			c->state = NV_K8S_CONTAINER_RUNNING;
		} else if (cJSON_IsObject(s = field(state, "waiting"))) {
			c->state = NV_K8S_CONTAINER_WAITING;
		} else {
			continue;
		}
		copy_text(c->reason, sizeof(c->reason), field(s, "reason"));
		if (dup_text(&c->message, field(s, "message")))
			return nv_err_set(err, NV_ENOMEM, NULL,
					  "out of memory");
	}
	return 0;
}

static int pod_from(const cJSON *obj, nv_k8s_pod *pod, nv_err *err)
{
	const cJSON *meta = field(obj, "metadata");
	const cJSON *labels = field(meta, "labels");
	const cJSON *notes = field(meta, "annotations");
	const cJSON *spec = field(obj, "spec"), *status = field(obj, "status");
	const cJSON *jn, *ix;
	int rc;

	memset(pod, 0, sizeof(*pod));
	pod->completion_index = -1;
	if ((rc = check_kind(obj, "Pod", err)) ||
	    (rc = read_meta(obj, pod->name, pod->uid, pod->resource_version,
			    &pod->deleting, "Pod", err)))
		goto fail;
	copy_text(pod->created, sizeof(pod->created),
		  field(meta, "creationTimestamp"));
	jn = field(labels, "batch.kubernetes.io/job-name");
	if (!jn)
		jn = field(labels, "job-name");
	if ((rc = copy_id(pod->job_name, sizeof(pod->job_name), jn,
			  "label job-name", err)) ||
	    (rc = copy_id(pod->node_name, sizeof(pod->node_name),
			  field(spec, "nodeName"), "spec.nodeName", err)))
		goto fail;
	ix = field(notes, "batch.kubernetes.io/job-completion-index");
	if (!ix)
		ix = field(labels, "batch.kubernetes.io/job-completion-index");
	pod->completion_index = index_text(string_of(ix), INT_MAX);
	pod->gpus = pod_gpus(spec);
	copy_text(pod->phase, sizeof(pod->phase), field(status, "phase"));
	copy_text(pod->reason, sizeof(pod->reason), field(status, "reason"));
	if (dup_text(&pod->message, field(status, "message"))) {
		rc = nv_err_set(err, NV_ENOMEM, NULL, "out of memory");
		goto fail;
	}
	if ((rc = read_conditions(field(status, "conditions"), &pod->conditions,
				  &pod->nconditions, err)) ||
	    (rc = read_containers(field(status, "containerStatuses"), pod,
				  err)))
		goto fail;
	return 0;
fail:
	nv_k8s_pod_free(pod);
	return rc ? rc : NV_EBACKEND;
}

void nv_k8s_event_free(nv_k8s_event *ev)
{
	if (!ev)
		return;
	free(ev->message);
	memset(ev, 0, sizeof(*ev));
}

static int event_from(const cJSON *obj, nv_k8s_event *ev, nv_err *err)
{
	const cJSON *inv = field(obj, "involvedObject");
	const cJSON *ts = field(obj, "lastTimestamp");

	memset(ev, 0, sizeof(*ev));
	copy_text(ev->type, sizeof(ev->type), field(obj, "type"));
	copy_text(ev->reason, sizeof(ev->reason), field(obj, "reason"));
	copy_text(ev->object_kind, sizeof(ev->object_kind), field(inv, "kind"));
	if (copy_id(ev->object_name, sizeof(ev->object_name),
		    field(inv, "name"), "involvedObject.name", err))
		return err ? err->code : NV_EBACKEND;
	ev->count = number_in(field(obj, "count"), 0, INT_MAX, 0);
	if (!string_of(ts)) /* events.k8s.io-era writers leave it null */
		ts = field(obj, "eventTime");
	copy_text(ev->last_timestamp, sizeof(ev->last_timestamp), ts);
	if (dup_text(&ev->message, field(obj, "message")))
		return nv_err_set(err, NV_ENOMEM, NULL, "out of memory");
	return 0;
}

int nv_k8s_parse_job(const char *body, size_t len, nv_k8s_job *out, nv_err *err)
{
	cJSON *root = parse_body(body, len, NV_K8S_BODY_MAX, "a Job", err);
	int rc;

	memset(out, 0, sizeof(*out));
	if (!root)
		return err ? err->code : NV_EBACKEND;
	rc = job_from(root, out, err);
	cJSON_Delete(root);
	return rc;
}

int nv_k8s_parse_pod(const char *body, size_t len, nv_k8s_pod *out, nv_err *err)
{
	cJSON *root = parse_body(body, len, NV_K8S_BODY_MAX, "a Pod", err);
	int rc;

	memset(out, 0, sizeof(*out));
	if (!root)
		return err ? err->code : NV_EBACKEND;
	rc = pod_from(root, out, err);
	cJSON_Delete(root);
	return rc;
}

/* ---- lists ------------------------------------------------------------- */

/* Checks a list's kind and items, reads its metadata. -> the items array
 * (may be NULL: an empty list) with *count set. */
static int list_head(const cJSON *root, const char *kind, nv_k8s_list_meta *m,
		     const cJSON **items, int *count, nv_err *err)
{
	const cJSON *meta = field(root, "metadata");
	int rc;

	*items = NULL;
	*count = 0;
	if ((rc = check_kind(root, kind, err)))
		return rc;
	if ((rc = copy_id(m->resource_version, sizeof(m->resource_version),
			  field(meta, "resourceVersion"),
			  "the list's resourceVersion", err)) ||
	    (rc = copy_id(m->continue_token, sizeof(m->continue_token),
			  field(meta, "continue"), "the list's continue token",
			  err)))
		return rc;
	*items = field(root, "items");
	if (!*items || cJSON_IsNull(*items))
		return 0;
	if (!cJSON_IsArray(*items))
		return nv_err_set(err, NV_EBACKEND, HINT_SERVER,
				  "Kubernetes answer: a %s whose items is not "
				  "a list",
				  kind);
	*count = cJSON_GetArraySize(*items);
	if (*count > NV_K8S_ITEMS_MAX)
		return nv_err_set(err, NV_EBACKEND,
				  "navette asks for pages of 500: is a proxy "
				  "dropping the limit parameter?",
				  "Kubernetes answer: a %s of more than %d "
				  "items",
				  kind, NV_K8S_ITEMS_MAX);
	return 0;
}

/* One kind of list: how an item is read (0, 1 to leave it out, or an
 * error) and freed. */
struct list_kind {
	const char *kind, *what; /* "JobList", "a JobList" */
	size_t item_size;
	int (*from)(const cJSON *obj, void *item, const void *ctx, nv_err *err);
	void (*free_item)(void *item);
};

/* Frees n items of a kind's list (the list's own fields are the caller's). */
static void free_items(const struct list_kind *k, void *items, size_t n)
{
	for (size_t i = 0; items && i < n; i++)
		k->free_item((char *)items + i * k->item_size);
	free(items);
}

/* Reads a list into *items (calloc'd, *n read); on an error nothing is
 * kept. */
static int parse_list(const struct list_kind *k, const char *body, size_t len,
		      const void *ctx, nv_k8s_list_meta *meta, void **items,
		      size_t *n, nv_err *err)
{
	cJSON *root = parse_body(body, len, NV_K8S_BODY_MAX, k->what, err);
	const cJSON *array, *it;
	char *out = NULL;
	int count, rc;

	*items = NULL;
	*n = 0;
	if (!root)
		return err ? err->code : NV_EBACKEND;
	if ((rc = list_head(root, k->kind, meta, &array, &count, err)))
		goto done;
	if (count && !(out = calloc((size_t)count, k->item_size))) {
		rc = nv_err_set(err, NV_ENOMEM, NULL, "out of memory");
		goto done;
	}
	cJSON_ArrayForEach(it, array)
	{
		void *item = out + *n * k->item_size;

		rc = k->from(it, item, ctx, err);
		if (rc > 0) { /* left out */
			k->free_item(item);
			memset(item, 0, k->item_size);
			rc = 0;
			continue;
		}
		if (rc) {
			k->free_item(item);
			goto done;
		}
		(*n)++;
	}
done:
	cJSON_Delete(root);
	if (rc) {
		free_items(k, out, *n);
		out = NULL;
		*n = 0;
	}
	*items = out;
	return rc;
}

static int job_item(const cJSON *obj, void *item, const void *ctx, nv_err *err)
{
	(void)ctx;
	return job_from(obj, item, err);
}

static int pod_item(const cJSON *obj, void *item, const void *ctx, nv_err *err)
{
	(void)ctx;
	return pod_from(obj, item, err);
}

/* ctx: the only reason kept, or NULL */
static int event_item(const cJSON *obj, void *item, const void *ctx,
		      nv_err *err)
{
	const char *reason = ctx, *r = string_of(field(obj, "reason"));

	if (!cJSON_IsObject(obj))
		return nv_err_set(err, NV_EBACKEND, HINT_SERVER,
				  "Kubernetes answer: an event is not an "
				  "object");
	if (reason && (!r || strcmp(r, reason) != 0))
		return 1;
	return event_from(obj, item, err);
}

static void job_free_item(void *item)
{
	nv_k8s_job_free(item);
}

static void pod_free_item(void *item)
{
	nv_k8s_pod_free(item);
}

static void event_free_item(void *item)
{
	nv_k8s_event_free(item);
}

static const struct list_kind job_list = {
	"JobList", "a JobList", sizeof(nv_k8s_job), job_item, job_free_item};
static const struct list_kind pod_list = {
	"PodList", "a PodList", sizeof(nv_k8s_pod), pod_item, pod_free_item};
static const struct list_kind event_list = {"EventList", "an EventList",
					    sizeof(nv_k8s_event), event_item,
					    event_free_item};

void nv_k8s_job_list_free(nv_k8s_job_list *l)
{
	if (l) {
		free_items(&job_list, l->items, l->nitems);
		memset(l, 0, sizeof(*l));
	}
}

void nv_k8s_pod_list_free(nv_k8s_pod_list *l)
{
	if (l) {
		free_items(&pod_list, l->items, l->nitems);
		memset(l, 0, sizeof(*l));
	}
}

void nv_k8s_event_list_free(nv_k8s_event_list *l)
{
	if (l) {
		free_items(&event_list, l->items, l->nitems);
		memset(l, 0, sizeof(*l));
	}
}

int nv_k8s_parse_job_list(const char *body, size_t len, nv_k8s_job_list *out,
			  nv_err *err)
{
	void *items;
	int rc;

	memset(out, 0, sizeof(*out));
	rc = parse_list(&job_list, body, len, NULL, &out->meta, &items,
			&out->nitems, err);
	out->items = items;
	return rc;
}

int nv_k8s_parse_pod_list(const char *body, size_t len, nv_k8s_pod_list *out,
			  nv_err *err)
{
	void *items;
	int rc;

	memset(out, 0, sizeof(*out));
	rc = parse_list(&pod_list, body, len, NULL, &out->meta, &items,
			&out->nitems, err);
	out->items = items;
	return rc;
}

int nv_k8s_parse_event_list(const char *body, size_t len, const char *reason,
			    nv_k8s_event_list *out, nv_err *err)
{
	void *items;
	int rc;

	memset(out, 0, sizeof(*out));
	rc = parse_list(&event_list, body, len, reason, &out->meta, &items,
			&out->nitems, err);
	out->items = items;
	return rc;
}

/* ---- Status ------------------------------------------------------------ */

static int status_from(const cJSON *obj, nv_k8s_status *st, nv_err *err)
{
	const cJSON *details = field(obj, "details"), *it;
	const char *kind = string_of(field(obj, "kind"));

	memset(st, 0, sizeof(*st));
	if (kind && strcmp(kind, "Status") != 0)
		return nv_err_set(err, NV_EBACKEND, HINT_SERVER,
				  "Kubernetes answer: a %.40s where a Status "
				  "was expected",
				  kind);
	st->code = (int)number_in(field(obj, "code"), 0, 999, 0);
	copy_text(st->status, sizeof(st->status), field(obj, "status"));
	copy_text(st->reason, sizeof(st->reason), field(obj, "reason"));
	copy_text(st->message, sizeof(st->message), field(obj, "message"));
	copy_text(st->name, sizeof(st->name), field(details, "name"));
	copy_text(st->group, sizeof(st->group), field(details, "group"));
	copy_text(st->kind, sizeof(st->kind), field(details, "kind"));
	cJSON_ArrayForEach(it, field(details, "causes"))
	{
		nv_k8s_cause *c = &st->causes[st->ncauses];

		if (!cJSON_IsObject(it))
			continue;
		st->ncauses_total++;
		if (st->ncauses == NV_K8S_CAUSES_MAX)
			continue;
		copy_text(c->field, sizeof(c->field), field(it, "field"));
		copy_text(c->reason, sizeof(c->reason), field(it, "reason"));
		copy_text(c->message, sizeof(c->message), field(it, "message"));
		st->ncauses++;
	}
	if (!st->code && !st->reason[0] && !st->message[0])
		return nv_err_set(err, NV_EBACKEND, HINT_SERVER,
				  "Kubernetes answer: a Status with no code, "
				  "reason nor message");
	return 0;
}

int nv_k8s_parse_status(const char *body, size_t len, nv_k8s_status *out,
			nv_err *err)
{
	cJSON *root;
	int rc;

	memset(out, 0, sizeof(*out));
	if (!body || len == 0 || len > NV_K8S_BODY_MAX)
		return nv_err_set(err, NV_EBACKEND, HINT_SERVER,
				  "Kubernetes error answer: %s",
				  len ? "too long" : "empty");
	root = cJSON_ParseWithLength(body, len);
	if (!cJSON_IsObject(root)) {
		cJSON_Delete(root);
		return nv_err_set(err, NV_EBACKEND, HINT_SERVER,
				  "Kubernetes error answer is not a JSON "
				  "Status");
	}
	rc = status_from(root, out, err);
	cJSON_Delete(root);
	if (rc)
		memset(out, 0, sizeof(*out));
	return rc;
}

/* ---- watch streams ----------------------------------------------------- */

void nv_k8s_watch_init(nv_k8s_watch *w, int kind)
{
	memset(w, 0, sizeof(*w));
	w->kind = kind;
	nv_buf_init(&w->line, NV_K8S_EVENT_MAX);
}

void nv_k8s_watch_free(nv_k8s_watch *w)
{
	nv_buf_free(&w->line);
	w->failed = 1;
}

static int watch_fail(nv_k8s_watch *w, int rc)
{
	w->failed = 1;
	return rc;
}

static int watch_line(nv_k8s_watch *w, const char *text, size_t len,
		      nv_k8s_watch_cb cb, void *ctx, nv_err *err)
{
	static const char *const names[] = {"ADDED", "MODIFIED", "DELETED",
					    "BOOKMARK", "ERROR"};
	nv_k8s_watch_event ev;
	nv_k8s_job job;
	nv_k8s_pod pod;
	nv_k8s_status st;
	const cJSON *obj;
	const char *type;
	cJSON *root;
	int rc = 0;

	while (len && (text[len - 1] == '\r' || text[len - 1] == ' ' ||
		       text[len - 1] == '\t'))
		len--;
	if (len == 0)
		return 0;
	memset(&ev, 0, sizeof(ev));
	ev.kind = w->kind;
	root = cJSON_ParseWithLength(text, len);
	obj = field(root, "object");
	type = string_of(field(root, "type"));
	if (!cJSON_IsObject(root) || !type || !cJSON_IsObject(obj)) {
		cJSON_Delete(root);
		return watch_fail(w, nv_err_set(err, NV_EBACKEND, HINT_SERVER,
						"Kubernetes watch: event %zu "
						"is not {\"type\", \"object\"} "
						"JSON",
						w->events + 1));
	}
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (strcmp(type, names[i]) == 0)
			ev.type = (int)i + 1;
	switch (ev.type) {
	case NV_K8S_ADDED:
	case NV_K8S_MODIFIED:
	case NV_K8S_DELETED:
		if (w->kind == NV_K8S_JOB) {
			rc = job_from(obj, &job, err);
			ev.job = &job;
			ev.resource_version = job.resource_version;
		} else {
			rc = pod_from(obj, &pod, err);
			ev.pod = &pod;
			ev.resource_version = pod.resource_version;
		}
		break;
	case NV_K8S_BOOKMARK:
		/* not a whole object (its containers are null): only the
		 * resourceVersion counts */
		rc = copy_id(w->resource_version, sizeof(w->resource_version),
			     field(field(obj, "metadata"), "resourceVersion"),
			     "a bookmark's resourceVersion", err);
		if (!rc && !w->resource_version[0])
			rc = nv_err_set(err, NV_EBACKEND, HINT_SERVER,
					"Kubernetes watch: a bookmark without "
					"a resourceVersion");
		ev.resource_version = w->resource_version;
		break;
	case NV_K8S_ERROR:
		rc = status_from(obj, &st, err);
		ev.status = &st;
		ev.resource_version = "";
		break;
	default:
		rc = nv_err_set(err, NV_EBACKEND, HINT_SERVER,
				"Kubernetes watch: unknown event type '%.40s'",
				type);
	}
	cJSON_Delete(root);
	if (rc)
		return watch_fail(w, rc);
	w->events++;
	if (ev.type != NV_K8S_ERROR &&
	    ev.resource_version != w->resource_version)
		snprintf(w->resource_version, sizeof(w->resource_version), "%s",
			 ev.resource_version);
	rc = cb ? cb(ctx, &ev, err) : 0;
	if (ev.job)
		nv_k8s_job_free(&job);
	if (ev.pod)
		nv_k8s_pod_free(&pod);
	return rc ? watch_fail(w, rc) : 0;
}

static int watch_too_long(nv_k8s_watch *w, nv_err *err)
{
	return watch_fail(w, nv_err_set(err, NV_EBACKEND,
					"an object this large is not a Job "
					"or Pod navette made: check what "
					"writes into the namespace",
					"Kubernetes watch: an event over %zu "
					"bytes",
					(size_t)NV_K8S_EVENT_MAX));
}

int nv_k8s_watch_feed(nv_k8s_watch *w, const char *data, size_t len,
		      nv_k8s_watch_cb cb, void *ctx, nv_err *err)
{
	int rc;

	if (w->failed)
		return nv_err_set(err, NV_EBACKEND,
				  "list again, then watch from the list's "
				  "resourceVersion",
				  "Kubernetes watch: the stream already "
				  "failed");
	while (len) {
		const char *nl = memchr(data, '\n', len);
		size_t part = nl ? (size_t)(nl - data) : len;

		if (w->line.len + part > NV_K8S_EVENT_MAX)
			return watch_too_long(w, err);
		if (!nl) {
			if (nv_buf_append(&w->line, data, part))
				return watch_too_long(w, err);
			return 0;
		}
		if (w->line.len == 0) { /* the whole line is here: no copy */
			rc = watch_line(w, data, part, cb, ctx, err);
		} else {
			if (nv_buf_append(&w->line, data, part))
				return watch_too_long(w, err);
			rc = watch_line(w, w->line.data, w->line.len, cb, ctx,
					err);
			w->line.len = 0;
		}
		if (rc)
			return rc;
		data += part + 1;
		len -= part + 1;
	}
	return 0;
}

int nv_k8s_watch_finish(nv_k8s_watch *w, nv_k8s_watch_cb cb, void *ctx,
			nv_err *err)
{
	int rc;

	if (w->failed)
		return nv_err_set(err, NV_EBACKEND,
				  "list again, then watch from the list's "
				  "resourceVersion",
				  "Kubernetes watch: the stream already "
				  "failed");
	if (w->line.len == 0)
		return 0;
	rc = watch_line(w, w->line.data, w->line.len, cb, ctx, err);
	w->line.len = 0;
	return rc;
}
