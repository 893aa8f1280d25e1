/* slurmrestd client (see slurm.h): the JSON of each API version (one
 * table, `slurm_apis`: a submission built, jobs read), the classification
 * of errors and the map from Slurm's job states to navette's view. The
 * answers are hostile input: every string copied is bounded and cleaned of
 * control characters, every number range-checked. Pure C, no Lua. */
#include "jobs/slurm.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "jobs/record.h"
#include "jobs/slurm_internal.h"

/* ---- reading answers ---------------------------------------------------- */

void slurm_copy_text(char *dst, size_t cap, const cJSON *item)
{
	const char *s = cJSON_IsString(item) ? item->valuestring : NULL;
	size_t n = 0;

	dst[0] = '\0';
	if (!s)
		return;
	while (s[n] && n < cap - 1)
		n++;
	if (s[n]) /* cut: do not end inside a UTF-8 sequence */
		while (n > 0 && ((unsigned char)s[n] & 0xC0) == 0x80)
			n--;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];

		dst[i] = (c < 0x20 || c == 0x7f) ? '?' : (char)c;
	}
	dst[n] = '\0';
}

double slurm_number_in(const cJSON *item, double lo, double hi, double dflt)
{
	double v;

	if (!cJSON_IsNumber(item))
		return dflt;
	v = item->valuedouble;
	if (!isfinite(v) || v < lo || v > hi)
		return dflt;
	return v;
}

static const cJSON *field(const cJSON *obj, const char *name)
{
	return cJSON_GetObjectItemCaseSensitive(obj, name);
}

static cJSON *parse_body(const char *body, size_t len, nv_err *err)
{
	cJSON *root;

	if (!body || len == 0) {
		nv_err_set(err, NV_EBACKEND, "is this a slurmrestd endpoint?",
			   "slurmrestd sent an empty answer");
		return NULL;
	}
	root = cJSON_ParseWithLength(body, len);
	if (!cJSON_IsObject(root)) {
		cJSON_Delete(root);
		nv_err_set(err, NV_EBACKEND, "is this a slurmrestd endpoint?",
			   "slurmrestd's answer is not a JSON object");
		return NULL;
	}
	return root;
}

/* ---- API versions: everything that differs lives here ----------------- */

/* v0.0.38 (Slurm 22.05): job properties are sbatch's options by their
 * long names, underscored (the node list is "nodelist"; "exclude" is
 * unknown); gpus is a string; the environment must be a non-empty object;
 * job states are one word; exit_code is the raw wait status; numbers that
 * may be unset are null. Seen on slurmrestd 22.05.8. */
