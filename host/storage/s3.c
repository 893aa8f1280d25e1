/* The s3:// object store over nv_http and SigV4 (see s3.h): the request
 * engine (endpoint and key checks, signing, the retry loop, S3 error
 * mapping), the worker pool that transfers share, and the operations of
 * one request: head, bucket, delete, batch delete and copy. Uploads are in
 * s3_put.c, downloads in s3_get.c, listings in s3_list.c, presigning in
 * s3_sign.c; s3_internal.h is what they share. */
#include "storage/s3.h"

#include <ctype.h>
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <openssl/evp.h>

#include "core/buf.h"
#include "core/fsutil.h"
#include "core/hex.h"
#include "core/utf8.h"
#include "net/http.h"
#include "storage/s3_internal.h"
#include "core/sha256.h"
#include "storage/sigv4.h"

/* --- config and names ---------------------------------------------------- */

int nv_s3_endpoint_parse(const nv_s3_config *cfg, struct endpoint *ep,
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

const char *nv_s3_region(const nv_s3_config *cfg)
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
	return nv_err_bad(err,
			  "bucket names are 3..63 of a-z 0-9 . - and start "
			  "and end with a letter or digit",
			  "bucket name", bucket, 80);
}

int nv_s3_object_check(const char *bucket, const char *key, nv_err *err)
{
	int rc = nv_s3_bucket_check(bucket, err);

	return rc ? rc : key_check(key, err);
}

