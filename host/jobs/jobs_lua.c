/* _navette.jobdb, the job database every backend records its jobs in (a
 * handle; rows come back as JSON text, decoded by lua/navette/jobview.lua),
 * and _navette.jobs, what is not the database: the local agent, the
 * launcher's rendering, job ids, submission keys. */
#include <limits.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <lauxlib.h>
#include <lua.h>
#include <openssl/crypto.h>
#include <openssl/sha.h>

#include "core/buf.h"
#include "core/clock.h"
#include "core/jobid.h"
#include "core/fault.h"
#include "core/nv_lua.h"
#include "jobs/agent.h"
#include "jobs/launcher.h"
#include "jobs/jobdb.h"
#include "jobs/secrets.h"
#include "creds/creds_lua.h"

/* _navette.jobdb.open(home) -> db | nil, err: the job database of a
 * home, for every backend (the local agent's jobs and the rows a remote
 * backend keeps of its own). A handle in liolib's manner: the userdata is
 * created closed, then the database opened into it, so a raise between
 * the two (the memory cap) never leaks it; close() twice is harmless and a
 * use after close raises. */
#define JOBDB_MT "navette.jobdb"
/* A malloc'd string on its way into Lua (see owned_new). */
#define OWNED_MT "navette.jobs.owned"

typedef struct {
	nv_jobdb *q; /* NULL: closed */
	char home[]; /* NUL-terminated, for the agent calls */
} jobdb;

static jobdb *check_jobdb(lua_State *L)
{
	jobdb *db = luaL_checkudata(L, 1, JOBDB_MT);

	nv_lua_check_open(L, db->q != NULL, "job database");
	return db;
}

static int l_jobdb_open(lua_State *L)
{
	jobdb *db = nv_lua_new_home_handle(L, 1, offsetof(jobdb, home),
					   JOBDB_MT); // [home, db]
	nv_err err;

	if (nv_jobdb_open(&db->q, db->home, &err) != 0)
		return nv_lua_push_error(L, &err); // (db collected closed)
	return 1;
}

/* db:close(): shared by __close and __gc. */
static int l_jobdb_close(lua_State *L)
{
	jobdb *db = luaL_checkudata(L, 1, JOBDB_MT);

	if (db->q) {
		nv_jobdb_close(db->q);
		db->q = NULL;
	}
	return 0;
}

static int l_jobdb_tostring(lua_State *L)
{
	jobdb *db = luaL_checkudata(L, 1, JOBDB_MT);

	return nv_lua_push_handle_name(L, "jobdb", db->q ? db->home : NULL);
}

/* A malloc'd string that a binding is about to push, held by a userdata
 * whose __gc frees it. The box is created before the call that allocates,
 * so a raise between the allocation and the push (the memory cap) frees
 * the string with the box (STYLE rule 4). */
typedef struct {
	char *s;
} owned;

static int owned_gc(lua_State *L)
{
	owned *o = luaL_checkudata(L, 1, OWNED_MT);

	free(o->s);
	o->s = NULL;
	return 0;
}

static owned *owned_new(lua_State *L)
{
	owned *o = lua_newuserdatauv(L, sizeof(*o), 0); // [.., box]

	o->s = NULL;
	luaL_setmetatable(L, OWNED_MT);
	return o;
}

/* The boxes' metatable, made by whichever module opens first. */
static void owned_register(lua_State *L)
{
	if (luaL_newmetatable(L, OWNED_MT)) { // [omt]
		lua_pushcfunction(L, owned_gc);
		lua_setfield(L, -2, "__gc");
	}
	lua_pop(L, 1);
}

/* Pushes the box's string (may raise: the box still owns it), then frees
 * it at once rather than at the next collection. */
static int owned_push(lua_State *L, owned *o)
{
	lua_pushstring(L, o->s ? o->s : ""); // [.., box, string]
	free(o->s);
	o->s = NULL;
	return 1;
}

/* The end of a call that filled the box (rc 0) -> its string | nil, err */
static int owned_result(lua_State *L, int rc, owned *o, const nv_err *err)
{
	if (rc)
		return nv_lua_push_error(L, err);
	return owned_push(L, o);
}

