/* The sandbox of recipes and project files.
 *
 * A recipe is untrusted code (it may come from a colleague's branch or a
 * team library). It runs in a global table of its own holding an
 * allow-list of the standard library (copies, so that changing them changes
 * nothing the trusted code uses) and, when the caller gives one, the public
 * API as a sealed object. What it can reach:
 *  - require "navette": the sealed public API the caller gave (nothing else
 *    named navette.*: the internal modules are the trusted code's);
 *  - require "host.NAME": a module the embedding program registered;
 *  - require "name": a file of the recipe's folder, read through the
 *    caller's loader (which serves committed files only);
 *  - getmetatable: only metatables the recipe set itself (never the string
 *    library's, a handle's or a sealed object's);
 *  - setmetatable: no finalizers (__gc would run recipe code later, outside
 *    the time bound);
 *  - rawset: never on the globals or on a sealed object.
 * Sealed objects (core.seal) are read-only views of a deep copy; core.copy
 * makes a plain deep copy read with raw access, so that a recipe's table
 * with metamethods cannot show the validator one value and the submitter
 * another. */
#include "core/sandbox.h"

#include <stdio.h>
#include <string.h>

#include <lauxlib.h>

#include "core/output.h"
#include "core/runtime.h"

#define SANDBOX_LOADING_KEY "navette.sandbox.loading"
#define SEALED_KEY          "navette.sealed"
#define RECIPE_MT_KEY       "navette.recipe.metatables"
#define MODULE_NAME_MAX     128
#define COPY_DEPTH_MAX      200

/* ---- registry sets (weak keys) ----------------------------------------- */

static void push_weak_set(lua_State *L, const char *key)
{
	if (lua_getfield(L, LUA_REGISTRYINDEX, key) == LUA_TTABLE)
		return;
	lua_pop(L, 1);
	lua_newtable(L);          // [set]
	lua_createtable(L, 0, 1); // [set, mt]
	lua_pushliteral(L, "k");
	lua_setfield(L, -2, "__mode");
	lua_setmetatable(L, -2);
	lua_pushvalue(L, -1);
	lua_setfield(L, LUA_REGISTRYINDEX, key);
}

static int in_set(lua_State *L, const char *key, int idx)
{
	idx = lua_absindex(L, idx);
	push_weak_set(L, key);
	lua_pushvalue(L, idx);
	int found = lua_rawget(L, -2) != LUA_TNIL;
	lua_pop(L, 2);
	return found;
}

static void add_to_set(lua_State *L, const char *key, int idx)
{
	idx = lua_absindex(L, idx);
	push_weak_set(L, key);
	lua_pushvalue(L, idx);
	lua_pushboolean(L, 1);
	lua_rawset(L, -3);
	lua_pop(L, 1);
}

int nv_sandbox_is_sealed(lua_State *L, int idx)
{
	return lua_type(L, idx) == LUA_TTABLE && in_set(L, SEALED_KEY, idx);
}

/* ---- deep copies ------------------------------------------------------- */

static int sealed_readonly(lua_State *L)
{
	const char *name = lua_tostring(L, 2);
	return luaL_error(L,
			  "this object is read-only: navette hands recipes "
			  "sealed objects (field '%s'); copy what you need "
			  "into a table of your own",
			  name ? name : "?");
}

static int sealed_len(lua_State *L)
{
	lua_pushinteger(L, (lua_Integer)lua_rawlen(L, lua_upvalueindex(1)));
	return 1;
}

/* The iterator pairs() gives for a sealed object: a closure over the
 * contents, which it never hands out (pairs' second result, the state,
 * is nil; a table there would be writable). It takes the previous key as
 * its second argument, as next does; the values it yields are the
 * contents' own, sealed when they are tables. */
static int sealed_next(lua_State *L)
{
	lua_settop(L, 2);
	lua_pushvalue(L, lua_upvalueindex(1)); // [state, key, contents]
	lua_pushvalue(L, 2);                   // [state, key, contents, key]
	if (lua_next(L, 3))                    // [..., contents, k, v]
		return 2;
	lua_pushnil(L);
	return 1;
}

static int sealed_pairs(lua_State *L)
{
	lua_pushvalue(L, lua_upvalueindex(1));
	lua_pushcclosure(L, sealed_next, 1); // [iterator]
	lua_pushnil(L);
	lua_pushnil(L);
	return 3;
}

