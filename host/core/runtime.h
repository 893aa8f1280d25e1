/* The runtime behind navette.h: one Lua state per recipe run, with a memory
 * cap (allocator), a run-time bound (count hook), the plan-mode flag and
 * the one protected-call helper every call into Lua goes through. */
#ifndef NV_RUNTIME_H
#define NV_RUNTIME_H

#include <stdbool.h>
#include <stddef.h>

#include <lua.h>

#include "navette.h"

struct navette_runtime {
	lua_State *L;
	size_t memory_used;
	size_t memory_limit;
	double recipe_timeout_s;
	double deadline; /* 0: no bound in force */
	struct nv_watchdog *watchdog; /* created on the first bounded call */
	bool plan;
	/* set once by a read-only command: nothing may execute a program
	 * (nv_exec_forbidden); never cleared */
	bool no_exec;
	/* plan mode of a run's first pass (core.set_checking): the user ran
	 * `run`, so a credential's program may run; set_plan clears it */
	bool checking;
	int plan_ref; /* registry ref of the plan record (array) */
	char home[4096];
	char recipe_dir[4096];
	char lua_path[4096]; /* "" : embedded library */
	/* the embedding API (api.c) */
	char profile[256]; /* "": the project's default */
	navette_output_fn output;
	void *output_payload;
	navette_error error; /* points into the fields below */
	char error_code[32];
	char error_message[2048];
	char error_hint[1024];
};

/* Registry table of the host's modules: name (without "host.") -> the
 * opener given to navette_register_module. */
#define NV_HOST_MODULES_KEY "navette.host.modules"

/* Internal entry points behind navette_agent_main. */
int navette_redact_stream(int in_fd, int out_fd);

/* The outcome of this thread's last navette_open (navette_last_error of
 * NULL). */
const navette_error *nv_runtime_open_error(void);

/* The runtime owning L (stored in the registry at open). */
navette_runtime *nv_runtime_of(lua_State *L);

/* Calls the function below nargs arguments in protected mode with a
 * message handler that turns any error into an error table {code=,
 * message=, hint=, traceback=}. Returns the lua_pcall status; on error the
 * table is on the stack. */
int nv_pcall(lua_State *L, int nargs, int nresults);

/* Routes the output module, the audit log and secret loading through the
 * redactor (navette_open does it; the agent calls it too). */
void nv_runtime_install_redactor(void);

/* Opens the native modules into the trusted global `_navette`. */
void nv_open_natives(lua_State *L);

int luaopen_navette_core(lua_State *L);
int luaopen_navette_sys(lua_State *L);
int luaopen_navette_json(lua_State *L);
int luaopen_navette_out(lua_State *L);
int luaopen_navette_git(lua_State *L);
int luaopen_navette_storage(lua_State *L);
int luaopen_navette_jobs(lua_State *L);
int luaopen_navette_jobdb(lua_State *L);
int luaopen_navette_creds(lua_State *L);
int luaopen_navette_audit(lua_State *L);
int luaopen_navette_net(lua_State *L);
int luaopen_navette_s3(lua_State *L);
int luaopen_navette_image(lua_State *L);
int luaopen_navette_slurm(lua_State *L);

#include "core/clock.h"

#endif
