/* Signing without sending (see s3.h): presigned URLs, POST policies for
 * browser uploads, and the canonical request and string to sign of a
 * call, explained. The engine is in s3.c. */
#include "storage/s3.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <openssl/crypto.h>

#include "core/buf.h"
#include "storage/s3_internal.h"
#include "core/sha256.h"
#include "storage/sigv4.h"

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
	rc = nv_s3_endpoint_parse(cfg, &t->ep, err);
	if (!rc)
		rc = nv_s3_bucket_check(bucket, err);
	if (!rc && key)
		rc = key_check(key, err);
	if (rc)
		return rc;
	nv_s3_call_init(&c, method, bucket, key, NULL);
	rc = nv_s3_call_target(cfg, &t->ep, &c, &t->path, t->host,
			       sizeof(t->host), &t->url, err);
	if (!rc)
		rc = nv_s3_binding_check(cfg, &t->ep, &c, t->host, err);
	if (!rc)
		rc = nv_sigv4_params_from_secret(&t->params, cfg->credential,
						 err);
	if (rc)
		return rc;
	t->params.region = nv_s3_region(cfg);
	t->params.service = "s3";
	t->params.time = (int64_t)(at ? at : time(NULL));
	return 0;
}

static void sign_target_free(struct sign_target *t)
{
	nv_buf_free(&t->path);
	nv_buf_free(&t->url);
}

/* The end of a signing: on rc 0, NV_ENOMEM when the output (what) did
 * not fit its buffer; then frees sig and t. Returns rc. */
static int sign_finish(int rc, int failed, const char *what,
		       nv_sigv4_result *sig, struct sign_target *t, nv_err *err)
{
	if (!rc && failed)
		rc = nv_err_set(err, NV_ENOMEM, NULL,
				"%s too long for its buffer", what);
	nv_sigv4_result_free(sig);
	sign_target_free(t);
	return rc;
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
	if (!method || (strcmp(method, "GET") && strcmp(method, "PUT") &&
			strcmp(method, "DELETE"))) {
		rc = nv_err_set(err, NV_EINVAL, "presign GET, PUT or DELETE",
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
out:
	return sign_finish(rc, url_out->failed, "presigned URL", &sig, &t, err);
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
out:
	return sign_finish(rc,
			   canonical_out->failed || string_to_sign_out->failed,
			   "signed request", &sig, &t, err);
}
