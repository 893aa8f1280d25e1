/* _navette.slurm: the Lua binding of the slurmrestd client (slurm.h). A
 * session is a full userdata (liolib style: created closed before it is
 * filled, closing twice is harmless, use after close raises) holding an
 * nv_slurm; the credential handle and the policy's strings live in its
 * user value table, and the secret behind the handle is looked up again at
 * every call, so closing the handle makes the next call raise instead of
 * reading freed memory.
 *
 * Misuse raises; expected failures (an identity refusal, an unknown job, a
 * refused submission, an unknown resource name) return nil, {code,
 * message, hint}. In plan mode nothing reaches the cluster: open and every
 * side effect are recorded, queries return nil and a "refused" error. No
 * malloc'd memory is held across a Lua call that can raise: descriptions
 * and job lists live in userdata boxes collected by Lua. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>
#include <lua.h>

#include "core/nv_err.h"
#include "core/nv_lua.h"
#include "creds/creds_lua.h"
#include "jobs/slurm.h"

#define SLURM_SESSION_MT "navette.slurm.session"
#define SLURM_DESC_MT    "navette.slurm.desc"
#define SLURM_JOBS_MT    "navette.slurm.jobs"
#define SLURM_WORDS_MT   "navette.slurm.words"

typedef struct l_slurm_session {
	nv_slurm *s;
	int open;
	int planned; /* opened in plan mode: no nv_slurm behind it */
} l_slurm_session;

typedef struct l_slurm_jobs {
	nv_slurm_job *jobs;
	size_t n;
} l_slurm_jobs;

/* ---- boxes ----------------------------------------------------------------
 */

static int l_slurm_desc_gc(lua_State *L)
{
	nv_slurm_desc_free(luaL_checkudata(L, 1, SLURM_DESC_MT));
	return 0;
}

static int l_slurm_jobs_gc(lua_State *L)
{
	l_slurm_jobs *box = luaL_checkudata(L, 1, SLURM_JOBS_MT);

	free(box->jobs);
	box->jobs = NULL;
	box->n = 0;
	return 0;
}

/* sbatch's words, freed (wiped) when collected */
typedef struct l_slurm_words {
	char **v;
	size_t n;
} l_slurm_words;

static int l_slurm_words_gc(lua_State *L)
{
	l_slurm_words *box = luaL_checkudata(L, 1, SLURM_WORDS_MT);

	nv_slurm_sbatch_args_free(box->v, box->n);
	box->v = NULL;
	box->n = 0;
	return 0;
}

static l_slurm_jobs *push_jobs_box(lua_State *L)
{
	l_slurm_jobs *box = lua_newuserdatauv(L, sizeof(*box), 0); // [.., box]

	memset(box, 0, sizeof(*box));
	luaL_setmetatable(L, SLURM_JOBS_MT);
	return box;
}

/* ---- values in and out --------------------------------------------------- */

static int plan_refused(lua_State *L, const char *what)
{
	nv_err err;

	nv_err_set(&err, NV_EREFUSED, "run without plan mode to query it",
		   "plan mode: the Slurm cluster is not queried (%s)", what);
	return nv_lua_push_error(L, &err);
}

/* A resource value as nv_slurm_desc_set takes it: strings as they are,
 * integers in decimal, other numbers with full precision, booleans as
 * true/false, a list of strings (nodes) joined with commas. Pushes the
 * text; returns NULL (nothing pushed) for other types. */
static const char *value_text(lua_State *L, int idx)
{
	idx = lua_absindex(L, idx);
	switch (lua_type(L, idx)) {
	case LUA_TSTRING: lua_pushvalue(L, idx); break;
	case LUA_TNUMBER:
		if (lua_isinteger(L, idx))
			lua_pushfstring(L, "%I", lua_tointeger(L, idx));
		else {
			char num[64];

			snprintf(num, sizeof(num), "%.17g",
				 (double)lua_tonumber(L, idx));
			lua_pushstring(L, num);
		}
		break;
	case LUA_TBOOLEAN:
		lua_pushstring(L, lua_toboolean(L, idx) ? "true" : "false");
		break;
	case LUA_TTABLE: {
		luaL_Buffer b;
		lua_Integer n = (lua_Integer)lua_rawlen(L, idx);

		luaL_buffinit(L, &b);
		for (lua_Integer i = 1; i <= n; i++) {
			if (lua_rawgeti(L, idx, i) != LUA_TSTRING)
				luaL_error(L, "slurm: a list holds only "
					      "strings");
			if (i > 1)
				luaL_addchar(&b, ',');
			luaL_addvalue(&b);
		}
		luaL_pushresult(&b);
		break;
	}
	default: return NULL;
	}
	if (strlen(lua_tostring(L, -1)) != lua_rawlen(L, -1))
		luaL_error(L, "slurm: a value holds a NUL byte");
	return lua_tostring(L, -1);
}

