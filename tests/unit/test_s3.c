/* Tests of the s3:// store (host/storage/s3*.c) against a real
 * radosgw: round trips of awkward sizes and a multipart upload with their
 * sha256, head, paged and prefix listings, delete, copy, the errors a user
 * meets (wrong secret, unknown key id) with their hints, keys refused
 * before any request, downloads that never write outside their folder,
 * aborted multipart uploads that leave nothing behind, batch deletes
 * (keys XML must escape; bad batches refused before any request), and the same
 * operations (presigned URLs and POST policies included) with
 * virtual-host addressing (BUCKET.localhost).
 *
 * The server comes from the ctest fixture: S3_STACK_ENV names a file of
 * KEY=value lines (S3_ENDPOINT, S3_REGION, S3_ACCESS_KEY, S3_SECRET_KEY,
 * S3_ACCESS_KEY_2, S3_SECRET_KEY_2). Without it the test fails: it is
 * only registered with the fixture, and a silent skip would hide a
 * broken one. */
#include "storage/s3.h"
#include "core/sha256.h"

#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/fsutil.h"
#include "net/http.h"
#include "nv_test.h"

#define MIB ((size_t)1024 * 1024)

static char env_endpoint[256], env_region[64], env_vhost[256];
static char env_access[128], env_secret[256];
static char env_access2[128], env_secret2[256];
static char bucket[64];
static char scratch[512]; /* temp folder of this run */

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int load_env(void)
{
	const char *path = getenv("S3_STACK_ENV");
	char line[512];
	FILE *f;

	if (!path || !path[0]) {
		fprintf(stderr,
			"test_s3: S3_STACK_ENV is not set. This test needs a "
			"running radosgw: run it through ctest with the S3 "
			"fixture, or start tests' stack and point S3_STACK_ENV "
			"at its KEY=value file.\n");
		return -1;
	}
	f = fopen(path, "r");
	if (!f) {
		fprintf(stderr, "test_s3: cannot read S3_STACK_ENV=%s: %s\n",
			path, strerror(errno));
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
		else if (strcmp(line, "S3_ENDPOINT_VHOST") == 0)
			snprintf(env_vhost, sizeof(env_vhost), "%s", v);
		else if (strcmp(line, "S3_REGION") == 0)
			snprintf(env_region, sizeof(env_region), "%s", v);
		else if (strcmp(line, "S3_ACCESS_KEY") == 0)
			snprintf(env_access, sizeof(env_access), "%s", v);
		else if (strcmp(line, "S3_SECRET_KEY") == 0)
			snprintf(env_secret, sizeof(env_secret), "%s", v);
		else if (strcmp(line, "S3_ACCESS_KEY_2") == 0)
			snprintf(env_access2, sizeof(env_access2), "%s", v);
		else if (strcmp(line, "S3_SECRET_KEY_2") == 0)
			snprintf(env_secret2, sizeof(env_secret2), "%s", v);
	}
	fclose(f);
	if (!env_endpoint[0] || !env_access[0] || !env_secret[0]) {
		fprintf(stderr,
			"test_s3: %s lacks S3_ENDPOINT, S3_ACCESS_KEY "
			"or S3_SECRET_KEY\n",
			path);
		return -1;
	}
	return 0;
}

static nv_secret *make_secret(const char *id, const char *secret)
{
	nv_err err;
	nv_secret *s = nv_secret_new("s3test", NV_SECRET_S3, "env", &err);

	if (!s || nv_secret_set(s, "access_key_id", id, strlen(id), &err) ||
	    nv_secret_set(s, "secret_access_key", secret, strlen(secret),
			  &err)) {
		fprintf(stderr, "test_s3: secret: %s\n", err.message);
		abort();
	}
	return s;
}

static void config_init(nv_s3_config *cfg, const nv_secret *cred)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->endpoint = env_endpoint;
	cfg->region = env_region[0] ? env_region : NULL;
	cfg->credential = cred;
	cfg->retry_base_ms = 50;
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

	if (!f)
		abort();
	for (size_t i = 0; i < size; i++) {
		x = x * 1103515245u + 12345u;
		fputc((int)(x >> 16) & 0xff, f);
	}
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

/* --- no server needed ---------------------------------------------------- */

static int keep_last(const nv_object_info *info, const char *upload_id,
		     void *payload)
{
	(void)upload_id;
	*(nv_object_info *)payload = *info;
	return 0;
}

struct parts_seen {
	int n, last;
	uint64_t size;
	char etag[NV_S3_ETAG_MAX + 1];
};

static int keep_part(int number, uint64_t size, const char *etag, void *payload)
{
	struct parts_seen *p = payload;

	p->n++;
	p->last = number;
	p->size = size;
	snprintf(p->etag, sizeof(p->etag), "%s", etag);
	return 0;
}

