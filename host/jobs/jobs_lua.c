/* _navette.jobs: the local backend as the library sees it: submit into the
 * durable queue (starting the agent), read a job or the list (as JSON text,
 * decoded by lua/navette/jobs.lua), cancel, and render a launcher. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <lauxlib.h>
#include <lua.h>
#include <openssl/sha.h>

#include "core/buf.h"
#include "core/clock.h"
#include "core/jobid.h"
#include "core/fault.h"
#include "core/nv_lua.h"
#include "jobs/agent.h"
#include "jobs/launcher.h"
#include "jobs/queue.h"

/* The job database of a home, opened once per Lua state and kept (a
 * sweep's submissions would otherwise open, check the schema of and
 * checkpoint the database several times per job); closed when the state
 * is. */
#define QUEUES_KEY "navette.jobs.queues"
#define QUEUE_MT   "navette.jobs.queue"

typedef struct {
	nv_queue *q;
} queue_box;

static int queue_box_gc(lua_State *L)
{
	queue_box *b = luaL_checkudata(L, 1, QUEUE_MT);

	if (b->q) {
		nv_queue_close(b->q);
		b->q = NULL;
	}
	return 0;
}

static int queue_for(lua_State *L, const char *home, nv_queue **q, nv_err *err)
{
	queue_box *b;

	if (lua_getfield(L, LUA_REGISTRYINDEX, QUEUES_KEY) != LUA_TTABLE) {
		lua_pop(L, 1);
		lua_newtable(L);
		lua_pushvalue(L, -1);
		lua_setfield(L, LUA_REGISTRYINDEX, QUEUES_KEY);
	}
	if (lua_getfield(L, -1, home) == LUA_TUSERDATA) {
		b = lua_touserdata(L, -1);
		*q = b->q;
		lua_pop(L, 2);
		if (*q)
			return 0;
		return nv_err_set(err, NV_EIO, NULL, "job database closed");
	}
	lua_pop(L, 1);
	if (nv_queue_open(q, home, err) != 0) {
		lua_pop(L, 1);
		return -1;
	}
	b = lua_newuserdatauv(L, sizeof(*b), 0);
	b->q = *q;
	if (luaL_newmetatable(L, QUEUE_MT)) {
		lua_pushcfunction(L, queue_box_gc);
		lua_setfield(L, -2, "__gc");
	}
	lua_setmetatable(L, -2);
	lua_setfield(L, -2, home);
	lua_pop(L, 1);
	return 0;
}

/* Pushes a malloc'd string into Lua, freeing it on every path. */
static int push_owned(lua_State *L, char *s)
{
	lua_pushstring(L, "");
	lua_pop(L, 1); /* make sure the stack has room before we own s */
	if (!lua_checkstack(L, 1)) {
		free(s);
		return luaL_error(L, "stack overflow");
	}
	/* lua_pushstring may raise on memory: copy through a buffer that Lua
	 * owns first. */
	size_t len = strlen(s);
	char *copy = lua_newuserdatauv(L, len + 1, 0);
	memcpy(copy, s, len + 1);
	free(s);
	lua_pushlstring(L, copy, len);
	lua_remove(L, -2);
	return 1;
}

/* jobs.submit(home, id, project, profile, name, spec_json [, backend
 *   [, submit_key [, start_agent]]]) -> agent_started | nil, err
 * submit_key: see nv_queue_insert_keyed; start_agent (default true) false
 * leaves a local job's agent to jobs.ensure_agent. */
