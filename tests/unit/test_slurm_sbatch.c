/* Unit tests of host/jobs/slurm_sbatch.c: a job description (checked by
 * nv_slurm_desc_set, as for slurmrestd) as sbatch's options, one word
 * each: every field to its option, flags only when set, the dependency in
 * Slurm's afterok:A:B form, the environment in --export, and a value
 * sbatch would split refused. */
#include "jobs/slurm.h"

#include <stdio.h>
#include <string.h>

#include "nv_test.h"

/* argv joined with spaces, into out */
static const char *joined(char **argv, size_t argc, char *out, size_t cap)
{
	size_t at = 0;

	out[0] = '\0';
	for (size_t i = 0; i < argc && at < cap; i++)
		at += (size_t)snprintf(out + at, cap - at, "%s%s", i ? " " : "",
				       argv[i]);
	return out;
}

static void set(nv_slurm_job_desc *d, const char *k, const char *v)
{
	nv_err err;

	if (nv_slurm_desc_set(d, k, v, &err))
		fprintf(stderr, "set %s: %s\n", k, err.message);
}

static void test_full(void)
{
	nv_slurm_job_desc d;
	char **argv = NULL, text[2048];
	size_t argc = 0;
	nv_err err;

	nv_slurm_desc_init(&d);
	set(&d, "name", "nv-20261206-abc");
	set(&d, "comment", "navette nv-20261206-abc member m1");
	set(&d, "partition", "gpu");
	set(&d, "account", "team");
	set(&d, "qos", "normal");
	set(&d, "time_limit", "90m");
	set(&d, "cpus", "2");
	set(&d, "memory", "4GiB");
	set(&d, "gpus", "1");
	set(&d, "gres", "gpu:a100:1");
	set(&d, "nodes", "gpu-[a-b]");
	set(&d, "working_directory", "/tmp/w");
	set(&d, "stdout", "/tmp/w/navette-%j.out");
	set(&d, "requeue", "true");
	set(&d, "after", "12,14_2");
	set(&d, "array", "0-2");
	CHECK(nv_slurm_desc_setenv(&d, "PATH", "/usr/bin:/bin", &err) == 0);
	CHECK(nv_slurm_desc_setenv(&d, "NAVETTE_JOB_ID", "nv-1", &err) == 0);
	CHECK(nv_slurm_sbatch_args(&d, &argv, &argc, &err) == 0);
	CHECK(argv && argv[argc] == NULL);
	CHECK_STR(joined(argv, argc, text, sizeof(text)),
		  "--parsable --job-name=nv-20261206-abc "
		  "--comment=navette nv-20261206-abc member m1 "
		  "--partition=gpu --account=team --qos=normal --time=90 "
		  "--cpus-per-task=2 --mem=4096M --gpus=1 --gres=gpu:a100:1 "
		  "--nodelist=gpu-[a-b] --chdir=/tmp/w "
		  "--output=/tmp/w/navette-%j.out --requeue "
		  "--dependency=afterok:12:14_2 --kill-on-invalid-dep=yes "
		  "--array=0-2 "
		  "--export=PATH=/usr/bin:/bin,NAVETTE_JOB_ID=nv-1");
	/* the comment with its spaces is one word */
	CHECK_STR(argv[2], "--comment=navette nv-20261206-abc member m1");
	nv_slurm_sbatch_args_free(argv, argc);
	nv_slurm_desc_free(&d);
}

static void test_minimal(void)
{
	nv_slurm_job_desc d;
	char **argv = NULL, text[1024];
	size_t argc = 0;
	nv_err err;

	nv_slurm_desc_init(&d);
	set(&d, "name", "nv-x");
	set(&d, "working_directory", "/tmp");
	CHECK(nv_slurm_sbatch_args(&d, &argv, &argc, &err) == 0);
	/* nothing set, nothing sent: Slurm's defaults */
	CHECK_STR(joined(argv, argc, text, sizeof(text)),
		  "--parsable --job-name=nv-x --chdir=/tmp --export=NONE");
	nv_slurm_sbatch_args_free(argv, argc);
	set(&d, "requeue", "false");
	set(&d, "hold", "true");
	CHECK(nv_slurm_sbatch_args(&d, &argv, &argc, &err) == 0);
	CHECK_STR(joined(argv, argc, text, sizeof(text)),
		  "--parsable --job-name=nv-x --chdir=/tmp --no-requeue "
		  "--hold --export=NONE");
	nv_slurm_sbatch_args_free(argv, argc);

	/* a comma in a value would be split by sbatch */
	CHECK(nv_slurm_desc_setenv(&d, "LIST", "a,b", &err) == 0);
	CHECK(nv_slurm_sbatch_args(&d, &argv, &argc, &err) == NV_EINVAL);
	CHECK(argv == NULL && argc == 0);
	CHECK(strstr(err.message, "LIST holds a comma") != NULL);
	CHECK(err.hint[0] != '\0');
	nv_slurm_desc_free(&d);

	/* no name: refused */
	nv_slurm_desc_init(&d);
	set(&d, "working_directory", "/tmp");
	CHECK(nv_slurm_sbatch_args(&d, &argv, &argc, &err) == NV_EINVAL);
	nv_slurm_desc_free(&d);
}

int main(void)
{
	test_full();
	test_minimal();
	return nv_test_done();
}
