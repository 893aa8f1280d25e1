/* The s3:// object store over nv_http and SigV4 (see s3.h): URL building
 * and key encoding, signing, the retry loop, S3 error mapping, and the
 * operations that mirror the file store, multipart uploads included. */
#if defined(__linux__) && !defined(_GNU_SOURCE)
#define _GNU_SOURCE /* sync_file_range */
#endif
#include "storage/s3.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include "core/buf.h"
#include "core/fsutil.h"
#include "net/http.h"
#include "storage/sha256.h"
#include "storage/sigv4.h"

#define AUTHORITY_MAX 300
#define URL_MAX       (16 * 1024)
#define CALL_HEADERS  6 /* extra headers of one call */
#define SHA256_META   "x-amz-meta-sha256"
#define COMPLETE_MAX  ((size_t)2 * 1024 * 1024) /* 10000 parts fit */
#define FILE_CHUNK    ((size_t)256 * 1024)

#if defined(__APPLE__)
#define MTIM(st)      ((st)->st_mtimespec)
#define CTIM(st)      ((st)->st_ctimespec)
#define fdatasync(fd) fsync(fd)
#else
#define MTIM(st) ((st)->st_mtim)
#define CTIM(st) ((st)->st_ctim)
#endif

/* --- config and names ---------------------------------------------------- */

struct endpoint {
	char scheme[8];                /* "http" or "https" */
	char authority[AUTHORITY_MAX]; /* "host[:port]", lowercase */
};

static int endpoint_parse(const nv_s3_config *cfg, struct endpoint *ep,
			  nv_err *err)
{
	const char *e = cfg ? cfg->endpoint : NULL, *rest, *end;
	size_t n;

	if (!e)
		return nv_err_set(err, NV_EINVAL,
				  "set the endpoint of the "
				  "profile",
				  "no S3 endpoint given");
	if (strncmp(e, "https://", 8) == 0) {
		strcpy(ep->scheme, "https");
		rest = e + 8;
	} else if (strncmp(e, "http://", 7) == 0) {
		strcpy(ep->scheme, "http");
		rest = e + 7;
	} else {
		goto bad;
	}
	end = rest + strcspn(rest, "/?#");
	n = (size_t)(end - rest);
	if (n == 0 || n >= sizeof(ep->authority) || memchr(rest, '@', n) ||
	    (*end && strcmp(end, "/") != 0))
		goto bad;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)rest[i];

		if (!isalnum(c) && !strchr(".-:[]", c))
			goto bad;
		ep->authority[i] = (char)tolower(c);
	}
	ep->authority[n] = '\0';
	return 0;
bad:
	return nv_err_set(err, NV_EINVAL,
			  "the endpoint is \"https://host[:port]\", without "
			  "a path or user",
			  "malformed S3 endpoint '%.200s'", e);
}

static const char *region_of(const nv_s3_config *cfg)
{
	return cfg->region && cfg->region[0] ? cfg->region : "us-east-1";
}

int nv_s3_bucket_check(const char *bucket, nv_err *err)
{
	size_t n = bucket ? strlen(bucket) : 0;
	int dots = 0, digits_only = 1;

	if (n < 3 || n > NV_S3_BUCKET_MAX)
		goto bad;
	for (size_t i = 0; i < n; i++) {
		char c = bucket[i];

		if (c == '.') {
			dots++;
		} else if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
			     c == '-')) {
			goto bad;
		}
		if (c == '.' && (bucket[i + 1] == '.' || bucket[i + 1] == '-' ||
				 (i > 0 && bucket[i - 1] == '-')))
			goto bad;
		if (c != '.' && !(c >= '0' && c <= '9'))
			digits_only = 0;
	}
	if (!isalnum((unsigned char)bucket[0]) ||
	    !isalnum((unsigned char)bucket[n - 1]) ||
	    (dots == 3 && digits_only))
		goto bad;
	return 0;
bad:
	return nv_err_set(err, NV_EINVAL,
			  "bucket names are 3..63 of a-z 0-9 . - and start "
			  "and end with a letter or digit",
			  "bad bucket name '%.80s'", bucket ? bucket : "");
}

static int key_check(const char *key, nv_err *err)
{
	return nv_filestore_key_check(key, err);
}

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

struct sigv4_headers {
	nv_sigv4_header list[CALL_HEADERS];
	char names[CALL_HEADERS][64];
	size_t n;
};

static int split_headers(const struct call *c, struct sigv4_headers *h)
{
	h->n = 0;
	for (int i = 0; i < c->nheaders; i++) {
		const char *colon = strchr(c->headers[i], ':');
		size_t n = colon ? (size_t)(colon - c->headers[i]) : 0;

		if (!colon || n >= sizeof(h->names[0]))
			return -1;
		memcpy(h->names[i], c->headers[i], n);
		h->names[i][n] = '\0';
		h->list[i].name = h->names[i];
		h->list[i].value = colon + 1 + strspn(colon + 1, " ");
		h->n++;
	}
	return 0;
}

/* The short name of a call for messages: "PUT bucket/key". */
static void call_name(const struct call *c, char *out, size_t cap)
{
	snprintf(out, cap, "%s %s%s%.200s", c->method,
		 c->bucket ? c->bucket : "", c->key ? "/" : "",
		 c->key ? c->key : "");
}

/* Path (encoded, as sent and signed), host and URL of a call. */
static int call_target(const nv_s3_config *cfg, const struct endpoint *ep,
		       const struct call *c, nv_buf *path, char *host,
		       size_t host_cap, nv_buf *url, nv_err *err)
{
	int n;

	nv_buf_puts(path, "/");
	if (c->bucket && !cfg->virtual_host) {
		nv_buf_puts(path, c->bucket);
		if (c->key)
			nv_buf_puts(path, "/");
	}
	if (c->key)
		nv_sigv4_uri_encode(path, c->key, strlen(c->key), 1);
	if (c->bucket && cfg->virtual_host)
		n = snprintf(host, host_cap, "%s.%s", c->bucket, ep->authority);
	else
		n = snprintf(host, host_cap, "%s", ep->authority);
	if (n < 0 || (size_t)n >= host_cap)
		return nv_err_set(err, NV_EINVAL, NULL,
				  "S3 host name too long");
	nv_buf_printf(url, "%s://%s%s%s%s", ep->scheme, host,
		      path->data ? path->data : "/",
		      c->query && c->query[0] ? "?" : "",
		      c->query ? c->query : "");
	if (path->failed || url->failed)
		return nv_err_set(err, NV_ENOMEM, "keys are at most 1024 bytes",
				  "S3 request URL too long");
	return 0;
}

/* The credential goes only to the host it is bound to (see s3.h). */
static int binding_check(const nv_s3_config *cfg, const struct endpoint *ep,
			 const struct call *c, const char *host, nv_err *err)
{
	const char *bound =
		cfg->credential_host ? cfg->credential_host : ep->authority;
	size_t hn = strlen(host), bn = strlen(bound);
	const char *tail = host;

	if (!cfg->credential)
		return 0;
	if (cfg->virtual_host && c->bucket) {
		size_t skip = strlen(c->bucket) + 1;

		tail = hn > skip ? host + skip : "";
	}
	/* A binding without a port matches the host on any port. */
	if (strcasecmp(tail, bound) == 0 ||
	    (!strchr(bound, ':') && strncasecmp(tail, bound, bn) == 0 &&
	     tail[bn] == ':'))
		return 0;
	return nv_err_set(err, NV_EREFUSED,
			  "a credential is only sent to the host it was "
			  "given for; check the endpoint of the profile",
			  "credential %s is bound to host %s, not sent to %s",
			  cfg->credential->name, bound, host);
}

struct code_hint {
	const char *code;
	int nv_code;
	const char *hint;
};

/* Refusals of the credential or the request are NV_EREFUSED: the service
 * answered and said no, retrying will not help (NV_EBACKEND is kept for an
 * unreachable or failing service, which may heal). */
