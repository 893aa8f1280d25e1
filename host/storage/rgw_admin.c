/* radosgw's admin API for key rotation (see rgw_admin.h): the requests, over
 * the S3 engine of s3.c, and the bounded parsers of their JSON answers. An
 * answer that may hold secrets is received into one buffer of fixed size
 * (never grown by realloc, which would leave copies behind) and wiped
 * before it is freed. */
#include "storage/rgw_admin.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <openssl/crypto.h>

#include "core/buf.h"
#include "net/http.h"
#include "storage/s3_internal.h"
#include "storage/sigv4.h"

#define ADMIN_PATH "admin/user"
#define QUERY_MAX  1024

/* --- names ---------------------------------------------------------------- */

int nv_rgw_uid_check(const char *uid, nv_err *err)
{
	size_t n = uid ? strlen(uid) : 0;
	int dollars = 0;

	if (n == 0 || n > NV_RGW_UID_MAX)
		goto bad;
	for (size_t i = 0; i < n; i++) {
		char c = uid[i];

		if (c == '$') {
			if (++dollars > 1 || i == 0 || i == n - 1)
				goto bad;
		} else if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
			     (c >= '0' && c <= '9') || strchr("._-@", c))) {
			goto bad;
		}
	}
	return 0;
bad:
	return nv_err_bad(err,
			  "a radosgw user id is letters, digits, '.', '_', "
			  "'-', '@', and TENANT$USER for a tenant's user",
			  "radosgw user id", uid, 140);
}

static int access_key_char(char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
	       (c >= '0' && c <= '9') || (c && strchr("+/=._-", c));
}

int nv_rgw_access_key_check(const char *id, nv_err *err)
{
	size_t n = id ? strlen(id) : 0;

	if (n == 0 || n > NV_RGW_ACCESS_KEY_MAX)
		goto bad;
	for (size_t i = 0; i < n; i++)
		if (!access_key_char(id[i]))
			goto bad;
	return 0;
bad:
	return nv_err_bad(err,
			  "an access key id is letters, digits and + / = . _ "
			  "-, at most 128",
			  "access key id", id, 140);
}

int nv_rgw_key_list_has(const nv_rgw_key_list *list, const char *id)
{
	for (int i = 0; list && i < list->count; i++)
		if (strcmp(list->ids[i], id) == 0)
			return 1;
	return 0;
}

/* --- the answers -----------------------------------------------------------
 */

/* cJSON's copies of every string value, wiped before cJSON_Delete. The
 * depth is cJSON's own nesting limit. */
static void wipe_strings(cJSON *item)
{
	for (; item; item = item->next) {
		if (cJSON_IsString(item) && item->valuestring)
			OPENSSL_cleanse(item->valuestring,
					strlen(item->valuestring));
		if (item->child)
			wipe_strings(item->child);
	}
}

static int malformed(nv_err *err, const char *what)
{
	return nv_err_set(err, NV_EBACKEND,
			  "is the endpoint a radosgw? its admin API answers "
			  "JSON",
			  "radosgw admin API: malformed answer (%s)", what);
}

/* A secret as radosgw makes them: printable ASCII, no blank. */
static int secret_ok(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n > NV_RGW_SECRET_MAX)
		return 0;
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)s[i] < 0x21 || (unsigned char)s[i] > 0x7e)
			return 0;
	return 1;
}

static int has_escaped_nul(const char *json, size_t len)
{
	for (size_t i = 0; i + 6 <= len; i++)
		if (json[i] == '\\' && memcmp(json + i + 1, "u0000", 5) == 0)
			return 1;
	return 0;
}

static int copy_created(const cJSON *item, const char *id, const char *name,
			nv_secret **created, nv_err *err)
{
	const cJSON *sk = cJSON_GetObjectItemCaseSensitive(item, "secret_key");
	nv_secret *s;
	int rc;

	if (!cJSON_IsString(sk) || !secret_ok(sk->valuestring))
		return malformed(err, "the new key has no usable secret");
	s = nv_secret_new(name, NV_SECRET_S3, "minted", err);
	if (!s)
		return err->code;
	rc = nv_secret_set(s, "access_key_id", id, strlen(id), err);
	if (!rc)
		rc = nv_secret_set(s, "secret_access_key", sk->valuestring,
				   strlen(sk->valuestring), err);
	if (rc) {
		nv_secret_free(s);
		return rc;
	}
	*created = s;
	return 0;
}

