/* Unit tests of the Slurm backend's pure parts (host/jobs/slurm_desc.c,
 * slurm_protocol.c), with no server: job descriptions (unknown names refused
 * before submission, units converted), the JSON of a submission, the reading of
 * slurmrestd's answers (real ones, recorded from slurmrestd 22.05.8 in
 * tests/data/slurm), the classification of its errors (a refused token is an
 * identity error, not a raw 500), and the map from Slurm states to navette's
 * view. */
#include "jobs/slurm.h"
#include "core/fsutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "nv_test.h"
#include "test_data.h"

static int contains(const char *hay, const char *needle)
{
	return hay && strstr(hay, needle) != NULL;
}

static void test_desc(void)
{
	nv_slurm_job_desc d;
	nv_err err;
	const char *const *keys = nv_slurm_desc_keys();
	int n = 0;

	nv_slurm_desc_init(&d);
	CHECK(d.requeue == -1 && d.hold == 0 && d.nenv == 0);
	CHECK(nv_slurm_desc_set(&d, "name", "nv-job-1", &err) == 0);
	CHECK_STR(d.name, "nv-job-1");
	CHECK(nv_slurm_desc_set(&d, "name", "nv-job-2", &err) == 0);
	CHECK_STR(d.name, "nv-job-2");

	/* An unknown name is refused, naming the known ones. */
	CHECK(nv_slurm_desc_set(&d, "gpu", "1", &err) == NV_EINVAL);
	CHECK(contains(err.message, "unknown Slurm resource 'gpu'"));
	CHECK(contains(err.hint, "gpus") && contains(err.hint, "partition") &&
	      contains(err.hint, "time_limit"));
	CHECK(nv_slurm_desc_set(&d, "exclude", "gpu-a", &err) == NV_EINVAL);
	for (; keys[n]; n++)
		;
	CHECK(n == 18); /* ..., hold, after, array */
	CHECK(nv_slurm_desc_set(&d, "term_before", "60", &err) == NV_EINVAL);

	/* Units. */
	CHECK(nv_slurm_desc_set(&d, "time_limit", "3600", &err) == 0);
	CHECK(d.time_limit_min == 60);
	CHECK(nv_slurm_desc_set(&d, "time_limit", "61", &err) == 0);
	CHECK(d.time_limit_min == 2); /* rounded up */
	CHECK(nv_slurm_desc_set(&d, "time_limit", "90m", &err) == 0);
	CHECK(d.time_limit_min == 90);
	CHECK(nv_slurm_desc_set(&d, "time_limit", "2h", &err) == 0);
	CHECK(d.time_limit_min == 120);
	CHECK(nv_slurm_desc_set(&d, "time_limit", "1d", &err) == 0);
	CHECK(d.time_limit_min == 1440);
	CHECK(nv_slurm_desc_set(&d, "time_limit", "0", &err) == NV_EINVAL);
	CHECK(nv_slurm_desc_set(&d, "time_limit", "1w", &err) == NV_EINVAL);
	CHECK(nv_slurm_desc_set(&d, "time_limit", "-5", &err) == NV_EINVAL);
	CHECK(nv_slurm_desc_set(&d, "memory", "4GiB", &err) == 0);
	CHECK(d.memory_mb == 4096);
	CHECK(nv_slurm_desc_set(&d, "memory", "512M", &err) == 0);
	CHECK(d.memory_mb == 512);
	CHECK(nv_slurm_desc_set(&d, "memory", "1000000", &err) == 0);
	CHECK(d.memory_mb == 1); /* bytes, rounded up to a MiB */
	CHECK(nv_slurm_desc_set(&d, "memory", "1.5G", &err) == 0);
	CHECK(d.memory_mb == 1536);
	CHECK(nv_slurm_desc_set(&d, "memory", "4XB", &err) == NV_EINVAL);
	CHECK(nv_slurm_desc_set(&d, "memory", "lots", &err) == NV_EINVAL);
	CHECK(nv_slurm_desc_set(&d, "cpus", "2", &err) == 0 && d.cpus == 2);
	CHECK(nv_slurm_desc_set(&d, "cpus", "0", &err) == NV_EINVAL);
	CHECK(nv_slurm_desc_set(&d, "cpus", "2.5", &err) == NV_EINVAL);
	CHECK(nv_slurm_desc_set(&d, "gpus", "0", &err) == 0 && d.gpus == 0);
	CHECK(nv_slurm_desc_set(&d, "gpus", "1", &err) == 0 && d.gpus == 1);
	CHECK(nv_slurm_desc_set(&d, "gpus", "x", &err) == NV_EINVAL);
	CHECK(nv_slurm_desc_set(&d, "requeue", "false", &err) == 0 &&
	      d.requeue == 0);
	CHECK(nv_slurm_desc_set(&d, "requeue", "yes", &err) == NV_EINVAL);
	CHECK(nv_slurm_desc_set(&d, "hold", "true", &err) == 0 && d.hold == 1);
	CHECK(nv_slurm_desc_set(&d, "after", "12,345", &err) == 0);
	CHECK_STR(d.after, "12,345");
	CHECK(nv_slurm_desc_set(&d, "after", "12,", &err) == NV_EINVAL);
	CHECK(nv_slurm_desc_set(&d, "after", ",12", &err) == NV_EINVAL);
	CHECK(nv_slurm_desc_set(&d, "after", "12:13", &err) == NV_EINVAL);
	CHECK(nv_slurm_desc_set(&d, "after", "afterany:1", &err) == NV_EINVAL);
	CHECK(nv_slurm_desc_set(&d, "after", "", &err) == NV_EINVAL);
	CHECK_STR(d.after, "12,345"); /* unchanged on error */
	/* tasks of a job array */
	CHECK(nv_slurm_desc_set(&d, "after", "12_0,13,14_25", &err) == 0);
	CHECK_STR(d.after, "12_0,13,14_25");
	CHECK(nv_slurm_desc_set(&d, "after", "12_", &err) == NV_EINVAL);
	CHECK(nv_slurm_desc_set(&d, "after", "12_1_2", &err) == NV_EINVAL);
	CHECK(nv_slurm_desc_set(&d, "after", "_1", &err) == NV_EINVAL);
	CHECK(nv_slurm_desc_set(&d, "after", "12-14", &err) == NV_EINVAL);
	CHECK(nv_slurm_desc_set(&d, "array", "0-999", &err) == 0);
	CHECK_STR(d.array, "0-999");
	CHECK(nv_slurm_desc_set(&d, "array", "0-3,7", &err) == 0);
	CHECK(nv_slurm_desc_set(&d, "array", "0-", &err) == NV_EINVAL);
	CHECK(nv_slurm_desc_set(&d, "array", "0_3", &err) == NV_EINVAL);
	CHECK(nv_slurm_desc_set(&d, "array", "0-3%2", &err) == NV_EINVAL);
	CHECK_STR(d.array, "0-3,7");

	/* Names and paths. */
	CHECK(nv_slurm_desc_set(&d, "nodes", "gpu-[a-b],gpu-c", &err) == 0);
	CHECK(nv_slurm_desc_set(&d, "nodes", "gpu-a;rm", &err) == NV_EINVAL);
	CHECK_STR(d.nodelist, "gpu-[a-b],gpu-c"); /* unchanged on error */
	CHECK(nv_slurm_desc_set(&d, "partition", "debug", &err) == 0);
	CHECK(nv_slurm_desc_set(&d, "partition", "a b", &err) == NV_EINVAL);
	CHECK(nv_slurm_desc_set(&d, "gres", "gpu:a100:2", &err) == 0);
	CHECK(nv_slurm_desc_set(&d, "working_directory", "tmp", &err) ==
	      NV_EINVAL);
	CHECK(nv_slurm_desc_set(&d, "working_directory", "/tmp", &err) == 0);
	CHECK(nv_slurm_desc_set(&d, "stdout", "/tmp/o-%j.txt", &err) == 0);
	CHECK_STR(d.standard_output, "/tmp/o-%j.txt");
	CHECK(nv_slurm_desc_set(&d, "comment", "line\nbreak", &err) ==
	      NV_EINVAL);
	CHECK(nv_slurm_desc_set(&d, "name", "", &err) == NV_EINVAL);

	/* Environment. */
	CHECK(nv_slurm_desc_setenv(&d, "NAVETTE_JOB_ID", "j1", &err) == 0);
	CHECK(nv_slurm_desc_setenv(&d, "PATH", "/bin", &err) == 0);
	CHECK(nv_slurm_desc_setenv(&d, "NAVETTE_JOB_ID", "j2", &err) == 0);
	CHECK(d.nenv == 2);
	CHECK_STR(d.env[0], "NAVETTE_JOB_ID=j2");
	CHECK(nv_slurm_desc_setenv(&d, "1BAD", "x", &err) == NV_EINVAL);
	CHECK(nv_slurm_desc_setenv(&d, "A=B", "x", &err) == NV_EINVAL);
	CHECK(nv_slurm_desc_setenv(&d, "", "x", &err) == NV_EINVAL);
	/* the job id the node's launcher makes folders and keys of */
	{
		static char longid[100];
		const char *const bad[] = {"..",
					   "../../victim",
					   "/",
					   "/tmp/abs",
					   "",
					   "-rf",
					   "caf\xc3\xa9-1",
					   "a\nb",
					   "a/b",
					   "A-1",
					   longid,
					   NULL};
		memset(longid, 'a', sizeof(longid) - 1);
		for (int i = 0; bad[i]; i++) {
			CHECK(nv_slurm_desc_setenv(&d, "NAVETTE_JOB_ID", bad[i],
						   &err) == NV_EINVAL);
			CHECK(strstr(err.message, "job id") != NULL);
		}
		CHECK(d.nenv == 2);
		CHECK_STR(d.env[0], "NAVETTE_JOB_ID=j2");
	}
	nv_slurm_desc_free(&d);
	CHECK(d.name == NULL && d.nenv == 0 && d.requeue == -1);
	nv_slurm_desc_free(&d); /* twice is harmless */
}