static void test_xml_parts(void)
{
	static const char page[] =
		"<ListPartsResult><Bucket>b</Bucket><Key>k</Key>"
		"<IsTruncated>true</IsTruncated>"
		"<NextPartNumberMarker>2</NextPartNumberMarker>"
		"<Part><PartNumber>1</PartNumber><ETag>&quot;aa&quot;</ETag>"
		"<Size>5242880</Size></Part>"
		"<Part><PartNumber>2</"
		"PartNumber><ETag>\"0cc175b9c0f1b6a831c399e2"
		"69772661\"</ETag><Size>1</Size></Part></ListPartsResult>";
	static const char *const bad[] = {
		/* part number 0, over 10000, signed, missing ETag, size
		 * over 5 GiB, another document */
		"<ListPartsResult><Part><PartNumber>0</PartNumber><ETag>a"
		"</ETag><Size>1</Size></Part></ListPartsResult>",
		"<ListPartsResult><Part><PartNumber>10001</PartNumber><ETag>a"
		"</ETag><Size>1</Size></Part></ListPartsResult>",
		"<ListPartsResult><Part><PartNumber>-1</PartNumber><ETag>a"
		"</ETag><Size>1</Size></Part></ListPartsResult>",
		"<ListPartsResult><Part><PartNumber>1</PartNumber>"
		"<Size>1</Size></Part></ListPartsResult>",
		"<ListPartsResult><Part><PartNumber>1</PartNumber><ETag>a"
		"</ETag><Size>5368709121</Size></Part></ListPartsResult>",
		"<ListBucketResult></ListBucketResult>",
	};
	struct parts_seen seen;
	int truncated = 0, next = 0;
	nv_err err;

	memset(&seen, 0, sizeof(seen));
	CHECK(nv_s3_xml_parts(page, sizeof(page) - 1, keep_part, &seen,
			      &truncated, &next, &err) == 0);
	CHECK(seen.n == 2 && seen.last == 2 && seen.size == 1);
	CHECK_STR(seen.etag, "0cc175b9c0f1b6a831c399e269772661");
	CHECK(truncated && next == 2);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		CHECK(nv_s3_xml_parts(bad[i], strlen(bad[i]), keep_part, &seen,
				      &truncated, &next, &err) == NV_EBACKEND);
}

static void test_xml(void)
{
	static const char error_xml[] =
		"<?xml version=\"1.0\" encoding=\"UTF-8\"?><Error><Code>"
		"NoSuchKey</Code><Message>The specified key does not exist."
		"</Message><RequestId>tx-1</RequestId></Error>";
	static const char nul_key[] =
		"<ListBucketResult><EncodingType>url</EncodingType>"
		"<Contents><Key>a%00b</Key><Size>1</Size></Contents>"
		"</ListBucketResult>";
	static const char doctype[] =
		"<!DOCTYPE x [<!ENTITY a \"aaaa\">]><Error><Code>&a;</Code>"
		"</Error>";
	static const char deep[] = "<a><b><c><d><e><f><g><h><i>x</i></h></g>"
				   "</f></e></d></c></b></a>";
	static const char listing[] =
		"<ListBucketResult><Contents><Key>x%2By+z</Key><Size>5</Size>"
		"<LastModified>2024-05-01T00:00:00.000Z</LastModified>"
		"</Contents><IsTruncated>true</IsTruncated>"
		"<NextContinuationToken>t1</NextContinuationToken>"
		"<EncodingType>url</EncodingType></ListBucketResult>";
	nv_s3_error_doc doc;
	nv_object_info last;
	char id[64], token[16];
	int truncated = 0;
	nv_err err;

	CHECK(nv_s3_xml_error(error_xml, sizeof(error_xml) - 1, &doc) == 0);
	CHECK_STR(doc.code, "NoSuchKey");
	CHECK_STR(doc.request_id, "tx-1");
	CHECK(nv_s3_xml_error("<html/>", 7, &doc) == -1);
	CHECK(nv_s3_xml_error(doctype, sizeof(doctype) - 1, &doc) == -1);
	/* A NUL smuggled into a listed key is refused. */
	CHECK(nv_s3_xml_list(nul_key, sizeof(nul_key) - 1, keep_last, &last,
			     NULL, NULL, 0, &err) == NV_EBACKEND);
	/* Decoded keys, even when EncodingType comes last. */
	memset(&last, 0, sizeof(last));
	CHECK(nv_s3_xml_list(listing, sizeof(listing) - 1, keep_last, &last,
			     &truncated, token, sizeof(token), &err) == 0);
	CHECK_STR(last.key, "x+y z");
	CHECK(last.size == 5 && last.mtime == 1714521600);
	CHECK(truncated);
	CHECK_STR(token, "t1");
	CHECK(nv_s3_xml_field(deep, sizeof(deep) - 1, "a", "b", id, sizeof(id),
			      &err) == NV_EBACKEND);
	CHECK(strstr(err.message, "nested") != NULL);
	CHECK(nv_s3_xml_field("<R><UploadId>u-1</UploadId></R>", 31, "R",
			      "UploadId", id, sizeof(id), &err) == 0);
	CHECK_STR(id, "u-1");
	test_xml_parts();
}

/* Bad keys are refused before any request: against a dead endpoint the
 * error is the key's, while a good key meets the connection error. */