/* The table a sealed proxy shows (its metatable's __index). */
static int push_sealed_contents(lua_State *L, int idx)
{
	if (!nv_sandbox_is_sealed(L, idx) || !lua_getmetatable(L, idx))
		return 0;
	lua_getfield(L, -1, "__index");
	lua_remove(L, -2);
	return 1;
}

/* Pushes a copy of the value at idx. seen (absolute index): table ->
 * copy, so shared parts and cycles stay shared. sealed: wrap each table
 * copy in a read-only proxy. */
static void copy_value(lua_State *L, int idx, int seen, int sealed, int depth)
{
	idx = lua_absindex(L, idx);
	if (lua_type(L, idx) != LUA_TTABLE) {
		lua_pushvalue(L, idx);
		return;
	}
	if (sealed && nv_sandbox_is_sealed(L, idx)) {
		lua_pushvalue(L, idx); /* immutable already */
		return;
	}
	lua_pushvalue(L, idx);
	if (lua_rawget(L, seen) != LUA_TNIL)
		return;
	lua_pop(L, 1);
	if (depth > COPY_DEPTH_MAX)
		luaL_error(L, "a table nested more than %d levels deep",
			   COPY_DEPTH_MAX);
	luaL_checkstack(L, 8, "copying a table");
	int top = lua_gettop(L);
	int src = idx;
	if (!sealed && push_sealed_contents(L, idx))
		src = lua_gettop(L); /* a sealed object copies as plain */
	lua_newtable(L);             // [(contents), copy]
	int copy = lua_gettop(L);
	int result = copy;
	if (sealed) {
		lua_newtable(L); // [copy, proxy]
		result = lua_gettop(L);
		lua_createtable(L, 0, 5); // [copy, proxy, mt]
		lua_pushvalue(L, copy);
		lua_setfield(L, -2, "__index");
		lua_pushcfunction(L, sealed_readonly);
		lua_setfield(L, -2, "__newindex");
		lua_pushvalue(L, copy);
		lua_pushcclosure(L, sealed_len, 1);
		lua_setfield(L, -2, "__len");
		lua_pushvalue(L, copy);
		lua_pushcclosure(L, sealed_pairs, 1);
		lua_setfield(L, -2, "__pairs");
		lua_pushliteral(L, "sealed by navette");
		lua_setfield(L, -2, "__metatable");
		lua_setmetatable(L, result);
		add_to_set(L, SEALED_KEY, result);
	}
	lua_pushvalue(L, idx);
	lua_pushvalue(L, result);
	lua_rawset(L, seen);
	lua_pushnil(L);
	while (lua_next(L, src)) { // [..., key, value]
		int v = lua_gettop(L);
		copy_value(L, v - 1, seen, sealed, depth + 1);
		copy_value(L, v, seen, sealed, depth + 1);
		lua_rawset(L, copy); // [..., key, value]
		lua_pop(L, 1);
	}
	/* leave only the result */
	lua_copy(L, result, top + 1);
	lua_settop(L, top + 1);
}

static int copy_or_seal(lua_State *L, int sealed)
{
	int n = lua_gettop(L);
	lua_newtable(L);
	int seen = lua_gettop(L);
	for (int i = 1; i <= n; i++)
		copy_value(L, i, seen, sealed, 0);
	return n;
}

/* core.copy(...) -> plain deep copies (raw reads, metatables dropped) */
int nv_core_copy(lua_State *L)
{
	return copy_or_seal(L, 0);
}

/* core.seal(...) -> read-only deep copies */
int nv_core_seal(lua_State *L)
{
	return copy_or_seal(L, 1);
}

/* ---- the globals ------------------------------------------------------- */

/* Raises "WHAT 'NAME' (HINT)" about the global named at 2. */
static int undeclared_error(lua_State *L, const char *what, const char *hint)
{
	const char *name = lua_tostring(L, 2);
	return luaL_error(L, "%s '%s' (%s)", what, name ? name : "?", hint);
}

static int strict_index(lua_State *L)
{
	return undeclared_error(L, "undeclared global",
				"check the spelling, or require the module "
				"that defines it");
}

static int strict_newindex(lua_State *L)
{
	return undeclared_error(L, "assignment to undeclared global",
				"recipes declare variables with 'local'");
}

