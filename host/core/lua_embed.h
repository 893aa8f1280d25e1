/* The Lua standard library of recipes, compiled in: each module's source,
 * and its bytecode as the build's liblua compiled it (written by
 * host/core/tools/luac_embed.c; by embed_lua.cmake, sources only, when
 * cross-compiling). */
#ifndef NV_LUA_EMBED_H
#define NV_LUA_EMBED_H

#include <stddef.h>

struct nv_lua_module {
	const char *name; /* "navette.job" */
	const char *path; /* "lua/navette/job.lua", for chunk names */
	const char *source;
	size_t length;
	/* lua_dump of source under the chunk name "=navette/job.lua", debug
	 * information kept; NULL when not precompiled */
	const char *bytecode;
	size_t bytecode_length;
};

/* Terminated by an entry whose name is NULL. */
extern const struct nv_lua_module nv_lua_modules[];

/* The bytecode is used only where the liblua of the running process
 * compiles this probe into the same bytes as the build's did (a liblua of
 * another release may number or encode instructions differently; the
 * header check of lua_load does not see that). It uses most kinds of
 * instruction. nv_lua_probe_length is 0 when nothing was precompiled. */
#define NV_LUA_PROBE_CHUNKNAME "=probe"
#define NV_LUA_PROBE_SOURCE                                                    \
	"local t, s, n, z <const> = {...}, 'a' .. 1, 2 ^ 0.5, 7\n"             \
	"local function f(a, b, ...) return a // b, a % b, a & b | ~a, "       \
	"a << 2 >> 1, select('#', ...) end\n"                                  \
	"for i = 1, 3, 1 do t[i] = { f(i, 2, i) } end\n"                       \
	"for k, v in pairs(t) do if k > 1 and v ~= nil or not k then "         \
	"s = s .. #v .. -k end end\n"                                          \
	"local o = setmetatable({}, { __index = t, __close = print })\n"       \
	"do local c <close> = nil; goto done end\n"                            \
	"::done:: while n < 3 do n = n * 1.5 repeat n = n + z until n >= 0 "   \
	"end\n"                                                                \
	"return o:x(s, n == 2.0, 'long string kept as a constant of the "      \
	"function, longer than forty characters')\n"

extern const unsigned char *const nv_lua_probe_bytecode;
extern const size_t nv_lua_probe_length;

#endif