static void test_key_refusals(const nv_secret *cred)
{
	static const char *const bad[] = {"../x", "/abs", "a/../b", "a//b",
					  "a\nb", "",     "a\\b"};
	nv_s3_config cfg;
	nv_object_info info;
	char dest[600];
	nv_err err;
	double t0;

	config_init(&cfg, cred);
	cfg.endpoint = "http://127.0.0.1:1";
	cfg.max_attempts = 1;
	path_of(dest, sizeof(dest), "never");
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		CHECK(nv_s3_put_bytes(&cfg, "bucket", bad[i], "x", 1, NULL,
				      &err) == NV_EINVAL);
		CHECK(strstr(err.message, "connect") == NULL);
		CHECK(nv_s3_get_file(&cfg, "bucket", bad[i], dest, NULL,
				     &err) == NV_EINVAL);
		CHECK(nv_s3_head(&cfg, "bucket", bad[i], &info, &err) ==
		      NV_EINVAL);
		CHECK(nv_s3_delete(&cfg, "bucket", bad[i], &err) == NV_EINVAL);
		CHECK(nv_s3_copy(&cfg, "bucket", "ok", "bucket", bad[i], NULL,
				 &err) == NV_EINVAL);
	}
	CHECK(nv_s3_put_bytes(&cfg, "Bad_Bucket", "k", "x", 1, NULL, &err) ==
	      NV_EINVAL);
	CHECK(access(dest, F_OK) != 0);
	/* The contrast: a valid key does reach for the (dead) server. */
	CHECK(nv_s3_put_bytes(&cfg, "bucket", "ok", "x", 1, NULL, &err) ==
	      NV_EBACKEND);
	CHECK(strstr(err.message, "connect") != NULL);
	/* Connection failures are retried (idempotent calls), with
	 * backoff: two waits of at least 50 and 100 ms. */
	cfg.max_attempts = 3;
	cfg.retry_base_ms = 100;
	t0 = now_s();
	CHECK(nv_s3_head(&cfg, "bucket", "ok", &info, &err) == NV_EBACKEND);
	CHECK(now_s() - t0 >= 0.15);
	cfg.max_attempts = 1;
	t0 = now_s();
	CHECK(nv_s3_head(&cfg, "bucket", "ok", &info, &err) == NV_EBACKEND);
	CHECK(now_s() - t0 < 0.15);
	/* A credential bound to another host is never sent. */
	cfg.credential_host = "elsewhere.example";
	CHECK(nv_s3_head(&cfg, "bucket", "ok", &info, &err) == NV_EREFUSED);
	CHECK(strstr(err.message, "bound") != NULL);
}

/* --- against radosgw ----------------------------------------------------- */

static void round_trip(const nv_s3_config *cfg, size_t size, unsigned seed)
{
	char src[600], dst[600], key[64], want[65], got[65];
	nv_object_info put, head, get;
	nv_err err;
	double t0 = now_s();
	int rc;

	snprintf(key, sizeof(key), "sizes/%zu.bin", size);
	path_of(src, sizeof(src), "src.bin");
	path_of(dst, sizeof(dst), "dst.bin");
	write_file(src, size, seed);
	CHECK(nv_sha256_file(src, want, NULL, &err) == 0);
	rc = nv_s3_put_file(cfg, bucket, key, src, &put, &err);
	CHECK(rc == 0);
	if (rc)
		fprintf(stderr, "put %zu: %s\n", size, err.message);
	CHECK_STR(put.sha256, want);
	CHECK(put.size == size);
	CHECK(nv_s3_head(cfg, bucket, key, &head, &err) == 0);
	CHECK(head.size == size);
	CHECK_STR(head.sha256, want);
	CHECK(head.mtime > 1600000000);
	unlink(dst);
	rc = nv_s3_get_file(cfg, bucket, key, dst, &get, &err);
	CHECK(rc == 0);
	if (rc)
		fprintf(stderr, "get %zu: %s\n", size, err.message);
	CHECK(nv_sha256_file(dst, got, NULL, &err) == 0);
	CHECK_STR(got, want);
	CHECK_STR(get.sha256, want);
	CHECK(get.size == size);
	printf("round trip %9zu bytes: %.2f s\n", size, now_s() - t0);
}

/* A client with a session keeps one connection for its calls on this
 * thread (HEADs, a listing, small puts), while the parallel workers of a
 * multipart upload and a ranged download use their own, and the round
 * trips still hold. */
static void test_session(const nv_s3_config *base)
{
	nv_s3_config cfg = *base;
	nv_object_info info;
	nv_err err;
	char name[64];

	cfg.session = nv_http_session_new(&err);
	CHECK(cfg.session != NULL);
	if (!cfg.session)
		return;
	for (int i = 0; i < 5; i++) {
		snprintf(name, sizeof(name), "session/%d", i);
		CHECK(nv_s3_put_bytes(&cfg, bucket, name, "abc", 3, &info,
				      &err) == 0);
		CHECK(nv_s3_head(&cfg, bucket, name, &info, &err) == 0);
		CHECK(info.size == 3);
	}
	CHECK(nv_s3_head(&cfg, bucket, "session/none", &info, &err) ==
	      NV_ENOTFOUND);
	CHECK(nv_http_session_connections(cfg.session) == 1);
	/* multipart (3 parts, in parallel) and ranged: both still right */
	cfg.multipart_threshold = 5 * 1024 * 1024;
	cfg.part_size = 5 * 1024 * 1024;
	round_trip(&cfg, 12 * 1024 * 1024 + 7, 11);
	CHECK(nv_http_session_connections(cfg.session) <= 2);
	nv_http_session_free(cfg.session);
}