/* Fills box from the description table at idx: the resource keys of
 * nv_slurm_desc_keys() and env = {NAME = "value"}. 0, or an expected
 * failure in err (an unknown key, a bad value). */
static int fill_desc(lua_State *L, int idx, nv_slurm_job_desc *d, nv_err *err)
{
	idx = lua_absindex(L, idx);
	lua_pushnil(L);            // [.., nil]
	while (lua_next(L, idx)) { // [.., key, value]
		const char *key, *text;
		int rc;

		if (lua_type(L, -2) != LUA_TSTRING)
			return luaL_error(L, "slurm: description keys are "
					     "strings");
		key = lua_tostring(L, -2);
		if (strcmp(key, "env") == 0) {
			int env = lua_gettop(L);

			luaL_checktype(L, env, LUA_TTABLE);
			lua_pushnil(L);
			while (lua_next(L, env)) { // [.., k, env, n, v]
				if (lua_type(L, -2) != LUA_TSTRING ||
				    lua_type(L, -1) != LUA_TSTRING)
					return luaL_error(L,
							  "slurm: env maps "
							  "names to strings");
				rc = nv_slurm_desc_setenv(
					d, lua_tostring(L, -2),
					lua_tostring(L, -1), err);
				if (rc) {
					lua_pop(L, 4);
					return rc;
				}
				lua_pop(L, 1);
			}
			lua_pop(L, 1); // [.., key]
			continue;
		}
		text = value_text(L, -1); // [.., key, value, text?]
		if (!text)
			return luaL_error(L,
					  "slurm: resource %s has a value "
					  "of type %s",
					  key, luaL_typename(L, -1));
		rc = nv_slurm_desc_set(d, key, text, err);
		lua_pop(L, 2); // [.., key]
		if (rc) {
			lua_pop(L, 1);
			return rc;
		}
	}
	return 0;
}

#define SET_STR(k, v)  nv_lua_set_str(L, k, (v))
#define SET_INT(k, v)  nv_lua_set_int(L, k, (lua_Integer)(v))
#define SET_NUM(k, v)  nv_lua_set_num(L, k, (lua_Number)(v))
#define SET_BOOL(k, v) nv_lua_set_bool(L, k, (v))

static void push_view(lua_State *L, const nv_slurm_view *v)
{
	lua_createtable(L, 0, 7); // [.., view]
	SET_BOOL("done", v->done);
	SET_BOOL("blocked", v->blocked);
	SET_STR("state", v->state);
	SET_STR("phase", v->phase);
	SET_INT("exit_code", v->exit_code);
	SET_STR("detail", v->detail);
	SET_STR("hint", v->hint);
}

/* The job as a table, with its view (the job's own requeue flag). */
static void push_job(lua_State *L, const nv_slurm_job *j)
{
	nv_slurm_view v;

	lua_createtable(L, 0, 20); // [.., job]
	SET_INT("job_id", j->job_id);
	SET_STR("name", j->name);
	SET_STR("comment", j->comment);
	SET_STR("user", j->user);
	SET_STR("partition", j->partition);
	SET_STR("state", j->state);
	SET_STR("reason", j->reason);
	SET_STR("state_description", j->state_description);
	SET_STR("nodes", j->nodes);
	SET_STR("batch_host", j->batch_host);
	SET_INT("exit_code", j->exit_code);
	SET_INT("exit_signal", j->exit_signal);
	SET_INT("restarts", j->restarts);
	SET_BOOL("requeue", j->requeue);
	SET_INT("time_limit_min", j->time_limit_min);
	SET_NUM("submit_time", j->submit_time);
	SET_NUM("start_time", j->start_time);
	SET_NUM("end_time", j->end_time);
	if (j->array_job_id > 0) {
		SET_INT("array_job_id", j->array_job_id);
		if (j->array_task_id >= 0)
			SET_INT("array_task_id", j->array_task_id);
		SET_STR("array_tasks", j->array_tasks);
	}
	nv_slurm_map(j, -1, &v);
	push_view(L, &v); // [.., job, view]
	lua_setfield(L, -2, "view");
}