/* db:submit(id, project, profile, name, spec_json [, backend
 *   [, submit_key]]) -> true | nil, err (false in plan mode: nothing
 * written). submit_key: see nv_jobdb_insert_keyed. Starting a local job's
 * agent is the local backend's (jobs.ensure_agent). */
static int l_jobdb_submit(lua_State *L)
{
	jobdb *db = check_jobdb(L);
	const char *id = luaL_checkstring(L, 2);
	const char *project = luaL_checkstring(L, 3);
	const char *profile = luaL_checkstring(L, 4);
	const char *name = luaL_checkstring(L, 5);
	const char *spec = luaL_checkstring(L, 6);
	const char *backend = luaL_optstring(L, 7, "local");
	const char *submit_key = luaL_optstring(L, 8, NULL);
	nv_err err;

	if (nv_job_id_check(id, &err))
		return nv_lua_push_error(L, &err);
	if (nv_plan_mode(L)) {
		nv_plan_record(L, "jobs", "submit", id);
		lua_pushboolean(L, 0);
		return 1;
	}
	if (nv_jobdb_insert_keyed(db->q, id, project, profile, name, spec,
				  backend, submit_key, nv_now(), &err))
		return nv_lua_push_error(L, &err);
	nv_fault_point("submit-row-written", name);
	lua_pushboolean(L, 1);
	return 1;
}

/* Marks a step of job id's submission (argument 2) done -> true | nil,
 * err; in plan mode nothing is submitted, so nothing is marked. */
static int mark_submission(lua_State *L,
			   int (*mark)(nv_jobdb *q, const char *id,
				       nv_err *err))
{
	jobdb *db = check_jobdb(L);
	nv_err err;
	int rc;

	if (nv_plan_mode(L)) {
		lua_pushboolean(L, 1);
		return 1;
	}
	rc = mark(db->q, luaL_checkstring(L, 2), &err);
	return nv_lua_result(L, rc, &err);
}

/* db:submitted(id) -> true | nil, err: the submission of job id is
 * complete (a re-run no longer resumes it). */
static int l_jobdb_submitted(lua_State *L)
{
	return mark_submission(L, nv_jobdb_submitted);
}

/* db:audited(id) -> true | nil, err: the audit line of job id's
 * submission is written, so the agent may start it (nv_jobdb_audited). */
static int l_jobdb_audited(lua_State *L)
{
	return mark_submission(L, nv_jobdb_audited);
}

/* db:transaction(fn) -> what fn returns: fn's writes as one transaction
 * (nv_jobdb_begin), committed when it returns, undone when it raises
 * (the error is raised again). */
static int l_jobdb_transaction(lua_State *L)
{
	jobdb *db = check_jobdb(L);
	nv_err err;
	int n;

	luaL_checktype(L, 2, LUA_TFUNCTION);
	lua_settop(L, 2);
	if (nv_plan_mode(L)) {
		lua_call(L, 0, LUA_MULTRET);
		return lua_gettop(L) - 1;
	}
	if (nv_jobdb_begin(db->q, &err) != 0)
		return nv_lua_push_error(L, &err);
	if (lua_pcall(L, 0, LUA_MULTRET, 0) != LUA_OK) { // [db, err]
		nv_jobdb_rollback(db->q);
		return lua_error(L);
	}
	n = lua_gettop(L) - 1;
	if (nv_jobdb_commit(db->q, &err) != 0)
		return nv_lua_push_error(L, &err);
	return n;
}

/* db:interrupted(submit_key) -> json | false | nil, err: the job of an
 * unfinished submission of that key whose run is gone, if any, taken by
 * this process (nv_jobdb_interrupted). */
static int l_jobdb_interrupted(lua_State *L)
{
	jobdb *db = check_jobdb(L);
	const char *key = luaL_checkstring(L, 2);
	owned *json = owned_new(L); // [db, key, box]
	nv_err err;

	if (nv_jobdb_interrupted(db->q, key, &json->s, &err) != 0)
		return nv_lua_push_error(L, &err);
	if (!json->s) {
		lua_pushboolean(L, 0);
		return 1;
	}
	return owned_push(L, json);
}