int nv_rgw_parse_keys(const char *json, size_t len,
		      const nv_rgw_key_list *before, const char *name,
		      nv_rgw_key_list *ids, nv_secret **created, nv_err *err)
{
	cJSON *root;
	const cJSON *keys, *item, *fresh = NULL;
	int fresh_count = 0, rc = 0;

	memset(ids, 0, sizeof(*ids));
	if (created) {
		*created = NULL;
		if (!before || !name)
			return nv_err_set(err, NV_EINVAL, NULL,
					  "nv_rgw_parse_keys: a creation "
					  "needs the keys before and a name");
	}
	if (!json || len > NV_RGW_ANSWER_MAX)
		return malformed(err, "too large");
	/* cJSON would end a string at an escaped NUL, cutting an id short */
	if (has_escaped_nul(json, len))
		return malformed(err, "a NUL in a string");
	root = cJSON_ParseWithLength(json, len);
	if (!root)
		return malformed(err, "not JSON");
	keys = cJSON_IsArray(root) ? root
	       : cJSON_IsObject(root)
		       ? cJSON_GetObjectItemCaseSensitive(root, "keys")
		       : NULL;
	if (!cJSON_IsArray(keys)) {
		rc = malformed(err, "no list of keys");
		goto out;
	}
	cJSON_ArrayForEach(item, keys)
	{
		const cJSON *ak =
			cJSON_GetObjectItemCaseSensitive(item, "access_key");
		const cJSON *owner =
			cJSON_GetObjectItemCaseSensitive(item, "user");
		const char *id;

		/* A subuser's key ("svc:backup") is listed with the user's
		 * but belongs to another service: never the user's own. */
		if (cJSON_IsString(owner) && strchr(owner->valuestring, ':'))
			continue;

		if (ids->count == NV_RGW_KEYS_MAX) {
			rc = nv_err_set(err, NV_EBACKEND,
					"remove the user's unused keys with "
					"radosgw-admin key rm",
					"radosgw admin API: the user has more "
					"than %d keys",
					NV_RGW_KEYS_MAX);
			goto out;
		}
		if (!cJSON_IsObject(item) || !cJSON_IsString(ak) ||
		    nv_rgw_access_key_check(ak->valuestring, NULL) != 0) {
			rc = malformed(err, "a key without a valid access_key");
			goto out;
		}
		id = ak->valuestring;
		snprintf(ids->ids[ids->count], sizeof(ids->ids[0]), "%s", id);
		ids->count++;
		if (created && !nv_rgw_key_list_has(before, id)) {
			fresh_count++;
			fresh = item;
		}
	}
	if (created && fresh_count != 1) {
		rc = nv_err_set(err, NV_EBACKEND,
				"the keys stay on the server; the next "
				"rotation removes them",
				"radosgw admin API: the answer to the key "
				"creation lists %d new keys, not one (another "
				"admin at work at the same moment?)",
				fresh_count);
		goto out;
	}
	if (created) {
		const cJSON *ak =
			cJSON_GetObjectItemCaseSensitive(fresh, "access_key");
		rc = copy_created(fresh, ak->valuestring, name, created, err);
	}
out:
	wipe_strings(root);
	cJSON_Delete(root);
	return rc;
}

int nv_rgw_parse_error(const char *json, size_t len, char code[NV_RGW_CODE_MAX])
{
	cJSON *root;
	const cJSON *c;
	int rc = -1;

	code[0] = '\0';
	if (!json || len == 0 || len > NV_RGW_ANSWER_MAX)
		return -1;
	root = cJSON_ParseWithLength(json, len);
	c = cJSON_IsObject(root)
		    ? cJSON_GetObjectItemCaseSensitive(root, "Code")
		    : NULL;
	if (cJSON_IsString(c) && c->valuestring[0] &&
	    strlen(c->valuestring) < NV_RGW_CODE_MAX) {
		size_t i;

		for (i = 0; c->valuestring[i]; i++) {
			char ch = c->valuestring[i];
			code[i] = (ch >= 0x21 && ch <= 0x7e) ? ch : '?';
		}
		code[i] = '\0';
		rc = 0;
	}
	cJSON_Delete(root);
	return rc;
}