static void test_round_trips(const nv_s3_config *cfg)
{
	const size_t sizes[] = {0, 1, 5 * MIB - 1, 5 * MIB, 5 * MIB + 1};
	nv_object_info info;
	char etag[NV_S3_ETAG_MAX + 1];
	nv_err err;

	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
		round_trip(cfg, sizes[i], (unsigned)i + 1);
	/* 40 MiB: over the 16 MiB threshold, five parts of 8 MiB. */
	round_trip(cfg, 40 * MIB, 7);
	CHECK(nv_s3_head_etag(cfg, bucket, "sizes/41943040.bin", &info, etag,
			      &err) == 0);
	CHECK(strlen(etag) > 2 && strcmp(etag + strlen(etag) - 2, "-5") == 0);
	/* Below the threshold: one PUT, a plain md5 ETag. */
	CHECK(nv_s3_head_etag(cfg, bucket, "sizes/5242880.bin", &info, etag,
			      &err) == 0);
	CHECK(strlen(etag) == 32);

	/* Bytes, and a key that needs encoding. */
	CHECK(nv_s3_put_bytes(cfg, bucket, "odd/sp ace+plus=%é.txt", "abc", 3,
			      &info, &err) == 0);
	CHECK_STR(info.sha256, "ba7816bf8f01cfea414140de5dae2223b00361a396"
			       "177a9cb410ff61f20015ad");
	CHECK(nv_s3_head(cfg, bucket, "odd/sp ace+plus=%é.txt", &info, &err) ==
	      0);
	CHECK(info.size == 3);
	/* A missing key. */
	CHECK(nv_s3_head(cfg, bucket, "no/such/key", &info, &err) ==
	      NV_ENOTFOUND);
}

struct filler {
	const nv_s3_config *cfg;
	int first, count, failures;
};

static void *fill(void *arg)
{
	struct filler *f = arg;
	char key[64];
	nv_err err;

	for (int i = f->first; i < f->first + f->count; i++) {
		snprintf(key, sizeof(key), "many/k%05d", i);
		if (nv_s3_put_bytes(f->cfg, bucket, key, NULL, 0, NULL, &err))
			f->failures++;
	}
	return NULL;
}

struct seen {
	int count;
	int ordered;
	char last[NV_FILESTORE_KEY_MAX + 1];
	char keys[8][64];
};

static int on_object(const nv_object_info *info, void *payload)
{
	struct seen *s = payload;

	if (s->last[0] && strcmp(info->key, s->last) <= 0)
		s->ordered = 0;
	snprintf(s->last, sizeof(s->last), "%s", info->key);
	if (s->count < 8)
		snprintf(s->keys[s->count], sizeof(s->keys[0]), "%.63s",
			 info->key);
	s->count++;
	return 0;
}

#define MANY    2500
#define WORKERS 8

static void test_listing(const nv_s3_config *cfg)
{
	pthread_t threads[WORKERS];
	struct filler fillers[WORKERS];
	char token[NV_S3_TOKEN_MAX + 1] = "";
	struct seen seen;
	int truncated = 0, pages = 0, failures = 0, per_page[4] = {0};
	double t0 = now_s();
	nv_err err;

	for (int w = 0; w < WORKERS; w++) {
		fillers[w].cfg = cfg;
		fillers[w].first = w * (MANY / WORKERS);
		fillers[w].count = w == WORKERS - 1
					   ? MANY - w * (MANY / WORKERS)
					   : MANY / WORKERS;
		fillers[w].failures = 0;
		if (pthread_create(&threads[w], NULL, fill, &fillers[w]))
			abort();
	}
	for (int w = 0; w < WORKERS; w++) {
		pthread_join(threads[w], NULL);
		failures += fillers[w].failures;
	}
	CHECK(failures == 0);
	printf("%d empty objects put by %d threads: %.2f s\n", MANY, WORKERS,
	       now_s() - t0);

	t0 = now_s();
	memset(&seen, 0, sizeof(seen));
	seen.ordered = 1;
	do {
		int before = seen.count;

		CHECK(nv_s3_list(cfg, bucket, "many/", NULL, token, 1000,
				 on_object, &seen, &truncated, &err) == 0);
		if (pages < 4)
			per_page[pages] = seen.count - before;
		pages++;
	} while (truncated && pages < 10);
	printf("listed %d keys in %d pages: %.2f s\n", seen.count, pages,
	       now_s() - t0);
	CHECK(pages == 3);
	CHECK(per_page[0] == 1000 && per_page[1] == 1000 && per_page[2] == 500);
	CHECK(seen.count == MANY);
	CHECK(seen.ordered);
	CHECK_STR(seen.keys[0], "many/k00000");
	CHECK_STR(seen.last, "many/k02499");

	/* start_after, and a page size of its own. */
	memset(&seen, 0, sizeof(seen));
	seen.ordered = 1;
	token[0] = '\0';
	CHECK(nv_s3_list(cfg, bucket, "many/", "many/k02495", token, 3,
			 on_object, &seen, &truncated, &err) == 0);
	CHECK(seen.count == 3 && truncated);
	CHECK_STR(seen.keys[0], "many/k02496");
	CHECK(token[0] != '\0');

	/* Prefixes: "odd/" holds only the encoded key, decoded back. */
	memset(&seen, 0, sizeof(seen));
	token[0] = '\0';
	CHECK(nv_s3_list(cfg, bucket, "odd/", NULL, token, 0, on_object, &seen,
			 &truncated, &err) == 0);
	CHECK(seen.count == 1 && !truncated);
	CHECK_STR(seen.keys[0], "odd/sp ace+plus=%é.txt");
	memset(&seen, 0, sizeof(seen));
	CHECK(nv_s3_list(cfg, bucket, "sizes/5", NULL, NULL, 0, on_object,
			 &seen, &truncated, &err) == 0);
	CHECK(seen.count == 3); /* 5242879, 5242880, 5242881 */
	memset(&seen, 0, sizeof(seen));
	CHECK(nv_s3_list(cfg, bucket, "nothing/", NULL, NULL, 0, on_object,
			 &seen, &truncated, &err) == 0);
	CHECK(seen.count == 0 && !truncated);
}