static cJSON *build(const nv_slurm_job_desc *d, const char *script, int *rc)
{
	char *json = NULL;
	nv_err err;
	cJSON *root;

	*rc = nv_slurm_build_submit("v0.0.38", script, d, &json, &err);
	if (*rc)
		return NULL;
	root = cJSON_Parse(json);
	free(json);
	return root;
}

static const char *str_at(const cJSON *o, const char *k)
{
	const cJSON *it = cJSON_GetObjectItemCaseSensitive(o, k);

	return cJSON_IsString(it) ? it->valuestring : NULL;
}

static double num_at(const cJSON *o, const char *k)
{
	const cJSON *it = cJSON_GetObjectItemCaseSensitive(o, k);

	return cJSON_IsNumber(it) ? it->valuedouble : -1;
}

static void test_build(void)
{
	nv_slurm_job_desc d;
	nv_err err;
	cJSON *root, *job, *env;
	char *json = NULL;
	int rc;

	nv_slurm_desc_init(&d);
	nv_slurm_desc_set(&d, "name", "nv-a", &err);
	/* no working directory */
	CHECK(nv_slurm_build_submit("v0.0.38", "#!/bin/sh\n", &d, &json,
				    &err) == NV_EINVAL);
	CHECK(json == NULL);
	nv_slurm_desc_set(&d, "working_directory", "/srv/w", &err);
	CHECK(nv_slurm_build_submit("v0.0.38", "echo hi\n", &d, &json, &err) ==
	      NV_EINVAL);
	CHECK(contains(err.message, "#!"));
	CHECK(nv_slurm_build_submit("v0.0.99", "#!/bin/sh\n", &d, &json,
				    &err) == NV_EINVAL);
	CHECK(contains(err.message, "v0.0.99"));

	/* Minimal: the environment is never empty. */
	root = build(&d, "#!/bin/sh\ntrue\n", &rc);
	CHECK(rc == 0 && root);
	job = cJSON_GetObjectItemCaseSensitive(root, "job");
	CHECK_STR(str_at(root, "script"), "#!/bin/sh\ntrue\n");
	CHECK_STR(str_at(job, "name"), "nv-a");
	CHECK_STR(str_at(job, "current_working_directory"), "/srv/w");
	env = cJSON_GetObjectItemCaseSensitive(job, "environment");
	CHECK(cJSON_IsObject(env) && cJSON_GetArraySize(env) == 1);
	CHECK_STR(str_at(env, "PATH"), "/usr/bin:/bin");
	CHECK(!cJSON_GetObjectItemCaseSensitive(job, "requeue") &&
	      !cJSON_GetObjectItemCaseSensitive(job, "no_requeue") &&
	      !cJSON_GetObjectItemCaseSensitive(job, "hold") &&
	      !cJSON_GetObjectItemCaseSensitive(job, "dependency") &&
	      !cJSON_GetObjectItemCaseSensitive(job, "signal") &&
	      !cJSON_GetObjectItemCaseSensitive(job, "time_limit"));
	cJSON_Delete(root);

	/* Everything. */
	nv_slurm_desc_set(&d, "comment", "navette:p-1", &err);
	nv_slurm_desc_set(&d, "partition", "gpu", &err);
	nv_slurm_desc_set(&d, "account", "vision", &err);
	nv_slurm_desc_set(&d, "qos", "normal", &err);
	nv_slurm_desc_set(&d, "time_limit", "30m", &err);
	nv_slurm_desc_set(&d, "cpus", "4", &err);
	nv_slurm_desc_set(&d, "memory", "8GiB", &err);
	nv_slurm_desc_set(&d, "gpus", "2", &err);
	nv_slurm_desc_set(&d, "gres", "gpu:a100:2", &err);
	nv_slurm_desc_set(&d, "nodes", "gpu-b", &err);
	nv_slurm_desc_set(&d, "stdout", "/srv/o.txt", &err);
	nv_slurm_desc_set(&d, "stderr", "/srv/e.txt", &err);
	nv_slurm_desc_set(&d, "requeue", "false", &err);
	nv_slurm_desc_set(&d, "hold", "true", &err);
	nv_slurm_desc_set(&d, "after", "7,8_2", &err);
	nv_slurm_desc_set(&d, "array", "0-5", &err);
	nv_slurm_desc_setenv(&d, "NAVETTE_JOB_ID", "p-1", &err);
	nv_slurm_desc_setenv(&d, "QUOTE", "a \"b\"\n", &err);
	root = build(&d, "#!/bin/sh\necho \"$NAVETTE_JOB_ID\"\n", &rc);
	CHECK(rc == 0 && root);
	job = cJSON_GetObjectItemCaseSensitive(root, "job");
	CHECK_STR(str_at(job, "comment"), "navette:p-1");
	CHECK_STR(str_at(job, "partition"), "gpu");
	CHECK_STR(str_at(job, "account"), "vision");
	CHECK_STR(str_at(job, "qos"), "normal");
	CHECK(num_at(job, "time_limit") == 30);
	CHECK(num_at(job, "cpus_per_task") == 4);
	CHECK(num_at(job, "memory_per_node") == 8192);
	CHECK_STR(str_at(job, "gpus"), "2"); /* a string in v0.0.38 */
	CHECK_STR(str_at(job, "gres"), "gpu:a100:2");
	CHECK_STR(str_at(job, "nodelist"), "gpu-b");
	CHECK_STR(str_at(job, "standard_output"), "/srv/o.txt");
	CHECK_STR(str_at(job, "standard_error"), "/srv/e.txt");
	/* no warning signal: through slurmrestd it reaches job steps only,
	 * never the batch script (the launcher keeps the time itself) */
	CHECK(!cJSON_GetObjectItemCaseSensitive(job, "signal"));
	/* sbatch flags: presence sets them, so "no" is no_requeue */
	CHECK(!cJSON_GetObjectItemCaseSensitive(job, "requeue"));
	CHECK(cJSON_IsTrue(
		cJSON_GetObjectItemCaseSensitive(job, "no_requeue")));
	CHECK(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(job, "hold")));
	/* after: Slurm's afterok, and Slurm ends a job whose dependency
	 * can never be satisfied */
	CHECK_STR(str_at(job, "dependency"), "afterok:7:8_2");
	CHECK_STR(str_at(job, "array"), "0-5");
	CHECK(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(
		job, "kill_on_invalid_dependency")));
	env = cJSON_GetObjectItemCaseSensitive(job, "environment");
	CHECK(cJSON_GetArraySize(env) == 2);
	CHECK_STR(str_at(env, "NAVETTE_JOB_ID"), "p-1");
	CHECK_STR(str_at(env, "QUOTE"), "a \"b\"\n");
	cJSON_Delete(root);

	nv_slurm_desc_set(&d, "requeue", "true", &err);
	root = build(&d, "#!/bin/sh\n", &rc);
	job = cJSON_GetObjectItemCaseSensitive(root, "job");
	CHECK(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(job, "requeue")));
	CHECK(!cJSON_GetObjectItemCaseSensitive(job, "no_requeue"));
	cJSON_Delete(root);
	nv_slurm_desc_free(&d);
}

