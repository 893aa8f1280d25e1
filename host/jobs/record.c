/* The job record (see record.h): the layout of a job's prefix, its phases
 * and states, and the rule that decides how it ended. The lists are the
 * X-macros of record.h; everything here is made from them. */
#include "jobs/record.h"

#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <cjson/cJSON.h>

#define NV_RECORD_NAME_OF(sym, name) name,

static const char *const phase_names[] = {NV_RECORD_PHASES(NV_RECORD_NAME_OF)};
static const char *const state_names[] = {NV_RECORD_STATES(NV_RECORD_NAME_OF)};

const char *const nv_record_objects[] = {NV_RECORD_OBJECTS(NV_RECORD_NAME_OF)
						 NULL};

#undef NV_RECORD_NAME_OF

/* (two columns, whatever the count) */
/* clang-format off */
const char *const nv_record_spec_fields[] = {
	"id",           "name",
	"project",      "profile",
	"commit",       "commit_time",
	"dirty",        "repository",
	"image",        "image_requested",
	"inputs",       "command",
	"env",          "resources",
	"success",      "failure_condition",
	"submitted_by", "submitted_at",
	"backend",      "params",
	"run",          "libraries",
	"retries",      "checkpoint",
	"secrets",      "key",
	"key_parts",    "locks",
	NULL};
/* clang-format on */

int nv_record_key(char *out, size_t cap, const char *prefix, const char *name)
{
	int n = snprintf(out, cap, "%s%s", prefix ? prefix : "", name);

	return n < 0 || (size_t)n >= cap ? -1 : 0;
}

/* ---- phases and states ------------------------------------------------ */

const char *nv_record_phase_name(nv_record_phase phase)
{
	return (unsigned)phase < NV_PHASE_COUNT ? phase_names[phase] : "";
}

const char *nv_record_state_name(nv_record_state state)
{
	return (unsigned)state < NV_STATE_COUNT ? state_names[state] : "";
}

static int find_name(const char *const *names, int count, const char *name)
{
	for (int i = 0; name && i < count; i++)
		if (strcmp(names[i], name) == 0)
			return i;
	return -1;
}

int nv_record_phase_find(const char *name, nv_record_phase *out)
{
	int i = find_name(phase_names, NV_PHASE_COUNT, name);

	if (i < 0)
		return -1;
	*out = (nv_record_phase)i;
	return 0;
}

int nv_record_state_find(const char *name, nv_record_state *out)
{
	int i = find_name(state_names, NV_STATE_COUNT, name);

	if (i < 0)
		return -1;
	*out = (nv_record_state)i;
	return 0;
}

/* ---- the final state --------------------------------------------------- */

void nv_record_outcome_init(nv_record_outcome *o)
{
	memset(o, 0, sizeof(*o));
	o->state = NV_STATE_SUCCEEDED;
	o->phase = NV_PHASE_RUNNING;
	o->exit_code = -1;
}

void nv_record_fail(nv_record_outcome *o, nv_record_state state,
		    nv_record_phase phase, const char *hint, const char *fmt,
		    ...)
{
	va_list ap;

	if (o->state != NV_STATE_SUCCEEDED)
		return; /* keep the first failure */
	o->state = state;
	o->phase = phase;
	va_start(ap, fmt);
	vsnprintf(o->reason, sizeof(o->reason), fmt, ap);
	va_end(ap);
	snprintf(o->hint, sizeof(o->hint), "%s", hint ? hint : "");
	o->no_hint = 0;
}

static const char *string_in(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
	return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* The phase a record's failure names; one a launcher never fails in (or
 * none) counts as "running". */
static nv_record_phase failure_phase(const cJSON *failure)
{
	nv_record_phase p;

	if (nv_record_phase_find(string_in(failure, "phase"), &p) != 0 ||
	    p == NV_PHASE_SUBMITTED)
		return NV_PHASE_RUNNING;
	return p;
}

/* The record's own word: its state and failure. */
static void from_record(const cJSON *record, const cJSON *failure,
			nv_record_outcome *out)
{
	const char *state = string_in(record, "state");
	const char *reason = string_in(failure, "reason");

	nv_record_outcome_init(out);
	if (!state ||
	    strcmp(state, nv_record_state_name(NV_STATE_SUCCEEDED)) == 0)
		return;
	nv_record_fail(
		out,
		strcmp(state, nv_record_state_name(NV_STATE_CANCELLED)) == 0
			? NV_STATE_CANCELLED
			: NV_STATE_FAILED,
		failure_phase(failure), string_in(failure, "hint"), "%s",
		reason ? reason : "the launcher reported a failure");
}

