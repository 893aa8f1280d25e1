/* What every Lua binding of a primitive uses from the core: error objects
 * and results, plan mode, the recipe's location, handles' metatables and
 * checked numbers. Bindings live in one file per primitive
 * (host/<prim>/<prim>_lua.c) ending in luaopen_navette_<prim>. */
#ifndef NV_LUA_H
#define NV_LUA_H

#include <stdbool.h>

#include <lua.h>
#include <lauxlib.h>

#include "core/nv_err.h"

/* Expected failure: pushes nil and an error table {code=, message=, hint=}
 * and returns 2, so a binding writes `return nv_lua_push_error(L, &err);`.
 * Does not raise. */
int nv_lua_push_error(lua_State *L, const nv_err *err);

/* The same with a code of the binding's own instead of err's ("untrusted",
 * which no nv_code names: a refusal the Lua layer treats apart). */
int nv_lua_push_error_as(lua_State *L, const char *code, const nv_err *err);

/* The end of a binding whose C call returned rc (0: done) with err filled
 * on failure, as luaL_fileresult ends liolib's: true, or nil and the error
 * table. `return nv_lua_result(L, rc, &err);`. Does not raise. */
int nv_lua_result(lua_State *L, int rc, const nv_err *err);

/* The same with value (a C string) in place of true. */
int nv_lua_string_result(lua_State *L, int rc, const char *value,
			 const nv_err *err);

/* A side effect in plan mode: records it (nv_plan_record) and pushes true,
 * what the binding returns in place of doing it. May raise (memory). */
int nv_lua_planned(lua_State *L, const char *primitive, const char *action,
		   const char *detail);

/* The same for a binding whose answer in plan mode is nil, "planned"
 * (nothing to return in place of a result): records and pushes those two.
 * May raise (memory). */
int nv_lua_planned_nil(lua_State *L, const char *primitive, const char *action,
		       const char *detail);

/* True when the runtime runs in plan mode: a primitive with a side effect
 * must then call nv_plan_record() and do nothing. */
bool nv_plan_mode(lua_State *L);

/* True when nothing may execute a program (a credential command, the
 * Keychain's tool, an image builder): in plan mode (except a run's
 * checking pass, core.set_checking), and for good once a read-only
 * command called _navette.core.forbid_exec(). A binding that would spawn
 * one checks this, not nv_plan_mode alone. */
bool nv_exec_forbidden(lua_State *L);

/* True in the checking pass of a run (plan mode, core.set_checking, with
 * execution allowed): a primitive may then do its reads and checks, and
 * compute what it would make, as long as it changes nothing. */
bool nv_checking_mode(lua_State *L);

/* The pass the runtime is in: "plan" (navette plan, a read-only command),
 * "check" (the checking pass of a run) or "run" (the pass that submits). */
const char *nv_mode(lua_State *L);

/* True when the declarations of the project file may bind the user's
 * secrets, files and endpoints: the user trusted that project on this
 * machine (navette trust), or it declares none. A credential declared by
 * the project file is loaded only then (creds_lua.c). */
bool nv_project_trusted(lua_State *L);

/* The recipe's time bound does not run while navette's own long work does
 * (an image build: programs navette runs, not the recipe's code, bounded
 * on their own): stop returns the time that was left (0 when no bound is
 * in force), resume gives it back. Between them, call no Lua code. */
double nv_recipe_clock_stop(lua_State *L);
void nv_recipe_clock_resume(lua_State *L, double left);

/* Appends one entry {primitive=, action=, detail=} to the plan record.
 * May raise (memory). */
void nv_plan_record(lua_State *L, const char *primitive, const char *action,
		    const char *detail);

/* Absolute folder of the recipe being run ("" when none). */
const char *nv_lua_recipe_dir(lua_State *L);

/* NAVETTE_HOME of this runtime (absolute, never NULL). */
const char *nv_lua_home(lua_State *L);

/* Handles (nv_lua.c), in liolib's manner. */

/* Registers the metatable mt of a handle: meta's metamethods (__gc,
 * __close, __tostring) and, when methods is not NULL, __index a table of
 * methods. Leaves the stack as it was. */
void nv_lua_new_handle_type(lua_State *L, const char *mt, const luaL_Reg *meta,
			    const luaL_Reg *methods);

/* Registers the metatable mt of a box, a userdata that only owns memory
 * and frees it in gc. Leaves the stack as it was. */
void nv_lua_new_box_type(lua_State *L, const char *mt, lua_CFunction gc);

/* Raises "attempt to use a closed WHAT" unless open: a handle's check_xxx
 * calls it after luaL_checkudata. */
void nv_lua_check_open(lua_State *L, bool open, const char *what);

/* A handle's __tostring: pushes "NAME (DETAIL)", or "NAME (closed)" when
 * detail is NULL, and returns 1. */
int nv_lua_push_handle_name(lua_State *L, const char *name, const char *detail);

/* A handle that keeps the NAVETTE_HOME it is opened at (the string at idx,
 * which must hold no NUL): a new userdata with metatable mt whose first
 * size bytes are zeroed (the handle is created closed) and the home copied
 * right after them (size: offsetof the flexible member that holds it). */
void *nv_lua_new_home_handle(lua_State *L, int idx, size_t size,
			     const char *mt);

/* Pushes the NULL-terminated list as a sequence {list[0], ...}. */
void nv_lua_push_strings(lua_State *L, const char *const *list);

/* Numbers from Lua (nv_lua.c). Every number a binding turns into a C
 * size, count, duration, mode or port is read with one of these: they
 * raise "WHAT must be a whole number from MIN to MAX (got V)" for a value
 * out of range, a float without an exact integer value, NaN, an infinity
 * or a non-number, where a plain cast would be undefined behaviour. A
 * float with an integer value (2.0, 1e3) and a numeric string are taken,
 * as luaL_checkinteger takes them. */
lua_Integer nv_lua_checkrange(lua_State *L, int idx, lua_Integer min,
			      lua_Integer max, const char *what);
/* The same, dflt when the argument is none or nil. */
lua_Integer nv_lua_optrange(lua_State *L, int idx, lua_Integer min,
			    lua_Integer max, lua_Integer dflt,
			    const char *what);
/* A number (not necessarily whole) in [min, max]; NaN never is. */
lua_Number nv_lua_checkrangef(lua_State *L, int idx, lua_Number min,
			      lua_Number max, const char *what);
lua_Number nv_lua_optrangef(lua_State *L, int idx, lua_Number min,
			    lua_Number max, lua_Number dflt, const char *what);

/* t[key] = value for the table on the top of the stack: what bindings
 * use to fill the tables they return (nil for a NULL string). */
static inline void nv_lua_set_str(lua_State *L, const char *key,
				  const char *value)
{
	lua_pushstring(L, value);
	lua_setfield(L, -2, key);
}
static inline void nv_lua_set_int(lua_State *L, const char *key,
				  lua_Integer value)
{
	lua_pushinteger(L, value);
	lua_setfield(L, -2, key);
}
static inline void nv_lua_set_num(lua_State *L, const char *key,
				  lua_Number value)
{
	lua_pushnumber(L, value);
	lua_setfield(L, -2, key);
}
static inline void nv_lua_set_bool(lua_State *L, const char *key, int value)
{
	lua_pushboolean(L, value);
	lua_setfield(L, -2, key);
}

#endif
