/* Uploads to S3 (see s3.h): put_bytes, put_file (one PUT, or a multipart
 * upload of parts sent in parallel and streamed from the file), the
 * resumption of an interrupted multipart upload, and the multipart calls
 * themselves. The engine is in s3.c. */
#include "storage/s3.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "core/buf.h"
#include "net/http.h"
#include "storage/s3_internal.h"
#include "core/sha256.h"
#include "storage/sigv4.h"

#define COMPLETE_MAX ((size_t)2 * 1024 * 1024) /* 10000 parts fit */
#define FILE_CHUNK   ((size_t)256 * 1024)

#if defined(__APPLE__)
#define MTIM(st) ((st)->st_mtimespec)
#define CTIM(st) ((st)->st_ctimespec)
#else
#define MTIM(st) ((st)->st_mtim)
#define CTIM(st) ((st)->st_ctim)
#endif

/* --- digests of a file -----------------------------------------------------
 */

/* The hex digest (sha256, or md5 for a part's ETag) of [off, off+len) of
 * fd, read through buf (FILE_CHUNK bytes). */
static int digest_range(int fd, uint64_t off, uint64_t len, const EVP_MD *md,
			char *hex, char *buf, nv_err *err)
{
	static const char digits[] = "0123456789abcdef";
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	unsigned char out[EVP_MAX_MD_SIZE];
	unsigned int n = 0;
	uint64_t pos = 0;
	int rc = 0;

	hex[0] = '\0';
	if (!ctx || EVP_DigestInit_ex(ctx, md, NULL) != 1) {
		rc = nv_err_set(err, NV_ENOMEM, NULL, "digest: out of memory");
		goto out;
	}
	while (pos < len) {
		size_t want = len - pos < FILE_CHUNK ? (size_t)(len - pos)
						     : FILE_CHUNK;
		ssize_t got = pread(fd, buf, want, (off_t)(off + pos));

		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0) {
			rc = nv_err_set_errno(err, NV_EIO, got ? errno : EIO,
					      "do not change a file while it "
					      "is transferred",
					      "reading the file to hash");
			goto out;
		}
		if (EVP_DigestUpdate(ctx, buf, (size_t)got) != 1) {
			rc = nv_err_set(err, NV_EIO, NULL, "digest failed");
			goto out;
		}
		pos += (uint64_t)got;
	}
	if (EVP_DigestFinal_ex(ctx, out, &n) != 1) {
		rc = nv_err_set(err, NV_EIO, NULL, "digest failed");
		goto out;
	}
	for (unsigned int i = 0; i < n; i++) {
		hex[2 * i] = digits[out[i] >> 4];
		hex[2 * i + 1] = digits[out[i] & 0xf];
	}
	hex[2 * n] = '\0';
out:
	EVP_MD_CTX_free(ctx);
	return rc;
}

/* The whole file's sha256 and each part's, on two threads (sha256 is
 * sequential: the whole hash is the long pole, the parts go beside it). */
struct prepass {
	int fd;
	uint64_t size, part;
	int nparts;
	char whole[NV_SHA256_HEX_LEN + 1];
	char (*parts)[NV_SHA256_HEX_LEN + 1];
};

static int prepass_task(void *ctx, int i, nv_err *err)
{
	struct prepass *p = ctx;
	char *buf = malloc(FILE_CHUNK);
	int rc = 0;

	if (!buf)
		return nv_err_set(err, NV_ENOMEM, NULL, "out of memory");
	if (i == 0)
		rc = digest_range(p->fd, 0, p->size, EVP_sha256(), p->whole,
				  buf, err);
	for (int k = 0; i == 1 && !rc && k < p->nparts; k++) {
		uint64_t off = (uint64_t)k * p->part;
		uint64_t len =
			p->size - off < p->part ? p->size - off : p->part;

		rc = digest_range(p->fd, off, len, EVP_sha256(), p->parts[k],
				  buf, err);
	}
	free(buf);
	return rc;
}

static int hash_file(int fd, uint64_t size, uint64_t part, char *whole,
		     char (*parts)[NV_SHA256_HEX_LEN + 1], int nparts,
		     nv_err *err)
{
	struct prepass p;
	int rc;

	memset(&p, 0, sizeof(p));
	p.fd = fd;
	p.size = size;
	p.part = part;
	p.nparts = parts ? nparts : 0;
	p.parts = parts;
	rc = nv_s3_pool_run(prepass_task, &p, parts ? 2 : 1, 2, err);
	if (!rc)
		memcpy(whole, p.whole, sizeof(p.whole));
	return rc;
}

/* --- put ----------------------------------------------------------------- */

