/* A reuse index entry parsed and checked (reuse_index.h). */
#include "reuse/reuse_index.h"

#include <string.h>

#include <cjson/cJSON.h>

#include "core/utf8.h"
#include "jobs/record.h"

#define ENTRY_HINT                                                             \
	"the reuse index of the store holds an entry navette did not write: "  \
	"remove it with `navette reuse forget KEY`"

int nv_reuse_key_check(const char *key, nv_err *err)
{
	size_t n = key ? strlen(key) : 0;

	if (n != NV_REUSE_KEY_LEN || strncmp(key, "sha256:", 7) != 0)
		return nv_err_bad(err, "a key is sha256: and 64 hex digits",
				  "reuse key", key, 80);
	for (size_t i = 7; i < n; i++) {
		char c = key[i];
		if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
			return nv_err_bad(err,
					  "a key is sha256: and 64 lowercase "
					  "hex digits",
					  "reuse key", key, 80);
	}
	return 0;
}

/* Copies field name of o, a string of 1..max bytes, into out; text: no
 * control byte, valid UTF-8. */
static int text_field(const cJSON *o, const char *name, char *out, size_t max,
		      nv_err *err)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);
	size_t n;

	if (!cJSON_IsString(v) || !v->valuestring)
		return nv_err_set(err, NV_EINVAL, ENTRY_HINT,
				  "reuse index entry: '%s' is missing or not "
				  "a string",
				  name);
	n = strlen(v->valuestring);
	if (n == 0 || n > max)
		return nv_err_set(err, NV_EINVAL, ENTRY_HINT,
				  "reuse index entry: '%s' is empty or longer "
				  "than %zu bytes",
				  name, max);
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)v->valuestring[i];
		if (c < 0x20 || c == 0x7f)
			return nv_err_set(err, NV_EINVAL, ENTRY_HINT,
					  "reuse index entry: '%s' holds a "
					  "control byte",
					  name);
	}
	if (nv_utf8_invalid_at(v->valuestring, n) != NV_UTF8_VALID)
		return nv_err_set(err, NV_EINVAL, ENTRY_HINT,
				  "reuse index entry: '%s' is not UTF-8", name);
	memcpy(out, v->valuestring, n + 1);
	return 0;
}

static int ends_with(const char *s, const char *tail)
{
	size_t n = strlen(s), t = strlen(tail);
	return n >= t && memcmp(s + n - t, tail, t) == 0;
}

static int check_fields(const cJSON *o, nv_reuse_entry *out, nv_err *err)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, "navette_reuse");

	if (!cJSON_IsObject(o))
		return nv_err_set(err, NV_EINVAL, ENTRY_HINT,
				  "reuse index entry: not a JSON object");
	if (!cJSON_IsNumber(v) || v->valuedouble != 1.0)
		return nv_err_set(err, NV_EINVAL,
				  "a newer navette wrote it, or something else "
				  "did: " ENTRY_HINT,
				  "reuse index entry: not of version 1 "
				  "(navette_reuse)");
	if (text_field(o, "key", out->key, NV_REUSE_KEY_LEN, err) ||
	    nv_reuse_key_check(out->key, err) ||
	    text_field(o, "job", out->job, NV_JOB_ID_MAX, err) ||
	    nv_job_id_check(out->job, err) ||
	    text_field(o, "name", out->name, NV_REUSE_NAME_MAX, err) ||
	    text_field(o, "project", out->project, NV_REUSE_PROJECT_MAX, err) ||
	    text_field(o, "profile", out->profile, NV_REUSE_PROFILE_MAX, err) ||
	    text_field(o, "record", out->record, NV_REUSE_URL_MAX, err) ||
	    text_field(o, "created", out->created, NV_REUSE_TIME_MAX, err))
		return -1;
	if ((strncmp(out->record, "file:///", 8) != 0 &&
	     strncmp(out->record, "s3://", 5) != 0) ||
	    !ends_with(out->record, "/" NV_RECORD_RUN_RECORD) ||
	    strstr(out->record, "/../") || strchr(out->record, ' '))
		return nv_err_set(err, NV_EINVAL, ENTRY_HINT,
				  "reuse index entry: 'record' is not the URL "
				  "of a run record (file:/// or s3://, ending "
				  "in /navette-run.json)");
	for (const char *c = out->created; *c; c++)
		if (!strchr("0123456789TZ:.-", *c))
			return nv_err_set(err, NV_EINVAL, ENTRY_HINT,
					  "reuse index entry: 'created' is "
					  "not a time");
	return 0;
}

int nv_reuse_index_parse(const char *text, size_t len, nv_reuse_entry *out,
			 nv_err *err)
{
	cJSON *o;
	int rc;

	memset(out, 0, sizeof(*out));
	if (!text || len == 0 || len > NV_REUSE_INDEX_MAX)
		return nv_err_set(err, NV_EINVAL, ENTRY_HINT,
				  "reuse index entry: empty or larger than "
				  "%zu bytes",
				  NV_REUSE_INDEX_MAX);
	o = cJSON_ParseWithLength(text, len);
	if (!o)
		return nv_err_set(err, NV_EINVAL, ENTRY_HINT,
				  "reuse index entry: not JSON");
	rc = check_fields(o, out, err);
	cJSON_Delete(o);
	if (rc)
		memset(out, 0, sizeof(*out));
	return rc;
}