static int module_name_ok(const char *name)
{
	if (!name[0] || name[0] == '.' || strlen(name) >= MODULE_NAME_MAX)
		return 0;
	for (const char *p = name; *p; p++) {
		char c = *p;
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		      (c >= '0' && c <= '9') || c == '_' || c == '-' ||
		      c == '.'))
			return 0;
		if (c == '.' && (p[1] == '.' || p[1] == '\0'))
			return 0;
	}
	return 1;
}

/* require "host.NAME": the module the embedding program registered
 * (navette_register_module), opened once per sandbox. */
static int require_host_module(lua_State *L, const char *name)
{
	lua_pushvalue(L, lua_upvalueindex(3)); // [loaded]
	lua_getfield(L, -1, name);
	if (!lua_isnil(L, -1))
		return 1;
	lua_pop(L, 1);
	lua_getfield(L, LUA_REGISTRYINDEX, NV_HOST_MODULES_KEY);
	if (lua_istable(L, -1))
		lua_getfield(L, -1, name + 5); // [loaded, mods, opener]
	else
		lua_pushnil(L);
	if (!lua_isfunction(L, -1))
		return luaL_error(L,
				  "module '%s' not found: the program running "
				  "this recipe registered no host module "
				  "'%s' (navette_register_module)",
				  name, name + 5);
	lua_pushstring(L, name);
	lua_call(L, 1, 1); // [loaded, mods, value]
	if (lua_isnil(L, -1)) {
		lua_pop(L, 1);
		lua_pushboolean(L, 1);
	}
	lua_pushvalue(L, -1);
	lua_setfield(L, -4, name);
	return 1;
}

/* "a -> b -> a": the modules being loaded, then name. */
static const char *loading_chain(lua_State *L, const char *name)
{
	luaL_Buffer b;

	luaL_buffinit(L, &b);
	lua_getfield(L, LUA_REGISTRYINDEX, SANDBOX_LOADING_KEY);
	lua_Integer n = (lua_Integer)lua_rawlen(L, -1);
	for (lua_Integer i = 1; i <= n; i++) {
		lua_rawgeti(L, -1, i);
		luaL_addstring(&b, lua_tostring(L, -1));
		lua_pop(L, 1);
		luaL_addstring(&b, " -> ");
	}
	lua_pop(L, 1);
	luaL_addstring(&b, name);
	luaL_pushresult(&b);
	return lua_tostring(L, -1);
}

/* require() as a recipe sees it (see the top of the file). upvalues: 1 the
 * sandbox env, 2 the loader of the recipe's own files (or nil), 3 the
 * modules this sandbox loaded (its own: a library evaluated while a recipe
 * runs has a sandbox of its own, and neither sees the other's modules). */