/* Streams [offset, offset+size) of fd. Not hashed again while sent: the
 * body's sha256 is signed (x-amz-content-sha256) and the server refuses
 * bytes that do not match it (XAmzContentSHA256Mismatch, NV_EIO). */
struct file_reader {
	int fd;
	uint64_t offset, size, done;
};

static int file_read(void *payload, char *buf, size_t cap, size_t *nread)
{
	struct file_reader *r = payload;
	size_t want = cap;
	ssize_t got;

	*nread = 0;
	if (r->done >= r->size)
		return 0;
	if (want > r->size - r->done)
		want = (size_t)(r->size - r->done);
	do {
		got = pread(r->fd, buf, want, (off_t)(r->offset + r->done));
	} while (got < 0 && errno == EINTR);
	if (got <= 0)
		return -1; /* an error, or the file shrank */
	r->done += (uint64_t)got;
	*nread = (size_t)got;
	return 0;
}

static int file_rewind(void *payload)
{
	struct file_reader *r = payload;

	r->done = 0;
	return 0;
}

/* Sends [offset, offset+size) of fd as a PUT whose body must hash to
 * sha256 (query: "partNumber=..&uploadId=.." for a part). */
static int put_range(const nv_s3_config *cfg, const char *bucket,
		     const char *key, const char *query, int fd,
		     uint64_t offset, uint64_t size, const char *sha256,
		     const char *meta_header, nv_http_response *resp,
		     nv_err *err)
{
	struct file_reader fr;
	struct reader rd;
	struct call c;
	int rc;

	memset(resp, 0, sizeof(*resp));
	memset(&fr, 0, sizeof(fr));
	fr.fd = fd;
	fr.offset = offset;
	fr.size = size;
	rd.read = file_read;
	rd.rewind = file_rewind;
	rd.payload = &fr;
	rd.size = (long long)size;
	nv_s3_call_init(&c, "PUT", bucket, key, query);
	if (meta_header)
		c.headers[c.nheaders++] = meta_header;
	c.reader = &rd;
	c.payload_hash = sha256;
	rc = nv_s3_call_run(cfg, &c, resp, err);
	if (!rc && fr.done != size)
		rc = nv_err_set(err, NV_EIO,
				"do not change a file while it is uploaded",
				"the file changed while %s was uploaded", key);
	return rc;
}

static void info_fill(nv_object_info *info, const char *key, uint64_t size,
		      const char *sha256, const nv_http_response *resp)
{
	int64_t t;

	if (!info)
		return;
	memset(info, 0, sizeof(*info));
	snprintf(info->key, sizeof(info->key), "%s", key);
	info->size = size;
	snprintf(info->sha256, sizeof(info->sha256), "%s", sha256);
	t = resp ? nv_s3_http_date_parse(nv_http_response_header(resp, "Date"))
		 : 0;
	info->mtime = t ? t : (int64_t)time(NULL);
}

int nv_s3_put_bytes(const nv_s3_config *cfg, const char *bucket,
		    const char *key, const void *data, size_t len,
		    nv_object_info *info, nv_err *err)
{
	struct call c;
	nv_http_response resp;
	char sha[NV_SHA256_HEX_LEN + 1], meta[100];
	int rc;

	rc = nv_s3_object_check(bucket, key, err);
	if (rc)
		return rc;
	if (len > NV_S3_PART_SIZE_MAX)
		return nv_err_set(err, NV_EINVAL, "use put_file",
				  "%zu bytes are over S3's single PUT limit",
				  len);
	rc = nv_sha256_bytes(data ? data : "", len, sha, err);
	if (rc)
		return rc;
	snprintf(meta, sizeof(meta), SHA256_META ": %s", sha);
	nv_s3_call_init(&c, "PUT", bucket, key, NULL);
	c.headers[c.nheaders++] = meta;
	c.body = data ? data : "";
	c.body_len = len;
	c.payload_hash = sha;
	rc = nv_s3_call_run(cfg, &c, &resp, err);
	if (!rc)
		info_fill(info, key, len, sha, &resp);
	nv_http_response_free(&resp);
	return rc;
}

/* The part size for size bytes: the configured one, grown to stay within
 * NV_S3_PARTS_MAX parts. */
uint64_t nv_s3_part_size(const nv_s3_config *cfg, uint64_t size)
{
	uint64_t part =
		cfg->part_size ? cfg->part_size : NV_S3_PART_SIZE_DEFAULT;

	if (part < NV_S3_PART_SIZE_MIN)
		part = NV_S3_PART_SIZE_MIN;
	while (part < NV_S3_PART_SIZE_MAX &&
	       (size + part - 1) / part > NV_S3_PARTS_MAX)
		part *= 2;
	return part > NV_S3_PART_SIZE_MAX ? NV_S3_PART_SIZE_MAX : part;
}

