/* _navette.podq: the binding of podq's wire (podq.h), for the throwaway
 * backend of tests/second_backend. Misuse raises; a bad status returns
 * nil, {code, message, hint}. */
#include <lauxlib.h>
#include <lua.h>

#include "core/buf.h"
#include "core/nv_err.h"
#include "core/nv_lua.h"
#include "podq/podq.h"

/* podq.manifest(name, image, launcher, tasks) -> JSON text */
static int l_podq_manifest(lua_State *L)
{
	const char *name = luaL_checkstring(L, 1);
	const char *image = luaL_checkstring(L, 2);
	size_t len;
	const char *launcher = luaL_checklstring(L, 3, &len);
	lua_Integer tasks = luaL_checkinteger(L, 4);
	nv_buf out;
	nv_err err;

	nv_err_clear(&err);
	nv_buf_init(&out, 2 * 1024 * 1024);
	if (tasks < 1 || tasks > NV_PODQ_TASKS_MAX) {
		nv_buf_free(&out);
		return luaL_error(L, "podq.manifest: tasks out of range");
	}
	if (nv_podq_manifest(name, image, launcher, len, (int)tasks, &out,
			     &err) != 0) {
		nv_buf_free(&out);
		return luaL_error(L, "podq.manifest: %s", err.message);
	}
	lua_pushlstring(L, out.data, out.len);
	nv_buf_free(&out);
	return 1;
}

/* podq.state(json) -> state | nil, err */
static int l_podq_state(lua_State *L)
{
	size_t len;
	const char *json = luaL_checklstring(L, 1, &len);
	const char *state;
	nv_err err;

	nv_err_clear(&err);
	if (nv_podq_state(json, len, &state, &err) != 0)
		return nv_lua_push_error(L, &err);
	lua_pushstring(L, state);
	return 1;
}

int luaopen_navette_podq(lua_State *L)
{
	static const luaL_Reg fns[] = {{"manifest", l_podq_manifest},
				       {"state", l_podq_state},
				       {NULL, NULL}};

	luaL_newlib(L, fns);
	return 1;
}