/* --- requests ------------------------------------------------------------- */

/* The body of a 2xx answer, in one buffer allocated at its cap. */
struct answer {
	char *data;
	size_t len;
};

static int answer_sink(void *payload, const char *data, size_t len)
{
	struct answer *a = payload;

	if (len > NV_RGW_ANSWER_MAX - a->len)
		return -1;
	memcpy(a->data + a->len, data, len);
	a->len += len;
	return 0;
}

static int answer_rewind(void *payload)
{
	struct answer *a = payload;

	OPENSSL_cleanse(a->data, a->len);
	a->len = 0;
	return 0;
}

static void answer_free(struct answer *a)
{
	if (a->data) {
		OPENSSL_cleanse(a->data, NV_RGW_ANSWER_MAX + 1);
		free(a->data);
	}
	a->data = NULL;
	a->len = 0;
}

/* The canonical query (parameters sorted by name, values encoded the
 * AWS way: radosgw checks the signature over the query as sent). */
static int admin_query(nv_buf *q, const char *access_key, const char *uid,
		       int key, nv_err *err)
{
	if (access_key) {
		nv_buf_puts(q, "access-key=");
		nv_sigv4_uri_encode(q, access_key, strlen(access_key), 0);
		nv_buf_puts(q, "&");
	}
	nv_buf_puts(q, key ? "format=json&key=&uid=" : "format=json&uid=");
	nv_sigv4_uri_encode(q, uid, strlen(uid), 0);
	if (q->failed)
		return nv_err_set(err, NV_ENOMEM, NULL, "admin query too long");
	return 0;
}

static const char *credential_name(const nv_s3_config *cfg)
{
	return cfg->credential ? cfg->credential->name : "(none)";
}

/* The error of an admin request that got a non-2xx answer (rc is the
 * engine's, kept when no answer came). */
static int admin_error(const nv_s3_config *cfg, const char *method,
		       const char *uid, const nv_http_response *resp, int rc,
		       char code[NV_RGW_CODE_MAX], nv_err *err)
{
	nv_s3_error_doc doc;
	char hint[NV_ERR_HINT_MAX];
	const char *rid = resp->amz_request_id ? resp->amz_request_id : "none";

	code[0] = '\0';
	if (resp->status == 0)
		return rc;
	if (nv_rgw_parse_error(resp->body.data, resp->body.len, code) != 0) {
		if (nv_s3_xml_error(resp->body.data, resp->body.len, &doc) ==
			    0 &&
		    doc.code[0] && strlen(doc.code) < NV_RGW_CODE_MAX)
			snprintf(code, NV_RGW_CODE_MAX, "%s", doc.code);
		else if (resp->status == 403)
			snprintf(code, NV_RGW_CODE_MAX, "AccessDenied");
		else if (resp->status == 404)
			snprintf(code, NV_RGW_CODE_MAX, "NoSuchUser");
		else
			snprintf(code, NV_RGW_CODE_MAX, "HTTP%ld",
				 resp->status);
	}
	if (strcmp(code, "AccessDenied") == 0) {
		snprintf(hint, sizeof(hint),
			 "the radosgw user of credential %s needs the users "
			 "capability: radosgw-admin caps add --uid=ADMIN_USER "
			 "--caps=\"users=*\" (ADMIN_USER: that user's id)",
			 credential_name(cfg));
		return nv_err_set(err, NV_EREFUSED, hint,
				  "radosgw admin API: %s /admin/user (user "
				  "%.140s) refused: AccessDenied (HTTP %ld, "
				  "request id %.100s)",
				  method, uid, resp->status, rid);
	}
	if (strcmp(code, "NoSuchUser") == 0)
		return nv_err_set(err, NV_ENOTFOUND,
				  "check the user id (radosgw-admin user "
				  "list); a tenant's user is TENANT$USER",
				  "radosgw admin API: no user '%.140s' (HTTP "
				  "%ld, request id %.100s)",
				  uid, resp->status, rid);
	if (strcmp(code, "InvalidAccessKeyId") == 0 ||
	    strcmp(code, "SignatureDoesNotMatch") == 0) {
		snprintf(hint, sizeof(hint),
			 "check credential %s: its key must be a live key of "
			 "the radosgw admin user (and the clock in sync)",
			 credential_name(cfg));
		return nv_err_set(err, NV_EREFUSED, hint,
				  "radosgw admin API: %s /admin/user (user "
				  "%.140s) refused: %s (HTTP %ld, request id "
				  "%.100s)",
				  method, uid, code, resp->status, rid);
	}
	return nv_err_set(err, NV_EBACKEND,
			  resp->status >= 500 ? "the service failed: try later"
					      : "check the endpoint: is it a "
						"radosgw?",
			  "radosgw admin API: %s /admin/user (user %.140s): "
			  "%s (HTTP %ld, request id %.100s)",
			  method, uid, code, resp->status, rid);
}