static void table_text(lua_State *L, int t, const char *k, char *dst,
		       size_t cap)
{
	if (lua_getfield(L, t, k) == LUA_TSTRING)
		snprintf(dst, cap, "%s", lua_tostring(L, -1));
	else if (!lua_isnil(L, -1))
		luaL_error(L, "slurm.map_state: %s must be a string", k);
	lua_pop(L, 1);
}

/* An integer field in [min, max] (a boolean is 0 or 1, nil is 0): a
 * plain cast of a float out of range is undefined behaviour. */
static lua_Integer table_int(lua_State *L, int t, const char *k,
			     lua_Integer min, lua_Integer max)
{
	lua_Integer n = 0;
	char what[64];

	if (lua_getfield(L, t, k) == LUA_TNUMBER) {
		snprintf(what, sizeof(what), "slurm.map_state: %s", k);
		n = nv_lua_checkrange(L, -1, min, max, what);
	} else if (lua_isboolean(L, -1)) {
		n = lua_toboolean(L, -1);
	} else if (!lua_isnil(L, -1)) {
		luaL_error(L, "slurm.map_state: %s must be a number", k);
	}
	lua_pop(L, 1);
	return n;
}

static lua_Number table_num(lua_State *L, int t, const char *k)
{
	lua_Number n = 0;

	if (lua_getfield(L, t, k) == LUA_TNUMBER)
		n = lua_tonumber(L, -1);
	else if (lua_isboolean(L, -1))
		n = lua_toboolean(L, -1);
	else if (!lua_isnil(L, -1))
		luaL_error(L, "slurm.map_state: %s must be a number", k);
	lua_pop(L, 1);
	return n;
}

/* ---- sessions ------------------------------------------------------------ */

static l_slurm_session *to_session(lua_State *L)
{
	return luaL_checkudata(L, 1, SLURM_SESSION_MT);
}

/* The open session at 1, its credential looked up now (raises when the
 * session or its credential handle was closed). NULL for a planned one. */
static nv_slurm *check_session(lua_State *L)
{
	l_slurm_session *c = to_session(L);
	const nv_secret *cred;
	nv_err err;

	nv_lua_check_open(L, c->open, SLURM_SESSION_MT);
	if (c->planned)
		return NULL;
	lua_getiuservalue(L, 1, 1);        // [.., uv]
	lua_getfield(L, -1, "credential"); // [.., uv, handle]
	cred = nv_creds_check(L, -1);
	lua_pop(L, 2); // [..] the user value keeps the handle alive
	if (nv_slurm_set_credential(c->s, cred, &err))
		luaL_error(L, "%s", err.message);
	return c->s;
}

static lua_Integer check_job_id(lua_State *L, int idx)
{
	return nv_lua_checkrange(L, idx, 1, 4294967295LL, "slurm: job id");
}

/* open{endpoint=, user=, credential=, lifespan=, max_lifespan=, version=,
 * ca_bundle=, pin=, timeout_ms=} -> session | nil, err */