static int build_job_v0_0_38(cJSON *job, const nv_slurm_job_desc *d)
{
	cJSON *env;
	char gpus[16];
	int ok = 1;

#define ADD_STR(k, v)                                                          \
	do {                                                                   \
		if ((v) && !cJSON_AddStringToObject(job, k, v))                \
			ok = 0;                                                \
	} while (0)
#define ADD_NUM(k, v)                                                          \
	do {                                                                   \
		if (!cJSON_AddNumberToObject(job, k, (double)(v)))             \
			ok = 0;                                                \
	} while (0)
	ADD_STR("name", d->name);
	ADD_STR("comment", d->comment);
	ADD_STR("partition", d->partition);
	ADD_STR("account", d->account);
	ADD_STR("qos", d->qos);
	if (d->time_limit_min > 0)
		ADD_NUM("time_limit", d->time_limit_min);
	if (d->cpus > 0)
		ADD_NUM("cpus_per_task", d->cpus);
	if (d->memory_mb > 0)
		ADD_NUM("memory_per_node", d->memory_mb);
	if (d->gpus > 0) {
		snprintf(gpus, sizeof(gpus), "%d", d->gpus);
		if (!cJSON_AddStringToObject(job, "gpus", gpus))
			ok = 0;
	}
	ADD_STR("gres", d->gres);
	ADD_STR("nodelist", d->nodelist);
	ADD_STR("current_working_directory", d->working_directory);
	ADD_STR("standard_output", d->standard_output);
	ADD_STR("standard_error", d->standard_error);
	/* Flags are sbatch's: their presence sets them, whatever the value
	 * ("requeue": false still allows requeue, "hold": false releases).
	 * So only true is ever sent, and no_requeue says "no". */
	if (d->requeue == 1 && !cJSON_AddBoolToObject(job, "requeue", 1))
		ok = 0;
	if (d->requeue == 0 && !cJSON_AddBoolToObject(job, "no_requeue", 1))
		ok = 0;
	if (d->hold && !cJSON_AddBoolToObject(job, "hold", 1))
		ok = 0;
	if (d->after) {
		/* afterok:12:13, and a job whose dependency can never be
		 * satisfied (one failed or was cancelled) is ended by Slurm
		 * instead of pending for ever */
		size_t n = strlen(d->after) + sizeof("afterok:");
		char *dep = malloc(n);

		if (!dep)
			return -1;
		snprintf(dep, n, "afterok:%s", d->after);
		for (char *c = dep; *c; c++)
			if (*c == ',')
				*c = ':';
		if (!cJSON_AddStringToObject(job, "dependency", dep) ||
		    !cJSON_AddBoolToObject(job, "kill_on_invalid_dependency",
					   1))
			ok = 0;
		free(dep);
	}
	ADD_STR("array", d->array);
#undef ADD_STR
#undef ADD_NUM
	env = cJSON_AddObjectToObject(job, "environment");
	if (!env)
		return -1;
	for (size_t i = 0; i < d->nenv; i++) {
		const char *eq = strchr(d->env[i], '=');
		char name[130];
		size_t n = (size_t)(eq - d->env[i]);

		memcpy(name, d->env[i], n);
		name[n] = '\0';
		if (!cJSON_AddStringToObject(env, name, eq + 1))
			ok = 0;
	}
	/* slurmrestd refuses a missing or empty environment */
	if (d->nenv == 0 &&
	    !cJSON_AddStringToObject(env, "PATH", "/usr/bin:/bin"))
		ok = 0;
	return ok ? 0 : -1;
}

/* Raw wait status -> exit code or signal. */
static void wait_status(double raw, nv_slurm_job *job)
{
	unsigned st = raw >= 0 && raw <= 0xffff ? (unsigned)raw : 0;

	if ((st & 0x7f) == 0) {
		job->exit_code = (int)((st >> 8) & 0xff);
		job->exit_signal = 0;
	} else {
		job->exit_code = -1;
		job->exit_signal = (int)(st & 0x7f);
	}
}

static int parse_job_v0_0_38(const cJSON *o, nv_slurm_job *job)
{
	double id = slurm_number_in(field(o, "job_id"), 1, 4294967295.0, 0);

	if (!id)
		return -1;
	job->job_id = (long long)id;
	slurm_copy_text(job->name, sizeof(job->name), field(o, "name"));
	slurm_copy_text(job->comment, sizeof(job->comment),
			field(o, "comment"));
	slurm_copy_text(job->user, sizeof(job->user), field(o, "user_name"));
	slurm_copy_text(job->partition, sizeof(job->partition),
			field(o, "partition"));
	slurm_copy_text(job->state, sizeof(job->state), field(o, "job_state"));
	slurm_copy_text(job->reason, sizeof(job->reason),
			field(o, "state_reason"));
	slurm_copy_text(job->state_description, sizeof(job->state_description),
			field(o, "state_description"));
	slurm_copy_text(job->nodes, sizeof(job->nodes), field(o, "nodes"));
	slurm_copy_text(job->batch_host, sizeof(job->batch_host),
			field(o, "batch_host"));
	wait_status(slurm_number_in(field(o, "exit_code"), 0, 0xffff, 0), job);
	job->restarts =
		(int)slurm_number_in(field(o, "restart_cnt"), 0, 1e6, 0);
	job->requeue = cJSON_IsTrue(field(o, "requeue"));
	job->time_limit_min =
		(long)slurm_number_in(field(o, "time_limit"), 0, 1e9, 0);
	job->submit_time = slurm_number_in(field(o, "submit_time"), 0, 1e11, 0);
	job->start_time = slurm_number_in(field(o, "start_time"), 0, 1e11, 0);
	job->end_time = slurm_number_in(field(o, "end_time"), 0, 1e11, 0);
	job->array_job_id = (long long)slurm_number_in(field(o, "array_job_id"),
						       0, 4294967295.0, 0);
	job->array_task_id = (long)slurm_number_in(field(o, "array_task_id"), 0,
						   4294967295.0, -1);
	slurm_copy_text(job->array_tasks, sizeof(job->array_tasks),
			field(o, "array_task_string"));
	return job->state[0] ? 0 : -1;
}

