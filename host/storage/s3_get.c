/* Downloads from S3 (see s3.h): get_file, in one GET to a temp file
 * beside the destination, or for a large object in parallel byte ranges
 * that a later call resumes. The engine is in s3.c. */
#if defined(__linux__) && !defined(_GNU_SOURCE)
#define _GNU_SOURCE /* sync_file_range */
#endif
#include "storage/s3.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/buf.h"
#include "core/fsutil.h"
#include "net/http.h"
#include "storage/s3_internal.h"
#include "core/sha256.h"
#include "storage/sigv4.h"

#if defined(__APPLE__)
#define fdatasync(fd) fsync(fd)
#endif

/* --- get ----------------------------------------------------------------- */

struct file_sink {
	int fd;
	uint64_t written;
	uint64_t max;
	nv_sha256 hash;
};

static int sink_write(void *payload, const char *data, size_t len)
{
	struct file_sink *s = payload;

	if (s->max && len > s->max - s->written)
		return -1;
	if (nv_sha256_update(&s->hash, data, len, NULL))
		return -1;
	if (nv_write_all(s->fd, data, len))
		return -1;
	s->written += len;
	return 0;
}

static int sink_rewind(void *payload)
{
	struct file_sink *s = payload;

	nv_sha256_dispose(&s->hash);
	s->written = 0;
	if (ftruncate(s->fd, 0) || lseek(s->fd, 0, SEEK_SET) < 0)
		return -1;
	return nv_sha256_init(&s->hash, NULL) ? -1 : 0;
}

/* Splits dest_path into its folder and its last segment. */
static int dest_split(const char *dest_path, char *dir, size_t dir_cap,
		      const char **base, nv_err *err)
{
	const char *slash = strrchr(dest_path, '/');

	*base = slash ? slash + 1 : dest_path;
	if (!(*base)[0] || strcmp(*base, ".") == 0 || strcmp(*base, "..") == 0)
		return nv_err_set(err, NV_EINVAL, "name the file to write",
				  "'%.300s' names no file", dest_path);
	if (!slash)
		snprintf(dir, dir_cap, ".");
	else if (slash == dest_path)
		snprintf(dir, dir_cap, "/");
	else if (nv_pathf(dir, dir_cap, "%.*s", (int)(slash - dest_path),
			  dest_path))
		return nv_err_set(err, NV_EINVAL, NULL, "path too long");
	return 0;
}

/* A temp path in dest_path's folder (mkstemp template). */
static int temp_beside(const char *dest_path, char *dir, size_t dir_cap,
		       char *tmp, size_t tmp_cap, nv_err *err)
{
	const char *base;
	int rc = dest_split(dest_path, dir, dir_cap, &base, err);

	if (rc)
		return rc;
	if (nv_pathf(tmp, tmp_cap, "%s/.%.200s.navette-XXXXXX", dir, base))
		return nv_err_set(err, NV_EINVAL, NULL, "path too long");
	return 0;
}

static void fsync_dir(const char *dir)
{
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (dfd >= 0) {
		(void)fsync(dfd); /* best effort: the data is in place */
		close(dfd);
	}
}

/* --- ranged, resumable downloads ------------------------------------------ */

/* A large object comes in parallel byte ranges into a partial file beside
 * the destination, ".NAME.navette-partial", with a small state file
 * beside it, ".NAME.navette-partial.state": the object's bucket, key,
 * ETag, size and range size, then one character per range, '1' once that
 * range is on disk (set by a one-byte pwrite: it cannot tear). A later
 * get_file() to the same destination continues from there when the
 * object is the same (ETag, size) and has a recorded sha256 to check the
 * whole against; otherwise it starts over. Each range is asked for
 * If-Match the ETag, so a changed object fails instead of mixing
 * versions. The sha256 is computed while the ranges land, by a thread
 * that follows the in-order frontier and reads back (from the page
 * cache) what the workers wrote. */
#define STATE_MAGIC "navette-partial 1\n"
#define STATE_MAX   ((size_t)NV_S3_PARTS_MAX + 8192)
#define HASH_CHUNK  ((size_t)1024 * 1024)

