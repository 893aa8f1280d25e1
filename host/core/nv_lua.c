/* The code of nv_lua.h, what every binding of a primitive uses: error
 * objects and results, plan mode and the runtime's folders (read from the
 * runtime that owns the state), the metatables of handles, and checks of
 * the values a binding takes from Lua.
 * Every number a binding turns into a C size, count, duration, mode or
 * port goes through here: a Lua number may be a float as large as 1e308,
 * an infinity or a NaN, and converting such a value to a C integer type
 * is undefined behaviour in C. */
#include "core/nv_lua.h"

#include <stdio.h>
#include <string.h>

#include "core/clock.h"
#include "core/runtime.h"
#include "core/watchdog.h"

/* ---- errors, plan mode, the runtime's folders -------------------------- */

int nv_lua_push_error(lua_State *L, const nv_err *err)
{
	return nv_lua_push_error_as(L, nv_err_code_name(err->code), err);
}

int nv_lua_push_error_as(lua_State *L, const char *code, const nv_err *err)
{
	lua_pushnil(L);
	lua_createtable(L, 0, 3);
	lua_pushstring(L, code);
	lua_setfield(L, -2, "code");
	lua_pushstring(L, err->message);
	lua_setfield(L, -2, "message");
	if (err->hint[0]) {
		lua_pushstring(L, err->hint);
		lua_setfield(L, -2, "hint");
	}
	return 2; // [nil, err]
}

int nv_lua_result(lua_State *L, int rc, const nv_err *err)
{
	if (rc)
		return nv_lua_push_error(L, err);
	lua_pushboolean(L, 1);
	return 1;
}

int nv_lua_string_result(lua_State *L, int rc, const char *value,
			 const nv_err *err)
{
	if (rc)
		return nv_lua_push_error(L, err);
	lua_pushstring(L, value);
	return 1;
}

int nv_lua_planned(lua_State *L, const char *primitive, const char *action,
		   const char *detail)
{
	nv_plan_record(L, primitive, action, detail);
	lua_pushboolean(L, 1);
	return 1;
}

int nv_lua_planned_nil(lua_State *L, const char *primitive, const char *action,
		       const char *detail)
{
	nv_plan_record(L, primitive, action, detail);
	lua_pushnil(L);
	lua_pushliteral(L, "planned");
	return 2;
}

bool nv_plan_mode(lua_State *L)
{
	navette_runtime *rt = nv_runtime_of(L);
	return rt && rt->plan;
}

double nv_recipe_clock_stop(lua_State *L)
{
	navette_runtime *rt = nv_runtime_of(L);
	double left;

	if (!rt || rt->deadline <= 0)
		return 0;
	left = rt->deadline - nv_monotonic();
	if (left < 0.001)
		left = 0.001; /* past it: the hook stops the recipe on resume */
	nv_watchdog_pause(rt->watchdog);
	rt->deadline = 0;
	return left;
}

void nv_recipe_clock_resume(lua_State *L, double left)
{
	navette_runtime *rt = nv_runtime_of(L);

	if (!rt || left <= 0)
		return;
	rt->deadline = nv_deadline_after(left);
	nv_watchdog_resume(rt->watchdog, rt->deadline + 1.0);
}

bool nv_checking_mode(lua_State *L)
{
	navette_runtime *rt = nv_runtime_of(L);
	return rt && rt->plan && rt->checking && !rt->no_exec;
}

const char *nv_mode(lua_State *L)
{
	navette_runtime *rt = nv_runtime_of(L);
	if (!rt || !rt->plan)
		return "run";
	return rt->checking ? "check" : "plan";
}

bool nv_project_trusted(lua_State *L)
{
	navette_runtime *rt = nv_runtime_of(L);
	return rt && rt->trusted;
}

bool nv_exec_forbidden(lua_State *L)
{
	navette_runtime *rt = nv_runtime_of(L);
	return rt && (rt->no_exec || (rt->plan && !rt->checking));
}

void nv_plan_record(lua_State *L, const char *primitive, const char *action,
		    const char *detail)
{
	navette_runtime *rt = nv_runtime_of(L);

	lua_rawgeti(L, LUA_REGISTRYINDEX, rt->plan_ref); // [plan]
	lua_createtable(L, 0, 3);                        // [plan, entry]
	lua_pushstring(L, primitive);
	lua_setfield(L, -2, "primitive");
	lua_pushstring(L, action);
	lua_setfield(L, -2, "action");
	lua_pushstring(L, detail ? detail : "");
	lua_setfield(L, -2, "detail");
	lua_rawseti(L, -2, (lua_Integer)lua_rawlen(L, -2) + 1);
	lua_pop(L, 1);
}