void nv_record_decide(const char *text, size_t len, const nv_record_verdict *v,
		      nv_record_outcome *out)
{
	cJSON *record = text ? cJSON_ParseWithLength(text, len) : NULL;
	const cJSON *failure = NULL, *code = NULL;

	if (record && !cJSON_IsObject(record)) {
		cJSON_Delete(record);
		record = NULL;
	}
	if (record) {
		failure = cJSON_GetObjectItemCaseSensitive(record, "failure");
		if (!cJSON_IsObject(failure))
			failure = NULL;
		code = cJSON_GetObjectItemCaseSensitive(record, "exit_code");
	}
	if (record && !v->stopped) {
		from_record(record, failure, out);
	} else if (v->said.state != NV_STATE_SUCCEEDED) {
		*out = v->said;
		if (v->phase_from_record && failure)
			out->phase = failure_phase(failure);
	} else if (!record) {
		nv_record_outcome_init(out);
		nv_record_fail(out, NV_STATE_FAILED, NV_PHASE_OUTPUTS_PUBLISHED,
			       v->missing_hint, "%s",
			       v->missing_reason
				       ? v->missing_reason
				       : "the job left no run record");
	} else {
		*out = v->said;
	}
	/* (a cast of a double outside int's range is undefined) */
	if (cJSON_IsNumber(code) && code->valuedouble >= INT_MIN &&
	    code->valuedouble <= INT_MAX &&
	    code->valuedouble == (double)(int)code->valuedouble) {
		out->have_exit = 1;
		out->exit_code = (int)code->valuedouble;
	} else {
		out->have_exit = v->said.have_exit;
		out->exit_code = v->said.exit_code;
	}
	out->record_found = record != NULL;
	cJSON_Delete(record);
}

/* ---- the launcher's names ---------------------------------------------- */

#define NV_RECORD_STR(x)  NV_RECORD_STR_(x)
#define NV_RECORD_STR_(x) #x

static const struct {
	const char *key;
	const char *value;
} fill_keys[] = {
#define NV_RECORD_KEY_PHASE(sym, name)  {"PHASE_" #sym, name},
#define NV_RECORD_KEY_STATE(sym, name)  {"STATE_" #sym, name},
#define NV_RECORD_KEY_OBJECT(sym, name) {"OBJECT_" #sym, name},
	NV_RECORD_PHASES(NV_RECORD_KEY_PHASE) NV_RECORD_STATES(
		NV_RECORD_KEY_STATE) NV_RECORD_OBJECTS(NV_RECORD_KEY_OBJECT){
		"LOG_CHUNK_DIGITS", NV_RECORD_STR(NV_RECORD_LOG_CHUNK_DIGITS)},
	{"CHECKPOINT_ARCHIVE", NV_RECORD_CHECKPOINT_ARCHIVE},
	{"ATTEMPTS", NV_RECORD_ATTEMPTS},
#undef NV_RECORD_KEY_PHASE
#undef NV_RECORD_KEY_STATE
#undef NV_RECORD_KEY_OBJECT
};

/* The length of the key of a placeholder at p ("@KEY@"), or 0. */
static size_t key_at(const char *p, const char *end)
{
	size_t n = 1;

	while (p + n < end && ((p[n] >= 'A' && p[n] <= 'Z') ||
			       (p[n] >= '0' && p[n] <= '9') || p[n] == '_'))
		n++;
	return n > 1 && p + n < end && p[n] == '@' ? n - 1 : 0;
}

int nv_record_fill(nv_buf *out, const char *text, size_t len, nv_err *err)
{
	const char *p = text, *end = text + len;

	while (p < end) {
		const char *at = memchr(p, '@', (size_t)(end - p));
		size_t n;
		if (!at) {
			nv_buf_append(out, p, (size_t)(end - p));
			break;
		}
		nv_buf_append(out, p, (size_t)(at - p));
		n = key_at(at, end);
		if (n == 0) {
			nv_buf_append(out, "@", 1);
			p = at + 1;
			continue;
		}
		size_t i = 0;
		while (i < sizeof(fill_keys) / sizeof(fill_keys[0]) &&
		       !(strlen(fill_keys[i].key) == n &&
			 memcmp(fill_keys[i].key, at + 1, n) == 0))
			i++;
		if (i == sizeof(fill_keys) / sizeof(fill_keys[0]))
			return nv_err_set(err, NV_EINVAL, NULL,
					  "the launcher names @%.*s@, which "
					  "the job record does not define",
					  (int)(n > 64 ? 64 : n), at + 1);
		nv_buf_puts(out, fill_keys[i].value);
		p = at + n + 2;
	}
	return 0; /* a cut at out's cap is out->failed: the caller's */
}
