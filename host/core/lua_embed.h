/* The Lua standard library of recipes, compiled in (see embed_lua.cmake). */
#ifndef NV_LUA_EMBED_H
#define NV_LUA_EMBED_H

#include <stddef.h>

struct nv_lua_module {
	const char *name; /* "navette.job" */
	const char *path; /* "lua/navette/job.lua", for chunk names */
	const char *source;
	size_t length;
};

/* Terminated by an entry whose name is NULL. */
extern const struct nv_lua_module nv_lua_modules[];

#endif