static int l_slurm_open(lua_State *L)
{
	l_slurm_session *c;
	nv_slurm_config cfg;
	nv_err err;
	int uv;

	luaL_checktype(L, 1, LUA_TTABLE);
	lua_settop(L, 1);
	/* created closed: if anything below raises, __gc has nothing to do */
	c = lua_newuserdatauv(L, sizeof(*c), 1); // [opts, session]
	memset(c, 0, sizeof(*c));
	luaL_setmetatable(L, SLURM_SESSION_MT);
	lua_createtable(L, 0, 8); // [opts, session, uv]
	uv = lua_gettop(L);
	memset(&cfg, 0, sizeof(cfg));

#define STRING_FIELD(dst, name)                                                \
	do {                                                                   \
		int type = lua_getfield(L, 1, name); /* [.., v] */             \
		if (type == LUA_TSTRING) {                                     \
			if (strlen(lua_tostring(L, -1)) != lua_rawlen(L, -1))  \
				return luaL_error(                             \
					L, "slurm.open: %s holds a NUL",       \
					name);                                 \
			dst = lua_tostring(L, -1);                             \
			lua_setfield(L, uv, name); /* anchored in uv */        \
		} else if (type == LUA_TNIL) {                                 \
			lua_pop(L, 1);                                         \
		} else {                                                       \
			return luaL_error(                                     \
				L, "slurm.open: %s must be a string", name);   \
		}                                                              \
	} while (0)
	STRING_FIELD(cfg.endpoint, "endpoint");
	STRING_FIELD(cfg.user, "user");
	STRING_FIELD(cfg.api_version, "version");
	STRING_FIELD(cfg.policy.ca_bundle, "ca_bundle");
	STRING_FIELD(cfg.policy.pinned_pubkey, "pin");
#undef STRING_FIELD
	if (!cfg.endpoint || !cfg.user)
		return luaL_error(L, "slurm.open: endpoint and user are "
				     "required");
	lua_getfield(L, 1, "lifespan"); // [.., n]
	cfg.token_lifespan_s = luaL_optnumber(L, -1, 0);
	lua_getfield(L, 1, "max_lifespan");
	cfg.token_max_s = luaL_optnumber(L, -1, 0);
	lua_getfield(L, 1, "timeout_ms");
	cfg.policy.total_timeout_ms = (long)nv_lua_optrange(
		L, -1, 0, (lua_Integer)7 * 24 * 3600 * 1000, 0,
		"slurm.open: timeout_ms");
	lua_pop(L, 3);
	lua_getfield(L, 1, "credential"); // [.., handle]
	cfg.credential = nv_creds_check(L, -1);
	lua_setfield(L, uv, "credential"); // [opts, session, uv]
	lua_setiuservalue(L, 2, 1);        // [opts, session]

	if (nv_plan_mode(L)) {
		lua_pushfstring(L, "%s as %s", cfg.endpoint, cfg.user);
		nv_plan_record(L, "slurm", "open", lua_tostring(L, -1));
		lua_pop(L, 1);
		c->planned = 1;
		c->open = 1;
		return 1;
	}
	if (nv_slurm_open(&c->s, &cfg, &err))
		return nv_lua_push_error(L, &err);
	c->open = 1;
	return 1;
}

static int l_slurm_close(lua_State *L)
{
	l_slurm_session *c = to_session(L);

	if (c->open) {
		nv_slurm_close(c->s);
		c->s = NULL;
		c->open = 0;
	}
	return 0;
}

static int l_slurm_tostring(lua_State *L)
{
	l_slurm_session *c = to_session(L);

	if (!c->open)
		lua_pushliteral(L, "slurm session (closed)");
	else if (c->planned)
		lua_pushliteral(L, "slurm session (planned)");
	else
		lua_pushfstring(L, "slurm session (%s)",
				nv_slurm_version(c->s));
	return 1;
}

/* session:info() -> {version=, requests=, connections=, token_lifespan=} */
static int l_slurm_info(lua_State *L)
{
	nv_slurm *s = check_session(L);

	lua_createtable(L, 0, 5);
	SET_BOOL("planned", s == NULL);
	if (s) {
		SET_STR("version", nv_slurm_version(s));
		SET_INT("requests", nv_slurm_requests(s));
		SET_INT("connections", nv_slurm_connections(s));
		SET_NUM("token_lifespan", nv_slurm_token_lifespan(s));
	}
	return 1;
}

/* session:db(method, path [, body]) -> the answer's JSON text | nil, err:
 * the accounting API (nv_slurm_db). Plan mode: a write is recorded and
 * answers "{}", a read goes on (reading is safe). */
static int l_slurm_db(lua_State *L)
{
	nv_slurm *s = check_session(L);
	const char *method = luaL_checkstring(L, 2);
	const char *path = luaL_checkstring(L, 3);
	const char *body = luaL_optstring(L, 4, NULL);
	char *out = NULL;
	nv_err err;

	if (!s || (nv_plan_mode(L) && strcmp(method, "GET") != 0)) {
		nv_plan_record(L, "slurmdb", method, path);
		lua_pushliteral(L, "{}");
		return 1;
	}
	if (nv_slurm_db(s, method, path, body, &out, &err))
		return nv_lua_push_error(L, &err);
	lua_pushstring(L, out);
	free(out);
	return 1;
}

/* session:submit(script, desc) -> job_id | nil, err. desc holds the
 * resource keys (slurm.desc_keys()) and env = {NAME = "value"}. */
