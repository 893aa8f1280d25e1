/* slurmrestd client and Slurm state mapping (see slurm.h). The parts that
 * depend on the API version sit in one table (`apis` below); the rest —
 * descriptions, tokens, error classification, the state map — is shared.
 * Answers are hostile input: every string copied is bounded and cleaned of
 * control characters, every number range-checked. Pure C, no Lua. */
#include "jobs/slurm.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <curl/curl.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>

#include "core/buf.h"
#include "core/clock.h"
#include "core/jobid.h"
#include "creds/jwt.h"

#define URL_MAX       2048
#define LIST_BODY_MAX ((size_t)64 * 1024 * 1024)
#define TOKEN_RENEW_MARGIN                                                     \
	30.0             /* seconds before exp a minted token is renewed */
#define CLOCK_SLACK 60.0 /* seconds of skew tolerated on a token's life */

/* ---- job descriptions ------------------------------------------------ */

static const char *const desc_keys[] = {
	"name",   "comment",    "partition", "account",
	"qos",    "time_limit", "cpus",      "memory",
	"gpus",   "gres",       "nodes",     "working_directory",
	"stdout", "stderr",     "requeue",   "hold",
	NULL};

const char *const *nv_slurm_desc_keys(void)
{
	return desc_keys;
}

void nv_slurm_desc_init(nv_slurm_job_desc *d)
{
	memset(d, 0, sizeof(*d));
	d->requeue = -1;
}

void nv_slurm_desc_free(nv_slurm_job_desc *d)
{
	if (!d)
		return;
	free(d->name);
	free(d->comment);
	free(d->partition);
	free(d->account);
	free(d->qos);
	free(d->gres);
	free(d->nodelist);
	free(d->working_directory);
	free(d->standard_output);
	free(d->standard_error);
	for (size_t i = 0; i < d->nenv; i++) {
		/* values may be presigned URLs: wipe them */
		OPENSSL_cleanse(d->env[i], strlen(d->env[i]));
		free(d->env[i]);
	}
	free(d->env);
	nv_slurm_desc_init(d);
}

/* A whole non-negative decimal number, at most max. */
static int parse_count(const char *v, long long max, long long *out)
{
	char *end;
	long long n;

	if (!v || !isdigit((unsigned char)v[0]))
		return -1;
	errno = 0;
	n = strtoll(v, &end, 10);
	if (errno || *end || n < 0 || n > max)
		return -1;
	*out = n;
	return 0;
}

/* "3600", "90s", "30m", "2h", "1d" -> seconds. */
static int parse_seconds(const char *v, double *out)
{
	char *end;
	double n;

	if (!v || !(isdigit((unsigned char)v[0]) || v[0] == '.'))
		return -1;
	errno = 0;
	n = strtod(v, &end);
	if (errno || !isfinite(n) || n < 0)
		return -1;
	if (*end == 's' && !end[1])
		;
	else if (*end == 'm' && !end[1])
		n *= 60;
	else if (*end == 'h' && !end[1])
		n *= 3600;
	else if (*end == 'd' && !end[1])
		n *= 86400;
	else if (*end)
		return -1;
	*out = n;
	return 0;
}

/* "4294967296", "512M", "4GiB", "1.5G" -> bytes. */
static int parse_bytes(const char *v, double *out)
{
	static const char units[] = "KMGT";
	char *end;
	double n, mult = 1;
	const char *u;

	if (!v || !(isdigit((unsigned char)v[0]) || v[0] == '.'))
		return -1;
	errno = 0;
	n = strtod(v, &end);
	if (errno || !isfinite(n) || n < 0)
		return -1;
	if (*end) {
		u = strchr(units, toupper((unsigned char)*end));
		if (!u)
			return -1;
		for (const char *p = units; p <= u; p++)
			mult *= 1024;
		end++;
		if (*end == 'i' && end[1] == 'B' && !end[2])
			;
		else if ((*end == 'B' || *end == 'b') && !end[1])
			;
		else if (*end)
			return -1;
	}
	*out = n * mult;
	return 0;
}

static int parse_flag(const char *v, int *out)
{
	if (v && (strcmp(v, "true") == 0 || strcmp(v, "1") == 0)) {
		*out = 1;
		return 0;
	}
	if (v && (strcmp(v, "false") == 0 || strcmp(v, "0") == 0)) {
		*out = 0;
		return 0;
	}
	return -1;
}

/* Printable, no line breaks, 1..max bytes. */
static int text_ok(const char *v, size_t max)
{
	size_t n = v ? strlen(v) : 0;

	if (n == 0 || n > max)
		return 0;
	for (const unsigned char *p = (const unsigned char *)v; *p; p++)
		if (*p < 0x20 || *p == 0x7f)
			return 0;
	return 1;
}

/* Slurm names (partition, account, qos, gres, node lists). */
static int word_ok(const char *v, const char *extra)
{
	if (!text_ok(v, NV_SLURM_TEXT_MAX - 1))
		return 0;
	for (const char *p = v; *p; p++)
		if (!isalnum((unsigned char)*p) && !strchr("_-.", *p) &&
		    !strchr(extra, *p))
			return 0;
	return 1;
}

static int set_text(char **field, const char *v)
{
	char *copy = strdup(v);

	if (!copy)
		return -1;
	free(*field);
	*field = copy;
	return 0;
}

static int desc_bad(nv_err *err, const char *key, const char *value,
		    const char *what)
{
	return nv_err_set(err, NV_EINVAL, what,
			  "Slurm resource '%s' = '%.80s' is not valid", key,
			  value ? value : "(nothing)");
}