struct partial {
	char data[NV_FILESTORE_PATH_MAX];
	char state[NV_FILESTORE_PATH_MAX];
	int fd;       /* the data file, locked */
	int state_fd; /* for the one-byte marks; -1: none */
	long done_at; /* offset of the first range's mark */
};

static int partial_names(struct partial *p, const char *dir, const char *base,
			 nv_err *err)
{
	char h[NV_SHA256_HEX_LEN + 1];
	int rc;

	/* a long name is replaced by its hash: the suffixes must fit */
	if (strlen(base) > 200) {
		rc = nv_sha256_bytes(base, strlen(base), h, err);
		if (rc)
			return rc;
		h[32] = '\0';
		rc = nv_pathf(p->data, sizeof(p->data),
			      "%s/.navette-partial-%s", dir, h);
	} else {
		rc = nv_pathf(p->data, sizeof(p->data),
			      "%s/.%s.navette-partial", dir, base);
	}
	if (rc || nv_pathf(p->state, sizeof(p->state), "%s.state", p->data))
		return nv_err_set(err, NV_EINVAL, NULL, "path too long");
	return 0;
}

/* The state text of a download (marks all '0'). */
static int state_text(nv_buf *b, const char *bucket, const char *key,
		      const char *etag, uint64_t size, uint64_t part,
		      int nranges, long *done_at)
{
	nv_buf_puts(b, STATE_MAGIC "bucket ");
	nv_buf_puts(b, bucket);
	nv_buf_puts(b, "\nkey ");
	nv_sigv4_uri_encode(b, key, strlen(key), 1);
	nv_buf_printf(b, "\netag %s\nsize %llu\npart %llu\nranges %d\ndone ",
		      etag, (unsigned long long)size, (unsigned long long)part,
		      nranges);
	*done_at = (long)b->len;
	for (int i = 0; i < nranges; i++)
		nv_buf_append(b, "0", 1);
	nv_buf_append(b, "\n", 1);
	return b->failed ? -1 : 0;
}

/* Reads the state file: 0 and done[] filled when it describes this very
 * download, -1 otherwise (missing, foreign, another object or layout). */
static int state_load(const struct partial *p, const char *expect,
		      size_t expect_len, long done_at, unsigned char *done,
		      int nranges)
{
	char *text = NULL;
	size_t len = 0;
	nv_err ignored;
	int rc = -1;

	if (nv_read_file(&text, &len, p->state, STATE_MAX, &ignored))
		return -1;
	/* the same header, then exactly one mark per range */
	if (len != expect_len || memcmp(text, expect, (size_t)done_at) != 0 ||
	    text[len - 1] != '\n')
		goto out;
	for (int i = 0; i < nranges; i++) {
		char c = text[done_at + i];

		if (c != '0' && c != '1')
			goto out;
		done[i] = c == '1';
	}
	rc = 0;
out:
	free(text);
	return rc;
}

/* Opens (creating) and locks the partial data file: a regular file of
 * ours, never through a link. */
