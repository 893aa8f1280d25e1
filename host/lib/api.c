/* The public C API (navette.h), in one place: options, opening and
 * closing a runtime, the error slot, host modules, plan, run and status as
 * JSON, and the CLI's entry (navette_main); navette_agent_main is in
 * agent_main.c. The work is Lua's (lua/navette/embedding.lua and
 * lua/navette/cli/, on the runner and the job views); this file moves
 * arguments in and JSON out, and passes everything it hands back through
 * the redactor. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <lauxlib.h>
#include <lua.h>

#include "core/agent_program.h"
#include "core/buf.h"
#include "core/nv_lua.h"
#include "core/output.h"
#include "core/runtime.h"
#include "creds/redact.h"
#include "lib/lib.h"

#define DEFAULT_MEMORY_LIMIT     ((size_t)512 * 1024 * 1024)
#define DEFAULT_RECIPE_TIMEOUT_S 120.0
#define HOST_MODULE_NAME_MAX     63
#define API_JSON_MAX             ((size_t)256 * 1024 * 1024)

const char *navette_version(void)
{
	return NAVETTE_VERSION;
}

void navette_options_init(navette_options *options)
{
	memset(options, 0, sizeof(*options));
	options->version = NAVETTE_OPTIONS_VERSION;
}

/* ---- opening and closing ----------------------------------------------- */

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

static const navette_error *open_error_get(void)
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

/* The output callback of navette_options, behind the redactor. */
static void runtime_output(int stream, const char *buf, size_t len,
			   void *payload)
{
	navette_runtime *rt = payload;
	rt->output(stream, buf, len, rt->output_payload);
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
	nv_lib_install_redactor();
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

	if (nv_runtime_start(rt) != 0) {
		navette_close(rt);
		return open_failed(NAVETTE_SERVICE, "no_memory",
				   "out of memory");
	}
	nv_lib_open_natives(rt->L);
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
	nv_runtime_stop(rt);
	if (nv_out_sink_is(runtime_output, rt))
		nv_out_set_sink(NULL, NULL);
	free(rt);
}

/* ---- the error slot ---------------------------------------------------- */

/* Copies s into out (cap bytes) through the redactor; a redactor out of
 * memory leaves a placeholder rather than the raw text. */
static void copy_redacted(char *out, size_t cap, const char *s)
{
	nv_buf b;

	nv_buf_init(&b, cap * 4);
	if (!s || !*s) {
		out[0] = '\0';
	} else if (nv_redact_buffer(nv_redact_global(), s, strlen(s), &b) ==
			   0 &&
		   b.data) {
		snprintf(out, cap, "%s", b.data);
	} else {
		snprintf(out, cap, "(message withheld: the redactor failed)");
	}
	nv_buf_free(&b);
}

/* The code as the API hands it out: one of the library's own (the keys of
 * errors.exit_status in lua/navette/errors.lua, and "internal"), else
 * "recipe". A recipe can raise error{code = ...} with any string, a
 * secret's among them (an access key id fits the 32-byte slot), and a
 * code is not passed through the redactor. */
static const char *known_code(const char *code)
{
	static const char *const known[] = {
		"failed",    "recipe",      "invalid",  "usage",
		"not_found", "refused",     "backend",  "io",
		"no_memory", "interrupted", "internal", NULL,
	};

	if (!code || !*code)
		return "";
	for (size_t i = 0; known[i]; i++)
		if (strcmp(code, known[i]) == 0)
			return known[i];
	return "recipe";
}

static void set_error(navette_runtime *rt, int status, const char *code,
		      const char *message, const char *hint)
{
	rt->error.status = status;
	snprintf(rt->error_code, sizeof(rt->error_code), "%s",
		 known_code(code));
	copy_redacted(rt->error_message, sizeof(rt->error_message), message);
	copy_redacted(rt->error_hint, sizeof(rt->error_hint), hint);
}

/* From the error table on top of the stack {code, message, hint}. */
static void set_error_from_table(navette_runtime *rt, int status)
{
	lua_State *L = rt->L;
	const char *code = NULL, *message = NULL, *hint = NULL;

	if (lua_istable(L, -1)) {
		lua_getfield(L, -1, "code");
		lua_getfield(L, -2, "message");
		lua_getfield(L, -3, "hint"); // [err, code, message, hint]
		code = lua_tostring(L, -3);
		message = lua_tostring(L, -2);
		hint = lua_tostring(L, -1);
	} else {
		message = lua_tostring(L, -1);
	}
	set_error(rt, status, code ? code : "internal",
		  message ? message : "(no message)", hint);
}

const navette_error *navette_last_error(const navette_runtime *rt)
{
	return rt ? &rt->error : open_error_get();
}

void navette_free(void *p)
{
	free(p);
}

/* ---- host modules -------------------------------------------------------- */

static int host_module_name_ok(const char *name)
{
	size_t len = strlen(name);

	if (len == 0 || len > HOST_MODULE_NAME_MAX || name[0] == '.' ||
	    name[len - 1] == '.' || strstr(name, ".."))
		return 0;
	for (const char *p = name; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		      (*p >= '0' && *p <= '9') || *p == '_' || *p == '.'))
			return 0;
	return 1;
}

