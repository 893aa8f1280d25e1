/* _navette.reuse: the reuse index entry's parser (reuse_index.h) for
 * lua/navette/reuse.
 *
 * reuse.parse_index(text) -> {key, job, name, project, profile, record,
 *   created} | nil, err
 * reuse.check_key(key) -> true | nil, err */
#include <lauxlib.h>
#include <lua.h>

#include "core/nv_lua.h"
#include "reuse/reuse_index.h"

static int l_parse_index(lua_State *L)
{
	size_t len;
	const char *text = luaL_checklstring(L, 1, &len);
	nv_reuse_entry e;
	nv_err err;

	if (nv_reuse_index_parse(text, len, &e, &err))
		return nv_lua_push_error(L, &err);
	lua_createtable(L, 0, 7);
	lua_pushstring(L, e.key);
	lua_setfield(L, -2, "key");
	lua_pushstring(L, e.job);
	lua_setfield(L, -2, "job");
	lua_pushstring(L, e.name);
	lua_setfield(L, -2, "name");
	lua_pushstring(L, e.project);
	lua_setfield(L, -2, "project");
	lua_pushstring(L, e.profile);
	lua_setfield(L, -2, "profile");
	lua_pushstring(L, e.record);
	lua_setfield(L, -2, "record");
	lua_pushstring(L, e.created);
	lua_setfield(L, -2, "created");
	return 1;
}

static int l_check_key(lua_State *L)
{
	nv_err err;

	if (nv_reuse_key_check(luaL_checkstring(L, 1), &err))
		return nv_lua_push_error(L, &err);
	lua_pushboolean(L, 1);
	return 1;
}

static const luaL_Reg reuse_functions[] = {
	{"parse_index", l_parse_index},
	{"check_key", l_check_key},
	{NULL, NULL},
};

int luaopen_navette_reuse(lua_State *L)
{
	luaL_newlib(L, reuse_functions);
	return 1;
}