/* --- one request ---------------------------------------------------------- */

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
int nv_s3_call_target(const nv_s3_config *cfg, const struct endpoint *ep,
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
int nv_s3_binding_check(const nv_s3_config *cfg, const struct endpoint *ep,
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

/* The hint of an S3 error code; NULL for a code not listed. */
static const struct code_hint *code_hint_find(const char *code)
{
	for (size_t i = 0; i < sizeof(code_hints) / sizeof(code_hints[0]); i++)
		if (strcmp(code_hints[i].code, code) == 0)
			return &code_hints[i];
	return NULL;
}

static int error_retryable(long status, const char *code)
{
	/* 501 NotImplemented: the store lacks the call, now and later */
	if (status == 501)
		return 0;
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
int nv_s3_call_error(const struct call *c, const nv_http_response *resp,
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
	ch = code_hint_find(doc.code);
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

void nv_s3_sleep_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

/* Full jitter: a random wait in [delay/2, delay], delay doubling per
 * attempt; a Retry-After in seconds wins when longer. Both capped. */
long nv_s3_backoff_ms(const nv_s3_config *cfg, int attempt,
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
		int64_t when = nv_s3_http_date_parse(retry_after);

		after = when ? (long)(when - (int64_t)time(NULL)) : 0;
	}
	if (after > 0)
		after = after > NV_S3_RETRY_DELAY_MAX_MS / 1000
				? NV_S3_RETRY_DELAY_MAX_MS
				: after * 1000;
	return after > delay ? after : delay;
}

int nv_s3_attempts(const nv_s3_config *cfg)
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
		params.region = nv_s3_region(cfg);
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
int nv_s3_call_run(const nv_s3_config *cfg, const struct call *c,
		   nv_http_response *resp, nv_err *err)
{
	struct endpoint ep;
	nv_buf path, url;
	char host[AUTHORITY_MAX + NV_S3_BUCKET_MAX + 2];
	char hash[NV_SHA256_HEX_LEN + 1];
	const char *payload_hash = c->payload_hash;
	int rc, attempts = nv_s3_attempts(cfg);

	memset(resp, 0, sizeof(*resp));
	nv_buf_init(&path, URL_MAX);
	nv_buf_init(&url, URL_MAX);
	rc = nv_s3_endpoint_parse(cfg, &ep, err);
	if (rc)
		goto out;
	rc = nv_s3_call_target(cfg, &ep, c, &path, host, sizeof(host), &url,
			       err);
	if (rc)
		goto out;
	rc = nv_s3_binding_check(cfg, &ep, c, host, err);
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
			rc = nv_s3_call_error(c, resp, err);
		} else {
			/* Connection failures and timeouts (the answer did
			 * not come, the step may have run), not caps,
			 * refusals or local I/O. */
			retry = rc == NV_EBACKEND && c->idempotent;
		}
		if (!retry || attempt >= attempts)
			goto out;
		nv_s3_sleep_ms(
			nv_s3_backoff_ms(cfg, attempt, resp->retry_after));
		nv_http_response_free(resp);
	}
out:
	nv_buf_free(&path);
	nv_buf_free(&url);
	return rc;
}

void nv_s3_call_init(struct call *c, const char *method, const char *bucket,
		     const char *key, const char *query)
{
	memset(c, 0, sizeof(*c));
	c->method = method;
	c->bucket = bucket;
	c->key = key;
	c->query = query;
	c->idempotent = 1;
}

int nv_s3_call_xml_body(struct call *c, const nv_buf *body,
			char md5_header[NV_S3_MD5_HEADER_MAX], nv_err *err)
{
	unsigned char md5[EVP_MAX_MD_SIZE];
	unsigned int md5_len = 0;
	char md5_b64[64];

	if (body->failed || EVP_Digest(body->data, body->len, md5, &md5_len,
				       EVP_md5(), NULL) != 1)
		return nv_err_set(err, NV_ENOMEM, NULL, "out of memory");
	EVP_EncodeBlock((unsigned char *)md5_b64, md5, (int)md5_len);
	snprintf(md5_header, NV_S3_MD5_HEADER_MAX, "Content-MD5: %s", md5_b64);
	c->headers[c->nheaders++] = md5_header;
	c->headers[c->nheaders++] = "Content-Type: application/xml";
	c->body = body->data;
	c->body_len = body->len;
	return 0;
}

/* --- head ---------------------------------------------------------------- */

/* "Sun, 06 Nov 1994 08:49:37 GMT" (RFC 9110 IMF-fixdate); 0 otherwise. */
int64_t nv_s3_http_date_parse(const char *s)
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

int nv_s3_is_sha256_hex(const char *s)
{
	return nv_hex_is_lower(s, NV_SHA256_HEX_LEN);
}

void nv_s3_etag_copy(char out[NV_S3_ETAG_MAX + 1], const char *etag)
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

void nv_s3_info_from_headers(nv_object_info *info, const char *key,
			     const nv_http_response *resp)
{
	const char *len = nv_http_response_header(resp, "Content-Length");
	const char *sha = nv_http_response_header(resp, SHA256_META);

	memset(info, 0, sizeof(*info));
	snprintf(info->key, sizeof(info->key), "%s", key);
	info->size = len ? strtoull(len, NULL, 10) : 0;
	if (nv_s3_is_sha256_hex(sha))
		memcpy(info->sha256, sha, NV_SHA256_HEX_LEN + 1);
	info->mtime = nv_s3_http_date_parse(
		nv_http_response_header(resp, "Last-Modified"));
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
	nv_s3_call_init(&c, "HEAD", bucket, key, NULL);
	c.max_body = SIZE_MAX / 2; /* curl checks Content-Length against it */
	rc = nv_s3_call_run(cfg, &c, &resp, err);
	if (!rc) {
		nv_s3_info_from_headers(info ? info : &local, key, &resp);
		if (etag)
			nv_s3_etag_copy(etag, resp.etag);
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
	nv_s3_call_init(&c, "PUT", bucket, NULL, NULL);
	if (cfg && strcmp(nv_s3_region(cfg), "us-east-1") != 0) {
		nv_buf_printf(&body,
			      "<CreateBucketConfiguration xmlns=\"http://s3."
			      "amazonaws.com/doc/2006-03-01/\"><Location"
			      "Constraint>%.64s</LocationConstraint>"
			      "</CreateBucketConfiguration>",
			      nv_s3_region(cfg));
		c.body = body.data;
		c.body_len = body.len;
	}
	rc = nv_s3_call_run(cfg, &c, &resp, err);
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

int nv_s3_pool_run(int (*task)(void *ctx, int i, nv_err *err), void *ctx,
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

int nv_s3_parallel(const nv_s3_config *cfg)
{
	if (cfg->parallel_parts <= 0)
		return NV_S3_PARALLEL_PARTS_DEFAULT;
	return cfg->parallel_parts > NV_S3_PARALLEL_PARTS_MAX
		       ? NV_S3_PARALLEL_PARTS_MAX
		       : cfg->parallel_parts;
}

void nv_s3_stats_reset(const nv_s3_config *cfg)
{
	if (cfg && cfg->stats)
		memset(cfg->stats, 0, sizeof(*cfg->stats));
	/* (the total stays: a fresh start of the same call has the same) */
	if (cfg && cfg->progress)
		__atomic_store_n(&cfg->progress->done, 0, __ATOMIC_RELAXED);
}

void nv_s3_progress_total(const nv_s3_config *cfg, uint64_t total)
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
	nv_s3_call_init(&c, "DELETE", bucket, key, NULL);
	rc = nv_s3_call_run(cfg, &c, &resp, err);
	nv_http_response_free(&resp);
	return rc;
}

/* --- batch delete ----------------------------------------------------------
 */

void nv_s3_xml_escape(nv_buf *b, const char *s)
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
	char md5_header[NV_S3_MD5_HEADER_MAX];
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
		/* what XML may carry */
		if (nv_utf8_invalid_at(keys[i], strlen(keys[i])) !=
		    NV_UTF8_VALID)
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
		nv_s3_xml_escape(&body, keys[i]);
		nv_buf_puts(&body, "</Key></Object>");
	}
	nv_buf_puts(&body, "</Delete>");
	/* idempotent: deleting twice deletes the same keys */
	nv_s3_call_init(&c, "POST", bucket, NULL, "delete");
	rc = nv_s3_call_xml_body(&c, &body, md5_header, err);
	if (rc)
		goto out;
	rc = nv_s3_call_run(cfg, &c, &resp, err);
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
		const struct code_hint *ch = code_hint_find(r.first_code);

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

	rc = nv_s3_object_check(src_bucket, src_key, err);
	if (!rc)
		rc = nv_s3_object_check(dst_bucket, dst_key, err);
	if (rc)
		return rc;
	nv_buf_init(&source, URL_MAX);
	nv_buf_printf(&source, "x-amz-copy-source: /%s/", src_bucket);
	nv_sigv4_uri_encode(&source, src_key, strlen(src_key), 1);
	if (source.failed) {
		nv_buf_free(&source);
		return nv_err_set(err, NV_ENOMEM, NULL, "copy source too long");
	}
	nv_s3_call_init(&c, "PUT", dst_bucket, dst_key, NULL);
	c.headers[c.nheaders++] = source.data;
	rc = nv_s3_call_run(cfg, &c, &resp, err);
	/* A copy may fail after its 200 was sent: the body says so. */
	if (!rc && nv_s3_xml_error(resp.body.data, resp.body.len, &doc) == 0) {
		resp.status = 500;
		rc = nv_s3_call_error(&c, &resp, err);
	}
	nv_http_response_free(&resp);
	nv_buf_free(&source);
	if (!rc && info)
		rc = nv_s3_head(cfg, dst_bucket, dst_key, info, err);
	return rc;
}
