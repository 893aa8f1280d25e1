/* The s3:// object store: an S3 client (AWS, radosgw, MinIO...) with the
 * same calls as the file:// store (put, get, head, list, delete, copy, all
 * filling nv_object_info), over nv_http and SigV4 header signing. Pure C,
 * no Lua.
 *
 * What it guarantees: keys pass nv_filestore_key_check() before any
 * request; every upload carries the sha256 of its body in
 * x-amz-content-sha256, so the server checks the bytes it stores, and the
 * whole object's sha256 in x-amz-meta-sha256, so head() can report it and
 * get() can check it; a download lands in a temp file beside its
 * destination and is renamed into place only when complete and checked;
 * a failed multipart upload is aborted, never published; XML is parsed
 * with expat, bounded in size and depth; idempotent requests are retried
 * with exponential backoff and jitter; the signing credential is only
 * sent to the host it is bound to, and never appears in a message.
 *
 * Thread-safety: calls share nothing but the (read-only) config; a
 * multipart put_file() sends its parts, and a large get_file() fetches
 * its ranges, from up to parallel_parts threads of its own, joined
 * before it returns. A config with stats is for one call at a time.
 *
 * Retries: idempotent requests (GET, HEAD, PUT, DELETE, listings) are
 * retried on 5xx, 429, SlowDown and RequestTimeout answers and on lost
 * connections and timeouts, with backoff (Retry-After honoured). The two
 * steps that must not run twice (CreateMultipartUpload,
 * CompleteMultipartUpload) are retried only after an answer that says
 * they did not run (503, 429); a lost answer to a completion is settled
 * by a HEAD, and one to an initiation is left to the next put_file()
 * (see resume). */
#ifndef NV_S3_H
#define NV_S3_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "core/buf.h"
#include "core/nv_err.h"
#include "creds/secret.h"
#include "net/http.h"
#include "storage/filestore.h"

#define NV_S3_MULTIPART_THRESHOLD_DEFAULT ((uint64_t)16 * 1024 * 1024)
#define NV_S3_PART_SIZE_DEFAULT           ((uint64_t)8 * 1024 * 1024)
#define NV_S3_PART_SIZE_MIN               ((uint64_t)5 * 1024 * 1024)
#define NV_S3_PART_SIZE_MAX               ((uint64_t)5 * 1024 * 1024 * 1024)
#define NV_S3_PARTS_MAX                   10000
#define NV_S3_PARALLEL_PARTS_DEFAULT      4
#define NV_S3_PARALLEL_PARTS_MAX          16
#define NV_S3_ATTEMPTS_DEFAULT            5
#define NV_S3_ATTEMPTS_MAX                10
#define NV_S3_RETRY_BASE_MS_DEFAULT       200L
#define NV_S3_RETRY_DELAY_MAX_MS          20000L /* one wait, Retry-After too */
#define NV_S3_XML_MAX                     ((size_t)16 * 1024 * 1024)
#define NV_S3_BUCKET_MAX                  63
#define NV_S3_ETAG_MAX                    128
#define NV_S3_UPLOAD_ID_MAX               1024
#define NV_S3_TOKEN_MAX                   4096 /* continuation token */
#define NV_S3_LIST_MAX                    NV_FILESTORE_LIST_MAX

/* What one put_file() or get_file() moved, for progress reports and
 * tests: filled by the calling thread (reset at the start of each call)
 * when the config points at one. */
typedef struct nv_s3_stats {
	uint64_t bytes_sent;    /* body bytes asked for in this call */
	uint64_t bytes_resumed; /* already there from an interrupted call */
	int parts_resumed;      /* parts (or ranges) of those */
} nv_s3_stats;

/* How far one put_file() or get_file() has got, for a progress bar that
 * another thread draws while the call runs: the body bytes moved so far
 * by every thread of the call (a retried request counts again) and the
 * size of the object or file (0 until known). Both are written with
 * atomic stores; read them with nv_s3_progress_read(). */
typedef struct nv_s3_progress {
	uint64_t done;
	uint64_t total;
} nv_s3_progress;

