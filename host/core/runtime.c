/* The Lua state of a recipe run: allocator with a memory cap, the count hook
 * bounding run time, the protected-call helper, the loader of the embedded
 * library, the sandbox given to recipes, and plan mode. The CLI logic itself
 * is Lua (lua/navette/cli.lua) running on top of these primitives. */
#include "core/runtime.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <lauxlib.h>
#include <lualib.h>

#include "core/lua_embed.h"
#include "core/nv_lua.h"
#include "core/output.h"
#include "core/sandbox.h"
#include "core/watchdog.h"
#include "audit/audit.h"
#include "creds/redact.h"
#include "creds/secret.h"
#include "jobs/agent.h"

#define RUNTIME_KEY              "navette.runtime"
#define DEFAULT_MEMORY_LIMIT     ((size_t)512 * 1024 * 1024)
#define DEFAULT_RECIPE_TIMEOUT_S 120.0
#define HOOK_COUNT               100000
#define MODULE_NAME_MAX          128

const char *navette_version(void)
{
	return NAVETTE_VERSION;
}

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
		lua_pushfstring(
			L,
			"the recipe ran longer than %d s; check for "
			"an endless loop (NAVETTE_RECIPE_TIMEOUT raises "
			"the bound)",
			(int)(rt->recipe_timeout_s + 0.5));
		lua_concat(L, 2);
		lua_error(L);
	}
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
		lua_pushliteral(L, "recipe");
		lua_setfield(L, 2, "code");
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

/* ---- nv_lua.h ---------------------------------------------------------- */

int nv_lua_push_error(lua_State *L, const nv_err *err)
{
	lua_pushnil(L);
	lua_createtable(L, 0, 3);
	lua_pushstring(L, nv_err_code_name(err->code));
	lua_setfield(L, -2, "code");
	lua_pushstring(L, err->message);
	lua_setfield(L, -2, "message");
	if (err->hint[0]) {
		lua_pushstring(L, err->hint);
		lua_setfield(L, -2, "hint");
	}
	return 2; // [nil, err]
}

