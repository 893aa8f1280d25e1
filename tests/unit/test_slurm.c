/* Tests of the Slurm REST client (host/jobs/slurm*.c) against the real
 * test cluster of tests/stack/slurm-start.sh (the ctest fixture "slurm"): jobs
 * run on the node asked for (gpu-a, then gpu-b), a failing script is
 * FAILED with its exit code, a cancel while running gives CANCELLED, an
 * expired token, a forged one and a wrong key are identity errors, a job
 * found by name is not submitted twice, a job outlives the process that
 * submitted it, a node whose slurmd dies under a job gives NODE_FAIL (and a
 * requeue onto the other node when allowed), minted tokens are renewed,
 * and a session reuses its connection. Needs SLURM_STACK_ENV and
 * NAVETTE_SOURCE (set by ctest). */
#include "jobs/slurm.h"
#include "core/fsutil.h"
#include "creds/secret.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "nv_test.h"

static char rest_url[256], jwt_key_path[512], user[64], stack_dir[512];
static char source_dir[1024], work[512];
static nv_secret *signing_key;

static int contains(const char *hay, const char *needle)
{
	return hay && strstr(hay, needle) != NULL;
}

static void sleep_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};

	nanosleep(&ts, NULL);
}

/* Reads KEY=VALUE lines of slurm.env into our globals and SLURM_CONF. */
static int read_env(void)
{
	const char *path = getenv("SLURM_STACK_ENV");
	char line[1024];
	FILE *f;

	if (!path || !(f = fopen(path, "r"))) {
		fprintf(stderr, "no Slurm stack: SLURM_STACK_ENV=%s\n",
			path ? path : "(unset)");
		return -1;
	}
	while (fgets(line, sizeof(line), f)) {
		char *eq = strchr(line, '='), *nl = strchr(line, '\n');

		if (nl)
			*nl = '\0';
		if (!eq)
			continue;
		*eq++ = '\0';
		if (strcmp(line, "SLURMRESTD_URL") == 0)
			snprintf(rest_url, sizeof(rest_url), "%s", eq);
		else if (strcmp(line, "SLURM_JWT_KEY") == 0)
			snprintf(jwt_key_path, sizeof(jwt_key_path), "%s", eq);
		else if (strcmp(line, "SLURM_USER") == 0)
			snprintf(user, sizeof(user), "%s", eq);
		else if (strcmp(line, "SLURM_CONF") == 0)
			setenv("SLURM_CONF", eq, 1);
	}
	fclose(f);
	snprintf(stack_dir, sizeof(stack_dir), "%s", path);
	*strrchr(stack_dir, '/') = '\0';
	snprintf(source_dir, sizeof(source_dir), "%s",
		 getenv("NAVETTE_SOURCE") ? getenv("NAVETTE_SOURCE") : ".");
	return rest_url[0] && jwt_key_path[0] && user[0] ? 0 : -1;
}

static nv_secret *secret_of(const char *name, nv_secret_kind kind,
			    const char *field, const void *value, size_t len)
{
	nv_err err;
	nv_secret *s = nv_secret_new(name, kind, "file", &err);

	if (!s || nv_secret_set(s, field, value, len, &err))
		abort();
	return s;
}

/* A token from `scontrol token`, as a bearer secret. */
static nv_secret *scontrol_token(int lifespan)
{
	char cmd[128], line[4096];
	nv_secret *s = NULL;
	FILE *p;

	snprintf(cmd, sizeof(cmd),
		 "scontrol token username=%s lifespan=%d 2>/dev/null", user,
		 lifespan);
	p = popen(cmd, "r");
	if (!p)
		return NULL;
	while (fgets(line, sizeof(line), p)) {
		if (strncmp(line, "SLURM_JWT=", 10) == 0) {
			line[strcspn(line, "\n")] = '\0';
			s = secret_of("slurm-token", NV_SECRET_BEARER, "token",
				      line + 10, strlen(line + 10));
		}
	}
	pclose(p);
	return s;
}

static int open_with(nv_slurm **s, const nv_secret *cred, double lifespan,
		     double max, nv_err *err)
{
	nv_slurm_config cfg = {.endpoint = rest_url,
			       .user = user,
			       .credential = cred,
			       .token_lifespan_s = lifespan,
			       .token_max_s = max};

	return nv_slurm_open(s, &cfg, err);
}