static int sandbox_require(lua_State *L)
{
	const char *name = luaL_checkstring(L, 1);

	lua_settop(L, 1);
	lua_pushvalue(L, lua_upvalueindex(3)); // [name, loaded]
	if (strcmp(name, "navette") == 0) {
		if (lua_getfield(L, -1, "navette") != LUA_TNIL)
			return 1;
		return luaL_error(L, "module 'navette' is not available here: "
				     "a project file (navette.lua) is data "
				     "and reaches no module");
	}
	if (strncmp(name, "navette.", 8) == 0 || strcmp(name, "_navette") == 0)
		return luaL_error(L,
				  "module '%s' is internal to navette: recipes "
				  "and libraries use the public API, "
				  "require \"navette\" (navette help security)",
				  name);
	if (!module_name_ok(name))
		return luaL_error(L,
				  "require '%s': module names are letters, "
				  "digits, '_', '-' and '.'",
				  name);
	if (strncmp(name, "host.", 5) == 0)
		return require_host_module(L, name);
	int t = lua_getfield(L, 2, name); // [name, loaded, value]
	if (t == LUA_TLIGHTUSERDATA)
		return luaL_error(L,
				  "require loop: %s (module '%s' is required "
				  "again while it is being loaded; move what "
				  "both need into a third module)",
				  loading_chain(L, name), name);
	if (t != LUA_TNIL)
		return 1;
	lua_pop(L, 1);
	if (lua_isnil(L, lua_upvalueindex(2)))
		return luaL_error(L,
				  "module '%s' not found: a project file "
				  "(navette.lua) is data and requires "
				  "nothing",
				  name);

	char rel[MODULE_NAME_MAX + 8];
	size_t i;
	for (i = 0; name[i]; i++)
		rel[i] = name[i] == '.' ? '/' : name[i];
	memcpy(rel + i, ".lua", 5);
	lua_pushvalue(L, lua_upvalueindex(2));
	lua_pushstring(L, name);
	lua_pushstring(L, rel);
	lua_call(L, 2, 2); // [name, loaded, src|nil, chunkname|err]
	if (!lua_isstring(L, 3)) {
		const char *why = lua_isstring(L, 4) ? lua_tostring(L, 4)
						     : "no such file";
		return luaL_error(L, "module '%s' not found: %s", name, why);
	}
	size_t len;
	const char *src = lua_tolstring(L, 3, &len);
	const char *chunkname = luaL_optstring(L, 4, rel);
	lua_pushfstring(L, "@%s", chunkname); // [.., src, cn, @cn]
	if (luaL_loadbufferx(L, src, len, lua_tostring(L, -1), "t") != LUA_OK)
		return lua_error(L);
	lua_pushvalue(L, lua_upvalueindex(1)); // [.., chunk, env]
	lua_setupvalue(L, -2, 1);
	int chunk = lua_gettop(L);

	/* mark it loading, so a loop is named instead of overflowing */
	lua_pushlightuserdata(L, (void *)&strict_index);
	lua_setfield(L, 2, name);
	lua_getfield(L, LUA_REGISTRYINDEX, SANDBOX_LOADING_KEY);
	lua_Integer depth = (lua_Integer)lua_rawlen(L, -1);
	lua_pushstring(L, name);
	lua_rawseti(L, -2, depth + 1);
	lua_pop(L, 1);

	lua_pushvalue(L, chunk);
	lua_pushstring(L, name);
	int status = lua_pcall(L, 1, 1, 0); // [.., chunk, result|err]

	lua_getfield(L, LUA_REGISTRYINDEX, SANDBOX_LOADING_KEY);
	lua_pushnil(L);
	lua_rawseti(L, -2, depth + 1);
	lua_pop(L, 1);
	if (status != LUA_OK) {
		lua_pushnil(L);
		lua_setfield(L, 2, name);
		return lua_error(L);
	}
	if (lua_isnil(L, -1)) {
		lua_pop(L, 1);
		lua_pushboolean(L, 1);
	}
	lua_pushvalue(L, -1);
	lua_setfield(L, 2, name);
	return 1;
}

/* print: to standard output, or to the caller's function (upvalue 1).
 * What a recipe prints is untrusted: every character a terminal would act
 * on (ESC sequences such as an OSC 52 clipboard write, other C0 controls
 * but tab and newline, C1 controls, bidi overrides) is shown as a visible
 * escape (nv_out_term_char()), on a terminal or not, whoever prints the
 * line in the end. */
static int sandbox_print(lua_State *L)
{
	int n = lua_gettop(L);
	luaL_Buffer b;

	for (int i = 1; i <= n; i++) {
		luaL_tolstring(L, i, NULL);
		lua_replace(L, i); // [s1, ..., sn]
	}
	luaL_buffinit(L, &b);
	for (int i = 1; i <= n; i++) {
		size_t len;
		const char *s = lua_tolstring(L, i, &len);
		if (i > 1)
			luaL_addchar(&b, '\t');
		nv_out_add_escaped(&b, s, len);
	}
	luaL_addchar(&b, '\n');
	luaL_pushresult(&b);
	if (!lua_isnil(L, lua_upvalueindex(1))) { /* the caller's print */
		lua_pushvalue(L, lua_upvalueindex(1));
		lua_insert(L, -2);
		lua_call(L, 1, 0);
		return 0;
	}
	size_t len;
	const char *s = lua_tolstring(L, -1, &len);
	nv_out_write(NV_OUT_STDOUT, s, len);
	return 0;
}

/* rawset as a recipe sees it: neither the globals nor a sealed object.
 * upvalue 1: the sandbox env. */
static int sandbox_rawset(lua_State *L)
{
	luaL_checktype(L, 1, LUA_TTABLE);
	if (lua_rawequal(L, 1, lua_upvalueindex(1)))
		return luaL_error(L, "the globals of a recipe are frozen "
				     "(declare variables with 'local')");
	if (nv_sandbox_is_sealed(L, 1))
		return luaL_error(L, "this object is read-only: navette hands "
				     "recipes sealed objects");
	luaL_checkany(L, 2);
	luaL_checkany(L, 3);
	lua_settop(L, 3);
	lua_rawset(L, 1);
	return 1;
}