uint64_t nv_s3_part_len(uint64_t size, uint64_t part, int i)
{
	uint64_t off = (uint64_t)i * part;

	return size - off < part ? size - off : part;
}

/* It goes back into the completion's XML: nothing to escape. */
static int etag_check(const char *etag, nv_err *err)
{
	if (!etag || !etag[0] || strpbrk(etag + 1, "<>&'") ||
	    strlen(etag) > NV_S3_ETAG_MAX)
		return nv_err_set(err, NV_EBACKEND, "the server misbehaves",
				  "S3 answered a part without a usable ETag");
	return 0;
}

static int upload_add_etag(nv_s3_upload *up, const char *etag, nv_err *err)
{
	char(*p)[NV_S3_ETAG_MAX + 1];
	int rc;

	if (up->nparts >= NV_S3_PARTS_MAX)
		return nv_err_set(err, NV_EINVAL, "raise the part size",
				  "more than %d parts", NV_S3_PARTS_MAX);
	rc = etag_check(etag, err);
	if (rc)
		return rc;
	p = realloc(up->etags, (size_t)(up->nparts + 1) * sizeof(*p));
	if (!p)
		return nv_err_set(err, NV_ENOMEM, NULL, "out of memory");
	up->etags = p;
	nv_s3_etag_copy(up->etags[up->nparts], etag);
	up->nparts++;
	return 0;
}

/* The query of part number n (1-based). */
static int part_query_n(const nv_s3_upload *up, int n, nv_buf *q)
{
	nv_buf_printf(q, "partNumber=%d&uploadId=", n);
	nv_sigv4_uri_encode(q, up->upload_id, strlen(up->upload_id), 0);
	return q->failed ? -1 : 0;
}

static int part_query(const nv_s3_upload *up, nv_buf *q)
{
	return part_query_n(up, up->nparts + 1, q);
}

/* The parts of one put_file() still to send (todo: their indexes),
 * shared by its workers: each takes the next under lock, streams that
 * slice of fd (pread: no shared offset) and stores its ETag in its own
 * slot of up->etags. */
struct part_pool {
	const nv_s3_config *cfg;
	nv_s3_upload *up;
	int fd;
	uint64_t size, part;
	const int *todo;
	const char (*hashes)[NV_SHA256_HEX_LEN + 1];
};

static int part_send(void *ctx, int t, nv_err *err)
{
	struct part_pool *p = ctx;
	int i = p->todo[t];
	uint64_t off = (uint64_t)i * p->part;
	nv_http_response resp;
	nv_buf q;
	int rc = 0;

	memset(&resp, 0, sizeof(resp));
	nv_buf_init(&q, URL_MAX);
	if (part_query_n(p->up, i + 1, &q))
		rc = nv_err_set(err, NV_ENOMEM, NULL, "query too long");
	if (!rc)
		rc = put_range(p->cfg, p->up->bucket, p->up->key, q.data, p->fd,
			       off, nv_s3_part_len(p->size, p->part, i),
			       p->hashes[i], NULL, &resp, err);
	if (!rc)
		rc = etag_check(resp.etag, err);
	if (!rc)
		nv_s3_etag_copy(p->up->etags[i],
				resp.etag); /* i is this worker's */
	nv_http_response_free(&resp);
	nv_buf_free(&q);
	return rc;
}

/* Sends the ntodo parts listed in todo of an open upload whose
 * up->etags has nparts slots, up to nv_s3_parallel() at a time, each
 * streamed from fd (memory stays bounded: no part is held whole). */
static int send_parts(const nv_s3_config *cfg, nv_s3_upload *up, int fd,
		      uint64_t size, uint64_t part, int nparts, const int *todo,
		      int ntodo, const char (*hashes)[NV_SHA256_HEX_LEN + 1],
		      nv_err *err)
{
	struct part_pool pool;
	nv_s3_config worker_cfg;
	int rc;

	memset(&pool, 0, sizeof(pool));
	worker_cfg = *cfg;
	worker_cfg.session = NULL; /* one thread at a time: not the workers' */
	pool.cfg = &worker_cfg;
	pool.up = up;
	pool.fd = fd;
	pool.size = size;
	pool.part = part;
	pool.todo = todo;
	pool.hashes = hashes;
	rc = nv_s3_pool_run(part_send, &pool, ntodo, nv_s3_parallel(cfg), err);
	if (rc)
		return rc;
	up->nparts = nparts;
	up->size = size;
	return 0;
}

/* --- resuming an interrupted upload ----------------------------------------
 */

#define RESUME_CANDIDATES_MAX 16

