/* The Lua state of a recipe run: allocator with a memory cap, the count hook
 * bounding run time, the protected-call helper, the loader of the embedded
 * library, and _navette.core (the sandbox given to recipes, plan mode,
 * limits). The CLI logic itself is Lua (lua/navette/cli/) running on top
 * of these primitives; host/lib opens them all and holds navette.h. */
#include "core/runtime.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>
#include <lualib.h>

#include "core/clock.h"
#include "core/lua_embed.h"
#include "core/nv_lua.h"
#include "core/sandbox.h"
#include "core/versions.h"
#include "core/watchdog.h"

#define RUNTIME_KEY "navette.runtime"
#define HOOK_COUNT  100000
/* Instructions left once the build budget is spent: enough for the
 * trusted code around a build to clean up (a temporary folder, the audit
 * line), too few for a recipe's loop to start many more. */
#define SPENT_HOOK_COUNT 2000
#define MODULE_NAME_MAX  128

navette_runtime *nv_runtime_of(lua_State *L)
{
	navette_runtime *rt;

	lua_getfield(L, LUA_REGISTRYINDEX, RUNTIME_KEY);
	rt = lua_touserdata(L, -1);
	lua_pop(L, 1);
	return rt;
}

/* The allocator counts every byte; over the cap it fails like malloc, and
 * Lua raises "not enough memory" in the recipe. */
static void *runtime_alloc(void *ud, void *ptr, size_t osize, size_t nsize)
{
	navette_runtime *rt = ud;

	if (!ptr)
		osize = 0;
	if (nsize == 0) {
		free(ptr);
		rt->memory_used -= osize;
		return NULL;
	}
	if (nsize > osize &&
	    rt->memory_used + (nsize - osize) > rt->memory_limit)
		return NULL;
	void *p = realloc(ptr, nsize);
	if (p)
		rt->memory_used = rt->memory_used - osize + nsize;
	return p;
}

static void runtime_hook(lua_State *L, lua_Debug *ar)
{
	navette_runtime *rt = nv_runtime_of(L);

	(void)ar;
	if (rt && rt->deadline > 0 && nv_deadline_passed(rt->deadline)) {
		/* From now on every instruction of this thread raises: a
		 * recipe that catches the error (pcall in a loop, a message
		 * handler) cannot go on. */
		lua_sethook(L, runtime_hook, LUA_MASKCOUNT, 1);
		luaL_where(L, 0); /* the line running (level 1: its caller) */
		if (rt->build_spent)
			lua_pushfstring(
				L,
				"the image builds of this evaluation took "
				"longer than %d s in all; check for builds in "
				"a loop (NAVETTE_BUILD_TIMEOUT raises the "
				"bound)",
				(int)(rt->build_timeout_s + 0.5));
		else
			lua_pushfstring(
				L,
				"the recipe ran longer than %d s; check for "
				"an endless loop (NAVETTE_RECIPE_TIMEOUT "
				"raises the bound)",
				(int)(rt->recipe_timeout_s + 0.5));
		lua_concat(L, 2);
		/* a recipe error, whichever frame was running (it may be
		 * the library's: see error_handler) */
		lua_createtable(L, 0, 2);
		lua_insert(L, -2);
		lua_setfield(L, -2, "message");
		lua_pushliteral(L, "recipe");
		lua_setfield(L, -2, "code"); // [err]
		lua_error(L);
	}
}

/* Whether the error being handled is the Lua VM's own (an arithmetic on
 * nil, a call of nil...) in a function of the embedded library: level 1
 * is the function that raised, a C function for error() and the
 * bindings' argument errors. That is a bug in navette, not the recipe's
 * error, whatever the recipe did. */
static int raised_by_library(lua_State *L)
{
	lua_Debug ar;

	if (!lua_getstack(L, 1, &ar) || !lua_getinfo(L, "S", &ar))
		return 0;
	return strcmp(ar.what, "C") != 0 &&
	       strncmp(ar.source, "=navette/", 9) == 0;
}