static void desc_for(nv_slurm_job_desc *d, const char *name, const char *node)
{
	char out[700];
	nv_err err;

	nv_slurm_desc_init(d);
	nv_slurm_desc_set(d, "name", name, &err);
	nv_slurm_desc_set(d, "working_directory", work, &err);
	snprintf(out, sizeof(out), "%s/%s-%%j.out", work, name);
	nv_slurm_desc_set(d, "stdout", out, &err);
	if (node)
		nv_slurm_desc_set(d, "nodes", node, &err);
	nv_slurm_desc_setenv(d, "PATH", "/usr/bin:/bin", &err);
}

/* Polls until the job is done (view.done) or until pred says stop. */
static int wait_job(nv_slurm *s, long long id, int secs, int requeue,
		    const char *until_state, nv_slurm_job *job,
		    nv_slurm_view *v)
{
	nv_err err;

	for (int i = 0; i < secs * 4; i++) {
		if (nv_slurm_job_get(s, id, job, &err) == 0) {
			nv_slurm_map(job, requeue, v);
			if (until_state ? strcmp(job->state, until_state) == 0
					: v->done)
				return 0;
		}
		sleep_ms(250);
	}
	fprintf(stderr, "job %lld: still %s after %d s\n", id, job->state,
		secs);
	return -1;
}

static char *read_output(const char *name, long long id)
{
	char path[800], *data = NULL;
	size_t len;

	snprintf(path, sizeof(path), "%s/%s-%lld.out", work, name, id);
	if (nv_read_file(&data, &len, path, 65536, NULL))
		return NULL;
	return data;
}

static int node_ctl(const char *verb, const char *node)
{
	char cmd[2048];

	snprintf(cmd, sizeof(cmd),
		 "bash '%s/tests/stack/slurm-node.sh' '%s' %s %s", source_dir,
		 stack_dir, verb, node);
	return system(cmd);
}

static int node_idle(const char *node)
{
	char cmd[256], line[64] = "";
	FILE *p;

	snprintf(cmd, sizeof(cmd), "sinfo -h -N -n %s -o %%T 2>/dev/null",
		 node);
	for (int i = 0; i < 120; i++) {
		p = popen(cmd, "r");
		if (p) {
			if (!fgets(line, sizeof(line), p))
				line[0] = '\0';
			pclose(p);
		}
		if (strncmp(line, "idle", 4) == 0 ||
		    strncmp(line, "mixed", 5) == 0 ||
		    strncmp(line, "allocated", 9) == 0)
			return 0;
		sleep_ms(500);
	}
	return -1;
}

static void test_open(void)
{
	nv_slurm *s = NULL;
	nv_secret *tok;
	nv_err err;

	/* Minted from the key: version discovered, lifespan capped. */
	CHECK(open_with(&s, signing_key, 10000, 300, &err) == 0);
	CHECK_STR(nv_slurm_version(s), "v0.0.38");
	CHECK(nv_slurm_token_lifespan(s) == 300);
	nv_slurm_close(s);

	/* Pre-issued by scontrol. */
	tok = scontrol_token(120);
	CHECK(tok != NULL);
	CHECK(open_with(&s, tok, 0, 600, &err) == 0);
	nv_slurm_close(s);
	/* ...but not one living longer than the profile allows. */
	s = NULL;
	CHECK(open_with(&s, tok, 0, 30, &err) == NV_EREFUSED);
	CHECK(s == NULL && contains(err.message, "over the profile's maximum"));
	nv_secret_free(tok);
}

static void test_identity(void)
{
	nv_slurm *s = NULL;
	nv_secret *tok, *bad;
	nv_err err;
	unsigned char wrong[32];

	/* Expired: refused before anything is sent. */
	tok = scontrol_token(1);
	CHECK(tok != NULL);
	sleep_ms(2100);
	CHECK(open_with(&s, tok, 0, 600, &err) == NV_EREFUSED);
	CHECK(contains(err.message, "expired"));
	CHECK(!contains(err.message,
			(const char *)nv_secret_get(tok, "token")->value));
	nv_secret_free(tok);

	/* Forged: slurmctld refuses it; an identity error, not a raw 500. */
	bad = secret_of("forged", NV_SECRET_BEARER, "token", "e30.e30.AAAA",
			12);
	CHECK(open_with(&s, bad, 0, 600, &err) == NV_EREFUSED);
	CHECK(contains(err.message, "refused the token"));
	CHECK(contains(err.hint, "token/key") && contains(err.hint, "clock") &&
	      contains(err.hint, "user"));
	CHECK(!contains(err.message, "e30.e30"));
	nv_secret_free(bad);

	/* Wrong key: tokens minted with it are refused. */
	for (size_t i = 0; i < sizeof(wrong); i++)
		wrong[i] = (unsigned char)(i * 7 + 1);
	bad = secret_of("wrong-key", NV_SECRET_HS256, "key", wrong,
			sizeof(wrong));
	CHECK(open_with(&s, bad, 60, 600, &err) == NV_EREFUSED);
	CHECK(contains(err.message, "refused the token"));
	CHECK(contains(err.message, "minted token"));
	CHECK(contains(err.hint, "token/key"));
	nv_secret_free(bad);

	/* A key given as a token kind it is not. */
	bad = secret_of("pw", NV_SECRET_BASIC, "user", "x", 1);
	CHECK(open_with(&s, bad, 60, 600, &err) == NV_EINVAL);
	nv_secret_free(bad);
}