struct candidates {
	const char *key;
	int n;
	char ids[RESUME_CANDIDATES_MAX][NV_S3_UPLOAD_ID_MAX + 1];
	int64_t initiated[RESUME_CANDIDATES_MAX];
};

static int candidate_add(const nv_object_info *info, const char *upload_id,
			 void *payload)
{
	struct candidates *c = payload;

	if (strcmp(info->key, c->key) != 0 || !upload_id || !upload_id[0] ||
	    c->n >= RESUME_CANDIDATES_MAX)
		return 0;
	snprintf(c->ids[c->n], sizeof(c->ids[0]), "%s", upload_id);
	c->initiated[c->n] = info->mtime;
	c->n++;
	return 0;
}

struct listed_part {
	uint64_t size;
	char etag[NV_S3_ETAG_MAX + 1];
	int present;
	int ok; /* its MD5 matches the file's bytes */
};

struct parts_listing {
	struct listed_part *parts;
	int nparts;
	int foreign; /* a part this file cannot have */
};

static int part_listed(int number, uint64_t size, const char *etag,
		       void *payload)
{
	struct parts_listing *l = payload;
	struct listed_part *p;

	if (number < 1 || number > l->nparts || l->parts[number - 1].present) {
		l->foreign = 1;
		return 0;
	}
	p = &l->parts[number - 1];
	p->present = 1;
	p->size = size;
	nv_s3_etag_copy(p->etag, etag);
	return 0;
}

struct md5_pool {
	int fd;
	uint64_t size, part;
	const int *todo;
	struct listed_part *parts;
};

static int md5_task(void *ctx, int t, nv_err *err)
{
	struct md5_pool *p = ctx;
	int i = p->todo[t];
	char hex[2 * EVP_MAX_MD_SIZE + 1], *buf = malloc(FILE_CHUNK);
	int rc;

	if (!buf)
		return nv_err_set(err, NV_ENOMEM, NULL, "out of memory");
	rc = digest_range(p->fd, (uint64_t)i * p->part,
			  nv_s3_part_len(p->size, p->part, i), EVP_md5(), hex,
			  buf, err);
	free(buf);
	if (!rc)
		p->parts[i].ok = strcasecmp(hex, p->parts[i].etag) == 0;
	return rc;
}

/* Whether the upload id of key holds only parts of this file: each of
 * the size and MD5 (a part's ETag) of that slice of fd. Fills parts. */
static int upload_matches(const nv_s3_config *cfg, const char *bucket,
			  const char *key, const char *id, int fd,
			  uint64_t size, uint64_t part, int nparts,
			  struct listed_part *parts)
{
	struct parts_listing l = {parts, nparts, 0};
	struct md5_pool pool;
	int *todo = calloc((size_t)nparts, sizeof(int)), n = 0, match = 0;
	nv_err ignored;

	memset(parts, 0, (size_t)nparts * sizeof(*parts));
	if (!todo ||
	    nv_s3_list_parts(cfg, bucket, key, id, part_listed, &l, &ignored) ||
	    l.foreign)
		goto out;
	for (int i = 0; i < nparts; i++) {
		if (!parts[i].present)
			continue;
		if (parts[i].size != nv_s3_part_len(size, part, i))
			goto out;
		todo[n++] = i;
	}
	memset(&pool, 0, sizeof(pool));
	pool.fd = fd;
	pool.size = size;
	pool.part = part;
	pool.todo = todo;
	pool.parts = parts;
	if (nv_s3_pool_run(md5_task, &pool, n, nv_s3_parallel(cfg), &ignored))
		goto out;
	match = 1;
	for (int t = 0; t < n; t++)
		match &= parts[todo[t]].ok;
out:
	free(todo);
	return match;
}

static void abort_upload_id(const nv_s3_config *cfg, const char *bucket,
			    const char *key, const char *id)
{
	nv_s3_upload up;
	nv_err ignored;

	memset(&up, 0, sizeof(up));
	up.cfg = cfg;
	snprintf(up.bucket, sizeof(up.bucket), "%s", bucket);
	snprintf(up.key, sizeof(up.key), "%s", key);
	snprintf(up.upload_id, sizeof(up.upload_id), "%s", id);
	up.open = 1;
	nv_s3_upload_abort(&up, &ignored);
}

/* Looks for an upload of key left by an interrupted put_file() of this
 * file: initiated no earlier than the file's last change, holding only
 * parts of the file's bytes (size and MD5 of each checked). Adopts the
 * newest such upload into up (open, the ETags of the parts it holds in
 * up->etags, have[i] set for them) and aborts the other uploads of the
 * key, which no completion could use. Failures to list are no error: a
 * fresh upload follows. The ListMultipartUploads page is that of keys
 * starting with key: the key itself sorts first. */