/* Message handler: every error becomes a fresh table {code, message, hint,
 * traceback}. A table raised is read with raw access (its scalar fields
 * copied), so a recipe's error object with metamethods runs no code here
 * but its __tostring, and only when it has no message. */
static int error_handler(lua_State *L)
{
	const char *msg = NULL;
	int t = lua_type(L, 1);

	lua_createtable(L, 0, 4); // [err, out]
	if (t == LUA_TTABLE) {
		lua_pushnil(L);
		while (lua_next(L, 1)) { // [err, out, k, v]
			int vt = lua_type(L, -1);
			if (lua_type(L, -2) == LUA_TSTRING &&
			    (vt == LUA_TSTRING || vt == LUA_TNUMBER ||
			     vt == LUA_TBOOLEAN)) {
				lua_pushvalue(L, -2);
				lua_insert(L, -2);
				lua_rawset(L, 2);
			} else {
				lua_pop(L, 1);
			}
		}
		if (lua_getfield(L, 2, "message") == LUA_TSTRING)
			msg = lua_tostring(L, -1);
		lua_pop(L, 1);
	} else if (t == LUA_TSTRING || t == LUA_TNUMBER) {
		msg = lua_tostring(L, 1);
	}
	if (!msg) {
		if (t != LUA_TSTRING && luaL_callmeta(L, 1, "__tostring") &&
		    lua_type(L, -1) == LUA_TSTRING)
			msg = lua_tostring(L, -1);
		else
			msg = lua_pushfstring(L, "(error object is a %s value)",
					      luaL_typename(L, 1));
		lua_pushstring(L, msg);
		lua_setfield(L, 2, "message");
		lua_settop(L, 2);
	} else if (t != LUA_TTABLE) {
		lua_pushstring(L, msg);
		lua_setfield(L, 2, "message");
	}
	if (lua_getfield(L, 2, "code") != LUA_TSTRING) {
		if (t == LUA_TSTRING && raised_by_library(L)) {
			lua_pushliteral(L, "internal");
			lua_setfield(L, 2, "code");
			lua_pushliteral(
				L, "this is a bug in navette, not in what you "
				   "wrote: please report it with the traceback "
				   "that NAVETTE_DEBUG=1 prints");
			lua_setfield(L, 2, "hint");
		} else {
			lua_pushliteral(L, "recipe");
			lua_setfield(L, 2, "code");
		}
	}
	lua_settop(L, 2);
	luaL_traceback(L, L, NULL, 1);
	lua_setfield(L, 2, "traceback");
	return 1;
}

int nv_pcall(lua_State *L, int nargs, int nresults)
{
	int base = lua_gettop(L) - nargs; /* the function */
	int status;

	lua_pushcfunction(L, error_handler);
	lua_insert(L, base); // [handler, fn, args...]
	status = lua_pcall(L, nargs, nresults, base);
	lua_remove(L, base);
	return status;
}

/* ---- the embedded library and its loader ------------------------------- */

static const struct nv_lua_module *embedded_find(const char *name)
{
	for (const struct nv_lua_module *m = nv_lua_modules; m->name; m++)
		if (strcmp(m->name, name) == 0)
			return m;
	return NULL;
}

/* Whether the embedded bytecode suits the liblua of this process: it
 * compiles the probe into the build's bytes (core/lua_embed.h). Checked
 * once; 1 yes, -1 no, 0 not yet. */
static int bytecode_usable = 0;

static int probe_writer(lua_State *L, const void *p, size_t size, void *ud)
{
	size_t *at = ud;

	(void)L;
	if (size > nv_lua_probe_length - *at ||
	    memcmp(nv_lua_probe_bytecode + *at, p, size) != 0) {
		*at = nv_lua_probe_length + 1; /* differs */
		return 1;
	}
	*at += size;
	return 0;
}

