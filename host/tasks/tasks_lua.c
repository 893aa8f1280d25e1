/* _navette.tasks: the natives of scheduled tasks for lua/navette/task.lua
 * and `navette maintain` (never a recipe's):
 *   tasks.parse(text) -> canonical, {kind, every, hour, minute, weekday}
 *                        | nil, err
 *   tasks.due(schedule, next_due, now) -> due, slot, missed
 *   tasks.after_run(schedule, slot, ran) -> next_due
 *   tasks.next(schedule, anchor, after) -> the first slot after `after`
 *   tasks.open(home [, read_only]) -> db | nil, err   (tasks.db, a handle)
 *     db:get(project, recipe, name) -> row | false | nil, err
 *     db:put(row) -> true | false (plan mode: nothing written) | nil, err
 *     db:list([project]) -> {row...} | nil, err
 *     db:close()
 *   tasks.lock(home) -> lock | nil, err   (maintain.lock; lock:close())
 *   tasks.service(argv, timeout_s) -> status, output | nil, err
 *   tasks.uid() -> the user id (launchctl's gui/UID domain)
 *   tasks.program() -> the navette program's absolute path | nil, err
 * Handles are made in liolib's manner: the userdata is created closed and
 * the resource opened into it, so a raise between the two never leaks;
 * close twice is harmless and a use after close raises. */
#include <limits.h>
#include <stddef.h>
#include <math.h>
#include <string.h>
#include <unistd.h>

#include <lauxlib.h>
#include <lua.h>

#include "core/agent_program.h"
#include "core/nv_lua.h"
#include "tasks/schedule.h"
#include "tasks/service.h"
#include "tasks/taskdb.h"

#define TASKDB_MT "navette.taskdb"
#define LOCK_MT   "navette.tasks.lock"

/* A schedule argument; malformed text raises (trusted callers validate
 * what a recipe wrote first, with tasks.parse). */
static void check_schedule(lua_State *L, int idx, nv_schedule *s)
{
	size_t len;
	const char *text = luaL_checklstring(L, idx, &len);
	nv_err err;

	luaL_argcheck(L, strlen(text) == len, idx, "schedule holds a NUL");
	if (nv_schedule_parse(s, text, &err) != 0)
		luaL_argerror(L, idx, err.message);
}

static int l_tasks_parse(lua_State *L)
{
	size_t len;
	const char *text = luaL_checklstring(L, 1, &len);
	char canonical[NV_SCHEDULE_TEXT_MAX + 1];
	static const char *const kinds[] = {"", "every", "daily", "weekly"};
	nv_schedule s;
	nv_err err;

	if (strlen(text) != len) {
		nv_err_set(&err, NV_EINVAL, NULL, "the schedule holds a NUL");
		return nv_lua_push_error(L, &err);
	}
	if (nv_schedule_parse(&s, text, &err) != 0)
		return nv_lua_push_error(L, &err);
	nv_schedule_format(&s, canonical, sizeof(canonical));
	lua_pushstring(L, canonical); // [text, canonical]
	lua_createtable(L, 0, 5);     // [text, canonical, info]
	lua_pushstring(L, kinds[s.kind]);
	lua_setfield(L, -2, "kind");
	if (s.kind == NV_SCHEDULE_EVERY) {
		lua_pushinteger(L, (lua_Integer)s.every_s);
		lua_setfield(L, -2, "every");
	} else {
		lua_pushinteger(L, s.hour);
		lua_setfield(L, -2, "hour");
		lua_pushinteger(L, s.minute);
		lua_setfield(L, -2, "minute");
	}
	if (s.kind == NV_SCHEDULE_WEEKLY) {
		lua_pushinteger(L, s.weekday);
		lua_setfield(L, -2, "weekday");
	}
	return 2;
}

static int l_tasks_due(lua_State *L)
{
	nv_schedule s;
	double slot;
	long missed;
	int due;

	check_schedule(L, 1, &s);
	due = nv_schedule_due(
		&s, nv_lua_checkrangef(L, 2, -1, 253402300799.0, "next_due"),
		nv_lua_checkrangef(L, 3, 0, 253402300799.0, "now"), &slot,
		&missed);
	lua_pushboolean(L, due);
	lua_pushnumber(L, slot);
	lua_pushinteger(L, missed);
	return 3;
}