/* db:get(id) -> json | nil, err (a unique prefix of an id is accepted) */
static int l_jobdb_get(lua_State *L)
{
	jobdb *db = check_jobdb(L);
	const char *id = luaL_checkstring(L, 2);
	owned *json = owned_new(L); // [db, id, box]
	nv_err err;
	int rc;

	rc = nv_jobdb_get_json(db->q, id, &json->s, &err);
	return owned_result(L, rc, json, &err);
}

/* db:list([limit]) -> json array | nil, err */
static int l_jobdb_list(lua_State *L)
{
	jobdb *db = check_jobdb(L);
	int limit =
		(int)nv_lua_optrange(L, 2, 1, INT_MAX, 50, "jobdb:list: limit");
	owned *json = owned_new(L); // [db, limit?, box]
	nv_err err;
	int rc;

	rc = nv_jobdb_list_json(db->q, limit, &json->s, &err);
	return owned_result(L, rc, json, &err);
}

/* db:run(run_id) -> run_id, json | nil, err: the ids of the jobs of one
 * `navette run` (a unique prefix of its id is enough), oldest first. */
static int l_jobdb_run(lua_State *L)
{
	jobdb *db = check_jobdb(L);
	const char *run = luaL_checkstring(L, 2);
	owned *full = owned_new(L); // [db, run, full]
	owned *json = owned_new(L); // [db, run, full, json]
	nv_err err;

	if (nv_jobdb_run_json(db->q, run, &full->s, &json->s, &err) != 0)
		return nv_lua_push_error(L, &err);
	lua_pushstring(L, full->s); // [.., run_id]
	lua_pushstring(L, json->s); // [.., run_id, json]
	return 2;
}

/* db:cancel(id) -> state | nil, err: a local job's cancel (the agent
 * stops a running one). */
static int l_jobdb_cancel(lua_State *L)
{
	jobdb *db = check_jobdb(L);
	nv_err err;
	int rc;
	char state[16] = "";

	if (nv_plan_mode(L)) {
		nv_plan_record(L, "jobs", "cancel", luaL_checkstring(L, 2));
		lua_pushliteral(L, "planned");
		return 1;
	}
	rc = nv_jobdb_cancel(db->q, luaL_checkstring(L, 2), state, &err);
	return nv_lua_string_result(L, rc, state, &err);
}

/* db:delete(id) -> true | nil, err: a finished job's row and phases
 * (`navette gc`; its folder is the caller's to remove first). */
static int l_jobdb_delete(lua_State *L)
{
	jobdb *db = check_jobdb(L);
	nv_err err;
	int rc;

	if (nv_plan_mode(L)) {
		nv_plan_record(L, "jobs", "delete", luaL_checkstring(L, 2));
		lua_pushboolean(L, 1);
		return 1;
	}
	rc = nv_jobdb_delete(db->q, luaL_checkstring(L, 2), &err);
	return nv_lua_result(L, rc, &err);
}

/* The calls a remote backend's follower makes on the rows of its jobs
 * (the agent makes the same for local ones); none raises for an expected
 * failure. */

/* db:set_remote(id, remote_id|nil, state|nil) -> true | nil, err */
static int l_jobdb_set_remote(lua_State *L)
{
	jobdb *db = check_jobdb(L);
	nv_err err;
	int rc;

	rc = nv_jobdb_set_remote(db->q, luaL_checkstring(L, 2),
				 luaL_optstring(L, 3, NULL),
				 luaL_optstring(L, 4, NULL), &err);
	return nv_lua_result(L, rc, &err);
}

/* db:phase(id, phase, at) -> true | nil, err */
static int l_jobdb_phase(lua_State *L)
{
	jobdb *db = check_jobdb(L);
	const char *id = luaL_checkstring(L, 2);
	const char *phase = luaL_checkstring(L, 3);
	double at = nv_lua_checkrangef(L, 4, 0, NV_TIME_MAX, "jobdb:phase: at");
	nv_err err;
	int rc;

	rc = nv_jobdb_phase(db->q, id, phase, at, &err);
	return nv_lua_result(L, rc, &err);
}

/* db:finish(id, state, exit_code|nil, failure|nil, record_url|nil) with
 * failure = {phase, reason, hint} -> true | nil, err */