static const struct code_hint code_hints[] = {
	{"SignatureDoesNotMatch", NV_EREFUSED,
	 "check the secret key, and the clock (skew)"},
	{"InvalidAccessKeyId", NV_EREFUSED,
	 "the access key id is unknown to this server"},
	{"AccessDenied", NV_EREFUSED, "bucket policy or expired URL"},
	{"RequestTimeTooSkewed", NV_EREFUSED,
	 "the clock of this machine is off: sync it (NTP)"},
	{"AuthorizationHeaderMalformed", NV_EREFUSED,
	 "wrong region: set the region of the profile to the bucket's"},
	{"PermanentRedirect", NV_EREFUSED,
	 "wrong region or endpoint: use the bucket's own"},
	{"IllegalLocationConstraintException", NV_EREFUSED,
	 "wrong region: set the region of the profile to the bucket's"},
	{"ExpiredToken", NV_EREFUSED, "the session token expired: renew it"},
	{"InvalidToken", NV_EREFUSED, "the session token is not valid here"},
	{"NoSuchBucket", NV_ENOTFOUND,
	 "check the bucket name (create it with `storage mb`)"},
	{"NoSuchKey", NV_ENOTFOUND, "check the key"},
	{"NoSuchUpload", NV_ENOTFOUND,
	 "the multipart upload was completed or aborted"},
	{"BucketAlreadyExists", NV_EREFUSED,
	 "bucket names are global: pick another"},
	{"BucketNotEmpty", NV_EREFUSED, "delete its objects first"},
	{"XAmzContentSHA256Mismatch", NV_EIO,
	 "the file changed while it was being uploaded"},
	{"BadDigest", NV_EIO, "the file changed while it was being uploaded"},
	{"EntityTooSmall", NV_EINVAL,
	 "parts but the last must be at least 5 MiB"},
	{"EntityTooLarge", NV_EINVAL, "use a multipart upload"},
	{"SlowDown", NV_EBACKEND, "the service is throttling: try later"},
	{"ServiceUnavailable", NV_EBACKEND, "the service is overloaded"},
	{"InternalError", NV_EBACKEND, "the service failed: try later"},
	{"RequestTimeout", NV_EBACKEND, "the network is slow: try again"},
};

static int error_retryable(long status, const char *code)
{
	return status >= 500 || status == 429 ||
	       strcmp(code, "SlowDown") == 0 ||
	       strcmp(code, "RequestTimeout") == 0 ||
	       strcmp(code, "InternalError") == 0;
}

/* Keeps the message printable and on one line. */
static void sanitize(char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			*s = ' ';
}

/* The S3 error of a non-2xx answer (or a 200 holding an <Error>). */
static int s3_error(const struct call *c, const nv_http_response *resp,
		    nv_err *err)
{
	nv_s3_error_doc doc;
	const struct code_hint *ch = NULL;
	char what[300];
	const char *rid;
	int code = NV_EBACKEND;
	const char *hint = "check the endpoint, bucket and key";

	call_name(c, what, sizeof(what));
	if (nv_s3_xml_error(resp->body.data, resp->body.len, &doc)) {
		memset(&doc, 0, sizeof(doc));
		/* HEAD answers carry no body: name the status. */
		if (resp->status == 404)
			strcpy(doc.code, c->key ? "NoSuchKey" : "NoSuchBucket");
		else if (resp->status == 403)
			strcpy(doc.code, "AccessDenied");
		else if (resp->status == 301)
			strcpy(doc.code, "PermanentRedirect");
		else if (resp->status == 400)
			strcpy(doc.code, "BadRequest");
		else if (resp->status == 503)
			strcpy(doc.code, "SlowDown");
		else
			snprintf(doc.code, sizeof(doc.code), "HTTP%ld",
				 resp->status);
	}
	sanitize(doc.code);
	sanitize(doc.message);
	sanitize(doc.request_id);
	rid = doc.request_id[0]      ? doc.request_id
	      : resp->amz_request_id ? resp->amz_request_id
				     : "none";
	for (size_t i = 0; i < sizeof(code_hints) / sizeof(code_hints[0]); i++)
		if (strcmp(code_hints[i].code, doc.code) == 0)
			ch = &code_hints[i];
	if (ch) {
		code = ch->nv_code;
		hint = ch->hint;
	} else if (resp->status >= 500) {
		hint = "the service failed: try later";
	} else if (resp->status == 404) {
		code = NV_ENOTFOUND;
	}
	return nv_err_set(err, code, hint,
			  "S3 %s: %s%s%s (HTTP %ld, request id %.100s)", what,
			  doc.code, doc.message[0] ? ": " : "", doc.message,
			  resp->status, rid);
}

static int64_t http_date_parse(const char *s);

static void sleep_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

/* Full jitter: a random wait in [delay/2, delay], delay doubling per
 * attempt; a Retry-After in seconds wins when longer. Both capped. */
static long backoff_ms(const nv_s3_config *cfg, int attempt,
		       const char *retry_after)
{
	long base = cfg->retry_base_ms > 0 ? cfg->retry_base_ms
					   : NV_S3_RETRY_BASE_MS_DEFAULT;
	long delay = base, after = 0;
	char hex[9];
	unsigned long r = 0;

	for (int i = 1; i < attempt && delay < NV_S3_RETRY_DELAY_MAX_MS; i++)
		delay *= 2;
	if (delay > NV_S3_RETRY_DELAY_MAX_MS)
		delay = NV_S3_RETRY_DELAY_MAX_MS;
	if (nv_random_hex(hex, 4, NULL) == 0)
		r = strtoul(hex, NULL, 16);
	delay = delay / 2 + (long)(r % (unsigned long)(delay / 2 + 1));
	if (retry_after && isdigit((unsigned char)retry_after[0])) {
		after = strtol(retry_after, NULL, 10);
	} else if (retry_after) {
		/* or an HTTP date */
		int64_t when = http_date_parse(retry_after);

		after = when ? (long)(when - (int64_t)time(NULL)) : 0;
	}
	if (after > 0)
		after = after > NV_S3_RETRY_DELAY_MAX_MS / 1000
				? NV_S3_RETRY_DELAY_MAX_MS
				: after * 1000;
	return after > delay ? after : delay;
}

static int attempts_of(const nv_s3_config *cfg)
{
	if (cfg->max_attempts <= 0)
		return NV_S3_ATTEMPTS_DEFAULT;
	return cfg->max_attempts > NV_S3_ATTEMPTS_MAX ? NV_S3_ATTEMPTS_MAX
						      : cfg->max_attempts;
}

/* Signs and sends one attempt. */
/* A request's body reader or sink that also counts the bytes it moves
 * into cfg->progress (see nv_s3_progress). */
struct counted {
	nv_s3_progress *progress;
	nv_http_read_fn read;
	nv_http_sink_fn sink;
	void *payload;
};

static int counted_read(void *payload, char *buf, size_t cap, size_t *nread)
{
	struct counted *cn = payload;
	int rc = cn->read(cn->payload, buf, cap, nread);

	if (!rc && *nread)
		__atomic_add_fetch(&cn->progress->done, (uint64_t)*nread,
				   __ATOMIC_RELAXED);
	return rc;
}

static int counted_sink(void *payload, const char *data, size_t len)
{
	struct counted *cn = payload;
	int rc = cn->sink(cn->payload, data, len);

	if (!rc)
		__atomic_add_fetch(&cn->progress->done, (uint64_t)len,
				   __ATOMIC_RELAXED);
	return rc;
}