/* Newest first: discovery tries them in this order. URLs are the same
 * (/slurm/VERSION/ping, job/submit, job/ID, jobs) in all of them. */
const struct slurm_api slurm_apis[] = {
	{"v0.0.38", NULL, build_job_v0_0_38, parse_job_v0_0_38,
	 "slurmrestd v0.0.38 has no requeue; Slurm requeues a job submitted "
	 "with requeue = true after a node failure or preemption by itself, "
	 "otherwise submit the definition again"},
};
const size_t slurm_api_count = sizeof(slurm_apis) / sizeof(slurm_apis[0]);

static const char *const api_names[] = {"v0.0.38", NULL};

const char *const *nv_slurm_api_versions(void)
{
	return api_names;
}

const struct slurm_api *slurm_api_find(const char *version, nv_err *err)
{
	for (size_t i = 0; version && i < slurm_api_count; i++)
		if (strcmp(slurm_apis[i].name, version) == 0)
			return &slurm_apis[i];
	nv_err_set(err, NV_EINVAL, "leave the version out to discover it",
		   "Slurm REST API version '%.32s' is not one navette speaks "
		   "(v0.0.38)",
		   version ? version : "(none)");
	return NULL;
}

int nv_slurm_build_submit(const char *version, const char *script,
			  const nv_slurm_job_desc *d, char **json_out,
			  nv_err *err)
{
	const struct slurm_api *api = slurm_api_find(version, err);
	cJSON *root, *job;
	char *text;

	*json_out = NULL;
	if (!api)
		return NV_EINVAL;
	if (!script || strncmp(script, "#!", 2) != 0)
		return nv_err_set(err, NV_EINVAL, NULL,
				  "a batch script must start with #!");
	if (strlen(script) > NV_SLURM_SCRIPT_MAX)
		return nv_err_set(err, NV_EINVAL, NULL,
				  "the batch script is over %zu bytes",
				  NV_SLURM_SCRIPT_MAX);
	if (!d || !d->name)
		return nv_err_set(err, NV_EINVAL, "give the job a name",
				  "a Slurm job needs a name");
	if (!d->working_directory)
		return nv_err_set(err, NV_EINVAL,
				  "give the working directory on the node",
				  "a Slurm job needs a working directory");
	root = cJSON_CreateObject();
	if (!root || !cJSON_AddStringToObject(root, "script", script) ||
	    !(job = cJSON_AddObjectToObject(root, "job")) ||
	    api->build_job(job, d)) {
		cJSON_Delete(root);
		return nv_err_set(err, NV_ENOMEM, NULL, "out of memory");
	}
	text = cJSON_PrintUnformatted(root);
	cJSON_Delete(root);
	if (!text)
		return nv_err_set(err, NV_ENOMEM, NULL, "out of memory");
	*json_out = text;
	return 0;
}

int nv_slurm_parse_submit(const char *version, const char *body, size_t len,
			  long long *job_id, nv_err *err)
{
	cJSON *root;
	double id;

	*job_id = 0;
	if (!slurm_api_find(version, err))
		return NV_EINVAL;
	root = parse_body(body, len, err);
	if (!root)
		return NV_EBACKEND;
	id = slurm_number_in(field(root, "job_id"), 1, 4294967295.0, 0);
	cJSON_Delete(root);
	if (!id)
		return nv_err_set(err, NV_EBACKEND, NULL,
				  "slurmrestd's answer to a submit has no "
				  "job id");
	*job_id = (long long)id;
	return 0;
}