static void test_nodes(nv_slurm *s)
{
	static const char *const nodes[] = {"gpu-a", "gpu-b"};
	nv_slurm_job_desc d;
	nv_slurm_job job;
	nv_slurm_view v;
	nv_err err;

	for (int i = 0; i < 2; i++) {
		char name[64], *out;
		long long id = 0;

		snprintf(name, sizeof(name), "nv-node-%s-%d", nodes[i],
			 (int)getpid());
		desc_for(&d, name, nodes[i]);
		nv_slurm_desc_set(&d, "gpus", "1", &err);
		nv_slurm_desc_set(&d, "memory", "64MiB", &err);
		nv_slurm_desc_set(&d, "time_limit", "5m", &err);
		CHECK(nv_slurm_submit(s,
				      "#!/bin/sh\n"
				      "echo \"node=$SLURMD_NODENAME "
				      "gpus=$CUDA_VISIBLE_DEVICES\"\n",
				      &d, &id, &err) == 0);
		nv_slurm_desc_free(&d);
		CHECK(id > 0);
		CHECK(wait_job(s, id, 60, -1, NULL, &job, &v) == 0);
		CHECK_STR(job.state, "COMPLETED");
		CHECK_STR(job.nodes, nodes[i]);
		CHECK_STR(v.state, "succeeded");
		CHECK(v.exit_code == 0);
		CHECK(job.time_limit_min == 5);
		out = read_output(name, id);
		{
			char want[64];

			snprintf(want, sizeof(want), "node=%s gpus=0\n",
				 nodes[i]);
			CHECK_STR(out, want);
		}
		free(out);
	}
}

static void test_failure(nv_slurm *s)
{
	nv_slurm_job_desc d;
	nv_slurm_job job;
	nv_slurm_view v;
	nv_err err;
	long long id = 0;
	long before;

	desc_for(&d, "nv-fails", NULL);
	CHECK(nv_slurm_submit(s, "#!/bin/sh\necho about to fail\nexit 7\n", &d,
			      &id, &err) == 0);
	nv_slurm_desc_free(&d);
	CHECK(wait_job(s, id, 60, -1, NULL, &job, &v) == 0);
	CHECK_STR(job.state, "FAILED");
	CHECK(job.exit_code == 7);
	CHECK_STR(v.state, "failed");
	CHECK_STR(v.phase, "running");
	CHECK(v.exit_code == 7 && contains(v.hint, "exited with code 7"));

	/* An unknown resource is refused before any request. */
	desc_for(&d, "nv-never", NULL);
	before = nv_slurm_requests(s);
	CHECK(nv_slurm_desc_set(&d, "gpu_count", "1", &err) == NV_EINVAL);
	CHECK(nv_slurm_requests(s) == before);
	/* A partition the cluster lacks: refused by slurmctld, said so. */
	nv_slurm_desc_set(&d, "partition", "nosuchpart", &err);
	CHECK(nv_slurm_submit(s, "#!/bin/sh\ntrue\n", &d, &id, &err) ==
	      NV_EREFUSED);
	CHECK(contains(err.message, "Invalid partition name"));
	nv_slurm_desc_free(&d);

	/* Unknown job. */
	CHECK(nv_slurm_job_get(s, 4000000000LL, &job, &err) == NV_ENOTFOUND);
}