static int call_once(const nv_s3_config *cfg, const struct call *c,
		     const char *path, const char *host, const char *url,
		     const char *payload_hash, nv_http_response *resp,
		     nv_err *err)
{
	nv_http_policy policy;
	nv_http_request req;
	nv_sigv4_params params;
	nv_sigv4_request sreq;
	nv_sigv4_result sig;
	struct sigv4_headers sh;
	struct counted read_count, sink_count;
	const char *headers[CALL_HEADERS + NV_SIGV4_ADDED_MAX + 2];
	char host_header[AUTHORITY_MAX + 80];
	size_t n = 0;
	int rc;

	memset(resp, 0, sizeof(*resp));
	nv_sigv4_result_init(&sig);
	snprintf(host_header, sizeof(host_header), "Host: %s", host);
	headers[n++] = host_header;
	for (int i = 0; i < c->nheaders; i++)
		headers[n++] = c->headers[i];
	if (cfg->credential) {
		memset(&params, 0, sizeof(params));
		rc = nv_sigv4_params_from_secret(&params, cfg->credential, err);
		if (rc)
			goto out;
		params.region = region_of(cfg);
		params.service = "s3";
		params.time = (int64_t)time(NULL);
		params.add_content_sha256 = 1;
		if (split_headers(c, &sh)) {
			rc = nv_err_set(err, NV_EINVAL, NULL,
					"malformed S3 header");
			goto out;
		}
		memset(&sreq, 0, sizeof(sreq));
		sreq.method = c->method;
		sreq.path = path;
		sreq.query = c->query;
		sreq.host = host;
		sreq.headers = sh.list;
		sreq.nheaders = sh.n;
		sreq.payload_hash = payload_hash;
		rc = nv_sigv4_sign_headers(&sig, &sreq, &params, err);
		if (rc)
			goto out;
		for (int i = 0; i < sig.nheaders; i++)
			headers[n++] = sig.headers[i].data;
	}
	memset(&policy, 0, sizeof(policy));
	policy.ca_bundle = cfg->ca_bundle;
	policy.pinned_pubkey = cfg->pinned_pubkey;
	policy.connect_timeout_ms = cfg->connect_timeout_ms;
	policy.total_timeout_ms = cfg->total_timeout_ms;
	policy.max_body = c->max_body ? c->max_body : NV_S3_XML_MAX;
	memset(&req, 0, sizeof(req));
	req.method = c->method;
	req.url = url;
	req.headers = headers;
	req.nheaders = n;
	if (c->reader) {
		req.body_read = c->reader->read;
		req.body_payload = c->reader->payload;
		req.body_size = c->reader->size;
	} else {
		req.body = c->body;
		req.body_len = c->body_len;
	}
	req.sink = c->sink;
	req.sink_payload = c->sink_payload;
	if (cfg->progress && c->reader) {
		read_count.progress = cfg->progress;
		read_count.read = c->reader->read;
		read_count.payload = c->reader->payload;
		req.body_read = counted_read;
		req.body_payload = &read_count;
	}
	if (cfg->progress && c->sink) {
		sink_count.progress = cfg->progress;
		sink_count.sink = c->sink;
		sink_count.payload = c->sink_payload;
		req.sink = counted_sink;
		req.sink_payload = &sink_count;
	}
	rc = cfg->session ? nv_http_session_perform(cfg->session, &policy, &req,
						    resp, err)
			  : nv_http_perform(&policy, &req, resp, err);
out:
	nv_sigv4_result_free(&sig);
	return rc;
}

/* Runs a call, retrying idempotent ones. 0 with a 2xx answer in *resp
 * (which the caller frees); otherwise the S3 or transport error. */
static int call_run(const nv_s3_config *cfg, const struct call *c,
		    nv_http_response *resp, nv_err *err)
{
	struct endpoint ep;
	nv_buf path, url;
	char host[AUTHORITY_MAX + NV_S3_BUCKET_MAX + 2];
	char hash[NV_SHA256_HEX_LEN + 1];
	const char *payload_hash = c->payload_hash;
	int rc, attempts = attempts_of(cfg);

	memset(resp, 0, sizeof(*resp));
	nv_buf_init(&path, URL_MAX);
	nv_buf_init(&url, URL_MAX);
	rc = endpoint_parse(cfg, &ep, err);
	if (rc)
		goto out;
	rc = call_target(cfg, &ep, c, &path, host, sizeof(host), &url, err);
	if (rc)
		goto out;
	rc = binding_check(cfg, &ep, c, host, err);
	if (rc)
		goto out;
	if (!payload_hash) {
		if (c->reader) {
			rc = nv_err_set(err, NV_EINVAL, NULL,
					"a streamed body needs its sha256");
			goto out;
		}
		rc = nv_sha256_bytes(c->body ? c->body : "", c->body_len, hash,
				     err);
		if (rc)
			goto out;
		payload_hash = hash;
	}
	for (int attempt = 1;; attempt++) {
		const char *code = "";
		nv_s3_error_doc doc;
		int retry;

		if (attempt > 1) {
			if ((c->reader &&
			     c->reader->rewind(c->reader->payload)) ||
			    (c->sink_rewind &&
			     c->sink_rewind(c->sink_payload))) {
				rc = nv_err_set(err, NV_EIO, NULL,
						"cannot start a retry over");
				goto out;
			}
		}
		rc = call_once(cfg, c, path.data, host, url.data, payload_hash,
			       resp, err);
		if (rc == 0 && resp->status >= 200 && resp->status < 300)
			goto out;
		if (rc == 0) {
			if (nv_s3_xml_error(resp->body.data, resp->body.len,
					    &doc) == 0)
				code = doc.code;
			retry = error_retryable(resp->status, code);
			/* A step that must not run twice is retried only
			 * when the answer says it did not run: throttled. */
			if (!c->idempotent)
				retry = resp->status == 503 ||
					resp->status == 429;
			rc = s3_error(c, resp, err);
		} else {
			/* Connection failures and timeouts (the answer did
			 * not come, the step may have run), not caps,
			 * refusals or local I/O. */
			retry = rc == NV_EBACKEND && c->idempotent;
		}
		if (!retry || attempt >= attempts)
			goto out;
		sleep_ms(backoff_ms(cfg, attempt, resp->retry_after));
		nv_http_response_free(resp);
	}
out:
	nv_buf_free(&path);
	nv_buf_free(&url);
	return rc;
}

/* --- head ---------------------------------------------------------------- */

/* "Sun, 06 Nov 1994 08:49:37 GMT" (RFC 9110 IMF-fixdate); 0 otherwise. */
static int64_t http_date_parse(const char *s)
{
	static const char months[] = "JanFebMarAprMayJunJulAugSepOctNovDec";
	char wday[4], mon[4];
	const char *m;
	struct tm tm;

	memset(&tm, 0, sizeof(tm));
	if (!s ||
	    sscanf(s, "%3[A-Za-z], %d %3s %d %d:%d:%d", wday, &tm.tm_mday, mon,
		   &tm.tm_year, &tm.tm_hour, &tm.tm_min, &tm.tm_sec) != 7)
		return 0;
	m = strstr(months, mon);
	if (!m || strlen(mon) != 3 || (m - months) % 3)
		return 0;
	tm.tm_mon = (int)((m - months) / 3);
	tm.tm_year -= 1900;
	return (int64_t)timegm(&tm);
}

static int is_sha256_hex(const char *s)
{
	if (!s || strlen(s) != NV_SHA256_HEX_LEN)
		return 0;
	for (; *s; s++)
		if (!isdigit((unsigned char)*s) && !(*s >= 'a' && *s <= 'f'))
			return 0;
	return 1;
}

static void etag_copy(char out[NV_S3_ETAG_MAX + 1], const char *etag)
{
	size_t n;

	out[0] = '\0';
	if (!etag)
		return;
	if (*etag == '"')
		etag++;
	n = strcspn(etag, "\"");
	if (n > NV_S3_ETAG_MAX)
		n = NV_S3_ETAG_MAX;
	memcpy(out, etag, n);
	out[n] = '\0';
}

static void info_from_headers(nv_object_info *info, const char *key,
			      const nv_http_response *resp)
{
	const char *len = nv_http_response_header(resp, "Content-Length");
	const char *sha = nv_http_response_header(resp, SHA256_META);

	memset(info, 0, sizeof(*info));
	snprintf(info->key, sizeof(info->key), "%s", key);
	info->size = len ? strtoull(len, NULL, 10) : 0;
	if (is_sha256_hex(sha))
		memcpy(info->sha256, sha, NV_SHA256_HEX_LEN + 1);
	info->mtime =
		http_date_parse(nv_http_response_header(resp, "Last-Modified"));
}

int nv_s3_head_etag(const nv_s3_config *cfg, const char *bucket,
		    const char *key, nv_object_info *info,
		    char etag[NV_S3_ETAG_MAX + 1], nv_err *err)
{
	struct call c;
	nv_http_response resp;
	nv_object_info local;
	int rc;

	rc = nv_s3_bucket_check(bucket, err);
	if (!rc)
		rc = key_check(key, err);
	if (rc)
		return rc;
	memset(&c, 0, sizeof(c));
	c.method = "HEAD";
	c.bucket = bucket;
	c.key = key;
	c.max_body = SIZE_MAX / 2; /* curl checks Content-Length against it */
	c.idempotent = 1;
	rc = call_run(cfg, &c, &resp, err);
	if (!rc) {
		info_from_headers(info ? info : &local, key, &resp);
		if (etag)
			etag_copy(etag, resp.etag);
	}
	nv_http_response_free(&resp);
	return rc;
}

