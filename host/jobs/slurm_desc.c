/* slurmrestd client (see slurm.h): job descriptions, what a submission
 * asks for, checked key by key as a recipe gives them (names, counts,
 * durations, sizes, flags, the environment). Pure C, no Lua. */
#include "jobs/slurm.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>

#include "core/jobid.h"
#include "core/units.h"
#include "jobs/slurm_internal.h"

/* ---- job descriptions ------------------------------------------------ */

static const char *const desc_keys[] = {
	"name",   "comment",    "partition", "account",
	"qos",    "time_limit", "cpus",      "memory",
	"gpus",   "gres",       "nodes",     "working_directory",
	"stdout", "stderr",     "requeue",   "hold",
	"after",  "array",      NULL};

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
	free(d->after);
	free(d->array);
	for (size_t i = 0; i < d->nenv; i++) {
		/* values may be presigned URLs: wipe them */
		OPENSSL_cleanse(d->env[i], strlen(d->env[i]));
		free(d->env[i]);
	}
	free(d->env);
	nv_slurm_desc_init(d);
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

int slurm_word_ok(const char *v, const char *extra)
{
	if (!text_ok(v, NV_SLURM_TEXT_MAX - 1))
		return 0;
	for (const char *p = v; *p; p++)
		if (!isalnum((unsigned char)*p) && !strchr("_-.", *p) &&
		    !strchr(extra, *p))
			return 0;
	return 1;
}

/* A list of numbers separated by commas: each N_M (after: a job or an
 * array's task) or, for ranges, N-M (array: task indexes). */
static int id_list_ok(const char *v, int ranges)
{
	char sep = ranges ? '-' : '_';
	int digits = 0, joined = 0;

	for (; *v; v++) {
		if (*v >= '0' && *v <= '9')
			digits++;
		else if (*v == sep && digits && !joined)
			digits = 0, joined = 1;
		else if (*v == ',' && digits)
			digits = 0, joined = 0;
		else
			return 0;
	}
	return digits > 0;
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
		if (nv_units_seconds(value, &x) || x <= 0 || x > 365.0 * 86400)
			return desc_bad(err, key, value,
					"give seconds, or a number with "
					"s/m/h/d (\"90m\"), up to a year");
		d->time_limit_min = (long)ceil(x / 60);
		return 0;
	} else if (strcmp(key, "memory") == 0) {
		if (nv_units_bytes(value, &x) || x <= 0 || x > 1e15)
			return desc_bad(err, key, value,
					"give bytes, or a number with "
					"K/M/G/T (\"4GiB\")");
		d->memory_mb = (long long)ceil(x / (1024.0 * 1024.0));
		return 0;
	} else if (strcmp(key, "cpus") == 0) {
		if (nv_units_count(value, 65536, &n) || n < 1)
			return desc_bad(err, key, value,
					"give a whole number of CPUs >= 1");
		d->cpus = (int)n;
		return 0;
	} else if (strcmp(key, "gpus") == 0) {
		if (nv_units_count(value, 4096, &n))
			return desc_bad(err, key, value,
					"give a whole number of GPUs >= 0");
		d->gpus = (int)n;
		return 0;
	} else if (strcmp(key, "after") == 0) {
		/* job ids or array tasks (12 or 12_3), separated by commas */
		if (!id_list_ok(value, 0) || strlen(value) > NV_SLURM_AFTER_MAX)
			return desc_bad(err, key, value,
					"give Slurm job ids, such as "
					"\"12,13\" (or tasks: \"12_0\")");
		text = &d->after;
	} else if (strcmp(key, "array") == 0) {
		if (!id_list_ok(value, 1) || strlen(value) > 64)
			return desc_bad(err, key, value,
					"give task indexes, such as \"0-5\"");
		text = &d->array;
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
		return nv_err_unknown_key(err, "Slurm resource", key,
					  desc_keys);
	}
	if (extra && !slurm_word_ok(value, extra))
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
	return nv_err_bad(err, "letters, digits and _",
			  "environment variable name", name, 64);
}