static int l_slurm_submit(lua_State *L)
{
	nv_slurm *s = check_session(L);
	const char *script = luaL_checkstring(L, 2);
	nv_slurm_job_desc *d;
	long long id = 0;
	nv_err err;
	int rc;

	luaL_checktype(L, 3, LUA_TTABLE);
	lua_settop(L, 3);
	d = lua_newuserdatauv(L, sizeof(*d), 0); // [.., box]
	nv_slurm_desc_init(d);
	luaL_setmetatable(L, SLURM_DESC_MT);
	rc = fill_desc(L, 3, d, &err);
	if (rc)
		return nv_lua_push_error(L, &err);
	if (!s) {
		nv_plan_record(L, "slurm", "submit",
			       d->name ? d->name : "(no name)");
		lua_pushinteger(L, 0);
		lua_pushliteral(L, "planned");
		return 2;
	}
	if (nv_slurm_submit(s, script, d, &id, &err)) {
		nv_lua_push_error(L, &err); // [.., nil, err]
		lua_pushboolean(L, nv_slurm_submit_refused(s));
		return 3; // [.., nil, err, refused for certain]
	}
	lua_pushinteger(L, (lua_Integer)id);
	return 1;
}

/* The task index at idx (an array's), or -1 when none is given. */
static long opt_task(lua_State *L, int idx)
{
	if (lua_isnoneornil(L, idx))
		return -1;
	return (long)nv_lua_checkrange(L, idx, 0, 4294967294LL,
				       "slurm: task index");
}

/* session:job(id [, task]) -> job | nil, err (task: of job array id) */
static int l_slurm_job(lua_State *L)
{
	nv_slurm *s = check_session(L);
	lua_Integer id = check_job_id(L, 2);
	long task = opt_task(L, 3);
	nv_slurm_job job;
	nv_err err;
	int rc;

	if (!s)
		return plan_refused(L, "job");
	rc = task >= 0 ? nv_slurm_task_get(s, (long long)id, task, &job, &err)
		       : nv_slurm_job_get(s, (long long)id, &job, &err);
	if (rc)
		return nv_lua_push_error(L, &err);
	push_job(L, &job);
	return 1;
}

/* session:find{name=, comment=} -> job, matches | nil, err (not_found) */
static int l_slurm_find(lua_State *L)
{
	nv_slurm *s = check_session(L);
	const char *name, *comment;
	nv_slurm_job job;
	nv_err err;
	int matches = 0;

	luaL_checktype(L, 2, LUA_TTABLE);
	lua_getfield(L, 2, "name");
	name = luaL_optstring(L, -1, NULL);
	lua_getfield(L, 2, "comment");
	comment = luaL_optstring(L, -1, NULL);
	luaL_argcheck(L, name || comment, 2, "give name or comment");
	if (!s)
		return plan_refused(L, "find");
	if (nv_slurm_find(s, name, comment, &job, &matches, &err))
		return nv_lua_push_error(L, &err);
	push_job(L, &job);
	lua_pushinteger(L, matches);
	return 2;
}

/* session:jobs() -> {job, ...} | nil, err */
static int l_slurm_list_jobs(lua_State *L)
{
	nv_slurm *s = check_session(L);
	l_slurm_jobs *box;
	nv_err err;

	if (!s)
		return plan_refused(L, "jobs");
	box = push_jobs_box(L); // [.., box]
	if (nv_slurm_jobs(s, &box->jobs, &box->n, &err))
		return nv_lua_push_error(L, &err);
	lua_createtable(L, (int)box->n, 0); // [.., box, list]
	for (size_t i = 0; i < box->n; i++) {
		push_job(L, &box->jobs[i]);
		lua_rawseti(L, -2, (lua_Integer)i + 1);
	}
	return 1; /* the box is collected with the C array */
}

/* session:cancel(id [, task]) -> true, was_done | nil, err */
static int l_slurm_cancel(lua_State *L)
{
	nv_slurm *s = check_session(L);
	lua_Integer id = check_job_id(L, 2);
	long task = opt_task(L, 3);
	nv_err err;
	int was_done = 0, rc;

	if (!s) {
		lua_pushfstring(L, "%I", id);
		nv_plan_record(L, "slurm", "cancel", lua_tostring(L, -1));
		lua_pushboolean(L, 1);
		lua_pushliteral(L, "planned");
		return 2;
	}
	rc = task >= 0 ? nv_slurm_task_cancel(s, (long long)id, task, &was_done,
					      &err)
		       : nv_slurm_cancel(s, (long long)id, &was_done, &err);
	if (rc)
		return nv_lua_push_error(L, &err);
	lua_pushboolean(L, 1);
	lua_pushboolean(L, was_done);
	return 2;
}