int nv_s3_head(const nv_s3_config *cfg, const char *bucket, const char *key,
	       nv_object_info *info, nv_err *err)
{
	return nv_s3_head_etag(cfg, bucket, key, info, NULL, err);
}

/* --- bucket -------------------------------------------------------------- */

int nv_s3_create_bucket(const nv_s3_config *cfg, const char *bucket,
			nv_err *err)
{
	struct call c;
	nv_http_response resp;
	nv_buf body;
	int rc;

	rc = nv_s3_bucket_check(bucket, err);
	if (rc)
		return rc;
	nv_buf_init(&body, 4096);
	memset(&c, 0, sizeof(c));
	c.method = "PUT";
	c.bucket = bucket;
	c.idempotent = 1;
	if (cfg && strcmp(region_of(cfg), "us-east-1") != 0) {
		nv_buf_printf(&body,
			      "<CreateBucketConfiguration xmlns=\"http://s3."
			      "amazonaws.com/doc/2006-03-01/\"><Location"
			      "Constraint>%.64s</LocationConstraint>"
			      "</CreateBucketConfiguration>",
			      region_of(cfg));
		c.body = body.data;
		c.body_len = body.len;
	}
	rc = call_run(cfg, &c, &resp, err);
	if (rc && err && strstr(err->message, ": BucketAlreadyOwnedByYou"))
		rc = 0;
	if (!rc && err)
		nv_err_clear(err);
	nv_http_response_free(&resp);
	nv_buf_free(&body);
	return rc;
}

/* --- workers ------------------------------------------------------------- */

/* Runs task(ctx, i) for every i below count on up to nthreads workers:
 * this thread and as many more as start. Each takes the next index under
 * lock; the first failure stops the others after their current task and
 * is the result. Hashing, uploads of parts and downloads of ranges share
 * it. */
struct task_pool {
	int (*task)(void *ctx, int i, nv_err *err);
	void *ctx;
	int count;
	pthread_mutex_t lock;
	int next;   /* the next index to take */
	int stop;   /* set by the first failure */
	int rc;     /* that failure */
	nv_err err; /* and its message */
};

static void *pool_worker(void *arg)
{
	struct task_pool *p = arg;
	nv_err err;

	for (;;) {
		int i, rc;

		pthread_mutex_lock(&p->lock);
		i = p->stop || p->next >= p->count ? -1 : p->next++;
		pthread_mutex_unlock(&p->lock);
		if (i < 0)
			break;
		memset(&err, 0, sizeof(err));
		rc = p->task(p->ctx, i, &err);
		if (rc) {
			pthread_mutex_lock(&p->lock);
			if (!p->stop) {
				p->stop = 1;
				p->rc = rc;
				p->err = err;
			}
			pthread_mutex_unlock(&p->lock);
			break;
		}
	}
	return NULL;
}

static int pool_run(int (*task)(void *ctx, int i, nv_err *err), void *ctx,
		    int count, int nthreads, nv_err *err)
{
	struct task_pool pool;
	pthread_t threads[NV_S3_PARALLEL_PARTS_MAX];
	int started = 0;

	if (nthreads > count)
		nthreads = count;
	if (nthreads > NV_S3_PARALLEL_PARTS_MAX)
		nthreads = NV_S3_PARALLEL_PARTS_MAX;
	memset(&pool, 0, sizeof(pool));
	pool.task = task;
	pool.ctx = ctx;
	pool.count = count;
	if (pthread_mutex_init(&pool.lock, NULL))
		return nv_err_set(err, NV_ENOMEM, NULL, "out of memory");
	while (started < nthreads - 1 &&
	       pthread_create(&threads[started], NULL, pool_worker, &pool) == 0)
		started++;
	pool_worker(&pool);
	for (int t = 0; t < started; t++)
		pthread_join(threads[t], NULL);
	pthread_mutex_destroy(&pool.lock);
	if (pool.rc && err)
		*err = pool.err;
	return pool.rc;
}

static int parallel_of(const nv_s3_config *cfg)
{
	if (cfg->parallel_parts <= 0)
		return NV_S3_PARALLEL_PARTS_DEFAULT;
	return cfg->parallel_parts > NV_S3_PARALLEL_PARTS_MAX
		       ? NV_S3_PARALLEL_PARTS_MAX
		       : cfg->parallel_parts;
}

static void stats_reset(const nv_s3_config *cfg)
{
	if (cfg && cfg->stats)
		memset(cfg->stats, 0, sizeof(*cfg->stats));
	/* (the total stays: a fresh start of the same call has the same) */
	if (cfg && cfg->progress)
		__atomic_store_n(&cfg->progress->done, 0, __ATOMIC_RELAXED);
}

static void progress_total(const nv_s3_config *cfg, uint64_t total)
{
	if (cfg && cfg->progress)
		__atomic_store_n(&cfg->progress->total, total,
				 __ATOMIC_RELAXED);
}

void nv_s3_progress_read(const nv_s3_progress *p, uint64_t *done,
			 uint64_t *total)
{
	if (done)
		*done = p ? __atomic_load_n(&p->done, __ATOMIC_RELAXED) : 0;
	if (total)
		*total = p ? __atomic_load_n(&p->total, __ATOMIC_RELAXED) : 0;
}

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
	rc = pool_run(prepass_task, &p, parts ? 2 : 1, 2, err);
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
	memset(&c, 0, sizeof(c));
	c.method = "PUT";
	c.bucket = bucket;
	c.key = key;
	c.query = query;
	if (meta_header)
		c.headers[c.nheaders++] = meta_header;
	c.reader = &rd;
	c.payload_hash = sha256;
	c.idempotent = 1;
	rc = call_run(cfg, &c, resp, err);
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
	t = resp ? http_date_parse(nv_http_response_header(resp, "Date")) : 0;
	info->mtime = t ? t : (int64_t)time(NULL);
}

static int put_check(const char *bucket, const char *key, nv_err *err)
{
	int rc = nv_s3_bucket_check(bucket, err);

	return rc ? rc : key_check(key, err);
}

int nv_s3_put_bytes(const nv_s3_config *cfg, const char *bucket,
		    const char *key, const void *data, size_t len,
		    nv_object_info *info, nv_err *err)
{
	struct call c;
	nv_http_response resp;
	char sha[NV_SHA256_HEX_LEN + 1], meta[100];
	int rc;

	rc = put_check(bucket, key, err);
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
	memset(&c, 0, sizeof(c));
	c.method = "PUT";
	c.bucket = bucket;
	c.key = key;
	c.headers[c.nheaders++] = meta;
	c.body = data ? data : "";
	c.body_len = len;
	c.payload_hash = sha;
	c.idempotent = 1;
	rc = call_run(cfg, &c, &resp, err);
	if (!rc)
		info_fill(info, key, len, sha, &resp);
	nv_http_response_free(&resp);
	return rc;
}

/* The part size for size bytes: the configured one, grown to stay within
 * NV_S3_PARTS_MAX parts. */
static uint64_t part_size_for(const nv_s3_config *cfg, uint64_t size)
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

static uint64_t part_len(uint64_t size, uint64_t part, int i)
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
	etag_copy(up->etags[up->nparts], etag);
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
			       off, part_len(p->size, p->part, i), p->hashes[i],
			       NULL, &resp, err);
	if (!rc)
		rc = etag_check(resp.etag, err);
	if (!rc)
		etag_copy(p->up->etags[i], resp.etag); /* i is this worker's */
	nv_http_response_free(&resp);
	nv_buf_free(&q);
	return rc;
}

