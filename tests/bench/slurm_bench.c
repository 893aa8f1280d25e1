/* Benchmark of the slurmrestd client (host/jobs/slurm.c): N job
 * submissions through one session (kept-alive connections, one minted
 * HS256 token reused until it nears its end), then the same jobs
 * cancelled. slurm_bench.sh sets the partition down first, so nothing
 * runs, and runs this next to N `sbatch` calls on the same cluster.
 *
 *   slurm_bench SLURM_ENV N SCRIPT
 *
 * SLURM_ENV is the slurm.env tests/stack/slurm-start.sh writes; SCRIPT the
 * batch script each job carries. Prints "key value" lines: jobs, submit
 * seconds, per-job milliseconds, requests, connections, cancel seconds,
 * failures. Exits non-zero if any submission failed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "creds/secret.h"
#include "jobs/slurm.h"

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	long n;

	if (!f)
		return NULL;
	if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 &&
	    n < 16 * 1024 * 1024 && fseek(f, 0, SEEK_SET) == 0 &&
	    (buf = malloc((size_t)n + 1)) != NULL) {
		if (fread(buf, 1, (size_t)n, f) != (size_t)n) {
			free(buf);
			buf = NULL;
		} else {
			buf[n] = '\0';
			*len = (size_t)n;
		}
	}
	fclose(f);
	return buf;
}

int main(int argc, char **argv)
{
	char url[512] = "", key_path[512] = "", user[128] = "",
	     partition[128] = "", line[1024];
	char *script, *key;
	size_t script_len = 0, key_len = 0;
	long n, i, failures = 0, cancel_failures = 0;
	long long *ids;
	nv_secret *cred;
	nv_slurm *s = NULL;
	nv_err err;
	double t0, t_submit, t_cancel;
	FILE *f;

	if (argc != 4 || (n = atol(argv[2])) <= 0 || n > 100000) {
		fprintf(stderr, "usage: slurm_bench SLURM_ENV N SCRIPT\n");
		return 2;
	}
	if (!(f = fopen(argv[1], "r"))) {
		perror(argv[1]);
		return 2;
	}
	while (fgets(line, sizeof(line), f)) {
		char *eq = strchr(line, '=');

		if (!eq)
			continue;
		line[strcspn(line, "\n")] = '\0';
		*eq++ = '\0';
		if (strcmp(line, "SLURMRESTD_URL") == 0)
			snprintf(url, sizeof(url), "%s", eq);
		else if (strcmp(line, "SLURM_JWT_KEY") == 0)
			snprintf(key_path, sizeof(key_path), "%s", eq);
		else if (strcmp(line, "SLURM_USER") == 0)
			snprintf(user, sizeof(user), "%s", eq);
		else if (strcmp(line, "SLURM_PARTITION") == 0)
			snprintf(partition, sizeof(partition), "%s", eq);
	}
	fclose(f);
	if (!url[0] || !key_path[0] || !user[0]) {
		fprintf(stderr,
			"%s: no SLURMRESTD_URL, SLURM_JWT_KEY or "
			"SLURM_USER\n",
			argv[1]);
		return 2;
	}
	if (!(script = slurp(argv[3], &script_len)) ||
	    !(key = slurp(key_path, &key_len))) {
		fprintf(stderr, "cannot read %s or %s\n", argv[3], key_path);
		return 2;
	}
	cred = nv_secret_new("slurm-jwt-key", NV_SECRET_HS256, "file", &err);
	if (!cred || nv_secret_set(cred, "key", key, key_len, &err)) {
		fprintf(stderr, "key: %s\n", err.message);
		return 2;
	}
	free(key);
	ids = calloc((size_t)n, sizeof(*ids));
	if (!ids)
		return 2;

	t0 = now();
	{
		nv_slurm_config cfg = {.endpoint = url,
				       .user = user,
				       .credential = cred,
				       .token_lifespan_s = 3600};

		if (nv_slurm_open(&s, &cfg, &err)) {
			fprintf(stderr, "open: %s\n", err.message);
			return 1;
		}
	}
	for (i = 0; i < n; i++) {
		nv_slurm_job_desc d;
		char name[64], comment[96];

		snprintf(name, sizeof(name), "bench-%ld", i);
		snprintf(comment, sizeof(comment), "navette-bench:%ld", i);
		nv_slurm_desc_init(&d);
		if (nv_slurm_desc_set(&d, "name", name, &err) ||
		    nv_slurm_desc_set(&d, "comment", comment, &err) ||
		    nv_slurm_desc_set(&d, "working_directory", "/tmp", &err) ||
		    nv_slurm_desc_set(&d, "stdout", "/dev/null", &err) ||
		    (partition[0] &&
		     nv_slurm_desc_set(&d, "partition", partition, &err)) ||
		    nv_slurm_desc_setenv(&d, "PATH", "/usr/bin:/bin", &err) ||
		    nv_slurm_submit(s, script, &d, &ids[i], &err)) {
			if (failures++ < 3)
				fprintf(stderr, "submit %ld: %s\n", i,
					err.message);
			ids[i] = 0;
		}
		nv_slurm_desc_free(&d);
	}
	t_submit = now() - t0;
	printf("jobs %ld\n", n);
	printf("submit_s %.3f\n", t_submit);
	printf("per_job_ms %.3f\n", t_submit * 1000.0 / (double)n);
	printf("requests %ld\n", nv_slurm_requests(s));
	printf("connections %ld\n", nv_slurm_connections(s));
	printf("failures %ld\n", failures);
	fflush(stdout);

	t0 = now();
	for (i = 0; i < n; i++) {
		int done = 0;

		if (ids[i] && nv_slurm_cancel(s, ids[i], &done, &err))
			cancel_failures++;
	}
	t_cancel = now() - t0;
	printf("cancel_s %.3f\n", t_cancel);
	printf("cancel_failures %ld\n", cancel_failures);
	nv_slurm_close(s);
	nv_secret_free(cred);
	free(ids);
	free(script);
	return failures || cancel_failures ? 1 : 0;
}
