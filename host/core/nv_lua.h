/* What every Lua binding of a primitive uses from the core: error objects,
 * plan mode, and the recipe's location. Bindings live in one file per
 * primitive (host/<prim>/<prim>_lua.c) ending in luaopen_navette_<prim>. */
#ifndef NV_LUA_H
#define NV_LUA_H

#include <stdbool.h>

#include <lua.h>
#include <lauxlib.h>

#include "nv_err.h"

/* Expected failure: pushes nil and an error table {code=, message=, hint=}
 * and returns 2, so a binding writes `return nv_lua_push_error(L, &err);`.
 * Does not raise. */
int nv_lua_push_error(lua_State *L, const nv_err *err);

/* True when the runtime runs in plan mode: a primitive with a side effect
 * must then call nv_plan_record() and do nothing. */
bool nv_plan_mode(lua_State *L);

/* True when nothing may execute a program (a credential command, the
 * Keychain's tool, an image builder): in plan mode, and for good once a
 * read-only command called _navette.core.forbid_exec(). A binding that
 * would spawn one checks this, not nv_plan_mode alone. */
bool nv_exec_forbidden(lua_State *L);

/* Appends one entry {primitive=, action=, detail=} to the plan record.
 * May raise (memory). */
void nv_plan_record(lua_State *L, const char *primitive, const char *action,
		    const char *detail);

/* Absolute folder of the recipe being run ("" when none). */
const char *nv_lua_recipe_dir(lua_State *L);

/* NAVETTE_HOME of this runtime (absolute, never NULL). */
const char *nv_lua_home(lua_State *L);

#endif
