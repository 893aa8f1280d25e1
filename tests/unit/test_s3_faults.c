/* Fault tests of the s3:// store (host/storage/s3.c): its requests go
 * through tests/data/s3/fault_proxy.py, a TCP proxy in front of the
 * radosgw fixture that resets (RST) a seeded fraction of the connections
 * after a random number of bytes. What must hold:
 *   - a multipart upload (24 MiB, three parts of 8 MiB) completes through
 *     the resets with the right sha256, as seen through the direct
 *     endpoint (head, get), for three seeds;
 *   - a download of 24 MiB through the resets completes with the right
 *     sha256 and leaves no temp file beside its destination;
 *   - with every connection reset, the upload fails with a backend error
 *     and leaves nothing: no object, no multipart upload in progress;
 *   - the proxy did reset connections each time (the faults were real).
 *
 * The server comes from the ctest fixture (S3_STACK_ENV, as test_s3.c);
 * the proxy is started with python3 from NAVETTE_TEST_DATA. */
#include "storage/s3.h"
#include "storage/sha256.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/fsutil.h"
#include "nv_test.h"

#define MIB        ((size_t)1024 * 1024)
#define OBJECT     (24 * MIB)
#define PART       (8 * MIB)
#define PROXY_WAIT 10000 /* ms for the proxy to print its port */

static char env_endpoint[256], env_region[64];
static char env_access[128], env_secret[256];
static char upstream[256]; /* host:port of env_endpoint */
static char proxy_script[512];
static char bucket[64];
static char scratch[512];

struct proxy {
	pid_t pid;
	char endpoint[64]; /* http://127.0.0.1:PORT */
	char log[600];     /* its stderr */
};

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int load_env(void)
{
	const char *path = getenv("S3_STACK_ENV");
	const char *data = getenv("NAVETTE_TEST_DATA");
	const char *rest;
	char line[512];
	FILE *f;

	if (!path || !path[0] || !data || !data[0]) {
		fprintf(stderr,
			"test_s3_faults: S3_STACK_ENV or NAVETTE_TEST_DATA is "
			"not set. This test needs a running radosgw: run it "
			"through ctest with the S3 fixture.\n");
		return -1;
	}
	if (nv_pathf(proxy_script, sizeof(proxy_script), "%s/s3/fault_proxy.py",
		     data))
		return -1;
	f = fopen(path, "r");
	if (!f) {
		fprintf(stderr, "test_s3_faults: cannot read %s: %s\n", path,
			strerror(errno));
		return -1;
	}
	while (fgets(line, sizeof(line), f)) {
		char *eq = strchr(line, '='), *v;

		if (!eq)
			continue;
		*eq = '\0';
		v = eq + 1;
		v[strcspn(v, "\r\n")] = '\0';
		if (strcmp(line, "S3_ENDPOINT") == 0)
			snprintf(env_endpoint, sizeof(env_endpoint), "%s", v);
		else if (strcmp(line, "S3_REGION") == 0)
			snprintf(env_region, sizeof(env_region), "%s", v);
		else if (strcmp(line, "S3_ACCESS_KEY") == 0)
			snprintf(env_access, sizeof(env_access), "%s", v);
		else if (strcmp(line, "S3_SECRET_KEY") == 0)
			snprintf(env_secret, sizeof(env_secret), "%s", v);
	}
	fclose(f);
	/* The proxy speaks TCP: a plain http:// endpoint is needed. */
	if (strncmp(env_endpoint, "http://", 7) != 0 || !env_access[0] ||
	    !env_secret[0]) {
		fprintf(stderr,
			"test_s3_faults: %s lacks an http:// S3_ENDPOINT, "
			"S3_ACCESS_KEY or S3_SECRET_KEY\n",
			path);
		return -1;
	}
	rest = env_endpoint + 7;
	snprintf(upstream, sizeof(upstream), "%.*s", (int)strcspn(rest, "/"),
		 rest);
	return 0;
}