/* One admin request with the canonical query q (built by the caller);
 * the 2xx answer in *a, which the caller frees with answer_free. code:
 * the server's error code. */
static int admin_run(const nv_s3_config *cfg, const char *method,
		     const char *uid, const char *query, int idempotent,
		     struct answer *a, char code[NV_RGW_CODE_MAX], nv_err *err)
{
	struct call c;
	nv_http_response resp;
	int rc;

	code[0] = '\0';
	a->data = NULL;
	a->len = 0;
	if (!cfg->credential)
		return nv_err_set(err, NV_EINVAL, "give the admin's credential",
				  "radosgw admin API: requests must be signed");
	a->data = malloc(NV_RGW_ANSWER_MAX + 1);
	if (!a->data)
		return nv_err_set(err, NV_ENOMEM, NULL, "out of memory");
	nv_s3_call_init(&c, method, NULL, ADMIN_PATH, query);
	c.sink = answer_sink;
	c.sink_payload = a;
	c.sink_rewind = answer_rewind;
	c.max_body = NV_RGW_ANSWER_MAX;
	c.idempotent = idempotent;
	rc = nv_s3_call_run(cfg, &c, &resp, err);
	if (rc)
		rc = admin_error(cfg, method, uid, &resp, rc, code, err);
	nv_http_response_free(&resp);
	if (rc)
		answer_free(a);
	return rc;
}

/* One admin request on uid's keys (see admin_run). */
static int admin_call(const nv_s3_config *cfg, const char *method,
		      const char *uid, const char *access_key, int key,
		      int idempotent, struct answer *a,
		      char code[NV_RGW_CODE_MAX], nv_err *err)
{
	nv_buf q;
	int rc;

	code[0] = '\0';
	a->data = NULL;
	a->len = 0;
	rc = nv_rgw_uid_check(uid, err);
	if (!rc && access_key)
		rc = nv_rgw_access_key_check(access_key, err);
	if (rc)
		return rc;
	nv_buf_init(&q, QUERY_MAX);
	rc = admin_query(&q, access_key, uid, key, err);
	if (!rc)
		rc = admin_run(cfg, method, uid, q.data, idempotent, a, code,
			       err);
	nv_buf_free(&q);
	return rc;
}

/* GETs uid's record and parses it: its keys into keys when keys is not
 * NULL, else the user into user (the one given is zeroed first). */
static int user_read(const nv_s3_config *cfg, const char *uid,
		     nv_rgw_key_list *keys, nv_rgw_user *user, nv_err *err)
{
	char code[NV_RGW_CODE_MAX];
	struct answer a;
	int rc;

	if (keys)
		memset(keys, 0, sizeof(*keys));
	else
		memset(user, 0, sizeof(*user));
	rc = admin_call(cfg, "GET", uid, NULL, 0, 1, &a, code, err);
	if (rc)
		return rc;
	if (keys)
		rc = nv_rgw_parse_keys(a.data, a.len, NULL, NULL, keys, NULL,
				       err);
	else
		rc = nv_rgw_parse_user(a.data, a.len, user, err);
	answer_free(&a);
	return rc;
}

int nv_rgw_user_keys(const nv_s3_config *cfg, const char *uid,
		     nv_rgw_key_list *out, nv_err *err)
{
	return user_read(cfg, uid, out, NULL, err);
}