static int bytecode_suits(lua_State *L)
{
	/* states of several threads may ask at once: each finds the same */
	int usable = __atomic_load_n(&bytecode_usable, __ATOMIC_RELAXED);

	if (usable == 0 && nv_lua_probe_length == 0)
		usable = -1;
	if (usable == 0) {
		size_t at = 0;
		int same = luaL_loadbufferx(L, NV_LUA_PROBE_SOURCE,
					    sizeof(NV_LUA_PROBE_SOURCE) - 1,
					    NV_LUA_PROBE_CHUNKNAME,
					    "t") == LUA_OK; // [probe or error]
		if (same)
			same = lua_dump(L, probe_writer, &at, 0) == 0 &&
			       at == nv_lua_probe_length;
		lua_pop(L, 1); // []
		usable = same ? 1 : -1;
	}
	__atomic_store_n(&bytecode_usable, usable, __ATOMIC_RELAXED);
	return usable > 0;
}

/* The loader of a page of the manual read from NAVETTE_LUA_PATH: returns
 * its text, as the embedded chunk does. */
static int page_text(lua_State *L)
{
	lua_pushvalue(L, lua_upvalueindex(1));
	return 1;
}

/* Loads module `name` of the library as a chunk named "=navette/x.lua"
 * (recipe frames are told apart from library frames by that prefix; the
 * embedded bytecode was compiled under the same name). */
static int load_library_module(lua_State *L, navette_runtime *rt,
			       const char *name)
{
	char chunkname[MODULE_NAME_MAX + 32];
	char rel[MODULE_NAME_MAX + 16];
	size_t i;

	if (strlen(name) >= MODULE_NAME_MAX)
		return luaL_error(L, "module name too long");
	for (i = 0; name[i]; i++)
		rel[i] = name[i] == '.' ? '/' : name[i];
	rel[i] = '\0';
	if (strcmp(rel, "navette") == 0)
		snprintf(rel, sizeof(rel), "navette/init");
	snprintf(chunkname, sizeof(chunkname), "=%s.lua", rel);

	if (rt->lua_path[0]) {
		char path[4096 + MODULE_NAME_MAX + 16];
		if ((size_t)snprintf(path, sizeof(path), "%s/%s.lua",
				     rt->lua_path, rel) >= sizeof(path))
			return LUA_ERRFILE;
		FILE *f = fopen(path, "rb");
		int page = 0;
		/* a folder's module is its init.lua, as embedded */
		if (!f && (size_t)snprintf(path, sizeof(path), "%s/%s/init.lua",
					   rt->lua_path, rel) < sizeof(path))
			f = fopen(path, "rb");
		/* a page of the manual, navette/doc/x.md: its text */
		if (!f && strncmp(rel, "navette/doc/", 12) == 0 &&
		    (size_t)snprintf(path, sizeof(path), "%s/%s.md",
				     rt->lua_path, rel) < sizeof(path) &&
		    (f = fopen(path, "rb")) != NULL)
			page = 1;
		if (!f)
			return LUA_ERRFILE;
		luaL_Buffer b;
		luaL_buffinit(L, &b);
		size_t n;
		char chunk[4096];
		while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0)
			luaL_addlstring(&b, chunk, n);
		fclose(f);
		luaL_pushresult(&b); // [source]
		if (page) {
			lua_pushcclosure(L, page_text, 1); // [loader]
			return LUA_OK;
		}
		size_t len;
		const char *src = lua_tolstring(L, -1, &len);
		int status = luaL_loadbufferx(L, src, len, chunkname, "t");
		lua_remove(L, -2);
		return status;
	}
	const struct nv_lua_module *m = embedded_find(name);
	if (!m)
		return LUA_ERRFILE;
	if (m->bytecode && bytecode_suits(L))
		return luaL_loadbufferx(L, m->bytecode, m->bytecode_length,
					chunkname, "b");
	return luaL_loadbufferx(L, m->source, m->length, chunkname, "t");
}

/* core.library(prefix) -> the names of the library's modules directly
 * under `prefix.` (a folder of lua/navette: "navette.backends" lists its
 * files, not its init.lua), in the order of the embedded table (sorted by
 * file name). The embedded library is the list, also when NAVETTE_LUA_PATH
 * loads each module's text from a folder. */