/* session:requeue(id) -> true | nil, err */
static int l_slurm_requeue(lua_State *L)
{
	nv_slurm *s = check_session(L);
	lua_Integer id = check_job_id(L, 2);
	nv_err err;
	int rc;

	if (!s) {
		lua_pushfstring(L, "%I", id);
		return nv_lua_planned(L, "slurm", "requeue",
				      lua_tostring(L, -1));
	}
	rc = nv_slurm_requeue(s, (long long)id, &err);
	return nv_lua_result(L, rc, &err);
}

/* ---- module functions ---------------------------------------------------- */

/* map_state(job_table, requeue_allowed?) -> view. job_table holds state,
 * reason, nodes, exit_code, exit_signal, restarts, requeue,
 * time_limit_min, job_id (as session:job returns them); requeue_allowed
 * true/false, or nil for the job's own flag. */
static int l_slurm_map_state(lua_State *L)
{
	nv_slurm_job j;
	nv_slurm_view v;
	int requeue = -1;

	luaL_checktype(L, 1, LUA_TTABLE);
	if (!lua_isnoneornil(L, 2)) {
		luaL_checktype(L, 2, LUA_TBOOLEAN);
		requeue = lua_toboolean(L, 2);
	}
	memset(&j, 0, sizeof(j));
	table_text(L, 1, "state", j.state, sizeof(j.state));
	table_text(L, 1, "reason", j.reason, sizeof(j.reason));
	table_text(L, 1, "nodes", j.nodes, sizeof(j.nodes));
	j.job_id = (long long)table_int(L, 1, "job_id", 0, 4294967295LL);
	j.exit_code = (int)table_int(L, 1, "exit_code", INT_MIN, INT_MAX);
	j.exit_signal = (int)table_int(L, 1, "exit_signal", INT_MIN, INT_MAX);
	j.restarts = (int)table_int(L, 1, "restarts", 0, INT_MAX);
	j.requeue =
		table_int(L, 1, "requeue", LUA_MININTEGER, LUA_MAXINTEGER) != 0;
	j.time_limit_min =
		(long)table_int(L, 1, "time_limit_min", 0, LUA_MAXINTEGER);
	j.start_time = table_num(L, 1, "start_time");
	luaL_argcheck(L, j.state[0], 1, "state is required");
	nv_slurm_map(&j, requeue, &v);
	push_view(L, &v);
	return 1;
}

/* desc_keys() -> {"name", ...}: the resource names submit takes (and env) */
static int l_slurm_desc_keys(lua_State *L)
{
	nv_lua_push_strings(L, nv_slurm_desc_keys());
	return 1;
}

/* check_desc(desc) -> true | nil, err: the checks submit makes first. */
static int l_slurm_check_desc(lua_State *L)
{
	nv_slurm_job_desc *d;
	nv_err err;
	int rc;

	luaL_checktype(L, 1, LUA_TTABLE);
	lua_settop(L, 1);
	d = lua_newuserdatauv(L, sizeof(*d), 0); // [desc, box]
	nv_slurm_desc_init(d);
	luaL_setmetatable(L, SLURM_DESC_MT);
	rc = fill_desc(L, 1, d, &err);
	return nv_lua_result(L, rc, &err);
}

/* sbatch_args(desc) -> {word, ...} | nil, err: the options of sbatch
 * that submit desc (a description as session:submit takes it, with the
 * same checks) with the script on standard input (slurm_sbatch.c). */
static int l_slurm_sbatch_args(lua_State *L)
{
	nv_slurm_job_desc *d;
	l_slurm_words *words;
	nv_err err;
	int rc;

	luaL_checktype(L, 1, LUA_TTABLE);
	lua_settop(L, 1);
	d = lua_newuserdatauv(L, sizeof(*d), 0); // [desc, box]
	nv_slurm_desc_init(d);
	luaL_setmetatable(L, SLURM_DESC_MT);
	words = lua_newuserdatauv(L, sizeof(*words), 0); // [desc, box, words]
	memset(words, 0, sizeof(*words));
	luaL_setmetatable(L, SLURM_WORDS_MT);
	rc = fill_desc(L, 1, d, &err);
	if (!rc)
		rc = nv_slurm_sbatch_args(d, &words->v, &words->n, &err);
	if (rc)
		return nv_lua_push_error(L, &err);
	lua_createtable(L, (int)words->n, 0); // [desc, box, words, list]
	for (size_t i = 0; i < words->n; i++) {
		lua_pushstring(L, words->v[i]);
		lua_rawseti(L, -2, (lua_Integer)i + 1);
	}
	return 1;
}