/* done and total of p as they are now (either may be NULL). */
void nv_s3_progress_read(const nv_s3_progress *p, uint64_t *done,
			 uint64_t *total);

/* Where and how to talk to one S3 service (from the profile). Every
 * pointer is the caller's and must outlive the calls. Zeroes mean
 * defaults. */
typedef struct nv_s3_config {
	/* "https://host[:port]", no path; "http://" only for loopback hosts
	 * (nv_http refuses the rest). */
	const char *endpoint;
	const char *region; /* NULL: "us-east-1" */
	/* 0: path-style (https://host/bucket/key), 1: virtual-host
	 * (https://bucket.host/key). */
	int virtual_host;
	const char *ca_bundle;     /* passed to nv_http_policy */
	const char *pinned_pubkey; /* idem */
	/* An NV_SECRET_S3 secret; NULL: anonymous (unsigned) requests. */
	const nv_secret *credential;
	/* The host the credential is bound to, "host" or "host:port"; NULL:
	 * the endpoint's own. A request to any other host is refused before
	 * anything is sent (with virtual_host, "bucket." + this host is the
	 * same binding). */
	const char *credential_host;
	long connect_timeout_ms;      /* per request; 0: nv_http's default */
	long total_timeout_ms;        /* per request (one part); 0: idem */
	uint64_t multipart_threshold; /* put_file at or above: multipart */
	uint64_t part_size; /* NV_S3_PART_SIZE_MIN..MAX; grown as needed to
			       stay within NV_S3_PARTS_MAX parts */
	int max_attempts;   /* per idempotent request, 1..NV_S3_ATTEMPTS_MAX */
	long retry_base_ms; /* first backoff; doubles with each attempt */
	/* get_file() refuses a body larger than this; 0: no limit. It is
	 * also the cap on an error body of a GET (see nv_http). */
	uint64_t max_object_size;
	/* put_file's multipart parts in flight at once, each on its own
	 * connection and thread; 0: NV_S3_PARALLEL_PARTS_DEFAULT, at most
	 * NV_S3_PARALLEL_PARTS_MAX. */
	int parallel_parts;
	nv_s3_stats *stats;       /* may be NULL; see nv_s3_stats */
	nv_s3_progress *progress; /* may be NULL; see nv_s3_progress */
	/* May be NULL. When set, the calls made on the caller's thread go
	 * through it, so its connection is kept alive from one call to the
	 * next (a sweep's HEADs, a listing's pages); the parallel workers of
	 * multipart and ranged transfers use connections of their own. Not
	 * owned; one thread at a time. */
	nv_http_session *session;
} nv_s3_config;

/* Bucket names as S3 wants them: 3..63 of a-z 0-9 . -, starting and
 * ending with a letter or digit, not an IP address. */
int nv_s3_bucket_check(const char *bucket, nv_err *err);

/* PUT Bucket. A bucket already owned by the caller is not an error. */
int nv_s3_create_bucket(const nv_s3_config *cfg, const char *bucket,
			nv_err *err);

/* Uploads src_path as key: hashed first, then sent in one PUT (streamed
 * from the file, bounded memory) or, at or above the multipart threshold,
 * in parts (each with its own sha256, up to parallel_parts at once, each
 * streamed; on any failure the others stop after their current part and
 * the upload is aborted). A file that changes while it is sent is
 * NV_EIO. info (may be NULL) receives key, size, sha256 and mtime.
 *
 * Resume: a multipart upload cut short without an abort (the process
 * killed) stays in progress on the server, unpublished. The next
 * put_file() of the same key finds it (ListMultipartUploads), and
 * continues it only when it was initiated no earlier than the file's
 * last change and every part it holds (ListParts) has the size and the
 * MD5 (its ETag) of that part of the file; it then sends only the
 * missing parts. Any other upload in progress of that key is aborted.
 * After completing a resumed upload the object's recorded sha256 is
 * checked against the file's; if an earlier state of the file began it,
 * a fresh upload replaces it. (Clock skew between this machine and the
 * server only ever makes it start over.) */