static int l_core_library(lua_State *L)
{
	size_t plen;
	const char *prefix = luaL_checklstring(L, 1, &plen);
	lua_Integer n = 0;

	lua_newtable(L); // [list]
	for (const struct nv_lua_module *m = nv_lua_modules; m->name; m++) {
		const char *rest = m->name + plen;
		if (strncmp(m->name, prefix, plen) != 0 || *rest != '.' ||
		    strchr(rest + 1, '.') != NULL)
			continue;
		lua_pushstring(L, rest + 1);
		lua_rawseti(L, -2, ++n);
	}
	return 1;
}

/* package.searchers entry of the trusted state: the library only. */
static int library_searcher(lua_State *L)
{
	const char *name = luaL_checkstring(L, 1);
	navette_runtime *rt = nv_runtime_of(L);

	if (strcmp(name, "navette") != 0 && strncmp(name, "navette.", 8) != 0) {
		lua_pushfstring(L, "\n\tno module '%s' in navette's library",
				name);
		return 1;
	}
	int status = load_library_module(L, rt, name);
	if (status == LUA_ERRFILE) {
		lua_pushfstring(L, "\n\tno module '%s' in navette's library",
				name);
		return 1;
	}
	if (status != LUA_OK)
		return lua_error(L);
	lua_pushstring(L, name);
	return 2;
}

/* ---- the state --------------------------------------------------------- */

int nv_runtime_start(navette_runtime *rt)
{
	lua_State *L = lua_newstate(runtime_alloc, rt);

	rt->L = L;
	if (!L)
		return -1;
	luaL_openlibs(L);
	lua_pushlightuserdata(L, rt);
	lua_setfield(L, LUA_REGISTRYINDEX, RUNTIME_KEY);
	lua_newtable(L);
	rt->plan_ref = luaL_ref(L, LUA_REGISTRYINDEX);
	{
		const char *env = getenv("NAVETTE_BUILD_TIMEOUT");

		rt->build_timeout_s = env && atof(env) > 0
					      ? atof(env)
					      : NV_BUILD_TIMEOUT_DEFAULT_S;
	}

	/* Trusted code loads modules from the library only: no path search
	 * of the working folder, no C modules from disk. */
	lua_getglobal(L, "package"); // [package]
	lua_getfield(L, -1, "searchers");
	lua_newtable(L);
	lua_rawgeti(L, -2, 1); /* preload */
	lua_rawseti(L, -2, 1);
	lua_pushcfunction(L, library_searcher);
	lua_rawseti(L, -2, 2);
	lua_setfield(L, -3, "searchers");
	lua_pop(L, 2);
	return 0;
}

void nv_runtime_stop(navette_runtime *rt)
{
	if (rt->L)
		lua_close(rt->L);
	rt->L = NULL;
	nv_watchdog_free(rt->watchdog);
	rt->watchdog = NULL;
}

/* ---- _navette.core ----------------------------------------------------- */

/* The reserved word of Lua a syntax error points at ("... near 'local'"),
 * or NULL: written as a table key (profiles = { local = ... }), a word
 * the user means as a name. */
static const char *keyword_near(const char *message)
{
	static const char *const words[] = {
		"and",   "break", "do",       "else",  "elseif", "end",
		"false", "for",   "function", "goto",  "if",     "in",
		"local", "nil",   "not",      "or",    "repeat", "return",
		"then",  "true",  "until",    "while", NULL,
	};
	const char *near = message ? strstr(message, "near '") : NULL;
	const char *end;

	if (!near)
		return NULL;
	near += 6;
	end = strchr(near, '\'');
	if (!end)
		return NULL;
	for (size_t i = 0; words[i]; i++)
		if (strlen(words[i]) == (size_t)(end - near) &&
		    strncmp(near, words[i], (size_t)(end - near)) == 0)
			return words[i];
	return NULL;
}

/* _navette.core.load_recipe(path, env [, chunkname [, source]]) -> fn |
 * nil, err. source: the text to load instead of the file's. */