int nv_rgw_key_create(const nv_s3_config *cfg, const char *uid,
		      const char *name, nv_secret **created, nv_err *err)
{
	nv_rgw_key_list *before, *after;
	struct answer a;
	char code[NV_RGW_CODE_MAX];
	int rc;

	*created = NULL;
	if (!name || !name[0] || strlen(name) > NV_SECRET_NAME_MAX)
		return nv_err_set(err, NV_EINVAL, NULL,
				  "radosgw admin API: a new key needs a name "
				  "of 1..%d bytes",
				  NV_SECRET_NAME_MAX);
	/* two lists of 100 ids are 26 KiB: not on the stack */
	before = calloc(2, sizeof(*before));
	if (!before)
		return nv_err_set(err, NV_ENOMEM, NULL, "out of memory");
	after = before + 1;
	rc = nv_rgw_user_keys(cfg, uid, before, err);
	if (rc)
		goto out;
	/* Not idempotent: each PUT makes one more key. Retried only after
	 * an answer that says it did not run (503, 429; see s3.c). */
	rc = admin_call(cfg, "PUT", uid, NULL, 1, 0, &a, code, err);
	if (rc)
		goto out;
	rc = nv_rgw_parse_keys(a.data, a.len, before, name, after, created,
			       err);
	answer_free(&a);
	if (!rc)
		snprintf((*created)->origin, sizeof((*created)->origin),
			 "radosgw user %s", uid);
out:
	free(before);
	return rc;
}

int nv_rgw_key_remove(const nv_s3_config *cfg, const char *uid,
		      const char *access_key, nv_err *err)
{
	struct answer a;
	char code[NV_RGW_CODE_MAX];
	nv_rgw_key_list *now;
	nv_err first;
	int rc;

	if (!access_key)
		return nv_rgw_access_key_check(access_key, err);
	rc = admin_call(cfg, "DELETE", uid, access_key, 1, 1, &a, code, err);
	if (!rc) {
		answer_free(&a);
		return 0;
	}
	if (strcmp(code, "InvalidAccessKeyId") != 0)
		return rc;
	/* Either the admin's key is unknown or the user has no such key:
	 * the user's keys, read with the same credential, tell which. */
	if (!err)
		return rc;
	first = *err;
	now = calloc(1, sizeof(*now));
	if (!now)
		return nv_err_set(err, NV_ENOMEM, NULL, "out of memory");
	rc = nv_rgw_user_keys(cfg, uid, now, err);
	if (!rc && !nv_rgw_key_list_has(now, access_key))
		rc = nv_err_set(err, NV_ENOTFOUND,
				"it was removed already, or belongs to another "
				"user: navette.storage.keys lists the user's",
				"radosgw user %.140s has no access key %.140s",
				uid, access_key);
	else if (!rc) {
		*err = first;
		rc = first.code;
	}
	free(now);
	return rc;
}

/* Copies a string member of obj into out (cap bytes), cut; "" when it is
 * absent or not a string. */
static void copy_text(const cJSON *obj, const char *name, char *out, size_t cap)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, name);

	snprintf(out, cap, "%s", cJSON_IsString(v) ? v->valuestring : "");
}

int nv_rgw_parse_user(const char *json, size_t len, nv_rgw_user *out,
		      nv_err *err)
{
	const cJSON *uid, *suspended;
	cJSON *root;
	int rc;

	memset(out, 0, sizeof(*out));
	rc = nv_rgw_parse_keys(json, len, NULL, NULL, &out->keys, NULL, err);
	if (rc)
		return rc;
	root = cJSON_ParseWithLength(json, len);
	uid = cJSON_GetObjectItemCaseSensitive(root, "user_id");
	if (!cJSON_IsObject(root) || !cJSON_IsString(uid) ||
	    nv_rgw_uid_check(uid->valuestring, NULL) != 0) {
		cJSON_Delete(root);
		return malformed(err, "a user without a valid user_id");
	}
	snprintf(out->uid, sizeof(out->uid), "%s", uid->valuestring);
	copy_text(root, "display_name", out->display_name,
		  sizeof(out->display_name));
	copy_text(root, "email", out->email, sizeof(out->email));
	suspended = cJSON_GetObjectItemCaseSensitive(root, "suspended");
	out->suspended =
		cJSON_IsTrue(suspended) ||
		(cJSON_IsNumber(suspended) && suspended->valuedouble != 0);
	wipe_strings(root);
	cJSON_Delete(root);
	return 0;
}