int nv_s3_put_file(const nv_s3_config *cfg, const char *bucket, const char *key,
		   const char *src_path, nv_object_info *info, nv_err *err);
int nv_s3_put_bytes(const nv_s3_config *cfg, const char *bucket,
		    const char *key, const void *data, size_t len,
		    nv_object_info *info, nv_err *err);

/* Downloads key to dest_path: streamed into a temp file created beside
 * dest_path (never elsewhere), hashed while written, checked against the
 * object's length and recorded sha256 (when it has one), fsynced and
 * renamed into place. On any failure dest_path is left untouched and the
 * temp file removed. NV_ENOTFOUND when the object is missing.
 *
 * At or above the multipart threshold the object comes in parallel
 * ranges (If-Match its ETag) into ".NAME.navette-partial" beside
 * dest_path, with ".NAME.navette-partial.state" recording the object
 * (bucket, key, ETag, size, range size) and the ranges on disk. A
 * transfer cut short (NV_EBACKEND, or the process killed) keeps both,
 * and the next get_file() to dest_path continues it when the object has
 * the same ETag and size and a recorded sha256 (the whole is checked
 * before the rename); otherwise it starts over. Any other failure
 * removes both. Two downloads to one dest_path at once: the second is
 * NV_EREFUSED (the partial file is locked). */
int nv_s3_get_file(const nv_s3_config *cfg, const char *bucket, const char *key,
		   const char *dest_path, nv_object_info *info, nv_err *err);

/* Size, mtime and the recorded sha256 ("" when the object was not put by
 * navette: S3 cannot hash it without a download) of key; NV_ENOTFOUND
 * when missing. etag (may be NULL) receives the ETag, quotes removed: a
 * multipart object's ends in "-N", N its number of parts. */
int nv_s3_head(const nv_s3_config *cfg, const char *bucket, const char *key,
	       nv_object_info *info, nv_err *err);
int nv_s3_head_etag(const nv_s3_config *cfg, const char *bucket,
		    const char *key, nv_object_info *info,
		    char etag[NV_S3_ETAG_MAX + 1], nv_err *err);

/* One page of ListObjectsV2: keys starting with prefix (NULL: all), after
 * start_after (NULL: none), at most max_keys (0 or more than
 * NV_S3_LIST_MAX: NV_S3_LIST_MAX), each given to callback (info.sha256 is
 * "": S3 lists no checksums; a nonzero return stops the listing and is
 * returned). continuation (may be NULL) is in and out: "" for the first
 * page; when *truncated is set it holds the token of the next page, to be
 * passed back as it is. */
int nv_s3_list(const nv_s3_config *cfg, const char *bucket, const char *prefix,
	       const char *start_after, char continuation[NV_S3_TOKEN_MAX + 1],
	       unsigned max_keys, nv_filestore_list_cb callback, void *payload,
	       int *truncated, nv_err *err);

/* Removes key. Like the file store, a missing key is NV_ENOTFOUND (S3
 * itself would answer 204: a HEAD comes first). */
int nv_s3_delete(const nv_s3_config *cfg, const char *bucket, const char *key,
		 nv_err *err);

#define NV_S3_DELETE_BATCH_MAX 1000

/* Called per key of a batch delete: code NULL when the key was deleted
 * (or was not there: S3 does not tell), else S3's error code and message
 * for it. A nonzero return stops the reports (not the delete). */
typedef int (*nv_s3_deleted_cb)(const char *key, const char *code,
				const char *message, void *payload);

/* DeleteObjects: up to NV_S3_DELETE_BATCH_MAX distinct keys in one
 * request. Each key passes the key check and must be UTF-8 (an XML
 * document carries the batch, escaped) before anything is sent; the
 * request carries its Content-MD5. The answer must account for every key
 * exactly once (NV_EBACKEND otherwise). 0 when all were deleted; when
 * some were not, the code of the first one's S3 error (NV_EREFUSED for
 * AccessDenied...) with a message naming it and the count. */
int nv_s3_delete_batch(const nv_s3_config *cfg, const char *bucket,
		       const char *const *keys, size_t nkeys,
		       nv_s3_deleted_cb callback, void *payload, nv_err *err);