static int l_core_load_recipe(lua_State *L)
{
	const char *path = luaL_checkstring(L, 1);
	luaL_checktype(L, 2, LUA_TTABLE);
	const char *shown = luaL_optstring(L, 3, path);
	FILE *f;

	if (lua_type(L, 4) == LUA_TSTRING) { /* the source, read already */
		lua_settop(L, 4);
		goto loaded;
	}
	lua_settop(L, 3);
	f = fopen(path, "rb");
	if (!f) {
		nv_err err;
		nv_err_set_errno(&err, NV_EINVAL, errno,
				 "check the recipe's path", "cannot open %s",
				 path);
		return nv_lua_push_error(L, &err);
	}
	luaL_Buffer b;
	luaL_buffinit(L, &b);
	char chunk[4096];
	size_t n;
	while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0)
		luaL_addlstring(&b, chunk, n);
	fclose(f);
	luaL_pushresult(&b); // [path, env, shown, src]
loaded:;
	size_t len;
	const char *src = lua_tolstring(L, -1, &len);
	if (len >= 1 && src[0] == '#') { /* skip a shebang line */
		const char *nl = memchr(src, '\n', len);
		size_t skip = nl ? (size_t)(nl - src) : len;
		lua_pushfstring(L, "--%s", "");
		lua_pushlstring(L, src + skip, len - skip);
		lua_concat(L, 2);
		src = lua_tolstring(L, -1, &len);
	}
	lua_pushfstring(L, "@%s", shown);
	int status = luaL_loadbufferx(L, src, len, lua_tostring(L, -1), "t");
	if (status != LUA_OK) {
		nv_err err;
		const char *message = lua_tostring(L, -1);
		const char *word = keyword_near(message);
		char hint[192];

		if (word)
			snprintf(hint, sizeof(hint),
				 "'%s' is a word of Lua: as a key it is "
				 "written [\"%s\"] (for example profiles = "
				 "{ [\"%s\"] = { ... } })",
				 word, word, word);
		else
			snprintf(hint, sizeof(hint),
				 "check the syntax at the line shown (a "
				 "missing 'end', ',' or quote is often one "
				 "line above)");
		nv_err_set(&err, NV_EINVAL, hint, "%s", message);
		return nv_lua_push_error(L, &err);
	}
	lua_pushvalue(L, 2);
	lua_setupvalue(L, -2, 1);
	return 1;
}

/* _navette.core.call_bounded(fn, ...) -> true, results... | false, err.
 * Runs fn under the count hook, with the recipe time bound. */
static int l_core_call_bounded(lua_State *L)
{
	navette_runtime *rt = nv_runtime_of(L);
	int nargs = lua_gettop(L) - 1;
	lua_Debug ar;
	char message[1024];

	luaL_checktype(L, 1, LUA_TFUNCTION);
	lua_pushvalue(L, 1);
	lua_getinfo(L, ">S", &ar);
	rt->deadline = nv_deadline_after(rt->recipe_timeout_s);
	rt->build_used_s = 0;
	rt->build_spent = false;
	snprintf(message, sizeof(message),
		 "error: %s: the recipe ran longer than %d s and did not stop "
		 "at its limit (it was inside a C function: a pattern match "
		 "that backtracks, a huge string operation); navette ended "
		 "it one second later\n  check: simplify the pattern (nested "
		 "repetitions such as \"a*a*a*b\" backtrack exponentially), "
		 "or raise NAVETTE_RECIPE_TIMEOUT\n",
		 ar.short_src, (int)(rt->recipe_timeout_s + 0.5));
	nv_watchdog_arm(&rt->watchdog, rt->deadline + 1.0, message);
	lua_sethook(L, runtime_hook, LUA_MASKCOUNT, HOOK_COUNT);
	int status = nv_pcall(L, nargs, LUA_MULTRET);
	lua_sethook(L, NULL, 0, 0);
	nv_watchdog_disarm(rt->watchdog);
	rt->deadline = 0;
	lua_pushboolean(L, status == LUA_OK);
	lua_insert(L, 1);
	return lua_gettop(L);
}

/* ---- the build budget (runtime.h) ------------------------------------- */