int nv_slurm_parse_jobs(const char *version, const char *body, size_t len,
			size_t max_jobs, nv_slurm_job **jobs, size_t *njobs,
			nv_err *err)
{
	const struct slurm_api *api = slurm_api_find(version, err);
	const cJSON *list, *item;
	cJSON *root;
	nv_slurm_job *out = NULL;
	size_t n = 0, count;
	int rc = 0;

	*jobs = NULL;
	*njobs = 0;
	if (!api)
		return NV_EINVAL;
	root = parse_body(body, len, err);
	if (!root)
		return NV_EBACKEND;
	list = field(root, "jobs");
	if (!cJSON_IsArray(list)) {
		rc = nv_err_set(err, NV_EBACKEND, NULL,
				"slurmrestd's answer has no job list");
		goto out;
	}
	count = (size_t)cJSON_GetArraySize(list);
	if (max_jobs && count > max_jobs) {
		rc = nv_err_set(err, NV_ENOMEM, NULL,
				"slurmrestd listed %zu jobs, over the cap of "
				"%zu",
				count, max_jobs);
		goto out;
	}
	out = calloc(count ? count : 1, sizeof(*out));
	if (!out) {
		rc = nv_err_set(err, NV_ENOMEM, NULL, "out of memory");
		goto out;
	}
	cJSON_ArrayForEach(item, list)
	{
		if (!cJSON_IsObject(item) || api->parse_job(item, &out[n])) {
			rc = nv_err_set(err, NV_EBACKEND,
					"the server misbehaves, or speaks "
					"another API version",
					"slurmrestd listed a job without a "
					"valid id or state (entry %zu)",
					n + 1);
			goto out;
		}
		n++;
	}
	*jobs = out;
	*njobs = n;
	out = NULL;
out:
	free(out);
	cJSON_Delete(root);
	return rc;
}

/* ---- errors ------------------------------------------------------------- */

const char slurm_identity_hint[] =
	"check the token/key (the profile's Slurm credential), the clock "
	"(the token's iat/exp against the cluster's), the user (the token's "
	"user must be the profile's Slurm user); then that slurmctld runs";

