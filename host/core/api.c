/* The embedding API of navette.h beyond open/close: host modules, plan,
 * run and status as JSON, the error slot, and the entry point of a
 * program that is its own agent. The work is Lua's (lua/navette/api.lua,
 * on the runner and jobs modules the CLI uses); this file moves
 * arguments in and JSON out, and passes everything it hands back through
 * the redactor. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>
#include <lua.h>

#include "core/buf.h"
#include "core/output.h"
#include "core/runtime.h"
#include "creds/redact.h"
#include "jobs/agent.h"

#define HOST_MODULE_NAME_MAX 63
#define API_JSON_MAX         ((size_t)256 * 1024 * 1024)

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
	return rt ? &rt->error : nv_runtime_open_error();
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

/* Calls api.call(fn, arg[, opts]) (lua/navette/api.lua): the status, and
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
	lua_pushliteral(L, "navette.api");
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

/* ---- a program that is its own agent ------------------------------------ */

static int agent_command(int argc, char **argv)
{
	navette_runtime *rt;
	int quiet = 0, status;

	for (int i = 2; i < argc; i++) {
		if (strcmp(argv[i], "--quiet-if-running") == 0) {
			quiet = 1;
		} else if (strcmp(argv[i], "--help") == 0 ||
			   strcmp(argv[i], "-h") == 0) {
			printf("usage: navette agent [--quiet-if-running]\n"
			       "  runs the local backend's job agent in the "
			       "foreground until it is idle\n"
			       "  (NAVETTE_AGENT_IDLE seconds, default 30); "
			       "`run` starts one by itself\n"
			       "  --quiet-if-running  another agent of this "
			       "home is not an error\n");
			return NAVETTE_OK;
		} else {
			fprintf(stderr, "usage: navette agent "
					"[--quiet-if-running]\n");
			return NAVETTE_USAGE;
		}
	}
	/* the launcher's redact-stream is this program too */
	nv_agent_set_program(NULL, 1);
	/* the runtime resolves the default home; the agent uses the same */
	if (navette_open(&rt, NULL) != NAVETTE_OK) {
		fprintf(stderr, "navette agent: out of memory\n");
		return NAVETTE_SERVICE;
	}
	status = navette_agent(navette_home(rt), quiet);
	navette_close(rt);
	return status;
}

/* `redact-stream`: stdin to stdout through the redactor. The launcher
 * pipes a job's output through it, so the log is masked before it
 * reaches the disk. */
static int redact_command(void)
{
	navette_runtime *rt;
	int status;

	if (navette_open(&rt, NULL) != NAVETTE_OK)
		return NAVETTE_SERVICE;
	status = navette_redact_stream(0, 1);
	navette_close(rt);
	return status;
}

int navette_agent_main(int argc, char **argv)
{
	if (argc == 2 && strcmp(argv[1], "redact-stream") == 0)
		return redact_command();
	if (argc >= 2 && strcmp(argv[1], "agent") == 0)
		return agent_command(argc, argv);
	return -1;
}