static void test_delete_copy(const nv_s3_config *cfg)
{
	nv_object_info info;
	char dst[600], got[65];
	nv_err err;

	CHECK(nv_s3_put_bytes(cfg, bucket, "dc/src", "copy me", 7, NULL,
			      &err) == 0);
	CHECK(nv_s3_copy(cfg, bucket, "dc/src", bucket, "dc/copy", &info,
			 &err) == 0);
	CHECK(info.size == 7);
	CHECK(nv_sha256_bytes("copy me", 7, got, &err) == 0);
	CHECK_STR(info.sha256, got);
	path_of(dst, sizeof(dst), "copy.out");
	CHECK(nv_s3_get_file(cfg, bucket, "dc/copy", dst, &info, &err) == 0);
	CHECK_STR(info.sha256, got);
	CHECK(nv_s3_copy(cfg, bucket, "dc/missing", bucket, "dc/x", NULL,
			 &err) == NV_ENOTFOUND);

	CHECK(nv_s3_delete(cfg, bucket, "dc/src", &err) == 0);
	CHECK(nv_s3_head(cfg, bucket, "dc/src", &info, &err) == NV_ENOTFOUND);
	CHECK(nv_s3_delete(cfg, bucket, "dc/src", &err) == NV_ENOTFOUND);
	CHECK(nv_s3_head(cfg, bucket, "dc/copy", &info, &err) == 0);
	CHECK(nv_s3_get_file(cfg, "nv-no-such-bucket-x", "k", dst, &info,
			     &err) == NV_ENOTFOUND);
	CHECK(strstr(err.message, "NoSuchBucket") != NULL);
}

static void test_auth_errors(void)
{
	nv_secret *wrong = make_secret(env_access, "WrongSecretKey00000000000"
						   "0000000000000001");
	nv_secret *unknown = make_secret("UNKNOWNKEYID00000000", env_secret);
	nv_s3_config cfg;
	nv_err err;
	int rc;

	config_init(&cfg, wrong);
	rc = nv_s3_put_bytes(&cfg, bucket, "auth/x", "x", 1, NULL, &err);
	CHECK(rc == NV_EREFUSED);
	printf("wrong secret: %s [hint: %s]\n", err.message, err.hint);
	CHECK(strstr(err.message, "SignatureDoesNotMatch") != NULL);
	CHECK(strstr(err.message, "request id ") != NULL &&
	      strstr(err.message, "request id none") == NULL);
	CHECK(strstr(err.hint, "secret key") && strstr(err.hint, "clock"));
	CHECK(strstr(err.message, "WrongSecretKey") == NULL);
	CHECK(strstr(err.hint, "WrongSecretKey") == NULL);

	config_init(&cfg, unknown);
	rc = nv_s3_head(&cfg, bucket, "sizes/1.bin", NULL, &err);
	CHECK(rc == NV_EREFUSED); /* a HEAD answer has no body... */
	rc = nv_s3_put_bytes(&cfg, bucket, "auth/x", "x", 1, NULL, &err);
	CHECK(rc == NV_EREFUSED); /* ...a PUT's names the code */
	printf("unknown key id: %s [hint: %s]\n", err.message, err.hint);
	CHECK(strstr(err.message, "InvalidAccessKeyId") != NULL);
	CHECK(strstr(err.hint, "access key id is unknown") != NULL);
	CHECK(strstr(err.message, env_secret) == NULL);

	/* The second user may not write into our bucket. */
	if (env_access2[0] && env_secret2[0]) {
		nv_secret *other = make_secret(env_access2, env_secret2);

		config_init(&cfg, other);
		rc = nv_s3_put_bytes(&cfg, bucket, "auth/x", "x", 1, NULL,
				     &err);
		CHECK(rc == NV_EREFUSED);
		CHECK(strstr(err.message, "AccessDenied") != NULL);
		CHECK(strstr(err.hint, "bucket policy") != NULL);
		nv_secret_free(other);
	} else {
		fprintf(stderr, "S3_ACCESS_KEY_2 missing: no AccessDenied "
				"check\n");
		nv_test_failed++;
	}
	nv_secret_free(wrong);
	nv_secret_free(unknown);
}