static int l_jobs_submit(lua_State *L)
{
	const char *home = luaL_checkstring(L, 1);
	const char *id = luaL_checkstring(L, 2);
	const char *project = luaL_checkstring(L, 3);
	const char *profile = luaL_checkstring(L, 4);
	const char *name = luaL_checkstring(L, 5);
	const char *spec = luaL_checkstring(L, 6);
	const char *backend = luaL_optstring(L, 7, "local");
	const char *submit_key = luaL_optstring(L, 8, NULL);
	int local = strcmp(backend, "local") == 0;
	int start_agent = lua_isnoneornil(L, 9) || lua_toboolean(L, 9);
	nv_queue *q = NULL;
	nv_err err;
	int started = 0;

	if (nv_job_id_check(id, &err))
		return nv_lua_push_error(L, &err);
	if (nv_plan_mode(L)) {
		nv_plan_record(L, "jobs", "submit", id);
		lua_pushboolean(L, 0);
		return 1;
	}
	if (queue_for(L, home, &q, &err) != 0)
		return nv_lua_push_error(L, &err);
	int rc = nv_queue_insert_keyed(q, id, project, profile, name, spec,
				       backend, submit_key, nv_now(), &err);
	if (rc)
		return nv_lua_push_error(L, &err);
	nv_fault_point("submit-row-written", name);
	/* another backend's job is the CLI's to submit: no agent */
	if (local && start_agent && nv_agent_ensure(home, &started, &err) != 0)
		return nv_lua_push_error(L, &err);
	lua_pushboolean(L, started);
	return 1;
}

/* jobs.submitted(home, id) -> true | nil, err: the submission of job id
 * is complete (a re-run no longer resumes it). */
static int l_jobs_submitted(lua_State *L)
{
	nv_queue *q = NULL;
	nv_err err;

	if (nv_plan_mode(L)) {
		lua_pushboolean(L, 1);
		return 1;
	}
	if (queue_for(L, luaL_checkstring(L, 1), &q, &err) != 0)
		return nv_lua_push_error(L, &err);
	if (nv_queue_submitted(q, luaL_checkstring(L, 2), &err) != 0)
		return nv_lua_push_error(L, &err);
	lua_pushboolean(L, 1);
	return 1;
}

/* jobs.interrupted(home, submit_key) -> json | false | nil, err: the job
 * of an unfinished submission of that key, if any. */
static int l_jobs_interrupted(lua_State *L)
{
	nv_queue *q = NULL;
	nv_err err;
	char *json = NULL;

	if (queue_for(L, luaL_checkstring(L, 1), &q, &err) != 0)
		return nv_lua_push_error(L, &err);
	if (nv_queue_interrupted(q, luaL_checkstring(L, 2), &json, &err) != 0)
		return nv_lua_push_error(L, &err);
	if (!json) {
		lua_pushboolean(L, 0);
		return 1;
	}
	return push_owned(L, json);
}

/* jobs.submit_key(text) -> hex: the SHA-256 of a submission's canonical
 * description (the key is stored, never the description twice). */
static int l_jobs_submit_key(lua_State *L)
{
	size_t len;
	const char *text = luaL_checklstring(L, 1, &len);
	unsigned char md[SHA256_DIGEST_LENGTH];
	char hex[2 * SHA256_DIGEST_LENGTH + 1];

	SHA256((const unsigned char *)text, len, md);
	for (int i = 0; i < SHA256_DIGEST_LENGTH; i++)
		snprintf(hex + 2 * i, 3, "%02x", md[i]);
	lua_pushstring(L, hex);
	return 1;
}

/* jobs.fault_point(point [, detail]): tests only, see core/fault.h. */
static int l_jobs_fault_point(lua_State *L)
{
	nv_fault_point(luaL_checkstring(L, 1), luaL_optstring(L, 2, NULL));
	return 0;
}

/* jobs.get(home, id) -> json | nil, err */
static int l_jobs_get(lua_State *L)
{
	nv_queue *q = NULL;
	nv_err err;
	char *json = NULL;

	if (queue_for(L, luaL_checkstring(L, 1), &q, &err) != 0)
		return nv_lua_push_error(L, &err);
	int rc = nv_queue_get_json(q, luaL_checkstring(L, 2), &json, &err);
	if (rc)
		return nv_lua_push_error(L, &err);
	return push_owned(L, json);
}

/* jobs.list(home [, limit]) -> json array | nil, err */
static int l_jobs_list(lua_State *L)
{
	nv_queue *q = NULL;
	nv_err err;
	char *json = NULL;

	if (queue_for(L, luaL_checkstring(L, 1), &q, &err) != 0)
		return nv_lua_push_error(L, &err);
	int limit =
		(int)nv_lua_optrange(L, 2, 1, INT_MAX, 50, "jobs.list: limit");
	int rc = nv_queue_list_json(q, limit, &json, &err);
	if (rc)
		return nv_lua_push_error(L, &err);
	return push_owned(L, json);
}