int nv_slurm_classify(long status, const char *body, size_t len,
		      const char *what, int *slurm_errno, nv_err *err)
{
	const cJSON *errors, *list, *e;
	cJSON *root = NULL;
	char first[300] = "";
	int parse_error = 0, not_found = 0, done = 0, unspecified = 0,
	    specific = 0, first_errno = 0;
	int rc;

	if (slurm_errno)
		*slurm_errno = 0;
	if (!what)
		what = "request";
	if (status >= 200 && status < 300)
		return 0;
	if (status == 401 || status == 403)
		return nv_err_set(err, NV_EREFUSED, slurm_identity_hint,
				  "slurmrestd refused the %s (HTTP %ld): no "
				  "or bad user name and token",
				  what, status);
	if (body && len)
		root = cJSON_ParseWithLength(body, len);
	errors = cJSON_IsObject(root) ? field(root, "errors") : NULL;
	list = cJSON_IsArray(errors) ? errors : NULL;
	cJSON_ArrayForEach(e, list)
	{
		const cJSON *num = field(e, "error_number");
		char text[NV_SLURM_TEXT_MAX], desc[NV_SLURM_TEXT_MAX];
		int code;

		if (!cJSON_IsObject(e))
			continue;
		if (!cJSON_IsNumber(num))
			num = field(e, "error_code");
		code = (int)slurm_number_in(num, -1e6, 1e6, -1);
		slurm_copy_text(text, sizeof(text), field(e, "error"));
		slurm_copy_text(desc, sizeof(desc), field(e, "description"));
		/* The message joins what the errors say, leaving out the
		 * generic "Failure during parsing" that follows the real
		 * one. */
		if (desc[0] || (text[0] && code != 9001)) {
			size_t used = strlen(first);

			snprintf(first + used, sizeof(first) - used,
				 "%s%.120s%s%.170s", used ? "; " : "",
				 text[0] ? text : "",
				 text[0] && desc[0] ? ": " : "", desc);
		}
		if (first_errno <= 0 && code > 0 && code != 9001)
			first_errno = code;
		if (code == 9001 || code == 9202 || code == 9003 ||
		    strncmp(desc, "Unknown key", 11) == 0 ||
		    strncmp(desc, "Disabled key", 12) == 0)
			parse_error = 1;
		else if (code == NV_SLURM_ERRNO_INVALID_JOB_ID)
			not_found = 1;
		else if (code == NV_SLURM_ERRNO_ALREADY_DONE)
			done = 1;
		else if (code == -1 &&
			 (strcmp(text, "Unspecified error") == 0 || !text[0]))
			unspecified = 1;
		else if (code > 0)
			specific = 1;
	}
	cJSON_Delete(root);
	if (slurm_errno)
		*slurm_errno = first_errno > 0 ? first_errno : 0;
	if (parse_error)
		rc = nv_err_set(err, NV_EINVAL,
				"a field navette sent is not accepted by this "
				"slurmrestd; report it with the API version",
				"slurmrestd could not read the %s: %s", what,
				first);
	else if (not_found)
		rc = nv_err_set(err, NV_ENOTFOUND,
				"Slurm forgets ended jobs after MinJobAge; "
				"check the job id",
				"Slurm does not know the job (%s)", first);
	else if (done) {
		if (slurm_errno)
			*slurm_errno = NV_SLURM_ERRNO_ALREADY_DONE;
		rc = nv_err_set(err, NV_EREFUSED, NULL,
				"the job has already ended (%s)", first);
	} else if (specific)
		rc = nv_err_set(err, NV_EREFUSED,
				"check partition, account, qos, resources and "
				"nodes against the cluster (sinfo, sacctmgr)",
				"slurmctld refused the %s: %s", what, first);
	else if (status == 404)
		rc = nv_err_set(err, NV_ENOTFOUND,
				"check the endpoint and the API version",
				"slurmrestd has no such URL (HTTP 404) for "
				"the %s",
				what);
	else if (unspecified && status == 500)
		rc = nv_err_set(err, NV_EREFUSED, slurm_identity_hint,
				"slurmrestd could not act for the user: "
				"slurmctld refused the token or could not be "
				"reached (%s: %s)",
				what, first);
	else
		rc = nv_err_set(err, NV_EBACKEND,
				"check slurmrestd's and slurmctld's logs",
				"slurmrestd answered HTTP %ld to the %s%s%s",
				status, what, first[0] ? ": " : "", first);
	return rc;
}

/* ---- state mapping ------------------------------------------------------ */