/* getmetatable as a recipe sees it: a metatable the recipe set itself, or
 * a protected one's __metatable field; never a metatable of the trusted
 * code (the string library's, a handle's). */
static int sandbox_getmetatable(lua_State *L)
{
	luaL_checkany(L, 1);
	if (!lua_getmetatable(L, 1)) {
		lua_pushnil(L);
		return 1;
	}
	if (lua_getfield(L, -1, "__metatable") != LUA_TNIL)
		return 1;
	lua_pop(L, 1);
	if (in_set(L, RECIPE_MT_KEY, -1))
		return 1;
	lua_pushnil(L);
	return 1;
}

/* setmetatable as a recipe sees it: tables only (as in Lua), and no
 * finalizer: a __gc would run recipe code at a time the recipe does not
 * own, outside its time bound. */
static int sandbox_setmetatable(lua_State *L)
{
	int t = lua_type(L, 2);

	luaL_checktype(L, 1, LUA_TTABLE);
	luaL_argexpected(L, t == LUA_TNIL || t == LUA_TTABLE, 2,
			 "nil or table");
	if (t == LUA_TTABLE) {
		lua_pushliteral(L, "__gc");
		if (lua_rawget(L, 2) != LUA_TNIL)
			return luaL_error(L,
					  "setmetatable: finalizers (__gc) are "
					  "not available to recipes (use "
					  "'local x <close>' to release "
					  "something at the end of a block)");
		lua_pop(L, 1);
	}
	if (luaL_getmetafield(L, 1, "__metatable") != LUA_TNIL)
		return luaL_error(L, "cannot change a protected metatable");
	lua_settop(L, 2);
	if (t == LUA_TTABLE)
		add_to_set(L, RECIPE_MT_KEY, 2);
	lua_setmetatable(L, 1);
	return 1;
}

/* xpcall as a recipe sees it: the message handler is called once the
 * error has been caught, not while it is raised. Lua runs a handler inside
 * the raise, where an error raised by the time-bound hook leaves hooks off:
 * a handler that loops would escape the bound. Recipes have no debug
 * library, so a handler sees the same error value either way. */
static int finish_xpcall(lua_State *L, int status, lua_KContext extra)
{
	if (status != LUA_OK && status != LUA_YIELD) {
		/* [f, h, true, err]: h(err), protected */
		lua_pushvalue(L, 2);
		lua_insert(L, -2);
		lua_pcall(L, 1, 1, 0);
		lua_pushboolean(L, 0);
		lua_insert(L, -2);
		return 2;
	}
	return lua_gettop(L) - (int)extra;
}

static int sandbox_xpcall(lua_State *L)
{
	int n = lua_gettop(L);

	luaL_checktype(L, 2, LUA_TFUNCTION);
	lua_pushboolean(L, 1); /* the first result when it succeeds */
	lua_pushvalue(L, 1);
	lua_rotate(L, 3, 2); /* [f, h, true, f, args...] */
	int status = lua_pcallk(L, n - 2, LUA_MULTRET, 0, 2, finish_xpcall);
	return finish_xpcall(L, status, 2);
}

static void copy_fields(lua_State *L, int from, const char *const *names)
{
	from = lua_absindex(L, from);
	for (; *names; names++) {
		lua_getfield(L, from, *names);
		lua_setfield(L, -2, *names);
	}
}

static void copy_library(lua_State *L, const char *lib)
{
	lua_getglobal(L, lib); // [env, lib]
	lua_newtable(L);       // [env, lib, copy]
	lua_pushnil(L);
	while (lua_next(L, -3)) {
		lua_pushvalue(L, -2);
		lua_insert(L, -2);
		lua_rawset(L, -4);
	}
	lua_setfield(L, -3, lib);
	lua_pop(L, 1);
}

/* core.sandbox(dir [, opts]) -> env. opts:
 *   navette = the value `require "navette"` gives (absent: none);
 *   load_module = function(name, relpath) -> source, chunkname | nil, why
 *     (absent: the recipe requires no file);
 *   require = false: no require at all (a project file);
 *   globals = { name = value }: extra globals (navette test's `test`);
 *   print = function(line): where print writes (absent: standard output).
 * Each call starts a fresh set of loaded modules. */