/* parse_jobs(text [, version [, user [, array_id, task]]]) -> {job, ...}
 * | nil, err: the jobs of a listing in the JSON of an API version (nil:
 * v0.0.38, what `squeue --json` prints on Slurm 22.05), as session:jobs()
 * gives them, those of user only when given. With array_id and task: the
 * one job of that task, as session:job(array_id, task) gives it (a
 * waiting task from its array's line), or nil, not_found. */
static int l_slurm_parse_jobs(lua_State *L)
{
	size_t len, kept = 0;
	const char *text = luaL_checklstring(L, 1, &len);
	const char *version = luaL_optstring(L, 2, "v0.0.38");
	const char *user = luaL_optstring(L, 3, NULL);
	l_slurm_jobs *box;
	nv_slurm_job job;
	lua_Integer array_id = 0, task = -1;
	nv_err err;

	if (!lua_isnoneornil(L, 4)) {
		array_id = check_job_id(L, 4);
		task = nv_lua_checkrange(L, 5, 0, 4294967295LL, "slurm: task");
	}
	box = push_jobs_box(L); // [.., box]
	if (nv_slurm_parse_jobs(version, text, len, 0, &box->jobs, &box->n,
				&err))
		return nv_lua_push_error(L, &err);
	for (size_t i = 0; i < box->n; i++)
		if (!user || strcmp(box->jobs[i].user, user) == 0)
			box->jobs[kept++] = box->jobs[i];
	box->n = kept;
	if (array_id > 0) {
		if (nv_slurm_task_pick(box->jobs, box->n, (long long)array_id,
				       (long)task, &job)) {
			nv_err_set(&err, NV_ENOTFOUND, NULL,
				   "Slurm has no task %ld of job array %lld",
				   (long)task, (long long)array_id);
			return nv_lua_push_error(L, &err);
		}
		push_job(L, &job);
		return 1;
	}
	lua_createtable(L, (int)box->n, 0); // [.., box, list]
	for (size_t i = 0; i < box->n; i++) {
		push_job(L, &box->jobs[i]);
		lua_rawseti(L, -2, (lua_Integer)i + 1);
	}
	return 1;
}

static int l_slurm_versions(lua_State *L)
{
	nv_lua_push_strings(L, nv_slurm_api_versions());
	return 1;
}

#undef SET_STR
#undef SET_INT
#undef SET_NUM
#undef SET_BOOL

int luaopen_navette_slurm(lua_State *L)
{
	static const luaL_Reg methods[] = {
		{"submit", l_slurm_submit}, {"job", l_slurm_job},
		{"find", l_slurm_find},     {"jobs", l_slurm_list_jobs},
		{"cancel", l_slurm_cancel}, {"requeue", l_slurm_requeue},
		{"info", l_slurm_info},     {"db", l_slurm_db},
		{"close", l_slurm_close},   {NULL, NULL}};
	static const luaL_Reg meta[] = {{"__gc", l_slurm_close},
					{"__close", l_slurm_close},
					{"__tostring", l_slurm_tostring},
					{NULL, NULL}};
	static const luaL_Reg fns[] = {{"open", l_slurm_open},
				       {"map_state", l_slurm_map_state},
				       {"desc_keys", l_slurm_desc_keys},
				       {"check_desc", l_slurm_check_desc},
				       {"versions", l_slurm_versions},
				       {"sbatch_args", l_slurm_sbatch_args},
				       {"parse_jobs", l_slurm_parse_jobs},
				       {NULL, NULL}};

	nv_lua_new_handle_type(L, SLURM_SESSION_MT, meta, methods);
	nv_lua_new_box_type(L, SLURM_DESC_MT, l_slurm_desc_gc);
	nv_lua_new_box_type(L, SLURM_JOBS_MT, l_slurm_jobs_gc);
	nv_lua_new_box_type(L, SLURM_WORDS_MT, l_slurm_words_gc);
	luaL_newlib(L, fns); // [slurm]
	return 1;
}