const char *nv_lua_recipe_dir(lua_State *L)
{
	navette_runtime *rt = nv_runtime_of(L);
	return rt ? rt->recipe_dir : "";
}

const char *nv_lua_home(lua_State *L)
{
	return nv_runtime_of(L)->home;
}

/* ---- handles ----------------------------------------------------------- */

void nv_lua_new_handle_type(lua_State *L, const char *mt, const luaL_Reg *meta,
			    const luaL_Reg *methods)
{
	luaL_newmetatable(L, mt); // [mt]
	luaL_setfuncs(L, meta, 0);
	if (methods) {
		lua_newtable(L); // [mt, methods]
		luaL_setfuncs(L, methods, 0);
		lua_setfield(L, -2, "__index");
	}
	lua_pop(L, 1); // []
}

void nv_lua_new_box_type(lua_State *L, const char *mt, lua_CFunction gc)
{
	luaL_newmetatable(L, mt); // [mt]
	lua_pushcfunction(L, gc);
	lua_setfield(L, -2, "__gc");
	lua_pop(L, 1); // []
}

void nv_lua_check_open(lua_State *L, bool open, const char *what)
{
	if (!open)
		luaL_error(L, "attempt to use a closed %s", what);
}

int nv_lua_push_handle_name(lua_State *L, const char *name, const char *detail)
{
	lua_pushfstring(L, "%s (%s)", name, detail ? detail : "closed");
	return 1;
}

void *nv_lua_new_home_handle(lua_State *L, int idx, size_t size, const char *mt)
{
	size_t len;
	const char *home = luaL_checklstring(L, idx, &len);
	char *box;

	luaL_argcheck(L, strlen(home) == len, idx, "home holds a NUL");
	box = lua_newuserdatauv(L, size + len + 1, 0); // [.., box]
	memset(box, 0, size);
	memcpy(box + size, home, len + 1);
	luaL_setmetatable(L, mt);
	return box;
}

void nv_lua_push_strings(lua_State *L, const char *const *list)
{
	lua_newtable(L); // [list]
	for (int i = 0; list[i]; i++) {
		lua_pushstring(L, list[i]);
		lua_rawseti(L, -2, i + 1);
	}
}

/* ---- numbers from Lua -------------------------------------------------- */

/* Raises "WHAT must be ... (got V)" for the value at idx. */
static int range_error(lua_State *L, int idx, const char *what,
		       const char *range)
{
	char got[72];

	/* (lua_pushfstring takes no precision: the value is cut here) */
	if (lua_type(L, idx) == LUA_TNUMBER || lua_type(L, idx) == LUA_TSTRING)
		snprintf(got, sizeof(got), "%.64s",
			 luaL_tolstring(L, idx, NULL)); // [.., text]
	else
		snprintf(got, sizeof(got), "a %s", luaL_typename(L, idx));
	return luaL_error(L, "%s must be %s (got %s)", what, range, got);
}

lua_Integer nv_lua_checkrange(lua_State *L, int idx, lua_Integer min,
			      lua_Integer max, const char *what)
{
	int exact = 0;
	/* lua_tointegerx converts a float only when it has an exact integer
	 * value inside lua_Integer's range: NaN, inf, 2^63 and 2.5 fail */
	lua_Integer v = lua_tointegerx(L, idx, &exact);

	if (!exact || v < min || v > max) {
		char range[96];

		snprintf(range, sizeof(range),
			 "a whole number from %lld to %lld", (long long)min,
			 (long long)max);
		range_error(L, idx, what, range);
	}
	return v;
}

lua_Integer nv_lua_optrange(lua_State *L, int idx, lua_Integer min,
			    lua_Integer max, lua_Integer dflt, const char *what)
{
	if (lua_isnoneornil(L, idx))
		return dflt;
	return nv_lua_checkrange(L, idx, min, max, what);
}

lua_Number nv_lua_checkrangef(lua_State *L, int idx, lua_Number min,
			      lua_Number max, const char *what)
{
	int isnum = 0;
	lua_Number v = lua_tonumberx(L, idx, &isnum);

	/* (NaN fails every comparison, so it fails this one) */
	if (!isnum || !(v >= min && v <= max)) {
		char range[96];

		snprintf(range, sizeof(range), "a number from %.15g to %.15g",
			 (double)min, (double)max);
		range_error(L, idx, what, range);
	}
	return v;
}

lua_Number nv_lua_optrangef(lua_State *L, int idx, lua_Number min,
			    lua_Number max, lua_Number dflt, const char *what)
{
	if (lua_isnoneornil(L, idx))
		return dflt;
	return nv_lua_checkrangef(L, idx, min, max, what);
}
