/* A bucket's lifecycle rule: the XML of navette's one rule, the reading
 * of a configuration for it, and the GET-then-PUT that applies it without
 * replacing rules someone else wrote (s3_lifecycle.h). The XML functions
 * are pure C; nv_s3_lifecycle_apply speaks through the S3 engine. */
#include "storage/s3_lifecycle.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/utf8.h"
#include "net/http.h"
#include "storage/filestore.h"
#include "storage/s3_internal.h"

static int id_check(const char *id, nv_err *err)
{
	size_t len = id ? strlen(id) : 0;

	if (len == 0 || len > NV_S3_LIFECYCLE_ID_MAX)
		return nv_err_set(err, NV_EINVAL, NULL,
				  "a lifecycle rule's ID is 1 to %d characters",
				  NV_S3_LIFECYCLE_ID_MAX);
	for (const char *p = id; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		      (*p >= '0' && *p <= '9') || *p == '.' || *p == '_' ||
		      *p == '-'))
			return nv_err_set(
				err, NV_EINVAL, NULL,
				"a lifecycle rule's ID holds letters, "
				"digits, '.', '_' and '-' only");
	return 0;
}

static int prefix_check(const char *prefix, nv_err *err)
{
	size_t len = prefix ? strlen(prefix) : 0;

	/* an empty prefix would expire the whole bucket */
	if (len == 0)
		return nv_err_set(err, NV_EINVAL,
				  "name the prefix the rule applies to",
				  "a lifecycle rule needs a prefix (an empty "
				  "one covers the whole bucket)");
	if (len > NV_FILESTORE_KEY_MAX)
		return nv_err_set(err, NV_EINVAL, NULL,
				  "lifecycle prefix longer than %d bytes",
				  NV_FILESTORE_KEY_MAX);
	if (nv_utf8_invalid_at(prefix, len) != NV_UTF8_VALID)
		return nv_err_set(err, NV_EINVAL, NULL,
				  "lifecycle prefix is not UTF-8");
	for (const char *p = prefix; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			return nv_err_set(err, NV_EINVAL, NULL,
					  "lifecycle prefix holds a control "
					  "character");
	return 0;
}

/* The <Rule> element, without the configuration around it. */
static void rule_xml(nv_buf *b, const char *id, const char *prefix, long days)
{
	nv_buf_puts(b, "<Rule><ID>");
	nv_s3_xml_escape(b, id);
	nv_buf_puts(b, "</ID><Filter><Prefix>");
	nv_s3_xml_escape(b, prefix);
	nv_buf_printf(b,
		      "</Prefix></Filter><Status>Enabled</Status>"
		      "<Expiration><Days>%ld</Days></Expiration></Rule>",
		      days);
}

int nv_s3_lifecycle_xml(nv_buf *out, const char *id, const char *prefix,
			long days, nv_err *err)
{
	int rc = id_check(id, err);

	if (!rc)
		rc = prefix_check(prefix, err);
	if (rc)
		return rc;
	if (days < 1 || days > NV_S3_LIFECYCLE_DAYS_MAX)
		return nv_err_set(err, NV_EINVAL, NULL,
				  "lifecycle days must be 1 to %d, not %ld",
				  NV_S3_LIFECYCLE_DAYS_MAX, days);
	nv_buf_puts(out, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>"
			 "<LifecycleConfiguration xmlns=\"http://s3.amazonaws."
			 "com/doc/2006-03-01/\">");
	rule_xml(out, id, prefix, days);
	nv_buf_puts(out, "</LifecycleConfiguration>");
	if (out->failed)
		return nv_err_set(err, NV_ENOMEM, NULL,
				  "lifecycle configuration too long");
	return 0;
}

/* Copies xml without the white space between elements ("> <" -> "><"),
 * into out (cap bytes); its length, or -1 when it does not fit. */
static long squeeze(const char *xml, size_t len, char *out, size_t cap)
{
	size_t n = 0;

	for (size_t i = 0; i < len; i++) {
		char ch = xml[i];

		if (ch == ' ' || ch == '\t' || ch == '\r' || ch == '\n') {
			size_t j = i;

			while (j < len && (xml[j] == ' ' || xml[j] == '\t' ||
					   xml[j] == '\r' || xml[j] == '\n'))
				j++;
			/* spacing between two elements goes; inside a text
			 * or a tag it stays */
			if (n > 0 && out[n - 1] == '>' && j < len &&
			    xml[j] == '<') {
				i = j - 1;
				continue;
			}
		}
		if (n + 1 >= cap)
			return -1;
		out[n++] = ch;
	}
	out[n] = '\0';
	return (long)n;
}

/* The <Rule> elements of a flattened configuration: "<Rule" followed by
 * '>', '/' or white space (never "<Rules>"...). */
static int rules_in(const char *flat)
{
	int n = 0;

	for (const char *p = strstr(flat, "<Rule"); p;
	     p = strstr(p + 5, "<Rule"))
		if (p[5] && strchr("> \t\r\n/", p[5]))
			n++;
	return n;
}

void nv_s3_lifecycle_match(const char *xml, size_t len, const char *id,
			   const char *prefix, long days, int *rules, int *ours,
			   int *same)
{
	char *flat = NULL;
	char idtag[NV_S3_LIFECYCLE_ID_MAX * 6 + 16];
	nv_buf want, idb;

	*rules = 0;
	*ours = 0;
	*same = 0;
	if (xml && len <= NV_S3_LIFECYCLE_XML_MAX && !memchr(xml, '\0', len))
		flat = malloc(len + 1);
	if (!flat || squeeze(xml, len, flat, len + 1) < 0) {
		free(flat);
		*rules = -1;
		return;
	}
	*rules = rules_in(flat);
	nv_buf_init(&idb, sizeof(idtag));
	nv_buf_puts(&idb, "<ID>");
	nv_s3_xml_escape(&idb, id);
	nv_buf_puts(&idb, "</ID>");
	if (!idb.failed)
		*ours = strstr(flat, idb.data) != NULL;
	nv_buf_free(&idb);
	nv_buf_init(&want, 4 * NV_FILESTORE_KEY_MAX + sizeof(idtag) + 256);
	rule_xml(&want, id, prefix, days);
	if (!want.failed)
		*same = strstr(flat, want.data) != NULL;
	nv_buf_free(&want);
	free(flat);
}

/* The S3 error code of an answer's body into code ("" when none). */
static void answer_code(const nv_http_response *resp, char *code, size_t cap)
{
	nv_s3_error_doc doc;

	code[0] = '\0';
	if (nv_s3_xml_error(resp->body.data, resp->body.len, &doc) == 0)
		snprintf(code, cap, "%s", doc.code);
}

static int lifecycle_put(const nv_s3_config *cfg, const char *bucket,
			 const nv_buf *body, int *unsupported, nv_err *err)
{
	char md5_header[NV_S3_MD5_HEADER_MAX];
	nv_http_response resp;
	struct call c;
	int rc;

	/* idempotent: the same configuration twice is the same; S3 requires
	 * Content-MD5 on this call */
	nv_s3_call_init(&c, "PUT", bucket, NULL, "lifecycle");
	rc = nv_s3_call_xml_body(&c, body, md5_header, err);
	if (rc)
		return rc;
	rc = nv_s3_call_run(cfg, &c, &resp, err);
	*unsupported = rc && resp.status == 501;
	nv_http_response_free(&resp);
	return rc;
}

int nv_s3_lifecycle_apply(const nv_s3_config *cfg, const char *bucket,
			  const char *id, const char *prefix, long days,
			  nv_s3_lifecycle_outcome *outcome, int *rules,
			  nv_err *err)
{
	nv_http_response resp;
	nv_buf body;
	struct call c;
	char code[64];
	int rc, ours = 0, same = 0, unsupported = 0;

	*rules = 0;
	rc = nv_s3_bucket_check(bucket, err);
	if (rc)
		return rc;
	nv_buf_init(&body, NV_S3_LIFECYCLE_XML_MAX);
	rc = nv_s3_lifecycle_xml(&body, id, prefix, days, err);
	if (rc)
		goto out;
	nv_s3_call_init(&c, "GET", bucket, NULL, "lifecycle");
	c.max_body = NV_S3_LIFECYCLE_XML_MAX;
	rc = nv_s3_call_run(cfg, &c, &resp, err);
	if (rc) {
		answer_code(&resp, code, sizeof(code));
		if (resp.status == 501) {
			*outcome = NV_S3_LIFECYCLE_UNSUPPORTED;
			rc = 0;
		} else if (resp.status == 404 &&
			   strcmp(code, "NoSuchLifecycleConfiguration") == 0) {
			rc = 0; /* none yet: written below */
		}
		nv_http_response_free(&resp);
		if (rc || *outcome == NV_S3_LIFECYCLE_UNSUPPORTED)
			goto out;
	} else {
		nv_s3_lifecycle_match(resp.body.data, resp.body.len, id, prefix,
				      days, rules, &ours, &same);
		nv_http_response_free(&resp);
		if (*rules < 0) {
			rc = nv_err_set(err, NV_EBACKEND, NULL,
					"S3 GetBucketLifecycle %s: the answer "
					"is longer than %zu bytes",
					bucket, NV_S3_LIFECYCLE_XML_MAX);
			goto out;
		}
		if (same) {
			*outcome = NV_S3_LIFECYCLE_PRESENT;
			goto out;
		}
		/* a PUT would replace rules navette did not write */
		if (*rules > 1 || (*rules == 1 && !ours)) {
			*outcome = NV_S3_LIFECYCLE_FOREIGN;
			goto out;
		}
	}
	rc = lifecycle_put(cfg, bucket, &body, &unsupported, err);
	if (rc && unsupported) {
		*outcome = NV_S3_LIFECYCLE_UNSUPPORTED;
		rc = 0;
	} else if (!rc) {
		*outcome = NV_S3_LIFECYCLE_APPLIED;
	}
out:
	nv_buf_free(&body);
	return rc;
}