static void test_parse(void)
{
	nv_slurm_job *jobs = NULL;
	size_t n = 0, len;
	long long id;
	nv_err err;
	char *body;

	CHECK_STR(nv_slurm_api_versions()[0], "v0.0.38");

	body = load("submit_ok.json", &len);
	CHECK(nv_slurm_parse_submit("v0.0.38", body, len, &id, &err) == 0);
	CHECK(id > 0);
	free(body);
	/* held: a job id, and a warning in "errors" */
	body = load("submit_held.json", &len);
	CHECK(nv_slurm_parse_submit("v0.0.38", body, len, &id, &err) == 0);
	CHECK(id > 0);
	free(body);
	body = load("submit_bad_partition.json", &len);
	CHECK(nv_slurm_parse_submit("v0.0.38", body, len, &id, &err) ==
	      NV_EBACKEND);
	CHECK(id == 0);
	free(body);
	CHECK(nv_slurm_parse_submit("v0.0.38", "[]", 2, &id, &err) ==
	      NV_EBACKEND);
	CHECK(nv_slurm_parse_submit("v0.0.38", "{\"job_id\":-4}", 13, &id,
				    &err) == NV_EBACKEND);

	body = load("job_failed.json", &len);
	CHECK(nv_slurm_parse_jobs("v0.0.38", body, len, 16, &jobs, &n, &err) ==
	      0);
	CHECK(n == 1);
	if (n == 1) {
		CHECK(jobs[0].job_id > 0);
		CHECK_STR(jobs[0].state, "FAILED");
		CHECK_STR(jobs[0].reason, "NonZeroExitCode");
		CHECK_STR(jobs[0].name, "nv-fail");
		CHECK_STR(jobs[0].nodes, "gpu-b");
		CHECK_STR(jobs[0].user, "root");
		CHECK_STR(jobs[0].partition, "debug");
		CHECK(jobs[0].exit_code == 3); /* raw 768 */
		CHECK(jobs[0].exit_signal == 0);
		CHECK(jobs[0].start_time > 1e9 &&
		      jobs[0].end_time >= jobs[0].start_time);
	}
	free(jobs);
	free(body);

	body = load("job_node_fail.json", &len);
	CHECK(nv_slurm_parse_jobs("v0.0.38", body, len, 16, &jobs, &n, &err) ==
	      0);
	CHECK(n == 1 && strcmp(jobs[0].state, "NODE_FAIL") == 0 &&
	      strcmp(jobs[0].nodes, "gpu-a") == 0 && jobs[0].requeue == 0);
	free(jobs);
	free(body);

	body = load("job_held.json", &len);
	CHECK(nv_slurm_parse_jobs("v0.0.38", body, len, 16, &jobs, &n, &err) ==
	      0);
	CHECK(n == 1 && strcmp(jobs[0].reason, "JobHeldUser") == 0 &&
	      jobs[0].start_time == 0 && jobs[0].nodes[0] == '\0');
	free(jobs);
	free(body);

	body = load("jobs_list.json", &len);
	CHECK(nv_slurm_parse_jobs("v0.0.38", body, len, 0, &jobs, &n, &err) ==
	      0);
	CHECK(n == 4);
	free(jobs);
	CHECK(nv_slurm_parse_jobs("v0.0.38", body, len, 2, &jobs, &n, &err) ==
	      NV_ENOMEM);
	CHECK(jobs == NULL && n == 0);
	free(body);

	/* Hostile: control characters cleaned, long strings cut, bad ids
	 * refused, a missing list is an error. */
	{
		char big[2048], hostile[4096];

		memset(big, 'x', sizeof(big) - 1);
		big[sizeof(big) - 1] = '\0';
		snprintf(hostile, sizeof(hostile),
			 "{\"jobs\":[{\"job_id\":7,\"job_state\":\"RUNNING\","
			 "\"name\":\"a\\u001b[31mb\",\"comment\":\"%s\","
			 "\"exit_code\":1e300,\"restart_cnt\":-3,"
			 "\"start_time\":\"soon\"}]}",
			 big);
		CHECK(nv_slurm_parse_jobs("v0.0.38", hostile, strlen(hostile),
					  0, &jobs, &n, &err) == 0);
		CHECK(n == 1);
		if (n == 1) {
			CHECK_STR(jobs[0].name, "a?[31mb");
			CHECK(strlen(jobs[0].comment) ==
			      sizeof(jobs[0].comment) - 1);
			CHECK(jobs[0].exit_code == 0 && jobs[0].restarts == 0 &&
			      jobs[0].start_time == 0);
		}
		free(jobs);
		snprintf(hostile, sizeof(hostile),
			 "{\"jobs\":[{\"job_id\":\"7\",\"job_state\":\"R\"}]}");
		CHECK(nv_slurm_parse_jobs("v0.0.38", hostile, strlen(hostile),
					  0, &jobs, &n, &err) == NV_EBACKEND);
		snprintf(
			hostile, sizeof(hostile),
			"{\"jobs\":[{\"job_id\":7.5e12,\"job_state\":\"R\"}]}");
		CHECK(nv_slurm_parse_jobs("v0.0.38", hostile, strlen(hostile),
					  0, &jobs, &n, &err) == NV_EBACKEND);
		CHECK(nv_slurm_parse_jobs("v0.0.38", "{\"jobs\":{}}", 11, 0,
					  &jobs, &n, &err) == NV_EBACKEND);
		CHECK(nv_slurm_parse_jobs("v0.0.38", "{\"jobs\":[", 9, 0, &jobs,
					  &n, &err) == NV_EBACKEND);
		CHECK(nv_slurm_parse_jobs("v0.0.38", "", 0, 0, &jobs, &n,
					  &err) == NV_EBACKEND);
		/* a UTF-8 sequence is not cut in half */
		memset(hostile, 0, sizeof(hostile));
		strcpy(hostile, "{\"jobs\":[{\"job_id\":7,\"job_state\":\"R\","
				"\"name\":\"");
		for (int i = 0; i < 300; i++)
			strcat(hostile, "\xc3\xa9");
		strcat(hostile, "\"}]}");
		CHECK(nv_slurm_parse_jobs("v0.0.38", hostile, strlen(hostile),
					  0, &jobs, &n, &err) == 0);
		CHECK(n == 1 && strlen(jobs[0].name) % 2 == 0 &&
		      strlen(jobs[0].name) >= 250);
		free(jobs);
	}
}