int nv_rgw_user_info(const nv_s3_config *cfg, const char *uid, nv_rgw_user *out,
		     nv_err *err)
{
	return user_read(cfg, uid, NULL, out, err);
}

/* A display name or an email: printable ASCII or UTF-8, no control. */
static int text_ok(const char *s, int required)
{
	size_t n = s ? strlen(s) : 0;

	if (n == 0)
		return !required;
	if (n > NV_RGW_TEXT_MAX)
		return 0;
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
			return 0;
	return 1;
}

/* A change to uid whose answer is not read: q holds the parameters that
 * sort before uid ("...&"), uid is appended last (SigV4's canonical
 * order), then q is freed. */
static int admin_change(const nv_s3_config *cfg, const char *method,
			const char *uid, nv_buf *q, nv_err *err)
{
	struct answer a;
	char code[NV_RGW_CODE_MAX];
	int rc;

	nv_buf_puts(q, "uid=");
	nv_sigv4_uri_encode(q, uid, strlen(uid), 0);
	if (q->failed)
		rc = nv_err_set(err, NV_ENOMEM, NULL, "admin query too long");
	else
		/* each is the same the second time (a user made twice answers
		 * UserAlreadyExists): safe to retry */
		rc = admin_run(cfg, method, uid, q->data, 1, &a, code, err);
	if (!rc)
		answer_free(&a);
	nv_buf_free(q);
	return rc;
}

int nv_rgw_user_create(const nv_s3_config *cfg, const char *uid,
		       const char *display_name, const char *email, nv_err *err)
{
	nv_buf q;
	int rc = nv_rgw_uid_check(uid, err);

	if (rc)
		return rc;
	if (!text_ok(display_name, 1) || !text_ok(email, 0))
		return nv_err_set(err, NV_EINVAL, NULL,
				  "radosgw admin API: user %.140s: a display "
				  "name (and email) of at most %d printable "
				  "bytes",
				  uid, NV_RGW_TEXT_MAX);
	nv_buf_init(&q, QUERY_MAX * 2);
	nv_buf_puts(&q, "display-name=");
	nv_sigv4_uri_encode(&q, display_name, strlen(display_name), 0);
	if (email && email[0]) {
		nv_buf_puts(&q, "&email=");
		nv_sigv4_uri_encode(&q, email, strlen(email), 0);
	}
	nv_buf_puts(&q, "&format=json&generate-key=false&");
	return admin_change(cfg, "PUT", uid, &q, err);
}

int nv_rgw_user_suspend(const nv_s3_config *cfg, const char *uid, int suspended,
			nv_err *err)
{
	nv_buf q;
	int rc = nv_rgw_uid_check(uid, err);

	if (rc)
		return rc;
	nv_buf_init(&q, QUERY_MAX);
	nv_buf_printf(&q, "format=json&suspended=%s&",
		      suspended ? "true" : "false");
	return admin_change(cfg, "POST", uid, &q, err);
}

static int discard_sink(void *payload, const char *data, size_t len)
{
	(void)payload;
	(void)data;
	(void)len;
	return 0;
}

int nv_rgw_check_credential(const nv_s3_config *cfg, char code[NV_RGW_CODE_MAX],
			    nv_err *err)
{
	struct call c;
	nv_http_response resp;
	nv_s3_error_doc doc;
	char ignored[NV_RGW_CODE_MAX];
	int rc;

	if (!code)
		code = ignored;
	code[0] = '\0';
	if (!cfg->credential)
		return nv_err_set(err, NV_EINVAL,
				  "give the credential to check",
				  "check_credential: no credential");
	nv_s3_call_init(&c, "GET", NULL, NULL, NULL);
	c.sink = discard_sink;
	rc = nv_s3_call_run(cfg, &c, &resp, err);
	if (rc && resp.status) {
		if (nv_s3_xml_error(resp.body.data, resp.body.len, &doc) == 0 &&
		    doc.code[0] && strlen(doc.code) < NV_RGW_CODE_MAX)
			snprintf(code, NV_RGW_CODE_MAX, "%s", doc.code);
		else if (nv_rgw_parse_error(resp.body.data, resp.body.len,
					    code) != 0)
			snprintf(code, NV_RGW_CODE_MAX, "HTTP%ld", resp.status);
	}
	nv_http_response_free(&resp);
	return rc;
}