int nv_build_clock_stop(lua_State *L, nv_build_clock *bc, nv_err *err)
{
	navette_runtime *rt = nv_runtime_of(L);
	char note[512];
	double budget_left;

	bc->left = 0;
	bc->started = nv_monotonic();
	bc->bounded = rt && rt->deadline > 0;
	if (!bc->bounded)
		return 0;
	budget_left = rt->build_timeout_s - rt->build_used_s;
	if (rt->build_spent || budget_left <= 0) {
		/* the hook ends the evaluation shortly: armed once, so that
		 * a loop of refused builds does not set its count back */
		if (!rt->build_spent)
			lua_sethook(L, runtime_hook, LUA_MASKCOUNT,
				    SPENT_HOOK_COUNT);
		rt->build_spent = true;
		rt->deadline = nv_monotonic();
		bc->bounded = false;
		return nv_err_set(err, NV_EREFUSED,
				  "check for builds in a loop, or raise "
				  "NAVETTE_BUILD_TIMEOUT",
				  "no build started: the image builds of this "
				  "evaluation took longer than %d s in all",
				  (int)(rt->build_timeout_s + 0.5));
	}
	bc->left = nv_recipe_clock_stop(L);
	snprintf(note, sizeof(note),
		 "error: an image build ran past the %d s the builds of one "
		 "evaluation may take in all; navette ended it one second "
		 "later\n  check: the builder's output, or raise "
		 "NAVETTE_BUILD_TIMEOUT\n",
		 (int)(rt->build_timeout_s + 0.5));
	nv_watchdog_resume(rt->watchdog, bc->started + budget_left + 1.0);
	nv_watchdog_note(rt->watchdog, note);
	return 0;
}

void nv_build_clock_resume(lua_State *L, nv_build_clock *bc)
{
	navette_runtime *rt = nv_runtime_of(L);
	double left = bc->left;

	if (!bc || !bc->bounded || !rt)
		return;
	bc->bounded = false;
	rt->build_used_s += nv_monotonic() - bc->started;
	nv_recipe_clock_resume(L, left); /* (clears the watchdog's note) */
	if (rt->build_used_s >= rt->build_timeout_s) {
		/* spent: the hook ends the evaluation shortly after this
		 * build's result is returned */
		rt->build_spent = true;
		rt->deadline = nv_monotonic();
		lua_sethook(L, runtime_hook, LUA_MASKCOUNT, SPENT_HOOK_COUNT);
	}
}

/* _navette.core.unbounded(fn, ...) -> fn's results: runs fn with the
 * recipe's time bound stopped, then resumed with what was left of it:
 * navette's own waiting inside a recipe (following the jobs a task
 * submitted) is not the recipe's time. Trusted code only: a recipe never
 * reaches _navette. An error of fn is raised once the clock runs again. */
static int l_core_unbounded(lua_State *L)
{
	int nargs = lua_gettop(L) - 1;
	double left;
	int status;

	luaL_checktype(L, 1, LUA_TFUNCTION);
	left = nv_recipe_clock_stop(L);
	status = nv_pcall(L, nargs, LUA_MULTRET);
	nv_recipe_clock_resume(L, left);
	if (status != LUA_OK)
		return lua_error(L);
	return lua_gettop(L);
}

/* _navette.core.pcall(fn, ...): like pcall, with error tables. */
static int l_core_pcall(lua_State *L)
{
	int nargs = lua_gettop(L) - 1;

	luaL_checktype(L, 1, LUA_TFUNCTION);
	int status = nv_pcall(L, nargs, LUA_MULTRET);
	lua_pushboolean(L, status == LUA_OK);
	lua_insert(L, 1);
	return lua_gettop(L);
}

static int l_core_set_plan(lua_State *L)
{
	navette_runtime *rt = nv_runtime_of(L);

	rt->plan = lua_toboolean(L, 1);
	rt->checking = false;
	if (lua_toboolean(L, 2)) { /* a fresh plan record */
		luaL_unref(L, LUA_REGISTRYINDEX, rt->plan_ref);
		lua_newtable(L);
		rt->plan_ref = luaL_ref(L, LUA_REGISTRYINDEX);
	}
	return 0;
}

/* _navette.core.forbid_exec(): from now on, in this runtime, nothing
 * executes a program (a read-only command calls it first). There is no
 * way back: code that runs later cannot lift it. */