static void test_download_folder(const nv_s3_config *cfg)
{
	char sub[600], dest[700], other[700];
	nv_s3_config small;
	nv_object_info info;
	nv_err err;
	FILE *f;
	char text[16] = "";

	path_of(sub, sizeof(sub), "dl");
	CHECK(mkdir(sub, 0755) == 0);
	if (nv_pathf(dest, sizeof(dest), "%s/keep.txt", sub) ||
	    nv_pathf(other, sizeof(other), "%s/missing/dir/x", scratch))
		abort();
	f = fopen(dest, "w");
	CHECK(f && fputs("old", f) >= 0 && fclose(f) == 0);

	/* A failed download (missing key) leaves dest as it was, and no
	 * temp file in its folder or in the scratch folder above it. */
	CHECK(nv_s3_get_file(cfg, bucket, "no/such", dest, &info, &err) ==
	      NV_ENOTFOUND);
	CHECK(count_entries(sub) == 1);
	/* Aborted half way (over the size cap): the same. */
	small = *cfg;
	small.max_object_size = 1024 * 1024;
	CHECK(nv_s3_get_file(&small, bucket, "sizes/5242880.bin", dest, &info,
			     &err) != 0);
	CHECK(count_entries(sub) == 1);
	f = fopen(dest, "r");
	CHECK(f && fgets(text, sizeof(text), f) && fclose(f) == 0);
	CHECK_STR(text, "old");
	/* The temp file goes beside dest: a missing folder is an error,
	 * not a download elsewhere. */
	CHECK(nv_s3_get_file(cfg, bucket, "sizes/1.bin", other, &info, &err) ==
	      NV_EIO);
	CHECK(strstr(err.message, "missing/dir") != NULL);
	/* A success replaces dest and leaves nothing else. */
	CHECK(nv_s3_get_file(cfg, bucket, "sizes/1.bin", dest, &info, &err) ==
	      0);
	CHECK(count_entries(sub) == 1);
	CHECK(info.size == 1);
}

static int count_upload(const char *key, const char *upload_id, void *payload)
{
	int *n = payload;

	(void)key;
	CHECK(upload_id[0] != '\0');
	(*n)++;
	return 0;
}

static void test_aborted_multipart(const nv_s3_config *cfg)
{
	nv_s3_upload up;
	nv_object_info info;
	char *part = calloc(1, MIB);
	int n, truncated;
	nv_err err;

	/* Explicit abort: seen in progress, then gone. */
	CHECK(nv_s3_upload_begin(&up, cfg, bucket, "mp/aborted", NULL, &err) ==
	      0);
	CHECK(nv_s3_upload_part(&up, part, MIB, &err) == 0);
	n = 0;
	CHECK(nv_s3_list_uploads(cfg, bucket, "mp/", count_upload, &n,
				 &truncated, &err) == 0);
	CHECK(n == 1);
	CHECK(nv_s3_upload_abort(&up, &err) == 0);
	nv_s3_upload_dispose(&up);
	n = 0;
	CHECK(nv_s3_list_uploads(cfg, bucket, "mp/", count_upload, &n,
				 &truncated, &err) == 0);
	CHECK(n == 0);
	CHECK(nv_s3_head(cfg, bucket, "mp/aborted", &info, &err) ==
	      NV_ENOTFOUND);

	/* A completion the server refuses (a first part under 5 MiB) is
	 * aborted: no object, no upload left. */
	CHECK(nv_s3_upload_begin(&up, cfg, bucket, "mp/small", NULL, &err) ==
	      0);
	CHECK(nv_s3_upload_part(&up, part, MIB, &err) == 0);
	CHECK(nv_s3_upload_part(&up, part, 1, &err) == 0);
	CHECK(nv_s3_upload_complete(&up, &info, &err) != 0);
	printf("refused completion: %s\n", err.message);
	CHECK(strstr(err.message, "EntityTooSmall") != NULL);
	CHECK(!up.open);
	nv_s3_upload_dispose(&up);
	n = 0;
	CHECK(nv_s3_list_uploads(cfg, bucket, "mp/", count_upload, &n,
				 &truncated, &err) == 0);
	CHECK(n == 0);
	CHECK(nv_s3_head(cfg, bucket, "mp/small", &info, &err) == NV_ENOTFOUND);
	free(part);
}

/* --- virtual-host addressing ---------------------------------------------- */

/* The value of "name":"..." in a JSON text without escapes ("" if none). */
static void json_field(const char *json, const char *name, char *out,
		       size_t cap)
{
	char probe[64];
	const char *p, *end;

	out[0] = '\0';
	snprintf(probe, sizeof(probe), "\"%s\":\"", name);
	p = strstr(json, probe);
	if (!p)
		return;
	p += strlen(probe);
	end = strchr(p, '"');
	if (end && (size_t)(end - p) < cap) {
		memcpy(out, p, (size_t)(end - p));
		out[end - p] = '\0';
	}
}

/* A browser form upload of data as key to the form of json; the HTTP
 * status (0 when the request failed). */
static long form_post(const char *json, const char *key, const char *data)
{
	static const char *const names[] = {"policy", "x-amz-algorithm",
					    "x-amz-credential", "x-amz-date",
					    "x-amz-signature"};
	const char *headers[] = {
		"Content-Type: multipart/form-data; boundary=nvform"};
	char url[512], value[4096];
	nv_http_request req;
	nv_http_response resp;
	nv_buf body;
	nv_err err;
	long status;

	json_field(json, "url", url, sizeof(url));
	nv_buf_init(&body, 1 << 20);
	nv_buf_printf(&body,
		      "--nvform\r\nContent-Disposition: form-data; "
		      "name=\"key\"\r\n\r\n%s\r\n",
		      key);
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		json_field(json, names[i], value, sizeof(value));
		nv_buf_printf(&body,
			      "--nvform\r\nContent-Disposition: form-data; "
			      "name=\"%s\"\r\n\r\n%s\r\n",
			      names[i], value);
	}
	nv_buf_printf(&body,
		      "--nvform\r\nContent-Disposition: form-data; "
		      "name=\"file\"; filename=\"f.txt\"\r\nContent-Type: "
		      "text/plain\r\n\r\n%s\r\n--nvform--\r\n",
		      data);
	memset(&req, 0, sizeof(req));
	req.method = "POST";
	req.url = url;
	req.headers = headers;
	req.nheaders = 1;
	req.body = body.data;
	req.body_len = body.len;
	status = nv_http_perform(NULL, &req, &resp, &err) ? 0 : resp.status;
	nv_http_response_free(&resp);
	nv_buf_free(&body);
	return status;
}