static int push_time(lua_State *L, double t)
{
	if (t < 0)
		lua_pushnil(L);
	else
		lua_pushnumber(L, t);
	return 1;
}

static int l_tasks_after_run(lua_State *L)
{
	nv_schedule s;

	check_schedule(L, 1, &s);
	return push_time(
		L,
		nv_schedule_after_run(
			&s, nv_lua_checkrangef(L, 2, 0, 253402300799.0, "slot"),
			nv_lua_checkrangef(L, 3, 0, 253402300799.0, "ran")));
}

static int l_tasks_next(lua_State *L)
{
	nv_schedule s;

	check_schedule(L, 1, &s);
	return push_time(
		L,
		nv_schedule_next(
			&s,
			nv_lua_checkrangef(L, 2, 0, 253402300799.0, "anchor"),
			nv_lua_checkrangef(L, 3, 0, 253402300799.0, "after")));
}

/* ---- the database ------------------------------------------------------ */

typedef struct {
	nv_taskdb *db; /* NULL: closed */
	char home[];
} taskdb;

static taskdb *check_taskdb(lua_State *L)
{
	taskdb *t = luaL_checkudata(L, 1, TASKDB_MT);

	nv_lua_check_open(L, t->db != NULL, "task database");
	return t;
}

static int l_tasks_open(lua_State *L)
{
	int read_only = lua_toboolean(L, 2);
	taskdb *t = nv_lua_new_home_handle(L, 1, offsetof(taskdb, home),
					   TASKDB_MT); // [.., db]
	nv_err err;

	if (nv_taskdb_open(&t->db, t->home, read_only, &err) != 0)
		return nv_lua_push_error(L, &err); // (db collected closed)
	return 1;
}

static int l_taskdb_close(lua_State *L)
{
	taskdb *t = luaL_checkudata(L, 1, TASKDB_MT);

	if (t->db) {
		nv_taskdb_close(t->db);
		t->db = NULL;
	}
	return 0;
}

static int l_taskdb_tostring(lua_State *L)
{
	taskdb *t = luaL_checkudata(L, 1, TASKDB_MT);

	return nv_lua_push_handle_name(L, "taskdb", t->db ? t->home : NULL);
}

static void push_row(lua_State *L, const nv_task_state *s)
{
	lua_createtable(L, 0, 12); // [.., row]
	lua_pushstring(L, s->project);
	lua_setfield(L, -2, "project");
	lua_pushstring(L, s->recipe);
	lua_setfield(L, -2, "recipe");
	lua_pushstring(L, s->name);
	lua_setfield(L, -2, "name");
	lua_pushstring(L, s->schedule);
	lua_setfield(L, -2, "schedule");
	lua_pushnumber(L, s->last_run);
	lua_setfield(L, -2, "last_run");
	lua_pushnumber(L, s->last_slot);
	lua_setfield(L, -2, "last_slot");
	lua_pushnumber(L, s->duration);
	lua_setfield(L, -2, "duration");
	lua_pushstring(L, s->result);
	lua_setfield(L, -2, "result");
	lua_pushstring(L, s->message);
	lua_setfield(L, -2, "message");
	lua_pushnumber(L, s->next_due);
	lua_setfield(L, -2, "next_due");
	lua_pushinteger(L, (lua_Integer)s->runs);
	lua_setfield(L, -2, "runs");
	lua_pushinteger(L, (lua_Integer)s->failures);
	lua_setfield(L, -2, "failures");
}

/* row[key] as a string that fits cap bytes (a longer message is cut). */
static void row_text(lua_State *L, const char *key, char *out, size_t cap,
		     int cut)
{
	size_t len;
	const char *v;

	lua_getfield(L, 2, key); // [db, row, v]
	v = lua_isnil(L, -1) ? "" : lua_tolstring(L, -1, &len);
	if (!v)
		luaL_error(L, "task state: %s must be a string", key);
	if (!lua_isnil(L, -1) && (strlen(v) != len || (!cut && len >= cap)))
		luaL_error(L, "task state: %s is too long or holds a NUL", key);
	nv_task_copy_text(out, cap, v);
	lua_pop(L, 1);
}