/* Server-side copy (x-amz-copy-source; objects up to 5 GiB), metadata
 * (the recorded sha256) included. info as for head() of dst_key. */
int nv_s3_copy(const nv_s3_config *cfg, const char *src_bucket,
	       const char *src_key, const char *dst_bucket, const char *dst_key,
	       nv_object_info *info, nv_err *err);

/* --- multipart, the steps put_file() takes ------------------------------ */

typedef struct nv_s3_upload {
	const nv_s3_config *cfg;
	char bucket[NV_S3_BUCKET_MAX + 1];
	char key[NV_FILESTORE_KEY_MAX + 1];
	char upload_id[NV_S3_UPLOAD_ID_MAX + 1];
	char sha256[65]; /* of the whole object, "" when unknown */
	uint64_t size;   /* bytes sent in parts so far */
	char (*etags)[NV_S3_ETAG_MAX + 1]; /* one per part, malloc'd */
	int nparts;
	int open; /* initiated and neither completed nor aborted */
} nv_s3_upload;

/* Initiates an upload of key; sha256 (may be NULL) is the whole object's,
 * recorded as its metadata. Release up with nv_s3_upload_dispose(). */
int nv_s3_upload_begin(nv_s3_upload *up, const nv_s3_config *cfg,
		       const char *bucket, const char *key, const char *sha256,
		       nv_err *err);
/* Sends the next part (parts but the last must be at least 5 MiB, which
 * the server checks on completion). */
int nv_s3_upload_part(nv_s3_upload *up, const void *data, size_t len,
		      nv_err *err);
/* Publishes the object; on failure the upload is aborted. A lost answer
 * is settled by a HEAD, never by a blind second completion. */
int nv_s3_upload_complete(nv_s3_upload *up, nv_object_info *info, nv_err *err);
/* Aborts the upload: its parts are dropped, nothing is published. */
int nv_s3_upload_abort(nv_s3_upload *up, nv_err *err);
/* Aborts an open upload (errors ignored) and frees up's memory. */
void nv_s3_upload_dispose(nv_s3_upload *up);

/* Called per in-progress multipart upload; nonzero stops and is
 * returned. */
typedef int (*nv_s3_upload_cb)(const char *key, const char *upload_id,
			       void *payload);

/* Called per part of ListParts; etag without quotes. Nonzero stops. */
typedef int (*nv_s3_part_cb)(int part_number, uint64_t size, const char *etag,
			     void *payload);

/* ListParts of an upload in progress, every page. */
int nv_s3_list_parts(const nv_s3_config *cfg, const char *bucket,
		     const char *key, const char *upload_id,
		     nv_s3_part_cb callback, void *payload, nv_err *err);

/* ListMultipartUploads: one page (up to 1000) of the uploads in progress
 * whose key starts with prefix (NULL: all). */
int nv_s3_list_uploads(const nv_s3_config *cfg, const char *bucket,
		       const char *prefix, nv_s3_upload_cb callback,
		       void *payload, int *truncated, nv_err *err);

/* --- handing out access: presigned URLs, POST policies ------------------- */

#define NV_S3_POST_MAX_BYTES ((uint64_t)5 * 1024 * 1024 * 1024) /* S3's cap */

/* A SigV4 query-signed URL (payload UNSIGNED-PAYLOAD, signed header host)
 * letting its holder run method ("GET" or "PUT") on key until expires_s
 * (1..NV_SIGV4_EXPIRES_MAX) seconds after at (0: now). The session token,
 * when the credential has one, is in the URL: whoever holds it acts with
 * the credential's rights on that one object. Appended to url_out (whose
 * cap the caller sets). Needs a credential; sends nothing. */
int nv_s3_presign(const nv_s3_config *cfg, const char *method,
		  const char *bucket, const char *key, int expires_s, time_t at,
		  nv_buf *url_out, nv_err *err);