static void test_cancel(nv_slurm *s)
{
	nv_slurm_job_desc d;
	nv_slurm_job job;
	nv_slurm_view v;
	nv_err err;
	long long id = 0;
	int was_done = -1;

	desc_for(&d, "nv-cancel", NULL);
	CHECK(nv_slurm_submit(s, "#!/bin/sh\nsleep 120\n", &d, &id, &err) == 0);
	nv_slurm_desc_free(&d);
	CHECK(wait_job(s, id, 60, -1, "RUNNING", &job, &v) == 0);
	CHECK_STR(v.state, "running");
	CHECK(nv_slurm_cancel(s, id, &was_done, &err) == 0);
	CHECK(was_done == 0);
	CHECK(wait_job(s, id, 60, -1, NULL, &job, &v) == 0);
	CHECK_STR(job.state, "CANCELLED");
	CHECK_STR(v.state, "cancelled");
	CHECK_STR(v.phase, "running");
	/* twice is harmless */
	CHECK(nv_slurm_cancel(s, id, &was_done, &err) == 0);
	/* v0.0.38 has no requeue request: refused with what to do */
	CHECK(nv_slurm_requeue(s, id, &err) == NV_EREFUSED);
	CHECK(contains(err.hint, "requeue = true"));
}

/* Idempotent submission: the navette id travels in name and comment; a
 * retry finds the job instead of submitting it again, even when the
 * process that submitted it was killed. The job completes regardless. */
static void test_idempotent(nv_slurm *s)
{
	nv_slurm_job_desc d;
	nv_slurm_job job, found;
	nv_slurm_view v;
	nv_err err;
	char name[64], comment[80];
	int matches = -1, status;
	pid_t child;

	snprintf(name, sizeof(name), "nv-idem-%d", (int)getpid());
	snprintf(comment, sizeof(comment), "navette:%s", name);
	CHECK(nv_slurm_find(s, name, comment, &found, &matches, &err) ==
	      NV_ENOTFOUND);
	CHECK(matches == 0);

	child = fork();
	if (child == 0) {
		nv_slurm *cs = NULL;
		long long id = 0;

		if (open_with(&cs, signing_key, 60, 600, &err))
			_exit(2);
		desc_for(&d, name, NULL);
		nv_slurm_desc_set(&d, "comment", comment, &err);
		if (nv_slurm_submit(cs, "#!/bin/sh\nsleep 4\necho finished\n",
				    &d, &id, &err))
			_exit(3);
		/* the answer is "lost": the submitter dies at once */
		raise(SIGKILL);
		_exit(4);
	}
	CHECK(child > 0);
	CHECK(waitpid(child, &status, 0) == child);
	CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);

	/* The retry looks first: found, exactly once. */
	CHECK(nv_slurm_find(s, name, comment, &found, &matches, &err) == 0);
	CHECK(matches == 1);
	CHECK_STR(found.name, name);
	CHECK_STR(found.comment, comment);
	CHECK(nv_slurm_find(s, name, NULL, &found, &matches, &err) == 0);
	CHECK(matches == 1);
	/* and the job, whose submitter is gone, completes */
	CHECK(wait_job(s, found.job_id, 60, -1, NULL, &job, &v) == 0);
	CHECK_STR(job.state, "COMPLETED");
	{
		char *out = read_output(name, found.job_id);

		CHECK_STR(out, "finished\n");
		free(out);
	}
	/* still one job of that name after all this */
	CHECK(nv_slurm_find(s, name, comment, &found, &matches, &err) == 0);
	CHECK(matches == 1);

	/* The listing holds only the session user's jobs. */
	{
		nv_slurm_job *jobs = NULL;
		size_t n = 0;
		int all_ours = 1;

		CHECK(nv_slurm_jobs(s, &jobs, &n, &err) == 0);
		CHECK(n >= 1);
		for (size_t i = 0; i < n; i++)
			all_ours &= strcmp(jobs[i].user, user) == 0;
		CHECK(all_ours);
		free(jobs);
	}
}