static int classify_file(long status, const char *file, int *slurm_errno,
			 nv_err *err)
{
	size_t len;
	char *body = load(file, &len);
	int rc = nv_slurm_classify(status, body, len, "submit", slurm_errno,
				   err);

	free(body);
	return rc;
}

/* A job array as slurmrestd lists it: each started task a record of its
 * own, the waiting ones in the array's record, a task cancelled while it
 * waited in none (navette says CANCELLED). */
static void test_array(void)
{
	nv_slurm_job *jobs = NULL, job;
	size_t n = 0, len;
	nv_err err;
	char *body = load("job_array.json", &len);
	long long array = 0;

	CHECK(nv_slurm_parse_jobs("v0.0.38", body, len, 0, &jobs, &n, &err) ==
	      0);
	CHECK(n == 5);
	for (size_t i = 0; i < n; i++)
		if (jobs[i].array_task_id < 0)
			array = jobs[i].job_id;
	CHECK(array > 0);
	CHECK(nv_slurm_task_pick(jobs, n, array, 2, &job) == 0);
	CHECK(job.array_job_id == array && job.array_task_id == 2);
	CHECK(job.job_id != array); /* its own record */
	CHECK_STR(job.state, "RUNNING");
	CHECK(nv_slurm_task_pick(jobs, n, array, 5, &job) == 0);
	CHECK(job.array_task_id == 5 && job.job_id == array);
	CHECK_STR(job.state, "PENDING");
	CHECK(nv_slurm_task_pick(jobs, n, array, 4, &job) == 0);
	CHECK(job.array_task_id == 4);
	CHECK_STR(job.state, "CANCELLED");
	CHECK(job.nodes[0] == '\0');
	CHECK(nv_slurm_task_pick(jobs, n, array + 1000, 1, &job) == -1);
	free(jobs);
	free(body);

	CHECK(nv_slurm_task_listed("0-3,5", 5));
	CHECK(nv_slurm_task_listed("0-3,5", 0));
	CHECK(!nv_slurm_task_listed("0-3,5", 4));
	CHECK(nv_slurm_task_listed("1-9:2", 7));
	CHECK(!nv_slurm_task_listed("1-9:2", 8));
	CHECK(nv_slurm_task_listed("0-999%10", 500));
	CHECK(!nv_slurm_task_listed("", 0));
	CHECK(!nv_slurm_task_listed("x", 0));
}

