/* Listings of S3 (see s3.h): the objects of a bucket, one page at a
 * time, and its multipart uploads. The engine is in s3.c. */
#include "storage/s3.h"

#include <stdio.h>
#include <string.h>

#include "core/buf.h"
#include "net/http.h"
#include "storage/s3_internal.h"
#include "storage/sigv4.h"

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

/* GETs one page of bucket's listing asked by q (each parameter after a
 * '&') and hands it to nv_s3_xml_list. */
static int list_page(const nv_s3_config *cfg, const char *bucket,
		     const nv_buf *q, nv_s3_xml_list_cb callback, void *payload,
		     int *more, char *next, size_t next_cap, nv_err *err)
{
	struct call c;
	nv_http_response resp;
	int rc;

	if (q->failed)
		return nv_err_set(err, NV_EINVAL, NULL,
				  "listing query too long");
	/* q->data + 1: past the leading '&' */
	nv_s3_call_init(&c, "GET", bucket, NULL, q->data + 1);
	rc = nv_s3_call_run(cfg, &c, &resp, err);
	if (!rc)
		rc = nv_s3_xml_list(resp.body.data, resp.body.len, callback,
				    payload, more, next, next_cap, err);
	nv_http_response_free(&resp);
	return rc;
}

int nv_s3_list(const nv_s3_config *cfg, const char *bucket, const char *prefix,
	       const char *start_after, char continuation[NV_S3_TOKEN_MAX + 1],
	       unsigned max_keys, nv_filestore_list_cb callback, void *payload,
	       int *truncated, nv_err *err)
{
	struct list_relay relay = {callback, NULL, payload};
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
	rc = list_page(cfg, bucket, &q, list_relay, &relay, &more, next,
		       sizeof(next), err);
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
	nv_buf_free(&q);
	return rc;
}

int nv_s3_list_uploads_raw(const nv_s3_config *cfg, const char *bucket,
			   const char *prefix, nv_s3_xml_list_cb callback,
			   void *payload, int *truncated, nv_err *err)
{
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
	rc = list_page(cfg, bucket, &q, callback, payload, truncated, NULL, 0,
		       err);
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
	return nv_s3_list_uploads_raw(cfg, bucket, prefix, list_relay, &relay,
				      truncated, err);
}