/* In protected mode (the table and the key allocate): [name, opener] */
static int l_register_module(lua_State *L)
{
	const char *name = lua_touserdata(L, 1);

	if (lua_getfield(L, LUA_REGISTRYINDEX, NV_HOST_MODULES_KEY) !=
	    LUA_TTABLE) {
		lua_pop(L, 1);
		lua_newtable(L);
		lua_pushvalue(L, -1);
		lua_setfield(L, LUA_REGISTRYINDEX, NV_HOST_MODULES_KEY);
	}
	lua_pushvalue(L, 2); // [name, opener, mods, opener]
	lua_setfield(L, -2, name);
	return 0;
}

const char *navette_mode(lua_State *L)
{
	return nv_mode(L);
}

int navette_register_module(navette_runtime *rt, const char *name,
			    navette_module_opener opener)
{
	lua_State *L = rt->L;

	set_error(rt, NAVETTE_OK, "", "", "");
	if (!name || !opener || !host_module_name_ok(name)) {
		set_error(rt, NAVETTE_USAGE, "usage",
			  "navette_register_module: a module name is letters, "
			  "digits, '_' and inner '.', at most 63 bytes, with "
			  "an opener",
			  NULL);
		return NAVETTE_USAGE;
	}
	/* light C functions and light userdata do not allocate */
	lua_pushcfunction(L, l_register_module);
	lua_pushlightuserdata(L, (void *)name);
	lua_pushcfunction(L, opener);
	if (lua_pcall(L, 2, 0, 0) != LUA_OK) {
		set_error_from_table(rt, NAVETTE_SERVICE);
		lua_pop(L, 1);
		return NAVETTE_SERVICE;
	}
	return NAVETTE_OK;
}

/* ---- plan, run, status --------------------------------------------------- */

/* Calls api.call(fn, arg[, opts]) (lua/navette/embedding.lua): the status, and
 * the JSON document through the redactor into *json_out (caller frees),
 * or the error into the slot. */
static int api_call(navette_runtime *rt, const char *fn, const char *arg,
		    int with_opts, int wait, char **json_out)
{
	lua_State *L = rt->L;
	int top = lua_gettop(L);
	int nargs = 2, status;

	*json_out = NULL;
	set_error(rt, NAVETTE_OK, "", "", "");
	if (!arg) {
		set_error(rt, NAVETTE_USAGE, "usage",
			  "no recipe or job id given", NULL);
		return NAVETTE_USAGE;
	}
	lua_getglobal(L, "require");
	lua_pushliteral(L, "navette.embedding");
	if (nv_pcall(L, 1, 1) != LUA_OK) {
		set_error_from_table(rt, NAVETTE_SERVICE);
		status = NAVETTE_SERVICE;
		goto done;
	}
	/* a plan's actions are this call's alone (the new table is
	 * referenced before the old one is let go) */
	lua_newtable(L);
	int plan_ref = luaL_ref(L, LUA_REGISTRYINDEX);
	luaL_unref(L, LUA_REGISTRYINDEX, rt->plan_ref);
	rt->plan_ref = plan_ref;
	lua_getfield(L, -1, "call"); // [api, call]
	lua_pushstring(L, fn);
	lua_pushstring(L, arg);
	if (with_opts) {
		lua_createtable(L, 0, 2);
		if (rt->profile[0]) {
			lua_pushstring(L, rt->profile);
			lua_setfield(L, -2, "profile");
		}
		lua_pushboolean(L, wait);
		lua_setfield(L, -2, "wait");
		nargs++;
	}
	if (nv_pcall(L, nargs, 3) != LUA_OK) {
		set_error_from_table(rt, NAVETTE_SERVICE);
		status = NAVETTE_SERVICE;
		goto done;
	}
	// [api, status, json | nil, nil | err]
	status = (int)lua_tointeger(L, -3);
	if (lua_type(L, -2) == LUA_TSTRING) {
		size_t len;
		const char *json = lua_tolstring(L, -2, &len);
		nv_buf b;
		nv_buf_init(&b, API_JSON_MAX);
		if (nv_redact_buffer(nv_redact_global(), json, len, &b) != 0 ||
		    !b.data) {
			nv_buf_free(&b);
			set_error(rt, NAVETTE_SERVICE, "no_memory",
				  "the result is too large or memory ran out",
				  NULL);
			status = NAVETTE_SERVICE;
			goto done;
		}
		*json_out = b.data; /* malloc'd: navette_free() */
		if (status != NAVETTE_OK)
			set_error(rt, status, "failed",
				  "a job did not succeed (see its state and "
				  "failure in the result)",
				  NULL);
	} else {
		set_error_from_table(rt, status ? status : NAVETTE_SERVICE);
		if (!status)
			status = NAVETTE_SERVICE;
	}
done:
	lua_settop(L, top);
	nv_out_flush();
	return status;
}

int navette_plan(navette_runtime *rt, const char *recipe, char **json_out)
{
	return api_call(rt, "plan", recipe, 1, 0, json_out);
}

int navette_run(navette_runtime *rt, const char *recipe, unsigned int flags,
		char **json_out)
{
	return api_call(rt, "run", recipe, 1, (flags & NAVETTE_RUN_WAIT) != 0,
			json_out);
}

int navette_job_status(navette_runtime *rt, const char *job_id, char **json_out)
{
	return api_call(rt, "status", job_id, 0, 0, json_out);
}

/* ---- the CLI ----------------------------------------------------------- */

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
