/* libnavette: the public C API a host program sees.
 *
 * A runtime owns one Lua state with the recipe library loaded. The navette
 * CLI is one host: it opens a runtime and hands it the command line. Any
 * other program can open one, give recipes its own native modules, plan or
 * run a recipe file, and read a job's status, each answer as JSON.
 *
 *   navette_options opts;
 *   navette_runtime *rt;
 *   char *json = NULL;
 *
 *   navette_options_init(&opts);
 *   opts.home = "/var/lib/myhost/navette";
 *   if (navette_open(&rt, &opts) != NAVETTE_OK)
 *           return 1;
 *   navette_register_module(rt, "greet", luaopen_greet);
 *   if (navette_run(rt, "recipes/train.lua", NAVETTE_RUN_WAIT, &json))
 *           fprintf(stderr, "%s\n", navette_last_error(rt)->message);
 *   puts(json ? json : "");
 *   navette_free(json);
 *   navette_close(rt);
 *
 * Who frees what: strings a function hands over through a `char **`
 * out-parameter are the caller's, freed with navette_free(). Strings
 * returned as `const char *` belong to the runtime and live until the
 * next call on it (navette_last_error) or until navette_close.
 *
 * Results: every function returns a navette_status (0 for success); the
 * message of a failure is in navette_last_error(rt).
 *
 * Threads: a runtime is used by one thread at a time. The output module,
 * the redactor and the agent program are process-wide.
 *
 * The local agent. Jobs of the local backend are run by an agent: a
 * detached process, one per home, that the runtime starts when a job is
 * submitted, as `PROGRAM agent --quiet-if-running`. PROGRAM is the first
 * of:
 *   1. navette_options.agent_program;
 *   2. the NAVETTE_BIN environment variable;
 *   3. this program itself, when navette_options.agent_is_self is set: its
 *      main() then calls navette_agent_main() first (see below);
 *   4. the navette installed beside the shared libnavette (its bindir);
 *   5. the navette of the install prefix libnavette was built for;
 *   6. `navette` on PATH.
 * A runtime that finds none, or whose agent exits without starting (for
 * example a PROGRAM that does not know `agent`), fails the submission
 * within seconds with the cause (the agent's last log line); a job
 * already recorded stays queued for the next agent. A wait
 * (NAVETTE_RUN_WAIT) checks the agent every few seconds in the same way,
 * so it never hangs at `submitted`. */
#ifndef NAVETTE_H
#define NAVETTE_H

#include <stddef.h>

#if defined(__GNUC__) || defined(__clang__)
#define NAVETTE_API __attribute__((visibility("default")))
#else
#define NAVETTE_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

typedef struct navette_runtime navette_runtime;
struct lua_State;

/* Results of the API and exit statuses of the CLI (lua/navette/doc/cli.md,
 * "Exit codes"). */
enum navette_status {
	NAVETTE_OK = 0,
	NAVETTE_FAILED = 1,  /* a job failed or a check said no */
	NAVETTE_USAGE = 2,   /* usage or recipe error, or not found */
	NAVETTE_REFUSED = 3, /* refused by a precondition or policy */
	NAVETTE_SERVICE = 4  /* a service or backend unreachable or refusing,
				out of memory */
};

enum navette_stream { NAVETTE_STDOUT = 1, NAVETTE_STDERR = 2 };

/* Receives what the runtime prints (progress, notes, errors, what a
 * recipe print()s), always after the redactor: secret values loaded in
 * this process and secret shapes are masked. text is not NUL-terminated;
 * lines may arrive in pieces. */
typedef void (*navette_output_fn)(int stream, const char *text, size_t len,
				  void *payload);

#define NAVETTE_OPTIONS_VERSION 1

typedef struct navette_options {
	unsigned int version; /* NAVETTE_OPTIONS_VERSION */
	/* NAVETTE_HOME (queue, store, agent, audit); NULL: the environment
	 * variable, else the per-user default. */
	const char *home;
	/* Profile that plan and run use; NULL: the project's default. */
	const char *profile;
	/* Load lua/navette from this folder; NULL: the embedded library. */
	const char *lua_path;
	size_t memory_limit;     /* bytes for the Lua state; 0: default */
	double recipe_timeout_s; /* run-time bound of a recipe; 0: default */
	/* Where output goes; NULL: stdout and stderr. Process-wide: the last
	 * runtime opened with one receives everything printed, until it is
	 * closed. */
	navette_output_fn output;
	void *output_payload;
	/* The program that runs the local agent (see above); NULL: found. */
	const char *agent_program;
	/* Nonzero: this program is its own agent program; its main() calls
	 * navette_agent_main() before anything else. */
	int agent_is_self;
} navette_options;

/* Fills options with the defaults and the version. */
NAVETTE_API void navette_options_init(navette_options *options);