static void test_classify(void)
{
	nv_err err;
	int se;

	CHECK(classify_file(200, "submit_ok.json", &se, &err) == 0);
	CHECK(classify_file(200, "submit_held.json", &se, &err) == 0);

	/* A refused token: a bare 500 from slurmrestd 22.05, made an
	 * identity error with the hint of what to check. */
	CHECK(classify_file(500, "ping_token_refused.json", &se, &err) ==
	      NV_EREFUSED);
	CHECK(contains(err.message, "refused the token"));
	CHECK(contains(err.hint, "token/key") && contains(err.hint, "clock") &&
	      contains(err.hint, "user"));
	CHECK(!contains(err.message, "HTTP 500"));
	CHECK(classify_file(500, "jobs_token_refused.json", &se, &err) ==
	      NV_EREFUSED);
	CHECK(contains(err.hint, "token/key"));
	CHECK(nv_slurm_classify(401, "Authentication failure", 22, "ping", &se,
				&err) == NV_EREFUSED);
	CHECK(contains(err.hint, "token/key"));

	CHECK(classify_file(500, "submit_bad_partition.json", &se, &err) ==
	      NV_EREFUSED);
	CHECK(se == 2000);
	CHECK(contains(err.message, "Invalid partition name specified"));
	CHECK(contains(err.hint, "partition"));
	CHECK(classify_file(500, "submit_unknown_key.json", &se, &err) ==
	      NV_EINVAL);
	CHECK(contains(err.message, "Unknown key"));
	CHECK(classify_file(500, "submit_no_environment.json", &se, &err) ==
	      NV_EINVAL);
	CHECK(contains(err.message, "environment must be set"));
	CHECK(classify_file(500, "job_not_found.json", &se, &err) ==
	      NV_ENOTFOUND);
	CHECK(se == 2017);
	CHECK(nv_slurm_classify(404, "Unable find requested URL.", 26, "ping",
				&se, &err) == NV_ENOTFOUND);
	CHECK(nv_slurm_classify(500,
				"{\"errors\":[{\"error_number\":2021,"
				"\"error\":\"Job/step already completing or "
				"completed\"}]}",
				86, "cancel", &se, &err) == NV_EREFUSED);
	CHECK(se == NV_SLURM_ERRNO_ALREADY_DONE);
	CHECK(nv_slurm_classify(502, "<html>bad gateway</html>", 24, "ping",
				&se, &err) == NV_EBACKEND);
	CHECK(contains(err.message, "HTTP 502"));
	CHECK(nv_slurm_classify(500, NULL, 0, NULL, &se, &err) == NV_EBACKEND);
}