static void resume_find(const nv_s3_config *cfg, const char *bucket,
			const char *key, int fd, const struct stat *st,
			uint64_t part, int nparts, const char *whole,
			nv_s3_upload *up, unsigned char *have)
{
	struct candidates *cand = calloc(1, sizeof(*cand));
	struct listed_part *parts = calloc((size_t)nparts, sizeof(*parts));
	uint64_t size = (uint64_t)st->st_size;
	int truncated, adopted = -1;
	nv_err ignored;

	if (!cand || !parts)
		goto out;
	cand->key = key;
	if (nv_s3_list_uploads_raw(cfg, bucket, key, candidate_add, cand,
				   &truncated, &ignored))
		goto out;
	for (int round = 0; round < cand->n; round++) {
		int best = -1;

		/* newest first */
		for (int i = 0; i < cand->n; i++)
			if (cand->ids[i][0] &&
			    (best < 0 ||
			     cand->initiated[i] > cand->initiated[best]))
				best = i;
		if (best < 0)
			break;
		if (adopted < 0 && cand->initiated[best] >= st->st_mtime &&
		    upload_matches(cfg, bucket, key, cand->ids[best], fd, size,
				   part, nparts, parts)) {
			adopted = best;
			memset(up, 0, sizeof(*up));
			up->cfg = cfg;
			snprintf(up->bucket, sizeof(up->bucket), "%s", bucket);
			snprintf(up->key, sizeof(up->key), "%s", key);
			snprintf(up->upload_id, sizeof(up->upload_id), "%s",
				 cand->ids[best]);
			memcpy(up->sha256, whole, NV_SHA256_HEX_LEN + 1);
			up->etags = calloc((size_t)nparts, sizeof(*up->etags));
			if (!up->etags) {
				memset(up, 0, sizeof(*up));
				goto out;
			}
			for (int i = 0; i < nparts; i++) {
				if (!parts[i].present)
					continue;
				memcpy(up->etags[i], parts[i].etag,
				       sizeof(parts[i].etag));
				have[i] = 1;
			}
			up->open = 1;
		} else {
			abort_upload_id(cfg, bucket, key, cand->ids[best]);
		}
		cand->ids[best][0] = '\0';
	}
out:
	free(cand);
	free(parts);
}

/* --- multipart put_file ----------------------------------------------------
 */

/* The file is as it was when hashed (size, mtime and ctime to the ns). */
static int unchanged_check(int fd, const struct stat *before, const char *key,
			   nv_err *err)
{
	struct stat now;

	if (fstat(fd, &now) || now.st_size != before->st_size ||
	    MTIM(&now).tv_sec != MTIM(before).tv_sec ||
	    MTIM(&now).tv_nsec != MTIM(before).tv_nsec ||
	    CTIM(&now).tv_sec != CTIM(before).tv_sec ||
	    CTIM(&now).tv_nsec != CTIM(before).tv_nsec)
		return nv_err_set(err, NV_EIO,
				  "do not change a file while it is uploaded",
				  "the file changed while %s was uploaded",
				  key);
	return 0;
}

/* One multipart upload of fd, resuming an interrupted one when allowed.
 * *stale is set when a resumed upload was published with another file's
 * recorded sha256 (its bytes are this file's: every part was checked). */
static int multipart_once(const nv_s3_config *cfg, const char *bucket,
			  const char *key, int fd, const struct stat *st,
			  uint64_t part, int nparts, const char *whole,
			  const char (*hashes)[NV_SHA256_HEX_LEN + 1],
			  int allow_resume, int *stale, nv_object_info *info,
			  nv_err *err)
{
	uint64_t size = (uint64_t)st->st_size;
	unsigned char *have = calloc((size_t)nparts, 1);
	int *todo = calloc((size_t)nparts, sizeof(int));
	nv_s3_upload up;
	int rc = 0, ntodo = 0, resumed;

	memset(&up, 0, sizeof(up));
	*stale = 0;
	if (!have || !todo) {
		rc = nv_err_set(err, NV_ENOMEM, NULL, "out of memory");
		goto out;
	}
	if (allow_resume)
		resume_find(cfg, bucket, key, fd, st, part, nparts, whole, &up,
			    have);
	resumed = up.open;
	if (!up.open) {
		rc = nv_s3_upload_begin(&up, cfg, bucket, key, whole, err);
		if (!rc) {
			up.etags = calloc((size_t)nparts, sizeof(*up.etags));
			if (!up.etags)
				rc = nv_err_set(err, NV_ENOMEM, NULL,
						"out of memory");
		}
		if (rc)
			goto out;
	}
	for (int i = 0; i < nparts; i++) {
		if (!have[i]) {
			todo[ntodo++] = i;
		} else if (cfg->stats) {
			cfg->stats->parts_resumed++;
			cfg->stats->bytes_resumed +=
				nv_s3_part_len(size, part, i);
		}
	}
	for (int t = 0; cfg->stats && t < ntodo; t++)
		cfg->stats->bytes_sent += nv_s3_part_len(size, part, todo[t]);
	rc = send_parts(cfg, &up, fd, size, part, nparts, todo, ntodo, hashes,
			err);
	if (!rc)
		rc = unchanged_check(fd, st, key, err);
	if (!rc)
		rc = nv_s3_upload_complete(&up, info, err);
	if (!rc && resumed) {
		nv_object_info got;

		rc = nv_s3_head(cfg, bucket, key, &got, err);
		if (!rc && strcmp(got.sha256, whole) != 0)
			*stale = 1;
	}
out:
	nv_s3_upload_dispose(&up); /* aborts after a failure */
	free(have);
	free(todo);
	return rc;
}

