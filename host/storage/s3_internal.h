/* What the files of the s3:// client share, private to host/storage/s3*.c
 * (the API is s3.h). s3.c holds the request engine (endpoint, one call,
 * signing, retries, S3 errors), the worker pool and the one-request
 * operations (head, bucket, delete, copy); s3_put.c the uploads, single and
 * multipart, and their resumption; s3_get.c the downloads, whole or in
 * ranges; s3_list.c the listings; s3_sign.c presigned URLs, POST policies
 * and explained signatures. */
#ifndef NV_S3_INTERNAL_H
#define NV_S3_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "core/buf.h"
#include "core/nv_err.h"
#include "net/http.h"
#include "storage/filestore.h"
#include "storage/s3.h"

#define AUTHORITY_MAX 300
#define URL_MAX       (16 * 1024)
#define CALL_HEADERS  6 /* extra headers of one call */
#define SHA256_META   "x-amz-meta-sha256"

/* --- config and names ---------------------------------------------------- */

struct endpoint {
	char scheme[8];                /* "http" or "https" */
	char authority[AUTHORITY_MAX]; /* "host[:port]", lowercase */
};

/* cfg's endpoint, checked: scheme and lowercase "host[:port]". */
int nv_s3_endpoint_parse(const nv_s3_config *cfg, struct endpoint *ep,
			 nv_err *err);
/* cfg's region, "us-east-1" when none. */
const char *nv_s3_region(const nv_s3_config *cfg);

static inline int key_check(const char *key, nv_err *err)
{
	return nv_filestore_key_check(key, err);
}

/* A valid bucket name and key. */
int nv_s3_object_check(const char *bucket, const char *key, nv_err *err);

/* --- one request ---------------------------------------------------------- */

/* A body reader that can start over (for retries). */
struct reader {
	nv_http_read_fn read;
	int (*rewind)(void *payload);
	void *payload;
	long long size;
};

struct call {
	const char *method;
	const char *bucket; /* NULL: the service */
	const char *key;    /* raw; NULL: the bucket itself */
	const char *query;  /* encoded, without '?'; NULL: none */
	const char *headers[CALL_HEADERS]; /* "Name: value", all signed */
	int nheaders;
	const void *body; /* bytes... */
	size_t body_len;
	const struct reader *reader; /* ...or a reader */
	const char *payload_hash;    /* of the body; NULL: computed */
	nv_http_sink_fn sink;
	void *sink_payload;
	int (*sink_rewind)(void *payload);
	size_t max_body; /* 0: NV_S3_XML_MAX */
	int idempotent;
};

/* c, zeroed, for method on bucket's key (NULL: the bucket itself) with
 * query (NULL: none), marked idempotent: a call that must not be sent
 * twice sets idempotent back to 0. */
void nv_s3_call_init(struct call *c, const char *method, const char *bucket,
		     const char *key, const char *query);
#define NV_S3_MD5_HEADER_MAX 100
/* Makes body, an XML document, c's body, with the Content-MD5 header S3
 * asks of batch deletes and lifecycle rules written into md5_header (which
 * must outlive the call). NV_ENOMEM when body failed to grow. */
int nv_s3_call_xml_body(struct call *c, const nv_buf *body,
			char md5_header[NV_S3_MD5_HEADER_MAX], nv_err *err);
/* Path (encoded, as sent and signed), host and URL of a call. */
int nv_s3_call_target(const nv_s3_config *cfg, const struct endpoint *ep,
		      const struct call *c, nv_buf *path, char *host,
		      size_t host_cap, nv_buf *url, nv_err *err);
/* The credential goes only to the host it is bound to (see s3.h). */
int nv_s3_binding_check(const nv_s3_config *cfg, const struct endpoint *ep,
			const struct call *c, const char *host, nv_err *err);
/* Runs a call, retrying idempotent ones. 0 with a 2xx answer in *resp
 * (which the caller frees); otherwise the S3 or transport error. */
int nv_s3_call_run(const nv_s3_config *cfg, const struct call *c,
		   nv_http_response *resp, nv_err *err);
/* The S3 error of a non-2xx answer (or a 200 holding an <Error>). */
int nv_s3_call_error(const struct call *c, const nv_http_response *resp,
		     nv_err *err);
/* The attempts a call may make, and the wait before attempt + 1. */
int nv_s3_attempts(const nv_s3_config *cfg);
long nv_s3_backoff_ms(const nv_s3_config *cfg, int attempt,
		      const char *retry_after);
void nv_s3_sleep_ms(long ms);

/* --- head ---------------------------------------------------------------- */

/* "Sun, 06 Nov 1994 08:49:37 GMT" (RFC 9110 IMF-fixdate); 0 otherwise. */
int64_t nv_s3_http_date_parse(const char *s);
int nv_s3_is_sha256_hex(const char *s);
/* The ETag without its quotes, cut to NV_S3_ETAG_MAX. */
void nv_s3_etag_copy(char out[NV_S3_ETAG_MAX + 1], const char *etag);
/* Size, recorded sha256 and mtime of key from an answer's headers. */
void nv_s3_info_from_headers(nv_object_info *info, const char *key,
			     const nv_http_response *resp);

/* --- workers ------------------------------------------------------------- */

/* Runs task(ctx, i) for every i below count on up to nthreads workers;
 * the first failure stops the others and is the result. */
int nv_s3_pool_run(int (*task)(void *ctx, int i, nv_err *err), void *ctx,
		   int count, int nthreads, nv_err *err);
/* The parts or ranges of one transfer sent at a time. */
int nv_s3_parallel(const nv_s3_config *cfg);
void nv_s3_stats_reset(const nv_s3_config *cfg);
void nv_s3_progress_total(const nv_s3_config *cfg, uint64_t total);

/* --- parts (s3_put.c) ---------------------------------------------------- */

/* The part size for size bytes: the configured one, grown to stay within
 * NV_S3_PARTS_MAX parts. Downloads use it for their ranges. */
uint64_t nv_s3_part_size(const nv_s3_config *cfg, uint64_t size);
/* The length of part i (0-based). */
uint64_t nv_s3_part_len(uint64_t size, uint64_t part, int i);

/* --- list (s3_list.c) ---------------------------------------------------- */

/* One page of the multipart uploads of keys starting with prefix, each
 * given to callback with its upload id. */
/* Appends s to b with XML's five special characters escaped (request
 * bodies: batch delete, lifecycle rules). */
void nv_s3_xml_escape(nv_buf *b, const char *s);

int nv_s3_list_uploads_raw(const nv_s3_config *cfg, const char *bucket,
			   const char *prefix, nv_s3_xml_list_cb callback,
			   void *payload, int *truncated, nv_err *err);

#endif