static int starts(const char *s, const char *prefix)
{
	return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* Pending reasons that will not clear without someone acting. */
static const char *pending_hint(const char *reason, int *blocked)
{
	*blocked = 1;
	if (strcmp(reason, "JobHeldUser") == 0 ||
	    strcmp(reason, "JobHeldAdmin") == 0)
		return "the job is held: release it (scontrol release) or "
		       "cancel it";
	if (starts(reason, "ReqNodeNotAvail") ||
	    strcmp(reason, "NodeDown") == 0)
		return "a node the job asks for is down, drained or reserved: "
		       "check sinfo, or choose other nodes";
	if (starts(reason, "Partition") &&
	    (strstr(reason, "Down") || strstr(reason, "Inactive")))
		return "the partition is down or inactive: choose another "
		       "partition or ask the cluster's admins";
	if (strcmp(reason, "InvalidAccount") == 0 ||
	    strcmp(reason, "InvalidQOS") == 0 ||
	    strcmp(reason, "AccountNotAllowed") == 0 ||
	    strcmp(reason, "QOSNotAllowed") == 0 ||
	    strcmp(reason, "PartitionConfig") == 0 ||
	    strcmp(reason, "BadConstraints") == 0 ||
	    strcmp(reason, "DependencyNeverSatisfied") == 0)
		return "the job cannot start as asked (account, qos, "
		       "partition or constraints): fix the profile and "
		       "submit again";
	if (strstr(reason, "Limit") || starts(reason, "Assoc") ||
	    starts(reason, "QOS") || starts(reason, "MaxCpu"))
		return "a quota or limit holds the job (account, QOS or "
		       "partition): wait, or check the limits with the "
		       "cluster's admins";
	*blocked = 0;
	return "";
}

/* A job that goes on: state is the queue's (queued, running). */
static void view_wait(nv_slurm_view *v, const char *state,
		      nv_record_phase phase)
{
	v->done = 0;
	v->state = state;
	v->phase = nv_record_phase_name(phase);
}

/* A job that ended, and the phase its failure belongs to (a success's
 * phase is its end). */
static void view_end(nv_slurm_view *v, nv_record_state state,
		     nv_record_phase phase)
{
	v->done = 1;
	v->state = nv_record_state_name(state);
	v->phase = state == NV_STATE_SUCCEEDED ? v->state
					       : nv_record_phase_name(phase);
}

void nv_slurm_map(const nv_slurm_job *job, int requeue_allowed,
		  nv_slurm_view *v)
{
	const char *st = job->state, *reason = job->reason;
	const char *node = job->nodes[0] ? job->nodes : "its node";
	/* A pending job's start_time is Slurm's estimate, so "it ran" is
	 * read from its allocated nodes. */
	nv_record_phase ran =
		job->nodes[0] ? NV_PHASE_RUNNING : NV_PHASE_ACCEPTED;
	int requeue = requeue_allowed >= 0 ? requeue_allowed : job->requeue;

	memset(v, 0, sizeof(*v));
	v->exit_code = -1;
	snprintf(v->detail, sizeof(v->detail), "%s%s%s%s", st,
		 reason[0] && strcmp(reason, "None") ? " (" : "",
		 reason[0] && strcmp(reason, "None") ? reason : "",
		 reason[0] && strcmp(reason, "None") ? ")" : "");

	if (strcmp(st, "PENDING") == 0 || strcmp(st, "REQUEUED") == 0 ||
	    strcmp(st, "REQUEUE_FED") == 0 || strcmp(st, "REQUEUE_HOLD") == 0 ||
	    strcmp(st, "RESV_DEL_HOLD") == 0) {
		view_wait(v, "queued", NV_PHASE_ACCEPTED);
		if (strcmp(st, "REQUEUE_HOLD") == 0 ||
		    strcmp(st, "RESV_DEL_HOLD") == 0) {
			v->blocked = 1;
			snprintf(v->hint, sizeof(v->hint),
				 "the job was put back in the queue held: "
				 "release it (scontrol release) or cancel it");
		} else {
			snprintf(v->hint, sizeof(v->hint), "%s",
				 pending_hint(reason, &v->blocked));
		}
		if (job->restarts > 0 && !v->hint[0])
			snprintf(v->hint, sizeof(v->hint),
				 "Slurm put the job back in the queue (restart "
				 "%d); it starts again when resources allow",
				 job->restarts);
	} else if (strcmp(st, "CONFIGURING") == 0) {
		view_wait(v, "queued", NV_PHASE_ACCEPTED);
		snprintf(v->hint, sizeof(v->hint),
			 "nodes are allocated and being prepared");
	} else if (strcmp(st, "RUNNING") == 0 ||
		   strcmp(st, "COMPLETING") == 0 ||
		   strcmp(st, "RESIZING") == 0 ||
		   strcmp(st, "SIGNALING") == 0 ||
		   strcmp(st, "STAGE_OUT") == 0) {
		view_wait(v, "running", NV_PHASE_RUNNING);
	} else if (strcmp(st, "SUSPENDED") == 0 || strcmp(st, "STOPPED") == 0) {
		view_wait(v, "running", NV_PHASE_RUNNING);
		snprintf(v->hint, sizeof(v->hint),
			 "the job is suspended (by an admin or a preemption): "
			 "it goes on when resumed");
	} else if (strcmp(st, "COMPLETED") == 0) {
		view_end(v, NV_STATE_SUCCEEDED, NV_PHASE_RUNNING);
		v->exit_code = job->exit_code;
	} else if (strcmp(st, "FAILED") == 0) {
		v->exit_code = job->exit_code;
		if (strcmp(reason, "JobLaunchFailure") == 0 ||
		    starts(reason, "Prolog") ||
		    strcmp(reason, "BadConstraints") == 0) {
			view_end(v, NV_STATE_FAILED, NV_PHASE_ACCEPTED);
			snprintf(
				v->hint, sizeof(v->hint),
				"Slurm could not start the batch script on %s: "
				"check that the working directory and output "
				"paths exist there and the user may write "
				"them",
				node);
		} else if (job->exit_signal) {
			view_end(v, NV_STATE_FAILED, NV_PHASE_RUNNING);
			snprintf(v->hint, sizeof(v->hint),
				 "the job was killed by signal %d: check the "
				 "command, its memory and the node's logs",
				 job->exit_signal);
		} else {
			view_end(v, NV_STATE_FAILED, NV_PHASE_RUNNING);
			snprintf(v->hint, sizeof(v->hint),
				 "the command exited with code %d: check its "
				 "parameters, data and dependencies (see the "
				 "log)",
				 job->exit_code);
		}
	} else if (strcmp(st, "TIMEOUT") == 0) {
		view_end(v, NV_STATE_FAILED, NV_PHASE_RUNNING);
		snprintf(v->hint, sizeof(v->hint),
			 "the job reached its time limit (%ld min): raise "
			 "resources.time_limit, or make the job shorter",
			 job->time_limit_min);
	} else if (strcmp(st, "OUT_OF_MEMORY") == 0) {
		view_end(v, NV_STATE_FAILED, NV_PHASE_RUNNING);
		snprintf(v->hint, sizeof(v->hint),
			 "the job ran out of memory: raise resources.memory, "
			 "or use less");
	} else if (strcmp(st, "NODE_FAIL") == 0 ||
		   strcmp(st, "PREEMPTED") == 0) {
		int preempted = st[0] == 'P';

		snprintf(v->detail, sizeof(v->detail), "%.30s on %.200s", st,
			 node);
		if (requeue) {
			view_wait(v, "queued", NV_PHASE_ACCEPTED);
			snprintf(v->hint, sizeof(v->hint),
				 "%s; Slurm puts the job back in the queue",
				 preempted ? "the job was preempted"
					   : "its node failed");
		} else {
			view_end(v, NV_STATE_FAILED, ran);
			snprintf(v->hint, sizeof(v->hint),
				 "%s: submit it again (on another node), or "
				 "allow requeue in the recipe",
				 preempted ? "the job was preempted by another "
					     "one"
					   : "the node failed under the job");
		}
	} else if (strcmp(st, "BOOT_FAIL") == 0) {
		view_end(v, NV_STATE_FAILED, NV_PHASE_ACCEPTED);
		snprintf(v->hint, sizeof(v->hint),
			 "the node failed to boot for the job: submit again, "
			 "and tell the cluster's admins");
	} else if (strcmp(st, "DEADLINE") == 0) {
		view_end(v, NV_STATE_FAILED, ran);
		snprintf(v->hint, sizeof(v->hint),
			 "the job could not end before its deadline");
	} else if (strcmp(st, "CANCELLED") == 0 || strcmp(st, "REVOKED") == 0) {
		view_end(v, NV_STATE_CANCELLED, ran);
		if (job->nodes[0] && job->exit_code >= 0 && !job->exit_signal)
			v->exit_code = job->exit_code;
	} else if (strcmp(st, "SPECIAL_EXIT") == 0) {
		view_end(v, NV_STATE_FAILED, NV_PHASE_RUNNING);
		v->exit_code = job->exit_code;
		snprintf(v->hint, sizeof(v->hint),
			 "the job ended with a special exit and was held: "
			 "see its log");
	} else {
		view_wait(v, "queued", NV_PHASE_ACCEPTED);
		snprintf(v->hint, sizeof(v->hint),
			 "Slurm state '%s' is unknown to navette: check "
			 "squeue -j %lld",
			 st[0] ? st : "(none)", job->job_id);
	}
}