static double row_time(lua_State *L, const char *key)
{
	double v;

	lua_getfield(L, 2, key); // [db, row, v]
	v = lua_isnil(L, -1)
		    ? 0
		    : nv_lua_checkrangef(L, -1, 0, 253402300799.0, key);
	lua_pop(L, 1);
	return v;
}

static long long row_count(lua_State *L, const char *key)
{
	long long v;

	lua_getfield(L, 2, key); // [db, row, v]
	v = lua_isnil(L, -1)
		    ? 0
		    : (long long)nv_lua_checkrange(L, -1, 0, LLONG_MAX, key);
	lua_pop(L, 1);
	return v;
}

static int l_taskdb_get(lua_State *L)
{
	taskdb *t = check_taskdb(L);
	const char *project = luaL_checkstring(L, 2);
	const char *recipe = luaL_checkstring(L, 3);
	const char *name = luaL_checkstring(L, 4);
	nv_task_state *s = lua_newuserdatauv(L, sizeof(*s), 0); // (freed by GC)
	int found;
	nv_err err;

	if (nv_taskdb_get(t->db, project, recipe, name, s, &found, &err) != 0)
		return nv_lua_push_error(L, &err);
	if (!found) {
		lua_pushboolean(L, 0);
		return 1;
	}
	push_row(L, s);
	return 1;
}

static int l_taskdb_put(lua_State *L)
{
	taskdb *t = check_taskdb(L);
	nv_task_state *s;
	nv_err err;
	int rc;

	luaL_checktype(L, 2, LUA_TTABLE);
	if (nv_plan_mode(L)) {
		lua_pushboolean(L, 0);
		return 1;
	}
	s = lua_newuserdatauv(L, sizeof(*s), 0); // [db, row, s] (GC frees)
	lua_insert(L, 3);                        // (row stays at 2)
	memset(s, 0, sizeof(*s));
	row_text(L, "project", s->project, sizeof(s->project), 0);
	row_text(L, "recipe", s->recipe, sizeof(s->recipe), 0);
	row_text(L, "name", s->name, sizeof(s->name), 0);
	row_text(L, "schedule", s->schedule, sizeof(s->schedule), 0);
	row_text(L, "result", s->result, sizeof(s->result), 0);
	row_text(L, "message", s->message, sizeof(s->message), 1);
	s->last_run = row_time(L, "last_run");
	s->last_slot = row_time(L, "last_slot");
	s->duration = row_time(L, "duration");
	s->next_due = row_time(L, "next_due");
	s->runs = row_count(L, "runs");
	s->failures = row_count(L, "failures");
	rc = nv_taskdb_put(t->db, s, &err);
	return nv_lua_result(L, rc, &err);
}

static int list_row(const nv_task_state *s, void *payload)
{
	lua_State *L = payload;

	push_row(L, s); // [.., list, row]
	lua_rawseti(L, -2, (lua_Integer)lua_rawlen(L, -2) + 1); // [.., list]
	return 0;
}

static int l_taskdb_list(lua_State *L)
{
	taskdb *t = check_taskdb(L);
	const char *project = luaL_optstring(L, 2, NULL);
	nv_err err;

	lua_newtable(L); // [db, (project), list]
	if (nv_taskdb_each(t->db, project, list_row, L, &err) != 0)
		return nv_lua_push_error(L, &err);
	return 1;
}

/* ---- the lock ------------------------------------------------------------ */

typedef struct {
	int fd; /* -1: released */
} task_lock;

static int l_tasks_lock(lua_State *L)
{
	const char *home = luaL_checkstring(L, 1);
	task_lock *k = lua_newuserdatauv(L, sizeof(*k), 0); // [home, lock]
	long holder = 0;
	nv_err err;

	k->fd = -1;
	luaL_setmetatable(L, LOCK_MT);
	if (nv_taskdb_lock(home, &k->fd, &holder, &err) != 0) {
		nv_lua_push_error(L, &err); // [home, lock, nil, err]
		if (holder > 0) {
			lua_pushinteger(L, holder);
			lua_setfield(L, -2, "holder");
		}
		return 2;
	}
	return 1;
}