static int l_core_forbid_exec(lua_State *L)
{
	nv_runtime_of(L)->no_exec = true;
	return 0;
}

/* _navette.core.set_checking(): plan mode for the first pass of `run`,
 * which checks every precondition before any side effect. Unlike a plan
 * (`navette plan`, navette_plan), it may run a credential's program: the
 * user asked to run, and the check then covers the credential loading and
 * reads with it. forbid_exec still wins; set_plan leaves it. */
static int l_core_set_checking(lua_State *L)
{
	navette_runtime *rt = nv_runtime_of(L);

	rt->plan = true;
	rt->checking = true;
	return 0;
}

/* _navette.core.set_trusted(bool): whether the project now loaded may
 * bind the user's secrets (trusted code decides, per project load: see
 * navette.trust). */
static int l_core_set_trusted(lua_State *L)
{
	nv_runtime_of(L)->trusted = lua_toboolean(L, 1);
	return 0;
}

static int l_core_mode(lua_State *L)
{
	lua_pushstring(L, nv_mode(L));
	return 1;
}

static int l_core_no_exec(lua_State *L)
{
	lua_pushboolean(L, nv_exec_forbidden(L));
	return 1;
}

static int l_core_plan_mode(lua_State *L)
{
	lua_pushboolean(L, nv_plan_mode(L));
	return 1;
}

static int l_core_plan_record(lua_State *L)
{
	navette_runtime *rt = nv_runtime_of(L);

	if (lua_gettop(L) >= 2) {
		nv_plan_record(L, luaL_checkstring(L, 1),
			       luaL_checkstring(L, 2),
			       luaL_optstring(L, 3, ""));
		return 0;
	}
	lua_rawgeti(L, LUA_REGISTRYINDEX, rt->plan_ref);
	return 1;
}

static int l_core_home(lua_State *L)
{
	lua_pushstring(L, nv_lua_home(L));
	return 1;
}

static int l_core_version(lua_State *L)
{
	lua_pushstring(L, NAVETTE_VERSION);
	lua_pushstring(L, LUA_RELEASE);
	return 2;
}

static int l_core_memory(lua_State *L)
{
	navette_runtime *rt = nv_runtime_of(L);

	lua_pushinteger(L, (lua_Integer)rt->memory_used);
	lua_pushinteger(L, (lua_Integer)rt->memory_limit);
	return 2;
}

static int l_core_set_limits(lua_State *L)
{
	navette_runtime *rt = nv_runtime_of(L);

	if (!lua_isnoneornil(L, 1))
		rt->recipe_timeout_s = luaL_checknumber(L, 1);
	if (!lua_isnoneornil(L, 2)) {
		lua_Integer m = luaL_checkinteger(L, 2);
		luaL_argcheck(L, m > 0, 2, "memory limit must be positive");
		rt->memory_limit = (size_t)m;
	}
	return 0;
}

int luaopen_navette_core(lua_State *L)
{
	static const luaL_Reg fns[] = {{"sandbox", nv_core_sandbox},
				       {"seal", nv_core_seal},
				       {"copy", nv_core_copy},
				       {"load_recipe", l_core_load_recipe},
				       {"call_bounded", l_core_call_bounded},
				       {"unbounded", l_core_unbounded},
				       {"pcall", l_core_pcall},
				       {"set_plan", l_core_set_plan},
				       {"plan_mode", l_core_plan_mode},
				       {"forbid_exec", l_core_forbid_exec},
				       {"set_checking", l_core_set_checking},
				       {"exec_forbidden", l_core_no_exec},
				       {"set_trusted", l_core_set_trusted},
				       {"mode", l_core_mode},
				       {"plan", l_core_plan_record},
				       {"home", l_core_home},
				       {"version", l_core_version},
				       {"versions", nv_core_versions},
				       {"memory", l_core_memory},
				       {"set_limits", l_core_set_limits},
				       {"library", l_core_library},
				       {NULL, NULL}};
	luaL_newlib(L, fns);
	return 1;
}