static int l_jobdb_finish(lua_State *L)
{
	jobdb *db = check_jobdb(L);
	nv_err err;
	int rc;
	const char *fphase = NULL, *freason = NULL, *fhint = NULL;
	/* (the queue takes -1001 for none) */
	int code = lua_isnoneornil(L, 4)
			   ? -1001
			   : (int)nv_lua_checkrange(L, 4, -1000, INT_MAX,
						    "jobdb:finish: exit_code");

	if (lua_istable(L, 5)) {
		lua_getfield(L, 5, "phase"); // [.., phase] kept by arg 5
		fphase = lua_tostring(L, -1);
		lua_getfield(L, 5, "reason");
		freason = lua_tostring(L, -1);
		lua_getfield(L, 5, "hint");
		fhint = lua_tostring(L, -1);
		lua_pop(L, 3);
	}
	rc = nv_jobdb_finish(db->q, luaL_checkstring(L, 2),
			     luaL_checkstring(L, 3), code, fphase, freason,
			     fhint, luaL_optstring(L, 6, NULL), &err);
	return nv_lua_result(L, rc, &err);
}

/* db:pending_remote(backend, profile, name) -> json array | nil, err */
static int l_jobdb_pending_remote(lua_State *L)
{
	jobdb *db = check_jobdb(L);
	const char *backend = luaL_checkstring(L, 2);
	const char *profile = luaL_checkstring(L, 3);
	const char *name = luaL_checkstring(L, 4);
	owned *json = owned_new(L); // [db, backend, profile, name, box]
	nv_err err;
	int rc;

	rc = nv_jobdb_pending_remote(db->q, backend, profile, name, &json->s,
				     &err);
	return owned_result(L, rc, json, &err);
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

/* jobs.launcher(spec_json) -> script | nil, err */
static int l_jobs_launcher(lua_State *L)
{
	const char *json = luaL_checkstring(L, 1);
	owned *script = owned_new(L); // [spec_json, box]
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
	script->s = b.data; /* (NULL: empty) the box owns it from here */
	return owned_push(L, script);
}

/* jobs.array_launcher(specs_json) -> script | nil, err: one launcher for
 * the tasks of a job array (launcher.h) */
static int l_jobs_array_launcher(lua_State *L)
{
	const char *json = luaL_checkstring(L, 1);
	owned *script = owned_new(L); // [specs_json, box]
	cJSON *specs = cJSON_Parse(json);
	nv_buf b;
	nv_err err;
	int rc;

	if (!specs)
		return luaL_argerror(L, 1, "malformed job specs JSON");
	nv_buf_init(&b, NV_LAUNCHER_ARRAY_MAX);
	rc = nv_launcher_array_script(specs, &b, &err);
	cJSON_Delete(specs);
	if (rc) {
		nv_buf_free(&b);
		return nv_lua_push_error(L, &err);
	}
	script->s = b.data; /* the box owns it from here */
	return owned_push(L, script);
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

/* jobs.secrets_dir(home, id) -> path | nil, err: the job's secrets
 * folder, made empty (secrets.h: a tmpfs where there is one). */
static int l_jobs_secrets_dir(lua_State *L)
{
	const char *home = luaL_checkstring(L, 1);
	const char *id = luaL_checkstring(L, 2);
	char root[4096], dir[4200];
	nv_err err;
	int rc;

	rc = nv_job_secrets_root(home, root, sizeof(root), &err) != 0 ||
	     nv_job_secrets_dir_make(root, id, dir, sizeof(dir), &err) != 0;
	return nv_lua_string_result(L, rc, dir, &err);
}

/* jobs.secret_write(dir, name, handle) -> true | nil, err: the file
 * DIR/NAME (0400) holding the credential's value as a job reads it. The
 * value goes from the handle to the file in C. */
static int l_jobs_secret_write(lua_State *L)
{
	const char *dir = luaL_checkstring(L, 1);
	const char *name = luaL_checkstring(L, 2);
	const nv_secret *s = nv_creds_check(L, 3);
	nv_err err;
	int rc;

	rc = nv_job_secret_write(dir, name, s, &err);
	return nv_lua_result(L, rc, &err);
}

/* jobs.secret_seal(handle, path) -> password | nil, err: the credential's
 * value encrypted into path for a node (secrets.h), and the password
 * that decrypts it, which goes into the job's launcher only. */
static int l_jobs_secret_seal(lua_State *L)
{
	const nv_secret *s = nv_creds_check(L, 1);
	const char *path = luaL_checkstring(L, 2);
	char pass[2 * NV_JOB_SECRET_PASS_BYTES + 1];
	nv_err err;

	if (nv_job_secret_seal(s, path, pass, &err) != 0)
		return nv_lua_push_error(L, &err);
	lua_pushstring(L, pass);
	OPENSSL_cleanse(pass, sizeof(pass));
	return 1;
}

/* jobs.secrets_roots(home) -> {path...}: the folders of local jobs'
 * secrets folders that exist (none is made). */
static int l_jobs_secrets_roots(lua_State *L)
{
	char roots[3][4096];
	int n = 0;

	nv_job_secrets_roots(luaL_checkstring(L, 1), roots, 3, &n);
	lua_createtable(L, n, 0); // [.., list]
	for (int i = 0; i < n; i++) {
		lua_pushstring(L, roots[i]);
		lua_rawseti(L, -2, i + 1);
	}
	return 1;
}

/* jobs.secrets_remove(dir, id) -> true | nil, err */
static int l_jobs_secrets_remove(lua_State *L)
{
	nv_err err;
	int rc;

	rc = nv_job_secrets_remove(luaL_checkstring(L, 1),
				   luaL_optstring(L, 2, NULL), &err);
	return nv_lua_result(L, rc, &err);
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

/* jobs.revive_agent(db) -> started | nil, err: a read of the jobs finds
 * the agent dead while local jobs are queued or running (it was killed;
 * they would show `running` for ever): a new agent adopts or ends each
 * before this returns. false when there was nothing to do. */
static int l_jobs_revive_agent(lua_State *L)
{
	jobdb *db = check_jobdb(L);
	int queued = 0, running = 0, started = 0;
	nv_err err;

	if (nv_agent_alive(db->home)) {
		lua_pushboolean(L, 0);
		return 1;
	}
	if (nv_jobdb_active(db->q, &queued, &running, &err) != 0)
		return nv_lua_push_error(L, &err);
	if (queued + running > 0 &&
	    nv_agent_ensure(db->home, &started, &err) != 0)
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
		{"launcher", l_jobs_launcher},
		{"array_launcher", l_jobs_array_launcher},
		{"env_name_ok", l_jobs_env_name_ok},
		{"secrets_dir", l_jobs_secrets_dir},
		{"secret_write", l_jobs_secret_write},
		{"secrets_remove", l_jobs_secrets_remove},
		{"secret_seal", l_jobs_secret_seal},
		{"secrets_roots", l_jobs_secrets_roots},
		{"id_ok", l_jobs_id_ok},
		{"agent_alive", l_jobs_agent_alive},
		{"ensure_agent", l_jobs_ensure_agent},
		{"revive_agent", l_jobs_revive_agent},
		{"submit_key", l_jobs_submit_key},
		{"fault_point", l_jobs_fault_point},
		{NULL, NULL}};

	owned_register(L);
	luaL_newlib(L, fns);
	return 1;
}

int luaopen_navette_jobdb(lua_State *L)
{
	static const luaL_Reg methods[] = {
		{"submit", l_jobdb_submit},
		{"submitted", l_jobdb_submitted},
		{"audited", l_jobdb_audited},
		{"transaction", l_jobdb_transaction},
		{"interrupted", l_jobdb_interrupted},
		{"get", l_jobdb_get},
		{"list", l_jobdb_list},
		{"run", l_jobdb_run},
		{"cancel", l_jobdb_cancel},
		{"delete", l_jobdb_delete},
		{"set_remote", l_jobdb_set_remote},
		{"phase", l_jobdb_phase},
		{"finish", l_jobdb_finish},
		{"pending_remote", l_jobdb_pending_remote},
		{"close", l_jobdb_close},
		{NULL, NULL}};
	static const luaL_Reg meta[] = {{"__gc", l_jobdb_close},
					{"__close", l_jobdb_close},
					{"__tostring", l_jobdb_tostring},
					{NULL, NULL}};
	static const luaL_Reg fns[] = {{"open", l_jobdb_open}, {NULL, NULL}};

	owned_register(L); /* (either module may come first) */
	nv_lua_new_handle_type(L, JOBDB_MT, meta, methods);
	luaL_newlib(L, fns); // [jobdb]
	return 1;
}