/* jobs.cancel(home, id) -> state | nil, err */
static int l_jobs_cancel(lua_State *L)
{
	nv_queue *q = NULL;
	nv_err err;
	char state[16] = "";

	if (nv_plan_mode(L)) {
		nv_plan_record(L, "jobs", "cancel", luaL_checkstring(L, 2));
		lua_pushliteral(L, "planned");
		return 1;
	}
	if (queue_for(L, luaL_checkstring(L, 1), &q, &err) != 0)
		return nv_lua_push_error(L, &err);
	int rc = nv_queue_cancel(q, luaL_checkstring(L, 2), state, &err);
	if (rc)
		return nv_lua_push_error(L, &err);
	lua_pushstring(L, state);
	return 1;
}

/* The calls a remote backend's follower makes on the local record of its
 * jobs (the agent makes the same for local ones). Each opens the queue,
 * runs one statement and closes it; none raises for an expected failure. */

/* jobs.set_remote(home, id, remote_id|nil, state|nil) -> true | nil, err */
static int l_jobs_set_remote(lua_State *L)
{
	nv_queue *q = NULL;
	nv_err err;

	if (queue_for(L, luaL_checkstring(L, 1), &q, &err) != 0)
		return nv_lua_push_error(L, &err);
	int rc = nv_queue_set_remote(q, luaL_checkstring(L, 2),
				     luaL_optstring(L, 3, NULL),
				     luaL_optstring(L, 4, NULL), &err);
	if (rc)
		return nv_lua_push_error(L, &err);
	lua_pushboolean(L, 1);
	return 1;
}

/* jobs.phase(home, id, phase, at) -> true | nil, err */
static int l_jobs_phase(lua_State *L)
{
	nv_queue *q = NULL;
	nv_err err;

	if (queue_for(L, luaL_checkstring(L, 1), &q, &err) != 0)
		return nv_lua_push_error(L, &err);
	int rc = nv_queue_phase(
		q, luaL_checkstring(L, 2), luaL_checkstring(L, 3),
		nv_lua_checkrangef(L, 4, 0, NV_TIME_MAX, "jobs.phase: at"),
		&err);
	if (rc)
		return nv_lua_push_error(L, &err);
	lua_pushboolean(L, 1);
	return 1;
}

/* jobs.finish(home, id, state, exit_code|nil, failure|nil, record_url|nil)
 * with failure = {phase, reason, hint} -> true | nil, err */
static int l_jobs_finish(lua_State *L)
{
	nv_queue *q = NULL;
	nv_err err;
	const char *fphase = NULL, *freason = NULL, *fhint = NULL;
	/* (the queue takes -1001 for none) */
	int code = lua_isnoneornil(L, 4)
			   ? -1001
			   : (int)nv_lua_checkrange(L, 4, -1000, INT_MAX,
						    "jobs.finish: exit_code");

	if (lua_istable(L, 5)) {
		lua_getfield(L, 5, "phase"); // [.., phase] kept by arg 5
		fphase = lua_tostring(L, -1);
		lua_getfield(L, 5, "reason");
		freason = lua_tostring(L, -1);
		lua_getfield(L, 5, "hint");
		fhint = lua_tostring(L, -1);
		lua_pop(L, 3);
	}
	if (queue_for(L, luaL_checkstring(L, 1), &q, &err) != 0)
		return nv_lua_push_error(L, &err);
	int rc = nv_queue_finish(q, luaL_checkstring(L, 2),
				 luaL_checkstring(L, 3), code, fphase, freason,
				 fhint, luaL_optstring(L, 6, NULL), &err);
	if (rc)
		return nv_lua_push_error(L, &err);
	lua_pushboolean(L, 1);
	return 1;
}

/* jobs.pending_remote(home, backend, profile, name) -> json array */
static int l_jobs_pending_remote(lua_State *L)
{
	nv_queue *q = NULL;
	nv_err err;
	char *json = NULL;

	if (queue_for(L, luaL_checkstring(L, 1), &q, &err) != 0)
		return nv_lua_push_error(L, &err);
	int rc = nv_queue_pending_remote(q, luaL_checkstring(L, 2),
					 luaL_checkstring(L, 3),
					 luaL_checkstring(L, 4), &json, &err);
	if (rc)
		return nv_lua_push_error(L, &err);
	return push_owned(L, json);
}