/* GET or PUT (body data) of a presigned url; the status, the body of a
 * GET in out. */
static long url_call(const char *method, const char *url, const char *data,
		     char *out, size_t cap)
{
	nv_http_request req;
	nv_http_response resp;
	nv_err err;
	long status;

	memset(&req, 0, sizeof(req));
	req.method = method;
	req.url = url;
	if (data) {
		req.body = data;
		req.body_len = strlen(data);
	}
	status = nv_http_perform(NULL, &req, &resp, &err) ? 0 : resp.status;
	if (out && cap) {
		snprintf(out, cap, "%.*s", (int)resp.body.len,
			 resp.body.data ? resp.body.data : "");
	}
	nv_http_response_free(&resp);
	return status;
}

static int count_object(const nv_object_info *info, void *payload)
{
	(void)info;
	(*(int *)payload)++;
	return 0;
}

/* Every operation with the bucket in the host name (BUCKET.localhost,
 * radosgw's rgw_dns_name): put, multipart put, ranged get, head, list,
 * presigned GET and PUT, a POST policy (and its prefix enforced). */
static void test_virtual_host(const nv_secret *cred)
{
	nv_s3_config vh;
	nv_object_info info;
	char src[600], dst[600], want[65], got[65], text[64], host[400];
	char continuation[NV_S3_TOKEN_MAX + 1] = "";
	nv_buf url, form;
	int n = 0, truncated = 0, rc;
	nv_err err;

	if (!env_vhost[0]) {
		fprintf(stderr, "test_s3: no S3_ENDPOINT_VHOST in the stack's "
				"users.env\n");
		nv_test_failed++;
		return;
	}
	config_init(&vh, cred);
	vh.endpoint = env_vhost;
	vh.virtual_host = 1;
	snprintf(host, sizeof(host), "http://%s.%s/", bucket, env_vhost + 7);

	CHECK(nv_s3_put_bytes(&vh, bucket, "vh/a.txt", "virtual", 7, &info,
			      &err) == 0);
	CHECK(nv_s3_head(&vh, bucket, "vh/a.txt", &info, &err) == 0);
	CHECK(info.size == 7);
	path_of(src, sizeof(src), "vh.bin");
	path_of(dst, sizeof(dst), "vh-back.bin");
	write_file(src, 20 * MIB, 61);
	CHECK(nv_sha256_file(src, want, NULL, &err) == 0);
	rc = nv_s3_put_file(&vh, bucket, "vh/big.bin", src, &info, &err);
	CHECK(rc == 0);
	if (rc)
		fprintf(stderr, "virtual-host put: %s\n", err.message);
	CHECK(nv_s3_get_file(&vh, bucket, "vh/big.bin", dst, &info, &err) == 0);
	CHECK(nv_sha256_file(dst, got, NULL, &err) == 0);
	CHECK_STR(got, want);
	CHECK(nv_s3_list(&vh, bucket, "vh/", NULL, continuation, 0,
			 count_object, &n, &truncated, &err) == 0);
	CHECK(n == 2 && !truncated);

	nv_buf_init(&url, 16384);
	CHECK(nv_s3_presign(&vh, "GET", bucket, "vh/a.txt", 60, 0, &url,
			    &err) == 0);
	CHECK(url.data && strncmp(url.data, host, strlen(host)) == 0);
	CHECK(url.data &&
	      url_call("GET", url.data, NULL, text, sizeof(text)) == 200);
	CHECK_STR(text, "virtual");
	url.len = 0;
	CHECK(nv_s3_presign(&vh, "PUT", bucket, "vh/put.txt", 60, 0, &url,
			    &err) == 0);
	CHECK(url.data &&
	      url_call("PUT", url.data, "put by url", NULL, 0) == 200);
	CHECK(nv_s3_head(&vh, bucket, "vh/put.txt", &info, &err) == 0);
	CHECK(info.size == 10);
	nv_buf_free(&url);

	nv_buf_init(&form, 65536);
	CHECK(nv_s3_post_policy(&vh, bucket, "vh/posted/", 60, 100, NULL, 0,
				&form, &err) == 0);
	CHECK(form.data && strstr(form.data, host) != NULL);
	CHECK(form.data &&
	      form_post(form.data, "vh/posted/${filename}", "posted") == 204);
	CHECK(nv_s3_head(&vh, bucket, "vh/posted/f.txt", &info, &err) == 0);
	CHECK(info.size == 6);
	CHECK(form.data &&
	      form_post(form.data, "elsewhere/f.txt", "no") == 403);
	nv_buf_free(&form);

	CHECK(nv_s3_delete(&vh, bucket, "vh/a.txt", &err) == 0);
	CHECK(nv_s3_delete(&vh, bucket, "vh/big.bin", &err) == 0);
	CHECK(nv_s3_delete(&vh, bucket, "vh/put.txt", &err) == 0);
	CHECK(nv_s3_delete(&vh, bucket, "vh/posted/f.txt", &err) == 0);
	unlink(src);
	unlink(dst);
}

/* --- batch delete ----------------------------------------------------------
 */

struct batch_seen {
	int deleted, failed;
};