static int put_multipart(const nv_s3_config *cfg, const char *bucket,
			 const char *key, int fd, const struct stat *st,
			 nv_object_info *info, nv_err *err)
{
	uint64_t size = (uint64_t)st->st_size;
	uint64_t part = nv_s3_part_size(cfg, size);
	int nparts = (int)((size + part - 1) / part), rc, stale = 0;
	char(*hashes)[NV_SHA256_HEX_LEN + 1] =
		calloc((size_t)nparts, sizeof(*hashes));
	char whole[NV_SHA256_HEX_LEN + 1];

	if (!hashes)
		return nv_err_set(err, NV_ENOMEM, NULL, "out of memory");
	rc = hash_file(fd, size, part, whole, hashes, nparts, err);
	if (!rc)
		rc = multipart_once(
			cfg, bucket, key, fd, st, part, nparts, whole,
			(const char(*)[NV_SHA256_HEX_LEN + 1]) hashes, 1,
			&stale, info, err);
	/* Published with a stale sha256 (an upload begun for an earlier
	 * state of the file): the bytes are right, the record is not; a
	 * fresh upload replaces it. */
	if (!rc && stale) {
		nv_s3_stats_reset(cfg);
		rc = multipart_once(
			cfg, bucket, key, fd, st, part, nparts, whole,
			(const char(*)[NV_SHA256_HEX_LEN + 1]) hashes, 0,
			&stale, info, err);
	}
	free(hashes);
	return rc;
}

int nv_s3_put_file(const nv_s3_config *cfg, const char *bucket, const char *key,
		   const char *src_path, nv_object_info *info, nv_err *err)
{
	struct stat st;
	uint64_t threshold;
	char sha[NV_SHA256_HEX_LEN + 1], meta[100];
	nv_http_response resp;
	int fd, rc;

	rc = nv_s3_object_check(bucket, key, err);
	if (rc)
		return rc;
	nv_s3_stats_reset(cfg);
	fd = open(src_path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return nv_err_set_errno(
			err, errno == ENOENT ? NV_ENOTFOUND : NV_EIO, errno,
			NULL, "cannot open %.300s", src_path);
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		rc = nv_err_set(err, NV_EINVAL, "upload a regular file",
				"%.300s is not a regular file", src_path);
		goto out;
	}
	threshold = cfg && cfg->multipart_threshold
			    ? cfg->multipart_threshold
			    : NV_S3_MULTIPART_THRESHOLD_DEFAULT;
	nv_s3_progress_total(cfg, (uint64_t)st.st_size);
	if ((uint64_t)st.st_size >= threshold ||
	    (uint64_t)st.st_size > NV_S3_PART_SIZE_MAX) {
		rc = put_multipart(cfg, bucket, key, fd, &st, info, err);
		goto out;
	}
	rc = hash_file(fd, (uint64_t)st.st_size, 0, sha, NULL, 0, err);
	if (rc)
		goto out;
	snprintf(meta, sizeof(meta), SHA256_META ": %s", sha);
	if (cfg && cfg->stats)
		cfg->stats->bytes_sent = (uint64_t)st.st_size;
	rc = put_range(cfg, bucket, key, NULL, fd, 0, (uint64_t)st.st_size, sha,
		       meta, &resp, err);
	if (!rc)
		info_fill(info, key, (uint64_t)st.st_size, sha, &resp);
	nv_http_response_free(&resp);
out:
	close(fd);
	return rc;
}

/* --- multipart ----------------------------------------------------------- */

static int upload_query(const nv_s3_upload *up, nv_buf *q)
{
	nv_buf_puts(q, "uploadId=");
	nv_sigv4_uri_encode(q, up->upload_id, strlen(up->upload_id), 0);
	return q->failed ? -1 : 0;
}