/* The slurmd of the job's node dies mid-run. */
static void test_node_failure(nv_slurm *s)
{
	nv_slurm_job_desc d;
	nv_slurm_job job;
	nv_slurm_view v;
	nv_err err;
	long long id = 0;
	char node[NV_SLURM_TEXT_MAX];
	int saw_failure = 0;

	/* Without requeue: NODE_FAIL, done, failed. */
	desc_for(&d, "nv-nodefail", "gpu-a");
	nv_slurm_desc_set(&d, "requeue", "false", &err);
	CHECK(nv_slurm_submit(s, "#!/bin/sh\nsleep 90\n", &d, &id, &err) == 0);
	nv_slurm_desc_free(&d);
	CHECK(wait_job(s, id, 60, 0, "RUNNING", &job, &v) == 0);
	CHECK(job.requeue == 0);
	CHECK(node_ctl("kill", "gpu-a") == 0);
	CHECK(wait_job(s, id, 90, 0, NULL, &job, &v) == 0);
	CHECK_STR(job.state, "NODE_FAIL");
	CHECK_STR(v.state, "failed");
	CHECK_STR(v.detail, "NODE_FAIL on gpu-a");
	CHECK(contains(v.hint, "allow requeue"));
	CHECK(node_ctl("start", "gpu-a") == 0);
	CHECK(node_idle("gpu-a") == 0);

	/* With requeue: Slurm puts it back and it ends on the other node. */
	desc_for(&d, "nv-requeue", NULL);
	nv_slurm_desc_set(&d, "requeue", "true", &err);
	CHECK(nv_slurm_submit(s,
			      "#!/bin/sh\necho \"start $SLURMD_NODENAME "
			      "$SLURM_RESTART_COUNT\"\n"
			      /* long enough the first time for the node's
			       * death to be noticed (SlurmdTimeout) */
			      "if [ \"${SLURM_RESTART_COUNT:-0}\" = 0 ]; then "
			      "sleep 90; else sleep 2; fi\n",
			      &d, &id, &err) == 0);
	nv_slurm_desc_free(&d);
	CHECK(wait_job(s, id, 60, 1, "RUNNING", &job, &v) == 0);
	snprintf(node, sizeof(node), "%s", job.nodes);
	CHECK(strcmp(node, "gpu-a") == 0 || strcmp(node, "gpu-b") == 0);
	CHECK(node_ctl("kill", node) == 0);
	for (int i = 0; i < 4 * 150; i++) {
		if (nv_slurm_job_get(s, id, &job, &err) == 0) {
			nv_slurm_map(&job, 1, &v);
			if (job.restarts > 0 && !v.done)
				saw_failure = 1;
			if (v.done)
				break;
		}
		sleep_ms(250);
	}
	CHECK(saw_failure);
	CHECK_STR(job.state, "COMPLETED");
	CHECK(job.restarts == 1);
	CHECK(job.nodes[0] && strcmp(job.nodes, node) != 0);
	CHECK(node_ctl("start", node) == 0);
	CHECK(node_idle(node) == 0);
}

/* Tokens minted with a short life are renewed as the session goes on. */
static void test_renewal(void)
{
	nv_slurm *s = NULL;
	nv_slurm_job *jobs = NULL;
	size_t n = 0;
	nv_err err;
	int ok = 1;

	CHECK(open_with(&s, signing_key, 8, 8, &err) == 0);
	CHECK(nv_slurm_token_lifespan(s) == 8);
	for (int i = 0; i < 7; i++) {
		ok &= nv_slurm_jobs(s, &jobs, &n, &err) == 0;
		free(jobs);
		jobs = NULL;
		sleep_ms(2000);
	}
	CHECK(ok); /* 14 s with tokens of 8 s */
	nv_slurm_close(s);
}

int main(void)
{
	nv_slurm *s = NULL;
	char *key = NULL;
	size_t key_len = 0;
	const char *tmp = getenv("TMPDIR");
	nv_err err;

	signal(SIGPIPE, SIG_IGN);
	if (read_env()) {
		CHECK(!"the Slurm stack's slurm.env is readable");
		return nv_test_done();
	}
	if (nv_read_file(&key, &key_len, jwt_key_path, 4096, NULL)) {
		CHECK(!"the cluster's JWT key is readable");
		return nv_test_done();
	}
	signing_key = secret_of("slurm-jwt-key", NV_SECRET_HS256, "key", key,
				key_len);
	free(key);
	/* outputs land here; slurmd runs the jobs as root on this host */
	snprintf(work, sizeof(work), "%s/nv-slurm-XXXXXX",
		 tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(work)) {
		perror("mkdtemp");
		return 1;
	}

	test_open();
	test_identity();
	CHECK(open_with(&s, signing_key, 600, 3600, &err) == 0);
	if (s) {
		test_nodes(s);
		test_failure(s);
		test_cancel(s);
		test_idempotent(s);
		test_node_failure(s);
		/* dozens of requests, over one kept-alive connection (a
		 * few more where slurmrestd closed one after an error) */
		printf("session: %ld requests, %ld connections\n",
		       nv_slurm_requests(s), nv_slurm_connections(s));
		CHECK(nv_slurm_requests(s) > 50);
		CHECK(nv_slurm_connections(s) <= 6);
	}
	nv_slurm_close(s);
	test_renewal();

	nv_secret_free(signing_key);
	nv_remove_tree(work, NULL);
	return nv_test_done();
}
