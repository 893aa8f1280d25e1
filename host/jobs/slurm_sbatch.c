/* Slurm through a login node (see slurm.h): a job description as the
 * options of `sbatch`, one word each, as the slurmrestd client sends the
 * same description in JSON (slurm_protocol.c). The description was
 * checked when it was set (nv_slurm_desc_set), so both ways refuse the
 * same things; here only what sbatch's own syntax cannot carry is
 * refused. Pure C, no Lua. */
#include "jobs/slurm.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>

/* every option of a description, and the environment's one */
#define SBATCH_ARGS_MAX 32

typedef struct args {
	char **v;
	size_t n;
} args;

static int add(args *a, nv_err *err, const char *fmt, ...)
{
	va_list ap;
	char *word;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0 || a->n >= SBATCH_ARGS_MAX || !(word = malloc((size_t)n + 1)))
		return nv_err_set(err, NV_ENOMEM, NULL,
				  "slurm: out of memory for sbatch's options");
	va_start(ap, fmt);
	vsnprintf(word, (size_t)n + 1, fmt, ap);
	va_end(ap);
	a->v[a->n++] = word;
	a->v[a->n] = NULL;
	return 0;
}

/* --export=NAME=value,...: sbatch splits the list at commas, so a value
 * holding one cannot be sent this way. */
static int add_export(args *a, const nv_slurm_job_desc *d, nv_err *err)
{
	size_t len = sizeof("--export=");
	char *word, *p;
	int rc;

	if (d->nenv == 0)
		return add(a, err, "--export=NONE");
	for (size_t i = 0; i < d->nenv; i++) {
		if (strchr(d->env[i], ',')) {
			const char *eq = strchr(d->env[i], '=');

			return nv_err_set(
				err, NV_EINVAL,
				"sbatch's --export splits its list at commas: "
				"give the value without one",
				"slurm: the value of environment variable "
				"%.*s holds a comma",
				(int)(eq ? eq - d->env[i] : 0), d->env[i]);
		}
		len += strlen(d->env[i]) + 1;
	}
	if (a->n >= SBATCH_ARGS_MAX || !(word = malloc(len)))
		return nv_err_set(err, NV_ENOMEM, NULL,
				  "slurm: out of memory for sbatch's options");
	p = word + snprintf(word, len, "--export=");
	for (size_t i = 0; i < d->nenv; i++) {
		rc = snprintf(p, len - (size_t)(p - word), "%s%s", i ? "," : "",
			      d->env[i]);
		p += rc;
	}
	a->v[a->n++] = word;
	a->v[a->n] = NULL;
	return 0;
}

void nv_slurm_sbatch_args_free(char **argv, size_t argc)
{
	if (!argv)
		return;
	for (size_t i = 0; i < argc; i++) {
		/* --export's values and the comment may be worth wiping */
		OPENSSL_cleanse(argv[i], strlen(argv[i]));
		free(argv[i]);
	}
	free(argv);
}

int nv_slurm_sbatch_args(const nv_slurm_job_desc *d, char ***argv, size_t *argc,
			 nv_err *err)
{
	args a = {calloc(SBATCH_ARGS_MAX + 1, sizeof(char *)), 0};
	int rc = 0;

	*argv = NULL;
	*argc = 0;
	if (!a.v)
		return nv_err_set(err, NV_ENOMEM, NULL,
				  "slurm: out of memory for sbatch's options");
	if (!d->name || !d->working_directory) {
		nv_err_set(err, NV_EINVAL, NULL,
			   "slurm: a job needs a name and a working "
			   "directory");
		rc = NV_EINVAL;
		goto fail;
	}
#define ADD(...)                                                               \
	do {                                                                   \
		if ((rc = add(&a, err, __VA_ARGS__)))                          \
			goto fail;                                             \
	} while (0)
	ADD("--parsable");
	ADD("--job-name=%s", d->name);
	if (d->comment)
		ADD("--comment=%s", d->comment);
	if (d->partition)
		ADD("--partition=%s", d->partition);
	if (d->account)
		ADD("--account=%s", d->account);
	if (d->qos)
		ADD("--qos=%s", d->qos);
	if (d->time_limit_min > 0)
		ADD("--time=%ld", d->time_limit_min);
	if (d->cpus > 0)
		ADD("--cpus-per-task=%d", d->cpus);
	if (d->memory_mb > 0)
		ADD("--mem=%lldM", d->memory_mb);
	if (d->gpus > 0)
		ADD("--gpus=%d", d->gpus);
	if (d->gres)
		ADD("--gres=%s", d->gres);
	if (d->nodelist)
		ADD("--nodelist=%s", d->nodelist);
	ADD("--chdir=%s", d->working_directory);
	if (d->standard_output)
		ADD("--output=%s", d->standard_output);
	if (d->standard_error)
		ADD("--error=%s", d->standard_error);
	if (d->requeue == 1)
		ADD("--requeue");
	if (d->requeue == 0)
		ADD("--no-requeue");
	if (d->hold)
		ADD("--hold");
	if (d->after) {
		/* afterok:12:13_0; a job whose dependency can never be met
		 * is ended by Slurm, as over slurmrestd */
		size_t at = a.n;

		ADD("--dependency=afterok:%s", d->after);
		for (char *c = a.v[at]; *c; c++)
			if (*c == ',')
				*c = ':';
		ADD("--kill-on-invalid-dep=yes");
	}
	if (d->array)
		ADD("--array=%s", d->array);
#undef ADD
	if ((rc = add_export(&a, d, err)))
		goto fail;
	*argv = a.v;
	*argc = a.n;
	return 0;
fail:
	nv_slurm_sbatch_args_free(a.v, a.n);
	return rc;
}