int nv_core_sandbox(lua_State *L)
{
	static const char *const base[] = {
		"assert",   "error",    "ipairs", "next",     "pairs",
		"pcall",    "rawequal", "rawget", "rawlen",   "select",
		"tonumber", "tostring", "type",   "_VERSION", NULL};
	static const char *const os_allowed[] = {"time", "clock", "date",
						 "difftime", NULL};
	navette_runtime *rt = nv_runtime_of(L);
	size_t len;
	const char *dir = luaL_checklstring(L, 1, &len);
	int has_opts = lua_istable(L, 2);

	if (len >= sizeof(rt->recipe_dir))
		return luaL_argerror(L, 1, "path too long");
	memcpy(rt->recipe_dir, dir, len + 1);
	lua_settop(L, 2);

	lua_newtable(L); // [dir, opts, env]
	int env = lua_gettop(L);
	lua_pushglobaltable(L);
	lua_pushvalue(L, env); // [.., env, G, env]
	copy_fields(L, -2, base);
	lua_pop(L, 2);
	if (has_opts)
		lua_getfield(L, 2, "print");
	else
		lua_pushnil(L);
	lua_pushcclosure(L, sandbox_print, 1);
	lua_setfield(L, env, "print");
	lua_pushcfunction(L, sandbox_xpcall);
	lua_setfield(L, env, "xpcall");
	lua_pushcfunction(L, sandbox_getmetatable);
	lua_setfield(L, env, "getmetatable");
	lua_pushcfunction(L, sandbox_setmetatable);
	lua_setfield(L, env, "setmetatable");
	copy_library(L, "string");
	copy_library(L, "table");
	copy_library(L, "math");
	copy_library(L, "utf8");
	copy_library(L, "coroutine");
	lua_getglobal(L, "os");
	lua_newtable(L); // [.., env, os, os']
	copy_fields(L, -2, os_allowed);
	lua_setfield(L, env, "os");
	lua_pop(L, 1);
	lua_pushvalue(L, env);
	lua_pushcclosure(L, sandbox_rawset, 1);
	lua_setfield(L, env, "rawset");
	lua_pushvalue(L, env);
	lua_setfield(L, env, "_G");

	lua_newtable(L); // [.., env, loaded]
	int loaded = lua_gettop(L);
	if (has_opts && lua_getfield(L, 2, "navette") != LUA_TNIL)
		lua_setfield(L, loaded, "navette");
	else if (has_opts)
		lua_pop(L, 1);
	/* one chain for every sandbox: a library's sandbox is made while the
	 * recipe's modules may be loading */
	if (lua_getfield(L, LUA_REGISTRYINDEX, SANDBOX_LOADING_KEY) !=
	    LUA_TTABLE) {
		lua_newtable(L);
		lua_setfield(L, LUA_REGISTRYINDEX, SANDBOX_LOADING_KEY);
	}
	lua_pop(L, 1);

	int no_require = 0;
	if (has_opts) {
		lua_getfield(L, 2, "require");
		no_require = lua_isboolean(L, -1) && !lua_toboolean(L, -1);
		lua_pop(L, 1);
	}
	if (!no_require) {
		lua_pushvalue(L, env);
		if (has_opts)
			lua_getfield(L, 2, "load_module");
		else
			lua_pushnil(L);
		lua_pushvalue(L, loaded);
		lua_pushcclosure(L, sandbox_require, 3);
		lua_setfield(L, env, "require");
	}
	if (has_opts && lua_getfield(L, 2, "globals") == LUA_TTABLE) {
		lua_pushnil(L);
		while (lua_next(L, -2)) {
			lua_pushvalue(L, -2);
			lua_insert(L, -2);
			lua_rawset(L, env);
		}
	}
	lua_settop(L, env);

	lua_createtable(L, 0, 3); // [.., env, mt]
	lua_pushcfunction(L, strict_index);
	lua_setfield(L, -2, "__index");
	lua_pushcfunction(L, strict_newindex);
	lua_setfield(L, -2, "__newindex");
	lua_pushliteral(L, "the globals of a recipe are frozen");
	lua_setfield(L, -2, "__metatable");
	lua_setmetatable(L, env);
	return 1;
}