bool nv_plan_mode(lua_State *L)
{
	navette_runtime *rt = nv_runtime_of(L);
	return rt && rt->plan;
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
		/* a folder's module is its init.lua, as embedded */
		if (!f && (size_t)snprintf(path, sizeof(path), "%s/%s/init.lua",
					   rt->lua_path, rel) < sizeof(path))
			f = fopen(path, "rb");
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
		nv_err_set(&err, NV_EINVAL,
			   "check the syntax at the line shown (a missing "
			   "'end', ',' or quote is often one line above)",
			   "%s", lua_tostring(L, -1));
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
	lua_pushstring(L, navette_version());
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

int nv_core_versions(lua_State *L);

int luaopen_navette_core(lua_State *L)
{
	static const luaL_Reg fns[] = {{"sandbox", nv_core_sandbox},
				       {"seal", nv_core_seal},
				       {"copy", nv_core_copy},
				       {"load_recipe", l_core_load_recipe},
				       {"call_bounded", l_core_call_bounded},
				       {"pcall", l_core_pcall},
				       {"set_plan", l_core_set_plan},
				       {"plan_mode", l_core_plan_mode},
				       {"forbid_exec", l_core_forbid_exec},
				       {"set_checking", l_core_set_checking},
				       {"exec_forbidden", l_core_no_exec},
				       {"plan", l_core_plan_record},
				       {"home", l_core_home},
				       {"version", l_core_version},
				       {"versions", nv_core_versions},
				       {"memory", l_core_memory},
				       {"set_limits", l_core_set_limits},
				       {NULL, NULL}};
	luaL_newlib(L, fns);
	return 1;
}

void nv_open_natives(lua_State *L)
{
	static const luaL_Reg natives[] = {{"core", luaopen_navette_core},
					   {"sys", luaopen_navette_sys},
					   {"json", luaopen_navette_json},
					   {"out", luaopen_navette_out},
					   {"git", luaopen_navette_git},
					   {"storage", luaopen_navette_storage},
					   {"jobs", luaopen_navette_jobs},
					   {"jobdb", luaopen_navette_jobdb},
					   {"creds", luaopen_navette_creds},
					   {"audit", luaopen_navette_audit},
					   {"net", luaopen_navette_net},
					   {"s3", luaopen_navette_s3},
					   {"image", luaopen_navette_image},
					   {"slurm", luaopen_navette_slurm},
					   {NULL, NULL}};

	lua_newtable(L); // [_navette]
	for (const luaL_Reg *r = natives; r->name; r++) {
		lua_pushcfunction(L, r->func);
		lua_call(L, 0, 1);
		lua_setfield(L, -2, r->name);
	}
	lua_setglobal(L, "_navette");
}

/* ---- navette.h --------------------------------------------------------- */

/* 0, or -1 when the folder does not fit in cap. */
static int default_home(char *out, size_t cap)
{
	const char *env = getenv("NAVETTE_HOME");
	const char *home = getenv("HOME");
	int n;

	if (env && *env)
		n = snprintf(out, cap, "%s", env);
	else {
#ifdef __APPLE__
		n = snprintf(out, cap, "%s/Library/Application Support/navette",
			     home ? home : ".");
#else
		const char *xdg = getenv("XDG_DATA_HOME");
		if (xdg && *xdg)
			n = snprintf(out, cap, "%s/navette", xdg);
		else
			n = snprintf(out, cap, "%s/.local/share/navette",
				     home ? home : ".");
#endif
	}
	return n >= 0 && (size_t)n < cap ? 0 : -1;
}

/* The outcome of this thread's last navette_open, which has no runtime to
 * keep it in when it fails: navette_last_error(NULL). */
static _Thread_local navette_error open_error;
static _Thread_local char open_message[256];

const navette_error *nv_runtime_open_error(void)
{
	if (!open_error.code)
		open_error.code = "";
	open_error.message = open_message;
	open_error.hint = "";
	return &open_error;
}

static int open_failed(int status, const char *code, const char *message)
{
	open_error.status = status;
	open_error.code = code;
	snprintf(open_message, sizeof(open_message), "%s", message);
	return status;
}

#define RUNTIME_FIELD_SIZE(field) sizeof(((navette_runtime *)0)->field)

/* NAVETTE_USAGE, saying which, when an option (or its variable) holds a
 * string too long for the runtime; else NAVETTE_OK. Nothing is cut short
 * silently: a shortened agent program or profile would name another. */
static int check_lengths(const navette_options *options)
{
	const char *lua_path = options && options->lua_path
				       ? options->lua_path
				       : getenv("NAVETTE_LUA_PATH");
	char message[128];
	const char *what = NULL;
	size_t max = 0;

	if (options && options->profile &&
	    strlen(options->profile) >= RUNTIME_FIELD_SIZE(profile)) {
		what = "profile";
		max = RUNTIME_FIELD_SIZE(profile);
	} else if (options && options->agent_program &&
		   strlen(options->agent_program) >= NV_AGENT_PROGRAM_MAX) {
		what = "agent_program";
		max = NV_AGENT_PROGRAM_MAX;
	} else if (lua_path &&
		   strlen(lua_path) >= RUNTIME_FIELD_SIZE(lua_path)) {
		what = "lua_path (or NAVETTE_LUA_PATH)";
		max = RUNTIME_FIELD_SIZE(lua_path);
	}
	if (!what)
		return NAVETTE_OK;
	snprintf(message, sizeof(message),
		 "navette_open: %s is longer than %zu bytes", what, max - 1);
	return open_failed(NAVETTE_USAGE, "usage", message);
}

/* rt->home from the options or the environment, made absolute; -1 (the
 * reason kept) when it does not fit. */
static int resolve_home(navette_runtime *rt, const navette_options *options)
{
	char message[128];
	int n = 0;

	if (options && options->home)
		n = snprintf(rt->home, sizeof(rt->home), "%s", options->home);
	else if (default_home(rt->home, sizeof(rt->home)) != 0)
		n = -1;
	if (n >= 0 && (size_t)n < sizeof(rt->home) && rt->home[0] != '/') {
		char cwd[2048];
		char rel[sizeof(rt->home)];
		if (getcwd(cwd, sizeof(cwd))) {
			memcpy(rel, rt->home, sizeof(rel));
			n = snprintf(rt->home, sizeof(rt->home), "%s/%s", cwd,
				     rel);
		}
	}
	if (n >= 0 && (size_t)n < sizeof(rt->home))
		return 0;
	snprintf(message, sizeof(message),
		 "navette_open: home (or NAVETTE_HOME), made absolute, is "
		 "longer than %zu bytes",
		 sizeof(rt->home) - 1);
	open_failed(NAVETTE_USAGE, "usage", message);
	return -1;
}

/* Every loaded secret value is taught to the redactor; values shorter
 * than its minimum are left alone on purpose (short common words). */
static void redact_observer(const char *name, const void *value, size_t len)
{
	nv_err err;
	if (len >= NV_REDACT_SECRET_MIN)
		nv_redact_add_secret(nv_redact_global(), name, value, len,
				     &err);
}

static int audit_redact(const char *line, size_t len, nv_buf *out,
			void *payload)
{
	(void)payload;
	return nv_redact_buffer(nv_redact_global(), line, len, out);
}

/* The sinks of this process all pass the redactor: the output module, the
 * audit log, and (through the output module) plans and errors. */
void nv_runtime_install_redactor(void)
{
	nv_out_set_filter(nv_redact_out_filter);
	nv_secret_set_observer(redact_observer);
	nv_audit_set_filter(audit_redact, NULL);
}

/* The output callback of navette_options, behind the redactor. */
static void runtime_output(int stream, const char *buf, size_t len,
			   void *payload)
{
	navette_runtime *rt = payload;
	rt->output(stream, buf, len, rt->output_payload);
}

void navette_options_init(navette_options *options)
{
	memset(options, 0, sizeof(*options));
	options->version = NAVETTE_OPTIONS_VERSION;
}

int navette_open(navette_runtime **out, const navette_options *options)
{
	navette_runtime *rt;
	const char *env;

	*out = NULL;
	open_failed(NAVETTE_OK, "", "");
	if (options && options->version != NAVETTE_OPTIONS_VERSION)
		return open_failed(NAVETTE_USAGE, "usage",
				   "navette_open: options of another version "
				   "(navette_options_init fills them)");
	if (check_lengths(options) != NAVETTE_OK)
		return NAVETTE_USAGE;
	rt = calloc(1, sizeof(*rt));
	if (!rt)
		return open_failed(NAVETTE_SERVICE, "no_memory",
				   "out of memory");
	if (resolve_home(rt, options) != 0) {
		free(rt);
		return NAVETTE_USAGE;
	}
	rt->error.code = rt->error_code;
	rt->error.message = rt->error_message;
	rt->error.hint = rt->error_hint;
	nv_runtime_install_redactor();
	if (options && options->output) {
		rt->output = options->output;
		rt->output_payload = options->output_payload;
		nv_out_set_sink(runtime_output, rt);
	}
	if (options && (options->agent_program || options->agent_is_self))
		nv_agent_set_program(options->agent_program,
				     options->agent_is_self);
	if (options && options->profile)
		snprintf(rt->profile, sizeof(rt->profile), "%s",
			 options->profile);
	rt->memory_limit = DEFAULT_MEMORY_LIMIT;
	rt->recipe_timeout_s = DEFAULT_RECIPE_TIMEOUT_S;
	if ((env = getenv("NAVETTE_RECIPE_TIMEOUT")) && atof(env) > 0)
		rt->recipe_timeout_s = atof(env);
	if ((env = getenv("NAVETTE_MEMORY_LIMIT")) && atoll(env) > 0)
		rt->memory_limit = (size_t)atoll(env);
	if (options && options->memory_limit)
		rt->memory_limit = options->memory_limit;
	if (options && options->recipe_timeout_s > 0)
		rt->recipe_timeout_s = options->recipe_timeout_s;
	env = options && options->lua_path ? options->lua_path
					   : getenv("NAVETTE_LUA_PATH");
	if (env && *env)
		snprintf(rt->lua_path, sizeof(rt->lua_path), "%s", env);

	rt->L = lua_newstate(runtime_alloc, rt);
	if (!rt->L) {
		navette_close(rt);
		return open_failed(NAVETTE_SERVICE, "no_memory",
				   "out of memory");
	}
	lua_State *L = rt->L;
	luaL_openlibs(L);
	lua_pushlightuserdata(L, rt);
	lua_setfield(L, LUA_REGISTRYINDEX, RUNTIME_KEY);
	lua_newtable(L);
	rt->plan_ref = luaL_ref(L, LUA_REGISTRYINDEX);

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

	nv_open_natives(L);
	*out = rt;
	return NAVETTE_OK;
}

const char *navette_home(const navette_runtime *rt)
{
	return rt->home;
}

void navette_close(navette_runtime *rt)
{
	if (!rt)
		return;
	if (rt->L)
		lua_close(rt->L);
	nv_watchdog_free(rt->watchdog);
	if (nv_out_sink_is(runtime_output, rt))
		nv_out_set_sink(NULL, NULL);
	free(rt);
}

static int report_internal(lua_State *L)
{
	const char *msg = NULL;
	const char *debug = getenv("NAVETTE_DEBUG");

	if (lua_istable(L, -1)) {
		lua_getfield(L, -1, "message");
		msg = lua_tostring(L, -1);
		lua_pop(L, 1);
	}
	nv_out_printf(NV_OUT_STDERR, "navette: internal error: %s\n",
		      msg ? msg : "(no message)");
	if (debug && *debug && lua_istable(L, -1)) {
		lua_getfield(L, -1, "traceback");
		nv_out_printf(NV_OUT_STDERR, "%s\n",
			      lua_tostring(L, -1) ? lua_tostring(L, -1) : "");
		lua_pop(L, 1);
	} else {
		nv_out_printf(NV_OUT_STDERR,
			      "  run again with NAVETTE_DEBUG=1 for the "
			      "traceback, and report it\n");
	}
	return NAVETTE_SERVICE;
}

int navette_main(navette_runtime *rt, int argc, char **argv)
{
	lua_State *L = rt->L;
	int status;

	lua_getglobal(L, "require");
	lua_pushliteral(L, "navette.cli");
	if (nv_pcall(L, 1, 1) != LUA_OK) {
		status = report_internal(L);
		lua_settop(L, 0);
		return status;
	}
	lua_getfield(L, -1, "main"); // [cli, main]
	lua_createtable(L, argc, 0);
	for (int i = 0; i < argc; i++) {
		lua_pushstring(L, argv[i]);
		lua_rawseti(L, -2, i + 1);
	}
	if (nv_pcall(L, 1, 1) != LUA_OK) {
		status = report_internal(L);
		lua_settop(L, 0);
		return status;
	}
	status = (int)lua_tointeger(L, -1);
	lua_settop(L, 0);
	nv_out_flush();
	return status;
}
