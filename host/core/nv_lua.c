/* The parts of nv_lua.h that are not the runtime's own: checks of the
 * values a binding takes from Lua. Every number a binding turns into a C
 * size, count, duration, mode or port goes through here: a Lua number may
 * be a float as large as 1e308, an infinity or a NaN, and converting such
 * a value to a C integer type is undefined behaviour in C. */
#include "core/nv_lua.h"

#include <stdio.h>

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