/* jobs.launcher(spec_json) -> script | nil, err */
static int l_jobs_launcher(lua_State *L)
{
	const char *json = luaL_checkstring(L, 1);
	cJSON *spec = cJSON_Parse(json);
	nv_buf b;
	nv_err err;

	if (!spec)
		return luaL_argerror(L, 1, "malformed job spec JSON");
	nv_buf_init(&b, NV_LAUNCHER_MAX);
	int rc = nv_launcher_script(spec, &b, &err);
	cJSON_Delete(spec);
	if (rc) {
		nv_buf_free(&b);
		return nv_lua_push_error(L, &err);
	}
	char *s = b.data;
	if (!s) {
		lua_pushliteral(L, "");
		return 1;
	}
	return push_owned(L, s);
}

/* jobs.id_ok(id) -> true | false, why: the job id grammar (core/jobid.h) */
static int l_jobs_id_ok(lua_State *L)
{
	nv_err err;

	if (nv_job_id_check(luaL_checkstring(L, 1), &err) == 0) {
		lua_pushboolean(L, 1);
		return 1;
	}
	lua_pushboolean(L, 0);
	lua_pushstring(L, err.message);
	return 2;
}

/* name -> true | false, why */
static int l_jobs_env_name_ok(lua_State *L)
{
	const char *why = nv_launcher_env_name_problem(luaL_checkstring(L, 1));

	lua_pushboolean(L, why == NULL);
	if (!why)
		return 1;
	lua_pushstring(L, why);
	return 2;
}

/* jobs.ensure_agent(home) -> started: a follower whose agent died (killed,
 * machine asleep) starts a new one, which adopts the running jobs. */
static int l_jobs_ensure_agent(lua_State *L)
{
	nv_err err;
	int started = 0;

	if (nv_agent_ensure(luaL_checkstring(L, 1), &started, &err) != 0)
		return nv_lua_push_error(L, &err);
	lua_pushboolean(L, started);
	return 1;
}

/* jobs.revive_agent(home) -> started | nil, err: a read of the jobs finds
 * the agent dead while local jobs are queued or running (it was killed;
 * they would show `running` for ever): a new agent adopts or ends each
 * before this returns. false when there was nothing to do. */
static int l_jobs_revive_agent(lua_State *L)
{
	const char *home = luaL_checkstring(L, 1);
	int queued = 0, running = 0, started = 0;
	nv_queue *q;
	nv_err err;

	if (nv_agent_alive(home)) {
		lua_pushboolean(L, 0);
		return 1;
	}
	if (queue_for(L, home, &q, &err) != 0 ||
	    nv_queue_active(q, &queued, &running, &err) != 0)
		return nv_lua_push_error(L, &err);
	if (queued + running > 0 && nv_agent_ensure(home, &started, &err) != 0)
		return nv_lua_push_error(L, &err);
	lua_pushboolean(L, started);
	return 1;
}

static int l_jobs_agent_alive(lua_State *L)
{
	lua_pushboolean(L, nv_agent_alive(luaL_checkstring(L, 1)));
	return 1;
}

int luaopen_navette_jobs(lua_State *L)
{
	static const luaL_Reg fns[] = {
		{"submit", l_jobs_submit},
		{"get", l_jobs_get},
		{"list", l_jobs_list},
		{"cancel", l_jobs_cancel},
		{"launcher", l_jobs_launcher},
		{"env_name_ok", l_jobs_env_name_ok},
		{"id_ok", l_jobs_id_ok},
		{"agent_alive", l_jobs_agent_alive},
		{"ensure_agent", l_jobs_ensure_agent},
		{"revive_agent", l_jobs_revive_agent},
		{"set_remote", l_jobs_set_remote},
		{"phase", l_jobs_phase},
		{"finish", l_jobs_finish},
		{"pending_remote", l_jobs_pending_remote},
		{"submitted", l_jobs_submitted},
		{"interrupted", l_jobs_interrupted},
		{"submit_key", l_jobs_submit_key},
		{"fault_point", l_jobs_fault_point},
		{NULL, NULL}};
	luaL_newlib(L, fns);
	return 1;
}