static nv_secret *make_secret(const char *id, const char *secret)
{
	nv_err err;
	nv_secret *s = nv_secret_new("s3test", NV_SECRET_S3, "env", &err);

	if (!s || nv_secret_set(s, "access_key_id", id, strlen(id), &err) ||
	    nv_secret_set(s, "secret_access_key", secret, strlen(secret),
			  &err)) {
		fprintf(stderr, "test_s3_faults: secret: %s\n", err.message);
		abort();
	}
	return s;
}

/* The direct endpoint (to check what the server holds), or the proxy's:
 * the credential is bound to 127.0.0.1 on any port, the proxy's too. */
static void config_init(nv_s3_config *cfg, const nv_secret *cred,
			const struct proxy *via)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->endpoint = via ? via->endpoint : env_endpoint;
	cfg->region = env_region[0] ? env_region : NULL;
	cfg->credential = cred;
	cfg->retry_base_ms = 20;
	cfg->part_size = PART;
	if (via) {
		cfg->credential_host = "127.0.0.1";
		cfg->max_attempts = 6;
		cfg->total_timeout_ms = 60000;
	}
}

static void path_of(char *out, size_t cap, const char *name)
{
	if (nv_pathf(out, cap, "%s/%s", scratch, name))
		abort();
}

/* Writes size pseudo-random bytes to path. */
static void write_file(const char *path, size_t size, unsigned seed)
{
	FILE *f = fopen(path, "wb");
	unsigned x = seed * 2654435761u + 1;
	unsigned char *buf = malloc(MIB);

	if (!f || !buf)
		abort();
	for (size_t done = 0; done < size; done += MIB) {
		size_t n = size - done < MIB ? size - done : MIB;

		for (size_t i = 0; i < n; i++) {
			x = x * 1103515245u + 12345u;
			buf[i] = (unsigned char)(x >> 16);
		}
		if (fwrite(buf, 1, n, f) != n)
			abort();
	}
	free(buf);
	if (fclose(f))
		abort();
}