int nv_slurm_desc_set(nv_slurm_job_desc *d, const char *key, const char *value,
		      nv_err *err)
{
	char **text = NULL;
	const char *extra = NULL;
	long long n;
	double x;

	if (!key)
		return nv_err_set(err, NV_EINVAL, NULL, "no resource name");
	if (!value)
		return desc_bad(err, key, value, "give a value");
	if (strcmp(key, "name") == 0 || strcmp(key, "comment") == 0) {
		if (!text_ok(value, NV_SLURM_TEXT_MAX - 1))
			return desc_bad(err, key, value,
					"1 to 255 printable characters, no "
					"line break");
		text = key[0] == 'n' ? &d->name : &d->comment;
	} else if (strcmp(key, "partition") == 0) {
		text = &d->partition, extra = "";
	} else if (strcmp(key, "account") == 0) {
		text = &d->account, extra = "";
	} else if (strcmp(key, "qos") == 0) {
		text = &d->qos, extra = "";
	} else if (strcmp(key, "gres") == 0) {
		text = &d->gres, extra = ":,";
	} else if (strcmp(key, "nodes") == 0) {
		text = &d->nodelist, extra = ",[]";
	} else if (strcmp(key, "working_directory") == 0 ||
		   strcmp(key, "stdout") == 0 || strcmp(key, "stderr") == 0) {
		if (value[0] != '/' || !text_ok(value, 4095))
			return desc_bad(err, key, value,
					"give an absolute path on the node");
		text = key[0] == 'w'   ? &d->working_directory
		       : key[3] == 'o' ? &d->standard_output
				       : &d->standard_error;
	} else if (strcmp(key, "time_limit") == 0) {
		if (parse_seconds(value, &x) || x <= 0 || x > 365.0 * 86400)
			return desc_bad(err, key, value,
					"give seconds, or a number with "
					"s/m/h/d (\"90m\"), up to a year");
		d->time_limit_min = (long)ceil(x / 60);
		return 0;
	} else if (strcmp(key, "memory") == 0) {
		if (parse_bytes(value, &x) || x <= 0 || x > 1e15)
			return desc_bad(err, key, value,
					"give bytes, or a number with "
					"K/M/G/T (\"4GiB\")");
		d->memory_mb = (long long)ceil(x / (1024.0 * 1024.0));
		return 0;
	} else if (strcmp(key, "cpus") == 0) {
		if (parse_count(value, 65536, &n) || n < 1)
			return desc_bad(err, key, value,
					"give a whole number of CPUs >= 1");
		d->cpus = (int)n;
		return 0;
	} else if (strcmp(key, "gpus") == 0) {
		if (parse_count(value, 4096, &n))
			return desc_bad(err, key, value,
					"give a whole number of GPUs >= 0");
		d->gpus = (int)n;
		return 0;
	} else if (strcmp(key, "requeue") == 0 || strcmp(key, "hold") == 0) {
		int flag;

		if (parse_flag(value, &flag))
			return desc_bad(err, key, value, "give true or false");
		if (key[0] == 'r')
			d->requeue = flag;
		else
			d->hold = flag;
		return 0;
	} else {
		char known[512];
		size_t used = 0;

		known[0] = '\0';
		for (int i = 0; desc_keys[i]; i++)
			used += (size_t)snprintf(known + used,
						 sizeof(known) - used, "%s%s",
						 i ? ", " : "", desc_keys[i]);
		return nv_err_set(err, NV_EINVAL, known,
				  "unknown Slurm resource '%.64s'; known: "
				  "see the hint",
				  key);
	}
	if (extra && !word_ok(value, extra))
		return desc_bad(err, key, value,
				"letters, digits and _-. only (and the "
				"separators of lists)");
	if (set_text(text, value))
		return nv_err_set(err, NV_ENOMEM, NULL, "out of memory");
	return 0;
}

int nv_slurm_desc_setenv(nv_slurm_job_desc *d, const char *name,
			 const char *value, nv_err *err)
{
	size_t nlen = name ? strlen(name) : 0, vlen;
	char *entry, **grown;

	if (nlen == 0 || nlen > 128 ||
	    !(isalpha((unsigned char)name[0]) || name[0] == '_'))
		goto bad;
	for (const char *p = name; *p; p++)
		if (!isalnum((unsigned char)*p) && *p != '_')
			goto bad;
	if (!value)
		return nv_err_set(err, NV_EINVAL, NULL,
				  "environment variable %s has no value", name);
	/* the node's launcher makes folders and keys of it */
	if (strcmp(name, "NAVETTE_JOB_ID") == 0 && nv_job_id_check(value, err))
		return err->code;
	vlen = strlen(value);
	if (vlen > 64 * 1024)
		return nv_err_set(err, NV_EINVAL, NULL,
				  "environment variable %s is over 64 KiB",
				  name);
	entry = malloc(nlen + vlen + 2);
	if (!entry)
		return nv_err_set(err, NV_ENOMEM, NULL, "out of memory");
	memcpy(entry, name, nlen);
	entry[nlen] = '=';
	memcpy(entry + nlen + 1, value, vlen + 1);
	for (size_t i = 0; i < d->nenv; i++) {
		if (strncmp(d->env[i], name, nlen) == 0 &&
		    d->env[i][nlen] == '=') {
			OPENSSL_cleanse(d->env[i], strlen(d->env[i]));
			free(d->env[i]);
			d->env[i] = entry;
			return 0;
		}
	}
	if (d->nenv >= NV_SLURM_ENV_MAX) {
		OPENSSL_cleanse(entry, nlen + vlen + 1);
		free(entry);
		return nv_err_set(err, NV_EINVAL, NULL,
				  "more than %d environment variables",
				  NV_SLURM_ENV_MAX);
	}
	grown = realloc(d->env, (d->nenv + 1) * sizeof(*grown));
	if (!grown) {
		OPENSSL_cleanse(entry, nlen + vlen + 1);
		free(entry);
		return nv_err_set(err, NV_ENOMEM, NULL, "out of memory");
	}
	d->env = grown;
	d->env[d->nenv++] = entry;
	return 0;
bad:
	return nv_err_set(err, NV_EINVAL, "letters, digits and _",
			  "bad environment variable name '%.64s'",
			  name ? name : "");
}

