/* Fault tests of the s3:// store (host/storage/s3*.c): its requests go
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
 *   - the proxy did reset connections each time (the faults were real);
 *   - resume across runs: a child process putting (or getting) 40 MiB one
 *     part at a time is killed (SIGKILL) mid-transfer, when the proxy
 *     stalls after 20 MiB; nothing is published (or written at the
 *     destination), and the next call sends (or fetches) only the three
 *     missing parts, counted by the proxy on the wire, with the right
 *     sha256 in the end; a changed file (one byte, mtime put back; or
 *     only touched) or a replaced object starts over instead;
 *   - retries, with the proxy answering for the server or holding the
 *     request: 500 twice then through (waits within the backoff's
 *     bounds), SlowDown with Retry-After (waited), SlowDown for good
 *     (max_attempts requests, code, request id, hint), a timeout; no
 *     second CreateMultipartUpload after a lost answer (and the orphan it
 *     left is taken up by the next put), one after a 503; a completion
 *     answered 500 is settled by a HEAD before it is sent again.
 *
 * The server comes from the ctest fixture (S3_STACK_ENV, as test_s3.c);
 * the proxy is started with python3 from NAVETTE_TEST_DATA. */
#include "storage/s3.h"
#include "core/sha256.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <regex.h>
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
	/* from its last line, once stopped */
	long connections, answered, delayed;
	long long bytes_up, bytes_down;
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
		const char *c = strstr(line, "connections=");

		fputs(line, stdout);
		r = strstr(line, " resets=");
		if (r && c) {
			resets = strtol(r + 8, NULL, 10);
			p->connections = strtol(c + 12, NULL, 10);
			if ((r = strstr(line, " answered=")))
				p->answered = strtol(r + 10, NULL, 10);
			if ((r = strstr(line, " delayed=")))
				p->delayed = strtol(r + 9, NULL, 10);
			if ((r = strstr(line, " bytes_up=")))
				p->bytes_up = strtoll(r + 10, NULL, 10);
			if ((r = strstr(line, " bytes_down=")))
				p->bytes_down = strtoll(r + 12, NULL, 10);
		}
	}
	fclose(f);
	return resets;
}

/* The connections of the (stopped) proxy's log whose line matches the
 * extended regular expression pattern, in order: their count, and their
 * times ("t=", seconds) in times (up to max). */
static int log_events(const struct proxy *p, const char *pattern, double *times,
		      int max)
{
	char line[1024];
	regex_t re;
	int n = 0;
	FILE *f;

	if (regcomp(&re, pattern, REG_EXTENDED | REG_NOSUB))
		abort();
	f = fopen(p->log, "r");
	while (f && fgets(line, sizeof(line), f)) {
		const char *t = strstr(line, " t=");

		if (!t || regexec(&re, line, 0, NULL, 0) != 0)
			continue;
		if (times && n < max)
			times[n] = strtod(t + 3, NULL);
		n++;
	}
	if (f)
		fclose(f);
	regfree(&re);
	return n;
}

/* Waits (up to limit_s) for text to appear in the proxy's log. */
static int log_wait(const struct proxy *p, const char *text, double limit_s)
{
	double deadline = now_s() + limit_s;
	char line[1024];

	while (now_s() < deadline) {
		FILE *f = fopen(p->log, "r");
		int found = 0;

		while (f && !found && fgets(line, sizeof(line), f))
			found = strstr(line, text) != NULL;
		if (f)
			fclose(f);
		if (found)
			return 0;
		usleep(20000);
	}
	return -1;
}

/* --- checks -------------------------------------------------------------- */

/* What the server holds at key, through the direct endpoint: size, the
 * recorded sha256 and that of the bytes, and a multipart ETag of nparts
 * parts (0: any). */