static int count_entries(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;

	if (!d)
		return -1;
	while ((e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			n++;
	closedir(d);
	return n;
}

/* --- the proxy ----------------------------------------------------------- */

/* Starts fault_proxy.py (seed, fraction, then the options in extra, NULL
 * ended; may be NULL), its stderr in scratch, and reads its port. 0, or
 * -1 (the proxy did not come up). */
static int proxy_start(struct proxy *p, unsigned seed, const char *fraction,
		       const char *const *extra)
{
	const char *argv[24] = {"python3", proxy_script, upstream, NULL,
				fraction,  "--lifetime", "300"};
	char seed_s[16], line[32] = "";
	int out[2], fd, n = 0;
	struct pollfd pfd;
	double deadline = now_s() + PROXY_WAIT / 1000.0;

	memset(p, 0, sizeof(*p));
	snprintf(seed_s, sizeof(seed_s), "%u", seed);
	argv[3] = seed_s;
	for (int i = 0; extra && extra[i]; i++) {
		if (7 + i >= 23)
			abort();
		argv[7 + i] = extra[i];
	}
	if (nv_pathf(p->log, sizeof(p->log), "%s/proxy-%u-%s.log", scratch,
		     seed, fraction) ||
	    pipe(out))
		abort();
	fd = open(p->log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		abort();
	p->pid = fork();
	if (p->pid < 0)
		abort();
	if (p->pid == 0) {
		if (dup2(out[1], 1) < 0 || dup2(fd, 2) < 0)
			_exit(127);
		close(out[0]);
		close(out[1]);
		execvp("python3", (char *const *)argv);
		_exit(127);
	}
	close(fd);
	close(out[1]);
	pfd.fd = out[0];
	pfd.events = POLLIN;
	while (!strchr(line, '\n') && n < (int)sizeof(line) - 1) {
		int left = (int)((deadline - now_s()) * 1000);
		ssize_t got;

		if (left <= 0 || poll(&pfd, 1, left) <= 0)
			break;
		got = read(out[0], line + n, sizeof(line) - 1 - (size_t)n);
		if (got <= 0)
			break;
		n += (int)got;
		line[n] = '\0';
	}
	close(out[0]);
	if (!strchr(line, '\n') || atoi(line) <= 0) {
		fprintf(stderr,
			"test_s3_faults: the proxy did not start "
			"(see %s)\n",
			p->log);
		kill(p->pid, SIGKILL);
		waitpid(p->pid, NULL, 0);
		p->pid = 0;
		return -1;
	}
	snprintf(p->endpoint, sizeof(p->endpoint), "http://127.0.0.1:%d",
		 atoi(line));
	return 0;
}

/* Stops the proxy; the number of connections it reset (-1: unknown).
 * Its log goes to stdout, for ctest's output. */
static long proxy_stop(struct proxy *p)
{
	char line[512];
	long resets = -1;
	const char *r;
	FILE *f;

	if (p->pid <= 0)
		return -1;
	kill(p->pid, SIGTERM);
	waitpid(p->pid, NULL, 0);
	p->pid = 0;
	f = fopen(p->log, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		fputs(line, stdout);
		r = strstr(line, " resets=");
		if (r && strstr(line, "connections="))
			resets = strtol(r + 8, NULL, 10);
	}
	fclose(f);
	return resets;
}

/* --- checks -------------------------------------------------------------- */

/* What the server holds at key, through the direct endpoint: size, the
 * recorded sha256 and that of the bytes, and a multipart ETag of nparts
 * parts (0: any). */
static void check_stored(const nv_secret *cred, const char *key,
			 const char *want, int nparts)
{
	nv_s3_config direct;
	nv_object_info info;
	char etag[NV_S3_ETAG_MAX + 1], dst[600], got[65], tail[16];
	size_t n;
	nv_err err;

	config_init(&direct, cred, NULL);
	CHECK(nv_s3_head_etag(&direct, bucket, key, &info, etag, &err) == 0);
	CHECK(info.size == OBJECT);
	CHECK_STR(info.sha256, want);
	if (nparts) {
		snprintf(tail, sizeof(tail), "-%d", nparts);
		n = strlen(etag);
		CHECK(n > strlen(tail) &&
		      strcmp(etag + n - strlen(tail), tail) == 0);
	}
	path_of(dst, sizeof(dst), "check.bin");
	CHECK(nv_s3_get_file(&direct, bucket, key, dst, &info, &err) == 0);
	CHECK(nv_sha256_file(dst, got, NULL, &err) == 0);
	CHECK_STR(got, want);
	unlink(dst);
}

static int count_upload(const char *key, const char *upload_id, void *payload)
{
	int *n = payload;

	printf("upload in progress: %s (%s)\n", key, upload_id);
	(*n)++;
	return 0;
}

/* Multipart uploads in progress under prefix, through the direct
 * endpoint; -1 when the listing fails. */
static int uploads_left(const nv_secret *cred, const char *prefix)
{
	nv_s3_config direct;
	int n = 0, truncated = 0;
	nv_err err;

	config_init(&direct, cred, NULL);
	if (nv_s3_list_uploads(&direct, bucket, prefix, count_upload, &n,
			       &truncated, &err)) {
		fprintf(stderr, "list uploads: %s\n", err.message);
		return -1;
	}
	return n;
}

/* --- the tests ----------------------------------------------------------- */

/* A 24 MiB multipart upload through connections reset at random. */
static void test_upload(const nv_secret *cred, unsigned seed)
{
	struct proxy px;
	nv_s3_config cfg;
	nv_object_info info;
	char src[600], key[64], prefix[32], want[65];
	nv_err err;
	double t0 = now_s();
	long resets;
	int rc;

	snprintf(prefix, sizeof(prefix), "up%u/", seed);
	snprintf(key, sizeof(key), "%sobject.bin", prefix);
	path_of(src, sizeof(src), "src.bin");
	write_file(src, OBJECT, seed);
	CHECK(nv_sha256_file(src, want, NULL, &err) == 0);
	if (proxy_start(&px, seed, "0.3", NULL)) {
		nv_test_failed++;
		return;
	}
	config_init(&cfg, cred, &px);
	rc = nv_s3_put_file(&cfg, bucket, key, src, &info, &err);
	resets = proxy_stop(&px);
	CHECK(rc == 0);
	if (rc)
		fprintf(stderr, "upload (seed %u): %s\n", seed, err.message);
	else
		CHECK_STR(info.sha256, want);
	printf("upload, seed %u: %ld resets, %.2f s\n", seed, resets,
	       now_s() - t0);
	CHECK(resets > 0);
	check_stored(cred, key, want, 3);
	/* Lost answers to an initiation may leave an upload behind (s3.c
	 * says so); a completed one must not. */
	printf("uploads left under %s: %d\n", prefix,
	       uploads_left(cred, prefix));
	unlink(src);
}

/* 24 MiB downloads through connections reset at random. */
static void test_download(const nv_secret *cred)
{
	struct proxy px;
	nv_s3_config cfg, direct;
	nv_object_info info;
	char src[600], dir[600], dst[700], want[65], got[65];
	nv_err err;
	double t0 = now_s();
	long resets;

	path_of(src, sizeof(src), "down.bin");
	write_file(src, OBJECT, 99);
	CHECK(nv_sha256_file(src, want, NULL, &err) == 0);
	config_init(&direct, cred, NULL);
	CHECK(nv_s3_put_file(&direct, bucket, "down/object.bin", src, NULL,
			     &err) == 0);
	unlink(src);
	path_of(dir, sizeof(dir), "dl");
	CHECK(mkdir(dir, 0755) == 0);
	if (nv_pathf(dst, sizeof(dst), "%s/object.bin", dir))
		abort();
	if (proxy_start(&px, 7, "0.5", NULL)) {
		nv_test_failed++;
		return;
	}
	config_init(&cfg, cred, &px);
	for (int i = 0; i < 4; i++) {
		int rc;

		unlink(dst);
		rc = nv_s3_get_file(&cfg, bucket, "down/object.bin", dst, &info,
				    &err);
		CHECK(rc == 0);
		if (rc) {
			fprintf(stderr, "download %d: %s\n", i, err.message);
			continue;
		}
		CHECK(info.size == OBJECT);
		CHECK_STR(info.sha256, want);
		CHECK(nv_sha256_file(dst, got, NULL, &err) == 0);
		CHECK_STR(got, want);
		/* The temp file was renamed or removed: only dst is left. */
		CHECK(count_entries(dir) == 1);
	}
	resets = proxy_stop(&px);
	printf("4 downloads: %ld resets, %.2f s\n", resets, now_s() - t0);
	CHECK(resets > 0);
}

/* Every connection reset: the upload fails, and leaves nothing. */
static void test_upload_all_reset(const nv_secret *cred)
{
	struct proxy px;
	nv_s3_config cfg, direct;
	nv_object_info info;
	char src[600], want[65];
	const char *key = "dead/object.bin";
	nv_err err;
	long resets;
	int rc;

	path_of(src, sizeof(src), "src.bin");
	write_file(src, OBJECT, 42);
	CHECK(nv_sha256_file(src, want, NULL, &err) == 0);
	if (proxy_start(&px, 11, "1.0", NULL)) {
		nv_test_failed++;
		return;
	}
	config_init(&cfg, cred, &px);
	cfg.max_attempts = 3;
	memset(&err, 0, sizeof(err));
	rc = nv_s3_put_file(&cfg, bucket, key, src, &info, &err);
	resets = proxy_stop(&px);
	printf("all reset: rc %d: %s [hint: %s] (%ld resets)\n", rc,
	       err.message, err.hint, resets);
	CHECK(rc == NV_EBACKEND);
	CHECK(strstr(err.message, "request failed") != NULL);
	CHECK(strstr(err.message, bucket) != NULL &&
	      strstr(err.message, key) != NULL);
	CHECK(strstr(err.message, env_secret) == NULL);
	CHECK(resets > 0);
	config_init(&direct, cred, NULL);
	CHECK(nv_s3_head(&direct, bucket, key, &info, &err) == NV_ENOTFOUND);
	CHECK(uploads_left(cred, "dead/") == 0);
	unlink(src);
}

/* Every answer to a completion cut after its first 20..200 bytes (its
 * status line, sometimes more): the server did publish the object, but
 * the client never reads the whole answer. s3.h: "a lost answer is
 * settled by a HEAD": either the upload succeeds (the HEAD found it) or,
 * when it fails, no object is visible. Both: no upload left. */
static void test_lost_completion(const nv_secret *cred)
{
	static const char *const extra[] = {
		"--match",     "^POST [^ ]*[?&]uploadId=",
		"--direction", "down",
		"--min-bytes", "20",
		"--max-bytes", "200",
		NULL};
	struct proxy px;
	nv_s3_config cfg, direct;
	nv_object_info info, head;
	char src[600], want[65];
	const char *key = "lost/object.bin";
	nv_err err;
	long resets;
	int rc, found;

	path_of(src, sizeof(src), "src.bin");
	write_file(src, OBJECT, 77);
	CHECK(nv_sha256_file(src, want, NULL, &err) == 0);
	if (proxy_start(&px, 5, "1.0", extra)) {
		nv_test_failed++;
		return;
	}
	config_init(&cfg, cred, &px);
	cfg.max_attempts = 3;
	memset(&err, 0, sizeof(err));
	rc = nv_s3_put_file(&cfg, bucket, key, src, &info, &err);
	resets = proxy_stop(&px);
	config_init(&direct, cred, NULL);
	found = nv_s3_head(&direct, bucket, key, &head, &err) == 0;
	printf("lost completion: rc %d: %s; object %s (%llu bytes, sha256 "
	       "'%s'; %ld resets)\n",
	       rc, rc ? err.message : "ok", found ? "published" : "absent",
	       found ? (unsigned long long)head.size : 0ULL,
	       found ? head.sha256 : "", resets);
	CHECK(resets > 0);
	if (rc == 0) {
		CHECK_STR(info.sha256, want);
		check_stored(cred, key, want, 3);
	} else {
		/* A failure that published the object all the same. */
		CHECK(!found);
	}
	CHECK(uploads_left(cred, "lost/") == 0);
	nv_s3_delete(&direct, bucket, key, &err);
	unlink(src);
}

int main(void)
{
	static const unsigned seeds[] = {1, 2, 3};
	nv_s3_config cfg;
	nv_secret *cred;
	nv_err err;
	const char *tmp = getenv("TMPDIR");
	double t0 = now_s();

	if (load_env()) {
		nv_test_failed++;
		return nv_test_done();
	}
	/* A reset peer must not kill the test. */
	signal(SIGPIPE, SIG_IGN);
	if (nv_pathf(scratch, sizeof(scratch), "%s/test_s3_faults.XXXXXX",
		     tmp && tmp[0] ? tmp : "/tmp") ||
	    !mkdtemp(scratch))
		abort();
	cred = make_secret(env_access, env_secret);
	config_init(&cfg, cred, NULL);
	snprintf(bucket, sizeof(bucket), "nv-faults-%ld-%ld", (long)getpid(),
		 (long)time(NULL));
	CHECK(nv_s3_create_bucket(&cfg, bucket, &err) == 0);

	for (size_t i = 0; i < sizeof(seeds) / sizeof(seeds[0]); i++)
		test_upload(cred, seeds[i]);
	test_download(cred);
	test_upload_all_reset(cred);
	test_lost_completion(cred);

	/* The memstore cluster holds objects in RAM: give it back. */
	for (size_t i = 0; i < sizeof(seeds) / sizeof(seeds[0]); i++) {
		char key[64];

		snprintf(key, sizeof(key), "up%u/object.bin", seeds[i]);
		nv_s3_delete(&cfg, bucket, key, &err);
	}
	nv_s3_delete(&cfg, bucket, "down/object.bin", &err);
	nv_secret_free(cred);
	nv_remove_tree(scratch, &err);
	printf("test_s3_faults: %.1f s\n", now_s() - t0);
	return nv_test_done();
}