/* ---- reading answers ---------------------------------------------------- */

/* Copies a JSON string into dst (cap bytes), cut at a character boundary,
 * control characters replaced by '?'. Anything else gives "". */
static void copy_text(char *dst, size_t cap, const cJSON *item)
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

/* A number within [lo, hi], or dflt (null, absent, out of range). */
static double number_in(const cJSON *item, double lo, double hi, double dflt)
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
	double id = number_in(field(o, "job_id"), 1, 4294967295.0, 0);

	if (!id)
		return -1;
	job->job_id = (long long)id;
	copy_text(job->name, sizeof(job->name), field(o, "name"));
	copy_text(job->comment, sizeof(job->comment), field(o, "comment"));
	copy_text(job->user, sizeof(job->user), field(o, "user_name"));
	copy_text(job->partition, sizeof(job->partition),
		  field(o, "partition"));
	copy_text(job->state, sizeof(job->state), field(o, "job_state"));
	copy_text(job->reason, sizeof(job->reason), field(o, "state_reason"));
	copy_text(job->state_description, sizeof(job->state_description),
		  field(o, "state_description"));
	copy_text(job->nodes, sizeof(job->nodes), field(o, "nodes"));
	copy_text(job->batch_host, sizeof(job->batch_host),
		  field(o, "batch_host"));
	wait_status(number_in(field(o, "exit_code"), 0, 0xffff, 0), job);
	job->restarts = (int)number_in(field(o, "restart_cnt"), 0, 1e6, 0);
	job->requeue = cJSON_IsTrue(field(o, "requeue"));
	job->time_limit_min =
		(long)number_in(field(o, "time_limit"), 0, 1e9, 0);
	job->submit_time = number_in(field(o, "submit_time"), 0, 1e11, 0);
	job->start_time = number_in(field(o, "start_time"), 0, 1e11, 0);
	job->end_time = number_in(field(o, "end_time"), 0, 1e11, 0);
	return job->state[0] ? 0 : -1;
}

struct api {
	const char *name;
	/* The version's requeue request; NULL when it has none. */
	int (*requeue)(nv_slurm *s, long long job_id, nv_err *err);
	/* Fills the "job" object of a submission. */
	int (*build_job)(cJSON *job, const nv_slurm_job_desc *d);
	/* Reads one element of "jobs"; -1 when it is not a job. */
	int (*parse_job)(const cJSON *o, nv_slurm_job *job);
	/* Without requeue: why, and what to do instead. */
	const char *no_requeue;
};

/* Newest first: discovery tries them in this order. URLs are the same
 * (/slurm/VERSION/ping, job/submit, job/ID, jobs) in all of them. */
static const struct api apis[] = {
	{"v0.0.38", NULL, build_job_v0_0_38, parse_job_v0_0_38,
	 "slurmrestd v0.0.38 has no requeue; Slurm requeues a job submitted "
	 "with requeue = true after a node failure or preemption by itself, "
	 "otherwise submit the definition again"},
};
#define NAPIS (sizeof(apis) / sizeof(apis[0]))

static const char *const api_names[] = {"v0.0.38", NULL};

const char *const *nv_slurm_api_versions(void)
{
	return api_names;
}