static nv_slurm_job job_in(const char *state, const char *reason)
{
	nv_slurm_job j;

	memset(&j, 0, sizeof(j));
	j.job_id = 42;
	snprintf(j.state, sizeof(j.state), "%s", state);
	snprintf(j.reason, sizeof(j.reason), "%s", reason);
	return j;
}

static void test_map(void)
{
	nv_slurm_view v;
	nv_slurm_job j;

	j = job_in("PENDING", "Priority");
	nv_slurm_map(&j, -1, &v);
	CHECK(!v.done && !v.blocked);
	CHECK_STR(v.state, "queued");
	CHECK_STR(v.phase, "accepted");
	CHECK_STR(v.detail, "PENDING (Priority)");
	CHECK(v.hint[0] == '\0' && v.exit_code == -1);

	j = job_in("PENDING", "JobHeldUser");
	nv_slurm_map(&j, -1, &v);
	CHECK(!v.done && v.blocked && contains(v.hint, "held"));
	j = job_in("PENDING", "QOSMaxJobsPerUserLimit");
	nv_slurm_map(&j, -1, &v);
	CHECK(v.blocked && contains(v.hint, "quota or limit"));
	j = job_in("PENDING", "ReqNodeNotAvail, UnavailableNodes:gpu-a");
	nv_slurm_map(&j, -1, &v);
	CHECK(v.blocked && contains(v.hint, "node"));
	j = job_in("PENDING", "InvalidAccount");
	nv_slurm_map(&j, -1, &v);
	CHECK(v.blocked && contains(v.hint, "cannot start"));
	j = job_in("PENDING", "BeginTime");
	j.restarts = 1;
	nv_slurm_map(&j, -1, &v);
	CHECK(!v.done && !v.blocked && contains(v.hint, "restart 1"));

	j = job_in("CONFIGURING", "None");
	nv_slurm_map(&j, -1, &v);
	CHECK(!v.done && strcmp(v.state, "queued") == 0);
	CHECK_STR(v.detail, "CONFIGURING");

	j = job_in("RUNNING", "None");
	nv_slurm_map(&j, -1, &v);
	CHECK(!v.done && strcmp(v.state, "running") == 0 &&
	      strcmp(v.phase, "running") == 0);
	j = job_in("COMPLETING", "None");
	nv_slurm_map(&j, -1, &v);
	CHECK(!v.done && strcmp(v.state, "running") == 0);
	j = job_in("SUSPENDED", "None");
	nv_slurm_map(&j, -1, &v);
	CHECK(!v.done && contains(v.hint, "suspended"));

	j = job_in("COMPLETED", "None");
	nv_slurm_map(&j, -1, &v);
	CHECK(v.done && strcmp(v.state, "succeeded") == 0 && v.exit_code == 0);

	j = job_in("FAILED", "NonZeroExitCode");
	j.exit_code = 3;
	j.start_time = 1000;
	nv_slurm_map(&j, -1, &v);
	CHECK(v.done && strcmp(v.state, "failed") == 0);
	CHECK_STR(v.phase, "running");
	CHECK(v.exit_code == 3 && contains(v.hint, "exited with code 3") &&
	      contains(v.hint, "parameters"));
	j = job_in("FAILED", "RaisedSignal:9(Killed)");
	j.exit_code = -1;
	j.exit_signal = 9;
	nv_slurm_map(&j, -1, &v);
	CHECK(v.done && contains(v.hint, "signal 9"));
	j = job_in("FAILED", "JobLaunchFailure");
	snprintf(j.nodes, sizeof(j.nodes), "gpu-b");
	nv_slurm_map(&j, -1, &v);
	CHECK(v.done && strcmp(v.phase, "accepted") == 0 &&
	      contains(v.hint, "gpu-b") &&
	      contains(v.hint, "working directory"));

	j = job_in("TIMEOUT", "TimeLimit");
	j.time_limit_min = 30;
	nv_slurm_map(&j, -1, &v);
	CHECK(v.done && strcmp(v.state, "failed") == 0 &&
	      strcmp(v.phase, "running") == 0 && contains(v.hint, "30 min"));
	j = job_in("OUT_OF_MEMORY", "OutOfMemory");
	nv_slurm_map(&j, -1, &v);
	CHECK(v.done && contains(v.hint, "memory"));

	/* Node failure and preemption: not done when requeue is allowed. */
	j = job_in("NODE_FAIL", "NodeDown");
	snprintf(j.nodes, sizeof(j.nodes), "gpu-a");
	j.start_time = 1000;
	nv_slurm_map(&j, 1, &v);
	CHECK(!v.done && strcmp(v.state, "queued") == 0);
	CHECK_STR(v.detail, "NODE_FAIL on gpu-a");
	nv_slurm_map(&j, 0, &v);
	CHECK(v.done && strcmp(v.state, "failed") == 0 &&
	      strcmp(v.phase, "running") == 0 &&
	      contains(v.hint, "allow requeue"));
	j.requeue = 1;
	nv_slurm_map(&j, -1, &v); /* the job's own flag */
	CHECK(!v.done);
	j = job_in("PREEMPTED", "None");
	nv_slurm_map(&j, 1, &v);
	CHECK(!v.done && contains(v.hint, "preempted"));
	nv_slurm_map(&j, 0, &v);
	CHECK(v.done && strcmp(v.state, "failed") == 0 &&
	      strcmp(v.phase, "accepted") == 0); /* it never started */

	j = job_in("BOOT_FAIL", "None");
	nv_slurm_map(&j, 1, &v);
	CHECK(v.done && strcmp(v.phase, "accepted") == 0 &&
	      contains(v.hint, "boot"));
	j = job_in("DEADLINE", "None");
	nv_slurm_map(&j, -1, &v);
	CHECK(v.done && strcmp(v.state, "failed") == 0);

	j = job_in("CANCELLED", "None");
	j.start_time = 1000; /* a pending job's estimate: not a start */
	nv_slurm_map(&j, -1, &v);
	CHECK(v.done && strcmp(v.state, "cancelled") == 0 &&
	      strcmp(v.phase, "accepted") == 0 && v.exit_code == -1);
	snprintf(j.nodes, sizeof(j.nodes), "gpu-a");
	nv_slurm_map(&j, -1, &v);
	CHECK_STR(v.phase, "running");

	j = job_in("REQUEUED", "None");
	nv_slurm_map(&j, -1, &v);
	CHECK(!v.done && strcmp(v.state, "queued") == 0);
	j = job_in("REQUEUE_HOLD", "None");
	nv_slurm_map(&j, -1, &v);
	CHECK(!v.done && v.blocked && contains(v.hint, "release"));
	j = job_in("SPECIAL_EXIT", "None");
	nv_slurm_map(&j, -1, &v);
	CHECK(v.done && strcmp(v.state, "failed") == 0);

	j = job_in("WARP_DRIVE", "None");
	nv_slurm_map(&j, -1, &v);
	CHECK(!v.done && contains(v.hint, "WARP_DRIVE") &&
	      contains(v.hint, "squeue -j 42"));
}