int nv_s3_upload_begin(nv_s3_upload *up, const nv_s3_config *cfg,
		       const char *bucket, const char *key, const char *sha256,
		       nv_err *err)
{
	struct call c;
	nv_http_response resp;
	char meta[100];
	int rc;

	memset(up, 0, sizeof(*up));
	rc = nv_s3_object_check(bucket, key, err);
	if (rc)
		return rc;
	up->cfg = cfg;
	snprintf(up->bucket, sizeof(up->bucket), "%s", bucket);
	snprintf(up->key, sizeof(up->key), "%s", key);
	nv_s3_call_init(&c, "POST", bucket, key, "uploads");
	if (sha256 && nv_s3_is_sha256_hex(sha256)) {
		memcpy(up->sha256, sha256, NV_SHA256_HEX_LEN + 1);
		snprintf(meta, sizeof(meta), SHA256_META ": %s", sha256);
		c.headers[c.nheaders++] = meta;
	}
	/* Not sent twice blindly: a lost answer may have created an upload,
	 * and a second would leave one nobody completes. A throttled one is
	 * retried (nothing was created); after a lost answer the next
	 * put_file() of the same key finds the upload (and resumes or
	 * aborts it). */
	c.idempotent = 0;
	rc = nv_s3_call_run(cfg, &c, &resp, err);
	if (!rc)
		rc = nv_s3_xml_field(resp.body.data, resp.body.len,
				     "InitiateMultipartUploadResult",
				     "UploadId", up->upload_id,
				     sizeof(up->upload_id), err);
	if (!rc)
		up->open = 1;
	nv_http_response_free(&resp);
	return rc;
}

int nv_s3_upload_part(nv_s3_upload *up, const void *data, size_t len,
		      nv_err *err)
{
	struct call c;
	nv_http_response resp;
	nv_buf q;
	char sha[NV_SHA256_HEX_LEN + 1];
	int rc;

	if (!up->open)
		return nv_err_set(err, NV_EINVAL, NULL,
				  "the multipart upload is not open");
	if (len > NV_S3_PART_SIZE_MAX)
		return nv_err_set(err, NV_EINVAL, NULL, "part over 5 GiB");
	rc = nv_sha256_bytes(data ? data : "", len, sha, err);
	if (rc)
		return rc;
	nv_buf_init(&q, URL_MAX);
	if (part_query(up, &q)) {
		nv_buf_free(&q);
		return nv_err_set(err, NV_ENOMEM, NULL, "query too long");
	}
	nv_s3_call_init(&c, "PUT", up->bucket, up->key, q.data);
	c.body = data ? data : "";
	c.body_len = len;
	c.payload_hash = sha;
	rc = nv_s3_call_run(up->cfg, &c, &resp, err);
	if (!rc)
		rc = upload_add_etag(up, resp.etag, err);
	if (!rc)
		up->size += len;
	nv_http_response_free(&resp);
	nv_buf_free(&q);
	return rc;
}

/* After a lost answer to a completion: did it publish our object? */
static int upload_landed(nv_s3_upload *up, nv_object_info *info)
{
	char etag[NV_S3_ETAG_MAX + 1], tail[16];
	nv_object_info got;
	nv_err ignored;
	size_t n, t;

	if (nv_s3_head_etag(up->cfg, up->bucket, up->key, &got, etag, &ignored))
		return 0;
	snprintf(tail, sizeof(tail), "-%d", up->nparts);
	n = strlen(etag);
	t = strlen(tail);
	if (got.size != up->size || n <= t || strcmp(etag + n - t, tail) ||
	    (up->sha256[0] && strcmp(got.sha256, up->sha256) != 0))
		return 0;
	if (info)
		*info = got;
	return 1;
}

