/* The runtime behind navette.h: one Lua state per recipe run, with a memory
 * cap (allocator), a run-time bound (count hook), the plan-mode flag and
 * the one protected-call helper every call into Lua goes through. The
 * ground floor: it knows no primitive; host/lib opens the natives, wires
 * the redactor and holds the public API on top of it. navette.h is
 * included for the names of the API's types, not for its functions. */
#ifndef NV_RUNTIME_H
#define NV_RUNTIME_H

#include <stdbool.h>
#include <stddef.h>

#include <lua.h>

#include "core/nv_err.h"
#include "navette.h"

struct navette_runtime {
	lua_State *L;
	size_t memory_used;
	size_t memory_limit;
	double recipe_timeout_s;
	double deadline; /* 0: no bound in force */
	/* The time an evaluation's builders (image builds, debootstrap, a
	 * layout push) may take in all, while its own clock is stopped
	 * (NAVETTE_BUILD_TIMEOUT), what they took so far, and whether it
	 * is spent (the evaluation then ends, naming the builds). */
	double build_timeout_s;
	double build_used_s;
	bool build_spent;
	struct nv_watchdog *watchdog; /* created on the first bounded call */
	bool plan;
	/* set once by a read-only command: nothing may execute a program
	 * (nv_exec_forbidden); never cleared */
	bool no_exec;
	/* plan mode of a run's first pass (core.set_checking): the user ran
	 * `run`, so a credential's program may run; set_plan clears it */
	bool checking;
	/* the project's bindings (credential sources, stores, endpoints,
	 * data sets) may be used: the user trusted the project on this
	 * machine, or it binds nothing (core.set_trusted, by trusted code at
	 * each project load; nv_project_trusted) */
	bool trusted;
	int plan_ref; /* registry ref of the plan record (array) */
	char home[4096];
	char recipe_dir[4096];
	char lua_path[4096]; /* "" : embedded library */
	/* the embedding API (host/lib/api.c) */
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

/* Makes rt->L from rt's limits and paths: the counting allocator, the
 * standard libraries, the runtime's registry key, an empty plan record
 * and the searcher of the embedded library (trusted code loads nothing
 * else). 0, or -1 when out of memory (rt->L NULL then). The natives are
 * not opened here: the library's wiring (host/lib) does that. */
int nv_runtime_start(navette_runtime *rt);

/* Closes rt->L and the watchdog; rt itself is the caller's. */
void nv_runtime_stop(navette_runtime *rt);

/* A builder's run inside a recipe's evaluation (nv_build_clock_stop). */
typedef struct nv_build_clock {
	double left;    /* the recipe's time left, given back on resume */
	double started; /* when the builder started (monotonic) */
	bool bounded;   /* an evaluation's bound is in force */
} nv_build_clock;

/* Stops the recipe's clock while a builder runs and starts the build
 * budget's: the builds of one evaluation take NAVETTE_BUILD_TIMEOUT
 * seconds in all (default 3600), so a loop of builds ends. Refused
 * (NV_EREFUSED in err) once the budget is spent; the evaluation then
 * ends at its next instruction, caught or not. While the builder runs the
 * watchdog ends the process, saying why, one second after the budget is
 * out. Outside a bounded evaluation nothing is counted. Between stop and
 * resume, call no Lua code. */
int nv_build_clock_stop(lua_State *L, nv_build_clock *bc, nv_err *err);
void nv_build_clock_resume(lua_State *L, nv_build_clock *bc);

#define NV_BUILD_TIMEOUT_DEFAULT_S 3600.0

/* The runtime owning L (stored in the registry at open). */
navette_runtime *nv_runtime_of(lua_State *L);

/* Calls the function below nargs arguments in protected mode with a
 * message handler that turns any error into an error table {code=,
 * message=, hint=, traceback=}. Returns the lua_pcall status; on error the
 * table is on the stack. */
int nv_pcall(lua_State *L, int nargs, int nresults);

/* The natives of the core itself; host/lib opens them with every
 * primitive's into the trusted global `_navette`. */
int luaopen_navette_core(lua_State *L);
int luaopen_navette_sys(lua_State *L);
int luaopen_navette_json(lua_State *L);
int luaopen_navette_out(lua_State *L);

#include "core/clock.h"

#endif