static int on_deleted(const char *key, const char *code, const char *message,
		      void *payload)
{
	struct batch_seen *b = payload;

	(void)key;
	(void)message;
	if (code)
		b->failed++;
	else
		b->deleted++;
	return 0;
}

static void test_delete_batch(const nv_s3_config *cfg, const nv_secret *cred)
{
	static const char result[] =
		"<DeleteResult><Deleted><Key>a&amp;b</Key></Deleted>"
		"<Error><Key>c</Key><Code>AccessDenied</Code><Message>no"
		"</Message></Error></DeleteResult>";
	const char *keys[40], *bad[2];
	char names[40][64];
	struct batch_seen seen;
	nv_s3_config dead;
	nv_object_info info;
	int n = 0, truncated = 0, rc;
	char continuation[NV_S3_TOKEN_MAX + 1] = "";
	nv_err err;

	/* the answer, parsed: one deleted (unescaped), one refused */
	memset(&seen, 0, sizeof(seen));
	CHECK(nv_s3_xml_delete_result(result, sizeof(result) - 1, on_deleted,
				      &seen, &err) == 0);
	CHECK(seen.deleted == 1 && seen.failed == 1);
	CHECK(nv_s3_xml_delete_result("<Error/>", 8, on_deleted, &seen, &err) ==
	      NV_EBACKEND);

	/* refused before any request (the endpoint is dead) */
	config_init(&dead, cred);
	dead.endpoint = "http://127.0.0.1:1";
	dead.max_attempts = 1;
	bad[0] = "ok";
	bad[1] = "bad\xff\xfe";
	CHECK(nv_s3_delete_batch(&dead, bucket, bad, 2, NULL, NULL, &err) ==
	      NV_EINVAL);
	CHECK(strstr(err.message, "UTF-8") != NULL);
	bad[1] = "../up";
	CHECK(nv_s3_delete_batch(&dead, bucket, bad, 2, NULL, NULL, &err) ==
	      NV_EINVAL);
	bad[1] = "ok";
	CHECK(nv_s3_delete_batch(&dead, bucket, bad, 2, NULL, NULL, &err) ==
	      NV_EINVAL);
	CHECK(strstr(err.message, "twice") != NULL);
	CHECK(nv_s3_delete_batch(&dead, bucket, bad, 1001, NULL, NULL, &err) ==
	      NV_EINVAL);
	CHECK(nv_s3_delete_batch(&dead, bucket, bad, 1, NULL, NULL, &err) ==
	      NV_EBACKEND); /* the control: a good batch is sent */

	/* 38 objects, keys XML must escape and a non-ASCII one among them,
	 * plus two keys that are not there (S3 reports them deleted) */
	for (int i = 0; i < 40; i++) {
		if (i == 0)
			snprintf(names[i], sizeof(names[i]),
				 "batch/a&b<c>\"d'e.txt");
		else if (i == 1)
			snprintf(names[i], sizeof(names[i]),
				 "batch/\xc3\xa9t\xc3\xa9");
		else
			snprintf(names[i], sizeof(names[i]), "batch/k%02d", i);
		keys[i] = names[i];
		if (i < 38)
			CHECK(nv_s3_put_bytes(cfg, bucket, names[i], "x", 1,
					      NULL, &err) == 0);
	}
	memset(&seen, 0, sizeof(seen));
	rc = nv_s3_delete_batch(cfg, bucket, keys, 40, on_deleted, &seen, &err);
	CHECK(rc == 0);
	if (rc)
		fprintf(stderr, "delete batch: %s\n", err.message);
	CHECK(seen.deleted == 40 && seen.failed == 0);
	CHECK(nv_s3_list(cfg, bucket, "batch/", NULL, continuation, 0,
			 count_object, &n, &truncated, &err) == 0);
	CHECK(n == 0);
	CHECK(nv_s3_head(cfg, bucket, names[0], &info, &err) == NV_ENOTFOUND);
}

int main(void)
{
	nv_s3_config cfg;
	nv_secret *cred;
	nv_err err;
	const char *tmp = getenv("TMPDIR");
	double t0 = now_s();

	test_xml();
	if (load_env()) {
		nv_test_failed++;
		return nv_test_done();
	}
	if (nv_pathf(scratch, sizeof(scratch), "%s/test_s3.XXXXXX",
		     tmp && tmp[0] ? tmp : "/tmp") ||
	    !mkdtemp(scratch))
		abort();
	cred = make_secret(env_access, env_secret);
	test_key_refusals(cred);

	config_init(&cfg, cred);
	snprintf(bucket, sizeof(bucket), "nv-test-%ld-%ld", (long)getpid(),
		 (long)time(NULL));
	CHECK(nv_s3_create_bucket(&cfg, bucket, &err) == 0);
	if (err.code)
		fprintf(stderr, "create bucket: %s\n", err.message);
	CHECK(nv_s3_create_bucket(&cfg, bucket, &err) == 0); /* owned: ok */

	test_round_trips(&cfg);
	test_session(&cfg);
	test_listing(&cfg);
	test_delete_copy(&cfg);
	test_auth_errors();
	test_download_folder(&cfg);
	test_aborted_multipart(&cfg);
	test_virtual_host(cred);
	test_delete_batch(&cfg, cred);

	nv_secret_free(cred);
	nv_remove_tree(scratch, &err);
	printf("test_s3: %.1f s\n", now_s() - t0);
	return nv_test_done();
}