static int partial_open(struct partial *p, nv_err *err)
{
	struct stat st;

	p->fd = open(p->data, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (p->fd < 0)
		return nv_err_set_errno(err, NV_EIO, errno,
					"check the destination folder",
					"cannot create %.300s", p->data);
	if (flock(p->fd, LOCK_EX | LOCK_NB))
		return nv_err_set(err, NV_EREFUSED,
				  "wait for the other download to finish",
				  "another download to %.300s is in progress",
				  p->data);
	if (fstat(p->fd, &st) || !S_ISREG(st.st_mode) ||
	    st.st_uid != geteuid() || st.st_nlink != 1)
		return nv_err_set(err, NV_EREFUSED,
				  "remove it, it is not navette's",
				  "%.300s is not a partial download of this "
				  "user",
				  p->data);
	return 0;
}

struct download {
	const nv_s3_config *cfg;
	const char *bucket, *key, *etag;
	struct partial *partial;
	uint64_t size, part;
	int nranges;
	const int *todo;
	unsigned char *done;
	pthread_mutex_t lock;
	pthread_cond_t moved; /* a range landed, or the workers stopped */
	int stopped;
	int hashed; /* ranges [0, hashed) are in the hash */
	nv_sha256 hash;
	int hash_rc;
	nv_err hash_err;
};

struct range_sink {
	int fd;
	uint64_t off, len, written;
};

static int range_write(void *payload, const char *data, size_t len)
{
	struct range_sink *s = payload;

	if (len > s->len - s->written)
		return -1;
	if (nv_pwrite_all(s->fd, data, len, (off_t)(s->off + s->written)))
		return -1;
	s->written += len;
	return 0;
}

static int range_rewind(void *payload)
{
	struct range_sink *s = payload;

	s->written = 0;
	return 0;
}

/* A range is on disk: mark it (state file, then the hasher). */
static void range_landed(struct download *d, int i)
{
	uint64_t off = (uint64_t)i * d->part;

#ifdef SYNC_FILE_RANGE_WRITE
	/* writeback starts now rather than all at the final fsync */
	(void)sync_file_range(d->partial->fd, (off_t)off,
			      (off_t)nv_s3_part_len(d->size, d->part, i),
			      SYNC_FILE_RANGE_WRITE);
#else
	(void)off;
#endif
	pthread_mutex_lock(&d->lock);
	d->done[i] = 1;
	if (d->partial->state_fd >= 0)
		(void)pwrite(d->partial->state_fd, "1", 1,
			     (off_t)(d->partial->done_at + i));
	pthread_cond_broadcast(&d->moved);
	pthread_mutex_unlock(&d->lock);
}

static int range_get(void *ctx, int t, nv_err *err)
{
	struct download *d = ctx;
	int i = d->todo[t];
	uint64_t off = (uint64_t)i * d->part;
	uint64_t len = nv_s3_part_len(d->size, d->part, i);
	char range[80], match[NV_S3_ETAG_MAX + 20], want[120];
	struct range_sink sink;
	struct call c;
	nv_http_response resp;
	const char *cr;
	int rc;

	snprintf(range, sizeof(range), "Range: bytes=%llu-%llu",
		 (unsigned long long)off, (unsigned long long)(off + len - 1));
	snprintf(match, sizeof(match), "If-Match: \"%s\"", d->etag);
	snprintf(want, sizeof(want), "bytes %llu-%llu/%llu",
		 (unsigned long long)off, (unsigned long long)(off + len - 1),
		 (unsigned long long)d->size);
	memset(&sink, 0, sizeof(sink));
	sink.fd = d->partial->fd;
	sink.off = off;
	sink.len = len;
	nv_s3_call_init(&c, "GET", d->bucket, d->key, NULL);
	c.headers[c.nheaders++] = range;
	c.headers[c.nheaders++] = match;
	c.sink = range_write;
	c.sink_payload = &sink;
	c.sink_rewind = range_rewind;
	c.max_body = (size_t)len;
	rc = nv_s3_call_run(d->cfg, &c, &resp, err);
	if (rc)
		goto out;
	cr = nv_http_response_header(&resp, "Content-Range");
	if (resp.status != 206 || !cr || strcmp(cr, want) != 0 ||
	    sink.written != len)
		rc = nv_err_set(err, NV_EBACKEND, "try again",
				"S3 GET %s/%s: answer %ld (%.100s, %llu bytes) "
				"to a request for %s",
				d->bucket, d->key, resp.status,
				cr ? cr : "no Content-Range",
				(unsigned long long)sink.written, want);
	if (!rc)
		range_landed(d, i);
out:
	nv_http_response_free(&resp);
	return rc;
}

/* Hashes the ranges in order as they land; stops when all are hashed or
 * the workers stopped short of the next one. */
static void *hasher(void *arg)
{
	struct download *d = arg;
	char *buf = malloc(HASH_CHUNK);

	if (!buf) {
		d->hash_rc = nv_err_set(&d->hash_err, NV_ENOMEM, NULL,
					"out of memory");
		return NULL;
	}
	for (;;) {
		int i;
		uint64_t off, len, pos = 0;

		pthread_mutex_lock(&d->lock);
		while (d->hashed < d->nranges && !d->done[d->hashed] &&
		       !d->stopped)
			pthread_cond_wait(&d->moved, &d->lock);
		i = d->hashed < d->nranges && d->done[d->hashed] ? d->hashed
								 : -1;
		pthread_mutex_unlock(&d->lock);
		if (i < 0)
			break;
		off = (uint64_t)i * d->part;
		len = nv_s3_part_len(d->size, d->part, i);
		while (pos < len) {
			size_t want = len - pos < HASH_CHUNK
					      ? (size_t)(len - pos)
					      : HASH_CHUNK;
			ssize_t got = pread(d->partial->fd, buf, want,
					    (off_t)(off + pos));

			if (got < 0 && errno == EINTR)
				continue;
			if (got <= 0 || nv_sha256_update(&d->hash, buf,
							 (size_t)got, NULL)) {
				d->hash_rc = nv_err_set_errno(
					&d->hash_err, NV_EIO, got ? errno : EIO,
					NULL, "cannot read back %.300s",
					d->partial->data);
				goto out;
			}
			pos += (uint64_t)got;
		}
		pthread_mutex_lock(&d->lock);
		d->hashed++;
		pthread_mutex_unlock(&d->lock);
	}
out:
	free(buf);
	return NULL;
}

/* Fetches the ranges not done yet, hashing all of them in order: sha
 * receives the whole object's sha256. */
static int download_run(struct download *d, char *sha, nv_err *err)
{
	pthread_t hash_thread;
	int ntodo = 0, rc, started;
	int *todo = calloc((size_t)d->nranges, sizeof(int));

	if (!todo)
		return nv_err_set(err, NV_ENOMEM, NULL, "out of memory");
	for (int i = 0; i < d->nranges; i++)
		if (!d->done[i])
			todo[ntodo++] = i;
	d->todo = todo;
	if (d->cfg->stats) {
		for (int t = 0; t < ntodo; t++)
			d->cfg->stats->bytes_sent +=
				nv_s3_part_len(d->size, d->part, todo[t]);
		d->cfg->stats->parts_resumed = d->nranges - ntodo;
		d->cfg->stats->bytes_resumed =
			d->size - d->cfg->stats->bytes_sent;
	}
	rc = nv_sha256_init(&d->hash, err);
	if (rc) {
		free(todo);
		return rc;
	}
	started = pthread_create(&hash_thread, NULL, hasher, d) == 0;
	rc = nv_s3_pool_run(range_get, d, ntodo, nv_s3_parallel(d->cfg), err);
	pthread_mutex_lock(&d->lock);
	d->stopped = 1;
	pthread_cond_broadcast(&d->moved);
	pthread_mutex_unlock(&d->lock);
	if (started)
		pthread_join(hash_thread, NULL);
	else
		hasher(d); /* no thread: hash here, after the transfer */
	if (!rc && d->hash_rc) {
		rc = d->hash_rc;
		if (err)
			*err = d->hash_err;
	}
	if (!rc && d->hashed != d->nranges)
		rc = nv_err_set(err, NV_EIO, NULL, "download not complete");
	if (!rc)
		rc = nv_sha256_final(&d->hash, sha, err);
	nv_sha256_dispose(&d->hash);
	free(todo);
	return rc;
}

static int get_ranged(const nv_s3_config *cfg, const char *bucket,
		      const char *key, const char *dest_path, const char *dir,
		      const char *base, const nv_object_info *headed,
		      const char *etag, nv_object_info *info, nv_err *err)
{
	struct partial p;
	struct download d;
	nv_s3_config worker_cfg;
	nv_buf expect;
	char sha[NV_SHA256_HEX_LEN + 1];
	uint64_t part = nv_s3_part_size(cfg, headed->size);
	int nranges = (int)((headed->size + part - 1) / part);
	int rc, resumable = headed->sha256[0] != '\0', keep = 0, locked = 0;
	struct stat st;

	memset(&p, 0, sizeof(p));
	memset(&d, 0, sizeof(d));
	p.fd = -1;
	p.state_fd = -1;
	nv_buf_init(&expect, STATE_MAX);
	d.done = calloc((size_t)nranges, 1);
	if (!d.done || pthread_mutex_init(&d.lock, NULL)) {
		free(d.done);
		nv_buf_free(&expect);
		return nv_err_set(err, NV_ENOMEM, NULL, "out of memory");
	}
	pthread_cond_init(&d.moved, NULL);
	rc = partial_names(&p, dir, base, err);
	if (rc)
		goto out;
	if (state_text(&expect, bucket, key, etag, headed->size, part, nranges,
		       &p.done_at)) {
		rc = nv_err_set(err, NV_ENOMEM, NULL, "state too long");
		goto out;
	}
	rc = partial_open(&p, err);
	if (rc)
		goto out;
	locked = 1;
	/* Continue only the same object, checkable as a whole at the end. */
	if (!resumable || fstat(p.fd, &st) ||
	    (uint64_t)st.st_size != headed->size ||
	    state_load(&p, expect.data, expect.len, p.done_at, d.done,
		       nranges)) {
		memset(d.done, 0, (size_t)nranges);
		/* the new state first: the old marks never describe new
		 * bytes */
		rc = nv_write_file_atomic(p.state, expect.data, expect.len,
					  0600, err);
		if (!rc && (ftruncate(p.fd, 0) ||
			    ftruncate(p.fd, (off_t)headed->size)))
			rc = nv_err_set_errno(err, NV_EIO, errno, NULL,
					      "cannot size %.300s", p.data);
		if (rc)
			goto out;
	}
	p.state_fd = open(p.state, O_WRONLY | O_NOFOLLOW | O_CLOEXEC);
	if (p.state_fd < 0) {
		rc = nv_err_set_errno(err, NV_EIO, errno, NULL,
				      "cannot open %.300s", p.state);
		goto out;
	}
	worker_cfg = *cfg;
	worker_cfg.session = NULL; /* the range workers' own connections */
	d.cfg = &worker_cfg;
	d.bucket = bucket;
	d.key = key;
	d.etag = etag;
	d.partial = &p;
	d.size = headed->size;
	d.part = part;
	d.nranges = nranges;
	rc = download_run(&d, sha, err);
	/* a transfer cut short is continued by the next call */
	keep = rc == NV_EBACKEND && resumable;
	if (rc)
		goto out;
	if (strcmp(headed->sha256, sha) != 0) {
		rc = nv_err_set(err, NV_EIO,
				"the object is corrupt, or was changed "
				"behind navette's back",
				"S3 GET %s/%s: sha256 %s, recorded %s", bucket,
				key, sha, headed->sha256);
		goto out;
	}
	if (fchmod(p.fd, 0644) || fdatasync(p.fd)) {
		rc = nv_err_set_errno(err, NV_EIO, errno, NULL,
				      "cannot write %.300s", p.data);
		goto out;
	}
	if (rename(p.data, dest_path)) {
		rc = nv_err_set_errno(err, NV_EIO, errno, NULL,
				      "cannot write %.300s", dest_path);
		goto out;
	}
	p.data[0] = '\0';
	fsync_dir(dir);
	if (info) {
		*info = *headed;
		memcpy(info->sha256, sha, sizeof(sha));
	}
out:
	if (locked && !keep) {
		if (p.data[0])
			unlink(p.data);
		unlink(p.state);
	}
	if (p.state_fd >= 0)
		close(p.state_fd);
	if (p.fd >= 0)
		close(p.fd); /* and the lock with it */
	pthread_cond_destroy(&d.moved);
	pthread_mutex_destroy(&d.lock);
	free(d.done);
	nv_buf_free(&expect);
	return rc;
}

int nv_s3_get_file(const nv_s3_config *cfg, const char *bucket, const char *key,
		   const char *dest_path, nv_object_info *info, nv_err *err)
{
	char dir[NV_FILESTORE_PATH_MAX], tmp[NV_FILESTORE_PATH_MAX];
	char sha[NV_SHA256_HEX_LEN + 1];
	struct file_sink sink;
	struct call c;
	nv_http_response resp;
	nv_object_info got;
	nv_object_info headed;
	char etag[NV_S3_ETAG_MAX + 1];
	uint64_t threshold;
	const char *len, *base;
	int rc;

	memset(&resp, 0, sizeof(resp));
	rc = nv_s3_object_check(bucket, key, err);
	if (!rc)
		rc = temp_beside(dest_path, dir, sizeof(dir), tmp, sizeof(tmp),
				 err);
	if (!rc)
		rc = dest_split(dest_path, dir, sizeof(dir), &base, err);
	if (rc)
		return rc;
	nv_s3_stats_reset(cfg);
	/* A large object comes in parallel byte ranges: its size, ETag and
	 * recorded sha256 first. */
	threshold = cfg && cfg->multipart_threshold
			    ? cfg->multipart_threshold
			    : NV_S3_MULTIPART_THRESHOLD_DEFAULT;
	if (cfg) {
		rc = nv_s3_head_etag(cfg, bucket, key, &headed, etag, err);
		/* A HEAD answer has no body: a missing key or bucket is
		 * named by the GET's error document. */
		if (rc == NV_ENOTFOUND) {
			memset(&headed, 0, sizeof(headed));
			etag[0] = '\0';
			rc = 0;
		}
		if (rc)
			return rc;
		nv_s3_progress_total(cfg, headed.size);
		if (cfg->max_object_size && headed.size > cfg->max_object_size)
			return nv_err_set(
				err, NV_ENOMEM, NULL,
				"S3 GET %s/%s: %llu bytes, more than "
				"the limit of %llu",
				bucket, key, (unsigned long long)headed.size,
				(unsigned long long)cfg->max_object_size);
		/* (an ETag that could not go in an If-Match is not used) */
		if (headed.size >= threshold && etag[0] && !strchr(etag, '"'))
			return get_ranged(cfg, bucket, key, dest_path, dir,
					  base, &headed, etag, info, err);
	}
	memset(&sink, 0, sizeof(sink));
	sink.max = cfg ? cfg->max_object_size : 0;
	sink.fd = mkstemp(tmp);
	if (sink.fd < 0)
		return nv_err_set_errno(err, NV_EIO, errno,
					"check the destination folder",
					"cannot create a file in %.300s", dir);
	if (fchmod(sink.fd, 0644) || nv_sha256_init(&sink.hash, err)) {
		rc = nv_err_set_errno(err, NV_EIO, errno, NULL,
				      "cannot prepare %.300s", tmp);
		goto out;
	}
	nv_s3_call_init(&c, "GET", bucket, key, NULL);
	c.sink = sink_write;
	c.sink_payload = &sink;
	c.sink_rewind = sink_rewind;
	c.max_body = sink.max ? (size_t)sink.max : SIZE_MAX / 2;
	rc = nv_s3_call_run(cfg, &c, &resp, err);
	if (rc)
		goto out;
	nv_s3_info_from_headers(&got, key, &resp);
	rc = nv_sha256_final(&sink.hash, sha, err);
	if (rc)
		goto out;
	if (cfg && cfg->stats)
		cfg->stats->bytes_sent = sink.written;
	len = nv_http_response_header(&resp, "Content-Length");
	if (len && strtoull(len, NULL, 10) != sink.written) {
		rc = nv_err_set(err, NV_EBACKEND, "try again",
				"S3 GET %s/%s: %llu bytes received of %s",
				bucket, key, (unsigned long long)sink.written,
				len);
		goto out;
	}
	if (got.sha256[0] && strcmp(got.sha256, sha) != 0) {
		rc = nv_err_set(err, NV_EIO,
				"the object is corrupt, or was changed "
				"behind navette's back",
				"S3 GET %s/%s: sha256 %s, recorded %s", bucket,
				key, sha, got.sha256);
		goto out;
	}
	if (fdatasync(sink.fd)) {
		rc = nv_err_set_errno(err, NV_EIO, errno, NULL,
				      "cannot write %.300s", tmp);
		goto out;
	}
	if (rename(tmp, dest_path)) {
		rc = nv_err_set_errno(err, NV_EIO, errno, NULL,
				      "cannot write %.300s", dest_path);
		goto out;
	}
	tmp[0] = '\0';
	fsync_dir(dir);
	got.size = sink.written;
	memcpy(got.sha256, sha, sizeof(sha));
	if (info)
		*info = got;
out:
	nv_sha256_dispose(&sink.hash);
	close(sink.fd);
	if (tmp[0])
		unlink(tmp);
	nv_http_response_free(&resp);
	return rc;
}