/* Sends the ntodo parts listed in todo of an open upload whose
 * up->etags has nparts slots, up to parallel_of() at a time, each
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
	rc = pool_run(part_send, &pool, ntodo, parallel_of(cfg), err);
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

static int list_uploads_raw(const nv_s3_config *cfg, const char *bucket,
			    const char *prefix, nv_s3_xml_list_cb callback,
			    void *payload, int *truncated, nv_err *err);

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
	etag_copy(p->etag, etag);
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
			  part_len(p->size, p->part, i), EVP_md5(), hex, buf,
			  err);
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
		if (parts[i].size != part_len(size, part, i))
			goto out;
		todo[n++] = i;
	}
	memset(&pool, 0, sizeof(pool));
	pool.fd = fd;
	pool.size = size;
	pool.part = part;
	pool.todo = todo;
	pool.parts = parts;
	if (pool_run(md5_task, &pool, n, parallel_of(cfg), &ignored))
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
	if (list_uploads_raw(cfg, bucket, key, candidate_add, cand, &truncated,
			     &ignored))
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
			cfg->stats->bytes_resumed += part_len(size, part, i);
		}
	}
	for (int t = 0; cfg->stats && t < ntodo; t++)
		cfg->stats->bytes_sent += part_len(size, part, todo[t]);
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
	uint64_t part = part_size_for(cfg, size);
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
		stats_reset(cfg);
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

	rc = put_check(bucket, key, err);
	if (rc)
		return rc;
	stats_reset(cfg);
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
	progress_total(cfg, (uint64_t)st.st_size);
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
	rc = put_check(bucket, key, err);
	if (rc)
		return rc;
	up->cfg = cfg;
	snprintf(up->bucket, sizeof(up->bucket), "%s", bucket);
	snprintf(up->key, sizeof(up->key), "%s", key);
	memset(&c, 0, sizeof(c));
	c.method = "POST";
	c.bucket = bucket;
	c.key = key;
	c.query = "uploads";
	if (sha256 && is_sha256_hex(sha256)) {
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
	rc = call_run(cfg, &c, &resp, err);
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
	memset(&c, 0, sizeof(c));
	c.method = "PUT";
	c.bucket = up->bucket;
	c.key = up->key;
	c.query = q.data;
	c.body = data ? data : "";
	c.body_len = len;
	c.payload_hash = sha;
	c.idempotent = 1;
	rc = call_run(up->cfg, &c, &resp, err);
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
	int rc = 0, attempts = attempts_of(up->cfg);

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
	memset(&c, 0, sizeof(c));
	c.method = "POST";
	c.bucket = up->bucket;
	c.key = up->key;
	c.query = q.data;
	c.body = body.data;
	c.body_len = body.len;
	c.idempotent = 0; /* never blindly sent twice: see below */
	for (int attempt = 1;; attempt++) {
		int lost;

		rc = call_run(up->cfg, &c, &resp, err);
		/* A 200 may still carry an <Error> (S3 sends it late). */
		if (!rc &&
		    nv_s3_xml_error(resp.body.data, resp.body.len, &doc) == 0) {
			resp.status = 500;
			rc = s3_error(&c, &resp, err);
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
		sleep_ms(backoff_ms(up->cfg, attempt, NULL));
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
	memset(&c, 0, sizeof(c));
	c.method = "DELETE";
	c.bucket = up->bucket;
	c.key = up->key;
	c.query = q.data;
	c.idempotent = 1;
	rc = call_run(up->cfg, &c, &resp, err);
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

	rc = put_check(bucket, key, err);
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
		memset(&c, 0, sizeof(c));
		c.method = "GET";
		c.bucket = bucket;
		c.key = key;
		c.query = q.data;
		c.idempotent = 1;
		rc = call_run(cfg, &c, &resp, err);
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
	while (len) {
		ssize_t n = write(s->fd, data, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		data += n;
		len -= (size_t)n;
		s->written += (uint64_t)n;
	}
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
	while (len) {
		ssize_t n =
			pwrite(s->fd, data, len, (off_t)(s->off + s->written));

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		data += n;
		len -= (size_t)n;
		s->written += (uint64_t)n;
	}
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
			      (off_t)part_len(d->size, d->part, i),
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
	uint64_t len = part_len(d->size, d->part, i);
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
	memset(&c, 0, sizeof(c));
	c.method = "GET";
	c.bucket = d->bucket;
	c.key = d->key;
	c.headers[c.nheaders++] = range;
	c.headers[c.nheaders++] = match;
	c.sink = range_write;
	c.sink_payload = &sink;
	c.sink_rewind = range_rewind;
	c.max_body = (size_t)len;
	c.idempotent = 1;
	rc = call_run(d->cfg, &c, &resp, err);
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
		len = part_len(d->size, d->part, i);
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
				part_len(d->size, d->part, todo[t]);
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
	rc = pool_run(range_get, d, ntodo, parallel_of(d->cfg), err);
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
	uint64_t part = part_size_for(cfg, headed->size);
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
	rc = put_check(bucket, key, err);
	if (!rc)
		rc = temp_beside(dest_path, dir, sizeof(dir), tmp, sizeof(tmp),
				 err);
	if (!rc)
		rc = dest_split(dest_path, dir, sizeof(dir), &base, err);
	if (rc)
		return rc;
	stats_reset(cfg);
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
		progress_total(cfg, headed.size);
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
	memset(&c, 0, sizeof(c));
	c.method = "GET";
	c.bucket = bucket;
	c.key = key;
	c.sink = sink_write;
	c.sink_payload = &sink;
	c.sink_rewind = sink_rewind;
	c.max_body = sink.max ? (size_t)sink.max : SIZE_MAX / 2;
	c.idempotent = 1;
	rc = call_run(cfg, &c, &resp, err);
	if (rc)
		goto out;
	info_from_headers(&got, key, &resp);
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

/* --- list ---------------------------------------------------------------- */

struct list_relay {
	nv_filestore_list_cb object_cb;
	nv_s3_upload_cb upload_cb;
	void *payload;
};

static int list_relay(const nv_object_info *info, const char *upload_id,
		      void *payload)
{
	struct list_relay *r = payload;

	if (r->upload_cb)
		return r->upload_cb(info->key, upload_id ? upload_id : "",
				    r->payload);
	return r->object_cb(info, r->payload);
}

static void query_param(nv_buf *q, const char *name, const char *value)
{
	if (!value || !value[0])
		return;
	nv_buf_printf(q, "&%s=", name);
	nv_sigv4_uri_encode(q, value, strlen(value), 0);
}

int nv_s3_list(const nv_s3_config *cfg, const char *bucket, const char *prefix,
	       const char *start_after, char continuation[NV_S3_TOKEN_MAX + 1],
	       unsigned max_keys, nv_filestore_list_cb callback, void *payload,
	       int *truncated, nv_err *err)
{
	struct call c;
	struct list_relay relay = {callback, NULL, payload};
	nv_http_response resp;
	nv_buf q;
	char next[NV_S3_TOKEN_MAX + 1];
	int rc, more = 0;

	if (truncated)
		*truncated = 0;
	rc = nv_s3_bucket_check(bucket, err);
	if (rc)
		return rc;
	if (!callback)
		return nv_err_set(err, NV_EINVAL, NULL, "no list callback");
	if (max_keys == 0 || max_keys > NV_S3_LIST_MAX)
		max_keys = NV_S3_LIST_MAX;
	/* Parameters in canonical (sorted) order. */
	nv_buf_init(&q, URL_MAX);
	if (continuation && continuation[0])
		query_param(&q, "continuation-token", continuation);
	nv_buf_printf(&q, "&encoding-type=url&list-type=2&max-keys=%u",
		      max_keys);
	query_param(&q, "prefix", prefix);
	query_param(&q, "start-after", start_after);
	if (q.failed) {
		nv_buf_free(&q);
		return nv_err_set(err, NV_EINVAL, NULL,
				  "listing query too long");
	}
	memset(&c, 0, sizeof(c));
	c.method = "GET";
	c.bucket = bucket;
	c.query = q.data + 1; /* the leading '&' */
	c.idempotent = 1;
	rc = call_run(cfg, &c, &resp, err);
	if (!rc)
		rc = nv_s3_xml_list(resp.body.data, resp.body.len, list_relay,
				    &relay, &more, next, sizeof(next), err);
	if (!rc && more && !next[0])
		rc = nv_err_set(err, NV_EBACKEND, "the server misbehaves",
				"S3 listing truncated without a "
				"continuation token");
	if (!rc) {
		if (truncated)
			*truncated = more;
		if (continuation)
			memcpy(continuation, more ? next : "",
			       more ? strlen(next) + 1 : 1);
	}
	nv_http_response_free(&resp);
	nv_buf_free(&q);
	return rc;
}

static int list_uploads_raw(const nv_s3_config *cfg, const char *bucket,
			    const char *prefix, nv_s3_xml_list_cb callback,
			    void *payload, int *truncated, nv_err *err)
{
	struct call c;
	nv_http_response resp;
	nv_buf q;
	int rc;

	if (truncated)
		*truncated = 0;
	rc = nv_s3_bucket_check(bucket, err);
	if (rc)
		return rc;
	nv_buf_init(&q, URL_MAX);
	nv_buf_puts(&q, "&encoding-type=url");
	query_param(&q, "prefix", prefix);
	nv_buf_puts(&q, "&uploads");
	if (q.failed) {
		nv_buf_free(&q);
		return nv_err_set(err, NV_EINVAL, NULL,
				  "listing query too long");
	}
	memset(&c, 0, sizeof(c));
	c.method = "GET";
	c.bucket = bucket;
	c.query = q.data + 1;
	c.idempotent = 1;
	rc = call_run(cfg, &c, &resp, err);
	if (!rc)
		rc = nv_s3_xml_list(resp.body.data, resp.body.len, callback,
				    payload, truncated, NULL, 0, err);
	nv_http_response_free(&resp);
	nv_buf_free(&q);
	return rc;
}

int nv_s3_list_uploads(const nv_s3_config *cfg, const char *bucket,
		       const char *prefix, nv_s3_upload_cb callback,
		       void *payload, int *truncated, nv_err *err)
{
	struct list_relay relay = {NULL, callback, payload};

	if (!callback)
		return nv_err_set(err, NV_EINVAL, NULL, "no list callback");
	return list_uploads_raw(cfg, bucket, prefix, list_relay, &relay,
				truncated, err);
}

/* --- delete and copy ----------------------------------------------------- */

int nv_s3_delete(const nv_s3_config *cfg, const char *bucket, const char *key,
		 nv_err *err)
{
	struct call c;
	nv_http_response resp;
	int rc;

	rc = nv_s3_head(cfg, bucket, key, NULL, err);
	if (rc)
		return rc;
	memset(&c, 0, sizeof(c));
	c.method = "DELETE";
	c.bucket = bucket;
	c.key = key;
	c.idempotent = 1;
	rc = call_run(cfg, &c, &resp, err);
	nv_http_response_free(&resp);
	return rc;
}

/* --- batch delete ----------------------------------------------------------
 */

/* Valid UTF-8, no overlong forms or surrogates: what XML may carry. */
static int utf8_valid(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;

	while (*p) {
		unsigned c = *p, n, cp;

		if (c < 0x80) {
			p++;
			continue;
		}
		if (c >= 0xc2 && c <= 0xdf)
			n = 1, cp = c & 0x1f;
		else if (c >= 0xe0 && c <= 0xef)
			n = 2, cp = c & 0x0f;
		else if (c >= 0xf0 && c <= 0xf4)
			n = 3, cp = c & 0x07;
		else
			return 0;
		for (unsigned i = 1; i <= n; i++) {
			if ((p[i] & 0xc0) != 0x80)
				return 0;
			cp = (cp << 6) | (p[i] & 0x3f);
		}
		if ((n == 2 &&
		     (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) ||
		    (n == 3 && (cp < 0x10000 || cp > 0x10ffff)))
			return 0;
		p += n + 1;
	}
	return 1;
}

static void xml_escape(nv_buf *b, const char *s)
{
	for (; *s; s++) {
		switch (*s) {
		case '&': nv_buf_puts(b, "&amp;"); break;
		case '<': nv_buf_puts(b, "&lt;"); break;
		case '>': nv_buf_puts(b, "&gt;"); break;
		case '"': nv_buf_puts(b, "&quot;"); break;
		case '\'': nv_buf_puts(b, "&apos;"); break;
		default: nv_buf_append(b, s, 1);
		}
	}
}

static int key_compare(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

struct delete_report {
	const char **sorted; /* the requested keys, sorted */
	unsigned char *seen; /* by position in sorted */
	size_t n;
	nv_s3_deleted_cb callback;
	void *payload;
	size_t failed;
	char first_key[NV_FILESTORE_KEY_MAX + 1];
	char first_code[64];
	char first_message[256];
	int stray; /* the answer named a key not asked for, or twice */
	int stopped;
};

static int delete_seen(const char *key, const char *code, const char *message,
		       void *payload)
{
	struct delete_report *r = payload;
	const char **hit =
		bsearch(&key, r->sorted, r->n, sizeof(*r->sorted), key_compare);
	size_t i;
	int rc;

	if (!hit || r->seen[(i = (size_t)(hit - r->sorted))]) {
		r->stray = 1;
		return 0;
	}
	r->seen[i] = 1;
	if (code) {
		if (!r->failed++) {
			snprintf(r->first_key, sizeof(r->first_key), "%s", key);
			snprintf(r->first_code, sizeof(r->first_code), "%s",
				 code[0] ? code : "InternalError");
			snprintf(r->first_message, sizeof(r->first_message),
				 "%s", message ? message : "");
			sanitize(r->first_code);
			sanitize(r->first_message);
		}
	}
	if (r->callback && !r->stopped) {
		rc = r->callback(key, code, message, r->payload);
		if (rc)
			r->stopped = 1;
	}
	return 0;
}

int nv_s3_delete_batch(const nv_s3_config *cfg, const char *bucket,
		       const char *const *keys, size_t nkeys,
		       nv_s3_deleted_cb callback, void *payload, nv_err *err)
{
	struct delete_report r;
	unsigned char md5[EVP_MAX_MD_SIZE];
	unsigned int md5_len = 0;
	char md5_b64[64], md5_header[100];
	struct call c;
	nv_http_response resp;
	nv_buf body;
	int rc;

	memset(&r, 0, sizeof(r));
	memset(&resp, 0, sizeof(resp));
	rc = nv_s3_bucket_check(bucket, err);
	if (rc)
		return rc;
	if (nkeys == 0 || nkeys > NV_S3_DELETE_BATCH_MAX || !keys)
		return nv_err_set(err, NV_EINVAL, "send 1 to 1000 keys a batch",
				  "a batch delete of %zu keys", nkeys);
	/* every key checked before anything is sent */
	for (size_t i = 0; i < nkeys; i++) {
		rc = key_check(keys[i], err);
		if (rc)
			return rc;
		if (!utf8_valid(keys[i]))
			return nv_err_set(err, NV_EINVAL,
					  "delete such a key on its own",
					  "key '%.200s' is not UTF-8: an XML "
					  "batch cannot name it",
					  keys[i]);
	}
	r.sorted = malloc(nkeys * sizeof(*r.sorted));
	r.seen = calloc(nkeys, 1);
	nv_buf_init(&body, (size_t)NV_S3_DELETE_BATCH_MAX *
					   (6 * NV_FILESTORE_KEY_MAX + 32) +
				   256);
	if (!r.sorted || !r.seen) {
		rc = nv_err_set(err, NV_ENOMEM, NULL, "out of memory");
		goto out;
	}
	memcpy(r.sorted, keys, nkeys * sizeof(*r.sorted));
	qsort(r.sorted, nkeys, sizeof(*r.sorted), key_compare);
	for (size_t i = 1; i < nkeys; i++)
		if (strcmp(r.sorted[i - 1], r.sorted[i]) == 0) {
			rc = nv_err_set(err, NV_EINVAL, NULL,
					"key '%.200s' is twice in the batch",
					r.sorted[i]);
			goto out;
		}
	r.n = nkeys;
	r.callback = callback;
	r.payload = payload;
	/* not Quiet: the answer must name every key, deleted or not */
	nv_buf_puts(&body, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>"
			   "<Delete><Quiet>false</Quiet>");
	for (size_t i = 0; i < nkeys; i++) {
		nv_buf_puts(&body, "<Object><Key>");
		xml_escape(&body, keys[i]);
		nv_buf_puts(&body, "</Key></Object>");
	}
	nv_buf_puts(&body, "</Delete>");
	if (body.failed || EVP_Digest(body.data, body.len, md5, &md5_len,
				      EVP_md5(), NULL) != 1) {
		rc = nv_err_set(err, NV_ENOMEM, NULL, "out of memory");
		goto out;
	}
	EVP_EncodeBlock((unsigned char *)md5_b64, md5, (int)md5_len);
	snprintf(md5_header, sizeof(md5_header), "Content-MD5: %s", md5_b64);
	memset(&c, 0, sizeof(c));
	c.method = "POST";
	c.bucket = bucket;
	c.query = "delete";
	c.headers[c.nheaders++] = md5_header;
	c.headers[c.nheaders++] = "Content-Type: application/xml";
	c.body = body.data;
	c.body_len = body.len;
	c.idempotent = 1; /* deleting twice deletes the same keys */
	rc = call_run(cfg, &c, &resp, err);
	if (!rc)
		rc = nv_s3_xml_delete_result(resp.body.data, resp.body.len,
					     delete_seen, &r, err);
	if (rc)
		goto out;
	for (size_t i = 0; i < nkeys && !r.stray; i++)
		r.stray = !r.seen[i];
	if (r.stray) {
		rc = nv_err_set(err, NV_EBACKEND, "the server misbehaves",
				"S3 DeleteObjects %s: the answer does not "
				"account for each of the %zu keys once",
				bucket, nkeys);
		goto out;
	}
	if (r.failed) {
		const struct code_hint *ch = NULL;

		for (size_t i = 0; i < sizeof(code_hints) / sizeof(*code_hints);
		     i++)
			if (strcmp(code_hints[i].code, r.first_code) == 0)
				ch = &code_hints[i];
		rc = nv_err_set(err, ch ? ch->nv_code : NV_EBACKEND,
				ch ? ch->hint : "check the bucket policy",
				"S3 DeleteObjects %s: %zu of %zu keys not "
				"deleted; the first, %.200s: %s%s%s",
				bucket, r.failed, nkeys, r.first_key,
				r.first_code, r.first_message[0] ? ": " : "",
				r.first_message);
	}
out:
	free(r.sorted);
	free(r.seen);
	nv_buf_free(&body);
	nv_http_response_free(&resp);
	return rc;
}

int nv_s3_copy(const nv_s3_config *cfg, const char *src_bucket,
	       const char *src_key, const char *dst_bucket, const char *dst_key,
	       nv_object_info *info, nv_err *err)
{
	struct call c;
	nv_http_response resp;
	nv_s3_error_doc doc;
	nv_buf source;
	int rc;

	rc = put_check(src_bucket, src_key, err);
	if (!rc)
		rc = put_check(dst_bucket, dst_key, err);
	if (rc)
		return rc;
	nv_buf_init(&source, URL_MAX);
	nv_buf_printf(&source, "x-amz-copy-source: /%s/", src_bucket);
	nv_sigv4_uri_encode(&source, src_key, strlen(src_key), 1);
	if (source.failed) {
		nv_buf_free(&source);
		return nv_err_set(err, NV_ENOMEM, NULL, "copy source too long");
	}
	memset(&c, 0, sizeof(c));
	c.method = "PUT";
	c.bucket = dst_bucket;
	c.key = dst_key;
	c.headers[c.nheaders++] = source.data;
	c.idempotent = 1;
	rc = call_run(cfg, &c, &resp, err);
	/* A copy may fail after its 200 was sent: the body says so. */
	if (!rc && nv_s3_xml_error(resp.body.data, resp.body.len, &doc) == 0) {
		resp.status = 500;
		rc = s3_error(&c, &resp, err);
	}
	nv_http_response_free(&resp);
	nv_buf_free(&source);
	if (!rc && info)
		rc = nv_s3_head(cfg, dst_bucket, dst_key, info, err);
	return rc;
}

/* --- presigning, POST policies, explaining ------------------------------- */

/* What the three signers share: a credential, a well-formed target, the
 * host binding, and the signing parameters (borrowing from the secret). */
struct sign_target {
	struct endpoint ep;
	nv_buf path, url;
	char host[AUTHORITY_MAX + NV_S3_BUCKET_MAX + 2];
	nv_sigv4_params params;
};

static int sign_target_init(struct sign_target *t, const nv_s3_config *cfg,
			    const char *method, const char *bucket,
			    const char *key, time_t at, nv_err *err)
{
	struct call c;
	int rc;

	memset(t, 0, sizeof(*t));
	nv_buf_init(&t->path, URL_MAX);
	nv_buf_init(&t->url, URL_MAX);
	if (!cfg || !cfg->credential)
		return nv_err_set(err, NV_EREFUSED,
				  "give a credential of kind s3 (signing needs "
				  "one)",
				  "cannot sign without a credential");
	if (at < 0)
		return nv_err_set(err, NV_EINVAL, NULL,
				  "signing time before 1970");
	rc = endpoint_parse(cfg, &t->ep, err);
	if (!rc)
		rc = nv_s3_bucket_check(bucket, err);
	if (!rc && key)
		rc = key_check(key, err);
	if (rc)
		return rc;
	memset(&c, 0, sizeof(c));
	c.method = method;
	c.bucket = bucket;
	c.key = key;
	rc = call_target(cfg, &t->ep, &c, &t->path, t->host, sizeof(t->host),
			 &t->url, err);
	if (!rc)
		rc = binding_check(cfg, &t->ep, &c, t->host, err);
	if (!rc)
		rc = nv_sigv4_params_from_secret(&t->params, cfg->credential,
						 err);
	if (rc)
		return rc;
	t->params.region = region_of(cfg);
	t->params.service = "s3";
	t->params.time = (int64_t)(at ? at : time(NULL));
	return 0;
}

static void sign_target_free(struct sign_target *t)
{
	nv_buf_free(&t->path);
	nv_buf_free(&t->url);
}

static int expires_check(int expires_s, nv_err *err)
{
	if (expires_s < 1 || expires_s > NV_SIGV4_EXPIRES_MAX)
		return nv_err_set(err, NV_EINVAL,
				  "S3 accepts 1 s to 7 days (604800 s)",
				  "expiry of %d s out of range", expires_s);
	return 0;
}

int nv_s3_presign(const nv_s3_config *cfg, const char *method,
		  const char *bucket, const char *key, int expires_s, time_t at,
		  nv_buf *url_out, nv_err *err)
{
	struct sign_target t;
	nv_sigv4_request sreq;
	nv_sigv4_result sig;
	int rc;

	nv_sigv4_result_init(&sig);
	if (!method || (strcmp(method, "GET") && strcmp(method, "PUT"))) {
		rc = nv_err_set(err, NV_EINVAL, "presign GET or PUT",
				"cannot presign method %.16s",
				method ? method : "(none)");
		memset(&t, 0, sizeof(t));
		goto out;
	}
	rc = sign_target_init(&t, cfg, method, bucket, key, at, err);
	if (!rc && !key)
		rc = nv_err_set(err, NV_EINVAL, NULL, "presigning needs a key");
	if (!rc)
		rc = expires_check(expires_s, err);
	if (rc)
		goto out;
	t.params.expires = expires_s;
	memset(&sreq, 0, sizeof(sreq));
	sreq.method = method;
	sreq.path = t.path.data;
	sreq.host = t.host;
	rc = nv_sigv4_presign(&sig, &sreq, &t.params, err);
	if (rc)
		goto out;
	nv_buf_printf(url_out, "%s://%s%s?%s", t.ep.scheme, t.host, t.path.data,
		      sig.query.data);
	if (url_out->failed)
		rc = nv_err_set(err, NV_ENOMEM, NULL,
				"presigned URL too long for its buffer");
out:
	nv_sigv4_result_free(&sig);
	sign_target_free(&t);
	return rc;
}

/* Appends s as a JSON string (quotes included). */
static void json_string(nv_buf *b, const char *s)
{
	nv_buf_append(b, "\"", 1);
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			nv_buf_printf(b, "\\%c", c);
		else if (c < 0x20 || c == 0x7f)
			nv_buf_printf(b, "\\u%04x", c);
		else
			nv_buf_append(b, s, 1);
	}
	nv_buf_append(b, "\"", 1);
}

/* "2015-08-30T12:36:00.000Z" (policy expiration) and "20150830T123600Z"
 * (x-amz-date) of t. */
static int utc_format(int64_t t, char iso[32], char amz_date[17])
{
	time_t tt = (time_t)t;
	struct tm tm;

	if (!gmtime_r(&tt, &tm) ||
	    strftime(iso, 32, "%Y-%m-%dT%H:%M:%S.000Z", &tm) == 0 ||
	    strftime(amz_date, 17, "%Y%m%dT%H%M%SZ", &tm) != 16)
		return -1;
	return 0;
}

int nv_s3_post_policy(const nv_s3_config *cfg, const char *bucket,
		      const char *key_prefix, int expires_s, uint64_t max_bytes,
		      const char *const *meta, time_t at, nv_buf *json_out,
		      nv_err *err)
{
	struct sign_target t;
	nv_buf policy, b64, probe;
	char signature[NV_SIGV4_HEX_LEN + 1];
	char expiration[32], date8_iso[32], date8[9], amz_date[17];
	char credential[512];
	const char *token;
	int rc;

	nv_buf_init(&policy, NV_SIGV4_POLICY_MAX);
	nv_buf_init(&b64, 2 * NV_SIGV4_POLICY_MAX);
	nv_buf_init(&probe, NV_FILESTORE_KEY_MAX + 16);
	rc = sign_target_init(&t, cfg, "POST", bucket, NULL, at, err);
	if (rc)
		goto out;
	/* Every key the form may name starts with the prefix: the prefix
	 * followed by a name must itself be a valid key. */
	if (!key_prefix || !key_prefix[0]) {
		rc = nv_err_set(err, NV_EINVAL,
				"give a prefix such as \"uploads/\"",
				"a POST policy needs a key prefix");
		goto out;
	}
	nv_buf_printf(&probe, "%sx", key_prefix);
	rc = probe.failed
		     ? nv_err_set(err, NV_EINVAL, NULL, "key prefix too long")
		     : key_check(probe.data, err);
	if (!rc)
		rc = expires_check(expires_s, err);
	for (int i = 0; !rc && meta && meta[i]; i++) {
		size_t n = strlen(meta[i]);
		if (i >= NV_S3_POST_META_MAX || n == 0 || n > 64 ||
		    strspn(meta[i], "abcdefghijklmnopqrstuvwxyz0123456789-") !=
			    n)
			rc = nv_err_set(err, NV_EINVAL, NULL,
					"bad metadata name for a POST policy");
	}
	if (!rc && (max_bytes < 1 || max_bytes > NV_S3_POST_MAX_BYTES))
		rc = nv_err_set(err, NV_EINVAL, "at most 5 GiB per POST",
				"maximum size %llu out of range",
				(unsigned long long)max_bytes);
	if (rc)
		goto out;
	token = t.params.session_token;
	if (utc_format(t.params.time + expires_s, expiration, amz_date) ||
	    utc_format(t.params.time, date8_iso, amz_date)) {
		rc = nv_err_set(err, NV_EINVAL, NULL,
				"signing time out of "
				"range");
		goto out;
	}
	memcpy(date8, amz_date, 8);
	date8[8] = '\0';
	snprintf(credential, sizeof(credential), "%s/%s/%s/s3/aws4_request",
		 t.params.access_key_id, date8, t.params.region);

	nv_buf_printf(&policy, "{\"expiration\":\"%s\",\"conditions\":[",
		      expiration);
	nv_buf_puts(&policy, "{\"bucket\":");
	json_string(&policy, bucket);
	nv_buf_puts(&policy, "},[\"starts-with\",\"$key\",");
	json_string(&policy, key_prefix);
	nv_buf_printf(&policy, "],[\"content-length-range\",0,%llu],",
		      (unsigned long long)max_bytes);
	for (int i = 0; meta && meta[i]; i++)
		nv_buf_printf(&policy,
			      "[\"starts-with\",\"$x-amz-meta-%s\",\"\"],",
			      meta[i]);
	nv_buf_puts(&policy, "{\"x-amz-algorithm\":\"AWS4-HMAC-SHA256\"},"
			     "{\"x-amz-credential\":");
	json_string(&policy, credential);
	nv_buf_printf(&policy, "},{\"x-amz-date\":\"%s\"}", amz_date);
	if (token) {
		nv_buf_puts(&policy, ",{\"x-amz-security-token\":");
		json_string(&policy, token);
		nv_buf_puts(&policy, "}");
	}
	nv_buf_puts(&policy, "]}");
	if (policy.failed) {
		rc = nv_err_set(err, NV_ENOMEM, NULL, "POST policy too long");
		goto out;
	}
	rc = nv_sigv4_post_policy_signature(&b64, signature, &t.params,
					    policy.data, policy.len, err);
	if (rc)
		goto out;

	nv_buf_puts(json_out, "{\"url\":");
	json_string(json_out, t.url.data);
	nv_buf_puts(json_out, ",\"fields\":{\"key\":");
	/* S3 puts the uploaded file's name in place of ${filename}. */
	probe.len = 0;
	nv_buf_printf(&probe, "%s${filename}", key_prefix);
	json_string(json_out, probe.failed ? key_prefix : probe.data);
	nv_buf_puts(json_out, ",\"policy\":");
	json_string(json_out, b64.data);
	nv_buf_puts(json_out, ",\"x-amz-algorithm\":\"AWS4-HMAC-SHA256\","
			      "\"x-amz-credential\":");
	json_string(json_out, credential);
	nv_buf_printf(json_out,
		      ",\"x-amz-date\":\"%s\",\"x-amz-signature\":"
		      "\"%s\"",
		      amz_date, signature);
	if (token) {
		nv_buf_puts(json_out, ",\"x-amz-security-token\":");
		json_string(json_out, token);
	}
	nv_buf_puts(json_out, "}}");
	if (json_out->failed)
		rc = nv_err_set(err, NV_ENOMEM, NULL,
				"POST form too long for its buffer");
out:
	/* both may hold the session token */
	if (policy.data)
		OPENSSL_cleanse(policy.data, policy.len);
	if (b64.data)
		OPENSSL_cleanse(b64.data, b64.len);
	nv_buf_free(&policy);
	nv_buf_free(&b64);
	nv_buf_free(&probe);
	sign_target_free(&t);
	return rc;
}

int nv_s3_sign_explain(const nv_s3_config *cfg, const char *method,
		       const char *bucket, const char *key, time_t at,
		       nv_buf *canonical_out, nv_buf *string_to_sign_out,
		       nv_err *err)
{
	static const char *const methods[] = {"GET", "HEAD", "PUT", "DELETE"};
	char empty_hash[NV_SHA256_HEX_LEN + 1];
	struct sign_target t;
	nv_sigv4_request sreq;
	nv_sigv4_result sig;
	int rc, known = 0;

	nv_sigv4_result_init(&sig);
	for (size_t i = 0; method && i < sizeof(methods) / sizeof(*methods);
	     i++)
		known |= strcmp(method, methods[i]) == 0;
	if (!known) {
		memset(&t, 0, sizeof(t));
		rc = nv_err_set(err, NV_EINVAL, "GET, HEAD, PUT or DELETE",
				"cannot explain method %.16s",
				method ? method : "(none)");
		goto out;
	}
	rc = sign_target_init(&t, cfg, method, bucket, key, at, err);
	if (!rc)
		rc = nv_sha256_bytes("", 0, empty_hash, err);
	if (rc)
		goto out;
	t.params.add_content_sha256 = 1;
	memset(&sreq, 0, sizeof(sreq));
	sreq.method = method;
	sreq.path = t.path.data;
	sreq.host = t.host;
	sreq.payload_hash = strcmp(method, "PUT") == 0
				    ? NV_SIGV4_UNSIGNED_PAYLOAD
				    : empty_hash;
	rc = nv_sigv4_sign_headers(&sig, &sreq, &t.params, err);
	if (rc)
		goto out;
	nv_buf_append(canonical_out, sig.canonical_request.data,
		      sig.canonical_request.len);
	nv_buf_append(string_to_sign_out, sig.string_to_sign.data,
		      sig.string_to_sign.len);
	if (canonical_out->failed || string_to_sign_out->failed)
		rc = nv_err_set(err, NV_ENOMEM, NULL,
				"signed request too long for its buffer");
out:
	nv_sigv4_result_free(&sig);
	sign_target_free(&t);
	return rc;
}