/* A browser POST upload scoped to keys starting with key_prefix (not
 * empty), bodies of 0..max_bytes (1..NV_S3_POST_MAX_BYTES), until
 * expires_s after at (0: now). Appends to json_out one JSON object:
 *   {"url": form action, "fields": {"key": key_prefix + "${filename}",
 *    "policy": base64 policy, "x-amz-algorithm", "x-amz-credential",
 *    "x-amz-date", "x-amz-signature"[, "x-amz-security-token"]}}
 * where the policy's conditions are the bucket, ["starts-with", "$key",
 * key_prefix], ["content-length-range", 0, max_bytes], the algorithm,
 * credential, date (and token). meta (may be NULL) is a NULL-terminated
 * list of metadata names (sha256 for x-amz-meta-sha256, at most 8, each
 * [a-z0-9-]) the form may also set, to any value: each gets a
 * ["starts-with", "$x-amz-meta-NAME", ""] condition, since S3 refuses a
 * form field no condition names. Needs a credential; sends nothing. */
#define NV_S3_POST_META_MAX 8
int nv_s3_post_policy(const nv_s3_config *cfg, const char *bucket,
		      const char *key_prefix, int expires_s, uint64_t max_bytes,
		      const char *const *meta, time_t at, nv_buf *json_out,
		      nv_err *err);

/* What a header-signed request of method (GET, HEAD, PUT or DELETE) on
 * bucket/key (key NULL: the bucket) would sign at time at (0: now): its
 * canonical request and string to sign, appended to the two buffers.
 * The payload hash is that of an empty body, or UNSIGNED-PAYLOAD for PUT
 * (a real upload signs its body's sha256). Neither text holds the secret
 * key; the canonical request holds the session token when there is one.
 * Needs a credential; sends nothing. */
int nv_s3_sign_explain(const nv_s3_config *cfg, const char *method,
		       const char *bucket, const char *key, time_t at,
		       nv_buf *canonical_out, nv_buf *string_to_sign_out,
		       nv_err *err);

/* --- XML of S3 answers (s3_xml.c; pure, exposed for tests and fuzzing) -- */

typedef struct nv_s3_error_doc {
	char code[64];
	char message[512]; /* truncated when longer */
	char request_id[128];
} nv_s3_error_doc;

/* Parses an <Error> document: 0 when xml is one (fields filled, possibly
 * empty), -1 otherwise. */
int nv_s3_xml_error(const char *xml, size_t len, nv_s3_error_doc *out);

/* Called per <Contents> of a listing, and per <Upload> of
 * ListMultipartUploads (info->key and upload_id only). */
typedef int (*nv_s3_xml_list_cb)(const nv_object_info *info,
				 const char *upload_id, void *payload);

/* A ListBucketResult (ListObjectsV2, with encoding-type=url: keys are
 * decoded) or a ListMultipartUploadsResult. Keys over
 * NV_FILESTORE_KEY_MAX bytes or holding a NUL are NV_EBACKEND. A
 * nonzero callback return stops the parse and is returned. */
int nv_s3_xml_list(const char *xml, size_t len, nv_s3_xml_list_cb callback,
		   void *payload, int *truncated, char *next_token,
		   size_t next_token_cap, nv_err *err);

/* A ListPartsResult: callback per <Part>; *truncated and *next_marker
 * (NextPartNumberMarker) for the next page. */
int nv_s3_xml_parts(const char *xml, size_t len, nv_s3_part_cb callback,
		    void *payload, int *truncated, int *next_marker,
		    nv_err *err);

/* A DeleteResult: callback per <Deleted> (code NULL) and per <Error>
 * (code and message, "" when absent). Keys as for nv_s3_xml_list. */
int nv_s3_xml_delete_result(const char *xml, size_t len,
			    nv_s3_deleted_cb callback, void *payload,
			    nv_err *err);

/* The text of the first element called name directly under the root
 * element called root (UploadId of InitiateMultipartUploadResult, ETag of
 * CompleteMultipartUploadResult...). NV_EBACKEND when missing, too long
 * or not that document. */
int nv_s3_xml_field(const char *xml, size_t len, const char *root,
		    const char *name, char *out, size_t cap, nv_err *err);

#endif