int nv_s3_upload_complete(nv_s3_upload *up, nv_object_info *info, nv_err *err)
{
	struct call c;
	nv_http_response resp;
	nv_buf body, q;
	nv_s3_error_doc doc;
	int rc = 0, attempts = nv_s3_attempts(up->cfg);

	if (!up->open)
		return nv_err_set(err, NV_EINVAL, NULL,
				  "the multipart upload is not open");
	nv_buf_init(&body, COMPLETE_MAX);
	nv_buf_init(&q, URL_MAX);
	nv_buf_puts(&body, "<CompleteMultipartUpload>");
	for (int i = 0; i < up->nparts; i++)
		nv_buf_printf(&body,
			      "<Part><PartNumber>%d</PartNumber>"
			      "<ETag>\"%s\"</ETag></Part>",
			      i + 1, up->etags[i]);
	nv_buf_puts(&body, "</CompleteMultipartUpload>");
	if (body.failed || upload_query(up, &q)) {
		rc = nv_err_set(err, NV_ENOMEM, NULL,
				"completion request over its cap");
		goto out;
	}
	nv_s3_call_init(&c, "POST", up->bucket, up->key, q.data);
	c.body = body.data;
	c.body_len = body.len;
	c.idempotent = 0; /* never blindly sent twice: see below */
	for (int attempt = 1;; attempt++) {
		int lost;

		rc = nv_s3_call_run(up->cfg, &c, &resp, err);
		/* A 200 may still carry an <Error> (S3 sends it late). */
		if (!rc &&
		    nv_s3_xml_error(resp.body.data, resp.body.len, &doc) == 0) {
			resp.status = 500;
			rc = nv_s3_call_error(&c, &resp, err);
		}
		/* Any transport failure counts as a lost answer, even after
		 * a "200" status line: the rest of the answer may be what
		 * was lost, and the upload may have completed. */
		lost = rc == NV_EBACKEND;
		if (!rc) {
			info_fill(info, up->key, up->size, up->sha256, &resp);
			up->open = 0;
		}
		nv_http_response_free(&resp);
		/* A retry after a lost answer may find the upload gone. */
		if (rc == NV_ENOTFOUND && attempt > 1 &&
		    upload_landed(up, info)) {
			rc = 0;
			up->open = 0;
		}
		if (!rc || !lost)
			break;
		/* The answer was lost or the service failed: the object
		 * may be published already. Look before trying again. */
		if (upload_landed(up, info)) {
			rc = 0;
			up->open = 0;
			break;
		}
		if (attempt >= attempts)
			break;
		nv_s3_sleep_ms(nv_s3_backoff_ms(up->cfg, attempt, NULL));
	}
out:
	if (rc && up->open) {
		nv_err ignored;

		nv_s3_upload_abort(up, &ignored);
	}
	nv_buf_free(&body);
	nv_buf_free(&q);
	return rc;
}

int nv_s3_upload_abort(nv_s3_upload *up, nv_err *err)
{
	struct call c;
	nv_http_response resp;
	nv_buf q;
	int rc;

	if (!up->open)
		return 0;
	nv_buf_init(&q, URL_MAX);
	if (upload_query(up, &q)) {
		nv_buf_free(&q);
		return nv_err_set(err, NV_ENOMEM, NULL, "query too long");
	}
	nv_s3_call_init(&c, "DELETE", up->bucket, up->key, q.data);
	rc = nv_s3_call_run(up->cfg, &c, &resp, err);
	if (rc == NV_ENOTFOUND) /* NoSuchUpload: already gone */
		rc = 0;
	if (!rc)
		up->open = 0;
	nv_http_response_free(&resp);
	nv_buf_free(&q);
	return rc;
}

void nv_s3_upload_dispose(nv_s3_upload *up)
{
	nv_err ignored;

	if (!up)
		return;
	if (up->open)
		nv_s3_upload_abort(up, &ignored);
	free(up->etags);
	up->etags = NULL;
	up->nparts = 0;
	up->open = 0;
}

int nv_s3_list_parts(const nv_s3_config *cfg, const char *bucket,
		     const char *key, const char *upload_id,
		     nv_s3_part_cb callback, void *payload, nv_err *err)
{
	int marker = 0, truncated = 1, next = 0, rc, pages = 0;

	rc = nv_s3_object_check(bucket, key, err);
	if (rc)
		return rc;
	if (!callback || !upload_id || !upload_id[0])
		return nv_err_set(err, NV_EINVAL, NULL,
				  "list_parts needs an upload id and a "
				  "callback");
	while (!rc && truncated) {
		struct call c;
		nv_http_response resp;
		nv_buf q;

		nv_buf_init(&q, URL_MAX);
		nv_buf_printf(&q,
			      "max-parts=1000&part-number-marker=%d&"
			      "uploadId=",
			      marker);
		nv_sigv4_uri_encode(&q, upload_id, strlen(upload_id), 0);
		if (q.failed) {
			nv_buf_free(&q);
			return nv_err_set(err, NV_ENOMEM, NULL,
					  "query too long");
		}
		nv_s3_call_init(&c, "GET", bucket, key, q.data);
		rc = nv_s3_call_run(cfg, &c, &resp, err);
		if (!rc)
			rc = nv_s3_xml_parts(resp.body.data, resp.body.len,
					     callback, payload, &truncated,
					     &next, err);
		/* each page must move on, and there are at most 10 */
		if (!rc && truncated &&
		    (next <= marker || ++pages > NV_S3_PARTS_MAX / 1000))
			rc = nv_err_set(err, NV_EBACKEND,
					"the server misbehaves",
					"S3 part listing does not advance");
		marker = next;
		nv_http_response_free(&resp);
		nv_buf_free(&q);
	}
	return rc;
}