/* The recorded answers, mapped end to end. */
static void test_recorded(void)
{
	static const struct {
		const char *file, *state, *phase;
		int done, exit_code;
	} cases[] = {
		{"job_completed.json", "succeeded", "succeeded", 1, 0},
		{"job_failed.json", "failed", "running", 1, 3},
		{"job_node_fail.json", "failed", "running", 1, -1},
		{"job_running.json", "running", "running", 0, -1},
		{"job_held.json", "queued", "accepted", 0, -1},
		{"job_cancelled.json", "cancelled", "accepted", 1, -1},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		nv_slurm_job *jobs = NULL;
		nv_slurm_view v;
		size_t n = 0, len;
		nv_err err;
		char *body = load(cases[i].file, &len);

		CHECK(nv_slurm_parse_jobs("v0.0.38", body, len, 1, &jobs, &n,
					  &err) == 0 &&
		      n == 1);
		if (n == 1) {
			nv_slurm_map(&jobs[0], -1, &v);
			CHECK_STR(v.state, cases[i].state);
			CHECK_STR(v.phase, cases[i].phase);
			CHECK(v.done == cases[i].done);
			CHECK(v.exit_code == cases[i].exit_code);
		}
		free(jobs);
		free(body);
	}
}

int main(void)
{
	find_data_dir_of("slurm");
	test_desc();
	test_build();
	test_parse();
	test_array();
	test_classify();
	test_map();
	test_recorded();
	return nv_test_done();
}