static int l_lock_close(lua_State *L)
{
	task_lock *k = luaL_checkudata(L, 1, LOCK_MT);

	nv_taskdb_unlock(k->fd);
	k->fd = -1;
	return 0;
}

static int l_lock_tostring(lua_State *L)
{
	task_lock *k = luaL_checkudata(L, 1, LOCK_MT);

	lua_pushstring(L, k->fd >= 0 ? "maintain lock (held)"
				     : "maintain lock (released)");
	return 1;
}

/* ---- the service manager ------------------------------------------------- */

static int l_tasks_service(lua_State *L)
{
	const char *argv[NV_SERVICE_ARGS_MAX + 1];
	char *output;
	int n, status;
	double timeout;
	nv_err err;

	luaL_checktype(L, 1, LUA_TTABLE);
	timeout = nv_lua_optrangef(L, 2, 1, 600, 30, "tasks.service: timeout");
	n = (int)lua_rawlen(L, 1);
	luaL_argcheck(L, n >= 1 && n <= NV_SERVICE_ARGS_MAX, 1,
		      "1 to 16 arguments");
	luaL_checkstack(L, n + 2, "tasks.service: arguments");
	for (int i = 0; i < n; i++) {
		lua_rawgeti(L, 1, i + 1); // [argv, (timeout), .., arg]
		argv[i] = lua_tostring(L, -1);
		luaL_argcheck(L, argv[i] != NULL, 1, "arguments are strings");
	}
	argv[n] = NULL;
	if (nv_exec_forbidden(L)) {
		nv_err_set(&err, NV_ENOTRUN, NULL,
			   "%s not run (plan mode or a read-only command)",
			   argv[0]);
		return nv_lua_push_error(L, &err);
	}
	/* the output lives in a userdata: nothing leaks if a push raises */
	output = lua_newuserdatauv(L, NV_SERVICE_OUTPUT_MAX, 0);
	if (nv_service_run(argv, timeout, &status, output,
			   NV_SERVICE_OUTPUT_MAX, &err) != 0)
		return nv_lua_push_error(L, &err);
	lua_pushinteger(L, status);
	lua_pushstring(L, output);
	return 2;
}

static int l_tasks_uid(lua_State *L)
{
	lua_pushinteger(L, (lua_Integer)getuid());
	return 1;
}

static int l_tasks_program(lua_State *L)
{
	char path[NV_AGENT_PROGRAM_MAX];
	nv_err err;
	int rc;

	rc = nv_agent_program(path, sizeof(path), &err);
	return nv_lua_string_result(L, rc, path, &err);
}

int luaopen_navette_tasks(lua_State *L)
{
	static const luaL_Reg db_methods[] = {{"get", l_taskdb_get},
					      {"put", l_taskdb_put},
					      {"list", l_taskdb_list},
					      {"close", l_taskdb_close},
					      {NULL, NULL}};
	static const luaL_Reg db_meta[] = {{"__gc", l_taskdb_close},
					   {"__close", l_taskdb_close},
					   {"__tostring", l_taskdb_tostring},
					   {NULL, NULL}};
	static const luaL_Reg lock_methods[] = {{"close", l_lock_close},
						{NULL, NULL}};
	static const luaL_Reg lock_meta[] = {{"__gc", l_lock_close},
					     {"__close", l_lock_close},
					     {"__tostring", l_lock_tostring},
					     {NULL, NULL}};
	static const luaL_Reg fns[] = {
		{"parse", l_tasks_parse},         {"due", l_tasks_due},
		{"after_run", l_tasks_after_run}, {"next", l_tasks_next},
		{"open", l_tasks_open},           {"lock", l_tasks_lock},
		{"service", l_tasks_service},     {"uid", l_tasks_uid},
		{"program", l_tasks_program},     {NULL, NULL}};

	nv_lua_new_handle_type(L, TASKDB_MT, db_meta, db_methods);
	nv_lua_new_handle_type(L, LOCK_MT, lock_meta, lock_methods);
	luaL_newlib(L, fns); // [tasks]
	return 1;
}