typedef struct navette_error {
	int status;          /* a navette_status; NAVETTE_OK: no error */
	const char *code;    /* "usage", "refused", "backend", ...; "" */
	const char *message; /* one line or more, redacted; "" */
	const char *hint;    /* what to check next; "" when none */
} navette_error;

NAVETTE_API const char *navette_version(void);

/* Opens a runtime into *out; options may be NULL (all defaults). The
 * strings of options are copied. Returns NAVETTE_OK; else *out is NULL
 * and navette_last_error(NULL) says why: NAVETTE_USAGE for options of
 * another version or a string too long (profile: 255 bytes at most;
 * home, lua_path, agent_program and NAVETTE_HOME, NAVETTE_LUA_PATH: 4095,
 * home once made absolute), NAVETTE_SERVICE when out of memory. Nothing
 * is shortened silently. The caller closes it with navette_close(). */
NAVETTE_API int navette_open(navette_runtime **out,
			     const navette_options *options);
/* Closes the Lua state and frees the runtime; NULL is harmless. */
NAVETTE_API void navette_close(navette_runtime *rt);

/* The NAVETTE_HOME the runtime resolved (absolute); owned by rt. */
NAVETTE_API const char *navette_home(const navette_runtime *rt);

/* The error of the last call on rt that failed; never NULL, owned by rt,
 * valid until the next call on rt. With rt NULL: the outcome of this
 * thread's last navette_open (status NAVETTE_OK after a success), valid
 * until its next navette_open. */
NAVETTE_API const navette_error *navette_last_error(const navette_runtime *rt);

/* Frees a string the API handed over (NULL is harmless). */
NAVETTE_API void navette_free(void *p);

/* A host module: a lua_CFunction (lua.h) that pushes the module's value,
 * usually a table of functions, like a luaopen_ function. It receives the
 * full module name ("host.greet") as argument 1. */
typedef int (*navette_module_opener)(struct lua_State *L);

/* Makes `require "host.NAME"` in a recipe call opener (once per run of a
 * recipe; the value is kept for the rest of that run). NAME is letters,
 * digits, '_' and '.', at most 63 bytes; registering it again replaces
 * the opener. Register before planning or running. What the opener's
 * functions do is the host's to bound: they run inside the recipe's time
 * and memory limits, in each pass: navette_mode tells which. */
NAVETTE_API int navette_register_module(navette_runtime *rt, const char *name,
					navette_module_opener opener);

/* The pass the recipe calling a host module's function is evaluated in:
 * "plan" (navette plan, navette_plan: record, change nothing), "check"
 * (the checking pass of a run, which evaluates the recipe once before
 * the pass that submits and may still refuse the run: a side effect made
 * here is made twice, or for a run then refused) or "run" (the pass that
 * submits: the one place for a side effect). L: the state the function
 * is called with. */
NAVETTE_API const char *navette_mode(struct lua_State *L);

/* Plans the recipe file: evaluates it with every side effect recorded
 * instead of done. *json_out receives (caller frees)
 *   {"project":, "profile":, "actions": [{primitive, action, detail}],
 *    "jobs": [job spec...]}
 * the same document as `navette plan RECIPE --json`. On failure
 * *json_out is NULL. */
NAVETTE_API int navette_plan(navette_runtime *rt, const char *recipe,
			     char **json_out);

#define NAVETTE_RUN_WAIT 1u /* follow the jobs until they end */

/* Runs the recipe file and submits its jobs; with NAVETTE_RUN_WAIT, waits
 * until every job has ended. *json_out receives (caller frees)
 *   {"project":, "profile":, "jobs": [job status...]}
 * each job as navette_job_status gives it. Returns NAVETTE_OK, or
 * NAVETTE_FAILED when waiting and a job did not succeed (*json_out is
 * set then too), or another status with *json_out NULL. */
NAVETTE_API int navette_run(navette_runtime *rt, const char *recipe,
			    unsigned int flags, char **json_out);

/* A job's status (id or unique prefix): the document of
 * `navette status ID --json` (id, name, state, phase, phases, outputs,
 * failure, ...). *json_out: caller frees; NULL on failure. */
NAVETTE_API int navette_job_status(navette_runtime *rt, const char *job_id,
				   char **json_out);

/* Runs a CLI command (argv[0] is the command name, e.g. "run"); prints
 * through the output module. Returns a navette_status. */
NAVETTE_API int navette_main(navette_runtime *rt, int argc, char **argv);

/* The commands a program that is its own agent (agent_is_self) must
 * answer: `agent [--quiet-if-running]` and `redact-stream`. Call it
 * first in main(); returns -1 when argv[1] is neither (carry on), else
 * the exit status to return from main(). */
NAVETTE_API int navette_agent_main(int argc, char **argv);

#ifdef __cplusplus
}
#endif

#endif