static const struct api *api_find(const char *version, nv_err *err)
{
	for (size_t i = 0; version && i < NAPIS; i++)
		if (strcmp(apis[i].name, version) == 0)
			return &apis[i];
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
	const struct api *api = api_find(version, err);
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
	if (!api_find(version, err))
		return NV_EINVAL;
	root = parse_body(body, len, err);
	if (!root)
		return NV_EBACKEND;
	id = number_in(field(root, "job_id"), 1, 4294967295.0, 0);
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
	const struct api *api = api_find(version, err);
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

static const char identity_hint[] =
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
		return nv_err_set(err, NV_EREFUSED, identity_hint,
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
		code = (int)number_in(num, -1e6, 1e6, -1);
		copy_text(text, sizeof(text), field(e, "error"));
		copy_text(desc, sizeof(desc), field(e, "description"));
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
		rc = nv_err_set(err, NV_EREFUSED, identity_hint,
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

static void view_set(nv_slurm_view *v, int done, const char *state,
		     const char *phase)
{
	v->done = done;
	v->state = state;
	v->phase = phase;
}

void nv_slurm_map(const nv_slurm_job *job, int requeue_allowed,
		  nv_slurm_view *v)
{
	const char *st = job->state, *reason = job->reason;
	const char *node = job->nodes[0] ? job->nodes : "its node";
	/* A pending job's start_time is Slurm's estimate, so "it ran" is
	 * read from its allocated nodes. */
	const char *ran = job->nodes[0] ? "running" : "accepted";
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
		view_set(v, 0, "queued", "accepted");
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
		view_set(v, 0, "queued", "accepted");
		snprintf(v->hint, sizeof(v->hint),
			 "nodes are allocated and being prepared");
	} else if (strcmp(st, "RUNNING") == 0 ||
		   strcmp(st, "COMPLETING") == 0 ||
		   strcmp(st, "RESIZING") == 0 ||
		   strcmp(st, "SIGNALING") == 0 ||
		   strcmp(st, "STAGE_OUT") == 0) {
		view_set(v, 0, "running", "running");
	} else if (strcmp(st, "SUSPENDED") == 0 || strcmp(st, "STOPPED") == 0) {
		view_set(v, 0, "running", "running");
		snprintf(v->hint, sizeof(v->hint),
			 "the job is suspended (by an admin or a preemption): "
			 "it goes on when resumed");
	} else if (strcmp(st, "COMPLETED") == 0) {
		view_set(v, 1, "succeeded", "succeeded");
		v->exit_code = job->exit_code;
	} else if (strcmp(st, "FAILED") == 0) {
		v->exit_code = job->exit_code;
		if (strcmp(reason, "JobLaunchFailure") == 0 ||
		    starts(reason, "Prolog") ||
		    strcmp(reason, "BadConstraints") == 0) {
			view_set(v, 1, "failed", "accepted");
			snprintf(
				v->hint, sizeof(v->hint),
				"Slurm could not start the batch script on %s: "
				"check that the working directory and output "
				"paths exist there and the user may write "
				"them",
				node);
		} else if (job->exit_signal) {
			view_set(v, 1, "failed", "running");
			snprintf(v->hint, sizeof(v->hint),
				 "the job was killed by signal %d: check the "
				 "command, its memory and the node's logs",
				 job->exit_signal);
		} else {
			view_set(v, 1, "failed", "running");
			snprintf(v->hint, sizeof(v->hint),
				 "the command exited with code %d: check its "
				 "parameters, data and dependencies (see the "
				 "log)",
				 job->exit_code);
		}
	} else if (strcmp(st, "TIMEOUT") == 0) {
		view_set(v, 1, "failed", "running");
		snprintf(v->hint, sizeof(v->hint),
			 "the job reached its time limit (%ld min): raise "
			 "resources.time_limit, or make the job shorter",
			 job->time_limit_min);
	} else if (strcmp(st, "OUT_OF_MEMORY") == 0) {
		view_set(v, 1, "failed", "running");
		snprintf(v->hint, sizeof(v->hint),
			 "the job ran out of memory: raise resources.memory, "
			 "or use less");
	} else if (strcmp(st, "NODE_FAIL") == 0 ||
		   strcmp(st, "PREEMPTED") == 0) {
		int preempted = st[0] == 'P';

		snprintf(v->detail, sizeof(v->detail), "%.30s on %.200s", st,
			 node);
		if (requeue) {
			view_set(v, 0, "queued", "accepted");
			snprintf(v->hint, sizeof(v->hint),
				 "%s; Slurm puts the job back in the queue",
				 preempted ? "the job was preempted"
					   : "its node failed");
		} else {
			view_set(v, 1, "failed", ran);
			snprintf(v->hint, sizeof(v->hint),
				 "%s: submit it again (on another node), or "
				 "allow requeue in the recipe",
				 preempted ? "the job was preempted by another "
					     "one"
					   : "the node failed under the job");
		}
	} else if (strcmp(st, "BOOT_FAIL") == 0) {
		view_set(v, 1, "failed", "accepted");
		snprintf(v->hint, sizeof(v->hint),
			 "the node failed to boot for the job: submit again, "
			 "and tell the cluster's admins");
	} else if (strcmp(st, "DEADLINE") == 0) {
		view_set(v, 1, "failed", ran);
		snprintf(v->hint, sizeof(v->hint),
			 "the job could not end before its deadline");
	} else if (strcmp(st, "CANCELLED") == 0 || strcmp(st, "REVOKED") == 0) {
		view_set(v, 1, "cancelled", ran);
		if (job->nodes[0] && job->exit_code >= 0 && !job->exit_signal)
			v->exit_code = job->exit_code;
	} else if (strcmp(st, "SPECIAL_EXIT") == 0) {
		view_set(v, 1, "failed", "running");
		v->exit_code = job->exit_code;
		snprintf(v->hint, sizeof(v->hint),
			 "the job ended with a special exit and was held: "
			 "see its log");
	} else {
		view_set(v, 0, "queued", "accepted");
		snprintf(v->hint, sizeof(v->hint),
			 "Slurm state '%s' is unknown to navette: check "
			 "squeue -j %lld",
			 st[0] ? st : "(none)", job->job_id);
	}
}

/* ---- sessions ----------------------------------------------------------- */

struct nv_slurm {
	char *endpoint; /* no trailing slash */
	char *user;
	char bound_host[300]; /* host[:port] the token is bound to */
	const struct api *api;
	nv_http_session *http;
	nv_http_policy policy;
	const nv_secret *credential;
	nv_secret *minted; /* owned: the current minted token */
	double lifespan, max;
	double token_exp; /* 0: unknown */
	long requests;
	long last_status; /* HTTP status of the last call; 0: no answer */
};

/* Reads exp and sun from a JWT's payload (not verified: slurmctld does
 * that); both optional. */
static void jwt_claims(const nv_secret *token, double *exp, char *sun,
		       size_t cap)
{
	const nv_secret_field *f = nv_secret_get(token, "token");
	const char *a, *b;
	unsigned char *raw = NULL;
	char *b64 = NULL;
	size_t n, padded;
	int out;
	cJSON *claims;

	*exp = 0;
	sun[0] = '\0';
	if (!f || !(a = memchr(f->value, '.', f->len)))
		return;
	a++;
	b = memchr(a, '.', f->len - (size_t)(a - (const char *)f->value));
	if (!b || b == a || b - a > 8192)
		return;
	n = (size_t)(b - a);
	padded = (n + 3) / 4 * 4;
	b64 = malloc(padded + 1);
	raw = malloc(padded + 1);
	if (!b64 || !raw)
		goto out;
	for (size_t i = 0; i < padded; i++)
		b64[i] = i < n ? (a[i] == '-'   ? '+'
				  : a[i] == '_' ? '/'
						: a[i])
			       : '=';
	b64[padded] = '\0';
	out = EVP_DecodeBlock(raw, (const unsigned char *)b64, (int)padded);
	if (out <= 0)
		goto out;
	while (out > 0 && raw[out - 1] == '\0')
		out--; /* padding bytes decoded as zeros */
	claims = cJSON_ParseWithLength((const char *)raw, (size_t)out);
	if (cJSON_IsObject(claims)) {
		*exp = number_in(field(claims, "exp"), 1, 1e11, 0);
		copy_text(sun, cap, field(claims, "sun"));
		if (!sun[0])
			copy_text(sun, cap, field(claims, "username"));
	}
	cJSON_Delete(claims);
out:
	if (b64)
		OPENSSL_cleanse(b64, padded);
	if (raw)
		OPENSSL_cleanse(raw, padded);
	free(b64);
	free(raw);
}

static void iso_or_unknown(double t, char out[32])
{
	if (t > 0)
		nv_iso8601(t, out);
	else
		snprintf(out, 32, "unknown");
}

/* The token to send now: a pre-issued one, or a minted one renewed when
 * it is about to expire. An expired pre-issued token is refused here. */
static int current_token(nv_slurm *s, const nv_secret **out, nv_err *err)
{
	double now = nv_now();
	char when[32];

	*out = NULL;
	if (s->credential->kind == NV_SECRET_BEARER) {
		if (s->token_exp > 0 && s->token_exp <= now) {
			iso_or_unknown(s->token_exp, when);
			return nv_err_set(err, NV_EREFUSED,
					  "issue a new token (scontrol token "
					  "lifespan=SECONDS) or let navette "
					  "mint them from the cluster's key",
					  "the Slurm token %s expired at %s",
					  s->credential->name, when);
		}
		*out = s->credential;
		return 0;
	}
	if (!s->minted || s->minted->expires_at - now <
				  fmin(TOKEN_RENEW_MARGIN, s->lifespan / 4)) {
		cJSON *claims = cJSON_CreateObject();
		char *text = NULL, name[NV_SECRET_NAME_MAX + 1];
		nv_secret *fresh = NULL;
		int rc;

		if (!claims ||
		    !cJSON_AddStringToObject(claims, "sun", s->user) ||
		    !(text = cJSON_PrintUnformatted(claims))) {
			cJSON_Delete(claims);
			return nv_err_set(err, NV_ENOMEM, NULL,
					  "out of memory");
		}
		cJSON_Delete(claims);
		snprintf(name, sizeof(name), "slurm-jwt:%.40s", s->user);
		rc = nv_jwt_mint_hs256(s->credential, name, text, s->lifespan,
				       &fresh, err);
		free(text);
		if (rc)
			return rc;
		nv_secret_free(s->minted);
		s->minted = fresh;
		s->token_exp = fresh->expires_at;
	}
	*out = s->minted;
	return 0;
}

/* Adds what is known of the token to an identity error's message. */
static void identity_detail(nv_slurm *s, nv_err *err)
{
	char when[32];
	size_t used = strlen(err->message);

	iso_or_unknown(s->token_exp, when);
	snprintf(err->message + used, sizeof(err->message) - used,
		 " [slurmrestd %s, user %s, %s token %s valid until %s]",
		 s->endpoint, s->user,
		 s->credential->kind == NV_SECRET_HS256 ? "minted" : "given",
		 s->credential->kind == NV_SECRET_HS256 ? s->minted->name
							: s->credential->name,
		 when);
}

/* One request: path under the endpoint, optional JSON body. On 0, *resp
 * holds a 2xx answer (the caller frees it); otherwise resp is freed and
 * err says why. *slurm_errno: the first Slurm error number, if any. */
static int call(nv_slurm *s, const char *method, const char *path,
		const char *body, const char *what, size_t max_body,
		nv_http_response *resp, int *slurm_errno, nv_err *err)
{
	char url[URL_MAX], user_header[200];
	const char *headers[3];
	const nv_secret *token;
	nv_http_policy policy = s->policy;
	nv_http_request req;
	int rc, n = 0;

	/* slurmrestd answers in well under a second: one that sends nothing
	 * for 20 s is stalled, and the caller says so (and what to check)
	 * instead of waiting for the total timeout */
	policy.stall_timeout_ms = 20000;

	memset(resp, 0, sizeof(*resp));
	if (slurm_errno)
		*slurm_errno = 0;
	rc = current_token(s, &token, err);
	if (rc)
		return rc;
	if ((size_t)snprintf(url, sizeof(url), "%s%s", s->endpoint, path) >=
	    sizeof(url))
		return nv_err_set(err, NV_EINVAL, NULL, "URL too long");
	snprintf(user_header, sizeof(user_header), "X-SLURM-USER-NAME: %s",
		 s->user);
	headers[n++] = user_header;
	headers[n++] = "Accept: application/json";
	if (body)
		headers[n++] = "Content-Type: application/json";
	if (max_body)
		policy.max_body = max_body;
	memset(&req, 0, sizeof(req));
	req.method = method;
	req.url = url;
	req.headers = headers;
	req.nheaders = (size_t)n;
	req.body = body;
	req.body_len = body ? strlen(body) : 0;
	req.credential = token;
	req.credential_host = s->bound_host;
	req.credential_header = "X-SLURM-USER-TOKEN";
	req.max_redirects = 0; /* a redirect is an error, never followed */
	s->requests++;
	s->last_status = 0;
	rc = nv_http_session_perform(s->http, &policy, &req, resp, err);
	if (rc == 0)
		s->last_status = resp->status;
	if (rc) {
		nv_http_response_free(resp);
		return rc;
	}
	rc = nv_slurm_classify(resp->status, resp->body.data, resp->body.len,
			       what, slurm_errno, err);
	if (rc) {
		if (rc == NV_EREFUSED && strcmp(err->hint, identity_hint) == 0)
			identity_detail(s, err);
		nv_http_response_free(resp);
	}
	return rc;
}

/* endpoint -> the host[:port] a token is bound to, and the base URL. */
static int endpoint_parse(nv_slurm *s, const char *endpoint, nv_err *err)
{
	CURLU *u = curl_url();
	char *scheme = NULL, *host = NULL, *port = NULL, *path = NULL;
	size_t n;
	int rc = 0;

	if (!u)
		return nv_err_set(err, NV_ENOMEM, NULL, "out of memory");
	if (curl_url_set(u, CURLUPART_URL, endpoint, 0) ||
	    curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) ||
	    curl_url_get(u, CURLUPART_HOST, &host, 0) ||
	    (strcmp(scheme, "http") != 0 && strcmp(scheme, "https") != 0)) {
		rc = nv_err_set(err, NV_EINVAL,
				"give https://HOST:PORT of slurmrestd",
				"bad Slurm REST endpoint '%.200s'", endpoint);
		goto out;
	}
	if (curl_url_get(u, CURLUPART_PORT, &port, CURLU_DEFAULT_PORT))
		port = NULL;
	if (curl_url_get(u, CURLUPART_QUERY, &path, 0) == CURLUE_OK ||
	    (curl_url_get(u, CURLUPART_USER, &path, 0) == CURLUE_OK)) {
		rc = nv_err_set(err, NV_EINVAL,
				"give https://HOST:PORT[/PATH] only",
				"the Slurm REST endpoint may not carry a query "
				"or user info");
		goto out;
	}
	snprintf(s->bound_host, sizeof(s->bound_host), "%s%s%s", host,
		 port ? ":" : "", port ? port : "");
	s->endpoint = strdup(endpoint);
	if (!s->endpoint) {
		rc = nv_err_set(err, NV_ENOMEM, NULL, "out of memory");
		goto out;
	}
	n = strlen(s->endpoint);
	while (n > 0 && s->endpoint[n - 1] == '/')
		s->endpoint[--n] = '\0';
out:
	curl_free(scheme);
	curl_free(host);
	curl_free(port);
	curl_free(path);
	curl_url_cleanup(u);
	return rc;
}

/* The versions slurmrestd says it serves (from /openapi/v3), for the
 * message when none of ours is among them. */
static void served_versions(nv_slurm *s, char *out, size_t cap)
{
	nv_http_response resp;
	nv_err ignored;
	const char *p;
	size_t used = 0;

	snprintf(out, cap, "unknown");
	if (call(s, "GET", "/openapi/v3", NULL, "OpenAPI query", 0, &resp, NULL,
		 &ignored))
		return;
	out[0] = '\0';
	for (p = resp.body.data; p && (p = strstr(p, "slurm\\/v"));) {
		const char *v = p + 7, *end = v;

		while (*end && (isalnum((unsigned char)*end) || *end == '.'))
			end++;
		if (end - v < 16 && used + (size_t)(end - v) + 3 < cap) {
			char one[20];

			snprintf(one, sizeof(one), "%.*s", (int)(end - v), v);
			if (!strstr(out, one))
				used += (size_t)snprintf(out + used, cap - used,
							 "%s%s",
							 used ? ", " : "", one);
		}
		p = end;
	}
	if (!out[0])
		snprintf(out, cap, "none listed");
	nv_http_response_free(&resp);
}

static int discover(nv_slurm *s, const char *wanted, nv_err *err)
{
	char path[64], served[200];
	nv_http_response resp;
	int rc;

	for (size_t i = 0; i < NAPIS; i++) {
		if (wanted && strcmp(wanted, apis[i].name) != 0)
			continue;
		snprintf(path, sizeof(path), "/slurm/%s/ping", apis[i].name);
		s->api = &apis[i];
		rc = call(s, "GET", path, NULL, "ping", 0, &resp, NULL, err);
		if (rc == 0) {
			nv_http_response_free(&resp);
			return 0;
		}
		if (rc != NV_ENOTFOUND)
			return rc; /* identity, network: the same for all */
	}
	s->api = NULL;
	served_versions(s, served, sizeof(served));
	return nv_err_set(err, NV_EBACKEND,
			  "navette speaks v0.0.38; start slurmrestd with one "
			  "of them (-s), or upgrade navette",
			  "slurmrestd at %s serves no API version navette "
			  "speaks (it serves: %s)",
			  s->endpoint, served);
}

int nv_slurm_open(nv_slurm **out, const nv_slurm_config *cfg, nv_err *err)
{
	nv_slurm *s;
	char sun[64];
	int rc;

	*out = NULL;
	if (!cfg || !cfg->endpoint || !cfg->user || !cfg->credential)
		return nv_err_set(err, NV_EINVAL, NULL,
				  "a Slurm session needs an endpoint, a user "
				  "and a credential");
	if (!word_ok(cfg->user, "@") || strlen(cfg->user) > 63)
		return nv_err_set(err, NV_EINVAL, NULL,
				  "bad Slurm user name '%.64s'", cfg->user);
	if (cfg->credential->kind != NV_SECRET_BEARER &&
	    cfg->credential->kind != NV_SECRET_HS256)
		return nv_err_set(err, NV_EINVAL,
				  "give a token (kind bearer) or the cluster's "
				  "JWT key (kind hs256)",
				  "credential %s (%s) cannot authenticate to "
				  "slurmrestd",
				  cfg->credential->name,
				  nv_secret_kind_name(cfg->credential->kind));
	if (cfg->token_lifespan_s < 0 || cfg->token_max_s < 0 ||
	    !isfinite(cfg->token_lifespan_s) || !isfinite(cfg->token_max_s))
		return nv_err_set(err, NV_EINVAL, NULL,
				  "token lifespans are seconds >= 0");
	if (cfg->api_version && !api_find(cfg->api_version, err))
		return NV_EINVAL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return nv_err_set(err, NV_ENOMEM, NULL, "out of memory");
	s->credential = cfg->credential;
	s->policy = cfg->policy;
	if (!s->policy.max_body)
		s->policy.max_body = NV_HTTP_MAX_BODY_DEFAULT;
	s->max = cfg->token_max_s > 0 ? cfg->token_max_s
				      : NV_SLURM_TOKEN_MAX_DEFAULT;
	s->lifespan = cfg->token_lifespan_s > 0
			      ? cfg->token_lifespan_s
			      : NV_SLURM_TOKEN_LIFESPAN_DEFAULT;
	if (s->lifespan > s->max)
		s->lifespan = s->max;
	s->user = strdup(cfg->user);
	if (!s->user) {
		rc = nv_err_set(err, NV_ENOMEM, NULL, "out of memory");
		goto fail;
	}
	rc = endpoint_parse(s, cfg->endpoint, err);
	if (rc)
		goto fail;
	if (s->credential->kind == NV_SECRET_BEARER) {
		jwt_claims(s->credential, &s->token_exp, sun, sizeof(sun));
		if (s->token_exp > 0 &&
		    s->token_exp - nv_now() > s->max + CLOCK_SLACK) {
			rc = nv_err_set(err, NV_EREFUSED,
					"issue a shorter token (scontrol token "
					"lifespan=SECONDS)",
					"the Slurm token %s lives %.0f s more, "
					"over the profile's maximum of %.0f s",
					s->credential->name,
					s->token_exp - nv_now(), s->max);
			goto fail;
		}
		s->lifespan = 0;
	} else if (!nv_secret_get(s->credential, "key")) {
		rc = nv_err_set(err, NV_EINVAL, NULL,
				"credential %s holds no key",
				s->credential->name);
		goto fail;
	}
	s->http = nv_http_session_new(err);
	if (!s->http) {
		rc = err ? err->code : NV_ENOMEM;
		goto fail;
	}
	rc = discover(s, cfg->api_version, err);
	if (rc)
		goto fail;
	*out = s;
	return 0;
fail:
	nv_slurm_close(s);
	return rc;
}

void nv_slurm_close(nv_slurm *s)
{
	if (!s)
		return;
	nv_http_session_free(s->http);
	nv_secret_free(s->minted);
	free(s->endpoint);
	free(s->user);
	free(s);
}

int nv_slurm_set_credential(nv_slurm *s, const nv_secret *credential,
			    nv_err *err)
{
	char sun[64];

	if (!credential || credential->kind != s->credential->kind)
		return nv_err_set(err, NV_EINVAL, NULL,
				  "a Slurm session keeps the kind of "
				  "credential it was opened with");
	if (credential != s->credential && credential->kind == NV_SECRET_BEARER)
		jwt_claims(credential, &s->token_exp, sun, sizeof(sun));
	s->credential = credential;
	return 0;
}

const char *nv_slurm_version(const nv_slurm *s)
{
	return s && s->api ? s->api->name : NULL;
}

double nv_slurm_token_lifespan(const nv_slurm *s)
{
	return s ? s->lifespan : 0;
}

long nv_slurm_connections(const nv_slurm *s)
{
	return s ? nv_http_session_connections(s->http) : 0;
}

long nv_slurm_requests(const nv_slurm *s)
{
	return s ? s->requests : 0;
}

int nv_slurm_submit(nv_slurm *s, const char *script, const nv_slurm_job_desc *d,
		    long long *job_id, nv_err *err)
{
	char path[64], *json = NULL;
	nv_http_response resp;
	int rc;

	*job_id = 0;
	rc = nv_slurm_build_submit(s->api->name, script, d, &json, err);
	if (rc)
		return rc;
	snprintf(path, sizeof(path), "/slurm/%s/job/submit", s->api->name);
	rc = call(s, "POST", path, json, "submit", 0, &resp, NULL, err);
	/* the body may hold presigned URLs in the environment */
	OPENSSL_cleanse(json, strlen(json));
	free(json);
	if (rc)
		return rc;
	rc = nv_slurm_parse_submit(s->api->name, resp.body.data, resp.body.len,
				   job_id, err);
	nv_http_response_free(&resp);
	return rc;
}

int nv_slurm_submit_refused(const nv_slurm *s)
{
	return s->last_status >= 400 && s->last_status < 500;
}

int nv_slurm_job_get(nv_slurm *s, long long job_id, nv_slurm_job *job,
		     nv_err *err)
{
	char path[80];
	nv_http_response resp;
	nv_slurm_job *jobs = NULL;
	size_t n = 0;
	int rc;

	memset(job, 0, sizeof(*job));
	if (job_id <= 0)
		return nv_err_set(err, NV_EINVAL, NULL, "bad Slurm job id");
	snprintf(path, sizeof(path), "/slurm/%s/job/%lld", s->api->name,
		 job_id);
	rc = call(s, "GET", path, NULL, "job query", 0, &resp, NULL, err);
	if (rc)
		return rc;
	rc = nv_slurm_parse_jobs(s->api->name, resp.body.data, resp.body.len,
				 16, &jobs, &n, err);
	nv_http_response_free(&resp);
	if (rc)
		return rc;
	for (size_t i = 0; i < n; i++) {
		if (jobs[i].job_id == job_id) {
			*job = jobs[i];
			free(jobs);
			return 0;
		}
	}
	free(jobs);
	return nv_err_set(err, NV_ENOTFOUND, NULL,
			  "slurmrestd's answer does not hold job %lld", job_id);
}

int nv_slurm_jobs(nv_slurm *s, nv_slurm_job **jobs, size_t *njobs, nv_err *err)
{
	char path[64];
	nv_http_response resp;
	size_t n = 0, kept = 0;
	int rc;

	*jobs = NULL;
	*njobs = 0;
	snprintf(path, sizeof(path), "/slurm/%s/jobs", s->api->name);
	rc = call(s, "GET", path, NULL, "job listing", LIST_BODY_MAX, &resp,
		  NULL, err);
	if (rc)
		return rc;
	rc = nv_slurm_parse_jobs(s->api->name, resp.body.data, resp.body.len, 0,
				 jobs, &n, err);
	nv_http_response_free(&resp);
	if (rc)
		return rc;
	for (size_t i = 0; i < n; i++)
		if (strcmp((*jobs)[i].user, s->user) == 0)
			(*jobs)[kept++] = (*jobs)[i];
	*njobs = kept;
	return 0;
}

int nv_slurm_find(nv_slurm *s, const char *name, const char *comment,
		  nv_slurm_job *job, int *matches, nv_err *err)
{
	nv_slurm_job *jobs = NULL;
	size_t n = 0;
	int count = 0, rc;
	long long best = 0;

	memset(job, 0, sizeof(*job));
	if (matches)
		*matches = 0;
	if (!name && !comment)
		return nv_err_set(err, NV_EINVAL, NULL,
				  "find a Slurm job by name or comment");
	rc = nv_slurm_jobs(s, &jobs, &n, err);
	if (rc)
		return rc;
	for (size_t i = 0; i < n; i++) {
		if ((name && strcmp(jobs[i].name, name) != 0) ||
		    (comment && strcmp(jobs[i].comment, comment) != 0))
			continue;
		count++;
		if (jobs[i].job_id > best) {
			best = jobs[i].job_id;
			*job = jobs[i];
		}
	}
	free(jobs);
	if (matches)
		*matches = count;
	if (!count)
		return nv_err_set(
			err, NV_ENOTFOUND, NULL,
			"no Slurm job of user %s named '%.80s'%s%.80s%s",
			s->user, name ? name : "*",
			comment ? " with comment '" : "",
			comment ? comment : "", comment ? "'" : "");
	return 0;
}

int nv_slurm_cancel(nv_slurm *s, long long job_id, int *was_done, nv_err *err)
{
	char path[80];
	nv_http_response resp;
	int rc, slurm_errno = 0;

	if (was_done)
		*was_done = 0;
	if (job_id <= 0)
		return nv_err_set(err, NV_EINVAL, NULL, "bad Slurm job id");
	snprintf(path, sizeof(path), "/slurm/%s/job/%lld", s->api->name,
		 job_id);
	rc = call(s, "DELETE", path, NULL, "cancel", 0, &resp, &slurm_errno,
		  err);
	if (rc == NV_EREFUSED && slurm_errno == NV_SLURM_ERRNO_ALREADY_DONE) {
		if (was_done)
			*was_done = 1;
		nv_err_clear(err);
		return 0;
	}
	if (rc)
		return rc;
	nv_http_response_free(&resp);
	return 0;
}

int nv_slurm_requeue(nv_slurm *s, long long job_id, nv_err *err)
{
	if (job_id <= 0)
		return nv_err_set(err, NV_EINVAL, NULL, "bad Slurm job id");
	if (s->api->requeue)
		return s->api->requeue(s, job_id, err);
	return nv_err_set(err, NV_EREFUSED, s->api->no_requeue,
			  "slurmrestd %s cannot requeue job %lld", s->api->name,
			  job_id);
}
