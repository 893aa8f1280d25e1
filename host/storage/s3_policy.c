/* A bucket's policy (see s3_policy.h). */
#include "storage/s3_policy.h"

#include <string.h>

#include <cjson/cJSON.h>

#include "net/http.h"
#include "storage/s3_internal.h"

/* A string, or a non-empty array of strings. */
static int strings(const cJSON *v)
{
	const cJSON *e;

	if (cJSON_IsString(v))
		return 1;
	if (!cJSON_IsArray(v) || cJSON_GetArraySize(v) == 0)
		return 0;
	cJSON_ArrayForEach(e, v)
	{
		if (!cJSON_IsString(e))
			return 0;
	}
	return 1;
}

/* Whether st has exactly one of the pair (an element and its Not form,
 * as IAM's grammar allows), holding a string or a list of strings. */
static int one_of(const cJSON *st, const char *name, const char *not_name)
{
	const cJSON *a = cJSON_GetObjectItemCaseSensitive(st, name);
	const cJSON *b = cJSON_GetObjectItemCaseSensitive(st, not_name);

	if (a && b)
		return 0;
	return strings(a ? a : b);
}

int nv_s3_policy_check(const char *json, size_t len, nv_err *err)
{
	const cJSON *version, *list, *st;
	cJSON *root;
	int i = 0, rc = 0;

	if (!json || len == 0 || len > NV_S3_POLICY_MAX)
		return nv_err_set(err, NV_EINVAL, "S3 takes at most 20 KiB",
				  "a bucket policy of %zu bytes", len);
	if (memchr(json, '\0', len))
		return nv_err_set(err, NV_EINVAL, NULL,
				  "a bucket policy holds a NUL byte");
	root = cJSON_ParseWithLength(json, len);
	if (!cJSON_IsObject(root)) {
		cJSON_Delete(root);
		return nv_err_set(err, NV_EINVAL, NULL,
				  "a bucket policy is a JSON object");
	}
	version = cJSON_GetObjectItemCaseSensitive(root, "Version");
	list = cJSON_GetObjectItemCaseSensitive(root, "Statement");
	if (!cJSON_IsString(version))
		rc = nv_err_set(err, NV_EINVAL, "\"Version\": \"2012-10-17\"",
				"a bucket policy has no Version");
	else if (!cJSON_IsArray(list) || cJSON_GetArraySize(list) == 0)
		rc = nv_err_set(err, NV_EINVAL, NULL,
				"a bucket policy has no Statement list");
	if (rc)
		list = NULL;
	cJSON_ArrayForEach(st, list)
	{
		const cJSON *effect =
			cJSON_GetObjectItemCaseSensitive(st, "Effect");

		i++;
		if (!cJSON_IsObject(st) || !cJSON_IsString(effect) ||
		    (strcmp(effect->valuestring, "Allow") != 0 &&
		     strcmp(effect->valuestring, "Deny") != 0) ||
		    !one_of(st, "Action", "NotAction") ||
		    !one_of(st, "Resource", "NotResource")) {
			rc = nv_err_set(err, NV_EINVAL,
					"each statement has Effect (Allow or "
					"Deny), Action or NotAction, and "
					"Resource or NotResource",
					"bucket policy statement %d is "
					"malformed",
					i);
			break;
		}
	}
	cJSON_Delete(root);
	return rc;
}

int nv_s3_policy_get(const nv_s3_config *cfg, const char *bucket, nv_buf *out,
		     int *none, nv_err *err)
{
	nv_http_response resp;
	struct call c;
	nv_s3_error_doc doc;
	int rc;

	*none = 0;
	rc = nv_s3_bucket_check(bucket, err);
	if (rc)
		return rc;
	nv_s3_call_init(&c, "GET", bucket, NULL, "policy");
	c.max_body = NV_S3_POLICY_MAX;
	rc = nv_s3_call_run(cfg, &c, &resp, err);
	if (rc && resp.status == 404 &&
	    nv_s3_xml_error(resp.body.data, resp.body.len, &doc) == 0 &&
	    strcmp(doc.code, "NoSuchBucketPolicy") == 0) {
		*none = 1;
		rc = 0;
	} else if (!rc) {
		nv_buf_append(out, resp.body.data, resp.body.len);
		if (out->failed)
			rc = nv_err_set(err, NV_ENOMEM, NULL,
					"S3 GetBucketPolicy %s: the policy is "
					"too long",
					bucket);
	}
	nv_http_response_free(&resp);
	return rc;
}

int nv_s3_policy_put(const nv_s3_config *cfg, const char *bucket,
		     const char *json, size_t len, nv_err *err)
{
	nv_http_response resp;
	struct call c;
	int rc = nv_s3_bucket_check(bucket, err);

	if (!rc)
		rc = nv_s3_policy_check(json, len, err);
	if (rc)
		return rc;
	nv_s3_call_init(&c, "PUT", bucket, NULL, "policy");
	c.headers[c.nheaders++] = "Content-Type: application/json";
	c.body = json;
	c.body_len = len;
	/* idempotent: the same document twice is the same */
	rc = nv_s3_call_run(cfg, &c, &resp, err);
	nv_http_response_free(&resp);
	return rc;
}

int nv_s3_policy_delete(const nv_s3_config *cfg, const char *bucket,
			nv_err *err)
{
	nv_http_response resp;
	struct call c;
	int rc = nv_s3_bucket_check(bucket, err);

	if (rc)
		return rc;
	nv_s3_call_init(&c, "DELETE", bucket, NULL, "policy");
	rc = nv_s3_call_run(cfg, &c, &resp, err);
	if (rc && resp.status == 404)
		rc = 0;
	nv_http_response_free(&resp);
	return rc;
}