static void check_stored_size(const nv_secret *cred, const char *key,
			      const char *want, int nparts, size_t size)
{
	nv_s3_config direct;
	nv_object_info info;
	char etag[NV_S3_ETAG_MAX + 1], dst[600], got[65], tail[16];
	size_t n;
	nv_err err;

	config_init(&direct, cred, NULL);
	CHECK(nv_s3_head_etag(&direct, bucket, key, &info, etag, &err) == 0);
	CHECK(info.size == size);
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

static void check_stored(const nv_secret *cred, const char *key,
			 const char *want, int nparts)
{
	check_stored_size(cred, key, want, nparts, OBJECT);
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

static const char *const part_faults[] = {
	"--match", "^PUT [^ ]*partNumber=", "--force-first", "1", NULL};

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
	/* Parts only: the initiation is not retried after a lost answer
	 * (s3.h), which the retry tests check on their own. At least one
	 * part connection is reset whatever the draw. */
	if (proxy_start(&px, seed, "0.3", part_faults)) {
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
	/* Lost answers to an initiation may leave an upload behind (s3_put.c
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

/* Every part's connection reset: the upload fails, and leaves nothing. */
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
	if (proxy_start(&px, 11, "1.0", part_faults)) {
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

/* --- resume across runs ----------------------------------------------------
 */

#define RESUME_OBJECT (40 * MIB) /* five parts or ranges of 8 MiB */
#define STALL_AT      "20971520" /* 20 MiB: two parts done, the third cut */
#define KEEP_PARTS    2

static int count_part(int number, uint64_t size, const char *etag,
		      void *payload)
{
	(void)number;
	(void)size;
	(void)etag;
	(*(int *)payload)++;
	return 0;
}

static int keep_upload_id(const char *key, const char *upload_id, void *payload)
{
	(void)key;
	snprintf(payload, NV_S3_UPLOAD_ID_MAX + 1, "%s", upload_id);
	return 0;
}

/* A child process puts path as key (or gets key to path) through a proxy
 * that stalls after 20 MiB, one part or range at a time; it is killed
 * (SIGKILL: no abort, no cleanup) once the proxy stalled and the answers
 * to the parts already sent came back. 0 when it was killed so. */
static int killed_transfer(const nv_secret *cred, int upload, const char *key,
			   const char *path)
{
	const char *extra[] = {"--stall-after", STALL_AT, "--stall-direction",
			       upload ? "up" : "down", NULL};
	struct proxy px;
	pid_t pid;
	int status = 0, rc;

	if (proxy_start(&px, 1, "0", extra))
		return -1;
	fflush(NULL);
	pid = fork();
	if (pid < 0)
		abort();
	if (pid == 0) {
		nv_s3_config cfg;
		nv_err err;

		config_init(&cfg, cred, &px);
		cfg.parallel_parts = 1;
		if (upload)
			nv_s3_put_file(&cfg, bucket, key, path, NULL, &err);
		else
			nv_s3_get_file(&cfg, bucket, key, path, NULL, &err);
		_exit(3); /* never reached while the proxy stalls */
	}
	rc = log_wait(&px, "stalled after", 60);
	usleep(1000000);
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	proxy_stop(&px);
	return rc == 0 && WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL
		       ? 0
		       : -1;
}

/* What an interrupted upload left: nothing published, one upload in
 * progress holding KEEP_PARTS parts. */
static void check_interrupted_upload(const nv_secret *cred, const char *key)
{
	nv_s3_config direct;
	nv_object_info info;
	char id[NV_S3_UPLOAD_ID_MAX + 1] = "";
	int n = 0, parts = 0, truncated;
	nv_err err;

	config_init(&direct, cred, NULL);
	CHECK(nv_s3_head(&direct, bucket, key, &info, &err) == NV_ENOTFOUND);
	CHECK(nv_s3_list_uploads(&direct, bucket, key, keep_upload_id, id,
				 &truncated, &err) == 0);
	n = uploads_left(cred, key);
	CHECK(n == 1);
	CHECK(id[0] != '\0');
	if (id[0])
		CHECK(nv_s3_list_parts(&direct, bucket, key, id, count_part,
				       &parts, &err) == 0);
	printf("interrupted upload of %s: %d upload(s), %d parts\n", key, n,
	       parts);
	CHECK(parts == KEEP_PARTS);
}

/* put_file() of src through a counting proxy; its stats, and the bytes
 * that went up on the wire. */
static int put_counted(const nv_secret *cred, const char *key, const char *src,
		       nv_object_info *info, nv_s3_stats *stats,
		       long long *wire_up)
{
	struct proxy px;
	nv_s3_config cfg;
	nv_err err;
	int rc;

	if (proxy_start(&px, 1, "0", NULL))
		return -1;
	config_init(&cfg, cred, &px);
	cfg.stats = stats;
	rc = nv_s3_put_file(&cfg, bucket, key, src, info, &err);
	if (rc)
		fprintf(stderr, "put %s: %s\n", key, err.message);
	proxy_stop(&px);
	*wire_up = px.bytes_up;
	return rc;
}

/* A killed multipart upload is continued by the next put_file(): only
 * the missing parts go up, and the object comes out whole. */
static void test_resume_upload(const nv_secret *cred)
{
	const char *key = "resume/up.bin";
	const uint64_t missing = RESUME_OBJECT - KEEP_PARTS * PART;
	char src[600], want[65];
	nv_s3_config cfg;
	nv_object_info info;
	nv_s3_stats stats;
	long long wire = 0;
	nv_err err;

	path_of(src, sizeof(src), "resume-up.bin");
	write_file(src, RESUME_OBJECT, 31);
	CHECK(nv_sha256_file(src, want, NULL, &err) == 0);
	CHECK(killed_transfer(cred, 1, key, src) == 0);
	check_interrupted_upload(cred, key);

	CHECK(put_counted(cred, key, src, &info, &stats, &wire) == 0);
	printf("resumed upload: %d parts kept (%llu bytes), %llu sent, %lld "
	       "on the wire\n",
	       stats.parts_resumed, (unsigned long long)stats.bytes_resumed,
	       (unsigned long long)stats.bytes_sent, wire);
	CHECK_STR(info.sha256, want);
	CHECK(stats.parts_resumed == KEEP_PARTS);
	CHECK(stats.bytes_resumed == KEEP_PARTS * PART);
	CHECK(stats.bytes_sent == missing);
	/* the wire agrees: the missing parts and some headers, no more */
	CHECK(wire >= (long long)missing &&
	      wire < (long long)missing + 64 * 1024);
	check_stored_size(cred, key, want, 5, RESUME_OBJECT);
	CHECK(uploads_left(cred, key) == 0);
	config_init(&cfg, cred, NULL);
	nv_s3_delete(&cfg, bucket, key, &err);
	unlink(src);
}

/* An interrupted upload of a file changed since is never continued: a
 * changed part (mtime put back, so only the MD5 can tell), or a newer
 * mtime (same bytes), each start over and leave no upload behind. */
static void test_resume_upload_changed(const nv_secret *cred)
{
	const char *key = "resume/changed.bin";
	char src[600], want[65];
	nv_s3_config direct;
	struct timespec times[2];
	nv_object_info info;
	nv_s3_stats stats;
	struct stat st;
	long long wire = 0;
	nv_err err;
	int fd;

	path_of(src, sizeof(src), "resume-changed.bin");
	write_file(src, RESUME_OBJECT, 32);
	CHECK(killed_transfer(cred, 1, key, src) == 0);
	check_interrupted_upload(cred, key);
	/* one byte of the first (uploaded) part, mtime back an hour */
	CHECK(stat(src, &st) == 0);
	fd = open(src, O_WRONLY);
	CHECK(fd >= 0 && pwrite(fd, "!", 1, 100) == 1 && close(fd) == 0);
	times[0].tv_sec = times[1].tv_sec = st.st_mtime - 3600;
	times[0].tv_nsec = times[1].tv_nsec = 0;
	CHECK(utimensat(AT_FDCWD, src, times, 0) == 0);
	CHECK(nv_sha256_file(src, want, NULL, &err) == 0);
	CHECK(put_counted(cred, key, src, &info, &stats, &wire) == 0);
	printf("changed part: %d parts kept, %llu bytes sent\n",
	       stats.parts_resumed, (unsigned long long)stats.bytes_sent);
	CHECK(stats.parts_resumed == 0);
	CHECK(stats.bytes_sent == RESUME_OBJECT);
	CHECK(wire >= (long long)RESUME_OBJECT);
	CHECK_STR(info.sha256, want);
	check_stored_size(cred, key, want, 5, RESUME_OBJECT);
	CHECK(uploads_left(cred, key) == 0);

	/* the same bytes, touched after the upload began */
	config_init(&direct, cred, NULL);
	CHECK(nv_s3_delete(&direct, bucket, key, &err) == 0);
	CHECK(killed_transfer(cred, 1, key, src) == 0);
	check_interrupted_upload(cred, key);
	sleep(2); /* S3 times the initiation to the second */
	CHECK(utimensat(AT_FDCWD, src, NULL, 0) == 0);
	CHECK(put_counted(cred, key, src, &info, &stats, &wire) == 0);
	printf("touched file: %d parts kept, %llu bytes sent\n",
	       stats.parts_resumed, (unsigned long long)stats.bytes_sent);
	CHECK(stats.parts_resumed == 0);
	CHECK(stats.bytes_sent == RESUME_OBJECT);
	CHECK_STR(info.sha256, want);
	CHECK(uploads_left(cred, key) == 0);
	nv_s3_delete(&direct, bucket, key, &err);
	unlink(src);
}

/* The state file of dst's partial download ("" when none). */
static void read_state(const char *dir, char *out, size_t cap)
{
	char path[800];
	FILE *f;
	size_t n;

	out[0] = '\0';
	if (nv_pathf(path, sizeof(path), "%s/.obj.bin.navette-partial.state",
		     dir))
		abort();
	f = fopen(path, "r");
	if (!f)
		return;
	n = fread(out, 1, cap - 1, f);
	out[n] = '\0';
	fclose(f);
}

static int get_counted(const nv_secret *cred, const char *key, const char *dst,
		       nv_object_info *info, nv_s3_stats *stats,
		       long long *wire_down)
{
	struct proxy px;
	nv_s3_config cfg;
	nv_err err;
	int rc;

	if (proxy_start(&px, 1, "0", NULL))
		return -1;
	config_init(&cfg, cred, &px);
	cfg.stats = stats;
	rc = nv_s3_get_file(&cfg, bucket, key, dst, info, &err);
	if (rc)
		fprintf(stderr, "get %s: %s\n", key, err.message);
	proxy_stop(&px);
	*wire_down = px.bytes_down;
	return rc;
}

/* A killed ranged download leaves a partial file and its state beside
 * the destination (never the destination itself); the next get_file()
 * fetches only the missing ranges, checks the whole sha256 and leaves
 * only the destination. The same after the object changed: it starts
 * over (If-Match / ETag). */
static void test_resume_download(const nv_secret *cred)
{
	const char *key = "resume/down.bin";
	const uint64_t missing = RESUME_OBJECT - KEEP_PARTS * PART;
	char src[600], dir[600], dst[700], partial[800], want[65], got[65];
	char state[16384];
	nv_s3_config direct;
	nv_object_info info;
	nv_s3_stats stats;
	long long wire = 0;
	nv_err err;

	config_init(&direct, cred, NULL);
	path_of(src, sizeof(src), "resume-down.bin");
	write_file(src, RESUME_OBJECT, 41);
	CHECK(nv_sha256_file(src, want, NULL, &err) == 0);
	CHECK(nv_s3_put_file(&direct, bucket, key, src, NULL, &err) == 0);
	path_of(dir, sizeof(dir), "rdl");
	CHECK(mkdir(dir, 0755) == 0);
	if (nv_pathf(dst, sizeof(dst), "%s/obj.bin", dir) ||
	    nv_pathf(partial, sizeof(partial), "%s/.obj.bin.navette-partial",
		     dir))
		abort();

	CHECK(killed_transfer(cred, 0, key, dst) == 0);
	CHECK(access(dst, F_OK) != 0);
	CHECK(access(partial, F_OK) == 0);
	read_state(dir, state, sizeof(state));
	printf("state after the kill:\n%s", state);
	CHECK(strstr(state, "\ndone 11000\n") != NULL);
	CHECK(count_entries(dir) == 2);

	CHECK(get_counted(cred, key, dst, &info, &stats, &wire) == 0);
	printf("resumed download: %d ranges kept, %llu sent, %lld on the "
	       "wire\n",
	       stats.parts_resumed, (unsigned long long)stats.bytes_sent, wire);
	CHECK(stats.parts_resumed == KEEP_PARTS);
	CHECK(stats.bytes_sent == missing);
	CHECK(wire >= (long long)missing &&
	      wire < (long long)missing + 64 * 1024);
	CHECK(nv_sha256_file(dst, got, NULL, &err) == 0);
	CHECK_STR(got, want);
	CHECK_STR(info.sha256, want);
	CHECK(count_entries(dir) == 1); /* the partial and state are gone */

	/* Killed again, then the object replaced: the next get starts over
	 * and gets the new bytes. */
	unlink(dst);
	CHECK(killed_transfer(cred, 0, key, dst) == 0);
	CHECK(count_entries(dir) == 2);
	write_file(src, RESUME_OBJECT, 42);
	CHECK(nv_sha256_file(src, want, NULL, &err) == 0);
	CHECK(nv_s3_put_file(&direct, bucket, key, src, NULL, &err) == 0);
	CHECK(get_counted(cred, key, dst, &info, &stats, &wire) == 0);
	printf("object changed: %d ranges kept, %llu sent\n",
	       stats.parts_resumed, (unsigned long long)stats.bytes_sent);
	CHECK(stats.parts_resumed == 0);
	CHECK(stats.bytes_sent == RESUME_OBJECT);
	CHECK(nv_sha256_file(dst, got, NULL, &err) == 0);
	CHECK_STR(got, want);
	CHECK(count_entries(dir) == 1);
	nv_s3_delete(&direct, bucket, key, &err);
	unlink(src);
}

/* --- retries ----------------------------------------------------------------
 */

#define SMALL_KEY "retry/small.txt"

/* A small object to read through the answering proxy. */
static void put_small(const nv_secret *cred)
{
	nv_s3_config direct;
	nv_err err;

	config_init(&direct, cred, NULL);
	CHECK(nv_s3_put_bytes(&direct, bucket, SMALL_KEY, "retry me", 8, NULL,
			      &err) == 0);
}

/* 500 twice, then through: three HEADs in all, answered, answered,
 * forwarded, with backoff waits of [base/2, base] then [base, 2 base]. */
static void test_retry_5xx(const nv_secret *cred)
{
	const char *extra[] = {"--match", "^HEAD ",   "--force-first",
			       "2",       "--answer", "500",
			       NULL};
	struct proxy px;
	nv_s3_config cfg;
	nv_object_info info;
	double t[4];
	nv_err err;
	int rc, n;

	if (proxy_start(&px, 1, "0", extra)) {
		nv_test_failed++;
		return;
	}
	config_init(&cfg, cred, &px);
	cfg.retry_base_ms = 200;
	rc = nv_s3_head(&cfg, bucket, SMALL_KEY, &info, &err);
	proxy_stop(&px);
	CHECK(rc == 0);
	CHECK(info.size == 8);
	CHECK(log_events(&px, "HEAD .* -> answered 500", NULL, 0) == 2);
	CHECK(log_events(&px, "HEAD .* -> forwarded", NULL, 0) == 1);
	n = log_events(&px, "HEAD ", t, 4);
	CHECK(n == 3);
	if (n == 3) {
		printf("500 retried after %.3f s, then %.3f s\n", t[1] - t[0],
		       t[2] - t[1]);
		CHECK(t[1] - t[0] >= 0.09 && t[1] - t[0] < 0.2 + 0.3);
		CHECK(t[2] - t[1] >= 0.19 && t[2] - t[1] < 0.4 + 0.3);
	}
}

/* 503 SlowDown with Retry-After: 1 waits a second even with a 10 ms
 * base; and when it never ends, max_attempts requests and a clear error
 * (code, request id, hint). */
static void test_slowdown(const nv_secret *cred)
{
	const char *once[] = {"--match",  "^GET ", "--force-first", "1",
			      "--answer", "503",   "--retry-after", "1",
			      NULL};
	const char *always[] = {"--match", "^GET ",    "--force-first",
				"99",      "--answer", "503",
				NULL};
	struct proxy px;
	nv_s3_config cfg;
	nv_object_info info;
	char dst[600];
	double t[3], t0;
	nv_err err;
	int rc;

	path_of(dst, sizeof(dst), "slow.txt");
	if (proxy_start(&px, 1, "0", once)) {
		nv_test_failed++;
		return;
	}
	config_init(&cfg, cred, &px);
	cfg.retry_base_ms = 10;
	t0 = now_s();
	rc = nv_s3_get_file(&cfg, bucket, SMALL_KEY, dst, &info, &err);
	t0 = now_s() - t0;
	proxy_stop(&px);
	CHECK(rc == 0);
	CHECK(log_events(&px, "GET .* -> answered 503 SlowDown", NULL, 0) == 1);
	CHECK(log_events(&px, "GET .* -> forwarded", NULL, 0) == 1);
	if (log_events(&px, "GET ", t, 3) == 2) {
		printf("SlowDown, Retry-After 1: retried after %.3f s\n",
		       t[1] - t[0]);
		CHECK(t[1] - t[0] >= 0.95 && t[1] - t[0] < 2.0);
	} else {
		nv_test_failed++;
	}
	CHECK(t0 >= 0.95);
	unlink(dst);

	if (proxy_start(&px, 1, "0", always)) {
		nv_test_failed++;
		return;
	}
	config_init(&cfg, cred, &px);
	cfg.retry_base_ms = 10;
	cfg.max_attempts = 3;
	memset(&err, 0, sizeof(err));
	rc = nv_s3_get_file(&cfg, bucket, SMALL_KEY, dst, &info, &err);
	proxy_stop(&px);
	printf("throttled for good: %s [hint: %s]\n", err.message, err.hint);
	CHECK(rc == NV_EBACKEND);
	CHECK(strstr(err.message, "SlowDown") != NULL);
	CHECK(strstr(err.message, "request id fault-") != NULL);
	CHECK(strstr(err.hint, "throttling") != NULL);
	CHECK(log_events(&px, "GET .* -> answered 503", NULL, 0) == 3);
	CHECK(access(dst, F_OK) != 0);
}

/* A request held past the timeout is retried: two HEADs, one delayed. */
static void test_timeout(const nv_secret *cred)
{
	const char *extra[] = {"--match", "^HEAD ",  "--force-first",
			       "1",       "--delay", "3",
			       NULL};
	struct proxy px;
	nv_s3_config cfg;
	nv_object_info info;
	nv_err err;
	double t0;
	int rc;

	if (proxy_start(&px, 1, "0", extra)) {
		nv_test_failed++;
		return;
	}
	config_init(&cfg, cred, &px);
	cfg.total_timeout_ms = 500;
	t0 = now_s();
	rc = nv_s3_head(&cfg, bucket, SMALL_KEY, &info, &err);
	t0 = now_s() - t0;
	proxy_stop(&px);
	printf("timed out once, then through: %.2f s\n", t0);
	CHECK(rc == 0);
	CHECK(t0 >= 0.5 && t0 < 2.5);
	CHECK(px.delayed == 1);
	CHECK(log_events(&px, "HEAD ", NULL, 0) == 2);
}

/* CreateMultipartUpload is not sent twice after a lost answer: one
 * POST ?uploads, the upload fails, the orphan it made is found (and
 * used) by the next put_file(). After a 503 it is sent again. */
static void test_initiation(const nv_secret *cred)
{
	const char *lost[] = {"--match",     "^POST [^ ]*[?&]uploads ",
			      "--direction", "down",
			      "--min-bytes", "1",
			      "--max-bytes", "2",
			      NULL};
	const char *throttled[] = {"--match",
				   "^POST [^ ]*[?&]uploads ",
				   "--force-first",
				   "1",
				   "--answer",
				   "503",
				   NULL};
	const char *key = "retry/init.bin";
	struct proxy px;
	nv_s3_config cfg;
	nv_object_info info;
	nv_s3_stats stats;
	char src[600], want[65];
	nv_err err;
	int rc;

	path_of(src, sizeof(src), "init.bin");
	write_file(src, OBJECT, 51);
	CHECK(nv_sha256_file(src, want, NULL, &err) == 0);
	if (proxy_start(&px, 1, "1.0", lost)) {
		nv_test_failed++;
		return;
	}
	config_init(&cfg, cred, &px);
	memset(&err, 0, sizeof(err));
	rc = nv_s3_put_file(&cfg, bucket, key, src, &info, &err);
	proxy_stop(&px);
	printf("initiation answer lost: rc %d: %s\n", rc, err.message);
	CHECK(rc == NV_EBACKEND);
	CHECK(log_events(&px, "POST [^ ]*[?&]uploads ", NULL, 0) == 1);
	CHECK(uploads_left(cred, key) == 1); /* the server did create it */

	config_init(&cfg, cred, NULL);
	cfg.stats = &stats;
	CHECK(nv_s3_put_file(&cfg, bucket, key, src, &info, &err) == 0);
	CHECK_STR(info.sha256, want);
	CHECK(stats.bytes_sent == OBJECT);
	CHECK(uploads_left(cred, key) == 0);

	if (proxy_start(&px, 1, "0", throttled)) {
		nv_test_failed++;
		return;
	}
	config_init(&cfg, cred, &px);
	rc = nv_s3_put_file(&cfg, bucket, key, src, &info, &err);
	proxy_stop(&px);
	CHECK(rc == 0);
	CHECK(log_events(&px, "POST [^ ]*[?&]uploads .*answered 503", NULL,
			 0) == 1);
	CHECK(log_events(&px, "POST [^ ]*[?&]uploads .*forwarded", NULL, 0) ==
	      1);
	check_stored(cred, key, want, 3);
	CHECK(uploads_left(cred, key) == 0);
	unlink(src);
}

/* A completion answered 500 (by the proxy: it never reached the server)
 * is settled by a HEAD before it is sent again: POST, HEAD, POST. */
static void test_completion_500(const nv_secret *cred)
{
	const char *extra[] = {"--match",
			       "^POST [^ ]*uploadId=",
			       "--force-first",
			       "1",
			       "--answer",
			       "500",
			       NULL};
	const char *key = "retry/complete.bin";
	struct proxy px;
	nv_s3_config cfg;
	nv_object_info info;
	char src[600], want[65];
	double post[3], head[3];
	nv_err err;
	int rc, np, nh;

	path_of(src, sizeof(src), "complete.bin");
	write_file(src, OBJECT, 52);
	CHECK(nv_sha256_file(src, want, NULL, &err) == 0);
	if (proxy_start(&px, 1, "0", extra)) {
		nv_test_failed++;
		return;
	}
	config_init(&cfg, cred, &px);
	rc = nv_s3_put_file(&cfg, bucket, key, src, &info, &err);
	proxy_stop(&px);
	CHECK(rc == 0);
	np = log_events(&px, "POST [^ ]*uploadId=", post, 3);
	nh = log_events(&px, "HEAD ", head, 3);
	printf("completion answered 500: %d completions, %d HEADs\n", np, nh);
	CHECK(np == 2);
	CHECK(log_events(&px, "POST [^ ]*uploadId=.*answered 500", NULL, 0) ==
	      1);
	CHECK(nh == 1);
	if (np == 2 && nh == 1)
		CHECK(post[0] <= head[0] && head[0] <= post[1]);
	check_stored(cred, key, want, 3);
	CHECK(uploads_left(cred, key) == 0);
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
	test_resume_upload(cred);
	test_resume_upload_changed(cred);
	test_resume_download(cred);
	put_small(cred);
	test_retry_5xx(cred);
	test_slowdown(cred);
	test_timeout(cred);
	test_initiation(cred);
	test_completion_500(cred);

	/* The memstore cluster holds objects in RAM: give it back. */
	for (size_t i = 0; i < sizeof(seeds) / sizeof(seeds[0]); i++) {
		char key[64];

		snprintf(key, sizeof(key), "up%u/object.bin", seeds[i]);
		nv_s3_delete(&cfg, bucket, key, &err);
	}
	nv_s3_delete(&cfg, bucket, "down/object.bin", &err);
	nv_s3_delete(&cfg, bucket, "lost/object.bin", &err);
	nv_s3_delete(&cfg, bucket, "retry/init.bin", &err);
	nv_s3_delete(&cfg, bucket, "retry/complete.bin", &err);
	nv_s3_delete(&cfg, bucket, SMALL_KEY, &err);
	nv_secret_free(cred);
	nv_remove_tree(scratch, &err);
	printf("test_s3_faults: %.1f s\n", now_s() - t0);
	return nv_test_done();
}
